/* SPDX-License-Identifier: BSD-3-Clause */
/* publish.h -- keep the directory authorities supplied with the relay's
 * current server descriptor (dir-spec 2.1).
 *
 * A publish_t owns the descriptor's configuration (a deep copy of a
 * routerdesc_config_t), the current signed descriptor, and one upload
 * state per authority. It builds a new descriptor and uploads it to every
 * authority (HTTP/1.0 "POST /tor/" to the DirPort, a plain TCP conn_t on
 * the event loop) when:
 *   - it is configured for the first time, or a field other than the
 *     publication time, uptime and observed bandwidth changes
 *     (publish_configure() on SIGHUP),
 *   - the keys it carries change (publish_keys_changed() after rotation),
 *   - the descriptor is PUBLISH_REPUBLISH_SECS old (18 hours, tor's
 *     interval; PUBLISH_TESTING_REPUBLISH_SECS with TestingTorNetwork),
 *   - while the relay has been up less than a day, the observed bandwidth
 *     changed by a factor of 2 (at most every 3 hours, or at once on a
 *     testing network or when it was 0), as tor does.
 * A failed upload (no connection, a timeout, or any answer but 200) is
 * retried for that authority with exponential backoff; a newer descriptor
 * replaces the one being retried. Every answer is logged with the
 * authority's status line ("Uploaded descriptor to auth0 (127.0.0.1:7001):
 * HTTP/1.0 200 OK"); refusals are warnings carrying the authority's
 * reason. An HTTP 200 only means the authority took the upload: whether
 * it lists the relay shows in the consensus.
 *
 * The observed bandwidth is the largest rate, over 10-second windows,
 * that the relay both read and wrote during the last 5 days of this run,
 * from the traffic counters the caller supplies.
 */
#ifndef PCTOR_FEATURE_RELAY_PUBLISH_H
#define PCTOR_FEATURE_RELAY_PUBLISH_H
#include <stdint.h>
#include <time.h>

#include "core/or/relay_keys.h"
#include "feature/dir/dir_authority.h"
#include "feature/dircache/dirreq_stats.h"
#include "feature/relay/routerdesc.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/statefile.h"

#define PUBLISH_REPUBLISH_SECS (18 * 3600)
#define PUBLISH_TESTING_REPUBLISH_SECS (5 * 60)
/* Retry backoff for one authority: first delay, doubling, up to the cap. */
#define PUBLISH_RETRY_FIRST_SECS 60
#define PUBLISH_RETRY_MAX_SECS 3600
#define PUBLISH_TESTING_RETRY_FIRST_SECS 1
#define PUBLISH_TESTING_RETRY_MAX_SECS 30
/* An upload that has not finished after this long counts as failed. */
#define PUBLISH_UPLOAD_TIMEOUT_SECS 60

/* Total bytes the relay has read and written since it started. */
typedef void (*publish_traffic_fn)(uint64_t *bytes_read,
                                   uint64_t *bytes_written);

/* An authority answered an upload: accepted (HTTP 200), or refused with
 * reason (its status line). dir_addr is the authority's "ADDRESS:PORT". */
typedef void (*publish_upload_fn)(const char *dir_addr, int accepted,
                                  const char *reason, void *arg);
typedef struct publish_params_t {
  const dir_authority_t *auths; /* copied */
  int n_auths;
  int enabled;             /* PublishServerDescriptor */
  int testing;             /* TestingTorNetwork: testing schedule, and
                            * private addresses may be published */
  publish_traffic_fn traffic; /* NULL: observed bandwidth stays 0 */
  publish_upload_fn on_upload; /* may be NULL (the ControlPort's
                                * STATUS_SERVER events) */
  void *on_upload_arg;
  int hold;                /* build the descriptor but do not upload it
                            * yet (the reachability self-test has not
                            * confirmed the ORPort) */
} publish_params_t;

typedef struct publish_t publish_t;

/* A publisher for keys (borrowed: they must outlive it; rotation changes
 * them in place). Nothing happens until publish_configure(). */
publish_t *publish_new(evloop_t *loop, const relay_keys_t *keys);

/* Set the descriptor fields (rc; published, uptime and bw_observed are
 * filled in by the publisher) and where and how to publish (pp). Builds
 * a new descriptor and schedules uploads when the descriptor's content
 * or the authorities changed. Returns 0, or -1 (logged) when rc cannot
 * make a valid descriptor; the previous configuration then stays. */
int publish_configure(publish_t *p, const routerdesc_config_t *rc,
                      const publish_params_t *pp);

/* The keys changed (ntor/TAP rotation, new signing key): rebuild and
 * upload. */
void publish_keys_changed(publish_t *p);

/* The current descriptor, or NULL before the first successful build. */
const char *publish_descriptor(const publish_t *p);

/* Counters, for tests. */
typedef struct publish_stats_t {
  uint64_t n_built;      /* descriptors built */
  uint64_t n_attempts;   /* uploads started */
  uint64_t n_ok;         /* answered 200 */
  uint64_t n_refused;    /* answered something else */
  uint64_t n_failed;     /* no answer (connection failed, timeout) */
  uint64_t bw_observed;  /* current observed bandwidth estimate */
} publish_stats_t;
void publish_get_stats(const publish_t *p, publish_stats_t *out);

/* The extra-info bandwidth history in tor's state-file keys
 * (BWHistory{Read,Write}{Ends,Interval,Values,Maxima}, 900-second
 * intervals; Maxima: each interval's highest rate in bytes/s): save it
 * into st, or add what st holds of the last day to p's. Loading also
 * seeds the observed bandwidth with the Maxima of the last 120 hours (per
 * hour, the lower of the read and write rates). */
void publish_save_history(const publish_t *p, statefile_t *st, time_t now);
void publish_load_history(publish_t *p, const statefile_t *st, time_t now);

/* Directory request statistics (borrowed, must outlive p; NULL: none):
 * their interval is ended when due by the periodic check (which then
 * rebuilds the descriptor), they are saved with the history, and their
 * last result goes into the extra-info document. extra_stats is
 * ExtraInfoStatistics (1 until set): if 0, the extra-info carries
 * neither the statistics nor the bandwidth history, as in tor. */
void publish_set_dirreq_stats(publish_t *p, dirreq_stats_t *s,
                              int extra_stats);

/* Stop uploads in progress and free everything. NULL is fine. */
void publish_free_(publish_t *p);
#define publish_free(p) do { publish_free_(p); (p) = NULL; } while (0)

#endif
