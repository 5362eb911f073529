/* SPDX-License-Identifier: BSD-3-Clause */
/* memacct.h -- one process-wide budget of the memory peers can make us hold.
 *
 * Every holder of memory that a remote peer can grow (queued cells,
 * connection buffers, stream state, reordering queues, directory answers
 * in flight, measurement state, compression coders) adds and subtracts
 * its bytes here as it allocates and frees them, under one of a few
 * kinds. The sum of all kinds is compared with one trigger on every
 * increase: a single addition and comparison, so holders may call it on
 * their hot paths. When the total goes above the trigger, the trigger
 * callback runs once (it must only schedule work: it is called from
 * inside whatever allocation crossed the limit) and is disarmed until
 * memacct_set_trigger() arms it again.
 *
 * The module knows nothing about what the bytes are; the owner of the
 * limit (core/or/circuit.c, MaxMemInQueues) decides what to free. Counters
 * are plain integers: pctor runs one thread. A subtraction below zero is a
 * bookkeeping bug in a holder; it is clamped at zero and counted
 * (memacct_underflows()) so tests can catch it.
 */
#ifndef PCTOR_LIB_MALLOC_MEMACCT_H
#define PCTOR_LIB_MALLOC_MEMACCT_H
#include <stddef.h>
#include <stdint.h>

typedef enum memacct_kind_t {
  MEMACCT_CELLS = 0,   /* queued (packed) cells */
  MEMACCT_CHAN_BUF,    /* relay-to-relay connection buffers */
  MEMACCT_EXIT_BUF,    /* exit streams' socket buffers */
  MEMACCT_EDGE_BUF,    /* client-side stream (SOCKS) connection buffers */
  MEMACCT_STREAMS,     /* stream and half-closed stream records */
  MEMACCT_CONFLUX,     /* conflux out-of-order queues */
  MEMACCT_DIRCACHE,    /* directory requests and answers in flight */
  MEMACCT_MEASUREME,   /* MeasureMe per-circuit state */
  MEMACCT_BACKTAP,     /* BackTap engines: cells kept for retransmission */
  MEMACCT_DOS,         /* per-address DoS records (core/or/dos) */
  MEMACCT_UTCP,        /* user-level TCP (lib/utcp): send and reorder queues */
  MEMACCT_COMPRESS,    /* (de)compression coders' state (lib/compress) */
  MEMACCT_DNS,         /* exit DNS requests waiting for nameservers */
  MEMACCT_DIRCOPIES,   /* a dircache's compressed copies of its current
                        * documents: a cache, freed first when over */
  MEMACCT_N_KINDS
} memacct_kind_t;

/* No kind: a buffer that is not counted. */
#define MEMACCT_NONE (-1)

void memacct_add(int kind, size_t n);
void memacct_sub(int kind, size_t n);
/* Replace the value of one kind (holders that keep their own total). */
void memacct_set(int kind, uint64_t n);
uint64_t memacct_get(int kind);
uint64_t memacct_total(void);
/* Short name for log lines and metrics labels ("cells", "exit_buf"...). */
const char *memacct_kind_name(int kind);
/* The largest kind (the one an over-limit log line names first). */
int memacct_largest_kind(void);

typedef void (*memacct_over_fn)(void *arg);
/* The limit: call fn(arg) once, the next time the total goes above
 * `bytes` (UINT64_MAX or fn NULL: never); checked on every increase, and
 * at once if the total is above it already. */
void memacct_set_trigger(uint64_t bytes, memacct_over_fn fn, void *arg);
/* After fn ran: arm again at max(limit, above). A trigger raised above the
 * limit (memory that could not be freed yet) comes back down to the limit
 * by itself once the total falls to the limit. */
void memacct_rearm(uint64_t above);
/* The current trigger (UINT64_MAX while disarmed) and the limit. */
uint64_t memacct_trigger(void);
uint64_t memacct_limit(void);

/* Describe each non-zero kind: "cells=1.2MB exit_buf=38MB" into out. */
void memacct_describe(char *out, size_t outlen);

uint64_t memacct_underflows(void);
/* Tests whose arithmetic is in exact cells: keep a kind's bytes out of
 * the total (they are still counted by memacct_get()). */
void memacct_exclude_for_testing(int kind, int excluded);
void memacct_reset_for_testing(void);
#endif
