/* SPDX-License-Identifier: BSD-3-Clause */
/* cell.h -- Tor cells as they travel on a link (tor-spec section 3).
 *
 * A fixed-length cell is CIRCID | COMMAND | PAYLOAD[509]; the circuit ID is
 * 4 bytes on link protocol >= 4 (2 bytes before, only used while
 * VERSIONS is exchanged). Variable-length cells (VERSIONS, VPADDING,
 * CERTS, AUTH_CHALLENGE, AUTHENTICATE, AUTHORIZE: command >= 128, and
 * VERSIONS = 7) carry a 2-byte length after the command.
 *
 * cell_t is the in-memory form used along the whole spine; packing and
 * unpacking is a fixed copy, so relaying a cell costs no allocation.
 */
#ifndef PCTOR_CORE_PROTO_CELL_H
#define PCTOR_CORE_PROTO_CELL_H
#include <stddef.h>
#include <stdint.h>

#define CELL_PAYLOAD_LEN 509
#define CELL_MAX_NETWORK_LEN 514 /* 4-byte circ id + cmd + payload */
#define VAR_CELL_MAX_PAYLOAD 65535

/* Link-level cell commands (tor-spec 3). */
enum {
  CELL_PADDING = 0,
  CELL_CREATE = 1,
  CELL_CREATED = 2,
  CELL_RELAY = 3,
  CELL_DESTROY = 4,
  CELL_CREATE_FAST = 5,
  CELL_CREATED_FAST = 6,
  CELL_VERSIONS = 7,
  CELL_NETINFO = 8,
  CELL_RELAY_EARLY = 9,
  CELL_CREATE2 = 10,
  CELL_CREATED2 = 11,
  CELL_PADDING_NEGOTIATE = 12,
  CELL_VPADDING = 128,
  CELL_CERTS = 129,
  CELL_AUTH_CHALLENGE = 130,
  CELL_AUTHENTICATE = 131,
  CELL_AUTHORIZE = 132,
};

/* DESTROY / TRUNCATED reasons (tor-spec 5.4). */
enum {
  DESTROY_REASON_NONE = 0,
  DESTROY_REASON_PROTOCOL = 1,
  DESTROY_REASON_INTERNAL = 2,
  DESTROY_REASON_REQUESTED = 3,
  DESTROY_REASON_HIBERNATING = 4,
  DESTROY_REASON_RESOURCELIMIT = 5,
  DESTROY_REASON_CONNECTFAILED = 6,
  DESTROY_REASON_OR_IDENTITY = 7,
  DESTROY_REASON_CHANNEL_CLOSED = 8,
  DESTROY_REASON_FINISHED = 9,
  DESTROY_REASON_TIMEOUT = 10,
  DESTROY_REASON_DESTROYED = 11,
  DESTROY_REASON_NOSUCHSERVICE = 12,
};

typedef struct cell_t {
  uint32_t circ_id;
  uint8_t command;
  uint8_t payload[CELL_PAYLOAD_LEN];
} cell_t;

typedef struct var_cell_t {
  uint32_t circ_id;
  uint8_t command;
  uint16_t payload_len;
  uint8_t payload[];
} var_cell_t;

/* Length of a circuit ID on the wire for a link protocol version (0 means
 * "not negotiated yet": 2 bytes, as for the first VERSIONS cell). */
static inline size_t
cell_circid_len(int link_proto)
{
  return link_proto >= 4 ? 4 : 2;
}
static inline size_t
cell_network_len(int link_proto)
{
  return cell_circid_len(link_proto) + 1 + CELL_PAYLOAD_LEN;
}
/* True for commands that use the variable-length format. */
static inline int
cell_command_is_var(uint8_t command)
{
  return command == CELL_VERSIONS || command >= 128;
}
const char *cell_command_name(uint8_t command);
const char *destroy_reason_name(uint8_t reason);

/* Encode cell into out (cell_network_len(link_proto) bytes). */
void cell_pack(uint8_t *out, const cell_t *cell, int link_proto);
/* Decode cell_network_len(link_proto) bytes. */
void cell_unpack(cell_t *cell, const uint8_t *in, int link_proto);

/* New var cell with payload_len bytes of zeroed payload; never NULL. */
var_cell_t *var_cell_new(uint16_t payload_len);
void var_cell_free_(var_cell_t *vc);
#define var_cell_free(x) do { var_cell_free_(x); (x) = NULL; } while (0)
/* Bytes var_cell_pack() writes. */
size_t var_cell_network_len(const var_cell_t *vc, int link_proto);
void var_cell_pack(uint8_t *out, const var_cell_t *vc, int link_proto);
/* Look at the start of in (len bytes): if it holds a complete var cell,
 * return 1 and set *vc_out (new) and *consumed; if it is a var cell but
 * incomplete, return 0; if the command is not variable-length return -1
 * (it is a fixed cell). Needs at least circid+1 bytes to decide; returns 0
 * when fewer are available. */
int var_cell_fetch(const uint8_t *in, size_t len, int link_proto,
                   var_cell_t **vc_out, size_t *consumed);
#endif
