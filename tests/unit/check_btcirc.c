/* SPDX-License-Identifier: BSD-3-Clause */
/* check_btcirc.c -- what core offers the BackTap circuit integration
 * (feature/btcirc): the packed-cell release hook that turns "the cell left
 * this relay" into a FWD, carried channels (channel.h) and the carrier
 * provider that pctcp.c asks for every or_circuit extension (and for the
 * first hop of an origin circuit), and the "backpressure all the way" bit
 * of carried channels.
 *
 * The carrier here is a mock with a window the test opens by hand, so the
 * tests check exactly what the circuit layer does with it: CREATE2 and
 * DESTROY go straight to send(), queued cells only while can_send() says
 * yes and again after channel_carried_writable(), variable-length cells are
 * never handed over, cells arriving through the carrier reach command.c,
 * and the channel closes (telling the carrier once) when its circuit has
 * gone. The engine itself is tested in check_backtap.c; the whole path
 * over DTLS in tests/integration/backtap-circuit.sh.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/edge.h"
#include "core/or/pctcp.h"
#include "core/proto/cell.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/net/sockstat.h"
#include "lib/evloop/evloop.h"

Suite *suite_btcirc(void);

#define MAX_SENT 64

static struct {
  evloop_t *loop;
  evloop_timer_t *tick;
  pc_addr_t addr[2];
  uint8_t rsa[2][20], ed[2][32];
  /* the mock carrier */
  unsigned window;   /* cells can_send() still allows */
  unsigned hop_window; /* what the carrier's window() says */
  unsigned n_sent;
  uint8_t sent_cmd[MAX_SENT];
  uint32_t sent_circid[MAX_SENT];
  unsigned n_closed;
  channel_t *carried;
  int provide;
  int backpressure;  /* the provider's channels have it (BackTap) */
  /* release hook */
  unsigned n_released;
  uint64_t rel_tag[MAX_SENT];
  uint32_t rel_seq[MAX_SENT];
} T;

static void
tick_cb(void *arg)
{
  evloop_exit(arg);
}

static void
run_once(void)
{
  evloop_timer_schedule(T.tick, 0);
  evloop_run(T.loop);
}

static int
mock_can_send(void *arg)
{
  ck_assert_ptr_eq(arg, &T);
  return T.window > 0;
}

static int
mock_send(void *arg, const uint8_t *cell, size_t len)
{
  ck_assert_ptr_eq(arg, &T);
  ck_assert_uint_eq(len, CELL_MAX_NETWORK_LEN);
  ck_assert_uint_lt(T.n_sent, MAX_SENT);
  T.sent_circid[T.n_sent] = get_u32(cell);
  T.sent_cmd[T.n_sent++] = cell[4];
  if (cell[4] == CELL_RELAY) {
    ck_assert_uint_gt(T.window, 0); /* the scheduler asked first */
    T.window--;
  }
  return 0;
}

static void
mock_closed(void *arg)
{
  ck_assert_ptr_eq(arg, &T);
  T.n_closed++;
}

static unsigned
mock_window(void *arg)
{
  ck_assert_ptr_eq(arg, &T);
  return T.hop_window;
}

/* The carrier's TCP state (TCP-over-DTLS has one): a cwnd that tells
 * the call came here. */
static int
mock_sockstat(void *arg, sockstat_tcp_t *out)
{
  ck_assert_ptr_eq(arg, &T);
  memset(out, 0, sizeof(*out));
  out->cwnd = 17;
  out->sndbuf_full = 3;
  return 0;
}

/* The carrier's flow control (BackTap has one). */
static int
mock_flowstat(void *arg, channel_flowstat_t *out)
{
  ck_assert_ptr_eq(arg, &T);
  memset(out, 0, sizeof(*out));
  out->window = T.hop_window;
  out->base_rtt_us = 20000;
  return 0;
}

static const channel_carrier_ops_t mock_ops = {
    mock_can_send, mock_send,     mock_closed,
    mock_window,   mock_sockstat, mock_flowstat};
/* A carrier that tells no window (like one without an engine), no TCP
 * state and no flow control. */
static const channel_carrier_ops_t mock_ops_nowindow = {
    mock_can_send, mock_send, mock_closed, NULL, NULL, NULL};

static channel_t *
provider(const pc_addr_t *addr, const uint8_t *rsa_id, const uint8_t *ed_id,
         void *arg)
{
  ck_assert_ptr_eq(arg, &T);
  if (!T.provide)
    return NULL;
  T.carried = channel_new_carried(&mock_ops, &T, addr, rsa_id, ed_id, 1,
                                  "test");
  if (T.backpressure)
    channel_carried_set_backpressure(T.carried);
  return T.carried;
}

static void
release_cb(uint64_t tag, uint32_t seq)
{
  ck_assert_uint_lt(T.n_released, MAX_SENT);
  T.rel_tag[T.n_released] = tag;
  T.rel_seq[T.n_released++] = seq;
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  ck_assert_int_eq(crypt_global_init(), 0);
  T.loop = evloop_new();
  T.tick = evloop_timer_new(T.loop, tick_cb, T.loop);
  channels_init(T.loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  for (int i = 0; i < 2; i++) {
    pc_addr_parse_ip(&T.addr[i], "127.0.0.2", (uint16_t)(9001 + i));
    memset(T.rsa[i], 0x31 * (i + 1), 20);
    memset(T.ed[i], 0x41 * (i + 1), 32);
  }
  ck_assert_int_eq(pctcp_set_carrier_provider(provider, &T), 0);
  ck_assert_int_eq(packed_cell_set_release_hook(release_cb), 0);
}

static void
teardown(void)
{
  channels_shutdown();
  circuits_shutdown();
  pctcp_set_carrier_provider(NULL, NULL);
  packed_cell_set_release_hook(NULL);
  evloop_timer_free(T.tick);
  evloop_free(T.loop);
}

static packed_cell_t *
relay_cell(uint32_t circid, uint64_t tag, uint32_t seq)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, sizeof(pc->body));
  set_u32(pc->body, circid);
  pc->body[4] = CELL_RELAY;
  pc->len = CELL_MAX_NETWORK_LEN;
  pc->rel_tag = tag;
  pc->rel_seq = seq;
  return pc;
}

START_TEST(test_release_hook)
{
  packed_cell_t *pc = relay_cell(1, 7, 42);
  packed_cell_free(pc);
  ck_assert_uint_eq(T.n_released, 1);
  ck_assert_uint_eq(T.rel_tag[0], 7);
  ck_assert_uint_eq(T.rel_seq[0], 42);
  /* A cell from the free list starts without a tag. */
  pc = packed_cell_new();
  ck_assert_uint_eq(pc->rel_tag, 0);
  packed_cell_free(pc);
  ck_assert_uint_eq(T.n_released, 1);
  /* One hook: a different second one is refused, the same one is fine. */
  ck_assert_int_eq(packed_cell_set_release_hook(release_cb), 0);
  ck_assert_int_eq(packed_cell_set_release_hook(
                       (packed_cell_release_fn)(void (*)(void))tick_cb),
                   -1);
  /* And one carrier provider. */
  ck_assert_int_eq(pctcp_set_carrier_provider(provider, NULL), -1);
}
END_TEST

START_TEST(test_extension_over_carrier)
{
  channel_t *in =
      channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0], T.ed[0]);
  channel_open_socketless_for_testing(in);
  or_circuit_t *oc = or_circuit_new(in, 0x80000001u);
  cell_t create;
  memset(&create, 0, sizeof(create));
  create.command = CELL_CREATE2;
  /* Without the provider's consent: an ordinary (TLS) channel. */
  ck_assert_int_eq(circuit_extend_to(&oc->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], &create), 0);
  ck_assert(!channel_is_carried(oc->base.n_chan));
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  run_once();

  T.provide = 1;
  oc = or_circuit_new(in, 0x80000003u);
  ck_assert_int_eq(circuit_extend_to(&oc->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], &create), 0);
  channel_t *n = oc->base.n_chan;
  ck_assert_ptr_eq(n, T.carried);
  ck_assert(channel_is_carried(n) && channel_is_open(n));
  ck_assert(channel_is_authenticated_relay(n) && channel_is_outgoing(n));
  ck_assert_mem_eq(channel_peer_ed_id(n), T.ed[1], 32);
  /* Never offered to another extension (the TLS channel above is). */
  ck_assert_ptr_ne(channel_find_for_extend(&T.addr[1], T.rsa[1], T.ed[1]),
                   n);
  /* CREATE2 went out at once, window or not, with an initiator's ID. */
  ck_assert_uint_eq(T.n_sent, 1);
  ck_assert_uint_eq(T.sent_cmd[0], CELL_CREATE2);
  ck_assert(T.sent_circid[0] & 0x80000000u);
  /* Variable-length cells are not carried. */
  var_cell_t *vc = var_cell_new(4);
  vc->command = 241;
  channel_send_var_cell(n, vc);
  var_cell_free(vc);
  ck_assert_uint_eq(T.n_sent, 1);
  channel_stats_t st;
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_carried, 1);
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  run_once();
  /* DESTROY handed to the carrier, then the channel closed, once. */
  ck_assert_uint_eq(T.sent_cmd[T.n_sent - 1], CELL_DESTROY);
  ck_assert_uint_eq(T.n_closed, 1);
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_carried, 0);
}
END_TEST

START_TEST(test_window_gates_scheduler)
{
  /* A circuit a peer opened over the carrier: its backward cells go to
   * the carried channel as the window allows. */
  channel_t *c = channel_new_carried(&mock_ops, &T, &T.addr[1], T.rsa[1],
                                     T.ed[1], 0, "test");
  ck_assert(!channel_is_outgoing(c));
  or_circuit_t *oc = or_circuit_new(c, 0x80000005u);
  for (uint32_t i = 0; i < 5; i++)
    ck_assert_int_eq(
        or_circuit_queue_backward(oc, relay_cell(0x80000005u, 9, i)), 0);
  T.window = 2;
  run_once();
  ck_assert_uint_eq(T.n_sent, 2);
  run_once();
  ck_assert_uint_eq(T.n_sent, 2); /* window full: nothing more */
  /* The cells that left released their tags, in order. */
  ck_assert_uint_eq(T.n_released, 2);
  ck_assert_uint_eq(T.rel_seq[0], 0);
  ck_assert_uint_eq(T.rel_seq[1], 1);
  T.window = 10;
  channel_carried_writable(c);
  run_once();
  ck_assert_uint_eq(T.n_sent, 5);
  ck_assert_uint_eq(T.n_released, 5);
  for (unsigned i = 0; i < 5; i++) {
    ck_assert_uint_eq(T.sent_circid[i], 0x80000005u);
    ck_assert_uint_eq(T.rel_tag[i], 9);
    ck_assert_uint_eq(T.rel_seq[i], i);
  }
  /* Queued cells dropped with the circuit release their tags too. */
  T.window = 0;
  for (uint32_t i = 5; i < 8; i++)
    ck_assert_int_eq(or_circuit_queue_backward(oc, relay_cell(0, 9, i)), 0);
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  run_once();
  ck_assert_uint_eq(T.n_released, 8);
  ck_assert_uint_eq(T.n_closed, 1);
}
END_TEST

START_TEST(test_input_reaches_command)
{
  /* A CREATE2 arriving through the carrier is handled like one from a
   * TLS channel: we are no relay here (no keys), so it is refused with a
   * DESTROY that goes back over the carrier; the cell itself is freed
   * (its tag released). A cell of the wrong length is dropped. */
  channel_t *c = channel_new_carried(&mock_ops, &T, &T.addr[1], T.rsa[1],
                                     T.ed[1], 0, "test");
  packed_cell_t *pc = relay_cell(0x80000007u, 3, 1);
  pc->body[4] = CELL_CREATE2;
  channel_carried_input(c, pc);
  ck_assert_uint_eq(T.n_released, 1);
  ck_assert_uint_eq(T.n_sent, 1);
  ck_assert_uint_eq(T.sent_cmd[0], CELL_DESTROY);
  ck_assert_uint_eq(T.sent_circid[0], 0x80000007u);
  pc = relay_cell(0x80000007u, 3, 2);
  pc->len = 100;
  channel_carried_input(c, pc);
  ck_assert_uint_eq(T.n_released, 2);
  ck_assert_uint_eq(T.n_sent, 1);
  channel_close(c, "test");
  run_once();
  ck_assert_uint_eq(T.n_closed, 1);
}
END_TEST

/* Backpressure all the way (channel.h, doc/backtap.md "End-to-end
 * windows"): the path bit of a new carried channel is set by core at
 * extension time from the origin (always) or the previous hop (its bit),
 * and only on a channel whose carrier has backpressure. */
static channel_t *
extend_from(channel_t *p_chan, uint32_t id)
{
  or_circuit_t *oc = or_circuit_new(p_chan, id);
  cell_t create;
  memset(&create, 0, sizeof(create));
  create.command = CELL_CREATE2;
  ck_assert_int_eq(circuit_extend_to(&oc->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], &create), 0);
  return oc->base.n_chan;
}

START_TEST(test_path_backpressure)
{
  T.provide = 1;
  T.backpressure = 1;
  /* From a TLS channel: BackTap onwards, but not all the way. */
  channel_t *tls =
      channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0], T.ed[0]);
  channel_open_socketless_for_testing(tls);
  ck_assert_int_eq(channel_has_backpressure(tls), 0);
  channel_set_path_backpressure(tls, 1); /* refused: no backpressure */
  ck_assert_int_eq(channel_path_backpressure(tls), 0);
  channel_t *n = extend_from(tls, 0x80000011u);
  ck_assert_int_eq(channel_has_backpressure(n), 1);
  ck_assert_int_eq(channel_path_backpressure(n), 0);
  /* From a BackTap hop whose peer said "all the way": all the way. */
  channel_t *bt = channel_new_carried(&mock_ops, &T, &T.addr[0], T.rsa[0],
                                      T.ed[0], 0, "test");
  channel_carried_set_backpressure(bt);
  channel_set_path_backpressure(bt, 1);
  ck_assert_int_eq(channel_path_backpressure(bt), 1);
  n = extend_from(bt, 0x80000013u);
  ck_assert_int_eq(channel_path_backpressure(n), 1);
  /* From a BackTap hop whose peer did not say so: not all the way. */
  channel_t *bt2 = channel_new_carried(&mock_ops, &T, &T.addr[0], T.rsa[0],
                                       T.ed[0], 0, "test");
  channel_carried_set_backpressure(bt2);
  n = extend_from(bt2, 0x80000015u);
  ck_assert_int_eq(channel_path_backpressure(n), 0);
  /* A carrier without backpressure (TCP-over-DTLS) never has the bit. */
  T.backpressure = 0;
  n = extend_from(bt, 0x80000017u);
  ck_assert_int_eq(channel_has_backpressure(n), 0);
  ck_assert_int_eq(channel_path_backpressure(n), 0);
  /* The origin's first hop over a carrier with backpressure: all the way;
   * over TLS: not. */
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  t.addr = T.addr[1];
  memcpy(t.rsa_id, T.rsa[1], 20);
  memcpy(t.ed_id, T.ed[1], 32);
  t.has_ed_id = 1;
  t.handshake = CIRC_HTYPE_FAST;
  T.backpressure = 1;
  origin_circuit_t *oc = origin_circuit_launch(&t, NULL, NULL);
  ck_assert_ptr_nonnull(oc);
  ck_assert_ptr_eq(oc->base.n_chan, T.carried);
  ck_assert_int_eq(channel_path_backpressure(oc->base.n_chan), 1);
  T.provide = 0;
  oc = origin_circuit_launch(&t, NULL, NULL);
  ck_assert_ptr_nonnull(oc);
  ck_assert(!channel_is_carried(oc->base.n_chan));
  ck_assert_int_eq(channel_path_backpressure(oc->base.n_chan), 0);
}
END_TEST

/* The drain signal of origin circuits without windows (circuit.h): one
 * owner, told when the scheduler takes the queue towards the first hop
 * below its low-water mark (circ_queue_note_removed), not for other
 * queues, not once the circuit is closing. */
static unsigned n_drained;
static origin_circuit_t *last_drained;

static void
drained_cb(origin_circuit_t *circ, void *arg)
{
  ck_assert_ptr_eq(arg, &T);
  n_drained++;
  last_drained = circ;
}

static void
other_drained_cb(origin_circuit_t *circ, void *arg)
{
  (void)circ;
  (void)arg;
}

/* An origin circuit (CREATE_FAST) to peer 1, whose channel the carrier
 * provides when T.provide is set. */
static origin_circuit_t *
launch_fast_to_peer1(void)
{
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  t.addr = T.addr[1];
  memcpy(t.rsa_id, T.rsa[1], 20);
  t.handshake = CIRC_HTYPE_FAST;
  origin_circuit_t *oc = origin_circuit_launch(&t, NULL, NULL);
  ck_assert_ptr_nonnull(oc);
  return oc;
}

START_TEST(test_origin_drain_signal)
{
  n_drained = 0;
  ck_assert_int_eq(circuits_set_origin_drain_fn(drained_cb, &T), 0);
  ck_assert_int_eq(circuits_set_origin_drain_fn(drained_cb, &T), 0);
  ck_assert_int_eq(circuits_set_origin_drain_fn(other_drained_cb, NULL), -1);
  T.provide = 1;
  origin_circuit_t *oc = launch_fast_to_peer1();
  circ_queue_t *q = &oc->base.n_queue;
  q->low_water = 3;
  /* a cell leaving with 3 left, then with 2 left: told once, at 2 */
  packed_cell_t *pc = relay_cell(1, 0, 0);
  for (unsigned left = 3; left >= 2; left--) {
    while (q->cells.n > left)
      packed_cell_free(cell_queue_pop(&q->cells));
    while (q->cells.n < left)
      cell_queue_append(&q->cells, relay_cell(1, 0, 0));
    circ_queue_note_removed(q, pc, 0);
  }
  ck_assert_uint_eq(n_drained, 1);
  ck_assert_ptr_eq(last_drained, oc);
  /* an or_circuit's queue goes to its edge, not to the origins' owner */
  channel_t *in =
      channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0], T.ed[0]);
  channel_open_socketless_for_testing(in);
  or_circuit_t *orc = or_circuit_new(in, 0x80000021u);
  circuit_queue_drained(&orc->base, &orc->p_queue);
  ck_assert_uint_eq(n_drained, 1);
  /* nor anything once the circuit is closing */
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  circ_queue_note_removed(q, pc, 0);
  ck_assert_uint_eq(n_drained, 1);
  packed_cell_free(pc);
  ck_assert_int_eq(circuits_set_origin_drain_fn(NULL, NULL), 0);
  ck_assert_int_eq(circuits_set_origin_drain_fn(other_drained_cb, NULL), 0);
  circuits_set_origin_drain_fn(NULL, NULL);
}
END_TEST

/* Fill q to n cells (not scheduled: test cells straight into the list). */
static void
fill_to(circ_queue_t *q, unsigned n)
{
  while (q->cells.n > n)
    packed_cell_free(cell_queue_pop(&q->cells));
  while (q->cells.n < n)
    cell_queue_append(&q->cells, relay_cell(1, 0, 0));
}

START_TEST(test_nowin_limit_follows_window)
{
  /* The pure rule: the window, at least EDGE_NOWIN_QUEUE_MIN, at most
   * EDGE_NOWIN_QUEUE_MAX; no window known: EDGE_NOWIN_QUEUE_MAX. */
  ck_assert_uint_eq(edge_nowin_queue_limit(0), EDGE_NOWIN_QUEUE_MAX);
  ck_assert_uint_eq(edge_nowin_queue_limit(2), EDGE_NOWIN_QUEUE_MIN);
  ck_assert_uint_eq(edge_nowin_queue_limit(40), 40);
  ck_assert_uint_eq(edge_nowin_queue_limit(5000), EDGE_NOWIN_QUEUE_MAX);

  /* Exit towards the client: an or_circuit whose previous hop is a
   * carried channel; its p_queue's limit is the carrier's window. */
  channel_t *c = channel_new_carried(&mock_ops, &T, &T.addr[1], T.rsa[1],
                                     T.ed[1], 0, "test");
  ck_assert_uint_eq(channel_carried_window(c), 0);
  /* channel_sockstat() asks the carrier (MeasureMe's rows of carried
   * hops), not a socket the channel does not have */
  sockstat_tcp_t st;
  ck_assert_int_eq(channel_sockstat(c, &st), 0);
  ck_assert_uint_eq(st.cwnd, 17);
  ck_assert_uint_eq(st.sndbuf_full, 3);
  /* and channel_carried_flowstat() its flow control */
  channel_flowstat_t fs;
  T.hop_window = 7;
  ck_assert_int_eq(channel_carried_flowstat(c, &fs), 0);
  ck_assert_uint_eq(fs.window, 7);
  ck_assert_uint_eq(fs.base_rtt_us, 20000);
  T.hop_window = 0;
  or_circuit_t *orc = or_circuit_new(c, 0x80000031u);
  or_circuit_set_nowin(orc);
  circ_queue_t *pq = &orc->p_queue;
  ck_assert_uint_eq(circ_queue_nowin_limit(pq), EDGE_NOWIN_QUEUE_MAX);
  T.hop_window = 40;
  ck_assert_uint_eq(channel_carried_window(c), 40);
  fill_to(pq, 39);
  ck_assert_uint_eq(circ_queue_nowin_limit(pq), 40);
  ck_assert_uint_eq(pq->low_water, EDGE_NOWIN_QUEUE_MAX / 2); /* untouched */
  fill_to(pq, 40);
  ck_assert_uint_eq(circ_queue_nowin_limit(pq), 40);
  ck_assert_uint_eq(pq->low_water, 20); /* stopped: woken at half */
  /* The window shrank (Vegas backs off): fewer may wait. */
  T.hop_window = 24;
  ck_assert_uint_eq(circ_queue_nowin_limit(pq), 24);
  ck_assert_uint_eq(pq->low_water, 12);
  T.hop_window = 3;
  ck_assert_uint_eq(circ_queue_nowin_limit(pq), EDGE_NOWIN_QUEUE_MIN);
  ck_assert_uint_eq(pq->low_water, EDGE_NOWIN_QUEUE_MIN / 2);
  fill_to(pq, 0);

  /* Client towards the exit: the origin circuit's queue towards its
   * first hop (a carried channel), and the drain notice at half of the
   * limit that stopped it. */
  n_drained = 0;
  ck_assert_int_eq(circuits_set_origin_drain_fn(drained_cb, &T), 0);
  T.provide = 1;
  origin_circuit_t *oc = launch_fast_to_peer1();
  circ_queue_t *q = &oc->base.n_queue;
  ck_assert_ptr_eq(q->chan, T.carried);
  T.hop_window = 30;
  fill_to(q, 30);
  ck_assert_uint_eq(circ_queue_nowin_limit(q), 30);
  ck_assert_uint_eq(q->low_water, 15);
  /* draining: nothing until the queue goes below 15, then once */
  packed_cell_t *pc = relay_cell(1, 0, 0);
  for (unsigned left = 29; left >= 10; left--) {
    fill_to(q, left);
    circ_queue_note_removed(q, pc, 0);
    ck_assert_uint_eq(n_drained, left >= 15 ? 0 : 1);
  }
  ck_assert_ptr_eq(last_drained, oc);
  /* a carrier without a window: the hard cap */
  channel_t *c2 = channel_new_carried(&mock_ops_nowindow, &T, &T.addr[0],
                                      T.rsa[0], T.ed[0], 0, "test");
  ck_assert_uint_eq(channel_carried_window(c2), 0);
  ck_assert_int_eq(channel_sockstat(c2, &st), -1);
  ck_assert_int_eq(channel_carried_flowstat(c2, &fs), -1);
  /* a channel that is not carried has none */
  channel_t *plain =
      channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0], T.ed[0]);
  ck_assert_int_eq(channel_carried_flowstat(plain, &fs), -1);
  /* the transport's name (MeasureMe's "transport") */
  ck_assert_str_eq(channel_transport_name(plain), "TLS");
  ck_assert_str_eq(channel_transport_name(c2), "test");
  or_circuit_t *orc2 = or_circuit_new(c2, 0x80000033u);
  ck_assert_uint_eq(circ_queue_nowin_limit(&orc2->p_queue),
                    EDGE_NOWIN_QUEUE_MAX);
  packed_cell_free(pc);
  fill_to(q, 0);
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  circuit_mark_for_close(&orc->base, DESTROY_REASON_NONE);
  circuit_mark_for_close(&orc2->base, DESTROY_REASON_NONE);
  run_once();
  circuits_set_origin_drain_fn(NULL, NULL);
}
END_TEST

Suite *
suite_btcirc(void)
{
  Suite *s = suite_create("btcirc");
  TCase *tc = tcase_create("carried");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_release_hook);
  tcase_add_test(tc, test_extension_over_carrier);
  tcase_add_test(tc, test_window_gates_scheduler);
  tcase_add_test(tc, test_input_reaches_command);
  tcase_add_test(tc, test_path_backpressure);
  tcase_add_test(tc, test_origin_drain_signal);
  tcase_add_test(tc, test_nowin_limit_follows_window);
  suite_add_tcase(s, tc);
  return s;
}
