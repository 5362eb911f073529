/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap_sim.c -- BackTap over a simulated chain of relays (see
 * backtap_sim.h for the model).
 *
 * Design: one min-heap of events ordered by (time, insertion number), so
 * equal times run in the order they were scheduled and a run is exactly
 * reproducible. Events are a record arriving at a link, a link's timer
 * (each link holds at most one live timer; a newer request bumps a
 * generation number and the stale event is ignored when it fires), the
 * bottleneck relay's next service time, and a 1 ms sampler for the
 * figures. The circuit layer above BackTap is played by tiny per-node
 * handlers: the source packs a counter and its injection time into each
 * cell, a relay queues delivered cells (its fused queue) and moves them to
 * the next hop when that flow may send (then reports them forwarded, which
 * sends the FWD), the sink checks the counter and reports each cell
 * forwarded at once. Randomness is a xorshift generator seeded by cfg.
 */
#include "tools/btsim/backtap_sim.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/container/minheap.h"
#include "lib/malloc/alloc.h"

enum { EV_ARRIVE, EV_TIMER, EV_SERVICE, EV_SAMPLE };

typedef struct ev_t {
  uint64_t t, order;
  int heap_idx;
  int kind;
  unsigned hop;
  int side;      /* EV_ARRIVE: receiving side; EV_TIMER: the link's side */
  uint64_t gen;
  backtap_rec_type_t type;
  uint8_t *rec;
  size_t len;
} ev_t;

typedef struct sim_t sim_t;

typedef struct simlink_t {
  sim_t *sim;
  unsigned hop;
  int side; /* 0: at node hop (sends downstream), 1: at node hop+1 */
  backtap_link_t *bt;
  backtap_flow_t *flow[BTSIM_MAX_CIRCS]; /* by circuit */
  uint64_t timer_gen;
} simlink_t;

typedef struct qcell_t {
  uint32_t seq;
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
} qcell_t;

typedef struct cqueue_t {
  qcell_t *q;
  size_t cap, head, len;
} cqueue_t;

typedef struct node_t {
  sim_t *sim;
  unsigned idx;
  cqueue_t cq[BTSIM_MAX_CIRCS]; /* fused queue per circuit */
  unsigned rr;                  /* next circuit to serve */
  uint64_t next_service;
  int service_pending;
} node_t;

struct sim_t {
  const btsim_cfg_t *cfg;
  btsim_result_t *res;
  uint64_t now, order, rng;
  minheap_t *events;
  simlink_t link[BTSIM_MAX_HOPS][2];
  node_t node[BTSIM_MAX_HOPS + 1];
  uint64_t chan_free[BTSIM_MAX_HOPS][2];
  uint64_t next_counter[BTSIM_MAX_CIRCS]; /* sink's expectation */
  uint64_t injected[BTSIM_MAX_CIRCS], delivered[BTSIM_MAX_CIRCS];
  uint64_t meas_from_circ[BTSIM_MAX_CIRCS], meas_to_circ[BTSIM_MAX_CIRCS];
  uint64_t delay_sum, delay_n;
  uint64_t samples;
  double backlog_sum;
  double swnd_sum[BTSIM_MAX_HOPS], queue_sum[BTSIM_MAX_HOPS];
  uint64_t meas_from_delivered, meas_to_delivered;
  int meas_started, meas_done;
  uint64_t *sends; /* source send times after the slowdown */
  size_t n_sends, cap_sends;
};

static int
ev_cmp(const void *a, const void *b)
{
  const ev_t *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static ev_t *
ev_add(sim_t *s, uint64_t t, int kind)
{
  ev_t *e = pc_zalloc(sizeof(*e));
  e->t = t;
  e->order = s->order++;
  e->kind = kind;
  e->heap_idx = MINHEAP_IDX_NONE;
  minheap_add(s->events, e);
  return e;
}

static double
rnd(sim_t *s)
{
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return (double)(s->rng >> 11) / (double)(1ULL << 53);
}

/* ---- lower layer: the simulated links ---- */

static uint64_t
lo_now(void *arg)
{
  return ((simlink_t *)arg)->sim->now;
}

static void
lo_send(void *arg, backtap_rec_type_t type, const uint8_t *rec, size_t len)
{
  simlink_t *l = arg;
  sim_t *s = l->sim;
  const btsim_cfg_t *c = s->cfg;
  int dir = l->side; /* side 0 sends downstream (dir 0) */
  if (c->blackhole_hop == (int)l->hop && s->now >= c->blackhole_from_us)
    return;
  if (c->drop && c->drop(c->drop_arg, l->hop, dir, type, rec, len))
    return;
  if (c->loss > 0 && rnd(s) < c->loss)
    return;
  uint64_t depart = s->now;
  uint64_t bps = c->hop_bps[l->hop] ? c->hop_bps[l->hop] : c->link_bps;
  if (bps) {
    uint64_t tx = (uint64_t)len * 8 * 1000000 / bps;
    uint64_t *free_at = &s->chan_free[l->hop][dir];
    uint64_t start = *free_at > s->now ? *free_at : s->now;
    if (c->link_buffer && tx &&
        (start - s->now) / tx >= c->link_buffer)
      return; /* drop-tail */
    depart = start + tx;
    *free_at = depart;
  }
  ev_t *e = ev_add(s, depart + c->delay_us[l->hop], EV_ARRIVE);
  e->hop = l->hop;
  e->side = !l->side;
  e->type = type;
  e->rec = pc_memdup(rec, len);
  e->len = len;
}

static void
lo_set_timer(void *arg, uint64_t deadline)
{
  simlink_t *l = arg;
  l->timer_gen++;
  if (deadline == UINT64_MAX)
    return;
  ev_t *e = ev_add(l->sim, deadline < l->sim->now ? l->sim->now : deadline,
                   EV_TIMER);
  e->hop = l->hop;
  e->side = l->side;
  e->gen = l->timer_gen;
}

static const backtap_lower_ops_t lower_ops = {
  .now_us = lo_now, .send_record = lo_send, .set_timer = lo_set_timer,
};

/* ---- upper layer: source, relays, sink ---- */

static void
source_pump(sim_t *s)
{
  const btsim_cfg_t *c = s->cfg;
  int progress = 1;
  /* round robin over the circuits that have started */
  while (progress) {
    progress = 0;
    for (unsigned k = 0; k < c->n_circuits; k++) {
      backtap_flow_t *f = s->link[0][0].flow[k];
      if (s->now < c->start_us[k] ||
          (c->total_cells && s->res->injected >= c->total_cells) ||
          !backtap_flow_can_send(f))
        continue;
      uint8_t cell[BACKTAP_LINK_CELL_LEN];
      memset(cell, 0, sizeof(cell));
      cell[4] = 3; /* RELAY */
      set_u64(cell + 5, s->injected[k]);
      set_u64(cell + 13, s->now);
      if (backtap_flow_send(f, cell) < 0)
        continue;
      progress = 1;
      s->injected[k]++;
      s->res->injected++;
      if (c->slowdown_at_us && s->now >= c->slowdown_at_us) {
        if (s->n_sends == s->cap_sends) {
          s->cap_sends = s->cap_sends ? s->cap_sends * 2 : 1024;
          s->sends = pc_realloc(s->sends, s->cap_sends * sizeof(uint64_t));
        }
        s->sends[s->n_sends++] = s->now;
      }
    }
  }
}

static uint64_t
node_cps(sim_t *s)
{
  const btsim_cfg_t *c = s->cfg;
  if (c->slowdown_at_us && s->now >= c->slowdown_at_us)
    return c->slowdown_cps;
  return c->bottleneck_cps;
}

static unsigned
flow_circ(const backtap_flow_t *f)
{
  return backtap_flow_circid(f) & (BTSIM_MAX_CIRCS - 1);
}

static unsigned
node_queued(const node_t *n)
{
  unsigned q = 0;
  for (unsigned k = 0; k < BTSIM_MAX_CIRCS; k++)
    q += (unsigned)n->cq[k].len;
  return q;
}

/* Move queued cells to the next hop, one per circuit in turn (the paper's
 * round robin), as far as the windows and the bottleneck's pace allow. */
static void
relay_forward(node_t *n)
{
  sim_t *s = n->sim;
  const btsim_cfg_t *c = s->cfg;
  int limited = c->bottleneck_node == n->idx && c->bottleneck_cps;
  int progress = 1;
  while (progress) {
    progress = 0;
    for (unsigned i = 0; i < c->n_circuits; i++) {
      unsigned k = (n->rr + i) % c->n_circuits;
      cqueue_t *q = &n->cq[k];
      backtap_flow_t *out = s->link[n->idx][0].flow[k];
      backtap_flow_t *in = s->link[n->idx - 1][1].flow[k];
      if (!q->len)
        continue;
      if (limited && s->now < n->next_service) {
        if (!n->service_pending) {
          n->service_pending = 1;
          ev_t *e = ev_add(s, n->next_service, EV_SERVICE);
          e->hop = n->idx;
        }
        return;
      }
      if (!backtap_flow_can_send(out))
        continue;
      qcell_t *qc = &q->q[q->head];
      backtap_flow_send(out, qc->cell);
      backtap_flow_forwarded(in, qc->seq);
      q->head = (q->head + 1) % q->cap;
      q->len--;
      n->rr = (k + 1) % c->n_circuits;
      progress = 1;
      if (limited) {
        uint64_t base = n->next_service > s->now ? n->next_service : s->now;
        n->next_service = base + 1000000 / node_cps(s);
      }
      break;
    }
  }
}

static void
up_deliver(void *arg, backtap_flow_t *flow, uint32_t seq,
           const uint8_t *cell)
{
  node_t *n = arg;
  sim_t *s = n->sim;
  unsigned k = flow_circ(flow);
  s->link[n->idx - 1][1].flow[k] = flow;
  if (n->idx == s->cfg->n_hops) {
    uint64_t ctr = get_u64(cell + 5);
    if (ctr != s->next_counter[k])
      s->res->in_order = 0;
    s->next_counter[k] = ctr + 1;
    s->delivered[k]++;
    s->res->delivered++;
    if (s->meas_started && !s->meas_done) {
      s->delay_sum += s->now - get_u64(cell + 13);
      s->delay_n++;
    }
    backtap_flow_forwarded(flow, seq);
    return;
  }
  cqueue_t *q = &n->cq[k];
  if (q->len == q->cap) {
    size_t ncap = q->cap ? q->cap * 2 : 64;
    qcell_t *nq = pc_calloc(ncap, sizeof(*nq));
    for (size_t i = 0; i < q->len; i++)
      nq[i] = q->q[(q->head + i) % q->cap];
    free(q->q);
    q->q = nq;
    q->cap = ncap;
    q->head = 0;
  }
  qcell_t *qc = &q->q[(q->head + q->len) % q->cap];
  qc->seq = seq;
  memcpy(qc->cell, cell, BACKTAP_LINK_CELL_LEN);
  q->len++;
  relay_forward(n);
}

static void
up_writable(void *arg, backtap_flow_t *flow)
{
  node_t *n = arg;
  (void)flow;
  if (n->idx == 0)
    source_pump(n->sim);
  else
    relay_forward(n);
}

static int
up_flow_open(void *arg, backtap_link_t *link, uint32_t circid,
             void **flow_arg)
{
  (void)link;
  (void)circid;
  *flow_arg = arg;
  return 0;
}

static void
up_link_failed(void *arg, backtap_link_t *link, const char *why)
{
  node_t *n = arg;
  (void)link;
  (void)why;
  if (!n->sim->res->link_failed) {
    n->sim->res->link_failed = 1;
    n->sim->res->failed_hop = n->idx;
  }
}

static void
up_flow_failed(void *arg, backtap_flow_t *flow, const char *why)
{
  node_t *n = arg;
  sim_t *s = n->sim;
  /* the engine forgets the flow: so do we (the run stops here) */
  for (unsigned h = 0; h < s->cfg->n_hops; h++)
    for (int side = 0; side < 2; side++)
      for (unsigned k = 0; k < BTSIM_MAX_CIRCS; k++)
        if (s->link[h][side].flow[k] == flow)
          s->link[h][side].flow[k] = NULL;
  up_link_failed(arg, NULL, why);
}

static const backtap_upper_ops_t upper_ops = {
  .flow_open = up_flow_open, .deliver = up_deliver,
  .writable = up_writable, .link_failed = up_link_failed,
  .flow_failed = up_flow_failed,
};

/* ---- measurement ---- */

static void
sample(sim_t *s)
{
  const btsim_cfg_t *c = s->cfg;
  btsim_result_t *r = s->res;
  uint64_t to = c->measure_to_us ? c->measure_to_us : c->duration_us;
  if (s->now >= c->measure_from_us && !s->meas_started) {
    s->meas_started = 1;
    s->meas_from_delivered = r->delivered;
    memcpy(s->meas_from_circ, s->delivered, sizeof(s->delivered));
  }
  if (s->now >= to && s->meas_started && !s->meas_done) {
    s->meas_done = 1;
    s->meas_to_delivered = r->delivered;
    memcpy(s->meas_to_circ, s->delivered, sizeof(s->delivered));
  }
  /* a circuit whose start time has come */
  for (unsigned k = 0; k < c->n_circuits; k++)
    if (c->start_us[k] && s->now >= c->start_us[k] &&
        s->now < c->start_us[k] + 1000)
      source_pump(s);
  for (unsigned h = 0; h < c->n_hops; h++) {
    size_t m = backtap_link_mem_bytes(s->link[h][0].bt);
    if (m > r->hop[h].mem_max)
      r->hop[h].mem_max = m;
    unsigned q = h + 1 < c->n_hops ? node_queued(&s->node[h + 1]) : 0;
    if (s->meas_started && q > r->hop[h].queue_max)
      r->hop[h].queue_max = q;
    if (s->meas_started && !s->meas_done) {
      s->swnd_sum[h] += backtap_flow_swnd(s->link[h][0].flow[0]);
      s->queue_sum[h] += q;
    }
  }
  if (s->meas_started && !s->meas_done) {
    s->backlog_sum += (double)(r->injected - r->delivered);
    s->samples++;
  }
}

static void
backpressure(sim_t *s)
{
  const btsim_cfg_t *c = s->cfg;
  s->res->backpressure_us = -1;
  if (!c->slowdown_at_us || !c->slowdown_cps)
    return;
  /* first send after which 10 consecutive sends span at least the time
   * 10 cells take at 1.25x the new rate */
  const size_t k = 10;
  uint64_t span = (uint64_t)(k * 1000000.0 / (1.25 * c->slowdown_cps));
  for (size_t i = 0; i + k < s->n_sends; i++) {
    if (s->sends[i + k] - s->sends[i] >= span) {
      s->res->backpressure_us = (int64_t)(s->sends[i] - c->slowdown_at_us);
      return;
    }
  }
}

void
btsim_cfg_default(btsim_cfg_t *c)
{
  memset(c, 0, sizeof(*c));
  c->n_hops = 3;
  c->delay_us[0] = 10000;
  c->delay_us[1] = 20000;
  c->delay_us[2] = 10000;
  c->link_bps = 100000000;
  c->link_buffer = 1000;
  c->bottleneck_node = 2;
  c->bottleneck_cps = 2930; /* 1500 kB/s of 512-byte cells */
  c->duration_us = 10000000;
  c->measure_from_us = 5000000;
  c->seed = 1;
  c->blackhole_hop = -1;
  c->n_circuits = 1;
  backtap_params_default(&c->params);
}

int
btsim_run(const btsim_cfg_t *c, btsim_result_t *res)
{
  if (c->n_hops < 1 || c->n_hops > BTSIM_MAX_HOPS || c->n_circuits < 1 ||
      c->n_circuits > BTSIM_MAX_CIRCS ||
      (c->bottleneck_node && (c->bottleneck_node >= c->n_hops ||
                              !c->bottleneck_cps)) ||
      (c->slowdown_at_us && !c->slowdown_cps))
    return -1;
  sim_t *s = pc_zalloc(sizeof(*s));
  memset(res, 0, sizeof(*res));
  res->in_order = 1;
  s->cfg = c;
  s->res = res;
  s->rng = c->seed ? c->seed : 1;
  s->events = minheap_new(ev_cmp, offsetof(ev_t, heap_idx));
  for (unsigned i = 0; i <= c->n_hops; i++) {
    s->node[i].sim = s;
    s->node[i].idx = i;
  }
  for (unsigned h = 0; h < c->n_hops; h++) {
    for (int side = 0; side < 2; side++) {
      simlink_t *l = &s->link[h][side];
      l->sim = s;
      l->hop = h;
      l->side = side;
      l->bt = backtap_link_new(&c->params, &lower_ops, l, &upper_ops,
                               &s->node[h + side]);
    }
    /* the upstream end opens each circuit; the other end accepts its SYN.
     * The low bits of the circuit ID say which circuit it is. */
    for (unsigned k = 0; k < c->n_circuits; k++)
      s->link[h][0].flow[k] = backtap_flow_new(
          s->link[h][0].bt, 0x80000000u + (h << 8) + k, &s->node[h]);
  }
  ev_add(s, 0, EV_SAMPLE);
  source_pump(s);
  ev_t *e;
  while ((e = minheap_pop(s->events))) {
    if (e->t > c->duration_us) {
      free(e->rec);
      free(e);
      break;
    }
    s->now = e->t;
    switch (e->kind) {
    case EV_ARRIVE:
      if (!(c->blackhole_hop == (int)e->hop && e->side == 1 &&
            s->now >= c->blackhole_from_us))
        backtap_link_input(s->link[e->hop][e->side].bt, e->type, e->rec,
                           e->len);
      break;
    case EV_TIMER:
      if (e->gen == s->link[e->hop][e->side].timer_gen)
        backtap_link_timer(s->link[e->hop][e->side].bt);
      break;
    case EV_SERVICE:
      s->node[e->hop].service_pending = 0;
      relay_forward(&s->node[e->hop]);
      break;
    case EV_SAMPLE:
      sample(s);
      ev_add(s, s->now + 1000, EV_SAMPLE);
      break;
    }
    free(e->rec);
    free(e);
    if (c->total_cells && res->delivered == c->total_cells)
      break;
    if (res->link_failed)
      break;
  }
  res->end_us = s->now;
  if (s->meas_started && !s->meas_done) {
    s->meas_done = 1;
    s->meas_to_delivered = res->delivered;
    memcpy(s->meas_to_circ, s->delivered, sizeof(s->delivered));
  }
  uint64_t to = c->measure_to_us ? c->measure_to_us : c->duration_us;
  if (to > s->now)
    to = s->now;
  if (s->meas_started && to > c->measure_from_us) {
    double secs = (double)(to - c->measure_from_us) / 1e6;
    double sum = 0, sq = 0;
    res->rate_cps =
        (double)(s->meas_to_delivered - s->meas_from_delivered) / secs;
    for (unsigned k = 0; k < c->n_circuits; k++) {
      double x = (double)(s->meas_to_circ[k] - s->meas_from_circ[k]) / secs;
      res->circ_rate_cps[k] = x;
      sum += x;
      sq += x * x;
    }
    if (sq > 0)
      res->jain = sum * sum / (c->n_circuits * sq);
  }
  if (s->samples)
    res->backlog_mean = s->backlog_sum / (double)s->samples;
  if (s->delay_n)
    res->delay_mean_us = (double)s->delay_sum / (double)s->delay_n;
  if (c->total_cells && res->delivered != c->total_cells)
    res->in_order = 0;
  backpressure(s);
  for (unsigned h = 0; h < c->n_hops; h++) {
    btsim_hop_result_t *hr = &res->hop[h];
    hr->snd = *backtap_link_stats(s->link[h][0].bt);
    hr->rcv = *backtap_link_stats(s->link[h][1].bt);
    if (s->link[h][0].flow[0])
      hr->swnd_final = backtap_flow_swnd(s->link[h][0].flow[0]);
    hr->base_rtt_us = backtap_link_base_rtt_us(s->link[h][0].bt);
    if (s->samples) {
      hr->swnd_mean = s->swnd_sum[h] / (double)s->samples;
      hr->queue_mean = s->queue_sum[h] / (double)s->samples;
    }
  }
  while ((e = minheap_pop(s->events))) {
    free(e->rec);
    free(e);
  }
  minheap_free(s->events, NULL);
  for (unsigned h = 0; h < c->n_hops; h++)
    for (int side = 0; side < 2; side++)
      backtap_link_free(s->link[h][side].bt);
  for (unsigned i = 0; i <= c->n_hops; i++)
    for (unsigned k = 0; k < BTSIM_MAX_CIRCS; k++)
      free(s->node[i].cq[k].q);
  free(s->sends);
  free(s);
  return 0;
}
