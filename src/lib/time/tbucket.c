/* SPDX-License-Identifier: BSD-3-Clause */
/* tbucket.c -- counting token buckets (see tbucket.h).
 *
 * Refill arithmetic: elapsed microseconds x rate gives millionths of a
 * token; whole tokens are added and the remainder kept in frac. Elapsed
 * time is capped at what refills an empty bucket, so the product cannot
 * overflow whatever the gap (rate and burst are 32-bit).
 */
#include "lib/time/tbucket.h"

void
tbucket_init(tbucket_t *b, uint32_t rate, uint32_t burst, uint64_t now_us)
{
  b->rate = rate;
  b->burst = burst;
  b->tokens = burst;
  b->last_us = now_us;
  b->frac = 0;
}

void
tbucket_adjust(tbucket_t *b, uint32_t rate, uint32_t burst, uint64_t now_us)
{
  tbucket_refill(b, now_us);
  b->rate = rate;
  b->burst = burst;
  if (b->tokens > burst)
    b->tokens = burst;
}

void
tbucket_refill(tbucket_t *b, uint64_t now_us)
{
  if (now_us <= b->last_us) {
    return;
  }
  uint64_t elapsed = now_us - b->last_us;
  b->last_us = now_us;
  if (b->tokens >= b->burst || !b->rate) {
    b->frac = 0;
    return;
  }
  /* Time that refills the whole bucket from empty: more is no use. */
  uint64_t full_us = ((uint64_t)b->burst * 1000000u) / b->rate + 1;
  if (elapsed > full_us)
    elapsed = full_us;
  uint64_t earned = elapsed * b->rate + b->frac; /* millionths */
  uint64_t whole = earned / 1000000u;
  b->frac = earned % 1000000u;
  if (whole >= (uint64_t)(b->burst - b->tokens)) {
    b->tokens = b->burst;
    b->frac = 0;
  } else {
    b->tokens += (uint32_t)whole;
  }
}

int
tbucket_take(tbucket_t *b, uint64_t now_us)
{
  tbucket_refill(b, now_us);
  if (!b->tokens)
    return 0;
  b->tokens--;
  return 1;
}

int
tbucket_is_full(tbucket_t *b, uint64_t now_us)
{
  tbucket_refill(b, now_us);
  return b->tokens >= b->burst;
}
