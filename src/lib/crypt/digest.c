/* SPDX-License-Identifier: BSD-3-Clause */
/* digest.c -- SHA-1, SHA-256, SHA3-256, SHAKE-256, HMAC-SHA256, and the
 * copyable incremental digest used by relay crypto.
 *
 * Design: the relay-cell hot path is "add 509 bytes, peek at the running
 * SHA-1" once per cell. In OpenSSL 3.0, EVP_MD_CTX_copy_ex() always frees
 * and re-duplicates the provider context, i.e. one heap allocation per
 * copy, and it is slower than a struct copy. So SHA-1 and SHA-256 use
 * OpenSSL's low-level SHA1_/SHA256_ functions on a state kept inside the
 * object: peek copies that plain struct to the stack and finalises the
 * copy, assign is a struct copy, and neither allocates. Those functions
 * are deprecated in OpenSSL 3 (not removed); the deprecation warnings are
 * silenced for this file only. SHA3-256 has no low-level API, so it keeps
 * an EVP_MD_CTX plus a preallocated scratch context for peek (OpenSSL 3.0
 * still allocates inside EVP_MD_CTX_copy_ex for it; SHA3 is not on the
 * per-cell path of ordinary circuits).
 *
 * HMAC-SHA256 is RFC 2104 over the same low-level SHA-256, with the keyed
 * inner/outer states precomputed (crypt_hmac256_t), so HKDF can reuse a
 * keyed state per block without allocation.
 *
 * crypt_sha1_state_t is the same low-level SHA-1 state in a public,
 * opaque struct of the same size, so that relay crypto can embed its four
 * running digests per circuit instead of allocating crypt_digest_t
 * objects (144 bytes of heap each with glibc).
 *
 * A digest object is not safe for concurrent use; peek on a SHA3 object
 * writes its scratch context even though the object is passed as const.
 * Digest states are wiped when freed: relay digests are seeded with key
 * material.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct crypt_digest_t {
  digest_alg_t alg;
  union {
    SHA_CTX sha1;
    SHA256_CTX sha256;
  } u;
  EVP_MD_CTX *ctx;     /* SHA3-256 only: the running state */
  EVP_MD_CTX *scratch; /* SHA3-256 only: target of peek's copy */
};

void
crypt_sha1(uint8_t out[DIGEST_SHA1_LEN], const void *m, size_t n)
{
  SHA_CTX c;
  SHA1_Init(&c);
  SHA1_Update(&c, m, n);
  SHA1_Final(out, &c);
  pc_memwipe(&c, sizeof(c));
}

void
crypt_sha256(uint8_t out[DIGEST_SHA256_LEN], const void *m, size_t n)
{
  SHA256_CTX c;
  SHA256_Init(&c);
  SHA256_Update(&c, m, n);
  SHA256_Final(out, &c);
  pc_memwipe(&c, sizeof(c));
}

void
crypt_sha3_256(uint8_t out[DIGEST_SHA3_256_LEN], const void *m, size_t n)
{
  unsigned int len = 0;
  if (EVP_Digest(m, n, out, &len, crypt_algs_()->sha3_256, NULL) != 1 ||
      len != DIGEST_SHA3_256_LEN)
    crypt_fatal_("SHA3-256");
}

void
crypt_shake256(uint8_t *out, size_t outlen, const void *m, size_t n)
{
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if (!c)
    crypt_fatal_("SHAKE-256 context");
  if (EVP_DigestInit_ex(c, crypt_algs_()->shake256, NULL) != 1 ||
      EVP_DigestUpdate(c, m, n) != 1 ||
      EVP_DigestFinalXOF(c, out, outlen) != 1)
    crypt_fatal_("SHAKE-256");
  EVP_MD_CTX_free(c);
}

/* ---- HMAC-SHA256 (RFC 2104) ---- */

#define SHA256_BLOCK 64

void
crypt_hmac256_init_(crypt_hmac256_t *h, const void *key, size_t keylen)
{
  uint8_t k[SHA256_BLOCK], pad[SHA256_BLOCK];
  memset(k, 0, sizeof(k));
  if (keylen > SHA256_BLOCK) {
    crypt_sha256(k, key, keylen);
  } else if (keylen > 0) {
    memcpy(k, key, keylen);
  }
  for (size_t i = 0; i < SHA256_BLOCK; i++)
    pad[i] = k[i] ^ 0x36;
  SHA256_Init(&h->inner);
  SHA256_Update(&h->inner, pad, SHA256_BLOCK);
  for (size_t i = 0; i < SHA256_BLOCK; i++)
    pad[i] = k[i] ^ 0x5c;
  SHA256_Init(&h->outer);
  SHA256_Update(&h->outer, pad, SHA256_BLOCK);
  pc_memwipe(k, sizeof(k));
  pc_memwipe(pad, sizeof(pad));
}

void
crypt_hmac256_update_(crypt_hmac256_t *h, const void *m, size_t n)
{
  SHA256_Update(&h->inner, m, n);
}

void
crypt_hmac256_final_(crypt_hmac256_t *h, uint8_t out[32])
{
  uint8_t ih[DIGEST_SHA256_LEN];
  SHA256_Final(ih, &h->inner);
  SHA256_Update(&h->outer, ih, sizeof(ih));
  SHA256_Final(out, &h->outer);
  pc_memwipe(ih, sizeof(ih));
}

void
crypt_hmac_sha256(uint8_t out[DIGEST_SHA256_LEN], const void *key,
                  size_t keylen, const void *m, size_t n)
{
  crypt_hmac256_t h;
  crypt_hmac256_init_(&h, key, keylen);
  crypt_hmac256_update_(&h, m, n);
  crypt_hmac256_final_(&h, out);
  pc_memwipe(&h, sizeof(h));
}

/* ---- the embeddable running SHA-1 ---- */

_Static_assert(sizeof(SHA_CTX) <= sizeof(crypt_sha1_state_t),
               "crypt_sha1_state_t is too small for SHA_CTX");
_Static_assert(_Alignof(SHA_CTX) <= _Alignof(crypt_sha1_state_t),
               "crypt_sha1_state_t is less aligned than SHA_CTX");

void
crypt_sha1_state_init(crypt_sha1_state_t *s)
{
  memset(s, 0, sizeof(*s));
  SHA1_Init((SHA_CTX *)s);
}

void
crypt_sha1_state_add(crypt_sha1_state_t *s, const void *m, size_t n)
{
  SHA1_Update((SHA_CTX *)s, m, n);
}

void
crypt_sha1_state_peek(const crypt_sha1_state_t *s, uint8_t *out,
                      size_t outlen)
{
  uint8_t full[DIGEST_SHA1_LEN];
  SHA_CTX tmp;
  if (outlen > DIGEST_SHA1_LEN) {
    log_err("peek of %zu bytes from a %d-byte digest", outlen,
            DIGEST_SHA1_LEN);
    abort();
  }
  memcpy(&tmp, s, sizeof(tmp));
  SHA1_Final(full, &tmp);
  memcpy(out, full, outlen);
  pc_memwipe(&tmp, sizeof(tmp));
  pc_memwipe(full, sizeof(full));
}

void
crypt_sha1_state_wipe(crypt_sha1_state_t *s)
{
  pc_memwipe(s, sizeof(*s));
}

/* ---- incremental digests ---- */

static void
sha3_contexts_new(crypt_digest_t *d)
{
  d->ctx = EVP_MD_CTX_new();
  d->scratch = EVP_MD_CTX_new();
  if (!d->ctx || !d->scratch)
    crypt_fatal_("digest context");
}

crypt_digest_t *
crypt_digest_new(digest_alg_t alg)
{
  crypt_digest_t *d = pc_zalloc(sizeof(*d));
  d->alg = alg;
  switch (alg) {
  case DIGEST_ALG_SHA1:
    SHA1_Init(&d->u.sha1);
    break;
  case DIGEST_ALG_SHA256:
    SHA256_Init(&d->u.sha256);
    break;
  case DIGEST_ALG_SHA3_256:
    sha3_contexts_new(d);
    if (EVP_DigestInit_ex(d->ctx, crypt_algs_()->sha3_256, NULL) != 1)
      crypt_fatal_("SHA3-256 init");
    break;
  default:
    log_err("unknown digest algorithm %d", (int)alg);
    abort();
  }
  return d;
}

crypt_digest_t *
crypt_digest_dup(const crypt_digest_t *src)
{
  crypt_digest_t *d = pc_zalloc(sizeof(*d));
  d->alg = src->alg;
  if (src->alg == DIGEST_ALG_SHA3_256) {
    sha3_contexts_new(d);
    if (EVP_MD_CTX_copy_ex(d->ctx, src->ctx) != 1)
      crypt_fatal_("SHA3-256 copy");
  } else {
    d->u = src->u;
  }
  return d;
}

void
crypt_digest_assign(crypt_digest_t *dst, const crypt_digest_t *src)
{
  if (dst->alg != src->alg) {
    log_err("assigning a %d digest to a %d digest", (int)src->alg,
            (int)dst->alg);
    abort();
  }
  if (dst == src)
    return;
  if (src->alg == DIGEST_ALG_SHA3_256) {
    if (EVP_MD_CTX_copy_ex(dst->ctx, src->ctx) != 1)
      crypt_fatal_("SHA3-256 copy");
  } else {
    dst->u = src->u;
  }
}

void
crypt_digest_add(crypt_digest_t *d, const void *m, size_t n)
{
  switch (d->alg) {
  case DIGEST_ALG_SHA1:
    SHA1_Update(&d->u.sha1, m, n);
    break;
  case DIGEST_ALG_SHA256:
    SHA256_Update(&d->u.sha256, m, n);
    break;
  case DIGEST_ALG_SHA3_256:
    if (EVP_DigestUpdate(d->ctx, m, n) != 1)
      crypt_fatal_("SHA3-256 update");
    break;
  }
}

void
crypt_digest_peek(const crypt_digest_t *d, uint8_t *out, size_t outlen)
{
  uint8_t full[DIGEST_SHA256_LEN]; /* the longest of the three */
  size_t len = crypt_digest_len(d);
  if (outlen > len) {
    log_err("peek of %zu bytes from a %zu-byte digest", outlen, len);
    abort();
  }
  switch (d->alg) {
  case DIGEST_ALG_SHA1: {
    SHA_CTX tmp = d->u.sha1;
    SHA1_Final(full, &tmp);
    pc_memwipe(&tmp, sizeof(tmp));
    break;
  }
  case DIGEST_ALG_SHA256: {
    SHA256_CTX tmp = d->u.sha256;
    SHA256_Final(full, &tmp);
    pc_memwipe(&tmp, sizeof(tmp));
    break;
  }
  case DIGEST_ALG_SHA3_256: {
    unsigned int got = 0;
    if (EVP_MD_CTX_copy_ex(d->scratch, d->ctx) != 1 ||
        EVP_DigestFinal_ex(d->scratch, full, &got) != 1 || got != len)
      crypt_fatal_("SHA3-256 peek");
    break;
  }
  }
  memcpy(out, full, outlen);
  pc_memwipe(full, sizeof(full));
}

size_t
crypt_digest_len(const crypt_digest_t *d)
{
  switch (d->alg) {
  case DIGEST_ALG_SHA1:
    return DIGEST_SHA1_LEN;
  case DIGEST_ALG_SHA256:
    return DIGEST_SHA256_LEN;
  case DIGEST_ALG_SHA3_256:
    return DIGEST_SHA3_256_LEN;
  }
  return 0;
}

void
crypt_digest_free_(crypt_digest_t *d)
{
  if (!d)
    return;
  EVP_MD_CTX_free(d->ctx);
  EVP_MD_CTX_free(d->scratch);
  pc_memwipe(d, sizeof(*d));
  free(d);
}
