/* SPDX-License-Identifier: BSD-3-Clause */
/* addrmap.c -- the client's address map (see addrmap.h).
 *
 * Design: two hash maps keyed by SHA-256 digests. `by_from` holds every
 * mapping by its lower-cased source address; `virt` holds the virtual
 * addresses we chose, by their kind and target ("4:" "6:" or "h:" then
 * the target), so MAPADDRESS 0.0.0.0=host finds an earlier virtual
 * address for host without a walk. An entry knows whether it is virtual
 * so that replacing or removing it also drops its `virt` key.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "feature/client/addrmap.h"
#include "feature/client/socks_proto.h"
#include "lib/container/hmap.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/malloc/alloc.h"

typedef struct {
  char *from, *to;
  char virt_kind; /* '4', '6', 'h' for a virtual address we chose; else 0 */
} amap_entry_t;

struct addrmap_t {
  hmap_t *by_from; /* sha256(lower(from)) -> amap_entry_t */
  hmap_t *virt;    /* sha256(kind ':' lower(to)) -> the same entry */
};

static void
entry_free(void *p)
{
  amap_entry_t *e = p;
  if (!e)
    return;
  free(e->from);
  free(e->to);
  free(e);
}

addrmap_t *
addrmap_new(void)
{
  addrmap_t *m = pc_zalloc(sizeof(*m));
  m->by_from = hmap_new(DIGEST_SHA256_LEN);
  m->virt = hmap_new(DIGEST_SHA256_LEN);
  return m;
}

void
addrmap_free_(addrmap_t *m)
{
  if (!m)
    return;
  hmap_free(m->virt, NULL);
  hmap_free(m->by_from, entry_free);
  free(m);
}

/* The key of an address: the digest of its lower-cased form, after an
 * optional kind prefix ("4:"). */
static void
key_of(uint8_t key[DIGEST_SHA256_LEN], char kind, const char *addr)
{
  char buf[ADDRMAP_MAX_ADDRESS + 3];
  size_t n = 0;
  if (kind) {
    buf[n++] = kind;
    buf[n++] = ':';
  }
  for (const char *p = addr; *p && n < sizeof(buf) - 1; p++)
    buf[n++] = (char)tolower((unsigned char)*p);
  crypt_sha256(key, buf, n);
}

/* The rule is SOCKS's (socks_proto.h): a mapping can only apply to a
 * target the SocksPort accepts, and one that names anything else would
 * never be used. */
int
addrmap_address_ok(const char *s)
{
  return s && socks_hostname_is_valid(s, strlen(s));
}

static char *
lower_dup(const char *s)
{
  char *d = pc_strdup(s);
  for (char *p = d; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  return d;
}

/* Remove the mapping of from (a key), with its virtual index. */
static void
remove_key(addrmap_t *m, const uint8_t key[DIGEST_SHA256_LEN])
{
  amap_entry_t *e = hmap_remove(m->by_from, key);
  if (!e)
    return;
  if (e->virt_kind) {
    uint8_t vk[DIGEST_SHA256_LEN];
    key_of(vk, e->virt_kind, e->to);
    if (hmap_get(m->virt, vk) == e)
      hmap_remove(m->virt, vk);
  }
  entry_free(e);
}

/* A virtual address of this kind not mapped yet, into out. */
static int
choose_virtual(const addrmap_t *m, char kind, char *out, size_t outlen)
{
  static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
  for (int tries = 0; tries < 64; tries++) {
    uint8_t r[16];
    crypt_rand(r, sizeof(r));
    if (kind == '4') {
      /* 127.192.0.0/10, avoiding .0 and .255 as last byte. */
      if (r[3] == 0 || r[3] == 255)
        continue;
      snprintf(out, outlen, "127.%u.%u.%u", 192u + (r[1] & 0x3f), r[2],
               r[3]);
    } else if (kind == '6') {
      r[0] = 0xfe;
      r[1] = (uint8_t)(0x80 | (r[1] & 0x3f));
      char buf[INET6_ADDRSTRLEN];
      if (!inet_ntop(AF_INET6, r, buf, sizeof(buf)))
        return -1;
      snprintf(out, outlen, "%s", buf);
    } else {
      char name[17];
      for (int i = 0; i < 16; i++)
        name[i] = b32[r[i] & 31];
      name[16] = 0;
      snprintf(out, outlen, "%s.virtual", name);
    }
    uint8_t key[DIGEST_SHA256_LEN];
    key_of(key, 0, out);
    if (!hmap_get(m->by_from, key))
      return 0;
  }
  return -1;
}

int
addrmap_set(addrmap_t *m, const char *from, const char *to, char **from_out,
            char **err_out)
{
  *from_out = NULL;
  *err_out = NULL;
  char kind = !strcmp(from, "0.0.0.0") ? '4'
              : (!strcmp(from, "::0") || !strcmp(from, "::")) ? '6'
              : !strcmp(from, ".") ? 'h'
                                   : 0;
  if (!kind && !addrmap_address_ok(from)) {
    *err_out = pc_asprintf("invalid address '%s'", from);
    return -1;
  }
  if (!addrmap_address_ok(to)) {
    *err_out = pc_asprintf("invalid address '%s'", to);
    return -1;
  }
  uint8_t key[DIGEST_SHA256_LEN];
  if (!kind) {
    key_of(key, 0, from);
    remove_key(m, key);
    if (!strcasecmp(from, to)) { /* from=from: no mapping any more */
      *from_out = lower_dup(from);
      return 0;
    }
  } else {
    uint8_t vk[DIGEST_SHA256_LEN];
    key_of(vk, kind, to);
    const amap_entry_t *old = hmap_get(m->virt, vk);
    if (old) { /* the same target again: the same virtual address */
      *from_out = pc_strdup(old->from);
      return 0;
    }
  }
  if (hmap_size(m->by_from) >= ADDRMAP_MAX_ENTRIES) {
    *err_out = pc_asprintf("too many address mappings (%d)",
                           ADDRMAP_MAX_ENTRIES);
    return -2;
  }
  amap_entry_t *e = pc_zalloc(sizeof(*e));
  e->to = lower_dup(to);
  if (kind) {
    char v[ADDRMAP_MAX_ADDRESS + 1];
    if (choose_virtual(m, kind, v, sizeof(v)) < 0) {
      entry_free(e);
      *err_out = pc_strdup("no unused virtual address left");
      return -2;
    }
    e->from = pc_strdup(v);
    e->virt_kind = kind;
    key_of(key, 0, e->from);
    uint8_t vk[DIGEST_SHA256_LEN];
    key_of(vk, kind, e->to);
    hmap_set(m->virt, vk, e);
  } else {
    e->from = lower_dup(from);
  }
  hmap_set(m->by_from, key, e);
  *from_out = pc_strdup(e->from);
  return 0;
}

int
addrmap_rewrite(const addrmap_t *m, char *addr, size_t len)
{
  const char *cur = addr;
  const amap_entry_t *last = NULL;
  for (int i = 0; i <= ADDRMAP_MAX_CHAIN; i++) {
    uint8_t key[DIGEST_SHA256_LEN];
    key_of(key, 0, cur);
    const amap_entry_t *e = hmap_get(m->by_from, key);
    if (!e) {
      if (!last)
        return 0;
      if (strlen(last->to) + 1 > len)
        return -1;
      memcpy(addr, last->to, strlen(last->to) + 1);
      return 1;
    }
    last = e;
    cur = e->to;
  }
  return -1; /* a loop, or a chain longer than we follow */
}

void
addrmap_foreach(const addrmap_t *m,
                void (*fn)(const char *from, const char *to, void *arg),
                void *arg)
{
  hmap_iter_t it;
  const uint8_t *key;
  void *val;
  hmap_iter_init(&it, m->by_from);
  while (hmap_iter_next(&it, &key, &val)) {
    const amap_entry_t *e = val;
    fn(e->from, e->to, arg);
  }
}

size_t
addrmap_size(const addrmap_t *m)
{
  return hmap_size(m->by_from);
}

void
addrmap_clear(addrmap_t *m)
{
  hmap_iter_t it;
  const uint8_t *key;
  void *val;
  hmap_clear(m->virt);
  hmap_iter_init(&it, m->by_from);
  while (hmap_iter_next(&it, &key, &val))
    entry_free(hmap_iter_remove_current(&it));
}
