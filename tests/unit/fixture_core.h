/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_core.h -- the loopback relay the unit tests share, and relay
 * keys for it made in memory with lib/crypt, lib/tls and core/proto alone.
 *
 * The suites of tests/unit/check_core link nothing above src/core, so they
 * cannot use feature/relay's router_keys (fixture_relay.h), which stores
 * keys in a data directory as tor does. What the link handshake and CREATE2
 * need is only core's plain relay_keys_t (core/or/relay_keys.h): an RSA
 * identity with its self-signed certificate and RSA->Ed25519 cross-
 * certificate, an Ed25519 identity and signing key with the type-4
 * certificate, a TLS context with its type-5 certificate, a link
 * authentication key with its type-6 certificate and an ntor key (the
 * onion set built from them). fixture_core_keys_new() makes all of that
 * fresh; nothing touches the disk, so there is nothing to remove. The
 * certificates are valid from a day before `now` for 30 days, so a test
 * that fixes its clock near the real time still sees them valid.
 *
 * The loopback relay (fixture_relay_t): a suite that needs "a relay on
 * 127.0.0.1" embeds one in its state and starts it from its Check setup:
 * an event loop, the channel and circuit tables, an ORPort listening on
 * 127.0.0.1 (kernel picked port, in .orport) and one timer that ends the
 * loop. fixture_core_relay_start() gives it keys made in memory;
 * fixture_relay.h's fixture_relay_start() (feature/relay) keys stored in a
 * directory as tor does, for tests that need those. Teardown is split in
 * two so that a suite can assert what it wants between the two steps:
 * fixture_relay_shutdown() closes channels and circuits and clears the
 * relay handlers; the matching _free() frees the rest. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_CORE_H
#define PCTOR_TESTS_UNIT_FIXTURE_CORE_H

#include <stdint.h>
#include <time.h>

#include "core/or/circuit.h"
#include "core/or/relay_keys.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

/* Fresh relay keys valid at now; fails the running test if they cannot be
 * made. */
relay_keys_t *fixture_core_keys_new(time_t now);
/* Free what fixture_core_keys_new() made (NULL ok). */
void fixture_core_keys_free_(relay_keys_t *k);
#define fixture_core_keys_free(k)                                            \
  do {                                                                       \
    fixture_core_keys_free_(k);                                              \
    (k) = NULL;                                                              \
  } while (0)

typedef struct fixture_relay_t {
  char dir[64];             /* fixture_relay_start()'s key directory */
  relay_keys_t *keys;       /* the relay's identity */
  evloop_t *loop;           /* the loop channels_init() was given */
  evloop_timer_t *timeout;  /* ends the loop (fixture_relay_run_for) */
  int timed_out;            /* set when .timeout fired */
  pc_addr_t orport;         /* where the ORPort listens */
} fixture_relay_t;

/* Start a loopback relay with keys made in memory. When the environment
 * variable verbose_env (if not NULL) is set, the log goes to stderr at
 * verbose_level ("info", "debug"). */
void fixture_core_relay_start(fixture_relay_t *f, const char *verbose_env,
                              const char *verbose_level);
/* Free what fixture_core_relay_start() made (after
 * fixture_relay_shutdown()). */
void fixture_core_relay_free(fixture_relay_t *f);

/* The two halves both kinds of relay share: run a relay with keys (f owns
 * them from now on, f->dir is left alone), and free what _begin() made
 * except the keys. */
void fixture_relay_begin(fixture_relay_t *f, relay_keys_t *keys,
                         const char *verbose_env, const char *verbose_level);
void fixture_relay_end(fixture_relay_t *f);

/* Close all channels and circuits; forget the relay cell handlers. */
void fixture_relay_shutdown(void);
/* Assert that no OR or origin circuit is left. */
void fixture_assert_no_circuits(void);
/* Run the loop for at most usec (callbacks may end it earlier); returns
 * whether the time ran out. */
int fixture_relay_run_for(fixture_relay_t *f, uint64_t usec);
/* A one-hop extend target naming the fixture's relay: its ORPort, RSA
 * and ed25519 identities and current ntor key, with the given handshake
 * type (HTYPE_*). */
extend_target_t fixture_relay_target(const fixture_relay_t *f,
                                     uint16_t handshake);

#endif
