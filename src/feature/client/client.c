/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c -- the SOCKS port and client-side streams (see client.h); this
 * file holds the circuits streams ride on, the other jobs are in
 * client_socks.c, client_pool.c and client_conflux.c (client_internal.h).
 *
 * A SOCKS connection goes through: SOCKS handshake (socks_proto) ->
 * waiting for a circuit -> BEGIN sent -> CONNECTED (SOCKS success reply) ->
 * open (DATA both ways) -> closed. Circuits (ccirc_t) are built by
 * circbuild through paths from feature/dir's path selection; streams wait
 * on a circuit that is still being built.
 *
 * A ccirc_t is what streams attach to. It is either one plain circuit, or
 * a conflux set (proposal 329): up to CFX_MAX_LEGS circuits ("legs") to
 * the same exit through different guards and middles, linked with a
 * random nonce, whose stream messages are spread over the legs and put
 * back in order on arrival (the protocol logic is feature/conflux's
 * cfx_set_t; client_conflux.c builds, links and drives the legs).
 *
 * Each ccirc_t is one circuit end (core/or/edge.h): the edge module keeps
 * its streams by ID and runs every flow-control rule -- circuit and stream
 * windows, authenticated SENDMEs, XON/XOFF, half-closed streams. This file
 * plugs in as the end's owner (how to send on a plain circuit or a conflux
 * set, which digests, which controller), client_socks.c as the owner of
 * each stream (the SOCKS connection).
 *
 * Congestion control (proposal 324): when the consensus' cc_alg is not 0
 * and the exit lists FlowCtrl=2, the exit hop is asked for it in an ntor v3
 * handshake (section 10.1, circbuild_exit_request_cc). If the exit accepts,
 * core runs the circuit's controller (it counts what we send, answers the
 * exit's DATA with authenticated SENDMEs every sendme_inc cells and checks
 * its SENDMEs), and this file: packages DATA only while the window has room
 * (origin_circuit_cc_sendable), sends no stream or circuit SENDMEs, sends
 * XOFF when more than cc_xoff_client bytes wait for the SOCKS client and
 * XON once they drained (with the drain rate), and stops a stream's
 * sending between the exit's XOFF and XON -- all of it the edge's work,
 * with the exit hop's controller (edge_end_ops_t.cc). A circuit SENDME from
 * the exit (passed on by core once counted) means the window reopened.
 *
 * Conflux (ConfluxEnabled 1, or auto and the consensus' cfx_enabled): for
 * an exit that lists Conflux=1 and FlowCtrl=2, a new ccirc_t becomes a set
 * of ConfluxLegs legs (default: the consensus' cfx_num_legs_set, 2). The
 * first leg's path is chosen as usual; each further leg uses the same exit
 * and a guard and a middle that no other leg uses (by identity, as
 * proposal 329 2.2 asks); if there is no such relay the circuit stays
 * plain. Each leg must negotiate congestion control with the exit (else
 * it is closed); once built it sends CONFLUX_LINK (nonce, our counts, the
 * ConfluxClientUX wish), takes the exit's CONFLUX_LINKED (same nonce, no
 * data loss; the time since LINK is the leg's first RTT), answers with
 * CONFLUX_LINKED_ACK and joins the set. The set takes streams once no leg
 * is still linking and at least one linked. Our own sending uses the
 * scheduler the exit asked for in LINKED (tor's behaviour) unless
 * ConfluxScheduler names one (minrtt, lowrtt, or the paper's proportional
 * splitter). A leg that closes leaves the set; tor's rules decide whether
 * the others can go on without losing data (conflux_set.h): if not, the
 * whole set closes and its streams end (those not connected yet are
 * retried once, as for any circuit).
 *
 * A conflux leg that fails before it links is relaunched on a new path
 * (same exit; a guard and a middle no live leg uses and no failed leg of
 * the set used), at most cfx_max_unlinked_leg_retry times per set (the
 * consensus parameter of proposal 329 4.2.2; 3 when absent). A linked leg
 * that dies while the set goes on (tor's rules let it) gets a replacement
 * leg, linked into the same set with the set's current counts in its
 * CONFLUX_LINK, at most CFX_MAX_REPLACEMENTS times per set, so the set
 * gets back to its number of legs. The counts of a new leg start from what
 * our LINK said, as the exit's do (handle_linked explains why).
 *
 * Preemptive circuits (tor's predicted ports): the ports streams asked for
 * in the last hour (up to PREDICTED_PORTS_MAX, port 80 from the start) each
 * get a clean circuit built ahead of need once there is a consensus, up to
 * PREEMPTIVE_MAX_CLEAN clean circuits in all (one covers every port its
 * exit accepts), so that a new stream need not wait for a build. A clean
 * circuit has no isolation until a stream takes it (as in tor), is asked
 * for MeasureMe only then, and is closed after an hour unused; a failed
 * preemptive build holds further ones back for PREEMPTIVE_RETRY_US. With
 * conflux a preemptive circuit is a set, as tor only builds sets ahead.
 *
 * First hops come from the entry guards (guards.h): a circuit built tells
 * them its guard works, one that fails before its first hop opens that
 * the guard is down. Build times feed the learned timeout (cbt.h); the
 * client's timer moves the waiting streams of a circuit past the timeout
 * to another circuit and abandons it at the close timeout. Both keep their
 * history in the state file.
 *
 * Memory: the bytes of a set's out-of-order queue count in MaxMemInQueues,
 * charged to one leg (client_circuit_mem); closing that leg while messages
 * wait closes the set.
 *
 * Delivering a message may close circuits and thus the ccirc_t itself; a
 * busy count defers freeing it until the delivery loop is done.
 */
#include "feature/client/client_internal.h"
#include "core/or/relay.h"
#include "core/proto/relay_msg.h"
#include "feature/measureme/measureme.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

client_globals_t client_g;

const dir_nodelist_t *
client_nodelist(void)
{
  return client_g.cfg.dir ? dir_client_nodelist(client_g.cfg.dir) : NULL;
}

int
client_enough_dir_info(const dir_nodelist_t *nl)
{
  if (!nl || !client_g.cfg.path)
    return 0;
  if (nl == client_g.dirinfo_nl && nl->n_with_desc == client_g.dirinfo_n_desc)
    return client_g.dirinfo_enough;
  path_dir_info_t di;
  path_dir_info(nl, client_g.cfg.path, &di);
  double need = path_min_fraction(nl, client_g.cfg.paths_needed);
  int enough = di.f_paths >= need;
  if (!enough)
    log_notice("Not enough directory information to build circuits yet: "
               "descriptors for %d of %d relays, so %.0f%% of likely "
               "paths (%.0f%% of guard, %.0f%% of middle and %.0f%% of "
               "exit bandwidth); %.0f%% needed",
               di.n_with_desc, di.n_usable, 100 * di.f_paths,
               100 * di.f_guard, 100 * di.f_mid, 100 * di.f_exit,
               100 * need);
  else if (client_g.dirinfo_enough != 1)
    log_notice("We now have enough directory information to build "
               "circuits (%.0f%% of likely paths)",
               100 * di.f_paths);
  client_g.dirinfo_nl = nl;
  client_g.dirinfo_n_desc = nl->n_with_desc;
  client_g.dirinfo_enough = enough;
  return enough;
}

const dir_node_t *
client_choose_guard(const dir_nodelist_t *nl, const dir_node_t *const *avoid,
                    int n_avoid)
{
  if (!client_g.guards || !nl || !client_g.cfg.path)
    return NULL;
  path_rng_t rng = path_rng_crypto();
  int primary = 0;
  const dir_node_t *g =
      guards_choose(client_g.guards, nl, client_g.cfg.path, avoid, n_avoid,
                    time(NULL), &rng, &primary);
  if (g && !primary)
    log_info("Using non-primary guard %s (no primary guard is usable)",
             g->nickname);
  return g;
}

int
client_last_hop(const origin_circuit_t *circ)
{
  return circ->n_hops_open - 1;
}

int
ccirc_stream_hop(const ccirc_t *cc, const origin_circuit_t *circ)
{
  if (cc->exit_hop > 0 && cc->exit_hop <= circ->n_hops_open)
    return cc->exit_hop - 1;
  return client_last_hop(circ);
}

/* The circuit of a plain ccirc_t (NULL before it is built). */
static origin_circuit_t *
plain_circ(const ccirc_t *cc)
{
  return cc->n_legs ? cc->legs[0]->circ : NULL;
}

static int
last_hop(const ccirc_t *cc)
{
  return ccirc_stream_hop(cc, plain_circ(cc));
}

static relay_crypto_t *
last_crypto(const ccirc_t *cc)
{
  return plain_circ(cc)->hops[last_hop(cc)].crypto;
}

/* The exit hop's congestion controller of a leg, or NULL. */
const cc_t *
cleg_cc(const cleg_t *leg)
{
  return leg->circ ? origin_circuit_cc(leg->circ,
                                      ccirc_stream_hop(leg->owner, leg->circ))
                   : NULL;
}

/* A congestion controller of cc's exit (for the parameters and the clock
 * state: every leg has the same), or NULL (fixed windows). */
static const cc_t *
ccirc_exit_cc(const ccirc_t *cc)
{
  for (int i = 0; i < cc->n_legs; i++) {
    const cc_t *c = cleg_cc(cc->legs[i]);
    if (c && (!cc->cfx || cc->legs[i]->linked))
      return c;
  }
  return NULL;
}

/* Send a stream message on cc: on the plain circuit, or on the leg the
 * conflux scheduler picks (after a SWITCH when it changes legs). */
static int
ccirc_send(ccirc_t *cc, uint8_t cmd, uint16_t id, const uint8_t *body,
           uint16_t len)
{
  if (cc->dead)
    return -1;
  if (!cc->cfx) {
    origin_circuit_t *c = plain_circ(cc);
    return c ? origin_circuit_send_relay(c, ccirc_stream_hop(cc, c), cmd, id,
                                         body, len)
             : -1;
  }
  int sw;
  uint32_t rel;
  cfx_leg_t *l = cfx_set_pick(cc->cfx, cmd, &sw, &rel);
  if (sw < 0) {
    ccirc_close(cc, END_STREAM_REASON_MISC,
                "a conflux switch would exceed 32 bits");
    return -1;
  }
  if (!l)
    return -1;
  cleg_t *leg = l->handle;
  int hop = client_last_hop(leg->circ);
  if (sw) {
    uint8_t b[CFX_SWITCH_LEN];
    cfx_switch_encode(rel, b, sizeof(b));
    if (origin_circuit_send_relay(leg->circ, hop,
                                  RELAY_COMMAND_CONFLUX_SWITCH, 0, b,
                                  sizeof(b)) < 0)
      return -1;
  }
  int r = origin_circuit_send_relay(leg->circ, hop, cmd, id, body, len);
  if (r == 0)
    cfx_set_note_sent(cc->cfx, l, cmd);
  return r;
}

static int
end_send(void *end, uint8_t cmd, uint16_t id, const uint8_t *body,
         uint16_t len)
{
  return ccirc_send(end, cmd, id, body, len);
}

/* Fixed windows only, hence a plain circuit. */
static const uint8_t *
end_last_digest(void *end, int sent)
{
  return relay_crypto_last_digest(last_crypto(end), sent ? RELAY_DIR_FORWARD
                                                         : RELAY_DIR_BACKWARD);
}

static const cc_t *
end_cc(void *end)
{
  return ccirc_exit_cc(end);
}

static int
end_multiplexed(void *end)
{
  const ccirc_t *cc = end;
  return cc->cfx != NULL;
}

static int
end_mux_can_send(void *end)
{
  const ccirc_t *cc = end;
  return !cc->dead && cfx_set_can_send_data(cc->cfx);
}

static size_t
end_mux_burst_bytes(void *end)
{
  const ccirc_t *cc = end;
  return cfx_set_ooo_bound_bytes(cc->cfx);
}

/* A plain circuit's end without circuit windows packages while fewer
 * cells than end_queue_limit() wait towards the guard (edge.h). */
static size_t
end_queued(void *end)
{
  const origin_circuit_t *c = plain_circ(end);
  return c ? c->base.n_queue.cells.n : 0;
}

/* The guard hop's window (BackTap), circ_queue_nowin_limit(). */
static size_t
end_queue_limit(void *end)
{
  origin_circuit_t *c = plain_circ(end);
  return c ? circ_queue_nowin_limit(&c->base.n_queue) : EDGE_NOWIN_QUEUE_MAX;
}

/* Core: the queue of one of our circuits without windows drained. */
static void
client_circuit_drained(origin_circuit_t *circ, void *arg)
{
  (void)arg;
  dlist_node_t *n;
  for (n = dlist_first(&client_g.circs); n; n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!cc->dead && !cc->cfx && plain_circ(cc) == circ) {
      edge_wake_soon(cc->edge);
      return;
    }
  }
}

const edge_end_ops_t client_end_ops = {
    end_send,         end_last_digest, end_cc, end_multiplexed,
    end_mux_can_send, 1,               end_mux_burst_bytes, end_queued,
    end_queue_limit,
};

/* A plain circuit's leg goes: what the exit's controller counted (those
 * without windows log theirs when the end is freed). */
static void
leg_log_cc(const cleg_t *leg)
{
  const cc_t *xc = leg->owner->cfx ? NULL : cleg_cc(leg);
  if (xc && xc->n_sendmes_sent + xc->n_acks)
    log_info("Client circuit %llu: congestion control at close: circuit "
             "SENDMEs sent %llu, received %llu",
             (unsigned long long)leg->circ->base.gid,
             (unsigned long long)xc->n_sendmes_sent,
             (unsigned long long)xc->n_acks);
}

static void
ccirc_free(ccirc_t *cc)
{
  edge_stats_t st;
  edge_get_stats(cc->edge, &st);
  char fp[41];
  base16_encode(fp, sizeof(fp), cc->exit_id, 20, BASE16_UPPER);
  /* (the edge counts DATA only without congestion control: a circuit
   * whose leg is gone no longer shows its controller) */
  if (st.no_circ_windows || st.n_data_received) {
    char w[200];
    log_info("Client circuit to exit %s: %s", fp,
             edge_describe_windows(&st, w, sizeof(w)));
  }

  for (int i = 0; i < cc->n_legs; i++) {
    leg_log_cc(cc->legs[i]);
    circbuild_free(cc->legs[i]->cb); /* closes it; no callbacks */
    free(cc->legs[i]);
  }
  if (cc->ready_timer)
    evloop_timer_free(cc->ready_timer);
  cfx_set_free(cc->cfx);
  edge_free(cc->edge);
  pc_memwipe(cc->nonce, sizeof(cc->nonce));
  free(cc);
}

/* Take the first stream off cc's list (NULL if none): it belongs to no
 * circuit any more. */
static cstream_t *
ccirc_pop_stream(ccirc_t *cc)
{
  dlist_node_t *n = dlist_first(&cc->streams);
  if (!n)
    return NULL;
  cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
  dlist_remove(n);
  dlist_node_init(&cs->node);
  cs->circ = NULL;
  return cs;
}

/* The ccirc_t is gone (every leg closed, or we give up on it): close what
 * is left of its circuits, end its open streams, retry the others once on
 * another circuit -- or, when fail_reason >= 0, fail them with that END
 * reason -- and free it unless a delivery loop still uses it. */
void
ccirc_close(ccirc_t *cc, int fail_reason, const char *why)
{
  if (cc->dead)
    return;
  cc->dead = 1;
  if (!cc->built)
    client_g.stats.n_circuits_failed++;
  if (cc->preemptive && !cc->built)
    client_g.preempt_not_before_us =
        evloop_now_us(client_g.loop) + PREEMPTIVE_RETRY_US;
  client_g.stats.n_circuits--;
  if (cc->cfx) {
    char d[512];
    cfx_set_describe(cc->cfx, d, sizeof(d));
    log_info("Conflux set #%llu closed (%s): %s",
             (unsigned long long)cc->serial, why ? why : "?", d);
  } else {
    log_info("Client circuit closed (%s)", why ? why : "?");
  }
  dlist_remove(&cc->node);
  for (int i = 0; i < cc->n_legs; i++) {
    leg_log_cc(cc->legs[i]);
    circbuild_free(cc->legs[i]->cb);
    cc->legs[i]->circ = NULL;
  }
  cstream_t *cs;
  while ((cs = ccirc_pop_stream(cc)) != NULL) {
    edge_stream_forget(cs->es); /* the edge goes with the circuit */
    cs->es = NULL;
    if (cs->state == CS_OPEN) {
      socks_stream_free(cs);
    } else if (fail_reason < 0 && !cs->retried) {
      /* Not connected yet: try once more on another circuit. */
      cs->retried = 1;
      client_g.stats.n_retries++;
      cs->state = CS_WAIT_CIRC;
      client_stream_attach(cs);
    } else {
      socks_stream_fail(cs,
                        fail_reason >= 0 ? fail_reason
                                         : END_STREAM_REASON_DESTROY,
                        why ? why : "circuit closed");
    }
  }
  if (cc->busy == 0)
    ccirc_free(cc);
}

void
ccirc_unbusy(ccirc_t *cc)
{
  if (--cc->busy == 0 && cc->dead)
    ccirc_free(cc);
}

/* cc can take streams now: send their BEGINs. */
void
ccirc_ready(ccirc_t *cc)
{
  cc->built = 1;
  cc->idle_since_us = evloop_now_us(client_g.loop);
  client_g.stats.n_circuits_built++;
  if (cc->preemptive && cc->iso_open) {
    client_g.stats.n_preemptive_built++;
    log_info("Preemptive %s for port %u is ready (built in %.0f ms)",
             cc->cfx ? "conflux set" : "circuit", cc->preempt_port,
             (cc->idle_since_us - cc->created_us) / 1000.0);
  }
  dlist_node_t *n, *next;
  for (n = dlist_first(&cc->streams); n; n = next) {
    next = dlist_next(&cc->streams, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_WAIT_CIRC)
      socks_send_begin(cs);
    if (cc->dead)
      return;
  }
}

/* Put the learned timeout's history into the state file and save it. */
static void
cbt_save(void)
{
  if (!client_g.cfg.state || !client_g.cbt)
    return;
  cbt_write_state(client_g.cbt, client_g.cfg.state);
  client_g.cbt_unsaved = 0;
  char *err = NULL;
  if (statefile_is_dirty(client_g.cfg.state) &&
      statefile_save(client_g.cfg.state, time(NULL), &err) < 0) {
    log_warn("%s", err);
    free(err);
  }
}

static void
cb_built(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  leg->circ = circ;
  leg->built = 1;
  /* The exit agreed to run without end-to-end windows (every hop is
   * BackTap): the edge keeps only the stream windows. */
  if (!cc->cfx)
    edge_set_no_circ_windows(
        cc->edge, origin_circuit_nowin(circ, ccirc_stream_hop(cc, circ)));
  if (cc->extending) {
    /* A controller's EXTENDCIRCUIT: its new hops are open (not a build
     * time to learn from, nor a new circuit to count). */
    cc->extending = 0;
    log_info("Controller circuit %llu now has %d hops",
             (unsigned long long)circ->base.gid, circ->n_hops_open);
    return;
  }
  if (client_g.guards)
    guards_note_success(client_g.guards, leg->guard_id, time(NULL));
  client_ctl_cbt_event(cbt_note_built(
      client_g.cbt, (uint32_t)(circbuild_build_time_us(cb) / 1000)));
  if (++client_g.cbt_unsaved >= CBT_SAVE_EVERY)
    cbt_save();
  if (cc->timed_out) {
    /* Built after the timeout: it was kept for its time only. */
    log_info("Client circuit %llu built in %.0f ms, after the %u ms "
             "timeout; closing it (measured only)",
             (unsigned long long)circ->base.gid,
             circbuild_build_time_us(cb) / 1000.0,
             (unsigned)cbt_timeout_ms(client_g.cbt));
    ccirc_close(cc, -1, "built after the build timeout");
    return;
  }
  log_info("Client circuit %llu built in %.0f ms",
           (unsigned long long)circ->base.gid,
           circbuild_build_time_us(cb) / 1000.0);
  /* A clean preemptive circuit is measured once a stream takes it. */
  if (!cc->iso_open)
    client_ask_measureme(leg, circ);
  if (!cc->cfx) {
    ccirc_ready(cc);
    return;
  }
  client_cfx_leg_built(cc, leg, circ);
}

static void
cb_closed(circbuild_t *cb, int reason, const char *why, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  /* Failing before the first hop opened says the guard is unreachable
   * (guard-spec 4.7); later failures say nothing about it. */
  if (!leg->built && circbuild_hops_open(cb) == 0 && client_g.guards)
    guards_note_failure(client_g.guards, leg->guard_id, time(NULL));
  if (!cc->cfx) {
    log_info("Client circuit closed (%s, reason %d)", why ? why : "?",
             reason);
    leg_log_cc(leg);
    leg->circ = NULL;
    ccirc_close(cc, -1, why);
    return;
  }
  client_cfx_leg_closed(cc, leg, reason, why);
}

void
ccirc_wake_streams(ccirc_t *cc)
{
  cc->busy++;
  edge_wake(cc->edge);
  ccirc_unbusy(cc);
}

/* A protocol violation by the exit: close cc. */
void
ccirc_violation(ccirc_t *cc, const char *why)
{
  log_notice("Closing a client circuit: %s", why);
  if (cc->cfx) {
    ccirc_close(cc, -1, why);
    return;
  }
  origin_circuit_t *c = plain_circ(cc);
  if (c)
    circuit_mark_for_close(&c->base, DESTROY_REASON_PROTOCOL);
}

/* A circuit SENDME from the exit on a plain circuit. */
static void
circ_sendme(ccirc_t *cc, const uint8_t *body, uint16_t len)
{
  if (edge_circ_sendme(cc->edge, body, len, 0) < 0) {
    ccirc_violation(cc, edge_last_violation(cc->edge));
    return;
  }
  ccirc_wake_streams(cc);
}

/* A stream message from the exit, in order. With fixed windows (no
 * congestion control, no conflux) every DATA cell counts against the
 * circuit's deliver window first, whether or not its stream is still there
 * (a stream we ended may still get the cells the exit sent before our END
 * arrived); otherwise core counted it on its leg. */
void
ccirc_stream_msg(ccirc_t *cc, uint8_t cmd, uint16_t id, const uint8_t *body,
                 uint16_t len)
{
  if (cmd == RELAY_COMMAND_DATA) {
    if (!edge_is_windowless(cc->edge) && edge_data_arrived(cc->edge) < 0) {
      ccirc_violation(cc, edge_last_violation(cc->edge));
      return;
    }
    if (!edge_stream_find(cc->edge, id))
      client_g.stats.n_data_unknown_stream++;
  }
  if (edge_handle_stream_msg(cc->edge, cmd, id, body, len) < 0)
    ccirc_violation(cc, edge_last_violation(cc->edge));
}

static void
cb_relay(circbuild_t *cb, int hop, uint8_t cmd, uint16_t id,
         const uint8_t *body, uint16_t len, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  origin_circuit_t *circ = circbuild_circuit(cb);
  if (circ && !cc->dead && id == 0 &&
      cmd == RELAY_COMMAND_MEASUREME_ANSWER) {
    client_measureme_answer(leg, circ, hop, body, len);
    return;
  }
  if (!circ || hop != ccirc_stream_hop(cc, circ) || cc->dead)
    return;
  cc->busy++;
  if (!cc->cfx) {
    if (id == 0) {
      if (cmd == RELAY_COMMAND_SENDME) {
        /* With congestion control core already checked and counted it. */
        if (ccirc_exit_cc(cc))
          ccirc_wake_streams(cc);
        else
          circ_sendme(cc, body, len);
      }
    } else {
      ccirc_stream_msg(cc, cmd, id, body, len);
    }
    ccirc_unbusy(cc);
    return;
  }
  client_cfx_leg_relay(cc, leg, cmd, id, body, len);
  ccirc_unbusy(cc);
}

const circbuild_cbs_t client_circ_cbs = {cb_built, cb_closed, cb_relay};

/* cc passed the build timeout (path-spec 2.4.3): its waiting streams go
 * to another circuit; it goes on building until the close timeout so its
 * time can be recorded, but takes no streams. */
static void
ccirc_timed_out(ccirc_t *cc, uint64_t age_ms)
{
  cc->timed_out = 1;
  log_info("Client circuit not built within the %u ms build timeout "
           "(%llu ms); moving its streams to another circuit",
           (unsigned)cbt_timeout_ms(client_g.cbt),
           (unsigned long long)age_ms);
  cstream_t *cs;
  while ((cs = ccirc_pop_stream(cc)) != NULL)
    client_stream_attach(cs);
}

/* Once per consensus: what it requires or recommends of clients that
 * pctor's client lacks. tor exits when a required protocol is missing;
 * pctor says so loudly and goes on (pctor(1), THE CLIENT). */
static void
check_client_protocols(const consensus_t *c)
{
  if (!c || c->valid_after == client_g.protocols_checked)
    return;
  client_g.protocols_checked = c->valid_after;
  char miss[256];
  if (dir_protocols_missing(c->required_client_protocols, CLIENT_PROTOCOLS,
                            miss, sizeof(miss)))
    log_warn("The consensus requires client protocols pctor does not "
             "speak: %s (pctor speaks %s). tor would refuse to start; "
             "circuits may fail.",
             miss, CLIENT_PROTOCOLS);
  else if (dir_protocols_missing(c->recommended_client_protocols,
                                 CLIENT_PROTOCOLS, miss, sizeof(miss)))
    log_info("The consensus recommends client protocols pctor does not "
             "speak: %s",
             miss);
}

/* Close circuits that have been idle too long or never got built. */
static void
client_timer_cb(void *arg)
{
  (void)arg;
  uint64_t now = evloop_now_us(client_g.loop);
  const dir_nodelist_t *nl = client_nodelist();
  cbt_set_consensus(client_g.cbt, nl ? nl->consensus : NULL);
  check_client_protocols(nl ? nl->consensus : NULL);
  uint64_t max_dirty =
      (uint64_t)client_g.cfg.max_circuit_dirtiness * 1000000ULL;
  dlist_node_t *n, *next;
  for (n = dlist_first(&client_g.circs); n; n = next) {
    next = dlist_next(&client_g.circs, n);
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (cc->cfx) {
      cc->busy++;
      client_cfx_check_link_timeouts(cc, now);
      int gone = cc->dead;
      ccirc_unbusy(cc);
      if (gone)
        continue;
    }
    if (!cc->built) {
      uint64_t age_ms = (now - cc->created_us) / 1000;
      if (!cc->timed_out && age_ms > cbt_timeout_ms(client_g.cbt))
        ccirc_timed_out(cc, age_ms);
      if (age_ms > cbt_close_ms(client_g.cbt)) {
        log_info("Client circuit not built after %llu ms; abandoning it",
                 (unsigned long long)age_ms);
        client_ctl_cbt_event(cbt_note_abandoned(client_g.cbt));
        ccirc_close(cc, END_STREAM_REASON_TIMEOUT, "circuit build timed out");
      }
      continue;
    }
    if (!dlist_is_empty(&cc->streams))
      continue;
    int too_dirty = cc->dirty_since_us && now - cc->dirty_since_us > max_dirty;
    int idle = now - cc->idle_since_us >
               (cc->iso_open ? PREEMPTIVE_IDLE_US : CLEAN_IDLE_US);
    if (too_dirty || idle || cc->retired)
      ccirc_close(cc, -1, too_dirty ? "dirty" : idle ? "idle" : "NEWNYM");
  }
  client_expire_connecting(now);
  client_ctl_expire_held(now);
  client_attach_unattached(CS_WAIT_PATH); /* retry: a path now? */
  evloop_deferred_schedule(client_g.preempt_ev);
}

/* MaxMemInQueues: the bytes a conflux set's out-of-order queue holds are
 * charged to the leg that received furthest (cfx_set_ooo_holder); closing
 * that circuit tears the set down (cb_closed), which frees them. Only the
 * memory handler calls this, so a scan of our few sets is fine. */
static size_t
client_circuit_mem(circuit_t *c)
{
  origin_circuit_t *oc = TO_ORIGIN_CIRCUIT(c);
  if (!oc)
    return 0;
  for (dlist_node_t *n = dlist_first(&client_g.circs); n;
       n = dlist_next(&client_g.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!cc->cfx || cc->dead)
      continue;
    const cfx_leg_t *h = cfx_set_ooo_holder(cc->cfx);
    if (h && ((const cleg_t *)h->handle)->circ == oc)
      return cfx_set_ooo_bytes(cc->cfx);
  }
  return 0;
}

int
client_init(evloop_t *loop, const client_config_t *cfg, const char **err,
            int *failed_port)
{
  memset(&client_g, 0, sizeof(client_g));
  client_g.loop = loop;
  client_g.cfg = *cfg;
  client_g.guards = guards_new(cfg->state, guards_instance_for(cfg->path));
  guards_set_options(client_g.guards, &cfg->guards);
  client_g.cbt = cbt_new();
  client_g.addrmap = addrmap_new();
  const dir_nodelist_t *nl = cfg->dir ? dir_client_nodelist(cfg->dir) : NULL;
  cbt_set_consensus(client_g.cbt, nl ? nl->consensus : NULL);
  if (cfg->state) {
    path_rng_t rng = path_rng_crypto();
    int bad = 0;
    int n = cbt_load_state(client_g.cbt, cfg->state, &rng, &bad);
    if (bad)
      log_warn("State file: skipped %d malformed circuit build time "
               "line%s", bad, bad == 1 ? "" : "s");
    if (n)
      log_info("Read %d circuit build times from the state file; build "
               "timeout %u ms%s",
               n, (unsigned)cbt_timeout_ms(client_g.cbt),
               cbt_is_learned(client_g.cbt) ? " (learned)" : "");
  }
  dlist_init(&client_g.circs);
  dlist_init(&client_g.unattached);
  /* Each line without SessionGroup=N is a session group of its own. */
  client_g.ports = cfg->socks_ports;
  int ok = 1;
  for (int i = 0; i < client_g.ports.n && ok; i++) {
    client_port_t *p = &client_g.ports.port[i];
    if (p->session_group < 0)
      p->session_group = -2 - i;
    client_g.listeners[i] =
        listener_new(loop, &p->addr, client_socks_accept, p, err);
    if (!client_g.listeners[i]) {
      if (failed_port)
        *failed_port = i;
      ok = 0;
    }
  }
  if (!ok) {
    for (int i = 0; i < client_g.ports.n; i++)
      listener_free(client_g.listeners[i]);
    guards_free(client_g.guards);
    cbt_free(client_g.cbt);
    addrmap_free(client_g.addrmap);
    return -1;
  }
  client_g.timer = evloop_timer_new(loop, client_timer_cb, NULL);
  evloop_timer_schedule_periodic(client_g.timer, CLIENT_TIMER_US);
  client_g.preempt_ev = evloop_deferred_new(loop, client_preempt_cb, NULL);
  client_predict_port(80, evloop_now_us(loop)); /* as tor does at start */
  if (circuits_add_extra_mem_fn(client_circuit_mem) < 0)
    log_warn("Client: too many memory reporters; conflux out-of-order "
             "queues do not count in MaxMemInQueues");
  (void)circuits_set_origin_drain_fn(client_circuit_drained, NULL);
  return 0;
}

void
client_reconfigure(const client_config_t *cfg)
{
  int held = client_g.cfg.leave_streams_unattached;
  client_g.cfg = *cfg; /* the listeners stay (client_g.ports) */
  client_g.dirinfo_nl = NULL; /* decide "enough directory info" afresh */
  /* EntryNodes set or cleared: the other guard instance (tor's
   * "restricted" and "default"); the filter is applied at each choice. */
  const char *inst = guards_instance_for(cfg->path);
  if (!client_g.guards || strcmp(guards_instance(client_g.guards), inst)) {
    if (client_g.guards)
      guards_save(client_g.guards, time(NULL));
    guards_free(client_g.guards);
    client_g.guards = guards_new(cfg->state, inst);
  }
  guards_set_options(client_g.guards, &cfg->guards);
  if (held && !cfg->leave_streams_unattached) {
    /* As tor: streams held for a controller now take circuits. */
    client_attach_unattached(CS_HELD);
  }
}

int
client_socks_listeners(pc_addr_t *out, int max)
{
  int n = 0;
  if (!client_g.loop)
    return 0;
  for (int i = 0; i < client_g.ports.n && n < max; i++)
    if (client_g.listeners[i])
      out[n++] = *listener_addr(client_g.listeners[i]);
  return n;
}

void
client_get_stats(client_stats_t *out)
{
  *out = client_g.stats;
}

void
client_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&client_g.unattached))) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    socks_stream_free(cs);
  }
  while ((n = dlist_first(&client_g.circs))) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    cstream_t *cs;
    while ((cs = ccirc_pop_stream(cc)) != NULL)
      socks_stream_free(cs);
    dlist_remove(&cc->node);
    ccirc_free(cc);
  }
  circuits_remove_extra_mem_fn(client_circuit_mem);
  circuits_set_origin_drain_fn(NULL, NULL);
  evloop_deferred_free(client_g.preempt_ev);
  for (int i = 0; i < client_g.ports.n; i++)
    listener_free(client_g.listeners[i]);
  evloop_timer_free(client_g.timer);
  if (client_g.guards)
    guards_save(client_g.guards, time(NULL));
  guards_free(client_g.guards);
  if (client_g.cbt_unsaved)
    cbt_save();
  cbt_free(client_g.cbt);
  addrmap_free(client_g.addrmap);
  evloop_timer_free(client_g.newnym_timer);
}
