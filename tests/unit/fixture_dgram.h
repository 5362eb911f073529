/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_dgram.h -- a datagram link layer (feature/dgram) for unit tests:
 * fresh relay keys in a temporary directory and a DatagramPort on
 * 127.0.0.1 with a port the kernel picks, in the test's event loop. Tests
 * of the link layer and of the transports on it (check_dgram, check_dtcp)
 * start two and link them. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_DGRAM_H
#define PCTOR_TESTS_UNIT_FIXTURE_DGRAM_H

#include "feature/dgram/dgram.h"
#include "feature/relay/router_keys.h"
#include "lib/evloop/evloop.h"

typedef struct fixture_dgram_t {
  char dir[64];          /* the key directory, removed by _free() */
  relay_keys_t *keys;
  dgram_t *d;
} fixture_dgram_t;

/* Start one (tag names the directory); handshake_timeout_s 0 keeps the
 * default. Fails the test if it cannot. */
void fixture_dgram_start(fixture_dgram_t *f, evloop_t *loop, const char *tag,
                         unsigned handshake_timeout_s);
/* Free the link layer, the keys and their directory. */
void fixture_dgram_free(fixture_dgram_t *f);

/* Two of them in a new event loop, with a timer that ends the loop (for
 * FIXTURE_RUN_UNTIL); with_circuits also starts the circuit layer
 * (channels without keys, socketless ones allowed, circuits). */
typedef struct fixture_dgram_pair_t {
  fixture_dgram_t fx[2];
  evloop_t *loop;
  evloop_timer_t *timeout;
  int with_circuits;
} fixture_dgram_pair_t;
void fixture_dgram_pair_start(fixture_dgram_pair_t *p, const char *tag,
                              unsigned handshake_timeout_s,
                              int with_circuits);
/* Stop what _start() started and free it (the caller first frees what it
 * attached to the link layers). */
void fixture_dgram_pair_free(fixture_dgram_pair_t *p);

/* Run loop until cond holds or 10 s pass, in steps of 50 ms ended by
 * timer (an evloop timer whose callback exits loop). */
#define FIXTURE_RUN_UNTIL(loop, timer, cond)                                 \
  do {                                                                       \
    for (int k_ = 0; k_ < 200 && !(cond); k_++) {                            \
      evloop_timer_schedule((timer), 50000);                                 \
      evloop_run(loop);                                                      \
    }                                                                        \
  } while (0)
#endif
