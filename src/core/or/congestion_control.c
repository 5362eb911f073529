/* SPDX-License-Identifier: BSD-3-Clause */
/* congestion_control.c -- the controller, flow control and ntor v3
 * extensions of congestion_control.h.
 *
 * The arithmetic follows what tor 0.4.9 does (integer, in this order), so
 * that a pctor endpoint behaves like a tor one on the same acks:
 *   - RTT: the time from sending the cell a SENDME acknowledges to the
 *     SENDME. A zero sample is a clock stall (ignored, remembered); after
 *     slow start, a sample 5000 times the EWMA is a jump (ignored), one
 *     5000 times smaller is ignored only if a stall was seen before.
 *     ewma = N-EWMA with N = cc_ewma_ss in slow start, else
 *     min(update_rate * cc_ewma_cwnd_pct / 100, cc_ewma_max), at least 2;
 *     min_rtt follows the EWMA down, and is raised towards the EWMA
 *     (cc_rtt_reset_pct) when the window sits at cwnd_min after slow start.
 *   - BDP = cwnd * min_rtt / ewma_rtt; queue use = cwnd - BDP.
 *   - Slow start: while queue use < gamma and the channel is not blocked,
 *     a full window grows by the RFC 3742 increment; otherwise cwnd =
 *     BDP + gamma and slow start ends (also at cc_ss_max, or when the
 *     increment falls to the steady-state rate).
 *   - Steady state, once per cc_cwnd_inc_rate of a window: above delta
 *     cwnd = BDP + delta - inc; above beta (or blocked) cwnd -= inc; below
 *     alpha with a full window cwnd += inc; never below cwnd_min.
 * The "full window" flag is set when inflight is within cc_cwnd_full_gap
 * increments of cwnd, cleared below cc_cwnd_full_minpct %, and reset once
 * per window (cc_cwnd_full_per_cwnd=1) or per update.
 */
#include "core/or/congestion_control.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CC_DELTA_RATIO_MAX 5000
#define CC_OUTBUF_CELLS (2 * CC_TLS_RECORD_CELLS)
#define CC_FLOW_MAX_BURST_CELLS 32
/* DropMark accounting is halved at these counts (as tor). */
#define CC_FLOW_COUNT_SCALE_AT 200
#define CC_FLOW_XMIT_SCALE_AT (10u * 1024 * 1024)

#define MIN_(a, b) ((a) < (b) ? (a) : (b))
#define MAX_(a, b) ((a) > (b) ? (a) : (b))

/* ---- parameters ---------------------------------------------------- */

void
cc_params_default(cc_params_t *p)
{
  memset(p, 0, sizeof(*p));
  p->alg = CC_ALG_VEGAS;
  p->sendme_inc = CC_TLS_RECORD_CELLS;
  p->cwnd_init = 4 * CC_TLS_RECORD_CELLS;
  p->cwnd_min = 4 * CC_TLS_RECORD_CELLS;
  p->cwnd_max = INT32_MAX;
  p->cwnd_inc = 1;
  p->cwnd_inc_pct_ss = 100;
  p->cwnd_inc_rate = CC_TLS_RECORD_CELLS;
  p->ewma_cwnd_pct = 50;
  p->ewma_max = 10;
  p->ewma_ss = 2;
  p->rtt_reset_pct = 100;
  p->vegas_alpha = 3 * CC_OUTBUF_CELLS;
  p->vegas_beta = 4 * CC_OUTBUF_CELLS;
  p->vegas_gamma = 3 * CC_OUTBUF_CELLS;
  p->vegas_delta = 5 * CC_OUTBUF_CELLS;
  p->ss_cap = 600;
  p->ss_max = 5000;
  p->cwnd_full_gap = 4;
  p->cwnd_full_minpct = 25;
  p->cwnd_full_per_cwnd = 1;
  p->cellq_high = 256;
  p->cellq_low = 10;
  p->xoff_client_bytes = 500 * CC_RELAY_PAYLOAD;
  p->xoff_exit_bytes = 500 * CC_RELAY_PAYLOAD;
  p->xon_rate_bytes = 500 * CC_RELAY_PAYLOAD;
  p->xon_change_pct = 25;
  p->xon_ewma_cnt = 2;
}

void
cc_params_load(cc_params_t *p, cc_param_lookup_fn get, void *arg)
{
  cc_params_t d;
  cc_params_default(&d);
#define P(field, name, lo, hi) \
  p->field = (uint32_t)get(arg, name, (int32_t)d.field, lo, hi)
  p->alg = get(arg, "cc_alg", d.alg, 0, 3);
  /* tor knows only Vegas besides the fixed windows now. */
  if (p->alg != CC_ALG_SENDME && p->alg != CC_ALG_VEGAS)
    p->alg = d.alg;
  P(sendme_inc, "cc_sendme_inc", 1, 254);
  P(cwnd_init, "cc_cwnd_init", CC_TLS_RECORD_CELLS, 10000);
  P(cwnd_min, "cc_cwnd_min", CC_TLS_RECORD_CELLS, 1000);
  P(cwnd_max, "cc_cwnd_max", 500, INT32_MAX);
  P(cwnd_inc, "cc_cwnd_inc", 1, 1000);
  P(cwnd_inc_pct_ss, "cc_cwnd_inc_pct_ss", 1, 500);
  P(cwnd_inc_rate, "cc_cwnd_inc_rate", 1, 250);
  P(ewma_cwnd_pct, "cc_ewma_cwnd_pct", 1, 255);
  P(ewma_max, "cc_ewma_max", 2, INT32_MAX);
  P(ewma_ss, "cc_ewma_ss", 2, INT32_MAX);
  P(rtt_reset_pct, "cc_rtt_reset_pct", 0, 100);
  P(vegas_alpha, "cc_vegas_alpha_exit", 0, 1000);
  P(vegas_beta, "cc_vegas_beta_exit", 0, 1000);
  P(vegas_gamma, "cc_vegas_gamma_exit", 0, 1000);
  P(vegas_delta, "cc_vegas_delta_exit", 0, INT32_MAX);
  P(ss_cap, "cc_sscap_exit", 100, INT32_MAX);
  P(ss_max, "cc_ss_max", 500, INT32_MAX);
  P(cwnd_full_gap, "cc_cwnd_full_gap", 0, INT16_MAX);
  P(cwnd_full_minpct, "cc_cwnd_full_minpct", 0, 100);
  P(cwnd_full_per_cwnd, "cc_cwnd_full_per_cwnd", 0, 1);
  P(cellq_high, "cellq_high", 1, 1000);
  P(cellq_low, "cellq_low", 1, 1000);
#undef P
  p->xoff_client_bytes =
      (uint32_t)get(arg, "cc_xoff_client", 500, 1, 10000) * CC_RELAY_PAYLOAD;
  p->xoff_exit_bytes =
      (uint32_t)get(arg, "cc_xoff_exit", 500, 1, 10000) * CC_RELAY_PAYLOAD;
  p->xon_rate_bytes =
      (uint32_t)get(arg, "cc_xon_rate", 500, 1, 5000) * CC_RELAY_PAYLOAD;
  p->xon_change_pct = (uint32_t)get(arg, "cc_xon_change_pct", 25, 1, 99);
  p->xon_ewma_cnt = (uint32_t)get(arg, "cc_xon_ewma_cnt", 2, 2, 100);
}

static struct {
  int set;
  cc_params_t p;
} current_params;

const cc_params_t *
cc_params_current(void)
{
  if (!current_params.set) {
    cc_params_default(&current_params.p);
    current_params.set = 1;
  }
  return &current_params.p;
}

void
cc_params_set_current(const cc_params_t *p)
{
  current_params.p = *p;
  current_params.set = 1;
}

/* ---- tor's helpers ------------------------------------------------- */

uint64_t
cc_n_ewma(uint64_t curr, uint64_t prev, uint64_t n)
{
  if (prev == 0)
    return curr;
  return (2 * curr + (n - 1) * prev) / (n + 1);
}

static uint64_t
percent_max_mix(uint64_t a, uint64_t b, uint64_t pct_max)
{
  uint64_t hi = MAX_(a, b), lo = MIN_(a, b);
  if (pct_max > 100)
    pct_max = 100;
  return pct_max * hi / 100 + (100 - pct_max) * lo / 100;
}

uint64_t
cc_sendme_per_cwnd(const cc_t *cc)
{
  return (cc->cwnd + cc->sendme_inc / 2) / cc->sendme_inc;
}

uint64_t
cc_cwnd_update_rate(const cc_t *cc)
{
  if (cc->in_slow_start)
    return 1;
  uint64_t unit = (uint64_t)cc->p.cwnd_inc_rate * cc->sendme_inc;
  return (cc->cwnd + unit / 2) / unit;
}

uint64_t
cc_ewma_count(const cc_t *cc)
{
  uint64_t n;
  if (cc->in_slow_start)
    n = cc->p.ewma_ss;
  else
    n = MIN_(cc_cwnd_update_rate(cc) * cc->p.ewma_cwnd_pct / 100,
             (uint64_t)cc->p.ewma_max);
  return MAX_(n, 2);
}

/* ---- controller ---------------------------------------------------- */

void
cc_init(cc_t *cc, const cc_params_t *p, uint32_t sendme_inc)
{
  memset(cc, 0, sizeof(*cc));
  cc->p = p ? *p : *cc_params_current();
  cc->alg = &cc_alg_vegas;
  cc->sendme_inc = sendme_inc ? sendme_inc : 1;
  cc->cwnd = cc->p.cwnd_init;
  cc->in_slow_start = 1;
  cc->next_cc_event = (uint32_t)cc_cwnd_update_rate(cc);
}

void
cc_clear(cc_t *cc)
{
  free(cc->pend);
  cc->pend = NULL;
  cc->pend_cap = cc->pend_n = cc->pend_head = 0;
}

cc_t *
cc_new(const cc_params_t *p, uint32_t sendme_inc)
{
  cc_t *cc = pc_malloc(sizeof(*cc));
  cc_init(cc, p, sendme_inc);
  return cc;
}

void
cc_free_(cc_t *cc)
{
  if (!cc)
    return;
  cc_clear(cc);
  free(cc);
}

/* Make room for one more pending entry: double the ring (rare: only when
 * the window outgrows it), keeping the FIFO order. */
static void
pend_grow(cc_t *cc)
{
  uint32_t cap = cc->pend_cap ? 2 * cc->pend_cap
                              : (uint32_t)(cc->cwnd / cc->sendme_inc) + 4;
  cc_pending_t *n = pc_malloc((size_t)cap * sizeof(*n));
  for (uint32_t i = 0; i < cc->pend_n; i++)
    n[i] = cc->pend[(cc->pend_head + i) % cc->pend_cap];
  free(cc->pend);
  cc->pend = n;
  cc->pend_cap = cap;
  cc->pend_head = 0;
}

uint8_t *
cc_note_data_sent(cc_t *cc, uint64_t now_us)
{
  int acked = (cc->inflight + 1) % cc->sendme_inc == 0;
  cc->inflight++;
  if (!acked)
    return NULL;
  if (cc->pend_n == cc->pend_cap)
    pend_grow(cc);
  cc_pending_t *e = &cc->pend[(cc->pend_head + cc->pend_n) % cc->pend_cap];
  cc->pend_n++;
  e->sent_us = now_us;
  memset(e->digest, 0, sizeof(e->digest));
  return e->digest;
}

static log_ratelim_t clock_ratelim = LOG_RATELIM_INIT(300, 1);

/* Is this RTT sample a clock stall or jump (proposal 324 2.1.1)? */
static int
stalled_or_jumped(cc_t *cc, uint64_t old_delta, uint64_t new_delta)
{
  if (new_delta == 0) {
    cc->clock_broken = 1;
    return 1;
  }
  /* Heuristics only once slow start is over and an EWMA exists. */
  if (cc->in_slow_start || !old_delta)
    return 0;
  unsigned suppressed = 0;
  if (old_delta > new_delta * CC_DELTA_RATIO_MAX) {
    if (log_ratelim_allow(&clock_ratelim, time(NULL), &suppressed))
      log_info("Sudden decrease in circuit RTT (%" PRIu64 " vs %" PRIu64
               " ms), likely a clock jump",
               new_delta / 1000, old_delta / 1000);
    return cc->clock_broken;
  }
  if (new_delta > old_delta * CC_DELTA_RATIO_MAX) {
    if (log_ratelim_allow(&clock_ratelim, time(NULL), &suppressed))
      log_info("Sudden increase in circuit RTT (%" PRIu64 " vs %" PRIu64
               " ms), likely a clock jump or a suspended peer",
               new_delta / 1000, old_delta / 1000);
    return 1;
  }
  cc->clock_broken = 0;
  return 0;
}

/* Process-wide counts for the MetricsPort (the event loop's thread). */
static cc_global_stats_t G;

void
cc_get_global_stats(cc_global_stats_t *out)
{
  *out = G;
}

/* RTT from the popped send time; returns the sample, 0 if unusable. */
static uint64_t
update_rtt(cc_t *cc, uint64_t sent_us, uint64_t now_us)
{
  uint64_t rtt = now_us > sent_us ? now_us - sent_us : 0;
  if (stalled_or_jumped(cc, cc->ewma_rtt_us, rtt)) {
    cc->n_clock_stalls++;
    G.clock_stalls++;
    return 0;
  }
  cc->ewma_rtt_us = cc_n_ewma(rtt, cc->ewma_rtt_us, cc_ewma_count(cc));
  if (rtt > cc->max_rtt_us)
    cc->max_rtt_us = rtt;
  if (cc->min_rtt_us == 0) {
    cc->min_rtt_us = cc->ewma_rtt_us;
  } else if (cc->cwnd == cc->p.cwnd_min && !cc->in_slow_start) {
    /* Out of a wedge: at cwnd_min because of an abnormally low min. */
    cc->min_rtt_us = percent_max_mix(cc->ewma_rtt_us, cc->min_rtt_us,
                                     cc->p.rtt_reset_pct);
    cc->n_rtt_resets++;
    G.rtt_resets++;
  } else if (cc->ewma_rtt_us < cc->min_rtt_us) {
    cc->min_rtt_us = cc->ewma_rtt_us;
  }
  return rtt;
}

/* BDP and the blocked-channel signal; returns whether the algorithm may
 * run on this ack. */
static int
update_bdp(cc_t *cc, uint64_t rtt, uint32_t chan_q)
{
  /* Hysteresis as tor's cell-queue watermarks. */
  int blocked;
  if (chan_q >= cc->p.cellq_high)
    blocked = 1;
  else if (chan_q <= cc->p.cellq_low)
    blocked = 0;
  else
    blocked = cc->blocked_chan;
  if (!cc->ewma_rtt_us) {
    /* The clock stalled for the whole life of the circuit. */
    uint64_t cwnd = cc->cwnd;
    if (blocked) {
      if (chan_q >= cwnd)
        cwnd = cc->p.cwnd_min;
      else
        cwnd = MAX_(cwnd - chan_q, (uint64_t)cc->p.cwnd_min);
      cc->blocked_chan = 1;
    } else {
      cc->blocked_chan = 0;
    }
    cc->bdp = cwnd;
    return blocked;
  }
  cc->bdp = cc->cwnd * cc->min_rtt_us / cc->ewma_rtt_us;
  if (blocked) {
    if (!cc->blocked_chan) {
      cc->next_cc_event = 0;
      cc->blocked_chan = 1;
    }
  } else if (cc->blocked_chan) {
    cc->blocked_chan = 0;
    cc->next_cc_event = 0;
  }
  return blocked || rtt != 0;
}

int
cc_on_sendme(cc_t *cc, uint64_t now_us, const uint8_t *digest,
             uint32_t chan_queue)
{
  if (cc->pend_n == 0 || cc->inflight < cc->sendme_inc)
    return CC_SENDME_UNEXPECTED;
  cc_pending_t e = cc->pend[cc->pend_head];
  cc->pend_head = (cc->pend_head + 1) % cc->pend_cap;
  cc->pend_n--;
  if (digest && memcmp(digest, e.digest, sizeof(e.digest)))
    return CC_SENDME_BAD_DIGEST;
  cc->n_acks++;
  if (cc->next_cc_event)
    cc->next_cc_event--;
  if (cc->next_cwnd_event)
    cc->next_cwnd_event--;
  uint64_t rtt = update_rtt(cc, e.sent_us, now_us);
  cc->last_rtt_us = rtt;
  int estimated = update_bdp(cc, rtt, chan_queue);
  cc->alg->on_ack(cc, estimated);
  if (cc->cwnd > cc->p.cwnd_max)
    cc->cwnd = cc->p.cwnd_max;
  cc->inflight -= cc->sendme_inc;
  return CC_SENDME_OK;
}

void
cc_describe(const cc_t *cc, char *buf, size_t len)
{
  snprintf(buf, len,
           "%s cwnd %" PRIu64 " inflight %" PRIu64 " bdp %" PRIu64
           " rtt min/ewma/max %" PRIu64 "/%" PRIu64 "/%" PRIu64
           " ms slow-start %d sendme_inc %u SENDMEs got %" PRIu64
           " sent %" PRIu64,
           cc->alg->name, cc->cwnd, cc->inflight, cc->bdp,
           cc->min_rtt_us / 1000, cc->ewma_rtt_us / 1000,
           cc->max_rtt_us / 1000, cc->in_slow_start, cc->sendme_inc,
           cc->n_acks, cc->n_sendmes_sent);
}

/* ---- Vegas --------------------------------------------------------- */

static uint64_t
rfc3742_ss_inc(const cc_t *cc)
{
  if (cc->cwnd <= cc->p.ss_cap)
    return ((uint64_t)cc->p.cwnd_inc_pct_ss * cc->sendme_inc + 50) / 100;
  /* K = cwnd / (max_ssthresh / 2); increment MSS / K, at least 1. */
  uint64_t inc = ((uint64_t)cc->sendme_inc * cc->p.ss_cap + cc->cwnd) /
                 (2 * cc->cwnd);
  return MAX_(inc, 1);
}

static void
exit_slow_start(cc_t *cc)
{
  cc->in_slow_start = 0;
  char d[160];
  cc_describe(cc, d, sizeof(d));
  log_debug("Congestion control left slow start: %s", d);
}

static int
cwnd_full_reset(const cc_t *cc)
{
  if (cc->p.cwnd_full_per_cwnd)
    return cc->next_cwnd_event == cc_sendme_per_cwnd(cc);
  return cc->next_cc_event == cc_cwnd_update_rate(cc);
}

/* cwnd - dec, but never below floor (tor's unsigned arithmetic would wrap
 * where this saturates). */
static uint64_t
sat_sub(uint64_t cwnd, uint64_t dec, uint64_t floor)
{
  return cwnd > dec + floor ? cwnd - dec : floor;
}

static void
vegas_on_ack(cc_t *cc, int estimated)
{
  if (!estimated)
    return;
  const cc_params_t *p = &cc->p;
  uint64_t queue_use = cc->bdp > cc->cwnd ? 0 : cc->cwnd - cc->bdp;
  if (cc->inflight + (uint64_t)p->cwnd_full_gap * cc->sendme_inc >=
      cc->cwnd)
    cc->cwnd_full = 1;
  else if (100 * cc->inflight < (uint64_t)p->cwnd_full_minpct * cc->cwnd)
    cc->cwnd_full = 0;

  if (cc->in_slow_start) {
    if (queue_use < p->vegas_gamma && !cc->blocked_chan) {
      if (cc->cwnd_full) {
        uint64_t inc = rfc3742_ss_inc(cc);
        cc->cwnd += inc;
        /* The increment fell to the steady-state rate: leave. */
        if (inc * cc_sendme_per_cwnd(cc) <=
            (uint64_t)p->cwnd_inc * p->cwnd_inc_rate)
          exit_slow_start(cc);
      }
    } else {
      /* Congestion signal: queue at gamma. */
      cc->cwnd = cc->bdp + p->vegas_gamma;
      exit_slow_start(cc);
    }
    if (cc->cwnd >= p->ss_max) {
      cc->cwnd = p->ss_max;
      exit_slow_start(cc);
    }
  } else if (cc->next_cc_event == 0) {
    if (queue_use > p->vegas_delta) {
      cc->cwnd = sat_sub(cc->bdp + p->vegas_delta, p->cwnd_inc, 0);
    } else if (queue_use > p->vegas_beta || cc->blocked_chan) {
      cc->cwnd = sat_sub(cc->cwnd, p->cwnd_inc, 0);
    } else if (cc->cwnd_full && queue_use < p->vegas_alpha) {
      cc->cwnd += p->cwnd_inc;
    }
    if (cc->cwnd < p->cwnd_min)
      cc->cwnd = p->cwnd_min;
  }

  if (cc->next_cwnd_event == 0)
    cc->next_cwnd_event = (uint32_t)cc_sendme_per_cwnd(cc);
  if (cc->next_cc_event == 0)
    cc->next_cc_event = (uint32_t)cc_cwnd_update_rate(cc);
  if (cwnd_full_reset(cc))
    cc->cwnd_full = 0;
}

const cc_alg_ops_t cc_alg_vegas = {"vegas", vegas_on_ack};

/* ---- flow control -------------------------------------------------- */

static uint32_t
drain_rate_kbps(const cc_flow_t *f, uint64_t now_us)
{
  uint64_t delta = now_us > f->drain_start_us ? now_us - f->drain_start_us
                                              : 0;
  if (delta == 0)
    return 0;
  if (f->prev_drained_bytes > INT32_MAX / 1000 ||
      f->prev_drained_bytes / delta > INT32_MAX / 1000)
    return INT32_MAX;
  /* bytes/us * 1000 = kB/s */
  uint64_t r = (uint64_t)f->prev_drained_bytes * 1000 / delta;
  return r ? (uint32_t)r : 1;
}

static int
rate_changed(const cc_flow_t *f, const cc_params_t *p, int clock_ok)
{
  if (!clock_ok || !f->ewma_rate_last_sent)
    return 0;
  uint64_t last = f->ewma_rate_last_sent;
  if (f->ewma_drain_rate > (100 + (uint64_t)p->xon_change_pct) * last / 100)
    return 1;
  if (f->ewma_drain_rate < (100 - (uint64_t)p->xon_change_pct) * last / 100)
    return 1;
  return 0;
}

/* The XON decision and drain-rate bookkeeping (tor's decide_xon). */
static cc_flow_action_t
flow_drained(cc_flow_t *f, const cc_params_t *p, size_t buffered,
             size_t n_written, uint64_t now_us, int clock_ok)
{
  int empty = buffered <= CC_FLOW_EMPTY_BYTES;
  if (n_written > UINT32_MAX / 2)
    n_written = UINT32_MAX / 2;
  if (f->drained_bytes >= UINT32_MAX - n_written) {
    f->drained_bytes /= 2;
    if (f->drain_start_us && now_us > f->drain_start_us)
      f->drain_start_us = now_us - (now_us - f->drain_start_us) / 2;
  }
  f->drained_bytes += (uint32_t)n_written;
  if (!clock_ok) {
    f->drain_start_us = 0;
    f->drained_bytes = 0;
  } else if (!f->drain_start_us && buffered > 0) {
    f->drain_start_us = now_us;
    f->drained_bytes = 0;
  }
  if (f->drain_start_us && f->drained_bytes > p->xon_rate_bytes) {
    /* First computation: use what was just drained as the baseline. */
    if (f->prev_drained_bytes == 0)
      f->prev_drained_bytes = f->drained_bytes;
    uint32_t rate = drain_rate_kbps(f, now_us);
    f->prev_drained_bytes = f->drained_bytes;
    if (rate) {
      f->ewma_drain_rate =
          (uint32_t)cc_n_ewma(rate, f->ewma_drain_rate, p->xon_ewma_cnt);
      f->drained_bytes = 0;
      f->drain_start_us = 0;
    }
  }
  int send_xon = f->xoff_sent ? empty : rate_changed(f, p, clock_ok);
  if (send_xon) {
    f->ewma_rate_last_sent = f->ewma_drain_rate;
    f->xoff_sent = 0;
    G.xon_sent++;
  }
  if (empty) {
    f->drain_start_us = 0;
    /* Drained for a while: the edge is faster than advertised. */
    if (f->drained_bytes >= p->xon_rate_bytes && f->ewma_rate_last_sent) {
      uint64_t d = 2 * (uint64_t)f->ewma_drain_rate;
      f->ewma_drain_rate = d > INT32_MAX ? INT32_MAX : (uint32_t)d;
      f->prev_drained_bytes = f->drained_bytes;
      f->drained_bytes = 0;
    }
  }
  return send_xon ? CC_FLOW_SEND_XON : CC_FLOW_NONE;
}

cc_flow_action_t
cc_flow_on_drained(cc_flow_t *f, const cc_params_t *p, size_t buffered,
                   size_t n_written, uint64_t now_us, int clock_ok)
{
  return flow_drained(f, p, buffered, n_written, now_us, clock_ok);
}

cc_flow_action_t
cc_flow_on_data(cc_flow_t *f, const cc_params_t *p, int is_client,
                size_t buffered, uint64_t now_us, int clock_ok)
{
  uint32_t limit = is_client ? p->xoff_client_bytes : p->xoff_exit_bytes;
  cc_flow_action_t act = CC_FLOW_NONE;
  if (buffered > limit && !f->xoff_sent) {
    f->xoff_sent = 1;
    G.xoff_sent++;
    /* The rate is wrong if we got all the way to XOFF. */
    f->ewma_drain_rate = 0;
    act = CC_FLOW_SEND_XOFF;
  }
  /* Writes only happen when the socket drains, so look at the rate here
   * too once more than a burst is waiting. */
  if (buffered > CC_FLOW_MAX_BURST_CELLS * CC_RELAY_PAYLOAD) {
    cc_flow_action_t a = flow_drained(f, p, buffered, 0, now_us, clock_ok);
    if (act == CC_FLOW_NONE)
      act = a;
  }
  return act;
}

static void
flow_scale_down(cc_flow_t *f)
{
  f->total_bytes_xmit /= 2;
  f->num_xoff_recv /= 2;
  f->num_xon_recv /= 2;
}

void
cc_flow_note_sent(cc_flow_t *f, size_t len)
{
  if (len > CC_FLOW_XMIT_SCALE_AT)
    len = CC_FLOW_XMIT_SCALE_AT;
  if (f->total_bytes_xmit >= CC_FLOW_XMIT_SCALE_AT - len)
    flow_scale_down(f);
  f->total_bytes_xmit += (uint32_t)len;
}

int
cc_flow_on_xoff(cc_flow_t *f, const cc_params_t *p, int is_client,
                const uint8_t *body, size_t len)
{
  if (len < CC_XOFF_LEN || body[0] != 0)
    return -1;
  if (f->xoff_received)
    return 0; /* "multiple XOFF": invalid, not fatal */
  if (f->num_xoff_recv == CC_FLOW_COUNT_SCALE_AT)
    flow_scale_down(f);
  f->num_xoff_recv++;
  int valid = 1;
  if (is_client &&
      f->total_bytes_xmit < (uint64_t)p->xoff_exit_bytes * f->num_xoff_recv)
    valid = 0;
  f->xoff_received = 1;
  return valid;
}

int
cc_flow_on_xon(cc_flow_t *f, const cc_params_t *p, int is_client,
               const uint8_t *body, size_t len)
{
  if (len < CC_XON_LEN || body[0] != 0)
    return -1;
  if (f->num_xon_recv == CC_FLOW_COUNT_SCALE_AT)
    flow_scale_down(f);
  f->num_xon_recv++;
  int valid = 1;
  uint64_t limit = MIN_(p->xoff_exit_bytes, p->xon_rate_bytes);
  if (is_client && f->total_bytes_xmit < limit * f->num_xon_recv)
    valid = 0;
  f->advised_kbps = get_u32(body + 1);
  f->xoff_received = 0;
  return valid;
}

void
cc_flow_encode_xoff(uint8_t out[CC_XOFF_LEN])
{
  out[0] = 0;
}

void
cc_flow_encode_xon(uint8_t out[CC_XON_LEN], uint32_t kbps_ewma)
{
  out[0] = 0;
  set_u32(out + 1, kbps_ewma);
}

/* ---- ntor v3 extensions ------------------------------------------- */

int
cc_ext_build_request(uint8_t *out, size_t cap)
{
  if (cap < 3)
    return -1;
  out[0] = 1;                   /* N_EXTENSIONS */
  out[1] = CC_EXT_TYPE_REQUEST; /* type */
  out[2] = 0;                   /* empty body */
  return 3;
}

int
cc_ext_build_empty(uint8_t *out, size_t cap)
{
  if (cap < 1)
    return -1;
  out[0] = 0;
  return 1;
}

int
cc_ext_build_response(int cc_enabled, uint8_t sendme_inc, uint8_t *out,
                      size_t cap)
{
  if (!cc_enabled)
    return cc_ext_build_empty(out, cap);
  if (cap < 4)
    return -1;
  out[0] = 1;
  out[1] = CC_EXT_TYPE_RESPONSE;
  out[2] = 1;
  out[3] = sendme_inc;
  return 4;
}

int
cc_ext_walk(const uint8_t *msg, size_t len,
         int (*visit)(uint8_t type, const uint8_t *body, uint8_t blen,
                      void *arg),
         void *arg)
{
  if (len < 1)
    return -1;
  size_t n = msg[0], off = 1;
  for (size_t i = 0; i < n; i++) {
    if (len - off < 2)
      return -1;
    uint8_t type = msg[off], blen = msg[off + 1];
    off += 2;
    if (len - off < blen)
      return -1;
    int r = visit(type, msg + off, blen, arg);
    if (r)
      return r;
    off += blen;
  }
  return off == len ? 0 : -1;
}

static int
visit_request(uint8_t type, const uint8_t *body, uint8_t blen, void *arg)
{
  (void)body;
  (void)blen;
  if (type == CC_EXT_TYPE_REQUEST)
    *(int *)arg = 1;
  return 0;
}

int
cc_ext_parse_request(const uint8_t *msg, size_t len)
{
  int found = 0;
  /* An empty message asks for nothing (pctor always accepted it; tor
   * clients send at least an empty list). */
  if (len == 0)
    return 0;
  if (cc_ext_walk(msg, len, visit_request, &found) < 0)
    return -1;
  return found;
}

typedef struct {
  int found;
  int bad_len;
  uint8_t inc;
} resp_visit_t;

static int
visit_response(uint8_t type, const uint8_t *body, uint8_t blen, void *arg)
{
  resp_visit_t *v = arg;
  if (type != CC_EXT_TYPE_RESPONSE || v->found)
    return 0; /* unknown types and later duplicates are ignored */
  v->found = 1;
  if (blen < 1)
    v->bad_len = 1;
  else
    v->inc = body[0];
  return 0;
}

int
cc_ext_parse_response(const uint8_t *msg, size_t len, int requested,
                      uint32_t expected_inc, uint8_t *sendme_inc,
                      const char **why)
{
  resp_visit_t v;
  memset(&v, 0, sizeof(v));
  *why = NULL;
  if (cc_ext_walk(msg, len, visit_response, &v) < 0) {
    *why = "malformed extension list in the ntor v3 reply";
    return -1;
  }
  if (!v.found)
    return 0;
  if (!requested) {
    *why = "congestion control response we did not ask for";
    return -1;
  }
  if (v.bad_len) {
    *why = "empty congestion control response";
    return -1;
  }
  if (v.inc == 0 || v.inc > expected_inc + 1 ||
      (uint32_t)v.inc + 1 < expected_inc) {
    *why = "sendme_inc out of range in the congestion control response";
    return -1;
  }
  *sendme_inc = v.inc;
  return 1;
}
