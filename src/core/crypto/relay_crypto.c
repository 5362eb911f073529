/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_crypto.c -- tor1 relay cell crypto (tor-spec 5.5, 6.1).
 *
 * Design: each direction is {AES-128-CTR stream, running SHA-1, last full
 * digest}, the running SHA-1 embedded (crypt_sha1_state_t, no allocation).
 * Checking whether a cell is ours copies the running digest to the stack,
 * adds the payload with its digest field zeroed, and peeks; if the first
 * 4 bytes match, the copy is stored back as the new running state. If they
 * do not match the running digest was never touched. The digest field is
 * zeroed in place and restored afterwards, so the payload leaves exactly
 * as it was decrypted and one add covers all 509 bytes. The digest is
 * checked only when 'recognized' is zero (tor-spec 6.1), so cells passing
 * through cost one AES pass and a 2-byte test.
 *
 * Memory: a relay_crypto_t holds everything, no pointers (688 bytes
 * with the AES-NI ciphers); every relayed circuit embeds one
 * (or_circuit_t.crypto; doc/benchmarks.md, "Where an idle circuit's bytes
 * go").
 *
 * The 4-byte comparison is not constant-time: a relay learns nothing
 * secret from how fast it rejects a cell that is not for it, and the
 * digest prefix is public to anyone who can see the plaintext.
 */
#include "core/crypto/relay_crypto.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/digest.h"
#include "lib/malloc/alloc.h"

#define DF_OFF 0
#define DB_OFF 20
#define KF_OFF 40
#define KB_OFF 56
#define KEY_LEN 16
#define DIGEST_FIELD_LEN 4

static void
dir_init(relay_crypto_t *rc, int dir, const uint8_t *seed,
         const uint8_t *key)
{
  crypt_aes_init(&rc->cipher_[dir], key, 128, NULL);
  crypt_sha1_state_init(&rc->running_[dir]);
  crypt_sha1_state_add(&rc->running_[dir], seed, RELAY_CRYPTO_DIGEST_LEN);
  memset(rc->last_[dir], 0, RELAY_CRYPTO_DIGEST_LEN);
}

void
relay_crypto_init(relay_crypto_t *rc,
                  const uint8_t key_material[RELAY_CRYPTO_KEY_MATERIAL_LEN])
{
  dir_init(rc, RELAY_DIR_FORWARD, key_material + DF_OFF,
           key_material + KF_OFF);
  dir_init(rc, RELAY_DIR_BACKWARD, key_material + DB_OFF,
           key_material + KB_OFF);
}

relay_crypto_t *
relay_crypto_new(const uint8_t key_material[RELAY_CRYPTO_KEY_MATERIAL_LEN])
{
  relay_crypto_t *rc = pc_zalloc(sizeof(*rc));
  relay_crypto_init(rc, key_material);
  return rc;
}

void
relay_crypto_clear(relay_crypto_t *rc)
{
  crypt_aes_clear(&rc->cipher_[0]);
  crypt_aes_clear(&rc->cipher_[1]);
  pc_memwipe(rc, sizeof(*rc));
}

void
relay_crypto_free_(relay_crypto_t *rc)
{
  if (!rc)
    return;
  relay_crypto_clear(rc);
  free(rc);
}

/* Is this decrypted payload for hop rc, direction dir? If so, commit it to
 * the running digest and remember the full digest. */
static int
dir_check_recognized(relay_crypto_t *rc, int dir, uint8_t *payload)
{
  if (payload[RELAY_OFF_RECOGNIZED] | payload[RELAY_OFF_RECOGNIZED + 1])
    return 0;
  uint8_t received[DIGEST_FIELD_LEN], full[RELAY_CRYPTO_DIGEST_LEN];
  crypt_sha1_state_t next = rc->running_[dir];
  memcpy(received, payload + RELAY_OFF_DIGEST, DIGEST_FIELD_LEN);
  memset(payload + RELAY_OFF_DIGEST, 0, DIGEST_FIELD_LEN);
  crypt_sha1_state_add(&next, payload, CELL_PAYLOAD_LEN);
  memcpy(payload + RELAY_OFF_DIGEST, received, DIGEST_FIELD_LEN);
  crypt_sha1_state_peek(&next, full, sizeof(full));
  if (memcmp(full, received, DIGEST_FIELD_LEN) != 0) {
    crypt_sha1_state_wipe(&next);
    return 0;
  }
  rc->running_[dir] = next;
  crypt_sha1_state_wipe(&next);
  memcpy(rc->last_[dir], full, sizeof(full));
  return 1;
}

/* Set recognized = 0 and the digest field of a payload we originate. */
static void
dir_set_digest(relay_crypto_t *rc, int dir, uint8_t *payload)
{
  memset(payload + RELAY_OFF_RECOGNIZED, 0, 2);
  memset(payload + RELAY_OFF_DIGEST, 0, DIGEST_FIELD_LEN);
  crypt_sha1_state_add(&rc->running_[dir], payload, CELL_PAYLOAD_LEN);
  crypt_sha1_state_peek(&rc->running_[dir], rc->last_[dir],
                        RELAY_CRYPTO_DIGEST_LEN);
  memcpy(payload + RELAY_OFF_DIGEST, rc->last_[dir], DIGEST_FIELD_LEN);
}

static inline void
dir_crypt(relay_crypto_t *rc, int dir, uint8_t *payload)
{
  crypt_aes_crypt(&rc->cipher_[dir], payload, payload, CELL_PAYLOAD_LEN);
}

int
relay_crypto_decrypt_forward(relay_crypto_t *rc,
                             uint8_t payload[CELL_PAYLOAD_LEN])
{
  dir_crypt(rc, RELAY_DIR_FORWARD, payload);
  return dir_check_recognized(rc, RELAY_DIR_FORWARD, payload);
}

void
relay_crypto_originate_backward(relay_crypto_t *rc,
                                uint8_t payload[CELL_PAYLOAD_LEN])
{
  dir_set_digest(rc, RELAY_DIR_BACKWARD, payload);
  dir_crypt(rc, RELAY_DIR_BACKWARD, payload);
}

void
relay_crypto_encrypt_backward(relay_crypto_t *rc,
                              uint8_t payload[CELL_PAYLOAD_LEN])
{
  dir_crypt(rc, RELAY_DIR_BACKWARD, payload);
}

void
relay_crypto_origin_encrypt(relay_crypto_t *const *hops, int target,
                            uint8_t payload[CELL_PAYLOAD_LEN])
{
  dir_set_digest(hops[target], RELAY_DIR_FORWARD, payload);
  for (int i = target; i >= 0; i--)
    dir_crypt(hops[i], RELAY_DIR_FORWARD, payload);
}

int
relay_crypto_origin_decrypt(relay_crypto_t *const *hops, int n_hops,
                            uint8_t payload[CELL_PAYLOAD_LEN])
{
  for (int i = 0; i < n_hops; i++) {
    dir_crypt(hops[i], RELAY_DIR_BACKWARD, payload);
    if (dir_check_recognized(hops[i], RELAY_DIR_BACKWARD, payload))
      return i;
  }
  return -1;
}

const uint8_t *
relay_crypto_last_digest(const relay_crypto_t *rc, relay_dir_t dir)
{
  return rc->last_[dir == RELAY_DIR_BACKWARD];
}
