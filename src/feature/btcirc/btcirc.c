/* SPDX-License-Identifier: BSD-3-Clause */
/* btcirc.c -- circuits over BackTap on the datagram links (btcirc.h).
 *
 * What every carried transport does (the instance's hooks, the tag map,
 * links and hops, direct cells, the extension choice) is shared with
 * TCP-over-DTLS in feature/dgram/dgram_carry.c; this file is BackTap's
 * part. Three kinds of objects:
 *   btcirc_t       the process's one instance: its dgram_carry_t, totals;
 *   btcirc_link_t  one per authenticated datagram link (a
 *                  dgram_carry_link_t), owning its backtap_link_t and the
 *                  one timer the engine asks for;
 *   btcirc_flow_t  one per circuit hop over BackTap (a dgram_carry_hop_t:
 *                  the carried channel, the direct cells), with the
 *                  engine's flow (made on the first cell sent, whose
 *                  circuit ID the channel chose, or by the peer's SYN) and
 *                  the FWD ring.
 * The engine's flow_arg and a cell's rel_tag are the flow's tag, looked up
 * in the shared map: after the circuit is gone they find nothing.
 *
 * Closing: when the carried channel closes (its circuit has gone; the
 * DESTROY was handed to the flow before), the flow is closed in the engine
 * (backtap_flow_close: it lingers until the peer ACKed everything) and our
 * record is freed, unless direct cells still wait for the window; then
 * they go first, within DGRAM_CARRY_LINGER_US. A link that fails or goes
 * down closes its channels (and so their circuits) and frees everything.
 * Engine callbacks never free the link: a failed link is closed from a
 * deferred callback.
 *
 * Memory: what the engines hold (cells kept for retransmission, out of
 * order cells) is set in the memory budget (MEMACCT_BACKTAP) after every
 * event that changes it, so MaxMemInQueues sees it; the engine's own
 * bounds cap it (doc/backtap.md). Cells delivered upward are ordinary
 * packed cells in circuit queues, counted as before.
 */
#include "feature/btcirc/btcirc.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "feature/dgram/dgram_carry.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/time/clock.h"

#include <stdlib.h>
#include <string.h>

#define BTCIRC_RING 1024           /* = the engine's swnd_max */

typedef struct btcirc_flow_t {
  dgram_carry_hop_t base;         /* first: the shared hop record */
  backtap_flow_t *flow;           /* NULL until the first cell either way */
  int rx_started;
  int incoming;                   /* the peer opened it (its SYN) */
  uint32_t fwd_next;              /* next delivered seq to FWD */
  uint8_t released[BTCIRC_RING / 8];
} btcirc_flow_t;

typedef struct btcirc_link_t {
  dgram_carry_link_t base;        /* first: the shared link record */
  backtap_link_t *bl;
  evloop_timer_t *timer;
  evloop_deferred_t *fail;        /* link_failed: close from the loop */
  size_t accounted;               /* engine bytes in bc->mem_total */
} btcirc_link_t;

struct btcirc_t {
  evloop_t *loop;
  dgram_carry_t *carry;
  backtap_params_t params;
  uint64_t flow_refused;          /* SYNs refused (limits) */
  uint64_t mem_total;             /* what the engines hold (memacct) */
  backtap_stats_t gone;           /* engines of links already freed */
};

/* The one instance (for MetricsPort). */
static btcirc_t *the_bc;

#define FLOW(h) ((btcirc_flow_t *)(void *)(h))
#define LINK(l) ((btcirc_link_t *)(void *)(l))
#define BC(l) ((btcirc_t *)dgram_carry_arg((l)->c))

/* ---- memory ---- */

/* Bring the memory budget (MaxMemInQueues) up to date with what lk's
 * engine holds: after every event that can change it. O(1). */
static void
mem_sync(btcirc_link_t *lk)
{
  btcirc_t *bc = BC(&lk->base);
  size_t now = lk->bl ? backtap_link_mem_bytes(lk->bl) : 0;
  bc->mem_total = bc->mem_total - lk->accounted + now;
  lk->accounted = now;
  memacct_set(MEMACCT_BACKTAP, bc->mem_total);
}

static btcirc_flow_t *
flow_by_arg(btcirc_link_t *lk, void *arg)
{
  return FLOW(dgram_carry_hop_by_tag(lk->base.c, (uint64_t)(uintptr_t)arg));
}

/* ---- the hop: what the shared carrier asks of us ---- */

static int
hop_ready(dgram_carry_hop_t *h, const uint8_t *cell)
{
  btcirc_flow_t *bf = FLOW(h);
  if (bf->flow)
    return 0;
  uint32_t circid = get_u32(cell);
  bf->flow = backtap_flow_new(LINK(h->lk)->bl, circid,
                              (void *)(uintptr_t)h->tag);
  if (bf->flow) {
    /* BackTap from the circuit's origin up to us: say so in the SYN. */
    if (h->chan && channel_path_backpressure(h->chan))
      (void)backtap_flow_set_path(bf->flow);
    return 0;
  }
  log_info("BackTap: cannot open a flow for circuit %u (ID in use, link "
           "full or dead)", (unsigned)circid);
  BC(h->lk)->flow_refused++;
  return -1;
}

static int
hop_can_send(dgram_carry_hop_t *h)
{
  return FLOW(h)->flow && backtap_flow_can_send(FLOW(h)->flow);
}

/* The flow's Vegas window: how much the circuit's edge may keep waiting
 * for it (edge.h, EDGE_NOWIN_QUEUE_MIN). */
static unsigned
hop_window(const dgram_carry_hop_t *h)
{
  const btcirc_flow_t *bf = (const btcirc_flow_t *)(const void *)h;
  return bf->flow ? backtap_flow_swnd(bf->flow) : 0;
}

static int
hop_flowstat(const dgram_carry_hop_t *h, channel_flowstat_t *out)
{
  const btcirc_flow_t *bf = (const btcirc_flow_t *)(const void *)h;
  if (!bf->flow)
    return -1;
  backtap_flow_info_t in;
  backtap_flow_info(bf->flow, &in);
  memset(out, 0, sizeof(*out));
  out->window = in.swnd;
  out->inflight = in.inflight;
  out->unacked = in.unacked;
  out->queued = in.queued;
  out->base_rtt_us = in.base_rtt_us;
  out->rtt_us = in.act_rtt_us;
  out->srtt_us = in.srtt_us;
  out->rto_us = in.rto_us;
  out->retransmitted = in.retransmitted;
  out->dropped = in.dropped;
  out->slow_start = in.slow_start;
  return 0;
}

static int
hop_send(dgram_carry_hop_t *h, const uint8_t *cell)
{
  int r = backtap_flow_send(FLOW(h)->flow, cell);
  mem_sync(LINK(h->lk));
  return r;
}

static int
hop_alive(const dgram_carry_hop_t *h)
{
  return FLOW(h)->flow != NULL;
}

static void
hop_close(dgram_carry_hop_t *h)
{
  if (FLOW(h)->flow)
    backtap_flow_close(FLOW(h)->flow);
  FLOW(h)->flow = NULL;
  mem_sync(LINK(h->lk));
}

static size_t
hop_mem(const dgram_carry_hop_t *h)
{
  return FLOW(h)->flow ? backtap_flow_mem_bytes(FLOW(h)->flow) : 0;
}

/* ---- FWD: cells leaving this relay ---- */

static void
released(dgram_carry_hop_t *h, uint32_t seq)
{
  btcirc_flow_t *bf = FLOW(h);
  if (!bf->flow || !bf->rx_started)
    return;
  uint32_t off = seq - bf->fwd_next;
  if (off >= BTCIRC_RING)
    return; /* already FWDed, or not ours */
  uint32_t i = seq % BTCIRC_RING;
  bf->released[i / 8] |= (uint8_t)(1u << (i % 8));
  for (;;) {
    uint32_t j = bf->fwd_next % BTCIRC_RING;
    if (!(bf->released[j / 8] & (1u << (j % 8))))
      break;
    bf->released[j / 8] &= (uint8_t)~(1u << (j % 8));
    (void)backtap_flow_forwarded(bf->flow, bf->fwd_next);
    bf->fwd_next++;
  }
}

/* ---- the engine's upper side ---- */

static int
up_flow_open(void *arg, backtap_link_t *bl, uint32_t circid, void **flow_arg)
{
  btcirc_link_t *lk = arg;
  (void)bl;
  (void)circid;
  dgram_carry_hop_t *h = dgram_carry_hop_accept(&lk->base, 0);
  if (!h)
    return -1;
  *flow_arg = (void *)(uintptr_t)h->tag;
  FLOW(h)->incoming = 1;
  dgram_carry_hop_open_channel(h);
  return 0;
}

static void
up_deliver(void *arg, backtap_flow_t *flow, uint32_t seq,
           const uint8_t *link_cell)
{
  btcirc_flow_t *bf = flow_by_arg(arg, backtap_flow_arg(flow));
  if (!bf) {
    (void)backtap_flow_forwarded(flow, seq);
    return;
  }
  if (!bf->flow)
    bf->flow = flow; /* opened by the peer */
  if (!bf->rx_started) {
    bf->rx_started = 1;
    bf->fwd_next = seq;
    /* The peer's SYN (the CREATE2) says whether the circuit came to it
     * over BackTap all the way; only the opener of a hop says it. */
    if (bf->incoming && bf->base.chan)
      channel_set_path_backpressure(bf->base.chan,
                                    backtap_flow_peer_path(flow));
  }
  if (!bf->base.chan) {
    released(&bf->base, seq);
    return;
  }
  dgram_carry_hop_input(&bf->base, link_cell, seq);
}

static void
up_writable(void *arg, backtap_flow_t *flow)
{
  btcirc_flow_t *bf = flow_by_arg(arg, backtap_flow_arg(flow));
  if (bf)
    dgram_carry_hop_writable(&bf->base);
}

static void
up_link_failed(void *arg, backtap_link_t *bl, const char *why)
{
  btcirc_link_t *lk = arg;
  (void)bl;
  log_notice("BackTap: the peer of datagram link %p stopped acknowledging "
             "(%s); closing the link and its circuits",
             (void *)lk->base.dl, why);
  evloop_deferred_schedule(lk->fail);
}

static void
up_flow_failed(void *arg, backtap_flow_t *flow, const char *why)
{
  btcirc_flow_t *bf = flow_by_arg(arg, backtap_flow_arg(flow));
  if (!bf)
    return;
  log_info("BackTap: circuit %u failed: %s", (unsigned)backtap_flow_circid(flow),
           why);
  bf->flow = NULL; /* the engine forgets it on return */
  dgram_carry_hop_lost(&bf->base, "BackTap: the peer stopped answering for it");
}

static const backtap_upper_ops_t upper_ops = {
    up_flow_open, up_deliver, up_writable, up_link_failed, up_flow_failed,
};

/* ---- the engine's lower side ---- */

static uint64_t
low_now(void *arg)
{
  (void)arg;
  return time_mono_us();
}

static void
low_send(void *arg, backtap_rec_type_t type, const uint8_t *rec, size_t len)
{
  btcirc_link_t *lk = arg;
  uint8_t t = type == BACKTAP_REC_CELL ? DGRAM_REC_BACKTAP_CELL
                                       : DGRAM_REC_BACKTAP_FEEDBACK;
  (void)dgram_link_send(lk->base.dl, t, rec, len);
}

static void
low_set_timer(void *arg, uint64_t deadline_us)
{
  btcirc_link_t *lk = arg;
  if (deadline_us == UINT64_MAX) {
    evloop_timer_cancel(lk->timer);
    return;
  }
  uint64_t now = time_mono_us();
  evloop_timer_schedule(lk->timer, deadline_us > now ? deadline_us - now : 0);
}

static const backtap_lower_ops_t lower_ops = {low_now, low_send,
                                              low_set_timer};

static void
link_timer_cb(void *arg)
{
  btcirc_link_t *lk = arg;
  backtap_link_timer(lk->bl);
  mem_sync(lk);
  /* Channels gone with direct cells still waiting: give up in time. */
  dgram_carry_link_reap(&lk->base);
}

/* ---- links ---- */

static void
stats_add(backtap_stats_t *to, const backtap_stats_t *from)
{
  uint64_t *a = (uint64_t *)(void *)to;
  const uint64_t *b = (const uint64_t *)(const void *)from;
  for (size_t i = 0; i < sizeof(*to) / sizeof(uint64_t); i++)
    a[i] += b[i];
}

static void
link_fail_cb(void *arg)
{
  btcirc_link_t *lk = arg;
  dgram_carry_link_close(&lk->base, "BackTap: the peer stopped acknowledging");
}

static int
link_up(dgram_carry_link_t *l)
{
  btcirc_link_t *lk = LINK(l);
  btcirc_t *bc = BC(l);
  lk->timer = evloop_timer_new(bc->loop, link_timer_cb, lk);
  lk->fail = evloop_deferred_new(bc->loop, link_fail_cb, lk);
  lk->bl = backtap_link_new(&bc->params, &lower_ops, lk, &upper_ops, lk);
  mem_sync(lk);
  return 0;
}

/* After the hops (their flows forgotten, not closed) are gone. */
static void
link_down(dgram_carry_link_t *l)
{
  btcirc_link_t *lk = LINK(l);
  stats_add(&BC(l)->gone, backtap_link_stats(lk->bl));
  backtap_link_free(lk->bl);
  lk->bl = NULL;
  mem_sync(lk);
  evloop_timer_free(lk->timer);
  evloop_deferred_free(lk->fail);
}

static void
link_record(dgram_carry_link_t *l, uint8_t type, const uint8_t *body,
            size_t len)
{
  btcirc_link_t *lk = LINK(l);
  backtap_rec_type_t t = type == DGRAM_REC_BACKTAP_CELL ? BACKTAP_REC_CELL
                                                        : BACKTAP_REC_FEEDBACK;
  (void)backtap_link_input(lk->bl, t, body, len);
  mem_sync(lk);
}

static int
link_usable(dgram_carry_link_t *l)
{
  return !backtap_link_is_dead(LINK(l)->bl);
}

static const dgram_carry_ops_t carry_ops = {
    .name = "BackTap",
    .chan_kind = "BackTap",
    .transport = CIRCUIT_TRANSPORT_BACKTAP,
    .tag_class = 0,
    .link_size = sizeof(btcirc_link_t),
    .hop_size = sizeof(btcirc_flow_t),
    .record_types = {DGRAM_REC_BACKTAP_CELL, DGRAM_REC_BACKTAP_FEEDBACK},
    .backpressure = 1,
    .link_up = link_up,
    .link_down = link_down,
    .record = link_record,
    .link_usable = link_usable,
    .hop_ready = hop_ready,
    .hop_can_send = hop_can_send,
    .hop_window = hop_window,
    .hop_flowstat = hop_flowstat,
    .hop_send = hop_send,
    .hop_alive = hop_alive,
    .hop_close = hop_close,
    .released = released,
    .hop_mem = hop_mem,
};

/* ---- the instance ---- */

btcirc_t *
btcirc_new(evloop_t *loop, dgram_t *d, const backtap_params_t *params)
{
  btcirc_t *bc = pc_zalloc(sizeof(*bc));
  bc->loop = loop;
  if (params)
    bc->params = *params;
  else
    backtap_params_default(&bc->params);
  bc->carry = dgram_carry_new(loop, d, &carry_ops, bc);
  if (!bc->carry) {
    free(bc);
    return NULL;
  }
  the_bc = bc;
  return bc;
}

void
btcirc_free_(btcirc_t *bc)
{
  if (!bc)
    return;
  dgram_carry_free(bc->carry);
  memacct_set(MEMACCT_BACKTAP, 0);
  if (the_bc == bc)
    the_bc = NULL;
  free(bc);
}

void
btcirc_set_outgoing(btcirc_t *bc, int on)
{
  dgram_carry_set_outgoing(bc->carry, on);
}

const btcirc_t *
btcirc_instance(void)
{
  return the_bc;
}

static void
link_stats(const dgram_carry_link_t *l, void *arg)
{
  btcirc_stats_t *out = arg;
  const btcirc_link_t *lk = (const btcirc_link_t *)(const void *)l;
  stats_add(&out->bt, backtap_link_stats(lk->bl));
  out->mem_bytes += backtap_link_mem_bytes(lk->bl);
}

void
btcirc_get_stats(const btcirc_t *bc, btcirc_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  dgram_carry_get_stats(bc->carry, &out->carry);
  out->flow_refused = bc->flow_refused;
  out->bt = bc->gone;
  dgram_carry_foreach_link(bc->carry, link_stats, out);
}
