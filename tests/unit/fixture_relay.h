/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_relay.h -- the loopback relay the unit tests share.
 *
 * A test suite that needs "a relay on 127.0.0.1" embeds a fixture_relay_t
 * in its state and calls fixture_relay_start() from its Check setup:
 * fresh identity keys in a mkdtemp() directory, an event loop, the
 * channel and circuit tables, an ORPort listening on 127.0.0.1 (kernel
 * picked port, in .orport) and one timer that ends the loop.  Teardown is
 * split in two so that a suite can assert what it wants between the two
 * steps: fixture_relay_shutdown() closes channels and circuits and clears
 * the relay handlers; fixture_relay_free() frees the cell freelist, the
 * loop and the keys and removes the directory.
 *
 * fixture_relay_target() names the relay as the first hop of a circuit.
 * The smaller helpers (fixture_keys_new, fixture_rmtree) serve tests that
 * only want keys on disk, or that clean up directories of their own. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_RELAY_H
#define PCTOR_TESTS_UNIT_FIXTURE_RELAY_H

#include <stdint.h>

#include "core/or/circuit.h"
#include "feature/relay/router_keys.h"
#include "lib/evloop/evloop.h"
#include "lib/net/address.h"

typedef struct fixture_relay_t {
  char dir[64];             /* the key directory, removed by _free() */
  relay_keys_t *keys;       /* the relay's identity */
  evloop_t *loop;           /* the loop channels_init() was given */
  evloop_timer_t *timeout;  /* ends the loop (fixture_relay_run_for) */
  int timed_out;            /* set when .timeout fired */
  pc_addr_t orport;         /* where the ORPort listens */
} fixture_relay_t;

/* Start a loopback relay: tag names the directory
 * (/tmp/pctor-check-<tag>.XXXXXX).  When the environment variable
 * verbose_env (if not NULL) is set, the log goes to stderr at
 * verbose_level ("info", "debug"). */
void fixture_relay_start(fixture_relay_t *f, const char *tag,
                         const char *verbose_env, const char *verbose_level);
/* Close all channels and circuits; forget the relay cell handlers. */
void fixture_relay_shutdown(void);
/* Assert that no OR or origin circuit is left. */
void fixture_assert_no_circuits(void);
/* Free what fixture_relay_start() made (after fixture_relay_shutdown()). */
void fixture_relay_free(fixture_relay_t *f);
/* Run the loop for at most usec (callbacks may end it earlier); returns
 * whether the time ran out. */
int fixture_relay_run_for(fixture_relay_t *f, uint64_t usec);

/* A one-hop extend target naming the fixture's relay: its ORPort, RSA
 * and ed25519 identities and current ntor key, with the given handshake
 * type (HTYPE_*). */
extend_target_t fixture_relay_target(const fixture_relay_t *f,
                                     uint16_t handshake);

/* Fresh relay keys in a new directory dir (at least 64 bytes), named
 * /tmp/pctor-check-<tag>.XXXXXX; fails the test if they cannot be made. */
relay_keys_t *fixture_keys_new(char *dir, const char *tag);
/* Remove the directory tree at dir (errors ignored). */
void fixture_rmtree(const char *dir);

#endif
