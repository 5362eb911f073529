/* SPDX-License-Identifier: BSD-3-Clause */
/* circbuild.h -- build a client circuit through a given list of relays.
 *
 * The caller supplies the hops (address, identities, ntor key, handshake
 * type); circbuild sends CREATE2/CREATE_FAST to the first and EXTEND2 for
 * each next hop as the previous one completes, and reports success or
 * failure once. Path selection from a consensus comes with the directory
 * work; this is the mechanism it will use.
 *
 * Congestion control (proposal 324 section 10.1): a client asks the exit
 * for it, in an ntor v3 handshake, when the consensus' cc_alg is not 0 and
 * the exit lists FlowCtrl=2 (and Relay=4, ntor v3) in its protocols;
 * circbuild_exit_request_cc() makes that decision for the last hop.
 * Whoever sends data on such a circuit must then use the core's window
 * (origin_circuit_cc_sendable()) and send no stream SENDMEs: core answers
 * and checks the circuit SENDMEs itself (circuit.h).
 */
#ifndef PCTOR_FEATURE_CLIENT_CIRCBUILD_H
#define PCTOR_FEATURE_CLIENT_CIRCBUILD_H
#include "core/or/circuit.h"

typedef struct circbuild_t circbuild_t;

typedef struct circbuild_cbs_t {
  /* All hops are open. */
  void (*built)(circbuild_t *cb, origin_circuit_t *circ, void *arg);
  /* Building failed, or the circuit closed later; why is a short text. */
  void (*closed)(circbuild_t *cb, int reason, const char *why, void *arg);
  /* A relay cell from hop `hop` that circbuild does not handle itself. */
  void (*relay)(circbuild_t *cb, int hop, uint8_t command,
                uint16_t stream_id, const uint8_t *body, uint16_t len,
                void *arg);
} circbuild_cbs_t;

/* Does a protocol list ("Link=1-5 FlowCtrl=1-2 ...", a consensus "pr" or
 * descriptor "proto" line) include version `version` of protocol `name`?
 * Malformed entries count as absent. */
int circbuild_protocols_support(const char *protocols, const char *name,
                                unsigned version);
/* Ask the exit to drop the end-to-end circuit windows (doc/backtap.md,
 * "End-to-end windows"): if its Ed25519 identity is known and it lists
 * Relay=4 (ntor v3), set nowin_request and return 1. Core sends the
 * request (switching the hop to ntor v3) only over a BackTap first hop. */
int circbuild_exit_request_nowin(extend_target_t *exit,
                                 const char *exit_protocols);
/* Decide congestion control for the exit hop: if cc_alg != 0 and the
 * exit's protocols list FlowCtrl=2 and Relay=4 and its Ed25519 identity is
 * known, switch exit to ntor v3 with the request and return 1; else leave
 * it as it is and return 0. */
int circbuild_exit_request_cc(extend_target_t *exit, int32_t cc_alg,
                              const char *exit_protocols);

/* Start building through hops[0..n_hops-1]. Returns NULL if the first
 * step cannot even start (logged). */
circbuild_t *circbuild_start(const extend_target_t *hops, int n_hops,
                             const circbuild_cbs_t *cbs, void *arg);
/* Add hops[0..n-1] after the hops asked for so far (a controller's
 * EXTENDCIRCUIT on an existing circuit). A circuit still being built goes
 * on to the new hops; a built one sends EXTEND2 for the first of them at
 * once and reports built again when the last opens. Returns 0, or -1 (no
 * live circuit, more than CIRCUIT_MAX_HOPS hops, EXTEND2 not sent). */
int circbuild_extend(circbuild_t *cb, const extend_target_t *hops, int n);
origin_circuit_t *circbuild_circuit(circbuild_t *cb);
/* How many hops have opened so far (0: the first hop's handshake has
 * not completed). */
int circbuild_hops_open(const circbuild_t *cb);
/* Microseconds from start to the last hop opening (0 if not built). */
uint64_t circbuild_build_time_us(const circbuild_t *cb);
/* Close the circuit (if still open) and free the builder. */
void circbuild_free_(circbuild_t *cb);
#define circbuild_free(x) do { circbuild_free_(x); (x) = NULL; } while (0)
#endif
