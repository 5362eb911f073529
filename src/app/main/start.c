/* SPDX-License-Identifier: BSD-3-Clause */
/* start.c -- the relay's start-up, reconfiguration and shutdown (start.h).
 *
 * app_start() runs as the invoking user (root for a service): it makes
 * sure DataDirectory exists and is private, loads or creates the keys,
 * brings up the channel and circuit subsystems, registers the relay's
 * relay-command handlers and binds the ORPorts. A timer checks hourly
 * whether the ntor onion key or the certificates are due for rotation.
 * With an IPv4 ORPort it then starts publishing the server descriptor
 * (feature/relay/publish) to the DirAuthority lines' authorities, or to
 * the public network's when there are none; a rotation that changes the
 * descriptor, and SIGHUP, hand the publisher the new state.
 * Everything it creates is released by app_shutdown().
 */
#include "app/main/start.h"
#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/dos.h"
#include "core/or/command.h"
#include "core/or/cpuworker.h"
#include "core/or/dos_options.h"
#include "core/or/edge.h"
#include "core/or/relay.h"
#include "core/or/congestion_control.h"
#include "core/or/pctcp.h"
#include "core/or/scheduler.h"
#include "feature/control/control.h"  /* ControlPort, MetricsPort */
#include "feature/control/metrics.h"
#include "feature/dir/dir_authority.h"
#include "feature/client/client.h"
#include "feature/conflux/conflux.h"
#include "feature/conflux/conflux_options.h"
#include "feature/dir/dir_client.h"
#include "feature/dir/path.h"
#include "feature/dircache/dircache.h"
#include "feature/dircache/dirdocs.h"
#include "feature/dircache/dirport.h"
#include "feature/exit/exit_conn.h"
#include "feature/exit/policy.h"
#include "feature/geoip/geoip.h"
#include "feature/dircache/dirreq_stats.h"
#include "feature/hibernate/hibernate.h"
#include "feature/ipsec/broker.h"
#include "feature/dgram/dgram.h"
#include "feature/dgram/dgram_options.h"
#include "feature/btcirc/btcirc.h"
#include "feature/dtcp/dtcp.h"
#include "feature/ipsec/ipsec_options.h"
#include "feature/measureme/measureme.h"
#include "feature/measureme/measureme_options.h"
#include "feature/relay/extend.h"
#include "feature/relay/family_keys.h"
#include "feature/relay/publish.h"
#include "feature/relay/selftest.h"
#include "feature/relay/router_keys.h"
#include "feature/relay/routerdesc.h"
#include "lib/bytes/bytes.h"
#include "lib/encoding/base16.h"
#include "lib/fs/files.h"
#include "lib/fs/statefile.h"
#include "lib/net/conn.h"
#include "lib/net/ratelimit.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/string/str.h"
#include "lib/utcp/utcp.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#define KEY_CHECK_INTERVAL_USEC (3600ULL * 1000000)

static struct {
  evloop_t *loop;
  relay_keys_t *keys;
  router_keys_config_t keycfg;
  char *key_directory; /* KeyDirectory (keycfg points here), or NULL */
  int lock_fd;         /* DataDirectory/lock, held while running */
  char *data_directory;
  char *nickname;
  statefile_t *state;           /* DataDirectory/state (tor's format) */
  dirreq_stats_t *dirreq;       /* DirReqStatistics; NULL: off */
  evloop_timer_t *key_timer;
  publish_t *pub;
  selftest_t *selftest;         /* AssumeReachable 0: the ORPort test */
  selftest_t *selftest6;        /* ... of the IPv6 ORPort */
  int hold6;                    /* the upload waits for selftest6 */
  const options_t *pub_opts;    /* what configure_publishing last used */
  exit_policy_t *exit_policy;   /* NULL unless ExitRelay 1 */
  char **exit_desc_lines;       /* its accept/reject lines */
  int n_exit_desc_lines;
  char *exit_desc_ipv6;         /* its ipv6-policy summary, or NULL */
  dns_resolver_t *dns;
  dir_client_t *dirc;           /* the relay's own directory fetches */
  dir_client_t *dirc_other;     /* the other flavor, cached for clients */
  dir_authority_t *dirc_auths;
  int n_dirc_auths;
  path_config_t pathcfg;        /* client path restrictions */
  int client_started;
  ratelimit_t *bw_global, *bw_relay;
  scheduler_config_t sched;     /* as applied */
  int halflife_from_consensus;  /* CircuitPriorityHalflife unset */
  uint64_t fd_limit;            /* RLIMIT_NOFILE after raising it */
  ipsec_broker_t *ipsec;        /* IPsec between relays; NULL until used */
  dgram_t *dgram;               /* DatagramPort links; NULL when off */
  btcirc_t *btcirc;             /* BackTap circuits on them; NULL when off */
  dtcp_t *dtcp;                 /* TCP-over-DTLS circuits; NULL when off */
  int ipsec_kernel;             /* kernel IPsec: 0 not probed, 1 yes, 2 no */
  conflux_exit_config_t cfx;    /* conflux at the exit, as applied */
  dos_options_t dos_opts;       /* DoS* as written (0/auto: consensus) */
  evloop_timer_t *heartbeat;    /* HeartbeatPeriod */
  evloop_timer_t *state_timer;  /* writes the state file when due */
  int state_save_interval;      /* __StateSaveInterval, seconds */
  int state_save_failed;        /* a failed write was logged already */
  time_t consensus_reported;    /* valid-after of the last NEWCONSENSUS */
  time_t start_time;
  int started;
  geoip_db_t *geoip; /* GeoIPFile, GeoIPv6File; NULL: none loaded */
  hibernate_t *hib;  /* AccountingMax; NULL when not a relay */
  const options_t *opts; /* the current options */
  /* ORPort and DirPort as listened on: "auto" ports hold the bound port,
   * and the [::] half of a bare ORPort is gone where the host has no
   * IPv6. Set when the listeners first open (ORPort and DirPort cannot
   * change while running); until then the options' own. */
  options_ports_t or_bound, dir_bound;
  int or_is_bound, dir_is_bound;
} A;

static const options_ports_t *
or_ports(const options_t *o)
{
  return A.or_is_bound ? &A.or_bound : &o->or_ports;
}

static const options_ports_t *
dir_ports(const options_t *o)
{
  return A.dir_is_bound ? &A.dir_bound : &o->dir_ports;
}

/* The server descriptor we publish, for BEGIN_DIR requests. */
/* MeasureMe's settings from the options. */
static void
measureme_config(const options_t *o, measureme_config_t *out)
{
  const measureme_options_t *mo = options_module(o, &measureme_conf_module);
  measureme_config_default(out);
  out->enabled = mo->enabled;
  if (mo->log_max_size)
    out->log_max_size = mo->log_max_size;
  out->client_rate = (unsigned)mo->client_rate;
  out->client_burst = (unsigned)mo->client_burst;
  out->garbage_answers = mo->garbage_answers && o->testing_tor_network;
}

static dircache_doc_t *
own_descriptor(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  const char *d = A.pub ? publish_descriptor(A.pub) : NULL;
  if (!d)
    return NULL;
  size_t len = strlen(d);
  return dircache_doc_new(pc_memdup(d, len), len, 0);
}

static void
free_exit_desc_lines(void)
{
  for (int i = 0; i < A.n_exit_desc_lines; i++)
    free(A.exit_desc_lines[i]);
  PC_FREE(A.exit_desc_lines);
  A.n_exit_desc_lines = 0;
  PC_FREE(A.exit_desc_ipv6);
}

/* An info line for every relayed circuit that closes, naming its
 * neighbours, so that a test can follow one circuit across relays. */
static void
log_circuit_close(circuit_t *circ, void *arg)
{
  (void)arg;
  if (circ->kind != CIRC_KIND_OR || !log_is_enabled(LOG_SEV_INFO))
    return;
  or_circuit_t *oc = (or_circuit_t *)circ;
  char prev[128];
  snprintf(prev, sizeof(prev), "%s",
           oc->p_chan ? channel_describe(oc->p_chan) : "none");
  log_info("Relayed circuit %llu closes: previous hop %s, next hop %s",
           (unsigned long long)circ->gid, prev,
           circ->n_chan ? channel_describe(circ->n_chan) : "none");
}

/* RefuseUnknownExits (exit_relay_lookup_fn): is rsa_id in the consensus
 * our directory client holds (either flavor)? -1 without one. */
static int
exit_relay_known(const uint8_t *rsa_id, int *refuse_param, void *arg)
{
  (void)arg;
  const consensus_t *c = A.dirc ? dir_client_consensus(A.dirc) : NULL;
  const consensus_t *c2 =
      A.dirc_other ? dir_client_consensus(A.dirc_other) : NULL;
  if (!c)
    c = c2;
  if (!c)
    return -1;
  *refuse_param = consensus_get_param(c, "refuseunknownexits", 1, 0, 1);
  return consensus_find(c, rsa_id) || (c2 && consensus_find(c2, rsa_id));
}

/* GeoIPFile and GeoIPv6File: a new database with both (when set), which
 * replaces the running one only if every named file loads. strict: a
 * file that does not load fails (start-up); otherwise the old data stays
 * (SIGHUP). Unchanged paths are not read again. Returns 0 or -1. */
static int
configure_geoip(const options_t *o, const options_t *old, int strict)
{
  if (old && str_eq_nullable(o->geoip_file, old->geoip_file) &&
      str_eq_nullable(o->geoip_v6_file, old->geoip_v6_file))
    return 0;
  if (!o->geoip_file && !o->geoip_v6_file) {
    geoip_db_free(A.geoip);
    return 0;
  }
  geoip_db_t *db = geoip_db_new();
  const char *files[2] = {o->geoip_file, o->geoip_v6_file};
  const int fams[2] = {AF_INET, AF_INET6};
  long n[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    if (!files[i])
      continue;
    char *err = NULL;
    n[i] = geoip_db_load(db, fams[i], files[i], &err);
    if (n[i] < 0) {
      if (strict)
        log_err("%s: %s", i ? "GeoIPv6File" : "GeoIPFile", err);
      else
        log_warn("%s: %s; keeping the GeoIP data loaded before.",
                 i ? "GeoIPv6File" : "GeoIPFile", err);
      free(err);
      geoip_db_free(db);
      return -1;
    }
  }
  log_notice("GeoIP data: %ld IPv4 and %ld IPv6 ranges loaded.", n[0],
             n[1]);
  geoip_db_free(A.geoip);
  A.geoip = db;
  return 0;
}

/* OutboundBindAddress, ...OR and ...Exit to lib/net (the option order is
 * the conn_out_kind_t order). */
static void
configure_outbound_binds(const options_t *o)
{
  static const conn_out_kind_t kinds[3] = {CONN_OUT_ANY, CONN_OUT_OR,
                                           CONN_OUT_EXIT};
  conn_clear_outbound_addrs();
  for (int k = 0; k < 3; k++) {
    pc_addr_t a;
    for (int i = 0; options_outbound_addr(o, k, i, &a) == 0; i++) {
      char shown[PC_ADDR_STR_LEN];
      conn_set_outbound_addr(kinds[k], a.family, &a);
      log_info("%s connections originate from %s",
               k == 0 ? "Outgoing" : k == 1 ? "Relay" : "Exit",
               pc_addr_fmt(&a, shown, sizeof(shown), 0));
    }
  }
}

/* The IPv6 ORPort to publish for the advertised IPv6 ORPort a (out stays
 * AF_UNSPEC for none), in tor 0.4.9's order: nothing with
 * AddressDisableIPv6; else the IPv6 address an Address line gives (a
 * literal, or a host name's AAAA), with a's port; else a itself when it
 * names an address; else, for [::] (a bare ORPort listens there too, as
 * in tor), a public IPv6 address of this host's interfaces, or nothing,
 * with a notice once (tor's "Unable to find IPv6 address for ORPort").
 * When the Address lines give two IPv6 addresses, nothing, with a
 * warning (tor then publishes none). */
static void
ipv6_orport_to_advertise(const options_t *o, const pc_addr_t *a,
                         pc_addr_t *out)
{
  static int told, told_disabled;
  pc_addr_t found;
  char *err = NULL;
  if (o->address_disable_ipv6) {
    if (!told_disabled)
      log_info("AddressDisableIPv6 is set: not advertising the IPv6 ORPort "
               "(port %u).", (unsigned)a->port);
    told_disabled = 1;
    return;
  }
  int r = routerdesc_config_address((const char *const *)o->address.v,
                                    o->address.n, AF_INET6, &found, &err);
  if (r < 0) {
    log_warn("Not advertising an IPv6 ORPort: %s.", err);
    free(err);
    return;
  }
  if (r > 0) {
    found.port = a->port;
    *out = found;
  } else if (!pc_is_zero(a->addr, 16)) {
    *out = *a;
  } else if (routerdesc_find_public_ipv6(&found) == 0) {
    found.port = a->port;
    *out = found;
  } else if (!told) {
    told = 1;
    log_notice("Unable to find a public IPv6 address for ORPort %u: "
               "advertising IPv4 only. Give the IPv6 address in an "
               "Address line or in the ORPort line ([ADDRESS]:PORT), or "
               "add IPv4Only to the ORPort line.",
               (unsigned)a->port);
  }
}

/* The IPv6 address to publish (port 0), as the descriptor would carry it:
 * the first advertised IPv6 ORPort's; AF_UNSPEC when there is none. */
static void
ipv6_address_to_publish(const options_t *o, pc_addr_t *out)
{
  pc_addr_t adv[4];
  int n_adv = options_orports_advertised(or_ports(o), adv);
  memset(out, 0, sizeof(*out));
  out->family = AF_UNSPEC;
  for (int i = 0; i < n_adv; i++)
    if (adv[i].family == AF_INET6) {
      ipv6_orport_to_advertise(o, &adv[i], out);
      break;
    }
}

/* Build the exit policy and the resolver for ExitRelay 1 (or drop them for
 * ExitRelay 0) and hand them to feature/exit. Returns 0, or -1 with a log
 * line when the policy or the resolver cannot be made. */
static int
configure_exit(const options_t *o)
{
  exit_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.refuse_unknown = o->refuse_unknown_exits;
  cfg.connect_timeout = 20;
  cfg.ipv6_exit = o->ipv6_exit;
  exit_policy_t *policy = NULL;
  if (o->is_exit) {
    exit_policy_options_t po;
    exit_policy_options_init(&po);
    po.is_exit = 1;
    po.reject_private = o->exit_policy_reject_private;
    po.ipv6_exit = o->ipv6_exit;
    po.reduced = o->reduced_exit_policy;
    po.reject_local_interfaces = o->exit_policy_reject_local_interfaces;
    const options_ports_t *orp = or_ports(o);
    /* Our advertised addresses: the ORPorts' and the Address literals. */
    pc_addr_t ours[6];
    int n_ours = 0;
    for (int i = 0; i < orp->n && i < 4; i++)
      ours[n_ours++] = orp->addrs[i];
    if (o->address_ip.family != AF_UNSPEC)
      ours[n_ours++] = o->address_ip;
    if (o->address_ip6.family != AF_UNSPEC)
      ours[n_ours++] = o->address_ip6;
    po.our_addrs = ours;
    po.n_our_addrs = n_ours;
    /* Local interfaces: our ports' and the outbound bind addresses. */
    pc_addr_t *local = pc_calloc((size_t)orp->n + 6, sizeof(*local));
    int n_local = 0;
    for (int i = 0; i < orp->n; i++)
      local[n_local++] = orp->addrs[i];
    for (int k = 0; k < 3; k++)
      for (int i = 0; n_local < orp->n + 6 &&
                      options_outbound_addr(o, k, i, &local[n_local]) == 0;
           i++)
        n_local++;
    po.local_addrs = local;
    po.n_local_addrs = n_local;
    char *err = NULL;
    policy = exit_policy_parse((const char *const *)o->exit_policy.v,
                               o->exit_policy.n, &po, &err);
    free(local);
    if (!policy) {
      log_err("ExitPolicy: %s", err ? err : "invalid");
      free(err);
      return -1;
    }
    if (!A.dns) {
      A.dns = dns_resolver_new(A.loop, o->server_dns_resolv_conf_file, &err);
      if (!A.dns) {
        log_err("Cannot set up DNS for exit streams: %s", err ? err : "?");
        free(err);
        exit_policy_free(policy);
        return -1;
      }
    }
  }
  cfg.policy = policy;
  cfg.dns = A.dns;
  exit_configure(&cfg);
  exit_policy_free(A.exit_policy);
  A.exit_policy = policy;
  /* The descriptor carries the IPv4 accept/reject lines and, with
   * IPv6Exit 1, the summary of the IPv6 rules (tor writes it only then;
   * without IPv6Exit the policy rejects all IPv6 anyway). */
  free_exit_desc_lines();
  if (policy) {
    char *text = exit_policy_format_descriptor(policy);
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
      if (!strncmp(l, "ipv6-policy ", 12)) {
        if (o->ipv6_exit && !A.exit_desc_ipv6)
          A.exit_desc_ipv6 = pc_strdup(l + 12);
        continue;
      }
      if (strncmp(l, "accept ", 7) && strncmp(l, "reject ", 7))
        continue;
      A.exit_desc_lines = pc_realloc(A.exit_desc_lines,
                                     sizeof(char *) *
                                         (size_t)(A.n_exit_desc_lines + 1));
      A.exit_desc_lines[A.n_exit_desc_lines++] = pc_strdup(l);
    }
    free(text);
    char *summary = exit_policy_summarize(policy, AF_INET);
    log_notice("Exit relay: policy summary \"%s\"%s%s%s", summary,
               o->ipv6_exit ? ", IPv6 \"" : " (IPv6Exit 0: IPv4 only)",
               o->ipv6_exit ? (A.exit_desc_ipv6 ? A.exit_desc_ipv6
                                                : "reject 1-65535")
                            : "",
               o->ipv6_exit ? "\"" : "");
    free(summary);
  }
  return 0;
}

/* Bytes on the wire, for the observed bandwidth: cells on channels times
 * the cell size of link protocols 4 and 5 (TLS overhead not counted). */
static void
traffic_cb(uint64_t *bytes_read, uint64_t *bytes_written)
{
  channel_stats_t st;
  channels_get_stats(&st);
  *bytes_read = st.cells_in * 514;
  *bytes_written = st.cells_out * 514;
}

static int
allow_private(const options_t *o)
{
  return o->extend_allow_private_addresses || o->testing_tor_network;
}

static void
key_timer_cb(void *arg)
{
  (void)arg;
  int rotated = 0;
  if (router_keys_rotate_if_needed(A.keys, A.data_directory, &A.keycfg,
                                   time(NULL), &rotated) < 0) {
    log_warn("Could not rotate keys; will try again in an hour");
    return;
  }
  if (rotated & ROUTER_KEYS_ROTATED_NTOR)
    log_notice("Rotated the ntor onion key; the previous one stays valid "
               "for %d days",
               A.keycfg.onion_key_grace_days);
  if (rotated & ROUTER_KEYS_ROTATED_SIGNING)
    log_notice("Renewed the Ed25519 signing key");
  if ((rotated & ROUTER_KEYS_DESCRIPTOR_CHANGED) && A.pub)
    publish_keys_changed(A.pub);
}

/* The authorities a relay uses: DirAuthority lines, else the public
 * network's, without bridge authorities. New array in *out; returns n. */
static int
relay_authorities(const options_t *o, dir_authority_t **out)
{
  int n_def = 0, n = 0;
  const dir_authority_t *def = NULL;
  if (o->dir_authorities.n == 0)
    def = dir_authority_defaults(&n_def);
  dir_authority_t *a =
      pc_calloc((size_t)(o->dir_authorities.n + n_def + 1), sizeof(*a));
  for (int i = 0; i < o->dir_authorities.n; i++) {
    char *err = NULL;
    if (dir_authority_parse(&a[n], o->dir_authorities.v[i], &err) < 0) {
      /* the options checked every line */
      log_bug("DirAuthority line refused after it was checked: %s", err);
      free(err);
      continue;
    }
    if (!a[n].is_bridge_auth)
      n++;
  }
  for (int i = 0; i < n_def; i++)
    if (!def[i].is_bridge_auth)
      a[n++] = def[i];
  *out = a;
  return n;
}

/* Controllers: STATUS_SERVER ACCEPTED_SERVER_DESCRIPTOR or
 * BAD_SERVER_DESCRIPTOR for each authority's answer, as tor. */
static void
upload_cb(const char *dir_addr, int accepted, const char *reason, void *arg)
{
  (void)arg;
  char *text;
  if (accepted) {
    text = pc_asprintf("ACCEPTED_SERVER_DESCRIPTOR DIRAUTH=%s", dir_addr);
  } else {
    char *q = control_proto_quote(reason ? reason : "refused");
    text = pc_asprintf("BAD_SERVER_DESCRIPTOR DIRAUTH=%s REASON=%s",
                       dir_addr, q);
    free(q);
  }
  control_event_status(CONTROL_STATUS_SERVER, accepted ? "NOTICE" : "WARN",
                       text);
  free(text);
}

static int configure_publishing(const options_t *o);

/* The country of a directory client for DirReqStatistics. */
static const char *
dirreq_country(const pc_addr_t *a, void *arg)
{
  (void)arg;
  return geoip_db_has(A.geoip, a->family) ? geoip_db_country(A.geoip, a)
                                          : "??";
}

/* DirReqStatistics: counted by a relay that serves the directory. */
static void
apply_dirreq_stats(const options_t *o)
{
  const dirreq_options_t *d = options_module(o, &dirreq_conf_module);
  int on = d->dirreq_statistics && o->or_ports.n > 0 &&
           (o->dir_cache || o->dir_ports.n > 0);
  if (on && !A.dirreq) {
    char *sd = fs_path_join(A.data_directory, "stats");
    char *path = fs_path_join(sd, "dirreq-stats");
    A.dirreq = dirreq_stats_new(time(NULL), d->interval, path);
    free(path);
    free(sd);
    dirreq_stats_set_country_fn(A.dirreq, dirreq_country, NULL);
    dirreq_stats_load(A.dirreq, A.state, time(NULL));
    dirreq_stats_set_global(A.dirreq);
  } else if (!on && A.dirreq) {
    if (A.pub)
      publish_set_dirreq_stats(A.pub, NULL, 0);
    dirreq_stats_free(A.dirreq); /* (also unsets the global) */
  }
  if (A.dirreq)
    dirreq_stats_set_interval(A.dirreq, d->interval);
  if (A.pub)
    publish_set_dirreq_stats(A.pub, A.dirreq, d->extra_info_statistics);
}

static const dir_nodelist_t *
selftest_nodelist(void *arg)
{
  (void)arg;
  return A.dirc ? dir_client_nodelist(A.dirc) : NULL;
}

/* The self-test (arg: &A.selftest or &A.selftest6) confirmed an ORPort:
 * upload the descriptor now if nothing else holds it, and tell
 * controllers as tor does (STATUS_SERVER REACHABILITY_SUCCEEDED). */
static void
selftest_reachable(void *arg)
{
  selftest_t **stp = arg;
  char a[PC_ADDR_STR_LEN], *text;
  pc_addr_fmt(selftest_address(*stp), a, sizeof(a), 1);
  text = pc_asprintf("REACHABILITY_SUCCEEDED ORADDRESS=%s", a);
  control_event_status(CONTROL_STATUS_SERVER, "NOTICE", text);
  free(text);
  if (A.pub_opts)
    configure_publishing(A.pub_opts);
}

/* Is the other ORPort's test (if any) done, or not holding the upload? */
static int
selftest_publishable(void *arg)
{
  selftest_t **stp = arg;
  if (stp == &A.selftest)
    return !A.selftest6 || !A.hold6 || selftest_is_reachable(A.selftest6);
  return !A.selftest || selftest_is_reachable(A.selftest);
}

static selftest_t *
selftest_start(const options_t *o, selftest_t **stp)
{
  selftest_config_t sc;
  memset(&sc, 0, sizeof(sc));
  sc.keys = A.keys;
  sc.testing = o->testing_tor_network;
  sc.nodelist = selftest_nodelist;
  sc.reachable = selftest_reachable;
  sc.publishable = selftest_publishable;
  /* The bandwidth self-test goes with the IPv4 ORPort's test (every
   * relay has one), once. */
  if (stp == &A.selftest)
    sc.bw_test_cells = selftest_bw_cells(
        o->relay_bandwidth_rate && o->relay_bandwidth_rate < o->bandwidth_rate
            ? o->relay_bandwidth_rate : o->bandwidth_rate);
  sc.arg = stp;
  return selftest_new(A.loop, &sc);
}

/* The consensus parameter name (0 or 1; 0 without a consensus). */
static int
consensus_flag(const char *name)
{
  const consensus_t *c = A.dirc ? dir_client_consensus(A.dirc) : NULL;
  return c ? consensus_get_param(c, name, 0, 0, 1) : 0;
}

/* AssumeReachable 0: test the advertised ORPorts (self, IPv4; self6,
 * IPv6, or AF_UNSPEC) before uploading, as tor: the IPv6 one unless
 * AssumeReachableIPv6 is 1, and it holds the upload unless the consensus
 * parameter assume-reachable-ipv6 (or assume-reachable) is 1. Returns 1
 * while the upload must wait for a test. */
static int
reachability_hold(const options_t *o, const pc_addr_t *self,
                  const pc_addr_t *self6)
{
  if (o->assume_reachable) {
    selftest_free(A.selftest);
    selftest_free(A.selftest6);
    return 0;
  }
  if (!A.selftest)
    A.selftest = selftest_start(o, &A.selftest);
  selftest_set_address(A.selftest, self);
  int hold = !selftest_is_reachable(A.selftest);
  A.hold6 = 0;
  if (self6->family != AF_INET6 || o->assume_reachable_ipv6 == 1) {
    selftest_set_other(A.selftest, NULL);
    selftest_free(A.selftest6);
  } else {
    if (!A.selftest6)
      A.selftest6 = selftest_start(o, &A.selftest6);
    selftest_set_address(A.selftest6, self6);
    selftest_set_other(A.selftest, A.selftest6);
    selftest_set_other(A.selftest6, A.selftest);
    A.hold6 = !consensus_flag("assume-reachable") &&
              !consensus_flag("assume-reachable-ipv6");
    if (A.hold6 && !selftest_is_reachable(A.selftest6))
      hold = 1;
  }
  return hold;
}

/* Hand the publisher the descriptor fields and authorities the options
 * name. Returns 0, or -1 (logged) when there is nothing to publish or the
 * options cannot make a descriptor. */
static int
configure_publishing(const options_t *o)
{
  routerdesc_config_t rc;
  publish_params_t pp;
  dir_authority_t *auths = NULL;
  char *err = NULL;
  int n = 0, r = -1;

  A.pub_opts = o;
  memset(&rc, 0, sizeof(rc));
  memset(&pp, 0, sizeof(pp));
  rc.ipv6_or.family = AF_UNSPEC;
  /* The advertised ORPorts (not NoAdvertise ones). */
  pc_addr_t adv[4];
  int n_adv = options_orports_advertised(or_ports(o), adv);
  int have_v6_orport = 0;
  for (int i = 0; i < n_adv; i++) {
    const pc_addr_t *a = &adv[i];
    if (a->family == AF_INET && !rc.or_port)
      rc.or_port = a->port;
    else if (a->family == AF_INET6 && !have_v6_orport++)
      ipv6_orport_to_advertise(o, a, &rc.ipv6_or);
  }
  if (!have_v6_orport && o->address_ip6.family == AF_INET6) {
    static int told;
    char shown[PC_ADDR_STR_LEN];
    if (!told)
      log_notice("Address %s is not published: no advertised ORPort "
                 "listens on IPv6 (add an IPv6 ORPort, or remove IPv4Only).",
                 pc_addr_fmt(&o->address_ip6, shown, sizeof(shown), 0));
    told = 1;
  }
  if (!rc.or_port) {
    log_notice("No IPv4 ORPort: not publishing a server descriptor (the "
               "authorities need an IPv4 address).");
    return -1;
  }
  if (routerdesc_pick_address((const char *const *)o->address.v,
                              o->address.n, adv, n_adv, &rc.address,
                              &err) < 0) {
    if (A.pub)
      log_warn("Cannot update the server descriptor: %s. Publishing the "
               "previous one.", err);
    else
      log_warn("Not publishing a server descriptor: %s", err);
    free(err);
    return -1;
  }
  rc.nickname = o->nickname;
  rc.contact = o->contact_info;
  rc.family = (const char *const *)o->my_family.v;
  rc.n_family = o->my_family.n;
  rc.exit_policy = (const char *const *)A.exit_desc_lines;
  rc.n_exit_policy = A.n_exit_desc_lines;
  rc.ipv6_policy = A.exit_desc_ipv6;
  rc.tunnelled_dir_server = A.dirc != NULL && o->dir_cache;
  rc.hibernating = hibernate_state(A.hib) != HIBERNATE_AWAKE;
  rc.dir_port = options_dirport_advertised(dir_ports(o));
  /* The advertised bandwidth from the rates, as tor computes it. */
  options_advertised_bandwidth(o, &rc.bw_rate, &rc.bw_burst);
  if ((rc.tunnelled_dir_server || rc.dir_port) &&
      !hibernate_dircache_allowed(A.hib, rc.bw_rate, time(NULL))) {
    rc.tunnelled_dir_server = 0; /* as tor: no directory bytes to spend */
    rc.dir_port = 0;
    log_info("Not advertising directory service: AccountingMax could be "
             "used up at the advertised rate.");
  }
  rc.crosscert_lifetime_days = o->onion_key_rotation_days;
  /* FamilyId: the family keys, read again at each reconfiguration. */
  family_keys_t fk;
  char *fdir = options_family_key_directory(o);
  int fr = family_keys_load(fdir, (const char *const *)o->family_ids.v,
                            o->family_ids.n, &fk, &err);
  free(fdir);
  if (fr < 0) {
    log_warn("%s: %s", A.pub ? "Cannot update the server descriptor"
                             : "Not publishing a server descriptor", err);
    free(err);
    return -1;
  }
  rc.family_keys = fk.kp;
  rc.n_family_keys = fk.n;

  n = relay_authorities(o, &auths);
  pp.auths = auths;
  pp.n_auths = n;
  pp.enabled = o->publish_server_descriptor;
  pc_addr_t self = rc.address;
  self.port = rc.or_port;
  pp.hold = reachability_hold(o, &self, &rc.ipv6_or);
  pp.testing = o->testing_tor_network;
  pp.traffic = traffic_cb;
  pp.on_upload = upload_cb;
  if (!A.pub) {
    A.pub = publish_new(A.loop, A.keys);
    publish_load_history(A.pub, A.state, time(NULL));
  }
  r = publish_configure(A.pub, &rc, &pp);
  family_keys_clear(&fk);
  free(auths);
  return r;
}

/* The scheduler's half-life when CircuitPriorityHalflife is unset: the
 * consensus parameter CircuitPriorityHalflifeMsec (0 = off), else the
 * default. */
static void
apply_consensus_halflife(const consensus_t *c)
{
  if (!A.halflife_from_consensus)
    return;
  double hl = SCHEDULER_DEFAULT_HALFLIFE_SEC;
  if (c)
    hl = consensus_get_param(c, "CircuitPriorityHalflifeMsec",
                             (int32_t)(SCHEDULER_DEFAULT_HALFLIFE_SEC * 1000),
                             0, INT32_MAX) / 1000.0;
  if (hl != A.sched.halflife_sec) {
    A.sched.halflife_sec = hl;
    scheduler_configure(&A.sched);
    if (hl > 0)
      log_notice("Circuit scheduling: EWMA with a half-life of %.3f s "
                 "(from the consensus)", hl);
    else
      log_notice("Circuit scheduling: round robin (the consensus sets "
                 "CircuitPriorityHalflifeMsec=0)");
  }
}

static int32_t
cc_lookup(void *arg, const char *name, int32_t dflt, int32_t min,
          int32_t max)
{
  return consensus_get_param(arg, name, dflt, min, max);
}

/* Congestion-control parameters (cc_alg, cc_sendme_inc, ...) for new
 * circuits from the consensus, tor's defaults where it has none. */
static void
apply_consensus_cc(const consensus_t *c)
{
  if (!c)
    return;
  cc_params_t p;
  cc_params_load(&p, cc_lookup, (void *)c);
  cc_params_set_current(&p);
}

/* DoS* (core/or/dos): the options, where 0 or auto take the consensus
 * parameter of the same name, else tor's default; and the relays'
 * addresses, whose connections are not counted. */
static int32_t
dos_param(void *arg, const char *name, int32_t dflt, int32_t min,
          int32_t max)
{
  return consensus_get_param(arg, name, dflt, min, max);
}

static const consensus_t *
current_consensus(void)
{
  const consensus_t *c = A.dirc ? dir_client_consensus(A.dirc) : NULL;
  if (!c && A.dirc_other)
    c = dir_client_consensus(A.dirc_other);
  return c;
}

static void
apply_dos(void)
{
  const consensus_t *c = current_consensus();
  dos_params_t p;
  dos_params_resolve(&p, &A.dos_opts, c ? dos_param : NULL, (void *)c);
  const dos_params_t *old = dos_get_params();
  if (old->cc_enabled != p.cc_enabled ||
      old->conn_enabled != p.conn_enabled ||
      old->stream_enabled != p.stream_enabled)
    log_notice("DoS defences: circuit creation %s, connections %s, stream "
               "creation %s%s", p.cc_enabled ? "on" : "off",
               p.conn_enabled ? "on" : "off",
               p.stream_enabled ? "on" : "off",
               c ? "" : " (no consensus yet)");
  dos_set_params(&p);
}

static void
apply_dos_relay_addrs(const consensus_t *c)
{
  if (!c)
    return;
  pc_addr_t *v = pc_calloc((size_t)c->n_rs * 2 + 1, sizeof(*v));
  size_t n = 0;
  for (int i = 0; i < c->n_rs; i++) {
    const consensus_rs_t *rs = &c->rs[i];
    pc_addr_from_ipv4(&v[n++], rs->ipv4, rs->or_port);
    if (rs->has_ipv6)
      v[n++] = rs->ipv6_or;
  }
  dos_set_relay_addrs(v, n);
  free(v);
}

/* The per-circuit queue limits, as tor reads them: circ_max_cell_queue_size
 * (towards the client) and circ_max_cell_queue_size_out (towards the exit,
 * defaulting to the first). Logged when they change. */
static void
apply_consensus_queue_limits(const consensus_t *c)
{
  if (!c)
    return;
  int32_t back = consensus_get_param(c, "circ_max_cell_queue_size",
                                     CIRCUIT_MAX_QUEUED_CELLS_DEFAULT,
                                     CIRCUIT_MAX_QUEUED_CELLS_MIN, INT32_MAX);
  int32_t fwd = consensus_get_param(c, "circ_max_cell_queue_size_out", back,
                                    CIRCUIT_MAX_QUEUED_CELLS_MIN, INT32_MAX);
  int32_t old_back, old_fwd;
  circuits_get_max_queued_cells(&old_back, &old_fwd);
  if (back == old_back && fwd == old_fwd)
    return;
  circuits_set_max_queued_cells(back, fwd);
  log_notice("Circuit queue limits from the consensus: %d cells towards the "
             "client, %d towards the exit", back, fwd);
}

/* Conflux at the exit: the consensus' emergency switch cfx_enabled
 * (tor's default 1). */
static void
apply_consensus_conflux(const consensus_t *c)
{
  if (!c || !A.started)
    return;
  A.cfx.enabled = consensus_get_param(c, "cfx_enabled", 1, 0, 1);
  conflux_exit_configure(&A.cfx);
}

static const consensus_t *ctl_consensus(void *arg);

/* Controllers: NEWCONSENSUS and NS once per new consensus (the ns flavor
 * when the relay has it, as GETINFO ns/). */
static void
report_consensus(void)
{
  const consensus_t *c = ctl_consensus(NULL);
  if (c && c->valid_after != A.consensus_reported) {
    A.consensus_reported = c->valid_after;
    control_event_new_consensus(c);
  }
}

static void
other_flavor_fetched_cb(dir_client_t *dc, int ok, void *arg)
{
  (void)arg;
  control_event_descriptors(dir_client_nodelist(dc));
  if (ok)
    report_consensus();
}

static void
dir_fetched_cb(dir_client_t *dc, int ok, void *arg)
{
  (void)arg;
  /* The IPsec broker trusts relays by the consensus: re-check. */
  if (A.ipsec && dc == A.dirc)
    ipsec_broker_directory_changed(A.ipsec);
  control_event_descriptors(dir_client_nodelist(dc)); /* NEWDESC */
  if (!ok)
    log_info("Directory fetch failed: %s", dir_client_last_error(dc));
  else {
    const consensus_t *c = dir_client_consensus(dc);
    apply_consensus_halflife(c);
    apply_consensus_cc(c);
    apply_consensus_conflux(c);
    apply_consensus_queue_limits(c);
    if (A.started && dc == A.dirc) {
      apply_dos_relay_addrs(c);
      apply_dos();
      /* The upload waits for the IPv6 self-test: the consensus may now
       * say not to (assume-reachable-ipv6). */
      if (A.hold6 && A.pub_opts && A.selftest6 &&
          !selftest_is_reachable(A.selftest6) &&
          (consensus_flag("assume-reachable") ||
           consensus_flag("assume-reachable-ipv6")))
        configure_publishing(A.pub_opts);
    }
    report_consensus();
  }
}

/* Raise the soft descriptor limit to the hard one: a relay with
 * PerCircuitTCP holds a connection per circuit. */
static void
raise_fd_limit(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
    log_warn("Could not read the file descriptor limit: %s",
             strerror(errno));
    A.fd_limit = 1024;
    return;
  }
  rlim_t before = rl.rlim_cur;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
      rl.rlim_cur = before;
  }
  A.fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX
                                            : (uint64_t)rl.rlim_cur;
  log_notice("File descriptor limit: %llu%s",
             (unsigned long long)A.fd_limit,
             rl.rlim_cur != before ? " (raised to the hard limit)" : "");
}

/* The host setting PerCircuitTCP wants (doc/pctcp.md, "Host settings"):
 * say so once per start when it is missing. Linux only; elsewhere, or
 * when /proc cannot be read, nothing is said. */
static void
check_pctcp_host(void)
{
  static int said;
  FILE *f = fopen("/proc/sys/net/ipv4/tcp_slow_start_after_idle", "r");
  if (!f)
    return;
  int v = -1;
  if (fscanf(f, "%d", &v) != 1)
    v = -1;
  fclose(f);
  if (v == 1 && !said) {
    said = 1;
    log_notice("PerCircuitTCP: net.ipv4.tcp_slow_start_after_idle is 1 on "
               "this host, so a per-circuit connection starts again from "
               "the initial congestion window after each idle period; "
               "set it to 0 (the 60-pctor-pctcp.conf sysctl drop-in "
               "shipped with pctor, see pctor(1), HOST SETTINGS)");
  }
}

/* PerCircuitTCP and PerCircuitTCPMaxConnections. */
static void
apply_pctcp(const options_t *o)
{
  pctcp_config_t cfg;
  const dgram_options_t *dgo = options_module(o, &dgram_conf_module);
  cfg.enabled = o->per_circuit_tcp ||
                dgo->transport == CIRCUIT_TRANSPORT_PCTCP;
  cfg.max_connections = (unsigned)o->per_circuit_tcp_max_connections;
  cfg.spares = (unsigned)o->per_circuit_tcp_spares;
  cfg.fd_limit = A.fd_limit;
  pctcp_configure(&cfg);
  if (cfg.enabled) {
    log_notice("PerCircuitTCP: each circuit to another relay gets its own "
               "connection, %u spare(s) per relay, up to %u", cfg.spares,
               pctcp_connection_limit());
    check_pctcp_host();
  }
}

/* DatagramPort and its limits. Started once (the port is not
 * reloadable); limits and timeouts follow SIGHUP. Returns 0, or -1
 * (logged) when the port cannot be opened. */
static void
dgram_config(const options_t *o, dgram_config_t *cfg)
{
  const dgram_options_t *dgo = options_module(o, &dgram_conf_module);
  dgram_config_init(cfg);
  cfg->bind = dgo->port;
  cfg->idle_timeout_s = (unsigned)dgo->idle_timeout;
  cfg->max_links = (unsigned)dgo->max_links;
  /* The bandwidth limits of TLS links to relays (apply_bandwidth). */
  cfg->bw_global = A.bw_global;
  cfg->bw_relay = A.bw_relay;
  cfg->count_private = o->testing_tor_network;
}

/* A datagram link came up: with CircuitTransport backtap or dtls-tcp, our
 * own client circuits that reach that relay over TLS (built before the
 * link was up) take no new streams, so that new ones use the link. */
static void
dgram_link_changed(dgram_link_t *l, int up, const char *why, void *arg)
{
  (void)why;
  (void)arg;
  const uint8_t *rsa = dgram_link_peer_rsa_id(l);
  if (!up || !rsa || !A.opts)
    return;
  const dgram_options_t *dgo = options_module(A.opts, &dgram_conf_module);
  int transport = dgo->transport;
  if (transport == CIRCUIT_TRANSPORT_BACKTAP && A.btcirc)
    client_retire_tls_first_hops(rsa, "CircuitTransport backtap");
  else if (transport == CIRCUIT_TRANSPORT_DTLS_TCP && A.dtcp)
    client_retire_tls_first_hops(rsa, "CircuitTransport dtls-tcp");
}

static int
apply_dgram(const options_t *o)
{
  dgram_config_t cfg;
  dgram_config(o, &cfg);
  const dgram_options_t *dgo = options_module(o, &dgram_conf_module);
  if (A.dgram) {
    dgram_reconfigure(A.dgram, &cfg);
    if (A.btcirc)
      btcirc_set_outgoing(A.btcirc,
                          dgo->transport == CIRCUIT_TRANSPORT_BACKTAP);
    if (A.dtcp)
      dtcp_set_outgoing(A.dtcp, dgo->transport == CIRCUIT_TRANSPORT_DTLS_TCP);
    else if (dgo->transport == CIRCUIT_TRANSPORT_DTLS_TCP)
      log_warn("CircuitTransport dtls-tcp: TCP-over-DTLS did not start with "
               "the DatagramPort; hops keep using TLS");
    return 0;
  }
  if (cfg.bind.family == AF_UNSPEC)
    return 0;
  char *err = NULL;
  A.dgram = dgram_new(A.loop, A.keys, &cfg, &err);
  if (!A.dgram) {
    log_err("DatagramPort: %s", err ? err : "cannot start");
    free(err);
    return -1;
  }
  if (dgram_attach_channels(A.dgram) < 0)
    log_warn("DatagramPort: cannot announce the port on TLS links");
  if (dgram_add_link_observer(A.dgram, dgram_link_changed, NULL) < 0)
    log_warn("DatagramPort: cannot watch the links for the client");
  /* BackTap circuits from peers are accepted whenever the port is open;
   * our own extensions use BackTap with CircuitTransport backtap. */
  A.btcirc = btcirc_new(A.loop, A.dgram, NULL);
  if (A.btcirc) {
    btcirc_set_outgoing(A.btcirc, dgo->transport == CIRCUIT_TRANSPORT_BACKTAP);
    if (dgo->transport == CIRCUIT_TRANSPORT_BACKTAP)
      log_notice("CircuitTransport backtap: hops to relays with a datagram "
                 "link use BackTap, others TLS");
  }
  /* TCP-over-DTLS likewise, in a build with lwIP. */
  if (utcp_available()) {
    A.dtcp = dtcp_new(A.loop, A.dgram);
    if (A.dtcp) {
      dtcp_set_outgoing(A.dtcp, dgo->transport == CIRCUIT_TRANSPORT_DTLS_TCP);
      if (dgo->transport == CIRCUIT_TRANSPORT_DTLS_TCP)
        log_notice("CircuitTransport dtls-tcp: hops to relays with a "
                   "datagram link use TCP-over-DTLS (%s), others TLS",
                   utcp_stack_name());
    } else if (dgo->transport == CIRCUIT_TRANSPORT_DTLS_TCP) {
      log_err("CircuitTransport dtls-tcp: cannot start TCP-over-DTLS");
      return -1;
    }
  }
  char a[PC_ADDR_STR_LEN];
  log_notice("Opened DatagramPort on UDP %s (DTLS links with relays)",
             pc_addr_fmt(dgram_bound_addr(A.dgram), a, sizeof(a), 1));
  return 0;
}

/* The IPsec broker's view of the directory (ipsec_broker_dir_fn): the
 * IPv4 address and ORPort the relay's current consensus lists for the
 * relay with these identities, which must both match when the consensus
 * knows its Ed25519 identity. 0 when not listed or without a usable
 * consensus. */
static int
ipsec_dir_lookup(void *arg, const uint8_t ed[32], const uint8_t *rsa,
                 pc_addr_t *orport)
{
  (void)arg;
  const dir_nodelist_t *nl = A.dirc ? dir_client_nodelist(A.dirc) : NULL;
  const dir_node_t *n = NULL;
  if (!nl)
    return 0;
  if (rsa) {
    n = dir_nodelist_find_id(nl, rsa);
  } else {
    for (int i = 0; i < nl->n_nodes && !n; i++)
      if (nl->nodes[i].has_ed25519 && !memcmp(nl->nodes[i].ed25519_id, ed, 32))
        n = &nl->nodes[i];
  }
  if (!n || (n->has_ed25519 && memcmp(n->ed25519_id, ed, 32)) ||
      n->or_addr.family != AF_INET)
    return 0;
  *orport = n->or_addr;
  return 1;
}

/* IPsec, IPsecVICISocket, IPsecUpdown, IPsecMaxPeers and
 * PerCircuitTCPRequireIPsec. The broker (and the IKE key) is made the
 * first time IPsec is wanted and kept until shutdown; turning IPsec off
 * only stops it. Its local address is the descriptor's: Address, or the
 * ORPort's address, or a local interface (routerdesc_pick_address), with
 * the IPv4 ORPort's port. Returns 0, or -1 (logged) when the broker
 * cannot be made. */
static int
apply_ipsec(const options_t *o)
{
  const ipsec_options_t *io = options_module(o, &ipsec_conf_module);
  /* Without kernel IPsec (Shadow, a kernel without XFRM) charon can never
   * install an SA: say so once and leave IPsec off, rather than keep
   * waiting for charon (PerCircuitTCPRequireIPsec then keeps circuits on
   * shared connections, as while charon is away). */
  ipsec_mode_t mode = (ipsec_mode_t)io->mode;
  if (mode != IPSEC_MODE_OFF && !A.ipsec_kernel) {
    const char *why = NULL;
    A.ipsec_kernel = ipsec_kernel_available(&why) ? 1 : 2;
    if (A.ipsec_kernel == 2)
      log_notice("IPsec: switched off: %s.", why);
  }
  if (A.ipsec_kernel == 2)
    mode = IPSEC_MODE_OFF;
  if (mode == IPSEC_MODE_OFF && !o->per_circuit_tcp_require_ipsec && !A.ipsec)
    return 0;
  char *err = NULL;
  if (!A.ipsec) {
    A.ipsec = ipsec_broker_new(A.loop, A.data_directory, A.keys, &err);
    if (!A.ipsec) {
      log_err("IPsec: %s", err ? err : "cannot start");
      free(err);
      return -1;
    }
    ipsec_broker_set_directory(A.ipsec, ipsec_dir_lookup, NULL);
  }
  ipsec_broker_config_t cfg;
  ipsec_broker_config_init(&cfg);
  cfg.mode = mode;
  cfg.require_for_pctcp = o->per_circuit_tcp_require_ipsec;
  cfg.vici_socket = io->vici_socket;
  if (io->updown && *io->updown)
    log_warn("IPsecUpdown is obsolete and ignored: pctor no longer gives "
             "charon a command to run. The updown script is part of "
             "charon's set-up (scripts/pctor-charon runs "
             "ipsec-conf/pctor-updown; see doc/ipsec.md).");
  cfg.max_peers = (unsigned)io->max_peers;
  cfg.max_peers_per_addr = (unsigned)io->max_peers_per_address;
  cfg.charon_uid = -1;
  if (io->charon_user) {
    struct passwd *pw = getpwnam(io->charon_user);
    if (pw)
      cfg.charon_uid = (long)pw->pw_uid;
    else
      log_warn("IPsecCharonUser: there is no user named '%s' any more; "
               "only a VICI socket served by root is used.",
               io->charon_user);
  }
  if (cfg.mode != IPSEC_MODE_OFF) {
    uint16_t port = 0;
    pc_addr_t adv[4];
    int n_adv = options_orports_advertised(or_ports(o), adv);
    for (int i = 0; i < n_adv && !port; i++)
      if (adv[i].family == AF_INET)
        port = adv[i].port;
    if (!port ||
        routerdesc_pick_address((const char *const *)o->address.v,
                                o->address.n, adv, n_adv, &cfg.orport,
                                &err) < 0) {
      log_warn("IPsec: no IPv4 ORPort address to protect (%s); IPsec stays "
               "off",
               err ? err : "no IPv4 ORPort");
      free(err);
      cfg.mode = IPSEC_MODE_OFF;
    } else {
      cfg.orport.port = port;
    }
  }
  ipsec_broker_configure(A.ipsec, &cfg);
  return 0;
}

/* CircuitPriorityHalflife, Schedulers, KISTSchedRunInterval and
 * KISTSockBufSizeFactor. */
static void
apply_scheduler(const options_t *o)
{
  scheduler_config_t cfg;
  scheduler_config_default(&cfg);
  A.halflife_from_consensus = o->circuit_priority_halflife < 0;
  if (A.halflife_from_consensus)
    cfg.halflife_sec = A.started ? A.sched.halflife_sec
                                 : SCHEDULER_DEFAULT_HALFLIFE_SEC;
  else
    cfg.halflife_sec = o->circuit_priority_halflife;
  cfg.socket_aware = o->scheduler_socket_aware;
  cfg.run_interval_ms = (uint32_t)o->kist_sched_run_interval;
  cfg.sockbuf_factor = o->kist_sock_buf_size_factor;
  int changed = memcmp(&cfg, &A.sched, sizeof(cfg)) != 0 || !A.started;
  A.sched = cfg;
  scheduler_configure(&cfg);
  if (A.halflife_from_consensus && A.dirc)
    apply_consensus_halflife(dir_client_consensus(A.dirc));
  if (changed) {
    char hl[64];
    if (A.sched.halflife_sec > 0)
      snprintf(hl, sizeof(hl), "EWMA, half-life %.3f s%s",
               A.sched.halflife_sec,
               A.halflife_from_consensus ? " until the consensus says" : "");
    else
      snprintf(hl, sizeof(hl), "round robin");
    log_notice("Circuit scheduling: %s; %s", hl,
               cfg.socket_aware ? "KIST (socket-aware)" : "KISTLite");
  }
}

/* Relays and clients fetch and cache the consensus, the authorities'
 * certificates and the descriptors, as tor does. Returns 0, or -1 when no
 * authority is known. */
static int
start_directory_client(const options_t *o)
{
  if (A.dirc)
    return 0;
  dir_client_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  int n = relay_authorities(o, &A.dirc_auths);
  if (n == 0) {
    log_notice("No directory authorities: not fetching the directory");
    return -1;
  }
  A.n_dirc_auths = n;
  cfg.data_dir = options_cache_directory(o);
  cfg.auths = A.dirc_auths;
  cfg.n_auths = n;
  cfg.use_microdescriptors = o->use_microdescriptors;
  /* A client (no ORPort) fetches from directory caches over BEGIN_DIR
   * once it has a consensus; a relay is a cache and asks the
   * authorities, as tor does. */
  cfg.fetch_from_caches = o->or_ports.n == 0;
  A.dirc = dir_client_new(A.loop, &cfg);
  dir_client_load_cache(A.dirc, time(NULL));
  dir_client_start_auto(A.dirc, dir_fetched_cb, NULL);
  return 0;
}

/* A relay's directory cache serves both consensus flavors and both kinds
 * of descriptors, as tor's caches do (tor clients with UseMicrodescriptors
 * 0 ask for the ns consensus and server descriptors). The relay uses its
 * own flavor; a second client fetches the other one for the cache. */
static void
start_cache_of_other_flavor(const options_t *o)
{
  dir_client_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.data_dir = options_cache_directory(o);
  cfg.auths = A.dirc_auths;
  cfg.n_auths = A.n_dirc_auths;
  cfg.use_microdescriptors = !o->use_microdescriptors;
  A.dirc_other = dir_client_new(A.loop, &cfg);
  dir_client_load_cache(A.dirc_other, time(NULL));
  dir_client_start_auto(A.dirc_other, other_flavor_fetched_cb, NULL);
  const dir_client_t *md = o->use_microdescriptors ? A.dirc : A.dirc_other;
  const dir_client_t *ns = o->use_microdescriptors ? A.dirc_other : A.dirc;
  dirdocs_register(md, ns, options_cache_directory(o));
}

/* Path restrictions for client circuits from the options (checked by
 * the option parser already). */
static void
build_path_config(const options_t *o)
{
  path_config_clear(&A.pathcfg);
  path_config_init(&A.pathcfg);
  /* tor's EnforceDistinctSubnets is off in test networks on one host. */
  A.pathcfg.enforce_distinct_subnets = !o->testing_tor_network;
  struct {
    routerset_t **set;
    const char *v;
  } sets[] = {{&A.pathcfg.entry_nodes, o->entry_nodes},
              {&A.pathcfg.middle_nodes, o->middle_nodes},
              {&A.pathcfg.exit_nodes, o->exit_nodes},
              {&A.pathcfg.exclude_nodes, o->exclude_nodes}};
  for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
    char *err = NULL;
    if (sets[i].v && routerset_parse(sets[i].set, sets[i].v, &err) < 0) {
      log_warn("Ignoring a relay list: %s", err ? err : "?");
      free(err);
    }
  }
}

static void
fill_client_config(client_config_t *cc, const options_t *o)
{
  memset(cc, 0, sizeof(*cc));
  cc->socks_ports = o->socks_ports;
  cc->dir = A.dirc;
  cc->path = &A.pathcfg;
  cc->state = A.state;
  cc->max_circuit_dirtiness = (unsigned)o->max_circuit_dirtiness;
  cc->socks_timeout = (unsigned)o->socks_timeout;
  cc->circuit_stream_timeout = (unsigned)o->circuit_stream_timeout;
  cc->exit_nodes_pinned = o->exit_nodes != NULL;
  cc->paths_needed = o->paths_needed_to_build_circuits;
  cc->leave_streams_unattached = o->leave_streams_unattached;
  cc->guards = *(const guards_options_t *)options_module(o,
                                                         &guards_conf_module);
  const measureme_options_t *mo = options_module(o, &measureme_conf_module);
  const conflux_options_t *co = options_module(o, &conflux_conf_module);
  cc->measureme_hops = (unsigned)mo->hops;
  cc->measureme_interval_ms = (uint16_t)mo->interval_ms;
  cc->conflux_enabled = co->enabled;
  cc->conflux_ux = (uint8_t)co->client_ux;
  cc->conflux_legs = co->legs;
  cc->conflux_alg = co->scheduler;
  cc->conflux_max_ooo = (uint32_t)co->max_ooo;
}

/* Conflux at the exit: our scheduler and queue bound from the options
 * (cfx_enabled comes from the consensus). */
static void
apply_conflux_options(const options_t *o)
{
  const conflux_options_t *co = options_module(o, &conflux_conf_module);
  A.cfx.alg = co->scheduler;
  A.cfx.max_ooo = (uint32_t)co->max_ooo;
  conflux_exit_configure(&A.cfx);
}

/* SocksPort: the client role. */
static int
start_client(const options_t *o)
{
  if (o->socks_ports.n == 0)
    return 0;
  if (start_directory_client(o) < 0) {
    log_err("SocksPort needs directory authorities to find relays");
    return -1;
  }
  build_path_config(o);
  client_config_t cc;
  fill_client_config(&cc, o);
  const char *why = NULL;
  char a[PC_ADDR_STR_LEN];
  int bad = 0;
  if (client_init(A.loop, &cc, &why, &bad) < 0) {
    client_port_format(&o->socks_ports.port[bad], a, sizeof(a));
    log_err("Could not open SocksPort %s: %s", a, why ? why : "?");
    return -1;
  }
  A.client_started = 1;
  pc_addr_t bound[CLIENT_MAX_SOCKS_PORTS];
  int nb = client_socks_listeners(bound, CLIENT_MAX_SOCKS_PORTS);
  for (int i = 0; i < nb; i++) {
    pc_addr_fmt(&bound[i], a, sizeof(a), 1);
    log_notice("Opened SocksPort on %s%s", a,
               o->socks_ports.port[i].addr.port ? "" : " (auto)");
  }
  return 0;
}

/* MaxMemInQueues: the option, or tor's rule from the amount of RAM. */
static void
apply_max_mem(const options_t *o)
{
  uint64_t v = o->max_mem_in_queues ? o->max_mem_in_queues
                                    : circuits_default_max_mem();
  circuits_set_max_mem_in_queues(v);
  log_notice("MaxMemInQueues is %llu MB%s", (unsigned long long)(v >> 20),
             o->max_mem_in_queues ? "" : " (chosen from the amount of RAM)");
}

/* BandwidthRate/Burst and RelayBandwidthRate/Burst as token buckets on
 * the link connections (rate 0: unlimited). */
static void
apply_bandwidth(const options_t *o)
{
  unsigned iv = (unsigned)o->token_bucket_refill_interval;
  if (!A.bw_global) {
    A.bw_global = ratelimit_new(A.loop, o->bandwidth_rate,
                                o->bandwidth_burst, iv);
    A.bw_relay = ratelimit_new(A.loop, o->relay_bandwidth_rate,
                               o->relay_bandwidth_burst, iv);
  } else {
    ratelimit_configure(A.bw_global, o->bandwidth_rate, o->bandwidth_burst,
                        iv);
    ratelimit_configure(A.bw_relay, o->relay_bandwidth_rate,
                        o->relay_bandwidth_burst, iv);
  }
  channels_set_buckets(A.bw_global, A.bw_relay, o->testing_tor_network,
                       o->circuit_priority_reads);
  channels_set_relay_congestion_control(o->relay_tcp_congestion_control);
  /* Exit, SOCKS and directory connections: the global bucket only. */
  conn_set_default_buckets(A.bw_global, o->testing_tor_network);
  if (o->bandwidth_rate < (1ULL << 30) || o->relay_bandwidth_rate)
    log_notice("Bandwidth limits: %llu KB/s (burst %llu KB)%s",
               (unsigned long long)(o->bandwidth_rate >> 10),
               (unsigned long long)(o->bandwidth_burst >> 10),
               o->relay_bandwidth_rate ? ", and a separate limit for relays"
                                       : "");
}

/* HeartbeatPeriod: one notice line, in the manner of tor's. */
static void
heartbeat_cb(void *arg)
{
  (void)arg;
  channel_stats_t cs;
  channels_get_stats(&cs);
  long up = (long)(time(NULL) - A.start_time);
  long days = up / 86400;
  char days_s[32] = "";
  if (days)
    snprintf(days_s, sizeof(days_s), "%ld day%s ", days,
             days == 1 ? "" : "s");
  log_notice("Heartbeat: pctor's uptime is %s%ld:%02ld hours, with %u "
             "circuits open. I've sent %.2f MB and received %.2f MB. %u "
             "connections are open.", days_s, (up % 86400) / 3600,
             (up % 3600) / 60,
             circuits_count(CIRC_KIND_OR) + circuits_count(CIRC_KIND_ORIGIN),
             (double)cs.cells_out * 514 / 1e6,
             (double)cs.cells_in * 514 / 1e6, cs.n_open);
  /* As tor's heartbeat, when any DoS defence is on. */
  const dos_params_t *dp = dos_get_params();
  if (dp->cc_enabled || dp->conn_enabled || dp->stream_enabled) {
    char line[512];
    dos_heartbeat_line(line, sizeof(line));
    log_notice("%s", line);
  }
  char acct[512];
  hibernate_heartbeat_line(A.hib, time(NULL), acct, sizeof(acct));
  if (acct[0])
    log_notice("%s", acct);
  if (cpuworker_enabled()) {
    char cw[256];
    cpuworker_heartbeat_line(cw, sizeof(cw));
    log_notice("%s", cw);
  }
  /* Conflux at an exit (an exit that never linked a set says nothing):
   * lets an operator, and an experiment, see that clients use it. */
  conflux_exit_stats_t cx;
  conflux_exit_get_stats(&cx);
  if (cx.n_sets || cx.n_refused)
    log_notice("Heartbeat: Conflux linked %llu sets (%llu legs) and refused "
               "%llu links since start; %u sets are open. Sent %llu "
               "messages on legs and %llu SWITCH cells (%.1f%%).",
               (unsigned long long)cx.n_sets,
               (unsigned long long)cx.n_legs_linked,
               (unsigned long long)cx.n_refused, cx.n_open_sets,
               (unsigned long long)cx.n_msgs_sent,
               (unsigned long long)cx.n_switches_sent,
               cx.n_msgs_sent ? 100.0 * (double)cx.n_switches_sent /
                                    (double)cx.n_msgs_sent
                              : 0.0);
  /* MeasureMe: what this relay did for clients that asked (a relay that
   * never enabled it and was never asked says nothing). */
  measureme_stats_t ms;
  measureme_get_stats(&ms);
  uint64_t asked = 0;
  for (int i = 0; i < MEASUREME_N_RESULTS; i++)
    asked += ms.n_by_result[i];
  if (measureme_is_enabled() || asked)
    log_notice("Heartbeat: MeasureMe served %llu measurement requests and "
               "refused %llu since start; %u circuits are measured now, "
               "%llu records written, %llu answer cells sent.",
               (unsigned long long)ms.n_by_result[MEASUREME_ACCEPTED],
               (unsigned long long)(asked -
                                    ms.n_by_result[MEASUREME_ACCEPTED]),
               measureme_n_active(),
               (unsigned long long)measureme_n_records(),
               (unsigned long long)measureme_n_answers());
}

static void
apply_heartbeat(const options_t *o)
{
  if (!A.heartbeat)
    A.heartbeat = evloop_timer_new(A.loop, heartbeat_cb, NULL);
  evloop_timer_cancel(A.heartbeat);
  if (o->heartbeat_period > 0)
    evloop_timer_schedule_periodic(A.heartbeat,
                                   (uint64_t)o->heartbeat_period * 1000000);
}

/* Listen on the ORPorts (not NoListen ones). The first time, A.or_bound
 * takes the options' ports with each "auto" port set to the one the kernel
 * picked, and without the [::] half of a bare ORPort where the host has no
 * IPv6 (a notice says so); later openings (waking from hibernation) bind
 * those same ports again. Returns 0, or -1 (logged) when one cannot be
 * bound. */
static int
open_orports(const options_t *opts)
{
  int first = !A.or_is_bound;
  if (first)
    A.or_bound = opts->or_ports;
  options_ports_t *p = &A.or_bound;
  for (int i = 0; i < p->n; i++) {
    const char *why = NULL;
    pc_addr_t bound;
    char a[PC_ADDR_STR_LEN];
    pc_addr_fmt(&p->addrs[i], a, sizeof(a), 1);
    if (p->flags[i] & OPTIONS_PORT_NO_LISTEN) {
      log_notice("Advertising ORPort %s without listening on it "
                 "(NoListen)", a);
      continue;
    }
    if (first && (p->flags[i] & OPTIONS_PORT_IMPLICIT) &&
        !listener_ipv6_available(&why)) {
      log_notice("This host has no IPv6 (%s): the ORPort listens on IPv4 "
                 "only. Add IPv4Only to the ORPort line to say so.",
                 why ? why : "?");
      for (int m = i; m + 1 < p->n; m++) {
        p->addrs[m] = p->addrs[m + 1];
        p->flags[m] = p->flags[m + 1];
      }
      p->n--;
      i--;
      continue;
    }
    if (channel_listen(&p->addrs[i], &bound, &why) < 0) {
      log_err("Could not bind ORPort %s: %s", a, why ? why : "?");
      if (first)
        A.or_bound = opts->or_ports;
      return -1;
    }
    if (p->flags[i] & OPTIONS_PORT_AUTO)
      p->addrs[i].port = bound.port;
    log_notice("Opened ORPort on %s", pc_addr_fmt(&bound, a, sizeof(a), 1));
  }
  A.or_is_bound = 1;
  return 0;
}

/* Listen on the DirPorts (not NoListen ones) and load DirPortFrontPage;
 * A.dir_bound as A.or_bound for the ORPorts. Returns 0, or -1 (logged)
 * when a port cannot be bound. */
static int
open_dirports(const options_t *opts)
{
  if (!A.dir_is_bound)
    A.dir_bound = opts->dir_ports;
  options_ports_t *p = &A.dir_bound;
  for (int i = 0; i < p->n; i++) {
    char a[PC_ADDR_STR_LEN], *why = NULL;
    pc_addr_t bound;
    pc_addr_fmt(&p->addrs[i], a, sizeof(a), 1);
    if (p->flags[i] & OPTIONS_PORT_NO_LISTEN) {
      log_notice("Advertising DirPort %s without listening on it "
                 "(NoListen)", a);
    } else if (dirport_listen(A.loop, &p->addrs[i], &bound, &why) < 0) {
      log_err("%s", why);
      free(why);
      return -1;
    } else if (p->flags[i] & OPTIONS_PORT_AUTO) {
      p->addrs[i].port = bound.port;
    }
  }
  A.dir_is_bound = 1;
  if (opts->dir_port_front_page) {
    char *why = NULL;
    if (p->n == 0)
      log_warn("DirPortFrontPage is set but there is no DirPort: serving "
               "no front page");
    else if (dirport_set_front_page(opts->dir_port_front_page, &why) < 0) {
      log_warn("%s; serving no front page", why);
      free(why);
    }
  }
  return 0;
}

/* ---- Accounting and hibernation (feature/hibernate): one block ----
 * Soft hibernation closes the ORPort and DirPort listeners (as tor, the
 * DirPort connections already open are still answered) and refuses CREATEs
 * (DESTROY HIBERNATING) and BEGIN/BEGIN_DIR (END HIBERNATING), as tor;
 * hard hibernation also closes every channel;
 * waking reopens the listeners. Each change republishes the descriptor
 * ("hibernating 1" while not awake), is sent to controllers as tor's
 * STATUS_SERVER HIBERNATION_STATUS event, and saves the state file. */
static int
hib_create_gate(void)
{
  return hibernate_state(A.hib) != HIBERNATE_AWAKE
             ? DESTROY_REASON_HIBERNATING : 0;
}

static int
hib_begin_gate(void)
{
  return hibernate_state(A.hib) != HIBERNATE_AWAKE ? END_REASON_HIBERNATING
                                                   : 0;
}

static void
hib_save(void *arg)
{
  (void)arg;
  char *err = NULL;
  hibernate_save_state(A.hib, A.state);
  if (A.state && statefile_is_dirty(A.state) &&
      statefile_save(A.state, time(NULL), &err) < 0)
    log_warn("Could not save the accounting counters: %s", err);
  free(err);
}

/* The state file while running (tor writes its own some minutes after it
 * changed, so a crash or a kill -9 loses little). Every check puts the
 * bandwidth history into the store; statefile_save_if_due() writes the
 * store __StateSaveInterval after a change (10 minutes), or at the next
 * check after statefile_want_save_now(); modules that must not lose a
 * change (sampled guards, learned timeouts) still save at once. */
static void
state_timer_cb(void *arg)
{
  (void)arg;
  if (!A.state)
    return;
  time_t now = time(NULL);
  publish_save_history(A.pub, A.state, now);
  char *err = NULL;
  int r = statefile_save_if_due(A.state, now, A.state_save_interval, &err);
  if (r > 0) {
    if (A.state_save_failed)
      log_notice("Wrote the state file %s again", statefile_path(A.state));
    else
      log_info("Saved the state file %s", statefile_path(A.state));
    A.state_save_failed = 0;
  } else if (r < 0) {
    if (!A.state_save_failed)
      log_warn("%s; trying again every minute (no more warnings until it "
               "works)",
               err);
    A.state_save_failed = 1;
  }
  free(err);
}

static void
hib_changed(hibernate_state_t from, hibernate_state_t to, void *arg)
{
  (void)arg;
  if (to != HIBERNATE_AWAKE) {
    if (from == HIBERNATE_AWAKE)
      dirport_close_listeners();
    channels_close_listeners();
    if (to == HIBERNATE_HARD)
      channels_close_all("hibernating (AccountingMax)");
  } else if (from != HIBERNATE_AWAKE && A.opts &&
             (open_orports(A.opts) < 0 || open_dirports(A.opts) < 0)) {
    log_warn("Could not reopen the ORPorts or DirPorts after hibernation.");
  }
  char *text = pc_asprintf("HIBERNATION_STATUS STATUS=%s",
                           to == HIBERNATE_SOFT   ? "SOFT"
                           : to == HIBERNATE_HARD ? "HARD"
                                                  : "AWAKE");
  control_event_status(CONTROL_STATUS_SERVER, "NOTICE", text);
  free(text);
  if (A.opts && A.opts->or_ports.n > 0)
    configure_publishing(A.opts);
}

static uint64_t
hib_rate(const options_t *o)
{
  return o->relay_bandwidth_rate ? o->relay_bandwidth_rate
                                 : o->bandwidth_rate;
}

static void
start_hibernation(const options_t *o)
{
  const hibernate_host_t host = {hib_changed, hib_save, NULL};
  A.hib = hibernate_new(options_module(o, &hibernate_conf_module),
                        A.keys->rsa_id_digest, hib_rate(o), &host);
  hibernate_load_state(A.hib, A.state);
  command_set_create_gate(hib_create_gate);
  relay_set_begin_gate(hib_begin_gate);
  hibernate_start(A.hib, A.loop);
}

static void
apply_state_saving(const options_t *o)
{
  if (!A.state_timer)
    A.state_timer = evloop_timer_new(A.loop, state_timer_cb, NULL);
  A.state_save_interval = options_state_save_interval(o);
  int check = o->state_save_interval < 60 ? o->state_save_interval : 60;
  evloop_timer_cancel(A.state_timer);
  evloop_timer_schedule_periodic(A.state_timer, (uint64_t)check * 1000000);
}

void
app_stop_listening(void)
{
  if (A.started)
    channels_close_listeners();
}

/* Addresses to put in NETINFO: the Address lines' IP literals, then the
 * ORPort addresses that are not wildcards. */
static void
set_my_addrs(const options_t *o)
{
  pc_addr_t addrs[2], cand[6];
  int n = 0, nc = 0;
  if (o->address_ip.family != AF_UNSPEC)
    cand[nc++] = o->address_ip;
  if (o->address_ip6.family != AF_UNSPEC)
    cand[nc++] = o->address_ip6;
  nc += options_orports_advertised(or_ports(o), cand + nc);
  for (int i = 0; i < nc && n < 2; i++) {
    const pc_addr_t *a = &cand[i];
    static const uint8_t zero[16];
    if (!memcmp(a->addr, zero, a->family == AF_INET ? 4 : 16))
      continue;
    if (n == 1 && pc_addr_eq(&addrs[0], a, 0))
      continue;
    addrs[n++] = *a;
  }
  channels_set_my_addrs(addrs, n);
}

/* ---- ControlPort and MetricsPort (feature/control): one block ----
 * The daemon's side of the control module: its options, keys and
 * directory information for GETINFO/GETCONF, and signals, which are
 * raised as real signals so that main.c's loop handlers act on them
 * after the controller's reply (SHUTDOWN then never frees the control
 * module from inside its own callback). */
static struct {
  const options_t *opts;   /* current options (for GETCONF) */
  char *config_file;       /* the torrc, for GETINFO config-file */
  char *address;           /* the descriptor's address, or NULL */
  char *address6;          /* its IPv6 or-address's address, or NULL */
  int control_started, metrics_started;
  char *port_file;         /* ControlPortWriteToFile as written, or NULL */
  const app_conf_ops_t *conf_ops; /* main.c's SETCONF and friends */
} CTL;

void
app_set_config_file(const char *path)
{
  free(CTL.config_file);
  CTL.config_file = path ? pc_strdup(path) : NULL;
}

static int
ctl_signal(control_signal_t sig, void *arg)
{
  (void)arg;
  switch (sig) {
  case CONTROL_SIGNAL_RELOAD:
    raise(SIGHUP);
    return 0;
  case CONTROL_SIGNAL_SHUTDOWN:
  case CONTROL_SIGNAL_HALT:
    raise(SIGTERM);
    return 0;
  case CONTROL_SIGNAL_DUMP:
    raise(SIGUSR1);
    return 0;
  case CONTROL_SIGNAL_HEARTBEAT:
    app_log_statistics();
    return 0;
  case CONTROL_SIGNAL_DEBUG: {
    /* As tor: every log destination now takes debug messages. */
    const options_strlist_t *logs = &CTL.opts->logs;
    log_reset_destinations();
    for (int i = 0; i < logs->n || i == 0; i++) {
      const char *l = logs->n ? logs->v[i] : "notice stderr";
      const char *dest = strpbrk(l, " \t");
      char *spec = pc_asprintf("debug%s", dest ? dest : " stderr");
      char *err = NULL;
      if (log_parse_destination(spec, &err) < 0)
        free(err);
      free(spec);
    }
    log_notice("Logging at debug level (SIGNAL DEBUG)");
    return 0;
  }
  case CONTROL_SIGNAL_ACTIVE:
  case CONTROL_SIGNAL_DORMANT:
    return 0; /* pctor has no dormant mode: it is always active */
  case CONTROL_SIGNAL_NEWNYM: {
    /* Without the client role there is nothing to forget. */
    if (!A.client_started)
      return 0;
    unsigned delay = 0;
    char *err = NULL;
    int r = client_ctl_newnym(&delay, &err);
    free(err);
    return r ? -1 : 0;
  }
  case CONTROL_SIGNAL_CLEARDNSCACHE:
    /* The client keeps no DNS answers (its exits resolve every name, and
     * MAPADDRESS mappings are not a cache): nothing to clear. */
    return 0;
  }
  return -1;
}

void
app_set_conf_ops(const app_conf_ops_t *ops)
{
  CTL.conf_ops = ops;
}

static int
ctl_setconf(const control_kv_t *kvs, int n, int reset, char **err_out,
            void *arg)
{
  (void)arg;
  (void)reset; /* pctor has no "0 or NULL" apart from the default */
  conf_line_t *changes = NULL, **tail = &changes;
  for (int i = 0; i < n; i++) {
    const option_def_t *def = options_find(kvs[i].key);
    if (!def) {
      char *why = options_tor_refusal(kvs[i].key);
      *err_out = why ? pc_asprintf("Unrecognized option: %s", why)
                     : pc_asprintf("Unrecognized option: Unknown option "
                                   "'%s'.  Failing.", kvs[i].key);
      free(why);
      conf_lines_free(changes);
      return 552;
    }
    *tail = conf_line_new(def->name, kvs[i].value ? kvs[i].value : "",
                          "the controller", i + 1);
    if (!kvs[i].value)
      (*tail)->cmd = CONF_LINE_CLEAR;
    tail = &(*tail)->next;
  }
  int r = CTL.conf_ops ? CTL.conf_ops->setconf(changes, err_out)
                       : (*err_out = pc_strdup("not available"), 553);
  conf_lines_free(changes);
  return r;
}

static int
ctl_loadconf(const char *text, char **err_out, void *arg)
{
  (void)arg;
  return CTL.conf_ops ? CTL.conf_ops->loadconf(text, err_out)
                      : (*err_out = pc_strdup("not available"), 553);
}

static int
ctl_saveconf(int force, char **err_out, void *arg)
{
  (void)arg;
  return CTL.conf_ops ? CTL.conf_ops->saveconf(force, err_out)
                      : (*err_out = pc_strdup("not available"), 551);
}

/* CONF_CHANGED for every option whose value differs. */
static void
ctl_conf_changed(const options_t *old_opts, const options_t *new_opts)
{
  conf_strlist_t lines = {0, NULL};
  for (size_t i = 0; i < options_count(); i++) {
    const option_def_t *def = options_var(i);
    if (options_equal(old_opts, new_opts, def))
      continue;
    char *canon = NULL, **vals = NULL;
    int n = 0;
    options_get_values(new_opts, def->name, &canon, &vals, &n);
    if (n == 0)
      conf_strlist_add(&lines, canon);
    for (int k = 0; k < n; k++) {
      char *l = pc_asprintf("%s=%s", canon, vals[k]);
      conf_strlist_add(&lines, l);
      free(l);
      free(vals[k]);
    }
    free(vals);
    free(canon);
  }
  control_event_conf_changed((const char *const *)lines.v, lines.n);
  conf_strlist_clear(&lines);
}

static int
ctl_getconf(const char *key, char **canonical, char ***values, int *n,
            void *arg)
{
  (void)arg;
  return options_get_values(CTL.opts, key, canonical, values, n) == 0;
}

/* Quoted "ADDR:PORT" entries separated by spaces. */
static char *
ctl_quoted_addrs(const pc_addr_t *addrs, int n)
{
  char *s = pc_strdup("");
  for (int i = 0; i < n; i++) {
    char a[PC_ADDR_STR_LEN];
    char *t = pc_asprintf("%s%s\"%s\"", s, i ? " " : "",
                          pc_addr_fmt(&addrs[i], a, sizeof(a), 1));
    free(s);
    s = t;
  }
  return s;
}

/* The directory client of a flavor (ns: server descriptors, microdesc:
 * microdescriptors), or NULL. */
static const dir_client_t *
ctl_dir_of(consensus_flavor_t flavor)
{
  const dir_client_t *dcs[2] = {A.dirc, A.dirc_other};
  for (int i = 0; i < 2; i++) {
    const consensus_t *c = dcs[i] ? dir_client_consensus(dcs[i]) : NULL;
    if (c && c->flavor == flavor)
      return dcs[i];
  }
  return NULL;
}

/* GETINFO desc/id/FP, desc/name/NICK, md/id/FP, md/name/NICK: the
 * descriptor as pctor holds it (our own server descriptor as published).
 * Returns as ctl_getinfo. */
static int
ctl_getinfo_desc(const char *key, char **value)
{
  int md = key[0] == 'm';
  const char *rest = key + (md ? 3 : 5);
  int by_id = !strncmp(rest, "id/", 3);
  if (!by_id && strncmp(rest, "name/", 5))
    return 0;
  const char *name = rest + (by_id ? 3 : 5);
  uint8_t id[20];
  if (by_id) {
    if (*name == '$')
      name++;
    if (strlen(name) != 40 || base16_decode(id, sizeof(id), name, 40) != 20) {
      *value = pc_asprintf("\"%s\" is not a relay fingerprint", name);
      return -1;
    }
    if (!md && A.keys && A.pub && !memcmp(id, A.keys->rsa_id_digest, 20) &&
        publish_descriptor(A.pub)) {
      *value = pc_strdup(publish_descriptor(A.pub));
      return 1;
    }
  }
  const dir_client_t *dc = ctl_dir_of(md ? CONSENSUS_FLAVOR_MICRODESC
                                         : CONSENSUS_FLAVOR_NS);
  const dir_nodelist_t *nl = dc ? dir_client_nodelist(dc) : NULL;
  if (!nl) {
    *value = pc_asprintf("no %s consensus (UseMicrodescriptors, DirCache)",
                         md ? "microdescriptor" : "ns-flavor");
    return -1;
  }
  const dir_node_t *n = by_id ? dir_nodelist_find_id(nl, id)
                              : dir_nodelist_find_nickname(nl, name);
  if (!n || !n->desc) {
    *value = pc_strdup(n ? "descriptor not downloaded" : "Unknown relay");
    return -1;
  }
  *value = pc_strndup(n->desc->text, n->desc->text_len);
  return 1;
}

static int
ctl_getinfo(const char *key, char **value, void *arg)
{
  (void)arg;
  const options_t *o = CTL.opts;
  if (!strncmp(key, "ip-to-country/", 14)) {
    const char *q = key + 14;
    if (!strcmp(q, "ipv4-available") || !strcmp(q, "ipv6-available")) {
      int fam = q[3] == '4' ? AF_INET : AF_INET6;
      *value = pc_strdup(geoip_db_has(A.geoip, fam) ? "1" : "0");
      return 1;
    }
    pc_addr_t a;
    if (pc_addr_parse_ip(&a, q, 0) < 0) {
      *value = pc_strdup("Not a valid IP address");
      return -1;
    }
    if (!geoip_db_has(A.geoip, a.family)) {
      *value = pc_strdup("GeoIP data not loaded");
      return -1;
    }
    *value = pc_strdup(geoip_db_country(A.geoip, &a));
    return 1;
  }
  if (!strcmp(key, "config-file")) {
    if (!CTL.config_file) {
      *value = pc_strdup("no configuration file");
      return -1;
    }
    *value = pc_strdup(CTL.config_file);
    return 1;
  }
  if (!strcmp(key, "fingerprint")) {
    if (o->or_ports.n == 0) {
      *value = pc_strdup("Not running in server mode");
      return -1;
    }
    char hex[41];
    base16_encode(hex, sizeof(hex), A.keys->rsa_id_digest, 20,
                  BASE16_UPPER);
    *value = pc_strdup(hex);
    return 1;
  }
  if (!strcmp(key, "address") || !strcmp(key, "address/v4") ||
      !strcmp(key, "address/v6")) {
    /* control-spec: address and address/v4 the IPv4, address/v6 the IPv6
     * address the descriptor publishes (without brackets). */
    const char *a = !strcmp(key, "address/v6") ? CTL.address6 : CTL.address;
    if (!a) {
      *value = pc_strdup("Address unknown");
      return -1;
    }
    *value = pc_strdup(a);
    return 1;
  }
  if (!strcmp(key, "net/listeners/or") || !strcmp(key, "net/listeners/dir")) {
    /* the ports listened on (not NoListen ones), auto ones as bound */
    const options_ports_t *p = key[14] == 'o' ? or_ports(o) : dir_ports(o);
    pc_addr_t bound[4];
    int nb = 0;
    for (int i = 0; i < p->n; i++)
      if (!(p->flags[i] & OPTIONS_PORT_NO_LISTEN))
        bound[nb++] = p->addrs[i];
    *value = ctl_quoted_addrs(bound, nb);
    return 1;
  }
  if (!strcmp(key, "net/listeners/socks")) {
    pc_addr_t bound[CLIENT_MAX_SOCKS_PORTS];
    int nb = client_socks_listeners(bound, CLIENT_MAX_SOCKS_PORTS);
    *value = ctl_quoted_addrs(bound, nb);
    return 1;
  }
  if (!strncmp(key, "desc/", 5) || !strncmp(key, "md/", 3)) {
    int r = ctl_getinfo_desc(key, value);
    if (r)
      return r;
  }
  if (hibernate_getinfo(A.hib, key, value))
    return 1;
  if (!strcmp(key, "exit-policy/default")) {
    *value = pc_strdup(EXIT_POLICY_DEFAULT);
    return 1;
  }
  if (!strcmp(key, "exit-policy/full") || !strcmp(key, "exit-policy/ipv4") ||
      !strcmp(key, "exit-policy/ipv6")) {
    /* The policy's rules in order, of both families or one ("accept6"
     * for IPv6 rules, as tor); a relay that is not an exit rejects all. */
    int fam = !strcmp(key + 12, "full")   ? AF_UNSPEC
              : !strcmp(key + 12, "ipv4") ? AF_INET
                                          : AF_INET6;
    *value = A.exit_policy ? exit_policy_format_rules(A.exit_policy, fam)
                           : pc_strdup("reject *:*");
    return 1;
  }
  if (!strcmp(key, "config/names") || !strcmp(key, "config-text")) {
    /* config/names: "Name Type" (tor's type names); config-text: the
     * options whose value is not the default, as torrc lines. */
    int names = key[6] == '/';
    char *t = pc_strdup("");
    for (size_t i = 0; i < options_count(); i++) {
      const option_def_t *def = options_var(i);
      char *canon = NULL, **vals = NULL, *u;
      int n = 0;
      if (names) {
        u = pc_asprintf("%s%s %s\n", t, def->name, options_type_name(def));
        free(t);
        t = u;
        continue;
      }
      if (!options_is_set(o, def->name))
        continue; /* at its default */
      options_get_values(o, def->name, &canon, &vals, &n);
      for (int k = 0; k < n; k++) {
        u = pc_asprintf("%s%s %s\n", t, canon, vals[k]);
        free(t);
        t = u;
        free(vals[k]);
      }
      free(vals);
      free(canon);
    }
    *value = t;
    return 1;
  }
  if (!strcmp(key, "net/listeners/metrics")) {
    const char *m = metrics_listen_address();
    *value = m ? pc_asprintf("\"%s\"", m) : pc_strdup("");
    return 1;
  }
  return 0;
}

/* The ns-flavor consensus when the relay has one (GETINFO ns/ shows
 * descriptor digests), else the microdescriptor one. */
static const consensus_t *
ctl_consensus(void *arg)
{
  (void)arg;
  const consensus_t *a = A.dirc ? dir_client_consensus(A.dirc) : NULL;
  const consensus_t *b =
      A.dirc_other ? dir_client_consensus(A.dirc_other) : NULL;
  if (b && b->flavor == CONSENSUS_FLAVOR_NS)
    return b;
  return a ? a : b;
}

static void
ctl_config(const options_t *o, control_config_t *cfg)
{
  char *err = NULL;
  memset(cfg, 0, sizeof(*cfg));
  /* Neither can fail: the options were checked. */
  if (o->control_port &&
      control_parse_listen(o->control_port, 0, &cfg->port, &err) < 0) {
    log_bug("ControlPort refused after it was checked: %s", err);
    free(err);
    err = NULL;
  }
  if (o->control_socket &&
      control_parse_listen(o->control_socket, 1, &cfg->socket, &err) < 0) {
    log_bug("ControlSocket refused after it was checked: %s", err);
    free(err);
  }
  cfg->cookie_auth = o->cookie_authentication;
  cfg->cookie_file = o->cookie_auth_file;
  cfg->cookie_group_readable = o->cookie_auth_file_group_readable;
  cfg->hashed_password = o->hashed_control_password;
  cfg->owning_pid = o->owning_controller_process
                        ? strtol(o->owning_controller_process, NULL, 10)
                        : 0;
  cfg->data_dir = o->data_directory;
  cfg->user = o->user;
  cfg->conn_bw_event = o->testing_enable_conn_bw_event;
  cfg->cell_stats_event = o->testing_enable_cell_stats_event;
  free(CTL.address);
  CTL.address = NULL;
  pc_addr_t addr;
  free(CTL.address6);
  CTL.address6 = NULL;
  if (o->or_ports.n > 0 &&
      routerdesc_pick_address((const char *const *)o->address.v,
                              o->address.n, or_ports(o)->addrs,
                              or_ports(o)->n, &addr, &err) == 0) {
    char a[PC_ADDR_STR_LEN];
    CTL.address = pc_strdup(pc_addr_fmt(&addr, a, sizeof(a), 0));
  } else {
    free(err);
  }
  if (o->or_ports.n > 0) {
    ipv6_address_to_publish(o, &addr);
    if (addr.family == AF_INET6) {
      char a[PC_ADDR_STR_LEN];
      addr.port = 0;
      CTL.address6 = pc_strdup(pc_addr_fmt(&addr, a, sizeof(a), 0));
    }
  }
}

/* ControlPortWriteToFile (tor's format): "PORT=ADDRESS:PORT" for the TCP
 * control listener (as bound: auto's port), "UNIX_PORT=PATH" for each
 * control socket; mode 0600, or 0640 with ControlPortFileGroupReadable.
 * shutdown_control() removes it, as tor does at exit. */
static void
write_control_port_file(const options_t *o)
{
  const char *path = o->control_port_write_to_file;
  if (!path)
    return;
  const char *tcp = control_listen_address();
  char *text = tcp ? pc_asprintf("PORT=%s\n", tcp) : pc_strdup("");
  const char *unix_opts[2] = {o->control_port, o->control_socket};
  for (int i = 0; i < 2; i++) {
    control_listen_t cl;
    char *e = NULL;
    if (!unix_opts[i] ||
        control_parse_listen(unix_opts[i], i, &cl, &e) < 0 ||
        cl.kind != CONTROL_LISTEN_UNIX) {
      free(e);
      continue;
    }
    char *more = pc_asprintf("%sUNIX_PORT=%s\n", text, cl.path);
    free(text);
    text = more;
  }
  int r = fs_write_file_atomic(path, text, strlen(text),
                               o->control_port_file_group_readable ? 0640
                                                                   : 0600);
  free(text);
  if (r < 0) {
    log_warn("Could not write ControlPortWriteToFile %s: %s", path,
             strerror(-r));
    return;
  }
  free(CTL.port_file);
  CTL.port_file = pc_strdup(path);
}

/* Returns 0, or -1 (logged) when a port cannot be opened. */
static int
start_control(const options_t *o)
{
  control_config_t cfg;
  control_host_t host = {ctl_signal,   ctl_getconf,  ctl_getinfo,
                         ctl_consensus, ctl_setconf, ctl_loadconf,
                         ctl_saveconf, NULL};
  control_listen_t mp;
  char *err = NULL;
  CTL.opts = o;
  ctl_config(o, &cfg);
  CTL.control_started = 1;
  if (control_start(A.loop, &cfg, &host, &err) < 0) {
    log_err("%s", err);
    free(err);
    return -1;
  }
  memset(&mp, 0, sizeof(mp));
  if (o->metrics_port && metrics_parse_port(o->metrics_port, &mp, &err) < 0) {
    /* the options were checked */
    log_bug("MetricsPort refused after it was checked: %s", err);
    free(err);
    err = NULL;
  }
  CTL.metrics_started = 1;
  if (metrics_start(A.loop, &mp, o->metrics_port_policy, &err) < 0) {
    log_err("%s", err);
    free(err);
    return -1;
  }
  metrics_set_ipsec(A.ipsec);
  write_control_port_file(o);
  return 0;
}

static void
reconfigure_control(const options_t *o)
{
  control_config_t cfg;
  CTL.opts = o;
  ctl_config(o, &cfg);
  control_reconfigure(&cfg);
  metrics_set_policy(o->metrics_port_policy);
  metrics_set_ipsec(A.ipsec); /* made on the first reload that wants it */
}

static void
shutdown_control(void)
{
  const app_conf_ops_t *ops = CTL.conf_ops;
  if (CTL.control_started)
    control_shutdown();
  if (CTL.metrics_started)
    metrics_shutdown();
  if (CTL.port_file && unlink(CTL.port_file) < 0 && errno != ENOENT)
    log_warn("Could not remove ControlPortWriteToFile %s: %s", CTL.port_file,
             strerror(errno));
  free(CTL.port_file);
  free(CTL.address);
  free(CTL.address6);
  free(CTL.config_file);
  memset(&CTL, 0, sizeof(CTL));
  CTL.conf_ops = ops; /* set once by main.c */
}
/* ---- end of ControlPort and MetricsPort ---- */

void
app_keys_config(const options_t *o, router_keys_config_t *cfg)
{
  router_keys_config_init(cfg);
  cfg->nickname = o->nickname;
  cfg->onion_key_rotation_days = o->onion_key_rotation_days;
  cfg->onion_key_grace_days = o->onion_key_grace_period_days;
  cfg->key_directory = o->key_directory;
  cfg->offline_master_key = o->offline_master_key;
  cfg->signing_key_lifetime_days = o->signing_key_lifetime / 86400;
  cfg->key_directory_group_readable = options_key_directory_group_readable(o);
}

int
app_start(evloop_t *loop, const options_t *opts)
{
  char *err = NULL;
  A.loop = loop;
  A.opts = opts;
  configure_outbound_binds(opts);
  if (configure_geoip(opts, NULL, 1) < 0)
    return -1;
  if (fs_check_private_dir_mode(opts->data_directory,
                                opts->data_directory_group_readable,
                                &err) < 0) {
    log_err("DataDirectory %s: %s", opts->data_directory,
            err ? err : "unusable");
    free(err);
    return -1;
  }
  if (opts->cache_directory &&
      fs_check_private_dir_mode(options_cache_directory(opts),
                                options_cache_directory_group_readable(opts),
                                &err) < 0) {
    log_err("CacheDirectory %s: %s", options_cache_directory(opts),
            err ? err : "unusable");
    free(err);
    return -1;
  }
  /* tor's DataDirectory lock: tor and pctor never run on the same keys at
   * once. Held (the descriptor stays open) until pctor exits. */
  A.lock_fd = router_keys_lock_datadir(opts->data_directory, &err);
  if (A.lock_fd < 0) {
    log_err("%s", err ? err : "Could not lock the DataDirectory");
    free(err);
    return -1;
  }
  A.nickname = pc_strdup(opts->nickname);
  A.data_directory = pc_strdup(opts->data_directory);
  /* tor's state file: read once; modules replace their own lines and
   * every other line (tor's) is written back as it was. */
  char *state_path = fs_path_join(opts->data_directory, "state");
  A.state = statefile_load(state_path, &err);
  free(state_path);
  if (err) {
    log_warn("%s", err);
    PC_FREE(err);
  }
  app_keys_config(opts, &A.keycfg);
  /* Owned copies: opts is freed after a reload. */
  A.key_directory = opts->key_directory ? pc_strdup(opts->key_directory)
                                        : NULL;
  A.keycfg.key_directory = A.key_directory;
  A.keycfg.nickname = A.nickname;
  A.keys = router_keys_load_or_create(opts->data_directory, &A.keycfg,
                                      time(NULL), &err);
  if (!A.keys) {
    log_err("%s", err ? err : "Could not load or create keys");
    free(err);
    return -1;
  }
  char *fp = router_keys_format_rsa_fingerprint(opts->nickname,
                                                A.keys->rsa_id_digest, 1);
  char *ed = router_keys_format_ed25519_id(opts->nickname,
                                           A.keys->ed_identity.pub);
  log_notice("Your relay's identity key fingerprint is '%s'", fp);
  log_notice("Your relay's Ed25519 identity is '%s'", ed);
  free(fp);
  free(ed);

  dos_init(loop);
  A.dos_opts = *(const dos_options_t *)options_module(opts, &dos_conf_module);
  apply_dos();
  channels_init(loop, A.keys);
  circuits_init();
  /* The handshake workers start later: app_start_workers(). */
  /* Observers outlive circuits_init(); app_shutdown() removes it. */
  circuits_add_close_observer(log_circuit_close, NULL);
  apply_max_mem(opts);
  apply_bandwidth(opts);
  memset(&A.sched, 0, sizeof(A.sched));
  apply_scheduler(opts);
  raise_fd_limit();
  apply_pctcp(opts);
  if (apply_ipsec(opts) < 0)
    return -1;
  if (apply_dgram(opts) < 0)
    return -1;
  extend_init(allow_private(opts));
  dircache_init(loop);
  dircache_register("/tor/server/authority", own_descriptor, NULL);
  measureme_config_t mmc;
  measureme_config(opts, &mmc);
  measureme_init(loop, opts->data_directory, &mmc);
  exit_config_t no_exit;
  memset(&no_exit, 0, sizeof(no_exit));
  exit_init(loop, &no_exit);
  exit_set_relay_lookup(exit_relay_known, NULL);
  memset(&A.cfx, 0, sizeof(A.cfx));
  A.cfx.enabled = 1;
  conflux_exit_init(loop, &A.cfx);
  apply_conflux_options(opts);
  set_my_addrs(opts);
  A.started = 1;
  A.start_time = time(NULL);
  apply_heartbeat(opts);
  apply_state_saving(opts);

  if (opts->or_ports.n == 0)
    log_notice("No ORPort configured: nothing will connect to this relay");
  if (open_orports(opts) < 0)
    return -1;
  if (open_dirports(opts) < 0)
    return -1;
  A.key_timer = evloop_timer_new(loop, key_timer_cb, NULL);
  evloop_timer_schedule_periodic(A.key_timer, KEY_CHECK_INTERVAL_USEC);
  if (configure_exit(opts) < 0)
    return -1;
  if (opts->or_ports.n > 0) {
    /* A relay caches the directory and serves it over BEGIN_DIR. */
    if (start_directory_client(opts) == 0 && opts->dir_cache)
      start_cache_of_other_flavor(opts);
    if (options_warn_no_contact_info(opts))
      log_warn("Your ContactInfo config option is not set. Please strongly "
               "consider setting it, so the directory authorities and "
               "relay operators can contact you if your relay is "
               "misconfigured or something else goes wrong.");
    start_hibernation(opts); /* first: the descriptor depends on it */
    configure_publishing(opts);
  }
  apply_dirreq_stats(opts);
  if (start_client(opts) < 0)
    return -1;
  if (start_control(opts) < 0) /* ControlPort, MetricsPort */
    return -1;
  return 0;
}

void
app_start_workers(const options_t *opts)
{
  if (A.keys &&
      cpuworker_init(A.loop, options_module(opts, &cpuworker_conf_module),
                     command_create_finish, command_create_expired) < 0)
    log_warn("Cannot start the circuit handshake workers; handshakes are "
             "computed in the main thread");
}

int
app_reconfigure(const options_t *old_opts, const options_t *new_opts)
{
  A.opts = new_opts;
  if (A.hib)
    hibernate_configure(A.hib,
                        options_module(new_opts, &hibernate_conf_module),
                        hib_rate(new_opts), time(NULL));
  extend_set_allow_private(allow_private(new_opts));
  apply_max_mem(new_opts);
  apply_bandwidth(new_opts);
  apply_scheduler(new_opts);
  measureme_config_t mmc;
  measureme_config(new_opts, &mmc);
  measureme_configure(&mmc);
  apply_conflux_options(new_opts);
  const dgram_options_t *odg = options_module(old_opts, &dgram_conf_module);
  const dgram_options_t *ndg = options_module(new_opts, &dgram_conf_module);
  A.dos_opts =
      *(const dos_options_t *)options_module(new_opts, &dos_conf_module);
  apply_dos();
  cpuworker_set_options(options_module(new_opts, &cpuworker_conf_module));
  if (new_opts->per_circuit_tcp != old_opts->per_circuit_tcp ||
      odg->transport != ndg->transport ||
      new_opts->per_circuit_tcp_max_connections !=
          old_opts->per_circuit_tcp_max_connections ||
      new_opts->per_circuit_tcp_spares != old_opts->per_circuit_tcp_spares)
    apply_pctcp(new_opts);
  apply_ipsec(new_opts);
  (void)apply_dgram(new_opts);
  apply_heartbeat(new_opts);
  apply_state_saving(new_opts);
  set_my_addrs(new_opts);
  A.keycfg.onion_key_rotation_days = new_opts->onion_key_rotation_days;
  A.keycfg.onion_key_grace_days = new_opts->onion_key_grace_period_days;
  if (strcmp(A.nickname, new_opts->nickname)) {
    char *err = NULL;
    free(A.nickname);
    A.nickname = pc_strdup(new_opts->nickname);
    A.keycfg.nickname = A.nickname;
    if (router_keys_write_fingerprints(A.keys, A.data_directory, A.nickname,
                                       &err) < 0) {
      log_warn("Could not rewrite the fingerprint files: %s",
               err ? err : "?");
      free(err);
    }
  }
  /* Rotation settings may make a rotation due now. */
  key_timer_cb(NULL);
  configure_outbound_binds(new_opts);
  (void)configure_geoip(new_opts, old_opts, 0);
  if (configure_exit(new_opts) < 0)
    log_warn("Keeping the previous exit configuration.");
  if (new_opts->or_ports.n > 0)
    configure_publishing(new_opts);
  apply_dirreq_stats(new_opts);
  if (A.client_started) {
    client_config_t cc;
    build_path_config(new_opts);
    fill_client_config(&cc, new_opts);
    client_reconfigure(&cc);
  }
  reconfigure_control(new_opts); /* ControlPort, MetricsPort */
  ctl_conf_changed(old_opts, new_opts);
  return 0;
}

void
app_log_statistics(void)
{
  if (!A.started)
    return;
  channel_stats_t cs;
  channels_get_stats(&cs);
  log_notice("Statistics: %u open connections (%u per circuit), %u in "
             "handshake; %u relayed circuits, %u own circuits; %llu cells "
             "in, %llu out",
             cs.n_open, cs.n_per_circuit, cs.n_handshaking,
             circuits_count(CIRC_KIND_OR), circuits_count(CIRC_KIND_ORIGIN),
             (unsigned long long)cs.cells_in,
             (unsigned long long)cs.cells_out);
  log_notice("Statistics: %llu outgoing connection set-ups, %.1f ms on "
             "average (TCP, TLS and link handshake), %.1f ms at most",
             (unsigned long long)cs.setups,
             cs.setups ? cs.setup_us_total / 1000.0 / cs.setups : 0.0,
             cs.setup_us_max / 1000.0);
  scheduler_stats_t ss;
  scheduler_get_stats(&ss);
  log_notice("Statistics: scheduler %s: %llu runs, %llu cells; connections "
             "waited %llu times for the kernel and %llu times for bandwidth "
             "tokens; %u with queued cells",
             A.sched.halflife_sec > 0 ? "EWMA" : "round robin",
             (unsigned long long)ss.runs, (unsigned long long)ss.cells,
             (unsigned long long)ss.kernel_limited,
             (unsigned long long)ss.token_limited, ss.channels_active);
  pctcp_stats_t ps;
  pctcp_get_stats(&ps);
  log_notice("Statistics: PerCircuitTCP opened %llu connections and %llu "
             "spares (%llu used); %llu circuits shared one over the limit, "
             "%llu by peer policy; %llu KB in cell queues",
             (unsigned long long)ps.per_circuit_opened,
             (unsigned long long)ps.spares_opened,
             (unsigned long long)ps.spares_used,
             (unsigned long long)ps.shared_over_limit,
             (unsigned long long)ps.shared_by_policy,
             (unsigned long long)(cell_queues_total_bytes() >> 10));
  unsigned n_exit;
  uint64_t exit_bytes;
  exit_get_buffered(&n_exit, &exit_bytes);
  conflux_exit_log_sets();
  if (A.ipsec) {
    ipsec_broker_stats_t is;
    ipsec_broker_get_stats(A.ipsec, &is);
    log_notice("Statistics: IPsec: %u known peers, %u offering IPsec, %u "
               "SAs up; %llu announcements sent, %llu received, %llu "
               "refused; %llu initiations (%llu failed); charon connected "
               "%llu times, lost %llu times; %llu SA set-ups, mean %llu ms",
               is.n_peers, is.n_offering, is.n_sa_up,
               (unsigned long long)is.announce_sent,
               (unsigned long long)is.announce_received,
               (unsigned long long)is.announce_refused,
               (unsigned long long)is.initiations,
               (unsigned long long)is.initiation_failures,
               (unsigned long long)is.charon_connects,
               (unsigned long long)is.charon_losses,
               (unsigned long long)is.sa_setups,
               (unsigned long long)(is.sa_setups ? is.sa_setup_us_total /
                                    is.sa_setups / 1000 : 0));
    log_notice("Statistics: IPsec: extensions %llu per circuit inside "
               "IPsec, %llu per circuit without it, %llu over a shared "
               "connection (%llu to relays offering IPsec, with no usable "
               "SA yet)",
               (unsigned long long)is.verdict_ipsec,
               (unsigned long long)is.verdict_plain,
               (unsigned long long)is.verdict_shared,
               (unsigned long long)is.verdict_shared_waiting);
    log_notice("Statistics: IPsec trust: refused %llu relays not listed in "
               "the consensus, %llu announcing another ORPort, %llu over "
               "IPsecMaxPeersPerAddress; evicted %llu unlisted relays with "
               "SAs",
               (unsigned long long)is.refused_unlisted,
               (unsigned long long)is.refused_port,
               (unsigned long long)is.refused_per_addr,
               (unsigned long long)is.evicted_with_sa);
  }
  if (A.dgram) {
    dgram_stats_t ds;
    dgram_get_stats(A.dgram, &ds);
    log_notice("Statistics: datagram links: %u (%u up); opened %llu, "
               "accepted %llu, authenticated %llu, closed %llu; refused "
               "%llu identities, %llu failed handshakes, %llu over the "
               "limit; %llu cookies sent, %llu datagrams without a link "
               "dropped, %llu oversize, %llu dropped by the kernel (receive "
               "buffer %llu bytes full); records %llu in, %llu out; dropped "
               "%llu undecryptable, %llu bad frames, %llu unknown types, "
               "%llu before authentication",
               ds.links, ds.links_up, (unsigned long long)ds.links_opened,
               (unsigned long long)ds.links_accepted,
               (unsigned long long)ds.links_authenticated,
               (unsigned long long)ds.links_closed,
               (unsigned long long)ds.auth_failed,
               (unsigned long long)ds.handshake_failed,
               (unsigned long long)ds.refused_full,
               (unsigned long long)ds.hello_verify_sent,
               (unsigned long long)ds.dropped_no_link,
               (unsigned long long)ds.dropped_oversize,
               (unsigned long long)ds.dropped_rcvbuf,
               (unsigned long long)ds.rcvbuf_bytes,
               (unsigned long long)ds.records_in,
               (unsigned long long)ds.records_out,
               (unsigned long long)ds.dropped_dtls,
               (unsigned long long)ds.dropped_frame,
               (unsigned long long)ds.dropped_type,
               (unsigned long long)ds.dropped_early);
  }
  if (A.btcirc) {
    btcirc_stats_t bs;
    btcirc_get_stats(A.btcirc, &bs);
    log_notice("Statistics: BackTap: %u links, %u circuit hops; extensions "
               "%llu over BackTap, %llu over TLS (%llu to relays with no "
               "DatagramPort known); %llu circuits from peers; "
               "cells %llu sent, %llu retransmitted, %llu received, %llu "
               "delivered; feedback %llu sent, %llu received; dropped "
               "%llu malformed, %llu unknown circuit, %llu duplicate, %llu "
               "out of window, %llu excess, %llu forged feedback; %llu "
               "timeouts, %llu failed circuits; %llu bytes held",
               bs.carry.links, bs.carry.hops,
               (unsigned long long)bs.carry.ext_carried,
               (unsigned long long)bs.carry.ext_tls,
               (unsigned long long)bs.carry.ext_tls_no_port,
               (unsigned long long)bs.carry.hops_in,
               (unsigned long long)bs.bt.cells_sent,
               (unsigned long long)bs.bt.cells_retransmitted,
               (unsigned long long)bs.bt.cells_received,
               (unsigned long long)bs.bt.cells_delivered,
               (unsigned long long)bs.bt.feedback_sent,
               (unsigned long long)bs.bt.feedback_received,
               (unsigned long long)bs.bt.malformed,
               (unsigned long long)bs.bt.unknown_flow,
               (unsigned long long)bs.bt.duplicate,
               (unsigned long long)bs.bt.out_of_window,
               (unsigned long long)bs.bt.excess_dropped,
               (unsigned long long)bs.bt.forged_feedback,
               (unsigned long long)bs.bt.timeouts,
               (unsigned long long)bs.bt.flows_failed,
               (unsigned long long)bs.mem_bytes);
  }
  if (A.dtcp) {
    dtcp_stats_t ts;
    dtcp_get_stats(A.dtcp, &ts);
    log_notice("Statistics: TCP-over-DTLS: %u links, %u circuit hops; "
               "extensions %llu over TCP-over-DTLS, %llu over TLS (%llu to "
               "relays with no DatagramPort known); %llu "
               "hops from peers, %llu refused; cells %llu sent, %llu "
               "received; %llu connections failed, %llu reset without a "
               "first cell; segments %llu in, %llu "
               "out, dropped %llu malformed, %llu SYNs over the limits; "
               "%llu segments retransmitted (%llu timeouts, %llu fast "
               "retransmits); send buffer full %llu times, %.1f s; "
               "%llu bytes held (%zu per connection's control block)",
               ts.carry.links, ts.carry.hops,
               (unsigned long long)ts.carry.ext_carried,
               (unsigned long long)ts.carry.ext_tls,
               (unsigned long long)ts.carry.ext_tls_no_port,
               (unsigned long long)ts.carry.hops_in,
               (unsigned long long)ts.carry.hops_refused,
               (unsigned long long)ts.cells_sent,
               (unsigned long long)ts.cells_received,
               (unsigned long long)ts.conn_failed,
               (unsigned long long)ts.first_cell_timeouts,
               (unsigned long long)ts.tcp.segs_in,
               (unsigned long long)ts.tcp.segs_out,
               (unsigned long long)ts.tcp.dropped_bad,
               (unsigned long long)ts.tcp.dropped_syn_rate,
               (unsigned long long)ts.tcp.retrans,
               (unsigned long long)ts.tcp.timeouts,
               (unsigned long long)ts.tcp.fast_retransmits,
               (unsigned long long)ts.sndbuf_full,
               (double)ts.sndbuf_full_us / 1e6,
               (unsigned long long)ts.tcp.mem_bytes, ts.tcp.pcb_bytes);
  }
  log_notice("Statistics: %u exit streams holding %llu bytes in their "
             "buffers; %llu bytes in cell queues",
             n_exit, (unsigned long long)exit_bytes,
             (unsigned long long)cell_queues_total_bytes());
  char dos_line[512];
  dos_heartbeat_line(dos_line, sizeof(dos_line));
  log_notice("%s", dos_line);
  if (cpuworker_enabled()) {
    cpuworker_heartbeat_line(dos_line, sizeof(dos_line));
    log_notice("%s", dos_line);
  }
  char holders[256];
  memacct_describe(holders, sizeof(holders));
  circuits_oom_stats_t oom;
  circuits_get_oom_stats(&oom);
  log_notice("Statistics: memory budget %llu KB of MaxMemInQueues %llu KB "
             "(%s); the OOM handler ran %llu times, closed %llu circuits "
             "and %llu connections and freed %llu KB; %llu runs found "
             "nothing to free; %llu streams ended over their buffer limit",
             (unsigned long long)(memacct_total() >> 10),
             (unsigned long long)(circuits_max_mem_in_queues() >> 10),
             holders, (unsigned long long)oom.n_oom_events,
             (unsigned long long)oom.n_circuits_killed,
             (unsigned long long)oom.n_conns_killed,
             (unsigned long long)(oom.bytes_freed >> 10),
             (unsigned long long)oom.n_futile,
             (unsigned long long)edge_streams_ended_over_pending());
}

void
app_shutdown(void)
{
  shutdown_control(); /* ControlPort, MetricsPort: first, while the
                       * circuits they observe still exist */
  selftest_free(A.selftest); /* its test circuit, while circuits exist */
  selftest_free(A.selftest6);
  A.pub_opts = NULL;
  if (A.started) {
    if (A.client_started)
      client_shutdown();
    conflux_exit_shutdown();
    exit_shutdown();
    measureme_shutdown();
    dirport_shutdown();
    dirdocs_unregister();
    dircache_shutdown();
    /* Directory fetches in flight may use circuits (BEGIN_DIR to a
     * cache): end them while circuits and channels still exist. */
    dir_client_free(A.dirc);
    dir_client_free(A.dirc_other);
    btcirc_free(A.btcirc); /* closes its carried channels */
    dtcp_free(A.dtcp);     /* the same */
    dgram_free(A.dgram); /* before channels: it observes them */
    cpuworker_shutdown(); /* joins the workers: before keys and channels */
    channels_shutdown();
    circuits_shutdown();
    dos_shutdown();
    circuits_remove_close_observer(log_circuit_close, NULL);
    relay_clear_handlers();
    A.started = 0;
  }
  ipsec_broker_free(A.ipsec);
  evloop_timer_free(A.heartbeat);
  evloop_timer_free(A.state_timer);
  evloop_timer_free(A.key_timer);
  publish_save_history(A.pub, A.state, time(NULL));
  publish_free(A.pub);
  dirreq_stats_free(A.dirreq);
  command_set_create_gate(NULL);
  relay_set_begin_gate(NULL);
  hibernate_save_state(A.hib, A.state);
  hibernate_free(A.hib);
  exit_policy_free(A.exit_policy);
  free_exit_desc_lines();
  dns_resolver_free(A.dns);
  dir_client_free(A.dirc);
  dir_client_free(A.dirc_other);
  free(A.dirc_auths);
  conn_set_default_buckets(NULL, 0);
  ratelimit_free(A.bw_global);
  ratelimit_free(A.bw_relay);
  path_config_clear(&A.pathcfg);
  router_keys_free(A.keys);
  if (A.state && statefile_is_dirty(A.state)) {
    char *serr = NULL;
    if (statefile_save(A.state, time(NULL), &serr) < 0)
      log_warn("%s", serr);
    free(serr);
  }
  statefile_free(A.state);
  packed_cell_freelist_clear();
  free(A.nickname);
  free(A.data_directory);
  geoip_db_free(A.geoip);
  free(A.key_directory);
  if (A.lock_fd > 0)
    close(A.lock_fd); /* releases tor's DataDirectory lock */
  memset(&A, 0, sizeof(A));
}
