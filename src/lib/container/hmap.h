/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap.h -- hash map from fixed-length byte keys to pointers.
 *
 * The key length is chosen when the map is created (4 for circuit IDs, 8,
 * 20 for RSA identity digests, 32 for ed25519 identities, ...); every key
 * of that map has exactly that many bytes and is copied into the map.
 * Keys are hashed with SipHash-2-4 under a secret process-wide key, so a
 * peer that chooses keys cannot make lookups slow.
 *
 * Values are non-NULL void pointers that the map does not own (pass a free
 * function to hmap_free_() to release them with the map). NULL is never a
 * stored value, so hmap_get() returning NULL means "absent".
 *
 * Design: open addressing with linear probing in one array of slots (hash,
 * value and key side by side, so a lookup usually touches one cache line).
 * Removal leaves a tombstone; tombstones are reclaimed when the table is
 * rebuilt on a later insertion. Consequently removing entries never moves
 * other entries, which is what makes removal during iteration safe.
 * Lookups and updates are amortised O(1) and never allocate; the table only
 * grows (it never shrinks).
 *
 * Iteration visits every entry once, in no particular order:
 *
 *   hmap_iter_t it;
 *   const uint8_t *key;
 *   void *val;
 *   hmap_iter_init(&it, map);
 *   while (hmap_iter_next(&it, &key, &val)) {
 *     if (dead(val))
 *       free(hmap_iter_remove_current(&it));
 *   }
 *
 * While iterating you may remove any entries (hmap_iter_remove_current(),
 * hmap_remove()) and replace the value of existing keys (hmap_set() on a
 * key that is present), but must not add new keys: an insertion may
 * rebuild the table, and an iterator that sees a rebuilt table aborts.
 *
 * A map is not thread-safe; use one map per thread or lock around it.
 */
#ifndef PCTOR_LIB_CONTAINER_HMAP_H
#define PCTOR_LIB_CONTAINER_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct hmap_t hmap_t;

/* New empty map whose keys are keylen bytes (keylen >= 1).
 * Never returns NULL. */
hmap_t *hmap_new(size_t keylen);

/* Free the map; if value_free is not NULL it is called on every value.
 * Accepts NULL. The hmap_free() macro also sets map to NULL. */
void hmap_free_(hmap_t *map, void (*value_free)(void *));
#define hmap_free(map, value_free)                                      \
  do {                                                                  \
    hmap_free_((map), (value_free));                                    \
    (map) = NULL;                                                       \
  } while (0)

/* The value stored under key (keylen bytes), or NULL if there is none. */
void *hmap_get(const hmap_t *map, const uint8_t *key);

/* Store val under key, replacing any previous value. Returns the previous
 * value, or NULL if the key was absent. Setting val == NULL is the same as
 * hmap_remove(). */
void *hmap_set(hmap_t *map, const uint8_t *key, void *val);

/* Remove key. Returns the value it had, or NULL if it was absent. */
void *hmap_remove(hmap_t *map, const uint8_t *key);

/* Number of entries. */
size_t hmap_size(const hmap_t *map);

/* Key length given to hmap_new(). */
size_t hmap_keylen(const hmap_t *map);

/* Remove every entry without freeing values (keeps the table's memory). */
void hmap_clear(hmap_t *map);

/* Iterator state: treat the fields as private. */
typedef struct hmap_iter_t {
  hmap_t *map;
  size_t pos;      /* slot after the current one */
  uint64_t epoch;  /* map's rebuild counter when iteration started */
  int have_cur;    /* 1 if pos - 1 is a live entry returned by _next */
} hmap_iter_t;

/* Start iterating over map. */
void hmap_iter_init(hmap_iter_t *it, hmap_t *map);

/* Advance to the next entry. Returns 1 and sets *key_out (keylen bytes,
 * valid until the next insertion into the map or hmap_free()) and
 * *val_out, or returns 0 at the end.
 * Either out-pointer may be NULL. */
int hmap_iter_next(hmap_iter_t *it, const uint8_t **key_out, void **val_out);

/* Remove the entry last returned by hmap_iter_next() and return its value
 * (NULL if there is no current entry, e.g. it was already removed). The
 * next hmap_iter_next() continues with the following entry. */
void *hmap_iter_remove_current(hmap_iter_t *it);

/* Convenience wrappers for maps with integer keys: the integer is used as
 * its big-endian bytes, so the map's keylen must be 4 (the _u32 functions)
 * or 8 (the _u64 functions); a mismatch aborts. */
void *hmap_get_u32(const hmap_t *map, uint32_t key);
void *hmap_set_u32(hmap_t *map, uint32_t key, void *val);
void *hmap_remove_u32(hmap_t *map, uint32_t key);
void *hmap_get_u64(const hmap_t *map, uint64_t key);
void *hmap_set_u64(hmap_t *map, uint64_t key, void *val);
void *hmap_remove_u64(hmap_t *map, uint64_t key);

#endif
