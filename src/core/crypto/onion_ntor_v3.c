/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_ntor_v3.c -- ntor v3 (proposal 332) and its extension lists.
 *
 * Design: every hash, MAC and KDF of the proposal is "a tweak, then a list
 * of byte strings", so one helper (ntor3_tweaked()) takes the tweak and an
 * array of segments, concatenates ENCAP(tweak) | segments into a temporary
 * heap buffer (wiped and freed afterwards), and runs SHA3-256 or SHAKE-256
 * on it. MAC(k, m, t) is the same helper with ENCAP(k) | k as the first
 * segments. Handshakes run once per circuit, so clarity wins over avoiding
 * these small allocations.
 *
 * The client keeps x, X, B, ID, Bx, its MAC and a copy of VER; the relay,
 * between its two steps, keeps ID, B, X, Xb, the client MAC, VER and the
 * decrypted client message. DH failures are accumulated into one flag and
 * checked once all work is done.
 */
#include "core/crypto/onion_ntor_v3.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define PROTOID "ntor3-curve25519-sha3_256-1"
#define STRLEN(s) (sizeof(s) - 1)
#define T_MSGKDF PROTOID ":kdf_phase1"
#define T_MSGMAC PROTOID ":msg_mac"
#define T_KEY_SEED PROTOID ":key_seed"
#define T_VERIFY PROTOID ":verify"
#define T_FINAL PROTOID ":kdf_final"
#define T_AUTH PROTOID ":auth_final"
#define SERVER_STR "Server"

#define KLEN CURVE25519_KEY_LEN
#define DLEN DIGEST_SHA3_256_LEN /* DIGEST_LEN = MAC_LEN = MAC_KEY_LEN */
#define ENC_KEY_LEN 32
#define ID_LEN ONION_NTOR3_ID_LEN
#define ENCAP_LEN 8

struct onion_ntor3_client_t {
  curve25519_keypair_t eph; /* x, X */
  uint8_t onion_key[KLEN];  /* B */
  uint8_t id[ID_LEN];
  uint8_t bx[KLEN];
  uint8_t msg_mac[DLEN];
  uint8_t *ver;
  size_t ver_len;
};

struct onion_ntor3_server_t {
  uint8_t id[ID_LEN];
  uint8_t onion_key[KLEN]; /* B */
  uint8_t x_pub[KLEN];
  uint8_t xb[KLEN];
  uint8_t msg_mac[DLEN];
  uint8_t *ver;
  size_t ver_len;
  uint8_t *cm; /* decrypted client message */
  size_t cm_len;
  int replied;
};

typedef struct {
  const void *p;
  size_t n;
} seg_t;

#define SEG(ptr, len) ((seg_t){ (ptr), (len) })
#define SEGS(a) (a), (sizeof(a) / sizeof((a)[0]))

static void
encap(uint8_t out[ENCAP_LEN], size_t len)
{
  set_u64(out, (uint64_t)len);
}

/* SHA3-256 (outlen == 32, !xof) or SHAKE-256 (xof) of
 * ENCAP(tweak) | tweak | segs... */
static void
ntor3_tweaked(uint8_t *out, size_t outlen, int xof, const char *tweak,
              const seg_t *segs, size_t n_segs)
{
  size_t tlen = strlen(tweak);
  size_t total = ENCAP_LEN + tlen;
  for (size_t i = 0; i < n_segs; i++)
    total += segs[i].n;
  uint8_t *buf = pc_malloc(total), *p = buf;
  encap(p, tlen), p += ENCAP_LEN;
  memcpy(p, tweak, tlen), p += tlen;
  for (size_t i = 0; i < n_segs; i++) {
    if (segs[i].n)
      memcpy(p, segs[i].p, segs[i].n);
    p += segs[i].n;
  }
  if (xof)
    crypt_shake256(out, outlen, buf, total);
  else
    crypt_sha3_256(out, buf, total);
  pc_memwipe(buf, total);
  free(buf);
}

/* AES-256-CTR, zero IV, in place or out of place. */
static void
ntor3_enc(const uint8_t key[ENC_KEY_LEN], uint8_t *out, const uint8_t *in,
          size_t n)
{
  if (n == 0)
    return;
  crypt_aes_t *c = crypt_aes_new(key, 256, NULL);
  crypt_aes_crypt(c, out, in, n);
  crypt_aes_free(c);
}

/* Phase 1 keys, both sides: from Bx (= Xb) derive ENC_K1 and MAC_K1. */
static void
ntor3_phase1_keys(const uint8_t bx[KLEN], const uint8_t id[ID_LEN],
                  const uint8_t x_pub[KLEN], const uint8_t b_pub[KLEN],
                  const uint8_t *ver, size_t ver_len,
                  uint8_t enc_k1[ENC_KEY_LEN], uint8_t mac_k1[DLEN])
{
  uint8_t ver_encap[ENCAP_LEN], keys[ENC_KEY_LEN + DLEN];
  encap(ver_encap, ver_len);
  /* secret_input_phase1 = Bx | ID | X | B | PROTOID | ENCAP(VER) */
  const seg_t si1[] = {
    SEG(bx, KLEN), SEG(id, ID_LEN), SEG(x_pub, KLEN), SEG(b_pub, KLEN),
    SEG(PROTOID, STRLEN(PROTOID)), SEG(ver_encap, ENCAP_LEN),
    SEG(ver, ver_len),
  };
  ntor3_tweaked(keys, sizeof(keys), 1, T_MSGKDF, SEGS(si1));
  memcpy(enc_k1, keys, ENC_KEY_LEN);
  memcpy(mac_k1, keys + ENC_KEY_LEN, DLEN);
  pc_memwipe(keys, sizeof(keys));
}

/* msg_mac = MAC_msgmac(MAC_K1, ID | B | X | encrypted_msg), where
 * MAC(k, msg, t) = SHA3_256(ENCAP(t) | ENCAP(k) | msg). */
static void
ntor3_msg_mac(const uint8_t mac_k1[DLEN], const uint8_t id[ID_LEN],
              const uint8_t b_pub[KLEN], const uint8_t x_pub[KLEN],
              const uint8_t *emsg, size_t emsg_len, uint8_t mac_out[DLEN])
{
  uint8_t k_encap[ENCAP_LEN];
  encap(k_encap, DLEN);
  const seg_t mac_in[] = {
    SEG(k_encap, ENCAP_LEN), SEG(mac_k1, DLEN), SEG(id, ID_LEN),
    SEG(b_pub, KLEN), SEG(x_pub, KLEN), SEG(emsg, emsg_len),
  };
  ntor3_tweaked(mac_out, DLEN, 0, T_MSGMAC, SEGS(mac_in));
}

/* Phase 2 keys, both sides: from Xy and Xb derive verify and
 * RAW_KEYSTREAM = ENC_KEY[32] | key material (raw_len bytes in all). */
static void
ntor3_phase2_keys(const uint8_t xy[KLEN], const uint8_t xb[KLEN],
                  const uint8_t id[ID_LEN], const uint8_t b_pub[KLEN],
                  const uint8_t x_pub[KLEN], const uint8_t y_pub[KLEN],
                  const uint8_t *ver, size_t ver_len,
                  uint8_t verify_out[DLEN], uint8_t *raw_out, size_t raw_len)
{
  uint8_t ver_encap[ENCAP_LEN], key_seed[DLEN];
  encap(ver_encap, ver_len);
  /* secret_input = Xy | Xb | ID | B | X | Y | PROTOID | ENCAP(VER) */
  const seg_t si[] = {
    SEG(xy, KLEN), SEG(xb, KLEN), SEG(id, ID_LEN), SEG(b_pub, KLEN),
    SEG(x_pub, KLEN), SEG(y_pub, KLEN), SEG(PROTOID, STRLEN(PROTOID)),
    SEG(ver_encap, ENCAP_LEN), SEG(ver, ver_len),
  };
  ntor3_tweaked(key_seed, DLEN, 0, T_KEY_SEED, SEGS(si));
  ntor3_tweaked(verify_out, DLEN, 0, T_VERIFY, SEGS(si));
  const seg_t ks[] = { SEG(key_seed, DLEN) };
  ntor3_tweaked(raw_out, raw_len, 1, T_FINAL, SEGS(ks));
  pc_memwipe(key_seed, sizeof(key_seed));
}

/* AUTH = H_auth(verify | ID | B | Y | X | MAC | ENCAP(encrypted_msg) |
 *               PROTOID | "Server") */
static void
ntor3_auth(const uint8_t verify[DLEN], const uint8_t id[ID_LEN],
           const uint8_t b_pub[KLEN], const uint8_t y_pub[KLEN],
           const uint8_t x_pub[KLEN], const uint8_t client_mac[DLEN],
           const uint8_t *esm, size_t esm_len, uint8_t auth_out[DLEN])
{
  uint8_t esm_encap[ENCAP_LEN];
  encap(esm_encap, esm_len);
  const seg_t ai[] = {
    SEG(verify, DLEN), SEG(id, ID_LEN), SEG(b_pub, KLEN), SEG(y_pub, KLEN),
    SEG(x_pub, KLEN), SEG(client_mac, DLEN), SEG(esm_encap, ENCAP_LEN),
    SEG(esm, esm_len), SEG(PROTOID, STRLEN(PROTOID)),
    SEG(SERVER_STR, STRLEN(SERVER_STR)),
  };
  ntor3_tweaked(auth_out, DLEN, 0, T_AUTH, SEGS(ai));
}

/* ---- Client ---- */

int
onion_ntor3_client_create_with_key_(
    const uint8_t id[ID_LEN], const uint8_t onion_key[KLEN],
    const uint8_t *ver, size_t ver_len, const uint8_t *msg, size_t msg_len,
    const curve25519_keypair_t *eph, uint8_t *out, size_t out_cap,
    size_t *out_len, onion_ntor3_client_t **state_out)
{
  *state_out = NULL;
  if (out_cap < ONION_NTOR3_CLIENT_OVERHEAD ||
      out_cap - ONION_NTOR3_CLIENT_OVERHEAD < msg_len) {
    log_warn("ntor3: %zu-byte message does not fit in %zu bytes", msg_len,
             out_cap);
    return -1;
  }
  onion_ntor3_client_t *st = pc_zalloc(sizeof(*st));
  st->eph = *eph;
  memcpy(st->onion_key, onion_key, KLEN);
  memcpy(st->id, id, ID_LEN);
  st->ver = pc_memdup(ver_len ? ver : (const uint8_t *)"", ver_len);
  st->ver_len = ver_len;
  if (curve25519_dh(st->bx, eph->secret, onion_key) < 0) {
    log_info("ntor3: degenerate relay onion key");
    onion_ntor3_client_free(st);
    return -1;
  }

  uint8_t enc_k1[ENC_KEY_LEN], mac_k1[DLEN];
  uint8_t *p = out;
  memcpy(p, id, ID_LEN), p += ID_LEN;
  memcpy(p, onion_key, KLEN), p += KLEN;
  memcpy(p, eph->pub, KLEN), p += KLEN;
  uint8_t *emsg = p;
  ntor3_phase1_keys(st->bx, id, eph->pub, onion_key, ver, ver_len, enc_k1,
                    mac_k1);
  if (msg_len)
    memcpy(emsg, msg, msg_len);
  ntor3_enc(enc_k1, emsg, emsg, msg_len);
  ntor3_msg_mac(mac_k1, id, onion_key, eph->pub, emsg, msg_len, st->msg_mac);
  memcpy(emsg + msg_len, st->msg_mac, DLEN);
  pc_memwipe(enc_k1, sizeof(enc_k1));
  pc_memwipe(mac_k1, sizeof(mac_k1));
  *out_len = ONION_NTOR3_CLIENT_OVERHEAD + msg_len;
  *state_out = st;
  return 0;
}

int
onion_ntor3_client_create(const uint8_t id[ID_LEN],
                          const uint8_t onion_key[KLEN], const uint8_t *ver,
                          size_t ver_len, const uint8_t *msg, size_t msg_len,
                          uint8_t *out, size_t out_cap, size_t *out_len,
                          onion_ntor3_client_t **state_out)
{
  curve25519_keypair_t eph;
  curve25519_keypair_generate(&eph);
  int r = onion_ntor3_client_create_with_key_(id, onion_key, ver, ver_len,
                                              msg, msg_len, &eph, out,
                                              out_cap, out_len, state_out);
  curve25519_keypair_wipe(&eph);
  return r;
}

int
onion_ntor3_client_finish(const onion_ntor3_client_t *st,
                          const uint8_t *reply, size_t reply_len,
                          uint8_t *msg_out, size_t msg_cap,
                          size_t *msg_len_out, uint8_t *keys_out,
                          size_t keys_len)
{
  if (reply_len < ONION_NTOR3_SERVER_OVERHEAD) {
    log_info("ntor3: reply of %zu bytes is too short", reply_len);
    return -1;
  }
  size_t sm_len = reply_len - ONION_NTOR3_SERVER_OVERHEAD;
  if (keys_len == 0 || keys_len > ONION_NTOR3_KEYS_MAX) {
    log_warn("ntor3: bad key material length %zu", keys_len);
    return -1;
  }
  if (sm_len > msg_cap) {
    /* The relay chose the length: not our bug, so not a warning. */
    log_info("ntor3: relay message of %zu bytes, expected at most %zu",
             sm_len, msg_cap);
    return -1;
  }
  const uint8_t *y_pub = reply;
  const uint8_t *auth = reply + KLEN;
  const uint8_t *esm = reply + ONION_NTOR3_SERVER_OVERHEAD;
  uint8_t yx[KLEN], verify[DLEN], my_auth[DLEN];
  size_t raw_len = ENC_KEY_LEN + keys_len;
  uint8_t *raw = pc_malloc(raw_len);
  int bad = curve25519_dh(yx, st->eph.secret, y_pub) < 0;
  ntor3_phase2_keys(yx, st->bx, st->id, st->onion_key, st->eph.pub, y_pub,
                    st->ver, st->ver_len, verify, raw, raw_len);
  ntor3_auth(verify, st->id, st->onion_key, y_pub, st->eph.pub, st->msg_mac,
             esm, sm_len, my_auth);
  bad |= pc_memneq(my_auth, auth, DLEN);
  if (!bad) {
    ntor3_enc(raw, msg_out, esm, sm_len);
    memcpy(keys_out, raw + ENC_KEY_LEN, keys_len);
    *msg_len_out = sm_len;
  } else {
    log_info("ntor3: the relay's reply does not verify; failing the "
             "handshake");
  }
  pc_memwipe(raw, raw_len);
  free(raw);
  pc_memwipe(yx, sizeof(yx));
  pc_memwipe(verify, sizeof(verify));
  pc_memwipe(my_auth, sizeof(my_auth));
  return bad ? -1 : 0;
}

void
onion_ntor3_client_free_(onion_ntor3_client_t *st)
{
  if (!st)
    return;
  if (st->ver) {
    pc_memwipe(st->ver, st->ver_len);
    free(st->ver);
  }
  pc_memwipe(st, sizeof(*st));
  free(st);
}

/* ---- Relay ---- */

int
onion_ntor3_server_begin(const uint8_t *onionskin, size_t len,
                         const uint8_t my_id[ID_LEN],
                         const curve25519_keypair_t *const *keys,
                         size_t n_keys, const uint8_t *ver, size_t ver_len,
                         onion_ntor3_server_t **state_out)
{
  *state_out = NULL;
  if (len < ONION_NTOR3_CLIENT_OVERHEAD) {
    log_info("ntor3: onionskin of %zu bytes is too short", len);
    return -1;
  }
  const uint8_t *node_id = onionskin;
  const uint8_t *keyid = onionskin + ID_LEN;
  const uint8_t *x_pub = onionskin + ID_LEN + KLEN;
  const uint8_t *emsg = onionskin + ID_LEN + 2 * KLEN;
  size_t emsg_len = len - ONION_NTOR3_CLIENT_OVERHEAD;
  const uint8_t *mac = emsg + emsg_len;
  const curve25519_keypair_t *kp = NULL;

  if (pc_memneq(node_id, my_id, ID_LEN)) {
    log_info("ntor3: CREATE2 is for a different relay identity");
    return -1;
  }
  for (size_t i = 0; i < n_keys && !kp; i++) {
    if (keys[i] && !pc_memneq(keys[i]->pub, keyid, KLEN))
      kp = keys[i];
  }
  if (!kp) {
    log_info("ntor3: CREATE2 names an onion key we do not have");
    return -1;
  }

  onion_ntor3_server_t *st = pc_zalloc(sizeof(*st));
  memcpy(st->id, my_id, ID_LEN);
  memcpy(st->onion_key, kp->pub, KLEN);
  memcpy(st->x_pub, x_pub, KLEN);
  st->ver = pc_memdup(ver_len ? ver : (const uint8_t *)"", ver_len);
  st->ver_len = ver_len;
  memcpy(st->msg_mac, mac, DLEN);

  uint8_t enc_k1[ENC_KEY_LEN], mac_k1[DLEN], expected[DLEN];
  int bad = curve25519_dh(st->xb, kp->secret, x_pub) < 0;
  ntor3_phase1_keys(st->xb, my_id, x_pub, kp->pub, ver, ver_len, enc_k1,
                    mac_k1);
  ntor3_msg_mac(mac_k1, my_id, kp->pub, x_pub, emsg, emsg_len, expected);
  bad |= pc_memneq(expected, mac, DLEN);
  if (!bad) {
    st->cm = pc_malloc(emsg_len ? emsg_len : 1);
    st->cm_len = emsg_len;
    ntor3_enc(enc_k1, st->cm, emsg, emsg_len);
  }
  pc_memwipe(enc_k1, sizeof(enc_k1));
  pc_memwipe(mac_k1, sizeof(mac_k1));
  pc_memwipe(expected, sizeof(expected));
  if (bad) {
    log_info("ntor3: client handshake does not authenticate");
    onion_ntor3_server_free(st);
    return -1;
  }
  *state_out = st;
  return 0;
}

const uint8_t *
onion_ntor3_server_client_msg(const onion_ntor3_server_t *st,
                              size_t *len_out)
{
  *len_out = st->cm_len;
  return st->cm;
}

int
onion_ntor3_server_reply_with_key_(onion_ntor3_server_t *st,
                                   const uint8_t *msg, size_t msg_len,
                                   const curve25519_keypair_t *eph,
                                   uint8_t *out, size_t out_cap,
                                   size_t *out_len, uint8_t *keys_out,
                                   size_t keys_len)
{
  if (st->replied) {
    log_warn("ntor3: second reply on one handshake state");
    return -1;
  }
  if (out_cap < ONION_NTOR3_SERVER_OVERHEAD ||
      out_cap - ONION_NTOR3_SERVER_OVERHEAD < msg_len || keys_len == 0 ||
      keys_len > ONION_NTOR3_KEYS_MAX) {
    log_warn("ntor3: output buffers too small (%zu-byte message, %zu "
             "bytes of keys)", msg_len, keys_len);
    return -1;
  }
  uint8_t xy[KLEN];
  if (curve25519_dh(xy, eph->secret, st->x_pub) < 0) {
    log_info("ntor3: degenerate client key");
    return -1;
  }
  st->replied = 1;
  size_t raw_len = ENC_KEY_LEN + keys_len;
  uint8_t *raw = pc_malloc(raw_len);
  uint8_t *esm = out + ONION_NTOR3_SERVER_OVERHEAD;
  uint8_t verify[DLEN], auth[DLEN];
  ntor3_phase2_keys(xy, st->xb, st->id, st->onion_key, st->x_pub, eph->pub,
                    st->ver, st->ver_len, verify, raw, raw_len);
  if (msg_len)
    memcpy(esm, msg, msg_len);
  ntor3_enc(raw, esm, esm, msg_len);
  ntor3_auth(verify, st->id, st->onion_key, eph->pub, st->x_pub, st->msg_mac,
             esm, msg_len, auth);
  memcpy(out, eph->pub, KLEN);
  memcpy(out + KLEN, auth, DLEN);
  memcpy(keys_out, raw + ENC_KEY_LEN, keys_len);
  *out_len = ONION_NTOR3_SERVER_OVERHEAD + msg_len;
  pc_memwipe(raw, raw_len);
  free(raw);
  pc_memwipe(xy, sizeof(xy));
  pc_memwipe(verify, sizeof(verify));
  pc_memwipe(auth, sizeof(auth));
  return 0;
}

int
onion_ntor3_server_reply(onion_ntor3_server_t *st, const uint8_t *msg,
                         size_t msg_len, uint8_t *out, size_t out_cap,
                         size_t *out_len, uint8_t *keys_out, size_t keys_len)
{
  curve25519_keypair_t eph;
  curve25519_keypair_generate(&eph);
  int r = onion_ntor3_server_reply_with_key_(st, msg, msg_len, &eph, out,
                                             out_cap, out_len, keys_out,
                                             keys_len);
  curve25519_keypair_wipe(&eph);
  return r;
}

void
onion_ntor3_server_free_(onion_ntor3_server_t *st)
{
  if (!st)
    return;
  if (st->ver) {
    pc_memwipe(st->ver, st->ver_len);
    free(st->ver);
  }
  if (st->cm) {
    pc_memwipe(st->cm, st->cm_len);
    free(st->cm);
  }
  pc_memwipe(st, sizeof(*st));
  free(st);
}

/* ---- Extension lists ---- */

size_t
onion_ntor3_exts_encoded_len(const onion_ntor3_ext_t *exts, size_t n)
{
  if (n > ONION_NTOR3_MAX_EXTS)
    return 0;
  size_t total = 1;
  for (size_t i = 0; i < n; i++) {
    if (exts[i].len > ONION_NTOR3_EXT_MAX_BODY)
      return 0;
    total += 2 + exts[i].len;
  }
  return total;
}

int
onion_ntor3_exts_encode(const onion_ntor3_ext_t *exts, size_t n,
                        uint8_t *out, size_t cap, size_t *len_out)
{
  size_t total = onion_ntor3_exts_encoded_len(exts, n);
  if (total == 0) {
    log_warn("ntor3: too many extensions or an extension body too long");
    return -1;
  }
  if (total > cap) {
    log_warn("ntor3: %zu bytes of extensions do not fit in %zu", total,
             cap);
    return -1;
  }
  uint8_t *p = out;
  *p++ = (uint8_t)n;
  for (size_t i = 0; i < n; i++) {
    *p++ = exts[i].type;
    *p++ = (uint8_t)exts[i].len;
    if (exts[i].len)
      memcpy(p, exts[i].body, exts[i].len);
    p += exts[i].len;
  }
  *len_out = total;
  return 0;
}

int
onion_ntor3_exts_parse(const uint8_t *msg, size_t len,
                       onion_ntor3_ext_t *exts_out, size_t max_exts,
                       size_t *n_out)
{
  if (len < 1) {
    log_info("ntor3: empty extension list (no N_EXTENSIONS)");
    return -1;
  }
  size_t n = msg[0], off = 1;
  if (n > max_exts) {
    log_info("ntor3: %zu extensions, room for %zu", n, max_exts);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (len - off < 2) {
      log_info("ntor3: extension %zu header truncated", i);
      return -1;
    }
    uint8_t type = msg[off], elen = msg[off + 1];
    off += 2;
    if (len - off < elen) {
      log_info("ntor3: extension %zu (type %u) body truncated", i,
               (unsigned)type);
      return -1;
    }
    exts_out[i].type = type;
    exts_out[i].len = elen;
    exts_out[i].body = msg + off;
    off += elen;
  }
  if (off != len) {
    log_info("ntor3: %zu trailing bytes after the extension list",
             len - off);
    return -1;
  }
  *n_out = n;
  return 0;
}

const onion_ntor3_ext_t *
onion_ntor3_exts_find(const onion_ntor3_ext_t *exts, size_t n, uint8_t type)
{
  for (size_t i = 0; i < n; i++) {
    if (exts[i].type == type)
      return &exts[i];
  }
  return NULL;
}
