/* SPDX-License-Identifier: BSD-3-Clause */
/* ratelim.c -- fixed-window log rate limiting (see ratelim.h). */
#include "lib/log/ratelim.h"

int
log_ratelim_allow(log_ratelim_t *rl, time_t now, unsigned *suppressed)
{
  if (now - rl->window_start >= (time_t)rl->interval || now < rl->window_start) {
    rl->window_start = now;
    rl->n_in_window = 0;
  }
  if (rl->n_in_window >= rl->burst) {
    rl->suppressed++;
    return 0;
  }
  rl->n_in_window++;
  *suppressed = rl->suppressed;
  rl->suppressed = 0;
  return 1;
}
