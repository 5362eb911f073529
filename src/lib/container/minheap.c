/* SPDX-License-Identifier: BSD-3-Clause */
/* minheap.c -- indexed binary min-heap (see minheap.h).
 *
 * The classic array layout: the children of position i are 2i+1 and 2i+2.
 * Every time an element is written to a position, the position is also
 * written into the element's index field (set_pos()), so removal and
 * update can start from the element's position directly. Sifting moves a
 * "hole" rather than swapping, so each level costs one write per element.
 */
#include "lib/container/minheap.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct minheap_t {
  void **elts;
  size_t len;
  size_t cap;
  size_t idx_offset;
  minheap_cmp_fn cmp;
};

static void
minheap_bug(const char *what)
{
  log_err("minheap: %s; aborting", what);
  abort();
}

static inline int
get_pos(const minheap_t *h, const void *elem)
{
  int idx;
  memcpy(&idx, (const char *)elem + h->idx_offset, sizeof(idx));
  return idx;
}

static inline void
set_pos(const minheap_t *h, void *elem, int idx)
{
  memcpy((char *)elem + h->idx_offset, &idx, sizeof(idx));
}

/* Put elem at position i and record it. */
static inline void
place(minheap_t *h, size_t i, void *elem)
{
  h->elts[i] = elem;
  set_pos(h, elem, (int)i);
}

minheap_t *
minheap_new(minheap_cmp_fn cmp, size_t idx_offset)
{
  minheap_t *h = pc_zalloc(sizeof(*h));
  h->cmp = cmp;
  h->idx_offset = idx_offset;
  return h;
}

void
minheap_free_(minheap_t *h, void (*elt_free)(void *))
{
  if (!h)
    return;
  if (elt_free) {
    for (size_t i = 0; i < h->len; i++)
      elt_free(h->elts[i]);
  }
  free(h->elts);
  free(h);
}

/* Move elem up from the hole at position i to where it belongs. */
static void
sift_up(minheap_t *h, size_t i, void *elem)
{
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h->cmp(elem, h->elts[parent]) >= 0)
      break;
    place(h, i, h->elts[parent]);
    i = parent;
  }
  place(h, i, elem);
}

/* Move elem down from the hole at position i to where it belongs. */
static void
sift_down(minheap_t *h, size_t i, void *elem)
{
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= h->len)
      break;
    if (child + 1 < h->len && h->cmp(h->elts[child + 1], h->elts[child]) < 0)
      child++;
    if (h->cmp(h->elts[child], elem) >= 0)
      break;
    place(h, i, h->elts[child]);
    i = child;
  }
  place(h, i, elem);
}

/* Put elem in the hole at position i, moving it up or down as needed. */
static void
fix_at(minheap_t *h, size_t i, void *elem)
{
  if (i > 0 && h->cmp(elem, h->elts[(i - 1) / 2]) < 0)
    sift_up(h, i, elem);
  else
    sift_down(h, i, elem);
}

void
minheap_add(minheap_t *h, void *elem)
{
  if (get_pos(h, elem) != MINHEAP_IDX_NONE)
    minheap_bug("adding an element that is already in a heap");
  if (h->len == h->cap) {
    size_t ncap = h->cap ? h->cap * 2 : 16;
    if (ncap > (size_t)INT_MAX)
      minheap_bug("heap too large");
    h->elts = pc_realloc(h->elts, ncap * sizeof(void *));
    h->cap = ncap;
  }
  h->len++;
  sift_up(h, h->len - 1, elem);
}

void *
minheap_peek(const minheap_t *h)
{
  return h->len ? h->elts[0] : NULL;
}

/* Remove the element at position i and return it. */
static void *
remove_pos(minheap_t *h, size_t i)
{
  void *elem = h->elts[i];
  void *last = h->elts[--h->len];
  if (i < h->len)
    fix_at(h, i, last);
  set_pos(h, elem, MINHEAP_IDX_NONE);
  return elem;
}

void *
minheap_pop(minheap_t *h)
{
  return h->len ? remove_pos(h, 0) : NULL;
}

/* Position of elem, which must be in this heap. */
static size_t
pos_of(const minheap_t *h, const void *elem)
{
  int idx = get_pos(h, elem);
  if (idx < 0 || (size_t)idx >= h->len || h->elts[idx] != elem)
    minheap_bug("element is not in this heap");
  return (size_t)idx;
}

void
minheap_remove(minheap_t *h, void *elem)
{
  remove_pos(h, pos_of(h, elem));
}

void
minheap_update(minheap_t *h, void *elem)
{
  fix_at(h, pos_of(h, elem), elem);
}

size_t
minheap_len(const minheap_t *h)
{
  return h->len;
}

void *
minheap_get(const minheap_t *h, size_t i)
{
  if (i >= h->len)
    minheap_bug("position out of range");
  return h->elts[i];
}

int
minheap_check(const minheap_t *h)
{
  for (size_t i = 0; i < h->len; i++) {
    if (get_pos(h, h->elts[i]) != (int)i) {
      log_warn("minheap: element at %zu has stored index %d", i,
               get_pos(h, h->elts[i]));
      return -1;
    }
    if (i > 0 && h->cmp(h->elts[i], h->elts[(i - 1) / 2]) < 0) {
      log_warn("minheap: element at %zu is smaller than its parent", i);
      return -1;
    }
  }
  return 0;
}
