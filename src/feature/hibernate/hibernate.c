/* SPDX-License-Identifier: BSD-3-Clause */
/* hibernate.c -- bandwidth accounting and hibernation (hibernate.h).
 *
 * Design (behaviour as tor's, from tor(1) and tor's state files):
 * - Interval boundaries are computed in local time with mktime(), which
 *   normalises out-of-range fields, so "one month earlier" is tm_mon - 1
 *   and daylight-saving changes are mktime's (tm_isdst = -1). The start of
 *   the period holding `now` is the boundary in now's month (week, day);
 *   if that lies after now, the one a unit earlier.
 * - Wake-up time. At the start of an interval the relay estimates its
 *   usage per minute from the interval before: the bytes it had used when
 *   it reached the soft limit over the time that took (when that was more
 *   than 30 minutes; with tor's arithmetic, see estimate_usage()), else
 *   the bytes of the interval over its active seconds (when it was active
 *   for 30 minutes), else nothing -- capped
 *   by the configured rate (twice it for AccountingRule sum). Without an
 *   estimate it wakes at the interval's start. With one, it expects to
 *   use the quota in T = max / usage minutes, and wakes at a point in the
 *   first (interval length - T) seconds. Like tor, the point is not drawn
 *   at random but from SHA-1(ISO start time of the interval, RSA identity
 *   digest): the first four bytes of the digest, read little-endian (tor
 *   reads them in host order, little-endian on the machines relays run
 *   on), modulo that span. A restart in the same interval therefore
 *   picks the same time, and different relays pick different ones.
 * - Soft limit: 95% of the quota, lowered to leave 500 MiB when that is
 *   less than 5%, and to leave three hours of the expected usage when
 *   that is more (tor's rule). Soft hibernation lasts until the end of
 *   the interval, hard hibernation until the wake-up time (if it is still
 *   to come) or the end of the interval.
 * - tick() repeats its decision until the state is stable, so a restart
 *   with an exhausted quota goes awake -> soft -> hard at once, each step
 *   logged and reported to the host.
 * - State file: tor's keys and formats (plain integers, byte counts
 *   rounded up to whole KiB, ISO times in UTC, zero values left out), so
 *   tor and pctor read each other's counters.
 */
#include "feature/hibernate/hibernate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"
#include "lib/time/timefmt.h"

/* Estimates need at least this much time in the last interval. */
#define MIN_MEASURE_SECS 1800
#define SOFT_FRACTION 0.95
#define SOFT_RESERVE_BYTES (500ULL * 1024 * 1024)
#define SOFT_RESERVE_MINUTES 180
/* Counters are handed to the state file this often. */
#define SAVE_INTERVAL_SECS 600
/* A gap between ticks larger than this is a clock jump, not activity. */
#define MAX_TICK_SECS 10

struct hibernate_t {
  hibernate_options_t opt;
  uint8_t id[20];
  int have_id;
  uint64_t rate;
  hibernate_host_t host;
  hibernate_state_t state;
  time_t start, end, wake;   /* the current interval; 0: none yet */
  time_t until;              /* soft/hard: when to reconsider */
  uint64_t rd, wr;           /* bytes in the interval */
  uint32_t secs_active;
  uint64_t expected;         /* bytes per minute; 0: no estimate */
  time_t soft_at;            /* when the soft limit was hit; 0: not yet */
  uint64_t bytes_at_soft;
  uint32_t secs_to_soft;
  time_t last_save;
  /* the timer's sampling */
  evloop_timer_t *timer;
  uint64_t last_rd, last_wr;
  time_t last_tick;
  int have_sample;
};

/* ---------------------------------------------------------------- */
/* AccountingStart and interval arithmetic */

/* Parse "HH:MM" into *h, *m. */
static int
parse_hhmm(const char *s, int *h, int *m)
{
  char *e;
  long hh = strtol(s, &e, 10);
  if (e == s || *e != ':' || hh < 0 || hh > 23)
    return -1;
  const char *ms = e + 1;
  long mm = strtol(ms, &e, 10);
  if (e == ms || *e || mm < 0 || mm > 59 || e - ms != 2)
    return -1;
  *h = (int)hh;
  *m = (int)mm;
  return 0;
}

int
hibernate_parse_start(const char *s, acct_start_t *out, char **err)
{
  char w[3][32] = {{0}}; /* a word too long leaves the rest empty */
  int n = 0;
  const char *p = s;
  while (*p && n <= 3) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p)
      break;
    size_t len = strcspn(p, " \t");
    if (n == 3 || len >= sizeof(w[0])) {
      n = 4;
      break;
    }
    memcpy(w[n], p, len);
    w[n][len] = '\0';
    n++;
    p += len;
  }
  acct_start_t r = {0, 0, 0, 0};
  if (n >= 1 && !strcasecmp(w[0], "day"))
    r.unit = ACCT_UNIT_DAY;
  else if (n >= 1 && !strcasecmp(w[0], "week"))
    r.unit = ACCT_UNIT_WEEK;
  else if (n >= 1 && !strcasecmp(w[0], "month"))
    r.unit = ACCT_UNIT_MONTH;
  else {
    *err = pc_strdup("must be day|week|month [DAY] HH:MM (the unit is "
                     "not day, week or month)");
    return -1;
  }
  int want = r.unit == ACCT_UNIT_DAY ? 2 : 3;
  if (n != want) {
    *err = pc_asprintf("'%s' needs %s", w[0],
                       want == 2 ? "one argument, HH:MM"
                                 : "two arguments, DAY and HH:MM");
    return -1;
  }
  if (r.unit != ACCT_UNIT_DAY) {
    char *e;
    long d = strtol(w[1], &e, 10);
    int maxd = r.unit == ACCT_UNIT_WEEK ? 7 : 28;
    if (e == w[1] || *e || d < 1 || d > maxd) {
      *err = pc_strdup(r.unit == ACCT_UNIT_WEEK
                           ? "a weekly interval starts on a day from 1 "
                             "(Monday) to 7 (Sunday)"
                           : "a monthly interval starts on a day from 1 "
                             "to 28");
      return -1;
    }
    r.day = (int)d;
  }
  if (parse_hhmm(w[want - 1], &r.hour, &r.min) < 0) {
    *err = pc_asprintf("bad start time '%s' (HH:MM, 24-hour local time)",
                       w[want - 1]);
    return -1;
  }
  *out = r;
  return 0;
}

/* The boundary of the unit holding `now` (local time), moved by `step`
 * units. */
static time_t
boundary(const acct_start_t *s, time_t now, int step)
{
  struct tm tm;
  localtime_r(&now, &tm);
  tm.tm_hour = s->hour;
  tm.tm_min = s->min;
  tm.tm_sec = 0;
  tm.tm_isdst = -1;
  switch (s->unit) {
  case ACCT_UNIT_MONTH:
    tm.tm_mday = s->day;
    break;
  case ACCT_UNIT_WEEK:
    /* tm_wday: 0 Sunday; AccountingStart: 7 Sunday. */
    tm.tm_mday -= (tm.tm_wday - s->day % 7 + 7) % 7;
    break;
  default:
    break;
  }
  struct tm base = tm;
  time_t b = mktime(&tm);
  if (b > now) {
    step--;
  }
  if (!step)
    return b;
  tm = base;
  if (s->unit == ACCT_UNIT_MONTH)
    tm.tm_mon += step;
  else
    tm.tm_mday += step * (s->unit == ACCT_UNIT_WEEK ? 7 : 1);
  tm.tm_isdst = -1;
  return mktime(&tm);
}

time_t
hibernate_period_start(const acct_start_t *s, time_t now)
{
  return boundary(s, now, 0);
}

time_t
hibernate_period_end(const acct_start_t *s, time_t now)
{
  return boundary(s, now, 1);
}

/* ---------------------------------------------------------------- */
/* Counting */

uint64_t
hibernate_used(const hibernate_t *h)
{
  switch (h->opt.rule) {
  case ACCT_RULE_SUM: /* saturating: the counts may come from a file */
    return h->rd + h->wr < h->rd ? UINT64_MAX : h->rd + h->wr;
  case ACCT_RULE_IN:
    return h->rd;
  case ACCT_RULE_OUT:
    return h->wr;
  default:
    return h->rd > h->wr ? h->rd : h->wr;
  }
}

static int
hard_reached(const hibernate_t *h)
{
  return h->opt.max && hibernate_used(h) >= h->opt.max;
}

static uint64_t
soft_limit(const hibernate_t *h)
{
  uint64_t max = h->opt.max;
  uint64_t lim = (uint64_t)((double)max * SOFT_FRACTION);
  if (max > SOFT_RESERVE_BYTES && max - SOFT_RESERVE_BYTES > lim)
    lim = max - SOFT_RESERVE_BYTES;
  if (h->expected) {
    uint64_t reserve = h->expected * SOFT_RESERVE_MINUTES;
    if (reserve / SOFT_RESERVE_MINUTES == h->expected && max > reserve &&
        max - reserve > lim)
      lim = max - reserve;
  }
  return lim;
}

static int
soft_reached(const hibernate_t *h)
{
  uint64_t lim = soft_limit(h);
  return h->opt.max && lim && hibernate_used(h) >= lim;
}

void
hibernate_add_bytes(hibernate_t *h, uint64_t rd, uint64_t wr, int seconds)
{
  if (!h->opt.max)
    return; /* as tor: nothing is counted while accounting is off */
  h->rd += rd;
  h->wr += wr;
  if (h->state != HIBERNATE_HARD && seconds > 0 && seconds < MAX_TICK_SECS)
    h->secs_active += (uint32_t)seconds;
}

/* ---------------------------------------------------------------- */
/* Intervals */

static void
fmt_local(char *buf, size_t len, time_t t)
{
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* The usage per minute to expect in the next interval, from this one. */
static uint64_t
estimate_usage(const hibernate_t *h)
{
  uint64_t cap = h->rate * 60;
  if (h->opt.rule == ACCT_RULE_SUM)
    cap *= 2;
  uint64_t e = 0;
  if (h->soft_at > h->start && h->bytes_at_soft &&
      h->soft_at - h->start > MIN_MEASURE_SECS)
    /* tor's arithmetic, kept so that a relay wakes when tor's would: the
     * rate per second divided by 60 (not multiplied), so a relay that
     * reached its soft limit late in an interval wakes at the start of
     * the next. */
    e = h->bytes_at_soft / (uint64_t)(h->soft_at - h->start) / 60;
  else if (h->secs_active >= MIN_MEASURE_SECS)
    e = hibernate_used(h) / (h->secs_active / 60);
  if (cap && e > cap)
    e = cap;
  return e;
}

/* Pick the wake-up time of the current interval (see the file comment). */
static void
set_wake_time(hibernate_t *h)
{
  char b1[32], b2[32], b3[32], b4[32];
  fmt_local(b1, sizeof(b1), h->start);
  fmt_local(b4, sizeof(b4), h->end);
  if (!h->expected || !h->opt.max) {
    h->wake = h->start;
    log_notice("Accounting: this interval runs from %s to %s (local "
               "time). With no estimate of our usage yet, we start awake "
               "and hibernate when the quota is used up.", b1, b4);
    return;
  }
  uint8_t in[TIME_ISO_LEN + 20], d[DIGEST_SHA1_LEN];
  char iso[TIME_ISO_LEN + 1];
  time_format_iso(iso, h->start);
  memcpy(in, iso, TIME_ISO_LEN);
  memcpy(in + TIME_ISO_LEN, h->id, 20);
  crypt_sha1(d, in, h->have_id ? sizeof(in) : TIME_ISO_LEN);
  uint32_t r = (uint32_t)d[0] | (uint32_t)d[1] << 8 |
               (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
  uint64_t minutes = h->opt.max / h->expected;
  uint64_t exhaust = minutes > UINT64_MAX / 60 ? UINT64_MAX : minutes * 60;
  int64_t len = (int64_t)(h->end - h->start);
  if (exhaust >= (uint64_t)len)
    h->wake = h->start;
  else
    h->wake = h->start + (time_t)(r % (uint64_t)(len - (int64_t)exhaust));
  time_t down = exhaust >= (uint64_t)(h->end - h->wake)
                    ? h->end
                    : h->wake + (time_t)exhaust;
  fmt_local(b2, sizeof(b2), h->wake);
  fmt_local(b3, sizeof(b3), down);
  log_notice("Accounting: this interval began at %s; we wake up at %s, "
             "expect to use up the quota around %s; the next interval "
             "begins at %s (all times local).", b1, b2, b3, b4);
}

/* Start the interval holding now, estimating usage from the last one. */
static void
new_interval(hibernate_t *h, time_t now)
{
  if (h->start)
    h->expected = estimate_usage(h);
  h->start = hibernate_period_start(&h->opt.start, now);
  h->end = hibernate_period_end(&h->opt.start, now);
  h->rd = h->wr = 0;
  h->secs_active = 0;
  h->soft_at = 0;
  h->bytes_at_soft = 0;
  h->secs_to_soft = 0;
  set_wake_time(h);
}

/* Make sure the current interval is the one holding now: keep the stored
 * one if it is (or if the configured boundary moved by less than half an
 * interval, as tor tolerates), else start anew. */
static void
check_interval(hibernate_t *h, time_t now)
{
  if (!h->start) {
    new_interval(h, now);
    return;
  }
  time_t s = hibernate_period_start(&h->opt.start, now);
  if (s == h->start) {
    if (!h->end) {
      h->end = hibernate_period_end(&h->opt.start, now);
      set_wake_time(h);
    }
    return;
  }
  time_t len = hibernate_period_end(&h->opt.start, h->start) -
               hibernate_period_start(&h->opt.start, h->start);
  double moved = len > 0 ? (double)(s - h->start) / (double)len : 1.0;
  if (moved >= -0.5 && moved <= 0.5) {
    h->end = hibernate_period_end(&h->opt.start, now);
    if (!h->wake)
      set_wake_time(h);
    return;
  }
  if (moved < 0.99)
    log_warn("Accounting: the stored interval (started %.0f%% of an "
             "interval away from the configured one) does not fit "
             "AccountingStart; starting a new one.", moved * 100);
  new_interval(h, now);
}

/* ---------------------------------------------------------------- */
/* States */

static void
set_state(hibernate_t *h, hibernate_state_t to)
{
  hibernate_state_t from = h->state;
  h->state = to;
  if (h->host.changed)
    h->host.changed(from, to, h->host.arg);
  if (h->host.save)
    h->host.save(h->host.arg);
}

static void
go_hard(hibernate_t *h, time_t now)
{
  h->until = now < h->wake ? h->wake : h->end;
  char b[TIME_ISO_LEN + 1];
  time_format_iso(b, h->until);
  log_notice("Accounting: hibernating (dormant) until %s UTC; closing all "
             "relay connections.", b);
  set_state(h, HIBERNATE_HARD);
}

/* One decision; returns 1 when the state changed. */
static int
step(hibernate_t *h, time_t now)
{
  char b[TIME_ISO_LEN + 1];
  if (!h->opt.max) {
    if (h->state == HIBERNATE_AWAKE)
      return 0;
    log_notice("Accounting is off; resuming normal activity.");
    set_state(h, HIBERNATE_AWAKE);
    return 1;
  }
  switch (h->state) {
  case HIBERNATE_HARD:
    if (now < h->until)
      return 0;
    if (now >= h->wake && !soft_reached(h)) {
      log_notice("Hibernation period ended. Resuming normal activity.");
      set_state(h, HIBERNATE_AWAKE);
      return 1;
    }
    if (now < h->wake) {
      /* A new interval began, whose wake-up time is still to come. */
      h->until = h->wake;
      time_format_iso(b, h->wake);
      log_notice("Accounting period ended. In this one we hibernate until "
                 "%s UTC.", b);
    } else {
      h->until = h->end;
    }
    return 0;
  case HIBERNATE_SOFT:
    if (hard_reached(h)) {
      log_notice("Bandwidth hard limit reached (AccountingMax); going "
                 "dormant until the next accounting interval.");
      go_hard(h, now);
      return 1;
    }
    if (now >= h->until) {
      /* The interval ended while we were soft. */
      if (now < h->wake) {
        time_format_iso(b, h->wake);
        log_notice("Accounting period ended. Hibernating until %s UTC.", b);
        go_hard(h, now);
      } else {
        log_notice("Hibernation period ended. Resuming normal activity.");
        set_state(h, HIBERNATE_AWAKE);
      }
      return 1;
    }
    return 0;
  default:
    if (soft_reached(h)) {
      /* The first time in this interval only (a restart with a used-up
       * quota keeps the stored record, as tor does). */
      if (h->soft_at <= h->start) {
        h->soft_at = now;
        h->bytes_at_soft = hibernate_used(h);
        h->secs_to_soft = h->secs_active;
      }
      h->until = h->end;
      log_notice("Bandwidth soft limit reached; commencing hibernation. "
                 "No new connections or circuits will be accepted.");
      set_state(h, HIBERNATE_SOFT);
      return 1;
    }
    if (now < h->wake) {
      char l[32];
      fmt_local(l, sizeof(l), h->wake);
      log_notice("Commencing hibernation. We will wake up at %s local "
                 "time.", l);
      go_hard(h, now);
      return 1;
    }
    return 0;
  }
}

void
hibernate_tick(hibernate_t *h, time_t now)
{
  if (!h->opt.max) {
    step(h, now);
    return;
  }
  if (!h->start || now >= h->end || now < h->start)
    check_interval(h, now);
  for (int i = 0; i < 4 && step(h, now); i++)
    ;
  if (h->host.save && now - h->last_save >= SAVE_INTERVAL_SECS) {
    h->last_save = now;
    h->host.save(h->host.arg);
  }
}

/* ---------------------------------------------------------------- */
/* Life cycle */

hibernate_t *
hibernate_new(const hibernate_options_t *o, const uint8_t *id_digest,
              uint64_t rate, const hibernate_host_t *host)
{
  hibernate_t *h = pc_zalloc(sizeof(*h));
  h->opt = *o;
  h->rate = rate;
  if (id_digest) {
    memcpy(h->id, id_digest, 20);
    h->have_id = 1;
  }
  if (host)
    h->host = *host;
  return h;
}

void
hibernate_configure(hibernate_t *h, const hibernate_options_t *o,
                    uint64_t rate, time_t now)
{
  int start_changed = memcmp(&h->opt.start, &o->start, sizeof(o->start));
  h->opt = *o;
  h->rate = rate;
  if (start_changed && h->start && h->opt.max) {
    h->end = 0;
    h->wake = 0;
    check_interval(h, now);
  }
}

static int
get_u64(const statefile_t *st, const char *key, uint64_t *out)
{
  const char *v = statefile_get(st, key);
  if (!v)
    return 0;
  char *e;
  unsigned long long x = strtoull(v, &e, 10);
  if (e == v || (*e && *e != ' '))
    return -1;
  *out = x;
  return 0;
}

static int
get_time(const statefile_t *st, const char *key, time_t *out)
{
  const char *v = statefile_get(st, key);
  if (!v)
    return 0;
  return time_parse_iso(v, strlen(v), out);
}

void
hibernate_load_state(hibernate_t *h, const statefile_t *st)
{
  time_t start = 0, soft_at = 0;
  uint64_t rd = 0, wr = 0, secs = 0, exp = 0, at_soft = 0, to_soft = 0;
  if (!st || get_time(st, "AccountingIntervalStart", &start) < 0 ||
      get_u64(st, "AccountingBytesReadInInterval", &rd) < 0 ||
      get_u64(st, "AccountingBytesWrittenInInterval", &wr) < 0 ||
      get_u64(st, "AccountingSecondsActive", &secs) < 0 ||
      get_u64(st, "AccountingExpectedUsage", &exp) < 0 ||
      get_time(st, "AccountingSoftLimitHitAt", &soft_at) < 0 ||
      get_u64(st, "AccountingBytesAtSoftLimit", &at_soft) < 0 ||
      get_u64(st, "AccountingSecondsToReachSoftLimit", &to_soft) < 0) {
    if (st)
      log_warn("Accounting: the state file's Accounting* lines are not "
               "readable; starting a new interval.");
    return;
  }
  if (!start)
    return;
  h->start = start;
  h->end = h->wake = 0;
  h->rd = rd;
  h->wr = wr;
  h->secs_active = secs > UINT32_MAX ? UINT32_MAX : (uint32_t)secs;
  h->expected = exp;
  if (soft_at > start) {
    h->soft_at = soft_at;
    h->bytes_at_soft = at_soft;
    h->secs_to_soft = to_soft > UINT32_MAX ? UINT32_MAX : (uint32_t)to_soft;
  }
  char b[TIME_ISO_LEN + 1];
  time_format_iso(b, start);
  log_info("Accounting: read from the state file the interval starting %s "
           "UTC: %llu bytes read, %llu written, %u seconds active.", b,
           (unsigned long long)rd, (unsigned long long)wr, h->secs_active);
}

/* tor stores byte counts rounded up to whole KiB. */
static uint64_t
round_kib(uint64_t x)
{
  return (x + 1023) & ~(uint64_t)1023;
}

static void
set_u64(statefile_t *st, const char *key, uint64_t v)
{
  char b[24];
  snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
  statefile_set(st, key, v ? b : NULL);
}

static void
set_time(statefile_t *st, const char *key, time_t t)
{
  char b[TIME_ISO_LEN + 1];
  time_format_iso(b, t);
  statefile_set(st, key, t ? b : NULL);
}

void
hibernate_save_state(const hibernate_t *h, statefile_t *st)
{
  if (!h || !st || !h->start)
    return;
  set_time(st, "AccountingIntervalStart", h->start);
  set_u64(st, "AccountingBytesReadInInterval", round_kib(h->rd));
  set_u64(st, "AccountingBytesWrittenInInterval", round_kib(h->wr));
  set_u64(st, "AccountingSecondsActive", h->secs_active);
  set_u64(st, "AccountingExpectedUsage", h->expected);
  set_time(st, "AccountingSoftLimitHitAt", h->soft_at);
  set_u64(st, "AccountingBytesAtSoftLimit", h->bytes_at_soft);
  set_u64(st, "AccountingSecondsToReachSoftLimit", h->secs_to_soft);
}

static void
timer_cb(void *arg)
{
  hibernate_t *h = arg;
  uint64_t rd, wr;
  time_t now = time(NULL);
  conn_get_totals(&rd, &wr);
  if (h->have_sample && rd >= h->last_rd && wr >= h->last_wr)
    hibernate_add_bytes(h, rd - h->last_rd, wr - h->last_wr,
                        (int)(now - h->last_tick));
  h->last_rd = rd;
  h->last_wr = wr;
  h->last_tick = now;
  h->have_sample = 1;
  hibernate_tick(h, now);
}

void
hibernate_start(hibernate_t *h, evloop_t *loop)
{
  if (h->timer)
    return;
  h->timer = evloop_timer_new(loop, timer_cb, h);
  evloop_timer_schedule_periodic(h->timer, 1000000);
  h->last_save = time(NULL);
  timer_cb(h);
}

hibernate_state_t
hibernate_state(const hibernate_t *h)
{
  return h ? h->state : HIBERNATE_AWAKE;
}

time_t
hibernate_wake_time(const hibernate_t *h)
{
  return h->wake;
}

const char *
hibernate_state_name(hibernate_state_t s)
{
  switch (s) {
  case HIBERNATE_SOFT:
    return "soft";
  case HIBERNATE_HARD:
    return "hard";
  default:
    return "awake";
  }
}

int
hibernate_dircache_allowed(const hibernate_t *h, uint64_t rate, time_t now)
{
  if (!h || !h->opt.max || h->opt.rule == ACCT_RULE_IN)
    return 1;
  int64_t len = h->start && h->end > h->start
                    ? (int64_t)(h->end - h->start)
                    : (int64_t)(hibernate_period_end(&h->opt.start, now) -
                                hibernate_period_start(&h->opt.start, now));
  if (len < 1)
    len = 1;
  uint64_t quota = h->opt.max;
  if (h->opt.rule == ACCT_RULE_SUM)
    quota /= 2;
  if (rate > UINT32_MAX)
    rate = UINT32_MAX;
  return rate < quota / (uint64_t)len;
}

void
hibernate_heartbeat_line(const hibernate_t *h, time_t now, char *buf,
                         size_t len)
{
  static const char *const rules[] = {"max", "sum", "in", "out"};
  buf[0] = '\0';
  if (!h || !h->opt.max || !h->end)
    return;
  char end[32];
  fmt_local(end, sizeof(end), h->end);
  long left = h->end > now ? (long)(h->end - now) : 0;
  snprintf(buf, len,
           "Heartbeat: Accounting enabled. Sent: %.2f MB, Received: %.2f "
           "MB, Used: %.2f MB / %.2f MB, Rule: %s. The current accounting "
           "interval ends on %s, in %ld days %ld:%02ld hours.",
           (double)h->wr / 1e6, (double)h->rd / 1e6,
           (double)hibernate_used(h) / 1e6, (double)h->opt.max / 1e6,
           rules[h->opt.rule & 3], end, left / 86400, (left % 86400) / 3600,
           (left % 3600) / 60);
}

int
hibernate_getinfo(const hibernate_t *h, const char *key, char **value)
{
  if (strncmp(key, "accounting/", 11))
    return 0;
  const char *k = key + 11;
  int on = h && h->opt.max;
  if (!strcmp(k, "enabled")) {
    *value = pc_strdup(on ? "1" : "0");
    return 1;
  }
  if (!strcmp(k, "hibernating")) {
    *value = pc_strdup(hibernate_state_name(hibernate_state(h)));
    return 1;
  }
  uint64_t rd = h ? h->rd : 0, wr = h ? h->wr : 0;
  if (!strcmp(k, "bytes")) {
    *value = pc_asprintf("%llu %llu", (unsigned long long)rd,
                         (unsigned long long)wr);
    return 1;
  }
  if (!strcmp(k, "bytes-left")) {
    /* Per direction what may still be read and written; under sum both
     * are the shared remainder, and the direction a rule ignores shows
     * the whole quota. */
    uint64_t max = h ? h->opt.max : 0, l_rd, l_wr;
    uint64_t used = h ? hibernate_used(h) : 0;
    uint64_t left_rd = rd < max ? max - rd : 0;
    uint64_t left_wr = wr < max ? max - wr : 0;
    int rule = h ? h->opt.rule : ACCT_RULE_MAX;
    if (rule == ACCT_RULE_SUM) {
      l_rd = l_wr = used < max ? max - used : 0;
    } else if (rule == ACCT_RULE_IN) {
      l_rd = left_rd;
      l_wr = max;
    } else if (rule == ACCT_RULE_OUT) {
      l_rd = max;
      l_wr = left_wr;
    } else {
      l_rd = left_rd;
      l_wr = left_wr;
    }
    *value = pc_asprintf("%llu %llu", (unsigned long long)l_rd,
                         (unsigned long long)l_wr);
    return 1;
  }
  time_t t = 0;
  if (!strcmp(k, "interval-start"))
    t = h ? h->start : 0;
  else if (!strcmp(k, "interval-wake"))
    t = h ? h->wake : 0;
  else if (!strcmp(k, "interval-end"))
    t = h ? h->end : 0;
  else
    return 0;
  char b[TIME_ISO_LEN + 1];
  time_format_iso(b, t);
  *value = pc_strdup(b);
  return 1;
}

void
hibernate_free_(hibernate_t *h)
{
  if (!h)
    return;
  evloop_timer_free(h->timer);
  free(h);
}
