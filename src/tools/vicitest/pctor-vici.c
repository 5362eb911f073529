/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-vici.c -- drive a charon VICI socket with pctor's own VICI client.
 *
 * For operators (check what charon has, load a relay conn by hand) and for
 * the integration tests, which thereby exercise feature/ipsec/vici_client
 * against a real charon. Every subcommand is one or two VICI commands on
 * the event loop; nothing here blocks.
 *
 *   pctor-vici [-s SOCKET] [-t TIMEOUT_MS] SUBCOMMAND [ARGS]
 *     version
 *     load-key FILE [--type ed25519|ecdsa|rsa|any]   (PKCS#8 PEM or DER)
 *     load-conn NAME --local-addr A --remote-addr B
 *               --local-pubkey FILE --remote-pubkey FILE
 *               [--local-id ID] [--remote-id ID]
 *               [--local-port P] [--remote-port P] [--child NAME]
 *               [--start-action none|trap|start] [--updown PATH]
 *               [--mode tunnel|transport] [--esp PROPOSAL]
 *               [--ike-proposal PROPOSAL]
 *     unload-conn NAME
 *     get-conns
 *     initiate NAME [--child NAME] [--timeout MS]
 *     terminate NAME [--timeout MS]
 *     list-sas [NAME]
 *     wait-sa NAME [--child NAME] [--timeout MS]
 *     monitor [--events E1,E2] [--count N] [--reconnect]
 *     updown [--prefix pctor-] [--reconnect] COMMAND [ARGS]
 *     raw COMMAND [KEY=VALUE ...] [--stream EVENT]
 *
 * load-conn builds a pctor-style host-to-host connection: IKEv2,
 * auth = pubkey on both sides with the given SPKI PEM public keys (charon
 * 5.9.8 sends no raw keys in IKE, so each side must know the other's), IDs
 * such as "@#<64 hex>" (a KEY_ID holding the relay's Ed25519 identity),
 * and one CHILD_SA (default "tor") in tunnel mode whose traffic selectors
 * are TCP only: local A/32[tcp(/local-port)] and remote
 * B/32[tcp(/remote-port)]. The relay that connects to a peer's ORPort uses
 * --remote-port ORPORT; the peer mirrors it with --local-port ORPORT.
 * ESP is aes128gcm16 with x25519 PFS; IKE aes128gcm16-prfsha256-x25519.
 *
 * wait-sa returns once the named CHILD_SA of IKE_SA NAME is INSTALLED,
 * learning it from child-updown events and from list-sas polls (every
 * 200 ms; blocking listings, so a busy IKE_SA is waited for, not
 * skipped).
 * monitor prints events (default ike-updown and child-updown); it exits
 * with status 3 when the socket goes away ("connection lost: ..."), or
 * with --reconnect keeps reconnecting (with backoff) and re-registering.
 * updown is charon's updown plugin run from outside: for every CHILD_SA
 * of an IKE_SA whose name starts with --prefix that comes up, goes down
 * or is rekeyed (child-updown, child-rekey events; after each connection
 * also for every CHILD_SA already installed), it runs COMMAND with
 * /bin/sh -c, with the PLUTO_* variables of charon's updown interface
 * (VERB up-host/down-host[-v6], ME, PEER, MY_/PEER_CLIENT, _PROTOCOL,
 * _PORT, UNIQUEID, REQID, CONNECTION), one at a time. scripts/pctor-charon
 * runs it as root beside charon, so that the updown script is the
 * operator's choice and pctor never sends one over VICI (issue 14).
 *
 * The socket defaults to $PCTOR_VICI_SOCKET, else /var/run/charon.vici.
 * Exit status: 0 success, 1 the command failed (charon said no, or a
 * timeout), 2 usage error, 3 cannot reach charon / connection lost.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feature/ipsec/vici_client.h"
#include "feature/ipsec/vici_msg.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_CONN 3

#define MAX_OPTS 24

typedef struct opt_t {
  const char *name;
  const char *value;
} opt_t;

static struct {
  evloop_t *loop;
  vici_client_t *vc;
  const char *socket;
  uint32_t timeout_ms;
  const char *sub;
  const char *pos[64];
  int n_pos;
  opt_t opts[MAX_OPTS];
  int n_opts;
  int flag_reconnect;
  int rc;
  int started;
  /* wait-sa */
  const char *wait_ike;
  const char *wait_child;
  evloop_timer_t *poll_timer;
  evloop_timer_t *deadline;
  int listing;
  /* monitor */
  long count;
  long seen;
  /* updown */
  const char *updown_cmd;
  const char *updown_prefix;
} A;

/* The first outcome decides the exit status (later ones, such as the
 * cancellations when the client is freed at exit, are ignored). */
static void
finish(int rc)
{
  if (A.rc >= 0)
    return;
  A.rc = rc;
  evloop_exit(A.loop);
}

static const char *
opt(const char *name)
{
  for (int i = 0; i < A.n_opts; i++)
    if (!strcmp(A.opts[i].name, name))
      return A.opts[i].value;
  return NULL;
}

static void
usage(void)
{
  fprintf(stderr,
    "usage: pctor-vici [-s SOCKET] [-t TIMEOUT_MS] SUBCOMMAND [ARGS]\n"
    "  version | get-conns | list-sas [NAME]\n"
    "  load-key FILE [--type ed25519]\n"
    "  load-conn NAME --local-addr A --remote-addr B --local-pubkey F\n"
    "            --remote-pubkey F [--local-id ID] [--remote-id ID]\n"
    "            [--local-port P] [--remote-port P] [--child NAME]\n"
    "            [--start-action none|trap|start] [--updown PATH]\n"
    "            [--mode tunnel|transport] [--esp P] [--ike-proposal P]\n"
    "  unload-conn NAME\n"
    "  initiate NAME [--child NAME] [--timeout MS]\n"
    "  terminate NAME [--timeout MS]\n"
    "  wait-sa NAME [--child NAME] [--timeout MS]\n"
    "  monitor [--events E1,E2] [--count N] [--reconnect]\n"
    "  updown [--prefix pctor-] [--reconnect] COMMAND [ARGS]\n"
    "  raw COMMAND [KEY=VALUE ...] [--stream EVENT]\n"
    "exit: 0 ok, 1 failed, 2 usage, 3 cannot reach charon / lost\n");
  exit(EXIT_USAGE);
}

static void
print_msg(const char *prefix, const vici_msg_t *m)
{
  char *t = vici_msg_format(m);
  if (prefix)
    printf("%s", prefix);
  fputs(t, stdout);
  fflush(stdout);
  free(t);
}

/* A reply with success = yes/no: print errmsg and fail on "no". */
static int
check_reply(vici_result_t res, const vici_msg_t *msg)
{
  const char *em = NULL;
  if (A.rc >= 0)
    return -1; /* already finished */
  if (res != VICI_RESULT_OK) {
    fprintf(stderr, "pctor-vici: %s: %s\n", A.sub, vici_result_name(res));
    finish(res == VICI_RESULT_CONN_LOST ? EXIT_CONN : EXIT_FAILED);
    return -1;
  }
  if (vici_msg_check_success(msg, &em) < 0) {
    fprintf(stderr, "pctor-vici: %s failed: %s\n", A.sub, em);
    finish(EXIT_FAILED);
    return -1;
  }
  return 0;
}

static void
submit(const char *cmd, vici_builder_t *b, const char *stream,
       vici_event_cb scb, vici_done_cb done, uint32_t tmo)
{
  if (vici_client_command(A.vc, cmd, b, stream, scb, done, NULL, tmo) < 0) {
    fprintf(stderr, "pctor-vici: cannot submit %s\n", cmd);
    finish(EXIT_FAILED);
  }
}

static uint32_t
parse_ms(const char *s, uint32_t dflt)
{
  if (!s)
    return dflt;
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || v > 3600000UL) {
    fprintf(stderr, "pctor-vici: bad number of milliseconds: %s\n", s);
    exit(EXIT_USAGE);
  }
  return (uint32_t)v;
}

/* ---- version, get-conns, raw ---- */

static void
version_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
             void *arg)
{
  if (res != VICI_RESULT_OK) {
    check_reply(res, m);
    return;
  }
  printf("%s %s (%s %s %s)\n", vici_msg_get_str(m, "daemon") ?: "?",
         vici_msg_get_str(m, "version") ?: "?",
         vici_msg_get_str(m, "sysname") ?: "?",
         vici_msg_get_str(m, "release") ?: "?",
         vici_msg_get_str(m, "machine") ?: "?");
  finish(0);
}

static void
get_conns_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
               void *arg)
{
  if (res != VICI_RESULT_OK) {
    check_reply(res, m);
    return;
  }
  const vici_node_t *l = vici_node_get(vici_msg_root(m), "conns");
  for (const vici_node_t *i = l ? vici_node_first(l) : NULL; i;
       i = vici_node_next(i))
    printf("%s\n", vici_node_value(i, NULL));
  finish(0);
}

static void
print_event(vici_client_t *c, const char *event, const vici_msg_t *m,
            void *arg)
{
  printf("event %s:\n", event);
  print_msg(NULL, m);
}

static void
raw_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m, void *arg)
{
  if (res != VICI_RESULT_OK) {
    check_reply(res, m);
    return;
  }
  print_msg(NULL, m);
  const char *s = vici_msg_get_str(m, "success");
  finish(s && strcmp(s, "yes") ? EXIT_FAILED : 0);
}

/* ---- load-key ---- */

static void
load_key_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
              void *arg)
{
  if (check_reply(res, m) < 0)
    return;
  printf("loaded key %s\n", vici_msg_get_str(m, "id") ?: "(no id)");
  finish(0);
}

static void
start_load_key(void)
{
  uint8_t *data = NULL;
  size_t len = 0;
  if (A.n_pos != 1)
    usage();
  int r = fs_read_file(A.pos[0], 65536, &data, &len);
  if (r < 0) {
    fprintf(stderr, "pctor-vici: cannot read %s: %s\n", A.pos[0],
            strerror(-r));
    finish(EXIT_FAILED);
    return;
  }
  vici_builder_t *b = vici_builder_new();
  vici_builder_add_str(b, "type", opt("type") ? opt("type") : "ed25519");
  vici_builder_add(b, "data", data, len);
  pc_memwipe(data, len);
  free(data);
  submit("load-key", b, NULL, NULL, load_key_done, A.timeout_ms);
}

/* ---- load-conn ---- */

static char *
read_pubkey(const char *path)
{
  char *text = NULL;
  int r = fs_read_text(path, 65536, &text);
  if (r < 0) {
    fprintf(stderr, "pctor-vici: cannot read %s: %s\n", path, strerror(-r));
    exit(EXIT_FAILED);
  }
  if (!strstr(text, "-----BEGIN PUBLIC KEY-----")) {
    fprintf(stderr, "pctor-vici: %s is not a PEM public key (SPKI)\n", path);
    exit(EXIT_FAILED);
  }
  return text;
}

static void
add_ts(vici_builder_t *b, const char *list, const char *addr,
       const char *port)
{
  char ts[128];
  const char *plen = strchr(addr, ':') ? "128" : "32";
  if (port)
    snprintf(ts, sizeof(ts), "%s/%s[tcp/%s]", addr, plen, port);
  else
    snprintf(ts, sizeof(ts), "%s/%s[tcp]", addr, plen);
  vici_builder_begin_list(b, list);
  vici_builder_add_item_str(b, ts);
  vici_builder_end_list(b);
}

static void
add_list1(vici_builder_t *b, const char *name, const char *item)
{
  vici_builder_begin_list(b, name);
  vici_builder_add_item_str(b, item);
  vici_builder_end_list(b);
}

static void
add_auth(vici_builder_t *b, const char *section, const char *id,
         const char *pem)
{
  vici_builder_begin_section(b, section);
  vici_builder_add_str(b, "auth", "pubkey");
  if (id)
    vici_builder_add_str(b, "id", id);
  add_list1(b, "pubkeys", pem);
  vici_builder_end_section(b);
}

static void
load_conn_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
               void *arg)
{
  if (check_reply(res, m) < 0)
    return;
  printf("loaded connection %s\n", A.pos[0]);
  finish(0);
}

static void
start_load_conn(void)
{
  const char *la = opt("local-addr"), *ra = opt("remote-addr");
  const char *lk = opt("local-pubkey"), *rk = opt("remote-pubkey");
  if (A.n_pos != 1 || !la || !ra || !lk || !rk)
    usage();
  char *lpem = read_pubkey(lk), *rpem = read_pubkey(rk);
  vici_builder_t *b = vici_builder_new();
  vici_builder_begin_section(b, A.pos[0]);
  vici_builder_add_str(b, "version", "2");
  add_list1(b, "local_addrs", la);
  add_list1(b, "remote_addrs", ra);
  add_list1(b, "proposals",
            opt("ike-proposal") ?: "aes128gcm16-prfsha256-x25519");
  add_auth(b, "local", opt("local-id"), lpem);
  add_auth(b, "remote", opt("remote-id"), rpem);
  vici_builder_begin_section(b, "children");
  vici_builder_begin_section(b, opt("child") ?: "tor");
  vici_builder_add_str(b, "mode", opt("mode") ?: "tunnel");
  add_ts(b, "local_ts", la, opt("local-port"));
  add_ts(b, "remote_ts", ra, opt("remote-port"));
  add_list1(b, "esp_proposals", opt("esp") ?: "aes128gcm16-x25519");
  vici_builder_add_str(b, "start_action", opt("start-action") ?: "none");
  if (opt("updown"))
    vici_builder_add_str(b, "updown", opt("updown"));
  vici_builder_end_section(b);
  vici_builder_end_section(b);
  vici_builder_end_section(b);
  free(lpem);
  free(rpem);
  submit("load-conn", b, NULL, NULL, load_conn_done, A.timeout_ms);
}

/* ---- unload-conn, initiate, terminate ---- */

static void
simple_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
            void *arg)
{
  if (check_reply(res, m) < 0)
    return;
  const char *matches = vici_msg_get_str(m, "matches");
  if (matches)
    printf("%s %s: matches %s, terminated %s\n", A.sub, A.pos[0], matches,
           vici_msg_get_str(m, "terminated") ?: "?");
  else
    printf("%s %s: ok\n", A.sub, A.pos[0]);
  finish(0);
}

static void
print_log(vici_client_t *c, const char *event, const vici_msg_t *m,
          void *arg)
{
  const char *msg = vici_msg_get_str(m, "msg");
  if (msg)
    printf("log: %s\n", msg);
  fflush(stdout);
}

static void
start_unload_conn(void)
{
  if (A.n_pos != 1)
    usage();
  vici_builder_t *b = vici_builder_new();
  vici_builder_add_str(b, "name", A.pos[0]);
  submit("unload-conn", b, NULL, NULL, simple_done, A.timeout_ms);
}

static void
start_initiate(int terminate)
{
  if (A.n_pos != 1)
    usage();
  uint32_t tmo = parse_ms(opt("timeout"), 10000);
  vici_builder_t *b = vici_builder_new();
  if (!terminate)
    vici_builder_add_str(b, "child", opt("child") ?: "tor");
  vici_builder_add_str(b, "ike", A.pos[0]);
  vici_builder_addf(b, "timeout", "%u", tmo);
  vici_builder_add_str(b, "loglevel", "1");
  /* Our own deadline must come after charon's (see vici_client.h). */
  submit(terminate ? "terminate" : "initiate", b, "control-log", print_log,
         simple_done, tmo + 5000);
}

/* ---- list-sas and wait-sa ---- */

/* 1 if the list-sa / child-updown message shows wait_child of wait_ike
 * INSTALLED. */
static int
sa_installed(const vici_msg_t *m)
{
  const vici_node_t *ike = vici_node_get(vici_msg_root(m), A.wait_ike);
  const vici_node_t *cs = vici_node_get(ike, "child-sas");
  for (const vici_node_t *ch = cs ? vici_node_first(cs) : NULL; ch;
       ch = vici_node_next(ch)) {
    const char *name = vici_node_get_str(ch, "name");
    const char *state = vici_node_get_str(ch, "state");
    if (name && state && !strcmp(name, A.wait_child) &&
        !strcmp(state, "INSTALLED"))
      return 1;
  }
  return 0;
}

static void
list_sa_event(vici_client_t *c, const char *event, const vici_msg_t *m,
              void *arg)
{
  if (!A.wait_ike) {
    print_msg(NULL, m);
    return;
  }
  if (sa_installed(m)) {
    printf("CHILD_SA %s of %s is installed\n", A.wait_child, A.wait_ike);
    finish(0);
  }
}

static void
list_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
          void *arg)
{
  A.listing = 0;
  if (res != VICI_RESULT_OK) {
    check_reply(res, m);
    return;
  }
  if (!A.wait_ike)
    finish(0);
  else if (A.rc < 0)
    evloop_timer_schedule(A.poll_timer, 200000);
}

static void
child_updown(vici_client_t *c, const char *event, const vici_msg_t *m,
             void *arg)
{
  const char *up = vici_msg_get_str(m, "up");
  if (up && !strcmp(up, "yes") && sa_installed(m)) {
    printf("CHILD_SA %s of %s is installed\n", A.wait_child, A.wait_ike);
    finish(0);
  }
}

static void
poll_list(void *arg)
{
  if (A.listing || !vici_client_is_connected(A.vc))
    return;
  vici_builder_t *b = vici_builder_new();
  /* Blocking: an IKE_SA that is busy (e.g. running its updown script right
   * after the CHILD_SA came up) would be skipped by a noblock listing. */
  if (A.wait_ike)
    vici_builder_add_str(b, "ike", A.wait_ike);
  else
    vici_builder_add_str(b, "noblock", "yes");
  A.listing = 1;
  submit("list-sas", b, "list-sa", list_sa_event, list_done, A.timeout_ms);
}

static void
wait_timeout(void *arg)
{
  fprintf(stderr, "pctor-vici: CHILD_SA %s of %s not installed in time\n",
          A.wait_child, A.wait_ike);
  finish(EXIT_FAILED);
}

static void
start_list_sas(void)
{
  if (A.n_pos > 1)
    usage();
  A.wait_ike = NULL;
  if (A.n_pos == 1) {
    vici_builder_t *b = vici_builder_new();
    vici_builder_add_str(b, "noblock", "yes");
    vici_builder_add_str(b, "ike", A.pos[0]);
    submit("list-sas", b, "list-sa", list_sa_event, list_done, A.timeout_ms);
    return;
  }
  poll_list(NULL);
}

static void
start_wait_sa(void)
{
  if (A.n_pos != 1)
    usage();
  A.wait_ike = A.pos[0];
  A.wait_child = opt("child") ?: "tor";
  uint32_t tmo = parse_ms(opt("timeout"), 10000);
  A.deadline = evloop_timer_new(A.loop, wait_timeout, NULL);
  evloop_timer_schedule(A.deadline, (uint64_t)tmo * 1000);
  if (vici_client_register_event(A.vc, "child-updown", child_updown, NULL,
                                 NULL) < 0) {
    finish(EXIT_FAILED);
    return;
  }
  poll_list(NULL);
}

/* ---- monitor ---- */

static void
monitor_event(vici_client_t *c, const char *event, const vici_msg_t *m,
              void *arg)
{
  char ts[32];
  time_t now = time(NULL);
  strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
  printf("%s event %s:\n", ts, event);
  print_msg(NULL, m);
  if (A.count > 0 && ++A.seen >= A.count)
    finish(0);
}

static void
monitor_registered(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
                   void *arg)
{
  if (res == VICI_RESULT_UNKNOWN_EVENT) {
    fprintf(stderr, "pctor-vici: charon does not know that event\n");
    finish(EXIT_FAILED);
  } else if (res == VICI_RESULT_OK) {
    printf("registered\n");
    fflush(stdout);
  }
}

static void
start_monitor(void)
{
  char *events = pc_strdup(opt("events") ?: "ike-updown,child-updown");
  char *save = NULL;
  const char *cnt = opt("count");
  A.count = cnt ? strtol(cnt, NULL, 10) : 0;
  int n = 0;
  for (char *e = strtok_r(events, ",", &save); e;
       e = strtok_r(NULL, ",", &save)) {
    if (vici_client_register_event(A.vc, e, monitor_event,
                                   n == 0 ? monitor_registered : NULL,
                                   NULL) < 0) {
      fprintf(stderr, "pctor-vici: cannot register %s\n", e);
      finish(EXIT_USAGE);
      break;
    }
    n++;
  }
  free(events);
}

/* ---- updown ---- */

/* One traffic selector "ADDR/LEN[PROTO/PORT]" (the first of a list) into
 * its parts: *client "ADDR/LEN", *proto "6" for tcp (else "0"), *port. */
static void
ts_parts(const vici_node_t *list, char *client, size_t clen, char *proto,
         size_t plen, char *port, size_t portlen)
{
  const vici_node_t *it = list ? vici_node_first(list) : NULL;
  const char *ts = it ? vici_node_value(it, NULL) : NULL;
  snprintf(client, clen, "%s", "");
  snprintf(proto, plen, "0");
  snprintf(port, portlen, "0");
  if (!ts)
    return;
  size_t n = strcspn(ts, "[");
  snprintf(client, clen, "%.*s", (int)n, ts);
  if (ts[n] != '[')
    return;
  const char *p = ts + n + 1;
  if (!strncmp(p, "tcp", 3)) {
    snprintf(proto, plen, "6");
    p += 3;
  } else {
    p += strcspn(p, "/]");
  }
  if (*p == '/') {
    p++;
    size_t d = strspn(p, "0123456789");
    if (d > 0 && d < 6)
      snprintf(port, portlen, "%.*s", (int)d, p);
  }
}

/* Run the updown command for one CHILD_SA of IKE_SA ike, as charon's
 * updown plugin would: /bin/sh -c COMMAND with the PLUTO_* variables
 * pctor-updown reads; waits for it. */
static void
updown_run(const vici_node_t *ike, const vici_node_t *child, int up)
{
  const char *me = vici_node_get_str(ike, "local-host");
  const char *peer = vici_node_get_str(ike, "remote-host");
  if (!me || !peer)
    return;
  char mc[128], mp[8], mport[8], pc[128], pp[8], pport[8];
  ts_parts(vici_node_get(child, "local-ts"), mc, sizeof(mc), mp, sizeof(mp),
           mport, sizeof(mport));
  ts_parts(vici_node_get(child, "remote-ts"), pc, sizeof(pc), pp, sizeof(pp),
           pport, sizeof(pport));
  int v6 = strchr(peer, ':') != NULL;
  char verb[32];
  snprintf(verb, sizeof(verb), "%s-host%s", up ? "up" : "down", v6 ? "-v6" : "");
  const char *name = vici_node_get_str(child, "name");
  const char *uid = vici_node_get_str(child, "uniqueid");
  const char *reqid = vici_node_get_str(child, "reqid");
  printf("updown %s %s %s -> %s (%s, CHILD_SA %s)\n", verb, name ? name : "?",
         me, peer, mport[0] != '0' ? mport : pport, uid ? uid : "?");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "pctor-vici: fork: %s\n", strerror(errno));
    return;
  }
  if (pid == 0) {
    setenv("PLUTO_VERB", verb, 1);
    setenv("PLUTO_CONNECTION", name ? name : "", 1);
    setenv("PLUTO_ME", me, 1);
    setenv("PLUTO_PEER", peer, 1);
    setenv("PLUTO_MY_CLIENT", mc, 1);
    setenv("PLUTO_PEER_CLIENT", pc, 1);
    setenv("PLUTO_MY_PROTOCOL", mp, 1);
    setenv("PLUTO_PEER_PROTOCOL", pp, 1);
    setenv("PLUTO_MY_PORT", mport, 1);
    setenv("PLUTO_PEER_PORT", pport, 1);
    setenv("PLUTO_UNIQUEID", uid ? uid : "0", 1);
    setenv("PLUTO_REQID", reqid ? reqid : "0", 1);
    execl("/bin/sh", "sh", "-c", A.updown_cmd, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "pctor-vici: updown command failed (status %d)\n", st);
}

static int
updown_ours(const vici_node_t *ike)
{
  const char *n = vici_node_name(ike);
  return n && !strncmp(n, A.updown_prefix, strlen(A.updown_prefix));
}

/* The CHILD_SAs of our IKE_SAs in an event or listing: rekey: the new
 * one up, then the old one down (make before break, as charon does);
 * else up (only INSTALLED ones) or down. */
static void
updown_walk(const vici_msg_t *m, int up, int rekey)
{
  const vici_node_t *root = vici_msg_root(m);
  for (const vici_node_t *ike = vici_node_first(root); ike;
       ike = vici_node_next(ike)) {
    if (vici_node_type(ike) != VICI_NODE_SECTION || !updown_ours(ike))
      continue;
    const vici_node_t *cs = vici_node_get(ike, "child-sas");
    for (const vici_node_t *ch = cs ? vici_node_first(cs) : NULL; ch;
         ch = vici_node_next(ch)) {
      if (vici_node_type(ch) != VICI_NODE_SECTION)
        continue;
      if (rekey) {
        const vici_node_t *nw = vici_node_get(ch, "new");
        const vici_node_t *old = vici_node_get(ch, "old");
        if (nw)
          updown_run(ike, nw, 1);
        if (old)
          updown_run(ike, old, 0);
      } else {
        const char *state = vici_node_get_str(ch, "state");
        if (!up || (state && !strcmp(state, "INSTALLED")))
          updown_run(ike, ch, up);
      }
    }
  }
}

/* child-updown and child-rekey events. */
static void
updown_event(vici_client_t *c, const char *event, const vici_msg_t *m,
             void *arg)
{
  const char *upv = vici_node_get_str(vici_msg_root(m), "up");
  updown_walk(m, upv && !strcmp(upv, "yes"), !strcmp(event, "child-rekey"));
}

/* After (re)connecting: "up" for every CHILD_SA already installed (the
 * script is idempotent), in case we missed their events. */
static void
updown_list_event(vici_client_t *c, const char *event, const vici_msg_t *m,
                  void *arg)
{
  updown_walk(m, 1, 0);
}

static void
updown_list_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
                 void *arg)
{
  if (res != VICI_RESULT_OK && res != VICI_RESULT_CANCELLED &&
      res != VICI_RESULT_CONN_LOST)
    fprintf(stderr, "pctor-vici: list-sas: %s\n", vici_result_name(res));
}

static void
updown_resync(void)
{
  vici_builder_t *b = vici_builder_new();
  vici_builder_add_str(b, "noblock", "yes");
  vici_client_command(A.vc, "list-sas", b, "list-sa", updown_list_event,
                      updown_list_done, NULL, 0);
}

static void
start_updown(void)
{
  static char cmd[4096];
  size_t used = 0;
  if (A.n_pos < 1)
    usage();
  for (int i = 0; i < A.n_pos; i++) {
    int w = snprintf(cmd + used, sizeof(cmd) - used, "%s%s", i ? " " : "",
                     A.pos[i]);
    if (w < 0 || (size_t)w >= sizeof(cmd) - used)
      usage();
    used += (size_t)w;
  }
  A.updown_cmd = cmd;
  A.updown_prefix = opt("prefix") ?: "pctor-";
  const char *ev[] = {"child-updown", "child-rekey"};
  for (int i = 0; i < 2; i++)
    if (vici_client_register_event(A.vc, ev[i], updown_event,
                                   i == 0 ? monitor_registered : NULL,
                                   NULL) < 0) {
      fprintf(stderr, "pctor-vici: cannot register %s\n", ev[i]);
      finish(EXIT_USAGE);
      return;
    }
  updown_resync();
}

/* ---- raw ---- */

static void
start_raw(void)
{
  if (A.n_pos < 1)
    usage();
  vici_builder_t *b = vici_builder_new();
  for (int i = 1; i < A.n_pos; i++) {
    const char *eq = strchr(A.pos[i], '=');
    if (!eq)
      usage();
    char key[256];
    size_t kl = (size_t)(eq - A.pos[i]);
    if (kl >= sizeof(key))
      usage();
    memcpy(key, A.pos[i], kl);
    key[kl] = '\0';
    vici_builder_add_str(b, key, eq + 1);
  }
  submit(A.pos[0], b, opt("stream"), opt("stream") ? print_event : NULL,
         raw_done, A.timeout_ms);
}

/* ---- connection ---- */

static void
start_sub(void)
{
  const char *s = A.sub;
  if (!strcmp(s, "version"))
    submit("version", NULL, NULL, NULL, version_done, A.timeout_ms);
  else if (!strcmp(s, "get-conns"))
    submit("get-conns", NULL, NULL, NULL, get_conns_done, A.timeout_ms);
  else if (!strcmp(s, "load-key"))
    start_load_key();
  else if (!strcmp(s, "load-conn"))
    start_load_conn();
  else if (!strcmp(s, "unload-conn"))
    start_unload_conn();
  else if (!strcmp(s, "initiate"))
    start_initiate(0);
  else if (!strcmp(s, "terminate"))
    start_initiate(1);
  else if (!strcmp(s, "list-sas"))
    start_list_sas();
  else if (!strcmp(s, "wait-sa"))
    start_wait_sa();
  else if (!strcmp(s, "monitor"))
    start_monitor();
  else if (!strcmp(s, "updown"))
    start_updown();
  else if (!strcmp(s, "raw"))
    start_raw();
  else
    usage();
}

static void
on_state(vici_client_t *c, vici_state_t st, const char *why, void *arg)
{
  int monitor = !strcmp(A.sub, "monitor") || !strcmp(A.sub, "updown");
  switch (st) {
  case VICI_STATE_CONNECTED:
    if (monitor) {
      printf("connected to %s\n", A.socket);
      fflush(stdout);
    }
    if (!A.started) {
      A.started = 1;
      start_sub();
    } else if (A.updown_cmd) {
      updown_resync();
    }
    break;
  case VICI_STATE_LOST:
    if (monitor) {
      printf("connection lost: %s\n", why);
      fflush(stdout);
    }
    if (!A.flag_reconnect) {
      fprintf(stderr, "pctor-vici: connection to %s lost: %s\n", A.socket,
              why);
      finish(EXIT_CONN);
    }
    break;
  case VICI_STATE_CONNECT_FAILED:
    if (!A.flag_reconnect) {
      fprintf(stderr, "pctor-vici: cannot connect to %s: %s\n", A.socket,
              why);
      finish(EXIT_CONN);
    }
    break;
  }
}

int
main(int argc, char **argv)
{
  int i = 1;
  A.socket = getenv("PCTOR_VICI_SOCKET");
  if (!A.socket || !*A.socket)
    A.socket = "/var/run/charon.vici";
  A.timeout_ms = 10000;
  A.rc = -1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc)
      A.socket = argv[++i];
    else if (!strcmp(argv[i], "-t") && i + 1 < argc)
      A.timeout_ms = parse_ms(argv[++i], 10000);
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
      usage();
    else
      usage();
  }
  if (i >= argc)
    usage();
  A.sub = argv[i++];
  for (; i < argc; i++) {
    if (!strncmp(argv[i], "--", 2)) {
      if (!strcmp(argv[i], "--reconnect")) {
        A.flag_reconnect = 1;
        continue;
      }
      if (i + 1 >= argc || A.n_opts >= MAX_OPTS)
        usage();
      A.opts[A.n_opts].name = argv[i] + 2;
      A.opts[A.n_opts].value = argv[i + 1];
      A.n_opts++;
      i++;
    } else {
      if (A.n_pos >= 64)
        usage();
      A.pos[A.n_pos++] = argv[i];
    }
  }
  /* Only warnings from the client library; our own output is on stdout. */
  char *err = NULL;
  if (log_parse_destination("warn stderr", &err) < 0) {
    fprintf(stderr, "pctor-vici: %s\n", err);
    free(err);
  }
  A.loop = evloop_new();
  A.vc = vici_client_new(A.loop, A.socket);
  A.poll_timer = evloop_timer_new(A.loop, poll_list, NULL);
  vici_client_set_state_cb(A.vc, on_state, NULL);
  vici_client_set_default_timeout(A.vc, A.timeout_ms);
  if (A.flag_reconnect)
    vici_client_set_reconnect(A.vc, 200, 5000);
  if (vici_client_connect(A.vc) < 0) {
    fprintf(stderr, "pctor-vici: bad socket path %s\n", A.socket);
    return EXIT_USAGE;
  }
  evloop_run(A.loop);
  vici_client_free(A.vc);
  evloop_timer_free(A.poll_timer);
  evloop_timer_free(A.deadline);
  evloop_free(A.loop);
  fflush(stdout);
  return A.rc < 0 ? EXIT_FAILED : A.rc;
}
