/* SPDX-License-Identifier: BSD-3-Clause */
/* check_oom.c -- the memory limit on queued cells (MaxMemInQueues,
 * circuit.h) in one process: a relay and one-hop origin circuits to it
 * over real TCP+TLS on 127.0.0.1, as in check_circuit.c.
 *
 * Queues are made to grow by stopping one direction of the loopback link
 * from draining (channels_block_flush_for_testing()): blocking outgoing
 * channels keeps originated DROP cells in the origin circuits' queues;
 * blocking incoming channels keeps the relay's cells towards the client
 * (relayed cells we inject, or directory data from BEGIN_DIR streams) in
 * the or_circuits' queues. Limits are set in units of sizeof(packed_cell_t)
 * so that each test knows exactly which circuits must be closed: the one
 * whose oldest queued cell is oldest first, equal ages biggest first, until
 * the memory held is at most 90% of the limit. The loopback link's own
 * buffers count in the budget too (check_memacct.c proves it), but would
 * make these exact sums depend on TLS record timing: they are kept out of
 * the total here, except in the tests of connection buffers, which fill
 * the output buffers of channels over socketpairs nobody reads (with the
 * chunks' time stamps from a fake clock) and check that the handler closes
 * the connections holding the oldest data, mixed in age order with
 * circuits, until the budget is back under the limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/create.h"
#include "feature/control/metrics.h"
#include "feature/dircache/dircache.h"
#include "feature/relay/router_keys.h"
#include "lib/buf/buf.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/memacct.h"

Suite *suite_oom(void);

#define CELL ((uint64_t)sizeof(packed_cell_t))
#define MAX_CIRCS 4

typedef struct rec_t {
  origin_circuit_t *c;
  int open;
  int closed;
  int reason;
} rec_t;

static struct {
  fixture_relay_t relay; /* dir, keys, loop, timeout, orport */
  rec_t r[MAX_CIRCS];
  /* log lines seen */
  int n_oom_notices;
  char oom_notice[512];
  int n_destroy_resourcelimit;
  int n_futile_warnings;
  /* what the in-loop timer queues: cells per circuit */
  evloop_timer_t *queue_timer;
  int plan[MAX_CIRCS];
  /* the extra-memory hook: bytes reported for circuit r[extra_for] */
  int extra_for;
  uint64_t extra_bytes;
} T;

static void
log_hook(log_severity_t sev, const char *msg, void *arg)
{
  (void)arg;
  if (sev == LOG_SEV_NOTICE && strstr(msg, "MaxMemInQueues")) {
    T.n_oom_notices++;
    snprintf(T.oom_notice, sizeof(T.oom_notice), "%s", msg);
  }
  if (sev == LOG_SEV_WARN && strstr(msg, "no circuit or connection holds any of it"))
    T.n_futile_warnings++;
  if (strstr(msg, "DESTROY (RESOURCELIMIT)"))
    T.n_destroy_resourcelimit++;
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  T.extra_for = -1;
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 1);
  fixture_relay_start(&T.relay, "oom", "CHECK_OOM_VERBOSE", "info");
  log_set_hook(LOG_SEV_DEBUG, log_hook, NULL);
}

static size_t extra_mem(circuit_t *circ);

static void
teardown(void)
{
  circuits_set_max_mem_in_queues(0);
  circuits_set_max_queued_cells(CIRCUIT_MAX_QUEUED_CELLS_DEFAULT,
                                CIRCUIT_MAX_QUEUED_CELLS_DEFAULT);
  circuits_remove_extra_mem_fn(extra_mem);
  channels_block_flush_for_testing(0, 0);
  fixture_relay_shutdown();
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  fixture_assert_no_circuits();
  ck_assert_uint_eq(packed_cells_allocated(), 0);
  ck_assert_uint_eq(memacct_underflows(), 0);
  evloop_timer_free(T.queue_timer);
  fixture_relay_free(&T.relay);
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 0);
}

/* Run the loop for usec (callbacks may end it earlier). */
static void
run_loop_for(uint64_t usec)
{
  fixture_relay_run_for(&T.relay, usec);
}

static void
cb_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  rec_t *r = arg;
  r->open = n;
  evloop_exit(T.relay.loop);
}

static void
cb_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  (void)c;
  (void)hop;
  (void)cmd;
  (void)stream_id;
  (void)body;
  (void)len;
  (void)arg;
}

static void
cb_closed(origin_circuit_t *c, int reason, const char *why, void *arg)
{
  (void)c;
  (void)why;
  rec_t *r = arg;
  r->closed = 1;
  r->reason = reason;
}

static const origin_circuit_ops_t ops = {cb_extended, cb_relay, cb_closed};

/* Build n one-hop circuits to ourselves (they share one channel). */
static void
build_circuits(int n)
{
  extend_target_t t = fixture_relay_target(&T.relay, HTYPE_NTOR);
  for (int i = 0; i < n; i++) {
    T.r[i].c = origin_circuit_launch(&t, &ops, &T.r[i]);
    ck_assert_ptr_nonnull(T.r[i].c);
    for (int k = 0; k < 100 && !T.r[i].open && !T.r[i].closed; k++)
      run_loop_for(100000);
    ck_assert_msg(T.r[i].open == 1 && !T.r[i].closed,
                  "circuit %d did not open", i);
  }
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), (unsigned)n);
  ck_assert_uint_eq(packed_cells_allocated(), 0);
}

static void
queue_drops(int i, int n)
{
  uint8_t junk[16];
  memset(junk, 0x33, sizeof(junk));
  for (int k = 0; k < n; k++)
    ck_assert_int_eq(origin_circuit_send_relay(T.r[i].c, 0,
                                               RELAY_COMMAND_DROP, 0, junk,
                                               sizeof(junk)),
                     0);
}

static uint64_t
low_water(uint64_t limit)
{
  return limit / 100 * CIRCUITS_OOM_RETAIN_PCT +
         limit % 100 * CIRCUITS_OOM_RETAIN_PCT / 100;
}

/* A run that closed something records when (the hour feature/relay/publish
 * puts in the descriptor's "overload-general" line); none, no time. */
static void
check_overload_time(const circuits_oom_stats_t *st)
{
  if (!st->n_oom_events) {
    ck_assert_int_eq((int)(st->last_oom_time != 0), 0);
    return;
  }
  time_t now = time(NULL);
  ck_assert_int_gt((long long)st->last_oom_time, 0);
  ck_assert_int_le((long long)st->last_oom_time, (long long)now);
  ck_assert_int_lt((long long)(now - st->last_oom_time), 600);
}

static void
check_stats(uint64_t events, uint64_t killed, uint64_t freed)
{
  circuits_oom_stats_t st;
  circuits_get_oom_stats(&st);
  ck_assert_uint_eq(st.n_oom_events, events);
  ck_assert_uint_eq(st.n_circuits_killed, killed);
  ck_assert_uint_eq(st.bytes_freed, freed);
  check_overload_time(&st);
}

/* The same where the closed circuits also held a directory stream's own
 * record (a few hundred bytes, counted through dircache's reporter). */
static void
check_stats_dir(uint64_t events, uint64_t killed, uint64_t cells_freed)
{
  circuits_oom_stats_t st;
  circuits_get_oom_stats(&st);
  ck_assert_uint_eq(st.n_oom_events, events);
  ck_assert_uint_eq(st.n_circuits_killed, killed);
  ck_assert_uint_gt(st.bytes_freed, cells_freed);
  ck_assert_uint_le(st.bytes_freed, cells_freed + 1024 * killed);
  check_overload_time(&st);
}

/* The notice names the number of circuits, the bytes freed and the
 * limit. */
static void
check_notice(unsigned killed, uint64_t freed, uint64_t limit)
{
  char want[128];
  ck_assert_msg(strstr(T.oom_notice, "MaxMemInQueues") != NULL, "%s",
                T.oom_notice);
  snprintf(want, sizeof(want), "(%llu bytes)", (unsigned long long)limit);
  ck_assert_msg(strstr(T.oom_notice, want) != NULL, "%s", T.oom_notice);
  snprintf(want, sizeof(want), "Closed %u circuit%s ", killed,
           killed == 1 ? "" : "s");
  ck_assert_msg(strstr(T.oom_notice, want) != NULL, "%s", T.oom_notice);
  snprintf(want, sizeof(want), "freeing %llu bytes",
           (unsigned long long)freed);
  ck_assert_msg(strstr(T.oom_notice, want) != NULL, "%s", T.oom_notice);
}

/* Wait until the relay has freed its side of closed circuits. */
static void
wait_or_circuits(unsigned n)
{
  for (int i = 0; i < 50 && circuits_count(CIRC_KIND_OR) != n; i++)
    run_loop_for(20000);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), n);
}

/* Run the loop until *flag is set (at most 5 s). */
static void
wait_for(const int *flag)
{
  for (int i = 0; i < 250 && !*flag; i++)
    run_loop_for(20000);
}

/* Run the loop until the cells held reach cells (at most 5 s). */
static void
wait_for_cells(uint64_t cells)
{
  for (int i = 0; i < 250 && cell_queues_total_bytes() != cells * CELL; i++)
    run_loop_for(20000);
}

/* ---- origin queues (cells we originate: handled from a deferred
 * callback) ---- */

START_TEST(test_oldest_queue_closed_first)
{
  build_circuits(3);
  uint64_t limit = 280 * CELL;
  circuits_set_max_mem_in_queues(limit);
  ck_assert_uint_eq(circuits_max_mem_in_queues(), limit);
  channels_block_flush_for_testing(1, 0);
  queue_drops(0, 100);
  run_loop_for(20000);
  queue_drops(1, 100);
  run_loop_for(20000);
  ck_assert_uint_eq(cell_queues_total_bytes(), 200 * CELL);
  check_stats(0, 0, 0);
  queue_drops(2, 100);
  /* Originated cells never close circuits from inside the sender. */
  ck_assert_uint_eq(cell_queues_total_bytes(), 300 * CELL);
  ck_assert_int_eq(T.r[0].closed, 0);
  run_loop_for(50000);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[0].reason, DESTROY_REASON_RESOURCELIMIT);
  ck_assert_int_eq(T.r[1].closed, 0);
  ck_assert_int_eq(T.r[2].closed, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 200 * CELL);
  ck_assert_uint_le(cell_queues_total_bytes(), low_water(limit));
  check_stats(1, 1, 100 * CELL);
  ck_assert_int_eq(T.n_oom_notices, 1);
  check_notice(1, 100 * CELL, limit);
  /* Our DESTROY reached the relay, which freed its side. */
  wait_or_circuits(2);
  /* Below the limit again: more cells close nothing. */
  queue_drops(1, 50);
  run_loop_for(20000);
  check_stats(1, 1, 100 * CELL);
  ck_assert_int_eq(T.r[1].closed + T.r[2].closed, 0);
}
END_TEST

static void
queue_plan_cb(void *arg)
{
  (void)arg;
  /* Inside one loop callback the loop's cached clock does not move: all
   * these cells are exactly as old as each other. */
  for (int i = 0; i < MAX_CIRCS; i++)
    if (T.plan[i])
      queue_drops(i, T.plan[i]);
}

START_TEST(test_equal_age_biggest_first)
{
  build_circuits(3);
  uint64_t limit = 200 * CELL;
  circuits_set_max_mem_in_queues(limit);
  channels_block_flush_for_testing(1, 0);
  T.plan[0] = 60;
  T.plan[1] = 120;
  T.plan[2] = 60;
  T.queue_timer = evloop_timer_new(T.relay.loop, queue_plan_cb, NULL);
  evloop_timer_schedule(T.queue_timer, 1000);
  run_loop_for(50000);
  /* 240 cells, low-water mark 180: closing the 120-cell circuit is enough;
   * the first-created one (circuit 0) would have been closed if ties were
   * broken by age of the circuit instead of size. */
  ck_assert_int_eq(T.r[1].closed, 1);
  ck_assert_int_eq(T.r[1].reason, DESTROY_REASON_RESOURCELIMIT);
  ck_assert_int_eq(T.r[0].closed, 0);
  ck_assert_int_eq(T.r[2].closed, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 120 * CELL);
  check_stats(1, 1, 120 * CELL);
  ck_assert_int_eq(T.n_oom_notices, 1);
  check_notice(1, 120 * CELL, limit);
}
END_TEST

START_TEST(test_no_limit)
{
  build_circuits(2);
  circuits_set_max_mem_in_queues(0);
  channels_block_flush_for_testing(1, 0);
  queue_drops(0, 400);
  queue_drops(1, 400);
  run_loop_for(50000);
  ck_assert_int_eq(T.r[0].closed + T.r[1].closed, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 800 * CELL);
  check_stats(0, 0, 0);
  ck_assert_int_eq(T.n_oom_notices, 0);
  /* Setting a limit below what is held acts without waiting for the next
   * cell: 800 cells over a limit of 700, low-water 630, so the older of
   * the two goes. */
  circuits_set_max_mem_in_queues(700 * CELL);
  run_loop_for(50000);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[1].closed, 0);
  check_stats(1, 1, 400 * CELL);
}
END_TEST

static size_t
extra_mem(circuit_t *circ)
{
  if (T.extra_for >= 0 && circ == &T.r[T.extra_for].c->base)
    return (size_t)T.extra_bytes;
  return 0;
}

START_TEST(test_extra_memory_counted)
{
  /* Bytes a holder counts in the budget (stream buffers) trigger the
   * handler and count in the usage, and the hook attributes them to their
   * circuit: 290 queued cells + 100 cells' worth of buffers = 390 over a
   * limit of 310 (the cells alone are not), low-water 279, so the two
   * oldest circuits go. */
  build_circuits(3);
  uint64_t limit = 310 * CELL;
  circuits_set_max_mem_in_queues(limit);
  ck_assert_int_eq(circuits_add_extra_mem_fn(extra_mem), 0);
  T.extra_for = 2;
  T.extra_bytes = 100 * CELL;
  channels_block_flush_for_testing(1, 0);
  queue_drops(0, 100);
  run_loop_for(10000);
  queue_drops(1, 100);
  run_loop_for(10000);
  memacct_add(MEMACCT_EXIT_BUF, (size_t)T.extra_bytes);
  queue_drops(2, 90);
  run_loop_for(50000);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[1].closed, 1);
  ck_assert_int_eq(T.r[2].closed, 0);
  check_stats(1, 2, 200 * CELL);
  check_notice(2, 200 * CELL, limit);
  memacct_sub(MEMACCT_EXIT_BUF, (size_t)T.extra_bytes);
}
END_TEST

START_TEST(test_cells_outside_queues)
{
  /* Cells held outside any circuit queue cannot be freed by closing
   * circuits: the handler says so once and then waits for 1/16 of the
   * limit more before scanning the circuits again. */
  build_circuits(1);
  packed_cell_t *held[150];
  for (int i = 0; i < 150; i++)
    held[i] = packed_cell_new();
  channels_block_flush_for_testing(1, 0);
  circuits_set_max_mem_in_queues(100 * CELL);
  run_loop_for(20000);
  ck_assert_int_eq(T.n_futile_warnings, 1);
  check_stats(0, 0, 0);
  /* 150 held + 5 queued <= 150 + 100/16 + 1 = 157: no new scan. */
  queue_drops(0, 5);
  run_loop_for(20000);
  ck_assert_int_eq(T.r[0].closed, 0);
  /* 160 > 157: the circuit now holds cells and is closed. */
  queue_drops(0, 5);
  run_loop_for(20000);
  ck_assert_int_eq(T.r[0].closed, 1);
  check_stats(1, 1, 10 * CELL);
  ck_assert_int_eq(T.n_futile_warnings, 1);
  for (int i = 0; i < 150; i++)
    packed_cell_free(held[i]);
}
END_TEST

/* ---- relay queues --------------------------------------------------- */

/* A relayed cell towards the client, as command.c queues it. */
static int
queue_relayed(or_circuit_t *oc)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0x5a, sizeof(pc->body));
  set_u32(pc->body, oc->p_circ_id);
  pc->body[4] = CELL_RELAY;
  pc->len = CELL_MAX_NETWORK_LEN;
  return or_circuit_queue_backward(oc, pc);
}

START_TEST(test_relayed_cells_close_at_once)
{
  build_circuits(3);
  or_circuit_t *oc[3];
  for (int i = 0; i < 3; i++) {
    oc[i] = or_circuit_find_by_p_id_for_testing(T.r[i].c->base.n_circ_id);
    ck_assert_ptr_nonnull(oc[i]);
  }
  uint64_t limit = 280 * CELL;
  circuits_set_max_mem_in_queues(limit);
  channels_block_flush_for_testing(0, 1);
  for (int i = 0; i < 3; i++) {
    int n = i < 2 ? 100 : 80;
    for (int k = 0; k < n; k++)
      ck_assert_int_eq(queue_relayed(oc[i]), 0);
    run_loop_for(5000);
  }
  ck_assert_uint_eq(cell_queues_total_bytes(), 280 * CELL);
  check_stats(0, 0, 0);
  /* The 281st cell: circuit 0 (oldest) is closed before the call
   * returns; the circuit being queued on is not. Its memory is gone at
   * once; the object stays valid until the reaper runs. */
  ck_assert_int_eq(queue_relayed(oc[2]), 0);
  ck_assert_int_eq(oc[0]->base.marked_for_close, 1);
  ck_assert_int_eq(oc[1]->base.marked_for_close, 0);
  ck_assert_int_eq(oc[2]->base.marked_for_close, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 181 * CELL);
  check_stats(1, 1, 100 * CELL);
  ck_assert_int_eq(T.n_oom_notices, 1);
  check_notice(1, 100 * CELL, limit);
  /* Now circuit 1 holds the oldest cell; when a cell queued on it crosses
   * the limit, it is the one closed, and the call says so. */
  for (int k = 0; k < 99; k++)
    ck_assert_int_eq(queue_relayed(oc[1]), 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 280 * CELL);
  ck_assert_int_eq(queue_relayed(oc[1]), -1);
  ck_assert_int_eq(oc[1]->base.marked_for_close, 1);
  ck_assert_int_eq(oc[2]->base.marked_for_close, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 81 * CELL);
  check_stats(2, 2, 300 * CELL);
  ck_assert_int_eq(T.n_oom_notices, 2);
  /* The clients got DESTROY with reason RESOURCELIMIT (logged by the
   * receiving side, which reports DESTROYED to its owner). */
  wait_for(&T.r[0].closed);
  wait_for(&T.r[1].closed);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[1].closed, 1);
  ck_assert_int_eq(T.r[2].closed, 0);
  ck_assert_int_eq(T.n_destroy_resourcelimit, 2);
}
END_TEST

/* The per-circuit queue limit (circ_max_cell_queue_size): relayed cells
 * past it close the circuit, whatever the memory limit; the limit is the
 * one set, and values below tor's minimum are raised to it. */
START_TEST(test_per_circuit_queue_limit)
{
  int32_t back, fwd;
  circuits_get_max_queued_cells(&back, &fwd);
  ck_assert_int_eq(back, CIRCUIT_MAX_QUEUED_CELLS_DEFAULT);
  ck_assert_int_eq(fwd, CIRCUIT_MAX_QUEUED_CELLS_DEFAULT);
  circuits_set_max_queued_cells(10, -1);
  circuits_get_max_queued_cells(&back, &fwd);
  ck_assert_int_eq(back, CIRCUIT_MAX_QUEUED_CELLS_MIN);
  ck_assert_int_eq(fwd, CIRCUIT_MAX_QUEUED_CELLS_MIN);

  build_circuits(2);
  or_circuit_t *oc[2];
  for (int i = 0; i < 2; i++) {
    oc[i] = or_circuit_find_by_p_id_for_testing(T.r[i].c->base.n_circ_id);
    ck_assert_ptr_nonnull(oc[i]);
  }
  circuits_set_max_queued_cells(60, 1000);
  channels_block_flush_for_testing(0, 1);
  for (int k = 0; k < 60; k++)
    ck_assert_int_eq(queue_relayed(oc[0]), 0);
  ck_assert_int_eq(oc[0]->base.marked_for_close, 0);
  /* The 61st is refused and the circuit closed (RESOURCELIMIT); the
   * other circuit, under the limit, stays. */
  ck_assert_int_eq(queue_relayed(oc[0]), -1);
  ck_assert_int_eq(oc[0]->base.marked_for_close, 1);
  for (int k = 0; k < 60; k++)
    ck_assert_int_eq(queue_relayed(oc[1]), 0);
  ck_assert_int_eq(oc[1]->base.marked_for_close, 0);
  /* A higher limit lets the second circuit queue more. */
  circuits_set_max_queued_cells(100, 1000);
  for (int k = 0; k < 40; k++)
    ck_assert_int_eq(queue_relayed(oc[1]), 0);
  ck_assert_int_eq(oc[1]->base.marked_for_close, 0);
  ck_assert_int_eq(queue_relayed(oc[1]), -1);
  ck_assert_int_eq(oc[1]->base.marked_for_close, 1);
  wait_for(&T.r[0].closed);
  wait_for(&T.r[1].closed);
  ck_assert_int_eq(T.n_destroy_resourcelimit, 2);
  /* Not the memory limit's doing. */
  check_stats(0, 0, 0);
}
END_TEST

#define DOC_LEN (700 * 1000) /* more than a stream window of DATA cells */

/* One shared copy, as a relay serves its consensus: the provider holds
 * it, so closing a stream frees only the stream's own bytes and the
 * handler's figures here are the queued cells'. */
static dircache_doc_t *shared_doc;

static dircache_doc_t *
doc_provider(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  if (!shared_doc) {
    uint8_t *b = malloc(DOC_LEN);
    memset(b, 0x42, DOC_LEN);
    shared_doc = dircache_doc_new(b, DOC_LEN, 1);
  }
  return dircache_doc_ref(shared_doc);
}

/* Ask the relay for a document without waiting for CONNECTED (which is
 * stuck behind the blocked channel): it queues a stream window of DATA
 * cells from inside the stream code. */
static void
start_download(int i)
{
  const char *req = "GET /test/doc HTTP/1.0\r\n\r\n";
  ck_assert_int_eq(origin_circuit_send_relay(T.r[i].c, 0,
                                             RELAY_COMMAND_BEGIN_DIR, 9,
                                             NULL, 0),
                   0);
  ck_assert_int_eq(origin_circuit_send_relay(T.r[i].c, 0, RELAY_COMMAND_DATA,
                                             9, (const uint8_t *)req,
                                             (uint16_t)strlen(req)),
                   0);
}

START_TEST(test_stream_data_oldest_first)
{
  dircache_init(channels_loop());
  dircache_register("/test/doc", doc_provider, NULL);
  build_circuits(3);
  uint64_t limit = 700 * CELL;
  circuits_set_max_mem_in_queues(limit);
  channels_block_flush_for_testing(0, 1);
  start_download(0);
  wait_for_cells(1 + STREAMWINDOW_START);
  /* CONNECTED and a stream window of DATA. */
  ck_assert_uint_eq(cell_queues_total_bytes(),
                    (1 + STREAMWINDOW_START) * CELL);
  start_download(1);
  wait_for(&T.r[0].closed);
  run_loop_for(100000);
  /* 1002 cells > 700: the first download's circuit is closed; the second
   * (501 cells <= 630) and the idle third survive. */
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[1].closed, 0);
  ck_assert_int_eq(T.r[2].closed, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(),
                    (1 + STREAMWINDOW_START) * CELL);
  ck_assert_uint_le(cell_queues_total_bytes(), low_water(limit));
  check_stats_dir(1, 1, (1 + STREAMWINDOW_START) * CELL);
  ck_assert_int_eq(T.n_oom_notices, 1);
  ck_assert_int_eq(T.n_destroy_resourcelimit, 1);
  wait_or_circuits(2);
  dircache_shutdown();
  dircache_doc_retire(shared_doc);
  shared_doc = NULL;
}
END_TEST

/* A document whose compressed forms are a cache of real size: 64 kB of
 * random letters. */
static dircache_doc_t *rnd_doc;

static dircache_doc_t *
rnd_provider(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  if (!rnd_doc) {
    size_t n = 64 * 1024;
    uint8_t *b = malloc(n);
    uint32_t x = 7;
    for (size_t i = 0; i < n; i++) {
      x = x * 1103515245u + 12345u;
      b[i] = (uint8_t)('a' + (x >> 16) % 26);
    }
    rnd_doc = dircache_doc_new(b, n, 1);
  }
  return dircache_doc_ref(rnd_doc);
}

START_TEST(test_caches_freed_first)
{
  /* Queued cells under the limit plus a directory cache's compressed
   * copies over it: the handler frees the copies (they can be made
   * again) and closes nothing. */
  dircache_init(channels_loop());
  dircache_register("/test/rnd", rnd_provider, NULL);
  build_circuits(1);
  channels_block_flush_for_testing(1, 0);
  queue_drops(0, 50);
  run_loop_for(20000);
  uint64_t t0 = memacct_total();
  size_t len = 0;
  free(dircache_answer("GET /test/rnd HTTP/1.0\r\n"
                       "Accept-Encoding: x-zstd\r\n\r\n", &len));
  free(dircache_answer("GET /test/rnd.z HTTP/1.0\r\n\r\n", &len));
  uint64_t copies = memacct_get(MEMACCT_DIRCOPIES);
  ck_assert_uint_gt(copies, 32 * 1024);
  ck_assert_uint_ge(memacct_total() - t0, copies);
  circuits_set_max_mem_in_queues(t0 + copies / 2);
  run_loop_for(50000);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCOPIES), 0);
  ck_assert_int_eq(T.r[0].closed, 0);
  circuits_oom_stats_t st;
  circuits_get_oom_stats(&st);
  ck_assert_uint_eq(st.cache_bytes_freed, copies);
  check_stats(0, 0, 0);
  /* MetricsPort says so, under tor's series of what the OOM freed. */
  char *m = metrics_render();
  char want[128];
  snprintf(want, sizeof(want),
           "tor_relay_load_oom_bytes_total{subsys=\"dircache\"} %llu\n",
           (unsigned long long)copies);
  ck_assert_msg(strstr(m, want) != NULL, "no '%s' in the metrics", want);
  free(m);
  ck_assert_int_eq(T.n_futile_warnings, 0);
  /* Cells over the limit still close the circuit (nothing left to free
   * in the cache). */
  queue_drops(0, (int)(copies / CELL) + 1);
  run_loop_for(50000);
  ck_assert_int_eq(T.r[0].closed, 1);
  circuits_get_oom_stats(&st);
  ck_assert_uint_eq(st.cache_bytes_freed, copies);
  dircache_shutdown();
  dircache_doc_retire(rnd_doc);
  rnd_doc = NULL;
}
END_TEST

START_TEST(test_stream_sender_closed_later)
{
  /* The limit is crossed while the stream code is packaging data on the
   * very circuit that must be closed: closing it there would free the
   * stream under the sender (ASan would see it). It is closed from the
   * deferred check instead, after the sender returned. */
  dircache_init(channels_loop());
  dircache_register("/test/doc", doc_provider, NULL);
  build_circuits(2);
  circuits_set_max_mem_in_queues(300 * CELL);
  channels_block_flush_for_testing(0, 1);
  start_download(0);
  wait_for(&T.r[0].closed);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(T.r[1].closed, 0);
  ck_assert_uint_eq(cell_queues_total_bytes(), 0);
  check_stats_dir(1, 1, (1 + STREAMWINDOW_START) * CELL);
  ck_assert_int_eq(T.n_destroy_resourcelimit, 1);
  wait_or_circuits(1);
  dircache_shutdown();
  dircache_doc_retire(shared_doc);
  shared_doc = NULL;
}
END_TEST

/* ---- connection buffers ------------------------------------------- */

static uint64_t fake_now;

static uint64_t
fake_clock(void)
{
  return fake_now;
}

/* A listed channel over a socketpair whose other end (*peer) is never
 * read, with `bytes` in its output buffer that arrived at `when`. */
static channel_t *
stuffed_channel(int *peer, size_t bytes, uint64_t when)
{
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                   0);
  static uint8_t junk[65536];
  /* The socket is full: nothing leaves the output buffer. */
  while (write(sv[0], junk, sizeof(junk)) > 0)
    ;
  channel_t *ch = channel_new_listed_plain_for_testing(sv[0]);
  buf_set_clock_for_testing(fake_clock);
  fake_now = when;
  buf_t *out = channel_outbuf_for_testing(ch);
  for (size_t k = 0; k < bytes; k += sizeof(junk))
    buf_add(out, junk, sizeof(junk));
  buf_set_clock_for_testing(NULL);
  ck_assert_uint_eq(channel_oldest_data_us(ch), when);
  ck_assert_uint_ge(channel_buffered_alloc(ch), bytes);
  *peer = sv[1];
  return ch;
}

static void
check_conn_stats(uint64_t circs, uint64_t conns)
{
  circuits_oom_stats_t st;
  circuits_get_oom_stats(&st);
  ck_assert_uint_eq(st.n_circuits_killed, circs);
  ck_assert_uint_eq(st.n_conns_killed, conns);
}

/* Whether the channel with this global ID is closing or already gone
 * (the loop may free a closed channel: never read one through a kept
 * pointer after running the loop). */
static int
chan_closed(uint64_t id)
{
  channel_t *c = channel_find_by_global_id(id);
  return !c || channel_is_closing(c);
}

START_TEST(test_connection_buffers_oldest_first)
{
  /* No circuit holds anything: three connections hold 1, 3 and 1 MiB,
   * oldest first. Over a limit of 4.5 MiB, the oldest one (1 MiB) is
   * enough to return under 90% of it; the bigger, younger one stays. */
  const uint64_t MB = UINT64_C(1) << 20;
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 0);
  uint64_t now = evloop_now_us(T.relay.loop);
  int pa, pb, pc;
  channel_t *a = stuffed_channel(&pa, 1 * MB, now - 3000000);
  channel_t *b = stuffed_channel(&pb, 3 * MB, now - 2000000);
  channel_t *c = stuffed_channel(&pc, 1 * MB, now - 1000000);
  uint64_t ida = channel_global_id(a), idb = channel_global_id(b),
           idc = channel_global_id(c);
  uint64_t limit = 9 * MB / 2;
  ck_assert_uint_gt(memacct_total(), limit);
  circuits_set_max_mem_in_queues(limit);
  run_loop_for(20000);
  ck_assert_int_eq(chan_closed(ida), 1);
  ck_assert_int_eq(chan_closed(idb), 0);
  ck_assert_int_eq(chan_closed(idc), 0);
  ck_assert_uint_le(memacct_total(), low_water(limit));
  check_conn_stats(0, 1);
  ck_assert_int_eq(T.n_oom_notices, 1);
  ck_assert_msg(strstr(T.oom_notice, "Closed 0 circuits and 1 connection ")
                    != NULL, "%s", T.oom_notice);
  ck_assert_int_eq(T.n_futile_warnings, 0);
  channel_close(b, "test over");
  channel_close(c, "test over");
  run_loop_for(20000);
  ck_assert_uint_eq(memacct_get(MEMACCT_CHAN_BUF), 0);
  close(pa);
  close(pb);
  close(pc);
}
END_TEST

START_TEST(test_circuits_and_connections_by_age)
{
  /* A circuit whose cells are older than any connection's data goes
   * first, then the older connection; the younger one stays. */
  const uint64_t MB = UINT64_C(1) << 20;
  build_circuits(1);
  channels_block_flush_for_testing(1, 0);
  queue_drops(0, 100);
  run_loop_for(20000);
  ck_assert_uint_eq(cell_queues_total_bytes(), 100 * CELL);
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 0);
  uint64_t now = evloop_now_us(T.relay.loop);
  int px, py;
  channel_t *x = stuffed_channel(&px, 2 * MB, now + 1000000);
  channel_t *y = stuffed_channel(&py, 2 * MB, now + 2000000);
  uint64_t idx = channel_global_id(x), idy = channel_global_id(y);
  /* Closing the circuit alone is not enough, the circuit and x are. */
  uint64_t limit = 3 * MB;
  ck_assert_uint_gt(memacct_total(), limit);
  circuits_set_max_mem_in_queues(limit);
  run_loop_for(20000);
  ck_assert_int_eq(T.r[0].closed, 1);
  ck_assert_int_eq(chan_closed(idx), 1);
  ck_assert_int_eq(chan_closed(idy), 0);
  ck_assert_uint_le(memacct_total(), low_water(limit));
  check_conn_stats(1, 1);
  ck_assert_msg(strstr(T.oom_notice, "Closed 1 circuit and 1 connection ")
                    != NULL, "%s", T.oom_notice);
  channel_close(y, "test over");
  channels_block_flush_for_testing(0, 0);
  wait_or_circuits(0);
  close(px);
  close(py);
}
END_TEST

/* ---- the default limit ------------------------------------------------ */

START_TEST(test_default_max_mem)
{
  /* Tor's documented rule (changelogs for tickets 11396 and 24782): 3/4
   * of RAM, 2/5 from 8 GB on, clamped to [256 MB, 8 GB] on 64-bit;
   * unknown RAM: 8 GB. */
  const uint64_t MB = UINT64_C(1) << 20, GB = UINT64_C(1) << 30;
  if (sizeof(void *) >= 8) {
    ck_assert_uint_eq(circuits_max_mem_for_ram(0), 8 * GB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(128 * MB), 256 * MB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(300 * MB), 256 * MB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(512 * MB), 384 * MB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(1 * GB), 768 * MB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(4 * GB), 3 * GB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(7 * GB), 5376 * MB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(8 * GB),
                      UINT64_C(3435973836)); /* (8 GB / 5) * 2 */
    ck_assert_uint_eq(circuits_max_mem_for_ram(16 * GB),
                      UINT64_C(6871947672));
    ck_assert_uint_eq(circuits_max_mem_for_ram(20 * GB), 8 * GB);
    ck_assert_uint_eq(circuits_max_mem_for_ram(256 * GB), 8 * GB);
  }
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  ck_assert(pages > 0 && psz > 0);
  uint64_t d = circuits_default_max_mem();
  ck_assert_uint_eq(d, circuits_max_mem_for_ram((uint64_t)pages *
                                                (uint64_t)psz));
  ck_assert_uint_ge(d, 256 * MB);
  ck_assert_uint_le(d, 8 * GB);
}
END_TEST

Suite *
suite_oom(void)
{
  Suite *s = suite_create("oom");
  TCase *tc = tcase_create("loopback");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_oldest_queue_closed_first);
  tcase_add_test(tc, test_equal_age_biggest_first);
  tcase_add_test(tc, test_no_limit);
  tcase_add_test(tc, test_extra_memory_counted);
  tcase_add_test(tc, test_cells_outside_queues);
  tcase_add_test(tc, test_relayed_cells_close_at_once);
  tcase_add_test(tc, test_per_circuit_queue_limit);
  tcase_add_test(tc, test_stream_data_oldest_first);
  tcase_add_test(tc, test_stream_sender_closed_later);
  tcase_add_test(tc, test_caches_freed_first);
  tcase_add_test(tc, test_connection_buffers_oldest_first);
  tcase_add_test(tc, test_circuits_and_connections_by_age);
  suite_add_tcase(s, tc);
  TCase *td = tcase_create("default");
  tcase_add_test(td, test_default_max_mem);
  suite_add_tcase(s, td);
  return s;
}
