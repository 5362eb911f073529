/* SPDX-License-Identifier: BSD-3-Clause */
/* circ_queue.c -- a circuit's per-direction cell queue (circ_queue.h).
 *
 * Design: the queue owns its packed cells from circ_queue_push() until the
 * scheduler pops them (scheduler.c) or circ_queue_clear() frees them. A
 * push to a queue without a channel, or whose channel is closing, frees
 * the cell at once: nothing would ever send it. Per-command counting for
 * CELL_STATS is one process-wide switch (a testing-network option turns
 * it on); its counters are allocated lazily so that a relay that never
 * counts pays one NULL pointer per queue.
 */
#include "core/or/circ_queue.h"
#include "core/or/channel_internal.h"
#include "core/or/circuit.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

/* circ_queues_count_commands(); off by default. */
static int count_commands;

void
circ_queue_init(circ_queue_t *cq, struct circuit_t *circ)
{
  memset(cq, 0, sizeof(*cq));
  cell_queue_init(&cq->cells);
  cq->heap_idx = MINHEAP_IDX_NONE;
  cq->circ = circ;
}

/* The command of a packed fixed-size cell (circuit id of 2 or 4 bytes,
 * command, payload), or -1 if it is none a queue counts. */
static int
packed_cell_command(const packed_cell_t *pc)
{
  if (pc->len < CELL_PAYLOAD_LEN + 3)
    return -1;
  int cmd = pc->body[pc->len - CELL_PAYLOAD_LEN - 1];
  return cmd < CIRC_QUEUE_N_CMDS ? cmd : -1;
}

void
circ_queue_push(circ_queue_t *cq, packed_cell_t *pc)
{
  channel_t *chan = cq->chan;
  if (!chan || chan->close_pending) {
    packed_cell_free(pc);
    return;
  }
  if (count_commands) {
    int cmd = packed_cell_command(pc);
    if (cmd >= 0) {
      if (!cq->cmd_stats)
        cq->cmd_stats = pc_zalloc(sizeof(*cq->cmd_stats));
      cq->cmd_stats->added[cmd]++;
    }
  }
  cell_queue_append(&cq->cells, pc);
  scheduler_queue_has_cells(cq);
}

void
circ_queue_clear(circ_queue_t *cq)
{
  scheduler_queue_clear(cq);
  cell_queue_clear(&cq->cells);
  PC_FREE(cq->cmd_stats);
}

void
circ_queues_count_commands(int on)
{
  count_commands = on != 0;
}

void
circ_queue_note_removed(circ_queue_t *cq, const packed_cell_t *pc,
                        uint64_t waited_us)
{
  if (cq->low_water && cq->cells.n + 1 == cq->low_water && cq->circ)
    circuit_queue_drained(cq->circ, cq);
  int cmd;
  if (!cq->cmd_stats || (cmd = packed_cell_command(pc)) < 0)
    return;
  cq->cmd_stats->removed[cmd]++;
  cq->cmd_stats->removed_us[cmd] += waited_us;
}

int
circ_queue_take_cmd_stats(circ_queue_t *cq, circ_queue_cmd_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!cq->cmd_stats)
    return 0;
  *out = *cq->cmd_stats;
  memset(cq->cmd_stats, 0, sizeof(*cq->cmd_stats));
  for (int i = 0; i < CIRC_QUEUE_N_CMDS; i++)
    if (out->added[i] || out->removed[i])
      return 1;
  return 0;
}
