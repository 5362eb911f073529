/* SPDX-License-Identifier: BSD-3-Clause */
/* cbt.h -- circuit build timeouts learned from build times, as path-spec
 * section 2.4 describes ("CBT").
 *
 * The last 1000 build times (milliseconds; circuits abandoned without a
 * time are kept as such) are fitted with a right-censored Pareto
 * distribution once cbtmincircs (100) are known:
 *   Xm     the weighted average of the midpoints of the cbtnummodes most
 *          frequent 50 ms bins (the single most frequent bin below 1000
 *          recorded times); times below Xm count as Xm;
 *   alpha  s / (u ln(x_max) + Sum ln(x_i) - n ln(Xm)) over the s completed
 *          times x_i, u abandoned ones, n = s + u;
 *          (every time at or below Xm: alpha is infinite, quantiles Xm);
 *   timeout = Xm / (1 - cbtquantile)^(1/alpha), at least cbtmintimeout;
 *   close   = Xm / (1 - cbtclosequantile)^(1/alpha), at least 60 s.
 * Before that the timeout is cbtinitialtimeout (60 s). A circuit that
 * passes the timeout is no longer used for streams but keeps building,
 * for its time, until the close timeout; then it is abandoned. When
 * cbtmaxtimeouts of the last cbtrecentcount circuits timed out, the
 * history is discarded and learning starts again (doubling the timeout
 * if it was already the initial one or more). cbtdisabled=1 in the
 * consensus turns learning off and discards the history.
 *
 * The history is kept in the state file as tor keeps it
 * ("CircuitBuildTimeBin MS COUNT" per 50 ms bin, by the bin's midpoint,
 * "CircuitBuildAbandonedCount N", "TotalBuildTimes N") and shuffled when
 * read, so old times still leave first.
 *
 * Not done (pctor(1) says so): tor's network-liveness check (timeouts
 * while no cell arrived at all are not counted) and the test circuits
 * tor builds once a minute until it has 100 times.
 */
#ifndef PCTOR_FEATURE_CLIENT_CBT_H
#define PCTOR_FEATURE_CLIENT_CBT_H
#include <stdint.h>

#include "feature/dir/consensus.h"
#include "feature/dir/path.h"
#include "lib/fs/statefile.h"

#define CBT_MAX_TIMES 1000
#define CBT_BIN_WIDTH_MS 50
#define CBT_DEFAULT_TIMEOUT_MS 60000

typedef struct cbt_t cbt_t;

cbt_t *cbt_new(void);
void cbt_free_(cbt_t *cbt);
#define cbt_free(c)                                                           \
  do {                                                                        \
    cbt_free_(c);                                                             \
    (c) = NULL;                                                               \
  } while (0)

/* Read the consensus parameters (cbt*); c may be NULL (defaults). */
void cbt_set_consensus(cbt_t *cbt, const consensus_t *c);
/* Load the history from st (lines that do not parse are skipped, with
 * their number in *n_bad); rng shuffles it. Returns how many times were
 * loaded. */
int cbt_load_state(cbt_t *cbt, const statefile_t *st, path_rng_t *rng,
                   int *n_bad);
/* Write the history into st (not saved). */
void cbt_write_state(const cbt_t *cbt, statefile_t *st);

/* What a new entry did, for controllers (control-spec's BUILDTIMEOUT_SET
 * event types): nothing to say yet, the timeout was (re)computed from the
 * history, or too many recent timeouts reset the history. */
typedef enum {
  CBT_EV_NONE,
  CBT_EV_COMPUTED,
  CBT_EV_RESET,
} cbt_event_t;
/* A circuit was built in ms milliseconds (after the timeout or not; one
 * that took longer than the timeout counts as a timeout in the recent
 * history). */
cbt_event_t cbt_note_built(cbt_t *cbt, uint32_t ms);
/* A circuit passed the close timeout unbuilt: recorded without a time. */
cbt_event_t cbt_note_abandoned(cbt_t *cbt);
/* Forget every build time (a controller's DROPTIMEOUTS): the timeout is
 * the initial one again, learning starts over. */
void cbt_reset(cbt_t *cbt);

/* The figures of a BUILDTIMEOUT_SET event. Rates are over the recent
 * history (cbtrecentcount circuits): timed out, and abandoned. */
typedef struct cbt_info_t {
  int total_times;
  uint32_t timeout_ms, close_ms;
  double xm, alpha, quantile, timeout_rate, close_rate;
} cbt_info_t;
void cbt_get_info(const cbt_t *cbt, cbt_info_t *out);

/* The current timeout and close timeout, milliseconds. */
uint32_t cbt_timeout_ms(const cbt_t *cbt);
uint32_t cbt_close_ms(const cbt_t *cbt);
/* 1 once the timeout is learned (enough times, learning enabled). */
int cbt_is_learned(const cbt_t *cbt);
/* Recorded entries (completed and abandoned) and the fitted parameters
 * (0 before learning). */
int cbt_n_recorded(const cbt_t *cbt);
double cbt_xm(const cbt_t *cbt);
double cbt_alpha(const cbt_t *cbt);
#endif
