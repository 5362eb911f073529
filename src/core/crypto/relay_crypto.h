/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_crypto.h -- per-hop relay cell encryption and integrity, "tor1"
 * format (tor-spec 5.5 and 6.1).
 *
 * One relay_crypto_t is one hop's state, built from the 72 bytes of key
 * material a handshake produced: Df[20] | Db[20] | Kf[16] | Kb[16]. The
 * layout is the same on both ends of the hop and no role flag is needed:
 *
 *   forward  (origin -> relay):  AES-128-CTR keyed with Kf, running SHA-1
 *                                digest seeded with Df. The origin adds
 *                                the digest and encrypts; the relay
 *                                decrypts and checks.
 *   backward (relay -> origin):  AES-128-CTR keyed with Kb, running SHA-1
 *                                seeded with Db. The relay adds the digest
 *                                (when it originates the cell) and
 *                                encrypts; the origin decrypts and checks.
 *
 * Both ciphers use a zero IV and their keystream runs on across cells.
 * A relay payload is CELL_PAYLOAD_LEN (509) bytes: command[1] |
 * recognized[2] | stream_id[2] | digest[4] | length[2] | data | padding.
 * Its digest is the first 4 bytes of the running digest after adding the
 * whole payload with the digest field zeroed. A cell whose recognized
 * field is zero but whose digest does not match leaves the running digest
 * untouched (it is someone else's cell).
 *
 * All cell operations work in place and never allocate. For authenticated
 * SENDMEs (proposal 289) the full 20-byte running digest after the last
 * cell recognized or originated in each direction is kept:
 * relay_crypto_last_digest().
 */
#ifndef PCTOR_CORE_CRYPTO_RELAY_CRYPTO_H
#define PCTOR_CORE_CRYPTO_RELAY_CRYPTO_H
#include <stddef.h>
#include <stdint.h>

#include "core/proto/cell.h"
#include "core/proto/relay_msg.h" /* RELAY_OFF_* field offsets */
#include "lib/crypt/cipher.h"
#include "lib/crypt/digest.h"

#define RELAY_CRYPTO_KEY_MATERIAL_LEN 72
#define RELAY_CRYPTO_DIGEST_LEN 20

typedef enum {
  RELAY_DIR_FORWARD = 0,  /* towards the exit: Kf, Df */
  RELAY_DIR_BACKWARD = 1, /* towards the origin: Kb, Db */
} relay_dir_t;

/* One hop's state, indexed by relay_dir_t. Defined here so that relayed
 * circuits can embed it (relay_crypto_init/_clear); the fields are
 * private to relay_crypto.c. */
typedef struct relay_crypto_t {
  crypt_aes_t cipher_[2];
  crypt_sha1_state_t running_[2];
  uint8_t last_[2][RELAY_CRYPTO_DIGEST_LEN];
} relay_crypto_t;

/* New hop state from Df | Db | Kf | Kb. Never returns NULL. */
relay_crypto_t *relay_crypto_new(
    const uint8_t key_material[RELAY_CRYPTO_KEY_MATERIAL_LEN]);
void relay_crypto_free_(relay_crypto_t *rc);
/* The same for an embedded state: init sets it up (prior contents are
 * ignored), clear wipes it and frees what it holds (an all-zero state that
 * was never set up is fine too). */
void relay_crypto_init(relay_crypto_t *rc,
                       const uint8_t key_material[RELAY_CRYPTO_KEY_MATERIAL_LEN]);
void relay_crypto_clear(relay_crypto_t *rc);
#define relay_crypto_free(rc) \
  do { relay_crypto_free_(rc); (rc) = NULL; } while (0)

/* ---- Relay side (we are hop rc on someone else's circuit) ---- */

/* A forward cell arrived: remove our layer. Returns 1 if the cell is for
 * us (recognized == 0 and the digest checks; the forward running digest
 * then includes it), 0 if it must be passed on (running digest
 * unchanged). */
int relay_crypto_decrypt_forward(relay_crypto_t *rc,
                                 uint8_t payload[CELL_PAYLOAD_LEN]);
/* We originate a backward cell (the caller filled command, stream id,
 * length, data, padding): set recognized = 0, set the digest from the
 * backward running digest, encrypt. */
void relay_crypto_originate_backward(relay_crypto_t *rc,
                                     uint8_t payload[CELL_PAYLOAD_LEN]);
/* A backward cell from further along the circuit: add our layer. */
void relay_crypto_encrypt_backward(relay_crypto_t *rc,
                                   uint8_t payload[CELL_PAYLOAD_LEN]);

/* ---- Origin side (hops[0] is the first hop, hops[n_hops-1] the last) ---- */

/* Package a forward cell for hops[target] (0-based): set recognized = 0 and
 * the digest from that hop's forward running digest, then encrypt with
 * hops[target], ..., hops[0]. */
void relay_crypto_origin_encrypt(relay_crypto_t *const *hops, int target,
                                 uint8_t payload[CELL_PAYLOAD_LEN]);
/* A backward cell arrived from hops[0]: remove layers 0, 1, ... checking
 * after each whether the cell is recognized. Returns the 0-based index of
 * the hop that sent it, or -1 if no hop recognizes it. -1 is a protocol
 * error that must close the circuit: the payload is garbage, no running
 * digest changed, but every hop's backward keystream moved on by a cell. */
int relay_crypto_origin_decrypt(relay_crypto_t *const *hops, int n_hops,
                                uint8_t payload[CELL_PAYLOAD_LEN]);

/* The full running digest right after the last cell this hop recognized
 * or originated in direction dir (all zero before the first one). */
const uint8_t *relay_crypto_last_digest(const relay_crypto_t *rc,
                                        relay_dir_t dir);
#endif
