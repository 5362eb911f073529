/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.c -- monotonic, wall-clock and cached time (see clock.h).
 *
 * clock_gettime() is served from the vDSO on Linux, so the monotonic
 * functions are cheap enough for per-cell use. The cached approximate time
 * and the mock are read and written with relaxed atomic operations: the
 * main loop writes them, worker threads may read them, and no ordering
 * with other memory is needed.
 */
#include "lib/time/clock.h"

static time_t approx_now;     /* 0 = not set yet */
static uint64_t mock_ns;
static int mock_enabled;

uint64_t
time_mono_ns(void)
{
  if (__atomic_load_n(&mock_enabled, __ATOMIC_RELAXED))
    return __atomic_load_n(&mock_ns, __ATOMIC_RELAXED);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t
time_mono_us(void)
{
  return time_mono_ns() / 1000;
}

uint64_t
time_mono_ms(void)
{
  return time_mono_ns() / 1000000;
}

void
time_mono_mock(uint64_t ns)
{
  __atomic_store_n(&mock_ns, ns, __ATOMIC_RELAXED);
  __atomic_store_n(&mock_enabled, 1, __ATOMIC_RELAXED);
}

void
time_mono_unmock(void)
{
  __atomic_store_n(&mock_enabled, 0, __ATOMIC_RELAXED);
}

time_t
time_wall_now(void)
{
  return time(NULL);
}

int64_t
time_wall_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

time_t
time_approx_now(void)
{
  time_t t = __atomic_load_n(&approx_now, __ATOMIC_RELAXED);
  return t ? t : time_wall_now();
}

void
time_approx_update(void)
{
  time_approx_set(time_wall_now());
}

void
time_approx_set(time_t now)
{
  __atomic_store_n(&approx_now, now, __ATOMIC_RELAXED);
}
