/* SPDX-License-Identifier: BSD-3-Clause */
/* dtcp.h -- circuits over TCP-over-DTLS (Reardon and Goldberg 2009, seed
 * paper 001): each circuit hop between two relays is its own user-level
 * TCP connection (lib/utcp, lwIP) whose segments travel as records
 * (DGRAM_REC_TCP_SEGMENT) of the one DTLS session between the two relays
 * (feature/dgram). Per-circuit congestion control and loss recovery, no
 * head-of-line blocking across circuits, one UDP socket per relay and no
 * kernel state per circuit; DTLS protects the link (no IPsec).
 *
 * A hop is a carried channel (core/or/channel.h), as with BackTap
 * (feature/btcirc): the circuit layer sees an ordinary open channel to the
 * peer; the 514-byte cells it writes go into the TCP connection (the
 * scheduler asks can_send: room in the TCP send buffer), and bytes that
 * arrive are cut back into cells and handed up. The TCP receive window
 * reopens by one cell when that cell has *left* this relay (a release tag
 * on the packed cell, class 1, core/or/cell_queue.h), so a circuit that
 * cannot move on stops its previous hop within one window (64 KiB):
 * backpressure hop by hop, as the paper's per-circuit TCP gives.
 *
 * Who uses it: an extension of an or_circuit to a relay with an
 * authenticated datagram link (identities as the EXTEND2 names), when this
 * relay runs with CircuitTransport dtls-tcp (dtcp_set_outgoing()); the
 * CREATE2 is the first cell on the new connection. Any other extension uses
 * TLS (tor relays, relays without DatagramPort, links not up yet), with a
 * notice saying which. A relay with a DatagramPort in a build with lwIP
 * accepts TCP-over-DTLS hops from its peers. End-to-end SENDMEs stay.
 *
 * A hop the peer opens gets its channel with its first cell (CREATE2):
 * core closes a carried channel that has no circuit within a second,
 * sooner than TCP recovers a lost first segment. Until then the hop is a
 * connection only (at most DTCP_MAX_HOPS_PER_LINK per link), reset if
 * the cell has not come within DTCP_FIRST_CELL_TIMEOUT_S.
 *
 * Hops are found through a tag (hmap), never through a pointer a cell or
 * a callback keeps, so that a closed circuit's late releases find nothing.
 * Closing: the channel closes when its circuit has gone (after its DESTROY
 * was written): the connection is closed gracefully (queued cells, then
 * FIN; utcp resets instead if much is still queued). A connection the peer
 * closes or resets closes its channel, and so its circuit. A datagram link
 * going down takes its connections and circuits with it.
 */
#ifndef PCTOR_FEATURE_DTCP_DTCP_H
#define PCTOR_FEATURE_DTCP_DTCP_H
#include <stdint.h>

#include "feature/dgram/dgram.h"
#include "feature/dgram/dgram_carry.h"
#include "lib/evloop/evloop.h"
#include "lib/utcp/utcp.h"

typedef struct dtcp_t dtcp_t;

/* Hops one peer may hold open over one link (connections beyond are
 * refused: reset); as many as circuits on one TLS channel. */
#define DTCP_MAX_HOPS_PER_LINK 16384

/* Attach to d (the TCP segment record handler, a link observer, the class
 * 1 release hook, a circuit carrier provider) and start the process's
 * user-level TCP stack. NULL with a log line without lwIP or if a hook is
 * taken. */
dtcp_t *dtcp_new(evloop_t *loop, dgram_t *d);
void dtcp_free_(dtcp_t *t);
#define dtcp_free(x) do { dtcp_free_(x); (x) = NULL; } while (0)
/* Whether our extensions to relays with a datagram link use TCP-over-DTLS
 * (CircuitTransport dtls-tcp). */
void dtcp_set_outgoing(dtcp_t *t, int on);
/* A connection a peer opens is reset if its first cell has not come
 * within this long (default DTCP_FIRST_CELL_TIMEOUT_S; 0 means 1 s). */
#define DTCP_FIRST_CELL_TIMEOUT_S 30
void dtcp_set_first_cell_timeout(dtcp_t *t, unsigned sec);
/* The user-level TCP stack (tests open connections of their own). */
utcp_t *dtcp_stack_for_testing(dtcp_t *t);

typedef struct dtcp_stats_t {
  dgram_carry_stats_t carry;      /* links, hops, extensions, hops from
                                   * peers and refused, direct cells
                                   * (dgram_carry.h) */
  uint64_t cells_sent, cells_received;
  uint64_t conn_failed;           /* connections reset or timed out */
  uint64_t first_cell_timeouts;   /* peers' connections reset: no cell */
  uint64_t sndbuf_full;           /* times a hop's cell found lwIP's send
                                   * buffer full (the hop then waits) */
  uint64_t sndbuf_full_us;        /* ... and the time until it had room,
                                   * summed over hops (ended waits) */
  utcp_stats_t tcp;               /* the stack */
} dtcp_stats_t;
void dtcp_get_stats(const dtcp_t *t, dtcp_stats_t *out);
const dtcp_t *dtcp_instance(void);
#endif
