/* SPDX-License-Identifier: BSD-3-Clause */
/* path.h -- path selection from the consensus (path-spec 2.2, 5.1;
 * dir-spec 3.4.1 "bandwidth-weights").
 *
 * Positions are chosen exit first, then guard, then middles (path-spec
 * 2.2), each by a random draw weighted by
 *     consensus bandwidth x W(position, flags) / bwweightscale
 * where W is Wgg/Wgd/Wgm (guard), Wmg/Wmd/Wme/Wmm (middle),
 * Weg/Wed/Wee/Wem (exit) for Guard-only, Guard+Exit, Exit-only and
 * unflagged relays ("Exit" counting only without BadExit); a weight
 * missing from the consensus is 10000, a relay without a bandwidth counts
 * 20 (tor's default). If every candidate weighs 0 the draw is uniform.
 *
 * Constraints, always: distinct relays; no two in the same family; no two
 * in the same /16 (IPv4) or /32 (IPv6) unless enforce_distinct_subnets is
 * 0; only usable relays (Running, Valid, descriptor with an ntor key)
 * whose consensus "pr" line, if any, lists Relay=2 and Link=4 (what the
 * client speaks to every hop: CREATE2/EXTEND2 with ntor, 4-byte circuit
 * IDs);
 * ExcludeNodes never; Fast required when need_fast, Stable when
 * need_stable. Per position:
 *   guard  Guard flag, not MiddleOnly; with EntryNodes, any EntryNodes
 *          relay instead (the Guard flag is then not required).
 *   middle any; with MiddleNodes, only those.
 *   exit   not BadExit, not MiddleOnly; for exit_port > 0 the exit-policy
 *          summary must allow the port; with ExitNodes, only those.
 *          exit_port == 0 builds an internal circuit: the last hop is
 *          chosen with middle weights and no policy check.
 *
 * Guard selection is deliberately simple (no guard-spec sampled/primary
 * guard sets): each call draws a guard afresh unless the caller passes
 * one (path_choose's `guard` argument), so a caller that wants a
 * long-lived guard picks it once with path_choose_node(PATH_POS_GUARD)
 * and keeps passing it while it stays usable.
 *
 * Randomness is injectable (path_rng_t) so tests can use a fixed seed.
 */
#ifndef PCTOR_FEATURE_DIR_PATH_H
#define PCTOR_FEATURE_DIR_PATH_H
#include <stddef.h>
#include <stdint.h>

#include "feature/dir/nodelist.h"

typedef struct path_rng_t {
  /* Uniform integer in [0, bound), bound > 0. */
  uint64_t (*below)(void *arg, uint64_t bound);
  void *arg;
} path_rng_t;

/* The cryptographic RNG (lib/crypt/rand). */
path_rng_t path_rng_crypto(void);

/* A set of relays given as tor's node lists: comma- and/or
 * space-separated entries "$HEX40", "HEX40", "$HEX40~nick",
 * "$HEX40=nick", "nickname", "1.2.3.4", "1.2.3.0/24". Country codes
 * ("{cc}") need GeoIP and are refused. */
typedef struct routerset_t routerset_t;
/* Parse (adds to *set, creating it when NULL). Returns 0 or -1 with
 * *err. */
int routerset_parse(routerset_t **set, const char *list, char **err);
int routerset_contains(const routerset_t *set, const dir_node_t *n);
int routerset_is_empty(const routerset_t *set);
void routerset_free_(routerset_t *set);
#define routerset_free(s)                                                     \
  do {                                                                        \
    routerset_free_(s);                                                       \
    (s) = NULL;                                                               \
  } while (0)

typedef struct path_config_t {
  routerset_t *entry_nodes;   /* EntryNodes, or NULL */
  routerset_t *middle_nodes;  /* MiddleNodes, or NULL */
  routerset_t *exit_nodes;    /* ExitNodes, or NULL */
  routerset_t *exclude_nodes; /* ExcludeNodes, or NULL */
  int enforce_distinct_subnets; /* EnforceDistinctSubnets (default 1) */
  int need_fast;                /* default 1 (tor's general circuits) */
  int need_stable;              /* default 0 */
} path_config_t;

/* Defaults: no node lists, distinct subnets, Fast required. */
void path_config_init(path_config_t *cfg);
/* Free the routersets it holds. */
void path_config_clear(path_config_t *cfg);

typedef enum {
  PATH_POS_GUARD = 0,
  PATH_POS_MIDDLE = 1,
  PATH_POS_EXIT = 2,
} path_position_t;

/* Weight of n in position pos (bandwidth x W / scale, before any
 * constraint). */
double path_node_weight(const dir_nodelist_t *nl, const dir_node_t *n,
                        path_position_t pos);
/* 1 if n may be chosen for pos (flags, node lists, exit policy) ignoring
 * the other hops. */
int path_node_is_candidate(const dir_node_t *n, path_position_t pos,
                           const path_config_t *cfg, int exit_port);
/* 1 if n may not share a circuit with the n_avoid relays given (NULLs
 * are skipped): one of them, its family, or (enforce_distinct_subnets)
 * its /16 or IPv6 /32. */
int path_node_conflicts(const path_config_t *cfg, const dir_node_t *n,
                        const dir_node_t *const *avoid, int n_avoid);
/* Draw one relay for pos, avoiding conflicts with the n_avoid relays
 * already chosen. NULL if no candidate is left. */
const dir_node_t *path_choose_node(const dir_nodelist_t *nl,
                                   path_position_t pos,
                                   const path_config_t *cfg, int exit_port,
                                   const dir_node_t *const *avoid,
                                   int n_avoid, path_rng_t *rng);
/* How much of the network the client can build paths through (tor's
 * PathsNeededToBuildCircuits rule, path-spec "enough directory
 * information"): for each position, the weighted fraction of the relays
 * that would be candidates (Running, Valid, the position's flags and
 * node lists, ignoring exit policies) whose descriptor we hold. An exit
 * candidate needs the Exit flag (without BadExit) unless ExitNodes names
 * the exits. A position without any candidate counts as 1 (path choice
 * then says what is missing). f_paths = f_guard x f_mid x f_exit. */
typedef struct path_dir_info_t {
  double f_guard, f_mid, f_exit, f_paths;
  int n_usable;    /* Running and Valid relays in the consensus */
  int n_with_desc; /* ... of which we hold the descriptor */
} path_dir_info_t;
void path_dir_info(const dir_nodelist_t *nl, const path_config_t *cfg,
                   path_dir_info_t *out);
/* The fraction of paths needed before building circuits:
 * PathsNeededToBuildCircuits when it is set (> 0), else the consensus
 * parameter min_paths_for_circs_pct (25..95, default 60), over 100. */
double path_min_fraction(const dir_nodelist_t *nl, double configured);

/* Choose an n_hops path (2..8) into out[0..n_hops-1], guard first, exit
 * last. guard: use this first hop (it must be a guard candidate; the
 * other hops are then chosen to fit it) or NULL to draw one. Returns 0, or -1 with *err naming the position that
 * had no candidate. */
int path_choose(const dir_nodelist_t *nl, const path_config_t *cfg,
                int n_hops, int exit_port, const dir_node_t *guard,
                path_rng_t *rng, const dir_node_t **out, char **err);
#endif
