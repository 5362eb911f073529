/* SPDX-License-Identifier: BSD-3-Clause */
/* dirreq_stats.c -- directory request statistics (dirreq_stats.h).
 *
 * Design:
 * - Countries are a small array searched linearly (at most a few hundred
 *   codes; one lookup per network-status request is cheap next to the
 *   request itself).
 * - Unique addresses: an open-addressing hash set of 16-byte addresses
 *   (IPv4 in the first 4 bytes, family in the hash), doubled up to
 *   DIRREQ_MAX_ADDRS; full, a new address counts as unseen. Clients make
 *   it grow, so it is counted in the memory budget (MEMACCT_DIRCACHE);
 *   it is bounded and cannot be freed before the interval ends.
 * - Downloads in flight are a counter, not records: the dircache request
 *   keeps its own start time and tells us its end (dirreq_stats_dl_end),
 *   so nothing here grows with the requests under way.
 * - The state file holds the interval under way as plain counts
 *   (DirReqStatsStart, DirReqStatsIPs, DirReqStatsReqs "cc=n,...",
 *   DirReqStatsResp "n,n,n,n,n,n", DirReqStats{Direct,Tunneled}Dl
 *   "complete,timeout"); the rates are not saved.
 */
#include "feature/dircache/dirreq_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/string/strbuf.h"
#include "lib/time/timefmt.h"

#define ROUND_COUNTRY 8
#define ROUND_RESP 8
#define ROUND_DL 4
/* A stats file result is published for this long after its end. */
#define PUBLISH_FOR_SECS (24 * 3600)

typedef struct country_t {
  char cc[3];
  uint64_t ips, reqs;
} country_t;

typedef struct dl_t {
  uint64_t complete, timeout, running;
  uint32_t *rates;
  size_t n_rates, cap_rates;
} dl_t;

struct dirreq_stats_t {
  time_t start;
  int interval;
  char *stats_path;
  dirreq_country_fn country;
  void *country_arg;
  country_t countries[DIRREQ_MAX_COUNTRIES];
  int n_countries;
  uint8_t (*addrs)[17]; /* [0..15] address, [16] family + 1 (0: empty) */
  size_t addr_cap, n_addrs;
  uint64_t resp[DIRREQ_RESP_N];
  dl_t dl[2]; /* direct, tunneled */
  char *result; /* the last finished interval's lines */
  time_t result_end;
};

static dirreq_stats_t *global_stats;

static const char *const resp_names[DIRREQ_RESP_N] = {
    "ok", "not-enough-sigs", "unavailable", "not-found", "not-modified",
    "busy"};

dirreq_stats_t *
dirreq_stats_new(time_t now, int interval, const char *stats_path)
{
  dirreq_stats_t *s = pc_zalloc(sizeof(*s));
  s->start = now;
  s->interval = interval > 0 ? interval : DIRREQ_INTERVAL_DEFAULT;
  s->stats_path = stats_path ? pc_strdup(stats_path) : NULL;
  return s;
}

static void
counts_clear(dirreq_stats_t *s)
{
  s->n_countries = 0;
  memacct_sub(MEMACCT_DIRCACHE, s->addr_cap * 17);
  free(s->addrs);
  s->addrs = NULL;
  s->addr_cap = s->n_addrs = 0;
  memset(s->resp, 0, sizeof(s->resp));
  for (int i = 0; i < 2; i++) {
    free(s->dl[i].rates);
    uint64_t running = s->dl[i].running;
    memset(&s->dl[i], 0, sizeof(s->dl[i]));
    s->dl[i].running = running; /* still under way */
  }
}

void
dirreq_stats_free_(dirreq_stats_t *s)
{
  if (!s)
    return;
  if (global_stats == s)
    global_stats = NULL;
  counts_clear(s);
  free(s->stats_path);
  free(s->result);
  free(s);
}

void
dirreq_stats_set_country_fn(dirreq_stats_t *s, dirreq_country_fn fn,
                            void *arg)
{
  s->country = fn;
  s->country_arg = arg;
}

void
dirreq_stats_set_interval(dirreq_stats_t *s, int interval)
{
  if (interval > 0)
    s->interval = interval;
}

void
dirreq_stats_set_global(dirreq_stats_t *s)
{
  global_stats = s;
}

dirreq_stats_t *
dirreq_stats_global(void)
{
  return global_stats;
}

/* ---- counting ----------------------------------------------------- */

static int
cc_ok(const char *cc)
{
  return cc && ((cc[0] >= 'a' && cc[0] <= 'z') || cc[0] == '?') &&
         ((cc[1] >= 'a' && cc[1] <= 'z') || cc[1] == '?') && !cc[2];
}

static country_t *
country_get(dirreq_stats_t *s, const char *cc)
{
  if (!cc_ok(cc))
    cc = "??";
  for (int i = 0; i < s->n_countries; i++)
    if (!strcmp(s->countries[i].cc, cc))
      return &s->countries[i];
  if (s->n_countries == DIRREQ_MAX_COUNTRIES)
    return strcmp(cc, "??") ? country_get(s, "??") : &s->countries[0];
  country_t *c = &s->countries[s->n_countries++];
  memset(c, 0, sizeof(*c));
  memcpy(c->cc, cc, 3);
  return c;
}

static uint64_t
addr_hash(const uint8_t k[17])
{
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (int i = 0; i < 17; i++)
    h = (h ^ k[i]) * 1099511628211ULL;
  return h;
}

/* Insert; returns 1 if the address was not there (or the set is full). */
static int
addr_insert(dirreq_stats_t *s, const uint8_t k[17])
{
  if (s->n_addrs * 2 >= s->addr_cap) {
    if (s->addr_cap >= DIRREQ_MAX_ADDRS * 2)
      return 1; /* full: counts as new */
    size_t ncap = s->addr_cap ? s->addr_cap * 2 : 64;
    uint8_t(*na)[17] = pc_calloc(ncap, 17);
    for (size_t i = 0; i < s->addr_cap; i++) {
      if (!s->addrs[i][16])
        continue;
      size_t j = (size_t)addr_hash(s->addrs[i]) & (ncap - 1);
      while (na[j][16])
        j = (j + 1) & (ncap - 1);
      memcpy(na[j], s->addrs[i], 17);
    }
    free(s->addrs);
    memacct_add(MEMACCT_DIRCACHE, (ncap - s->addr_cap) * 17);
    s->addrs = na;
    s->addr_cap = ncap;
  }
  size_t j = (size_t)addr_hash(k) & (s->addr_cap - 1);
  while (s->addrs[j][16]) {
    if (!memcmp(s->addrs[j], k, 17))
      return 0;
    j = (j + 1) & (s->addr_cap - 1);
  }
  memcpy(s->addrs[j], k, 17);
  s->n_addrs++;
  return 1;
}

void
dirreq_stats_note_response(dirreq_stats_t *s, const pc_addr_t *client,
                           dirreq_resp_t r)
{
  if (!s || r < 0 || r >= DIRREQ_RESP_N)
    return;
  s->resp[r]++;
  if (r != DIRREQ_RESP_OK || !client)
    return; /* (no client: an anonymous request) */
  const char *cc = "??";
  if (s->country)
    cc = s->country(client, s->country_arg);
  country_t *c = country_get(s, cc);
  c->reqs++;
  if (client->family == AF_INET || client->family == AF_INET6) {
    uint8_t k[17];
    memset(k, 0, sizeof(k));
    memcpy(k, client->addr, client->family == AF_INET ? 4 : 16);
    k[16] = client->family == AF_INET ? 1 : 2;
    if (addr_insert(s, k))
      c->ips++;
  }
}

void
dirreq_stats_dl_start(dirreq_stats_t *s, int tunneled)
{
  if (s)
    s->dl[!!tunneled].running++;
}

void
dirreq_stats_dl_end(dirreq_stats_t *s, int tunneled, int complete,
                    uint64_t bytes, uint64_t usecs)
{
  if (!s)
    return;
  dl_t *d = &s->dl[!!tunneled];
  if (d->running)
    d->running--;
  if (!complete) {
    d->timeout++;
    return;
  }
  d->complete++;
  if (d->n_rates == DIRREQ_MAX_RATES)
    return;
  if (d->n_rates == d->cap_rates) {
    d->cap_rates = d->cap_rates ? d->cap_rates * 2 : 64;
    d->rates = pc_realloc(d->rates, d->cap_rates * sizeof(uint32_t));
  }
  uint64_t rate = bytes * 1000000ULL / (usecs ? usecs : 1);
  d->rates[d->n_rates++] = rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
}

/* ---- formatting --------------------------------------------------- */

static uint64_t
round_up(uint64_t v, uint64_t m)
{
  return v % m ? v + (m - v % m) : v;
}

static int
country_cmp_by(const country_t *x, const country_t *y, int ips)
{
  uint64_t vx = round_up(ips ? x->ips : x->reqs, ROUND_COUNTRY);
  uint64_t vy = round_up(ips ? y->ips : y->reqs, ROUND_COUNTRY);
  if (vx != vy)
    return vx > vy ? -1 : 1;
  return strcmp(x->cc, y->cc);
}

static int
country_cmp_ips(const void *a, const void *b)
{
  return country_cmp_by(a, b, 1);
}

static int
country_cmp_reqs(const void *a, const void *b)
{
  return country_cmp_by(a, b, 0);
}

static void
add_countries(strbuf_t *b, const char *kw, const dirreq_stats_t *s, int ips)
{
  country_t sorted[DIRREQ_MAX_COUNTRIES];
  int n = 0;
  for (int i = 0; i < s->n_countries; i++)
    if (ips ? s->countries[i].ips : s->countries[i].reqs)
      sorted[n++] = s->countries[i];
  qsort(sorted, (size_t)n, sizeof(sorted[0]),
        ips ? country_cmp_ips : country_cmp_reqs);
  strbuf_add(b, kw);
  for (int i = 0; i < n; i++)
    strbuf_addf(b, "%s%s=%llu", i ? "," : " ", sorted[i].cc,
                (unsigned long long)round_up(ips ? sorted[i].ips
                                                 : sorted[i].reqs,
                                             ROUND_COUNTRY));
  strbuf_add(b, "\n");
}

static int
u32_cmp(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void
add_dl(strbuf_t *b, const char *kw, const dl_t *d)
{
  strbuf_addf(b, "%s complete=%llu,timeout=%llu,running=%llu", kw,
              (unsigned long long)round_up(d->complete, ROUND_DL),
              (unsigned long long)round_up(d->timeout, ROUND_DL),
              (unsigned long long)round_up(d->running, ROUND_DL));
  if (d->complete >= DIRREQ_MIN_RATES && d->n_rates >= DIRREQ_MIN_RATES) {
    size_t n = d->n_rates;
    uint32_t *r = pc_memdup(d->rates, n * sizeof(uint32_t));
    qsort(r, n, sizeof(uint32_t), u32_cmp);
    /* The value below which k/10 (or k/4) of the rates lie. */
#define AT(num, den) r[(n * (num)) / (den) < n ? (n * (num)) / (den) : n - 1]
    strbuf_addf(b, ",min=%u,d1=%u,d2=%u,q1=%u,d3=%u,d4=%u,md=%u,d6=%u,"
                   "d7=%u,q3=%u,d8=%u,d9=%u,max=%u",
                r[0], AT(1, 10), AT(2, 10), AT(1, 4), AT(3, 10), AT(4, 10),
                AT(1, 2), AT(6, 10), AT(7, 10), AT(3, 4), AT(8, 10),
                AT(9, 10), r[n - 1]);
#undef AT
    free(r);
  }
  strbuf_add(b, "\n");
}

char *
dirreq_stats_format(const dirreq_stats_t *s, time_t now)
{
  strbuf_t b = {NULL, 0, 0};
  char when[TIME_ISO_LEN + 1];
  time_format_iso(when, now);
  strbuf_addf(&b, "dirreq-stats-end %s (%d s)\n", when, s->interval);
  add_countries(&b, "dirreq-v3-ips", s, 1);
  add_countries(&b, "dirreq-v3-reqs", s, 0);
  /* tor 0.4.9 puts "served" (consensus answers it sent) first; every
   * 200 answer pctor chooses is sent, so it equals "ok". */
  strbuf_addf(&b, "dirreq-v3-resp served=%llu",
              (unsigned long long)round_up(s->resp[DIRREQ_RESP_OK],
                                           ROUND_RESP));
  for (int i = 0; i < DIRREQ_RESP_N; i++)
    strbuf_addf(&b, ",%s=%llu", resp_names[i],
                (unsigned long long)round_up(s->resp[i], ROUND_RESP));
  strbuf_add(&b, "\n");
  add_dl(&b, "dirreq-v3-direct-dl", &s->dl[0]);
  add_dl(&b, "dirreq-v3-tunneled-dl", &s->dl[1]);
  return b.s;
}

/* The end time of a "dirreq-stats-end" line at the start of text. */
static int
result_end(const char *text, time_t *end)
{
  static const char kw[] = "dirreq-stats-end ";
  if (strncmp(text, kw, sizeof(kw) - 1))
    return -1;
  return time_parse_iso(text + sizeof(kw) - 1, TIME_ISO_LEN, end);
}

int
dirreq_stats_rotate(dirreq_stats_t *s, time_t now)
{
  if (!s || now < s->start + s->interval)
    return 0;
  time_t end = s->start + s->interval;
  free(s->result);
  s->result = dirreq_stats_format(s, end);
  s->result_end = end;
  if (s->stats_path) {
    char *dir = pc_strdup(s->stats_path);
    char *slash = strrchr(dir, '/');
    char *err = NULL;
    if (slash)
      *slash = '\0';
    int r = slash ? fs_check_private_dir(dir, &err) : 0;
    if (r < 0 || fs_write_file_atomic(s->stats_path, s->result,
                                      strlen(s->result), 0600) < 0)
      log_warn("Cannot write the directory request statistics to %s%s%s",
               s->stats_path, err ? ": " : "", err ? err : "");
    free(err);
    free(dir);
  }
  counts_clear(s);
  /* The next interval starts where this one ended, unless pctor was
   * stopped for longer than an interval. */
  s->start = now - end >= s->interval ? now : end;
  char when[TIME_ISO_LEN + 1];
  time_format_iso(when, end);
  log_info("Directory request statistics: the interval that ended at %s "
           "is written%s; the next ends in %d s.", when,
           s->stats_path ? " to the stats file" : "",
           (int)(s->start + s->interval - now));
  return 1;
}

const char *
dirreq_stats_published(const dirreq_stats_t *s, time_t now)
{
  if (!s || !s->result || now - s->result_end > PUBLISH_FOR_SECS)
    return NULL;
  return s->result;
}

/* ---- the state file ----------------------------------------------- */

static void
save_countries(const dirreq_stats_t *s, statefile_t *st, const char *key,
               int ips)
{
  strbuf_t b = {NULL, 0, 0};
  strbuf_add(&b, "");
  for (int i = 0; i < s->n_countries; i++) {
    uint64_t v = ips ? s->countries[i].ips : s->countries[i].reqs;
    if (v)
      strbuf_addf(&b, "%s%s=%llu", b.len ? "," : "", s->countries[i].cc,
                  (unsigned long long)v);
  }
  statefile_set(st, key, b.s);
  free(b.s);
}

void
dirreq_stats_save(const dirreq_stats_t *s, statefile_t *st)
{
  if (!s || !st)
    return;
  char when[TIME_ISO_LEN + 1], v[128];
  time_format_iso(when, s->start);
  statefile_set(st, "DirReqStatsStart", when);
  save_countries(s, st, "DirReqStatsIPs", 1);
  save_countries(s, st, "DirReqStatsReqs", 0);
  snprintf(v, sizeof(v), "%llu,%llu,%llu,%llu,%llu,%llu",
           (unsigned long long)s->resp[0], (unsigned long long)s->resp[1],
           (unsigned long long)s->resp[2], (unsigned long long)s->resp[3],
           (unsigned long long)s->resp[4], (unsigned long long)s->resp[5]);
  statefile_set(st, "DirReqStatsResp", v);
  for (int i = 0; i < 2; i++) {
    snprintf(v, sizeof(v), "%llu,%llu",
             (unsigned long long)s->dl[i].complete,
             (unsigned long long)s->dl[i].timeout);
    statefile_set(st, i ? "DirReqStatsTunneledDl" : "DirReqStatsDirectDl",
                  v);
  }
}

/* Parse "n,n,..." into v[n]; -1 if malformed. */
static int
parse_nums(const char *text, uint64_t *v, int n)
{
  const char *p = text;
  for (int i = 0; i < n; i++) {
    char *e;
    if (*p < '0' || *p > '9')
      return -1;
    unsigned long long x = strtoull(p, &e, 10);
    if (i < n - 1 ? *e != ',' : *e != '\0')
      return -1;
    v[i] = x;
    p = e + 1;
  }
  return 0;
}

static void
load_countries(dirreq_stats_t *s, const statefile_t *st, const char *key,
               int ips)
{
  const char *v = statefile_get(st, key);
  while (v && *v) {
    char cc[3];
    char *e;
    if (!v[0] || !v[1] || v[2] != '=')
      return;
    memcpy(cc, v, 2);
    cc[2] = '\0';
    if (!cc_ok(cc) || v[3] < '0' || v[3] > '9')
      return;
    unsigned long long x = strtoull(v + 3, &e, 10);
    if (*e && *e != ',')
      return;
    country_t *c = country_get(s, cc);
    if (ips)
      c->ips += x;
    else
      c->reqs += x;
    v = *e ? e + 1 : e;
  }
}

void
dirreq_stats_load(dirreq_stats_t *s, const statefile_t *st, time_t now)
{
  if (!s)
    return;
  if (s->stats_path) {
    char *text = NULL;
    time_t end;
    if (fs_read_text(s->stats_path, 64 * 1024, &text) == 0 &&
        result_end(text, &end) == 0 && end <= now + 3600) {
      free(s->result);
      s->result = text;
      s->result_end = end;
      text = NULL;
    }
    free(text);
  }
  const char *v = st ? statefile_get(st, "DirReqStatsStart") : NULL;
  time_t start;
  if (!v || time_parse_iso(v, strlen(v), &start) < 0 || start > now)
    return;
  counts_clear(s);
  s->start = start;
  load_countries(s, st, "DirReqStatsIPs", 1);
  load_countries(s, st, "DirReqStatsReqs", 0);
  uint64_t r[DIRREQ_RESP_N], d[2];
  if ((v = statefile_get(st, "DirReqStatsResp")) &&
      parse_nums(v, r, DIRREQ_RESP_N) == 0)
    memcpy(s->resp, r, sizeof(r));
  for (int i = 0; i < 2; i++)
    if ((v = statefile_get(st, i ? "DirReqStatsTunneledDl"
                                 : "DirReqStatsDirectDl")) &&
        parse_nums(v, d, 2) == 0) {
      s->dl[i].complete = d[0];
      s->dl[i].timeout = d[1];
    }
  /* An interval that ended while pctor was stopped ends at the next
   * rotation check. */
}
