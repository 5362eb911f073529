/* SPDX-License-Identifier: BSD-3-Clause */
/* sendme.c -- SENDME bodies and the digests they echo (see sendme.h).
 *
 * The digest FIFO is a small array shifted on pop: at most ten entries of
 * 20 bytes, popped once per hundred cells, so a ring buffer would buy
 * nothing but code.
 */
#include "core/or/sendme.h"
#include "lib/bytes/bytes.h"

#include <string.h>

size_t
sendme_encode_v1(uint8_t out[SENDME_V1_LEN], const uint8_t *digest)
{
  out[0] = 1;
  set_u16(out + 1, SENDME_DIGEST_LEN);
  memcpy(out + SENDME_HEADER_LEN, digest, SENDME_DIGEST_LEN);
  return SENDME_V1_LEN;
}

int
sendme_parse(const uint8_t *body, size_t len, const uint8_t **digest,
             const char **why)
{
  *digest = NULL;
  if (len == 0)
    return 0; /* version 0, empty body */
  if (body[0] > SENDME_MAX_VERSION) {
    *why = "SENDME of an unknown version";
    return -1;
  }
  if (len < SENDME_HEADER_LEN) {
    *why = "malformed SENDME (truncated header)";
    return -1;
  }
  size_t data_len = get_u16(body + 1);
  if (data_len > len - SENDME_HEADER_LEN) {
    *why = "malformed SENDME (length field beyond the body)";
    return -1;
  }
  if (body[0] == 1) {
    if (data_len < SENDME_DIGEST_LEN) {
      *why = "malformed v1 SENDME (digest too short)";
      return -1;
    }
    *digest = body + SENDME_HEADER_LEN;
  }
  return 0;
}

void
sendme_digests_record(sendme_digests_t *q, const uint8_t *digest)
{
  if (q->n >= SENDME_DIGESTS_MAX)
    return;
  memcpy(q->d[q->n++], digest, SENDME_DIGEST_LEN);
}

int
sendme_digests_check(sendme_digests_t *q, const uint8_t *digest)
{
  int bad = digest && (q->n == 0 || memcmp(q->d[0], digest,
                                           SENDME_DIGEST_LEN) != 0);
  if (q->n > 0) {
    memmove(q->d[0], q->d[1], (size_t)(q->n - 1) * SENDME_DIGEST_LEN);
    q->n--;
  }
  return bad ? -1 : 0;
}
