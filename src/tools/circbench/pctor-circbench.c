/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-circbench.c -- build many circuits through the same relays at
 * once, then push cells through all of them: the client side of
 * scripts/bench-pctcp (thousands of simultaneous circuits between two
 * relays, with and without PerCircuitTCP).
 *
 * Phases, each announced by one line on stdout so that a script can
 * sample the relays (descriptors, memory, CPU) in between:
 *   "built N failed F seconds S rate R median_ms M p90_ms P"
 *       after every circuit finished building (at most --parallel at a
 *       time); then it waits --pause seconds;
 *   "dropped CELLS seconds S"
 *       after --drop-cells rounds of one RELAY_DROP cell to the last hop
 *       of every circuit (a round every --round-ms), waiting until the
 *       client's channel has written them; then it waits --hold seconds,
 *       closes everything and exits 0 (1 if nothing was built).
 *
 * "pctor-circbench --churn [--shared] [N ...]" is a different benchmark,
 * in-process and without relays: the relay-side cost of opening and
 * closing N circuits (circbench_churn.c). "pctor-circbench --onionskins
 * [--ntor3] [-n N] [WORKERS ...]" measures the CREATE2 handshake rate with
 * 0 (inline), 1, 2 ... worker threads (circbench_onion.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/crypt/crypt_init.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/proto/create.h"
#include "core/proto/relay_msg.h"
#include "feature/client/circbuild.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "tools/circbench/circbench_churn.h"
#include "tools/circbench/circbench_onion.h"
#include "tools/common/hopspec.h"

static struct {
  evloop_t *loop;
  extend_target_t hops[CIRCUIT_MAX_HOPS];
  int n_hops;
  unsigned n, parallel, next, inflight, built, failed;
  circbuild_t **cbs;
  int *ok;
  uint64_t *build_us;
  uint64_t t0;
  unsigned drop_rounds, round;
  unsigned round_ms;
  double pause_s, hold_s;
  evloop_timer_t *timer;
  uint64_t dropped;
  uint64_t drop_t0;
} B;

static void start_more(void);
static void phase_drop(void *arg);

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void
all_built(void)
{
  double secs = (evloop_now_us(B.loop) - B.t0) / 1e6;
  uint64_t *t = pc_calloc(B.built ? B.built : 1, sizeof(*t));
  unsigned k = 0;
  for (unsigned i = 0; i < B.n; i++)
    if (B.ok[i] == 1)
      t[k++] = B.build_us[i];
  qsort(t, k, sizeof(*t), cmp_u64);
  printf("built %u failed %u seconds %.2f rate %.1f median_ms %.1f "
         "p90_ms %.1f\n",
         B.built, B.failed, secs, secs > 0 ? B.built / secs : 0,
         k ? t[k / 2] / 1000.0 : 0, k ? t[(k * 9) / 10] / 1000.0 : 0);
  fflush(stdout);
  free(t);
  if (!B.built) {
    evloop_exit(B.loop);
    return;
  }
  evloop_timer_schedule(B.timer, (uint64_t)(B.pause_s * 1e6));
}

static void
built_cb(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  (void)circ;
  unsigned i = (unsigned)(uintptr_t)arg;
  B.ok[i] = 1;
  B.build_us[i] = circbuild_build_time_us(cb);
  B.built++;
  B.inflight--;
  start_more();
}

static void
closed_cb(circbuild_t *cb, int reason, const char *why, void *arg)
{
  (void)cb;
  unsigned i = (unsigned)(uintptr_t)arg;
  if (B.ok[i] == 1) {
    B.ok[i] = 2; /* closed after it was built */
    return;
  }
  if (B.ok[i] == 0) {
    if (B.failed < 5)
      fprintf(stderr, "pctor-circbench: circuit %u failed: %s (%d)\n", i,
              why ? why : "?", reason);
    B.ok[i] = -1;
    B.failed++;
    B.inflight--;
    start_more();
  }
}

static void
start_more(void)
{
  static const circbuild_cbs_t cbs = {built_cb, closed_cb, NULL};
  while (B.next < B.n && B.inflight < B.parallel) {
    unsigned i = B.next++;
    B.inflight++;
    B.cbs[i] = circbuild_start(B.hops, B.n_hops, &cbs, (void *)(uintptr_t)i);
    if (!B.cbs[i]) {
      B.ok[i] = -1;
      B.failed++;
      B.inflight--;
    }
  }
  if (B.next == B.n && B.inflight == 0 && !B.drop_t0 && !B.round)
    all_built();
}

static void
finish_cb(void *arg)
{
  (void)arg;
  evloop_exit(B.loop);
}

static void
phase_drop(void *arg)
{
  (void)arg;
  if (B.round == 0)
    B.drop_t0 = evloop_now_us(B.loop);
  if (B.round < B.drop_rounds) {
    for (unsigned i = 0; i < B.n; i++) {
      if (B.ok[i] != 1)
        continue;
      origin_circuit_t *c = circbuild_circuit(B.cbs[i]);
      if (c && origin_circuit_send_relay(c, B.n_hops - 1, RELAY_COMMAND_DROP,
                                         0, NULL, 0) == 0)
        B.dropped++;
    }
    B.round++;
    evloop_timer_schedule(B.timer, (uint64_t)B.round_ms * 1000);
    return;
  }
  /* Wait until the client's channels have written everything. */
  channel_stats_t st;
  channels_get_stats(&st);
  if (B.round == B.drop_rounds) {
    B.round++;
    evloop_timer_schedule(B.timer, 200000);
    return;
  }
  printf("dropped %llu seconds %.2f\n", (unsigned long long)B.dropped,
         (evloop_now_us(B.loop) - B.drop_t0) / 1e6);
  fflush(stdout);
  evloop_timer_free(B.timer);
  B.timer = evloop_timer_new(B.loop, finish_cb, NULL);
  evloop_timer_schedule(B.timer, (uint64_t)(B.hold_s * 1e6));
}

static void
usage(void)
{
  fprintf(stderr,
          "usage: pctor-circbench [--circuits N] [--parallel P] "
          "[--drop-cells K]\n"
          "                       [--round-ms MS] [--pause SEC] [--hold SEC]"
          " [--nodes FILE]\n"
          "                       HOP [HOP ...]\n"
          "       pctor-circbench --churn [--shared] [N ...]\n"
          "       pctor-circbench --onionskins [--ntor3] [-n N] [WORKERS ...]\n"
          "HOP as for pctor-circtest (ADDR:PORT,RSAFP,ED,NTOR | "
          "pctor:DATADIR@ADDR:PORT | nickname)\n");
}

int
main(int argc, char **argv)
{
  const char *nodes = NULL;
  B.n = 1000;
  B.parallel = 64;
  B.drop_rounds = 20;
  B.round_ms = 20;
  B.pause_s = 2;
  B.hold_s = 2;
  if (argc > 1 && !strcmp(argv[1], "--churn"))
    return circbench_churn_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "--onionskins"))
    return circbench_onion_main(argc - 1, argv + 1);
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    if (!strcmp(a, "--circuits"))
      B.n = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--parallel"))
      B.parallel = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--drop-cells"))
      B.drop_rounds = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--round-ms"))
      B.round_ms = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--pause"))
      B.pause_s = atof(argv[++i]);
    else if (!strcmp(a, "--hold"))
      B.hold_s = atof(argv[++i]);
    else if (!strcmp(a, "--nodes"))
      nodes = argv[++i];
    else {
      usage();
      return 2;
    }
  }
  if (B.n == 0 || B.parallel == 0 || i >= argc) {
    usage();
    return 2;
  }
  for (; i < argc; i++) {
    if (B.n_hops == CIRCUIT_MAX_HOPS ||
        hopspec_parse(&B.hops[B.n_hops], argv[i], nodes) < 0) {
      fprintf(stderr, "pctor-circbench: bad hop '%s'\n", argv[i]);
      return 2;
    }
    B.hops[B.n_hops].handshake = HTYPE_NTOR;
    B.n_hops++;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (crypt_global_init() < 0)
    return 1;
  B.loop = evloop_new();
  channels_init(B.loop, NULL);
  circuits_init();
  B.cbs = pc_calloc(B.n, sizeof(*B.cbs));
  B.ok = pc_calloc(B.n, sizeof(*B.ok));
  B.build_us = pc_calloc(B.n, sizeof(*B.build_us));
  B.timer = evloop_timer_new(B.loop, phase_drop, NULL);
  B.t0 = evloop_now_us(B.loop);
  start_more();
  evloop_run(B.loop);
  int ok = B.built > 0;
  for (unsigned k = 0; k < B.n; k++)
    circbuild_free(B.cbs[k]);
  evloop_timer_free(B.timer);
  channels_shutdown();
  circuits_shutdown();
  evloop_free(B.loop);
  free(B.cbs);
  free(B.ok);
  free(B.build_us);
  return ok ? 0 : 1;
}
