/* SPDX-License-Identifier: BSD-3-Clause */
/* client_resolve.c -- name lookups through the exit: SOCKS RESOLVE and
 * RESOLVE_PTR (tor's SOCKS extensions 0xF0/0xF1, as tor-resolve sends
 * them) and a controller's RESOLVE (control-spec 3.21).
 *
 * Design:
 *  - A lookup is a cstream_t like a CONNECT (it takes a circuit from the
 *    pool, is retried once when its circuit closes first, reports STREAM
 *    events with PURPOSE=DNS_REQUEST), but sends RELAY_RESOLVE (the name,
 *    or the in-addr.arpa / ip6.arpa name of an address for a reverse
 *    lookup) and ends with the exit's RELAY_RESOLVED (tor-spec 6.4): its
 *    own stream ops (resolve_stream_ops) take RESOLVED and END.
 *  - A controller's lookup has no SOCKS connection (cs->conn is NULL).
 *  - Every answer and every failure is told to the resolve observer
 *    (control: ADDRMAP events), as tor reports its lookups.
 *  - An IP literal asked for by RESOLVE is answered at once, without a
 *    circuit, as tor does; so is a name MAPADDRESS maps to one.
 *  - The pool chooses a circuit for a lookup as for a stream to port 80
 *    (an exit that serves the web surely resolves names); ExitNodes
 *    pinned as for CONNECT.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "feature/client/client_internal.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

/* Answers from RESOLVED, tor-spec 6.4. */
#define ANSWER_HOSTNAME 0x00
#define ANSWER_IPV4 0x04
#define ANSWER_IPV6 0x06
#define ANSWER_ERR_TRANSIENT 0xF0
#define ANSWER_ERR_NONTRANSIENT 0xF1

static client_resolve_observer_fn observer;
static void *observer_arg;

int
client_set_resolve_observer(client_resolve_observer_fn fn, void *arg)
{
  if (fn && observer && (fn != observer || arg != observer_arg)) {
    log_warn("A second observer of the client's lookups was refused: one "
             "is registered already");
    return -1;
  }
  observer = fn;
  observer_arg = fn ? arg : NULL;
  return 0;
}

int
client_stream_is_resolve(const cstream_t *cs)
{
  return cs->req.command == SOCKS_CMD_RESOLVE ||
         cs->req.command == SOCKS_CMD_RESOLVE_PTR;
}

/* Tell the observer once: answer (NULL on failure, with error). */
static void
report(cstream_t *cs, const char *answer, const char *error, uint32_t ttl)
{
  if (cs->resolve_reported)
    return;
  cs->resolve_reported = 1;
  if (!observer)
    return;
  client_resolve_result_t r;
  memset(&r, 0, sizeof(r));
  r.address = cs->req.address;
  r.reverse = cs->req.command == SOCKS_CMD_RESOLVE_PTR;
  r.answer = answer;
  r.error = error;
  r.ttl = ttl;
  r.stream_id = cs->gid;
  observer(&r, observer_arg);
}

void
client_resolve_freeing(cstream_t *cs)
{
  if (client_stream_is_resolve(cs))
    report(cs, NULL, "no answer", 0);
}

/* The SOCKS answer for a lookup: atyp and the address bytes (4, 16, or a
 * hostname). */
static void
socks_answer(cstream_t *cs, uint8_t atyp, const uint8_t *addr, size_t len)
{
  if (!cs->conn)
    return;
  uint8_t out[SOCKS5_REPLY_MAX];
  ssize_t n;
  if (cs->req.version == 4) {
    if (atyp != SOCKS_ATYP_IPV4)
      n = socks4_reply_encode(out, sizeof(out), SOCKS4_REJECTED, 0, 0);
    else
      n = socks4_reply_encode(out, sizeof(out), SOCKS4_GRANTED,
                              ((uint32_t)addr[0] << 24) |
                                  ((uint32_t)addr[1] << 16) |
                                  ((uint32_t)addr[2] << 8) | addr[3],
                              0);
  } else {
    n = socks5_reply_encode(out, sizeof(out), SOCKS5_SUCCEEDED, atyp, addr,
                            len, 0);
  }
  if (n > 0) {
    buf_add(conn_outbuf(cs->conn), out, (size_t)n);
    conn_flush_soon(cs->conn);
  }
}

/* A lookup answered: SOCKS reply, observer, free. text is the answer as
 * the controller sees it. */
static void
resolved_ok(cstream_t *cs, uint8_t atyp, const uint8_t *addr, size_t len,
            const char *text, uint32_t ttl)
{
  client_g.stats.n_streams_connected++;
  socks_answer(cs, atyp, addr, len);
  report(cs, text, NULL, ttl);
  log_info("Lookup of %s answered: %s", cs->req.address, text);
  socks_stream_report(cs, CLIENT_STREAM_SUCCEEDED);
  cs->es = NULL; /* the edge keeps a half-closed record */
  socks_stream_free(cs);
}

/* A new RESOLVE of an IP literal: reported (NEWRESOLVE) and answered at
 * once. Returns 1 if so (cs is gone), else 0. */
static int
resolve_local(cstream_t *cs)
{
  if (cs->req.command != SOCKS_CMD_RESOLVE || cs->gid)
    return 0;
  uint8_t a[16], atyp;
  size_t len;
  if (inet_pton(AF_INET, cs->req.address, a) == 1) {
    atyp = SOCKS_ATYP_IPV4;
    len = 4;
  } else if (inet_pton(AF_INET6, cs->req.address, a) == 1) {
    atyp = SOCKS_ATYP_IPV6;
    len = 16;
  } else {
    return 0;
  }
  socks_stream_report(cs, CLIENT_STREAM_NEWRESOLVE);
  resolved_ok(cs, atyp, a, len, cs->req.address, 0);
  return 1;
}

static uint32_t
get_u32(const uint8_t *p)
{
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | p[3];
}

static void
resolve_on_resolved(edge_stream_t *s, const uint8_t *body, size_t len,
                    void *arg)
{
  (void)s;
  cstream_t *cs = arg;
  int want_name = cs->req.command == SOCKS_CMD_RESOLVE_PTR;
  const uint8_t *best = NULL;
  uint8_t best_type = 0, best_len = 0;
  uint32_t best_ttl = 0;
  int err = -1;
  /* type, length, value, TTL; bounded by the cell body. */
  for (size_t off = 0; off + 2 <= len;) {
    uint8_t type = body[off], vlen = body[off + 1];
    if (off + 2 + (size_t)vlen + 4 > len)
      break; /* truncated: use what was whole */
    const uint8_t *v = body + off + 2;
    uint32_t ttl = get_u32(v + vlen);
    off += 2 + (size_t)vlen + 4;
    if (type == ANSWER_ERR_TRANSIENT || type == ANSWER_ERR_NONTRANSIENT) {
      err = type;
      continue;
    }
    int ok = want_name ? type == ANSWER_HOSTNAME && vlen > 0
                       : (type == ANSWER_IPV4 && vlen == 4) ||
                             (type == ANSWER_IPV6 && vlen == 16);
    /* IPv4 first, as tor's SOCKS answers. */
    if (ok && (!best || (best_type == ANSWER_IPV6 && type == ANSWER_IPV4))) {
      best = v;
      best_type = type;
      best_len = vlen;
      best_ttl = ttl;
    }
  }
  if (!best) {
    const char *why = err == ANSWER_ERR_TRANSIENT ? "transient error"
                      : err >= 0                  ? "no such name"
                                                  : "no usable answer";
    log_info("Lookup of %s failed at the exit: %s", cs->req.address, why);
    report(cs, NULL, why, 0);
    cs->es = NULL;
    socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED, why);
    return;
  }
  char text[256];
  if (best_type == ANSWER_HOSTNAME) {
    size_t n = best_len; /* < 256 = sizeof(text) */
    memcpy(text, best, n);
    text[n] = 0;
    if (!socks_hostname_is_valid(text, n)) {
      report(cs, NULL, "malformed name", 0);
      cs->es = NULL;
      socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED,
                        "the exit answered a malformed name");
      return;
    }
    resolved_ok(cs, SOCKS_ATYP_HOSTNAME, best, n, text, best_ttl);
    return;
  }
  inet_ntop(best_type == ANSWER_IPV4 ? AF_INET : AF_INET6, best, text,
            sizeof(text));
  resolved_ok(cs,
              best_type == ANSWER_IPV4 ? SOCKS_ATYP_IPV4 : SOCKS_ATYP_IPV6,
              best, best_len, text, best_ttl);
}

static void
resolve_on_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  cstream_t *cs = arg;
  cs->end_remote = reason != END_STREAM_REASON_DESTROY;
  cs->es = NULL; /* freed by the edge right after this */
  char why[64];
  snprintf(why, sizeof(why), "ended by the exit (reason %u)", reason);
  report(cs, NULL, why, 0);
  socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED, why);
}

static const edge_stream_ops_t resolve_stream_ops = {
    .on_end = resolve_on_end,
    .on_resolved = resolve_on_resolved,
};

/* The name a reverse lookup asks for: "d.c.b.a.in-addr.arpa" or the
 * nibbles of an IPv6 address under ip6.arpa. */
static int
reverse_name(const char *address, char *out, size_t outlen)
{
  uint8_t a[16];
  if (inet_pton(AF_INET, address, a) == 1)
    return snprintf(out, outlen, "%u.%u.%u.%u.in-addr.arpa", a[3], a[2],
                    a[1], a[0]) < (int)outlen
               ? 0
               : -1;
  if (inet_pton(AF_INET6, address, a) != 1 || outlen < 64 + 9)
    return -1;
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  for (int i = 15; i >= 0; i--) {
    out[n++] = hex[a[i] & 15];
    out[n++] = '.';
    out[n++] = hex[a[i] >> 4];
    out[n++] = '.';
  }
  memcpy(out + n, "ip6.arpa", 9);
  return 0;
}

void
client_resolve_send(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  cs->es = edge_stream_new_next(cc->edge, &resolve_stream_ops, cs);
  if (!cs->es) {
    socks_stream_fail(cs, END_STREAM_REASON_RESOURCELIMIT,
                      "no free stream ID on the circuit");
    return;
  }
  char name[SOCKS_MAX_HOSTNAME + 16];
  if (cs->req.command == SOCKS_CMD_RESOLVE_PTR) {
    if (reverse_name(cs->req.address, name, sizeof(name)) < 0) {
      socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED,
                        "not an IP address to look up");
      return;
    }
  } else {
    snprintf(name, sizeof(name), "%s", cs->req.address);
  }
  cs->state = CS_CONNECTING;
  cs->begin_us = evloop_now_us(client_g.loop);
  socks_stream_report(cs, CLIENT_STREAM_SENTRESOLVE);
  if (!cc->dirty_since_us)
    cc->dirty_since_us = evloop_now_us(client_g.loop);
  if (edge_stream_send_msg(cs->es, RELAY_COMMAND_RESOLVE,
                           (const uint8_t *)name,
                           (uint16_t)(strlen(name) + 1)) < 0)
    socks_stream_fail(cs, END_STREAM_REASON_INTERNAL,
                      "could not send RESOLVE");
}

int
client_ctl_resolve_check(const char *address, int reverse, char **err_out)
{
  if (!client_g.loop) {
    *err_out = pc_strdup("RESOLVE needs pctor's SocksPort client");
    return 551;
  }
  size_t len = strlen(address);
  uint8_t a[16];
  int is_ip = inet_pton(AF_INET, address, a) == 1 ||
              inet_pton(AF_INET6, address, a) == 1;
  if (reverse ? !is_ip
              : (!is_ip && !socks_hostname_is_valid(address, len))) {
    *err_out = pc_asprintf("Invalid address \"%s\"", address);
    return 512;
  }
  if (len > SOCKS_MAX_HOSTNAME) {
    *err_out = pc_strdup("Address too long");
    return 512;
  }
  return 0;
}

void
client_ctl_resolve(const char *address, int reverse)
{
  char *err = NULL;
  if (client_ctl_resolve_check(address, reverse, &err)) {
    free(err);
    return;
  }
  size_t len = strlen(address);
  cstream_t *cs = pc_zalloc(sizeof(*cs));
  cs->state = CS_SOCKS;
  cs->req.version = 5;
  cs->req.command = reverse ? SOCKS_CMD_RESOLVE_PTR : SOCKS_CMD_RESOLVE;
  cs->req.addr_type = SOCKS_ATYP_HOSTNAME;
  memcpy(cs->req.address, address, len + 1);
  cs->req.addr.family = AF_UNSPEC;
  dlist_node_init(&cs->node);
  client_resolve_start(cs);
}

void
client_resolve_start(cstream_t *cs)
{
  if (client_g.addrmap) {
    int r = addrmap_rewrite(client_g.addrmap, cs->req.address,
                            sizeof(cs->req.address));
    if (r < 0) {
      report(cs, NULL, "address mappings loop", 0);
      socks_stream_fail(cs, END_STREAM_REASON_RESOLVEFAILED,
                        "its address mappings loop or are too long");
      return;
    }
  }
  if (!resolve_local(cs))
    client_stream_attach(cs);
}
