/* SPDX-License-Identifier: BSD-3-Clause */
/* dirreq_stats.h -- directory request statistics (tor's DirReqStatistics):
 * the dirreq-* lines of the extra-info document (dir-spec 2.1.2).
 *
 * What is counted: requests for a v3 network status (the consensus, any
 * flavor: /tor/status-vote/current/consensus...), on the DirPort
 * ("direct") and over BEGIN_DIR ("tunneled"). Per measurement interval
 * (86400 s; settable for tests), where requests over circuits of several
 * hops are anonymous and not counted by address or country (as in tor):
 *   - dirreq-v3-ips: unique client addresses answered 200, by country;
 *   - dirreq-v3-reqs: requests answered 200, by country;
 *   - dirreq-v3-resp: answers by status (ok, not-enough-sigs,
 *     unavailable, not-found, not-modified, busy), after "served" as
 *     tor 0.4.9 writes it (the answers sent: here the same as ok);
 *   - dirreq-v3-direct-dl / -tunneled-dl: downloads completed, ended
 *     before the last byte ("timeout"), still running when the interval
 *     ends; with at least 16 completed, the spread of their rates
 *     (min, d1..d9 with q1, md, q3, max, in bytes per second).
 * As tor publishes them: per-country counts and statuses rounded up to a
 * multiple of 8, download counts to a multiple of 4; countries (lower
 * case, "??" when unknown or without GeoIP) by count, then by code.
 *
 * When an interval ends (dirreq_stats_rotate), its lines are kept as the
 * published result (until a day after its end, as tor includes a stats
 * file), written to DataDirectory/stats/dirreq-stats in tor's format, and
 * counting starts again. The interval under way is kept in the state file
 * (dirreq_stats_save/_load, pctor's DirReqStats* keys, which tor keeps as
 * unknown lines) so that a restart does not lose it; the set of addresses
 * seen is not saved, so an address seen before and after a restart counts
 * twice in dirreq-v3-ips.
 *
 * Bounds: at most DIRREQ_MAX_ADDRS addresses are remembered for
 * uniqueness (further ones count as new), DIRREQ_MAX_COUNTRIES countries
 * (others count as "??"), DIRREQ_MAX_RATES download rates per kind.
 */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRREQ_STATS_H
#define PCTOR_FEATURE_DIRCACHE_DIRREQ_STATS_H
#include <stdint.h>
#include <time.h>

#include "lib/conf/confdecl.h"
#include "lib/fs/statefile.h"
#include "lib/address/address.h"

#define DIRREQ_INTERVAL_DEFAULT 86400
#define DIRREQ_MAX_ADDRS (1u << 17) /* 4.5 MB of hash set at most */
#define DIRREQ_MAX_COUNTRIES 300
#define DIRREQ_MAX_RATES 65536
/* Rates are given once this many downloads completed (as tor). */
#define DIRREQ_MIN_RATES 16

typedef enum dirreq_resp_t {
  DIRREQ_RESP_OK = 0,
  DIRREQ_RESP_NOT_ENOUGH_SIGS,
  DIRREQ_RESP_UNAVAILABLE,
  DIRREQ_RESP_NOT_FOUND,
  DIRREQ_RESP_NOT_MODIFIED,
  DIRREQ_RESP_BUSY,
  DIRREQ_RESP_N
} dirreq_resp_t;

typedef struct dirreq_stats_t dirreq_stats_t;

/* The torrc options (dirreq_conf_module, dirreq_options.c). */
typedef struct dirreq_options_t {
  int dirreq_statistics;     /* DirReqStatistics */
  int extra_info_statistics; /* ExtraInfoStatistics */
  int interval;              /* __DirReqStatisticsInterval, seconds */
} dirreq_options_t;
extern const conf_module_t dirreq_conf_module;

/* The lower-case country code of a, or "??". */
typedef const char *(*dirreq_country_fn)(const pc_addr_t *a, void *arg);

/* Statistics whose first interval starts at now and lasts interval
 * seconds; stats_path (copied; NULL: none) receives each finished
 * interval's lines. */
dirreq_stats_t *dirreq_stats_new(time_t now, int interval,
                                 const char *stats_path);
void dirreq_stats_free_(dirreq_stats_t *s);
#define dirreq_stats_free(s) \
  do { dirreq_stats_free_(s); (s) = NULL; } while (0)
void dirreq_stats_set_country_fn(dirreq_stats_t *s, dirreq_country_fn fn,
                                 void *arg);
/* A new interval length (takes effect for the interval under way). */
void dirreq_stats_set_interval(dirreq_stats_t *s, int interval);

/* A request for a network status from client was answered with r.
 * client NULL: an anonymous request (BEGIN_DIR at the end of a circuit
 * of several hops), counted by status but not by address or country, as
 * tor counts it. */
void dirreq_stats_note_response(dirreq_stats_t *s, const pc_addr_t *client,
                                dirreq_resp_t r);
/* A download (the body of a 200 answer) started; ended after usecs with
 * bytes sent, completely or not. */
void dirreq_stats_dl_start(dirreq_stats_t *s, int tunneled);
void dirreq_stats_dl_end(dirreq_stats_t *s, int tunneled, int complete,
                         uint64_t bytes, uint64_t usecs);

/* The dirreq-* lines of the interval under way, as if it ended at now
 * (tests; newly allocated). */
char *dirreq_stats_format(const dirreq_stats_t *s, time_t now);
/* If the interval under way ended by now: keep its lines as the result,
 * write them to the stats file, start the next interval. Returns 1 if it
 * did, else 0. */
int dirreq_stats_rotate(dirreq_stats_t *s, time_t now);
/* The lines to publish at now (the last finished interval, within a day
 * of its end), or NULL. Owned by s. */
const char *dirreq_stats_published(const dirreq_stats_t *s, time_t now);

/* The interval under way in the state file, and back. Loading also reads
 * the stats file's last result. */
void dirreq_stats_save(const dirreq_stats_t *s, statefile_t *st);
void dirreq_stats_load(dirreq_stats_t *s, const statefile_t *st,
                       time_t now);

/* The global statistics the directory cache feeds (NULL: none). */
void dirreq_stats_set_global(dirreq_stats_t *s);
dirreq_stats_t *dirreq_stats_global(void);

#endif
