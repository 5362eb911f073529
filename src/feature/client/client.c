/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c -- the SOCKS port and client-side streams (see client.h).
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
 * cfx_set_t; this file builds, links and drives the legs).
 *
 * Flow control is kept here for the last hop, where the streams end:
 * package/deliver windows per circuit and per stream, the digests of every
 * 100th DATA cell we send (an exit's v1 SENDME must echo them) and v1
 * SENDMEs carrying the digest of every 100th cell we receive. Bytes from
 * the SOCKS client are only read as fast as the windows allow; bytes for
 * it wait in its connection's output buffer, and stream SENDMEs are held
 * back while ten cells or more wait there.
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
 * sending between the exit's XOFF and XON. A circuit SENDME from the exit
 * (passed on by core once counted) means the window reopened.
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
 * Memory: the bytes of a set's out-of-order queue count in MaxMemInQueues,
 * charged to one leg (client_circuit_mem); closing that leg while messages
 * wait closes the set.
 *
 * Delivering a message may close circuits and thus the ccirc_t itself; a
 * busy count defers freeing it until the delivery loop is done.
 */
#include "feature/client/client.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "core/proto/relay_msg.h"
#include "feature/client/circbuild.h"
#include "feature/client/socks_proto.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_set.h"
#include "feature/measureme/measureme.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_HOPS 3
#define CIRC_BUILD_TIMEOUT_US (60ULL * 1000000)
#define CLIENT_TIMER_US (2ULL * 1000000)
#define CLEAN_IDLE_US (300ULL * 1000000)
/* Conflux: legs relaunched per set after failing to link when the
 * consensus has no cfx_max_unlinked_leg_retry, and linked legs replaced
 * per set. */
#define CFX_DEFAULT_UNLINKED_RETRY 3
#define CFX_MAX_REPLACEMENTS 3
/* Preemptive circuits: ports remembered (tor: predicted ports; port 80 is
 * predicted at start), for how long after their last request, how many
 * clean circuits at most, how long one waits unused before it is closed,
 * and how long to wait after one failed to build. */
#define PREDICTED_PORTS_MAX 8
#define PREDICTED_PORT_LIFETIME_US (3600ULL * 1000000)
#define PREEMPTIVE_MAX_CLEAN 3
#define PREEMPTIVE_IDLE_US (3600ULL * 1000000)
#define PREEMPTIVE_RETRY_US (30ULL * 1000000)

typedef enum {
  CS_SOCKS,
  CS_WAIT_CIRC,
  CS_CONNECTING,
  CS_OPEN,
} cstream_state_t;

typedef struct ccirc_t ccirc_t;

typedef struct cstream_t {
  dlist_node_t node;      /* in G.unattached or its circuit's list */
  conn_t *conn;
  socks_parser_t socks;
  socks_request_t req;
  cstream_state_t state;
  ccirc_t *circ;
  uint16_t id;
  int package_window, deliver_window;
  int retried;
  /* congestion control: XON/XOFF, and bytes queued for / written to the
   * SOCKS client (for the drain rate) */
  cc_flow_t flow;
  uint64_t delivered, written;
  /* For controllers (client_set_stream_observer): a process-wide ID once
   * reported NEW, and whether it ends as FAILED. */
  uint64_t gid;
  unsigned failed : 1;
} cstream_t;

/* One circuit of a ccirc_t. */
typedef struct cleg_t {
  ccirc_t *owner;
  circbuild_t *cb;
  origin_circuit_t *circ;  /* once built */
  unsigned built : 1;
  unsigned link_sent : 1;
  unsigned linked : 1;     /* LINKED taken, LINKED_ACK sent */
  uint64_t link_sent_us;
  cfx_leg_t *leg;          /* in owner->cfx once linked */
  /* What our CONFLUX_LINK said: the exit starts the leg's counts from
   * these, so we do too (see handle_linked). */
  uint64_t link_seq_sent, link_seq_recv;
  uint8_t guard_id[20], middle_id[20];
  char path[64];           /* "guard -> middle", for logs */
} cleg_t;

/* Relays of failed legs a set remembers, so relaunches avoid them. */
#define CFX_MAX_FAILED_RELAYS 8

struct ccirc_t {
  dlist_node_t node;
  cleg_t *legs[CFX_MAX_LEGS];
  int n_legs;
  cfx_set_t *cfx;          /* conflux: the set; NULL for a plain circuit */
  uint8_t nonce[CFX_NONCE_LEN];
  uint64_t serial;         /* conflux sets in logs */
  int n_relaunches;        /* legs relaunched after failing to link */
  int n_replacements;      /* legs launched to replace linked ones */
  uint8_t failed_ids[CFX_MAX_FAILED_RELAYS][20];
  int n_failed_ids;
  int built;               /* streams may use it */
  int busy;                /* > 0 while delivering (free deferred) */
  int dead;                /* closed; freed when busy drops to 0 */
  uint8_t exit_id[20];
  uint16_t exit_port_ok;   /* the port the exit was chosen for (0: any) */
  int pinned_exit;         /* chosen from ExitNodes whatever the port */
  /* isolation: SOCKS credentials */
  uint8_t iso[600];
  size_t iso_len;
  uint64_t created_us, dirty_since_us, idle_since_us;
  /* Built ahead of need (preemptive) for this port; until a stream takes
   * it, any isolation may (iso_open), as for tor's clean circuits. */
  int preemptive;
  uint16_t preempt_port;
  int iso_open;
  int package_window, deliver_window;
  uint8_t digests[CIRCWINDOW_START / CIRCWINDOW_INCREMENT][20];
  int n_digests;
  unsigned cells_received;
  dlist_t streams;         /* attached: waiting, connecting, open */
  uint16_t next_id;
};

static struct {
  evloop_t *loop;
  client_config_t cfg;
  listener_t *listener;
  dlist_t circs;
  dlist_t unattached;      /* in the SOCKS handshake */
  evloop_timer_t *timer;
  client_stats_t stats;
  uint64_t next_serial;
  /* predicted ports: the last request time of each (0: free slot) */
  struct {
    uint16_t port;
    uint64_t last_us;
  } predicted[PREDICTED_PORTS_MAX];
  evloop_deferred_t *preempt_ev;
  uint64_t preempt_not_before_us;
} G;

static void stream_attach(cstream_t *cs);

/* ---- controller view (read-only) ---------------------------------- */
static struct {
  client_stream_observer_fn fn;
  void *arg;
  uint64_t next_gid;
} O;

void
client_set_stream_observer(client_stream_observer_fn fn, void *arg)
{
  O.fn = fn;
  O.arg = arg;
}

static void
stream_info(const cstream_t *cs, client_stream_info_t *si)
{
  memset(si, 0, sizeof(*si));
  si->id = cs->gid;
  si->address = cs->req.address;
  si->port = cs->req.port;
  si->status = cs->state == CS_OPEN         ? CLIENT_STREAM_SUCCEEDED
               : cs->state == CS_CONNECTING ? CLIENT_STREAM_SENTCONNECT
                                            : CLIENT_STREAM_NEW;
  if (cs->circ)
    for (int i = 0; i < cs->circ->n_legs && !si->circ_gid; i++)
      if (cs->circ->legs[i]->circ)
        si->circ_gid = cs->circ->legs[i]->circ->base.gid;
  if (cs->conn)
    si->source = conn_peer(cs->conn);
}

static void
stream_report(cstream_t *cs, client_stream_status_t st)
{
  if (!cs->gid)
    cs->gid = ++O.next_gid;
  if (!O.fn)
    return;
  client_stream_info_t si;
  stream_info(cs, &si);
  si.status = st;
  O.fn(&si, O.arg);
}

void
client_foreach_stream(void (*fn)(const client_stream_info_t *, void *),
                      void *arg)
{
  if (!G.loop)
    return;
  for (dlist_node_t *n = dlist_first(&G.circs); n;
       n = dlist_next(&G.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    for (dlist_node_t *m = dlist_first(&cc->streams); m;
         m = dlist_next(&cc->streams, m)) {
      const cstream_t *cs = DLIST_ENTRY(m, cstream_t, node);
      client_stream_info_t si;
      stream_info(cs, &si);
      fn(&si, arg);
    }
  }
}
static cleg_t *leg_start(ccirc_t *cc, const dir_node_t *const *path,
                         int want_cc);
static void pump_to_circuit(cstream_t *cs);
static void ccirc_close(ccirc_t *cc, int fail_reason, const char *why);

/* ---- small helpers ------------------------------------------------ */

static void
iso_key(const socks_request_t *r, uint8_t *out, size_t *len)
{
  size_t n = 0;
  out[n++] = (uint8_t)r->auth;
  set_u16(out + n, r->username_len);
  n += 2;
  memcpy(out + n, r->username, r->username_len);
  n += r->username_len;
  set_u16(out + n, r->password_len);
  n += 2;
  memcpy(out + n, r->password, r->password_len);
  n += r->password_len;
  *len = n;
}

static int
last_hop_of(const origin_circuit_t *circ)
{
  return circ->n_hops_open - 1;
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
  return last_hop_of(plain_circ(cc));
}

static relay_crypto_t *
last_crypto(const ccirc_t *cc)
{
  return plain_circ(cc)->hops[last_hop(cc)].crypto;
}

/* The exit hop's congestion controller of a leg, or NULL. */
static const cc_t *
leg_cc(const cleg_t *leg)
{
  return leg->circ ? origin_circuit_cc(leg->circ, last_hop_of(leg->circ))
                   : NULL;
}

/* A congestion controller of cc's exit (for the parameters and the clock
 * state: every leg has the same), or NULL (fixed windows). */
static const cc_t *
exit_cc(const ccirc_t *cc)
{
  for (int i = 0; i < cc->n_legs; i++) {
    const cc_t *c = leg_cc(cc->legs[i]);
    if (c && (!cc->cfx || cc->legs[i]->linked))
      return c;
  }
  return NULL;
}

/* A leg's congestion state for the conflux schedulers. */
static void
leg_state(void *handle, cfx_leg_state_t *out)
{
  const cleg_t *leg = handle;
  const cc_t *c = leg_cc(leg);
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
    return c ? origin_circuit_send_relay(c, last_hop_of(c), cmd, id, body,
                                         len)
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
  int hop = last_hop_of(leg->circ);
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

/* May cs package a DATA cell now? */
static int
stream_can_send(const cstream_t *cs)
{
  const ccirc_t *cc = cs->circ;
  if (cc->dead)
    return 0;
  if (cc->cfx)
    return !cs->flow.xoff_received && cfx_set_can_send_data(cc->cfx);
  const cc_t *hcc = exit_cc(cc);
  if (hcc)
    return !cs->flow.xoff_received && cc_sendable(hcc) > 0;
  return cc->package_window > 0 && cs->package_window > 0;
}

/* Send XOFF / XON on cs as the flow-control state machine asked. */
static void
flow_send(cstream_t *cs, cc_flow_action_t act)
{
  ccirc_t *cc = cs->circ;
  if (act == CC_FLOW_SEND_XOFF) {
    uint8_t b[CC_XOFF_LEN];
    cc_flow_encode_xoff(b);
    log_debug("Sending XOFF on stream %u", cs->id);
    ccirc_send(cc, RELAY_COMMAND_XOFF, cs->id, b, sizeof(b));
  } else if (act == CC_FLOW_SEND_XON) {
    uint8_t b[CC_XON_LEN];
    cc_flow_encode_xon(b, cs->flow.ewma_drain_rate);
    log_debug("Sending XON (%u kB/s) on stream %u",
              (unsigned)cs->flow.ewma_drain_rate, cs->id);
    ccirc_send(cc, RELAY_COMMAND_XON, cs->id, b, sizeof(b));
  }
}

/* Send the SOCKS reply for an END reason (or success when reason < 0). */
static void
socks_reply(cstream_t *cs, int end_reason)
{
  uint8_t out[SOCKS5_REPLY_MAX];
  ssize_t n;
  if (end_reason < 0) {
    if (cs->req.version == 4)
      n = socks4_reply_encode(out, sizeof(out), SOCKS4_GRANTED, 0, 0);
    else
      n = socks5_reply_encode_addr(out, sizeof(out), SOCKS5_SUCCEEDED, NULL);
  } else {
    n = socks_reply_encode_end_reason(out, sizeof(out), cs->req.version,
                                      (uint8_t)end_reason);
  }
  if (n > 0) {
    buf_add(conn_outbuf(cs->conn), out, (size_t)n);
    conn_flush_soon(cs->conn);
  }
}

/* Free a stream; its connection is closed after flushing. */
static void
stream_free(cstream_t *cs)
{
  if (cs->gid)
    stream_report(cs, cs->failed ? CLIENT_STREAM_FAILED
                                 : CLIENT_STREAM_CLOSED);
  dlist_remove(&cs->node);
  if (cs->state == CS_OPEN)
    G.stats.n_open_streams--;
  if (cs->circ && dlist_is_empty(&cs->circ->streams))
    cs->circ->idle_since_us = evloop_now_us(G.loop);
  if (cs->conn)
    conn_close(cs->conn, 1);
  socks_parser_wipe(&cs->socks);
  free(cs);
}

static void
stream_fail(cstream_t *cs, int end_reason, const char *why)
{
  G.stats.n_streams_failed++;
  cs->failed = 1;
  log_info("SOCKS request for port %u failed: %s", cs->req.port, why);
  if (cs->state != CS_OPEN)
    socks_reply(cs, end_reason);
  stream_free(cs);
}

/* ---- circuits ----------------------------------------------------- */

static void
ccirc_free(ccirc_t *cc)
{
  for (int i = 0; i < cc->n_legs; i++) {
    circbuild_free(cc->legs[i]->cb); /* closes it; no callbacks */
    free(cc->legs[i]);
  }
  cfx_set_free(cc->cfx);
  pc_memwipe(cc->nonce, sizeof(cc->nonce));
  free(cc);
}

/* The ccirc_t is gone (every leg closed, or we give up on it): close what
 * is left of its circuits, end its open streams, retry the others once on
 * another circuit -- or, when fail_reason >= 0, fail them with that END
 * reason -- and free it unless a delivery loop still uses it. */
static void
ccirc_close(ccirc_t *cc, int fail_reason, const char *why)
{
  if (cc->dead)
    return;
  cc->dead = 1;
  if (!cc->built)
    G.stats.n_circuits_failed++;
  if (cc->preemptive && !cc->built)
    G.preempt_not_before_us = evloop_now_us(G.loop) + PREEMPTIVE_RETRY_US;
  G.stats.n_circuits--;
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
    circbuild_free(cc->legs[i]->cb);
    cc->legs[i]->circ = NULL;
  }
  dlist_node_t *n;
  while ((n = dlist_first(&cc->streams))) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    dlist_remove(n);
    dlist_node_init(&cs->node);
    cs->circ = NULL;
    if (cs->state == CS_OPEN) {
      stream_free(cs);
    } else if (fail_reason < 0 && !cs->retried) {
      /* Not connected yet: try once more on another circuit. */
      cs->retried = 1;
      G.stats.n_retries++;
      cs->state = CS_WAIT_CIRC;
      stream_attach(cs);
    } else {
      stream_fail(cs, fail_reason >= 0 ? fail_reason
                                       : END_STREAM_REASON_DESTROY,
                  why ? why : "circuit closed");
    }
  }
  if (cc->busy == 0)
    ccirc_free(cc);
}

static void
ccirc_unbusy(ccirc_t *cc)
{
  if (--cc->busy == 0 && cc->dead)
    ccirc_free(cc);
}

static cstream_t *
find_stream(ccirc_t *cc, uint16_t id)
{
  for (dlist_node_t *n = dlist_first(&cc->streams); n;
       n = dlist_next(&cc->streams, n)) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->id == id && cs->state >= CS_CONNECTING)
      return cs;
  }
  return NULL;
}

static void
send_begin(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  do {
    cs->id = cc->next_id++;
  } while (!cs->id || find_stream(cc, cs->id));
  char target[SOCKS_MAX_HOSTNAME + 16];
  int n = snprintf(target, sizeof(target), "%s:%u", cs->req.address,
                   cs->req.port);
  if (strchr(cs->req.address, ':')) /* IPv6 literal */
    n = snprintf(target, sizeof(target), "[%s]:%u", cs->req.address,
                 cs->req.port);
  cs->state = CS_CONNECTING;
  stream_report(cs, CLIENT_STREAM_SENTCONNECT);
  cs->package_window = STREAMWINDOW_START;
  cs->deliver_window = STREAMWINDOW_START;
  if (!cc->dirty_since_us)
    cc->dirty_since_us = evloop_now_us(G.loop);
  if (ccirc_send(cc, RELAY_COMMAND_BEGIN, cs->id, (const uint8_t *)target,
                 (uint16_t)n + 1) < 0) {
    stream_fail(cs, END_STREAM_REASON_INTERNAL, "could not send BEGIN");
    return;
  }
  if (cc->cfx && cc->cfx->curr)
    log_info("Stream %u to port %u: BEGIN on conflux set #%llu, leg %s",
             cs->id, cs->req.port, (unsigned long long)cc->serial,
             ((const cleg_t *)cc->cfx->curr->handle)->path);
}

/* MeasureMeHops: ask those hops of a new circuit to measure it, with one
 * random label per circuit (logged, to join the relays' records). */
static void
ask_measureme(origin_circuit_t *circ)
{
  if (!G.cfg.measureme_hops)
    return;
  measureme_request_t req;
  memset(&req, 0, sizeof(req));
  req.interval_ms = G.cfg.measureme_interval_ms;
  crypt_rand(req.label, sizeof(req.label));
  uint8_t body[MEASUREME_BODY_LEN];
  measureme_request_encode(body, &req);
  char label[17];
  base16_encode(label, sizeof(label), req.label, 8, BASE16_LOWER);
  for (int h = 0; h < CLIENT_HOPS; h++) {
    if (!(G.cfg.measureme_hops & (1u << h)))
      continue;
    if (origin_circuit_send_relay(circ, h, RELAY_COMMAND_MEASUREME, 0, body,
                                  sizeof(body)) < 0)
      return;
    log_notice("MeasureMe: asked hop %d of circuit %llu to measure it "
               "every %u ms (label %s)",
               h + 1, (unsigned long long)circ->base.gid, req.interval_ms,
               label);
  }
}

/* cc can take streams now: send their BEGINs. */
static void
ccirc_ready(ccirc_t *cc)
{
  cc->built = 1;
  cc->idle_since_us = evloop_now_us(G.loop);
  G.stats.n_circuits_built++;
  if (cc->preemptive && cc->iso_open) {
    G.stats.n_preemptive_built++;
    log_info("Preemptive %s for port %u is ready (built in %.0f ms)",
             cc->cfx ? "conflux set" : "circuit", cc->preempt_port,
             (cc->idle_since_us - cc->created_us) / 1000.0);
  }
  dlist_node_t *n, *next;
  for (n = dlist_first(&cc->streams); n; n = next) {
    next = dlist_next(&cc->streams, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_WAIT_CIRC)
      send_begin(cs);
    if (cc->dead)
      return;
  }
}

/* A conflux set is ready once no leg is still linking and one linked. */
static void
cfx_maybe_ready(ccirc_t *cc)
{
  if (cc->built || cc->dead)
    return;
  int linked = 0;
  for (int i = 0; i < cc->n_legs; i++) {
    if (!cc->legs[i]->linked)
      return;
    linked++;
  }
  if (!linked)
    return;
  G.stats.n_conflux_sets++;
  char d[512];
  cfx_set_describe(cc->cfx, d, sizeof(d));
  log_info("Conflux set #%llu linked: %s", (unsigned long long)cc->serial,
           d);
  ccirc_ready(cc);
}

static void
cb_built(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  leg->circ = circ;
  leg->built = 1;
  log_info("Client circuit %llu built in %.0f ms",
           (unsigned long long)circ->base.gid,
           circbuild_build_time_us(cb) / 1000.0);
  /* A clean preemptive circuit is measured once a stream takes it. */
  if (!cc->iso_open)
    ask_measureme(circ);
  if (!cc->cfx) {
    ccirc_ready(cc);
    return;
  }
  /* A conflux leg: congestion control with the exit is a must. */
  if (!leg_cc(leg)) {
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
  link.desired_ux = G.cfg.conflux_ux;
  leg->link_seq_sent = link.last_seq_sent;
  leg->link_seq_recv = link.last_seq_recv;
  uint8_t b[CFX_LINK_LEN];
  cfx_link_encode(&link, b, sizeof(b));
  leg->link_sent = 1;
  leg->link_sent_us = evloop_now_us(G.loop);
  origin_circuit_send_relay(circ, last_hop_of(circ),
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
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
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
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
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
  path[0] = path_choose_node(nl, PATH_POS_GUARD, G.cfg.path, cc->exit_port_ok,
                             avoid, n, &rng);
  if (path[0])
    avoid[n++] = path[0];
  path[1] = path[0] ? path_choose_node(nl, PATH_POS_MIDDLE, G.cfg.path,
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
    G.stats.n_conflux_replacements++;
  else
    G.stats.n_conflux_relaunches++;
  log_info("Conflux set #%llu: %s leg %s -> %s -> %s (%s %d of %d, after: "
           "%s)",
           (unsigned long long)cc->serial,
           replacing_linked ? "replacing a linked leg with" : "relaunching",
           path[0]->nickname, path[1]->nickname, exit->nickname, what,
           *count, limit, why ? why : "?");
  if (!leg_start(cc, path, 1)) {
    log_info("Conflux set #%llu: the new leg could not start",
             (unsigned long long)cc->serial);
    return -1;
  }
  return 0;
}

static void
cb_closed(circbuild_t *cb, int reason, const char *why, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  (void)cb;
  if (!cc->cfx) {
    log_info("Client circuit closed (%s, reason %d)", why ? why : "?",
             reason);
    leg->circ = NULL;
    ccirc_close(cc, -1, why);
    return;
  }
  int teardown = 0;
  const char *tw = NULL;
  int was_linked = leg->linked;
  if (leg->leg) {
    cfx_leg_state_t st;
    leg_state(leg, &st);
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
    G.stats.n_conflux_teardowns++;
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
    cfx_maybe_ready(cc);
}

static void
wake_streams(ccirc_t *cc)
{
  dlist_node_t *n, *next;
  cc->busy++;
  for (n = dlist_first(&cc->streams); n && !cc->dead; n = next) {
    next = dlist_next(&cc->streams, n);
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    if (cs->state == CS_OPEN && stream_can_send(cs))
      pump_to_circuit(cs);
  }
  ccirc_unbusy(cc);
}

static void
stream_maybe_sendme(cstream_t *cs)
{
  size_t pending = buf_datalen(conn_outbuf(cs->conn));
  const cc_t *hcc = exit_cc(cs->circ);
  if (hcc) {
    /* XON once the SOCKS client drained what we held (or an advisory
     * one when its drain rate changed). */
    uint64_t written =
        cs->delivered > pending ? cs->delivered - pending : 0;
    size_t n = written > cs->written ? (size_t)(written - cs->written) : 0;
    if (written > cs->written)
      cs->written = written;
    flow_send(cs, cc_flow_on_drained(&cs->flow, &hcc->p, pending, n,
                                     evloop_now_us(G.loop),
                                     !hcc->clock_broken));
    return;
  }
  if (cs->circ->cfx)
    return;
  while (cs->deliver_window <= STREAMWINDOW_START - STREAMWINDOW_INCREMENT &&
         pending < 10 * RELAY_BODY_MAX) {
    cs->deliver_window += STREAMWINDOW_INCREMENT;
    ccirc_send(cs->circ, RELAY_COMMAND_SENDME, cs->id, NULL, 0);
  }
}

/* A protocol violation by the exit: close cc. */
static void
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

static void
circ_sendme(ccirc_t *cc, const uint8_t *body, uint16_t len)
{
  if (cc->package_window + CIRCWINDOW_INCREMENT > CIRCWINDOW_START ||
      (len >= 1 && body[0] == 1 &&
       (len < 23 || !cc->n_digests ||
        memcmp(cc->digests[0], body + 3, 20)))) {
    ccirc_violation(cc, "bad circuit SENDME from the exit");
    return;
  }
  if (cc->n_digests) {
    memmove(cc->digests[0], cc->digests[1], (size_t)(cc->n_digests - 1) * 20);
    cc->n_digests--;
  }
  cc->package_window += CIRCWINDOW_INCREMENT;
  wake_streams(cc);
}

/* A stream message from the exit, in order. */
/* A DATA cell arrived on a circuit with fixed windows (no congestion
 * control, no conflux): take it from the circuit's deliver window and send
 * an authenticated circuit SENDME (v1, the digest of this cell) when a
 * window increment has been used up. Returns -1 when the exit exceeded the
 * window (the circuit is then closed). */
static int
circ_data_delivered(ccirc_t *cc)
{
  if (--cc->deliver_window < 0) {
    ccirc_violation(cc, "the exit exceeded the circuit deliver window");
    return -1;
  }
  if (cc->deliver_window <= CIRCWINDOW_START - CIRCWINDOW_INCREMENT) {
    uint8_t sm[23];
    sm[0] = 1;
    set_u16(sm + 1, 20);
    memcpy(sm + 3, relay_crypto_last_digest(last_crypto(cc),
                                            RELAY_DIR_BACKWARD),
           20);
    cc->deliver_window += CIRCWINDOW_INCREMENT;
    origin_circuit_send_relay(plain_circ(cc), last_hop(cc),
                              RELAY_COMMAND_SENDME, 0, sm, sizeof(sm));
  }
  return 0;
}

static void
handle_stream_msg(ccirc_t *cc, uint8_t cmd, uint16_t id, const uint8_t *body,
                  uint16_t len)
{
  const cc_t *hcc = exit_cc(cc);
  /* Fixed windows: every DATA cell counts against the circuit's deliver
   * window, and its digest may be the one a circuit SENDME carries,
   * whether or not its stream is still there (a stream we ended may still
   * get the cells the exit sent before our END arrived). */
  if (cmd == RELAY_COMMAND_DATA && !hcc && !cc->cfx &&
      circ_data_delivered(cc) < 0)
    return;
  cstream_t *cs = find_stream(cc, id);
  if (!cs) {
    if (cmd == RELAY_COMMAND_DATA)
      G.stats.n_data_unknown_stream++;
    return;
  }
  switch (cmd) {
  case RELAY_COMMAND_CONNECTED:
    if (cs->state != CS_CONNECTING)
      break;
    cs->state = CS_OPEN;
    stream_report(cs, CLIENT_STREAM_SUCCEEDED);
    G.stats.n_open_streams++;
    G.stats.n_streams_connected++;
    socks_reply(cs, -1);
    conn_set_reading(cs->conn, 1);
    pump_to_circuit(cs);
    break;
  case RELAY_COMMAND_DATA:
    if (cs->state != CS_OPEN)
      break;
    if (hcc) {
      /* Core sent the circuit SENDMEs; no stream windows. */
      buf_add(conn_outbuf(cs->conn), body, len);
      conn_flush_soon(cs->conn);
      cs->delivered += len;
      flow_send(cs, cc_flow_on_data(&cs->flow, &hcc->p, 1,
                                    buf_datalen(conn_outbuf(cs->conn)),
                                    evloop_now_us(G.loop),
                                    !hcc->clock_broken));
      break;
    }
    if (cc->cfx)
      break; /* conflux always has congestion control */
    if (--cs->deliver_window < 0) {
      ccirc_violation(cc, "the exit exceeded a stream deliver window");
      return;
    }
    buf_add(conn_outbuf(cs->conn), body, len);
    conn_flush_soon(cs->conn);
    stream_maybe_sendme(cs);
    break;
  case RELAY_COMMAND_SENDME:
    if (hcc || cc->cfx ||
        cs->package_window + STREAMWINDOW_INCREMENT > STREAMWINDOW_START) {
      ccirc_violation(cc, "unexpected stream SENDME");
      return;
    }
    cs->package_window += STREAMWINDOW_INCREMENT;
    pump_to_circuit(cs);
    break;
  case RELAY_COMMAND_XOFF:
  case RELAY_COMMAND_XON: {
    if (!hcc) {
      log_info("%s on stream %u of a circuit without congestion control; "
               "ignored",
               relay_command_name(cmd), id);
      break;
    }
    int r = cmd == RELAY_COMMAND_XOFF
                ? cc_flow_on_xoff(&cs->flow, &hcc->p, 1, body, len)
                : cc_flow_on_xon(&cs->flow, &hcc->p, 1, body, len);
    if (r < 0) {
      log_info("Malformed %s on stream %u; ignored", relay_command_name(cmd),
               id);
      break;
    }
    if (r == 0)
      log_info("Unexpected %s on stream %u (more than the data we sent "
               "warrants)",
               relay_command_name(cmd), id);
    if (cmd == RELAY_COMMAND_XON && cs->state == CS_OPEN)
      pump_to_circuit(cs);
    break;
  }
  case RELAY_COMMAND_END:
    if (cs->state == CS_OPEN) {
      stream_free(cs);
    } else {
      stream_fail(cs, len ? body[0] : END_STREAM_REASON_MISC,
                  "the exit refused the stream");
    }
    break;
  default:
    break;
  }
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
  uint64_t now = evloop_now_us(G.loop);
  l->link_rtt_us = now > leg->link_sent_us ? now - leg->link_sent_us : 1;
  leg->leg = l;
  leg->linked = 1;
  if (!G.cfg.conflux_alg)
    cc->cfx->alg = cfx_alg_for_ux(link.desired_ux);
  log_info("Conflux set #%llu: leg %s (circuit %llu) linked, RTT %.1f ms; "
           "the exit asks for %s, we send with %s",
           (unsigned long long)cc->serial, leg->path,
           (unsigned long long)leg->circ->base.gid, l->link_rtt_us / 1000.0,
           cfx_ux_name(link.desired_ux), cfx_alg_name(cc->cfx->alg));
  origin_circuit_send_relay(leg->circ, last_hop_of(leg->circ),
                            RELAY_COMMAND_CONFLUX_LINKED_ACK, 0, NULL, 0);
  if (cc->built) {
    char d[512];
    cfx_set_describe(cc->cfx, d, sizeof(d));
    log_info("Conflux set #%llu: replacement leg %s joined the set: %s",
             (unsigned long long)cc->serial, leg->path, d);
    wake_streams(cc);
    return;
  }
  cfx_maybe_ready(cc);
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
  if (r == CFX_RECV_QUEUED)
    return;
  if (r == CFX_RECV_OLD) {
    ccirc_violation(cc, "a conflux message repeats a delivered number");
    return;
  }
  if (r == CFX_RECV_FULL) {
    G.stats.n_conflux_ooo_full++;
    log_notice("Conflux set #%llu: out-of-order queue full (%u messages); "
               "closing the set",
               (unsigned long long)cc->serial, cc->cfx->max_ooo);
    ccirc_close(cc, -1, "out-of-order queue bound hit");
    return;
  }
  handle_stream_msg(cc, cmd, id, body, len);
  cfx_msg_t *m;
  int k;
  while (!cc->dead && (k = cfx_set_next(cc->cfx, &m)) != 0) {
    if (k < 0) {
      ccirc_violation(cc, "duplicate conflux sequence number");
      return;
    }
    handle_stream_msg(cc, m->command, m->stream_id, m->body, m->len);
    /* The set outlives a close while we are busy. */
    cfx_set_msg_release(cc->cfx, m);
  }
}

static void
cb_relay(circbuild_t *cb, int hop, uint8_t cmd, uint16_t id,
         const uint8_t *body, uint16_t len, void *arg)
{
  cleg_t *leg = arg;
  ccirc_t *cc = leg->owner;
  origin_circuit_t *circ = circbuild_circuit(cb);
  if (!circ || hop != last_hop_of(circ) || cc->dead)
    return;
  cc->busy++;
  if (!cc->cfx) {
    if (id == 0) {
      if (cmd == RELAY_COMMAND_SENDME) {
        /* With congestion control core already checked and counted it. */
        if (exit_cc(cc))
          wake_streams(cc);
        else
          circ_sendme(cc, body, len);
      }
    } else {
      handle_stream_msg(cc, cmd, id, body, len);
    }
    ccirc_unbusy(cc);
    return;
  }
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
      wake_streams(cc);
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
  ccirc_unbusy(cc);
}

static const circbuild_cbs_t circ_cbs = {cb_built, cb_closed, cb_relay};

/* Does the exit of cc accept port (by its policy summary)? */
static int
exit_accepts(const ccirc_t *cc, uint16_t port)
{
  if (cc->pinned_exit)
    return 1;
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
  if (!nl)
    return 0;
  const dir_node_t *nd = dir_nodelist_find_id(nl, cc->exit_id);
  return nd && nd->policy && policy_summary_allows_port(nd->policy, port);
}

static void
fill_target(extend_target_t *t, const dir_node_t *n)
{
  memset(t, 0, sizeof(*t));
  t->addr = n->or_addr;
  memcpy(t->rsa_id, n->rsa_id, 20);
  if (n->has_ed25519) {
    t->has_ed_id = 1;
    memcpy(t->ed_id, n->ed25519_id, 32);
  }
  memcpy(t->ntor_key, n->ntor_key, 32);
  t->handshake = HTYPE_NTOR;
}

/* Should a new circuit to this exit be a conflux set, and of how many
 * legs? 0: plain. */
static int
conflux_legs_for(const dir_node_t *exit, int want_cc)
{
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
  const consensus_t *c = nl ? nl->consensus : NULL;
  int enabled = G.cfg.conflux_enabled;
  if (enabled < 0) /* auto: the consensus decides (tor's default: on) */
    enabled = c ? consensus_get_param(c, "cfx_enabled", 1, 0, 1) : 1;
  if (!enabled || !want_cc ||
      !circbuild_protocols_support(exit->protocols, "Conflux", 1))
    return 0;
  int legs = G.cfg.conflux_legs;
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
    const dir_node_t *g = path_choose_node(nl, PATH_POS_GUARD, G.cfg.path,
                                           port, used, n_used, &rng);
    if (!g)
      break;
    used[n_used++] = g;
    const dir_node_t *m = path_choose_node(nl, PATH_POS_MIDDLE, G.cfg.path,
                                           port, used, n_used, &rng);
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

static cleg_t *
leg_start(ccirc_t *cc, const dir_node_t *const *path, int want_cc)
{
  extend_target_t hops[CLIENT_HOPS];
  for (int i = 0; i < CLIENT_HOPS; i++) {
    if (!path[i]->has_ntor)
      return NULL;
    fill_target(&hops[i], path[i]);
  }
  /* Congestion control with the exit where the consensus and the exit
   * allow it (proposal 324 section 10.1). */
  if (want_cc)
    circbuild_exit_request_cc(&hops[CLIENT_HOPS - 1],
                              cc_params_current()->alg,
                              path[CLIENT_HOPS - 1]->protocols);
  cleg_t *leg = pc_zalloc(sizeof(*leg));
  leg->owner = cc;
  snprintf(leg->path, sizeof(leg->path), "%s -> %s", path[0]->nickname,
           path[1]->nickname);
  memcpy(leg->guard_id, path[0]->rsa_id, 20);
  memcpy(leg->middle_id, path[1]->rsa_id, 20);
  cc->legs[cc->n_legs++] = leg;
  leg->cb = circbuild_start(hops, CLIENT_HOPS, &circ_cbs, leg);
  if (!leg->cb) {
    cc->legs[--cc->n_legs] = NULL;
    free(leg);
    return NULL;
  }
  return leg;
}

static ccirc_t *
launch_circuit(const socks_request_t *req, const uint8_t *iso, size_t iso_len)
{
  const dir_nodelist_t *nl = dir_client_nodelist(G.cfg.dir);
  if (!nl)
    return NULL;
  const dir_node_t *paths[CFX_MAX_LEGS][CLIENT_HOPS];
  path_rng_t rng = path_rng_crypto();
  char *err = NULL;
  int pinned = 0, port = req->port;
  if (path_choose(nl, G.cfg.path, CLIENT_HOPS, port, NULL, &rng, paths[0],
                  &err) < 0) {
    PC_FREE(err);
    port = 0;
    if (!G.cfg.exit_nodes_pinned ||
        path_choose(nl, G.cfg.path, CLIENT_HOPS, 0, NULL, &rng, paths[0],
                    &err) < 0) {
      log_notice("No path for a stream to port %u: %s", req->port,
                 err ? err : "?");
      free(err);
      return NULL;
    }
    pinned = 1;
  }
  const dir_node_t *exit = paths[0][CLIENT_HOPS - 1];
  /* Would the exit take congestion control (needed for conflux)? */
  extend_target_t probe;
  fill_target(&probe, exit);
  int want_cc = circbuild_exit_request_cc(&probe, cc_params_current()->alg,
                                          exit->protocols);
  int n_legs = 1;
  int want_legs = conflux_legs_for(exit, want_cc);
  if (want_legs) {
    n_legs = choose_leg_paths(nl, port, want_legs, paths);
    if (n_legs < 2) {
      G.stats.n_conflux_fallbacks++;
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
  if (iso_len)
    memcpy(cc->iso, iso, iso_len);
  cc->iso_len = iso_len;
  cc->created_us = evloop_now_us(G.loop);
  cc->package_window = CIRCWINDOW_START;
  cc->deliver_window = CIRCWINDOW_START;
  crypt_rand((uint8_t *)&cc->next_id, sizeof(cc->next_id));
  if (n_legs > 1) {
    crypt_rand(cc->nonce, sizeof(cc->nonce));
    cc->serial = ++G.next_serial;
    cfx_alg_t alg = G.cfg.conflux_alg ? (cfx_alg_t)G.cfg.conflux_alg
                                      : CFX_ALG_MINRTT;
    cc->cfx = cfx_set_new(cc->nonce, alg, G.cfg.conflux_max_ooo, leg_state);
  }
  dlist_insert_tail(&G.circs, &cc->node);
  G.stats.n_circuits++;
  for (int l = 0; l < n_legs; l++) {
    const dir_node_t *const *p = paths[l];
    if (cc->cfx)
      log_info("Conflux set #%llu for port %u: leg %d %s -> %s -> %s "
               "(congestion control and link with the exit)",
               (unsigned long long)cc->serial, req->port, l + 1,
               p[0]->nickname, p[1]->nickname, p[2]->nickname);
    else
      log_info("Building a circuit %s -> %s -> %s for port %u%s",
               p[0]->nickname, p[1]->nickname, p[2]->nickname, req->port,
               want_cc ? " (asking the exit for congestion control)" : "");
    leg_start(cc, p, want_cc);
  }
  if (cc->n_legs == 0) {
    dlist_remove(&cc->node);
    G.stats.n_circuits--;
    cfx_set_free(cc->cfx);
    free(cc);
    return NULL;
  }
  return cc;
}

/* Can streams still be attached to cc? */
static int
ccirc_usable(const ccirc_t *cc)
{
  if (cc->dead)
    return 0;
  if (!cc->built)
    return 1;
  for (int i = 0; i < cc->n_legs; i++)
    if (cc->legs[i]->circ && !cc->legs[i]->circ->base.marked_for_close)
      return 1;
  return 0;
}

/* ---- preemptive circuits ---------------------------------------- */

/* Remember that a stream asked for port (tor's predicted ports). */
static void
predict_port(uint16_t port, uint64_t now)
{
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++)
    if (G.predicted[i].last_us && G.predicted[i].port == port) {
      G.predicted[i].last_us = now;
      return;
    }
  /* A free slot, else the least recently asked port's. */
  int slot = 0;
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++) {
    if (!G.predicted[i].last_us) {
      slot = i;
      break;
    }
    if (G.predicted[i].last_us < G.predicted[slot].last_us)
      slot = i;
  }
  if (G.predicted[slot].last_us)
    log_info("Forgetting predicted port %u for port %u",
             G.predicted[slot].port, port);
  G.predicted[slot].port = port;
  G.predicted[slot].last_us = now ? now : 1;
}

/* Keep a clean circuit ready for each predicted port (the most recently
 * asked first), PREEMPTIVE_MAX_CLEAN at most in all; runs from the
 * client's timer and after a stream took a clean circuit. */
static void
preempt_cb(void *arg)
{
  (void)arg;
  if (!dir_client_nodelist(G.cfg.dir))
    return; /* no consensus yet */
  uint64_t now = evloop_now_us(G.loop);
  if (now < G.preempt_not_before_us)
    return;
  int n_clean = 0, n_ports = 0;
  for (dlist_node_t *n = dlist_first(&G.circs); n;
       n = dlist_next(&G.circs, n)) {
    const ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (cc->iso_open && ccirc_usable(cc))
      n_clean++;
  }
  int done[PREDICTED_PORTS_MAX] = {0};
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++) {
    if (G.predicted[i].last_us &&
        now - G.predicted[i].last_us > PREDICTED_PORT_LIFETIME_US) {
      log_info("Port %u is no longer predicted (not asked for in an hour)",
               G.predicted[i].port);
      G.predicted[i].last_us = 0;
    }
    if (G.predicted[i].last_us)
      n_ports++;
  }
  while (n_clean < PREEMPTIVE_MAX_CLEAN) {
    int best = -1;
    for (int i = 0; i < PREDICTED_PORTS_MAX; i++)
      if (G.predicted[i].last_us && !done[i] &&
          (best < 0 || G.predicted[i].last_us > G.predicted[best].last_us))
        best = i;
    if (best < 0)
      return;
    done[best] = 1;
    uint16_t port = G.predicted[best].port;
    int covered = 0;
    for (dlist_node_t *n = dlist_first(&G.circs); n && !covered;
         n = dlist_next(&G.circs, n)) {
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
      G.preempt_not_before_us = now + PREEMPTIVE_RETRY_US;
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
take_clean_circuit(ccirc_t *cc, const cstream_t *cs, const uint8_t *iso,
                   size_t iso_len, uint64_t now)
{
  cc->iso_open = 0;
  memcpy(cc->iso, iso, iso_len);
  cc->iso_len = iso_len;
  if (cc->preemptive) {
    G.stats.n_preemptive_used++;
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
      ask_measureme(cc->legs[i]->circ);
}

static void
stream_attach(cstream_t *cs)
{
  if (!cs->gid)
    stream_report(cs, CLIENT_STREAM_NEW);
  uint8_t iso[600];
  size_t iso_len;
  iso_key(&cs->req, iso, &iso_len);
  uint64_t now = evloop_now_us(G.loop);
  uint64_t max_dirty = (uint64_t)G.cfg.max_circuit_dirtiness * 1000000ULL;
  ccirc_t *use = NULL, *clean = NULL;
  for (dlist_node_t *n = dlist_first(&G.circs); n; n = dlist_next(&G.circs, n)) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!ccirc_usable(cc))
      continue;
    if (!exit_accepts(cc, cs->req.port))
      continue;
    if (cc->iso_open) {
      /* Clean: any isolation may take it; built ones first. */
      if (!clean || (cc->built && !clean->built))
        clean = cc;
      continue;
    }
    if (cc->iso_len != iso_len || memcmp(cc->iso, iso, iso_len))
      continue;
    if (cc->dirty_since_us && now - cc->dirty_since_us > max_dirty)
      continue;
    use = cc;
    break;
  }
  predict_port(cs->req.port, now);
  if (!use && clean) {
    use = clean;
    take_clean_circuit(use, cs, iso, iso_len, now);
    evloop_deferred_schedule(G.preempt_ev); /* replace it */
  }
  if (!use)
    use = launch_circuit(&cs->req, iso, iso_len);
  if (!use) {
    stream_fail(cs, END_STREAM_REASON_NOROUTE,
                "no circuit (no usable consensus or no suitable exit)");
    return;
  }
  cs->circ = use;
  cs->state = CS_WAIT_CIRC;
  dlist_insert_tail(&use->streams, &cs->node);
  if (use->built)
    send_begin(cs);
}

/* ---- SOCKS connections -------------------------------------------- */

static void
pump_to_circuit(cstream_t *cs)
{
  ccirc_t *cc = cs->circ;
  buf_t *in = conn_inbuf(cs->conn);
  int with_cc = cc->cfx || exit_cc(cc) != NULL;
  while (buf_datalen(in) && stream_can_send(cs)) {
    size_t n = buf_datalen(in);
    if (n > RELAY_BODY_MAX)
      n = RELAY_BODY_MAX;
    const uint8_t *p = buf_pullup(in, n);
    /* With congestion control core counts the cell against the window of
     * the circuit it leaves on. */
    if (ccirc_send(cc, RELAY_COMMAND_DATA, cs->id, p, (uint16_t)n) < 0)
      return;
    buf_drain(in, n);
    if (with_cc) {
      cc_flow_note_sent(&cs->flow, n);
      continue;
    }
    cs->package_window--;
    if (--cc->package_window % CIRCWINDOW_INCREMENT == 0 &&
        cc->n_digests < (int)(sizeof(cc->digests) / 20))
      memcpy(cc->digests[cc->n_digests++],
             relay_crypto_last_digest(last_crypto(cc), RELAY_DIR_FORWARD),
             20);
  }
  conn_set_reading(cs->conn, buf_datalen(in) == 0);
}

static void
handle_socks_bytes(cstream_t *cs)
{
  buf_t *in = conn_inbuf(cs->conn);
  while (cs->state == CS_SOCKS && buf_datalen(in)) {
    size_t len = buf_datalen(in), used = 0;
    const uint8_t *p = buf_pullup(in, len);
    socks_status_t st = socks_parser_feed(&cs->socks, p, len, &used);
    buf_drain(in, used);
    size_t rlen = 0;
    const uint8_t *reply;
    switch (st) {
    case SOCKS_NEED_MORE:
      return;
    case SOCKS_SEND_REPLY:
      reply = socks_parser_reply(&cs->socks, &rlen);
      buf_add(conn_outbuf(cs->conn), reply, rlen);
      conn_flush_soon(cs->conn);
      break;
    case SOCKS_FAILED:
      reply = socks_parser_reply(&cs->socks, &rlen);
      if (rlen)
        buf_add(conn_outbuf(cs->conn), reply, rlen);
      log_info("SOCKS handshake failed: %s",
               socks_parser_errmsg(&cs->socks));
      stream_free(cs);
      return;
    case SOCKS_DONE:
      cs->req = *socks_parser_request(&cs->socks);
      dlist_remove(&cs->node);
      dlist_node_init(&cs->node);
      if (cs->req.command != SOCKS_CMD_CONNECT) {
        stream_fail(cs, END_STREAM_REASON_MISC,
                    "only CONNECT is supported yet (not RESOLVE)");
        return;
      }
      /* Further bytes are the client's data: wait for CONNECTED. */
      conn_set_reading(cs->conn, 0);
      stream_attach(cs);
      return;
    }
  }
}

static void
socks_conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  cstream_t *cs = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN:
    break;
  case CONN_EV_DATA:
    if (cs->state == CS_SOCKS)
      handle_socks_bytes(cs);
    else if (cs->state == CS_OPEN)
      pump_to_circuit(cs);
    break;
  case CONN_EV_DRAINED:
    if (cs->state == CS_OPEN)
      stream_maybe_sendme(cs);
    break;
  case CONN_EV_EOF:
  case CONN_EV_ERROR:
    if (cs->state == CS_OPEN || cs->state == CS_CONNECTING) {
      uint8_t reason = END_STREAM_REASON_DONE;
      ccirc_send(cs->circ, RELAY_COMMAND_END, cs->id, &reason, 1);
    }
    conn_free(cs->conn); /* the client is gone: nothing to flush */
    stream_free(cs);
    break;
  }
}

static void
socks_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  cstream_t *cs = pc_zalloc(sizeof(*cs));
  socks_parser_init(&cs->socks, 0);
  cs->state = CS_SOCKS;
  dlist_insert_tail(&G.unattached, &cs->node);
  G.stats.n_socks_conns++;
  cs->conn = conn_new_accepted(G.loop, NULL, fd, peer, socks_conn_cb, cs);
  conn_set_lowat(cs->conn, 4 * RELAY_BODY_MAX);
}

/* Close circuits that have been idle too long or never got built. */
static void
client_timer_cb(void *arg)
{
  (void)arg;
  uint64_t now = evloop_now_us(G.loop);
  uint64_t max_dirty = (uint64_t)G.cfg.max_circuit_dirtiness * 1000000ULL;
  dlist_node_t *n, *next;
  for (n = dlist_first(&G.circs); n; n = next) {
    next = dlist_next(&G.circs, n);
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    if (!cc->built) {
      if (now - cc->created_us > CIRC_BUILD_TIMEOUT_US) {
        log_info("Client circuit took too long to build; giving up on it");
        ccirc_close(cc, END_STREAM_REASON_TIMEOUT, "circuit build timed out");
      }
      continue;
    }
    if (!dlist_is_empty(&cc->streams))
      continue;
    int too_dirty = cc->dirty_since_us && now - cc->dirty_since_us > max_dirty;
    int idle = now - cc->idle_since_us >
               (cc->iso_open ? PREEMPTIVE_IDLE_US : CLEAN_IDLE_US);
    if (too_dirty || idle)
      ccirc_close(cc, -1, too_dirty ? "dirty" : "idle");
  }
  evloop_deferred_schedule(G.preempt_ev);
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
  for (dlist_node_t *n = dlist_first(&G.circs); n;
       n = dlist_next(&G.circs, n)) {
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
client_init(evloop_t *loop, const client_config_t *cfg, const char **err)
{
  memset(&G, 0, sizeof(G));
  G.loop = loop;
  G.cfg = *cfg;
  dlist_init(&G.circs);
  dlist_init(&G.unattached);
  G.listener = listener_new(loop, &cfg->socks_addr, socks_accept, NULL, err);
  if (!G.listener)
    return -1;
  G.timer = evloop_timer_new(loop, client_timer_cb, NULL);
  evloop_timer_schedule_periodic(G.timer, CLIENT_TIMER_US);
  G.preempt_ev = evloop_deferred_new(loop, preempt_cb, NULL);
  predict_port(80, evloop_now_us(loop)); /* as tor does at start */
  if (circuits_add_extra_mem_fn(client_circuit_mem) < 0)
    log_warn("Client: too many memory reporters; conflux out-of-order "
             "queues do not count in MaxMemInQueues");
  return 0;
}

void
client_reconfigure(const client_config_t *cfg)
{
  pc_addr_t keep = G.cfg.socks_addr;
  G.cfg = *cfg;
  G.cfg.socks_addr = keep; /* the listener stays where it is */
}

void
client_get_stats(client_stats_t *out)
{
  *out = G.stats;
}

void
client_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&G.unattached))) {
    cstream_t *cs = DLIST_ENTRY(n, cstream_t, node);
    stream_free(cs);
  }
  while ((n = dlist_first(&G.circs))) {
    ccirc_t *cc = DLIST_ENTRY(n, ccirc_t, node);
    dlist_node_t *s;
    while ((s = dlist_first(&cc->streams))) {
      cstream_t *cs = DLIST_ENTRY(s, cstream_t, node);
      dlist_remove(s);
      dlist_node_init(&cs->node);
      cs->circ = NULL;
      stream_free(cs);
    }
    dlist_remove(&cc->node);
    ccirc_free(cc);
  }
  circuits_remove_extra_mem_fn(client_circuit_mem);
  evloop_deferred_free(G.preempt_ev);
  listener_free(G.listener);
  evloop_timer_free(G.timer);
}
