/* SPDX-License-Identifier: BSD-3-Clause */
/* digest.h -- hash functions: SHA-1, SHA-256, SHA3-256, SHAKE-256, HMAC.
 *
 * One-shot functions for whole buffers, and an incremental digest object
 * (crypt_digest_t) whose state can be copied: Tor's relay crypto keeps a
 * running SHA-1 over every relay cell and needs "digest so far" without
 * finalising the running state (crypt_digest_peek()).
 */
#ifndef PCTOR_LIB_CRYPT_DIGEST_H
#define PCTOR_LIB_CRYPT_DIGEST_H
#include <stddef.h>
#include <stdint.h>

#define DIGEST_SHA1_LEN 20
#define DIGEST_SHA256_LEN 32
#define DIGEST_SHA3_256_LEN 32

void crypt_sha1(uint8_t out[DIGEST_SHA1_LEN], const void *m, size_t n);
void crypt_sha256(uint8_t out[DIGEST_SHA256_LEN], const void *m, size_t n);
void crypt_sha3_256(uint8_t out[DIGEST_SHA3_256_LEN], const void *m,
                    size_t n);
/* SHAKE-256 of m, producing outlen bytes. */
void crypt_shake256(uint8_t *out, size_t outlen, const void *m, size_t n);
void crypt_hmac_sha256(uint8_t out[DIGEST_SHA256_LEN], const void *key,
                       size_t keylen, const void *m, size_t n);

/* A running SHA-1 that can be embedded in another struct (no allocation,
 * 96 bytes): relay crypto keeps one per hop and direction on every
 * circuit. Its contents are private to digest.c. Copying the struct copies
 * the state. Wipe it with crypt_sha1_state_wipe() when done (relay
 * digests are seeded with key material). */
typedef struct crypt_sha1_state_t {
  uint32_t opaque_[24];
} crypt_sha1_state_t;
void crypt_sha1_state_init(crypt_sha1_state_t *s);
void crypt_sha1_state_add(crypt_sha1_state_t *s, const void *m, size_t n);
/* The first outlen (<= DIGEST_SHA1_LEN) bytes of the digest of what has
 * been added so far; s stays usable. */
void crypt_sha1_state_peek(const crypt_sha1_state_t *s, uint8_t *out,
                           size_t outlen);
void crypt_sha1_state_wipe(crypt_sha1_state_t *s);

typedef enum {
  DIGEST_ALG_SHA1,
  DIGEST_ALG_SHA256,
  DIGEST_ALG_SHA3_256,
} digest_alg_t;

typedef struct crypt_digest_t crypt_digest_t;
/* New incremental digest; never returns NULL. */
crypt_digest_t *crypt_digest_new(digest_alg_t alg);
crypt_digest_t *crypt_digest_dup(const crypt_digest_t *d);
/* Make dst's state equal to src's (same algorithm). No allocation for
 * SHA-1 and SHA-256; for SHA3-256, OpenSSL 3.0 allocates inside the copy
 * (also in crypt_digest_peek()). */
void crypt_digest_assign(crypt_digest_t *dst, const crypt_digest_t *src);
void crypt_digest_add(crypt_digest_t *d, const void *m, size_t n);
/* Write the first outlen bytes (<= digest length) of the digest of what
 * has been added so far, leaving d usable for more crypt_digest_add(). */
void crypt_digest_peek(const crypt_digest_t *d, uint8_t *out, size_t outlen);
size_t crypt_digest_len(const crypt_digest_t *d);
void crypt_digest_free_(crypt_digest_t *d);
#define crypt_digest_free(d) do { crypt_digest_free_(d); (d) = NULL; } while (0)
#endif
