/* SPDX-License-Identifier: BSD-3-Clause */
/* crypt_internal.h -- private to src/lib/crypt: the OpenSSL algorithm
 * objects the crypt_*.c files share, error helpers, and the internal
 * HMAC-SHA256 state used by kdf.c.
 *
 * Fetching an EVP_MD/EVP_CIPHER by name walks OpenSSL's provider
 * tables and takes locks, so it is done once: crypt_algs_() returns a table
 * filled on first use (pthread_once) or by crypt_global_init(). The table is
 * never modified afterwards, so it is safe to read from any thread; it is
 * the kind of start-up registry DEVELOPERS.md allows as global state.
 * Nothing outside src/lib/crypt may include this header.
 */
#ifndef PCTOR_LIB_CRYPT_CRYPT_INTERNAL_H
#define PCTOR_LIB_CRYPT_CRYPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

/* SHA-1 and SHA-256 are absent: digest.c uses OpenSSL's low-level API for
 * them (see there). */
typedef struct {
  EVP_MD *sha3_256;
  EVP_MD *shake256;
  EVP_CIPHER *aes128_ctr;
  EVP_CIPHER *aes256_ctr;
} crypt_algs_t;

/* The shared algorithm table; aborts (log_err) if OpenSSL cannot provide
 * one of the algorithms, which only a broken installation does. */
const crypt_algs_t *crypt_algs_(void);

/* Log the OpenSSL error queue at warn severity, prefixed by what, and
 * clear it. */
void crypt_log_openssl_errors_(const char *what);

/* Log "what" at err severity with the OpenSSL error queue and abort: for
 * operations that cannot fail on valid input (a failure means a bug or a
 * broken library, and continuing could leak plaintext or reuse keys). */
void crypt_fatal_(const char *what) __attribute__((noreturn));

/* HMAC-SHA256 (RFC 2104) on the low-level SHA-256 state: keying
 * precomputes the inner and outer states, so a keyed context can be
 * copied and reused (HKDF-Expand) without reprocessing the key and
 * without heap allocation. Defined in digest.c. */
typedef struct {
  SHA256_CTX inner;
  SHA256_CTX outer;
} crypt_hmac256_t;
void crypt_hmac256_init_(crypt_hmac256_t *h, const void *key, size_t keylen);
void crypt_hmac256_update_(crypt_hmac256_t *h, const void *m, size_t n);
/* Writes 32 bytes; h must be re-initialised (or be a copy) before reuse. */
void crypt_hmac256_final_(crypt_hmac256_t *h, uint8_t out[32]);

/* pub = X25519(secret, 9): the public key of secret, through a table of
 * base-point multiples (curve25519_base.c); constant time in secret. */
#ifdef __SIZEOF_INT128__
void curve25519_base_mult_(uint8_t pub[32], const uint8_t secret[32]);
#endif

#endif
