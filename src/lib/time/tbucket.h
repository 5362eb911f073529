/* SPDX-License-Identifier: BSD-3-Clause */
/* tbucket.h -- a counting token bucket (events per second with a burst),
 * for rate limits on things that happen, not bytes: circuits created by
 * one address, streams opened on one circuit, connections from one
 * address.
 *
 * The bucket holds at most `burst` tokens and gains `rate` per second,
 * computed from the elapsed time (microseconds, any monotonic clock the
 * caller passes) when it is used, so an idle bucket costs nothing. The
 * fraction of a token earned between two uses is carried, so rates that
 * do not divide the elapsed time are exact on average. Rate 0 never
 * refills. A fresh bucket is full.
 */
#ifndef PCTOR_LIB_TIME_TBUCKET_H
#define PCTOR_LIB_TIME_TBUCKET_H
#include <stdint.h>

typedef struct tbucket_t {
  uint32_t rate;   /* tokens per second */
  uint32_t burst;  /* capacity */
  uint32_t tokens;
  uint64_t last_us; /* last refill */
  uint64_t frac;   /* token fractions earned: units of 1/1e6 token */
} tbucket_t;

void tbucket_init(tbucket_t *b, uint32_t rate, uint32_t burst,
                  uint64_t now_us);
/* New rate and burst, keeping the tokens (capped at the new burst). */
void tbucket_adjust(tbucket_t *b, uint32_t rate, uint32_t burst,
                    uint64_t now_us);
void tbucket_refill(tbucket_t *b, uint64_t now_us);
/* Refill, then take one token: 1 if there was one, 0 if empty. */
int tbucket_take(tbucket_t *b, uint64_t now_us);
/* Whether the bucket would be full at now_us (refills). */
int tbucket_is_full(tbucket_t *b, uint64_t now_us);
#endif
