/* relay.c -- handling of relay cells addressed to this relay (relay.h).
 *
 * The dispatch table is filled at start-up by the features; a command with
 * no handler is answered or ignored as tor does: stream openings get a
 * RELAY_END (we are not an exit / directory yet), other unknown commands
 * are dropped with a log line so that new commands (such as MeasureMe)
 * never break a circuit through a relay that doesn't know them. Stream
 * flow control (DATA, END, SENDME, and XON/XOFF with congestion control)
 * goes to stream.c.
 */
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/log/log.h"

#include <string.h>

static relay_handler_fn handlers[256];

void
relay_register_handler(uint8_t relay_command, relay_handler_fn fn)
{
  handlers[relay_command] = fn;
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
  if (handlers[h.command]) {
    if (handlers[h.command](oc, &h, body, early) < 0)
      circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
    return;
  }
  int r = 0;
  switch (h.command) {
  case RELAY_COMMAND_DROP:
    return;
  case RELAY_COMMAND_DATA:
    r = stream_handle_data(oc, h.stream_id, body, h.length);
    break;
  case RELAY_COMMAND_END:
    r = stream_handle_end(oc, h.stream_id, body, h.length);
    break;
  case RELAY_COMMAND_SENDME:
    r = stream_handle_sendme(oc, h.stream_id, body, h.length);
    break;
  case RELAY_COMMAND_XOFF:
    r = stream_handle_xoff(oc, h.stream_id, body, h.length);
    break;
  case RELAY_COMMAND_XON:
    r = stream_handle_xon(oc, h.stream_id, body, h.length);
    break;
  case RELAY_COMMAND_TRUNCATE:
    handle_truncate(oc);
    return;
  case RELAY_COMMAND_BEGIN:
  case RELAY_COMMAND_RESOLVE: {
    uint8_t reason = END_REASON_EXITPOLICY;
    log_info("Refusing %s on circuit %llu: this relay has no exit support "
             "yet",
             relay_command_name(h.command),
             (unsigned long long)oc->base.gid);
    or_circuit_send_relay(oc, RELAY_COMMAND_END, h.stream_id, &reason, 1);
    return;
  }
  case RELAY_COMMAND_BEGIN_DIR: {
    uint8_t reason = END_REASON_NOTDIRECTORY;
    log_info("Refusing BEGIN_DIR on circuit %llu: directory service is not "
             "supported yet",
             (unsigned long long)oc->base.gid);
    or_circuit_send_relay(oc, RELAY_COMMAND_END, h.stream_id, &reason, 1);
    return;
  }
  case RELAY_COMMAND_EXTEND:
    log_info("Legacy EXTEND (TAP) on circuit %llu is not supported; "
             "closing it",
             (unsigned long long)oc->base.gid);
    circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
    return;
  default:
    log_info("Ignoring relay cell with command %u (%s) on circuit %llu",
             h.command, relay_command_name(h.command),
             (unsigned long long)oc->base.gid);
    return;
  }
  if (r < 0)
    circuit_mark_for_close(&oc->base, DESTROY_REASON_PROTOCOL);
}
