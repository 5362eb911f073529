/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_circuit.c -- origin circuits to the loopback relay with
 * callbacks that record what came back (see fixture_circuit.h). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_circuit.h"

#include "core/or/cell_queue.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/bytes/bytes.h"

fixture_circuit_t FC;

void
fixture_circuit_setup(void)
{
  memset(&FC, 0, sizeof(FC));
  fixture_core_relay_start(&FC.r, "CHECK_CIRCUIT_VERBOSE", "info");
}

void
fixture_circuit_teardown(void)
{
  fixture_relay_shutdown();
  fixture_assert_no_circuits();
  ck_assert_uint_eq(packed_cells_allocated(), 0);
  fixture_core_relay_free(&FC.r);
}

int
fixture_circuit_run_for(uint64_t usec)
{
  return fixture_relay_run_for(&FC.r, usec);
}

void
fixture_circuit_run(void)
{
  ck_assert_msg(!fixture_circuit_run_for(10 * 1000000ULL),
                "timed out waiting for the circuit");
}

void
fixture_circuit_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  (void)arg;
  FC.n_open = n;
  evloop_exit(FC.r.loop);
}

static void
on_relay(origin_circuit_t *c, int hop, uint8_t cmd, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  (void)hop;
  (void)arg;
  if (FC.dl_circ && stream_id == 9) {
    if (cmd == RELAY_COMMAND_CONNECTED) {
      FC.dl_connected = 1;
      const char *req = "GET /test/doc HTTP/1.0\r\n\r\n";
      origin_circuit_send_relay(c, 0, RELAY_COMMAND_DATA, 9,
                                (const uint8_t *)req, (uint16_t)strlen(req));
    } else if (cmd == RELAY_COMMAND_DATA) {
      FC.dl = realloc(FC.dl, FC.dl_len + len);
      memcpy(FC.dl + FC.dl_len, body, len);
      FC.dl_len += len;
      FC.dl_cells++;
      if (FC.dl_send_sendmes && FC.dl_cells % CIRCWINDOW_INCREMENT == 0) {
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
      if (FC.dl_send_sendmes && FC.dl_cells % STREAMWINDOW_INCREMENT == 0)
        origin_circuit_send_relay(c, 0, RELAY_COMMAND_SENDME, 9, NULL, 0);
    } else if (cmd == RELAY_COMMAND_END) {
      FC.dl_ended = 1;
      FC.dl_end_reason = len ? body[0] : 0;
      evloop_exit(FC.r.loop);
    }
    return;
  }
  (void)c;
  (void)stream_id;
  FC.relay_seen++;
  FC.relay_cmd = cmd;
  FC.relay_body0 = len ? body[0] : 0xff;
  evloop_exit(FC.r.loop);
}

void
fixture_circuit_closed(origin_circuit_t *c, int reason, const char *why,
                       void *arg)
{
  (void)c;
  (void)why;
  (void)arg;
  FC.closed = 1;
  FC.close_reason = reason;
  evloop_exit(FC.r.loop);
}

const origin_circuit_ops_t fixture_circuit_ops = {
  fixture_circuit_extended, on_relay, fixture_circuit_closed};

origin_circuit_t *
fixture_circuit_one_hop(uint16_t handshake)
{
  extend_target_t t = fixture_relay_target(&FC.r, handshake);
  origin_circuit_t *c = origin_circuit_launch(&t, &fixture_circuit_ops, NULL);
  ck_assert_ptr_nonnull(c);
  fixture_circuit_run();
  ck_assert_msg(FC.closed == 0, "circuit closed while building (reason %d)",
                FC.close_reason);
  ck_assert_int_eq(FC.n_open, 1);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 1);
  return c;
}

void
fixture_circuit_begin_dir_end(origin_circuit_t *c, unsigned want_reason)
{
  FC.relay_seen = 0;
  ck_assert_int_eq(origin_circuit_send_relay(c, 0, RELAY_COMMAND_BEGIN_DIR,
                                             7, NULL, 0),
                   0);
  fixture_circuit_run();
  ck_assert_int_eq(FC.relay_seen, 1);
  ck_assert_uint_eq(FC.relay_cmd, RELAY_COMMAND_END);
  ck_assert_uint_eq(FC.relay_body0, want_reason);
}

