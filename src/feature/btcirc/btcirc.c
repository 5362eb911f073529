/* SPDX-License-Identifier: BSD-3-Clause */
/* btcirc.c -- circuits over BackTap on the datagram links (btcirc.h).
 *
 * Three kinds of objects:
 *   btcirc_t       the process's one instance: hooks, the tag map, totals;
 *   btcirc_link_t  one per authenticated datagram link, owning its
 *                  backtap_link_t and the one timer the engine asks for;
 *   btcirc_flow_t  one per circuit hop over BackTap: the carried channel,
 *                  the engine's flow (made on the first cell sent, whose
 *                  circuit ID the channel chose, or by the peer's SYN),
 *                  the FWD ring, and a few direct cells (CREATE2, DESTROY)
 *                  that found the window full.
 * The engine's flow_arg and a cell's rel_tag are the flow's tag, looked up
 * in bc->flows: after the circuit is gone they find nothing.
 *
 * Closing: when the carried channel closes (its circuit has gone; the
 * DESTROY was handed to the flow before), the flow is closed in the engine
 * (backtap_flow_close: it lingers until the peer ACKed everything) and our
 * record is freed, unless direct cells still wait for the window; then
 * they go first, within BTCIRC_LINGER_MAX_US. A link that fails or goes
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
#include "core/or/circuit.h"
#include "core/or/pctcp.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/net/address.h"
#include "lib/time/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BTCIRC_RING 1024           /* = the engine's swnd_max */
#define BTCIRC_DIRECT_MAX 4        /* direct cells waiting per flow */
#define BTCIRC_LINGER_MAX_US (30 * 1000000ULL)

typedef struct btcirc_link_t btcirc_link_t;

typedef struct btcirc_flow_t {
  uint64_t tag;
  btcirc_link_t *lk;
  backtap_flow_t *flow;           /* NULL until the first cell either way */
  channel_t *chan;                /* NULL once the channel closed */
  dlist_node_t node;              /* in lk->flows */
  int rx_started;
  uint32_t fwd_next;              /* next delivered seq to FWD */
  uint8_t released[BTCIRC_RING / 8];
  unsigned n_direct;
  uint8_t direct[BTCIRC_DIRECT_MAX][CELL_MAX_NETWORK_LEN];
  uint64_t linger_until_us;       /* channel gone, direct cells wait */
} btcirc_flow_t;

struct btcirc_link_t {
  btcirc_t *bc;
  dgram_link_t *dl;
  backtap_link_t *bl;
  evloop_timer_t *timer;
  evloop_deferred_t *fail;        /* link_failed: close from the loop */
  dlist_t flows;
  dlist_node_t node;              /* in bc->links */
  size_t accounted;               /* engine bytes in bc->mem_total */
};

struct btcirc_t {
  evloop_t *loop;
  dgram_t *d;
  backtap_params_t params;
  int outgoing;
  uint64_t next_tag;
  hmap_t *flows;                  /* tag (u64) -> btcirc_flow_t */
  dlist_t links;
  btcirc_stats_t st;              /* glue counters */
  uint64_t mem_total;             /* what the engines hold (memacct) */
  backtap_stats_t gone;           /* engines of links already freed */
};

/* The one instance, for the release hook and the carrier provider (both
 * single-slot hooks without an argument or with one we do pass). */
static btcirc_t *the_bc;

/* ---- memory ---- */

/* Bring the memory budget (MaxMemInQueues) up to date with what lk's
 * engine holds: after every event that can change it. O(1). */
static void
mem_sync(btcirc_link_t *lk)
{
  size_t now = lk->bl ? backtap_link_mem_bytes(lk->bl) : 0;
  lk->bc->mem_total = lk->bc->mem_total - lk->accounted + now;
  lk->accounted = now;
  memacct_set(MEMACCT_BACKTAP, lk->bc->mem_total);
}

/* ---- flows ---- */

static btcirc_flow_t *
flow_by_arg(btcirc_t *bc, void *arg)
{
  return hmap_get_u64(bc->flows, (uint64_t)(uintptr_t)arg);
}

static btcirc_flow_t *
flow_new(btcirc_link_t *lk)
{
  btcirc_flow_t *bf = pc_zalloc(sizeof(*bf));
  bf->tag = ++lk->bc->next_tag;
  bf->lk = lk;
  hmap_set_u64(lk->bc->flows, bf->tag, bf);
  dlist_insert_tail(&lk->flows, &bf->node);
  return bf;
}

/* Forget our record (the engine's flow is closed or freed by the caller). */
static void
flow_forget(btcirc_flow_t *bf)
{
  hmap_remove_u64(bf->lk->bc->flows, bf->tag);
  dlist_remove(&bf->node);
  free(bf);
}

/* Send the direct cells that waited, as the window allows. */
static void
flow_push_direct(btcirc_flow_t *bf)
{
  unsigned sent = 0;
  while (sent < bf->n_direct && bf->flow &&
         backtap_flow_can_send(bf->flow)) {
    (void)backtap_flow_send(bf->flow, bf->direct[sent]);
    sent++;
  }
  if (sent) {
    memmove(bf->direct[0], bf->direct[sent],
            (size_t)(bf->n_direct - sent) * CELL_MAX_NETWORK_LEN);
    bf->n_direct -= sent;
  }
}

/* The channel is gone: close the engine's flow once no direct cell waits
 * (or the wait is too long), and forget our record. */
static void
flow_finish_if_done(btcirc_flow_t *bf)
{
  if (bf->chan)
    return;
  if (bf->n_direct && bf->flow &&
      time_mono_us() < bf->linger_until_us)
    return;
  if (bf->n_direct)
    bf->lk->bc->st.direct_dropped += bf->n_direct;
  if (bf->flow)
    backtap_flow_close(bf->flow);
  flow_forget(bf);
}

/* ---- the carrier: what the channel asks of us ---- */

static int
carrier_can_send(void *arg)
{
  btcirc_flow_t *bf = flow_by_arg(the_bc, arg);
  return bf && bf->flow && bf->n_direct == 0 &&
         backtap_flow_can_send(bf->flow);
}

static int
carrier_send(void *arg, const uint8_t *cell, size_t len)
{
  btcirc_flow_t *bf = flow_by_arg(the_bc, arg);
  if (!bf || len != CELL_MAX_NETWORK_LEN)
    return -1;
  btcirc_t *bc = bf->lk->bc;
  if (!bf->flow) {
    uint32_t circid = get_u32(cell);
    bf->flow = backtap_flow_new(bf->lk->bl, circid,
                                (void *)(uintptr_t)bf->tag);
    if (!bf->flow) {
      log_info("BackTap: cannot open a flow for circuit %u (ID in use, "
               "link full or dead)", (unsigned)circid);
      bc->st.flow_refused++;
      return -1;
    }
  }
  if (bf->n_direct == 0 && backtap_flow_can_send(bf->flow)) {
    int r = backtap_flow_send(bf->flow, cell);
    mem_sync(bf->lk);
    return r;
  }
  /* A direct cell (CREATE2, DESTROY) while the window is full: it waits
   * for the window, a few at most. */
  if (bf->n_direct >= BTCIRC_DIRECT_MAX) {
    bc->st.direct_dropped++;
    return -1;
  }
  memcpy(bf->direct[bf->n_direct++], cell, CELL_MAX_NETWORK_LEN);
  bc->st.direct_queued++;
  return 0;
}

static void
carrier_closed(void *arg)
{
  btcirc_flow_t *bf = flow_by_arg(the_bc, arg);
  if (!bf)
    return;
  btcirc_link_t *lk = bf->lk;
  bf->chan = NULL;
  bf->linger_until_us = time_mono_us() + BTCIRC_LINGER_MAX_US;
  flow_finish_if_done(bf);
  mem_sync(lk);
}

static const channel_carrier_ops_t carrier_ops = {
    carrier_can_send,
    carrier_send,
    carrier_closed,
};

/* ---- FWD: cells leaving this relay ---- */

static void
release_hook(uint64_t tag, uint32_t seq)
{
  if (!the_bc)
    return;
  btcirc_flow_t *bf = hmap_get_u64(the_bc->flows, tag);
  if (!bf || !bf->flow || !bf->rx_started)
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
  const uint8_t *ed = dgram_link_peer_ed_id(lk->dl);
  const uint8_t *rsa = dgram_link_peer_rsa_id(lk->dl);
  if (!ed || !rsa)
    return -1;
  btcirc_flow_t *bf = flow_new(lk);
  *flow_arg = (void *)(uintptr_t)bf->tag;
  bf->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)bf->tag,
                                 dgram_link_peer_addr(lk->dl), rsa, ed, 0,
                                 "(BackTap)");
  lk->bc->st.circ_in++;
  return 0;
}

static void
up_deliver(void *arg, backtap_flow_t *flow, uint32_t seq,
           const uint8_t *link_cell)
{
  btcirc_link_t *lk = arg;
  btcirc_flow_t *bf = flow_by_arg(lk->bc, backtap_flow_arg(flow));
  if (!bf) {
    (void)backtap_flow_forwarded(flow, seq);
    return;
  }
  if (!bf->flow)
    bf->flow = flow; /* opened by the peer */
  if (!bf->rx_started) {
    bf->rx_started = 1;
    bf->fwd_next = seq;
  }
  if (!bf->chan) {
    release_hook(bf->tag, seq);
    return;
  }
  packed_cell_t *pc = packed_cell_new();
  memcpy(pc->body, link_cell, CELL_MAX_NETWORK_LEN);
  pc->len = CELL_MAX_NETWORK_LEN;
  pc->queued_us = time_mono_us();
  pc->rel_tag = bf->tag;
  pc->rel_seq = seq;
  channel_carried_input(bf->chan, pc);
}

static void
up_writable(void *arg, backtap_flow_t *flow)
{
  btcirc_link_t *lk = arg;
  btcirc_flow_t *bf = flow_by_arg(lk->bc, backtap_flow_arg(flow));
  if (!bf)
    return;
  flow_push_direct(bf);
  if (bf->chan) {
    if (bf->n_direct == 0)
      channel_carried_writable(bf->chan);
  } else {
    flow_finish_if_done(bf);
  }
}

static void
up_link_failed(void *arg, backtap_link_t *bl, const char *why)
{
  btcirc_link_t *lk = arg;
  (void)bl;
  log_notice("BackTap: the peer of datagram link %p stopped acknowledging "
             "(%s); closing the link and its circuits",
             (void *)lk->dl, why);
  evloop_deferred_schedule(lk->fail);
}

static void
up_flow_failed(void *arg, backtap_flow_t *flow, const char *why)
{
  btcirc_link_t *lk = arg;
  btcirc_flow_t *bf = flow_by_arg(lk->bc, backtap_flow_arg(flow));
  if (!bf)
    return;
  log_info("BackTap: circuit %u failed: %s", (unsigned)backtap_flow_circid(flow),
           why);
  bf->flow = NULL; /* the engine forgets it on return */
  bf->n_direct = 0;
  if (bf->chan) {
    channel_t *chan = bf->chan;
    bf->chan = NULL;
    flow_forget(bf);
    channel_close(chan, "BackTap: the peer stopped answering for it");
  } else {
    flow_forget(bf);
  }
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
  (void)dgram_link_send(lk->dl, t, rec, len);
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
  dlist_node_t *n, *next;
  for (n = dlist_first(&lk->flows); n; n = next) {
    next = dlist_next(&lk->flows, n);
    btcirc_flow_t *bf = DLIST_ENTRY(n, btcirc_flow_t, node);
    if (!bf->chan)
      flow_finish_if_done(bf);
  }
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
link_free(btcirc_link_t *lk)
{
  btcirc_t *bc = lk->bc;
  dlist_node_t *n;
  /* Close the circuits first (their cells' releases find no flow). */
  while ((n = dlist_first(&lk->flows))) {
    btcirc_flow_t *bf = DLIST_ENTRY(n, btcirc_flow_t, node);
    channel_t *chan = bf->chan;
    bf->chan = NULL;
    bf->flow = NULL;
    flow_forget(bf);
    if (chan)
      channel_close(chan, "its datagram link closed");
  }
  stats_add(&bc->gone, backtap_link_stats(lk->bl));
  dlist_remove(&lk->node);
  dgram_link_set_user(lk->dl, NULL);
  backtap_link_free(lk->bl);
  mem_sync(lk);
  evloop_timer_free(lk->timer);
  evloop_deferred_free(lk->fail);
  free(lk);
}

static void
link_fail_cb(void *arg)
{
  btcirc_link_t *lk = arg;
  dgram_link_t *dl = lk->dl;
  link_free(lk);
  dgram_link_close(dl, "BackTap: the peer stopped acknowledging");
}

static void
link_observer(dgram_link_t *dl, int up, const char *why, void *arg)
{
  btcirc_t *bc = arg;
  (void)why;
  btcirc_link_t *lk = dgram_link_get_user(dl);
  if (up && !lk) {
    lk = pc_zalloc(sizeof(*lk));
    lk->bc = bc;
    lk->dl = dl;
    dlist_init(&lk->flows);
    lk->timer = evloop_timer_new(bc->loop, link_timer_cb, lk);
    lk->fail = evloop_deferred_new(bc->loop, link_fail_cb, lk);
    lk->bl = backtap_link_new(&bc->params, &lower_ops, lk, &upper_ops, lk);
    dlist_insert_tail(&bc->links, &lk->node);
    dgram_link_set_user(dl, lk);
    mem_sync(lk);
  } else if (!up && lk) {
    link_free(lk);
  }
}

static void
record_cb(dgram_link_t *dl, uint8_t type, const uint8_t *body, size_t len,
          void *arg)
{
  (void)arg;
  btcirc_link_t *lk = dgram_link_get_user(dl);
  if (!lk)
    return;
  backtap_rec_type_t t = type == DGRAM_REC_BACKTAP_CELL ? BACKTAP_REC_CELL
                                                        : BACKTAP_REC_FEEDBACK;
  (void)backtap_link_input(lk->bl, t, body, len);
  mem_sync(lk);
}

/* ---- the extension choice ---- */

static channel_t *
carrier_provider(const pc_addr_t *addr, const uint8_t *rsa_id,
                 const uint8_t *ed_id, void *arg)
{
  btcirc_t *bc = arg;
  static log_ratelim_t rl = LOG_RATELIM_INIT(60, 4);
  unsigned suppressed = 0;
  char a[PC_ADDR_STR_LEN];
  if (!bc->outgoing)
    return NULL;
  dgram_link_t *dl = ed_id ? dgram_link_find(bc->d, ed_id) : NULL;
  btcirc_link_t *lk = dl ? dgram_link_get_user(dl) : NULL;
  const uint8_t *prsa = dl ? dgram_link_peer_rsa_id(dl) : NULL;
  int offers = ed_id && dgram_peer_port(bc->d, ed_id) != 0;
  int usable = lk && dgram_link_is_up(dl) && !backtap_link_is_dead(lk->bl) &&
               prsa && rsa_id && !memcmp(prsa, rsa_id, 20);
  if (circuit_transport_for_peer(CIRCUIT_TRANSPORT_BACKTAP, offers || usable,
                                 usable) != CIRCUIT_TRANSPORT_BACKTAP) {
    bc->st.ext_tls++;
    if (log_ratelim_allow(&rl, time(NULL), &suppressed))
      log_notice("CircuitTransport: the hop to %s uses TLS (%s)",
                 pc_addr_fmt(addr, a, sizeof(a), 1),
                 !offers ? "the relay announced no DatagramPort"
                         : "no authenticated datagram link to it yet");
    else
      log_info("CircuitTransport: the hop to %s uses TLS",
               pc_addr_fmt(addr, a, sizeof(a), 1));
    return NULL;
  }
  btcirc_flow_t *bf = flow_new(lk);
  bf->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)bf->tag,
                                 addr, rsa_id, ed_id, 1, "(BackTap)");
  bc->st.ext_backtap++;
  if (log_ratelim_allow(&rl, time(NULL), &suppressed))
    log_notice("CircuitTransport: the hop to %s uses BackTap over the "
               "datagram link", pc_addr_fmt(addr, a, sizeof(a), 1));
  else
    log_info("CircuitTransport: the hop to %s uses BackTap",
             pc_addr_fmt(addr, a, sizeof(a), 1));
  return bf->chan;
}

/* ---- the memory handler's view of a circuit ---- */

static size_t
chan_flow_mem(const channel_t *chan)
{
  void *arg = channel_carrier_arg(chan, &carrier_ops);
  btcirc_flow_t *bf = arg && the_bc ? flow_by_arg(the_bc, arg) : NULL;
  return bf && bf->flow ? backtap_flow_mem_bytes(bf->flow) : 0;
}

/* What the BackTap flows of circ's hops hold (circuit_extra_mem_fn), so
 * that MaxMemInQueues' handler weighs it when it picks circuits. */
static size_t
circ_mem(circuit_t *circ)
{
  size_t n = chan_flow_mem(circ->n_chan);
  if (circ->kind == CIRC_KIND_OR)
    n += chan_flow_mem(((or_circuit_t *)circ)->p_chan);
  return n;
}

/* ---- the instance ---- */

btcirc_t *
btcirc_new(evloop_t *loop, dgram_t *d, const backtap_params_t *params)
{
  if (the_bc) {
    log_warn("BackTap: a second instance was refused");
    return NULL;
  }
  btcirc_t *bc = pc_zalloc(sizeof(*bc));
  bc->loop = loop;
  bc->d = d;
  if (params)
    bc->params = *params;
  else
    backtap_params_default(&bc->params);
  bc->flows = hmap_new(8);
  dlist_init(&bc->links);
  /* Attach step by step; on failure undo exactly the steps that were
   * taken (a refused hook belongs to someone else). */
  int step = 0;
  if (dgram_register_handler(d, DGRAM_REC_BACKTAP_CELL, record_cb, bc) == 0 &&
      ++step &&
      dgram_register_handler(d, DGRAM_REC_BACKTAP_FEEDBACK, record_cb, bc) ==
          0 &&
      ++step && dgram_add_link_observer(d, link_observer, bc) == 0 &&
      ++step && packed_cell_set_release_hook(release_hook) == 0 && ++step &&
      pctcp_set_carrier_provider(carrier_provider, bc) == 0 && ++step &&
      circuits_add_extra_mem_fn(circ_mem) == 0)
    step = -1;
  if (step >= 0) {
    log_warn("BackTap: cannot attach to the datagram links and circuits "
             "(a hook is taken)");
    if (step >= 5)
      pctcp_set_carrier_provider(NULL, NULL);
    if (step >= 4)
      packed_cell_set_release_hook(NULL);
    if (step >= 3)
      dgram_remove_link_observer(d, link_observer, bc);
    if (step >= 2)
      dgram_register_handler(d, DGRAM_REC_BACKTAP_FEEDBACK, NULL, NULL);
    if (step >= 1)
      dgram_register_handler(d, DGRAM_REC_BACKTAP_CELL, NULL, NULL);
    hmap_free(bc->flows, NULL);
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
  dlist_node_t *n;
  while ((n = dlist_first(&bc->links)))
    link_free(DLIST_ENTRY(n, btcirc_link_t, node));
  pctcp_set_carrier_provider(NULL, NULL);
  packed_cell_set_release_hook(NULL);
  circuits_remove_extra_mem_fn(circ_mem);
  dgram_remove_link_observer(bc->d, link_observer, bc);
  dgram_register_handler(bc->d, DGRAM_REC_BACKTAP_CELL, NULL, NULL);
  dgram_register_handler(bc->d, DGRAM_REC_BACKTAP_FEEDBACK, NULL, NULL);
  hmap_free(bc->flows, NULL);
  memacct_set(MEMACCT_BACKTAP, 0);
  if (the_bc == bc)
    the_bc = NULL;
  free(bc);
}

void
btcirc_set_outgoing(btcirc_t *bc, int on)
{
  bc->outgoing = on ? 1 : 0;
}

const btcirc_t *
btcirc_instance(void)
{
  return the_bc;
}

void
btcirc_get_stats(const btcirc_t *bc, btcirc_stats_t *out)
{
  *out = bc->st;
  out->bt = bc->gone;
  out->links = 0;
  out->flows = (unsigned)hmap_size(bc->flows);
  out->mem_bytes = 0;
  for (dlist_node_t *n = dlist_first(&bc->links); n;
       n = dlist_next(&bc->links, n)) {
    const btcirc_link_t *lk = DLIST_ENTRY(n, btcirc_link_t, node);
    out->links++;
    stats_add(&out->bt, backtap_link_stats(lk->bl));
    out->mem_bytes += backtap_link_mem_bytes(lk->bl);
  }
}
