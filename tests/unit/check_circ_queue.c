/* SPDX-License-Identifier: BSD-3-Clause */
/* check_circ_queue.c -- a circuit's per-direction cell queue
 * (core/or/circ_queue.h).
 *
 * The queue is tested on its own terms: who owns a pushed cell (the queue,
 * or nobody when there is no channel or it is closing: freed at once, as
 * packed_cells_allocated() shows), that a push hands the queue to the
 * scheduler and a clear takes it back out and frees every cell, and the
 * per-command counts for CELL_STATS (counted only while switched on,
 * allocated lazily, which commands count, taken and reset). The channel is
 * a real channel_t on a socketpair; the event loop never runs, so the
 * scheduler never moves a cell and the queue's contents stay observable.
 * How the scheduler drains queues is check_scheduler.c's subject.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/or/channel_internal.h"
#include "core/or/circ_queue.h"
#include "core/or/scheduler.h"
#include "lib/evloop/evloop.h"

Suite *suite_circ_queue(void);

static evloop_t *loop;
static channel_t *chan;
static int peer_fd = -1;
static uint64_t now_us;

static void
setup(void)
{
  int sv[2];
  loop = evloop_new();
  now_us = 1000000;
  scheduler_set_clock_for_testing(&now_us);
  scheduler_config_t cfg;
  scheduler_config_default(&cfg);
  scheduler_configure(&cfg);
  scheduler_init(loop);
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  peer_fd = sv[1];
  chan = channel_new_plain_for_testing(loop, sv[0]);
}

static void
teardown(void)
{
  circ_queues_count_commands(0);
  channel_free_plain_for_testing(chan);
  chan = NULL;
  close(peer_fd);
  scheduler_shutdown();
  scheduler_set_clock_for_testing(NULL);
  evloop_free(loop);
}

/* A packed fixed-size cell with command cmd: 4-byte circuit ID, or len
 * bytes when given (2-byte circuit ID, or too short for a cell). */
static packed_cell_t *
cell(uint8_t cmd, uint16_t len)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, sizeof(pc->body));
  pc->len = len ? len : 4 + 1 + CELL_PAYLOAD_LEN;
  if (pc->len >= 2 + 1 + CELL_PAYLOAD_LEN)
    pc->body[pc->len - CELL_PAYLOAD_LEN - 1] = cmd;
  pc->queued_us = now_us;
  return pc;
}

START_TEST(test_init)
{
  circ_queue_t cq;
  memset(&cq, 0xa5, sizeof(cq));
  circ_queue_init(&cq, NULL);
  ck_assert_uint_eq(cq.cells.n, 0);
  ck_assert_ptr_null(cq.cells.head);
  ck_assert_ptr_null(cq.chan);
  ck_assert_ptr_null(cq.cmd_stats);
  ck_assert_int_eq(cq.heap_idx, MINHEAP_IDX_NONE);
  ck_assert_uint_eq(cq.stats.cells_sent, 0);
  /* clearing an empty queue that was never scheduled is fine */
  circ_queue_clear(&cq);
  ck_assert_int_eq(cq.heap_idx, MINHEAP_IDX_NONE);
}
END_TEST

/* Nothing would ever send a cell pushed without a channel, or to a closing
 * one: the queue frees it at once instead of keeping it. */
START_TEST(test_push_without_channel_frees)
{
  circ_queue_t cq;
  circ_queue_init(&cq, NULL);
  uint64_t base = packed_cells_allocated();
  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  ck_assert_uint_eq(packed_cells_allocated(), base);
  ck_assert_uint_eq(cq.cells.n, 0);
  ck_assert_int_eq(cq.heap_idx, MINHEAP_IDX_NONE);

  cq.chan = chan;
  chan->close_pending = 1;
  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  ck_assert_uint_eq(packed_cells_allocated(), base);
  ck_assert_uint_eq(cq.cells.n, 0);
  ck_assert_int_eq(cq.heap_idx, MINHEAP_IDX_NONE);
  chan->close_pending = 0;
  circ_queue_clear(&cq);
}
END_TEST

/* Pushed cells stay queued in order, the queue is in its channel's heap
 * once however many cells it holds, and a clear frees them all and leaves
 * the heap; the queue can be used again afterwards. */
START_TEST(test_push_and_clear)
{
  circ_queue_t a, b;
  circ_queue_init(&a, NULL);
  circ_queue_init(&b, NULL);
  a.chan = b.chan = chan;
  uint64_t base = packed_cells_allocated();
  packed_cell_t *first = cell(CELL_RELAY, 0);
  circ_queue_push(&a, first);
  ck_assert_int_ne(a.heap_idx, MINHEAP_IDX_NONE);
  ck_assert_uint_eq(minheap_len(chan->sched_queues), 1);
  for (int i = 0; i < 4; i++)
    circ_queue_push(&a, cell(CELL_RELAY, 0));
  circ_queue_push(&b, cell(CELL_DESTROY, 0));
  ck_assert_uint_eq(a.cells.n, 5);
  ck_assert_uint_eq(b.cells.n, 1);
  ck_assert_ptr_eq(a.cells.head, first);
  ck_assert_uint_eq(minheap_len(chan->sched_queues), 2);
  ck_assert_uint_eq(packed_cells_allocated(), base + 6);

  circ_queue_clear(&a);
  ck_assert_uint_eq(a.cells.n, 0);
  ck_assert_int_eq(a.heap_idx, MINHEAP_IDX_NONE);
  ck_assert_uint_eq(minheap_len(chan->sched_queues), 1);
  ck_assert_uint_eq(packed_cells_allocated(), base + 1);

  circ_queue_push(&a, cell(CELL_RELAY, 0));
  ck_assert_uint_eq(a.cells.n, 1);
  ck_assert_int_ne(a.heap_idx, MINHEAP_IDX_NONE);
  circ_queue_clear(&a);
  circ_queue_clear(&b);
  ck_assert_uint_eq(minheap_len(chan->sched_queues), 0);
  ck_assert_uint_eq(packed_cells_allocated(), base);
}
END_TEST

/* CELL_STATS counts: none (and no allocation) while counting is off;
 * while on, every fixed-size cell's command is counted when it is queued
 * and when the scheduler reports it removed; a cell too short to be one,
 * or with a command no circuit queue holds, is not counted. Taking the
 * counts resets them; a clear frees them. */
START_TEST(test_cmd_stats)
{
  circ_queue_t cq;
  circ_queue_cmd_stats_t st;
  circ_queue_init(&cq, NULL);
  cq.chan = chan;

  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  ck_assert_ptr_null(cq.cmd_stats);
  ck_assert_int_eq(circ_queue_take_cmd_stats(&cq, &st), 0);
  ck_assert_uint_eq(st.added[CELL_RELAY], 0);

  circ_queues_count_commands(1);
  circ_queue_push(&cq, cell(200, 0));      /* not a queue command */
  circ_queue_push(&cq, cell(CELL_RELAY, 100)); /* too short */
  ck_assert_ptr_null(cq.cmd_stats);
  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  circ_queue_push(&cq, cell(CELL_DESTROY, 0));
  /* a link-protocol-3 cell (2-byte circuit ID) counts too */
  circ_queue_push(&cq, cell(CELL_PADDING, 2 + 1 + CELL_PAYLOAD_LEN));
  ck_assert_ptr_nonnull(cq.cmd_stats);

  packed_cell_t *relay = cell(CELL_RELAY, 0);
  circ_queue_note_removed(&cq, relay, 1500);
  circ_queue_note_removed(&cq, relay, 500);
  packed_cell_free(relay);
  packed_cell_t *odd = cell(CIRC_QUEUE_N_CMDS, 0);
  circ_queue_note_removed(&cq, odd, 700);
  packed_cell_free(odd);

  ck_assert_int_eq(circ_queue_take_cmd_stats(&cq, &st), 1);
  ck_assert_uint_eq(st.added[CELL_RELAY], 2);
  ck_assert_uint_eq(st.added[CELL_DESTROY], 1);
  ck_assert_uint_eq(st.added[CELL_PADDING], 1);
  ck_assert_uint_eq(st.removed[CELL_RELAY], 2);
  ck_assert_uint_eq(st.removed_us[CELL_RELAY], 2000);
  uint64_t total = 0;
  for (int i = 0; i < CIRC_QUEUE_N_CMDS; i++)
    total += st.added[i];
  ck_assert_uint_eq(total, 4);

  /* taken: zero until more cells come */
  ck_assert_int_eq(circ_queue_take_cmd_stats(&cq, &st), 0);
  ck_assert_uint_eq(st.added[CELL_RELAY], 0);
  ck_assert_uint_eq(st.removed[CELL_RELAY], 0);

  circ_queue_clear(&cq);
  ck_assert_ptr_null(cq.cmd_stats);
  ck_assert_int_eq(circ_queue_take_cmd_stats(&cq, &st), 0);

  /* switched off again: a new cell is not counted */
  circ_queues_count_commands(0);
  circ_queue_push(&cq, cell(CELL_RELAY, 0));
  ck_assert_ptr_null(cq.cmd_stats);
  circ_queue_clear(&cq);
}
END_TEST

Suite *
suite_circ_queue(void)
{
  Suite *s = suite_create("circ_queue");
  TCase *tc = tcase_create("queue");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_init);
  tcase_add_test(tc, test_push_without_channel_frees);
  tcase_add_test(tc, test_push_and_clear);
  tcase_add_test(tc, test_cmd_stats);
  suite_add_tcase(s, tc);
  return s;
}
