/* SPDX-License-Identifier: BSD-3-Clause */
/* policy_summary.c -- parse and query exit-policy summaries (see
 * policy_summary.h).
 *
 * Ranges are stored sorted and non-overlapping (the strict parser
 * requires the ascending order the spec mandates; the lenient one sorts
 * and merges), so a port lookup is a binary search without allocation.
 * Both modes go through one parser (parse_list), which differs only in
 * what it accepts: strict refuses empty entries, disorder and overlaps;
 * lenient skips entries that do not start with a digit, as tor does, and
 * names the problem the way feature/exit's old parser did ("bad port",
 * "bad port range", "bad port list").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/policy_summary.h"
#include "lib/malloc/alloc.h"

/* Up to 5 decimal digits at s[0..len): 1..65535, else -1. */
static int
parse_port(const char *s, size_t len, uint16_t *out)
{
  if (len == 0 || len > 5)
    return -1;
  unsigned v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v < 1 || v > 65535)
    return -1;
  *out = (uint16_t)v;
  return 0;
}

static int
cmp_range(const void *a, const void *b)
{
  const policy_range_t *x = a, *y = b;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  return (x->hi > y->hi) - (x->hi < y->hi);
}

/* The one parser behind both modes: the port list list[0..len) into p.
 * Returns 0, or -1 with *why (static). */
static int
parse_list(policy_summary_t *p, const char *list, size_t len, int strict,
           const char **why)
{
  int cap = 0, n_entries = 0;
  size_t i = 0;
  if (strict && len == 0) {
    *why = "empty port list";
    return -1;
  }
  while (i < len || (strict && i == len)) {
    size_t s = i;
    while (i < len && list[i] != ',')
      i++;
    const char *item = list + s;
    size_t ilen = i - s;
    i++; /* skip ',' (or step past the end) */
    if (!strict) {
      /* tor skips entries that are not port numbers (forward
       * compatibility), counting them against the limit. */
      if (++n_entries > POLICY_SUMMARY_MAX_ENTRIES) {
        *why = "too many port ranges";
        return -1;
      }
      if (ilen == 0 || item[0] < '0' || item[0] > '9')
        continue;
    }
    const char *dash = memchr(item, '-', ilen);
    uint16_t lo, hi;
    if (dash) {
      size_t l1 = (size_t)(dash - item), l2 = ilen - l1 - 1;
      if (parse_port(item, l1, &lo) < 0) {
        *why = strict ? "malformed port range" : "bad port";
        return -1;
      }
      if (parse_port(dash + 1, l2, &hi) < 0 || hi < lo) {
        /* "80-90x" is a bad list rather than a bad range. */
        size_t d2 = 0;
        while (d2 < l2 && dash[1 + d2] >= '0' && dash[1 + d2] <= '9')
          d2++;
        *why = strict ? "malformed port range"
               : (d2 > 0 && d2 <= 5 && d2 < l2) ? "bad port list"
                                                : "bad port range";
        return -1;
      }
    } else if (parse_port(item, ilen, &lo) < 0) {
      size_t digits = 0;
      while (digits < ilen && item[digits] >= '0' && item[digits] <= '9')
        digits++;
      *why = strict ? "malformed port"
             : (digits < ilen && digits <= 5) ? "bad port list"
                                              : "bad port";
      return -1;
    } else {
      hi = lo;
    }
    if (strict && p->n_ranges > 0 && lo <= p->ranges[p->n_ranges - 1].hi) {
      *why = "port list not in ascending order";
      return -1;
    }
    if (p->n_ranges == POLICY_SUMMARY_MAX_RANGES) {
      *why = "too many port ranges";
      return -1;
    }
    if (p->n_ranges == cap) {
      cap = cap ? cap * 2 : 8;
      p->ranges = pc_realloc(p->ranges, (size_t)cap * sizeof(*p->ranges));
    }
    p->ranges[p->n_ranges].lo = lo;
    p->ranges[p->n_ranges].hi = hi;
    p->n_ranges++;
  }
  if (strict)
    return 0;
  if (p->n_ranges == 0) {
    *why = "no port ranges";
    return -1;
  }
  /* Lenient: sort, then merge overlapping and adjacent ranges. */
  qsort(p->ranges, (size_t)p->n_ranges, sizeof(*p->ranges), cmp_range);
  int m = 0;
  for (int k = 0; k < p->n_ranges; k++) {
    if (m && (uint32_t)p->ranges[k].lo <= (uint32_t)p->ranges[m - 1].hi + 1) {
      if (p->ranges[k].hi > p->ranges[m - 1].hi)
        p->ranges[m - 1].hi = p->ranges[k].hi;
    } else {
      p->ranges[m++] = p->ranges[k];
    }
  }
  p->n_ranges = m;
  return 0;
}

policy_summary_t *
policy_summary_parse(const char *verb, size_t verb_len, const char *list,
                     size_t list_len, const char **err)
{
  int accept;
  if (verb_len == 6 && !memcmp(verb, "accept", 6))
    accept = 1;
  else if (verb_len == 6 && !memcmp(verb, "reject", 6))
    accept = 0;
  else {
    *err = "policy summary must start with accept or reject";
    return NULL;
  }
  policy_summary_t *p = pc_zalloc(sizeof(*p));
  p->accept = accept;
  if (parse_list(p, list, list_len, 1, err) < 0) {
    policy_summary_free(p);
    return NULL;
  }
  return p;
}

policy_summary_t *
policy_summary_parse_line(const char *s, char **err)
{
  const char *why = NULL;
  policy_summary_t *p = NULL;
  if (err)
    *err = NULL;
  if (!s) {
    why = "no summary";
  } else if (strncmp(s, "accept ", 7) && strncmp(s, "reject ", 7)) {
    why = "must start with \"accept \" or \"reject \"";
  } else {
    p = pc_zalloc(sizeof(*p));
    p->accept = s[0] == 'a';
    if (parse_list(p, s + 7, strlen(s + 7), 0, &why) == 0)
      return p;
    policy_summary_free(p);
  }
  if (err) {
    char q[64];
    size_t ql = 0;
    for (; s && s[ql] && ql < 60; ql++)
      q[ql] = (s[ql] >= 0x20 && s[ql] < 0x7f) ? s[ql] : '?';
    q[ql] = 0;
    *err = pc_asprintf("policy summary '%s%s': %s", q,
                       s && s[ql] ? "..." : "", why);
  }
  return NULL;
}

policy_summary_t *
policy_summary_new_reject_all(void)
{
  policy_summary_t *p = pc_zalloc(sizeof(*p));
  p->accept = 0;
  p->n_ranges = 1;
  p->ranges = pc_malloc(sizeof(*p->ranges));
  p->ranges[0].lo = 1;
  p->ranges[0].hi = 65535;
  return p;
}

void
policy_summary_free_(policy_summary_t *p)
{
  if (!p)
    return;
  free(p->ranges);
  free(p);
}

static int
in_ranges(const policy_summary_t *p, uint16_t port)
{
  int lo = 0, hi = p->n_ranges - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (port < p->ranges[mid].lo)
      hi = mid - 1;
    else if (port > p->ranges[mid].hi)
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

int
policy_summary_allows_port(const policy_summary_t *p, uint16_t port)
{
  if (!p || port == 0)
    return 0;
  int listed = in_ranges(p, port);
  return p->accept ? listed : !listed;
}

int
policy_summary_allows_any(const policy_summary_t *p)
{
  if (!p)
    return 0;
  if (p->accept)
    return p->n_ranges > 0;
  /* A reject list allows something unless it covers 1-65535. */
  uint32_t next = 1;
  for (int i = 0; i < p->n_ranges; i++) {
    if (p->ranges[i].lo > next)
      return 1;
    next = (uint32_t)p->ranges[i].hi + 1;
  }
  return next <= 65535;
}

int
policy_summary_is_reject_star(const policy_summary_t *p)
{
  return !policy_summary_allows_any(p);
}

char *
policy_summary_format_new(const policy_summary_t *p)
{
  /* "reject " and at most 12 bytes ("65534-65535,") per range. */
  size_t len = 16 + (p ? (size_t)p->n_ranges * 12 : 0);
  char *buf = pc_malloc(len);
  return policy_summary_format(p, buf, len);
}

char *
policy_summary_format(const policy_summary_t *p, char *buf, size_t buflen)
{
  if (buflen == 0)
    return buf;
  buf[0] = 0;
  if (!p) {
    snprintf(buf, buflen, "reject 1-65535");
    return buf;
  }
  size_t off = (size_t)snprintf(buf, buflen, "%s ",
                                p->accept ? "accept" : "reject");
  for (int i = 0; i < p->n_ranges && off < buflen; i++) {
    int n;
    if (p->ranges[i].lo == p->ranges[i].hi)
      n = snprintf(buf + off, buflen - off, "%s%u", i ? "," : "",
                   p->ranges[i].lo);
    else
      n = snprintf(buf + off, buflen - off, "%s%u-%u", i ? "," : "",
                   p->ranges[i].lo, p->ranges[i].hi);
    if (n < 0)
      break;
    off += (size_t)n;
  }
  return buf;
}
