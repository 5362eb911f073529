/* SPDX-License-Identifier: BSD-3-Clause */
/* cipher.h -- AES in counter mode as a stream cipher.
 *
 * Tor's relay crypto is AES-128-CTR with a zero IV whose keystream runs on
 * across cells; crypt_aes_crypt() continues where the previous call left
 * off, for any length. Encryption and decryption are the same operation.
 * An AES-128 state on an x86-64 CPU with AES-NI is the 224-byte struct
 * alone; the others hold an OpenSSL EVP context as well (about 660 bytes
 * of heap more). The struct is defined here so that it can be embedded
 * (relay crypto keeps two per circuit, core/crypto/relay_crypto.h): use
 * crypt_aes_init() / crypt_aes_clear() on embedded ones, crypt_aes_new()
 * / crypt_aes_free() for separate objects. Its fields are private to
 * cipher.c.
 */
#ifndef PCTOR_LIB_CRYPT_CIPHER_H
#define PCTOR_LIB_CRYPT_CIPHER_H
#include <stddef.h>
#include <stdint.h>

/* The AES-NI implementation is built on x86-64 with GCC or clang, unless
 * PCTOR_NO_AESNI is defined (CPPFLAGS=-DPCTOR_NO_AESNI: EVP only, as on
 * other machines). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(PCTOR_NO_AESNI)
#define CRYPT_AES_HAVE_AESNI 1
#endif

struct evp_cipher_ctx_st; /* OpenSSL's EVP_CIPHER_CTX */
typedef struct crypt_aes_t {
#ifdef CRYPT_AES_HAVE_AESNI
  /* The built-in AES-NI implementation (AES-128 only). */
  _Alignas(16) uint8_t rk_[11][16]; /* expanded key */
  uint8_t ks_[16];          /* keystream of the last block */
  uint64_t ctr_hi_, ctr_lo_; /* next counter block, as two halves */
  uint8_t ks_used_;         /* bytes of ks_ already used (16: none left) */
#endif
  struct evp_cipher_ctx_st *ctx_; /* OpenSSL's, or NULL (AES-NI) */
} crypt_aes_t;

/* key_bits is 128 or 256; iv is 16 bytes (NULL = all zero). Never NULL. */
crypt_aes_t *crypt_aes_new(const uint8_t *key, int key_bits,
                           const uint8_t *iv);
/* The same for an embedded state (any prior contents are ignored). */
void crypt_aes_init(crypt_aes_t *c, const uint8_t *key, int key_bits,
                    const uint8_t *iv);
/* XOR the next n keystream bytes into in, writing out (may equal in). */
void crypt_aes_crypt(crypt_aes_t *c, uint8_t *out, const uint8_t *in,
                     size_t n);
/* Wipe an embedded state and free what it holds (an all-zero state, never
 * initialised, is fine too). */
void crypt_aes_clear(crypt_aes_t *c);
void crypt_aes_free_(crypt_aes_t *c);
/* Tests: make crypt_aes_new() use OpenSSL's EVP implementation even where
 * the built-in AES-NI one would be used (AES-128 on an x86-64 CPU with the
 * AES instructions), to compare the two. Objects already made keep theirs. */
void crypt_aes_use_evp_for_testing(int on);
/* Which implementation c uses: "AES-NI" or "OpenSSL EVP" (benchmarks). */
const char *crypt_aes_impl_name(const crypt_aes_t *c);
#define crypt_aes_free(c) do { crypt_aes_free_(c); (c) = NULL; } while (0)
#endif
