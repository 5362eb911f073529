/* SPDX-License-Identifier: BSD-3-Clause */
/* policy.c -- exit policies (see policy.h).
 *
 * Sources: dir-spec 2.1.1 and 2.1.3 (accept/reject lines, exitpattern),
 * 3.4.1 and 3.8.2 (summaries), tor(1) for ExitPolicy,
 * ExitPolicyRejectPrivate, ExitPolicyRejectLocalInterfaces, ExitRelay and
 * the default policy. Where the spec is silent (what exactly is added
 * around the configured lines, which rules are dropped as redundant, how
 * a summary is cut at 1000 characters) this follows tor's behaviour, so
 * that a pctor exit publishes the same policy and summary a tor exit with
 * the same torrc would.
 *
 * Design:
 * - Rules are a flat array of fixed-size exit_policy_rule_t, each for one
 *   family, with host bits cleared at parse time; exit_policy_allows() is
 *   a linear scan with a prefix compare, no allocation.
 * - Building our policy (exit_policy_parse), for an exit:
 *     1. "reject *6:*" unless IPv6Exit;
 *     2. "reject private:*" if ExitPolicyRejectPrivate: 0.0.0.0/8,
 *        169.254.0.0/16, 127.0.0.0/8, 192.168.0.0/16, 10.0.0.0/8,
 *        172.16.0.0/12, [::]/8, [fc00::]/7, [fe80::]/10, [fec0::]/10,
 *        [ff00::]/8, [::]/127 (the list tor(1) gives for "private");
 *     3. "reject ADDR:*" for our advertised addresses (RejectPrivate) and
 *        our local addresses (RejectLocalInterfaces), public ones only,
 *        IPv6 ones only with IPv6Exit; then redundant rules are dropped;
 *     4. the configured entries;
 *     5. EXIT_POLICY_DEFAULT (EXIT_POLICY_REDUCED with ReducedExitPolicy);
 *     6. redundant rules are dropped (remove_redundancies(): rules of a
 *        family after a catch-all of that family; rules covered by an
 *        earlier rule; rules covered by a later rule of the same verb with
 *        no intersecting rule of the other verb in between).
 *   A non-exit's policy is "reject *4:*, reject *6:*". Step 6 changes no
 *   decision, but it does change summaries (reject counts add up), so it
 *   is done exactly as tor does it.
 * - Summaries (exit_policy_summarize), per family: ports start as "not
 *   accepted" with a reject count of 0. In policy order, a reject rule
 *   that is not exactly one of the private netblocks above adds the size
 *   of its address block to the count of its ports (IPv4: 2^(32-bits);
 *   IPv6: in units of /64s, 2^(64-bits), saturating, and blocks smaller
 *   than a /64 count nothing); an accept rule for all addresses (bits 0)
 *   marks its ports accepted if their count is at most the cutoff (2^25
 *   IPv4 addresses -- "two /8s" in dir-spec 3.4.1 -- or one IPv6 /16);
 *   accept rules for fewer addresses are ignored. Then runs of accepted
 *   and not-accepted ports become two port lists, and 3.8.2 picks: no
 *   accepted port gives "reject 1-65535", no rejected port "accept
 *   1-65535", otherwise the shorter list (ties: accept); when both lists
 *   exceed 1000 - strlen("accept ") characters, the accept list is cut at
 *   the last comma before that length. Ports are evaluated on elementary
 *   intervals (between consecutive rule boundaries), which gives the same
 *   result as splitting ranges rule by rule.
 * - Summaries are only written here; reading them back as port sets
 *   (path selection, tests) is feature/dir's policy_summary, the one
 *   implementation of that.
 */
#include "feature/exit/policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/strbuf.h"

struct exit_policy_t {
  int n;
  exit_policy_rule_t *rules;
};

/* ---- small helpers ---- */

static int
addr_bits(int family)
{
  return family == AF_INET ? 32 : 128;
}

/* 1 if the first bits bits of a and b are equal. */
static int
prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
  int whole = bits / 8, rest = bits % 8;
  if (whole && memcmp(a, b, (size_t)whole))
    return 0;
  if (rest) {
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    if ((a[whole] & m) != (b[whole] & m))
      return 0;
  }
  return 1;
}

static void
clear_host_bits(uint8_t *a, int bits, int family)
{
  int nbytes = addr_bits(family) / 8;
  for (int i = 0; i < nbytes; i++) {
    int keep = bits - 8 * i;
    if (keep >= 8)
      continue;
    a[i] &= keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
  }
}

/* ---- the private netblocks ("private"; ignored by summaries) ---- */

static const struct {
  int family;
  uint8_t addr[16];
  uint8_t bits;
} private_nets[] = {
    {AF_INET, {0, 0, 0, 0}, 8},          {AF_INET, {169, 254, 0, 0}, 16},
    {AF_INET, {127, 0, 0, 0}, 8},        {AF_INET, {192, 168, 0, 0}, 16},
    {AF_INET, {10, 0, 0, 0}, 8},         {AF_INET, {172, 16, 0, 0}, 12},
    {AF_INET6, {0}, 8},                  {AF_INET6, {0xfc, 0}, 7},
    {AF_INET6, {0xfe, 0x80}, 10},        {AF_INET6, {0xfe, 0xc0}, 10},
    {AF_INET6, {0xff, 0}, 8},            {AF_INET6, {0}, 127},
};
#define N_PRIVATE_NETS ((int)(sizeof(private_nets) / sizeof(private_nets[0])))

static int
rule_is_private_net(const exit_policy_rule_t *r)
{
  for (int i = 0; i < N_PRIVATE_NETS; i++)
    if (r->family == private_nets[i].family &&
        r->maskbits == private_nets[i].bits &&
        !memcmp(r->addr, private_nets[i].addr, 16))
      return 1;
  return 0;
}

/* ---- rule vectors ---- */

typedef struct {
  exit_policy_rule_t *v;
  int n, cap;
} rulevec_t;

static int
rv_push(rulevec_t *rv, const exit_policy_rule_t *r)
{
  if (rv->n >= EXIT_POLICY_MAX_RULES)
    return -1;
  if (rv->n == rv->cap) {
    rv->cap = rv->cap ? rv->cap * 2 : 32;
    rv->v = pc_realloc(rv->v, (size_t)rv->cap * sizeof(*rv->v));
  }
  rv->v[rv->n++] = *r;
  return 0;
}

static void
rv_del(rulevec_t *rv, int i)
{
  memmove(&rv->v[i], &rv->v[i + 1],
          (size_t)(rv->n - i - 1) * sizeof(*rv->v));
  rv->n--;
}

static void
make_rule(exit_policy_rule_t *r, int accept, int family, const uint8_t *addr,
          int bits, uint16_t lo, uint16_t hi)
{
  memset(r, 0, sizeof(*r));
  r->accept = (uint8_t)accept;
  r->family = family;
  r->maskbits = (uint8_t)bits;
  if (addr)
    memcpy(r->addr, addr, (size_t)addr_bits(family) / 8);
  clear_host_bits(r->addr, bits, family);
  r->prt_min = lo;
  r->prt_max = hi;
}

/* ---- parsing one entry ---- */

/* Strict decimal, 1-5 digits, into *out. */
static int
parse_dec(const char *s, size_t n, unsigned *out)
{
  if (n == 0 || n > 5)
    return -1;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  *out = v;
  return 0;
}

static int
parse_ports(const char *s, size_t n, uint16_t *lo, uint16_t *hi,
            const char **why)
{
  if (n == 1 && s[0] == '*') {
    *lo = 1;
    *hi = 65535;
    return 0;
  }
  const char *dash = memchr(s, '-', n);
  unsigned a, b;
  if (!dash) {
    if (parse_dec(s, n, &a) < 0 || a < 1 || a > 65535) {
      *why = "bad port";
      return -1;
    }
    b = a;
  } else {
    size_t na = (size_t)(dash - s);
    if (parse_dec(s, na, &a) < 0 || a < 1 || a > 65535 ||
        parse_dec(dash + 1, n - na - 1, &b) < 0 || b < 1 || b > 65535) {
      *why = "bad port";
      return -1;
    }
    if (a > b) {
      *why = "bad port range (first port above the last)";
      return -1;
    }
  }
  *lo = (uint16_t)a;
  *hi = (uint16_t)b;
  return 0;
}

/* A dotted-quad netmask must be contiguous ones then zeros. */
static int
mask_to_bits(const uint8_t m[4])
{
  uint32_t v = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
               (uint32_t)m[2] << 8 | m[3];
  int bits = 0;
  while (bits < 32 && (v & (0x80000000u >> bits)))
    bits++;
  if (bits < 32 && (v << bits) != 0)
    return -1;
  return bits;
}

enum { A_STAR, A_STAR4, A_STAR6, A_PRIVATE, A_IP };

/* Parse one trimmed entry (len <= EXIT_POLICY_MAX_ENTRY_LEN, printable)
 * and append its rules. Returns 0 (possibly adding nothing: tor ignores,
 * with a warning, an IPv4 address after accept6/reject6) or -1 with a
 * static *why. */
static int
parse_entry(const char *e, size_t len, rulevec_t *out, const char **why)
{
  size_t kl = 0;
  while (kl < len && e[kl] != ' ' && e[kl] != '\t')
    kl++;
  int accept, v6only;
  if (kl == 6 && !memcmp(e, "accept", 6)) {
    accept = 1, v6only = 0;
  } else if (kl == 6 && !memcmp(e, "reject", 6)) {
    accept = 0, v6only = 0;
  } else if (kl == 7 && !memcmp(e, "accept6", 7)) {
    accept = 1, v6only = 1;
  } else if (kl == 7 && !memcmp(e, "reject6", 7)) {
    accept = 0, v6only = 1;
  } else {
    *why = "must start with accept, reject, accept6 or reject6";
    return -1;
  }
  const char *p = e + kl;
  size_t n = len - kl;
  while (n && (*p == ' ' || *p == '\t'))
    p++, n--;
  if (n == 0) {
    *why = "missing ADDRESS[/MASK][:PORT]";
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (p[i] == ' ' || p[i] == '\t') {
      *why = "one ADDRESS[/MASK][:PORT] per entry (separate entries "
             "with commas)";
      return -1;
    }

  int kind = A_IP, family = 0, bits = 0;
  uint8_t addr[16];
  memset(addr, 0, sizeof(addr));
  const char *ports = NULL;
  size_t nports = 0;

  if (p[0] == '[') {
    const char *close = memchr(p, ']', n);
    if (!close) {
      *why = "missing ']' after an IPv6 address";
      return -1;
    }
    char buf[64];
    size_t al = (size_t)(close - p - 1);
    if (al == 0 || al >= sizeof(buf)) {
      *why = "bad IPv6 address";
      return -1;
    }
    memcpy(buf, p + 1, al);
    buf[al] = 0;
    if (inet_pton(AF_INET6, buf, addr) != 1) {
      *why = "bad IPv6 address";
      return -1;
    }
    family = AF_INET6;
    bits = 128;
    const char *q = close + 1, *end = p + n;
    if (q < end && *q == '/') {
      const char *m = ++q;
      while (q < end && *q != ':')
        q++;
      unsigned v;
      if (parse_dec(m, (size_t)(q - m), &v) < 0 || v > 128) {
        *why = "bad mask (IPv6 masks are /0 to /128)";
        return -1;
      }
      bits = (int)v;
    }
    if (q < end) {
      if (*q != ':') {
        *why = "bad address";
        return -1;
      }
      ports = q + 1;
      nports = (size_t)(end - ports);
    }
  } else {
    const char *colon = memchr(p, ':', n);
    size_t al = colon ? (size_t)(colon - p) : n;
    if (colon) {
      ports = colon + 1;
      nports = n - al - 1;
      if (memchr(ports, ':', nports)) {
        *why = "IPv6 addresses go in brackets, as in [2001:db8::]/32:80";
        return -1;
      }
    }
    const char *slash = memchr(p, '/', al);
    size_t il = slash ? (size_t)(slash - p) : al;
    if (il == 1 && p[0] == '*')
      kind = A_STAR;
    else if (il == 2 && !memcmp(p, "*4", 2))
      kind = A_STAR4;
    else if (il == 2 && !memcmp(p, "*6", 2))
      kind = A_STAR6;
    else if (il == 7 && !memcmp(p, "private", 7))
      kind = A_PRIVATE;
    if (kind != A_IP) {
      if (slash) {
        *why = "no mask after *, *4, *6 or private";
        return -1;
      }
    } else {
      char buf[16];
      if (il == 0 || il >= sizeof(buf)) {
        *why = "bad address (*, *4, *6, private, an IPv4 address or "
               "a bracketed IPv6 address)";
        return -1;
      }
      memcpy(buf, p, il);
      buf[il] = 0;
      if (inet_pton(AF_INET, buf, addr) != 1) {
        *why = "bad address (*, *4, *6, private, an IPv4 address or "
               "a bracketed IPv6 address)";
        return -1;
      }
      family = AF_INET;
      bits = 32;
      if (slash) {
        const char *m = slash + 1;
        size_t ml = al - il - 1;
        unsigned v;
        uint8_t mask[4];
        if (ml > 0 && ml <= 2 && parse_dec(m, ml, &v) == 0 && v <= 32) {
          bits = (int)v;
        } else if (ml > 0 && ml < sizeof(buf)) {
          memcpy(buf, m, ml);
          buf[ml] = 0;
          if (inet_pton(AF_INET, buf, mask) != 1 ||
              (bits = mask_to_bits(mask)) < 0) {
            *why = "bad mask (/0 to /32 or a netmask like /255.255.0.0)";
            return -1;
          }
        } else {
          *why = "bad mask (/0 to /32 or a netmask like /255.255.0.0)";
          return -1;
        }
      }
    }
  }

  uint16_t lo = 1, hi = 65535;
  if (ports && parse_ports(ports, nports, &lo, &hi, why) < 0)
    return -1;

  exit_policy_rule_t r;
  static const uint8_t zero[16];
  *why = "too many exit policy rules";
  switch (kind) {
  case A_STAR:
    if (!v6only) {
      make_rule(&r, accept, AF_INET, zero, 0, lo, hi);
      if (rv_push(out, &r) < 0)
        return -1;
    }
    make_rule(&r, accept, AF_INET6, zero, 0, lo, hi);
    return rv_push(out, &r);
  case A_STAR6:
    make_rule(&r, accept, AF_INET6, zero, 0, lo, hi);
    return rv_push(out, &r);
  case A_PRIVATE:
    if (v6only)
      log_warn("Exit policy entry '%.*s' covers the private IPv4 and IPv6 "
               "networks both (use accept/reject private for that).",
               (int)len, e);
    for (int i = 0; i < N_PRIVATE_NETS; i++) {
      make_rule(&r, accept, private_nets[i].family, private_nets[i].addr,
                private_nets[i].bits, lo, hi);
      if (rv_push(out, &r) < 0)
        return -1;
    }
    return 0;
  case A_STAR4:
  default:
    if (v6only && (kind == A_STAR4 || family == AF_INET)) {
      log_warn("Ignoring exit policy entry '%.*s': accept6/reject6 take "
               "IPv6 addresses only (use accept/reject for IPv4).",
               (int)len, e);
      return 0;
    }
    if (kind == A_STAR4)
      make_rule(&r, accept, AF_INET, zero, 0, lo, hi);
    else
      make_rule(&r, accept, family, addr, bits, lo, hi);
    return rv_push(out, &r);
  }
}

/* Parse every comma-separated entry of lines[0..n) into out. */
static int
parse_lines(const char *const *lines, int n, rulevec_t *out, char **err)
{
  for (int li = 0; li < n; li++) {
    const char *s = lines[li];
    if (!s)
      continue;
    for (;;) {
      const char *comma = strchr(s, ',');
      size_t len = comma ? (size_t)(comma - s) : strlen(s);
      const char *e = s;
      while (len && (*e == ' ' || *e == '\t'))
        e++, len--;
      while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
        len--;
      if (len) {
        const char *why = NULL;
        for (size_t i = 0; i < len && !why; i++)
          if ((unsigned char)e[i] < 0x20 && e[i] != '\t')
            why = "control character";
          else if ((unsigned char)e[i] >= 0x7f)
            why = "non-ASCII character";
        if (!why && len > EXIT_POLICY_MAX_ENTRY_LEN)
          why = "entry too long";
        if (why || parse_entry(e, len, out, &why) < 0) {
          /* Quote the entry, at most 100 characters, printable only. */
          char q[104];
          size_t ql = len > 100 ? 100 : len;
          for (size_t i = 0; i < ql; i++)
            q[i] = (e[i] >= 0x20 && e[i] < 0x7f) ? e[i] : '?';
          q[ql] = 0;
          if (err)
            *err = pc_asprintf("ExitPolicy: '%s%s': %s", q,
                               len > ql ? "..." : "", why);
          return -1;
        }
      }
      if (!comma)
        break;
      s = comma + 1;
    }
  }
  return 0;
}

/* ---- redundancy removal ---- */

/* a covers b: every address:port b matches, a matches. */
static int
rule_covers(const exit_policy_rule_t *a, const exit_policy_rule_t *b)
{
  if (a->family != b->family || a->maskbits > b->maskbits)
    return 0;
  if (!prefix_eq(a->addr, b->addr, a->maskbits))
    return 0;
  return a->prt_min <= b->prt_min && a->prt_max >= b->prt_max;
}

static int
rule_intersects(const exit_policy_rule_t *a, const exit_policy_rule_t *b)
{
  if (a->family != b->family)
    return 0;
  int bits = a->maskbits < b->maskbits ? a->maskbits : b->maskbits;
  if (!prefix_eq(a->addr, b->addr, bits))
    return 0;
  return !(a->prt_max < b->prt_min || b->prt_max < a->prt_min);
}

static int
rule_is_catchall(const exit_policy_rule_t *r)
{
  return r->maskbits == 0 && r->prt_min == 1 && r->prt_max == 65535;
}

static void
remove_redundancies(rulevec_t *rv)
{
  /* 1: nothing of a family after a catch-all of that family. */
  int kill4 = 0, kill6 = 0;
  for (int i = 0; i < rv->n; i++) {
    exit_policy_rule_t *r = &rv->v[i];
    if ((r->family == AF_INET && kill4) || (r->family == AF_INET6 && kill6)) {
      rv_del(rv, i--);
      continue;
    }
    if (rule_is_catchall(r)) {
      if (r->family == AF_INET)
        kill4 = 1;
      else
        kill6 = 1;
    }
  }
  /* 2: a rule covered by an earlier rule is never reached. */
  for (int i = 0; i < rv->n - 1; i++)
    for (int j = i + 1; j < rv->n; j++)
      if (rule_covers(&rv->v[i], &rv->v[j]))
        rv_del(rv, j--);
  /* 3: a rule covered by a later rule of the same verb, with no rule of
   * the other verb in between that intersects it, changes nothing. */
  for (int i = 0; i < rv->n - 1; i++) {
    for (int j = i + 1; j < rv->n; j++) {
      const exit_policy_rule_t *a = &rv->v[i], *b = &rv->v[j];
      if (a->accept != b->accept) {
        if (rule_intersects(a, b))
          break;
      } else if (rule_covers(b, a)) {
        rv_del(rv, i--);
        break;
      }
    }
  }
}

/* Warn about configured entries that can never match because an earlier
 * configured entry is a catch-all of their family ("accept *:*, reject
 * *:25"). (tor warns about everything after catch-alls of both families
 * anywhere, which also fires on "accept *:*" without IPv6Exit, because
 * of the "reject *6:*" prepended; this warns only about the operator's
 * own mistake.) */
static void
warn_unreachable(const rulevec_t *rv, int from)
{
  int c4 = 0, c6 = 0;
  for (int i = from; i < rv->n; i++) {
    const exit_policy_rule_t *r = &rv->v[i];
    if ((r->family == AF_INET && c4) || (r->family == AF_INET6 && c6)) {
      char buf[EXIT_POLICY_RULE_BUF_LEN];
      log_warn("Exit policy entry '%s' can never match: it follows a "
               "catch-all (accept/reject *:*) of its address family. (Make "
               "accept/reject *:* the last entry.)",
               exit_policy_rule_format(r, 0, buf, sizeof(buf)));
      return;
    }
    if (rule_is_catchall(r)) {
      if (r->family == AF_INET)
        c4 = 1;
      else
        c6 = 1;
    }
  }
}

/* ---- building policies ---- */

void
exit_policy_options_init(exit_policy_options_t *opts)
{
  memset(opts, 0, sizeof(*opts));
  opts->reject_private = 1;
}

int
exit_policy_want_exit(int exit_relay, int n_policy_lines, int ipv6_exit)
{
  if (exit_relay == 0)
    return 0;
  if (exit_relay > 0)
    return 1;
  return n_policy_lines > 0 || ipv6_exit;
}

static exit_policy_t *
policy_from_vec(rulevec_t *rv)
{
  exit_policy_t *p = pc_zalloc(sizeof(*p));
  p->n = rv->n;
  p->rules = rv->v;
  rv->v = NULL;
  rv->n = rv->cap = 0;
  return p;
}

static int
append_string(rulevec_t *rv, const char *s, char **err)
{
  const char *lines[1] = {s};
  return parse_lines(lines, 1, rv, err);
}

static int
reject_addrs(rulevec_t *rv, const pc_addr_t *addrs, int n, int ipv6_exit)
{
  for (int i = 0; i < n && addrs; i++) {
    const pc_addr_t *a = &addrs[i];
    if (a->family != AF_INET && a->family != AF_INET6)
      continue;
    if (pc_addr_is_private(a))
      continue; /* unset, internal or multicast: not rejected by address */
    if (a->family == AF_INET6 && !ipv6_exit)
      continue;
    exit_policy_rule_t r;
    make_rule(&r, 0, a->family, a->addr, addr_bits(a->family), 1, 65535);
    if (rv_push(rv, &r) < 0)
      return -1;
  }
  return 0;
}

exit_policy_t *
exit_policy_parse(const char *const *lines, int n,
                  const exit_policy_options_t *opts, char **err)
{
  exit_policy_options_t defaults;
  if (!opts) {
    exit_policy_options_init(&defaults);
    opts = &defaults;
  }
  if (err)
    *err = NULL;
  rulevec_t user = {0}, rv = {0};
  if (parse_lines(lines, n, &user, err) < 0)
    goto fail;
  if (!opts->is_exit) {
    free(user.v);
    user.v = NULL;
    if (append_string(&rv, "reject *4:*,reject *6:*", err) < 0)
      goto fail;
    return policy_from_vec(&rv);
  }
  if (!opts->ipv6_exit && append_string(&rv, "reject *6:*", err) < 0)
    goto fail;
  if (opts->reject_private && append_string(&rv, "reject private:*", err) < 0)
    goto fail;
  if ((opts->reject_private &&
       reject_addrs(&rv, opts->our_addrs, opts->n_our_addrs,
                    opts->ipv6_exit) < 0) ||
      (opts->reject_local_interfaces &&
       reject_addrs(&rv, opts->local_addrs, opts->n_local_addrs,
                    opts->ipv6_exit) < 0))
    goto too_many;
  remove_redundancies(&rv);
  int first_user = rv.n;
  for (int i = 0; i < user.n; i++)
    if (rv_push(&rv, &user.v[i]) < 0)
      goto too_many;
  free(user.v);
  user.v = NULL;
  warn_unreachable(&rv, first_user);
  if (append_string(&rv, opts->reduced ? EXIT_POLICY_REDUCED
                                       : EXIT_POLICY_DEFAULT, err) < 0)
    goto fail;
  remove_redundancies(&rv);
  return policy_from_vec(&rv);
too_many:
  if (err)
    *err = pc_asprintf("ExitPolicy: more than %d rules",
                       EXIT_POLICY_MAX_RULES);
fail:
  free(user.v);
  free(rv.v);
  return NULL;
}

exit_policy_t *
exit_policy_parse_plain(const char *const *lines, int n, char **err)
{
  rulevec_t rv = {0};
  if (err)
    *err = NULL;
  if (parse_lines(lines, n, &rv, err) < 0) {
    free(rv.v);
    return NULL;
  }
  return policy_from_vec(&rv);
}

void
exit_policy_free_(exit_policy_t *p)
{
  if (!p)
    return;
  free(p->rules);
  free(p);
}

int
exit_policy_n_rules(const exit_policy_t *p)
{
  return p ? p->n : 0;
}

const exit_policy_rule_t *
exit_policy_get_rule(const exit_policy_t *p, int idx)
{
  if (!p || idx < 0 || idx >= p->n)
    return NULL;
  return &p->rules[idx];
}

/* ---- decisions ---- */

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0,    0,
                                            0, 0, 0, 0, 0xff, 0xff};

exit_policy_result_t
exit_policy_allows(const exit_policy_t *p, const pc_addr_t *addr,
                   uint16_t port)
{
  if (!p || !addr || port == 0)
    return EXIT_POLICY_REJECTED;
  int family = addr->family;
  const uint8_t *a = addr->addr;
  if (family == AF_INET6 && !memcmp(a, v4mapped_prefix, 12)) {
    family = AF_INET;
    a += 12;
  }
  if (family != AF_INET && family != AF_INET6)
    return EXIT_POLICY_REJECTED;
  for (int i = 0; i < p->n; i++) {
    const exit_policy_rule_t *r = &p->rules[i];
    if (r->family != family || port < r->prt_min || port > r->prt_max)
      continue;
    if (!prefix_eq(a, r->addr, r->maskbits))
      continue;
    return r->accept ? EXIT_POLICY_ACCEPTED : EXIT_POLICY_REJECTED;
  }
  return EXIT_POLICY_ACCEPTED;
}

exit_policy_result_t
exit_policy_allows_unknown(const exit_policy_t *p, uint16_t port, int family)
{
  if (!p || port == 0)
    return EXIT_POLICY_REJECTED;
  int maybe_accept = 0, maybe_reject = 0;
  for (int i = 0; i < p->n; i++) {
    const exit_policy_rule_t *r = &p->rules[i];
    if (family != AF_UNSPEC && r->family != family)
      continue;
    if (port < r->prt_min || port > r->prt_max)
      continue;
    if (r->maskbits == 0) {
      if (r->accept)
        return maybe_reject ? EXIT_POLICY_PROBABLY_ACCEPTED
                            : EXIT_POLICY_ACCEPTED;
      return maybe_accept ? EXIT_POLICY_PROBABLY_REJECTED
                          : EXIT_POLICY_REJECTED;
    }
    if (r->accept)
      maybe_accept = 1;
    else
      maybe_reject = 1;
  }
  return maybe_reject ? EXIT_POLICY_PROBABLY_ACCEPTED : EXIT_POLICY_ACCEPTED;
}

int
exit_policy_is_reject_star(const exit_policy_t *p, int family)
{
  if (!p)
    return 1;
  for (int i = 0; i < p->n; i++) {
    const exit_policy_rule_t *r = &p->rules[i];
    if (r->family != family)
      continue;
    if (r->accept)
      return 0;
    if (rule_is_catchall(r))
      return 1;
  }
  return 0; /* what no rule matches is accepted */
}

/* ---- text ---- */

char *
exit_policy_rule_format(const exit_policy_rule_t *r, int for_desc, char *buf,
                        size_t buflen)
{
  char a[INET6_ADDRSTRLEN + 8];
  int v6 = r->family == AF_INET6;
  if (r->maskbits == 0) {
    snprintf(a, sizeof(a), "%s", for_desc ? "*" : v6 ? "*6" : "*4");
  } else {
    char ip[INET6_ADDRSTRLEN];
    if (!inet_ntop(r->family, r->addr, ip, sizeof(ip)))
      snprintf(ip, sizeof(ip), "?");
    if (r->maskbits < addr_bits(r->family))
      snprintf(a, sizeof(a), v6 ? "[%s]/%d" : "%s/%d", ip, r->maskbits);
    else
      snprintf(a, sizeof(a), v6 ? "[%s]" : "%s", ip);
  }
  char ports[16];
  if (r->prt_min == 1 && r->prt_max == 65535)
    snprintf(ports, sizeof(ports), "*");
  else if (r->prt_min == r->prt_max)
    snprintf(ports, sizeof(ports), "%u", r->prt_min);
  else
    snprintf(ports, sizeof(ports), "%u-%u", r->prt_min, r->prt_max);
  snprintf(buf, buflen, "%s%s %s:%s", r->accept ? "accept" : "reject",
           (v6 && for_desc) ? "6" : "", a, ports);
  return buf;
}

char *
exit_policy_format_descriptor(const exit_policy_t *p)
{
  strbuf_t b = {0};
  int any = 0;
  for (int i = 0; p && i < p->n; i++) {
    if (p->rules[i].family != AF_INET)
      continue;
    char line[EXIT_POLICY_RULE_BUF_LEN];
    strbuf_add(&b,
               exit_policy_rule_format(&p->rules[i], 1, line, sizeof(line)));
    strbuf_add(&b, "\n");
    any = 1;
  }
  if (!any)
    strbuf_add(&b, "reject *:*\n");
  char *s6 = exit_policy_summarize(p, AF_INET6);
  if (strcmp(s6, "reject 1-65535"))
    strbuf_addf(&b, "ipv6-policy %s\n", s6);
  free(s6);
  return strbuf_take(&b);
}

char *
exit_policy_format_rules(const exit_policy_t *p, int family)
{
  strbuf_t b = {0};
  for (int i = 0; p && i < p->n; i++) {
    if (family != AF_UNSPEC && p->rules[i].family != family)
      continue;
    char line[EXIT_POLICY_RULE_BUF_LEN];
    if (b.len)
      strbuf_add(&b, "\n");
    strbuf_add(&b,
               exit_policy_rule_format(&p->rules[i], 1, line, sizeof(line)));
  }
  if (!b.len)
    strbuf_add(&b, family == AF_INET6 ? "reject6 *:*" : "reject *:*");
  return strbuf_take(&b);
}

/* ---- summaries ---- */

#define CUTOFF_IPV4 (UINT64_C(1) << 25) /* addresses: two /8s */
#define SCALE_IPV6 64                   /* IPv6 counts are in /64s */
#define CUTOFF_IPV6 (UINT64_C(1) << 48) /* /64s: one /16 */

static int
cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Index of the interval starting at port in starts[0..k). */
static int
find_start(const uint32_t *starts, int k, uint32_t port)
{
  int lo = 0, hi = k - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (starts[mid] < port)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

char *
exit_policy_summarize(const exit_policy_t *p, int family)
{
  int nr = p ? p->n : 0;
  /* Elementary intervals: [starts[i], starts[i+1]) with starts[k] = 65536. */
  uint32_t *starts = pc_malloc(((size_t)nr * 2 + 2) * sizeof(*starts));
  int k = 0;
  starts[k++] = 1;
  for (int i = 0; i < nr; i++) {
    const exit_policy_rule_t *r = &p->rules[i];
    if (r->family != family)
      continue;
    starts[k++] = r->prt_min;
    if (r->prt_max < 65535)
      starts[k++] = (uint32_t)r->prt_max + 1;
  }
  qsort(starts, (size_t)k, sizeof(*starts), cmp_u32);
  int u = 0;
  for (int i = 0; i < k; i++)
    if (u == 0 || starts[i] != starts[u - 1])
      starts[u++] = starts[i];
  k = u;
  starts[k] = 65536;
  uint64_t *count = pc_calloc((size_t)k, sizeof(*count));
  uint8_t *accepted = pc_calloc((size_t)k, 1);

  int abits = addr_bits(family);
  int scale = family == AF_INET ? 0 : SCALE_IPV6;
  uint64_t cutoff = family == AF_INET ? CUTOFF_IPV4 : CUTOFF_IPV6;
  for (int i = 0; i < nr; i++) {
    const exit_policy_rule_t *r = &p->rules[i];
    if (r->family != family)
      continue;
    int j = find_start(starts, k, r->prt_min);
    if (r->accept) {
      if (r->maskbits != 0)
        continue; /* only accepts for every address count */
      for (; j < k && starts[j] <= r->prt_max; j++)
        if (!accepted[j] && count[j] <= cutoff)
          accepted[j] = 1;
    } else {
      if (rule_is_private_net(r))
        continue;
      if (r->maskbits > abits - scale)
        continue; /* smaller than a /64: never adds up to the cutoff */
      int shift = abits - scale - r->maskbits;
      uint64_t c = shift >= 64 ? UINT64_MAX : UINT64_C(1) << shift;
      for (; j < k && starts[j] <= r->prt_max; j++)
        count[j] = count[j] > UINT64_MAX - c ? UINT64_MAX : count[j] + c;
    }
  }

  strbuf_t acc = {0}, rej = {0};
  int nacc = 0, nrej = 0;
  for (int i = 0; i < k;) {
    int j = i;
    while (j + 1 < k && accepted[j + 1] == accepted[i])
      j++;
    uint32_t lo = starts[i], hi = starts[j + 1] - 1;
    strbuf_t *b = accepted[i] ? &acc : &rej;
    int *cnt = accepted[i] ? &nacc : &nrej;
    if (*cnt)
      strbuf_add(b, ",");
    if (lo == hi)
      strbuf_addf(b, "%u", lo);
    else
      strbuf_addf(b, "%u-%u", lo, hi);
    (*cnt)++;
    i = j + 1;
  }
  free(starts);
  free(count);
  free(accepted);

  char *res;
  const size_t room = EXIT_POLICY_SUMMARY_MAX_LEN - strlen("accept ");
  if (nacc == 0) {
    res = pc_strdup("reject 1-65535");
  } else if (nrej == 0) {
    res = pc_strdup("accept 1-65535");
  } else if (rej.len > room && acc.len > room) {
    /* Both too long: as much of the accept list as fits, cut at a comma. */
    size_t c = room;
    while (c > 0 && acc.s[c] != ',')
      c--;
    acc.s[c] = 0;
    res = pc_asprintf("accept %s", acc.s);
  } else if (rej.len < acc.len) {
    res = pc_asprintf("reject %s", rej.s);
  } else {
    res = pc_asprintf("accept %s", acc.s);
  }
  free(acc.s);
  free(rej.s);
  return res;
}
