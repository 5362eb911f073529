/* stream.c -- relay-side streams and edge flow control (see stream.h).
 *
 * The edge state is allocated on a circuit's first stream, so middle
 * relays, which never package or deliver data, pay nothing for it.
 * Sending is limited by the smaller of the circuit and stream package
 * windows; when a SENDME reopens a window every stream that was held back
 * gets on_writable(). Digests for authenticated SENDMEs are recorded after
 * every CIRCWINDOW_INCREMENT-th DATA cell we originate.
 */
#include "core/or/stream.h"
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
};

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
  }
  return circ->edge;
}

static void
stream_free(relay_stream_t *s)
{
  dlist_remove(&s->node);
  free(s);
}

void
circ_edge_clear(or_circuit_t *circ)
{
  circ_edge_t *e = circ->edge;
  if (!e)
    return;
  dlist_node_t *n;
  while ((n = dlist_first(&e->streams))) {
    relay_stream_t *s = DLIST_ENTRY(n, relay_stream_t, node);
    dlist_remove(n);
    if (s->ops && s->ops->on_end)
      s->ops->on_end(s, END_STREAM_REASON_DESTROY, s->arg);
    free(s);
  }
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
    if (e->package_window <= 0 || s->package_window <= 0) {
      s->blocked = 1;
      break;
    }
    size_t chunk = len - sent;
    if (chunk > RELAY_BODY_MAX)
      chunk = RELAY_BODY_MAX;
    if (or_circuit_send_relay(s->circ, RELAY_COMMAND_DATA, s->id,
                              data + sent, (uint16_t)chunk) < 0)
      break;
    sent += chunk;
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
  stream_free(s);
}

void
relay_stream_end(relay_stream_t *s, uint8_t reason)
{
  or_circuit_send_relay(s->circ, RELAY_COMMAND_END, s->id, &reason, 1);
  stream_free(s);
}

static int
proto_err(or_circuit_t *circ, const char *why)
{
  log_info("Closing circuit %llu: %s", (unsigned long long)circ->base.gid,
           why);
  return -1;
}

int
stream_handle_data(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                   uint16_t len)
{
  circ_edge_t *e = edge_of(circ);
  if (--e->deliver_window < 0)
    return proto_err(circ, "client exceeded the circuit deliver window");
  if (e->deliver_window <= CIRCWINDOW_START - CIRCWINDOW_INCREMENT) {
    /* Authenticated SENDME: the digest of the cell that triggered it. */
    uint8_t sendme[3 + 20];
    sendme[0] = 1;
    set_u16(sendme + 1, 20);
    memcpy(sendme + 3,
           relay_crypto_last_digest(circ->crypto, RELAY_DIR_FORWARD), 20);
    e->deliver_window += CIRCWINDOW_INCREMENT;
    or_circuit_send_relay(circ, RELAY_COMMAND_SENDME, 0, sendme,
                          sizeof(sendme));
  }
  relay_stream_t *s = relay_stream_find(circ, id);
  if (!s) {
    log_debug("DATA for unknown stream %u on circuit %llu", id,
              (unsigned long long)circ->base.gid);
    return 0;
  }
  if (--s->deliver_window < 0)
    return proto_err(circ, "client exceeded a stream deliver window");
  if (s->ops && s->ops->on_data)
    s->ops->on_data(s, body, len, s->arg);
  /* on_data may have ended the stream. */
  if ((s = relay_stream_find(circ, id)))
    relay_stream_flushed(s);
  return 0;
}

void
relay_stream_flushed(relay_stream_t *s)
{
  size_t pending = s->ops && s->ops->pending_bytes
                       ? s->ops->pending_bytes(s, s->arg)
                       : 0;
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
  if (!s)
    return 0;
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
    if (!s->blocked || s->package_window <= 0 || e->package_window <= 0)
      continue;
    s->blocked = 0;
    if (s->ops && s->ops->on_writable)
      s->ops->on_writable(s, s->arg);
    if (circ->base.marked_for_close || !circ->edge)
      return;
  }
}

int
stream_handle_sendme(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                     uint16_t len)
{
  circ_edge_t *e = edge_of(circ);
  if (id == 0) {
    if (e->package_window + CIRCWINDOW_INCREMENT > CIRCWINDOW_START)
      return proto_err(circ, "unexpected circuit SENDME (window would "
                             "exceed 1000)");
    if (len >= 1 && body[0] == 1) {
      if (len < 3 || get_u16(body + 1) < 20 || len < 23)
        return proto_err(circ, "malformed v1 SENDME");
      if (e->n_sendme_digests == 0 ||
          memcmp(e->sendme_digests[0], body + 3, 20))
        return proto_err(circ, "authenticated SENDME with a wrong digest");
    } else if (len >= 1 && body[0] > 1) {
      return proto_err(circ, "SENDME of an unknown version");
    }
    /* Version 0 is still accepted (tor's default sendme_accept_min_version
     * is 0); either way the oldest digest is used up. */
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
  if (!s)
    return 0;
  if (s->package_window + STREAMWINDOW_INCREMENT > STREAMWINDOW_START)
    return proto_err(circ, "unexpected stream SENDME");
  s->package_window += STREAMWINDOW_INCREMENT;
  wake_blocked(circ);
  return 0;
}
