/* SPDX-License-Identifier: BSD-3-Clause */
/* check_workqueue.c -- the worker pool (lib/evloop/workqueue.c): replies
 * on the loop in order, cancel, a full queue, expiry after max_wait, many
 * jobs on two threads, and freeing with jobs pending. A "gate" job holds
 * the only worker until the test opens it, so the pending queue's state
 * is known. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/evloop/evloop.h"
#include "lib/evloop/workqueue.h"

#define MAXJ 256

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

typedef struct tjob_t {
  int idx;
  int ran;       /* set by the worker */
  int gate;      /* wait for gate_open */
  int replies;   /* set on the loop */
  int status;
} tjob_t;

static tjob_t jobs[MAXJ];
static int reply_order[MAXJ];
static int n_replies, want_replies;
static evloop_t *loop;

static void
tw(void *arg)
{
  tjob_t *j = arg;
  if (j->gate) {
    pthread_mutex_lock(&gate_lock);
    gate_entered = 1;
    while (!gate_open)
      pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
  }
  j->ran = 1;
}

static void
tr(void *arg, int status)
{
  tjob_t *j = arg;
  j->replies++;
  j->status = status;
  reply_order[n_replies++] = j->idx;
  if (n_replies == want_replies)
    evloop_exit(loop);
}

static void
open_gate(void)
{
  pthread_mutex_lock(&gate_lock);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
}

static void
wait_gate_entered(void)
{
  for (int i = 0; i < 2000; i++) {
    pthread_mutex_lock(&gate_lock);
    int e = gate_entered;
    pthread_mutex_unlock(&gate_lock);
    if (e)
      return;
    usleep(1000);
  }
  ck_abort_msg("the gate job never started");
}

static void
setup(void)
{
  memset(jobs, 0, sizeof(jobs));
  for (int i = 0; i < MAXJ; i++)
    jobs[i].idx = i;
  n_replies = want_replies = 0;
  gate_open = gate_entered = 0;
  loop = evloop_new();
}

static void
teardown(void)
{
  evloop_free(loop);
}

START_TEST(test_order)
{
  workqueue_t *wq = workqueue_new(loop, 1, 100, 0);
  ck_assert_ptr_nonnull(wq);
  ck_assert_uint_eq(workqueue_n_threads(wq), 1);
  want_replies = 50;
  for (int i = 0; i < 50; i++)
    ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[i]));
  ck_assert_int_eq(evloop_run(loop), 0);
  ck_assert_int_eq(n_replies, 50);
  for (int i = 0; i < 50; i++) {
    ck_assert_int_eq(reply_order[i], i); /* one worker: FIFO */
    ck_assert_int_eq(jobs[i].ran, 1);
    ck_assert_int_eq(jobs[i].replies, 1);
    ck_assert_int_eq(jobs[i].status, WORKQUEUE_DONE);
  }
  workqueue_free(wq, NULL);
  ck_assert_ptr_null(wq);
}
END_TEST

START_TEST(test_cancel)
{
  workqueue_t *wq = workqueue_new(loop, 1, 100, 0);
  jobs[0].gate = 1;
  workqueue_job_t *g = workqueue_add(wq, tw, tr, &jobs[0]);
  wait_gate_entered();
  workqueue_job_t *a = workqueue_add(wq, tw, tr, &jobs[1]);
  workqueue_job_t *b = workqueue_add(wq, tw, tr, &jobs[2]);
  workqueue_job_t *c = workqueue_add(wq, tw, tr, &jobs[3]);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(c);
  ck_assert_uint_eq(workqueue_n_pending(wq), 3);
  ck_assert_int_eq(workqueue_cancel(wq, b), 0);   /* pending: removed */
  ck_assert_int_eq(workqueue_cancel(wq, g), -1);  /* running: not */
  ck_assert_uint_eq(workqueue_n_pending(wq), 2);
  open_gate();
  want_replies = 3;
  evloop_run(loop);
  ck_assert_int_eq(n_replies, 3);
  ck_assert_int_eq(reply_order[0], 0);
  ck_assert_int_eq(reply_order[1], 1);
  ck_assert_int_eq(reply_order[2], 3);
  ck_assert_int_eq(jobs[2].ran, 0);
  ck_assert_int_eq(jobs[2].replies, 0);
  workqueue_free(wq, NULL);
}
END_TEST

START_TEST(test_queue_full)
{
  workqueue_t *wq = workqueue_new(loop, 1, 2, 0);
  jobs[0].gate = 1;
  ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[0]));
  wait_gate_entered(); /* taken by the worker: the queue is empty */
  ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[1]));
  ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[2]));
  ck_assert_ptr_null(workqueue_add(wq, tw, tr, &jobs[3]));
  workqueue_set_max_pending(wq, 3);
  ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[4]));
  ck_assert_ptr_null(workqueue_add(wq, tw, tr, &jobs[5]));
  open_gate();
  want_replies = 4;
  evloop_run(loop);
  ck_assert_int_eq(n_replies, 4);
  ck_assert_int_eq(jobs[3].ran + jobs[3].replies, 0);
  ck_assert_int_eq(jobs[5].ran + jobs[5].replies, 0);
  ck_assert_int_eq(jobs[4].status, WORKQUEUE_DONE);
  workqueue_free(wq, NULL);
}
END_TEST

START_TEST(test_expired)
{
  workqueue_t *wq = workqueue_new(loop, 1, 10, 20000); /* 20 ms */
  jobs[0].gate = 1;
  workqueue_add(wq, tw, tr, &jobs[0]);
  wait_gate_entered();
  workqueue_add(wq, tw, tr, &jobs[1]);
  usleep(60000);
  open_gate();
  want_replies = 2;
  evloop_run(loop);
  ck_assert_int_eq(jobs[0].status, WORKQUEUE_DONE);
  ck_assert_int_eq(jobs[1].status, WORKQUEUE_EXPIRED);
  ck_assert_int_eq(jobs[1].ran, 0);
  ck_assert_int_eq(jobs[1].replies, 1);
  workqueue_free(wq, NULL);
}
END_TEST

START_TEST(test_two_threads_many_jobs)
{
  workqueue_t *wq = workqueue_new(loop, 2, MAXJ, 0);
  ck_assert_uint_eq(workqueue_n_threads(wq), 2);
  want_replies = MAXJ;
  for (int i = 0; i < MAXJ; i++)
    ck_assert_ptr_nonnull(workqueue_add(wq, tw, tr, &jobs[i]));
  evloop_run(loop);
  for (int i = 0; i < MAXJ; i++) {
    ck_assert_int_eq(jobs[i].ran, 1);
    ck_assert_int_eq(jobs[i].replies, 1);
  }
  workqueue_free(wq, NULL);
}
END_TEST

static int n_freed;
static void
count_free(void *arg)
{
  (void)arg;
  n_freed++;
}

START_TEST(test_free_with_pending)
{
  n_freed = 0;
  workqueue_t *wq = workqueue_new(loop, 1, 10, 0);
  jobs[0].gate = 1;
  workqueue_add(wq, tw, tr, &jobs[0]);
  wait_gate_entered();
  workqueue_add(wq, tw, tr, &jobs[1]);
  workqueue_add(wq, tw, tr, &jobs[2]);
  open_gate();
  /* The running job finishes (its reply is never run); the stop flag
   * may leave the others pending: each argument is handed back once. */
  workqueue_free(wq, count_free);
  ck_assert_int_eq(n_replies, 0);
  ck_assert_int_eq(n_freed, 3);
  ck_assert_uint_ge(workqueue_num_cpus(), 1);
}
END_TEST

Suite *suite_workqueue(void);
Suite *
suite_workqueue(void)
{
  Suite *s = suite_create("workqueue");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_order);
  tcase_add_test(tc, test_cancel);
  tcase_add_test(tc, test_queue_full);
  tcase_add_test(tc, test_expired);
  tcase_add_test(tc, test_two_threads_many_jobs);
  tcase_add_test(tc, test_free_with_pending);
  suite_add_tcase(s, tc);
  return s;
}
