/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap.c -- open-addressing hash map with fixed-length keys (see hmap.h).
 *
 * The table is one array of cap slots (cap a power of two). Each slot is
 *   uint64_t hash | void *val | key bytes, padded to a multiple of 8,
 * where hash 0 marks an empty slot and 1 a tombstone; real hashes are
 * SipHash values nudged to be >= 2. Keeping the full hash lets a probe
 * skip memcmp() for all but the right key.
 *
 * Linear probing from hash & (cap - 1). A probe stops at an empty slot, so
 * a removed entry becomes a tombstone unless the next slot is empty, in
 * which case it (and any tombstones just before it) become empty again.
 * Entries never move except when the whole table is rebuilt, which happens
 * only on insertion of a new key when live + tombstone slots would exceed
 * 3/4 of cap. The rebuilt table is sized so that live entries fill at most
 * half of it, which keeps the rebuild cost amortised O(1) per insertion.
 * Every rebuild bumps an epoch counter; iterators check it to catch
 * insertion during iteration.
 */
#include "lib/container/hmap.h"
#include "lib/container/siphash.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

#define HASH_EMPTY 0
#define HASH_TOMB 1
#define HMAP_MIN_CAP 8

typedef struct slot_t {
  uint64_t hash;
  void *val;
  uint8_t key[];
} slot_t;

struct hmap_t {
  size_t keylen;
  size_t stride;  /* bytes per slot */
  size_t cap;     /* number of slots; 0 until the first insertion */
  size_t n_live;
  size_t n_tomb;
  uint64_t epoch; /* incremented on every rebuild */
  const siphash_key_t *hkey;
  uint8_t *slots;
};

static void
hmap_bug(const char *what)
{
  log_err("hmap: %s; aborting", what);
  abort();
}

static inline slot_t *
slot_at(const hmap_t *map, size_t i)
{
  return (slot_t *)(map->slots + i * map->stride);
}

static inline uint64_t
hash_key(const hmap_t *map, const uint8_t *key)
{
  uint64_t h = siphash24(map->hkey, key, map->keylen);
  return h < 2 ? h + 2 : h;
}

hmap_t *
hmap_new(size_t keylen)
{
  if (keylen == 0)
    hmap_bug("zero key length");
  hmap_t *map = pc_zalloc(sizeof(*map));
  map->keylen = keylen;
  map->stride = (sizeof(slot_t) + keylen + 7) & ~(size_t)7;
  map->hkey = siphash_process_key();
  return map;
}

void
hmap_free_(hmap_t *map, void (*value_free)(void *))
{
  if (!map)
    return;
  if (value_free) {
    for (size_t i = 0; i < map->cap; i++) {
      slot_t *s = slot_at(map, i);
      if (s->hash >= 2)
        value_free(s->val);
    }
  }
  free(map->slots);
  free(map);
}

/* Index of the slot holding key (hash h), or cap if absent. */
static size_t
find_slot(const hmap_t *map, const uint8_t *key, uint64_t h)
{
  size_t mask = map->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const slot_t *s = slot_at(map, i);
    if (s->hash == HASH_EMPTY)
      return map->cap;
    if (s->hash == h && !memcmp(s->key, key, map->keylen))
      return i;
  }
}

void *
hmap_get(const hmap_t *map, const uint8_t *key)
{
  if (map->n_live == 0)
    return NULL;
  size_t i = find_slot(map, key, hash_key(map, key));
  return i == map->cap ? NULL : slot_at(map, i)->val;
}

/* Rebuild the table with room for at least one more entry at load <= 1/2,
 * dropping tombstones. */
static void
rebuild(hmap_t *map)
{
  size_t newcap = map->cap ? map->cap : HMAP_MIN_CAP;
  while ((map->n_live + 1) * 2 > newcap) {
    if (newcap > SIZE_MAX / 2 / map->stride)
      hmap_bug("table too large");
    newcap *= 2;
  }
  uint8_t *old = map->slots;
  size_t oldcap = map->cap;
  map->slots = pc_calloc(newcap, map->stride);
  map->cap = newcap;
  map->n_tomb = 0;
  map->epoch++;
  size_t mask = newcap - 1;
  for (size_t j = 0; j < oldcap; j++) {
    const slot_t *o = (const slot_t *)(old + j * map->stride);
    if (o->hash < 2)
      continue;
    size_t i = o->hash & mask;
    while (slot_at(map, i)->hash != HASH_EMPTY)
      i = (i + 1) & mask;
    memcpy(slot_at(map, i), o, map->stride);
  }
  free(old);
}

void *
hmap_set(hmap_t *map, const uint8_t *key, void *val)
{
  if (!val)
    return hmap_remove(map, key);
  uint64_t h = hash_key(map, key);
  if (map->n_live) {
    size_t i = find_slot(map, key, h);
    if (i != map->cap) {
      slot_t *s = slot_at(map, i);
      void *old = s->val;
      s->val = val;
      return old;
    }
  }
  if ((map->n_live + map->n_tomb + 1) * 4 > map->cap * 3)
    rebuild(map);
  size_t mask = map->cap - 1;
  size_t i = h & mask;
  /* The key is absent, so the first free or dead slot on its probe path
   * is the right place. */
  while (slot_at(map, i)->hash >= 2)
    i = (i + 1) & mask;
  slot_t *s = slot_at(map, i);
  if (s->hash == HASH_TOMB)
    map->n_tomb--;
  s->hash = h;
  s->val = val;
  memcpy(s->key, key, map->keylen);
  map->n_live++;
  return NULL;
}

/* Remove the live entry at slot i and return its value. */
static void *
remove_at(hmap_t *map, size_t i)
{
  size_t mask = map->cap - 1;
  slot_t *s = slot_at(map, i);
  void *val = s->val;
  s->val = NULL;
  map->n_live--;
  if (slot_at(map, (i + 1) & mask)->hash != HASH_EMPTY) {
    /* Later entries may have probed past this slot: leave a marker. */
    s->hash = HASH_TOMB;
    map->n_tomb++;
    return val;
  }
  /* Nothing probes past an empty slot, so this slot and the tombstones
   * immediately before it are no longer needed. */
  s->hash = HASH_EMPTY;
  for (size_t j = (i - 1) & mask; j != i; j = (j - 1) & mask) {
    slot_t *t = slot_at(map, j);
    if (t->hash != HASH_TOMB)
      break;
    t->hash = HASH_EMPTY;
    map->n_tomb--;
  }
  return val;
}

void *
hmap_remove(hmap_t *map, const uint8_t *key)
{
  if (map->n_live == 0)
    return NULL;
  size_t i = find_slot(map, key, hash_key(map, key));
  return i == map->cap ? NULL : remove_at(map, i);
}

size_t
hmap_size(const hmap_t *map)
{
  return map->n_live;
}

size_t
hmap_keylen(const hmap_t *map)
{
  return map->keylen;
}

void
hmap_clear(hmap_t *map)
{
  if (map->slots)
    memset(map->slots, 0, map->cap * map->stride);
  map->n_live = 0;
  map->n_tomb = 0;
}

void
hmap_iter_init(hmap_iter_t *it, hmap_t *map)
{
  it->map = map;
  it->pos = 0;
  it->epoch = map->epoch;
  it->have_cur = 0;
}

int
hmap_iter_next(hmap_iter_t *it, const uint8_t **key_out, void **val_out)
{
  hmap_t *map = it->map;
  if (it->epoch != map->epoch)
    hmap_bug("new key inserted while iterating");
  while (it->pos < map->cap) {
    slot_t *s = slot_at(map, it->pos++);
    if (s->hash >= 2) {
      it->have_cur = 1;
      if (key_out)
        *key_out = s->key;
      if (val_out)
        *val_out = s->val;
      return 1;
    }
  }
  it->have_cur = 0;
  return 0;
}

void *
hmap_iter_remove_current(hmap_iter_t *it)
{
  hmap_t *map = it->map;
  if (it->epoch != map->epoch)
    hmap_bug("new key inserted while iterating");
  if (!it->have_cur)
    return NULL;
  it->have_cur = 0;
  size_t i = it->pos - 1;
  if (slot_at(map, i)->hash < 2)
    return NULL; /* already removed with hmap_remove() */
  return remove_at(map, i);
}

static void
check_keylen(const hmap_t *map, size_t want)
{
  if (map->keylen != want)
    hmap_bug("integer key used with a map of another key length");
}

void *
hmap_get_u32(const hmap_t *map, uint32_t key)
{
  uint8_t k[4];
  check_keylen(map, sizeof(k));
  set_u32(k, key);
  return hmap_get(map, k);
}

void *
hmap_set_u32(hmap_t *map, uint32_t key, void *val)
{
  uint8_t k[4];
  check_keylen(map, sizeof(k));
  set_u32(k, key);
  return hmap_set(map, k, val);
}

void *
hmap_remove_u32(hmap_t *map, uint32_t key)
{
  uint8_t k[4];
  check_keylen(map, sizeof(k));
  set_u32(k, key);
  return hmap_remove(map, k);
}

void *
hmap_get_u64(const hmap_t *map, uint64_t key)
{
  uint8_t k[8];
  check_keylen(map, sizeof(k));
  set_u64(k, key);
  return hmap_get(map, k);
}

void *
hmap_set_u64(hmap_t *map, uint64_t key, void *val)
{
  uint8_t k[8];
  check_keylen(map, sizeof(k));
  set_u64(k, key);
  return hmap_set(map, k, val);
}

void *
hmap_remove_u64(hmap_t *map, uint64_t key)
{
  uint8_t k[8];
  check_keylen(map, sizeof(k));
  set_u64(k, key);
  return hmap_remove(map, k);
}
