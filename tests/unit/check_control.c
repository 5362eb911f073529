/* SPDX-License-Identifier: BSD-3-Clause */
/* check_control.c -- the control protocol's syntax (control_proto.h), its
 * authentication secrets (control_auth.h) and the ControlPort value
 * parser (control.h). The password vectors come from tor 0.4.9.11's
 * `tor --hash-password`, the SAFECOOKIE vector from Python's hmac module
 * (hmac.new(KEY, cookie + client_nonce + server_nonce, sha256)); the
 * protocol end to end is checked with stem in
 * tests/integration/control-port.sh, and here over a real ControlPort for
 * the STATUS_GENERAL BUG and CLOCK_SKEW events. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture_relay.h"

#include "core/or/circuit.h"
#include "core/or/scheduler.h"
#include "feature/control/control.h"
#include "feature/control/control_auth.h"
#include "feature/control/control_cellstats.h"
#include "feature/control/control_circbw.h"
#include "feature/control/control_proto.h"
#include "feature/control/metrics.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"

Suite *suite_control(void);

static int
take(buf_t *b, size_t max, control_cmd_t *cmd, const char *input)
{
  if (input)
    buf_add(b, input, strlen(input));
  return control_proto_take_cmd(b, max, cmd);
}

START_TEST(test_take_lines)
{
  buf_t *b = buf_new();
  control_cmd_t cmd;
  ck_assert_int_eq(take(b, 1024, &cmd, "getinfo version\r\nQUIT\n"),
                   CONTROL_TAKE_OK);
  ck_assert_str_eq(cmd.keyword, "GETINFO");
  ck_assert_str_eq(cmd.args, "version");
  ck_assert_int_eq(cmd.has_data, 0);
  control_cmd_clear(&cmd);
  ck_assert_int_eq(take(b, 1024, &cmd, NULL), CONTROL_TAKE_OK);
  ck_assert_str_eq(cmd.keyword, "QUIT");
  ck_assert_str_eq(cmd.args, "");
  control_cmd_clear(&cmd);
  ck_assert_int_eq(take(b, 1024, &cmd, NULL), CONTROL_TAKE_NEED_MORE);
  /* A partial line stays in the buffer until its end arrives. */
  ck_assert_int_eq(take(b, 1024, &cmd, "SETEVENTS  BW"),
                   CONTROL_TAKE_NEED_MORE);
  ck_assert_uint_eq(buf_datalen(b), 13);
  ck_assert_int_eq(take(b, 1024, &cmd, " NOTICE\r\n"), CONTROL_TAKE_OK);
  ck_assert_str_eq(cmd.args, "BW NOTICE");
  control_cmd_clear(&cmd);
  ck_assert_uint_eq(buf_datalen(b), 0);
  buf_free(b);
}
END_TEST

START_TEST(test_take_too_long)
{
  buf_t *b = buf_new();
  control_cmd_t cmd;
  char line[200];
  memset(line, 'A', sizeof(line));
  buf_add(b, line, sizeof(line));
  ck_assert_int_eq(take(b, 100, &cmd, NULL), CONTROL_TAKE_TOO_LONG);
  buf_clear(b);
  /* exactly the limit, newline included, is fine */
  buf_add(b, line, 98);
  ck_assert_int_eq(take(b, 100, &cmd, "\r\n"), CONTROL_TAKE_OK);
  control_cmd_clear(&cmd);
  /* a data block without its "." line is bounded too */
  ck_assert_int_eq(take(b, 100, &cmd, "+LOADCONF\r\n"),
                   CONTROL_TAKE_NEED_MORE);
  buf_add(b, line, 95);
  ck_assert_int_eq(take(b, 100, &cmd, "\r\n"), CONTROL_TAKE_TOO_LONG);
  buf_free(b);
}
END_TEST

START_TEST(test_take_data)
{
  buf_t *b = buf_new();
  control_cmd_t cmd;
  ck_assert_int_eq(take(b, 1024, &cmd, "+loadconf\r\nLog notice\r\n..x\r\n"),
                   CONTROL_TAKE_NEED_MORE);
  ck_assert_int_eq(take(b, 1024, &cmd, ".\r\nQUIT\r\n"), CONTROL_TAKE_OK);
  ck_assert_str_eq(cmd.keyword, "LOADCONF");
  ck_assert_int_eq(cmd.has_data, 1);
  ck_assert_str_eq(cmd.data, "Log notice\n.x\n");
  control_cmd_clear(&cmd);
  ck_assert_int_eq(take(b, 1024, &cmd, NULL), CONTROL_TAKE_OK);
  ck_assert_str_eq(cmd.keyword, "QUIT");
  control_cmd_clear(&cmd);
  buf_free(b);
}
END_TEST

START_TEST(test_quote)
{
  size_t len = 0;
  const char *end = NULL;
  char *s = control_proto_unquote("\"a \\\"b\\\" \\\\ \\n\\101\\0x\" rest", &len,
                                  &end);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(len, 12);
  ck_assert_mem_eq(s, "a \"b\" \\ \nA\0x", 12);
  ck_assert_str_eq(end, " rest");
  free(s);
  ck_assert_ptr_null(control_proto_unquote("\"unterminated", &len, &end));
  ck_assert_ptr_null(control_proto_unquote("\"bad \\q\"", &len, &end));
  ck_assert_ptr_null(control_proto_unquote("\"\\777\"", &len, &end));
  ck_assert_ptr_null(control_proto_unquote("noquote", &len, &end));
  char *q = control_proto_quote("/a b/\"c\"\\\n\x01");
  ck_assert_str_eq(q, "\"/a b/\\\"c\\\"\\\\\\n\\001\"");
  s = control_proto_unquote(q, &len, &end);
  ck_assert_str_eq(s, "/a b/\"c\"\\\n\x01");
  free(s);
  free(q);
}
END_TEST

START_TEST(test_args)
{
  const char *p = "  version \"a b\\\" c\" x=\"1 2\"  ";
  char *a = control_proto_next_arg(&p);
  ck_assert_str_eq(a, "version");
  free(a);
  a = control_proto_next_arg(&p);
  ck_assert_str_eq(a, "\"a b\\\" c\"");
  free(a);
  a = control_proto_next_arg(&p);
  ck_assert_str_eq(a, "x=\"1 2\"");
  char *k = NULL, *v = NULL;
  ck_assert_int_eq(control_proto_kv(a, &k, &v), 0);
  ck_assert_str_eq(k, "x");
  ck_assert_str_eq(v, "1 2");
  free(k);
  free(v);
  free(a);
  ck_assert_ptr_null(control_proto_next_arg(&p));
  ck_assert_int_eq(control_proto_kv("k=\"open", &k, &v), -1);
  ck_assert_int_eq(control_proto_kv("flag", &k, &v), 0);
  ck_assert_str_eq(k, "flag");
  ck_assert_ptr_null(v);
  free(k);
  ck_assert(control_proto_eq("getInfo", "GETINFO"));
  ck_assert(!control_proto_eq("GETINF", "GETINFO"));
}
END_TEST

START_TEST(test_parse_kvs)
{
  control_kv_t *kv = NULL;
  int n = -1;
  char *err = NULL;
  ck_assert_int_eq(control_proto_parse_kvs(
                       " Log=\"info file /tmp/a b\" ContactInfo "
                       "BandwidthRate=2\\ MB  x= ", &kv, &n, &err), 0);
  ck_assert_int_eq(n, 5);
  ck_assert_str_eq(kv[0].key, "Log");
  ck_assert_str_eq(kv[0].value, "info file /tmp/a b");
  ck_assert_str_eq(kv[1].key, "ContactInfo");
  ck_assert_ptr_null(kv[1].value);
  ck_assert_str_eq(kv[2].key, "BandwidthRate");
  ck_assert_str_eq(kv[2].value, "2\\");   /* unquoted: up to the space */
  ck_assert_str_eq(kv[3].key, "MB");
  ck_assert_str_eq(kv[4].key, "x");
  ck_assert_str_eq(kv[4].value, "");
  control_kvs_free(kv, n);
  ck_assert_int_eq(control_proto_parse_kvs("", &kv, &n, &err), 0);
  ck_assert_int_eq(n, 0);
  free(kv);
  ck_assert_int_eq(control_proto_parse_kvs("a=1 b=\"open", &kv, &n, &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "bad quoted value"));
  ck_assert_ptr_null(kv);
  free(err);
  ck_assert_int_eq(control_proto_parse_kvs("=1", &kv, &n, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "without a key"));
  free(err);
}
END_TEST

/* CIRC_BW: differences since the last event, tor's byte accounting (509
 * per cell, relay bodies as DELIVERED, the rest of 498 as OVERHEAD), no
 * event when nothing moved, pctor's fields at the end. */
START_TEST(test_circbw_event)
{
  origin_circuit_t oc;
  memset(&oc, 0, sizeof(oc));
  oc.base.kind = CIRC_KIND_ORIGIN;
  oc.base.gid = 42;
  oc.base.cells_forward = 3;
  oc.base.cells_backward = 5;
  oc.delivered_written = 300;
  oc.delivered_read = 4 * 498 + 10;
  control_circbw_prev_t prev;
  control_circbw_start(&prev, &oc.base);
  ck_assert_ptr_null(control_circbw_event(&oc.base, &prev, "T", 0));
  oc.base.cells_forward += 2;
  oc.delivered_written += 2 * 20;
  oc.base.cells_backward += 10;
  oc.delivered_read += 10 * 498 - 7;
  oc.base.n_queue.cells.n = 4;
  oc.base.n_queue.stats.cells_sent = 2;
  oc.base.n_queue.stats.queued_us_total = 3000;
  char *e = control_circbw_event(&oc.base, &prev,
                                 "2026-11-26T10:00:00.000001", 1);
  ck_assert_ptr_nonnull(e);
  ck_assert_str_eq(e, "CIRC_BW ID=42 READ=5090 WRITTEN=1018 "
                      "TIME=2026-11-26T10:00:00.000001 DELIVERED_READ=4973 "
                      "OVERHEAD_READ=7 DELIVERED_WRITTEN=40 "
                      "OVERHEAD_WRITTEN=956 PCTOR_QUEUE_FWD=4 "
                      "PCTOR_DELAY_US_FWD=1500 PCTOR_EWMA_FWD=0.000");
  free(e);
  /* Nothing new: no event; then only one cell each way. */
  ck_assert_ptr_null(control_circbw_event(&oc.base, &prev, "T", 1));
  oc.base.cells_backward++;
  e = control_circbw_event(&oc.base, &prev, "T", 0);
  ck_assert_str_eq(e, "CIRC_BW ID=42 READ=509 WRITTEN=0 TIME=T "
                      "DELIVERED_READ=0 OVERHEAD_READ=498 "
                      "DELIVERED_WRITTEN=0 OVERHEAD_WRITTEN=0");
  free(e);
  /* A relayed circuit: cells both ways, sent cells from the queues. */
  or_circuit_t rc;
  memset(&rc, 0, sizeof(rc));
  rc.base.kind = CIRC_KIND_OR;
  rc.base.gid = 9;
  control_circbw_start(&prev, &rc.base);
  rc.base.cells_forward = 1;
  rc.base.cells_backward = 2;
  rc.base.n_queue.stats.cells_sent = 1;
  rc.p_queue.stats.cells_sent = 1;
  e = control_circbw_event(&rc.base, &prev, "T", 1);
  ck_assert_str_eq(e, "CIRC_BW ID=9 READ=1527 WRITTEN=1018 TIME=T "
                      "PCTOR_RELAYED=1 PCTOR_QUEUE_FWD=0 "
                      "PCTOR_DELAY_US_FWD=0 PCTOR_EWMA_FWD=0.000 "
                      "PCTOR_QUEUE_BWD=0 PCTOR_DELAY_US_BWD=0 "
                      "PCTOR_EWMA_BWD=0.000");
  free(e);
}
END_TEST

/* STREAM events' REASON / REMOTE_REASON fields, with tor's names. */
/* Whether text matches the extended regular expression re (whole). */
static int
matches(const char *re, const char *text)
{
  regex_t r;
  ck_assert_int_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
  int ok = regexec(&r, text, 0, NULL, 0) == 0;
  regfree(&r);
  return ok;
}

/* control-spec's CONN_BW grammar. */
#define CONNBW_RE "^CONN_BW ID=[0-9]+ TYPE=(OR|DIR|EXIT) READ=[0-9]+ " \
                  "WRITTEN=[0-9]+$"
START_TEST(test_connbw_event)
{
  ck_assert_ptr_null(control_connbw_event(7, "OR", 0, 0));
  char *e = control_connbw_event(7, "OR", 1500, 0);
  ck_assert_str_eq(e, "CONN_BW ID=7 TYPE=OR READ=1500 WRITTEN=0");
  ck_assert(matches(CONNBW_RE, e));
  free(e);
  e = control_connbw_event(18446744073709551615ull, "OR", 1, 2);
  ck_assert(matches(CONNBW_RE, e));
  free(e);
}
END_TEST

/* control-spec's CELL_STATS grammar. */
#define CBT "[a-z0-9_]+:[0-9]+(,[a-z0-9_]+:[0-9]+)*"
#define CELLSTATS_SIDE(d) \
  "( " d "Queue=[0-9]+ " d "Conn=[0-9]+( " d "Added=" CBT ")?" \
  "( " d "Removed=" CBT " " d "Time=" CBT ")?)?"
#define CELLSTATS_RE \
  "^CELL_STATS( ID=[0-9]+)?" CELLSTATS_SIDE("Inbound") \
  CELLSTATS_SIDE("Outbound") "$"
START_TEST(test_cellstats_event)
{
  control_cellstats_side_t in, out;
  memset(&in, 0, sizeof(in));
  memset(&out, 0, sizeof(out));
  /* nothing counted: no event */
  in.present = out.present = 1;
  ck_assert_ptr_null(control_cellstats_event(0, 5, &in, &out));
  /* a relayed circuit: both sides */
  in.circ_id = 2147483650u;
  in.conn_id = 3;
  in.counts.added[CELL_RELAY] = 10;
  in.counts.removed[CELL_RELAY] = 9;
  in.counts.removed_us[CELL_RELAY] = 12999; /* 12.999 ms */
  in.counts.added[CELL_DESTROY] = 1;
  out.circ_id = 77;
  out.conn_id = 4;
  out.counts.added[CELL_RELAY_EARLY] = 2;
  char *e = control_cellstats_event(0, 5, &in, &out);
  ck_assert_str_eq(e, "CELL_STATS InboundQueue=2147483650 InboundConn=3 "
                      "InboundAdded=relay:10,destroy:1 "
                      "InboundRemoved=relay:9 InboundTime=relay:12 "
                      "OutboundQueue=77 OutboundConn=4 "
                      "OutboundAdded=relay_early:2");
  ck_assert(matches(CELLSTATS_RE, e));
  free(e);
  /* an origin circuit: ID, no inbound side; a removed cell that waited
   * under a millisecond has Time 0 */
  memset(&in, 0, sizeof(in));
  memset(&out.counts, 0, sizeof(out.counts));
  out.counts.removed[CELL_RELAY] = 1;
  out.counts.removed_us[CELL_RELAY] = 400;
  e = control_cellstats_event(1, 12, &in, &out);
  ck_assert_str_eq(e, "CELL_STATS ID=12 OutboundQueue=77 OutboundConn=4 "
                      "OutboundRemoved=relay:1 OutboundTime=relay:0");
  ck_assert(matches(CELLSTATS_RE, e));
  free(e);
  /* counts on a side without a channel are not reported */
  out.present = 0;
  ck_assert_ptr_null(control_cellstats_event(1, 12, &in, &out));
  ck_assert(!matches(CELLSTATS_RE, "CELL_STATS InboundAdded=relay:1"));
}
END_TEST

START_TEST(test_stream_reason)
{
  char b[64];
  control_proto_stream_reason(b, sizeof(b), -1, 0);
  ck_assert_str_eq(b, "");
  control_proto_stream_reason(b, sizeof(b), 3, 1);
  ck_assert_str_eq(b, " REASON=END REMOTE_REASON=CONNECTREFUSED");
  control_proto_stream_reason(b, sizeof(b), 8, 0);
  ck_assert_str_eq(b, " REASON=NOROUTE");
  control_proto_stream_reason(b, sizeof(b), 14, 0);
  ck_assert_str_eq(b, " REASON=NOTDIRECTORY");
  control_proto_stream_reason(b, sizeof(b), 0, 0);
  ck_assert_str_eq(b, " REASON=UNKNOWN_0");
  control_proto_stream_reason(b, sizeof(b), 200, 1);
  ck_assert_str_eq(b, " REASON=END REMOTE_REASON=UNKNOWN_200");
  control_proto_stream_reason(b, 8, 3, 1); /* truncated, terminated */
  ck_assert_uint_eq(strlen(b), 7);
}
END_TEST

/* STATUS_GENERAL CLOCK_JUMPED: 20 s or more either way between two
 * one-second ticks, nothing before the first tick. */
START_TEST(test_clock_jump)
{
  ck_assert_int_eq(control_clock_jump_seconds(0, 1700000000), 0);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1700000001), 0);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1700000019), 0);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1700000020), 20);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1700003600),
                   3600);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1699999990), 0);
  ck_assert_int_eq(control_clock_jump_seconds(1700000000, 1699999900),
                   -100);
}
END_TEST

START_TEST(test_replies)
{
  buf_t *b = buf_new();
  control_proto_add_line(b, 250, '+', "ns/all=");
  control_proto_add_data(b, "r x\n.dot\r\n..two\nlast");
  control_proto_add_line(b, 250, ' ', "OK");
  size_t n = buf_datalen(b);
  char *s = calloc(1, n + 1);
  buf_get(b, s, n);
  ck_assert_str_eq(s, "250+ns/all=\r\nr x\r\n..dot\r\n...two\r\nlast\r\n.\r\n"
                      "250 OK\r\n");
  free(s);
  /* an empty block is just the end marker */
  control_proto_add_data(b, "");
  ck_assert_uint_eq(buf_datalen(b), 3);
  buf_free(b);
}
END_TEST

START_TEST(test_password_vectors)
{
  /* tor --hash-password foo / "pc tor" (tor 0.4.9.11) */
  const char *h1 =
      "16:DACBE5B7066A86C7607426E42273EB5066E98185337925342F5A8B38C2";
  const char *h2 =
      "16:01343EE1BEBBDE5D60AE5E30356B300C4BC4CB553DC4DF74F02AF9C17C";
  ck_assert(control_auth_hash_is_valid(h1));
  ck_assert_int_eq(control_auth_check_password(h1, "foo", 3), 1);
  ck_assert_int_eq(control_auth_check_password(h1, "fop", 3), 0);
  ck_assert_int_eq(control_auth_check_password(h1, "foo ", 4), 0);
  ck_assert_int_eq(control_auth_check_password(h2, "pc tor", 6), 1);
  ck_assert_int_eq(control_auth_check_password(h2, "foo", 3), 0);
  /* the same salt gives tor's hash */
  uint8_t salt[8];
  ck_assert_int_eq(base16_decode(salt, 8, h1 + 3, 16), 8);
  char *mine = control_auth_hash_password("foo", 3, salt);
  ck_assert_str_eq(mine, h1);
  free(mine);
  /* malformed */
  ck_assert_int_eq(control_auth_check_password("16:ABC", "foo", 3), -1);
  ck_assert_int_eq(control_auth_check_password(h1 + 1, "foo", 3), -1);
  ck_assert(!control_auth_hash_is_valid(
      "16:XXCBE5B7066A86C7607426E42273EB5066E98185337925342F5A8B38C2"));
  ck_assert(!control_auth_hash_is_valid(""));
}
END_TEST

START_TEST(test_safecookie_vector)
{
  uint8_t cookie[32], cn[32], sn[32], sh[32], ch[32], want[32];
  for (int i = 0; i < 32; i++)
    cookie[i] = (uint8_t)i;
  memset(cn, 0xaa, 32);
  memset(sn, 0x55, 32);
  control_auth_safecookie(cookie, cn, 32, sn, sh, ch);
  base16_decode(want, 32,
                "5F7CB5569957C99373E329258545940F029AF175DA225F4A3125EEBF30C2"
                "4BBA", 64);
  ck_assert_mem_eq(sh, want, 32);
  base16_decode(want, 32,
                "9F99F2C4B75C91123CA5C6C6E3F76A9EF7FBD9471053CBE34454A4269CC3"
                "9F7C", 64);
  ck_assert_mem_eq(ch, want, 32);
}
END_TEST

START_TEST(test_parse_listen)
{
  control_listen_t l;
  char *err = NULL;
  char a[PC_ADDR_STR_LEN];
  ck_assert_int_eq(control_parse_listen("9051", 0, &l, &err), 0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_TCP);
  ck_assert_str_eq(pc_addr_fmt(&l.addr, a, sizeof(a), 1), "127.0.0.1:9051");
  ck_assert_int_eq(control_parse_listen("0.0.0.0:9151", 0, &l, &err), 0);
  ck_assert_str_eq(pc_addr_fmt(&l.addr, a, sizeof(a), 1), "0.0.0.0:9151");
  ck_assert_int_eq(control_parse_listen("auto", 0, &l, &err), 0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_TCP);
  ck_assert_uint_eq(l.addr.port, 0);
  ck_assert_int_eq(control_parse_listen("[::1]:auto", 0, &l, &err), 0);
  ck_assert_str_eq(pc_addr_fmt(&l.addr, a, sizeof(a), 1), "[::1]:0");
  ck_assert_int_eq(control_parse_listen("127.0.0.2:auto", 0, &l, &err), 0);
  ck_assert_str_eq(pc_addr_fmt(&l.addr, a, sizeof(a), 1), "127.0.0.2:0");
  ck_assert_int_eq(control_parse_listen("0", 0, &l, &err), 0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_NONE);
  ck_assert_int_eq(control_parse_listen("unix:/run/x/control GroupWritable "
                                        "RelaxDirModeCheck", 0, &l, &err),
                   0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_UNIX);
  ck_assert_str_eq(l.path, "/run/x/control");
  ck_assert_uint_eq(l.flags, CONTROL_UNIX_GROUP_WRITABLE |
                                 CONTROL_UNIX_RELAX_DIR_MODE);
  ck_assert_int_eq(control_parse_listen("/run/x/s", 1, &l, &err), 0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_UNIX);
  const char *bad[] = {"70000", "x:1", "unix:relative", "9051 Flag",
                       "unix:/a Bogus", "x:auto", "[]:auto", "1.2.3.4:0"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err = NULL;
    ck_assert_int_eq(control_parse_listen(bad[i], 0, &l, &err), -1);
    ck_assert_ptr_nonnull(err);
    free(err);
  }
}
END_TEST

START_TEST(test_version_string)
{
  /* stem: ^\d+\.\d+\.\d+(\.\d+)?(-\S*)?( \(\S*\))*$ */
  const char *v = control_version_string();
  ck_assert_int_eq(strncmp(v, CONTROL_TOR_VERSION " (pctor-",
                           strlen(CONTROL_TOR_VERSION) + 8), 0);
  ck_assert_int_eq(v[strlen(v) - 1], ')');
  ck_assert_ptr_null(strchr(v + strlen(CONTROL_TOR_VERSION) + 1, ' '));
}
END_TEST

static int
allows(const metrics_policy_t *p, const char *ip)
{
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse_ip(&a, ip, 0), 0);
  return metrics_policy_allows(p, &a);
}

START_TEST(test_metrics_policy)
{
  char *err = NULL;
  metrics_policy_t *p = metrics_policy_parse(
      "reject 127.0.0.2, accept 127.0.0.0/8:*, accept [2001:db8::]/32, "
      "reject *4", &err);
  ck_assert_ptr_nonnull(p);
  ck_assert(allows(p, "127.0.0.1"));
  ck_assert(!allows(p, "127.0.0.2"));
  ck_assert(allows(p, "127.255.0.9"));
  ck_assert(!allows(p, "128.0.0.1"));
  ck_assert(allows(p, "2001:db8::5"));
  ck_assert(!allows(p, "2001:db9::5")); /* no rule matches: rejected */
  metrics_policy_free(p);
  p = metrics_policy_parse("accept *", &err);
  ck_assert(allows(p, "192.0.2.1") && allows(p, "::1"));
  metrics_policy_free(p);
  /* no policy: nobody */
  ck_assert_int_eq(metrics_policy_allows(NULL, &(pc_addr_t){0}), 0);
  const char *bad[] = {"", "allow 1.2.3.4", "accept 1.2.3.4/33",
                       "accept nothost", "accept 1.2.3.4/x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err = NULL;
    ck_assert_ptr_null(metrics_policy_parse(bad[i], &err));
    ck_assert_ptr_nonnull(err);
    free(err);
  }
  control_listen_t l;
  ck_assert_int_eq(metrics_parse_port("9035 prometheus", &l, &err), 0);
  ck_assert_int_eq(l.kind, CONTROL_LISTEN_TCP);
  ck_assert_uint_eq(l.addr.port, 9035);
  err = NULL;
  ck_assert_int_eq(metrics_parse_port("9035 json", &l, &err), -1);
  free(err);
  err = NULL;
  ck_assert_int_eq(metrics_parse_port("unix:/x", &l, &err), -1);
  free(err);
}
END_TEST

/* Every sample line's metric has "# HELP" and "# TYPE" before it, and
 * the value is a number (what Prometheus' parser requires). */
START_TEST(test_metrics_render_format)
{
  evloop_t *loop = evloop_new();
  scheduler_init(loop); /* the daemon has it from channels_init() */
  char *t = metrics_render();
  scheduler_shutdown();
  evloop_free(loop);
  ck_assert_ptr_nonnull(strstr(t, "\ntor_relay_traffic_bytes{direction=\"read\"} "));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE tor_relay_connections gauge\n"));
  char *save = NULL, *typed = NULL;
  int samples = 0;
  for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(l, "# TYPE ", 7)) {
      free(typed);
      typed = strndup(l + 7, strcspn(l + 7, " "));
      continue;
    }
    if (l[0] == '#')
      continue;
    size_t n = strcspn(l, "{ ");
    ck_assert_ptr_nonnull(typed);
    ck_assert_int_eq(strncmp(l, typed, n), 0);
    ck_assert_uint_eq(strlen(typed), n);
    const char *v = strrchr(l, ' ');
    ck_assert_ptr_nonnull(v);
    char *end = NULL;
    strtod(v + 1, &end);
    ck_assert(end && *end == '\0' && end != v + 1);
    samples++;
  }
  ck_assert_int_gt(samples, 20);
  free(typed);
  free(t);
}
END_TEST

static void
stop_loop(void *arg)
{
  evloop_exit(arg);
}

/* Run the loop for 100 ms, then read what the controller got. */
static char *
pump_and_read(evloop_t *loop, int fd)
{
  evloop_timer_t *t = evloop_timer_new(loop, stop_loop, loop);
  evloop_timer_schedule(t, 100000);
  evloop_run(loop);
  evloop_timer_free(t);
  static char got[4096];
  ssize_t n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
  got[n > 0 ? n : 0] = '\0';
  return got;
}

/* A ControlPort on loop (127.0.0.1, a port the kernel picks) and a
 * controller connected to it, authenticated and subscribed to events;
 * returns its socket. */
static int
controller_subscribed(evloop_t *loop, const char *events)
{
  control_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  char *err = NULL;
  ck_assert_int_eq(control_parse_listen("auto", 0, &cfg.port, &err), 0);
  control_host_t host;
  memset(&host, 0, sizeof(host));
  ck_assert_int_eq(control_start(loop, &cfg, &host, &err), 0);
  const char *addr = control_listen_address();
  ck_assert_ptr_nonnull(addr);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  char cmds[128];
  snprintf(cmds, sizeof(cmds), "AUTHENTICATE\r\nSETEVENTS %s\r\n", events);
  ck_assert_int_eq(write(fd, cmds, strlen(cmds)), (ssize_t)strlen(cmds));
  ck_assert_str_eq(pump_and_read(loop, fd), "250 OK\r\n250 OK\r\n");
  return fd;
}

/* STATUS_GENERAL BUG and CLOCK_SKEW (SOURCE=CONSENSUS) reach a controller
 * subscribed to STATUS_GENERAL over a real ControlPort: log_bug() fires
 * the first, a consensus valid two hours from now the second. (CLOCK_SKEW
 * SOURCE=OR, from a relay's NETINFO, is checked with a client whose clock
 * is set back in tests/integration/control-status.sh.) */
START_TEST(test_status_bug_and_clock_skew)
{
  evloop_t *loop = evloop_new();
  int fd = controller_subscribed(loop, "STATUS_GENERAL");

  log_bug("a test of the %s event", "BUG");
  ck_assert_str_eq(pump_and_read(loop, fd),
                   "650 STATUS_GENERAL WARN BUG "
                   "REASON=\"a test of the BUG event\"\r\n");

  consensus_t c;
  memset(&c, 0, sizeof(c));
  time_t now = time(NULL);
  c.valid_after = now + 7200;
  c.fresh_until = now + 7300;
  c.valid_until = now + 7400;
  control_event_new_consensus(&c);
  long long skew = 0;
  ck_assert_int_eq(sscanf(pump_and_read(loop, fd),
                          "650 STATUS_GENERAL WARN CLOCK_SKEW MIN_SKEW=%lld "
                          "SOURCE=CONSENSUS\r\n", &skew), 1);
  ck_assert(skew <= -7199 && skew >= -7201);
  /* A consensus valid now: nothing. */
  c.valid_after = now;
  control_event_new_consensus(&c);
  ck_assert_str_eq(pump_and_read(loop, fd), "");

  control_shutdown();
  /* No controller module: log_bug() only logs. */
  log_bug("after shutdown");
  close(fd);
  evloop_free(loop);
}
END_TEST

/* ---- CIRC_BW for a circuit born and closed between two ticks ---- */

static int circbw_open;

static void
circbw_extended(origin_circuit_t *c, int n, void *arg)
{
  (void)c;
  circbw_open = n;
  evloop_exit(arg);
}

/* A controller subscribed to CIRC_BW; a one-hop circuit to the loopback
 * relay is built right after a one-second tick, sends three DROP cells
 * and closes before the next tick: the close still reports everything
 * the circuit did (WRITTEN = its cells, 509 bytes each), once. */
START_TEST(test_circbw_short_circuit)
{
  fixture_relay_t f;
  fixture_relay_start(&f, "ctlcircbw", NULL, NULL);
  int fd = controller_subscribed(f.loop, "CIRC_BW");
  /* The first tick after SETEVENTS starts the accounting; build the
   * circuit just after the second, so that it lives between two. */
  fixture_relay_run_for(&f, 1950000);
  static const origin_circuit_ops_t ops = {circbw_extended, NULL, NULL};
  extend_target_t t = fixture_relay_target(&f, HTYPE_NTOR);
  circbw_open = 0;
  origin_circuit_t *oc = origin_circuit_launch(&t, &ops, f.loop);
  ck_assert_ptr_nonnull(oc);
  for (int k = 0; k < 50 && !circbw_open; k++)
    fixture_relay_run_for(&f, 20000);
  ck_assert_int_eq(circbw_open, 1);
  uint8_t junk[16];
  memset(junk, 0x33, sizeof(junk));
  for (int k = 0; k < 3; k++)
    ck_assert_int_eq(origin_circuit_send_relay(oc, 0, RELAY_COMMAND_DROP, 0,
                                               junk, sizeof(junk)),
                     0);
  uint64_t gid = oc->base.gid, cells = oc->base.cells_forward;
  ck_assert_uint_ge(cells, 3);
  circuit_mark_for_close(&oc->base, DESTROY_REASON_FINISHED);
  const char *got = pump_and_read(f.loop, fd);
  char want[64];
  snprintf(want, sizeof(want), "650 CIRC_BW ID=%llu READ=",
           (unsigned long long)gid);
  /* (Should a slow machine put a tick in its life, that tick's event
   * and the close's share the cells.) */
  unsigned long long total = 0;
  int n = 0;
  for (const char *ev = strstr(got, want); ev; ev = strstr(ev + 1, want)) {
    unsigned long long wr = 0;
    const char *w = strstr(ev, " WRITTEN=");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(sscanf(w, " WRITTEN=%llu", &wr), 1);
    total += wr;
    n++;
  }
  ck_assert_msg(n >= 1, "no CIRC_BW for the short circuit: [%s]", got);
  ck_assert_uint_eq(total, cells * 509);
  control_shutdown();
  close(fd);
  fixture_relay_shutdown();
  fixture_relay_free(&f);
}
END_TEST

Suite *
suite_control(void)
{
  Suite *s = suite_create("control");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_take_lines);
  tcase_add_test(tc, test_take_too_long);
  tcase_add_test(tc, test_take_data);
  tcase_add_test(tc, test_quote);
  tcase_add_test(tc, test_args);
  tcase_add_test(tc, test_parse_kvs);
  tcase_add_test(tc, test_circbw_event);
  tcase_add_test(tc, test_connbw_event);
  tcase_add_test(tc, test_cellstats_event);
  tcase_add_test(tc, test_replies);
  tcase_add_test(tc, test_stream_reason);
  tcase_add_test(tc, test_clock_jump);
  tcase_add_test(tc, test_password_vectors);
  tcase_add_test(tc, test_safecookie_vector);
  tcase_add_test(tc, test_parse_listen);
  tcase_add_test(tc, test_version_string);
  tcase_add_test(tc, test_metrics_policy);
  tcase_add_test(tc, test_metrics_render_format);
  tcase_add_test(tc, test_status_bug_and_clock_skew);
  tcase_add_test(tc, test_circbw_short_circuit);
  suite_add_tcase(s, tc);
  return s;
}
