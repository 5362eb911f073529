/* SPDX-License-Identifier: BSD-3-Clause */
/* stream.c -- the relay side of circuit ends (see stream.h): the
 * edge_end_ops_t of an or_circuit_t and the entry points relay.c uses.
 * Every rule (windows, SENDMEs, XON/XOFF, half-closed streams) is edge.c's.
 */
#include "core/or/stream.h"
#include "core/or/congestion_control.h"
#include "core/proto/relay_msg.h"
#include "lib/log/log.h"

static int
end_send(void *end, uint8_t command, uint16_t stream_id, const uint8_t *body,
         uint16_t len)
{
  return or_circuit_send_relay(end, command, stream_id, body, len);
}

static const uint8_t *
end_last_digest(void *end, int sent)
{
  or_circuit_t *circ = end;
  return relay_crypto_last_digest(&circ->crypto, sent ? RELAY_DIR_BACKWARD
                                                     : RELAY_DIR_FORWARD);
}

static int
end_multiplexed(void *end)
{
  or_circuit_t *circ = end;
  return circ->mux != NULL;
}

static int
end_mux_can_send(void *end)
{
  const circuit_mux_ops_t *mux = circuits_mux_ops();
  return mux && mux->can_send(end);
}

static size_t
end_mux_burst_bytes(void *end)
{
  const circuit_mux_ops_t *mux = circuits_mux_ops();
  return mux && mux->burst_bytes ? mux->burst_bytes(end) : 0;
}

static size_t
end_queued(void *end)
{
  const or_circuit_t *circ = end;
  return circ->p_queue.cells.n;
}

/* What may wait towards the client: the previous hop's window (BackTap). */
static size_t
end_queue_limit(void *end)
{
  or_circuit_t *circ = end;
  return circ_queue_nowin_limit(&circ->p_queue);
}

static const edge_end_ops_t relay_end_ops = {
    end_send,         end_last_digest, NULL,      end_multiplexed,
    end_mux_can_send, 0,               end_mux_burst_bytes, end_queued,
    end_queue_limit,
};

edge_t *
or_circuit_edge(or_circuit_t *circ)
{
  if (!circ->edge) {
    circ->edge = edge_new(&relay_end_ops, circ, channels_loop());
    if (circ->cc_sendme_inc)
      edge_set_cc(circ->edge, cc_new(NULL, circ->cc_sendme_inc));
    if (circ->nowin)
      edge_set_no_circ_windows(circ->edge, 1);
  }
  return circ->edge;
}

edge_stream_t *
relay_stream_new(or_circuit_t *circ, uint16_t id,
                 const edge_stream_ops_t *ops, void *arg)
{
  return edge_stream_new(or_circuit_edge(circ), id, ops, arg);
}

or_circuit_t *
relay_stream_circuit(const edge_stream_t *s)
{
  return edge_end(edge_stream_edge(s));
}

const struct cc_t *
circ_edge_cc(const or_circuit_t *circ)
{
  return circ->edge ? edge_cc(circ->edge) : NULL;
}

void
circ_edge_get_dropped(const or_circuit_t *circ, uint64_t *half_closed,
                      uint64_t *invalid)
{
  edge_stats_t st = {0};
  if (circ->edge)
    edge_get_stats(circ->edge, &st);
  *half_closed = st.n_cells_half_closed;
  *invalid = st.n_cells_invalid;
}

void
circ_edge_clear(or_circuit_t *circ)
{
  if (!circ->edge)
    return;
  edge_stats_t st;
  edge_get_stats(circ->edge, &st);
  log_info("Circuit %llu closed with %u open streams; %llu cells for "
           "half-closed streams and %llu for unknown ones were dropped",
           (unsigned long long)circ->base.gid, st.n_streams,
           (unsigned long long)st.n_cells_half_closed,
           (unsigned long long)st.n_cells_invalid);
  const cc_t *cc = edge_cc(circ->edge);
  if (cc) {
    char d[200];
    cc_describe(cc, d, sizeof(d));
    log_info("Circuit %llu: congestion control at close: %s",
             (unsigned long long)circ->base.gid, d);
  } else if (!edge_is_windowless(circ->edge)) {
    char w[200];
    log_info("Circuit %llu: %s", (unsigned long long)circ->base.gid,
             edge_describe_windows(&st, w, sizeof(w)));
  }
  edge_free(circ->edge);
}

void
circ_edge_note_data_sent(or_circuit_t *circ)
{
  edge_note_data_sent(or_circuit_edge(circ),
                      relay_crypto_last_digest(&circ->crypto,
                                               RELAY_DIR_BACKWARD));
}

void
circ_edge_move_streams(or_circuit_t *from, or_circuit_t *to)
{
  if (!from->edge || from == to)
    return;
  edge_move_streams(from->edge, or_circuit_edge(to));
}

static int
closing(or_circuit_t *circ, int r)
{
  if (r < 0)
    log_info("Closing circuit %llu (protocol violation at its end)",
             (unsigned long long)circ->base.gid);
  return r;
}

int
stream_data_arrived(or_circuit_t *circ)
{
  return closing(circ, edge_data_arrived(or_circuit_edge(circ)));
}

/* A stream command for stream id of circ's edge. */
static int
stream_msg(or_circuit_t *circ, uint8_t cmd, uint16_t id, const uint8_t *body,
           uint16_t len)
{
  return closing(circ, edge_handle_stream_msg(or_circuit_edge(circ), cmd, id,
                                              body, len));
}

int
stream_deliver_data(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                    uint16_t len)
{
  return stream_msg(circ, RELAY_COMMAND_DATA, id, body, len);
}

int
stream_handle_data(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                   uint16_t len)
{
  if (stream_data_arrived(circ) < 0)
    return -1;
  return stream_deliver_data(circ, id, body, len);
}

int
stream_handle_end(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                  uint16_t len)
{
  return stream_msg(circ, RELAY_COMMAND_END, id, body, len);
}

int
stream_handle_sendme(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                     uint16_t len)
{
  edge_t *e = or_circuit_edge(circ);
  if (id != 0)
    return stream_msg(circ, RELAY_COMMAND_SENDME, id, body, len);
  if (edge_circ_sendme(e, body, len, circ->p_queue.cells.n) < 0)
    return closing(circ, -1);
  /* A leg of a multiplexed set: its streams live on the set's home. */
  or_circuit_t *home = or_circuit_stream_home(circ);
  if (home->edge)
    edge_wake(home->edge);
  return 0;
}

int
stream_handle_xoff(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                   uint16_t len)
{
  return stream_msg(circ, RELAY_COMMAND_XOFF, id, body, len);
}

int
stream_handle_xon(or_circuit_t *circ, uint16_t id, const uint8_t *body,
                  uint16_t len)
{
  return stream_msg(circ, RELAY_COMMAND_XON, id, body, len);
}
