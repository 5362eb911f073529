/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_core.h -- relay keys for the core unit tests, made in memory
 * with lib/crypt, lib/tls and core/proto alone.
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
 * that fixes its clock near the real time still sees them valid. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_CORE_H
#define PCTOR_TESTS_UNIT_FIXTURE_CORE_H

#include <time.h>

#include "core/or/relay_keys.h"

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

#endif
