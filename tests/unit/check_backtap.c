/* SPDX-License-Identifier: BSD-3-Clause */
/* check_backtap.c -- unit tests for feature/backtap (doc/backtap.md).
 *
 * Wire format: the CELL and FEEDBACK records byte for byte against layouts
 * written out by hand from doc/backtap.md, and every bad input the parsers
 * must refuse (each truncated length, overlong, reserved flags, circuit ID
 * 0, empty or inconsistent feedback).
 *
 * Engine, two links wired back to back by hand (records are carried only
 * when the test says so, time moves only when it says so): a circuit opened
 * by SYN, ACK on arrival and FWD only when the circuit layer forwards, the
 * window closing and reopening (writable), drops without state (unknown
 * circuit, refused open, duplicate, out of window, forged and stale
 * feedback, truncated records) with their counters, the deliberate drop of
 * cells beyond the link's budget, the window probe after a lost FWD, the
 * base RTT shared by the circuits of one link, and a peer that stops
 * acknowledging failing the link with bounded memory.
 *
 * Simulation (src/tools/btsim, virtual time, three hops, bottleneck at the
 * middle relay): the paper's qualitative properties -- full rate with
 * windows a few cells above each hop's bandwidth-delay product and a
 * bottleneck queue of about alpha..beta cells, delay close to the physical
 * one-way delay, backpressure reaching the source within the one-way
 * delays upstream of the bottleneck, in-order delivery under 2% loss in
 * both directions, fast retransmit for a single loss, RTO for a lost last
 * cell, a dead hop detected, a slow link as the bottleneck, and four
 * circuits started one after the other sharing the rate equally.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/backtap/backtap.h"
#include "feature/backtap/backtap_wire.h"
#include "lib/bytes/bytes.h"
#include "lib/malloc/alloc.h"
#include "tools/btsim/backtap_sim.h"

Suite *suite_backtap(void);

/* ---- wire format ---- */

START_TEST(test_cell_record)
{
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  for (size_t i = 0; i < sizeof(cell); i++)
    cell[i] = (uint8_t)(i * 7);
  uint8_t rec[BACKTAP_CELL_REC_LEN];
  backtap_cell_encode(rec, cell, 0xa1b2c3d4u, BACKTAP_CF_SYN);
  /* CIRCID [4] | SEQ [4] | FLAGS [1] | COMMAND [1] | PAYLOAD [509] */
  static const uint8_t head[] = {0x00, 0x07, 0x0e, 0x15, 0xa1, 0xb2,
                                 0xc3, 0xd4, 0x01, 0x1c, 0x23};
  ck_assert_int_eq(BACKTAP_CELL_REC_LEN, 519);
  ck_assert_mem_eq(rec, head, sizeof(head));
  ck_assert_mem_eq(rec + 9, cell + 4, 510);

  backtap_cell_hdr_t h;
  const uint8_t *body;
  const char *why = NULL;
  ck_assert_int_eq(backtap_cell_parse(rec, sizeof(rec), &h, &body, &why), 0);
  ck_assert_uint_eq(h.circid, 0x00070e15u);
  ck_assert_uint_eq(h.seq, 0xa1b2c3d4u);
  ck_assert_uint_eq(h.flags, BACKTAP_CF_SYN);
  ck_assert_ptr_eq(body, rec + 9);

  for (size_t len = 0; len < sizeof(rec); len++) {
    why = NULL;
    ck_assert_int_eq(backtap_cell_parse(rec, len, &h, &body, &why), -1);
    ck_assert_str_eq(why, "truncated cell record");
  }
  uint8_t big[BACKTAP_CELL_REC_LEN + 1];
  memcpy(big, rec, sizeof(rec));
  big[sizeof(rec)] = 0;
  ck_assert_int_eq(backtap_cell_parse(big, sizeof(big), &h, &body, &why), -1);
  ck_assert_str_eq(why, "overlong cell record");
  rec[8] = 0x04;
  ck_assert_int_eq(backtap_cell_parse(rec, sizeof(rec), &h, &body, &why), -1);
  ck_assert_str_eq(why, "cell record with reserved flags set");
  /* PATH: only on a SYN */
  rec[8] = BACKTAP_CF_PATH;
  ck_assert_int_eq(backtap_cell_parse(rec, sizeof(rec), &h, &body, &why), -1);
  ck_assert_str_eq(why, "cell record with PATH but without SYN");
  rec[8] = BACKTAP_CF_SYN | BACKTAP_CF_PATH;
  ck_assert_int_eq(backtap_cell_parse(rec, sizeof(rec), &h, &body, &why), 0);
  ck_assert_uint_eq(h.flags, BACKTAP_CF_SYN | BACKTAP_CF_PATH);
  rec[8] = 0;
  memset(rec, 0, 4);
  ck_assert_int_eq(backtap_cell_parse(rec, sizeof(rec), &h, &body, &why), -1);
  ck_assert_str_eq(why, "cell record for circuit ID 0");
}
END_TEST

START_TEST(test_feedback_record)
{
  backtap_feedback_t fb = {.circid = 0x01020304, .flags = BACKTAP_FB_ACK |
                           BACKTAP_FB_FWD | BACKTAP_FB_OOO,
                           .ack = 0x10203040, .fwd = 0x0a0b0c0d};
  uint8_t rec[BACKTAP_FB_REC_LEN];
  backtap_feedback_encode(rec, &fb);
  /* CIRCID [4] | FLAGS [1] | ACK [4] | FWD [4] */
  static const uint8_t want[] = {0x01, 0x02, 0x03, 0x04, 0x0b, 0x10, 0x20,
                                 0x30, 0x40, 0x0a, 0x0b, 0x0c, 0x0d};
  ck_assert_int_eq(sizeof(want), 13);
  ck_assert_mem_eq(rec, want, sizeof(want));
  backtap_feedback_t p;
  const char *why = NULL;
  ck_assert_int_eq(backtap_feedback_parse(rec, sizeof(rec), &p, &why), 0);
  ck_assert_uint_eq(p.circid, fb.circid);
  ck_assert_uint_eq(p.flags, fb.flags);
  ck_assert_uint_eq(p.ack, fb.ack);
  ck_assert_uint_eq(p.fwd, fb.fwd);

  /* an absent field is written as zero */
  fb.flags = BACKTAP_FB_PROBE;
  backtap_feedback_encode(rec, &fb);
  ck_assert(pc_is_zero(rec + 5, 8));
  ck_assert_int_eq(backtap_feedback_parse(rec, sizeof(rec), &p, &why), 0);

  for (size_t len = 0; len < sizeof(rec); len++) {
    ck_assert_int_eq(backtap_feedback_parse(rec, len, &p, &why), -1);
    ck_assert_str_eq(why, "truncated feedback record");
  }
  uint8_t big[14] = {0};
  memcpy(big, rec, sizeof(rec));
  ck_assert_int_eq(backtap_feedback_parse(big, sizeof(big), &p, &why), -1);
  ck_assert_str_eq(why, "overlong feedback record");

  uint8_t bad[BACKTAP_FB_REC_LEN];
  memcpy(bad, want, sizeof(bad));
  bad[4] = 0x20;
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record with reserved flags set");
  bad[4] = BACKTAP_FB_HOLE | BACKTAP_FB_FWD;
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record with OOO or HOLE but no ACK");
  bad[4] = 0;
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record with neither ACK, FWD nor PROBE");
  bad[4] = BACKTAP_FB_OOO | BACKTAP_FB_PROBE;
  memset(bad + 5, 0, 8);
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record with OOO or HOLE but no ACK");
  memcpy(bad, want, sizeof(bad));
  bad[4] = BACKTAP_FB_ACK; /* FWD absent but non-zero */
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record with a non-zero absent field");
  memcpy(bad, want, sizeof(bad));
  memset(bad, 0, 4);
  ck_assert_int_eq(backtap_feedback_parse(bad, sizeof(bad), &p, &why), -1);
  ck_assert_str_eq(why, "feedback record for circuit ID 0");
}
END_TEST

START_TEST(test_seq_wrap)
{
  ck_assert_int_eq(backtap_seq_diff(2, 0xfffffffeu), 4);
  ck_assert_int_eq(backtap_seq_diff(0xfffffffeu, 2), -4);
  ck_assert_int_eq(backtap_seq_diff(7, 7), 0);
}
END_TEST

/* ---- two links back to back ---- */

#define MAXREC 4096

typedef struct trec_t {
  backtap_rec_type_t type;
  uint8_t rec[BACKTAP_CELL_REC_LEN];
  size_t len;
} trec_t;

typedef struct tpeer_t {
  backtap_link_t *bt;
  uint64_t *now;
  uint64_t timer;
  trec_t out[MAXREC];
  size_t n_out;
  /* upper side */
  int refuse_open, opened, writable, failed, flow_failed;
  int close_on_deliver; /* 1: close, 2: free the flow from deliver() */
  backtap_flow_t *last_flow;
  uint32_t delivered_seq[MAXREC];
  backtap_flow_t *delivered_flow[MAXREC];
  size_t n_delivered;
} tpeer_t;

static uint64_t
t_now(void *arg)
{
  return *((tpeer_t *)arg)->now;
}

static void
t_send(void *arg, backtap_rec_type_t type, const uint8_t *rec, size_t len)
{
  tpeer_t *p = arg;
  ck_assert_uint_lt(p->n_out, MAXREC);
  trec_t *r = &p->out[p->n_out++];
  r->type = type;
  memcpy(r->rec, rec, len);
  r->len = len;
}

static void
t_timer(void *arg, uint64_t when)
{
  ((tpeer_t *)arg)->timer = when;
}

static int
t_open(void *arg, backtap_link_t *link, uint32_t circid, void **flow_arg)
{
  tpeer_t *p = arg;
  (void)link;
  (void)circid;
  if (p->refuse_open)
    return -1;
  p->opened++;
  *flow_arg = p;
  return 0;
}

static void
t_deliver(void *arg, backtap_flow_t *flow, uint32_t seq, const uint8_t *cell)
{
  tpeer_t *p = arg;
  (void)cell;
  p->last_flow = flow;
  ck_assert_uint_lt(p->n_delivered, MAXREC);
  p->delivered_flow[p->n_delivered] = flow;
  p->delivered_seq[p->n_delivered++] = seq;
  if (p->close_on_deliver == 1)
    backtap_flow_close(flow);
  else if (p->close_on_deliver == 2)
    backtap_flow_free(flow);
}

static void
t_writable(void *arg, backtap_flow_t *flow)
{
  (void)flow;
  ((tpeer_t *)arg)->writable++;
}

static void
t_failed(void *arg, backtap_link_t *link, const char *why)
{
  (void)link;
  (void)why;
  ((tpeer_t *)arg)->failed++;
}

static const backtap_lower_ops_t t_lower = {t_now, t_send, t_timer};
static void
t_flow_failed(void *arg, backtap_flow_t *flow, const char *why)
{
  (void)flow;
  (void)why;
  ((tpeer_t *)arg)->flow_failed++;
}

static const backtap_upper_ops_t t_upper = {t_open, t_deliver, t_writable,
                                            t_failed, t_flow_failed};

static void
tpeer_init(tpeer_t *p, uint64_t *now, const backtap_params_t *params)
{
  memset(p, 0, sizeof(*p));
  p->now = now;
  p->timer = UINT64_MAX;
  p->bt = backtap_link_new(params, &t_lower, p, &t_upper, p);
}

/* Carry every record src has sent to dst (in order); returns how many. */
static size_t
carry(tpeer_t *src, tpeer_t *dst)
{
  size_t n = src->n_out;
  for (size_t i = 0; i < n; i++)
    backtap_link_input(dst->bt, src->out[i].type, src->out[i].rec,
                       src->out[i].len);
  src->n_out = 0;
  return n;
}

/* Fire a peer's timer if it is due (one-shot, as set_timer says). */
static void
tick(tpeer_t *p)
{
  if (p->timer <= *p->now) {
    p->timer = UINT64_MAX;
    backtap_link_timer(p->bt);
  }
}

static void
test_cell(uint8_t *cell, uint32_t circid, uint8_t tag)
{
  memset(cell, tag, BACKTAP_LINK_CELL_LEN);
  set_u32(cell, circid);
  cell[4] = 3;
}

START_TEST(test_ack_fwd_window)
{
  uint64_t now = 1000000;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 5, a);
  ck_assert_ptr_nonnull(fa);
  ck_assert_ptr_null(backtap_flow_new(a->bt, 5, a));
  ck_assert_ptr_null(backtap_flow_new(a->bt, 0, a));
  ck_assert_uint_eq(backtap_flow_swnd(fa), 2);

  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 999, 0xaa);
  ck_assert(backtap_flow_can_send(fa));
  ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  /* the initial window is two cells */
  ck_assert(!backtap_flow_can_send(fa));
  ck_assert_int_eq(backtap_flow_send(fa, cell), -1);
  ck_assert_uint_eq(a->n_out, 2);
  /* the first carries SYN, both the flow's circuit ID, not the cell's */
  ck_assert_uint_eq(a->out[0].rec[8], BACKTAP_CF_SYN);
  ck_assert_uint_eq(a->out[1].rec[8], 0);
  ck_assert_uint_eq(get_u32(a->out[0].rec), 5);
  ck_assert_uint_eq(get_u32(a->out[1].rec + 4),
                    get_u32(a->out[0].rec + 4) + 1);

  now += 10000;
  carry(a, b);
  ck_assert_int_eq(b->opened, 1);
  ck_assert_uint_eq(b->n_delivered, 2);
  backtap_flow_t *fb = b->last_flow;
  ck_assert_uint_eq(backtap_flow_queued(fb), 2);
  /* ACK waits for the flush (a timer at "now"), FWD for forwarding */
  ck_assert_uint_eq(b->n_out, 0);
  ck_assert_uint_eq(b->timer, now);
  tick(b);
  ck_assert_uint_eq(b->n_out, 1);
  ck_assert_uint_eq(b->out[0].type, BACKTAP_REC_FEEDBACK);
  ck_assert_uint_eq(get_u32(b->out[0].rec + 5), b->delivered_seq[1] + 1);
  ck_assert_uint_eq(get_u32(b->out[0].rec + 9), b->delivered_seq[0]);
  now += 10000;
  carry(b, a);
  /* ACKed but not forwarded: still in flight for the window */
  ck_assert_uint_eq(backtap_flow_inflight(fa), 2);
  ck_assert(!backtap_flow_can_send(fa));
  ck_assert_uint_eq(backtap_flow_srtt_us(fa), 20000);
  /* the same at a glance (MeasureMe's "flow" object) */
  backtap_flow_info_t in;
  backtap_flow_info(fa, &in);
  ck_assert_uint_eq(in.swnd, 2);
  ck_assert_uint_eq(in.inflight, 2);
  ck_assert_uint_eq(in.unacked, 0);
  ck_assert_uint_eq(in.srtt_us, 20000);
  ck_assert_uint_eq(in.base_rtt_us, 0); /* no FWD yet */
  ck_assert_uint_eq(in.act_rtt_us, 0);
  ck_assert_uint_eq(in.slow_start, 1);
  ck_assert_uint_eq(in.retransmitted, 0);
  backtap_flow_info(fb, &in);
  ck_assert_uint_eq(in.queued, 2);
  ck_assert_uint_eq(in.inflight, 0);

  /* forwarding must go in order */
  ck_assert_int_eq(backtap_flow_forwarded(fb, b->delivered_seq[1]), -1);
  ck_assert_int_eq(backtap_flow_forwarded(fb, b->delivered_seq[0]), 0);
  ck_assert_int_eq(backtap_flow_forwarded(fb, b->delivered_seq[1]), 0);
  ck_assert_int_eq(backtap_flow_forwarded(fb, b->delivered_seq[1] + 1), -1);
  ck_assert_uint_eq(backtap_flow_queued(fb), 0);
  backtap_link_flush(b->bt);
  ck_assert_uint_eq(b->n_out, 1);
  now += 10000;
  carry(b, a);
  ck_assert_uint_eq(backtap_flow_inflight(fa), 0);
  ck_assert_int_eq(a->writable, 1);
  ck_assert(backtap_flow_can_send(fa));
  ck_assert_uint_eq(backtap_link_base_rtt_us(a->bt), 30000);
  /* slow start: the window grew with the FWDed cells it was limited by */
  ck_assert_uint_ge(backtap_flow_swnd(fa), 3);
  backtap_flow_info(fa, &in);
  ck_assert_uint_eq(in.base_rtt_us, 30000);
  ck_assert_uint_eq(in.act_rtt_us, 30000); /* the round trip ended */
  ck_assert_uint_eq(in.swnd, backtap_flow_swnd(fa));
  ck_assert_uint_eq(in.inflight, 0);
  ck_assert_uint_eq(backtap_link_stats(a->bt)->forged_feedback, 0);
  ck_assert_uint_eq(a->timer, UINT64_MAX); /* nothing outstanding */

  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

/* PATH (doc/backtap.md, "End-to-end windows"): said in the SYN only,
 * kept through a retransmission of the SYN, seen by the receiver. */
START_TEST(test_syn_path)
{
  uint64_t now = 1000000;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 9, a);
  backtap_flow_t *plain = backtap_flow_new(a->bt, 10, a);
  ck_assert_int_eq(backtap_flow_set_path(fa), 0);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 9, 0x11);
  ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  ck_assert_int_eq(backtap_flow_send(plain, cell), 0);
  /* too late once the SYN is out */
  ck_assert_int_eq(backtap_flow_set_path(fa), -1);
  ck_assert_int_eq(backtap_flow_set_path(plain), -1);
  ck_assert_uint_eq(a->n_out, 3);
  ck_assert_uint_eq(a->out[0].rec[8], BACKTAP_CF_SYN | BACKTAP_CF_PATH);
  ck_assert_uint_eq(a->out[1].rec[8], 0);
  ck_assert_uint_eq(a->out[2].rec[8], BACKTAP_CF_SYN);
  /* the first SYN is lost: the retransmission says PATH again */
  trec_t kept[2];
  kept[0] = a->out[1];
  kept[1] = a->out[2];
  a->n_out = 0;
  backtap_link_input(b->bt, kept[0].type, kept[0].rec, kept[0].len);
  backtap_link_input(b->bt, kept[1].type, kept[1].rec, kept[1].len);
  ck_assert_int_eq(b->opened, 1); /* circuit 10 only */
  ck_assert_int_eq(backtap_flow_peer_path(b->last_flow), 0);
  backtap_flow_t *fb_plain = b->last_flow;
  now = a->timer;
  tick(a);
  ck_assert_uint_ge(a->n_out, 1);
  ck_assert_uint_eq(a->out[0].rec[8], BACKTAP_CF_SYN | BACKTAP_CF_PATH);
  carry(a, b);
  ck_assert_int_eq(b->opened, 2);
  ck_assert_ptr_ne(b->last_flow, fb_plain);
  ck_assert_int_eq(backtap_flow_peer_path(b->last_flow), 1);
  ck_assert_int_eq(backtap_flow_peer_path(fb_plain), 0);
  /* before any cell came, a flow has no peer PATH */
  ck_assert_int_eq(backtap_flow_peer_path(fa), 0);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_drops_without_state)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  backtap_params_t prm;
  backtap_params_default(&prm);
  prm.swnd_max = 8;
  tpeer_init(a, &now, &prm);
  tpeer_init(b, &now, &prm);
  uint8_t cell[BACKTAP_LINK_CELL_LEN], rec[BACKTAP_CELL_REC_LEN];
  test_cell(cell, 7, 1);
  const backtap_stats_t *sb = backtap_link_stats(b->bt);
  const backtap_stats_t *sa = backtap_link_stats(a->bt);

  /* unknown circuit without SYN: nothing created, nothing answered */
  backtap_cell_encode(rec, cell, 100, 0);
  size_t mem0 = backtap_link_mem_bytes(b->bt);
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  ck_assert_uint_eq(sb->unknown_flow, 1);
  /* a SYN the circuit layer refuses */
  b->refuse_open = 1;
  backtap_cell_encode(rec, cell, 100, BACKTAP_CF_SYN);
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  ck_assert_uint_eq(sb->unknown_flow, 2);
  ck_assert_uint_eq(backtap_link_n_flows(b->bt), 0);
  ck_assert_uint_eq(backtap_link_mem_bytes(b->bt), mem0);
  /* truncated, and an unknown record type */
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec, 100), -1);
  ck_assert_int_eq(backtap_link_input(b->bt, (backtap_rec_type_t)9, rec,
                                      sizeof(rec)), -1);
  ck_assert_uint_eq(sb->malformed, 2);
  ck_assert_uint_eq(b->n_out, 0);
  b->refuse_open = 0;

  /* a real circuit */
  backtap_flow_t *fa = backtap_flow_new(a->bt, 7, a);
  ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  trec_t syn = a->out[0];
  carry(a, b);
  tick(b);
  carry(b, a);
  backtap_flow_t *fb = b->last_flow;
  uint32_t isn = get_u32(syn.rec + 4);
  ck_assert_uint_eq(b->n_delivered, 1);

  /* replay of the SYN cell: duplicate, not delivered again, re-ACKed */
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, syn.rec,
                                      syn.len), -1);
  ck_assert_uint_eq(sb->duplicate, 1);
  ck_assert_uint_eq(b->n_delivered, 1);
  /* a second SYN with another ISN */
  backtap_cell_encode(rec, cell, isn + 1, BACKTAP_CF_SYN);
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  /* beyond the receive window (8 cells above what was forwarded) */
  backtap_cell_encode(rec, cell, isn + 8, 0);
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  backtap_cell_encode(rec, cell, isn - 1000, 0); /* far below: duplicate */
  ck_assert_int_eq(backtap_link_input(b->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  ck_assert_uint_eq(sb->out_of_window, 2);
  ck_assert_uint_eq(sb->duplicate, 2);
  ck_assert_uint_eq(b->n_delivered, 1);
  ck_assert_uint_eq(backtap_flow_queued(fb), 1);

  /* forged feedback: ACK or FWD for a cell never sent, FWD above ACK */
  backtap_feedback_t f = {.circid = 7, .flags = BACKTAP_FB_ACK,
                          .ack = isn + 2};
  uint8_t frec[BACKTAP_FB_REC_LEN];
  backtap_feedback_encode(frec, &f);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_FEEDBACK, frec,
                                      sizeof(frec)), -1);
  f.flags = BACKTAP_FB_FWD;
  f.ack = 0;
  f.fwd = isn + 5;
  backtap_feedback_encode(frec, &f);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_FEEDBACK, frec,
                                      sizeof(frec)), -1);
  f.flags = BACKTAP_FB_ACK | BACKTAP_FB_FWD;
  f.ack = isn;
  f.fwd = isn + 1;
  backtap_feedback_encode(frec, &f);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_FEEDBACK, frec,
                                      sizeof(frec)), -1);
  ck_assert_uint_eq(sa->forged_feedback, 3);
  ck_assert_uint_eq(backtap_flow_inflight(fa), 1);
  /* feedback for an unknown circuit; stale feedback (a replay) */
  f.circid = 8;
  f.fwd = isn;
  backtap_feedback_encode(frec, &f);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_FEEDBACK, frec,
                                      sizeof(frec)), -1);
  ck_assert_uint_eq(sa->unknown_flow, 1);
  f.circid = 7;
  f.ack = isn + 1;
  f.fwd = isn;
  backtap_feedback_encode(frec, &f);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_FEEDBACK, frec,
                                      sizeof(frec)), 0);
  ck_assert_uint_eq(sa->stale_feedback, 1);
  ck_assert_uint_eq(backtap_flow_inflight(fa), 1);

  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_excess_dropped_before_ack)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  backtap_params_t prm;
  backtap_params_default(&prm);
  prm.swnd_init = 16;
  tpeer_init(a, &now, &prm);
  prm.link_max_cells = 4; /* the receiver's budget */
  tpeer_init(b, &now, &prm);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 9, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 9, 2);
  for (int i = 0; i < 6; i++)
    ck_assert_int_eq(backtap_flow_send(fa, cell), 0);
  carry(a, b);
  /* four delivered (and held by the circuit layer), two dropped unACKed */
  ck_assert_uint_eq(b->n_delivered, 4);
  ck_assert_uint_eq(backtap_link_stats(b->bt)->excess_dropped, 2);
  tick(b);
  ck_assert_uint_eq(b->n_out, 1);
  ck_assert_uint_eq(get_u32(b->out[0].rec + 5), b->delivered_seq[3] + 1);
  carry(b, a);
  ck_assert_uint_eq(backtap_flow_inflight(fa), 6);
  /* once the circuit layer forwards, the sender's retransmission gets in */
  for (int i = 0; i < 4; i++)
    backtap_flow_forwarded(b->last_flow, b->delivered_seq[i]);
  now += backtap_flow_rto_us(fa);
  tick(a);
  ck_assert_uint_eq(backtap_link_stats(a->bt)->timeouts, 1);
  carry(a, b);
  ck_assert_uint_eq(b->n_delivered, 5);
  tick(b);
  carry(b, a);
  /* a partial ACK, but the peer holds nothing above it (no HOLE): the
   * last cell is resent by the next timeout, not at once */
  ck_assert_uint_eq(a->n_out, 0);
  now = a->timer;
  tick(a);
  ck_assert_uint_eq(backtap_link_stats(a->bt)->timeouts, 2);
  carry(a, b);
  ck_assert_uint_eq(b->n_delivered, 6);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_spurious_timeout)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  backtap_params_t prm;
  backtap_params_default(&prm);
  prm.swnd_init = 4;
  tpeer_init(a, &now, &prm);
  tpeer_init(b, &now, &prm);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 6, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 6, 6);
  for (int i = 0; i < 4; i++)
    backtap_flow_send(fa, cell);
  /* the first two arrive; their ACK is slow */
  backtap_link_input(b->bt, a->out[0].type, a->out[0].rec, a->out[0].len);
  backtap_link_input(b->bt, a->out[1].type, a->out[1].rec, a->out[1].len);
  trec_t late[2] = {a->out[2], a->out[3]};
  a->n_out = 0;
  tick(b);
  ck_assert_uint_eq(b->n_out, 1);
  ck_assert_uint_eq(b->out[0].rec[4] & BACKTAP_FB_HOLE, 0);
  trec_t ack = b->out[0];
  b->n_out = 0;
  now = a->timer;
  tick(a);
  const backtap_stats_t *sa = backtap_link_stats(a->bt);
  ck_assert_uint_eq(sa->timeouts, 1);
  ck_assert_uint_eq(sa->cells_retransmitted, 1);
  /* a partial ACK without HOLE: the rest is on its way, nothing resent */
  ck_assert_int_eq(backtap_link_input(a->bt, ack.type, ack.rec, ack.len), 0);
  ck_assert_uint_eq(sa->cells_retransmitted, 1);
  ck_assert_uint_eq(a->n_out, 1); /* only the timeout's retransmission */
  for (int i = 0; i < 2; i++)
    backtap_link_input(b->bt, late[i].type, late[i].rec, late[i].len);
  carry(a, b); /* the retransmitted first cell: a duplicate */
  ck_assert_uint_eq(backtap_link_stats(b->bt)->duplicate, 1);
  ck_assert_uint_eq(b->n_delivered, 4);
  tick(b);
  carry(b, a);
  ck_assert_uint_eq(backtap_flow_inflight(fa), 4); /* ACKed, not FWDed */
  ck_assert_uint_eq(sa->cells_retransmitted, 1);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_close_while_peer_sends)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 4, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 4, 7);
  backtap_flow_send(fa, cell); /* say CREATE2 */
  carry(a, b);
  backtap_flow_t *fb = b->last_flow;
  backtap_flow_send(fb, cell); /* CREATED2 */
  carry(b, a);
  ck_assert_uint_eq(a->n_delivered, 1);
  backtap_flow_send(fa, cell); /* DESTROY, unACKed when A closes */
  backtap_flow_close(fa);
  ck_assert_uint_eq(backtap_link_n_flows(a->bt), 1);
  ck_assert(!backtap_flow_can_send(fa));
  /* B had one more cell on its way; A no longer delivers but ACKs and
   * FWDs it, and the one it held (never forwarded) counts as gone */
  backtap_flow_send(fb, cell);
  carry(b, a);
  ck_assert_uint_eq(a->n_delivered, 1);
  tick(a);
  carry(a, b);
  tick(b);
  carry(b, a);
  ck_assert_uint_eq(backtap_flow_inflight(fb), 0);
  ck_assert_uint_eq(b->n_delivered, 2);
  /* B's ACK of the DESTROY let A forget the circuit */
  ck_assert_uint_eq(backtap_link_n_flows(a->bt), 0);
  /* B closes with the DESTROY still held: its FWD goes out at once, as
   * the circuit is forgotten */
  ck_assert_uint_eq(b->n_out, 0);
  backtap_flow_close(fb);
  ck_assert_uint_eq(backtap_link_n_flows(b->bt), 0);
  ck_assert_uint_eq(b->n_out, 1);
  ck_assert_uint_eq(get_u32(b->out[0].rec + 9), b->delivered_seq[1] + 1);
  b->n_out = 0;
  ck_assert_uint_eq(a->timer, UINT64_MAX);
  ck_assert_uint_eq(b->timer, UINT64_MAX);
  ck_assert_int_eq(a->failed + b->failed, 0);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_close_from_deliver)
{
  for (int how = 1; how <= 2; how++) {
    uint64_t now = 1;
    tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
    backtap_params_t prm;
    backtap_params_default(&prm);
    prm.swnd_init = 4;
    tpeer_init(a, &now, &prm);
    tpeer_init(b, &now, &prm);
    backtap_flow_t *fa = backtap_flow_new(a->bt, 5, a);
    uint8_t cell[BACKTAP_LINK_CELL_LEN];
    test_cell(cell, 5, 9);
    for (int i = 0; i < 4; i++)
      backtap_flow_send(fa, cell);
    /* the third arrives before the second, so the second would deliver
     * both at once; the circuit layer closes the circuit on the second
     * (a DESTROY) */
    backtap_link_input(b->bt, a->out[0].type, a->out[0].rec, a->out[0].len);
    backtap_link_input(b->bt, a->out[2].type, a->out[2].rec, a->out[2].len);
    b->close_on_deliver = how;
    b->n_out = 0;
    backtap_link_input(b->bt, a->out[1].type, a->out[1].rec, a->out[1].len);
    ck_assert_uint_eq(b->n_delivered, 2);
    ck_assert_uint_eq(backtap_link_n_flows(b->bt), 0);
    /* the rest find no circuit */
    backtap_link_input(b->bt, a->out[3].type, a->out[3].rec, a->out[3].len);
    ck_assert_uint_eq(backtap_link_stats(b->bt)->unknown_flow, 1);
    if (how == 1) {
      /* closing said where it stands: both cells ACKed and FWDed */
      ck_assert_uint_ge(b->n_out, 1);
      trec_t *last = &b->out[b->n_out - 1];
      ck_assert_uint_eq(get_u32(last->rec + 5), b->delivered_seq[1] + 1);
      ck_assert_uint_eq(get_u32(last->rec + 9), b->delivered_seq[1] + 1);
    }
    backtap_link_free(a->bt);
    backtap_link_free(b->bt);
    free(a);
    free(b);
  }
}
END_TEST

START_TEST(test_probe_after_lost_fwd)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 3, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 3, 3);
  backtap_flow_send(fa, cell);
  backtap_flow_send(fa, cell);
  ck_assert(!backtap_flow_can_send(fa));
  carry(a, b);
  tick(b);
  carry(b, a); /* ACKed */
  backtap_flow_forwarded(b->last_flow, b->delivered_seq[0]);
  backtap_flow_forwarded(b->last_flow, b->delivered_seq[1]);
  tick(b);
  ck_assert_uint_eq(b->n_out, 1);
  b->n_out = 0; /* the FWD is lost */
  ck_assert(!backtap_flow_can_send(fa));
  ck_assert_uint_ne(a->timer, UINT64_MAX);
  now = a->timer;
  tick(a);
  ck_assert_uint_eq(backtap_link_stats(a->bt)->probes_sent, 1);
  ck_assert_uint_eq(a->out[0].rec[4], BACKTAP_FB_PROBE);
  carry(a, b);
  tick(b);
  carry(b, a);
  ck_assert_int_eq(a->writable, 1);
  ck_assert(backtap_flow_can_send(fa));
  ck_assert_uint_eq(a->failed, 0);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_base_rtt_shared)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *f1 = backtap_flow_new(a->bt, 1, a);
  backtap_flow_t *f2 = backtap_flow_new(a->bt, 2, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 1, 4);
  backtap_flow_send(f1, cell);
  now += 5000;
  backtap_flow_send(f2, cell);
  now += 5000;
  carry(a, b);
  ck_assert_uint_eq(b->n_delivered, 2);
  for (size_t i = 0; i < b->n_delivered; i++)
    ck_assert_int_eq(backtap_flow_forwarded(b->delivered_flow[i],
                                            b->delivered_seq[i]), 0);
  backtap_link_flush(b->bt);
  ck_assert_uint_eq(b->n_out, 2);
  now += 10000;
  carry(b, a);
  /* f1's FWD came back after 20 ms, f2's after 15 ms: one base RTT for
   * the link, the minimum over its circuits */
  ck_assert_uint_eq(backtap_flow_srtt_us(f1), 20000);
  ck_assert_uint_eq(backtap_flow_srtt_us(f2), 15000);
  ck_assert_uint_eq(backtap_link_base_rtt_us(a->bt), 15000);
  /* closing a circuit with nothing unacknowledged forgets it at once */
  backtap_flow_close(f1);
  ck_assert_uint_eq(backtap_link_n_flows(a->bt), 1);
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_forgotten_circuit_fails_alone)
{
  /* B forgot circuit 8 (say it restarted its side) but still talks about
   * circuit 9: after the backoffs only circuit 8 is closed at A. */
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a)), *b = pc_zalloc(sizeof(*b));
  tpeer_init(a, &now, NULL);
  tpeer_init(b, &now, NULL);
  backtap_flow_t *f8 = backtap_flow_new(a->bt, 8, a);
  backtap_flow_t *f9 = backtap_flow_new(a->bt, 9, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 8, 8);
  backtap_flow_send(f8, cell);
  a->n_out = 0; /* lost, and B never hears of circuit 8 */
  backtap_flow_send(f9, cell);
  carry(a, b);
  int fires = 0;
  while (!a->flow_failed && fires < 20) {
    now = a->timer;
    tick(a);
    fires++;
    /* circuit 9 keeps talking: B re-ACKs each retransmission it sees */
    a->n_out = 0;
    backtap_flow_send(f9, cell);
    carry(a, b);
    tick(b);
    carry(b, a);
    for (size_t i = 0; i < b->n_delivered; i++)
      backtap_flow_forwarded(b->delivered_flow[i], b->delivered_seq[i]);
    b->n_delivered = 0;
    tick(b);
    carry(b, a);
  }
  ck_assert_int_eq(a->flow_failed, 1);
  ck_assert_int_eq(a->failed, 0);
  ck_assert(!backtap_link_is_dead(a->bt));
  ck_assert_uint_eq(backtap_link_n_flows(a->bt), 1);
  ck_assert_uint_eq(backtap_link_stats(a->bt)->flows_failed, 1);
  ck_assert(backtap_flow_can_send(f9));
  backtap_link_free(a->bt);
  backtap_link_free(b->bt);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_peer_stops_acknowledging)
{
  uint64_t now = 1;
  tpeer_t *a = pc_zalloc(sizeof(*a));
  backtap_params_t prm;
  backtap_params_default(&prm);
  prm.swnd_init = 64;
  tpeer_init(a, &now, &prm);
  backtap_flow_t *fa = backtap_flow_new(a->bt, 3, a);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  test_cell(cell, 3, 5);
  int sent = 0;
  while (backtap_flow_can_send(fa)) {
    backtap_flow_send(fa, cell);
    sent++;
  }
  /* the window bounds what is kept */
  ck_assert_int_eq(sent, 64);
  size_t mem = backtap_link_mem_bytes(a->bt);
  ck_assert_uint_le(mem, 64 * 600 + 4096);
  /* the circuit's share: the 64 kept cells, and no more than the link */
  size_t fmem = backtap_flow_mem_bytes(fa);
  ck_assert_uint_ge(fmem, 64 * BACKTAP_CELL_REC_LEN);
  ck_assert_uint_le(fmem, mem);
  int fires = 0;
  while (!a->failed && fires < 100) {
    ck_assert_uint_ne(a->timer, UINT64_MAX);
    now = a->timer;
    tick(a);
    fires++;
  }
  ck_assert_int_eq(a->failed, 1);
  ck_assert_int_eq(fires, prm.max_backoffs + 1);
  ck_assert(backtap_link_is_dead(a->bt));
  ck_assert_uint_eq(backtap_link_stats(a->bt)->timeouts, prm.max_backoffs);
  /* RTO doubled each time, up to the cap */
  ck_assert_uint_le(now, 1 + 1000000ULL * 2 * 256);
  ck_assert(!backtap_flow_can_send(fa));
  ck_assert_uint_eq(a->timer, UINT64_MAX);
  uint8_t rec[BACKTAP_CELL_REC_LEN];
  backtap_cell_encode(rec, cell, 1, BACKTAP_CF_SYN);
  ck_assert_int_eq(backtap_link_input(a->bt, BACKTAP_REC_CELL, rec,
                                      sizeof(rec)), -1);
  backtap_link_free(a->bt);
  free(a);
}
END_TEST

/* ---- simulation ---- */

static void
print_result(const char *name, const btsim_cfg_t *c, const btsim_result_t *r)
{
  printf("backtap sim %s: rate %.0f cells/s, backlog %.1f cells, delay "
         "%.1f ms",
         name, r->rate_cps, r->backlog_mean, r->delay_mean_us / 1e3);
  if (r->backpressure_us >= 0)
    printf(", backpressure %.1f ms", r->backpressure_us / 1e3);
  printf("\n");
  for (unsigned h = 0; h < c->n_hops; h++)
    printf("  hop %u: base RTT %.1f ms, BDP %.1f cells, swnd %.1f, queue "
           "%.1f (max %u), retransmitted %llu (fast %llu, RTO %llu)\n",
           h, r->hop[h].base_rtt_us / 1e3,
           c->bottleneck_cps * r->hop[h].base_rtt_us / 1e6,
           r->hop[h].swnd_mean, r->hop[h].queue_mean, r->hop[h].queue_max,
           (unsigned long long)r->hop[h].snd.cells_retransmitted,
           (unsigned long long)r->hop[h].snd.fast_retransmits,
           (unsigned long long)r->hop[h].snd.timeouts);
}

START_TEST(test_sim_steady_state)
{
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  print_result("steady", &c, &r);
  ck_assert(r.in_order);
  /* full rate at the bottleneck (2930 cells/s) */
  ck_assert(r.rate_cps > 0.98 * c.bottleneck_cps);
  ck_assert(r.rate_cps < 1.01 * c.bottleneck_cps);
  /* The tightest window is about alpha..beta cells above its hop's BDP
   * (the others do not limit, so Vegas leaves them be), and no window is
   * below its BDP (the rate would suffer). */
  double excess = 1e9;
  for (unsigned h = 0; h < c.n_hops; h++) {
    double bdp = c.bottleneck_cps * r.hop[h].base_rtt_us / 1e6;
    ck_assert(r.hop[h].swnd_mean >= bdp);
    if (r.hop[h].swnd_mean - bdp < excess)
      excess = r.hop[h].swnd_mean - bdp;
  }
  ck_assert(excess <= c.params.beta + 1);
  /* the cells queued in the relays: about alpha..beta in all */
  double queued = r.hop[0].queue_mean + r.hop[1].queue_mean;
  ck_assert(queued >= c.params.alpha - 1);
  ck_assert(queued <= 2 * c.params.beta);
  /* so the delay is the physical one-way delay plus a few cells */
  double oneway = (c.delay_us[0] + c.delay_us[1] + c.delay_us[2]) / 1e3;
  ck_assert(r.delay_mean_us / 1e3 < oneway * 1.1);
  ck_assert(r.backlog_mean < c.bottleneck_cps * oneway / 1e3 + 20);
  for (unsigned h = 0; h < c.n_hops; h++) {
    ck_assert_uint_eq(r.hop[h].snd.cells_retransmitted, 0);
    ck_assert_uint_eq(r.hop[h].rcv.excess_dropped, 0);
  }
}
END_TEST

START_TEST(test_sim_slow_link)
{
  /* The bottleneck is a 5 Mbit/s link into the middle relay instead of a
   * relay's rate limit: the window of that hop keeps its buffer short. */
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  c.bottleneck_node = 0;
  c.hop_bps[1] = 5000000;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  c.bottleneck_cps = 5000000 / 8 / BACKTAP_CELL_REC_LEN; /* for BDPs */
  print_result("5 Mbit/s link", &c, &r);
  ck_assert(r.in_order);
  ck_assert(r.rate_cps > 0.97 * c.bottleneck_cps);
  ck_assert(r.rate_cps <= 1.01 * c.bottleneck_cps);
  /* the link's buffer holds a few cells: the delay is the one-way delay
   * plus the serialisation of one cell per hop plus a few cells */
  double oneway = (c.delay_us[0] + c.delay_us[1] + c.delay_us[2]) / 1e3;
  double cell_ms = 1e3 / c.bottleneck_cps;
  ck_assert(r.delay_mean_us / 1e3 < oneway + (2 * c.params.beta) * cell_ms);
  ck_assert(r.hop[0].queue_mean + r.hop[1].queue_mean <= 2 * c.params.beta);
}
END_TEST

START_TEST(test_sim_fairness)
{
  /* Four circuits over the same relays, started a second apart: each
   * later one finds the queue the others keep. With round robin at the
   * relays (and the base RTT shared per relay pair) they end up with
   * equal rates and each keeps its few cells per relay. */
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  c.n_circuits = 4;
  for (unsigned k = 0; k < 4; k++)
    c.start_us[k] = k * 1000000ULL;
  /* the queue a joining circuit's slow start leaves drains at one cell
   * per round trip and circuit (AIAD): measure from 10 s on */
  c.duration_us = 20000000;
  c.measure_from_us = 10000000;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  print_result("4 circuits", &c, &r);
  printf("  rates %.0f %.0f %.0f %.0f cells/s, Jain's index %.3f\n",
         r.circ_rate_cps[0], r.circ_rate_cps[1], r.circ_rate_cps[2],
         r.circ_rate_cps[3], r.jain);
  ck_assert(r.in_order);
  ck_assert(r.rate_cps > 0.98 * c.bottleneck_cps);
  ck_assert(r.jain > 0.99);
  /* each circuit keeps about alpha..beta cells in each relay */
  ck_assert(r.hop[0].queue_mean / 4 <= c.params.beta + 1);
  ck_assert(r.hop[1].queue_mean / 4 <= c.params.beta + 1);
}
END_TEST

START_TEST(test_sim_backpressure)
{
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  c.slowdown_at_us = 6000000;
  c.slowdown_cps = 1000;
  c.measure_from_us = 3000000;
  c.measure_to_us = 6000000;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  print_result("slowdown", &c, &r);
  ck_assert(r.in_order);
  /* The source slows down once the slower FWDs have crossed the hops
   * between it and the bottleneck: one hop's one-way delay per hop. */
  double upstream = (c.delay_us[0] + c.delay_us[1]) / 1e3;
  ck_assert(r.backpressure_us >= 0);
  ck_assert(r.backpressure_us / 1e3 <= upstream + 5);
  /* and what queues at the bottleneck is bounded by the window into it */
  ck_assert_uint_le(r.hop[1].queue_max, (unsigned)r.hop[1].swnd_mean + 5);
}
END_TEST

START_TEST(test_sim_lossy)
{
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  c.loss = 0.02;
  c.total_cells = 5000;
  c.duration_us = 120000000;
  c.measure_from_us = 0;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    c.seed = seed;
    ck_assert_int_eq(btsim_run(&c, &r), 0);
    print_result("2% loss", &c, &r);
    ck_assert(r.in_order);
    ck_assert_uint_eq(r.delivered, 5000);
    ck_assert(!r.link_failed);
    uint64_t fast = 0, retx = 0;
    for (unsigned h = 0; h < c.n_hops; h++) {
      fast += r.hop[h].snd.fast_retransmits;
      retx += r.hop[h].snd.cells_retransmitted;
      /* memory stays within the windows */
      ck_assert_uint_le(r.hop[h].mem_max, 600 * c.params.swnd_max + 65536);
    }
    ck_assert_uint_gt(fast, 0);
    ck_assert_uint_ge(retx, fast);
  }
}
END_TEST

typedef struct drop_plan_t {
  uint32_t first_seq_seen;
  int seen;
  uint64_t drop_counter; /* the cell whose counter this is, on hop 1 */
  int dropped;
} drop_plan_t;

static int
drop_once(void *arg, unsigned hop, int dir, backtap_rec_type_t type,
          const uint8_t *rec, size_t len)
{
  drop_plan_t *p = arg;
  if (hop != 1 || dir != 0 || type != BACKTAP_REC_CELL ||
      len != BACKTAP_CELL_REC_LEN || p->dropped)
    return 0;
  /* the source's counter is in the payload (tools/btsim) */
  if (get_u64(rec + 10) == p->drop_counter) {
    p->dropped = 1;
    return 1;
  }
  return 0;
}

START_TEST(test_sim_single_loss)
{
  btsim_cfg_t c;
  btsim_result_t r;
  drop_plan_t plan = {0};
  btsim_cfg_default(&c);
  c.total_cells = 2000;
  c.duration_us = 30000000;
  c.drop = drop_once;
  c.drop_arg = &plan;
  /* in the middle of the transfer: duplicate ACKs repair it */
  plan.drop_counter = 1000;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  ck_assert(plan.dropped);
  ck_assert(r.in_order);
  ck_assert_uint_eq(r.delivered, 2000);
  ck_assert_uint_eq(r.hop[1].snd.fast_retransmits, 1);
  ck_assert_uint_eq(r.hop[1].snd.cells_retransmitted, 1);
  ck_assert_uint_eq(r.hop[1].snd.timeouts, 0);
  ck_assert_uint_eq(r.hop[0].snd.cells_retransmitted, 0);
  /* the last cell: no duplicate ACK can follow, the RTO repairs it */
  memset(&plan, 0, sizeof(plan));
  plan.drop_counter = 1999;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  ck_assert(plan.dropped);
  ck_assert(r.in_order);
  ck_assert_uint_eq(r.delivered, 2000);
  ck_assert_uint_eq(r.hop[1].snd.timeouts, 1);
  ck_assert_uint_eq(r.hop[1].snd.fast_retransmits, 0);
  ck_assert_uint_eq(r.hop[1].snd.cells_retransmitted, 1);
}
END_TEST

START_TEST(test_sim_dead_hop)
{
  btsim_cfg_t c;
  btsim_result_t r;
  btsim_cfg_default(&c);
  c.blackhole_hop = 1;
  c.blackhole_from_us = 2000000;
  c.duration_us = 300000000;
  c.measure_from_us = 0;
  ck_assert_int_eq(btsim_run(&c, &r), 0);
  ck_assert(r.link_failed);
  ck_assert_uint_eq(r.failed_hop, 1);
  /* 8 doubling RTOs from at least 200 ms, capped at 60 s */
  ck_assert_uint_le(r.end_us, 2000000 + 8 * 60000000ULL);
  ck_assert_uint_le(r.hop[1].mem_max, 600 * c.params.swnd_max + 65536);
}
END_TEST

Suite *
suite_backtap(void)
{
  Suite *s = suite_create("backtap");
  TCase *tc = tcase_create("wire");
  tcase_add_test(tc, test_cell_record);
  tcase_add_test(tc, test_feedback_record);
  tcase_add_test(tc, test_seq_wrap);
  suite_add_tcase(s, tc);
  tc = tcase_create("engine");
  tcase_add_test(tc, test_ack_fwd_window);
  tcase_add_test(tc, test_syn_path);
  tcase_add_test(tc, test_drops_without_state);
  tcase_add_test(tc, test_excess_dropped_before_ack);
  tcase_add_test(tc, test_spurious_timeout);
  tcase_add_test(tc, test_close_while_peer_sends);
  tcase_add_test(tc, test_close_from_deliver);
  tcase_add_test(tc, test_probe_after_lost_fwd);
  tcase_add_test(tc, test_base_rtt_shared);
  tcase_add_test(tc, test_forgotten_circuit_fails_alone);
  tcase_add_test(tc, test_peer_stops_acknowledging);
  suite_add_tcase(s, tc);
  tc = tcase_create("sim");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sim_steady_state);
  tcase_add_test(tc, test_sim_slow_link);
  tcase_add_test(tc, test_sim_fairness);
  tcase_add_test(tc, test_sim_backpressure);
  tcase_add_test(tc, test_sim_lossy);
  tcase_add_test(tc, test_sim_single_loss);
  tcase_add_test(tc, test_sim_dead_hop);
  suite_add_tcase(s, tc);
  return s;
}
