/* SPDX-License-Identifier: BSD-3-Clause */
/* circuit.h -- circuits: relayed ones (or_circuit_t) and ones we originate
 * (origin_circuit_t), their life cycle and their two cell queues.
 *
 * Directions: "forward"/"n" is away from the origin (towards the exit),
 * "backward"/"p" is towards the origin. An or_circuit_t has a p side (the
 * channel the CREATE came from) and, once extended, an n side. An
 * origin_circuit_t has only an n side and one crypto state per hop.
 *
 * Closing: circuit_mark_for_close() sends DESTROY to both neighbours
 * (reason DESTROYED when we are only propagating a DESTROY, as tor-spec 5.4
 * asks), removes the circuit from its channels at once, and frees it from a
 * deferred callback, so callers up the stack may still look at it.
 */
#ifndef PCTOR_CORE_OR_CIRCUIT_H
#define PCTOR_CORE_OR_CIRCUIT_H
#include <stdint.h>
#include <time.h>
#include "core/crypto/relay_crypto.h"
#include "core/or/channel.h"
#include "core/or/dos.h"
#include "core/proto/create.h"
#include "lib/address/address.h"

#define CIRCUIT_MAX_HOPS 8
/* RELAY_EARLY cells a circuit may carry (tor-spec 5.6). */
#define CIRCUIT_MAX_RELAY_EARLY 8
/* A circuit whose queue of relayed cells towards one channel reaches this
 * many cells is closed (tor's default for the consensus parameters
 * circ_max_cell_queue_size and circ_max_cell_queue_size_out, and their
 * bounds): a well-behaved peer keeps about a window in flight. */
#define CIRCUIT_MAX_QUEUED_CELLS_DEFAULT 2500
#define CIRCUIT_MAX_QUEUED_CELLS_MIN 50

typedef enum { CIRC_KIND_OR = 1, CIRC_KIND_ORIGIN = 2 } circuit_kind_t;

/* Where to extend to: enough to open a channel and do a handshake. */
typedef struct extend_target_t {
  pc_addr_t addr;
  uint8_t rsa_id[20];
  int has_ed_id;
  uint8_t ed_id[32];
  uint8_t ntor_key[32];
  uint16_t handshake;  /* HTYPE_NTOR, HTYPE_NTOR_V3, or CIRC_HTYPE_FAST */
  /* ntor v3 only: ask this hop for congestion control (proposal 324 10;
   * only for the exit, when its "FlowCtrl" lists 2 and cc_alg != 0). */
  uint8_t cc_request;
  /* Ask this hop (the exit; it must speak ntor v3, Relay=4) to run the
   * circuit without end-to-end circuit windows (doc/backtap.md,
   * "End-to-end windows"). Sent, in an ntor v3 handshake whatever
   * `handshake` says, only when the circuit's first hop has hop-by-hop
   * backpressure (channel_path_backpressure); never to the first hop. */
  uint8_t nowin_request;
} extend_target_t;
#define CIRC_HTYPE_FAST 0xfffe /* CREATE_FAST: first hop only */

typedef struct circuit_t {
  /* Fields ordered to leave no padding (every relayed circuit has one):
   * the kind and the flags share the first word with n_circ_id. */
  unsigned kind : 2;             /* a circuit_kind_t */
  /* An extension waiting for n_chan to open. */
  unsigned n_pending : 1;
  unsigned marked_for_close : 1;
  /* Closed by the MaxMemInQueues handler: stream owners drop what they
   * buffer instead of flushing it. */
  unsigned oom_closed : 1;
  uint32_t n_circ_id;
  uint64_t gid;
  channel_t *n_chan;
  circ_queue_t n_queue;          /* cells to send on n_chan */
  cell_t *n_pending_create;
  dlist_node_t pending_node;
  uint64_t created_us;
  uint64_t cells_forward, cells_backward;
  dlist_node_t all_node;
} circuit_t;

typedef struct or_circuit_t {
  /* Fields ordered to leave no padding (every relayed circuit has one);
   * doc/benchmarks.md, "Where an idle circuit's bytes go". */
  circuit_t base;
  channel_t *p_chan;
  uint32_t p_circ_id;
  /* RELAY_EARLY cells seen (the circuit closes at the ninth). */
  uint8_t relay_early_seen;
  /* Congestion control negotiated in the ntor v3 handshake: its SENDME
   * increment, 0 for the fixed windows. The controller itself lives in
   * the edge state, made with the first stream. */
  uint8_t cc_sendme_inc;
  unsigned created_fast : 1;     /* we are certainly the first hop */
  /* An EXTEND2 in progress: the reply goes back as EXTENDED2. */
  unsigned extend_pending : 1;
  /* No end-to-end circuit windows (negotiated in ntor v3 because every
   * hop from the origin is BackTap): the edge sends and expects no circuit
   * SENDMEs; stream windows stay. */
  unsigned nowin : 1;
  circ_queue_t p_queue;          /* cells to send on p_chan */
  /* DoSStreamCreation*: the BEGIN/RESOLVE rate of this circuit; NULL
   * until the first BEGIN or RESOLVE (only exits need it; freed with the
   * circuit). */
  dos_stream_state_t *stream_dos;
  /* Streams ending here and their flow control (edge.h, bound to the
   * circuit by stream.h); NULL until the first stream. */
  struct edge_t *edge;
  /* Multiplexing (see circuit_mux_ops_t): the state of the feature that
   * made this circuit one leg of a set, or NULL (ordinary circuit). */
  void *mux;
  /* The hop's relay crypto, embedded (set up by command.c when the
   * handshake is answered; all zero before). */
  relay_crypto_t crypto;
} or_circuit_t;

typedef struct origin_circuit_t origin_circuit_t;

/* Callbacks for whoever built an origin circuit (client code, tools). */
typedef struct origin_circuit_ops_t {
  /* The circuit now has n_hops_open hops (after CREATED2/EXTENDED2). */
  void (*on_extended)(origin_circuit_t *circ, int n_hops_open, void *arg);
  /* A relay cell from hop `hop` (0-based) reached us. */
  void (*on_relay)(origin_circuit_t *circ, int hop, uint8_t command,
                   uint16_t stream_id, const uint8_t *body, uint16_t len,
                   void *arg);
  /* The circuit is gone (reason: DESTROY_REASON_*); circ is still valid
   * during the call, not after. */
  void (*on_closed)(origin_circuit_t *circ, int reason, const char *why,
                    void *arg);
} origin_circuit_ops_t;

typedef struct origin_hop_cc_t origin_hop_cc_t;

typedef struct origin_hop_t {
  extend_target_t target;
  relay_crypto_t *crypto;
  void *hs_state;                /* handshake state while pending */
  uint16_t hs_type;
  /* Congestion control with this hop (negotiated in its handshake), or
   * NULL: fixed windows, kept by whoever sends data. */
  origin_hop_cc_t *cc;
  /* The hop agreed to drop the end-to-end circuit windows. */
  unsigned nowin : 1;
} origin_hop_t;

struct origin_circuit_t {
  circuit_t base;
  int n_hops;                    /* hops requested so far */
  int n_hops_open;
  origin_hop_t hops[CIRCUIT_MAX_HOPS];
  unsigned relay_early_sent;
  /* Bytes of relay-cell bodies sent (written) and received (read) at this
   * end: with cells_forward/backward, what the ControlPort's CIRC_BW
   * events report as DELIVERED and OVERHEAD. */
  uint64_t delivered_written, delivered_read;
  const origin_circuit_ops_t *ops;
  void *ops_arg;
};

static inline or_circuit_t *
TO_OR_CIRCUIT(circuit_t *c)
{
  return c->kind == CIRC_KIND_OR ? (or_circuit_t *)c : NULL;
}
static inline origin_circuit_t *
TO_ORIGIN_CIRCUIT(circuit_t *c)
{
  return c->kind == CIRC_KIND_ORIGIN ? (origin_circuit_t *)c : NULL;
}

void circuits_init(void);
/* Read-only walk (for controllers and statistics): fn is called for every
 * circuit of kind not marked for close; fn must not open or close
 * circuits. */
typedef void (*circuit_visit_fn)(circuit_t *circ, void *arg);
void circuits_foreach(circuit_kind_t kind, circuit_visit_fn fn, void *arg);
void circuits_shutdown(void);
/* Numbers for statistics and tests. */
unsigned circuits_count(circuit_kind_t kind);

/* Channel events: circuits_init() registers these (and command.c's cell
 * dispatch) as the channels' upcalls (channel.h); circuits_shutdown()
 * unregisters them. */
void circuits_channel_opened(channel_t *chan, int ok);
void circuits_channel_closed(channel_t *chan);

or_circuit_t *or_circuit_new(channel_t *p_chan, uint32_t p_circ_id);
void circuit_mark_for_close(circuit_t *circ, int reason);
/* Propagating a DESTROY that arrived from from_chan. */
void circuit_destroy_received(circuit_t *circ, channel_t *from_chan);

/* Extend circ (relay side, or origin side) to the target by sending
 * create (a CREATE2/CREATE_FAST cell without circ id) on a suitable
 * channel, opening one if needed. Returns 0 or -1 (circuit not closed). */
int circuit_extend_to(circuit_t *circ, const pc_addr_t *addr,
                      const uint8_t *rsa_id, const uint8_t *ed_id,
                      const cell_t *create);

/* Queue a relayed cell towards the origin on an or_circuit / towards the
 * exit (takes ownership). Returns -1 if the circuit was closed: its queue
 * limit was hit, or the memory limit closed it. Over the memory limit these
 * close circuits (circ or others) before returning, so call them only
 * where that is safe -- relaying, not from stream code, which sends with
 * or_circuit_send_relay() instead. */
int or_circuit_queue_backward(or_circuit_t *circ, packed_cell_t *pc);
int circuit_queue_forward(circuit_t *circ, packed_cell_t *pc);

/* ---- memory limit (tor's MaxMemInQueues) ----
 *
 * The memory counted is the process-wide budget (lib/malloc/memacct):
 * queued cells (cell_queues_total_bytes(), cell_queue.h), connection
 * buffers, exit stream buffers, stream records, conflux reordering queues,
 * directory answers in flight and MeasureMe state, each added by its
 * holder as it allocates. Cells held for a circuit whose CREATE2
 * handshake is still on a worker (core/or/cpuworker.h) are closed like a
 * circuit: the handshake is abandoned, DESTROY(RESOURCELIMIT) sent, the
 * cells freed. Whenever that total goes above the limit, we
 * are "out of memory": circuits are closed with
 * reason RESOURCELIMIT (the DESTROY towards the client carries it; the one
 * away from it carries NONE, as for every close, tor-spec 5.4), the one
 * whose oldest queued cell has waited longest first (equal ages: the one
 * holding more memory first), until the memory held is at most
 * CIRCUITS_OOM_RETAIN_PCT percent of the limit. One notice line per event
 * says how many circuits were closed, how much memory that freed and what
 * the limit is. Circuits holding nothing are never closed; if no circuit
 * holds anything (cells kept outside circuit queues), a rate-limited
 * warning is logged and the next scan waits for 1/16 of the limit more.
 *
 * The check is one comparison per allocation. For cells relayed from a
 * peer the circuits are closed at once (the caller only queues and
 * returns); for cells we originate (stream data, SENDMEs, EXTENDED2...)
 * closing is deferred to an event-loop callback in the same iteration,
 * because stream code up the stack still uses its circuit and streams. */
#define CIRCUITS_OOM_RETAIN_PCT 90
/* Set the limit in bytes; 0 (the initial value) means no limit. May be
 * called before or after circuits_init() and at any time (on reload). */
void circuits_set_max_mem_in_queues(uint64_t bytes);
/* The queue limits (above) in cells, towards the client and towards the
 * exit; values below CIRCUIT_MAX_QUEUED_CELLS_MIN are raised to it. Kept
 * across circuits_init(); the defaults until called. */
void circuits_set_max_queued_cells(int32_t towards_client,
                                   int32_t towards_exit);
void circuits_get_max_queued_cells(int32_t *towards_client,
                                   int32_t *towards_exit);
uint64_t circuits_max_mem_in_queues(void);
/* Tor's default for MaxMemInQueues 0 ("pick one for me"), computed from
 * the physical memory (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE): 3/4 of it,
 * or 2/5 of it when there are 8 GB or more (64-bit builds only); then at
 * least 256 MB and at most 8 GB (2 GB on 32-bit builds). When the memory
 * size is unknown: 8 GB (1 GB on 32-bit builds). */
uint64_t circuits_default_max_mem(void);
/* The same rule for a given amount of RAM in bytes (0 = unknown). */
uint64_t circuits_max_mem_for_ram(uint64_t ram_bytes);
/* Optional: bytes a circuit holds outside its cell queues (data buffered
 * for its streams, a multiplexer's reordering queue). They are added to
 * what closing it frees, which orders nothing but says when enough has
 * been closed; the trigger and the usage are the budget's total (the
 * holders also count these bytes in lib/malloc/memacct).
 * Up to CIRCUITS_MAX_EXTRA_MEM_FNS features may register one each; the
 * circuit's extra bytes are the sum. Adding a function already present,
 * or removing one that is not, does nothing; adding past the maximum
 * returns -1. */
#define CIRCUITS_MAX_EXTRA_MEM_FNS 8
typedef size_t (*circuit_extra_mem_fn)(circuit_t *circ);
int circuits_add_extra_mem_fn(circuit_extra_mem_fn fn);
void circuits_remove_extra_mem_fn(circuit_extra_mem_fn fn);
/* Optional, beside an extra-memory function: since when (evloop_now_us
 * time) the circuit's oldest byte held outside its queues has waited, or
 * UINT64_MAX if unknown. The handler orders circuits by the older of that
 * and their oldest queued cell, so a circuit holding only buffered stream
 * data is not taken for the youngest. Same rules as above. */
typedef uint64_t (*circuit_extra_age_fn)(circuit_t *circ);
int circuits_add_extra_age_fn(circuit_extra_age_fn fn);
void circuits_remove_extra_age_fn(circuit_extra_age_fn fn);
/* Optional: a cache that can free memory it can rebuild (a directory
 * cache's compressed copies). When the limit is crossed the handler calls
 * every registered function before it closes anything, as tor frees its
 * caches before circuits; fn frees what it can and returns the bytes it
 * freed (which it also subtracted from lib/malloc/memacct). Same rules as
 * circuits_add_extra_mem_fn; counted in circuits_oom_stats_t. */
typedef size_t (*circuits_cache_free_fn)(void);
int circuits_add_cache_free_fn(circuits_cache_free_fn fn);
void circuits_remove_cache_free_fn(circuits_cache_free_fn fn);
typedef struct circuits_oom_stats_t {
  uint64_t n_oom_events;       /* handler runs that closed something */
  uint64_t n_circuits_killed;
  uint64_t n_pending_killed;   /* handshakes pending, their held cells */
  uint64_t n_conns_killed;     /* channels closed for their buffers */
  uint64_t bytes_freed;        /* estimated: queued cells + extra bytes */
  uint64_t n_futile;           /* runs over the limit that closed nothing */
  uint64_t cache_bytes_freed;  /* by the caches' free functions */
  time_t last_oom_time;        /* of the last run that closed circuits */
} circuits_oom_stats_t;
/* Counters since circuits_init(). */
void circuits_get_oom_stats(circuits_oom_stats_t *out);
/* Tests: the or_circuit whose p side has this circuit ID (on any channel),
 * or NULL. Linear in the number of circuits. */
or_circuit_t *or_circuit_find_by_p_id_for_testing(uint32_t p_circ_id);
/* The live circuit with this gid (circuit_t.gid, unique for the process
 * lifetime), or NULL once it is closed or marked for close: how features
 * that keep per-circuit records refer to circuits without holding
 * pointers. Linear in the number of circuits. */
circuit_t *circuit_find_by_gid(uint64_t gid);
/* Observers told when a circuit starts closing, before its queues and
 * channels are detached (so they can take a last look). At most
 * CIRCUITS_MAX_CLOSE_OBSERVERS. The observer must not close circuits. */
#define CIRCUITS_MAX_CLOSE_OBSERVERS 4
typedef void (*circuit_close_fn)(circuit_t *circ, void *arg);
int circuits_add_close_observer(circuit_close_fn fn, void *arg);
void circuits_remove_close_observer(circuit_close_fn fn, void *arg);
/* One observer (a controller) of circuits we originate: called once the
 * first hop is being contacted, and after each hop opens, once the
 * builder's own on_extended has run (so n_hops > n_hops_open means it
 * asked for another hop, equality that the circuit is built). Read-only.
 * fn NULL removes it. As circuits_set_mux_ops(): registering another
 * while one is registered is refused with a warning (-1), registering the
 * same fn and arg again is fine (0). */
typedef void (*origin_circuit_progress_fn)(origin_circuit_t *circ,
                                           void *arg);
int circuits_set_origin_observer(origin_circuit_progress_fn fn, void *arg);
/* One owner of circuits we originate told when the queue towards the
 * first hop of a circuit without end-to-end windows (origin_circuit_nowin)
 * drained to half of its limit (circ_queue_nowin_limit()): it may package
 * DATA again
 * (the client, feature/client). Called from the scheduler: fn must not
 * queue cells itself (edge_wake_soon() is fine). Single slot, refusing a
 * different second one with a warning (-1); fn NULL removes it. */
int circuits_set_origin_drain_fn(origin_circuit_progress_fn fn, void *arg);

/* Send a relay cell that we originate: at an or_circuit towards the
 * origin, at an origin circuit towards hop `hop`. body may be NULL when
 * len is 0. Returns 0 or -1. */
int or_circuit_send_relay(or_circuit_t *circ, uint8_t command,
                          uint16_t stream_id, const uint8_t *body,
                          uint16_t len);
int origin_circuit_send_relay(origin_circuit_t *circ, int hop,
                              uint8_t command, uint16_t stream_id,
                              const uint8_t *body, uint16_t len);

/* ---- congestion control (congestion_control.h) ----
 *
 * Relay side: command.c calls or_circuit_set_cc() for a circuit whose
 * handshake negotiated it; the circuit's edge (edge.h, via stream.c) then
 * runs the controller for the streams that end here (SENDMEs every
 * sendme_inc cells, XON/XOFF instead of stream SENDMEs).
 *
 * Origin side: for a hop that negotiated it, core does the circuit-level
 * work itself. A DATA cell sent to that hop (origin_circuit_send_relay)
 * counts against its window and, every sendme_inc-th, records the time and
 * digest the hop's SENDME must answer; every sendme_inc-th DATA cell from
 * the hop is answered with an authenticated SENDME. A circuit SENDME from
 * the hop is checked (a wrong digest, or one nothing asked for, closes the
 * circuit), updates the window, and is then passed to on_relay as usual:
 * for the owner it means "more may be sent now"
 * (origin_circuit_cc_sendable()). A stream SENDME from such a hop closes
 * the circuit (streams use XON/XOFF, which on_relay receives). */
struct cc_t;
void or_circuit_set_cc(or_circuit_t *oc, uint8_t sendme_inc);
/* The ntor v3 handshake dropped the end-to-end circuit windows: the
 * circuit's edge packages while its queue towards the client holds fewer
 * than circ_queue_nowin_limit() cells, and again once it drained to half
 * of it. */
void or_circuit_set_nowin(or_circuit_t *oc);
/* How many cells cq (a circuit's queue towards a hop, for an end without
 * end-to-end windows) may hold before the end stops packaging DATA:
 * edge_nowin_queue_limit() of the window of the channel it feeds
 * (channel_carried_window(): BackTap's Vegas window of that hop). When the
 * queue holds that many or more, also arms circuit_queue_drained() at
 * half of the limit (low_water), so that the end is woken then. */
size_t circ_queue_nowin_limit(circ_queue_t *cq);
/* The scheduler took cq (a queue of circ) below its low_water mark. */
void circuit_queue_drained(circuit_t *circ, circ_queue_t *cq);
/* The controller of hop `hop`, or NULL if that hop has none. */
const struct cc_t *origin_circuit_cc(const origin_circuit_t *circ, int hop);
/* DATA cells that may be sent to hop now (its cwnd - inflight); for a hop
 * without congestion control, UINT64_MAX (the owner keeps windows). */
uint64_t origin_circuit_cc_sendable(const origin_circuit_t *circ, int hop);
/* Whether hop `hop` agreed to run the circuit without end-to-end circuit
 * windows (extend_target_t.nowin_request; the owner's edge then keeps
 * only the stream windows, edge_set_no_circ_windows()). */
int origin_circuit_nowin(const origin_circuit_t *circ, int hop);

/* ---- multiplexing several circuits into one stream space ----
 *
 * A feature (conflux, proposal 329) may make an or_circuit one leg of a
 * set whose streams and ordered messages span all legs. It registers one
 * circuit_mux_ops_t and sets or_circuit_t.mux on each leg; circuits with
 * mux == NULL never reach these hooks, so ordinary circuits pay one
 * pointer test. Core then:
 *   - sends every "multiplexed" relay message (relay_command_is_multiplexed:
 *     the stream commands that must stay ordered with DATA) that streams
 *     originate on a mux circuit on the leg pick() returns, and reports it
 *     with sent() (the feature counts sequence numbers; pick() may first
 *     send a non-multiplexed message, such as a SWITCH, on that leg);
 *     circuit-level accounting (congestion control) is done on that leg;
 *   - lets streams of such a circuit package DATA only while can_send();
 *   - on a circuit SENDME on a leg, wakes the streams of stream_home(leg);
 *   - hands multiplexed messages that arrive on a leg to the feature
 *     (relay.h: relay_set_mux_inbound) after the leg's own accounting;
 *     the feature delivers them in order with relay_deliver_ordered().
 * Streams live on one leg (the "home"); when it closes before the others
 * the feature moves them with circ_edge_move_streams() (stream.h) from its
 * close observer. */
typedef struct circuit_mux_ops_t {
  or_circuit_t *(*pick)(or_circuit_t *circ, uint8_t command);
  void (*sent)(or_circuit_t *leg, uint8_t command);
  int (*can_send)(or_circuit_t *circ);
  or_circuit_t *(*stream_home)(or_circuit_t *circ);
  /* The most stream data the set may hold back for reordering and then
   * deliver at once (its out-of-order bound in bytes); NULL: none. The
   * streams' buffer limit grows by this much (edge_end_ops_t). */
  size_t (*burst_bytes)(or_circuit_t *circ);
} circuit_mux_ops_t;
/* Register (NULL: unregister) the multiplexer. There is at most one:
 * registering another while one is registered is refused with a warning
 * (-1); registering the same again is fine (0). */
int circuits_set_mux_ops(const circuit_mux_ops_t *ops);
const circuit_mux_ops_t *circuits_mux_ops(void);
/* The circuit whose edge holds the streams of circ (circ itself unless
 * it is a leg of a multiplexed set). */
or_circuit_t *or_circuit_stream_home(or_circuit_t *circ);

/* Origin circuits: start with a first hop, then extend one hop at a time
 * (after on_extended reports the previous one). */
origin_circuit_t *origin_circuit_launch(const extend_target_t *first,
                                        const origin_circuit_ops_t *ops,
                                        void *arg);
int origin_circuit_extend(origin_circuit_t *circ,
                          const extend_target_t *next);
/* Called by command.c. */
void origin_circuit_handle_created(origin_circuit_t *circ,
                                   const cell_t *cell);
void origin_circuit_handle_relay(origin_circuit_t *circ, packed_cell_t *pc);
#endif
