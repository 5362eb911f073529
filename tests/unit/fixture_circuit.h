/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_circuit.h -- origin circuits to the loopback relay of
 * fixture_core.h, with callbacks that record what came back, for the
 * suites that drive the spine in one process (check_circuit: core alone;
 * check_circuit_features: with the directory cache, the exit and EXTEND2
 * handlers registered).
 *
 * One fixture at a time (Check runs each test in its own process): FC
 * holds the relay and what the callbacks saw. fixture_circuit_setup()
 * starts the relay with keys made in memory; a test builds a one-hop
 * circuit to it, runs the loop until a callback ends it, and checks FC.
 * fixture_circuit_teardown() closes everything and asserts that no circuit
 * and no packed cell is left. A BEGIN_DIR download on stream 9 of
 * FC.dl_circ is recorded in the dl_ fields (CONNECTED answered with a GET
 * of /test/doc; with dl_send_sendmes, the SENDMEs a client sends); any
 * other relay cell sets relay_seen, relay_cmd and relay_body0. Every
 * callback that records something ends the loop. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_CIRCUIT_H
#define PCTOR_TESTS_UNIT_FIXTURE_CIRCUIT_H

#include <stddef.h>
#include <stdint.h>

#include "fixture_core.h"

#include "core/or/circuit.h"

typedef struct fixture_circuit_t {
  fixture_relay_t r; /* keys, loop, timeout, orport */
  /* what the callbacks saw */
  int n_open;
  int closed;
  int close_reason;
  int relay_seen;
  uint8_t relay_cmd;
  uint8_t relay_body0;
  /* directory download */
  origin_circuit_t *dl_circ;
  uint8_t *dl; /* the test frees it */
  size_t dl_len;
  int dl_cells;
  int dl_ended;
  uint8_t dl_end_reason;
  int dl_connected;
  int dl_send_sendmes;
} fixture_circuit_t;

extern fixture_circuit_t FC;

/* Check setup and teardown (checked fixtures). */
void fixture_circuit_setup(void);
void fixture_circuit_teardown(void);
/* Run the loop until a callback ends it or usec pass; returns whether it
 * timed out. _run() allows 10 s and fails the test on a timeout. */
int fixture_circuit_run_for(uint64_t usec);
void fixture_circuit_run(void);

/* The recording callbacks; a suite with its own relay-cell callback reuses
 * the other two. */
extern const origin_circuit_ops_t fixture_circuit_ops;
void fixture_circuit_extended(origin_circuit_t *c, int n, void *arg);
void fixture_circuit_closed(origin_circuit_t *c, int reason, const char *why,
                            void *arg);

/* A one-hop circuit to the relay with the given handshake (HTYPE_*),
 * built; fails the test otherwise. */
origin_circuit_t *fixture_circuit_one_hop(uint16_t handshake);
/* Send BEGIN_DIR on stream 7 of c and assert that END comes back with
 * want_reason (NOTDIRECTORY from a relay without a directory service: the
 * relay cells went through the crypto layer both ways). */
void fixture_circuit_begin_dir_end(origin_circuit_t *c, unsigned want_reason);

#endif
