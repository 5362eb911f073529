/* SPDX-License-Identifier: BSD-3-Clause */
/* curve25519.h -- X25519 keys and Diffie-Hellman (RFC 7748), for ntor. */
#ifndef PCTOR_LIB_CRYPT_CURVE25519_H
#define PCTOR_LIB_CRYPT_CURVE25519_H
#include <stdint.h>
#define CURVE25519_KEY_LEN 32

typedef struct {
  uint8_t secret[CURVE25519_KEY_LEN];
  uint8_t pub[CURVE25519_KEY_LEN];
} curve25519_keypair_t;

/* Generate a fresh keypair. */
void curve25519_keypair_generate(curve25519_keypair_t *kp);
/* Derive pub from secret (secret is clamped by X25519 itself). */
int curve25519_public_from_secret(uint8_t pub[CURVE25519_KEY_LEN],
                                  const uint8_t secret[CURVE25519_KEY_LEN]);
/* out = X25519(secret, peer_pub). Returns -1 if the result is all zero
 * (a small-order peer key), which callers must treat as a handshake
 * failure. */
int curve25519_dh(uint8_t out[CURVE25519_KEY_LEN],
                  const uint8_t secret[CURVE25519_KEY_LEN],
                  const uint8_t peer_pub[CURVE25519_KEY_LEN]);
void curve25519_keypair_wipe(curve25519_keypair_t *kp);
#endif
