/* SPDX-License-Identifier: BSD-3-Clause */
/* create.h -- circuit-management cell bodies (tor-spec 5.1, 5.4):
 * CREATE2/CREATED2, CREATE_FAST/CREATED_FAST, the EXTEND2/EXTENDED2 relay
 * bodies with their link specifiers, and DESTROY.
 *
 * The parsed forms are fixed-size structs that copy the handshake data, so
 * they outlive the cell they came from and cost no allocation. An EXTEND2
 * embeds a create2_t, and an EXTENDED2 is a created2_t, because a relay
 * turns one into the other unchanged (tor-spec 5.3). Every length is
 * checked against the room it lives in: CELL_PAYLOAD_LEN (509) for link
 * cells and RELAY_BODY_MAX (498) for relay bodies.
 */
#ifndef PCTOR_CORE_PROTO_CREATE_H
#define PCTOR_CORE_PROTO_CREATE_H
#include <stddef.h>
#include <stdint.h>

#include "core/proto/cell.h"
#include "core/proto/relay_msg.h"

/* Handshake types (HTYPE). */
#define HTYPE_TAP 0x0000
#define HTYPE_NTOR 0x0002
#define HTYPE_NTOR_V3 0x0003

#define CREATE2_HDATA_MAX (CELL_PAYLOAD_LEN - 4)  /* 505 */
#define CREATED2_HDATA_MAX (CELL_PAYLOAD_LEN - 2) /* 507 */
#define EXTENDED2_HDATA_MAX (RELAY_BODY_MAX - 2)  /* 496 */

typedef struct create2_t {
  uint16_t htype;
  uint16_t hlen;
  uint8_t hdata[CREATE2_HDATA_MAX];
} create2_t;

typedef struct created2_t {
  uint16_t hlen;
  uint8_t hdata[CREATED2_HDATA_MAX];
} created2_t;

/* CREATE2 payload: HTYPE HLEN HDATA. -1 if HLEN runs past len (or past
 * CREATE2_HDATA_MAX). Padding after HDATA is ignored. */
int create2_parse(create2_t *out, const uint8_t *payload, size_t len);
/* Write a NUL-padded CELL_PAYLOAD_LEN payload; -1 if hlen is too big. */
int create2_build(uint8_t *payload, const create2_t *c);
/* CREATED2 payload: HLEN HDATA. */
int created2_parse(created2_t *out, const uint8_t *payload, size_t len);
int created2_build(uint8_t *payload, const created2_t *c);
/* Fill cell as a CREATE2 / CREATED2 cell on circ_id. */
int create2_cell_make(cell_t *cell, uint32_t circ_id, const create2_t *c);
int created2_cell_make(cell_t *cell, uint32_t circ_id, const created2_t *c);

/* CREATE_FAST / CREATED_FAST (tor-spec 5.1.5; HASH_LEN = 20). */
#define CREATE_FAST_LEN 20
typedef struct create_fast_t {
  uint8_t x[CREATE_FAST_LEN];
} create_fast_t;
typedef struct created_fast_t {
  uint8_t y[CREATE_FAST_LEN];
  uint8_t kh[CREATE_FAST_LEN]; /* derivative key data */
} created_fast_t;
/* Payloads are always long enough (the cell is fixed-size). */
void create_fast_parse(create_fast_t *out, const uint8_t *payload);
void create_fast_build(uint8_t *payload, const create_fast_t *c);
void created_fast_parse(created_fast_t *out, const uint8_t *payload);
void created_fast_build(uint8_t *payload, const created_fast_t *c);

/* Link specifier types (tor-spec 5.1.2). */
#define LSTYPE_IPV4 0
#define LSTYPE_IPV6 1
#define LSTYPE_LEGACY_ID 2
#define LSTYPE_ED25519_ID 3
/* Unrecognised specifiers kept by extend2_parse() (in order); more are
 * skipped and counted in n_skipped. */
#define EXTEND2_MAX_UNKNOWN_SPECS 4

typedef struct link_spec_t {
  uint8_t type;
  uint8_t len;
  uint8_t data[255];
} link_spec_t;

typedef struct extend2_t {
  int has_ipv4;
  uint8_t ipv4_addr[4]; /* network order */
  uint16_t ipv4_port;
  int has_ipv6;
  uint8_t ipv6_addr[16];
  uint16_t ipv6_port;
  int has_rsa_id;
  uint8_t rsa_id[20]; /* SHA-1 of the RSA identity key's DER */
  int has_ed_id;
  uint8_t ed_id[32];
  uint8_t n_unknown;
  link_spec_t unknown[EXTEND2_MAX_UNKNOWN_SPECS];
  unsigned n_skipped; /* unknown specifiers not kept */
  create2_t create;
} extend2_t;

/* Parse an EXTEND2 relay body (len <= RELAY_BODY_MAX). Only the first IPv4
 * and first IPv6 specifier are used (later ones are accepted and ignored);
 * a second legacy or Ed25519 identity is an error, as is a known specifier
 * with the wrong length or any length running past the body. Bytes after
 * HDATA are ignored. */
int extend2_parse(extend2_t *out, const uint8_t *body, size_t len);
/* Encode e into body (room for maxlen bytes) in the recommended order
 * [00] [02] [03] [01], then the unknown specifiers. Sets *len_out. -1 if
 * the result would exceed maxlen or RELAY_BODY_MAX. */
int extend2_build(uint8_t *body, size_t maxlen, const extend2_t *e,
                  size_t *len_out);
/* EXTENDED2 relay body: HLEN HDATA (hlen <= EXTENDED2_HDATA_MAX). */
int extended2_parse(created2_t *out, const uint8_t *body, size_t len);
int extended2_build(uint8_t *body, size_t maxlen, const created2_t *c,
                    size_t *len_out);

/* DESTROY (tor-spec 5.4): one reason byte, then NUL padding. */
void destroy_cell_make(cell_t *cell, uint32_t circ_id, uint8_t reason);
static inline uint8_t
destroy_cell_reason(const cell_t *cell)
{
  return cell->payload[0];
}
#endif
