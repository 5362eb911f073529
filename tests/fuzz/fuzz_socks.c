/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_socks.c -- fuzz target: the SOCKS4/4a/5 handshake parser
 * (feature/client/socks_proto) as a SOCKSPort connection drives it.
 *
 * Input: byte 0 = flags for socks_parser_init and the size of the pieces
 * the bytes arrive in (1..32, bits 1-5); the rest is what the client
 * sends. Each SOCKS_SEND_REPLY reply is read as the connection would; the
 * parser must never consume more than it was given, and NEED_MORE must
 * mean it took every byte (its documented contract).
 * Bound: the parser is a fixed-size struct on the stack: 4 KiB + 1 byte
 * per input byte.
 */
#include "fuzz.h"

#include "feature/client/socks_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  socks_parser_t p;
  socks_parser_init(&p, data[0] & 1 ? SOCKS_F_PREFER_NO_AUTH : 0);
  size_t step = 1 + ((data[0] >> 1) & 31);
  data++;
  len--;
  while (len > 0) {
    size_t n = len < step ? len : step, used = 0;
    socks_status_t s = socks_parser_feed(&p, data, n, &used);
    if (used > n) {
      fprintf(stderr, "fuzz_socks: consumed %zu of %zu bytes\n", used, n);
      abort();
    }
    size_t rlen = 0;
    if (s == SOCKS_SEND_REPLY || s == SOCKS_FAILED)
      (void)socks_parser_reply(&p, &rlen);
    if (s == SOCKS_FAILED) {
      (void)socks_parser_errmsg(&p);
      break;
    }
    if (s == SOCKS_DONE) {
      const socks_request_t *r = socks_parser_request(&p);
      (void)socks_hostname_is_valid(r->address, strlen(r->address));
      break;
    }
    if (s == SOCKS_NEED_MORE && used != n) {
      fprintf(stderr, "fuzz_socks: NEED_MORE but only %zu of %zu bytes "
                      "consumed\n", used, n);
      abort();
    }
    data += used;
    len -= used;
  }
  socks_parser_wipe(&p);
}

const fuzz_target_t fuzz_target = {
  .name = "socks", .run = run, .amp_factor = 1, .amp_slack = 4096,
};
