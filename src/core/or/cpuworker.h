/* SPDX-License-Identifier: BSD-3-Clause */
/* cpuworker.h -- server-side circuit handshakes (ntor, ntor v3) off the
 * event loop, on the worker pool of lib/evloop/workqueue.h.
 *
 * command.c hands a CREATE2 to cpuworker_submit(); a worker thread runs
 * onion_server_handshake(); the result comes back on the event loop to
 * the finish function, but only when the channel (looked up again by its
 * global ID, never kept as a pointer) is still open. Queue full or a
 * request that waited longer than MaxOnionQueueDelay: the caller or the
 * reply answers DESTROY(RESOURCELIMIT), as tor does under CREATE floods.
 */
#ifndef PCTOR_CORE_OR_CPUWORKER_H
#define PCTOR_CORE_OR_CPUWORKER_H
#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/onion.h"
#include "core/or/relay.h"
#include "core/or/relay_keys.h"
#include "core/proto/create.h"
#include "lib/conf/confdecl.h"
#include "lib/evloop/evloop.h"

#include <stdint.h>

/* Cells held per circuit while its handshake is pending (one more closes
 * the circuit). */
#define CPUWORKER_MAX_HELD_PER_CIRC 16

typedef struct cpuworker_options_t {
  int num_cpus;        /* NumCPUs; 0: the number of online cores */
  int max_queue_delay; /* MaxOnionQueueDelay, milliseconds */
} cpuworker_options_t;
extern const conf_module_t cpuworker_conf_module;

/* What a worker computed for one CREATE2. */
typedef struct cpuworker_result_t {
  uint32_t circ_id;
  uint16_t htype;
  int ok;              /* 0: handshake failed, why says how */
  const char *why;
  uint8_t reply[CREATED2_HDATA_MAX];
  size_t rlen;
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  onion_circ_params_t params;
  /* Cells (RELAY, RELAY_EARLY) that came for the circuit while its
   * handshake was pending, in arrival order; NULL when the handshake
   * failed or ran inline. The finish function may pop and process them;
   * what it leaves is freed after it returns. */
  cell_queue_t *held;
} cpuworker_result_t;

/* Called on the event loop with the channel the CREATE2 came on (still
 * open) and the result; res->km is wiped after it returns. */
typedef void (*cpuworker_finish_fn)(channel_t *chan,
                                    const cpuworker_result_t *res);
/* The channel expired the request (waited too long): answer RESOURCELIMIT. */
typedef void (*cpuworker_expired_fn)(channel_t *chan, uint32_t circ_id);

/* Start the pool. n_threads 0: one per online core. Returns 0 or -1. */
int cpuworker_init(evloop_t *loop, const cpuworker_options_t *o,
                   cpuworker_finish_fn finish, cpuworker_expired_fn expired);
/* MaxOnionQueueDelay changed (SIGHUP). */
void cpuworker_set_options(const cpuworker_options_t *o);
void cpuworker_shutdown(void);
/* 1 when the pool is running (else handshakes are done inline). */
int cpuworker_enabled(void);

/* Queue the handshake with the onion keys current now: the job takes its
 * own reference to keys (the caller may rotate them at once), and a copy
 * of cc_params_current(). 0: queued; -1: the queue is full, -2: this
 * channel already has its share of the queue (half the bound) pending
 * (nothing queued in either case; refuse the CREATE2). */
int cpuworker_submit(channel_t *chan, onion_keys_t *keys,
                     uint32_t circ_id,
                     uint16_t htype, const uint8_t *hdata, size_t hlen);

/* Is a handshake for this circuit ID on chan queued or being computed? */
int cpuworker_is_pending(const channel_t *chan, uint32_t circ_id);
/* A DESTROY for a circuit whose handshake is pending: cancel it (or throw
 * its answer away). 1 if there was one, else 0. */
int cpuworker_abandon(const channel_t *chan, uint32_t circ_id);
/* Handshakes pending (queued or being computed) for chan. */
unsigned cpuworker_chan_pending(const channel_t *chan);
/* A cell for circ_id on chan: if its handshake is pending, hold it to be
 * processed after the answer (1: taken). 0: nothing pending, the caller
 * keeps pc. -1: too many held (CPUWORKER_MAX_HELD_PER_CIRC for the
 * circuit, or the global bound): pc and the held cells are freed and the
 * handshake abandoned; the caller answers DESTROY. */
int cpuworker_hold_cell(const channel_t *chan, uint32_t circ_id,
                        packed_cell_t *pc);

/* For the memory limit's handler (core/or/circuit.c): a pending
 * handshake holding cells, with the arrival time (evloop_now_us) of its
 * oldest held cell and the bytes its cells take. */
typedef struct cpuworker_held_t {
  uint64_t chan_id; /* channel_global_id() */
  uint32_t circ_id;
  uint64_t oldest_us;
  uint64_t bytes;
} cpuworker_held_t;
/* Fill out[0..max) with the pending handshakes that hold cells; returns
 * how many there are (maybe more than max: call with max 0 to count). */
size_t cpuworker_list_held(cpuworker_held_t *out, size_t max);
/* Out of memory: free the cells held for this pending handshake, abandon
 * it and answer DESTROY (RESOURCELIMIT) on its channel (through the
 * expired callback) when the channel is still open. Returns the bytes
 * freed; 0 when there is no such job or it holds nothing. */
size_t cpuworker_free_held_for_oom(uint64_t chan_id, uint32_t circ_id);

typedef struct cpuworker_stats_t {
  uint64_t n_processed;  /* handshakes computed by workers */
  uint64_t n_dropped;    /* refused: queue full or waited too long */
  uint64_t n_orphaned;   /* channel closed or DESTROY before the answer */
  unsigned n_held;       /* cells held for pending handshakes now */
  uint64_t n_held_closed; /* circuits closed: too many cells held */
  uint64_t n_oom_freed;  /* pending handshakes closed by the OOM handler */
  unsigned n_threads;
  unsigned n_pending;
  unsigned max_pending;  /* current queue bound */
  uint64_t avg_usec;     /* measured cost of one handshake */
} cpuworker_stats_t;
void cpuworker_get_stats(cpuworker_stats_t *out);
/* tor-like heartbeat line; "" when the pool is not running. */
void cpuworker_heartbeat_line(char *buf, size_t len);
/* Tests only: fn runs on the worker thread before each handshake. */
void cpuworker_set_work_hook_for_testing(void (*fn)(void));
#endif
