/* SPDX-License-Identifier: BSD-3-Clause */
/* check_scheduler.c -- the cross-channel EWMA scheduler (scheduler.h).
 *
 * Channels here are real channel_t objects on plain (non-TLS) conns over
 * socketpairs; the event loop is never run, so what the scheduler writes
 * stays in the conns' output buffers, where the test reads it back in
 * order. The scheduler's clock is the test's own. The main test replays
 * random push/run sequences against a straightforward reference that
 * decays every circuit's average at every run with pow() and picks the
 * global minimum by linear search; both must send the same cells in the
 * same order on every channel.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/sockios.h>
#endif

#include "core/or/channel_internal.h"
#include "core/or/scheduler.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"
#include "lib/net/ratelimit.h"
#include "lib/net/sockstat.h"

Suite *suite_scheduler(void);

#define CELL_LEN 514
#define BUDGET_CELLS (CHAN_OUTBUF_HIGH / CELL_LEN)
#define MAXQ 16
#define MAXCH 4

static evloop_t *loop;
static uint64_t now_us;
static channel_t *chans[MAXCH];
static int peer_fds[MAXCH];
static circ_queue_t queues[MAXQ];

static channel_t *
fake_channel(int i)
{
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  peer_fds[i] = sv[1];
  return channel_new_plain_for_testing(loop, sv[0]);
}

static void
setup_n(int nch, int nq, double halflife)
{
  loop = evloop_new();
  now_us = 1000000;
  scheduler_set_clock_for_testing(&now_us);
  scheduler_config_t cfg;
  scheduler_config_default(&cfg);
  cfg.halflife_sec = halflife;
  cfg.socket_aware = 0;
  scheduler_configure(&cfg);
  scheduler_init(loop);
  for (int i = 0; i < nch; i++)
    chans[i] = fake_channel(i);
  for (int q = 0; q < nq; q++) {
    circ_queue_init(&queues[q], NULL);
    queues[q].chan = chans[q % nch];
  }
}

static void
teardown_n(int nch, int nq)
{
  for (int q = 0; q < nq; q++)
    circ_queue_clear(&queues[q]);
  for (int i = 0; i < nch; i++) {
    channel_free_plain_for_testing(chans[i]);
    close(peer_fds[i]);
    chans[i] = NULL;
  }
  scheduler_shutdown();
  scheduler_set_clock_for_testing(NULL);
  evloop_free(loop);
}

/* Queue a cell whose first 4 bytes say which queue it came from. */
static void
push_cell(int q)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, CELL_LEN);
  set_u32(pc->body, (uint32_t)q);
  pc->len = CELL_LEN;
  pc->queued_us = now_us;
  circ_queue_push(&queues[q], pc);
}

/* Read back the queue ids the scheduler wrote to channel ch; returns how
 * many, and lets the channel take data again (as CONN_EV_DRAINED would). */
static int
drain_channel(int ch, int *out, int max)
{
  buf_t *b = channel_outbuf_for_testing(chans[ch]);
  int n = 0;
  uint8_t cell[CELL_LEN];
  while (buf_datalen(b) >= CELL_LEN) {
    buf_get(b, cell, CELL_LEN);
    ck_assert_int_lt(n, max);
    out[n++] = (int)get_u32(cell);
  }
  ck_assert_uint_eq(buf_datalen(b), 0);
  scheduler_channel_wakeup(chans[ch]);
  return n;
}

/* ---- the reference ------------------------------------------------- */

typedef struct ref_q_t {
  double a;       /* average, true units, as of last_us */
  uint64_t last_us;
  int cells;
  uint64_t seq;
} ref_q_t;

static struct {
  ref_q_t q[MAXQ];
  uint64_t seq;
  int nq, nch;
  double halflife_us; /* 0: round robin */
} R;

static void
ref_push(int q)
{
  if (R.q[q].cells == 0)
    R.q[q].seq = ++R.seq;
  R.q[q].cells++;
}

/* One run at now_us: returns, per channel, the queue ids sent. */
static void
ref_run(int out[MAXCH][BUDGET_CELLS], int nout[MAXCH])
{
  int budget[MAXCH];
  for (int c = 0; c < R.nch; c++) {
    budget[c] = BUDGET_CELLS;
    nout[c] = 0;
  }
  for (int q = 0; q < R.nq; q++) {
    if (R.halflife_us > 0)
      R.q[q].a *= pow(0.5, (double)(now_us - R.q[q].last_us) /
                               R.halflife_us);
    R.q[q].last_us = now_us;
  }
  for (;;) {
    int best = -1;
    for (int q = 0; q < R.nq; q++) {
      if (!R.q[q].cells || !budget[q % R.nch])
        continue;
      if (best < 0) {
        best = q;
        continue;
      }
      const ref_q_t *x = &R.q[q], *y = &R.q[best];
      int better;
      if (R.halflife_us > 0 && x->a != y->a)
        better = x->a < y->a;
      else
        better = x->seq < y->seq;
      if (better)
        best = q;
    }
    if (best < 0)
      break;
    int c = best % R.nch;
    out[c][nout[c]++] = best;
    budget[c]--;
    R.q[best].cells--;
    R.q[best].a += 1.0;
    R.q[best].seq = ++R.seq;
  }
}

static void
replay(unsigned seed, int nch, int nq, double halflife, uint64_t max_dt_us,
       int steps)
{
  srand(seed);
  setup_n(nch, nq, halflife);
  memset(&R, 0, sizeof(R));
  R.nq = nq;
  R.nch = nch;
  R.halflife_us = halflife > 0 ? halflife * 1e6 : 0;
  for (int q = 0; q < nq; q++)
    R.q[q].last_us = now_us;
  int total = 0;
  for (int step = 0; step < steps; step++) {
    if (rand() % 4)
      now_us += (uint64_t)rand() % (max_dt_us + 1);
    int pushes = rand() % 6;
    for (int k = 0; k < pushes; k++) {
      int q = rand() % nq;
      /* mostly a few cells, sometimes a bulk burst */
      int m = rand() % 10 ? 1 + rand() % 6 : 40 + rand() % 80;
      for (int j = 0; j < m; j++) {
        push_cell(q);
        ref_push(q);
      }
    }
    scheduler_run_now();
    ck_assert_int_eq(scheduler_check_invariants(), 0);
    int want[MAXCH][BUDGET_CELLS], nwant[MAXCH];
    ref_run(want, nwant);
    for (int c = 0; c < nch; c++) {
      int got[BUDGET_CELLS + 1];
      int ngot = drain_channel(c, got, BUDGET_CELLS + 1);
      ck_assert_msg(ngot == nwant[c],
                    "seed %u step %d chan %d: %d cells, reference %d", seed,
                    step, c, ngot, nwant[c]);
      for (int i = 0; i < ngot; i++)
        ck_assert_msg(got[i] == want[c][i],
                      "seed %u step %d chan %d cell %d: queue %d, "
                      "reference %d",
                      seed, step, c, i, got[i], want[c][i]);
      total += ngot;
    }
  }
  ck_assert_int_gt(total, 100);
  teardown_n(nch, nq);
}

START_TEST(test_ewma_matches_reference)
{
  for (unsigned seed = 1; seed <= 6; seed++) {
    replay(seed, 1, 6, 30.0, 3000000, 150);
    replay(seed + 100, 3, 9, 2.5, 2000000, 150);
  }
}
END_TEST

START_TEST(test_round_robin_matches_reference)
{
  for (unsigned seed = 1; seed <= 4; seed++)
    replay(seed, 2, 8, 0, 1000000, 120);
}
END_TEST

/* Tiny half-lives make the scale grow past the renormalisation point
 * every few runs; long idle gaps shrink averages to nothing. */
START_TEST(test_renormalisation)
{
  scheduler_stats_t st;
  replay(7, 2, 6, 0.01, 400000, 200);
  replay(8, 1, 4, 0.5, 60000000, 100); /* gaps of up to 120 half-lives */
  /* Count renormalisations in a run of our own. */
  setup_n(1, 2, 0.001);
  for (int i = 0; i < 50; i++) {
    now_us += 10000; /* 10 half-lives */
    push_cell(i % 2);
    scheduler_run_now();
    int got[BUDGET_CELLS];
    drain_channel(0, got, BUDGET_CELLS);
    ck_assert(isfinite(queues[0].ewma) && isfinite(queues[1].ewma));
  }
  scheduler_get_stats(&st);
  ck_assert_uint_ge(st.renormalisations, 10);
  /* Huge values: 10^6 cells at one instant stay finite and ordered. */
  for (int i = 0; i < 1000; i++) {
    for (int j = 0; j < BUDGET_CELLS; j++)
      push_cell(0);
    scheduler_run_now();
    int got[BUDGET_CELLS];
    drain_channel(0, got, BUDGET_CELLS);
  }
  ck_assert(isfinite(queues[0].ewma));
  ck_assert(circ_queue_ewma(&queues[0]) > 30000.0);
  push_cell(0);
  push_cell(1);
  scheduler_run_now();
  int got[BUDGET_CELLS];
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  ck_assert_int_eq(got[0], 1); /* the quiet queue first */
  teardown_n(1, 2);
}
END_TEST

START_TEST(test_heap_invariants_random_ops)
{
  srand(42);
  setup_n(3, 12, 5.0);
  for (int step = 0; step < 3000; step++) {
    int op = rand() % 10;
    int q = rand() % 12;
    if (op < 5) {
      for (int k = rand() % 4; k >= 0; k--)
        push_cell(q);
    } else if (op < 7) {
      circ_queue_clear(&queues[q]);
    } else if (op < 9) {
      now_us += (uint64_t)(rand() % 500000);
      scheduler_run_now();
      int got[BUDGET_CELLS];
      drain_channel(rand() % 3, got, BUDGET_CELLS);
    } else {
      scheduler_config_t cfg;
      scheduler_get_config(&cfg);
      cfg.halflife_sec = (rand() % 3) ? 0.1 * (1 + rand() % 50) : 0;
      scheduler_configure(&cfg);
    }
    ck_assert_int_eq(scheduler_check_invariants(), 0);
  }
  for (int i = 0; i < 12; i++)
    circ_queue_clear(&queues[i]);
  scheduler_stats_t st;
  scheduler_get_stats(&st);
  ck_assert_uint_eq(st.channels_active, 0);
  ck_assert_uint_eq(st.channels_ready, 0);
  teardown_n(3, 12);
}
END_TEST

START_TEST(test_halflife_change_at_runtime)
{
  setup_n(1, 2, 30.0);
  int got[BUDGET_CELLS];
  /* queue 0 sends n0 cells, queue 1 sends 3, at t0: one more than the
   * channel's budget */
  const int n0 = BUDGET_CELLS - 2;
  for (int i = 0; i < n0; i++)
    push_cell(0);
  for (int i = 0; i < 3; i++)
    push_cell(1);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), BUDGET_CELLS);
  /* the queues alternate while tied, so queue 0's last cell is left for
   * the next run, where one more cell of queue 1 goes first */
  push_cell(1);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  ck_assert_int_eq(got[0], 1);
  ck_assert_int_eq(got[1], 0);
  ck_assert(fabs(circ_queue_ewma(&queues[0]) - n0) < 1e-9);
  ck_assert(fabs(circ_queue_ewma(&queues[1]) - 4.0) < 1e-9);
  /* 10 s later, with a cell queued on queue 0, the half-life becomes
   * 1 s: decay up to now uses 30 s (queues with cells are carried over
   * exactly; idle ones are decayed with the new half-life later) */
  now_us += 10000000;
  push_cell(0);
  scheduler_config_t cfg;
  scheduler_get_config(&cfg);
  cfg.halflife_sec = 1.0;
  scheduler_configure(&cfg);
  double a0 = n0 * pow(0.5, 10.0 / 30.0);
  ck_assert(fabs(circ_queue_ewma(&queues[0]) - a0) < 1e-9);
  /* then 5 s with the new half-life */
  now_us += 5000000;
  ck_assert(fabs(circ_queue_ewma(&queues[0]) - a0 / 32.0) < 1e-9);
  ck_assert(fabs(circ_queue_ewma(&queues[1]) - 4.0 / 32768.0) < 1e-9);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 1);
  /* round robin: averages stop mattering */
  cfg.halflife_sec = 0;
  scheduler_configure(&cfg);
  for (int i = 0; i < 4; i++) {
    push_cell(0);
    push_cell(1);
  }
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 8);
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(got[i], i % 2);
  /* and back to EWMA: queue 1 (the quieter) goes first again */
  cfg.halflife_sec = 30.0;
  scheduler_configure(&cfg);
  for (int i = 0; i < 3; i++) {
    push_cell(0);
    push_cell(1);
  }
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 6);
  ck_assert_int_eq(got[0], 1);
  ck_assert_int_eq(got[1], 1);
  ck_assert_int_eq(got[2], 1);
  teardown_n(1, 2);
}
END_TEST

/* Quiet circuits overtake busy ones across channels, and a shared
 * bandwidth bucket's tokens go to the lowest average first. */
START_TEST(test_cross_channel_bucket)
{
  setup_n(2, 2, 30.0);
  int got[BUDGET_CELLS];
  /* queue 0 (channel 0) is bulk: 600 cells sent already */
  for (int r = 0; r < 20; r++) {
    for (int i = 0; i < 30; i++)
      push_cell(0);
    scheduler_run_now();
    drain_channel(0, got, BUDGET_CELLS);
  }
  ratelimit_t *rl = ratelimit_new(loop, 100 * 1024, 10 * CELL_LEN, 100);
  chans[0]->bw_global = rl;
  chans[1]->bw_global = rl;
  for (int i = 0; i < 30; i++)
    push_cell(0);
  for (int i = 0; i < 8; i++)
    push_cell(1);
  scheduler_run_now();
  /* 10 cells of tokens: the quiet queue's 8, then 2 of the bulk */
  ck_assert_int_eq(drain_channel(1, got, BUDGET_CELLS), 8);
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  scheduler_stats_t st;
  scheduler_get_stats(&st);
  ck_assert_uint_ge(st.token_limited, 1);
  /* round robin splits the same tokens evenly */
  circ_queue_clear(&queues[0]);
  circ_queue_clear(&queues[1]);
  scheduler_config_t cfg;
  scheduler_get_config(&cfg);
  cfg.halflife_sec = 0;
  scheduler_configure(&cfg);
  chans[0]->bw_global = chans[1]->bw_global = NULL;
  ratelimit_free(rl);
  rl = ratelimit_new(loop, 100 * 1024, 10 * CELL_LEN, 100);
  chans[0]->bw_global = chans[1]->bw_global = rl;
  for (int i = 0; i < 30; i++) {
    push_cell(0);
    push_cell(1);
  }
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 5);
  ck_assert_int_eq(drain_channel(1, got, BUDGET_CELLS), 5);
  chans[0]->bw_global = chans[1]->bw_global = NULL;
  teardown_n(2, 2);
  ratelimit_free(rl);
}
END_TEST

START_TEST(test_queue_stats)
{
  setup_n(1, 1, 30.0);
  push_cell(0);
  push_cell(0);
  now_us += 2500;
  scheduler_run_now();
  int got[BUDGET_CELLS];
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  ck_assert_uint_eq(queues[0].stats.cells_sent, 2);
  ck_assert_uint_eq(queues[0].stats.queued_us_total, 5000);
  ck_assert_uint_eq(queues[0].stats.queued_us_max, 2500);
  teardown_n(1, 1);
}
END_TEST

/* CELL_STATS counts (channel.h): per command, only while counting is on,
 * taken and reset by circ_queue_take_cmd_stats(); the channel's bytes by
 * channel_take_bytes(). */
START_TEST(test_queue_cmd_stats)
{
  setup_n(1, 1, 30.0);
  circ_queue_cmd_stats_t st;
  push_cell(0); /* not counting yet */
  ck_assert_int_eq(circ_queue_take_cmd_stats(&queues[0], &st), 0);
  ck_assert_ptr_null(queues[0].cmd_stats);
  circ_queues_count_commands(1);
  for (int i = 0; i < 3; i++) {
    packed_cell_t *pc = packed_cell_new();
    memset(pc->body, 0, CELL_LEN);
    pc->body[4] = i == 2 ? CELL_DESTROY : CELL_RELAY; /* 4-byte circ id */
    pc->len = CELL_LEN;
    pc->queued_us = now_us;
    circ_queue_push(&queues[0], pc);
  }
  now_us += 4000;
  scheduler_run_now();
  int got[BUDGET_CELLS];
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 4);
  ck_assert_int_eq(circ_queue_take_cmd_stats(&queues[0], &st), 1);
  ck_assert_uint_eq(st.added[CELL_RELAY], 2);
  ck_assert_uint_eq(st.added[CELL_DESTROY], 1);
  /* the cell queued before counting began is counted when it leaves
   * (its command is 0, padding) */
  ck_assert_uint_eq(st.added[CELL_PADDING], 0);
  ck_assert_uint_eq(st.removed[CELL_PADDING], 1);
  ck_assert_uint_eq(st.removed[CELL_RELAY], 2);
  ck_assert_uint_eq(st.removed[CELL_DESTROY], 1);
  ck_assert_uint_eq(st.removed_us[CELL_RELAY], 8000);
  ck_assert_uint_eq(st.removed_us[CELL_DESTROY], 4000);
  /* taken: nothing until more cells move */
  ck_assert_int_eq(circ_queue_take_cmd_stats(&queues[0], &st), 0);
  ck_assert_uint_eq(st.added[CELL_RELAY], 0);
  uint64_t rd, wr;
  ck_assert_int_eq(channel_take_bytes(chans[0], &rd, &wr), 0);
  ck_assert_uint_eq(rd, 0);
  circ_queues_count_commands(0);
  teardown_n(1, 1);
}
END_TEST

START_TEST(test_kist_limit)
{
  sockstat_tcp_t st;
  memset(&st, 0, sizeof(st));
  st.cwnd = 10;
  st.unacked = 4;
  st.mss = 1000;
  st.notsent = 3000;
  ck_assert_int_eq(sockstat_kist_limit(&st, 1.0), 6000 + 7000);
  ck_assert_int_eq(sockstat_kist_limit(&st, 0.5), 6000 + 2000);
  st.notsent = 20000;
  ck_assert_int_eq(sockstat_kist_limit(&st, 1.0), 0);
  st.unacked = 12; /* more in flight than the window */
  st.notsent = 0;
  ck_assert_int_eq(sockstat_kist_limit(&st, 1.0), 10000);
  /* a real TCP socket answers, a unix socket does not */
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ck_assert_int_eq(sockstat_tcp(sv[0], &st), -1);
  close(sv[0]);
  close(sv[1]);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(sockstat_tcp(fd, &st), 0);
  close(fd);
}
END_TEST

/* A connected TCP pair over 127.0.0.1: returns the connecting end and puts
 * the accepted one in *accepted. rcvbuf > 0 sets the listener's (and so
 * the accepted socket's) SO_RCVBUF first. */
#ifdef __linux__
static int
loopback_tcp_pair(int *accepted, int rcvbuf)
{
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(lfd, 0);
  if (rcvbuf > 0)
    ck_assert_int_eq(
        setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t slen = sizeof(sin);
  ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sin, &slen), 0);
  ck_assert_int_eq(listen(lfd, 1), 0);
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(cfd, 0);
  ck_assert_int_eq(connect(cfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  *accepted = accept(lfd, NULL, NULL);
  ck_assert_int_ge(*accepted, 0);
  close(lfd);
  return cfd;
}
#endif

/* sockstat_tcp_send() (one getsockopt) tells the unsent bytes as the
 * SIOCOUTQNSD ioctl does, on a loopback connection whose receiver does not
 * read, so that data stays unsent in the sender's queue. */
START_TEST(test_sockstat_notsent)
{
#if defined(__linux__) && defined(SIOCOUTQNSD)
  int afd;
  int cfd = loopback_tcp_pair(&afd, 4096);
  ck_assert_int_eq(fcntl(cfd, F_SETFL, O_NONBLOCK), 0);
  static uint8_t junk[65536];
  size_t sent = 0;
  for (;;) {
    ssize_t n = send(cfd, junk, sizeof(junk), MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += (size_t)n;
  }
  ck_assert_uint_gt(sent, 0);
  int nsd = -1;
  ck_assert_int_eq(ioctl(cfd, SIOCOUTQNSD, &nsd), 0);
  ck_assert_int_gt(nsd, 0);
  sockstat_tcp_t quick, full;
  ck_assert_int_eq(sockstat_tcp_send(cfd, &quick), 0);
  ck_assert_int_eq(sockstat_tcp(cfd, &full), 0);
  ck_assert_uint_eq(quick.notsent, (uint32_t)nsd);
  ck_assert_uint_eq(full.notsent, (uint32_t)nsd);
  ck_assert_uint_eq(quick.outq, 0); /* not asked */
  ck_assert_uint_ge(full.outq, full.notsent);
  ck_assert_uint_gt(quick.cwnd, 0);
  ck_assert_uint_gt(quick.mss, 0);
  close(afd);
  close(cfd);
#endif
}
END_TEST

/* KIST with a recent answer: a channel over a loopback TCP connection
 * with an empty send queue has ample kernel room, so a second run within
 * 10 ms reuses the first query's answer (no getsockopt); after that the
 * scheduler asks the kernel again. */
START_TEST(test_kist_reuse)
{
#ifdef __linux__
  loop = evloop_new();
  now_us = 1000000;
  scheduler_set_clock_for_testing(&now_us);
  scheduler_config_t cfg;
  scheduler_config_default(&cfg);
  cfg.socket_aware = 1;
  scheduler_configure(&cfg);
  scheduler_init(loop);
  int cfd = loopback_tcp_pair(&peer_fds[0], 0);
  chans[0] = channel_new_plain_for_testing(loop, cfd);
  circ_queue_init(&queues[0], NULL);
  queues[0].chan = chans[0];

  scheduler_stats_t st;
  int got[BUDGET_CELLS];
  push_cell(0);
  push_cell(0);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  scheduler_get_stats(&st);
  ck_assert_uint_eq(st.kist_queries, 1);
  ck_assert_uint_eq(st.kist_reused, 0);

  now_us += 1000; /* 1 ms later: the answer still stands */
  push_cell(0);
  push_cell(0);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 2);
  scheduler_get_stats(&st);
  ck_assert_uint_eq(st.kist_queries, 1);
  ck_assert_uint_eq(st.kist_reused, 1);

  now_us += 20000; /* too old now: ask again */
  push_cell(0);
  scheduler_run_now();
  ck_assert_int_eq(drain_channel(0, got, BUDGET_CELLS), 1);
  scheduler_get_stats(&st);
  ck_assert_uint_eq(st.kist_queries, 2);
  ck_assert_uint_eq(st.kist_reused, 1);
  teardown_n(1, 1);
#endif
}
END_TEST

Suite *
suite_scheduler(void)
{
  Suite *s = suite_create("scheduler");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_ewma_matches_reference);
  tcase_add_test(tc, test_queue_cmd_stats);
  tcase_add_test(tc, test_round_robin_matches_reference);
  tcase_add_test(tc, test_renormalisation);
  tcase_add_test(tc, test_heap_invariants_random_ops);
  tcase_add_test(tc, test_halflife_change_at_runtime);
  tcase_add_test(tc, test_cross_channel_bucket);
  tcase_add_test(tc, test_queue_stats);
  tcase_add_test(tc, test_sockstat_notsent);
  tcase_add_test(tc, test_kist_reuse);
  tcase_add_test(tc, test_kist_limit);
  suite_add_tcase(s, tc);
  return s;
}
