/* SPDX-License-Identifier: BSD-3-Clause */
/* circbench_onion.c -- pctor-circbench --onionskins: how many CREATE2
 * handshakes per second a relay answers with 0 (inline in the event loop),
 * 1, 2, ... worker threads (NumCPUs), in one process and without TCP/TLS.
 *
 * A relay ntor key is generated; N client onionskins (real ntor or ntor v3
 * CREATE2 HDATA for that key, made with the client code) are prepared
 * before the clock starts; then all N are submitted at once to the worker
 * pool (core/or/cpuworker.c) on a socketless channel, and the event loop
 * runs until every answer came back. Each answer is checked: it must be a
 * successful handshake, and the first one is finished by the client (the
 * keys must agree). Prints per worker count:
 *   "onionskins htype <ntor|ntor3> workers <w> n <N> seconds <s> rate <r>"
 * Wall-clock time: on a shared machine, repeat and compare medians.
 */
#include "tools/circbench/circbench_onion.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/or/channel_internal.h"
#include "core/or/circuit.h"
#include "core/or/cpuworker.h"
#include "core/or/onion.h"
#include "core/or/relay.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/curve25519.h"
#include "lib/crypt/rand.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"

#define HDATA_MAX 512

static struct {
  evloop_t *loop;
  unsigned n, done, bad;
  uint8_t (*hdata)[HDATA_MAX];
  size_t *hlen;
  void *state0;
  uint16_t htype;
  int first_ok;
} O;

static double
now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
check_first(const cpuworker_result_t *res)
{
  if (res->circ_id != 1 || !O.state0)
    return;
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  onion_circ_params_t p;
  O.first_ok = onion_client_finish(O.htype, O.state0, res->reply, res->rlen,
                                   km, sizeof(km), 0, &p) == 0 &&
               memcmp(km, res->km, sizeof(km)) == 0;
  O.state0 = NULL;
}

static void
finish(channel_t *chan, const cpuworker_result_t *res)
{
  (void)chan;
  if (!res->ok)
    O.bad++;
  check_first(res);
  if (++O.done == O.n)
    evloop_exit(O.loop);
}

static void
expired(channel_t *chan, uint32_t circ_id)
{
  (void)chan;
  (void)circ_id;
  O.bad++;
  if (++O.done == O.n)
    evloop_exit(O.loop);
}

static int
run_one(const relay_keys_t *keys, unsigned workers)
{
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  memcpy(t.rsa_id, keys->rsa_id_digest, 20);
  memcpy(t.ntor_key, keys->ntor_current.pub, 32);
  t.handshake = O.htype;
  t.has_ed_id = 1;
  for (unsigned i = 0; i < O.n; i++) {
    void *st = NULL;
    if (onion_client_start(&t, O.hdata[i], HDATA_MAX, &O.hlen[i], &st) < 0) {
      fprintf(stderr, "pctor-circbench: onion_client_start failed\n");
      return -1;
    }
    if (i == 0)
      O.state0 = st;
    else
      onion_client_free(O.htype, st);
  }
  O.done = O.bad = 0;
  O.first_ok = 0;
  pc_addr_t a;
  pc_addr_parse_ip(&a, "127.0.0.2", 5000);
  channel_t *chan = channel_accept_socketless_for_testing(&a, NULL, NULL);
  channel_open_socketless_for_testing(chan);
  double t0 = now_s();
  if (workers == 0) {
    cpuworker_result_t res;
    for (unsigned i = 0; i < O.n; i++) {
      memset(&res, 0, sizeof(res));
      res.circ_id = i + 1;
      res.htype = O.htype;
      res.ok = onion_server_handshake(keys->onion, cc_params_current(), 0,
                                      O.htype, O.hdata[i], O.hlen[i],
                                      res.reply, sizeof(res.reply),
                                      &res.rlen, res.km, sizeof(res.km),
                                      &res.params, &res.why) == 0;
      finish(chan, &res);
    }
  } else {
    cpuworker_options_t o = {(int)workers, 10000000};
    if (cpuworker_init(O.loop, &o, finish, expired) < 0)
      return -1;
    for (unsigned i = 0; i < O.n; i++)
      if (cpuworker_submit(chan, keys->onion, i + 1, O.htype, O.hdata[i],
                           O.hlen[i]) < 0) {
        fprintf(stderr, "pctor-circbench: queue full at %u (at most "
                "10000 onionskins)\n", i);
        cpuworker_shutdown();
        return -1;
      }
    evloop_run(O.loop);
  }
  double dt = now_s() - t0;
  if (workers)
    cpuworker_shutdown();
  if (O.state0)
    onion_client_free(O.htype, O.state0);
  O.state0 = NULL;
  channel_close(chan, "done");
  printf("onionskins htype %s workers %u n %u seconds %.3f rate %.0f\n",
         O.htype == HTYPE_NTOR ? "ntor" : "ntor3", workers, O.n, dt,
         O.n / dt);
  fflush(stdout);
  if (O.bad || !O.first_ok) {
    fprintf(stderr, "pctor-circbench: %u failed handshakes, first %s\n",
            O.bad, O.first_ok ? "ok" : "NOT verified");
    return -1;
  }
  return 0;
}

int
circbench_onion_main(int argc, char **argv)
{
  int i = 1;
  O.htype = HTYPE_NTOR;
  O.n = 2000;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--ntor3")) {
      O.htype = HTYPE_NTOR_V3;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      O.n = (unsigned)strtoul(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: pctor-circbench --onionskins [--ntor3] "
              "[-n N] [WORKERS ...]\n");
      return 2;
    }
  }
  if (O.n < 1 || O.n > 10000) {
    fprintf(stderr, "pctor-circbench: -n must be 1..10000\n");
    return 2;
  }
  if (crypt_global_init() < 0)
    return 1;
  O.loop = evloop_new();
  channels_init(O.loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  relay_keys_t *keys = pc_calloc(1, sizeof(*keys));
  curve25519_keypair_generate(&keys->ntor_current);
  crypt_rand(keys->rsa_id_digest, 20);
  relay_keys_update_onion(keys);
  O.hdata = pc_calloc(O.n, HDATA_MAX);
  O.hlen = pc_calloc(O.n, sizeof(size_t));
  int rc = 0;
  if (i == argc) {
    static char *dflt[] = {"0", "1", "2"};
    argv = dflt;
    i = 0;
    argc = 3;
  }
  for (; i < argc && rc == 0; i++)
    rc = run_one(keys, (unsigned)strtoul(argv[i], NULL, 10));
  channels_shutdown();
  circuits_shutdown();
  evloop_free(O.loop);
  free(O.hdata);
  free(O.hlen);
  relay_keys_clear_onion(keys);
  pc_memwipe(keys, sizeof(*keys));
  free(keys);
  return rc ? 1 : 0;
}
