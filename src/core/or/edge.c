/* SPDX-License-Identifier: BSD-3-Clause */
/* edge.c -- circuit ends: streams, windows, SENDMEs, XON/XOFF and
 * half-closed streams (see edge.h).
 *
 * Streams are kept twice: in an hmap keyed by the 2-byte stream ID (every
 * arriving stream cell looks its stream up, so this must not be a walk of
 * the list) and in a list in creation order, which is the order streams
 * held back by a window are woken in. Removing a stream from both is
 * O(1).
 *
 * Callbacks into owners may end streams or have the whole end freed (a
 * stream owner closing the circuit). A busy count keeps the edge_t alive
 * through the loops that call them; edge_free_() while busy ends the
 * streams at once and leaves the memory to the last loop.
 *
 * With congestion control the XON drain rate is measured from the bytes
 * the owner took (on_data) minus what it still holds (pending_bytes), at
 * the moments it reports progress (edge_stream_flushed).
 *
 * The half-closed record table is a fixed array of EDGE_HALF_MAX slots
 * made on the first END, searched linearly and pruned of expired records
 * lazily: it is only consulted for cells whose stream is not open.
 */
#include "core/or/edge.h"
#include "core/or/congestion_control.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct edge_stream_t {
  dlist_node_t node;
  edge_t *edge;
  uint16_t id;
  int package_window;
  int deliver_window;
  unsigned blocked : 1;       /* a send was limited by a window */
  unsigned connected : 1;     /* CONNECTED sent or received */
  const edge_stream_ops_t *ops;
  void *arg;
  /* congestion control: XON/XOFF, and bytes delivered to / written by the
   * owner (for the drain rate) */
  cc_flow_t flow;
  uint64_t delivered, written;
};

struct edge_t {
  const edge_end_ops_t *ops;
  void *end;
  evloop_t *loop;
  edge_circ_window_t win;
  struct cc_t *own_cc;        /* relay side: the edge's controller */
  int no_circ_windows;        /* stream windows only (BackTap path) */
  evloop_deferred_t *wake_ev; /* edge_wake_soon(); made on first use */
  hmap_t *by_id;              /* uint16 id (big-endian) -> edge_stream_t */
  dlist_t streams;            /* in creation order */
  edge_half_set_t half;
  uint16_t next_id;
  int busy;
  int dead;
  const char *why;            /* the last violation */
  uint64_t n_freed;           /* streams freed so far (see edge_wake) */
  uint64_t n_cells_half_closed;
  uint64_t n_cells_invalid;
  uint64_t n_data_sent, n_data_received;
  uint64_t n_circ_sendmes_sent, n_circ_sendmes_received;
};

/* Streams ended because their owner held more than EDGE_STREAM_MAX_PENDING
 * bytes of the peer's data (process-wide counter). */
static uint64_t n_streams_over_pending;

uint64_t
edge_streams_ended_over_pending(void)
{
  return n_streams_over_pending;
}

static uint64_t
now_of(const edge_t *e)
{
  return evloop_now_us(e->loop);
}

/* ---- window arithmetic ---------------------------------------------- */

int
edge_window_delivered(int *deliver, int inc)
{
  if (--*deliver < 0)
    return -1;
  if (*deliver <= CIRCWINDOW_START - inc) {
    *deliver += inc;
    return 1;
  }
  return 0;
}

void
edge_circ_window_init(edge_circ_window_t *w)
{
  memset(w, 0, sizeof(*w));
  w->package = CIRCWINDOW_START;
  w->deliver = CIRCWINDOW_START;
}

void
edge_circ_window_packaged(edge_circ_window_t *w, const uint8_t *digest)
{
  if (--w->package % CIRCWINDOW_INCREMENT == 0)
    sendme_digests_record(&w->digests, digest);
}

int
edge_circ_window_sendme(edge_circ_window_t *w, const uint8_t *body,
                        size_t len, const char **why)
{
  if (w->package + CIRCWINDOW_INCREMENT > CIRCWINDOW_START) {
    *why = "unexpected circuit SENDME (window would exceed 1000)";
    return -1;
  }
  const uint8_t *digest;
  if (sendme_parse(body, len, &digest, why) < 0)
    return -1;
  if (sendme_digests_check(&w->digests, digest) < 0) {
    *why = "authenticated SENDME with a wrong digest";
    return -1;
  }
  w->package += CIRCWINDOW_INCREMENT;
  return 0;
}

/* ---- half-closed stream records ------------------------------------ */

static edge_half_t *
half_find(const edge_half_set_t *hs, uint16_t id, uint64_t now_us)
{
  for (unsigned i = 0; i < hs->n; i++)
    if (hs->v[i].id == id)
      return hs->v[i].expires_us > now_us ? &hs->v[i] : NULL;
  return NULL;
}

static void
half_remove_at(edge_half_set_t *hs, unsigned i)
{
  hs->v[i] = hs->v[--hs->n];
}

static void
half_prune(edge_half_set_t *hs, uint64_t now_us)
{
  for (unsigned i = 0; i < hs->n;) {
    if (hs->v[i].expires_us <= now_us)
      half_remove_at(hs, i);
    else
      i++;
  }
}

void
edge_half_remove(edge_half_set_t *hs, uint16_t id)
{
  for (unsigned i = 0; i < hs->n; i++) {
    if (hs->v[i].id == id) {
      half_remove_at(hs, i);
      return;
    }
  }
}

static int
clamp(int v, int lo, int hi)
{
  return v < lo ? lo : v > hi ? hi : v;
}

void
edge_half_add(edge_half_set_t *hs, uint16_t id, int data_left,
              int sendmes_left, int connected_pending, int cc,
              uint64_t now_us)
{
  if (!hs->v) {
    hs->v = pc_calloc(EDGE_HALF_MAX, sizeof(edge_half_t));
    memacct_add(MEMACCT_STREAMS, EDGE_HALF_MAX * sizeof(edge_half_t));
  }
  edge_half_remove(hs, id);
  half_prune(hs, now_us);
  if (hs->n == EDGE_HALF_MAX) {
    /* Full: forget the record that would expire first. */
    unsigned oldest = 0;
    for (unsigned i = 1; i < hs->n; i++)
      if (hs->v[i].expires_us < hs->v[oldest].expires_us)
        oldest = i;
    half_remove_at(hs, oldest);
  }
  edge_half_t *h = &hs->v[hs->n++];
  h->id = id;
  h->expires_us = now_us + EDGE_HALF_TTL_USEC;
  h->data_left = (uint16_t)clamp(data_left, 0, UINT16_MAX);
  h->sendmes_left = (uint8_t)clamp(sendmes_left, 0, UINT8_MAX);
  h->connected_pending = connected_pending ? 1 : 0;
  h->cc = cc ? 1 : 0;
}

int
edge_half_contains(const edge_half_set_t *hs, uint16_t id, uint64_t now_us)
{
  return half_find(hs, id, now_us) != NULL;
}

unsigned
edge_half_count(const edge_half_set_t *hs, uint64_t now_us)
{
  unsigned n = 0;
  for (unsigned i = 0; i < hs->n; i++)
    if (hs->v[i].expires_us > now_us)
      n++;
  return n;
}

int
edge_half_accept(edge_half_set_t *hs, uint8_t cmd, uint16_t id,
                 uint64_t now_us)
{
  edge_half_t *h = half_find(hs, id, now_us);
  if (!h)
    return 0;
  switch (cmd) {
  case RELAY_COMMAND_DATA:
    if (h->cc)
      return 1;
    if (!h->data_left)
      return 0;
    h->data_left--;
    return 1;
  case RELAY_COMMAND_SENDME:
    if (h->cc || !h->sendmes_left)
      return 0;
    h->sendmes_left--;
    return 1;
  case RELAY_COMMAND_XON:
  case RELAY_COMMAND_XOFF:
    return h->cc;
  case RELAY_COMMAND_CONNECTED:
    if (!h->connected_pending)
      return 0;
    h->connected_pending = 0;
    return 1;
  case RELAY_COMMAND_END:
  case RELAY_COMMAND_RESOLVED:
    /* The other edge closed its side too: nothing more will come. */
    edge_half_remove(hs, id);
    return 1;
  default:
    return 0;
  }
}

void
edge_half_clear(edge_half_set_t *hs)
{
  if (hs->v)
    memacct_sub(MEMACCT_STREAMS, EDGE_HALF_MAX * sizeof(edge_half_t));
  free(hs->v);
  hs->v = NULL;
  hs->n = 0;
}

/* ---- the end -------------------------------------------------------- */

edge_t *
edge_new(const edge_end_ops_t *ops, void *end, evloop_t *loop)
{
  edge_t *e = pc_zalloc(sizeof(*e));
  e->ops = ops;
  e->end = end;
  e->loop = loop;
  edge_circ_window_init(&e->win);
  e->by_id = hmap_new(2);
  dlist_init(&e->streams);
  /* Our stream IDs start at a random point, as tor's do. */
  crypt_rand((uint8_t *)&e->next_id, sizeof(e->next_id));
  return e;
}

static void
id_key(uint16_t id, uint8_t key[2])
{
  set_u16(key, id);
}

/* Unlink and free s. */
static void
stream_free(edge_stream_t *s)
{
  uint8_t key[2];
  id_key(s->id, key);
  hmap_remove(s->edge->by_id, key);
  dlist_remove(&s->node);
  s->edge->n_freed++;
  memacct_sub(MEMACCT_STREAMS, sizeof(*s));
  free(s);
}

static void
edge_release(edge_t *e)
{
  if (e->wake_ev)
    evloop_deferred_free(e->wake_ev);
  hmap_free(e->by_id, NULL);
  edge_half_clear(&e->half);
  free(e);
}

void
edge_free_(edge_t *e)
{
  if (!e || e->dead)
    return;
  e->dead = 1;
  e->busy++;
  dlist_node_t *n;
  while ((n = dlist_first(&e->streams))) {
    edge_stream_t *s = DLIST_ENTRY(n, edge_stream_t, node);
    if (s->ops && s->ops->on_end)
      s->ops->on_end(s, END_STREAM_REASON_DESTROY, s->arg);
    /* on_end may have let the stream go already (edge_stream_forget). */
    if (dlist_first(&e->streams) == n)
      stream_free(s);
  }
  if (e->own_cc) {
    cc_free(e->own_cc);
    e->own_cc = NULL;
  }
  if (--e->busy == 0)
    edge_release(e);
}

/* Around loops that call owners: the edge survives an edge_free_(). */
static void
edge_hold(edge_t *e)
{
  e->busy++;
}

/* Returns 1 if the edge is gone (freed now or dead). */
static int
edge_unhold(edge_t *e)
{
  if (--e->busy == 0 && e->dead) {
    edge_release(e);
    return 1;
  }
  return e->dead;
}

void *
edge_end(const edge_t *e)
{
  return e->end;
}

void
edge_set_cc(edge_t *e, struct cc_t *cc)
{
  if (e->own_cc)
    cc_free(e->own_cc);
  e->own_cc = cc;
}

const struct cc_t *
edge_cc(const edge_t *e)
{
  if (e->ops->cc)
    return e->ops->cc(e->end);
  return e->own_cc;
}

static int
is_mux(const edge_t *e)
{
  return e->ops->multiplexed && e->ops->multiplexed(e->end);
}

void
edge_set_no_circ_windows(edge_t *e, int on)
{
  if (e->no_circ_windows && !on) {
    edge_circ_window_t fresh;
    edge_circ_window_init(&fresh);
    e->win.package = fresh.package;
    e->win.deliver = fresh.deliver;
  }
  e->no_circ_windows = !!on;
}

int
edge_has_no_circ_windows(const edge_t *e)
{
  return e->no_circ_windows && !edge_is_windowless(e);
}

int
edge_is_windowless(const edge_t *e)
{
  return edge_cc(e) != NULL || is_mux(e);
}

unsigned
edge_n_streams(const edge_t *e)
{
  return (unsigned)hmap_size(e->by_id);
}

void
edge_get_stats(const edge_t *e, edge_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  out->n_streams = (unsigned)hmap_size(e->by_id);
  out->n_half_closed = edge_half_count(&e->half, now_of(e));
  out->package_window = e->win.package;
  out->deliver_window = e->win.deliver;
  out->n_cells_half_closed = e->n_cells_half_closed;
  out->no_circ_windows = edge_has_no_circ_windows(e);
  out->n_data_sent = e->n_data_sent;
  out->n_data_received = e->n_data_received;
  out->n_circ_sendmes_sent = e->n_circ_sendmes_sent;
  out->n_circ_sendmes_received = e->n_circ_sendmes_received;
  out->n_cells_invalid = e->n_cells_invalid;
}

char *
edge_describe_windows(const edge_stats_t *st, char *buf, size_t len)
{
  snprintf(buf, len,
           "%s at close: DATA cells sent %llu, received %llu; circuit "
           "SENDMEs sent %llu, received %llu",
           st->no_circ_windows ? "no end-to-end windows"
                               : "fixed end-to-end windows",
           (unsigned long long)st->n_data_sent,
           (unsigned long long)st->n_data_received,
           (unsigned long long)st->n_circ_sendmes_sent,
           (unsigned long long)st->n_circ_sendmes_received);
  return buf;
}

static int
violation(edge_t *e, const char *why)
{
  log_info("Protocol violation at a circuit end: %s", why);
  e->why = why;
  return -1;
}

void
edge_stream_get_info(const edge_stream_t *s, edge_stream_info_t *out)
{
  memset(out, 0, sizeof(*out));
  out->id = s->id;
  out->package_window = s->package_window;
  out->deliver_window = s->deliver_window;
  out->blocked = s->blocked;
  out->xoff_received = s->flow.xoff_received;
  out->xoff_sent = s->flow.xoff_sent;
  out->bytes_delivered = s->delivered;
}

void
edge_foreach_stream(const edge_t *e,
                    void (*fn)(const edge_stream_t *s, void *arg), void *arg)
{
  for (dlist_node_t *n = dlist_first(&e->streams); n;
       n = dlist_next(&e->streams, n))
    fn(DLIST_ENTRY(n, edge_stream_t, node), arg);
}

const char *
edge_last_violation(const edge_t *e)
{
  return e->why ? e->why : "no violation";
}

/* ---- streams -------------------------------------------------------- */

edge_stream_t *
edge_stream_find(const edge_t *e, uint16_t id)
{
  uint8_t key[2];
  id_key(id, key);
  return hmap_get(e->by_id, key);
}

int
edge_is_half_closed(const edge_t *e, uint16_t id)
{
  return edge_half_contains(&e->half, id, now_of(e));
}

edge_stream_t *
edge_stream_new(edge_t *e, uint16_t id, const edge_stream_ops_t *ops,
                void *arg)
{
  if (id == 0 || e->dead || edge_stream_find(e, id))
    return NULL;
  /* The peer reuses an ID after it saw our END. */
  edge_half_remove(&e->half, id);
  edge_stream_t *s = pc_zalloc(sizeof(*s));
  memacct_add(MEMACCT_STREAMS, sizeof(*s));
  s->edge = e;
  s->id = id;
  s->package_window = STREAMWINDOW_START;
  s->deliver_window = STREAMWINDOW_START;
  s->ops = ops;
  s->arg = arg;
  uint8_t key[2];
  id_key(id, key);
  hmap_set(e->by_id, key, s);
  dlist_insert_tail(&e->streams, &s->node);
  return s;
}

edge_stream_t *
edge_stream_new_next(edge_t *e, const edge_stream_ops_t *ops, void *arg)
{
  uint64_t now = now_of(e);
  for (unsigned tries = 0; tries < UINT16_MAX; tries++) {
    uint16_t id = e->next_id++;
    if (id == 0 || edge_stream_find(e, id) ||
        edge_half_contains(&e->half, id, now))
      continue;
    return edge_stream_new(e, id, ops, arg);
  }
  return NULL;
}

uint16_t
edge_stream_id(const edge_stream_t *s)
{
  return s->id;
}

edge_t *
edge_stream_edge(const edge_stream_t *s)
{
  return s->edge;
}

int
edge_stream_send_msg(edge_stream_t *s, uint8_t command, const uint8_t *body,
                     uint16_t len)
{
  edge_t *e = s->edge;
  if (command == RELAY_COMMAND_CONNECTED)
    s->connected = 1;
  return e->ops->send(e->end, command, s->id, body, len);
}

size_t
edge_nowin_queue_limit(unsigned window)
{
  if (window == 0 || window >= EDGE_NOWIN_QUEUE_MAX)
    return EDGE_NOWIN_QUEUE_MAX;
  return window < EDGE_NOWIN_QUEUE_MIN ? EDGE_NOWIN_QUEUE_MIN : window;
}

int
edge_stream_can_send(const edge_stream_t *s)
{
  const edge_t *e = s->edge;
  if (e->dead)
    return 0;
  if (is_mux(e))
    return !s->flow.xoff_received && e->ops->mux_can_send(e->end);
  const struct cc_t *cc = edge_cc(e);
  if (cc)
    return !s->flow.xoff_received && cc_sendable(cc) > 0;
  if (e->no_circ_windows)
    return s->package_window > 0 &&
           (!e->ops->queued ||
            e->ops->queued(e->end) <
                (e->ops->queue_limit ? e->ops->queue_limit(e->end)
                                     : EDGE_NOWIN_QUEUE_MAX));
  return e->win.package > 0 && s->package_window > 0;
}

size_t
edge_stream_send(edge_stream_t *s, const uint8_t *data, size_t len)
{
  edge_t *e = s->edge;
  uint16_t id = s->id;
  size_t sent = 0;
  edge_hold(e);
  while (sent < len) {
    if (!edge_stream_can_send(s)) {
      s->blocked = 1;
      break;
    }
    size_t chunk = len - sent;
    if (chunk > RELAY_BODY_MAX)
      chunk = RELAY_BODY_MAX;
    /* With a controller, the circuit the cell leaves on counts it. A send
     * that fails may have closed the circuit and this stream with it. */
    if (e->ops->send(e->end, RELAY_COMMAND_DATA, id, data + sent,
                     (uint16_t)chunk) < 0) {
      if (!e->dead && edge_stream_find(e, id) == s)
        s->blocked = 1;
      break;
    }
    sent += chunk;
    e->n_data_sent++;
    if (edge_is_windowless(e)) {
      cc_flow_note_sent(&s->flow, chunk);
      continue;
    }
    s->package_window--;
    if (!e->no_circ_windows)
      edge_circ_window_packaged(&e->win, e->ops->last_digest(e->end, 1));
  }
  edge_unhold(e);
  return sent;
}

/* Record s as half-closed (we sent END, or a reply that ends it). */
static void
note_half_closed(edge_stream_t *s)
{
  edge_t *e = s->edge;
  int cc = edge_is_windowless(e);
  /* The peer may still fill the rest of our deliver window, and send one
   * SENDME per increment of DATA we sent that it has not acknowledged. */
  int sendmes = (STREAMWINDOW_START - s->package_window) /
                STREAMWINDOW_INCREMENT;
  /* A client that ends a stream before CONNECTED may still get it. */
  int connected_pending = e->ops->is_client && !s->connected;
  edge_half_add(&e->half, s->id, cc ? 0 : s->deliver_window,
                cc ? 0 : sendmes, connected_pending, cc, now_of(e));
}

void
edge_stream_detach(edge_stream_t *s)
{
  note_half_closed(s);
  stream_free(s);
}

void
edge_stream_end(edge_stream_t *s, uint8_t reason)
{
  edge_stream_send_msg(s, RELAY_COMMAND_END, &reason, 1);
  note_half_closed(s);
  stream_free(s);
}

void
edge_stream_forget(edge_stream_t *s)
{
  if (s)
    stream_free(s);
}

/* edge_sum_streams() through edge_foreach_stream(). */
typedef struct sum_ctx_t {
  const edge_stream_ops_t *ops;
  size_t (*fn)(void *arg);
  size_t sum;
} sum_ctx_t;

static void
sum_one(const edge_stream_t *s, void *arg)
{
  sum_ctx_t *c = arg;
  if (s->ops == c->ops)
    c->sum += c->fn(s->arg);
}

size_t
edge_sum_streams(const edge_t *e, const edge_stream_ops_t *ops,
                 size_t (*fn)(void *arg))
{
  sum_ctx_t c = {ops, fn, 0};
  edge_foreach_stream(e, sum_one, &c);
  return c.sum;
}

void
edge_move_streams(edge_t *from, edge_t *to)
{
  if (from == to)
    return;
  dlist_node_t *n;
  while ((n = dlist_first(&from->streams))) {
    edge_stream_t *s = DLIST_ENTRY(n, edge_stream_t, node);
    uint8_t key[2];
    id_key(s->id, key);
    hmap_remove(from->by_id, key);
    dlist_remove(n);
    s->edge = to;
    hmap_set(to->by_id, key, s);
    dlist_insert_tail(&to->streams, &s->node);
  }
  /* Half-closed records follow the streams. */
  edge_half_set_t *src = &from->half;
  uint64_t now = now_of(from);
  for (unsigned i = 0; i < src->n; i++) {
    const edge_half_t *h = &src->v[i];
    if (h->expires_us <= now)
      continue;
    edge_half_add(&to->half, h->id, h->data_left, h->sendmes_left,
                  h->connected_pending, h->cc, now);
    to->half.v[to->half.n - 1].expires_us = h->expires_us;
  }
  edge_half_clear(src);
}

void
edge_wake(edge_t *e)
{
  if (e->dead)
    return;
  edge_hold(e);
  dlist_node_t *n, *next;
  for (n = dlist_first(&e->streams); n && !e->dead; n = next) {
    next = dlist_next(&e->streams, n);
    edge_stream_t *s = DLIST_ENTRY(n, edge_stream_t, node);
    if (!s->blocked || !edge_stream_can_send(s))
      continue;
    s->blocked = 0;
    uint64_t freed = e->n_freed;
    if (s->ops && s->ops->on_writable)
      s->ops->on_writable(s, s->arg);
    /* The owner may have ended streams, `next` among them: start over
     * (the streams already woken are no longer marked blocked). */
    if (e->n_freed != freed)
      next = dlist_first(&e->streams);
  }
  edge_unhold(e);
}

static void
wake_cb(void *arg)
{
  edge_wake(arg);
}

void
edge_wake_soon(edge_t *e)
{
  if (e->dead)
    return;
  if (!e->wake_ev)
    e->wake_ev = evloop_deferred_new(e->loop, wake_cb, e);
  evloop_deferred_schedule(e->wake_ev);
}

/* ---- XON / XOFF ------------------------------------------------------ */

static void
flow_send(edge_stream_t *s, cc_flow_action_t act)
{
  if (act == CC_FLOW_SEND_XOFF) {
    uint8_t b[CC_XOFF_LEN];
    cc_flow_encode_xoff(b);
    log_debug("Sending XOFF on stream %u", s->id);
    edge_stream_send_msg(s, RELAY_COMMAND_XOFF, b, sizeof(b));
  } else if (act == CC_FLOW_SEND_XON) {
    uint8_t b[CC_XON_LEN];
    cc_flow_encode_xon(b, s->flow.ewma_drain_rate);
    log_debug("Sending XON (%u kB/s) on stream %u",
              (unsigned)s->flow.ewma_drain_rate, s->id);
    edge_stream_send_msg(s, RELAY_COMMAND_XON, b, sizeof(b));
  }
}

static size_t
pending_of(edge_stream_t *s)
{
  return s->ops && s->ops->pending_bytes ? s->ops->pending_bytes(s, s->arg)
                                         : 0;
}

void
edge_stream_flushed(edge_stream_t *s)
{
  edge_t *e = s->edge;
  size_t pending = pending_of(s);
  const struct cc_t *cc = edge_cc(e);
  if (cc) {
    uint64_t written = s->delivered > pending ? s->delivered - pending : 0;
    size_t n = written > s->written ? (size_t)(written - s->written) : 0;
    if (written > s->written)
      s->written = written;
    flow_send(s, cc_flow_on_drained(&s->flow, &cc->p, pending, n,
                                    now_of(e), !cc->clock_broken));
    return;
  }
  if (is_mux(e))
    return;
  while (s->deliver_window <= STREAMWINDOW_START - STREAMWINDOW_INCREMENT &&
         pending < 10 * RELAY_BODY_MAX) {
    s->deliver_window += STREAMWINDOW_INCREMENT;
    edge_stream_send_msg(s, RELAY_COMMAND_SENDME, NULL, 0);
  }
}

static void
xon_xoff(edge_t *e, edge_stream_t *s, uint8_t cmd, const uint8_t *body,
         uint16_t len)
{
  const struct cc_t *cc = edge_cc(e);
  if (!cc) {
    log_info("%s on stream %u of a circuit without congestion control; "
             "ignored",
             relay_command_name(cmd), s->id);
    return;
  }
  int client = e->ops->is_client;
  int r = cmd == RELAY_COMMAND_XOFF
              ? cc_flow_on_xoff(&s->flow, &cc->p, client, body, len)
              : cc_flow_on_xon(&s->flow, &cc->p, client, body, len);
  if (r < 0) {
    log_info("Malformed %s on stream %u; ignored", relay_command_name(cmd),
             s->id);
    return;
  }
  log_debug("Received %s on stream %u", relay_command_name(cmd), s->id);
  if (r == 0)
    log_info("Unexpected %s on stream %u (repeated, or more than the data "
             "we sent warrants)",
             relay_command_name(cmd), s->id);
  /* The rate an XON advises is advisory: we do not pace to it. */
  if (cmd == RELAY_COMMAND_XON)
    edge_wake(e);
}

/* ---- cells from the peer ---------------------------------------------- */

int
edge_data_arrived(edge_t *e)
{
  const struct cc_t *cc = edge_cc(e);
  e->n_data_received++;
  if (!cc && e->no_circ_windows)
    return 0; /* nothing to count, no SENDME to send */
  int inc = cc ? (int)cc->sendme_inc : CIRCWINDOW_INCREMENT;
  int r = edge_window_delivered(&e->win.deliver, inc);
  if (r < 0)
    return violation(e, "the peer exceeded the circuit deliver window");
  if (r > 0) {
    /* Authenticated SENDME: the digest of the cell that triggered it. */
    uint8_t sendme[SENDME_V1_LEN];
    sendme_encode_v1(sendme, e->ops->last_digest(e->end, 0));
    if (e->own_cc)
      e->own_cc->n_sendmes_sent++;
    e->n_circ_sendmes_sent++;
    e->ops->send(e->end, RELAY_COMMAND_SENDME, 0, sendme, sizeof(sendme));
  }
  return 0;
}

int
edge_circ_sendme(edge_t *e, const uint8_t *body, uint16_t len,
                 uint64_t queue_len)
{
  const char *why = NULL;
  e->n_circ_sendmes_received++;
  if (e->own_cc) {
    const uint8_t *digest;
    if (sendme_parse(body, len, &digest, &why) < 0)
      return violation(e, why);
    int r = cc_on_sendme(e->own_cc, now_of(e), digest, queue_len);
    if (r == CC_SENDME_UNEXPECTED)
      return violation(e, "circuit SENDME while no data awaited one");
    if (r == CC_SENDME_BAD_DIGEST)
      return violation(e, "authenticated SENDME with a wrong digest");
    return 0;
  }
  if (edge_is_windowless(e))
    return 0; /* core checked and counted it */
  if (e->no_circ_windows)
    return violation(e, "circuit SENDME on a circuit without end-to-end "
                     "windows");
  if (edge_circ_window_sendme(&e->win, body, len, &why) < 0)
    return violation(e, why);
  return 0;
}

void
edge_note_data_sent(edge_t *e, const uint8_t *digest)
{
  if (!e->own_cc)
    return;
  uint8_t *slot = cc_note_data_sent(e->own_cc, now_of(e));
  if (slot)
    memcpy(slot, digest, SENDME_DIGEST_LEN);
}

/* A cell for stream id, which is not open: drop it, quietly if it is one
 * the peer may still send after our END. */
static void
not_open(edge_t *e, uint8_t cmd, uint16_t id)
{
  if (edge_half_accept(&e->half, cmd, id, now_of(e))) {
    e->n_cells_half_closed++;
    log_debug("%s for half-closed stream %u; dropped",
              relay_command_name(cmd), id);
    return;
  }
  /* One log line per end is enough to see it happen. */
  if (e->n_cells_invalid++ == 0)
    log_info("%s for unknown stream %u (not open, or more than it may "
             "still send after our END); dropped",
             relay_command_name(cmd), id);
}

static int
stream_data(edge_t *e, edge_stream_t *s, const uint8_t *body, uint16_t len)
{
  const struct cc_t *cc = edge_cc(e);
  int windowless = cc != NULL || is_mux(e);
  if (!windowless && --s->deliver_window < 0)
    return violation(e, "the peer exceeded a stream deliver window");
  uint16_t id = s->id;
  size_t limit = EDGE_STREAM_MAX_PENDING;
  if (is_mux(e) && e->ops->mux_burst_bytes)
    limit += e->ops->mux_burst_bytes(e->end);
  if (pending_of(s) + len > limit) {
    /* The peer goes on sending to an owner that cannot pass the bytes on
     * (a destination that does not read, a client ignoring our XOFF):
     * end the stream rather than buffer without bound. The owner hears
     * RESOURCELIMIT and drops what it holds. */
    n_streams_over_pending++;
    /* A relay hears this from any client, so info; a client's user
     * should learn why a download stopped. */
    log_msg_at(e->ops->is_client ? LOG_SEV_NOTICE : LOG_SEV_INFO, __FILE__,
               __func__,
               "Stream %u holds %zu bytes the peer sent and cannot pass "
               "them on (limit %zu); ending it",
               id, pending_of(s), limit);
    edge_hold(e);
    if (s->ops && s->ops->on_end)
      s->ops->on_end(s, END_STREAM_REASON_RESOURCELIMIT, s->arg);
    if (!edge_unhold(e) && (s = edge_stream_find(e, id)))
      edge_stream_end(s, END_STREAM_REASON_RESOURCELIMIT);
    return 0;
  }
  if (cc)
    s->delivered += len;
  edge_hold(e);
  if (s->ops && s->ops->on_data)
    s->ops->on_data(s, body, len, s->arg);
  /* on_data may have ended the stream, or the whole end. */
  if (edge_unhold(e) || !(s = edge_stream_find(e, id)))
    return 0;
  if (cc) {
    flow_send(s, cc_flow_on_data(&s->flow, &cc->p, e->ops->is_client,
                                 pending_of(s), now_of(e),
                                 !cc->clock_broken));
    return 0;
  }
  edge_stream_flushed(s);
  return 0;
}

int
edge_handle_stream_msg(edge_t *e, uint8_t cmd, uint16_t id,
                       const uint8_t *body, uint16_t len)
{
  edge_stream_t *s = edge_stream_find(e, id);
  if (!s) {
    not_open(e, cmd, id);
    return 0;
  }
  switch (cmd) {
  case RELAY_COMMAND_DATA:
    return stream_data(e, s, body, len);
  case RELAY_COMMAND_END: {
    uint8_t reason = len ? body[0] : END_STREAM_REASON_MISC;
    edge_hold(e);
    if (s->ops && s->ops->on_end)
      s->ops->on_end(s, reason, s->arg);
    /* on_end may have let the stream go itself. */
    if (!e->dead && edge_stream_find(e, id) == s)
      stream_free(s);
    edge_unhold(e);
    return 0;
  }
  case RELAY_COMMAND_SENDME:
    if (edge_is_windowless(e))
      return violation(e, "stream SENDME on a circuit with congestion "
                       "control");
    if (s->package_window + STREAMWINDOW_INCREMENT > STREAMWINDOW_START)
      return violation(e, "unexpected stream SENDME");
    s->package_window += STREAMWINDOW_INCREMENT;
    edge_wake(e);
    return 0;
  case RELAY_COMMAND_XON:
  case RELAY_COMMAND_XOFF:
    xon_xoff(e, s, cmd, body, len);
    return 0;
  case RELAY_COMMAND_CONNECTED:
    s->connected = 1;
    if (s->ops && s->ops->on_connected)
      s->ops->on_connected(s, body, len, s->arg);
    return 0;
  case RELAY_COMMAND_RESOLVED:
    if (!s->ops || !s->ops->on_resolved)
      return 0;
    edge_hold(e);
    s->ops->on_resolved(s, body, len, s->arg);
    /* The answer ends the stream, unless on_resolved let it go itself. */
    if (!e->dead && edge_stream_find(e, id) == s)
      edge_stream_detach(s);
    edge_unhold(e);
    return 0;
  default:
    return 0;
  }
}
