/* SPDX-License-Identifier: BSD-3-Clause */
/* check_congestion_features.c -- congestion control where features take
 * part: the client's decision to ask an exit for it (proposal 324 10.1,
 * feature/client's circbuild) and a loopback circuit (origin and relay in
 * one process over TCP+TLS, a download through the directory cache) that
 * exercises the whole path: negotiation, SENDMEs every sendme_inc cells in
 * both directions, XON/XOFF, and the circuit closes that protocol
 * violations cause. The controller and its negotiation alone are in
 * check_congestion.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/create.h"
#include "feature/client/circbuild.h"
#include "feature/dircache/dircache.h"
#include "feature/relay/extend.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"

Suite *suite_congestion_features(void);

/* ---- client decision (proposal 324 10.1) ------------------------- */

START_TEST(test_client_decision)
{
  const char *tor049 = "Conflux=1 Cons=2 Desc=2-4 DirCache=2 FlowCtrl=1-2 "
                       "HSDir=2 HSIntro=4-5 HSRend=1-2 Link=1-5 LinkAuth=1,3 "
                       "Microdesc=2-3 Padding=2 Relay=1-4";
  ck_assert_int_eq(circbuild_protocols_support(tor049, "FlowCtrl", 2), 1);
  ck_assert_int_eq(circbuild_protocols_support(tor049, "FlowCtrl", 3), 0);
  ck_assert_int_eq(circbuild_protocols_support(tor049, "LinkAuth", 3), 1);
  ck_assert_int_eq(circbuild_protocols_support(tor049, "LinkAuth", 2), 0);
  ck_assert_int_eq(circbuild_protocols_support(tor049, "Relay", 4), 1);
  ck_assert_int_eq(circbuild_protocols_support(tor049, "Flow", 1), 0);
  ck_assert_int_eq(circbuild_protocols_support("FlowCtrl=1", "FlowCtrl", 2),
                   0);
  ck_assert_int_eq(circbuild_protocols_support("", "FlowCtrl", 2), 0);
  ck_assert_int_eq(circbuild_protocols_support(NULL, "FlowCtrl", 2), 0);
  /* Malformed entries do not count. */
  ck_assert_int_eq(circbuild_protocols_support("FlowCtrl=2-1", "FlowCtrl", 2),
                   0);
  ck_assert_int_eq(circbuild_protocols_support("FlowCtrl=x", "FlowCtrl", 2),
                   0);
  ck_assert_int_eq(circbuild_protocols_support("FlowCtrl=1-999", "FlowCtrl",
                                               2),
                   0);

  extend_target_t t;
  memset(&t, 0, sizeof(t));
  t.handshake = HTYPE_NTOR;
  t.has_ed_id = 1;
  ck_assert_int_eq(circbuild_exit_request_cc(&t, 2, tor049), 1);
  ck_assert_uint_eq(t.handshake, HTYPE_NTOR_V3);
  ck_assert_uint_eq(t.cc_request, 1);
  memset(&t, 0, sizeof(t));
  t.handshake = HTYPE_NTOR;
  t.has_ed_id = 1;
  ck_assert_int_eq(circbuild_exit_request_cc(&t, 0, tor049), 0);
  ck_assert_int_eq(circbuild_exit_request_cc(&t, 2, "FlowCtrl=1 Relay=1-4"),
                   0);
  ck_assert_int_eq(circbuild_exit_request_cc(&t, 2, "FlowCtrl=1-2 Relay=2-3"),
                   0);
  t.has_ed_id = 0;
  ck_assert_int_eq(circbuild_exit_request_cc(&t, 2, tor049), 0);
  ck_assert_uint_eq(t.handshake, HTYPE_NTOR);
  ck_assert_uint_eq(t.cc_request, 0);
}
END_TEST

/* ---- a loopback circuit -------------------------------------------- */

static struct {
  fixture_relay_t r; /* dir, keys, loop, timeout, orport */
  int n_open, closed, close_reason;
  /* download over BEGIN_DIR (stream 9) */
  size_t dl_len;
  int dl_cells, dl_ended, dl_connected, dl_bad;
  uint8_t dl_end_reason;
  int bogus_on_first_data;
  /* what the origin received */
  int stream_sendmes, circ_sendmes;
  int xoff_seen, xon_seen;
  uint8_t xon_body[CC_XON_LEN];
  uint16_t xon_len;
  /* stream 5: a test stream at the relay (BEGIN handler) */
  edge_stream_t *rs;
  or_circuit_t *rs_circ;
  size_t rs_got, rs_pending;
  int rs_writable, connected5;
  origin_circuit_t *up;      /* origin pumping DATA on stream 5 */
  size_t up_cells;
} L;

#define DOC_LEN (2 * 1000 * 1000)

static int
run_loop_for(uint64_t usec)
{
  return fixture_relay_run_for(&L.r, usec);
}

static void
run_loop(void)
{
  ck_assert_msg(!run_loop_for(10 * 1000000ULL), "timed out");
}

static uint8_t
doc_byte(size_t i)
{
  return (uint8_t)(i * 7 + (i >> 8));
}

static dircache_doc_t *
doc_provider(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  uint8_t *b = malloc(DOC_LEN);
  for (size_t i = 0; i < DOC_LEN; i++)
    b[i] = doc_byte(i);
  return dircache_doc_new(b, DOC_LEN, 0);
}

/* Origin: send DATA on stream 5 as far as the window allows. */
static void
pump_up(void)
{
  uint8_t body[RELAY_BODY_MAX];
  memset(body, 0x42, sizeof(body));
  while (L.up && !L.xoff_seen && L.up_cells < 2000 &&
         origin_circuit_cc_sendable(L.up, 0) > 0) {
    ck_assert_int_eq(origin_circuit_send_relay(L.up, 0, RELAY_COMMAND_DATA,
                                               5, body, sizeof(body)),
                     0);
    L.up_cells++;
  }
}

static void
l_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  (void)arg;
  L.n_open = n;
  evloop_exit(L.r.loop);
}

/* The HTTP body starts after the header; check it as it arrives. */
static size_t hdr_left;

static void
l_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t sid,
        const uint8_t *body, uint16_t len, void *arg)
{
  (void)hop;
  (void)arg;
  if (cmd == RELAY_COMMAND_SENDME) {
    if (sid)
      L.stream_sendmes++;
    else
      L.circ_sendmes++;
    pump_up();
    return;
  }
  if (cmd == RELAY_COMMAND_XOFF) {
    L.xoff_seen++;
    evloop_exit(L.r.loop);
    return;
  }
  if (cmd == RELAY_COMMAND_XON) {
    L.xon_seen++;
    L.xon_len = len < CC_XON_LEN ? len : CC_XON_LEN;
    memcpy(L.xon_body, body, L.xon_len);
    evloop_exit(L.r.loop);
    return;
  }
  if (sid == 5 && cmd == RELAY_COMMAND_CONNECTED) {
    L.connected5 = 1;
    evloop_exit(L.r.loop);
    return;
  }
  if (sid != 9)
    return;
  if (cmd == RELAY_COMMAND_CONNECTED) {
    L.dl_connected = 1;
    const char *req = "GET /test/doc HTTP/1.0\r\n\r\n";
    origin_circuit_send_relay(c, 0, RELAY_COMMAND_DATA, 9,
                              (const uint8_t *)req, (uint16_t)strlen(req));
  } else if (cmd == RELAY_COMMAND_DATA) {
    if (L.dl_cells++ == 0 && L.bogus_on_first_data) {
      uint8_t sm[23];
      sm[0] = 1;
      set_u16(sm + 1, 20);
      memset(sm + 3, 0xab, 20);
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 0, sm, 23);
    }
    for (uint16_t i = 0; i < len; i++) {
      if (hdr_left < 4) {
        /* still in the header: look for CRLFCRLF */
        hdr_left = body[i] == (hdr_left % 2 ? '\n' : '\r') ? hdr_left + 1
                   : body[i] == '\r'                        ? 1
                                                            : 0;
        continue;
      }
      if (body[i] != doc_byte(L.dl_len))
        L.dl_bad++;
      L.dl_len++;
    }
  } else if (cmd == RELAY_COMMAND_END) {
    L.dl_ended = 1;
    L.dl_end_reason = len ? body[0] : 0;
    evloop_exit(L.r.loop);
  }
}

static void
l_closed(origin_circuit_t *c, int reason, const char *why, void *arg)
{
  (void)c;
  (void)why;
  (void)arg;
  L.closed = 1;
  L.close_reason = reason;
  if (L.up == c)
    L.up = NULL;
  evloop_exit(L.r.loop);
}

static const origin_circuit_ops_t l_ops = {l_extended, l_relay, l_closed};

/* The relay side of stream 5. */
static void
rs_data(edge_stream_t *s, const uint8_t *d, size_t n, void *arg)
{
  (void)s;
  (void)d;
  (void)arg;
  L.rs_got += n;
  L.rs_pending += n; /* the test decides when it "drains" */
}

static void
rs_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)reason;
  (void)arg;
  L.rs = NULL;
}

static void
rs_writable(edge_stream_t *s, void *arg)
{
  (void)s;
  (void)arg;
  L.rs_writable++;
  evloop_exit(L.r.loop);
}

static size_t
rs_pending_fn(edge_stream_t *s, void *arg)
{
  (void)s;
  (void)arg;
  return L.rs_pending;
}

static const edge_stream_ops_t rs_ops = {.on_data = rs_data,
                                         .on_end = rs_end,
                                         .on_writable = rs_writable,
                                         .pending_bytes = rs_pending_fn};

static int
test_begin(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
           int early)
{
  (void)body;
  (void)early;
  L.rs = relay_stream_new(circ, h->stream_id, &rs_ops, NULL);
  L.rs_circ = circ;
  edge_stream_send_msg(L.rs, RELAY_COMMAND_CONNECTED, NULL, 0);
  return 0;
}

static void
l_setup(void)
{
  memset(&L, 0, sizeof(L));
  hdr_left = 0;
  cc_params_t d;
  cc_params_default(&d);
  cc_params_set_current(&d);
  fixture_relay_start(&L.r, "cc", "CHECK_CC_VERBOSE", "info");
  extend_init(1);
  relay_register_handler(RELAY_COMMAND_BEGIN, test_begin);
}

static void
l_teardown(void)
{
  fixture_relay_shutdown();
  fixture_assert_no_circuits();
  ck_assert_uint_eq(packed_cells_allocated(), 0);
  fixture_relay_free(&L.r);
  cc_params_t d;
  cc_params_default(&d);
  cc_params_set_current(&d);
}

static origin_circuit_t *
build(int cc_request)
{
  extend_target_t t = fixture_relay_target(&L.r, HTYPE_NTOR_V3);
  t.cc_request = (uint8_t)cc_request;
  origin_circuit_t *c = origin_circuit_launch(&t, &l_ops, NULL);
  ck_assert_ptr_nonnull(c);
  run_loop();
  ck_assert_int_eq(L.closed, 0);
  ck_assert_int_eq(L.n_open, 1);
  return c;
}

static or_circuit_t *
relay_side(origin_circuit_t *c)
{
  or_circuit_t *oc = or_circuit_find_by_p_id_for_testing(c->base.n_circ_id);
  ck_assert_ptr_nonnull(oc);
  return oc;
}

START_TEST(test_loop_negotiation)
{
  origin_circuit_t *c = build(1);
  const cc_t *cc = origin_circuit_cc(c, 0);
  ck_assert_ptr_nonnull(cc);
  ck_assert_uint_eq(cc->sendme_inc, 31);
  ck_assert_uint_eq(origin_circuit_cc_sendable(c, 0), 124);
  ck_assert_uint_eq(relay_side(c)->cc_sendme_inc, 31);
  circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  L.closed = 0;
  /* Not asked: fixed windows on both ends. */
  c = build(0);
  ck_assert_ptr_null(origin_circuit_cc(c, 0));
  ck_assert_uint_eq(origin_circuit_cc_sendable(c, 0), UINT64_MAX);
  ck_assert_uint_eq(relay_side(c)->cc_sendme_inc, 0);
  /* The relay's consensus says cc_alg=0: it declines. */
  cc_params_t p;
  cc_params_default(&p);
  p.alg = CC_ALG_SENDME;
  cc_params_set_current(&p);
  c = build(1);
  ck_assert_ptr_null(origin_circuit_cc(c, 0));
  ck_assert_uint_eq(relay_side(c)->cc_sendme_inc, 0);
}
END_TEST

START_TEST(test_loop_download)
{
  /* 2 MB through a circuit with congestion control: the relay sends as
   * far as its window allows, core at the origin answers every 31st DATA
   * cell with an authenticated SENDME, no stream SENDMEs at all, and the
   * relay's window grows in slow start. */
  dircache_init(channels_loop());
  dircache_register("/test/doc", doc_provider, NULL);
  origin_circuit_t *c = build(1);
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR,
                                             9, NULL, 0),
                   0);
  run_loop();
  ck_assert_int_eq(L.dl_connected, 1);
  ck_assert_int_eq(L.dl_ended, 1);
  ck_assert_uint_eq(L.dl_end_reason, END_STREAM_REASON_DONE);
  ck_assert_uint_eq(L.dl_len, DOC_LEN);
  ck_assert_int_eq(L.dl_bad, 0);
  ck_assert_int_eq(L.stream_sendmes, 0);
  const cc_t *occ = origin_circuit_cc(c, 0);
  ck_assert_uint_eq(occ->n_sendmes_sent, (uint64_t)L.dl_cells / 31);
  /* The GET was one DATA cell: the relay acknowledges nothing of ours. */
  ck_assert_uint_eq(occ->inflight, 1);
  ck_assert_int_eq(L.circ_sendmes, 0);
  /* Let the last SENDMEs reach the relay. */
  run_loop_for(200000);
  or_circuit_t *oc = relay_side(c);
  const cc_t *rcc = circ_edge_cc(oc);
  ck_assert_ptr_nonnull(rcc);
  ck_assert_uint_eq(rcc->n_acks, occ->n_sendmes_sent);
  ck_assert_uint_eq(rcc->inflight, (uint64_t)L.dl_cells - 31 * rcc->n_acks);
  ck_assert_uint_gt(rcc->cwnd, 124);
  ck_assert_uint_gt(rcc->min_rtt_us, 0);
  ck_assert_uint_eq(rcc->n_sendmes_sent, 0); /* one DATA cell from us */
  dircache_shutdown();
}
END_TEST

START_TEST(test_loop_upload_xoff_xon)
{
  /* Upload on a stream whose owner does not drain: the relay acknowledges
   * with circuit SENDMEs every 31 cells (no stream SENDMEs), sends XOFF
   * once more than 500 cells wait, and XON when the owner drained. */
  L.up = build(1);
  ck_assert_int_eq(origin_circuit_send_relay(L.up, 0, RELAY_COMMAND_BEGIN, 5,
                                             (const uint8_t *)"x:1", 4),
                   0);
  run_loop();
  ck_assert_int_eq(L.connected5, 1);
  ck_assert_ptr_nonnull(L.rs);
  pump_up();
  while (!L.xoff_seen && !L.closed)
    run_loop();
  ck_assert_int_eq(L.closed, 0);
  ck_assert_int_eq(L.xoff_seen, 1);
  ck_assert_uint_gt(L.rs_got, 500 * 498);
  ck_assert_int_eq(L.stream_sendmes, 0);
  ck_assert_int_ge(L.circ_sendmes, 500 / 31);
  ck_assert_int_eq(L.xon_seen, 0);
  /* The owner drains everything: XON. */
  L.rs_pending = 0;
  edge_stream_flushed(L.rs);
  run_loop();
  ck_assert_int_eq(L.xon_seen, 1);
  ck_assert_uint_eq(L.xon_len, CC_XON_LEN);
  ck_assert_uint_eq(L.xon_body[0], 0);
  ck_assert_int_eq(L.xoff_seen, 1);
  ck_assert_int_eq(L.closed, 0);
}
END_TEST

START_TEST(test_loop_xoff_stops_relay)
{
  origin_circuit_t *c = build(1);
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN, 5,
                                             (const uint8_t *)"x:1", 4),
                   0);
  run_loop();
  ck_assert_ptr_nonnull(L.rs);
  uint8_t b[CC_XON_LEN], data[5000];
  memset(data, 0x33, sizeof(data));
  cc_flow_encode_xoff(b);
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_XOFF, 5, b,
                                             CC_XOFF_LEN),
                   0);
  run_loop_for(200000);
  /* The relay's stream may not send now. */
  ck_assert_uint_eq(edge_stream_send(L.rs, data, sizeof(data)), 0);
  cc_flow_encode_xon(b, 0);
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_XON, 5, b,
                                             CC_XON_LEN),
                   0);
  run_loop();
  ck_assert_int_eq(L.rs_writable, 1);
  ck_assert_uint_eq(edge_stream_send(L.rs, data, sizeof(data)),
                    sizeof(data));
  /* A malformed XOFF is ignored (as tor does), not fatal. */
  b[0] = 7;
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_XOFF, 5, b, 1);
  run_loop_for(200000);
  ck_assert_int_eq(L.closed, 0);
  ck_assert_uint_eq(edge_stream_send(L.rs, data, 100), 100);
}
END_TEST

START_TEST(test_loop_stream_sendme_closes)
{
  origin_circuit_t *c = build(1);
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN, 5,
                            (const uint8_t *)"x:1", 4);
  run_loop();
  /* For a stream that does not exist it is dropped quietly... */
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 77, NULL, 0);
  run_loop_for(200000);
  ck_assert_int_eq(L.closed, 0);
  /* ...for an open one it closes the circuit. */
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 5, NULL, 0);
  run_loop();
  ck_assert_int_eq(L.closed, 1);
}
END_TEST

START_TEST(test_loop_unexpected_sendme_closes)
{
  origin_circuit_t *c = build(1);
  uint8_t sm[23];
  sm[0] = 1;
  set_u16(sm + 1, 20);
  memset(sm + 3, 0, 20);
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 0, sm, 23);
  run_loop();
  ck_assert_int_eq(L.closed, 1);
}
END_TEST

START_TEST(test_loop_bad_digest_closes)
{
  dircache_init(channels_loop());
  dircache_register("/test/doc", doc_provider, NULL);
  L.bogus_on_first_data = 1;
  origin_circuit_t *c = build(1);
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR, 9, NULL, 0);
  while (!L.closed && !L.dl_ended)
    run_loop();
  ck_assert_int_eq(L.closed, 1);
  ck_assert_int_eq(L.dl_ended, 0);
  dircache_shutdown();
}
END_TEST

Suite *
suite_congestion_features(void)
{
  Suite *s = suite_create("congestion_features");
  TCase *tc = tcase_create("negotiation");
  tcase_add_test(tc, test_client_decision);
  suite_add_tcase(s, tc);
  tc = tcase_create("loopback");
  tcase_add_checked_fixture(tc, l_setup, l_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_loop_negotiation);
  tcase_add_test(tc, test_loop_download);
  tcase_add_test(tc, test_loop_upload_xoff_xon);
  tcase_add_test(tc, test_loop_xoff_stops_relay);
  tcase_add_test(tc, test_loop_stream_sendme_closes);
  tcase_add_test(tc, test_loop_unexpected_sendme_closes);
  tcase_add_test(tc, test_loop_bad_digest_closes);
  suite_add_tcase(s, tc);
  return s;
}
