/* SPDX-License-Identifier: BSD-3-Clause */
/* circ_queue.h -- a circuit's queue of cells for one direction: the cells
 * waiting for the channel on that side, and the state the scheduler keeps
 * about the queue.
 *
 * Each circuit has one circ_queue_t per direction. Its cells are a FIFO of
 * packed cells (cell_queue.h); a queue that receives cells is handed to the
 * scheduler (scheduler.h), which moves cells into channels' output buffers
 * in priority order when they have room, and keeps its heap position and
 * EWMA in the fields marked below. The per-queue figures are kept for
 * MeasureMe and experiments; the per-command counts for tor's CELL_STATS
 * event. channel.h includes this header, so code that sees channels sees
 * queues too.
 */
#ifndef PCTOR_CORE_OR_CIRC_QUEUE_H
#define PCTOR_CORE_OR_CIRC_QUEUE_H
#include <stdint.h>
#include "core/or/cell_queue.h"

struct channel_t;
struct circuit_t;

typedef struct circ_queue_stats_t {
  uint64_t cells_sent;      /* cells moved to the channel */
  uint64_t queued_us_total; /* summed time those cells waited */
  uint64_t queued_us_max;   /* longest wait of one cell */
} circ_queue_stats_t;
/* Per-command counts of a queue's cells for tor's CELL_STATS event
 * (control-spec), kept only while circ_queues_count_commands(1): allocated
 * at a queue's first cell then and freed when the queue is cleared, so a
 * relay without the testing option pays one pointer per queue. Indexed by
 * the fixed-size cell commands (0..CIRC_QUEUE_N_CMDS-1), the only ones a
 * circuit queue holds. */
#define CIRC_QUEUE_N_CMDS 13
typedef struct circ_queue_cmd_stats_t {
  uint32_t added[CIRC_QUEUE_N_CMDS];      /* cells queued */
  uint32_t removed[CIRC_QUEUE_N_CMDS];    /* cells moved to the channel */
  uint64_t removed_us[CIRC_QUEUE_N_CMDS]; /* their summed waits */
} circ_queue_cmd_stats_t;
typedef struct circ_queue_t {
  cell_queue_t cells;
  struct channel_t *chan;     /* the channel these cells go to */
  struct circuit_t *circ;
  /* scheduler.c */
  int heap_idx;               /* in chan's heap of queues with cells */
  /* 0, or: when a cell leaving for the channel takes the queue below this
   * many cells, circuit_queue_drained() is told (a circuit end without
   * windows packages again, edge.h). Next to heap_idx: no padding. */
  unsigned low_water;
  double ewma;                /* average, scaled to ewma_base_us */
  uint64_t ewma_base_us;      /* time base of the scaled average */
  uint64_t rr_seq;            /* round-robin order; EWMA tie break */
  circ_queue_stats_t stats;
  circ_queue_cmd_stats_t *cmd_stats; /* NULL unless counting (above) */
} circ_queue_t;
void circ_queue_init(circ_queue_t *cq, struct circuit_t *circ);
/* Queue a packed cell for cq->chan (takes ownership) and schedule a flush.
 * Without a channel, or when it is closing, the cell is freed. */
void circ_queue_push(circ_queue_t *cq, packed_cell_t *pc);
/* Drop every queued cell and leave the scheduler. */
void circ_queue_clear(circ_queue_t *cq);
/* Start (on) or stop counting cells per command in every queue. */
void circ_queues_count_commands(int on);
/* For the scheduler: pc leaves cq for the channel after waiting
 * waited_us. */
void circ_queue_note_removed(circ_queue_t *cq, const packed_cell_t *pc,
                             uint64_t waited_us);
/* Copy cq's per-command counts since the last call into *out and reset
 * them. Returns 1, or 0 (out zeroed) when nothing was counted. */
int circ_queue_take_cmd_stats(circ_queue_t *cq, circ_queue_cmd_stats_t *out);
#endif
