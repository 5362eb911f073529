/* SPDX-License-Identifier: BSD-3-Clause */
/* cpuworker.c -- CREATE2 handshakes on worker threads (cpuworker.h).
 *
 * Each request is a heap job holding a copy of the handshake data, the
 * channel's global ID and the circuit ID (never pointers into the event
 * loop's objects) and, after the worker ran, the result. The queue bound
 * follows tor's idea: as many requests as the workers can answer within
 * MaxOnionQueueDelay at the measured cost of one handshake (an average
 * over recent handshakes), never fewer than MIN_QUEUE nor more than
 * MAX_QUEUE. A request a worker takes after more than MaxOnionQueueDelay
 * is not computed and is answered RESOURCELIMIT.
 *
 * Every job not yet answered is also in a map keyed by (channel ID,
 * circuit ID): a second CREATE for the same ID is refused, and a DESTROY
 * for it cancels the job (or, once a worker has it, marks it abandoned so
 * that its answer is thrown away). The map holds at most the queue bound
 * plus one job per worker. One channel may hold at most half of the
 * queue bound (never fewer than MIN_QUEUE): a peer that fills the queue
 * alone cannot keep every other channel's CREATE2 out (refused with
 * RESOURCELIMIT, -2 from cpuworker_submit()). The count per channel is a
 * second map keyed by the channel's global ID.
 *
 * Cells that arrive for a circuit whose handshake is pending (RELAY and
 * RELAY_EARLY: a client may send its first relay cells right behind the
 * CREATE2 without waiting for CREATED2, as a pipelining client or a
 * previous hop forwarding fast does) are held in the job, in arrival
 * order: at most MAX_HELD_PER_CIRC per circuit and MAX_HELD_TOTAL over
 * all jobs (one more closes that circuit: the job is abandoned and the
 * caller answers DESTROY). They are packed cells, so lib/malloc/memacct
 * counts them under MEMACCT_CELLS while held. They are memory no circuit
 * holds yet, so the memory limit's handler (core/or/circuit.c) asks for
 * them (cpuworker_list_held()): it orders them with the circuits by the
 * arrival time of their oldest held cell (stamped here, evloop time) and,
 * for the ones it picks, cpuworker_free_held_for_oom() frees the cells and
 * abandons the handshake, answering DESTROY(RESOURCELIMIT) through the
 * expired callback, as a circuit the handler closes would be. The
 * finish function gets them (res->held) and processes them
 * right after it made the circuit; whatever it leaves, and every held
 * cell of a job that failed, expired, was abandoned or whose channel
 * closed, is freed with the job.
 *
 * Keys and threads: the keys are not immutable. The relay rotates its
 * ntor onion keys on the event loop (feature/relay/router_keys.c), and a
 * rotation or the end of the previous key's grace period would change key
 * material a worker is reading. So a job never points into relay_keys_t:
 * it holds a reference to the onion_keys_t set that was current when the
 * CREATE2 was queued (relay_keys.h), and a copy of the congestion-control
 * parameters of that moment (the consensus may change them meanwhile).
 * A rotation installs a new set; the old one stays alive, unchanged,
 * until the last job holding it is answered or cancelled. So a handshake
 * is answered with the keys the relay had when the cell arrived: a client
 * that used the previous key during its grace period still succeeds even
 * if the grace period ends while its request waits (at most
 * MaxOnionQueueDelay), as it would have inline. Workers touch only their
 * job and the set, which nobody writes after it is made, so no lock is
 * needed; references are taken and dropped on the event loop.
 */
#include "core/or/cpuworker.h"
#include "lib/container/hmap.h"
#include "lib/evloop/workqueue.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_QUEUE 16
#define MAX_HELD_TOTAL 4096
#define MAX_QUEUE 10000
/* Assumed cost of one handshake until we measured some. */
#define INITIAL_AVG_USEC 1000

#define OFF(f) offsetof(cpuworker_options_t, f)
/* clang-format off */
static const conf_var_t cpuworker_vars[] = {
  {"NumCPUs", CONF_TYPE_INT, "NUM", "0", "0", 0, 0, 128, OFF(num_cpus),
   "Relay: how many worker threads compute circuit handshakes (ntor and "
   "ntor v3 CREATE2 cells) beside the main thread. 0: one per online CPU "
   "core.", NULL},
  {"MaxOnionQueueDelay", CONF_TYPE_MSEC_INTERVAL, "NUM [msec|second]",
   "1750 msec", "1750 msec", 1, 0, 10000000, OFF(max_queue_delay),
   "Relay: CREATE2 requests that would wait longer than this for a "
   "worker are refused with DESTROY (RESOURCELIMIT), as the queue bound "
   "follows the measured cost of one handshake.", NULL},
};
/* clang-format on */

const conf_module_t cpuworker_conf_module = {
  "cpuworker", cpuworker_vars,
  sizeof(cpuworker_vars) / sizeof(cpuworker_vars[0]),
  sizeof(cpuworker_options_t), NULL,
};

typedef struct onion_job_t {
  uint8_t key[12]; /* chan_id, circ_id: the pending map's key */
  workqueue_job_t *wjob;
  int abandoned;
  uint64_t chan_id;
  onion_keys_t *keys; /* our reference to the set of the queueing time */
  cc_params_t cc;     /* the congestion-control parameters of that time */
  int nowin_ok;       /* channel_path_backpressure() of the channel */
  uint8_t hdata[CELL_PAYLOAD_LEN];
  size_t hlen;
  uint64_t usec; /* the worker's time for the handshake */
  cell_queue_t held; /* cells that came for the circuit meanwhile */
  cpuworker_result_t res;
} onion_job_t;

static struct {
  evloop_t *loop;
  workqueue_t *wq;
  hmap_t *pending; /* key -> onion_job_t, until answered */
  hmap_t *per_chan; /* chan_id -> (uintptr_t) jobs in pending */
  unsigned n_held;  /* cells held over all pending jobs */
  cpuworker_finish_fn finish;
  cpuworker_expired_fn expired;
  uint64_t max_delay_us;
  uint64_t avg_usec;
  unsigned max_pending;
  uint64_t n_processed, n_dropped, n_orphaned, n_held_closed;
  uint64_t n_oom_freed;
} W;
/* Unit tests: runs on the worker before each handshake (a gate). */
static void (*work_hook)(void);

void
cpuworker_set_work_hook_for_testing(void (*fn)(void))
{
  work_hook = fn;
}

static uint64_t
thread_usec(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void
update_bound(void)
{
  unsigned n = workqueue_n_threads(W.wq);
  uint64_t avg = W.avg_usec ? W.avg_usec : 1;
  uint64_t bound = W.max_delay_us * n / avg;
  if (bound < MIN_QUEUE)
    bound = MIN_QUEUE;
  if (bound > MAX_QUEUE)
    bound = MAX_QUEUE;
  if (bound != W.max_pending) {
    W.max_pending = (unsigned)bound;
    workqueue_set_max_pending(W.wq, W.max_pending);
  }
}

/* Worker thread: only the job and its (immutable) key set are read. */
static void
job_work(void *arg)
{
  onion_job_t *j = arg;
  if (work_hook)
    work_hook();
  uint64_t t0 = thread_usec();
  cpuworker_result_t *r = &j->res;
  r->ok = onion_server_handshake(j->keys, &j->cc, j->nowin_ok, r->htype,
                                 j->hdata, j->hlen,
                                 r->reply, sizeof(r->reply), &r->rlen, r->km,
                                 sizeof(r->km), &r->params, &r->why) == 0;
  j->usec = thread_usec() - t0;
}

static void
job_free(void *arg)
{
  onion_job_t *j = arg;
  W.n_held -= j->held.n;
  cell_queue_clear(&j->held);
  onion_keys_unref(j->keys);
  pc_memwipe(j, sizeof(*j));
  free(j);
}

static void
make_key(uint8_t key[12], uint64_t chan_id, uint32_t circ_id)
{
  memcpy(key, &chan_id, 8);
  memcpy(key + 8, &circ_id, 4);
}

/* The per-channel count of pending jobs: add d (+1 or -1). */
static void
chan_count(uint64_t chan_id, int d)
{
  if (!W.per_chan)
    return;
  uint8_t k[8];
  memcpy(k, &chan_id, 8);
  uintptr_t n = (uintptr_t)hmap_get(W.per_chan, k);
  if (d < 0 && n == 0)
    return;
  n = d > 0 ? n + 1 : n - 1;
  if (n)
    hmap_set(W.per_chan, k, (void *)n);
  else
    hmap_remove(W.per_chan, k);
}

static unsigned
chan_limit(void)
{
  unsigned lim = W.max_pending / 2;
  return lim < MIN_QUEUE ? MIN_QUEUE : lim;
}

/* Out of the pending map (answered, cancelled or abandoned). */
static void
unlist(onion_job_t *j)
{
  hmap_remove(W.pending, j->key);
  chan_count(j->chan_id, -1);
}

/* Cancel a pending job (or, once a worker has it, throw its answer
 * away); its held cells are freed now either way. */
static void
abandon_job(onion_job_t *j)
{
  unlist(j);
  if (workqueue_cancel(W.wq, j->wjob) == 0) {
    job_free(j);
  } else {
    j->abandoned = 1;
    W.n_held -= j->held.n;
    cell_queue_clear(&j->held);
  }
}

static void
job_reply(void *arg, int status)
{
  onion_job_t *j = arg;
  if (!j->abandoned)
    unlist(j); /* cpuworker_abandon() unlisted it */
  channel_t *chan =
      j->abandoned ? NULL : channel_find_by_global_id(j->chan_id);
  if (status == WORKQUEUE_EXPIRED) {
    W.n_dropped++;
    if (chan)
      W.expired(chan, j->res.circ_id);
  } else {
    W.n_processed++;
    /* Moving average over about 32 handshakes. */
    W.avg_usec = (W.avg_usec * 31 + j->usec + 31) / 32;
    update_bound();
    j->res.held = j->res.ok ? &j->held : NULL;
    uint32_t n_held = j->held.n;
    if (chan)
      W.finish(chan, &j->res);
    else if (!j->abandoned)
      W.n_orphaned++;
    W.n_held -= n_held - j->held.n; /* the ones finish took */
  }
  job_free(j);
}

int
cpuworker_init(evloop_t *loop, const cpuworker_options_t *o,
               cpuworker_finish_fn finish, cpuworker_expired_fn expired)
{
  unsigned n = o->num_cpus > 0 ? (unsigned)o->num_cpus : workqueue_num_cpus();
  memset(&W, 0, sizeof(W));
  W.loop = loop;
  W.finish = finish;
  W.expired = expired;
  W.max_delay_us = (uint64_t)o->max_queue_delay * 1000;
  W.avg_usec = INITIAL_AVG_USEC;
  W.wq = workqueue_new(loop, n, MIN_QUEUE, W.max_delay_us);
  if (!W.wq)
    return -1;
  W.pending = hmap_new(12);
  W.per_chan = hmap_new(8);
  update_bound();
  log_info("Started %u worker thread%s for circuit handshakes",
           workqueue_n_threads(W.wq), n == 1 ? "" : "s");
  return 0;
}

void
cpuworker_set_options(const cpuworker_options_t *o)
{
  if (!W.wq)
    return;
  W.max_delay_us = (uint64_t)o->max_queue_delay * 1000;
  workqueue_set_max_wait(W.wq, W.max_delay_us);
  update_bound();
}

void
cpuworker_shutdown(void)
{
  workqueue_free(W.wq, job_free);
  hmap_free(W.pending, NULL); /* the jobs were freed just above */
  hmap_free(W.per_chan, NULL);
}

int
cpuworker_enabled(void)
{
  return W.wq != NULL;
}

int
cpuworker_submit(channel_t *chan, onion_keys_t *keys, uint32_t circ_id,
                 uint16_t htype, const uint8_t *hdata, size_t hlen)
{
  if (hlen > CELL_PAYLOAD_LEN)
    return -1;
  /* A relay forwards many clients' EXTEND2s over one channel: only
   * client channels are held to their share of the queue. */
  if (!channel_is_authenticated_relay(chan) &&
      cpuworker_chan_pending(chan) >= chan_limit()) {
    W.n_dropped++;
    return -2;
  }
  onion_job_t *j = pc_calloc(1, sizeof(*j));
  cell_queue_init(&j->held);
  j->chan_id = channel_global_id(chan);
  j->keys = onion_keys_ref(keys);
  j->cc = *cc_params_current();
  j->nowin_ok = channel_path_backpressure(chan);
  memcpy(j->hdata, hdata, hlen);
  j->hlen = hlen;
  j->res.circ_id = circ_id;
  j->res.htype = htype;
  make_key(j->key, j->chan_id, circ_id);
  j->wjob = workqueue_add(W.wq, job_work, job_reply, j);
  if (!j->wjob) {
    W.n_dropped++;
    job_free(j);
    return -1;
  }
  hmap_set(W.pending, j->key, j);
  chan_count(j->chan_id, +1);
  return 0;
}

unsigned
cpuworker_chan_pending(const channel_t *chan)
{
  if (!W.per_chan)
    return 0;
  uint8_t k[8];
  uint64_t id = channel_global_id(chan);
  memcpy(k, &id, 8);
  return (unsigned)(uintptr_t)hmap_get(W.per_chan, k);
}

/* The job pending for circuit circ_id on chan, or NULL. */
static onion_job_t *
pending_job(const channel_t *chan, uint32_t circ_id)
{
  if (!W.pending)
    return NULL;
  uint8_t key[12];
  make_key(key, channel_global_id(chan), circ_id);
  return hmap_get(W.pending, key);
}

int
cpuworker_hold_cell(const channel_t *chan, uint32_t circ_id,
                    packed_cell_t *pc)
{
  onion_job_t *j = pending_job(chan, circ_id);
  if (!j)
    return 0;
  if (j->held.n >= CPUWORKER_MAX_HELD_PER_CIRC || W.n_held >= MAX_HELD_TOTAL) {
    packed_cell_free(pc);
    W.n_held_closed++;
    cpuworker_abandon(chan, circ_id); /* frees the held cells */
    return -1;
  }
  /* The OOM handler orders holders by their oldest byte's age. */
  pc->queued_us = evloop_now_us(W.loop);
  cell_queue_append(&j->held, pc);
  W.n_held++;
  return 1;
}

size_t
cpuworker_list_held(cpuworker_held_t *out, size_t max)
{
  if (!W.pending || !W.n_held)
    return 0;
  size_t n = 0;
  hmap_iter_t it;
  const uint8_t *key;
  void *val;
  hmap_iter_init(&it, W.pending);
  while (hmap_iter_next(&it, &key, &val)) {
    const onion_job_t *j = val;
    if (!j->held.n)
      continue;
    if (n < max) {
      out[n].chan_id = j->chan_id;
      out[n].circ_id = j->res.circ_id;
      out[n].oldest_us = j->held.head->queued_us;
      out[n].bytes = (uint64_t)j->held.n * sizeof(packed_cell_t);
    }
    n++;
  }
  return n;
}

size_t
cpuworker_free_held_for_oom(uint64_t chan_id, uint32_t circ_id)
{
  if (!W.pending)
    return 0;
  uint8_t key[12];
  make_key(key, chan_id, circ_id);
  onion_job_t *j = hmap_get(W.pending, key);
  if (!j || !j->held.n)
    return 0;
  size_t bytes = (size_t)j->held.n * sizeof(packed_cell_t);
  W.n_oom_freed++;
  abandon_job(j);
  /* DESTROY (RESOURCELIMIT), unless its channel is closing. */
  channel_t *chan = channel_find_by_global_id(chan_id);
  if (chan)
    W.expired(chan, circ_id);
  return bytes;
}

int
cpuworker_is_pending(const channel_t *chan, uint32_t circ_id)
{
  return pending_job(chan, circ_id) != NULL;
}

int
cpuworker_abandon(const channel_t *chan, uint32_t circ_id)
{
  onion_job_t *j = pending_job(chan, circ_id);
  if (!j)
    return 0;
  W.n_orphaned++;
  abandon_job(j);
  return 1;
}

void
cpuworker_get_stats(cpuworker_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  out->n_processed = W.n_processed;
  out->n_dropped = W.n_dropped;
  out->n_orphaned = W.n_orphaned;
  out->n_held = W.n_held;
  out->n_held_closed = W.n_held_closed;
  out->n_oom_freed = W.n_oom_freed;
  out->avg_usec = W.avg_usec;
  out->max_pending = W.max_pending;
  if (W.wq) {
    out->n_threads = workqueue_n_threads(W.wq);
    out->n_pending = workqueue_n_pending(W.wq);
  }
}

void
cpuworker_heartbeat_line(char *buf, size_t len)
{
  if (!W.wq) {
    if (len)
      buf[0] = '\0';
    return;
  }
  snprintf(buf, len,
           "Circuit handshake housekeeping: %llu onionskins processed by %u "
           "worker thread%s (about %llu usec each); %llu dropped for "
           "overload (queue bound %u).",
           (unsigned long long)W.n_processed, workqueue_n_threads(W.wq),
           workqueue_n_threads(W.wq) == 1 ? "" : "s",
           (unsigned long long)W.avg_usec, (unsigned long long)W.n_dropped,
           W.max_pending);
}
