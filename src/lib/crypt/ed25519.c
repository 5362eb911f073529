/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519.c -- Ed25519 signatures (RFC 8032) through OpenSSL.
 *
 * Design: a keypair is the 32-byte seed plus the public key, in a
 * caller-owned struct. Signing rebuilds an EVP_PKEY from the seed alone
 * (EVP_PKEY_ED25519 raw private key), so OpenSSL re-derives the public key
 * itself: a struct whose pub field does not match its seed can never make
 * us sign with a mismatched public key (which would leak the secret
 * scalar). That costs one extra base-point multiplication per signature;
 * Tor signs rarely (certificates, link authentication), so safety wins.
 * Verification uses OpenSSL's checks (canonical S, point decoding) and
 * reports every failure the same way, -1.
 *
 * A keypair loaded from tor's key files has no seed, only the expanded
 * secret (tor stores that); OpenSSL cannot sign from it, so ed25519_sign()
 * hands such keys to ed25519_sign_expanded() (ed25519_ext.c), which also
 * re-derives the public key before signing.
 */
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/ed25519.h"
#include "lib/crypt/ed25519_ext.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

void
ed25519_keypair_generate(ed25519_keypair_t *kp)
{
  uint8_t seed[ED25519_SEED_LEN];
  crypt_rand(seed, sizeof(seed));
  if (ed25519_keypair_from_seed(kp, seed) < 0)
    crypt_fatal_("Ed25519 key generation");
  pc_memwipe(seed, sizeof(seed));
}

int
ed25519_keypair_from_seed(ed25519_keypair_t *kp,
                          const uint8_t seed[ED25519_SEED_LEN])
{
  size_t len = ED25519_PUBKEY_LEN;
  int r = -1;
  EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed,
                                             ED25519_SEED_LEN);
  if (!k) {
    crypt_log_openssl_errors_("Ed25519 private key");
    return -1;
  }
  if (seed != kp->seed)
    memmove(kp->seed, seed, ED25519_SEED_LEN);
  kp->expanded_only = 0;
  pc_memwipe(kp->expanded, sizeof(kp->expanded));
  if (EVP_PKEY_get_raw_public_key(k, kp->pub, &len) == 1 &&
      len == ED25519_PUBKEY_LEN)
    r = 0;
  else
    crypt_log_openssl_errors_("Ed25519 public key");
  EVP_PKEY_free(k);
  return r;
}

int
ed25519_keypair_from_expanded(ed25519_keypair_t *kp,
                              const uint8_t expanded[ED25519_EXPANDED_LEN])
{
  uint8_t esk[ED25519_EXPANDED_LEN];
  memcpy(esk, expanded, sizeof(esk));
  /* RFC 8032 clamping: low three bits clear, bit 255 clear, bit 254 set.
   * tor's files always hold clamped scalars; anything else is not a key
   * tor or we made. */
  int r = -1;
  if ((esk[0] & 7) == 0 && (esk[31] & 0xc0) == 0x40) {
    uint8_t pub[ED25519_PUBKEY_LEN];
    if (ed25519_public_from_expanded(pub, esk) == 0) {
      pc_memwipe(kp, sizeof(*kp));
      memcpy(kp->expanded, esk, sizeof(esk));
      memcpy(kp->pub, pub, sizeof(pub));
      kp->expanded_only = 1;
      r = 0;
    }
  }
  pc_memwipe(esk, sizeof(esk));
  return r;
}

int
ed25519_keypair_get_expanded(const ed25519_keypair_t *kp,
                             uint8_t out[ED25519_EXPANDED_LEN])
{
  if (kp->expanded_only) {
    memcpy(out, kp->expanded, ED25519_EXPANDED_LEN);
    return 0;
  }
  return ed25519_expand_seed(out, kp->seed);
}

int
ed25519_sign(uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg, size_t len,
             const ed25519_keypair_t *kp)
{
  EVP_PKEY *k;
  EVP_MD_CTX *ctx = NULL;
  size_t siglen = ED25519_SIG_LEN;
  int r = -1;

  if (kp->expanded_only)
    return ed25519_sign_expanded(sig, msg, len, kp->expanded, kp->pub);

  k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, kp->seed,
                                   ED25519_SEED_LEN);
  if (!k)
    goto done;
  ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) != 1)
    goto done;
  if (EVP_DigestSign(ctx, sig, &siglen, msg, len) != 1 ||
      siglen != ED25519_SIG_LEN)
    goto done;
  r = 0;
 done:
  if (r < 0)
    crypt_log_openssl_errors_("Ed25519 sign");
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(k);
  return r;
}

int
ed25519_verify(const uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
               size_t len, const uint8_t pub[ED25519_PUBKEY_LEN])
{
  EVP_PKEY *k;
  EVP_MD_CTX *ctx = NULL;
  int r = -1;

  k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub,
                                  ED25519_PUBKEY_LEN);
  if (!k)
    goto done;
  ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) != 1)
    goto done;
  if (EVP_DigestVerify(ctx, sig, ED25519_SIG_LEN, msg, len) == 1)
    r = 0;
 done:
  ERR_clear_error();
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(k);
  return r;
}

void
ed25519_keypair_wipe(ed25519_keypair_t *kp)
{
  pc_memwipe(kp, sizeof(*kp));
}
