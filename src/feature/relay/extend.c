/* SPDX-License-Identifier: BSD-3-Clause */
/* extend.c -- EXTEND2 at a relay (tor-spec 5.1.2, 5.3).
 *
 * Checks, in order, each failure closing the circuit with a log line:
 * the cell came in RELAY_EARLY; the circuit is not extended already; the
 * cell parses and names an address and an RSA identity that is not all
 * zero; the target is neither us nor the relay that sent the EXTEND2; the
 * address is public unless private addresses are allowed. Then the circuit
 * layer reuses a channel whose identity matches (and whose address matches
 * or is canonical) or opens a new one, which verifies the identities during
 * the link handshake; a mismatch there fails the circuit with
 * CONNECTFAILED, so a relay never extends to the wrong identity.
 */
#include "feature/relay/extend.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "core/proto/create.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"

#include <string.h>

static int allow_private_addrs;

static int
refuse(or_circuit_t *oc, const char *why)
{
  log_info("Refusing EXTEND2 on circuit %llu: %s",
           (unsigned long long)oc->base.gid, why);
  return -1;
}

static int
handle_extend2(or_circuit_t *oc, const relay_header_t *h, const uint8_t *body,
               int early)
{
  const relay_keys_t *me = channels_keys();
  if (!early)
    return refuse(oc, "EXTEND2 not in a RELAY_EARLY cell");
  if (oc->base.n_chan || oc->extend_pending)
    return refuse(oc, "circuit is already extended");
  extend2_t e;
  if (extend2_parse(&e, body, h->length) < 0)
    return refuse(oc, "malformed EXTEND2");
  if (!e.has_rsa_id || pc_is_zero(e.rsa_id, 20))
    return refuse(oc, "EXTEND2 without an RSA identity");
  if (e.create.htype != HTYPE_NTOR && e.create.htype != HTYPE_NTOR_V3)
    return refuse(oc, "unsupported handshake type in EXTEND2");
  pc_addr_t addr;
  if (e.has_ipv4) {
    memset(&addr, 0, sizeof(addr));
    addr.family = AF_INET;
    memcpy(addr.addr, e.ipv4_addr, 4);
    addr.port = e.ipv4_port;
  } else if (e.has_ipv6) {
    memset(&addr, 0, sizeof(addr));
    addr.family = AF_INET6;
    memcpy(addr.addr, e.ipv6_addr, 16);
    addr.port = e.ipv6_port;
  } else {
    return refuse(oc, "EXTEND2 without an address");
  }
  if (addr.port == 0)
    return refuse(oc, "EXTEND2 to port 0");
  if (me && !memcmp(e.rsa_id, me->rsa_id_digest, 20))
    return refuse(oc, "EXTEND2 to ourselves");
  const uint8_t *prev_rsa = channel_peer_rsa_id(oc->p_chan);
  const uint8_t *prev_ed = channel_peer_ed_id(oc->p_chan);
  if (prev_rsa && !memcmp(prev_rsa, e.rsa_id, 20))
    return refuse(oc, "EXTEND2 back to the previous hop");
  if (e.has_ed_id && prev_ed && !memcmp(prev_ed, e.ed_id, 32))
    return refuse(oc, "EXTEND2 back to the previous hop");
  if (!allow_private_addrs && pc_addr_is_private(&addr))
    return refuse(oc, "EXTEND2 to a private address (set "
                      "ExtendAllowPrivateAddresses 1 or TestingTorNetwork 1 "
                      "to allow it)");
  cell_t create;
  if (create2_cell_make(&create, 0, &e.create) < 0)
    return refuse(oc, "handshake data too long");
  oc->extend_pending = 1;
  const uint8_t *ed = e.has_ed_id && !pc_is_zero(e.ed_id, 32) ? e.ed_id
                                                               : NULL;
  if (circuit_extend_to(&oc->base, &addr, e.rsa_id, ed, &create) < 0) {
    oc->extend_pending = 0;
    log_info("Could not start extending circuit %llu",
             (unsigned long long)oc->base.gid);
    circuit_mark_for_close(&oc->base, DESTROY_REASON_CONNECTFAILED);
    return 0;
  }
  return 0;
}

void
extend_init(int allow_private)
{
  allow_private_addrs = allow_private;
  relay_register_handler(RELAY_COMMAND_EXTEND2, handle_extend2);
}

void
extend_set_allow_private(int allow_private)
{
  allow_private_addrs = allow_private;
}
