/* SPDX-License-Identifier: BSD-3-Clause */
/* vec.c -- growable pointer array (see vec.h).
 *
 * Capacity starts at 8 on the first push and doubles, so n pushes cost
 * O(n) in total; memory is never given back until the vector is freed.
 */
#include "lib/container/vec.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PTRVEC_MIN_CAP 8

ptrvec_t *
ptrvec_new(void)
{
  return pc_zalloc(sizeof(ptrvec_t));
}

void
ptrvec_free_(ptrvec_t *v, void (*elt_free)(void *))
{
  if (!v)
    return;
  if (elt_free) {
    for (size_t i = 0; i < v->len; i++)
      elt_free(v->elts[i]);
  }
  free(v->elts);
  free(v);
}

void
ptrvec_bad_index_(size_t idx, size_t len)
{
  log_err("ptrvec: index %zu out of range (length %zu); aborting", idx,
          len);
  abort();
}

/* Make room for one more element. */
static void
grow(ptrvec_t *v)
{
  if (v->len < v->cap)
    return;
  size_t ncap = v->cap ? v->cap * 2 : PTRVEC_MIN_CAP;
  if (ncap > SIZE_MAX / sizeof(void *))
    ptrvec_bad_index_(ncap, v->len);
  v->elts = pc_realloc(v->elts, ncap * sizeof(void *));
  v->cap = ncap;
}

void *
ptrvec_set(ptrvec_t *v, size_t idx, void *x)
{
  if (idx >= v->len)
    ptrvec_bad_index_(idx, v->len);
  void *old = v->elts[idx];
  v->elts[idx] = x;
  return old;
}

void
ptrvec_push(ptrvec_t *v, void *x)
{
  grow(v);
  v->elts[v->len++] = x;
}

void *
ptrvec_pop(ptrvec_t *v)
{
  if (v->len == 0)
    return NULL;
  return v->elts[--v->len];
}

void
ptrvec_insert(ptrvec_t *v, size_t idx, void *x)
{
  if (idx > v->len)
    ptrvec_bad_index_(idx, v->len);
  grow(v);
  memmove(v->elts + idx + 1, v->elts + idx,
          (v->len - idx) * sizeof(void *));
  v->elts[idx] = x;
  v->len++;
}

void *
ptrvec_remove_at(ptrvec_t *v, size_t idx)
{
  if (idx >= v->len)
    ptrvec_bad_index_(idx, v->len);
  void *x = v->elts[idx];
  v->elts[idx] = v->elts[--v->len];
  return x;
}

void *
ptrvec_remove_at_ordered(ptrvec_t *v, size_t idx)
{
  if (idx >= v->len)
    ptrvec_bad_index_(idx, v->len);
  void *x = v->elts[idx];
  memmove(v->elts + idx, v->elts + idx + 1,
          (v->len - idx - 1) * sizeof(void *));
  v->len--;
  return x;
}

long
ptrvec_find(const ptrvec_t *v, const void *x)
{
  for (size_t i = 0; i < v->len; i++)
    if (v->elts[i] == x)
      return (long)i;
  return -1;
}

void
ptrvec_clear(ptrvec_t *v)
{
  v->len = 0;
}
