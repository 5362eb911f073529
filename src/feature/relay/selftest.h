/* SPDX-License-Identifier: BSD-3-Clause */
/* selftest.h -- the ORPort reachability self-test (tor's AssumeReachable
 * 0, its default, and AssumeReachableIPv6).
 *
 * Before a relay publishes its descriptor it checks that other relays can
 * reach it at the address and ORPort it advertises: it builds a
 * three-hop circuit through two running relays from the consensus whose
 * last hop is itself, at the advertised address and port (so the
 * second relay must open a connection to exactly what the descriptor
 * will say; two, because a relay refuses to extend a circuit back to the
 * relay it came from). One selftest_t tests one address: the app runs one
 * for the IPv4 ORPort and one for the IPv6 ORPort. For an IPv6 address
 * the second relay must be able to extend over IPv6 (as tor asks: an IPv6
 * ORPort of its own and the Relay=3 protocol), and the extension to us
 * carries only the IPv6 link specifier. Once such a circuit is built the ORPort counts as reachable for
 * the rest of the run (until the advertised address changes): the
 * reachable callback runs once and the notice operators know from tor is
 * logged ("Self-testing indicates your ORPort ... is reachable from the
 * outside. Excellent."). Until then an attempt is made every
 * SELFTEST_INTERVAL_SECS (SELFTEST_TESTING_INTERVAL_SECS on a testing
 * network) as soon as the consensus has a usable relay other than this
 * one; an attempt that has not finished after the interval is abandoned.
 * Failures are info lines; a relay that is still unconfirmed
 * SELFTEST_COMPLAIN_SECS after the test started (tor's 20 minutes;
 * SELFTEST_TESTING_COMPLAIN_SECS on a testing network, which tor does not
 * shorten) gets a warning, repeated as often while it stays unconfirmed.
 *
 * The DirPort is not tested: tor 0.4.9 does not test it either (removed
 * in 0.4.6), and the authorities no longer check it.
 */
#ifndef PCTOR_FEATURE_RELAY_SELFTEST_H
#define PCTOR_FEATURE_RELAY_SELFTEST_H
#include <stdint.h>

#include "core/or/relay_keys.h"
#include "feature/dir/nodelist.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

#define SELFTEST_INTERVAL_SECS 60
#define SELFTEST_TESTING_INTERVAL_SECS 5
#define SELFTEST_COMPLAIN_SECS (20 * 60)
#define SELFTEST_TESTING_COMPLAIN_SECS 30
/* The bandwidth self-test, as tor's: at most a circuit window of DROP
 * cells, and the circuit kept this long for them to cross. */
#define SELFTEST_BW_MAX_CELLS 1000
#define SELFTEST_BW_HOLD_SECS 10

typedef struct selftest_config_t {
  const relay_keys_t *keys;  /* borrowed: our identities and ntor key */
  int testing;               /* TestingTorNetwork: the shorter schedule */
  /* The current nodelist (may return NULL: no consensus yet). */
  const dir_nodelist_t *(*nodelist)(void *arg);
  /* The advertised ORPort was reached from outside (once). */
  void (*reachable)(void *arg);
  /* Optional: will the descriptor be uploaded now that this ORPort is
   * reachable (the notice then says "Publishing server descriptor.", as
   * tor's)? NULL: yes. */
  int (*publishable)(void *arg);
  /* The bandwidth self-test: once the ORPort is confirmed, this many DROP
   * cells (0: none) go through the test circuit back to us, so that the
   * relay observes some bandwidth before clients use it (a new relay
   * otherwise advertises 0 and may not get Fast). selftest_bw_cells()
   * gives tor's count for a rate. */
  unsigned bw_test_cells;
  void *arg;
} selftest_config_t;

typedef struct selftest_t selftest_t;

/* Nothing is tested until selftest_set_address(). */
selftest_t *selftest_new(evloop_t *loop, const selftest_config_t *cfg);
/* The advertised address (IPv4 or IPv6) and ORPort. A different one than
 * before starts the test again (it was not confirmed for this one). */
void selftest_set_address(selftest_t *st, const pc_addr_t *orport);
/* The other family's test of the same relay (or NULL): each avoids, when
 * it can, relays the other's attempt in progress is giving a channel with
 * us (see selftest.c). other must outlive st or be unset first. */
void selftest_set_other(selftest_t *st, const selftest_t *other);
int selftest_is_reachable(const selftest_t *st);
/* The address being tested (family AF_UNSPEC before the first
 * selftest_set_address()). */
const pc_addr_t *selftest_address(const selftest_t *st);
/* Counters, for tests. */
typedef struct selftest_stats_t {
  unsigned n_attempts, n_failed, n_complaints;
} selftest_stats_t;
void selftest_get_stats(const selftest_t *st, selftest_stats_t *out);
/* DROP cells for the bandwidth self-test at rate bytes/s: ten seconds'
 * worth, at most SELFTEST_BW_MAX_CELLS. */
unsigned selftest_bw_cells(uint64_t rate);
void selftest_free_(selftest_t *st);
#define selftest_free(x) do { selftest_free_(x); (x) = NULL; } while (0)
#endif
