/* SPDX-License-Identifier: BSD-3-Clause */
/* guards.h -- entry guards as guard-spec describes them: a persistent
 * sampled set, its filtered and usable subsets, the confirmed list and
 * the primary guards, kept across restarts in the state file.
 *
 * The sets (guard-spec section 4):
 *   SAMPLED    guards ever drawn from the consensus (bandwidth-weighted
 *              as a guard, path.h), at most max(MAX_SAMPLE_THRESHOLD x
 *              guards in the consensus, MIN_FILTERED_SAMPLE) and
 *              MAX_SAMPLE_SIZE; persistent, in sample order. A guard
 *              leaves it when unlisted for REMOVE_UNLISTED_GUARDS_AFTER
 *              or when older than GUARD_LIFETIME (and not confirmed
 *              within GUARD_CONFIRMED_MIN_LIFETIME).
 *   FILTERED   sampled guards listed in the current consensus (Running,
 *              Valid, Guard, Fast, V2Dir, Relay=2 and Link=4) that the
 *              configuration allows (ExcludeNodes, EntryNodes);
 *              USABLE_FILTERED: those not known to be unreachable.
 *              Grown (by sampling) when fewer than MIN_FILTERED_SAMPLE
 *              are usable.
 *   CONFIRMED  sampled guards a circuit was built through, in the order
 *              that happened; persistent (confirmed_on, confirmed_idx).
 *   PRIMARY    the first N_PRIMARY_GUARDS of CONFIRMED x FILTERED, then
 *              filtered guards in sample order; a primary guard stays
 *              until a confirmed guard displaces it or it is filtered out.
 * Choosing a guard for a circuit (section 4.6): the first usable primary
 * guard (among the first NUM_USABLE_PRIMARY_GUARDS, at random); if all
 * primaries are down, the first confirmed usable guard not already being
 * tried, else the next usable filtered guard in sample order; if none is
 * left, every guard becomes "maybe" reachable again. While the primary
 * guard that would be used has no descriptor yet, no guard is chosen
 * (section 4.12). A guard that failed
 * is retried after the spec's schedules (30 min / 2 h / 4 h / 9 h for
 * primary guards, 1 h / 4 h / 18 h / 36 h for the others).
 *
 * Differences from tor (documented in pctor(1)): a circuit through a
 * non-primary guard is used as soon as it is built (tor waits up to 15 s
 * for a better guard's circuit, "waiting_for_better_guard"); there are
 * no directory guards (the directory client picks caches itself) and no
 * path-bias accounting (tor's pb_* fields are kept as they were read).
 *
 * Parameters come from the consensus (guard-n-primary-guards,
 * guard-min-filtered-sample-size, guard-max-sample-size,
 * guard-max-sample-threshold-percent, guard-lifetime-days,
 * guard-confirmed-min-lifetime-days, guard-remove-unlisted-guards-after-
 * days, guard-n-primary-guards-to-use) with the spec's defaults, unless
 * the torrc overrides them (guards_options_t, tor's options):
 * NumPrimaryGuards sets N_PRIMARY_GUARDS; NumEntryGuards sets
 * NUM_USABLE_PRIMARY_GUARDS and, without NumPrimaryGuards, scales
 * N_PRIMARY_GUARDS as tor does (2N above 1, N + N/2 above 5); a
 * GuardLifetime of a day or more replaces both GUARD_LIFETIME and
 * GUARD_CONFIRMED_MIN_LIFETIME. With UseEntryGuards 0 there are no
 * guards: guards_choose() draws each first hop afresh (weighted for the
 * guard position) and the sets are neither used nor changed.
 *
 * State lines are tor's: "Guard in=NAME rsa_id=HEX nickname=N
 * sampled_on=ISO sampled_idx=K sampled_by=VERSION listed=0|1
 * [unlisted_since=ISO] [confirmed_on=ISO confirmed_idx=K] ...", unknown
 * K=V entries and lines of other guard instances kept as they were. The
 * instance is "default", or "restricted" while EntryNodes is set (as
 * tor names them).
 */
#ifndef PCTOR_FEATURE_CLIENT_GUARDS_H
#define PCTOR_FEATURE_CLIENT_GUARDS_H
#include <stdint.h>
#include <time.h>

#include "feature/dir/nodelist.h"
#include "feature/dir/path.h"
#include "lib/conf/confdecl.h"
#include "lib/fs/statefile.h"

typedef struct guards_t guards_t;

/* The torrc options of the guards (guards_conf_module), tor's names. */
typedef struct guards_options_t {
  int num_entry_guards;     /* NumEntryGuards; 0: the consensus' */
  int num_primary_guards;   /* NumPrimaryGuards; 0: the consensus' */
  int num_directory_guards; /* NumDirectoryGuards (no effect) */
  int guard_lifetime;       /* GuardLifetime, seconds; < 1 day: consensus */
  int use_entry_guards;     /* UseEntryGuards (default 1) */
} guards_options_t;

extern const conf_module_t guards_conf_module;

/* Use these options from now on (NULL: tor's defaults). Copied. */
void guards_set_options(guards_t *g, const guards_options_t *o);

typedef enum {
  GUARD_REACH_MAYBE = 0,
  GUARD_REACH_YES = 1,
  GUARD_REACH_NO = 2,
} guard_reach_t;

/* A guard's view for logs, controllers and tests. */
typedef struct guard_info_t {
  uint8_t rsa_id[20];
  char nickname[20];
  time_t sampled_on;
  int sampled_idx;
  int listed;
  int confirmed_idx; /* -1 if not confirmed */
  int is_primary;
  int is_filtered;
  guard_reach_t reach;
} guard_info_t;

/* The guard set of instance name ("default" or "restricted"), read from
 * st (which must outlive it; NULL keeps nothing across restarts). Lines
 * that do not parse are dropped with a warning. */
guards_t *guards_new(statefile_t *st, const char *instance);
void guards_free_(guards_t *g);
#define guards_free(g)                                                        \
  do {                                                                        \
    guards_free_(g);                                                          \
    (g) = NULL;                                                               \
  } while (0)

/* The instance a configuration uses: "restricted" with EntryNodes
 * ("default" for cfg NULL). */
const char *guards_instance_for(const path_config_t *cfg);
const char *guards_instance(const guards_t *g);

/* Bring the sets up to date with the nodelist and configuration
 * (guard-spec 4.10): listed/unlisted, expiry, filtering, primaries,
 * sample growth. Writes the state file when persistent data changed.
 * Cheap; call before choosing. */
void guards_update(guards_t *g, const dir_nodelist_t *nl,
                   const path_config_t *cfg, time_t now, path_rng_t *rng);

/* Choose a guard for a new circuit (guard-spec 4.6), avoiding the
 * n_avoid relays given (and their families and, with
 * enforce_distinct_subnets, their /16s). Runs guards_update first.
 * NULL if no guard can be used now; *primary says whether it is a
 * primary guard. */
const dir_node_t *guards_choose(guards_t *g, const dir_nodelist_t *nl,
                                const path_config_t *cfg,
                                const dir_node_t *const *avoid, int n_avoid,
                                time_t now, path_rng_t *rng, int *primary);

/* A circuit through guard rsa_id was built (the guard is reachable and
 * becomes confirmed) or failed at the first hop (unreachable). */
void guards_note_success(guards_t *g, const uint8_t rsa_id[20], time_t now);
void guards_note_failure(guards_t *g, const uint8_t rsa_id[20], time_t now);

/* Sampled guards in sample order: how many, and the i-th. */
int guards_n_sampled(const guards_t *g);
void guards_get(const guards_t *g, int i, guard_info_t *out);
/* Primary guards in order: how many, and the rsa_id of the i-th. */
/* The parameters in force (after the last guards_update()): how many
 * primary guards are kept, how many of them circuits are spread over,
 * and the guard lifetime and confirmed minimum lifetime in seconds. */
void guards_get_params(const guards_t *g, int *n_primary, int *n_to_use,
                       time_t *lifetime, time_t *confirmed_min);
int guards_n_primary(const guards_t *g);
const uint8_t *guards_primary_id(const guards_t *g, int i);

/* Write the guard lines into the state (and save it when it changed).
 * Done by the functions above when needed. Returns 0 or -1 (logged). */
int guards_save(guards_t *g, time_t now);
#endif
