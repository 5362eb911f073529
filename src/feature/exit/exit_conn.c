/* SPDX-License-Identifier: BSD-3-Clause */
/* exit_conn.c -- exit streams (see exit_conn.h).
 *
 * Life of a stream: BEGIN -> (refusals: not an exit, first hop / unknown
 * previous hop, bad address, port 0, IPv4 refused by the flags without
 * IPv6Exit) -> DNS if the address is a name (A, and AAAA with IPv6Exit;
 * the BEGIN's flags and the policy choose the address, as tor's
 * exit_pick_answer) -> exit policy on the resolved address (IPv6 refused
 * without IPv6Exit) -> non-blocking connect (with a timeout) -> CONNECTED
 * carrying the address and a TTL -> DATA both ways -> END. Each refusal or
 * failure is a RELAY_END with tor's reason code. An IP literal is used as
 * given, whatever the flags say (as tor).
 *
 * Back-pressure: bytes from the destination are packaged only as far as the
 * circuit and stream windows allow; when they are closed we stop reading
 * the socket and resume on on_writable. Bytes from the client wait in the
 * socket's output buffer; stream SENDMEs are held back while ten cells or
 * more are waiting there (edge_stream_t pending_bytes), so a slow
 * destination slows the client instead of growing our buffers.
 *
 * Who may open streams, as tor decides (connection_exit_begin_conn):
 *  - never a client on the first hop of its circuit: the previous hop did
 *    not authenticate as a relay on the link, or the circuit was made with
 *    CREATE_FAST. END reason TORPROTOCOL, whatever RefuseUnknownExits says.
 *  - RefuseUnknownExits (1, 0, or auto: the consensus parameter
 *    "refuseunknownexits", default 1): the previous hop must be a relay
 *    the consensus lists, by RSA identity. END reason MISC. Whether a
 *    relay is listed is asked through exit_set_relay_lookup() (the daemon
 *    owns the consensus); with no consensus yet the check is skipped (tor
 *    would refuse; we keep serving until we know better).
 * Only BEGIN is checked (tor lets RESOLVE and BEGIN_DIR through).
 *
 * Memory: what an exit stream holds in its connection's buffers (bytes
 * from the destination waiting for the windows, bytes from the client
 * waiting for the destination) counts in the memory budget as it grows
 * (the connection's buffers are MEMACCT_EXIT_BUF), and is attributed to
 * the circuit for the OOM handler through circuits_add_extra_mem_fn()
 * (with the age of the oldest byte waiting for the destination,
 * circuits_add_extra_age_fn()), summed over the circuit's streams only
 * when the handler asks. A stream ended for memory (the circuit closed by
 * the handler, or END RESOURCELIMIT when it holds EDGE_STREAM_MAX_PENDING
 * bytes) drops its buffers instead of flushing them.
 */
#include "feature/exit/exit_conn.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/net/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXIT_CONN_LOWAT (4 * RELAY_BODY_MAX)
#define EXIT_ADDRPORT_MAX 512

typedef struct exit_conn_t {
  edge_stream_t *stream;
  or_circuit_t *circ;
  uint16_t stream_id;
  uint16_t port;
  char host[256];
  dns_request_t *dns_req;
  conn_t *conn;
  evloop_timer_t *connect_timer;
  pc_addr_t addr;
  uint32_t begin_flags;       /* RELAY_BEGIN_FLAG_* of the BEGIN */
  unsigned connected : 1;
  unsigned eof_pending : 1;   /* destination closed; END after flushing */
  /* When the output buffer last went from empty to holding bytes: the
   * age of its oldest byte at most (MaxMemInQueues orders by it). */
  uint64_t out_since_us;
  dlist_node_t node;
} exit_conn_t;

static struct {
  evloop_t *loop;
  exit_config_t cfg;
  exit_relay_lookup_fn lookup;
  void *lookup_arg;
  dlist_t all;
  exit_stats_t stats;
} X;

void
exit_get_stats(exit_stats_t *out)
{
  *out = X.stats;
}

/* Free everything but the stream (whose owner decides). */
static void
exit_conn_free(exit_conn_t *ec)
{
  if (ec->dns_req)
    dns_request_cancel(ec->dns_req);
  evloop_timer_free(ec->connect_timer);
  if (ec->conn)
    conn_free(ec->conn);
  dlist_remove(&ec->node);
  if (ec->connected)
    X.stats.n_open--;
  free(ec);
}

/* End the stream with reason and free ec. */
static void
exit_conn_end(exit_conn_t *ec, uint8_t reason)
{
  edge_stream_t *s = ec->stream;
  exit_conn_free(ec);
  if (s)
    edge_stream_end(s, reason);
}

/* Package what the destination sent, as far as the windows allow. Returns
 * 1 if ec was freed. */
static int
pump_to_client(exit_conn_t *ec)
{
  buf_t *in = conn_inbuf(ec->conn);
  while (buf_datalen(in)) {
    size_t n = buf_datalen(in);
    if (n > RELAY_BODY_MAX)
      n = RELAY_BODY_MAX;
    const uint8_t *p = buf_pullup(in, n);
    size_t sent = edge_stream_send(ec->stream, p, n);
    buf_drain(in, sent);
    if (sent < n)
      break;
  }
  int drained = buf_datalen(in) == 0;
  conn_set_reading(ec->conn, drained && !ec->eof_pending);
  if (drained && ec->eof_pending) {
    exit_conn_end(ec, END_STREAM_REASON_DONE);
    return 1;
  }
  return 0;
}

static void
send_connected(exit_conn_t *ec)
{
  uint8_t body[25];
  uint16_t len;
  if (ec->addr.family == AF_INET) {
    memcpy(body, ec->addr.addr, 4);
    set_u32(body + 4, 300);
    len = 8;
  } else {
    memset(body, 0, 4);
    body[4] = 6;
    memcpy(body + 5, ec->addr.addr, 16);
    set_u32(body + 21, 300);
    len = 25;
  }
  edge_stream_send_msg(ec->stream, RELAY_COMMAND_CONNECTED, body, len);
}

static void
conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  exit_conn_t *ec = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN:
    evloop_timer_free(ec->connect_timer);
    ec->connected = 1;
    X.stats.n_connected++;
    X.stats.n_open++;
    conn_set_lowat(ec->conn, EXIT_CONN_LOWAT);
    /* No destination in the log: like tor's SafeLogging. */
    log_info("Exit stream %u on circuit %llu connected", ec->stream_id,
             (unsigned long long)relay_stream_circuit(ec->stream)->base.gid);
    send_connected(ec);
    break;
  case CONN_EV_DATA:
    pump_to_client(ec);
    break;
  case CONN_EV_DRAINED:
    edge_stream_flushed(ec->stream);
    break;
  case CONN_EV_EOF:
    ec->eof_pending = 1;
    pump_to_client(ec);
    break;
  case CONN_EV_ERROR:
    if (!ec->connected) {
      X.stats.n_connect_failed++;
      log_info("Exit connection to %s:%u failed: %s", ec->host, ec->port,
               conn_error(c));
      exit_conn_end(ec, END_STREAM_REASON_CONNECTREFUSED);
    } else {
      exit_conn_end(ec, END_STREAM_REASON_CONNRESET);
    }
    break;
  }
}

static void
connect_timeout_cb(void *arg)
{
  exit_conn_t *ec = arg;
  X.stats.n_connect_failed++;
  log_info("Exit connection to %s:%u timed out", ec->host, ec->port);
  exit_conn_end(ec, END_STREAM_REASON_TIMEOUT);
}

/* Whether our policy lets a stream go to addr:port; IPv6 never without
 * IPv6Exit (whatever the policy says, as tor). */
static int
policy_accepts(const pc_addr_t *addr, uint16_t port)
{
  if (addr->family == AF_INET6 && !X.cfg.ipv6_exit)
    return 0;
  return exit_policy_allows(X.cfg.policy, addr, port) ==
         EXIT_POLICY_ACCEPTED;
}

static void
start_connect(exit_conn_t *ec)
{
  ec->addr.port = ec->port;
  if (!policy_accepts(&ec->addr, ec->port)) {
    char a[PC_ADDR_STR_LEN];
    X.stats.n_refused_policy++;
    log_info("Exit policy rejects %s (asked for %s)%s",
             pc_addr_fmt(&ec->addr, a, sizeof(a), 1), ec->host,
             ec->addr.family == AF_INET6 && !X.cfg.ipv6_exit
                 ? " (IPv6 address without IPv6Exit)" : "");
    exit_conn_end(ec, END_STREAM_REASON_EXITPOLICY);
    return;
  }
  const char *err = NULL;
  ec->conn = conn_connect_kind(X.loop, NULL, &ec->addr, CONN_OUT_EXIT,
                               conn_cb, ec, &err);
  if (!ec->conn) {
    X.stats.n_connect_failed++;
    log_info("Cannot connect to %s:%u: %s", ec->host, ec->port,
             err ? err : "?");
    exit_conn_end(ec, END_STREAM_REASON_RESOURCELIMIT);
    return;
  }
  conn_set_memacct(ec->conn, MEMACCT_EXIT_BUF);
  ec->connect_timer = evloop_timer_new(X.loop, connect_timeout_cb, ec);
  evloop_timer_schedule(ec->connect_timer,
                        (uint64_t)X.cfg.connect_timeout * 1000000ULL);
}

/* Count one answer of the resolver (MetricsPort). */
static void
note_dns_result(int result)
{
  int k = -result;
  if (k >= 0 && k < EXIT_DNS_N_RESULTS)
    X.stats.n_dns_by_result[k]++;
}

static void
dns_cb(int result, const dns_answer_t *answers, int n, void *arg)
{
  exit_conn_t *ec = arg;
  ec->dns_req = NULL;
  note_dns_result(result);
  if (result != DNS_RESULT_OK || n < 1) {
    X.stats.n_resolve_failed++;
    log_info("Could not resolve %s: %s", ec->host, dns_result_str(result));
    /* Like tor, every DNS failure (a timeout too) is RESOLVEFAILED, which
     * clients report as "host unreachable". */
    exit_conn_end(ec, END_STREAM_REASON_RESOLVEFAILED);
    return;
  }
  int pick = exit_pick_answer(X.cfg.policy, X.cfg.ipv6_exit,
                              ec->begin_flags, answers, n, ec->port);
  if (pick < 0) {
    X.stats.n_resolve_failed++;
    log_info("%s has no address of the family the stream may use",
             ec->host);
    exit_conn_end(ec, END_STREAM_REASON_RESOLVEFAILED);
    return;
  }
  ec->addr = answers[pick].addr;
  start_connect(ec);
}

/* The first answer of family the policy accepts for port, else the
 * first of family; -1 if there is none. */
static int
first_of_family(const exit_policy_t *policy, const dns_answer_t *answers,
                int n, int family, uint16_t port, int *accepted)
{
  int first = -1;
  *accepted = 0;
  for (int i = 0; i < n; i++) {
    if (answers[i].addr.family != family)
      continue;
    if (first < 0)
      first = i;
    if (policy && exit_policy_allows(policy, &answers[i].addr, port) ==
                      EXIT_POLICY_ACCEPTED) {
      *accepted = 1;
      return i;
    }
  }
  return first;
}

int
exit_pick_answer(const exit_policy_t *policy, int ipv6_exit, uint32_t flags,
                 const dns_answer_t *answers, int n, uint16_t port)
{
  int ok4, ok6;
  int i4 = first_of_family(policy, answers, n, AF_INET, port, &ok4);
  int i6 = first_of_family(policy, answers, n, AF_INET6, port, &ok6);
  int can4 = i4 >= 0 && !(flags & RELAY_BEGIN_FLAG_IPV4_NOT_OK);
  int can6 = i6 >= 0 && (flags & RELAY_BEGIN_FLAG_IPV6_OK) && ipv6_exit;
  int prefer6 = (flags & RELAY_BEGIN_FLAG_IPV6_PREFERRED) != 0;
  int use4;
  if (can4 && can6)
    use4 = ok4 != ok6 ? ok4 : !prefer6;
  else if (can4 || can6)
    use4 = can4;
  else
    use4 = !prefer6;
  return use4 ? i4 : i6;
}

/* ---- stream callbacks --------------------------------------------- */

static void
s_on_data(edge_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  exit_conn_t *ec = arg;
  (void)s;
  if (!ec->conn || !ec->connected) {
    /* tor-spec: data before CONNECTED is a protocol error; we drop it
     * with a log line rather than keep unbounded early data. */
    log_info("DATA before the exit connection opened on stream %u; "
             "dropped",
             ec->stream_id);
    return;
  }
  if (!buf_datalen(conn_outbuf(ec->conn)))
    ec->out_since_us = evloop_now_us(X.loop);
  buf_add(conn_outbuf(ec->conn), data, len);
  conn_flush_soon(ec->conn);
}

static void
s_on_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  exit_conn_t *ec = arg;
  (void)s;
  ec->stream = NULL; /* core frees the stream itself */
  if (ec->conn && ec->connected) {
    /* Write what the client sent before its END, then close; but a
     * circuit closed for memory gives its buffers back at once. */
    conn_t *c = ec->conn;
    int drop = reason == END_STREAM_REASON_RESOURCELIMIT ||
               (reason == END_STREAM_REASON_DESTROY && ec->circ &&
                ec->circ->base.oom_closed);
    ec->conn = NULL;
    conn_close(c, !drop);
  }
  exit_conn_free(ec);
}

static void
s_on_writable(edge_stream_t *s, void *arg)
{
  exit_conn_t *ec = arg;
  (void)s;
  if (ec->conn && ec->connected)
    pump_to_client(ec);
}

static size_t
s_pending(edge_stream_t *s, void *arg)
{
  exit_conn_t *ec = arg;
  (void)s;
  return ec->conn ? buf_datalen(conn_outbuf(ec->conn)) : 0;
}

static const edge_stream_ops_t exit_ops = {.on_data = s_on_data,
                                            .on_end = s_on_end,
                                            .on_writable = s_on_writable,
                                            .pending_bytes = s_pending};

/* Bytes one exit stream holds in its connection's buffers. */
static size_t
ec_buffered(void *arg)
{
  exit_conn_t *ec = arg;
  if (!ec->conn)
    return 0;
  return buf_datalen(conn_inbuf(ec->conn)) +
         buf_datalen(conn_outbuf(ec->conn));
}

/* Since when one exit stream's oldest byte for the destination waits. */
static uint64_t ec_oldest_min;
static size_t
ec_note_oldest(void *arg)
{
  exit_conn_t *ec = arg;
  if (ec->conn && buf_datalen(conn_outbuf(ec->conn)) &&
      ec->out_since_us < ec_oldest_min)
    ec_oldest_min = ec->out_since_us;
  return 0;
}

static uint64_t
exit_circuit_oldest(circuit_t *circ)
{
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  ec_oldest_min = UINT64_MAX;
  if (oc && oc->edge)
    (void)edge_sum_streams(oc->edge, &exit_ops, ec_note_oldest);
  return ec_oldest_min;
}

size_t
exit_circuit_buffered_bytes(circuit_t *circ)
{
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  if (!oc || !oc->edge)
    return 0;
  return edge_sum_streams(oc->edge, &exit_ops, ec_buffered);
}

void
exit_get_buffered(unsigned *n_streams, uint64_t *bytes)
{
  *n_streams = 0;
  *bytes = 0;
  for (dlist_node_t *n = dlist_first(&X.all); n; n = dlist_next(&X.all, n)) {
    exit_conn_t *ec = DLIST_ENTRY(n, exit_conn_t, node);
    (*n_streams)++;
    *bytes += ec_buffered(ec);
  }
}

/* ---- BEGIN / RESOLVE ---------------------------------------------- */

static void
refuse(or_circuit_t *circ, uint16_t stream_id, uint8_t reason,
       const char *why)
{
  log_info("Refusing stream %u on circuit %llu: %s", stream_id,
           (unsigned long long)circ->base.gid, why);
  or_circuit_send_relay(circ, RELAY_COMMAND_END, stream_id, &reason, 1);
}

/* Split "host:port" (host may be "[v6]") from a BEGIN body, and read
 * the FLAGS that may follow its NUL (0 when there are fewer than four
 * bytes after it). */
static int
parse_addrport(const uint8_t *body, size_t len, char *host, size_t hostlen,
               uint16_t *port, uint32_t *flags)
{
  const uint8_t *nul = memchr(body, '\0', len);
  if (!nul || nul == body || (size_t)(nul - body) >= EXIT_ADDRPORT_MAX)
    return -1;
  size_t after = len - (size_t)(nul - body) - 1;
  *flags = after >= 4 ? get_u32(nul + 1) : 0;
  char buf[EXIT_ADDRPORT_MAX];
  memcpy(buf, body, (size_t)(nul - body) + 1);
  char *colon = strrchr(buf, ':');
  if (!colon || colon == buf)
    return -1;
  *colon = '\0';
  char *end = NULL;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 1 || p > 65535)
    return -1;
  *port = (uint16_t)p;
  char *h = buf;
  size_t hl = strlen(h);
  if (h[0] == '[') {
    if (hl < 3 || h[hl - 1] != ']')
      return -1;
    h[hl - 1] = '\0';
    h++;
  }
  if (strlen(h) >= hostlen)
    return -1;
  strcpy(host, h);
  return 0;
}

/* Names that only mean something inside Tor must never reach DNS. */
static int
is_tor_only_name(const char *host)
{
  size_t n = strlen(host);
  return (n >= 6 && !strcasecmp(host + n - 6, ".onion")) ||
         (n >= 5 && !strcasecmp(host + n - 5, ".exit"));
}

static int
prev_hop_is_relay(or_circuit_t *circ)
{
  return !circ->created_fast && circ->p_chan &&
         channel_is_authenticated_relay(circ->p_chan);
}

void
exit_set_relay_lookup(exit_relay_lookup_fn fn, void *arg)
{
  X.lookup = fn;
  X.lookup_arg = arg;
}

/* RefuseUnknownExits: must BEGIN on circ (whose previous hop is a relay)
 * be refused because the consensus does not list that relay? */
static int
prev_hop_unknown(or_circuit_t *circ)
{
  if (!X.cfg.refuse_unknown || !X.lookup)
    return 0;
  const uint8_t *id = channel_peer_rsa_id(circ->p_chan);
  int param = 1;
  int known = id ? X.lookup(id, &param, X.lookup_arg) : 0;
  if (known < 0)
    return 0; /* no consensus yet */
  if (X.cfg.refuse_unknown < 0 && !param)
    return 0; /* auto, and the consensus says not to */
  return !known;
}

static size_t
ec_resolving(void *arg)
{
  const exit_conn_t *ec = arg;
  return ec->dns_req != NULL;
}

/* The limits every BEGIN and RESOLVE passes first: DoSStreamCreation*
 * (core/or/dos), streams per circuit, and (resolves only) names waiting
 * for the resolver per circuit. 0 to go on; 1 when refused (END sent or
 * the circuit closed). */
static int
stream_limits(or_circuit_t *circ, uint16_t stream_id, int resolves)
{
  if (!circ->stream_dos)
    circ->stream_dos = pc_zalloc(sizeof(*circ->stream_dos));
  switch (dos_stream_allowed(circ->stream_dos)) {
  case DOS_STREAM_REFUSE:
    X.stats.n_refused_dos++;
    refuse(circ, stream_id, END_STREAM_REASON_RESOURCELIMIT,
           "the circuit opens streams too fast (DoSStreamCreation*)");
    return 1;
  case DOS_STREAM_CLOSE_CIRC:
    X.stats.n_refused_dos++;
    log_info("Closing circuit %llu: it opens streams too fast "
             "(DoSStreamCreation*)",
             (unsigned long long)circ->base.gid);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_RESOURCELIMIT);
    return 1;
  default:
    break;
  }
  if (circ->edge &&
      edge_n_streams(circ->edge) >= EXIT_MAX_STREAMS_PER_CIRCUIT) {
    X.stats.n_refused_streams_cap++;
    refuse(circ, stream_id, END_STREAM_REASON_RESOURCELIMIT,
           "too many streams open on the circuit");
    return 1;
  }
  if (resolves && circ->edge &&
      edge_sum_streams(circ->edge, &exit_ops, ec_resolving) >=
          EXIT_MAX_DNS_PER_CIRCUIT) {
    X.stats.n_refused_dns_cap++;
    refuse(circ, stream_id, END_STREAM_REASON_RESOURCELIMIT,
           "too many names waiting for the resolver on the circuit");
    return 1;
  }
  return 0;
}

static int
handle_begin(or_circuit_t *circ, const relay_header_t *h, const uint8_t *body,
             int early)
{
  (void)early;
  X.stats.n_begin++;
  if (h->stream_id == 0) {
    log_info("BEGIN with stream ID 0 on circuit %llu",
             (unsigned long long)circ->base.gid);
    return -1;
  }
  if (!X.cfg.policy) {
    refuse(circ, h->stream_id, END_STREAM_REASON_EXITPOLICY,
           "this relay is not an exit");
    return 0;
  }
  if (!prev_hop_is_relay(circ)) {
    refuse(circ, h->stream_id, END_STREAM_REASON_TORPROTOCOL,
           "on the first hop of a circuit (the previous hop is not a "
           "relay)");
    return 0;
  }
  if (prev_hop_unknown(circ)) {
    X.stats.n_refused_unknown++;
    refuse(circ, h->stream_id, END_STREAM_REASON_MISC,
           "the previous hop is not a relay in the consensus "
           "(RefuseUnknownExits)");
    return 0;
  }
  exit_conn_t *ec = pc_zalloc(sizeof(*ec));
  dlist_node_init(&ec->node);
  if (parse_addrport(body, h->length, ec->host, sizeof(ec->host),
                     &ec->port, &ec->begin_flags) < 0) {
    free(ec);
    refuse(circ, h->stream_id, END_STREAM_REASON_TORPROTOCOL,
           "malformed BEGIN address");
    return 0;
  }
  if (!X.cfg.ipv6_exit) {
    /* As tor: no IPv6 to prefer, and nothing for a client that will not
     * take IPv4. */
    ec->begin_flags &= ~(uint32_t)RELAY_BEGIN_FLAG_IPV6_PREFERRED;
    if (ec->begin_flags & RELAY_BEGIN_FLAG_IPV4_NOT_OK) {
      free(ec);
      X.stats.n_refused_policy++;
      refuse(circ, h->stream_id, END_STREAM_REASON_EXITPOLICY,
             "the BEGIN refuses IPv4 and IPv6Exit is 0");
      return 0;
    }
  }
  pc_addr_t literal;
  if (stream_limits(circ, h->stream_id,
                    dns_parse_ip_literal(ec->host, &literal) != 0)) {
    free(ec);
    return 0;
  }
  ec->circ = circ;
  ec->stream_id = h->stream_id;
  ec->stream = relay_stream_new(circ, h->stream_id, &exit_ops, ec);
  if (!ec->stream) {
    free(ec);
    log_info("BEGIN for a stream ID already in use on circuit %llu",
             (unsigned long long)circ->base.gid);
    return -1;
  }
  dlist_insert_tail(&X.all, &ec->node);
  if (dns_parse_ip_literal(ec->host, &ec->addr) == 0) {
    start_connect(ec);
    return 0;
  }
  if (!X.cfg.dns || is_tor_only_name(ec->host)) {
    log_info("Not resolving %s for stream %u", ec->host, ec->stream_id);
    exit_conn_end(ec, END_STREAM_REASON_RESOLVEFAILED);
    return 0;
  }
  ec->dns_req = dns_resolve(X.cfg.dns, ec->host,
                            DNS_WANT_IPV4 |
                                (X.cfg.ipv6_exit ? DNS_WANT_IPV6 : 0),
                            dns_cb, ec);
  return 0;
}

/* RESOLVE: the answer goes back as one RESOLVED cell on the request's
 * stream ID; a stream object ties the request to the circuit so that a
 * circuit closing first cancels the lookup. */
static void
send_resolved(exit_conn_t *ec, int result, const dns_answer_t *answers, int n)
{
  ec->dns_req = NULL;
  uint8_t body[RELAY_BODY_MAX];
  size_t len = 0;
  if (result == DNS_RESULT_OK) {
    for (int i = 0; i < n && len + 2 + 16 + 4 <= sizeof(body); i++) {
      if (answers[i].hostname) { /* a reverse lookup: the name */
        size_t hl = strlen(answers[i].hostname);
        if (hl > 255 || len + 2 + hl + 4 > sizeof(body))
          continue;
        body[len++] = 0x00;
        body[len++] = (uint8_t)hl;
        memcpy(body + len, answers[i].hostname, hl);
        len += hl;
        set_u32(body + len, answers[i].ttl);
        len += 4;
        continue;
      }
      const pc_addr_t *a = &answers[i].addr;
      size_t alen = a->family == AF_INET ? 4 : 16;
      body[len++] = a->family == AF_INET ? 4 : 6;
      body[len++] = (uint8_t)alen;
      memcpy(body + len, a->addr, alen);
      len += alen;
      set_u32(body + len, answers[i].ttl);
      len += 4;
    }
  } else {
    X.stats.n_resolve_failed++;
    body[len++] = dns_result_is_transient(result) ? 0xf0 : 0xf1;
    body[len++] = 0;
    set_u32(body + len, 0);
    len += 4;
  }
  /* The stream's circuit, not ec->circ: a conflux set may have moved its
   * streams to another leg since. */
  or_circuit_send_relay(relay_stream_circuit(ec->stream),
                        RELAY_COMMAND_RESOLVED, ec->stream_id,
                        body, (uint16_t)len);
  edge_stream_t *s = ec->stream;
  exit_conn_free(ec);
  edge_stream_detach(s);
}

static void
resolved_cb(int result, const dns_answer_t *answers, int n, void *arg)
{
  note_dns_result(result);
  send_resolved(arg, result, answers, n);
}

static int
handle_resolve(or_circuit_t *circ, const relay_header_t *h,
               const uint8_t *body, int early)
{
  (void)early;
  X.stats.n_resolve++;
  if (!X.cfg.policy || !X.cfg.dns) {
    refuse(circ, h->stream_id, END_STREAM_REASON_EXITPOLICY,
           "this relay does not resolve names");
    return 0;
  }
  const uint8_t *nul = memchr(body, '\0', h->length);
  if (!nul || nul == body || (size_t)(nul - body) > 255)
    return -1;
  if (is_tor_only_name((const char *)body)) {
    refuse(circ, h->stream_id, END_STREAM_REASON_RESOLVEFAILED,
           "will not resolve .onion/.exit names");
    return 0;
  }
  if (stream_limits(circ, h->stream_id, 1))
    return 0;
  exit_conn_t *ec = pc_zalloc(sizeof(*ec));
  dlist_node_init(&ec->node);
  memcpy(ec->host, body, (size_t)(nul - body) + 1);
  ec->circ = circ;
  ec->stream_id = h->stream_id;
  ec->stream = relay_stream_new(circ, h->stream_id, &exit_ops, ec);
  if (!ec->stream) {
    free(ec);
    return -1;
  }
  dlist_insert_tail(&X.all, &ec->node);
  pc_addr_t rev;
  if (dns_reverse_name_parse(ec->host, &rev) == 0) {
    /* A reverse lookup (PTR). As tor, never for an internal address:
     * that would tell the client about the exit's own network. */
    if (pc_addr_is_private(&rev)) {
      log_info("Refusing a reverse lookup of an internal address on "
               "circuit %llu",
               (unsigned long long)circ->base.gid);
      send_resolved(ec, DNS_RESULT_NOTFOUND, NULL, 0);
      return 0;
    }
    ec->dns_req = dns_resolve_reverse(X.cfg.dns, &rev, resolved_cb, ec);
    return 0;
  }
  /* IPv6 answers only from an IPv6 exit, as tor. */
  ec->dns_req = dns_resolve(X.cfg.dns, ec->host,
                            DNS_WANT_IPV4 |
                                (X.cfg.ipv6_exit ? DNS_WANT_IPV6 : 0),
                            resolved_cb, ec);
  return 0;
}

void
exit_configure(const exit_config_t *cfg)
{
  X.cfg = *cfg;
  if (!X.cfg.connect_timeout)
    X.cfg.connect_timeout = 20;
}

void
exit_init(evloop_t *loop, const exit_config_t *cfg)
{
  memset(&X, 0, sizeof(X));
  X.loop = loop;
  dlist_init(&X.all);
  exit_configure(cfg);
  relay_register_handler(RELAY_COMMAND_BEGIN, handle_begin);
  relay_register_handler(RELAY_COMMAND_RESOLVE, handle_resolve);
  /* Our streams' buffers count in MaxMemInQueues. */
  if (circuits_add_extra_mem_fn(exit_circuit_buffered_bytes) < 0 ||
      circuits_add_extra_age_fn(exit_circuit_oldest) < 0)
    log_warn("Exit stream buffers cannot be counted in MaxMemInQueues: too "
             "many features count memory");
}

void
exit_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&X.all))) {
    exit_conn_t *ec = DLIST_ENTRY(n, exit_conn_t, node);
    exit_conn_end(ec, END_STREAM_REASON_HIBERNATING);
  }
  circuits_remove_extra_mem_fn(exit_circuit_buffered_bytes);
  circuits_remove_extra_age_fn(exit_circuit_oldest);
}
