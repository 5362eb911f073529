/* SPDX-License-Identifier: BSD-3-Clause */
/* cbt.c -- learned circuit build timeouts (see cbt.h).
 *
 * Design: the history is a circular array of CBT_MAX_TIMES entries (a
 * completed time in ms, or CBT_ABANDONED); the fit is recomputed after
 * every new entry from scratch (a histogram of at most a few thousand 50
 * ms bins and one pass over 1000 times: microseconds, a few times per
 * minute at most). Recorded times are capped at CBT_MAX_TIME_MS so a
 * clock jump cannot make the histogram huge.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/cbt.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define CBT_ABANDONED UINT32_MAX
#define CBT_MAX_TIME_MS (10u * 60 * 1000)
#define CBT_CLOSE_MIN_MS 60000u
#define CBT_RECENT_MAX 1000

typedef struct {
  int disabled, nummodes, recentcount, maxtimeouts, mincircs;
  int quantile, closequantile;
  uint32_t mintimeout, initialtimeout;
} cbt_params_t;

struct cbt_t {
  uint32_t times[CBT_MAX_TIMES];
  int n, next;
  uint8_t recent[CBT_RECENT_MAX]; /* 1: timed out, 2: abandoned */
  int recent_n, recent_next;
  cbt_params_t p;
  uint32_t base_ms; /* timeout while not learned (doubled by resets) */
  uint32_t timeout_ms, close_ms;
  double xm, alpha;
  int learned;
};

static void
params_from(cbt_params_t *p, const consensus_t *c)
{
  p->disabled = c ? consensus_get_param(c, "cbtdisabled", 0, 0, 1) : 0;
  p->nummodes = c ? consensus_get_param(c, "cbtnummodes", 3, 1, 20) : 3;
  p->recentcount = c ? consensus_get_param(c, "cbtrecentcount", 20, 3,
                                           CBT_RECENT_MAX)
                     : 20;
  p->maxtimeouts = c ? consensus_get_param(c, "cbtmaxtimeouts", 18, 3,
                                           10000)
                     : 18;
  p->mincircs = c ? consensus_get_param(c, "cbtmincircs", 100, 1, 10000)
                  : 100;
  p->quantile = c ? consensus_get_param(c, "cbtquantile", 80, 10, 99) : 80;
  p->closequantile = c ? consensus_get_param(c, "cbtclosequantile", 95,
                                             p->quantile, 99)
                       : 95;
  if (p->closequantile < p->quantile)
    p->closequantile = p->quantile;
  p->mintimeout = (uint32_t)(c ? consensus_get_param(c, "cbtmintimeout",
                                                     2000, 500, INT32_MAX)
                               : 2000);
  p->initialtimeout = (uint32_t)(c ? consensus_get_param(
                                         c, "cbtinitialtimeout",
                                         CBT_DEFAULT_TIMEOUT_MS,
                                         (int32_t)p->mintimeout, INT32_MAX)
                                   : CBT_DEFAULT_TIMEOUT_MS);
}

static uint32_t
max_u32(uint32_t a, uint32_t b)
{
  return a > b ? a : b;
}

/* Refit from the history. */
static void
recompute(cbt_t *cbt)
{
  cbt->learned = 0;
  cbt->xm = cbt->alpha = 0;
  cbt->timeout_ms = cbt->base_ms;
  cbt->close_ms = max_u32(cbt->base_ms, CBT_CLOSE_MIN_MS);
  if (cbt->p.disabled || cbt->n < cbt->p.mincircs)
    return;
  uint32_t x_max = 0;
  int s = 0, u = 0;
  for (int i = 0; i < cbt->n; i++) {
    if (cbt->times[i] == CBT_ABANDONED) {
      u++;
      continue;
    }
    s++;
    if (cbt->times[i] > x_max)
      x_max = cbt->times[i];
  }
  if (s == 0)
    return;
  size_t nbins = x_max / CBT_BIN_WIDTH_MS + 1;
  uint32_t *bins = pc_calloc(nbins, sizeof(*bins));
  for (int i = 0; i < cbt->n; i++)
    if (cbt->times[i] != CBT_ABANDONED)
      bins[cbt->times[i] / CBT_BIN_WIDTH_MS]++;
  /* Xm: weighted average of the midpoints of the top modes. */
  int modes = cbt->n >= CBT_MAX_TIMES ? cbt->p.nummodes : 1;
  double wsum = 0, csum = 0;
  for (int m = 0; m < modes; m++) {
    size_t best = 0;
    for (size_t b = 1; b < nbins; b++)
      if (bins[b] > bins[best])
        best = b;
    if (!bins[best])
      break;
    double mid = (double)best * CBT_BIN_WIDTH_MS + CBT_BIN_WIDTH_MS / 2.0;
    wsum += mid * bins[best];
    csum += bins[best];
    bins[best] = 0;
  }
  free(bins);
  double xm = wsum / csum;
  double sum = 0;
  for (int i = 0; i < cbt->n; i++)
    if (cbt->times[i] != CBT_ABANDONED)
      sum += log(cbt->times[i] > xm ? (double)cbt->times[i] : xm);
  double lmax = log((double)x_max > xm ? (double)x_max : xm);
  double denom = u * lmax + sum - (double)(s + u) * log(xm);
  /* Every time at or below Xm: no tail at all, the limit alpha -> inf
   * puts every quantile at Xm. */
  double alpha = denom > 0 ? s / denom : INFINITY;
  double t = isinf(alpha) ? xm
                          : xm / pow(1.0 - cbt->p.quantile / 100.0,
                                     1.0 / alpha);
  double c = isinf(alpha) ? xm
                          : xm / pow(1.0 - cbt->p.closequantile / 100.0,
                                     1.0 / alpha);
  if (!(t > 0) || t > INT32_MAX)
    t = INT32_MAX;
  if (!(c > 0) || c > INT32_MAX)
    c = INT32_MAX;
  cbt->xm = xm;
  cbt->alpha = alpha;
  cbt->learned = 1;
  cbt->timeout_ms = max_u32((uint32_t)t, cbt->p.mintimeout);
  cbt->close_ms = max_u32(max_u32((uint32_t)c, CBT_CLOSE_MIN_MS),
                          cbt->timeout_ms);
}

cbt_t *
cbt_new(void)
{
  cbt_t *cbt = pc_zalloc(sizeof(*cbt));
  params_from(&cbt->p, NULL);
  cbt->base_ms = cbt->p.initialtimeout;
  recompute(cbt);
  return cbt;
}

void
cbt_free_(cbt_t *cbt)
{
  free(cbt);
}

static void
discard_history(cbt_t *cbt)
{
  cbt->n = cbt->next = 0;
  cbt->recent_n = cbt->recent_next = 0;
}

void
cbt_set_consensus(cbt_t *cbt, const consensus_t *c)
{
  cbt_params_t old = cbt->p;
  params_from(&cbt->p, c);
  if (cbt->p.disabled && cbt->n) {
    log_notice("Circuit build timeout learning is disabled by the "
               "consensus (cbtdisabled=1); discarding %d build times",
               cbt->n);
    discard_history(cbt);
  }
  if (old.initialtimeout != cbt->p.initialtimeout &&
      cbt->base_ms == old.initialtimeout)
    cbt->base_ms = cbt->p.initialtimeout;
  if (memcmp(&old, &cbt->p, sizeof(old))) {
    int was_learned = cbt->learned;
    recompute(cbt);
    if (cbt->learned && !was_learned)
      log_notice("Circuit build timeout %u ms, learned from %d circuits "
                 "(Pareto Xm %.0f ms, alpha %.3f)",
                 (unsigned)cbt->timeout_ms, cbt->n, cbt->xm, cbt->alpha);
  }
}

static void
add_entry(cbt_t *cbt, uint32_t v)
{
  cbt->times[cbt->next] = v;
  cbt->next = (cbt->next + 1) % CBT_MAX_TIMES;
  if (cbt->n < CBT_MAX_TIMES)
    cbt->n++;
}

/* Record one circuit's outcome (0 in time, 1 timed out, 2 abandoned) in
 * the recent history; reset when too many timed out (path-spec 2.4.4).
 * Returns 1 after a reset. */
static int
add_recent(cbt_t *cbt, int timed_out)
{
  int cap = cbt->p.recentcount;
  if (cbt->recent_n > cap)
    cbt->recent_n = cap;
  cbt->recent[cbt->recent_next % cap] = (uint8_t)timed_out;
  cbt->recent_next = (cbt->recent_next + 1) % cap;
  if (cbt->recent_n < cap)
    cbt->recent_n++;
  int k = 0;
  for (int i = 0; i < cbt->recent_n; i++)
    k += cbt->recent[i] != 0;
  if (k < cbt->p.maxtimeouts)
    return 0;
  uint32_t old = cbt->timeout_ms;
  cbt->base_ms = old >= cbt->p.initialtimeout
                     ? (old > CBT_MAX_TIME_MS / 2 ? CBT_MAX_TIME_MS : old * 2)
                     : cbt->p.initialtimeout;
  log_notice("%d of the last %d circuits timed out: the network changed; "
             "discarding %d build times and starting over with a %u ms "
             "timeout",
             k, cbt->recent_n, cbt->n, (unsigned)cbt->base_ms);
  discard_history(cbt);
  return 1;
}

/* After a new entry: refit, and say what a controller hears of it. */
static cbt_event_t
after_entry(cbt_t *cbt, int was_reset)
{
  int was_learned = cbt->learned;
  recompute(cbt);
  if (cbt->learned && !was_learned)
    log_notice("Learned a circuit build timeout of %u ms from %d circuits "
               "(Pareto Xm %.0f ms, alpha %.3f)",
               (unsigned)cbt->timeout_ms, cbt->n, cbt->xm, cbt->alpha);
  return was_reset      ? CBT_EV_RESET
         : cbt->learned ? CBT_EV_COMPUTED
                        : CBT_EV_NONE;
}

cbt_event_t
cbt_note_built(cbt_t *cbt, uint32_t ms)
{
  if (cbt->p.disabled)
    return CBT_EV_NONE;
  add_entry(cbt, ms > CBT_MAX_TIME_MS ? CBT_MAX_TIME_MS : ms);
  return after_entry(cbt, add_recent(cbt, ms > cbt->timeout_ms));
}

cbt_event_t
cbt_note_abandoned(cbt_t *cbt)
{
  if (cbt->p.disabled)
    return CBT_EV_NONE;
  add_entry(cbt, CBT_ABANDONED);
  return after_entry(cbt, add_recent(cbt, 2));
}

void
cbt_reset(cbt_t *cbt)
{
  log_notice("Dropping %d circuit build times (controller's DROPTIMEOUTS); "
             "the build timeout is %u ms again",
             cbt->n, (unsigned)cbt->p.initialtimeout);
  discard_history(cbt);
  cbt->base_ms = cbt->p.initialtimeout;
  recompute(cbt);
}

void
cbt_get_info(const cbt_t *cbt, cbt_info_t *out)
{
  memset(out, 0, sizeof(*out));
  out->total_times = cbt->n;
  out->timeout_ms = cbt->timeout_ms;
  out->close_ms = cbt->close_ms;
  out->xm = cbt->xm;
  out->alpha = isinf(cbt->alpha) ? 0 : cbt->alpha;
  out->quantile = cbt->p.quantile / 100.0;
  int timed_out = 0, abandoned = 0;
  for (int i = 0; i < cbt->recent_n; i++) {
    timed_out += cbt->recent[i] != 0;
    abandoned += cbt->recent[i] == 2;
  }
  if (cbt->recent_n) {
    out->timeout_rate = (double)timed_out / cbt->recent_n;
    out->close_rate = (double)abandoned / cbt->recent_n;
  }
}

int
cbt_load_state(cbt_t *cbt, const statefile_t *st, path_rng_t *rng,
               int *n_bad)
{
  *n_bad = 0;
  uint32_t *all = pc_calloc(CBT_MAX_TIMES * 2, sizeof(*all));
  int n = 0;
  size_t pos = 0;
  const char *v;
  while ((v = statefile_next(st, "CircuitBuildTimeBin", &pos)) != NULL) {
    unsigned ms, count;
    char extra;
    if (sscanf(v, "%u %u %c", &ms, &count, &extra) != 2 ||
        ms > CBT_MAX_TIME_MS || count > CBT_MAX_TIMES) {
      (*n_bad)++;
      continue;
    }
    for (unsigned k = 0; k < count && n < CBT_MAX_TIMES * 2; k++)
      all[n++] = ms;
  }
  const char *a = statefile_get(st, "CircuitBuildAbandonedCount");
  if (a) {
    unsigned count;
    char extra;
    if (sscanf(a, "%u %c", &count, &extra) != 1 || count > CBT_MAX_TIMES)
      (*n_bad)++;
    else
      for (unsigned k = 0; k < count && n < CBT_MAX_TIMES * 2; k++)
        all[n++] = CBT_ABANDONED;
  }
  /* Shuffle (Fisher-Yates) so that the oldest leave first in no
   * particular order; keep at most CBT_MAX_TIMES. */
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rng->below(rng->arg, (uint64_t)i + 1);
    uint32_t t = all[i];
    all[i] = all[j];
    all[j] = t;
  }
  if (n > CBT_MAX_TIMES)
    n = CBT_MAX_TIMES;
  discard_history(cbt);
  for (int i = 0; i < n; i++)
    add_entry(cbt, all[i]);
  free(all);
  recompute(cbt);
  return n;
}

void
cbt_write_state(const cbt_t *cbt, statefile_t *st)
{
  uint32_t max = 0;
  int u = 0;
  for (int i = 0; i < cbt->n; i++) {
    if (cbt->times[i] == CBT_ABANDONED)
      u++;
    else if (cbt->times[i] > max)
      max = cbt->times[i];
  }
  size_t nbins = max / CBT_BIN_WIDTH_MS + 1;
  uint32_t *bins = pc_calloc(nbins, sizeof(*bins));
  size_t used = 0;
  for (int i = 0; i < cbt->n; i++)
    if (cbt->times[i] != CBT_ABANDONED &&
        bins[cbt->times[i] / CBT_BIN_WIDTH_MS]++ == 0)
      used++;
  char **lines = pc_calloc(used ? used : 1, sizeof(char *));
  size_t k = 0;
  for (size_t b = 0; b < nbins; b++)
    if (bins[b])
      lines[k++] = pc_asprintf("%u %u",
                               (unsigned)(b * CBT_BIN_WIDTH_MS +
                                          CBT_BIN_WIDTH_MS / 2),
                               (unsigned)bins[b]);
  statefile_set_all(st, "CircuitBuildTimeBin", (const char *const *)lines,
                    k);
  for (size_t i = 0; i < k; i++)
    free(lines[i]);
  free(lines);
  free(bins);
  char buf[32];
  snprintf(buf, sizeof(buf), "%d", u);
  statefile_set(st, "CircuitBuildAbandonedCount", buf);
  snprintf(buf, sizeof(buf), "%d", cbt->n);
  statefile_set(st, "TotalBuildTimes", buf);
}

uint32_t
cbt_timeout_ms(const cbt_t *cbt)
{
  return cbt->timeout_ms;
}

uint32_t
cbt_close_ms(const cbt_t *cbt)
{
  return cbt->close_ms;
}

int
cbt_is_learned(const cbt_t *cbt)
{
  return cbt->learned;
}

int
cbt_n_recorded(const cbt_t *cbt)
{
  return cbt->n;
}

double
cbt_xm(const cbt_t *cbt)
{
  return cbt->xm;
}

double
cbt_alpha(const cbt_t *cbt)
{
  return cbt->alpha;
}
