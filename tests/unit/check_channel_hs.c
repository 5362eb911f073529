/* SPDX-License-Identifier: BSD-3-Clause */
/* check_channel_hs.c -- the order rules of the link handshake
 * (core/or/channel_hs.c behind channel.c's framing), on channels of a
 * relay over a plain socketpair (channel_new_handshaking_plain_for_testing,
 * the same harness as tests/fuzz/fuzz_linkhs.c) fed the peer's bytes.
 *
 * The responder answers a VERSIONS cell with VERSIONS (2-byte circuit
 * IDs), CERTS, AUTH_CHALLENGE and NETINFO, in that order; an
 * unauthenticated client that sends NETINFO next is open (link protocol
 * 5, not a relay), also when its bytes come one at a time; cells out of
 * order (NETINFO before VERSIONS, AUTHENTICATE before CERTS, a non-
 * handshake cell before NETINFO) close the channel. The initiator writes
 * VERSIONS at once, and closes on a NETINFO or AUTH_CHALLENGE that comes
 * before the responder's CERTS. A VERSIONS cell on an open channel is
 * ignored. The relay's keys are made in memory (fixture_core.h), so the
 * suite runs in check_core, without feature/relay.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture_core.h"

#include "core/or/channel.h"
#include "lib/buf/buf.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"

Suite *suite_channel_hs(void);

static struct {
  relay_keys_t *keys;
  evloop_t *loop;
  int sv[2];
  channel_t *chan;
} T;

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  T.keys = fixture_core_keys_new(time(NULL));
  T.loop = evloop_new();
  channels_init(T.loop, T.keys);
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, T.sv), 0);
}

static void
teardown(void)
{
  channels_shutdown();
  close(T.sv[1]);
  evloop_free(T.loop);
  fixture_core_keys_free(T.keys);
}

static void
start(int outgoing)
{
  T.chan = channel_new_handshaking_plain_for_testing(T.sv[0], outgoing);
  ck_assert_ptr_nonnull(T.chan);
  ck_assert_int_eq(channel_state(T.chan), CHAN_STATE_HANDSHAKING);
}

/* The peer's cells (tor-spec 3): link protocol 3 framing for VERSIONS,
 * 4-byte circuit IDs after. */
static size_t
put_var(uint8_t *p, uint8_t cmd, const uint8_t *body, uint16_t len,
        int short_id)
{
  size_t id = short_id ? 2 : 4;
  memset(p, 0, id);
  p[id] = cmd;
  set_u16(p + id + 1, len);
  memcpy(p + id + 3, body, len);
  return id + 3 + len;
}

static size_t
put_fixed(uint8_t *p, uint8_t cmd, const uint8_t *body, size_t len)
{
  memset(p, 0, 514);
  p[4] = cmd;
  memcpy(p + 5, body, len);
  return 514;
}

static const uint8_t versions_body[] = {0, 3, 0, 4, 0, 5};
/* NETINFO: time 0, other address 127.0.0.1, no addresses of its own. */
static const uint8_t netinfo_body[] = {0, 0, 0, 0, 4, 4, 127, 0, 0, 1, 0};

static int
feed(const uint8_t *p, size_t len)
{
  return channel_feed_for_testing(T.chan, p, len);
}

START_TEST(test_responder_client_opens)
{
  start(0);
  uint8_t in[1024];
  size_t n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  ck_assert_int_eq(feed(in, n), 0);
  /* Our greeting: VERSIONS (2-byte ID), CERTS, AUTH_CHALLENGE, NETINFO. */
  buf_t *out = channel_outbuf_for_testing(T.chan);
  size_t olen = buf_datalen(out);
  ck_assert_uint_gt(olen, 5 + 4 + 514);
  uint8_t *g = malloc(olen);
  buf_peek(out, g, olen);
  ck_assert_uint_eq(g[2], 7); /* VERSIONS */
  size_t off = 5 + get_u16(g + 3);
  static const uint8_t want[] = {129, 130}; /* CERTS, AUTH_CHALLENGE */
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_le(off + 7, olen);
    ck_assert_uint_eq(g[off + 4], want[i]);
    off += 7 + get_u16(g + off + 5);
  }
  ck_assert_uint_eq(off + 514, olen);
  ck_assert_uint_eq(g[off + 4], 8); /* NETINFO */
  free(g);
  ck_assert_int_eq(channel_state(T.chan), CHAN_STATE_HANDSHAKING);
  n = put_fixed(in, 8, netinfo_body, sizeof(netinfo_body));
  ck_assert_int_eq(feed(in, n), 0);
  ck_assert(channel_is_open(T.chan));
  ck_assert(!channel_is_authenticated_relay(T.chan));
  /* A VERSIONS cell on the open channel is ignored. */
  n = put_var(in, 7, versions_body, sizeof(versions_body), 0);
  ck_assert_int_eq(feed(in, n), 0);
  ck_assert(channel_is_open(T.chan));
}
END_TEST

START_TEST(test_responder_bytes_one_at_a_time)
{
  start(0);
  uint8_t in[1024];
  size_t n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  n += put_var(in + n, 128, (const uint8_t *)"pad", 3, 0); /* VPADDING */
  n += put_fixed(in + n, 8, netinfo_body, sizeof(netinfo_body));
  for (size_t i = 0; i < n; i++) {
    ck_assert(!channel_is_open(T.chan));
    ck_assert_int_eq(feed(in + i, 1), 0);
  }
  ck_assert(channel_is_open(T.chan));
}
END_TEST

START_TEST(test_responder_out_of_order)
{
  uint8_t in[1024];
  size_t n;
  /* NETINFO before VERSIONS. */
  start(0);
  n = put_fixed(in, 8, netinfo_body, sizeof(netinfo_body));
  ck_assert_int_eq(feed(in, n), -1);
  ck_assert(channel_is_closing(T.chan));
  /* AUTHENTICATE before CERTS. */
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  channel_t *c = channel_new_handshaking_plain_for_testing(sv[0], 0);
  n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  uint8_t auth[4 + 352] = {0, 3, 1, 96};
  n += put_var(in + n, 131, auth, sizeof(auth), 0);
  ck_assert_int_eq(channel_feed_for_testing(c, in, n), -1);
  ck_assert(channel_is_closing(c));
  close(sv[1]);
  /* A CREATE_FAST before NETINFO. */
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  c = channel_new_handshaking_plain_for_testing(sv[0], 0);
  n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  n += put_fixed(in + n, 5, (const uint8_t *)"01234567890123456789", 20);
  ck_assert_int_eq(channel_feed_for_testing(c, in, n), -1);
  ck_assert(channel_is_closing(c));
  close(sv[1]);
}
END_TEST

START_TEST(test_initiator_order)
{
  start(1);
  /* Our VERSIONS went out at once. */
  buf_t *out = channel_outbuf_for_testing(T.chan);
  ck_assert_uint_eq(buf_datalen(out), 5 + 4);
  uint8_t in[1024];
  size_t n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  ck_assert_int_eq(feed(in, n), 0);
  /* NETINFO before CERTS and AUTH_CHALLENGE. */
  n = put_fixed(in, 8, netinfo_body, sizeof(netinfo_body));
  ck_assert_int_eq(feed(in, n), -1);
  ck_assert(channel_is_closing(T.chan));
  /* AUTH_CHALLENGE before CERTS. */
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  channel_t *c = channel_new_handshaking_plain_for_testing(sv[0], 1);
  n = put_var(in, 7, versions_body, sizeof(versions_body), 1);
  uint8_t ac[32 + 4] = {0};
  ac[33] = 1;
  ac[35] = 3;
  n += put_var(in + n, 130, ac, sizeof(ac), 0);
  ck_assert_int_eq(channel_feed_for_testing(c, in, n), -1);
  ck_assert(channel_is_closing(c));
  close(sv[1]);
}
END_TEST

Suite *
suite_channel_hs(void)
{
  Suite *s = suite_create("channel_hs");
  TCase *tc = tcase_create("order");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_responder_client_opens);
  tcase_add_test(tc, test_responder_bytes_one_at_a_time);
  tcase_add_test(tc, test_responder_out_of_order);
  tcase_add_test(tc, test_initiator_order);
  suite_add_tcase(s, tc);
  return s;
}
