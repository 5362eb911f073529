/* SPDX-License-Identifier: BSD-3-Clause */
/* check_client.c -- the SocksPort client's parts (feature/client,
 * client_internal.h) that run without a Tor network:
 *   - client_socks.c: a SOCKS5 connection (a socketpair handed to the
 *     listener's accept callback) whose CONNECT finds no circuit (no
 *     consensus) gets "host unreachable"; a RESOLVE gets a failure reply;
 *     the statistics count both; a SocksPort line's flags choose the
 *     SOCKS5 method (PreferSOCKSNoAuth, NoIsolateSOCKSAuth) and refuse
 *     requests (NoDNSRequest, NoIPv4Traffic) with error 2;
 *   - client_pool.c: predicted ports (a stream's port is remembered, the
 *     least recently asked one is forgotten when all slots are taken);
 *   - client_conflux.c: a leg without a built circuit is "blocked" for the
 *     conflux schedulers;
 *   - the controller observers (streams, lookups, conflux links, build
 *     timeout, MeasureMe answers) are single slots that refuse a second
 *     subscriber;
 *   - client_measureme.c: MeasureMe answers from the hops asked reach the
 *     observer; garbage ones (a hop not asked, a wrong label, bodies that
 *     do not parse) are reported as errors and counted, never trusted.
 * Circuits and conflux sets over real relays are the integration tests'
 * (socks-client.sh, conflux-client.sh, client-preemptive.sh).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "feature/client/client.h"
#include "feature/client/client_internal.h"
#include "feature/client/socks_proto.h"
#include "feature/measureme/measureme.h"
#include "lib/evloop/evloop.h"

Suite *suite_client(void);

static struct {
  evloop_t *loop;
  int peer;               /* our end of the SOCKS connection */
  uint8_t got[64];
  size_t n_got, want;
  evloop_timer_t *poll, *deadline;
} S;

static void
poll_cb(void *arg)
{
  (void)arg;
  ssize_t r = read(S.peer, S.got + S.n_got, sizeof(S.got) - S.n_got);
  if (r > 0)
    S.n_got += (size_t)r;
  if (S.n_got >= S.want)
    evloop_exit(S.loop);
}

static void
deadline_cb(void *arg)
{
  (void)arg;
  evloop_exit(S.loop);
}

static void
setup(void)
{
  memset(&S, 0, sizeof(S));
  S.loop = evloop_new();
  client_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.socks_ports.n = 1;
  cfg.socks_ports.port[0].iso = CLIENT_ISO_DEFAULT;
  ck_assert_int_eq(
      pc_addr_parse_ip(&cfg.socks_ports.port[0].addr, "127.0.0.1", 0), 0);
  cfg.max_circuit_dirtiness = 600;
  /* Streams without a path wait SocksTimeout (1 s here) before failing. */
  cfg.socks_timeout = 1;
  const char *err = NULL;
  ck_assert_int_eq(client_init(S.loop, &cfg, &err, NULL), 0);
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  S.peer = sv[1];
  fcntl(S.peer, F_SETFL, O_NONBLOCK);
  pc_addr_t peer;
  memset(&peer, 0, sizeof(peer));
  client_socks_accept(sv[0], &peer, NULL);
  S.poll = evloop_timer_new(S.loop, poll_cb, NULL);
  S.deadline = evloop_timer_new(S.loop, deadline_cb, NULL);
}

static void
teardown(void)
{
  client_shutdown();
  /* Connections closed after flushing finish in the loop. */
  close(S.peer);
  evloop_timer_schedule(S.deadline, 100000);
  evloop_run(S.loop);
  evloop_timer_free_(S.poll);
  evloop_timer_free_(S.deadline);
  evloop_free_(S.loop);
}

/* Send bytes, then run the loop until `want` bytes came back (5 s max;
 * a stream without a path fails after SocksTimeout, 1 s here). */
static void
exchange(const uint8_t *b, size_t n, size_t want)
{
  ck_assert_int_eq(write(S.peer, b, n), (ssize_t)n);
  S.want = want;
  evloop_timer_schedule_periodic(S.poll, 2000);
  evloop_timer_schedule(S.deadline, 5 * 1000000);
  evloop_run(S.loop);
  evloop_timer_cancel(S.poll);
  evloop_timer_cancel(S.deadline);
  ck_assert_uint_ge(S.n_got, want);
}

/* SOCKS5 greeting, no authentication. */
static void
socks5_hello(void)
{
  static const uint8_t hello[] = {5, 1, 0};
  exchange(hello, sizeof(hello), 2);
  ck_assert_uint_eq(S.got[0], 5);
  ck_assert_uint_eq(S.got[1], 0);
}

/* One stream failed and the reply said so. */
static void
check_one_failure(uint8_t rep)
{
  ck_assert_uint_eq(S.got[2], 5);
  if (rep)
    ck_assert_uint_eq(S.got[3], rep);
  else
    ck_assert_uint_ne(S.got[3], SOCKS5_SUCCEEDED);
  client_stats_t st;
  client_get_stats(&st);
  ck_assert_uint_eq(st.n_streams_failed, 1);
}

static int
port_predicted(uint16_t port)
{
  for (int i = 0; i < PREDICTED_PORTS_MAX; i++)
    if (client_g.predicted[i].last_us && client_g.predicted[i].port == port)
      return 1;
  return 0;
}

struct seen_streams {
  int n;
  client_stream_info_t last;
};

static void
collect_stream(const client_stream_info_t *si, void *arg)
{
  struct seen_streams *seen = arg;
  seen->n++;
  seen->last = *si;
  seen->last.address = NULL; /* not ours to keep */
}

/* Without a consensus there is no path: the stream waits (listed as NEW,
 * as tor lists a stream waiting for a circuit) and fails only after
 * SocksTimeout (1 s in setup; the client's timer ticks every 2 s). */
START_TEST(test_connect_without_consensus)
{
  socks5_hello();
  /* CONNECT 127.0.0.1:8080 */
  static const uint8_t req[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90};
  uint64_t t0 = evloop_now_us(S.loop);
  ck_assert_int_eq(write(S.peer, req, sizeof(req)), (ssize_t)sizeof(req));
  /* Half a second in: no reply yet, and the stream is listed. */
  evloop_timer_schedule(S.deadline, 500000);
  evloop_run(S.loop);
  ck_assert_uint_eq(read(S.peer, S.got, sizeof(S.got)) > 0, 0);
  struct seen_streams seen;
  memset(&seen, 0, sizeof(seen));
  client_foreach_stream(collect_stream, &seen);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_uint_eq(seen.last.port, 8080);
  ck_assert_int_eq(seen.last.status, CLIENT_STREAM_NEW);
  ck_assert_uint_eq(seen.last.circ_gid, 0);
  client_stats_t st;
  client_get_stats(&st);
  ck_assert_uint_eq(st.n_streams_waited_path, 1);
  ck_assert_uint_eq(st.n_streams_failed, 0);
  /* Then the reply: host unreachable, after SocksTimeout. */
  S.want = 2 + 10;
  evloop_timer_schedule_periodic(S.poll, 2000);
  evloop_timer_schedule(S.deadline, 6 * 1000000);
  evloop_run(S.loop);
  evloop_timer_cancel(S.poll);
  evloop_timer_cancel(S.deadline);
  ck_assert_uint_ge(S.n_got, 2 + 10);
  ck_assert_uint_ge(evloop_now_us(S.loop) - t0, 1000000);
  check_one_failure(SOCKS5_HOST_UNREACHABLE);
  client_get_stats(&st);
  ck_assert_uint_eq(st.n_socks_conns, 1);
  ck_assert_uint_eq(st.n_streams_connected, 0);
  ck_assert_uint_eq(st.n_circuits, 0);
  /* The port is predicted for preemptive circuits, as is 80 from start. */
  ck_assert(port_predicted(8080));
  ck_assert(port_predicted(80));
}
END_TEST

static void
count_stream_events(const client_stream_info_t *si, void *arg)
{
  (void)si;
  ++*(int *)arg;
}

static void
other_stream_observer(const client_stream_info_t *si, void *arg)
{
  count_stream_events(si, arg);
}

/* The stream observer is one slot: a second subscriber is refused (and
 * is never called) instead of silently taking the first one's place. */
START_TEST(test_stream_observer_refuse_second)
{
  int a = 0, b = 0;
  ck_assert_int_eq(client_set_stream_observer(count_stream_events, &a), 0);
  ck_assert_int_eq(client_set_stream_observer(count_stream_events, &a), 0);
  ck_assert_int_eq(client_set_stream_observer(count_stream_events, &b), -1);
  ck_assert_int_eq(client_set_stream_observer(other_stream_observer, &b),
                   -1);
  socks5_hello();
  static const uint8_t req[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90};
  exchange(req, sizeof(req), 2 + 10);
  check_one_failure(SOCKS5_HOST_UNREACHABLE);
  ck_assert_int_gt(a, 0);
  ck_assert_int_eq(b, 0);
  ck_assert_int_eq(client_set_stream_observer(NULL, NULL), 0);
  ck_assert_int_eq(client_set_stream_observer(other_stream_observer, &b),
                   0);
  ck_assert_int_eq(client_set_stream_observer(NULL, NULL), 0);
}
END_TEST

static void
res_obs1(const client_resolve_result_t *r, void *arg)
{
  (void)r;
  (void)arg;
}
static void
res_obs2(const client_resolve_result_t *r, void *arg)
{
  (void)r;
  (void)arg;
}
static void
link_obs1(const struct origin_circuit_t *oc, void *arg)
{
  (void)oc;
  (void)arg;
}
static void
link_obs2(const struct origin_circuit_t *oc, void *arg)
{
  (void)oc;
  (void)arg;
}
static void
cbt_obs1(cbt_event_t ev, const cbt_info_t *info, void *arg)
{
  (void)ev;
  (void)info;
  (void)arg;
}
static void
cbt_obs2(cbt_event_t ev, const cbt_info_t *info, void *arg)
{
  (void)ev;
  (void)info;
  (void)arg;
}

/* The client's other observers (lookups, conflux links, build timeout)
 * are single slots too: a second one is refused, not swapped in. */
START_TEST(test_other_observers_refuse_second)
{
  int a, b;
  ck_assert_int_eq(client_set_resolve_observer(res_obs1, &a), 0);
  ck_assert_int_eq(client_set_resolve_observer(res_obs1, &a), 0);
  ck_assert_int_eq(client_set_resolve_observer(res_obs1, &b), -1);
  ck_assert_int_eq(client_set_resolve_observer(res_obs2, &a), -1);
  ck_assert_int_eq(client_set_resolve_observer(NULL, NULL), 0);
  ck_assert_int_eq(client_set_resolve_observer(res_obs2, &b), 0);
  ck_assert_int_eq(client_set_resolve_observer(NULL, NULL), 0);

  ck_assert_int_eq(client_set_conflux_link_observer(link_obs1, &a), 0);
  ck_assert_int_eq(client_set_conflux_link_observer(link_obs1, &a), 0);
  ck_assert_int_eq(client_set_conflux_link_observer(link_obs1, &b), -1);
  ck_assert_int_eq(client_set_conflux_link_observer(link_obs2, &a), -1);
  ck_assert_int_eq(client_set_conflux_link_observer(NULL, NULL), 0);
  ck_assert_int_eq(client_set_conflux_link_observer(link_obs2, &b), 0);
  ck_assert_int_eq(client_set_conflux_link_observer(NULL, NULL), 0);

  ck_assert_int_eq(client_set_buildtimeout_observer(cbt_obs1, &a), 0);
  ck_assert_int_eq(client_set_buildtimeout_observer(cbt_obs1, &a), 0);
  ck_assert_int_eq(client_set_buildtimeout_observer(cbt_obs1, &b), -1);
  ck_assert_int_eq(client_set_buildtimeout_observer(cbt_obs2, &a), -1);
  ck_assert_int_eq(client_set_buildtimeout_observer(NULL, NULL), 0);
  ck_assert_int_eq(client_set_buildtimeout_observer(cbt_obs2, &b), 0);
  ck_assert_int_eq(client_set_buildtimeout_observer(NULL, NULL), 0);
}
END_TEST

static struct {
  int n, n_err;
  int hop;
  uint64_t gid;
  uint8_t type, result;
  unsigned n_records;
  char error[128];
} MM;
static void
mm_obs(const client_measureme_event_t *ev, void *arg)
{
  (void)arg;
  MM.n++;
  MM.hop = ev->hop;
  MM.gid = ev->circ_gid;
  if (!ev->answer) {
    MM.n_err++;
    ck_assert_ptr_nonnull(ev->error);
    snprintf(MM.error, sizeof(MM.error), "%s", ev->error);
    return;
  }
  MM.type = ev->answer->type;
  MM.result = ev->answer->result;
  MM.n_records = ev->answer->n_records;
}

START_TEST(test_measureme_answers)
{
  int a, b;
  ck_assert_int_eq(client_set_measureme_observer(mm_obs, &a), 0);
  ck_assert_int_eq(client_set_measureme_observer(mm_obs, &b), -1);
  ck_assert_int_eq(client_set_measureme_observer(NULL, NULL), 0);
  ck_assert_int_eq(client_set_measureme_observer(mm_obs, NULL), 0);
  memset(&MM, 0, sizeof(MM));
  client_stats_t st0, st;
  client_get_stats(&st0);
  cleg_t leg;
  memset(&leg, 0, sizeof(leg));
  origin_circuit_t circ;
  memset(&circ, 0, sizeof(circ));
  circ.base.gid = 77;
  memcpy(leg.mm_label, "labelabc", 8);
  leg.mm_asked = 0x2; /* hop 2 only */
  measureme_answer_t ans;
  memset(&ans, 0, sizeof(ans));
  ans.type = MEASUREME_ANSWER_STATUS;
  memcpy(ans.label, "labelabc", 8);
  ans.result = MEASUREME_ACCEPTED;
  uint8_t body[MEASUREME_ANSWER_MAX_LEN];
  size_t len = measureme_answer_encode(body, &ans);
  /* From hop 2 (index 1): taken. */
  client_measureme_answer(&leg, &circ, 1, body, len);
  ck_assert_int_eq(MM.n, 1);
  ck_assert_int_eq(MM.n_err, 0);
  ck_assert_int_eq(MM.hop, 2);
  ck_assert_uint_eq(MM.gid, 77);
  ck_assert_uint_eq(MM.type, MEASUREME_ANSWER_STATUS);
  ck_assert_uint_eq(MM.result, MEASUREME_ACCEPTED);
  /* Records. */
  ans.type = MEASUREME_ANSWER_RECORDS;
  ans.n_records = 3;
  len = measureme_answer_encode(body, &ans);
  client_measureme_answer(&leg, &circ, 1, body, len);
  ck_assert_int_eq(MM.n, 2);
  ck_assert_uint_eq(MM.n_records, 3);
  /* From hop 1, which was not asked: garbage. */
  client_measureme_answer(&leg, &circ, 0, body, len);
  ck_assert_int_eq(MM.n_err, 1);
  ck_assert_int_eq(MM.hop, 1);
  ck_assert_str_eq(MM.error, "an answer from a hop that was not asked");
  /* Out-of-range hops never index past the bit mask. */
  client_measureme_answer(&leg, &circ, 8, body, len);
  client_measureme_answer(&leg, &circ, -1, body, len);
  ck_assert_int_eq(MM.n_err, 3);
  /* Another label. */
  body[2] ^= 1;
  client_measureme_answer(&leg, &circ, 1, body, len);
  ck_assert_int_eq(MM.n_err, 4);
  ck_assert_str_eq(MM.error, "the label is not the one sent");
  body[2] ^= 1;
  /* Cut short, or random bytes: errors, never a crash. */
  client_measureme_answer(&leg, &circ, 1, body, len - 1);
  ck_assert_str_eq(MM.error, "answer shorter than its records");
  client_measureme_answer(&leg, &circ, 1, body, 0);
  ck_assert_str_eq(MM.error, "answer too short");
  uint32_t x = 7;
  for (int k = 0; k < 2000; k++) {
    uint8_t g[498];
    size_t n = (x = x * 1103515245 + 12345) % sizeof(g);
    for (size_t i = 0; i < n; i++)
      g[i] = (uint8_t)((x = x * 1103515245 + 12345) >> 16);
    client_measureme_answer(&leg, &circ, 1, g, n);
  }
  ck_assert_int_eq(MM.n, 2 + 6 + 2000);
  client_get_stats(&st);
  ck_assert_uint_eq(st.n_measureme_answers - st0.n_measureme_answers, 2);
  ck_assert_uint_eq(st.n_measureme_garbage - st0.n_measureme_garbage,
                    6 + 2000);
  ck_assert_int_eq(client_set_measureme_observer(NULL, NULL), 0);
}
END_TEST

/* The FAILED stream event says why, locally: NOROUTE without a
 * consensus (REASON= in control-spec's STREAM event). */
static int last_status = -1, last_reason = -2, last_remote = -1;
static void
note_stream_event(const client_stream_info_t *si, void *arg)
{
  (void)arg;
  last_status = (int)si->status;
  last_reason = si->reason;
  last_remote = si->reason_remote;
}

START_TEST(test_stream_failed_reason)
{
  ck_assert_int_eq(client_set_stream_observer(note_stream_event, NULL), 0);
  socks5_hello();
  static const uint8_t req[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90};
  exchange(req, sizeof(req), 2 + 10);
  check_one_failure(SOCKS5_HOST_UNREACHABLE);
  ck_assert_int_eq(last_status, CLIENT_STREAM_FAILED);
  ck_assert_int_eq(last_reason, END_STREAM_REASON_NOROUTE);
  ck_assert_int_eq(last_remote, 0);
  ck_assert_int_eq(client_set_stream_observer(NULL, NULL), 0);
}
END_TEST

/* A new SOCKS connection (replacing the one setup made) on a SocksPort
 * line with the given flags. */
static client_port_t flag_port;
static void
reconnect_on(const char *line)
{
  char *err = NULL;
  ck_assert_int_eq(client_port_parse(line, &flag_port, &err), 0);
  close(S.peer);
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  S.peer = sv[1];
  fcntl(S.peer, F_SETFL, O_NONBLOCK);
  S.n_got = 0;
  pc_addr_t peer;
  memset(&peer, 0, sizeof(peer));
  client_socks_accept(sv[0], &peer, &flag_port);
}

/* SOCKS5 method choice by the line's flags (tor): username/password over
 * no-auth when both are offered, unless PreferSOCKSNoAuth or
 * NoIsolateSOCKSAuth. */
START_TEST(test_port_method_choice)
{
  static const uint8_t both[] = {5, 2, 0, 2};
  const struct {
    const char *line;
    uint8_t method;
  } cases[] = {
      {"9050", 2},
      {"9050 PreferSOCKSNoAuth", 0},
      {"9050 NoIsolateSOCKSAuth", 0},
      {"9050 NoIsolateSOCKSAuth IsolateSOCKSAuth", 2},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    reconnect_on(cases[i].line);
    exchange(both, sizeof(both), 2);
    ck_assert_uint_eq(S.got[0], 5);
    ck_assert_msg(S.got[1] == cases[i].method, "%s: method %u",
                  cases[i].line, S.got[1]);
  }
}
END_TEST

/* NoDNSRequest: a CONNECT to a host name gets "not allowed by ruleset"
 * (2) at once; NoIPv4Traffic refuses an IPv4 address the same way. */
START_TEST(test_port_refuses_request)
{
  reconnect_on("9050 NoDNSRequest");
  socks5_hello();
  static const uint8_t name[] = {5, 1, 0, 3, 7, 'e', 'x', 'a', 'm',
                                 'p', 'l', 'e', 0, 80};
  exchange(name, sizeof(name), 2 + 4);
  check_one_failure(2);
  reconnect_on("9050 NoIPv4Traffic");
  socks5_hello();
  static const uint8_t v4[] = {5, 1, 0, 1, 192, 0, 2, 7, 0, 80};
  exchange(v4, sizeof(v4), 2 + 4);
  ck_assert_uint_eq(S.got[3], 2);
}
END_TEST

/* tor's RESOLVE extension (command 0xF0) for "example" port 0: no
 * consensus, so no exit to ask: a SOCKS error. */
START_TEST(test_resolve_without_exit)
{
  socks5_hello();
  static const uint8_t req[] = {5, 0xf0, 0, 3, 7, 'e', 'x', 'a', 'm',
                                'p', 'l', 'e', 0, 0};
  exchange(req, sizeof(req), 2 + 4);
  check_one_failure(0);
}
END_TEST

/* RESOLVE of an IP address is answered at once, with that address. */
START_TEST(test_resolve_ip_literal)
{
  socks5_hello();
  static const uint8_t req[] = {5, 0xf0, 0, 1, 192, 0, 2, 7, 0, 0};
  exchange(req, sizeof(req), 2 + 10);
  static const uint8_t want[] = {5, 0, 0, 1, 192, 0, 2, 7, 0, 0};
  ck_assert_mem_eq(S.got + 2, want, sizeof(want));
  client_stats_t st;
  client_get_stats(&st);
  ck_assert_uint_eq(st.n_streams_failed, 0);
}
END_TEST

START_TEST(test_predicted_ports)
{
  /* setup() predicted 80 at start; fill the other slots. */
  uint64_t t = 1000;
  for (uint16_t p = 1; p < PREDICTED_PORTS_MAX; p++)
    client_predict_port(p, t++);
  for (uint16_t p = 1; p < PREDICTED_PORTS_MAX; p++)
    ck_assert(port_predicted(p));
  ck_assert(port_predicted(80));
  /* Asking for 80 again makes it the most recent; port 1 is now the
   * least recently asked and goes first. */
  client_predict_port(80, t++);
  client_predict_port(443, t++);
  ck_assert(port_predicted(443));
  ck_assert(port_predicted(80));
  ck_assert(!port_predicted(1));
  ck_assert(port_predicted(2));
}
END_TEST

START_TEST(test_leg_without_circuit_blocked)
{
  cleg_t leg;
  memset(&leg, 0, sizeof(leg));
  cfx_leg_state_t st;
  memset(&st, 0xff, sizeof(st));
  cleg_state(&leg, &st);
  ck_assert_int_eq(st.blocked, 1);
  ck_assert_uint_eq(st.cwnd, 0);
  ck_assert_ptr_null(cleg_cc(&leg));
}
END_TEST

/* When a conflux set takes streams: all legs linked; or, with streams
 * waiting, once the slower legs took as long again as the first. */
START_TEST(test_cfx_ready_rule)
{
  const uint64_t ms = 1000;
  uint64_t at = 0;
  /* No leg linked: never ready, whatever waits. */
  ck_assert_int_eq(client_cfx_ready_rule(0, 2, 1, 0, 0, 99999 * ms, &at),
                   CFX_READY_NOT_YET);
  /* Every leg linked: ready. */
  ck_assert_int_eq(client_cfx_ready_rule(2, 0, 0, 0, 900 * ms, 900 * ms, &at),
                   CFX_READY_NOW);
  /* One leg still linking and nobody waiting (a preemptive set): wait for
   * it however long it takes (tor's rule). */
  ck_assert_int_eq(
      client_cfx_ready_rule(1, 1, 0, 1000 * ms, 1900 * ms, 60000 * ms, &at),
      CFX_READY_NOT_YET);
  /* Streams wait: launched at 1.0 s, first leg linked at 1.9 s, so the
   * other has until 2.8 s. */
  at = 0;
  ck_assert_int_eq(
      client_cfx_ready_rule(1, 1, 1, 1000 * ms, 1900 * ms, 2000 * ms, &at),
      CFX_READY_LATER);
  ck_assert_uint_eq(at, 2800 * ms);
  ck_assert_int_eq(
      client_cfx_ready_rule(1, 1, 1, 1000 * ms, 1900 * ms, 2799 * ms, &at),
      CFX_READY_LATER);
  ck_assert_int_eq(
      client_cfx_ready_rule(1, 1, 1, 1000 * ms, 1900 * ms, 2800 * ms, &at),
      CFX_READY_NOW);
  /* A first leg that linked at once still leaves the floor. */
  ck_assert_int_eq(
      client_cfx_ready_rule(1, 1, 1, 1000 * ms, 1010 * ms, 1100 * ms, &at),
      CFX_READY_LATER);
  ck_assert_uint_eq(at, 1010 * ms + CFX_READY_GRACE_MIN_US);
  /* Two of three legs linked, one pending: the same rule. */
  ck_assert_int_eq(
      client_cfx_ready_rule(2, 1, 1, 0, 500 * ms, 1000 * ms, &at),
      CFX_READY_NOW);
}
END_TEST

Suite *
suite_client(void)
{
  Suite *s = suite_create("client");
  TCase *tc = tcase_create("socks");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_connect_without_consensus);
  tcase_add_test(tc, test_resolve_without_exit);
  tcase_add_test(tc, test_resolve_ip_literal);
  tcase_add_test(tc, test_predicted_ports);
  tcase_add_test(tc, test_leg_without_circuit_blocked);
  tcase_add_test(tc, test_cfx_ready_rule);
  tcase_add_test(tc, test_stream_observer_refuse_second);
  tcase_add_test(tc, test_other_observers_refuse_second);
  tcase_add_test(tc, test_stream_failed_reason);
  tcase_add_test(tc, test_measureme_answers);
  tcase_add_test(tc, test_port_method_choice);
  tcase_add_test(tc, test_port_refuses_request);
  suite_add_tcase(s, tc);
  return s;
}
