/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_ntor.h -- the ntor handshake, CREATE2 handshake type 2
 * (tor-spec 5.1.4, "ntor-curve25519-sha256-1"), with key expansion by
 * KDF-RFC5869 (tor-spec 5.2.2).
 *
 * Client -> relay (84 bytes):  NODEID[20] | KEYID = B[32] | X[32]
 * Relay -> client (64 bytes):  Y[32] | AUTH[32]
 *
 * NODEID is the relay's RSA identity digest, B its ntor onion key. A relay
 * keeps its current and previous ntor keys; the one whose public half equals
 * KEYID answers. The key material returned by both sides is the HKDF stream
 * Df[20] | Db[20] | Kf[16] | Kb[16] | KH[20] | ... truncated to the length
 * asked for (72 bytes for relay_crypto_new()).
 *
 * Every handshake fails (returns -1) on an all-zero X25519 output, a wrong
 * NODEID or unknown KEYID (relay), or a wrong AUTH (client; compared in
 * constant time). The client state holds the ephemeral secret x and is
 * wiped on free.
 */
#ifndef PCTOR_CORE_CRYPTO_ONION_NTOR_H
#define PCTOR_CORE_CRYPTO_ONION_NTOR_H
#include <stddef.h>
#include <stdint.h>

#include "lib/crypt/curve25519.h"

#define ONION_NTOR_HTYPE 2
#define ONION_NTOR_ID_LEN 20
#define ONION_NTOR_ONIONSKIN_LEN (ONION_NTOR_ID_LEN + 2 * CURVE25519_KEY_LEN)
#define ONION_NTOR_REPLY_LEN (CURVE25519_KEY_LEN + 32)
/* HKDF-SHA256 gives at most 255 blocks. */
#define ONION_NTOR_KEYS_MAX (255 * 32)

typedef struct onion_ntor_client_t onion_ntor_client_t;

/* Client: start a handshake with the relay whose RSA identity digest is id
 * and whose ntor onion key is onion_key. Writes the 84-byte CREATE2 HDATA.
 * Never returns NULL. */
onion_ntor_client_t *onion_ntor_client_create(
    const uint8_t id[ONION_NTOR_ID_LEN],
    const uint8_t onion_key[CURVE25519_KEY_LEN],
    uint8_t onionskin_out[ONION_NTOR_ONIONSKIN_LEN]);
/* Client: verify the relay's reply and derive keys_len (1..KEYS_MAX) bytes
 * of key material. Returns 0, or -1 (keys_out zeroed) on failure. */
int onion_ntor_client_finish(const onion_ntor_client_t *st,
                             const uint8_t reply[ONION_NTOR_REPLY_LEN],
                             uint8_t *keys_out, size_t keys_len);
void onion_ntor_client_free_(onion_ntor_client_t *st);
#define onion_ntor_client_free(st) \
  do { onion_ntor_client_free_(st); (st) = NULL; } while (0)

/* Relay: answer a client onionskin. my_id is our RSA identity digest; keys
 * are our ntor keypairs (current, previous; NULL entries are skipped). The
 * one matching KEYID is used. Writes the 64-byte CREATED2 HDATA and keys_len
 * bytes of key material. Returns 0, or -1 on failure (nothing usable
 * written). */
int onion_ntor_server_handshake(
    const uint8_t onionskin[ONION_NTOR_ONIONSKIN_LEN],
    const uint8_t my_id[ONION_NTOR_ID_LEN],
    const curve25519_keypair_t *const *keys, size_t n_keys,
    uint8_t reply_out[ONION_NTOR_REPLY_LEN], uint8_t *keys_out,
    size_t keys_len);

/* Deterministic variants for known-answer tests: the ephemeral keypair
 * (x,X) resp. (y,Y) is given instead of generated. */
onion_ntor_client_t *onion_ntor_client_create_with_key_(
    const uint8_t id[ONION_NTOR_ID_LEN],
    const uint8_t onion_key[CURVE25519_KEY_LEN],
    const curve25519_keypair_t *eph,
    uint8_t onionskin_out[ONION_NTOR_ONIONSKIN_LEN]);
int onion_ntor_server_handshake_with_key_(
    const uint8_t onionskin[ONION_NTOR_ONIONSKIN_LEN],
    const uint8_t my_id[ONION_NTOR_ID_LEN],
    const curve25519_keypair_t *const *keys, size_t n_keys,
    const curve25519_keypair_t *eph,
    uint8_t reply_out[ONION_NTOR_REPLY_LEN], uint8_t *keys_out,
    size_t keys_len);
#endif
