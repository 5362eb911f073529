/* SPDX-License-Identifier: BSD-3-Clause */
/* path.c -- bandwidth-weighted path selection with tor's constraints
 * (see path.h for the rules).
 *
 * Design: a draw scans the nodelist once to sum the integer weights of
 * the candidates (weights are computed in 64-bit integers: bandwidth
 * (< 2^32) x W (< 2^31) fits), draws r uniformly below the total with the
 * injectable RNG, and scans again to find the node whose cumulative
 * weight passes r. No allocation per draw. Routersets are small arrays
 * scanned linearly (they hold what an operator typed).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "feature/dir/path.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/malloc/alloc.h"

/* ---- RNG ---- */

static uint64_t
crypto_below(void *arg, uint64_t bound)
{
  (void)arg;
  return crypt_rand_u64_below(bound);
}

path_rng_t
path_rng_crypto(void)
{
  path_rng_t r = {crypto_below, NULL};
  return r;
}

/* ---- routersets ---- */

typedef enum { RSE_ID, RSE_NICK, RSE_ADDR } rse_kind_t;

typedef struct {
  rse_kind_t kind;
  uint8_t id[20];
  char nick[20];
  uint32_t addr, mask; /* host order */
} rse_t;

struct routerset_t {
  int n;
  rse_t *e;
};

static int
legal_nick(const char *s, size_t n)
{
  if (n < 1 || n > 19)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]))
      return 0;
  return 1;
}

static int
parse_entry(rse_t *e, const char *s, size_t n, char **err)
{
  memset(e, 0, sizeof(*e));
  const char *h = s;
  size_t hn = n;
  if (hn && h[0] == '$') {
    h++;
    hn--;
  }
  if (hn >= 40 && (hn == 40 || h[40] == '~' || h[40] == '=') &&
      base16_decode(e->id, 20, h, 40) == 20) {
    e->kind = RSE_ID;
    return 0;
  }
  if (n && s[0] == '{') {
    *err = pc_asprintf("country code %.*s: pctor has no GeoIP database",
                       (int)(n > 10 ? 10 : n), s);
    return -1;
  }
  if (n && isdigit((unsigned char)s[0])) {
    char buf[32];
    if (n >= sizeof(buf))
      goto bad;
    memcpy(buf, s, n);
    buf[n] = 0;
    int bits = 32;
    char *slash = strchr(buf, '/');
    if (slash) {
      *slash = 0;
      char *end;
      long b = strtol(slash + 1, &end, 10);
      if (!slash[1] || *end || b < 0 || b > 32)
        goto bad;
      bits = (int)b;
    }
    pc_addr_t a;
    if (pc_addr_parse_ip(&a, buf, 0) < 0 || a.family != AF_INET)
      goto bad;
    e->kind = RSE_ADDR;
    e->mask = bits == 0 ? 0 : (uint32_t)(0xffffffffu << (32 - bits));
    e->addr = pc_addr_ipv4_h(&a) & e->mask;
    return 0;
  }
  if (legal_nick(s, n)) {
    e->kind = RSE_NICK;
    memcpy(e->nick, s, n);
    return 0;
  }
bad:
  *err = pc_asprintf("\"%.*s\" is not a fingerprint, nickname or IPv4 "
                     "address pattern", (int)(n > 60 ? 60 : n), s);
  return -1;
}

int
routerset_parse(routerset_t **set, const char *list, char **err)
{
  *err = NULL;
  if (!*set)
    *set = pc_zalloc(sizeof(**set));
  routerset_t *rs = *set;
  const char *p = list;
  while (*p) {
    while (*p == ',' || *p == ' ' || *p == '\t')
      p++;
    if (!*p)
      break;
    const char *s = p;
    while (*p && *p != ',' && *p != ' ' && *p != '\t')
      p++;
    if (rs->n >= 10000) {
      *err = pc_strdup("node list too long");
      return -1;
    }
    rse_t e;
    if (parse_entry(&e, s, (size_t)(p - s), err) < 0)
      return -1;
    rs->e = pc_realloc(rs->e, (size_t)(rs->n + 1) * sizeof(*rs->e));
    rs->e[rs->n++] = e;
  }
  return 0;
}

int
routerset_contains(const routerset_t *set, const dir_node_t *n)
{
  if (!set)
    return 0;
  uint32_t a = n->or_addr.family == AF_INET ? pc_addr_ipv4_h(&n->or_addr)
                                            : 0;
  for (int i = 0; i < set->n; i++) {
    const rse_t *e = &set->e[i];
    switch (e->kind) {
    case RSE_ID:
      if (!memcmp(e->id, n->rsa_id, 20))
        return 1;
      break;
    case RSE_NICK:
      if (!strcasecmp(e->nick, n->nickname))
        return 1;
      break;
    case RSE_ADDR:
      if (n->or_addr.family == AF_INET && (a & e->mask) == e->addr)
        return 1;
      break;
    }
  }
  return 0;
}

int
routerset_is_empty(const routerset_t *set)
{
  return !set || set->n == 0;
}

void
routerset_free_(routerset_t *set)
{
  if (!set)
    return;
  free(set->e);
  free(set);
}

/* ---- configuration ---- */

void
path_config_init(path_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->enforce_distinct_subnets = 1;
  cfg->need_fast = 1;
}

void
path_config_clear(path_config_t *cfg)
{
  routerset_free(cfg->entry_nodes);
  routerset_free(cfg->middle_nodes);
  routerset_free(cfg->exit_nodes);
  routerset_free(cfg->exclude_nodes);
}

/* ---- weights ---- */

#define DEFAULT_WEIGHT 10000
#define DEFAULT_BW_KB 20

/* The four weights of a position, indexed by (Guard ? 1 : 0) + (Exit ? 2
 * : 0): unflagged, Guard, Exit, Guard+Exit. Looked up once per draw. */
static void
position_weights(const consensus_t *c, path_position_t pos, int64_t w[4])
{
  static const char *const names[3][4] = {
    {"Wgm", "Wgg", NULL, "Wgd"},
    {"Wmm", "Wmg", "Wme", "Wmd"},
    {"Wem", "Weg", "Wee", "Wed"},
  };
  for (int i = 0; i < 4; i++) {
    const char *n = names[pos][i];
    int32_t v = n ? consensus_get_bw_weight(c, n, DEFAULT_WEIGHT) : 0;
    w[i] = v < 0 ? 0 : v; /* exit-only relays are never guards */
  }
}

/* Integer weight used for draws: bandwidth x W. */
static uint64_t
int_weight_with(const dir_node_t *n, const int64_t w[4])
{
  int guard = (n->flags & RS_FLAG_GUARD) != 0;
  int exit = (n->flags & RS_FLAG_EXIT) && !(n->flags & RS_FLAG_BADEXIT);
  uint64_t bw = n->has_bandwidth ? n->bandwidth : DEFAULT_BW_KB;
  return bw * (uint64_t)w[(guard ? 1 : 0) + (exit ? 2 : 0)];
}

static uint64_t
int_weight(const dir_nodelist_t *nl, const dir_node_t *n,
           path_position_t pos)
{
  int64_t w[4];
  position_weights(nl->consensus, pos, w);
  return int_weight_with(n, w);
}

double
path_node_weight(const dir_nodelist_t *nl, const dir_node_t *n,
                 path_position_t pos)
{
  int32_t scale = consensus_get_param(nl->consensus, "bwweightscale", 10000,
                                      1, INT32_MAX);
  return (double)int_weight(nl, n, pos) / (double)scale;
}

/* The position's own rules (flags, node lists); an exit without ExitNodes
 * needs the Exit flag only when exit_flag is set. */
static int
position_allows(const dir_node_t *n, path_position_t pos,
                const path_config_t *cfg, int exit_flag)
{
  switch (pos) {
  case PATH_POS_GUARD:
    if (n->flags & RS_FLAG_MIDDLEONLY)
      return 0;
    if (!routerset_is_empty(cfg->entry_nodes))
      return routerset_contains(cfg->entry_nodes, n);
    return (n->flags & RS_FLAG_GUARD) != 0;
  case PATH_POS_MIDDLE:
    if (!routerset_is_empty(cfg->middle_nodes))
      return routerset_contains(cfg->middle_nodes, n);
    return 1;
  case PATH_POS_EXIT:
    if (n->flags & (RS_FLAG_BADEXIT | RS_FLAG_MIDDLEONLY))
      return 0;
    if (!routerset_is_empty(cfg->exit_nodes))
      return routerset_contains(cfg->exit_nodes, n);
    return !exit_flag || (n->flags & RS_FLAG_EXIT) != 0;
  }
  return 0;
}

int
path_node_is_candidate(const dir_node_t *n, path_position_t pos,
                       const path_config_t *cfg, int exit_port)
{
  if (!dir_node_is_usable(n) || !dir_node_has_client_protocols(n))
    return 0;
  if (routerset_contains(cfg->exclude_nodes, n))
    return 0;
  if (cfg->need_fast && !(n->flags & RS_FLAG_FAST))
    return 0;
  if (cfg->need_stable && !(n->flags & RS_FLAG_STABLE))
    return 0;
  if (pos == PATH_POS_EXIT && exit_port > 0 &&
      !policy_summary_allows_port(n->policy, (uint16_t)exit_port))
    return 0;
  return position_allows(n, pos, cfg, 0);
}

/* A candidate for pos if we had its descriptor (see path_dir_info). */
static int
dir_info_candidate(const dir_node_t *n, path_position_t pos,
                   const path_config_t *cfg)
{
  if (!(n->flags & RS_FLAG_RUNNING) || !(n->flags & RS_FLAG_VALID))
    return 0;
  if (routerset_contains(cfg->exclude_nodes, n))
    return 0;
  return position_allows(n, pos, cfg, 1);
}

static double
dir_info_fraction(const dir_nodelist_t *nl, path_position_t pos,
                  const path_config_t *cfg)
{
  /* Weights as path choice uses them, plus one so that relays without a
   * bandwidth still count. */
  uint64_t all = 0, have = 0;
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if (!dir_info_candidate(n, pos, cfg))
      continue;
    uint64_t w = int_weight(nl, n, pos) + 1;
    all += w;
    if (n->desc && n->has_ntor)
      have += w;
  }
  return all ? (double)have / (double)all : 1.0;
}

void
path_dir_info(const dir_nodelist_t *nl, const path_config_t *cfg,
              path_dir_info_t *out)
{
  memset(out, 0, sizeof(*out));
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if (!(n->flags & RS_FLAG_RUNNING) || !(n->flags & RS_FLAG_VALID))
      continue;
    out->n_usable++;
    if (n->desc)
      out->n_with_desc++;
  }
  out->f_guard = dir_info_fraction(nl, PATH_POS_GUARD, cfg);
  out->f_mid = dir_info_fraction(nl, PATH_POS_MIDDLE, cfg);
  out->f_exit = dir_info_fraction(nl, PATH_POS_EXIT, cfg);
  out->f_paths = out->f_guard * out->f_mid * out->f_exit;
}

double
path_min_fraction(const dir_nodelist_t *nl, double configured)
{
  if (configured > 0)
    return configured;
  return consensus_get_param(nl->consensus, "min_paths_for_circs_pct", 60,
                             25, 95) /
         100.0;
}

int
path_node_conflicts(const path_config_t *cfg, const dir_node_t *n,
                    const dir_node_t *const *avoid, int n_avoid)
{
  for (int i = 0; i < n_avoid; i++) {
    if (!avoid[i])
      continue;
    if (dir_nodes_same_family(n, avoid[i]))
      return 1; /* includes "the same relay" */
    if (cfg->enforce_distinct_subnets && dir_nodes_same_subnet(n, avoid[i]))
      return 1;
  }
  return 0;
}

const dir_node_t *
path_choose_node(const dir_nodelist_t *nl, path_position_t pos,
                 const path_config_t *cfg, int exit_port,
                 const dir_node_t *const *avoid, int n_avoid,
                 path_rng_t *rng)
{
  /* An internal circuit's last hop is weighted like a middle. */
  path_position_t wpos = (pos == PATH_POS_EXIT && exit_port <= 0)
                           ? PATH_POS_MIDDLE : pos;
  int64_t w[4];
  position_weights(nl->consensus, wpos, w);
  uint64_t total = 0;
  uint64_t n_cand = 0;
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if (!path_node_is_candidate(n, pos, cfg, exit_port) ||
        path_node_conflicts(cfg, n, avoid, n_avoid))
      continue;
    n_cand++;
    total += int_weight_with(n, w);
  }
  if (n_cand == 0)
    return NULL;
  int uniform = (total == 0);
  uint64_t r = rng->below(rng->arg, uniform ? n_cand : total);
  uint64_t acc = 0;
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if (!path_node_is_candidate(n, pos, cfg, exit_port) ||
        path_node_conflicts(cfg, n, avoid, n_avoid))
      continue;
    acc += uniform ? 1 : int_weight_with(n, w);
    if (r < acc)
      return n;
  }
  return NULL; /* not reached */
}

int
path_choose(const dir_nodelist_t *nl, const path_config_t *cfg, int n_hops,
            int exit_port, const dir_node_t *guard, path_rng_t *rng,
            const dir_node_t **out, char **err)
{
  *err = NULL;
  if (n_hops < 2 || n_hops > 8) {
    *err = pc_asprintf("a path has 2 to 8 hops, not %d", n_hops);
    return -1;
  }
  for (int i = 0; i < n_hops; i++)
    out[i] = NULL;
  const dir_node_t *chosen[8] = {NULL};
  int n_chosen = 0;
  if (guard) {
    /* A given guard comes first: the exit must fit around it. */
    if (!path_node_is_candidate(guard, PATH_POS_GUARD, cfg, 0)) {
      *err = pc_asprintf("the given guard %s is not usable as a guard",
                         guard->nickname);
      return -1;
    }
    chosen[n_chosen++] = guard;
  }
  const dir_node_t *exit = path_choose_node(nl, PATH_POS_EXIT, cfg,
                                            exit_port, chosen, n_chosen, rng);
  if (!exit) {
    if (exit_port > 0)
      *err = pc_asprintf("no usable exit allows port %d%s%s", exit_port,
                         guard ? " and fits guard " : "",
                         guard ? guard->nickname : "");
    else
      *err = pc_asprintf("no usable relay for the last hop%s%s",
                         guard ? " that fits guard " : "",
                         guard ? guard->nickname : "");
    return -1;
  }
  chosen[n_chosen++] = exit;
  /* A drawn guard may take the only relay MiddleNodes allows (or its
   * family): then draw another guard, keeping the rejected ones out, a few
   * times. A given guard is not redrawn. */
  int given_guard = guard != NULL;
  const dir_node_t *rejected[8] = {NULL};
  int n_rejected = 0;
  const int n_fixed = n_chosen;
  for (;;) {
    n_chosen = n_fixed;
    if (!given_guard) {
      const dir_node_t *avoid[16];
      int n_avoid = 0;
      for (int k = 0; k < n_chosen; k++)
        avoid[n_avoid++] = chosen[k];
      for (int k = 0; k < n_rejected; k++)
        avoid[n_avoid++] = rejected[k];
      guard = path_choose_node(nl, PATH_POS_GUARD, cfg, 0, avoid, n_avoid,
                               rng);
      if (!guard) {
        *err = pc_asprintf("no usable guard compatible with exit %s%s",
                           exit->nickname,
                           n_rejected ? " that leaves a usable middle" : "");
        return -1;
      }
      chosen[n_chosen++] = guard;
    }
    out[0] = guard;
    out[n_hops - 1] = exit;
    int ok = 1;
    for (int i = 1; i < n_hops - 1; i++) {
      const dir_node_t *m = path_choose_node(nl, PATH_POS_MIDDLE, cfg, 0,
                                             chosen, n_chosen, rng);
      if (!m) {
        *err = pc_asprintf("no usable middle relay for hop %d", i + 1);
        ok = 0;
        break;
      }
      chosen[n_chosen++] = m;
      out[i] = m;
    }
    if (ok) {
      free(*err);
      *err = NULL;
      break;
    }
    for (int k = 0; k < n_hops; k++)
      out[k] = NULL;
    if (given_guard || n_rejected == (int)(sizeof(rejected) /
                                           sizeof(rejected[0])))
      return -1;
    rejected[n_rejected++] = guard;
    free(*err);
    *err = NULL;
  }
  return 0;
}
