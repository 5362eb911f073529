/* SPDX-License-Identifier: BSD-3-Clause */
/* evloop.c -- the main loop over libevent 2.1 (see evloop.h).
 *
 * Design:
 *  - One event_base created with EVENT_BASE_FLAG_NOLOCK: pctor is single
 *    threaded, so libevent's locks would be pure overhead.
 *  - evloop_run() drives the base one iteration at a time
 *    (event_base_loop(EVLOOP_ONCE)), so it knows where iterations start:
 *    the cached monotonic clock is invalidated before each iteration and
 *    refilled by the first evloop_now_us() call after the poll returned,
 *    i.e. at most one clock_gettime(CLOCK_MONOTONIC) per iteration.
 *  - An fd's readiness uses two persistent libevent events, one for read
 *    and one for write, so that turning write interest on or off (which
 *    connections do whenever their outbuf fills or empties) touches only
 *    that event and costs at most one epoll_ctl.
 *  - Deferred callbacks are non-pending events made active with
 *    event_active(): libevent appends them to the active queue, so they run
 *    after the callbacks already queued in this iteration, and activating
 *    an already active event is a no-op (the "schedule twice runs once"
 *    rule). event_del() removes them from the queue (cancel).
 *  - Every wrapper passes its own object to a trampoline and touches it
 *    only before calling the user callback, so a callback may free the
 *    object it was called for.
 */
#include "lib/evloop/evloop.h"
#include "lib/evloop/evloop_internal.h"

#include <event2/event.h>
#include <stdlib.h>
#include <time.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct evloop_t {
  struct event_base *base;
  int running;
  int exit_requested;
  int time_valid;
  uint64_t now_us;
};

struct evloop_io_t {
  evloop_t *loop;
  struct event *rev, *wev;
  int fd;
  int what;
  evloop_io_cb cb;
  void *arg;
};

struct evloop_timer_t {
  evloop_t *loop;
  struct event *ev;
  int periodic; /* current libevent flags include EV_PERSIST */
  evloop_cb cb;
  void *arg;
};

struct evloop_signal_t {
  struct event *ev;
  evloop_cb cb;
  void *arg;
};

struct evloop_deferred_t {
  struct event *ev;
  evloop_cb cb;
  void *arg;
};

static void
evloop_fatal(const char *what)
{
  log_err("libevent: %s failed", what);
  abort();
}

evloop_t *
evloop_new(void)
{
  struct event_config *cfg = event_config_new();
  if (!cfg)
    evloop_fatal("event_config_new");
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  struct event_base *base = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (!base)
    evloop_fatal("event_base_new_with_config");
  evloop_t *loop = pc_zalloc(sizeof(*loop));
  loop->base = base;
  return loop;
}

void
evloop_free_(evloop_t *loop)
{
  if (!loop)
    return;
  event_base_free(loop->base);
  free(loop);
}

int
evloop_run(evloop_t *loop)
{
  int ret = 0;
  loop->exit_requested = 0;
  loop->running = 1;
  while (!loop->exit_requested) {
    loop->time_valid = 0;
    int r = event_base_loop(loop->base, EVLOOP_ONCE);
    if (r < 0) {
      log_warn("event_base_loop failed");
      ret = -1;
      break;
    }
    if (r == 1) /* nothing pending or active */
      break;
  }
  loop->running = 0;
  loop->time_valid = 0;
  loop->exit_requested = 0;
  return ret;
}

void
evloop_exit(evloop_t *loop)
{
  /* EVLOOP_ONCE makes event_base_loop() return at the end of the current
   * iteration; the flag stops evloop_run() from starting another. */
  loop->exit_requested = 1;
}

void
evloop_update_time(evloop_t *loop)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  loop->now_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
  loop->time_valid = loop->running;
}

uint64_t
evloop_now_us(evloop_t *loop)
{
  if (!loop->time_valid)
    evloop_update_time(loop);
  return loop->now_us;
}

struct event_base *
evloop_event_base_(evloop_t *loop)
{
  return loop->base;
}

const char *
evloop_backend(const evloop_t *loop)
{
  return event_base_get_method(loop->base);
}

const char *
evloop_library_version(void)
{
  return event_get_version();
}

static inline struct timeval
usec_to_tv(uint64_t usec)
{
  struct timeval tv;
  tv.tv_sec = (time_t)(usec / 1000000u);
  tv.tv_usec = (suseconds_t)(usec % 1000000u);
  return tv;
}

/* ---- fd readiness ---- */

static void
io_tramp(evutil_socket_t fd, short what, void *arg)
{
  evloop_io_t *io = arg;
  int w = 0;
  if (what & EV_READ)
    w |= EVLOOP_READ;
  if (what & EV_WRITE)
    w |= EVLOOP_WRITE;
  io->cb((int)fd, w, io->arg); /* may free io */
}

evloop_io_t *
evloop_io_new(evloop_t *loop, int fd, evloop_io_cb cb, void *arg)
{
  evloop_io_t *io = pc_zalloc(sizeof(*io));
  io->loop = loop;
  io->fd = fd;
  io->cb = cb;
  io->arg = arg;
  io->rev = event_new(loop->base, fd, EV_READ | EV_PERSIST, io_tramp, io);
  io->wev = event_new(loop->base, fd, EV_WRITE | EV_PERSIST, io_tramp, io);
  if (!io->rev || !io->wev)
    evloop_fatal("event_new");
  return io;
}

void
evloop_io_set(evloop_io_t *io, int what)
{
  int changed = io->what ^ what;
  if (changed & EVLOOP_READ) {
    if ((what & EVLOOP_READ) ? event_add(io->rev, NULL) : event_del(io->rev))
      log_warn("cannot change read interest on fd %d", io->fd);
  }
  if (changed & EVLOOP_WRITE) {
    if ((what & EVLOOP_WRITE) ? event_add(io->wev, NULL) : event_del(io->wev))
      log_warn("cannot change write interest on fd %d", io->fd);
  }
  io->what = what & (EVLOOP_READ | EVLOOP_WRITE);
}

int
evloop_io_get(const evloop_io_t *io)
{
  return io->what;
}

void
evloop_io_free_(evloop_io_t *io)
{
  if (!io)
    return;
  event_free(io->rev);
  event_free(io->wev);
  free(io);
}

/* ---- timers ---- */

static void
timer_tramp(evutil_socket_t fd, short what, void *arg)
{
  evloop_timer_t *t = arg;
  (void)fd;
  (void)what;
  t->cb(t->arg); /* may free t */
}

evloop_timer_t *
evloop_timer_new(evloop_t *loop, evloop_cb cb, void *arg)
{
  evloop_timer_t *t = pc_zalloc(sizeof(*t));
  t->loop = loop;
  t->cb = cb;
  t->arg = arg;
  t->ev = event_new(loop->base, -1, 0, timer_tramp, t);
  if (!t->ev)
    evloop_fatal("event_new");
  return t;
}

static void
timer_arm(evloop_timer_t *t, uint64_t usec, int periodic)
{
  if (periodic != t->periodic) {
    /* The persist flag is fixed at assignment time: reassign. The event
     * is not pending or active after event_del(), as event_assign()
     * requires. */
    event_del(t->ev);
    if (event_assign(t->ev, t->loop->base, -1, periodic ? EV_PERSIST : 0,
                     timer_tramp, t))
      evloop_fatal("event_assign");
    t->periodic = periodic;
  }
  struct timeval tv = usec_to_tv(usec);
  if (event_add(t->ev, &tv))
    log_warn("cannot schedule a timer");
}

void
evloop_timer_schedule(evloop_timer_t *t, uint64_t usec)
{
  timer_arm(t, usec, 0);
}

void
evloop_timer_schedule_periodic(evloop_timer_t *t, uint64_t usec)
{
  timer_arm(t, usec, 1);
}

uint64_t
evloop_timer_early_slack_us(void)
{
  uint64_t res_us = 0;
#ifdef CLOCK_MONOTONIC_COARSE
  struct timespec res;
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
    res_us = (uint64_t)res.tv_sec * 1000000u + (uint64_t)res.tv_nsec / 1000u;
#endif
  return 2 * res_us + 1000;
}

void
evloop_timer_cancel(evloop_timer_t *t)
{
  event_del(t->ev);
}

int
evloop_timer_is_pending(const evloop_timer_t *t)
{
  return event_pending(t->ev, EV_TIMEOUT, NULL) ? 1 : 0;
}

void
evloop_timer_free_(evloop_timer_t *t)
{
  if (!t)
    return;
  event_free(t->ev);
  free(t);
}

/* ---- signals ---- */

static void
signal_tramp(evutil_socket_t fd, short what, void *arg)
{
  evloop_signal_t *s = arg;
  (void)fd;
  (void)what;
  s->cb(s->arg);
}

evloop_signal_t *
evloop_signal_new(evloop_t *loop, int signo, evloop_cb cb, void *arg)
{
  evloop_signal_t *s = pc_zalloc(sizeof(*s));
  s->cb = cb;
  s->arg = arg;
  s->ev = evsignal_new(loop->base, signo, signal_tramp, s);
  if (!s->ev)
    evloop_fatal("evsignal_new");
  if (event_add(s->ev, NULL))
    log_warn("cannot catch signal %d", signo);
  return s;
}

void
evloop_signal_free_(evloop_signal_t *s)
{
  if (!s)
    return;
  event_free(s->ev);
  free(s);
}

/* ---- deferred callbacks ---- */

static void
deferred_tramp(evutil_socket_t fd, short what, void *arg)
{
  evloop_deferred_t *d = arg;
  (void)fd;
  (void)what;
  d->cb(d->arg);
}

evloop_deferred_t *
evloop_deferred_new(evloop_t *loop, evloop_cb cb, void *arg)
{
  evloop_deferred_t *d = pc_zalloc(sizeof(*d));
  d->cb = cb;
  d->arg = arg;
  d->ev = event_new(loop->base, -1, 0, deferred_tramp, d);
  if (!d->ev)
    evloop_fatal("event_new");
  return d;
}

void
evloop_deferred_schedule(evloop_deferred_t *d)
{
  event_active(d->ev, EV_TIMEOUT, 1);
}

void
evloop_deferred_cancel(evloop_deferred_t *d)
{
  event_del(d->ev);
}

void
evloop_deferred_free_(evloop_deferred_t *d)
{
  if (!d)
    return;
  event_free(d->ev);
  free(d);
}
