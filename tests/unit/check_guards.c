/* SPDX-License-Identifier: BSD-3-Clause */
/* check_guards.c -- unit tests for feature/client/guards (guard-spec) on a
 * synthetic nodelist: the sample's size limits and that only guards are
 * sampled (bandwidth-weighted), primary guards in sample order, the first
 * primary chosen and confirmed, the sets surviving a restart through the
 * state file (tor's Guard lines, unknown entries and other instances
 * kept), a failed primary replaced by the next one until its retry time,
 * an unlisted primary replaced and later removed from the sample, the
 * avoid list (family/subnet) and EntryNodes' restricted instance; tor's
 * options: NumPrimaryGuards, NumEntryGuards (circuits spread over the
 * first N usable primaries), GuardLifetime (and its bounds) and
 * UseEntryGuards 0 (first hops drawn afresh, the sample untouched). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feature/client/guards.h"
#include "feature/dir/consensus.h"
#include "lib/fs/statefile.h"
#include "lib/malloc/alloc.h"

#include "test_rng.h"

Suite *suite_guards(void);


#define N_NODES 40
#define N_GUARDS 30
static const time_t T0 = 1800000000;

typedef struct {
  consensus_t c;
  microdesc_t md;
  dir_nodelist_t nl;
  dir_node_t nodes[N_NODES];
} net_t;

/* 30 guards (g0..g29, bandwidth 1000) then 10 relays without the Guard
 * flag, each in its own /16, sorted by identity. */
static net_t *
net_new(time_t now)
{
  net_t *n = calloc(1, sizeof(*n));
  n->c.valid_after = now - 60;
  n->c.fresh_until = now + 3600;
  n->c.valid_until = now + 3 * 3600;
  for (int i = 0; i < N_NODES; i++) {
    dir_node_t *d = &n->nodes[i];
    snprintf(d->nickname, sizeof(d->nickname), "%s%d",
             i < N_GUARDS ? "g" : "m", i);
    d->rsa_id[0] = (uint8_t)(i + 1);
    snprintf(d->hex_id, sizeof(d->hex_id), "%02X%038d", i + 1, 0);
    d->or_addr.family = AF_INET;
    d->or_addr.addr[0] = 10;
    d->or_addr.addr[1] = (uint8_t)i;
    d->flags = RS_FLAG_RUNNING | RS_FLAG_VALID | RS_FLAG_FAST |
               RS_FLAG_V2DIR | RS_FLAG_STABLE |
               (i < N_GUARDS ? RS_FLAG_GUARD : 0);
    d->has_bandwidth = 1;
    d->bandwidth = 1000;
    d->desc = &n->md;
    d->has_ntor = 1;
  }
  n->nl.consensus = &n->c;
  n->nl.n_nodes = N_NODES;
  n->nl.nodes = n->nodes;
  return n;
}

static void
set_time(net_t *n, time_t now)
{
  n->c.valid_after = now - 60;
  n->c.fresh_until = now + 3600;
  n->c.valid_until = now + 3 * 3600;
}

static int
node_index(const net_t *n, const uint8_t *id)
{
  for (int i = 0; i < N_NODES; i++)
    if (!memcmp(n->nodes[i].rsa_id, id, 20))
      return i;
  return -1;
}

/* What every test starts from: the network, a default configuration, a
 * seeded RNG and an empty default guard set. */
typedef struct {
  net_t *n;
  path_config_t cfg;
  uint64_t seed;
  path_rng_t rng;
  guards_t *g;
} fx_t;

static void
fx_init(fx_t *f, uint64_t seed)
{
  f->n = net_new(T0);
  path_config_init(&f->cfg);
  f->seed = seed;
  f->rng.below = test_rng_below;
  f->rng.arg = &f->seed;
  f->g = guards_new(NULL, "default");
}

static void
fx_clear(fx_t *f)
{
  guards_free(f->g);
  path_config_clear(&f->cfg);
  free(f->n);
}

/* 1 if id is in g's sample. */
static int
in_sample(const guards_t *g, const uint8_t *id)
{
  for (int i = 0; i < guards_n_sampled(g); i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    if (!memcmp(gi.rsa_id, id, 20))
      return 1;
  }
  return 0;
}

/* guards_choose at now with no relay to avoid. */
static const dir_node_t *
fx_choose(fx_t *f, time_t now, int *primary)
{
  return guards_choose(f->g, &f->n->nl, &f->cfg, NULL, 0, now, &f->rng,
                       primary);
}

START_TEST(test_sample_and_primary)
{
  fx_t f;
  fx_init(&f, 1);
  net_t *n = f.n;
  guards_t *g = f.g;
  guards_update(g, &n->nl, &f.cfg, T0, &f.rng);
  /* max(20% of 30, MIN_FILTERED_SAMPLE 20) = 20 */
  ck_assert_int_eq(guards_n_sampled(g), 20);
  for (int i = 0; i < guards_n_sampled(g); i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    ck_assert_int_lt(node_index(n, gi.rsa_id), N_GUARDS);
    ck_assert_int_eq(gi.sampled_idx, i);
    ck_assert_int_eq(gi.is_primary, i < 3);
    ck_assert_int_eq(gi.confirmed_idx, -1);
    ck_assert(gi.sampled_on <= T0 && gi.sampled_on > T0 - 12 * 86400 - 1);
  }
  ck_assert_int_eq(guards_n_primary(g), 3);
  int primary = 0;
  const dir_node_t *d = fx_choose(&f, T0, &primary);
  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(primary, 1);
  ck_assert_mem_eq(d->rsa_id, guards_primary_id(g, 0), 20);
  /* Always the first primary guard while it is reachable. */
  for (int i = 0; i < 20; i++)
    ck_assert_ptr_eq(fx_choose(&f, T0, &primary), d);
  /* Its descriptor is missing (a new consensus, descriptors not fetched
   * yet): no circuit rather than another guard (guard-spec 4.12); it
   * stays primary. */
  dir_node_t *dn = &n->nodes[node_index(n, d->rsa_id)];
  const microdesc_t *md = dn->desc;
  dn->desc = NULL;
  ck_assert_ptr_null(fx_choose(&f, T0, &primary));
  ck_assert_mem_eq(guards_primary_id(g, 0), d->rsa_id, 20);
  dn->desc = md;
  ck_assert_ptr_eq(fx_choose(&f, T0, &primary), d);
  fx_clear(&f);
}
END_TEST

START_TEST(test_weighted_sampling)
{
  /* One guard with 100x the bandwidth of all others together is sampled
   * first nearly always. */
  int first_heavy = 0;
  for (uint64_t s = 1; s <= 100; s++) {
    net_t *n = net_new(T0);
    n->nodes[7].bandwidth = 1000 * 30 * 100;
    path_config_t cfg;
    path_config_init(&cfg);
    uint64_t seed = s;
    path_rng_t rng = {test_rng_below, &seed};
    guards_t *g = guards_new(NULL, "default");
    guards_update(g, &n->nl, &cfg, T0, &rng);
    guard_info_t gi;
    guards_get(g, 0, &gi);
    first_heavy += node_index(n, gi.rsa_id) == 7;
    guards_free(g);
    free(n);
  }
  ck_assert_int_ge(first_heavy, 95);
}
END_TEST

START_TEST(test_persist_across_restart)
{
  char path[] = "/tmp/pctor-check-guards-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  /* A state file with tor's lines: another instance, an unknown K=V. */
  FILE *f = fopen(path, "w");
  fprintf(f, "Guard in=restricted rsa_id=%040d sampled_on=2026-01-01T00:00:00 "
             "listed=1\n"
             "Guard in=default rsa_id=bad sampled_on=2026-01-01T00:00:00\n"
             "TorVersion Tor 0.4.9.11\n",
          0);
  fclose(f);
  net_t *n = net_new(T0);
  path_config_t cfg;
  path_config_init(&cfg);
  uint64_t seed = 7;
  path_rng_t rng = {test_rng_below, &seed};
  char *warn = NULL;
  statefile_t *st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  guards_t *g = guards_new(st, "default");
  ck_assert_int_eq(guards_n_sampled(g), 0); /* bad line dropped */
  int primary;
  const dir_node_t *d = guards_choose(g, &n->nl, &cfg, NULL, 0, T0, &rng,
                                      &primary);
  ck_assert_ptr_nonnull(d);
  guards_note_success(g, d->rsa_id, T0);
  uint8_t first[20];
  memcpy(first, d->rsa_id, 20);
  uint8_t order[20][20];
  for (int i = 0; i < 20; i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    memcpy(order[i], gi.rsa_id, 20);
  }
  guards_free(g);
  statefile_free(st);

  /* Add an unknown entry to one line by hand, as a newer tor might. */
  st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  ck_assert_uint_eq(statefile_count(st, "Guard"), 21);
  ck_assert_str_eq(statefile_get(st, "TorVersion"), "Tor 0.4.9.11");
  ck_assert_ptr_nonnull(strstr(statefile_get(st, "Guard"), "in=restricted"));
  size_t pos = 0;
  const char *v;
  int n_confirmed = 0;
  char *lines[21];
  int k = 0;
  while ((v = statefile_next(st, "Guard", &pos)) != NULL) {
    n_confirmed += strstr(v, "confirmed_idx=0") != NULL;
    if (strstr(v, "in=default"))
      ck_assert_ptr_nonnull(strstr(v, " listed=1"));
    lines[k++] = strstr(v, "sampled_idx=0 ") ? 
      (char *)pc_asprintf("%s pb_use_attempts=2.000000", v) : pc_strdup(v);
  }
  ck_assert_int_eq(n_confirmed, 1);
  statefile_set_all(st, "Guard", (const char *const *)lines, 21);
  for (int i = 0; i < 21; i++)
    free(lines[i]);

  /* "Restart": the same sample, the same first primary guard. */
  g = guards_new(st, "default");
  ck_assert_int_eq(guards_n_sampled(g), 20);
  for (int i = 0; i < 20; i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    ck_assert_mem_eq(gi.rsa_id, order[i], 20);
  }
  seed = 99; /* another RNG stream changes nothing */
  d = guards_choose(g, &n->nl, &cfg, NULL, 0, T0 + 60, &rng, &primary);
  ck_assert_mem_eq(d->rsa_id, first, 20);
  ck_assert_mem_eq(guards_primary_id(g, 0), first, 20);
  guards_save(g, T0 + 60);
  int kept = 0;
  pos = 0;
  while ((v = statefile_next(st, "Guard", &pos)) != NULL)
    kept += strstr(v, "pb_use_attempts=2.000000") != NULL;
  ck_assert_int_eq(kept, 1);
  ck_assert_ptr_nonnull(strstr(statefile_get(st, "Guard"), "in=restricted"));
  guards_free(g);
  statefile_free(st);
  unlink(path);
  path_config_clear(&cfg);
  free(n);
}
END_TEST

START_TEST(test_failed_guard_replaced)
{
  fx_t f;
  fx_init(&f, 3);
  guards_t *g = f.g;
  int primary;
  const dir_node_t *a = fx_choose(&f, T0, &primary);
  guards_note_success(g, a->rsa_id, T0);
  guards_note_failure(g, a->rsa_id, T0 + 10);
  const dir_node_t *b = fx_choose(&f, T0 + 11, &primary);
  ck_assert_ptr_ne(a, b);
  ck_assert_int_eq(primary, 1);
  ck_assert_mem_eq(b->rsa_id, guards_primary_id(g, 1), 20);
  /* a stays the first primary (confirmed) and is retried after 30 min. */
  ck_assert_mem_eq(a->rsa_id, guards_primary_id(g, 0), 20);
  ck_assert_ptr_eq(fx_choose(&f, T0 + 29 * 60, &primary), b);
  ck_assert_ptr_eq(fx_choose(&f, T0 + 31 * 60, &primary), a);
  /* All three primaries down: a confirmed or sampled non-primary guard. */
  for (int i = 0; i < 3; i++)
    guards_note_failure(g, guards_primary_id(g, i), T0 + 32 * 60);
  const dir_node_t *c = fx_choose(&f, T0 + 32 * 60, &primary);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(primary, 0);
  guard_info_t gi;
  guards_get(g, 3, &gi); /* the 4th in sample order */
  ck_assert_mem_eq(c->rsa_id, gi.rsa_id, 20);
  /* It is pending: the next circuit tries the 5th. */
  const dir_node_t *e = fx_choose(&f, T0 + 32 * 60, &primary);
  guards_get(g, 4, &gi);
  ck_assert_mem_eq(e->rsa_id, gi.rsa_id, 20);
  /* It works: confirmed, and primary since fewer than 3 are confirmed. */
  guards_note_success(g, c->rsa_id, T0 + 33 * 60);
  guards_get(g, 3, &gi);
  ck_assert_int_eq(gi.confirmed_idx, 1);
  ck_assert_int_eq(gi.is_primary, 1);
  fx_clear(&f);
}
END_TEST

START_TEST(test_unlisted_guard)
{
  fx_t f;
  fx_init(&f, 5);
  net_t *n = f.n;
  guards_t *g = f.g;
  int primary;
  const dir_node_t *a = fx_choose(&f, T0, &primary);
  guards_note_success(g, a->rsa_id, T0);
  int ia = node_index(n, a->rsa_id);
  uint8_t id[20];
  memcpy(id, a->rsa_id, 20);
  /* It loses its Guard flag: no longer primary, the next one is used. */
  n->nodes[ia].flags &= ~RS_FLAG_GUARD;
  const dir_node_t *b = fx_choose(&f, T0 + 60, &primary);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_ne(node_index(n, b->rsa_id), ia);
  ck_assert_int_eq(primary, 1);
  for (int i = 0; i < guards_n_primary(g); i++)
    ck_assert(memcmp(guards_primary_id(g, i), id, 20) != 0);
  ck_assert_int_eq(guards_n_primary(g), 3);
  /* It comes back within 20 days: primary again (it is confirmed). */
  n->nodes[ia].flags |= RS_FLAG_GUARD;
  const dir_node_t *c = fx_choose(&f, T0 + 120, &primary);
  ck_assert_int_eq(node_index(n, c->rsa_id), ia);
  /* Gone for more than 20 days (with a live consensus): removed. */
  n->nodes[ia].flags &= ~RS_FLAG_RUNNING;
  guards_update(g, &n->nl, &f.cfg, T0 + 200, &f.rng);
  ck_assert_int_eq(in_sample(g, id), 1);
  time_t later = T0 + 200 + 21 * 86400;
  set_time(n, later);
  guards_update(g, &n->nl, &f.cfg, later, &f.rng);
  ck_assert_int_eq(in_sample(g, id), 0);
  for (int i = 0; i < guards_n_sampled(g); i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    ck_assert_int_eq(gi.sampled_idx, i);
  }
  fx_clear(&f);
}
END_TEST

START_TEST(test_avoid_and_entry_nodes)
{
  net_t *n = net_new(T0);
  path_config_t cfg;
  path_config_init(&cfg);
  uint64_t seed = 11;
  path_rng_t rng = {test_rng_below, &seed};
  guards_t *g = guards_new(NULL, "default");
  int primary;
  const dir_node_t *a = guards_choose(g, &n->nl, &cfg, NULL, 0, T0, &rng,
                                      &primary);
  /* An exit in a's /16: the next primary guard instead. */
  dir_node_t exit = *a;
  exit.rsa_id[19] = 0x55;
  const dir_node_t *avoid[] = {&exit};
  const dir_node_t *b = guards_choose(g, &n->nl, &cfg, avoid, 1, T0, &rng,
                                      &primary);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_ne(a, b);
  ck_assert_mem_eq(b->rsa_id, guards_primary_id(g, 1), 20);
  cfg.enforce_distinct_subnets = 0;
  ck_assert_ptr_eq(guards_choose(g, &n->nl, &cfg, avoid, 1, T0, &rng,
                                 &primary), a);
  guards_free(g);

  /* EntryNodes: the restricted instance samples only those relays, even
   * without the Guard flag. */
  char *err = NULL;
  ck_assert_int_eq(routerset_parse(&cfg.entry_nodes, "g2,m35", &err), 0);
  ck_assert_str_eq(guards_instance_for(&cfg), "restricted");
  g = guards_new(NULL, guards_instance_for(&cfg));
  guards_update(g, &n->nl, &cfg, T0, &rng);
  ck_assert_int_eq(guards_n_sampled(g), 2);
  ck_assert_int_eq(guards_n_primary(g), 2);
  for (int i = 0; i < 10; i++) {
    const dir_node_t *d = guards_choose(g, &n->nl, &cfg, NULL, 0, T0, &rng,
                                        &primary);
    ck_assert(!strcmp(d->nickname, "g2") || !strcmp(d->nickname, "m35"));
  }
  guards_free(g);
  path_config_clear(&cfg);
  free(n);
}
END_TEST

/* fx_init with torrc options for the guards. */
static void
fx_init_opts(fx_t *f, uint64_t seed, const guards_options_t *o)
{
  fx_init(f, seed);
  guards_set_options(f->g, o);
}

START_TEST(test_num_primary_guards)
{
  fx_t f;
  int np, nu;
  time_t life, cmin;
  /* NumPrimaryGuards 5: five primary guards, circuits use the first. */
  guards_options_t o = {0, 5, 0, 0, 1};
  fx_init_opts(&f, 21, &o);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  ck_assert_int_eq(guards_n_primary(f.g), 5);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(np, 5);
  ck_assert_int_eq(nu, 1);
  for (int i = 0; i < guards_n_sampled(f.g); i++) {
    guard_info_t gi;
    guards_get(f.g, i, &gi);
    ck_assert_int_eq(gi.is_primary, i < 5);
  }
  int primary;
  for (int i = 0; i < 20; i++)
    ck_assert_mem_eq(fx_choose(&f, T0, &primary)->rsa_id,
                     guards_primary_id(f.g, 0), 20);
  fx_clear(&f);
  /* Defaults (and NULL options): 3 primaries, 1 used, 120/60 days. */
  fx_init_opts(&f, 21, NULL);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(np, 3);
  ck_assert_int_eq(nu, 1);
  ck_assert_int_eq(life, 120 * 86400);
  ck_assert_int_eq(cmin, 60 * 86400);
  ck_assert_int_eq(guards_n_primary(f.g), 3);
  /* NumEntryGuards without NumPrimaryGuards scales the primaries as tor:
   * 2N above 1, N + N/2 above 5, at most 16. */
  static const int use[][2] = {{1, 3}, {2, 4}, {3, 6}, {7, 10}, {12, 16},
                               {16, 16}};
  for (size_t k = 0; k < sizeof(use) / sizeof(use[0]); k++) {
    guards_options_t oe = {use[k][0], 0, 0, 0, 1};
    guards_set_options(f.g, &oe);
    guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
    guards_get_params(f.g, &np, &nu, &life, &cmin);
    ck_assert_int_eq(np, use[k][1]);
    ck_assert_int_eq(nu, use[k][0]);
    ck_assert_int_eq(guards_n_primary(f.g), use[k][1]);
  }
  /* NumPrimaryGuards wins over the scaling. */
  guards_options_t ob = {4, 2, 0, 0, 1};
  guards_set_options(f.g, &ob);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  ck_assert_int_eq(guards_n_primary(f.g), 2);
  fx_clear(&f);
}
END_TEST

START_TEST(test_num_entry_guards)
{
  fx_t f;
  /* NumEntryGuards 2 with 3 primaries: circuits spread over the first
   * two usable primary guards, never the third. */
  guards_options_t o = {2, 3, 0, 0, 1};
  fx_init_opts(&f, 22, &o);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  ck_assert_int_eq(guards_n_primary(f.g), 3);
  uint8_t p[3][20];
  for (int i = 0; i < 3; i++)
    memcpy(p[i], guards_primary_id(f.g, i), 20);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 200; i++) {
    int primary = 0;
    const dir_node_t *d = fx_choose(&f, T0, &primary);
    ck_assert_int_eq(primary, 1);
    int k = 0;
    while (k < 3 && memcmp(d->rsa_id, p[k], 20))
      k++;
    ck_assert_int_lt(k, 3);
    seen[k]++;
  }
  ck_assert_int_gt(seen[0], 50);
  ck_assert_int_gt(seen[1], 50);
  ck_assert_int_eq(seen[2], 0);
  /* The first one unreachable: the next two usable primaries. */
  guards_note_failure(f.g, p[0], T0);
  memset(seen, 0, sizeof(seen));
  for (int i = 0; i < 200; i++) {
    int primary = 0;
    const dir_node_t *d = fx_choose(&f, T0 + 1, &primary);
    int k = 0;
    while (k < 3 && memcmp(d->rsa_id, p[k], 20))
      k++;
    ck_assert_int_lt(k, 3);
    seen[k]++;
  }
  ck_assert_int_eq(seen[0], 0);
  ck_assert_int_gt(seen[1], 50);
  ck_assert_int_gt(seen[2], 50);
  fx_clear(&f);
}
END_TEST

/* The earliest sampled_on in g's sample. */
static time_t
oldest_sampled(const guards_t *g)
{
  time_t t = 0;
  for (int i = 0; i < guards_n_sampled(g); i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
    if (!t || gi.sampled_on < t)
      t = gi.sampled_on;
  }
  return t;
}

START_TEST(test_guard_lifetime)
{
  fx_t f;
  int np, nu;
  time_t life, cmin;
  /* GuardLifetime 30 days replaces both lifetimes. */
  guards_options_t o = {0, 0, 0, 30 * 86400, 1};
  fx_init_opts(&f, 23, &o);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(life, 30 * 86400);
  ck_assert_int_eq(cmin, 30 * 86400);
  ck_assert_int_eq(guards_n_sampled(f.g), 20);
  /* sampled_on is spread over the last lifetime/10 (3 days). */
  ck_assert_int_ge(oldest_sampled(f.g), T0 - 3 * 86400);
  int primary;
  const dir_node_t *a = fx_choose(&f, T0, &primary);
  uint8_t ida[20];
  memcpy(ida, a->rsa_id, 20);
  guards_note_success(f.g, ida, T0);
  /* 29 days on: everything is still sampled. */
  time_t t = T0 + 29 * 86400 - 3 * 86400 - 60;
  set_time(f.n, t);
  guards_update(f.g, &f.n->nl, &f.cfg, t, &f.rng);
  ck_assert_int_ge(oldest_sampled(f.g), T0 - 3 * 86400);
  ck_assert(in_sample(f.g, ida));
  /* 31 days on: the unconfirmed guards and the confirmed one (confirmed
   * more than 30 days ago) are gone; the sample was drawn again. */
  t = T0 + 31 * 86400;
  set_time(f.n, t);
  guards_update(f.g, &f.n->nl, &f.cfg, t, &f.rng);
  ck_assert_int_eq(guards_n_sampled(f.g), 20);
  ck_assert_int_ge(oldest_sampled(f.g), t - 3 * 86400);
  for (int i = 0; i < guards_n_sampled(f.g); i++) {
    guard_info_t gi;
    guards_get(f.g, i, &gi);
    ck_assert_int_eq(gi.confirmed_idx, -1);
  }
  fx_clear(&f);

  /* Without it, the same guards are still there after 31 days (120). */
  fx_init_opts(&f, 23, NULL);
  guards_update(f.g, &f.n->nl, &f.cfg, T0, &f.rng);
  time_t before = oldest_sampled(f.g);
  ck_assert_int_lt(before, T0 - 3 * 86400); /* spread over 12 days */
  set_time(f.n, t);
  guards_update(f.g, &f.n->nl, &f.cfg, t, &f.rng);
  ck_assert_int_eq(oldest_sampled(f.g), before);
  fx_clear(&f);

  /* Bounds: below one day means the consensus' values, as in tor; 10
   * years is taken as it is. */
  guards_options_t shortl = {0, 0, 0, 86399, 1};
  fx_init_opts(&f, 23, &shortl);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(life, 120 * 86400);
  ck_assert_int_eq(cmin, 60 * 86400);
  guards_options_t day = {0, 0, 0, 86400, 1};
  guards_set_options(f.g, &day);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(life, 86400);
  guards_options_t tenyears = {0, 0, 0, 3650 * 86400, 1};
  guards_set_options(f.g, &tenyears);
  guards_get_params(f.g, &np, &nu, &life, &cmin);
  ck_assert_int_eq(life, (time_t)3650 * 86400);
  ck_assert_int_eq(cmin, (time_t)3650 * 86400);
  fx_clear(&f);
}
END_TEST

START_TEST(test_use_entry_guards_0)
{
  fx_t f;
  guards_options_t o = {0, 0, 0, 0, 0};
  fx_init_opts(&f, 24, &o);
  int hits[N_NODES] = {0};
  for (int i = 0; i < 600; i++) {
    int primary = 1;
    const dir_node_t *d = fx_choose(&f, T0, &primary);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(primary, 0);
    int k = node_index(f.n, d->rsa_id);
    ck_assert_int_lt(k, N_GUARDS); /* only relays that may be guards */
    hits[k]++;
    /* A built circuit confirms nothing. */
    guards_note_success(f.g, d->rsa_id, T0);
    guards_note_failure(f.g, d->rsa_id, T0);
  }
  int distinct = 0;
  for (int k = 0; k < N_GUARDS; k++)
    distinct += hits[k] > 0;
  ck_assert_int_ge(distinct, 25); /* 30 equal guards, 600 draws */
  ck_assert_int_eq(guards_n_sampled(f.g), 0);
  ck_assert_int_eq(guards_n_primary(f.g), 0);
  /* The avoid list still holds: never the relay to avoid. */
  const dir_node_t *avoid[] = {&f.n->nodes[3]};
  for (int i = 0; i < 200; i++) {
    int primary;
    const dir_node_t *d = guards_choose(f.g, &f.n->nl, &f.cfg, avoid, 1,
                                        T0, &f.rng, &primary);
    ck_assert_ptr_ne(d, &f.n->nodes[3]);
  }
  /* Back to UseEntryGuards 1: the guards are used again. */
  guards_set_options(f.g, NULL);
  int primary;
  ck_assert_ptr_nonnull(fx_choose(&f, T0, &primary));
  ck_assert_int_eq(primary, 1);
  ck_assert_int_eq(guards_n_sampled(f.g), 20);
  fx_clear(&f);
}
END_TEST

Suite *
suite_guards(void)
{
  Suite *s = suite_create("guards");
  TCase *tc = tcase_create("guards");
  tcase_add_test(tc, test_sample_and_primary);
  tcase_add_test(tc, test_weighted_sampling);
  tcase_add_test(tc, test_persist_across_restart);
  tcase_add_test(tc, test_failed_guard_replaced);
  tcase_add_test(tc, test_unlisted_guard);
  tcase_add_test(tc, test_avoid_and_entry_nodes);
  tcase_add_test(tc, test_num_primary_guards);
  tcase_add_test(tc, test_num_entry_guards);
  tcase_add_test(tc, test_guard_lifetime);
  tcase_add_test(tc, test_use_entry_guards_0);
  suite_add_tcase(s, tc);
  return s;
}
