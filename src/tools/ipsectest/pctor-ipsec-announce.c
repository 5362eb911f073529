/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-ipsec-announce.c -- connect to a relay as a relay and send it one
 * IPsec announcement (feature/ipsec/ipsec_link.h), genuine or forged.
 *
 * For tests/integration/ipsec-pctcp.sh: a relay must refuse an IKE key
 * that the identity proved by the link handshake did not certify. This
 * tool is that misbehaving peer. It uses the relay keys in --datadir
 * (created if missing), links to --target with a full relay handshake
 * (CERTS + AUTHENTICATE, so the target knows our Ed25519 identity), sends
 * one announcement and keeps the link open for --wait milliseconds so the
 * target reads it before the connection closes.
 *
 *   pctor-ipsec-announce --datadir DIR --target ADDR:PORT --orport ADDR:PORT
 *                        [--case valid|other-key|other-chain]
 *                        [--other DATADIR] [--wait MS]
 *
 *   valid        our own chain: identity -> signing key -> our IKE key
 *   other-key    our own (valid) certificates, but the IKE_KEY field holds
 *                another relay's IKE key (--other's keys/ike_ed25519_key)
 *   other-chain  another relay's type-4 certificate (--other's keys) in
 *                front of an IKE certificate signed by our signing key
 *
 * --orport is the ORPort address we announce; it must be the address the
 * target sees us connect from, or the target refuses for that reason
 * instead. Prints our Ed25519 identity (base64, as relays log it) and
 * "sent"; exits 0 once sent, 1 on failure, 2 on usage errors.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/proto/cell.h"
#include "feature/ipsec/ike_key.h"
#include "feature/ipsec/ipsec_link.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/ed25519_pem.h"
#include "lib/encoding/base64.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "tools/common/toolargs.h"

static struct {
  evloop_t *loop;
  relay_keys_t *keys;
  ike_key_t *ike;
  uint8_t other_ike[32];
  relay_keys_t *other;
  const char *kase;
  pc_addr_t orport;
  unsigned wait_ms;
  evloop_timer_t *done_timer;
  int sent;
} T;

static void
usage(void)
{
  fprintf(stderr,
          "usage: pctor-ipsec-announce --datadir DIR --target ADDR:PORT\n"
          "         --orport ADDR:PORT [--case valid|other-key|other-chain]\n"
          "         [--other DATADIR] [--wait MS]\n");
  exit(2);
}

static void
done_cb(void *arg)
{
  evloop_exit(T.loop);
}

static void
on_open(channel_t *chan, void *arg)
{
  if (T.sent)
    return;
  if (!channel_is_authenticated_relay(chan)) {
    fprintf(stderr, "pctor-ipsec-announce: the target is not a relay\n");
    evloop_exit(T.loop);
    return;
  }
  ipsec_announce_t a;
  memset(&a, 0, sizeof(a));
  a.version = IPSEC_ANNOUNCE_VERSION;
  a.flags = IPSEC_ANN_OFFER;
  a.generation = 1;
  a.orport = T.orport;
  memcpy(a.ike_key, ike_key_public(T.ike), 32);
  if (!strcmp(T.kase, "other-key"))
    memcpy(a.ike_key, T.other_ike, 32);
  torcert_t *ic = ike_cert_create(&T.keys->ed_signing, ike_key_public(T.ike),
                                  time(NULL) + 86400);
  a.ike_cert = ic->encoded;
  a.ike_cert_len = ic->encoded_len;
  const relay_keys_t *chain = !strcmp(T.kase, "other-chain") ? T.other : T.keys;
  a.signing_cert = chain->ed_signing_cert;
  a.signing_cert_len = chain->ed_signing_cert_len;
  uint8_t buf[IPSEC_ANNOUNCE_MAX_LEN];
  size_t n = ipsec_announce_encode(&a, buf, sizeof(buf));
  torcert_free(ic);
  if (!n) {
    fprintf(stderr, "pctor-ipsec-announce: cannot encode\n");
    evloop_exit(T.loop);
    return;
  }
  var_cell_t *vc = var_cell_new((uint16_t)n);
  vc->command = IPSEC_LINK_CELL_COMMAND;
  memcpy(vc->payload, buf, n);
  channel_send_var_cell(chan, vc);
  var_cell_free(vc);
  T.sent = 1;
  printf("sent %s announcement (%zu bytes) on %s\n", T.kase, n,
         channel_describe(chan));
  fflush(stdout);
  evloop_timer_schedule(T.done_timer, (uint64_t)T.wait_ms * 1000);
}

static void
timeout_cb(void *arg)
{
  fprintf(stderr, "pctor-ipsec-announce: no link to the target in time\n");
  evloop_exit(T.loop);
}

static relay_keys_t *
load_keys(const char *dir)
{
  char *err = NULL;
  relay_keys_t *k = router_keys_load_or_create(dir, NULL, time(NULL), &err);
  if (!k) {
    fprintf(stderr, "pctor-ipsec-announce: %s: %s\n", dir,
            err ? err : "cannot load keys");
    free(err);
    exit(1);
  }
  return k;
}

int
main(int argc, char **argv)
{
  const char *datadir = NULL, *target = NULL, *orport = NULL, *other = NULL;
  T.kase = "valid";
  T.wait_ms = 1000;
  const toolarg_t opts[] = {
    {"--datadir", TOOLARG_STR, &datadir},
    {"--target", TOOLARG_STR, &target},
    {"--orport", TOOLARG_STR, &orport},
    {"--case", TOOLARG_STR, &T.kase},
    {"--other", TOOLARG_STR, &other},
    {"--wait", TOOLARG_UINT, &T.wait_ms},
    {NULL, TOOLARG_STR, NULL},
  };
  if (toolargs_parse(argc, argv, opts) < 0)
    usage();
  pc_addr_t taddr;
  if (!datadir || !target || !orport || pc_addr_parse(&taddr, target) < 0 ||
      !taddr.port || pc_addr_parse(&T.orport, orport) < 0 || !T.orport.port)
    usage();
  if (strcmp(T.kase, "valid") && strcmp(T.kase, "other-key") &&
      strcmp(T.kase, "other-chain"))
    usage();
  if (strcmp(T.kase, "valid") && !other)
    usage();
  signal(SIGPIPE, SIG_IGN);
  if (crypt_global_init() < 0)
    return 1;
  char *err = NULL;
  if (log_parse_destination("warn stderr", &err) < 0)
    free(err);
  T.keys = load_keys(datadir);
  T.ike = ike_key_load_or_create(datadir, &err);
  if (!T.ike) {
    fprintf(stderr, "pctor-ipsec-announce: %s\n", err ? err : "IKE key");
    return 1;
  }
  if (other) {
    T.other = load_keys(other);
    ike_key_t *oik = ike_key_load_or_create(other, &err);
    if (!oik) {
      fprintf(stderr, "pctor-ipsec-announce: %s\n", err ? err : "IKE key");
      return 1;
    }
    memcpy(T.other_ike, ike_key_public(oik), 32);
    ike_key_free(oik);
  }
  char b64[48];
  base64_encode(b64, sizeof(b64), T.keys->ed_identity.pub, 32, BASE64_NOPAD);
  printf("identity $%s\n", b64);
  fflush(stdout);

  T.loop = evloop_new();
  channels_init(T.loop, T.keys);
  circuits_init();
  channel_add_open_observer(on_open, NULL);
  T.done_timer = evloop_timer_new(T.loop, done_cb, NULL);
  evloop_timer_t *to = evloop_timer_new(T.loop, timeout_cb, NULL);
  evloop_timer_schedule(to, 15 * 1000000ULL);
  if (!channel_connect(&taddr, NULL, NULL)) {
    fprintf(stderr, "pctor-ipsec-announce: cannot connect\n");
    return 1;
  }
  evloop_run(T.loop);
  int ok = T.sent;
  evloop_timer_free(to);
  evloop_timer_free(T.done_timer);
  channels_shutdown();
  circuits_shutdown();
  evloop_free(T.loop);
  ike_key_free(T.ike);
  router_keys_free(T.keys);
  router_keys_free(T.other);
  return ok ? 0 : 1;
}
