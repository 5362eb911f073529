/* SPDX-License-Identifier: BSD-3-Clause */
/* cell_queue.c -- packed-cell FIFOs with a free list (see cell_queue.h).
 *
 * The free list is bounded so that a burst does not pin its peak memory
 * forever: cells beyond FREELIST_MAX go back to malloc.
 */
#include "core/or/cell_queue.h"
#include "lib/malloc/alloc.h"
#include "lib/log/log.h"
#include "lib/malloc/memacct.h"

#include <stdlib.h>

#define FREELIST_MAX 4096

static packed_cell_t *freelist;
static unsigned n_free;
static uint64_t n_allocated;

static packed_cell_release_fn release_hooks[4];

int
packed_cell_set_release_hook_class(unsigned cls, packed_cell_release_fn fn)
{
  if (cls > 3)
    return -1;
  if (fn && release_hooks[cls] && release_hooks[cls] != fn) {
    log_warn("A second packed-cell release hook was refused");
    return -1;
  }
  release_hooks[cls] = fn;
  return 0;
}

int
packed_cell_set_release_hook(packed_cell_release_fn fn)
{
  return packed_cell_set_release_hook_class(0, fn);
}

packed_cell_t *
packed_cell_new(void)
{
  packed_cell_t *pc;
  if (freelist) {
    pc = freelist;
    freelist = pc->next;
    n_free--;
  } else {
    pc = pc_malloc(sizeof(*pc));
  }
  pc->next = NULL;
  pc->len = 0;
  pc->queued_us = 0;
  pc->rel_tag = 0;
  pc->rel_seq = 0;
  n_allocated++;
  memacct_add(MEMACCT_CELLS, sizeof(*pc));
  return pc;
}

void
packed_cell_free(packed_cell_t *pc)
{
  if (!pc)
    return;
  if (pc->rel_tag) {
    uint64_t tag = pc->rel_tag;
    pc->rel_tag = 0;
    packed_cell_release_fn fn =
        release_hooks[tag >> PACKED_CELL_TAG_CLASS_SHIFT];
    if (fn)
      fn(tag, pc->rel_seq);
  }
  n_allocated--;
  memacct_sub(MEMACCT_CELLS, sizeof(*pc));
  if (n_free < FREELIST_MAX) {
    pc->next = freelist;
    freelist = pc;
    n_free++;
  } else {
    free(pc);
  }
}

uint64_t
packed_cells_allocated(void)
{
  return n_allocated;
}

uint64_t
cell_queues_total_bytes(void)
{
  return n_allocated * (uint64_t)sizeof(packed_cell_t);
}

void
packed_cell_freelist_clear(void)
{
  while (freelist) {
    packed_cell_t *pc = freelist;
    freelist = pc->next;
    free(pc);
  }
  n_free = 0;
}

void
cell_queue_init(cell_queue_t *q)
{
  q->head = q->tail = NULL;
  q->n = 0;
}

void
cell_queue_append(cell_queue_t *q, packed_cell_t *pc)
{
  pc->next = NULL;
  if (q->tail)
    q->tail->next = pc;
  else
    q->head = pc;
  q->tail = pc;
  q->n++;
}

void
cell_queue_append_cell(cell_queue_t *q, const cell_t *cell, int link_proto,
                       uint64_t now_us)
{
  packed_cell_t *pc = packed_cell_new();
  cell_pack(pc->body, cell, link_proto);
  pc->len = (uint16_t)cell_network_len(link_proto);
  pc->queued_us = now_us;
  cell_queue_append(q, pc);
}

packed_cell_t *
cell_queue_pop(cell_queue_t *q)
{
  packed_cell_t *pc = q->head;
  if (!pc)
    return NULL;
  q->head = pc->next;
  if (!q->head)
    q->tail = NULL;
  q->n--;
  pc->next = NULL;
  return pc;
}

void
cell_queue_clear(cell_queue_t *q)
{
  packed_cell_t *pc;
  while ((pc = cell_queue_pop(q)))
    packed_cell_free(pc);
}
