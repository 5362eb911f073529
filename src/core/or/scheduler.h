/* SPDX-License-Identifier: BSD-3-Clause */
/* scheduler.h -- which circuit's cell goes out next, across every channel.
 *
 * Cells a channel cannot send at once wait in their circuit's
 * circ_queue_t (channel.h). The scheduler moves them into channels' output
 * buffers, one cell at a time, always from the circuit with the lowest
 * exponentially weighted moving average (EWMA) of recently sent cells
 * among ALL circuits with queued cells whose channel can take data now --
 * not per channel, so that with one connection per circuit (PCTCP) quiet
 * circuits still overtake busy ones (Tang & Goldberg's EWMA scheduling,
 * and the cross-connection choice their section 9.2 left open).
 *
 * A circuit's average A decays with half-life H: A <- A * 0.5^(dt/H) + 1
 * per cell sent. It is stored scaled by a global factor 2^((t - base)/H)
 * so that no average is touched except the one that sent a cell; the base
 * moves forward ("renormalisation", O(active circuits)) every few dozen
 * half-lives. The clock is read once per scheduling run.
 *
 * "Can take data" is socket-aware by default (KIST): a channel takes at
 * most what its output buffer has room for AND what the kernel could put
 * on the wire soon according to TCP_INFO, so that the order chosen here is
 * not undone by megabytes waiting in kernel buffers. Channels held back by
 * the kernel are retried every run interval. Under a bandwidth limit, a
 * run hands each token bucket's channels no more than the bucket holds,
 * lowest averages first, so the limit does not undo the order either.
 *
 * Half-life 0 (or negative) turns EWMA off: circuits are then served
 * round robin, one cell each in turn, still across channels.
 */
#ifndef PCTOR_CORE_OR_SCHEDULER_H
#define PCTOR_CORE_OR_SCHEDULER_H
#include <stdint.h>
#include "core/or/channel.h"

/* Defaults: tor's CircuitPriorityHalflifeMsec default and KIST run
 * interval and socket-buffer factor. */
#define SCHEDULER_DEFAULT_HALFLIFE_SEC 30.0
#define SCHEDULER_DEFAULT_RUN_INTERVAL_MS 2
#define SCHEDULER_DEFAULT_SOCKBUF_FACTOR 1.0

typedef struct scheduler_config_t {
  double halflife_sec;      /* <= 0: round robin */
  int socket_aware;         /* KIST (1) or KISTLite (0) */
  uint32_t run_interval_ms; /* retry interval for kernel-limited channels */
  double sockbuf_factor;    /* KIST's extra-space factor */
} scheduler_config_t;

/* Called by channels_init()/channels_shutdown(). */
void scheduler_init(evloop_t *loop);
void scheduler_shutdown(void);
/* Fill cfg with the defaults. */
void scheduler_config_default(scheduler_config_t *cfg);
/* Apply a configuration at any time (SIGHUP, a new consensus): queued
 * cells and circuits stay; averages carry over: those of circuits with
 * queued cells are decayed with the old half-life up to now, those of
 * idle circuits with the new one when they next queue a cell. */
void scheduler_configure(const scheduler_config_t *cfg);
void scheduler_get_config(scheduler_config_t *cfg);

/* The channel may take data now (opened, its output buffer drained, a
 * test unblocked it): offer it cells again. */
void scheduler_channel_wakeup(channel_t *chan);

/* The queue's current average (cells, decayed to now). */
double circ_queue_ewma(const circ_queue_t *cq);

typedef struct scheduler_stats_t {
  uint64_t runs;           /* scheduling runs */
  uint64_t cells;          /* cells moved to output buffers */
  uint64_t renormalisations;
  uint64_t kernel_limited; /* times a channel waited for the kernel */
  uint64_t token_limited;  /* times a channel waited for bucket tokens */
  uint64_t kist_queries;   /* KIST getsockopt queries */
  uint64_t kist_reused;    /* queries saved: a recent answer sufficed */
  unsigned channels_ready; /* channels that can take data now */
  unsigned channels_active;/* channels with queued circuit cells */
} scheduler_stats_t;
void scheduler_get_stats(scheduler_stats_t *out);

/* Tests and benchmarks: run the scheduler now (as the loop would). */
void scheduler_run_now(void);
/* Tests: read the time from *now_us instead of the loop (NULL: the
 * loop again). */
void scheduler_set_clock_for_testing(const uint64_t *now_us);
/* Tests: check every heap's invariants (0 ok, -1 broken). */
int scheduler_check_invariants(void);
#endif
