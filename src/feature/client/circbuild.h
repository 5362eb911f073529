/* circbuild.h -- build a client circuit through a given list of relays.
 *
 * The caller supplies the hops (address, identities, ntor key, handshake
 * type); circbuild sends CREATE2/CREATE_FAST to the first and EXTEND2 for
 * each next hop as the previous one completes, and reports success or
 * failure once. Path selection from a consensus comes with the directory
 * work; this is the mechanism it will use.
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

/* Start building through hops[0..n_hops-1]. Returns NULL if the first
 * step cannot even start (logged). */
circbuild_t *circbuild_start(const extend_target_t *hops, int n_hops,
                             const circbuild_cbs_t *cbs, void *arg);
origin_circuit_t *circbuild_circuit(circbuild_t *cb);
/* Microseconds from start to the last hop opening (0 if not built). */
uint64_t circbuild_build_time_us(const circbuild_t *cb);
/* Close the circuit (if still open) and free the builder. */
void circbuild_free_(circbuild_t *cb);
#define circbuild_free(x) do { circbuild_free_(x); (x) = NULL; } while (0)
#endif
