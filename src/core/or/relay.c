/* SPDX-License-Identifier: BSD-3-Clause */
/* relay.c -- handling of relay cells addressed to this relay (relay.h).
 *
 * The dispatch table is filled at start-up by the features; a command with
 * no handler is answered or ignored as tor does: stream openings get a
 * RELAY_END (we are not an exit / directory yet), other unknown commands
 * are dropped with a log line so that new commands (such as MeasureMe)
 * never break a circuit through a relay that doesn't know them. Stream
 * flow control (DATA, END, SENDME, and XON/XOFF with congestion control)
 * goes to stream.c.
 *
 * A circuit that is a leg of a multiplexed set (or_circuit_t.mux, see
 * circuit_mux_ops_t) hands its multiplexed messages to the registered
 * inbound hook instead, after counting DATA towards its own SENDMEs; the
 * feature returns them in order through relay_deliver_ordered(), which
 * runs the same dispatch on the set's stream home.
 */
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/log/log.h"

#include <string.h>

static relay_handler_fn handlers[256];

int
relay_register_handler(uint8_t relay_command, relay_handler_fn fn)
{
  if (fn && handlers[relay_command] && handlers[relay_command] != fn) {
    log_warn("A second handler for relay command %u was refused: one is "
             "registered already (only one feature may handle a command)",
             relay_command);
    return -1;
  }
  handlers[relay_command] = fn;
  return 0;
}

void
relay_clear_handlers(void)
{
  memset(handlers, 0, sizeof(handlers));
}

static void
handle_truncate(or_circuit_t *oc)
{
  circuit_t *c = &oc->base;
  if (c->n_chan) {
    if (!c->n_pending && channel_is_open(c->n_chan)) {
      cell_t d;
      destroy_cell_make(&d, c->n_circ_id, DESTROY_REASON_NONE);
      channel_send_cell(c->n_chan, &d);
    }
    circ_queue_clear(&c->n_queue);
    if (!c->n_pending && channel_get_circuit(c->n_chan, c->n_circ_id) == c)
      channel_remove_circuit(c->n_chan, c->n_circ_id);
    if (dlist_node_is_linked(&c->pending_node))
      dlist_remove(&c->pending_node);
    c->n_chan = NULL;
    c->n_circ_id = 0;
    c->n_queue.chan = NULL;
    c->n_pending = 0;
  }
  oc->extend_pending = 0;
  uint8_t reason = DESTROY_REASON_REQUESTED;
  or_circuit_send_relay(oc, RELAY_COMMAND_TRUNCATED, 0, &reason, 1);
}

static relay_mux_inbound_fn mux_inbound;
/* Set at start-up, read per BEGIN/BEGIN_DIR. */
static relay_begin_gate_fn begin_gate;

void
relay_set_begin_gate(relay_begin_gate_fn fn)
{
  begin_gate = fn;
}

int
relay_set_mux_inbound(relay_mux_inbound_fn fn)
{
  if (fn && mux_inbound && fn != mux_inbound) {
    log_warn("A second inbound multiplexer was refused: one is registered "
             "already");
    return -1;
  }
  mux_inbound = fn;
  return 0;
}

/* Act on one relay message for circ. `ordered`: it comes from a
 * multiplexer, its per-circuit accounting was done on the leg it arrived
 * on. Returns -1 if circ must be closed (protocol violation). */
static int
dispatch(or_circuit_t *oc, const relay_header_t *hp, const uint8_t *body,
         int early, int ordered)
{
  relay_header_t h = *hp;
  if ((h.command == RELAY_COMMAND_BEGIN ||
       h.command == RELAY_COMMAND_BEGIN_DIR) && begin_gate) {
    int r = begin_gate();
    if (r) {
      uint8_t reason = (uint8_t)r;
      log_info("Refusing %s on circuit %llu: hibernating",
               relay_command_name(h.command),
               (unsigned long long)oc->base.gid);
      or_circuit_send_relay(oc, RELAY_COMMAND_END, h.stream_id, &reason, 1);
      return 0;
    }
  }
  if (handlers[h.command])
    return handlers[h.command](oc, &h, body, early);
  switch (h.command) {
  case RELAY_COMMAND_DROP:
    return 0;
  case RELAY_COMMAND_DATA:
    if (ordered)
      return stream_deliver_data(oc, h.stream_id, body, h.length);
    return stream_handle_data(oc, h.stream_id, body, h.length);
  case RELAY_COMMAND_END:
    return stream_handle_end(oc, h.stream_id, body, h.length);
  case RELAY_COMMAND_SENDME:
    return stream_handle_sendme(oc, h.stream_id, body, h.length);
  case RELAY_COMMAND_XOFF:
    return stream_handle_xoff(oc, h.stream_id, body, h.length);
  case RELAY_COMMAND_XON:
    return stream_handle_xon(oc, h.stream_id, body, h.length);
  case RELAY_COMMAND_TRUNCATE:
    handle_truncate(oc);
    return 0;
  case RELAY_COMMAND_BEGIN:
  case RELAY_COMMAND_RESOLVE: {
    uint8_t reason = END_REASON_EXITPOLICY;
    log_info("Refusing %s on circuit %llu: this relay has no exit support "
             "yet",
             relay_command_name(h.command),
             (unsigned long long)oc->base.gid);
    or_circuit_send_relay(oc, RELAY_COMMAND_END, h.stream_id, &reason, 1);
    return 0;
  }
  case RELAY_COMMAND_BEGIN_DIR: {
    uint8_t reason = END_REASON_NOTDIRECTORY;
    log_info("Refusing BEGIN_DIR on circuit %llu: directory service is not "
             "supported yet",
             (unsigned long long)oc->base.gid);
    or_circuit_send_relay(oc, RELAY_COMMAND_END, h.stream_id, &reason, 1);
    return 0;
  }
  case RELAY_COMMAND_EXTEND:
    log_info("Legacy EXTEND (TAP) on circuit %llu is not supported; "
             "closing it",
             (unsigned long long)oc->base.gid);
    return -1;
  default:
    log_info("Ignoring relay cell with command %u (%s) on circuit %llu",
             h.command, relay_command_name(h.command),
             (unsigned long long)oc->base.gid);
    return 0;
  }
}

void
relay_handle_recognized(or_circuit_t *oc, const uint8_t *payload, int early)
{
  relay_header_t h;
  if (relay_header_parse(&h, payload) < 0) {
    log_info("Relay cell with length field %u > %d on circuit %llu; "
             "closing it",
             (unsigned)h.length, RELAY_BODY_MAX,
             (unsigned long long)oc->base.gid);
    circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  const uint8_t *body = payload + RELAY_HEADER_LEN;
  if (oc->mux && mux_inbound && relay_command_is_multiplexed(h.command)) {
    /* Stream commands without a stream are dropped before they count as
     * multiplexed messages (as tor does); DATA still counts towards the
     * leg's SENDMEs, whatever its order in the set. */
    if (h.stream_id == 0 && h.command != RELAY_COMMAND_DATA &&
        h.command != RELAY_COMMAND_XON && h.command != RELAY_COMMAND_XOFF) {
      log_info("%s with stream ID 0 on circuit %llu; dropped",
               relay_command_name(h.command),
               (unsigned long long)oc->base.gid);
      return;
    }
    if ((h.command == RELAY_COMMAND_DATA && stream_data_arrived(oc) < 0) ||
        mux_inbound(oc, &h, body) < 0) {
      if (!oc->base.marked_for_close)
        circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
    }
    return;
  }
  if (dispatch(oc, &h, body, early, 0) < 0 && !oc->base.marked_for_close)
    circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
}

int
relay_deliver_ordered(or_circuit_t *home, const relay_header_t *h,
                      const uint8_t *body)
{
  if (home->base.marked_for_close)
    return 0;
  return dispatch(home, h, body, 0, 1);
}
