/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_ipsec_announce.c -- fuzz target: IPsec announcements, the payload
 * of the private link cell (command 240) relays brokering IPsec exchange
 * (feature/ipsec/ipsec_link). Parsed, then verified against a fixed peer
 * identity and channel address (the certificate chain check runs on
 * whatever certificates the input carries; it fails on the signature).
 * Bound: parsing points into the input; the certificates are decoded into
 * torcert_t copies and their signatures checked through OpenSSL, whose
 * contexts take ~24 KB for a moment (found by this target, a 187-byte
 * input; regression/ipsec_announce/ed25519-verify-24KB): 64 KiB + 8 bytes
 * per input byte.
 */
#include "fuzz.h"

#include "feature/ipsec/ipsec_link.h"
#include "lib/net/address.h"

#include <string.h>

static void
run(const uint8_t *data, size_t len)
{
  ipsec_announce_t a;
  const char *why = NULL;
  if (ipsec_announce_parse(data, len, &a, &why) < 0)
    return;
  uint8_t peer[32];
  memset(peer, 0x5a, sizeof(peer));
  time_t expires = 0;
  (void)ipsec_announce_verify(&a, peer, &a.orport, 1700000000, &expires,
                              &why);
}

const fuzz_target_t fuzz_target = {
  .name = "ipsec_announce", .run = run, .amp_factor = 8,
  .amp_slack = 64 * 1024,
};
