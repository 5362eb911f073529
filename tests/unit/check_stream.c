/* SPDX-License-Identifier: BSD-3-Clause */
/* check_stream.c -- streams that end at a relay (core/or/stream.h) and the
 * exit streams built on them (feature/exit/exit_conn.h), in one process: a
 * relay and a one-hop origin circuit to it over real TCP+TLS on 127.0.0.1,
 * as in check_circuit.c.
 *
 * What is checked:
 *  - the half-closed stream records (stream_half_*) on their own: the
 *    allowance per command, expiry, the bound per circuit;
 *  - on a live circuit: after the relay ends a stream, the DATA, SENDMEs
 *    and END the client sent before it saw the END are dropped quietly;
 *    more than that, or cells for IDs never used, are dropped and counted
 *    but never close the circuit (as tor); DATA on a half-closed stream
 *    still counts against the circuit deliver window, so the relay's
 *    authenticated circuit SENDMEs come after every 100th DATA cell and
 *    carry that cell's digest (compared with the client's own record); a
 *    BEGIN may reuse a half-closed ID;
 *  - exit streams (TCP to a listener in this process): DATA followed at
 *    once by END reaches the destination in full before the connection
 *    closes; bytes an exit stream holds are reported to MaxMemInQueues
 *    through exit_circuit_buffered_bytes() and go back to 0 when it ends.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/dos.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/create.h"
#include "core/proto/relay_msg.h"
#include "feature/exit/exit_conn.h"
#include "feature/exit/policy.h"
#include "feature/relay/router_keys.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/memacct.h"
#include "lib/net/conn.h"

Suite *suite_stream(void);

#define MAX_SENDMES 16

static struct {
  fixture_relay_t r; /* dir, keys, loop, timeout, orport */
  origin_circuit_t *c;
  int open, closed, close_reason;
  /* relay side (test BEGIN handler) */
  or_circuit_t *oc;
  edge_stream_t *rs;
  size_t rs_bytes;
  int rs_ended;
  /* client side: what came back */
  int n_circ_sendmes;
  uint8_t sendme_digest[MAX_SENDMES][20];
  int n_connected, n_end, n_data;
  uint8_t end_reason;
  uint8_t connected_body[32]; /* the last CONNECTED's body */
  size_t connected_len;
  /* client side: digests of our every 100th DATA cell */
  uint8_t sent_digest[MAX_SENDMES][20];
  int n_data_sent;
  /* exit tests: the destination */
  listener_t *listener;
  conn_t *dst;
  uint8_t *dst_data;
  size_t dst_len, dst_cap;
  int dst_eof;
  exit_policy_t *policy;
  int exit_on;
  conn_t *more_dst[16]; /* later connections to the destination */
  int n_more_dst;
  dns_resolver_t *dns;  /* a resolver whose nameserver never answers */
  int silent_fd;
} T;

static void
run_loop_for(uint64_t usec)
{
  fixture_relay_run_for(&T.r, usec);
}

/* Run the loop until *flag >= want (or 10 s). */
static void
wait_int(const int *flag, int want)
{
  for (int k = 0; k < 100 && *flag < want; k++)
    run_loop_for(100000);
}

/* ---- client side ---- */

static void
cb_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  (void)arg;
  T.open = n;
  evloop_exit(T.r.loop);
}

static void
cb_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  (void)c;
  (void)hop;
  (void)arg;
  switch (cmd) {
  case RELAY_COMMAND_SENDME:
    if (stream_id == 0 && T.n_circ_sendmes < MAX_SENDMES) {
      ck_assert_uint_ge(len, 23);
      ck_assert_uint_eq(body[0], 1);
      ck_assert_uint_eq(get_u16(body + 1), 20);
      memcpy(T.sendme_digest[T.n_circ_sendmes], body + 3, 20);
      T.n_circ_sendmes++;
    }
    break;
  case RELAY_COMMAND_CONNECTED:
    T.n_connected++;
    T.connected_len = len < sizeof(T.connected_body) ? len : 0;
    memcpy(T.connected_body, body, T.connected_len);
    break;
  case RELAY_COMMAND_END:
    T.n_end++;
    T.end_reason = len ? body[0] : 0;
    break;
  case RELAY_COMMAND_DATA:
    T.n_data++;
    break;
  default:
    break;
  }
}

static void
cb_closed(origin_circuit_t *c, int reason, const char *why, void *arg)
{
  (void)c;
  (void)why;
  (void)arg;
  T.closed = 1;
  T.close_reason = reason;
}

static const origin_circuit_ops_t ops = {cb_extended, cb_relay, cb_closed};

static void
build_circuit(void)
{
  extend_target_t t = fixture_relay_target(&T.r, HTYPE_NTOR);
  T.c = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(T.c);
  for (int k = 0; k < 100 && !T.open && !T.closed; k++)
    run_loop_for(100000);
  ck_assert_msg(T.open == 1 && !T.closed, "the circuit did not open");
}

/* The same with ntor v3 and congestion control: no stream windows, only
 * XON/XOFF, which a client may ignore. */
static void
build_circuit_cc(void)
{
  extend_target_t t = fixture_relay_target(&T.r, HTYPE_NTOR_V3);
  t.cc_request = 1;
  T.c = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(T.c);
  for (int k = 0; k < 100 && !T.open && !T.closed; k++)
    run_loop_for(100000);
  ck_assert_msg(T.open == 1 && !T.closed, "the circuit did not open");
  ck_assert_ptr_nonnull(origin_circuit_cc(T.c, 0));
}

static void
client_send(uint8_t cmd, uint16_t id, const uint8_t *body, uint16_t len)
{
  ck_assert_int_eq(origin_circuit_send_relay(T.c, 0, cmd, id, body, len), 0);
}

/* A DATA cell; the digest of every 100th is remembered (the relay's
 * SENDMEs must echo them). */
static void
client_send_data(uint16_t id)
{
  uint8_t body[RELAY_BODY_MAX];
  memset(body, 0x5a, sizeof(body));
  client_send(RELAY_COMMAND_DATA, id, body, sizeof(body));
  if (++T.n_data_sent % CIRCWINDOW_INCREMENT == 0) {
    int k = T.n_data_sent / CIRCWINDOW_INCREMENT - 1;
    ck_assert_int_lt(k, MAX_SENDMES);
    memcpy(T.sent_digest[k],
           relay_crypto_last_digest(T.c->hops[0].crypto, RELAY_DIR_FORWARD),
           20);
  }
}

/* ---- relay side: a test BEGIN handler ---- */

static void
rs_data(edge_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  (void)s;
  (void)data;
  (void)arg;
  T.rs_bytes += len;
}

static void
rs_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)reason;
  (void)arg;
  T.rs_ended++;
  T.rs = NULL;
}

static const edge_stream_ops_t rs_ops = {.on_data = rs_data, .on_end = rs_end};

static int
test_begin(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
           int early)
{
  (void)body;
  (void)early;
  T.oc = circ;
  T.rs = relay_stream_new(circ, h->stream_id, &rs_ops, NULL);
  ck_assert_ptr_nonnull(T.rs);
  edge_stream_send_msg(T.rs, RELAY_COMMAND_CONNECTED, NULL, 0);
  return 0;
}

/* ---- fixture ---- */

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  fixture_relay_start(&T.r, "stream", "CHECK_STREAM_VERBOSE", "debug");
}

static void
teardown(void)
{
  if (T.exit_on)
    exit_shutdown();
  dos_shutdown();
  dns_resolver_free(T.dns);
  if (T.silent_fd > 0)
    close(T.silent_fd);
  conn_free(T.dst);
  for (int i = 0; i < T.n_more_dst; i++)
    conn_free(T.more_dst[i]);
  listener_free(T.listener);
  /* Exit connections closed with a flush linger until their peer (just
   * freed) closes: let them see it and go. */
  if (T.exit_on)
    run_loop_for(300000);
  fixture_relay_shutdown();
  ck_assert_uint_eq(memacct_underflows(), 0);
  fixture_assert_no_circuits();
  exit_policy_free(T.policy);
  free(T.dst_data);
  fixture_relay_free(&T.r);
}

/* Open stream `id` through the test BEGIN handler. */
static void
open_test_stream(uint16_t id)
{
  relay_register_handler(RELAY_COMMAND_BEGIN, test_begin);
  int before = T.n_connected;
  const char target[] = "127.0.0.1:80";
  client_send(RELAY_COMMAND_BEGIN, id, (const uint8_t *)target,
              sizeof(target));
  wait_int(&T.n_connected, before + 1);
  ck_assert_int_eq(T.n_connected, before + 1);
  ck_assert_ptr_nonnull(T.rs);
  ck_assert_uint_eq(edge_stream_id(T.rs), id);
}

static void
dropped(uint64_t *half, uint64_t *invalid)
{
  circ_edge_get_dropped(T.oc, half, invalid);
}

/* ---- the records on their own ---- */

START_TEST(test_half_records)
{
  edge_half_set_t hs;
  memset(&hs, 0, sizeof(hs));
  uint64_t t0 = 1000000;
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 5, t0), 0);
  /* Fixed windows: 2 DATA, 1 SENDME, then END ends the record. */
  edge_half_add(&hs, 5, 2, 1, 0, 0, t0);
  ck_assert_int_eq(edge_half_contains(&hs, 5, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 5, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 5, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 5, t0), 0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_SENDME, 5, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_SENDME, 5, t0), 0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_CONNECTED, 5, t0),
                   0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_XON, 5, t0), 0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_BEGIN, 5, t0), 0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_END, 5, t0), 1);
  ck_assert_int_eq(edge_half_contains(&hs, 5, t0), 0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_END, 5, t0), 0);
  /* Client side: one CONNECTED may still come; RESOLVED ends it. */
  edge_half_add(&hs, 6, 0, 0, 1, 0, t0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_CONNECTED, 6, t0),
                   1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_CONNECTED, 6, t0),
                   0);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_RESOLVED, 6, t0),
                   1);
  ck_assert_int_eq(edge_half_contains(&hs, 6, t0), 0);
  /* Congestion control: any DATA and XON/XOFF until expiry, no SENDME. */
  edge_half_add(&hs, 7, 0, 0, 0, 1, t0);
  for (int i = 0; i < 2000; i++)
    ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 7, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_XOFF, 7, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_SENDME, 7, t0), 0);
  uint64_t t_end = t0 + EDGE_HALF_TTL_USEC;
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 7,
                                      t_end - 1),
                   1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 7, t_end), 0);
  ck_assert_uint_eq(edge_half_count(&hs, t_end), 0);
  /* Re-adding replaces the record. */
  edge_half_clear(&hs);
  edge_half_add(&hs, 8, 1, 0, 0, 0, t0);
  edge_half_add(&hs, 8, 3, 0, 0, 0, t0);
  ck_assert_uint_eq(edge_half_count(&hs, t0), 1);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 8, t0), 1);
  ck_assert_int_eq(edge_half_accept(&hs, RELAY_COMMAND_DATA, 8, t0), 0);
  /* Bound: at most EDGE_HALF_MAX; the one expiring first goes. */
  edge_half_clear(&hs);
  for (int i = 0; i < EDGE_HALF_MAX + 6; i++)
    edge_half_add(&hs, (uint16_t)(100 + i), 1, 0, 0, 0, t0 + (uint64_t)i);
  ck_assert_uint_eq(edge_half_count(&hs, t0), EDGE_HALF_MAX);
  for (int i = 0; i < 6; i++)
    ck_assert_int_eq(edge_half_contains(&hs, (uint16_t)(100 + i), t0), 0);
  for (int i = 6; i < EDGE_HALF_MAX + 6; i++)
    ck_assert_int_eq(edge_half_contains(&hs, (uint16_t)(100 + i), t0), 1);
  /* Expired records are pruned when a new one is added. */
  edge_half_add(&hs, 9, 1, 0, 0, 0, t0 + EDGE_HALF_TTL_USEC + 1000);
  ck_assert_uint_eq(hs.n, 1);
  edge_half_remove(&hs, 9);
  ck_assert_uint_eq(hs.n, 0);
  edge_half_clear(&hs);
  ck_assert_ptr_null(hs.v);
}
END_TEST

/* ---- on a live circuit ---- */

START_TEST(test_half_closed_cells_accepted)
{
  build_circuit();
  open_test_stream(5);
  /* The relay sends 120 DATA cells (stream window 500 -> 380: the client
   * may send two stream SENDMEs), then ends the stream. */
  static uint8_t buf[120 * RELAY_BODY_MAX];
  memset(buf, 1, sizeof(buf));
  ck_assert_uint_eq(edge_stream_send(T.rs, buf, sizeof(buf)), sizeof(buf));
  edge_stream_end(T.rs, END_STREAM_REASON_DONE);
  T.rs = NULL;
  wait_int(&T.n_end, 1);
  ck_assert_int_eq(T.n_end, 1);
  ck_assert_uint_eq(T.end_reason, END_STREAM_REASON_DONE);
  /* What the client had in flight: 10 DATA, 2 SENDMEs, an END. */
  for (int i = 0; i < 10; i++)
    client_send_data(5);
  client_send(RELAY_COMMAND_SENDME, 5, NULL, 0);
  client_send(RELAY_COMMAND_SENDME, 5, NULL, 0);
  uint8_t done = END_STREAM_REASON_DONE;
  client_send(RELAY_COMMAND_END, 5, &done, 1);
  /* A third SENDME after the END: beyond what it may send. */
  client_send(RELAY_COMMAND_SENDME, 5, NULL, 0);
  /* And cells for a stream ID never used. */
  client_send_data(77);
  client_send(RELAY_COMMAND_END, 78, &done, 1);
  uint64_t half = 0, invalid = 0;
  for (int k = 0; k < 100 && half + invalid < 16; k++) {
    run_loop_for(100000);
    dropped(&half, &invalid);
  }
  ck_assert_uint_eq(half, 13);
  ck_assert_uint_eq(invalid, 3);
  ck_assert_int_eq(T.closed, 0);
  ck_assert_int_eq(T.rs_ended, 0); /* we ended it: no on_end */
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 1);
  /* The circuit still carries streams. */
  open_test_stream(6);
  client_send_data(6);
  for (int k = 0; k < 100 && T.rs_bytes < RELAY_BODY_MAX; k++)
    run_loop_for(100000);
  ck_assert_uint_eq(T.rs_bytes, RELAY_BODY_MAX);
}
END_TEST

START_TEST(test_half_closed_data_counts_in_circuit_window)
{
  build_circuit();
  open_test_stream(5);
  edge_stream_end(T.rs, END_STREAM_REASON_DONE);
  T.rs = NULL;
  wait_int(&T.n_end, 1);
  /* The stream's deliver window had 500 cells left; the client sends 550
   * (it had not seen the END): 500 are expected, 50 are not, and all 550
   * count against the circuit deliver window: five authenticated circuit
   * SENDMEs, each with the digest of the 100th, 200th... DATA cell. */
  for (int i = 0; i < 550; i++)
    client_send_data(5);
  uint64_t half = 0, invalid = 0;
  for (int k = 0; k < 100 && (half + invalid < 550 || T.n_circ_sendmes < 5);
       k++) {
    run_loop_for(100000);
    dropped(&half, &invalid);
  }
  ck_assert_uint_eq(half, STREAMWINDOW_START);
  ck_assert_uint_eq(invalid, 50);
  ck_assert_int_eq(T.n_circ_sendmes, 5);
  for (int i = 0; i < 5; i++)
    ck_assert_msg(!memcmp(T.sendme_digest[i], T.sent_digest[i], 20),
                  "circuit SENDME %d does not carry the digest of DATA "
                  "cell %d",
                  i + 1, (i + 1) * 100);
  ck_assert_int_eq(T.closed, 0);
}
END_TEST

START_TEST(test_begin_reuses_half_closed_id)
{
  build_circuit();
  open_test_stream(9);
  edge_stream_end(T.rs, END_STREAM_REASON_DONE);
  T.rs = NULL;
  wait_int(&T.n_end, 1);
  ck_assert_int_eq(edge_is_half_closed(T.oc->edge, 9),
                   1);
  open_test_stream(9);
  ck_assert_int_eq(edge_is_half_closed(T.oc->edge, 9),
                   0);
  client_send_data(9);
  for (int k = 0; k < 100 && T.rs_bytes < RELAY_BODY_MAX; k++)
    run_loop_for(100000);
  ck_assert_uint_eq(T.rs_bytes, RELAY_BODY_MAX);
  uint64_t half, invalid;
  dropped(&half, &invalid);
  ck_assert_uint_eq(half + invalid, 0);
}
END_TEST

/* ---- exit streams ---- */

static void
dst_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)arg;
  if (ev == CONN_EV_DATA) {
    buf_t *in = conn_inbuf(c);
    size_t n = buf_datalen(in);
    if (T.dst_len + n > T.dst_cap) {
      T.dst_cap = (T.dst_len + n) * 2;
      T.dst_data = realloc(T.dst_data, T.dst_cap);
      ck_assert_ptr_nonnull(T.dst_data);
    }
    memcpy(T.dst_data + T.dst_len, buf_pullup(in, n), n);
    T.dst_len += n;
    buf_drain(in, n);
  } else if (ev == CONN_EV_EOF || ev == CONN_EV_ERROR) {
    T.dst_eof = 1;
  }
}

/* Later destination connections: kept (a conn without a callback would
 * free itself on an error) but not looked at. */
static void
noop_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)c;
  (void)ev;
  (void)arg;
}

static void
dst_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  if (T.dst) {
    ck_assert_int_lt(T.n_more_dst, 16);
    T.more_dst[T.n_more_dst++] =
        conn_new_accepted(T.r.loop, NULL, fd, peer, noop_cb, NULL);
    return;
  }
  T.dst = conn_new_accepted(T.r.loop, NULL, fd, peer, dst_cb, NULL);
}

/* Start the exit role (accept 127.0.0.1:*) and a destination listener. */
static void
start_exit(int refuse_unknown)
{
  const char *lines[] = {"accept 127.0.0.1:*", "reject *:*"};
  char *err = NULL;
  T.policy = exit_policy_parse_plain(lines, 2, &err);
  ck_assert_msg(T.policy != NULL, "policy: %s", err ? err : "?");
  exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.policy = T.policy;
  cfg.refuse_unknown = refuse_unknown;
  exit_init(T.r.loop, &cfg);
  T.exit_on = 1;
  pc_addr_t any;
  ck_assert_int_eq(pc_addr_parse(&any, "127.0.0.1:0"), 0);
  T.listener = listener_new(T.r.loop, &any, dst_accept, NULL, NULL);
  ck_assert_ptr_nonnull(T.listener);
}

/* Send BEGIN for stream id to the destination; run until CONNECTED or END
 * comes back. Returns 0 (connected) or the END reason. */
static int
begin_exit_stream(uint16_t id)
{
  int c0 = T.n_connected, e0 = T.n_end;
  char target[64];
  int n = snprintf(target, sizeof(target), "127.0.0.1:%u",
                   (unsigned)listener_addr(T.listener)->port);
  client_send(RELAY_COMMAND_BEGIN, id, (const uint8_t *)target,
              (uint16_t)(n + 1));
  for (int k = 0; k < 100 && T.n_connected == c0 && T.n_end == e0; k++)
    run_loop_for(100000);
  ck_assert_int_eq((T.n_connected - c0) + (T.n_end - e0), 1);
  return T.n_end > e0 ? T.end_reason : 0;
}

static void
open_exit_stream(uint16_t id)
{
  start_exit(0);
  ck_assert_int_eq(begin_exit_stream(id), 0);
  for (int k = 0; k < 50 && !T.dst; k++)
    run_loop_for(100000);
  ck_assert_ptr_nonnull(T.dst);
  T.oc = or_circuit_find_by_p_id_for_testing(T.c->base.n_circ_id);
  ck_assert_ptr_nonnull(T.oc);
}

/* The consensus as the test wants it: -1 none, 0 not listed, 1 listed. */
static int lookup_answer, lookup_param, lookup_calls;
static uint8_t lookup_id[20];

static int
test_lookup(const uint8_t *rsa_id, int *param, void *arg)
{
  (void)arg;
  lookup_calls++;
  memcpy(lookup_id, rsa_id, 20);
  if (lookup_answer >= 0)
    *param = lookup_param;
  return lookup_answer;
}

START_TEST(test_exit_refuse_unknown)
{
  build_circuit();
  start_exit(1);
  uint16_t id = 10;
  /* No lookup function: nothing to check against. */
  ck_assert_int_eq(begin_exit_stream(id++), 0);
  exit_set_relay_lookup(test_lookup, NULL);
  /* No consensus yet: served as before. */
  lookup_answer = -1;
  ck_assert_int_eq(begin_exit_stream(id++), 0);
  ck_assert_int_eq(lookup_calls, 1);
  /* The lookup is asked about the previous hop: here, ourselves. */
  ck_assert(!memcmp(lookup_id, T.r.keys->rsa_id_digest, 20));
  /* Listed: served. */
  lookup_answer = 1;
  lookup_param = 1;
  ck_assert_int_eq(begin_exit_stream(id++), 0);
  /* Not listed: END with reason MISC, as tor. */
  lookup_answer = 0;
  ck_assert_int_eq(begin_exit_stream(id++), END_STREAM_REASON_MISC);
  exit_stats_t st;
  exit_get_stats(&st);
  ck_assert_uint_eq(st.n_refused_unknown, 1);
  /* auto follows the consensus parameter (default 1). */
  exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.policy = T.policy;
  cfg.refuse_unknown = -1;
  exit_configure(&cfg);
  ck_assert_int_eq(begin_exit_stream(id++), END_STREAM_REASON_MISC);
  lookup_param = 0;
  ck_assert_int_eq(begin_exit_stream(id++), 0);
  /* RefuseUnknownExits 0: not asked. */
  cfg.refuse_unknown = 0;
  exit_configure(&cfg);
  lookup_param = 1;
  int calls = lookup_calls;
  ck_assert_int_eq(begin_exit_stream(id++), 0);
  ck_assert_int_eq(lookup_calls, calls);
  ck_assert_int_eq(T.closed, 0);
}
END_TEST

START_TEST(test_exit_end_delivers_pending_data)
{
  build_circuit();
  open_exit_stream(3);
  /* The destination does not read for now: what the client sends waits
   * in the exit's buffers (and the kernel's) when its END arrives. */
  conn_set_reading(T.dst, 0);
  enum { N = 400 };
  uint8_t body[RELAY_BODY_MAX];
  for (int i = 0; i < N; i++) {
    for (size_t j = 0; j < sizeof(body); j++)
      body[j] = (uint8_t)(i * 7 + j);
    client_send(RELAY_COMMAND_DATA, 3, body, sizeof(body));
  }
  uint8_t done = END_STREAM_REASON_DONE;
  client_send(RELAY_COMMAND_END, 3, &done, 1);
  run_loop_for(300000);
  conn_set_reading(T.dst, 1);
  for (int k = 0; k < 100 && !T.dst_eof; k++)
    run_loop_for(100000);
  ck_assert_int_eq(T.dst_eof, 1);
  ck_assert_uint_eq(T.dst_len, (size_t)N * RELAY_BODY_MAX);
  for (int i = 0; i < N; i++)
    for (size_t j = 0; j < RELAY_BODY_MAX; j++)
      ck_assert_uint_eq(T.dst_data[(size_t)i * RELAY_BODY_MAX + j],
                        (uint8_t)(i * 7 + j));
  ck_assert_int_eq(T.closed, 0);
}
END_TEST

START_TEST(test_exit_buffered_bytes_counted)
{
  build_circuit();
  open_exit_stream(4);
  ck_assert_uint_eq(exit_circuit_buffered_bytes(&T.oc->base), 0);
  /* The destination sends 1 MB; the client never sends a stream SENDME,
   * so the exit packages 500 cells and keeps the rest of what it read. */
  static uint8_t big[1 << 20];
  memset(big, 0x42, sizeof(big));
  buf_add(conn_outbuf(T.dst), big, sizeof(big));
  conn_flush_soon(T.dst);
  for (int k = 0; k < 100 && T.n_data < STREAMWINDOW_START; k++)
    run_loop_for(100000);
  ck_assert_int_eq(T.n_data, STREAMWINDOW_START);
  run_loop_for(200000);
  size_t held = exit_circuit_buffered_bytes(&T.oc->base);
  ck_assert_uint_gt(held, 0);
  ck_assert_uint_le(held, sizeof(big) - STREAMWINDOW_START * RELAY_BODY_MAX);
  /* Closing the stream frees it. */
  uint8_t done = END_STREAM_REASON_DONE;
  client_send(RELAY_COMMAND_END, 4, &done, 1);
  for (int k = 0; k < 50 && exit_circuit_buffered_bytes(&T.oc->base); k++)
    run_loop_for(100000);
  ck_assert_uint_eq(exit_circuit_buffered_bytes(&T.oc->base), 0);
}
END_TEST

/* The exit figure, as an in-process driver: a client that ignores
 * XOFF sends 38 MB of DATA on one stream to an exit whose destination
 * does not read. Before the single memory budget, all of it past the
 * kernel's socket buffers sat in the exit's output buffer under a 1 MiB
 * MaxMemInQueues and the handler never ran (only queued cells triggered
 * it). Now: _i == 0, MaxMemInQueues 1 MiB: the handler fires on the
 * budget, closes the circuit (whose buffered data is the oldest), and
 * the buffers are given back at once; _i == 1, no limit: the stream is
 * ended with RESOURCELIMIT once it holds EDGE_STREAM_MAX_PENDING bytes.
 * Either way the exit never held more than about 2 MiB. */
START_TEST(test_exit_xoff_ignored_flood_bounded)
{
  const int with_limit = _i == 0;
  build_circuit_cc();
  open_exit_stream(5);
  conn_set_reading(T.dst, 0);
  if (with_limit)
    circuits_set_max_mem_in_queues(1 << 20);
  circuits_oom_stats_t os0;
  circuits_get_oom_stats(&os0);
  uint64_t ended0 = edge_streams_ended_over_pending();
  const size_t flood = 38u << 20;
  uint8_t body[RELAY_BODY_MAX];
  memset(body, 0x77, sizeof(body));
  size_t sent = 0;
  uint64_t peak = 0;
  int ends0 = T.n_end;
  while (sent < flood && !T.closed && T.n_end == ends0) {
    for (int k = 0; k < 64 && sent < flood; k++) {
      if (origin_circuit_send_relay(T.c, 0, RELAY_COMMAND_DATA, 5, body,
                                    sizeof(body)) < 0)
        break;
      sent += sizeof(body);
    }
    /* Let the cells cross (and the exit's XOFF come back, ignored). */
    /* (T.c is freed once the memory handler has closed it.) */
    for (int k = 0; k < 20 && !T.closed && T.c->base.n_queue.cells.n; k++)
      run_loop_for(2000);
    run_loop_for(1000);
    uint64_t unsigned_n = 0;
    unsigned n_exit;
    exit_get_buffered(&n_exit, &unsigned_n);
    if (unsigned_n > peak)
      peak = unsigned_n;
    if (memacct_get(MEMACCT_EXIT_BUF) > peak)
      peak = memacct_get(MEMACCT_EXIT_BUF);
  }
  wait_int(with_limit ? &T.closed : &T.n_end, with_limit ? 1 : ends0 + 1);
  fprintf(stderr, "xoff-ignored flood (%s): sent %zu bytes, exit held at "
          "most %llu bytes\n", with_limit ? "MaxMemInQueues 1 MiB" :
          "no limit", sent, (unsigned long long)peak);
  ck_assert_uint_lt(sent, flood);
  ck_assert_uint_le(peak, EDGE_STREAM_MAX_PENDING + 64 * 1024);
  circuits_oom_stats_t os;
  circuits_get_oom_stats(&os);
  if (with_limit) {
    ck_assert_int_eq(T.closed, 1); /* DESTROY came back */
    ck_assert_uint_ge(os.n_oom_events, os0.n_oom_events + 1);
    ck_assert_uint_le(peak, (1 << 20) + 64 * 1024);
  } else {
    ck_assert_int_eq(T.closed, 0);
    ck_assert_uint_eq(T.end_reason, END_STREAM_REASON_RESOURCELIMIT);
    ck_assert_uint_eq(edge_streams_ended_over_pending(), ended0 + 1);
    ck_assert_uint_eq(os.n_oom_events, os0.n_oom_events);
  }
  /* What the exit held is given back at once, not flushed later. */
  run_loop_for(50000);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), 0);
  circuits_set_max_mem_in_queues(0);
}
END_TEST

/* An exit with a resolver whose nameserver (a UDP socket of ours) never
 * answers, so that name lookups stay pending. */
static void
exit_with_silent_dns(void)
{
  T.silent_fd = socket(AF_INET, SOCK_DGRAM, 0);
  ck_assert_int_ge(T.silent_fd, 0);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(T.silent_fd, (struct sockaddr *)&sin, sizeof(sin)),
                   0);
  socklen_t sl = sizeof(sin);
  ck_assert_int_eq(getsockname(T.silent_fd, (struct sockaddr *)&sin, &sl),
                   0);
  char path[128], line[64];
  snprintf(path, sizeof(path), "%s/resolv.conf", T.r.dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  snprintf(line, sizeof(line), "nameserver 127.0.0.1:%u\n",
           (unsigned)ntohs(sin.sin_port));
  fputs(line, f);
  fclose(f);
  char *err = NULL;
  T.dns = dns_resolver_new(T.r.loop, path, &err);
  ck_assert_msg(T.dns != NULL, "resolver: %s", err ? err : "?");
  ck_assert_int_eq(dns_resolver_set_timeout(T.dns, 30000, 1), 0);
  start_exit(0);
  exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.policy = T.policy;
  cfg.dns = T.dns;
  exit_configure(&cfg);
}

/* Issue 14's stream limits at an exit: names waiting for the resolver
 * per circuit (EXIT_MAX_DNS_PER_CIRCUIT), then DoSStreamCreation* (refuse
 * the stream, then close the circuit). */
START_TEST(test_exit_stream_limits)
{
  build_circuit();
  exit_with_silent_dns();
  exit_stats_t st0, st;
  exit_get_stats(&st0);
  const int extra = 8;
  int e0 = T.n_end;
  for (int i = 0; i < EXIT_MAX_DNS_PER_CIRCUIT + extra; i++) {
    char name[64];
    int n = snprintf(name, sizeof(name), "host%d.example", i);
    client_send(RELAY_COMMAND_RESOLVE, (uint16_t)(100 + i),
                (const uint8_t *)name, (uint16_t)(n + 1));
  }
  for (int k = 0; k < 50 && T.n_end < e0 + extra; k++)
    run_loop_for(20000);
  run_loop_for(50000);
  ck_assert_int_eq(T.n_end - e0, extra);
  ck_assert_uint_eq(T.end_reason, END_STREAM_REASON_RESOURCELIMIT);
  exit_get_stats(&st);
  ck_assert_uint_eq(st.n_refused_dns_cap - st0.n_refused_dns_cap,
                    (uint64_t)extra);
  ck_assert_uint_eq(dns_resolver_n_pending(T.dns), EXIT_MAX_DNS_PER_CIRCUIT);
  /* BEGIN to an address needs no resolver: not limited by it. */
  ck_assert_int_eq(begin_exit_stream(7), 0);

  /* DoSStreamCreation: burst 2, then refused; defense 3 closes. */
  dos_init(T.r.loop);
  dos_params_t p;
  dos_params_default(&p);
  p.stream_enabled = 1;
  p.stream_burst = 2;
  p.stream_rate = 1;
  dos_set_params(&p);
  ck_assert_int_eq(begin_exit_stream(8), 0);
  ck_assert_int_eq(begin_exit_stream(9), 0);
  ck_assert_int_eq(begin_exit_stream(10), END_STREAM_REASON_RESOURCELIMIT);
  exit_get_stats(&st);
  ck_assert_uint_eq(st.n_refused_dos - st0.n_refused_dos, 1);
  p.stream_defense = DOS_STREAM_DEFENSE_CLOSE_CIRCUIT;
  dos_set_params(&p);
  char target[64];
  int n = snprintf(target, sizeof(target), "127.0.0.1:%u",
                   (unsigned)listener_addr(T.listener)->port);
  client_send(RELAY_COMMAND_BEGIN, 11, (const uint8_t *)target,
              (uint16_t)(n + 1));
  wait_int(&T.closed, 1);
  ck_assert_int_eq(T.closed, 1);
  dos_stats_t ds;
  dos_get_stats(&ds);
  ck_assert_uint_eq(ds.stream_rejected, 2);
  ck_assert_uint_eq(ds.stream_circuits_closed, 1);
}
END_TEST

/* ---- IPv6Exit and BEGIN flags ---- */

/* exit_pick_answer: tor's choice between a name's IPv4 and IPv6 addresses
 * (answers as dns_resolve() merges them: IPv4 first). */
START_TEST(test_exit_pick_answer)
{
  const char *lines[] = {"accept 127.0.0.1:*", "accept6 [::1]:*",
                         "accept 10.0.0.1:80", "reject *:*"};
  char *err = NULL;
  exit_policy_t *p = exit_policy_parse_plain(lines, 4, &err);
  ck_assert_msg(p != NULL, "policy: %s", err ? err : "?");
  dns_answer_t both[3], v4only[1], v6only[1], rej4[2];
  memset(both, 0, sizeof(both));
  ck_assert_int_eq(pc_addr_parse(&both[0].addr, "192.0.2.7:0"), 0);
  ck_assert_int_eq(pc_addr_parse(&both[1].addr, "127.0.0.1:0"), 0);
  ck_assert_int_eq(pc_addr_parse(&both[2].addr, "[::1]:0"), 0);
  v4only[0] = both[1];
  v6only[0] = both[2];
  rej4[0] = both[0]; /* an IPv4 address the policy rejects */
  rej4[1] = both[2];
  const uint32_t OK6 = RELAY_BEGIN_FLAG_IPV6_OK,
                 NO4 = RELAY_BEGIN_FLAG_IPV4_NOT_OK,
                 PREF6 = RELAY_BEGIN_FLAG_IPV6_PREFERRED;
  /* No flags: IPv4, and within it the address the policy accepts. */
  ck_assert_int_eq(exit_pick_answer(p, 1, 0, both, 3, 80), 1);
  /* IPv6 acceptable: both allowed by the policy, IPv4 preferred... */
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6, both, 3, 80), 1);
  /* ...unless IPv6 is preferred. */
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6 | PREF6, both, 3, 80), 2);
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6 | NO4, both, 3, 80), 2);
  /* Without IPv6Exit IPv6 is never acceptable. */
  ck_assert_int_eq(exit_pick_answer(p, 0, OK6 | PREF6, v4only, 1, 80), 0);
  ck_assert_int_eq(exit_pick_answer(p, 0, OK6, both, 3, 80), 1);
  /* The policy decides between two acceptable families: IPv4 rejected,
   * IPv6 accepted -> IPv6 even without a preference. */
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6, rej4, 2, 443), 1);
  /* Only one family resolved. */
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6 | PREF6, v4only, 1, 80), 0);
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6, v6only, 1, 80), 0);
  /* Nothing acceptable: the preferred family anyway (tor: IPv4 under
   * IPV4_NOT_OK when the name has no IPv6 address), or none. */
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6 | NO4, v4only, 1, 80), 0);
  ck_assert_int_eq(exit_pick_answer(p, 1, 0, v6only, 1, 80), -1);
  ck_assert_int_eq(exit_pick_answer(p, 1, OK6 | NO4 | PREF6, v4only, 1, 80),
                   -1);
  exit_policy_free(p);
}
END_TEST

/* A destination listener on [::1] (the exit tests' other one is on
 * 127.0.0.1). */
static listener_t *
v6_listener(void)
{
  pc_addr_t any6;
  ck_assert_int_eq(pc_addr_parse(&any6, "[::1]:0"), 0);
  listener_t *l = listener_new(T.r.loop, &any6, dst_accept, NULL, NULL);
  ck_assert_msg(l != NULL, "cannot listen on [::1]");
  return l;
}

/* BEGIN to TARGET with FLAGS (the four bytes after the NUL); 0 for
 * CONNECTED, else the END reason. */
static int
begin_flags(uint16_t id, const char *target, uint32_t flags)
{
  int c0 = T.n_connected, e0 = T.n_end;
  uint8_t body[128];
  size_t n = strlen(target) + 1;
  memcpy(body, target, n);
  set_u32(body + n, flags);
  client_send(RELAY_COMMAND_BEGIN, id, body, (uint16_t)(n + 4));
  for (int k = 0; k < 100 && T.n_connected == c0 && T.n_end == e0; k++)
    run_loop_for(100000);
  ck_assert_int_eq((T.n_connected - c0) + (T.n_end - e0), 1);
  return T.n_end > e0 ? T.end_reason : 0;
}

/* IPv6Exit 0 and 1 at a real exit, with IP literals: tor's refusals
 * (IPv4 refused by the flags, an IPv6 destination without IPv6Exit), the
 * IPv6 connection and its CONNECTED body (tor-spec 6.2: four zero bytes,
 * type 6, the address, the TTL). */
START_TEST(test_exit_ipv6_begin)
{
  build_circuit();
  start_exit(0);
  exit_policy_free(T.policy);
  const char *lines[] = {"accept 127.0.0.1:*", "accept6 [::1]:*",
                         "reject *:*"};
  char *err = NULL;
  T.policy = exit_policy_parse_plain(lines, 3, &err);
  ck_assert_msg(T.policy != NULL, "policy: %s", err ? err : "?");
  exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.policy = T.policy;
  exit_configure(&cfg);
  listener_t *l6 = v6_listener();
  char t4[64], t6[64];
  snprintf(t4, sizeof(t4), "127.0.0.1:%u",
           (unsigned)listener_addr(T.listener)->port);
  snprintf(t6, sizeof(t6), "[::1]:%u", (unsigned)listener_addr(l6)->port);
  exit_stats_t st0, st;
  exit_get_stats(&st0);
  /* IPv6Exit 0: the IPv6 destination is refused although the policy
   * accepts it; IPv4 refused by the flags: nothing to offer. */
  ck_assert_int_eq(begin_flags(20, t6, RELAY_BEGIN_FLAG_IPV6_OK),
                   END_STREAM_REASON_EXITPOLICY);
  ck_assert_int_eq(begin_flags(21, t4, RELAY_BEGIN_FLAG_IPV4_NOT_OK |
                                           RELAY_BEGIN_FLAG_IPV6_OK),
                   END_STREAM_REASON_EXITPOLICY);
  /* An IPv4 literal with IPv6 preferred: used as given. */
  ck_assert_int_eq(begin_flags(22, t4, RELAY_BEGIN_FLAG_IPV6_OK |
                                           RELAY_BEGIN_FLAG_IPV6_PREFERRED),
                   0);
  ck_assert_uint_eq(T.connected_len, 8);
  exit_get_stats(&st);
  ck_assert_uint_eq(st.n_refused_policy - st0.n_refused_policy, 2);
  /* IPv6Exit 1: the IPv6 destination is reached; as tor, an IP literal is
   * used whatever the flags say (none here). */
  cfg.ipv6_exit = 1;
  exit_configure(&cfg);
  ck_assert_int_eq(begin_flags(23, t6, 0), 0);
  ck_assert_uint_eq(T.connected_len, 25);
  static const uint8_t zero4[4];
  ck_assert(!memcmp(T.connected_body, zero4, 4));
  ck_assert_uint_eq(T.connected_body[4], 6);
  pc_addr_t loop6;
  ck_assert_int_eq(pc_addr_parse(&loop6, "[::1]:0"), 0);
  ck_assert(!memcmp(T.connected_body + 5, loop6.addr, 16));
  ck_assert_uint_gt(get_u32(T.connected_body + 21), 0);
  /* IPv4 refused by the flags is fine now that IPv6 can be offered. */
  ck_assert_int_eq(begin_flags(24, t6, RELAY_BEGIN_FLAG_IPV4_NOT_OK |
                                           RELAY_BEGIN_FLAG_IPV6_OK),
                   0);
  /* The policy still decides: another IPv6 address is rejected. */
  ck_assert_int_eq(begin_flags(25, "[2001:db8::1]:80",
                               RELAY_BEGIN_FLAG_IPV6_OK),
                   END_STREAM_REASON_EXITPOLICY);
  for (int k = 0; k < 20 && T.n_more_dst + (T.dst != NULL) < 3; k++)
    run_loop_for(50000);
  ck_assert_int_eq(T.n_more_dst + (T.dst != NULL), 3);
  ck_assert_int_eq(T.closed, 0);
  listener_free(l6);
}
END_TEST

Suite *
suite_stream(void)
{
  Suite *s = suite_create("stream");
  TCase *tr = tcase_create("half_records");
  tcase_add_test(tr, test_half_records);
  tcase_add_test(tr, test_exit_pick_answer);
  suite_add_tcase(s, tr);
  TCase *tc = tcase_create("half_closed");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_half_closed_cells_accepted);
  tcase_add_test(tc, test_half_closed_data_counts_in_circuit_window);
  tcase_add_test(tc, test_begin_reuses_half_closed_id);
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("exit");
  tcase_add_checked_fixture(te, setup, teardown);
  tcase_set_timeout(te, 60);
  tcase_add_test(te, test_exit_end_delivers_pending_data);
  tcase_add_test(te, test_exit_buffered_bytes_counted);
  tcase_add_test(te, test_exit_refuse_unknown);
  tcase_add_loop_test(te, test_exit_xoff_ignored_flood_bounded, 0, 2);
  tcase_add_test(te, test_exit_stream_limits);
  tcase_add_test(te, test_exit_ipv6_begin);
  suite_add_tcase(s, te);
  return s;
}
