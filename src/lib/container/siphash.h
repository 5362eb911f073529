/* SPDX-License-Identifier: BSD-3-Clause */
/* siphash.h -- SipHash-2-4, a keyed 64-bit hash for untrusted keys.
 *
 * Hash tables whose keys come from the network (circuit IDs, relay
 * identities) must not let a peer choose keys that all land in one bucket.
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012) with a secret random key makes such collisions unpredictable.
 *
 * siphash_process_key() returns one process-wide key, drawn from
 * getrandom() (or /dev/urandom) the first time it is needed and never
 * changed afterwards; every hmap_t uses it.
 */
#ifndef PCTOR_LIB_CONTAINER_SIPHASH_H
#define PCTOR_LIB_CONTAINER_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* A 128-bit SipHash key as the two little-endian 64-bit words k0, k1. */
typedef struct siphash_key_t {
  uint64_t k0, k1;
} siphash_key_t;

/* Load a key from its 16-byte representation (k0 = bytes 0..7 read as a
 * little-endian integer, k1 = bytes 8..15), as in the SipHash paper. */
void siphash_key_from_bytes(siphash_key_t *key, const uint8_t bytes[16]);

/* SipHash-2-4 of len bytes at data under key. */
uint64_t siphash24(const siphash_key_t *key, const void *data, size_t len);

/* The process-wide random key (initialised on first call, thread-safe;
 * aborts if the system cannot supply random bytes). */
const siphash_key_t *siphash_process_key(void);

#endif
