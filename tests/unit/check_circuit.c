/* SPDX-License-Identifier: BSD-3-Clause */
/* check_circuit.c -- the spine in one process: a relay (channels, link
 * handshake, CREATE handling, relay crypto, EXTEND2/TRUNCATE handling) and
 * an origin circuit built to it over real TCP+TLS on 127.0.0.1.
 *
 * The origin side connects to our own ORPort as an authenticating relay,
 * so both halves of the link handshake (responder and initiator with
 * AUTHENTICATE) run against each other. Each test drives the event loop
 * until an expected callback or a timeout, and checks what came back and
 * that circuits and queued cells are freed afterwards.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/command.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "feature/dircache/dircache.h"
#include "feature/exit/exit_conn.h"
#include "lib/net/conn.h"
#include "lib/bytes/bytes.h"
#include "core/proto/create.h"
#include "feature/relay/extend.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"

Suite *suite_circuit(void);

static struct {
  fixture_relay_t r; /* dir, keys, loop, timeout, orport */
  /* what the callbacks saw */
  int n_open;
  int closed;
  int close_reason;
  int relay_seen;
  uint8_t relay_cmd;
  uint8_t relay_body0;
  /* directory download */
  origin_circuit_t *dl_circ;
  uint8_t *dl;
  size_t dl_len;
  int dl_cells;
  int dl_ended;
  uint8_t dl_end_reason;
  int dl_connected;
  int dl_send_sendmes;
} T;

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  fixture_relay_start(&T.r, "circuit", "CHECK_CIRCUIT_VERBOSE", "info");
  extend_init(1);
}

static void
teardown(void)
{
  fixture_relay_shutdown();
  fixture_assert_no_circuits();
  ck_assert_uint_eq(packed_cells_allocated(), 0);
  fixture_relay_free(&T.r);
}

/* Run the loop until a callback calls evloop_exit() or usec pass; returns
 * whether it timed out. */
static int
run_loop_for(uint64_t usec)
{
  return fixture_relay_run_for(&T.r, usec);
}

static void
run_loop(void)
{
  ck_assert_msg(!run_loop_for(10 * 1000000ULL),
                "timed out waiting for the circuit");
}

static void
cb_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  (void)arg;
  T.n_open = n;
  evloop_exit(T.r.loop);
}

static void
cb_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  (void)hop;
  (void)arg;
  if (T.dl_circ && stream_id == 9) {
    if (cmd == RELAY_COMMAND_CONNECTED) {
      T.dl_connected = 1;
      const char *req = "GET /test/doc HTTP/1.0\r\n\r\n";
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_DATA, 9,
                                (const uint8_t *)req, (uint16_t)strlen(req));
    } else if (cmd == RELAY_COMMAND_DATA) {
      T.dl = realloc(T.dl, T.dl_len + len);
      memcpy(T.dl + T.dl_len, body, len);
      T.dl_len += len;
      T.dl_cells++;
      if (T.dl_send_sendmes && T.dl_cells % CIRCWINDOW_INCREMENT == 0) {
        /* Authenticated circuit SENDME: digest of this cell. */
        uint8_t sm[23];
        sm[0] = 1;
        set_u16(sm + 1, 20);
        memcpy(sm + 3,
               relay_crypto_last_digest(c->hops[0].crypto,
                                        RELAY_DIR_BACKWARD),
               20);
        origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 0, sm, 23);
      }
      if (T.dl_send_sendmes && T.dl_cells % STREAMWINDOW_INCREMENT == 0)
        origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 9, NULL, 0);
    } else if (cmd == RELAY_COMMAND_END) {
      T.dl_ended = 1;
      T.dl_end_reason = len ? body[0] : 0;
      evloop_exit(T.r.loop);
    }
    return;
  }
  (void)c;
  (void)stream_id;
  T.relay_seen++;
  T.relay_cmd = cmd;
  T.relay_body0 = len ? body[0] : 0xff;
  evloop_exit(T.r.loop);
}

static void
cb_closed(origin_circuit_t *c, int reason, const char *why, void *arg)
{
  (void)c;
  (void)why;
  (void)arg;
  T.closed = 1;
  T.close_reason = reason;
  evloop_exit(T.r.loop);
}

static const origin_circuit_ops_t ops = {cb_extended, cb_relay, cb_closed};

static extend_target_t
self_target(uint16_t handshake)
{
  return fixture_relay_target(&T.r, handshake);
}

/* Build a one-hop circuit to ourselves with the given handshake. */
static origin_circuit_t *
build_one_hop(uint16_t handshake)
{
  extend_target_t t = self_target(handshake);
  origin_circuit_t *c = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(c);
  run_loop();
  ck_assert_msg(T.closed == 0, "circuit closed while building (reason %d)",
                T.close_reason);
  ck_assert_int_eq(T.n_open, 1);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 1);
  return c;
}

/* BEGIN_DIR through the circuit: the relay has no directory service yet
 * and answers RELAY_END NOTDIRECTORY, which proves that relay cells go
 * through the crypto layer in both directions. */
static void
check_begin_dir_end(origin_circuit_t *c, unsigned want_reason)
{
  T.relay_seen = 0;
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR,
                                             7, NULL, 0),
                   0);
  run_loop();
  ck_assert_int_eq(T.relay_seen, 1);
  ck_assert_uint_eq(T.relay_cmd, RELAY_COMMAND_END);
  ck_assert_uint_eq(T.relay_body0, want_reason);
}

static void
check_round_trip(origin_circuit_t *c)
{
  check_begin_dir_end(c, END_REASON_NOTDIRECTORY);
}

static void
handshake_test(uint16_t handshake)
{
  origin_circuit_t *c = build_one_hop(handshake);
  check_round_trip(c);
  /* Closing the origin sends DESTROY; the relay frees its circuit. */
  circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  T.closed = 0;
  for (int i = 0; i < 50 && circuits_count(CIRC_KIND_OR); i++) {
    evloop_timer_schedule(T.r.timeout, 20000);
    evloop_run(T.r.loop);
  }
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
}

START_TEST(test_one_hop_ntor)
{
  handshake_test(HTYPE_NTOR);
}
END_TEST

START_TEST(test_one_hop_ntor3)
{
  handshake_test(HTYPE_NTOR_V3);
}
END_TEST

START_TEST(test_one_hop_fast)
{
  handshake_test(CIRC_HTYPE_FAST);
}
END_TEST

/* The gates feature/hibernate closes while hibernating (as tor): BEGIN_DIR
 * on an open circuit gets END HIBERNATING, a new CREATE is refused with a
 * DESTROY; without the begin gate BEGIN_DIR reaches its handler again. */
static int gate_begin(void) { return END_REASON_HIBERNATING; }
static int gate_create(void) { return DESTROY_REASON_HIBERNATING; }

START_TEST(test_hibernation_gates)
{
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  relay_set_begin_gate(gate_begin);
  check_begin_dir_end(c, END_REASON_HIBERNATING);
  relay_set_begin_gate(NULL);
  check_round_trip(c); /* NOTDIRECTORY again: the handler answers */

  command_stats_t before, after;
  command_get_stats(&before);
  command_set_create_gate(gate_create);
  extend_target_t t = self_target(HTYPE_NTOR);
  T.closed = 0;
  T.n_open = 0;
  origin_circuit_t *c2 = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(c2);
  run_loop();
  ck_assert_int_eq(T.closed, 1);
  /* (an origin reports any DESTROY it receives as DESTROYED) */
  ck_assert_int_eq(T.close_reason, DESTROY_REASON_DESTROYED);
  command_get_stats(&after);
  ck_assert_uint_eq(after.n_create_refused, before.n_create_refused + 1);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 1); /* only c's */
  command_set_create_gate(NULL);
}
END_TEST

START_TEST(test_extend_to_self_refused)
{
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  extend_target_t t = self_target(HTYPE_NTOR);
  ck_assert_int_eq(origin_circuit_extend(c, &t), 0);
  run_loop();
  ck_assert_int_eq(T.closed, 1);
  ck_assert_int_eq(T.close_reason, DESTROY_REASON_DESTROYED);
}
END_TEST

START_TEST(test_wrong_ntor_key_refused)
{
  extend_target_t t = self_target(HTYPE_NTOR);
  t.ntor_key[0] ^= 1;
  origin_circuit_t *c = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(c);
  run_loop();
  ck_assert_int_eq(T.closed, 1);
  ck_assert_int_eq(T.n_open, 0);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
}
END_TEST

START_TEST(test_wrong_identity_refused)
{
  /* The link handshake must notice that the relay is not who we asked
   * for, and the circuit fails with CONNECTFAILED. */
  extend_target_t t = self_target(HTYPE_NTOR);
  t.rsa_id[3] ^= 0x40;
  origin_circuit_t *c = origin_circuit_launch(&t, &ops, NULL);
  ck_assert_ptr_nonnull(c);
  run_loop();
  ck_assert_int_eq(T.closed, 1);
  ck_assert_int_eq(T.close_reason, DESTROY_REASON_CONNECTFAILED);
}
END_TEST

START_TEST(test_truncate)
{
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  ck_assert_int_eq(
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_TRUNCATE, 0, NULL, 0), 0);
  /* The relay answers TRUNCATED (the circuit had no next hop); the origin
   * then closes the circuit. */
  run_loop();
  ck_assert_int_eq(T.closed, 1);
}
END_TEST

START_TEST(test_drop_and_unknown_commands_ignored)
{
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR_V3);
  uint8_t junk[40];
  memset(junk, 0x5a, sizeof(junk));
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_DROP, 0,
                                             junk, sizeof(junk)),
                   0);
  /* An unassigned relay command (as MeasureMe will use) must not close
   * the circuit. */
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, 200, 0, junk, 3), 0);
  check_round_trip(c);
  ck_assert_int_eq(T.closed, 0);
}
END_TEST

#define DOC_LEN (700 * 1000) /* > 1000 cells: needs circuit SENDMEs */

static dircache_doc_t *
doc_provider(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  uint8_t *b = malloc(DOC_LEN);
  for (size_t i = 0; i < DOC_LEN; i++)
    b[i] = (uint8_t)(i * 7 + (i >> 8));
  return dircache_doc_new(b, DOC_LEN, 0);
}

static void
download(int send_sendmes)
{
  dircache_init(channels_loop());
  dircache_register("/test/doc", doc_provider, NULL);
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  T.dl_circ = c;
  T.dl_send_sendmes = send_sendmes;
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR,
                                             9, NULL, 0),
                   0);
  run_loop_for(send_sendmes ? 10000000 : 1500000);
  dircache_shutdown();
}

START_TEST(test_begin_dir_large_document)
{
  download(1);
  ck_assert_int_eq(T.dl_connected, 1);
  ck_assert_int_eq(T.dl_ended, 1);
  ck_assert_uint_eq(T.dl_end_reason, END_STREAM_REASON_DONE);
  const char *hdr = "HTTP/1.0 200 OK\r\n";
  ck_assert(T.dl_len > DOC_LEN);
  ck_assert(!memcmp(T.dl, hdr, strlen(hdr)));
  uint8_t *body = memmem(T.dl, T.dl_len, "\r\n\r\n", 4);
  ck_assert_ptr_nonnull(body);
  body += 4;
  ck_assert_uint_eq((size_t)(T.dl + T.dl_len - body), DOC_LEN);
  for (size_t i = 0; i < DOC_LEN; i++)
    if (body[i] != (uint8_t)(i * 7 + (i >> 8)))
      ck_abort_msg("document differs at byte %zu", i);
  free(T.dl);
}
END_TEST

START_TEST(test_begin_dir_respects_windows)
{
  /* Without SENDMEs the relay must stop after the stream window of 500
   * DATA cells and wait. */
  download(0);
  ck_assert_int_eq(T.dl_connected, 1);
  ck_assert_int_eq(T.dl_ended, 0);
  ck_assert_int_eq(T.dl_cells, STREAMWINDOW_START);
  free(T.dl);
}
END_TEST

START_TEST(test_sendme_wrong_digest_closes)
{
  download(0); /* 500 cells received: the relay expects SENDMEs now */
  ck_assert_int_eq(T.dl_cells, STREAMWINDOW_START);
  uint8_t sm[23];
  sm[0] = 1;
  set_u16(sm + 1, 20);
  memset(sm + 3, 0xab, 20);
  T.closed = 0;
  ck_assert_int_eq(origin_circuit_send_relay(T.dl_circ, 0,
                                             RELAY_COMMAND_SENDME, 0, sm, 23),
                   0);
  run_loop();
  ck_assert_int_eq(T.closed, 1);
  free(T.dl);
}
END_TEST

START_TEST(test_begin_dir_not_found)
{
  dircache_init(channels_loop());
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  T.dl_circ = c;
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR, 9, NULL, 0);
  run_loop();
  ck_assert_int_eq(T.dl_ended, 1);
  ck_assert(T.dl_len > 12 && !memcmp(T.dl, "HTTP/1.0 404", 12));
  free(T.dl);
  dircache_shutdown();
}
END_TEST

START_TEST(test_idle_channels_closed)
{
  channels_set_idle_timeouts(1, 1);
  origin_circuit_t *c = build_one_hop(HTYPE_NTOR);
  channel_stats_t st;
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 2); /* our outgoing end and the incoming one */
  /* While a circuit uses them, they stay open past the timeout. */
  run_loop_for(1500000);
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 2);
  circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  for (int i = 0; i < 40 && st.n_open; i++) {
    run_loop_for(100000);
    channels_get_stats(&st);
  }
  ck_assert_uint_eq(st.n_open, 0);
}
END_TEST

START_TEST(test_silent_peer_times_out)
{
  /* A TCP connection that never starts TLS is closed after the handshake
   * timeout, so silent peers cannot hold descriptors. */
  channels_set_handshake_timeout(1);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_storage ss;
  socklen_t sl;
  ck_assert_int_eq(pc_addr_to_sockaddr(&T.r.orport, &ss, &sl), 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&ss, sl), 0);
  channel_stats_t st;
  for (int i = 0; i < 5; i++) {
    run_loop_for(100000);
    channels_get_stats(&st);
    if (st.n_handshaking)
      break;
  }
  ck_assert_uint_eq(st.n_handshaking, 1);
  for (int i = 0; i < 30 && st.n_handshaking; i++) {
    run_loop_for(100000);
    channels_get_stats(&st);
  }
  ck_assert_uint_eq(st.n_handshaking, 0);
  char c;
  ck_assert_int_le(recv(fd, &c, 1, 0), 0); /* closed by the relay */
  close(fd);
}
END_TEST

/* ---- exit streams ------------------------------------------------ */

/* An echo server on 127.0.0.1 made of lib/net conns. */
static listener_t *echo_listener;
static conn_t *echo_conn;

static void
echo_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)arg;
  if (ev == CONN_EV_DATA) {
    buf_move_all(conn_outbuf(c), conn_inbuf(c));
    conn_flush_soon(c);
  } else if (ev == CONN_EV_EOF || ev == CONN_EV_ERROR) {
    conn_close(c, 1);
    echo_conn = NULL;
  }
}

static void
echo_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  echo_conn = conn_new_accepted(T.r.loop, NULL, fd, peer, echo_cb, NULL);
}

#define ECHO_LEN (120 * 1000)
static uint8_t echo_data[ECHO_LEN];

static struct {
  int connected, ended, end_reason;
  size_t got;
  int cells;
  int mismatch;
} E;

static void
exit_relay_cb(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t sid,
              const uint8_t *body, uint16_t len, void *arg)
{
  (void)hop;
  (void)arg;
  if (sid != 5)
    return;
  if (cmd == RELAY_COMMAND_CONNECTED) {
    E.connected = 1;
    for (size_t off = 0; off < ECHO_LEN; off += RELAY_BODY_MAX) {
      size_t n = ECHO_LEN - off < RELAY_BODY_MAX ? ECHO_LEN - off
                                                   : RELAY_BODY_MAX;
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_DATA, 5,
                                echo_data + off, (uint16_t)n);
    }
  } else if (cmd == RELAY_COMMAND_DATA) {
    if (memcmp(body, echo_data + E.got, len))
      E.mismatch = 1;
    E.got += len;
    E.cells++;
    if (E.cells % STREAMWINDOW_INCREMENT == 0)
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 5, NULL, 0);
    if (E.cells % CIRCWINDOW_INCREMENT == 0) {
      uint8_t sm[23];
      sm[0] = 1;
      set_u16(sm + 1, 20);
      memcpy(sm + 3,
             relay_crypto_last_digest(c->hops[0].crypto, RELAY_DIR_BACKWARD),
             20);
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 0, sm, 23);
    }
    if (E.got == ECHO_LEN)
      evloop_exit(T.r.loop);
  } else if (cmd == RELAY_COMMAND_END) {
    E.ended = 1;
    E.end_reason = len ? body[0] : -1;
    evloop_exit(T.r.loop);
  }
}

static const origin_circuit_ops_t exit_circ_ops = {cb_extended, exit_relay_cb,
                                                   cb_closed};
static exit_policy_t *test_policy;

static void
exit_setup(void)
{
  setup();
  memset(&E, 0, sizeof(E));
  for (size_t i = 0; i < ECHO_LEN; i++)
    echo_data[i] = (uint8_t)(i * 13 + (i >> 9));
  pc_addr_t a;
  pc_addr_parse(&a, "127.0.0.1:0");
  const char *err = NULL;
  echo_listener = listener_new(T.r.loop, &a, echo_accept, NULL, &err);
  ck_assert_ptr_nonnull(echo_listener);
  char line[64];
  snprintf(line, sizeof(line), "accept 127.0.0.1:%u",
           listener_addr(echo_listener)->port);
  const char *lines[] = {line, "reject *:*"};
  char *perr = NULL;
  test_policy = exit_policy_parse_plain(lines, 2, &perr);
  ck_assert_msg(test_policy != NULL, "policy: %s", perr ? perr : "?");
  exit_config_t cfg = {test_policy, NULL, 1, 5, 0};
  exit_init(T.r.loop, &cfg);
}

static void
exit_teardown(void)
{
  exit_shutdown();
  if (echo_conn)
    conn_free(echo_conn);
  listener_free(echo_listener);
  teardown();
  exit_policy_free(test_policy);
}

static origin_circuit_t *
begin_to(const char *addrport)
{
  extend_target_t t = self_target(HTYPE_NTOR);
  origin_circuit_t *c = origin_circuit_launch(&t, &exit_circ_ops, NULL);
  run_loop();
  ck_assert_int_eq(T.n_open, 1);
  ck_assert_int_eq(origin_circuit_send_relay(
                       c, 0, RELAY_COMMAND_BEGIN, 5,
                       (const uint8_t *)addrport, (uint16_t)strlen(addrport) + 1),
                   0);
  return c;
}

START_TEST(test_exit_echo)
{
  char ap[64];
  snprintf(ap, sizeof(ap), "127.0.0.1:%u", listener_addr(echo_listener)->port);
  origin_circuit_t *c = begin_to(ap);
  run_loop();
  ck_assert_int_eq(E.connected, 1);
  ck_assert_int_eq(E.ended, 0);
  ck_assert_uint_eq(E.got, ECHO_LEN);
  ck_assert_int_eq(E.mismatch, 0);
  exit_stats_t st;
  exit_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 1);
  /* The client ends the stream: the exit closes its connection. */
  uint8_t done = END_STREAM_REASON_DONE;
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_END, 5, &done, 1);
  for (int i = 0; i < 20; i++) {
    run_loop_for(50000);
    exit_get_stats(&st);
    if (!st.n_open)
      break;
  }
  ck_assert_uint_eq(st.n_open, 0);
}
END_TEST

START_TEST(test_exit_policy_reject)
{
  begin_to("127.0.0.2:80");
  run_loop();
  ck_assert_int_eq(E.ended, 1);
  ck_assert_int_eq(E.end_reason, END_STREAM_REASON_EXITPOLICY);
}
END_TEST

START_TEST(test_exit_connect_refused)
{
  /* Accepted by the policy, but nothing listens there any more. */
  char ap[64];
  uint16_t port = listener_addr(echo_listener)->port;
  listener_free(echo_listener);
  snprintf(ap, sizeof(ap), "127.0.0.1:%u", port);
  begin_to(ap);
  run_loop();
  ck_assert_int_eq(E.ended, 1);
  ck_assert_int_eq(E.end_reason, END_STREAM_REASON_CONNECTREFUSED);
}
END_TEST

START_TEST(test_exit_bad_address)
{
  begin_to("no-port-here");
  run_loop();
  ck_assert_int_eq(E.ended, 1);
  ck_assert_int_eq(E.end_reason, END_STREAM_REASON_TORPROTOCOL);
}
END_TEST

Suite *
suite_circuit(void)
{
  Suite *s = suite_create("circuit");
  TCase *tc = tcase_create("loopback");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_one_hop_ntor);
  tcase_add_test(tc, test_one_hop_ntor3);
  tcase_add_test(tc, test_one_hop_fast);
  tcase_add_test(tc, test_extend_to_self_refused);
  tcase_add_test(tc, test_hibernation_gates);
  tcase_add_test(tc, test_wrong_ntor_key_refused);
  tcase_add_test(tc, test_wrong_identity_refused);
  tcase_add_test(tc, test_truncate);
  tcase_add_test(tc, test_drop_and_unknown_commands_ignored);
  tcase_add_test(tc, test_begin_dir_large_document);
  tcase_add_test(tc, test_begin_dir_respects_windows);
  tcase_add_test(tc, test_begin_dir_not_found);
  tcase_add_test(tc, test_sendme_wrong_digest_closes);
  tcase_add_test(tc, test_idle_channels_closed);
  tcase_add_test(tc, test_silent_peer_times_out);
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("exit");
  tcase_add_checked_fixture(te, exit_setup, exit_teardown);
  tcase_set_timeout(te, 60);
  tcase_add_test(te, test_exit_echo);
  tcase_add_test(te, test_exit_policy_reject);
  tcase_add_test(te, test_exit_connect_refused);
  tcase_add_test(te, test_exit_bad_address);
  suite_add_tcase(s, te);
  return s;
}
