/* SPDX-License-Identifier: BSD-3-Clause */
/* stream.h -- the relay side of circuit ends: binds an or_circuit_t to
 * the edge module (edge.h), for the streams that end at this relay (exit
 * connections, directory requests, conflux sets' streams).
 *
 * An or_circuit_t gets its edge_t on its first stream (or_circuit_edge),
 * so middle relays, which never package or deliver data, pay nothing for
 * it. Its edge sends with or_circuit_send_relay(), takes its SENDME digests
 * from the circuit's relay crypto, owns the circuit's controller when the
 * handshake negotiated congestion control (or_circuit_t.cc_sendme_inc),
 * and asks the registered multiplexer (circuit.h: circuit_mux_ops_t)
 * whether DATA may leave a leg of a multiplexed set. On such a leg the
 * streams live on the set's home circuit; each DATA cell counts against
 * the controller of the leg it leaves on (or_circuit_note_data_sent), a
 * circuit SENDME is counted on its leg and wakes the streams of the home.
 *
 * relay.c hands the stream commands that arrive for us to
 * stream_handle_*(); a return of -1 closes the circuit.
 */
#ifndef PCTOR_CORE_OR_STREAM_H
#define PCTOR_CORE_OR_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/circuit.h"
#include "core/or/edge.h"

/* The edge of circ, made on first use. */
edge_t *or_circuit_edge(or_circuit_t *circ);
/* A new stream with this ID on circ (a BEGIN/BEGIN_DIR handler), or NULL
 * if the ID is 0 or in use. */
edge_stream_t *relay_stream_new(or_circuit_t *circ, uint16_t stream_id,
                                const edge_stream_ops_t *ops, void *arg);
/* The circuit a relay-side stream lives on. */
or_circuit_t *relay_stream_circuit(const edge_stream_t *s);

/* The circuit is going away: end every stream, free the edge. */
void circ_edge_clear(or_circuit_t *circ);
/* Counters of the cells dropped for streams that are not open; zero when
 * circ has no edge. */
void circ_edge_get_dropped(const or_circuit_t *circ, uint64_t *half_closed,
                           uint64_t *invalid);
/* The circuit's controller, or NULL (fixed windows, or no stream yet). */
const struct cc_t *circ_edge_cc(const or_circuit_t *circ);
/* circuit.c: a DATA cell was just encrypted and queued on circ. */
void circ_edge_note_data_sent(or_circuit_t *circ);
/* Move every stream of `from` to `to` (a multiplexed set whose stream home
 * closes before its other legs). */
void circ_edge_move_streams(or_circuit_t *from, or_circuit_t *to);

/* Called by relay.c for cells addressed to us. Return -1 when the circuit
 * must be closed (protocol violation), else 0. stream_handle_data() is
 * stream_data_arrived() (circuit-level accounting on the circuit the cell
 * came on) followed by stream_deliver_data() (to the stream); a
 * multiplexed set does the first on the leg and the second, in order, on
 * its stream home. */
int stream_handle_data(or_circuit_t *circ, uint16_t stream_id,
                       const uint8_t *body, uint16_t len);
int stream_data_arrived(or_circuit_t *circ);
int stream_deliver_data(or_circuit_t *circ, uint16_t stream_id,
                        const uint8_t *body, uint16_t len);
int stream_handle_end(or_circuit_t *circ, uint16_t stream_id,
                      const uint8_t *body, uint16_t len);
int stream_handle_sendme(or_circuit_t *circ, uint16_t stream_id,
                         const uint8_t *body, uint16_t len);
/* XOFF / XON (congestion control only; ignored with a log line otherwise,
 * and when malformed, as tor does). */
int stream_handle_xoff(or_circuit_t *circ, uint16_t stream_id,
                       const uint8_t *body, uint16_t len);
int stream_handle_xon(or_circuit_t *circ, uint16_t stream_id,
                      const uint8_t *body, uint16_t len);
#endif
