/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_tunnel.c -- directory requests over BEGIN_DIR on a one-hop circuit
 * (see dir_tunnel.h).
 *
 * Design: one request object owns one origin circuit and one stream
 * (ID 1). The steps follow the circuit's callbacks: CREATED_FAST ->
 * BEGIN_DIR; CONNECTED -> the HTTP request (dir_http_format_request) in
 * as many DATA cells as it needs; DATA -> appended to a buffer that never
 * grows past max_body + DIR_HTTP_MAX_HEADER; END -> the buffer is parsed
 * by dir_http_parse_response, exactly as a DirPort answer would be. The
 * request is the owner of a circuit end (core/or/edge.h) and of its one
 * stream, so the windows are the edge's (tor-spec 7.3, 7.4: authenticated
 * circuit SENDMEs every 100 cells, stream SENDMEs every 50, as the answer
 * is taken at once). A relay sending beyond them breaks the protocol: the
 * request fails.
 *
 * The callback is made exactly once, after which the request is freed
 * and its circuit closed (its callbacks detached first, so core never
 * calls into freed memory). Failures found while starting are reported
 * from a deferred callback, as dir_http does.
 */
#include "feature/dir/dir_tunnel.h"
#include "core/crypto/relay_crypto.h"
#include "core/or/edge.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNNEL_STREAM_ID 1

struct dir_tunnel_req_t {
  evloop_t *loop;
  origin_circuit_t *circ;
  evloop_timer_t *timer;
  evloop_deferred_t *fail_soon;
  char *fail_msg;
  char *path;
  int path_is_z;
  char relay[96]; /* "$HEX8~addr:port" for messages and Host */
  size_t max_body;
  dir_http_done_fn cb;
  void *arg;
  uint8_t *data;
  size_t len, cap;
  int connected;
  int done;
  edge_t *edge;                /* the circuit's end at the relay */
  edge_stream_t *stream;
};

static void
req_free(dir_tunnel_req_t *r)
{
  if (r->circ) {
    origin_circuit_t *c = r->circ;
    r->circ = NULL;
    c->ops = NULL; /* no callbacks into freed memory */
    circuit_mark_for_close(&c->base, DESTROY_REASON_FINISHED);
  }
  edge_free(r->edge); /* r->done is set: no callback does anything */
  evloop_timer_free(r->timer);
  evloop_deferred_free(r->fail_soon);
  free(r->fail_msg);
  free(r->path);
  free(r->data);
  free(r);
}

static void
finish(dir_tunnel_req_t *r, int status, const uint8_t *body, size_t len,
       const char *err)
{
  if (r->done)
    return;
  r->done = 1;
  /* Close the circuit before the callback, which may start the next
   * request. */
  if (r->circ) {
    origin_circuit_t *c = r->circ;
    r->circ = NULL;
    c->ops = NULL;
    circuit_mark_for_close(&c->base, DESTROY_REASON_FINISHED);
  }
  r->cb(status, body, len, err, r->arg);
  req_free(r);
}

static void
fail(dir_tunnel_req_t *r, const char *msg)
{
  log_info("Tunnelled directory request to %s failed: %s", r->relay, msg);
  finish(r, DIR_HTTP_ERR, NULL, 0, msg);
}

static int
send_to_relay(dir_tunnel_req_t *r, uint8_t cmd, uint16_t sid,
              const uint8_t *body, uint16_t len)
{
  return r->circ ? origin_circuit_send_relay(r->circ, 0, cmd, sid, body, len)
                 : -1;
}

/* ---- the circuit end and its one stream (core/or/edge.h) ---------- */

static void send_request(dir_tunnel_req_t *r);
static int take_data(dir_tunnel_req_t *r, const uint8_t *body, uint16_t len);

static int
end_send(void *end, uint8_t cmd, uint16_t sid, const uint8_t *body,
         uint16_t len)
{
  return send_to_relay(end, cmd, sid, body, len);
}

static const uint8_t *
end_last_digest(void *end, int sent)
{
  dir_tunnel_req_t *r = end;
  return relay_crypto_last_digest(r->circ->hops[0].crypto,
                                  sent ? RELAY_DIR_FORWARD
                                       : RELAY_DIR_BACKWARD);
}

/* A one-hop CREATE_FAST circuit: fixed windows, never multiplexed. */
static const edge_end_ops_t tunnel_end_ops = {
    end_send, end_last_digest, NULL, NULL, NULL, 1, NULL, NULL, NULL,
};

static void
s_connected(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  dir_tunnel_req_t *r = arg;
  (void)s;
  (void)body;
  (void)len;
  if (r->connected || r->done)
    return;
  r->connected = 1;
  send_request(r);
}

static void
s_data(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  dir_tunnel_req_t *r = arg;
  if (!r->done)
    take_data(r, body, (uint16_t)len);
}

static void
s_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  dir_tunnel_req_t *r = arg;
  (void)s;
  r->stream = NULL;
  if (r->done)
    return;
  if (!r->connected) {
    char m[64];
    snprintf(m, sizeof(m), "the relay refused BEGIN_DIR (reason %u)",
             reason);
    fail(r, m);
    return;
  }
  uint8_t *out = NULL;
  size_t outlen = 0;
  char *err = NULL;
  int st = dir_http_parse_response(r->data ? r->data : (const uint8_t *)"",
                                   r->len, r->path_is_z, r->max_body, &out,
                                   &outlen, &err);
  finish(r, st, out, outlen, err);
  free(out);
  free(err);
}

static const edge_stream_ops_t tunnel_stream_ops = {
    .on_data = s_data, .on_end = s_end, .on_connected = s_connected};

static void
on_extended(origin_circuit_t *circ, int n_open, void *arg)
{
  dir_tunnel_req_t *r = arg;
  (void)circ;
  if (n_open != 1)
    return;
  log_debug("Tunnel to %s open; sending BEGIN_DIR", r->relay);
  r->edge = edge_new(&tunnel_end_ops, r, r->loop);
  r->stream = edge_stream_new(r->edge, TUNNEL_STREAM_ID, &tunnel_stream_ops,
                              r);
  if (edge_stream_send_msg(r->stream, RELAY_COMMAND_BEGIN_DIR, NULL, 0) < 0)
    fail(r, "cannot send BEGIN_DIR");
}

static void
send_request(dir_tunnel_req_t *r)
{
  /* Host: the relay's address, as tor does for tunnelled requests. */
  const char *at = strchr(r->relay, '~');
  char *req = dir_http_format_request(r->path, at ? at + 1 : "");
  size_t n = strlen(req), off = 0;
  while (off < n) {
    size_t k = n - off > RELAY_BODY_MAX ? RELAY_BODY_MAX : n - off;
    if (edge_stream_send(r->stream, (const uint8_t *)req + off, k) < k) {
      free(req);
      fail(r, "cannot send the request");
      return;
    }
    off += k;
  }
  free(req);
}

/* Bytes of the answer; returns -1 when the request failed. */
static int
take_data(dir_tunnel_req_t *r, const uint8_t *body, uint16_t len)
{
  size_t limit = r->max_body + DIR_HTTP_MAX_HEADER;
  if (r->len + len > limit) {
    char m[64];
    snprintf(m, sizeof(m), "answer exceeds %zu bytes", limit);
    fail(r, m);
    return -1;
  }
  if (r->len + len > r->cap) {
    size_t want = r->cap ? r->cap * 2 : 16384;
    while (want < r->len + len)
      want *= 2;
    if (want > limit)
      want = limit;
    r->data = pc_realloc(r->data, want);
    r->cap = want;
  }
  memcpy(r->data + r->len, body, len);
  r->len += len;
  return 0;
}

static void
on_relay(origin_circuit_t *circ, int hop, uint8_t command, uint16_t sid,
         const uint8_t *body, uint16_t len, void *arg)
{
  dir_tunnel_req_t *r = arg;
  (void)circ;
  if (r->done || hop != 0 || sid != TUNNEL_STREAM_ID || !r->edge)
    return; /* circuit SENDMEs: we send too little to need them */
  if (command == RELAY_COMMAND_DATA) {
    if (!r->connected) {
      fail(r, "DATA before CONNECTED");
      return;
    }
    if (edge_data_arrived(r->edge) < 0) {
      fail(r, edge_last_violation(r->edge));
      return;
    }
  }
  /* The stream callbacks below may finish (and free) r. */
  edge_t *e = r->edge;
  if (edge_handle_stream_msg(e, command, sid, body, len) < 0)
    fail(r, edge_last_violation(e));
}

static void
on_closed(origin_circuit_t *circ, int reason, const char *why, void *arg)
{
  dir_tunnel_req_t *r = arg;
  (void)circ;
  (void)reason;
  r->circ = NULL; /* core frees it */
  char m[160];
  snprintf(m, sizeof(m), "the circuit closed: %s", why ? why : "?");
  fail(r, m);
}

static const origin_circuit_ops_t tunnel_ops = {on_extended, on_relay,
                                                on_closed};

static void
timeout_cb(void *arg)
{
  fail(arg, "timed out");
}

static void
fail_soon_cb(void *arg)
{
  dir_tunnel_req_t *r = arg;
  char *m = r->fail_msg;
  r->fail_msg = NULL;
  fail(r, m ? m : "request failed");
  free(m);
}

dir_tunnel_req_t *
dir_tunnel_get(evloop_t *loop, const extend_target_t *relay, const char *path,
               size_t max_body, uint64_t timeout_ms, dir_http_done_fn cb,
               void *arg)
{
  dir_tunnel_req_t *r = pc_zalloc(sizeof(*r));
  r->loop = loop;
  r->path = pc_strdup(path);
  size_t pl = strlen(path);
  r->path_is_z = pl >= 2 && !strcmp(path + pl - 2, ".z");
  r->max_body = max_body;
  r->cb = cb;
  r->arg = arg;
  char a[PC_ADDR_STR_LEN];
  pc_addr_fmt(&relay->addr, a, sizeof(a), 1);
  snprintf(r->relay, sizeof(r->relay), "$%02X%02X%02X%02X~%s",
           relay->rsa_id[0], relay->rsa_id[1], relay->rsa_id[2],
           relay->rsa_id[3], a);
  r->timer = evloop_timer_new(loop, timeout_cb, r);
  evloop_timer_schedule(r->timer, timeout_ms * 1000);
  extend_target_t t = *relay;
  t.handshake = CIRC_HTYPE_FAST;
  t.cc_request = 0;
  r->circ = origin_circuit_launch(&t, &tunnel_ops, r);
  if (!r->circ) {
    r->fail_msg = pc_strdup("cannot open a circuit to the relay");
    r->fail_soon = evloop_deferred_new(loop, fail_soon_cb, r);
    evloop_deferred_schedule(r->fail_soon);
  }
  return r;
}

void
dir_tunnel_cancel(dir_tunnel_req_t *req)
{
  if (!req || req->done)
    return;
  req->done = 1;
  req_free(req);
}
