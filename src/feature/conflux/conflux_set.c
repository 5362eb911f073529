/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_set.c -- sequence numbers, leg choice and reordering of one
 * conflux set (see conflux_set.h).
 *
 * Legs are a small fixed array (at most CFX_MAX_LEGS), so every scheduler
 * decision is a scan of up to eight legs with one state callback each; the
 * decision runs once per multiplexed message sent. The out-of-order queue
 * is a binary min-heap of message pointers whose array doubles when
 * needed; released messages go to a free list and are reused, so after
 * the queue reached its working size nothing is allocated. The random
 * choice of the proportional splitter uses a per-set xorshift64* generator
 * seeded from the system RNG (it needs to be unpredictable to outsiders
 * only as far as the split pattern is concerned, and runs per cell).
 * The queue's memory is reported to core's MaxMemInQueues accounting by
 * the owners, charged to one leg (cfx_set_ooo_holder); that is computed
 * only when the memory handler asks, never per message.
 */
#include "feature/conflux/conflux_set.h"
#include "core/proto/relay_msg.h"
#include "lib/crypt/rand.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SWITCHes sent by every set of the process (MetricsPort). */
static uint64_t switches_total;

uint64_t
cfx_switches_total(void)
{
  return switches_total;
}

cfx_alg_t
cfx_alg_for_ux(uint8_t ux)
{
  switch (ux) {
  case CFX_UX_MIN_LATENCY:
  case CFX_UX_LOW_MEM_LATENCY:
  case CFX_UX_LOW_MEM_THROUGHPUT:
    return CFX_ALG_MINRTT;
  case CFX_UX_NO_OPINION:
  case CFX_UX_HIGH_THROUGHPUT:
  default:
    return CFX_ALG_LOWRTT;
  }
}

const char *
cfx_alg_name(cfx_alg_t alg)
{
  switch (alg) {
  case CFX_ALG_MINRTT:
    return "minrtt";
  case CFX_ALG_LOWRTT:
    return "lowrtt";
  case CFX_ALG_PROPORTIONAL:
    return "proportional";
  }
  return "?";
}

int
cfx_alg_from_name(const char *name)
{
  if (!name)
    return -1;
  if (!strcmp(name, "minrtt"))
    return CFX_ALG_MINRTT;
  if (!strcmp(name, "lowrtt"))
    return CFX_ALG_LOWRTT;
  if (!strcmp(name, "proportional"))
    return CFX_ALG_PROPORTIONAL;
  return -1;
}

cfx_set_t *
cfx_set_new(const uint8_t nonce[CFX_NONCE_LEN], cfx_alg_t alg,
            uint32_t max_ooo, cfx_leg_state_fn state_fn)
{
  cfx_set_t *set = pc_zalloc(sizeof(*set));
  memcpy(set->nonce, nonce, CFX_NONCE_LEN);
  set->alg = alg;
  set->max_ooo = max_ooo ? max_ooo : CFX_DEFAULT_MAX_OOO;
  set->state_fn = state_fn;
  crypt_rand((uint8_t *)&set->rng, sizeof(set->rng));
  if (!set->rng)
    set->rng = 0x9e3779b97f4a7c15ULL;
  return set;
}

/* ---- the sender's reordering window ------------------------------- */

#define UA_MAX_CAP 65536u /* more in flight than this: forget the oldest */

static void
leg_free(cfx_leg_t *leg)
{
  memacct_sub(MEMACCT_CONFLUX, (size_t)leg->ua_cap * sizeof(uint64_t));
  free(leg->unacked);
  free(leg);
}

static void
ua_push(cfx_leg_t *leg, uint64_t seq)
{
  if (leg->ua_len == leg->ua_cap) {
    if (leg->ua_cap >= UA_MAX_CAP) {
      leg->ua_head = (leg->ua_head + 1) % leg->ua_cap;
      leg->ua_len--;
    } else {
      uint32_t cap = leg->ua_cap ? leg->ua_cap * 2 : 64;
      uint64_t *n = pc_malloc((size_t)cap * sizeof(*n));
      for (uint32_t i = 0; i < leg->ua_len; i++)
        n[i] = leg->unacked[(leg->ua_head + i) % leg->ua_cap];
      free(leg->unacked);
      memacct_add(MEMACCT_CONFLUX,
                  (size_t)(cap - leg->ua_cap) * sizeof(uint64_t));
      leg->unacked = n;
      leg->ua_cap = cap;
      leg->ua_head = 0;
    }
  }
  leg->unacked[(leg->ua_head + leg->ua_len) % leg->ua_cap] = seq;
  leg->ua_len++;
}

/* Forget what the leg's controller no longer counts in flight. */
static void
ua_sync(cfx_leg_t *leg, uint64_t inflight)
{
  while (leg->ua_len > inflight) {
    leg->ua_head = (leg->ua_head + 1) % leg->ua_cap;
    leg->ua_len--;
  }
}

/* The leg holding the oldest unacknowledged DATA message, if the newest
 * number is CFX_SEND_WINDOW or more past it; else -1. */
static int
window_laggard(const cfx_set_t *set)
{
  int lag = -1;
  uint64_t oldest = UINT64_MAX;
  for (int i = 0; i < set->n_legs; i++) {
    const cfx_leg_t *l = set->legs[i];
    if (l->ua_len && l->unacked[l->ua_head] < oldest) {
      oldest = l->unacked[l->ua_head];
      lag = i;
    }
  }
  if (lag < 0 || cfx_set_max_sent(set) + 1 - oldest < CFX_SEND_WINDOW)
    return -1;
  return lag;
}

void
cfx_set_free_(cfx_set_t *set)
{
  if (!set)
    return;
  for (int i = 0; i < set->n_legs; i++)
    leg_free(set->legs[i]);
  for (uint32_t i = 0; i < set->n_queued; i++)
    free(set->heap[i]);
  free(set->heap);
  memacct_sub(MEMACCT_CONFLUX,
              (size_t)(set->n_queued + set->n_free) * sizeof(cfx_msg_t) +
                  (size_t)set->heap_cap * sizeof(*set->heap));
  while (set->free_list) {
    cfx_msg_t *m = set->free_list;
    set->free_list = m->next_free;
    free(m);
  }
  pc_memwipe(set->nonce, sizeof(set->nonce));
  free(set);
}

uint64_t
cfx_set_max_sent(const cfx_set_t *set)
{
  uint64_t m = 0;
  for (int i = 0; i < set->n_legs; i++)
    if (set->legs[i]->last_seq_sent > m)
      m = set->legs[i]->last_seq_sent;
  return m;
}

uint64_t
cfx_set_max_recv(const cfx_set_t *set)
{
  uint64_t m = 0;
  for (int i = 0; i < set->n_legs; i++)
    if (set->legs[i]->last_seq_recv > m)
      m = set->legs[i]->last_seq_recv;
  return m;
}

int
cfx_set_link_loses_data(const cfx_set_t *set, uint64_t peer_last_seq_sent)
{
  uint64_t got = cfx_set_max_recv(set);
  if (got < set->last_seq_delivered)
    got = set->last_seq_delivered;
  return peer_last_seq_sent > got;
}

cfx_leg_t *
cfx_set_add_leg(cfx_set_t *set, void *handle, uint64_t peer_last_seq_sent,
                uint64_t peer_last_seq_recv)
{
  if (set->n_legs >= CFX_MAX_LEGS)
    return NULL;
  cfx_leg_t *leg = pc_zalloc(sizeof(*leg));
  leg->handle = handle;
  leg->last_seq_recv = peer_last_seq_sent;
  leg->last_seq_sent = peer_last_seq_recv;
  set->legs[set->n_legs++] = leg;
  return leg;
}

static int
leg_index(const cfx_set_t *set, const cfx_leg_t *leg)
{
  for (int i = 0; i < set->n_legs; i++)
    if (set->legs[i] == leg)
      return i;
  return -1;
}

cfx_leg_t *
cfx_set_find_leg(const cfx_set_t *set, const void *handle)
{
  for (int i = 0; i < set->n_legs; i++)
    if (set->legs[i]->handle == handle)
      return set->legs[i];
  return NULL;
}

int
cfx_set_remove_leg(cfx_set_t *set, cfx_leg_t *leg,
                   const cfx_leg_state_t *st, const char **why)
{
  int idx = leg_index(set, leg);
  *why = NULL;
  if (idx < 0)
    return 0;
  int teardown = 0;
  if (st && st->sendme_inc && st->inflight >= st->sendme_inc) {
    teardown = 1;
    *why = "the leg closed with data in flight";
  }
  set->legs[idx] = set->legs[set->n_legs - 1];
  set->legs[--set->n_legs] = NULL;
  if (set->n_legs > 0 && (cfx_set_max_sent(set) < leg->last_seq_sent ||
                          cfx_set_max_recv(set) < leg->last_seq_recv)) {
    teardown = 1;
    *why = "the leg was ahead of every other leg in sequence numbers";
  }
  if (set->curr == leg) {
    set->curr = NULL;
    teardown = 1;
    *why = "the current sending leg closed";
  }
  if (set->prev == leg)
    set->prev = NULL;
  leg_free(leg);
  return teardown;
}

/* ---- schedulers -------------------------------------------------- */

uint64_t
cfx_set_leg_rtt(const cfx_set_t *set, const cfx_leg_t *leg)
{
  cfx_leg_state_t st;
  memset(&st, 0, sizeof(st));
  set->state_fn(leg->handle, &st);
  return st.rtt_us ? st.rtt_us : leg->link_rtt_us;
}

typedef struct {
  cfx_leg_state_t st;
  uint64_t rtt;   /* UINT64_MAX: unknown */
  int ready;
} leg_view_t;

static void
view_legs(cfx_set_t *set, leg_view_t *v)
{
  for (int i = 0; i < set->n_legs; i++) {
    memset(&v[i].st, 0, sizeof(v[i].st));
    set->state_fn(set->legs[i]->handle, &v[i].st);
    uint64_t rtt = v[i].st.rtt_us ? v[i].st.rtt_us : set->legs[i]->link_rtt_us;
    v[i].rtt = rtt ? rtt : UINT64_MAX;
    v[i].ready = v[i].st.cwnd > v[i].st.inflight && !v[i].st.blocked;
    ua_sync(set->legs[i], v[i].st.inflight);
  }
}

static uint64_t
rng_next(cfx_set_t *set)
{
  uint64_t x = set->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  set->rng = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* Index of the leg the scheduler wants, or -1. */
static int
decide(cfx_set_t *set, const leg_view_t *v)
{
  int best = -1;
  switch (set->alg) {
  case CFX_ALG_MINRTT:
    for (int i = 0; i < set->n_legs; i++)
      if (best < 0 || v[i].rtt < v[best].rtt)
        best = i;
    return best >= 0 && v[best].ready ? best : -1;
  case CFX_ALG_LOWRTT:
    for (int i = 0; i < set->n_legs; i++)
      if (v[i].ready && (best < 0 || v[i].rtt < v[best].rtt))
        best = i;
    return best;
  case CFX_ALG_PROPORTIONAL: {
    /* The drawn leg keeps its burst while it has room (conflux_set.h). */
    int cur = leg_index(set, set->curr);
    if (cur >= 0 && set->burst_left && v[cur].ready)
      return cur;
    /* Weight: cells per second the leg's window allows (cwnd / RTT),
     * scaled to fit. Unmeasured legs only when nothing else can send. */
    uint64_t w[CFX_MAX_LEGS], total = 0;
    int any_unmeasured = -1;
    for (int i = 0; i < set->n_legs; i++) {
      w[i] = 0;
      if (!v[i].ready)
        continue;
      if (v[i].rtt == UINT64_MAX) {
        if (any_unmeasured < 0)
          any_unmeasured = i;
        continue;
      }
      uint64_t rtt_ms10 = v[i].rtt / 100 + 1; /* 0.1 ms units */
      uint64_t cwnd = v[i].st.cwnd < (1u << 20) ? v[i].st.cwnd : (1u << 20);
      w[i] = cwnd * 10000 / rtt_ms10 + 1;
      total += w[i];
    }
    set->burst_left = CFX_PROP_BURST;
    if (!total)
      return any_unmeasured;
    uint64_t r = rng_next(set) % total;
    for (int i = 0; i < set->n_legs; i++) {
      if (r < w[i])
        return i;
      r -= w[i];
    }
    return -1; /* not reached */
  }
  }
  return -1;
}

static cfx_leg_t *
first_leg(cfx_set_t *set, const leg_view_t *v)
{
  int best = 0;
  for (int i = 1; i < set->n_legs; i++)
    if (v[i].rtt < v[best].rtt)
      best = i;
  return set->legs[best];
}

cfx_leg_t *
cfx_set_pick(cfx_set_t *set, uint8_t command, int *send_switch,
             uint32_t *switch_seq)
{
  *send_switch = 0;
  *switch_seq = 0;
  if (set->n_legs == 0)
    return NULL;
  leg_view_t v[CFX_MAX_LEGS];
  view_legs(set, v);
  if (!set->curr)
    set->curr = first_leg(set, v);
  int i = decide(set, v);
  if (command == RELAY_COMMAND_DATA) {
    int lag = window_laggard(set);
    if (lag >= 0 && i != lag) {
      set->n_window_waits++;
      i = v[lag].ready ? lag : -1;
    }
  }
  if (i < 0)
    return command == RELAY_COMMAND_DATA ? NULL : set->curr;
  cfx_leg_t *leg = set->legs[i];
  if (leg != set->curr) {
    uint64_t top = cfx_set_max_sent(set);
    uint64_t rel = top - leg->last_seq_sent;
    if (rel > UINT32_MAX) {
      *send_switch = -1;
      return NULL;
    }
    set->prev = set->curr;
    set->curr = leg;
    leg->last_seq_sent = top;
    *send_switch = 1;
    *switch_seq = (uint32_t)rel;
    set->n_switches++;
    switches_total++;
  }
  return leg;
}

size_t
cfx_set_ooo_bound_bytes(const cfx_set_t *set)
{
  return set ? (size_t)set->max_ooo * CFX_BODY_MAX : 0;
}

int
cfx_set_can_send_data(cfx_set_t *set)
{
  if (set->n_legs == 0)
    return 0;
  leg_view_t v[CFX_MAX_LEGS];
  view_legs(set, v);
  int lag = window_laggard(set);
  if (lag >= 0)
    return v[lag].ready;
  switch (set->alg) {
  case CFX_ALG_MINRTT:
    return decide(set, v) >= 0;
  default:
    for (int i = 0; i < set->n_legs; i++)
      if (v[i].ready)
        return 1;
    return 0;
  }
}

void
cfx_set_note_sent(cfx_set_t *set, cfx_leg_t *leg, uint8_t command)
{
  leg->last_seq_sent++;
  if (command == RELAY_COMMAND_DATA) {
    ua_push(leg, leg->last_seq_sent);
    if (set->burst_left)
      set->burst_left--;
  }
  leg->n_sent++;
  set->n_sent++;
}

/* ---- receiving --------------------------------------------------- */

int
cfx_set_on_switch(cfx_set_t *set, cfx_leg_t *leg, uint32_t relative)
{
  (void)set;
  if (leg->last_seq_recv > UINT64_MAX - relative)
    return -1;
  leg->last_seq_recv += relative;
  return 0;
}

static void
heap_swap(cfx_msg_t **h, uint32_t a, uint32_t b)
{
  cfx_msg_t *t = h[a];
  h[a] = h[b];
  h[b] = t;
}

static void
heap_push(cfx_set_t *set, cfx_msg_t *m)
{
  if (set->n_queued == set->heap_cap) {
    uint32_t cap = set->heap_cap ? 2 * set->heap_cap : 64;
    set->heap = pc_realloc(set->heap, (size_t)cap * sizeof(*set->heap));
    memacct_add(MEMACCT_CONFLUX,
                (size_t)(cap - set->heap_cap) * sizeof(*set->heap));
    set->heap_cap = cap;
  }
  uint32_t i = set->n_queued++;
  set->heap[i] = m;
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (set->heap[p]->seq <= set->heap[i]->seq)
      break;
    heap_swap(set->heap, p, i);
    i = p;
  }
}

static cfx_msg_t *
heap_pop(cfx_set_t *set)
{
  cfx_msg_t *top = set->heap[0];
  set->heap[0] = set->heap[--set->n_queued];
  uint32_t i = 0, n = set->n_queued;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && set->heap[l]->seq < set->heap[m]->seq)
      m = l;
    if (r < n && set->heap[r]->seq < set->heap[m]->seq)
      m = r;
    if (m == i)
      break;
    heap_swap(set->heap, i, m);
    i = m;
  }
  return top;
}

int
cfx_set_on_msg(cfx_set_t *set, cfx_leg_t *leg, uint8_t command,
               uint16_t stream_id, const uint8_t *body, uint16_t len)
{
  if (leg->last_seq_recv == UINT64_MAX)
    return CFX_RECV_OLD;
  uint64_t seq = ++leg->last_seq_recv;
  leg->n_recv++;
  if (seq == set->last_seq_delivered + 1) {
    set->last_seq_delivered = seq;
    return CFX_RECV_DELIVER;
  }
  if (seq <= set->last_seq_delivered)
    return CFX_RECV_OLD;
  if (set->n_queued >= set->max_ooo)
    return CFX_RECV_FULL;
  cfx_msg_t *m = set->free_list;
  if (m) {
    set->free_list = m->next_free;
    set->n_free--;
  } else {
    m = pc_malloc(sizeof(*m));
    memacct_add(MEMACCT_CONFLUX, sizeof(*m));
  }
  m->seq = seq;
  m->command = command;
  m->stream_id = stream_id;
  if (len > CFX_BODY_MAX)
    len = CFX_BODY_MAX;
  m->len = len;
  m->next_free = NULL;
  if (len)
    memcpy(m->body, body, len);
  heap_push(set, m);
  if (set->n_queued > set->max_queued_seen)
    set->max_queued_seen = set->n_queued;
  return CFX_RECV_QUEUED;
}

int
cfx_set_next(cfx_set_t *set, cfx_msg_t **out)
{
  *out = NULL;
  if (!set->n_queued)
    return 0;
  uint64_t top = set->heap[0]->seq;
  if (top <= set->last_seq_delivered)
    return -1;
  if (top != set->last_seq_delivered + 1)
    return 0;
  *out = heap_pop(set);
  set->last_seq_delivered = top;
  return 1;
}

void
cfx_set_msg_release(cfx_set_t *set, cfx_msg_t *msg)
{
  /* Keep what the queue needed at most, so a set in its steady state
   * does not allocate; a burst beyond that is returned. */
  if (set->n_free + set->n_queued >= set->max_queued_seen) {
    memacct_sub(MEMACCT_CONFLUX, sizeof(*msg));
    free(msg);
    return;
  }
  msg->next_free = set->free_list;
  set->free_list = msg;
  set->n_free++;
}

size_t
cfx_set_ooo_bytes(const cfx_set_t *set)
{
  if (!set->n_queued)
    return 0;
  return (size_t)(set->n_queued + set->n_free) * sizeof(cfx_msg_t) +
         (size_t)set->heap_cap * sizeof(*set->heap);
}

const cfx_leg_t *
cfx_set_ooo_holder(const cfx_set_t *set)
{
  const cfx_leg_t *h = NULL;
  if (!set->n_queued)
    return NULL;
  for (int i = 0; i < set->n_legs; i++)
    if (!h || set->legs[i]->last_seq_recv > h->last_seq_recv)
      h = set->legs[i];
  return h;
}

void
cfx_set_describe(const cfx_set_t *set, char *buf, size_t len)
{
  /* No nonce: it is the secret that binds the legs (section 2.2). */
  int n = snprintf(buf, len,
                   "%d leg%s, %s, delivered %" PRIu64
                   ", sent %" PRIu64 ", queued %u (max %u, bound %u), "
                   "%" PRIu64 " switches, %" PRIu64 " window waits",
                   set->n_legs, set->n_legs == 1 ? "" : "s",
                   cfx_alg_name(set->alg), set->last_seq_delivered,
                   set->n_sent, set->n_queued,
                   set->max_queued_seen, set->max_ooo, set->n_switches,
                   set->n_window_waits);
  for (int i = 0; i < set->n_legs && n > 0 && (size_t)n < len; i++) {
    const cfx_leg_t *l = set->legs[i];
    n += snprintf(buf + n, len - (size_t)n,
                  "; leg %d sent %" PRIu64 " recv %" PRIu64
                  " rtt %" PRIu64 " ms",
                  i, l->n_sent, l->n_recv,
                  cfx_set_leg_rtt(set, l) / 1000);
  }
}
