/* SPDX-License-Identifier: BSD-3-Clause */
/* consensus.c -- parse, verify and time-check v3 consensus documents of
 * the ns and microdesc flavors (see consensus.h).
 *
 * Design: a single pass of the netdoc tokenizer through four sections
 * (preamble, authorities, router status entries, footer), with a small
 * state machine deciding which keywords belong where. Items the spec
 * lists but a client does not need (client-versions, package, shared-rand
 * values, contact, ...) are skipped, as are unknown keywords. Router
 * entries go into one array grown by doubling; their order (ascending
 * RSA identity) is enforced, which also rules out duplicates, and makes
 * consensus_find() a binary search. The digests of the signed portion
 * (from "network-status-version" through the space after the first
 * "directory-signature") are computed during parsing, so verification
 * only does RSA operations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/consensus.h"
#include "feature/dir/netdoc.h"
#include "lib/crypt/digest.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/relay_names.h"
#include "lib/time/timefmt.h"

static const struct {
  const char *name;
  uint32_t bit;
} flag_table[] = {
  {"Authority", RS_FLAG_AUTHORITY}, {"BadExit", RS_FLAG_BADEXIT},
  {"Exit", RS_FLAG_EXIT},           {"Fast", RS_FLAG_FAST},
  {"Guard", RS_FLAG_GUARD},         {"HSDir", RS_FLAG_HSDIR},
  {"MiddleOnly", RS_FLAG_MIDDLEONLY},
  {"NoEdConsensus", RS_FLAG_NOEDCONSENSUS},
  {"Running", RS_FLAG_RUNNING},     {"Stable", RS_FLAG_STABLE},
  {"StaleDesc", RS_FLAG_STALEDESC}, {"V2Dir", RS_FLAG_V2DIR},
  {"Valid", RS_FLAG_VALID},         {"Sybil", RS_FLAG_SYBIL},
};
#define N_FLAGS (sizeof(flag_table) / sizeof(flag_table[0]))

const char *
consensus_flag_name(uint32_t bit)
{
  for (size_t i = 0; i < N_FLAGS; i++)
    if (flag_table[i].bit == bit)
      return flag_table[i].name;
  return NULL;
}

uint32_t
consensus_flag_from_name(const char *s, size_t len)
{
  for (size_t i = 0; i < N_FLAGS; i++)
    if (strlen(flag_table[i].name) == len &&
        !memcmp(flag_table[i].name, s, len))
      return flag_table[i].bit;
  return 0;
}

static void
rs_clear(consensus_rs_t *rs)
{
  free(rs->version);
  free(rs->protocols);
  policy_summary_free(rs->policy);
}

void
consensus_free_(consensus_t *c)
{
  if (!c)
    return;
  for (int i = 0; i < c->n_rs; i++)
    rs_clear(&c->rs[i]);
  free(c->rs);
  free(c->params);
  free(c->bw_weights);
  free(c->required_client_protocols);
  free(c->recommended_client_protocols);
  free(c->voters);
  free(c->sigs);
  free(c);
}

/* Parse "YYYY-MM-DD HH:MM:SS" from arguments i and i+1. */
static int
time_from_args(const netdoc_item_t *it, int i, time_t *out)
{
  if (it->argc < i + 2 || i + 1 >= NETDOC_MAX_ARGV)
    return -1;
  const char *s = it->argv[i].s;
  size_t len = (size_t)(it->argv[i + 1].s + it->argv[i + 1].len - s);
  return time_parse_iso(s, len, out);
}

/* Parse "key=int32" lists (params, bandwidth-weights). */
static int
parse_kv_list(const netdoc_item_t *it, consensus_param_t **out, int *n,
              const char **why)
{
  size_t cur = 0;
  netdoc_arg_t a;
  int cap = 0;
  while (netdoc_arg_iter(it, &cur, &a)) {
    const char *eq = memchr(a.s, '=', a.len);
    if (!eq || eq == a.s || (size_t)(eq - a.s) >= sizeof((*out)->name)) {
      *why = "entry is not KEY=VALUE";
      return -1;
    }
    long long v;
    size_t vlen = a.len - (size_t)(eq - a.s) - 1;
    if (netdoc_parse_int(eq + 1, vlen, INT32_MIN, INT32_MAX, &v) < 0) {
      *why = "value is not a 32-bit integer";
      return -1;
    }
    if (*n >= CONSENSUS_MAX_PARAMS) {
      *why = "too many entries";
      return -1;
    }
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      *out = pc_realloc(*out, (size_t)cap * sizeof(**out));
    }
    consensus_param_t *p = &(*out)[(*n)++];
    memcpy(p->name, a.s, (size_t)(eq - a.s));
    p->name[eq - a.s] = 0;
    p->value = (int32_t)v;
  }
  return 0;
}

enum { SEC_PREAMBLE, SEC_AUTH, SEC_ROUTERS, SEC_FOOTER, SEC_SIGS };

/* Per-entry bookkeeping while parsing a router status entry. */
typedef struct {
  int open;
  int seen_s, seen_w, seen_m, seen_p, seen_v, seen_pr;
  int start_line;
} entry_state_t;

static const char *
finish_entry(consensus_t *c, entry_state_t *es)
{
  if (!es->open)
    return NULL;
  es->open = 0;
  if (!es->seen_s)
    return "router entry without an \"s\" line";
  if (c->flavor == CONSENSUS_FLAVOR_MICRODESC && !es->seen_m)
    return "router entry without an \"m\" line";
  return NULL;
}

int
consensus_parse(const char *doc, size_t len, consensus_t **out, char **err)
{
  *out = NULL;
  *err = NULL;
  if (len > CONSENSUS_MAX_SIZE) {
    *err = pc_asprintf("consensus: document of %zu bytes exceeds the "
                       "%d-byte limit", len, CONSENSUS_MAX_SIZE);
    return -1;
  }
  consensus_t *c = pc_zalloc(sizeof(*c));
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, doc, len);
  int sec = SEC_PREAMBLE;
  int seen_status = 0, seen_va = 0, seen_fu = 0, seen_vu = 0, seen_vd = 0;
  int seen_kf = 0, seen_params = 0, seen_method = 0;
  int rs_cap = 0, sig_cap = 0, voter_cap = 0;
  size_t doc_start = 0, signed_end = 0;
  entry_state_t es = {0};
  const char *why = NULL;
  char *msg = NULL;
  int line = 0;

  int rv = netdoc_next(&r, &it);
  if (rv <= 0) {
    msg = pc_asprintf("consensus: %s", rv < 0 ? r.err : "empty document");
    goto bad;
  }
  if (!netdoc_kw_is(&it, "network-status-version")) {
    msg = pc_strdup("consensus: does not start with network-status-version");
    goto bad;
  }
  doc_start = it.start;
  if (!netdoc_arg_is(&it, 0, "3")) {
    msg = pc_strdup("consensus: network-status-version is not 3");
    goto bad;
  }
  if (it.argc >= 2) {
    if (netdoc_arg_is(&it, 1, "microdesc"))
      c->flavor = CONSENSUS_FLAVOR_MICRODESC;
    else if (netdoc_arg_is(&it, 1, "ns"))
      c->flavor = CONSENSUS_FLAVOR_NS;
    else {
      msg = pc_asprintf("consensus: unsupported flavor \"%.*s\"",
                        (int)(it.argv[1].len > 32 ? 32 : it.argv[1].len),
                        it.argv[1].s);
      goto bad;
    }
  } else {
    c->flavor = CONSENSUS_FLAVOR_NS;
  }

  for (;;) {
    line = r.line_no;
    rv = netdoc_next(&r, &it);
    if (rv < 0) {
      msg = pc_asprintf("consensus: %s", r.err);
      goto bad;
    }
    if (rv == 0)
      break;
#define KW(x) netdoc_kw_is(&it, x)
#define BAD(...)                                                              \
  do {                                                                        \
    char *m_ = pc_asprintf(__VA_ARGS__);                                      \
    msg = pc_asprintf("consensus: line %d: %s", line, m_);                    \
    free(m_);                                                                 \
    goto bad;                                                                 \
  } while (0)
    /* Section transitions. */
    if (KW("dir-source") && sec <= SEC_AUTH) {
      sec = SEC_AUTH;
    } else if (KW("r") && sec <= SEC_ROUTERS) {
      sec = SEC_ROUTERS;
    } else if ((KW("directory-footer") || KW("bandwidth-weights")) &&
               sec <= SEC_FOOTER) {
      if ((why = finish_entry(c, &es)))
        BAD("%s", why);
      sec = SEC_FOOTER;
    } else if (KW("directory-signature")) {
      if ((why = finish_entry(c, &es)))
        BAD("%s", why);
      if (sec != SEC_SIGS) {
        signed_end = it.start + strlen("directory-signature") + 1;
        if (signed_end > len || doc[signed_end - 1] != ' ')
          BAD("malformed directory-signature line");
      }
      sec = SEC_SIGS;
    } else if (sec == SEC_SIGS) {
      BAD("unexpected \"%.*s\" after the signatures",
          (int)(it.kw_len > 32 ? 32 : it.kw_len), it.kw);
    }

    if (sec == SEC_PREAMBLE) {
      if (KW("vote-status")) {
        if (seen_status++)
          BAD("duplicate vote-status");
        if (!netdoc_arg_is(&it, 0, "consensus"))
          BAD("vote-status is not \"consensus\"");
      } else if (KW("consensus-method")) {
        long long v;
        if (seen_method++ || it.argc != 1 ||
            netdoc_parse_int(it.argv[0].s, it.argv[0].len, 1, 100000, &v) <
              0)
          BAD("malformed or duplicate consensus-method");
        c->consensus_method = (int)v;
      } else if (KW("valid-after") || KW("fresh-until") ||
                 KW("valid-until")) {
        int *seen = KW("valid-after") ? &seen_va
                    : KW("fresh-until") ? &seen_fu : &seen_vu;
        time_t *t = KW("valid-after") ? &c->valid_after
                    : KW("fresh-until") ? &c->fresh_until : &c->valid_until;
        if ((*seen)++)
          BAD("duplicate %.*s", (int)it.kw_len, it.kw);
        if (time_from_args(&it, 0, t) < 0)
          BAD("malformed time in %.*s", (int)it.kw_len, it.kw);
      } else if (KW("voting-delay")) {
        long long a, b;
        if (seen_vd++ || it.argc < 2 ||
            netdoc_parse_int(it.argv[0].s, it.argv[0].len, 0, 86400, &a) <
              0 ||
            netdoc_parse_int(it.argv[1].s, it.argv[1].len, 0, 86400, &b) < 0)
          BAD("malformed or duplicate voting-delay");
        c->vote_seconds = (int)a;
        c->dist_seconds = (int)b;
      } else if (KW("known-flags")) {
        if (seen_kf++)
          BAD("duplicate known-flags");
        size_t cur = 0;
        netdoc_arg_t a;
        while (netdoc_arg_iter(&it, &cur, &a))
          c->known_flags |= consensus_flag_from_name(a.s, a.len);
      } else if (KW("required-client-protocols") ||
                 KW("recommended-client-protocols")) {
        char **slot = KW("required-client-protocols")
                          ? &c->required_client_protocols
                          : &c->recommended_client_protocols;
        if (*slot)
          BAD("duplicate %.*s", (int)it.kw_len, it.kw);
        *slot = pc_strndup(it.args, it.args_len > 1024 ? 1024 : it.args_len);
      } else if (KW("params")) {
        if (seen_params++)
          BAD("duplicate params");
        if (parse_kv_list(&it, &c->params, &c->n_params, &why) < 0)
          BAD("params: %s", why);
      } else if (KW("network-status-version")) {
        BAD("duplicate network-status-version");
      }
      continue;
    }

    if (sec == SEC_AUTH) {
      if (KW("dir-source")) {
        if (c->n_voters >= CONSENSUS_MAX_VOTERS)
          BAD("too many dir-source lines");
        if (it.argc < 6)
          BAD("dir-source needs 6 arguments");
        if (c->n_voters == voter_cap) {
          voter_cap = voter_cap ? voter_cap * 2 : 8;
          c->voters = pc_realloc(c->voters,
                                 (size_t)voter_cap * sizeof(*c->voters));
        }
        consensus_voter_t *v = &c->voters[c->n_voters];
        memset(v, 0, sizeof(*v));
        long long dp, op;
        pc_addr_t a;
        char ip[64];
        if (it.argv[0].len >= sizeof(v->nickname) + 7 ||
            netdoc_parse_hex_exact(it.argv[1].s, it.argv[1].len, v->v3ident,
                                   20) < 0 ||
            netdoc_arg_copy(&it, 2, v->address, sizeof(v->address)) < 0 ||
            netdoc_arg_copy(&it, 3, ip, sizeof(ip)) < 0 ||
            pc_addr_parse_ip(&a, ip, 0) < 0 || a.family != AF_INET ||
            netdoc_parse_int(it.argv[4].s, it.argv[4].len, 0, 65535, &dp) <
              0 ||
            netdoc_parse_int(it.argv[5].s, it.argv[5].len, 0, 65535, &op) < 0)
          BAD("malformed dir-source");
        size_t nl = it.argv[0].len;
        if (nl > 7 && !memcmp(it.argv[0].s + nl - 7, "-legacy", 7)) {
          v->is_legacy = 1;
          nl -= 7;
        }
        if (nl >= sizeof(v->nickname))
          BAD("malformed dir-source nickname");
        memcpy(v->nickname, it.argv[0].s, nl);
        v->ipv4 = pc_addr_ipv4_h(&a);
        v->dir_port = (uint16_t)dp;
        v->or_port = (uint16_t)op;
        c->n_voters++;
      }
      continue; /* contact, vote-digest, others */
    }

    if (sec == SEC_ROUTERS) {
      if (KW("r")) {
        if ((why = finish_entry(c, &es)))
          BAD("%s", why);
        int want = c->flavor == CONSENSUS_FLAVOR_NS ? 8 : 7;
        if (it.argc < want)
          BAD("\"r\" line needs %d arguments", want);
        if (c->n_rs >= CONSENSUS_MAX_ROUTERS)
          BAD("more than %d routers", CONSENSUS_MAX_ROUTERS);
        if (c->n_rs == rs_cap) {
          rs_cap = rs_cap ? rs_cap * 2 : 64;
          c->rs = pc_realloc(c->rs, (size_t)rs_cap * sizeof(*c->rs));
        }
        consensus_rs_t *rs = &c->rs[c->n_rs];
        memset(rs, 0, sizeof(*rs));
        c->n_rs++; /* owned from now on (freed on error) */
        if (!pc_nickname_ok(it.argv[0].s, it.argv[0].len))
          BAD("bad nickname in \"r\" line");
        memcpy(rs->nickname, it.argv[0].s, it.argv[0].len);
        if (netdoc_parse_b64_exact(it.argv[1].s, it.argv[1].len, rs->rsa_id,
                                   20) < 0)
          BAD("bad identity in \"r\" line");
        int k = 2;
        if (c->flavor == CONSENSUS_FLAVOR_NS) {
          if (netdoc_parse_b64_exact(it.argv[2].s, it.argv[2].len,
                                     rs->digest, 20) < 0)
            BAD("bad descriptor digest in \"r\" line");
          rs->has_digest = 1;
          k = 3;
        }
        time_t pub;
        if (time_from_args(&it, k, &pub) < 0)
          BAD("bad publication time in \"r\" line");
        char ip[20];
        pc_addr_t a;
        long long orp, dirp;
        if (netdoc_arg_copy(&it, k + 2, ip, sizeof(ip)) < 0 ||
            pc_addr_parse_ip(&a, ip, 0) < 0 || a.family != AF_INET)
          BAD("bad IPv4 address in \"r\" line");
        if (netdoc_parse_int(it.argv[k + 3].s, it.argv[k + 3].len, 1, 65535,
                             &orp) < 0 ||
            netdoc_parse_int(it.argv[k + 4].s, it.argv[k + 4].len, 0, 65535,
                             &dirp) < 0)
          BAD("bad port in \"r\" line");
        rs->ipv4 = pc_addr_ipv4_h(&a);
        rs->or_port = (uint16_t)orp;
        rs->dir_port = (uint16_t)dirp;
        if (c->n_rs > 1 &&
            memcmp(c->rs[c->n_rs - 2].rsa_id, rs->rsa_id, 20) >= 0)
          BAD("router entries not sorted by identity (or duplicate)");
        memset(&es, 0, sizeof(es));
        es.open = 1;
        es.start_line = line;
        continue;
      }
      if (!es.open)
        BAD("\"%.*s\" outside a router entry",
            (int)(it.kw_len > 32 ? 32 : it.kw_len), it.kw);
      consensus_rs_t *rs = &c->rs[c->n_rs - 1];
      if (KW("s")) {
        if (es.seen_s++)
          BAD("duplicate \"s\" line");
        size_t cur = 0;
        netdoc_arg_t a;
        while (netdoc_arg_iter(&it, &cur, &a))
          rs->flags |= consensus_flag_from_name(a.s, a.len);
      } else if (KW("a")) {
        if (!rs->has_ipv6 && it.argc >= 1 && it.argv[0].len < 64 &&
            it.argv[0].s[0] == '[') {
          char buf[64];
          pc_addr_t a;
          netdoc_arg_copy(&it, 0, buf, sizeof(buf));
          if (pc_addr_parse(&a, buf) == 0 && a.family == AF_INET6 &&
              a.port != 0) {
            rs->ipv6_or = a;
            rs->has_ipv6 = 1;
          }
        }
      } else if (KW("w")) {
        if (es.seen_w++)
          BAD("duplicate \"w\" line");
        size_t cur = 0;
        netdoc_arg_t a;
        while (netdoc_arg_iter(&it, &cur, &a)) {
          long long v;
          if (a.len > 10 && !memcmp(a.s, "Bandwidth=", 10)) {
            if (netdoc_parse_int(a.s + 10, a.len - 10, 0, UINT32_MAX, &v) <
                0)
              BAD("bad Bandwidth= value");
            rs->bandwidth = (uint32_t)v;
            rs->has_bandwidth = 1;
          } else if (a.len == 12 && !memcmp(a.s, "Unmeasured=1", 12)) {
            rs->bw_unmeasured = 1;
          }
        }
      } else if (KW("v")) {
        if (es.seen_v++)
          BAD("duplicate \"v\" line");
        rs->version = pc_strndup(it.args, it.args_len > 128 ? 128
                                                            : it.args_len);
      } else if (KW("pr")) {
        if (es.seen_pr++)
          BAD("duplicate \"pr\" line");
        rs->protocols = pc_strndup(it.args, it.args_len > 1024
                                              ? 1024 : it.args_len);
      } else if (KW("p")) {
        if (es.seen_p++)
          BAD("duplicate \"p\" line");
        if (it.argc < 2)
          BAD("\"p\" line needs 2 arguments");
        const char *pe = NULL;
        rs->policy = policy_summary_parse(it.argv[0].s, it.argv[0].len,
                                          it.argv[1].s, it.argv[1].len, &pe);
        if (!rs->policy)
          BAD("bad \"p\" line: %s", pe);
      } else if (KW("m")) {
        if (c->flavor == CONSENSUS_FLAVOR_MICRODESC) {
          if (es.seen_m++)
            BAD("duplicate \"m\" line");
          if (it.argc < 1 || netdoc_parse_b64_exact(it.argv[0].s,
                                                    it.argv[0].len,
                                                    rs->digest, 32) < 0)
            BAD("bad microdescriptor digest in \"m\" line");
          rs->has_digest = 1;
        }
      }
      continue;
    }

    if (sec == SEC_FOOTER) {
      if (KW("bandwidth-weights")) {
        if (c->has_bw_weights++)
          BAD("duplicate bandwidth-weights");
        if (parse_kv_list(&it, &c->bw_weights, &c->n_bw_weights, &why) < 0)
          BAD("bandwidth-weights: %s", why);
        c->has_bw_weights = 1;
      }
      continue;
    }

    /* SEC_SIGS: a directory-signature item. */
    {
      if (c->n_sigs >= CONSENSUS_MAX_SIGS)
        BAD("too many signatures");
      if (it.argc < 2)
        BAD("directory-signature needs at least 2 arguments");
      if (c->n_sigs == sig_cap) {
        sig_cap = sig_cap ? sig_cap * 2 : 8;
        c->sigs = pc_realloc(c->sigs, (size_t)sig_cap * sizeof(*c->sigs));
      }
      consensus_sig_t *s = &c->sigs[c->n_sigs];
      memset(s, 0, sizeof(*s));
      int k = 0;
      s->alg = CONSENSUS_SIG_SHA1;
      if (it.argc >= 3) {
        if (netdoc_arg_is(&it, 0, "sha1"))
          s->alg = CONSENSUS_SIG_SHA1;
        else if (netdoc_arg_is(&it, 0, "sha256"))
          s->alg = CONSENSUS_SIG_SHA256;
        else
          s->alg = CONSENSUS_SIG_UNKNOWN;
        k = 1;
      }
      if (netdoc_parse_hex_exact(it.argv[k].s, it.argv[k].len, s->identity,
                                 20) < 0 ||
          netdoc_parse_hex_exact(it.argv[k + 1].s, it.argv[k + 1].len,
                                 s->signing_key_digest, 20) < 0)
        BAD("malformed directory-signature digests");
      if (!netdoc_obj_is(&it, "SIGNATURE"))
        BAD("directory-signature without a SIGNATURE object");
      long n = netdoc_obj_decode(&it, s->sig, sizeof(s->sig));
      if (n <= 0)
        BAD("malformed or oversized signature object");
      s->sig_len = (size_t)n;
      c->n_sigs++;
    }
#undef KW
#undef BAD
  }

  if (sec != SEC_SIGS || c->n_sigs == 0) {
    msg = pc_strdup("consensus: truncated (no directory-signature)");
    goto bad;
  }
  if (!seen_status || !seen_va || !seen_fu || !seen_vu || !seen_vd ||
      !seen_kf) {
    msg = pc_asprintf("consensus: missing %s",
                      !seen_status ? "vote-status"
                      : !seen_va   ? "valid-after"
                      : !seen_fu   ? "fresh-until"
                      : !seen_vu   ? "valid-until"
                      : !seen_vd   ? "voting-delay"
                                   : "known-flags");
    goto bad;
  }
  if (!(c->valid_after <= c->fresh_until && c->fresh_until <= c->valid_until &&
        c->valid_after < c->valid_until)) {
    msg = pc_strdup("consensus: valid-after, fresh-until and valid-until "
                    "are not in order");
    goto bad;
  }
  crypt_sha1(c->digest_sha1, doc + doc_start, signed_end - doc_start);
  crypt_sha256(c->digest_sha256, doc + doc_start, signed_end - doc_start);
  *out = c;
  return 0;
bad:
  consensus_free(c);
  *err = msg;
  return -1;
}

static void
hex_of(const uint8_t id[20], char out[41])
{
  base16_encode(out, 41, id, 20, BASE16_UPPER);
}

int
consensus_verify(const consensus_t *c, const dir_authority_t *auths,
                 int n_auths, dir_keycert_t *const *certs, int n_certs,
                 time_t now, consensus_verify_info_t *info, char **err)
{
  consensus_verify_info_t local;
  if (!info)
    info = &local;
  memset(info, 0, sizeof(*info));
  *err = NULL;
  int good[CONSENSUS_MAX_SIGS] = {0}; /* per authority index (capped) */
  int missing[CONSENSUS_MAX_SIGS] = {0};
  int n_v3 = 0;
  for (int a = 0; a < n_auths; a++)
    if (auths[a].has_v3ident && !auths[a].is_bridge_auth)
      n_v3++;
  info->n_authorities = n_v3;
  info->n_needed = n_v3 / 2 + 1;
  if (n_v3 == 0) {
    *err = pc_strdup("no directory authorities with a v3ident configured");
    return CONSENSUS_VERIFY_BAD;
  }
  if (n_auths > CONSENSUS_MAX_SIGS) {
    *err = pc_strdup("too many directory authorities configured");
    return CONSENSUS_VERIFY_BAD;
  }
  char problems[512] = "";
  size_t plen = 0;
  for (int i = 0; i < c->n_sigs; i++) {
    const consensus_sig_t *s = &c->sigs[i];
    if (s->alg == CONSENSUS_SIG_UNKNOWN)
      continue;
    int a;
    for (a = 0; a < n_auths; a++)
      if (auths[a].has_v3ident && !auths[a].is_bridge_auth &&
          !memcmp(auths[a].v3ident, s->identity, 20))
        break;
    if (a == n_auths) {
      info->n_unknown++; /* signed by a key we were not told to trust */
      continue;
    }
    if (good[a])
      continue; /* already counted */
    const dir_keycert_t *cert = NULL;
    for (int k = 0; k < n_certs; k++) {
      if (!memcmp(certs[k]->id_digest, s->identity, 20) &&
          !memcmp(certs[k]->signing_key_digest, s->signing_key_digest, 20)) {
        char *te = NULL;
        if (dir_keycert_check_time(certs[k], now, &te) == 0) {
          cert = certs[k];
          break;
        }
        free(te);
      }
    }
    char hex[41];
    hex_of(s->identity, hex);
    if (!cert) {
      missing[a] = 1;
      if (plen < sizeof(problems) - 80)
        plen += (size_t)snprintf(problems + plen, sizeof(problems) - plen,
                                 "; no valid certificate for %s", hex);
      continue;
    }
    const uint8_t *d = s->alg == CONSENSUS_SIG_SHA1 ? c->digest_sha1
                                                    : c->digest_sha256;
    size_t dlen = s->alg == CONSENSUS_SIG_SHA1 ? 20 : 32;
    if (crypt_rsa_verify_raw(cert->signing_key, d, dlen, s->sig,
                             s->sig_len) == 0) {
      good[a] = 1;
      missing[a] = 0;
    } else {
      info->n_bad++;
      if (plen < sizeof(problems) - 80)
        plen += (size_t)snprintf(problems + plen, sizeof(problems) - plen,
                                 "; bad signature by %s", hex);
    }
  }
  for (int a = 0; a < n_auths; a++) {
    info->n_good += good[a];
    if (missing[a] && !good[a] &&
        info->n_missing_cert < CONSENSUS_MAX_SIGS)
      memcpy(info->missing_cert[info->n_missing_cert++], auths[a].v3ident,
             20);
  }
  if (info->n_good >= info->n_needed)
    return CONSENSUS_VERIFY_OK;
  char unknown[96] = "";
  if (info->n_unknown)
    snprintf(unknown, sizeof(unknown),
             "; %d signature%s by authorities not configured (no "
             "DirAuthority with that v3ident)",
             info->n_unknown, info->n_unknown == 1 ? "" : "s");
  *err = pc_asprintf("consensus has %d good signature%s from %d "
                     "authorit%s, need %d%s%s",
                     info->n_good, info->n_good == 1 ? "" : "s",
                     n_v3, n_v3 == 1 ? "y" : "ies", info->n_needed,
                     problems, unknown);
  if (info->n_good + info->n_missing_cert >= info->n_needed)
    return CONSENSUS_VERIFY_NEED_CERTS;
  return CONSENSUS_VERIFY_BAD;
}

int
consensus_check_time(const consensus_t *c, time_t now, char **err)
{
  char t[TIME_ISO_LEN + 1];
  *err = NULL;
  if (now + CONSENSUS_FUTURE_SKEW < c->valid_after) {
    time_format_iso(t, c->valid_after);
    *err = pc_asprintf("consensus is not valid until %s, more than a day "
                       "from now: is our clock wrong?", t);
    return -1;
  }
  if (now + CONSENSUS_EARLY_WARN < c->valid_after) {
    time_format_iso(t, c->valid_after);
    log_warn("The consensus becomes valid only at %s (UTC): our clock may "
             "be behind.", t);
  }
  if (now <= c->valid_until)
    return 0;
  if (now <= c->valid_until + CONSENSUS_REASONABLY_LIVE)
    return 1;
  time_format_iso(t, c->valid_until);
  *err = pc_asprintf("consensus expired at %s, more than a day ago", t);
  return -1;
}

int32_t
consensus_get_param(const consensus_t *c, const char *name, int32_t dflt,
                    int32_t min, int32_t max)
{
  for (int i = 0; i < c->n_params; i++)
    if (!strcmp(c->params[i].name, name)) {
      int32_t v = c->params[i].value;
      return (v < min || v > max) ? dflt : v;
    }
  return dflt;
}

int32_t
consensus_get_bw_weight(const consensus_t *c, const char *name, int32_t dflt)
{
  for (int i = 0; i < c->n_bw_weights; i++)
    if (!strcmp(c->bw_weights[i].name, name))
      return c->bw_weights[i].value;
  return dflt;
}

const consensus_rs_t *
consensus_find(const consensus_t *c, const uint8_t rsa_id[20])
{
  int lo = 0, hi = c->n_rs - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int cmp = memcmp(rsa_id, c->rs[mid].rsa_id, 20);
    if (cmp == 0)
      return &c->rs[mid];
    if (cmp < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}
