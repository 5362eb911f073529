/* SPDX-License-Identifier: BSD-3-Clause */
/* linkcells.c -- link-handshake cell bodies (tor-spec 4); see linkcells.h.
 *
 * Every parser walks its payload with an explicit "remaining" count and
 * checks each length field against it before use, so no length field is
 * trusted. Malformed input is reported at info level (a peer can trigger
 * it at will, so it must not flood the notice log) and returns -1.
 * Builders compute the exact size first, refuse what would not fit the
 * 16-bit var-cell length, and then write without further checks.
 */
#include "core/proto/linkcells.h"

#include <string.h>

#include "core/proto/proto_internal.h"
#include "lib/bytes/bytes.h"

/* ---------------------------------------------------------------- */
/* VERSIONS */

int
versions_cell_build(const uint16_t *versions, size_t n, var_cell_t **out)
{
  *out = NULL;
  if (n > VERSIONS_MAX_COUNT)
    return -1;
  var_cell_t *vc = var_cell_new((uint16_t)(n * 2));
  vc->command = CELL_VERSIONS;
  vc->circ_id = 0;
  for (size_t i = 0; i < n; i++)
    set_u16(vc->payload + 2 * i, versions[i]);
  *out = vc;
  return 0;
}

int
versions_cell_parse(const uint8_t *payload, size_t len, uint16_t *out,
                    size_t max_out, size_t *n_out)
{
  *n_out = 0;
  if (len % 2)
    PROTO_BAD("VERSIONS cell has odd length %zu", len);
  size_t n = len / 2;
  for (size_t i = 0; i < n && i < max_out; i++)
    out[i] = get_u16(payload + 2 * i);
  *n_out = n;
  return 0;
}

int
versions_highest_common(const uint8_t *payload, size_t len,
                        const uint16_t *ours, size_t n_ours)
{
  if (len % 2)
    PROTO_BAD("VERSIONS cell has odd length %zu", len);
  int best = 0;
  for (size_t i = 0; i + 1 < len; i += 2) {
    uint16_t v = get_u16(payload + i);
    if (v <= best)
      continue;
    for (size_t j = 0; j < n_ours; j++) {
      if (ours[j] == v) {
        best = v;
        break;
      }
    }
  }
  return best;
}

/* ---------------------------------------------------------------- */
/* NETINFO */

/* Read one ATYPE ALEN AVAL triple at *off; fills *a (type NONE if the type
 * is unknown or ALEN does not match it). -1 if it runs past len. */
static int
netinfo_read_addr(netinfo_addr_t *a, const uint8_t *p, size_t len,
                  size_t *off)
{
  if (len - *off < 2)
    PROTO_BAD("NETINFO address header truncated");
  uint8_t type = p[*off], alen = p[*off + 1];
  *off += 2;
  if (len - *off < alen)
    PROTO_BAD("NETINFO address of length %u truncated", alen);
  memset(a, 0, sizeof(*a));
  if ((type == NETINFO_ATYPE_IPV4 && alen == 4) ||
      (type == NETINFO_ATYPE_IPV6 && alen == 16)) {
    a->type = type;
    memcpy(a->addr, p + *off, alen);
  } else {
    a->type = NETINFO_ATYPE_NONE;
  }
  *off += alen;
  return 0;
}

int
netinfo_parse(netinfo_t *out, const uint8_t *payload, size_t len)
{
  memset(out, 0, sizeof(*out));
  if (len < 4)
    PROTO_BAD("NETINFO truncated before timestamp");
  out->timestamp = get_u32(payload);
  size_t off = 4;
  if (netinfo_read_addr(&out->other_addr, payload, len, &off) < 0)
    return -1;
  if (len - off < 1)
    PROTO_BAD("NETINFO truncated before NMYADDR");
  unsigned n = payload[off++];
  for (unsigned i = 0; i < n; i++) {
    netinfo_addr_t a;
    if (netinfo_read_addr(&a, payload, len, &off) < 0)
      return -1;
    if (a.type != NETINFO_ATYPE_NONE && out->n_my_addrs < NETINFO_MAX_MY_ADDRS)
      out->my_addrs[out->n_my_addrs++] = a;
  }
  return 0;
}

static size_t
netinfo_write_addr(uint8_t *p, const netinfo_addr_t *a)
{
  uint8_t alen = a->type == NETINFO_ATYPE_IPV4 ? 4
                 : a->type == NETINFO_ATYPE_IPV6 ? 16 : 0;
  p[0] = alen ? a->type : 0;
  p[1] = alen;
  memcpy(p + 2, a->addr, alen);
  return 2 + (size_t)alen;
}

static int
netinfo_type_ok(uint8_t type, int allow_none)
{
  return type == NETINFO_ATYPE_IPV4 || type == NETINFO_ATYPE_IPV6 ||
         (allow_none && type == NETINFO_ATYPE_NONE);
}

int
netinfo_build(uint8_t *payload, const netinfo_t *ni)
{
  if (ni->n_my_addrs > NETINFO_MAX_MY_ADDRS)
    return -1;
  if (!netinfo_type_ok(ni->other_addr.type, 1))
    return -1;
  for (unsigned i = 0; i < ni->n_my_addrs; i++)
    if (!netinfo_type_ok(ni->my_addrs[i].type, 0))
      return -1;
  /* Worst case 4 + 18 + 1 + 8 * 18 = 167 bytes: always fits. */
  memset(payload, 0, CELL_PAYLOAD_LEN);
  set_u32(payload, ni->timestamp);
  size_t off = 4;
  off += netinfo_write_addr(payload + off, &ni->other_addr);
  payload[off++] = ni->n_my_addrs;
  for (unsigned i = 0; i < ni->n_my_addrs; i++)
    off += netinfo_write_addr(payload + off, &ni->my_addrs[i]);
  return 0;
}

int
netinfo_cell_make(cell_t *cell, const netinfo_t *ni)
{
  cell->circ_id = 0;
  cell->command = CELL_NETINFO;
  return netinfo_build(cell->payload, ni);
}

/* ---------------------------------------------------------------- */
/* CERTS */

int
certs_cell_parse(certs_cell_t *out, const uint8_t *payload, size_t len)
{
  uint8_t seen[32] = { 0 }; /* bitmap of cert types */
  out->n_certs = 0;
  if (len < 1)
    PROTO_BAD("CERTS cell is empty");
  unsigned n = payload[0];
  size_t off = 1;
  for (unsigned i = 0; i < n; i++) {
    if (len - off < 3)
      PROTO_BAD("CERTS entry %u header truncated", i);
    uint8_t type = payload[off];
    uint16_t clen = get_u16(payload + off + 1);
    off += 3;
    if (len - off < clen)
      PROTO_BAD("CERTS entry %u (type %u, %u bytes) truncated", i, type, clen);
    if (seen[type / 8] & (1u << (type % 8)))
      PROTO_BAD("CERTS cell lists certificate type %u twice", type);
    seen[type / 8] |= (uint8_t)(1u << (type % 8));
    out->certs[i].type = type;
    out->certs[i].len = clen;
    out->certs[i].body = payload + off;
    off += clen;
    out->n_certs = i + 1;
  }
  return 0;
}

const certs_entry_t *
certs_cell_find(const certs_cell_t *c, uint8_t type)
{
  for (unsigned i = 0; i < c->n_certs; i++)
    if (c->certs[i].type == type)
      return &c->certs[i];
  return NULL;
}

int
certs_cell_add(certs_cell_t *c, uint8_t type, const uint8_t *body,
               size_t len)
{
  if (c->n_certs >= CERTS_MAX_COUNT || len > UINT16_MAX)
    return -1;
  if (certs_cell_find(c, type))
    return -1;
  c->certs[c->n_certs].type = type;
  c->certs[c->n_certs].len = (uint16_t)len;
  c->certs[c->n_certs].body = body;
  c->n_certs++;
  return 0;
}

int
certs_cell_build(const certs_cell_t *c, var_cell_t **out)
{
  *out = NULL;
  if (c->n_certs > CERTS_MAX_COUNT)
    return -1;
  size_t total = 1;
  for (unsigned i = 0; i < c->n_certs; i++)
    total += 3 + (size_t)c->certs[i].len;
  if (total > VAR_CELL_MAX_PAYLOAD)
    return -1;
  var_cell_t *vc = var_cell_new((uint16_t)total);
  vc->command = CELL_CERTS;
  vc->payload[0] = (uint8_t)c->n_certs;
  size_t off = 1;
  for (unsigned i = 0; i < c->n_certs; i++) {
    vc->payload[off] = c->certs[i].type;
    set_u16(vc->payload + off + 1, c->certs[i].len);
    if (c->certs[i].len)
      memcpy(vc->payload + off + 3, c->certs[i].body, c->certs[i].len);
    off += 3 + (size_t)c->certs[i].len;
  }
  *out = vc;
  return 0;
}

/* ---------------------------------------------------------------- */
/* AUTH_CHALLENGE */

int
auth_challenge_parse(auth_challenge_t *out, const uint8_t *payload,
                     size_t len)
{
  memset(out, 0, sizeof(*out));
  if (len < AUTH_CHALLENGE_LEN + 2)
    PROTO_BAD("AUTH_CHALLENGE truncated (%zu bytes)", len);
  memcpy(out->challenge, payload, AUTH_CHALLENGE_LEN);
  size_t n = get_u16(payload + AUTH_CHALLENGE_LEN);
  size_t off = AUTH_CHALLENGE_LEN + 2;
  if ((len - off) / 2 < n)
    PROTO_BAD("AUTH_CHALLENGE lists %zu methods but is %zu bytes", n, len);
  for (size_t i = 0; i < n && i < AUTH_CHALLENGE_MAX_METHODS; i++)
    out->methods[out->n_methods++] = get_u16(payload + off + 2 * i);
  return 0;
}

int
auth_challenge_has_method(const auth_challenge_t *ac, uint16_t method)
{
  for (unsigned i = 0; i < ac->n_methods; i++)
    if (ac->methods[i] == method)
      return 1;
  return 0;
}

int
auth_challenge_build(const auth_challenge_t *ac, var_cell_t **out)
{
  *out = NULL;
  if (ac->n_methods > AUTH_CHALLENGE_MAX_METHODS)
    return -1;
  var_cell_t *vc =
    var_cell_new((uint16_t)(AUTH_CHALLENGE_LEN + 2 + 2 * ac->n_methods));
  vc->command = CELL_AUTH_CHALLENGE;
  memcpy(vc->payload, ac->challenge, AUTH_CHALLENGE_LEN);
  set_u16(vc->payload + AUTH_CHALLENGE_LEN, ac->n_methods);
  for (unsigned i = 0; i < ac->n_methods; i++)
    set_u16(vc->payload + AUTH_CHALLENGE_LEN + 2 + 2 * i, ac->methods[i]);
  *out = vc;
  return 0;
}

/* ---------------------------------------------------------------- */
/* AUTHENTICATE */

int
authenticate_cell_parse(const uint8_t *payload, size_t len,
                        uint16_t *auth_type, const uint8_t **auth,
                        size_t *auth_len)
{
  *auth = NULL;
  *auth_len = 0;
  if (len < 4)
    PROTO_BAD("AUTHENTICATE truncated (%zu bytes)", len);
  uint16_t type = get_u16(payload), alen = get_u16(payload + 2);
  if (len - 4 < alen)
    PROTO_BAD("AUTHENTICATE authenticator of %u bytes truncated", alen);
  *auth_type = type;
  *auth = payload + 4;
  *auth_len = alen;
  return 0;
}

int
authenticate_cell_build(uint16_t auth_type, const uint8_t *auth,
                        size_t auth_len, var_cell_t **out)
{
  *out = NULL;
  if (auth_len > VAR_CELL_MAX_PAYLOAD - 4)
    return -1;
  var_cell_t *vc = var_cell_new((uint16_t)(4 + auth_len));
  vc->command = CELL_AUTHENTICATE;
  set_u16(vc->payload, auth_type);
  set_u16(vc->payload + 2, (uint16_t)auth_len);
  if (auth_len)
    memcpy(vc->payload + 4, auth, auth_len);
  *out = vc;
  return 0;
}

/* ---------------------------------------------------------------- */
/* AUTH0003 */

/* Field order after TYPE, as laid out on the wire. */
#define AUTH3_FIELDS(a)                                                     \
  { (a)->cid, (a)->sid, (a)->cid_ed, (a)->sid_ed, (a)->slog, (a)->clog,    \
    (a)->scert, (a)->tlssecrets }

void
auth3_encode_signed(uint8_t out[AUTH3_SIGNED_LEN], const auth3_t *a)
{
  const uint8_t *fields[8] = AUTH3_FIELDS(a);
  memcpy(out, AUTH3_TYPE_STR, AUTH3_TYPE_LEN);
  for (int i = 0; i < 8; i++)
    memcpy(out + AUTH3_TYPE_LEN + 32 * i, fields[i], 32);
  memcpy(out + AUTH3_FIXED_LEN, a->rand, AUTH3_RAND_LEN);
}

int
auth3_sign(uint8_t out[AUTH3_BODY_LEN], auth3_t *a,
           const ed25519_keypair_t *auth_key)
{
  auth3_encode_signed(out, a);
  if (ed25519_sign(a->sig, out, AUTH3_SIGNED_LEN, auth_key) < 0)
    return -1;
  memcpy(out + AUTH3_SIGNED_LEN, a->sig, ED25519_SIG_LEN);
  return 0;
}

int
auth3_parse(auth3_t *out, const uint8_t *body, size_t len)
{
  memset(out, 0, sizeof(*out));
  if (len < AUTH3_BODY_LEN)
    PROTO_BAD("AUTH0003 authenticator too short (%zu bytes)", len);
  if (memcmp(body, AUTH3_TYPE_STR, AUTH3_TYPE_LEN) != 0)
    PROTO_BAD("authenticator TYPE is not AUTH0003");
  uint8_t *fields[8] = AUTH3_FIELDS(out);
  for (int i = 0; i < 8; i++)
    memcpy(fields[i], body + AUTH3_TYPE_LEN + 32 * i, 32);
  memcpy(out->rand, body + AUTH3_FIXED_LEN, AUTH3_RAND_LEN);
  memcpy(out->sig, body + len - ED25519_SIG_LEN, ED25519_SIG_LEN);
  return 0;
}

int
auth3_check(const uint8_t *body, size_t len, const auth3_t *expected,
            const uint8_t auth_key[ED25519_PUBKEY_LEN])
{
  auth3_t got;
  if (auth3_parse(&got, body, len) < 0)
    return -1;
  uint8_t want[AUTH3_SIGNED_LEN];
  auth3_encode_signed(want, expected);
  if (pc_memneq(want, body, AUTH3_FIXED_LEN))
    PROTO_BAD("AUTH0003 fields TYPE..TLSSECRETS are not as expected");
  if (ed25519_verify(got.sig, body, len - ED25519_SIG_LEN, auth_key) < 0)
    PROTO_BAD("AUTH0003 signature is not valid");
  return 0;
}
