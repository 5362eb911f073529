/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_msg.h -- the relay cell header inside a RELAY/RELAY_EARLY payload
 * (tor-spec section 6.1).
 *
 * An unencrypted relay payload is
 *   COMMAND[1] RECOGNIZED[2] STREAM_ID[2] DIGEST[4] LENGTH[2] DATA[LENGTH]
 *   PADDING[509 - 11 - LENGTH]
 * The header is read and written in place in the 509-byte cell payload; the
 * relay crypto layer reads "recognized" and the digest, and the dispatch
 * layer the rest. Nothing here allocates: these run for every relayed cell.
 */
#ifndef PCTOR_CORE_PROTO_RELAY_MSG_H
#define PCTOR_CORE_PROTO_RELAY_MSG_H
#include <stddef.h>
#include <stdint.h>

#include "core/proto/cell.h"

#define RELAY_HEADER_LEN 11
#define RELAY_BODY_MAX (CELL_PAYLOAD_LEN - RELAY_HEADER_LEN) /* 498 */
/* Offsets of the header fields within the payload. */
#define RELAY_OFF_COMMAND 0
#define RELAY_OFF_RECOGNIZED 1
#define RELAY_OFF_STREAM_ID 3
#define RELAY_OFF_DIGEST 5
#define RELAY_OFF_LENGTH 9
#define RELAY_DIGEST_LEN 4

/* Relay commands (tor-spec 6.1; rend-spec-v3; padding-spec; prop324,
 * prop329, prop339). Note: tor-spec.txt's table lists 43 as XON and 44 as
 * XOFF, but tor itself (and the later spec text) uses 43 = XOFF and
 * 44 = XON; we follow the deployed network. */
enum {
  RELAY_COMMAND_BEGIN = 1,
  RELAY_COMMAND_DATA = 2,
  RELAY_COMMAND_END = 3,
  RELAY_COMMAND_CONNECTED = 4,
  RELAY_COMMAND_SENDME = 5,
  RELAY_COMMAND_EXTEND = 6,
  RELAY_COMMAND_EXTENDED = 7,
  RELAY_COMMAND_TRUNCATE = 8,
  RELAY_COMMAND_TRUNCATED = 9,
  RELAY_COMMAND_DROP = 10,
  RELAY_COMMAND_RESOLVE = 11,
  RELAY_COMMAND_RESOLVED = 12,
  RELAY_COMMAND_BEGIN_DIR = 13,
  RELAY_COMMAND_EXTEND2 = 14,
  RELAY_COMMAND_EXTENDED2 = 15,
  RELAY_COMMAND_CONNECT_UDP = 16,
  RELAY_COMMAND_CONNECTED_UDP = 17,
  RELAY_COMMAND_DATAGRAM = 18,
  RELAY_COMMAND_CONFLUX_LINK = 19,
  RELAY_COMMAND_CONFLUX_LINKED = 20,
  RELAY_COMMAND_CONFLUX_LINKED_ACK = 21,
  RELAY_COMMAND_CONFLUX_SWITCH = 22,
  RELAY_COMMAND_ESTABLISH_INTRO = 32,
  RELAY_COMMAND_ESTABLISH_RENDEZVOUS = 33,
  RELAY_COMMAND_INTRODUCE1 = 34,
  RELAY_COMMAND_INTRODUCE2 = 35,
  RELAY_COMMAND_RENDEZVOUS1 = 36,
  RELAY_COMMAND_RENDEZVOUS2 = 37,
  RELAY_COMMAND_INTRO_ESTABLISHED = 38,
  RELAY_COMMAND_RENDEZVOUS_ESTABLISHED = 39,
  RELAY_COMMAND_INTRODUCE_ACK = 40,
  RELAY_COMMAND_PADDING_NEGOTIATE = 41,
  RELAY_COMMAND_PADDING_NEGOTIATED = 42,
  RELAY_COMMAND_XOFF = 43,
  RELAY_COMMAND_XON = 44,
};

/* The FLAGS a BEGIN body may carry after its address (tor-spec 6.2; a
 * body without them means 0). */
#define RELAY_BEGIN_FLAG_IPV6_OK 0x1        /* an IPv6 address is fine */
#define RELAY_BEGIN_FLAG_IPV4_NOT_OK 0x2    /* an IPv4 address is not */
#define RELAY_BEGIN_FLAG_IPV6_PREFERRED 0x4 /* IPv6 rather than IPv4 */

typedef struct relay_header_t {
  uint8_t command;
  uint16_t recognized;
  uint16_t stream_id;
  uint8_t digest[RELAY_DIGEST_LEN];
  uint16_t length;
} relay_header_t;

/* Name of a relay command ("BEGIN", "EXTEND2", ...), "UNKNOWN" if none. */
const char *relay_command_name(uint8_t command);

/* Write h into the first RELAY_HEADER_LEN bytes of payload. */
void relay_header_pack(uint8_t *payload, const relay_header_t *h);
/* Read the header from payload without checking it. */
void relay_header_unpack(relay_header_t *h, const uint8_t *payload);
/* As relay_header_unpack(), but return -1 if length > RELAY_BODY_MAX. */
int relay_header_parse(relay_header_t *h, const uint8_t *payload);

/* Build a complete unencrypted relay payload (CELL_PAYLOAD_LEN bytes) in
 * payload: header with recognized = 0 and digest = 0, then body_len bytes
 * of body, then padding as tor-spec 6.1 recommends (four zero bytes, the
 * rest random). Returns -1 if body_len > RELAY_BODY_MAX. body may alias
 * payload + RELAY_HEADER_LEN. */
int relay_payload_encode(uint8_t *payload, uint8_t command,
                         uint16_t stream_id, const uint8_t *body,
                         size_t body_len);
/* Pointer to the body of a relay payload. */
static inline uint8_t *
relay_payload_body(uint8_t *payload)
{
  return payload + RELAY_HEADER_LEN;
}
#endif
