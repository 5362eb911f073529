/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-schedbench.c -- CPU cost per cell of the circuit scheduler.
 *
 * Keeps N circuits permanently active (every circuit always has a cell
 * queued) on C channels and lets the scheduler move cells into the
 * channels' output buffers, run after run, with a clock that advances
 * 100 us per run. Between runs the output buffers are emptied (as the
 * kernel would) and every circuit that sent a cell gets a new one. Only
 * the scheduler's runs are timed (process CPU time). Channels are plain
 * connections over socketpairs; nothing is written to them.
 *
 * Prints one line per (N, mode): nanoseconds of CPU per cell, for EWMA
 * and for round robin, so that growth with N can be read off (it should
 * be logarithmic: heap depth).
 *
 * Usage: pctor-schedbench [--cells N] [--channels C] [N ...]
 *   defaults: --cells 2000000, --channels 16, N = 10 1000 100000
 * With --channels 0 every circuit gets its own channel (as with
 * PerCircuitTCP), which needs 2 descriptors per circuit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/or/channel.h"
#include "lib/buf/buf.h"
#include "core/or/scheduler.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

static uint64_t
cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_us;

static void
push(circ_queue_t *q, uint32_t id)
{
  packed_cell_t *pc = packed_cell_new();
  set_u32(pc->body, id);
  pc->len = CELL_MAX_NETWORK_LEN;
  pc->queued_us = now_us;
  circ_queue_push(q, pc);
}

/* One measurement; returns ns of scheduler CPU per cell, or -1. */
static double
bench(unsigned n, unsigned nchan, double halflife, uint64_t cells)
{
  evloop_t *loop = evloop_new();
  now_us = 1;
  scheduler_set_clock_for_testing(&now_us);
  scheduler_config_t cfg;
  scheduler_config_default(&cfg);
  cfg.halflife_sec = halflife;
  cfg.socket_aware = 0;
  scheduler_configure(&cfg);
  scheduler_init(loop);
  if (nchan == 0 || nchan > n)
    nchan = n;
  channel_t **ch = pc_calloc(nchan, sizeof(*ch));
  int *peer = pc_calloc(nchan, sizeof(*peer));
  for (unsigned i = 0; i < nchan; i++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
      perror("socketpair (raise the descriptor limit?)");
      exit(1);
    }
    ch[i] = channel_new_plain_for_testing(loop, sv[0]);
    peer[i] = sv[1];
  }
  circ_queue_t *q = pc_calloc(n, sizeof(*q));
  for (unsigned i = 0; i < n; i++) {
    circ_queue_init(&q[i], NULL);
    q[i].chan = ch[i % nchan];
    push(&q[i], i);
  }
  uint64_t moved = 0, spent = 0;
  uint8_t cell[CELL_MAX_NETWORK_LEN];
  while (moved < cells) {
    now_us += 100;
    uint64_t t0 = cpu_ns();
    scheduler_run_now();
    spent += cpu_ns() - t0;
    for (unsigned c = 0; c < nchan; c++) {
      buf_t *b = channel_outbuf_for_testing(ch[c]);
      int got = 0;
      while (buf_datalen(b) >= CELL_MAX_NETWORK_LEN) {
        buf_get(b, cell, CELL_MAX_NETWORK_LEN);
        push(&q[get_u32(cell)], get_u32(cell));
        moved++;
        got = 1;
      }
      if (got)
        scheduler_channel_wakeup(ch[c]);
    }
  }
  for (unsigned i = 0; i < n; i++)
    circ_queue_clear(&q[i]);
  for (unsigned i = 0; i < nchan; i++) {
    channel_free_plain_for_testing(ch[i]);
    close(peer[i]);
  }
  free(ch);
  free(peer);
  free(q);
  scheduler_shutdown();
  scheduler_set_clock_for_testing(NULL);
  evloop_free(loop);
  return moved ? (double)spent / (double)moved : -1;
}

int
main(int argc, char **argv)
{
  uint64_t cells = 2000000;
  unsigned nchan = 16;
  unsigned ns[16];
  int nn = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cells") && i + 1 < argc)
      cells = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--channels") && i + 1 < argc)
      nchan = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (argv[i][0] != '-' && nn < 16)
      ns[nn++] = (unsigned)strtoul(argv[i], NULL, 10);
    else {
      fprintf(stderr, "usage: pctor-schedbench [--cells N] [--channels C] "
                      "[N ...]\n");
      return 2;
    }
  }
  if (nn == 0) {
    ns[nn++] = 10;
    ns[nn++] = 1000;
    ns[nn++] = 100000;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  printf("%-10s %-9s %14s %14s\n", "circuits", "channels", "EWMA ns/cell",
         "RR ns/cell");
  for (int i = 0; i < nn; i++) {
    unsigned c = nchan == 0 || nchan > ns[i] ? ns[i] : nchan;
    double e = bench(ns[i], nchan, SCHEDULER_DEFAULT_HALFLIFE_SEC, cells);
    double r = bench(ns[i], nchan, 0, cells);
    printf("%-10u %-9u %14.1f %14.1f\n", ns[i], c, e, r);
    fflush(stdout);
  }
  return 0;
}
