/* SPDX-License-Identifier: BSD-3-Clause */
/* control_circbw.c -- CIRC_BW event text (control_circbw.h).
 *
 * Design: the event is built from core's counters only (cells per
 * direction, relay-body bytes at an origin, the queues' statistics, the
 * congestion controller, the channels' TCP_INFO), as differences from the
 * caller's copy of the previous values; nothing here walks circuits or
 * keeps state, so it is the same code for the client's circuits and for
 * the relayed circuits MeasureMe measures.
 */
#include "feature/control/control_circbw.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/or/congestion_control.h"
#include "core/or/scheduler.h"
#include "core/proto/relay_msg.h"
#include "lib/malloc/alloc.h"
#include "lib/net/sockstat.h"
#include "lib/string/strbuf.h"

/* The cells a circuit read and wrote, as CIRC_BW counts them. */
static void
cells_of(const circuit_t *circ, uint64_t *rd, uint64_t *wr)
{
  if (circ->kind == CIRC_KIND_ORIGIN) {
    *rd = circ->cells_backward;
    *wr = circ->cells_forward;
  } else {
    const or_circuit_t *oc = (const or_circuit_t *)circ;
    *rd = circ->cells_forward + circ->cells_backward;
    *wr = circ->n_queue.stats.cells_sent + oc->p_queue.stats.cells_sent;
  }
}

static const circ_queue_t *
queue_of(const circuit_t *circ, int side)
{
  if (side == 0)
    return &circ->n_queue;
  return circ->kind == CIRC_KIND_OR ? &((const or_circuit_t *)circ)->p_queue
                                    : NULL;
}

static const channel_t *
chan_of(const circuit_t *circ, int side)
{
  if (side == 0)
    return circ->n_chan;
  return circ->kind == CIRC_KIND_OR ? ((const or_circuit_t *)circ)->p_chan
                                    : NULL;
}

void
control_circbw_start(control_circbw_prev_t *prev, const circuit_t *circ)
{
  memset(prev, 0, sizeof(*prev));
  cells_of(circ, &prev->cells_read, &prev->cells_written);
  if (circ->kind == CIRC_KIND_ORIGIN) {
    const origin_circuit_t *oc = (const origin_circuit_t *)circ;
    prev->delivered_read = oc->delivered_read;
    prev->delivered_written = oc->delivered_written;
  }
  for (int side = 0; side < 2; side++) {
    const circ_queue_t *q = queue_of(circ, side);
    if (q) {
      prev->q_sent[side] = q->stats.cells_sent;
      prev->q_waited_us[side] = q->stats.queued_us_total;
    }
  }
}

static void
add_pctor_side(strbuf_t *b, const circuit_t *circ, int side,
               control_circbw_prev_t *prev)
{
  const char *d = side ? "BWD" : "FWD";
  const circ_queue_t *q = queue_of(circ, side);
  if (!q)
    return;
  uint64_t sent = q->stats.cells_sent - prev->q_sent[side];
  uint64_t waited = q->stats.queued_us_total - prev->q_waited_us[side];
  prev->q_sent[side] = q->stats.cells_sent;
  prev->q_waited_us[side] = q->stats.queued_us_total;
  strbuf_addf(b, " PCTOR_QUEUE_%s=%u PCTOR_DELAY_US_%s=%" PRIu64
              " PCTOR_EWMA_%s=%.3f", d, (unsigned)q->cells.n, d,
              sent ? waited / sent : 0, d, circ_queue_ewma(q));
  const channel_t *chan = chan_of(circ, side);
  if (!chan)
    return;
  strbuf_addf(b, " PCTOR_CONN_%s=%" PRIu64 " PCTOR_PERCIRC_%s=%d", d,
              channel_global_id(chan), d, channel_is_per_circuit(chan) != 0);
  sockstat_tcp_t st;
  if (channel_sockstat(chan, &st) == 0)
    strbuf_addf(b, " PCTOR_TCP_RTT_US_%s=%u PCTOR_TCP_CWND_%s=%u"
                " PCTOR_TCP_RETRANS_%s=%u PCTOR_TCP_NOTSENT_%s=%u", d,
                st.rtt_us, d, st.cwnd, d, st.total_retrans, d, st.notsent);
}

char *
control_circbw_event(const circuit_t *circ, control_circbw_prev_t *prev,
                     const char *when, int pctor_fields)
{
  uint64_t rd, wr;
  cells_of(circ, &rd, &wr);
  uint64_t drd = rd - prev->cells_read, dwr = wr - prev->cells_written;
  if (drd == 0 && dwr == 0)
    return NULL;
  prev->cells_read = rd;
  prev->cells_written = wr;
  strbuf_t b = {0};
  strbuf_addf(&b, "CIRC_BW ID=%" PRIu64 " READ=%" PRIu64 " WRITTEN=%" PRIu64
              " TIME=%s", circ->gid, drd * CELL_PAYLOAD_LEN,
              dwr * CELL_PAYLOAD_LEN, when);
  if (circ->kind == CIRC_KIND_ORIGIN) {
    const origin_circuit_t *oc = (const origin_circuit_t *)circ;
    uint64_t del_r = oc->delivered_read - prev->delivered_read;
    uint64_t del_w = oc->delivered_written - prev->delivered_written;
    prev->delivered_read = oc->delivered_read;
    prev->delivered_written = oc->delivered_written;
    uint64_t room_r = drd * RELAY_BODY_MAX, room_w = dwr * RELAY_BODY_MAX;
    strbuf_addf(&b, " DELIVERED_READ=%" PRIu64 " OVERHEAD_READ=%" PRIu64
                " DELIVERED_WRITTEN=%" PRIu64 " OVERHEAD_WRITTEN=%" PRIu64,
                del_r, room_r > del_r ? room_r - del_r : 0, del_w,
                room_w > del_w ? room_w - del_w : 0);
    /* The controller towards the farthest hop that has one. */
    const cc_t *cc = NULL;
    for (int h = oc->n_hops_open - 1; h >= 0 && !cc; h--)
      cc = origin_circuit_cc(oc, h);
    if (cc)
      strbuf_addf(&b, " SS=%d CWND=%" PRIu64 " RTT=%" PRIu64
                  " MIN_RTT=%" PRIu64, cc->in_slow_start ? 1 : 0, cc->cwnd,
                  cc->ewma_rtt_us / 1000, cc->min_rtt_us / 1000);
  } else {
    strbuf_addf(&b, " PCTOR_RELAYED=1");
  }
  if (pctor_fields) {
    add_pctor_side(&b, circ, 0, prev);
    add_pctor_side(&b, circ, 1, prev);
  }
  return b.s;
}
