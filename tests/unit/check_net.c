/* SPDX-License-Identifier: BSD-3-Clause */
/* check_net.c -- unit tests for lib/net.
 *
 *  - address: parsing (accepted and rejected forms), formatting, sockaddr
 *    round trips, loopback/private classification (RFC 1918, RFC 6598,
 *    RFC 3927, RFC 4193, RFC 4291 ranges).
 *  - conn (plain TCP on 127.0.0.1, real sockets): echo of 300 KiB with
 *    content checked, connect to a closed port gives ERROR, a peer that
 *    closes gives EOF, conn_free() from inside callbacks, back-pressure with
 *    conn_set_reading(), conn_close() with flush, and a listener that runs
 *    out of descriptors pauses instead of spinning and recovers.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/buf/buf.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/address/address.h"
#include "lib/net/conn.h"

Suite *suite_net(void);

/* ---- address ---- */

static const char *
fmt(const pc_addr_t *a, int with_port)
{
  static char b[PC_ADDR_STR_LEN];
  return pc_addr_fmt(a, b, sizeof(b), with_port);
}

/* A torrc's bare address, IPv6 in brackets or not (OutboundBindAddress,
 * Address): the brackets are taken off, nothing else is accepted. */
START_TEST(test_addr_parse_ip_bracketed)
{
  pc_addr_t a;
  char buf[PC_ADDR_STR_LEN];
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "[2001:db8::1]", 7), 0);
  ck_assert_int_eq(a.family, AF_INET6);
  ck_assert_str_eq(pc_addr_fmt(&a, buf, sizeof(buf), 1), "[2001:db8::1]:7");
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "2001:db8::2", 0), 0);
  ck_assert_str_eq(pc_addr_fmt(&a, buf, sizeof(buf), 0), "2001:db8::2");
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "192.0.2.9", 0), 0);
  ck_assert_int_eq(a.family, AF_INET);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "[::1", 0), -1);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "::1]", 0), -1);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "[]", 0), -1);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "[", 0), -1);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "[::1]:9001", 0), -1);
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, "example.org", 0), -1);
  char longv[100];
  memset(longv, '1', sizeof(longv));
  longv[0] = '[';
  longv[98] = ']';
  longv[99] = '\0';
  ck_assert_int_eq(pc_addr_parse_ip_bracketed(&a, longv, 0), -1);
}
END_TEST

START_TEST(test_addr_parse_fmt)
{
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse(&a, "1.2.3.4:9001"), 0);
  ck_assert_int_eq(a.family, AF_INET);
  ck_assert_uint_eq(a.port, 9001);
  ck_assert_uint_eq(pc_addr_ipv4_h(&a), 0x01020304u);
  ck_assert_str_eq(fmt(&a, 1), "1.2.3.4:9001");
  ck_assert_str_eq(fmt(&a, 0), "1.2.3.4");
  ck_assert_int_eq(pc_addr_parse(&a, "255.255.255.255"), 0);
  ck_assert_uint_eq(a.port, 0);
  ck_assert_uint_eq(pc_addr_ipv4_h(&a), 0xffffffffu);
  ck_assert_int_eq(pc_addr_parse(&a, "[::1]:443"), 0);
  ck_assert_int_eq(a.family, AF_INET6);
  ck_assert_uint_eq(a.port, 443);
  ck_assert_uint_eq(a.addr[15], 1);
  ck_assert_uint_eq(pc_addr_ipv4_h(&a), 0);
  ck_assert_str_eq(fmt(&a, 1), "[::1]:443");
  ck_assert_str_eq(fmt(&a, 0), "::1");
  ck_assert_int_eq(pc_addr_parse(&a, "2001:DB8:0:0:0:0:0:1"), 0);
  ck_assert_uint_eq(a.port, 0);
  ck_assert_str_eq(fmt(&a, 0), "2001:db8::1"); /* RFC 5952 form */
  ck_assert_int_eq(pc_addr_parse(&a, "[2001:db8::ffff:1.2.3.4]:65535"), 0);
  ck_assert_uint_eq(a.port, 65535);
  ck_assert_uint_eq(a.addr[12], 1);
  ck_assert_uint_eq(a.addr[15], 4);
  ck_assert_int_eq(pc_addr_parse(&a, "[::]"), 0);
  ck_assert_int_eq(pc_addr_parse(&a, "0.0.0.0:0"), 0);

  static const char *bad[] = {
      "", ":", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4:", "1.2.3.4:65536",
      "1.2.3.4:-1", "1.2.3.4:+80", "1.2.3.4:80x", "1.2.3.4:000080",
      "1.2.3.4 :80", " 1.2.3.4", "example.com", "example.com:80", "[::1",
      "[::1]x", "[::1]:", "[1.2.3.4]:80", "[]:80", "::1:80:", "1:2:3:4:5:6:7:8:9",
      "[::1]:99999", "fe80::1%eth0", "0x7f.1:80",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (pc_addr_parse(&a, bad[i]) == 0)
      ck_abort_msg("accepted \"%s\"", bad[i]);
  }
  ck_assert_int_eq(pc_addr_parse_ip(&a, "10.0.0.1", 80), 0);
  ck_assert_str_eq(fmt(&a, 1), "10.0.0.1:80");
  ck_assert_int_eq(pc_addr_parse_ip(&a, "fe80::2", 7), 0);
  ck_assert_str_eq(fmt(&a, 1), "[fe80::2]:7");
  ck_assert_int_eq(pc_addr_parse_ip(&a, "10.0.0.1:80", 80), -1);
  ck_assert_int_eq(pc_addr_parse_ip(&a, "[::1]", 80), -1);
  pc_addr_t u;
  memset(&u, 0, sizeof(u));
  u.family = AF_UNSPEC;
  ck_assert_str_eq(fmt(&u, 1), "<unset>");
  /* Truncating output stays NUL-terminated. */
  char small[6];
  pc_addr_parse(&a, "123.123.123.123:9001");
  pc_addr_fmt(&a, small, sizeof(small), 1);
  ck_assert_str_eq(small, "123.1");
}
END_TEST

START_TEST(test_addr_sockaddr_eq)
{
  pc_addr_t a, b;
  struct sockaddr_storage ss;
  socklen_t len;
  pc_addr_from_ipv4(&a, 0x7f000001u, 9001);
  ck_assert_str_eq(fmt(&a, 1), "127.0.0.1:9001");
  ck_assert_int_eq(pc_addr_to_sockaddr(&a, &ss, &len), 0);
  ck_assert_uint_eq(len, sizeof(struct sockaddr_in));
  struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
  ck_assert_uint_eq(ntohs(sin->sin_port), 9001);
  ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0x7f000001u);
  ck_assert_int_eq(pc_addr_from_sockaddr(&b, (struct sockaddr *)&ss, len), 0);
  ck_assert(pc_addr_eq(&a, &b, 1));
  ck_assert_int_eq(pc_addr_from_sockaddr(&b, (struct sockaddr *)&ss, 4), -1);

  pc_addr_parse(&a, "[2001:db8::7]:80");
  ck_assert_int_eq(pc_addr_to_sockaddr(&a, &ss, &len), 0);
  ck_assert_uint_eq(len, sizeof(struct sockaddr_in6));
  ck_assert_int_eq(pc_addr_from_sockaddr(&b, (struct sockaddr *)&ss, len), 0);
  ck_assert(pc_addr_eq(&a, &b, 1));
  b.port = 81;
  ck_assert(!pc_addr_eq(&a, &b, 1));
  ck_assert(pc_addr_eq(&a, &b, 0));
  b.addr[15] = 8;
  ck_assert(!pc_addr_eq(&a, &b, 0));
  pc_addr_parse(&b, "127.0.0.1:80");
  ck_assert(!pc_addr_eq(&a, &b, 0));

  pc_addr_t u;
  memset(&u, 0, sizeof(u));
  ck_assert_int_eq(pc_addr_to_sockaddr(&u, &ss, &len), -1);
  ss.ss_family = AF_UNIX;
  ck_assert_int_eq(pc_addr_from_sockaddr(&b, (struct sockaddr *)&ss,
                                         sizeof(ss)), -1);
  ck_assert_int_eq(b.family, AF_UNSPEC);
}
END_TEST

START_TEST(test_addr_classify)
{
  static const struct {
    const char *a;
    int loopback, priv;
  } v[] = {
      {"127.0.0.1", 1, 1},       {"127.255.1.2", 1, 1},
      {"10.1.2.3", 0, 1},        {"172.16.0.1", 0, 1},
      {"172.31.255.255", 0, 1},  {"172.32.0.1", 0, 0},
      {"172.15.255.255", 0, 0},  {"192.168.4.4", 0, 1},
      {"192.169.0.1", 0, 0},     {"169.254.9.9", 0, 1},
      {"100.64.0.1", 0, 1},      {"100.127.255.255", 0, 1},
      {"100.128.0.0", 0, 0},     {"100.63.255.255", 0, 0},
      {"0.0.0.0", 0, 1},         {"0.1.2.3", 0, 1},
      {"224.0.0.1", 0, 1},       {"255.255.255.255", 0, 1},
      {"8.8.8.8", 0, 0},         {"128.31.0.34", 0, 0},
      {"::1", 1, 1},             {"::", 0, 1},
      {"fe80::1", 0, 1},         {"febf::1", 0, 1},
      {"fec0::1", 0, 1},         {"fc00::1", 0, 1},
      {"fdff::1", 0, 1},         {"ff02::1", 0, 1},
      {"2001:db8::1", 0, 0},     {"2a00:1450::1", 0, 0},
      {"fe00::1", 0, 0},         {"::ffff:127.0.0.1", 1, 1},
      {"::ffff:10.0.0.1", 0, 1}, {"::ffff:8.8.4.4", 0, 0},
      {"::2", 0, 0},
  };
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    pc_addr_t a;
    ck_assert_int_eq(pc_addr_parse(&a, v[i].a), 0);
    if (pc_addr_is_loopback(&a) != v[i].loopback)
      ck_abort_msg("%s: loopback should be %d", v[i].a, v[i].loopback);
    if (pc_addr_is_private(&a) != v[i].priv)
      ck_abort_msg("%s: private should be %d", v[i].a, v[i].priv);
  }
  pc_addr_t u;
  memset(&u, 0, sizeof(u));
  ck_assert(pc_addr_is_private(&u));
  ck_assert(!pc_addr_is_loopback(&u));
}
END_TEST

/* ---- plain connections ---- */

static evloop_t *L;
static listener_t *lst;

static void
watchdog_cb(void *arg)
{
  ck_abort_msg("test timed out (%s)", (const char *)arg);
}

static evloop_timer_t *
watchdog(const char *what)
{
  evloop_timer_t *t = evloop_timer_new(L, watchdog_cb, (void *)what);
  evloop_timer_schedule(t, 5 * 1000000ULL);
  return t;
}

static uint8_t
pat(size_t i)
{
  return (uint8_t)(i * 13 + (i >> 9));
}

/* Echo server: every accepted conn echoes what it reads; frees itself on
 * EOF (from inside the callback). */
static int echo_opened, echo_eofs;
static conn_t *echo_conns[8];
static int n_echo;

static void
echo_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)arg;
  switch (ev) {
  case CONN_EV_OPEN:
    echo_opened++;
    break;
  case CONN_EV_DATA:
    buf_move_all(conn_outbuf(c), conn_inbuf(c));
    conn_flush_soon(c);
    break;
  case CONN_EV_DRAINED:
    break;
  case CONN_EV_EOF:
  case CONN_EV_ERROR:
    echo_eofs++;
    for (int i = 0; i < n_echo; i++)
      if (echo_conns[i] == c)
        echo_conns[i] = NULL;
    conn_free(c);
    break;
  }
}

static void
echo_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  ck_assert_int_eq(peer->family, listener_addr(lst)->family);
  ck_assert(pc_addr_is_loopback(peer));
  conn_t *c = conn_new_accepted(L, NULL, fd, peer, echo_cb, NULL);
  ck_assert_ptr_null(conn_tls(c));
  ck_assert_int_eq(conn_fd(c), fd);
  ck_assert(pc_addr_eq(conn_peer(c), peer, 1));
  ck_assert_int_lt(n_echo, 8);
  echo_conns[n_echo++] = c;
}

static void
start_listener_on(listener_cb_fn cb, const char *where)
{
  pc_addr_t a;
  const char *err = NULL;
  ck_assert_int_eq(pc_addr_parse(&a, where), 0);
  lst = listener_new(L, &a, cb, NULL, &err);
  ck_assert_ptr_nonnull(lst);
  ck_assert_uint_ne(listener_addr(lst)->port, 0);
  ck_assert(pc_addr_eq(listener_addr(lst), &a, 0));
}

static void
start_listener(listener_cb_fn cb)
{
  start_listener_on(cb, "127.0.0.1:0");
}

#define ECHO_TOTAL (300 * 1024)
struct client {
  conn_t *c;
  size_t sent, recvd;
  int open, eof, error;
  int paused_once;
};

static void
echo_client_cb(conn_t *c, conn_event_t ev, void *arg)
{
  struct client *cl = arg;
  switch (ev) {
  case CONN_EV_OPEN: {
    cl->open = 1;
    /* Everything at once: exercises short writes and write interest. */
    uint8_t *tmp = malloc(ECHO_TOTAL);
    for (size_t i = 0; i < ECHO_TOTAL; i++)
      tmp[i] = pat(i);
    buf_add(conn_outbuf(c), tmp, ECHO_TOTAL);
    free(tmp);
    cl->sent = ECHO_TOTAL;
    conn_flush_soon(c);
    break;
  }
  case CONN_EV_DATA: {
    buf_t *in = conn_inbuf(c);
    while (buf_datalen(in)) {
      size_t hl;
      const uint8_t *h = buf_head(in, &hl);
      for (size_t i = 0; i < hl; i++)
        if (h[i] != pat(cl->recvd + i))
          ck_abort_msg("echo byte %zu differs", cl->recvd + i);
      cl->recvd += hl;
      buf_drain(in, hl);
    }
    if (cl->recvd == ECHO_TOTAL) {
      /* Closing our side: the echo server sees EOF and frees itself. */
      conn_free(cl->c); /* from inside our own callback */
      evloop_exit(L);
    }
    break;
  }
  case CONN_EV_DRAINED:
    break;
  case CONN_EV_EOF:
    cl->eof = 1;
    break;
  case CONN_EV_ERROR:
    ck_abort_msg("client error: %s", conn_error(c));
    break;
  }
}

START_TEST(test_plain_echo)
{
  L = evloop_new();
  echo_opened = echo_eofs = n_echo = 0;
  start_listener_on(echo_accept, _i ? "[::1]:0" : "127.0.0.1:0");
  struct client cl = {0};
  const char *err = NULL;
  cl.c = conn_connect(L, NULL, listener_addr(lst), echo_client_cb, &cl, &err);
  ck_assert_ptr_nonnull(cl.c);
  ck_assert_ptr_null(conn_tls(cl.c));
  conn_set_read_budget(cl.c, 8192); /* many small reads */
#if defined(__linux__) && defined(TCP_CONGESTION)
  /* RelayTCPCongestionControl's setter: reno is always built in; an
   * unknown name fails with ENOENT and changes nothing. */
  {
    char cc[16] = "";
    socklen_t cclen = sizeof(cc);
    ck_assert_int_eq(conn_set_congestion_control(cl.c, "reno"), 0);
    ck_assert_int_eq(getsockopt(conn_fd(cl.c), IPPROTO_TCP, TCP_CONGESTION,
                                cc, &cclen), 0);
    ck_assert_str_eq(cc, "reno");
    errno = 0;
    ck_assert_int_eq(conn_set_congestion_control(cl.c, "no_such_cc"), -1);
    ck_assert_int_eq(errno, ENOENT);
  }
#endif
  evloop_timer_t *wd = watchdog("echo");
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_uint_eq(cl.recvd, ECHO_TOTAL);
  ck_assert_int_eq(echo_opened, 1);
  /* Let the server notice the close and free its conn: the loop runs
   * out of work only when that happened. */
  listener_free(lst);
  evloop_timer_free(wd);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(echo_eofs, 1);
  ck_assert_ptr_null(echo_conns[0]);
  evloop_free(L);
}
END_TEST

static void
err_cb(conn_t *c, conn_event_t ev, void *arg)
{
  int *got = arg;
  ck_assert_int_eq(ev, CONN_EV_ERROR);
  *got = 1;
  ck_assert_ptr_nonnull(strstr(conn_error(c), "refused"));
  conn_free(c);
  evloop_exit(L);
}

START_TEST(test_connect_refused)
{
  L = evloop_new();
  /* Find a free port: bind a listener on port 0 and close it. Binding
   * the same address twice fails meanwhile. */
  start_listener(echo_accept);
  pc_addr_t a = *listener_addr(lst);
  const char *e2 = NULL;
  ck_assert_ptr_null(listener_new(L, &a, echo_accept, NULL, &e2));
  ck_assert_ptr_nonnull(strstr(e2, "in use"));
  listener_free(lst);
  int got = 0;
  const char *err = NULL;
  conn_t *c = conn_connect(L, NULL, &a, err_cb, &got, &err);
  ck_assert_ptr_nonnull(c);
  evloop_timer_t *wd = watchdog("refused");
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(got, 1);
  evloop_timer_free(wd);
  evloop_free(L);
}
END_TEST

/* The server side closes immediately after accepting (optionally after
 * sending a greeting with a flushing close). */
static int greet_mode;
static void
closer_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  conn_t *c = conn_new_accepted(L, NULL, fd, peer, echo_cb, NULL);
  if (greet_mode) {
    buf_add(conn_outbuf(c), "hello, then goodbye", 19);
    conn_close(c, 1);
  } else {
    conn_free(c);
  }
}

static void
eof_client_cb(conn_t *c, conn_event_t ev, void *arg)
{
  struct client *cl = arg;
  switch (ev) {
  case CONN_EV_OPEN:
    cl->open = 1;
    break;
  case CONN_EV_DATA:
    cl->recvd = buf_datalen(conn_inbuf(c));
    break;
  case CONN_EV_EOF:
    cl->eof = 1;
    evloop_exit(L);
    break;
  case CONN_EV_ERROR:
    /* An immediate close may also show up as a reset. */
    cl->error = 1;
    evloop_exit(L);
    break;
  default:
    break;
  }
}

START_TEST(test_peer_close_eof)
{
  L = evloop_new();
  greet_mode = _i;
  start_listener(closer_accept);
  struct client cl = {0};
  const char *err = NULL;
  cl.c = conn_connect(L, NULL, listener_addr(lst), eof_client_cb, &cl, &err);
  evloop_timer_t *wd = watchdog("eof");
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert(cl.open);
  ck_assert(cl.eof);
  ck_assert(!cl.error);
  if (greet_mode) {
    ck_assert_uint_eq(cl.recvd, 19);
    ck_assert_mem_eq(buf_pullup(conn_inbuf(cl.c), 19), "hello, then goodbye",
                     19);
  }
  ck_assert_str_eq(conn_error(cl.c), "connection closed by peer");
  conn_free(cl.c);
  listener_free(lst);
  evloop_timer_free(wd);
  ck_assert_int_eq(evloop_run(L), 0); /* nothing left behind */
  evloop_free(L);
}
END_TEST

/* Back-pressure: the receiver stops reading; the sender's outbuf stays
 * non-empty; reading again lets everything through. */
static struct client bp_rx;
static conn_t *bp_tx;
static int bp_phase;

static void
bp_tx_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)arg;
  (void)c;
  ck_assert_int_ne(ev, CONN_EV_ERROR);
}

static void
bp_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  int small = 32 * 1024;
  ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small,
                              sizeof(small)), 0);
  bp_tx = conn_new_accepted(L, NULL, fd, peer, bp_tx_cb, NULL);
  uint8_t *tmp = malloc(4 << 20);
  for (size_t i = 0; i < (4u << 20); i++)
    tmp[i] = pat(i);
  buf_add(conn_outbuf(bp_tx), tmp, 4 << 20);
  free(tmp);
  conn_flush_soon(bp_tx);
}

static void
bp_check_cb(void *arg)
{
  (void)arg;
  /* Receiver paused for 300 ms: the sender must be stuck. */
  ck_assert_uint_gt(buf_datalen(conn_outbuf(bp_tx)), 0);
  ck_assert_uint_lt(bp_rx.recvd, 4u << 20);
  bp_phase = 2;
  conn_set_reading(bp_rx.c, 1);
}

static evloop_timer_t *bp_timer;
static void
bp_rx_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)arg;
  if (ev == CONN_EV_DATA) {
    buf_t *in = conn_inbuf(c);
    size_t n = buf_datalen(in);
    uint8_t *tmp = malloc(n);
    buf_get(in, tmp, n);
    for (size_t i = 0; i < n; i++)
      if (tmp[i] != pat(bp_rx.recvd + i))
        ck_abort_msg("byte %zu differs", bp_rx.recvd + i);
    free(tmp);
    bp_rx.recvd += n;
    if (bp_phase == 0 && bp_rx.recvd > 100000) {
      bp_phase = 1;
      conn_set_reading(c, 0);
      evloop_timer_schedule(bp_timer, 300000);
    }
    if (bp_rx.recvd == (4u << 20))
      evloop_exit(L);
  } else {
    ck_assert_int_ne(ev, CONN_EV_ERROR);
  }
}

START_TEST(test_backpressure)
{
  L = evloop_new();
  start_listener(bp_accept);
  bp_phase = 0;
  memset(&bp_rx, 0, sizeof(bp_rx));
  bp_timer = evloop_timer_new(L, bp_check_cb, NULL);
  const char *err = NULL;
  bp_rx.c = conn_connect(L, NULL, listener_addr(lst), bp_rx_cb, NULL, &err);
  int small = 32 * 1024;
  ck_assert_int_eq(setsockopt(conn_fd(bp_rx.c), SOL_SOCKET, SO_RCVBUF,
                              &small, sizeof(small)), 0);
  evloop_timer_t *wd = watchdog("backpressure");
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_int_eq(bp_phase, 2);
  ck_assert_uint_eq(bp_rx.recvd, 4u << 20);
  ck_assert_uint_eq(conn_bytes_written(bp_tx), 4u << 20);
  ck_assert_uint_eq(buf_datalen(conn_outbuf(bp_tx)), 0);
  conn_free(bp_tx);
  conn_free(bp_rx.c);
  listener_free(lst);
  evloop_timer_free(bp_timer);
  evloop_timer_free(wd);
  evloop_free(L);
}
END_TEST

/* Descriptor exhaustion: with RLIMIT_NOFILE too low to accept, the
 * listener logs once, pauses, and accepts once descriptors are back. The
 * one record of it feeds both consumers: the time (extra-info) and the
 * subscriber (controller events), told once per episode, by accept() and
 * by socket() alike. */
static int n_accepted, n_warn, n_exhausted, last_exhausted_err;
static void
exhausted_cb(int err, void *arg)
{
  (void)arg;
  n_exhausted++;
  last_exhausted_err = err;
}
static conn_t *fd_conns[4];
static void
count_accept(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  ck_assert_int_lt(n_accepted, 4);
  fd_conns[n_accepted++] = conn_new_accepted(L, NULL, fd, peer, echo_cb, NULL);
  evloop_exit(L);
}
static void
warn_hook(log_severity_t sev, const char *msg, void *arg)
{
  (void)arg;
  if (sev >= LOG_SEV_WARN && strstr(msg, "pausing accepts"))
    n_warn++;
}
static struct rlimit saved_lim;
static int spins;
static void
restore_cb(void *arg)
{
  (void)arg;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved_lim), 0);
}
static void
spin_cb(void *arg)
{
  (void)arg;
  spins++; /* how many loop iterations ran while paused */
}

START_TEST(test_listener_emfile)
{
  L = evloop_new();
  n_accepted = n_warn = n_exhausted = 0;
  conn_set_fd_exhausted_hook(exhausted_cb, NULL);
  time_t before = time(NULL);
  start_listener(count_accept);
  log_set_hook(LOG_SEV_WARN, warn_hook, NULL);
  const char *err = NULL;
  conn_t *c = conn_connect(L, NULL, listener_addr(lst), eof_client_cb,
                           &(struct client){0}, &err);
  ck_assert_ptr_nonnull(c);
  /* Leave no free descriptor: the next accept4() fails with EMFILE. */
  int probe = dup(conn_fd(c));
  ck_assert_int_ge(probe, 0);
  close(probe);
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &saved_lim), 0);
  struct rlimit low = saved_lim;
  low.rlim_cur = (rlim_t)probe;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  ck_assert_int_eq(dup(conn_fd(c)), -1);
  ck_assert_int_eq(errno, EMFILE);
  /* Restore after 300 ms; the listener retries 1 s after the failure. */
  evloop_timer_t *restore = evloop_timer_new(L, restore_cb, NULL);
  evloop_timer_schedule(restore, 300000);
  evloop_timer_t *spin = evloop_timer_new(L, spin_cb, NULL);
  evloop_timer_schedule_periodic(spin, 50000);
  evloop_timer_t *wd = watchdog("emfile");
  uint64_t t0 = evloop_now_us(L);
  ck_assert_int_eq(evloop_run(L), 0);
  uint64_t dt = evloop_now_us(L) - t0;
  ck_assert_int_eq(n_accepted, 1);
  ck_assert_int_eq(n_warn, 1);
  ck_assert_uint_ge(dt, 900000); /* waited for the pause */
  ck_assert_int_le(spins, 40);   /* ~25 timer ticks, no busy loop */
  ck_assert_int_eq(n_exhausted, 1);
  ck_assert_int_eq(last_exhausted_err, EMFILE);
  ck_assert_int_ge(conn_last_fd_exhausted(), before);
  /* After the accept, a new episode: socket() failing reports it, once. */
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  ck_assert_ptr_null(conn_connect(L, NULL, listener_addr(lst), eof_client_cb,
                                  &(struct client){0}, &err));
  ck_assert_ptr_null(conn_connect(L, NULL, listener_addr(lst), eof_client_cb,
                                  &(struct client){0}, &err));
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved_lim), 0);
  ck_assert_int_eq(n_exhausted, 2);
  conn_set_fd_exhausted_hook(NULL, NULL);
  log_set_hook(LOG_SEV_WARN, NULL, NULL);
  conn_free(fd_conns[0]);
  conn_free(c);
  listener_free(lst);
  evloop_timer_free(restore);
  evloop_timer_free(spin);
  evloop_timer_free(wd);
  evloop_free(L);
}
END_TEST

static void
other_exhausted_cb(int err, void *arg)
{
  (void)err;
  (void)arg;
}

/* One subscriber to descriptor exhaustion: the same one again is fine, a
 * different one is refused and the first stays; after removal another may
 * subscribe. */
START_TEST(test_fd_exhausted_one_subscriber)
{
  int a, b;
  ck_assert_int_eq(conn_set_fd_exhausted_hook(exhausted_cb, &a), 0);
  ck_assert_int_eq(conn_set_fd_exhausted_hook(exhausted_cb, &a), 0);
  ck_assert_int_eq(conn_set_fd_exhausted_hook(other_exhausted_cb, &a), -1);
  ck_assert_int_eq(conn_set_fd_exhausted_hook(exhausted_cb, &b), -1);
  n_exhausted = 0;
  conn_note_fd_exhausted(EMFILE);
  ck_assert_int_eq(n_exhausted, 1); /* the first subscriber was kept */
  ck_assert_int_eq(conn_set_fd_exhausted_hook(NULL, NULL), 0);
  ck_assert_int_eq(conn_set_fd_exhausted_hook(other_exhausted_cb, &b), 0);
  ck_assert_int_eq(conn_set_fd_exhausted_hook(NULL, NULL), 0);
}
END_TEST

Suite *
suite_net(void)
{
  Suite *s = suite_create("net");
  TCase *tc = tcase_create("address");
  tcase_add_test(tc, test_addr_parse_fmt);
  tcase_add_test(tc, test_addr_parse_ip_bracketed);
  tcase_add_test(tc, test_addr_sockaddr_eq);
  tcase_add_test(tc, test_addr_classify);
  suite_add_tcase(s, tc);
  tc = tcase_create("conn");
  tcase_set_timeout(tc, 10);
  tcase_add_loop_test(tc, test_plain_echo, 0, 2); /* IPv4, IPv6 */
  tcase_add_test(tc, test_connect_refused);
  tcase_add_loop_test(tc, test_peer_close_eof, 0, 2);
  tcase_add_test(tc, test_backpressure);
  tcase_add_test(tc, test_listener_emfile);
  tcase_add_test(tc, test_fd_exhausted_one_subscriber);
  suite_add_tcase(s, tc);
  return s;
}
