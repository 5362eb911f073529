/* SPDX-License-Identifier: BSD-3-Clause */
/* command.h -- dispatch of cells that arrive on an open channel to the
 * circuit layer: CREATE*, CREATED*, RELAY*, DESTROY, padding. */
#ifndef PCTOR_CORE_OR_COMMAND_H
#define PCTOR_CORE_OR_COMMAND_H
#include "core/or/cell_queue.h"
#include "core/or/channel.h"

/* Handle one 514-byte cell from chan; takes ownership of pc. */
void command_process_cell(channel_t *chan, packed_cell_t *pc);

/* Counters of cells rejected as protocol violations (for tests). */
typedef struct command_stats_t {
  uint64_t n_create_refused;
  uint64_t n_unknown_circ;
  uint64_t n_unknown_command;
  uint64_t n_protocol_closes;
  uint64_t n_held_pending; /* relay cells held for a pending handshake */
} command_stats_t;
void command_get_stats(command_stats_t *out);
/* One gate for new circuits (feature/hibernate's soft and hard states):
 * fn returns 0 to let a CREATE through, or the DESTROY reason to refuse
 * it with. NULL removes the gate. */
typedef int (*command_create_gate_fn)(void);
void command_set_create_gate(command_create_gate_fn fn);
/* The event-loop half of a CREATE/CREATE2 (cpuworker.h's finish and
 * expired functions): make the circuit and answer CREATED2/CREATED_FAST,
 * or DESTROY. chan must be open. */
struct cpuworker_result_t;
void command_create_finish(channel_t *chan,
                           const struct cpuworker_result_t *res);
void command_create_expired(channel_t *chan, uint32_t circ_id);
#endif
