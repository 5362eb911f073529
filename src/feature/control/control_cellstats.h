/* SPDX-License-Identifier: BSD-3-Clause */
/* control_cellstats.h -- the text of tor's testing events CONN_BW
 * (control-spec 4.1.24) and CELL_STATS (4.1.26).
 *
 * Both are sent once a second, and only while TestingEnableConnBwEvent /
 * TestingEnableCellStatsEvent is set (options allowed only with
 * TestingTorNetwork, as in tor). core counts: channel_take_bytes() gives
 * a channel's bytes since the previous tick, circ_queue_take_cmd_stats()
 * a circuit queue's cells per command since then; control.c walks the
 * channels and circuits each tick and this file only formats, so the
 * unit tests can feed it counts.
 *
 *   CONN_BW ID=ConnID TYPE=OR READ=n WRITTEN=n
 *       bytes one OR connection (a channel, ID as in ORCONN) read and
 *       wrote in the last second; only connections that moved bytes.
 *   CELL_STATS [ID=CircuitID]
 *       [InboundQueue=CircID InboundConn=ConnID [InboundAdded=C]
 *        [InboundRemoved=C InboundTime=T]]
 *       [OutboundQueue=CircID OutboundConn=ConnID [OutboundAdded=C]
 *        [OutboundRemoved=C OutboundTime=T]]
 *       ID only for circuits this process originates; Inbound: the queue
 *       of cells towards the circuit's previous hop (relayed circuits),
 *       Outbound: towards the next hop. C is "command:count,..." (tor's
 *       lower-case cell command names, commands with a count only), T
 *       "command:msec,..." the summed milliseconds the removed cells
 *       waited in the queue. A circuit whose queues saw no cell in the
 *       second gets no event; a closing circuit gets one for its last
 *       (partial) second, so that its counts add up (tor drops those).
 */
#ifndef PCTOR_FEATURE_CONTROL_CONTROL_CELLSTATS_H
#define PCTOR_FEATURE_CONTROL_CONTROL_CELLSTATS_H
#include <stdint.h>

#include "core/or/channel.h"

/* "CONN_BW ..." (newly allocated), or NULL when nothing moved. */
char *control_connbw_event(uint64_t conn_id, const char *type, uint64_t rd,
                           uint64_t wr);

/* One direction of a circuit for CELL_STATS. */
typedef struct control_cellstats_side_t {
  int present;             /* the circuit has a channel on this side */
  uint32_t circ_id;        /* the circuit's id on that channel */
  uint64_t conn_id;        /* the channel's global id */
  circ_queue_cmd_stats_t counts;
} control_cellstats_side_t;

/* "CELL_STATS ..." (newly allocated), or NULL when neither side counted
 * a cell. has_id: an origin circuit, with its global id circ_gid. */
char *control_cellstats_event(int has_id, uint64_t circ_gid,
                              const control_cellstats_side_t *inbound,
                              const control_cellstats_side_t *outbound);
#endif
