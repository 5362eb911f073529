/* SPDX-License-Identifier: BSD-3-Clause */
/* circbench_churn.c -- pctor-circbench --churn: what opening and closing N
 * circuits costs a relay's channel and circuit bookkeeping, in one process,
 * without TCP, TLS or handshake crypto, so that how the cost grows with N
 * can be read off (it should be flat per circuit).
 *
 * The relay sits between a previous relay A and a next relay B. For each
 * circuit: an incoming channel from A (authenticated, as with a
 * PerCircuitTCP previous hop), an or_circuit on it, and an extension to B
 * through circuit_extend_to(), i.e. PCTCP's choice (a new per-circuit
 * channel, or with --shared the one shared channel to B); a channel that
 * is still connecting is then opened by hand, which sends the CREATE2.
 * Teardown: A's channels close one by one, each taking its circuit down
 * (DESTROY towards B), and the event loop runs once after each, so that
 * the emptied per-circuit channel to B is closed and freed as in a
 * running relay. Channels are "socketless" (channel.h): no descriptors,
 * so N can exceed the descriptor limit; cells written go nowhere.
 *
 * Prints, per N, the process CPU time per circuit of each phase:
 *   "churn N <n> mode <per-circuit|shared> open_us <u> close_us <u>
 *    total_us <u> channels_left <c> circuits_left <k>"
 * and fails (exit 1) if anything is left over after the teardown.
 */
#include "tools/circbench/circbench_churn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/pctcp.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/rand.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"

static uint64_t
cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void
exit_loop_cb(void *arg)
{
  evloop_exit(arg);
}

/* One pass of the loop: deferred callbacks (reapers) run. */
static void
run_once(evloop_t *loop, evloop_timer_t *t)
{
  evloop_timer_schedule(t, 0);
  evloop_run(loop);
}

/* One measurement; returns 0 if everything was torn down. */
static int
churn(unsigned n, int shared)
{
  evloop_t *loop = evloop_new();
  evloop_timer_t *t = evloop_timer_new(loop, exit_loop_cb, loop);
  channels_init(loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  pctcp_config_t cfg = {!shared, 0, 0, UINT64_MAX};
  pctcp_configure(&cfg);

  pc_addr_t a, b;
  pc_addr_parse(&a, "127.0.0.2:9001");
  pc_addr_parse(&b, "127.0.0.3:9001");
  uint8_t rsa_a[20], ed_a[32], rsa_b[20], ed_b[32];
  crypt_rand(rsa_a, sizeof(rsa_a));
  crypt_rand(ed_a, sizeof(ed_a));
  crypt_rand(rsa_b, sizeof(rsa_b));
  crypt_rand(ed_b, sizeof(ed_b));
  cell_t create;
  memset(&create, 0, sizeof(create));
  create.command = CELL_CREATE2;
  channel_t **in = pc_calloc(n, sizeof(*in));

  uint64_t t0 = cpu_ns();
  for (unsigned i = 0; i < n; i++) {
    in[i] = channel_accept_socketless_for_testing(&a, rsa_a, ed_a);
    channel_open_socketless_for_testing(in[i]);
    or_circuit_t *oc = or_circuit_new(in[i], 0x80000001u);
    if (circuit_extend_to(&oc->base, &b, rsa_b, ed_b, &create) < 0) {
      fprintf(stderr, "pctor-circbench: extension %u failed\n", i);
      break;
    }
    if (!channel_is_open(oc->base.n_chan))
      channel_open_socketless_for_testing(oc->base.n_chan);
  }
  uint64_t t1 = cpu_ns();
  for (unsigned i = 0; i < n; i++) {
    channel_close(in[i], "benchmark: previous hop closed");
    run_once(loop, t);
  }
  run_once(loop, t);
  uint64_t t2 = cpu_ns();

  channel_stats_t st;
  channels_get_stats(&st);
  unsigned left_chan = st.n_open + st.n_handshaking;
  if (shared && left_chan == 1)
    left_chan = 0; /* the shared channel to B stays, as it would */
  unsigned left_circ = circuits_count(CIRC_KIND_OR);
  printf("churn N %u mode %s open_us %.2f close_us %.2f total_us %.2f "
         "channels_left %u circuits_left %u\n",
         n, shared ? "shared" : "per-circuit", (t1 - t0) / 1e3 / n,
         (t2 - t1) / 1e3 / n, (t2 - t0) / 1e3 / n, left_chan, left_circ);
  fflush(stdout);

  channels_shutdown();
  circuits_shutdown();
  evloop_timer_free(t);
  evloop_free(loop);
  free(in);
  return left_chan || left_circ ? -1 : 0;
}

int
circbench_churn_main(int argc, char **argv)
{
  unsigned ns[16];
  int nn = 0, shared = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shared")) {
      shared = 1;
    } else if (argv[i][0] != '-' && nn < 16 && atoi(argv[i]) > 0) {
      ns[nn++] = (unsigned)strtoul(argv[i], NULL, 10);
    } else {
      fprintf(stderr, "usage: pctor-circbench --churn [--shared] [N ...]"
                      " (default N: 1000 10000 40000)\n");
      return 2;
    }
  }
  if (!nn) {
    ns[nn++] = 1000;
    ns[nn++] = 10000;
    ns[nn++] = 40000;
  }
  if (crypt_global_init() < 0)
    return 1;
  int rc = 0;
  for (int i = 0; i < nn; i++)
    if (churn(ns[i], shared) < 0)
      rc = 1;
  return rc;
}
