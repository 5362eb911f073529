/* SPDX-License-Identifier: BSD-3-Clause */
/* ratelimit.h -- token buckets that limit how fast connections read and
 * write (bandwidth limits), refilled on the event loop.
 *
 * A ratelimit_t is a group of two token buckets, one for reading and one
 * for writing, that any number of connections share. Each bucket has a
 * rate (bytes per second) and a burst (its capacity, in bytes). Every
 * refill interval (1..1000 ms) a timer adds rate * elapsed time to each
 * bucket, capped at the burst. Connections ask how many bytes they may
 * move now (ratelimit_avail()), move at most that, and report what they
 * moved (ratelimit_consume()); a bucket may go negative when a transfer
 * could not be cut to size (a TLS write retried at its first length), and
 * the deficit is repaid from later refills. A connection that finds a
 * bucket empty stops reading (writing) and queues a waiter on it; at each
 * refill the waiters are woken in FIFO order (or by priority, lowest
 * first, for waiters queued with one) for as long as the bucket has
 * tokens, and those not reached keep their place at the head for the next
 * refill, so a busy connection cannot starve the others of its priority.
 *
 * Design choices:
 *  - Refill by elapsed monotonic time, not by a fixed rate * interval per
 *    tick, so a late timer (busy loop) loses no tokens; a sub-byte
 *    remainder is carried between refills, so rates that do not divide the
 *    interval are exact on average.
 *  - Ticks are aligned to multiples of the interval on the loop's
 *    monotonic clock, so groups with the same interval (a global and a
 *    relay-only group) refill in the same loop iteration.
 *  - The timer runs only while a bucket is below its burst or has
 *    waiters: an idle group costs nothing and does not keep an event loop
 *    alive.
 *  - Rate 0 means "unlimited" for that direction (avail is SIZE_MAX,
 *    consume only counts). Reconfiguring at run time keeps the tokens
 *    (capped at the new burst) and every attached connection and waiter.
 *  - The group is reference counted: the owner's reference plus one per
 *    attached user (ratelimit_ref()). ratelimit_free() drops the owner's
 *    reference and makes the group unlimited, waking its waiters from the
 *    loop at once; the memory goes when the last user lets go. Users must
 *    still be freed before the event loop. A reconfiguration that gives
 *    waiters tokens also wakes them at once.
 *  - Waiters (ratelimit_waiter_t) are embedded in their owner; the group
 *    keeps only pointers to them, in a heap that grows to the largest
 *    number of waiters it has had and is not shrunk, so blocking and
 *    waking allocate only when that grows. A wake callback runs from the
 *    group's timer (an event-loop entry point); it may consume, queue itself
 *    again, cancel or free other waiters and users of the group.
 *
 * No knowledge of Tor here: which connections share which group is the
 * caller's business (see conn_set_buckets() in lib/net/conn.h).
 */
#ifndef PCTOR_LIB_NET_RATELIMIT_H
#define PCTOR_LIB_NET_RATELIMIT_H
#include <stddef.h>
#include <stdint.h>

#include "lib/container/minheap.h"
#include "lib/evloop/evloop.h"

typedef enum {
  RATELIMIT_READ = 0,
  RATELIMIT_WRITE = 1,
} ratelimit_dir_t;

#define RATELIMIT_MIN_INTERVAL_MS 1u
#define RATELIMIT_MAX_INTERVAL_MS 1000u
/* Largest rate (bytes/s) and burst (bytes) accepted: 1 TiB. */
#define RATELIMIT_MAX ((uint64_t)1 << 40)

/* ---- one bucket: pure arithmetic, no timer ---- */
typedef struct ratelimit_bucket_t {
  uint64_t rate;  /* bytes per second; 0 = unlimited */
  uint64_t burst; /* capacity in bytes */
  int64_t tokens; /* bytes that may be moved now; negative = deficit */
  uint64_t frac;  /* carried remainder, in millionths of a byte */
} ratelimit_bucket_t;

/* A full bucket (rate 0: unlimited). Values must pass
 * ratelimit_params_check(). */
void ratelimit_bucket_init(ratelimit_bucket_t *b, uint64_t rate,
                           uint64_t burst);
/* New rate and burst; tokens are kept, capped at the new burst (a bucket
 * that was unlimited starts full). */
void ratelimit_bucket_set(ratelimit_bucket_t *b, uint64_t rate,
                          uint64_t burst);
/* Add rate * elapsed_us / 10^6 tokens, capped at the burst. Returns 1 if
 * the bucket went from empty (<= 0) to non-empty, else 0. */
int ratelimit_bucket_refill(ratelimit_bucket_t *b, uint64_t elapsed_us);
/* Take n tokens (may go negative; unlimited buckets ignore it). */
void ratelimit_bucket_consume(ratelimit_bucket_t *b, size_t n);
/* Bytes that may be moved now: 0 when empty or in deficit, SIZE_MAX when
 * unlimited. */
size_t ratelimit_bucket_avail(const ratelimit_bucket_t *b);
int ratelimit_bucket_is_full(const ratelimit_bucket_t *b);

/* ---- a group of a read and a write bucket, refilled by a timer ---- */
typedef struct ratelimit_t ratelimit_t;

/* 0 if (rate, burst, interval_ms) is usable, else -1 with *err (if
 * non-NULL) set to a static explanation. rate 0 (unlimited) accepts any
 * burst; otherwise 1 <= burst <= RATELIMIT_MAX, rate <= RATELIMIT_MAX and
 * RATELIMIT_MIN_INTERVAL_MS <= interval_ms <= RATELIMIT_MAX_INTERVAL_MS.
 * A burst below rate * interval only means the bucket never holds more
 * than burst, whatever the rate. */
int ratelimit_params_check(uint64_t rate, uint64_t burst,
                           unsigned interval_ms, const char **err);
/* A group whose read and write buckets both have (rate, burst), starting
 * full. Never NULL: parameters failing ratelimit_params_check() are
 * clamped into range, with a warning. */
ratelimit_t *ratelimit_new(evloop_t *loop, uint64_t rate, uint64_t burst,
                           unsigned interval_ms);
/* Reconfigure both directions and the interval (e.g. on SIGHUP) without
 * touching attached users. Returns -1 (nothing changed) on bad values. */
int ratelimit_configure(ratelimit_t *rl, uint64_t rate, uint64_t burst,
                        unsigned interval_ms);
/* Reconfigure one direction only (rate 0: unlimited). -1 on bad values. */
int ratelimit_configure_dir(ratelimit_t *rl, ratelimit_dir_t d,
                            uint64_t rate, uint64_t burst);
/* Drop the owner's reference (see the design notes above). */
void ratelimit_free_(ratelimit_t *rl);
#define ratelimit_free(x) do { ratelimit_free_(x); (x) = NULL; } while (0)
/* Users that keep a pointer to the group hold a reference. */
void ratelimit_ref(ratelimit_t *rl);
void ratelimit_unref(ratelimit_t *rl);

/* Bytes that may be read/written now (SIZE_MAX when unlimited). */
size_t ratelimit_avail(const ratelimit_t *rl, ratelimit_dir_t d);
/* Record n bytes read/written (starts the refill timer if needed). */
void ratelimit_consume(ratelimit_t *rl, ratelimit_dir_t d, size_t n);
int ratelimit_is_limited(const ratelimit_t *rl, ratelimit_dir_t d);
/* Current tokens (may be negative), rate, burst, interval; bytes consumed
 * in total since creation. */
int64_t ratelimit_tokens(const ratelimit_t *rl, ratelimit_dir_t d);
uint64_t ratelimit_rate(const ratelimit_t *rl, ratelimit_dir_t d);
uint64_t ratelimit_burst(const ratelimit_t *rl, ratelimit_dir_t d);
unsigned ratelimit_interval_ms(const ratelimit_t *rl);
uint64_t ratelimit_total(const ratelimit_t *rl, ratelimit_dir_t d);

/* ---- waiting for tokens ---- */
typedef void (*ratelimit_wake_fn)(void *arg);
typedef struct ratelimit_waiter_t {
  int heap_idx;    /* position in the group's queue (MINHEAP_IDX_NONE) */
  double prio;     /* lower is woken first; ties in the order queued */
  uint64_t seq;
  ratelimit_t *rl; /* group it is queued on, or NULL */
  ratelimit_dir_t dir;
  ratelimit_wake_fn fn;
  void *arg;
} ratelimit_waiter_t;

void ratelimit_waiter_init(ratelimit_waiter_t *w, ratelimit_wake_fn fn,
                           void *arg);
/* Queue w at the tail of rl's waiters for direction d; fn(arg) is called
 * at a refill that leaves tokens for it. Already queued there: keeps its
 * place; queued elsewhere: moved. The waiter is dequeued before fn runs. */
void ratelimit_wait(ratelimit_t *rl, ratelimit_dir_t d,
                    ratelimit_waiter_t *w);
/* The same with a priority: waiters are woken in increasing prio (plain
 * ratelimit_wait() is prio 0), those of equal prio in FIFO order. A waiter
 * whose prio is strictly below that of every waiter still queued is woken
 * alone: ratelimit_share() gives it every available token, so a quiet
 * connection takes what it needs before the louder ones share the rest.
 * Already queued there: keeps its place (and its prio). */
void ratelimit_wait_prio(ratelimit_t *rl, ratelimit_dir_t d,
                         ratelimit_waiter_t *w, double prio);
void ratelimit_waiter_cancel(ratelimit_waiter_t *w);
static inline int
ratelimit_waiter_is_waiting(const ratelimit_waiter_t *w)
{
  return w->rl != NULL;
}
/* Waiters queued for direction d. */
size_t ratelimit_n_waiting(const ratelimit_t *rl, ratelimit_dir_t d);
/* For a wake callback: a fair part of the tokens for direction d, i.e.
 * avail / (waiters still queued + 1), but at least min_share (and never
 * more than avail); SIZE_MAX when unlimited. Each waiter woken at a
 * refill thus gets a slice, instead of the first ones taking it all --
 * except a waiter of strictly lower priority than all the others (see
 * ratelimit_wait_prio()), which gets all of avail. */
size_t ratelimit_share(const ratelimit_t *rl, ratelimit_dir_t d,
                       size_t min_share);
#endif
