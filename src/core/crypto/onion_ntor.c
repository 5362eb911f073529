/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_ntor.c -- ntor handshake (tor-spec 5.1.4) and its key expansion.
 *
 * Both sides build the same secret_input
 *   EXP(X,y) | EXP(X,b) | ID | B | X | Y | PROTOID
 * in a fixed stack buffer (ntor_derive()); KEY_SEED = HMAC(t_key, ...) is
 * exactly HKDF-Extract with salt t_key, so the key material is
 * crypt_hkdf_sha256(ikm = secret_input, salt = t_key, info = m_expand).
 * Failures of the individual DH operations are collected in one flag and
 * acted on at the end, so a bad key does not change what work is done.
 * All intermediate secrets are wiped before returning.
 */
#include "core/crypto/onion_ntor.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/kdf.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define PROTOID "ntor-curve25519-sha256-1"
#define PROTOID_LEN (sizeof(PROTOID) - 1)
#define T_MAC PROTOID ":mac"
#define T_KEY PROTOID ":key_extract"
#define T_VERIFY PROTOID ":verify"
#define M_EXPAND PROTOID ":key_expand"
#define SERVER_STR "Server"
#define STRLEN(s) (sizeof(s) - 1)

#define KLEN CURVE25519_KEY_LEN
#define SECRET_INPUT_LEN (2 * KLEN + ONION_NTOR_ID_LEN + 3 * KLEN + PROTOID_LEN)
#define AUTH_INPUT_LEN \
  (DIGEST_SHA256_LEN + ONION_NTOR_ID_LEN + 3 * KLEN + PROTOID_LEN + \
   STRLEN(SERVER_STR))

struct onion_ntor_client_t {
  uint8_t id[ONION_NTOR_ID_LEN];
  uint8_t onion_key[KLEN]; /* B */
  curve25519_keypair_t eph; /* x, X */
};

/* Given the two DH outputs, compute AUTH and keys_len bytes of keys. */
static int
ntor_derive(const uint8_t dh_xy[KLEN], const uint8_t dh_xb[KLEN],
            const uint8_t id[ONION_NTOR_ID_LEN], const uint8_t b_pub[KLEN],
            const uint8_t x_pub[KLEN], const uint8_t y_pub[KLEN],
            uint8_t auth_out[DIGEST_SHA256_LEN], uint8_t *keys_out,
            size_t keys_len)
{
  uint8_t si[SECRET_INPUT_LEN], ai[AUTH_INPUT_LEN];
  uint8_t *p = si;
  memcpy(p, dh_xy, KLEN), p += KLEN;
  memcpy(p, dh_xb, KLEN), p += KLEN;
  memcpy(p, id, ONION_NTOR_ID_LEN), p += ONION_NTOR_ID_LEN;
  memcpy(p, b_pub, KLEN), p += KLEN;
  memcpy(p, x_pub, KLEN), p += KLEN;
  memcpy(p, y_pub, KLEN), p += KLEN;
  memcpy(p, PROTOID, PROTOID_LEN);

  /* auth_input = verify | ID | B | Y | X | PROTOID | "Server" */
  p = ai;
  crypt_hmac_sha256(p, T_VERIFY, STRLEN(T_VERIFY), si, sizeof(si));
  p += DIGEST_SHA256_LEN;
  memcpy(p, id, ONION_NTOR_ID_LEN), p += ONION_NTOR_ID_LEN;
  memcpy(p, b_pub, KLEN), p += KLEN;
  memcpy(p, y_pub, KLEN), p += KLEN;
  memcpy(p, x_pub, KLEN), p += KLEN;
  memcpy(p, PROTOID, PROTOID_LEN), p += PROTOID_LEN;
  memcpy(p, SERVER_STR, STRLEN(SERVER_STR));
  crypt_hmac_sha256(auth_out, T_MAC, STRLEN(T_MAC), ai, sizeof(ai));

  int r = crypt_hkdf_sha256(keys_out, keys_len, si, sizeof(si),
                            (const uint8_t *)T_KEY, STRLEN(T_KEY),
                            (const uint8_t *)M_EXPAND, STRLEN(M_EXPAND));
  pc_memwipe(si, sizeof(si));
  pc_memwipe(ai, sizeof(ai));
  return r < 0 ? -1 : 0;
}

onion_ntor_client_t *
onion_ntor_client_create_with_key_(const uint8_t id[ONION_NTOR_ID_LEN],
                                   const uint8_t onion_key[KLEN],
                                   const curve25519_keypair_t *eph,
                                   uint8_t onionskin_out[ONION_NTOR_ONIONSKIN_LEN])
{
  onion_ntor_client_t *st = pc_zalloc(sizeof(*st));
  memcpy(st->id, id, ONION_NTOR_ID_LEN);
  memcpy(st->onion_key, onion_key, KLEN);
  st->eph = *eph;
  memcpy(onionskin_out, id, ONION_NTOR_ID_LEN);
  memcpy(onionskin_out + ONION_NTOR_ID_LEN, onion_key, KLEN);
  memcpy(onionskin_out + ONION_NTOR_ID_LEN + KLEN, eph->pub, KLEN);
  return st;
}

onion_ntor_client_t *
onion_ntor_client_create(const uint8_t id[ONION_NTOR_ID_LEN],
                         const uint8_t onion_key[KLEN],
                         uint8_t onionskin_out[ONION_NTOR_ONIONSKIN_LEN])
{
  curve25519_keypair_t eph;
  curve25519_keypair_generate(&eph);
  onion_ntor_client_t *st =
      onion_ntor_client_create_with_key_(id, onion_key, &eph, onionskin_out);
  curve25519_keypair_wipe(&eph);
  return st;
}

int
onion_ntor_client_finish(const onion_ntor_client_t *st,
                         const uint8_t reply[ONION_NTOR_REPLY_LEN],
                         uint8_t *keys_out, size_t keys_len)
{
  if (keys_len == 0 || keys_len > ONION_NTOR_KEYS_MAX) {
    log_warn("ntor: bad key material length %zu", keys_len);
    return -1;
  }
  const uint8_t *y_pub = reply;
  const uint8_t *auth = reply + KLEN;
  uint8_t dh_xy[KLEN], dh_xb[KLEN], my_auth[DIGEST_SHA256_LEN];
  int bad = 0;
  bad |= curve25519_dh(dh_xy, st->eph.secret, y_pub) < 0;
  bad |= curve25519_dh(dh_xb, st->eph.secret, st->onion_key) < 0;
  bad |= ntor_derive(dh_xy, dh_xb, st->id, st->onion_key, st->eph.pub, y_pub,
                     my_auth, keys_out, keys_len) < 0;
  bad |= pc_memneq(my_auth, auth, DIGEST_SHA256_LEN);
  pc_memwipe(dh_xy, sizeof(dh_xy));
  pc_memwipe(dh_xb, sizeof(dh_xb));
  pc_memwipe(my_auth, sizeof(my_auth));
  if (bad) {
    pc_memwipe(keys_out, keys_len);
    log_info("ntor: the relay's reply does not verify; failing the "
             "handshake");
    return -1;
  }
  return 0;
}

void
onion_ntor_client_free_(onion_ntor_client_t *st)
{
  if (!st)
    return;
  pc_memwipe(st, sizeof(*st));
  free(st);
}

int
onion_ntor_server_handshake_with_key_(
    const uint8_t onionskin[ONION_NTOR_ONIONSKIN_LEN],
    const uint8_t my_id[ONION_NTOR_ID_LEN],
    const curve25519_keypair_t *const *keys, size_t n_keys,
    const curve25519_keypair_t *eph, uint8_t reply_out[ONION_NTOR_REPLY_LEN],
    uint8_t *keys_out, size_t keys_len)
{
  const uint8_t *node_id = onionskin;
  const uint8_t *keyid = onionskin + ONION_NTOR_ID_LEN;
  const uint8_t *x_pub = onionskin + ONION_NTOR_ID_LEN + KLEN;
  const curve25519_keypair_t *kp = NULL;

  if (keys_len == 0 || keys_len > ONION_NTOR_KEYS_MAX) {
    log_warn("ntor: bad key material length %zu", keys_len);
    return -1;
  }
  if (pc_memneq(node_id, my_id, ONION_NTOR_ID_LEN)) {
    log_info("ntor: CREATE2 is for a different relay identity");
    return -1;
  }
  for (size_t i = 0; i < n_keys && !kp; i++) {
    if (keys[i] && !pc_memneq(keys[i]->pub, keyid, KLEN))
      kp = keys[i];
  }
  if (!kp) {
    log_info("ntor: CREATE2 names an onion key we do not have");
    return -1;
  }

  uint8_t dh_xy[KLEN], dh_xb[KLEN], auth[DIGEST_SHA256_LEN];
  int bad = 0;
  bad |= curve25519_dh(dh_xy, eph->secret, x_pub) < 0;
  bad |= curve25519_dh(dh_xb, kp->secret, x_pub) < 0;
  bad |= ntor_derive(dh_xy, dh_xb, my_id, kp->pub, x_pub, eph->pub, auth,
                     keys_out, keys_len) < 0;
  pc_memwipe(dh_xy, sizeof(dh_xy));
  pc_memwipe(dh_xb, sizeof(dh_xb));
  if (bad) {
    pc_memwipe(keys_out, keys_len);
    pc_memwipe(auth, sizeof(auth));
    log_info("ntor: degenerate client key in CREATE2");
    return -1;
  }
  memcpy(reply_out, eph->pub, KLEN);
  memcpy(reply_out + KLEN, auth, DIGEST_SHA256_LEN);
  pc_memwipe(auth, sizeof(auth));
  return 0;
}

int
onion_ntor_server_handshake(const uint8_t onionskin[ONION_NTOR_ONIONSKIN_LEN],
                            const uint8_t my_id[ONION_NTOR_ID_LEN],
                            const curve25519_keypair_t *const *keys,
                            size_t n_keys,
                            uint8_t reply_out[ONION_NTOR_REPLY_LEN],
                            uint8_t *keys_out, size_t keys_len)
{
  curve25519_keypair_t eph;
  curve25519_keypair_generate(&eph);
  int r = onion_ntor_server_handshake_with_key_(onionskin, my_id, keys,
                                                n_keys, &eph, reply_out,
                                                keys_out, keys_len);
  curve25519_keypair_wipe(&eph);
  return r;
}
