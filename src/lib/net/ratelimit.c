/* SPDX-License-Identifier: BSD-3-Clause */
/* ratelimit.c -- token buckets refilled on the event loop (see
 * ratelimit.h for the model and the design choices).
 *
 * Implementation notes:
 *  - Refill arithmetic avoids overflow without 128-bit integers: rate and
 *    burst are at most 2^40, so rate * (microseconds below one second) <
 *    2^60; whole seconds are added only while they do not exceed the
 *    deficit, and tokens are clamped at -2^62 so the deficit fits.
 *  - The waiters of a direction are an indexed min-heap ordered by
 *    (prio, sequence number at queueing), so FIFO among equal priorities
 *    and O(log n) to queue, cancel or wake. The waking loop takes a
 *    snapshot of the queue length and wakes at most that many waiters per
 *    direction per tick, always the heap's top (never holding a pointer to
 *    the next one), so a wake callback may queue itself again, cancel or
 *    free anything without breaking the loop and without waking forever.
 *    Before each wake it notes whether the woken waiter's prio is strictly
 *    below the next one's (`alone`), which ratelimit_share() reads.
 *  - `busy` counts ticks on the stack; the last reference dropped during
 *    a tick defers the destruction to the end of the tick.
 */
#include "lib/net/ratelimit.h"

#include <stddef.h>
#include <stdlib.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define USEC_PER_SEC 1000000u
#define TOKENS_FLOOR (-((int64_t)1 << 62))

/* ---- one bucket ---- */

void
ratelimit_bucket_init(ratelimit_bucket_t *b, uint64_t rate, uint64_t burst)
{
  b->rate = rate;
  b->burst = burst;
  b->tokens = (int64_t)burst;
  b->frac = 0;
}

void
ratelimit_bucket_set(ratelimit_bucket_t *b, uint64_t rate, uint64_t burst)
{
  int was_unlimited = b->rate == 0;
  b->rate = rate;
  b->burst = burst;
  if (was_unlimited || b->tokens > (int64_t)burst) {
    b->tokens = (int64_t)burst;
    b->frac = 0;
  }
}

int
ratelimit_bucket_refill(ratelimit_bucket_t *b, uint64_t elapsed_us)
{
  if (!b->rate)
    return 0;
  int was_empty = b->tokens <= 0;
  if (b->tokens >= (int64_t)b->burst) {
    b->tokens = (int64_t)b->burst;
    b->frac = 0;
    return 0;
  }
  uint64_t deficit = (uint64_t)((int64_t)b->burst - b->tokens);
  uint64_t secs = elapsed_us / USEC_PER_SEC;
  uint64_t add;
  if (secs > deficit / b->rate) {
    add = deficit; /* more than enough: full */
  } else {
    uint64_t q = (elapsed_us % USEC_PER_SEC) * b->rate + b->frac;
    add = secs * b->rate + q / USEC_PER_SEC;
    b->frac = q % USEC_PER_SEC;
  }
  if (add >= deficit) {
    b->tokens = (int64_t)b->burst;
    b->frac = 0;
  } else {
    b->tokens += (int64_t)add;
  }
  return was_empty && b->tokens > 0;
}

void
ratelimit_bucket_consume(ratelimit_bucket_t *b, size_t n)
{
  if (!b->rate)
    return;
  if ((uint64_t)n > (uint64_t)(b->tokens - TOKENS_FLOOR))
    b->tokens = TOKENS_FLOOR;
  else
    b->tokens -= (int64_t)n;
}

size_t
ratelimit_bucket_avail(const ratelimit_bucket_t *b)
{
  if (!b->rate)
    return SIZE_MAX;
  if (b->tokens <= 0)
    return 0;
  if ((uint64_t)b->tokens > (uint64_t)SIZE_MAX)
    return SIZE_MAX;
  return (size_t)b->tokens;
}

int
ratelimit_bucket_is_full(const ratelimit_bucket_t *b)
{
  return !b->rate || b->tokens >= (int64_t)b->burst;
}

/* ---- groups ---- */

struct ratelimit_t {
  evloop_t *loop;
  evloop_timer_t *timer;
  ratelimit_bucket_t b[2];
  minheap_t *waiters[2];
  size_t n_waiters[2];
  uint64_t seq;   /* queueing order, for FIFO among equal priorities */
  int alone[2];   /* while waking: the woken waiter outranks the rest */
  uint64_t total[2];
  uint64_t last_us; /* time of the last refill */
  unsigned interval_ms;
  unsigned refs;  /* owner (until ratelimit_free) + users */
  unsigned busy;  /* ticks on the stack */
  int armed;      /* the timer is scheduled (cheaper than asking libevent
                   * on every consume) */
  int orphaned;   /* the owner let go */
};

static void ratelimit_tick(void *arg);

static int
waiter_cmp(const void *a_, const void *b_)
{
  const ratelimit_waiter_t *a = a_, *b = b_;
  if (a->prio != b->prio)
    return a->prio < b->prio ? -1 : 1;
  return a->seq < b->seq ? -1 : (a->seq > b->seq ? 1 : 0);
}

int
ratelimit_params_check(uint64_t rate, uint64_t burst, unsigned interval_ms,
                       const char **err)
{
  const char *e = NULL;
  if (interval_ms < RATELIMIT_MIN_INTERVAL_MS ||
      interval_ms > RATELIMIT_MAX_INTERVAL_MS)
    e = "refill interval must be between 1 and 1000 milliseconds";
  else if (rate > RATELIMIT_MAX)
    e = "rate too large (at most 1 TiB/s)";
  else if (rate && burst == 0)
    e = "burst must be at least 1 byte";
  else if (rate && burst > RATELIMIT_MAX)
    e = "burst too large (at most 1 TiB)";
  if (e && err)
    *err = e;
  return e ? -1 : 0;
}

static void
clamp_params(uint64_t *rate, uint64_t *burst, unsigned *interval_ms)
{
  const char *e = NULL;
  if (ratelimit_params_check(*rate, *burst, *interval_ms, &e) == 0)
    return;
  log_warn("bad rate limit (rate %llu, burst %llu, interval %u ms): %s; "
           "clamping", (unsigned long long)*rate,
           (unsigned long long)*burst, *interval_ms, e);
  if (*interval_ms < RATELIMIT_MIN_INTERVAL_MS)
    *interval_ms = RATELIMIT_MIN_INTERVAL_MS;
  if (*interval_ms > RATELIMIT_MAX_INTERVAL_MS)
    *interval_ms = RATELIMIT_MAX_INTERVAL_MS;
  if (*rate > RATELIMIT_MAX)
    *rate = RATELIMIT_MAX;
  if (*burst > RATELIMIT_MAX)
    *burst = RATELIMIT_MAX;
  if (*rate && *burst == 0)
    *burst = *rate;
}

ratelimit_t *
ratelimit_new(evloop_t *loop, uint64_t rate, uint64_t burst,
              unsigned interval_ms)
{
  clamp_params(&rate, &burst, &interval_ms);
  ratelimit_t *rl = pc_zalloc(sizeof(*rl));
  rl->loop = loop;
  rl->timer = evloop_timer_new(loop, ratelimit_tick, rl);
  rl->interval_ms = interval_ms;
  rl->refs = 1;
  for (int d = 0; d < 2; d++) {
    ratelimit_bucket_init(&rl->b[d], rate, burst);
    rl->waiters[d] = minheap_new(waiter_cmp,
                                 offsetof(ratelimit_waiter_t, heap_idx));
  }
  return rl;
}

static void
ratelimit_destroy(ratelimit_t *rl)
{
  for (int d = 0; d < 2; d++) {
    ratelimit_waiter_t *w;
    while ((w = minheap_pop(rl->waiters[d])))
      w->rl = NULL;
    minheap_free(rl->waiters[d], NULL);
  }
  evloop_timer_free(rl->timer);
  free(rl);
}

static int
ratelimit_needs_timer(const ratelimit_t *rl)
{
  return rl->n_waiters[0] || rl->n_waiters[1] ||
         !ratelimit_bucket_is_full(&rl->b[0]) ||
         !ratelimit_bucket_is_full(&rl->b[1]);
}

/* Start the timer if it is idle and there is work: the next tick falls on
 * a multiple of the interval. Idle means both buckets were full, so no
 * refill is lost by restarting the clock now. */
static void
ratelimit_schedule(ratelimit_t *rl)
{
  if (rl->armed || !ratelimit_needs_timer(rl))
    return;
  uint64_t now = evloop_now_us(rl->loop);
  uint64_t iv = (uint64_t)rl->interval_ms * 1000u;
  if (!rl->busy)
    rl->last_us = now; /* (within a tick last_us is already now) */
  evloop_timer_schedule(rl->timer, iv - now % iv);
  rl->armed = 1;
}

/* After a reconfiguration or the owner's free: waiters that could go now
 * are woken from the loop at once, not at the next aligned tick. */
static void
ratelimit_kick(ratelimit_t *rl)
{
  for (int d = 0; d < 2; d++) {
    if (rl->n_waiters[d] && ratelimit_bucket_avail(&rl->b[d]) > 0) {
      if (!rl->armed && !rl->busy)
        rl->last_us = evloop_now_us(rl->loop);
      evloop_timer_schedule(rl->timer, 0);
      rl->armed = 1;
      return;
    }
  }
}

static void
ratelimit_tick(void *arg)
{
  ratelimit_t *rl = arg;
  /* The loop's cached time dates from before this iteration's I/O
   * callbacks: refresh it, so that the refill is credited up to now and
   * the next tick is aimed at the right moment. */
  evloop_update_time(rl->loop);
  uint64_t now = evloop_now_us(rl->loop);
  uint64_t elapsed = now > rl->last_us ? now - rl->last_us : 0;
  rl->last_us = now;
  rl->armed = 0;
  rl->busy++;
  for (int d = 0; d < 2; d++) {
    ratelimit_bucket_refill(&rl->b[d], elapsed);
    size_t n = rl->n_waiters[d];
    while (n-- > 0 && ratelimit_bucket_avail(&rl->b[d]) > 0) {
      ratelimit_waiter_t *w = minheap_pop(rl->waiters[d]);
      if (!w)
        break;
      w->rl = NULL;
      rl->n_waiters[d]--;
      const ratelimit_waiter_t *next = minheap_peek(rl->waiters[d]);
      rl->alone[d] = !next || next->prio > w->prio;
      w->fn(w->arg);
      rl->alone[d] = 0;
    }
  }
  rl->busy--;
  if (rl->refs == 0) {
    ratelimit_destroy(rl);
    return;
  }
  ratelimit_schedule(rl);
}

/* Credit the time since the last refill at the current rates, so that a
 * change of rate takes effect from now on. */
static void
ratelimit_catch_up(ratelimit_t *rl)
{
  if (!rl->armed || rl->busy)
    return;
  uint64_t now = evloop_now_us(rl->loop);
  if (now <= rl->last_us)
    return;
  for (int d = 0; d < 2; d++)
    ratelimit_bucket_refill(&rl->b[d], now - rl->last_us);
  rl->last_us = now;
}

int
ratelimit_configure(ratelimit_t *rl, uint64_t rate, uint64_t burst,
                    unsigned interval_ms)
{
  const char *e = NULL;
  if (ratelimit_params_check(rate, burst, interval_ms, &e) < 0) {
    log_warn("cannot reconfigure rate limit: %s", e);
    return -1;
  }
  if (interval_ms != rl->interval_ms) {
    rl->interval_ms = interval_ms;
    if (rl->armed) {
      /* Re-align; the refill is by elapsed time, so nothing is lost. */
      evloop_timer_cancel(rl->timer);
      uint64_t now = evloop_now_us(rl->loop);
      uint64_t iv = (uint64_t)interval_ms * 1000u;
      evloop_timer_schedule(rl->timer, iv - now % iv);
    }
  }
  ratelimit_configure_dir(rl, RATELIMIT_READ, rate, burst);
  ratelimit_configure_dir(rl, RATELIMIT_WRITE, rate, burst);
  return 0;
}

int
ratelimit_configure_dir(ratelimit_t *rl, ratelimit_dir_t d, uint64_t rate,
                        uint64_t burst)
{
  const char *e = NULL;
  if (ratelimit_params_check(rate, burst, rl->interval_ms, &e) < 0) {
    log_warn("cannot reconfigure rate limit: %s", e);
    return -1;
  }
  if (rl->orphaned)
    return 0; /* stays unlimited until the last user goes */
  ratelimit_catch_up(rl);
  ratelimit_bucket_t *b = &rl->b[d];
  ratelimit_bucket_set(b, rate, burst);
  ratelimit_schedule(rl);
  ratelimit_kick(rl);
  return 0;
}

void
ratelimit_ref(ratelimit_t *rl)
{
  rl->refs++;
}

void
ratelimit_unref(ratelimit_t *rl)
{
  if (!rl)
    return;
  if (--rl->refs == 0 && !rl->busy)
    ratelimit_destroy(rl);
}

void
ratelimit_free_(ratelimit_t *rl)
{
  if (!rl)
    return;
  if (rl->orphaned) {
    log_bug("rate limit group freed twice");
    return;
  }
  /* Unlimited from now on; waiters are woken from the loop at once. */
  for (int d = 0; d < 2; d++)
    ratelimit_bucket_set(&rl->b[d], 0, 0);
  rl->orphaned = 1;
  if (rl->refs > 1) {
    ratelimit_kick(rl);
  } else {
    evloop_timer_cancel(rl->timer);
    rl->armed = 0;
  }
  ratelimit_unref(rl);
}

size_t
ratelimit_avail(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return ratelimit_bucket_avail(&rl->b[d]);
}

void
ratelimit_consume(ratelimit_t *rl, ratelimit_dir_t d, size_t n)
{
  rl->total[d] += n;
  if (!rl->b[d].rate)
    return;
  ratelimit_bucket_consume(&rl->b[d], n);
  ratelimit_schedule(rl);
}

int
ratelimit_is_limited(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->b[d].rate != 0;
}

int64_t
ratelimit_tokens(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->b[d].tokens;
}

uint64_t
ratelimit_rate(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->b[d].rate;
}

uint64_t
ratelimit_burst(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->b[d].burst;
}

unsigned
ratelimit_interval_ms(const ratelimit_t *rl)
{
  return rl->interval_ms;
}

uint64_t
ratelimit_total(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->total[d];
}

/* ---- waiters ---- */

void
ratelimit_waiter_init(ratelimit_waiter_t *w, ratelimit_wake_fn fn,
                      void *arg)
{
  w->heap_idx = MINHEAP_IDX_NONE;
  w->prio = 0;
  w->seq = 0;
  w->rl = NULL;
  w->dir = RATELIMIT_READ;
  w->fn = fn;
  w->arg = arg;
}

void
ratelimit_waiter_cancel(ratelimit_waiter_t *w)
{
  if (!w->rl)
    return;
  minheap_remove(w->rl->waiters[w->dir], w);
  w->rl->n_waiters[w->dir]--;
  w->rl = NULL;
}

void
ratelimit_wait_prio(ratelimit_t *rl, ratelimit_dir_t d,
                    ratelimit_waiter_t *w, double prio)
{
  if (w->rl == rl && w->dir == d)
    return;
  ratelimit_waiter_cancel(w);
  w->rl = rl;
  w->dir = d;
  w->prio = prio == prio ? prio : 0; /* NaN would break the order */
  w->seq = ++rl->seq;
  minheap_add(rl->waiters[d], w);
  rl->n_waiters[d]++;
  ratelimit_schedule(rl);
}

void
ratelimit_wait(ratelimit_t *rl, ratelimit_dir_t d, ratelimit_waiter_t *w)
{
  ratelimit_wait_prio(rl, d, w, 0);
}

size_t
ratelimit_n_waiting(const ratelimit_t *rl, ratelimit_dir_t d)
{
  return rl->n_waiters[d];
}

size_t
ratelimit_share(const ratelimit_t *rl, ratelimit_dir_t d, size_t min_share)
{
  size_t avail = ratelimit_bucket_avail(&rl->b[d]);
  if (avail == SIZE_MAX)
    return SIZE_MAX;
  if (rl->alone[d])
    return avail;
  size_t share = avail / (rl->n_waiters[d] + 1);
  if (share < min_share)
    share = min_share;
  return share < avail ? share : avail;
}
