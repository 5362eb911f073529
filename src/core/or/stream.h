/* SPDX-License-Identifier: BSD-3-Clause */
/* stream.h -- streams that end at this relay (directory requests now, exit
 * connections later) and the flow control that goes with them.
 *
 * A relay_stream_t belongs to an or_circuit_t and is identified by its
 * stream ID. Features create streams from their BEGIN/BEGIN_DIR handlers and
 * receive the stream's data through relay_stream_ops_t; core does the
 * window bookkeeping (tor-spec 7.3, 7.4, proposal 289):
 *   - circuit package window 1000, +100 per circuit SENDME; the digest of
 *     every 100th DATA cell we send is remembered and an authenticated
 *     (v1) SENDME must carry it, else the circuit is closed;
 *   - circuit deliver window 1000: after every 100 DATA cells received we
 *     send a v1 SENDME with the digest of the cell that triggered it;
 *   - stream windows 500/50, SENDMEs with an empty body.
 * A peer that sends more DATA than the windows allow, or SENDMEs that would
 * open a window beyond its maximum, gets the circuit closed with a log line.
 *
 * A circuit that negotiated congestion control (or_circuit_t
 * cc_sendme_inc, proposal 324) works differently:
 *   - the circuit may have cwnd - inflight DATA cells in flight (the
 *     controller, congestion_control.h); a circuit SENDME is expected
 *     every sendme_inc cells and must echo the digest of the cell that
 *     triggered it; its arrival time gives the RTT;
 *   - we send a v1 SENDME after every sendme_inc DATA cells received;
 *   - there are no stream windows and no stream SENDMEs (one from the
 *     client closes the circuit, as tor does); instead, when the owner's
 *     buffer for a stream (pending_bytes) exceeds cc_xoff_exit we send
 *     XOFF, and XON once it drained (relay_stream_flushed), with the
 *     measured drain rate; XOFF from the client stops a stream's sending
 *     until its XON (on_writable then fires).
 *
 * On a leg of a multiplexed set (or_circuit_t.mux) streams live on the
 * set's home circuit; they package DATA while the multiplexer says some
 * leg can take it, each cell counting against the window of the leg it
 * leaves on, and a SENDME on any leg wakes them.
 *
 * Half-closed streams (tor-spec 6.3): after we send END (or a reply that
 * ends the stream, such as RESOLVED), cells the other edge sent before it
 * saw our END are still on their way. The circuit keeps a small record of
 * such stream IDs (stream_half_set_t, at most STREAM_HALF_MAX per circuit,
 * each for STREAM_HALF_TTL_USEC) with what the peer may still send: as
 * many DATA cells as the stream's deliver window had left, as many stream
 * SENDMEs as our unacknowledged DATA warrants, one END; with congestion
 * control (no stream windows) any DATA until the record expires, as
 * proposal 324 asks. Those cells are dropped quietly; DATA still counts
 * against the circuit's deliver window (stream_data_arrived runs before
 * the stream lookup), so circuit SENDMEs stay right. Cells beyond that, or
 * for IDs never used, are dropped too and counted (n_stream_cells_invalid)
 * with a log line, but do not close the circuit: tor-spec 6.3 allows
 * killing it, but tor 0.4.9 does not (it only reports such cells, for the
 * vanguards add-on), and neither do we.
 */
#ifndef PCTOR_CORE_OR_STREAM_H
#define PCTOR_CORE_OR_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/circuit.h"
#include "lib/container/dlist.h"

#define CIRCWINDOW_START 1000
#define CIRCWINDOW_INCREMENT 100
#define STREAMWINDOW_START 500
#define STREAMWINDOW_INCREMENT 50
/* Digests remembered for authenticated SENDMEs: one per increment. */
#define SENDME_DIGESTS_MAX (CIRCWINDOW_START / CIRCWINDOW_INCREMENT)

/* RELAY_END reasons (tor-spec 6.3). */
enum {
  END_STREAM_REASON_MISC = 1,
  END_STREAM_REASON_RESOLVEFAILED = 2,
  END_STREAM_REASON_CONNECTREFUSED = 3,
  END_STREAM_REASON_EXITPOLICY = 4,
  END_STREAM_REASON_DESTROY = 5,
  END_STREAM_REASON_DONE = 6,
  END_STREAM_REASON_TIMEOUT = 7,
  END_STREAM_REASON_NOROUTE = 8,
  END_STREAM_REASON_HIBERNATING = 9,
  END_STREAM_REASON_INTERNAL = 10,
  END_STREAM_REASON_RESOURCELIMIT = 11,
  END_STREAM_REASON_CONNRESET = 12,
  END_STREAM_REASON_TORPROTOCOL = 13,
  END_STREAM_REASON_NOTDIRECTORY = 14,
};

struct cc_t;

/* Half-closed stream IDs of one circuit (see above). The table is
 * allocated on the first add; lookups are linear, and only made for cells
 * whose stream ID matches no open stream. */
#define STREAM_HALF_MAX 64
#define STREAM_HALF_TTL_USEC (30 * 1000000ULL)
typedef struct stream_half_t {
  uint64_t expires_us;
  uint16_t id;
  uint16_t data_left;    /* DATA cells (fixed windows) */
  uint8_t sendmes_left;  /* stream SENDMEs (fixed windows) */
  uint8_t connected_pending; /* a CONNECTED may still come (client side) */
  uint8_t cc;            /* congestion control: DATA until expiry */
} stream_half_t;
typedef struct stream_half_set_t {
  stream_half_t *v;      /* STREAM_HALF_MAX slots, or NULL */
  unsigned n;
} stream_half_set_t;

/* Remember that we ended stream id at now_us (replacing an older record
 * for the same id; when full, the record that expires first goes). */
void stream_half_add(stream_half_set_t *hs, uint16_t id, int data_left,
                     int sendmes_left, int connected_pending, int cc,
                     uint64_t now_us);
/* A cell (relay command cmd) arrived for stream id, which has no open
 * stream. Returns 1 if id is half-closed and the cell is one the other
 * edge may still send (its allowance is used up by it; END and RESOLVED
 * end the record), 0 if not (unknown id, expired, or beyond the
 * allowance). */
int stream_half_accept(stream_half_set_t *hs, uint8_t cmd, uint16_t id,
                       uint64_t now_us);
int stream_half_contains(const stream_half_set_t *hs, uint16_t id,
                         uint64_t now_us);
void stream_half_remove(stream_half_set_t *hs, uint16_t id);
/* Records not yet expired at now_us. */
unsigned stream_half_count(const stream_half_set_t *hs, uint64_t now_us);
void stream_half_clear(stream_half_set_t *hs);

/* Flow-control state of the edge end of a circuit (kept in or_circuit_t). */
typedef struct circ_edge_t {
  int package_window;         /* fixed windows only */
  int deliver_window;
  uint8_t sendme_digests[SENDME_DIGESTS_MAX][20];
  int n_sendme_digests;
  dlist_t streams;            /* relay_stream_t.node */
  struct cc_t *cc;            /* congestion control, or NULL */
  stream_half_set_t half;     /* streams we ended (half-closed) */
  /* Cells for half-closed streams dropped as expected, and cells for
   * unknown streams (or beyond a half-closed stream's allowance) dropped
   * as invalid. */
  uint64_t n_stream_cells_half_closed;
  uint64_t n_stream_cells_invalid;
} circ_edge_t;

typedef struct relay_stream_t relay_stream_t;

typedef struct relay_stream_ops_t {
  /* Bytes from the client (DATA). */
  void (*on_data)(relay_stream_t *s, const uint8_t *data, size_t len,
                  void *arg);
  /* The client ended the stream or the circuit is closing; the stream is
   * freed right after this returns. */
  void (*on_end)(relay_stream_t *s, uint8_t reason, void *arg);
  /* The windows reopened after relay_stream_send() was limited by them. */
  void (*on_writable)(relay_stream_t *s, void *arg);
  /* Bytes received from the client that the owner has not passed on yet
   * (e.g. still in a socket buffer). Stream SENDMEs are held back while
   * this is ten cells or more (tor-spec 7.4); NULL means always 0. */
  size_t (*pending_bytes)(relay_stream_t *s, void *arg);
} relay_stream_ops_t;

void circ_edge_init(circ_edge_t *e);
/* End every stream (the circuit is going away). */
void circ_edge_clear(or_circuit_t *circ);

/* A new stream with this ID on circ, or NULL if the ID is 0 or in use. */
relay_stream_t *relay_stream_new(or_circuit_t *circ, uint16_t stream_id,
                                 const relay_stream_ops_t *ops, void *arg);
relay_stream_t *relay_stream_find(or_circuit_t *circ, uint16_t stream_id);
uint16_t relay_stream_id(const relay_stream_t *s);
or_circuit_t *relay_stream_circuit(relay_stream_t *s);
/* Send RELAY_CONNECTED with an optional body. */
int relay_stream_send_connected(relay_stream_t *s, const uint8_t *body,
                                uint16_t len);
/* Package up to len bytes as DATA cells, as far as the circuit and stream
 * windows allow; returns the number of bytes sent (on_writable fires when
 * more may be sent). */
size_t relay_stream_send(relay_stream_t *s, const uint8_t *data, size_t len);
/* The owner passed received data on (its buffer drained): send the stream
 * SENDMEs that were held back. */
void relay_stream_flushed(relay_stream_t *s);
/* Free the stream without sending anything (after a reply that ends it by
 * itself, such as RESOLVED). */
void relay_stream_detach(relay_stream_t *s);
/* Send RELAY_END with reason and free the stream. */
void relay_stream_end(relay_stream_t *s, uint8_t reason);
/* The sum of fn(arg) over circ's streams whose ops are `ops` (memory
 * accounting by the owner of those streams). */
size_t circ_edge_sum_streams(or_circuit_t *circ,
                             const relay_stream_ops_t *ops,
                             size_t (*fn)(void *arg));
/* Counters of the cells dropped for streams that are not open (see
 * circ_edge_t); zero when circ has no edge state. */
void circ_edge_get_dropped(const or_circuit_t *circ, uint64_t *half_closed,
                           uint64_t *invalid);

/* Called by relay.c for cells addressed to us. Return -1 when the circuit
 * must be closed (protocol violation), else 0. stream_handle_data() is
 * stream_data_arrived() (the circuit-level accounting: deliver window,
 * SENDMEs) followed by stream_deliver_data() (to the stream); a
 * multiplexed set does the first on the leg the cell came on and the
 * second, in order, on its stream home. */
int stream_handle_data(or_circuit_t *circ, uint16_t stream_id,
                       const uint8_t *body, uint16_t len);
int stream_data_arrived(or_circuit_t *circ);
int stream_deliver_data(or_circuit_t *circ, uint16_t stream_id,
                        const uint8_t *body, uint16_t len);
/* circuit.c: a DATA cell was just encrypted and queued on circ: with
 * congestion control it counts against the window, and every sendme_inc-th
 * records the digest its SENDME must echo. */
void circ_edge_note_data_sent(or_circuit_t *circ);
/* Move every stream of `from` to `to` (a multiplexed set whose stream home
 * closes before its other legs). */
void circ_edge_move_streams(or_circuit_t *from, or_circuit_t *to);
int stream_handle_end(or_circuit_t *circ, uint16_t stream_id,
                      const uint8_t *body, uint16_t len);
int stream_handle_sendme(or_circuit_t *circ, uint16_t stream_id,
                         const uint8_t *body, uint16_t len);
/* XOFF / XON from the client (congestion control only; ignored with a log
 * line otherwise, and when malformed, as tor does). */
int stream_handle_xoff(or_circuit_t *circ, uint16_t stream_id,
                       const uint8_t *body, uint16_t len);
int stream_handle_xon(or_circuit_t *circ, uint16_t stream_id,
                      const uint8_t *body, uint16_t len);
/* The circuit's controller, or NULL (fixed windows, or no stream yet). */
const struct cc_t *circ_edge_cc(const or_circuit_t *circ);
#endif
