/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_exit.c -- the exit side of conflux (see conflux.h).
 *
 * Each set (xset_t) owns a cfx_set_t (the protocol logic, conflux_set.c)
 * and is found by its nonce in a hash map. Each leg circuit points at its
 * xleg_t through or_circuit_t.mux, which is how core knows to route its
 * multiplexed messages through us:
 *   inbound:  relay.c hands us each multiplexed message of a leg (after
 *             counting DATA towards the leg's SENDMEs); cfx_set_on_msg()
 *             says whether it is next in order -- then we let core process
 *             it on the set's stream home (relay_deliver_ordered()) and
 *             drain whatever became in order in the queue -- or queues it.
 *   outbound: core asks pick() for the leg of each multiplexed message the
 *             streams send (we send the SWITCH first when the leg changes)
 *             and tells us with sent(); streams may package DATA while
 *             can_send() holds.
 *
 * Closing: a leg that closes is removed in the circuit-close observer
 * (before core ends the streams of that circuit, so that a closing home
 * hands its streams to another leg). When tor's rules say the whole set
 * must go, or on a protocol violation, the set is marked and its legs are
 * closed from a deferred callback (an observer must not close circuits,
 * and a handler may still be using the circuit). A set is freed when its
 * last leg is gone; a reference count keeps it alive while we are
 * delivering its messages, since delivering may close circuits.
 *
 * Memory: the bytes a set's out-of-order queue holds count in
 * MaxMemInQueues (circuits_add_extra_mem_fn). They are charged to one leg
 * circuit, the one that received furthest (cfx_set_ooo_holder), and when
 * that circuit closes while messages wait -- the OOM handler chose it --
 * the whole set is torn down, which frees the queue.
 */
#include "feature/conflux/conflux.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_set.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct xset_t xset_t;

typedef struct xleg_t {
  or_circuit_t *circ;
  xset_t *set;
  cfx_leg_t *leg;
  uint64_t linked_sent_us;
  unsigned acked : 1;
} xleg_t;

struct xset_t {
  cfx_set_t *cfx;
  uint64_t serial;           /* for logs, instead of the nonce */
  or_circuit_t *home;        /* the leg whose edge holds the streams */
  int refs;                  /* > 0 while we deliver its messages */
  unsigned teardown : 1;     /* closing every leg */
  unsigned dead : 1;         /* no legs left; free when refs == 0 */
  dlist_node_t teardown_node;
};

static struct {
  int initialized;
  int mux_refused;           /* another feature holds the mux hooks */
  evloop_t *loop;
  conflux_exit_config_t cfg;
  hmap_t *sets;              /* nonce -> xset_t */
  dlist_t teardowns;         /* xset_t.teardown_node */
  evloop_deferred_t *teardown_ev;
  uint64_t next_serial;
  conflux_exit_stats_t stats;
} X;

static uint64_t
now_us(void)
{
  return evloop_now_us(X.loop);
}

/* ---- sets ---------------------------------------------------------- */

static void
leg_state(void *handle, cfx_leg_state_t *out)
{
  xleg_t *x = handle;
  const cc_t *cc = circ_edge_cc(x->circ);
  if (cc) {
    out->cwnd = cc->cwnd;
    out->inflight = cc->inflight;
    out->rtt_us = cc->ewma_rtt_us;
    out->sendme_inc = cc->sendme_inc;
    out->blocked = x->circ->p_queue.cells.n >= cc->p.cellq_high;
  } else {
    /* No DATA yet on this leg: a fresh controller. */
    out->cwnd = cc_params_current()->cwnd_init;
    out->inflight = 0;
    out->rtt_us = 0;
    out->sendme_inc = x->circ->cc_sendme_inc;
    out->blocked = 0;
  }
}

static void
set_describe(const xset_t *s, char *buf, size_t len)
{
  cfx_set_describe(s->cfx, buf, len);
}

void
conflux_exit_log_sets(void)
{
  if (!X.initialized || !X.sets)
    return;
  hmap_iter_t it;
  const uint8_t *key;
  void *val;
  hmap_iter_init(&it, X.sets);
  while (hmap_iter_next(&it, &key, &val)) {
    const xset_t *s = val;
    char d[512];
    set_describe(s, d, sizeof(d));
    log_notice("Conflux set #%llu open: %s", (unsigned long long)s->serial,
               d);
  }
}

static void
set_free(xset_t *s)
{
  char d[512];
  set_describe(s, d, sizeof(d));
  log_info("Conflux set #%llu closed: %s", (unsigned long long)s->serial, d);
  if (dlist_node_is_linked(&s->teardown_node))
    dlist_remove(&s->teardown_node);
  cfx_set_free(s->cfx);
  X.stats.n_open_sets--;
  free(s);
}

static void
set_unref(xset_t *s)
{
  if (--s->refs == 0 && s->dead)
    set_free(s);
}

/* Close every leg of s soon (deferred: callers may be inside a handler of
 * one of its circuits, or in a close observer). */
static void
set_teardown(xset_t *s, const char *why)
{
  if (s->teardown || s->dead)
    return;
  s->teardown = 1;
  X.stats.n_teardowns++;
  char d[512];
  set_describe(s, d, sizeof(d));
  log_info("Conflux set #%llu: closing every leg (%s); %s",
           (unsigned long long)s->serial, why, d);
  dlist_insert_tail(&X.teardowns, &s->teardown_node);
  evloop_deferred_schedule(X.teardown_ev);
}

static void
teardown_cb(void *arg)
{
  (void)arg;
  dlist_node_t *n;
  while ((n = dlist_first(&X.teardowns))) {
    xset_t *s = DLIST_ENTRY(n, xset_t, teardown_node);
    dlist_remove(n);
    s->refs++;
    or_circuit_t *circs[CFX_MAX_LEGS];
    int k = 0;
    for (int i = 0; i < s->cfx->n_legs; i++)
      circs[k++] = ((xleg_t *)s->cfx->legs[i]->handle)->circ;
    for (int i = 0; i < k; i++)
      circuit_mark_for_close(&circs[i]->base, DESTROY_REASON_FINISHED);
    set_unref(s);
  }
}

/* ---- core hooks ---------------------------------------------------- */

static or_circuit_t *
mux_pick(or_circuit_t *circ, uint8_t command)
{
  xleg_t *x = circ->mux;
  xset_t *s = x->set;
  if (s->teardown)
    return NULL;
  int send_switch;
  uint32_t rel;
  cfx_leg_t *leg = cfx_set_pick(s->cfx, command, &send_switch, &rel);
  if (send_switch < 0) {
    set_teardown(s, "a switch would exceed 32 bits");
    return NULL;
  }
  if (!leg)
    return NULL;
  xleg_t *to = leg->handle;
  if (send_switch) {
    uint8_t b[CFX_SWITCH_LEN];
    cfx_switch_encode(rel, b, sizeof(b));
    log_debug("Conflux set #%llu: switching to circuit %llu (+%u)",
              (unsigned long long)s->serial,
              (unsigned long long)to->circ->base.gid, (unsigned)rel);
    if (or_circuit_send_relay(to->circ, RELAY_COMMAND_CONFLUX_SWITCH, 0, b,
                              sizeof(b)) < 0)
      return NULL;
    X.stats.n_switches_sent++;
  }
  return to->circ;
}

static void
mux_sent(or_circuit_t *leg_circ, uint8_t command)
{
  xleg_t *x = leg_circ->mux;
  cfx_set_note_sent(x->set->cfx, x->leg, command);
  X.stats.n_msgs_sent++;
}

static int
mux_can_send(or_circuit_t *circ)
{
  xleg_t *x = circ->mux;
  return !x->set->teardown && cfx_set_can_send_data(x->set->cfx);
}

static or_circuit_t *
mux_home(or_circuit_t *circ)
{
  xleg_t *x = circ->mux;
  return x->set->home;
}

static size_t
mux_burst_bytes(or_circuit_t *circ)
{
  xleg_t *x = circ->mux;
  return cfx_set_ooo_bound_bytes(x->set->cfx);
}

static const circuit_mux_ops_t exit_mux_ops = {
    mux_pick, mux_sent, mux_can_send, mux_home, mux_burst_bytes};

/* Deliver one in-order message; 0, or -1 after starting the teardown. */
static int
deliver(xset_t *s, const relay_header_t *h, const uint8_t *body)
{
  if (!s->home || s->teardown || s->dead)
    return -1;
  if (relay_deliver_ordered(s->home, h, body) < 0) {
    set_teardown(s, "protocol violation in a multiplexed message");
    return -1;
  }
  return 0;
}

static int
mux_inbound(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body)
{
  xleg_t *x = circ->mux;
  xset_t *s = x->set;
  if (s->teardown)
    return 0;
  int r = cfx_set_on_msg(s->cfx, x->leg, h->command, h->stream_id, body,
                         h->length);
  if (r == CFX_RECV_QUEUED)
    return 0;
  if (r == CFX_RECV_OLD) {
    set_teardown(s, "a multiplexed message repeats a delivered number");
    return 0;
  }
  if (r == CFX_RECV_FULL) {
    X.stats.n_ooo_full++;
    log_notice("Conflux set #%llu: out-of-order queue full (%u messages); "
               "closing the set",
               (unsigned long long)s->serial, s->cfx->max_ooo);
    set_teardown(s, "out-of-order queue bound hit");
    return 0;
  }
  s->refs++;
  if (deliver(s, h, body) == 0) {
    cfx_msg_t *m;
    int k;
    while (!s->teardown && !s->dead && (k = cfx_set_next(s->cfx, &m)) != 0) {
      if (k < 0) {
        set_teardown(s, "duplicate sequence number in the queue");
        break;
      }
      relay_header_t h2;
      memset(&h2, 0, sizeof(h2));
      h2.command = m->command;
      h2.stream_id = m->stream_id;
      h2.length = m->len;
      int d = deliver(s, &h2, m->body);
      cfx_set_msg_release(s->cfx, m);
      if (d < 0)
        break;
    }
  }
  set_unref(s);
  return 0;
}

size_t
conflux_exit_circuit_mem(circuit_t *c)
{
  or_circuit_t *oc = TO_OR_CIRCUIT(c);
  if (!X.initialized || !oc || !oc->mux)
    return 0;
  xleg_t *x = oc->mux;
  if (cfx_set_ooo_holder(x->set->cfx) != x->leg)
    return 0;
  return cfx_set_ooo_bytes(x->set->cfx);
}

static void
circuit_closing(circuit_t *c, void *arg)
{
  (void)arg;
  or_circuit_t *oc = TO_OR_CIRCUIT(c);
  if (!oc || !oc->mux)
    return;
  xleg_t *x = oc->mux;
  xset_t *s = x->set;
  cfx_leg_state_t st;
  memset(&st, 0, sizeof(st));
  leg_state(x, &st);
  const char *why = NULL;
  int holds_queue = cfx_set_ooo_holder(s->cfx) == x->leg;
  int teardown = cfx_set_remove_leg(s->cfx, x->leg, &st, &why);
  if (holds_queue && !teardown) {
    teardown = 1;
    why = "the leg charged with the out-of-order queue closed";
  }
  oc->mux = NULL;
  free(x);
  log_info("Conflux set #%llu: leg circuit %llu closed, %d leg%s left",
           (unsigned long long)s->serial, (unsigned long long)c->gid,
           s->cfx->n_legs, s->cfx->n_legs == 1 ? "" : "s");
  if (s->cfx->n_legs == 0) {
    hmap_remove(X.sets, s->cfx->nonce);
    s->home = NULL;
    s->dead = 1;
    if (s->refs == 0)
      set_free(s);
    return;
  }
  if (s->home == oc) {
    or_circuit_t *nh = ((xleg_t *)s->cfx->legs[0]->handle)->circ;
    circ_edge_move_streams(oc, nh);
    s->home = nh;
  }
  if (teardown)
    set_teardown(s, why);
}

/* ---- handlers ------------------------------------------------------ */

/* Our scheduler: configured, or tor's choice for the client's wish. */
static cfx_alg_t
pick_alg(uint8_t desired_ux)
{
  return X.cfg.alg ? (cfx_alg_t)X.cfg.alg : cfx_alg_for_ux(desired_ux);
}

static int
refuse(or_circuit_t *circ, const char *what, const char *why)
{
  X.stats.n_refused++;
  log_info("Closing circuit %llu: %s (%s)",
           (unsigned long long)circ->base.gid, what, why);
  return -1;
}

static int
handle_link(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
            int early)
{
  (void)early;
  if (!X.cfg.enabled || X.mux_refused)
    return refuse(circ, "CONFLUX_LINK", "conflux is disabled");
  if (circ->base.n_chan)
    return refuse(circ, "CONFLUX_LINK", "we are not the last hop");
  if (circ->mux)
    return refuse(circ, "CONFLUX_LINK", "the circuit is already linked");
  if (!circ->cc_sendme_inc)
    return refuse(circ, "CONFLUX_LINK",
                  "no congestion control on the circuit");
  edge_stats_t est = {0};
  if (circ->edge)
    edge_get_stats(circ->edge, &est);
  if (est.n_streams)
    return refuse(circ, "CONFLUX_LINK", "the circuit already has streams");
  cfx_link_t link;
  const char *why;
  if (cfx_link_parse(&link, body, h->length, &why) < 0)
    return refuse(circ, "malformed CONFLUX_LINK", why);

  xset_t *s = hmap_get(X.sets, link.nonce);
  if (!s && link.last_seq_sent > 0)
    return refuse(circ, "CONFLUX_LINK",
                  "data loss: the client says it sent data on a new set");
  if (s && (s->teardown || s->dead))
    return refuse(circ, "CONFLUX_LINK", "its set is closing");
  if (s && s->cfx->n_legs >= CFX_MAX_LEGS)
    return refuse(circ, "CONFLUX_LINK", "the set has too many legs");
  if (s && cfx_set_link_loses_data(s->cfx, link.last_seq_sent)) {
    log_info("Conflux set #%llu: a new leg says the client sent %llu, "
             "we delivered %llu: data loss",
             (unsigned long long)s->serial,
             (unsigned long long)link.last_seq_sent,
             (unsigned long long)s->cfx->last_seq_delivered);
    set_teardown(s, "data loss on a new leg");
    return refuse(circ, "CONFLUX_LINK", "data loss");
  }
  int is_new = !s;
  if (is_new) {
    s = pc_zalloc(sizeof(*s));
    dlist_node_init(&s->teardown_node);
    s->serial = ++X.next_serial;
    s->cfx = cfx_set_new(link.nonce, pick_alg(link.desired_ux),
                         X.cfg.max_ooo, leg_state);
    hmap_set(X.sets, link.nonce, s);
    X.stats.n_sets++;
    X.stats.n_open_sets++;
  }
  /* Our LINKED carries our counts before this leg joins. */
  cfx_link_t ours;
  memset(&ours, 0, sizeof(ours));
  memcpy(ours.nonce, link.nonce, CFX_NONCE_LEN);
  ours.last_seq_sent = cfx_set_max_sent(s->cfx);
  ours.last_seq_recv = s->cfx->last_seq_delivered;
  ours.desired_ux = CFX_UX_MIN_LATENCY;

  xleg_t *x = pc_zalloc(sizeof(*x));
  x->circ = circ;
  x->set = s;
  x->leg = cfx_set_add_leg(s->cfx, x, link.last_seq_sent, link.last_seq_recv);
  s->cfx->alg = pick_alg(link.desired_ux);
  circ->mux = x;
  if (!s->home)
    s->home = circ;
  X.stats.n_legs_linked++;

  uint8_t b[CFX_LINK_LEN];
  cfx_link_encode(&ours, b, sizeof(b));
  x->linked_sent_us = now_us();
  log_info("Conflux set #%llu: linked circuit %llu as leg %d (client asks "
           "for %s; we send with %s)",
           (unsigned long long)s->serial, (unsigned long long)circ->base.gid,
           s->cfx->n_legs, cfx_ux_name(link.desired_ux),
           cfx_alg_name(s->cfx->alg));
  or_circuit_send_relay(circ, RELAY_COMMAND_CONFLUX_LINKED, 0, b, sizeof(b));
  return 0;
}

static int
handle_linked(or_circuit_t *circ, const relay_header_t *h,
              const uint8_t *body, int early)
{
  (void)h;
  (void)body;
  (void)early;
  return refuse(circ, "CONFLUX_LINKED", "only clients receive it");
}

static int
handle_linked_ack(or_circuit_t *circ, const relay_header_t *h,
                  const uint8_t *body, int early)
{
  (void)h;
  (void)body;
  (void)early;
  if (!X.cfg.enabled)
    return refuse(circ, "CONFLUX_LINKED_ACK", "conflux is disabled");
  if (circ->base.n_chan)
    return refuse(circ, "CONFLUX_LINKED_ACK", "we are not the last hop");
  xleg_t *x = circ->mux;
  if (!x)
    return refuse(circ, "CONFLUX_LINKED_ACK", "the circuit is not linked");
  if (x->acked)
    return refuse(circ, "CONFLUX_LINKED_ACK", "a second LINKED_ACK");
  x->acked = 1;
  uint64_t now = now_us();
  uint64_t rtt = now > x->linked_sent_us ? now - x->linked_sent_us : 1;
  x->leg->link_rtt_us = rtt;
  char d[512];
  set_describe(x->set, d, sizeof(d));
  log_info("Conflux set #%llu: circuit %llu acknowledged the link "
           "(RTT %.1f ms); %s",
           (unsigned long long)x->set->serial,
           (unsigned long long)circ->base.gid, rtt / 1000.0, d);
  return 0;
}

static int
handle_switch(or_circuit_t *circ, const relay_header_t *h,
              const uint8_t *body, int early)
{
  (void)early;
  if (!X.cfg.enabled)
    return refuse(circ, "CONFLUX_SWITCH", "conflux is disabled");
  xleg_t *x = circ->mux;
  if (!x)
    return refuse(circ, "CONFLUX_SWITCH", "the circuit is not linked");
  if (circ->base.n_chan)
    return refuse(circ, "CONFLUX_SWITCH", "we are not the last hop");
  uint32_t rel;
  const char *why;
  if (cfx_switch_parse(body, h->length, &rel, &why) < 0)
    return refuse(circ, "malformed CONFLUX_SWITCH", why);
  if (x->set->teardown)
    return 0;
  if (cfx_set_on_switch(x->set->cfx, x->leg, rel) < 0) {
    set_teardown(x->set, "a switch overflows the sequence numbers");
    return 0;
  }
  return 0;
}

/* ---- set-up -------------------------------------------------------- */

void
conflux_exit_configure(const conflux_exit_config_t *cfg)
{
  X.cfg = *cfg;
}

void
conflux_exit_init(evloop_t *loop, const conflux_exit_config_t *cfg)
{
  if (X.initialized)
    conflux_exit_shutdown();
  memset(&X, 0, sizeof(X));
  X.initialized = 1;
  X.loop = loop;
  X.cfg = *cfg;
  X.sets = hmap_new(CFX_NONCE_LEN);
  dlist_init(&X.teardowns);
  X.teardown_ev = evloop_deferred_new(loop, teardown_cb, NULL);
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINK, handle_link);
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINKED, handle_linked);
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINKED_ACK,
                         handle_linked_ack);
  relay_register_handler(RELAY_COMMAND_CONFLUX_SWITCH, handle_switch);
  int hooked = circuits_set_mux_ops(&exit_mux_ops) == 0;
  if (hooked && relay_set_mux_inbound(mux_inbound) < 0) {
    circuits_set_mux_ops(NULL);
    hooked = 0;
  }
  if (!hooked) {
    /* Another feature multiplexes circuits: say so once, refuse links. */
    log_warn("Conflux at the exit is off: another multiplexer is "
             "registered");
    X.mux_refused = 1;
  }
  circuits_add_close_observer(circuit_closing, NULL);
  if (circuits_add_extra_mem_fn(conflux_exit_circuit_mem) < 0)
    log_warn("Conflux: too many memory reporters; out-of-order queues do "
             "not count in MaxMemInQueues");
}

static void
forget_set(void *p)
{
  xset_t *s = p;
  for (int i = 0; i < s->cfx->n_legs; i++) {
    xleg_t *x = s->cfx->legs[i]->handle;
    x->circ->mux = NULL;
    free(x);
  }
  if (dlist_node_is_linked(&s->teardown_node))
    dlist_remove(&s->teardown_node);
  cfx_set_free(s->cfx);
  free(s);
}

void
conflux_exit_shutdown(void)
{
  if (!X.initialized)
    return;
  circuits_remove_close_observer(circuit_closing, NULL);
  circuits_remove_extra_mem_fn(conflux_exit_circuit_mem);
  if (!X.mux_refused) {
    circuits_set_mux_ops(NULL);
    relay_set_mux_inbound(NULL);
  }
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINK, NULL);
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINKED, NULL);
  relay_register_handler(RELAY_COMMAND_CONFLUX_LINKED_ACK, NULL);
  relay_register_handler(RELAY_COMMAND_CONFLUX_SWITCH, NULL);
  hmap_free(X.sets, forget_set);
  evloop_deferred_free(X.teardown_ev);
  X.initialized = 0;
}

void
conflux_exit_get_stats(conflux_exit_stats_t *out)
{
  *out = X.stats;
}
