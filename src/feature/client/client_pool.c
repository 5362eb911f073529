/* SPDX-License-Identifier: BSD-3-Clause */
/* client_pool.c -- the SocksPort client's circuit pool (client_internal.h):
 * which circuit a stream takes (its isolation allows it, client_port.h;
 * the exit policy accepts the port; not dirtier than MaxCircuitDirtiness,
 * which KeepAliveIsolateSOCKSAuth renews; else a clean preemptive
 * one; else a new one), launching a circuit or a conflux set (paths from
 * feature/dir's path selection; a set's legs share the exit and use
 * distinct guards and middles), and preemptive circuits built ahead of
 * need for the ports streams asked for in the last hour (see client.c's
 * header for the rules).
 */
#include "feature/client/client_internal.h"
#include "feature/conflux/conflux_cell.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The isolation values of cs (client_port.h): its port's fields and
 * session group; a controller's lookup (no port) has the defaults and a
 * group of its own. */
static void
stream_iso(const cstream_t *cs, client_iso_t *out)
{
  const client_port_t *p = cs->port;
  client_iso_from_request(out, &cs->req, cs->conn ? conn_peer(cs->conn) : NULL,
                          p ? p->iso : CLIENT_ISO_DEFAULT,
                          p ? p->session_group : INT_MIN);
  if (cs->orig_address) /* IsolateDestAddr: as the application asked */
    snprintf(out->dest_addr, sizeof(out->dest_addr), "%s", cs->orig_address);
}

void
ccirc_note_stream_iso(ccirc_t *cc, const cstream_t *cs)
{
  client_iso_t *iso = pc_malloc(sizeof(*iso));
  stream_iso(cs, iso);
  if (cc->iso_open) { /* a clean circuit: the stream's isolation now */
    cc->iso_open = 0;
    memset(&cc->iso, 0, sizeof(cc->iso));
  }
  client_iso_add(&cc->iso, iso);
  pc_memwipe(iso, sizeof(*iso));
  free(iso);
}

/* Does the exit of cc accept port (by its policy summary)? */
static int
exit_accepts(const ccirc_t *cc, uint16_t port)
{
  if (cc->pinned_exit)
    return 1;
  const dir_nodelist_t *nl = client_nodelist();
  if (!nl)
    return 0;
  const dir_node_t *nd = dir_nodelist_find_id(nl, cc->exit_id);
  return nd && nd->policy && policy_summary_allows_port(nd->policy, port);
}

/* Should a new circuit to this exit be a conflux set, and of how many
 * legs? 0: plain. */
static int
conflux_legs_for(const dir_node_t *exit, int want_cc)
{
  const dir_nodelist_t *nl = client_nodelist();
  const consensus_t *c = nl ? nl->consensus : NULL;
  int enabled = client_g.cfg.conflux_enabled;
  if (enabled < 0) /* auto: the consensus decides (tor's default: on) */
    enabled = c ? consensus_get_param(c, "cfx_enabled", 1, 0, 1) : 1;
  if (!enabled || !want_cc ||
      !circbuild_protocols_support(exit->protocols, "Conflux", 1))
    return 0;
  int legs = client_g.cfg.conflux_legs;
  if (legs <= 0)
    legs = c ? consensus_get_param(c, "cfx_num_legs_set", 2, 0, 255) : 2;
  if (legs > CFX_MAX_LEGS)
    legs = CFX_MAX_LEGS;
  return legs >= 2 ? legs : 0;
}

/* Paths for the further legs of a conflux set: the same exit, a guard and
 * a middle no other leg uses. Returns how many legs have paths (>= 1). */
static int
choose_leg_paths(const dir_nodelist_t *nl, int port, int want,
                 const dir_node_t *paths[][CLIENT_HOPS])
{
  path_rng_t rng = path_rng_crypto();
  const dir_node_t *used[CFX_MAX_LEGS * 2 + 1];
  int n_used = 0;
  used[n_used++] = paths[0][2];
  used[n_used++] = paths[0][0];
  used[n_used++] = paths[0][1];
  int n = 1;
  for (; n < want; n++) {
    (void)port;
    const dir_node_t *g = client_choose_guard(nl, used, n_used);
    if (!g)
      break;
    used[n_used++] = g;
    const dir_node_t *m = path_choose_node(
        nl, PATH_POS_MIDDLE, client_g.cfg.path, port, used, n_used, &rng);
    if (!m) {
      n_used--;
      break;
    }
    used[n_used++] = m;
    paths[n][0] = g;
    paths[n][1] = m;
    paths[n][2] = paths[0][2];
  }
  return n;
}

cleg_t *
client_leg_start(ccirc_t *cc, const dir_node_t *const *path, int n_hops,
                 int want_cc)
{
  extend_target_t hops[CIRCUIT_MAX_HOPS];
  if (n_hops < 1 || n_hops > CIRCUIT_MAX_HOPS)
    return NULL;
  for (int i = 0; i < n_hops; i++) {
    if (!path[i]->has_ntor)
      return NULL;
    dir_node_extend_target(path[i], &hops[i]);
  }
  /* Congestion control with the exit where the consensus and the exit
   * allow it (proposal 324 section 10.1). */
  if (want_cc)
    circbuild_exit_request_cc(&hops[n_hops - 1], cc_params_current()->alg,
                              path[n_hops - 1]->protocols);
  /* A plain circuit asks the exit to drop the end-to-end windows; core
   * sends the request only over a BackTap first hop. */
  if (!cc->cfx && n_hops > 1)
    circbuild_exit_request_nowin(&hops[n_hops - 1],
                                 path[n_hops - 1]->protocols);
  cleg_t *leg = pc_zalloc(sizeof(*leg));
  leg->owner = cc;
  snprintf(leg->path, sizeof(leg->path), "%s -> %s", path[0]->nickname,
           n_hops > 1 ? path[1]->nickname : "(none)");
  memcpy(leg->guard_id, path[0]->rsa_id, 20);
  if (n_hops > 1)
    memcpy(leg->middle_id, path[1]->rsa_id, 20);
  cc->legs[cc->n_legs++] = leg;
  leg->cb = circbuild_start(hops, n_hops, &client_circ_cbs, leg);
  if (!leg->cb) {
    cc->legs[--cc->n_legs] = NULL;
    free(leg);
    return NULL;
  }
  return leg;
}

int
client_leg_extend(cleg_t *leg, const dir_node_t *const *path, int n,
                  int want_cc)
{
  extend_target_t hops[CIRCUIT_MAX_HOPS];
  if (n < 1 || n > CIRCUIT_MAX_HOPS || !leg->cb)
    return -1;
  for (int i = 0; i < n; i++) {
    if (!path[i]->has_ntor)
      return -1;
    dir_node_extend_target(path[i], &hops[i]);
  }
  if (want_cc)
    circbuild_exit_request_cc(&hops[n - 1], cc_params_current()->alg,
                              path[n - 1]->protocols);
  if (!leg->owner->cfx)
    circbuild_exit_request_nowin(&hops[n - 1], path[n - 1]->protocols);
  return circbuild_extend(leg->cb, hops, n);
}

/* The port a stream's exit must allow: a lookup takes an exit that
 * serves port 80 (one that resolves names, surely). */
static uint16_t
stream_port(const socks_request_t *req)
{
  return req->command == SOCKS_CMD_CONNECT ? req->port : 80;
}

/* quiet: the "No path" notice was given for this stream already (a retry
 * of a waiting stream); say it at info level. */
static ccirc_t *
launch_circuit(const socks_request_t *req, const client_iso_t *iso,
               int quiet)
{
  const dir_nodelist_t *nl = client_nodelist();
  if (!client_enough_dir_info(nl))
    return NULL;
  const dir_node_t *paths[CFX_MAX_LEGS][CLIENT_HOPS];
  path_rng_t rng = path_rng_crypto();
  char *err = NULL;
  int pinned = 0, port = stream_port(req);
  /* The guard first, from the entry guards (guards.h); the exit and
   * middle are drawn to fit it. A guard that fits no exit for the port
   * is avoided (with its family) for a next try, a few times. */
  const dir_node_t *tried[4];
  int n_tried = 0, ok = 0;
  while (!ok && n_tried < 4) {
    const dir_node_t *guard = client_choose_guard(nl, tried, n_tried);
    if (!guard) {
      /* Keep why the last guard tried did not fit: that is the reason an
       * operator can act on. */
      char *why = n_tried && err
                      ? pc_asprintf("no other usable guard fits (with %s: %s)",
                                    tried[n_tried - 1]->nickname, err)
                      : pc_strdup(n_tried ? "no other usable guard fits"
                                          : "no usable entry guard");
      free(err);
      err = why;
      break;
    }
    tried[n_tried++] = guard;
    port = stream_port(req);
    PC_FREE(err);
    if (path_choose(nl, client_g.cfg.path, CLIENT_HOPS, port, guard, &rng,
                    paths[0], &err) == 0) {
      ok = 1;
      break;
    }
    if (client_g.cfg.exit_nodes_pinned) {
      PC_FREE(err);
      port = 0;
      if (path_choose(nl, client_g.cfg.path, CLIENT_HOPS, 0, guard, &rng,
                      paths[0], &err) == 0) {
        ok = pinned = 1;
        break;
      }
    }
  }
  if (!ok) {
    if (quiet)
      log_info("Still no path for a stream to port %u: %s", req->port,
               err ? err : "?");
    else
      log_notice("No path for a stream to port %u: %s", req->port,
                 err ? err : "?");
    free(err);
    return NULL;
  }
  const dir_node_t *exit = paths[0][CLIENT_HOPS - 1];
  /* Would the exit take congestion control (needed for conflux)? */
  extend_target_t probe;
  dir_node_extend_target(exit, &probe);
  int want_cc = circbuild_exit_request_cc(&probe, cc_params_current()->alg,
                                          exit->protocols);
  int n_legs = 1;
  int want_legs = conflux_legs_for(exit, want_cc);
  if (want_legs) {
    n_legs = choose_leg_paths(nl, port, want_legs, paths);
    if (n_legs < 2) {
      client_g.stats.n_conflux_fallbacks++;
      log_info("No guard and middle left for a second conflux leg to %s; "
               "using a plain circuit",
               exit->nickname);
      n_legs = 1;
    }
  }
  ccirc_t *cc = pc_zalloc(sizeof(*cc));
  dlist_init(&cc->streams);
  memcpy(cc->exit_id, exit->rsa_id, 20);
  cc->pinned_exit = pinned;
  cc->exit_port_ok = (uint16_t)port;
  if (iso)
    client_iso_add(&cc->iso, iso);
  cc->created_us = evloop_now_us(client_g.loop);
  cc->edge = edge_new(&client_end_ops, cc, client_g.loop);
  cc->serial = ++client_g.next_serial;
  if (n_legs > 1) {
    crypt_rand(cc->nonce, sizeof(cc->nonce));
    cfx_alg_t alg = client_g.cfg.conflux_alg
                        ? (cfx_alg_t)client_g.cfg.conflux_alg
                        : CFX_ALG_MINRTT;
    cc->cfx = cfx_set_new(cc->nonce, alg, client_g.cfg.conflux_max_ooo,
                          cleg_state);
  }
  dlist_insert_tail(&client_g.circs, &cc->node);
  client_g.stats.n_circuits++;
  for (int l = 0; l < n_legs; l++) {
    const dir_node_t *const *p = paths[l];
    if (cc->cfx)
      log_info("Conflux set #%llu for port %u: leg %d %s -> %s -> %s "
               "(congestion control and link with the exit)",
               (unsigned long long)cc->serial, req->port, l + 1,
               p[0]->nickname, p[1]->nickname, p[2]->nickname);
    else
      log_info("Building a circuit %s -> %s -> %s for port %u (#%llu)%s",
               p[0]->nickname, p[1]->nickname, p[2]->nickname, req->port,
               (unsigned long long)cc->serial,
               want_cc ? " (asking the exit for congestion control)" : "");
    client_leg_start(cc, p, CLIENT_HOPS, want_cc);
  }
  if (cc->n_legs == 0) {
    dlist_remove(&cc->node);
    client_g.stats.n_circuits--;
    cfx_set_free(cc->cfx);
    edge_free(cc->edge);
    free(cc);
    return NULL;
  }
  return cc;
}

int
ccirc_usable(const ccirc_t *cc)
{
  if (cc->dead || cc->timed_out)
    return 0;
  if (!cc->built)
    return 1;
  for (int i = 0; i < cc->n_legs; i++)
    if (cc->legs[i]->circ && !cc->legs[i]->circ->base.marked_for_close)
      return 1;
  return 0;
}

/* Remember that a stream asked for port (tor's predicted ports). */
void
client_predict_port(uint16_t port, uint64_t now)
{
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++)
    if (client_g.predicted[i].last_us && client_g.predicted[i].port == port) {
      client_g.predicted[i].last_us = now;
      return;
    }
  /* A free slot, else the least recently asked port's. */
  int slot = 0;
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++) {
    if (!client_g.predicted[i].last_us) {
      slot = i;
      break;
    }
    if (client_g.predicted[i].last_us < client_g.predicted[slot].last_us)
      slot = i;
  }
  if (client_g.predicted[slot].last_us)
    log_info("Forgetting predicted port %u for port %u",
             client_g.predicted[slot].port, port);
  client_g.predicted[slot].port = port;
  client_g.predicted[slot].last_us = now ? now : 1;
}

/* Keep a clean circuit ready for each predicted port (the most recently
 * asked first), PREEMPTIVE_MAX_CLEAN at most in all; runs from the
 * client's timer and after a stream took a clean circuit. */
void
client_preempt_cb(void *arg)
{
  (void)arg;
  if (!client_enough_dir_info(client_nodelist()))
    return; /* no consensus, or too few descriptors yet */
  uint64_t now = evloop_now_us(client_g.loop);
  if (now < client_g.preempt_not_before_us)
    return;
  int n_clean = 0, n_ports = 0;
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    const ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (cc->iso_open && ccirc_usable(cc))
      n_clean++;
  }
  int done[PREDICTED_PORTS_MAX] = {0};
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++) {
    if (client_g.predicted[i].last_us &&
        now - client_g.predicted[i].last_us > PREDICTED_PORT_LIFETIME_US) {
      log_info("Port %u is no longer predicted (not asked for in an hour)",
               client_g.predicted[i].port);
      client_g.predicted[i].last_us = 0;
    }
    if (client_g.predicted[i].last_us)
      n_ports++;
  }
  while (n_clean < PREEMPTIVE_MAX_CLEAN) {
    int best = -1;
    for (int i = 0; i < PREDICTED_PORTS_MAX; i++)
      if (client_g.predicted[i].last_us && !done[i] &&
          (best < 0 ||
           client_g.predicted[i].last_us > client_g.predicted[best].last_us))
        best = i;
    if (best < 0)
      return;
    done[best] = 1;
    uint16_t port = client_g.predicted[best].port;
    int covered = 0;
    for (dlist_node_t *n = dlist_first(&client_g.circs); n && !covered;
         n = dlist_next(&client_g.circs, n)) {
      const ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
      covered = cc->iso_open && ccirc_usable(cc) &&
                (cc->preempt_port == port || exit_accepts(cc, port));
    }
    if (covered)
      continue;
    log_info("Building a preemptive circuit for port %u (%d clean "
             "circuit%s, %d predicted port%s)",
             port, n_clean, n_clean == 1 ? "" : "s", n_ports,
             n_ports == 1 ? "" : "s");
    socks_request_t req;
    memset(&req, 0, sizeof(req));
    req.port = port;
    ccirc_t *cc = launch_circuit(&req, NULL, 0);
    if (!cc) {
      client_g.preempt_not_before_us = now + PREEMPTIVE_RETRY_US;
      return;
    }
    cc->preemptive = 1;
    cc->preempt_port = port;
    cc->iso_open = 1;
    n_clean++;
  }
}

/* A stream takes the clean circuit cc: it gets the stream's isolation,
 * and is measured from now on (MeasureMeHops). */
static void
take_clean_circuit(ccirc_t *cc, const cstream_t *cs, const client_iso_t *iso,
                   uint64_t now)
{
  cc->iso_open = 0;
  memset(&cc->iso, 0, sizeof(cc->iso));
  client_iso_add(&cc->iso, iso);
  if (cc->preemptive) {
    client_g.stats.n_preemptive_used++;
    if (cc->built)
      log_info("Stream to port %u attached to a preemptive %s built %.1f s "
               "ago",
               cs->req.port, cc->cfx ? "conflux set" : "circuit",
               (now - cc->idle_since_us) / 1e6);
    else
      log_info("Stream to port %u attached to a preemptive %s still being "
               "built",
               cs->req.port, cc->cfx ? "conflux set" : "circuit");
  }
  for (int i = 0; i < cc->n_legs; i++)
    if (cc->legs[i]->built && cc->legs[i]->circ)
      client_ask_measureme(cc->legs[i], cc->legs[i]->circ);
}

uint64_t
client_socks_timeout_us(void)
{
  unsigned s = client_g.cfg.socks_timeout ? client_g.cfg.socks_timeout
                                          : CLIENT_SOCKS_TIMEOUT_DEFAULT_S;
  return (uint64_t)s * 1000000ULL;
}

/* No circuit for cs now: keep it for the timer's retries, or fail it once
 * it has waited SocksTimeout. */
static void
wait_for_path(cstream_t *cs, uint64_t now)
{
  const char *why = client_enough_dir_info(client_nodelist())
                        ? "no suitable exit"
                        : "not enough directory information yet";
  if (!cs->path_wait_since_us) {
    cs->path_wait_since_us = now;
    client_g.stats.n_streams_waited_path++;
    log_info("Stream %llu to port %u waits for a circuit (%s), for up to "
             "%llu s (SocksTimeout)",
             (unsigned long long)cs->gid, cs->req.port, why,
             (unsigned long long)(client_socks_timeout_us() / 1000000));
  } else if (now - cs->path_wait_since_us >= client_socks_timeout_us()) {
    char *msg = pc_asprintf("no circuit (%s) after waiting %llu s "
                            "(SocksTimeout)",
                            why,
                            (unsigned long long)((now -
                                                  cs->path_wait_since_us) /
                                                 1000000));
    log_notice("A stream to port %u failed: %s", cs->req.port, msg);
    socks_stream_fail(cs, END_STREAM_REASON_NOROUTE, msg);
    free(msg);
    return;
  }
  cs->state = CS_WAIT_PATH;
  cs->circ = NULL;
  dlist_insert_tail(&client_g.unattached, &cs->node);
}

void
client_attach_unattached(cstream_state_t state)
{
  /* Take them off first: a stream that still finds no path goes back to
   * the list's tail, and this walk must not meet it again. */
  dlist_t retry;
  dlist_init(&retry);
  dlist_node_t *n, *next;
  for (n = dlist_first(&client_g.unattached); n; n = next) {
    next = dlist_next(&client_g.unattached, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state != state)
      continue;
    dlist_remove(&cs->node);
    dlist_insert_tail(&retry, &cs->node);
  }
  while ((n = dlist_first(&retry)) != NULL) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    dlist_remove(&cs->node);
    dlist_node_init(&cs->node);
    cs->state = CS_WAIT_CIRC;
    client_stream_attach(cs);
  }
}

void
client_stream_attach(cstream_t *cs)
{
  int detached = cs->gid != 0; /* its circuit closed before CONNECTED */
  if (!cs->requested_us)
    cs->requested_us = evloop_now_us(client_g.loop);
  if (!cs->gid)
    socks_stream_report(cs, client_stream_is_resolve(cs)
                                ? CLIENT_STREAM_NEWRESOLVE
                                : CLIENT_STREAM_NEW);
  if (client_g.cfg.leave_streams_unattached && !cs->ctl_release) {
    /* __LeaveStreamsUnattached: the controller attaches it. */
    if (detached)
      socks_stream_report(cs, CLIENT_STREAM_DETACHED);
    client_ctl_hold_stream(cs);
    return;
  }
  cs->ctl_release = 0;
  /* On the heap: it holds credentials and a host name (about 1.6 KB). */
  client_iso_t *iso = pc_malloc(sizeof(*iso));
  stream_iso(cs, iso);
  uint64_t now = evloop_now_us(client_g.loop);
  uint64_t max_dirty =
      (uint64_t)client_g.cfg.max_circuit_dirtiness * 1000000ULL;
  ccirc_t *use = NULL, *clean = NULL;
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!ccirc_usable(cc) || cc->controller || cc->retired)
      continue;
    if (!exit_accepts(cc, stream_port(&cs->req)))
      continue;
    if (cc->iso_open) {
      /* Clean: any isolation may take it; built ones first. */
      if (!clean || (cc->built && !clean->built))
        clean = cc;
      continue;
    }
    if (!client_iso_compatible(&cc->iso, iso))
      continue;
    if (cc->dirty_since_us && now - cc->dirty_since_us > max_dirty)
      continue;
    use = cc;
    break;
  }
  if (!client_stream_is_resolve(cs))
    client_predict_port(cs->req.port, now);
  if (!use && clean) {
    use = clean;
    take_clean_circuit(use, cs, iso, now);
    evloop_deferred_schedule(client_g.preempt_ev); /* replace it */
  }
  if (!use) {
    if (client_enough_dir_info(client_nodelist()))
      use = launch_circuit(&cs->req, iso, cs->path_wait_since_us != 0);
  } else if (!use->iso_open)
    client_iso_add(&use->iso, iso);
  if (use && cs->port && (cs->port->flags & CLIENT_PORT_KEEPALIVE_AUTH) &&
      (cs->port->iso & CLIENT_ISO_SOCKSAUTH) &&
      (cs->req.username_len || cs->req.password_len) && use->dirty_since_us)
    use->dirty_since_us = now; /* KeepAliveIsolateSOCKSAuth */
  pc_memwipe(iso, sizeof(*iso));
  free(iso);
  if (!use) {
    wait_for_path(cs, now);
    return;
  }
  cs->path_wait_since_us = 0;
  cs->circ = use;
  cs->state = CS_WAIT_CIRC;
  dlist_insert_tail(&use->streams, &cs->node);
  if (use->built)
    socks_send_begin(cs);
  else if (use->cfx)
    client_cfx_maybe_ready(use); /* a leg may have linked already */
}
