/* SPDX-License-Identifier: BSD-3-Clause */
/* cipher.h -- AES in counter mode as a stream cipher.
 *
 * Tor's relay crypto is AES-128-CTR with a zero IV whose keystream runs on
 * across cells; crypt_aes_crypt() continues where the previous call left
 * off, for any length. Encryption and decryption are the same operation.
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
#define crypt_aes_free(c) do { crypt_aes_free_(c); (c) = NULL; } while (0)
#endif
