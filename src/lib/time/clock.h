/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.h -- clocks: monotonic time for intervals, wall-clock time, and a
 * cached "approximately now".
 *
 * Use the monotonic clock (CLOCK_MONOTONIC: never jumps when the system
 * time is changed) to measure intervals and schedule work, the wall clock
 * only for things that must agree with other hosts (document times, HTTP
 * dates, certificate validity). Code that needs the current time once per
 * event (expiry checks, timestamps on circuits) calls time_approx_now(),
 * which reads a value the main loop refreshes once per iteration with
 * time_approx_update() instead of asking the kernel every time.
 *
 * Tests can freeze the monotonic clock with time_mono_mock() and set the
 * approximate time with time_approx_set().
 */
#ifndef PCTOR_LIB_TIME_CLOCK_H
#define PCTOR_LIB_TIME_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic time since an arbitrary fixed point (boot), in nanoseconds,
 * microseconds or milliseconds. */
uint64_t time_mono_ns(void);
uint64_t time_mono_us(void);
uint64_t time_mono_ms(void);

/* Tests only: make the time_mono_*() functions return ns (converted to
 * their unit) until time_mono_unmock(). */
void time_mono_mock(uint64_t ns);
void time_mono_unmock(void);

/* Wall-clock time: seconds, and microseconds, since 1970-01-01 00:00 UTC. */
time_t time_wall_now(void);
int64_t time_wall_us(void);

/* The cached approximate wall-clock time. Until the first
 * time_approx_update()/time_approx_set() it is the real current time. */
time_t time_approx_now(void);
/* Refresh the cache from the wall clock (the main loop, once per
 * iteration). */
void time_approx_update(void);
/* Set the cache to now (the main loop if it already has the time; tests). */
void time_approx_set(time_t now);

#endif
