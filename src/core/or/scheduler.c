/* SPDX-License-Identifier: BSD-3-Clause */
/* scheduler.c -- the cross-channel EWMA circuit scheduler (see scheduler.h).
 *
 * Data structures, two levels so every operation is O(log n):
 *  - each channel keeps a min-heap of its circuit queues that have cells
 *    (chan->sched_queues), ordered by (scaled EWMA, round-robin sequence);
 *  - the scheduler keeps a min-heap of the channels that can take data now
 *    (G.ready), ordered by their best queue, so its top is the best queue
 *    of all writable channels.
 * A channel with queued cells is in exactly one state: READY (in G.ready),
 * WAIT_ROOM (its output buffer is above the low-water mark or the channel
 * is not open yet; the channel wakes it), WAIT_KERNEL (KIST said the
 * socket has enough unsent data; a timer wakes it) or WAIT_TOKENS (its
 * bandwidth bucket is empty; the bucket's refill wakes it). Channels
 * without queued cells are IDLE. Every non-idle channel is also on G.active, so
 * that renormalisation and reconfiguration can reach every queued average.
 *
 * One run (a deferred callback, so it sees every cell read in this loop
 * iteration): read the clock once, renormalise if the scale grew too big,
 * then repeatedly take the best queue of the best channel, move one cell,
 * add the current scale to that queue's average and fix both heaps. A
 * channel leaves G.ready when its byte budget for the run is spent.
 *
 * Bandwidth limits (BandwidthRate, RelayBandwidthRate) are token buckets
 * that the connections draw on when they write. If the scheduler filled
 * every output buffer regardless, the buckets would serve connections in
 * the order they blocked, and with one connection per circuit the EWMA
 * order would be lost. So in each run the scheduler hands a bucket's
 * channels no more than the bucket holds: the tokens go to the lowest
 * averages, and the others wait for the next refill.
 */
#include "core/or/scheduler.h"
#include "core/or/channel_internal.h"
#include "lib/container/vec.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/ratelimit.h"
#include "lib/net/sockstat.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

enum {
  SCHED_CHAN_IDLE = 0,
  SCHED_CHAN_READY,
  SCHED_CHAN_WAIT_ROOM,
  SCHED_CHAN_WAIT_KERNEL,
  SCHED_CHAN_WAIT_TOKENS,
};

/* What a run has handed to the channels of one bandwidth bucket. */
#define SCHED_MAX_BUCKETS 4
typedef struct sched_bucket_t {
  ratelimit_t *rl;
  uint64_t run;              /* run that handed[] counts for */
  size_t handed;             /* bytes given to its channels in that run */
  ratelimit_waiter_t waiter; /* queued while channels wait for tokens */
  ratelimit_t *held;         /* reference kept while the waiter waits */
} sched_bucket_t;

/* Move the time base forward once the scale reaches 2^RENORM_HALFLIVES;
 * averages then shrink by the same factor, so doubles never overflow. */
#define RENORM_HALFLIVES 32.0

static struct {
  int initialised;
  evloop_t *loop;
  scheduler_config_t cfg;
  int ewma_on;
  double halflife_us;
  uint64_t base_us;          /* time base of all queued averages */
  uint64_t seq;              /* round-robin counter */
  uint64_t run_id;
  minheap_t *ready;          /* channel_t, by best queue */
  dlist_t active;            /* channel_t.sched_node: non-idle channels */
  dlist_t kernel_wait;       /* channel_t.sched_wait_node */
  dlist_t token_wait;        /* channel_t.sched_wait_node */
  sched_bucket_t buckets[SCHED_MAX_BUCKETS];
  evloop_deferred_t *run_ev;
  evloop_timer_t *kernel_timer;
  ptrvec_t *to_flush;        /* channels written to in this run */
  scheduler_stats_t stats;
} G;

/* Tests replace the loop's clock with their own. */
static const uint64_t *fake_now_us;

static uint64_t
sched_now(void)
{
  return fake_now_us ? *fake_now_us : evloop_now_us(G.loop);
}

void
scheduler_set_clock_for_testing(const uint64_t *now_us)
{
  fake_now_us = now_us;
}

/* ---- ordering ----------------------------------------------------- */

static int
queue_cmp(const circ_queue_t *a, const circ_queue_t *b)
{
  if (G.ewma_on) {
    if (a->ewma < b->ewma)
      return -1;
    if (a->ewma > b->ewma)
      return 1;
  }
  return a->rr_seq < b->rr_seq ? -1 : a->rr_seq > b->rr_seq ? 1 : 0;
}

static int
queue_cmp_fn(const void *a, const void *b)
{
  return queue_cmp(a, b);
}

static int
chan_cmp_fn(const void *a, const void *b)
{
  const channel_t *ca = a, *cb = b;
  return queue_cmp(minheap_peek(ca->sched_queues),
                   minheap_peek(cb->sched_queues));
}

/* Express cq's average in the current time base. */
static void
queue_rebase(circ_queue_t *cq)
{
  if (cq->ewma_base_us == G.base_us)
    return;
  if (G.ewma_on && cq->ewma != 0.0) {
    double dt = (double)cq->ewma_base_us - (double)G.base_us;
    cq->ewma *= exp2(dt / G.halflife_us);
  }
  cq->ewma_base_us = G.base_us;
}

double
circ_queue_ewma(const circ_queue_t *cq)
{
  if (!G.initialised || !G.ewma_on)
    return cq->ewma;
  double dt = (double)sched_now() - (double)cq->ewma_base_us;
  return cq->ewma * exp2(-dt / G.halflife_us);
}

/* ---- channel states ---------------------------------------------- */

static void
schedule_run(void)
{
  evloop_deferred_schedule(G.run_ev);
}

static void
chan_leave_state(channel_t *chan)
{
  switch (chan->sched_state) {
  case SCHED_CHAN_READY:
    minheap_remove(G.ready, chan);
    break;
  case SCHED_CHAN_WAIT_KERNEL:
  case SCHED_CHAN_WAIT_TOKENS:
    dlist_remove(&chan->sched_wait_node);
    break;
  default:
    break;
  }
}

static void
chan_set_state(channel_t *chan, int state)
{
  if (chan->sched_state == state)
    return;
  chan_leave_state(chan);
  if (chan->sched_state == SCHED_CHAN_IDLE)
    dlist_insert_tail(&G.active, &chan->sched_node);
  chan->sched_state = state;
  switch (state) {
  case SCHED_CHAN_IDLE:
    dlist_remove(&chan->sched_node);
    break;
  case SCHED_CHAN_READY:
    minheap_add(G.ready, chan);
    schedule_run();
    break;
  case SCHED_CHAN_WAIT_KERNEL:
    dlist_insert_tail(&G.kernel_wait, &chan->sched_wait_node);
    G.stats.kernel_limited++;
    if (!evloop_timer_is_pending(G.kernel_timer))
      evloop_timer_schedule(G.kernel_timer,
                            (uint64_t)G.cfg.run_interval_ms * 1000);
    break;
  case SCHED_CHAN_WAIT_TOKENS:
    dlist_insert_tail(&G.token_wait, &chan->sched_wait_node);
    G.stats.token_limited++;
    break;
  default:
    break;
  }
}

void
scheduler_channel_init(channel_t *chan)
{
  chan->sched_queues =
      minheap_new(queue_cmp_fn, offsetof(circ_queue_t, heap_idx));
  chan->sched_state = SCHED_CHAN_IDLE;
  chan->sched_idx = MINHEAP_IDX_NONE;
  dlist_node_init(&chan->sched_node);
  dlist_node_init(&chan->sched_wait_node);
}

void
scheduler_channel_free(channel_t *chan)
{
  if (!chan->sched_queues)
    return;
  circ_queue_t *cq;
  while ((cq = minheap_pop(chan->sched_queues)))
    ;
  if (chan->sched_state != SCHED_CHAN_IDLE)
    chan_set_state(chan, SCHED_CHAN_IDLE);
  minheap_free(chan->sched_queues, NULL);
}

void
scheduler_channel_wakeup(channel_t *chan)
{
  if (!chan->sched_queues || minheap_len(chan->sched_queues) == 0)
    return;
  chan_set_state(chan, SCHED_CHAN_READY);
}

void
scheduler_queue_has_cells(circ_queue_t *cq)
{
  channel_t *chan = cq->chan;
  if (cq->heap_idx != MINHEAP_IDX_NONE) {
    return; /* already scheduled; its key does not change on push */
  }
  queue_rebase(cq);
  cq->rr_seq = ++G.seq;
  minheap_add(chan->sched_queues, cq);
  if (chan->sched_state == SCHED_CHAN_READY)
    minheap_update(G.ready, chan);
  else if (chan->sched_state == SCHED_CHAN_IDLE)
    chan_set_state(chan, SCHED_CHAN_READY);
}

void
scheduler_queue_clear(circ_queue_t *cq)
{
  channel_t *chan = cq->chan;
  if (cq->heap_idx == MINHEAP_IDX_NONE || !chan)
    return;
  minheap_remove(chan->sched_queues, cq);
  if (minheap_len(chan->sched_queues) == 0)
    chan_set_state(chan, SCHED_CHAN_IDLE);
  else if (chan->sched_state == SCHED_CHAN_READY)
    minheap_update(G.ready, chan);
}

/* ---- bandwidth buckets ------------------------------------------- */

static void token_wake_cb(void *arg);

static sched_bucket_t *
bucket_slot(ratelimit_t *rl)
{
  sched_bucket_t *free_slot = NULL;
  for (int i = 0; i < SCHED_MAX_BUCKETS; i++) {
    sched_bucket_t *b = &G.buckets[i];
    if (b->rl == rl)
      return b;
    if (!free_slot && !ratelimit_waiter_is_waiting(&b->waiter))
      free_slot = b;
  }
  if (free_slot) {
    free_slot->rl = rl;
    free_slot->run = 0;
    free_slot->handed = 0;
  }
  return free_slot;
}

/* Bytes the channels of rl may still be handed in this run. */
static size_t
bucket_room(ratelimit_t *rl)
{
  if (!rl || !ratelimit_is_limited(rl, RATELIMIT_WRITE))
    return SIZE_MAX;
  sched_bucket_t *b = bucket_slot(rl);
  if (!b)
    return SIZE_MAX; /* more groups than slots: do not gate */
  if (b->run != G.run_id) {
    b->run = G.run_id;
    b->handed = 0;
  }
  size_t avail = ratelimit_avail(rl, RATELIMIT_WRITE);
  return avail > b->handed ? avail - b->handed : 0;
}

static void
bucket_charge(ratelimit_t *rl, size_t n)
{
  if (!rl || !ratelimit_is_limited(rl, RATELIMIT_WRITE))
    return;
  sched_bucket_t *b = bucket_slot(rl);
  if (b && b->run == G.run_id)
    b->handed += n;
}

static void
bucket_wait(ratelimit_t *rl)
{
  sched_bucket_t *b = bucket_slot(rl);
  if (!b || ratelimit_waiter_is_waiting(&b->waiter))
    return;
  if (b->held != rl) {
    ratelimit_unref(b->held);
    ratelimit_ref(rl);
    b->held = rl;
  }
  ratelimit_wait(rl, RATELIMIT_WRITE, &b->waiter);
}

static void
bucket_release(sched_bucket_t *b)
{
  ratelimit_waiter_cancel(&b->waiter);
  ratelimit_unref(b->held);
  b->held = NULL;
  b->rl = NULL;
}

/* ---- one run ------------------------------------------------------ */

/* How long a KIST answer may stand in for a new query. */
#define KIST_REUSE_US 10000

/* 1 if the last KIST query on chan (at most KIST_REUSE_US old) shows that
 * the kernel cannot be the limit for a budget of 'budget' bytes on top of
 * 'queued' in the output buffer, so that the getsockopt can be saved. The
 * kernel's room only grows as it sends and as ACKs come, so the room then,
 * less what the connection wrote since (plus TLS framing, counted
 * generously), is a lower bound; only a shrinking congestion window would
 * make it wrong, and only until the next query. */
static int
kist_room_known(const channel_t *chan, int64_t budget, size_t queued)
{
  if (!chan->kist_at_us)
    return 0;
  uint64_t now = sched_now();
  if (now < chan->kist_at_us || now - chan->kist_at_us > KIST_REUSE_US)
    return 0;
  uint64_t w = conn_bytes_written(chan->conn) - chan->kist_written;
  int64_t low = chan->kist_room - (int64_t)(w + w / 64);
  return low - (int64_t)queued >= budget;
}

/* Work out how many bytes chan may take in this run. Returns the budget
 * (> 0), or 0 after moving the channel to the state that will wake it. */
static int64_t
chan_budget(channel_t *chan)
{
  if (chan->carrier) {
    /* A carried channel (BackTap) has no output buffer: its transport's
     * window says, cell by cell, whether it takes one more. */
    chan->sched_run = G.run_id;
    chan->sched_budget = channel_accepts_circuit_cells(chan) &&
                                 chan->carrier->can_send(chan->carrier_arg)
                             ? CELL_MAX_NETWORK_LEN
                             : 0;
    return chan->sched_budget;
  }
  if (chan->sched_run == G.run_id)
    return chan->sched_budget;
  chan->sched_run = G.run_id;
  chan->sched_budget = 0;
  if (!channel_accepts_circuit_cells(chan))
    return 0;
  size_t queued = buf_datalen(conn_outbuf(chan->conn));
  if (queued >= CHAN_OUTBUF_HIGH)
    return 0;
  int64_t budget = (int64_t)(CHAN_OUTBUF_HIGH - queued);
  if (G.cfg.socket_aware && kist_room_known(chan, budget, queued)) {
    G.stats.kist_reused++;
  } else if (G.cfg.socket_aware) {
    sockstat_tcp_t st;
    G.stats.kist_queries++;
    if (sockstat_tcp_send(conn_fd(chan->conn), &st) == 0) {
      int64_t room = sockstat_kist_limit(&st, G.cfg.sockbuf_factor);
      chan->kist_room = room;
      chan->kist_at_us = sched_now();
      chan->kist_written = conn_bytes_written(chan->conn);
      int64_t lim = room - (int64_t)queued;
      if (lim < budget)
        budget = lim;
    }
  }
  chan->sched_budget = budget > 0 ? budget : 0;
  return chan->sched_budget;
}

/* chan has cells but no budget left: wait for its output buffer to drain
 * (a DRAINED event will come) or for the kernel (the timer). */
static void
chan_park(channel_t *chan)
{
  if (!channel_accepts_circuit_cells(chan) || chan->carrier ||
      buf_datalen(conn_outbuf(chan->conn)) > CHAN_OUTBUF_LOW)
    chan_set_state(chan, SCHED_CHAN_WAIT_ROOM);
  else
    chan_set_state(chan, SCHED_CHAN_WAIT_KERNEL);
}

static void
renormalise(uint64_t now_us)
{
  double f = exp2(-((double)now_us - (double)G.base_us) / G.halflife_us);
  for (dlist_node_t *n = dlist_first(&G.active); n;
       n = dlist_next(&G.active, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, sched_node);
    for (size_t i = 0; i < minheap_len(chan->sched_queues); i++) {
      circ_queue_t *cq = minheap_get(chan->sched_queues, i);
      cq->ewma *= f; /* monotone: both heaps stay ordered */
      cq->ewma_base_us = now_us;
    }
  }
  G.base_us = now_us;
  G.stats.renormalisations++;
}

static void
scheduler_run(void *arg)
{
  (void)arg;
  uint64_t now = sched_now();
  G.run_id++;
  G.stats.runs++;
  double scale = 1.0;
  if (G.ewma_on) {
    double span = ((double)now - (double)G.base_us) / G.halflife_us;
    if (span > RENORM_HALFLIVES) {
      renormalise(now);
      span = 0;
    }
    scale = exp2(span);
  }
  channel_t *chan;
  while ((chan = minheap_peek(G.ready))) {
    int64_t budget = chan_budget(chan);
    if (budget <= 0) {
      chan_park(chan);
      continue;
    }
    circ_queue_t *cq = minheap_peek(chan->sched_queues);
    size_t len = cq->cells.head->len;
    size_t room_g = bucket_room(chan->bw_global);
    size_t room_r = bucket_room(chan->bw_relay);
    if (room_g < len || room_r < len) {
      bucket_wait(room_g < len ? chan->bw_global : chan->bw_relay);
      chan_set_state(chan, SCHED_CHAN_WAIT_TOKENS);
      continue;
    }
    bucket_charge(chan->bw_global, len);
    bucket_charge(chan->bw_relay, len);
    packed_cell_t *pc = cell_queue_pop(&cq->cells);
    if (chan->carrier)
      (void)chan->carrier->send(chan->carrier_arg, pc->body, pc->len);
    else
      buf_add_unsplit(conn_outbuf(chan->conn), pc->body, pc->len);
    chan->sched_budget -= pc->len;
    uint64_t waited = now > pc->queued_us ? now - pc->queued_us : 0;
    cq->stats.cells_sent++;
    cq->stats.queued_us_total += waited;
    if (waited > cq->stats.queued_us_max)
      cq->stats.queued_us_max = waited;
    circ_queue_note_removed(cq, pc, waited);
    packed_cell_free(pc);
    channel_note_cell_out(chan);
    G.stats.cells++;
    if (chan->sched_flush_run != G.run_id) {
      /* first cell for chan in this run: flush it afterwards */
      ptrvec_push(G.to_flush, chan);
      chan->sched_flush_run = G.run_id;
    }
    if (G.ewma_on)
      cq->ewma += scale;
    cq->rr_seq = ++G.seq;
    if (cq->cells.n == 0)
      minheap_remove(chan->sched_queues, cq);
    else
      minheap_update(chan->sched_queues, cq);
    if (minheap_len(chan->sched_queues) == 0)
      chan_set_state(chan, SCHED_CHAN_IDLE);
    else
      minheap_update(G.ready, chan);
  }
  for (size_t i = 0; i < ptrvec_len(G.to_flush); i++) {
    channel_t *c = ptrvec_get(G.to_flush, i);
    if (c->conn)
      conn_flush_soon(c->conn);
  }
  ptrvec_clear(G.to_flush);
}

static void
token_wake_cb(void *arg)
{
  sched_bucket_t *b = arg;
  ratelimit_t *held = b->held;
  b->held = NULL;
  dlist_node_t *n;
  while ((n = dlist_first(&G.token_wait))) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, sched_wait_node);
    chan_set_state(chan, SCHED_CHAN_READY); /* unlinks n */
  }
  scheduler_run(NULL);
  ratelimit_unref(held);
}

static void
kernel_timer_cb(void *arg)
{
  (void)arg;
  dlist_node_t *n;
  while ((n = dlist_first(&G.kernel_wait))) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, sched_wait_node);
    chan_set_state(chan, SCHED_CHAN_READY); /* unlinks n */
  }
  scheduler_run(NULL);
}

void
scheduler_run_now(void)
{
  evloop_deferred_cancel(G.run_ev);
  scheduler_run(NULL);
}

/* ---- configuration ------------------------------------------------ */

void
scheduler_config_default(scheduler_config_t *cfg)
{
  cfg->halflife_sec = SCHEDULER_DEFAULT_HALFLIFE_SEC;
  cfg->socket_aware = 1;
  cfg->run_interval_ms = SCHEDULER_DEFAULT_RUN_INTERVAL_MS;
  cfg->sockbuf_factor = SCHEDULER_DEFAULT_SOCKBUF_FACTOR;
}

/* Re-sort every heap after the ordering rule changed. */
static void
rebuild_heaps(void)
{
  ptrvec_t *tmp = ptrvec_new();
  for (dlist_node_t *n = dlist_first(&G.active); n;
       n = dlist_next(&G.active, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, sched_node);
    void *e;
    while ((e = minheap_pop(chan->sched_queues)))
      ptrvec_push(tmp, e);
    for (size_t i = 0; i < ptrvec_len(tmp); i++)
      minheap_add(chan->sched_queues, ptrvec_get(tmp, i));
    ptrvec_clear(tmp);
  }
  void *e;
  while ((e = minheap_pop(G.ready)))
    ptrvec_push(tmp, e);
  for (size_t i = 0; i < ptrvec_len(tmp); i++)
    minheap_add(G.ready, ptrvec_get(tmp, i));
  ptrvec_free(tmp, NULL);
}

void
scheduler_configure(const scheduler_config_t *cfg)
{
  int was_on = G.ewma_on;
  double old_halflife = G.halflife_us;
  int new_on = cfg->halflife_sec > 0;
  if (G.initialised && was_on &&
      (!new_on || cfg->halflife_sec * 1e6 != old_halflife)) {
    /* Carry the averages over: decay them to now with the old half-life
     * and make now the base. Queues without cells keep their old base and
     * are decayed with the new half-life when they next get cells. */
    renormalise(sched_now());
  }
  G.cfg = *cfg;
  if (G.cfg.run_interval_ms == 0)
    G.cfg.run_interval_ms = SCHEDULER_DEFAULT_RUN_INTERVAL_MS;
  if (G.cfg.sockbuf_factor < 0)
    G.cfg.sockbuf_factor = 0;
  G.ewma_on = new_on;
  G.halflife_us = new_on ? cfg->halflife_sec * 1e6 : 0;
  if (G.initialised && was_on != new_on)
    rebuild_heaps();
  if (G.initialised && (was_on != new_on || old_halflife != G.halflife_us))
    log_info("Circuit scheduling: %s", new_on ? "EWMA" : "round robin");
}

void
scheduler_get_config(scheduler_config_t *cfg)
{
  *cfg = G.cfg;
}

void
scheduler_init(evloop_t *loop)
{
  scheduler_config_t cfg = G.cfg;
  int had_cfg = G.cfg.run_interval_ms != 0;
  memset(&G, 0, sizeof(G));
  G.loop = loop;
  G.ready = minheap_new(chan_cmp_fn, offsetof(channel_t, sched_idx));
  dlist_init(&G.active);
  dlist_init(&G.kernel_wait);
  dlist_init(&G.token_wait);
  for (int i = 0; i < SCHED_MAX_BUCKETS; i++)
    ratelimit_waiter_init(&G.buckets[i].waiter, token_wake_cb,
                          &G.buckets[i]);
  G.run_ev = evloop_deferred_new(loop, scheduler_run, NULL);
  G.kernel_timer = evloop_timer_new(loop, kernel_timer_cb, NULL);
  G.to_flush = ptrvec_new();
  G.base_us = sched_now();
  if (!had_cfg)
    scheduler_config_default(&cfg);
  scheduler_configure(&cfg); /* a configuration set before init stays */
  G.initialised = 1;
}

void
scheduler_shutdown(void)
{
  if (!G.initialised)
    return;
  for (int i = 0; i < SCHED_MAX_BUCKETS; i++)
    bucket_release(&G.buckets[i]);
  evloop_deferred_free(G.run_ev);
  evloop_timer_free(G.kernel_timer);
  minheap_free(G.ready, NULL);
  ptrvec_free(G.to_flush, NULL);
  scheduler_config_t cfg = G.cfg;
  memset(&G, 0, sizeof(G));
  G.cfg = cfg;
}

void
scheduler_get_stats(scheduler_stats_t *out)
{
  *out = G.stats;
  out->channels_ready = G.ready ? (unsigned)minheap_len(G.ready) : 0;
  out->channels_active = (unsigned)dlist_len(&G.active);
}

int
scheduler_check_invariants(void)
{
  if (minheap_check(G.ready) < 0)
    return -1;
  for (dlist_node_t *n = dlist_first(&G.active); n;
       n = dlist_next(&G.active, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, sched_node);
    if (minheap_check(chan->sched_queues) < 0)
      return -1;
    if (minheap_len(chan->sched_queues) == 0) {
      log_warn("scheduler: active channel without queues");
      return -1;
    }
    if ((chan->sched_state == SCHED_CHAN_READY) !=
        (chan->sched_idx != MINHEAP_IDX_NONE)) {
      log_warn("scheduler: channel state and ready heap disagree");
      return -1;
    }
    for (size_t i = 0; i < minheap_len(chan->sched_queues); i++) {
      circ_queue_t *cq = minheap_get(chan->sched_queues, i);
      if (cq->chan != chan || cq->cells.n == 0) {
        log_warn("scheduler: queue on the wrong channel or empty");
        return -1;
      }
    }
  }
  return 0;
}
