/* SPDX-License-Identifier: BSD-3-Clause */
/* delayq.h -- the packet-timing model of pctor-delayd, without netlink.
 *
 * pctor-delayd holds NFQUEUE verdicts to emulate per-link one-way delay,
 * jitter and loss (see pctor-delayd.c). Everything that decides *when* a
 * packet is released or *whether* it is lost lives here so that the unit
 * tests can check it without a kernel queue:
 *
 * - delayd_rng_t: xoshiro256** seeded through splitmix64 (both as published
 *   by Blackman and Vigna); fast, reproducible with a seed, and good enough
 *   for emulation (this is not a cryptographic generator).
 * - delayd_link_t: one emulated link: delay, jitter (normal, truncated at
 *   +/-3 sigma, never below zero), Bernoulli loss, and FIFO order (a packet
 *   is never released before the previous packet of its link), plus its
 *   counters.
 * - delayq_t: a binary min-heap of (deadline, sequence) with a fixed
 *   capacity chosen at start-up: pushing never allocates (the hot path runs
 *   once per forwarded packet) and a full heap makes the caller drop and
 *   count instead of growing memory without bound. Equal deadlines leave in
 *   insertion order, so FIFO links stay FIFO through the heap.
 */
#ifndef PCTOR_TOOLS_DELAYD_DELAYQ_H
#define PCTOR_TOOLS_DELAYD_DELAYQ_H

#include <stddef.h>
#include <stdint.h>

/* Limits accepted by delayd_link_parse(). */
#define DELAYD_MAX_DELAY_MS 60000.0
#define DELAYD_MAX_JITTER_MS 60000.0

/* ---- random numbers ---- */

typedef struct delayd_rng_t {
  uint64_t s[4];
  double spare;   /* second normal deviate of the polar method */
  int has_spare;
} delayd_rng_t;

/* Seed the generator: the four state words are the first four outputs of
 * splitmix64 started at seed. */
void delayd_rng_seed(delayd_rng_t *rng, uint64_t seed);
/* Next xoshiro256** output. */
uint64_t delayd_rng_next(delayd_rng_t *rng);
/* Uniform in [0, 1) with 53 bits. */
double delayd_rng_uniform(delayd_rng_t *rng);
/* Standard normal deviate (Marsaglia's polar method). */
double delayd_rng_normal(delayd_rng_t *rng);

/* ---- links ---- */

typedef struct delayd_link_stats_t {
  uint64_t received;     /* packets seen on this link */
  uint64_t released;     /* NF_ACCEPT verdicts sent */
  uint64_t lost;         /* dropped by the loss model */
  uint64_t dropped_full; /* dropped because the heap was full */
  uint64_t held;         /* currently held */
  uint64_t max_held;
  uint64_t late_sum_ns;  /* sum over released packets of (release - deadline) */
  uint64_t late_max_ns;
} delayd_link_stats_t;

typedef struct delayd_link_t {
  uint32_t id;            /* NFQUEUE number, or packet mark in mark mode */
  uint64_t delay_ns;
  uint64_t jitter_ns;     /* standard deviation of the normal jitter */
  double loss;            /* probability in [0, 1] */
  uint64_t last_deadline_ns; /* FIFO: deadline of the previous packet */
  delayd_link_stats_t st;
} delayd_link_t;

/* Parse "ID:DELAY_MS[:JITTER_MS[:LOSS_PCT]]" (ID a decimal u32; the other
 * fields decimal numbers, fractions allowed; delay and jitter in
 * [0, 60000] ms, loss in [0, 100] %). Fills *out (counters zeroed) and
 * returns 0; on error returns -1 and writes a message into err. */
int delayd_link_parse(const char *spec, delayd_link_t *out, char *err,
                      size_t errlen);

/* 1 if the loss model drops this packet. */
int delayd_link_lose(const delayd_link_t *l, delayd_rng_t *rng);

/* The delay of one packet in ns: delay + jitter * z with z a standard
 * normal truncated to [-3, 3], clamped at 0. */
uint64_t delayd_link_sample_delay(const delayd_link_t *l, delayd_rng_t *rng);

/* The release deadline of a packet that arrived at now_ns. With fifo, the
 * deadline is at least the previous one of the same link (so jitter never
 * reorders a link's packets). */
uint64_t delayd_link_deadline(delayd_link_t *l, uint64_t now_ns,
                              delayd_rng_t *rng, int fifo);

/* ---- the deadline heap ---- */

typedef struct delayq_ent_t {
  uint64_t deadline_ns;
  uint64_t seq;     /* insertion order, breaks ties */
  uint32_t pkt_id;  /* NFQUEUE packet id */
  uint32_t link;    /* index into the daemon's link table */
} delayq_ent_t;

typedef struct delayq_t delayq_t;

/* A heap holding at most cap entries (cap >= 1); never NULL. */
delayq_t *delayq_new(size_t cap);
void delayq_free_(delayq_t *q);
#define delayq_free(q) do { delayq_free_(q); (q) = NULL; } while (0)

size_t delayq_len(const delayq_t *q);
size_t delayq_cap(const delayq_t *q);
/* Insert; returns 0, or -1 (and changes nothing) when the heap is full. */
int delayq_push(delayq_t *q, uint64_t deadline_ns, uint32_t pkt_id,
                uint32_t link);
/* The earliest entry, or NULL when empty. */
const delayq_ent_t *delayq_top(const delayq_t *q);
/* Remove the earliest entry into *out; returns 0, or -1 when empty. */
int delayq_pop(delayq_t *q, delayq_ent_t *out);

#endif
