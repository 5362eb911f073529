/* SPDX-License-Identifier: BSD-3-Clause */
/* vec.h -- growable array of pointers (ptrvec_t).
 *
 * A ptrvec_t is a plain array of void * with a length and a capacity that
 * doubles when full, so push is amortised O(1) and get/set are O(1) with a
 * bounds check. The struct is public so that ptrvec_len()/ptrvec_get() can
 * be inline and PTRVEC_FOREACH needs no call; treat its fields as
 * read-only. Elements may be NULL. The vector does not own its elements:
 * ptrvec_free_() can free them with a function you pass.
 *
 * Out-of-range indices are programming errors and abort.
 *
 * Iterating:
 *
 *   PTRVEC_FOREACH_BEGIN(conns, conn_t *, c) {
 *     if (conn_is_dead(c)) {
 *       PTRVEC_FOREACH_DEL_CURRENT(conns, c);
 *       conn_free(c);
 *       continue;
 *     }
 *     ...uses c and c_idx (its index)...
 *   } PTRVEC_FOREACH_END(c);
 *
 * break and continue work as in a for loop.
 */
#ifndef PCTOR_LIB_CONTAINER_VEC_H
#define PCTOR_LIB_CONTAINER_VEC_H

#include <stddef.h>

typedef struct ptrvec_t {
  void **elts;
  size_t len;
  size_t cap;
} ptrvec_t;

/* New empty vector. Never returns NULL. */
ptrvec_t *ptrvec_new(void);

/* Free the vector; if elt_free is not NULL, call it on every element
 * (including NULL ones) first. Accepts NULL. ptrvec_free() also sets v to
 * NULL. */
void ptrvec_free_(ptrvec_t *v, void (*elt_free)(void *));
#define ptrvec_free(v, elt_free)                                        \
  do {                                                                  \
    ptrvec_free_((v), (elt_free));                                      \
    (v) = NULL;                                                         \
  } while (0)

/* Abort with a message about an index out of range (used by the inline
 * accessors). */
void ptrvec_bad_index_(size_t idx, size_t len) __attribute__((noreturn));

/* Number of elements. */
static inline size_t
ptrvec_len(const ptrvec_t *v)
{
  return v->len;
}

/* Element idx (idx < len). */
static inline void *
ptrvec_get(const ptrvec_t *v, size_t idx)
{
  if (idx >= v->len)
    ptrvec_bad_index_(idx, v->len);
  return v->elts[idx];
}

/* Replace element idx (idx < len) with x; returns the old element. */
void *ptrvec_set(ptrvec_t *v, size_t idx, void *x);

/* Append x. */
void ptrvec_push(ptrvec_t *v, void *x);

/* Remove and return the last element, or NULL if the vector is empty. */
void *ptrvec_pop(ptrvec_t *v);

/* Insert x at idx (idx <= len), moving later elements up by one. */
void ptrvec_insert(ptrvec_t *v, size_t idx, void *x);

/* Remove element idx (idx < len) and return it; the last element takes
 * its place (O(1), order not kept). */
void *ptrvec_remove_at(ptrvec_t *v, size_t idx);

/* Remove element idx (idx < len) and return it, moving later elements
 * down by one (O(n), order kept). */
void *ptrvec_remove_at_ordered(ptrvec_t *v, size_t idx);

/* Index of the first element equal to x (pointer comparison), or -1. */
long ptrvec_find(const ptrvec_t *v, const void *x);

/* Remove every element (without freeing them); keeps the memory. */
void ptrvec_clear(ptrvec_t *v);

/* Loop over the elements in order; var has type type and var##_idx is its
 * index. See the top of this file. */
#define PTRVEC_FOREACH_BEGIN(v, type, var)                              \
  do {                                                                  \
    __typeof__(v) var##_vec_ = (v);                                     \
    for (size_t var##_idx = 0; var##_idx < var##_vec_->len;             \
         var##_idx++) {                                                 \
      type var = (type)var##_vec_->elts[var##_idx];

#define PTRVEC_FOREACH_END(var)                                         \
    }                                                                   \
  } while (0)

/* Inside PTRVEC_FOREACH, remove the current element (keeping order); the
 * loop then continues with the element that followed it. */
#define PTRVEC_FOREACH_DEL_CURRENT(v, var)                              \
  do {                                                                  \
    ptrvec_remove_at_ordered((v), var##_idx);                           \
    var##_idx--;                                                        \
  } while (0)

#endif
