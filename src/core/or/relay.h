/* SPDX-License-Identifier: BSD-3-Clause */
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
/* One handler per command: registering a different one while another is
 * registered is refused with a warning (-1); fn NULL removes the handler. */
int relay_register_handler(uint8_t relay_command, relay_handler_fn fn);
void relay_clear_handlers(void);

/* Process a cell that relay crypto recognised as ours. */
void relay_handle_recognized(or_circuit_t *circ, const uint8_t *payload,
                             int early);

/* Relay messages that must stay in order with the stream data when one
 * stream space spans several circuits (proposal 329 section 2.8): the
 * stream commands. Everything else (SENDME, DROP, EXTEND*, the CONFLUX_*
 * commands...) belongs to the circuit it travels on. */
static inline int
relay_command_is_multiplexed(uint8_t command)
{
  switch (command) {
  case RELAY_COMMAND_BEGIN:
  case RELAY_COMMAND_DATA:
  case RELAY_COMMAND_END:
  case RELAY_COMMAND_CONNECTED:
  case RELAY_COMMAND_RESOLVE:
  case RELAY_COMMAND_RESOLVED:
  case RELAY_COMMAND_XOFF:
  case RELAY_COMMAND_XON:
    return 1;
  default:
    return 0;
  }
}

/* Inbound side of multiplexing (circuit_mux_ops_t in circuit.h): a
 * multiplexed message arrived on leg `circ` (whose mux is set), after the
 * leg's accounting (a DATA cell counted towards the leg's SENDMEs). The
 * hook delivers it now or later with relay_deliver_ordered(); it returns
 * -1 if circ must be closed. NULL: unregister; a second hook while one is
 * registered is refused with a warning (-1), as circuits_set_mux_ops(). */
typedef int (*relay_mux_inbound_fn)(or_circuit_t *circ,
                                    const relay_header_t *h,
                                    const uint8_t *body);
int relay_set_mux_inbound(relay_mux_inbound_fn fn);
/* Process an in-order multiplexed message for the streams of `home` as if
 * it had arrived there (handlers, streams), without the per-circuit
 * accounting already done on the leg it came on. Returns -1 on a protocol
 * violation (the caller closes what it must), else 0. */
int relay_deliver_ordered(or_circuit_t *home, const relay_header_t *h,
                          const uint8_t *body);

/* One gate for new streams (feature/hibernate's soft and hard states, as
 * tor): fn returns 0 to let a BEGIN or BEGIN_DIR through to its handler,
 * or the RELAY_END reason to refuse it with. NULL removes the gate. */
typedef int (*relay_begin_gate_fn)(void);
void relay_set_begin_gate(relay_begin_gate_fn fn);

/* RELAY_END reasons (tor-spec 6.3) used by core. */
enum {
  END_REASON_MISC = 1,
  END_REASON_EXITPOLICY = 4,
  END_REASON_HIBERNATING = 9,
  END_REASON_NOTDIRECTORY = 14,
};
#endif
