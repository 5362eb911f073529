/* SPDX-License-Identifier: BSD-3-Clause */
/* channel.c -- link connections: I/O, cell framing, the channel registry,
 * circuit-ID maps and the hand-over of circuit queues to the scheduler.
 *
 * Reading: every CONN_EV_DATA drains complete cells from the input buffer.
 * Before the link protocol is known a cell's circuit ID is 2 bytes; after
 * VERSIONS it is 4. Fixed-length cells on an open channel are read straight
 * into a packed_cell_t, so a relayed cell is copied once from the TLS
 * buffer and then encrypted and forwarded in place.
 *
 * Writing: link and circuit-management cells (CREATE2, DESTROY, ...) go
 * straight to the output buffer; relayed cells wait in their circuit's
 * circ_queue_t (circ_queue.c) until the scheduler (scheduler.c) moves them, in priority
 * order across all channels, into output buffers that have room (below
 * CHAN_OUTBUF_HIGH, and what the kernel can send soon). A channel whose
 * output buffer drains to CHAN_OUTBUF_LOW wakes the scheduler. This keeps
 * the TLS buffer short so that queued cells stay where they can be
 * reordered.
 *
 * Lifetime: channel_close() detaches circuits at once and frees the channel
 * from a deferred callback, so that code up the stack that still holds the
 * pointer never touches freed memory.
 *
 * Index by relay identity: with PerCircuitTCP there are about as many
 * channels as circuits, so nothing done per extension or per close may walk
 * every channel. Channels are indexed by the RSA identity they proved or
 * will insist on (the one channel_matches_extend() compares; a channel
 * without one never matches an extension), and each relay's entry lists
 * all its channels, its shared ones and its spares, each in creation order
 * (the order of the global list), so that the searches below visit the
 * same candidates in the same order as a walk over every channel would and
 * make the same choice. Entries are updated when a channel is opened,
 * proves an identity, stops being a spare, or closes. Per-circuit channels
 * that lose their last circuit go on a list of their own for the reaper.
 * What still walks every channel is periodic (idle checks, statistics).
 */
#include "core/or/channel.h"
#include "core/or/dos.h"
#include "core/or/channel_internal.h"
#include "core/or/circuit.h"
#include "core/or/scheduler.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/rand.h"
#include "lib/container/vec.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/net/sockstat.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Hard limit on a channel's output buffer (see channel_write_raw()). */
#define CHAN_OUTBUF_MAX (4 * 1024 * 1024)
#define CHAN_MAX_CIRCID_TRIES 64

/* A relay's entry in the index of channels by identity. */
typedef struct chan_peer_t {
  uint8_t rsa_id[20];
  dlist_t chans;   /* every channel indexed here (peer_node), by id */
  dlist_t shared;  /* those that are not per-circuit (peer_kind_node) */
  dlist_t spares;  /* per-circuit spares (peer_kind_node) */
  size_t n_chans;
} chan_peer_t;

typedef struct listener_entry_t {
  listener_t *listener;
  dlist_node_t node;
} listener_entry_t;

static struct {
  evloop_t *loop;
  const relay_keys_t *keys;
  dlist_t all;               /* every live channel */
  dlist_t listeners;
  ptrvec_t *to_free;         /* closed channels, freed later */
  evloop_deferred_t *reaper;
  uint64_t next_id;
  channel_stats_t stats;
  tls_context_t *client_tls;
  evloop_timer_t *idle_timer;
  uint64_t idle_client_us, idle_relay_us;
  evloop_deferred_t *per_circuit_reaper; /* closes emptied ones */
  dlist_t emptied;           /* per-circuit channels that lost all circuits */
  hmap_t *peers;             /* RSA identity (20 bytes) -> chan_peer_t */
  unsigned n_per_circuit;
  unsigned n_carried;
  ratelimit_t *bw_global, *bw_relay;
  int bw_count_private;
  int read_by_priority;      /* CircuitPriorityReads */
  char relay_cc[16];         /* RelayTCPCongestionControl, "" = default */
  int relay_cc_warned;       /* warned since it was last configured */
  unsigned hs_timeout_sec;
  int block_flush_out, block_flush_in; /* tests only */
  int socketless;                      /* tests and benchmarks only */
} G;

#define CHAN_IDLE_CHECK_USEC (5 * 1000000ULL)
/* A per-circuit channel whose circuit went away before it opened. */
#define CHAN_PER_CIRCUIT_IDLE_USEC (1000000ULL)

static void channel_conn_cb(conn_t *c, conn_event_t ev, void *arg);
static void channel_read_cells(channel_t *chan);

/* Extension points (channel.h); kept across channels_init(). */
static channel_var_cell_fn var_cell_handlers[256];
static struct {
  channel_open_fn fn;
  void *arg;
} open_observers[CHANNEL_MAX_OPEN_OBSERVERS];

static const channel_upcalls_t *upcalls;

int
channels_set_upcalls(const channel_upcalls_t *up)
{
  if (up && upcalls && up != upcalls) {
    log_warn("A second set of channel upcalls was refused: one is "
             "registered already");
    return -1;
  }
  upcalls = up;
  return 0;
}

static void
up_opened(channel_t *chan, int ok)
{
  if (upcalls && upcalls->opened)
    upcalls->opened(chan, ok);
}

/* A cell read from (or carried for) chan: count it and hand it up. */
static void
up_cell(channel_t *chan, packed_cell_t *pc)
{
  chan->cells_in++;
  G.stats.cells_in++;
  if (upcalls && upcalls->cell)
    upcalls->cell(chan, pc);
  else
    packed_cell_free(pc);
}

int
channel_register_var_cell_handler(uint8_t command, channel_var_cell_fn fn)
{
  if (fn && var_cell_handlers[command] && var_cell_handlers[command] != fn) {
    log_warn("A second handler for variable-length cell command %u was "
             "refused: one is registered already", (unsigned)command);
    return -1;
  }
  var_cell_handlers[command] = fn;
  return 0;
}

int
channel_add_open_observer(channel_open_fn fn, void *arg)
{
  for (int i = 0; i < CHANNEL_MAX_OPEN_OBSERVERS; i++)
    if (!open_observers[i].fn) {
      open_observers[i].fn = fn;
      open_observers[i].arg = arg;
      return 0;
    }
  return -1;
}

void
channel_remove_open_observer(channel_open_fn fn, void *arg)
{
  for (int i = 0; i < CHANNEL_MAX_OPEN_OBSERVERS; i++)
    if (open_observers[i].fn == fn && open_observers[i].arg == arg)
      open_observers[i].fn = NULL;
}

/* A pure client still needs a TLS context (with a throwaway certificate,
 * which relays ignore for clients). Made on first use. */
static tls_context_t *
client_tls_context(void)
{
  if (!G.client_tls)
    G.client_tls = tls_context_new(7);
  return G.client_tls;
}

/* ---- subsystem ---------------------------------------------------- */

/* Close open channels that have carried no circuit for their timeout. */
static void
close_idle_channels(void *arg)
{
  (void)arg;
  uint64_t now = evloop_now_us(G.loop);
  dlist_node_t *n, *next;
  for (n = dlist_first(&G.all); n; n = next) {
    next = dlist_next(&G.all, n);
    channel_t *chan = DLIST_ENTRY(n, channel_t, all_node);
    if (chan->state != CHAN_STATE_OPEN || hmap_size(chan->circuits))
      continue;
    uint64_t limit = chan->peer_is_relay ? G.idle_relay_us
                                         : G.idle_client_us;
    if (chan->per_circuit || chan->carried)
      limit = chan->spare ? CHANNEL_SPARE_IDLE_SEC * 1000000ULL
                          : CHAN_PER_CIRCUIT_IDLE_USEC; /* died pending */
    if (now - chan->idle_since_us >= limit)
      channel_close_after_flush(chan, "idle: no circuits");
  }
}

int
channel_is_closing(const channel_t *chan)
{
  return chan->close_pending;
}

size_t
channel_buffered_alloc(const channel_t *chan)
{
  return chan->conn ? conn_buffered_alloc(chan->conn) : 0;
}

uint64_t
channel_oldest_data_us(const channel_t *chan)
{
  return chan->conn ? conn_oldest_data_us(chan->conn) : UINT64_MAX;
}

void
channels_foreach(channel_visit_fn fn, void *arg)
{
  if (!G.all.head.next) /* not initialised (tests) */
    return;
  for (dlist_node_t *n = dlist_first(&G.all); n; n = dlist_next(&G.all, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, all_node);
    if (!chan->close_pending)
      fn(chan, arg);
  }
}

/* Close per-circuit channels whose circuit has gone (after flushing, so
 * that its DESTROY still leaves). */
static void
close_emptied_per_circuit(void *arg)
{
  (void)arg;
  dlist_node_t *n;
  while ((n = dlist_first(&G.emptied))) {
    dlist_remove(n);
    channel_t *chan = DLIST_ENTRY(n, channel_t, emptied_node);
    if ((chan->per_circuit || chan->carried) && chan->had_circuit &&
        !hmap_size(chan->circuits) && !chan->close_pending)
      channel_close_after_flush(chan, chan->carried
                                          ? "its circuit closed"
                                          : "its circuit closed "
                                            "(PerCircuitTCP)");
  }
}

static void
reap_closed(void *arg)
{
  (void)arg;
  while (ptrvec_len(G.to_free)) {
    channel_t *chan = ptrvec_pop(G.to_free);
    hmap_free(chan->circuits, NULL);
    free(chan);
  }
}

void
channels_init(evloop_t *loop, const relay_keys_t *keys)
{
  memset(&G, 0, sizeof(G));
  circ_queues_count_commands(0);
  G.loop = loop;
  G.keys = keys;
  dlist_init(&G.all);
  dlist_init(&G.listeners);
  dlist_init(&G.emptied);
  G.peers = hmap_new(20);
  G.to_free = ptrvec_new();
  G.reaper = evloop_deferred_new(loop, reap_closed, NULL);
  G.per_circuit_reaper =
      evloop_deferred_new(loop, close_emptied_per_circuit, NULL);
  G.next_id = 1;
  G.hs_timeout_sec = 60;
  G.idle_client_us = 180 * 1000000ULL;
  G.idle_relay_us = 3600 * 1000000ULL;
  G.idle_timer = evloop_timer_new(loop, close_idle_channels, NULL);
  evloop_timer_schedule_periodic(G.idle_timer, CHAN_IDLE_CHECK_USEC);
  scheduler_init(loop);
}

void
channels_set_handshake_timeout(unsigned sec)
{
  G.hs_timeout_sec = sec ? sec : 1;
}

void
channels_set_idle_timeouts(unsigned client_sec, unsigned relay_sec)
{
  G.idle_client_us = client_sec * 1000000ULL;
  G.idle_relay_us = relay_sec * 1000000ULL;
  /* Check often enough for short (test) timeouts. */
  uint64_t shortest = G.idle_client_us < G.idle_relay_us ? G.idle_client_us
                                                        : G.idle_relay_us;
  uint64_t period = shortest / 2;
  if (period > CHAN_IDLE_CHECK_USEC)
    period = CHAN_IDLE_CHECK_USEC;
  if (period < 100000)
    period = 100000;
  evloop_timer_schedule_periodic(G.idle_timer, period);
}

void
channels_set_keys(const relay_keys_t *keys)
{
  G.keys = keys;
}

evloop_t *
channels_loop(void)
{
  return G.loop;
}

const relay_keys_t *
channels_keys(void)
{
  return G.keys;
}

void
channels_close_listeners(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&G.listeners))) {
    listener_entry_t *le = DLIST_ENTRY(n, listener_entry_t, node);
    dlist_remove(n);
    listener_free(le->listener);
    free(le);
  }
}

void
channels_close_all(const char *why)
{
  dlist_node_t *n;
  if (!G.all.head.next)
    return;
  while ((n = dlist_first(&G.all)))
    channel_close(DLIST_ENTRY(n, channel_t, all_node), why);
}

void
channels_shutdown(void)
{
  dlist_node_t *n;
  while ((n = dlist_first(&G.all))) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, all_node);
    channel_close(chan, "shutting down");
  }
  channels_close_listeners();
  reap_closed(NULL);
  scheduler_shutdown();
  evloop_timer_free(G.idle_timer);
  evloop_deferred_free(G.reaper);
  evloop_deferred_free(G.per_circuit_reaper);
  ptrvec_free(G.to_free, NULL);
  hmap_free(G.peers, free); /* empty: every channel left it closing */
  tls_context_free(G.client_tls);
}

void
channels_get_stats(channel_stats_t *out)
{
  *out = G.stats;
  out->n_open = out->n_handshaking = 0;
  out->n_per_circuit = G.n_per_circuit;
  out->n_carried = G.n_carried;
  for (dlist_node_t *n = dlist_first(&G.all); n; n = dlist_next(&G.all, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, all_node);
    if (chan->state == CHAN_STATE_OPEN)
      out->n_open++;
    else if (chan->state != CHAN_STATE_CLOSED)
      out->n_handshaking++;
  }
}

/* ---- bandwidth buckets -------------------------------------------- */

/* The queue of c that what chan reads for c goes into: the one away from
 * chan (an origin circuit has only one). */
static const circ_queue_t *
queue_away_from(circuit_t *c, const channel_t *chan)
{
  if (c->kind == CIRC_KIND_OR && c->n_chan == chan)
    return &((or_circuit_t *)c)->p_queue;
  return &c->n_queue;
}

/* The queue of c towards chan, or NULL. */
static const circ_queue_t *
queue_towards(circuit_t *c, const channel_t *chan)
{
  if (c->n_chan == chan)
    return &c->n_queue;
  if (c->kind == CIRC_KIND_OR && ((or_circuit_t *)c)->p_chan == chan)
    return &((or_circuit_t *)c)->p_queue;
  return NULL;
}

/* Sum of the averages of the queues pick() chooses among chan's
 * circuits'. */
static double
queues_load(const channel_t *chan,
            const circ_queue_t *(*pick)(circuit_t *, const channel_t *))
{
  double load = 0;
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, chan->circuits);
  while (hmap_iter_next(&it, NULL, &v)) {
    const circ_queue_t *q = pick(v, chan);
    if (q)
      load += circ_queue_ewma(q);
  }
  return load;
}

/* Sum of the averages of chan's circuits' queues that what chan reads goes
 * into (the queues away from chan): a connection's read priority, lowest
 * first, when the read bucket is short (conn_set_read_priority()). Under
 * PerCircuitTCP each circuit has its own connection, so without this the
 * bucket's tokens would be shared between connections regardless of the
 * circuits' EWMA averages, and a bulk circuit's connection would read as
 * much as a quiet one's; with one shared connection the sending relay's
 * scheduler had already put the quiet circuits' cells first. */
static double
channel_read_load(void *arg)
{
  return queues_load(arg, queue_away_from);
}

/* RelayTCPCongestionControl on a connection with a relay (outgoing
 * ones are always with relays; incoming ones once the link handshake
 * said so). */
static void
apply_congestion_control(channel_t *chan)
{
  if (!G.relay_cc[0] || !(chan->peer_is_relay || chan->is_outgoing))
    return;
  if (conn_set_congestion_control(chan->conn, G.relay_cc) == 0 ||
      G.relay_cc_warned)
    return;
  G.relay_cc_warned = 1;
  log_warn("RelayTCPCongestionControl %s: cannot use it on the connection "
           "with %s: %s (is the kernel module loaded and the algorithm in "
           "net.ipv4.tcp_allowed_congestion_control?); such connections "
           "keep the host's default",
           G.relay_cc, chan->desc, strerror(errno));
}

static void
apply_buckets(channel_t *chan)
{
  if (!chan->conn)
    return;
  apply_congestion_control(chan);
  conn_set_read_priority(chan->conn,
                         G.read_by_priority ? channel_read_load : NULL, chan);
  chan->bw_global = chan->bw_relay = NULL;
  if (!G.bw_count_private && pc_addr_is_private(&chan->addr)) {
    conn_set_buckets(chan->conn, NULL, NULL);
    return;
  }
  int relay = chan->peer_is_relay || chan->is_outgoing;
  chan->bw_global = G.bw_global;
  chan->bw_relay = relay ? G.bw_relay : NULL;
  conn_set_buckets(chan->conn, chan->bw_global, chan->bw_relay);
  /* The scheduler's view of the buckets changed; let it look again. */
  scheduler_channel_wakeup(chan);
}

void
channels_set_buckets(ratelimit_t *global, ratelimit_t *relay,
                     int count_private, int read_by_priority)
{
  G.bw_global = global;
  G.bw_relay = relay;
  G.bw_count_private = count_private;
  G.read_by_priority = read_by_priority;
  for (dlist_node_t *n = dlist_first(&G.all); n; n = dlist_next(&G.all, n))
    apply_buckets(DLIST_ENTRY(n, channel_t, all_node));
}

void
channels_set_relay_congestion_control(const char *name)
{
  const char *n = name ? name : "";
  if (strcmp(n, G.relay_cc) == 0)
    return;
  snprintf(G.relay_cc, sizeof(G.relay_cc), "%s", n);
  G.relay_cc_warned = 0;
  for (dlist_node_t *d = dlist_first(&G.all); d; d = dlist_next(&G.all, d)) {
    channel_t *chan = DLIST_ENTRY(d, channel_t, all_node);
    if (chan->conn)
      apply_congestion_control(chan);
  }
}

/* ---- creation ----------------------------------------------------- */

static void
hs_timeout_cb(void *arg)
{
  channel_t *chan = arg;
  log_msg(chan->is_outgoing ? LOG_SEV_NOTICE : LOG_SEV_INFO, __func__,
          "Link handshake with %s timed out after %u s",
          channel_describe(chan), G.hs_timeout_sec);
  channel_close(chan, "handshake timed out");
}

static channel_t *
channel_new(void)
{
  channel_t *chan = pc_zalloc(sizeof(*chan));
  chan->id = G.next_id++;
  /* The handshake deadline covers TCP connect and TLS too: a peer that
   * connects and stays silent must not hold a descriptor forever. */
  chan->hs_timer = evloop_timer_new(G.loop, hs_timeout_cb, chan);
  evloop_timer_schedule(chan->hs_timer, G.hs_timeout_sec * 1000000ULL);
  chan->circuits = hmap_new(4);
  dlist_init(&chan->pending_circuits);
  chan->created_us = evloop_now_us(G.loop);
  scheduler_channel_init(chan);
  dlist_insert_tail(&G.all, &chan->all_node);
  return chan;
}

void
channel_update_desc(channel_t *chan)
{
  char a[PC_ADDR_STR_LEN];
  pc_addr_fmt(&chan->addr, a, sizeof(a), 1);
  if (chan->have_peer_rsa) {
    char hex[41];
    base16_encode(hex, sizeof(hex), chan->peer_rsa_id, 20, BASE16_UPPER);
    snprintf(chan->desc, sizeof(chan->desc), "[%llu] %s ($%s)",
             (unsigned long long)chan->id, a, hex);
  } else {
    snprintf(chan->desc, sizeof(chan->desc), "[%llu] %s",
             (unsigned long long)chan->id, a);
  }
}

static void
accept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  if (!G.keys) {
    /* A pure client never listens; defensive. */
    close(fd);
    return;
  }
  /* DoSConnection*: one client address's connections (core/or/dos). */
  int counted = dos_conn_accepted(peer);
  if (counted < 0) {
    char a[PC_ADDR_STR_LEN];
    log_debug("Refusing a link connection from %s: DoS defence",
              pc_addr_fmt(peer, a, sizeof(a), 1));
    close(fd);
    return;
  }
  channel_t *chan = channel_new();
  chan->dos_counted = counted > 0;
  chan->addr = *peer;
  chan->state = CHAN_STATE_HANDSHAKING;
  channel_update_desc(chan);
  chan->conn = conn_new_accepted(G.loop, G.keys->tls, fd, peer,
                                 channel_conn_cb, chan);
  conn_set_memacct(chan->conn, MEMACCT_CHAN_BUF);
  apply_buckets(chan);
  log_debug("Accepted link connection %s", chan->desc);
}

int
channel_listen(const pc_addr_t *addr, pc_addr_t *bound, const char **err)
{
  listener_t *l = listener_new(G.loop, addr, accept_cb, NULL, err);
  if (!l)
    return -1;
  listener_entry_t *le = pc_zalloc(sizeof(*le));
  le->listener = l;
  dlist_insert_tail(&G.listeners, &le->node);
  if (bound)
    *bound = *listener_addr(l);
  return 0;
}

/* ---- the index of channels by relay identity ----------------------- */

/* The RSA identity chan proved, else the one it will insist on, else
 * NULL: what extensions are matched against. */
static const uint8_t *
chan_index_rsa(const channel_t *chan)
{
  return chan->have_peer_rsa ? chan->peer_rsa_id
         : chan->want_rsa    ? chan->want_rsa_id
                             : NULL;
}

/* Put node (the member at offset off of a channel with this id) into list,
 * which is ordered by channel id. New channels have the highest id, so
 * the walk from the tail is short. */
static void
insert_by_id(dlist_t *list, dlist_node_t *node, size_t off, uint64_t id)
{
  dlist_node_t *pos = dlist_last(list);
  while (pos && ((const channel_t *)(const void *)((const char *)pos - off))
                        ->id > id)
    pos = dlist_prev(list, pos);
  if (pos)
    dlist_insert_after(pos, node);
  else
    dlist_insert_head(list, node);
}

static void
index_remove(channel_t *chan)
{
  chan_peer_t *p = chan->peer;
  if (!p)
    return;
  dlist_remove(&chan->peer_node);
  dlist_remove(&chan->peer_kind_node);
  chan->peer = NULL;
  if (--p->n_chans == 0) {
    hmap_remove(G.peers, p->rsa_id);
    free(p);
  }
}

void
channel_index_update(channel_t *chan)
{
  const uint8_t *rsa = chan->close_pending ? NULL : chan_index_rsa(chan);
  if (chan->peer && (!rsa || memcmp(chan->peer->rsa_id, rsa, 20)))
    index_remove(chan);
  if (!rsa || !G.peers)
    return;
  chan_peer_t *p = chan->peer;
  if (!p) {
    p = hmap_get(G.peers, rsa);
    if (!p) {
      p = pc_zalloc(sizeof(*p));
      memcpy(p->rsa_id, rsa, 20);
      dlist_init(&p->chans);
      dlist_init(&p->shared);
      dlist_init(&p->spares);
      hmap_set(G.peers, p->rsa_id, p);
    }
    insert_by_id(&p->chans, &chan->peer_node,
                 offsetof(channel_t, peer_node), chan->id);
    p->n_chans++;
    chan->peer = p;
  } else {
    dlist_remove(&chan->peer_kind_node);
  }
  dlist_t *kind = chan->spare          ? &p->spares
                  : !chan->per_circuit ? &p->shared
                                       : NULL;
  if (kind)
    insert_by_id(kind, &chan->peer_kind_node,
                 offsetof(channel_t, peer_kind_node), chan->id);
}

/* The index entry of that relay, or NULL. */
static chan_peer_t *
peer_lookup(const uint8_t *rsa_id)
{
  return rsa_id && G.peers ? hmap_get(G.peers, rsa_id) : NULL;
}

/* ---- outgoing channels and the choice of one for an extension ------ */

static channel_t *
channel_connect_impl(const pc_addr_t *addr, const uint8_t *rsa_id,
                     const uint8_t *ed_id, int per_circuit, int spare)
{
  channel_t *chan = channel_new();
  chan->addr = *addr;
  chan->is_outgoing = 1;
  chan->we_authenticate = G.keys != NULL;
  chan->state = CHAN_STATE_CONNECTING;
  if (rsa_id && !pc_is_zero(rsa_id, 20)) {
    chan->want_rsa = 1;
    memcpy(chan->want_rsa_id, rsa_id, 20);
  }
  if (ed_id && !pc_is_zero(ed_id, 32)) {
    chan->want_ed = 1;
    memcpy(chan->want_ed_id, ed_id, 32);
  }
  channel_update_desc(chan);
  /* Socketless (tests): stays CONNECTING until opened by hand. */
  if (!G.socketless) {
    const char *err = NULL;
    tls_context_t *tls = G.keys ? G.keys->tls : client_tls_context();
    chan->conn = conn_connect_kind(G.loop, tls, addr, CONN_OUT_OR,
                                   channel_conn_cb, chan, &err);
    if (chan->conn)
      conn_set_memacct(chan->conn, MEMACCT_CHAN_BUF);
    if (!chan->conn) {
      log_info("Can't connect to %s: %s", chan->desc, err ? err : "?");
      scheduler_channel_free(chan);
      evloop_timer_free(chan->hs_timer);
      dlist_remove(&chan->all_node);
      hmap_free(chan->circuits, NULL);
      free(chan);
      return NULL;
    }
    apply_buckets(chan);
  }
  if (per_circuit) {
    chan->per_circuit = 1;
    chan->spare = spare ? 1 : 0;
    G.n_per_circuit++;
  }
  channel_index_update(chan);
  log_info("Connecting to %s", chan->desc);
  return chan;
}

channel_t *
channel_connect(const pc_addr_t *addr, const uint8_t *rsa_id,
                const uint8_t *ed_id)
{
  return channel_connect_impl(addr, rsa_id, ed_id, 0, 0);
}

/* Whether chan may carry an extension to the relay at addr with these
 * identities (tor-spec 5.3.1: the identity matches, what the channel
 * proved or will insist on, and the address matches the one asked for or
 * is canonical). */
static int
channel_matches_extend(const channel_t *chan, const pc_addr_t *addr,
                       const uint8_t *rsa_id, const uint8_t *ed_id)
{
  if (chan->state == CHAN_STATE_CLOSED || chan->close_pending)
    return 0;
  const uint8_t *crsa = chan_index_rsa(chan);
  const uint8_t *ced = chan->have_peer_ed ? chan->peer_ed_id
                       : chan->want_ed    ? chan->want_ed_id
                                          : NULL;
  if (!crsa || !rsa_id || memcmp(crsa, rsa_id, 20))
    return 0;
  if (ed_id && !pc_is_zero(ed_id, 32) && (!ced || memcmp(ced, ed_id, 32)))
    return 0;
  return pc_addr_eq(&chan->addr, addr, 1) || chan->addr_is_canonical;
}

/* The first channel in list (one of a relay's, creation order) that
 * matches the extension, preferring an open one; NULL if none. */
static channel_t *
best_match(const dlist_t *list, const pc_addr_t *addr, const uint8_t *rsa_id,
           const uint8_t *ed_id)
{
  channel_t *best = NULL;
  for (dlist_node_t *n = dlist_first(list); n; n = dlist_next(list, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, peer_kind_node);
    if (!channel_matches_extend(chan, addr, rsa_id, ed_id))
      continue;
    if (!best || (chan->state == CHAN_STATE_OPEN &&
                  best->state != CHAN_STATE_OPEN))
      best = chan;
  }
  return best;
}

channel_t *
channel_find_for_extend(const pc_addr_t *addr, const uint8_t *rsa_id,
                        const uint8_t *ed_id)
{
  chan_peer_t *p = peer_lookup(rsa_id);
  return p ? best_match(&p->shared, addr, rsa_id, ed_id) : NULL;
}

channel_t *
channel_connect_per_circuit(const pc_addr_t *addr, const uint8_t *rsa_id,
                            const uint8_t *ed_id)
{
  return channel_connect_impl(addr, rsa_id, ed_id, 1, 0);
}

/* Sum of the averages of chan's circuits' queues towards chan. */
static double
channel_ewma_load(channel_t *chan)
{
  return queues_load(chan, queue_towards);
}

channel_t *
channel_find_quietest_for_extend(const pc_addr_t *addr,
                                 const uint8_t *rsa_id, const uint8_t *ed_id)
{
  chan_peer_t *p = peer_lookup(rsa_id);
  if (!p)
    return NULL;
  channel_t *best = NULL;
  double best_load = 0;
  for (dlist_node_t *n = dlist_first(&p->chans); n;
       n = dlist_next(&p->chans, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, peer_node);
    if (!channel_matches_extend(chan, addr, rsa_id, ed_id))
      continue;
    double load = channel_ewma_load(chan);
    if (!best || load < best_load) {
      best = chan;
      best_load = load;
    }
  }
  if (best && best->spare) {
    best->spare = 0; /* carries circuits from now on */
    channel_index_update(best);
  }
  return best;
}

channel_t *
channel_connect_spare(const pc_addr_t *addr, const uint8_t *rsa_id,
                      const uint8_t *ed_id)
{
  return channel_connect_impl(addr, rsa_id, ed_id, 1, 1);
}

channel_t *
channel_take_spare(const pc_addr_t *addr, const uint8_t *rsa_id,
                   const uint8_t *ed_id)
{
  chan_peer_t *p = peer_lookup(rsa_id);
  if (!p)
    return NULL;
  channel_t *best = best_match(&p->spares, addr, rsa_id, ed_id);
  if (best) {
    best->spare = 0;
    channel_index_update(best);
  }
  return best;
}

unsigned
channels_n_spares(const pc_addr_t *addr, const uint8_t *rsa_id,
                  const uint8_t *ed_id)
{
  chan_peer_t *p = peer_lookup(rsa_id);
  unsigned n = 0;
  for (dlist_node_t *x = p ? dlist_first(&p->spares) : NULL; x;
       x = dlist_next(&p->spares, x)) {
    channel_t *chan = DLIST_ENTRY(x, channel_t, peer_kind_node);
    if (channel_matches_extend(chan, addr, rsa_id, ed_id))
      n++;
  }
  return n;
}

int
channel_is_per_circuit(const channel_t *chan)
{
  return chan->per_circuit;
}

unsigned
channels_n_per_circuit(void)
{
  return G.n_per_circuit;
}

/* ---- accessors ---------------------------------------------------- */

channel_state_t
channel_state(const channel_t *chan)
{
  return chan->state;
}
int
channel_is_open(const channel_t *chan)
{
  return chan->state == CHAN_STATE_OPEN && !chan->close_pending;
}
int
channel_is_authenticated_relay(const channel_t *chan)
{
  return chan->peer_is_relay;
}
int
channel_is_outgoing(const channel_t *chan)
{
  return chan->is_outgoing;
}
int
channel_netinfo_skew(const channel_t *chan, int64_t *skew_out)
{
  if (!chan->has_netinfo_skew)
    return 0;
  *skew_out = chan->netinfo_skew;
  return 1;
}

const uint8_t *
channel_peer_rsa_id(const channel_t *chan)
{
  return chan->have_peer_rsa ? chan->peer_rsa_id : NULL;
}
const uint8_t *
channel_peer_ed_id(const channel_t *chan)
{
  return chan->have_peer_ed ? chan->peer_ed_id : NULL;
}
const pc_addr_t *
channel_peer_addr(const channel_t *chan)
{
  return &chan->addr;
}
uint64_t
channel_global_id(const channel_t *chan)
{
  return chan->id;
}
const char *
channel_describe(const channel_t *chan)
{
  return chan->desc;
}
size_t
channel_outbuf_len(const channel_t *chan)
{
  return chan->conn ? buf_datalen(conn_outbuf(chan->conn)) : 0;
}

static void
plain_noop_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)c;
  (void)ev;
  (void)arg;
}

channel_t *
channel_new_plain_for_testing(evloop_t *loop, int fd)
{
  static uint64_t next_test_id = 1u << 30;
  channel_t *chan = pc_zalloc(sizeof(*chan));
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  chan->id = next_test_id++;
  chan->state = CHAN_STATE_OPEN;
  dlist_init(&chan->pending_circuits);
  chan->conn = conn_new_accepted(loop, NULL, fd, &a, plain_noop_cb, NULL);
  scheduler_channel_init(chan);
  return chan;
}

channel_t *
channel_new_listed_plain_for_testing(int fd)
{
  channel_t *chan = channel_new();
  evloop_timer_cancel(chan->hs_timer);
  chan->state = CHAN_STATE_OPEN;
  chan->conn = conn_new_accepted(G.loop, NULL, fd, &chan->addr,
                                 plain_noop_cb, NULL);
  conn_set_memacct(chan->conn, MEMACCT_CHAN_BUF);
  channel_update_desc(chan);
  return chan;
}

channel_t *
channel_new_handshaking_plain_for_testing(int fd, int outgoing)
{
  channel_t *chan = channel_new();
  chan->is_outgoing = outgoing ? 1 : 0;
  chan->we_authenticate = outgoing && G.keys != NULL;
  chan->state = CHAN_STATE_HANDSHAKING;
  chan->conn = conn_new_accepted(G.loop, NULL, fd, &chan->addr,
                                 plain_noop_cb, NULL);
  conn_set_memacct(chan->conn, MEMACCT_CHAN_BUF);
  channel_update_desc(chan);
  channel_hs_start(chan);
  return chan;
}

int
channel_feed_for_testing(channel_t *chan, const uint8_t *data, size_t len)
{
  if (chan->close_pending || !chan->conn)
    return -1;
  buf_add(conn_inbuf(chan->conn), data, len);
  channel_read_cells(chan);
  return chan->close_pending ? -1 : 0;
}

void
channel_free_plain_for_testing(channel_t *chan)
{
  if (!chan)
    return;
  scheduler_channel_free(chan);
  conn_free(chan->conn);
  free(chan);
}

void
channels_set_socketless_for_testing(int on)
{
  G.socketless = on;
}

/* Record the relay identities the peer of a carried (or socketless test)
 * channel has; either may be NULL (not known). */
static void
set_expected_ids(channel_t *chan, const uint8_t *rsa_id, const uint8_t *ed_id)
{
  if (rsa_id) {
    memcpy(chan->peer_rsa_id, rsa_id, 20);
    chan->have_peer_rsa = 1;
    chan->peer_is_relay = 1;
  }
  if (ed_id) {
    memcpy(chan->peer_ed_id, ed_id, 32);
    chan->have_peer_ed = 1;
  }
}

channel_t *
channel_accept_socketless_for_testing(const pc_addr_t *peer,
                                      const uint8_t *rsa_id,
                                      const uint8_t *ed_id)
{
  channel_t *chan = channel_new();
  chan->addr = *peer;
  chan->state = CHAN_STATE_HANDSHAKING;
  set_expected_ids(chan, rsa_id, ed_id);
  channel_update_desc(chan);
  channel_index_update(chan);
  return chan;
}

void
channel_open_socketless_for_testing(channel_t *chan)
{
  if (chan->conn || chan->close_pending || chan->state == CHAN_STATE_OPEN)
    return;
  if (chan->is_outgoing) {
    /* The responder proved what we asked for. */
    if (chan->want_rsa) {
      memcpy(chan->peer_rsa_id, chan->want_rsa_id, 20);
      chan->have_peer_rsa = 1;
    }
    if (chan->want_ed) {
      memcpy(chan->peer_ed_id, chan->want_ed_id, 32);
      chan->have_peer_ed = 1;
    }
    chan->peer_is_relay = chan->have_peer_rsa;
    channel_index_update(chan);
  }
  chan->link_proto = 5;
  channel_became_open(chan);
}

buf_t *
channel_outbuf_for_testing(channel_t *chan)
{
  return conn_outbuf(chan->conn);
}

int
channel_sockstat(const channel_t *chan, sockstat_tcp_t *out)
{
  if (chan->close_pending)
    return -1;
  if (chan->carrier)
    return chan->carrier->sockstat
               ? chan->carrier->sockstat(chan->carrier_arg, out)
               : -1;
  if (!chan->conn)
    return -1;
  return sockstat_tcp(conn_fd(chan->conn), out);
}

/* ---- circuit IDs -------------------------------------------------- */

uint32_t
channel_alloc_circ_id(channel_t *chan)
{
  /* tor-spec 5.1.1: on link protocol >= 4 the initiator of the connection
   * sets the high bit, the responder clears it; chosen at random. */
  for (int i = 0; i < CHAN_MAX_CIRCID_TRIES; i++) {
    uint32_t id;
    crypt_rand((uint8_t *)&id, sizeof(id));
    id &= 0x7fffffffu;
    if (chan->is_outgoing)
      id |= 0x80000000u;
    if (id == 0 || id == 0x80000000u)
      continue;
    if (!hmap_get_u32(chan->circuits, id))
      return id;
  }
  log_warn("No free circuit ID on %s after %d tries", chan->desc,
           CHAN_MAX_CIRCID_TRIES);
  return 0;
}

struct circuit_t *
channel_get_circuit(channel_t *chan, uint32_t circ_id)
{
  if (chan->last_circ && chan->last_circ_id == circ_id)
    return chan->last_circ;
  struct circuit_t *c = hmap_get_u32(chan->circuits, circ_id);
  if (c) {
    chan->last_circ_id = circ_id;
    chan->last_circ = c;
  }
  return c;
}

void
channel_set_circuit(channel_t *chan, uint32_t circ_id, struct circuit_t *c)
{
  hmap_set_u32(chan->circuits, circ_id, c);
  if (chan->last_circ_id == circ_id)
    chan->last_circ = NULL;
  chan->had_circuit = 1;
}

void
channel_remove_circuit(channel_t *chan, uint32_t circ_id)
{
  hmap_remove_u32(chan->circuits, circ_id);
  if (chan->last_circ_id == circ_id)
    chan->last_circ = NULL;
  if (hmap_size(chan->circuits) == 0) {
    chan->idle_since_us = evloop_now_us(G.loop);
    if (chan->per_circuit || chan->carried) {
      if (!dlist_node_is_linked(&chan->emptied_node))
        dlist_insert_tail(&G.emptied, &chan->emptied_node);
      evloop_deferred_schedule(G.per_circuit_reaper);
    }
  }
}

dlist_t *
channel_pending_circuits(channel_t *chan)
{
  return &chan->pending_circuits;
}

void
channel_collect_circuits(const channel_t *chan, ptrvec_t *out)
{
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, chan->circuits);
  while (hmap_iter_next(&it, NULL, &v))
    ptrvec_push(out, v);
}

unsigned
channel_n_circuits(const channel_t *chan)
{
  return (unsigned)hmap_size(chan->circuits);
}

/* ---- writing ------------------------------------------------------ */

void
channel_write_raw(channel_t *chan, const uint8_t *data, size_t len)
{
  if (chan->carrier && !chan->close_pending) {
    if (len == CELL_MAX_NETWORK_LEN && !cell_command_is_var(data[4]))
      (void)chan->carrier->send(chan->carrier_arg, data, len);
    return;
  }
  if (!chan->conn || chan->close_pending)
    return;
  buf_t *out = conn_outbuf(chan->conn);
  /* Relayed cells stop at CHAN_OUTBUF_HIGH; only cells we answer with
   * directly (CREATED2, DESTROY...) go beyond it. A peer that keeps sending
   * requests but never reads the answers would grow this without end. */
  if (buf_datalen(out) + len > CHAN_OUTBUF_MAX) {
    channel_close(chan, "peer is not reading (output buffer full)");
    return;
  }
  buf_add(out, data, len);
  conn_flush_soon(chan->conn);
}

void
channel_send_cell(channel_t *chan, const cell_t *cell)
{
  uint8_t wire[CELL_MAX_NETWORK_LEN];
  int proto = chan->link_proto ? chan->link_proto : 3;
  cell_pack(wire, cell, proto);
  channel_write_raw(chan, wire, cell_network_len(proto));
  chan->cells_out++;
  G.stats.cells_out++;
}

void
channel_send_var_cell(channel_t *chan, const var_cell_t *vc)
{
  size_t len = var_cell_network_len(vc, chan->link_proto);
  uint8_t *wire = pc_malloc(len);
  var_cell_pack(wire, vc, chan->link_proto);
  channel_write_raw(chan, wire, len);
  free(wire);
}

int
channel_take_bytes(channel_t *chan, uint64_t *rd, uint64_t *wr)
{
  *rd = *wr = 0;
  if (!chan->conn)
    return -1;
  uint64_t r = conn_bytes_read(chan->conn), w = conn_bytes_written(chan->conn);
  *rd = r >= chan->bw_mark_read ? r - chan->bw_mark_read : r;
  *wr = w >= chan->bw_mark_written ? w - chan->bw_mark_written : w;
  chan->bw_mark_read = r;
  chan->bw_mark_written = w;
  return 0;
}

int
channel_accepts_circuit_cells(const channel_t *chan)
{
  if (chan->state != CHAN_STATE_OPEN || (!chan->conn && !chan->carrier) ||
      chan->close_pending)
    return 0;
  return !(chan->is_outgoing ? G.block_flush_out : G.block_flush_in);
}

void
channel_note_cell_out(channel_t *chan)
{
  chan->cells_out++;
  G.stats.cells_out++;
}

void
channels_block_flush_for_testing(int outgoing, int incoming)
{
  G.block_flush_out = outgoing;
  G.block_flush_in = incoming;
  for (dlist_node_t *n = dlist_first(&G.all); n; n = dlist_next(&G.all, n))
    scheduler_channel_wakeup(DLIST_ENTRY(n, channel_t, all_node));
}

/* ---- reading ------------------------------------------------------ */

/* Process one variable-length cell at the head of inbuf. Returns 1 if a
 * cell was consumed, 0 if incomplete, -1 if the channel was closed. */
static int
read_var_cell(channel_t *chan, buf_t *in)
{
  size_t idlen = cell_circid_len(chan->link_proto);
  size_t hdr = idlen + 3;
  if (buf_datalen(in) < hdr)
    return 0;
  const uint8_t *h = buf_pullup(in, hdr);
  size_t total = hdr + get_u16(h + idlen + 1);
  if (buf_datalen(in) < total)
    return 0;
  const uint8_t *raw = buf_pullup(in, total);
  var_cell_t *vc = NULL;
  size_t consumed = 0;
  if (var_cell_fetch(raw, total, chan->link_proto, &vc, &consumed) != 1) {
    channel_close(chan, "malformed variable-length cell");
    return -1;
  }
  int r = 0;
  chan->cells_in++;
  G.stats.cells_in++;
  if (chan->state == CHAN_STATE_OPEN) {
    /* After the handshake only padding var cells are meaningful to core;
     * a repeated VERSIONS is ignored (tor-spec 4.1); features may handle
     * commands of their own. */
    if (var_cell_handlers[vc->command])
      var_cell_handlers[vc->command](chan, vc);
    else if (vc->command != CELL_VPADDING && vc->command != CELL_VERSIONS)
      log_info("Ignoring %s cell (command %u) on open channel %s",
               cell_command_name(vc->command), vc->command, chan->desc);
  } else {
    r = channel_hs_handle_var(chan, vc, raw, total);
  }
  var_cell_free(vc);
  if (r < 0)
    return -1;
  buf_drain(in, total);
  return 1;
}

static void
channel_read_cells(channel_t *chan)
{
  buf_t *in = conn_inbuf(chan->conn);
  chan->in_read = 1;
  while (!chan->close_pending) {
    size_t avail = buf_datalen(in);
    size_t idlen = cell_circid_len(chan->link_proto);
    if (avail < idlen + 1)
      break;
    uint8_t hdr[5];
    buf_peek(in, hdr, idlen + 1);
    uint8_t command = hdr[idlen];
    if (chan->link_proto == 0 && command != CELL_VERSIONS) {
      channel_close(chan, chan->is_outgoing
                              ? "peer did not answer with VERSIONS"
                              : "first cell was not VERSIONS");
      break;
    }
    if (cell_command_is_var(command)) {
      if (read_var_cell(chan, in) <= 0)
        break;
      continue;
    }
    size_t clen = cell_network_len(chan->link_proto);
    if (avail < clen)
      break;
    if (chan->state != CHAN_STATE_OPEN) {
      cell_t cell;
      const uint8_t *raw = buf_pullup(in, clen);
      cell_unpack(&cell, raw, chan->link_proto);
      chan->cells_in++;
      G.stats.cells_in++;
      if (channel_hs_handle_fixed(chan, &cell, raw, clen) < 0)
        break;
      buf_drain(in, clen);
      continue;
    }
    packed_cell_t *pc = packed_cell_new();
    buf_get(in, pc->body, clen);
    pc->len = (uint16_t)clen;
    up_cell(chan, pc);
  }
  chan->in_read = 0;
}

static void
channel_conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  channel_t *chan = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN:
    chan->state = CHAN_STATE_HANDSHAKING;
    channel_hs_start(chan);
    break;
  case CONN_EV_DATA:
    channel_read_cells(chan);
    break;
  case CONN_EV_DRAINED:
    scheduler_channel_wakeup(chan);
    break;
  case CONN_EV_EOF:
    channel_close(chan, "connection closed by peer");
    break;
  case CONN_EV_ERROR:
    channel_close(chan, conn_error(c));
    break;
  }
}

void
channel_became_open(channel_t *chan)
{
  chan->state = CHAN_STATE_OPEN;
  chan->idle_since_us = evloop_now_us(G.loop);
  if (chan->is_outgoing) {
    uint64_t took = chan->idle_since_us - chan->created_us;
    G.stats.setups++;
    G.stats.setup_us_total += took;
    if (took > G.stats.setup_us_max)
      G.stats.setup_us_max = took;
  }
  evloop_timer_free(chan->hs_timer);
  channel_hs_free(chan->hs);
  chan->hs = NULL;
  if (chan->conn)
    conn_set_lowat(chan->conn, CHAN_OUTBUF_LOW);
  apply_buckets(chan); /* now we know whether the peer is a relay */
  channel_update_desc(chan);
  log_info("Channel %s is open (link protocol %d, %s%s)", chan->desc,
           chan->link_proto, chan->is_outgoing ? "outgoing" : "incoming",
           chan->peer_is_relay ? ", authenticated relay" : "");
  up_opened(chan, 1);
  scheduler_channel_wakeup(chan);
  for (int i = 0; i < CHANNEL_MAX_OPEN_OBSERVERS && !chan->close_pending; i++)
    if (open_observers[i].fn)
      open_observers[i].fn(chan, open_observers[i].arg);
}

/* ---- carried channels --------------------------------------------- */

channel_t *
channel_new_carried(const channel_carrier_ops_t *ops, void *arg,
                    const pc_addr_t *addr, const uint8_t *rsa_id,
                    const uint8_t *ed_id, int outgoing, const char *kind)
{
  channel_t *chan = channel_new();
  chan->addr = *addr;
  chan->is_outgoing = outgoing ? 1 : 0;
  chan->we_authenticate = outgoing && G.keys != NULL;
  chan->carried = 1;
  chan->carrier = ops;
  chan->carrier_arg = arg;
  chan->carrier_kind = kind;
  G.n_carried++;
  set_expected_ids(chan, rsa_id, ed_id);
  chan->link_proto = 5;
  chan->state = CHAN_STATE_OPEN;
  chan->idle_since_us = evloop_now_us(G.loop);
  evloop_timer_free(chan->hs_timer);
  channel_update_desc(chan);
  size_t dl = strlen(chan->desc);
  if (kind && dl + 4 < sizeof(chan->desc))
    snprintf(chan->desc + dl, sizeof(chan->desc) - dl, " (%s)", kind);
  log_info("Channel %s is open (%s, carried)", chan->desc,
           outgoing ? "outgoing" : "incoming");
  up_opened(chan, 1);
  return chan;
}

void
channel_carried_input(channel_t *chan, packed_cell_t *pc)
{
  if (!chan->carried || chan->close_pending ||
      pc->len != CELL_MAX_NETWORK_LEN) {
    packed_cell_free(pc);
    return;
  }
  up_cell(chan, pc);
}

void
channel_carried_writable(channel_t *chan)
{
  if (chan->carrier && !chan->close_pending)
    scheduler_channel_wakeup(chan);
}

int
channel_is_carried(const channel_t *chan)
{
  return chan->carried;
}

void
channel_carried_set_backpressure(channel_t *chan)
{
  if (chan->carried)
    chan->backpressure = 1;
}

int
channel_has_backpressure(const channel_t *chan)
{
  return chan && chan->backpressure;
}

void
channel_set_path_backpressure(channel_t *chan, int on)
{
  chan->path_backpressure = on && chan->backpressure;
}

int
channel_path_backpressure(const channel_t *chan)
{
  return chan && chan->path_backpressure;
}

unsigned
channel_carried_window(const channel_t *chan)
{
  if (!chan || !chan->carrier || chan->close_pending ||
      !chan->carrier->window)
    return 0;
  return chan->carrier->window(chan->carrier_arg);
}

const char *
channel_transport_name(const channel_t *chan)
{
  if (chan && chan->carried)
    return chan->carrier_kind ? chan->carrier_kind : "carried";
  return "TLS";
}

int
channel_carried_flowstat(const channel_t *chan, channel_flowstat_t *out)
{
  if (!chan || !chan->carrier || chan->close_pending ||
      !chan->carrier->flowstat)
    return -1;
  return chan->carrier->flowstat(chan->carrier_arg, out);
}

void *
channel_carrier_arg(const channel_t *chan, const channel_carrier_ops_t *ops)
{
  return chan && chan->carrier == ops ? chan->carrier_arg : NULL;
}

/* ---- closing ------------------------------------------------------ */

static void
channel_close_impl(channel_t *chan, const char *why, int flush)
{
  if (chan->close_pending)
    return;
  int was_open = chan->state == CHAN_STATE_OPEN;
  log_info("Closing channel %s: %s", chan->desc, why ? why : "no reason");
  if (!was_open && chan->is_outgoing)
    log_notice("Connection to %s failed: %s", chan->desc,
               why ? why : "no reason");
  chan->close_pending = 1;
  chan->state = CHAN_STATE_CLOSED;
  if (chan->dos_counted) {
    chan->dos_counted = 0;
    dos_conn_closed(&chan->addr);
  }
  if (chan->per_circuit) {
    chan->per_circuit = 0;
    G.n_per_circuit--;
  }
  if (chan->carried)
    G.n_carried--;
  dlist_remove(&chan->all_node);
  index_remove(chan);
  dlist_remove(&chan->emptied_node);
  evloop_timer_free(chan->hs_timer);
  if (chan->hs) {
    channel_hs_free(chan->hs);
    chan->hs = NULL;
  }
  /* Leave the scheduler first; circuits closing below cannot requeue
   * here (close_pending). */
  scheduler_channel_free(chan);
  if (!was_open && chan->is_outgoing)
    up_opened(chan, 0);
  if (upcalls && upcalls->closed)
    upcalls->closed(chan);
  if (chan->carrier) {
    const channel_carrier_ops_t *ops = chan->carrier;
    chan->carrier = NULL;
    ops->closed(chan->carrier_arg);
    chan->carrier_arg = NULL;
  }
  if (chan->conn) {
    if (flush)
      conn_close(chan->conn, 1);
    else
      conn_free(chan->conn);
    chan->conn = NULL;
  }
  ptrvec_push(G.to_free, chan);
  evloop_deferred_schedule(G.reaper);
}

void
channel_close(channel_t *chan, const char *why)
{
  channel_close_impl(chan, why, 0);
}

void
channel_close_after_flush(channel_t *chan, const char *why)
{
  channel_close_impl(chan, why, 1);
}

channel_t *
channel_find_by_global_id(uint64_t id)
{
  if (!G.all.head.next)
    return NULL;
  for (dlist_node_t *n = dlist_first(&G.all); n; n = dlist_next(&G.all, n)) {
    channel_t *chan = DLIST_ENTRY(n, channel_t, all_node);
    if (chan->id == id)
      return chan->close_pending ? NULL : chan;
  }
  return NULL;
}
