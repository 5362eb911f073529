/* SPDX-License-Identifier: BSD-3-Clause */
/* evloop.h -- pctor's only interface to libevent.
 *
 * The main loop, file-descriptor readiness, timers, signals and deferred
 * callbacks, in pctor's own types. No file outside src/lib/evloop includes
 * <event2/...>. One evloop_t per process (the main loop); objects created
 * on it must be freed before it.
 */
#ifndef PCTOR_LIB_EVLOOP_EVLOOP_H
#define PCTOR_LIB_EVLOOP_EVLOOP_H
#include <stdint.h>

typedef struct evloop_t evloop_t;
typedef struct evloop_io_t evloop_io_t;
typedef struct evloop_timer_t evloop_timer_t;
typedef struct evloop_signal_t evloop_signal_t;
typedef struct evloop_deferred_t evloop_deferred_t;

#define EVLOOP_READ 0x1
#define EVLOOP_WRITE 0x2

evloop_t *evloop_new(void);
void evloop_free_(evloop_t *loop);
#define evloop_free(l) do { evloop_free_(l); (l) = NULL; } while (0)
/* Run until evloop_exit() is called or nothing is left to wait for.
 * Returns 0, or -1 on a libevent failure. */
int evloop_run(evloop_t *loop);
/* Make evloop_run() return after the current callbacks finish. */
void evloop_exit(evloop_t *loop);
/* Monotonic time in microseconds, cached per loop iteration (cheap). */
uint64_t evloop_now_us(evloop_t *loop);
/* Refresh the cached time (after long work inside a callback). */
void evloop_update_time(evloop_t *loop);
/* Backend name ("epoll") and libevent version, for logs. */
const char *evloop_backend(const evloop_t *loop);
const char *evloop_library_version(void);

/* Readiness of one fd: cb is called with EVLOOP_READ and/or EVLOOP_WRITE
 * while the corresponding interest is enabled (level-triggered). */
typedef void (*evloop_io_cb)(int fd, int what, void *arg);
evloop_io_t *evloop_io_new(evloop_t *loop, int fd, evloop_io_cb cb,
                           void *arg);
/* Set which of EVLOOP_READ|EVLOOP_WRITE we are interested in. */
void evloop_io_set(evloop_io_t *io, int what);
int evloop_io_get(const evloop_io_t *io);
void evloop_io_free_(evloop_io_t *io);
#define evloop_io_free(x) do { evloop_io_free_(x); (x) = NULL; } while (0)

typedef void (*evloop_cb)(void *arg);
/* A timer; not scheduled until evloop_timer_schedule().
 * libevent keeps its deadlines on CLOCK_MONOTONIC_COARSE, which lags
 * CLOCK_MONOTONIC (evloop_now_us()) by up to about two kernel ticks, so a
 * timer can fire that much (8 ms at HZ=250) before its delay has passed by
 * evloop_now_us(). Code that needs an exact deadline compares the clock in
 * its callback; evloop_timer_early_slack_us() gives the bound. */
evloop_timer_t *evloop_timer_new(evloop_t *loop, evloop_cb cb, void *arg);
/* (Re)schedule to fire once after usec microseconds. */
void evloop_timer_schedule(evloop_timer_t *t, uint64_t usec);
/* Fire every usec microseconds until cancelled. */
void evloop_timer_schedule_periodic(evloop_timer_t *t, uint64_t usec);
void evloop_timer_cancel(evloop_timer_t *t);
/* How early (in microseconds, by evloop_now_us()) a timer may fire: two
 * resolutions of the coarse clock plus one millisecond of rounding. */
uint64_t evloop_timer_early_slack_us(void);
int evloop_timer_is_pending(const evloop_timer_t *t);
void evloop_timer_free_(evloop_timer_t *t);
#define evloop_timer_free(x) do { evloop_timer_free_(x); (x) = NULL; } while (0)

/* Signal handling through the loop (callback runs in loop context). */
evloop_signal_t *evloop_signal_new(evloop_t *loop, int signo, evloop_cb cb,
                                   void *arg);
void evloop_signal_free_(evloop_signal_t *s);
#define evloop_signal_free(x) do { evloop_signal_free_(x); (x) = NULL; } while (0)

/* A callback run once, soon, from the loop (after the current callback
 * returns); scheduling it again before it ran is a no-op. Used to batch
 * work such as flushing circuit queues. It runs in the same loop
 * iteration, after the callbacks already due; one scheduled from its own
 * callback also runs again in the same iteration, so work that can go on
 * indefinitely should continue from a zero-delay timer instead (which
 * fires in the next iteration, after the loop polled the fds again). */
evloop_deferred_t *evloop_deferred_new(evloop_t *loop, evloop_cb cb,
                                       void *arg);
void evloop_deferred_schedule(evloop_deferred_t *d);
void evloop_deferred_cancel(evloop_deferred_t *d);
void evloop_deferred_free_(evloop_deferred_t *d);
#define evloop_deferred_free(x) do { evloop_deferred_free_(x); (x) = NULL; } while (0)
#endif
