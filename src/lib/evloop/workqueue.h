/* SPDX-License-Identifier: BSD-3-Clause */
/* workqueue.h -- a pool of worker threads fed from the event loop.
 *
 * The event loop adds jobs; a worker thread runs a job's work function,
 * then the job's reply function runs back in the event loop (woken by an
 * eventfd). The pending queue is bounded (workqueue_add() refuses when it
 * is full) and a job that waited longer than max_wait_us before a worker
 * took it is not run: its reply gets WORKQUEUE_EXPIRED. The pool knows
 * nothing of what the jobs are; callers keep IDs, not pointers, in their
 * job arguments when the object they serve may go away meanwhile.
 *
 * Work functions run on another thread: they may touch only their own
 * argument and immutable shared data. Everything else (add, cancel, the
 * reply functions, free) happens on the event loop's thread.
 */
#ifndef PCTOR_LIB_EVLOOP_WORKQUEUE_H
#define PCTOR_LIB_EVLOOP_WORKQUEUE_H
#include "lib/evloop/evloop.h"

#include <stdint.h>

typedef struct workqueue_t workqueue_t;
typedef struct workqueue_job_t workqueue_job_t;

#define WORKQUEUE_DONE 0    /* the work function ran */
#define WORKQUEUE_EXPIRED 1 /* waited longer than max_wait_us; not run */

/* Runs on a worker thread. */
typedef void (*workqueue_work_fn)(void *arg);
/* Runs on the event loop's thread, once per job not cancelled. */
typedef void (*workqueue_reply_fn)(void *arg, int status);

/* n_threads >= 1 workers; at most max_pending jobs waiting for a worker;
 * max_wait_us 0: no limit. NULL on failure (threads, eventfd). */
workqueue_t *workqueue_new(evloop_t *loop, unsigned n_threads,
                           unsigned max_pending, uint64_t max_wait_us);
/* Joins the workers; jobs not replied to are dropped without a reply
 * (their arguments are the caller's to free: see workqueue_free_cb). */
void workqueue_free_(workqueue_t *wq, void (*free_arg)(void *arg));
#define workqueue_free(w, f) do { workqueue_free_((w), (f)); (w) = NULL; } \
  while (0)
void workqueue_set_max_wait(workqueue_t *wq, uint64_t max_wait_us);
void workqueue_set_max_pending(workqueue_t *wq, unsigned max_pending);
unsigned workqueue_n_threads(const workqueue_t *wq);

/* Queue a job. NULL when the pending queue is full (nothing queued). */
workqueue_job_t *workqueue_add(workqueue_t *wq, workqueue_work_fn work,
                               workqueue_reply_fn reply, void *arg);
/* Cancel a job no worker has taken yet: 0 and its reply will never run
 * (the argument is the caller's again); -1 when it is running or done
 * (the reply will still run). */
int workqueue_cancel(workqueue_t *wq, workqueue_job_t *job);
/* Jobs waiting for a worker now. */
unsigned workqueue_n_pending(workqueue_t *wq);

/* Number of online CPUs (at least 1). */
unsigned workqueue_num_cpus(void);
#endif
