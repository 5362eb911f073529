/* SPDX-License-Identifier: BSD-3-Clause */
/* check_conflux.c -- unit tests for feature/conflux (proposal 329).
 *
 * Vectors come from tests/vectors/conflux_ref.py, a reference written from
 * proposal 329 sections 2.2 and 2.6 (run by hand; its output is pasted
 * below):
 *  - the LINK/LINKED and SWITCH bodies, byte for byte;
 *  - a sender following the leg plan A10 B21 A5 B3 A1 C4 A2 (the
 *    proposal's example extended to three legs): the SWITCH values each
 *    leg carries, and the receiver's recovery of every message number
 *    when legs arrive one after the other (B, then C, then A: the worst
 *    reordering).
 * Also: malformed bodies (version, length, UX) and tor 0.4.8's padded
 * SWITCH; the out-of-order queue bound; repeated numbers; the schedulers
 * (MinRTT holds back, LowRTT falls over to the leg with room, the
 * proportional splitter follows cwnd/RTT); tor's rules for closing a leg
 * and for the data-loss check; the leg limit.
 *
 * The exit role (conflux_exit.c with core's multiplexing hooks) is driven
 * end to end over loopback: one-hop circuits to a relay in this process,
 * each negotiating congestion control in ntor v3, linked by CONFLUX_LINK.
 * Checked: LINKED's body; messages sent out of order over two legs (a
 * SWITCH first) reach the stream in order; the relay's replies come back
 * over the legs; what the exit refuses as tor does (no congestion control,
 * a malformed LINK, LINKED sent to a relay, LINKED_ACK or SWITCH on an
 * unlinked circuit, a second LINKED_ACK, a short SWITCH, a ninth leg, data
 * loss); the out-of-order bound closing every leg; the streams moving
 * to another leg when their circuit closes while the set goes on; and the
 * out-of-order queue counting in MaxMemInQueues: its bytes are charged to
 * the leg that received furthest, which the memory handler then closes
 * first (and the set with it).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/create.h"
#include "core/proto/relay_msg.h"
#include "feature/conflux/conflux.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_set.h"
#include "feature/relay/extend.h"
#include "feature/relay/router_keys.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/memacct.h"

Suite *suite_conflux(void);

/* ---- cells ---- */

static const uint8_t link_vec[] =
    "\x01\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x01"
    "\x02\x03\x04\x05\x06\x07\x08\x00\x00\x00\x00\x00\x00\x00\x2a\x03";
static const uint8_t linked_vec[] =
    "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
    "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01";

START_TEST(test_link_vectors)
{
  cfx_link_t l;
  memset(&l, 0, sizeof(l));
  for (int i = 0; i < 32; i++)
    l.nonce[i] = (uint8_t)i;
  l.last_seq_sent = 0x0102030405060708ULL;
  l.last_seq_recv = 42;
  l.desired_ux = CFX_UX_HIGH_THROUGHPUT;
  uint8_t out[64];
  ck_assert_int_eq(cfx_link_encode(&l, out, sizeof(out)), 50);
  ck_assert_int_eq(sizeof(link_vec) - 1, 50);
  ck_assert_mem_eq(out, link_vec, 50);
  ck_assert_int_eq(cfx_link_encode(&l, out, 49), -1);

  cfx_link_t p;
  const char *why;
  ck_assert_int_eq(cfx_link_parse(&p, link_vec, 50, &why), 0);
  ck_assert_mem_eq(p.nonce, l.nonce, 32);
  ck_assert_uint_eq(p.last_seq_sent, 0x0102030405060708ULL);
  ck_assert_uint_eq(p.last_seq_recv, 42);
  ck_assert_uint_eq(p.desired_ux, 3);

  memset(&l, 0, sizeof(l));
  memset(l.nonce, 0xff, 32);
  l.desired_ux = CFX_UX_MIN_LATENCY;
  ck_assert_int_eq(cfx_link_encode(&l, out, sizeof(out)), 50);
  ck_assert_mem_eq(out, linked_vec, 50);
}
END_TEST

START_TEST(test_link_malformed)
{
  uint8_t b[498];
  cfx_link_t p;
  const char *why;
  memset(b, 0, sizeof(b));
  memcpy(b, link_vec, 50);
  /* Trailing bytes are ignored (tor's trunnel parse). */
  ck_assert_int_eq(cfx_link_parse(&p, b, sizeof(b), &why), 0);
  ck_assert_int_eq(cfx_link_parse(&p, b, 0, &why), -1);
  ck_assert_ptr_nonnull(why);
  ck_assert_int_eq(cfx_link_parse(&p, b, 49, &why), -1);
  ck_assert_int_eq(cfx_link_parse(&p, b, 1, &why), -1);
  b[0] = 2;
  ck_assert_int_eq(cfx_link_parse(&p, b, 50, &why), -1);
  b[0] = 0;
  ck_assert_int_eq(cfx_link_parse(&p, b, 50, &why), -1);
  b[0] = 1;
  for (int ux = 0; ux < 256; ux++) {
    b[49] = (uint8_t)ux;
    ck_assert_int_eq(cfx_link_parse(&p, b, 50, &why), ux <= 4 ? 0 : -1);
  }
  cfx_link_t l;
  memset(&l, 0, sizeof(l));
  l.desired_ux = 5;
  ck_assert_int_eq(cfx_link_encode(&l, b, sizeof(b)), -1);
}
END_TEST

START_TEST(test_switch_cells)
{
  uint8_t out[8];
  ck_assert_int_eq(cfx_switch_encode(0x01020304, out, sizeof(out)), 4);
  ck_assert_mem_eq(out, "\x01\x02\x03\x04", 4);
  ck_assert_int_eq(cfx_switch_encode(21, out, sizeof(out)), 4);
  ck_assert_mem_eq(out, "\x00\x00\x00\x15", 4);
  ck_assert_int_eq(cfx_switch_encode(21, out, 3), -1);
  uint32_t v = 0;
  const char *why;
  ck_assert_int_eq(cfx_switch_parse(out, 4, &v, &why), 0);
  ck_assert_uint_eq(v, 21);
  /* tor 0.4.8 sends the SWITCH in a full 498-byte body. */
  uint8_t padded[498];
  memset(padded, 0, sizeof(padded));
  memcpy(padded, "\x00\x00\x01\x00", 4);
  ck_assert_int_eq(cfx_switch_parse(padded, sizeof(padded), &v, &why), 0);
  ck_assert_uint_eq(v, 256);
  ck_assert_int_eq(cfx_switch_parse(padded, 3, &v, &why), -1);
  ck_assert_ptr_nonnull(why);
  ck_assert_int_eq(cfx_switch_parse(padded, 0, &v, &why), -1);
}
END_TEST

START_TEST(test_ux_names)
{
  ck_assert_int_eq(cfx_ux_from_name("throughput"), CFX_UX_HIGH_THROUGHPUT);
  ck_assert_int_eq(cfx_ux_from_name("latency"), CFX_UX_MIN_LATENCY);
  ck_assert_int_eq(cfx_ux_from_name("throughput_lowmem"),
                   CFX_UX_LOW_MEM_THROUGHPUT);
  ck_assert_int_eq(cfx_ux_from_name("latency_lowmem"),
                   CFX_UX_LOW_MEM_LATENCY);
  ck_assert_int_eq(cfx_ux_from_name("Throughput"), -1);
  ck_assert_int_eq(cfx_ux_from_name(NULL), -1);
  ck_assert_str_eq(cfx_ux_name(CFX_UX_HIGH_THROUGHPUT), "throughput");
  /* tor's mapping from the peer's wish to the sender's scheduler. */
  ck_assert_int_eq(cfx_alg_for_ux(CFX_UX_HIGH_THROUGHPUT), CFX_ALG_LOWRTT);
  ck_assert_int_eq(cfx_alg_for_ux(CFX_UX_NO_OPINION), CFX_ALG_LOWRTT);
  ck_assert_int_eq(cfx_alg_for_ux(CFX_UX_MIN_LATENCY), CFX_ALG_MINRTT);
  ck_assert_int_eq(cfx_alg_for_ux(CFX_UX_LOW_MEM_LATENCY), CFX_ALG_MINRTT);
  ck_assert_int_eq(cfx_alg_for_ux(CFX_UX_LOW_MEM_THROUGHPUT), CFX_ALG_MINRTT);
  ck_assert_int_eq(cfx_alg_from_name("proportional"), CFX_ALG_PROPORTIONAL);
  ck_assert_int_eq(cfx_alg_from_name("lowrtt"), CFX_ALG_LOWRTT);
  ck_assert_int_eq(cfx_alg_from_name("minrtt"), CFX_ALG_MINRTT);
  ck_assert_int_eq(cfx_alg_from_name("x"), -1);
}
END_TEST

/* ---- legs: a test state per handle ---- */

typedef struct {
  cfx_leg_state_t st;
} tleg_t;

static void
tstate(void *handle, cfx_leg_state_t *out)
{
  *out = ((tleg_t *)handle)->st;
}

static const uint8_t nonce0[CFX_NONCE_LEN];

static tleg_t *
tleg(uint64_t cwnd, uint64_t inflight, uint64_t rtt_us)
{
  tleg_t *t = calloc(1, sizeof(*t));
  t->st.cwnd = cwnd;
  t->st.inflight = inflight;
  t->st.rtt_us = rtt_us;
  t->st.sendme_inc = 31;
  return t;
}

/* The reference's per-leg events for the plan A10 B21 A5 B3 A1 C4 A2:
 * positive = message number, negative = SWITCH with that value. */
static const int ev_a[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, -21,
                           32, 33, 34, 35, 36, -3, 40, -4, 45, 46};
static const int ev_b[] = {-10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                           23,  24, 25, 26, 27, 28, 29, 30, 31, -5, 37, 38, 39};
static const int ev_c[] = {-40, 41, 42, 43, 44};
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Feed one leg's events; append delivered message numbers to got. */
static void
feed(cfx_set_t *set, cfx_leg_t *leg, const int *ev, size_t n, int *got,
     int *n_got)
{
  for (size_t i = 0; i < n; i++) {
    if (ev[i] < 0) {
      ck_assert_int_eq(cfx_set_on_switch(set, leg, (uint32_t)-ev[i]), 0);
      continue;
    }
    uint8_t body[4];
    body[0] = (uint8_t)ev[i];
    int r = cfx_set_on_msg(set, leg, RELAY_COMMAND_DATA, 7, body, 1);
    ck_assert_int_ge(r, 0);
    if (r == CFX_RECV_DELIVER) {
      got[(*n_got)++] = ev[i];
      cfx_msg_t *m;
      int k;
      while ((k = cfx_set_next(set, &m)) == 1) {
        ck_assert_uint_eq(m->command, RELAY_COMMAND_DATA);
        ck_assert_uint_eq(m->stream_id, 7);
        ck_assert_uint_eq(m->len, 1);
        got[(*n_got)++] = m->body[0];
        cfx_set_msg_release(set, m);
      }
      ck_assert_int_eq(k, 0);
    }
  }
}

START_TEST(test_receive_reorders)
{
  tleg_t *a = tleg(100, 0, 1000), *b = tleg(100, 0, 1000),
         *c = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 100, tstate);
  cfx_leg_t *la = cfx_set_add_leg(set, a, 0, 0);
  cfx_leg_t *lb = cfx_set_add_leg(set, b, 0, 0);
  cfx_leg_t *lc = cfx_set_add_leg(set, c, 0, 0);
  int got[64], n = 0;
  feed(set, lb, ev_b, N_ELEMS(ev_b), got, &n);
  ck_assert_int_eq(n, 0);
  ck_assert_uint_eq(set->n_queued, 24);
  feed(set, lc, ev_c, N_ELEMS(ev_c), got, &n);
  ck_assert_int_eq(n, 0);
  feed(set, la, ev_a, N_ELEMS(ev_a), got, &n);
  ck_assert_int_eq(n, 46);
  for (int i = 0; i < 46; i++)
    ck_assert_int_eq(got[i], i + 1);
  ck_assert_uint_eq(set->n_queued, 0);
  ck_assert_uint_eq(set->last_seq_delivered, 46);
  ck_assert_uint_eq(cfx_set_max_recv(set), 46);
  /* Released messages are kept for reuse, up to the largest queue. */
  ck_assert_uint_le(set->n_free, set->max_queued_seen);
  ck_assert_uint_gt(set->n_free, 0);
  cfx_set_free(set);
  free(a);
  free(b);
  free(c);
}
END_TEST

START_TEST(test_receive_interleaved)
{
  /* Round-robin over the legs, one event at a time. */
  tleg_t *a = tleg(100, 0, 1000), *b = tleg(100, 0, 1000),
         *c = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *l[3] = {cfx_set_add_leg(set, a, 0, 0),
                     cfx_set_add_leg(set, b, 0, 0),
                     cfx_set_add_leg(set, c, 0, 0)};
  const int *ev[3] = {ev_a, ev_b, ev_c};
  size_t len[3] = {N_ELEMS(ev_a), N_ELEMS(ev_b), N_ELEMS(ev_c)}, pos[3] = {0};
  int got[64], n = 0;
  for (int round = 0; round < 40; round++)
    for (int k = 2; k >= 0; k--)
      if (pos[k] < len[k]) {
        feed(set, l[k], ev[k] + pos[k], 1, got, &n);
        pos[k]++;
      }
  ck_assert_int_eq(n, 46);
  for (int i = 0; i < 46; i++)
    ck_assert_int_eq(got[i], i + 1);
  cfx_set_free(set);
  free(a);
  free(b);
  free(c);
}
END_TEST

/* The sender's reordering window: a fast leg that acknowledges at once
 * runs CFX_SEND_WINDOW messages ahead of one still unacknowledged on a
 * slow leg, then DATA goes on the slow leg, or waits for its SENDME. */
START_TEST(test_send_window)
{
  uint64_t mem0 = memacct_get(MEMACCT_CONFLUX);
  tleg_t *fast = tleg(100000, 0, 1000), *slow = tleg(100000, 0, 50000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *lf = cfx_set_add_leg(set, fast, 0, 0);
  cfx_leg_t *ls = cfx_set_add_leg(set, slow, 0, 0);
  int sw;
  uint32_t rel;
  /* One DATA on the slow leg (the fast one is full); it stays in flight. */
  fast->st.inflight = 100000;
  cfx_leg_t *leg = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
  ck_assert_ptr_eq(leg, ls);
  cfx_set_note_sent(set, leg, RELAY_COMMAND_DATA);
  slow->st.inflight = 1;
  /* The fast leg's cells are acknowledged at once: it carries the next
   * CFX_SEND_WINDOW - 1. */
  fast->st.inflight = 0;
  for (int k = 0; k < CFX_SEND_WINDOW - 1; k++) {
    leg = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
    ck_assert_ptr_eq(leg, lf);
    cfx_set_note_sent(set, leg, RELAY_COMMAND_DATA);
  }
  ck_assert_uint_eq(set->n_window_waits, 0);
  /* The window is reached: DATA goes on the laggard, after a SWITCH. */
  ck_assert_int_eq(cfx_set_can_send_data(set), 1);
  leg = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
  ck_assert_ptr_eq(leg, ls);
  ck_assert_int_eq(sw, 1);
  cfx_set_note_sent(set, leg, RELAY_COMMAND_DATA);
  ck_assert_uint_eq(set->n_window_waits, 1);
  /* With the laggard's congestion window full, DATA waits... */
  slow->st.inflight = 2;
  slow->st.cwnd = 2;
  ck_assert_int_eq(cfx_set_can_send_data(set), 0);
  ck_assert_ptr_null(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel));
  /* ... but other stream messages are not held back. */
  leg = cfx_set_pick(set, RELAY_COMMAND_END, &sw, &rel);
  ck_assert_ptr_eq(leg, lf);
  cfx_set_note_sent(set, leg, RELAY_COMMAND_END);
  /* The laggard's SENDME: the window opens, the fast leg takes DATA. */
  slow->st.inflight = 0;
  ck_assert_int_eq(cfx_set_can_send_data(set), 1);
  leg = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
  ck_assert_ptr_eq(leg, lf);
  ck_assert_uint_gt(memacct_get(MEMACCT_CONFLUX), mem0);
  char d[512];
  cfx_set_describe(set, d, sizeof(d));
  ck_assert_ptr_nonnull(strstr(d, "2 window waits"));
  cfx_set_free(set);
  ck_assert_uint_eq(memacct_get(MEMACCT_CONFLUX), mem0);
  free(fast);
  free(slow);
}
END_TEST

START_TEST(test_send_switches)
{
  /* Only the leg the plan names has room, so LowRTT follows the plan;
   * the SWITCH values must be the reference's. */
  tleg_t *t[3] = {tleg(100, 100, 1000), tleg(100, 100, 1000),
                  tleg(100, 100, 1000)};
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *l[3];
  for (int i = 0; i < 3; i++)
    l[i] = cfx_set_add_leg(set, t[i], 0, 0);
  static const struct {
    int leg, count;
  } plan[] = {{0, 10}, {1, 21}, {0, 5}, {1, 3}, {0, 1}, {2, 4}, {0, 2}};
  /* Expected SWITCH values, in the order they are sent. */
  static const struct {
    int leg;
    uint32_t rel;
  } want[] = {{1, 10}, {0, 21}, {1, 5}, {0, 3}, {2, 40}, {0, 4}};
  size_t n_sw = 0;
  uint64_t total0 = cfx_switches_total();
  for (size_t p = 0; p < N_ELEMS(plan); p++) {
    for (int i = 0; i < 3; i++)
      t[i]->st.inflight = i == plan[p].leg ? 0 : 100;
    for (int k = 0; k < plan[p].count; k++) {
      int sw;
      uint32_t rel;
      cfx_leg_t *leg = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
      ck_assert_ptr_eq(leg, l[plan[p].leg]);
      if (sw) {
        ck_assert_int_eq(sw, 1);
        ck_assert_uint_lt(n_sw, N_ELEMS(want));
        ck_assert_ptr_eq(leg, l[want[n_sw].leg]);
        ck_assert_uint_eq(rel, want[n_sw].rel);
        n_sw++;
      }
      cfx_set_note_sent(set, leg, RELAY_COMMAND_DATA);
    }
  }
  ck_assert_uint_eq(n_sw, N_ELEMS(want));
  ck_assert_uint_eq(cfx_set_max_sent(set), 46);
  ck_assert_uint_eq(set->n_switches, 6);
  ck_assert_uint_eq(cfx_switches_total() - total0, 6); /* MetricsPort */
  cfx_set_free(set);
  for (int i = 0; i < 3; i++)
    free(t[i]);
}
END_TEST

START_TEST(test_queue_bound)
{
  tleg_t *a = tleg(100, 0, 1000), *b = tleg(100, 0, 1000);
  uint64_t budget0 = memacct_get(MEMACCT_CONFLUX);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 4, tstate);
  cfx_set_add_leg(set, a, 0, 0);
  cfx_leg_t *lb = cfx_set_add_leg(set, b, 0, 0);
  ck_assert_int_eq(cfx_set_on_switch(set, lb, 10), 0);
  uint8_t body[498];
  memset(body, 0xab, sizeof(body));
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(cfx_set_on_msg(set, lb, RELAY_COMMAND_DATA, 1, body,
                                    sizeof(body)),
                     CFX_RECV_QUEUED);
  ck_assert_int_eq(
      cfx_set_on_msg(set, lb, RELAY_COMMAND_DATA, 1, body, sizeof(body)),
      CFX_RECV_FULL);
  ck_assert_uint_eq(set->n_queued, 4);
  /* The queue counts in the memory budget, and is given back. */
  ck_assert_uint_eq(memacct_get(MEMACCT_CONFLUX) - budget0,
                    cfx_set_ooo_bytes(set));
  cfx_set_free(set); /* frees what is queued (ASan checks) */
  ck_assert_uint_eq(memacct_get(MEMACCT_CONFLUX), budget0);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_old_and_duplicate)
{
  tleg_t *a = tleg(100, 0, 1000), *b = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *la = cfx_set_add_leg(set, a, 0, 0);
  cfx_leg_t *lb = cfx_set_add_leg(set, b, 0, 0);
  ck_assert_int_eq(cfx_set_on_msg(set, la, RELAY_COMMAND_BEGIN, 1, NULL, 0),
                   CFX_RECV_DELIVER);
  /* Leg b claims number 1 again. */
  ck_assert_int_eq(cfx_set_on_msg(set, lb, RELAY_COMMAND_DATA, 1, NULL, 0),
                   CFX_RECV_OLD);
  /* Two messages with number 3 queued; once 2 arrives one is delivered
   * and the other is a duplicate. */
  ck_assert_int_eq(cfx_set_on_switch(set, lb, 1), 0); /* b: next is 3 */
  ck_assert_int_eq(cfx_set_on_msg(set, lb, RELAY_COMMAND_DATA, 1, NULL, 0),
                   CFX_RECV_QUEUED);
  ck_assert_int_eq(cfx_set_on_switch(set, la, 1), 0); /* a: next is 3 */
  ck_assert_int_eq(cfx_set_on_msg(set, la, RELAY_COMMAND_DATA, 1, NULL, 0),
                   CFX_RECV_QUEUED);
  cfx_msg_t *m;
  ck_assert_int_eq(cfx_set_next(set, &m), 0); /* 2 is missing */
  tleg_t *c = tleg(100, 0, 1000);
  cfx_leg_t *lc = cfx_set_add_leg(set, c, 1, 0);
  ck_assert_int_eq(cfx_set_on_msg(set, lc, RELAY_COMMAND_DATA, 1, NULL, 0),
                   CFX_RECV_DELIVER);
  ck_assert_int_eq(cfx_set_next(set, &m), 1);
  ck_assert_uint_eq(m->seq, 3);
  cfx_set_msg_release(set, m);
  ck_assert_int_eq(cfx_set_next(set, &m), -1);
  /* Overflow of a leg's count by SWITCH. */
  ck_assert_int_eq(cfx_set_on_switch(set, lc, UINT32_MAX), 0);
  lc->last_seq_recv = UINT64_MAX - 5;
  ck_assert_int_eq(cfx_set_on_switch(set, lc, 6), -1);
  cfx_set_free(set);
  free(a);
  free(b);
  free(c);
}
END_TEST

START_TEST(test_minrtt_lowrtt)
{
  tleg_t *fast = tleg(100, 0, 10000), *slow = tleg(100, 0, 50000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_MINRTT, 0, tstate);
  cfx_leg_t *lf = cfx_set_add_leg(set, fast, 0, 0);
  cfx_leg_t *ls = cfx_set_add_leg(set, slow, 0, 0);
  (void)ls;
  int sw;
  uint32_t rel;
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), lf);
  ck_assert_int_eq(sw, 0); /* the first leg needs no SWITCH */
  cfx_set_note_sent(set, lf, RELAY_COMMAND_DATA);
  fast->st.inflight = 100; /* its window is full */
  ck_assert_ptr_null(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel));
  ck_assert_int_eq(cfx_set_can_send_data(set), 0);
  /* Other messages still go, on the current leg. */
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_END, &sw, &rel), lf);
  ck_assert_int_eq(sw, 0);
  /* LowRTT moves to the slow leg when the fast one is full. */
  set->alg = CFX_ALG_LOWRTT;
  ck_assert_int_eq(cfx_set_can_send_data(set), 1);
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), ls);
  ck_assert_int_eq(sw, 1);
  ck_assert_uint_eq(rel, 1);
  cfx_set_note_sent(set, ls, RELAY_COMMAND_DATA);
  /* A blocked channel counts as full. */
  slow->st.blocked = 1;
  ck_assert_int_eq(cfx_set_can_send_data(set), 0);
  ck_assert_ptr_null(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel));
  /* Back to the fast leg once it has room: it is one behind. */
  fast->st.inflight = 0;
  slow->st.blocked = 0;
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), lf);
  ck_assert_int_eq(sw, 1);
  ck_assert_uint_eq(rel, 1);
  /* An unmeasured leg is the slowest. */
  tleg_t *unk = tleg(100, 0, 0);
  cfx_leg_t *lu = cfx_set_add_leg(set, unk, 0, 0);
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), lf);
  fast->st.inflight = 100;
  slow->st.inflight = 100;
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), lu);
  /* ... unless its link handshake measured it. */
  lu->link_rtt_us = 1000;
  fast->st.inflight = 0;
  ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), lu);
  cfx_set_free(set);
  free(fast);
  free(slow);
  free(unk);
}
END_TEST

START_TEST(test_proportional)
{
  /* Leg 0: 300 cells per 100 ms; leg 1: 100 cells per 100 ms -> 3:1. */
  tleg_t *a = tleg(300, 0, 100000), *b = tleg(100, 0, 100000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_PROPORTIONAL, 0, tstate);
  cfx_leg_t *la = cfx_set_add_leg(set, a, 0, 0);
  cfx_set_add_leg(set, b, 0, 0);
  /* Legs are drawn per burst of CFX_PROP_BURST messages, so n / 31 draws
   * decide the split (about 12900: the fraction's deviation is 0.004). */
  int n_a = 0, n = 400000, n_sw = 0, run = 0, short_runs = 0;
  cfx_leg_t *last = NULL;
  for (int i = 0; i < n; i++) {
    int sw;
    uint32_t rel;
    cfx_leg_t *l = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
    ck_assert_ptr_nonnull(l);
    if (l == la)
      n_a++;
    if (sw) {
      n_sw++;
      ck_assert_ptr_ne(l, last);
      /* A leg keeps a whole burst before another is drawn. */
      if (last && run % CFX_PROP_BURST)
        short_runs++;
      run = 0;
    }
    run++;
    last = l;
    cfx_set_note_sent(set, l, RELAY_COMMAND_DATA);
  }
  double frac = (double)n_a / n;
  ck_assert_msg(frac > 0.73 && frac < 0.77, "fraction on leg 0: %f", frac);
  ck_assert_int_eq(short_runs, 0);
  /* A switch costs a SWITCH cell: at most one per burst (3:1 draws change
   * leg 3/8 of the time, so about n / 31 * 0.375). */
  ck_assert_msg(n_sw > n / CFX_PROP_BURST / 4 && n_sw <= n / CFX_PROP_BURST + 1,
                "%d switches for %d messages", n_sw, n);
  /* Same cwnd, RTT 4x: 4:1 the other way. */
  a->st.cwnd = 100;
  a->st.rtt_us = 400000;
  n_a = 0;
  for (int i = 0; i < n; i++) {
    int sw;
    uint32_t rel;
    cfx_leg_t *l = cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel);
    if (l == la)
      n_a++;
    cfx_set_note_sent(set, l, RELAY_COMMAND_DATA);
  }
  frac = (double)n_a / n;
  ck_assert_msg(frac > 0.18 && frac < 0.22, "fraction on leg 0: %f", frac);
  /* A full leg gets nothing. */
  b->st.inflight = 100;
  for (int i = 0; i < 100; i++) {
    int sw;
    uint32_t rel;
    ck_assert_ptr_eq(cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel), la);
  }
  cfx_set_free(set);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_leg_close_rules)
{
  tleg_t *t[4];
  for (int i = 0; i < 4; i++)
    t[i] = tleg(100, 0, 1000 * (i + 1));
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *l[4];
  for (int i = 0; i < 4; i++)
    l[i] = cfx_set_add_leg(set, t[i], 0, 0);
  int sw;
  uint32_t rel;
  /* Send 5 on leg 0 (the lowest RTT: the current leg). */
  for (int i = 0; i < 5; i++)
    cfx_set_note_sent(set, cfx_set_pick(set, RELAY_COMMAND_DATA, &sw, &rel),
                      RELAY_COMMAND_DATA);
  ck_assert_ptr_eq(set->curr, l[0]);
  const char *why;
  cfx_leg_state_t st = t[3]->st;
  /* Leg 3: idle, behind the others: the set goes on. */
  ck_assert_int_eq(cfx_set_remove_leg(set, l[3], &st, &why), 0);
  ck_assert_int_eq(set->n_legs, 3);
  /* Leg 2 with a SENDME increment in flight: teardown. */
  st = t[2]->st;
  st.inflight = 31;
  ck_assert_int_eq(cfx_set_remove_leg(set, l[2], &st, &why), 1);
  ck_assert_ptr_nonnull(why);
  /* Leg 1 received further than every other leg: teardown. */
  l[1]->last_seq_recv = 3;
  st = t[1]->st;
  ck_assert_int_eq(cfx_set_remove_leg(set, l[1], &st, &why), 1);
  /* The current leg: teardown. */
  st = t[0]->st;
  ck_assert_int_eq(cfx_set_remove_leg(set, l[0], &st, &why), 1);
  ck_assert_int_eq(set->n_legs, 0);
  ck_assert_ptr_null(cfx_set_pick(set, RELAY_COMMAND_END, &sw, &rel));
  cfx_set_free(set);
  for (int i = 0; i < 4; i++)
    free(t[i]);
}
END_TEST

START_TEST(test_link_checks)
{
  tleg_t *t = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  for (int i = 0; i < CFX_MAX_LEGS; i++)
    ck_assert_ptr_nonnull(cfx_set_add_leg(set, t, 0, 0));
  ck_assert_ptr_null(cfx_set_add_leg(set, t, 0, 0));
  /* Data loss: the peer sent more than we delivered. */
  ck_assert_int_eq(cfx_set_link_loses_data(set, 0), 0);
  ck_assert_int_eq(cfx_set_link_loses_data(set, 1), 1);
  set->last_seq_delivered = 10;
  ck_assert_int_eq(cfx_set_link_loses_data(set, 10), 0);
  ck_assert_int_eq(cfx_set_link_loses_data(set, 11), 1);
  /* A leg joining later starts from the peer's counts. */
  cfx_set_t *s2 = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *l = cfx_set_add_leg(s2, t, 7, 9);
  ck_assert_uint_eq(l->last_seq_recv, 7);
  ck_assert_uint_eq(l->last_seq_sent, 9);
  char d[512];
  cfx_set_describe(s2, d, sizeof(d));
  ck_assert_ptr_nonnull(strstr(d, "1 leg,"));
  cfx_set_free(s2);
  cfx_set_free(set);
  free(t);
}
END_TEST

START_TEST(test_link_loss_counts_arrivals)
{
  /* A replacement leg may join while messages of the other legs wait in
   * the out-of-order queue: what arrived counts, not only what was
   * delivered (proposal 329 2.4.4 compares with the legs' last received). */
  tleg_t *t = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *a = cfx_set_add_leg(set, t, 0, 0);
  cfx_set_add_leg(set, t, 0, 0);
  ck_assert_int_eq(cfx_set_on_switch(set, a, 4), 0);
  for (int i = 0; i < 3; i++) /* numbers 5-7 wait for 1-4 */
    ck_assert_int_eq(cfx_set_on_msg(set, a, RELAY_COMMAND_DATA, 1, NULL, 0),
                     CFX_RECV_QUEUED);
  ck_assert_uint_eq(set->last_seq_delivered, 0);
  ck_assert_int_eq(cfx_set_link_loses_data(set, 7), 0);
  ck_assert_int_eq(cfx_set_link_loses_data(set, 8), 1);
  cfx_set_free(set);
  free(t);
}
END_TEST

START_TEST(test_ooo_memory)
{
  /* The queue's bytes (for MaxMemInQueues) and the leg they are charged
   * to: the one that received furthest. Nothing waiting: 0 and no leg. */
  tleg_t *t = tleg(100, 0, 1000);
  cfx_set_t *set = cfx_set_new(nonce0, CFX_ALG_LOWRTT, 0, tstate);
  cfx_leg_t *a = cfx_set_add_leg(set, t, 0, 0);
  cfx_leg_t *b = cfx_set_add_leg(set, t, 0, 0);
  ck_assert_uint_eq(cfx_set_ooo_bytes(set), 0);
  ck_assert_ptr_null(cfx_set_ooo_holder(set));
  /* b is 10 ahead: 5 messages (11-15) wait. The heap array starts at 64
   * slots. */
  ck_assert_int_eq(cfx_set_on_switch(set, b, 10), 0);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(cfx_set_on_msg(set, b, RELAY_COMMAND_DATA, 1,
                                    (const uint8_t *)"abc", 3),
                     CFX_RECV_QUEUED);
  ck_assert_uint_eq(cfx_set_ooo_bytes(set),
                    5 * sizeof(cfx_msg_t) + 64 * sizeof(cfx_msg_t *));
  ck_assert_ptr_eq(cfx_set_ooo_holder(set), b);
  /* a delivers 1-10, then 11-13 drain from the queue: 2 still wait, and
   * the 3 released messages stay on the free list (they count). */
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(cfx_set_on_msg(set, a, RELAY_COMMAND_DATA, 1, NULL, 0),
                     CFX_RECV_DELIVER);
  for (int i = 0; i < 3; i++) {
    cfx_msg_t *m;
    ck_assert_int_eq(cfx_set_next(set, &m), 1);
    cfx_set_msg_release(set, m);
  }
  ck_assert_uint_eq(set->n_queued, 2);
  ck_assert_uint_eq(cfx_set_ooo_bytes(set),
                    5 * sizeof(cfx_msg_t) + 64 * sizeof(cfx_msg_t *));
  ck_assert_ptr_eq(cfx_set_ooo_holder(set), b);
  /* Ties go to the first leg; an empty queue reports nothing. */
  ck_assert_int_eq(cfx_set_on_switch(set, a, 5), 0);
  ck_assert_ptr_eq(cfx_set_ooo_holder(set), a);
  for (int i = 0; i < 2; i++) {
    cfx_msg_t *m;
    ck_assert_int_eq(cfx_set_next(set, &m), 1);
    cfx_set_msg_release(set, m);
  }
  ck_assert_uint_eq(cfx_set_ooo_bytes(set), 0);
  ck_assert_ptr_null(cfx_set_ooo_holder(set));
  cfx_set_free(set);
  free(t);
}
END_TEST


/* ---- the exit role over loopback ---- */

#define MAX_CIRCS 12

typedef struct {
  origin_circuit_t *c;
  int open, closed;
  int linked;                /* LINKED received */
  cfx_link_t linked_body;
  int n_switch, n_connected;
  size_t data_bytes;
} tcirc_t;

static struct {
  fixture_relay_t r; /* dir, keys, loop, timeout, orport */
  tcirc_t t[MAX_CIRCS];
  int n;
  /* the relay's test stream (BEGIN handler) */
  edge_stream_t *rs;
  uint8_t rs_data[4096];
  size_t rs_len;
  int rs_begins;
} X;

/* Run the loop until cond() holds (checked every 5 ms) or 10 s pass. */
static int
run_until(int (*cond)(void))
{
  for (int i = 0; i < 2000 && !cond(); i++) {
    fixture_relay_run_for(&X.r, 5000);
  }
  return cond();
}

static tcirc_t *
tc_of(origin_circuit_t *c)
{
  for (int i = 0; i < X.n; i++)
    if (X.t[i].c == c)
      return &X.t[i];
  return NULL;
}

static void
x_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)n;
  (void)arg;
  tc_of(c)->open = 1;
}

static void
x_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t sid,
        const uint8_t *body, uint16_t len, void *arg)
{
  (void)hop;
  (void)sid;
  (void)arg;
  tcirc_t *t = tc_of(c);
  const char *why;
  switch (cmd) {
  case RELAY_COMMAND_CONFLUX_LINKED:
    ck_assert_int_eq(cfx_link_parse(&t->linked_body, body, len, &why), 0);
    t->linked++;
    break;
  case RELAY_COMMAND_CONFLUX_SWITCH:
    t->n_switch++;
    break;
  case RELAY_COMMAND_CONNECTED:
    t->n_connected++;
    break;
  case RELAY_COMMAND_DATA:
    t->data_bytes += len;
    break;
  default:
    break;
  }
}

static void
x_closed(origin_circuit_t *c, int reason, const char *why, void *arg)
{
  (void)reason;
  (void)why;
  (void)arg;
  tcirc_t *t = tc_of(c);
  t->closed = 1;
  t->c = NULL;
}

static const origin_circuit_ops_t x_ops = {x_extended, x_relay, x_closed};

static void
xs_data(edge_stream_t *st, const uint8_t *d, size_t n, void *arg)
{
  (void)st;
  (void)arg;
  if (X.rs_len + n <= sizeof(X.rs_data)) {
    memcpy(X.rs_data + X.rs_len, d, n);
    X.rs_len += n;
  }
}

static void
xs_end(edge_stream_t *st, uint8_t reason, void *arg)
{
  (void)st;
  (void)reason;
  (void)arg;
  X.rs = NULL;
}

static const edge_stream_ops_t xs_ops = {.on_data = xs_data, .on_end = xs_end};

static int
x_begin(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
        int early)
{
  (void)body;
  (void)early;
  X.rs_begins++;
  X.rs = relay_stream_new(circ, h->stream_id, &xs_ops, NULL);
  return 0;
}

static void
x_setup_bound(uint32_t max_ooo)
{
  memset(&X, 0, sizeof(X));
  cc_params_t d;
  cc_params_default(&d);
  cc_params_set_current(&d);
  fixture_relay_start(&X.r, "cfx", "CHECK_CFX_VERBOSE", "info");
  extend_init(1);
  relay_register_handler(RELAY_COMMAND_BEGIN, x_begin);
  conflux_exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.enabled = 1;
  cfg.max_ooo = max_ooo;
  conflux_exit_init(X.r.loop, &cfg);
}

static void
x_setup(void)
{
  x_setup_bound(8);
}

static void
x_teardown(void)
{
  conflux_exit_shutdown();
  channels_shutdown();
  ck_assert_uint_eq(memacct_underflows(), 0);
  circuits_shutdown();
  relay_clear_handlers();
  fixture_assert_no_circuits();
  fixture_relay_free(&X.r);
}

static int cond_idx;
static int
is_open(void)
{
  return X.t[cond_idx].open || X.t[cond_idx].closed;
}

/* A one-hop circuit to our relay; cc: ask for congestion control. */
static tcirc_t *
x_build(int cc)
{
  ck_assert_int_lt(X.n, MAX_CIRCS);
  extend_target_t t = fixture_relay_target(&X.r, HTYPE_NTOR_V3);
  t.cc_request = (uint8_t)cc;
  tcirc_t *tc = &X.t[X.n];
  cond_idx = X.n++;
  tc->c = origin_circuit_launch(&t, &x_ops, NULL);
  ck_assert_ptr_nonnull(tc->c);
  ck_assert(run_until(is_open));
  ck_assert(tc->open && !tc->closed);
  return tc;
}

static or_circuit_t *
x_relay_side(tcirc_t *tc)
{
  or_circuit_t *oc =
      or_circuit_find_by_p_id_for_testing(tc->c->base.n_circ_id);
  ck_assert_ptr_nonnull(oc);
  return oc;
}

static void
x_send(tcirc_t *tc, uint8_t cmd, uint16_t sid, const void *body,
       uint16_t len)
{
  ck_assert_ptr_nonnull(tc->c);
  ck_assert_int_eq(
      origin_circuit_send_relay(tc->c, 0, cmd, sid, body, len), 0);
}

static void
x_send_link(tcirc_t *tc, uint8_t nonce_byte, uint64_t sent, uint64_t recv)
{
  cfx_link_t l;
  memset(&l, 0, sizeof(l));
  memset(l.nonce, nonce_byte, CFX_NONCE_LEN);
  l.last_seq_sent = sent;
  l.last_seq_recv = recv;
  l.desired_ux = CFX_UX_HIGH_THROUGHPUT;
  uint8_t b[CFX_LINK_LEN];
  cfx_link_encode(&l, b, sizeof(b));
  x_send(tc, RELAY_COMMAND_CONFLUX_LINK, 0, b, sizeof(b));
}

static void
x_send_switch(tcirc_t *tc, uint32_t rel)
{
  uint8_t b[CFX_SWITCH_LEN];
  cfx_switch_encode(rel, b, sizeof(b));
  x_send(tc, RELAY_COMMAND_CONFLUX_SWITCH, 0, b, sizeof(b));
}

static tcirc_t *w_tc;
static int
w_linked(void)
{
  return w_tc->linked || w_tc->closed;
}
static int
w_closed(void)
{
  return w_tc->closed;
}
static size_t w_len;
static int
w_rs_len(void)
{
  return X.rs_len >= w_len;
}

/* Link tc into the set of nonce_byte and acknowledge. */
static void
x_link(tcirc_t *tc, uint8_t nonce_byte)
{
  x_send_link(tc, nonce_byte, 0, 0);
  w_tc = tc;
  ck_assert(run_until(w_linked));
  ck_assert_int_eq(tc->closed, 0);
  ck_assert_int_eq(tc->linked, 1);
  x_send(tc, RELAY_COMMAND_CONFLUX_LINKED_ACK, 0, NULL, 0);
}

/* tc gets closed by the relay (a refusal). */
static void
x_expect_closed(tcirc_t *tc)
{
  w_tc = tc;
  ck_assert_msg(run_until(w_closed), "the relay did not close the circuit");
}

START_TEST(test_exit_link_and_order)
{
  tcirc_t *a = x_build(1), *b = x_build(1);
  x_link(a, 0x11);
  /* LINKED: our nonce, no data yet, and tor exits' MIN_LATENCY wish. */
  uint8_t n11[CFX_NONCE_LEN];
  memset(n11, 0x11, sizeof(n11));
  ck_assert_mem_eq(a->linked_body.nonce, n11, CFX_NONCE_LEN);
  ck_assert_uint_eq(a->linked_body.last_seq_sent, 0);
  ck_assert_uint_eq(a->linked_body.last_seq_recv, 0);
  ck_assert_uint_eq(a->linked_body.desired_ux, CFX_UX_MIN_LATENCY);
  x_link(b, 0x11);
  or_circuit_t *ra = x_relay_side(a), *rb = x_relay_side(b);
  ck_assert_ptr_nonnull(ra->mux);
  ck_assert_ptr_eq(or_circuit_stream_home(rb), ra);

  /* Message 2 (DATA) and 3 travel on b and are sent first; message 1
   * (BEGIN) on a. The stream must see BEGIN, then "two", "three". */
  x_send_switch(b, 1);
  x_send(b, RELAY_COMMAND_DATA, 5, "two,", 4);
  x_send(b, RELAY_COMMAND_DATA, 5, "three", 5);
  w_len = 0;
  for (int i = 0; i < 20; i++) {
    evloop_timer_schedule(X.r.timeout, 5000);
    evloop_run(X.r.loop);
  }
  ck_assert_int_eq(X.rs_begins, 0); /* still waiting for number 1 */
  x_send(a, RELAY_COMMAND_BEGIN, 5, "127.0.0.1:80", 13);
  w_len = 9;
  ck_assert(run_until(w_rs_len));
  ck_assert_int_eq(X.rs_begins, 1);
  ck_assert_mem_eq(X.rs_data, "two,three", 9);
  /* The stream lives on the first leg. */
  ck_assert_ptr_eq(relay_stream_circuit(X.rs), ra);

  /* The relay's answer comes back over the legs: 200 cells. */
  uint8_t buf[RELAY_BODY_MAX * 200];
  memset(buf, 0x5a, sizeof(buf));
  size_t sent = edge_stream_send(X.rs, buf, sizeof(buf));
  ck_assert_uint_eq(sent, sizeof(buf)); /* cwnd 124 per leg: it fits */
  w_tc = a;
  for (int i = 0; i < 2000 && a->data_bytes + b->data_bytes < sent; i++) {
    evloop_timer_schedule(X.r.timeout, 5000);
    evloop_run(X.r.loop);
  }
  ck_assert_uint_eq(a->data_bytes + b->data_bytes, sent);
  /* Both legs carried data (LowRTT fills one window, then the other),
   * and the leg that was not first got a SWITCH. */
  ck_assert_uint_gt(a->data_bytes, 0);
  ck_assert_uint_gt(b->data_bytes, 0);
  ck_assert_int_ge(a->n_switch + b->n_switch, 1);
  conflux_exit_stats_t st;
  conflux_exit_get_stats(&st);
  ck_assert_uint_eq(st.n_sets, 1);
  ck_assert_uint_eq(st.n_legs_linked, 2);
  ck_assert_uint_eq(st.n_refused, 0);
}
END_TEST

START_TEST(test_exit_refusals)
{
  /* No congestion control. */
  tcirc_t *t = x_build(0);
  x_send_link(t, 0x21, 0, 0);
  x_expect_closed(t);
  /* Malformed LINK: unknown version, then a UX out of range. */
  t = x_build(1);
  uint8_t bad[CFX_LINK_LEN];
  memset(bad, 0, sizeof(bad));
  bad[0] = 2;
  x_send(t, RELAY_COMMAND_CONFLUX_LINK, 0, bad, sizeof(bad));
  x_expect_closed(t);
  t = x_build(1);
  bad[0] = 1;
  bad[CFX_LINK_LEN - 1] = 9;
  x_send(t, RELAY_COMMAND_CONFLUX_LINK, 0, bad, sizeof(bad));
  x_expect_closed(t);
  /* LINKED is for clients. */
  t = x_build(1);
  bad[CFX_LINK_LEN - 1] = 0;
  x_send(t, RELAY_COMMAND_CONFLUX_LINKED, 0, bad, sizeof(bad));
  x_expect_closed(t);
  /* LINKED_ACK / SWITCH on a circuit that is not linked. */
  t = x_build(1);
  x_send(t, RELAY_COMMAND_CONFLUX_LINKED_ACK, 0, NULL, 0);
  x_expect_closed(t);
  t = x_build(1);
  x_send_switch(t, 3);
  x_expect_closed(t);
  /* A second LINKED_ACK. */
  t = x_build(1);
  x_link(t, 0x22);
  x_send(t, RELAY_COMMAND_CONFLUX_LINKED_ACK, 0, NULL, 0);
  x_expect_closed(t);
  /* A SWITCH shorter than 4 bytes. */
  t = x_build(1);
  x_link(t, 0x23);
  x_send(t, RELAY_COMMAND_CONFLUX_SWITCH, 0, "\x00\x01", 2);
  x_expect_closed(t);
  /* Data loss: a new set whose client says it already sent data. */
  t = x_build(1);
  x_send_link(t, 0x24, 5, 0);
  x_expect_closed(t);
  conflux_exit_stats_t st;
  conflux_exit_get_stats(&st);
  ck_assert_uint_eq(st.n_refused, 9);
}
END_TEST

START_TEST(test_exit_leg_limit_and_loss)
{
  /* Eight legs link; the ninth is refused. */
  tcirc_t *legs[9];
  for (int i = 0; i < 8; i++) {
    legs[i] = x_build(1);
    x_link(legs[i], 0x31);
  }
  legs[8] = x_build(1);
  x_send_link(legs[8], 0x31, 0, 0);
  x_expect_closed(legs[8]);
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(legs[i]->closed, 0);
  /* A new leg claiming data the exit never delivered closes the set. */
  tcirc_t *c = x_build(1), *d = x_build(1);
  x_link(c, 0x32);
  x_send(c, RELAY_COMMAND_BEGIN, 5, "127.0.0.1:80", 13);
  x_send_link(d, 0x32, 7, 0);
  x_expect_closed(d);
  w_tc = c;
  ck_assert(run_until(w_closed));
}
END_TEST

START_TEST(test_exit_ooo_bound)
{
  /* The fixture allows 8 waiting messages. */
  tcirc_t *a = x_build(1), *b = x_build(1);
  x_link(a, 0x41);
  x_link(b, 0x41);
  x_send_switch(b, 100);
  for (int i = 0; i < 8; i++)
    x_send(b, RELAY_COMMAND_DATA, 5, "x", 1);
  for (int i = 0; i < 20; i++) {
    evloop_timer_schedule(X.r.timeout, 5000);
    evloop_run(X.r.loop);
  }
  ck_assert_int_eq(a->closed + b->closed, 0);
  x_send(b, RELAY_COMMAND_DATA, 5, "x", 1); /* the ninth */
  w_tc = a;
  ck_assert(run_until(w_closed));
  w_tc = b;
  ck_assert(run_until(w_closed));
  conflux_exit_stats_t st;
  conflux_exit_get_stats(&st);
  ck_assert_uint_eq(st.n_ooo_full, 1);
}
END_TEST

START_TEST(test_exit_home_moves)
{
  tcirc_t *a = x_build(1), *b = x_build(1);
  x_link(a, 0x51);
  x_link(b, 0x51);
  or_circuit_t *rb = x_relay_side(b);
  /* BEGIN on a (the home), then data on b: b is ahead, a is idle. */
  x_send(a, RELAY_COMMAND_BEGIN, 5, "127.0.0.1:80", 13);
  x_send_switch(b, 1);
  x_send(b, RELAY_COMMAND_DATA, 5, "hi", 2);
  w_len = 2;
  ck_assert(run_until(w_rs_len));
  /* a closes: the set goes on, the stream moves to b. */
  circuit_mark_for_close(&a->c->base, DESTROY_REASON_NONE);
  for (int i = 0; i < 40 && relay_stream_circuit(X.rs) != rb; i++) {
    evloop_timer_schedule(X.r.timeout, 5000);
    evloop_run(X.r.loop);
  }
  ck_assert_ptr_nonnull(X.rs);
  ck_assert_ptr_eq(relay_stream_circuit(X.rs), rb);
  ck_assert_ptr_eq(or_circuit_stream_home(rb), rb);
  ck_assert_int_eq(b->closed, 0);
  /* It still works both ways. */
  ck_assert_uint_eq(edge_stream_send(X.rs, (const uint8_t *)"back", 4), 4);
  x_send(b, RELAY_COMMAND_DATA, 5, "!", 1);
  w_len = 3;
  ck_assert(run_until(w_rs_len));
  for (int i = 0; i < 200 && b->data_bytes < 4; i++) {
    evloop_timer_schedule(X.r.timeout, 5000);
    evloop_run(X.r.loop);
  }
  ck_assert_uint_eq(b->data_bytes, 4);
}
END_TEST

/* ---- the out-of-order queue in MaxMemInQueues ---- */

static struct {
  or_circuit_t *rb, *rc;
  int k, m;
  int rb_marked, rc_marked, done;
} Q;

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

/* In one loop iteration (so every cell has the same age): m cells on the
 * plain circuit, then k on the leg charged with the queue; the last one
 * crosses the limit. c's cells are DROP cells its client reads (cells it
 * could not decrypt would make it close c once the flush resumes); they
 * come first because a relayed cell, not an originated one, runs the
 * memory handler at once. b's cells are never read (b is closed). */
static void
q_cb(void *arg)
{
  (void)arg;
  for (int i = 0; i < Q.m; i++)
    ck_assert_int_eq(
        or_circuit_send_relay(Q.rc, RELAY_COMMAND_DROP, 0, NULL, 0), 0);
  /* The last one runs the handler, which closes b. */
  for (int i = 0; i < Q.k; i++)
    ck_assert_int_eq(queue_relayed(Q.rb), i == Q.k - 1 ? -1 : 0);
  /* Look now: the reaper frees closed circuits later in this iteration. */
  Q.rb_marked = Q.rb->base.marked_for_close;
  Q.rc_marked = Q.rc->base.marked_for_close;
  Q.done = 1;
}

static int
q_done(void)
{
  return Q.done;
}

static size_t q_rb_want;
static int
rb_reports(void)
{
  return conflux_exit_circuit_mem(&Q.rb->base) >= q_rb_want;
}

static int
ab_closed(void)
{
  return X.t[0].closed && X.t[1].closed;
}

START_TEST(test_exit_ooo_memory_limit)
{
  /* Legs a, b of one set and a plain circuit c. b runs 100 ahead and 8
   * messages wait in the exit's out-of-order queue: their bytes are
   * charged to b's circuit (the leg that received furthest), not to a or
   * c. Then, with equal ages, b holds k cells + the queue and c holds m
   * cells, m * CELL < k * CELL + queue: the memory handler must close b
   * first (it would close c if the queue did not count), that alone is
   * enough, and it says it freed the queue's bytes too. Closing b tears
   * the set down (a closes), freeing the queue. */
  memset(&Q, 0, sizeof(Q));
  tcirc_t *a = x_build(1), *b = x_build(1), *c = x_build(1);
  x_link(a, 0x61);
  x_link(b, 0x61);
  or_circuit_t *ra = x_relay_side(a), *rb = x_relay_side(b),
               *rc = x_relay_side(c);
  ck_assert_uint_eq(conflux_exit_circuit_mem(&ra->base), 0);
  ck_assert_uint_eq(conflux_exit_circuit_mem(&rb->base), 0);
  x_send_switch(b, 100);
  for (int i = 0; i < 8; i++)
    x_send(b, RELAY_COMMAND_DATA, 5, "x", 1);
  const uint64_t cell = sizeof(packed_cell_t);
  const uint64_t q = 8 * sizeof(cfx_msg_t) + 64 * sizeof(cfx_msg_t *);
  Q.rb = rb;
  Q.rc = rc;
  q_rb_want = (size_t)q;
  ck_assert(run_until(rb_reports));
  ck_assert_uint_eq(conflux_exit_circuit_mem(&rb->base), q);
  ck_assert_uint_eq(conflux_exit_circuit_mem(&ra->base), 0);
  ck_assert_uint_eq(conflux_exit_circuit_mem(&rc->base), 0);

  /* Choose k and m: c smaller than b only thanks to the queue, and b
   * alone enough to get down to the low-water mark (90% of the limit).
   * The budget already holds the queue and the streams (base): the last
   * of the k + m cells crosses the limit. */
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 1);
  const uint64_t base = memacct_total();
  ck_assert_uint_ge(base, q);
  uint64_t limit = 0;
  for (Q.k = 1; Q.k < 200; Q.k++) {
    Q.m = (int)((Q.k * cell + q - 1) / cell);
    limit = base + (uint64_t)(Q.k + Q.m - 1) * cell;
    uint64_t target = limit / 100 * CIRCUITS_OOM_RETAIN_PCT +
                      limit % 100 * CIRCUITS_OOM_RETAIN_PCT / 100;
    if (Q.m > Q.k && base - q + Q.m * cell <= target)
      break;
  }
  ck_assert_int_lt(Q.k, 200);
  ck_assert_uint_gt(Q.k * cell + q, Q.m * cell);
  circuits_set_max_mem_in_queues(limit);
  channels_block_flush_for_testing(0, 1);
  evloop_timer_t *qt = evloop_timer_new(X.r.loop, q_cb, NULL);
  evloop_timer_schedule(qt, 1000);
  ck_assert(run_until(q_done));
  evloop_timer_free(qt);
  ck_assert_int_eq(Q.rb_marked, 1);
  ck_assert_int_eq(Q.rc_marked, 0);
  circuits_oom_stats_t os;
  circuits_get_oom_stats(&os);
  ck_assert_uint_eq(os.n_oom_events, 1);
  ck_assert_uint_eq(os.n_circuits_killed, 1);
  ck_assert_uint_eq(os.bytes_freed, Q.k * cell + q);
  channels_block_flush_for_testing(0, 0);
  circuits_set_max_mem_in_queues(0);
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 0);
  ck_assert(run_until(ab_closed));
  ck_assert_int_eq(c->closed, 0);
  conflux_exit_stats_t st;
  conflux_exit_get_stats(&st);
  ck_assert_uint_eq(st.n_open_sets, 0);
  ck_assert_uint_eq(st.n_teardowns, 1);
}
END_TEST

Suite *
suite_conflux(void)
{
  Suite *s = suite_create("conflux");
  TCase *tc = tcase_create("cells");
  tcase_add_test(tc, test_link_vectors);
  tcase_add_test(tc, test_link_malformed);
  tcase_add_test(tc, test_switch_cells);
  tcase_add_test(tc, test_ux_names);
  suite_add_tcase(s, tc);
  tc = tcase_create("set");
  tcase_add_test(tc, test_receive_reorders);
  tcase_add_test(tc, test_receive_interleaved);
  tcase_add_test(tc, test_send_switches);
  tcase_add_test(tc, test_send_window);
  tcase_add_test(tc, test_queue_bound);
  tcase_add_test(tc, test_old_and_duplicate);
  tcase_add_test(tc, test_minrtt_lowrtt);
  tcase_add_test(tc, test_proportional);
  tcase_add_test(tc, test_leg_close_rules);
  tcase_add_test(tc, test_link_checks);
  tcase_add_test(tc, test_link_loss_counts_arrivals);
  tcase_add_test(tc, test_ooo_memory);
  suite_add_tcase(s, tc);
  tc = tcase_create("exit");
  tcase_add_checked_fixture(tc, x_setup, x_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_exit_link_and_order);
  tcase_add_test(tc, test_exit_refusals);
  tcase_add_test(tc, test_exit_leg_limit_and_loss);
  tcase_add_test(tc, test_exit_ooo_bound);
  tcase_add_test(tc, test_exit_home_moves);
  tcase_add_test(tc, test_exit_ooo_memory_limit);
  suite_add_tcase(s, tc);
  return s;
}
