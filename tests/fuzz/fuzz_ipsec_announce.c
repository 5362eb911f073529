/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_ipsec_announce.c -- fuzz target: IPsec announcements, the payload
 * of the private link cell (command 240) relays brokering IPsec exchange
 * (feature/ipsec/ipsec_link). Parsed, then verified at a fixed time
 * (2023-11-14) as coming from the identity that signed its type-4
 * certificate (as if the link handshake had proved that identity), so
 * inputs with a valid chain reach the end of the verification.
 * Bound: parsing points into the input; the certificates are decoded into
 * torcert_t copies and their signatures checked through OpenSSL, whose
 * contexts take ~24 KB for a moment (found by this target, a 187-byte
 * input; regression/ipsec_announce/ed25519-verify-24KB): 64 KiB + 8 bytes
 * per input byte.
 */
#include "fuzz.h"

#include "core/proto/torcert.h"
#include "feature/ipsec/ipsec_link.h"
#include "lib/address/address.h"

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
  torcert_t *sc = NULL;
  if (torcert_parse(a.signing_cert, a.signing_cert_len, &sc) == 0) {
    if (sc->signing_key_included)
      memcpy(peer, sc->signing_key, sizeof(peer));
    torcert_free(sc);
  }
  time_t expires = 0;
  int r = ipsec_announce_verify(&a, peer, &a.orport, 1700000000, &expires,
                                &why);
  fuzz_verbose("ipsec_announce: %s", r == 0 ? "verified" : why);
}

const fuzz_target_t fuzz_target = {
  .name = "ipsec_announce", .run = run, .amp_factor = 8,
  .amp_slack = 64 * 1024,
};
