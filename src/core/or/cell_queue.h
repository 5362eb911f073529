/* SPDX-License-Identifier: BSD-3-Clause */
/* cell_queue.h -- FIFO queues of packed cells waiting for a channel.
 *
 * A cell that is relayed is packed once into wire format (514 bytes on link
 * protocol >= 4) and sits in its circuit's queue until the scheduler moves
 * it into the channel's output buffer. Packed cells come from a free list,
 * so queueing costs no malloc in the steady state. Each packed cell records
 * when it was queued (for queueing-delay statistics and the scheduler).
 */
#ifndef PCTOR_CORE_OR_CELL_QUEUE_H
#define PCTOR_CORE_OR_CELL_QUEUE_H
#include <stddef.h>
#include <stdint.h>
#include "core/proto/cell.h"

typedef struct packed_cell_t {
  struct packed_cell_t *next;
  uint64_t queued_us;     /* monotonic time it was queued */
  uint16_t len;           /* bytes used in body */
  /* Release tag (0: none): set by a hop-by-hop transport (BackTap) on a
   * cell it delivered, so that it learns when the cell has left this relay
   * (written towards the next hop, consumed here, or dropped): the hook
   * registered with packed_cell_set_release_hook() is called with the tag
   * and seq when the cell is freed. */
  uint64_t rel_tag;
  uint32_t rel_seq;
  uint8_t body[CELL_MAX_NETWORK_LEN];
} packed_cell_t;

typedef struct cell_queue_t {
  packed_cell_t *head, *tail;
  uint32_t n;
} cell_queue_t;

void cell_queue_init(cell_queue_t *q);
/* Pack cell for link_proto and append it. */
void cell_queue_append_cell(cell_queue_t *q, const cell_t *cell,
                            int link_proto, uint64_t now_us);
void cell_queue_append(cell_queue_t *q, packed_cell_t *pc);
/* Remove and return the first cell (NULL if empty); the caller gives it
 * back with packed_cell_free(). */
packed_cell_t *cell_queue_pop(cell_queue_t *q);
/* Free every queued cell. */
void cell_queue_clear(cell_queue_t *q);

packed_cell_t *packed_cell_new(void);
void packed_cell_free(packed_cell_t *pc);
/* One hook (a second, different one is refused with -1; NULL removes):
 * called from packed_cell_free() for cells with a non-zero rel_tag. It must
 * not free packed cells. */
typedef void (*packed_cell_release_fn)(uint64_t tag, uint32_t seq);
int packed_cell_set_release_hook(packed_cell_release_fn fn);
/* Tags carry a class in their top two bits: the hook above gets class 0
 * (BackTap's tags are small counters), and a transport that needs its own
 * hook (TCP-over-DTLS, feature/dtcp) sets its tags' class and registers
 * for it here (cls 1-3; same refusal rule). One lookup per release. */
#define PACKED_CELL_TAG_CLASS_SHIFT 62
#define PACKED_CELL_TAG_CLASS(cls) ((uint64_t)(cls) << PACKED_CELL_TAG_CLASS_SHIFT)
int packed_cell_set_release_hook_class(unsigned cls, packed_cell_release_fn fn);
/* Total packed cells currently allocated (queued anywhere), for memory
 * accounting and tests. */
uint64_t packed_cells_allocated(void);
/* Memory held by those cells: packed_cells_allocated() x
 * sizeof(packed_cell_t). This is what MaxMemInQueues limits (circuit.h). */
uint64_t cell_queues_total_bytes(void);
/* Release the free list (at shutdown, so leak checkers stay quiet). */
void packed_cell_freelist_clear(void);
#endif
