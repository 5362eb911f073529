/* SPDX-License-Identifier: BSD-3-Clause */
/* cipher.h -- AES in counter mode as a stream cipher.
 *
 * Tor's relay crypto is AES-128-CTR with a zero IV whose keystream runs on
 * across cells; crypt_aes_crypt() continues where the previous call left
 * off, for any length. Encryption and decryption are the same operation.
 * An AES-128 object on a CPU with AES-NI is one 224-byte allocation; the
 * others hold an OpenSSL EVP context as well (about 660 bytes more).
 */
#ifndef PCTOR_LIB_CRYPT_CIPHER_H
#define PCTOR_LIB_CRYPT_CIPHER_H
#include <stddef.h>
#include <stdint.h>

typedef struct crypt_aes_t crypt_aes_t;
/* key_bits is 128 or 256; iv is 16 bytes (NULL = all zero). Never NULL. */
crypt_aes_t *crypt_aes_new(const uint8_t *key, int key_bits,
                           const uint8_t *iv);
/* XOR the next n keystream bytes into in, writing out (may equal in). */
void crypt_aes_crypt(crypt_aes_t *c, uint8_t *out, const uint8_t *in,
                     size_t n);
void crypt_aes_free_(crypt_aes_t *c);
/* Tests: make crypt_aes_new() use OpenSSL's EVP implementation even where
 * the built-in AES-NI one would be used (AES-128 on an x86-64 CPU with the
 * AES instructions), to compare the two. Objects already made keep theirs. */
void crypt_aes_use_evp_for_testing(int on);
#define crypt_aes_free(c) do { crypt_aes_free_(c); (c) = NULL; } while (0)
#endif
