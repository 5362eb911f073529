/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dtcp.c -- TCP-over-DTLS hops (feature/dtcp, on the shared carried
 * hop glue feature/dgram/dgram_carry) as a peer relay sees them: two
 * datagram link layers on 127.0.0.1 in one event loop; d0 runs dtcp, d1
 * is the "peer", whose TCP connections the test opens by hand in the
 * same user-level stack (the pseudo addresses keep the two ends apart)
 * and carries as DGRAM_REC_TCP_SEGMENT records over its link.
 *
 * Checked: a connection that never brings a cell is reset after the
 * first-cell timeout, counted, and its hop is gone; one that brings a
 * CREATE2 gets a carried channel, and the circuit layer's answer (a
 * DESTROY: this relay has no onion keys) comes back over the same
 * connection; it is not reset by the timeout. Skipped without lwIP.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_dgram.h"
#include "fixture_relay.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/proto/cell.h"
#include "feature/dgram/dgram.h"
#include "feature/dtcp/dtcp.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/time/clock.h"
#include "lib/utcp/utcp.h"

Suite *suite_dtcp(void);

static struct {
  fixture_dgram_pair_t p;
  dtcp_t *t;
  dgram_link_t *l1;        /* d1's link to d0 */
  utcp_peer_t *p1;         /* the test's TCP end, d1's side */
  /* the test's connection */
  int closed;
  char why[64];
  uint8_t rx[1024];
  size_t rx_len;
} T;

/* Run the loop until cond holds or 10 s pass. */
#define RUN_UNTIL(cond) FIXTURE_RUN_UNTIL(T.p.loop, T.p.timeout, cond)

static void
seg_out(void *arg, const uint8_t *seg, size_t len)
{
  (void)arg;
  (void)dgram_link_send(T.l1, DGRAM_REC_TCP_SEGMENT, seg, len);
}

static void
seg_in(dgram_link_t *l, uint8_t type, const uint8_t *body, size_t len,
       void *arg)
{
  (void)l;
  (void)type;
  (void)arg;
  (void)utcp_peer_input(T.p1, body, len);
}

static void
c_recv(void *arg, const uint8_t *data, size_t len)
{
  utcp_conn_t **c = arg;
  size_t n = len < sizeof(T.rx) - T.rx_len ? len : sizeof(T.rx) - T.rx_len;
  memcpy(T.rx + T.rx_len, data, n);
  T.rx_len += n;
  utcp_conn_consumed(*c, len);
}

static void
c_sent(void *arg)
{
  (void)arg;
}

static void
c_closed(void *arg, const char *why)
{
  utcp_conn_t **c = arg;
  *c = NULL;
  T.closed++;
  snprintf(T.why, sizeof(T.why), "%s", why);
}

static const utcp_conn_ops_t c_ops = {c_recv, c_sent, c_closed};

/* The test's end opens connections; it accepts none. */
static const utcp_conn_ops_t *
no_accept(void *arg, utcp_conn_t *c, void **conn_arg)
{
  (void)arg;
  (void)c;
  (void)conn_arg;
  return NULL;
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  if (!utcp_available())
    return;
  fixture_dgram_pair_start(&T.p, "dtcp", 0, 1);
  T.t = dtcp_new(T.p.loop, T.p.fx[0].d);
  ck_assert_ptr_nonnull(T.t);
  ck_assert_int_eq(
      dgram_register_handler(T.p.fx[1].d, DGRAM_REC_TCP_SEGMENT, seg_in, NULL), 0);
  T.l1 = dgram_link_open(T.p.fx[1].d, dgram_bound_addr(T.p.fx[0].d),
                         T.p.fx[0].keys->ed_identity.pub,
                         T.p.fx[0].keys->rsa_id_digest);
  ck_assert_ptr_nonnull(T.l1);
  dtcp_stats_t st;
  RUN_UNTIL(dgram_link_is_up(T.l1) &&
            (dtcp_get_stats(T.t, &st), st.carry.links == 1));
  ck_assert(dgram_link_is_up(T.l1));
  ck_assert_uint_eq(st.carry.links, 1);
  T.p1 = utcp_peer_new(dtcp_stack_for_testing(T.t), seg_out, no_accept, NULL);
  ck_assert_ptr_nonnull(T.p1);
}

static void
teardown(void)
{
  if (!utcp_available())
    return;
  utcp_peer_free(T.p1);
  dtcp_free(T.t);
  fixture_dgram_pair_free(&T.p);
}

/* The test's connection to d0's dtcp, with a first-cell timeout of 1 s. */
static utcp_conn_t *conn;

static void
open_conn(void)
{
  dtcp_set_first_cell_timeout(T.t, 1);
  conn = utcp_connect(T.p1, &c_ops, &conn);
  ck_assert_ptr_nonnull(conn);
}

START_TEST(test_no_first_cell_reset)
{
  if (!utcp_available())
    return;
  open_conn();
  dtcp_stats_t st;
  RUN_UNTIL((dtcp_get_stats(T.t, &st), st.carry.hops_in == 1));
  ck_assert_uint_eq(st.carry.hops_in, 1);
  ck_assert_uint_eq(st.carry.hops, 1);
  uint64_t t0 = time_mono_us();
  /* Half a cell is not a cell. */
  uint8_t half[CELL_MAX_NETWORK_LEN / 2];
  memset(half, 0, sizeof(half));
  ck_assert_int_eq(utcp_conn_write(conn, half, sizeof(half)), 0);
  RUN_UNTIL(T.closed);
  ck_assert_int_eq(T.closed, 1);
  ck_assert_uint_ge(time_mono_us() - t0, 500000);
  ck_assert_str_eq(T.why, "reset by the peer");
  dtcp_get_stats(T.t, &st);
  ck_assert_uint_eq(st.first_cell_timeouts, 1);
  ck_assert_uint_eq(st.carry.hops, 0);
  ck_assert_uint_eq(st.cells_received, 0);
  /* the link stays */
  ck_assert_uint_eq(st.carry.links, 1);
  ck_assert(dgram_link_is_up(T.l1));
}
END_TEST

START_TEST(test_first_cell_opens_channel)
{
  if (!utcp_available())
    return;
  open_conn();
  uint8_t cell[CELL_MAX_NETWORK_LEN];
  memset(cell, 0, sizeof(cell));
  set_u32(cell, 0x80000011u);
  cell[4] = CELL_CREATE2;
  ck_assert_int_eq(utcp_conn_write(conn, cell, sizeof(cell)), 0);
  /* The circuit layer refuses the CREATE2 (no onion keys here) with a
   * DESTROY over the same hop. */
  RUN_UNTIL(T.rx_len >= CELL_MAX_NETWORK_LEN);
  ck_assert_uint_eq(T.rx_len, CELL_MAX_NETWORK_LEN);
  ck_assert_uint_eq(get_u32(T.rx), 0x80000011u);
  ck_assert_uint_eq(T.rx[4], CELL_DESTROY);
  dtcp_stats_t st;
  dtcp_get_stats(T.t, &st);
  ck_assert_uint_eq(st.cells_received, 1);
  ck_assert_uint_eq(st.cells_sent, 1);
  /* Past the first-cell timeout: not reset for it (the hop ends when its
   * circuitless channel closes: a FIN, not a reset). */
  uint64_t t0 = time_mono_us();
  RUN_UNTIL(time_mono_us() - t0 > 1500000);
  dtcp_get_stats(T.t, &st);
  ck_assert_uint_eq(st.first_cell_timeouts, 0);
  ck_assert(T.closed == 0 || strcmp(T.why, "closed by the peer") == 0);
}
END_TEST

Suite *
suite_dtcp(void)
{
  Suite *s = suite_create("dtcp");
  TCase *tc = tcase_create("hops");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_no_first_cell_reset);
  tcase_add_test(tc, test_first_cell_opens_channel);
  suite_add_tcase(s, tc);
  return s;
}
