/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelist.c -- join consensus entries with their descriptors (see
 * nodelist.h).
 *
 * Design: the descriptors are indexed by sorting an array of pointers by
 * digest (both flavors compare all 32 bytes: SHA-1 digests are
 * zero-padded on both sides), then each consensus entry is looked up by
 * binary search: O((n + m) log m), no hash table needed at start-up.
 * Nodes copy the small fixed fields and point at the rest, so a nodelist
 * is valid only as long as its consensus and descriptors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "feature/dir/nodelist.h"
#include "core/or/circuit.h"
#include "core/proto/create.h"
#include "lib/encoding/base16.h"
#include "lib/malloc/alloc.h"

static int
cmp_desc(const void *a, const void *b)
{
  const microdesc_t *x = *(const microdesc_t *const *)a;
  const microdesc_t *y = *(const microdesc_t *const *)b;
  return memcmp(x->digest, y->digest, 32);
}

static const microdesc_t *
find_desc(microdesc_t *const *sorted, int n, const uint8_t digest[32])
{
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = memcmp(digest, sorted[mid]->digest, 32);
    if (c == 0)
      return sorted[mid];
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

dir_nodelist_t *
dir_nodelist_build(const consensus_t *c, microdesc_t *const *descs,
                   int n_descs)
{
  dir_nodelist_t *nl = pc_zalloc(sizeof(*nl));
  nl->consensus = c;
  microdesc_t **sorted = NULL;
  if (n_descs > 0) {
    sorted = pc_malloc((size_t)n_descs * sizeof(*sorted));
    memcpy(sorted, descs, (size_t)n_descs * sizeof(*sorted));
    qsort(sorted, (size_t)n_descs, sizeof(*sorted), cmp_desc);
  }
  nl->n_nodes = c->n_rs;
  nl->nodes = pc_calloc(c->n_rs > 0 ? (size_t)c->n_rs : 1, sizeof(dir_node_t));
  for (int i = 0; i < c->n_rs; i++) {
    const consensus_rs_t *rs = &c->rs[i];
    dir_node_t *n = &nl->nodes[i];
    memcpy(n->nickname, rs->nickname, sizeof(n->nickname));
    memcpy(n->rsa_id, rs->rsa_id, 20);
    base16_encode(n->hex_id, sizeof(n->hex_id), rs->rsa_id, 20,
                  BASE16_UPPER);
    pc_addr_from_ipv4(&n->or_addr, rs->ipv4, rs->or_port);
    n->dir_port = rs->dir_port;
    n->has_ipv6 = rs->has_ipv6;
    n->ipv6_or = rs->ipv6_or;
    n->flags = rs->flags;
    n->has_bandwidth = rs->has_bandwidth;
    n->bandwidth = rs->bandwidth;
    n->version = rs->version;
    n->protocols = rs->protocols;
    if (c->flavor == CONSENSUS_FLAVOR_NS)
      n->policy = rs->policy;
    if (rs->has_digest && sorted)
      n->desc = find_desc(sorted, n_descs, rs->digest);
    if (n->desc) {
      const microdesc_t *d = n->desc;
      nl->n_with_desc++;
      n->has_ntor = 1;
      memcpy(n->ntor_key, d->ntor_key, 32);
      if (d->has_ed25519_id && !(rs->flags & RS_FLAG_NOEDCONSENSUS)) {
        n->has_ed25519 = 1;
        memcpy(n->ed25519_id, d->ed25519_id, 32);
      }
      if (c->flavor == CONSENSUS_FLAVOR_MICRODESC) {
        n->policy = d->policy;
        n->policy6 = d->policy6;
      }
      if (!n->has_ipv6 && d->has_ipv6) {
        n->has_ipv6 = 1;
        n->ipv6_or = d->ipv6_or;
      }
    }
  }
  free(sorted);
  return nl;
}

void
dir_nodelist_free_(dir_nodelist_t *nl)
{
  if (!nl)
    return;
  free(nl->nodes);
  free(nl);
}

const dir_node_t *
dir_nodelist_find_id(const dir_nodelist_t *nl, const uint8_t rsa_id[20])
{
  int lo = 0, hi = nl->n_nodes - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = memcmp(rsa_id, nl->nodes[mid].rsa_id, 20);
    if (c == 0)
      return &nl->nodes[mid];
    if (c < 0)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return NULL;
}

const dir_node_t *
dir_nodelist_find_nickname(const dir_nodelist_t *nl, const char *nick)
{
  for (int i = 0; i < nl->n_nodes; i++)
    if (!strcasecmp(nl->nodes[i].nickname, nick))
      return &nl->nodes[i];
  return NULL;
}

int
dir_node_is_usable(const dir_node_t *n)
{
  return (n->flags & RS_FLAG_RUNNING) && (n->flags & RS_FLAG_VALID) &&
         n->desc && n->has_ntor;
}

/* 1 if a's family line names b. */
static int
lists(const dir_node_t *a, const dir_node_t *b)
{
  if (!a->desc)
    return 0;
  char want[42];
  want[0] = '$';
  memcpy(want + 1, b->hex_id, 41);
  for (int i = 0; i < a->desc->n_family; i++) {
    const char *f = a->desc->family[i];
    if (f[0] == '$') {
      if (!strcmp(f, want))
        return 1;
    } else if (!strcasecmp(f, b->nickname)) {
      return 1;
    }
  }
  return 0;
}

int
dir_nodes_same_family(const dir_node_t *a, const dir_node_t *b)
{
  if (a == b || !memcmp(a->rsa_id, b->rsa_id, 20))
    return 1;
  if (lists(a, b) && lists(b, a))
    return 1;
  if (a->desc && b->desc) {
    for (int i = 0; i < a->desc->n_family_ids; i++)
      for (int k = 0; k < b->desc->n_family_ids; k++)
        if (!strcmp(a->desc->family_ids[i], b->desc->family_ids[k]))
          return 1;
  }
  return 0;
}

int
dir_nodes_same_subnet(const dir_node_t *a, const dir_node_t *b)
{
  if (a->or_addr.family == AF_INET && b->or_addr.family == AF_INET &&
      !memcmp(a->or_addr.addr, b->or_addr.addr, 2))
    return 1;
  if (a->has_ipv6 && b->has_ipv6 &&
      !memcmp(a->ipv6_or.addr, b->ipv6_or.addr, 4))
    return 1;
  return 0;
}

char *
dir_node_flags_str(const dir_node_t *n, char *buf, size_t len)
{
  if (!len)
    return buf;
  buf[0] = 0;
  size_t off = 0;
  for (uint32_t bit = 1; bit && bit <= RS_FLAG_SYBIL; bit <<= 1) {
    if (!(n->flags & bit))
      continue;
    const char *name = consensus_flag_name(bit);
    if (!name)
      continue;
    int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", name);
    if (w < 0 || (size_t)w >= len - off)
      break;
    off += (size_t)w;
  }
  return buf;
}

/* ---- protocol lists ----
 * A small bounded parser: entries are separated by spaces, "Name="
 * followed by comma-separated versions or ranges "a-b" of decimal numbers
 * below 64 (as tor limits them); an entry that does not parse does not
 * count. */

#define PROTO_VERSION_MAX 63

/* Parse a decimal below PROTO_VERSION_MAX + 1 at *p; -1 if none. */
static int
parse_version(const char **p, const char *end)
{
  const char *q = *p;
  unsigned v = 0;
  int digits = 0;
  while (q < end && *q >= '0' && *q <= '9') {
    v = v * 10 + (unsigned)(*q - '0');
    if (++digits > 2 || v > PROTO_VERSION_MAX)
      return -1;
    q++;
  }
  if (!digits)
    return -1;
  *p = q;
  return (int)v;
}

/* Does the version list [p, end) ("1-2,5") include version? */
static int
versions_include(const char *p, const char *end, unsigned version)
{
  int found = 0;
  while (p < end) {
    int lo = parse_version(&p, end), hi = lo;
    if (lo < 0)
      return 0;
    if (p < end && *p == '-') {
      p++;
      hi = parse_version(&p, end);
      if (hi < lo)
        return 0;
    }
    if ((unsigned)lo <= version && version <= (unsigned)hi)
      found = 1;
    if (p < end && *p != ',')
      return 0;
    if (p < end)
      p++;
  }
  return found;
}

/* The next space-separated entry of a protocol list at *p: [*start,
 * *end), *p moved past it. 0 when none is left. */
static int
next_entry(const char **p, const char **start, const char **end)
{
  const char *q = *p;
  while (*q == ' ')
    q++;
  const char *e = q;
  while (*e && *e != ' ')
    e++;
  *start = q;
  *end = e;
  *p = e;
  return e > q;
}

int
dir_protocols_support(const char *protocols, const char *name,
                            unsigned version)
{
  if (!protocols || !name)
    return 0;
  size_t nlen = strlen(name);
  const char *p = protocols, *s, *end;
  while (next_entry(&p, &s, &end)) {
    const char *eq = memchr(s, '=', (size_t)(end - s));
    if (eq && (size_t)(eq - s) == nlen && !memcmp(s, name, nlen) &&
        versions_include(eq + 1, end, version))
      return 1;
  }
  return 0;
}

int
dir_node_has_client_protocols(const dir_node_t *n)
{
  if (!n->protocols)
    return 1;
  return dir_protocols_support(n->protocols, "Relay", 2) &&
         dir_protocols_support(n->protocols, "Link", 4);
}

int
dir_protocols_missing(const char *wanted, const char *have, char *out,
                      size_t outlen)
{
  size_t used = 0;
  int missing = 0;
  if (outlen)
    out[0] = 0;
  const char *p = wanted ? wanted : "", *s, *end;
  while (next_entry(&p, &s, &end)) {
    const char *eq = memchr(s, '=', (size_t)(end - s));
    char name[32];
    size_t nlen = eq ? (size_t)(eq - s) : 0;
    if (!eq || nlen == 0 || nlen >= sizeof(name)) {
      missing++;
      continue;
    }
    memcpy(name, s, nlen);
    name[nlen] = 0;
    /* Every version the entry lists, by trying each possible one. */
    for (unsigned v = 0; v <= PROTO_VERSION_MAX; v++) {
      if (!versions_include(eq + 1, end, v) ||
          dir_protocols_support(have, name, v))
        continue;
      missing++;
      if (used < outlen) {
        int w = snprintf(out + used, outlen - used, "%s%s=%u",
                         used ? " " : "", name, v);
        if (w > 0)
          used += (size_t)w;
        if (used >= outlen)
          used = outlen - 1;
      }
    }
  }
  return missing;
}

void
dir_node_extend_target(const dir_node_t *n, extend_target_t *t)
{
  memset(t, 0, sizeof(*t));
  t->addr = n->or_addr;
  memcpy(t->rsa_id, n->rsa_id, 20);
  if (n->has_ed25519) {
    t->has_ed_id = 1;
    memcpy(t->ed_id, n->ed25519_id, 32);
  }
  memcpy(t->ntor_key, n->ntor_key, 32);
  t->handshake = HTYPE_NTOR;
}
