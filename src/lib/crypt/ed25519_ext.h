/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519_ext.h -- Ed25519 operations OpenSSL does not offer: signing
 * with an RFC 8032 "expanded" secret key, and Tor's conversion of a
 * curve25519 (X25519) key into an Ed25519 key, used for the descriptor's
 * ntor-onion-key-crosscert (dir-spec "ntor-onion-key-crosscert",
 * cert-spec / tor-spec "converting a curve25519 public key to an ed25519
 * public key").
 *
 * An expanded secret key is 64 bytes: bytes 0..31 are the little-endian
 * clamped scalar a, bytes 32..63 the nonce prefix used to derive r.  For
 * a key made from an RFC 8032 seed this is SHA-512(seed) with the first
 * half clamped.
 *
 * These routines are NOT constant time (they use OpenSSL BIGNUMs); the
 * scalar multiplications with a secret scalar are blinded (a random
 * multiple of the group order is added to the scalar each time), so their
 * running time does not follow the secret's bits. They exist for
 * signatures made a few times a day (the crosscert, and certificates and
 * descriptors signed with keys loaded from tor's expanded-key files).
 * Verification uses ed25519_verify() from ed25519.h.
 *
 * All functions return 0 on success and -1 on failure.
 */
#ifndef PCTOR_LIB_CRYPT_ED25519_EXT_H
#define PCTOR_LIB_CRYPT_ED25519_EXT_H
#include <stddef.h>
#include <stdint.h>
#include "lib/crypt/curve25519.h"
#include "lib/crypt/ed25519.h"

/* Sign msg with the expanded secret key; pub must be the matching public
 * key (as from ed25519_public_from_expanded()). */
int ed25519_sign_expanded(uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                          size_t len,
                          const uint8_t expanded_secret[ED25519_EXPANDED_LEN],
                          const uint8_t pub[ED25519_PUBKEY_LEN]);

/* pub = encode(a * B), a being the first half of the expanded key. */
int ed25519_public_from_expanded(uint8_t pub[ED25519_PUBKEY_LEN],
                                 const uint8_t expanded[ED25519_EXPANDED_LEN]);

/* Expand an RFC 8032 seed: SHA-512(seed), first half clamped. */
int ed25519_expand_seed(uint8_t expanded_out[ED25519_EXPANDED_LEN],
                        const uint8_t seed[ED25519_SEED_LEN]);

/* Convert a curve25519 keypair to an Ed25519 keypair as Tor does for the
 * ntor-onion-key crosscert.  expanded_out receives the expanded secret,
 * pub_out its Ed25519 public key, *signbit_out the sign bit (0 or 1) that
 * a verifier passes to ed25519_public_from_curve25519_public(). */
int ed25519_keypair_from_curve25519(uint8_t expanded_out[ED25519_EXPANDED_LEN],
                                    uint8_t pub_out[ED25519_PUBKEY_LEN],
                                    int *signbit_out,
                                    const curve25519_keypair_t *kp);

/* The birational map from a Montgomery u-coordinate to an Edwards point:
 * y = (u-1)/(u+1), with the sign of x given by signbit (0 or 1).
 * Fails if u == -1 (mod p) or signbit is not 0/1. */
int ed25519_public_from_curve25519_public(uint8_t ed_pub[ED25519_PUBKEY_LEN],
                                          const uint8_t x_pub[CURVE25519_KEY_LEN],
                                          int signbit);
#endif
