/* SPDX-License-Identifier: BSD-3-Clause */
/* create.c -- CREATE2/CREATED2/CREATE_FAST/EXTEND2/EXTENDED2/DESTROY
 * bodies (tor-spec 5.1, 5.4); see create.h.
 *
 * Parsers check every length field against the bytes remaining before
 * reading and report malformed input at info level (peers control it).
 * Builders check the total size before writing anything; link-cell
 * builders NUL-pad the whole payload, relay-body builders write only the
 * body (the relay layer adds header and padding).
 */
#include "core/proto/create.h"

#include <string.h>

#include "core/proto/proto_internal.h"
#include "lib/bytes/bytes.h"

/* ---------------------------------------------------------------- */
/* CREATE2 / CREATED2 */

int
create2_parse(create2_t *out, const uint8_t *payload, size_t len)
{
  out->htype = 0;
  out->hlen = 0;
  if (len < 4)
    PROTO_BAD("CREATE2 truncated before HLEN");
  uint16_t hlen = get_u16(payload + 2);
  if (hlen > CREATE2_HDATA_MAX || len - 4 < hlen)
    PROTO_BAD("CREATE2 HLEN %u does not fit", hlen);
  out->htype = get_u16(payload);
  out->hlen = hlen;
  memcpy(out->hdata, payload + 4, hlen);
  return 0;
}

int
create2_build(uint8_t *payload, const create2_t *c)
{
  if (c->hlen > CREATE2_HDATA_MAX)
    return -1;
  memset(payload, 0, CELL_PAYLOAD_LEN);
  set_u16(payload, c->htype);
  set_u16(payload + 2, c->hlen);
  memcpy(payload + 4, c->hdata, c->hlen);
  return 0;
}

int
created2_parse(created2_t *out, const uint8_t *payload, size_t len)
{
  out->hlen = 0;
  if (len < 2)
    PROTO_BAD("CREATED2 truncated before HLEN");
  uint16_t hlen = get_u16(payload);
  if (hlen > CREATED2_HDATA_MAX || len - 2 < hlen)
    PROTO_BAD("CREATED2 HLEN %u does not fit", hlen);
  out->hlen = hlen;
  memcpy(out->hdata, payload + 2, hlen);
  return 0;
}

int
created2_build(uint8_t *payload, const created2_t *c)
{
  if (c->hlen > CREATED2_HDATA_MAX)
    return -1;
  memset(payload, 0, CELL_PAYLOAD_LEN);
  set_u16(payload, c->hlen);
  memcpy(payload + 2, c->hdata, c->hlen);
  return 0;
}

int
create2_cell_make(cell_t *cell, uint32_t circ_id, const create2_t *c)
{
  cell->circ_id = circ_id;
  cell->command = CELL_CREATE2;
  return create2_build(cell->payload, c);
}

int
created2_cell_make(cell_t *cell, uint32_t circ_id, const created2_t *c)
{
  cell->circ_id = circ_id;
  cell->command = CELL_CREATED2;
  return created2_build(cell->payload, c);
}

/* ---------------------------------------------------------------- */
/* CREATE_FAST / CREATED_FAST */

void
create_fast_parse(create_fast_t *out, const uint8_t *payload)
{
  memcpy(out->x, payload, CREATE_FAST_LEN);
}

void
create_fast_build(uint8_t *payload, const create_fast_t *c)
{
  memset(payload, 0, CELL_PAYLOAD_LEN);
  memcpy(payload, c->x, CREATE_FAST_LEN);
}

void
created_fast_parse(created_fast_t *out, const uint8_t *payload)
{
  memcpy(out->y, payload, CREATE_FAST_LEN);
  memcpy(out->kh, payload + CREATE_FAST_LEN, CREATE_FAST_LEN);
}

void
created_fast_build(uint8_t *payload, const created_fast_t *c)
{
  memset(payload, 0, CELL_PAYLOAD_LEN);
  memcpy(payload, c->y, CREATE_FAST_LEN);
  memcpy(payload + CREATE_FAST_LEN, c->kh, CREATE_FAST_LEN);
}

/* ---------------------------------------------------------------- */
/* EXTEND2 */

/* Interpret one link specifier; -1 if it is malformed. */
static int
extend2_take_spec(extend2_t *e, uint8_t type, const uint8_t *d, uint8_t len)
{
  switch (type) {
  case LSTYPE_IPV4:
    if (len != 6)
      PROTO_BAD("EXTEND2 IPv4 link specifier has length %u", len);
    if (!e->has_ipv4) {
      e->has_ipv4 = 1;
      memcpy(e->ipv4_addr, d, 4);
      e->ipv4_port = get_u16(d + 4);
    }
    return 0;
  case LSTYPE_IPV6:
    if (len != 18)
      PROTO_BAD("EXTEND2 IPv6 link specifier has length %u", len);
    if (!e->has_ipv6) {
      e->has_ipv6 = 1;
      memcpy(e->ipv6_addr, d, 16);
      e->ipv6_port = get_u16(d + 16);
    }
    return 0;
  case LSTYPE_LEGACY_ID:
    if (len != 20)
      PROTO_BAD("EXTEND2 legacy identity has length %u", len);
    if (e->has_rsa_id)
      PROTO_BAD("EXTEND2 lists two legacy identities");
    e->has_rsa_id = 1;
    memcpy(e->rsa_id, d, 20);
    return 0;
  case LSTYPE_ED25519_ID:
    if (len != 32)
      PROTO_BAD("EXTEND2 Ed25519 identity has length %u", len);
    if (e->has_ed_id)
      PROTO_BAD("EXTEND2 lists two Ed25519 identities");
    e->has_ed_id = 1;
    memcpy(e->ed_id, d, 32);
    return 0;
  default:
    if (e->n_unknown < EXTEND2_MAX_UNKNOWN_SPECS) {
      link_spec_t *ls = &e->unknown[e->n_unknown++];
      ls->type = type;
      ls->len = len;
      memcpy(ls->data, d, len);
    } else {
      e->n_skipped++;
    }
    return 0;
  }
}

int
extend2_parse(extend2_t *out, const uint8_t *body, size_t len)
{
  memset(out, 0, offsetof(extend2_t, create));
  out->create.htype = out->create.hlen = 0;
  if (len > RELAY_BODY_MAX)
    PROTO_BAD("EXTEND2 body of %zu bytes is too long", len);
  if (len < 1)
    PROTO_BAD("EXTEND2 is empty");
  unsigned nspec = body[0];
  size_t off = 1;
  for (unsigned i = 0; i < nspec; i++) {
    if (len - off < 2)
      PROTO_BAD("EXTEND2 link specifier %u header truncated", i);
    uint8_t type = body[off], lslen = body[off + 1];
    off += 2;
    if (len - off < lslen)
      PROTO_BAD("EXTEND2 link specifier %u (%u bytes) truncated", i, lslen);
    if (extend2_take_spec(out, type, body + off, lslen) < 0)
      return -1;
    off += lslen;
  }
  if (len - off < 4)
    PROTO_BAD("EXTEND2 truncated before HTYPE/HLEN");
  uint16_t htype = get_u16(body + off), hlen = get_u16(body + off + 2);
  off += 4;
  if (len - off < hlen)
    PROTO_BAD("EXTEND2 HLEN %u does not fit", hlen);
  /* hlen <= RELAY_BODY_MAX - 5 < CREATE2_HDATA_MAX here. */
  out->create.htype = htype;
  out->create.hlen = hlen;
  memcpy(out->create.hdata, body + off, hlen);
  return 0;
}

/* Append one specifier at *off if it fits in limit; -1 if not. */
static int
put_spec(uint8_t *body, size_t limit, size_t *off, uint8_t type,
         const uint8_t *d1, size_t l1, const uint8_t *d2, size_t l2)
{
  size_t need = 2 + l1 + l2;
  if (l1 + l2 > 255 || limit - *off < need)
    return -1;
  body[*off] = type;
  body[*off + 1] = (uint8_t)(l1 + l2);
  if (l1)
    memcpy(body + *off + 2, d1, l1);
  if (l2)
    memcpy(body + *off + 2 + l1, d2, l2);
  *off += need;
  return 0;
}

int
extend2_build(uint8_t *body, size_t maxlen, const extend2_t *e,
              size_t *len_out)
{
  size_t limit = maxlen < RELAY_BODY_MAX ? maxlen : RELAY_BODY_MAX;
  size_t off = 1;
  unsigned n = 0;
  uint8_t port[2];
  *len_out = 0;
  if (limit < 1 || e->n_unknown > EXTEND2_MAX_UNKNOWN_SPECS)
    return -1;
  if (e->has_ipv4) {
    set_u16(port, e->ipv4_port);
    if (put_spec(body, limit, &off, LSTYPE_IPV4, e->ipv4_addr, 4, port, 2))
      return -1;
    n++;
  }
  if (e->has_rsa_id) {
    if (put_spec(body, limit, &off, LSTYPE_LEGACY_ID, e->rsa_id, 20, NULL, 0))
      return -1;
    n++;
  }
  if (e->has_ed_id) {
    if (put_spec(body, limit, &off, LSTYPE_ED25519_ID, e->ed_id, 32, NULL, 0))
      return -1;
    n++;
  }
  if (e->has_ipv6) {
    set_u16(port, e->ipv6_port);
    if (put_spec(body, limit, &off, LSTYPE_IPV6, e->ipv6_addr, 16, port, 2))
      return -1;
    n++;
  }
  for (unsigned i = 0; i < e->n_unknown; i++) {
    const link_spec_t *ls = &e->unknown[i];
    if (put_spec(body, limit, &off, ls->type, ls->data, ls->len, NULL, 0))
      return -1;
    n++;
  }
  body[0] = (uint8_t)n;
  if (limit - off < 4 || limit - off - 4 < e->create.hlen)
    return -1;
  set_u16(body + off, e->create.htype);
  set_u16(body + off + 2, e->create.hlen);
  memcpy(body + off + 4, e->create.hdata, e->create.hlen);
  *len_out = off + 4 + e->create.hlen;
  return 0;
}

/* ---------------------------------------------------------------- */
/* EXTENDED2 */

int
extended2_parse(created2_t *out, const uint8_t *body, size_t len)
{
  out->hlen = 0;
  if (len > RELAY_BODY_MAX)
    PROTO_BAD("EXTENDED2 body of %zu bytes is too long", len);
  if (len < 2)
    PROTO_BAD("EXTENDED2 truncated before HLEN");
  uint16_t hlen = get_u16(body);
  if (len - 2 < hlen)
    PROTO_BAD("EXTENDED2 HLEN %u does not fit", hlen);
  out->hlen = hlen;
  memcpy(out->hdata, body + 2, hlen);
  return 0;
}

int
extended2_build(uint8_t *body, size_t maxlen, const created2_t *c,
                size_t *len_out)
{
  size_t limit = maxlen < RELAY_BODY_MAX ? maxlen : RELAY_BODY_MAX;
  *len_out = 0;
  if (limit < 2 || c->hlen > limit - 2)
    return -1;
  set_u16(body, c->hlen);
  memcpy(body + 2, c->hdata, c->hlen);
  *len_out = 2 + (size_t)c->hlen;
  return 0;
}

/* ---------------------------------------------------------------- */
/* DESTROY */

void
destroy_cell_make(cell_t *cell, uint32_t circ_id, uint8_t reason)
{
  cell->circ_id = circ_id;
  cell->command = CELL_DESTROY;
  memset(cell->payload, 0, CELL_PAYLOAD_LEN);
  cell->payload[0] = reason;
}
