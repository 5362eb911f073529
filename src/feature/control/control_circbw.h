/* SPDX-License-Identifier: BSD-3-Clause */
/* control_circbw.h -- the text of CIRC_BW events (control-spec 4.1.25),
 * with pctor's own fields for measurement.
 *
 * Every second control.c asks, for each circuit a controller may want
 * (the circuits this process originates, and relayed circuits MeasureMe
 * measures), for the event describing what moved since the last one.
 * This file only computes and formats: it keeps no state of its own, the
 * caller keeps a control_circbw_prev_t per circuit, so the unit tests can
 * feed it hand-made circuits.
 *
 * Fields as tor writes them, for circuits that start here:
 *   READ, WRITTEN   cells received / sent on the circuit times 509 (a
 *                   cell's payload), as tor counts them;
 *   DELIVERED_READ, DELIVERED_WRITTEN   bytes of relay-cell bodies;
 *   OVERHEAD_READ, OVERHEAD_WRITTEN     the rest of those cells' 498-byte
 *                   bodies (padding of cells that were not full);
 *   TIME            when the figures were taken (UTC, microseconds);
 *   SS, CWND, RTT, MIN_RTT   the congestion controller towards the last
 *                   hop that negotiated one (RTT in milliseconds).
 * pctor's fields (names starting "PCTOR_", which stem and tor's other
 * controllers keep as unknown keywords), per direction D = FWD (towards
 * the exit: the circuit's n side) and, for relayed circuits, BWD:
 *   PCTOR_QUEUE_D       cells waiting in the circuit's queue now;
 *   PCTOR_DELAY_US_D    the mean time the cells sent in this second
 *                       waited in that queue (microseconds);
 *   PCTOR_EWMA_D        the EWMA scheduler's value for the queue;
 *   PCTOR_CONN_D        the connection's id, PCTOR_PERCIRC_D 1 when it is
 *                       the circuit's own (PerCircuitTCP), else 0;
 *   PCTOR_TCP_RTT_US_D, PCTOR_TCP_CWND_D, PCTOR_TCP_RETRANS_D,
 *   PCTOR_TCP_NOTSENT_D the connection's TCP_INFO (smoothed RTT,
 *                       congestion window in segments, retransmitted
 *                       segments in its lifetime, unsent bytes queued in
 *                       the kernel) when the kernel gives it.
 * A relayed circuit's event carries PCTOR_RELAYED=1, no DELIVERED or
 * OVERHEAD fields, and counts cells in both directions.
 */
#ifndef PCTOR_FEATURE_CONTROL_CONTROL_CIRCBW_H
#define PCTOR_FEATURE_CONTROL_CONTROL_CIRCBW_H
#include <stdint.h>

#include "core/or/circuit.h"

/* The counters of one circuit at its last event. */
typedef struct control_circbw_prev_t {
  uint64_t cells_read, cells_written;
  uint64_t delivered_read, delivered_written;
  uint64_t q_sent[2], q_waited_us[2]; /* [0] n side, [1] p side */
} control_circbw_prev_t;

/* Take circ's counters as the starting point (nothing reported yet). */
void control_circbw_start(control_circbw_prev_t *prev,
                          const circuit_t *circ);
/* "CIRC_BW ID=..." for what moved on circ since *prev (which is
 * updated), or NULL when nothing did. when: the TIME value. pctor_fields:
 * add the PCTOR_ fields. Newly allocated. */
char *control_circbw_event(const circuit_t *circ,
                           control_circbw_prev_t *prev, const char *when,
                           int pctor_fields);
#endif
