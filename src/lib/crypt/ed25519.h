/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519.h -- Ed25519 signatures (RFC 8032), for Tor identity and
 * signing keys, certificates and link authentication.
 *
 * Secret keys are kept as the 32-byte RFC 8032 seed.
 */
#ifndef PCTOR_LIB_CRYPT_ED25519_H
#define PCTOR_LIB_CRYPT_ED25519_H
#include <stddef.h>
#include <stdint.h>
#define ED25519_PUBKEY_LEN 32
#define ED25519_SEED_LEN 32
#define ED25519_SIG_LEN 64

typedef struct {
  uint8_t seed[ED25519_SEED_LEN];
  uint8_t pub[ED25519_PUBKEY_LEN];
} ed25519_keypair_t;

void ed25519_keypair_generate(ed25519_keypair_t *kp);
/* Fill kp->pub from kp->seed. */
int ed25519_keypair_from_seed(ed25519_keypair_t *kp,
                              const uint8_t seed[ED25519_SEED_LEN]);
int ed25519_sign(uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                 size_t len, const ed25519_keypair_t *kp);
/* 0 if sig is a valid signature of msg by pub, -1 otherwise. */
int ed25519_verify(const uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                   size_t len, const uint8_t pub[ED25519_PUBKEY_LEN]);
void ed25519_keypair_wipe(ed25519_keypair_t *kp);
#endif
