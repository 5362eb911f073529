/* SPDX-License-Identifier: BSD-3-Clause */
/* client_socks.c -- SOCKS connections of the SocksPort client and their
 * streams (client_internal.h).
 *
 * A connection goes through: SOCKS handshake (socks_proto) -> waiting for
 * a circuit (client_pool.c attaches it) -> BEGIN sent -> CONNECTED (SOCKS
 * success reply) -> open (DATA both ways) -> closed. From BEGIN on the
 * connection owns a stream on its circuit's end (edge_stream_ops_t): the
 * edge gives it the exit's data, which waits in the connection's output
 * buffer (its length is what the edge asks before stream SENDMEs or XON),
 * and takes the SOCKS client's bytes only as fast as the windows, the
 * controller or the conflux set let them leave (socks_pump); reading stops
 * meanwhile and on_writable resumes it.
 */
#include "feature/client/client_internal.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const edge_stream_ops_t socks_stream_ops;

/* ---- controller view (read-only) ---------------------------------- */
static struct {
  client_stream_observer_fn fn;
  void *arg;
  uint64_t next_gid;
} O;

int
client_set_stream_observer(client_stream_observer_fn fn, void *arg)
{
  if (fn && O.fn && (fn != O.fn || arg != O.arg)) {
    log_warn("A second observer of SocksPort streams was refused: one is "
             "registered already (only one controller may watch them)");
    return -1;
  }
  O.fn = fn;
  O.arg = fn ? arg : NULL;
  return 0;
}

static void
stream_info(const cstream_t *cs, client_stream_info_t *si)
{
  memset(si, 0, sizeof(*si));
  si->id = cs->gid;
  si->address = cs->req.address;
  si->port = cs->req.port;
  si->is_resolve = client_stream_is_resolve(cs);
  if (si->is_resolve)
    si->status = cs->state == CS_CONNECTING ? CLIENT_STREAM_SENTRESOLVE
                                            : CLIENT_STREAM_NEWRESOLVE;
  else
    si->status = cs->state == CS_OPEN         ? CLIENT_STREAM_SUCCEEDED
                 : cs->state == CS_CONNECTING ? CLIENT_STREAM_SENTCONNECT
                                              : CLIENT_STREAM_NEW;
  if (cs->circ)
    for (int i = 0; i < cs->circ->n_legs && !si->circ_gid; i++)
      if (cs->circ->legs[i]->circ)
        si->circ_gid = cs->circ->legs[i]->circ->base.gid;
  if (cs->conn)
    si->source = conn_peer(cs->conn);
  si->reason = cs->end_reason1 ? cs->end_reason1 - 1 : -1;
  si->reason_remote = cs->end_remote;
}

void
socks_stream_report(cstream_t *cs, client_stream_status_t st)
{
  if (!cs->gid)
    cs->gid = ++O.next_gid;
  if (!O.fn)
    return;
  client_stream_info_t si;
  stream_info(cs, &si);
  si.status = st;
  O.fn(&si, O.arg);
}

void
client_foreach_stream(void (*fn)(const client_stream_info_t *, void *),
                      void *arg)
{
  if (!client_g.loop)
    return;
  for (dlist_node_t *n = dlist_first(&client_g.unattached); n;
       n = dlist_next(&client_g.unattached, n)) {
    const cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state != CS_HELD && cs->state != CS_WAIT_PATH)
      continue;
    client_stream_info_t si;
    stream_info(cs, &si);
    fn(&si, arg);
  }
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    for (dlist_node_t *m = dlist_first(&cc->streams); m;
         m = dlist_next(&cc->streams, m)) {
      const cstream_t *cs = DLIST_ENTRY(m, cstream_t, node);
      client_stream_info_t si;
      stream_info(cs, &si);
      fn(&si, arg);
    }
  }
}

/* Send the SOCKS reply for an END reason (or success when reason < 0). */
static void
socks_reply(cstream_t *cs, int end_reason)
{
  uint8_t out[SOCKS5_REPLY_MAX];
  ssize_t n;
  if (end_reason < 0) {
    if (cs->req.version == 4)
      n = socks4_reply_encode(out, sizeof(out), SOCKS4_GRANTED, 0, 0);
    else
      n = socks5_reply_encode_addr(out, sizeof(out), SOCKS5_SUCCEEDED, NULL);
  } else {
    n = socks_reply_encode_end_reason(out, sizeof(out), cs->req.version,
                                      (uint8_t)end_reason);
  }
  if (n > 0) {
    buf_add(conn_outbuf(cs->conn), out, (size_t)n);
    conn_flush_soon(cs->conn);
  }
}

/* Free a stream; its connection is closed after flushing. */
void
socks_stream_free(cstream_t *cs)
{
  client_resolve_freeing(cs);
  if (cs->gid)
    socks_stream_report(cs, cs->failed ? CLIENT_STREAM_FAILED
                                       : CLIENT_STREAM_CLOSED);
  edge_stream_forget(cs->es);
  cs->es = NULL;
  dlist_remove(&cs->node);
  if (cs->state == CS_OPEN)
    client_g.stats.n_open_streams--;
  if (cs->circ && dlist_is_empty(&cs->circ->streams))
    cs->circ->idle_since_us = evloop_now_us(client_g.loop);
  if (cs->conn)
    conn_close(cs->conn, 1);
  socks_parser_wipe(&cs->socks);
  free(cs->orig_address);
  free(cs);
}

void
socks_stream_fail(cstream_t *cs, int end_reason, const char *why)
{
  client_g.stats.n_streams_failed++;
  cs->failed = 1;
  if (!cs->end_reason1 && end_reason >= 0)
    cs->end_reason1 = (uint16_t)(end_reason + 1);
  log_info("SOCKS request for port %u failed: %s", cs->req.port, why);
  if (cs->state != CS_OPEN && cs->conn)
    socks_reply(cs, end_reason);
  socks_stream_free(cs);
}

void
socks_send_begin(cstream_t *cs)
{
  if (client_stream_is_resolve(cs)) {
    client_resolve_send(cs);
    return;
  }
  ccirc_t *cc = cs->circ;
  cs->es = edge_stream_new_next(cc->edge, &socks_stream_ops, cs);
  if (!cs->es) {
    socks_stream_fail(cs, END_STREAM_REASON_RESOURCELIMIT,
                      "no free stream ID on the circuit");
    return;
  }
  char target[SOCKS_MAX_HOSTNAME + 16];
  int n = snprintf(target, sizeof(target), "%s:%u", cs->req.address,
                   cs->req.port);
  if (strchr(cs->req.address, ':')) /* IPv6 literal */
    n = snprintf(target, sizeof(target), "[%s]:%u", cs->req.address,
                 cs->req.port);
  cs->state = CS_CONNECTING;
  cs->begin_us = evloop_now_us(client_g.loop);
  socks_stream_report(cs, CLIENT_STREAM_SENTCONNECT);
  if (!cc->dirty_since_us)
    cc->dirty_since_us = evloop_now_us(client_g.loop);
  /* tor-spec 6.2: the flags follow the NUL when any is set. */
  uint32_t bflags =
      cs->port ? client_port_begin_flags(cs->port->flags, cs->req.version)
               : 0;
  uint8_t body[sizeof(target) + 4];
  size_t blen = (size_t)n + 1;
  memcpy(body, target, blen);
  if (bflags) {
    set_u32(body + blen, bflags);
    blen += 4;
  }
  if (edge_stream_send_msg(cs->es, RELAY_COMMAND_BEGIN, body,
                           (uint16_t)blen) < 0) {
    socks_stream_fail(cs, END_STREAM_REASON_INTERNAL, "could not send BEGIN");
    return;
  }
  if (cc->cfx && cc->cfx->curr)
    log_info("Stream %u to port %u: BEGIN on conflux set #%llu, leg %s",
             edge_stream_id(cs->es), cs->req.port,
             (unsigned long long)cc->serial,
             ((const cleg_t *)cc->cfx->curr->handle)->path);
}

/* How long cs's current BEGIN may wait for its answer. */
static uint64_t
stream_timeout_us(const cstream_t *cs)
{
  unsigned s = client_g.cfg.circuit_stream_timeout;
  if (!s)
    s = cs->n_begin_timeouts < 2 ? CLIENT_STREAM_TIMEOUT_FIRST_S
                                 : CLIENT_STREAM_TIMEOUT_LATER_S;
  return (uint64_t)s * 1000000ULL;
}

/* cs's BEGIN got no answer in time: end it there and try another
 * circuit, or give up past SocksTimeout. */
static void
stream_timed_out(cstream_t *cs, uint64_t now)
{
  ccirc_t *cc = cs->circ;
  double waited = stream_timeout_us(cs) / 1e6; /* the limit it passed */
  edge_stream_end(cs->es, END_STREAM_REASON_TIMEOUT);
  cs->es = NULL;
  /* tor's way: the circuit keeps its streams but takes no new ones. A
   * controller's circuit takes none from the pool anyway, and is left as
   * it is for the controller to attach the stream again if it wants. */
  uint64_t max_dirty =
      (uint64_t)client_g.cfg.max_circuit_dirtiness * 1000000ULL;
  if (!cc->controller && now > max_dirty + 1)
    cc->dirty_since_us = now - max_dirty - 1;
  if (cs->requested_us && now - cs->requested_us >= client_socks_timeout_us()) {
    char *msg = pc_asprintf("no answer to its %s within %.0f s on %s #%llu, "
                            "and it has waited SocksTimeout (%.0f s)",
                            client_stream_is_resolve(cs) ? "RESOLVE"
                                                         : "BEGIN",
                            waited, cc->cfx ? "conflux set" : "circuit",
                            (unsigned long long)cc->serial,
                            (now - cs->requested_us) / 1e6);
    log_notice("A stream to port %u failed: %s", cs->req.port, msg);
    socks_stream_fail(cs, END_STREAM_REASON_TIMEOUT, msg);
    free(msg);
    return;
  }
  client_g.stats.n_stream_timeouts++;
  cs->n_begin_timeouts++;
  log_info("Stream %llu to port %u: no answer to its %s within %.0f s on "
           "%s #%llu; retrying on another circuit (try %d)",
           (unsigned long long)cs->gid, cs->req.port,
           client_stream_is_resolve(cs) ? "RESOLVE" : "BEGIN", waited,
           cc->cfx ? "conflux set" : "circuit",
           (unsigned long long)cc->serial, cs->n_begin_timeouts + 1);
  dlist_remove(&cs->node);
  dlist_node_init(&cs->node);
  if (dlist_is_empty(&cc->streams))
    cc->idle_since_us = now;
  cs->circ = NULL;
  cs->state = CS_WAIT_CIRC;
  if (!client_g.cfg.leave_streams_unattached)
    socks_stream_report(cs, CLIENT_STREAM_DETACHED);
  client_stream_attach(cs);
}

/* cc's first stream whose BEGIN has waited too long, or NULL. */
static cstream_t *
first_expired(ccirc_t *cc, uint64_t now)
{
  for (dlist_node_t *m = dlist_first(&cc->streams); m;
       m = dlist_next(&cc->streams, m)) {
    cstream_t *cs = DLIST_ENTRY(m, cstream_t, node);
    if (cs->state == CS_CONNECTING && cs->es &&
        now - cs->begin_us >= stream_timeout_us(cs))
      return cs;
  }
  return NULL;
}

void
client_expire_connecting(uint64_t now)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&client_g.circs); n; n = next) {
    next = dlist_next(&client_g.circs, n);
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    /* A retried stream never comes back to cc (it takes no new streams
     * now), so each pass takes one off its list. */
    cc->busy++;
    cstream_t *cs;
    while (!cc->dead && (cs = first_expired(cc, now)) != NULL)
      stream_timed_out(cs, now);
    ccirc_unbusy(cc);
  }
}

static void
socks_pump(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  buf_t *in = conn_inbuf(cs->conn);
  cc->busy++;
  while (buf_datalen(in)) {
    size_t n = buf_datalen(in);
    if (n > RELAY_BODY_MAX)
      n = RELAY_BODY_MAX;
    size_t sent = edge_stream_send(cs->es, buf_pullup(in, n), n);
    /* A failed send may have closed the circuit, and the stream with it. */
    if (cc->dead) {
      ccirc_unbusy(cc);
      return;
    }
    buf_drain(in, sent);
    if (sent < n)
      break;
  }
  conn_set_reading(cs->conn, buf_datalen(in) == 0);
  ccirc_unbusy(cc);
}

static void
socks_on_data(edge_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  cstream_t *cs = arg;
  (void)s;
  if (cs->state != CS_OPEN)
    return;
  buf_add(conn_outbuf(cs->conn), data, len);
  conn_flush_soon(cs->conn);
}

static void
socks_on_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  cstream_t *cs = arg;
  (void)s;
  cs->es = NULL; /* the edge frees it */
  cs->end_reason1 = (uint16_t)(reason + 1);
  /* The edge itself ends streams with DESTROY when their circuit goes
   * (edge_free); every other reason here came in the exit's END cell. */
  cs->end_remote = reason != END_STREAM_REASON_DESTROY;
  if (cs->state == CS_OPEN) {
    log_info("Stream %llu to port %u ended: %s (reason %u)",
             (unsigned long long)cs->gid, cs->req.port,
             cs->end_remote ? "END from the exit" : "its circuit closed",
             (unsigned)reason);
    socks_stream_free(cs);
  }
  else
    socks_stream_fail(cs, reason, "the exit refused the stream");
}

static void
socks_on_writable(edge_stream_t *s, void *arg)
{
  cstream_t *cs = arg;
  (void)s;
  if (cs->state == CS_OPEN)
    socks_pump(cs);
}

static size_t
socks_pending(edge_stream_t *s, void *arg)
{
  cstream_t *cs = arg;
  (void)s;
  return buf_datalen(conn_outbuf(cs->conn));
}

static void
socks_on_connected(edge_stream_t *s, const uint8_t *body, size_t len,
                   void *arg)
{
  cstream_t *cs = arg;
  (void)s;
  (void)body;
  (void)len;
  if (cs->state != CS_CONNECTING)
    return;
  cs->state = CS_OPEN;
  uint64_t now = evloop_now_us(client_g.loop);
  char held[96] = "";
  if (cs->circ->ooo_held_us)
    snprintf(held, sizeof(held),
             ", of which up to %.3f s in order behind a message still on "
             "its way on another leg",
             cs->circ->ooo_held_us / 1e6);
  log_info("Stream %llu to port %u connected %.3f s after its request: "
           "%.3f s until its BEGIN left on %s #%llu, %.3f s from BEGIN to "
           "CONNECTED%s%s",
           (unsigned long long)cs->gid, cs->req.port,
           (now - cs->requested_us) / 1e6,
           (cs->begin_us - cs->requested_us) / 1e6,
           cs->circ->cfx ? "conflux set" : "circuit",
           (unsigned long long)cs->circ->serial,
           (now - cs->begin_us) / 1e6, held,
           cs->retried || cs->n_begin_timeouts ? " (retried)" : "");
  socks_stream_report(cs, CLIENT_STREAM_SUCCEEDED);
  client_g.stats.n_open_streams++;
  client_g.stats.n_streams_connected++;
  socks_reply(cs, -1);
  conn_set_reading(cs->conn, 1);
  socks_pump(cs);
}

static const edge_stream_ops_t socks_stream_ops = {
    .on_data = socks_on_data,
    .on_end = socks_on_end,
    .on_writable = socks_on_writable,
    .pending_bytes = socks_pending,
    .on_connected = socks_on_connected,
};

/* The SocksPort's flags refuse the request (NoDNSRequest, NoIPv4Traffic,
 * ...): fail it (1), else 0. */
static int
refused_by_port(cstream_t *cs)
{
  const char *why = NULL;
  int reason = client_port_check_request(cs->port->flags, &cs->req, &why);
  if (reason < 0)
    return 0;
  log_notice("Refusing a SOCKS request for %s:%u: %s", cs->req.address,
             cs->req.port, why);
  socks_stream_fail(cs, reason, why);
  return 1;
}

static void
handle_socks_bytes(cstream_t *cs)
{
  buf_t *in = conn_inbuf(cs->conn);
  while (cs->state == CS_SOCKS && buf_datalen(in)) {
    size_t len = buf_datalen(in), used = 0;
    const uint8_t *p = buf_pullup(in, len);
    socks_status_t st = socks_parser_feed(&cs->socks, p, len, &used);
    buf_drain(in, used);
    size_t rlen = 0;
    const uint8_t *reply;
    switch (st) {
    case SOCKS_NEED_MORE:
      return;
    case SOCKS_SEND_REPLY:
      reply = socks_parser_reply(&cs->socks, &rlen);
      buf_add(conn_outbuf(cs->conn), reply, rlen);
      conn_flush_soon(cs->conn);
      break;
    case SOCKS_FAILED:
      reply = socks_parser_reply(&cs->socks, &rlen);
      if (rlen)
        buf_add(conn_outbuf(cs->conn), reply, rlen);
      log_info("SOCKS handshake failed: %s",
               socks_parser_errmsg(&cs->socks));
      socks_stream_free(cs);
      return;
    case SOCKS_DONE:
      cs->req = *socks_parser_request(&cs->socks);
      dlist_remove(&cs->node);
      dlist_node_init(&cs->node);
      if (cs->port && refused_by_port(cs))
        return;
      if (cs->req.command != SOCKS_CMD_CONNECT) {
        /* RESOLVE, RESOLVE_PTR: one answer, then the connection closes. */
        conn_set_reading(cs->conn, 0);
        client_resolve_start(cs);
        return;
      }
      if (client_g.addrmap) { /* MAPADDRESS */
        char was[sizeof(cs->req.address)];
        memcpy(was, cs->req.address, sizeof(was));
        int r = addrmap_rewrite(client_g.addrmap, cs->req.address,
                                sizeof(cs->req.address));
        if (r < 0) {
          socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED,
                            "its address mappings loop or are too long");
          return;
        }
        if (r > 0) {
          log_info("SOCKS target %s mapped to %s (MAPADDRESS)", was,
                   cs->req.address);
          free(cs->orig_address);
          cs->orig_address = pc_strdup(was);
        }
      }
      if (cs->port && refused_by_port(cs)) /* the mapped target */
        return;
      /* Further bytes are the client's data: wait for CONNECTED. */
      conn_set_reading(cs->conn, 0);
      client_stream_attach(cs);
      return;
    }
  }
}

static void
socks_conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  cstream_t *cs = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN:
    break;
  case CONN_EV_DATA:
    if (cs->state == CS_SOCKS)
      handle_socks_bytes(cs);
    else if (cs->state == CS_OPEN)
      socks_pump(cs);
    break;
  case CONN_EV_DRAINED:
    if (cs->state == CS_OPEN)
      edge_stream_flushed(cs->es);
    break;
  case CONN_EV_EOF:
  case CONN_EV_ERROR:
    if (!cs->end_reason1)
      cs->end_reason1 = END_STREAM_REASON_DONE + 1;
    if (cs->es) {
      edge_stream_end(cs->es, END_STREAM_REASON_DONE);
      cs->es = NULL;
    }
    conn_free(cs->conn); /* the client is gone: nothing to flush */
    socks_stream_free(cs);
    break;
  }
}

void
client_socks_accept(int fd, const pc_addr_t *peer, void *arg)
{
  const client_port_t *port = arg;
  cstream_t *cs = pc_zalloc(sizeof(*cs));
  cs->port = port;
  /* tor: username/password is chosen over no-auth (so that credentials can
   * isolate) unless PreferSOCKSNoAuth or NoIsolateSOCKSAuth. */
  socks_parser_init(&cs->socks,
                    port && ((port->flags & CLIENT_PORT_PREFER_NOAUTH) ||
                             !(port->iso & CLIENT_ISO_SOCKSAUTH))
                        ? SOCKS_F_PREFER_NO_AUTH
                        : 0);
  cs->state = CS_SOCKS;
  dlist_insert_tail(&client_g.unattached, &cs->node);
  client_g.stats.n_socks_conns++;
  cs->conn =
      conn_new_accepted(client_g.loop, NULL, fd, peer, socks_conn_cb, cs);
  conn_set_lowat(cs->conn, 4 * RELAY_BODY_MAX);
  conn_set_memacct(cs->conn, MEMACCT_EDGE_BUF);
}
