/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-circtest.c -- build a circuit through given relays and (optionally)
 * fetch a directory document from the last hop over BEGIN_DIR.
 *
 * A test and diagnostic client for the relay core: it speaks the link
 * protocol as a client, builds a 1-8 hop circuit with CREATE_FAST, ntor or
 * ntor v3, opens a directory stream at the last hop, sends an HTTP GET and
 * prints the response. Used by the interop tests against real tor relays.
 *
 *   pctor-circtest [--handshake ntor|ntor3|fast] [--get PATH] [--out FILE]
 *                  [--begin HOST:PORT] [--max-bytes N]
 *                  [--timeout SEC] [--nodes FILE] [-v] HOP [HOP ...]
 *   --begin: open an exit stream (RELAY_BEGIN) to HOST:PORT at the last
 *            hop instead of a directory stream, and GET PATH over it.
 *   --flood N [--flood-hold SEC]: instead of the one stream, open N
 *            streams (stream IDs 1..N, BEGIN to --begin's target or
 *            BEGIN_DIR) at once on the circuit, count how the last hop
 *            answers each (CONNECTED, or END by reason), print
 *            "flood: N streams in T s: C connected, R refused (END
 *            RESOURCELIMIT), O other END" on stdout, keep the circuit and
 *            its streams open SEC more seconds (default 0), and exit 0
 *            when every stream was answered.
 *   --ignore-xoff MIB [--streams N]: a client that ignores XOFF (issue
 *            14): open N streams (default 1, at most 256) with --begin
 *            on a circuit with congestion control (--cc) and send MIB MiB
 *            of DATA on each as fast as the circuit takes it, whatever
 *            XON/XOFF the last hop sends (the cells go straight to the
 *            circuit, past the edge's flow control). Stops when every
 *            stream was ended by the last hop or the circuit was closed,
 *            and prints "xoff-flood: N streams, B bytes sent in T s, X
 *            XOFF ignored: E ended (END RESOURCELIMIT), O ended otherwise,
 *            circuit closed (reason R)|open" on stdout; exits 0 when the
 *            last hop stopped the flood before every byte was sent, 1 when
 *            it took every byte.
 *   --resolve NAME: ask the last hop to resolve NAME (RELAY_RESOLVE) and
 *            print each address of its RESOLVED answer ("resolved A").
 *   --begin-flags N: the BEGIN's FLAGS (tor-spec 6.2: 1 IPv6 ok, 2 IPv4
 *            not ok, 4 IPv6 preferred); without it the BEGIN has none.
 *            The address in the CONNECTED cell is printed.
 *   --cc:    ask the last hop for congestion control (proposal 324: ntor v3
 *            with the CC extension). With --consensus only when the
 *            consensus' cc_alg and the exit's FlowCtrl=2 allow it, with
 *            the consensus' cc_* parameters. When it was negotiated, core
 *            sends and checks the circuit SENDMEs (every sendme_inc
 *            cells) and no stream SENDMEs are sent; the controller's
 *            state is printed at the end.
 *   --consensus DIR --DirAuthority LINE...: instead of HOPs, choose the
 *            path from the consensus cached in DIR (a pctor DataDirectory),
 *            verified against the given authorities, with feature/dir's
 *            bandwidth-weighted path selection; --hops N (default 3),
 *            --exit-port N (0: any exit), --EntryNodes/--MiddleNodes/
 *            --ExitNodes/--ExcludeNodes LIST, --testing (no /16 rule, as
 *            with TestingTorNetwork).
 *   HOP = ADDR:PORT,RSAFP[,ED25519_BASE64[,NTOR_BASE64]]
 *         or pctor:DATADIR@ADDR:PORT (keys read from a pctor relay's
 *         DataDirectory, since pctor publishes no descriptor yet)
 *         or a nickname from --nodes FILE (scripts/pctor-privnet nodes.txt:
 *         "nickname orport dirport rsa_fp ed25519 ntor role", on 127.0.0.1)
 *
 * Exit status: 0 when the circuit was built (and, with --get, the answer
 * was HTTP 200), 1 otherwise, with the reason on stderr.
 */
#include "config.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/edge.h"
#include "core/proto/relay_msg.h"
#include "core/or/congestion_control.h"
#include "feature/client/circbuild.h"
#include "feature/measureme/measureme.h"
#include "feature/dir/dir_client.h"
#include "feature/dir/path.h"
#include "feature/relay/router_keys.h"
#include "tools/common/hopspec.h"
#include "lib/crypt/crypt_init.h"
#include "lib/encoding/base16.h"
#include "lib/bytes/bytes.h"
#include "lib/encoding/base64.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_ID 0x1234

static struct {
  evloop_t *loop;
  circbuild_t *cb;
  const char *get_path;
  const char *out_path;
  const char *begin_target;
  long begin_flags; /* -1: no FLAGS in the BEGIN */
  const char *resolve_name;
  size_t max_response;
  int n_hops;
  int connected;
  int done;
  int ok;
  char *resp;
  size_t resp_len, resp_cap;
  /* The circuit's end at the last hop and our one stream on it: windows,
   * SENDMEs and XON/XOFF are the edge module's. */
  origin_circuit_t *circ;
  edge_t *edge;
  edge_stream_t *stream;
  int want_cc;             /* --cc */
  int cc_from_consensus;   /* decide from the consensus (--consensus) */
  int32_t cc_alg;
  char *exit_protocols;    /* the exit's "pr" line (--consensus) */
  /* --measureme HOP:INTERVAL_MS:LABEL requests, sent once built */
  int n_mm;
  int mm_hop[CIRCUIT_MAX_HOPS];
  measureme_request_t mm_req[CIRCUIT_MAX_HOPS];
  /* --flood: streams 1..flood_n, the first answer of each */
  int flood_n;
  double flood_hold;
  uint8_t *flood_seen;
  int flood_answered, flood_connected, flood_refused, flood_other;
  uint64_t flood_start_us;
  evloop_timer_t *flood_timer;
  /* --ignore-xoff: MiB per stream, streams 1..xf_n */
  double xf_mib;
  int xf_n;
  edge_stream_t **xf_streams; /* NULL once ended */
  uint64_t *xf_sent;
  uint8_t *xf_open;           /* CONNECTED came */
  uint64_t xf_grace_us;       /* all sent: when to give up waiting */
  int xf_connected, xf_ended, xf_ended_limit, xf_xoff, xf_next;
  int xf_circ_reason; /* -1: circuit open */
  uint64_t xf_total;
  evloop_timer_t *xf_timer;
} T;

static void
usage(void)
{
  fprintf(stderr,
          "usage: pctor-circtest [--handshake ntor|ntor3|fast] [--get PATH]\n"
          "                      [--out FILE] [--begin HOST:PORT] [--begin-flags N]\n"
          "                      [--resolve NAME] [--max-bytes N]\n"
          "                      [--timeout SEC] [--nodes FILE] [--cc] [-v]\n"
          "                      [--measureme HOP:INTERVAL_MS:LABEL16HEX]...\n"
          "                      [--flood N [--flood-hold SEC]]\n"
          "                      [--ignore-xoff MIB [--streams N]]\n"
          "                      HOP [HOP ...]\n"
          "HOP = ADDR:PORT,RSAFP[,ED25519_BASE64[,NTOR_BASE64]] or a "
          "nickname from --nodes\n");
}


/* Options for choosing the path from a cached consensus. */
typedef struct consensus_opts_t {
  const char *dir;
  const char *auth_lines[16];
  int n_auths;
  const char *entry, *middle, *exit, *exclude;
  int hops, exit_port, testing;
} consensus_opts_t;

static int
set_routerset(routerset_t **set, const char *list, const char *name)
{
  char *err = NULL;
  if (!list)
    return 0;
  if (routerset_parse(set, list, &err) < 0) {
    fprintf(stderr, "pctor-circtest: %s: %s\n", name, err ? err : "bad list");
    free(err);
    return -1;
  }
  return 0;
}

/* Consensus parameters for cc_params_load(). */
static int32_t
cc_lookup(void *arg, const char *name, int32_t dflt, int32_t min,
          int32_t max)
{
  return consensus_get_param(arg, name, dflt, min, max);
}

/* Fill hops[] from the consensus; returns the number of hops or -1. */
static int
hops_from_consensus(const consensus_opts_t *co, extend_target_t *hops,
                    evloop_t *loop)
{
  dir_authority_t auths[16];
  for (int i = 0; i < co->n_auths; i++) {
    char *err = NULL;
    const char *v = co->auth_lines[i];
    if (!strncmp(v, "DirAuthority ", 13))
      v += 13;
    if (dir_authority_parse(&auths[i], v, &err) < 0) {
      fprintf(stderr, "pctor-circtest: DirAuthority: %s\n", err);
      free(err);
      return -1;
    }
  }
  dir_client_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.data_dir = co->dir;
  cfg.auths = auths;
  cfg.n_auths = co->n_auths;
  cfg.use_microdescriptors = 1;
  dir_client_t *dc = dir_client_new(loop, &cfg);
  int n = -1;
  path_config_t pc;
  path_config_init(&pc);
  pc.enforce_distinct_subnets = !co->testing;
  if (dir_client_load_cache(dc, time(NULL)) < 1 || !dir_client_nodelist(dc)) {
    fprintf(stderr, "pctor-circtest: no usable consensus in %s (%s)\n",
            co->dir, dir_client_last_error(dc));
    goto out;
  }
  if (set_routerset(&pc.entry_nodes, co->entry, "EntryNodes") < 0 ||
      set_routerset(&pc.middle_nodes, co->middle, "MiddleNodes") < 0 ||
      set_routerset(&pc.exit_nodes, co->exit, "ExitNodes") < 0 ||
      set_routerset(&pc.exclude_nodes, co->exclude, "ExcludeNodes") < 0)
    goto out;
  const dir_node_t *chosen[CIRCUIT_MAX_HOPS];
  path_rng_t rng = path_rng_crypto();
  char *err = NULL;
  if (path_choose(dir_client_nodelist(dc), &pc, co->hops, co->exit_port, NULL,
                  &rng, chosen, &err) < 0) {
    fprintf(stderr, "pctor-circtest: no path: %s\n", err ? err : "?");
    free(err);
    goto out;
  }
  if (T.want_cc) {
    cc_params_t ccp;
    cc_params_load(&ccp, cc_lookup,
                   (void *)dir_client_nodelist(dc)->consensus);
    cc_params_set_current(&ccp);
    T.cc_from_consensus = 1;
    T.cc_alg = ccp.alg;
    const char *pr = chosen[co->hops - 1]->protocols;
    T.exit_protocols = pc_strdup(pr ? pr : "");
  }
  for (int i = 0; i < co->hops; i++) {
    const dir_node_t *nd = chosen[i];
    extend_target_t *t = &hops[i];
    if (!nd->has_ntor) {
      fprintf(stderr, "pctor-circtest: %s has no ntor key\n", nd->nickname);
      goto out;
    }
    dir_node_extend_target(nd, t);
    fprintf(stderr, "pctor-circtest: hop %d: %s $%s\n", i + 1, nd->nickname,
            nd->hex_id);
  }
  n = co->hops;
out:
  path_config_clear(&pc);
  dir_client_free(dc);
  return n;
}

static void
finish(int ok, const char *why)
{
  if (T.done)
    return;
  T.done = 1;
  T.ok = ok;
  if (!ok)
    fprintf(stderr, "pctor-circtest: %s\n", why);
  evloop_exit(T.loop);
}

static void
send_get(void)
{
  char req[512];
  int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", T.get_path);
  if (n >= (int)sizeof(req) - 1)
    n = (int)sizeof(req) - 1;
  if (edge_stream_send(T.stream, (const uint8_t *)req, (size_t)n) <
      (size_t)n)
    finish(0, "could not send the request");
}

/* Parse "HOP:INTERVAL_MS:LABEL" (LABEL: 16 hex digits) into T. */
static int
parse_measureme(const char *spec)
{
  unsigned hop, iv;
  char label[17];
  if (T.n_mm == CIRCUIT_MAX_HOPS ||
      sscanf(spec, "%u:%u:%16[0-9a-fA-F]", &hop, &iv, label) != 3 ||
      strlen(label) != 16 || hop < 1 || hop > CIRCUIT_MAX_HOPS ||
      iv < MEASUREME_MIN_INTERVAL_MS || iv > MEASUREME_MAX_INTERVAL_MS)
    return -1;
  measureme_request_t *r = &T.mm_req[T.n_mm];
  memset(r, 0, sizeof(*r));
  r->interval_ms = (uint16_t)iv;
  if (base16_decode(r->label, 8, label, 16) != 8)
    return -1;
  T.mm_hop[T.n_mm++] = (int)hop;
  return 0;
}

static void write_response(void);

/* ---- the circuit end (edge.h): the last hop of T.circ ------------- */

static int
end_send(void *end, uint8_t command, uint16_t stream_id, const uint8_t *body,
         uint16_t len)
{
  (void)end;
  return origin_circuit_send_relay(T.circ, T.n_hops - 1, command, stream_id,
                                   body, len);
}

static const uint8_t *
end_last_digest(void *end, int sent)
{
  (void)end;
  return relay_crypto_last_digest(T.circ->hops[T.n_hops - 1].crypto,
                                  sent ? RELAY_DIR_FORWARD
                                       : RELAY_DIR_BACKWARD);
}

static const struct cc_t *
end_cc(void *end)
{
  (void)end;
  return origin_circuit_cc(T.circ, T.n_hops - 1);
}

static const edge_end_ops_t end_ops = {
    end_send, end_last_digest, end_cc, NULL, NULL, 1, NULL, NULL, NULL,
};

/* ---- the stream's owner: collects the HTTP response ------------------ */

static void
s_connected(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)body;
  (void)len;
  (void)arg;
  if (T.connected)
    return;
  T.connected = 1;
  /* tor-spec 6.2: IPv4 (4 bytes) or zero, 6, IPv6 (16 bytes); a TTL. */
  char a[64] = "";
  if (len >= 4 && get_u32(body) != 0)
    inet_ntop(AF_INET, body, a, sizeof(a));
  else if (len >= 21 && body[4] == 6)
    inet_ntop(AF_INET6, body + 5, a, sizeof(a));
  if (*a)
    fprintf(stderr, "pctor-circtest: connected to %s\n", a);
  send_get();
}

static void
s_data(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)arg;
  if (T.done)
    return;
  if (T.resp_len + len > T.max_response) {
    finish(0, "response too large");
    return;
  }
  if (T.resp_len + len + 1 > T.resp_cap) {
    /* Grow geometrically: a copy per cell is quadratic in the size. */
    T.resp_cap = T.resp_cap ? 2 * T.resp_cap : 64 * 1024;
    if (T.resp_cap < T.resp_len + len + 1)
      T.resp_cap = T.resp_len + len + 1;
    T.resp = pc_realloc(T.resp, T.resp_cap);
  }
  memcpy(T.resp + T.resp_len, body, len);
  T.resp_len += len;
  T.resp[T.resp_len] = '\0';
}

static void
s_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)arg;
  T.stream = NULL;
  if (T.done)
    return;
  if (!T.connected) {
    char msg[96];
    snprintf(msg, sizeof(msg), "stream refused (END reason %u)", reason);
    finish(0, msg);
    return;
  }
  write_response();
}

/* The response is taken as it comes: nothing is ever pending, so the
 * stream SENDMEs go out every 50 cells and no XOFF is needed. */
/* RESOLVED (tor-spec 6.4): TYPE LEN VALUE TTL, repeated. */
static void
s_resolved(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)arg;
  T.stream = NULL; /* freed after this returns */
  int n = 0;
  for (size_t i = 0; i + 2 <= len;) {
    uint8_t type = body[i], alen = body[i + 1];
    if (i + 2 + alen + 4 > len)
      break;
    char a[64] = "";
    if (type == 4 && alen == 4)
      inet_ntop(AF_INET, body + i + 2, a, sizeof(a));
    else if (type == 6 && alen == 16)
      inet_ntop(AF_INET6, body + i + 2, a, sizeof(a));
    if (*a) {
      fprintf(stderr, "pctor-circtest: resolved %s\n", a);
      n++;
    }
    i += 2 + (size_t)alen + 4;
  }
  finish(n > 0, n > 0 ? NULL : "RESOLVED without an address");
}

static const edge_stream_ops_t stream_ops = {
    .on_data = s_data, .on_end = s_end, .on_connected = s_connected,
    .on_resolved = s_resolved};

/* ---- --flood: many streams at once, each answer counted once ------- */

#define FLOOD_MAX 4000 /* below STREAM_ID */

static void
flood_hold_done(void *arg)
{
  (void)arg;
  finish(1, NULL);
}

static void
flood_answer(void *arg, int connected, uint8_t reason)
{
  uintptr_t i = (uintptr_t)arg;
  if (i < 1 || i > (uintptr_t)T.flood_n || T.flood_seen[i])
    return;
  T.flood_seen[i] = 1;
  if (connected)
    T.flood_connected++;
  else if (reason == END_STREAM_REASON_RESOURCELIMIT)
    T.flood_refused++;
  else
    T.flood_other++;
  if (++T.flood_answered < T.flood_n)
    return;
  double secs = (evloop_now_us(T.loop) - T.flood_start_us) / 1e6;
  printf("flood: %d streams in %.2f s: %d connected, %d refused (END "
         "RESOURCELIMIT), %d other END\n",
         T.flood_n, secs, T.flood_connected, T.flood_refused, T.flood_other);
  fflush(stdout);
  T.flood_timer = evloop_timer_new(T.loop, flood_hold_done, NULL);
  evloop_timer_schedule(T.flood_timer, (uint64_t)(T.flood_hold * 1e6));
}

static void
f_data(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)body;
  (void)len;
  (void)arg;
}

static void
f_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  flood_answer(arg, 0, reason);
}

static void
f_connected(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)body;
  (void)len;
  flood_answer(arg, 1, 0);
}

static const edge_stream_ops_t flood_ops = {
    .on_data = f_data, .on_end = f_end, .on_connected = f_connected};

static void
flood_start(void)
{
  T.flood_seen = pc_zalloc((size_t)T.flood_n + 1);
  T.flood_start_us = evloop_now_us(T.loop);
  for (int i = 1; i <= T.flood_n; i++) {
    edge_stream_t *s = edge_stream_new(T.edge, (uint16_t)i, &flood_ops,
                                       (void *)(uintptr_t)i);
    int r = T.begin_target
                ? edge_stream_send_msg(s, RELAY_COMMAND_BEGIN,
                                       (const uint8_t *)T.begin_target,
                                       (uint16_t)strlen(T.begin_target) + 1)
                : edge_stream_send_msg(s, RELAY_COMMAND_BEGIN_DIR, NULL, 0);
    if (r < 0) {
      finish(0, "could not open a flood stream");
      return;
    }
  }
  fprintf(stderr, "pctor-circtest: sent %d %s cells\n", T.flood_n,
          T.begin_target ? "BEGIN" : "BEGIN_DIR");
}

/* ---- --ignore-xoff: DATA past the edge's flow control ---------------- */

#define XF_MAX_STREAMS 256
#define XF_QUEUE_CELLS 256 /* keep the circuit's queue about this full */

static void
xf_report(void)
{
  double secs = (evloop_now_us(T.loop) - T.flood_start_us) / 1e6;
  char circ[48];
  if (T.xf_circ_reason < 0)
    snprintf(circ, sizeof(circ), "open");
  else
    snprintf(circ, sizeof(circ), "closed (reason %d)", T.xf_circ_reason);
  printf("xoff-flood: %d streams, %llu bytes sent in %.2f s, %d XOFF "
         "ignored: %d ended (END RESOURCELIMIT), %d ended otherwise, "
         "circuit %s\n",
         T.xf_n, (unsigned long long)T.xf_total, secs, T.xf_xoff,
         T.xf_ended_limit, T.xf_ended - T.xf_ended_limit, circ);
  fflush(stdout);
}

static void
xf_tick(void *arg)
{
  (void)arg;
  if (T.done || !T.circ)
    return;
  const uint64_t per_stream = (uint64_t)(T.xf_mib * 1024 * 1024);
  uint8_t body[RELAY_BODY_MAX];
  memset(body, 0x78, sizeof(body));
  int busy = 0;
  /* Round robin over the connected streams that have bytes left. */
  for (int tries = 0; T.circ->base.n_queue.cells.n < XF_QUEUE_CELLS &&
                      tries < T.xf_n;) {
    int i = T.xf_next;
    T.xf_next = (T.xf_next + 1) % T.xf_n;
    if (!T.xf_streams[i] || !T.xf_open[i] || T.xf_sent[i] >= per_stream) {
      tries++;
      continue;
    }
    tries = 0;
    if (origin_circuit_send_relay(T.circ, T.n_hops - 1, RELAY_COMMAND_DATA,
                                  (uint16_t)(i + 1), body,
                                  sizeof(body)) < 0)
      break;
    T.xf_sent[i] += sizeof(body);
    T.xf_total += sizeof(body);
  }
  if (T.xf_ended == T.xf_n) {
    xf_report();
    finish(1, NULL);
    return;
  }
  int left = 0;
  for (int i = 0; i < T.xf_n; i++)
    if (T.xf_streams[i] && (!T.xf_open[i] || T.xf_sent[i] < per_stream))
      left++;
  busy = T.circ->base.n_queue.cells.n > 0;
  if (!left && !busy) {
    /* Everything sent: give the last hop 3 s to end what is left. */
    uint64_t now = evloop_now_us(T.loop);
    if (!T.xf_grace_us)
      T.xf_grace_us = now + 3000000;
    if (now >= T.xf_grace_us) {
      xf_report();
      finish(0, "the last hop took every byte without ending the "
                "streams or the circuit");
      return;
    }
  }
  evloop_timer_schedule(T.xf_timer, 1000);
}

static void
xf_connected(edge_stream_t *s, const uint8_t *body, size_t len, void *arg)
{
  (void)s;
  (void)body;
  (void)len;
  uintptr_t i = (uintptr_t)arg;
  if (i >= (uintptr_t)T.xf_n || T.xf_open[i])
    return;
  T.xf_open[i] = 1;
  if (++T.xf_connected == 1)
    fprintf(stderr, "pctor-circtest: first stream connected; flooding, "
                    "XOFF ignored\n");
}

static void
xf_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  uintptr_t i = (uintptr_t)arg;
  if (i >= (uintptr_t)T.xf_n || !T.xf_streams[i])
    return;
  T.xf_streams[i] = NULL; /* the edge frees it */
  T.xf_ended++;
  if (reason == END_STREAM_REASON_RESOURCELIMIT)
    T.xf_ended_limit++;
  fprintf(stderr, "pctor-circtest: stream %lu ended (END reason %u) after "
                  "%llu bytes sent\n",
          (unsigned long)i + 1, reason,
          (unsigned long long)T.xf_sent[i]);
}

static const edge_stream_ops_t xf_ops = {
    .on_data = f_data, .on_end = xf_end, .on_connected = xf_connected};

static void
xf_start(void)
{
  T.xf_streams = pc_zalloc(sizeof(*T.xf_streams) * (size_t)T.xf_n);
  T.xf_sent = pc_zalloc(sizeof(*T.xf_sent) * (size_t)T.xf_n);
  T.xf_open = pc_zalloc((size_t)T.xf_n);
  T.xf_circ_reason = -1;
  T.flood_start_us = evloop_now_us(T.loop);
  for (int i = 0; i < T.xf_n; i++) {
    T.xf_streams[i] = edge_stream_new(T.edge, (uint16_t)(i + 1), &xf_ops,
                                      (void *)(uintptr_t)i);
    if (edge_stream_send_msg(T.xf_streams[i], RELAY_COMMAND_BEGIN,
                             (const uint8_t *)T.begin_target,
                             (uint16_t)strlen(T.begin_target) + 1) < 0) {
      finish(0, "could not open a stream");
      return;
    }
  }
  T.xf_timer = evloop_timer_new(T.loop, xf_tick, NULL);
  evloop_timer_schedule(T.xf_timer, 1000);
}

static void
built_cb(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  (void)arg;
  fprintf(stderr, "pctor-circtest: circuit of %d hops built in %.1f ms\n",
          T.n_hops, circbuild_build_time_us(cb) / 1000.0);
  for (int i = 0; i < T.n_mm; i++) {
    uint8_t body[MEASUREME_BODY_LEN];
    measureme_request_encode(body, &T.mm_req[i]);
    if (T.mm_hop[i] > T.n_hops ||
        origin_circuit_send_relay(circ, T.mm_hop[i] - 1,
                                  RELAY_COMMAND_MEASUREME, 0, body,
                                  sizeof(body)) < 0) {
      finish(0, "could not send the MeasureMe request");
      return;
    }
    fprintf(stderr, "pctor-circtest: asked hop %d to measure the circuit\n",
            T.mm_hop[i]);
  }
  if (T.flood_n) {
    T.circ = circ;
    T.edge = edge_new(&end_ops, NULL, T.loop);
    flood_start();
    return;
  }
  if (T.xf_n) {
    if (!origin_circuit_cc(circ, T.n_hops - 1)) {
      finish(0, "--ignore-xoff: congestion control was not negotiated "
                "(no XON/XOFF without it)");
      return;
    }
    T.circ = circ;
    T.edge = edge_new(&end_ops, NULL, T.loop);
    xf_start();
    return;
  }
  if (T.resolve_name) {
    T.circ = circ;
    T.edge = edge_new(&end_ops, NULL, T.loop);
    T.stream = edge_stream_new(T.edge, STREAM_ID, &stream_ops, NULL);
    if (edge_stream_send_msg(T.stream, RELAY_COMMAND_RESOLVE,
                             (const uint8_t *)T.resolve_name,
                             (uint16_t)strlen(T.resolve_name) + 1) < 0)
      finish(0, "could not send RESOLVE");
    return;
  }
  if (!T.get_path) {
    finish(1, NULL);
    return;
  }
  int r;
  T.circ = circ;
  T.edge = edge_new(&end_ops, NULL, T.loop);
  T.stream = edge_stream_new(T.edge, STREAM_ID, &stream_ops, NULL);
  if (T.begin_target) {
    /* BEGIN body: "host:port" NUL, then FLAGS if asked for. */
    uint8_t body[RELAY_BODY_MAX];
    size_t n = strlen(T.begin_target) + 1;
    if (n + 4 > sizeof(body)) {
      finish(0, "--begin target too long");
      return;
    }
    memcpy(body, T.begin_target, n);
    if (T.begin_flags >= 0) {
      set_u32(body + n, (uint32_t)T.begin_flags);
      n += 4;
    }
    r = edge_stream_send_msg(T.stream, RELAY_COMMAND_BEGIN, body,
                             (uint16_t)n);
  } else {
    r = edge_stream_send_msg(T.stream, RELAY_COMMAND_BEGIN_DIR, NULL, 0);
  }
  if (r < 0)
    finish(0, "could not open the stream");
}

static void
closed_cb(circbuild_t *cb, int reason, const char *why, void *arg)
{
  (void)cb;
  (void)arg;
  char msg[256];
  snprintf(msg, sizeof(msg), "circuit closed (%s, reason %d)",
           why ? why : "?", reason);
  if (T.xf_streams && !T.done) {
    /* The last hop closed the flood's circuit: that is a way to stop it. */
    T.xf_circ_reason = reason;
    T.circ = NULL;
    fprintf(stderr, "pctor-circtest: %s\n", msg);
    xf_report();
    finish(1, NULL);
    return;
  }
  finish(0, msg);
}

static void
write_response(void)
{
  /* Print the body (after the blank line) to --out or stdout. */
  const char *body = NULL;
  for (size_t i = 0; i + 3 < T.resp_len; i++)
    if (!memcmp(T.resp + i, "\r\n\r\n", 4)) {
      body = T.resp + i + 4;
      break;
    }
  if (!body) {
    finish(0, "response has no HTTP header");
    return;
  }
  if (strncmp(T.resp, "HTTP/1.0 200", 12) && strncmp(T.resp, "HTTP/1.1 200",
                                                      12)) {
    char msg[128];
    snprintf(msg, sizeof(msg), "HTTP error: %.40s", T.resp);
    for (char *p = msg; *p; p++)
      if (*p == '\r' || *p == '\n')
        *p = ' ';
    finish(0, msg);
    return;
  }
  size_t blen = T.resp_len - (size_t)(body - T.resp);
  FILE *f = T.out_path ? fopen(T.out_path, "wb") : stdout;
  if (!f) {
    finish(0, "cannot open output file");
    return;
  }
  fwrite(body, 1, blen, f);
  if (T.out_path)
    fclose(f);
  else
    fflush(stdout);
  fprintf(stderr, "pctor-circtest: fetched %s: %zu bytes\n", T.get_path,
          blen);
  finish(1, NULL);
}

/* A MeasureMe hop's answer: printed (tests read it), never trusted. */
static void
measureme_answer(int hop, const uint8_t *body, uint16_t len)
{
  measureme_answer_t a;
  const char *err = NULL;
  if (measureme_answer_parse(body, len, &a, &err) < 0) {
    fprintf(stderr, "pctor-circtest: MeasureMe answer from hop %d: garbage "
            "(%s)\n", hop, err);
    return;
  }
  char label[17];
  base16_encode(label, sizeof(label), a.label, 8, BASE16_LOWER);
  if (a.type == MEASUREME_ANSWER_STATUS) {
    fprintf(stderr, "pctor-circtest: MeasureMe answer from hop %d: status "
            "%s (label %s)\n", hop, measureme_result_name(a.result), label);
    return;
  }
  uint64_t bwd = 0;
  for (unsigned i = 0; i < a.n_records; i++)
    bwd += a.records[i].cells_bwd;
  fprintf(stderr, "pctor-circtest: MeasureMe answer from hop %d: %u records "
          "seq %u-%u, %llu cells backward (label %s)\n", hop, a.n_records,
          a.records[0].seq, a.records[a.n_records - 1].seq,
          (unsigned long long)bwd, label);
}

static void
relay_cb(circbuild_t *cb, int hop, uint8_t command, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  (void)cb;
  (void)arg;
  if (command == RELAY_COMMAND_MEASUREME_ANSWER && stream_id == 0) {
    measureme_answer(hop + 1, body, len);
    return;
  }
  int ours = T.flood_n  ? stream_id >= 1 && stream_id <= T.flood_n
             : T.xf_n ? stream_id >= 1 && stream_id <= T.xf_n
                      : stream_id == STREAM_ID;
  if (ours && T.xf_n && command == RELAY_COMMAND_XOFF)
    T.xf_xoff++; /* and the edge notes it, which xf_tick does not heed */
  if (!ours || hop != T.n_hops - 1 || !T.edge || T.done) {
    log_info("Ignoring %s from hop %d (stream %u)",
             relay_command_name(command), hop + 1, stream_id);
    return;
  }
  /* With congestion control core counted the DATA cell on the hop. */
  if (command == RELAY_COMMAND_DATA && !edge_is_windowless(T.edge) &&
      edge_data_arrived(T.edge) < 0) {
    finish(0, edge_last_violation(T.edge));
    return;
  }
  if (edge_handle_stream_msg(T.edge, command, stream_id, body, len) < 0)
    finish(0, edge_last_violation(T.edge));
}

static const circbuild_cbs_t cbs = {built_cb, closed_cb, relay_cb};

static void
timeout_cb(void *arg)
{
  (void)arg;
  finish(0, "timed out");
}

int
main(int argc, char **argv)
{
  extend_target_t hops[CIRCUIT_MAX_HOPS];
  const char *handshake = "ntor";
  T.max_response = 64 * 1024 * 1024;
  T.begin_flags = -1;
  consensus_opts_t co;
  memset(&co, 0, sizeof(co));
  co.hops = 3;
  const char *nodes = NULL;
  double timeout = 30;
  int verbose = 0;
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--handshake") && i + 1 < argc)
      handshake = argv[++i];
    else if (!strcmp(a, "--get") && i + 1 < argc)
      T.get_path = argv[++i];
    else if (!strcmp(a, "--out") && i + 1 < argc)
      T.out_path = argv[++i];
    else if (!strcmp(a, "--timeout") && i + 1 < argc)
      timeout = atof(argv[++i]);
    else if (!strcmp(a, "--begin") && i + 1 < argc)
      T.begin_target = argv[++i];
    else if (!strcmp(a, "--resolve") && i + 1 < argc &&
             strlen(argv[i + 1]) < 256)
      T.resolve_name = argv[++i];
    else if (!strcmp(a, "--begin-flags") && i + 1 < argc)
      T.begin_flags = strtol(argv[++i], NULL, 0);
    else if (!strcmp(a, "--max-bytes") && i + 1 < argc)
      T.max_response = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--consensus") && i + 1 < argc)
      co.dir = argv[++i];
    else if (!strcmp(a, "--DirAuthority") && i + 1 < argc && co.n_auths < 16)
      co.auth_lines[co.n_auths++] = argv[++i];
    else if (!strcmp(a, "--EntryNodes") && i + 1 < argc)
      co.entry = argv[++i];
    else if (!strcmp(a, "--MiddleNodes") && i + 1 < argc)
      co.middle = argv[++i];
    else if (!strcmp(a, "--ExitNodes") && i + 1 < argc)
      co.exit = argv[++i];
    else if (!strcmp(a, "--ExcludeNodes") && i + 1 < argc)
      co.exclude = argv[++i];
    else if (!strcmp(a, "--hops") && i + 1 < argc)
      co.hops = atoi(argv[++i]);
    else if (!strcmp(a, "--exit-port") && i + 1 < argc)
      co.exit_port = atoi(argv[++i]);
    else if (!strcmp(a, "--testing"))
      co.testing = 1;
    else if (!strcmp(a, "--nodes") && i + 1 < argc)
      nodes = argv[++i];
    else if (!strcmp(a, "-v"))
      verbose = 1;
    else if (!strcmp(a, "--measureme") && i + 1 < argc) {
      if (parse_measureme(argv[++i]) < 0) {
        fprintf(stderr, "pctor-circtest: --measureme wants "
                        "HOP:INTERVAL_MS(100-60000):LABEL(16 hex digits)\n");
        return 2;
      }
    }
    else if (!strcmp(a, "--cc"))
      T.want_cc = 1;
    else if (!strcmp(a, "--flood") && i + 1 < argc) {
      T.flood_n = atoi(argv[++i]);
      if (T.flood_n < 1 || T.flood_n > FLOOD_MAX) {
        fprintf(stderr, "pctor-circtest: --flood wants 1-%d\n", FLOOD_MAX);
        return 2;
      }
    } else if (!strcmp(a, "--ignore-xoff") && i + 1 < argc) {
      T.xf_mib = atof(argv[++i]);
      if (!(T.xf_mib > 0 && T.xf_mib <= 4096)) {
        fprintf(stderr, "pctor-circtest: --ignore-xoff wants 0-4096 MiB\n");
        return 2;
      }
      if (!T.xf_n)
        T.xf_n = 1;
    } else if (!strcmp(a, "--streams") && i + 1 < argc) {
      T.xf_n = atoi(argv[++i]);
      if (T.xf_n < 1 || T.xf_n > XF_MAX_STREAMS) {
        fprintf(stderr, "pctor-circtest: --streams wants 1-%d\n",
                XF_MAX_STREAMS);
        return 2;
      }
    } else if (!strcmp(a, "--flood-hold") && i + 1 < argc)
      T.flood_hold = atof(argv[++i]);
    else if (!strcmp(a, "--version")) {
      puts("pctor-circtest " PACKAGE_VERSION);
      return 0;
    } else if (a[0] == '-') {
      usage();
      return 2;
    } else {
      break;
    }
  }
  for (; i < argc; i++) {
    if (T.n_hops == CIRCUIT_MAX_HOPS) {
      fprintf(stderr, "pctor-circtest: at most %d hops\n", CIRCUIT_MAX_HOPS);
      return 2;
    }
    extend_target_t *t = &hops[T.n_hops];
    int r = hopspec_parse(t, argv[i], nodes);
    if (r < 0) {
      fprintf(stderr, "pctor-circtest: bad hop '%s'\n", argv[i]);
      return 2;
    }
    T.n_hops++;
  }
  if (co.dir) {
    if (T.n_hops || co.hops < 1 || co.hops > CIRCUIT_MAX_HOPS ||
        !co.n_auths) {
      fprintf(stderr, "pctor-circtest: --consensus needs --DirAuthority "
                      "lines, no HOP arguments, and 1-8 --hops\n");
      return 2;
    }
    evloop_t *tmp = evloop_new();
    T.n_hops = hops_from_consensus(&co, hops, tmp);
    evloop_free(tmp);
    if (T.n_hops < 0)
      return 1;
  }
  if (T.n_hops == 0) {
    usage();
    return 2;
  }
  if (T.xf_n && (!T.xf_mib || !T.begin_target || !T.want_cc || T.flood_n)) {
    fprintf(stderr, "pctor-circtest: --ignore-xoff needs --begin and --cc "
                    "(and not --flood); --streams needs --ignore-xoff\n");
    return 2;
  }
  uint16_t htype;
  if (!strcmp(handshake, "ntor"))
    htype = HTYPE_NTOR;
  else if (!strcmp(handshake, "ntor3"))
    htype = HTYPE_NTOR_V3;
  else if (!strcmp(handshake, "fast"))
    htype = HTYPE_NTOR; /* CREATE_FAST for hop 1, ntor after */
  else {
    usage();
    return 2;
  }
  for (int h = 0; h < T.n_hops; h++) {
    hops[h].handshake = htype;
    if (htype == HTYPE_NTOR_V3 && !hops[h].has_ed_id) {
      fprintf(stderr, "pctor-circtest: ntor3 needs the Ed25519 id of hop "
                      "%d\n",
              h + 1);
      return 2;
    }
  }
  if (!strcmp(handshake, "fast"))
    hops[0].handshake = CIRC_HTYPE_FAST;
  if (T.want_cc) {
    extend_target_t *ex = &hops[T.n_hops - 1];
    int asked;
    if (T.cc_from_consensus) {
      asked = circbuild_exit_request_cc(ex, T.cc_alg, T.exit_protocols);
    } else {
      asked = ex->has_ed_id && ex->handshake != CIRC_HTYPE_FAST;
      if (asked) {
        ex->handshake = HTYPE_NTOR_V3;
        ex->cc_request = 1;
      }
    }
    fprintf(stderr, "pctor-circtest: congestion control %s\n",
            asked ? "requested from the last hop"
                  : "not requested (cc_alg 0, or the exit lacks FlowCtrl=2, "
                    "Relay=4 or an Ed25519 id)");
  }
  if (verbose) {
    char *err = NULL;
    log_parse_destination("info stderr", &err);
    free(err);
  }
  /* A peer closing its socket must not kill us on write. */
  signal(SIGPIPE, SIG_IGN);
  if (crypt_global_init() < 0)
    return 1;
  T.loop = evloop_new();
  channels_init(T.loop, NULL);
  circuits_init();
  evloop_timer_t *to = evloop_timer_new(T.loop, timeout_cb, NULL);
  evloop_timer_schedule(to, (uint64_t)(timeout * 1e6));
  T.cb = circbuild_start(hops, T.n_hops, &cbs, NULL);
  if (!T.cb)
    finish(0, "could not start the circuit");
  else
    evloop_run(T.loop);
  origin_circuit_t *oc = T.cb ? circbuild_circuit(T.cb) : NULL;
  const cc_t *cc = oc ? origin_circuit_cc(oc, T.n_hops - 1) : NULL;
  if (cc) {
    char d[200];
    cc_describe(cc, d, sizeof(d));
    fprintf(stderr, "pctor-circtest: congestion control negotiated: %s\n",
            d);
  } else if (T.want_cc && oc) {
    fprintf(stderr, "pctor-circtest: congestion control not negotiated\n");
  }
  free(T.exit_protocols);
  free(T.flood_seen);
  evloop_timer_free(T.flood_timer);
  evloop_timer_free(T.xf_timer);
  free(T.xf_streams);
  free(T.xf_sent);
  free(T.xf_open);
  edge_free(T.edge);
  circbuild_free(T.cb);
  evloop_timer_free(to);
  /* Channels first: closing them closes their circuits, which the circuit
   * subsystem then frees. */
  channels_shutdown();
  circuits_shutdown();
  packed_cell_freelist_clear();
  evloop_free(T.loop);
  free(T.resp);
  return T.ok ? 0 : 1;
}
