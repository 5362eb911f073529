/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519.h -- Ed25519 signatures (RFC 8032), for Tor identity and
 * signing keys, certificates and link authentication.
 *
 * Secret keys are kept as the 32-byte RFC 8032 seed, or, for keys that
 * exist only in "expanded" form (tor's key files store SHA-512(seed) with
 * its first half clamped, and the seed cannot be recovered from it), as
 * that 64-byte expanded key. ed25519_sign() signs with either: through
 * OpenSSL from a seed, through ed25519_ext.c from an expanded key (slower,
 * scalar-blinded; fine for certificates and descriptors, not for a hot
 * path).
 */
#ifndef PCTOR_LIB_CRYPT_ED25519_H
#define PCTOR_LIB_CRYPT_ED25519_H
#include <stddef.h>
#include <stdint.h>
#define ED25519_PUBKEY_LEN 32
#define ED25519_SEED_LEN 32
#define ED25519_SIG_LEN 64
#define ED25519_EXPANDED_LEN 64

typedef struct {
  uint8_t seed[ED25519_SEED_LEN];   /* unused (zero) when expanded_only */
  uint8_t pub[ED25519_PUBKEY_LEN];
  /* Set for keys known only in expanded form: then expanded[] holds the
   * clamped scalar and the nonce prefix, and seed[] is all zero. A zeroed
   * struct is a seed keypair, so older code keeps working unchanged. */
  int expanded_only;
  uint8_t expanded[ED25519_EXPANDED_LEN];
} ed25519_keypair_t;

void ed25519_keypair_generate(ed25519_keypair_t *kp);
/* Fill kp->pub from kp->seed. */
int ed25519_keypair_from_seed(ed25519_keypair_t *kp,
                              const uint8_t seed[ED25519_SEED_LEN]);
/* Fill kp from an expanded secret key (kp->pub derived from it). Returns
 * 0, or -1 if the key is unusable (its scalar is not clamped as RFC 8032
 * makes it, or the arithmetic failed). */
int ed25519_keypair_from_expanded(ed25519_keypair_t *kp,
                                  const uint8_t expanded[ED25519_EXPANDED_LEN]);
/* The expanded secret key of kp, whichever form kp holds. 0 or -1. */
int ed25519_keypair_get_expanded(const ed25519_keypair_t *kp,
                                 uint8_t out[ED25519_EXPANDED_LEN]);
int ed25519_sign(uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                 size_t len, const ed25519_keypair_t *kp);
/* 0 if sig is a valid signature of msg by pub, -1 otherwise. */
int ed25519_verify(const uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                   size_t len, const uint8_t pub[ED25519_PUBKEY_LEN]);
void ed25519_keypair_wipe(ed25519_keypair_t *kp);
#endif
