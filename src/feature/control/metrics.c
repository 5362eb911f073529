/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c -- the MetricsPort (metrics.h).
 *
 * Design: a tiny HTTP/1.0-style server. A connection from an address the
 * policy rejects is closed at once, before reading anything. Otherwise the
 * request header is read up to METRICS_MAX_REQUEST bytes and
 * METRICS_REQUEST_TIMEOUT_USEC; "GET /metrics" gets 200 and the text, any
 * other path 404, any other method 405, and the connection is closed after
 * the answer (no keep-alive), so each connection costs at most one
 * bounded request and one response. The values are read when the request
 * arrives from the counters the modules already keep (read-only accessors),
 * so the MetricsPort adds no work to relaying.
 */
#include "feature/control/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/cpuworker.h"
#include "core/or/dos.h"
#include "core/or/edge.h"
#include "core/or/pctcp.h"
#include "core/or/scheduler.h"
#include "feature/btcirc/btcirc.h"
#include "feature/dgram/dgram.h"
#include "feature/dtcp/dtcp.h"
#include "feature/client/client.h"
#include "feature/conflux/conflux.h"
#include "feature/conflux/conflux_set.h"
#include "feature/control/control.h"
#include "feature/control/control_proto.h"
#include "feature/dir/consensus.h"
#include "feature/dircache/dircache.h"
#include "feature/exit/exit_conn.h"
#include "feature/ipsec/broker.h"
#include "feature/measureme/measureme.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/string/strbuf.h"
#include "lib/net/conn.h"

typedef struct {
  int accept;
  int family; /* AF_UNSPEC: any */
  uint8_t addr[16];
  int bits;
} mrule_t;

struct metrics_policy_t {
  int n;
  mrule_t *r;
};

void
metrics_policy_free_(metrics_policy_t *p)
{
  if (!p)
    return;
  free(p->r);
  free(p);
}

static int
parse_rule(const char *rule, mrule_t *out, char **err_out)
{
  memset(out, 0, sizeof(*out));
  while (*rule == ' ' || *rule == '\t')
    rule++;
  if (!strncasecmp(rule, "accept", 6) && (rule[6] == ' ' || rule[6] == '\t'))
    out->accept = 1;
  else if (!strncasecmp(rule, "reject", 6) &&
           (rule[6] == ' ' || rule[6] == '\t'))
    out->accept = 0;
  else {
    *err_out = pc_asprintf("'%s': a rule is 'accept ADDRESS' or 'reject "
                           "ADDRESS'", rule);
    return -1;
  }
  const char *a = rule + 6;
  while (*a == ' ' || *a == '\t')
    a++;
  char *pat = pc_strdup(a);
  size_t len = strlen(pat);
  while (len && (pat[len - 1] == ' ' || pat[len - 1] == '\t'))
    pat[--len] = '\0';
  /* Drop a port: "ADDR:PORT", "[V6]:PORT", "*:*". */
  char *br = strchr(pat, ']');
  char *colon = br ? strchr(br, ':') : strchr(pat, ':');
  if (colon && (br || strchr(colon + 1, ':') == NULL))
    *colon = '\0';
  char *slash = strchr(pat, '/');
  int bits = -1;
  if (slash) {
    char *end = NULL;
    long b = strtol(slash + 1, &end, 10);
    if (*end || b < 0 || b > 128) {
      *err_out = pc_asprintf("'%s': bad mask", a);
      free(pat);
      return -1;
    }
    bits = (int)b;
    *slash = '\0';
  }
  int r = 0;
  if (!strcmp(pat, "*")) {
    out->family = AF_UNSPEC;
  } else if (!strcmp(pat, "*4") || !strcmp(pat, "*6")) {
    out->family = pat[1] == '4' ? AF_INET : AF_INET6;
  } else {
    char *ip = pat;
    if (ip[0] == '[') {
      ip++;
      char *e = strchr(ip, ']');
      if (e)
        *e = '\0';
    }
    pc_addr_t pa;
    if (pc_addr_parse_ip(&pa, ip, 0) < 0) {
      *err_out = pc_asprintf("'%s' is not an address, *, *4 or *6", a);
      r = -1;
    } else {
      out->family = pa.family;
      memcpy(out->addr, pa.addr, 16);
      int max = pa.family == AF_INET ? 32 : 128;
      out->bits = bits < 0 ? max : bits;
      if (out->bits > max) {
        *err_out = pc_asprintf("'%s': mask longer than the address", a);
        r = -1;
      }
    }
  }
  free(pat);
  return r;
}

metrics_policy_t *
metrics_policy_parse(const char *s, char **err_out)
{
  metrics_policy_t *p = pc_zalloc(sizeof(*p));
  char *copy = pc_strdup(s), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    p->r = pc_realloc(p->r, sizeof(mrule_t) * (size_t)(p->n + 1));
    if (parse_rule(t, &p->r[p->n], err_out) < 0) {
      free(copy);
      metrics_policy_free(p);
      return NULL;
    }
    p->n++;
  }
  free(copy);
  if (p->n == 0) {
    *err_out = pc_strdup("no rule");
    metrics_policy_free(p);
    return NULL;
  }
  return p;
}

int
metrics_policy_check(const char *s, char **err_out)
{
  metrics_policy_t *p = metrics_policy_parse(s, err_out);
  if (!p)
    return -1;
  metrics_policy_free(p);
  return 0;
}

int
metrics_policy_allows(const metrics_policy_t *p, const pc_addr_t *addr)
{
  if (!p)
    return 0;
  for (int i = 0; i < p->n; i++) {
    const mrule_t *r = &p->r[i];
    if (r->family != AF_UNSPEC && r->family != addr->family)
      continue;
    if (r->family != AF_UNSPEC && r->bits > 0) {
      int full = r->bits / 8, rest = r->bits % 8;
      if (memcmp(r->addr, addr->addr, (size_t)full))
        continue;
      if (rest) {
        uint8_t m = (uint8_t)(0xff << (8 - rest));
        if ((r->addr[full] & m) != (addr->addr[full] & m))
          continue;
      }
    }
    return r->accept;
  }
  return 0;
}

int
metrics_parse_port(const char *value, control_listen_t *out, char **err_out)
{
  char *copy = pc_strdup(value), *save = NULL;
  char *port = strtok_r(copy, " \t", &save);
  char *fmt = port ? strtok_r(NULL, " \t", &save) : NULL;
  char *more = fmt ? strtok_r(NULL, " \t", &save) : NULL;
  int r = 0;
  if (!port) {
    memset(out, 0, sizeof(*out));
  } else if ((fmt && strcasecmp(fmt, "prometheus")) || more) {
    *err_out = pc_asprintf("'%s': the only format is prometheus", value);
    r = -1;
  } else if (!strncmp(port, "unix:", 5)) {
    *err_out = pc_strdup("the MetricsPort cannot be a unix socket");
    r = -1;
  } else {
    r = control_parse_listen(port, 0, out, err_out);
  }
  free(copy);
  return r;
}

/* ---- rendering ---- */

static void
head(strbuf_t *b, const char *name, const char *type, const char *help)
{
  strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
one(strbuf_t *b, const char *name, const char *type, const char *help,
    unsigned long long v)
{
  head(b, name, type, help);
  strbuf_addf(b, "%s %llu\n", name, v);
}

/* A counter with one line per reason (label "reason"). */
typedef struct {
  const char *reason;
  uint64_t v;
} by_reason_t;

static void
by_reason(strbuf_t *b, const char *name, const char *help,
          const by_reason_t *r, size_t n)
{
  head(b, name, "counter", help);
  for (size_t i = 0; i < n; i++)
    strbuf_addf(b, "%s{reason=\"%s\"} %llu\n", name, r[i].reason,
                (unsigned long long)r[i].v);
}

typedef struct {
  unsigned open[2][2];  /* [outgoing][ipv6] */
  unsigned handshaking;
  unsigned per_circuit;
} conn_count_t;

static void
count_chan(channel_t *chan, void *arg)
{
  conn_count_t *cc = arg;
  if (!channel_is_open(chan)) {
    cc->handshaking++;
    return;
  }
  int v6 = channel_peer_addr(chan)->family == AF_INET6;
  cc->open[channel_is_outgoing(chan) ? 1 : 0][v6]++;
  if (channel_is_per_circuit(chan))
    cc->per_circuit++;
}

/* The daemon's IPsec broker (set at start and reload), or NULL. */
static const ipsec_broker_t *metrics_ipsec;

void
metrics_set_ipsec(const ipsec_broker_t *broker)
{
  metrics_ipsec = broker;
}

static void
render_ipsec_client(strbuf_t *b)
{
  if (metrics_ipsec) {
    ipsec_broker_stats_t is;
    ipsec_broker_get_stats(metrics_ipsec, &is);
    one(b, "pctor_ipsec_peers", "gauge", "IPsec: relays in the peer table",
        is.n_peers);
    one(b, "pctor_ipsec_peers_offering", "gauge",
        "IPsec: peers that offer IPsec", is.n_offering);
    one(b, "pctor_ipsec_sas_up", "gauge",
        "IPsec: peers whose outbound CHILD_SA is installed", is.n_sa_up);
    head(b, "pctor_ipsec_announcements_total", "counter",
         "IPsec: announcements by outcome");
    strbuf_addf(b, "pctor_ipsec_announcements_total{outcome=\"sent\"} %llu\n",
        (unsigned long long)is.announce_sent);
    strbuf_addf(b, "pctor_ipsec_announcements_total{outcome=\"received\"} %llu\n",
        (unsigned long long)is.announce_received);
    strbuf_addf(b, "pctor_ipsec_announcements_total{outcome=\"refused\"} %llu\n",
        (unsigned long long)is.announce_refused);
    one(b, "pctor_ipsec_initiations_total", "counter",
        "IPsec: IKE initiations asked of charon",
        (unsigned long long)is.initiations);
    one(b, "pctor_ipsec_initiation_failures_total", "counter",
        "IPsec: IKE initiations that failed",
        (unsigned long long)is.initiation_failures);
    one(b, "pctor_ipsec_charon_losses_total", "counter",
        "IPsec: times the connection to charon was lost",
        (unsigned long long)is.charon_losses);
    head(b, "pctor_ipsec_extensions_total", "counter",
         "IPsec: PerCircuitTCP extensions by the connection they were "
         "given");
    strbuf_addf(b, "pctor_ipsec_extensions_total{connection=\"ipsec\"} "
        "%llu\n", (unsigned long long)is.verdict_ipsec);
    strbuf_addf(b, "pctor_ipsec_extensions_total{connection=\"plain\"} "
        "%llu\n", (unsigned long long)is.verdict_plain);
    strbuf_addf(b, "pctor_ipsec_extensions_total{connection=\"shared\"} "
        "%llu\n", (unsigned long long)is.verdict_shared);
    one(b, "pctor_ipsec_extensions_shared_waiting_total", "counter",
        "IPsec: extensions that shared a connection to a peer offering "
        "IPsec because no SA with it was usable yet",
        (unsigned long long)is.verdict_shared_waiting);
    one(b, "pctor_ipsec_sa_setups_total", "counter",
        "IPsec: CHILD_SAs installed", (unsigned long long)is.sa_setups);
    one(b, "pctor_ipsec_sa_setup_seconds_total", "counter",
        "IPsec: time from first need to installed SA, summed",
        (unsigned long long)(is.sa_setup_us_total / 1000000));
  }
  client_stats_t cs;
  client_get_stats(&cs);
  one(b, "pctor_client_streams_open", "gauge",
      "Client: SOCKS streams open", cs.n_open_streams);
  head(b, "pctor_client_streams_total", "counter",
       "Client: SOCKS streams by outcome");
  strbuf_addf(b, "pctor_client_streams_total{outcome=\"connected\"} %llu\n",
      (unsigned long long)cs.n_streams_connected);
  strbuf_addf(b, "pctor_client_streams_total{outcome=\"failed\"} %llu\n",
      (unsigned long long)cs.n_streams_failed);
  head(b, "pctor_client_circuits_total", "counter",
       "Client: circuits by outcome");
  strbuf_addf(b, "pctor_client_circuits_total{outcome=\"built\"} %llu\n",
      (unsigned long long)cs.n_circuits_built);
  strbuf_addf(b, "pctor_client_circuits_total{outcome=\"failed\"} %llu\n",
      (unsigned long long)cs.n_circuits_failed);
  one(b, "pctor_client_conflux_sets_total", "counter",
      "Client: conflux sets linked", (unsigned long long)cs.n_conflux_sets);
  one(b, "pctor_client_conflux_relaunches_total", "counter",
      "Client: conflux legs relaunched after failing to link",
      (unsigned long long)cs.n_conflux_relaunches);
  one(b, "pctor_client_stream_timeouts_total", "counter",
      "Client: streams retried on another circuit for no answer to their "
      "BEGIN within CircuitStreamTimeout",
      (unsigned long long)cs.n_stream_timeouts);
  one(b, "pctor_client_conflux_early_ready_total", "counter",
      "Client: conflux sets that took their waiting streams before every "
      "leg linked",
      (unsigned long long)cs.n_conflux_early_ready);
  one(b, "pctor_client_conflux_link_timeouts_total", "counter",
      "Client: conflux legs closed for no CONFLUX_LINKED within the build "
      "timeout",
      (unsigned long long)cs.n_conflux_link_timeouts);
}

char *
metrics_render(void)
{
  strbuf_t b = {0};
  uint64_t r, w;
  conn_get_totals(&r, &w);
  head(&b, "tor_relay_traffic_bytes", "counter", "Traffic related counters");
  strbuf_addf(&b, "tor_relay_traffic_bytes{direction=\"read\"} %llu\n",
      (unsigned long long)r);
  strbuf_addf(&b, "tor_relay_traffic_bytes{direction=\"written\"} %llu\n",
      (unsigned long long)w);

  conn_count_t cc;
  memset(&cc, 0, sizeof(cc));
  channels_foreach(count_chan, &cc);
  head(&b, "tor_relay_connections", "gauge", "Connections metrics");
  static const char *const dir[2] = {"received", "initiated"};
  static const char *const fam[2] = {"ipv4", "ipv6"};
  for (int o = 0; o < 2; o++)
    for (int f = 0; f < 2; f++)
      strbuf_addf(&b, "tor_relay_connections{type=\"OR\",direction=\"%s\","
              "state=\"opened\",family=\"%s\"} %u\n",
          dir[o], fam[f], cc.open[o][f]);

  /* tor's flag gauge: 1 for each flag the consensus gives this relay. */
  uint32_t flags = control_own_flags();
  head(&b, "tor_relay_flag", "gauge", "Relay flags from consensus");
  static const uint32_t flag_bits[] = {
      RS_FLAG_FAST,  RS_FLAG_EXIT,  RS_FLAG_AUTHORITY, RS_FLAG_STABLE,
      RS_FLAG_HSDIR, RS_FLAG_RUNNING, RS_FLAG_V2DIR,   RS_FLAG_SYBIL,
      RS_FLAG_GUARD};
  for (size_t i = 0; i < sizeof(flag_bits) / sizeof(flag_bits[0]); i++)
    strbuf_addf(&b, "tor_relay_flag{type=\"%s\"} %d\n",
                consensus_flag_name(flag_bits[i]),
                (flags & flag_bits[i]) ? 1 : 0);

  exit_stats_t xs;
  exit_get_stats(&xs);
  dircache_stats_t dcs;
  dircache_get_stats(&dcs);
  head(&b, "tor_relay_streams_total", "counter",
       "Total number of streams");
  strbuf_addf(&b, "tor_relay_streams_total{type=\"BEGIN\","
              "direction=\"received\"} %llu\n",
              (unsigned long long)xs.n_begin);
  strbuf_addf(&b, "tor_relay_streams_total{type=\"BEGIN_DIR\","
              "direction=\"received\"} %llu\n",
              (unsigned long long)dcs.n_streams_opened);
  strbuf_addf(&b, "tor_relay_streams_total{type=\"RESOLVE\","
              "direction=\"received\"} %llu\n",
              (unsigned long long)xs.n_resolve);

  /* tor's exit DNS series, reasons named as tor's where they map. */
  uint64_t dns_total = 0;
  for (int i = 0; i < EXIT_DNS_N_RESULTS; i++)
    dns_total += xs.n_dns_by_result[i];
  one(&b, "tor_relay_exit_dns_query_total", "counter",
      "Total number of DNS queries done by this relay", dns_total);
  head(&b, "tor_relay_exit_dns_error_total", "counter",
       "Total number of DNS errors encountered by this relay");
  static const char *const dns_reason[EXIT_DNS_N_RESULTS] = {
      "success", "notexist", "timeout", "serverfailed", "format", "limit",
      "unknown"};
  for (int i = 0; i < EXIT_DNS_N_RESULTS; i++)
    strbuf_addf(&b, "tor_relay_exit_dns_error_total{reason=\"%s\"} %llu\n",
                dns_reason[i], (unsigned long long)xs.n_dns_by_result[i]);

  head(&b, "tor_relay_circuits_total", "gauge", "Total number of circuits");
  strbuf_addf(&b, "tor_relay_circuits_total{state=\"opened\"} %u\n",
      circuits_count(CIRC_KIND_OR));

  circuits_oom_stats_t oom;
  circuits_get_oom_stats(&oom);
  head(&b, "tor_relay_load_oom_bytes_total", "counter",
       "Total number of bytes the OOM has freed by subsystem");
  strbuf_addf(&b, "tor_relay_load_oom_bytes_total{subsys=\"cell\"} %llu\n",
      (unsigned long long)oom.bytes_freed);
  strbuf_addf(&b, "tor_relay_load_oom_bytes_total{subsys=\"dircache\"} "
                  "%llu\n",
              (unsigned long long)oom.cache_bytes_freed);
  one(&b, "pctor_oom_circuits_killed_total", "counter",
      "Circuits closed by the out-of-memory handler",
      (unsigned long long)oom.n_circuits_killed);
  one(&b, "pctor_oom_connections_killed_total", "counter",
      "Connections closed by the out-of-memory handler for their buffers",
      (unsigned long long)oom.n_conns_killed);
  one(&b, "pctor_oom_events_total", "counter",
      "Runs of the out-of-memory handler that closed circuits or "
      "connections",
      (unsigned long long)oom.n_oom_events);
  head(&b, "pctor_memory_budget_bytes", "gauge",
       "Bytes counted against MaxMemInQueues, by holder");
  for (int k = 0; k < MEMACCT_N_KINDS; k++)
    strbuf_addf(&b, "pctor_memory_budget_bytes{holder=\"%s\"} %llu\n",
                memacct_kind_name(k), (unsigned long long)memacct_get(k));
  dos_stats_t ds;
  dos_get_stats(&ds);
  head(&b, "tor_relay_dos_total", "counter",
       "Denial of Service defenses related counters");
  strbuf_addf(&b, "tor_relay_dos_total{type=\"circuit_rejected\"} %llu\n",
              (unsigned long long)ds.cc_circuits_rejected);
  strbuf_addf(&b, "tor_relay_dos_total{type=\"marked_address\"} %llu\n",
              (unsigned long long)ds.cc_marked_addrs);
  strbuf_addf(&b, "tor_relay_dos_total{type=\"conn_rejected\"} %llu\n",
              (unsigned long long)ds.conn_rate_rejected);
  strbuf_addf(&b, "tor_relay_dos_total{type=\"concurrent_conn_rejected\"} "
              "%llu\n", (unsigned long long)ds.conn_concurrent_rejected);
  strbuf_addf(&b, "tor_relay_dos_total{type=\"stream_rejected\"} %llu\n",
              (unsigned long long)ds.stream_rejected);
  strbuf_addf(&b, "tor_relay_dos_total{type=\"single_hop_refused\"} 0\n");
  cpuworker_stats_t cw;
  cpuworker_get_stats(&cw);
  head(&b, "tor_relay_onionskins_total", "counter",
       "Circuit handshakes (ntor and ntor v3) computed by the workers or "
       "dropped for overload");
  strbuf_addf(&b, "tor_relay_onionskins_total{action=\"processed\"} %llu\n",
              (unsigned long long)cw.n_processed);
  strbuf_addf(&b, "tor_relay_onionskins_total{action=\"dropped\"} %llu\n",
              (unsigned long long)cw.n_dropped);
  cc_global_stats_t ccs;
  cc_get_global_stats(&ccs);
  head(&b, "tor_relay_congestion_control_total", "counter",
       "Congestion control related counters");
  strbuf_addf(&b, "tor_relay_congestion_control_total{state=\"starvation\","
              "action=\"rtt_reset\"} %llu\n",
              (unsigned long long)ccs.rtt_resets);
  strbuf_addf(&b, "tor_relay_congestion_control_total{state="
              "\"clock_stalls\",action=\"rtt_skip\"} %llu\n",
              (unsigned long long)ccs.clock_stalls);
  strbuf_addf(&b, "tor_relay_congestion_control_total{state="
              "\"flow_control\",action=\"xoff_num_sent\"} %llu\n",
              (unsigned long long)ccs.xoff_sent);
  strbuf_addf(&b, "tor_relay_congestion_control_total{state="
              "\"flow_control\",action=\"xon_num_sent\"} %llu\n",
              (unsigned long long)ccs.xon_sent);
  one(&b, "pctor_streams_over_buffer_limit_total", "counter",
      "Streams ended because they held too much data they could not pass "
      "on", (unsigned long long)edge_streams_ended_over_pending());

  channel_stats_t cs;
  channels_get_stats(&cs);
  one(&b, "pctor_connections_handshaking", "gauge",
      "Link connections in their TCP, TLS or link handshake",
      cc.handshaking);
  one(&b, "pctor_cells_received_total", "counter",
      "Cells received on link connections",
      (unsigned long long)cs.cells_in);
  one(&b, "pctor_cells_sent_total", "counter",
      "Cells sent on link connections", (unsigned long long)cs.cells_out);
  one(&b, "pctor_origin_circuits", "gauge",
      "Circuits this process built (client role)",
      circuits_count(CIRC_KIND_ORIGIN));

  pctcp_stats_t ps;
  pctcp_get_stats(&ps);
  one(&b, "pctor_pctcp_connections_open", "gauge",
      "PerCircuitTCP: open connections that carry one circuit",
      cc.per_circuit);
  one(&b, "pctor_pctcp_connections_opened_total", "counter",
      "PerCircuitTCP: per-circuit connections opened",
      (unsigned long long)ps.per_circuit_opened);
  one(&b, "pctor_pctcp_spares_opened_total", "counter",
      "PerCircuitTCP: spare connections opened ahead of need",
      (unsigned long long)ps.spares_opened);
  one(&b, "pctor_pctcp_spares_used_total", "counter",
      "PerCircuitTCP: spare connections given to a circuit",
      (unsigned long long)ps.spares_used);
  head(&b, "pctor_pctcp_fallbacks_total", "counter",
       "PerCircuitTCP: extensions that shared a connection instead");
  strbuf_addf(&b, "pctor_pctcp_fallbacks_total{reason=\"limit\"} %llu\n",
      (unsigned long long)ps.shared_over_limit);
  strbuf_addf(&b, "pctor_pctcp_fallbacks_total{reason=\"peer_policy\"} %llu\n",
      (unsigned long long)ps.shared_by_policy);

  const dgram_t *dg = dgram_instance();
  if (dg) {
    dgram_stats_t gs;
    dgram_get_stats(dg, &gs);
    one(&b, "pctor_dgram_links", "gauge",
        "DatagramPort: datagram links (any state)", gs.links);
    one(&b, "pctor_dgram_links_up", "gauge",
        "DatagramPort: authenticated datagram links", gs.links_up);
    head(&b, "pctor_dgram_datagrams_total", "counter",
         "DatagramPort: datagrams by direction");
    strbuf_addf(&b, "pctor_dgram_datagrams_total{direction=\"in\"} %llu\n",
                (unsigned long long)gs.dgrams_in);
    strbuf_addf(&b, "pctor_dgram_datagrams_total{direction=\"out\"} %llu\n",
                (unsigned long long)gs.dgrams_out);
    one(&b, "pctor_dgram_rcvbuf_bytes", "gauge",
        "DatagramPort: the UDP receive buffer the kernel gave",
        (unsigned long long)gs.rcvbuf_bytes);
    const by_reason_t dgd[] = {
        {"receive_buffer_full", gs.dropped_rcvbuf},
        {"no_link", gs.dropped_no_link},
        {"oversize", gs.dropped_oversize},
        {"undecryptable", gs.dropped_dtls},
        {"bad_frame", gs.dropped_frame},
        {"unknown_type", gs.dropped_type},
        {"before_authentication", gs.dropped_early},
    };
    by_reason(&b, "pctor_dgram_dropped_total",
              "DatagramPort: datagrams and records dropped, by reason", dgd,
              sizeof(dgd) / sizeof(dgd[0]));
  }

  const btcirc_t *bt = btcirc_instance();
  if (bt) {
    btcirc_stats_t bs;
    btcirc_get_stats(bt, &bs);
    one(&b, "pctor_backtap_links", "gauge",
        "BackTap: datagram links with a BackTap engine", bs.carry.links);
    one(&b, "pctor_backtap_circuit_hops", "gauge",
        "BackTap: circuit hops carried now", bs.carry.hops);
    head(&b, "pctor_backtap_extensions_total", "counter",
         "CircuitTransport backtap: extensions by the transport they used");
    strbuf_addf(&b, "pctor_backtap_extensions_total{transport=\"backtap\"} "
                "%llu\n", (unsigned long long)bs.carry.ext_carried);
    strbuf_addf(&b, "pctor_backtap_extensions_total{transport=\"tls\"} "
                "%llu\n", (unsigned long long)bs.carry.ext_tls);
    one(&b, "pctor_backtap_extensions_tls_no_port_total", "counter",
        "Extensions over TLS to relays with no DatagramPort known",
        (unsigned long long)bs.carry.ext_tls_no_port);
    one(&b, "pctor_backtap_cells_sent_total", "counter",
        "BackTap: cells sent (first transmissions)",
        (unsigned long long)bs.bt.cells_sent);
    one(&b, "pctor_backtap_cells_retransmitted_total", "counter",
        "BackTap: cells retransmitted",
        (unsigned long long)bs.bt.cells_retransmitted);
    one(&b, "pctor_backtap_cells_received_total", "counter",
        "BackTap: cells received", (unsigned long long)bs.bt.cells_received);
    one(&b, "pctor_backtap_feedback_received_total", "counter",
        "BackTap: ACK/FWD records received",
        (unsigned long long)bs.bt.feedback_received);
    const by_reason_t drops[] = {
        {"malformed", bs.bt.malformed},
        {"unknown_circuit", bs.bt.unknown_flow},
        {"duplicate", bs.bt.duplicate},
        {"out_of_window", bs.bt.out_of_window},
        {"excess", bs.bt.excess_dropped},
        {"forged_feedback", bs.bt.forged_feedback},
        {"stale_feedback", bs.bt.stale_feedback},
    };
    by_reason(&b, "pctor_backtap_dropped_total",
              "BackTap: records dropped without state, by reason", drops,
              sizeof(drops) / sizeof(drops[0]));
  }

  const dtcp_t *dt = dtcp_instance();
  if (dt) {
    dtcp_stats_t ts;
    dtcp_get_stats(dt, &ts);
    one(&b, "pctor_dtcp_links", "gauge",
        "TCP-over-DTLS: datagram links with a user-level TCP peer",
        ts.carry.links);
    one(&b, "pctor_dtcp_circuit_hops", "gauge",
        "TCP-over-DTLS: circuit hops carried now", ts.carry.hops);
    head(&b, "pctor_dtcp_extensions_total", "counter",
         "CircuitTransport dtls-tcp: extensions by the transport they used");
    strbuf_addf(&b, "pctor_dtcp_extensions_total{transport=\"dtls-tcp\"} "
                "%llu\n", (unsigned long long)ts.carry.ext_carried);
    strbuf_addf(&b, "pctor_dtcp_extensions_total{transport=\"tls\"} "
                "%llu\n", (unsigned long long)ts.carry.ext_tls);
    one(&b, "pctor_dtcp_extensions_tls_no_port_total", "counter",
        "Extensions over TLS to relays with no DatagramPort known",
        (unsigned long long)ts.carry.ext_tls_no_port);
    one(&b, "pctor_dtcp_hops_from_peers_total", "counter",
        "TCP-over-DTLS: circuit hops peers opened",
        (unsigned long long)ts.carry.hops_in);
    one(&b, "pctor_dtcp_cells_sent_total", "counter",
        "TCP-over-DTLS: cells written into circuit hops' connections",
        (unsigned long long)ts.cells_sent);
    one(&b, "pctor_dtcp_cells_received_total", "counter",
        "TCP-over-DTLS: cells received from circuit hops' connections",
        (unsigned long long)ts.cells_received);
    head(&b, "pctor_dtcp_segments_total", "counter",
         "TCP-over-DTLS: TCP segments by direction");
    strbuf_addf(&b, "pctor_dtcp_segments_total{direction=\"in\"} %llu\n",
                (unsigned long long)ts.tcp.segs_in);
    strbuf_addf(&b, "pctor_dtcp_segments_total{direction=\"out\"} %llu\n",
                (unsigned long long)ts.tcp.segs_out);
    head(&b, "pctor_dtcp_dropped_total", "counter",
         "TCP-over-DTLS: segments and hops refused, by reason");
    strbuf_addf(&b, "pctor_dtcp_dropped_total{reason=\"malformed\"} %llu\n",
                (unsigned long long)ts.tcp.dropped_bad);
    strbuf_addf(&b, "pctor_dtcp_dropped_total{reason=\"syn_limit\"} %llu\n",
                (unsigned long long)ts.tcp.dropped_syn_rate);
    strbuf_addf(&b, "pctor_dtcp_dropped_total{reason=\"hop_refused\"} "
                "%llu\n", (unsigned long long)ts.carry.hops_refused);
    strbuf_addf(&b, "pctor_dtcp_dropped_total{reason=\"no_first_cell\"} "
                "%llu\n", (unsigned long long)ts.first_cell_timeouts);
    one(&b, "pctor_dtcp_connections_failed_total", "counter",
        "TCP-over-DTLS: connections reset or timed out",
        (unsigned long long)ts.conn_failed);
    head(&b, "pctor_dtcp_retransmits_total", "counter",
         "TCP-over-DTLS: data segments sent again, and recoveries by kind");
    strbuf_addf(&b, "pctor_dtcp_retransmits_total{kind=\"segment\"} %llu\n",
                (unsigned long long)ts.tcp.retrans);
    strbuf_addf(&b, "pctor_dtcp_retransmits_total{kind=\"timeout\"} %llu\n",
                (unsigned long long)ts.tcp.timeouts);
    strbuf_addf(&b, "pctor_dtcp_retransmits_total{kind=\"fast\"} %llu\n",
                (unsigned long long)ts.tcp.fast_retransmits);
    one(&b, "pctor_dtcp_sndbuf_full_total", "counter",
        "TCP-over-DTLS: times a hop's cell found the send buffer full",
        (unsigned long long)ts.sndbuf_full);
    head(&b, "pctor_dtcp_sndbuf_full_seconds_total", "counter",
         "TCP-over-DTLS: time hops waited for send buffer room");
    strbuf_addf(&b, "pctor_dtcp_sndbuf_full_seconds_total %.3f\n",
                (double)ts.sndbuf_full_us / 1e6);
    one(&b, "pctor_dtcp_held_bytes", "gauge",
        "TCP-over-DTLS: bytes the connections hold (send and reorder queues)",
        (unsigned long long)ts.tcp.mem_bytes);
  }

  scheduler_stats_t ss;
  scheduler_get_stats(&ss);
  one(&b, "pctor_scheduler_runs_total", "counter", "Circuit scheduler runs",
      (unsigned long long)ss.runs);
  one(&b, "pctor_scheduler_cells_total", "counter",
      "Cells the scheduler moved to connections",
      (unsigned long long)ss.cells);
  head(&b, "pctor_scheduler_waits_total", "counter",
       "Times a connection waited, by what it waited for");
  strbuf_addf(&b, "pctor_scheduler_waits_total{for=\"kernel\"} %llu\n",
      (unsigned long long)ss.kernel_limited);
  strbuf_addf(&b, "pctor_scheduler_waits_total{for=\"tokens\"} %llu\n",
      (unsigned long long)ss.token_limited);
  one(&b, "pctor_scheduler_active_connections", "gauge",
      "Connections with queued circuit cells", ss.channels_active);

  conflux_exit_stats_t cx;
  conflux_exit_get_stats(&cx);
  one(&b, "pctor_conflux_sets_open", "gauge",
      "Conflux: linked sets open at this exit", cx.n_open_sets);
  one(&b, "pctor_conflux_sets_total", "counter",
      "Conflux: sets made at this exit", (unsigned long long)cx.n_sets);
  one(&b, "pctor_conflux_legs_linked_total", "counter",
      "Conflux: legs linked at this exit",
      (unsigned long long)cx.n_legs_linked);
  one(&b, "pctor_conflux_link_refused_total", "counter",
      "Conflux: link requests refused", (unsigned long long)cx.n_refused);
  one(&b, "pctor_conflux_switches_total", "counter",
      "Conflux: SWITCH messages sent (leg changes), by clients and exits",
      (unsigned long long)cfx_switches_total());
  one(&b, "pctor_conflux_ooo_full_total", "counter",
      "Conflux: sets closed because the out-of-order queue was full",
      (unsigned long long)cx.n_ooo_full);

  one(&b, "pctor_measureme_circuits", "gauge",
      "MeasureMe: circuits being measured", measureme_n_active());
  one(&b, "pctor_measureme_records_total", "counter",
      "MeasureMe: records written", (unsigned long long)measureme_n_records());
  one(&b, "pctor_measureme_answers_total", "counter",
      "MeasureMe: answer cells sent back to the clients that asked",
      (unsigned long long)measureme_n_answers());
  measureme_stats_t mm;
  measureme_get_stats(&mm);
  head(&b, "pctor_measureme_requests_total", "counter",
       "MeasureMe: requests by what became of them");
  for (int i = 0; i < MEASUREME_N_RESULTS; i++)
    strbuf_addf(&b, "pctor_measureme_requests_total{result=\"%s\"} %llu\n",
                measureme_result_name((unsigned)i),
                (unsigned long long)mm.n_by_result[i]);
  render_ipsec_client(&b);
  return b.s;
}

/* ---- server ---- */

typedef struct mconn_t {
  conn_t *conn;
  evloop_timer_t *timer;
  struct mconn_t *next;
} mconn_t;

static struct {
  evloop_t *loop;
  listener_t *l;
  metrics_policy_t *policy;
  mconn_t *conns;
  unsigned n;
  char addr[PC_ADDR_STR_LEN];
} M;

static void
mconn_free(mconn_t *mc, int flush)
{
  for (mconn_t **pp = &M.conns; *pp; pp = &(*pp)->next)
    if (*pp == mc) {
      *pp = mc->next;
      break;
    }
  M.n--;
  evloop_timer_free(mc->timer);
  conn_close(mc->conn, flush);
  free(mc);
}

static void
mconn_timeout(void *arg)
{
  mconn_free(arg, 0);
}

static void
respond(mconn_t *mc, const char *status, const char *ctype,
        const char *body)
{
  char *hdr = pc_asprintf("HTTP/1.0 %s\r\nContent-Type: %s\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          status, ctype, strlen(body));
  buf_add(conn_outbuf(mc->conn), hdr, strlen(hdr));
  buf_add(conn_outbuf(mc->conn), body, strlen(body));
  free(hdr);
  mconn_free(mc, 1);
}

static void
mconn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  mconn_t *mc = arg;
  if (ev == CONN_EV_EOF || ev == CONN_EV_ERROR) {
    mconn_free(mc, 0);
    return;
  }
  if (ev != CONN_EV_DATA)
    return;
  buf_t *in = conn_inbuf(c);
  long end = buf_find(in, "\r\n\r\n", 4);
  if (end < 0)
    end = buf_find(in, "\n\n", 2);
  if (end < 0) {
    if (buf_datalen(in) > METRICS_MAX_REQUEST)
      respond(mc, "431 Request Header Fields Too Large", "text/plain",
              "request too large\n");
    return;
  }
  size_t n = buf_datalen(in);
  if (n > METRICS_MAX_REQUEST)
    n = METRICS_MAX_REQUEST;
  char *req = pc_malloc(n + 1);
  buf_peek(in, req, n);
  req[n] = '\0';
  char *sp1 = strchr(req, ' ');
  char *sp2 = sp1 ? strpbrk(sp1 + 1, " \r\n") : NULL;
  if (!sp1 || !sp2) {
    respond(mc, "400 Bad Request", "text/plain", "bad request\n");
  } else if (strncmp(req, "GET ", 4)) {
    respond(mc, "405 Method Not Allowed", "text/plain", "GET only\n");
  } else {
    *sp2 = '\0';
    const char *path = sp1 + 1;
    if (!strcmp(path, "/metrics") || !strncmp(path, "/metrics?", 9)) {
      char *body = metrics_render();
      respond(mc, "200 OK", "text/plain; version=0.0.4; charset=utf-8",
              body);
      free(body);
    } else {
      respond(mc, "404 Not Found", "text/plain", "try /metrics\n");
    }
  }
  free(req);
}

static void
maccept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  char a[PC_ADDR_STR_LEN];
  if (!metrics_policy_allows(M.policy, peer)) {
    log_info("MetricsPort: %s is not allowed by MetricsPortPolicy",
             pc_addr_fmt(peer, a, sizeof(a), 0));
    close(fd);
    return;
  }
  if (M.n >= METRICS_MAX_CONNECTIONS) {
    log_info("MetricsPort: too many connections; closing a new one");
    close(fd);
    return;
  }
  mconn_t *mc = pc_zalloc(sizeof(*mc));
  mc->conn = conn_new_accepted(M.loop, NULL, fd, peer, mconn_cb, mc);
  conn_set_buckets(mc->conn, NULL, NULL);
  conn_set_counted(mc->conn, 0);
  mc->timer = evloop_timer_new(M.loop, mconn_timeout, mc);
  evloop_timer_schedule(mc->timer, METRICS_REQUEST_TIMEOUT_USEC);
  mc->next = M.conns;
  M.conns = mc;
  M.n++;
}

void
metrics_set_policy(const char *policy)
{
  char *err = NULL;
  metrics_policy_free(M.policy);
  if (policy) {
    M.policy = metrics_policy_parse(policy, &err);
    if (!M.policy) {
      log_warn("MetricsPortPolicy: %s; rejecting everyone", err);
      free(err);
    }
  }
}

int
metrics_start(evloop_t *loop, const control_listen_t *port,
              const char *policy, char **err_out)
{
  memset(&M, 0, sizeof(M));
  M.loop = loop;
  if (port->kind != CONTROL_LISTEN_TCP)
    return 0;
  metrics_set_policy(policy);
  const char *e = NULL;
  M.l = listener_new(loop, &port->addr, maccept_cb, NULL, &e);
  char a[PC_ADDR_STR_LEN];
  if (!M.l) {
    *err_out = pc_asprintf("Could not bind MetricsPort %s: %s",
                           pc_addr_fmt(&port->addr, a, sizeof(a), 1),
                           e ? e : "?");
    return -1;
  }
  pc_addr_fmt(listener_addr(M.l), M.addr, sizeof(M.addr), 1);
  log_notice("Opened Metrics listener on %s%s", M.addr,
             M.policy ? "" : " (no MetricsPortPolicy: every request is "
                             "rejected)");
  return 0;
}

void
metrics_shutdown(void)
{
  metrics_ipsec = NULL;
  while (M.conns)
    mconn_free(M.conns, 0);
  listener_free(M.l);
  metrics_policy_free(M.policy);
  memset(&M, 0, sizeof(M));
}

const char *
metrics_listen_address(void)
{
  return M.l ? M.addr : NULL;
}
