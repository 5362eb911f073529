/* SPDX-License-Identifier: BSD-3-Clause */
/* minheap.h -- indexed binary min-heap of pointers.
 *
 * Built for the circuit scheduler, which keeps circuits ordered by a cell
 * count that changes all the time: besides add/pop it must update or
 * remove an arbitrary element in O(log n). To find an element's position
 * without searching, each element stores its own heap index in an int
 * field at a byte offset given to minheap_new(), e.g.
 *
 *   typedef struct { double ewma; int heap_idx; } circ_t;
 *   minheap_t *h = minheap_new(cmp_ewma, offsetof(circ_t, heap_idx));
 *
 * The heap keeps that field up to date; MINHEAP_IDX_NONE (-1) means "not
 * in a heap". Initialise it to MINHEAP_IDX_NONE before the first
 * minheap_add(). An element can be in at most one heap per index field.
 *
 * cmp(a, b) returns < 0 if a must come out before b, 0 if they tie, > 0
 * otherwise. The heap does not own its elements.
 */
#ifndef PCTOR_LIB_CONTAINER_MINHEAP_H
#define PCTOR_LIB_CONTAINER_MINHEAP_H

#include <stddef.h>

#define MINHEAP_IDX_NONE (-1)

typedef struct minheap_t minheap_t;
typedef int (*minheap_cmp_fn)(const void *a, const void *b);

/* New empty heap ordered by cmp, whose elements keep their index in the
 * int at byte offset idx_offset. Never returns NULL. */
minheap_t *minheap_new(minheap_cmp_fn cmp, size_t idx_offset);

/* Free the heap; if elt_free is not NULL, call it on every element still
 * in the heap (without resetting their index fields). Accepts NULL.
 * minheap_free() also sets h to NULL. */
void minheap_free_(minheap_t *h, void (*elt_free)(void *));
#define minheap_free(h, elt_free)                                       \
  do {                                                                  \
    minheap_free_((h), (elt_free));                                     \
    (h) = NULL;                                                         \
  } while (0)

/* Add elem, whose index field must be MINHEAP_IDX_NONE (else abort).
 * O(log n). */
void minheap_add(minheap_t *h, void *elem);

/* Smallest element without removing it, or NULL if the heap is empty. */
void *minheap_peek(const minheap_t *h);

/* Remove and return the smallest element (its index field becomes
 * MINHEAP_IDX_NONE), or NULL if the heap is empty. O(log n). */
void *minheap_pop(minheap_t *h);

/* Remove elem, which must be in this heap (else abort); its index field
 * becomes MINHEAP_IDX_NONE. O(log n). */
void minheap_remove(minheap_t *h, void *elem);

/* Restore the order after elem's key changed in either direction; elem
 * must be in this heap (else abort). O(log n). */
void minheap_update(minheap_t *h, void *elem);

/* Number of elements. */
size_t minheap_len(const minheap_t *h);

/* Element at heap position i (i < len), for visiting every element in no
 * particular order; do not modify the heap while visiting. */
void *minheap_get(const minheap_t *h, size_t i);

/* Debugging/tests: 0 if every element is >= its parent and every stored
 * index matches the element's position; -1 (and a log line) otherwise.
 * O(n). */
int minheap_check(const minheap_t *h);

#endif
