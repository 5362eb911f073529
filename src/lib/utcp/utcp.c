/* SPDX-License-Identifier: BSD-3-Clause */
/* utcp.c -- user-level TCP over caller-carried segments, on lwIP (utcp.h).
 *
 * Which lwIP: Debian's liblwip (2.1.3), a shared library built with the
 * lwipopts.h that Debian installs (/usr/include/lwip/lwipopts.h, the GNU
 * Hurd's configuration: NO_SYS=0, core locking, malloc for every pool).
 * The structures in lwIP's headers depend on those options, so this file
 * must be compiled with exactly that lwipopts.h (pkg-config's cflags find
 * it); a lwipopts.h of our own (NO_SYS=1, own pools) would not match the
 * library's binary layout. NO_SYS=0 only means that lwIP *can* run a
 * thread: we never call tcpip_init(), so no thread and no mailbox exist,
 * the core-locking assertion has no tcpip thread to compare with and
 * passes, and the raw API (tcp_*, ip4_input, sys_check_timeouts) is used
 * from the event loop thread as with NO_SYS=1. One consequence of the
 * options: lwIP's pools are malloc, so lwIP itself bounds nothing; the
 * bounds are ours (below).
 *
 * Addresses: one netif, 100.64.0.1/10 (shared address space, never seen
 * outside this process), and one pseudo address per peer in it, so that
 * lwIP routes a connection's output to the netif and its remote address
 * names the peer. The segment travels without IP header; its TCP checksum
 * covers a pseudo-header with addresses of the sender's stack, so before
 * sending, the address words are taken out of the checksum (RFC 1624
 * incremental update, as if both addresses were 0.0.0.0), and on input
 * the receiver adds its own pair (the peer's pseudo address, 100.64.0.1)
 * and builds a fresh IPv4 header. Nothing in a segment can name another
 * peer: the source address is always the one of the peer it came from, so
 * a peer reaches only its own connections.
 *
 * Before the stack sees a segment: length within [20, seg_max], a sane
 * data offset, and SYNs (without ACK) limited per peer by a token bucket
 * (UTCP_SYN_BURST, UTCP_SYN_RATE per second, utcp.h: CPU) and by the
 * number of half-open connections (UTCP_HALFOPEN_MAX: memory). lwIP keeps
 * a half-open connection until it is accepted, reset, or silent for 20 s
 * (its SYN_RCVD timeout), and tells nobody when it gives up; so we keep
 * our own table per peer (port pair -> last segment seen), entered by a
 * SYN, refreshed by the peer's segments for it, left on accept, on the
 * peer's RST, or 21 s after its last segment. Each entry is counted in the
 * memory budget at UTCP_HALFOPEN_COST (lwIP's control block and its
 * SYN-ACK); established connections per peer are the accept callback's
 * business. lwIP is built with IPv4 forwarding
 * and IPv6: we only ever hand it IPv4 TCP packets addressed to the netif,
 * so it never forwards anything.
 *
 * Ports: connections to a peer go to its port UTCP_LISTEN_PORT from a
 * local port chosen per peer (1024-65535, SO_REUSEADDR so that the same
 * local port serves different peers); lwIP's own ephemeral range (16384
 * ports for the whole stack) would cap connections process-wide.
 *
 * Closing inside lwIP: a connection closed or aborted while lwIP is
 * running one of our callbacks (in_lwip > 0) is put on a list and closed
 * when the call into lwIP returns, never under lwIP's feet. A graceful
 * close with more than UTCP_CLOSE_LINGER_MAX bytes still queued becomes a
 * reset: a peer that stops acknowledging cannot make closed connections
 * hold their send queues for minutes.
 *
 * Nagle is off (cells are written whole and flushed at the end of the
 * event loop iteration, which coalesces them); delayed ACKs are lwIP's
 * (every second full segment at once, otherwise within 250 ms).
 */
#include "lib/utcp/utcp.h"

#include "config.h"

#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <stdlib.h>
#include <string.h>


#ifndef HAVE_LWIP

int
utcp_available(void)
{
  return 0;
}

const char *
utcp_stack_name(void)
{
  return "none";
}

utcp_t *
utcp_new(evloop_t *loop, size_t seg_max)
{
  (void)loop;
  (void)seg_max;
  log_warn("This build has no user-level TCP stack (lwIP)");
  return NULL;
}

void utcp_free_(utcp_t *u) { (void)u; }
utcp_peer_t *utcp_peer_new(utcp_t *u, utcp_output_fn out,
                           utcp_accept_fn accept, void *peer_arg)
{ (void)u; (void)out; (void)accept; (void)peer_arg; return NULL; }
void utcp_peer_free_(utcp_peer_t *p) { (void)p; }
int utcp_peer_input(utcp_peer_t *p, const uint8_t *seg, size_t len)
{ (void)p; (void)seg; (void)len; return -1; }
unsigned utcp_peer_n_conns(const utcp_peer_t *p) { (void)p; return 0; }
void utcp_peer_set_syn_limit(utcp_peer_t *p, unsigned rate, unsigned burst)
{ (void)p; (void)rate; (void)burst; }
utcp_conn_t *utcp_connect(utcp_peer_t *p, const utcp_conn_ops_t *ops,
                          void *arg)
{ (void)p; (void)ops; (void)arg; return NULL; }
size_t utcp_conn_room(const utcp_conn_t *c) { (void)c; return 0; }
int utcp_conn_write(utcp_conn_t *c, const uint8_t *data, size_t len)
{ (void)c; (void)data; (void)len; return -1; }
void utcp_conn_flush(utcp_conn_t *c) { (void)c; }
void utcp_conn_consumed(utcp_conn_t *c, size_t n) { (void)c; (void)n; }
void utcp_conn_close(utcp_conn_t *c) { (void)c; }
void utcp_conn_abort(utcp_conn_t *c) { (void)c; }
size_t utcp_conn_mem(const utcp_conn_t *c) { (void)c; return 0; }
void utcp_conn_ports(const utcp_conn_t *c, uint16_t *l, uint16_t *r)
{ (void)c; *l = 0; *r = 0; }
void utcp_get_stats(const utcp_t *u, utcp_stats_t *out)
{ (void)u; memset(out, 0, sizeof(*out)); }
int utcp_conn_info(const utcp_conn_t *c, utcp_conn_info_t *out)
{ (void)c; memset(out, 0, sizeof(*out)); return -1; }

#else /* HAVE_LWIP */

#include <lwip/init.h>
#include <lwip/inet_chksum.h>
#include <lwip/ip4.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>
#include <lwip/priv/tcp_priv.h>
#include <lwip/tcp.h>
#include <lwip/timeouts.h>

#define UTCP_LISTEN_PORT 1
#define UTCP_PORT_MIN 1024
#define UTCP_NET 0x64400000u    /* 100.64.0.0/10, host order */
#define UTCP_NET_HOSTS 0x400000u
#define UTCP_CLOSE_LINGER_MAX 4096
#define UTCP_HALFOPEN_MAX 1024
#define UTCP_HALFOPEN_TTL_MS 21000
#define UTCP_HALFOPEN_COST 512

typedef enum { CONN_OPEN, CONN_CLOSING, CONN_ABORTING } conn_state_t;

struct utcp_conn_t {
  utcp_peer_t *peer;              /* NULL once the peer is gone */
  struct tcp_pcb *pcb;            /* NULL once lwIP freed it */
  const utcp_conn_ops_t *ops;
  void *arg;
  conn_state_t state;
  int gone;                       /* closed() was called */
  uint32_t key;                   /* local port << 16 | remote port */
  dlist_node_t node;              /* in peer->list, or u->pending */
  size_t accounted;               /* in u->mem_total */
  int dirty;                      /* written since the last output */
  dlist_node_t dirty_node;
  int sent_any;                   /* snd_max is valid */
  uint32_t snd_max;               /* highest sequence number sent + 1 */
  uint64_t retrans, timeouts, fast_retransmits;
};

struct utcp_peer_t {
  utcp_t *u;
  uint32_t addr;                  /* pseudo address, host order */
  utcp_output_fn out;
  utcp_accept_fn accept;
  void *arg;
  hmap_t *conns;                  /* key -> utcp_conn_t */
  dlist_t list;                   /* open conns */
  uint16_t next_port;
  double syn_tokens;
  uint32_t syn_last_ms;
  unsigned syn_rate, syn_burst;
  hmap_t *halfopen;               /* key -> last segment (sys_now + 1) */
};

struct utcp_t {
  evloop_t *loop;
  size_t seg_max;
  struct netif netif;
  struct tcp_pcb *listener;
  evloop_timer_t *timer;
  evloop_deferred_t *flush;
  hmap_t *peers;                  /* pseudo address (u32) -> peer */
  uint32_t next_host;
  int in_lwip;
  uint32_t due_ms;                /* when the timer fires (sys_now) */
  dlist_t pending;                /* conns to close after lwIP returns */
  dlist_t dirty;                  /* conns with data to push out */
  uint64_t mem_total;
  utcp_stats_t st;
  uint8_t seg[UTCP_SEG_MAX + 60];
};

static utcp_t *the_u;

int
utcp_available(void)
{
  return 1;
}

const char *
utcp_stack_name(void)
{
  return "lwIP " LWIP_VERSION_STRING;
}

/* ---- checksums ---- */

/* RFC 1624 eqn. 3: the checksum hc after the 16-bit words old[] of the
 * covered data became new[] (either may be NULL for zeros). */
static uint16_t
csum_update(uint16_t hc, const uint8_t *old, const uint8_t *new, size_t n)
{
  uint32_t sum = (uint16_t)~hc;
  for (size_t i = 0; i < n; i += 2) {
    uint16_t o = old ? (uint16_t)(old[i] << 8 | old[i + 1]) : 0;
    uint16_t w = new ? (uint16_t)(new[i] << 8 | new[i + 1]) : 0;
    sum += (uint16_t)~o;
    sum += w;
  }
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

static uint16_t
rd16(const uint8_t *p)
{
  return (uint16_t)(p[0] << 8 | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void
wr32(uint8_t *p, uint32_t v)
{
  wr16(p, (uint16_t)(v >> 16));
  wr16(p + 2, (uint16_t)v);
}

/* ---- memory ---- */

static size_t
conn_mem_now(const utcp_conn_t *c)
{
  if (!c->pcb)
    return 0;
  size_t n = sizeof(struct tcp_pcb) + (TCP_SND_BUF - tcp_sndbuf(c->pcb));
#if TCP_QUEUE_OOSEQ
  for (const struct tcp_seg *s = c->pcb->ooseq; s; s = s->next)
    n += s->p ? s->p->tot_len : 0;
#endif
  return n;
}

static void
mem_sync(utcp_conn_t *c)
{
  utcp_t *u = the_u;
  size_t now = conn_mem_now(c);
  u->mem_total = u->mem_total - c->accounted + now;
  c->accounted = now;
  memacct_set(MEMACCT_UTCP, u->mem_total);
}

/* ---- timers and deferred work ---- */

/* lwIP's next timeout, or UTCP_IDLE_TICK_MS while no TCP connection
 * exists: the cyclic timers that keep running then (IGMP and MLD every
 * 100 ms, reassembly, ARP, ND) do nothing for us, and lwIP restarts a
 * cyclic timer that is overdue instead of running it repeatedly. */
#define UTCP_IDLE_TICK_MS 1000
static void
timer_schedule(utcp_t *u)
{
  u32_t ms = sys_timeouts_sleeptime();
  if (!tcp_active_pcbs && !tcp_tw_pcbs)
    ms = UTCP_IDLE_TICK_MS;
  else if (ms == SYS_TIMEOUTS_SLEEPTIME_INFINITE)
    ms = UTCP_IDLE_TICK_MS;
  if (!ms)
    ms = 1;
  u->due_ms = sys_now() + ms;
  evloop_timer_schedule(u->timer, (uint64_t)ms * 1000);
}

/* A connection may have started lwIP's TCP timer: wake up in time. */
static void
timer_kick(utcp_t *u)
{
  u32_t ms = sys_timeouts_sleeptime();
  if (ms != SYS_TIMEOUTS_SLEEPTIME_INFINITE &&
      (int32_t)(u->due_ms - (sys_now() + ms)) > 0)
    timer_schedule(u);
}

static void run_pending(utcp_t *u);

static void
timer_cb(void *arg)
{
  utcp_t *u = arg;
  u->in_lwip++;
  sys_check_timeouts();
  u->in_lwip--;
  run_pending(u);
  timer_schedule(u);
}

static void
flush_cb(void *arg)
{
  utcp_t *u = arg;
  dlist_node_t *n;
  u->in_lwip++;
  while ((n = dlist_first(&u->dirty))) {
    utcp_conn_t *c = DLIST_ENTRY(n, utcp_conn_t, dirty_node);
    dlist_remove(n);
    c->dirty = 0;
    if (c->pcb)
      (void)tcp_output(c->pcb);
  }
  u->in_lwip--;
  run_pending(u);
}

static void
conn_undirty(utcp_conn_t *c)
{
  if (c->dirty) {
    dlist_remove(&c->dirty_node);
    c->dirty = 0;
  }
}

/* Detach c from lwIP's callbacks (the pcb, if any, stays). */
static void
pcb_detach(struct tcp_pcb *pcb)
{
  tcp_arg(pcb, NULL);
  tcp_recv(pcb, NULL);
  tcp_sent(pcb, NULL);
  tcp_err(pcb, NULL);
}

/* Close or abort what the user gave up, outside lwIP. */
static void
conn_finish(utcp_conn_t *c)
{
  utcp_t *u = the_u;
  conn_undirty(c);
  u->mem_total -= c->accounted;
  memacct_set(MEMACCT_UTCP, u->mem_total);
  if (c->pcb) {
    struct tcp_pcb *pcb = c->pcb;
    c->pcb = NULL;
    pcb_detach(pcb);
    size_t queued = TCP_SND_BUF - tcp_sndbuf(pcb);
    /* Bytes delivered but not consumed would make lwIP reset instead of
     * closing (and drop what is queued, a DESTROY for instance): the
     * user is done with them. */
    if (c->state == CONN_CLOSING && pcb->rcv_wnd < TCP_WND_MAX(pcb))
      tcp_recved(pcb, (u16_t)(TCP_WND_MAX(pcb) - pcb->rcv_wnd));
    if (c->state == CONN_ABORTING || queued > UTCP_CLOSE_LINGER_MAX ||
        tcp_close(pcb) != ERR_OK)
      tcp_abort(pcb);
  }
  free(c);
}

static void
run_pending(utcp_t *u)
{
  dlist_node_t *n;
  if (u->in_lwip)
    return;
  while ((n = dlist_first(&u->pending))) {
    dlist_remove(n);
    conn_finish(DLIST_ENTRY(n, utcp_conn_t, node));
  }
}

/* ---- lwIP's callbacks ---- */

/* Remove c from its peer (it stays a record until freed). */
static void
conn_unlink(utcp_conn_t *c)
{
  if (c->peer) {
    hmap_remove_u32(c->peer->conns, c->key);
    dlist_remove(&c->node);
    c->peer = NULL;
    the_u->st.conns--;
  }
}

/* lwIP freed the pcb or the peer ended: tell the user once. */
static void
conn_gone(utcp_conn_t *c, const char *why)
{
  c->gone = 1;
  conn_unlink(c);
  conn_undirty(c);
  the_u->mem_total -= c->accounted;
  c->accounted = 0;
  memacct_set(MEMACCT_UTCP, the_u->mem_total);
  c->ops->closed(c->arg, why);
}

static void
cb_err(void *arg, err_t err)
{
  utcp_conn_t *c = arg;
  if (!c)
    return;
  c->pcb = NULL; /* freed by lwIP */
  if (c->state != CONN_OPEN)
    return; /* on the pending list: freed there */
  conn_gone(c, err == ERR_RST ? "reset by the peer"
               : err == ERR_ABRT ? "aborted (timeout)"
                                 : "connection error");
  free(c);
}

static err_t
cb_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
  utcp_conn_t *c = arg;
  (void)err;
  if (!c || c->state != CONN_OPEN) {
    if (p) {
      tcp_recved(pcb, p->tot_len);
      pbuf_free(p);
    }
    return ERR_OK;
  }
  if (!p) {
    /* FIN: the peer is done; close our side after the callback. */
    conn_gone(c, "closed by the peer");
    c->state = CONN_CLOSING;
    dlist_insert_tail(&the_u->pending, &c->node);
    return ERR_OK;
  }
  for (struct pbuf *q = p; q && c->state == CONN_OPEN; q = q->next)
    if (q->len)
      c->ops->recv(c->arg, q->payload, q->len);
  pbuf_free(p);
  if (c->state == CONN_OPEN)
    mem_sync(c);
  return ERR_OK;
}

static err_t
cb_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
  utcp_conn_t *c = arg;
  (void)pcb;
  (void)len;
  if (c && c->state == CONN_OPEN) {
    mem_sync(c);
    c->ops->sent(c->arg);
  }
  return ERR_OK;
}

static utcp_conn_t *
conn_new(utcp_peer_t *p, struct tcp_pcb *pcb)
{
  utcp_conn_t *c = pc_zalloc(sizeof(*c));
  c->peer = p;
  c->pcb = pcb;
  c->state = CONN_OPEN;
  tcp_arg(pcb, c);
  tcp_recv(pcb, cb_recv);
  tcp_sent(pcb, cb_sent);
  tcp_err(pcb, cb_err);
  tcp_nagle_disable(pcb);
  return c;
}

static void
conn_register(utcp_conn_t *c)
{
  hmap_set_u32(c->peer->conns, c->key, c);
  dlist_insert_tail(&c->peer->list, &c->node);
  the_u->st.conns++;
  mem_sync(c);
}

/* ---- half-open connections (see the top comment) ---- */

static void
halfopen_forget(utcp_peer_t *p, uint32_t key)
{
  if (hmap_remove_u32(p->halfopen, key)) {
    the_u->mem_total -= UTCP_HALFOPEN_COST;
    memacct_set(MEMACCT_UTCP, the_u->mem_total);
  }
}

/* Drop the entries whose connection lwIP has given up by now. */
static void
halfopen_expire(utcp_peer_t *p, u32_t now)
{
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  hmap_iter_init(&it, p->halfopen);
  while (hmap_iter_next(&it, &k, &v)) {
    u32_t seen = (u32_t)((uintptr_t)v - 1);
    if ((u32_t)(now - seen) > UTCP_HALFOPEN_TTL_MS) {
      hmap_iter_remove_current(&it);
      the_u->mem_total -= UTCP_HALFOPEN_COST;
    }
  }
  memacct_set(MEMACCT_UTCP, the_u->mem_total);
}

/* The pre-check's view of a segment for a connection not established
 * yet: 0 to pass it on, -1 to drop it. */
static int
halfopen_check(utcp_peer_t *p, uint32_t key, uint8_t flags)
{
  utcp_t *u = p->u;
  u32_t now = sys_now();
  int known = hmap_get_u32(p->halfopen, key) != NULL;
  if ((flags & TCP_SYN) && !(flags & TCP_ACK) && !known &&
      !hmap_get_u32(p->conns, key)) {
    p->syn_tokens += (double)(u32_t)(now - p->syn_last_ms) * p->syn_rate /
                     1000.0;
    if (p->syn_tokens > p->syn_burst)
      p->syn_tokens = p->syn_burst;
    p->syn_last_ms = now;
    if (p->syn_tokens < 1) {
      u->st.dropped_syn_rate++;
      return -1;
    }
    if (hmap_size(p->halfopen) >= UTCP_HALFOPEN_MAX)
      halfopen_expire(p, now);
    if (hmap_size(p->halfopen) >= UTCP_HALFOPEN_MAX) {
      u->st.dropped_syn_rate++;
      return -1;
    }
    p->syn_tokens -= 1;
    hmap_set_u32(p->halfopen, key, (void *)(uintptr_t)((uintptr_t)now + 1));
    u->mem_total += UTCP_HALFOPEN_COST;
    memacct_set(MEMACCT_UTCP, u->mem_total);
    return 0;
  }
  if (known) {
    if (flags & TCP_RST)
      halfopen_forget(p, key);
    else
      hmap_set_u32(p->halfopen, key, (void *)(uintptr_t)((uintptr_t)now + 1));
  }
  return 0;
}

static err_t
cb_accept(void *arg, struct tcp_pcb *newpcb, err_t err)
{
  utcp_t *u = arg;
  if (err != ERR_OK || !newpcb)
    return ERR_VAL;
  utcp_peer_t *p = hmap_get_u32(u->peers, lwip_ntohl(ip_2_ip4(
                                              &newpcb->remote_ip)->addr));
  uint32_t key = (uint32_t)newpcb->local_port << 16 | newpcb->remote_port;
  if (!p || hmap_get_u32(p->conns, key)) {
    tcp_abort(newpcb);
    u->st.conns_refused++;
    return ERR_ABRT;
  }
  halfopen_forget(p, key);
  utcp_conn_t *c = conn_new(p, newpcb);
  c->key = key;
  void *carg = NULL;
  const utcp_conn_ops_t *ops = p->accept(p->arg, c, &carg);
  if (!ops) {
    pcb_detach(newpcb);
    free(c);
    tcp_abort(newpcb);
    u->st.conns_refused++;
    return ERR_ABRT;
  }
  c->ops = ops;
  c->arg = carg;
  conn_register(c);
  u->st.conns_accepted++;
  return ERR_OK;
}

/* ---- the netif ---- */

/* Retransmissions, which lwIP (built without LWIP_STATS) does not count:
 * a segment carrying data (or SYN/FIN) that starts below the highest
 * sequence number the connection has sent is a retransmission. One that
 * starts at the oldest unacknowledged byte begins a recovery: a timeout
 * while lwIP's TF_RTO is set (it resends from there after the timer
 * fired), otherwise a fast retransmit. Only connections still listed
 * (not closing ones) are counted. */
static void
count_retrans(utcp_t *u, utcp_peer_t *p, const uint8_t *seg, size_t len)
{
  uint32_t key = (uint32_t)rd16(seg) << 16 | rd16(seg + 2);
  utcp_conn_t *c = hmap_get_u32(p->conns, key);
  if (!c || !c->pcb)
    return;
  size_t hl = (size_t)(seg[12] >> 4) * 4;
  uint32_t seq = (uint32_t)rd16(seg + 4) << 16 | rd16(seg + 6);
  uint8_t fl = seg[13];
  uint32_t n = (uint32_t)(len - hl) + ((fl & TCP_SYN) ? 1 : 0) +
               ((fl & TCP_FIN) ? 1 : 0);
  if (!n)
    return; /* a pure ACK or window update */
  if (c->sent_any && (int32_t)(seq - c->snd_max) < 0) {
    c->retrans++;
    u->st.retrans++;
    if (seq == c->pcb->lastack) {
      if (c->pcb->flags & TF_RTO) {
        c->timeouts++;
        u->st.timeouts++;
      } else {
        c->fast_retransmits++;
        u->st.fast_retransmits++;
      }
    }
  }
  if (!c->sent_any || (int32_t)(seq + n - c->snd_max) > 0)
    c->snd_max = seq + n;
  c->sent_any = 1;
}

static err_t
netif_output_cb(struct netif *nif, struct pbuf *pb, const ip4_addr_t *dst)
{
  utcp_t *u = nif->state;
  utcp_peer_t *p = hmap_get_u32(u->peers, lwip_ntohl(dst->addr));
  if (!p) {
    u->st.dropped_no_peer++;
    return ERR_OK;
  }
  size_t tot = pb->tot_len;
  if (tot < IP_HLEN + UTCP_SEG_MIN || tot > sizeof(u->seg))
    return ERR_OK;
  uint8_t *b = u->seg;
  if (pbuf_copy_partial(pb, b, (u16_t)tot, 0) != tot)
    return ERR_OK;
  size_t ihl = (size_t)(b[0] & 0x0f) * 4;
  if ((b[0] >> 4) != 4 || b[9] != IP_PROTO_TCP || ihl < IP_HLEN ||
      tot < ihl + UTCP_SEG_MIN || tot - ihl > u->seg_max)
    return ERR_OK;
  uint8_t *seg = b + ihl;
  count_retrans(u, p, seg, tot - ihl);
  /* Take both addresses out of the checksum (as if they were 0). */
  wr16(seg + 16, csum_update(rd16(seg + 16), b + 12, NULL, 8));
  u->st.segs_out++;
  u->st.bytes_out += tot - ihl;
  p->out(p->arg, seg, tot - ihl);
  return ERR_OK;
}

static err_t
netif_init_cb(struct netif *nif)
{
  utcp_t *u = nif->state;
  nif->name[0] = 'u';
  nif->name[1] = 't';
  nif->mtu = (u16_t)(u->seg_max + IP_HLEN);
  nif->output = netif_output_cb;
  nif->flags = 0; /* no ARP, no broadcast */
  return ERR_OK;
}

/* ---- the stack ---- */

utcp_t *
utcp_new(evloop_t *loop, size_t seg_max)
{
  if (the_u) {
    log_warn("utcp: a second user-level TCP stack was refused (lwIP has "
             "global state)");
    return NULL;
  }
  if (seg_max > UTCP_SEG_MAX)
    seg_max = UTCP_SEG_MAX;
  if (seg_max < 536)
    return NULL;
  static int initialised;
  if (!initialised) {
    lwip_init();
    initialised = 1;
  }
  utcp_t *u = pc_zalloc(sizeof(*u));
  u->loop = loop;
  u->seg_max = seg_max;
  u->peers = hmap_new(4);
  u->next_host = 2;
  dlist_init(&u->pending);
  dlist_init(&u->dirty);
  the_u = u;
  ip4_addr_t a, m, g;
  a.addr = lwip_htonl(UTCP_NET | 1);
  m.addr = lwip_htonl(~(UTCP_NET_HOSTS - 1));
  g.addr = 0;
  if (!netif_add(&u->netif, &a, &m, &g, u, netif_init_cb, ip4_input)) {
    log_warn("utcp: lwIP refused the interface");
    hmap_free(u->peers, NULL);
    free(u);
    the_u = NULL;
    return NULL;
  }
  netif_set_up(&u->netif);
  netif_set_link_up(&u->netif);
  struct tcp_pcb *l = tcp_new_ip_type(IPADDR_TYPE_V4);
  ip_addr_t own;
  ip_addr_copy_from_ip4(own, a);
  if (l) {
    ip_set_option(l, SOF_REUSEADDR);
    if (tcp_bind(l, &own, UTCP_LISTEN_PORT) != ERR_OK) {
      tcp_abort(l);
      l = NULL;
    }
  }
  if (l)
    u->listener = tcp_listen(l);
  if (!u->listener) {
    log_warn("utcp: lwIP refused the listening connection");
    netif_remove(&u->netif);
    hmap_free(u->peers, NULL);
    free(u);
    the_u = NULL;
    return NULL;
  }
  tcp_arg(u->listener, u);
  tcp_accept(u->listener, cb_accept);
  u->timer = evloop_timer_new(loop, timer_cb, u);
  u->flush = evloop_deferred_new(loop, flush_cb, u);
  u->st.pcb_bytes = sizeof(struct tcp_pcb);
  timer_schedule(u);
  return u;
}

void
utcp_free_(utcp_t *u)
{
  if (!u)
    return;
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  while (hmap_size(u->peers)) {
    hmap_iter_init(&it, u->peers);
    if (!hmap_iter_next(&it, &k, &v))
      break;
    utcp_peer_free_(v);
  }
  run_pending(u);
  if (u->listener)
    (void)tcp_close(u->listener);
  netif_remove(&u->netif);
  evloop_timer_free(u->timer);
  evloop_deferred_free(u->flush);
  hmap_free(u->peers, NULL);
  memacct_set(MEMACCT_UTCP, 0);
  if (the_u == u)
    the_u = NULL;
  free(u);
}

/* ---- peers ---- */

utcp_peer_t *
utcp_peer_new(utcp_t *u, utcp_output_fn out, utcp_accept_fn accept,
              void *peer_arg)
{
  if (hmap_size(u->peers) >= UTCP_NET_HOSTS - 3)
    return NULL;
  uint32_t host;
  do {
    host = u->next_host++;
    if (u->next_host >= UTCP_NET_HOSTS - 1)
      u->next_host = 2;
  } while (hmap_get_u32(u->peers, UTCP_NET | host));
  utcp_peer_t *p = pc_zalloc(sizeof(*p));
  p->u = u;
  p->addr = UTCP_NET | host;
  p->out = out;
  p->accept = accept;
  p->arg = peer_arg;
  p->conns = hmap_new(4);
  dlist_init(&p->list);
  p->next_port = UTCP_PORT_MIN;
  p->syn_rate = UTCP_SYN_RATE;
  p->syn_burst = UTCP_SYN_BURST;
  p->syn_tokens = UTCP_SYN_BURST;
  p->syn_last_ms = sys_now();
  p->halfopen = hmap_new(4);
  hmap_set_u32(u->peers, p->addr, p);
  u->st.peers++;
  return p;
}

/* Drop every pcb in list whose remote address is addr (network order).
 * Aborting one unlinks and frees only that pcb (its RST goes to a peer
 * that is no longer listed, i.e. nowhere), so the next one stays valid. */
static void
abort_stale(struct tcp_pcb **list, uint32_t addr_n)
{
  struct tcp_pcb *pcb, *next;
  for (pcb = *list; pcb; pcb = next) {
    next = pcb->next;
    if (ip_2_ip4(&pcb->remote_ip)->addr == addr_n) {
      pcb_detach(pcb);
      tcp_abort(pcb);
    }
  }
}

void
utcp_peer_free_(utcp_peer_t *p)
{
  if (!p)
    return;
  utcp_t *u = p->u;
  dlist_node_t *n;
  /* Unlisted first: output during the teardown goes nowhere. */
  hmap_remove_u32(u->peers, p->addr);
  u->st.peers--;
  while ((n = dlist_first(&p->list))) {
    utcp_conn_t *c = DLIST_ENTRY(n, utcp_conn_t, node);
    conn_gone(c, "its link closed");
    if (c->pcb && !u->in_lwip) {
      pcb_detach(c->pcb);
      tcp_abort(c->pcb);
      c->pcb = NULL;
    }
    if (c->pcb) {
      /* Inside lwIP: abort on return; a late error finds the record. */
      c->state = CONN_ABORTING;
      pcb_detach(c->pcb);
      tcp_arg(c->pcb, c);
      tcp_err(c->pcb, cb_err);
      dlist_insert_tail(&u->pending, &c->node);
    } else {
      free(c);
    }
  }
  if (!u->in_lwip) {
    uint32_t a = lwip_htonl(p->addr);
    abort_stale(&tcp_active_pcbs, a);
    abort_stale(&tcp_tw_pcbs, a);
  }
  hmap_free(p->conns, NULL);
  u->mem_total -= (uint64_t)hmap_size(p->halfopen) * UTCP_HALFOPEN_COST;
  memacct_set(MEMACCT_UTCP, u->mem_total);
  hmap_free(p->halfopen, NULL);
  free(p);
}

void
utcp_peer_set_syn_limit(utcp_peer_t *p, unsigned rate, unsigned burst)
{
  p->syn_rate = rate;
  p->syn_burst = burst;
  p->syn_tokens = burst;
}

unsigned
utcp_peer_n_conns(const utcp_peer_t *p)
{
  return (unsigned)hmap_size(p->conns);
}

int
utcp_peer_input(utcp_peer_t *p, const uint8_t *seg, size_t len)
{
  utcp_t *u = p->u;
  if (len < UTCP_SEG_MIN || len > u->seg_max ||
      (size_t)(seg[12] >> 4) * 4 < UTCP_SEG_MIN ||
      (size_t)(seg[12] >> 4) * 4 > len) {
    u->st.dropped_bad++;
    return -1;
  }
  uint32_t key = (uint32_t)rd16(seg + 2) << 16 | rd16(seg);
  if (halfopen_check(p, key, seg[13]) < 0)
    return -1;
  struct pbuf *pb = pbuf_alloc(PBUF_RAW, (u16_t)(IP_HLEN + len), PBUF_RAM);
  if (!pb) {
    u->st.dropped_bad++;
    return -1;
  }
  uint8_t *b = pb->payload;
  memset(b, 0, IP_HLEN);
  b[0] = 0x45;
  wr16(b + 2, (uint16_t)(IP_HLEN + len));
  b[6] = 0x40; /* DF */
  b[8] = 64;
  b[9] = IP_PROTO_TCP;
  wr32(b + 12, p->addr);
  wr32(b + 16, UTCP_NET | 1);
  /* inet_chksum() gives the field as it lies in memory (lwIP stores it
   * with a plain u16 assignment). */
  u16_t ipsum = inet_chksum(b, IP_HLEN);
  memcpy(b + 10, &ipsum, 2);
  memcpy(b + IP_HLEN, seg, len);
  uint8_t *t = b + IP_HLEN;
  wr16(t + 16, csum_update(rd16(t + 16), NULL, b + 12, 8));
  u->st.segs_in++;
  u->st.bytes_in += len;
  u->in_lwip++;
  (void)ip4_input(pb, &u->netif); /* takes pb */
  u->in_lwip--;
  utcp_conn_t *c = hmap_get_u32(p->conns, key);
  if (c && c->state == CONN_OPEN)
    mem_sync(c);
  run_pending(u);
  timer_kick(u);
  return 0;
}

/* ---- connections ---- */

static void
conn_release(utcp_conn_t *c, conn_state_t how)
{
  utcp_t *u = the_u;
  if (!c || c->gone || c->state != CONN_OPEN)
    return;
  conn_unlink(c);
  c->state = how;
  if (c->pcb)
    pcb_detach(c->pcb);
  if (c->pcb) {
    /* Keep the record so that a late error finds it: re-attach the err
     * callback only. */
    tcp_arg(c->pcb, c);
    tcp_err(c->pcb, cb_err);
  }
  if (u->in_lwip) {
    dlist_insert_tail(&u->pending, &c->node);
    return;
  }
  conn_finish(c);
}

utcp_conn_t *
utcp_connect(utcp_peer_t *p, const utcp_conn_ops_t *ops, void *arg)
{
  utcp_t *u = p->u;
  struct tcp_pcb *pcb = NULL;
  ip_addr_t own, dst;
  ip_addr_copy_from_ip4(own, *netif_ip4_addr(&u->netif));
  IP_ADDR4(&dst, (p->addr >> 24) & 0xff, (p->addr >> 16) & 0xff,
           (p->addr >> 8) & 0xff, p->addr & 0xff);
  for (unsigned tries = 0; tries < 64; tries++) {
    if (!pcb) {
      pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
      if (!pcb)
        return NULL;
      ip_set_option(pcb, SOF_REUSEADDR);
    }
    uint16_t port = p->next_port;
    p->next_port = p->next_port == 65535 ? UTCP_PORT_MIN : p->next_port + 1;
    uint32_t key = (uint32_t)port << 16 | UTCP_LISTEN_PORT;
    if (hmap_get_u32(p->conns, key))
      continue;
    if (tcp_bind(pcb, &own, port) != ERR_OK)
      continue;
    utcp_conn_t *c = conn_new(p, pcb);
    c->ops = ops;
    c->arg = arg;
    c->key = key;
    u->in_lwip++;
    err_t e = tcp_connect(pcb, &dst, UTCP_LISTEN_PORT, NULL);
    u->in_lwip--;
    if (e != ERR_OK) {
      pcb_detach(pcb);
      tcp_abort(pcb);
      pcb = NULL;
      free(c);
      run_pending(u);
      if (e == ERR_USE)
        continue; /* that 4-tuple lingers (TIME_WAIT): next port */
      return NULL;
    }
    conn_register(c);
    u->st.conns_opened++;
    run_pending(u);
    timer_kick(u);
    return c;
  }
  if (pcb)
    tcp_abort(pcb);
  return NULL;
}

size_t
utcp_conn_room(const utcp_conn_t *c)
{
  if (!c->pcb || c->state != CONN_OPEN)
    return 0;
  /* Keep a margin on the queue length: each write may take a pbuf. */
  if (tcp_sndqueuelen(c->pcb) + 4 >= TCP_SND_QUEUELEN)
    return 0;
  return tcp_sndbuf(c->pcb);
}

int
utcp_conn_write(utcp_conn_t *c, const uint8_t *data, size_t len)
{
  utcp_t *u = the_u;
  if (!c->pcb || c->state != CONN_OPEN || len > utcp_conn_room(c) ||
      len > 0xffff)
    return -1;
  if (tcp_write(c->pcb, data, (u16_t)len, TCP_WRITE_FLAG_COPY) != ERR_OK)
    return -1;
  mem_sync(c);
  if (!c->dirty) {
    c->dirty = 1;
    dlist_insert_tail(&u->dirty, &c->dirty_node);
    evloop_deferred_schedule(u->flush);
  }
  return 0;
}

void
utcp_conn_flush(utcp_conn_t *c)
{
  utcp_t *u = the_u;
  if (!c->pcb || c->state != CONN_OPEN)
    return;
  conn_undirty(c);
  u->in_lwip++;
  (void)tcp_output(c->pcb);
  u->in_lwip--;
  run_pending(u);
}

void
utcp_conn_consumed(utcp_conn_t *c, size_t n)
{
  utcp_t *u = the_u;
  if (!c->pcb || c->state != CONN_OPEN)
    return;
  u->in_lwip++;
  while (n) {
    u16_t k = n > 0xffff ? 0xffff : (u16_t)n;
    tcp_recved(c->pcb, k);
    n -= k;
  }
  u->in_lwip--;
  run_pending(u);
}

void
utcp_conn_close(utcp_conn_t *c)
{
  conn_release(c, CONN_CLOSING);
}

void
utcp_conn_abort(utcp_conn_t *c)
{
  conn_release(c, CONN_ABORTING);
}

size_t
utcp_conn_mem(const utcp_conn_t *c)
{
  return conn_mem_now(c);
}

void
utcp_conn_ports(const utcp_conn_t *c, uint16_t *local, uint16_t *remote)
{
  *local = (uint16_t)(c->key >> 16);
  *remote = (uint16_t)c->key;
}

void
utcp_get_stats(const utcp_t *u, utcp_stats_t *out)
{
  *out = u->st;
  out->mem_bytes = u->mem_total;
}

int
utcp_conn_info(const utcp_conn_t *c, utcp_conn_info_t *out)
{
  memset(out, 0, sizeof(*out));
  const struct tcp_pcb *pcb = c->pcb;
  if (!pcb)
    return -1;
  out->mss = pcb->mss;
  out->cwnd = (uint32_t)pcb->cwnd;
  out->ssthresh = (uint32_t)pcb->ssthresh;
  out->snd_wnd = (uint32_t)pcb->snd_wnd;
  out->rcv_wnd = (uint32_t)pcb->rcv_wnd;
  for (const struct tcp_seg *s = pcb->unacked; s; s = s->next) {
    out->inflight += s->len;
    out->unacked_segs++;
  }
  for (const struct tcp_seg *s = pcb->unsent; s; s = s->next)
    out->unsent += s->len;
  out->queued = (uint32_t)(TCP_SND_BUF - tcp_sndbuf(pcb));
  out->snd_buf_max = TCP_SND_BUF;
  out->wnd_max = TCP_WND;
  /* sa is 8 x the smoothed RTT, sv 4 x its mean deviation, in ticks */
  out->rtt_ms = (uint32_t)((pcb->sa > 0 ? pcb->sa : 0) >> 3) *
                TCP_SLOW_INTERVAL;
  out->rttvar_ms = (uint32_t)((pcb->sv > 0 ? pcb->sv : 0) >> 2) *
                   TCP_SLOW_INTERVAL;
  out->rto_ms = (uint32_t)(pcb->rto > 0 ? pcb->rto : 0) * TCP_SLOW_INTERVAL;
  out->retrans = c->retrans;
  out->timeouts = c->timeouts;
  out->fast_retransmits = c->fast_retransmits;
  return 0;
}

#endif /* HAVE_LWIP */
