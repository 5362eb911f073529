/* policy_summary.c -- parse and query exit-policy summaries (see
 * policy_summary.h).
 *
 * Ranges are stored sorted and non-overlapping (the parser requires the
 * ascending order the spec mandates), so a port lookup is a binary
 * search.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/policy_summary.h"
#include "lib/malloc/alloc.h"

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
  if (list_len == 0) {
    *err = "empty port list";
    return NULL;
  }
  policy_summary_t *p = pc_zalloc(sizeof(*p));
  p->accept = accept;
  int cap = 0;
  size_t i = 0;
  while (i <= list_len) {
    size_t s = i;
    while (i < list_len && list[i] != ',')
      i++;
    const char *item = list + s;
    size_t ilen = i - s;
    const char *dash = memchr(item, '-', ilen);
    uint16_t lo, hi;
    if (dash) {
      if (parse_port(item, (size_t)(dash - item), &lo) < 0 ||
          parse_port(dash + 1, ilen - (size_t)(dash - item) - 1, &hi) < 0 ||
          hi < lo) {
        *err = "malformed port range";
        goto bad;
      }
    } else {
      if (parse_port(item, ilen, &lo) < 0) {
        *err = "malformed port";
        goto bad;
      }
      hi = lo;
    }
    if (p->n_ranges > 0 && lo <= p->ranges[p->n_ranges - 1].hi) {
      *err = "port list not in ascending order";
      goto bad;
    }
    if (p->n_ranges == POLICY_SUMMARY_MAX_RANGES) {
      *err = "too many port ranges";
      goto bad;
    }
    if (p->n_ranges == cap) {
      cap = cap ? cap * 2 : 8;
      p->ranges = pc_realloc(p->ranges, (size_t)cap * sizeof(*p->ranges));
    }
    p->ranges[p->n_ranges].lo = lo;
    p->ranges[p->n_ranges].hi = hi;
    p->n_ranges++;
    i++; /* skip ',' (or step past the end) */
  }
  return p;
bad:
  policy_summary_free(p);
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
