/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dgram.c -- unit tests for feature/dgram: frame packing and parsing
 * (every refusal delivers nothing), the transport choice, and two link
 * layers on 127.0.0.1 in one event loop, each with its own relay keys:
 * authenticated links, records both ways, a wrong expected identity
 * refused, and garbage or cookie-less ClientHellos leaving no state. */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture_dgram.h"
#include "fixture_relay.h"

#include "feature/dgram/dgram.h"
#include "lib/utcp/utcp.h"
#include "feature/dgram/dgram_frame.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/net/ratelimit.h"
#include "lib/time/clock.h"
#include "lib/tls/dtls.h"

Suite *suite_dgram(void);

/* ---- frames ---- */

typedef struct {
  unsigned n;
  uint8_t types[64];
  size_t lens[64];
} seen_t;

static void
collect(void *arg, uint8_t type, const uint8_t *body, size_t len)
{
  seen_t *s = arg;
  (void)body;
  if (s->n < 64) {
    s->types[s->n] = type;
    s->lens[s->n] = len;
  }
  s->n++;
}

START_TEST(test_frame_roundtrip)
{
  dgram_frame_t f;
  uint8_t cell[514];
  memset(cell, 0xab, sizeof(cell));
  dgram_frame_init(&f, DGRAM_FRAME_MAX);
  ck_assert(dgram_frame_is_empty(&f));
  ck_assert_int_eq(dgram_frame_add(&f, DGRAM_REC_CELL, cell, 514), 0);
  ck_assert_int_eq(dgram_frame_add(&f, DGRAM_REC_CELL, cell, 514), 0);
  ck_assert_int_eq(dgram_frame_add(&f, 0x21, cell, 8), 0);
  ck_assert_int_eq(dgram_frame_add(&f, DGRAM_REC_PAD, NULL, 0), 0);
  /* two cells and a feedback message: 1 + 2*517 + 11 + 3 bytes */
  ck_assert_uint_eq(f.len, 1 + 2 * 517 + 11 + 3);
  /* a third cell does not fit this frame, but would fit an empty one */
  ck_assert_int_eq(dgram_frame_add(&f, DGRAM_REC_CELL, cell, 514), -1);
  ck_assert_uint_lt(dgram_frame_room(&f), 514);
  seen_t s;
  memset(&s, 0, sizeof(s));
  unsigned n = 0;
  ck_assert_int_eq(dgram_frame_parse(f.buf, f.len, collect, &s, &n),
                   DGRAM_FRAME_OK);
  ck_assert_uint_eq(n, 3); /* PAD is not delivered */
  ck_assert_uint_eq(s.types[0], DGRAM_REC_CELL);
  ck_assert_uint_eq(s.lens[1], 514);
  ck_assert_uint_eq(s.types[2], 0x21);
  ck_assert_uint_eq(s.lens[2], 8);
  /* too big ever */
  dgram_frame_init(&f, DGRAM_FRAME_MAX);
  uint8_t big[DGRAM_FRAME_MAX];
  memset(big, 0, sizeof(big));
  ck_assert_int_eq(dgram_frame_add(&f, 0x30, big, DGRAM_REC_BODY_MAX + 1),
                   -2);
  ck_assert_int_eq(dgram_frame_add(&f, 0x30, big, DGRAM_REC_BODY_MAX), 0);
  ck_assert_uint_eq(f.len, DGRAM_FRAME_MAX);
  ck_assert_uint_eq(dgram_frame_room(&f), 0);
  /* BackTap's mix: two 519-byte CELL records and six 13-byte FEEDBACK
   * records share one frame */
  dgram_frame_init(&f, DGRAM_FRAME_MAX);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(dgram_frame_add(&f, DGRAM_REC_BACKTAP_CELL, big, 519),
                     0);
  for (int i = 0; i < 6; i++)
    ck_assert_int_eq(
        dgram_frame_add(&f, DGRAM_REC_BACKTAP_FEEDBACK, big, 13), 0);
  ck_assert_uint_eq(f.len, 1141);
  /* a smaller limit (the link's MTU) is honoured */
  dgram_frame_init(&f, 100);
  ck_assert_int_eq(dgram_frame_add(&f, 0x30, big, 97), -2);
  ck_assert_int_eq(dgram_frame_add(&f, 0x30, big, 96), 0);
}
END_TEST

START_TEST(test_frame_bad_input)
{
  seen_t s;
  uint8_t d[DGRAM_FRAME_MAX + 8];
  memset(&s, 0, sizeof(s));
  memset(d, 0, sizeof(d));
  ck_assert_int_eq(dgram_frame_parse(d, 0, collect, &s, NULL),
                   DGRAM_FRAME_EMPTY);
  /* version 2 */
  d[0] = 2;
  ck_assert_int_eq(dgram_frame_parse(d, 1, collect, &s, NULL),
                   DGRAM_FRAME_BAD_VERSION);
  /* a good record, then one whose length runs past the end: nothing is
   * delivered, not even the first */
  d[0] = 1;
  d[1] = 0x20;
  d[2] = 0;
  d[3] = 2;
  d[4] = d[5] = 7;
  d[6] = 0x21;
  d[7] = 0;
  d[8] = 5;
  d[9] = 1;
  ck_assert_int_eq(dgram_frame_parse(d, 10, collect, &s, NULL),
                   DGRAM_FRAME_TRUNCATED);
  ck_assert_uint_eq(s.n, 0);
  /* a record header cut short */
  ck_assert_int_eq(dgram_frame_parse(d, 8, collect, &s, NULL),
                   DGRAM_FRAME_TRUNCATED);
  ck_assert_uint_eq(s.n, 0);
  /* exactly the first record: fine */
  unsigned n = 0;
  ck_assert_int_eq(dgram_frame_parse(d, 6, collect, &s, &n), DGRAM_FRAME_OK);
  ck_assert_uint_eq(n, 1);
  /* oversize */
  memset(d, 0, sizeof(d));
  d[0] = 1;
  ck_assert_int_eq(dgram_frame_parse(d, DGRAM_FRAME_MAX + 1, collect, &s,
                                     NULL),
                   DGRAM_FRAME_OVERSIZE);
  /* a version byte alone is an empty, valid frame */
  ck_assert_int_eq(dgram_frame_parse(d, 1, collect, &s, &n), DGRAM_FRAME_OK);
  ck_assert_uint_eq(n, 0);
  /* every 2-3 byte input is refused without reading past it */
  for (unsigned len = 2; len <= 3; len++)
    for (unsigned b = 0; b < 256; b++) {
      uint8_t *p = malloc(len);
      p[0] = 1;
      if (len > 1)
        p[1] = (uint8_t)b;
      if (len > 2)
        p[2] = (uint8_t)b;
      dgram_frame_status_t st = dgram_frame_parse(p, len, collect, &s, &n);
      ck_assert(st == DGRAM_FRAME_TRUNCATED);
      free(p);
    }
}
END_TEST

START_TEST(test_transport_policy)
{
  ck_assert(circuit_transport_is_supported(CIRCUIT_TRANSPORT_TLS));
  ck_assert(circuit_transport_is_supported(CIRCUIT_TRANSPORT_PCTCP));
  ck_assert(circuit_transport_is_supported(CIRCUIT_TRANSPORT_BACKTAP));
  /* dtls-tcp: in a build with lwIP (lib/utcp) */
  ck_assert_int_eq(circuit_transport_is_supported(CIRCUIT_TRANSPORT_DTLS_TCP),
                   utcp_available());
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_DTLS_TCP, 1, 1),
      utcp_available() ? CIRCUIT_TRANSPORT_DTLS_TCP : CIRCUIT_TRANSPORT_TLS);
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_DTLS_TCP, 1, 0),
      CIRCUIT_TRANSPORT_TLS);
  ck_assert_int_eq(circuit_transport_for_peer(CIRCUIT_TRANSPORT_PCTCP, 1, 1),
                   CIRCUIT_TRANSPORT_PCTCP);
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_BACKTAP, 1, 1),
      CIRCUIT_TRANSPORT_BACKTAP);
  /* unsupported or peer without a link: TLS */
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_BACKTAP, 1, 0),
      CIRCUIT_TRANSPORT_TLS);
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_BACKTAP, 0, 0),
      CIRCUIT_TRANSPORT_TLS);
  ck_assert_int_eq(
      circuit_transport_for_peer(CIRCUIT_TRANSPORT_DTLS_TCP, 0, 0),
      CIRCUIT_TRANSPORT_TLS);
  ck_assert_str_eq(circuit_transport_name(CIRCUIT_TRANSPORT_DTLS_TCP),
                   "dtls-tcp");
}
END_TEST

/* ---- links over 127.0.0.1 ---- */

static struct {
  fixture_dgram_pair_t p;
  int up[2], down[2];
  unsigned got[2];
  uint8_t last_body[2][64];
  size_t last_len[2];
} T;

static void
on_link(dgram_link_t *l, int up, const char *why, void *arg)
{
  int i = (int)(intptr_t)arg;
  (void)l;
  (void)why;
  if (up)
    T.up[i]++;
  else
    T.down[i]++;
}

static void
on_record(dgram_link_t *l, uint8_t type, const uint8_t *body, size_t len,
          void *arg)
{
  int i = (int)(intptr_t)arg;
  (void)type;
  T.got[i]++;
  T.last_len[i] = len < 64 ? len : 64;
  memcpy(T.last_body[i], body, T.last_len[i]);
  if (i == 1) /* echo */
    dgram_link_send(l, 0x41, body, len);
}

/* Run the loop until cond holds or 10 s pass. */
#define RUN_UNTIL(cond) FIXTURE_RUN_UNTIL(T.p.loop, T.p.timeout, cond)

static void
link_setup(void)
{
  memset(&T, 0, sizeof(T));
  fixture_dgram_pair_start(&T.p, "dgram", 2, 0);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(dgram_add_link_observer(T.p.fx[i].d, on_link,
                                             (void *)(intptr_t)i),
                     0);
  }
  ck_assert_int_eq(dgram_register_handler(T.p.fx[1].d, 0x40, on_record,
                                          (void *)(intptr_t)1),
                   0);
  ck_assert_int_eq(dgram_register_handler(T.p.fx[0].d, 0x41, on_record,
                                          (void *)(intptr_t)0),
                   0);
}

static void
link_teardown(void)
{
  fixture_dgram_pair_free(&T.p);
}

START_TEST(test_link_up_and_records)
{
  /* link-layer types are not the upper layers' */
  ck_assert_int_eq(dgram_register_handler(T.p.fx[0].d, DGRAM_REC_PING, on_record,
                                          NULL),
                   -1);
  ck_assert_int_eq(dgram_register_handler(T.p.fx[0].d, 0x41, on_record,
                                          (void *)(intptr_t)5),
                   -1);
  dgram_link_t *l = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                                    T.p.fx[1].keys->ed_identity.pub,
                                    T.p.fx[1].keys->rsa_id_digest);
  ck_assert_ptr_nonnull(l);
  ck_assert(!dgram_link_is_up(l));
  ck_assert_int_eq(dgram_link_send(l, 0x40, (const uint8_t *)"x", 1), -1);
  RUN_UNTIL(T.up[0] && T.up[1]);
  ck_assert_int_eq(T.up[0], 1);
  ck_assert_int_eq(T.up[1], 1);
  ck_assert(dgram_link_is_up(l));
  ck_assert_ptr_eq(dgram_link_find(T.p.fx[0].d, T.p.fx[1].keys->ed_identity.pub), l);
  dgram_link_t *r = dgram_link_find(T.p.fx[1].d, T.p.fx[0].keys->ed_identity.pub);
  ck_assert_ptr_nonnull(r);
  ck_assert_mem_eq(dgram_link_peer_ed_id(r), T.p.fx[0].keys->ed_identity.pub,
                   32);
  /* the same identity again: the same link */
  ck_assert_ptr_eq(dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                                   T.p.fx[1].keys->ed_identity.pub, NULL),
                   l);
  /* records: 3 in one datagram, each echoed back */
  ck_assert_uint_ge(dgram_link_max_record(l), 1146);
  uint8_t body[514];
  memset(body, 0x5c, sizeof(body));
  dgram_link_stats_t st0;
  dgram_link_get_stats(l, &st0);
  ck_assert_int_eq(dgram_link_send(l, 0x40, body, 514), 0);
  ck_assert_int_eq(dgram_link_send(l, 0x40, body, 514), 0);
  ck_assert_int_eq(dgram_link_send(l, 0x40, (const uint8_t *)"hello", 5), 0);
  ck_assert_int_eq(dgram_link_send(l, DGRAM_REC_PING, body, 8), -1);
  ck_assert_int_eq(dgram_link_send(l, 0x40, body, 5000), -1);
  /* nobody handles 0x7f at the other end: counted there */
  ck_assert_int_eq(dgram_link_send(l, 0x7f, body, 4), 0);
  RUN_UNTIL(T.got[0] >= 3);
  ck_assert_uint_eq(T.got[1], 3);
  ck_assert_uint_eq(T.got[0], 3);
  ck_assert_uint_eq(T.last_len[0], 5);
  ck_assert_mem_eq(T.last_body[0], "hello", 5);
  dgram_link_stats_t st, rs;
  dgram_link_get_stats(l, &st);
  dgram_link_get_stats(r, &rs);
  /* the four records (1050 bytes) went as one datagram */
  ck_assert_uint_eq(st.dgrams_out - st0.dgrams_out, 1);
  ck_assert_uint_eq(rs.dropped_type, 1);
  ck_assert(st.up && st.initiator && rs.up && !rs.initiator);
  /* closing tells the peer */
  dgram_link_close(l, "test");
  RUN_UNTIL(T.down[1]);
  ck_assert_int_eq(T.down[0], 1);
  ck_assert_int_eq(T.down[1], 1);
  ck_assert_ptr_null(dgram_link_find(T.p.fx[1].d, T.p.fx[0].keys->ed_identity.pub));
  dgram_stats_t ds;
  dgram_get_stats(T.p.fx[1].d, &ds);
  ck_assert_uint_eq(ds.links, 0);
  ck_assert_uint_eq(ds.links_authenticated, 1);
}
END_TEST

START_TEST(test_link_wrong_identity)
{
  /* d0 expects another identity (d1's with a bit flipped) at d1's port;
   * d1 presents its real one and is refused. */
  uint8_t wrong[32];
  memcpy(wrong, T.p.fx[1].keys->ed_identity.pub, 32);
  wrong[0] ^= 1;
  dgram_link_t *l =
      dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d), wrong, NULL);
  ck_assert_ptr_nonnull(l);
  dgram_stats_t s0;
  RUN_UNTIL((dgram_get_stats(T.p.fx[0].d, &s0), s0.auth_failed > 0));
  ck_assert_uint_eq(s0.auth_failed, 1);
  ck_assert_uint_eq(s0.links_authenticated, 0);
  ck_assert_int_eq(T.up[0], 0);
  ck_assert_ptr_null(dgram_link_find(T.p.fx[0].d, wrong));
  /* the responder drops its half when told (CLOSE) or after the
   * handshake timeout; either way it never came up */
  ck_assert_int_eq(T.up[1], 0);
  /* a wrong RSA identity with the right Ed25519 one is refused too */
  uint8_t rsa[20];
  memcpy(rsa, T.p.fx[1].keys->rsa_id_digest, 20);
  rsa[19] ^= 0x80;
  RUN_UNTIL((dgram_get_stats(T.p.fx[0].d, &s0), s0.links == 0));
  l = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                      T.p.fx[1].keys->ed_identity.pub, rsa);
  ck_assert_ptr_nonnull(l);
  RUN_UNTIL((dgram_get_stats(T.p.fx[0].d, &s0), s0.auth_failed > 1));
  ck_assert_uint_eq(s0.auth_failed, 2);
  ck_assert_int_eq(T.up[0], 0);
}
END_TEST

START_TEST(test_link_forged_peers)
{
  /* A third relay's keys make two forgeries out of d0's (relay_keys_t is
   * plain data): an initiator that signs AUTHENTICATE with a key its
   * CERTS do not certify, and a responder whose DTLS certificate is not
   * the one its CERTS certify. Both are refused; neither link comes up. */
  char dir[64], *err = NULL;
  relay_keys_t *other = fixture_keys_new(dir, "dgram");
  relay_keys_t bad_auth = *T.p.fx[0].keys, bad_cert = *T.p.fx[0].keys;
  bad_auth.ed_link_auth = other->ed_link_auth;
  bad_cert.tls = other->tls;
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  ck_assert_int_eq(pc_addr_parse(&cfg.bind, "127.0.0.1:0"), 0);
  dgram_t *fa = dgram_new(T.p.loop, &bad_auth, &cfg, &err);
  dgram_t *fc = dgram_new(T.p.loop, &bad_cert, &cfg, &err);
  ck_assert_ptr_nonnull(fa);
  ck_assert_ptr_nonnull(fc);
  dgram_stats_t s1, sa, sc;
  /* forged initiator -> d1: d1 refuses the AUTHENTICATE */
  ck_assert_ptr_nonnull(dgram_link_open(fa, dgram_bound_addr(T.p.fx[1].d),
                                        T.p.fx[1].keys->ed_identity.pub, NULL));
  RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s1), s1.auth_failed > 0));
  ck_assert_uint_eq(s1.auth_failed, 1);
  ck_assert_uint_eq(s1.links_authenticated, 0);
  dgram_get_stats(fa, &sa);
  ck_assert_uint_eq(sa.links_authenticated, 0);
  /* d1 -> forged responder (expecting d0's identity, which its CERTS
   * carry): d1 refuses the certificate binding */
  ck_assert_ptr_nonnull(dgram_link_open(T.p.fx[1].d, dgram_bound_addr(fc),
                                        T.p.fx[0].keys->ed_identity.pub, NULL));
  RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s1), s1.auth_failed > 1));
  ck_assert_uint_eq(s1.auth_failed, 2);
  ck_assert_uint_eq(s1.links_authenticated, 0);
  dgram_get_stats(fc, &sc);
  ck_assert_uint_eq(sc.links_authenticated, 0);
  ck_assert_int_eq(T.up[1], 0);
  dgram_free(fa);
  dgram_free(fc);
  router_keys_free(other);
  fixture_rmtree(dir);
}
END_TEST

typedef struct {
  int fd;
  struct sockaddr_in to;
} udp_out_t;

static void
udp_out(void *arg, const uint8_t *d, size_t len)
{
  udp_out_t *u = arg;
  sendto(u->fd, d, len, 0, (struct sockaddr *)&u->to, sizeof(u->to));
}

START_TEST(test_link_handshaking_per_address)
{
  /* Six DTLS clients on 127.0.0.1 (six ports) each return their cookie
   * and then stall: d1 takes four, refuses two, and drops the four when
   * the set-up deadline passes. */
  enum { N = 6 };
  udp_out_t u[N];
  dtls_conn_t *c[N];
  dtls_context_t *dc = dtls_context_new(T.p.fx[0].keys->tls);
  ck_assert_ptr_nonnull(dc);
  dgram_stats_t s;
  for (int i = 0; i < N; i++) {
    u[i].fd = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_ge(u[i].fd, 0);
    memset(&u[i].to, 0, sizeof(u[i].to));
    u[i].to.sin_family = AF_INET;
    u[i].to.sin_port = htons(dgram_bound_addr(T.p.fx[1].d)->port);
    u[i].to.sin_addr.s_addr = htonl(0x7f000001);
    c[i] = dtls_conn_new_client(dc, udp_out, &u[i]);
    ck_assert_int_eq(dtls_conn_handshake(c[i]), TLS_WANT_READ);
    RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s),
               s.hello_verify_sent >= (uint64_t)i + 1));
    uint8_t buf[2048];
    ssize_t n = recv(u[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
    ck_assert_int_gt(n, 0);
    dtls_conn_input(c[i], buf, (size_t)n);
    ck_assert_int_eq(dtls_conn_handshake(c[i]), TLS_WANT_READ);
    RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s),
               s.links_accepted + s.refused_full >= (uint64_t)i + 1));
  }
  dgram_get_stats(T.p.fx[1].d, &s);
  ck_assert_uint_eq(s.links_accepted, 4);
  ck_assert_uint_eq(s.refused_full, 2);
  ck_assert_uint_eq(s.links, 4);
  RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s), s.links == 0));
  ck_assert_uint_eq(s.links, 0);
  ck_assert_uint_eq(s.handshake_failed, 4);
  ck_assert_uint_eq(s.links_authenticated, 0);
  for (int i = 0; i < N; i++) {
    dtls_conn_free(c[i]);
    close(u[i].fd);
  }
  dtls_context_free(dc);
}
END_TEST

START_TEST(test_link_simultaneous_open)
{
  /* Both ends open at once, from the same sockets: one link results, up
   * at both ends, and records flow. */
  dgram_link_t *a = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                                    T.p.fx[1].keys->ed_identity.pub, NULL);
  dgram_link_t *b = dgram_link_open(T.p.fx[1].d, dgram_bound_addr(T.p.fx[0].d),
                                    T.p.fx[0].keys->ed_identity.pub, NULL);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  dgram_link_t *la = NULL, *lb = NULL;
  RUN_UNTIL((la = dgram_link_find(T.p.fx[0].d, T.p.fx[1].keys->ed_identity.pub)) &&
            (lb = dgram_link_find(T.p.fx[1].d, T.p.fx[0].keys->ed_identity.pub)) &&
            dgram_link_is_up(la) && dgram_link_is_up(lb));
  ck_assert(dgram_link_is_up(la) && dgram_link_is_up(lb));
  dgram_link_stats_t sa, sb;
  dgram_link_get_stats(la, &sa);
  dgram_link_get_stats(lb, &sb);
  ck_assert_int_ne(sa.initiator, sb.initiator); /* the same session */
  dgram_stats_t s0, s1;
  dgram_get_stats(T.p.fx[0].d, &s0);
  dgram_get_stats(T.p.fx[1].d, &s1);
  ck_assert_uint_eq(s0.links, 1);
  ck_assert_uint_eq(s1.links, 1);
  ck_assert_int_eq(dgram_link_send(la, 0x40, (const uint8_t *)"sim", 3), 0);
  RUN_UNTIL(T.got[0] >= 1);
  ck_assert_uint_eq(T.got[1], 1);
  ck_assert_uint_eq(T.got[0], 1);
}
END_TEST

static void
capture(void *arg, const uint8_t *d, size_t len)
{
  struct {
    uint8_t buf[DTLS_LINK_MTU];
    size_t len;
  } *h = arg;
  if (len <= sizeof(h->buf) && h->len == 0) {
    memcpy(h->buf, d, len);
    h->len = len;
  }
}

START_TEST(test_link_garbage_no_state)
{
  /* A raw UDP socket throws garbage, truncated and cookie-less
   * ClientHellos at d1: only HelloVerifyRequests come back, no link. */
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in to;
  memset(&to, 0, sizeof(to));
  to.sin_family = AF_INET;
  to.sin_port = htons(dgram_bound_addr(T.p.fx[1].d)->port);
  to.sin_addr.s_addr = htonl(0x7f000001);
  uint8_t junk[1400];
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (uint8_t)(i * 7 + 3);
  for (int i = 0; i < 50; i++)
    sendto(fd, junk, 20 + (size_t)i * 20, 0, (struct sockaddr *)&to,
           sizeof(to));
  /* A ClientHello without a cookie: made by a real DTLS client session. */
  dtls_context_t *dc = dtls_context_new(T.p.fx[0].keys->tls);
  ck_assert_ptr_nonnull(dc);
  struct hello_t {
    uint8_t buf[DTLS_LINK_MTU];
    size_t len;
  } hello = {{0}, 0};
  dtls_conn_t *c = dtls_conn_new_client(dc, NULL, NULL);
  dtls_conn_set_output(c, capture, &hello);
  ck_assert_int_eq(dtls_conn_handshake(c), TLS_WANT_READ);
  ck_assert_uint_gt(hello.len, 0);
  ck_assert(dtls_is_client_hello(hello.buf, hello.len));
  for (int i = 0; i < 20; i++)
    sendto(fd, hello.buf, hello.len, 0, (struct sockaddr *)&to, sizeof(to));
  /* a truncated ClientHello */
  sendto(fd, hello.buf, hello.len / 2, 0, (struct sockaddr *)&to,
         sizeof(to));
  dgram_stats_t s;
  RUN_UNTIL((dgram_get_stats(T.p.fx[1].d, &s),
             s.dgrams_in >= 71));
  ck_assert_uint_eq(s.dgrams_in, 71);
  ck_assert_uint_eq(s.hello_verify_sent, 20);
  ck_assert_uint_eq(s.dropped_no_link, 51);
  ck_assert_uint_eq(s.links, 0);
  ck_assert_uint_eq(s.links_accepted, 0);
  /* the answers arrived at the raw socket: HelloVerifyRequests */
  uint8_t buf[2048];
  int n_hvr = 0;
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
    if (n > 13 + 12 && buf[0] == 22 && buf[13] == 3) /* hello_verify */
      n_hvr++;
  ck_assert_int_eq(n_hvr, 20);
  dtls_conn_free(c);
  dtls_context_free(dc);
  close(fd);
  /* the real peer still gets in afterwards */
  dgram_link_t *l = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                                    T.p.fx[1].keys->ed_identity.pub, NULL);
  ck_assert_ptr_nonnull(l);
  RUN_UNTIL(T.up[0] && T.up[1]);
  ck_assert(dgram_link_is_up(l));
}
END_TEST

static void
woken(void *arg)
{
  (*(int *)arg)++;
}

START_TEST(test_link_bandwidth)
{
  /* d0 writes under a 20 KB/s limit (burst 20 KB), d1 reads under one:
   * d0's upper layer is told to stop once the burst is spent and woken at
   * a refill; d1 takes what d0 sent at about the read rate, the rest
   * waiting in the socket's buffer. Loopback counts (count_private). */
  ratelimit_t *wr = ratelimit_new(T.p.loop, 20000, 20000, 100);
  ratelimit_t *rd = ratelimit_new(T.p.loop, 20000, 20000, 100);
  ratelimit_configure_dir(wr, RATELIMIT_READ, 0, 0);
  ratelimit_configure_dir(rd, RATELIMIT_WRITE, 0, 0);
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  cfg.handshake_timeout_s = 2;
  cfg.bw_global = wr;
  cfg.count_private = 1;
  dgram_reconfigure(T.p.fx[0].d, &cfg);
  cfg.bw_global = NULL;
  cfg.bw_relay = rd;
  dgram_reconfigure(T.p.fx[1].d, &cfg);
  dgram_link_t *l = dgram_link_open(T.p.fx[0].d, dgram_bound_addr(T.p.fx[1].d),
                                    T.p.fx[1].keys->ed_identity.pub, NULL);
  RUN_UNTIL(T.up[0] && T.up[1]);
  ck_assert(dgram_link_is_up(l));
  /* let the buckets fill again after the handshake */
  uint64_t t0 = time_mono_us();
  RUN_UNTIL(time_mono_us() - t0 > 1200000);
  uint8_t body[1000];
  memset(body, 0x33, sizeof(body));
  int wakes = 0;
  unsigned sent = 0;
  while (dgram_link_may_write(l, woken, &wakes) && sent < 100) {
    ck_assert_int_eq(dgram_link_send(l, 0x40, body, sizeof(body)), 0);
    dgram_link_flush(l);
    sent++;
  }
  /* the 20 KB burst (one datagram may overdraw it) */
  ck_assert_uint_ge(sent, 19);
  ck_assert_uint_le(sent, 21);
  ck_assert_uint_ge(ratelimit_total(wr, RATELIMIT_WRITE), 19 * 1000);
  ck_assert_int_eq(wakes, 0);
  ck_assert_int_eq(dgram_link_may_write(l, woken, &wakes), 0);
  RUN_UNTIL(wakes > 0);
  ck_assert_int_eq(wakes, 1);
  ck_assert(dgram_link_may_write(l, woken, &wakes));
  /* 40 more datagrams, past the write limit (records sent anyway go):
   * d1 reads them at about 20 KB/s. */
  for (int i = 0; i < 40; i++) {
    ck_assert_int_eq(dgram_link_send(l, 0x40, body, sizeof(body)), 0);
    dgram_link_flush(l);
  }
  t0 = time_mono_us();
  unsigned want = sent + 40;
  RUN_UNTIL(T.got[1] >= want);
  ck_assert_uint_eq(T.got[1], want);
  uint64_t took = time_mono_us() - t0;
  /* about 40 KB beyond d1's 20 KB burst at 20 KB/s */
  ck_assert_msg(took >= 800000, "read %u records in %llu us", want,
                (unsigned long long)took);
  ck_assert_uint_ge(ratelimit_total(rd, RATELIMIT_READ), want * 1000);
  /* without limits again, nothing waits */
  cfg.bw_relay = NULL;
  dgram_reconfigure(T.p.fx[0].d, &cfg);
  ck_assert(dgram_link_may_write(l, woken, &wakes));
  dgram_reconfigure(T.p.fx[1].d, &cfg);
  ratelimit_free(wr);
  ratelimit_free(rd);
}
END_TEST

START_TEST(test_rcvbuf_drops)
{
  /* d1 asked for the default receive buffer: the kernel gave one (at
   * least its minimum). A link layer with a tiny buffer, flooded while
   * the loop does not run, loses datagrams in the kernel; the count comes
   * with the next datagram read (SO_RXQ_OVFL) and is in the stats. */
  dgram_stats_t s;
  dgram_get_stats(T.p.fx[1].d, &s);
  ck_assert_uint_ge(s.rcvbuf_bytes, 2048);
  ck_assert_uint_eq(s.dropped_rcvbuf, 0);
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  ck_assert_uint_eq(cfg.rcvbuf, 0);
  ck_assert_int_eq(pc_addr_parse(&cfg.bind, "127.0.0.1:0"), 0);
  cfg.rcvbuf = 4096;
  char *err = NULL;
  dgram_t *small = dgram_new(T.p.loop, T.p.fx[1].keys, &cfg, &err);
  ck_assert_ptr_nonnull(small);
  dgram_stats_t ss;
  dgram_get_stats(small, &ss);
  ck_assert_uint_lt(ss.rcvbuf_bytes, s.rcvbuf_bytes);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in to;
  memset(&to, 0, sizeof(to));
  to.sin_family = AF_INET;
  to.sin_port = htons(dgram_bound_addr(small)->port);
  to.sin_addr.s_addr = htonl(0x7f000001);
  uint8_t junk[1000];
  memset(junk, 0x17, sizeof(junk));
  for (int i = 0; i < 200; i++)
    sendto(fd, junk, sizeof(junk), 0, (struct sockaddr *)&to, sizeof(to));
  RUN_UNTIL((dgram_get_stats(small, &ss), ss.dropped_no_link > 0));
  ck_assert_uint_gt(ss.dropped_no_link, 0);
  ck_assert_uint_lt(ss.dropped_no_link, 200);
  /* one more datagram brings the kernel's count */
  sendto(fd, junk, sizeof(junk), 0, (struct sockaddr *)&to, sizeof(to));
  uint64_t before = ss.dropped_no_link;
  RUN_UNTIL((dgram_get_stats(small, &ss), ss.dropped_no_link > before));
  ck_assert_uint_eq(ss.dropped_rcvbuf + before, 200);
  close(fd);
  dgram_free(small);
}
END_TEST

Suite *
suite_dgram(void)
{
  Suite *s = suite_create("dgram");
  TCase *tc = tcase_create("frame");
  tcase_add_test(tc, test_frame_roundtrip);
  tcase_add_test(tc, test_frame_bad_input);
  tcase_add_test(tc, test_transport_policy);
  suite_add_tcase(s, tc);
  tc = tcase_create("link");
  tcase_add_checked_fixture(tc, link_setup, link_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_link_up_and_records);
  tcase_add_test(tc, test_link_wrong_identity);
  tcase_add_test(tc, test_link_garbage_no_state);
  tcase_add_test(tc, test_link_simultaneous_open);
  tcase_add_test(tc, test_link_handshaking_per_address);
  tcase_add_test(tc, test_link_forged_peers);
  tcase_add_test(tc, test_rcvbuf_drops);
  tcase_add_test(tc, test_link_bandwidth);
  suite_add_tcase(s, tc);
  return s;
}
