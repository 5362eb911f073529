/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_dgram_frame.c -- fuzz target: the plaintext of a datagram link
 * record (feature/dgram/dgram_frame), as an authenticated peer's DTLS
 * session delivers it, and the cheap ClientHello check every datagram from
 * an unknown source goes through (lib/tls/dtls_is_client_hello). Records
 * are walked and their bodies summed, so every byte a record claims is
 * read. Bound: nothing is allocated (the parser points into the input):
 * 0 bytes per input byte, 1 KiB slack.
 */
#include "fuzz.h"

#include "feature/dgram/dgram_frame.h"
#include "lib/tls/dtls.h"

static void
touch(void *arg, uint8_t type, const uint8_t *body, size_t len)
{
  unsigned *sum = arg;
  *sum += type;
  for (size_t i = 0; i < len; i++)
    *sum += body[i];
}

static void
run(const uint8_t *data, size_t len)
{
  unsigned sum = 0, n = 0;
  dgram_frame_status_t s = dgram_frame_parse(data, len, touch, &sum, &n);
  int hello = dtls_is_client_hello(data, len);
  fuzz_verbose("dgram_frame: %s, %u records, checksum %u, %s",
               dgram_frame_status_str(s), n, sum,
               hello ? "ClientHello-shaped" : "not a ClientHello");
}

const fuzz_target_t fuzz_target = {
  .name = "dgram_frame", .run = run, .amp_factor = 0, .amp_slack = 1024,
};
