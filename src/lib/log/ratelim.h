/* SPDX-License-Identifier: BSD-3-Clause */
/* ratelim.h -- limit how often a log message that a remote peer can
 * trigger is written: at most `burst` per `interval` seconds; the rest are
 * counted and the next allowed message says how many were suppressed. */
#ifndef PCTOR_LIB_LOG_RATELIM_H
#define PCTOR_LIB_LOG_RATELIM_H
#include <time.h>

typedef struct log_ratelim_t {
  unsigned interval;   /* seconds */
  unsigned burst;      /* messages per interval */
  time_t window_start;
  unsigned n_in_window;
  unsigned suppressed;
} log_ratelim_t;

#define LOG_RATELIM_INIT(interval, burst) {(interval), (burst), 0, 0, 0}

/* Returns 1 if a message may be logged now (then *suppressed is the number
 * dropped since the last one logged, and is reset), 0 if it must be
 * dropped. */
int log_ratelim_allow(log_ratelim_t *rl, time_t now, unsigned *suppressed);
#endif
