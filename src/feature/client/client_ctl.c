/* SPDX-License-Identifier: BSD-3-Clause */
/* client_ctl.c -- what a controller does with the SocksPort client by hand
 * (client.h: client_ctl_*): circuits over a path it names, streams it
 * holds back and attaches itself.
 *
 * Design:
 *  - A controller's circuit is an ordinary plain ccirc_t (one leg, no
 *    conflux) marked `controller`, so the pool never gives it a SOCKS
 *    stream: a measurement pins its streams to the path it asked for, and
 *    no stream of another application lands on it by chance. It is built,
 *    timed out, closed when idle and reported in CIRC events like any
 *    other.
 *  - With __LeaveStreamsUnattached a stream whose SOCKS handshake is done
 *    is reported NEW and held (CS_HELD, on client_g.unattached) until
 *    ATTACHSTREAM; one whose circuit closes before CONNECTED is reported
 *    DETACHED and held again, as in tor. Held streams wait at most
 *    SocksTimeout, then fail with reason TIMEOUT.
 *  - EXTENDCIRCUIT on an existing circuit appends hops to its builder
 *    (circbuild_extend); ATTACHSTREAM HOP=N sets the hop its streams leave
 *    at (ccirc_t.exit_hop), which client.c uses wherever it would use the
 *    last hop. The circuit end (edge_t) keeps one set of circuit windows,
 *    with that hop: so both are allowed only before the circuit carried a
 *    stream, and all streams of a circuit leave at one hop.
 *  - Circuits and streams are found by the IDs controllers see: circuit
 *    gids (any leg's) and the streams' process-wide IDs. The client has
 *    few circuits and streams, so these are list walks.
 *  - A conflux set's nonce, otherwise never logged, is given to the
 *    control port for CIRC events (CONFLUX_ID), as tor gives it, so that a
 *    controller can tell which circuits are legs of one set.
 */
#include "feature/client/client_internal.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
client_ctl_hold_stream(cstream_t *cs)
{
  cs->state = CS_HELD;
  cs->circ = NULL;
  cs->held_since_us = evloop_now_us(client_g.loop);
  dlist_insert_tail(&client_g.unattached, &cs->node);
  log_info("Stream %llu to port %u waits for a controller to attach it",
           (unsigned long long)cs->gid, cs->req.port);
}

void
client_ctl_expire_held(uint64_t now)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&client_g.unattached); n; n = next) {
    next = dlist_next(&client_g.unattached, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_HELD &&
        now - cs->held_since_us > client_socks_timeout_us())
      socks_stream_fail(cs, END_STREAM_REASON_TIMEOUT,
                        "no controller attached it in time");
  }
}

/* The client's circuit with a leg of this gid. */
static ccirc_t *
find_circ(uint64_t gid)
{
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (cc->dead)
      continue;
    for (int i = 0; i < cc->n_legs; i++) {
      const origin_circuit_t *oc =
          cc->legs[i]->circ ? cc->legs[i]->circ
          : cc->legs[i]->cb  ? circbuild_circuit(cc->legs[i]->cb)
                             : NULL;
      if (oc && oc->base.gid == gid)
        return cc;
    }
  }
  return NULL;
}

static cstream_t *
find_stream(uint64_t id)
{
  for (dlist_node_t *n = dlist_first(&client_g.unattached); n;
       n = dlist_next(&client_g.unattached, n)) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->gid == id && cs->state != CS_SOCKS)
      return cs;
  }
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    for (dlist_node_t *m = dlist_first(&cc->streams); m;
         m = dlist_next(&cc->streams, m)) {
      cstream_t *cs = DLIST_ENTRY(m, cstream_t, node);
      if (cs->gid == id)
        return cs;
    }
  }
  return NULL;
}

static int
not_running(char **err_out)
{
  *err_out = pc_strdup("pctor builds circuits and attaches streams for "
                       "controllers only with a SocksPort");
  return 551;
}

/* The client's circuit (is_stream 0) or stream (1) with this ID into
 * *out, or a reply code with *err_out: 551 without a client, 552
 * unknown. */
static int
lookup(int is_stream, uint64_t id, void **out, char **err_out)
{
  if (!client_g.loop)
    return not_running(err_out);
  *out = is_stream ? (void *)find_stream(id) : (void *)find_circ(id);
  if (*out)
    return 0;
  *err_out = pc_asprintf("Unknown %s \"%llu\"",
                         is_stream ? "stream" : "circuit",
                         (unsigned long long)id);
  return 552;
}

/* A relay of the consensus by "$HEX[~=]NICK", "$HEX", "HEX" or "NICK". */
static const dir_node_t *
find_node(const dir_nodelist_t *nl, const char *name)
{
  uint8_t id[20];
  const char *hex = name[0] == '$' ? name + 1 : name;
  size_t len = strcspn(hex, "~=");
  if (len == 40 && base16_decode(id, sizeof(id), hex, 40) == 20)
    return dir_nodelist_find_id(nl, id);
  if (name[0] == '$')
    return NULL;
  return dir_nodelist_find_nickname(nl, name);
}

/* Would we ask this last hop for congestion control? */
static int
last_hop_wants_cc(const dir_node_t *last)
{
  extend_target_t probe;
  memset(&probe, 0, sizeof(probe));
  probe.has_ed_id = last->has_ed25519;
  return circbuild_exit_request_cc(&probe, cc_params_current()->alg,
                                   last->protocols);
}

/* The relays a controller named (max hops at most), into nodes, and
 * whether the last one takes congestion control; 0 or a reply code with
 * *err_out. */
static int
resolve_path(const char *const *path, int n, int max, const dir_node_t **nodes,
             int *want_cc, char **err_out)
{
  if (!client_g.loop)
    return not_running(err_out);
  const dir_nodelist_t *nl = client_nodelist();
  if (!nl) {
    *err_out = pc_strdup("no consensus yet");
    return 551;
  }
  if (n < 1 || n > max) {
    *err_out = pc_asprintf("a path has 1 to %d relays", max);
    return 552;
  }
  for (int i = 0; i < n; i++) {
    nodes[i] = find_node(nl, path[i]);
    if (!nodes[i]) {
      *err_out = pc_asprintf("No such router \"%s\"", path[i]);
      return 552;
    }
    if (!nodes[i]->has_ntor) {
      *err_out = pc_asprintf("Router \"%s\" has no ntor onion key",
                             path[i]);
      return 551;
    }
  }
  *want_cc = last_hop_wants_cc(nodes[n - 1]);
  return 0;
}

/* Start a controller's circuit through nodes[0..n-1]. */
static int
start_controller_circuit(const dir_node_t *const *nodes, int n, int want_cc,
                         uint64_t *gid_out, char **err_out)
{
  ccirc_t *cc = pc_zalloc(sizeof(*cc));
  dlist_init(&cc->streams);
  memcpy(cc->exit_id, nodes[n - 1]->rsa_id, 20);
  cc->pinned_exit = 1; /* the controller decides what it may carry */
  cc->controller = 1;
  cc->created_us = evloop_now_us(client_g.loop);
  cc->edge = edge_new(&client_end_ops, cc, client_g.loop);
  dlist_insert_tail(&client_g.circs, &cc->node);
  client_g.stats.n_circuits++;
  cleg_t *leg = client_leg_start(cc, nodes, n, want_cc);
  if (!leg) {
    dlist_remove(&cc->node);
    client_g.stats.n_circuits--;
    edge_free(cc->edge);
    free(cc);
    *err_out = pc_strdup("could not start building the circuit");
    return 551;
  }
  *gid_out = circbuild_circuit(leg->cb)->base.gid;
  log_info("Controller circuit %llu: %d hops, %s -> ... -> %s",
           (unsigned long long)*gid_out, n, nodes[0]->nickname,
           nodes[n - 1]->nickname);
  return 0;
}

int
client_ctl_extend(const char *const *path, int n, uint64_t *gid_out,
                  char **err_out)
{
  const dir_node_t *nodes[CIRCUIT_MAX_HOPS];
  int want_cc = 0;
  int code = resolve_path(path, n, CIRCUIT_MAX_HOPS, nodes, &want_cc,
                          err_out);
  if (code)
    return code;
  return start_controller_circuit(nodes, n, want_cc, gid_out, err_out);
}

int
client_ctl_extend_auto(uint64_t *gid_out, char **err_out)
{
  if (!client_g.loop)
    return not_running(err_out);
  const dir_nodelist_t *nl = client_nodelist();
  if (!client_enough_dir_info(nl)) {
    *err_out = pc_strdup("not enough directory information to choose a "
                         "path yet");
    return 551;
  }
  const dir_node_t *guard = client_choose_guard(nl, NULL, 0);
  if (!guard) {
    *err_out = pc_strdup("no usable entry guard");
    return 551;
  }
  /* As for a stream to port 80 (an exit for the web), or with ExitNodes
   * pinned whatever their policies say, as the pool does. */
  const dir_node_t *nodes[CLIENT_HOPS];
  path_rng_t rng = path_rng_crypto();
  char *err = NULL;
  if (path_choose(nl, client_g.cfg.path, CLIENT_HOPS, 80, guard, &rng, nodes,
                  &err) < 0) {
    PC_FREE(err);
    if (!client_g.cfg.exit_nodes_pinned ||
        path_choose(nl, client_g.cfg.path, CLIENT_HOPS, 0, guard, &rng,
                    nodes, &err) < 0) {
      *err_out = pc_asprintf("no path: %s", err ? err : "?");
      free(err);
      return 551;
    }
  }
  return start_controller_circuit(nodes, CLIENT_HOPS,
                                  last_hop_wants_cc(nodes[CLIENT_HOPS - 1]),
                                  gid_out, err_out);
}

int
client_ctl_extend_existing(uint64_t gid, const char *const *path, int n,
                           char **err_out)
{
  void *found = NULL;
  int code = lookup(0, gid, &found, err_out);
  if (code)
    return code;
  ccirc_t *cc = found;
  cleg_t *leg = cc->n_legs == 1 ? cc->legs[0] : NULL;
  origin_circuit_t *oc = leg && leg->cb ? circbuild_circuit(leg->cb) : NULL;
  const char *why =
      !cc->controller || cc->cfx || !leg
          ? "pctor extends only circuits a controller built with "
            "EXTENDCIRCUIT 0"
      : cc->extending || !oc || oc->base.marked_for_close
          ? "the circuit is not open"
      : cc->dirty_since_us || !dlist_is_empty(&cc->streams)
          ? "pctor extends only circuits that have carried no stream (the "
            "circuit's windows are with its exit)"
          : NULL;
  if (why) {
    *err_out = pc_strdup(why);
    return 551;
  }
  const dir_node_t *nodes[CIRCUIT_MAX_HOPS];
  int want_cc = 0;
  if ((code = resolve_path(path, n, CIRCUIT_MAX_HOPS - oc->n_hops, nodes,
                           &want_cc, err_out)) != 0)
    return code;
  int was_built = cc->built;
  if (client_leg_extend(leg, nodes, n, want_cc) < 0) {
    *err_out = pc_strdup("could not extend the circuit");
    return 551;
  }
  memcpy(cc->exit_id, nodes[n - 1]->rsa_id, 20);
  cc->exit_hop = 0;
  cc->extending = was_built;
  log_info("Controller extends circuit %llu by %d hops to %s",
           (unsigned long long)gid, n, nodes[n - 1]->nickname);
  return 0;
}

int
client_ctl_has_circuit(uint64_t gid)
{
  return client_g.loop && find_circ(gid) != NULL;
}

int
client_ctl_conflux_id(uint64_t gid, uint8_t nonce_out[32],
                      uint64_t *rtt_us_out)
{
  ccirc_t *cc = client_g.loop ? find_circ(gid) : NULL;
  if (!cc || !cc->cfx)
    return 0;
  memcpy(nonce_out, cc->nonce, CFX_NONCE_LEN);
  *rtt_us_out = 0;
  int linked = 0;
  for (int i = 0; i < cc->n_legs; i++) {
    const cleg_t *l = cc->legs[i];
    const origin_circuit_t *oc =
        l->circ ? l->circ : l->cb ? circbuild_circuit(l->cb) : NULL;
    if (!oc || oc->base.gid != gid)
      continue;
    linked = l->linked;
    if (l->leg)
      *rtt_us_out = l->leg->link_rtt_us;
  }
  return linked ? 2 : 1;
}

int
client_ctl_close_circuit(uint64_t gid, int if_unused, char **err_out)
{
  void *found = NULL;
  int code = lookup(0, gid, &found, err_out);
  if (code)
    return code;
  ccirc_t *cc = found;
  if (if_unused && !dlist_is_empty(&cc->streams))
    return 0;
  ccirc_close(cc, -1, "closed by a controller");
  return 0;
}

/* Can streams of cc leave at hop (1-based; 0: the last)? 0, or 551 with
 * *err_out. Sets cc->exit_hop. */
static int
choose_exit_hop(ccirc_t *cc, int hop, char **err_out)
{
  const origin_circuit_t *oc = cc->legs[0]->circ;
  if (hop > oc->n_hops_open) {
    *err_out = pc_asprintf("Circuit has only %d hops", oc->n_hops_open);
    return 551;
  }
  if (hop == 1) {
    *err_out = pc_strdup("Can't attach a stream to hop 1: relays refuse "
                         "exit streams from a circuit's first hop");
    return 551;
  }
  int want = hop ? hop - 1 : oc->n_hops_open - 1;
  if (want == ccirc_stream_hop(cc, oc))
    return 0;
  if (hop && !cc->controller) {
    *err_out = pc_strdup("pctor attaches streams at another hop than the "
                         "last only on circuits a controller built");
    return 551;
  }
  if (cc->dirty_since_us || !dlist_is_empty(&cc->streams)) {
    *err_out = pc_asprintf("Streams on a pctor circuit all leave at one "
                           "hop: this one already carried streams leaving "
                           "at hop %d", ccirc_stream_hop(cc, oc) + 1);
    return 551;
  }
  cc->exit_hop = hop;
  return 0;
}

int
client_ctl_attach_stream(uint64_t stream_id, uint64_t circ_gid, int hop,
                         char **err_out)
{
  void *found = NULL;
  int code = lookup(1, stream_id, &found, err_out);
  if (code)
    return code;
  cstream_t *cs = found;
  if (cs->state != CS_HELD) {
    *err_out = pc_strdup("Connection is not managed by controller.");
    return 555;
  }
  ccirc_t *cc = NULL;
  if (circ_gid) {
    if ((code = lookup(0, circ_gid, &found, err_out)) != 0)
      return code;
    cc = found;
    if (!cc->built || cc->extending || !ccirc_usable(cc)) {
      *err_out = pc_strdup("Can't attach stream to non-open origin "
                           "circuit");
      return 551;
    }
    if (!cc->cfx && cc->n_legs == 1 && cc->legs[0]->circ &&
        (code = choose_exit_hop(cc, hop, err_out)) != 0)
      return code;
    if (cc->cfx && hop) {
      *err_out = pc_strdup("HOP= is not supported on conflux sets");
      return 551;
    }
  }
  dlist_remove(&cs->node);
  dlist_node_init(&cs->node);
  if (!cc) {
    cs->ctl_release = 1;
    client_stream_attach(cs);
    return 0;
  }
  cs->circ = cc;
  cs->state = CS_WAIT_CIRC;
  dlist_insert_tail(&cc->streams, &cs->node);
  ccirc_note_stream_iso(cc, cs);
  log_info("Controller attached stream %llu to circuit %llu (leaving at "
           "hop %d)", (unsigned long long)stream_id,
           (unsigned long long)circ_gid,
           cc->cfx ? 0 : ccirc_stream_hop(cc, cc->legs[0]->circ) + 1);
  socks_send_begin(cs);
  return 0;
}

int
client_ctl_close_stream(uint64_t stream_id, uint8_t reason, char **err_out)
{
  void *found = NULL;
  int code = lookup(1, stream_id, &found, err_out);
  if (code)
    return code;
  cstream_t *cs = found;
  if (cs->es) {
    edge_stream_end(cs->es, reason);
    cs->es = NULL;
  }
  if (cs->state == CS_OPEN)
    socks_stream_free(cs);
  else
    socks_stream_fail(cs, reason, "closed by a controller");
  return 0;
}

/* ---- MAPADDRESS, SIGNAL NEWNYM, DROPTIMEOUTS, BUILDTIMEOUT_SET ---- */

int
client_ctl_mapaddress(const char *from, const char *to, char **from_out,
                      char **err_out)
{
  *from_out = NULL;
  if (!client_g.loop || !client_g.addrmap) {
    *err_out = pc_strdup("pctor maps addresses only for its SocksPort "
                         "client, and has no SocksPort");
    return 551;
  }
  int r = addrmap_set(client_g.addrmap, from, to, from_out, err_out);
  if (r == -1)
    return 512;
  if (r < 0)
    return 451;
  if (!strcasecmp(from, to))
    log_info("Controller removed the address mapping of %s", from);
  else
    log_info("Controller mapped %s to %s", *from_out, to);
  return 0;
}

void
client_ctl_foreach_mapping(void (*fn)(const char *from, const char *to,
                                      void *arg),
                           void *arg)
{
  if (client_g.addrmap)
    addrmap_foreach(client_g.addrmap, fn, arg);
}

/* Retire cc: the pool gives it no new stream; closed now if built and
 * without streams, else once its streams are done (client_timer_cb). */
static void
ccirc_retire(ccirc_t *cc, const char *why)
{
  cc->retired = 1;
  if (cc->built && dlist_is_empty(&cc->streams))
    ccirc_close(cc, -1, why);
}

/* NEWNYM now: every circuit that is not clean takes no new stream; those
 * without streams close. */
static void
newnym_now(void)
{
  int n = 0;
  client_g.newnym_last_us = evloop_now_us(client_g.loop);
  dlist_node_t *node, *next;
  for (node = dlist_first(&client_g.circs); node; node = next) {
    next = dlist_next(&client_g.circs, node);
    ccirc_t *cc = DLIST_ENTRY(node, ccirc_t, node);
    if (cc->dead || cc->iso_open || cc->retired)
      continue;
    ccirc_retire(cc, "NEWNYM");
    n++;
  }
  log_notice("NEWNYM: %d circuit%s take no new streams; new streams get "
             "new circuits",
             n, n == 1 ? "" : "s");
  evloop_deferred_schedule(client_g.preempt_ev);
}

static void
newnym_timer_cb(void *arg)
{
  (void)arg;
  newnym_now();
}

int
client_ctl_newnym(unsigned *delay_s_out, char **err_out)
{
  *delay_s_out = 0;
  if (!client_g.loop) {
    *err_out = pc_strdup("NEWNYM needs pctor's SocksPort client");
    return 551;
  }
  uint64_t now = evloop_now_us(client_g.loop);
  uint64_t due = client_g.newnym_last_us + CLIENT_NEWNYM_INTERVAL_US;
  if (!client_g.newnym_last_us || now >= due) {
    if (client_g.newnym_timer)
      evloop_timer_cancel(client_g.newnym_timer);
    newnym_now();
    return 0;
  }
  *delay_s_out = (unsigned)((due - now + 999999) / 1000000);
  log_notice("Rate limiting NEWNYM request: delaying by %u second%s",
             *delay_s_out, *delay_s_out == 1 ? "" : "s");
  if (!client_g.newnym_timer)
    client_g.newnym_timer = evloop_timer_new(client_g.loop, newnym_timer_cb,
                                             NULL);
  evloop_timer_schedule(client_g.newnym_timer, due - now);
  return 0;
}

/* Outside client_g, which client_init() clears: a controller may
 * register before the client starts. */
static client_buildtimeout_observer_fn cbt_observer;
static void *cbt_observer_arg;

int
client_set_buildtimeout_observer(client_buildtimeout_observer_fn fn,
                                 void *arg)
{
  if (fn && cbt_observer && (fn != cbt_observer || arg != cbt_observer_arg)) {
    log_warn("A second observer of the build timeout was refused: one is "
             "registered already");
    return -1;
  }
  cbt_observer = fn;
  cbt_observer_arg = fn ? arg : NULL;
  return 0;
}

void
client_ctl_cbt_event(cbt_event_t ev)
{
  if (ev == CBT_EV_NONE || !cbt_observer || !client_g.cbt)
    return;
  cbt_info_t info;
  cbt_get_info(client_g.cbt, &info);
  cbt_observer(ev, &info, cbt_observer_arg);
}

/* Whether the leg's first hop goes to rsa_id over TLS: a built leg by its
 * channel; one still building was started before the faster transport
 * was up, so over TLS. */
static int
leg_tls_to(const cleg_t *leg, const uint8_t rsa_id[20])
{
  if (!leg || memcmp(leg->guard_id, rsa_id, 20) != 0)
    return 0;
  if (!leg->circ)
    return 1;
  const channel_t *chan = leg->circ->base.n_chan;
  return chan && !channel_is_carried(chan);
}

int
client_retire_tls_first_hops(const uint8_t rsa_id[20], const char *why)
{
  if (!client_g.loop)
    return 0;
  int n = 0;
  dlist_node_t *node, *next;
  for (node = dlist_first(&client_g.circs); node; node = next) {
    next = dlist_next(&client_g.circs, node);
    ccirc_t *cc = DLIST_ENTRY(node, ccirc_t, node);
    if (cc->dead || cc->retired)
      continue;
    int tls = 0;
    for (int i = 0; i < cc->n_legs && !tls; i++)
      tls = leg_tls_to(cc->legs[i], rsa_id);
    if (!tls)
      continue;
    ccirc_retire(cc, why);
    n++;
  }
  if (n) {
    char hex[41];
    base16_encode(hex, sizeof(hex), rsa_id, 20, BASE16_UPPER);
    log_notice("%s: %d circuit%s whose first hop reaches $%s over TLS take "
               "no new streams; new circuits use the new transport",
               why, n, n == 1 ? "" : "s", hex);
    evloop_deferred_schedule(client_g.preempt_ev);
  }
  return n;
}

int
client_ctl_drop_timeouts(char **err_out)
{
  if (!client_g.loop || !client_g.cbt) {
    *err_out = pc_strdup("DROPTIMEOUTS needs pctor's SocksPort client");
    return 551;
  }
  cbt_reset(client_g.cbt);
  client_g.cbt_unsaved = 1; /* saved with the next build time or at exit */
  return 0;
}

/* ---- conflux legs as controllers see them (CIRC, CIRC_MINOR) ---- */

static client_conflux_link_fn link_observer;
static void *link_observer_arg;

int
client_set_conflux_link_observer(client_conflux_link_fn fn, void *arg)
{
  if (fn && link_observer &&
      (fn != link_observer || arg != link_observer_arg)) {
    log_warn("A second observer of conflux legs linking was refused: one "
             "is registered already");
    return -1;
  }
  link_observer = fn;
  link_observer_arg = fn ? arg : NULL;
  return 0;
}

void
client_ctl_note_linked(const cleg_t *leg)
{
  if (link_observer && leg->circ)
    link_observer(leg->circ, link_observer_arg);
}

