/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_client.c -- directory client state, cache and fetch rounds (see
 * dir_client.h).
 *
 * Design: a fetch round is a small state machine (CONSENSUS -> CERTS ->
 * DESCS -> done) driven by HTTP completions; exactly one request is in
 * flight at a time, which keeps the code simple and is plenty for a
 * relay or a test client (a round on the public network is one consensus
 * plus a few dozen descriptor batches). Every request walks its sources
 * in a fresh order -- with fetch_from_caches and a consensus, a few
 * directory caches (weighted random draw) reached over BEGIN_DIR
 * (dir_tunnel), then the authorities' DirPorts in random order -- and
 * moves to the next one on any failure. Both transports report through
 * the same callback with the same parsed answer, so nothing after the
 * transport knows which one was used. A step that fails on every source
 * ends that step (the round goes on with what it has); descriptors that
 * no source served are remembered for the rest of the round so it always
 * terminates.
 *
 * Documents are verified before anything is replaced; the cache files are
 * written only with verified data (the consensus as received, certificates
 * and descriptors re-serialised from their received text).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_client.h"
#include "feature/dir/dir_http.h"
#include "feature/dir/dir_keycert.h"
#include "feature/dir/dir_tunnel.h"
#include "feature/dir/microdesc.h"
#include "feature/dir/serverdesc.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/time/clock.h"
#include "lib/time/timefmt.h"

#define MAX_CERTS_BODY (1024 * 1024)
#define MAX_DESCS_BODY (16 * 1024 * 1024)
#define MAX_AUTH 64

enum { STEP_CONSENSUS, STEP_CERTS, STEP_DESCS, STEP_DONE };

struct dir_client_t {
  evloop_t *loop;
  char *data_dir;
  dir_authority_t *auths;
  int n_auths;
  int use_md;
  uint64_t timeout_ms;
  int eager;
  int from_caches;

  dir_keycert_t **certs;
  int n_certs;
  consensus_t *cons;
  time_t next_cons_fetch;
  consensus_t *pending; /* verified except for missing certificates */
  char *pending_text;
  size_t pending_len;
  microdesc_t **descs;
  int n_descs;
  dir_nodelist_t *nl;

  /* The current round. */
  int fetching;
  int step;
  dir_http_req_t *req;
  dir_tunnel_req_t *treq;
  /* Sources of the current request, in the order they are tried: an
   * index >= 0 is an authority, -1 - k is caches[k]. */
  int order[MAX_AUTH + DIR_CLIENT_MAX_CACHES];
  int n_order, next_try;
  struct {
    extend_target_t target;
    char nickname[20];
  } caches[DIR_CLIENT_MAX_CACHES];
  uint8_t (*batch)[32];
  int n_batch;
  uint8_t (*given_up)[32];
  int n_given_up;
  int round_failed; /* a step failed on every authority */
  dir_client_done_fn cb;
  void *cb_arg;
  evloop_deferred_t *kick;

  /* Automatic mode. */
  int auto_mode;
  evloop_timer_t *auto_timer;
  dir_client_done_fn auto_cb;
  void *auto_arg;
  int backoff_secs;

  char last_err[512];
  dir_client_stats_t stats;
};

static void set_err(dir_client_t *dc, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void
set_err(dir_client_t *dc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dc->last_err, sizeof(dc->last_err), fmt, ap);
  va_end(ap);
}

static const char *
cons_file(const dir_client_t *dc)
{
  return dc->use_md ? "cached-microdesc-consensus" : "cached-consensus";
}

static const char *
descs_file(const dir_client_t *dc)
{
  return dc->use_md ? "cached-microdescs" : "cached-descriptors";
}

static int
write_cache(dir_client_t *dc, const char *name, const void *data, size_t len)
{
  char *path = fs_path_join(dc->data_dir, name);
  int r = fs_write_file_atomic(path, data, len, 0600);
  if (r < 0)
    log_warn("Cannot write %s: %s", path, strerror(-r));
  free(path);
  return r;
}

/* ---- state changes ---- */

static void
rebuild_nodelist(dir_client_t *dc)
{
  int had_all = dc->nl && dc->nl->n_with_desc == dc->nl->n_nodes;
  dir_nodelist_free(dc->nl);
  if (!dc->cons)
    return;
  dc->nl = dir_nodelist_build(dc->cons, dc->descs, dc->n_descs);
  /* Once per gap filled: scripts wait for this line. */
  if (!had_all && dc->nl->n_nodes && dc->nl->n_with_desc == dc->nl->n_nodes)
    log_info("We have the descriptors of all %d relays in the consensus.",
             dc->nl->n_nodes);
}

static void
save_certs(dir_client_t *dc)
{
  size_t total = 0;
  for (int i = 0; i < dc->n_certs; i++)
    total += dc->certs[i]->text_len + 1;
  char *buf = pc_malloc(total + 1);
  size_t off = 0;
  for (int i = 0; i < dc->n_certs; i++) {
    memcpy(buf + off, dc->certs[i]->text, dc->certs[i]->text_len);
    off += dc->certs[i]->text_len;
    if (off == 0 || buf[off - 1] != '\n')
      buf[off++] = '\n';
  }
  write_cache(dc, "cached-certs", buf, off);
  free(buf);
}

/* Keep only descriptors the consensus lists, then save them. */
static void
prune_and_save_descs(dir_client_t *dc)
{
  if (!dc->nl)
    return;
  int keep = 0;
  for (int i = 0; i < dc->n_descs; i++) {
    int used = 0;
    for (int k = 0; k < dc->nl->n_nodes && !used; k++)
      used = dc->nl->nodes[k].desc == dc->descs[i];
    if (used)
      dc->descs[keep++] = dc->descs[i];
    else
      microdesc_free(dc->descs[i]);
  }
  dc->n_descs = keep;
  rebuild_nodelist(dc);
  size_t total = 0;
  for (int i = 0; i < dc->n_descs; i++)
    total += dc->descs[i]->text_len;
  char *buf = pc_malloc(total + 1);
  size_t off = 0;
  for (int i = 0; i < dc->n_descs; i++) {
    memcpy(buf + off, dc->descs[i]->text, dc->descs[i]->text_len);
    off += dc->descs[i]->text_len;
  }
  write_cache(dc, descs_file(dc), buf, off);
  free(buf);
}

static void
schedule_next_consensus(dir_client_t *dc)
{
  const consensus_t *c = dc->cons;
  if (dc->eager) {
    dc->next_cons_fetch = c->fresh_until;
    return;
  }
  /* dir-spec 5.1: uniformly between 3/4 of an interval after fresh-until
   * and 7/8 of the remaining time to valid-until. */
  time_t interval = c->fresh_until - c->valid_after;
  time_t start = c->fresh_until + interval * 3 / 4;
  if (start >= c->valid_until) {
    dc->next_cons_fetch = c->fresh_until;
    return;
  }
  time_t span = (c->valid_until - start) * 7 / 8;
  dc->next_cons_fetch =
    start + (span > 0 ? (time_t)crypt_rand_u64_below((uint64_t)span + 1)
                      : 0);
}

static void
accept_consensus(dir_client_t *dc, consensus_t *c, const char *text,
                 size_t len, const char *source, int from_cache)
{
  consensus_free(dc->cons);
  dc->cons = c;
  schedule_next_consensus(dc);
  rebuild_nodelist(dc);
  char va[TIME_ISO_LEN + 1], vu[TIME_ISO_LEN + 1];
  time_format_iso(va, c->valid_after);
  time_format_iso(vu, c->valid_until);
  log_notice("%s a %s consensus from %s: valid-after %s, valid-until %s, "
             "%d relays.", from_cache ? "Loaded" : "Accepted",
             c->flavor == CONSENSUS_FLAVOR_MICRODESC ? "microdesc" : "ns",
             source, va, vu, c->n_rs);
  if (!from_cache) {
    dc->stats.n_consensus_accepted++;
    write_cache(dc, cons_file(dc), text, len);
  }
}

/* Verify a parsed consensus; take ownership of c. Returns 1 accepted,
 * 0 pending (needs certificates), -1 refused (last_err set). */
static int
consider_consensus(dir_client_t *dc, consensus_t *c, const char *text,
                   size_t len, const char *source, int from_cache)
{
  time_t now = time_approx_now();
  char *err = NULL;
  if ((c->flavor == CONSENSUS_FLAVOR_MICRODESC) != (dc->use_md != 0)) {
    set_err(dc, "%s: wrong consensus flavor", source);
    consensus_free(c);
    return -1;
  }
  if (consensus_check_time(c, now, &err) < 0) {
    set_err(dc, "%s: %s", source, err);
    free(err);
    consensus_free(c);
    return -1;
  }
  if (dc->cons && c->valid_after < dc->cons->valid_after) {
    set_err(dc, "%s: consensus is older than the one we have", source);
    consensus_free(c);
    return -1;
  }
  consensus_verify_info_t info;
  int v = consensus_verify(c, dc->auths, dc->n_auths, dc->certs, dc->n_certs,
                           now, &info, &err);
  if (v == CONSENSUS_VERIFY_OK) {
    free(err);
    accept_consensus(dc, c, text, len, source, from_cache);
    return 1;
  }
  if (v == CONSENSUS_VERIFY_NEED_CERTS) {
    log_info("%s: %s; fetching certificates", source, err);
    free(err);
    consensus_free(dc->pending);
    free(dc->pending_text);
    dc->pending = c;
    dc->pending_text = pc_strndup(text, len);
    dc->pending_len = len;
    return 0;
  }
  /* Signed by too few of our authorities: say so loudly (a client
   * pointed at the wrong network or an attacker's consensus). */
  if (!from_cache)
    log_warn("Refusing a consensus from %s: %s", source, err);
  set_err(dc, "%s: %s", source, err);
  free(err);
  consensus_free(c);
  return -1;
}

/* Add verified certificates that are new and not expired. */
static int
add_certs(dir_client_t *dc, dir_keycert_t **certs, int n, time_t now)
{
  int added = 0;
  for (int i = 0; i < n; i++) {
    dir_keycert_t *c = certs[i];
    char *err = NULL;
    int dup = 0;
    for (int k = 0; k < dc->n_certs && !dup; k++)
      dup = !memcmp(dc->certs[k]->id_digest, c->id_digest, 20) &&
            !memcmp(dc->certs[k]->signing_key_digest, c->signing_key_digest,
                    20);
    if (dup || dir_keycert_check_time(c, now, &err) < 0) {
      if (err)
        log_info("Ignoring a certificate: %s", err);
      free(err);
      dir_keycert_free(c);
      continue;
    }
    dc->certs = pc_realloc(dc->certs,
                           (size_t)(dc->n_certs + 1) * sizeof(*dc->certs));
    dc->certs[dc->n_certs++] = c;
    added++;
  }
  free(certs);
  return added;
}

/* ---- loading ---- */

static char *
read_cache(dir_client_t *dc, const char *name, size_t max, size_t *len)
{
  char *path = fs_path_join(dc->data_dir, name);
  uint8_t *data = NULL;
  int r = fs_read_file(path, max, &data, len);
  if (r < 0 && r != -ENOENT)
    log_warn("Cannot read %s: %s", path, strerror(-r));
  free(path);
  return (char *)data;
}

int
dir_client_load_cache(dir_client_t *dc, time_t now)
{
  size_t len;
  char *err = NULL;
  char *t = read_cache(dc, "cached-certs", MAX_CERTS_BODY, &len);
  if (t) {
    dir_keycert_t **certs = NULL;
    int n = 0;
    if (dir_keycert_parse_all(t, len, &certs, &n, &err) < 0) {
      log_warn("Ignoring cached-certs: %s", err);
      free(err);
      err = NULL;
    }
    int added = add_certs(dc, certs, n, now);
    log_info("Loaded %d authority certificates from the cache.", added);
    free(t);
  }
  t = read_cache(dc, cons_file(dc), CONSENSUS_MAX_SIZE, &len);
  if (t) {
    consensus_t *c = NULL;
    if (consensus_parse(t, len, &c, &err) < 0) {
      set_err(dc, "cached consensus: %s", err);
      free(err);
      err = NULL;
      c = NULL;
    }
    int r = c ? consider_consensus(dc, c, t, len, "the cache", 1) : -1;
    if (r < 0) {
      log_warn("Rejecting the cached consensus in %s/%s: %s", dc->data_dir,
               cons_file(dc), dc->last_err);
      dc->stats.cache_consensus_rejected = 1;
    } else if (r == 0) {
      log_notice("The cached consensus needs authority certificates we "
                 "lack; it will be checked again after fetching them.");
    }
    free(t);
  }
  t = read_cache(dc, descs_file(dc), MAX_DESCS_BODY * 4, &len);
  if (t) {
    microdesc_t **d = NULL;
    int n = 0;
    int r = dc->use_md ? microdesc_parse_many(t, len, &d, &n, &err)
                       : serverdesc_parse_many(t, len, &d, &n, &err);
    if (r < 0) {
      log_warn("Ignoring %s: %s", descs_file(dc), err);
      free(err);
    } else if (r > 0) {
      log_warn("%d malformed entries in %s were skipped.", r,
               descs_file(dc));
    }
    dc->descs = pc_realloc(dc->descs,
                           (size_t)(dc->n_descs + n + 1) * sizeof(*dc->descs));
    if (n > 0)
      memcpy(dc->descs + dc->n_descs, d, (size_t)n * sizeof(*d));
    dc->n_descs += n;
    free(d);
    free(t);
    rebuild_nodelist(dc);
    if (dc->nl)
      log_info("Loaded %d descriptors from the cache; the consensus lists "
               "%d relays, %d with descriptors.", n, dc->nl->n_nodes,
               dc->nl->n_with_desc);
  }
  return dc->cons != NULL;
}

/* ---- construction ---- */

static void kick_cb(void *arg);

dir_client_t *
dir_client_new(evloop_t *loop, const dir_client_config_t *cfg)
{
  dir_client_t *dc = pc_zalloc(sizeof(*dc));
  dc->loop = loop;
  dc->data_dir = pc_strdup(cfg->data_dir ? cfg->data_dir : ".");
  dc->n_auths = cfg->n_auths > MAX_AUTH ? MAX_AUTH : cfg->n_auths;
  dc->auths = pc_calloc(dc->n_auths ? (size_t)dc->n_auths : 1,
                        sizeof(*dc->auths));
  if (dc->n_auths)
    memcpy(dc->auths, cfg->auths, (size_t)dc->n_auths * sizeof(*dc->auths));
  dc->use_md = cfg->use_microdescriptors;
  dc->timeout_ms = cfg->request_timeout_ms ? cfg->request_timeout_ms : 30000;
  dc->eager = cfg->eager_refresh;
  dc->from_caches = cfg->fetch_from_caches;
  if (loop)
    dc->kick = evloop_deferred_new(loop, kick_cb, dc);
  return dc;
}

void
dir_client_free_(dir_client_t *dc)
{
  if (!dc)
    return;
  dir_http_cancel(dc->req);
  dir_tunnel_cancel(dc->treq);
  evloop_deferred_free(dc->kick);
  evloop_timer_free(dc->auto_timer);
  dir_nodelist_free(dc->nl);
  consensus_free(dc->cons);
  consensus_free(dc->pending);
  free(dc->pending_text);
  for (int i = 0; i < dc->n_certs; i++)
    dir_keycert_free(dc->certs[i]);
  free(dc->certs);
  for (int i = 0; i < dc->n_descs; i++)
    microdesc_free(dc->descs[i]);
  free(dc->descs);
  free(dc->batch);
  free(dc->given_up);
  free(dc->auths);
  free(dc->data_dir);
  free(dc);
}

/* ---- fetch rounds ---- */

static void start_step(dir_client_t *dc);

static int
is_authority(const dir_client_t *dc, const uint8_t rsa_id[20])
{
  for (int i = 0; i < dc->n_auths; i++)
    if (!memcmp(dc->auths[i].rsa_id, rsa_id, 20))
      return 1;
  return 0;
}

/* Put up to DIR_CLIENT_MAX_CACHES directory caches at the front of the
 * order: Running, Valid, V2Dir relays with an IPv4 ORPort that are not
 * authorities, drawn without replacement weighted by bandwidth. Returns
 * how many. */
static int
pick_caches(dir_client_t *dc)
{
  const dir_nodelist_t *nl = dc->nl;
  if (!dc->from_caches || !nl || !dc->loop)
    return 0;
  const uint32_t need = RS_FLAG_RUNNING | RS_FLAG_VALID | RS_FLAG_V2DIR;
  int n_cand = 0;
  int *cand = pc_calloc((size_t)nl->n_nodes + 1, sizeof(int));
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if ((n->flags & need) != need || n->or_addr.family != AF_INET ||
        !n->or_addr.port || is_authority(dc, n->rsa_id))
      continue;
    cand[n_cand++] = i;
  }
  int picked = 0;
  while (picked < DIR_CLIENT_MAX_CACHES && n_cand > 0) {
    uint64_t total = 0;
    for (int k = 0; k < n_cand; k++)
      total += (uint64_t)nl->nodes[cand[k]].bandwidth + 1;
    uint64_t x = crypt_rand_u64_below(total);
    int k = 0;
    for (; k < n_cand - 1; k++) {
      uint64_t w = (uint64_t)nl->nodes[cand[k]].bandwidth + 1;
      if (x < w)
        break;
      x -= w;
    }
    const dir_node_t *n = &nl->nodes[cand[k]];
    extend_target_t *t = &dc->caches[picked].target;
    memset(t, 0, sizeof(*t));
    t->addr = n->or_addr;
    memcpy(t->rsa_id, n->rsa_id, 20);
    if (n->has_ed25519 && !(n->flags & RS_FLAG_NOEDCONSENSUS)) {
      t->has_ed_id = 1;
      memcpy(t->ed_id, n->ed25519_id, 32);
    }
    t->handshake = CIRC_HTYPE_FAST;
    snprintf(dc->caches[picked].nickname, sizeof(dc->caches[picked].nickname),
             "%s", n->nickname);
    dc->order[dc->n_order++] = -1 - picked;
    picked++;
    cand[k] = cand[--n_cand];
  }
  free(cand);
  return picked;
}

static void
new_order(dir_client_t *dc)
{
  dc->n_order = 0;
  pick_caches(dc);
  int first_auth = dc->n_order;
  for (int i = 0; i < dc->n_auths; i++)
    if (!dc->auths[i].is_bridge_auth)
      dc->order[dc->n_order++] = i;
  for (int i = dc->n_order - 1; i > first_auth; i--) {
    int j = first_auth + (int)crypt_rand_u64_below((uint64_t)(i - first_auth)
                                                   + 1);
    int t = dc->order[i];
    dc->order[i] = dc->order[j];
    dc->order[j] = t;
  }
  dc->next_try = 0;
}

static void http_done(int status, const uint8_t *body, size_t len,
                      const char *err, void *arg);

/* Send the current step's request to the next authority; 0 if none is
 * left. */
static int
send_request(dir_client_t *dc)
{
  if (dc->next_try >= dc->n_order)
    return 0;
  int src = dc->order[dc->next_try++];
  char *path = NULL;
  size_t max = MAX_DESCS_BODY;
  if (dc->step == STEP_CONSENSUS) {
    path = pc_strdup(dc->use_md
                       ? "/tor/status-vote/current/consensus-microdesc.z"
                       : "/tor/status-vote/current/consensus.z");
    max = CONSENSUS_MAX_SIZE;
  } else if (dc->step == STEP_CERTS) {
    path = pc_strdup("/tor/keys/all.z");
    max = MAX_CERTS_BODY;
  } else {
    size_t cap = 32 + (size_t)dc->n_batch * 45;
    path = pc_malloc(cap);
    size_t off = (size_t)snprintf(path, cap, "%s",
                                  dc->use_md ? "/tor/micro/d/"
                                             : "/tor/server/d/");
    for (int i = 0; i < dc->n_batch; i++) {
      if (i)
        path[off++] = dc->use_md ? '-' : '+';
      if (dc->use_md)
        off += (size_t)base64_encode(path + off, cap - off, dc->batch[i], 32,
                                     BASE64_NOPAD);
      else
        off += (size_t)base16_encode(path + off, cap - off, dc->batch[i], 20,
                                     BASE16_UPPER);
    }
    snprintf(path + off, cap - off, ".z");
  }
  char addr[PC_ADDR_STR_LEN];
  const char *what = strlen(path) > 80 ? "descriptors" : path;
  dc->stats.n_requests++;
  if (src < 0) {
    const extend_target_t *t = &dc->caches[-1 - src].target;
    pc_addr_fmt(&t->addr, addr, sizeof(addr), 1);
    log_info("Fetching %s from directory cache %s (%s) over BEGIN_DIR.",
             what, dc->caches[-1 - src].nickname, addr);
    dc->stats.n_tunnel_requests++;
    dc->treq = dir_tunnel_get(dc->loop, t, path, max, dc->timeout_ms,
                              http_done, dc);
  } else {
    const dir_authority_t *a = &dc->auths[src];
    pc_addr_fmt(&a->dir_addr, addr, sizeof(addr), 1);
    log_info("Fetching %s from %s (%s).", what,
             a->nickname[0] ? a->nickname : addr, addr);
    dc->req = dir_http_get(dc->loop, &a->dir_addr, path, max,
                           dc->timeout_ms, http_done, dc);
  }
  free(path);
  return 1;
}

static const char *
cur_source(dir_client_t *dc, char *buf, size_t len)
{
  int src = dc->order[dc->next_try - 1];
  char addr[PC_ADDR_STR_LEN];
  if (src < 0) {
    pc_addr_fmt(&dc->caches[-1 - src].target.addr, addr, sizeof(addr), 1);
    snprintf(buf, len, "directory cache %s (%s, BEGIN_DIR)",
             dc->caches[-1 - src].nickname, addr);
    return buf;
  }
  const dir_authority_t *a = &dc->auths[src];
  pc_addr_fmt(&a->dir_addr, addr, sizeof(addr), 1);
  snprintf(buf, len, "%s (%s)", a->nickname[0] ? a->nickname : "authority",
           addr);
  return buf;
}

static int
digest_in(uint8_t (*set)[32], int n, const uint8_t d[32])
{
  for (int i = 0; i < n; i++)
    if (!memcmp(set[i], d, 32))
      return 1;
  return 0;
}

/* Handle one answer; returns 1 if the step is satisfied, 0 to try the
 * next authority. */
static int
handle_body(dir_client_t *dc, const char *body, size_t len, const char *src)
{
  char *err = NULL;
  time_t now = time_approx_now();
  if (dc->step == STEP_CONSENSUS) {
    consensus_t *c = NULL;
    if (consensus_parse(body, len, &c, &err) < 0) {
      set_err(dc, "%s: %s", src, err);
      free(err);
      dc->stats.n_consensus_rejected++;
      return 0;
    }
    int r = consider_consensus(dc, c, body, len, src, 0);
    if (r < 0) {
      dc->stats.n_consensus_rejected++;
      return 0;
    }
    return 1;
  }
  if (dc->step == STEP_CERTS) {
    dir_keycert_t **certs = NULL;
    int n = 0;
    if (dir_keycert_parse_all(body, len, &certs, &n, &err) < 0) {
      set_err(dc, "%s: %s", src, err);
      free(err);
      return 0;
    }
    int added = add_certs(dc, certs, n, now);
    dc->stats.n_certs_added += added;
    if (added)
      save_certs(dc);
    if (dc->pending) {
      consensus_t *c = dc->pending;
      char *text = dc->pending_text;
      size_t tl = dc->pending_len;
      dc->pending = NULL;
      dc->pending_text = NULL;
      consensus_verify_info_t info;
      int v = consensus_verify(c, dc->auths, dc->n_auths, dc->certs,
                               dc->n_certs, now, &info, &err);
      if (v == CONSENSUS_VERIFY_OK) {
        accept_consensus(dc, c, text, tl, "an authority", 0);
      } else {
        log_warn("Refusing a consensus after fetching the authorities' "
                 "certificates: %s", err);
        set_err(dc, "consensus refused after fetching certificates: %s",
                err);
        dc->stats.n_consensus_rejected++;
        consensus_free(c);
      }
      free(err);
      free(text);
    }
    return 1;
  }
  /* Descriptors. */
  microdesc_t **d = NULL;
  int n = 0;
  int r = dc->use_md ? microdesc_parse_many(body, len, &d, &n, &err)
                     : serverdesc_parse_many(body, len, &d, &n, &err);
  if (r < 0) {
    set_err(dc, "%s: %s", src, err);
    free(err);
    return 0;
  }
  int added = 0;
  for (int i = 0; i < n; i++) {
    if (!digest_in(dc->batch, dc->n_batch, d[i]->digest)) {
      dc->stats.n_descs_unrequested++;
      microdesc_free(d[i]);
      continue;
    }
    int have = 0;
    for (int k = 0; k < dc->n_descs && !have; k++)
      have = !memcmp(dc->descs[k]->digest, d[i]->digest, 32);
    if (have) {
      microdesc_free(d[i]);
      continue;
    }
    dc->descs = pc_realloc(dc->descs,
                           (size_t)(dc->n_descs + 1) * sizeof(*dc->descs));
    dc->descs[dc->n_descs++] = d[i];
    added++;
  }
  free(d);
  dc->stats.n_descs_added += added;
  if (added) {
    rebuild_nodelist(dc);
    prune_and_save_descs(dc);
  }
  /* What was asked for and not served is given up for this round. */
  for (int i = 0; i < dc->n_batch; i++) {
    int have = 0;
    for (int k = 0; k < dc->n_descs && !have; k++)
      have = !memcmp(dc->descs[k]->digest, dc->batch[i], 32);
    if (!have) {
      dc->given_up = pc_realloc(dc->given_up, (size_t)(dc->n_given_up + 1) *
                                                sizeof(*dc->given_up));
      memcpy(dc->given_up[dc->n_given_up++], dc->batch[i], 32);
    }
  }
  if (added == 0) {
    set_err(dc, "%s served none of the %d descriptors asked for", src,
            dc->n_batch);
    log_info("%s", dc->last_err);
  } else {
    log_info("%s served %d of the %d descriptors asked for.", src, added,
             dc->n_batch);
  }
  return 1;
}

static void
http_done(int status, const uint8_t *body, size_t len, const char *err,
          void *arg)
{
  dir_client_t *dc = arg;
  int tunnelled = dc->treq != NULL;
  dc->req = NULL;
  dc->treq = NULL;
  char src[160];
  cur_source(dc, src, sizeof(src));
  int ok = 0;
  if (status == 200) {
    ok = handle_body(dc, (const char *)body, len, src);
  } else {
    set_err(dc, "%s: %s", src, err ? err : "request failed");
    dc->stats.n_failed_requests++;
  }
  if (!ok && tunnelled)
    dc->stats.n_tunnel_failed++;
  if (!ok) {
    log_info("Directory request failed: %s", dc->last_err);
    if (send_request(dc))
      return;
    /* Rounds are retried with back-off, and early in a network's life
     * (no consensus published yet) failures are normal: a notice. */
    log_notice("Directory fetch step failed on every authority; last "
               "problem: %s", dc->last_err);
    dc->round_failed = 1;
    if (dc->step == STEP_DESCS) {
      for (int i = 0; i < dc->n_batch; i++) {
        dc->given_up = pc_realloc(dc->given_up, (size_t)(dc->n_given_up + 1)
                                                  * sizeof(*dc->given_up));
        memcpy(dc->given_up[dc->n_given_up++], dc->batch[i], 32);
      }
    } else {
      dc->step++;
    }
  } else if (dc->step != STEP_DESCS) {
    dc->step++;
  }
  evloop_deferred_schedule(dc->kick);
}

static void
finish_round(dir_client_t *dc)
{
  dc->fetching = 0;
  char *terr = NULL;
  int live = dc->cons != NULL &&
             consensus_check_time(dc->cons, time_approx_now(), &terr) >= 0;
  if (dc->cons && !live)
    set_err(dc, "%s", terr);
  free(terr);
  if (dc->nl)
    prune_and_save_descs(dc);
  int ok = live && !dc->round_failed && dir_client_n_missing_descs(dc) == 0;
  if (live && dir_client_n_missing_descs(dc) > 0) {
    char prev[sizeof(dc->last_err)];
    memcpy(prev, dc->last_err, sizeof(prev));
    set_err(dc, "%d descriptors could not be fetched%s%s",
            dir_client_n_missing_descs(dc), prev[0] ? "; " : "", prev);
  }
  else if (!dc->cons && !dc->last_err[0])
    set_err(dc, "no usable consensus");
  if (ok)
    dc->last_err[0] = 0;
  dir_client_done_fn cb = dc->cb;
  dc->cb = NULL;
  if (cb)
    cb(dc, ok, dc->cb_arg);
  if (dc->auto_mode) {
    if (dc->auto_cb)
      dc->auto_cb(dc, ok, dc->auto_arg);
    uint64_t delay;
    time_t now = time_approx_now();
    if (ok) {
      dc->backoff_secs = 0;
      delay = dc->next_cons_fetch > now ? (uint64_t)(dc->next_cons_fetch - now)
                                        : 1;
      if (delay > 3600)
        delay = 3600;
    } else {
      dc->backoff_secs = dc->backoff_secs ? dc->backoff_secs * 2 : 5;
      if (dc->backoff_secs > 600)
        dc->backoff_secs = 600;
      delay = (uint64_t)dc->backoff_secs;
    }
    evloop_timer_schedule(dc->auto_timer, delay * 1000000);
  }
}

static void
start_step(dir_client_t *dc)
{
  time_t now = time_approx_now();
  for (;;) {
    if (dc->step == STEP_CONSENSUS) {
      if (!dc->pending && dir_client_consensus_wanted(dc, now)) {
        new_order(dc);
        if (send_request(dc))
          return;
        set_err(dc, "no directory authority to ask");
      }
      dc->step = STEP_CERTS;
    }
    if (dc->step == STEP_CERTS) {
      if (dc->pending) {
        new_order(dc);
        if (send_request(dc))
          return;
      }
      dc->step = STEP_DESCS;
    }
    if (dc->step == STEP_DESCS) {
      if (!dc->nl)
        break;
      dc->n_batch = 0;
      free(dc->batch);
      dc->batch = pc_malloc(DIR_CLIENT_MAX_DESCS_PER_REQUEST * 32);
      const consensus_t *c = dc->cons;
      for (int i = 0; i < dc->nl->n_nodes &&
                      dc->n_batch < DIR_CLIENT_MAX_DESCS_PER_REQUEST;
           i++) {
        if (dc->nl->nodes[i].desc || !c->rs[i].has_digest)
          continue;
        if (digest_in(dc->given_up, dc->n_given_up, c->rs[i].digest) ||
            digest_in(dc->batch, dc->n_batch, c->rs[i].digest))
          continue;
        memcpy(dc->batch[dc->n_batch++], c->rs[i].digest, 32);
      }
      if (dc->n_batch == 0)
        break;
      new_order(dc);
      if (send_request(dc))
        return;
      break;
    }
    break;
  }
  dc->step = STEP_DONE;
  finish_round(dc);
}

static void
kick_cb(void *arg)
{
  dir_client_t *dc = arg;
  if (dc->fetching && !dc->req && !dc->treq)
    start_step(dc);
}

void
dir_client_fetch(dir_client_t *dc, dir_client_done_fn cb, void *arg)
{
  if (!dc->loop) {
    set_err(dc, "no event loop: cannot fetch");
    if (cb)
      cb(dc, 0, arg);
    return;
  }
  if (dc->fetching)
    return;
  dc->fetching = 1;
  dc->step = STEP_CONSENSUS;
  dc->cb = cb;
  dc->cb_arg = arg;
  dc->n_given_up = 0;
  dc->round_failed = 0;
  dc->last_err[0] = 0;
  evloop_deferred_schedule(dc->kick);
}

int
dir_client_is_fetching(const dir_client_t *dc)
{
  return dc->fetching;
}

static void
auto_cb(void *arg)
{
  dir_client_t *dc = arg;
  dir_client_fetch(dc, NULL, NULL);
}

void
dir_client_start_auto(dir_client_t *dc, dir_client_done_fn cb, void *arg)
{
  if (!dc->loop)
    return;
  dc->auto_mode = 1;
  dc->auto_cb = cb;
  dc->auto_arg = arg;
  if (!dc->auto_timer)
    dc->auto_timer = evloop_timer_new(dc->loop, auto_cb, dc);
  dir_client_fetch(dc, NULL, NULL);
}

/* ---- queries ---- */

const consensus_t *
dir_client_consensus(const dir_client_t *dc)
{
  return dc->cons;
}

const dir_nodelist_t *
dir_client_nodelist(const dir_client_t *dc)
{
  return dc->nl;
}

int
dir_client_consensus_wanted(const dir_client_t *dc, time_t now)
{
  return !dc->cons || now >= dc->next_cons_fetch;
}

int
dir_client_n_missing_descs(const dir_client_t *dc)
{
  if (!dc->nl)
    return 0;
  int n = 0;
  for (int i = 0; i < dc->nl->n_nodes; i++)
    if (!dc->nl->nodes[i].desc && dc->cons->rs[i].has_digest)
      n++;
  return n;
}

const char *
dir_client_last_error(const dir_client_t *dc)
{
  return dc->last_err;
}

void
dir_client_get_stats(const dir_client_t *dc, dir_client_stats_t *out)
{
  *out = dc->stats;
}
