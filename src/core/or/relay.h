/* relay.h -- relay cells that a relay recognises as addressed to itself.
 *
 * core handles the commands every relay needs (DROP, TRUNCATE) and answers
 * stream requests it has no handler for with RELAY_END. Features register
 * handlers for the commands they implement (feature/relay: EXTEND2; later
 * exit streams, directory requests, MeasureMe) with relay_register_handler().
 */
#ifndef PCTOR_CORE_OR_RELAY_H
#define PCTOR_CORE_OR_RELAY_H
#include <stdint.h>
#include "core/or/circuit.h"
#include "core/proto/relay_msg.h"

/* A handler returns 0, or -1 if the circuit must be closed for a protocol
 * violation (the caller closes it). `early` is 1 if the cell came in a
 * RELAY_EARLY cell. */
typedef int (*relay_handler_fn)(or_circuit_t *circ, const relay_header_t *h,
                                const uint8_t *body, int early);
void relay_register_handler(uint8_t relay_command, relay_handler_fn fn);
void relay_clear_handlers(void);

/* Process a cell that relay crypto recognised as ours. */
void relay_handle_recognized(or_circuit_t *circ, const uint8_t *payload,
                             int early);

/* RELAY_END reasons (tor-spec 6.3) used by core. */
enum {
  END_REASON_MISC = 1,
  END_REASON_EXITPOLICY = 4,
  END_REASON_NOTDIRECTORY = 14,
};
#endif
