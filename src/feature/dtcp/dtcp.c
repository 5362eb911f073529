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
 *
 * Three kinds of objects, as in feature/btcirc:
 *   dtcp_t        the process's one instance: hooks, the tag map, totals;
 *   dtcp_link_t   one per authenticated datagram link: its utcp peer;
 *   dtcp_hop_t    one per circuit hop: the carried channel, the TCP
 *                 connection, a partial cell, a few direct cells (CREATE2,
 *                 DESTROY) that found the send buffer full.
 * dgram's per-link user pointer belongs to BackTap, so links are found in
 * our own map (link pointer -> dtcp_link_t).
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
#include "core/or/circuit.h"
#include "core/or/pctcp.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/net/address.h"
#include "lib/time/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DTCP_TAG_CLASS 1
#define DTCP_DIRECT_MAX 4
#define CELL_LEN CELL_MAX_NETWORK_LEN

typedef struct dtcp_link_t dtcp_link_t;

typedef struct dtcp_hop_t {
  uint64_t tag;
  dtcp_link_t *lk;
  utcp_conn_t *conn;              /* NULL once the connection is over */
  channel_t *chan;                /* NULL once the channel closed */
  int chan_pending;               /* accepted: channel made by 1st cell */
  dlist_node_t node;              /* in lk->hops */
  size_t rx_have;
  uint8_t rx[CELL_LEN];
  unsigned n_direct;
  uint8_t (*direct)[CELL_LEN];    /* DTCP_DIRECT_MAX cells, on first use */
} dtcp_hop_t;

struct dtcp_link_t {
  dtcp_t *t;
  dgram_link_t *dl;
  utcp_peer_t *peer;
  dlist_t hops;
  dlist_node_t node;              /* in t->links */
};

struct dtcp_t {
  evloop_t *loop;
  dgram_t *d;
  utcp_t *u;
  int outgoing;
  uint64_t next_tag;
  hmap_t *hops;                   /* tag -> dtcp_hop_t */
  hmap_t *links;                  /* dgram_link_t pointer -> dtcp_link_t */
  dlist_t link_list;
  dtcp_stats_t st;
};

static dtcp_t *the_t;
static const channel_carrier_ops_t carrier_ops;

/* ---- hops ---- */

static dtcp_hop_t *
hop_by_tag(uint64_t tag)
{
  return the_t ? hmap_get_u64(the_t->hops, tag) : NULL;
}

static dtcp_hop_t *
hop_new(dtcp_link_t *lk)
{
  dtcp_hop_t *h = pc_zalloc(sizeof(*h));
  h->tag = PACKED_CELL_TAG_CLASS(DTCP_TAG_CLASS) | ++lk->t->next_tag;
  h->lk = lk;
  hmap_set_u64(lk->t->hops, h->tag, h);
  dlist_insert_tail(&lk->hops, &h->node);
  return h;
}

static void
hop_forget(dtcp_hop_t *h)
{
  hmap_remove_u64(h->lk->t->hops, h->tag);
  dlist_remove(&h->node);
  free(h->direct);
  free(h);
}

/* Write the direct cells that waited, as the send buffer allows. */
static void
hop_push_direct(dtcp_hop_t *h)
{
  unsigned sent = 0;
  while (sent < h->n_direct && h->conn &&
         utcp_conn_room(h->conn) >= CELL_LEN &&
         utcp_conn_write(h->conn, h->direct[sent], CELL_LEN) == 0) {
    sent++;
    h->lk->t->st.cells_sent++;
  }
  if (sent) {
    memmove(h->direct[0], h->direct[sent],
            (size_t)(h->n_direct - sent) * CELL_LEN);
    h->n_direct -= sent;
  }
}

/* The channel is gone: close the connection once no direct cell waits. */
static void
hop_finish_if_done(dtcp_hop_t *h)
{
  if (h->chan || (h->n_direct && h->conn))
    return;
  if (h->conn)
    utcp_conn_close(h->conn);
  h->conn = NULL;
  hop_forget(h);
}

/* ---- the TCP connection's callbacks ---- */

/* A hop the peer opened gets its channel with its first cell (the
 * CREATE2), not when the connection is accepted: a carried channel
 * without a circuit is closed within a second, sooner than TCP recovers a
 * lost first segment (lwIP's first retransmission waits 3 s). */
static void
hop_open_channel(dtcp_hop_t *h)
{
  dgram_link_t *dl = h->lk->dl;
  h->chan_pending = 0;
  h->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)h->tag,
                                dgram_link_peer_addr(dl),
                                dgram_link_peer_rsa_id(dl),
                                dgram_link_peer_ed_id(dl), 0,
                                "(TCP-over-DTLS)");
}

static void
conn_recv(void *arg, const uint8_t *data, size_t len)
{
  dtcp_hop_t *h = arg;
  uint64_t tag = h->tag;
  dtcp_t *t = the_t;
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
    t->st.cells_received++;
    if (h->chan_pending)
      hop_open_channel(h);
    if (!h->chan) {
      utcp_conn_consumed(h->conn, CELL_LEN);
      continue;
    }
    packed_cell_t *pc = packed_cell_new();
    memcpy(pc->body, h->rx, CELL_LEN);
    pc->len = CELL_LEN;
    pc->queued_us = time_mono_us();
    pc->rel_tag = tag;
    channel_carried_input(h->chan, pc);
    /* The cell may have closed the circuit, the channel and the hop. */
    if (hop_by_tag(tag) != h)
      return;
  }
}

static void
conn_sent(void *arg)
{
  dtcp_hop_t *h = arg;
  if (h->chan_pending)
    return;
  hop_push_direct(h);
  if (h->chan) {
    if (h->n_direct == 0 && utcp_conn_room(h->conn) >= CELL_LEN)
      channel_carried_writable(h->chan);
  } else {
    hop_finish_if_done(h);
  }
}

static void
conn_closed(void *arg, const char *why)
{
  dtcp_hop_t *h = arg;
  h->conn = NULL;
  h->n_direct = 0;
  if (strcmp(why, "closed by the peer") != 0)
    h->lk->t->st.conn_failed++;
  log_info("TCP-over-DTLS: a circuit hop's connection ended: %s", why);
  channel_t *chan = h->chan;
  h->chan = NULL;
  hop_forget(h);
  if (chan)
    channel_close(chan, "its TCP-over-DTLS connection ended");
}

static const utcp_conn_ops_t conn_ops = {conn_recv, conn_sent, conn_closed};

/* ---- the carrier: what the channel asks of us ---- */

static int
carrier_can_send(void *arg)
{
  dtcp_hop_t *h = hop_by_tag((uint64_t)(uintptr_t)arg);
  return h && h->conn && h->n_direct == 0 &&
         utcp_conn_room(h->conn) >= CELL_LEN;
}

static int
carrier_send(void *arg, const uint8_t *cell, size_t len)
{
  dtcp_hop_t *h = hop_by_tag((uint64_t)(uintptr_t)arg);
  if (!h || !h->conn || len != CELL_LEN)
    return -1;
  dtcp_t *t = h->lk->t;
  if (h->n_direct == 0 && utcp_conn_room(h->conn) >= CELL_LEN &&
      utcp_conn_write(h->conn, cell, CELL_LEN) == 0) {
    t->st.cells_sent++;
    return 0;
  }
  /* A direct cell (CREATE2, DESTROY) with the send buffer full. */
  if (h->n_direct >= DTCP_DIRECT_MAX) {
    t->st.direct_dropped++;
    return -1;
  }
  if (!h->direct)
    h->direct = pc_malloc(DTCP_DIRECT_MAX * CELL_LEN);
  memcpy(h->direct[h->n_direct++], cell, CELL_LEN);
  t->st.direct_queued++;
  return 0;
}

static void
carrier_closed(void *arg)
{
  dtcp_hop_t *h = hop_by_tag((uint64_t)(uintptr_t)arg);
  if (!h)
    return;
  h->chan = NULL;
  hop_finish_if_done(h);
}

static const channel_carrier_ops_t carrier_ops = {
    carrier_can_send,
    carrier_send,
    carrier_closed,
};

/* A cell we delivered has left this relay: the window reopens by one
 * cell. */
static void
release_hook(uint64_t tag, uint32_t seq)
{
  (void)seq;
  dtcp_hop_t *h = hop_by_tag(tag);
  if (h && h->conn)
    utcp_conn_consumed(h->conn, CELL_LEN);
}

/* ---- links ---- */

static dtcp_link_t *
link_of(const dtcp_t *t, const dgram_link_t *dl)
{
  return hmap_get_u64(t->links, (uint64_t)(uintptr_t)dl);
}

static void
seg_out(void *arg, const uint8_t *seg, size_t len)
{
  dtcp_link_t *lk = arg;
  (void)dgram_link_send(lk->dl, DGRAM_REC_TCP_SEGMENT, seg, len);
}

static const utcp_conn_ops_t *
seg_accept(void *arg, utcp_conn_t *c, void **conn_arg)
{
  dtcp_link_t *lk = arg;
  dtcp_t *t = lk->t;
  const uint8_t *ed = dgram_link_peer_ed_id(lk->dl);
  const uint8_t *rsa = dgram_link_peer_rsa_id(lk->dl);
  if (!ed || !rsa || dlist_len(&lk->hops) >= DTCP_MAX_HOPS_PER_LINK) {
    t->st.circ_refused++;
    return NULL;
  }
  dtcp_hop_t *h = hop_new(lk);
  h->conn = c;
  h->chan_pending = 1;
  *conn_arg = h;
  t->st.circ_in++;
  return &conn_ops;
}

static void
link_free(dtcp_link_t *lk)
{
  dtcp_t *t = lk->t;
  /* Every open connection hears closed() and takes its hop and channel
   * with it; hops whose channel is already gone are freed here. */
  utcp_peer_free(lk->peer);
  dlist_node_t *n;
  while ((n = dlist_first(&lk->hops))) {
    dtcp_hop_t *h = DLIST_ENTRY(n, dtcp_hop_t, node);
    channel_t *chan = h->chan;
    h->chan = NULL;
    hop_forget(h);
    if (chan)
      channel_close(chan, "its datagram link closed");
  }
  hmap_remove_u64(t->links, (uint64_t)(uintptr_t)lk->dl);
  dlist_remove(&lk->node);
  free(lk);
}

static void
link_observer(dgram_link_t *dl, int up, const char *why, void *arg)
{
  dtcp_t *t = arg;
  (void)why;
  dtcp_link_t *lk = link_of(t, dl);
  if (up && !lk) {
    lk = pc_zalloc(sizeof(*lk));
    lk->t = t;
    lk->dl = dl;
    dlist_init(&lk->hops);
    lk->peer = utcp_peer_new(t->u, seg_out, seg_accept, lk);
    if (!lk->peer) {
      free(lk);
      return;
    }
    hmap_set_u64(t->links, (uint64_t)(uintptr_t)dl, lk);
    dlist_insert_tail(&t->link_list, &lk->node);
  } else if (!up && lk) {
    link_free(lk);
  }
}

static void
record_cb(dgram_link_t *dl, uint8_t type, const uint8_t *body, size_t len,
          void *arg)
{
  dtcp_t *t = arg;
  (void)type;
  dtcp_link_t *lk = link_of(t, dl);
  if (lk)
    (void)utcp_peer_input(lk->peer, body, len);
}

/* ---- the extension choice ---- */

static channel_t *
carrier_provider(const pc_addr_t *addr, const uint8_t *rsa_id,
                 const uint8_t *ed_id, void *arg)
{
  dtcp_t *t = arg;
  static log_ratelim_t rl = LOG_RATELIM_INIT(60, 4);
  unsigned suppressed = 0;
  char a[PC_ADDR_STR_LEN];
  if (!t->outgoing)
    return NULL;
  dgram_link_t *dl = ed_id ? dgram_link_find(t->d, ed_id) : NULL;
  dtcp_link_t *lk = dl ? link_of(t, dl) : NULL;
  const uint8_t *prsa = dl ? dgram_link_peer_rsa_id(dl) : NULL;
  int offers = ed_id && dgram_peer_port(t->d, ed_id) != 0;
  int usable = lk && dgram_link_is_up(dl) && prsa && rsa_id &&
               !memcmp(prsa, rsa_id, 20);
  const char *tls_why = !offers && !usable
                            ? "the relay announced no DatagramPort"
                            : "no authenticated datagram link to it yet";
  dtcp_hop_t *h = NULL;
  if (circuit_transport_for_peer(CIRCUIT_TRANSPORT_DTLS_TCP,
                                 offers || usable,
                                 usable) == CIRCUIT_TRANSPORT_DTLS_TCP) {
    h = hop_new(lk);
    h->conn = utcp_connect(lk->peer, &conn_ops, h);
    if (!h->conn) {
      hop_forget(h);
      h = NULL;
      tls_why = "no TCP port left towards it";
    }
  }
  if (!h) {
    t->st.ext_tls++;
    if (log_ratelim_allow(&rl, time(NULL), &suppressed))
      log_notice("CircuitTransport: the hop to %s uses TLS (%s)",
                 pc_addr_fmt(addr, a, sizeof(a), 1), tls_why);
    else
      log_info("CircuitTransport: the hop to %s uses TLS",
               pc_addr_fmt(addr, a, sizeof(a), 1));
    return NULL;
  }
  h->chan = channel_new_carried(&carrier_ops, (void *)(uintptr_t)h->tag,
                                addr, rsa_id, ed_id, 1, "(TCP-over-DTLS)");
  t->st.ext_dtcp++;
  if (log_ratelim_allow(&rl, time(NULL), &suppressed))
    log_notice("CircuitTransport: the hop to %s uses TCP-over-DTLS over "
               "the datagram link", pc_addr_fmt(addr, a, sizeof(a), 1));
  else
    log_info("CircuitTransport: the hop to %s uses TCP-over-DTLS",
             pc_addr_fmt(addr, a, sizeof(a), 1));
  return h->chan;
}

/* ---- the memory handler's view of a circuit ---- */

static size_t
chan_hop_mem(const channel_t *chan)
{
  void *arg = channel_carrier_arg(chan, &carrier_ops);
  dtcp_hop_t *h = arg ? hop_by_tag((uint64_t)(uintptr_t)arg) : NULL;
  return h && h->conn ? utcp_conn_mem(h->conn) : 0;
}

static size_t
circ_mem(circuit_t *circ)
{
  size_t n = chan_hop_mem(circ->n_chan);
  if (circ->kind == CIRC_KIND_OR)
    n += chan_hop_mem(((or_circuit_t *)circ)->p_chan);
  return n;
}

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
  t->loop = loop;
  t->d = d;
  t->u = u;
  t->hops = hmap_new(8);
  t->links = hmap_new(8);
  dlist_init(&t->link_list);
  the_t = t;
  /* Attach step by step; on failure undo the steps taken. */
  int step = 0;
  if (dgram_register_handler(d, DGRAM_REC_TCP_SEGMENT, record_cb, t) == 0 &&
      ++step && dgram_add_link_observer(d, link_observer, t) == 0 &&
      ++step &&
      packed_cell_set_release_hook_class(DTCP_TAG_CLASS, release_hook) ==
          0 &&
      ++step && pctcp_add_carrier_provider(carrier_provider, t) == 0 &&
      ++step && circuits_add_extra_mem_fn(circ_mem) == 0)
    step = -1;
  if (step >= 0) {
    log_warn("TCP-over-DTLS: cannot attach to the datagram links and "
             "circuits (a hook is taken)");
    if (step >= 4)
      pctcp_remove_carrier_provider(carrier_provider, t);
    if (step >= 3)
      packed_cell_set_release_hook_class(DTCP_TAG_CLASS, NULL);
    if (step >= 2)
      dgram_remove_link_observer(d, link_observer, t);
    if (step >= 1)
      dgram_register_handler(d, DGRAM_REC_TCP_SEGMENT, NULL, NULL);
    hmap_free(t->hops, NULL);
    hmap_free(t->links, NULL);
    utcp_free(t->u);
    free(t);
    the_t = NULL;
    return NULL;
  }
  return t;
}

void
dtcp_free_(dtcp_t *t)
{
  if (!t)
    return;
  dlist_node_t *n;
  while ((n = dlist_first(&t->link_list)))
    link_free(DLIST_ENTRY(n, dtcp_link_t, node));
  pctcp_remove_carrier_provider(carrier_provider, t);
  packed_cell_set_release_hook_class(DTCP_TAG_CLASS, NULL);
  circuits_remove_extra_mem_fn(circ_mem);
  dgram_remove_link_observer(t->d, link_observer, t);
  dgram_register_handler(t->d, DGRAM_REC_TCP_SEGMENT, NULL, NULL);
  utcp_free(t->u);
  hmap_free(t->hops, NULL);
  hmap_free(t->links, NULL);
  if (the_t == t)
    the_t = NULL;
  free(t);
}

void
dtcp_set_outgoing(dtcp_t *t, int on)
{
  t->outgoing = on ? 1 : 0;
}

const dtcp_t *
dtcp_instance(void)
{
  return the_t;
}

void
dtcp_get_stats(const dtcp_t *t, dtcp_stats_t *out)
{
  *out = t->st;
  out->links = (unsigned)hmap_size(t->links);
  out->hops = (unsigned)hmap_size(t->hops);
  utcp_get_stats(t->u, &out->tcp);
}
