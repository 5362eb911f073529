/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_fast.c -- CREATE_FAST key agreement (tor-spec 5.1.5, 5.2.1).
 *
 * Both sides compute KDF-TOR(X | Y) into one temporary buffer holding
 * KH followed by the key material; the buffer is wiped and freed before
 * returning. KH is compared in constant time. The client state is just X.
 */
#include "core/crypto/onion_fast.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/kdf.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct onion_fast_client_t {
  uint8_t x[ONION_FAST_HASH_LEN];
};

/* KDF-TOR(X | Y) -> KH (into kh_out) and keys_len bytes of key material. */
static int
fast_derive(const uint8_t x[ONION_FAST_HASH_LEN],
            const uint8_t y[ONION_FAST_HASH_LEN],
            uint8_t kh_out[ONION_FAST_HASH_LEN], uint8_t *keys_out,
            size_t keys_len)
{
  if (keys_len == 0 || keys_len > ONION_FAST_KEYS_MAX) {
    log_warn("CREATE_FAST: bad key material length %zu", keys_len);
    return -1;
  }
  uint8_t k0[2 * ONION_FAST_HASH_LEN];
  memcpy(k0, x, ONION_FAST_HASH_LEN);
  memcpy(k0 + ONION_FAST_HASH_LEN, y, ONION_FAST_HASH_LEN);
  size_t total = ONION_FAST_HASH_LEN + keys_len;
  uint8_t *k = pc_malloc(total);
  int r = crypt_kdf_tor(k, total, k0, sizeof(k0));
  if (r == 0) {
    memcpy(kh_out, k, ONION_FAST_HASH_LEN);
    memcpy(keys_out, k + ONION_FAST_HASH_LEN, keys_len);
  }
  pc_memwipe(k, total);
  free(k);
  pc_memwipe(k0, sizeof(k0));
  return r < 0 ? -1 : 0;
}

onion_fast_client_t *
onion_fast_client_create_with_x_(const uint8_t x[ONION_FAST_HASH_LEN],
                                 uint8_t onionskin_out[ONION_FAST_ONIONSKIN_LEN])
{
  onion_fast_client_t *st = pc_zalloc(sizeof(*st));
  memcpy(st->x, x, ONION_FAST_HASH_LEN);
  memcpy(onionskin_out, st->x, ONION_FAST_HASH_LEN);
  return st;
}

onion_fast_client_t *
onion_fast_client_create(uint8_t onionskin_out[ONION_FAST_ONIONSKIN_LEN])
{
  uint8_t x[ONION_FAST_HASH_LEN];
  crypt_rand(x, sizeof(x));
  onion_fast_client_t *st = onion_fast_client_create_with_x_(x, onionskin_out);
  pc_memwipe(x, sizeof(x));
  return st;
}

int
onion_fast_client_finish(const onion_fast_client_t *st,
                         const uint8_t reply[ONION_FAST_REPLY_LEN],
                         uint8_t *keys_out, size_t keys_len)
{
  uint8_t kh[ONION_FAST_HASH_LEN];
  if (fast_derive(st->x, reply, kh, keys_out, keys_len) < 0)
    return -1;
  int bad = pc_memneq(kh, reply + ONION_FAST_HASH_LEN, ONION_FAST_HASH_LEN);
  pc_memwipe(kh, sizeof(kh));
  if (bad) {
    pc_memwipe(keys_out, keys_len);
    log_info("CREATED_FAST: KH does not match; failing the handshake");
    return -1;
  }
  return 0;
}

void
onion_fast_client_free_(onion_fast_client_t *st)
{
  if (!st)
    return;
  pc_memwipe(st, sizeof(*st));
  free(st);
}

int
onion_fast_server_handshake_with_y_(
    const uint8_t onionskin[ONION_FAST_ONIONSKIN_LEN],
    const uint8_t y[ONION_FAST_HASH_LEN],
    uint8_t reply_out[ONION_FAST_REPLY_LEN], uint8_t *keys_out,
    size_t keys_len)
{
  uint8_t kh[ONION_FAST_HASH_LEN];
  if (fast_derive(onionskin, y, kh, keys_out, keys_len) < 0)
    return -1;
  memcpy(reply_out, y, ONION_FAST_HASH_LEN);
  memcpy(reply_out + ONION_FAST_HASH_LEN, kh, ONION_FAST_HASH_LEN);
  pc_memwipe(kh, sizeof(kh));
  return 0;
}

int
onion_fast_server_handshake(const uint8_t onionskin[ONION_FAST_ONIONSKIN_LEN],
                            uint8_t reply_out[ONION_FAST_REPLY_LEN],
                            uint8_t *keys_out, size_t keys_len)
{
  uint8_t y[ONION_FAST_HASH_LEN];
  crypt_rand(y, sizeof(y));
  int r = onion_fast_server_handshake_with_y_(onionskin, y, reply_out,
                                              keys_out, keys_len);
  pc_memwipe(y, sizeof(y));
  return r;
}
