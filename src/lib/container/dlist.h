/* SPDX-License-Identifier: BSD-3-Clause */
/* dlist.h -- intrusive doubly-linked list.
 *
 * The list links live inside the listed objects, so adding and removing
 * never allocates and an object can remove itself in O(1) without knowing
 * the list head:
 *
 *   typedef struct conn_t { ...; dlist_node_t link; } conn_t;
 *   dlist_t active;
 *   dlist_init(&active);
 *   dlist_insert_tail(&active, &conn->link);
 *   dlist_node_t *n, *tmp;
 *   DLIST_FOREACH_SAFE(&active, n, tmp) {
 *     conn_t *c = DLIST_ENTRY(n, conn_t, link);
 *     if (done(c))
 *       dlist_remove(&c->link);          // safe: tmp already saved
 *   }
 *
 * A dlist_t is a circular list around a sentinel node, so insertion and
 * removal have no special cases. A node that is not in a list has NULL
 * links (after dlist_node_init() or dlist_remove()), which
 * dlist_node_is_linked() reports. An object can be in as many lists as it
 * has dlist_node_t members. A list is not thread-safe.
 */
#ifndef PCTOR_LIB_CONTAINER_DLIST_H
#define PCTOR_LIB_CONTAINER_DLIST_H

#include <stddef.h>

typedef struct dlist_node_t {
  struct dlist_node_t *prev, *next;
} dlist_node_t;

typedef struct dlist_t {
  dlist_node_t head; /* sentinel: head.next is the first node */
} dlist_t;

/* The object of type type whose member member is the node n. */
#define DLIST_ENTRY(n, type, member)                                    \
  ((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Make list empty. Must be called before any other use of list. */
static inline void
dlist_init(dlist_t *list)
{
  list->head.prev = list->head.next = &list->head;
}

/* Mark n as not in any list. */
static inline void
dlist_node_init(dlist_node_t *n)
{
  n->prev = n->next = NULL;
}

/* True if n is currently in a list. */
static inline int
dlist_node_is_linked(const dlist_node_t *n)
{
  return n->next != NULL;
}

/* True if list has no nodes. */
static inline int
dlist_is_empty(const dlist_t *list)
{
  return list->head.next == &list->head;
}

/* Link n between the adjacent nodes a and b. */
static inline void
dlist_link_between_(dlist_node_t *n, dlist_node_t *a, dlist_node_t *b)
{
  n->prev = a;
  n->next = b;
  a->next = n;
  b->prev = n;
}

/* Add n (which must not be in a list) at the front of list. */
static inline void
dlist_insert_head(dlist_t *list, dlist_node_t *n)
{
  dlist_link_between_(n, &list->head, list->head.next);
}

/* Add n (which must not be in a list) at the end of list. */
static inline void
dlist_insert_tail(dlist_t *list, dlist_node_t *n)
{
  dlist_link_between_(n, list->head.prev, &list->head);
}

/* Add n (not in a list) right after pos (in a list). */
static inline void
dlist_insert_after(dlist_node_t *pos, dlist_node_t *n)
{
  dlist_link_between_(n, pos, pos->next);
}

/* Add n (not in a list) right before pos (in a list). */
static inline void
dlist_insert_before(dlist_node_t *pos, dlist_node_t *n)
{
  dlist_link_between_(n, pos->prev, pos);
}

/* Unlink n from its list and mark it unlinked. Does nothing if n is not
 * in a list. */
static inline void
dlist_remove(dlist_node_t *n)
{
  if (!n->next)
    return;
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = NULL;
}

/* First node of list, or NULL if it is empty. */
static inline dlist_node_t *
dlist_first(const dlist_t *list)
{
  return dlist_is_empty(list) ? NULL : list->head.next;
}

/* Last node of list, or NULL if it is empty. */
static inline dlist_node_t *
dlist_last(const dlist_t *list)
{
  return dlist_is_empty(list) ? NULL : list->head.prev;
}

/* Node after n in list, or NULL if n is the last. */
static inline dlist_node_t *
dlist_next(const dlist_t *list, const dlist_node_t *n)
{
  return n->next == &list->head ? NULL : n->next;
}

/* Node before n in list, or NULL if n is the first. */
static inline dlist_node_t *
dlist_prev(const dlist_t *list, const dlist_node_t *n)
{
  return n->prev == &list->head ? NULL : n->prev;
}

/* Number of nodes (O(n); for tests and diagnostics). */
static inline size_t
dlist_len(const dlist_t *list)
{
  size_t k = 0;
  for (const dlist_node_t *n = list->head.next; n != &list->head; n = n->next)
    k++;
  return k;
}

/* Loop over the nodes of list from first to last with node (a
 * dlist_node_t *); tmp (another dlist_node_t *) holds the next node, so
 * the body may remove or free node. Do not remove the node held in tmp. */
#define DLIST_FOREACH_SAFE(list, node, tmp)                             \
  for ((node) = (list)->head.next, (tmp) = (node)->next;                \
       (node) != &(list)->head; (node) = (tmp), (tmp) = (node)->next)

#endif
