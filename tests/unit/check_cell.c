/* SPDX-License-Identifier: BSD-3-Clause */
/* check_cell.c -- unit tests for src/core/proto cell codecs: fixed and
 * variable cells, the relay header, the link-handshake cells (VERSIONS,
 * NETINFO, CERTS, AUTH_CHALLENGE, AUTHENTICATE) and the circuit cells
 * (CREATE2, CREATED2, CREATE_FAST, EXTEND2, EXTENDED2, DESTROY).
 *
 * Expected encodings are written out byte by byte from the layouts in
 * tor-spec.txt, not produced by the code under test. Every parser is fed
 * each truncation of a valid input, oversized length fields, zero and
 * maximal counts.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/proto/cell.h"
#include "core/proto/create.h"
#include "core/proto/linkcells.h"
#include "core/proto/relay_msg.h"

Suite *suite_cell(void);

/* ---------------------------------------------------------------- */
/* Fixed and variable cells */

START_TEST(test_cell_pack_unpack)
{
  cell_t c, d;
  uint8_t wire[CELL_MAX_NETWORK_LEN];
  memset(&c, 0, sizeof(c));
  c.circ_id = 0x80000102u;
  c.command = CELL_CREATE2;
  for (int i = 0; i < CELL_PAYLOAD_LEN; i++)
    c.payload[i] = (uint8_t)(i * 7);

  ck_assert_uint_eq(cell_network_len(4), 514);
  cell_pack(wire, &c, 4);
  const uint8_t hdr4[] = { 0x80, 0x00, 0x01, 0x02, 10 };
  ck_assert_mem_eq(wire, hdr4, sizeof(hdr4));
  ck_assert_mem_eq(wire + 5, c.payload, CELL_PAYLOAD_LEN);
  cell_unpack(&d, wire, 4);
  ck_assert_uint_eq(d.circ_id, c.circ_id);
  ck_assert_uint_eq(d.command, c.command);
  ck_assert_mem_eq(d.payload, c.payload, CELL_PAYLOAD_LEN);

  /* Link protocol 3 (and 0 = before VERSIONS): 2-byte circuit IDs. */
  for (int proto = 0; proto <= 3; proto += 3) {
    ck_assert_uint_eq(cell_network_len(proto), 512);
    memset(wire, 0xee, sizeof(wire));
    cell_pack(wire, &c, proto);
    const uint8_t hdr2[] = { 0x01, 0x02, 10 };
    ck_assert_mem_eq(wire, hdr2, sizeof(hdr2));
    ck_assert_mem_eq(wire + 3, c.payload, CELL_PAYLOAD_LEN);
    ck_assert_uint_eq(wire[512], 0xee); /* nothing written past the cell */
    cell_unpack(&d, wire, proto);
    ck_assert_uint_eq(d.circ_id, 0x0102);
  }
}
END_TEST

START_TEST(test_names)
{
  ck_assert_str_eq(cell_command_name(CELL_PADDING), "PADDING");
  ck_assert_str_eq(cell_command_name(CELL_CREATE2), "CREATE2");
  ck_assert_str_eq(cell_command_name(CELL_VERSIONS), "VERSIONS");
  ck_assert_str_eq(cell_command_name(CELL_AUTHORIZE), "AUTHORIZE");
  ck_assert_str_eq(cell_command_name(200), "UNKNOWN");
  ck_assert_str_eq(destroy_reason_name(DESTROY_REASON_NONE), "NONE");
  ck_assert_str_eq(destroy_reason_name(DESTROY_REASON_OR_IDENTITY),
                   "OR_IDENTITY");
  ck_assert_str_eq(destroy_reason_name(12), "NOSUCHSERVICE");
  ck_assert_str_eq(destroy_reason_name(13), "UNKNOWN");
  ck_assert_str_eq(relay_command_name(RELAY_COMMAND_BEGIN), "BEGIN");
  ck_assert_str_eq(relay_command_name(14), "EXTEND2");
  ck_assert_str_eq(relay_command_name(15), "EXTENDED2");
  ck_assert_str_eq(relay_command_name(19), "CONFLUX_LINK");
  ck_assert_str_eq(relay_command_name(22), "CONFLUX_SWITCH");
  ck_assert_str_eq(relay_command_name(43), "XOFF");
  ck_assert_str_eq(relay_command_name(44), "XON");
  ck_assert_str_eq(relay_command_name(0), "UNKNOWN");
  ck_assert_str_eq(relay_command_name(45), "UNKNOWN");
  ck_assert_int_eq(cell_command_is_var(CELL_VERSIONS), 1);
  ck_assert_int_eq(cell_command_is_var(CELL_NETINFO), 0);
  ck_assert_int_eq(cell_command_is_var(CELL_CERTS), 1);
}
END_TEST

START_TEST(test_var_cell_roundtrip)
{
  var_cell_t *vc = var_cell_new(5);
  ck_assert_uint_eq(vc->payload_len, 5);
  const uint8_t zero[5] = { 0 };
  ck_assert_mem_eq(vc->payload, zero, 5);
  vc->circ_id = 0;
  vc->command = CELL_VERSIONS;
  memcpy(vc->payload, "\x00\x03\x00\x04\x00", 5);

  /* Link protocol 0: 2-byte circuit ID, as for the first VERSIONS. */
  uint8_t wire[64];
  ck_assert_uint_eq(var_cell_network_len(vc, 0), 10);
  var_cell_pack(wire, vc, 0);
  const uint8_t expect0[] = { 0, 0, 7, 0, 5, 0, 3, 0, 4, 0 };
  ck_assert_mem_eq(wire, expect0, sizeof(expect0));

  /* Every prefix shorter than the cell is "need more". */
  for (size_t n = 0; n < sizeof(expect0); n++) {
    var_cell_t *out = (var_cell_t *)1;
    size_t used = 99;
    ck_assert_int_eq(var_cell_fetch(expect0, n, 0, &out, &used), 0);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(used, 0);
  }
  /* The whole cell followed by more bytes: exactly the cell consumed. */
  uint8_t more[16];
  memcpy(more, expect0, sizeof(expect0));
  memset(more + sizeof(expect0), 0xaa, sizeof(more) - sizeof(expect0));
  var_cell_t *out = NULL;
  size_t used = 0;
  ck_assert_int_eq(var_cell_fetch(more, sizeof(more), 0, &out, &used), 1);
  ck_assert_uint_eq(used, sizeof(expect0));
  ck_assert_uint_eq(out->command, CELL_VERSIONS);
  ck_assert_uint_eq(out->circ_id, 0);
  ck_assert_uint_eq(out->payload_len, 5);
  ck_assert_mem_eq(out->payload, vc->payload, 5);
  var_cell_free(out);
  ck_assert_ptr_null(out);

  /* Link protocol 4: 4-byte circuit ID. */
  vc->circ_id = 0x01020304;
  vc->command = CELL_CERTS;
  var_cell_pack(wire, vc, 4);
  const uint8_t expect4[] = { 1, 2, 3, 4, 129, 0, 5, 0, 3, 0, 4, 0 };
  ck_assert_uint_eq(var_cell_network_len(vc, 4), sizeof(expect4));
  ck_assert_mem_eq(wire, expect4, sizeof(expect4));
  ck_assert_int_eq(var_cell_fetch(expect4, sizeof(expect4), 4, &out, &used),
                   1);
  ck_assert_uint_eq(out->circ_id, 0x01020304);
  ck_assert_uint_eq(out->command, CELL_CERTS);
  var_cell_free(out);

  /* A fixed-length command is not a var cell. */
  const uint8_t fixed[] = { 0, 0, 0, 1, CELL_RELAY, 0, 0 };
  ck_assert_int_eq(var_cell_fetch(fixed, sizeof(fixed), 4, &out, &used), -1);
  ck_assert_int_eq(var_cell_fetch(fixed, 4, 4, &out, &used), 0);
  var_cell_free(vc);
  var_cell_free_(NULL);
}
END_TEST

START_TEST(test_var_cell_sizes)
{
  /* Zero-length payload. */
  const uint8_t empty[] = { 0, 0, 0, 0, CELL_VPADDING, 0, 0 };
  var_cell_t *out = NULL;
  size_t used = 0;
  ck_assert_int_eq(var_cell_fetch(empty, sizeof(empty), 4, &out, &used), 1);
  ck_assert_uint_eq(out->payload_len, 0);
  ck_assert_uint_eq(used, 7);
  var_cell_free(out);

  /* Maximal payload: 65535 bytes. */
  size_t total = 4 + 3 + VAR_CELL_MAX_PAYLOAD;
  uint8_t *big = malloc(total);
  memset(big, 0x5a, total);
  big[4] = CELL_VPADDING;
  big[5] = 0xff;
  big[6] = 0xff;
  ck_assert_int_eq(var_cell_fetch(big, total - 1, 4, &out, &used), 0);
  ck_assert_int_eq(var_cell_fetch(big, total, 4, &out, &used), 1);
  ck_assert_uint_eq(out->payload_len, 65535);
  ck_assert_uint_eq(used, total);
  ck_assert_uint_eq(out->payload[65534], 0x5a);
  uint8_t *again = malloc(total);
  var_cell_pack(again, out, 4);
  ck_assert_mem_eq(again, big, total);
  free(again);
  free(big);
  var_cell_free(out);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Relay header */

START_TEST(test_relay_header)
{
  uint8_t p[CELL_PAYLOAD_LEN];
  memset(p, 0, sizeof(p));
  relay_header_t h = { .command = RELAY_COMMAND_DATA, .recognized = 0x1234,
                       .stream_id = 0xbeef, .digest = { 1, 2, 3, 4 },
                       .length = 498 };
  relay_header_pack(p, &h);
  const uint8_t expect[RELAY_HEADER_LEN] = { 2, 0x12, 0x34, 0xbe, 0xef, 1,
                                             2, 3, 4, 0x01, 0xf2 };
  ck_assert_mem_eq(p, expect, sizeof(expect));
  relay_header_t g;
  ck_assert_int_eq(relay_header_parse(&g, p), 0);
  ck_assert_uint_eq(g.command, 2);
  ck_assert_uint_eq(g.recognized, 0x1234);
  ck_assert_uint_eq(g.stream_id, 0xbeef);
  ck_assert_mem_eq(g.digest, h.digest, 4);
  ck_assert_uint_eq(g.length, 498);
  ck_assert_uint_eq(RELAY_BODY_MAX, 498);

  /* Length 499 and 0xffff are rejected by parse, not by unpack. */
  p[9] = 0x01;
  p[10] = 0xf3;
  ck_assert_int_eq(relay_header_parse(&g, p), -1);
  relay_header_unpack(&g, p);
  ck_assert_uint_eq(g.length, 499);
  p[9] = p[10] = 0xff;
  ck_assert_int_eq(relay_header_parse(&g, p), -1);
  p[9] = p[10] = 0;
  ck_assert_int_eq(relay_header_parse(&g, p), 0);
  ck_assert_uint_eq(g.length, 0);
}
END_TEST

START_TEST(test_relay_payload_encode)
{
  uint8_t p[CELL_PAYLOAD_LEN], body[RELAY_BODY_MAX + 1];
  for (size_t i = 0; i < sizeof(body); i++)
    body[i] = (uint8_t)(i + 1);
  const uint8_t zeros[4] = { 0 };

  /* Short body: header, body, four zero bytes, then (random) padding. */
  memset(p, 0xcc, sizeof(p));
  ck_assert_int_eq(relay_payload_encode(p, RELAY_COMMAND_BEGIN, 7, body, 10),
                   0);
  const uint8_t hdr[RELAY_HEADER_LEN] = { 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 10 };
  ck_assert_mem_eq(p, hdr, sizeof(hdr));
  ck_assert_mem_eq(p + RELAY_HEADER_LEN, body, 10);
  ck_assert_mem_eq(p + RELAY_HEADER_LEN + 10, zeros, 4);
  /* The random part differs between two encodings (with overwhelming
   * probability: 480 random bytes). */
  uint8_t q[CELL_PAYLOAD_LEN];
  ck_assert_int_eq(relay_payload_encode(q, RELAY_COMMAND_BEGIN, 7, body, 10),
                   0);
  ck_assert_mem_eq(q, p, RELAY_HEADER_LEN + 14);
  ck_assert_int_ne(memcmp(q + 25, p + 25, CELL_PAYLOAD_LEN - 25), 0);

  /* Bodies that leave fewer than four padding bytes. */
  for (size_t n = RELAY_BODY_MAX - 4; n <= RELAY_BODY_MAX; n++) {
    memset(p, 0xcc, sizeof(p));
    ck_assert_int_eq(relay_payload_encode(p, RELAY_COMMAND_DATA, 1, body, n),
                     0);
    ck_assert_mem_eq(p + RELAY_HEADER_LEN, body, n);
    ck_assert_mem_eq(p + RELAY_HEADER_LEN + n, zeros, RELAY_BODY_MAX - n);
    relay_header_t h;
    ck_assert_int_eq(relay_header_parse(&h, p), 0);
    ck_assert_uint_eq(h.length, n);
  }
  ck_assert_int_eq(
    relay_payload_encode(p, RELAY_COMMAND_DATA, 1, body, RELAY_BODY_MAX + 1),
    -1);

  /* The body may already sit in place. */
  memset(p, 0, sizeof(p));
  memcpy(relay_payload_body(p), body, 100);
  ck_assert_int_eq(relay_payload_encode(p, RELAY_COMMAND_DATA, 3,
                                        relay_payload_body(p), 100), 0);
  ck_assert_mem_eq(p + RELAY_HEADER_LEN, body, 100);
  ck_assert_uint_eq(p[0], RELAY_COMMAND_DATA);
}
END_TEST

/* ---------------------------------------------------------------- */
/* VERSIONS */

START_TEST(test_versions)
{
  const uint16_t ours[] = { 3, 4, 5 };
  var_cell_t *vc = NULL;
  ck_assert_int_eq(versions_cell_build(ours, 3, &vc), 0);
  const uint8_t expect[] = { 0, 3, 0, 4, 0, 5 };
  ck_assert_uint_eq(vc->command, CELL_VERSIONS);
  ck_assert_uint_eq(vc->circ_id, 0);
  ck_assert_uint_eq(vc->payload_len, 6);
  ck_assert_mem_eq(vc->payload, expect, 6);
  var_cell_free(vc);

  uint16_t got[8];
  size_t n = 0;
  ck_assert_int_eq(versions_cell_parse(expect, 6, got, 8, &n), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(got[0], 3);
  ck_assert_uint_eq(got[2], 5);
  /* Fewer slots than versions: n still says how many were listed. */
  ck_assert_int_eq(versions_cell_parse(expect, 6, got, 1, &n), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_int_eq(versions_cell_parse(expect, 5, got, 8, &n), -1);
  ck_assert_int_eq(versions_cell_parse(expect, 0, NULL, 0, &n), 0);
  ck_assert_uint_eq(n, 0);

  /* Highest common version. */
  const uint8_t theirs[] = { 0, 5, 0, 1, 0, 3, 0, 4, 0x01, 0x00 };
  const uint16_t o1[] = { 4, 5 }, o2[] = { 3 }, o3[] = { 6, 7 },
                 o4[] = { 3, 4, 5, 256 };
  ck_assert_int_eq(versions_highest_common(theirs, 10, o1, 2), 5);
  ck_assert_int_eq(versions_highest_common(theirs, 10, o2, 1), 3);
  ck_assert_int_eq(versions_highest_common(theirs, 10, o3, 2), 0);
  ck_assert_int_eq(versions_highest_common(theirs, 10, o4, 4), 256);
  ck_assert_int_eq(versions_highest_common(theirs, 0, o1, 2), 0);
  ck_assert_int_eq(versions_highest_common(theirs, 10, o1, 0), 0);
  ck_assert_int_eq(versions_highest_common(theirs, 9, o1, 2), -1);

  /* Maximal count fits exactly; one more does not. */
  uint16_t *many = calloc(VERSIONS_MAX_COUNT + 1, sizeof(uint16_t));
  many[VERSIONS_MAX_COUNT - 1] = 5;
  ck_assert_int_eq(versions_cell_build(many, VERSIONS_MAX_COUNT, &vc), 0);
  ck_assert_uint_eq(vc->payload_len, 65534);
  ck_assert_int_eq(versions_highest_common(vc->payload, vc->payload_len,
                                           o1, 2), 5);
  var_cell_free(vc);
  ck_assert_int_eq(versions_cell_build(many, VERSIONS_MAX_COUNT + 1, &vc),
                   -1);
  ck_assert_ptr_null(vc);
  free(many);
}
END_TEST

/* ---------------------------------------------------------------- */
/* NETINFO */

/* tor-spec 4.5: TIME, OTHERADDR (4, 4, 127.0.0.1), NMYADDR=2,
 * (4, 4, 1.2.3.4), (6, 16, 2001:db8::1). */
static const uint8_t netinfo_bytes[] = {
  0x5f, 0x00, 0x00, 0x01,
  0x04, 0x04, 127, 0, 0, 1,
  0x02,
  0x04, 0x04, 1, 2, 3, 4,
  0x06, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
};

START_TEST(test_netinfo)
{
  netinfo_t ni;
  ck_assert_int_eq(netinfo_parse(&ni, netinfo_bytes, sizeof(netinfo_bytes)),
                   0);
  ck_assert_uint_eq(ni.timestamp, 0x5f000001u);
  ck_assert_uint_eq(ni.other_addr.type, NETINFO_ATYPE_IPV4);
  ck_assert_mem_eq(ni.other_addr.addr, "\x7f\x00\x00\x01", 4);
  ck_assert_uint_eq(ni.n_my_addrs, 2);
  ck_assert_uint_eq(ni.my_addrs[0].type, NETINFO_ATYPE_IPV4);
  ck_assert_mem_eq(ni.my_addrs[0].addr, "\x01\x02\x03\x04", 4);
  ck_assert_uint_eq(ni.my_addrs[1].type, NETINFO_ATYPE_IPV6);
  ck_assert_mem_eq(ni.my_addrs[1].addr, netinfo_bytes + 19, 16);

  /* Build gives the same bytes, NUL-padded to a full payload. */
  cell_t cell;
  memset(&cell, 0xff, sizeof(cell));
  ck_assert_int_eq(netinfo_cell_make(&cell, &ni), 0);
  ck_assert_uint_eq(cell.command, CELL_NETINFO);
  ck_assert_uint_eq(cell.circ_id, 0);
  ck_assert_mem_eq(cell.payload, netinfo_bytes, sizeof(netinfo_bytes));
  for (size_t i = sizeof(netinfo_bytes); i < CELL_PAYLOAD_LEN; i++)
    ck_assert_uint_eq(cell.payload[i], 0);
  /* ...which parses back (trailing padding ignored). */
  netinfo_t back;
  ck_assert_int_eq(netinfo_parse(&back, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_mem_eq(&back, &ni, sizeof(ni));

  /* Every truncation fails. */
  for (size_t n = 0; n < sizeof(netinfo_bytes); n++)
    ck_assert_int_eq(netinfo_parse(&ni, netinfo_bytes, n), -1);
}
END_TEST

START_TEST(test_netinfo_unknown_and_bounds)
{
  /* Other address of unknown type 5; my addresses: wrong ALEN for IPv4
   * (ignored), unknown type 9 (skipped), IPv4 5.6.7.8 (kept). */
  const uint8_t b[] = {
    0, 0, 0, 0,
    0x05, 0x03, 0xaa, 0xbb, 0xcc,
    0x03,
    0x04, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0x09, 0x00,
    0x04, 0x04, 5, 6, 7, 8,
  };
  netinfo_t ni;
  ck_assert_int_eq(netinfo_parse(&ni, b, sizeof(b)), 0);
  ck_assert_uint_eq(ni.timestamp, 0);
  ck_assert_uint_eq(ni.other_addr.type, NETINFO_ATYPE_NONE);
  ck_assert_uint_eq(ni.n_my_addrs, 1);
  ck_assert_mem_eq(ni.my_addrs[0].addr, "\x05\x06\x07\x08", 4);

  /* An unknown other address is sent as type 0, length 0. */
  uint8_t p[CELL_PAYLOAD_LEN];
  ck_assert_int_eq(netinfo_build(p, &ni), 0);
  const uint8_t expect[] = { 0, 0, 0, 0, 0, 0, 1, 4, 4, 5, 6, 7, 8 };
  ck_assert_mem_eq(p, expect, sizeof(expect));
  for (size_t n = 0; n < sizeof(b); n++)
    ck_assert_int_eq(netinfo_parse(&ni, b, n), -1);

  /* Zero addresses of our own. */
  const uint8_t zero[] = { 0, 0, 0, 9, 6, 16, 0, 0, 0, 0, 0, 0, 0, 0,
                           0, 0, 0, 0, 0, 0, 0, 1, 0 };
  ck_assert_int_eq(netinfo_parse(&ni, zero, sizeof(zero)), 0);
  ck_assert_uint_eq(ni.other_addr.type, NETINFO_ATYPE_IPV6);
  ck_assert_uint_eq(ni.n_my_addrs, 0);

  /* ALEN running past the payload. */
  const uint8_t over[] = { 0, 0, 0, 0, 4, 255, 1, 2, 3, 4, 0 };
  ck_assert_int_eq(netinfo_parse(&ni, over, sizeof(over)), -1);

  /* NMYADDR = 255 cannot fit in a 509-byte payload. */
  uint8_t full[CELL_PAYLOAD_LEN];
  memset(full, 0, sizeof(full));
  full[4] = 4;
  full[5] = 4;
  full[10] = 255;
  ck_assert_int_eq(netinfo_parse(&ni, full, sizeof(full)), -1);
  /* Twelve IPv4 addresses: all parsed, the first eight kept. */
  full[10] = 12;
  for (int i = 0; i < 12; i++) {
    uint8_t *a = full + 11 + 6 * i;
    a[0] = 4;
    a[1] = 4;
    a[2] = 10;
    a[5] = (uint8_t)i;
  }
  ck_assert_int_eq(netinfo_parse(&ni, full, sizeof(full)), 0);
  ck_assert_uint_eq(ni.n_my_addrs, NETINFO_MAX_MY_ADDRS);
  ck_assert_uint_eq(ni.my_addrs[7].addr[3], 7);

  /* Build refuses bad input. */
  ni.n_my_addrs = NETINFO_MAX_MY_ADDRS + 1;
  ck_assert_int_eq(netinfo_build(p, &ni), -1);
  ni.n_my_addrs = 1;
  ni.my_addrs[0].type = NETINFO_ATYPE_NONE;
  ck_assert_int_eq(netinfo_build(p, &ni), -1);
  ni.my_addrs[0].type = 5;
  ck_assert_int_eq(netinfo_build(p, &ni), -1);
}
END_TEST

/* ---------------------------------------------------------------- */
/* CERTS */

START_TEST(test_certs)
{
  /* N=3: (1, 3, "abc"), (2, 0), (7, 2, "xy"). */
  const uint8_t b[] = { 3, 1, 0, 3, 'a', 'b', 'c', 2, 0, 0, 7, 0, 2, 'x',
                        'y' };
  certs_cell_t *cc = calloc(1, sizeof(*cc));
  ck_assert_int_eq(certs_cell_parse(cc, b, sizeof(b)), 0);
  ck_assert_uint_eq(cc->n_certs, 3);
  ck_assert_uint_eq(cc->certs[0].type, 1);
  ck_assert_uint_eq(cc->certs[0].len, 3);
  ck_assert_ptr_eq(cc->certs[0].body, b + 4);
  ck_assert_uint_eq(cc->certs[1].len, 0);
  const certs_entry_t *e = certs_cell_find(cc, 7);
  ck_assert_ptr_nonnull(e);
  ck_assert_mem_eq(e->body, "xy", 2);
  ck_assert_ptr_null(certs_cell_find(cc, 4));

  var_cell_t *vc = NULL;
  ck_assert_int_eq(certs_cell_build(cc, &vc), 0);
  ck_assert_uint_eq(vc->command, CELL_CERTS);
  ck_assert_uint_eq(vc->payload_len, sizeof(b));
  ck_assert_mem_eq(vc->payload, b, sizeof(b));
  var_cell_free(vc);

  /* Truncations fail; trailing bytes are ignored. */
  for (size_t n = 0; n < sizeof(b); n++)
    ck_assert_int_eq(certs_cell_parse(cc, b, n), -1);
  uint8_t longer[sizeof(b) + 3];
  memcpy(longer, b, sizeof(b));
  memset(longer + sizeof(b), 0, 3);
  ck_assert_int_eq(certs_cell_parse(cc, longer, sizeof(longer)), 0);
  ck_assert_uint_eq(cc->n_certs, 3);

  /* A repeated type is refused. */
  const uint8_t dup[] = { 2, 4, 0, 1, 'a', 4, 0, 1, 'b' };
  ck_assert_int_eq(certs_cell_parse(cc, dup, sizeof(dup)), -1);
  /* CLEN beyond the payload. */
  const uint8_t over[] = { 1, 2, 0xff, 0xff, 0, 0, 0 };
  ck_assert_int_eq(certs_cell_parse(cc, over, sizeof(over)), -1);
  /* Zero certificates. */
  const uint8_t none[] = { 0 };
  ck_assert_int_eq(certs_cell_parse(cc, none, 1), 0);
  ck_assert_uint_eq(cc->n_certs, 0);

  /* certs_cell_add refuses duplicates. */
  memset(cc, 0, sizeof(*cc));
  ck_assert_int_eq(certs_cell_add(cc, 4, (const uint8_t *)"k", 1), 0);
  ck_assert_int_eq(certs_cell_add(cc, 4, (const uint8_t *)"k", 1), -1);
  ck_assert_int_eq(certs_cell_add(cc, 5, NULL, 0), 0);
  ck_assert_int_eq(certs_cell_build(cc, &vc), 0);
  const uint8_t built[] = { 2, 4, 0, 1, 'k', 5, 0, 0 };
  ck_assert_mem_eq(vc->payload, built, sizeof(built));
  var_cell_free(vc);
  free(cc);
}
END_TEST

START_TEST(test_certs_limits)
{
  certs_cell_t *cc = calloc(1, sizeof(*cc));
  /* Maximal count: 255 empty certificates of distinct types. */
  uint8_t b[1 + 255 * 3];
  b[0] = 255;
  for (int i = 0; i < 255; i++) {
    b[1 + 3 * i] = (uint8_t)i;
    b[2 + 3 * i] = 0;
    b[3 + 3 * i] = 0;
  }
  ck_assert_int_eq(certs_cell_parse(cc, b, sizeof(b)), 0);
  ck_assert_uint_eq(cc->n_certs, 255);
  ck_assert_uint_eq(cc->certs[254].type, 254);
  var_cell_t *vc = NULL;
  ck_assert_int_eq(certs_cell_build(cc, &vc), 0);
  ck_assert_mem_eq(vc->payload, b, sizeof(b));
  var_cell_free(vc);
  /* Full: no 256th entry. */
  ck_assert_int_eq(certs_cell_add(cc, 255, NULL, 0), -1);

  /* A cell whose total exceeds 65535 bytes cannot be built. */
  uint8_t *blob = calloc(1, 65535);
  memset(cc, 0, sizeof(*cc));
  ck_assert_int_eq(certs_cell_add(cc, 1, blob, 65535 - 4), 0);
  ck_assert_int_eq(certs_cell_build(cc, &vc), 0); /* exactly 65535 */
  ck_assert_uint_eq(vc->payload_len, 65535);
  var_cell_free(vc);
  cc->certs[0].len = 65535 - 3;
  ck_assert_int_eq(certs_cell_build(cc, &vc), -1);
  ck_assert_ptr_null(vc);
  ck_assert_int_eq(certs_cell_add(cc, 2, blob, 65536), -1);
  free(blob);
  free(cc);
}
END_TEST

/* ---------------------------------------------------------------- */
/* AUTH_CHALLENGE and AUTHENTICATE */

START_TEST(test_auth_challenge)
{
  auth_challenge_t ac;
  memset(&ac, 0, sizeof(ac));
  for (int i = 0; i < AUTH_CHALLENGE_LEN; i++)
    ac.challenge[i] = (uint8_t)(0xa0 + i);
  ac.n_methods = 2;
  ac.methods[0] = AUTHTYPE_RSA_SHA256_TLSSECRET;
  ac.methods[1] = AUTHTYPE_ED25519_SHA256_RFC5705;
  var_cell_t *vc = NULL;
  ck_assert_int_eq(auth_challenge_build(&ac, &vc), 0);
  ck_assert_uint_eq(vc->command, CELL_AUTH_CHALLENGE);
  ck_assert_uint_eq(vc->payload_len, 38);
  ck_assert_mem_eq(vc->payload, ac.challenge, 32);
  const uint8_t tail[] = { 0, 2, 0, 1, 0, 3 };
  ck_assert_mem_eq(vc->payload + 32, tail, 6);

  auth_challenge_t got;
  ck_assert_int_eq(auth_challenge_parse(&got, vc->payload, 38), 0);
  ck_assert_mem_eq(got.challenge, ac.challenge, 32);
  ck_assert_uint_eq(got.n_methods, 2);
  ck_assert_int_eq(auth_challenge_has_method(&got, 3), 1);
  ck_assert_int_eq(auth_challenge_has_method(&got, 2), 0);
  for (size_t n = 0; n < 38; n++)
    ck_assert_int_eq(auth_challenge_parse(&got, vc->payload, n), -1);
  var_cell_free(vc);

  /* Zero methods; extra bytes ignored; N_METHODS too large. */
  uint8_t b[32 + 2 + 2 * 20 + 5];
  memset(b, 0, sizeof(b));
  ck_assert_int_eq(auth_challenge_parse(&got, b, 34), 0);
  ck_assert_uint_eq(got.n_methods, 0);
  ck_assert_int_eq(auth_challenge_parse(&got, b, sizeof(b)), 0);
  b[32] = 0xff;
  b[33] = 0xff;
  ck_assert_int_eq(auth_challenge_parse(&got, b, sizeof(b)), -1);
  /* Twenty methods: all length-checked, the first sixteen kept. */
  b[32] = 0;
  b[33] = 20;
  for (int i = 0; i < 20; i++)
    b[35 + 2 * i] = (uint8_t)(100 + i);
  ck_assert_int_eq(auth_challenge_parse(&got, b, 32 + 2 + 40), 0);
  ck_assert_uint_eq(got.n_methods, AUTH_CHALLENGE_MAX_METHODS);
  ck_assert_int_eq(auth_challenge_has_method(&got, 115), 1);
  ck_assert_int_eq(auth_challenge_has_method(&got, 116), 0);
  ck_assert_int_eq(auth_challenge_parse(&got, b, 32 + 2 + 39), -1);
  ac.n_methods = AUTH_CHALLENGE_MAX_METHODS + 1;
  ck_assert_int_eq(auth_challenge_build(&ac, &vc), -1);
}
END_TEST

START_TEST(test_authenticate)
{
  var_cell_t *vc = NULL;
  ck_assert_int_eq(authenticate_cell_build(3, (const uint8_t *)"hello", 5,
                                           &vc), 0);
  ck_assert_uint_eq(vc->command, CELL_AUTHENTICATE);
  const uint8_t expect[] = { 0, 3, 0, 5, 'h', 'e', 'l', 'l', 'o' };
  ck_assert_uint_eq(vc->payload_len, sizeof(expect));
  ck_assert_mem_eq(vc->payload, expect, sizeof(expect));
  var_cell_free(vc);

  uint16_t type = 0;
  const uint8_t *auth = NULL;
  size_t alen = 0;
  ck_assert_int_eq(authenticate_cell_parse(expect, sizeof(expect), &type,
                                           &auth, &alen), 0);
  ck_assert_uint_eq(type, 3);
  ck_assert_ptr_eq(auth, expect + 4);
  ck_assert_uint_eq(alen, 5);
  for (size_t n = 0; n < sizeof(expect); n++)
    ck_assert_int_eq(authenticate_cell_parse(expect, n, &type, &auth, &alen),
                     -1);
  /* Trailing bytes ignored; empty authenticator allowed. */
  const uint8_t extra[] = { 0, 1, 0, 0, 9, 9 };
  ck_assert_int_eq(authenticate_cell_parse(extra, sizeof(extra), &type, &auth,
                                           &alen), 0);
  ck_assert_uint_eq(type, 1);
  ck_assert_uint_eq(alen, 0);
  const uint8_t over[] = { 0, 3, 0xff, 0xff, 1 };
  ck_assert_int_eq(authenticate_cell_parse(over, sizeof(over), &type, &auth,
                                           &alen), -1);
  uint8_t *blob = calloc(1, 65536);
  ck_assert_int_eq(authenticate_cell_build(3, blob, 65531, &vc), 0);
  ck_assert_uint_eq(vc->payload_len, 65535);
  var_cell_free(vc);
  ck_assert_int_eq(authenticate_cell_build(3, blob, 65532, &vc), -1);
  free(blob);
}
END_TEST

/* ---------------------------------------------------------------- */
/* CREATE2 / CREATED2 / CREATE_FAST */

START_TEST(test_create2)
{
  create2_t c, d;
  memset(&c, 0, sizeof(c));
  c.htype = HTYPE_NTOR;
  c.hlen = 84;
  for (int i = 0; i < 84; i++)
    c.hdata[i] = (uint8_t)i;
  cell_t cell;
  memset(&cell, 0xff, sizeof(cell));
  ck_assert_int_eq(create2_cell_make(&cell, 0x80000001u, &c), 0);
  ck_assert_uint_eq(cell.command, CELL_CREATE2);
  ck_assert_uint_eq(cell.circ_id, 0x80000001u);
  const uint8_t hdr[] = { 0x00, 0x02, 0x00, 0x54 };
  ck_assert_mem_eq(cell.payload, hdr, 4);
  ck_assert_mem_eq(cell.payload + 4, c.hdata, 84);
  for (int i = 88; i < CELL_PAYLOAD_LEN; i++)
    ck_assert_uint_eq(cell.payload[i], 0);
  ck_assert_int_eq(create2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_uint_eq(d.htype, 2);
  ck_assert_uint_eq(d.hlen, 84);
  ck_assert_mem_eq(d.hdata, c.hdata, 84);
  for (size_t n = 0; n < 88; n++)
    ck_assert_int_eq(create2_parse(&d, cell.payload, n), -1);

  /* Largest HDATA fits, one more does not. */
  c.hlen = CREATE2_HDATA_MAX;
  ck_assert_int_eq(create2_build(cell.payload, &c), 0);
  ck_assert_int_eq(create2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_uint_eq(d.hlen, 505);
  c.hlen = CREATE2_HDATA_MAX + 1;
  ck_assert_int_eq(create2_build(cell.payload, &c), -1);
  cell.payload[2] = 0x01;
  cell.payload[3] = 0xfa; /* 506 */
  ck_assert_int_eq(create2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), -1);
  cell.payload[2] = cell.payload[3] = 0xff;
  ck_assert_int_eq(create2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), -1);
  cell.payload[2] = cell.payload[3] = 0;
  ck_assert_int_eq(create2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_uint_eq(d.hlen, 0);
}
END_TEST

START_TEST(test_created2)
{
  created2_t c, d;
  memset(&c, 0, sizeof(c));
  c.hlen = 64;
  memset(c.hdata, 0x42, 64);
  cell_t cell;
  ck_assert_int_eq(created2_cell_make(&cell, 7, &c), 0);
  ck_assert_uint_eq(cell.command, CELL_CREATED2);
  const uint8_t hdr[] = { 0x00, 0x40, 0x42 };
  ck_assert_mem_eq(cell.payload, hdr, 3);
  ck_assert_uint_eq(cell.payload[66], 0);
  ck_assert_int_eq(created2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_uint_eq(d.hlen, 64);
  ck_assert_mem_eq(d.hdata, c.hdata, 64);
  for (size_t n = 0; n < 66; n++)
    ck_assert_int_eq(created2_parse(&d, cell.payload, n), -1);
  c.hlen = CREATED2_HDATA_MAX;
  ck_assert_int_eq(created2_build(cell.payload, &c), 0);
  ck_assert_int_eq(created2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_uint_eq(d.hlen, 507);
  c.hlen = CREATED2_HDATA_MAX + 1;
  ck_assert_int_eq(created2_build(cell.payload, &c), -1);
  cell.payload[0] = 0x01;
  cell.payload[1] = 0xfc; /* 508 */
  ck_assert_int_eq(created2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), -1);
}
END_TEST

START_TEST(test_create_fast)
{
  create_fast_t x, x2;
  created_fast_t y, y2;
  for (int i = 0; i < CREATE_FAST_LEN; i++) {
    x.x[i] = (uint8_t)i;
    y.y[i] = (uint8_t)(0x40 + i);
    y.kh[i] = (uint8_t)(0x80 + i);
  }
  uint8_t p[CELL_PAYLOAD_LEN];
  memset(p, 0xff, sizeof(p));
  create_fast_build(p, &x);
  ck_assert_mem_eq(p, x.x, 20);
  ck_assert_uint_eq(p[20], 0);
  ck_assert_uint_eq(p[508], 0);
  create_fast_parse(&x2, p);
  ck_assert_mem_eq(x2.x, x.x, 20);
  memset(p, 0xff, sizeof(p));
  created_fast_build(p, &y);
  ck_assert_mem_eq(p, y.y, 20);
  ck_assert_mem_eq(p + 20, y.kh, 20);
  ck_assert_uint_eq(p[40], 0);
  created_fast_parse(&y2, p);
  ck_assert_mem_eq(&y2, &y, sizeof(y));
}
END_TEST

START_TEST(test_destroy)
{
  cell_t c;
  memset(&c, 0xff, sizeof(c));
  destroy_cell_make(&c, 0x80000005u, DESTROY_REASON_FINISHED);
  ck_assert_uint_eq(c.command, CELL_DESTROY);
  ck_assert_uint_eq(c.circ_id, 0x80000005u);
  ck_assert_uint_eq(c.payload[0], 9);
  ck_assert_uint_eq(c.payload[1], 0);
  ck_assert_uint_eq(c.payload[508], 0);
  ck_assert_uint_eq(destroy_cell_reason(&c), DESTROY_REASON_FINISHED);
}
END_TEST

/* ---------------------------------------------------------------- */
/* EXTEND2 / EXTENDED2 */

/* tor-spec 5.1.2 layout, specifiers in the recommended order [00] [02]
 * [03] [01]: 127.0.0.1:9001, RSA id 0x11 x 20, Ed id 0x22 x 32,
 * [2001:db8::2]:443; then HTYPE 2, HLEN 4, HDATA de ad be ef. */
static const uint8_t extend2_bytes[] = {
  4,
  0, 6, 127, 0, 0, 1, 0x23, 0x29,
  2, 20, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
  0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
  3, 32, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
  0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
  0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
  1, 18, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
  0x01, 0xbb,
  0, 2, 0, 4, 0xde, 0xad, 0xbe, 0xef,
};

START_TEST(test_extend2)
{
  extend2_t *e = calloc(1, sizeof(*e));
  ck_assert_int_eq(extend2_parse(e, extend2_bytes, sizeof(extend2_bytes)), 0);
  ck_assert_int_eq(e->has_ipv4, 1);
  ck_assert_mem_eq(e->ipv4_addr, "\x7f\x00\x00\x01", 4);
  ck_assert_uint_eq(e->ipv4_port, 9001);
  ck_assert_int_eq(e->has_rsa_id, 1);
  ck_assert_uint_eq(e->rsa_id[19], 0x11);
  ck_assert_int_eq(e->has_ed_id, 1);
  ck_assert_uint_eq(e->ed_id[0], 0x22);
  ck_assert_int_eq(e->has_ipv6, 1);
  ck_assert_uint_eq(e->ipv6_addr[15], 2);
  ck_assert_uint_eq(e->ipv6_port, 443);
  ck_assert_uint_eq(e->n_unknown, 0);
  ck_assert_uint_eq(e->create.htype, HTYPE_NTOR);
  ck_assert_uint_eq(e->create.hlen, 4);
  ck_assert_mem_eq(e->create.hdata, "\xde\xad\xbe\xef", 4);

  uint8_t out[RELAY_BODY_MAX];
  size_t len = 0;
  ck_assert_int_eq(extend2_build(out, sizeof(out), e, &len), 0);
  ck_assert_uint_eq(len, sizeof(extend2_bytes));
  ck_assert_mem_eq(out, extend2_bytes, len);
  /* Too little room. */
  ck_assert_int_eq(extend2_build(out, len - 1, e, &len), -1);

  for (size_t n = 0; n < sizeof(extend2_bytes); n++)
    ck_assert_int_eq(extend2_parse(e, extend2_bytes, n), -1);

  /* Only an Ed25519 identity and HLEN 0; zero specifiers. */
  const uint8_t minimal[] = { 0, 0, 3, 0, 0 };
  ck_assert_int_eq(extend2_parse(e, minimal, sizeof(minimal)), 0);
  ck_assert_int_eq(e->has_ipv4 | e->has_ipv6 | e->has_rsa_id | e->has_ed_id,
                   0);
  ck_assert_uint_eq(e->create.htype, 3);
  ck_assert_uint_eq(e->create.hlen, 0);
  ck_assert_int_eq(extend2_build(out, sizeof(out), e, &len), 0);
  ck_assert_uint_eq(len, 5);
  ck_assert_mem_eq(out, minimal, 5);
  free(e);
}
END_TEST

START_TEST(test_extend2_specs)
{
  extend2_t *e = calloc(1, sizeof(*e));
  /* Two IPv4 (first kept), an unknown type 9 of 5 bytes (kept), an unknown
   * type 200 of 0 bytes (kept). */
  const uint8_t b[] = {
    4,
    0, 6, 10, 0, 0, 1, 0, 80,
    0, 6, 10, 0, 0, 2, 0, 81,
    9, 5, 'h', 'e', 'l', 'l', 'o',
    200, 0,
    0, 2, 0, 1, 0x77,
  };
  ck_assert_int_eq(extend2_parse(e, b, sizeof(b)), 0);
  ck_assert_mem_eq(e->ipv4_addr, "\x0a\x00\x00\x01", 4);
  ck_assert_uint_eq(e->ipv4_port, 80);
  ck_assert_uint_eq(e->n_unknown, 2);
  ck_assert_uint_eq(e->unknown[0].type, 9);
  ck_assert_uint_eq(e->unknown[0].len, 5);
  ck_assert_mem_eq(e->unknown[0].data, "hello", 5);
  ck_assert_uint_eq(e->unknown[1].type, 200);
  ck_assert_uint_eq(e->n_skipped, 0);
  /* Rebuilt: one IPv4, then the unknown specifiers preserved. */
  uint8_t out[RELAY_BODY_MAX];
  size_t len;
  ck_assert_int_eq(extend2_build(out, sizeof(out), e, &len), 0);
  const uint8_t expect[] = { 3, 0, 6, 10, 0, 0, 1, 0, 80, 9, 5, 'h', 'e',
                             'l', 'l', 'o', 200, 0, 0, 2, 0, 1, 0x77 };
  ck_assert_uint_eq(len, sizeof(expect));
  ck_assert_mem_eq(out, expect, len);

  /* Six unknown specifiers: four kept, two skipped. */
  const uint8_t six[] = { 6, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15, 0,
                          0, 2, 0, 0 };
  ck_assert_int_eq(extend2_parse(e, six, sizeof(six)), 0);
  ck_assert_uint_eq(e->n_unknown, EXTEND2_MAX_UNKNOWN_SPECS);
  ck_assert_uint_eq(e->n_skipped, 2);
  ck_assert_uint_eq(e->unknown[3].type, 13);

  /* Duplicated identities are refused. */
  uint8_t dup_rsa[1 + 2 * 22 + 4] = { 2 };
  dup_rsa[1] = 2;
  dup_rsa[2] = 20;
  dup_rsa[23] = 2;
  dup_rsa[24] = 20;
  ck_assert_int_eq(extend2_parse(e, dup_rsa, sizeof(dup_rsa)), -1);
  dup_rsa[23] = 3; /* second one an Ed25519 id of the wrong length */
  ck_assert_int_eq(extend2_parse(e, dup_rsa, sizeof(dup_rsa)), -1);
  uint8_t dup_ed[1 + 2 * 34 + 4] = { 2 };
  dup_ed[1] = 3;
  dup_ed[2] = 32;
  dup_ed[35] = 3;
  dup_ed[36] = 32;
  ck_assert_int_eq(extend2_parse(e, dup_ed, sizeof(dup_ed)), -1);
  dup_ed[35] = 0x42; /* now an unknown specifier: fine */
  ck_assert_int_eq(extend2_parse(e, dup_ed, sizeof(dup_ed)), 0);

  /* Known specifiers with the wrong length. */
  const uint8_t bad4[] = { 1, 0, 4, 1, 2, 3, 4, 0, 2, 0, 0 };
  ck_assert_int_eq(extend2_parse(e, bad4, sizeof(bad4)), -1);
  const uint8_t bad6[] = { 1, 1, 6, 1, 2, 3, 4, 5, 6, 0, 2, 0, 0 };
  ck_assert_int_eq(extend2_parse(e, bad6, sizeof(bad6)), -1);
  /* LSLEN past the end; HLEN past the end. */
  const uint8_t lsover[] = { 1, 9, 255, 0, 0, 0, 0 };
  ck_assert_int_eq(extend2_parse(e, lsover, sizeof(lsover)), -1);
  const uint8_t hover[] = { 0, 0, 2, 0xff, 0xff, 1, 2 };
  ck_assert_int_eq(extend2_parse(e, hover, sizeof(hover)), -1);
  /* NSPEC = 255 of empty unknown specifiers fits; the body may not exceed
   * 498 bytes. */
  uint8_t big[1 + 510 + 4];
  memset(big, 0, sizeof(big));
  big[0] = 255;
  for (int i = 0; i < 255; i++)
    big[1 + 2 * i] = 0x80;
  ck_assert_int_eq(extend2_parse(e, big, 1 + 510 + 4), -1); /* > 498 */
  big[0] = 200;
  memset(big + 401, 0, 4); /* HTYPE 0, HLEN 0 after the 200th */
  ck_assert_int_eq(extend2_parse(e, big, 1 + 400 + 4), 0);
  ck_assert_uint_eq(e->n_skipped, 200 - EXTEND2_MAX_UNKNOWN_SPECS);
  ck_assert_int_eq(extend2_parse(e, big, RELAY_BODY_MAX + 1), -1);
  free(e);
}
END_TEST

START_TEST(test_extend2_build_limits)
{
  extend2_t *e = calloc(1, sizeof(*e));
  uint8_t out[CELL_PAYLOAD_LEN];
  size_t len;
  /* IPv4 + RSA + Ed + IPv6 = 1 + 8 + 22 + 34 + 20 = 85 bytes; with HTYPE
   * and HLEN 89; so HDATA may be 409 bytes and no more. */
  e->has_ipv4 = e->has_ipv6 = e->has_rsa_id = e->has_ed_id = 1;
  e->create.htype = HTYPE_NTOR_V3;
  e->create.hlen = RELAY_BODY_MAX - 89;
  ck_assert_int_eq(extend2_build(out, sizeof(out), e, &len), 0);
  ck_assert_uint_eq(len, RELAY_BODY_MAX);
  extend2_t *f = calloc(1, sizeof(*f));
  ck_assert_int_eq(extend2_parse(f, out, len), 0);
  ck_assert_uint_eq(f->create.hlen, 409);
  ck_assert_uint_eq(f->create.htype, 3);
  e->create.hlen++;
  ck_assert_int_eq(extend2_build(out, sizeof(out), e, &len), -1);
  ck_assert_uint_eq(len, 0);
  free(f);
  free(e);
}
END_TEST

START_TEST(test_extended2)
{
  created2_t c, d;
  memset(&c, 0, sizeof(c));
  c.hlen = 64;
  memset(c.hdata, 0x5c, 64);
  uint8_t out[RELAY_BODY_MAX];
  size_t len;
  ck_assert_int_eq(extended2_build(out, sizeof(out), &c, &len), 0);
  ck_assert_uint_eq(len, 66);
  ck_assert_uint_eq(out[0], 0);
  ck_assert_uint_eq(out[1], 64);
  ck_assert_int_eq(extended2_parse(&d, out, len), 0);
  ck_assert_uint_eq(d.hlen, 64);
  ck_assert_mem_eq(d.hdata, c.hdata, 64);
  for (size_t n = 0; n < len; n++)
    ck_assert_int_eq(extended2_parse(&d, out, n), -1);
  c.hlen = EXTENDED2_HDATA_MAX;
  ck_assert_int_eq(extended2_build(out, sizeof(out), &c, &len), 0);
  ck_assert_uint_eq(len, RELAY_BODY_MAX);
  ck_assert_int_eq(extended2_parse(&d, out, len), 0);
  c.hlen = EXTENDED2_HDATA_MAX + 1;
  ck_assert_int_eq(extended2_build(out, sizeof(out), &c, &len), -1);
  ck_assert_int_eq(extended2_build(out, 10, &c, &len), -1);
  uint8_t big[RELAY_BODY_MAX + 1] = { 0x01, 0xf1 }; /* HLEN 497 */
  ck_assert_int_eq(extended2_parse(&d, big, sizeof(big)), -1);
  ck_assert_int_eq(extended2_parse(&d, big, RELAY_BODY_MAX), -1);
  /* A CREATED2 body relays into an EXTENDED2 unchanged. */
  cell_t cell;
  c.hlen = 64;
  ck_assert_int_eq(created2_cell_make(&cell, 1, &c), 0);
  ck_assert_int_eq(created2_parse(&d, cell.payload, CELL_PAYLOAD_LEN), 0);
  ck_assert_int_eq(extended2_build(out, sizeof(out), &d, &len), 0);
  ck_assert_mem_eq(out, cell.payload, len);
}
END_TEST

Suite *
suite_cell(void)
{
  Suite *s = suite_create("cell");
  TCase *tc = tcase_create("cells");
  tcase_add_test(tc, test_cell_pack_unpack);
  tcase_add_test(tc, test_names);
  tcase_add_test(tc, test_var_cell_roundtrip);
  tcase_add_test(tc, test_var_cell_sizes);
  suite_add_tcase(s, tc);
  tc = tcase_create("relay");
  tcase_add_test(tc, test_relay_header);
  tcase_add_test(tc, test_relay_payload_encode);
  suite_add_tcase(s, tc);
  tc = tcase_create("link");
  tcase_add_test(tc, test_versions);
  tcase_add_test(tc, test_netinfo);
  tcase_add_test(tc, test_netinfo_unknown_and_bounds);
  tcase_add_test(tc, test_certs);
  tcase_add_test(tc, test_certs_limits);
  tcase_add_test(tc, test_auth_challenge);
  tcase_add_test(tc, test_authenticate);
  suite_add_tcase(s, tc);
  tc = tcase_create("circuit");
  tcase_add_test(tc, test_create2);
  tcase_add_test(tc, test_created2);
  tcase_add_test(tc, test_create_fast);
  tcase_add_test(tc, test_destroy);
  tcase_add_test(tc, test_extend2);
  tcase_add_test(tc, test_extend2_specs);
  tcase_add_test(tc, test_extend2_build_limits);
  tcase_add_test(tc, test_extended2);
  suite_add_tcase(s, tc);
  return s;
}
