/* SPDX-License-Identifier: BSD-3-Clause */
/* circuit.c -- circuit objects: creation, extension to a next hop, the cell
 * queues in each direction, origin-side handshakes, and teardown.
 *
 * A circuit lives in the circuit maps of the channels on its sides (keyed
 * by circuit ID) and in one global list. Teardown detaches it from both
 * channels immediately and frees it later from a deferred callback, so a
 * circuit pointer obtained earlier in the same callback stays valid.
 *
 * An extension whose channel is still being opened waits on that
 * channel's pending list (channel_pending_circuits());
 * circuits_channel_opened() sends the waiting CREATE cells (with a fresh
 * circuit ID) or fails those circuits with CONNECTFAILED. A closing
 * channel takes down the circuits in its own map and on its pending list,
 * in the order they were created: with PerCircuitTCP there are about as
 * many channels as circuits, so neither an open nor a close of a channel
 * walks every circuit.
 *
 * Memory limit (MaxMemInQueues, see circuit.h): the limit is the trigger
 * of the process-wide budget (lib/malloc/memacct), to which every holder
 * a peer can grow adds its bytes as it allocates them: queued cells,
 * connection buffers, exit stream buffers, stream records, conflux
 * reordering queues, directory answers in flight, MeasureMe state and the
 * other kinds of memacct.h (compression coders, DNS requests...). When
 * the total crosses the limit the budget calls oom_over_cb(), which only
 * notes it and schedules the handler; queue_with_limit() (which stamps
 * each cell with the cached loop time) runs it at once for relayed cells.
 * circuits_handle_oom() snapshots the live circuits with what they hold
 * (queued cells plus what the features report through
 * circuits_add_extra_mem_fn) and when their oldest queued cell was queued
 * (the head of each FIFO), and the channels with what their connection
 * buffers hold and since when (lib/buf stamps each chunk), sorts them all
 * oldest first and closes them until enough is freed (as tor does with
 * circuits and connections). Closing clears the queues at once and marks the
 * circuit oom_closed, so that stream owners drop their buffers instead of
 * flushing them; the circuit objects themselves are still freed later by
 * the reaper, which keeps the snapshot's pointers valid even if an
 * on_closed callback closes further circuits.
 *
 * Congestion control on origin hops (see circuit.h): the per-hop state
 * (controller + deliver counter) is allocated when the hop's handshake
 * negotiates it; the send path pays one pointer test per DATA cell.
 *
 * Multiplexing (circuit_mux_ops_t, conflux): or_circuit_send_relay() asks
 * the registered multiplexer for the leg of each stream message sent on a
 * circuit whose mux is set; ordinary circuits pay one pointer test.
 */
#include "core/or/circuit.h"
#include "core/or/command.h"
#include "core/or/congestion_control.h"
#include "core/or/cpuworker.h"
#include "core/or/dos.h"
#include "core/or/onion.h"
#include "core/or/pctcp.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/container/vec.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
  dlist_t all;
  ptrvec_t *to_free;
  evloop_deferred_t *reaper;
  uint64_t next_gid;
  unsigned n_or, n_origin;
  evloop_deferred_t *oom_check;  /* OOM handling for originated cells */
} C;

/* The memory limit: set from the configuration, kept across
 * circuits_init() (only the counters are reset there). */
static struct {
  uint64_t max_bytes;          /* 0: no limit */
  /* The budget crossed the limit (set by oom_over_cb, cleared by the
   * handler): queueing a relayed cell then runs the handler at once. The
   * budget itself re-arms a little above the usage after a run that could
   * not free enough, so that such a state does not cost a scan of every
   * circuit per allocation. */
  int oom_pending;
  circuit_extra_mem_fn extra_fns[CIRCUITS_MAX_EXTRA_MEM_FNS];
  int n_extra_fns;
  circuit_extra_age_fn age_fns[CIRCUITS_MAX_EXTRA_MEM_FNS];
  int n_age_fns;
  circuits_cache_free_fn cache_fns[CIRCUITS_MAX_EXTRA_MEM_FNS];
  int n_cache_fns;
  int in_handler;
  circuits_oom_stats_t stats;
  /* Per-circuit queue limits in cells (the consensus decides). */
  int32_t max_cells_back, max_cells_fwd;
} M = {.max_cells_back = CIRCUIT_MAX_QUEUED_CELLS_DEFAULT,
       .max_cells_fwd = CIRCUIT_MAX_QUEUED_CELLS_DEFAULT};

void
circuits_set_max_queued_cells(int32_t towards_client, int32_t towards_exit)
{
  M.max_cells_back = towards_client < CIRCUIT_MAX_QUEUED_CELLS_MIN
                         ? CIRCUIT_MAX_QUEUED_CELLS_MIN
                         : towards_client;
  M.max_cells_fwd = towards_exit < CIRCUIT_MAX_QUEUED_CELLS_MIN
                        ? CIRCUIT_MAX_QUEUED_CELLS_MIN
                        : towards_exit;
}

void
circuits_get_max_queued_cells(int32_t *towards_client, int32_t *towards_exit)
{
  *towards_client = M.max_cells_back;
  *towards_exit = M.max_cells_fwd;
}

static void circuits_handle_oom(void);
static void oom_over_cb(void *arg);
static void oom_deferred_cb(void *arg);

static void circuit_free(circuit_t *circ);

/* Congestion control with one hop of an origin circuit. */
struct origin_hop_cc_t {
  cc_t cc;
  int deliver_window;   /* DATA cells from the hop; SENDME every inc */
};

static void
reap(void *arg)
{
  (void)arg;
  while (ptrvec_len(C.to_free))
    circuit_free(ptrvec_pop(C.to_free));
}

/* What channels hand upward: cells to command.c's dispatch, opens and
 * closes to the circuits waiting on or using them. */
static const channel_upcalls_t circuit_upcalls = {
    command_process_cell, circuits_channel_opened, circuits_channel_closed,
};

void
circuits_init(void)
{
  memset(&C, 0, sizeof(C));
  dlist_init(&C.all);
  C.to_free = ptrvec_new();
  C.reaper = evloop_deferred_new(channels_loop(), reap, NULL);
  C.oom_check = evloop_deferred_new(channels_loop(), oom_deferred_cb, NULL);
  C.next_gid = 1;
  memset(&M.stats, 0, sizeof(M.stats));
  M.in_handler = 0;
  M.oom_pending = 0;
  if (M.max_bytes)
    memacct_set_trigger(M.max_bytes, oom_over_cb, NULL);
  if (channels_set_upcalls(&circuit_upcalls) < 0)
    log_warn("Circuits are not connected to channels: another layer "
             "registered channel upcalls");
}

void
circuits_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&C.all))) {
    circuit_t *c = DLIST_ENTRY(n, circuit_t, all_node);
    circuit_mark_for_close(c, DESTROY_REASON_FINISHED);
  }
  reap(NULL);
  channels_set_upcalls(NULL);
  /* The limit stays configured (M) but nothing may schedule the handler
   * until circuits_init() arms it again. */
  memacct_set_trigger(UINT64_MAX, NULL, NULL);
  evloop_deferred_free(C.reaper);
  evloop_deferred_free(C.oom_check);
  ptrvec_free(C.to_free, NULL);
}

unsigned
circuits_count(circuit_kind_t kind)
{
  return kind == CIRC_KIND_OR ? C.n_or : C.n_origin;
}

static void
circuit_init_base(circuit_t *c, circuit_kind_t kind)
{
  c->kind = kind;
  c->gid = C.next_gid++;
  circ_queue_init(&c->n_queue, c);
  dlist_node_init(&c->pending_node);
  c->created_us = evloop_now_us(channels_loop());
  dlist_insert_tail(&C.all, &c->all_node);
}

#ifdef CRYPT_AES_HAVE_AESNI
/* Every relayed circuit is one or_circuit_t: at 1024 bytes it fits the
 * 1024-byte size class of jemalloc and mimalloc (1040 bytes of glibc heap);
 * 16 bytes more cost 256 with jemalloc (doc/benchmarks.md, "Where an idle
 * circuit's bytes go"). Raise this only knowingly. */
_Static_assert(sizeof(or_circuit_t) <= 1024,
               "or_circuit_t outgrew the allocators' 1024-byte class");
#endif

or_circuit_t *
or_circuit_new(channel_t *p_chan, uint32_t p_circ_id)
{
  or_circuit_t *oc = pc_zalloc(sizeof(*oc));
  circuit_init_base(&oc->base, CIRC_KIND_OR);
  oc->p_chan = p_chan;
  oc->p_circ_id = p_circ_id;
  circ_queue_init(&oc->p_queue, &oc->base);
  oc->p_queue.chan = p_chan;
  channel_set_circuit(p_chan, p_circ_id, &oc->base);
  C.n_or++;
  return oc;
}

static void
circuit_free(circuit_t *circ)
{
  if (circ->kind == CIRC_KIND_OR) {
    or_circuit_t *oc = TO_OR_CIRCUIT(circ);
    relay_crypto_clear(&oc->crypto);
    PC_FREE(oc->stream_dos);
    C.n_or--;
  } else {
    origin_circuit_t *orc = TO_ORIGIN_CIRCUIT(circ);
    for (int i = 0; i < orc->n_hops; i++) {
      relay_crypto_free(orc->hops[i].crypto);
      onion_client_free(orc->hops[i].hs_type, orc->hops[i].hs_state);
      if (orc->hops[i].cc) {
        cc_clear(&orc->hops[i].cc->cc);
        PC_FREE(orc->hops[i].cc);
      }
    }
    C.n_origin--;
  }
  pc_memwipe(circ, circ->kind == CIRC_KIND_OR ? sizeof(or_circuit_t)
                                              : sizeof(origin_circuit_t));
  free(circ);
}

static void
send_destroy(channel_t *chan, uint32_t circ_id, int reason)
{
  if (!chan || !channel_is_open(chan) || !circ_id)
    return;
  cell_t cell;
  memset(&cell, 0, sizeof(cell));
  cell.circ_id = circ_id;
  cell.command = CELL_DESTROY;
  cell.payload[0] = (uint8_t)reason;
  channel_send_cell(chan, &cell);
}

/* Detach the n side: drop queued cells, leave the channel's map and the
 * pending list. */
static void
detach_n_side(circuit_t *circ)
{
  circ_queue_clear(&circ->n_queue);
  if (circ->n_chan && circ->n_circ_id &&
      channel_get_circuit(circ->n_chan, circ->n_circ_id) == circ)
    channel_remove_circuit(circ->n_chan, circ->n_circ_id);
  if (dlist_node_is_linked(&circ->pending_node))
    dlist_remove(&circ->pending_node);
  PC_FREE(circ->n_pending_create);
  circ->n_pending = 0;
  circ->n_chan = NULL;
  circ->n_circ_id = 0;
  circ->n_queue.chan = NULL;
}

static void
detach_p_side(or_circuit_t *oc)
{
  circ_queue_clear(&oc->p_queue);
  if (oc->p_chan && channel_get_circuit(oc->p_chan, oc->p_circ_id) ==
                        &oc->base)
    channel_remove_circuit(oc->p_chan, oc->p_circ_id);
  oc->p_chan = NULL;
  oc->p_queue.chan = NULL;
}

/* Observers told when a circuit starts closing (circuit.h); kept across
 * circuits_init(). */
static struct {
  circuit_close_fn fn;
  void *arg;
} close_observers[CIRCUITS_MAX_CLOSE_OBSERVERS];

int
circuits_add_close_observer(circuit_close_fn fn, void *arg)
{
  for (int i = 0; i < CIRCUITS_MAX_CLOSE_OBSERVERS; i++)
    if (!close_observers[i].fn) {
      close_observers[i].fn = fn;
      close_observers[i].arg = arg;
      return 0;
    }
  return -1;
}

static struct {
  origin_circuit_progress_fn fn;
  void *arg;
} origin_observer;

static struct {
  origin_circuit_progress_fn fn;
  void *arg;
} origin_drain;

int
circuits_set_origin_drain_fn(origin_circuit_progress_fn fn, void *arg)
{
  if (fn && origin_drain.fn &&
      (fn != origin_drain.fn || arg != origin_drain.arg)) {
    log_warn("A second owner of the drain signal of our own circuits was "
             "refused: one is registered already");
    return -1;
  }
  origin_drain.fn = fn;
  origin_drain.arg = fn ? arg : NULL;
  return 0;
}

int
circuits_set_origin_observer(origin_circuit_progress_fn fn, void *arg)
{
  if (fn && origin_observer.fn &&
      (fn != origin_observer.fn || arg != origin_observer.arg)) {
    log_warn("A second observer of our own circuits was refused: one is "
             "registered already (only one controller may watch them)");
    return -1;
  }
  origin_observer.fn = fn;
  origin_observer.arg = fn ? arg : NULL;
  return 0;
}

void
circuits_remove_close_observer(circuit_close_fn fn, void *arg)
{
  for (int i = 0; i < CIRCUITS_MAX_CLOSE_OBSERVERS; i++)
    if (close_observers[i].fn == fn && close_observers[i].arg == arg)
      close_observers[i].fn = NULL;
}

/* Close circ, telling each neighbour except `skip` with a DESTROY. Toward
 * the origin we give our reason; away from it, and when only propagating,
 * the spec asks for DESTROYED (reasons must not travel along circuits). */
static void
circuit_close_impl(circuit_t *circ, int reason, channel_t *skip,
                   const char *why)
{
  if (circ->marked_for_close)
    return;
  for (int i = 0; i < CIRCUITS_MAX_CLOSE_OBSERVERS; i++)
    if (close_observers[i].fn)
      close_observers[i].fn(circ, close_observers[i].arg);
  circ->marked_for_close = 1;
  int propagating = skip != NULL;
  if (circ->n_chan && circ->n_chan != skip && !circ->n_pending)
    send_destroy(circ->n_chan, circ->n_circ_id,
                 propagating ? DESTROY_REASON_DESTROYED
                             : DESTROY_REASON_NONE);
  detach_n_side(circ);
  if (circ->kind == CIRC_KIND_OR) {
    or_circuit_t *oc = TO_OR_CIRCUIT(circ);
    circ_edge_clear(oc);
    if (oc->p_chan && oc->p_chan != skip)
      send_destroy(oc->p_chan, oc->p_circ_id,
                   propagating ? DESTROY_REASON_DESTROYED : reason);
    detach_p_side(oc);
  } else {
    origin_circuit_t *orc = TO_ORIGIN_CIRCUIT(circ);
    if (orc->ops && orc->ops->on_closed)
      orc->ops->on_closed(orc, reason, why, orc->ops_arg);
  }
  dlist_remove(&circ->all_node);
  ptrvec_push(C.to_free, circ);
  evloop_deferred_schedule(C.reaper);
}

void
circuit_mark_for_close(circuit_t *circ, int reason)
{
  circuit_close_impl(circ, reason, NULL, destroy_reason_name(reason));
}

void
circuit_destroy_received(circuit_t *circ, channel_t *from_chan)
{
  circuit_close_impl(circ, DESTROY_REASON_DESTROYED, from_chan,
                     "DESTROY received");
}

void
circuits_foreach(circuit_kind_t kind, circuit_visit_fn fn, void *arg)
{
  if (!C.all.head.next) /* not initialised (tests) */
    return;
  for (dlist_node_t *n = dlist_first(&C.all); n; n = dlist_next(&C.all, n)) {
    circuit_t *c = DLIST_ENTRY(n, circuit_t, all_node);
    if (c->kind == kind && !c->marked_for_close)
      fn(c, arg);
  }
}

static int
cmp_gid(const void *a, const void *b)
{
  const circuit_t *x = *(circuit_t *const *)a, *y = *(circuit_t *const *)b;
  return x->gid < y->gid ? -1 : x->gid > y->gid;
}

/* Collect the circuits waiting for chan to open, in the order they
 * started waiting. */
static ptrvec_t *
collect_pending(channel_t *chan)
{
  ptrvec_t *v = ptrvec_new();
  dlist_t *pending = channel_pending_circuits(chan);
  for (dlist_node_t *n = dlist_first(pending); n; n = dlist_next(pending, n))
    ptrvec_push(v, DLIST_ENTRY(n, circuit_t, pending_node));
  return v;
}

void
circuits_channel_closed(channel_t *chan)
{
  /* Collect first: closing circuits edits the channel's map. The map holds
   * the circuits with an ID on chan (either side), the pending list those
   * still waiting for it; together, every circuit using chan. */
  ptrvec_t *v = collect_pending(chan);
  channel_collect_circuits(chan, v);
  size_t n = ptrvec_len(v);
  if (n > 1)
    qsort(v->elts, n, sizeof(void *), cmp_gid);
  circuit_t *prev = NULL;
  for (size_t i = 0; i < n; i++) {
    circuit_t *c = ptrvec_get(v, i);
    or_circuit_t *oc = TO_OR_CIRCUIT(c);
    if (c == prev || !(c->n_chan == chan || (oc && oc->p_chan == chan)))
      continue; /* on both sides of chan; or no longer using it */
    prev = c;
    circuit_close_impl(c, DESTROY_REASON_CHANNEL_CLOSED, chan,
                       "channel closed");
  }
  ptrvec_free(v, NULL);
}

static void
send_pending_create(circuit_t *circ)
{
  channel_t *chan = circ->n_chan;
  uint32_t id = channel_alloc_circ_id(chan);
  if (!id) {
    circuit_mark_for_close(circ, DESTROY_REASON_RESOURCELIMIT);
    return;
  }
  circ->n_circ_id = id;
  circ->n_pending = 0;
  channel_set_circuit(chan, id, circ);
  circ->n_pending_create->circ_id = id;
  channel_send_cell(chan, circ->n_pending_create);
  PC_FREE(circ->n_pending_create);
}

void
circuits_channel_opened(channel_t *chan, int ok)
{
  ptrvec_t *v = collect_pending(chan);
  for (size_t i = 0; i < ptrvec_len(v); i++) {
    circuit_t *c = ptrvec_get(v, i);
    dlist_remove(&c->pending_node);
    if (ok) {
      send_pending_create(c);
    } else {
      c->n_chan = NULL; /* the channel is going away */
      c->n_queue.chan = NULL;
      circuit_close_impl(c, DESTROY_REASON_CONNECTFAILED, NULL,
                         "could not connect to the next hop");
    }
  }
  ptrvec_free(v, NULL);
}

int
circuit_extend_to(circuit_t *circ, const pc_addr_t *addr,
                  const uint8_t *rsa_id, const uint8_t *ed_id,
                  const cell_t *create)
{
  if (circ->n_chan)
    return -1; /* already extended */
  channel_t *chan = pctcp_channel_for_extend(circ, addr, rsa_id, ed_id);
  if (!chan)
    return -1;
  /* Backpressure all the way (channel.h): from the origin itself, or
   * from a relay whose previous hop had it. */
  const or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  if (channel_has_backpressure(chan))
    channel_set_path_backpressure(
        chan, !oc || channel_path_backpressure(oc->p_chan));
  circ->n_chan = chan;
  circ->n_queue.chan = chan;
  circ->n_pending_create = pc_memdup(create, sizeof(*create));
  circ->n_pending = 1;
  if (channel_is_open(chan)) {
    send_pending_create(circ);
  } else {
    dlist_insert_tail(channel_pending_circuits(chan), &circ->pending_node);
  }
  return 0;
}

/* ---- queues ------------------------------------------------------- */

/* Over the memory limit after queueing a cell on circ. Relayed cells
 * (close_now) run the handler at once; originated cells defer it, since
 * stream code up the stack still uses the circuit and its streams. */
static int
oom_triggered(circuit_t *circ, int close_now)
{
  if (close_now && !M.in_handler) {
    circuits_handle_oom();
    return circ->marked_for_close ? -1 : 0;
  }
  if (C.oom_check)
    evloop_deferred_schedule(C.oom_check);
  return 0;
}

/* Queue pc. Relayed cells are subject to the queue limit of their
 * direction (a peer can push them at us without limit); cells we
 * originate are bounded by the flow-control windows instead, and must not
 * close the circuit from inside the stream code that is sending them. Both
 * count towards the global memory limit (see oom_triggered()). */
static int
queue_with_limit(circuit_t *circ, circ_queue_t *cq, packed_cell_t *pc,
                 const char *dir, int32_t limit, int enforce)
{
  if (enforce && cq->cells.n >= (uint32_t)limit) {
    packed_cell_free(pc);
    log_notice("Circuit %llu has %u cells queued %s (limit %d); closing it",
               (unsigned long long)circ->gid, cq->cells.n, dir, limit);
    circuit_mark_for_close(circ, DESTROY_REASON_RESOURCELIMIT);
    return -1;
  }
  /* The age of the oldest queued cell orders circuits for the OOM
   * handler; the loop caches its time, so this costs no system call. */
  pc->queued_us = evloop_now_us(channels_loop());
  circ_queue_push(cq, pc);
  if (M.oom_pending)
    return oom_triggered(circ, enforce);
  return 0;
}

int
or_circuit_queue_backward(or_circuit_t *oc, packed_cell_t *pc)
{
  oc->base.cells_backward++;
  return queue_with_limit(&oc->base, &oc->p_queue, pc, "towards the client",
                          M.max_cells_back, 1);
}

int
circuit_queue_forward(circuit_t *circ, packed_cell_t *pc)
{
  circ->cells_forward++;
  return queue_with_limit(circ, &circ->n_queue, pc, "towards the exit",
                          M.max_cells_fwd, 1);
}

static packed_cell_t *
pack_relay(uint32_t circ_id, uint8_t cell_command,
           const uint8_t payload[CELL_PAYLOAD_LEN])
{
  packed_cell_t *pc = packed_cell_new();
  set_u32(pc->body, circ_id);
  pc->body[4] = cell_command;
  memcpy(pc->body + 5, payload, CELL_PAYLOAD_LEN);
  pc->len = CELL_MAX_NETWORK_LEN;
  pc->queued_us = evloop_now_us(channels_loop());
  return pc;
}

/* ---- multiplexing (circuit_mux_ops_t) ----------------------------- */

static const circuit_mux_ops_t *mux_ops;

int
circuits_set_mux_ops(const circuit_mux_ops_t *ops)
{
  if (ops && mux_ops && ops != mux_ops) {
    log_warn("A second circuit multiplexer was refused: one is registered "
             "already (only one feature may multiplex circuits)");
    return -1;
  }
  mux_ops = ops;
  return 0;
}

const circuit_mux_ops_t *
circuits_mux_ops(void)
{
  return mux_ops;
}

or_circuit_t *
or_circuit_stream_home(or_circuit_t *oc)
{
  if (oc->mux && mux_ops) {
    or_circuit_t *home = mux_ops->stream_home(oc);
    if (home)
      return home;
  }
  return oc;
}

/* Send on exactly this circuit. A DATA cell counts against the circuit's
 * congestion window (the edge's controller), with the digest its SENDME
 * must echo. */
static int
send_relay_on(or_circuit_t *oc, uint8_t command, uint16_t stream_id,
              const uint8_t *body, uint16_t len)
{
  if (len > RELAY_BODY_MAX || !oc->p_chan || oc->base.marked_for_close)
    return -1;
  uint8_t payload[CELL_PAYLOAD_LEN];
  relay_payload_encode(payload, command, stream_id, body, len);
  relay_crypto_originate_backward(&oc->crypto, payload);
  oc->base.cells_backward++;
  if (command == RELAY_COMMAND_DATA)
    circ_edge_note_data_sent(oc);
  return queue_with_limit(&oc->base, &oc->p_queue,
                          pack_relay(oc->p_circ_id, CELL_RELAY, payload),
                          "towards the client", M.max_cells_back, 0);
}

int
or_circuit_send_relay(or_circuit_t *oc, uint8_t command, uint16_t stream_id,
                      const uint8_t *body, uint16_t len)
{
  if (oc->mux && mux_ops && relay_command_is_multiplexed(command)) {
    or_circuit_t *leg = mux_ops->pick(oc, command);
    if (!leg)
      return -1;
    int r = send_relay_on(leg, command, stream_id, body, len);
    if (r == 0 && leg->mux)
      mux_ops->sent(leg, command);
    return r;
  }
  return send_relay_on(oc, command, stream_id, body, len);
}

int
origin_circuit_send_relay(origin_circuit_t *circ, int hop, uint8_t command,
                          uint16_t stream_id, const uint8_t *body,
                          uint16_t len)
{
  if (len > RELAY_BODY_MAX || hop < 0 || hop >= circ->n_hops_open ||
      !circ->base.n_chan || circ->base.n_pending ||
      circ->base.marked_for_close)
    return -1;
  uint8_t payload[CELL_PAYLOAD_LEN];
  relay_payload_encode(payload, command, stream_id, body, len);
  relay_crypto_t *hops[CIRCUIT_MAX_HOPS];
  for (int i = 0; i < circ->n_hops_open; i++)
    hops[i] = circ->hops[i].crypto;
  relay_crypto_origin_encrypt(hops, hop, payload);
  uint8_t cmd = CELL_RELAY;
  /* EXTEND2 must travel in RELAY_EARLY (tor-spec 5.6); we also use the
   * remaining budget for the first cells, as tor does, so that the
   * EXTEND2 cells do not stand out. */
  if (circ->relay_early_sent < CIRCUIT_MAX_RELAY_EARLY &&
      (command == RELAY_COMMAND_EXTEND2 || command == RELAY_COMMAND_EXTEND)) {
    cmd = CELL_RELAY_EARLY;
    circ->relay_early_sent++;
  } else if (command == RELAY_COMMAND_EXTEND2) {
    log_warn("Out of RELAY_EARLY cells; can't extend circuit %llu",
             (unsigned long long)circ->base.gid);
    return -1;
  }
  circ->base.cells_forward++;
  circ->delivered_written += len;
  origin_hop_cc_t *hcc = circ->hops[hop].cc;
  if (hcc && command == RELAY_COMMAND_DATA) {
    uint8_t *slot =
        cc_note_data_sent(&hcc->cc, evloop_now_us(channels_loop()));
    if (slot)
      memcpy(slot,
             relay_crypto_last_digest(circ->hops[hop].crypto,
                                      RELAY_DIR_FORWARD),
             RELAY_CRYPTO_DIGEST_LEN);
  }
  return queue_with_limit(&circ->base, &circ->base.n_queue,
                          pack_relay(circ->base.n_circ_id, cmd, payload),
                          "towards the exit", M.max_cells_fwd, 0);
}

/* ---- congestion control ------------------------------------------- */

void
or_circuit_set_cc(or_circuit_t *oc, uint8_t sendme_inc)
{
  oc->cc_sendme_inc = sendme_inc;
  log_info("Circuit %llu: congestion control negotiated in ntor v3 "
           "(%s, sendme_inc %u)",
           (unsigned long long)oc->base.gid, cc_alg_vegas.name,
           (unsigned)sendme_inc);
}

void
circuit_queue_drained(circuit_t *circ, circ_queue_t *cq)
{
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  if (circ->marked_for_close)
    return;
  if (oc && cq == &oc->p_queue && oc->nowin && oc->edge)
    edge_wake_soon(oc->edge);
  origin_circuit_t *orc = TO_ORIGIN_CIRCUIT(circ);
  if (orc && cq == &circ->n_queue && origin_drain.fn)
    origin_drain.fn(orc, origin_drain.arg);
}

size_t
circ_queue_nowin_limit(circ_queue_t *cq)
{
  size_t limit = edge_nowin_queue_limit(channel_carried_window(cq->chan));
  if (cq->cells.n >= limit) {
    size_t lw = limit / 2;
    cq->low_water = lw ? (unsigned)lw : 1;
  }
  return limit;
}

void
or_circuit_set_nowin(or_circuit_t *oc)
{
  oc->nowin = 1;
  oc->p_queue.low_water = EDGE_NOWIN_QUEUE_MAX / 2;
  log_info("Circuit %llu: no end-to-end windows negotiated in ntor v3 "
           "(BackTap all the way from the client)",
           (unsigned long long)oc->base.gid);
}

int
origin_circuit_nowin(const origin_circuit_t *circ, int hop)
{
  return hop >= 0 && hop < circ->n_hops_open && circ->hops[hop].nowin;
}

const cc_t *
origin_circuit_cc(const origin_circuit_t *circ, int hop)
{
  if (hop < 0 || hop >= circ->n_hops_open || !circ->hops[hop].cc)
    return NULL;
  return &circ->hops[hop].cc->cc;
}

uint64_t
origin_circuit_cc_sendable(const origin_circuit_t *circ, int hop)
{
  const cc_t *cc = origin_circuit_cc(circ, hop);
  return cc ? cc_sendable(cc) : UINT64_MAX;
}

/* A relay cell from a hop with congestion control: answer DATA with
 * SENDMEs, check SENDMEs. Returns -1 (with *why) if the circuit must be
 * closed. */
static int
origin_cc_handle(origin_circuit_t *circ, int hop, const relay_header_t *h,
                 const uint8_t *body, const char **why)
{
  origin_hop_cc_t *hcc = circ->hops[hop].cc;
  uint32_t inc = hcc->cc.sendme_inc;
  if (h->command == RELAY_COMMAND_DATA) {
    if (edge_window_delivered(&hcc->deliver_window, (int)inc) > 0) {
      uint8_t sm[SENDME_V1_LEN];
      sendme_encode_v1(sm, relay_crypto_last_digest(circ->hops[hop].crypto,
                                                    RELAY_DIR_BACKWARD));
      hcc->cc.n_sendmes_sent++;
      origin_circuit_send_relay(circ, hop, RELAY_COMMAND_SENDME, 0, sm,
                                sizeof(sm));
    }
    return 0;
  }
  if (h->command != RELAY_COMMAND_SENDME)
    return 0;
  if (h->stream_id) {
    *why = "stream SENDME on a circuit with congestion control";
    return -1;
  }
  const uint8_t *digest;
  if (sendme_parse(body, h->length, &digest, why) < 0)
    return -1;
  int r = cc_on_sendme(&hcc->cc, evloop_now_us(channels_loop()), digest,
                       circ->base.n_queue.cells.n);
  if (r == CC_SENDME_UNEXPECTED) {
    *why = "SENDME while no data awaited one";
    return -1;
  }
  if (r == CC_SENDME_BAD_DIGEST) {
    *why = "authenticated SENDME with a wrong digest";
    return -1;
  }
  return 0;
}

/* ---- origin circuits ---------------------------------------------- */

static int
make_create_cell(origin_circuit_t *circ, const extend_target_t *t,
                 cell_t *cell, uint8_t *hdata, size_t cap, size_t *hlen)
{
  origin_hop_t *hop = &circ->hops[circ->n_hops];
  if (onion_client_start(t, hdata, cap, hlen, &hop->hs_state) < 0)
    return -1;
  hop->target = *t;
  hop->hs_type = t->handshake;
  circ->n_hops++;
  memset(cell, 0, sizeof(*cell));
  return 0;
}

origin_circuit_t *
origin_circuit_launch(const extend_target_t *first,
                      const origin_circuit_ops_t *ops, void *arg)
{
  origin_circuit_t *circ = pc_zalloc(sizeof(*circ));
  circuit_init_base(&circ->base, CIRC_KIND_ORIGIN);
  circ->ops = ops;
  circ->ops_arg = arg;
  C.n_origin++;
  cell_t cell;
  uint8_t hdata[CREATE2_HDATA_MAX];
  size_t hlen = 0;
  if (make_create_cell(circ, first, &cell, hdata, sizeof(hdata), &hlen) < 0)
    goto fail;
  if (first->handshake == CIRC_HTYPE_FAST) {
    cell.command = CELL_CREATE_FAST;
    memcpy(cell.payload, hdata, hlen);
  } else {
    create2_t c2;
    memset(&c2, 0, sizeof(c2));
    c2.htype = first->handshake;
    c2.hlen = (uint16_t)hlen;
    memcpy(c2.hdata, hdata, hlen);
    if (create2_cell_make(&cell, 0, &c2) < 0)
      goto fail;
  }
  if (circuit_extend_to(&circ->base, &first->addr, first->rsa_id,
                        first->has_ed_id ? first->ed_id : NULL, &cell) < 0)
    goto fail;
  if (origin_observer.fn)
    origin_observer.fn(circ, origin_observer.arg);
  return circ;
fail:
  log_warn("Could not start a circuit to the first hop");
  circuit_mark_for_close(&circ->base, DESTROY_REASON_INTERNAL);
  return NULL;
}

int
origin_circuit_extend(origin_circuit_t *circ, const extend_target_t *t)
{
  if (circ->n_hops != circ->n_hops_open || circ->n_hops >= CIRCUIT_MAX_HOPS ||
      t->handshake == CIRC_HTYPE_FAST)
    return -1;
  cell_t unused;
  uint8_t hdata[CREATE2_HDATA_MAX];
  size_t hlen = 0;
  /* Ask for no end-to-end windows only over a first hop with
   * backpressure (the exit checks its own side). */
  extend_target_t tt = *t;
  tt.nowin_request = t->nowin_request && t->has_ed_id &&
                     channel_path_backpressure(circ->base.n_chan);
  if (tt.nowin_request)
    tt.handshake = HTYPE_NTOR_V3; /* the message carries the request */
  t = &tt;
  if (make_create_cell(circ, t, &unused, hdata, sizeof(hdata), &hlen) < 0)
    return -1;
  extend2_t e;
  memset(&e, 0, sizeof(e));
  if (t->addr.family == AF_INET) {
    e.has_ipv4 = 1;
    memcpy(e.ipv4_addr, t->addr.addr, 4);
    e.ipv4_port = t->addr.port;
  } else {
    e.has_ipv6 = 1;
    memcpy(e.ipv6_addr, t->addr.addr, 16);
    e.ipv6_port = t->addr.port;
  }
  e.has_rsa_id = 1;
  memcpy(e.rsa_id, t->rsa_id, 20);
  if (t->has_ed_id) {
    e.has_ed_id = 1;
    memcpy(e.ed_id, t->ed_id, 32);
  }
  e.create.htype = t->handshake;
  e.create.hlen = (uint16_t)hlen;
  memcpy(e.create.hdata, hdata, hlen);
  uint8_t body[RELAY_BODY_MAX];
  size_t len = 0;
  if (extend2_build(body, sizeof(body), &e, &len) < 0)
    return -1;
  return origin_circuit_send_relay(circ, circ->n_hops_open - 1,
                                   RELAY_COMMAND_EXTEND2, 0, body,
                                   (uint16_t)len);
}

/* The reply to hop circ->n_hops_open's handshake arrived. */
static void
origin_finish_hop(origin_circuit_t *circ, const uint8_t *reply, size_t len)
{
  int i = circ->n_hops_open;
  origin_hop_t *hop = &circ->hops[i];
  if (i >= circ->n_hops || !hop->hs_state) {
    log_notice("Unexpected handshake reply on circuit %llu; closing it",
               (unsigned long long)circ->base.gid);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  uint8_t keys[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  onion_circ_params_t params;
  int r = onion_client_finish(hop->hs_type, hop->hs_state, reply, len, keys,
                              sizeof(keys),
                              (hop->target.cc_request ? ONION_REQ_CC : 0) |
                                  (hop->target.nowin_request ? ONION_REQ_NOWIN
                                                             : 0),
                              &params);
  onion_client_free(hop->hs_type, hop->hs_state);
  hop->hs_state = NULL;
  if (r < 0) {
    log_notice("Handshake with hop %d of circuit %llu failed (bad reply); "
               "closing it",
               i + 1, (unsigned long long)circ->base.gid);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  hop->crypto = relay_crypto_new(keys);
  pc_memwipe(keys, sizeof(keys));
  if (params.cc_enabled) {
    hop->cc = pc_zalloc(sizeof(*hop->cc));
    cc_init(&hop->cc->cc, NULL, params.sendme_inc);
    hop->cc->deliver_window = CIRCWINDOW_START;
    log_info("Circuit %llu: congestion control with hop %d (sendme_inc %u), "
             "algorithm %s",
             (unsigned long long)circ->base.gid, i + 1,
             (unsigned)params.sendme_inc, hop->cc->cc.alg->name);
  } else if (hop->target.cc_request && !params.nowin) {
    log_info("Circuit %llu: hop %d declined congestion control",
             (unsigned long long)circ->base.gid, i + 1);
  }
  if (params.nowin) {
    hop->nowin = 1;
    circ->base.n_queue.low_water = EDGE_NOWIN_QUEUE_MAX / 2;
    log_notice("Circuit %llu: no end-to-end windows with hop %d (every "
               "hop is BackTap)",
               (unsigned long long)circ->base.gid, i + 1);
  } else if (hop->target.nowin_request) {
    log_info("Circuit %llu: hop %d keeps the end-to-end windows",
             (unsigned long long)circ->base.gid, i + 1);
  }
  circ->n_hops_open++;
  if (circ->ops && circ->ops->on_extended)
    circ->ops->on_extended(circ, circ->n_hops_open, circ->ops_arg);
  /* After the builder: it has asked for the next hop, or not (built). */
  if (origin_observer.fn && !circ->base.marked_for_close)
    origin_observer.fn(circ, origin_observer.arg);
}

void
origin_circuit_handle_created(origin_circuit_t *circ, const cell_t *cell)
{
  if (circ->n_hops_open != 0) {
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  if (cell->command == CELL_CREATED_FAST) {
    origin_finish_hop(circ, cell->payload, 40);
    return;
  }
  created2_t c2;
  if (created2_parse(&c2, cell->payload, CELL_PAYLOAD_LEN) < 0) {
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  origin_finish_hop(circ, c2.hdata, c2.hlen);
}

void
origin_circuit_handle_relay(origin_circuit_t *circ, packed_cell_t *pc)
{
  uint8_t *payload = pc->body + 5;
  relay_crypto_t *hops[CIRCUIT_MAX_HOPS];
  for (int i = 0; i < circ->n_hops_open; i++)
    hops[i] = circ->hops[i].crypto;
  int hop = relay_crypto_origin_decrypt(hops, circ->n_hops_open, payload);
  if (hop < 0) {
    packed_cell_free(pc);
    log_notice("Unrecognized relay cell on origin circuit %llu; closing it",
               (unsigned long long)circ->base.gid);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  relay_header_t h;
  relay_header_unpack(&h, payload);
  if (h.length > RELAY_BODY_MAX) {
    packed_cell_free(pc);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  circ->base.cells_backward++;
  circ->delivered_read += h.length;
  const uint8_t *body = payload + RELAY_HEADER_LEN;
  switch (h.command) {
  case RELAY_COMMAND_EXTENDED2: {
    created2_t e;
    if (hop != circ->n_hops_open - 1 ||
        extended2_parse(&e, body, h.length) < 0) {
      circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
      break;
    }
    origin_finish_hop(circ, e.hdata, e.hlen);
    break;
  }
  case RELAY_COMMAND_TRUNCATED:
    log_info("Circuit %llu truncated at hop %d (reason %s); closing it",
             (unsigned long long)circ->base.gid, hop + 1,
             destroy_reason_name(h.length ? body[0] : 0));
    circuit_mark_for_close(&circ->base, DESTROY_REASON_NONE);
    break;
  case RELAY_COMMAND_DROP:
    break;
  default: {
    const char *why = NULL;
    if (circ->hops[hop].cc && origin_cc_handle(circ, hop, &h, body, &why)) {
      log_info("Closing circuit %llu: %s (hop %d)",
               (unsigned long long)circ->base.gid, why, hop + 1);
      circuit_mark_for_close(&circ->base, DESTROY_REASON_PROTOCOL);
      break;
    }
    if (circ->ops && circ->ops->on_relay && !circ->base.marked_for_close)
      circ->ops->on_relay(circ, hop, h.command, h.stream_id, body, h.length,
                          circ->ops_arg);
    break;
  }
  }
  packed_cell_free(pc);
}

/* ---- memory limit (MaxMemInQueues) -------------------------------- */

#define ONE_MB (UINT64_C(1) << 20)
#define ONE_GB (UINT64_C(1) << 30)

/* The budget crossed the limit: from inside some allocation, so only
 * note it and schedule the handler. */
static void
oom_over_cb(void *arg)
{
  (void)arg;
  M.oom_pending = 1;
  if (C.oom_check)
    evloop_deferred_schedule(C.oom_check);
}

void
circuits_set_max_mem_in_queues(uint64_t bytes)
{
  M.max_bytes = bytes;
  /* Arming checks the current total too, so that lowering the limit on
   * reload takes effect without waiting for traffic. */
  if (bytes)
    memacct_set_trigger(bytes, oom_over_cb, NULL);
  else
    memacct_set_trigger(UINT64_MAX, NULL, NULL);
}

uint64_t
circuits_max_mem_in_queues(void)
{
  return M.max_bytes;
}

uint64_t
circuits_max_mem_for_ram(uint64_t ram)
{
  const int is_64bit = sizeof(void *) >= 8;
  const uint64_t cap = is_64bit ? 8 * ONE_GB : 2 * ONE_GB;
  if (ram == 0)
    return is_64bit ? 8 * ONE_GB : ONE_GB;
  /* Machines with a lot of memory may run more than one relay. */
  uint64_t v = (is_64bit && ram >= 8 * ONE_GB) ? ram / 5 * 2 : ram / 4 * 3;
  if (v > cap)
    v = cap;
  if (v < 256 * ONE_MB)
    v = 256 * ONE_MB;
  return v;
}

uint64_t
circuits_default_max_mem(void)
{
  long pages = sysconf(_SC_PHYS_PAGES);
  long pagesize = sysconf(_SC_PAGESIZE);
  uint64_t ram = 0;
  if (pages > 0 && pagesize > 0 &&
      (uint64_t)pages <= UINT64_MAX / (uint64_t)pagesize)
    ram = (uint64_t)pages * (uint64_t)pagesize;
  return circuits_max_mem_for_ram(ram);
}

int
circuits_add_extra_mem_fn(circuit_extra_mem_fn fn)
{
  for (int i = 0; i < M.n_extra_fns; i++)
    if (M.extra_fns[i] == fn)
      return 0;
  if (M.n_extra_fns >= CIRCUITS_MAX_EXTRA_MEM_FNS)
    return -1;
  M.extra_fns[M.n_extra_fns++] = fn;
  return 0;
}

void
circuits_remove_extra_mem_fn(circuit_extra_mem_fn fn)
{
  for (int i = 0; i < M.n_extra_fns; i++) {
    if (M.extra_fns[i] == fn) {
      M.extra_fns[i] = M.extra_fns[--M.n_extra_fns];
      return;
    }
  }
}

int
circuits_add_extra_age_fn(circuit_extra_age_fn fn)
{
  for (int i = 0; i < M.n_age_fns; i++)
    if (M.age_fns[i] == fn)
      return 0;
  if (M.n_age_fns >= CIRCUITS_MAX_EXTRA_MEM_FNS)
    return -1;
  M.age_fns[M.n_age_fns++] = fn;
  return 0;
}

void
circuits_remove_extra_age_fn(circuit_extra_age_fn fn)
{
  for (int i = 0; i < M.n_age_fns; i++) {
    if (M.age_fns[i] == fn) {
      M.age_fns[i] = M.age_fns[--M.n_age_fns];
      return;
    }
  }
}

int
circuits_add_cache_free_fn(circuits_cache_free_fn fn)
{
  for (int i = 0; i < M.n_cache_fns; i++)
    if (M.cache_fns[i] == fn)
      return 0;
  if (M.n_cache_fns >= CIRCUITS_MAX_EXTRA_MEM_FNS)
    return -1;
  M.cache_fns[M.n_cache_fns++] = fn;
  return 0;
}

void
circuits_remove_cache_free_fn(circuits_cache_free_fn fn)
{
  for (int i = 0; i < M.n_cache_fns; i++) {
    if (M.cache_fns[i] == fn) {
      M.cache_fns[i] = M.cache_fns[--M.n_cache_fns];
      return;
    }
  }
}

static uint64_t
circuit_extra_oldest(circuit_t *c)
{
  uint64_t oldest = UINT64_MAX;
  for (int i = 0; i < M.n_age_fns; i++) {
    uint64_t t = M.age_fns[i](c);
    if (t < oldest)
      oldest = t;
  }
  return oldest;
}

static uint64_t
circuit_extra_mem(circuit_t *c)
{
  uint64_t extra = 0;
  for (int i = 0; i < M.n_extra_fns; i++)
    extra += M.extra_fns[i](c);
  return extra;
}

void
circuits_get_oom_stats(circuits_oom_stats_t *out)
{
  *out = M.stats;
}

or_circuit_t *
or_circuit_find_by_p_id_for_testing(uint32_t p_circ_id)
{
  for (dlist_node_t *n = dlist_first(&C.all); n; n = dlist_next(&C.all, n)) {
    or_circuit_t *oc = TO_OR_CIRCUIT(DLIST_ENTRY(n, circuit_t, all_node));
    if (oc && oc->p_circ_id == p_circ_id)
      return oc;
  }
  return NULL;
}

static log_ratelim_t oom_futile_ratelim = LOG_RATELIM_INIT(600, 1);

/* A circuit (circ set), a channel (chan set) or a pending handshake's
 * held cells (neither set: id is the channel's global id, circ_id the
 * circuit's) the handler may close. */
typedef struct oom_entry_t {
  circuit_t *circ;
  channel_t *chan;
  uint32_t circ_id;    /* pending handshakes only */
  uint64_t id;         /* circuit gid or channel global id: stable order */
  uint64_t oldest_us;  /* when its oldest held byte arrived */
  uint64_t bytes;      /* what closing it frees */
} oom_entry_t;

/* Oldest first; equal ages: bigger first; then circuits before channels,
 * and by creation (stable). */
static int
oom_entry_cmp(const void *a_, const void *b_)
{
  const oom_entry_t *a = a_, *b = b_;
  if (a->oldest_us != b->oldest_us)
    return a->oldest_us < b->oldest_us ? -1 : 1;
  if (a->bytes != b->bytes)
    return a->bytes > b->bytes ? -1 : 1;
  if (!a->circ != !b->circ)
    return a->circ ? -1 : 1;
  if (!a->chan != !b->chan)
    return a->chan ? -1 : 1;
  if (a->id != b->id)
    return a->id < b->id ? -1 : 1;
  return a->circ_id < b->circ_id ? -1 : a->circ_id > b->circ_id;
}

/* The channels whose connection buffers hold memory, as OOM entries
 * (channels_foreach visits only the ones not closing). */
typedef struct oom_chan_list_t {
  oom_entry_t *v;
  size_t n, cap;
} oom_chan_list_t;

static void
oom_collect_channel(channel_t *chan, void *arg)
{
  oom_chan_list_t *l = arg;
  size_t bytes = channel_buffered_alloc(chan);
  if (!bytes)
    return;
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 16;
    l->v = pc_realloc(l->v, l->cap * sizeof(*l->v));
  }
  oom_entry_t *e = &l->v[l->n++];
  e->circ = NULL;
  e->chan = chan;
  e->circ_id = 0;
  e->id = channel_global_id(chan);
  e->oldest_us = channel_oldest_data_us(chan);
  e->bytes = bytes;
}

static uint64_t
queue_oldest_us(const circ_queue_t *cq)
{
  return cq->cells.head ? cq->cells.head->queued_us : UINT64_MAX;
}

/* Close circuits and channels, the ones holding the oldest data first
 * (as tor closes circuits and connections), until the memory held is at
 * most CIRCUITS_OOM_RETAIN_PCT % of the limit. A channel's entry is what
 * its connection's buffers hold (memory no circuit is charged with);
 * closing it also closes its circuits. Allocates only here, when the
 * limit was crossed. */
static void
circuits_handle_oom(void)
{
  uint64_t usage = memacct_total();
  if (M.in_handler)
    return;
  M.oom_pending = 0;
  if (!M.max_bytes || usage <= M.max_bytes) {
    if (M.max_bytes)
      memacct_rearm(M.max_bytes);
    return;
  }
  /* Caches first: per-address DoS records that hold nothing, then what
   * the features' caches can rebuild. */
  dos_sweep_at(evloop_now_us(channels_loop()));
  for (int i = 0; i < M.n_cache_fns; i++)
    M.stats.cache_bytes_freed += M.cache_fns[i]();
  usage = memacct_total();
  if (usage <= M.max_bytes) {
    memacct_rearm(M.max_bytes);
    return;
  }
  M.in_handler = 1;
  char holders[256];
  memacct_describe(holders, sizeof(holders));
  oom_chan_list_t chans = {NULL, 0, 0};
  channels_foreach(oom_collect_channel, &chans);
  /* Cells held for circuits whose handshake is still on a worker. */
  size_t n_held = cpuworker_list_held(NULL, 0);
  cpuworker_held_t *held = NULL;
  if (n_held) {
    held = pc_malloc(n_held * sizeof(*held));
    n_held = cpuworker_list_held(held, n_held);
  }
  size_t cap = (size_t)C.n_or + C.n_origin + 1 + chans.n + n_held;
  oom_entry_t *v = pc_malloc(cap * sizeof(*v));
  if (chans.n)
    memcpy(v, chans.v, chans.n * sizeof(*v));
  size_t n = chans.n;
  free(chans.v);
  for (size_t i = 0; i < n_held; i++, n++) {
    v[n].circ = NULL;
    v[n].chan = NULL;
    v[n].circ_id = held[i].circ_id;
    v[n].id = held[i].chan_id;
    v[n].oldest_us = held[i].oldest_us;
    v[n].bytes = held[i].bytes;
  }
  free(held);
  unsigned live = 0;
  for (dlist_node_t *nd = dlist_first(&C.all); nd && n < cap;
       nd = dlist_next(&C.all, nd)) {
    circuit_t *c = DLIST_ENTRY(nd, circuit_t, all_node);
    live++;
    uint64_t cells = c->n_queue.cells.n;
    uint64_t oldest = queue_oldest_us(&c->n_queue);
    or_circuit_t *oc = TO_OR_CIRCUIT(c);
    if (oc) {
      cells += oc->p_queue.cells.n;
      uint64_t p = queue_oldest_us(&oc->p_queue);
      if (p < oldest)
        oldest = p;
    }
    uint64_t extra = circuit_extra_mem(c);
    if (extra) {
      uint64_t t = circuit_extra_oldest(c);
      if (t < oldest)
        oldest = t;
    }
    uint64_t bytes = cells * sizeof(packed_cell_t) + extra;
    if (!bytes)
      continue; /* closing it would free nothing */
    v[n].circ = c;
    v[n].chan = NULL;
    v[n].circ_id = 0;
    v[n].id = c->gid;
    v[n].oldest_us = oldest;
    v[n].bytes = bytes;
    n++;
  }
  qsort(v, n, sizeof(*v), oom_entry_cmp);

  uint64_t target = M.max_bytes / 100 * CIRCUITS_OOM_RETAIN_PCT +
                    M.max_bytes % 100 * CIRCUITS_OOM_RETAIN_PCT / 100;
  uint64_t need = usage - target; /* usage > max_bytes >= target */
  uint64_t now = evloop_now_us(channels_loop());
  uint64_t freed = 0, waited_us = 0;
  unsigned killed = 0, conns_killed = 0, pending_killed = 0;
  for (size_t i = 0; i < n && freed < need; i++) {
    circuit_t *c = v[i].circ;
    /* An earlier close (of a channel, or an on_closed callback) may have
     * closed it; channels stay allocated until the reaper runs. */
    if (c ? c->marked_for_close
          : v[i].chan && channel_is_closing(v[i].chan))
      continue;
    if (!c && !v[i].chan) {
      /* Held cells of a pending handshake (gone if its answer came). */
      size_t b = cpuworker_free_held_for_oom(v[i].id, v[i].circ_id);
      if (!b)
        continue;
      if (!killed && !conns_killed && !pending_killed &&
          now > v[i].oldest_us)
        waited_us = now - v[i].oldest_us;
      pending_killed++;
      freed += b;
      continue;
    }
    if (!killed && !conns_killed && !pending_killed &&
        v[i].oldest_us != UINT64_MAX && now > v[i].oldest_us)
      waited_us = now - v[i].oldest_us;
    if (c) {
      c->oom_closed = 1;
      circuit_mark_for_close(c, DESTROY_REASON_RESOURCELIMIT);
      killed++;
    } else {
      channel_close(v[i].chan, "out of memory for queues and buffers "
                               "(MaxMemInQueues)");
      conns_killed++;
    }
    freed += v[i].bytes;
  }
  free(v);
  M.in_handler = 0;
  /* What could not be freed at once (or at all: memory no circuit holds,
   * such as connection buffers) must grow by 1/16 of the limit before the
   * next scan; the budget lowers the trigger again once usage is back. */
  uint64_t after = memacct_total();
  memacct_rearm(after > M.max_bytes ? after + M.max_bytes / 16 + 1
                                    : M.max_bytes);
  if (!killed && !conns_killed && !pending_killed) {
    M.stats.n_futile++;
    unsigned suppressed = 0;
    if (log_ratelim_allow(&oom_futile_ratelim, time(NULL), &suppressed))
      log_warn("Queues and buffers hold %llu bytes (%s), above "
               "MaxMemInQueues (%llu bytes), but no circuit or connection "
               "holds any of it%s",
               (unsigned long long)usage, holders,
               (unsigned long long)M.max_bytes,
               suppressed ? " (repeated)" : "");
    return;
  }
  M.stats.n_oom_events++;
  M.stats.n_circuits_killed += killed;
  M.stats.n_pending_killed += pending_killed;
  M.stats.n_conns_killed += conns_killed;
  M.stats.bytes_freed += freed;
  M.stats.last_oom_time = time(NULL);
  char pending_note[64] = "";
  if (pending_killed)
    snprintf(pending_note, sizeof(pending_note),
             " (%u of them with the handshake pending)", pending_killed);
  log_notice("Out of memory for queues and buffers: %llu bytes held (%s), "
             "above MaxMemInQueues (%llu bytes). Closed %u circuit%s%s and "
             "%u connection%s (the oldest queued data first; it had waited "
             "%llu ms), freeing %llu bytes; %u circuits remain; %llu bytes "
             "held now.",
             (unsigned long long)usage, holders,
             (unsigned long long)M.max_bytes, killed + pending_killed,
             killed + pending_killed == 1 ? "" : "s", pending_note,
             conns_killed, conns_killed == 1 ? "" : "s",
             (unsigned long long)(waited_us / 1000),
             (unsigned long long)freed, live - killed,
             (unsigned long long)after);
}

static void
oom_deferred_cb(void *arg)
{
  (void)arg;
  circuits_handle_oom();
}

circuit_t *
circuit_find_by_gid(uint64_t gid)
{
  for (dlist_node_t *n = dlist_first(&C.all); n; n = dlist_next(&C.all, n)) {
    circuit_t *c = DLIST_ENTRY(n, circuit_t, all_node);
    if (c->gid == gid && !c->marked_for_close)
      return c;
  }
  return NULL;
}
