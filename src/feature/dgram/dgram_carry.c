/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_carry.c -- circuit hops carried over the datagram links, the part
 * BackTap and TCP-over-DTLS share (dgram_carry.h).
 *
 * The instances sit in a table indexed by tag class (a registry filled at
 * start-up, at most one transport per class): the hooks core offers take
 * no argument (the release hook) or only the tag (the carrier ops' arg),
 * so the tag's class says which transport, and its map says which hop.
 * After a hop is freed its tag finds nothing: late releases and late
 * carrier calls of a closed channel do nothing.
 *
 * The memory handler's view (circuits_add_extra_mem_fn) is one function
 * for every transport, registered while any instance exists.
 */
#include "feature/dgram/dgram_carry.h"

#include "core/or/cell_queue.h"
#include "core/or/circuit.h"
#include "core/or/pctcp.h"
#include "lib/container/hmap.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/address/address.h"
#include "lib/time/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELL_LEN CELL_MAX_NETWORK_LEN
#define N_CLASSES 4

struct dgram_carry_t {
  evloop_t *loop;
  dgram_t *d;
  const dgram_carry_ops_t *ops;
  void *arg;
  int outgoing;
  uint64_t next_tag;
  hmap_t *hops;                   /* tag -> dgram_carry_hop_t */
  hmap_t *links;                  /* dgram_link_t pointer -> link */
  dlist_t link_list;
  dlist_t bw_waiting;             /* hops out of bandwidth tokens */
  dgram_carry_stats_t st;
};

static dgram_carry_t *by_class[N_CLASSES];
static const channel_carrier_ops_t carrier_ops;

/* ---- finding things ---- */

static dgram_carry_t *
instance_of_tag(uint64_t tag)
{
  return by_class[tag >> PACKED_CELL_TAG_CLASS_SHIFT];
}

dgram_carry_hop_t *
dgram_carry_hop_by_tag(const dgram_carry_t *c, uint64_t tag)
{
  return c ? hmap_get_u64(c->hops, tag) : NULL;
}

static dgram_carry_hop_t *
hop_of_arg(void *arg)
{
  uint64_t tag = (uint64_t)(uintptr_t)arg;
  return dgram_carry_hop_by_tag(instance_of_tag(tag), tag);
}

static dgram_carry_link_t *
link_of(const dgram_carry_t *c, const dgram_link_t *dl)
{
  return hmap_get_u64(c->links, (uint64_t)(uintptr_t)dl);
}

/* ---- hops ---- */

static dgram_carry_hop_t *
hop_new(dgram_carry_link_t *lk)
{
  dgram_carry_t *c = lk->c;
  dgram_carry_hop_t *h = pc_zalloc(c->ops->hop_size);
  h->tag = PACKED_CELL_TAG_CLASS(c->ops->tag_class) | ++c->next_tag;
  h->lk = lk;
  hmap_set_u64(c->hops, h->tag, h);
  dlist_insert_tail(&lk->hops, &h->node);
  return h;
}

/* Forget our record (the engine's side is closed or gone). */
static void
hop_forget(dgram_carry_hop_t *h)
{
  if (h->lk->c->ops->hop_gone)
    h->lk->c->ops->hop_gone(h);
  if (dlist_node_is_linked(&h->bw_node))
    dlist_remove(&h->bw_node);
  hmap_remove_u64(h->lk->c->hops, h->tag);
  dlist_remove(&h->node);
  free(h->direct);
  free(h);
}

static void
push_direct(dgram_carry_hop_t *h)
{
  const dgram_carry_ops_t *ops = h->lk->c->ops;
  unsigned sent = 0;
  while (sent < h->n_direct && ops->hop_can_send(h) &&
         ops->hop_send(h, h->direct[sent]) == 0)
    sent++;
  if (sent) {
    memmove(h->direct[0], h->direct[sent],
            (size_t)(h->n_direct - sent) * CELL_LEN);
    h->n_direct -= sent;
  }
}

/* The channel is gone: end the hop once no direct cell waits (or the wait
 * is too long). */
static void
finish_if_done(dgram_carry_hop_t *h)
{
  dgram_carry_t *c = h->lk->c;
  if (h->chan)
    return;
  if (h->n_direct && c->ops->hop_alive(h) &&
      time_mono_us() < h->linger_until_us)
    return;
  c->st.direct_dropped += h->n_direct;
  h->n_direct = 0;
  c->ops->hop_close(h);
  hop_forget(h);
}

dgram_carry_hop_t *
dgram_carry_hop_accept(dgram_carry_link_t *lk, unsigned max_hops)
{
  dgram_carry_t *c = lk->c;
  if (!dgram_link_peer_ed_id(lk->dl) || !dgram_link_peer_rsa_id(lk->dl) ||
      (max_hops && dlist_len(&lk->hops) >= max_hops)) {
    c->st.hops_refused++;
    return NULL;
  }
  c->st.hops_in++;
  return hop_new(lk);
}

void
dgram_carry_hop_open_channel(dgram_carry_hop_t *h)
{
  dgram_link_t *dl = h->lk->dl;
  h->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)h->tag,
                                dgram_link_peer_addr(dl),
                                dgram_link_peer_rsa_id(dl),
                                dgram_link_peer_ed_id(dl), 0,
                                h->lk->c->ops->chan_kind);
  if (h->lk->c->ops->backpressure)
    channel_carried_set_backpressure(h->chan);
}

void
dgram_carry_hop_input(dgram_carry_hop_t *h, const uint8_t *cell,
                      uint32_t seq)
{
  packed_cell_t *pc = packed_cell_new();
  memcpy(pc->body, cell, CELL_LEN);
  pc->len = CELL_LEN;
  pc->queued_us = time_mono_us();
  pc->rel_tag = h->tag;
  pc->rel_seq = seq;
  channel_carried_input(h->chan, pc);
}

void
dgram_carry_hop_writable(dgram_carry_hop_t *h)
{
  push_direct(h);
  if (h->chan) {
    if (h->n_direct == 0 && h->lk->c->ops->hop_can_send(h))
      channel_carried_writable(h->chan);
  } else {
    finish_if_done(h);
  }
}

void
dgram_carry_hop_lost(dgram_carry_hop_t *h, const char *why)
{
  channel_t *chan = h->chan;
  h->chan = NULL;
  h->n_direct = 0;
  hop_forget(h);
  if (chan)
    channel_close(chan, why);
}

void
dgram_carry_link_reap(dgram_carry_link_t *lk)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&lk->hops); n; n = next) {
    next = dlist_next(&lk->hops, n);
    dgram_carry_hop_t *h = DLIST_ENTRY(n, dgram_carry_hop_t, node);
    if (!h->chan)
      finish_if_done(h);
  }
}

/* ---- the carrier: what the channel asks of us ---- */

/* The bandwidth limits have tokens again: the channels that were told
 * to wait try again (each asks can_send afresh). */
static void
bw_wake(void *arg)
{
  dgram_carry_t *c = arg;
  dlist_t woken;
  dlist_init(&woken);
  dlist_node_t *n;
  while ((n = dlist_first(&c->bw_waiting))) {
    dlist_remove(n);
    dlist_insert_tail(&woken, n);
  }
  while ((n = dlist_first(&woken))) {
    dlist_remove(n);
    dgram_carry_hop_t *h = DLIST_ENTRY(n, dgram_carry_hop_t, bw_node);
    if (h->chan && h->n_direct == 0)
      channel_carried_writable(h->chan);
  }
}

static int
carrier_can_send(void *arg)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h || h->n_direct)
    return 0;
  dgram_carry_t *c = h->lk->c;
  if (!dgram_link_may_write(h->lk->dl, bw_wake, c)) {
    if (!dlist_node_is_linked(&h->bw_node)) {
      dlist_insert_tail(&c->bw_waiting, &h->bw_node);
      c->st.bw_blocked++;
    }
    return 0;
  }
  return c->ops->hop_can_send(h);
}

static int
carrier_send(void *arg, const uint8_t *cell, size_t len)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h || len != CELL_LEN)
    return -1;
  dgram_carry_t *c = h->lk->c;
  if (c->ops->hop_ready && c->ops->hop_ready(h, cell) < 0)
    return -1;
  if (h->n_direct == 0 && c->ops->hop_can_send(h))
    return c->ops->hop_send(h, cell);
  /* A direct cell (CREATE2, DESTROY) while the engine has no room: it
   * waits, a few at most. */
  if (h->n_direct >= DGRAM_CARRY_DIRECT_MAX) {
    c->st.direct_dropped++;
    return -1;
  }
  if (!h->direct)
    h->direct = pc_malloc(DGRAM_CARRY_DIRECT_MAX * CELL_LEN);
  memcpy(h->direct[h->n_direct++], cell, CELL_LEN);
  c->st.direct_queued++;
  return 0;
}

static void
carrier_closed(void *arg)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h)
    return;
  h->chan = NULL;
  h->linger_until_us = time_mono_us() + DGRAM_CARRY_LINGER_US;
  finish_if_done(h);
}

static unsigned
carrier_window(void *arg)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h || !h->lk->c->ops->hop_window)
    return 0;
  return h->lk->c->ops->hop_window(h);
}

static int
carrier_sockstat(void *arg, sockstat_tcp_t *out)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h || !h->lk->c->ops->hop_sockstat)
    return -1;
  return h->lk->c->ops->hop_sockstat(h, out);
}

static int
carrier_flowstat(void *arg, channel_flowstat_t *out)
{
  dgram_carry_hop_t *h = hop_of_arg(arg);
  if (!h || !h->lk->c->ops->hop_flowstat)
    return -1;
  return h->lk->c->ops->hop_flowstat(h, out);
}

static const channel_carrier_ops_t carrier_ops = {
    carrier_can_send,
    carrier_send,
    carrier_closed,
    carrier_window,
    carrier_sockstat,
    carrier_flowstat,
};

/* A cell we delivered has left this relay. */
static void
release_hook(uint64_t tag, uint32_t seq)
{
  dgram_carry_t *c = instance_of_tag(tag);
  dgram_carry_hop_t *h = dgram_carry_hop_by_tag(c, tag);
  if (h)
    c->ops->released(h, seq);
}

/* ---- links ---- */

static void
link_free(dgram_carry_link_t *lk)
{
  dgram_carry_t *c = lk->c;
  if (c->ops->link_stop)
    c->ops->link_stop(lk);
  /* Close the circuits (their cells' releases find no hop). */
  dlist_node_t *n;
  while ((n = dlist_first(&lk->hops)))
    dgram_carry_hop_lost(DLIST_ENTRY(n, dgram_carry_hop_t, node),
                         "its datagram link closed");
  c->ops->link_down(lk);
  hmap_remove_u64(c->links, (uint64_t)(uintptr_t)lk->dl);
  dlist_remove(&lk->node);
  free(lk);
}

void
dgram_carry_link_close(dgram_carry_link_t *lk, const char *why)
{
  dgram_link_t *dl = lk->dl;
  link_free(lk);
  dgram_link_close(dl, why);
}

static void
link_observer(dgram_link_t *dl, int up, const char *why, void *arg)
{
  dgram_carry_t *c = arg;
  (void)why;
  dgram_carry_link_t *lk = link_of(c, dl);
  if (up && !lk) {
    lk = pc_zalloc(c->ops->link_size);
    lk->c = c;
    lk->dl = dl;
    dlist_init(&lk->hops);
    if (c->ops->link_up(lk) < 0) {
      free(lk);
      return;
    }
    hmap_set_u64(c->links, (uint64_t)(uintptr_t)dl, lk);
    dlist_insert_tail(&c->link_list, &lk->node);
  } else if (!up && lk) {
    link_free(lk);
  }
}

static void
record_cb(dgram_link_t *dl, uint8_t type, const uint8_t *body, size_t len,
          void *arg)
{
  dgram_carry_t *c = arg;
  dgram_carry_link_t *lk = link_of(c, dl);
  if (lk)
    c->ops->record(lk, type, body, len);
}

/* ---- the extension choice ---- */

static channel_t *
carrier_provider(const pc_addr_t *addr, const uint8_t *rsa_id,
                 const uint8_t *ed_id, void *arg)
{
  dgram_carry_t *c = arg;
  const dgram_carry_ops_t *ops = c->ops;
  static log_ratelim_t rl = LOG_RATELIM_INIT(60, 4);
  unsigned suppressed = 0;
  char a[PC_ADDR_STR_LEN];
  if (!c->outgoing)
    return NULL;
  dgram_link_t *dl = ed_id ? dgram_link_find(c->d, ed_id) : NULL;
  dgram_carry_link_t *lk = dl ? link_of(c, dl) : NULL;
  const uint8_t *prsa = dl ? dgram_link_peer_rsa_id(dl) : NULL;
  int offers = ed_id && dgram_peer_port(c->d, ed_id) != 0;
  int usable = lk && dgram_link_is_up(dl) &&
               (!ops->link_usable || ops->link_usable(lk)) && prsa &&
               rsa_id && !memcmp(prsa, rsa_id, 20);
  const char *tls_why = !offers && !usable
                            ? "the relay announced no DatagramPort"
                            : "no authenticated datagram link to it yet";
  dgram_carry_hop_t *h = NULL;
  if (circuit_transport_for_peer(ops->transport, offers || usable, usable) ==
      ops->transport) {
    h = hop_new(lk);
    const char *why = ops->hop_connect ? ops->hop_connect(h) : NULL;
    if (why) {
      hop_forget(h);
      h = NULL;
      tls_why = why;
    }
  }
  if (!h) {
    c->st.ext_tls++;
    if (!offers && !usable)
      c->st.ext_tls_no_port++;
    if (log_ratelim_allow(&rl, time(NULL), &suppressed))
      log_notice("CircuitTransport: the hop to %s uses TLS (%s)",
                 pc_addr_fmt(addr, a, sizeof(a), 1), tls_why);
    else
      log_info("CircuitTransport: the hop to %s uses TLS",
               pc_addr_fmt(addr, a, sizeof(a), 1));
    return NULL;
  }
  h->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)h->tag,
                                addr, rsa_id, ed_id, 1, ops->chan_kind);
  if (ops->backpressure)
    channel_carried_set_backpressure(h->chan);
  c->st.ext_carried++;
  if (log_ratelim_allow(&rl, time(NULL), &suppressed))
    log_notice("CircuitTransport: the hop to %s uses %s over the "
               "datagram link", pc_addr_fmt(addr, a, sizeof(a), 1),
               ops->name);
  else
    log_info("CircuitTransport: the hop to %s uses %s",
             pc_addr_fmt(addr, a, sizeof(a), 1), ops->name);
  return h->chan;
}

/* ---- the memory handler's view of a circuit ---- */

static size_t
chan_hop_mem(const channel_t *chan)
{
  void *arg = channel_carrier_arg(chan, &carrier_ops);
  dgram_carry_hop_t *h = arg ? hop_of_arg(arg) : NULL;
  return h ? h->lk->c->ops->hop_mem(h) : 0;
}

/* What the hops of circ hold in their engines (circuit_extra_mem_fn), so
 * that MaxMemInQueues' handler weighs it when it picks circuits. */
static size_t
circ_mem(circuit_t *circ)
{
  size_t n = chan_hop_mem(circ->n_chan);
  if (circ->kind == CIRC_KIND_OR)
    n += chan_hop_mem(((or_circuit_t *)circ)->p_chan);
  return n;
}

static int
n_instances(void)
{
  int n = 0;
  for (int i = 0; i < N_CLASSES; i++)
    n += by_class[i] != NULL;
  return n;
}

/* ---- the instance ---- */

/* Record handler i (0, 1) of the transport: register (cb) or not. */
static int
handler(dgram_carry_t *c, int i, dgram_record_cb cb)
{
  uint8_t type = c->ops->record_types[i];
  return type ? dgram_register_handler(c->d, type, cb, cb ? c : NULL) : 0;
}

static int
set_release_hook(const dgram_carry_t *c, packed_cell_release_fn fn)
{
  unsigned cls = c->ops->tag_class;
  return cls ? packed_cell_set_release_hook_class(cls, fn)
             : packed_cell_set_release_hook(fn);
}

/* Take back the first `steps` hooks of hooks_attach(). */
static void
hooks_detach(dgram_carry_t *c, int steps)
{
  if (steps >= 5)
    pctcp_remove_carrier_provider(carrier_provider, c);
  if (steps >= 4)
    set_release_hook(c, NULL);
  if (steps >= 3)
    dgram_remove_link_observer(c->d, link_observer, c);
  if (steps >= 2)
    (void)handler(c, 1, NULL);
  if (steps >= 1)
    (void)handler(c, 0, NULL);
}

/* Attach step by step; on a refusal undo exactly the steps taken (a
 * refused hook belongs to someone else). 0 or -1. The memory function is
 * one for all instances (added twice, it is kept once). */
static int
hooks_attach(dgram_carry_t *c)
{
  int step = 0;
  if (handler(c, 0, record_cb) == 0 && ++step &&
      handler(c, 1, record_cb) == 0 && ++step &&
      dgram_add_link_observer(c->d, link_observer, c) == 0 && ++step &&
      set_release_hook(c, release_hook) == 0 && ++step &&
      pctcp_add_carrier_provider(carrier_provider, c) == 0 && ++step &&
      circuits_add_extra_mem_fn(circ_mem) == 0)
    return 0;
  hooks_detach(c, step);
  return -1;
}

dgram_carry_t *
dgram_carry_new(evloop_t *loop, dgram_t *d, const dgram_carry_ops_t *ops,
                void *arg)
{
  if (ops->tag_class >= N_CLASSES || by_class[ops->tag_class]) {
    log_warn("%s: a second instance was refused", ops->name);
    return NULL;
  }
  dgram_carry_t *c = pc_zalloc(sizeof(*c));
  c->loop = loop;
  c->d = d;
  c->ops = ops;
  c->arg = arg;
  c->hops = hmap_new(8);
  c->links = hmap_new(8);
  dlist_init(&c->link_list);
  dlist_init(&c->bw_waiting);
  by_class[ops->tag_class] = c;
  if (hooks_attach(c) < 0) {
    log_warn("%s: cannot attach to the datagram links and circuits (a "
             "hook is taken)", ops->name);
    by_class[ops->tag_class] = NULL;
    hmap_free(c->hops, NULL);
    hmap_free(c->links, NULL);
    free(c);
    return NULL;
  }
  return c;
}

void
dgram_carry_free_(dgram_carry_t *c)
{
  if (!c)
    return;
  dlist_node_t *n;
  while ((n = dlist_first(&c->link_list)))
    link_free(DLIST_ENTRY(n, dgram_carry_link_t, node));
  dgram_cancel_wake(c->d, bw_wake, c);
  if (by_class[c->ops->tag_class] == c)
    by_class[c->ops->tag_class] = NULL;
  hooks_detach(c, 5);
  if (n_instances() == 0)
    circuits_remove_extra_mem_fn(circ_mem);
  hmap_free(c->hops, NULL);
  hmap_free(c->links, NULL);
  free(c);
}

void *
dgram_carry_arg(const dgram_carry_t *c)
{
  return c->arg;
}

void
dgram_carry_set_outgoing(dgram_carry_t *c, int on)
{
  c->outgoing = on ? 1 : 0;
}

void
dgram_carry_get_stats(const dgram_carry_t *c, dgram_carry_stats_t *out)
{
  *out = c->st;
  out->links = (unsigned)hmap_size(c->links);
  out->hops = (unsigned)hmap_size(c->hops);
}

void
dgram_carry_foreach_link(const dgram_carry_t *c,
                         void (*fn)(const dgram_carry_link_t *lk, void *arg),
                         void *arg)
{
  for (dlist_node_t *n = dlist_first(&c->link_list); n;
       n = dlist_next(&c->link_list, n))
    fn(DLIST_ENTRY(n, dgram_carry_link_t, node), arg);
}
