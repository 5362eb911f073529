/* SPDX-License-Identifier: BSD-3-Clause */
/* stream.c -- relay-side streams and edge flow control (see stream.h).
 *
 * The edge state is allocated on a circuit's first stream, so middle
 * relays, which never package or deliver data, pay nothing for it.
 * Sending is limited by the smaller of the circuit and stream package
 * windows; when a SENDME reopens a window every stream that was held back
 * gets on_writable(). Digests for authenticated SENDMEs are recorded after
 * every CIRCWINDOW_INCREMENT-th DATA cell we originate.
 *
 * With congestion control the edge holds a controller (made with the edge,
 * from the circuit's negotiated increment) that replaces the circuit
 * package window and the digest list; streams keep XON/XOFF state instead
 * of windows. The drain rate an XON reports is measured from the bytes
 * the owner took (on_data) minus what it still holds (pending_bytes), at
 * the moments it reports progress (relay_stream_flushed).
 *
 * The controller counts each DATA cell when circuit.c sends it
 * (circ_edge_note_data_sent), on whichever circuit it leaves: for the legs
 * of a multiplexed set (or_circuit_t.mux) that is the leg the multiplexer
 * picked, not the circuit the streams live on. Arriving DATA is counted
 * on the circuit it arrived on (stream_data_arrived) and delivered to the
 * stream separately (stream_deliver_data), possibly later and on the
 * set's home circuit.
 *
 * Half-closed streams: relay_stream_end() and relay_stream_detach() leave
 * a stream_half_t record behind with the allowance stream.h describes.
 * The record table is a fixed array of STREAM_HALF_MAX slots made on the
 * first END, searched linearly and pruned of expired records lazily, so
 * nothing on the path of a cell for an open stream changes. A BEGIN that
 * reuses a half-closed ID (the client saw our END) drops the record.
 */
#include "core/or/stream.h"
#include "core/or/congestion_control.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

struct relay_stream_t {
  dlist_node_t node;
  or_circuit_t *circ;
  uint16_t id;
  int package_window;
  int deliver_window;
  unsigned blocked : 1;       /* a send was limited by a window */
  const relay_stream_ops_t *ops;
  void *arg;
  /* congestion control: XON/XOFF, and bytes delivered to / written by the
   * owner (for the drain rate) */
  cc_flow_t flow;
  uint64_t delivered, written;
};

static uint64_t
now_us(void)
{
  return evloop_now_us(channels_loop());
}

void
circ_edge_init(circ_edge_t *e)
{
  memset(e, 0, sizeof(*e));
  e->package_window = CIRCWINDOW_START;
  e->deliver_window = CIRCWINDOW_START;
  dlist_init(&e->streams);
}

static circ_edge_t *
edge_of(or_circuit_t *circ)
{
  if (!circ->edge) {
    circ->edge = pc_zalloc(sizeof(circ_edge_t));
    circ_edge_init(circ->edge);
    if (circ->cc_sendme_inc)
      circ->edge->cc = cc_new(NULL, circ->cc_sendme_inc);
  }
  return circ->edge;
}

const struct cc_t *
circ_edge_cc(const or_circuit_t *circ)
{
  return circ->edge ? circ->edge->cc : NULL;
}

/* May s package a DATA cell now? */
static int
can_send(const circ_edge_t *e, const relay_stream_t *s)
{
  if (s->circ->mux && circuits_mux_ops())
    return !s->flow.xoff_received && circuits_mux_ops()->can_send(s->circ);
  if (e->cc)
    return !s->flow.xoff_received && cc_sendable(e->cc) > 0;
  return e->package_window > 0 && s->package_window > 0;
}

static void
stream_free(relay_stream_t *s)
{
  dlist_remove(&s->node);
  free(s);
}

/* ---- half-closed stream records ------------------------------------ */

static stream_half_t *
half_find(const stream_half_set_t *hs, uint16_t id, uint64_t now_us)
{
  for (unsigned i = 0; i < hs->n; i++)
    if (hs->v[i].id == id)
      return hs->v[i].expires_us > now_us ? &hs->v[i] : NULL;
  return NULL;
}

static void
half_remove_at(stream_half_set_t *hs, unsigned i)
{
  hs->v[i] = hs->v[--hs->n];
}

static void
half_prune(stream_half_set_t *hs, uint64_t now_us)
{
  for (unsigned i = 0; i < hs->n;) {
    if (hs->v[i].expires_us <= now_us)
      half_remove_at(hs, i);
    else
      i++;
  }
}

void
stream_half_remove(stream_half_set_t *hs, uint16_t id)
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
stream_half_add(stream_half_set_t *hs, uint16_t id, int data_left,
                int sendmes_left, int connected_pending, int cc,
                uint64_t now_us)
{
  if (!hs->v)
    hs->v = pc_calloc(STREAM_HALF_MAX, sizeof(stream_half_t));
  stream_half_remove(hs, id);
  half_prune(hs, now_us);
  if (hs->n == STREAM_HALF_MAX) {
    /* Full: forget the record that would expire first. */
    unsigned oldest = 0;
    for (unsigned i = 1; i < hs->n; i++)
      if (hs->v[i].expires_us < hs->v[oldest].expires_us)
        oldest = i;
    half_remove_at(hs, oldest);
  }
  stream_half_t *h = &hs->v[hs->n++];
  h->id = id;
  h->expires_us = now_us + STREAM_HALF_TTL_USEC;
  h->data_left = (uint16_t)clamp(data_left, 0, UINT16_MAX);
  h->sendmes_left = (uint8_t)clamp(sendmes_left, 0, UINT8_MAX);
  h->connected_pending = connected_pending ? 1 : 0;
  h->cc = cc ? 1 : 0;
}

int
stream_half_contains(const stream_half_set_t *hs, uint16_t id,
                     uint64_t now_us)
{
  return half_find(hs, id, now_us) != NULL;
}

unsigned
stream_half_count(const stream_half_set_t *hs, uint64_t now_us)
{
  unsigned n = 0;
  for (unsigned i = 0; i < hs->n; i++)
    if (hs->v[i].expires_us > now_us)
      n++;
  return n;
}

int
stream_half_accept(stream_half_set_t *hs, uint8_t cmd, uint16_t id,
                   uint64_t now_us)
{
  stream_half_t *h = half_find(hs, id, now_us);
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
    stream_half_remove(hs, id);
    return 1;
  default:
    return 0;
  }
}

void
stream_half_clear(stream_half_set_t *hs)
{
  free(hs->v);
  hs->v = NULL;
  hs->n = 0;
}

/* Record s as half-closed on its circuit (we sent END, or a reply that
 * ends it). */
static void
stream_note_half_closed(relay_stream_t *s)
{
  circ_edge_t *e = s->circ->edge;
  if (!e)
    return;
  int cc = e->cc != NULL || s->circ->mux != NULL;
  /* The peer may still fill the rest of our deliver window, and send one
   * SENDME per increment of DATA we sent that it has not acknowledged. */
  int sendmes = (STREAMWINDOW_START - s->package_window) /
                STREAMWINDOW_INCREMENT;
  stream_half_add(&e->half, s->id, cc ? 0 : s->deliver_window,
                  cc ? 0 : sendmes, 0, cc, now_us());
}

/* A cell for stream id, which is not open on circ: drop it, quietly if it
 * was in flight when we ended the stream. Never a protocol violation. */
static void
stream_not_open(or_circuit_t *circ, uint8_t cmd, uint16_t id)
{
  circ_edge_t *e = edge_of(circ);
  if (stream_half_accept(&e->half, cmd, id, now_us())) {
    e->n_stream_cells_half_closed++;
    log_debug("%s for half-closed stream %u on circuit %llu; dropped",
              relay_command_name(cmd), id,
              (unsigned long long)circ->base.gid);
    return;
  }
  /* One log line per circuit is enough to see it happen. */
  if (e->n_stream_cells_invalid++ == 0)
    log_info("%s for unknown stream %u on circuit %llu (not open, or more "
             "than it may still send after our END); dropped",
             relay_command_name(cmd), id,
             (unsigned long long)circ->base.gid);
}

void
circ_edge_get_dropped(const or_circuit_t *circ, uint64_t *half_closed,
                      uint64_t *invalid)
{
  *half_closed = circ->edge ? circ->edge->n_stream_cells_half_closed : 0;
  *invalid = circ->edge ? circ->edge->n_stream_cells_invalid : 0;
}

size_t
circ_edge_sum_streams(or_circuit_t *circ, const relay_stream_ops_t *ops,
                      size_t (*fn)(void *arg))
{
  circ_edge_t *e = circ->edge;
  size_t sum = 0;
  if (!e)
    return 0;
  for (dlist_node_t *n = dlist_first(&e->streams); n;
       n = dlist_next(&e->streams, n)) {
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    if (s->ops == ops)
      sum += fn(s->arg);
  }
  return sum;
}

void
circ_edge_clear(or_circuit_t *circ)
{
  circ_edge_t *e = circ->edge;
  if (!e)
    return;
  dlist_node_t *n;
  unsigned n_open = 0;
  while ((n = dlist_first(&e->streams))) {
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    dlist_remove(n);
    n_open++;
    if (s->ops && s->ops->on_end)
      s->ops->on_end(s, END_STREAM_REASON_DESTROY, s->arg);
    free(s);
  }
  log_info("Circuit %llu closed with %u open streams; %llu cells for "
           "half-closed streams and %llu for unknown ones were dropped",
           (unsigned long long)circ->base.gid, n_open,
           (unsigned long long)e->n_stream_cells_half_closed,
           (unsigned long long)e->n_stream_cells_invalid);
  if (e->cc) {
    char d[200];
    cc_describe(e->cc, d, sizeof(d));
    log_info("Circuit %llu: congestion control at close: %s",
             (unsigned long long)circ->base.gid, d);
    cc_free(e->cc);
  }
  stream_half_clear(&e->half);
  free(e);
  circ->edge = NULL;
}

relay_stream_t *
relay_stream_find(or_circuit_t *circ, uint16_t id)
{
  if (!circ->edge)
    return NULL;
  circ_edge_t *e = circ->edge;
  for (dlist_node_t *n = dlist_first(&e->streams); n;
       n = dlist_next(&e->streams, n)) {
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    if (s->id == id)
      return s;
  }
  return NULL;
}

relay_stream_t *
relay_stream_new(or_circuit_t *circ, uint16_t id,
                 const relay_stream_ops_t *ops, void *arg)
{
  if (id == 0 || relay_stream_find(circ, id))
    return NULL;
  /* The client reuses an ID after it saw our END. */
  if (circ->edge)
    stream_half_remove(&circ->edge->half, id);
  relay_stream_t *s = pc_zalloc(sizeof(*s));
  s->circ = circ;
  s->id = id;
  s->package_window = STREAMWINDOW_START;
  s->deliver_window = STREAMWINDOW_START;
  s->ops = ops;
  s->arg = arg;
  dlist_insert_tail(&edge_of(circ)->streams, &s->node);
  return s;
}

uint16_t
relay_stream_id(const relay_stream_t *s)
{
  return s->id;
}

or_circuit_t *
relay_stream_circuit(relay_stream_t *s)
{
  return s->circ;
}

int
relay_stream_send_connected(relay_stream_t *s, const uint8_t *body,
                            uint16_t len)
{
  return or_circuit_send_relay(s->circ, RELAY_COMMAND_CONNECTED, s->id, body,
                               len);
}

size_t
relay_stream_send(relay_stream_t *s, const uint8_t *data, size_t len)
{
  circ_edge_t *e = edge_of(s->circ);
  size_t sent = 0;
  while (sent < len) {
    if (!can_send(e, s)) {
      s->blocked = 1;
      break;
    }
    size_t chunk = len - sent;
    if (chunk > RELAY_BODY_MAX)
      chunk = RELAY_BODY_MAX;
    /* With congestion control the circuit the cell leaves on counts it
     * (circ_edge_note_data_sent). */
    if (or_circuit_send_relay(s->circ, RELAY_COMMAND_DATA, s->id,
                              data + sent, (uint16_t)chunk) < 0)
      break;
    sent += chunk;
    if (e->cc || s->circ->mux)
      continue;
    s->package_window--;
    e->package_window--;
    if (e->package_window % CIRCWINDOW_INCREMENT == 0 &&
        e->n_sendme_digests < SENDME_DIGESTS_MAX) {
      memcpy(e->sendme_digests[e->n_sendme_digests++],
             relay_crypto_last_digest(s->circ->crypto, RELAY_DIR_BACKWARD),
             20);
    }
  }
  return sent;
}

void
relay_stream_detach(relay_stream_t *s)
{
  stream_note_half_closed(s);
  stream_free(s);
}

void
relay_stream_end(relay_stream_t *s, uint8_t reason)
{
  or_circuit_send_relay(s->circ, RELAY_COMMAND_END, s->id, &reason, 1);
  stream_note_half_closed(s);
  stream_free(s);
}

static int
proto_err(or_circuit_t *circ, const char *why)
{
  log_info("Closing circuit %llu: %s", (unsigned long long)circ->base.gid,
           why);
  return -1;
}

/* Send XOFF / XON for s as the flow-control state machine asked. */
static void
flow_send(relay_stream_t *s, cc_flow_action_t act)
{
  if (act == CC_FLOW_SEND_XOFF) {
    uint8_t b[CC_XOFF_LEN];
    cc_flow_encode_xoff(b);
    log_debug("Sending XOFF on stream %u of circuit %llu", s->id,
              (unsigned long long)s->circ->base.gid);
    or_circuit_send_relay(s->circ, RELAY_COMMAND_XOFF, s->id, b, sizeof(b));
  } else if (act == CC_FLOW_SEND_XON) {
    uint8_t b[CC_XON_LEN];
    cc_flow_encode_xon(b, s->flow.ewma_drain_rate);
    log_debug("Sending XON (%u kB/s) on stream %u of circuit %llu",
              (unsigned)s->flow.ewma_drain_rate, s->id,
              (unsigned long long)s->circ->base.gid);
    or_circuit_send_relay(s->circ, RELAY_COMMAND_XON, s->id, b, sizeof(b));
  }
}

static size_t
pending_of(relay_stream_t *s)
{
  return s->ops && s->ops->pending_bytes ? s->ops->pending_bytes(s, s->arg)
                                         : 0;
}

void
circ_edge_note_data_sent(or_circuit_t *circ)
{
  circ_edge_t *e = edge_of(circ);
  if (!e->cc)
    return;
  uint8_t *slot = cc_note_data_sent(e->cc, now_us());
  if (slot)
    memcpy(slot, relay_crypto_last_digest(circ->crypto, RELAY_DIR_BACKWARD),
           20);
}

void
circ_edge_move_streams(or_circuit_t *from, or_circuit_t *to)
{
  if (!from->edge || from == to)
    return;
  circ_edge_t *dst = edge_of(to);
  dlist_node_t *n;
  while ((n = dlist_first(&from->edge->streams))) {
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    dlist_remove(n);
    s->circ = to;
    dlist_insert_tail(&dst->streams, &s->node);
  }
  /* Half-closed records follow the streams. */
  stream_half_set_t *src = &from->edge->half;
  uint64_t now = now_us();
  for (unsigned i = 0; i < src->n; i++) {
    const stream_half_t *h = &src->v[i];
    if (h->expires_us <= now)
      continue;
    stream_half_add(&dst->half, h->id, h->data_left, h->sendmes_left,
                    h->connected_pending, h->cc, now);
    dst->half.v[dst->half.n - 1].expires_us = h->expires_us;
  }
  stream_half_clear(src);
}

int
stream_data_arrived(or_circuit_t *circ)
{
  circ_edge_t *e = edge_of(circ);
  int inc = e->cc ? (int)e->cc->sendme_inc : CIRCWINDOW_INCREMENT;
  if (--e->deliver_window < 0)
    return proto_err(circ, "client exceeded the circuit deliver window");
  if (e->deliver_window <= CIRCWINDOW_START - inc) {
    /* Authenticated SENDME: the digest of the cell that triggered it. */
    uint8_t sendme[3 + 20];
    sendme[0] = 1;
    set_u16(sendme + 1, 20);
    memcpy(sendme + 3,
           relay_crypto_last_digest(circ->crypto, RELAY_DIR_FORWARD), 20);
    e->deliver_window += inc;
    if (e->cc)
      e->cc->n_sendmes_sent++;
    or_circuit_send_relay(circ, RELAY_COMMAND_SENDME, 0, sendme,
                          sizeof(sendme));
  }
  return 0;
}

int
stream_handle_data(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                   uint16_t len)
{
  if (stream_data_arrived(circ) < 0)
    return -1;
  return stream_deliver_data(circ, id, body, len);
}

int
stream_deliver_data(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                    uint16_t len)
{
  circ_edge_t *e = edge_of(circ);
  relay_stream_t *s = relay_stream_find(circ, id);
  if (!s) {
    /* Already counted against the circuit window by the caller. */
    stream_not_open(circ, RELAY_COMMAND_DATA, id);
    return 0;
  }
  if (!e->cc && --s->deliver_window < 0)
    return proto_err(circ, "client exceeded a stream deliver window");
  if (e->cc)
    s->delivered += len;
  if (s->ops && s->ops->on_data)
    s->ops->on_data(s, body, len, s->arg);
  /* on_data may have ended the stream. */
  if (!(s = relay_stream_find(circ, id)))
    return 0;
  if (e->cc) {
    cc_flow_action_t act =
        cc_flow_on_data(&s->flow, &e->cc->p, 0, pending_of(s), now_us(),
                        !e->cc->clock_broken);
    flow_send(s, act);
    return 0;
  }
  relay_stream_flushed(s);
  return 0;
}

void
relay_stream_flushed(relay_stream_t *s)
{
  size_t pending = pending_of(s);
  circ_edge_t *e = s->circ->edge;
  if (e && e->cc) {
    uint64_t written = s->delivered > pending ? s->delivered - pending : 0;
    size_t n = written > s->written ? (size_t)(written - s->written) : 0;
    s->written = written > s->written ? written : s->written;
    flow_send(s, cc_flow_on_drained(&s->flow, &e->cc->p, pending, n,
                                    now_us(), !e->cc->clock_broken));
    return;
  }
  while (s->deliver_window <= STREAMWINDOW_START - STREAMWINDOW_INCREMENT &&
         pending < 10 * RELAY_BODY_MAX) {
    s->deliver_window += STREAMWINDOW_INCREMENT;
    or_circuit_send_relay(s->circ, RELAY_COMMAND_SENDME, s->id, NULL, 0);
  }
}

int
stream_handle_end(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                  uint16_t len)
{
  relay_stream_t *s = relay_stream_find(circ, id);
  if (!s) {
    stream_not_open(circ, RELAY_COMMAND_END, id);
    return 0;
  }
  uint8_t reason = len ? body[0] : END_STREAM_REASON_MISC;
  if (s->ops && s->ops->on_end)
    s->ops->on_end(s, reason, s->arg);
  stream_free(s);
  return 0;
}

static void
wake_blocked(or_circuit_t *circ)
{
  circ_edge_t *e = circ->edge;
  dlist_node_t *n, *next;
  for (n = dlist_first(&e->streams); n; n = next) {
    next = dlist_next(&e->streams, n);
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    if (!s->blocked || !can_send(e, s))
      continue;
    s->blocked = 0;
    if (s->ops && s->ops->on_writable)
      s->ops->on_writable(s, s->arg);
    if (circ->base.marked_for_close || !circ->edge)
      return;
  }
}

/* Check a circuit SENDME's version; *digest is set for v1, NULL for v0.
 * Returns NULL or what is wrong. */
static const char *
sendme_parse(const uint8_t *body, uint16_t len, const uint8_t **digest)
{
  *digest = NULL;
  if (len >= 1 && body[0] == 1) {
    if (len < 3 || get_u16(body + 1) < 20 || len < 23)
      return "malformed v1 SENDME";
    *digest = body + 3;
  } else if (len >= 1 && body[0] > 1) {
    return "SENDME of an unknown version";
  }
  /* Version 0 is still accepted (tor's default sendme_accept_min_version
   * is 0). */
  return NULL;
}

static int
cc_sendme(or_circuit_t *circ, circ_edge_t *e, uint16_t id,
          const uint8_t *body, uint16_t len)
{
  if (id != 0) {
    /* For an unknown (e.g. closed) stream tor drops it quietly. */
    if (!relay_stream_find(circ, id)) {
      stream_not_open(circ, RELAY_COMMAND_SENDME, id);
      return 0;
    }
    return proto_err(circ, "stream SENDME on a circuit with congestion "
                           "control");
  }
  const uint8_t *digest;
  const char *bad = sendme_parse(body, len, &digest);
  if (bad)
    return proto_err(circ, bad);
  int r = cc_on_sendme(e->cc, now_us(), digest, circ->p_queue.cells.n);
  if (r == CC_SENDME_UNEXPECTED)
    return proto_err(circ, "circuit SENDME while no data awaited one");
  if (r == CC_SENDME_BAD_DIGEST)
    return proto_err(circ, "authenticated SENDME with a wrong digest");
  /* A leg of a multiplexed set: its streams live on the set's home. */
  or_circuit_t *home = or_circuit_stream_home(circ);
  if (home->edge)
    wake_blocked(home);
  return 0;
}

int
stream_handle_sendme(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                     uint16_t len)
{
  circ_edge_t *e = edge_of(circ);
  if (e->cc)
    return cc_sendme(circ, e, id, body, len);
  if (id == 0) {
    if (e->package_window + CIRCWINDOW_INCREMENT > CIRCWINDOW_START)
      return proto_err(circ, "unexpected circuit SENDME (window would "
                             "exceed 1000)");
    const uint8_t *digest;
    const char *bad = sendme_parse(body, len, &digest);
    if (bad)
      return proto_err(circ, bad);
    if (digest && (e->n_sendme_digests == 0 ||
                   memcmp(e->sendme_digests[0], digest, 20)))
      return proto_err(circ, "authenticated SENDME with a wrong digest");
    /* Either way the oldest digest is used up. */
    if (e->n_sendme_digests > 0) {
      memmove(e->sendme_digests[0], e->sendme_digests[1],
              (size_t)(e->n_sendme_digests - 1) * 20);
      e->n_sendme_digests--;
    }
    e->package_window += CIRCWINDOW_INCREMENT;
    wake_blocked(circ);
    return 0;
  }
  relay_stream_t *s = relay_stream_find(circ, id);
  if (!s) {
    stream_not_open(circ, RELAY_COMMAND_SENDME, id);
    return 0;
  }
  if (s->package_window + STREAMWINDOW_INCREMENT > STREAMWINDOW_START)
    return proto_err(circ, "unexpected stream SENDME");
  s->package_window += STREAMWINDOW_INCREMENT;
  wake_blocked(circ);
  return 0;
}

/* Common checks of XON/XOFF; returns the stream or NULL (ignored). */
static relay_stream_t *
xonoff_stream(or_circuit_t *circ, uint16_t id, uint8_t cmd,
              const char *what)
{
  relay_stream_t *s = relay_stream_find(circ, id);
  if (!s) {
    stream_not_open(circ, cmd, id);
    return NULL;
  }
  if (!circ->edge->cc) {
    log_info("%s on stream %u of circuit %llu, which has no congestion "
             "control; ignored",
             what, id, (unsigned long long)circ->base.gid);
    return NULL;
  }
  return s;
}

int
stream_handle_xoff(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                   uint16_t len)
{
  relay_stream_t *s = xonoff_stream(circ, id, RELAY_COMMAND_XOFF, "XOFF");
  if (!s)
    return 0;
  int r = cc_flow_on_xoff(&s->flow, &circ->edge->cc->p, 0, body, len);
  if (r <= 0)
    log_info("%s XOFF on stream %u of circuit %llu; ignored",
             r < 0 ? "Malformed" : "Repeated", id,
             (unsigned long long)circ->base.gid);
  return 0;
}

int
stream_handle_xon(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                  uint16_t len)
{
  relay_stream_t *s = xonoff_stream(circ, id, RELAY_COMMAND_XON, "XON");
  if (!s)
    return 0;
  if (cc_flow_on_xon(&s->flow, &circ->edge->cc->p, 0, body, len) < 0) {
    log_info("Malformed XON on stream %u of circuit %llu; ignored", id,
             (unsigned long long)circ->base.gid);
    return 0;
  }
  /* The advised rate is advisory: we do not pace to it. */
  wake_blocked(circ);
  return 0;
}
