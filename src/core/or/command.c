/* SPDX-License-Identifier: BSD-3-Clause */
/* command.c -- what to do with each cell that arrives on an open channel.
 *
 * The relay fast path is handle_relay(): look the circuit up by ID, decide
 * the direction from which side of the circuit the channel is, strip or
 * add one layer of relay crypto in place in the packed cell, rewrite the
 * circuit ID and queue the same buffer on the other side. Only cells the
 * relay crypto recognises are unpacked further (relay.c).
 *
 * Protocol violations by a peer close the circuit (DESTROY PROTOCOL) or,
 * when the channel itself is unusable, the channel, always with a log line.
 * Cells for circuits that don't exist are dropped (tor-spec 5.5.1), except
 * RELAY/RELAY_EARLY cells for a circuit whose CREATE2 handshake is still
 * on a worker (cpuworker.h): those are held, bounded, and processed in
 * order right after the circuit is made (command_create_finish()).
 */
#include "core/or/command.h"
#include "core/or/dos.h"
#include "core/or/circuit.h"
#include "core/or/cpuworker.h"
#include "core/or/onion.h"
#include "core/or/relay.h"
#include "core/proto/create.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"

#include <string.h>
#include <time.h>

/* Circuits one channel may hold; beyond this CREATE cells are refused with
 * RESOURCELIMIT, which bounds what one connection can make us allocate. */
#define CHAN_MAX_CIRCUITS 16384

static command_stats_t stats;
static void handle_relay(channel_t *chan, packed_cell_t *pc);
/* Refused CREATEs are caused by remote peers: log at most 10 a minute. */
static log_ratelim_t refuse_ratelim = LOG_RATELIM_INIT(60, 10);
/* Circuits closed for too many cells during their handshake: the same. */
static log_ratelim_t held_ratelim = LOG_RATELIM_INIT(60, 10);

void
command_get_stats(command_stats_t *out)
{
  *out = stats;
}

/* Set at start-up (and when hibernation changes), read per CREATE. */
static command_create_gate_fn create_gate;

void
command_set_create_gate(command_create_gate_fn fn)
{
  create_gate = fn;
}

static void
refuse_create(channel_t *chan, uint32_t circ_id, uint8_t reason,
              const char *why)
{
  stats.n_create_refused++;
  unsigned suppressed = 0;
  if (log_ratelim_allow(&refuse_ratelim, time(NULL), &suppressed))
    log_info("Refusing CREATE on %s (circuit %u): %s%s", channel_describe(chan),
             (unsigned)circ_id, why,
             suppressed ? " (and more, not logged)" : "");
  cell_t d;
  destroy_cell_make(&d, circ_id, reason);
  channel_send_cell(chan, &d);
}

static void
handle_create(channel_t *chan, const cell_t *cell)
{
  const relay_keys_t *keys = channels_keys();
  uint32_t id = cell->circ_id;
  if (!keys || !keys->onion) {
    refuse_create(chan, id, DESTROY_REASON_PROTOCOL,
                  "we are not a relay");
    return;
  }
  if (id == 0) {
    stats.n_protocol_closes++;
    channel_close(chan, "CREATE cell with circuit ID 0");
    return;
  }
  /* tor-spec 5.1.1: the connection's initiator sets the high bit. */
  int peer_initiated = !channel_is_outgoing(chan);
  if (((id & 0x80000000u) != 0) != peer_initiated) {
    refuse_create(chan, id, DESTROY_REASON_PROTOCOL,
                  "circuit ID has the wrong high bit for this side");
    return;
  }
  int gate = create_gate ? create_gate() : 0;
  if (gate) {
    refuse_create(chan, id, (uint8_t)gate, "hibernating (AccountingMax)");
    return;
  }
  /* DoSCircuitCreation*: clients only (a peer that proved a relay
   * identity is exempt; relay addresses are not counted in core/or/dos). */
  if (!channel_is_authenticated_relay(chan) &&
      dos_create_allowed(channel_peer_addr(chan)) < 0) {
    refuse_create(chan, id, DESTROY_REASON_RESOURCELIMIT,
                  "DoS defence: the client address creates circuits too "
                  "fast (DoSCircuitCreation*)");
    return;
  }
  if (channel_n_circuits(chan) >= CHAN_MAX_CIRCUITS) {
    refuse_create(chan, id, DESTROY_REASON_RESOURCELIMIT,
                  "too many circuits on this channel");
    return;
  }
  if (channel_get_circuit(chan, id) || cpuworker_is_pending(chan, id)) {
    stats.n_create_refused++;
    log_info("Dropping CREATE for existing circuit %u on %s", (unsigned)id,
             channel_describe(chan));
    return;
  }
  uint16_t htype;
  const uint8_t *hdata;
  size_t hlen;
  create2_t c2;
  if (cell->command == CELL_CREATE_FAST) {
    htype = CIRC_HTYPE_FAST;
    hdata = cell->payload;
    hlen = CREATE_FAST_LEN;
  } else if (cell->command == CELL_CREATE2) {
    if (create2_parse(&c2, cell->payload, CELL_PAYLOAD_LEN) < 0) {
      refuse_create(chan, id, DESTROY_REASON_PROTOCOL, "malformed CREATE2");
      return;
    }
    htype = c2.htype;
    hdata = c2.hdata;
    hlen = c2.hlen;
  } else {
    refuse_create(chan, id, DESTROY_REASON_PROTOCOL,
                  "TAP (CREATE) handshakes are not supported");
    return;
  }
  if (htype != CIRC_HTYPE_FAST && cpuworker_enabled()) {
    /* ntor / ntor v3: on a worker thread; the circuit is made when the
     * answer comes back (command_create_finish). */
    int r = cpuworker_submit(chan, keys->onion, id, htype, hdata, hlen);
    if (r == -2)
      refuse_create(chan, id, DESTROY_REASON_RESOURCELIMIT,
                    "this channel has its share of the circuit handshake "
                    "queue pending");
    else if (r < 0)
      refuse_create(chan, id, DESTROY_REASON_RESOURCELIMIT,
                    "the circuit handshake queue is full");
    return;
  }
  cpuworker_result_t res;
  memset(&res, 0, sizeof(res));
  res.circ_id = id;
  res.htype = htype;
  res.ok = onion_server_handshake(keys->onion, cc_params_current(),
                                  channel_path_backpressure(chan), htype,
                                  hdata, hlen, res.reply,
                                  sizeof(res.reply), &res.rlen, res.km,
                                  sizeof(res.km), &res.params, &res.why) == 0;
  command_create_finish(chan, &res);
  pc_memwipe(res.km, sizeof(res.km));
}

void
command_create_expired(channel_t *chan, uint32_t circ_id)
{
  refuse_create(chan, circ_id, DESTROY_REASON_RESOURCELIMIT,
                "the circuit handshake waited longer than "
                "MaxOnionQueueDelay");
}

void
command_create_finish(channel_t *chan, const cpuworker_result_t *res)
{
  uint32_t id = res->circ_id;
  if (!res->ok) {
    refuse_create(chan, id, DESTROY_REASON_PROTOCOL, res->why);
    return;
  }
  /* While a worker computed, the peer may have sent another CREATE for
   * this ID (it was not taken yet) or filled the channel. */
  if (channel_get_circuit(chan, id)) {
    stats.n_create_refused++;
    log_info("Dropping CREATE for existing circuit %u on %s", (unsigned)id,
             channel_describe(chan));
    return;
  }
  if (channel_n_circuits(chan) >= CHAN_MAX_CIRCUITS) {
    refuse_create(chan, id, DESTROY_REASON_RESOURCELIMIT,
                  "too many circuits on this channel");
    return;
  }
  uint16_t htype = res->htype;
  or_circuit_t *oc = or_circuit_new(chan, id);
  relay_crypto_init(&oc->crypto, res->km);
  if (res->params.cc_enabled)
    or_circuit_set_cc(oc, res->params.sendme_inc);
  if (res->params.nowin)
    or_circuit_set_nowin(oc);
  cell_t out;
  memset(&out, 0, sizeof(out));
  if (htype == CIRC_HTYPE_FAST) {
    oc->created_fast = 1;
    out.circ_id = id;
    out.command = CELL_CREATED_FAST;
    memcpy(out.payload, res->reply, res->rlen);
  } else {
    created2_t r;
    memset(&r, 0, sizeof(r));
    r.hlen = (uint16_t)res->rlen;
    memcpy(r.hdata, res->reply, res->rlen);
    created2_cell_make(&out, id, &r);
  }
  channel_send_cell(chan, &out);
  log_debug("Created circuit %u on %s (%s)", (unsigned)id,
            channel_describe(chan),
            htype == CIRC_HTYPE_FAST ? "CREATE_FAST"
            : htype == HTYPE_NTOR    ? "ntor"
                                     : "ntor v3");
  /* Relay cells that came while the handshake was pending, in order. */
  if (res->held) {
    packed_cell_t *pc;
    while ((pc = cell_queue_pop(res->held)))
      handle_relay(chan, pc);
  }
}

/* Is circ's n side this channel and ID? */
static int
is_n_side(const circuit_t *circ, const channel_t *chan, uint32_t id)
{
  return circ->n_chan == chan && circ->n_circ_id == id && !circ->n_pending;
}

static void
handle_created(channel_t *chan, const cell_t *cell)
{
  circuit_t *circ = channel_get_circuit(chan, cell->circ_id);
  if (!circ || !is_n_side(circ, chan, cell->circ_id)) {
    stats.n_unknown_circ++;
    log_info("%s for unknown circuit %u on %s; dropping",
             cell_command_name(cell->command), (unsigned)cell->circ_id,
             channel_describe(chan));
    return;
  }
  origin_circuit_t *orc = TO_ORIGIN_CIRCUIT(circ);
  if (orc) {
    origin_circuit_handle_created(orc, cell);
    return;
  }
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  if (!oc->extend_pending || cell->command != CELL_CREATED2) {
    log_info("Unexpected %s on circuit %u from %s; closing the circuit",
             cell_command_name(cell->command), (unsigned)cell->circ_id,
             channel_describe(chan));
    stats.n_protocol_closes++;
    circuit_mark_for_close(circ, DESTROY_REASON_PROTOCOL);
    return;
  }
  oc->extend_pending = 0;
  created2_t c2;
  uint8_t body[RELAY_BODY_MAX];
  size_t len = 0;
  if (created2_parse(&c2, cell->payload, CELL_PAYLOAD_LEN) < 0 ||
      extended2_build(body, sizeof(body), &c2, &len) < 0) {
    log_info("Malformed CREATED2 from %s; closing circuit",
             channel_describe(chan));
    stats.n_protocol_closes++;
    circuit_mark_for_close(circ, DESTROY_REASON_PROTOCOL);
    return;
  }
  or_circuit_send_relay(oc, RELAY_COMMAND_EXTENDED2, 0, body, (uint16_t)len);
}

static void
protocol_close(circuit_t *circ, const char *why)
{
  log_info("Closing circuit %llu: %s", (unsigned long long)circ->gid, why);
  stats.n_protocol_closes++;
  circuit_mark_for_close(circ, DESTROY_REASON_PROTOCOL);
}

static void
handle_relay(channel_t *chan, packed_cell_t *pc)
{
  uint32_t id = get_u32(pc->body);
  int early = pc->body[4] == CELL_RELAY_EARLY;
  circuit_t *circ = channel_get_circuit(chan, id);
  if (!circ) {
    int held = cpuworker_hold_cell(chan, id, pc);
    if (held > 0) {
      stats.n_held_pending++;
      return;
    }
    if (held < 0) {
      unsigned suppressed = 0;
      stats.n_protocol_closes++;
      if (log_ratelim_allow(&held_ratelim, time(NULL), &suppressed))
        log_info("Closing circuit %u on %s with DESTROY(RESOURCELIMIT): "
                 "too many relay cells (more than %d for the circuit, or "
                 "the relay's total) came while its CREATE2 handshake was "
                 "pending%s", (unsigned)id,
                 channel_describe(chan), CPUWORKER_MAX_HELD_PER_CIRC,
                 suppressed ? " (and more, not logged)" : "");
      cell_t d;
      destroy_cell_make(&d, id, DESTROY_REASON_RESOURCELIMIT);
      channel_send_cell(chan, &d);
      return;
    }
    stats.n_unknown_circ++;
    log_debug("RELAY cell for unknown circuit %u on %s; dropping",
              (unsigned)id, channel_describe(chan));
    packed_cell_free(pc);
    return;
  }
  uint8_t *payload = pc->body + 5;
  origin_circuit_t *orc = TO_ORIGIN_CIRCUIT(circ);
  if (orc) {
    if (early) {
      packed_cell_free(pc);
      protocol_close(circ, "RELAY_EARLY cell towards the origin");
      return;
    }
    origin_circuit_handle_relay(orc, pc);
    return;
  }
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  if (oc->p_chan == chan && oc->p_circ_id == id) {
    /* Forward: towards the exit. */
    if (early && ++oc->relay_early_seen > CIRCUIT_MAX_RELAY_EARLY) {
      packed_cell_free(pc);
      protocol_close(circ, "too many RELAY_EARLY cells");
      return;
    }
    if (relay_crypto_decrypt_forward(&oc->crypto, payload)) {
      relay_handle_recognized(oc, payload, early);
      packed_cell_free(pc);
      return;
    }
    if (!circ->n_chan || circ->n_pending) {
      packed_cell_free(pc);
      protocol_close(circ, "unrecognized relay cell at the end of the "
                           "circuit");
      return;
    }
    set_u32(pc->body, circ->n_circ_id);
    circuit_queue_forward(circ, pc);
  } else if (is_n_side(circ, chan, id)) {
    /* Backward: towards the origin. */
    if (early) {
      packed_cell_free(pc);
      protocol_close(circ, "RELAY_EARLY cell towards the origin");
      return;
    }
    if (!oc->p_chan) {
      packed_cell_free(pc);
      return;
    }
    relay_crypto_encrypt_backward(&oc->crypto, payload);
    set_u32(pc->body, oc->p_circ_id);
    pc->body[4] = CELL_RELAY;
    or_circuit_queue_backward(oc, pc);
  } else {
    packed_cell_free(pc);
  }
}

static void
handle_destroy(channel_t *chan, const cell_t *cell)
{
  circuit_t *circ = channel_get_circuit(chan, cell->circ_id);
  if (!circ && cpuworker_abandon(chan, cell->circ_id)) {
    log_debug("DESTROY for circuit %u on %s while its handshake was "
              "pending", (unsigned)cell->circ_id, channel_describe(chan));
    return;
  }
  if (!circ) {
    stats.n_unknown_circ++;
    log_info("DESTROY for unknown circuit %u on %s; ignoring",
             (unsigned)cell->circ_id, channel_describe(chan));
    return;
  }
  or_circuit_t *oc = TO_OR_CIRCUIT(circ);
  int from_p = oc && oc->p_chan == chan && oc->p_circ_id == cell->circ_id;
  if (!from_p && !is_n_side(circ, chan, cell->circ_id)) {
    /* The ID belongs to a circuit we have on this channel, but not on the
     * side the DESTROY claims: not ours to destroy. */
    stats.n_unknown_circ++;
    return;
  }
  log_debug("DESTROY (%s) for circuit %u from %s",
            destroy_reason_name(destroy_cell_reason(cell)),
            (unsigned)cell->circ_id, channel_describe(chan));
  circuit_destroy_received(circ, chan);
}

void
command_process_cell(channel_t *chan, packed_cell_t *pc)
{
  uint8_t command = pc->body[4];
  if (command == CELL_RELAY || command == CELL_RELAY_EARLY) {
    handle_relay(chan, pc);
    return;
  }
  cell_t cell;
  cell_unpack(&cell, pc->body, 4);
  packed_cell_free(pc);
  switch (command) {
  case CELL_PADDING:
  case CELL_PADDING_NEGOTIATE:
  case CELL_NETINFO: /* a late NETINFO carries nothing we need */
    return;
  case CELL_CREATE:
  case CELL_CREATE2:
  case CELL_CREATE_FAST:
    handle_create(chan, &cell);
    return;
  case CELL_CREATED:
  case CELL_CREATED2:
  case CELL_CREATED_FAST:
    handle_created(chan, &cell);
    return;
  case CELL_DESTROY:
    handle_destroy(chan, &cell);
    return;
  default:
    stats.n_unknown_command++;
    log_info("Ignoring cell with unknown command %u on %s", command,
             channel_describe(chan));
    return;
  }
}
