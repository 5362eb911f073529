/* SPDX-License-Identifier: BSD-3-Clause */
/* btcirc.h -- circuits carried by BackTap (feature/backtap, the protocol
 * engine) over the datagram links (feature/dgram): the integration of
 * doc/backtap.md, steps 1-3 and 5.
 *
 * One backtap_link_t per authenticated datagram link, made when the link
 * comes up and freed when it goes down. BackTap's CELL and FEEDBACK
 * records travel as dgram records 0x21/0x22. A circuit hop over BackTap is
 * a carried channel (core/or/channel.h) holding that one circuit: the
 * circuit layer sees an ordinary open channel to the peer relay; its cells
 * go to backtap_flow_send() when the flow's window has room (the scheduler
 * asks can_send), and cells the peer sends come up through the channel in
 * order. FWD, the backpressure: a delivered cell carries a release tag
 * (packed_cell_t.rel_tag); when the cell leaves this relay (written towards
 * the next hop, consumed here or dropped) the release hook FWDs it, in
 * sequence order (a 1024-bit ring per flow puts out-of-order releases back
 * in order).
 *
 * Who uses it: an extension of an or_circuit to a relay whose datagram link
 * is up, authenticated with the identities the EXTEND2 names, when this
 * relay runs with CircuitTransport backtap (btcirc_set_outgoing()); CREATE2
 * is then the SYN cell of the flow. Any other extension uses TLS as before
 * (a relay without DatagramPort, such as tor, or a link not up yet). A
 * relay with a DatagramPort always accepts BackTap circuits from a peer.
 * End-to-end SENDMEs stay (they do not hurt BackTap; removing them needs
 * every hop to be BackTap, see doc/backtap.md: not supported yet).
 *
 * Flows are found through a tag (hmap tag -> btcirc_flow_t), never through
 * a pointer the engine or a cell keeps, so that a closed circuit's late
 * callbacks and late cell releases find nothing instead of freed memory.
 */
#ifndef PCTOR_FEATURE_BTCIRC_BTCIRC_H
#define PCTOR_FEATURE_BTCIRC_BTCIRC_H
#include <stdint.h>

#include "feature/backtap/backtap.h"
#include "feature/dgram/dgram.h"
#include "feature/dgram/dgram_carry.h"
#include "lib/evloop/evloop.h"

typedef struct btcirc_t btcirc_t;

/* Attach to d (record handlers, link observer, the packed-cell release
 * hook, the circuit carrier provider). NULL with a log line if one of
 * these hooks is taken. */
btcirc_t *btcirc_new(evloop_t *loop, dgram_t *d,
                     const backtap_params_t *params);
void btcirc_free_(btcirc_t *bc);
#define btcirc_free(x) do { btcirc_free_(x); (x) = NULL; } while (0)
/* Whether extensions to pctor relays with a datagram link use BackTap
 * (CircuitTransport backtap). */
void btcirc_set_outgoing(btcirc_t *bc, int on);

typedef struct btcirc_stats_t {
  dgram_carry_stats_t carry;      /* links, hops (BackTap flows),
                                   * extensions, hops from peers, direct
                                   * cells (dgram_carry.h) */
  uint64_t flow_refused;          /* SYNs refused (limits) */
  uint64_t mem_bytes;             /* what the engines hold now */
  backtap_stats_t bt;             /* engines' totals, live and gone */
} btcirc_stats_t;
void btcirc_get_stats(const btcirc_t *bc, btcirc_stats_t *out);
/* The process's instance, or NULL (for MetricsPort). */
const btcirc_t *btcirc_instance(void);
#endif
