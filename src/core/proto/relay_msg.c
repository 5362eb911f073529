/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_msg.c -- the relay cell header (tor-spec 6.1); see relay_msg.h.
 *
 * Header packing is a handful of byte stores into the caller's payload.
 * relay_payload_encode() fills the padding with four zero bytes and then
 * random bytes (proposal 289's recommendation, repeated in tor-spec 6.1) so
 * relay payloads are unpredictable; a full DATA cell has no padding and
 * costs no random bytes.
 */
#include "core/proto/relay_msg.h"

#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/rand.h"

const char *
relay_command_name(uint8_t command)
{
  switch (command) {
  case RELAY_COMMAND_BEGIN: return "BEGIN";
  case RELAY_COMMAND_DATA: return "DATA";
  case RELAY_COMMAND_END: return "END";
  case RELAY_COMMAND_CONNECTED: return "CONNECTED";
  case RELAY_COMMAND_SENDME: return "SENDME";
  case RELAY_COMMAND_EXTEND: return "EXTEND";
  case RELAY_COMMAND_EXTENDED: return "EXTENDED";
  case RELAY_COMMAND_TRUNCATE: return "TRUNCATE";
  case RELAY_COMMAND_TRUNCATED: return "TRUNCATED";
  case RELAY_COMMAND_DROP: return "DROP";
  case RELAY_COMMAND_RESOLVE: return "RESOLVE";
  case RELAY_COMMAND_RESOLVED: return "RESOLVED";
  case RELAY_COMMAND_BEGIN_DIR: return "BEGIN_DIR";
  case RELAY_COMMAND_EXTEND2: return "EXTEND2";
  case RELAY_COMMAND_EXTENDED2: return "EXTENDED2";
  case RELAY_COMMAND_CONNECT_UDP: return "CONNECT_UDP";
  case RELAY_COMMAND_CONNECTED_UDP: return "CONNECTED_UDP";
  case RELAY_COMMAND_DATAGRAM: return "DATAGRAM";
  case RELAY_COMMAND_CONFLUX_LINK: return "CONFLUX_LINK";
  case RELAY_COMMAND_CONFLUX_LINKED: return "CONFLUX_LINKED";
  case RELAY_COMMAND_CONFLUX_LINKED_ACK: return "CONFLUX_LINKED_ACK";
  case RELAY_COMMAND_CONFLUX_SWITCH: return "CONFLUX_SWITCH";
  case RELAY_COMMAND_ESTABLISH_INTRO: return "ESTABLISH_INTRO";
  case RELAY_COMMAND_ESTABLISH_RENDEZVOUS: return "ESTABLISH_RENDEZVOUS";
  case RELAY_COMMAND_INTRODUCE1: return "INTRODUCE1";
  case RELAY_COMMAND_INTRODUCE2: return "INTRODUCE2";
  case RELAY_COMMAND_RENDEZVOUS1: return "RENDEZVOUS1";
  case RELAY_COMMAND_RENDEZVOUS2: return "RENDEZVOUS2";
  case RELAY_COMMAND_INTRO_ESTABLISHED: return "INTRO_ESTABLISHED";
  case RELAY_COMMAND_RENDEZVOUS_ESTABLISHED: return "RENDEZVOUS_ESTABLISHED";
  case RELAY_COMMAND_INTRODUCE_ACK: return "INTRODUCE_ACK";
  case RELAY_COMMAND_PADDING_NEGOTIATE: return "PADDING_NEGOTIATE";
  case RELAY_COMMAND_PADDING_NEGOTIATED: return "PADDING_NEGOTIATED";
  case RELAY_COMMAND_XOFF: return "XOFF";
  case RELAY_COMMAND_XON: return "XON";
  default: return "UNKNOWN";
  }
}

void
relay_header_pack(uint8_t *payload, const relay_header_t *h)
{
  payload[RELAY_OFF_COMMAND] = h->command;
  set_u16(payload + RELAY_OFF_RECOGNIZED, h->recognized);
  set_u16(payload + RELAY_OFF_STREAM_ID, h->stream_id);
  memcpy(payload + RELAY_OFF_DIGEST, h->digest, RELAY_DIGEST_LEN);
  set_u16(payload + RELAY_OFF_LENGTH, h->length);
}

void
relay_header_unpack(relay_header_t *h, const uint8_t *payload)
{
  h->command = payload[RELAY_OFF_COMMAND];
  h->recognized = get_u16(payload + RELAY_OFF_RECOGNIZED);
  h->stream_id = get_u16(payload + RELAY_OFF_STREAM_ID);
  memcpy(h->digest, payload + RELAY_OFF_DIGEST, RELAY_DIGEST_LEN);
  h->length = get_u16(payload + RELAY_OFF_LENGTH);
}

int
relay_header_parse(relay_header_t *h, const uint8_t *payload)
{
  relay_header_unpack(h, payload);
  return h->length > RELAY_BODY_MAX ? -1 : 0;
}

int
relay_payload_encode(uint8_t *payload, uint8_t command, uint16_t stream_id,
                     const uint8_t *body, size_t body_len)
{
  if (body_len > RELAY_BODY_MAX)
    return -1;
  relay_header_t h = {
    .command = command,
    .recognized = 0,
    .stream_id = stream_id,
    .digest = { 0, 0, 0, 0 },
    .length = (uint16_t)body_len,
  };
  if (body_len && body != payload + RELAY_HEADER_LEN)
    memmove(payload + RELAY_HEADER_LEN, body, body_len);
  relay_header_pack(payload, &h);
  size_t pad_off = RELAY_HEADER_LEN + body_len;
  size_t pad_len = CELL_PAYLOAD_LEN - pad_off;
  size_t zeros = pad_len < 4 ? pad_len : 4;
  memset(payload + pad_off, 0, zeros);
  if (pad_len > zeros)
    crypt_rand(payload + pad_off + zeros, pad_len - zeros);
  return 0;
}
