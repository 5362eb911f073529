/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_frame.c -- packing and parsing datagram link frames (see
 * dgram_frame.h). Parsing walks the records twice: once to check every
 * length against the end of the datagram, once to deliver, so a truncated
 * or corrupt frame never delivers a prefix of itself. */
#include "feature/dgram/dgram_frame.h"

#include <string.h>

#include "lib/bytes/bytes.h"

void
dgram_frame_init(dgram_frame_t *f, size_t max)
{
  f->len = 0;
  f->n_records = 0;
  f->max = max < DGRAM_FRAME_MAX ? max : DGRAM_FRAME_MAX;
}

int
dgram_frame_is_empty(const dgram_frame_t *f)
{
  return f->n_records == 0;
}

size_t
dgram_frame_room(const dgram_frame_t *f)
{
  size_t used = f->len ? f->len : 1;
  if (used + DGRAM_REC_HDR_LEN >= f->max)
    return 0;
  return f->max - used - DGRAM_REC_HDR_LEN;
}

int
dgram_frame_add(dgram_frame_t *f, uint8_t type, const uint8_t *body,
                size_t len)
{
  if (len > 0xffff || 1 + DGRAM_REC_HDR_LEN + len > f->max)
    return -2;
  if (len > dgram_frame_room(f))
    return -1;
  if (f->len == 0)
    f->buf[f->len++] = DGRAM_FRAME_VERSION;
  uint8_t *p = f->buf + f->len;
  p[0] = type;
  set_u16(p + 1, (uint16_t)len);
  if (len)
    memcpy(p + DGRAM_REC_HDR_LEN, body, len);
  f->len += DGRAM_REC_HDR_LEN + len;
  f->n_records++;
  return 0;
}

dgram_frame_status_t
dgram_frame_parse(const uint8_t *d, size_t len, dgram_frame_record_fn fn,
                  void *arg, unsigned *n_records)
{
  if (n_records)
    *n_records = 0;
  if (len == 0)
    return DGRAM_FRAME_EMPTY;
  if (len > DGRAM_FRAME_MAX)
    return DGRAM_FRAME_OVERSIZE;
  if (d[0] != DGRAM_FRAME_VERSION)
    return DGRAM_FRAME_BAD_VERSION;
  size_t off = 1;
  while (off < len) {
    if (len - off < DGRAM_REC_HDR_LEN)
      return DGRAM_FRAME_TRUNCATED;
    size_t rlen = get_u16(d + off + 1);
    if (rlen > len - off - DGRAM_REC_HDR_LEN)
      return DGRAM_FRAME_TRUNCATED;
    off += DGRAM_REC_HDR_LEN + rlen;
  }
  unsigned n = 0;
  for (off = 1; off < len;) {
    uint8_t type = d[off];
    size_t rlen = get_u16(d + off + 1);
    if (type != DGRAM_REC_PAD) {
      fn(arg, type, d + off + DGRAM_REC_HDR_LEN, rlen);
      n++;
    }
    off += DGRAM_REC_HDR_LEN + rlen;
  }
  if (n_records)
    *n_records = n;
  return DGRAM_FRAME_OK;
}

const char *
dgram_frame_status_str(dgram_frame_status_t s)
{
  switch (s) {
  case DGRAM_FRAME_OK:
    return "ok";
  case DGRAM_FRAME_EMPTY:
    return "empty frame";
  case DGRAM_FRAME_BAD_VERSION:
    return "unknown frame version";
  case DGRAM_FRAME_TRUNCATED:
    return "truncated record";
  case DGRAM_FRAME_OVERSIZE:
    return "frame longer than the link's maximum";
  }
  return "?";
}
