/* SPDX-License-Identifier: BSD-3-Clause */
/* dtcp.c -- circuits over TCP-over-DTLS (dtcp.h).
 *
 * Why a user-level TCP and which one. The paper's point is one TCP
 * connection per circuit *without* kernel state per circuit and with one
 * UDP socket per relay: that needs a TCP in user space whose segments we
 * carry. We use lwIP (lib/utcp) rather than writing a TCP: it is a
 * complete, long-maintained implementation (RFC 5681 congestion control,
 * fast retransmit/recovery, an RTO from the smoothed RTT that takes no
 * samples from retransmissions, window scaling,
 * zero-window probes, keepalive) packaged by Debian, with a raw callback
 * API that needs no threads; a TCP of our own would be thousands of lines
 * of subtle code to test. Its limits, which the design accepts: one stack
 * per process (global state), so all links share one stack and every peer
 * gets a pseudo address in it (utcp.c); the options are Debian's (window
 * 64 KiB, MSS from our 1146-byte records: 1126 bytes of cells per
 * segment; delayed ACKs up to 250 ms; 500 ms retransmission timer ticks).
 * What they cost in dtls-interference (the 64 KiB window holds a bulk
 * hop; 1.5 s timeouts under loss) is measured in doc/experiments.md with
 * the counters below (retransmissions, send-buffer waits, hop_sockstat).
 *
 * What every carried transport does (hooks, the tag map, links and hops,
 * direct cells, the extension choice) is shared with BackTap in
 * feature/dgram/dgram_carry.c; this file is TCP-over-DTLS's part:
 *   dtcp_t        the process's one instance: the user-level TCP stack,
 *                 its dgram_carry_t, cell counters;
 *   dtcp_link_t   one per authenticated datagram link: its utcp peer;
 *   dtcp_hop_t    one per circuit hop: the TCP connection and a partial
 *                 cell (the shared record holds the carried channel and a
 *                 few direct cells that found the send buffer full).
 *
 * Memory per circuit hop (doc/architecture.md has the comparison with
 * PerCircuitTCP's kernel sockets): our hop record (~600 bytes; 2 KB more
 * while direct cells wait), lwIP's control block and utcp's record (456
 * heap bytes per connection end, measured by check_utcp),
 * and what is in flight: at most 64 KiB queued to send and 64 KiB out of
 * order, both counted in MEMACCT_UTCP by utcp; cells delivered upward
 * are ordinary packed cells in circuit queues, counted as before.
 */
#include "feature/dtcp/dtcp.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "feature/dgram/dgram_carry.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/time/clock.h"

#include <stdlib.h>
#include <string.h>

#define DTCP_TAG_CLASS 1
#define CELL_LEN CELL_MAX_NETWORK_LEN

typedef struct dtcp_hop_t {
  dgram_carry_hop_t base;         /* first: the shared hop record */
  utcp_conn_t *conn;              /* NULL once the connection is over */
  int chan_pending;               /* accepted: channel made by 1st cell */
  uint64_t accepted_us;           /* ... since then, in t->pending */
  dlist_node_t pending_node;
  uint64_t full_since_us;         /* send buffer full since (0: not) */
  uint64_t full_count, full_us;   /* times found full, time spent so */
  size_t rx_have;
  uint8_t rx[CELL_LEN];
} dtcp_hop_t;

typedef struct dtcp_link_t {
  dgram_carry_link_t base;        /* first: the shared link record */
  utcp_peer_t *peer;
} dtcp_link_t;

struct dtcp_t {
  dgram_carry_t *carry;
  utcp_t *u;
  dlist_t pending;                /* accepted hops without a cell yet,
                                   * oldest first */
  evloop_timer_t *pending_timer;  /* the oldest one's deadline */
  uint64_t first_cell_timeout_us;
  uint64_t cells_sent, cells_received;
  uint64_t conn_failed;
  uint64_t first_cell_timeouts;
  uint64_t sndbuf_full, sndbuf_full_us;
};

static dtcp_t *the_t;

#define HOP(h) ((dtcp_hop_t *)(void *)(h))
#define LINK(l) ((dtcp_link_t *)(void *)(l))
#define T(l) ((dtcp_t *)dgram_carry_arg((l)->c))

/* ---- the TCP connection's callbacks ---- */

/* A hop the peer opened gets its channel with its first cell (the
 * CREATE2), not when the connection is accepted: a carried channel
 * without a circuit is closed within a second, sooner than TCP recovers a
 * lost first segment (lwIP's first retransmission waits 3 s). */
static void
conn_recv(void *arg, const uint8_t *data, size_t len)
{
  dtcp_hop_t *h = arg;
  dgram_carry_t *c = h->base.lk->c;
  uint64_t tag = h->base.tag;
  dtcp_t *t = dgram_carry_arg(c);
  while (len) {
    size_t n = CELL_LEN - h->rx_have;
    if (n > len)
      n = len;
    memcpy(h->rx + h->rx_have, data, n);
    h->rx_have += n;
    data += n;
    len -= n;
    if (h->rx_have < CELL_LEN)
      break;
    h->rx_have = 0;
    t->cells_received++;
    if (h->chan_pending) {
      h->chan_pending = 0;
      dlist_remove(&h->pending_node);
      dgram_carry_hop_open_channel(&h->base);
    }
    if (!h->base.chan) {
      utcp_conn_consumed(h->conn, CELL_LEN);
      continue;
    }
    dgram_carry_hop_input(&h->base, h->rx, 0);
    /* The cell may have closed the circuit, the channel and the hop. */
    if (dgram_carry_hop_by_tag(c, tag) != &h->base)
      return;
  }
}

/* The send buffer had no room for a cell until now (or the hop's end). */
static void
full_end(dtcp_hop_t *h)
{
  if (!h->full_since_us)
    return;
  uint64_t d = time_mono_us() - h->full_since_us;
  h->full_us += d;
  T(h->base.lk)->sndbuf_full_us += d;
  h->full_since_us = 0;
}

static void
conn_sent(void *arg)
{
  dtcp_hop_t *h = arg;
  if (h->full_since_us && utcp_conn_room(h->conn) >= CELL_LEN)
    full_end(h);
  if (!h->chan_pending)
    dgram_carry_hop_writable(&h->base);
}

static void
conn_closed(void *arg, const char *why)
{
  dtcp_hop_t *h = arg;
  full_end(h);
  h->conn = NULL;
  if (strcmp(why, "closed by the peer") != 0)
    T(h->base.lk)->conn_failed++;
  log_info("TCP-over-DTLS: a circuit hop's connection ended: %s", why);
  dgram_carry_hop_lost(&h->base, "its TCP-over-DTLS connection ended");
}

static const utcp_conn_ops_t conn_ops = {conn_recv, conn_sent, conn_closed};

/* ---- the hop: what the shared carrier asks of us ---- */

static const char *
hop_connect(dgram_carry_hop_t *h)
{
  HOP(h)->conn = utcp_connect(LINK(h->lk)->peer, &conn_ops, h);
  return HOP(h)->conn ? NULL : "no TCP port left towards it";
}

static int
hop_ready(dgram_carry_hop_t *h, const uint8_t *cell)
{
  (void)cell;
  return HOP(h)->conn ? 0 : -1;
}

/* A cell that finds the send buffer full (lwIP's TCP_SND_BUF, or its
 * queue of segments) waits: counted, with the time until room comes
 * back, per hop (MeasureMe's sndbuf_full) and in all (the MetricsPort). */
static int
hop_can_send(dgram_carry_hop_t *h)
{
  dtcp_hop_t *d = HOP(h);
  if (!d->conn)
    return 0;
  if (utcp_conn_room(d->conn) >= CELL_LEN)
    return 1;
  if (!d->full_since_us) {
    d->full_since_us = time_mono_us();
    d->full_count++;
    T(h->lk)->sndbuf_full++;
  }
  return 0;
}

static uint32_t
clamp32(uint64_t v)
{
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* lwIP's state in TCP_INFO's terms (sockstat.h): windows in segments of
 * the connection's MSS, times in microseconds. */
static int
hop_sockstat(const dgram_carry_hop_t *h, sockstat_tcp_t *out)
{
  const dtcp_hop_t *d = (const dtcp_hop_t *)(const void *)h;
  utcp_conn_info_t in;
  if (!d->conn || utcp_conn_info(d->conn, &in) < 0)
    return -1;
  memset(out, 0, sizeof(*out));
  uint32_t mss = in.mss ? in.mss : 1;
  out->cwnd = in.cwnd / mss;
  out->ssthresh = in.ssthresh / mss;
  out->unacked = in.unacked_segs;
  out->mss = in.mss;
  out->rtt_us = in.rtt_ms * 1000u;
  out->rttvar_us = in.rttvar_ms * 1000u;
  out->rto_us = in.rto_ms * 1000u;
  out->total_retrans = clamp32(in.retrans);
  out->notsent = in.unsent;
  out->outq = in.queued;
  out->snd_wnd = in.snd_wnd;
  uint64_t full_us = d->full_us;
  if (d->full_since_us)
    full_us += time_mono_us() - d->full_since_us;
  out->sndbuf_full = clamp32(d->full_count);
  out->sndbuf_full_ms = clamp32(full_us / 1000u);
  return 0;
}

static int
hop_send(dgram_carry_hop_t *h, const uint8_t *cell)
{
  if (utcp_conn_write(HOP(h)->conn, cell, CELL_LEN) < 0)
    return -1;
  T(h->lk)->cells_sent++;
  return 0;
}

static int
hop_alive(const dgram_carry_hop_t *h)
{
  return HOP(h)->conn != NULL;
}

/* Graceful: queued cells, then FIN. */
static void
hop_close(dgram_carry_hop_t *h)
{
  full_end(HOP(h));
  if (HOP(h)->conn)
    utcp_conn_close(HOP(h)->conn);
  HOP(h)->conn = NULL;
}

/* A cell we delivered has left this relay: the window reopens by one
 * cell. */
static void
released(dgram_carry_hop_t *h, uint32_t seq)
{
  (void)seq;
  if (HOP(h)->conn)
    utcp_conn_consumed(HOP(h)->conn, CELL_LEN);
}

static size_t
hop_mem(const dgram_carry_hop_t *h)
{
  return HOP(h)->conn ? utcp_conn_mem(HOP(h)->conn) : 0;
}

static void
hop_gone(dgram_carry_hop_t *h)
{
  if (dlist_node_is_linked(&HOP(h)->pending_node))
    dlist_remove(&HOP(h)->pending_node);
}

/* ---- connections that never carry a cell ---- */

static void
pending_arm(dtcp_t *t)
{
  dlist_node_t *n = dlist_first(&t->pending);
  if (!n) {
    evloop_timer_cancel(t->pending_timer);
    return;
  }
  dtcp_hop_t *h = DLIST_ENTRY(n, dtcp_hop_t, pending_node);
  uint64_t due = h->accepted_us + t->first_cell_timeout_us;
  uint64_t now = time_mono_us();
  evloop_timer_schedule(t->pending_timer, due > now ? due - now : 0);
}

/* A connection a peer opened must bring its first cell (the CREATE2)
 * within first_cell_timeout: one that does not (an idle or stalled peer,
 * or one that only opens connections) is reset, so that it holds no
 * stack memory and no place under DTCP_MAX_HOPS_PER_LINK. */
static void
pending_timer_cb(void *arg)
{
  dtcp_t *t = arg;
  uint64_t now = time_mono_us();
  dlist_node_t *n;
  while ((n = dlist_first(&t->pending))) {
    dtcp_hop_t *h = DLIST_ENTRY(n, dtcp_hop_t, pending_node);
    if (h->accepted_us + t->first_cell_timeout_us > now)
      break;
    dlist_remove(&h->pending_node);
    t->first_cell_timeouts++;
    log_info("TCP-over-DTLS: a connection from a peer carried no cell in "
             "%llu s; reset",
             (unsigned long long)(t->first_cell_timeout_us / 1000000u));
    utcp_conn_abort(h->conn);
    h->conn = NULL;
    dgram_carry_hop_lost(&h->base, "no cell");
  }
  pending_arm(t);
}

/* ---- links ---- */

static void
seg_out(void *arg, const uint8_t *seg, size_t len)
{
  dtcp_link_t *lk = arg;
  (void)dgram_link_send(lk->base.dl, DGRAM_REC_TCP_SEGMENT, seg, len);
}

static const utcp_conn_ops_t *
seg_accept(void *arg, utcp_conn_t *conn, void **conn_arg)
{
  dtcp_link_t *lk = arg;
  dgram_carry_hop_t *h = dgram_carry_hop_accept(&lk->base,
                                                DTCP_MAX_HOPS_PER_LINK);
  if (!h)
    return NULL;
  dtcp_t *t = T(&lk->base);
  HOP(h)->conn = conn;
  HOP(h)->chan_pending = 1;
  HOP(h)->accepted_us = time_mono_us();
  int was_empty = dlist_is_empty(&t->pending);
  dlist_insert_tail(&t->pending, &HOP(h)->pending_node);
  if (was_empty)
    pending_arm(t);
  *conn_arg = h;
  return &conn_ops;
}

static int
link_up(dgram_carry_link_t *l)
{
  dtcp_link_t *lk = LINK(l);
  lk->peer = utcp_peer_new(T(l)->u, seg_out, seg_accept, lk);
  return lk->peer ? 0 : -1;
}

/* Before the hops go: every open connection hears closed() and takes its
 * hop and channel with it; hops whose channel is already gone are freed
 * afterwards. */
static void
link_stop(dgram_carry_link_t *l)
{
  utcp_peer_free(LINK(l)->peer);
  LINK(l)->peer = NULL;
}

static void
link_down(dgram_carry_link_t *l)
{
  (void)l;
}

static void
link_record(dgram_carry_link_t *l, uint8_t type, const uint8_t *body,
            size_t len)
{
  (void)type;
  (void)utcp_peer_input(LINK(l)->peer, body, len);
}

static const dgram_carry_ops_t carry_ops = {
    .name = "TCP-over-DTLS",
    .chan_kind = "TCP-over-DTLS",
    .transport = CIRCUIT_TRANSPORT_DTLS_TCP,
    .tag_class = DTCP_TAG_CLASS,
    .link_size = sizeof(dtcp_link_t),
    .hop_size = sizeof(dtcp_hop_t),
    .record_types = {DGRAM_REC_TCP_SEGMENT, 0},
    .link_up = link_up,
    .link_stop = link_stop,
    .link_down = link_down,
    .record = link_record,
    .hop_connect = hop_connect,
    .hop_ready = hop_ready,
    .hop_can_send = hop_can_send,
    .hop_sockstat = hop_sockstat,
    .hop_send = hop_send,
    .hop_alive = hop_alive,
    .hop_close = hop_close,
    .released = released,
    .hop_mem = hop_mem,
    .hop_gone = hop_gone,
};

/* ---- the instance ---- */

dtcp_t *
dtcp_new(evloop_t *loop, dgram_t *d)
{
  if (the_t) {
    log_warn("TCP-over-DTLS: a second instance was refused");
    return NULL;
  }
  if (!utcp_available()) {
    log_warn("TCP-over-DTLS: this build has no user-level TCP (lwIP)");
    return NULL;
  }
  utcp_t *u = utcp_new(loop, DGRAM_REC_BODY_MAX);
  if (!u)
    return NULL;
  dtcp_t *t = pc_zalloc(sizeof(*t));
  t->u = u;
  dlist_init(&t->pending);
  t->pending_timer = evloop_timer_new(loop, pending_timer_cb, t);
  t->first_cell_timeout_us = DTCP_FIRST_CELL_TIMEOUT_S * 1000000ULL;
  t->carry = dgram_carry_new(loop, d, &carry_ops, t);
  if (!t->carry) {
    evloop_timer_free(t->pending_timer);
    utcp_free(t->u);
    free(t);
    return NULL;
  }
  the_t = t;
  return t;
}

void
dtcp_free_(dtcp_t *t)
{
  if (!t)
    return;
  dgram_carry_free(t->carry);
  evloop_timer_free(t->pending_timer);
  utcp_free(t->u);
  if (the_t == t)
    the_t = NULL;
  free(t);
}

void
dtcp_set_outgoing(dtcp_t *t, int on)
{
  dgram_carry_set_outgoing(t->carry, on);
}

void
dtcp_set_first_cell_timeout(dtcp_t *t, unsigned sec)
{
  t->first_cell_timeout_us = (uint64_t)(sec ? sec : 1) * 1000000ULL;
  pending_arm(t);
}

utcp_t *
dtcp_stack_for_testing(dtcp_t *t)
{
  return t->u;
}

const dtcp_t *
dtcp_instance(void)
{
  return the_t;
}

void
dtcp_get_stats(const dtcp_t *t, dtcp_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  dgram_carry_get_stats(t->carry, &out->carry);
  out->cells_sent = t->cells_sent;
  out->cells_received = t->cells_received;
  out->conn_failed = t->conn_failed;
  out->first_cell_timeouts = t->first_cell_timeouts;
  out->sndbuf_full = t->sndbuf_full;
  out->sndbuf_full_us = t->sndbuf_full_us;
  utcp_get_stats(t->u, &out->tcp);
}
