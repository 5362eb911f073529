/* client.c -- the SOCKS port and client-side streams (see client.h).
 *
 * A SOCKS connection goes through: SOCKS handshake (socks_proto) ->
 * waiting for a circuit -> BEGIN sent -> CONNECTED (SOCKS success reply) ->
 * open (DATA both ways) -> closed. Circuits (ccirc_t) are built by
 * circbuild through paths from feature/dir's path selection; streams wait
 * on a circuit that is still being built.
 *
 * Flow control is kept here for the last hop, where the streams end:
 * package/deliver windows per circuit and per stream, the digests of every
 * 100th DATA cell we send (an exit's v1 SENDME must echo them) and v1
 * SENDMEs carrying the digest of every 100th cell we receive. Bytes from
 * the SOCKS client are only read as fast as the windows allow; bytes for
 * it wait in its connection's output buffer, and stream SENDMEs are held
 * back while ten cells or more wait there.
 */
#include "feature/client/client.h"
#include "core/or/circuit.h"
#include "core/or/stream.h"
#include "core/proto/relay_msg.h"
#include "feature/client/circbuild.h"
#include "feature/client/socks_proto.h"
#include "feature/measureme/measureme.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_HOPS 3
#define CIRC_BUILD_TIMEOUT_US (60ULL * 1000000)
#define CLIENT_TIMER_US (2ULL * 1000000)
#define CLEAN_IDLE_US (300ULL * 1000000)

typedef enum {
  CS_SOCKS,
  CS_WAIT_CIRC,
  CS_CONNECTING,
  CS_OPEN,
} cstream_state_t;

typedef struct ccirc_t ccirc_t;

typedef struct cstream_t {
  dlist_node_t node;      /* in G.unattached or its circuit's list */
  conn_t *conn;
  socks_parser_t socks;
  socks_request_t req;
  cstream_state_t state;
  ccirc_t *circ;
  uint16_t id;
  int package_window, deliver_window;
  int retried;
} cstream_t;

struct ccirc_t {
  dlist_node_t node;
  circbuild_t *cb;
  origin_circuit_t *circ;  /* once built */
  int built;
  uint8_t exit_id[20];
  uint16_t exit_port_ok;   /* the port the exit was chosen for (0: any) */
  int pinned_exit;         /* chosen from ExitNodes whatever the port */
  /* isolation: SOCKS credentials */
  uint8_t iso[600];
  size_t iso_len;
  uint64_t created_us, dirty_since_us, idle_since_us;
  int package_window, deliver_window;
  uint8_t digests[CIRCWINDOW_START / CIRCWINDOW_INCREMENT][20];
  int n_digests;
  unsigned cells_received;
  dlist_t streams;         /* attached: waiting, connecting, open */
  uint16_t next_id;
};

static struct {
  evloop_t *loop;
  client_config_t cfg;
  listener_t *listener;
  dlist_t circs;
  dlist_t unattached;      /* in the SOCKS handshake */
  evloop_timer_t *timer;
  client_stats_t stats;
} G;

static void stream_attach(cstream_t *cs);
static void pump_to_circuit(cstream_t *cs);

/* ---- small helpers ------------------------------------------------ */

static void
iso_key(const socks_request_t *r, uint8_t *out, size_t *len)
{
  size_t n = 0;
  out[n++] = (uint8_t)r->auth;
  set_u16(out + n, r->username_len);
  n += 2;
  memcpy(out + n, r->username, r->username_len);
  n += r->username_len;
  set_u16(out + n, r->password_len);
  n += 2;
  memcpy(out + n, r->password, r->password_len);
  n += r->password_len;
  *len = n;
}

static int
last_hop(const ccirc_t *cc)
{
  return cc->circ->n_hops_open - 1;
}

static relay_crypto_t *
last_crypto(const ccirc_t *cc)
{
  return cc->circ->hops[last_hop(cc)].crypto;
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
static void
stream_free(cstream_t *cs)
{
  dlist_remove(&cs->node);
  if (cs->state == CS_OPEN)
    G.stats.n_open_streams--;
  if (cs->circ && dlist_is_empty(&cs->circ->streams))
    cs->circ->idle_since_us = evloop_now_us(G.loop);
  if (cs->conn)
    conn_close(cs->conn, 1);
  socks_parser_wipe(&cs->socks);
  free(cs);
}

static void
stream_fail(cstream_t *cs, int end_reason, const char *why)
{
  G.stats.n_streams_failed++;
  log_info("SOCKS request for port %u failed: %s", cs->req.port, why);
  if (cs->state != CS_OPEN)
    socks_reply(cs, end_reason);
  stream_free(cs);
}

/* ---- circuits ----------------------------------------------------- */

static void
ccirc_free(ccirc_t *cc)
{
  dlist_remove(&cc->node);
  G.stats.n_circuits--;
  circbuild_free(cc->cb);
  free(cc);
}

static cstream_t *
find_stream(ccirc_t *cc, uint16_t id)
{
  for (dlist_node_t *n = dlist_first(&cc->streams); n;
       n = dlist_next(&cc->streams, n)) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->id == id && cs->state >= CS_CONNECTING)
      return cs;
  }
  return NULL;
}

static void
send_begin(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  do {
    cs->id = cc->next_id++;
  } while (!cs->id || find_stream(cc, cs->id));
  char target[SOCKS_MAX_HOSTNAME + 16];
  int n = snprintf(target, sizeof(target), "%s:%u", cs->req.address,
                   cs->req.port);
  if (strchr(cs->req.address, ':')) /* IPv6 literal */
    n = snprintf(target, sizeof(target), "[%s]:%u", cs->req.address,
                 cs->req.port);
  cs->state = CS_CONNECTING;
  cs->package_window = STREAMWINDOW_START;
  cs->deliver_window = STREAMWINDOW_START;
  if (!cc->dirty_since_us)
    cc->dirty_since_us = evloop_now_us(G.loop);
  if (origin_circuit_send_relay(cc->circ, last_hop(cc), RELAY_COMMAND_BEGIN,
                                cs->id, (const uint8_t *)target,
                                (uint16_t)n + 1) < 0)
    stream_fail(cs, END_STREAM_REASON_INTERNAL, "could not send BEGIN");
}

/* MeasureMeHops: ask those hops of a new circuit to measure it, with one
 * random label per circuit (logged, to join the relays' records). */
static void
ask_measureme(origin_circuit_t *circ)
{
  if (!G.cfg.measureme_hops)
    return;
  measureme_request_t req;
  memset(&req, 0, sizeof(req));
  req.interval_ms = G.cfg.measureme_interval_ms;
  crypt_rand(req.label, sizeof(req.label));
  uint8_t body[MEASUREME_BODY_LEN];
  measureme_request_encode(body, &req);
  char label[17];
  base16_encode(label, sizeof(label), req.label, 8, BASE16_LOWER);
  for (int h = 0; h < CLIENT_HOPS; h++) {
    if (!(G.cfg.measureme_hops & (1u << h)))
      continue;
    if (origin_circuit_send_relay(circ, h, RELAY_COMMAND_MEASUREME, 0, body,
                                  sizeof(body)) < 0)
      return;
    log_notice("MeasureMe: asked hop %d of circuit %llu to measure it "
               "every %u ms (label %s)",
               h + 1, (unsigned long long)circ->base.gid, req.interval_ms,
               label);
  }
}

static void
cb_built(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  ccirc_t *cc = arg;
  (void)cb;
  cc->circ = circ;
  cc->built = 1;
  cc->idle_since_us = evloop_now_us(G.loop);
  G.stats.n_circuits_built++;
  log_info("Client circuit %llu built in %.0f ms",
           (unsigned long long)circ->base.gid,
           circbuild_build_time_us(cb) / 1000.0);
  ask_measureme(circ);
  dlist_node_t *n, *next;
  for (n = dlist_first(&cc->streams); n; n = next) {
    next = dlist_next(&cc->streams, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_WAIT_CIRC)
      send_begin(cs);
  }
}

static void
cb_closed(circbuild_t *cb, int reason, const char *why, void *arg)
{
  ccirc_t *cc = arg;
  (void)cb;
  if (!cc->built)
    G.stats.n_circuits_failed++;
  log_info("Client circuit closed (%s, reason %d)", why ? why : "?",
           reason);
  dlist_node_t *n;
  while ((n = dlist_first(&cc->streams))) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    dlist_remove(n);
    cs->circ = NULL;
    if (cs->state == CS_OPEN) {
      stream_free(cs);
    } else if (!cs->retried) {
      /* Not connected yet: try once more on another circuit. */
      cs->retried = 1;
      G.stats.n_retries++;
      cs->state = CS_WAIT_CIRC;
      dlist_node_init(&cs->node);
      stream_attach(cs);
    } else {
      dlist_node_init(&cs->node);
      stream_fail(cs, END_STREAM_REASON_DESTROY, "circuit closed");
    }
  }
  cc->circ = NULL;
  /* circbuild is done with cb once this callback returns. */
  ccirc_free(cc);
}

static void
wake_streams(ccirc_t *cc)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&cc->streams); n; n = next) {
    next = dlist_next(&cc->streams, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_OPEN && cs->package_window > 0 &&
        cc->package_window > 0)
      pump_to_circuit(cs);
  }
}

static void
stream_maybe_sendme(cstream_t *cs)
{
  size_t pending = buf_datalen(conn_outbuf(cs->conn));
  while (cs->deliver_window <= STREAMWINDOW_START - STREAMWINDOW_INCREMENT &&
         pending < 10 * RELAY_BODY_MAX) {
    cs->deliver_window += STREAMWINDOW_INCREMENT;
    origin_circuit_send_relay(cs->circ->circ, last_hop(cs->circ),
                              RELAY_COMMAND_SENDME, cs->id, NULL, 0);
  }
}

static void
circ_sendme(ccirc_t *cc, const uint8_t *body, uint16_t len)
{
  if (cc->package_window + CIRCWINDOW_INCREMENT > CIRCWINDOW_START ||
      (len >= 1 && body[0] == 1 &&
       (len < 23 || !cc->n_digests ||
        memcmp(cc->digests[0], body + 3, 20)))) {
    log_notice("Bad circuit SENDME from the exit; closing the circuit");
    circuit_mark_for_close(&cc->circ->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  if (cc->n_digests) {
    memmove(cc->digests[0], cc->digests[1], (size_t)(cc->n_digests - 1) * 20);
    cc->n_digests--;
  }
  cc->package_window += CIRCWINDOW_INCREMENT;
  wake_streams(cc);
}

static void
cb_relay(circbuild_t *cb, int hop, uint8_t cmd, uint16_t id,
         const uint8_t *body, uint16_t len, void *arg)
{
  ccirc_t *cc = arg;
  (void)cb;
  if (hop != last_hop(cc))
    return;
  if (id == 0) {
    if (cmd == RELAY_COMMAND_SENDME)
      circ_sendme(cc, body, len);
    return;
  }
  cstream_t *cs = find_stream(cc, id);
  if (!cs)
    return;
  switch (cmd) {
  case RELAY_COMMAND_CONNECTED:
    if (cs->state != CS_CONNECTING)
      break;
    cs->state = CS_OPEN;
    G.stats.n_open_streams++;
    G.stats.n_streams_connected++;
    socks_reply(cs, -1);
    conn_set_reading(cs->conn, 1);
    pump_to_circuit(cs);
    break;
  case RELAY_COMMAND_DATA:
    if (cs->state != CS_OPEN)
      break;
    if (--cc->deliver_window < 0 || --cs->deliver_window < 0) {
      circuit_mark_for_close(&cc->circ->base, DESTROY_REASON_PROTOCOL);
      return;
    }
    if (cc->deliver_window <= CIRCWINDOW_START - CIRCWINDOW_INCREMENT) {
      uint8_t sm[23];
      sm[0] = 1;
      set_u16(sm + 1, 20);
      memcpy(sm + 3, relay_crypto_last_digest(last_crypto(cc),
                                              RELAY_DIR_BACKWARD),
             20);
      cc->deliver_window += CIRCWINDOW_INCREMENT;
      origin_circuit_send_relay(cc->circ, last_hop(cc), RELAY_COMMAND_SENDME,
                                0, sm, sizeof(sm));
    }
    buf_add(conn_outbuf(cs->conn), body, len);
    conn_flush_soon(cs->conn);
    stream_maybe_sendme(cs);
    break;
  case RELAY_COMMAND_SENDME:
    if (cs->package_window + STREAMWINDOW_INCREMENT > STREAMWINDOW_START) {
      circuit_mark_for_close(&cc->circ->base, DESTROY_REASON_PROTOCOL);
      return;
    }
    cs->package_window += STREAMWINDOW_INCREMENT;
    pump_to_circuit(cs);
    break;
  case RELAY_COMMAND_END:
    if (cs->state == CS_OPEN) {
      stream_free(cs);
    } else {
      stream_fail(cs, len ? body[0] : END_STREAM_REASON_MISC,
                  "the exit refused the stream");
    }
    break;
  default:
    break;
  }
}

static const circbuild_cbs_t circ_cbs = {cb_built, cb_closed, cb_relay};

/* Does the exit of cc accept port (by its policy summary)? */
static int
exit_accepts(const ccirc_t *cc, uint16_t port)
{
  if (cc->pinned_exit)
    return 1;
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
  if (!nl)
    return 0;
  const dir_node_t *nd = dir_nodelist_find_id(nl, cc->exit_id);
  return nd && nd->policy && policy_summary_allows_port(nd->policy, port);
}

static ccirc_t *
launch_circuit(const socks_request_t *req, const uint8_t *iso, size_t iso_len)
{
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
  if (!nl)
    return NULL;
  const dir_node_t *path[CLIENT_HOPS];
  path_rng_t rng = path_rng_crypto();
  char *err = NULL;
  int pinned = 0;
  if (path_choose(nl, G.cfg.path, CLIENT_HOPS, req->port, NULL, &rng, path,
                  &err) < 0) {
    PC_FREE(err);
    if (!G.cfg.exit_nodes_pinned ||
        path_choose(nl, G.cfg.path, CLIENT_HOPS, 0, NULL, &rng, path,
                    &err) < 0) {
      log_notice("No path for a stream to port %u: %s", req->port,
                 err ? err : "?");
      free(err);
      return NULL;
    }
    pinned = 1;
  }
  extend_target_t hops[CLIENT_HOPS];
  for (int i = 0; i < CLIENT_HOPS; i++) {
    extend_target_t *t = &hops[i];
    memset(t, 0, sizeof(*t));
    if (!path[i]->has_ntor)
      return NULL;
    t->addr = path[i]->or_addr;
    memcpy(t->rsa_id, path[i]->rsa_id, 20);
    if (path[i]->has_ed25519) {
      t->has_ed_id = 1;
      memcpy(t->ed_id, path[i]->ed25519_id, 32);
    }
    memcpy(t->ntor_key, path[i]->ntor_key, 32);
    t->handshake = HTYPE_NTOR;
  }
  ccirc_t *cc = pc_zalloc(sizeof(*cc));
  dlist_init(&cc->streams);
  memcpy(cc->exit_id, path[CLIENT_HOPS - 1]->rsa_id, 20);
  cc->pinned_exit = pinned;
  memcpy(cc->iso, iso, iso_len);
  cc->iso_len = iso_len;
  cc->created_us = evloop_now_us(G.loop);
  cc->package_window = CIRCWINDOW_START;
  cc->deliver_window = CIRCWINDOW_START;
  crypt_rand((uint8_t *)&cc->next_id, sizeof(cc->next_id));
  dlist_insert_tail(&G.circs, &cc->node);
  G.stats.n_circuits++;
  log_info("Building a circuit %s -> %s -> %s for port %u",
           path[0]->nickname, path[1]->nickname, path[2]->nickname,
           req->port);
  cc->cb = circbuild_start(hops, CLIENT_HOPS, &circ_cbs, cc);
  if (!cc->cb) {
    dlist_remove(&cc->node);
    G.stats.n_circuits--;
    free(cc);
    return NULL;
  }
  return cc;
}

static void
stream_attach(cstream_t *cs)
{
  uint8_t iso[600];
  size_t iso_len;
  iso_key(&cs->req, iso, &iso_len);
  uint64_t now = evloop_now_us(G.loop);
  uint64_t max_dirty = (uint64_t)G.cfg.max_circuit_dirtiness * 1000000ULL;
  ccirc_t *use = NULL;
  for (dlist_node_t *n = dlist_first(&G.circs); n; n = dlist_next(&G.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (cc->iso_len != iso_len || memcmp(cc->iso, iso, iso_len))
      continue;
    if (cc->dirty_since_us && now - cc->dirty_since_us > max_dirty)
      continue;
    if (cc->built && cc->circ->base.marked_for_close)
      continue;
    if (!exit_accepts(cc, cs->req.port))
      continue;
    use = cc;
    break;
  }
  if (!use)
    use = launch_circuit(&cs->req, iso, iso_len);
  if (!use) {
    stream_fail(cs, END_STREAM_REASON_NOROUTE,
                "no circuit (no usable consensus or no suitable exit)");
    return;
  }
  cs->circ = use;
  cs->state = CS_WAIT_CIRC;
  dlist_insert_tail(&use->streams, &cs->node);
  if (use->built)
    send_begin(cs);
}

/* ---- SOCKS connections -------------------------------------------- */

static void
pump_to_circuit(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  buf_t *in = conn_inbuf(cs->conn);
  while (buf_datalen(in) && cc->package_window > 0 &&
         cs->package_window > 0) {
    size_t n = buf_datalen(in);
    if (n > RELAY_BODY_MAX)
      n = RELAY_BODY_MAX;
    const uint8_t *p = buf_pullup(in, n);
    if (origin_circuit_send_relay(cc->circ, last_hop(cc), RELAY_COMMAND_DATA,
                                  cs->id, p, (uint16_t)n) < 0)
      return;
    buf_drain(in, n);
    cs->package_window--;
    if (--cc->package_window % CIRCWINDOW_INCREMENT == 0 &&
        cc->n_digests < (int)(sizeof(cc->digests) / 20))
      memcpy(cc->digests[cc->n_digests++],
             relay_crypto_last_digest(last_crypto(cc), RELAY_DIR_FORWARD),
             20);
  }
  conn_set_reading(cs->conn, buf_datalen(in) == 0);
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
      stream_free(cs);
      return;
    case SOCKS_DONE:
      cs->req = *socks_parser_request(&cs->socks);
      dlist_remove(&cs->node);
      dlist_node_init(&cs->node);
      if (cs->req.command != SOCKS_CMD_CONNECT) {
        stream_fail(cs, END_STREAM_REASON_MISC,
                    "only CONNECT is supported yet (not RESOLVE)");
        return;
      }
      /* Further bytes are the client's data: wait for CONNECTED. */
      conn_set_reading(cs->conn, 0);
      stream_attach(cs);
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
      pump_to_circuit(cs);
    break;
  case CONN_EV_DRAINED:
    if (cs->state == CS_OPEN)
      stream_maybe_sendme(cs);
    break;
  case CONN_EV_EOF:
  case CONN_EV_ERROR:
    if (cs->state == CS_OPEN || cs->state == CS_CONNECTING) {
      uint8_t reason = END_STREAM_REASON_DONE;
      origin_circuit_send_relay(cs->circ->circ, last_hop(cs->circ),
                                RELAY_COMMAND_END, cs->id, &reason, 1);
    }
    conn_free(cs->conn); /* the client is gone: nothing to flush */
    stream_free(cs);
    break;
  }
}

static void
socks_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  cstream_t *cs = pc_zalloc(sizeof(*cs));
  socks_parser_init(&cs->socks, 0);
  cs->state = CS_SOCKS;
  dlist_insert_tail(&G.unattached, &cs->node);
  G.stats.n_socks_conns++;
  cs->conn = conn_new_accepted(G.loop, NULL, fd, peer, socks_conn_cb, cs);
  conn_set_lowat(cs->conn, 4 * RELAY_BODY_MAX);
}

/* Close circuits that have been idle too long or never got built. */
static void
client_timer_cb(void *arg)
{
  (void)arg;
  uint64_t now = evloop_now_us(G.loop);
  uint64_t max_dirty = (uint64_t)G.cfg.max_circuit_dirtiness * 1000000ULL;
  dlist_node_t *n, *next;
  for (n = dlist_first(&G.circs); n; n = next) {
    next = dlist_next(&G.circs, n);
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!cc->built) {
      if (now - cc->created_us > CIRC_BUILD_TIMEOUT_US) {
        log_info("Client circuit took too long to build; giving up on it");
        circbuild_free(cc->cb); /* closes it; cb_closed is not called */
        cc->cb = NULL;
        dlist_node_t *s;
        while ((s = dlist_first(&cc->streams))) {
          cstream_t *cs = DLIST_ENTRY(s, cstream_t, node);
          dlist_remove(s);
          dlist_node_init(&cs->node);
          cs->circ = NULL;
          stream_fail(cs, END_STREAM_REASON_TIMEOUT, "circuit build timed out");
        }
        ccirc_free(cc);
      }
      continue;
    }
    if (!dlist_is_empty(&cc->streams))
      continue;
    int too_dirty = cc->dirty_since_us && now - cc->dirty_since_us > max_dirty;
    int idle = now - cc->idle_since_us > CLEAN_IDLE_US;
    if (too_dirty || idle)
      circuit_mark_for_close(&cc->circ->base, DESTROY_REASON_FINISHED);
  }
}

int
client_init(evloop_t *loop, const client_config_t *cfg, const char **err)
{
  memset(&G, 0, sizeof(G));
  G.loop = loop;
  G.cfg = *cfg;
  dlist_init(&G.circs);
  dlist_init(&G.unattached);
  G.listener = listener_new(loop, &cfg->socks_addr, socks_accept, NULL, err);
  if (!G.listener)
    return -1;
  G.timer = evloop_timer_new(loop, client_timer_cb, NULL);
  evloop_timer_schedule_periodic(G.timer, CLIENT_TIMER_US);
  return 0;
}

void
client_reconfigure(const client_config_t *cfg)
{
  pc_addr_t keep = G.cfg.socks_addr;
  G.cfg = *cfg;
  G.cfg.socks_addr = keep; /* the listener stays where it is */
}

void
client_get_stats(client_stats_t *out)
{
  *out = G.stats;
}

void
client_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&G.unattached))) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    stream_free(cs);
  }
  while ((n = dlist_first(&G.circs))) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    dlist_node_t *s;
    while ((s = dlist_first(&cc->streams))) {
      cstream_t *cs = DLIST_ENTRY(s, cstream_t, node);
      dlist_remove(s);
      dlist_node_init(&cs->node);
      cs->circ = NULL;
      stream_free(cs);
    }
    circbuild_free(cc->cb);
    cc->cb = NULL;
    ccirc_free(cc);
  }
  listener_free(G.listener);
  evloop_timer_free(G.timer);
}
