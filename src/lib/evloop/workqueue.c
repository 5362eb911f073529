/* SPDX-License-Identifier: BSD-3-Clause */
/* workqueue.c -- worker threads fed from the event loop (workqueue.h).
 *
 * One mutex guards two intrusive FIFO lists: pending (jobs waiting for a
 * worker, bounded by max_pending) and done (jobs a worker finished or
 * found expired). Workers sleep on a condition variable. A worker that
 * moves a job to an empty done list writes the eventfd; the loop's read
 * callback drains the eventfd, takes the whole done list under the lock
 * and runs the replies without it, in completion order. A job's state
 * field tells cancel whether it can still be removed.
 */
#include "lib/evloop/workqueue.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum { JOB_PENDING, JOB_RUNNING, JOB_DONE };

struct workqueue_job_t {
  workqueue_job_t *prev, *next;
  workqueue_work_fn work;
  workqueue_reply_fn reply;
  void *arg;
  uint64_t queued_us;
  int state;
  int status;
};

typedef struct job_list_t {
  workqueue_job_t *head, *tail;
  unsigned n;
} job_list_t;

struct workqueue_t {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  job_list_t pending, done;
  unsigned max_pending;
  uint64_t max_wait_us;
  int stopping;
  unsigned n_threads;
  pthread_t *threads;
  int efd;
  evloop_io_t *io;
};

static uint64_t
mono_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void
list_push(job_list_t *l, workqueue_job_t *j)
{
  j->next = NULL;
  j->prev = l->tail;
  if (l->tail)
    l->tail->next = j;
  else
    l->head = j;
  l->tail = j;
  l->n++;
}

static void
list_remove(job_list_t *l, workqueue_job_t *j)
{
  if (j->prev)
    j->prev->next = j->next;
  else
    l->head = j->next;
  if (j->next)
    j->next->prev = j->prev;
  else
    l->tail = j->prev;
  j->prev = j->next = NULL;
  l->n--;
}

static void *
worker_main(void *p)
{
  workqueue_t *wq = p;
  pthread_mutex_lock(&wq->lock);
  for (;;) {
    while (!wq->stopping && !wq->pending.head)
      pthread_cond_wait(&wq->cond, &wq->lock);
    if (wq->stopping)
      break;
    workqueue_job_t *j = wq->pending.head;
    list_remove(&wq->pending, j);
    j->state = JOB_RUNNING;
    uint64_t max_wait = wq->max_wait_us;
    pthread_mutex_unlock(&wq->lock);
    if (max_wait && mono_us() - j->queued_us > max_wait) {
      j->status = WORKQUEUE_EXPIRED;
    } else {
      j->work(j->arg);
      j->status = WORKQUEUE_DONE;
    }
    pthread_mutex_lock(&wq->lock);
    j->state = JOB_DONE;
    int wake = wq->done.head == NULL;
    list_push(&wq->done, j);
    if (wake) {
      uint64_t one = 1;
      /* Only fails when the counter would overflow: already readable. */
      ssize_t r = write(wq->efd, &one, sizeof(one));
      (void)r;
    }
  }
  pthread_mutex_unlock(&wq->lock);
  return NULL;
}

static void
replies_cb(int fd, int what, void *arg)
{
  (void)what;
  workqueue_t *wq = arg;
  uint64_t v;
  ssize_t r = read(fd, &v, sizeof(v));
  (void)r;
  pthread_mutex_lock(&wq->lock);
  job_list_t done = wq->done;
  wq->done.head = wq->done.tail = NULL;
  wq->done.n = 0;
  pthread_mutex_unlock(&wq->lock);
  workqueue_job_t *j = done.head;
  while (j) {
    workqueue_job_t *next = j->next;
    j->reply(j->arg, j->status);
    free(j);
    j = next;
  }
}

workqueue_t *
workqueue_new(evloop_t *loop, unsigned n_threads, unsigned max_pending,
              uint64_t max_wait_us)
{
  if (n_threads < 1)
    n_threads = 1;
  workqueue_t *wq = pc_calloc(1, sizeof(*wq));
  wq->max_pending = max_pending;
  wq->max_wait_us = max_wait_us;
  wq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wq->efd < 0) {
    log_warn("Cannot create an eventfd for the worker pool: %s",
             strerror(errno));
    free(wq);
    return NULL;
  }
  pthread_mutex_init(&wq->lock, NULL);
  pthread_cond_init(&wq->cond, NULL);
  wq->io = evloop_io_new(loop, wq->efd, replies_cb, wq);
  evloop_io_set(wq->io, EVLOOP_READ);
  wq->threads = pc_calloc(n_threads, sizeof(pthread_t));
  for (unsigned i = 0; i < n_threads; i++) {
    int e = pthread_create(&wq->threads[i], NULL, worker_main, wq);
    if (e) {
      log_warn("Cannot start worker thread %u: %s", i, strerror(e));
      break;
    }
    wq->n_threads++;
  }
  if (wq->n_threads == 0) {
    workqueue_free_(wq, NULL);
    return NULL;
  }
  return wq;
}

void
workqueue_free_(workqueue_t *wq, void (*free_arg)(void *arg))
{
  if (!wq)
    return;
  pthread_mutex_lock(&wq->lock);
  wq->stopping = 1;
  pthread_cond_broadcast(&wq->cond);
  pthread_mutex_unlock(&wq->lock);
  for (unsigned i = 0; i < wq->n_threads; i++)
    pthread_join(wq->threads[i], NULL);
  job_list_t *lists[2] = {&wq->pending, &wq->done};
  for (int k = 0; k < 2; k++) {
    workqueue_job_t *j = lists[k]->head;
    while (j) {
      workqueue_job_t *next = j->next;
      if (free_arg)
        free_arg(j->arg);
      free(j);
      j = next;
    }
  }
  evloop_io_free(wq->io);
  close(wq->efd);
  pthread_cond_destroy(&wq->cond);
  pthread_mutex_destroy(&wq->lock);
  free(wq->threads);
  free(wq);
}

void
workqueue_set_max_wait(workqueue_t *wq, uint64_t max_wait_us)
{
  pthread_mutex_lock(&wq->lock);
  wq->max_wait_us = max_wait_us;
  pthread_mutex_unlock(&wq->lock);
}

void
workqueue_set_max_pending(workqueue_t *wq, unsigned max_pending)
{
  pthread_mutex_lock(&wq->lock);
  wq->max_pending = max_pending;
  pthread_mutex_unlock(&wq->lock);
}

unsigned
workqueue_n_threads(const workqueue_t *wq)
{
  return wq->n_threads;
}

workqueue_job_t *
workqueue_add(workqueue_t *wq, workqueue_work_fn work,
              workqueue_reply_fn reply, void *arg)
{
  pthread_mutex_lock(&wq->lock);
  if (wq->pending.n >= wq->max_pending) {
    pthread_mutex_unlock(&wq->lock);
    return NULL;
  }
  workqueue_job_t *j = pc_calloc(1, sizeof(*j));
  j->work = work;
  j->reply = reply;
  j->arg = arg;
  j->queued_us = mono_us();
  j->state = JOB_PENDING;
  list_push(&wq->pending, j);
  pthread_cond_signal(&wq->cond);
  pthread_mutex_unlock(&wq->lock);
  return j;
}

int
workqueue_cancel(workqueue_t *wq, workqueue_job_t *job)
{
  int r = -1;
  pthread_mutex_lock(&wq->lock);
  if (job->state == JOB_PENDING) {
    list_remove(&wq->pending, job);
    r = 0;
  }
  pthread_mutex_unlock(&wq->lock);
  if (r == 0)
    free(job);
  return r;
}

unsigned
workqueue_n_pending(workqueue_t *wq)
{
  pthread_mutex_lock(&wq->lock);
  unsigned n = wq->pending.n;
  pthread_mutex_unlock(&wq->lock);
  return n;
}

unsigned
workqueue_num_cpus(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (unsigned)n;
}
