/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap.c -- BackTap's per-hop reliability, FWD feedback and Vegas window
 * (Tschorsch & Scheuermann, NSDI 2016, sections 3.2-3.4; doc/backtap.md).
 *
 * Send half of a flow, in sequence-number order:
 *
 *   snd_fwd <= snd_una <= snd_nxt
 *   [snd_fwd, snd_una)  ACKed, not yet FWDed: only their send times kept
 *   [snd_una, snd_nxt)  in flight, kept for retransmission
 *
 * One ring of slots covers [snd_fwd, snd_nxt); the window limits
 * snd_nxt - snd_fwd to swnd <= swnd_max, so the ring never holds more than
 * swnd_max slots. ACKs drive reliability exactly as in TCP: RTO per
 * RFC 6298 (SRTT/RTTVAR from ACK round trips, Karn's rule, doubling
 * backoff), fast retransmit after three duplicate ACKs and NewReno partial
 * ACKs (RFC 5681, RFC 6582). FWDs drive the window: each FWD round trip of
 * a cell sent once is a Vegas sample; per round trip ("epoch") the smallest
 * sample is actualRtt, the link-wide minimum is baseRtt, and
 *   diff = swnd * actualRtt / baseRtt - swnd
 * moves swnd by +1 (diff < alpha), -1 (diff > beta) or not (equation 1).
 * Before the first such adjustment the window grows by one per FWDed cell
 * every other round trip (Vegas slow start) until a round trip's
 * actualRtt shows diff > alpha;
 * a window-limited flow that sees no queue at all for two round trips
 * starts doubling again (doc/backtap.md: what differs from the paper).
 *
 * Receive half: rcv_fwd <= rcv_nxt; [rcv_fwd, rcv_nxt) was delivered in
 * order and is held by the circuit layer (the fused queue); cells above
 * rcv_nxt wait in a ring indexed by seq - rcv_nxt. A cell is accepted only
 * if seq - rcv_fwd < swnd_max (a sender that obeys its window never goes
 * beyond) and the link's budget of held cells is not exhausted; otherwise
 * it is dropped before any ACK (the paper's deliberate drop), which the
 * sender repairs by retransmission. Cells completing the in-order run are
 * ACKed together when feedback is flushed (once per event, through a timer
 * at "now"); a cell out of order is ACKed at once, so the sender sees
 * duplicate ACKs.
 *
 * Closing a circuit reports what the circuit layer held as forwarded and
 * says so at once; the flow then lingers only until the peer has ACKed what
 * we sent, ACKing (without keeping) what the peer still sends. A circuit
 * closed from inside deliver() is closed when the cells being handed over
 * are through.
 *
 * Anything that does not fit -- malformed, unknown circuit, duplicate,
 * outside the window, feedback for cells never sent -- is counted and
 * dropped before it changes any state. Flows wait in a min-heap by their
 * next deadline (RTO or window probe), so the link asks the layer below for
 * one timer. A flow that retransmits or probes max_backoffs times in a row
 * without an answer fails the whole link if nothing at all came from the
 * peer meanwhile (it stopped acknowledging), otherwise only that circuit
 * (the peer is alive but does not know it any more).
 */
#include "feature/backtap/backtap.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/container/minheap.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define NO_DEADLINE UINT64_MAX
#define SLOT_RETX 0x01

typedef struct txslot_t {
  uint8_t *rec;     /* the CELL record; NULL once ACKed */
  uint64_t sent_us; /* first transmission */
  uint8_t flags;    /* SLOT_RETX: sent more than once (no RTT sample) */
} txslot_t;

struct backtap_flow_t {
  backtap_link_t *link;
  uint32_t circid;
  void *arg;
  int heap_idx;
  uint64_t deadline; /* RTO or probe, NO_DEADLINE when none */
  dlist_node_t fb_node; /* in link->fb_pending */
  dlist_node_t wait_node; /* in link->tx_waiters */
  uint8_t fb_pending;   /* BACKTAP_FB_* bits to send at the next flush */
  unsigned closing : 1;
  unsigned want_write : 1;
  unsigned snd_started : 1;
  unsigned rcv_synced : 1;
  unsigned slow_start : 1;
  unsigned in_recovery : 1;
  unsigned probing : 1;
  unsigned delivering : 1;   /* inside deliver(): closing waits */
  unsigned close_after : 1;  /* backtap_flow_close() during deliver() */
  unsigned free_after : 1;   /* backtap_flow_free() during deliver() */
  unsigned epoch_limited : 1;
  unsigned epoch_loss : 1;
  unsigned ss_hold : 1; /* slow start: this round trip keeps the window */
  unsigned snd_path : 1; /* our SYN says PATH */
  unsigned rcv_path : 1; /* the peer's SYN said PATH */

  /* send half */
  uint32_t snd_fwd, snd_una, snd_nxt;
  txslot_t *tx;
  uint32_t tx_cap; /* power of two */
  unsigned swnd;
  uint32_t epoch_end;      /* epoch ends when snd_fwd passes this */
  uint64_t epoch_min_rtt;  /* actualRtt candidate */
  unsigned epoch_swnd;     /* swnd when the round trip began */
  uint64_t srtt, rttvar, rto;
  unsigned backoffs, dupacks;
  uint64_t unanswered_since; /* first timeout of the current series */
  unsigned calm_epochs; /* window-limited round trips without a queue */
  uint32_t recover;
  uint64_t last_act_rtt;   /* actualRtt of the last round trip that had one */
  uint32_t n_retransmitted; /* cells of this flow sent again */
  uint32_t n_dropped;       /* cells of this flow dropped before ACK */

  /* receive half */
  uint32_t rcv_isn, rcv_fwd, rcv_nxt;
  uint8_t **ooo; /* BACKTAP_CELL_BODY_LEN bodies indexed by seq - rcv_nxt */
  uint32_t ooo_cap, ooo_count;
};

struct backtap_link_t {
  backtap_params_t p;
  backtap_lower_ops_t lower;
  void *lower_arg;
  backtap_upper_ops_t upper;
  void *upper_arg;
  hmap_t *flows; /* circid (4 bytes, big-endian) -> flow */
  minheap_t *timers;
  dlist_t fb_pending;
  dlist_t tx_waiters;
  uint64_t armed; /* deadline last given to set_timer */
  uint64_t base_rtt;
  size_t tx_held; /* cells kept for retransmission */
  size_t rx_held; /* cells delivered and not forwarded, and out of order */
  size_t ooo_held; /* of which out of order (copies kept here) */
  uint64_t last_heard; /* when a record from the peer was last used */
  size_t ring_bytes;
  int dead;
  backtap_stats_t st;
};

void
backtap_params_default(backtap_params_t *p)
{
  memset(p, 0, sizeof(*p));
  p->alpha = 2;
  p->beta = 4;
  p->swnd_init = 2;
  p->swnd_max = 1024;
  p->link_max_cells = 16384;
  p->max_flows = 16384;
  p->rto_init_us = 1000000;
  p->rto_min_us = 200000;
  p->rto_max_us = 60000000;
  p->max_backoffs = 8;
  p->dupack_thresh = 3;
}

static int
flow_deadline_cmp(const void *a, const void *b)
{
  const backtap_flow_t *x = a, *y = b;
  return x->deadline < y->deadline ? -1 : x->deadline > y->deadline;
}

static uint64_t
link_now(backtap_link_t *link)
{
  return link->lower.now_us(link->lower_arg);
}

static void
link_rearm(backtap_link_t *link)
{
  uint64_t when = NO_DEADLINE;
  if (!link->dead) {
    backtap_flow_t *f = minheap_peek(link->timers);
    if (f)
      when = f->deadline;
    if (!dlist_is_empty(&link->fb_pending))
      when = link_now(link);
  }
  if (when != link->armed) {
    link->armed = when;
    link->lower.set_timer(link->lower_arg, when);
  }
}

static void
flow_set_deadline(backtap_flow_t *f, uint64_t when)
{
  minheap_t *h = f->link->timers;
  f->deadline = when;
  if (when == NO_DEADLINE) {
    if (f->heap_idx != MINHEAP_IDX_NONE)
      minheap_remove(h, f);
  } else if (f->heap_idx == MINHEAP_IDX_NONE) {
    minheap_add(h, f);
  } else {
    minheap_update(h, f);
  }
}

backtap_link_t *
backtap_link_new(const backtap_params_t *params,
                 const backtap_lower_ops_t *lower, void *lower_arg,
                 const backtap_upper_ops_t *upper, void *upper_arg)
{
  backtap_link_t *link = pc_zalloc(sizeof(*link));
  if (params)
    link->p = *params;
  else
    backtap_params_default(&link->p);
  if (link->p.swnd_max < 2)
    link->p.swnd_max = 2;
  if (link->p.swnd_init < 1 || link->p.swnd_init > link->p.swnd_max)
    link->p.swnd_init = link->p.swnd_max < 2 ? link->p.swnd_max : 2;
  if (link->p.beta < link->p.alpha)
    link->p.beta = link->p.alpha;
  link->lower = *lower;
  link->lower_arg = lower_arg;
  link->upper = *upper;
  link->upper_arg = upper_arg;
  link->flows = hmap_new(4);
  link->timers = minheap_new(flow_deadline_cmp,
                             offsetof(backtap_flow_t, heap_idx));
  dlist_init(&link->fb_pending);
  dlist_init(&link->tx_waiters);
  link->armed = NO_DEADLINE;
  link->base_rtt = NO_DEADLINE;
  return link;
}

static void flow_destroy(backtap_flow_t *f);
static void flow_want_feedback(backtap_flow_t *f, uint8_t bits);
static void flow_send_feedback(backtap_flow_t *f, uint8_t bits);

static void
flow_free_cb(void *v)
{
  flow_destroy(v);
}

void
backtap_link_free_(backtap_link_t *link)
{
  if (!link)
    return;
  /* Heap and lists point into the flows: empty them before freeing. */
  while (minheap_pop(link->timers))
    ;
  dlist_init(&link->fb_pending);
  dlist_init(&link->tx_waiters);
  hmap_free(link->flows, flow_free_cb);
  minheap_free(link->timers, NULL);
  if (link->armed != NO_DEADLINE)
    link->lower.set_timer(link->lower_arg, NO_DEADLINE);
  free(link);
}

static backtap_flow_t *
link_find(const backtap_link_t *link, uint32_t circid)
{
  uint8_t key[4];
  set_u32(key, circid);
  return hmap_get(link->flows, key);
}

static backtap_flow_t *
flow_create(backtap_link_t *link, uint32_t circid, void *arg)
{
  backtap_flow_t *f = pc_zalloc(sizeof(*f));
  uint8_t key[4];
  f->link = link;
  f->circid = circid;
  f->arg = arg;
  f->heap_idx = MINHEAP_IDX_NONE;
  f->deadline = NO_DEADLINE;
  dlist_node_init(&f->fb_node);
  dlist_node_init(&f->wait_node);
  uint32_t isn;
  crypt_rand((uint8_t *)&isn, sizeof(isn));
  f->snd_fwd = f->snd_una = f->snd_nxt = isn;
  f->swnd = f->epoch_swnd = link->p.swnd_init;
  f->slow_start = 1;
  f->epoch_end = isn;
  f->epoch_min_rtt = NO_DEADLINE;
  f->rto = link->p.rto_init_us;
  set_u32(key, circid);
  hmap_set(link->flows, key, f);
  return f;
}

backtap_flow_t *
backtap_flow_new(backtap_link_t *link, uint32_t circid, void *flow_arg)
{
  if (link->dead || circid == 0 || link_find(link, circid) ||
      hmap_size(link->flows) >= link->p.max_flows)
    return NULL;
  return flow_create(link, circid, flow_arg);
}

/* Free the flow's memory and give back what it held; the caller has
 * removed it from the map (or is freeing the map). */
static void
flow_destroy(backtap_flow_t *f)
{
  backtap_link_t *link = f->link;
  for (uint32_t s = f->snd_fwd; s != f->snd_nxt; s++) {
    txslot_t *slot = &f->tx[s & (f->tx_cap - 1)];
    if (slot->rec) {
      free(slot->rec);
      link->tx_held--;
    }
  }
  link->ring_bytes -= f->tx_cap * sizeof(txslot_t);
  free(f->tx);
  if (f->ooo) {
    for (uint32_t i = 0; i < f->ooo_cap; i++)
      free(f->ooo[i]);
    link->ring_bytes -= f->ooo_cap * sizeof(uint8_t *);
    free(f->ooo);
  }
  link->rx_held -= f->ooo_count;
  link->ooo_held -= f->ooo_count;
  link->rx_held -= (uint32_t)(f->rcv_nxt - f->rcv_fwd);
  free(f);
}

static void
flow_unlink(backtap_flow_t *f)
{
  backtap_link_t *link = f->link;
  uint8_t key[4];
  if (f->heap_idx != MINHEAP_IDX_NONE)
    minheap_remove(link->timers, f);
  if (dlist_node_is_linked(&f->fb_node))
    dlist_remove(&f->fb_node);
  if (dlist_node_is_linked(&f->wait_node))
    dlist_remove(&f->wait_node);
  set_u32(key, f->circid);
  hmap_remove(link->flows, key);
}

void
backtap_flow_free_(backtap_flow_t *flow)
{
  if (!flow)
    return;
  if (flow->delivering) {
    flow->free_after = 1; /* cell_input() frees it when deliver() is done */
    return;
  }
  backtap_link_t *link = flow->link;
  flow_unlink(flow);
  flow_destroy(flow);
  link_rearm(link);
}

void
backtap_flow_close(backtap_flow_t *flow)
{
  if (flow->delivering) {
    flow->close_after = 1; /* a DESTROY delivered: close when it returns */
    return;
  }
  /* What the circuit layer held will never be forwarded: count it as
   * gone, and tell the peer now (with any feedback still pending), so its
   * window does not wait for cells that will never leave. */
  if (flow->rcv_synced && flow->rcv_fwd != flow->rcv_nxt) {
    flow->link->rx_held -= (uint32_t)(flow->rcv_nxt - flow->rcv_fwd);
    flow->rcv_fwd = flow->rcv_nxt;
    flow->fb_pending |= BACKTAP_FB_FWD;
  }
  if (flow->fb_pending && !flow->link->dead) {
    flow->fb_pending = 0;
    if (dlist_node_is_linked(&flow->fb_node))
      dlist_remove(&flow->fb_node);
    flow_send_feedback(flow, 0);
  }
  if (flow->snd_una == flow->snd_nxt) {
    backtap_flow_free_(flow);
    return;
  }
  flow->closing = 1;
  flow->want_write = 0;
  if (dlist_node_is_linked(&flow->wait_node))
    dlist_remove(&flow->wait_node);
  link_rearm(flow->link);
}

/* ---- sending ---- */

/* During loss recovery every duplicate ACK is a cell that reached the
 * peer but waits behind the hole and cannot be forwarded (so it cannot be
 * FWDed either): as TCP's fast recovery inflates cwnd by one per duplicate
 * ACK (RFC 5681 3.2), those cells do not count against the window, so the
 * pipe stays full while the hole is repaired. The receive window still
 * bounds them (swnd_max). */
static int
flow_window_open(const backtap_flow_t *f)
{
  uint32_t w = f->swnd + (f->in_recovery ? f->dupacks : 0);
  if (w > f->link->p.swnd_max)
    w = f->link->p.swnd_max;
  return (uint32_t)(f->snd_nxt - f->snd_fwd) < w;
}

/* Everything is ACKed but the window is full: only a FWD opens it, and if
 * the peer's last FWD was lost none will come unprompted. Probe after an
 * RTO (and back off) until the window opens or cells go out again. */
static void
flow_update_probe(backtap_flow_t *f, uint64_t now, int restart)
{
  if (f->snd_una != f->snd_nxt)
    return; /* the RTO timer runs */
  if (f->want_write && !flow_window_open(f)) {
    if (!f->probing || restart || f->deadline == NO_DEADLINE)
      flow_set_deadline(f, now + f->rto);
    f->probing = 1;
  } else {
    f->probing = 0;
    flow_set_deadline(f, NO_DEADLINE);
  }
}

int
backtap_flow_can_send(backtap_flow_t *flow)
{
  backtap_link_t *link = flow->link;
  if (link->dead || flow->closing)
    return 0;
  if (!flow_window_open(flow)) {
    flow->want_write = 1;
    flow->epoch_limited = 1;
    if (!flow->probing) {
      flow_update_probe(flow, link_now(link), 0);
      link_rearm(link);
    }
    return 0;
  }
  if (link->tx_held >= link->p.link_max_cells) {
    flow->want_write = 1;
    if (!dlist_node_is_linked(&flow->wait_node))
      dlist_insert_tail(&link->tx_waiters, &flow->wait_node);
    return 0;
  }
  return 1;
}

static void
flow_grow_tx(backtap_flow_t *f)
{
  uint32_t used = f->snd_nxt - f->snd_fwd;
  if (used < f->tx_cap)
    return;
  uint32_t ncap = f->tx_cap ? f->tx_cap * 2 : 8;
  txslot_t *n = pc_calloc(ncap, sizeof(*n));
  for (uint32_t s = f->snd_fwd; s != f->snd_nxt; s++)
    n[s & (ncap - 1)] = f->tx[s & (f->tx_cap - 1)];
  f->link->ring_bytes += (ncap - f->tx_cap) * sizeof(txslot_t);
  free(f->tx);
  f->tx = n;
  f->tx_cap = ncap;
}

static void
flow_arm_rto(backtap_flow_t *f, uint64_t now)
{
  flow_set_deadline(f, now + f->rto);
}

int
backtap_flow_send(backtap_flow_t *flow, const uint8_t *link_cell)
{
  backtap_link_t *link = flow->link;
  if (!backtap_flow_can_send(flow))
    return -1;
  uint64_t now = link_now(link);
  flow_grow_tx(flow);
  txslot_t *slot = &flow->tx[flow->snd_nxt & (flow->tx_cap - 1)];
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  memcpy(cell, link_cell, BACKTAP_LINK_CELL_LEN);
  set_u32(cell, flow->circid);
  slot->rec = pc_malloc(BACKTAP_CELL_REC_LEN);
  backtap_cell_encode(slot->rec, cell, flow->snd_nxt,
                      flow->snd_started
                          ? 0
                          : BACKTAP_CF_SYN |
                                (flow->snd_path ? BACKTAP_CF_PATH : 0));
  slot->sent_us = now;
  slot->flags = 0;
  flow->snd_started = 1;
  flow->snd_nxt++;
  link->tx_held++;
  link->st.cells_sent++;
  /* RFC 6298 5.1: start the timer if it is not running. */
  if (flow->deadline == NO_DEADLINE || flow->probing) {
    flow->probing = 0;
    flow_arm_rto(flow, now);
  }
  link->lower.send_record(link->lower_arg, BACKTAP_REC_CELL, slot->rec,
                          BACKTAP_CELL_REC_LEN);
  link_rearm(link);
  return 0;
}

static void
flow_retransmit(backtap_flow_t *f, uint32_t seq)
{
  backtap_link_t *link = f->link;
  txslot_t *slot = &f->tx[seq & (f->tx_cap - 1)];
  if (!slot->rec)
    return;
  slot->flags |= SLOT_RETX;
  link->st.cells_retransmitted++;
  f->n_retransmitted++;
  link->lower.send_record(link->lower_arg, BACKTAP_REC_CELL, slot->rec,
                          BACKTAP_CELL_REC_LEN);
}

/* ---- feedback out ---- */

static void
flow_want_feedback(backtap_flow_t *f, uint8_t bits)
{
  f->fb_pending |= bits;
  if (!dlist_node_is_linked(&f->fb_node))
    dlist_insert_tail(&f->link->fb_pending, &f->fb_node);
}

static void
flow_send_feedback(backtap_flow_t *f, uint8_t bits)
{
  backtap_link_t *link = f->link;
  backtap_feedback_t fb;
  uint8_t rec[BACKTAP_FB_REC_LEN];
  memset(&fb, 0, sizeof(fb));
  fb.circid = f->circid;
  fb.flags = bits & BACKTAP_FB_PROBE;
  /* ACK and FWD are cumulative: always say both once synced, so a lost
   * record is repaired by the next one. */
  if (f->rcv_synced) {
    fb.flags |= BACKTAP_FB_ACK | BACKTAP_FB_FWD;
    fb.ack = f->rcv_nxt;
    fb.fwd = f->rcv_fwd;
    fb.flags |= bits & BACKTAP_FB_OOO;
    if (f->ooo_count)
      fb.flags |= BACKTAP_FB_HOLE;
  }
  if (!fb.flags)
    return;
  backtap_feedback_encode(rec, &fb);
  link->st.feedback_sent++;
  link->lower.send_record(link->lower_arg, BACKTAP_REC_FEEDBACK, rec,
                          sizeof(rec));
}

void
backtap_link_flush(backtap_link_t *link)
{
  dlist_node_t *n, *tmp;
  if (link->dead)
    return;
  DLIST_FOREACH_SAFE(&link->fb_pending, n, tmp) {
    backtap_flow_t *f = DLIST_ENTRY(n, backtap_flow_t, fb_node);
    dlist_remove(&f->fb_node);
    uint8_t bits = f->fb_pending;
    f->fb_pending = 0;
    flow_send_feedback(f, bits);
  }
  link_rearm(link);
}

/* ---- link failure ---- */

static void
link_fail(backtap_link_t *link, const char *why)
{
  if (link->dead)
    return;
  link->dead = 1;
  log_info("BackTap peer stopped acknowledging: %s", why);
  link_rearm(link);
  if (link->upper.link_failed)
    link->upper.link_failed(link->upper_arg, link, why);
}

/* ---- receiving cells ---- */

static void
flow_deliver(backtap_flow_t *f, uint32_t seq, const uint8_t *body)
{
  backtap_link_t *link = f->link;
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  set_u32(cell, f->circid);
  memcpy(cell + 4, body, BACKTAP_CELL_BODY_LEN);
  link->st.cells_delivered++;
  link->upper.deliver(link->upper_arg, f, seq, cell);
}

static void
flow_grow_ooo(backtap_flow_t *f, uint32_t need)
{
  uint32_t ncap = f->ooo_cap ? f->ooo_cap : 8;
  while (ncap <= need)
    ncap *= 2;
  if (ncap == f->ooo_cap)
    return;
  uint8_t **n = pc_calloc(ncap, sizeof(*n));
  for (uint32_t i = 0; i < f->ooo_cap; i++) {
    if (f->ooo[i]) {
      /* entries are indexed by absolute seq modulo the capacity */
      uint32_t seq = f->rcv_nxt + ((i - f->rcv_nxt) & (f->ooo_cap - 1));
      n[seq & (ncap - 1)] = f->ooo[i];
    }
  }
  f->link->ring_bytes += (ncap - f->ooo_cap) * sizeof(uint8_t *);
  free(f->ooo);
  f->ooo = n;
  f->ooo_cap = ncap;
}

static int
cell_input(backtap_link_t *link, const uint8_t *rec, size_t len)
{
  backtap_cell_hdr_t h;
  const uint8_t *body;
  const char *why;
  if (backtap_cell_parse(rec, len, &h, &body, &why) < 0) {
    link->st.malformed++;
    log_debug("BackTap: dropped %s", why);
    return -1;
  }
  link->st.cells_received++;
  backtap_flow_t *f = link_find(link, h.circid);
  if (!f) {
    void *arg = NULL;
    if (!(h.flags & BACKTAP_CF_SYN) ||
        hmap_size(link->flows) >= link->p.max_flows ||
        link->rx_held >= link->p.link_max_cells || !link->upper.flow_open ||
        link->upper.flow_open(link->upper_arg, link, h.circid, &arg) != 0) {
      link->st.unknown_flow++;
      return -1;
    }
    f = flow_create(link, h.circid, arg);
  }
  if (f->closing) {
    /* The circuit is gone here but the peer may still send until it
     * learns so: ACK and FWD its cells without keeping them, or it would
     * retransmit them until it declared us dead. */
    if (f->rcv_synced && h.seq == f->rcv_nxt) {
      f->rcv_nxt++;
      f->rcv_fwd++;
      flow_want_feedback(f, BACKTAP_FB_ACK | BACKTAP_FB_FWD);
      return 0;
    }
    if (f->rcv_synced && backtap_seq_diff(h.seq, f->rcv_nxt) < 0) {
      link->st.duplicate++;
      flow_want_feedback(f, BACKTAP_FB_ACK);
    } else {
      link->st.out_of_window++;
    }
    return -1;
  }
  if (!f->rcv_synced) {
    if (!(h.flags & BACKTAP_CF_SYN)) {
      /* the SYN cell was lost and this one overtook its retransmission */
      link->st.out_of_window++;
      return -1;
    }
    f->rcv_synced = 1;
    f->rcv_path = (h.flags & BACKTAP_CF_PATH) != 0;
    f->rcv_isn = f->rcv_fwd = f->rcv_nxt = h.seq;
  } else if ((h.flags & BACKTAP_CF_SYN) && h.seq != f->rcv_isn) {
    /* a second start of the same direction: not from our peer's flow */
    link->st.out_of_window++;
    return -1;
  } else if (!(h.flags & BACKTAP_CF_SYN) && h.seq == f->rcv_isn) {
    link->st.out_of_window++;
    return -1;
  }
  int32_t off = backtap_seq_diff(h.seq, f->rcv_nxt);
  if (off < 0) {
    /* Already have it: a replay, or our ACK was lost. Say again what we
     * have (cumulative, so this repeats nothing else). */
    link->st.duplicate++;
    flow_want_feedback(f, BACKTAP_FB_ACK);
    return -1;
  }
  if ((uint32_t)backtap_seq_diff(h.seq, f->rcv_fwd) >= link->p.swnd_max) {
    link->st.out_of_window++;
    return -1;
  }
  if (off > 0 && f->ooo && f->ooo_cap > (uint32_t)off &&
      f->ooo[h.seq & (f->ooo_cap - 1)]) {
    link->st.duplicate++;
    flow_send_feedback(f, BACKTAP_FB_ACK);
    return -1;
  }
  if (link->rx_held >= link->p.link_max_cells) {
    /* Deliberate drop before ACK: the sender will retransmit. */
    link->st.excess_dropped++;
    f->n_dropped++;
    return -1;
  }
  link->rx_held++;
  if (off > 0) {
    flow_grow_ooo(f, (uint32_t)off);
    f->ooo[h.seq & (f->ooo_cap - 1)] = pc_memdup(body, BACKTAP_CELL_BODY_LEN);
    f->ooo_count++;
    link->ooo_held++;
    link->st.cells_out_of_order++;
    /* RFC 5681 4.2: an out-of-order segment is ACKed at once (a duplicate
     * ACK for the sender's fast retransmit). */
    flow_send_feedback(f, BACKTAP_FB_ACK | BACKTAP_FB_OOO);
    return 0;
  }
  int filled_hole = f->ooo_count > 0;
  uint32_t seq = f->rcv_nxt++;
  /* The circuit layer may close or free the flow from deliver() (a
   * DESTROY arrived): that waits until the cells are handed over. */
  f->delivering = 1;
  flow_deliver(f, seq, body);
  while (!f->free_after && !f->close_after && f->ooo_count &&
         f->ooo[f->rcv_nxt & (f->ooo_cap - 1)]) {
    uint32_t idx = f->rcv_nxt & (f->ooo_cap - 1);
    uint8_t *b = f->ooo[idx];
    f->ooo[idx] = NULL;
    f->ooo_count--;
    link->ooo_held--;
    seq = f->rcv_nxt++;
    flow_deliver(f, seq, b);
    free(b);
  }
  f->delivering = 0;
  if (filled_hole)
    flow_send_feedback(f, BACKTAP_FB_ACK);
  else
    flow_want_feedback(f, BACKTAP_FB_ACK);
  if (f->free_after)
    backtap_flow_free_(f);
  else if (f->close_after)
    backtap_flow_close(f);
  return 0;
}

int
backtap_flow_forwarded(backtap_flow_t *flow, uint32_t seq)
{
  if (!flow->rcv_synced || seq != flow->rcv_fwd ||
      flow->rcv_fwd == flow->rcv_nxt)
    return -1;
  flow->rcv_fwd++;
  flow->link->rx_held--;
  flow_want_feedback(flow, BACKTAP_FB_FWD);
  link_rearm(flow->link);
  return 0;
}

/* ---- receiving feedback ---- */

static void
flow_rtt_sample(backtap_flow_t *f, uint64_t r)
{
  const backtap_params_t *p = &f->link->p;
  /* RFC 6298 2.2 and 2.3 (alpha 1/8, beta 1/4, K 4, G ignored) */
  if (!f->srtt) {
    f->srtt = r ? r : 1;
    f->rttvar = r / 2;
  } else {
    uint64_t d = f->srtt > r ? f->srtt - r : r - f->srtt;
    f->rttvar = (3 * f->rttvar + d) / 4;
    f->srtt = (7 * f->srtt + r) / 8;
    if (!f->srtt)
      f->srtt = 1;
  }
  uint64_t rto = f->srtt + 4 * f->rttvar;
  if (rto < p->rto_min_us)
    rto = p->rto_min_us;
  if (rto > p->rto_max_us)
    rto = p->rto_max_us;
  f->rto = rto;
}

/* Vegas, per FWD round trip (section 3.4, equation 1). */
static void
flow_fwd_sample(backtap_flow_t *f, uint64_t r, uint32_t newly)
{
  backtap_link_t *link = f->link;
  const backtap_params_t *p = &link->p;
  if (r != NO_DEADLINE) {
    if (r == 0)
      r = 1;
    if (r < link->base_rtt)
      link->base_rtt = r;
    if (r < f->epoch_min_rtt)
      f->epoch_min_rtt = r;
  }
  if (f->in_recovery)
    f->epoch_loss = 1;
  if (f->slow_start && !f->ss_hold && !f->epoch_loss &&
      (f->epoch_limited || !flow_window_open(f))) {
    uint64_t w = (uint64_t)f->swnd + newly;
    f->swnd = w > p->swnd_max ? p->swnd_max : (unsigned)w;
  }
  if (backtap_seq_diff(f->snd_fwd, f->epoch_end) < 0)
    return;
  /* one round trip is over */
  if (f->epoch_min_rtt != NO_DEADLINE)
    f->last_act_rtt = f->epoch_min_rtt;
  if (f->epoch_min_rtt != NO_DEADLINE && link->base_rtt != NO_DEADLINE) {
    uint64_t base = link->base_rtt, act = f->epoch_min_rtt;
    uint64_t diff = (uint64_t)f->swnd * (act - base) / base;
    if (f->slow_start) {
      /* Even the least delayed cell of the round trip queued: the pipe
       * is full. Keep what it holds without queueing, plus alpha. As in
       * TCP Vegas the window doubles only every other round trip: in the
       * round trip that holds it, the queue the doubling made stands and
       * the minimum sees it. */
      if (diff > p->alpha) {
        /* the cells of this round trip were sent under epoch_swnd; swnd
         * has doubled since */
        uint64_t w = (uint64_t)f->epoch_swnd * base / act + p->alpha;
        f->swnd = w < 2 ? 2 : w > p->swnd_max ? p->swnd_max : (unsigned)w;
        f->slow_start = 0;
      }
    } else if (diff < p->alpha) {
      /* Grow only a window that was used (an idle circuit's delay says
       * nothing about the path's capacity), and not after a round trip
       * with a loss: cells waited behind the hole and the window was
       * inflated meanwhile, which says nothing about room either. */
      if (f->epoch_limited && !f->epoch_loss && f->swnd < p->swnd_max)
        f->swnd++;
      /* Window-limited with no queue at all for two round trips: the
       * path has room (typically the next hop was still starting when
       * this one left slow start). Find it by doubling again, which ends
       * by the same rule, instead of one cell per round trip. */
      if (f->epoch_limited && !f->epoch_loss && diff == 0) {
        if (++f->calm_epochs >= 2) {
          f->slow_start = 1;
          f->calm_epochs = 0;
        }
      } else {
        f->calm_epochs = 0;
      }
    } else if (diff > p->beta) {
      f->calm_epochs = 0;
      if (f->swnd > 2)
        f->swnd--;
    } else {
      f->calm_epochs = 0;
    }
  }
  f->epoch_end = f->snd_nxt;
  f->epoch_min_rtt = NO_DEADLINE;
  f->epoch_swnd = f->swnd;
  f->ss_hold = f->slow_start && !f->ss_hold;
  f->epoch_limited = !flow_window_open(f);
  f->epoch_loss = f->in_recovery;
}

static void
link_wake_waiters(backtap_link_t *link)
{
  while (!dlist_is_empty(&link->tx_waiters) &&
         link->tx_held < link->p.link_max_cells && !link->dead) {
    backtap_flow_t *f =
        DLIST_ENTRY(link->tx_waiters.head.next, backtap_flow_t, wait_node);
    dlist_remove(&f->wait_node);
    if (f->want_write && flow_window_open(f)) {
      f->want_write = 0;
      if (link->upper.writable)
        link->upper.writable(link->upper_arg, f);
    }
  }
}

static int
feedback_input(backtap_link_t *link, const uint8_t *rec, size_t len)
{
  backtap_feedback_t fb;
  const char *why;
  if (backtap_feedback_parse(rec, len, &fb, &why) < 0) {
    link->st.malformed++;
    log_debug("BackTap: dropped %s", why);
    return -1;
  }
  backtap_flow_t *f = link_find(link, fb.circid);
  if (!f) {
    link->st.unknown_flow++;
    return -1;
  }
  /* Check everything before changing anything. */
  uint32_t ack = f->snd_una, fwd = f->snd_fwd;
  if (fb.flags & (BACKTAP_FB_ACK | BACKTAP_FB_FWD)) {
    if (!f->snd_started) {
      link->st.forged_feedback++;
      return -1;
    }
    if (fb.flags & BACKTAP_FB_ACK) {
      if (backtap_seq_diff(fb.ack, f->snd_nxt) > 0) {
        link->st.forged_feedback++;
        return -1;
      }
      if (backtap_seq_diff(fb.ack, f->snd_una) > 0)
        ack = fb.ack;
    }
    if (fb.flags & BACKTAP_FB_FWD) {
      if (backtap_seq_diff(fb.fwd, f->snd_nxt) > 0 ||
          ((fb.flags & BACKTAP_FB_ACK) &&
           backtap_seq_diff(fb.fwd, fb.ack) > 0)) {
        link->st.forged_feedback++;
        return -1;
      }
      if (backtap_seq_diff(fb.fwd, f->snd_fwd) > 0)
        fwd = fb.fwd;
      /* a FWD implies the ACK (the ACK record may have been lost) */
      if (backtap_seq_diff(fwd, ack) > 0)
        ack = fwd;
    }
  }
  link->st.feedback_received++;
  uint64_t now = link_now(link);
  int moved = 0, dup = 0;
  if (fb.flags & BACKTAP_FB_PROBE)
    flow_want_feedback(f, 0);
  /* any answer shows the peer is alive */
  if (f->probing)
    f->backoffs = 0;

  /* ACK: reliability (RFC 6298, RFC 5681, RFC 6582) */
  if (ack != f->snd_una) {
    moved = 1;
    txslot_t *last = &f->tx[(ack - 1) & (f->tx_cap - 1)];
    if (!(last->flags & SLOT_RETX))
      flow_rtt_sample(f, now - last->sent_us);
    for (uint32_t s = f->snd_una; s != ack; s++) {
      txslot_t *slot = &f->tx[s & (f->tx_cap - 1)];
      free(slot->rec);
      slot->rec = NULL;
      link->tx_held--;
    }
    f->snd_una = ack;
    f->backoffs = 0;
    f->dupacks = 0;
    if (f->in_recovery) {
      if (backtap_seq_diff(ack, f->recover) >= 0) {
        f->in_recovery = 0;
      } else if (fb.flags & BACKTAP_FB_HOLE) {
        /* partial ACK with cells held above it: the next hole was lost
         * too (RFC 6582). Without HOLE the peer has nothing beyond ACK,
         * the rest is still on its way (a spurious timeout): leave it. */
        flow_retransmit(f, f->snd_una);
      }
    }
    if (f->snd_una == f->snd_nxt)
      flow_set_deadline(f, NO_DEADLINE);
    else
      flow_arm_rto(f, now);
  } else if ((fb.flags & BACKTAP_FB_OOO) && fb.ack == f->snd_una &&
             f->snd_una != f->snd_nxt) {
    /* duplicate ACK: the peer got a cell above a hole */
    dup = 1;
    if (++f->dupacks == link->p.dupack_thresh && !f->in_recovery) {
      f->in_recovery = 1;
      f->epoch_loss = 1;
      f->recover = f->snd_nxt;
      link->st.fast_retransmits++;
      flow_retransmit(f, f->snd_una);
    }
  }

  /* FWD: the window (section 3.4) */
  if (fwd != f->snd_fwd) {
    moved = 1;
    txslot_t *last = &f->tx[(fwd - 1) & (f->tx_cap - 1)];
    /* Karn: a retransmitted cell's round trip is ambiguous. A cell that
     * waited behind a hole is not excluded: the minimum over the round
     * trip filters it out (excluding every cell sent before a repair
     * starves the estimator when losses are frequent). */
    uint64_t r = (last->flags & SLOT_RETX) ? NO_DEADLINE
                                           : now - last->sent_us;
    uint32_t newly = fwd - f->snd_fwd;
    f->snd_fwd = fwd;
    flow_fwd_sample(f, r, newly);
  }
  if (!moved && !dup && !(fb.flags & BACKTAP_FB_PROBE))
    link->st.stale_feedback++;

  if (f->closing && f->snd_una == f->snd_nxt) {
    flow_unlink(f);
    flow_destroy(f);
    link_wake_waiters(link);
    return 0;
  }
  flow_update_probe(f, now, moved);
  if (f->want_write && flow_window_open(f) &&
      link->tx_held < link->p.link_max_cells) {
    f->want_write = 0;
    if (link->upper.writable)
      link->upper.writable(link->upper_arg, f);
  }
  link_wake_waiters(link);
  return 0;
}

int
backtap_link_input(backtap_link_t *link, backtap_rec_type_t type,
                   const uint8_t *rec, size_t len)
{
  int r;
  if (link->dead)
    return -1;
  switch (type) {
  case BACKTAP_REC_CELL:
    r = cell_input(link, rec, len);
    break;
  case BACKTAP_REC_FEEDBACK:
    r = feedback_input(link, rec, len);
    break;
  default:
    link->st.malformed++;
    r = -1;
    break;
  }
  if (r == 0)
    link->last_heard = link_now(link);
  link_rearm(link);
  return r;
}

/* ---- timers ---- */

static void
flow_expire(backtap_flow_t *f, uint64_t now)
{
  backtap_link_t *link = f->link;
  const backtap_params_t *p = &link->p;
  if (f->backoffs == 0)
    f->unanswered_since = now;
  if (++f->backoffs > p->max_backoffs) {
    const char *why = f->probing
                          ? "no feedback to window probes"
                          : "cells unacknowledged after retransmissions";
    if (link->last_heard > f->unanswered_since) {
      /* The peer talks, just not about this circuit: close the circuit,
       * not the link. */
      link->st.flows_failed++;
      flow_unlink(f);
      if (link->upper.flow_failed)
        link->upper.flow_failed(link->upper_arg, f, why);
      flow_destroy(f);
      return;
    }
    flow_set_deadline(f, NO_DEADLINE);
    link_fail(link, why);
    return;
  }
  /* RFC 6298 5.5: back off */
  f->rto = f->rto * 2 > p->rto_max_us ? p->rto_max_us : f->rto * 2;
  if (f->probing) {
    link->st.probes_sent++;
    flow_send_feedback(f, BACKTAP_FB_PROBE);
  } else {
    /* RFC 6298 5.4: retransmit the earliest unacknowledged cell; what
     * follows is repaired by partial ACKs as in fast recovery. The window
     * stays: it follows the FWD delay only (section 3.4), and cells in
     * flight are bounded by it anyway. */
    link->st.timeouts++;
    f->in_recovery = 1;
    f->epoch_loss = 1;
    f->recover = f->snd_nxt;
    f->dupacks = 0;
    flow_retransmit(f, f->snd_una);
  }
  flow_set_deadline(f, now + f->rto);
}

void
backtap_link_timer(backtap_link_t *link)
{
  link->armed = NO_DEADLINE;
  if (link->dead)
    return;
  uint64_t now = link_now(link);
  backtap_link_flush(link);
  backtap_flow_t *f;
  while (!link->dead && (f = minheap_peek(link->timers)) &&
         f->deadline <= now)
    flow_expire(f, now);
  link_rearm(link);
}

/* ---- accessors ---- */

const backtap_stats_t *
backtap_link_stats(const backtap_link_t *link)
{
  return &link->st;
}

uint64_t
backtap_link_base_rtt_us(const backtap_link_t *link)
{
  return link->base_rtt;
}

size_t
backtap_link_mem_bytes(const backtap_link_t *link)
{
  return sizeof(*link) + link->tx_held * (BACKTAP_CELL_REC_LEN + 16) +
         link->ooo_held * (BACKTAP_CELL_BODY_LEN + 16) + link->ring_bytes +
         hmap_size(link->flows) * (sizeof(backtap_flow_t) + 32);
}

size_t
backtap_flow_mem_bytes(const backtap_flow_t *f)
{
  return sizeof(*f) + 32 +
         (size_t)(f->snd_nxt - f->snd_una) * (BACKTAP_CELL_REC_LEN + 16) +
         (size_t)f->ooo_count * (BACKTAP_CELL_BODY_LEN + 16) +
         (size_t)f->tx_cap * sizeof(txslot_t) +
         (size_t)f->ooo_cap * sizeof(uint8_t *);
}

int
backtap_link_is_dead(const backtap_link_t *link)
{
  return link->dead;
}

size_t
backtap_link_n_flows(const backtap_link_t *link)
{
  return hmap_size(link->flows);
}

int
backtap_flow_set_path(backtap_flow_t *flow)
{
  if (flow->snd_started)
    return -1;
  flow->snd_path = 1;
  return 0;
}

int
backtap_flow_peer_path(const backtap_flow_t *flow)
{
  return flow->rcv_synced && flow->rcv_path;
}

void *
backtap_flow_arg(const backtap_flow_t *flow)
{
  return flow->arg;
}

uint32_t
backtap_flow_circid(const backtap_flow_t *flow)
{
  return flow->circid;
}

backtap_link_t *
backtap_flow_link(const backtap_flow_t *flow)
{
  return flow->link;
}

unsigned
backtap_flow_swnd(const backtap_flow_t *flow)
{
  return flow->swnd;
}

unsigned
backtap_flow_inflight(const backtap_flow_t *flow)
{
  return flow->snd_nxt - flow->snd_fwd;
}

unsigned
backtap_flow_queued(const backtap_flow_t *flow)
{
  return flow->rcv_nxt - flow->rcv_fwd;
}

uint64_t
backtap_flow_srtt_us(const backtap_flow_t *flow)
{
  return flow->srtt;
}

uint64_t
backtap_flow_rto_us(const backtap_flow_t *flow)
{
  return flow->rto;
}

static uint32_t
clamp_us(uint64_t v)
{
  return v == NO_DEADLINE ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void
backtap_flow_info(const backtap_flow_t *f, backtap_flow_info_t *out)
{
  memset(out, 0, sizeof(*out));
  out->swnd = f->swnd;
  out->inflight = f->snd_nxt - f->snd_fwd;
  out->unacked = f->snd_nxt - f->snd_una;
  out->queued = f->rcv_nxt - f->rcv_fwd;
  out->base_rtt_us = clamp_us(f->link->base_rtt);
  out->act_rtt_us = clamp_us(f->last_act_rtt);
  out->srtt_us = clamp_us(f->srtt);
  out->rto_us = clamp_us(f->rto);
  out->retransmitted = f->n_retransmitted;
  out->dropped = f->n_dropped;
  out->slow_start = f->slow_start;
}
