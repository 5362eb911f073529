/* SPDX-License-Identifier: BSD-3-Clause */
/* check_evloop.c -- unit tests for lib/evloop: one-shot and periodic
 * timers (timing and cancellation), deferred callbacks (coalescing, order,
 * cancel, self-free), signals, fd readiness on a pipe, evloop_exit() and
 * the cached clock. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/evloop/evloop.h"

Suite *suite_evloop(void);

static evloop_t *L;
static int log_pos;
static char order[64];

static void
note(char c)
{
  if (log_pos < (int)sizeof(order) - 1)
    order[log_pos++] = c;
}

START_TEST(test_run_empty_and_info)
{
  L = evloop_new();
  ck_assert_int_eq(evloop_run(L), 0); /* nothing to wait for */
  ck_assert_ptr_nonnull(evloop_backend(L));
  ck_assert_ptr_nonnull(strstr(evloop_library_version(), "2."));
  uint64_t a = evloop_now_us(L);
  usleep(2000);
  uint64_t b = evloop_now_us(L); /* outside run: not cached */
  ck_assert_uint_ge(b - a, 2000);
  evloop_free(L);
  ck_assert_ptr_null(L);
}
END_TEST

struct tstate {
  int fired;
  uint64_t at[8];
  evloop_timer_t *t;
};

static void
timer_cb(void *arg)
{
  struct tstate *s = arg;
  if (s->fired < 8)
    s->at[s->fired] = evloop_now_us(L);
  s->fired++;
}

START_TEST(test_timer_oneshot)
{
  L = evloop_new();
  struct tstate s = {0};
  s.t = evloop_timer_new(L, timer_cb, &s);
  ck_assert_int_eq(evloop_timer_is_pending(s.t), 0);
  uint64_t start = evloop_now_us(L);
  evloop_timer_schedule(s.t, 50000);
  ck_assert_int_eq(evloop_timer_is_pending(s.t), 1);
  ck_assert_int_eq(evloop_run(L), 0); /* returns once the timer fired */
  ck_assert_int_eq(s.fired, 1);
  ck_assert_uint_ge(s.at[0] - start, 50000 - evloop_timer_early_slack_us());
  ck_assert_uint_lt(s.at[0] - start, 1000000);
  ck_assert_int_eq(evloop_timer_is_pending(s.t), 0);
  /* Rescheduling replaces the deadline; cancel prevents firing. */
  evloop_timer_schedule(s.t, 10000000);
  evloop_timer_schedule(s.t, 1000);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(s.fired, 2);
  evloop_timer_schedule(s.t, 1000);
  evloop_timer_cancel(s.t);
  ck_assert_int_eq(evloop_timer_is_pending(s.t), 0);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(s.fired, 2);
  evloop_timer_free(s.t);
  evloop_free(L);
}
END_TEST

static evloop_timer_t *periodic_t;
static void
periodic_cb(void *arg)
{
  struct tstate *s = arg;
  timer_cb(s);
  if (s->fired == 5)
    evloop_timer_cancel(periodic_t);
}

START_TEST(test_timer_periodic)
{
  L = evloop_new();
  struct tstate s = {0};
  periodic_t = evloop_timer_new(L, periodic_cb, &s);
  uint64_t start = evloop_now_us(L);
  evloop_timer_schedule_periodic(periodic_t, 20000);
  ck_assert_int_eq(evloop_run(L), 0); /* ends when cancelled */
  ck_assert_int_eq(s.fired, 5);
  /* The k-th firing never comes earlier than the coarse clock allows (a
   * run on 2026-11-27 saw the fifth firing 7.2 ms early with a 4 ms tick).
   * Gaps between firings can be short on a loaded machine: a late firing
   * does not push the schedule back. */
  uint64_t slack = evloop_timer_early_slack_us();
  ck_assert_uint_lt(slack, 50000); /* a tick this long is a broken clock */
  for (int i = 0; i < 5; i++)
    ck_assert_uint_ge(s.at[i] - start, (uint64_t)(i + 1) * 20000 - slack);
  /* Switch the same timer back to one-shot. */
  evloop_timer_schedule(periodic_t, 1000);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(s.fired, 6);
  ck_assert_int_eq(evloop_timer_is_pending(periodic_t), 0);
  evloop_timer_free(periodic_t);
  evloop_free(L);
}
END_TEST

static evloop_deferred_t *d1, *d2, *d3;
static void
d_cb(void *arg)
{
  note(*(const char *)arg);
}
static void
starter_cb(void *arg)
{
  (void)arg;
  note('S');
  evloop_deferred_schedule(d1);
  evloop_deferred_schedule(d1); /* coalesced */
  evloop_deferred_schedule(d2);
  evloop_deferred_schedule(d3);
  evloop_deferred_cancel(d3);
  note('E'); /* deferred ones run only after this callback returns */
}

START_TEST(test_deferred)
{
  L = evloop_new();
  log_pos = 0;
  memset(order, 0, sizeof(order));
  d1 = evloop_deferred_new(L, d_cb, "1");
  d2 = evloop_deferred_new(L, d_cb, "2");
  d3 = evloop_deferred_new(L, d_cb, "3");
  evloop_timer_t *t = evloop_timer_new(L, starter_cb, NULL);
  evloop_timer_schedule(t, 0);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_str_eq(order, "SE12");
  /* Scheduling from outside the loop runs on the next run. */
  evloop_deferred_schedule(d2);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_str_eq(order, "SE122");
  evloop_timer_free(t);
  evloop_deferred_free(d1);
  evloop_deferred_free(d2);
  evloop_deferred_free(d3);
  evloop_free(L);
}
END_TEST

static evloop_deferred_t *selfd;
static void
self_free_cb(void *arg)
{
  (*(int *)arg)++;
  evloop_deferred_free(selfd);
}

START_TEST(test_deferred_self_free)
{
  L = evloop_new();
  int n = 0;
  selfd = evloop_deferred_new(L, self_free_cb, &n);
  evloop_deferred_schedule(selfd);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(n, 1);
  ck_assert_ptr_null(selfd);
  evloop_free(L);
}
END_TEST

static void
sig_cb(void *arg)
{
  (*(int *)arg)++;
  evloop_exit(L);
}
static void
raise_cb(void *arg)
{
  (void)arg;
  raise(SIGUSR1);
}

START_TEST(test_signal)
{
  L = evloop_new();
  int n = 0;
  evloop_signal_t *s = evloop_signal_new(L, SIGUSR1, sig_cb, &n);
  evloop_timer_t *t = evloop_timer_new(L, raise_cb, NULL);
  evloop_timer_schedule(t, 1000);
  ck_assert_int_eq(evloop_run(L), 0); /* sig_cb calls evloop_exit */
  ck_assert_int_eq(n, 1);
  evloop_timer_free(t);
  evloop_signal_free(s);
  evloop_free(L);
}
END_TEST

struct iostate {
  int fds[2];
  evloop_io_t *io;
  int reads, writes;
  uint64_t t_first, t_second;
};

static void
io_cb(int fd, int what, void *arg)
{
  struct iostate *s = arg;
  if (what & EVLOOP_READ) {
    char c;
    ck_assert_int_eq(fd, s->fds[0]);
    /* Level-triggered: read one byte per callback, get called again. */
    ck_assert_int_eq(read(fd, &c, 1), 1);
    s->reads++;
    if (s->reads == 3)
      evloop_io_set(s->io, 0);
  }
  if (what & EVLOOP_WRITE) {
    ck_assert_int_eq(fd, s->fds[1]);
    s->writes++;
    if (s->writes == 1) {
      s->t_first = evloop_now_us(L);
      usleep(3000);
      s->t_second = evloop_now_us(L); /* cached within an iteration */
    }
    if (s->writes == 2)
      evloop_io_set(s->io, 0);
  }
}

START_TEST(test_io_level_triggered)
{
  L = evloop_new();
  struct iostate s = {0};
  ck_assert_int_eq(pipe(s.fds), 0);
  ck_assert_int_eq(write(s.fds[1], "abc", 3), 3);
  s.io = evloop_io_new(L, s.fds[0], io_cb, &s);
  evloop_io_set(s.io, EVLOOP_READ);
  ck_assert_int_eq(evloop_io_get(s.io), EVLOOP_READ);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(s.reads, 3);
  ck_assert_int_eq(evloop_io_get(s.io), 0);
  evloop_io_free(s.io);

  /* Write interest on a writable pipe: called every iteration. */
  s.io = evloop_io_new(L, s.fds[1], io_cb, &s);
  evloop_io_set(s.io, EVLOOP_WRITE);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(s.writes, 2);
  ck_assert_uint_eq(s.t_first, s.t_second);
  evloop_io_free(s.io);
  close(s.fds[0]);
  close(s.fds[1]);
  evloop_free(L);
}
END_TEST

static void
update_time_cb(void *arg)
{
  uint64_t *v = arg;
  v[0] = evloop_now_us(L);
  usleep(2000);
  v[1] = evloop_now_us(L);
  evloop_update_time(L);
  v[2] = evloop_now_us(L);
}

START_TEST(test_update_time)
{
  L = evloop_new();
  uint64_t v[3];
  evloop_timer_t *t = evloop_timer_new(L, update_time_cb, v);
  evloop_timer_schedule(t, 0);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_uint_eq(v[0], v[1]);
  ck_assert_uint_ge(v[2], v[1] + 2000);
  evloop_timer_free(t);
  evloop_free(L);
}
END_TEST

Suite *
suite_evloop(void)
{
  Suite *s = suite_create("evloop");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_run_empty_and_info);
  tcase_add_test(tc, test_timer_oneshot);
  tcase_add_test(tc, test_timer_periodic);
  tcase_add_test(tc, test_deferred);
  tcase_add_test(tc, test_deferred_self_free);
  tcase_add_test(tc, test_signal);
  tcase_add_test(tc, test_io_level_triggered);
  tcase_add_test(tc, test_update_time);
  suite_add_tcase(s, tc);
  return s;
}
