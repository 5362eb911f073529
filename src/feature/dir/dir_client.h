/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_client.h -- the directory client's state: key certificates, the
 * current consensus, descriptors, and the nodelist built from them;
 * loading them from and saving them to DataDirectory; fetching what is
 * missing or stale from the directory authorities' DirPorts.
 *
 * Files in DataDirectory (each written atomically, re-verified on load):
 *   cached-certs                authority key certificates
 *   cached-microdesc-consensus  the microdesc consensus (or, with
 *   cached-consensus            UseMicrodescriptors 0, the ns consensus)
 *   cached-microdescs           microdescriptors (or cached-descriptors:
 *   cached-descriptors          server descriptors) the consensus lists
 * A cached consensus that fails verification or is too old is rejected
 * with a warning naming the problem and fetched again; nothing good is
 * ever replaced by something that failed verification.
 *
 * A fetch round (dir_client_fetch) runs these steps, one HTTP request at
 * a time, each tried against the authorities in random order until one
 * answers well:
 *   1. the consensus, if there is none or it is due for a refresh;
 *   2. /tor/keys/all if the consensus needs certificates we lack;
 *   3. the descriptors the consensus lists that we do not have, in
 *      batches of at most 92 (/tor/micro/d/... or /tor/server/d/...);
 *      answers are checked against the requested digests.
 * Requests use the ".z" URLs and offer every encoding lib/compress
 * decodes (Accept-Encoding: tor's authorities answer with lzma or zstd).
 * The callback fires when the round ends, successfully or not.
 *
 * Where requests go: the authorities' DirPorts, in random order. With
 * fetch_from_caches, once a consensus is known, each request first tries
 * up to DIR_CLIENT_MAX_CACHES directory caches -- relays of the consensus
 * flagged Running, Valid and V2Dir (they advertise tunnelled-dir-server)
 * that are not authorities, drawn at random weighted by their consensus
 * bandwidth -- over BEGIN_DIR on a one-hop CREATE_FAST circuit to their
 * ORPort (dir_tunnel), then falls back to the authorities, as tor clients
 * do. A cache's answer is checked exactly like an authority's.
 *
 * "Now" is time_approx_now() (lib/time/clock), so tests can set it.
 */
#ifndef PCTOR_FEATURE_DIR_DIR_CLIENT_H
#define PCTOR_FEATURE_DIR_DIR_CLIENT_H
#include <stdint.h>
#include <time.h>

#include "feature/dir/consensus.h"
#include "feature/dir/dir_authority.h"
#include "feature/dir/nodelist.h"
#include "lib/evloop/evloop.h"

#define DIR_CLIENT_MAX_DESCS_PER_REQUEST 92
#define DIR_CLIENT_MAX_CACHES 3

typedef struct dir_client_config_t {
  const char *data_dir; /* an existing directory for the cache files */
  const dir_authority_t *auths;
  int n_auths;
  int use_microdescriptors; /* 1 (default): microdesc flavor */
  uint64_t request_timeout_ms; /* 0: 30 s */
  /* 1: refetch the consensus as soon as it is no longer fresh (tools);
   * 0: at the random time dir-spec 5.1 prescribes (daemons). */
  int eager_refresh;
  /* 1: once there is a consensus, ask directory caches over BEGIN_DIR
   * before the authorities (clients). Needs core's channels (the daemon
   * sets them up); relays, which are caches themselves, leave it 0 and
   * fetch from the authorities as tor's caches do. */
  int fetch_from_caches;
} dir_client_config_t;

typedef struct dir_client_t dir_client_t;

/* Called when a fetch round ends: ok is 1 when we have a verified,
 * reasonably live consensus and every descriptor it lists that we could
 * get, 0 otherwise (dir_client_last_error says why). */
typedef void (*dir_client_done_fn)(dir_client_t *dc, int ok, void *arg);

/* loop may be NULL for offline use (load/show only). The configuration's
 * strings and authorities are copied. Never returns NULL. */
dir_client_t *dir_client_new(evloop_t *loop, const dir_client_config_t *cfg);
void dir_client_free_(dir_client_t *dc);
#define dir_client_free(d)                                                    \
  do {                                                                        \
    dir_client_free_(d);                                                      \
    (d) = NULL;                                                               \
  } while (0)

/* Load the cache files; everything that fails to parse or verify is
 * logged and ignored. Returns 1 if a usable consensus was loaded, else 0.
 */
int dir_client_load_cache(dir_client_t *dc, time_t now);
/* Start a fetch round (no-op if one is running). */
void dir_client_fetch(dir_client_t *dc, dir_client_done_fn cb, void *arg);
int dir_client_is_fetching(const dir_client_t *dc);
/* Daemon mode: run fetch rounds by themselves, when the consensus is due
 * and on failure with back-off; cb (may be NULL) after each round. */
void dir_client_start_auto(dir_client_t *dc, dir_client_done_fn cb,
                           void *arg);

/* Current state (NULL when there is no usable consensus). */
const consensus_t *dir_client_consensus(const dir_client_t *dc);
const dir_nodelist_t *dir_client_nodelist(const dir_client_t *dc);
/* 1 if a consensus fetch is due at now. */
int dir_client_consensus_wanted(const dir_client_t *dc, time_t now);
/* Number of descriptors the consensus lists that we lack. */
int dir_client_n_missing_descs(const dir_client_t *dc);
/* The last problem (for messages), or "" */
const char *dir_client_last_error(const dir_client_t *dc);
/* Counters for tests and logs. */
typedef struct dir_client_stats_t {
  int n_requests, n_failed_requests;
  int n_consensus_accepted, n_consensus_rejected;
  int n_certs_added, n_descs_added, n_descs_unrequested;
  int cache_consensus_rejected; /* the cached consensus was refused */
  /* requests sent to directory caches over BEGIN_DIR, and those of them
   * that failed (then the next source was asked) */
  int n_tunnel_requests, n_tunnel_failed;
} dir_client_stats_t;
void dir_client_get_stats(const dir_client_t *dc, dir_client_stats_t *out);
#endif
