/* SPDX-License-Identifier: BSD-3-Clause */
/* s2k.h -- the iterated and salted S2K of RFC 2440 (section 3.6.1.3) with
 * SHA-1, as tor's control-port passwords use it (control-spec: a hashed
 * password is "16:" and the hex of an 8-byte salt, the count byte 0x60
 * and the 20-byte digest).
 *
 * The count byte c encodes (16 + (c & 15)) << ((c >> 4) + 6) octets of
 * salt || secret, repeated, that are hashed; 0x60 is 65536 octets. When
 * salt and secret together are longer than that, they are hashed once.
 */
#ifndef PCTOR_LIB_CRYPT_S2K_H
#define PCTOR_LIB_CRYPT_S2K_H

#include <stddef.h>
#include <stdint.h>

#define S2K_SALT_LEN 8
#define S2K_TOR_COUNT_BYTE 0x60

/* The digest of secret (len bytes) under salt and count byte c. */
void crypt_s2k_sha1(uint8_t out[20], const uint8_t salt[S2K_SALT_LEN],
                    uint8_t c, const void *secret, size_t len);

/* tor's --hash-password: "16:" + 58 upper-case hex digits, with salt
 * (NULL: a random one). Newly allocated. */
char *crypt_hash_password(const char *password,
                          const uint8_t salt[S2K_SALT_LEN]);

#endif
