/* SPDX-License-Identifier: BSD-3-Clause */
/* dos.h -- denial-of-service defences at a relay, with tor's option names,
 * defaults and consensus parameters (tor(1), DENIAL OF SERVICE MITIGATION
 * OPTIONS):
 *
 *  - connections (DoSConnection*): per client address, at most
 *    MaxConcurrentCount connections at once, and new connections limited
 *    by a token bucket (ConnectRate per second, ConnectBurst); an address
 *    that empties its bucket is marked for ConnectDefenseTimePeriod (a
 *    random time between N+1 and 3/2 N seconds). With DefenseType 2 new
 *    connections from an address over either limit are closed at once.
 *  - circuit creation (DoSCircuitCreation*): per client address, a token
 *    bucket of CREATE cells (Rate per second, Burst). An address that
 *    empties it while it has at least MinConnections connections open is
 *    marked for DefenseTimePeriod (random between N+1 and 3/2 N s); with
 *    DefenseType 2 its CREATE cells are answered with DESTROY
 *    (RESOURCELIMIT) meanwhile.
 *  - stream creation at exits (DoSStreamCreation*): per circuit, a token
 *    bucket of BEGIN and RESOLVE cells (Rate per second, Burst); past it,
 *    DefenseType 2 refuses the stream (END RESOURCELIMIT), 3 closes the
 *    circuit.
 * Only clients are limited: connections from addresses the consensus
 * lists as relays are not counted (dos_set_relay_addrs()), and CREATE
 * cells on channels whose peer proved a relay identity are not either.
 *
 * Every value comes from dos_params_t, which the daemon resolves from the
 * options and the consensus (dos_params_resolve(): an option at 0 or auto
 * takes the consensus parameter of the same name, else tor's default).
 * All defences are off by default, as in tor (the live consensus turns
 * them on).
 *
 * State: one record per client address seen (17-byte key: family and
 * address), holding its open connection count, its two buckets and its
 * marks; records that hold nothing the next use would not recreate (no
 * connection, no mark, full buckets) are swept every minute. The stream
 * bucket is a dos_stream_state_t of the or_circuit, allocated at its first
 * BEGIN or RESOLVE.
 */
#ifndef PCTOR_CORE_OR_DOS_H
#define PCTOR_CORE_OR_DOS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/evloop/evloop.h"
#include "lib/address/address.h"
#include "lib/time/tbucket.h"

/* Defense types (tor's numbers). */
#define DOS_DEFENSE_NONE 1
#define DOS_CC_DEFENSE_REFUSE_CELL 2
#define DOS_CONN_DEFENSE_CLOSE 2
#define DOS_STREAM_DEFENSE_REFUSE_STREAM 2
#define DOS_STREAM_DEFENSE_CLOSE_CIRCUIT 3

typedef struct dos_params_t {
  int cc_enabled;
  uint32_t cc_min_conns;
  uint32_t cc_rate, cc_burst;
  int cc_defense;
  uint32_t cc_defense_period; /* seconds */
  int conn_enabled;
  uint32_t conn_max_concurrent;
  int conn_defense;
  uint32_t conn_connect_rate, conn_connect_burst;
  uint32_t conn_connect_defense_period; /* seconds */
  int stream_enabled;
  int stream_defense;
  uint32_t stream_rate, stream_burst;
} dos_params_t;

/* The options as written (dos_options.h): 0 / -1 (auto) mean "the
 * consensus parameter". */
struct dos_options_t;
/* A consensus parameter: its value, or dflt when the consensus has none
 * (clamped to [min, max]). */
typedef int32_t (*dos_param_fn)(void *arg, const char *name, int32_t dflt,
                                int32_t min, int32_t max);
/* Resolve options and consensus (fn may be NULL: no consensus) into the
 * values the defences use. */
void dos_params_resolve(dos_params_t *out, const struct dos_options_t *o,
                        dos_param_fn fn, void *arg);
/* tor's values when neither options nor consensus say anything. */
void dos_params_default(dos_params_t *out);

void dos_init(evloop_t *loop);
void dos_shutdown(void);
void dos_set_params(const dos_params_t *p);
const dos_params_t *dos_get_params(void);

/* The addresses of the relays in the consensus (ports ignored): their
 * connections are not counted. Replaces the previous set. */
void dos_set_relay_addrs(const pc_addr_t *addrs, size_t n);
int dos_addr_is_relay(const pc_addr_t *a);

/* A connection from peer was accepted. 1: counted (call dos_conn_closed()
 * when it closes), 0: not counted (a relay's address, or the connection
 * defences off), -1: refuse it (close it now; counted as rejected). */
int dos_conn_accepted(const pc_addr_t *peer);
void dos_conn_closed(const pc_addr_t *peer);

/* A CREATE, CREATE2 or CREATE_FAST cell from a client at peer: 0 to go
 * on, -1 to refuse it (DESTROY with reason RESOURCELIMIT). */
int dos_create_allowed(const pc_addr_t *peer);

/* Per circuit: BEGIN / RESOLVE rate limit at an exit. Zeroed memory is a
 * valid fresh state. */
typedef struct dos_stream_state_t {
  tbucket_t bucket;
  unsigned initialised : 1;
} dos_stream_state_t;
#define DOS_STREAM_OK 0
#define DOS_STREAM_REFUSE 1      /* END with RESOURCELIMIT */
#define DOS_STREAM_CLOSE_CIRC 2  /* close the circuit (RESOURCELIMIT) */
int dos_stream_allowed(dos_stream_state_t *st);

typedef struct dos_stats_t {
  uint64_t cc_circuits_rejected;   /* CREATE refused while marked */
  uint64_t cc_marked_addrs;        /* times an address was marked */
  uint64_t conn_concurrent_rejected; /* over MaxConcurrentCount */
  uint64_t conn_rate_rejected;     /* marked by the connect rate */
  uint64_t conn_marked_addrs;      /* times marked by the connect rate */
  uint64_t stream_rejected;        /* refused, or circuits closed for it */
  uint64_t stream_circuits_closed;
  unsigned n_clients;              /* address records held now */
  uint64_t records_dropped;        /* dropped at the cap (marks lost) */
  uint64_t addrs_untracked;        /* new addresses not counted: full */
} dos_stats_t;
void dos_get_stats(dos_stats_t *out);
/* tor's heartbeat line ("DoS mitigation since startup: ...") into out. */
void dos_heartbeat_line(char *out, size_t outlen);
/* Drop address records idle enough to be recreated (tests, sweep). */
void dos_sweep_at(uint64_t now_us);
/* The memory one address record is counted for (MEMACCT_DOS). */
size_t dos_record_bytes(void);
/* Tests: the cap on address records (0: the default, 2^18). */
void dos_set_max_clients_for_testing(size_t n);
/* Tests: use this time (evloop_now_us scale) instead of the loop's; 0
 * goes back to the loop's. */
void dos_set_now_for_testing(uint64_t us);
#endif
