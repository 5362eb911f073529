/* SPDX-License-Identifier: BSD-3-Clause */
/* check_utcp.c -- the user-level TCP glue (lib/utcp) on lwIP, in one
 * process: lwIP has one global stack, so the test makes two *peers* of
 * that stack and wires their outputs crosswise (what peer A sends is input
 * of peer B and back), which is what two relays' stacks see over a
 * datagram link, only both ends live in one stack. Segments are queued and
 * delivered from the test's loop (never inside lwIP), and can be dropped
 * to exercise retransmission. Skipped (one passing test saying so) in a
 * build without lwIP.
 */
#include "lib/evloop/evloop.h"
#include "lib/malloc/memacct.h"
#include "lib/utcp/utcp.h"

#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *suite_utcp(void);

#define QMAX 4096
typedef struct seg_t {
  size_t len;
  uint8_t b[UTCP_SEG_MAX];
} seg_t;

typedef struct side_t {
  utcp_peer_t *peer;
  seg_t *q;           /* segments this peer sent, for the other one */
  unsigned n;
  unsigned drop_at;   /* drop the drop_at-th data segment (1-based), 0: no */
  unsigned n_data;
  unsigned dropped;
  /* the connection at this side */
  utcp_conn_t *c;
  uint8_t *rx;
  size_t rx_len, rx_cap;
  int closed;
  char why[64];
  unsigned sent_calls;
  int refuse;
} side_t;

static struct {
  evloop_t *loop;
  evloop_timer_t *tick;
  utcp_t *u;
  side_t s[2];
} T;

static void
out_cb(void *arg, const uint8_t *seg, size_t len)
{
  side_t *s = arg;
  ck_assert_uint_le(len, UTCP_SEG_MAX);
  ck_assert_uint_ge(len, UTCP_SEG_MIN);
  size_t hl = (size_t)(seg[12] >> 4) * 4;
  if (len > hl) {
    s->n_data++;
    if (s->drop_at && s->n_data == s->drop_at) {
      s->dropped++;
      return;
    }
  }
  ck_assert_uint_lt(s->n, QMAX);
  s->q[s->n].len = len;
  memcpy(s->q[s->n].b, seg, len);
  s->n++;
}

static void
c_recv(void *arg, const uint8_t *data, size_t len)
{
  side_t *s = arg;
  if (s->rx_len + len > s->rx_cap) {
    s->rx_cap = (s->rx_len + len) * 2;
    s->rx = realloc(s->rx, s->rx_cap);
  }
  memcpy(s->rx + s->rx_len, data, len);
  s->rx_len += len;
}

static void
c_sent(void *arg)
{
  side_t *s = arg;
  s->sent_calls++;
}

static void
c_closed(void *arg, const char *why)
{
  side_t *s = arg;
  s->closed++;
  snprintf(s->why, sizeof(s->why), "%s", why);
  s->c = NULL;
}

static const utcp_conn_ops_t ops = {c_recv, c_sent, c_closed};

static const utcp_conn_ops_t *
accept_cb(void *peer_arg, utcp_conn_t *c, void **conn_arg)
{
  side_t *s = peer_arg;
  if (s->refuse)
    return NULL;
  s->c = c;
  *conn_arg = s;
  return &ops;
}

static void
on_tick(void *arg)
{
  (void)arg;
  evloop_exit(T.loop);
}

/* One round: run the loop ~5 ms (flushes, lwIP timers), then deliver what
 * each side sent to the other. */
static void
pump(void)
{
  evloop_timer_schedule(T.tick, 5000);
  evloop_run(T.loop);
  for (int i = 0; i < 2; i++) {
    side_t *from = &T.s[i], *to = &T.s[1 - i];
    unsigned n = from->n;
    seg_t *q = malloc(sizeof(seg_t) * (n ? n : 1));
    memcpy(q, from->q, sizeof(seg_t) * n);
    from->n = 0;
    for (unsigned k = 0; k < n; k++)
      if (to->peer)
        (void)utcp_peer_input(to->peer, q[k].b, q[k].len);
    free(q);
  }
}

#define PUMP_UNTIL(cond, rounds)                                             \
  do {                                                                       \
    for (int k_ = 0; k_ < (rounds) && !(cond); k_++)                         \
      pump();                                                                \
  } while (0)

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  T.loop = evloop_new();
  T.tick = evloop_timer_new(T.loop, on_tick, NULL);
  if (!utcp_available())
    return;
  T.u = utcp_new(T.loop, 1146);
  ck_assert_ptr_nonnull(T.u);
  for (int i = 0; i < 2; i++) {
    T.s[i].q = calloc(QMAX, sizeof(seg_t));
    T.s[i].peer = utcp_peer_new(T.u, out_cb, accept_cb, &T.s[i]);
    ck_assert_ptr_nonnull(T.s[i].peer);
  }
}

static void
teardown(void)
{
  for (int i = 0; i < 2; i++) {
    utcp_peer_free(T.s[i].peer);
    free(T.s[i].q);
    free(T.s[i].rx);
  }
  utcp_free(T.u);
  evloop_timer_free(T.tick);
  evloop_free(T.loop);
}

START_TEST(test_no_lwip)
{
  if (utcp_available())
    return;
  ck_assert_ptr_null(utcp_new(T.loop, 1146));
}
END_TEST

/* Connect A -> B, bytes both ways in order, the window reopening only
 * when consumed, then a graceful close seen by the other end. */
START_TEST(test_connect_data_close)
{
  if (!utcp_available())
    return;
  side_t *a = &T.s[0], *b = &T.s[1];
  ck_assert_ptr_null(utcp_new(T.loop, 1146)); /* one stack per process */
  a->c = utcp_connect(a->peer, &ops, a);
  ck_assert_ptr_nonnull(a->c);
  /* data written before the handshake completes */
  uint8_t msg[514];
  for (size_t i = 0; i < sizeof(msg); i++)
    msg[i] = (uint8_t)i;
  ck_assert_int_eq(utcp_conn_write(a->c, msg, sizeof(msg)), 0);
  PUMP_UNTIL(b->c && b->rx_len == sizeof(msg), 50);
  ck_assert_ptr_nonnull(b->c);
  ck_assert_uint_eq(utcp_peer_n_conns(b->peer), 1);
  ck_assert_uint_eq(b->rx_len, sizeof(msg));
  ck_assert_mem_eq(b->rx, msg, sizeof(msg));
  utcp_conn_consumed(b->c, b->rx_len);

  /* 200 KB from B to A: more than the window, so it needs consumption */
  size_t total = 200 * 1024, off = 0;
  uint8_t *big = malloc(total);
  for (size_t i = 0; i < total; i++)
    big[i] = (uint8_t)(i * 7 + 3);
  size_t consumed = 0;
  int saw_full = 0;
  utcp_conn_info_t in;
  for (int round = 0; round < 2000 && a->rx_len < total; round++) {
    while (off < total) {
      size_t room = utcp_conn_room(b->c);
      size_t n = total - off < 514 ? total - off : 514;
      if (room < n)
        break;
      ck_assert_int_eq(utcp_conn_write(b->c, big + off, n), 0);
      off += n;
    }
    /* what the stack says of the sender: the send buffer is what was
     * sent and not acknowledged plus what was never sent; nothing beyond
     * the peer's window is in flight; the limits are the library's */
    ck_assert_int_eq(utcp_conn_info(b->c, &in), 0);
    ck_assert_uint_eq(in.queued, in.inflight + in.unsent);
    ck_assert_uint_le(in.inflight, in.snd_wnd + in.mss);
    ck_assert_uint_le(in.queued, in.snd_buf_max);
    ck_assert_uint_ge(in.cwnd, in.mss);
    if (off < total && in.queued + 514 > in.snd_buf_max)
      saw_full = 1;
    pump();
    /* the window is 64 KB: nothing beyond it arrives unconsumed */
    ck_assert_uint_le(a->rx_len - consumed, 65535);
    if (round % 3 == 0) {
      utcp_conn_consumed(a->c, a->rx_len - consumed);
      consumed = a->rx_len;
    }
  }
  ck_assert_uint_eq(a->rx_len, total);
  ck_assert_mem_eq(a->rx, big, total);
  ck_assert_uint_gt(b->sent_calls, 0);
  free(big);
  /* the receiver held data back, so the sender met its send buffer */
  ck_assert(saw_full);
  /* the last acknowledgements come back */
  utcp_conn_consumed(a->c, a->rx_len - consumed);
  for (int k = 0; k < 50; k++) {
    ck_assert_int_eq(utcp_conn_info(b->c, &in), 0);
    if (!in.queued)
      break;
    pump();
  }
  ck_assert_uint_eq(in.mss, 1146 - 20);
  ck_assert_uint_eq(in.snd_buf_max, 0xffff); /* Debian's TCP_SND_BUF */
  ck_assert_uint_eq(in.wnd_max, 0xffff);     /* ... and TCP_WND */
  ck_assert_uint_eq(in.queued, 0);
  ck_assert_uint_eq(in.inflight, 0);
  ck_assert_uint_eq(in.retrans, 0);          /* nothing was lost */
  ck_assert_uint_ge(in.rto_ms, 500);         /* whole 500 ms ticks */
  ck_assert_uint_eq(in.rto_ms % 500, 0);

  utcp_stats_t st;
  utcp_get_stats(T.u, &st);
  ck_assert_uint_eq(st.conns, 2);
  ck_assert_uint_eq(st.conns_opened, 1);
  ck_assert_uint_eq(st.conns_accepted, 1);
  ck_assert_uint_gt(st.pcb_bytes, 0);
  ck_assert_uint_eq(st.dropped_bad, 0);
  ck_assert_uint_eq(st.retrans, 0);
  ck_assert_uint_eq(st.timeouts + st.fast_retransmits, 0);

  /* A closes: B hears it; A's record is gone at once */
  utcp_conn_close(a->c);
  a->c = NULL;
  PUMP_UNTIL(b->closed, 50);
  ck_assert_int_eq(b->closed, 1);
  ck_assert_str_eq(b->why, "closed by the peer");
  ck_assert_int_eq(a->closed, 0);
  utcp_get_stats(T.u, &st);
  ck_assert_uint_eq(st.conns, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_UTCP), 0);
}
END_TEST

/* A lost data segment is recovered (fast retransmit or timeout). */
START_TEST(test_loss_recovered)
{
  if (!utcp_available())
    return;
  side_t *a = &T.s[0], *b = &T.s[1];
  a->c = utcp_connect(a->peer, &ops, a);
  a->drop_at = 3;
  size_t total = 40 * 514, off = 0;
  uint8_t *big = malloc(total);
  for (size_t i = 0; i < total; i++)
    big[i] = (uint8_t)(i * 13 + 1);
  for (int round = 0; round < 1500 && b->rx_len < total; round++) {
    while (off < total && utcp_conn_room(a->c) >= 514) {
      ck_assert_int_eq(utcp_conn_write(a->c, big + off, 514), 0);
      off += 514;
    }
    pump();
    if (b->c && b->rx_len)
      utcp_conn_consumed(b->c, b->rx_len);
  }
  ck_assert_uint_eq(a->dropped, 1);
  ck_assert_uint_eq(b->rx_len, total);
  ck_assert_mem_eq(b->rx, big, total);
  free(big);
  /* the loss was repaired by one recovery (a timeout or a fast
   * retransmit) that resent the lost segment, perhaps with the ones after
   * it (after a timeout lwIP resends everything unacknowledged); the
   * receiver, which lost nothing, retransmitted nothing */
  utcp_conn_info_t in;
  ck_assert_int_eq(utcp_conn_info(a->c, &in), 0);
  ck_assert_uint_ge(in.retrans, 1);
  ck_assert_uint_le(in.retrans, 40);
  ck_assert_uint_eq(in.timeouts + in.fast_retransmits, 1);
  ck_assert_int_eq(utcp_conn_info(b->c, &in), 0);
  ck_assert_uint_eq(in.retrans, 0);
  utcp_stats_t st;
  utcp_get_stats(T.u, &st);
  ck_assert_uint_ge(st.retrans, 1);
  ck_assert_uint_eq(st.timeouts + st.fast_retransmits, 1);
}
END_TEST

/* Bad segments are dropped before the stack; a refused connection is
 * reset and the opener hears it; freeing a peer closes its connections. */
START_TEST(test_bad_input_refusal_peer_free)
{
  if (!utcp_available())
    return;
  side_t *a = &T.s[0], *b = &T.s[1];
  uint8_t junk[1500];
  memset(junk, 0xff, sizeof(junk));
  ck_assert_int_eq(utcp_peer_input(b->peer, junk, 10), -1);     /* short */
  ck_assert_int_eq(utcp_peer_input(b->peer, junk, 1400), -1);   /* long */
  junk[12] = 0xf0; /* data offset 60 > length 40 */
  ck_assert_int_eq(utcp_peer_input(b->peer, junk, 40), -1);
  memset(junk, 0, sizeof(junk));
  junk[12] = 0x50;
  junk[13] = 0x10; /* a stray ACK with a bad checksum: the stack drops it */
  ck_assert_int_eq(utcp_peer_input(b->peer, junk, 20), 0);
  utcp_stats_t st;
  utcp_get_stats(T.u, &st);
  ck_assert_uint_eq(st.dropped_bad, 3);

  b->refuse = 1;
  a->c = utcp_connect(a->peer, &ops, a);
  PUMP_UNTIL(a->closed, 50);
  ck_assert_int_eq(a->closed, 1);
  ck_assert_str_eq(a->why, "reset by the peer");
  ck_assert_ptr_null(b->c);

  b->refuse = 0;
  a->closed = 0;
  a->c = utcp_connect(a->peer, &ops, a);
  PUMP_UNTIL(b->c, 50);
  ck_assert_ptr_nonnull(b->c);
  utcp_peer_free(b->peer);
  ck_assert_int_eq(b->closed, 1);
  ck_assert_str_eq(b->why, "its link closed");
  /* A's connection is reset by nobody (B's output is gone): it stays
   * until A closes it. */
  ck_assert_ptr_nonnull(a->c);
  utcp_conn_abort(a->c);
  a->c = NULL;
  utcp_get_stats(T.u, &st);
  ck_assert_uint_eq(st.conns, 0);
  ck_assert_uint_eq(st.peers, 1);
}
END_TEST

/* SYNs beyond the per-peer rate, or beyond the half-open limit, are
 * dropped before the stack; half-open connections are in the memory
 * budget, and a peer's RST for one frees its slot. */
START_TEST(test_syn_limits)
{
  if (!utcp_available())
    return;
  side_t *b = &T.s[1];
  uint8_t syn[20];
  memset(syn, 0, sizeof(syn));
  syn[3] = 1; /* to the listening port */
  syn[12] = 0x50;
  syn[13] = 0x02;
  uint64_t mem0 = memacct_get(MEMACCT_UTCP);
  unsigned refused = 0;
  utcp_peer_set_syn_limit(b->peer, 1000000, 1000000); /* rate: below */
  for (int i = 0; i < 1500; i++) {
    syn[0] = (uint8_t)((2000 + i) >> 8);
    syn[1] = (uint8_t)(2000 + i);
    if (utcp_peer_input(b->peer, syn, sizeof(syn)) < 0)
      refused++;
  }
  /* 1024 half-open at most */
  ck_assert_uint_eq(refused, 1500 - 1024);
  ck_assert_uint_eq(memacct_get(MEMACCT_UTCP) - mem0, 1024 * 512);
  /* a repeated SYN for a known one passes (it refreshes the entry) */
  syn[0] = (uint8_t)(2000 >> 8);
  syn[1] = (uint8_t)2000;
  ck_assert_int_eq(utcp_peer_input(b->peer, syn, sizeof(syn)), 0);
  /* the peer's RST frees the slot: one new SYN passes again */
  syn[13] = 0x04;
  ck_assert_int_eq(utcp_peer_input(b->peer, syn, sizeof(syn)), 0);
  syn[13] = 0x02;
  syn[0] = (uint8_t)(9000 >> 8);
  syn[1] = (uint8_t)9000;
  ck_assert_int_eq(utcp_peer_input(b->peer, syn, sizeof(syn)), 0);
  syn[1]++;
  ck_assert_int_eq(utcp_peer_input(b->peer, syn, sizeof(syn)), -1);
  utcp_stats_t st;
  utcp_get_stats(T.u, &st);
  ck_assert_uint_eq(st.dropped_syn_rate, refused + 1);
  /* the rate: with a small burst, new SYNs stop at once */
  utcp_peer_set_syn_limit(T.s[0].peer, 1, 5);
  refused = 0;
  for (int i = 0; i < 20; i++) {
    syn[0] = (uint8_t)((3000 + i) >> 8);
    syn[1] = (uint8_t)(3000 + i);
    if (utcp_peer_input(T.s[0].peer, syn, sizeof(syn)) < 0)
      refused++;
  }
  ck_assert_uint_ge(refused, 14);
  /* freeing the peers gives the budget back (teardown checks 0) */
  utcp_peer_free(T.s[0].peer);
  utcp_peer_free(T.s[1].peer);
  ck_assert_uint_eq(memacct_get(MEMACCT_UTCP), 0);
}
END_TEST

/* What an idle connection costs: 5000 connections A -> B (10,000
 * connection ends in the stack, as a relay with 10,000 circuit hops over
 * TCP-over-DTLS), measured on the heap (glibc's mallinfo2). Printed for
 * doc/architecture.md; the assertion is a generous bound. */
START_TEST(test_scale_memory)
{
  if (!utcp_available())
    return;
  side_t *a = &T.s[0], *b = &T.s[1];
  enum { N = 5000 };
  utcp_peer_set_syn_limit(b->peer, 1000000, 1000000); /* rate: not here */
  utcp_conn_t **cs = calloc(N, sizeof(*cs));
  struct mallinfo2 m0 = mallinfo2();
  for (int i = 0; i < N; i++) {
    cs[i] = utcp_connect(a->peer, &ops, a);
    ck_assert_ptr_nonnull(cs[i]);
    if (i % 250 == 249)
      pump();
  }
  PUMP_UNTIL(utcp_peer_n_conns(b->peer) == N, 100);
  pump(); /* the last ACKs */
  ck_assert_uint_eq(utcp_peer_n_conns(b->peer), N);
  ck_assert_uint_eq(utcp_peer_n_conns(a->peer), N);
  struct mallinfo2 m1 = mallinfo2();
  size_t per_end = (m1.uordblks - m0.uordblks) / (2 * N);
  utcp_stats_t st;
  utcp_get_stats(T.u, &st);
  fprintf(stderr, "utcp: %u idle connection ends: %zu heap bytes each "
          "(lwIP pcb %zu), %llu bytes accounted\n", st.conns, per_end,
          st.pcb_bytes, (unsigned long long)st.mem_bytes);
  if (m1.uordblks > m0.uordblks)
    ck_assert_uint_lt(per_end, 2048);
  for (int i = 0; i < N; i++) {
    utcp_conn_abort(cs[i]);
    if (i % 500 == 499)
      pump();
  }
  free(cs);
  PUMP_UNTIL(utcp_peer_n_conns(b->peer) == 0, 50);
  ck_assert_uint_eq(utcp_peer_n_conns(b->peer), 0);
}
END_TEST

Suite *
suite_utcp(void)
{
  Suite *s = suite_create("utcp");
  TCase *tc = tcase_create("lwip");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_no_lwip);
  tcase_add_test(tc, test_connect_data_close);
  tcase_add_test(tc, test_loss_recovered);
  tcase_add_test(tc, test_bad_input_refusal_peer_free);
  tcase_add_test(tc, test_syn_limits);
  tcase_add_test(tc, test_scale_memory);
  suite_add_tcase(s, tc);
  return s;
}
