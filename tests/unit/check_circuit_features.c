/* SPDX-License-Identifier: BSD-3-Clause */
/* check_circuit_features.c -- check_circuit's loopback relay and origin
 * circuits (fixture_circuit.h) with feature handlers registered: EXTEND2
 * (feature/relay) refusing an extension to the relay itself, BEGIN_DIR
 * answered by the directory cache (a document larger than the circuit
 * window, the stream window without SENDMEs, a SENDME with a wrong digest,
 * a missing document) and BEGIN answered by the exit (an echo server on
 * 127.0.0.1 through its policy, a refusal by policy, a refused connection,
 * a malformed address).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_circuit.h"

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/create.h"
#include "feature/dircache/dircache.h"
#include "feature/exit/exit_conn.h"
#include "feature/relay/extend.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"
#include "lib/net/conn.h"

Suite *suite_circuit_features(void);

static void
setup(void)
{
  fixture_circuit_setup();
  extend_init(1);
}

START_TEST(test_extend_to_self_refused)
{
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  extend_target_t t = fixture_relay_target(&FC.r, HTYPE_NTOR);
  ck_assert_int_eq(origin_circuit_extend(c, &t), 0);
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
  ck_assert_int_eq(FC.close_reason, DESTROY_REASON_DESTROYED);
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
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  FC.dl_circ = c;
  FC.dl_send_sendmes = send_sendmes;
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR,
                                             9, NULL, 0),
                   0);
  fixture_circuit_run_for(send_sendmes ? 10000000 : 1500000);
  dircache_shutdown();
}

START_TEST(test_begin_dir_large_document)
{
  download(1);
  ck_assert_int_eq(FC.dl_connected, 1);
  ck_assert_int_eq(FC.dl_ended, 1);
  ck_assert_uint_eq(FC.dl_end_reason, END_STREAM_REASON_DONE);
  const char *hdr = "HTTP/1.0 200 OK\r\n";
  ck_assert(FC.dl_len > DOC_LEN);
  ck_assert(!memcmp(FC.dl, hdr, strlen(hdr)));
  uint8_t *body = memmem(FC.dl, FC.dl_len, "\r\n\r\n", 4);
  ck_assert_ptr_nonnull(body);
  body += 4;
  ck_assert_uint_eq((size_t)(FC.dl + FC.dl_len - body), DOC_LEN);
  for (size_t i = 0; i < DOC_LEN; i++)
    if (body[i] != (uint8_t)(i * 7 + (i >> 8)))
      ck_abort_msg("document differs at byte %zu", i);
  free(FC.dl);
}
END_TEST

START_TEST(test_begin_dir_respects_windows)
{
  /* Without SENDMEs the relay must stop after the stream window of 500
   * DATA cells and wait. */
  download(0);
  ck_assert_int_eq(FC.dl_connected, 1);
  ck_assert_int_eq(FC.dl_ended, 0);
  ck_assert_int_eq(FC.dl_cells, STREAMWINDOW_START);
  free(FC.dl);
}
END_TEST

START_TEST(test_sendme_wrong_digest_closes)
{
  download(0); /* 500 cells received: the relay expects SENDMEs now */
  ck_assert_int_eq(FC.dl_cells, STREAMWINDOW_START);
  uint8_t sm[23];
  sm[0] = 1;
  set_u16(sm + 1, 20);
  memset(sm + 3, 0xab, 20);
  FC.closed = 0;
  ck_assert_int_eq(origin_circuit_send_relay(FC.dl_circ, 0,
                                             RELAY_COMMAND_SENDME, 0, sm, 23),
                   0);
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
  free(FC.dl);
}
END_TEST

START_TEST(test_begin_dir_not_found)
{
  dircache_init(channels_loop());
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  FC.dl_circ = c;
  origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR, 9, NULL, 0);
  fixture_circuit_run();
  ck_assert_int_eq(FC.dl_ended, 1);
  ck_assert(FC.dl_len > 12 && !memcmp(FC.dl, "HTTP/1.0 404", 12));
  free(FC.dl);
  dircache_shutdown();
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
  echo_conn = conn_new_accepted(FC.r.loop, NULL, fd, peer, echo_cb, NULL);
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
      evloop_exit(FC.r.loop);
  } else if (cmd == RELAY_COMMAND_END) {
    E.ended = 1;
    E.end_reason = len ? body[0] : -1;
    evloop_exit(FC.r.loop);
  }
}

static const origin_circuit_ops_t exit_circ_ops = {
  fixture_circuit_extended, exit_relay_cb, fixture_circuit_closed};
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
  echo_listener = listener_new(FC.r.loop, &a, echo_accept, NULL, &err);
  ck_assert_ptr_nonnull(echo_listener);
  char line[64];
  snprintf(line, sizeof(line), "accept 127.0.0.1:%u",
           listener_addr(echo_listener)->port);
  const char *lines[] = {line, "reject *:*"};
  char *perr = NULL;
  test_policy = exit_policy_parse_plain(lines, 2, &perr);
  ck_assert_msg(test_policy != NULL, "policy: %s", perr ? perr : "?");
  exit_config_t cfg = {test_policy, NULL, 1, 5, 0};
  exit_init(FC.r.loop, &cfg);
}

static void
exit_teardown(void)
{
  exit_shutdown();
  if (echo_conn)
    conn_free(echo_conn);
  listener_free(echo_listener);
  fixture_circuit_teardown();
  exit_policy_free(test_policy);
}

static origin_circuit_t *
begin_to(const char *addrport)
{
  extend_target_t t = fixture_relay_target(&FC.r, HTYPE_NTOR);
  origin_circuit_t *c = origin_circuit_launch(&t, &exit_circ_ops, NULL);
  fixture_circuit_run();
  ck_assert_int_eq(FC.n_open, 1);
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
  fixture_circuit_run();
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
    fixture_circuit_run_for(50000);
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
  fixture_circuit_run();
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
  fixture_circuit_run();
  ck_assert_int_eq(E.ended, 1);
  ck_assert_int_eq(E.end_reason, END_STREAM_REASON_CONNECTREFUSED);
}
END_TEST

START_TEST(test_exit_bad_address)
{
  begin_to("no-port-here");
  fixture_circuit_run();
  ck_assert_int_eq(E.ended, 1);
  ck_assert_int_eq(E.end_reason, END_STREAM_REASON_TORPROTOCOL);
}
END_TEST

Suite *
suite_circuit_features(void)
{
  Suite *s = suite_create("circuit_features");
  TCase *tc = tcase_create("loopback");
  tcase_add_checked_fixture(tc, setup, fixture_circuit_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_extend_to_self_refused);
  tcase_add_test(tc, test_begin_dir_large_document);
  tcase_add_test(tc, test_begin_dir_respects_windows);
  tcase_add_test(tc, test_begin_dir_not_found);
  tcase_add_test(tc, test_sendme_wrong_digest_closes);
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
