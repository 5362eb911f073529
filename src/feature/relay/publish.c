/* SPDX-License-Identifier: BSD-3-Clause */
/* publish.c -- upload the relay's server descriptor to the directory
 * authorities and keep it fresh (publish.h).
 *
 * Design:
 * - One generation counter names the current descriptor. Each authority
 *   remembers the generation it last accepted; whenever an authority is
 *   behind, not busy and not waiting for a retry, an upload starts. So a
 *   new descriptor (new generation) reaches every authority, an upload in
 *   flight is followed by one of the newer descriptor, and a retry always
 *   sends the newest descriptor.
 * - Rebuilding is deferred to a zero-delay timer ("soon"), so several
 *   reasons arriving in one event-loop turn (SIGHUP plus a key rotation)
 *   make one descriptor. The publication time strictly increases from
 *   one descriptor to the next, since authorities ignore a descriptor
 *   that is not newer than the one they have.
 * - The HTTP exchange is the minimum dir-spec needs: "POST /tor/
 *   HTTP/1.0" with Content-Length, then the answer's status line is all
 *   we read; the connection is closed once it arrived. A timer bounds
 *   each exchange.
 * - The descriptor is built even when publishing is disabled or the
 *   address is not publishable, so the current one is always available
 *   (publish_descriptor()) and SIGHUP enabling publication only has to
 *   upload.
 * - The observed bandwidth keeps one maximum per hour for 120 hours (5
 *   days) in a ring; the estimate is the largest of them. Samples are
 *   10-second windows of min(bytes read, bytes written).
 * - Each descriptor has an extra-info document (routerdesc.h), built
 *   first so that the descriptor's extra-info-digest names it, and sent
 *   after it in the same POST. Its history is a ring of 96 15-minute
 *   totals fed by the same samples, saved in and loaded from the state
 *   file under tor's BWHistory* keys (tor reads them back).
 * - With each interval's totals go its highest read and write rates (the
 *   state file's BWHistory*Maxima, as tor keeps them): loaded at start,
 *   they seed the observed bandwidth, so a restarted relay (or a tor
 *   relay moved to pctor with its state file) advertises the bandwidth it
 *   had, not 0 until traffic comes back.
 * - With directory request statistics (publish_set_dirreq_stats), the
 *   periodic check ends their interval when it is due and rebuilds the
 *   descriptor, so that the new dirreq-* lines are published at once.
 */
#include "feature/relay/publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/or/circuit.h"
#include "feature/dircache/dirreq_stats.h"
#include "lib/buf/buf.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"
#include "lib/string/str.h"
#include "lib/time/timefmt.h"

#define USEC 1000000ULL
#define CHECK_INTERVAL_SECS 60
#define BW_SAMPLE_SECS 10
#define BW_HOURS 120
/* Extra-info bandwidth history: 15-minute intervals (dir-spec 2.1.2
 * write-history), one day of them. */
#define HIST_INTERVAL 900
#define HIST_N 96
#define BW_CHANGE_FACTOR 2
#define BW_CHANGE_MIN_SECS (3 * 3600)
#define BW_CHANGE_MAX_UPTIME (24 * 3600)
#define MAX_STATUS_LINE 1024
/* After this many failures in a row an authority's failures are warned
 * about, not just noted. */
#define WARN_AFTER_FAILURES 5

typedef struct auth_state_t {
  struct publish_t *p;
  dir_authority_t da;
  char name[112];           /* "auth0 (127.0.0.1:7001)" */
  conn_t *conn;             /* upload in progress */
  uint64_t inflight_gen;
  uint64_t uploaded_gen;    /* accepted with 200; 0: none */
  evloop_timer_t *retry;
  evloop_timer_t *timeout;
  int backoff_secs;
  int n_failures;           /* in a row */
} auth_state_t;

struct publish_t {
  evloop_t *loop;
  const relay_keys_t *keys;
  time_t started;

  /* Owned copy of the configuration; rc's pointers point into it. */
  int have_config;
  routerdesc_config_t rc;
  char *nickname, *contact, *platform;
  char **family, **policy;
  ed25519_keypair_t *family_keys; /* owned copies (wiped) */
  int enabled, testing, publishable;
  int hold; /* waiting for the reachability self-test */
  publish_traffic_fn traffic;
  publish_upload_fn on_upload;
  void *on_upload_arg;

  auth_state_t *auths;
  int n_auths;

  char *desc;
  char *extra;              /* its extra-info document (dir-spec 2.1.2) */
  uint64_t gen;
  time_t published;         /* of desc */
  uint64_t bw_in_desc;
  time_t overload_in_desc;  /* its overload-general hour, or 0 */
  const char *dirty_reason; /* set while a rebuild is scheduled */

  evloop_timer_t *soon, *check, *bw_timer;

  /* observed bandwidth */
  int have_sample;
  uint64_t last_rd, last_wr, last_sample_us;
  uint64_t hour_max[BW_HOURS];
  int64_t hour_of[BW_HOURS];
  time_t bw_changed_at;
  /* Bandwidth history for the extra-info: bytes read/written in each
   * HIST_INTERVAL-second interval, by interval number mod HIST_N. */
  uint64_t hist_rd[HIST_N], hist_wr[HIST_N];
  /* ... and the highest read and write rate (bytes/s, one sample) in it. */
  uint64_t hist_max_rd[HIST_N], hist_max_wr[HIST_N];
  int64_t hist_of[HIST_N];

  publish_stats_t stats;
  dirreq_stats_t *dirreq; /* borrowed; NULL: none */
  int extra_stats;        /* ExtraInfoStatistics: history and
                           * statistics in the extra-info */
};

static void kick_uploads(publish_t *p);

/* ---------------------------------------------------------------- */
/* Configuration copies */

static char **
strv_dup(const char *const *v, int n)
{
  if (n <= 0)
    return NULL;
  char **out = pc_calloc((size_t)n, sizeof(char *));
  for (int i = 0; i < n; i++)
    out[i] = pc_strdup(v[i]);
  return out;
}

static void
strv_free(char **v, int n)
{
  for (int i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

static int
strv_eq(const char *const *a, int na, const char *const *b, int nb)
{
  if (na != nb)
    return 0;
  for (int i = 0; i < na; i++)
    if (strcmp(a[i], b[i]))
      return 0;
  return 1;
}

/* Whether a and b hold the same family keys (by public key). */
static int
family_keys_eq(const routerdesc_config_t *a, const routerdesc_config_t *b)
{
  if (a->n_family_keys != b->n_family_keys)
    return 0;
  for (int i = 0; i < a->n_family_keys; i++)
    if (memcmp(a->family_keys[i].pub, b->family_keys[i].pub,
               ED25519_PUBKEY_LEN))
      return 0;
  return 1;
}

/* Whether two configurations make the same descriptor, apart from the
 * publication time, uptime and observed bandwidth. */
static int
rc_same_content(const routerdesc_config_t *a, const routerdesc_config_t *b)
{
  return str_eq_nullable(a->nickname, b->nickname) &&
         pc_addr_eq(&a->address, &b->address, 0) &&
         a->or_port == b->or_port &&
         a->ipv6_or.family == b->ipv6_or.family &&
         (a->ipv6_or.family != AF_INET6 ||
          pc_addr_eq(&a->ipv6_or, &b->ipv6_or, 1)) &&
         str_eq_nullable(a->contact, b->contact) &&
         strv_eq(a->family, a->n_family, b->family, b->n_family) &&
         family_keys_eq(a, b) &&
         strv_eq(a->exit_policy, a->n_exit_policy, b->exit_policy,
                 b->n_exit_policy) &&
         a->bw_rate == b->bw_rate && a->bw_burst == b->bw_burst &&
         str_eq_nullable(a->platform, b->platform) &&
         a->crosscert_lifetime_days == b->crosscert_lifetime_days &&
         a->tunnelled_dir_server == b->tunnelled_dir_server &&
         a->hibernating == b->hibernating;
}

static void
config_clear(publish_t *p)
{
  free(p->nickname);
  free(p->contact);
  free(p->platform);
  strv_free(p->family, p->rc.n_family);
  strv_free(p->policy, p->rc.n_exit_policy);
  if (p->family_keys) {
    pc_memwipe(p->family_keys,
               sizeof(*p->family_keys) * (size_t)p->rc.n_family_keys);
    PC_FREE(p->family_keys);
  }
  p->nickname = p->contact = p->platform = NULL;
  p->family = p->policy = NULL;
  memset(&p->rc, 0, sizeof(p->rc));
}

static void
config_set(publish_t *p, const routerdesc_config_t *rc)
{
  config_clear(p);
  p->rc = *rc;
  p->nickname = rc->nickname ? pc_strdup(rc->nickname) : NULL;
  p->contact = rc->contact ? pc_strdup(rc->contact) : NULL;
  p->platform = rc->platform ? pc_strdup(rc->platform) : NULL;
  p->family = strv_dup(rc->family, rc->n_family);
  p->policy = strv_dup(rc->exit_policy, rc->n_exit_policy);
  if (rc->n_family_keys > 0)
    p->family_keys = pc_memdup(rc->family_keys,
                               sizeof(*rc->family_keys) *
                                   (size_t)rc->n_family_keys);
  p->rc.family_keys = p->family_keys;
  p->rc.nickname = p->nickname;
  p->rc.contact = p->contact;
  p->rc.platform = p->platform;
  p->rc.family = (const char *const *)p->family;
  p->rc.exit_policy = (const char *const *)p->policy;
}

/* ---------------------------------------------------------------- */
/* Observed bandwidth */

static uint64_t
bw_observed(const publish_t *p, time_t now)
{
  int64_t hour = (int64_t)now / 3600;
  uint64_t best = 0;
  for (int i = 0; i < BW_HOURS; i++)
    if (p->hour_of[i] > hour - BW_HOURS && p->hour_max[i] > best)
      best = p->hour_max[i];
  return best;
}

/* An observed rate (bytes/s) for hour: the hour's slot keeps the
 * highest. */
static void
note_hour_rate(publish_t *p, int64_t hour, uint64_t rate)
{
  int slot = (int)(hour % BW_HOURS);
  if (p->hour_of[slot] != hour) {
    p->hour_of[slot] = hour;
    p->hour_max[slot] = 0;
  }
  if (rate > p->hour_max[slot])
    p->hour_max[slot] = rate;
}

/* The history slot of interval iv (cleared if it held an older one). */
static int
hist_slot(publish_t *p, int64_t iv)
{
  int slot = (int)(iv % HIST_N);
  if (p->hist_of[slot] != iv) {
    p->hist_of[slot] = iv;
    p->hist_rd[slot] = p->hist_wr[slot] = 0;
    p->hist_max_rd[slot] = p->hist_max_wr[slot] = 0;
  }
  return slot;
}

static void
bw_sample_cb(void *arg)
{
  publish_t *p = arg;
  uint64_t rd = 0, wr = 0, now_us = evloop_now_us(p->loop);
  if (!p->traffic)
    return;
  p->traffic(&rd, &wr);
  uint64_t rate_rd = 0, rate_wr = 0;
  if (p->have_sample && now_us > p->last_sample_us && rd >= p->last_rd &&
      wr >= p->last_wr) {
    uint64_t secs = (now_us - p->last_sample_us + USEC / 2) / USEC;
    if (secs == 0)
      secs = 1;
    rate_rd = (rd - p->last_rd) / secs;
    rate_wr = (wr - p->last_wr) / secs;
    note_hour_rate(p, (int64_t)time(NULL) / 3600,
                   rate_rd < rate_wr ? rate_rd : rate_wr);
  }
  if (p->have_sample && rd >= p->last_rd && wr >= p->last_wr) {
    int slot = hist_slot(p, (int64_t)time(NULL) / HIST_INTERVAL);
    p->hist_rd[slot] += rd - p->last_rd;
    p->hist_wr[slot] += wr - p->last_wr;
    if (rate_rd > p->hist_max_rd[slot])
      p->hist_max_rd[slot] = rate_rd;
    if (rate_wr > p->hist_max_wr[slot])
      p->hist_max_wr[slot] = rate_wr;
  }
  p->last_rd = rd;
  p->last_wr = wr;
  p->last_sample_us = now_us;
  p->have_sample = 1;
}

/* ---------------------------------------------------------------- */
/* Bandwidth history in the state file (tor's BWHistory* keys) */

static void
save_one(statefile_t *st, const char *dir, const uint64_t *v,
         const uint64_t *maxima, const publish_t *p, int64_t cur)
{
  char key[40], when[TIME_ISO_LEN + 1];
  size_t cap = HIST_N * 21 + 1, len = 0, mlen = 0;
  char *vals = pc_malloc(cap), *maxs = pc_malloc(cap);
  vals[0] = maxs[0] = '\0';
  int64_t first = 0;
  for (int64_t iv = cur - HIST_N + 1; iv <= cur; iv++) {
    int slot = (int)(iv % HIST_N);
    if (!first && p->hist_of[slot] != iv)
      continue;
    if (!first)
      first = iv;
    int have = p->hist_of[slot] == iv;
    len += (size_t)snprintf(vals + len, cap - len, "%s%llu", len ? "," : "",
                            (unsigned long long)(have ? v[slot] : 0));
    mlen += (size_t)snprintf(maxs + mlen, cap - mlen, "%s%llu",
                             mlen ? "," : "",
                             (unsigned long long)(have ? maxima[slot] : 0));
  }
  /* As tor: the last value is the interval under way so far (so a state
   * written while running keeps it), and Ends is that interval's end. */
  time_format_iso(when, (time_t)((cur + 1) * HIST_INTERVAL));
  snprintf(key, sizeof(key), "BWHistory%sEnds", dir);
  statefile_set(st, key, when);
  snprintf(key, sizeof(key), "BWHistory%sInterval", dir);
  char ivbuf[16];
  snprintf(ivbuf, sizeof(ivbuf), "%d", HIST_INTERVAL);
  statefile_set(st, key, ivbuf);
  snprintf(key, sizeof(key), "BWHistory%sValues", dir);
  statefile_set(st, key, vals);
  snprintf(key, sizeof(key), "BWHistory%sMaxima", dir);
  statefile_set(st, key, maxs);
  free(vals);
  free(maxs);
}

void
publish_save_history(const publish_t *p, statefile_t *st, time_t now)
{
  if (!p || !st)
    return;
  int64_t cur = (int64_t)now / HIST_INTERVAL;
  save_one(st, "Read", p->hist_rd, p->hist_max_rd, p, cur);
  save_one(st, "Write", p->hist_wr, p->hist_max_wr, p, cur);
  dirreq_stats_save(p->dirreq, st);
}

/* Parse a state file list of decimal values into a new array; *listed
 * gets the number of entries the list has, *n how many were read. A bad
 * value ends the reading there (what came before it is kept, in its
 * place). NULL when empty or absent. */
static uint64_t *
parse_values(const char *list, size_t *listed, size_t *n)
{
  *n = *listed = 0;
  if (!list || !*list)
    return NULL;
  size_t cap = 1;
  for (const char *c = list; *c; c++)
    cap += *c == ',';
  *listed = cap;
  uint64_t *v = pc_malloc(cap * sizeof(*v));
  const char *c = list;
  char *e;
  while (*n < cap) {
    unsigned long long x = strtoull(c, &e, 10);
    if (e == c || (*e && *e != ','))
      break;
    v[(*n)++] = x;
    c = *e ? e + 1 : e;
  }
  if (!*n) {
    free(v);
    return NULL;
  }
  return v;
}

/* Is interval iv one the history keeps, with cur the interval under way?
 * (A value for cur adds to the live counts; one past it is dropped.) */
static int
in_history(int64_t iv, int64_t cur)
{
  return iv > cur - HIST_N && iv <= cur;
}

/* Per hour, the highest rate one direction's Maxima gave (for seeding the
 * observed bandwidth), tagged with the hour it belongs to. */
typedef struct hour_rates_t {
  uint64_t rate[BW_HOURS];
  int64_t hour[BW_HOURS];
} hour_rates_t;

/* Read one direction; values of intervals other than ours are put in the
 * interval that holds their start (as tor spreads its own). Its Maxima
 * (bytes/s; listed for the same intervals, aligned at the end) also go
 * into hr by the hour of their interval's start. */
static void
load_one(publish_t *p, const statefile_t *st, const char *dir, uint64_t *v,
         uint64_t *maxima, hour_rates_t *hr, time_t now)
{
  char key[40];
  snprintf(key, sizeof(key), "BWHistory%sEnds", dir);
  const char *ends = statefile_get(st, key);
  snprintf(key, sizeof(key), "BWHistory%sInterval", dir);
  const char *ivs = statefile_get(st, key);
  time_t end;
  if (!ends || !ivs || time_parse_iso(ends, strlen(ends), &end) < 0)
    return;
  char *e;
  long interval = strtol(ivs, &e, 10);
  if (*e || interval <= 0 || interval > 7 * 86400)
    return;
  size_t n, nm, listed, mlisted;
  snprintf(key, sizeof(key), "BWHistory%sValues", dir);
  uint64_t *vals = parse_values(statefile_get(st, key), &listed, &n);
  snprintf(key, sizeof(key), "BWHistory%sMaxima", dir);
  uint64_t *maxs = parse_values(statefile_get(st, key), &mlisted, &nm);
  int64_t cur = (int64_t)now / HIST_INTERVAL;
  int64_t cur_hour = (int64_t)now / 3600;
  for (size_t i = 0; i < n; i++) {
    int64_t start = (int64_t)end - (int64_t)(listed - i) * interval;
    if (start >= 0 && in_history(start / HIST_INTERVAL, cur))
      v[hist_slot(p, start / HIST_INTERVAL)] += vals[i];
  }
  for (size_t i = 0; i < nm; i++) {
    int64_t start = (int64_t)end - (int64_t)(mlisted - i) * interval;
    if (start < 0)
      continue;
    int64_t hour = start / 3600;
    int hs = (int)(hour % BW_HOURS);
    if (hour > cur_hour - BW_HOURS && hour <= cur_hour &&
        (hr->hour[hs] != hour || maxs[i] > hr->rate[hs])) {
      hr->hour[hs] = hour;
      hr->rate[hs] = maxs[i];
    }
    if (in_history(start / HIST_INTERVAL, cur)) {
      int slot = hist_slot(p, start / HIST_INTERVAL);
      if (maxs[i] > maxima[slot])
        maxima[slot] = maxs[i];
    }
  }
  free(vals);
  free(maxs);
}

void
publish_load_history(publish_t *p, const statefile_t *st, time_t now)
{
  if (!p || !st)
    return;
  hour_rates_t *rd = pc_zalloc(sizeof(*rd)), *wr = pc_zalloc(sizeof(*wr));
  for (int i = 0; i < BW_HOURS; i++)
    rd->hour[i] = wr->hour[i] = -1;
  load_one(p, st, "Read", p->hist_rd, p->hist_max_rd, rd, now);
  load_one(p, st, "Write", p->hist_wr, p->hist_max_wr, wr, now);
  /* The observed bandwidth of an hour is its lower direction's rate, as
   * the live samples take it. */
  for (int i = 0; i < BW_HOURS; i++) {
    if (rd->hour[i] < 0 || rd->hour[i] != wr->hour[i])
      continue;
    note_hour_rate(p, rd->hour[i],
                   rd->rate[i] < wr->rate[i] ? rd->rate[i] : wr->rate[i]);
  }
  free(rd);
  free(wr);
}

/* ---------------------------------------------------------------- */
/* Building */

static void
mark_dirty(publish_t *p, const char *reason)
{
  if (!p->dirty_reason)
    p->dirty_reason = reason;
  evloop_timer_schedule(p->soon, 0);
}

/* The hour of the last overload within 72 hours (proposal 328: the line
 * stays 72 hours after the last one), or 0. An overload is a run of the
 * MaxMemInQueues handler that closed circuits. */
#define OVERLOAD_KEEP_SECS (72 * 3600)
static time_t
recent_hour(time_t when, time_t now)
{
  if (!when || now - when >= OVERLOAD_KEEP_SECS)
    return 0;
  return when - when % 3600;
}

static time_t
overload_hour(time_t now)
{
  circuits_oom_stats_t os;
  circuits_get_oom_stats(&os);
  return recent_hour(os.last_oom_time, now);
}

/* Build the extra-info document for rc and put its digests in rc. The
 * history covers the completed intervals of the last HIST_N, oldest
 * first (tor reports only completed intervals). */
static char *
build_extra(publish_t *p, routerdesc_config_t *rc, time_t now)
{
  uint64_t rd[HIST_N], wr[HIST_N];
  int64_t cur = (int64_t)now / HIST_INTERVAL;
  int n = 0;
  /* As tor, ExtraInfoStatistics 0 also leaves out the history. */
  for (int64_t iv = cur - HIST_N; iv < cur && p->extra_stats; iv++) {
    int slot = (int)(iv % HIST_N);
    if (n == 0 && p->hist_of[slot] != iv)
      continue; /* no history yet: start at the first interval we saw */
    rd[n] = p->hist_of[slot] == iv ? p->hist_rd[slot] : 0;
    wr[n] = p->hist_of[slot] == iv ? p->hist_wr[slot] : 0;
    n++;
  }
  routerdesc_extrainfo_t e = {
    .nickname = rc->nickname,
    .published = rc->published,
    .hist_end = (time_t)(cur * HIST_INTERVAL),
    .hist_interval = p->extra_stats ? HIST_INTERVAL : 0,
    .read_hist = rd,
    .write_hist = wr,
    .n_hist = n,
    .overload_fd_exhausted = recent_hour(conn_last_fd_exhausted(), now),
    .stats_lines = p->extra_stats ? dirreq_stats_published(p->dirreq, now)
                                     : NULL,
  };
  char *err = NULL;
  char *x = routerdesc_build_extrainfo(p->keys, &e, rc->extra_info_sha1,
                                       rc->extra_info_sha256, &err);
  if (!x) {
    log_warn("Could not build our extra-info document: %s", err ? err : "?");
    free(err);
    return NULL;
  }
  rc->has_extra_info = 1;
  return x;
}

static int
rebuild(publish_t *p)
{
  time_t now = time(NULL);
  routerdesc_config_t rc = p->rc;
  char *err = NULL;
  rc.published = now > p->published ? now : p->published + 1;
  rc.uptime = now > p->started ? (uint64_t)(now - p->started) : 0;
  rc.bw_observed = bw_observed(p, now);
  rc.overload_general = overload_hour(now);
  char *x = build_extra(p, &rc, rc.published);
  if (!x)
    return -1;
  char *d = routerdesc_build(p->keys, &rc, &err);
  if (!d) {
    log_warn("Could not build our server descriptor: %s", err ? err : "?");
    free(err);
    free(x);
    return -1;
  }
  free(p->desc);
  free(p->extra);
  p->desc = d;
  p->extra = x;
  p->gen++;
  p->published = rc.published;
  p->bw_in_desc = rc.bw_observed;
  p->overload_in_desc = rc.overload_general;
  p->stats.n_built++;
  return 0;
}

static void
soon_cb(void *arg)
{
  publish_t *p = arg;
  const char *reason = p->dirty_reason ? p->dirty_reason : "?";
  p->dirty_reason = NULL;
  if (!p->have_config)
    return;
  if (rebuild(p) < 0)
    return;
  log_info("Built a new server descriptor (%s).", reason);
  /* A newer descriptor: retries wait no more, backoff starts over. */
  for (int i = 0; i < p->n_auths; i++) {
    auth_state_t *a = &p->auths[i];
    evloop_timer_cancel(a->retry);
    a->backoff_secs = 0;
  }
  kick_uploads(p);
}

static void
check_cb(void *arg)
{
  publish_t *p = arg;
  time_t now = time(NULL);
  if (dirreq_stats_rotate(p->dirreq, now) && p->extra_stats &&
      p->have_config) {
    mark_dirty(p, "new directory request statistics");
    return;
  }
  if (!p->have_config || !p->desc)
    return;
  int age = p->testing ? PUBLISH_TESTING_REPUBLISH_SECS
                       : PUBLISH_REPUBLISH_SECS;
  if (now - p->published >= age) {
    mark_dirty(p, "time for a new descriptor");
    return;
  }
  /* An overload (or its end, after 72 hours) is worth telling at once. */
  if (overload_hour(now) != p->overload_in_desc) {
    mark_dirty(p, "overload-general changed");
    return;
  }
  /* Large bandwidth changes during the first day (as tor does). */
  if (now - p->started > BW_CHANGE_MAX_UPTIME)
    return;
  uint64_t prev = p->bw_in_desc, cur = bw_observed(p, now);
  if ((prev != cur && (!prev || !cur)) ||
      cur > prev * BW_CHANGE_FACTOR || cur < prev / BW_CHANGE_FACTOR) {
    if (p->testing || !prev || now - p->bw_changed_at > BW_CHANGE_MIN_SECS) {
      p->bw_changed_at = now;
      mark_dirty(p, "observed bandwidth changed");
    }
  }
}

/* ---------------------------------------------------------------- */
/* Uploads */

static void
auth_finish(auth_state_t *a)
{
  conn_free(a->conn);
  evloop_timer_cancel(a->timeout);
}

static void
tell_upload(const auth_state_t *a, int accepted, const char *why)
{
  if (!a->p->on_upload)
    return;
  char addr[PC_ADDR_STR_LEN];
  pc_addr_fmt(&a->da.dir_addr, addr, sizeof(addr), 1);
  a->p->on_upload(addr, accepted, why, a->p->on_upload_arg);
}

static void
upload_failed(auth_state_t *a, int refused, const char *why)
{
  publish_t *p = a->p;
  auth_finish(a);
  a->n_failures++;
  int first = p->testing ? PUBLISH_TESTING_RETRY_FIRST_SECS
                         : PUBLISH_RETRY_FIRST_SECS;
  int cap = p->testing ? PUBLISH_TESTING_RETRY_MAX_SECS
                       : PUBLISH_RETRY_MAX_SECS;
  a->backoff_secs = a->backoff_secs ? a->backoff_secs * 2 : first;
  if (a->backoff_secs > cap)
    a->backoff_secs = cap;
  if (refused) {
    p->stats.n_refused++;
    tell_upload(a, 0, why);
    log_warn("Authority %s refused our descriptor: %s; trying again in "
             "%d s", a->name, why, a->backoff_secs);
  } else {
    p->stats.n_failed++;
    if (a->n_failures >= WARN_AFTER_FAILURES)
      log_warn("Could not upload our descriptor to %s (%d attempts in a "
               "row): %s; trying again in %d s", a->name, a->n_failures,
               why, a->backoff_secs);
    else
      log_notice("Could not upload our descriptor to %s: %s; trying again "
                 "in %d s", a->name, why, a->backoff_secs);
  }
  evloop_timer_schedule(a->retry, (uint64_t)a->backoff_secs * USEC);
}

/* Copy a status line for logs: printable characters only. */
static void
sanitize(char *out, size_t outlen, const uint8_t *in, size_t n)
{
  size_t j = 0;
  for (size_t i = 0; i < n && j + 1 < outlen; i++)
    out[j++] = (in[i] >= 0x20 && in[i] < 0x7f) ? (char)in[i] : '?';
  out[j] = '\0';
}

/* Handle the answer's status line (without its line end). */
static void
got_status_line(auth_state_t *a, const uint8_t *line, size_t n)
{
  publish_t *p = a->p;
  char shown[MAX_STATUS_LINE + 1];
  sanitize(shown, sizeof(shown), line, n);
  int code = -1;
  if (n >= 12 && !memcmp(line, "HTTP/1.", 7) && line[8] == ' ' &&
      line[9] >= '1' && line[9] <= '5' && line[10] >= '0' &&
      line[10] <= '9' && line[11] >= '0' && line[11] <= '9' &&
      (n == 12 || line[12] == ' '))
    code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (code == 200) {
    uint64_t gen = a->inflight_gen;
    auth_finish(a);
    a->uploaded_gen = gen;
    a->backoff_secs = 0;
    a->n_failures = 0;
    p->stats.n_ok++;
    log_notice("Uploaded descriptor to %s: %s", a->name, shown);
    tell_upload(a, 1, NULL);
    kick_uploads(p); /* a newer one may be waiting */
    return;
  }
  if (code < 0) {
    char *why = pc_asprintf("not an HTTP answer: \"%s\"", shown);
    upload_failed(a, 0, why);
    free(why);
    return;
  }
  upload_failed(a, 1, shown);
}

static void
upload_conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  auth_state_t *a = arg;
  publish_t *p = a->p;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN: {
    buf_t *out = conn_outbuf(a->conn);
    a->inflight_gen = p->gen; /* what is sent now is the newest */
    char a_str[PC_ADDR_STR_LEN];
    pc_addr_fmt(&a->da.dir_addr, a_str, sizeof(a_str), 1);
    /* dir-spec 3.2: the extra-info document goes in the same POST,
     * after the server descriptor. */
    size_t len = strlen(p->desc), xlen = p->extra ? strlen(p->extra) : 0;
    char *hdr = pc_asprintf("POST /tor/ HTTP/1.0\r\n"
                            "Host: %s\r\n"
                            "Content-Type: text/plain\r\n"
                            "Content-Length: %zu\r\n"
                            "\r\n",
                            a_str, len + xlen);
    buf_add(out, hdr, strlen(hdr));
    buf_add(out, p->desc, len);
    if (xlen)
      buf_add(out, p->extra, xlen);
    free(hdr);
    conn_flush_soon(a->conn);
    return;
  }
  case CONN_EV_DATA: {
    buf_t *in = conn_inbuf(a->conn);
    long nl = buf_find(in, "\n", 1);
    if (nl < 0) {
      if (buf_datalen(in) > MAX_STATUS_LINE)
        upload_failed(a, 0, "the answer's first line is too long");
      return;
    }
    size_t n = (size_t)nl;
    if (n > MAX_STATUS_LINE) {
      upload_failed(a, 0, "the answer's first line is too long");
      return;
    }
    const uint8_t *line = buf_pullup(in, n + 1);
    if (n > 0 && line[n - 1] == '\r')
      n--;
    uint8_t copy[MAX_STATUS_LINE];
    memcpy(copy, line, n);
    got_status_line(a, copy, n);
    return;
  }
  case CONN_EV_DRAINED:
    return;
  case CONN_EV_EOF:
    upload_failed(a, 0, "the authority closed the connection without "
                        "answering");
    return;
  case CONN_EV_ERROR: {
    char *why = pc_strdup(conn_error(a->conn) ? conn_error(a->conn)
                                              : "connection failed");
    upload_failed(a, 0, why);
    free(why);
    return;
  }
  }
}

static void
timeout_cb(void *arg)
{
  auth_state_t *a = arg;
  if (a->conn) {
    char *why = pc_asprintf("no answer within %d s",
                            PUBLISH_UPLOAD_TIMEOUT_SECS);
    upload_failed(a, 0, why);
    free(why);
  }
}

static void
start_upload(auth_state_t *a)
{
  publish_t *p = a->p;
  const char *err = NULL;
  a->inflight_gen = p->gen;
  p->stats.n_attempts++;
  log_info("Uploading our descriptor to %s.", a->name);
  a->conn = conn_connect(p->loop, NULL, &a->da.dir_addr, upload_conn_cb, a,
                         &err);
  if (!a->conn) {
    upload_failed(a, 0, err ? err : "cannot create a socket");
    return;
  }
  evloop_timer_schedule(a->timeout,
                        (uint64_t)PUBLISH_UPLOAD_TIMEOUT_SECS * USEC);
}

static void
retry_cb(void *arg)
{
  auth_state_t *a = arg;
  if (!a->conn)
    kick_uploads(a->p);
}

static void
kick_uploads(publish_t *p)
{
  if (!p->enabled || p->hold || !p->publishable || !p->desc)
    return;
  for (int i = 0; i < p->n_auths; i++) {
    auth_state_t *a = &p->auths[i];
    if (a->uploaded_gen == p->gen || a->conn ||
        evloop_timer_is_pending(a->retry))
      continue;
    start_upload(a);
  }
}

static void
auths_free(publish_t *p)
{
  for (int i = 0; i < p->n_auths; i++) {
    auth_state_t *a = &p->auths[i];
    conn_free(a->conn);
    evloop_timer_free(a->retry);
    evloop_timer_free(a->timeout);
  }
  free(p->auths);
  p->auths = NULL;
  p->n_auths = 0;
}

static int
auths_same(const publish_t *p, const dir_authority_t *v, int n)
{
  if (n != p->n_auths)
    return 0;
  for (int i = 0; i < n; i++)
    if (!pc_addr_eq(&p->auths[i].da.dir_addr, &v[i].dir_addr, 1) ||
        memcmp(p->auths[i].da.rsa_id, v[i].rsa_id, 20))
      return 0;
  return 1;
}

static void
auths_set(publish_t *p, const dir_authority_t *v, int n)
{
  auths_free(p);
  if (n <= 0)
    return;
  p->auths = pc_calloc((size_t)n, sizeof(auth_state_t));
  p->n_auths = n;
  for (int i = 0; i < n; i++) {
    auth_state_t *a = &p->auths[i];
    char addr[PC_ADDR_STR_LEN];
    a->p = p;
    a->da = v[i];
    pc_addr_fmt(&a->da.dir_addr, addr, sizeof(addr), 1);
    if (a->da.nickname[0])
      snprintf(a->name, sizeof(a->name), "%s (%s)", a->da.nickname, addr);
    else
      snprintf(a->name, sizeof(a->name), "authority %s", addr);
    a->retry = evloop_timer_new(p->loop, retry_cb, a);
    a->timeout = evloop_timer_new(p->loop, timeout_cb, a);
  }
}

/* ---------------------------------------------------------------- */
/* API */

publish_t *
publish_new(evloop_t *loop, const relay_keys_t *keys)
{
  publish_t *p = pc_zalloc(sizeof(*p));
  p->loop = loop;
  p->keys = keys;
  p->started = time(NULL);
  p->extra_stats = 1;
  for (int i = 0; i < BW_HOURS; i++)
    p->hour_of[i] = -1;
  p->soon = evloop_timer_new(loop, soon_cb, p);
  p->check = evloop_timer_new(loop, check_cb, p);
  p->bw_timer = evloop_timer_new(loop, bw_sample_cb, p);
  evloop_timer_schedule_periodic(p->check,
                                 (uint64_t)CHECK_INTERVAL_SECS * USEC);
  evloop_timer_schedule_periodic(p->bw_timer,
                                 (uint64_t)BW_SAMPLE_SECS * USEC);
  return p;
}

int
publish_configure(publish_t *p, const routerdesc_config_t *rc,
                  const publish_params_t *pp)
{
  /* Refuse a configuration that cannot make a descriptor before
   * replacing anything. */
  routerdesc_config_t probe = *rc;
  char *err = NULL;
  probe.published = time(NULL);
  char *d = routerdesc_build(p->keys, &probe, &err);
  if (!d) {
    log_warn("Cannot make a server descriptor: %s", err ? err : "?");
    free(err);
    return -1;
  }
  free(d);

  int first = !p->have_config;
  int content_changed = first || !rc_same_content(&p->rc, rc);
  int auths_changed = !auths_same(p, pp->auths, pp->n_auths);
  int was_enabled = p->enabled && !p->hold && p->publishable;
  int was_publishable = p->publishable, had_enabled = p->enabled;
  if (content_changed)
    config_set(p, rc);
  if (auths_changed)
    auths_set(p, pp->auths, pp->n_auths);
  p->have_config = 1;
  p->enabled = pp->enabled;
  p->hold = pp->hold;
  p->testing = pp->testing;
  p->traffic = pp->traffic;
  /* The first sample is only a baseline: take it now, so that traffic
   * before the first timer tick (the bandwidth self-test's) counts. */
  if (p->traffic && !p->have_sample)
    bw_sample_cb(p);
  p->on_upload = pp->on_upload;
  p->on_upload_arg = pp->on_upload_arg;

  /* (Each condition is logged when it starts, not on every SIGHUP.) */
  p->publishable = p->testing || !pc_addr_is_private(&p->rc.address);
  if (!p->publishable && (first || was_publishable || content_changed)) {
    char a[PC_ADDR_STR_LEN];
    pc_addr_fmt(&p->rc.address, a, sizeof(a), 0);
    log_warn("Our address %s is a private address, which the authorities "
             "of the public network refuse; not publishing a descriptor. "
             "Set Address to the relay's public IPv4 address.", a);
  }
  if (!p->enabled && (first || had_enabled))
    log_notice("PublishServerDescriptor is 0: not uploading our "
               "descriptor.");
  else if (p->enabled && p->n_auths == 0 && (first || auths_changed))
    log_warn("No directory authorities to publish our descriptor to.");

  if (content_changed)
    mark_dirty(p, p->desc ? "configuration changed" : "starting");
  else if (!was_enabled || auths_changed)
    kick_uploads(p);
  return 0;
}

void
publish_set_dirreq_stats(publish_t *p, dirreq_stats_t *s, int extra_stats)
{
  int changed = p->dirreq != s || p->extra_stats != extra_stats;
  p->dirreq = s;
  p->extra_stats = extra_stats;
  if (changed && p->have_config)
    mark_dirty(p, "statistics configuration changed");
}

void
publish_keys_changed(publish_t *p)
{
  mark_dirty(p, "keys changed");
}

const char *
publish_descriptor(const publish_t *p)
{
  return p->desc;
}

void
publish_get_stats(const publish_t *p, publish_stats_t *out)
{
  *out = p->stats;
  out->bw_observed = bw_observed(p, time(NULL));
}

void
publish_free_(publish_t *p)
{
  if (!p)
    return;
  auths_free(p);
  evloop_timer_free(p->soon);
  evloop_timer_free(p->check);
  evloop_timer_free(p->bw_timer);
  config_clear(p);
  free(p->desc);
  free(p->extra);
  free(p);
}
