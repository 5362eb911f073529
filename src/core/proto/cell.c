/* SPDX-License-Identifier: BSD-3-Clause */
/* cell.c -- packing and unpacking link cells (tor-spec section 3).
 *
 * Fixed-length cells are a straight copy between cell_t and the wire: no
 * allocation, no validation beyond what the types already guarantee (the
 * wire length is fixed by the link protocol). Variable-length cells are
 * allocated once, sized to their payload, by var_cell_new() and
 * var_cell_fetch().
 *
 * Circuit IDs are 2 bytes before link protocol 4 (and while VERSIONS is
 * being exchanged, link_proto 0); packing a 4-byte circ_id on such a link
 * keeps its low 16 bits. Which commands are variable-length is decided by
 * cell_command_is_var() for every link protocol: pctor only speaks the
 * in-protocol handshake (v3+) where VERSIONS and commands >= 128 are
 * variable-length, and before negotiation the first cell may be VERSIONS,
 * VPADDING or AUTHORIZE, which that rule also covers.
 */
#include "core/proto/cell.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/malloc/alloc.h"

const char *
cell_command_name(uint8_t command)
{
  switch (command) {
  case CELL_PADDING: return "PADDING";
  case CELL_CREATE: return "CREATE";
  case CELL_CREATED: return "CREATED";
  case CELL_RELAY: return "RELAY";
  case CELL_DESTROY: return "DESTROY";
  case CELL_CREATE_FAST: return "CREATE_FAST";
  case CELL_CREATED_FAST: return "CREATED_FAST";
  case CELL_VERSIONS: return "VERSIONS";
  case CELL_NETINFO: return "NETINFO";
  case CELL_RELAY_EARLY: return "RELAY_EARLY";
  case CELL_CREATE2: return "CREATE2";
  case CELL_CREATED2: return "CREATED2";
  case CELL_PADDING_NEGOTIATE: return "PADDING_NEGOTIATE";
  case CELL_VPADDING: return "VPADDING";
  case CELL_CERTS: return "CERTS";
  case CELL_AUTH_CHALLENGE: return "AUTH_CHALLENGE";
  case CELL_AUTHENTICATE: return "AUTHENTICATE";
  case CELL_AUTHORIZE: return "AUTHORIZE";
  default: return "UNKNOWN";
  }
}

const char *
destroy_reason_name(uint8_t reason)
{
  switch (reason) {
  case DESTROY_REASON_NONE: return "NONE";
  case DESTROY_REASON_PROTOCOL: return "PROTOCOL";
  case DESTROY_REASON_INTERNAL: return "INTERNAL";
  case DESTROY_REASON_REQUESTED: return "REQUESTED";
  case DESTROY_REASON_HIBERNATING: return "HIBERNATING";
  case DESTROY_REASON_RESOURCELIMIT: return "RESOURCELIMIT";
  case DESTROY_REASON_CONNECTFAILED: return "CONNECTFAILED";
  case DESTROY_REASON_OR_IDENTITY: return "OR_IDENTITY";
  case DESTROY_REASON_CHANNEL_CLOSED: return "CHANNEL_CLOSED";
  case DESTROY_REASON_FINISHED: return "FINISHED";
  case DESTROY_REASON_TIMEOUT: return "TIMEOUT";
  case DESTROY_REASON_DESTROYED: return "DESTROYED";
  case DESTROY_REASON_NOSUCHSERVICE: return "NOSUCHSERVICE";
  default: return "UNKNOWN";
  }
}

/* Write the circuit ID in its link-protocol width; returns bytes written. */
static size_t
circid_put(uint8_t *out, uint32_t circ_id, int link_proto)
{
  if (cell_circid_len(link_proto) == 4) {
    set_u32(out, circ_id);
    return 4;
  }
  set_u16(out, (uint16_t)circ_id);
  return 2;
}

static uint32_t
circid_get(const uint8_t *in, int link_proto)
{
  if (cell_circid_len(link_proto) == 4)
    return get_u32(in);
  return get_u16(in);
}

void
cell_pack(uint8_t *out, const cell_t *cell, int link_proto)
{
  size_t off = circid_put(out, cell->circ_id, link_proto);
  out[off] = cell->command;
  memcpy(out + off + 1, cell->payload, CELL_PAYLOAD_LEN);
}

void
cell_unpack(cell_t *cell, const uint8_t *in, int link_proto)
{
  size_t off = cell_circid_len(link_proto);
  cell->circ_id = circid_get(in, link_proto);
  cell->command = in[off];
  memcpy(cell->payload, in + off + 1, CELL_PAYLOAD_LEN);
}

var_cell_t *
var_cell_new(uint16_t payload_len)
{
  var_cell_t *vc = pc_zalloc(sizeof(var_cell_t) + payload_len);
  vc->payload_len = payload_len;
  return vc;
}

void
var_cell_free_(var_cell_t *vc)
{
  free(vc);
}

size_t
var_cell_network_len(const var_cell_t *vc, int link_proto)
{
  return cell_circid_len(link_proto) + 1 + 2 + (size_t)vc->payload_len;
}

void
var_cell_pack(uint8_t *out, const var_cell_t *vc, int link_proto)
{
  size_t off = circid_put(out, vc->circ_id, link_proto);
  out[off] = vc->command;
  set_u16(out + off + 1, vc->payload_len);
  memcpy(out + off + 3, vc->payload, vc->payload_len);
}

int
var_cell_fetch(const uint8_t *in, size_t len, int link_proto,
               var_cell_t **vc_out, size_t *consumed)
{
  size_t idlen = cell_circid_len(link_proto);
  *vc_out = NULL;
  *consumed = 0;
  if (len < idlen + 1)
    return 0;
  uint8_t command = in[idlen];
  if (!cell_command_is_var(command))
    return -1;
  if (len < idlen + 3)
    return 0;
  uint16_t plen = get_u16(in + idlen + 1);
  size_t total = idlen + 3 + (size_t)plen;
  if (len < total)
    return 0;
  var_cell_t *vc = var_cell_new(plen);
  vc->circ_id = circid_get(in, link_proto);
  vc->command = command;
  memcpy(vc->payload, in + idlen + 3, plen);
  *vc_out = vc;
  *consumed = total;
  return 1;
}
