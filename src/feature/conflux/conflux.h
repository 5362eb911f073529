/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux.h -- conflux (proposal 329) at the exit: circuits that a client
 * links with CONFLUX_LINK become legs of one set whose streams and
 * multiplexed messages span them (wire-compatible with tor 0.4.8/0.4.9).
 *
 * conflux_exit_init() registers the relay-command handlers for
 * CONFLUX_LINK / LINKED / LINKED_ACK / SWITCH and core's multiplexing hooks
 * (circuit_mux_ops_t, relay_set_mux_inbound) and a circuit-close observer.
 * What it refuses, as tor does (the circuit is closed):
 *   - LINK while conflux is disabled (consensus cfx_enabled=0), on a
 *     circuit that extends further (we are not its last hop), on a
 *     circuit without congestion control (no ntor v3 negotiation), on a
 *     circuit already linked or carrying streams, or a malformed LINK;
 *   - a leg beyond CFX_MAX_LEGS (8) for one nonce;
 *   - a leg whose LINK says the client sent more than we delivered (data
 *     loss): the whole set is closed;
 *   - LINKED at a relay; LINKED_ACK or SWITCH on an unlinked circuit, a
 *     second LINKED_ACK, a SWITCH shorter than 4 bytes or one that
 *     overflows the sequence numbers;
 *   - a multiplexed message with a number already delivered (the set is
 *     closed);
 * and the out-of-order queue bound (max_ooo messages per set): when a set
 * would queue more, it is closed with a notice naming the bound.
 *
 * The exit answers LINK at once with LINKED (the leg is linked from then
 * on; the LINKED_ACK only gives its RTT) and asks for MIN_LATENCY as tor
 * exits do; it schedules its own sending by the client's desired UX
 * (tor's mapping: HIGH_THROUGHPUT and no opinion -> LowRTT, the others ->
 * MinRTT). Streams live on the set's first leg (its "home") and move to
 * another leg if that one closes while the set goes on.
 *
 * The nonce is a secret that binds the legs: it is never logged; sets are
 * named in logs by a serial number.
 */
#ifndef PCTOR_FEATURE_CONFLUX_CONFLUX_H
#define PCTOR_FEATURE_CONFLUX_CONFLUX_H
#include <stddef.h>
#include <stdint.h>

#include "lib/evloop/evloop.h"

typedef struct conflux_exit_config_t {
  int enabled;       /* consensus cfx_enabled (default 1) */
  uint32_t max_ooo;  /* out-of-order queue bound per set; 0: default */
  /* The scheduler for what we send on sets: 0 follows the client's
   * desired UX (tor's mapping); else a cfx_alg_t (ConfluxScheduler, e.g.
   * the paper's proportional splitter for experiments). */
  int alg;
} conflux_exit_config_t;

/* Register the handlers and hooks (once, at start-up). */
void conflux_exit_init(evloop_t *loop, const conflux_exit_config_t *cfg);
void conflux_exit_configure(const conflux_exit_config_t *cfg);
/* Unregister; sets still open are forgotten (their circuits close with
 * the circuit subsystem). */
void conflux_exit_shutdown(void);

typedef struct conflux_exit_stats_t {
  uint64_t n_sets, n_legs_linked, n_refused, n_teardowns, n_ooo_full;
  uint64_t n_msgs_sent;     /* multiplexed messages sent on legs */
  uint64_t n_switches_sent; /* CONFLUX_SWITCH cells among them */
  unsigned n_open_sets;
} conflux_exit_stats_t;
void conflux_exit_get_stats(conflux_exit_stats_t *out);
/* Log (notice) the summary of every open set, as set_free() does for a
 * closing one ("Conflux set #N open: ..."); for SIGUSR1. */
void conflux_exit_log_sets(void);

/* MaxMemInQueues: the bytes circ holds in its conflux set's out-of-order
 * queue (0 unless circ is the leg they are charged to, see
 * cfx_set_ooo_holder). Registered with circuits_add_extra_mem_fn() by
 * conflux_exit_init(); public for tests. */
struct circuit_t;
size_t conflux_exit_circuit_mem(struct circuit_t *circ);

/* The value pctor's descriptors add to their proto line once conflux is
 * served ("Conflux=1", proposal 329 2.1.1). */
#define CONFLUX_PROTO_ENTRY "Conflux=1"
#endif
