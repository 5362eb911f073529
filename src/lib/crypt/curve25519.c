/* SPDX-License-Identifier: BSD-3-Clause */
/* curve25519.c -- X25519 key agreement (RFC 7748) for the ntor handshakes.
 *
 * Design: keys are plain 32-byte arrays in caller-owned structs; each
 * operation wraps them in short-lived EVP_PKEYs (EVP_PKEY_X25519 raw keys)
 * and lets OpenSSL do the scalar multiplication. This costs a few small
 * allocations per handshake, negligible next to the multiplication, and
 * keeps no OpenSSL state in the public struct.
 *
 * Speed: EVP_PKEY_new_raw_private_key() computes the key's public half, a
 * full scalar multiplication that X25519 derivation never uses; it would
 * double the cost of every ntor DH. curve25519_dh() therefore builds its
 * private EVP_PKEY with EVP_PKEY_fromdata() and a placeholder public value
 * (the key object never leaves the function), and falls back to the slow
 * constructor if a library version refuses that. Secrets are clamped when
 * generated (X25519 clamps anyway; storing the clamped form is
 * conventional). An all-zero shared secret means the peer sent a
 * small-order point: OpenSSL already refuses it, and we check again so
 * the -1 contract holds whatever the library does.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/curve25519.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

void
curve25519_keypair_generate(curve25519_keypair_t *kp)
{
  crypt_rand(kp->secret, sizeof(kp->secret));
  kp->secret[0] &= 248;
  kp->secret[31] &= 127;
  kp->secret[31] |= 64;
  if (curve25519_public_from_secret(kp->pub, kp->secret) < 0)
    crypt_fatal_("X25519 key generation");
}

int
curve25519_public_from_secret(uint8_t pub[CURVE25519_KEY_LEN],
                              const uint8_t secret[CURVE25519_KEY_LEN])
{
  size_t len = CURVE25519_KEY_LEN;
  int r = -1;
  EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, secret,
                                             CURVE25519_KEY_LEN);
  if (!k) {
    crypt_log_openssl_errors_("X25519 private key");
    return -1;
  }
  if (EVP_PKEY_get_raw_public_key(k, pub, &len) == 1 &&
      len == CURVE25519_KEY_LEN)
    r = 0;
  else
    crypt_log_openssl_errors_("X25519 public key");
  EVP_PKEY_free(k);
  return r;
}

/* An EVP_PKEY holding secret for derivation only: its public half is a
 * placeholder, not computed (see the top of the file). */
static EVP_PKEY *
x25519_private_for_dh(const uint8_t secret[CURVE25519_KEY_LEN])
{
  static const uint8_t placeholder_pub[CURVE25519_KEY_LEN] = { 9 };
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "X25519", NULL);
  EVP_PKEY *k = NULL;
  OSSL_PARAM params[3];

  params[0] = OSSL_PARAM_construct_octet_string(
    OSSL_PKEY_PARAM_PRIV_KEY, (void *)secret, CURVE25519_KEY_LEN);
  params[1] = OSSL_PARAM_construct_octet_string(
    OSSL_PKEY_PARAM_PUB_KEY, (void *)placeholder_pub, CURVE25519_KEY_LEN);
  params[2] = OSSL_PARAM_construct_end();
  if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
      EVP_PKEY_fromdata(ctx, &k, EVP_PKEY_KEYPAIR, params) != 1) {
    ERR_clear_error();
    EVP_PKEY_free(k);
    k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, secret,
                                     CURVE25519_KEY_LEN);
  }
  EVP_PKEY_CTX_free(ctx);
  return k;
}

int
curve25519_dh(uint8_t out[CURVE25519_KEY_LEN],
              const uint8_t secret[CURVE25519_KEY_LEN],
              const uint8_t peer_pub[CURVE25519_KEY_LEN])
{
  EVP_PKEY *mine = NULL, *peer = NULL;
  EVP_PKEY_CTX *ctx = NULL;
  size_t len = CURVE25519_KEY_LEN;
  int r = -1;

  mine = x25519_private_for_dh(secret);
  peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer_pub,
                                     CURVE25519_KEY_LEN);
  if (!mine || !peer)
    goto done;
  ctx = EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL);
  if (!ctx || EVP_PKEY_derive_init(ctx) != 1 ||
      EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) != 1)
    goto done;
  /* OpenSSL's X25519 derive fails on an all-zero result. */
  if (EVP_PKEY_derive(ctx, out, &len) != 1 || len != CURVE25519_KEY_LEN)
    goto done;
  r = pc_is_zero(out, CURVE25519_KEY_LEN) ? -1 : 0;
 done:
  if (r < 0) {
    memset(out, 0, CURVE25519_KEY_LEN);
    log_info("X25519 failed (small-order or invalid peer key?)");
    ERR_clear_error();
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(mine);
  EVP_PKEY_free(peer);
  return r;
}

void
curve25519_keypair_wipe(curve25519_keypair_t *kp)
{
  pc_memwipe(kp, sizeof(*kp));
}
