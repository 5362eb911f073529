/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_fast.h -- the CREATE_FAST / CREATED_FAST handshake (tor-spec 5.1.5).
 *
 * CREATE_FAST needs no public-key work: the first hop already knows the
 * client through TLS. The client sends 20 random bytes X; the relay answers
 * with 20 random bytes Y and KH; both run KDF-TOR (tor-spec 5.2.1) on
 * K0 = X | Y. KDF-TOR's output is KH[20] | Df[20] | Db[20] | Kf[16] |
 * Kb[16] | ...; KH proves the relay saw X, and everything after KH is
 * returned as "key material" (the first 72 bytes of which feed
 * relay_crypto_new()).
 *
 * The client state is an opaque object holding X (secret), wiped on free.
 */
#ifndef PCTOR_CORE_CRYPTO_ONION_FAST_H
#define PCTOR_CORE_CRYPTO_ONION_FAST_H
#include <stddef.h>
#include <stdint.h>

#define ONION_FAST_HASH_LEN 20
/* CREATE_FAST payload: X. */
#define ONION_FAST_ONIONSKIN_LEN ONION_FAST_HASH_LEN
/* CREATED_FAST payload: Y | KH. */
#define ONION_FAST_REPLY_LEN (2 * ONION_FAST_HASH_LEN)
/* Most key material KDF-TOR can give after KH (255 SHA-1 blocks). */
#define ONION_FAST_KEYS_MAX (255 * 20 - ONION_FAST_HASH_LEN)

typedef struct onion_fast_client_t onion_fast_client_t;

/* Client: pick X at random, write it to onionskin_out (the CREATE_FAST
 * payload) and return the state needed by onion_fast_client_finish(). */
onion_fast_client_t *onion_fast_client_create(
    uint8_t onionskin_out[ONION_FAST_ONIONSKIN_LEN]);
/* Client: check the CREATED_FAST reply's KH and write keys_len bytes of key
 * material. Returns 0, or -1 (keys_out zeroed) if KH does not match or
 * keys_len is out of range. */
int onion_fast_client_finish(const onion_fast_client_t *st,
                             const uint8_t reply[ONION_FAST_REPLY_LEN],
                             uint8_t *keys_out, size_t keys_len);
void onion_fast_client_free_(onion_fast_client_t *st);
#define onion_fast_client_free(st) \
  do { onion_fast_client_free_(st); (st) = NULL; } while (0)

/* Relay: answer a CREATE_FAST payload; writes the CREATED_FAST payload and
 * keys_len bytes of key material. Returns 0, or -1 if keys_len is out of
 * range (1..ONION_FAST_KEYS_MAX). */
int onion_fast_server_handshake(
    const uint8_t onionskin[ONION_FAST_ONIONSKIN_LEN],
    uint8_t reply_out[ONION_FAST_REPLY_LEN], uint8_t *keys_out,
    size_t keys_len);

/* Deterministic variants for known-answer tests: X resp. Y are given. */
onion_fast_client_t *onion_fast_client_create_with_x_(
    const uint8_t x[ONION_FAST_HASH_LEN],
    uint8_t onionskin_out[ONION_FAST_ONIONSKIN_LEN]);
int onion_fast_server_handshake_with_y_(
    const uint8_t onionskin[ONION_FAST_ONIONSKIN_LEN],
    const uint8_t y[ONION_FAST_HASH_LEN],
    uint8_t reply_out[ONION_FAST_REPLY_LEN], uint8_t *keys_out,
    size_t keys_len);
#endif
