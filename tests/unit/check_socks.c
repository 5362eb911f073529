/* SPDX-License-Identifier: BSD-3-Clause */
/* check_socks.c -- unit tests for feature/client/socks_proto.
 *
 * Every accepted handshake is driven through the parser in pieces of
 * every size from one byte to the whole message (and split at every
 * position), and must give the same replies, request and consumed count.
 * Vectors:
 *  - SOCKS4 / SOCKS4a: the classic examples from the SOCKS4 and SOCKS4A
 *    protocol descriptions (user "Fred" to 66.102.7.99:80, and to
 *    www.example.com via 0.0.0.1);
 *  - SOCKS5: byte layouts written from RFC 1928 sections 3-6 and RFC 1929
 *    section 2, and the exact bytes curl 7.88.1 sent to a throwaway
 *    harness running this parser (--socks5-hostname, --socks5, --socks4a,
 *    --socks4, --proxy-user u:p, socks5h://alice:s3cret@ to an IPv6
 *    target); curl accepted the replies and reported "(5)", "(2)",
 *    "(4)", "(6)" for the REP codes of CONNECTREFUSED, EXITPOLICY,
 *    RESOLVEFAILED, TIMEOUT, and "(91)" for SOCKS4 0x5B;
 *  - malformed inputs: bad versions, zero or unacceptable methods, missing
 *    authentication, BIND/UDP/unknown commands, unknown address types,
 *    empty/invalid/oversized hostnames, oversized user ids, truncation,
 *    bytes after the request (left unconsumed), HTTP requests;
 *  - encoders and the RELAY_END -> REP table (tor-spec 6.3 reasons).
 */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/socks_proto.h"

Suite *suite_socks(void);

/* ---- driver ---- */

typedef struct {
  socks_status_t st;
  size_t used;          /* bytes consumed in all */
  uint8_t out[4096];    /* every reply, concatenated */
  size_t outlen;
  int n_replies;
  socks_parser_t p;
} drive_t;

static void
append_reply(drive_t *d)
{
  size_t rl;
  const uint8_t *r = socks_parser_reply(&d->p, &rl);
  ck_assert_uint_le(d->outlen + rl, sizeof(d->out));
  memcpy(d->out + d->outlen, r, rl);
  d->outlen += rl;
  if (rl)
    d->n_replies++;
}

/* Deliver in[0..len) in pieces: first `split` bytes (0: none special),
 * then `chunk` bytes at a time. Unconsumed bytes are fed again with the
 * next piece, as a connection's input buffer would. */
static void
drive_split(drive_t *d, unsigned flags, const uint8_t *in, size_t len,
            size_t split, size_t chunk)
{
  memset(d, 0, sizeof(*d));
  socks_parser_init(&d->p, flags);
  size_t delivered = 0;
  for (;;) {
    size_t step = (delivered == 0 && split) ? split : chunk;
    if (delivered < len)
      delivered += (len - delivered < step) ? len - delivered : step;
    for (;;) {
      size_t c = 99999;
      d->st = socks_parser_feed(&d->p, in + d->used, delivered - d->used, &c);
      ck_assert_uint_le(c, delivered - d->used);
      d->used += c;
      if (d->st != SOCKS_SEND_REPLY)
        break;
      append_reply(d);
    }
    if (d->st == SOCKS_FAILED)
      append_reply(d);
    if (d->st == SOCKS_DONE || d->st == SOCKS_FAILED)
      break;
    ck_assert_int_eq(d->st, SOCKS_NEED_MORE);
    ck_assert_uint_eq(d->used, delivered); /* NEED_MORE eats everything */
    if (delivered == len)
      break;
  }
}

static void
drive(drive_t *d, unsigned flags, const uint8_t *in, size_t len,
      size_t chunk)
{
  drive_split(d, flags, in, len, 0, chunk ? chunk : len);
}

static int
req_eq(const socks_request_t *a, const socks_request_t *b)
{
  return a->version == b->version && a->command == b->command &&
         a->addr_type == b->addr_type && a->is_socks4a == b->is_socks4a &&
         a->port == b->port && !strcmp(a->address, b->address) &&
         a->addr.family == b->addr.family &&
         !memcmp(a->addr.addr, b->addr.addr, 16) &&
         a->addr.port == b->addr.port && a->auth == b->auth &&
         socks_request_auth_eq(a, b);
}

/* Drive whole, then in every chunk size and every split; all must agree
 * with the whole run, which is returned in *d. */
static void
drive_all(drive_t *d, unsigned flags, const uint8_t *in, size_t len)
{
  static drive_t e;
  drive(d, flags, in, len, 0);
  for (size_t k = 1; k <= len; k++) {
    for (int mode = 0; mode < 2; mode++) {
      if (mode == 0)
        drive(&e, flags, in, len, k);
      else
        drive_split(&e, flags, in, len, k, len);
      ck_assert_msg(e.st == d->st, "chunk %zu mode %d: status %d vs %d", k,
                    mode, e.st, d->st);
      ck_assert_uint_eq(e.used, d->used);
      ck_assert_uint_eq(e.outlen, d->outlen);
      ck_assert(!memcmp(e.out, d->out, d->outlen));
      ck_assert_int_eq(socks_parser_error(&e.p), socks_parser_error(&d->p));
      if (d->st == SOCKS_DONE)
        ck_assert(req_eq(socks_parser_request(&e.p),
                         socks_parser_request(&d->p)));
    }
  }
}

static const socks_request_t *
expect_done(drive_t *d, unsigned flags, const uint8_t *in, size_t len,
            const uint8_t *replies, size_t replies_len)
{
  drive_all(d, flags, in, len);
  ck_assert_msg(d->st == SOCKS_DONE, "status %d: %s", d->st,
                socks_parser_errmsg(&d->p));
  ck_assert_uint_eq(d->used, len);
  ck_assert_uint_eq(d->outlen, replies_len);
  if (replies_len)
    ck_assert(!memcmp(d->out, replies, replies_len));
  ck_assert_int_eq(socks_parser_error(&d->p), SOCKS_ERR_NONE);
  ck_assert_str_eq(socks_parser_errmsg(&d->p), "");
  const socks_request_t *r = socks_parser_request(&d->p);
  ck_assert_ptr_nonnull(r);
  return r;
}

/* The handshake in[] must fail with err; the bytes sent back in all (the
 * negotiation replies, then the error reply) must be want[]. */
static void
expect_fail(const uint8_t *in, size_t len, unsigned flags, socks_error_t err,
            const uint8_t *want, size_t want_len)
{
  static drive_t d;
  drive_all(&d, flags, in, len);
  ck_assert_msg(d.st == SOCKS_FAILED, "status %d", d.st);
  ck_assert_msg(socks_parser_error(&d.p) == err, "error %d (%s), want %d",
                socks_parser_error(&d.p), socks_parser_errmsg(&d.p), err);
  ck_assert(strlen(socks_parser_errmsg(&d.p)) > 0);
  ck_assert_ptr_null(socks_parser_request(&d.p));
  ck_assert_uint_eq(d.outlen, want_len);
  if (want_len)
    ck_assert(!memcmp(d.out, want, want_len));
  /* A failed parser stays failed and takes nothing more. */
  size_t c = 1, rl = 1;
  ck_assert_int_eq(socks_parser_feed(&d.p, in, len, &c), SOCKS_FAILED);
  ck_assert_uint_eq(c, 0);
  socks_parser_reply(&d.p, &rl);
  ck_assert_uint_eq(rl, 0);
}

#define B(...) ((const uint8_t[]){__VA_ARGS__})
#define L(...) sizeof((const uint8_t[]){__VA_ARGS__})
#define BL(...) B(__VA_ARGS__), L(__VA_ARGS__)

static const uint8_t R5_OK_METHOD0[] = {5, 0};
/* 05 REP 00 01 0.0.0.0 port 0 */
#define R5ERR(rep) 5, rep, 0, 1, 0, 0, 0, 0, 0, 0
#define R4REJ 0, 0x5b, 0, 0, 0, 0, 0, 0

/* ---- SOCKS4 / SOCKS4a ---- */

START_TEST(test_socks4_connect)
{
  /* SOCKS4 description: "Fred" asks for 66.102.7.99 port 80. */
  static const uint8_t req[] = {0x04, 0x01, 0x00, 0x50, 0x42, 0x66, 0x07,
                                0x63, 'F',  'r',  'e',  'd',  0x00};
  static drive_t d;
  const socks_request_t *r = expect_done(&d, 0, req, sizeof(req), NULL, 0);
  ck_assert_int_eq(r->version, 4);
  ck_assert_int_eq(r->command, SOCKS_CMD_CONNECT);
  ck_assert_int_eq(r->addr_type, SOCKS_ATYP_IPV4);
  ck_assert_int_eq(r->is_socks4a, 0);
  ck_assert_uint_eq(r->port, 80);
  ck_assert_str_eq(r->address, "66.102.7.99");
  ck_assert_int_eq(r->addr.family, AF_INET);
  ck_assert(!memcmp(r->addr.addr, B(66, 102, 7, 99), 4));
  ck_assert_uint_eq(r->addr.port, 80);
  ck_assert_int_eq(r->auth, SOCKS_AUTH_SOCKS4_USERID);
  ck_assert_uint_eq(r->username_len, 4);
  ck_assert_str_eq((const char *)r->username, "Fred");
  ck_assert_uint_eq(r->password_len, 0);

  /* curl --socks4 to 127.0.0.3:80: empty user id. */
  r = expect_done(&d, 0, BL(0x04, 0x01, 0x00, 0x50, 0x7f, 0x00, 0x00, 0x03,
                            0x00),
                  NULL, 0);
  ck_assert_str_eq(r->address, "127.0.0.3");
  ck_assert_int_eq(r->auth, SOCKS_AUTH_NONE);
  ck_assert_uint_eq(r->username_len, 0);

  /* tor's RESOLVE over SOCKS4 (port 0 allowed). */
  r = expect_done(&d, 0, BL(4, 0xF0, 0, 0, 0, 0, 0, 1, 0, 'a', '.', 'b', 0),
                  NULL, 0);
  ck_assert_int_eq(r->command, SOCKS_CMD_RESOLVE);
  ck_assert_str_eq(r->address, "a.b");
  ck_assert_uint_eq(r->port, 0);
}
END_TEST

START_TEST(test_socks4a)
{
  /* SOCKS4A description: "Fred", 0.0.0.1, then the hostname. */
  static const uint8_t req[] = {0x04, 0x01, 0x00, 0x50, 0x00, 0x00, 0x00,
                                0x01, 'F',  'r',  'e',  'd',  0x00, 'w',
                                'w',  'w',  '.',  'e',  'x',  'a',  'm',
                                'p',  'l',  'e',  '.',  'c',  'o',  'm',
                                0x00};
  static drive_t d;
  const socks_request_t *r = expect_done(&d, 0, req, sizeof(req), NULL, 0);
  ck_assert_int_eq(r->version, 4);
  ck_assert_int_eq(r->is_socks4a, 1);
  ck_assert_int_eq(r->addr_type, SOCKS_ATYP_HOSTNAME);
  ck_assert_str_eq(r->address, "www.example.com");
  ck_assert_int_eq(r->addr.family, AF_UNSPEC);
  ck_assert_uint_eq(r->port, 80);
  ck_assert_str_eq((const char *)r->username, "Fred");

  /* curl --socks4a http://www.example.com/ (DSTIP 0.0.0.1, no user). */
  r = expect_done(&d, 0,
                  BL(0x04, 0x01, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00,
                     0x77, 0x77, 0x77, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70,
                     0x6c, 0x65, 0x2e, 0x63, 0x6f, 0x6d, 0x00),
                  NULL, 0);
  ck_assert_str_eq(r->address, "www.example.com");
  ck_assert_int_eq(r->auth, SOCKS_AUTH_NONE);

  /* 0.0.0.255 is still SOCKS4a; an IP literal as the name gets addr. */
  r = expect_done(&d, 0,
                  BL(4, 1, 0x01, 0xbb, 0, 0, 0, 255, 0, '1', '0', '.', '0',
                     '.', '0', '.', '1', 0),
                  NULL, 0);
  ck_assert_int_eq(r->is_socks4a, 1);
  ck_assert_str_eq(r->address, "10.0.0.1");
  ck_assert_int_eq(r->addr.family, AF_INET);
  ck_assert(!memcmp(r->addr.addr, B(10, 0, 0, 1), 4));
  ck_assert_uint_eq(r->addr.port, 443);
  /* 0.0.1.0 is plain SOCKS4. */
  r = expect_done(&d, 0, BL(4, 1, 0, 80, 0, 0, 1, 0, 0), NULL, 0);
  ck_assert_int_eq(r->is_socks4a, 0);
  ck_assert_str_eq(r->address, "0.0.1.0");
}
END_TEST

START_TEST(test_socks4_limits)
{
  static uint8_t buf[SOCKS_MAX_HANDSHAKE + 64];
  static drive_t d;
  /* User id of exactly 1024 bytes, hostname of exactly 255: the longest
   * legal handshake. */
  size_t n = 0;
  memcpy(buf, B(4, 1, 0, 80, 0, 0, 0, 1), 8);
  n = 8;
  memset(buf + n, 'u', SOCKS4_MAX_USERID);
  n += SOCKS4_MAX_USERID;
  buf[n++] = 0;
  memset(buf + n, 'h', SOCKS_MAX_HOSTNAME);
  n += SOCKS_MAX_HOSTNAME;
  buf[n++] = 0;
  ck_assert_uint_eq(n, SOCKS_MAX_HANDSHAKE);
  const socks_request_t *r = expect_done(&d, 0, buf, n, NULL, 0);
  ck_assert_uint_eq(r->username_len, SOCKS4_MAX_USERID);
  ck_assert_uint_eq(strlen((const char *)r->username), SOCKS4_MAX_USERID);
  ck_assert_uint_eq(strlen(r->address), SOCKS_MAX_HOSTNAME);

  /* One more user id byte. */
  n = 8;
  memset(buf + n, 'u', SOCKS4_MAX_USERID + 1);
  n += SOCKS4_MAX_USERID + 1;
  buf[n++] = 0;
  expect_fail(buf, n, 0, SOCKS_ERR_TOO_LONG, BL(R4REJ));
  /* ... also without its NUL ever arriving. */
  expect_fail(buf, n - 1, 0, SOCKS_ERR_TOO_LONG, BL(R4REJ));

  /* One more hostname byte. */
  n = 8;
  buf[n++] = 0;
  memset(buf + n, 'h', SOCKS_MAX_HOSTNAME + 1);
  n += SOCKS_MAX_HOSTNAME + 1;
  buf[n++] = 0;
  expect_fail(buf, n, 0, SOCKS_ERR_TOO_LONG, BL(R4REJ));
}
END_TEST

START_TEST(test_socks4_malformed)
{
  /* BIND and unknown commands. */
  expect_fail(BL(4, 2, 0, 80, 1, 2, 3, 4, 0), 0, SOCKS_ERR_COMMAND,
              BL(R4REJ));
  expect_fail(BL(4, 3, 0, 80, 1, 2, 3, 4, 0), 0, SOCKS_ERR_COMMAND,
              BL(R4REJ));
  /* No RESOLVE_PTR over SOCKS4. */
  expect_fail(BL(4, 0xF1, 0, 80, 1, 2, 3, 4, 0), 0, SOCKS_ERR_COMMAND,
              BL(R4REJ));
  /* DSTIP 0.0.0.0. */
  expect_fail(BL(4, 1, 0, 80, 0, 0, 0, 0, 0), 0, SOCKS_ERR_ADDRESS,
              BL(R4REJ));
  /* CONNECT to port 0. */
  expect_fail(BL(4, 1, 0, 0, 1, 2, 3, 4, 0), 0, SOCKS_ERR_MALFORMED,
              BL(R4REJ));
  /* SOCKS4a with an empty or invalid hostname. */
  expect_fail(BL(4, 1, 0, 80, 0, 0, 0, 1, 0, 0), 0, SOCKS_ERR_ADDRESS,
              BL(R4REJ));
  expect_fail(BL(4, 1, 0, 80, 0, 0, 0, 1, 0, 'a', ' ', 'b', 0), 0,
              SOCKS_ERR_ADDRESS, BL(R4REJ));
  expect_fail(BL(4, 1, 0, 80, 0, 0, 0, 1, 0, '-', 'x', 0), 0,
              SOCKS_ERR_ADDRESS, BL(R4REJ));
}
END_TEST

/* ---- SOCKS5 ---- */

START_TEST(test_socks5_noauth)
{
  static drive_t d;
  /* RFC 1928: VER 5, NMETHODS 1, METHODS {0}; CONNECT to a domain name. */
  static const uint8_t req[] = {5, 1, 0, 5, 1, 0, 3, 11, 'e', 'x', 'a', 'm',
                                'p', 'l', 'e', '.', 'c', 'o', 'm', 0x01,
                                0xbb};
  const socks_request_t *r =
      expect_done(&d, 0, req, sizeof(req), R5_OK_METHOD0, 2);
  ck_assert_int_eq(d.n_replies, 1);
  ck_assert_int_eq(r->version, 5);
  ck_assert_int_eq(r->command, SOCKS_CMD_CONNECT);
  ck_assert_int_eq(r->addr_type, SOCKS_ATYP_HOSTNAME);
  ck_assert_str_eq(r->address, "example.com");
  ck_assert_uint_eq(r->port, 443);
  ck_assert_int_eq(r->auth, SOCKS_AUTH_NONE);
  ck_assert_int_eq(r->addr.family, AF_UNSPEC);

  /* curl --socks5-hostname http://example.com/ (offers 0 and GSSAPI). */
  r = expect_done(&d, 0,
                  BL(0x05, 0x02, 0x00, 0x01, 0x05, 0x01, 0x00, 0x03, 0x0b,
                     0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x63,
                     0x6f, 0x6d, 0x00, 0x50),
                  R5_OK_METHOD0, 2);
  ck_assert_str_eq(r->address, "example.com");
  ck_assert_uint_eq(r->port, 80);

  /* curl --socks5 http://127.0.0.2:8080/ (IPv4 address type). */
  r = expect_done(&d, 0,
                  BL(0x05, 0x02, 0x00, 0x01, 0x05, 0x01, 0x00, 0x01, 0x7f,
                     0x00, 0x00, 0x02, 0x1f, 0x90),
                  R5_OK_METHOD0, 2);
  ck_assert_int_eq(r->addr_type, SOCKS_ATYP_IPV4);
  ck_assert_str_eq(r->address, "127.0.0.2");
  ck_assert_int_eq(r->addr.family, AF_INET);
  ck_assert(!memcmp(r->addr.addr, B(127, 0, 0, 2), 4));
  ck_assert_uint_eq(r->port, 8080);
  ck_assert_uint_eq(r->addr.port, 8080);

  /* IPv6 address type. */
  r = expect_done(&d, 0,
                  BL(5, 1, 0, 5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0,
                     0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22),
                  R5_OK_METHOD0, 2);
  ck_assert_int_eq(r->addr_type, SOCKS_ATYP_IPV6);
  ck_assert_str_eq(r->address, "2001:db8::1");
  ck_assert_int_eq(r->addr.family, AF_INET6);
  ck_assert_uint_eq(r->port, 22);

  /* A 255-byte domain name (the longest). */
  static uint8_t big[4 + 4 + 1 + 255 + 2];
  memcpy(big, B(5, 1, 0, 5, 1, 0, 3, 255), 8);
  memset(big + 8, 'x', 255);
  big[8 + 255] = 0;
  big[8 + 256] = 80;
  r = expect_done(&d, 0, big, 8 + 255 + 2, R5_OK_METHOD0, 2);
  ck_assert_uint_eq(strlen(r->address), 255);
}
END_TEST

START_TEST(test_socks5_userpass)
{
  static drive_t d;
  /* RFC 1928 method 2 then RFC 1929: VER 1 ULEN UNAME PLEN PASSWD. */
  static const uint8_t req[] = {5, 2, 0, 2,                    /* methods */
                                1, 4, 'u', 's', 'e', 'r',      /* auth */
                                4, 'p', 'a', 's', 's',         /*  */
                                5, 1, 0, 1, 192, 0, 2, 1, 1, 187};
  const socks_request_t *r =
      expect_done(&d, 0, req, sizeof(req), BL(5, 2, 1, 0));
  ck_assert_int_eq(d.n_replies, 2);
  ck_assert_int_eq(r->auth, SOCKS_AUTH_USERPASS);
  ck_assert_uint_eq(r->username_len, 4);
  ck_assert_str_eq((const char *)r->username, "user");
  ck_assert_uint_eq(r->password_len, 4);
  ck_assert_str_eq((const char *)r->password, "pass");
  ck_assert_str_eq(r->address, "192.0.2.1");
  ck_assert_uint_eq(r->port, 443);

  /* curl --socks5-hostname --proxy-user u:p http://example.org:81/ */
  r = expect_done(&d, 0,
                  BL(0x05, 0x03, 0x00, 0x01, 0x02, 0x01, 0x01, 0x75, 0x01,
                     0x70, 0x05, 0x01, 0x00, 0x03, 0x0b, 0x65, 0x78, 0x61,
                     0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x6f, 0x72, 0x67, 0x00,
                     0x51),
                  BL(5, 2, 1, 0));
  ck_assert_str_eq((const char *)r->username, "u");
  ck_assert_str_eq((const char *)r->password, "p");
  ck_assert_str_eq(r->address, "example.org");
  ck_assert_uint_eq(r->port, 81);

  /* curl -x socks5h://alice:s3cret@... http://[2001:db8::1]:8000/ */
  r = expect_done(&d, 0,
                  BL(0x05, 0x03, 0x00, 0x01, 0x02, 0x01, 0x05, 0x61, 0x6c,
                     0x69, 0x63, 0x65, 0x06, 0x73, 0x33, 0x63, 0x72, 0x65,
                     0x74, 0x05, 0x01, 0x00, 0x04, 0x20, 0x01, 0x0d, 0xb8,
                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                     0x00, 0x00, 0x01, 0x1f, 0x40),
                  BL(5, 2, 1, 0));
  ck_assert_str_eq((const char *)r->username, "alice");
  ck_assert_str_eq((const char *)r->password, "s3cret");
  ck_assert_str_eq(r->address, "2001:db8::1");
  ck_assert_uint_eq(r->port, 8000);

  /* Empty username and password are allowed (as tor does). */
  r = expect_done(&d, 0, BL(5, 1, 2, 1, 0, 0, 5, 1, 0, 3, 1, 'a', 0, 80),
                  BL(5, 2, 1, 0));
  ck_assert_int_eq(r->auth, SOCKS_AUTH_USERPASS);
  ck_assert_uint_eq(r->username_len, 0);
  ck_assert_uint_eq(r->password_len, 0);

  /* Credentials are bytes: NULs inside and 255-byte fields are kept. */
  static uint8_t big[5 + 255 + 1 + 255 + 10];
  size_t n = 0;
  memcpy(big, B(5, 1, 2, 1, 255), 5);
  n = 5;
  memset(big + n, 0, 255);
  big[n + 1] = 'x';
  n += 255;
  big[n++] = 255;
  memset(big + n, 0xff, 255);
  n += 255;
  memcpy(big + n, B(5, 1, 0, 1, 1, 2, 3, 4, 0, 1), 10);
  n += 10;
  r = expect_done(&d, 0, big, n, BL(5, 2, 1, 0));
  ck_assert_uint_eq(r->username_len, 255);
  ck_assert_uint_eq(r->password_len, 255);
  ck_assert_int_eq(r->username[1], 'x');
  ck_assert_int_eq(r->password[254], 0xff);
  ck_assert_int_eq(r->password[255], 0);
}
END_TEST

START_TEST(test_socks5_method_choice)
{
  static drive_t d;
  /* 2 is chosen when offered, whatever the order... */
  expect_done(&d, 0, BL(5, 2, 2, 0, 1, 0, 0, 5, 1, 0, 3, 1, 'a', 0, 80),
              BL(5, 2, 1, 0));
  /* ...unless SOCKS_F_PREFER_NO_AUTH and 0 is offered too. */
  const socks_request_t *r =
      expect_done(&d, SOCKS_F_PREFER_NO_AUTH,
                  BL(5, 2, 2, 0, 5, 1, 0, 3, 1, 'a', 0, 80), BL(5, 0));
  ck_assert_int_eq(r->auth, SOCKS_AUTH_NONE);
  expect_done(&d, SOCKS_F_PREFER_NO_AUTH,
              BL(5, 1, 2, 1, 1, 'u', 1, 'p', 5, 1, 0, 3, 1, 'a', 0, 80),
              BL(5, 2, 1, 0));
  /* Duplicates and unknown methods are harmless. */
  expect_done(&d, 0, BL(5, 4, 0x80, 0, 0xfe, 0, 5, 1, 0, 3, 1, 'a', 0, 80),
              BL(5, 0));
  /* tor's leniency: an RFC 1929 message after method 0 was chosen. */
  r = expect_done(&d, 0,
                  BL(5, 1, 0, 1, 2, 'i', 'd', 0, 5, 1, 0, 3, 1, 'a', 0, 80),
                  BL(5, 0, 1, 0));
  ck_assert_int_eq(r->auth, SOCKS_AUTH_USERPASS);
  ck_assert_str_eq((const char *)r->username, "id");
}
END_TEST

START_TEST(test_socks5_commands)
{
  static drive_t d;
  /* tor's RESOLVE: hostname, port 0 allowed. */
  const socks_request_t *r = expect_done(
      &d, 0, BL(5, 1, 0, 5, 0xF0, 0, 3, 4, 't', 'o', 'r', '.', 0, 0),
      R5_OK_METHOD0, 2);
  ck_assert_int_eq(r->command, SOCKS_CMD_RESOLVE);
  ck_assert_str_eq(r->address, "tor.");
  ck_assert_uint_eq(r->port, 0);
  /* RESOLVE_PTR to an IPv4 address, and to an IP literal as a name. */
  r = expect_done(&d, 0, BL(5, 1, 0, 5, 0xF1, 0, 1, 192, 0, 2, 7, 0, 0),
                  R5_OK_METHOD0, 2);
  ck_assert_int_eq(r->command, SOCKS_CMD_RESOLVE_PTR);
  ck_assert_str_eq(r->address, "192.0.2.7");
  r = expect_done(&d, 0,
                  BL(5, 1, 0, 5, 0xF1, 0, 3, 5, '[', ':', ':', '1', ']', 0,
                     0),
                  R5_OK_METHOD0, 2);
  ck_assert_int_eq(r->addr.family, AF_INET6);
  ck_assert_int_eq(r->addr.addr[15], 1);
  /* RESOLVE_PTR to a real hostname: address type not supported. */
  expect_fail(BL(5, 1, 0, 5, 0xF1, 0, 3, 1, 'a', 0, 0), 0,
              SOCKS_ERR_ADDR_TYPE, BL(5, 0, R5ERR(8)));
  /* BIND, UDP ASSOCIATE, unknown: command not supported (REP 7), seen
   * as soon as the CMD byte arrives. */
  expect_fail(BL(5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80), 0,
              SOCKS_ERR_COMMAND, BL(5, 0, R5ERR(7)));
  expect_fail(BL(5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0), 0,
              SOCKS_ERR_COMMAND, BL(5, 0, R5ERR(7)));
  expect_fail(BL(5, 1, 0, 5, 9), 0, SOCKS_ERR_COMMAND, BL(5, 0, R5ERR(7)));
  expect_fail(BL(5, 1, 0, 5, 0), 0, SOCKS_ERR_COMMAND, BL(5, 0, R5ERR(7)));
  /* Unknown address types: REP 8. */
  expect_fail(BL(5, 1, 0, 5, 1, 0, 2, 1, 2, 3, 4, 0, 80), 0,
              SOCKS_ERR_ADDR_TYPE, BL(5, 0, R5ERR(8)));
  expect_fail(BL(5, 1, 0, 5, 1, 0, 0), 0, SOCKS_ERR_ADDR_TYPE,
              BL(5, 0, R5ERR(8)));
  expect_fail(BL(5, 1, 0, 5, 1, 0, 0xff), 0, SOCKS_ERR_ADDR_TYPE,
              BL(5, 0, R5ERR(8)));
}
END_TEST

START_TEST(test_socks5_malformed)
{
  /* Zero methods; no acceptable method (GSSAPI only). */
  expect_fail(BL(5, 0), 0, SOCKS_ERR_NO_METHODS, BL(5, 0xff));
  expect_fail(BL(5, 1, 1), 0, SOCKS_ERR_NO_ACCEPTABLE_METHOD, BL(5, 0xff));
  expect_fail(BL(5, 3, 1, 3, 0x80), 0, SOCKS_ERR_NO_ACCEPTABLE_METHOD,
              BL(5, 0xff));
  /* Method 2 chosen, but the client goes straight to the request. */
  expect_fail(BL(5, 1, 2, 5, 1, 0, 1, 1, 2, 3, 4, 0, 80), 0, SOCKS_ERR_AUTH,
              BL(5, 2, 1, 1));
  expect_fail(BL(5, 1, 2, 0), 0, SOCKS_ERR_AUTH, BL(5, 2, 1, 1));
  /* A second auth message, or a request with the wrong version. */
  expect_fail(BL(5, 1, 2, 1, 0, 0, 1, 0, 0), 0, SOCKS_ERR_VERSION,
              BL(5, 2, 1, 0, R5ERR(1)));
  expect_fail(BL(5, 1, 0, 4, 1, 0, 80, 1, 2, 3, 4, 0), 0, SOCKS_ERR_VERSION,
              BL(5, 0, R5ERR(1)));
  /* Reserved byte not 0. */
  expect_fail(BL(5, 1, 0, 5, 1, 1, 1, 1, 2, 3, 4, 0, 80), 0,
              SOCKS_ERR_MALFORMED, BL(5, 0, R5ERR(1)));
  /* Hostname of length 0; invalid hostnames; a NUL inside. */
  expect_fail(BL(5, 1, 0, 5, 1, 0, 3, 0, 0, 80), 0, SOCKS_ERR_ADDRESS,
              BL(5, 0, R5ERR(1)));
  expect_fail(BL(5, 1, 0, 5, 1, 0, 3, 3, 'a', '/', 'b', 0, 80), 0,
              SOCKS_ERR_ADDRESS, BL(5, 0, R5ERR(1)));
  expect_fail(BL(5, 1, 0, 5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80), 0,
              SOCKS_ERR_ADDRESS, BL(5, 0, R5ERR(1)));
  expect_fail(BL(5, 1, 0, 5, 1, 0, 3, 2, '.', '.', 0, 80), 0,
              SOCKS_ERR_ADDRESS, BL(5, 0, R5ERR(1)));
  /* CONNECT to port 0. */
  expect_fail(BL(5, 1, 0, 5, 1, 0, 1, 1, 2, 3, 4, 0, 0), 0,
              SOCKS_ERR_MALFORMED, BL(5, 0, R5ERR(1)));
}
END_TEST

START_TEST(test_bad_version_and_http)
{
  /* Not SOCKS: nothing to send. */
  expect_fail(BL(6, 1, 0), 0, SOCKS_ERR_VERSION, NULL, 0);
  expect_fail(BL(0), 0, SOCKS_ERR_VERSION, NULL, 0);
  expect_fail(BL(1, 1, 0), 0, SOCKS_ERR_VERSION, NULL, 0);
  expect_fail(BL(0x16, 3, 1), 0, SOCKS_ERR_VERSION, NULL, 0); /* TLS */

  static const char *http[] = {
      "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
      "POST /x HTTP/1.0\r\n\r\n",
      "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
      "HEAD / HTTP/1.0\r\n\r\n",
      "PUT / HTTP/1.0\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++) {
    static drive_t d;
    drive_all(&d, 0, (const uint8_t *)http[i], strlen(http[i]));
    ck_assert_int_eq(d.st, SOCKS_FAILED);
    ck_assert_int_eq(socks_parser_error(&d.p), SOCKS_ERR_HTTP);
    ck_assert_uint_eq(d.used, 1); /* decided on the first byte */
    d.out[d.outlen] = 0;
    const char *resp = (const char *)d.out;
    ck_assert(!strncmp(resp, "HTTP/1.0 501 ", 13));
    ck_assert_ptr_nonnull(strstr(resp, "This is a SOCKS proxy, not an HTTP "
                                       "proxy"));
    const char *body = strstr(resp, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    body += 4;
    const char *cl = strstr(resp, "Content-Length: ");
    ck_assert_ptr_nonnull(cl);
    ck_assert_int_eq(atoi(cl + 16), (int)strlen(body));
  }
}
END_TEST

START_TEST(test_truncated)
{
  /* Every proper prefix of a handshake needs more and eats everything;
   * any negotiation replies that were due have been given. */
  static const uint8_t v5[] = {5, 2, 0, 2, 1, 1, 'u', 1, 'p', 5, 1, 0, 3,
                               3, 'a', '.', 'b', 0, 80};
  static const uint8_t v4a[] = {4, 1, 0, 80, 0, 0, 0, 9, 'i', 'd', 0, 'a',
                                '.', 'b', 0};
  static const struct {
    const uint8_t *m;
    size_t n;
  } v[] = {{v5, sizeof(v5)}, {v4a, sizeof(v4a)}};
  for (size_t i = 0; i < 2; i++) {
    for (size_t k = 0; k < v[i].n; k++) {
      static drive_t d;
      drive(&d, 0, v[i].m, k, 1);
      ck_assert_int_eq(d.st, SOCKS_NEED_MORE);
      ck_assert_uint_eq(d.used, k);
      ck_assert_ptr_null(socks_parser_request(&d.p));
      if (i == 0)
        ck_assert_uint_eq(d.outlen, k >= 9 ? 4 : k >= 4 ? 2 : 0);
    }
  }
}
END_TEST

START_TEST(test_after_request)
{
  static drive_t d;
  /* Bytes after the request are not consumed: they are optimistic data
   * for the stream (or garbage the stream will carry), never part of the
   * handshake. */
  static const uint8_t v5[] = {5, 1, 0, 5, 1, 0, 3, 1, 'a', 0, 80,
                               'G', 'E', 'T', ' ', '/', 5, 1, 0};
  drive(&d, 0, v5, sizeof(v5), 0);
  ck_assert_int_eq(d.st, SOCKS_DONE);
  ck_assert_uint_eq(d.used, 11);
  drive(&d, 0, v5, sizeof(v5), 1);
  ck_assert_int_eq(d.st, SOCKS_DONE);
  ck_assert_uint_eq(d.used, 11);
  static const uint8_t v4[] = {4, 1, 0, 80, 1, 2, 3, 4, 0, 0xde, 0xad, 0};
  drive(&d, 0, v4, sizeof(v4), 0);
  ck_assert_int_eq(d.st, SOCKS_DONE);
  ck_assert_uint_eq(d.used, 9);
  /* A finished parser takes nothing more and says so again. */
  size_t c = 5, rl = 5;
  ck_assert_int_eq(socks_parser_feed(&d.p, v4 + 9, 3, &c), SOCKS_DONE);
  ck_assert_uint_eq(c, 0);
  socks_parser_reply(&d.p, &rl);
  ck_assert_uint_eq(rl, 0);
  ck_assert_ptr_nonnull(socks_parser_request(&d.p));
  ck_assert_str_eq(socks_parser_request(&d.p)->address, "1.2.3.4");
  /* Pipelined: methods + request in one read: the first call stops at
   * the end of the method selection message. */
  socks_parser_t p;
  socks_parser_init(&p, 0);
  ck_assert_int_eq(socks_parser_feed(&p, v5, sizeof(v5), &c),
                   SOCKS_SEND_REPLY);
  ck_assert_uint_eq(c, 3);
  ck_assert_int_eq(socks_parser_feed(&p, v5 + 3, sizeof(v5) - 3, &c),
                   SOCKS_DONE);
  ck_assert_uint_eq(c, 8);
  /* Feeding nothing is harmless. */
  socks_parser_init(&p, 0);
  ck_assert_int_eq(socks_parser_feed(&p, NULL, 0, &c), SOCKS_NEED_MORE);
  ck_assert_uint_eq(c, 0);
  socks_parser_wipe(&p);
  ck_assert(p.req.username[0] == 0 && p.state == 0);
}
END_TEST

START_TEST(test_hostname_valid)
{
  static const char *good[] = {
      "example.com", "example.com.", "a", "A-b.C_d", "xn--bcher-kva.example",
      "under_score.example", "1.2.3.4", "::1", "[::1]", "2001:db8::ff",
      "[2001:db8::1]", "abcdefghijklmnop.onion", "1a", "a-", "1.2.3",
  };
  static const char *bad[] = {
      ".", "..", "a..b", ".a", "-a.com", "_a.com", "a.-b", "a b", "a\x01",
      "ex%ample", "[example.com]", "a.com..", "a/b", "a:b", "[1.2.3.4]",
      "\xc3\xa9.fr", "a\tb", "[::1", "a.com\r\n",
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
    ck_assert_msg(socks_hostname_is_valid(good[i], strlen(good[i])), "%s",
                  good[i]);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(!socks_hostname_is_valid(bad[i], strlen(bad[i])), "%s",
                  bad[i]);
  ck_assert(!socks_hostname_is_valid("", 0));
  ck_assert(!socks_hostname_is_valid("a\0b", 3));
  char big[300];
  memset(big, 'a', sizeof(big));
  ck_assert(socks_hostname_is_valid(big, 255));
  ck_assert(!socks_hostname_is_valid(big, 256));
}
END_TEST

/* ---- encoders ---- */

START_TEST(test_encode_socks5)
{
  uint8_t out[SOCKS5_REPLY_MAX];
  /* IPv4 bound address. */
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0, SOCKS_ATYP_IPV4,
                                       B(127, 0, 0, 1), 4, 9050),
                   10);
  ck_assert(!memcmp(out, B(5, 0, 0, 1, 127, 0, 0, 1, 0x23, 0x5a), 10));
  /* IPv6 (a RESOLVE answer). */
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse(&a, "[2001:db8::2]:443"), 0);
  ck_assert_int_eq(socks5_reply_encode_addr(out, sizeof(out), 0, &a), 22);
  ck_assert(!memcmp(out,
                    B(5, 0, 0, 4, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0,
                      0, 0, 0, 0, 2, 0x01, 0xbb),
                    22));
  ck_assert_int_eq(pc_addr_parse(&a, "10.1.2.3:80"), 0);
  ck_assert_int_eq(socks5_reply_encode_addr(out, sizeof(out), 4, &a), 10);
  ck_assert(!memcmp(out, B(5, 4, 0, 1, 10, 1, 2, 3, 0, 80), 10));
  /* No bound address: 0.0.0.0:0. */
  ck_assert_int_eq(socks5_reply_encode_addr(out, sizeof(out), 5, NULL), 10);
  ck_assert(!memcmp(out, B(R5ERR(5)), 10));
  memset(&a, 0, sizeof(a));
  ck_assert_int_eq(socks5_reply_encode_addr(out, sizeof(out), 1, &a), 10);
  ck_assert(!memcmp(out, B(R5ERR(1)), 10));
  /* Hostname (a RESOLVE_PTR answer). */
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0,
                                       SOCKS_ATYP_HOSTNAME,
                                       (const uint8_t *)"ex.org", 6, 0),
                   13);
  ck_assert(!memcmp(out, B(5, 0, 0, 3, 6, 'e', 'x', '.', 'o', 'r', 'g', 0, 0),
                    13));
  uint8_t name[255];
  memset(name, 'n', sizeof(name));
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0,
                                       SOCKS_ATYP_HOSTNAME, name, 255, 1),
                   SOCKS5_REPLY_MAX);
  ck_assert_int_eq(out[4], 255);
  /* Invalid arguments and short buffers. */
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0,
                                       SOCKS_ATYP_HOSTNAME, name, 0, 1),
                   -1);
  ck_assert_int_eq(socks5_reply_encode(out, 300, 0, SOCKS_ATYP_HOSTNAME,
                                       name, 256, 1),
                   -1);
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0, SOCKS_ATYP_IPV4,
                                       name, 16, 1),
                   -1);
  ck_assert_int_eq(socks5_reply_encode(out, sizeof(out), 0, 2, name, 4, 1),
                   -1);
  ck_assert_int_eq(socks5_reply_encode(out, 9, 0, SOCKS_ATYP_IPV4, name, 4,
                                       1),
                   -1);
  ck_assert_int_eq(socks5_reply_encode(out, 21, 0, SOCKS_ATYP_IPV6, name,
                                       16, 1),
                   -1);
}
END_TEST

START_TEST(test_encode_socks4)
{
  uint8_t out[8];
  ck_assert_int_eq(socks4_reply_encode(out, 8, SOCKS4_GRANTED, 0x42660763,
                                       80),
                   8);
  ck_assert(!memcmp(out, B(0, 0x5a, 0, 80, 0x42, 0x66, 0x07, 0x63), 8));
  ck_assert_int_eq(socks4_reply_encode(out, 8, SOCKS4_REJECTED, 0, 0), 8);
  ck_assert(!memcmp(out, B(R4REJ), 8));
  ck_assert_int_eq(socks4_reply_encode(out, 7, SOCKS4_GRANTED, 0, 0), -1);
}
END_TEST

START_TEST(test_end_reason_map)
{
  /* tor-spec 6.3 reasons, mapped as tor does. */
  static const uint8_t want[15] = {
      [0] = 0,  /* no error */
      [1] = 1,  /* MISC */
      [2] = 4,  /* RESOLVEFAILED -> host unreachable */
      [3] = 5,  /* CONNECTREFUSED -> connection refused */
      [4] = 2,  /* EXITPOLICY -> not allowed */
      [5] = 1,  /* DESTROY */
      [6] = 5,  /* DONE before CONNECTED -> connection refused */
      [7] = 6,  /* TIMEOUT -> TTL expired */
      [8] = 4,  /* NOROUTE -> host unreachable */
      [9] = 1,  /* HIBERNATING */
      [10] = 1, /* INTERNAL */
      [11] = 1, /* RESOURCELIMIT */
      [12] = 5, /* CONNRESET -> connection refused */
      [13] = 1, /* TORPROTOCOL */
      [14] = 1, /* NOTDIRECTORY */
  };
  for (int r = 0; r < 256; r++) {
    uint8_t w = r < 15 ? want[r] : SOCKS5_GENERAL_FAILURE;
    ck_assert_msg(socks5_rep_from_end_reason((uint8_t)r) == w,
                  "reason %d -> %d, want %d", r,
                  socks5_rep_from_end_reason((uint8_t)r), w);
    uint8_t out[16];
    ck_assert_int_eq(socks_reply_encode_end_reason(out, sizeof(out), 5,
                                                   (uint8_t)r),
                     10);
    ck_assert(!memcmp(out, B(R5ERR(w)), 10));
    ck_assert_int_eq(socks_reply_encode_end_reason(out, sizeof(out), 4,
                                                   (uint8_t)r),
                     8);
    ck_assert_int_eq(out[1], r ? SOCKS4_REJECTED : SOCKS4_GRANTED);
    ck_assert(!memcmp(out + 2, B(0, 0, 0, 0, 0, 0), 6));
  }
  uint8_t out[16];
  ck_assert_int_eq(socks_reply_encode_end_reason(out, sizeof(out), 3, 1),
                   -1);
  ck_assert_int_eq(socks_reply_encode_end_reason(out, 9, 5, 1), -1);
  ck_assert_str_eq(socks5_rep_str(5), "connection refused");
  ck_assert_str_eq(socks5_rep_str(0), "succeeded");
  ck_assert_str_eq(socks5_rep_str(8), "address type not supported");
  ck_assert_str_eq(socks5_rep_str(0x42), "unknown reply code");
}
END_TEST

START_TEST(test_auth_eq)
{
  static drive_t a, b;
  /* SOCKS4 user id "Fred" and SOCKS5 "Fred" with no password isolate
   * together (tor compares the username/password bytes only). */
  drive(&a, 0, BL(4, 1, 0, 80, 1, 2, 3, 4, 'F', 'r', 'e', 'd', 0), 0);
  drive(&b, 0,
        BL(5, 1, 2, 1, 4, 'F', 'r', 'e', 'd', 0, 5, 1, 0, 1, 1, 2, 3, 4, 0,
           80),
        0);
  ck_assert_int_eq(a.st, SOCKS_DONE);
  ck_assert_int_eq(b.st, SOCKS_DONE);
  ck_assert(socks_request_auth_eq(socks_parser_request(&a.p),
                                  socks_parser_request(&b.p)));
  drive(&b, 0,
        BL(5, 1, 2, 1, 4, 'F', 'r', 'e', 'd', 1, 'x', 5, 1, 0, 1, 1, 2, 3, 4,
           0, 80),
        0);
  ck_assert(!socks_request_auth_eq(socks_parser_request(&a.p),
                                   socks_parser_request(&b.p)));
  drive(&b, 0,
        BL(5, 1, 2, 1, 4, 'F', 'r', 'e', 'e', 0, 5, 1, 0, 1, 1, 2, 3, 4, 0,
           80),
        0);
  ck_assert(!socks_request_auth_eq(socks_parser_request(&a.p),
                                   socks_parser_request(&b.p)));
  /* No credentials at all: equal to each other. */
  drive(&a, 0, BL(4, 1, 0, 80, 1, 2, 3, 4, 0), 0);
  drive(&b, 0, BL(5, 1, 0, 5, 1, 0, 1, 1, 2, 3, 4, 0, 80), 0);
  ck_assert(socks_request_auth_eq(socks_parser_request(&a.p),
                                  socks_parser_request(&b.p)));
}
END_TEST

Suite *
suite_socks(void)
{
  Suite *s = suite_create("socks");
  TCase *tc = tcase_create("socks");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_socks4_connect);
  tcase_add_test(tc, test_socks4a);
  tcase_add_test(tc, test_socks4_limits);
  tcase_add_test(tc, test_socks4_malformed);
  tcase_add_test(tc, test_socks5_noauth);
  tcase_add_test(tc, test_socks5_userpass);
  tcase_add_test(tc, test_socks5_method_choice);
  tcase_add_test(tc, test_socks5_commands);
  tcase_add_test(tc, test_socks5_malformed);
  tcase_add_test(tc, test_bad_version_and_http);
  tcase_add_test(tc, test_truncated);
  tcase_add_test(tc, test_after_request);
  tcase_add_test(tc, test_hostname_valid);
  tcase_add_test(tc, test_encode_socks5);
  tcase_add_test(tc, test_encode_socks4);
  tcase_add_test(tc, test_end_reason_map);
  tcase_add_test(tc, test_auth_eq);
  suite_add_tcase(s, tc);
  return s;
}
