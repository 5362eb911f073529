/* SPDX-License-Identifier: BSD-3-Clause */
/* check_circuit.c -- the spine in one process: a relay (channels, link
 * handshake, CREATE handling, relay crypto, TRUNCATE) and an origin
 * circuit built to it over real TCP+TLS on 127.0.0.1, with core alone
 * (tests/unit/check_core; fixture_circuit.h, keys made in memory).
 *
 * The origin side connects to our own ORPort as an authenticating relay,
 * so both halves of the link handshake (responder and initiator with
 * AUTHENTICATE) run against each other. Each test drives the event loop
 * until an expected callback or a timeout, and checks what came back and
 * that circuits and queued cells are freed afterwards. The same circuits
 * with the directory cache, the exit and EXTEND2 registered are tested in
 * check_circuit_features.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "fixture_circuit.h"

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/command.h"
#include "core/or/relay.h"
#include "core/proto/create.h"
#include "lib/evloop/evloop.h"

Suite *suite_circuit(void);

static void
check_round_trip(origin_circuit_t *c)
{
  fixture_circuit_begin_dir_end(c, END_REASON_NOTDIRECTORY);
}

static void
handshake_test(uint16_t handshake)
{
  origin_circuit_t *c = fixture_circuit_one_hop(handshake);
  check_round_trip(c);
  /* Closing the origin sends DESTROY; the relay frees its circuit. */
  circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  FC.closed = 0;
  for (int i = 0; i < 50 && circuits_count(CIRC_KIND_OR); i++) {
    evloop_timer_schedule(FC.r.timeout, 20000);
    evloop_run(FC.r.loop);
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
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  relay_set_begin_gate(gate_begin);
  fixture_circuit_begin_dir_end(c, END_REASON_HIBERNATING);
  relay_set_begin_gate(NULL);
  check_round_trip(c); /* NOTDIRECTORY again: the handler answers */

  command_stats_t before, after;
  command_get_stats(&before);
  command_set_create_gate(gate_create);
  extend_target_t t = fixture_relay_target(&FC.r, HTYPE_NTOR);
  FC.closed = 0;
  FC.n_open = 0;
  origin_circuit_t *c2 = origin_circuit_launch(&t, &fixture_circuit_ops, NULL);
  ck_assert_ptr_nonnull(c2);
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
  /* (an origin reports any DESTROY it receives as DESTROYED) */
  ck_assert_int_eq(FC.close_reason, DESTROY_REASON_DESTROYED);
  command_get_stats(&after);
  ck_assert_uint_eq(after.n_create_refused, before.n_create_refused + 1);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 1); /* only c's */
  command_set_create_gate(NULL);
}
END_TEST

START_TEST(test_wrong_ntor_key_refused)
{
  extend_target_t t = fixture_relay_target(&FC.r, HTYPE_NTOR);
  t.ntor_key[0] ^= 1;
  origin_circuit_t *c = origin_circuit_launch(&t, &fixture_circuit_ops, NULL);
  ck_assert_ptr_nonnull(c);
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
  ck_assert_int_eq(FC.n_open, 0);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
}
END_TEST

START_TEST(test_wrong_identity_refused)
{
  /* The link handshake must notice that the relay is not who we asked
   * for, and the circuit fails with CONNECTFAILED. */
  extend_target_t t = fixture_relay_target(&FC.r, HTYPE_NTOR);
  t.rsa_id[3] ^= 0x40;
  origin_circuit_t *c = origin_circuit_launch(&t, &fixture_circuit_ops, NULL);
  ck_assert_ptr_nonnull(c);
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
  ck_assert_int_eq(FC.close_reason, DESTROY_REASON_CONNECTFAILED);
}
END_TEST

START_TEST(test_truncate)
{
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  ck_assert_int_eq(
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_TRUNCATE, 0, NULL, 0), 0);
  /* The relay answers TRUNCATED (the circuit had no next hop); the origin
   * then closes the circuit. */
  fixture_circuit_run();
  ck_assert_int_eq(FC.closed, 1);
}
END_TEST

START_TEST(test_drop_and_unknown_commands_ignored)
{
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR_V3);
  uint8_t junk[40];
  memset(junk, 0x5a, sizeof(junk));
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_DROP, 0,
                                             junk, sizeof(junk)),
                   0);
  /* An unassigned relay command (as MeasureMe will use) must not close
   * the circuit. */
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, 200, 0, junk, 3), 0);
  check_round_trip(c);
  ck_assert_int_eq(FC.closed, 0);
}
END_TEST

START_TEST(test_idle_channels_closed)
{
  channels_set_idle_timeouts(1, 1);
  origin_circuit_t *c = fixture_circuit_one_hop(HTYPE_NTOR);
  channel_stats_t st;
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 2); /* our outgoing end and the incoming one */
  /* While a circuit uses them, they stay open past the timeout. */
  fixture_circuit_run_for(1500000);
  channels_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 2);
  circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  for (int i = 0; i < 40 && st.n_open; i++) {
    fixture_circuit_run_for(100000);
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
  ck_assert_int_eq(pc_addr_to_sockaddr(&FC.r.orport, &ss, &sl), 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&ss, sl), 0);
  channel_stats_t st;
  for (int i = 0; i < 5; i++) {
    fixture_circuit_run_for(100000);
    channels_get_stats(&st);
    if (st.n_handshaking)
      break;
  }
  ck_assert_uint_eq(st.n_handshaking, 1);
  for (int i = 0; i < 30 && st.n_handshaking; i++) {
    fixture_circuit_run_for(100000);
    channels_get_stats(&st);
  }
  ck_assert_uint_eq(st.n_handshaking, 0);
  char c;
  ck_assert_int_le(recv(fd, &c, 1, 0), 0); /* closed by the relay */
  close(fd);
}
END_TEST

static int
handler_a(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
          int early)
{
  (void)circ, (void)h, (void)body, (void)early;
  return 0;
}
static int
handler_b(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
          int early)
{
  (void)circ, (void)h, (void)body, (void)early;
  return 0;
}

/* One handler per relay command: the same one again is fine, a different
 * one is refused while one is registered; NULL removes it. */
START_TEST(test_one_handler_per_relay_command)
{
  const uint8_t cmd = 200; /* no feature handles it */
  ck_assert_int_eq(relay_register_handler(cmd, handler_a), 0);
  ck_assert_int_eq(relay_register_handler(cmd, handler_a), 0);
  ck_assert_int_eq(relay_register_handler(cmd, handler_b), -1);
  ck_assert_int_eq(relay_register_handler(cmd, NULL), 0);
  ck_assert_int_eq(relay_register_handler(cmd, handler_b), 0);
  ck_assert_int_eq(relay_register_handler(cmd + 1, handler_a), 0);
  ck_assert_int_eq(relay_register_handler(cmd, NULL), 0);
  ck_assert_int_eq(relay_register_handler(cmd + 1, NULL), 0);
}
END_TEST

Suite *
suite_circuit(void)
{
  Suite *s = suite_create("circuit");
  TCase *tc = tcase_create("loopback");
  tcase_add_checked_fixture(tc, fixture_circuit_setup,
                            fixture_circuit_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_one_hop_ntor);
  tcase_add_test(tc, test_one_hop_ntor3);
  tcase_add_test(tc, test_one_hop_fast);
  tcase_add_test(tc, test_hibernation_gates);
  tcase_add_test(tc, test_wrong_ntor_key_refused);
  tcase_add_test(tc, test_wrong_identity_refused);
  tcase_add_test(tc, test_truncate);
  tcase_add_test(tc, test_drop_and_unknown_commands_ignored);
  tcase_add_test(tc, test_idle_channels_closed);
  tcase_add_test(tc, test_silent_peer_times_out);
  tcase_add_test(tc, test_one_handler_per_relay_command);
  suite_add_tcase(s, tc);
  return s;
}
