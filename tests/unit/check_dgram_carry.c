/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dgram_carry.c -- the carried-hop glue that BackTap and
 * TCP-over-DTLS share (feature/dgram/dgram_carry), driven by a mock
 * transport whose engine is a window the test opens by hand, on two real
 * datagram link layers on 127.0.0.1 (fixture_dgram) and the circuit layer
 * without sockets.
 *
 * Checked: the hooks (a second transport of the same class is refused; a
 * taken record type makes the attach fail and undo its steps); the link
 * record follows the datagram link up and down, and a link going down
 * closes its hops' channels; an extension chooses the transport when the
 * link is up and outgoing is on (a carried channel whose CREATE2 waits as
 * a direct cell while the engine has no room), and falls back to TLS,
 * counted, when the engine refuses the hop; cells of a hop a peer opened
 * go out as the window allows, and cells delivered upward release their
 * tag when they leave; the bandwidth limits hold a hop's cells back until
 * the refill, then wake it.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_dgram.h"
#include "fixture_relay.h"
#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/proto/cell.h"
#include "feature/dgram/dgram_carry.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/net/ratelimit.h"

Suite *suite_dgram_carry(void);

#define MOCK_REC 0x50
#define MAX_SENT 64

static struct {
  fixture_dgram_pair_t p;
  dgram_carry_t *c;
  dgram_link_t *l;                 /* d0's link to d1 */
  /* the mock engine */
  dgram_carry_link_t *lk;
  dgram_carry_hop_t *hop;          /* the last outgoing hop */
  unsigned n_up, n_down, n_records, n_closed_hops, n_released;
  int refuse_connect;
  unsigned room;
  unsigned n_sent;
  uint8_t sent_cmd[MAX_SENT];
} T;

#define RUN_UNTIL(cond) FIXTURE_RUN_UNTIL(T.p.loop, T.p.timeout, cond)

static int
m_link_up(dgram_carry_link_t *lk)
{
  T.n_up++;
  T.lk = lk;
  return 0;
}

static void
m_link_down(dgram_carry_link_t *lk)
{
  ck_assert_ptr_eq(lk, T.lk);
  ck_assert(dlist_is_empty(&lk->hops));
  T.n_down++;
  T.lk = NULL;
}

static void
m_record(dgram_carry_link_t *lk, uint8_t type, const uint8_t *body,
         size_t len)
{
  (void)lk;
  (void)body;
  (void)len;
  ck_assert_uint_eq(type, MOCK_REC);
  T.n_records++;
}

static const char *
m_hop_connect(dgram_carry_hop_t *h)
{
  if (T.refuse_connect)
    return "the mock refuses";
  T.hop = h;
  return NULL;
}

static int
m_hop_can_send(dgram_carry_hop_t *h)
{
  (void)h;
  return T.room > 0;
}

static int
m_hop_send(dgram_carry_hop_t *h, const uint8_t *cell)
{
  (void)h;
  ck_assert_uint_lt(T.n_sent, MAX_SENT);
  T.sent_cmd[T.n_sent++] = cell[4];
  if (T.room)
    T.room--;
  return 0;
}

static int
m_hop_alive(const dgram_carry_hop_t *h)
{
  (void)h;
  return 1;
}

static void
m_hop_close(dgram_carry_hop_t *h)
{
  (void)h;
  T.n_closed_hops++;
}

static void
m_released(dgram_carry_hop_t *h, uint32_t seq)
{
  (void)h;
  ck_assert_uint_eq(seq, 7);
  T.n_released++;
}

static size_t
m_hop_mem(const dgram_carry_hop_t *h)
{
  (void)h;
  return 1000;
}

static const dgram_carry_ops_t mock_ops = {
    .name = "Mock",
    .chan_kind = "(mock)",
    .transport = CIRCUIT_TRANSPORT_BACKTAP,
    .tag_class = 2,
    .link_size = sizeof(dgram_carry_link_t),
    .hop_size = sizeof(dgram_carry_hop_t),
    .record_types = {MOCK_REC, 0},
    .link_up = m_link_up,
    .link_down = m_link_down,
    .record = m_record,
    .hop_connect = m_hop_connect,
    .hop_can_send = m_hop_can_send,
    .hop_send = m_hop_send,
    .hop_alive = m_hop_alive,
    .hop_close = m_hop_close,
    .released = m_released,
    .hop_mem = m_hop_mem,
};

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  fixture_dgram_pair_start(&T.p, "carry", 0, 1);
  T.c = dgram_carry_new(T.p.loop, T.p.fx[0].d, &mock_ops, &T);
  ck_assert_ptr_nonnull(T.c);
  ck_assert_ptr_eq(dgram_carry_arg(T.c), &T);
  T.l = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                        T.p.fx[1].keys->ed_identity.pub,
                        T.p.fx[1].keys->rsa_id_digest);
  ck_assert_ptr_nonnull(T.l);
  RUN_UNTIL(T.n_up == 1);
  ck_assert_uint_eq(T.n_up, 1);
  ck_assert_ptr_nonnull(T.lk);
  ck_assert_ptr_eq(T.lk->dl, T.l);
}

static void
teardown(void)
{
  dgram_carry_free(T.c);
  fixture_dgram_pair_free(&T.p);
}

static packed_cell_t *
relay_cell(uint32_t circid)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, sizeof(pc->body));
  set_u32(pc->body, circid);
  pc->body[4] = CELL_RELAY;
  pc->len = CELL_MAX_NETWORK_LEN;
  return pc;
}

/* A hop the peer opened, with its channel and an or_circuit on it. */
static or_circuit_t *
peer_hop(uint32_t circid)
{
  dgram_carry_hop_t *h = dgram_carry_hop_accept(T.lk, 0);
  ck_assert_ptr_nonnull(h);
  dgram_carry_hop_open_channel(h);
  ck_assert(channel_is_carried(h->chan) && !channel_is_outgoing(h->chan));
  T.hop = h;
  return or_circuit_new(h->chan, circid);
}

START_TEST(test_hooks)
{
  /* the same class again: refused */
  ck_assert_ptr_null(dgram_carry_new(T.p.loop, T.p.fx[0].d, &mock_ops, NULL));
  /* another class whose record type is taken: refused, steps undone */
  dgram_carry_ops_t other = mock_ops;
  other.tag_class = 3;
  ck_assert_ptr_null(dgram_carry_new(T.p.loop, T.p.fx[0].d, &other, NULL));
  other.record_types[0] = MOCK_REC + 1;
  dgram_carry_t *c3 = dgram_carry_new(T.p.loop, T.p.fx[0].d, &other, NULL);
  ck_assert_ptr_nonnull(c3);
  dgram_carry_free(c3);
  /* records of the type reach the link record */
  dgram_link_t *r = dgram_link_find(T.p.fx[1].d, T.p.fx[0].keys->ed_identity.pub);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(dgram_link_send(r, MOCK_REC, (const uint8_t *)"x", 1), 0);
  RUN_UNTIL(T.n_records == 1);
  ck_assert_uint_eq(T.n_records, 1);
}
END_TEST

/* A circuit from in extended to d1's relay (its CREATE2 written). */
static or_circuit_t *
extend(channel_t *in, uint32_t circid)
{
  cell_t create;
  memset(&create, 0, sizeof(create));
  create.command = CELL_CREATE2;
  or_circuit_t *oc = or_circuit_new(in, circid);
  ck_assert_int_eq(circuit_extend_to(&oc->base, dgram_bound_addr(T.p.fx[1].d),
                                     T.p.fx[1].keys->rsa_id_digest,
                                     T.p.fx[1].keys->ed_identity.pub, &create),
                   0);
  return oc;
}

START_TEST(test_extension)
{
  channel_t *in = channel_accept_socketless_for_testing(
      dgram_bound_addr(T.p.fx[1].d), T.p.fx[1].keys->rsa_id_digest,
      T.p.fx[1].keys->ed_identity.pub);
  channel_open_socketless_for_testing(in);
  /* outgoing off: TLS, without a word from the transport */
  or_circuit_t *oc = extend(in, 0x80000001u);
  ck_assert(!channel_is_carried(oc->base.n_chan));
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  /* on, but the engine refuses the hop: TLS, counted */
  dgram_carry_set_outgoing(T.c, 1);
  T.refuse_connect = 1;
  oc = extend(in, 0x80000003u);
  ck_assert(!channel_is_carried(oc->base.n_chan));
  dgram_carry_stats_t st;
  dgram_carry_get_stats(T.c, &st);
  ck_assert_uint_eq(st.ext_tls, 1);
  ck_assert_uint_eq(st.ext_tls_no_port, 0);   /* its port is known */
  ck_assert_uint_eq(st.hops, 0);
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  /* a relay whose DatagramPort nobody announced: TLS, counted apart */
  {
    uint8_t rsa[20], ed[32];
    memset(rsa, 0x41, sizeof(rsa));
    memset(ed, 0x42, sizeof(ed));
    cell_t create;
    memset(&create, 0, sizeof(create));
    create.command = CELL_CREATE2;
    oc = or_circuit_new(in, 0x80000007u);
    ck_assert_int_eq(circuit_extend_to(&oc->base, dgram_bound_addr(T.p.fx[1].d), rsa,
                                       ed, &create),
                     0);
    ck_assert(!oc->base.n_chan || !channel_is_carried(oc->base.n_chan));
    dgram_carry_get_stats(T.c, &st);
    ck_assert_uint_eq(st.ext_tls, 2);
    ck_assert_uint_eq(st.ext_tls_no_port, 1);
    circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  }
  /* carried: the CREATE2 waits for room as a direct cell */
  T.refuse_connect = 0;
  oc = extend(in, 0x80000005u);
  channel_t *n = oc->base.n_chan;
  ck_assert(channel_is_carried(n) && channel_is_outgoing(n));
  ck_assert_ptr_eq(T.hop->chan, n);
  dgram_carry_get_stats(T.c, &st);
  ck_assert_uint_eq(st.ext_carried, 1);
  ck_assert_uint_eq(st.hops, 1);
  ck_assert_uint_eq(st.direct_queued, 1);
  ck_assert_uint_eq(T.n_sent, 0);
  T.room = 4;
  dgram_carry_hop_writable(T.hop);
  ck_assert_uint_eq(T.n_sent, 1);
  ck_assert_uint_eq(T.sent_cmd[0], CELL_CREATE2);
  /* the circuit goes: DESTROY out, channel closed, hop ended */
  circuit_mark_for_close(&oc->base, DESTROY_REASON_NONE);
  RUN_UNTIL(T.n_closed_hops == 1);
  ck_assert_uint_eq(T.sent_cmd[T.n_sent - 1], CELL_DESTROY);
  ck_assert_uint_eq(T.n_closed_hops, 1);
  dgram_carry_get_stats(T.c, &st);
  ck_assert_uint_eq(st.hops, 0);
}
END_TEST

START_TEST(test_peer_hop_window_release_down)
{
  or_circuit_t *oc = peer_hop(0x80000007u);
  dgram_carry_stats_t st;
  dgram_carry_get_stats(T.c, &st);
  ck_assert_uint_eq(st.hops_in, 1);
  ck_assert_uint_eq(st.hops, 1);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(or_circuit_queue_backward(oc, relay_cell(0)), 0);
  T.room = 2;
  RUN_UNTIL(T.n_sent == 2);
  ck_assert_uint_eq(T.n_sent, 2);
  T.room = 10;
  dgram_carry_hop_writable(T.hop);
  RUN_UNTIL(T.n_sent == 5);
  ck_assert_uint_eq(T.n_sent, 5);
  /* a cell delivered upward releases its tag when it is freed */
  uint8_t cell[CELL_MAX_NETWORK_LEN];
  memset(cell, 0, sizeof(cell));
  set_u32(cell, 0x80000007u);
  cell[4] = CELL_PADDING;
  dgram_carry_hop_input(T.hop, cell, 7);
  ck_assert_uint_eq(T.n_released, 1);
  /* the link goes down: the hop's channel and circuit close */
  channel_t *chan = T.hop->chan;
  dgram_link_close(T.l, "test");
  RUN_UNTIL(T.n_down == 1);
  ck_assert_uint_eq(T.n_down, 1);
  ck_assert(!channel_is_open(chan));
  dgram_carry_get_stats(T.c, &st);
  ck_assert_uint_eq(st.hops, 0);
  ck_assert_uint_eq(st.links, 0);
}
END_TEST

START_TEST(test_bandwidth)
{
  /* d0 writes under 20 KB/s: once the tokens are spent (by records sent
   * anyway, which may overdraw them), the hop's cells wait; the refill
   * that repays the deficit wakes them. */
  ratelimit_t *rl = ratelimit_new(T.p.loop, 20000, 20000, 100);
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  cfg.bw_global = rl;
  cfg.count_private = 1;
  dgram_reconfigure(T.p.fx[0].d, &cfg);
  or_circuit_t *oc = peer_hop(0x80000009u);
  uint8_t body[1000];
  memset(body, 0, sizeof(body));
  /* spent and overdrawn: half a second before the next token */
  while (ratelimit_tokens(rl, RATELIMIT_WRITE) > -10000) {
    ck_assert_int_eq(dgram_link_send(T.l, MOCK_REC, body, sizeof(body)), 0);
    dgram_link_flush(T.l);
  }
  T.room = 10;
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(or_circuit_queue_backward(oc, relay_cell(0)), 0);
  dgram_carry_stats_t st;
  RUN_UNTIL((dgram_carry_get_stats(T.c, &st), st.bw_blocked > 0));
  ck_assert_uint_eq(st.bw_blocked, 1);
  ck_assert_uint_eq(T.n_sent, 0);
  ck_assert_int_le(ratelimit_tokens(rl, RATELIMIT_WRITE), 0);
  RUN_UNTIL(T.n_sent == 3);
  ck_assert_uint_eq(T.n_sent, 3);
  ck_assert_int_gt(ratelimit_tokens(rl, RATELIMIT_WRITE), 0);
  cfg.bw_global = NULL;
  dgram_reconfigure(T.p.fx[0].d, &cfg);
  ratelimit_free(rl);
}
END_TEST

Suite *
suite_dgram_carry(void)
{
  Suite *s = suite_create("dgram_carry");
  TCase *tc = tcase_create("mock");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_hooks);
  tcase_add_test(tc, test_extension);
  tcase_add_test(tc, test_peer_hop_window_release_down);
  tcase_add_test(tc, test_bandwidth);
  suite_add_tcase(s, tc);
  return s;
}
