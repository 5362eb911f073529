/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_create2.c -- fuzz target: the relay side of CREATE2 (ntor and
 * ntor v3) with fixed onion and identity keys.
 *
 * Input, byte 0 selects:
 *   0xFF  the rest is the ntor v3 *client message* (the encrypted
 *         extensions, e.g. the congestion-control request): a client with
 *         a fixed ephemeral key wraps it in a valid onionskin for our fixed
 *         keys, so the fuzzer reaches the extension parser behind the MAC;
 *   else  the whole input is a CREATE2 cell payload (HTYPE, HLEN, HDATA),
 *         parsed with create2_parse() and handed to onion_server_handshake()
 *         exactly as command.c does (it fails on a wrong ID, KEYID or MAC).
 * Bound: an ntor v3 handshake holds ~18 KB of OpenSSL digest and cipher
 * contexts for a moment whatever the input: 64 KiB + 4 bytes per input
 * byte.
 */
#include "fuzz.h"

#include "core/crypto/onion_ntor_v3.h"
#include "core/or/onion.h"
#include "core/or/relay_keys.h"
#include "core/proto/cell.h"
#include "core/proto/create.h"

#include <string.h>

static relay_keys_t keys;
static curve25519_keypair_t client_eph;

static void
fixed_bytes(uint8_t *out, size_t n, uint8_t seed)
{
  for (size_t i = 0; i < n; i++)
    out[i] = (uint8_t)(seed + 7 * i);
}

static void
setup(void)
{
  uint8_t seed[ED25519_SEED_LEN];
  memset(&keys, 0, sizeof(keys));
  fixed_bytes(keys.ntor_current.secret, CURVE25519_KEY_LEN, 0x11);
  curve25519_public_from_secret(keys.ntor_current.pub,
                                keys.ntor_current.secret);
  fixed_bytes(keys.rsa_id_digest, sizeof(keys.rsa_id_digest), 0x22);
  fixed_bytes(seed, sizeof(seed), 0x33);
  ed25519_keypair_from_seed(&keys.ed_identity, seed);
  relay_keys_update_onion(&keys); /* kept for the process's life */
  fixed_bytes(client_eph.secret, CURVE25519_KEY_LEN, 0x44);
  curve25519_public_from_secret(client_eph.pub, client_eph.secret);
}

static void
server(uint16_t htype, const uint8_t *hdata, size_t hlen)
{
  uint8_t reply[CELL_PAYLOAD_LEN], keys_out[72];
  size_t reply_len = 0;
  onion_circ_params_t params;
  const char *why = NULL;
  int r = onion_server_handshake(keys.onion, cc_params_current(), 0, htype,
                                 hdata, hlen, reply,
                                 CREATED2_HDATA_MAX, &reply_len, keys_out,
                                 sizeof(keys_out), &params, &why);
  fuzz_verbose("create2: htype %u: %s", htype, r == 0 ? "answered" : why);
}

static void
run(const uint8_t *data, size_t len)
{
  if (len >= 1 && data[0] == 0xFF) {
    uint8_t skin[CREATE2_HDATA_MAX];
    size_t skin_len = 0;
    onion_ntor3_client_t *st = NULL;
    if (onion_ntor3_client_create_with_key_(
            keys.ed_identity.pub, keys.ntor_current.pub,
            (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION,
            ONION_NTOR3_CIRC_VERIFICATION_LEN, data + 1, len - 1,
            &client_eph, skin, sizeof(skin), &skin_len, &st) < 0)
      return;
    onion_ntor3_client_free(st);
    server(HTYPE_NTOR_V3, skin, skin_len);
    return;
  }
  if (len > CELL_PAYLOAD_LEN)
    return; /* a CREATE2 payload is one fixed cell's */
  uint8_t payload[CELL_PAYLOAD_LEN] = {0};
  memcpy(payload, data, len);
  create2_t c;
  if (create2_parse(&c, payload, CELL_PAYLOAD_LEN) < 0)
    return;
  server(c.htype, c.hdata, c.hlen);
}

const fuzz_target_t fuzz_target = {
  .name = "create2", .setup = setup, .run = run, .amp_factor = 4,
  .amp_slack = 64 * 1024,
};
