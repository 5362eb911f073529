/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_relay.h -- the loopback relay of fixture_core.h with keys from
 * feature/relay: fresh identity keys stored in a mkdtemp() directory as
 * tor stores them (router_keys), for suites that test what uses those
 * (descriptors, key files, features on a relay). A suite that needs only
 * "a relay on 127.0.0.1" uses fixture_core_relay_start() instead and runs
 * without feature/relay (tests/unit/check_core).
 *
 * fixture_relay_start() starts one, fixture_relay_shutdown() (in
 * fixture_core.h) closes its channels and circuits, fixture_relay_free()
 * frees the rest, the keys, and removes the directory. The smaller helpers
 * (fixture_keys_new, fixture_rmtree) serve tests that only want keys on
 * disk, or that clean up directories of their own. */
#ifndef PCTOR_TESTS_UNIT_FIXTURE_RELAY_H
#define PCTOR_TESTS_UNIT_FIXTURE_RELAY_H

#include "fixture_core.h"

#include "feature/relay/router_keys.h"

/* Start a loopback relay: tag names the directory
 * (/tmp/pctor-check-<tag>.XXXXXX).  When the environment variable
 * verbose_env (if not NULL) is set, the log goes to stderr at
 * verbose_level ("info", "debug"). */
void fixture_relay_start(fixture_relay_t *f, const char *tag,
                         const char *verbose_env, const char *verbose_level);
/* Free what fixture_relay_start() made (after fixture_relay_shutdown()). */
void fixture_relay_free(fixture_relay_t *f);

/* Fresh relay keys in a new directory dir (at least 64 bytes), named
 * /tmp/pctor-check-<tag>.XXXXXX; fails the test if they cannot be made. */
relay_keys_t *fixture_keys_new(char *dir, const char *tag);
/* Remove the directory tree at dir (errors ignored). */
void fixture_rmtree(const char *dir);

#endif
