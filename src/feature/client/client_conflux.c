/* SPDX-License-Identifier: BSD-3-Clause */
/* client_conflux.c -- conflux legs of the SocksPort client
 * (client_internal.h; the protocol state is feature/conflux's cfx_set_t):
 * a built leg sends CONFLUX_LINK, takes the exit's CONFLUX_LINKED and
 * answers LINKED_ACK; the set takes streams once no leg is still linking
 * and one linked. Arriving stream messages are put back in order before
 * they reach the circuit end; SWITCH moves the sequence numbers. A leg
 * that fails before linking is relaunched, a linked one that dies while
 * the set goes on is replaced (limits in client.c's header).
 */
#include "feature/client/client_internal.h"
#include "core/or/relay.h"
#include "core/proto/relay_msg.h"
#include "feature/conflux/conflux_cell.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

/* A leg's congestion state for the conflux schedulers. */
void
cleg_state(void *handle, cfx_leg_state_t *out)
{
  const cleg_t *leg = handle;
  const cc_t *c = cleg_cc(leg);
  if (!c) {
    memset(out, 0, sizeof(*out));
    out->blocked = 1;
    return;
  }
  out->cwnd = c->cwnd;
  out->inflight = c->inflight;
  out->rtt_us = c->ewma_rtt_us;
  out->sendme_inc = c->sendme_inc;
  out->blocked = leg->circ->base.n_queue.cells.n >= c->p.cellq_high;
}

cfx_ready_t
client_cfx_ready_rule(int linked, int pending, int streams_wait,
                      uint64_t created_us, uint64_t first_link_us,
                      uint64_t now_us, uint64_t *at_us)
{
  if (!linked)
    return CFX_READY_NOT_YET;
  if (!pending)
    return CFX_READY_NOW;
  if (!streams_wait)
    return CFX_READY_NOT_YET; /* nobody waits: tor's rule, all legs */
  uint64_t grace =
      first_link_us > created_us ? first_link_us - created_us : 0;
  if (grace < CFX_READY_GRACE_MIN_US)
    grace = CFX_READY_GRACE_MIN_US;
  *at_us = first_link_us + grace;
  return now_us < *at_us ? CFX_READY_LATER : CFX_READY_NOW;
}

static void
ready_timer_cb(void *arg)
{
  ccirc_t *cc = arg;
  client_cfx_maybe_ready(cc);
}

/* A conflux set takes streams once no leg is still linking and one
 * linked (proposal 329 2.4.2: finalization waits for pending legs). tor
 * only prebuilds sets, so its streams never wait for one; ours may, when a
 * stream's isolation needs a new set. So a set that streams wait for goes
 * on without the legs still linking once they have taken as long again as
 * the first leg took to link from the set's launch (CFX_READY_GRACE_MIN_US
 * at least): a stream then waits at most about twice a circuit's set-up.
 * The late legs keep linking and join the set as replacement legs do
 * (2.4: a linked set may have unlinked legs on the way, unused until they
 * link). */
void
client_cfx_maybe_ready(ccirc_t *cc)
{
  if (cc->built || cc->dead)
    return;
  int linked = 0, pending = 0;
  for (int i = 0; i < cc->n_legs; i++) {
    if (cc->legs[i]->linked)
      linked++;
    else
      pending++;
  }
  uint64_t now = evloop_now_us(client_g.loop), at = 0;
  cfx_ready_t r = client_cfx_ready_rule(
      linked, pending, !dlist_is_empty(&cc->streams), cc->created_us,
      cc->first_link_us, now + evloop_timer_early_slack_us(), &at);
  if (r == CFX_READY_NOT_YET)
    return;
  if (r == CFX_READY_LATER) {
    if (!cc->ready_timer)
      cc->ready_timer = evloop_timer_new(client_g.loop, ready_timer_cb, cc);
    evloop_timer_schedule(cc->ready_timer, at > now ? at - now : 1);
    return;
  }
  if (pending) {
    client_g.stats.n_conflux_early_ready++;
    log_info("Conflux set #%llu: %d leg%s linked, %d still linking %.0f ms "
             "after the first linked; streams wait, so the set goes on and "
             "the others join when they link",
             (unsigned long long)cc->serial, linked, linked == 1 ? "" : "s",
             pending, (now - cc->first_link_us) / 1000.0);
  }
  if (cc->ready_timer)
    evloop_timer_cancel(cc->ready_timer);
  client_g.stats.n_conflux_sets++;
  char d[512];
  cfx_set_describe(cc->cfx, d, sizeof(d));
  log_info("Conflux set #%llu linked: %s", (unsigned long long)cc->serial,
           d);
  ccirc_ready(cc);
}

/* A leg that sent CONFLUX_LINK and got no LINKED within the circuit build
 * timeout is closed (proposal 329 2.2: C-Tor's bound), which relaunches
 * it within the set's limit. */
void
client_cfx_check_link_timeouts(ccirc_t *cc, uint64_t now)
{
  uint64_t limit_us = (uint64_t)cbt_timeout_ms(client_g.cbt) * 1000;
  for (int i = 0; i < cc->n_legs; i++) {
    cleg_t *leg = cc->legs[i];
    if (!leg->link_sent || leg->linked || !leg->circ ||
        now - leg->link_sent_us <= limit_us)
      continue;
    client_g.stats.n_conflux_link_timeouts++;
    log_info("Conflux set #%llu: leg %s got no CONFLUX_LINKED within the "
             "%u ms circuit build timeout; closing it",
             (unsigned long long)cc->serial, leg->path,
             (unsigned)cbt_timeout_ms(client_g.cbt));
    /* Closing may relaunch the leg or close the set: one per call. */
    circuit_mark_for_close(&leg->circ->base, DESTROY_REASON_FINISHED);
    return;
  }
}

/* A conflux leg is built: it must have congestion control with the exit;
 * send CONFLUX_LINK with the set's nonce and our counts. */
void
client_cfx_leg_built(ccirc_t *cc, cleg_t *leg, origin_circuit_t *circ)
{
  /* A conflux leg: congestion control with the exit is a must. */
  if (!cleg_cc(leg)) {
    log_info("Conflux set #%llu: the exit did not negotiate congestion "
             "control on circuit %llu; dropping that leg",
             (unsigned long long)cc->serial,
             (unsigned long long)circ->base.gid);
    circuit_mark_for_close(&circ->base, DESTROY_REASON_FINISHED);
    return;
  }
  cfx_link_t link;
  memset(&link, 0, sizeof(link));
  memcpy(link.nonce, cc->nonce, CFX_NONCE_LEN);
  link.last_seq_sent = cfx_set_max_sent(cc->cfx);
  link.last_seq_recv = cc->cfx->last_seq_delivered;
  link.desired_ux = client_g.cfg.conflux_ux;
  leg->link_seq_sent = link.last_seq_sent;
  leg->link_seq_recv = link.last_seq_recv;
  uint8_t b[CFX_LINK_LEN];
  cfx_link_encode(&link, b, sizeof(b));
  leg->link_sent = 1;
  leg->link_sent_us = evloop_now_us(client_g.loop);
  origin_circuit_send_relay(circ, client_last_hop(circ),
                            RELAY_COMMAND_CONFLUX_LINK, 0, b, sizeof(b));
}

/* Remove leg from cc (its circuit is closed or closing). */
static void
leg_remove(ccirc_t *cc, cleg_t *leg)
{
  for (int i = 0; i < cc->n_legs; i++)
    if (cc->legs[i] == leg) {
      cc->legs[i] = cc->legs[--cc->n_legs];
      cc->legs[cc->n_legs] = NULL;
      break;
    }
  circbuild_free(leg->cb);
  free(leg);
}

static void
note_failed_relay(ccirc_t *cc, const uint8_t *id)
{
  for (int i = 0; i < cc->n_failed_ids; i++)
    if (!memcmp(cc->failed_ids[i], id, 20))
      return;
  if (cc->n_failed_ids < CFX_MAX_FAILED_RELAYS)
    memcpy(cc->failed_ids[cc->n_failed_ids++], id, 20);
}

/* How many times a set may relaunch legs that failed before linking
 * (proposal 329 4.2.2: the consensus' cfx_max_unlinked_leg_retry bounds
 * it against guard discovery; 3 when absent). */
static int
unlinked_retry_limit(void)
{
  const dir_nodelist_t *nl = client_nodelist();
  const consensus_t *c = nl ? nl->consensus : NULL;
  return c ? consensus_get_param(c, "cfx_max_unlinked_leg_retry",
                                 CFX_DEFAULT_UNLINKED_RETRY, 0, 255)
           : CFX_DEFAULT_UNLINKED_RETRY;
}

/* Launch a leg for cc in place of one that closed: to the same exit,
 * through a guard and a middle that no live leg uses and that no failed
 * leg of this set used. A leg that failed before linking is relaunched at
 * most unlinked_retry_limit() times per set; a linked leg that died while
 * the set goes on is replaced at most CFX_MAX_REPLACEMENTS times. Returns
 * 0 if a leg is on its way, -1 if not (logged). */
static int
cfx_relaunch_leg(ccirc_t *cc, int replacing_linked, const char *why)
{
  int *count = replacing_linked ? &cc->n_replacements : &cc->n_relaunches;
  int limit =
      replacing_linked ? CFX_MAX_REPLACEMENTS : unlinked_retry_limit();
  const char *what = replacing_linked ? "replace" : "relaunch";
  if (*count >= limit) {
    log_info("Conflux set #%llu: not launching another leg (%s): %d leg%s "
             "%sd already, the limit",
             (unsigned long long)cc->serial, why ? why : "?", *count,
             *count == 1 ? "" : "s", what);
    return -1;
  }
  const dir_nodelist_t *nl = client_nodelist();
  const dir_node_t *exit = nl ? dir_nodelist_find_id(nl, cc->exit_id) : NULL;
  if (!exit) {
    log_info("Conflux set #%llu: cannot %s a leg: the exit is no longer "
             "in the consensus",
             (unsigned long long)cc->serial, what);
    return -1;
  }
  const dir_node_t *avoid[1 + 2 * CFX_MAX_LEGS + CFX_MAX_FAILED_RELAYS + 1];
  int n = 0;
  avoid[n++] = exit;
  for (int i = 0; i < cc->n_legs; i++) {
    const dir_node_t *g = dir_nodelist_find_id(nl, cc->legs[i]->guard_id);
    const dir_node_t *m = dir_nodelist_find_id(nl, cc->legs[i]->middle_id);
    if (g)
      avoid[n++] = g;
    if (m)
      avoid[n++] = m;
  }
  for (int i = 0; i < cc->n_failed_ids; i++) {
    const dir_node_t *f = dir_nodelist_find_id(nl, cc->failed_ids[i]);
    if (f)
      avoid[n++] = f;
  }
  path_rng_t rng = path_rng_crypto();
  const dir_node_t *path[CLIENT_HOPS];
  path[0] = client_choose_guard(nl, avoid, n);
  if (path[0])
    avoid[n++] = path[0];
  path[1] = path[0] ? path_choose_node(nl, PATH_POS_MIDDLE, client_g.cfg.path,
                                       cc->exit_port_ok, avoid, n, &rng)
                    : NULL;
  path[2] = exit;
  if (!path[0] || !path[1]) {
    log_info("Conflux set #%llu: cannot %s a leg: no %s left that no "
             "other leg uses and no failed leg used",
             (unsigned long long)cc->serial, what,
             path[0] ? "middle" : "guard");
    return -1;
  }
  (*count)++;
  if (replacing_linked)
    client_g.stats.n_conflux_replacements++;
  else
    client_g.stats.n_conflux_relaunches++;
  log_info("Conflux set #%llu: %s leg %s -> %s -> %s (%s %d of %d, after: "
           "%s)",
           (unsigned long long)cc->serial,
           replacing_linked ? "replacing a linked leg with" : "relaunching",
           path[0]->nickname, path[1]->nickname, exit->nickname, what,
           *count, limit, why ? why : "?");
  cleg_t *nl_leg = client_leg_start(cc, path, CLIENT_HOPS, 1);
  if (!nl_leg) {
    log_info("Conflux set #%llu: the new leg could not start",
             (unsigned long long)cc->serial);
    return -1;
  }
  nl_leg->replacement = replacing_linked;
  return 0;
}

/* A leg of a conflux set closed: leave the set (or tear it down, by tor's
 * rules), then relaunch or replace the leg. */
void
client_cfx_leg_closed(ccirc_t *cc, cleg_t *leg, int reason, const char *why)
{
  int teardown = 0;
  const char *tw = NULL;
  int was_linked = leg->linked;
  if (leg->leg) {
    cfx_leg_state_t st;
    cleg_state(leg, &st);
    /* The out-of-order queue's memory is charged to this leg: the memory
     * handler closing it must free the queue (see client_circuit_mem). */
    int holds_queue = cfx_set_ooo_holder(cc->cfx) == leg->leg;
    teardown = cfx_set_remove_leg(cc->cfx, leg->leg, &st, &tw);
    if (holds_queue && !teardown) {
      teardown = 1;
      tw = "the leg charged with the out-of-order queue closed";
    }
    leg->leg = NULL;
  }
  log_info("Conflux set #%llu: leg %s closed (%s, reason %d); %d leg%s "
           "left",
           (unsigned long long)cc->serial, leg->path, why ? why : "?",
           reason, cc->n_legs - 1, cc->n_legs == 2 ? "" : "s");
  note_failed_relay(cc, leg->guard_id);
  note_failed_relay(cc, leg->middle_id);
  leg->circ = NULL;
  leg_remove(cc, leg);
  if (teardown) {
    client_g.stats.n_conflux_teardowns++;
    ccirc_close(cc, -1, tw);
    return;
  }
  if (cc->built && cc->n_legs == 0) {
    ccirc_close(cc, -1, why);
    return;
  }
  /* A leg that failed before linking is relaunched (proposal 329 2.4.3);
   * a linked one that died while the others go on is replaced, so that
   * the set gets back to its number of legs. */
  if (cfx_relaunch_leg(cc, was_linked, why) == 0)
    return;
  if (cc->n_legs == 0)
    ccirc_close(cc, -1, why);
  else
    client_cfx_maybe_ready(cc);
}

/* CONFLUX_LINKED on leg: check it, join the set, acknowledge. */
static void
handle_linked(ccirc_t *cc, cleg_t *leg, const uint8_t *body, uint16_t len)
{
  cfx_link_t link;
  const char *why = NULL;
  if (!leg->link_sent || leg->linked)
    why = "CONFLUX_LINKED we did not ask for";
  else if (cfx_link_parse(&link, body, len, &why) < 0)
    ;
  else if (memcmp(link.nonce, cc->nonce, CFX_NONCE_LEN))
    why = "CONFLUX_LINKED with another nonce";
  else if (!cc->built && cfx_set_link_loses_data(cc->cfx, link.last_seq_sent))
    why = "CONFLUX_LINKED says the exit sent more than we got (data loss)";
  /* A replacement leg's LINKED counts what the exit sent on the other legs
   * so far, and much of that may still be on its way: it queues behind the
   * bulk of a download there while this leg is empty, so LINKED often
   * overtakes it. The exit closes the set when a dead leg took data with
   * it (tor's rules, cfx_set_remove_leg); a message lost anyway leaves a
   * gap that the out-of-order bound closes. So no comparison here. */
  if (why) {
    log_notice("Conflux set #%llu: %s; closing the set",
               (unsigned long long)cc->serial, why);
    ccirc_close(cc, -1, why);
    return;
  }
  /* The exit starts this leg's counts from our LINK (its last sent is
   * what we said we delivered, its last received what we said we sent),
   * and relative SWITCH numbers are computed from them; so we start ours
   * from the same values, not from its LINKED. For the first legs of a set
   * both are 0; for a replacement leg the exit may meanwhile have sent
   * more on the other legs, which its LINKED counts but a SWITCH on this
   * leg will not. */
  cfx_leg_t *l = cfx_set_add_leg(cc->cfx, leg, leg->link_seq_recv,
                                 leg->link_seq_sent);
  if (!l) {
    circuit_mark_for_close(&leg->circ->base, DESTROY_REASON_FINISHED);
    return;
  }
  uint64_t now = evloop_now_us(client_g.loop);
  l->link_rtt_us = now > leg->link_sent_us ? now - leg->link_sent_us : 1;
  leg->leg = l;
  leg->linked = 1;
  if (!cc->first_link_us)
    cc->first_link_us = now;
  if (!client_g.cfg.conflux_alg)
    cc->cfx->alg = cfx_alg_for_ux(link.desired_ux);
  log_info("Conflux set #%llu: leg %s (circuit %llu) linked, RTT %.1f ms; "
           "the exit asks for %s, we send with %s",
           (unsigned long long)cc->serial, leg->path,
           (unsigned long long)leg->circ->base.gid, l->link_rtt_us / 1000.0,
           cfx_ux_name(link.desired_ux), cfx_alg_name(cc->cfx->alg));
  origin_circuit_send_relay(leg->circ, client_last_hop(leg->circ),
                            RELAY_COMMAND_CONFLUX_LINKED_ACK, 0, NULL, 0);
  client_ctl_note_linked(leg);
  if (cc->built) {
    char d[512];
    cfx_set_describe(cc->cfx, d, sizeof(d));
    log_info("Conflux set #%llu: %s leg %s joined the set: %s",
             (unsigned long long)cc->serial,
             leg->replacement ? "replacement" : "late", leg->path, d);
    ccirc_wake_streams(cc);
    return;
  }
  client_cfx_maybe_ready(cc);
}

/* A multiplexed message arrived on a conflux leg. */
static void
cfx_inbound(ccirc_t *cc, cleg_t *leg, uint8_t cmd, uint16_t id,
            const uint8_t *body, uint16_t len)
{
  if (!leg->leg) {
    ccirc_violation(cc, "a stream message on a conflux leg before it linked");
    return;
  }
  int r = cfx_set_on_msg(cc->cfx, leg->leg, cmd, id, body, len);
  uint64_t now = evloop_now_us(client_g.loop);
  if (r == CFX_RECV_QUEUED) {
    if (!cc->ooo_since_us)
      cc->ooo_since_us = now;
    return;
  }
  if (r == CFX_RECV_OLD) {
    ccirc_violation(cc, "a conflux message repeats a delivered number");
    return;
  }
  if (r == CFX_RECV_FULL) {
    client_g.stats.n_conflux_ooo_full++;
    log_notice("Conflux set #%llu: out-of-order queue full (%u messages); "
               "closing the set",
               (unsigned long long)cc->serial, cc->cfx->max_ooo);
    ccirc_close(cc, -1, "out-of-order queue bound hit");
    return;
  }
  ccirc_stream_msg(cc, cmd, id, body, len);
  cfx_msg_t *m;
  int k;
  if (cc->ooo_since_us)
    cc->ooo_held_us = now > cc->ooo_since_us ? now - cc->ooo_since_us : 1;
  while (!cc->dead && (k = cfx_set_next(cc->cfx, &m)) != 0) {
    if (k < 0) {
      ccirc_violation(cc, "duplicate conflux sequence number");
      return;
    }
    ccirc_stream_msg(cc, m->command, m->stream_id, m->body, m->len);
    /* The set outlives a close while we are busy. */
    cfx_set_msg_release(cc->cfx, m);
  }
  cc->ooo_held_us = 0;
  /* Messages left wait behind a new gap. */
  if (!cc->dead)
    cc->ooo_since_us = cc->cfx->n_queued ? now : 0;
}

/* A relay message from the exit on a leg of a conflux set. */
void
client_cfx_leg_relay(ccirc_t *cc, cleg_t *leg, uint8_t cmd, uint16_t id,
                     const uint8_t *body, uint16_t len)
{
  switch (cmd) {
  case RELAY_COMMAND_CONFLUX_LINKED:
    handle_linked(cc, leg, body, len);
    break;
  case RELAY_COMMAND_CONFLUX_SWITCH: {
    uint32_t rel;
    const char *why;
    if (!leg->leg)
      ccirc_violation(cc, "CONFLUX_SWITCH on a leg that is not linked");
    else if (cfx_switch_parse(body, len, &rel, &why) < 0)
      ccirc_violation(cc, why);
    else if (cfx_set_on_switch(cc->cfx, leg->leg, rel) < 0)
      ccirc_violation(cc, "CONFLUX_SWITCH overflows the sequence numbers");
    break;
  }
  case RELAY_COMMAND_CONFLUX_LINK:
  case RELAY_COMMAND_CONFLUX_LINKED_ACK:
    ccirc_violation(cc, "CONFLUX_LINK or LINKED_ACK sent to a client");
    break;
  case RELAY_COMMAND_SENDME:
    if (id == 0)
      ccirc_wake_streams(cc);
    break;
  default:
    if (!relay_command_is_multiplexed(cmd))
      break;
    /* As tor: stream commands without a stream do not count. */
    if (id == 0 && cmd != RELAY_COMMAND_DATA && cmd != RELAY_COMMAND_XON &&
        cmd != RELAY_COMMAND_XOFF)
      break;
    cfx_inbound(cc, leg, cmd, id, body, len);
    break;
  }
}
