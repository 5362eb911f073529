/* SPDX-License-Identifier: BSD-3-Clause */
/* guards.c -- guard-spec's sampled, filtered, confirmed and primary guard
 * sets (see guards.h).
 *
 * Design: the sampled set is one array in sample order (it holds at most
 * MAX_SAMPLE_SIZE entries, so every set operation is a scan of it); the
 * filtered and usable subsets are flags recomputed by guards_update(),
 * the confirmed order is each entry's confirmed_idx, and the primary list
 * is a short array of identities (so it survives entries being removed).
 * Persistent fields are written back as tor's "Guard" lines only when one
 * of them changed (sampling, confirmation, listing, expiry), not on every
 * reachability change, which is run-time state. Times written to the
 * state are randomized into the past as the spec asks (RAND(now, x)).
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/guards.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/strbuf.h"
#include "lib/time/timefmt.h"

#define DAY (24 * 60 * 60)
#define N_PRIMARY_MAX 16
#define MAX_SAMPLE_HARD 1000 /* whatever the consensus says */
#define INTERNET_LIKELY_DOWN_INTERVAL (10 * 60)

typedef struct {
  int n_primary;           /* N_PRIMARY_GUARDS */
  int n_usable_primary;    /* NUM_USABLE_PRIMARY_GUARDS */
  int min_filtered_sample; /* MIN_FILTERED_SAMPLE */
  int max_sample_size;     /* MAX_SAMPLE_SIZE */
  int max_sample_pct;      /* MAX_SAMPLE_THRESHOLD, percent */
  time_t lifetime;        /* GUARD_LIFETIME, seconds */
  time_t confirmed_min;   /* GUARD_CONFIRMED_MIN_LIFETIME, seconds */
  int remove_unlisted_days; /* REMOVE_UNLISTED_GUARDS_AFTER */
} guard_params_t;

typedef struct {
  uint8_t rsa_id[20];
  char nickname[20];
  time_t sampled_on;
  int sampled_idx;
  char sampled_by[32];
  int listed;
  time_t unlisted_since; /* 0: none */
  time_t confirmed_on;   /* 0: not confirmed */
  int confirmed_idx;     /* -1: not confirmed */
  char *extra;           /* unknown K=V entries, kept */
  /* run-time */
  guard_reach_t reach;
  time_t failing_since, last_tried;
  int pending;
  int filtered;
} guard_t;

struct guards_t {
  statefile_t *state;
  char instance[32];
  guard_t *g;
  int n, cap;
  char **other;          /* Guard lines of other instances, verbatim */
  int n_other;
  uint8_t primary[N_PRIMARY_MAX][20];
  int n_primary;
  int next_sampled_idx, next_confirmed_idx;
  guard_params_t p;
  guards_options_t opts; /* the torrc's */
  time_t last_on_internet;
  int dirty; /* persistent fields changed since the last save */
};

static void
params_default(guard_params_t *p)
{
  p->n_primary = 3;
  p->n_usable_primary = 1;
  p->min_filtered_sample = 20;
  p->max_sample_size = 60;
  p->max_sample_pct = 20;
  p->lifetime = (time_t)120 * DAY;
  p->confirmed_min = (time_t)60 * DAY;
  p->remove_unlisted_days = 20;
}

static void
params_from_consensus(guard_params_t *p, const consensus_t *c)
{
  params_default(p);
  if (!c)
    return;
  p->n_primary = consensus_get_param(c, "guard-n-primary-guards", 3, 1,
                                     N_PRIMARY_MAX);
  p->n_usable_primary = consensus_get_param(
      c, "guard-n-primary-guards-to-use", 1, 1, N_PRIMARY_MAX);
  p->min_filtered_sample = consensus_get_param(
      c, "guard-min-filtered-sample-size", 20, 1, MAX_SAMPLE_HARD);
  p->max_sample_size = consensus_get_param(c, "guard-max-sample-size", 60, 1,
                                           MAX_SAMPLE_HARD);
  p->max_sample_pct = consensus_get_param(
      c, "guard-max-sample-threshold-percent", 20, 1, 100);
  p->lifetime = (time_t)consensus_get_param(c, "guard-lifetime-days", 120,
                                            1, 3650) * DAY;
  p->confirmed_min = (time_t)consensus_get_param(
      c, "guard-confirmed-min-lifetime-days", 60, 1, 3650) * DAY;
  p->remove_unlisted_days = consensus_get_param(
      c, "guard-remove-unlisted-guards-after-days", 20, 1, 365);
}

/* The torrc's overrides of the consensus (tor's rules, see guards.h). */
static void
params_apply_options(guard_params_t *p, const guards_options_t *o)
{
  int n_use = o->num_entry_guards;
  if (o->num_primary_guards > 0)
    p->n_primary = o->num_primary_guards;
  else if (n_use > 5)
    p->n_primary = n_use + n_use / 2;
  else if (n_use > 1)
    p->n_primary = n_use * 2;
  if (p->n_primary > N_PRIMARY_MAX)
    p->n_primary = N_PRIMARY_MAX;
  if (n_use > 0)
    p->n_usable_primary = n_use > N_PRIMARY_MAX ? N_PRIMARY_MAX : n_use;
  if (o->guard_lifetime >= DAY) {
    p->lifetime = o->guard_lifetime;
    p->confirmed_min = o->guard_lifetime;
  }
}

/* The parameters from consensus c (NULL: the spec's defaults) and the
 * torrc. */
static void
params_update(guards_t *gs, const consensus_t *c)
{
  params_from_consensus(&gs->p, c);
  params_apply_options(&gs->p, &gs->opts);
}

void
guards_set_options(guards_t *gs, const guards_options_t *o)
{
  static const guards_options_t defaults = {0, 0, 0, 0, 1};
  gs->opts = o ? *o : defaults;
  params_update(gs, NULL);
}

void
guards_get_params(const guards_t *gs, int *n_primary, int *n_to_use,
                  time_t *lifetime, time_t *confirmed_min)
{
  *n_primary = gs->p.n_primary;
  *n_to_use = gs->p.n_usable_primary;
  *lifetime = gs->p.lifetime;
  *confirmed_min = gs->p.confirmed_min;
}

/* ---- the state lines ---- */

static void
fmt_time(char out[TIME_ISO_LEN + 1], time_t t)
{
  time_format_iso(out, t);
  out[10] = 'T'; /* guard-spec: spaceless ISO 8601 */
}

static int
parse_time(const char *s, size_t n, time_t *t)
{
  char buf[TIME_ISO_LEN + 1];
  if (n != TIME_ISO_LEN || s[10] != 'T')
    return -1;
  memcpy(buf, s, n);
  buf[10] = ' ';
  buf[n] = 0;
  return time_parse_iso(buf, n, t);
}

static int
parse_int(const char *s, size_t n, int *out)
{
  if (n == 0 || n > 9)
    return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

/* Parse one Guard value. Returns 1 for an entry of instance (filled in),
 * 0 for another instance, -1 (with *err) if malformed. */
static int
parse_guard_line(const char *v, const char *instance, guard_t *g,
                 const char **err)
{
  memset(g, 0, sizeof(*g));
  g->confirmed_idx = -1;
  g->sampled_idx = -1;
  g->listed = 1;
  int have_in = 0, have_id = 0, have_sampled = 0, mine = 0;
  strbuf_t extra = {0};
  const char *p = v;
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    const char *s = p;
    while (*p && *p != ' ')
      p++;
    size_t n = (size_t)(p - s);
    const char *eq = memchr(s, '=', n);
    if (!eq || eq == s) {
      *err = "an entry is not K=V";
      goto bad;
    }
    size_t kl = (size_t)(eq - s);
    const char *val = eq + 1;
    size_t vl = n - kl - 1;
#define K(name) (kl == strlen(name) && !memcmp(s, name, kl))
    if (K("in")) {
      have_in = 1;
      mine = strlen(instance) == vl && !memcmp(val, instance, vl);
    } else if (K("rsa_id")) {
      if (vl != 40 || base16_decode(g->rsa_id, 20, val, 40) != 20) {
        *err = "bad rsa_id";
        goto bad;
      }
      have_id = 1;
    } else if (K("nickname")) {
      if (vl >= sizeof(g->nickname)) {
        *err = "nickname too long";
        goto bad;
      }
      memcpy(g->nickname, val, vl);
    } else if (K("sampled_on")) {
      if (parse_time(val, vl, &g->sampled_on) < 0) {
        *err = "bad sampled_on";
        goto bad;
      }
      have_sampled = 1;
    } else if (K("sampled_idx")) {
      if (parse_int(val, vl, &g->sampled_idx) < 0) {
        *err = "bad sampled_idx";
        goto bad;
      }
    } else if (K("sampled_by")) {
      snprintf(g->sampled_by, sizeof(g->sampled_by), "%.*s", (int)vl, val);
    } else if (K("listed")) {
      if (vl != 1 || (val[0] != '0' && val[0] != '1')) {
        *err = "bad listed";
        goto bad;
      }
      g->listed = val[0] == '1';
    } else if (K("unlisted_since")) {
      if (parse_time(val, vl, &g->unlisted_since) < 0) {
        *err = "bad unlisted_since";
        goto bad;
      }
    } else if (K("confirmed_on")) {
      if (parse_time(val, vl, &g->confirmed_on) < 0) {
        *err = "bad confirmed_on";
        goto bad;
      }
    } else if (K("confirmed_idx")) {
      if (parse_int(val, vl, &g->confirmed_idx) < 0) {
        *err = "bad confirmed_idx";
        goto bad;
      }
    } else {
      strbuf_addf(&extra, "%s%.*s", extra.s ? " " : "", (int)n, s);
    }
#undef K
  }
  if (!have_in || !have_id || !have_sampled) {
    *err = !have_in ? "no in=" : !have_id ? "no rsa_id=" : "no sampled_on=";
    goto bad;
  }
  if (!mine) {
    free(extra.s);
    return 0;
  }
  /* A confirmed guard needs both fields; tor writes them together. */
  if ((g->confirmed_idx >= 0) != (g->confirmed_on != 0)) {
    g->confirmed_idx = -1;
    g->confirmed_on = 0;
  }
  g->extra = extra.s;
  return 1;
bad:
  free(extra.s);
  return -1;
}

static guard_t *
find(guards_t *gs, const uint8_t id[20])
{
  for (int i = 0; i < gs->n; i++)
    if (!memcmp(gs->g[i].rsa_id, id, 20))
      return &gs->g[i];
  return NULL;
}

static guard_t *
append(guards_t *gs)
{
  if (gs->n == gs->cap) {
    gs->cap = gs->cap ? gs->cap * 2 : 16;
    gs->g = pc_realloc(gs->g, (size_t)gs->cap * sizeof(*gs->g));
  }
  return &gs->g[gs->n++];
}

static int
cmp_sampled(const void *a, const void *b)
{
  const guard_t *x = a, *y = b;
  return (x->sampled_idx > y->sampled_idx) - (x->sampled_idx < y->sampled_idx);
}

guards_t *
guards_new(statefile_t *st, const char *instance)
{
  guards_t *gs = pc_zalloc(sizeof(*gs));
  gs->state = st;
  snprintf(gs->instance, sizeof(gs->instance), "%s", instance);
  guards_set_options(gs, NULL);
  if (!st)
    return gs;
  size_t pos = 0;
  const char *v;
  int line = 0, n_bad = 0;
  while ((v = statefile_next(st, "Guard", &pos)) != NULL) {
    line++;
    guard_t g;
    const char *err = NULL;
    int r = parse_guard_line(v, instance, &g, &err);
    if (r < 0 || (r == 1 && find(gs, g.rsa_id))) {
      if (n_bad++ < 3)
        log_warn("State file: dropping Guard line %d (%s)", line,
                 r < 0 ? err : "the same guard twice");
      if (r == 1)
        free(g.extra);
      gs->dirty = 1;
      continue;
    }
    if (r == 0) {
      gs->other = pc_realloc(gs->other,
                             (size_t)(gs->n_other + 1) * sizeof(char *));
      gs->other[gs->n_other++] = pc_strdup(v);
      continue;
    }
    if (g.sampled_idx < 0)
      g.sampled_idx = 1000000 + line; /* after the indexed ones, in order */
    *append(gs) = g;
  }
  /* Sample order; then renumber densely (tor does the same). */
  if (gs->n > 0) /* (gs->g is NULL when no line was kept) */
    qsort(gs->g, (size_t)gs->n, sizeof(*gs->g), cmp_sampled);
  for (int i = 0; i < gs->n; i++)
    gs->g[i].sampled_idx = i;
  gs->next_sampled_idx = gs->n;
  /* Confirmed order, renumbered densely too. */
  for (int k = 0;; k++) {
    int best = -1;
    for (int i = 0; i < gs->n; i++)
      if (gs->g[i].confirmed_idx >= k &&
          (best < 0 || gs->g[i].confirmed_idx < gs->g[best].confirmed_idx))
        best = i;
    if (best < 0) {
      gs->next_confirmed_idx = k;
      break;
    }
    gs->g[best].confirmed_idx = k;
  }
  if (gs->n)
    log_info("Guards (%s): %d sampled guards read from the state file, %d "
             "confirmed",
             instance, gs->n, gs->next_confirmed_idx);
  return gs;
}

void
guards_free_(guards_t *gs)
{
  if (!gs)
    return;
  for (int i = 0; i < gs->n; i++)
    free(gs->g[i].extra);
  free(gs->g);
  for (int i = 0; i < gs->n_other; i++)
    free(gs->other[i]);
  free(gs->other);
  free(gs);
}

const char *
guards_instance_for(const path_config_t *cfg)
{
  return !cfg || routerset_is_empty(cfg->entry_nodes) ? "default"
                                                     : "restricted";
}

const char *
guards_instance(const guards_t *gs)
{
  return gs->instance;
}

int
guards_save(guards_t *gs, time_t now)
{
  if (!gs->state)
    return 0;
  size_t n = (size_t)gs->n + (size_t)gs->n_other;
  char **lines = pc_calloc(n ? n : 1, sizeof(char *));
  size_t k = 0;
  for (int i = 0; i < gs->n_other; i++)
    lines[k++] = pc_strdup(gs->other[i]);
  for (int i = 0; i < gs->n; i++) {
    const guard_t *g = &gs->g[i];
    char hex[41], t1[TIME_ISO_LEN + 1], t2[TIME_ISO_LEN + 1];
    base16_encode(hex, sizeof(hex), g->rsa_id, 20, BASE16_UPPER);
    fmt_time(t1, g->sampled_on);
    strbuf_t b = {0};
    strbuf_addf(&b, "in=%s rsa_id=%s", gs->instance, hex);
    if (g->nickname[0])
      strbuf_addf(&b, " nickname=%s", g->nickname);
    strbuf_addf(&b, " sampled_on=%s sampled_idx=%d", t1, g->sampled_idx);
    if (g->sampled_by[0])
      strbuf_addf(&b, " sampled_by=%s", g->sampled_by);
    if (!g->listed) {
      fmt_time(t2, g->unlisted_since);
      strbuf_addf(&b, " unlisted_since=%s", t2);
    }
    strbuf_addf(&b, " listed=%d", g->listed);
    if (g->confirmed_idx >= 0) {
      fmt_time(t2, g->confirmed_on);
      strbuf_addf(&b, " confirmed_on=%s confirmed_idx=%d", t2,
                  g->confirmed_idx);
    }
    if (g->extra)
      strbuf_addf(&b, " %s", g->extra);
    lines[k++] = b.s;
  }
  statefile_set_all(gs->state, "Guard", (const char *const *)lines, k);
  for (size_t i = 0; i < k; i++)
    free(lines[i]);
  free(lines);
  gs->dirty = 0;
  if (!statefile_is_dirty(gs->state))
    return 0;
  char *err = NULL;
  if (statefile_save(gs->state, now, &err) < 0) {
    log_warn("%s", err);
    free(err);
    return -1;
  }
  return 0;
}

/* ---- sets ---- */

/* RAND(now, interval): uniformly up to interval in the past. */
static time_t
rand_past(time_t now, time_t interval, path_rng_t *rng)
{
  if (interval <= 0)
    return now;
  return now - (time_t)rng->below(rng->arg, (uint64_t)interval);
}

/* Is node n listed as a guard (guard-spec's GUARDS set, what is sampled
 * from)? By the consensus alone: Running, Valid, not MiddleOnly, the
 * protocols the client needs, and Guard, Fast and V2Dir -- or, in the
 * restricted instance, being an EntryNodes relay (Guard flag or not, as
 * path.c). A missing descriptor does not make a guard unlisted. */
static int
is_guard_candidate(const dir_node_t *n, const path_config_t *cfg)
{
  if (!(n->flags & RS_FLAG_RUNNING) || !(n->flags & RS_FLAG_VALID) ||
      (n->flags & RS_FLAG_MIDDLEONLY) || !dir_node_has_client_protocols(n))
    return 0;
  if (!routerset_is_empty(cfg->entry_nodes))
    return routerset_contains(cfg->entry_nodes, n);
  return (n->flags & RS_FLAG_GUARD) && (n->flags & RS_FLAG_FAST) &&
         (n->flags & RS_FLAG_V2DIR);
}

/* Filtered (guard-spec 4.2): listed and not excluded by the
 * configuration. */
static int
passes_filter(const dir_node_t *n, const path_config_t *cfg)
{
  return n && is_guard_candidate(n, cfg) &&
         !routerset_contains(cfg->exclude_nodes, n);
}

/* Can a circuit start at n now: filtered, with a descriptor (ntor key),
 * and whatever path.c asks of a first hop (Fast, ...). */
static int
usable_now(const dir_node_t *n, const path_config_t *cfg)
{
  return passes_filter(n, cfg) &&
         path_node_is_candidate(n, PATH_POS_GUARD, cfg, 0);
}

static int
is_primary(const guards_t *gs, const guard_t *g)
{
  for (int i = 0; i < gs->n_primary; i++)
    if (!memcmp(gs->primary[i], g->rsa_id, 20))
      return 1;
  return 0;
}

/* Retry schedules (guard-spec A.1): the interval after which a guard
 * that has been failing for `failing` seconds is tried again. */
static time_t
retry_interval(int primary, time_t failing)
{
  if (primary) {
    if (failing < 6 * 3600)
      return 30 * 60;
    if (failing < 6 * 3600 + 90 * 3600)
      return 2 * 3600;
    if (failing < 6 * 3600 + 90 * 3600 + 3 * DAY)
      return 4 * 3600;
    return 9 * 3600;
  }
  if (failing < 6 * 3600)
    return 3600;
  if (failing < 6 * 3600 + 90 * 3600)
    return 4 * 3600;
  if (failing < 6 * 3600 + 90 * 3600 + 3 * DAY)
    return 18 * 3600;
  return 36 * 3600;
}

static void
retry_due(guards_t *gs, time_t now)
{
  for (int i = 0; i < gs->n; i++) {
    guard_t *g = &gs->g[i];
    if (g->reach != GUARD_REACH_NO)
      continue;
    time_t iv = retry_interval(is_primary(gs, g), now - g->failing_since);
    if (now - g->last_tried >= iv) {
      g->reach = GUARD_REACH_MAYBE;
      log_info("Guard %s: retrying after %ld s", g->nickname,
               (long)(now - g->last_tried));
    }
  }
}

static void
remove_at(guards_t *gs, int i)
{
  free(gs->g[i].extra);
  memmove(&gs->g[i], &gs->g[i + 1],
          (size_t)(gs->n - i - 1) * sizeof(*gs->g));
  gs->n--;
  /* Sample order stays dense, as at load. */
  for (int k = i; k < gs->n; k++)
    gs->g[k].sampled_idx = k;
  gs->next_sampled_idx = gs->n;
  gs->dirty = 1;
}

/* Add one guard drawn from the consensus' guards not yet sampled,
 * bandwidth-weighted for the guard position. 0 if none is left. */
static int
sample_one(guards_t *gs, const dir_nodelist_t *nl, const path_config_t *cfg,
           time_t now, path_rng_t *rng)
{
  uint64_t total = 0, n_cand = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint64_t r = 0, acc = 0;
    if (pass == 1) {
      if (!n_cand)
        return 0;
      r = rng->below(rng->arg, total ? total : n_cand);
    }
    for (int i = 0; i < nl->n_nodes; i++) {
      const dir_node_t *n = &nl->nodes[i];
      if (!is_guard_candidate(n, cfg) || find(gs, n->rsa_id))
        continue;
      uint64_t w = (uint64_t)(path_node_weight(nl, n, PATH_POS_GUARD) * 1000);
      if (pass == 0) {
        n_cand++;
        total += w;
        continue;
      }
      acc += total ? w : 1;
      if (r < acc) {
        guard_t *g = append(gs);
        memset(g, 0, sizeof(*g));
        memcpy(g->rsa_id, n->rsa_id, 20);
        snprintf(g->nickname, sizeof(g->nickname), "%s", n->nickname);
        g->sampled_on = rand_past(now, gs->p.lifetime / 10,
                                  rng);
        g->sampled_idx = gs->next_sampled_idx++;
        snprintf(g->sampled_by, sizeof(g->sampled_by), "pctor-%s",
                 PACKAGE_VERSION);
        g->listed = 1;
        g->confirmed_idx = -1;
        g->filtered = passes_filter(n, cfg);
        gs->dirty = 1;
        log_info("Guards (%s): sampled %s ($%s), %d in the sample",
                 gs->instance, n->nickname, n->hex_id, gs->n);
        return 1;
      }
    }
  }
  return 0;
}

/* USABLE_FILTERED_GUARDS: filtered and not known to be down. */
static int
n_usable_filtered(const guards_t *gs)
{
  int k = 0;
  for (int i = 0; i < gs->n; i++)
    k += gs->g[i].filtered && gs->g[i].reach != GUARD_REACH_NO;
  return k;
}

/* PRIMARY_GUARDS (guard-spec 4.4): confirmed and filtered guards in
 * confirmed order, then the earlier primaries still filtered, then
 * filtered guards in sample order. */
static void
compute_primary(guards_t *gs)
{
  uint8_t old[N_PRIMARY_MAX][20];
  int n_old = gs->n_primary;
  memcpy(old, gs->primary, sizeof(old));
  int n = 0;
  int want = gs->p.n_primary;
  /* Confirmed and filtered, in confirmed order. */
  for (int k = 0; k < gs->next_confirmed_idx && n < want; k++)
    for (int i = 0; i < gs->n; i++)
      if (gs->g[i].confirmed_idx == k && gs->g[i].filtered)
        memcpy(gs->primary[n++], gs->g[i].rsa_id, 20);
  /* Earlier primaries that are still filtered keep their place. */
  for (int j = 0; j < n_old && n < want; j++) {
    guard_t *g = find(gs, old[j]);
    if (!g || !g->filtered)
      continue;
    int dup = 0;
    for (int k = 0; k < n && !dup; k++)
      dup = !memcmp(gs->primary[k], old[j], 20);
    if (!dup)
      memcpy(gs->primary[n++], old[j], 20);
  }
  /* Then filtered, unconfirmed guards in sample order. */
  for (int i = 0; i < gs->n && n < want; i++) {
    if (!gs->g[i].filtered || gs->g[i].confirmed_idx >= 0)
      continue;
    int dup = 0;
    for (int k = 0; k < n && !dup; k++)
      dup = !memcmp(gs->primary[k], gs->g[i].rsa_id, 20);
    if (!dup)
      memcpy(gs->primary[n++], gs->g[i].rsa_id, 20);
  }
  gs->n_primary = n;
  if (n != n_old || memcmp(old, gs->primary, (size_t)n * 20)) {
    strbuf_t b = {0};
    for (int k = 0; k < n; k++) {
      guard_t *g = find(gs, gs->primary[k]);
      strbuf_addf(&b, "%s%s", k ? ", " : "", g ? g->nickname : "?");
    }
    log_info("Guards (%s): primary guards now %s", gs->instance,
             b.s ? b.s : "(none)");
    free(b.s);
  }
}

void
guards_update(guards_t *gs, const dir_nodelist_t *nl,
              const path_config_t *cfg, time_t now, path_rng_t *rng)
{
  if (!nl || !nl->consensus)
    return;
  params_update(gs, nl->consensus);
  char *terr = NULL;
  int live = consensus_check_time(nl->consensus, now, &terr) == 0;
  free(terr);
  /* Listed or not (4.10), and expiry (4.1) with a live consensus. */
  for (int i = 0; i < gs->n;) {
    guard_t *g = &gs->g[i];
    const dir_node_t *n = dir_nodelist_find_id(nl, g->rsa_id);
    int listed = n && is_guard_candidate(n, cfg);
    if (listed != g->listed) {
      g->listed = listed;
      g->unlisted_since = listed ? 0 : rand_past(
          now, (time_t)gs->p.remove_unlisted_days * DAY / 5, rng);
      gs->dirty = 1;
      log_info("Guard %s is %s listed as a guard", g->nickname,
               listed ? "again" : "no longer");
    }
    if (n && strcmp(g->nickname, n->nickname)) {
      snprintf(g->nickname, sizeof(g->nickname), "%s", n->nickname);
      gs->dirty = 1;
    }
    g->filtered = listed && passes_filter(n, cfg);
    const char *why = NULL;
    if (live && !g->listed &&
        now - g->unlisted_since > (time_t)gs->p.remove_unlisted_days * DAY)
      why = "unlisted for too long";
    else if (live &&
             now - g->sampled_on > gs->p.lifetime &&
             (g->confirmed_idx < 0 ||
              now - g->confirmed_on > gs->p.confirmed_min))
      why = "its guard lifetime is over";
    if (why) {
      log_info("Guards (%s): removing %s from the sample: %s", gs->instance,
               g->nickname, why);
      int was_confirmed = g->confirmed_idx;
      remove_at(gs, i);
      if (was_confirmed >= 0) {
        for (int k = 0; k < gs->n; k++)
          if (gs->g[k].confirmed_idx > was_confirmed)
            gs->g[k].confirmed_idx--;
        gs->next_confirmed_idx--;
      }
      continue;
    }
    i++;
  }
  retry_due(gs, now);
  /* Grow the sample while too few guards are usable (4.2). */
  int n_guards = 0;
  for (int i = 0; i < nl->n_nodes; i++)
    n_guards += is_guard_candidate(&nl->nodes[i], cfg);
  int max = n_guards * gs->p.max_sample_pct / 100;
  if (max < gs->p.min_filtered_sample)
    max = gs->p.min_filtered_sample;
  if (max > gs->p.max_sample_size)
    max = gs->p.max_sample_size;
  while (n_usable_filtered(gs) < gs->p.min_filtered_sample && gs->n < max &&
         sample_one(gs, nl, cfg, now, rng))
    ;
  compute_primary(gs);
  if (gs->dirty)
    guards_save(gs, now);
}

const dir_node_t *
guards_choose(guards_t *gs, const dir_nodelist_t *nl,
              const path_config_t *cfg, const dir_node_t *const *avoid,
              int n_avoid, time_t now, path_rng_t *rng, int *primary)
{
  *primary = 0;
  if (!nl)
    return NULL;
  if (!gs->opts.use_entry_guards) /* tor's UseEntryGuards 0 */
    return path_choose_node(nl, PATH_POS_GUARD, cfg, -1, avoid, n_avoid,
                            rng);
  guards_update(gs, nl, cfg, now, rng);
  for (int attempt = 0; attempt < 2; attempt++) {
    /* 1. A usable primary guard: one of the first n_usable_primary. */
    const dir_node_t *cand[N_PRIMARY_MAX];
    guard_t *cg[N_PRIMARY_MAX];
    int nc = 0;
    const dir_node_t *no_desc = NULL;
    for (int k = 0; k < gs->n_primary && nc < gs->p.n_usable_primary; k++) {
      guard_t *g = find(gs, gs->primary[k]);
      if (!g || g->reach == GUARD_REACH_NO)
        continue;
      const dir_node_t *n = dir_nodelist_find_id(nl, g->rsa_id);
      if (!n || path_node_conflicts(cfg, n, avoid, n_avoid))
        continue;
      if (!usable_now(n, cfg)) {
        /* guard-spec 4.12: no circuits while a primary guard we would
         * use lacks its descriptor. */
        if (passes_filter(n, cfg) && (!n->desc || !n->has_ntor)) {
          no_desc = n;
          break;
        }
        continue;
      }
      cand[nc] = n;
      cg[nc++] = g;
    }
    if (!nc && no_desc) {
      log_info("Guards (%s): waiting for the descriptor of primary guard "
               "%s",
               gs->instance, no_desc->nickname);
      return NULL;
    }
    if (nc) {
      int k = nc > 1 ? (int)rng->below(rng->arg, (uint64_t)nc) : 0;
      cg[k]->last_tried = now;
      *primary = 1;
      return cand[k];
    }
    /* 2. Confirmed and usable, in confirmed order, not pending first;
     * 3. else usable filtered in sample order, not pending first. */
    for (int pass = 0; pass < 4; pass++) {
      int confirmed = pass < 2, allow_pending = pass & 1;
      guard_t *best = NULL;
      const dir_node_t *bn = NULL;
      for (int i = 0; i < gs->n; i++) {
        guard_t *g = &gs->g[i];
        if (!g->filtered || g->reach == GUARD_REACH_NO ||
            (confirmed && g->confirmed_idx < 0) ||
            (!allow_pending && g->pending))
          continue;
        if (best && confirmed && g->confirmed_idx > best->confirmed_idx)
          continue;
        if (best && !confirmed)
          continue; /* sample order: the first one wins */
        const dir_node_t *n = dir_nodelist_find_id(nl, g->rsa_id);
        if (!n || !usable_now(n, cfg) ||
            path_node_conflicts(cfg, n, avoid, n_avoid))
          continue;
        best = g;
        bn = n;
      }
      if (best) {
        best->pending = 1;
        best->last_tried = now;
        return bn;
      }
    }
    /* 4. Nothing usable: everything becomes "maybe" again, once. */
    if (attempt == 0) {
      int any = 0;
      for (int i = 0; i < gs->n; i++)
        if (gs->g[i].reach == GUARD_REACH_NO) {
          gs->g[i].reach = GUARD_REACH_MAYBE;
          any = 1;
        }
      if (!any)
        break;
      log_info("Guards (%s): no usable guard left; marking all guards as "
               "maybe reachable",
               gs->instance);
    }
  }
  return NULL;
}

void
guards_note_success(guards_t *gs, const uint8_t rsa_id[20], time_t now)
{
  guard_t *g = gs->opts.use_entry_guards ? find(gs, rsa_id) : NULL;
  if (!g)
    return;
  int was_primary = is_primary(gs, g);
  g->reach = GUARD_REACH_YES;
  g->failing_since = 0;
  g->pending = 0;
  if (g->confirmed_idx < 0) {
    path_rng_t rng = path_rng_crypto();
    g->confirmed_on = rand_past(now, gs->p.lifetime / 10,
                                &rng);
    g->confirmed_idx = gs->next_confirmed_idx++;
    gs->dirty = 1;
    char hex[41];
    base16_encode(hex, sizeof(hex), g->rsa_id, 20, BASE16_UPPER);
    log_notice("Guards (%s): %s ($%s) is now a confirmed guard (#%d)",
               gs->instance, g->nickname, hex, g->confirmed_idx);
  }
  /* Back on the internet after a long time: give the primaries another
   * chance (guard-spec 4.8). */
  if (!was_primary && gs->last_on_internet &&
      now - gs->last_on_internet > INTERNET_LIKELY_DOWN_INTERVAL)
    for (int k = 0; k < gs->n_primary; k++) {
      guard_t *p = find(gs, gs->primary[k]);
      if (p && p->reach == GUARD_REACH_NO)
        p->reach = GUARD_REACH_MAYBE;
    }
  gs->last_on_internet = now;
  compute_primary(gs);
  if (gs->dirty)
    guards_save(gs, now);
}

void
guards_note_failure(guards_t *gs, const uint8_t rsa_id[20], time_t now)
{
  guard_t *g = gs->opts.use_entry_guards ? find(gs, rsa_id) : NULL;
  if (!g)
    return;
  if (g->reach != GUARD_REACH_NO)
    log_notice("Guards (%s): %s guard %s is unreachable; %s", gs->instance,
               is_primary(gs, g) ? "primary" : "sampled", g->nickname,
               "using the next guard until it is retried");
  g->reach = GUARD_REACH_NO;
  if (!g->failing_since)
    g->failing_since = now;
  g->last_tried = now;
  g->pending = 0;
}

int
guards_n_sampled(const guards_t *gs)
{
  return gs->n;
}

void
guards_get(const guards_t *gs, int i, guard_info_t *out)
{
  const guard_t *g = &gs->g[i];
  memset(out, 0, sizeof(*out));
  memcpy(out->rsa_id, g->rsa_id, 20);
  memcpy(out->nickname, g->nickname, sizeof(out->nickname));
  out->sampled_on = g->sampled_on;
  out->sampled_idx = g->sampled_idx;
  out->listed = g->listed;
  out->confirmed_idx = g->confirmed_idx;
  out->is_primary = is_primary(gs, g);
  out->is_filtered = g->filtered;
  out->reach = g->reach;
}

int
guards_n_primary(const guards_t *gs)
{
  return gs->n_primary;
}

const uint8_t *
guards_primary_id(const guards_t *gs, int i)
{
  return i >= 0 && i < gs->n_primary ? gs->primary[i] : NULL;
}
