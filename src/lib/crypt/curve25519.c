/* SPDX-License-Identifier: BSD-3-Clause */
/* curve25519.c -- X25519 key agreement (RFC 7748) for the ntor handshakes.
 *
 * Design: keys are plain 32-byte arrays in caller-owned structs; each
 * exchange wraps them in short-lived EVP_PKEYs and lets OpenSSL do the
 * scalar multiplication (its x86-64 assembler ladder is faster than
 * portable C). Public keys (secret * base point) do not go through
 * OpenSSL: curve25519_base.c computes them with a table, several times
 * faster than OpenSSL 3.0's key generation, which costs more than a whole
 * exchange (the ephemeral key of every ntor handshake; see there).
 *
 * Speed of the exchange, which runs twice per CREATE2 on the worker
 * threads: EVP_PKEY_new_raw_private_key() computes the key's public half,
 * a full scalar multiplication that X25519 derivation never uses, so the
 * private EVP_PKEY is built with EVP_PKEY_fromdata() and a placeholder
 * public value (the key object never leaves the function). Making the
 * EVP_PKEY_CTX for EVP_PKEY_fromdata() fetches the X25519 key management
 * by name (a provider table walk under a lock, strcmp's) every time, so
 * each thread keeps one such context (a pthread key; freed when the thread
 * exits), reused for its private and public keys; an EVP_PKEY_CTX must
 * not be shared between threads, and the worker threads run exchanges
 * concurrently. If a library version refuses any of this, the slow
 * constructors are used instead. Secrets are clamped when generated
 * (X25519 clamps anyway; storing the clamped form is conventional). An
 * all-zero shared secret means the peer sent a small-order point: OpenSSL
 * already refuses it, and we check again so the -1 contract holds
 * whatever the library does.
 */
#include <pthread.h>
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
#ifdef __SIZEOF_INT128__
  curve25519_base_mult_(pub, secret);
  return 0;
#else
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
#endif
}

/* The calling thread's X25519 key-management context (see the top of the
 * file), made on first use and freed when the thread exits; NULL if
 * OpenSSL cannot make one (the callers then fall back to the slow
 * constructors). */
static pthread_key_t fromdata_key;
static int fromdata_key_ok;
static pthread_once_t fromdata_once = PTHREAD_ONCE_INIT;

static void
fromdata_ctx_free(void *p)
{
  EVP_PKEY_CTX_free(p);
}

static void
fromdata_key_setup(void)
{
  fromdata_key_ok = pthread_key_create(&fromdata_key, fromdata_ctx_free) == 0;
}

static EVP_PKEY_CTX *
fromdata_ctx(void)
{
  EVP_PKEY_CTX *ctx;
  pthread_once(&fromdata_once, fromdata_key_setup);
  if (!fromdata_key_ok)
    return NULL;
  ctx = pthread_getspecific(fromdata_key);
  if (!ctx) {
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "X25519", NULL);
    if (ctx && pthread_setspecific(fromdata_key, ctx) != 0) {
      EVP_PKEY_CTX_free(ctx);
      ctx = NULL;
    }
  }
  return ctx;
}

/* An X25519 EVP_PKEY made with the thread's context: a public key (secret
 * NULL), or a private key for derivation only whose public half is a
 * placeholder, not computed (see the top of the file). */
static EVP_PKEY *
x25519_pkey(const uint8_t *secret, const uint8_t pub[CURVE25519_KEY_LEN])
{
  static const uint8_t placeholder_pub[CURVE25519_KEY_LEN] = { 9 };
  EVP_PKEY_CTX *ctx = fromdata_ctx();
  EVP_PKEY *k = NULL;
  OSSL_PARAM params[3], *pp = params;

  if (secret) {
    *pp++ = OSSL_PARAM_construct_octet_string(
      OSSL_PKEY_PARAM_PRIV_KEY, (void *)secret, CURVE25519_KEY_LEN);
    pub = placeholder_pub;
  }
  *pp++ = OSSL_PARAM_construct_octet_string(
    OSSL_PKEY_PARAM_PUB_KEY, (void *)pub, CURVE25519_KEY_LEN);
  *pp = OSSL_PARAM_construct_end();
  if (ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
      EVP_PKEY_fromdata(ctx, &k,
                        secret ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
                        params) == 1)
    return k;
  ERR_clear_error();
  EVP_PKEY_free(k);
  if (secret)
    return EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, secret,
                                        CURVE25519_KEY_LEN);
  return EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, pub,
                                     CURVE25519_KEY_LEN);
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

  mine = x25519_pkey(secret, NULL);
  peer = x25519_pkey(NULL, peer_pub);
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
