/* SPDX-License-Identifier: BSD-3-Clause */
/* edge.h -- one end of a circuit, where streams begin and end: the one
 * implementation shared by exits and directory caches (the relay side,
 * bound to an or_circuit_t by stream.c), the SocksPort client and conflux
 * sets (feature/client), and tools.
 *
 * An edge_t holds:
 *   - the streams (edge_stream_t), in a table hashed by stream ID;
 *   - the fixed circuit windows (tor-spec 7.3): package and deliver 1000,
 *     +100 per circuit SENDME; the digest of every 100th DATA cell we send
 *     is remembered (sendme.h) and a v1 SENDME must echo it; every 100
 *     DATA cells received we send a v1 SENDME with the digest of the cell
 *     that completed them;
 *   - the stream windows (tor-spec 7.4): 500, +50 per stream SENDME (empty
 *     body), held back while the owner still holds ten cells or more;
 *   - with congestion control (proposal 324) no stream windows and no
 *     stream SENDMEs: XON/XOFF per stream instead (cc_flow_t), a SENDME
 *     every sendme_inc cells, and a controller that decides how much may
 *     be in flight. The controller is either the edge's own (relay side:
 *     edge_set_cc) or the circuit's, read through edge_end_ops_t.cc
 *     (origin side, where core runs it per hop);
 *   - a multiplexed end (a conflux set, edge_end_ops_t.multiplexed) has no
 *     windows either: the multiplexer says when DATA may leave;
 *   - without end-to-end circuit windows (edge_set_no_circ_windows: every
 *     hop of the circuit is BackTap, whose hop-by-hop backpressure bounds
 *     the queues; doc/backtap.md) no circuit window and no circuit SENDME
 *     either way (one that arrives is a violation); the stream windows and
 *     stream SENDMEs stay, since a stream must not fill the circuit while
 *     its owner does not read;
 *   - half-closed streams (tor-spec 6.3): after we end a stream, the cells
 *     the peer sent before it saw our END are still on their way; a small
 *     record per stream ID (edge_half_set_t, at most EDGE_HALF_MAX, each
 *     EDGE_HALF_TTL_USEC) says what may still come -- the rest of the
 *     stream's deliver window of DATA, one stream SENDME per 50 cells we
 *     sent it has not acknowledged, one END (with congestion control: any
 *     DATA until the record expires). Such cells are dropped quietly;
 *     others for unknown streams are dropped, counted and logged once, and
 *     never close the circuit (tor 0.4.9 does not either).
 *
 * Two sets of callbacks plug into it:
 *   - edge_end_ops_t, from whoever owns the circuit side (stream.c for
 *     or_circuits, feature/client for its circuits and conflux sets): how
 *     to send a relay message, the digests of the last cell sent and
 *     received, the controller, the multiplexer's gate;
 *   - edge_stream_ops_t, from whoever owns a stream (the exit connection,
 *     the directory cache, the SOCKS connection, a tool): data, end,
 *     "writable again", bytes still held, CONNECTED.
 *
 * Violations (more DATA than the windows allow, a SENDME that would open a
 * window beyond its maximum or has a wrong digest, an unparseable SENDME)
 * make the handlers return -1 after a log line: the caller closes the
 * circuit. Nothing here closes circuits itself.
 */
#ifndef PCTOR_CORE_OR_EDGE_H
#define PCTOR_CORE_OR_EDGE_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/sendme.h"
#include "lib/evloop/evloop.h"

#define CIRCWINDOW_START 1000
#define CIRCWINDOW_INCREMENT 100
#define STREAMWINDOW_START 500
#define STREAMWINDOW_INCREMENT 50

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
typedef struct edge_t edge_t;
typedef struct edge_stream_t edge_stream_t;

/* ---- window arithmetic (also used by core's origin circuits) ------- */

/* A DATA cell arrived; *deliver is the circuit deliver window. Returns -1
 * when it was already empty (violation), 1 when a SENDME is due (the
 * window has been credited with inc: send a v1 SENDME with the digest of
 * this cell), else 0. */
int edge_window_delivered(int *deliver, int inc);

/* The fixed windows of one circuit end. */
typedef struct edge_circ_window_t {
  int package;
  int deliver;
  sendme_digests_t digests;  /* of every 100th DATA cell packaged */
} edge_circ_window_t;
void edge_circ_window_init(edge_circ_window_t *w);
/* A DATA cell was packaged; digest: its relay digest (recorded when the
 * package window reaches a multiple of CIRCWINDOW_INCREMENT). */
void edge_circ_window_packaged(edge_circ_window_t *w, const uint8_t *digest);
/* A circuit SENDME arrived: 0 (window credited) or -1 with *why. */
int edge_circ_window_sendme(edge_circ_window_t *w, const uint8_t *body,
                            size_t len, const char **why);

/* ---- half-closed stream records ------------------------------------ */

#define EDGE_HALF_MAX 64
#define EDGE_HALF_TTL_USEC (30 * 1000000ULL)
typedef struct edge_half_t {
  uint64_t expires_us;
  uint16_t id;
  uint16_t data_left;    /* DATA cells (fixed windows) */
  uint8_t sendmes_left;  /* stream SENDMEs (fixed windows) */
  uint8_t connected_pending; /* a CONNECTED may still come (client side) */
  uint8_t cc;            /* congestion control: DATA until expiry */
} edge_half_t;
typedef struct edge_half_set_t {
  edge_half_t *v;        /* EDGE_HALF_MAX slots, or NULL */
  unsigned n;
} edge_half_set_t;

/* Remember that we ended stream id at now_us (replacing an older record
 * for the same id; when full, the record that expires first goes). */
void edge_half_add(edge_half_set_t *hs, uint16_t id, int data_left,
                   int sendmes_left, int connected_pending, int cc,
                   uint64_t now_us);
/* A cell (relay command cmd) arrived for stream id, which has no open
 * stream. Returns 1 if id is half-closed and the cell is one the other
 * edge may still send (its allowance is used up by it; END and RESOLVED
 * end the record), 0 if not. */
int edge_half_accept(edge_half_set_t *hs, uint8_t cmd, uint16_t id,
                     uint64_t now_us);
int edge_half_contains(const edge_half_set_t *hs, uint16_t id,
                       uint64_t now_us);
void edge_half_remove(edge_half_set_t *hs, uint16_t id);
unsigned edge_half_count(const edge_half_set_t *hs, uint64_t now_us);
void edge_half_clear(edge_half_set_t *hs);

/* ---- the circuit end ----------------------------------------------- */

typedef struct edge_end_ops_t {
  /* Send a relay message we originate (towards the peer end). */
  int (*send)(void *end, uint8_t command, uint16_t stream_id,
              const uint8_t *body, uint16_t len);
  /* The relay digest of the last cell sent (sent = 1) or received. */
  const uint8_t *(*last_digest)(void *end, int sent);
  /* The controller of the circuit, or NULL (fixed windows). NULL op: the
   * edge's own controller (edge_set_cc). */
  const struct cc_t *(*cc)(void *end);
  /* 1 if the end is a multiplexed set now (no windows; NULL op: never). */
  int (*multiplexed)(void *end);
  /* The multiplexer's answer to "may a DATA cell leave now?". */
  int (*mux_can_send)(void *end);
  /* Client side (XON/XOFF DropMark checks, proposal 324 4.1.4). */
  int is_client;
  /* A multiplexed end: the most data it may hold back for reordering and
   * then deliver at once, which adds to EDGE_STREAM_MAX_PENDING (a peer
   * that honours XOFF cannot help sending that much). NULL: 0. */
  size_t (*mux_burst_bytes)(void *end);
  /* Cells queued on the circuit towards the peer, for an end without
   * circuit windows (NULL: not bounded that way; see below). */
  size_t (*queued)(void *end);
  /* The most cells `queued` may reach before DATA waits (see below);
   * NULL: EDGE_NOWIN_QUEUE_MAX. */
  size_t (*queue_limit)(void *end);
} edge_end_ops_t;

/* An end without circuit windows (edge_set_no_circ_windows) whose ops
 * give `queued` packages DATA only while fewer cells than its
 * `queue_limit` wait on the circuit towards the peer, so that what it
 * reads from its streams is bounded per circuit, not only per stream.
 * The limit follows the per-hop window of the transport the circuit
 * leaves on (BackTap's Vegas window, doc/backtap.md "Backpressure at the
 * edge"): edge_nowin_queue_limit() of it, EDGE_NOWIN_QUEUE_MAX for a hop
 * whose transport tells no window. The circuit layer calls
 * edge_wake_soon() when the queue drained to half of the limit that
 * stopped the end (circ_queue_nowin_limit(), circuit.h). */
#define EDGE_NOWIN_QUEUE_MAX CIRCWINDOW_START
/* The least limit: a hop whose window is still small (slow start, two
 * cells) keeps a few cells ready to go. */
#define EDGE_NOWIN_QUEUE_MIN 16
/* Cells that may wait to enter a hop whose window is `window` cells:
 * max(window, EDGE_NOWIN_QUEUE_MIN), at most EDGE_NOWIN_QUEUE_MAX; window
 * 0 (no window known): EDGE_NOWIN_QUEUE_MAX. */
size_t edge_nowin_queue_limit(unsigned window);

typedef struct edge_stream_ops_t {
  /* Bytes from the peer (DATA). */
  void (*on_data)(edge_stream_t *s, const uint8_t *data, size_t len,
                  void *arg);
  /* The peer ended the stream (END) or the edge is going away (reason
   * DESTROY); the stream is freed right after this returns. */
  void (*on_end)(edge_stream_t *s, uint8_t reason, void *arg);
  /* The windows reopened after edge_stream_send() was limited by them. */
  void (*on_writable)(edge_stream_t *s, void *arg);
  /* Bytes received that the owner has not passed on yet; NULL means 0. */
  size_t (*pending_bytes)(edge_stream_t *s, void *arg);
  /* CONNECTED (client side); NULL: ignored. */
  void (*on_connected)(edge_stream_t *s, const uint8_t *body, size_t len,
                       void *arg);
  /* RESOLVED (client side, the answer to our RESOLVE); the stream is
   * then freed, leaving a half-closed record (the exit sends no END
   * after RESOLVED). NULL: RESOLVED is ignored. */
  void (*on_resolved)(edge_stream_t *s, const uint8_t *body, size_t len,
                      void *arg);
} edge_stream_ops_t;

/* A new end; `end` is passed to every ops call. Never NULL. */
edge_t *edge_new(const edge_end_ops_t *ops, void *end, evloop_t *loop);
/* End every stream (on_end with reason DESTROY) and free the end (at once,
 * or when the callback loop running now returns). Accepts NULL. */
void edge_free_(edge_t *e);
#define edge_free(e)                                                    \
  do {                                                                  \
    edge_free_(e);                                                      \
    (e) = NULL;                                                         \
  } while (0)
void *edge_end(const edge_t *e);
/* Give the edge its own controller (freed with it). */
void edge_set_cc(edge_t *e, struct cc_t *cc);
/* The controller in use, or NULL. */
const struct cc_t *edge_cc(const edge_t *e);
/* Drop (on) or restore the circuit windows, keep the stream windows (see
 * above). Meaningful only without a controller or multiplexer; set it
 * before DATA flows (the circuit windows restart full). */
void edge_set_no_circ_windows(edge_t *e, int on);
int edge_has_no_circ_windows(const edge_t *e);
/* Whether the end currently runs without windows (controller or mux). */
int edge_is_windowless(const edge_t *e);

/* Numbers for logs, tests and the control port. */
typedef struct edge_stats_t {
  unsigned n_streams;
  unsigned n_half_closed;            /* records not expired */
  int package_window, deliver_window;
  uint64_t n_cells_half_closed;      /* dropped as expected */
  uint64_t n_cells_invalid;          /* unknown stream / beyond allowance */
  int no_circ_windows;               /* edge_has_no_circ_windows() */
  uint64_t n_data_sent, n_data_received;  /* DATA cells, circuit level */
  uint64_t n_circ_sendmes_sent, n_circ_sendmes_received;
} edge_stats_t;
void edge_get_stats(const edge_t *e, edge_stats_t *out);
/* The window counters of st for a close-time log line: "no end-to-end
 * windows at close: DATA cells sent 5, received 7; circuit SENDMEs sent
 * 0, received 0" (or "fixed end-to-end windows ..."). Returns buf. */
char *edge_describe_windows(const edge_stats_t *st, char *buf, size_t len);
/* Open streams (O(1)). */
unsigned edge_n_streams(const edge_t *e);
/* One stream as an observer (logs, the control port) sees it. */
typedef struct edge_stream_info_t {
  uint16_t id;
  int package_window, deliver_window;  /* fixed windows only */
  int blocked;                         /* held back by a window or XOFF */
  int xoff_received, xoff_sent;        /* congestion control */
  uint64_t bytes_delivered;            /* to the owner (congestion control) */
} edge_stream_info_t;
void edge_stream_get_info(const edge_stream_t *s, edge_stream_info_t *out);
/* Call fn for every open stream of e, oldest first. fn must not open or
 * end streams. */
void edge_foreach_stream(const edge_t *e,
                         void (*fn)(const edge_stream_t *s, void *arg),
                         void *arg);
/* What the last handler that returned -1 found wrong. */
const char *edge_last_violation(const edge_t *e);

/* ---- streams -------------------------------------------------------- */

/* A new stream with this ID (the peer's BEGIN), or NULL if the ID is 0 or
 * open. Reusing a half-closed ID drops its record. */
edge_stream_t *edge_stream_new(edge_t *e, uint16_t id,
                               const edge_stream_ops_t *ops, void *arg);
/* A new stream with an ID we choose (ours: neither open nor half-closed),
 * or NULL when none is free. */
edge_stream_t *edge_stream_new_next(edge_t *e, const edge_stream_ops_t *ops,
                                    void *arg);
edge_stream_t *edge_stream_find(const edge_t *e, uint16_t id);
/* Is id a half-closed stream of e (a record not expired)? */
int edge_is_half_closed(const edge_t *e, uint16_t id);
uint16_t edge_stream_id(const edge_stream_t *s);
edge_t *edge_stream_edge(const edge_stream_t *s);
/* Send a message on the stream (BEGIN, CONNECTED, ...). */
int edge_stream_send_msg(edge_stream_t *s, uint8_t command,
                         const uint8_t *body, uint16_t len);
/* May the stream package a DATA cell now? */
int edge_stream_can_send(const edge_stream_t *s);
/* Package up to len bytes as DATA cells, as far as the windows (or the
 * controller, XOFF, the multiplexer) allow; returns the bytes sent.
 * on_writable fires when more may be sent. */
size_t edge_stream_send(edge_stream_t *s, const uint8_t *data, size_t len);
/* The owner passed received data on: send the stream SENDMEs held back,
 * or (congestion control) the XON the drain calls for. */
void edge_stream_flushed(edge_stream_t *s);
/* Free the stream leaving a half-closed record, sending nothing (after a
 * reply that ends it by itself, such as RESOLVED). */
void edge_stream_detach(edge_stream_t *s);
/* A stream whose owner holds more than this many bytes of the peer's data
 * that it cannot pass on (edge_stream_ops_t pending_bytes) when more DATA
 * arrives is ended with reason RESOURCELIMIT: on_end(RESOURCELIMIT) tells
 * the owner to drop what it holds, then END goes to the peer. Windows
 * bound a well-behaved peer to 500 cells (~250 KB) per stream; with
 * congestion control, XOFF is sent at cc_xoff_* (~250 KB) and a peer that
 * honours it stops within a round trip. A multiplexed (conflux) end adds
 * its reordering bound (mux_burst_bytes): cells the peer sent before our
 * XOFF may wait for one on a slower leg, then arrive all at once. */
#define EDGE_STREAM_MAX_PENDING (2 * 1024 * 1024)
/* Streams ended so far for that limit, process-wide. */
uint64_t edge_streams_ended_over_pending(void);
/* Send END with reason, leave a half-closed record, free the stream. */
void edge_stream_end(edge_stream_t *s, uint8_t reason);
/* Free the stream without a record or callback (it never opened). */
void edge_stream_forget(edge_stream_t *s);
/* Sum of fn(arg) over the streams whose ops are `ops`. */
size_t edge_sum_streams(const edge_t *e, const edge_stream_ops_t *ops,
                        size_t (*fn)(void *arg));
/* Move every stream and half-closed record of from to to. */
void edge_move_streams(edge_t *from, edge_t *to);
/* Give on_writable to the streams that were held back and may send now
 * (a window reopened elsewhere, e.g. a SENDME on a multiplexed leg). */
void edge_wake(edge_t *e);
/* edge_wake() from the event loop, after the current callback (safe from
 * inside the scheduler). */
void edge_wake_soon(edge_t *e);

/* ---- cells from the peer -------------------------------------------- */

/* Circuit-level accounting of an arriving DATA cell (deliver window,
 * SENDME due): done on the circuit the cell arrived on, before the stream
 * is looked up (a DATA for a half-closed stream counts too). Returns -1 on
 * a violation. Not for an origin end whose controller core runs. */
int edge_data_arrived(edge_t *e);
/* A circuit SENDME (stream ID 0) for the edge's own windows or
 * controller: checked and counted. Returns -1 on a violation, else 0; the
 * caller then wakes the streams (edge_wake) of the edge they live on.
 * With a controller core runs (edge_end_ops_t.cc) there is nothing to
 * count here. queue_len: cells queued on the circuit towards the peer
 * (congestion control's blocked signal). */
int edge_circ_sendme(edge_t *e, const uint8_t *body, uint16_t len,
                     uint64_t queue_len);
/* A stream message (DATA after edge_data_arrived, END, SENDME, XON, XOFF,
 * CONNECTED) for stream id. Returns -1 on a violation, else 0. */
int edge_handle_stream_msg(edge_t *e, uint8_t command, uint16_t id,
                           const uint8_t *body, uint16_t len);

/* ---- sending accounting ---------------------------------------------- */

/* A DATA cell left on this edge's circuit (after encryption): the edge's
 * own controller counts it and records the digest its SENDME must echo. */
void edge_note_data_sent(edge_t *e, const uint8_t *digest);
#endif
