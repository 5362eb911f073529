/* SPDX-License-Identifier: BSD-3-Clause */
/* kdf.c -- HKDF-SHA256 (RFC 5869) and KDF-TOR (tor-spec 5.2.1).
 *
 * Design: both are short loops over a hash, written directly on the
 * keyed HMAC-SHA256 state (crypt_hmac256_t) and the low-level SHA-1
 * state, so a derivation allocates nothing and keys the HMAC once:
 * HKDF-Expand copies the PRK-keyed state for every output block instead
 * of re-keying. Doing it here rather than through EVP_KDF also handles
 * the corner cases RFC 5869 allows (empty IKM, absent salt = HashLen
 * zeros, which HMAC treats like the empty key) uniformly. Intermediate
 * secrets are wiped before returning.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <string.h>

#include <openssl/sha.h>

#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/kdf.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

int
crypt_hkdf_sha256(uint8_t *out, size_t outlen, const uint8_t *ikm,
                  size_t ikmlen, const uint8_t *salt, size_t saltlen,
                  const uint8_t *info, size_t infolen)
{
  crypt_hmac256_t h, keyed;
  uint8_t prk[DIGEST_SHA256_LEN], t[DIGEST_SHA256_LEN];
  size_t tlen = 0;
  uint8_t counter = 0;

  if (outlen > 255 * DIGEST_SHA256_LEN) {
    log_warn("HKDF-SHA256 output of %zu bytes exceeds 255*32", outlen);
    return -1;
  }
  /* Extract: PRK = HMAC(salt, IKM). */
  crypt_hmac256_init_(&h, salt, salt ? saltlen : 0);
  crypt_hmac256_update_(&h, ikm, ikmlen);
  crypt_hmac256_final_(&h, prk);

  /* Expand: T(i) = HMAC(PRK, T(i-1) | info | i). */
  crypt_hmac256_init_(&keyed, prk, sizeof(prk));
  while (outlen > 0) {
    size_t n;
    counter++;
    h = keyed;
    crypt_hmac256_update_(&h, t, tlen);
    crypt_hmac256_update_(&h, info, infolen);
    crypt_hmac256_update_(&h, &counter, 1);
    crypt_hmac256_final_(&h, t);
    tlen = sizeof(t);
    n = outlen < tlen ? outlen : tlen;
    memcpy(out, t, n);
    out += n;
    outlen -= n;
  }
  pc_memwipe(&h, sizeof(h));
  pc_memwipe(&keyed, sizeof(keyed));
  pc_memwipe(prk, sizeof(prk));
  pc_memwipe(t, sizeof(t));
  return 0;
}

int
crypt_kdf_tor(uint8_t *out, size_t outlen, const uint8_t *k0, size_t k0len)
{
  SHA_CTX base, c;
  uint8_t block[DIGEST_SHA1_LEN];
  unsigned i = 0;

  if (outlen > 255 * DIGEST_SHA1_LEN) {
    log_warn("KDF-TOR output of %zu bytes exceeds 255*20", outlen);
    return -1;
  }
  SHA1_Init(&base);
  SHA1_Update(&base, k0, k0len);
  while (outlen > 0) {
    uint8_t ib = (uint8_t)i++;
    size_t n = outlen < sizeof(block) ? outlen : sizeof(block);
    c = base;
    SHA1_Update(&c, &ib, 1);
    SHA1_Final(block, &c);
    memcpy(out, block, n);
    out += n;
    outlen -= n;
  }
  pc_memwipe(&base, sizeof(base));
  pc_memwipe(&c, sizeof(c));
  pc_memwipe(block, sizeof(block));
  return 0;
}
