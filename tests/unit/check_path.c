/* SPDX-License-Identifier: BSD-3-Clause */
/* check_path.c -- unit tests for feature/dir/nodelist and feature/dir/path:
 * joining consensus entries with descriptors (real private-network
 * documents and server descriptors for UseMicrodescriptors 0), node-list
 * syntax, the per-position weights of path-spec 2.2, a chi-square check
 * that draws follow bandwidth x weight (fixed-seed RNG), and that every
 * constraint (distinct relays, family, /16, ExcludeNodes, EntryNodes,
 * MiddleNodes, ExitNodes, exit port, flags) holds over many paths. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/or/circuit.h"
#include "core/proto/create.h"
#include "feature/dir/consensus.h"
#include "feature/dir/microdesc.h"
#include "feature/dir/nodelist.h"
#include "feature/dir/path.h"
#include "feature/dir/serverdesc.h"
#include "lib/encoding/base64.h"

#include "test_rng.h"

Suite *suite_path(void);
char *dirtest_load_fixture(const char *name, size_t *len);


/* ---- a synthetic network ---- */

typedef struct {
  const char *nick;
  const char *ip;
  const char *flags;
  unsigned bw;
  const char *policy; /* "accept 80,443" or NULL */
  const char *family; /* extra microdesc line or NULL */
} relay_spec_t;

/* 12 relays. Family: r8 and r9 list each other; r10 lists r11 but not
 * back. r3 and r4 share 10.3.x.x. */
static const relay_spec_t specs[] = {
  {"r0", "10.0.0.1", "Fast Guard Running Stable Valid", 1000, NULL, NULL},
  {"r1", "10.1.0.1", "Fast Guard Running Valid", 2000, NULL, NULL},
  {"r2", "10.2.0.1", "Exit Fast Running Valid", 3000, "accept 80,443", NULL},
  {"r3", "10.3.0.1", "Exit Fast Guard Running Valid", 1500, "accept 1-65535",
   NULL},
  {"r4", "10.3.9.9", "Fast Running Valid", 500, NULL, NULL},
  {"r5", "10.5.0.1", "Fast Running Valid", 800, NULL, NULL},
  {"r6", "10.6.0.1", "BadExit Exit Fast Running Valid", 5000, "accept 80",
   NULL},
  {"r7", "10.7.0.1", "Exit Fast Running Valid", 700, "accept 22", NULL},
  {"r8", "10.8.0.1", "Fast Guard Running Valid", 900, NULL, "family r9"},
  {"r9", "10.9.0.1", "Exit Fast Running Valid", 1200, "accept 80-81",
   "family $R8"},
  {"r10", "10.10.0.1", "Fast Running Valid", 600, NULL, "family r11"},
  {"r11", "10.11.0.1", "Running Valid", 400, NULL, NULL},
};
#define N_SPECS ((int)(sizeof(specs) / sizeof(specs[0])))

typedef struct {
  consensus_t *c;
  microdesc_t **mds;
  int n_mds;
  dir_nodelist_t *nl;
  char *doc;
} net_t;

static void
id_of(int i, uint8_t id[20])
{
  memset(id, 0, 20);
  id[0] = (uint8_t)(0x10 + i); /* ascending */
  id[19] = (uint8_t)i;
}

static void
net_build(net_t *net, const char *weights)
{
  memset(net, 0, sizeof(*net));
  size_t cap = 64 * 1024;
  char *doc = malloc(cap);
  size_t off = 0;
  off += (size_t)snprintf(doc + off, cap - off,
                          "network-status-version 3 microdesc\n"
                          "vote-status consensus\n"
                          "consensus-method 35\n"
                          "valid-after 2026-01-01 00:00:00\n"
                          "fresh-until 2026-01-01 01:00:00\n"
                          "valid-until 2026-01-01 03:00:00\n"
                          "voting-delay 300 300\n"
                          "known-flags BadExit Exit Fast Guard Running "
                          "Stable Valid\n");
  for (int i = 0; i < N_SPECS; i++) {
    char md[1024];
    size_t mo = 0;
    uint8_t key[32];
    memset(key, i + 1, 32);
    char kb[64];
    base64_encode(kb, sizeof(kb), key, 32, BASE64_NOPAD);
    mo += (size_t)snprintf(md + mo, sizeof(md) - mo, "ntor-onion-key %s\n",
                           kb);
    if (specs[i].family) {
      const char *f = specs[i].family;
      const char *ph = strstr(f, "$R8");
      if (ph) {
        char hex[41];
        uint8_t id8[20];
        id_of(8, id8);
        for (int k = 0; k < 20; k++)
          snprintf(hex + 2 * k, 3, "%02X", id8[k]);
        mo += (size_t)snprintf(md + mo, sizeof(md) - mo, "%.*s$%s\n",
                               (int)(ph - f), f, hex);
      } else {
        mo += (size_t)snprintf(md + mo, sizeof(md) - mo, "%s\n", f);
      }
    }
    if (specs[i].policy)
      mo += (size_t)snprintf(md + mo, sizeof(md) - mo, "p %s\n",
                             specs[i].policy);
    microdesc_t *m = NULL;
    char *err = NULL;
    ck_assert_int_eq(microdesc_parse(md, mo, &m, &err), 0);
    net->mds = realloc(net->mds, (size_t)(net->n_mds + 1) * sizeof(*net->mds));
    net->mds[net->n_mds++] = m;
    uint8_t id[20];
    id_of(i, id);
    char idb[64], db[64];
    base64_encode(idb, sizeof(idb), id, 20, BASE64_NOPAD);
    base64_encode(db, sizeof(db), m->digest, 32, BASE64_NOPAD);
    off += (size_t)snprintf(doc + off, cap - off,
                            "r %s %s 2038-01-01 00:00:00 %s 9001 0\n"
                            "m %s\ns %s\nw Bandwidth=%u\n",
                            specs[i].nick, idb, specs[i].ip, db,
                            specs[i].flags, specs[i].bw);
  }
  off += (size_t)snprintf(doc + off, cap - off,
                          "directory-footer\n%s%s"
                          "directory-signature sha256 "
                          "0000000000000000000000000000000000000001 "
                          "0000000000000000000000000000000000000002\n"
                          "-----BEGIN SIGNATURE-----\nAAAA\n"
                          "-----END SIGNATURE-----\n",
                          weights ? weights : "", weights ? "\n" : "");
  char *err = NULL;
  if (consensus_parse(doc, off, &net->c, &err) != 0)
    ck_abort_msg("synthetic consensus: %s", err);
  net->doc = doc;
  net->nl = dir_nodelist_build(net->c, net->mds, net->n_mds);
}

static void
net_free(net_t *net)
{
  dir_nodelist_free(net->nl);
  consensus_free(net->c);
  for (int i = 0; i < net->n_mds; i++)
    microdesc_free(net->mds[i]);
  free(net->mds);
  free(net->doc);
}

static const dir_node_t *
node(net_t *net, const char *nick)
{
  const dir_node_t *n = dir_nodelist_find_nickname(net->nl, nick);
  ck_assert_ptr_nonnull(n);
  return n;
}

static const char *WEIGHTS =
  "bandwidth-weights Wbd=0 Wbe=0 Wbg=4000 Wbm=10000 Wdb=10000 Web=10000 "
  "Wed=2000 Wee=10000 Weg=1000 Wem=3000 Wgb=10000 Wgd=5000 Wgg=6000 "
  "Wgm=4000 Wmb=10000 Wmd=3000 Wme=1500 Wmg=4000 Wmm=10000";

/* A relay whose "pr" line lacks what the client speaks to every hop
 * (Relay=2: CREATE2/EXTEND2/ntor; Link=4) is never a candidate. */
START_TEST(test_required_protocols)
{
  microdesc_t md;
  memset(&md, 0, sizeof(md));
  dir_node_t n;
  memset(&n, 0, sizeof(n));
  strcpy(n.nickname, "p");
  n.flags = RS_FLAG_RUNNING | RS_FLAG_VALID | RS_FLAG_FAST | RS_FLAG_GUARD;
  n.desc = &md;
  n.has_ntor = 1;
  path_config_t cfg;
  path_config_init(&cfg);
  /* no pr line: accepted */
  ck_assert_int_eq(dir_node_has_client_protocols(&n), 1);
  ck_assert_int_eq(path_node_is_candidate(&n, PATH_POS_GUARD, &cfg, 0), 1);
  static const char *const ok[] = {
      "Cons=2 Desc=2 Link=4-5 LinkAuth=3 Relay=2-4",
      "Link=1-5 Relay=1-4", /* tor 0.4.9 */
      "Relay=2 Link=4",
  };
  static const char *const bad[] = {
      "Link=4-5 Relay=1", "Link=1-3 Relay=2-4", "Link=4-5", "Relay=2-4",
      "Link=4-5 Relay=x", "",
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    n.protocols = ok[i];
    ck_assert_msg(dir_node_has_client_protocols(&n), "%s", ok[i]);
    ck_assert(path_node_is_candidate(&n, PATH_POS_MIDDLE, &cfg, 0));
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    n.protocols = bad[i];
    ck_assert_msg(!dir_node_has_client_protocols(&n), "%s", bad[i]);
    for (int pos = 0; pos < 3; pos++)
      ck_assert(!path_node_is_candidate(&n, (path_position_t)pos, &cfg, 0));
  }
  path_config_clear(&cfg);
}
END_TEST

/* What a consensus requires of clients against what a client speaks. */
START_TEST(test_protocols_missing)
{
  char out[128];
  const char *have = "Cons=2 Desc=2 Link=4-5 Microdesc=2 Relay=2-4";
  /* tor 0.4.9's required-client-protocols */
  ck_assert_int_eq(dir_protocols_missing("Cons=2 Desc=2 Link=4 Microdesc=2 "
                                         "Relay=2",
                                         have, out, sizeof(out)),
                   0);
  ck_assert_str_eq(out, "");
  ck_assert_int_eq(dir_protocols_missing(NULL, have, out, sizeof(out)), 0);
  ck_assert_int_eq(dir_protocols_missing("HSDir=2 Link=3-5 Relay=2",
                                         have, out, sizeof(out)),
                   2);
  ck_assert_str_eq(out, "HSDir=2 Link=3");
  ck_assert_int_eq(dir_protocols_missing("Relay=1-2,5", have, out,
                                         sizeof(out)),
                   2);
  ck_assert_str_eq(out, "Relay=1 Relay=5");
  /* an entry without '=' counts; truncation keeps a NUL */
  ck_assert_int_eq(dir_protocols_missing("Bogus", have, out, sizeof(out)), 1);
  char tiny[8];
  ck_assert_int_eq(dir_protocols_missing("HSDir=1-9", have, tiny,
                                         sizeof(tiny)),
                   9);
  ck_assert_uint_lt(strlen(tiny), sizeof(tiny));
}
END_TEST

START_TEST(test_nodelist)
{
  net_t net;
  net_build(&net, WEIGHTS);
  ck_assert_int_eq(net.nl->n_nodes, N_SPECS);
  ck_assert_int_eq(net.nl->n_with_desc, N_SPECS);
  const dir_node_t *r3 = node(&net, "r3");
  ck_assert(dir_node_is_usable(r3));
  ck_assert_int_eq(r3->ntor_key[0], 4);
  ck_assert(policy_summary_allows_port(r3->policy, 9999));
  ck_assert_ptr_eq(dir_nodelist_find_id(net.nl, r3->rsa_id), r3);
  ck_assert_ptr_eq(node(&net, "R3"), r3); /* case-insensitive */
  ck_assert_str_eq(r3->hex_id, "1300000000000000000000000000000000000003");
  ck_assert_int_eq(r3->or_addr.port, 9001);
  char fl[128];
  ck_assert_str_eq(dir_node_flags_str(r3, fl, sizeof(fl)),
                   "Exit,Fast,Guard,Running,Valid");
  /* Families: mutual only. */
  ck_assert(dir_nodes_same_family(node(&net, "r8"), node(&net, "r9")));
  ck_assert(dir_nodes_same_family(node(&net, "r9"), node(&net, "r8")));
  ck_assert(!dir_nodes_same_family(node(&net, "r10"), node(&net, "r11")));
  ck_assert(!dir_nodes_same_family(node(&net, "r0"), node(&net, "r1")));
  ck_assert(dir_nodes_same_family(r3, r3));
  ck_assert(dir_nodes_same_subnet(r3, node(&net, "r4")));
  ck_assert(!dir_nodes_same_subnet(r3, node(&net, "r2")));
  /* Without descriptors nothing is usable. */
  dir_nodelist_t *bare = dir_nodelist_build(net.c, NULL, 0);
  ck_assert_int_eq(bare->n_with_desc, 0);
  for (int i = 0; i < bare->n_nodes; i++)
    ck_assert(!dir_node_is_usable(&bare->nodes[i]));
  dir_nodelist_free(bare);
  net_free(&net);
}
END_TEST

START_TEST(test_routerset)
{
  net_t net;
  net_build(&net, NULL);
  routerset_t *rs = NULL;
  char *err = NULL;
  ck_assert_int_eq(routerset_parse(&rs, "r0, $1100000000000000000000000000000000000001"
                                        " 1200000000000000000000000000000000000002~x,"
                                        "10.3.0.0/16", &err), 0);
  ck_assert(routerset_contains(rs, node(&net, "r0")));
  ck_assert(routerset_contains(rs, node(&net, "r1")));
  ck_assert(routerset_contains(rs, node(&net, "r2")));
  ck_assert(routerset_contains(rs, node(&net, "r3")));
  ck_assert(routerset_contains(rs, node(&net, "r4")));
  ck_assert(!routerset_contains(rs, node(&net, "r5")));
  ck_assert_int_eq(routerset_parse(&rs, "10.5.0.1", &err), 0);
  ck_assert(routerset_contains(rs, node(&net, "r5")));
  ck_assert(!routerset_is_empty(rs));
  routerset_free(rs);
  ck_assert(routerset_is_empty(NULL));
  ck_assert(!routerset_contains(NULL, node(&net, "r5")));
  static const char *bad[] = {"{us}", "10.0.0.0/33", "bad-name!",
                              "averyveryverylongnickname", "1.2.3/8",
                              "$12345"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    rs = NULL;
    err = NULL;
    if (routerset_parse(&rs, bad[i], &err) != -1 || !err)
      ck_abort_msg("'%s' accepted", bad[i]);
    free(err);
    routerset_free(rs);
  }
  rs = NULL;
  ck_assert_int_eq(routerset_parse(&rs, "{cc}", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "GeoIP"));
  free(err);
  routerset_free(rs);
  net_free(&net);
}
END_TEST

START_TEST(test_weights)
{
  net_t net;
  net_build(&net, WEIGHTS);
  /* r3: Guard+Exit, bw 1500. */
  const dir_node_t *r3 = node(&net, "r3");
  ck_assert(path_node_weight(net.nl, r3, PATH_POS_GUARD) == 1500 * 0.5);
  ck_assert(path_node_weight(net.nl, r3, PATH_POS_MIDDLE) == 1500 * 0.3);
  ck_assert(path_node_weight(net.nl, r3, PATH_POS_EXIT) == 1500 * 0.2);
  /* r0: Guard only, bw 1000. */
  const dir_node_t *r0 = node(&net, "r0");
  ck_assert(path_node_weight(net.nl, r0, PATH_POS_GUARD) == 1000 * 0.6);
  ck_assert(path_node_weight(net.nl, r0, PATH_POS_MIDDLE) == 1000 * 0.4);
  ck_assert(path_node_weight(net.nl, r0, PATH_POS_EXIT) == 1000 * 0.1);
  /* r2: Exit only. */
  const dir_node_t *r2 = node(&net, "r2");
  ck_assert(path_node_weight(net.nl, r2, PATH_POS_GUARD) == 0);
  ck_assert(path_node_weight(net.nl, r2, PATH_POS_MIDDLE) == 3000 * 0.15);
  ck_assert(path_node_weight(net.nl, r2, PATH_POS_EXIT) == 3000 * 1.0);
  /* r5: unflagged. */
  const dir_node_t *r5 = node(&net, "r5");
  ck_assert(path_node_weight(net.nl, r5, PATH_POS_GUARD) == 800 * 0.4);
  ck_assert(path_node_weight(net.nl, r5, PATH_POS_MIDDLE) == 800 * 1.0);
  ck_assert(path_node_weight(net.nl, r5, PATH_POS_EXIT) == 800 * 0.3);
  /* r6: BadExit counts as not an exit. */
  const dir_node_t *r6 = node(&net, "r6");
  ck_assert(path_node_weight(net.nl, r6, PATH_POS_MIDDLE) == 5000 * 1.0);
  net_free(&net);
  /* Without bandwidth-weights: every weight is 10000. */
  net_build(&net, NULL);
  r3 = node(&net, "r3");
  ck_assert(path_node_weight(net.nl, r3, PATH_POS_GUARD) == 1500);
  ck_assert(path_node_weight(net.nl, r3, PATH_POS_EXIT) == 1500);
  net_free(&net);
}
END_TEST

/* The "enough directory information" fractions: only descriptors for
 * r0..r5; every weight 10000, so relays weigh their bandwidth. */
START_TEST(test_dir_info)
{
  net_t net;
  net_build(&net, NULL);
  dir_nodelist_t *part = dir_nodelist_build(net.c, net.mds, 6);
  path_config_t cfg;
  path_config_init(&cfg);
  path_dir_info_t di;
  path_dir_info(part, &cfg, &di);
  ck_assert_int_eq(di.n_usable, 12);
  ck_assert_int_eq(di.n_with_desc, 6);
  /* Guards r0 r1 r3 r8; we hold r0 r1 r3. */
  ck_assert_double_eq_tol(di.f_guard, 4500.0 / 5400.0, 1e-6);
  /* Middles: everyone. */
  ck_assert_double_eq_tol(di.f_mid, 8800.0 / 17600.0, 1e-6);
  /* Exits r2 r3 r7 r9 (r6 is a BadExit); we hold r2 r3. */
  ck_assert_double_eq_tol(di.f_exit, 4500.0 / 6400.0, 1e-6);
  ck_assert_double_eq_tol(di.f_paths, di.f_guard * di.f_mid * di.f_exit,
                          1e-12);
  ck_assert(di.f_paths < 0.6);
  ck_assert_double_eq(path_min_fraction(part, -1), 0.6);
  ck_assert_double_eq(path_min_fraction(part, 0.3), 0.3);
  /* ExitNodes r7, whose descriptor we lack: no exit at all. */
  char *err = NULL;
  ck_assert_int_eq(routerset_parse(&cfg.exit_nodes, "r7", &err), 0);
  path_dir_info(part, &cfg, &di);
  ck_assert_double_eq(di.f_exit, 0);
  ck_assert_double_eq(di.f_paths, 0);
  path_config_clear(&cfg);
  /* Every descriptor: everything is there. */
  path_config_init(&cfg);
  path_dir_info(net.nl, &cfg, &di);
  ck_assert_double_eq(di.f_paths, 1.0);
  ck_assert_int_eq(di.n_with_desc, 12);
  path_config_clear(&cfg);
  dir_nodelist_free(part);
  net_free(&net);
}
END_TEST

/* Chi-square statistic of observed counts against expected weights. */
static double
chi2(const int *obs, const double *w, int n, int total)
{
  double sum = 0, x = 0;
  for (int i = 0; i < n; i++)
    sum += w[i];
  for (int i = 0; i < n; i++) {
    if (w[i] == 0) {
      ck_assert_int_eq(obs[i], 0);
      continue;
    }
    double e = total * w[i] / sum;
    x += (obs[i] - e) * (obs[i] - e) / e;
  }
  return x;
}

START_TEST(test_distribution)
{
  net_t net;
  net_build(&net, WEIGHTS);
  path_config_t cfg;
  path_config_init(&cfg);
  cfg.need_fast = 0;
  uint64_t seed = 12345;
  path_rng_t rng = {test_rng_below, &seed};
  const int draws = 60000;
  /* 99.9th percentiles of chi-square for k degrees of freedom. */
  static const double crit[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46,
                                24.32, 26.12, 27.88, 29.59, 31.26, 32.91};
  for (int pos = 0; pos < 3; pos++) {
    int port = pos == PATH_POS_EXIT ? 80 : 0;
    int obs[N_SPECS] = {0};
    double w[N_SPECS] = {0};
    int k = 0;
    for (int i = 0; i < N_SPECS; i++) {
      const dir_node_t *n = &net.nl->nodes[i];
      if (path_node_is_candidate(n, (path_position_t)pos, &cfg, port)) {
        w[i] = path_node_weight(net.nl, n, (path_position_t)pos);
        k += w[i] > 0;
      }
    }
    for (int d = 0; d < draws; d++) {
      const dir_node_t *n = path_choose_node(net.nl, (path_position_t)pos,
                                             &cfg, port, NULL, 0, &rng);
      ck_assert_ptr_nonnull(n);
      obs[n - net.nl->nodes]++;
    }
    double x = chi2(obs, w, N_SPECS, draws);
    if (x > crit[k - 1])
      ck_abort_msg("position %d: chi2 %.2f with %d dof", pos, x, k - 1);
  }
  /* Exit for port 80: r2, r3, r9 (r6 is BadExit, r7 only 22). */
  for (int d = 0; d < 2000; d++) {
    const dir_node_t *n = path_choose_node(net.nl, PATH_POS_EXIT, &cfg, 80,
                                           NULL, 0, &rng);
    ck_assert(!strcmp(n->nickname, "r2") || !strcmp(n->nickname, "r3") ||
              !strcmp(n->nickname, "r9"));
  }
  for (int d = 0; d < 200; d++) {
    const dir_node_t *n = path_choose_node(net.nl, PATH_POS_EXIT, &cfg, 22,
                                           NULL, 0, &rng);
    ck_assert(!strcmp(n->nickname, "r3") || !strcmp(n->nickname, "r7"));
  }
  /* Port 9999: only r3 (accept 1-65535). */
  ck_assert_str_eq(path_choose_node(net.nl, PATH_POS_EXIT, &cfg, 9999, NULL,
                                    0, &rng)->nickname, "r3");
  /* Avoiding r3 leaves nothing for 9999. */
  const dir_node_t *avoid[1] = {node(&net, "r3")};
  ck_assert_ptr_null(path_choose_node(net.nl, PATH_POS_EXIT, &cfg, 9999,
                                      avoid, 1, &rng));
  path_config_clear(&cfg);
  net_free(&net);
}
END_TEST

START_TEST(test_uniform_when_zero)
{
  /* All weights zero: uniform over candidates. */
  net_t net;
  net_build(&net, "bandwidth-weights Wgg=0 Wgd=0 Wgm=0 Wmg=0 Wmd=0 Wme=0 "
                  "Wmm=0 Weg=0 Wed=0 Wee=0 Wem=0");
  path_config_t cfg;
  path_config_init(&cfg);
  cfg.need_fast = 0;
  uint64_t seed = 7;
  path_rng_t rng = {test_rng_below, &seed};
  int obs[N_SPECS] = {0};
  double w[N_SPECS];
  for (int i = 0; i < N_SPECS; i++)
    w[i] = 1;
  for (int d = 0; d < 24000; d++)
    obs[path_choose_node(net.nl, PATH_POS_MIDDLE, &cfg, 0, NULL, 0, &rng) -
        net.nl->nodes]++;
  ck_assert(chi2(obs, w, N_SPECS, 24000) < 31.26);
  path_config_clear(&cfg);
  net_free(&net);
}
END_TEST

static int
in_path(const dir_node_t **p, int n, const char *nick)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(p[i]->nickname, nick))
      return 1;
  return 0;
}

START_TEST(test_constraints)
{
  net_t net;
  net_build(&net, WEIGHTS);
  path_config_t cfg;
  path_config_init(&cfg);
  char *err = NULL;
  ck_assert_int_eq(routerset_parse(&cfg.exclude_nodes, "r1", &err), 0);
  uint64_t seed = 99;
  path_rng_t rng = {test_rng_below, &seed};
  int seen[N_SPECS] = {0};
  for (int d = 0; d < 5000; d++) {
    const dir_node_t *p[4];
    int hops = 3 + d % 2;
    ck_assert_int_eq(path_choose(net.nl, &cfg, hops, d % 3 ? 80 : 0, NULL,
                                 &rng, p, &err), 0);
    for (int i = 0; i < hops; i++) {
      seen[p[i] - net.nl->nodes]++;
      ck_assert(p[i]->flags & RS_FLAG_FAST);
      ck_assert_str_ne(p[i]->nickname, "r1");
      for (int k = i + 1; k < hops; k++) {
        ck_assert_ptr_ne(p[i], p[k]);
        ck_assert(!dir_nodes_same_family(p[i], p[k]));
        ck_assert(!dir_nodes_same_subnet(p[i], p[k]));
      }
    }
    ck_assert(p[0]->flags & RS_FLAG_GUARD);
    ck_assert(!(p[hops - 1]->flags & RS_FLAG_BADEXIT));
    if (d % 3)
      ck_assert(policy_summary_allows_port(p[hops - 1]->policy, 80));
    ck_assert(!(in_path(p, hops, "r8") && in_path(p, hops, "r9")));
    ck_assert(!(in_path(p, hops, "r3") && in_path(p, hops, "r4")));
  }
  /* r11 has no Fast flag, r1 is excluded. */
  ck_assert_int_eq(seen[11], 0);
  ck_assert_int_eq(seen[1], 0);
  /* r10 and r11 are not a family (one-sided), so both can appear together
   * once Fast is not required. */
  cfg.need_fast = 0;
  int together = 0;
  for (int d = 0; d < 5000; d++) {
    const dir_node_t *p[4];
    ck_assert_int_eq(path_choose(net.nl, &cfg, 4, 0, NULL, &rng, p, &err), 0);
    together += in_path(p, 4, "r10") && in_path(p, 4, "r11");
  }
  ck_assert_int_gt(together, 0);
  cfg.need_fast = 1;

  /* EntryNodes / MiddleNodes / ExitNodes. */
  ck_assert_int_eq(routerset_parse(&cfg.entry_nodes, "r5", &err), 0);
  ck_assert_int_eq(routerset_parse(&cfg.middle_nodes, "r0,r10", &err), 0);
  ck_assert_int_eq(routerset_parse(&cfg.exit_nodes, "r9,r7", &err), 0);
  for (int d = 0; d < 500; d++) {
    const dir_node_t *p[3];
    ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 0, NULL, &rng, p, &err), 0);
    ck_assert_str_eq(p[0]->nickname, "r5"); /* no Guard flag: allowed */
    ck_assert(!strcmp(p[1]->nickname, "r0") || !strcmp(p[1]->nickname, "r10"));
    ck_assert(!strcmp(p[2]->nickname, "r9") || !strcmp(p[2]->nickname, "r7"));
  }
  /* Port 22 with ExitNodes r9,r7: only r7. Port 443: nobody. */
  const dir_node_t *p[3];
  ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 22, NULL, &rng, p, &err), 0);
  ck_assert_str_eq(p[2]->nickname, "r7");
  ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 443, NULL, &rng, p, &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "port 443"));
  free(err);
  /* Excluding the only entry node: no guard. */
  ck_assert_int_eq(routerset_parse(&cfg.exclude_nodes, "r5", &err), 0);
  ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 0, NULL, &rng, p, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "guard"));
  free(err);
  path_config_clear(&cfg);

  /* MiddleNodes naming a single Guard relay: a drawn guard that takes it
   * (or its family) is drawn again, so every path works. */
  path_config_init(&cfg);
  ck_assert_int_eq(routerset_parse(&cfg.middle_nodes, "r8", &err), 0);
  ck_assert_int_eq(routerset_parse(&cfg.exit_nodes, "r7", &err), 0);
  int r8_guard_possible = 0;
  for (int d = 0; d < 500; d++) {
    ck_assert_msg(path_choose(net.nl, &cfg, 3, 0, NULL, &rng, p, &err) == 0,
                  "path %d: %s", d, err ? err : "?");
    ck_assert_str_eq(p[1]->nickname, "r8");
    ck_assert_str_ne(p[0]->nickname, "r8");
    ck_assert(!dir_nodes_same_family(p[0], p[1]));
  }
  r8_guard_possible = path_node_is_candidate(node(&net, "r8"),
                                             PATH_POS_GUARD, &cfg, 0);
  ck_assert(r8_guard_possible); /* so the redraw was really needed */
  path_config_clear(&cfg);

  /* A given guard is used, and refused when it conflicts. */
  path_config_init(&cfg);
  const dir_node_t *g = node(&net, "r8");
  for (int d = 0; d < 200; d++) {
    ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 80, g, &rng, p, &err), 0);
    ck_assert_ptr_eq(p[0], g);
    ck_assert_str_ne(p[2]->nickname, "r9");
  }
  ck_assert_int_eq(routerset_parse(&cfg.exit_nodes, "r9", &err), 0);
  ck_assert_int_eq(path_choose(net.nl, &cfg, 3, 80, g, &rng, p, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "fits guard r8"));
  free(err);
  ck_assert_int_eq(path_choose(net.nl, &cfg, 9, 80, NULL, &rng, p, &err), -1);
  free(err);
  path_config_clear(&cfg);
  net_free(&net);
}
END_TEST

START_TEST(test_real_network)
{
  size_t len;
  char *t = dirtest_load_fixture("consensus-microdesc", &len);
  consensus_t *c = NULL;
  char *err = NULL;
  ck_assert_int_eq(consensus_parse(t, len, &c, &err), 0);
  free(t);
  t = dirtest_load_fixture("microdescs", &len);
  microdesc_t **mds = NULL;
  int n = 0;
  ck_assert_int_eq(microdesc_parse_many(t, len, &mds, &n, &err), 0);
  free(t);
  dir_nodelist_t *nl = dir_nodelist_build(c, mds, n);
  ck_assert_int_eq(nl->n_with_desc, 7);
  const dir_node_t *r4 = dir_nodelist_find_nickname(nl, "relay4");
  const dir_node_t *r5 = dir_nodelist_find_nickname(nl, "relay5");
  ck_assert(dir_nodes_same_family(r4, r5));
  ck_assert_int_eq(r4->has_ed25519, 1);
  path_config_t cfg;
  path_config_init(&cfg);
  uint64_t seed = 1;
  path_rng_t rng = {test_rng_below, &seed};
  const dir_node_t *p[3];
  /* Everything is on 127.0.0.1: /16 distinctness makes paths
   * impossible, as in tor (TestingTorNetwork turns it off). */
  ck_assert_int_eq(path_choose(nl, &cfg, 3, 0, NULL, &rng, p, &err), -1);
  free(err);
  cfg.enforce_distinct_subnets = 0;
  for (int d = 0; d < 2000; d++) {
    ck_assert_int_eq(path_choose(nl, &cfg, 3, 0, NULL, &rng, p, &err), 0);
    ck_assert(!(in_path(p, 3, "relay4") && in_path(p, 3, "relay5")));
    ck_assert(p[0] != p[1] && p[1] != p[2] && p[0] != p[2]);
  }
  /* The loopback-only exit policy summarises to "reject all". */
  ck_assert_int_eq(path_choose(nl, &cfg, 3, 80, NULL, &rng, p, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "port 80"));
  free(err);
  path_config_clear(&cfg);
  dir_nodelist_free(nl);

  /* UseMicrodescriptors 0: ns consensus + server descriptors. */
  consensus_free(c);
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);
  t = dirtest_load_fixture("consensus-ns", &len);
  ck_assert_int_eq(consensus_parse(t, len, &c, &err), 0);
  free(t);
  t = dirtest_load_fixture("server-all", &len);
  mds = NULL;
  n = 0;
  ck_assert_int_eq(serverdesc_parse_many(t, len, &mds, &n, &err), 0);
  ck_assert_int_ge(n, 7);
  free(t);
  nl = dir_nodelist_build(c, mds, n);
  /* The descriptors the consensus lists were all served (server/all may
   * hold newer ones too). */
  ck_assert_int_eq(nl->n_with_desc, 7);
  r4 = dir_nodelist_find_nickname(nl, "relay4");
  char b64[64];
  base64_encode(b64, sizeof(b64), r4->ntor_key, 32, BASE64_NOPAD);
  ck_assert_str_eq(b64, "YBd0gtYGahiCo15+8O+hhvmnXkumfU/RH9s+ioFioCQ");
  base64_encode(b64, sizeof(b64), r4->ed25519_id, 32, BASE64_NOPAD);
  ck_assert_str_eq(b64, "/TNxM8K2EwK6CG+YAIPpNUZIqwFwOfs0Dmh9XviZNJI");
  ck_assert_mem_eq(r4->desc->rsa_id_digest, r4->rsa_id, 20);
  ck_assert(dir_nodes_same_family(r4, dir_nodelist_find_nickname(nl,
                                                                 "relay5")));
  ck_assert(!policy_summary_allows_any(r4->policy));
  dir_nodelist_free(nl);
  consensus_free(c);
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);
}
END_TEST

/* The extend target made from a node: every identity and key copied, the
 * Ed25519 identity only when the node has one, ntor by default. */
START_TEST(test_node_extend_target)
{
  dir_node_t n;
  memset(&n, 0, sizeof(n));
  n.or_addr.family = AF_INET;
  n.or_addr.port = 9001;
  memset(n.rsa_id, 0x11, sizeof(n.rsa_id));
  memset(n.ntor_key, 0x22, sizeof(n.ntor_key));
  memset(n.ed25519_id, 0x33, sizeof(n.ed25519_id));
  n.has_ntor = 1;
  extend_target_t t;
  memset(&t, 0xee, sizeof(t));
  dir_node_extend_target(&n, &t);
  ck_assert(pc_addr_eq(&t.addr, &n.or_addr, 1));
  ck_assert_mem_eq(t.rsa_id, n.rsa_id, 20);
  ck_assert_mem_eq(t.ntor_key, n.ntor_key, 32);
  ck_assert_int_eq(t.has_ed_id, 0);
  ck_assert_int_eq(t.ed_id[0], 0); /* not stale: cleared */
  ck_assert_uint_eq(t.handshake, HTYPE_NTOR);
  ck_assert_uint_eq(t.cc_request, 0);
  n.has_ed25519 = 1;
  dir_node_extend_target(&n, &t);
  ck_assert_int_eq(t.has_ed_id, 1);
  ck_assert_mem_eq(t.ed_id, n.ed25519_id, 32);
}
END_TEST

Suite *
suite_path(void)
{
  Suite *s = suite_create("path");
  TCase *tc = tcase_create("path");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_nodelist);
  tcase_add_test(tc, test_routerset);
  tcase_add_test(tc, test_weights);
  tcase_add_test(tc, test_distribution);
  tcase_add_test(tc, test_uniform_when_zero);
  tcase_add_test(tc, test_constraints);
  tcase_add_test(tc, test_real_network);
  tcase_add_test(tc, test_required_protocols);
  tcase_add_test(tc, test_protocols_missing);
  tcase_add_test(tc, test_dir_info);
  tcase_add_test(tc, test_node_extend_target);
  suite_add_tcase(s, tc);
  return s;
}
