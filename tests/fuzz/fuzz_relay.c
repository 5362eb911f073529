/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_relay.c -- fuzz target: decrypted relay cells at a relay.
 *
 * Input: a sequence of 509-byte relay cell payloads (the last one padded
 * with zeros), each as the circuit layer sees it after decryption: the
 * relay header is checked with relay_header_parse() (the length must fit),
 * then the body goes to the parser its command selects: EXTEND2 and
 * EXTENDED2 (core/proto/create), CONFLUX_LINK/LINKED/SWITCH
 * (feature/conflux), MeasureMe requests and answers (feature/measureme;
 * an answer that parses must encode back to the bytes it came from), XOFF/XON
 * (flow control of core/or/congestion_control, on a fresh stream state),
 * SENDME (core/or/sendme).
 *
 * BEGIN, BEGIN_DIR, DATA and RESOLVE bodies are parsed where they are
 * handled, on a live circuit: fuzz_circuit.c feeds them there.
 * Bound: everything is on the stack: 4 KiB + 1 byte per input byte.
 */
#include "fuzz.h"

#include "core/or/congestion_control.h"
#include "core/or/sendme.h"
#include "core/proto/cell.h"
#include "core/proto/create.h"
#include "core/proto/relay_msg.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/measureme/measureme.h"

#include <stdlib.h>
#include <string.h>

static volatile uint8_t fuzz_relay_sink;

static void
one(const uint8_t *payload)
{
  relay_header_t h;
  if (relay_header_parse(&h, payload) < 0)
    return;
  (void)relay_command_name(h.command);
  const uint8_t *body = payload + RELAY_HEADER_LEN;
  const char *why = NULL;
  switch (h.command) {
  case RELAY_COMMAND_EXTEND2: {
    extend2_t e;
    (void)extend2_parse(&e, body, h.length);
    break;
  }
  case RELAY_COMMAND_EXTENDED2: {
    created2_t c;
    (void)extended2_parse(&c, body, h.length);
    break;
  }
  case RELAY_COMMAND_CONFLUX_LINK:
  case RELAY_COMMAND_CONFLUX_LINKED: {
    cfx_link_t l;
    (void)cfx_link_parse(&l, body, h.length, &why);
    break;
  }
  case RELAY_COMMAND_CONFLUX_SWITCH: {
    uint32_t seq;
    (void)cfx_switch_parse(body, h.length, &seq, &why);
    break;
  }
  case RELAY_COMMAND_MEASUREME: {
    measureme_request_t req;
    (void)measureme_request_parse(body, h.length, &req, &why);
    break;
  }
  case RELAY_COMMAND_MEASUREME_ANSWER: {
    measureme_answer_t a;
    if (measureme_answer_parse(body, h.length, &a, &why) == 0) {
      uint8_t back[MEASUREME_ANSWER_MAX_LEN];
      size_t n = measureme_answer_encode(back, &a);
      if (n == 0 || n > h.length || memcmp(back, body, n) != 0)
        abort(); /* the codec disagrees with itself */
    }
    break;
  }
  case RELAY_COMMAND_XOFF:
  case RELAY_COMMAND_XON: {
    cc_params_t p;
    cc_flow_t f;
    cc_params_default(&p);
    memset(&f, 0, sizeof(f));
    if (h.command == RELAY_COMMAND_XOFF)
      (void)cc_flow_on_xoff(&f, &p, 0, body, h.length);
    else
      (void)cc_flow_on_xon(&f, &p, 0, body, h.length);
    break;
  }
  case RELAY_COMMAND_SENDME: {
    const uint8_t *digest = NULL;
    /* A v1 digest must lie inside the body: read its last byte (ASan). */
    if (sendme_parse(body, h.length, &digest, &why) == 0 && digest)
      fuzz_relay_sink = digest[SENDME_DIGEST_LEN - 1];
    break;
  }
  default:
    break;
  }
}

static void
run(const uint8_t *data, size_t len)
{
  while (len > 0) {
    uint8_t payload[CELL_PAYLOAD_LEN] = {0};
    size_t n = len < CELL_PAYLOAD_LEN ? len : CELL_PAYLOAD_LEN;
    memcpy(payload, data, n);
    one(payload);
    data += n;
    len -= n;
  }
}

const fuzz_target_t fuzz_target = {
  .name = "relay", .run = run, .amp_factor = 1, .amp_slack = 4096,
};
