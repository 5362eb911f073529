/* SPDX-License-Identifier: BSD-3-Clause */
/* control.c -- the ControlPort (control.h): listeners, controller
 * connections, authentication state, commands and events.
 *
 * Design:
 *  - One ctl_conn_t per controller, on a plain conn_t marked uncounted
 *    (its bytes are not relay traffic and would otherwise feed the BW
 *    events it reads). Commands are taken from the input with
 *    control_proto_take_cmd() and answered at once, in order; nothing is
 *    asynchronous, so replies can never be reordered.
 *  - Memory per controller is bounded twice: one command is at most
 *    CONTROL_MAX_COMMAND_LEN bytes (longer input closes the connection),
 *    and the replies and events waiting to be read at most
 *    CONTROL_MAX_OUTBUF (a controller that stops reading is closed, with
 *    a log line, instead of making pctor buffer its events forever).
 *  - Before authentication only PROTOCOLINFO (once), AUTHCHALLENGE,
 *    AUTHENTICATE and QUIT are allowed; anything else, or a failed
 *    AUTHENTICATE, gets tor's 514/515 reply and the connection is closed
 *    once the reply is written.
 *  - Events: a controller's SETEVENTS mask is a bit per event name. BW is
 *    produced by a one-second timer from conn_get_totals(); the log events
 *    by a log hook whose minimum severity follows the subscribers (a
 *    guard stops a log line written while delivering an event from
 *    recursing); ORCONN and CIRC come from core's channel-open,
 *    origin-circuit-progress and circuit-close observers, STREAM from
 *    feature/client's stream observer (all read-only). Every event name tor defines is accepted by
 *    SETEVENTS (nyx subscribes to many); those pctor does not produce yet
 *    are simply never sent, and the man page lists which are.
 *  - Signals are handed to the daemon (control_host_t.signal), which acts
 *    on them from its own loop callbacks, so that SHUTDOWN never frees
 *    this module under its own feet.
 */
#include "config.h"

#include "feature/control/control.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "feature/client/client.h"
#include "feature/measureme/measureme.h"
#include "feature/control/control_auth.h"
#include "feature/control/control_cellstats.h"
#include "feature/control/control_circbw.h"
#include "feature/control/control_proto.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"
#include "lib/string/strbuf.h"
#include "lib/time/timefmt.h"

/* Event names in tor's order; the index is the bit in a mask. */
static const char *const event_names[] = {
    "CIRC", "STREAM", "ORCONN", "BW", "DEBUG", "INFO", "NOTICE", "WARN",
    "ERR", "NEWDESC", "ADDRMAP", "DESCCHANGED", "NS", "STATUS_GENERAL",
    "STATUS_CLIENT", "STATUS_SERVER", "GUARD", "STREAM_BW", "CLIENTS_SEEN",
    "NEWCONSENSUS", "BUILDTIMEOUT_SET", "SIGNAL", "CONF_CHANGED",
    "CIRC_MINOR", "TRANSPORT_LAUNCHED", "CONN_BW", "CIRC_BW", "CELL_STATS",
    "HS_DESC", "HS_DESC_CONTENT", "NETWORK_LIVENESS", "PT_LOG", "PT_STATUS",
    /* pctor's own (doc/measureme.md): the answers of MeasureMe hops */
    "MEASUREME",
};
#define N_EVENTS (sizeof(event_names) / sizeof(event_names[0]))
enum {
  EV_CIRC = 0, EV_STREAM = 1, EV_ORCONN = 2, EV_BW = 3, EV_DEBUG = 4,
  EV_INFO = 5, EV_NOTICE = 6, EV_WARN = 7, EV_ERR = 8, EV_NEWDESC = 9,
  EV_ADDRMAP = 10, EV_BUILDTIMEOUT_SET = 20, EV_SIGNAL = 21,
  EV_NS = 12, EV_STATUS_GENERAL = 13, EV_STATUS_CLIENT = 14,
  EV_STATUS_SERVER = 15, EV_NEWCONSENSUS = 19,
  EV_CONF_CHANGED = 22, EV_CIRC_MINOR = 23, EV_CONN_BW = 25, EV_CIRC_BW = 26,
  EV_CELL_STATS = 27, EV_MEASUREME = 33,
};
#define EVBIT(e) (1ull << (e))
#define LOG_EVENTS \
  (EVBIT(EV_DEBUG) | EVBIT(EV_INFO) | EVBIT(EV_NOTICE) | EVBIT(EV_WARN) | \
   EVBIT(EV_ERR))

typedef struct ctl_conn_t {
  conn_t *conn;
  dlist_node_t node;
  uint64_t events;
  unsigned authenticated : 1;
  unsigned sent_protocolinfo : 1;
  unsigned challenged : 1;  /* AUTHCHALLENGE answered: AUTHENTICATE next */
  unsigned owning : 1;      /* TAKEOWNERSHIP */
  unsigned closing : 1;     /* reply written, then closed */
  unsigned in_cb : 1;       /* inside ctl_conn_cb: closing is deferred */
  unsigned doomed : 1;      /* close when ctl_conn_cb returns */
  unsigned doomed_flush : 1;
  char doomed_why[128];
  uint8_t client_hash[32];  /* SAFECOOKIE: what AUTHENTICATE must send */
  char peer[64];
} ctl_conn_t;

static struct {
  evloop_t *loop;
  control_host_t host;
  int started;
  listener_t *tcp, *unix_l;
  char unix_path[108];
  char tcp_addr[PC_ADDR_STR_LEN];
  dlist_t conns;
  unsigned n_conns;
  int cookie_auth;
  int have_cookie;
  uint8_t cookie[CONTROL_COOKIE_LEN];
  char *cookie_file;
  char *hashed_password;
  long owning_pid;
  evloop_timer_t *bw_timer;
  evloop_timer_t *owner_timer;
  uint64_t last_read, last_written;
  uint64_t bw_cache[CONTROL_BW_CACHE_LEN][2];
  unsigned bw_cache_n, bw_cache_next;
  time_t started_at;
  time_t last_tick_wall; /* the wall clock at the previous BW tick */
  int in_log_hook;
  /* registered: 1 open, 2 close, 4 origin circuits, 8 streams, 16 build
   * timeout, 32 lookups, 64 conflux links, 128 MeasureMe answers */
  int observers;
  /* CIRC_BW: the counters at each circuit's last event, by gid, while a
   * controller wants the event (control_circbw_prev_t). */
  hmap_t *circbw;
  uint64_t circbw_tick_us;    /* the previous tick */
  uint64_t circbw_tick;       /* ticks, to find circuits gone unseen */
  /* TestingEnableConnBwEvent, TestingEnableCellStatsEvent. */
  int conn_bw_event, cell_stats_event;
  /* NS: a digest of each relay's entry in the last consensus announced
   * (identity -> what an NS event reports a change of), and whether
   * STATUS_CLIENT BOOTSTRAP 100 was sent. */
  hmap_t *ns_seen;
  int bootstrapped;
  /* NEWDESC: per consensus flavor, each relay's descriptor digest (its
   * first 8 bytes) when the last fetch round ended. */
  hmap_t *desc_seen[2];
  char version[96];
} S;

const char *
control_version_string(void)
{
  if (!S.version[0])
    snprintf(S.version, sizeof(S.version), "%s (pctor-%s)",
             CONTROL_TOR_VERSION, PACKAGE_VERSION);
  return S.version;
}

const char *
control_listen_address(void)
{
  return S.tcp ? S.tcp_addr : NULL;
}

/* ---- configuration ---- */

int
control_parse_listen(const char *value, int is_socket_option,
                     control_listen_t *out, char **err_out)
{
  memset(out, 0, sizeof(*out));
  out->kind = CONTROL_LISTEN_NONE;
  while (*value == ' ' || *value == '\t')
    value++;
  if (!strcmp(value, "0") || !*value)
    return 0;
  int is_unix = is_socket_option;
  if (!strncmp(value, "unix:", 5)) {
    is_unix = 1;
    value += 5;
  }
  if (is_unix) {
    char *copy = pc_strdup(value), *save = NULL;
    char *path = strtok_r(copy, " \t", &save);
    int r = 0;
    if (!path || path[0] != '/') {
      *err_out = pc_asprintf("'%s': a unix socket needs an absolute path",
                             value);
      r = -1;
    } else if (strlen(path) >= sizeof(out->path)) {
      *err_out = pc_asprintf("'%s': the socket path is too long", path);
      r = -1;
    } else {
      memcpy(out->path, path, strlen(path) + 1);
      out->kind = CONTROL_LISTEN_UNIX;
    }
    for (char *f = strtok_r(NULL, " \t", &save); f && r == 0;
         f = strtok_r(NULL, " \t", &save)) {
      if (control_proto_eq(f, "GroupWritable"))
        out->flags |= CONTROL_UNIX_GROUP_WRITABLE;
      else if (control_proto_eq(f, "WorldWritable"))
        out->flags |= CONTROL_UNIX_WORLD_WRITABLE;
      else if (control_proto_eq(f, "RelaxDirModeCheck"))
        out->flags |= CONTROL_UNIX_RELAX_DIR_MODE;
      else {
        *err_out = pc_asprintf("unknown unix socket flag '%s' (known: "
                               "GroupWritable, WorldWritable, "
                               "RelaxDirModeCheck)", f);
        r = -1;
      }
    }
    free(copy);
    return r;
  }
  if (strpbrk(value, " \t")) {
    *err_out = pc_asprintf("'%s': only [ADDRESS:]PORT, auto or unix:PATH "
                           "are supported (no flags after a TCP port)",
                           value);
    return -1;
  }
  pc_addr_t a;
  if (!strcmp(value, "auto")) {
    pc_addr_parse_ip(&a, "127.0.0.1", 0);
  } else {
    char *end = NULL;
    long port = strtol(value, &end, 10);
    if (*value && !*end) {
      if (port < 1 || port > 65535) {
        *err_out = pc_asprintf("'%s' is not a port number (1 to 65535)",
                               value);
        return -1;
      }
      pc_addr_parse_ip(&a, "127.0.0.1", (uint16_t)port);
    } else if (pc_addr_parse(&a, value) < 0) {
      /* "ADDR:auto" or "[ADDR6]:auto": any free port on ADDR. */
      const char *c = strrchr(value, ':');
      char *host = c && !strcmp(c + 1, "auto")
                       ? pc_strndup(value, (size_t)(c - value))
                       : NULL;
      size_t hl = host ? strlen(host) : 0;
      if (host && hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
      }
      int ok = host && pc_addr_parse_ip(&a, host, 0) == 0;
      free(host);
      if (!ok) {
        *err_out = pc_asprintf("'%s' is not PORT, ADDRESS:PORT, auto or "
                               "unix:PATH", value);
        return -1;
      }
    } else if (a.port == 0) {
      *err_out = pc_asprintf("'%s' has no port", value);
      return -1;
    }
  }
  out->kind = CONTROL_LISTEN_TCP;
  out->addr = a;
  return 0;
}

/* ---- output ---- */

static void ctl_close(ctl_conn_t *cc, int flush, const char *why);

/* After writing to cc: flush, and close a controller whose unread output
 * passed the bound. Returns -1 when cc was closed. */
static int
ctl_flush(ctl_conn_t *cc)
{
  size_t queued = buf_datalen(conn_outbuf(cc->conn));
  if (queued > CONTROL_MAX_OUTBUF) {
    char why[128];
    snprintf(why, sizeof(why), "it does not read its replies and events "
             "(%zu bytes queued)", queued);
    ctl_close(cc, 0, why);
    return -1;
  }
  conn_flush_soon(cc->conn);
  return 0;
}

static void
reply(ctl_conn_t *cc, int code, const char *text)
{
  control_proto_add_line(conn_outbuf(cc->conn), code, ' ', text);
}

static void
replyf(ctl_conn_t *cc, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
replyf(ctl_conn_t *cc, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  reply(cc, code, s);
  free(s);
}

/* ---- events ---- */

static uint64_t
all_events(void)
{
  uint64_t m = 0;
  for (dlist_node_t *n = dlist_first(&S.conns); n;
       n = dlist_next(&S.conns, n))
    m |= DLIST_ENTRY(n, ctl_conn_t, node)->events;
  return m;
}

/* Send text (one line, or several separated by '\n') as event ev to
 * every subscriber. */
static void
send_event(int ev, const char *text)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&S.conns); n; n = next) {
    next = dlist_next(&S.conns, n);
    ctl_conn_t *cc = DLIST_ENTRY(n, ctl_conn_t, node);
    if (!(cc->events & EVBIT(ev)) || cc->closing || cc->doomed)
      continue;
    buf_t *out = conn_outbuf(cc->conn);
    if (strchr(text, '\n')) {
      /* "650+NAME\r\n" data ".\r\n" "650 OK\r\n" */
      const char *sp = strchr(text, ' ');
      size_t first = strcspn(text, "\n");
      if (!sp || (size_t)(sp - text) > first)
        sp = text + first;
      char *head = pc_strndup(text, (size_t)(sp - text));
      control_proto_add_line(out, 650, '+', head);
      free(head);
      control_proto_add_data(out, *sp == ' ' ? sp + 1 : sp + 1);
      control_proto_add_line(out, 650, ' ', "OK");
    } else {
      control_proto_add_line(out, 650, ' ', text);
    }
    ctl_flush(cc);
  }
}

void
control_event_conf_changed(const char *const *lines, int n)
{
  if (!S.started || n <= 0)
    return;
  /* "650-CONF_CHANGED" "650-Key=Value"... "650 OK" (control-spec 4.1.18):
   * keyword lines, not a data block. */
  dlist_node_t *nd, *next;
  for (nd = dlist_first(&S.conns); nd; nd = next) {
    next = dlist_next(&S.conns, nd);
    ctl_conn_t *cc = DLIST_ENTRY(nd, ctl_conn_t, node);
    if (!(cc->events & EVBIT(EV_CONF_CHANGED)) || cc->closing || cc->doomed)
      continue;
    buf_t *out = conn_outbuf(cc->conn);
    control_proto_add_line(out, 650, '-', "CONF_CHANGED");
    for (int i = 0; i < n; i++)
      control_proto_add_line(out, 650, '-', lines[i]);
    control_proto_add_line(out, 650, ' ', "OK");
    ctl_flush(cc);
  }
}

static void
log_hook(log_severity_t sev, const char *msg, void *arg)
{
  (void)arg;
  if (S.in_log_hook)
    return;
  S.in_log_hook = 1;
  static const int ev_of[] = {EV_DEBUG, EV_INFO, EV_NOTICE, EV_WARN, EV_ERR};
  static const char *const name_of[] = {"DEBUG", "INFO", "NOTICE", "WARN",
                                        "ERR"};
  if ((int)sev >= 0 && (int)sev <= LOG_SEV_ERR) {
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
      len--;
    char *text = pc_asprintf("%s %.*s", name_of[sev], (int)len, msg);
    send_event(ev_of[sev], text);
    free(text);
  }
  S.in_log_hook = 0;
}

/* Install the log hook at the lowest severity a controller wants. */
static void
update_log_hook(void)
{
  uint64_t m = all_events();
  int min = -1;
  for (int s = LOG_SEV_DEBUG; s <= LOG_SEV_ERR && min < 0; s++)
    if (m & EVBIT(EV_DEBUG + s))
      min = s;
  if (min < 0)
    log_set_hook(LOG_SEV_ERR, NULL, NULL);
  else
    log_set_hook((log_severity_t)min, log_hook, NULL);
}

/* ---- CIRC_BW ---- */

typedef struct circbw_entry_t {
  control_circbw_prev_t prev;
  uint64_t seen_tick;
} circbw_entry_t;

typedef struct circbw_walk_t {
  char when[40];
} circbw_walk_t;

/* TIME: now, UTC, with microseconds (tor's format). */
static void
circbw_now(circbw_walk_t *w)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(w->when, sizeof(w->when), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(w->when + n, sizeof(w->when) - n, ".%06ld", ts.tv_nsec / 1000);
}

/* The counters a circuit's first event starts from, for a circuit
 * that has no entry yet; NULL for a relayed circuit MeasureMe does not
 * measure. A circuit born since the last tick reports everything it
 * did, and so does a relayed one MeasureMe started to measure (clients
 * ask when the circuit is built: its whole life is what they want); an
 * older circuit of ours (a controller just subscribed) starts from now. */
static circbw_entry_t *
circbw_entry_new(const circuit_t *circ)
{
  int relayed = circ->kind == CIRC_KIND_OR;
  if (relayed && !measureme_is_active(circ->gid))
    return NULL;
  circbw_entry_t *e = pc_zalloc(sizeof(*e));
  if (circ->created_us < S.circbw_tick_us && !relayed)
    control_circbw_start(&e->prev, circ);
  return e;
}

/* A circuit is closing: what it did since its last event, then forget
 * it (a short circuit, or the last second of one, is not lost: one born
 * and closed between two ticks has no entry and reports its whole life,
 * as tor's CIRC_BW for a closed circuit does). */
static void
circbw_closing(circuit_t *circ)
{
  uint8_t key[8];
  set_u64(key, circ->gid);
  circbw_entry_t *e = hmap_remove(S.circbw, key);
  if (!e)
    e = circbw_entry_new(circ);
  if (!e)
    return;
  circbw_walk_t w;
  circbw_now(&w);
  char *text = control_circbw_event(circ, &e->prev, w.when, 1);
  if (text) {
    send_event(EV_CIRC_BW, text);
    free(text);
  }
  free(e);
}

static void
circbw_visit(circuit_t *circ, void *arg)
{
  circbw_walk_t *w = arg;
  int relayed = circ->kind == CIRC_KIND_OR;
  /* Relayed circuits only while MeasureMe measures them. */
  if (relayed && !measureme_is_active(circ->gid))
    return;
  uint8_t key[8];
  set_u64(key, circ->gid);
  circbw_entry_t *e = hmap_get(S.circbw, key);
  if (!e) {
    e = circbw_entry_new(circ);
    hmap_set(S.circbw, key, e);
  }
  e->seen_tick = S.circbw_tick;
  char *text = control_circbw_event(circ, &e->prev, w->when, 1);
  if (text) {
    send_event(EV_CIRC_BW, text);
    free(text);
  }
}

/* A controller subscribed: from now on, what every circuit does counts
 * (counters taken now, so the first event says what moved since). */
static void
circbw_snap(circuit_t *circ, void *arg)
{
  (void)arg;
  if (circ->kind == CIRC_KIND_OR && !measureme_is_active(circ->gid))
    return;
  uint8_t key[8];
  set_u64(key, circ->gid);
  circbw_entry_t *e = pc_zalloc(sizeof(*e));
  control_circbw_start(&e->prev, circ);
  e->seen_tick = S.circbw_tick;
  free(hmap_set(S.circbw, key, e));
}

static void
circbw_subscribed(void)
{
  if (S.circbw || !(all_events() & EVBIT(EV_CIRC_BW)))
    return;
  S.circbw = hmap_new(8);
  S.circbw_tick_us = evloop_now_us(S.loop);
  circuits_foreach(CIRC_KIND_ORIGIN, circbw_snap, NULL);
  circuits_foreach(CIRC_KIND_OR, circbw_snap, NULL);
}

static void
circbw_tick(void)
{
  if (!(all_events() & EVBIT(EV_CIRC_BW))) {
    if (S.circbw)
      hmap_free(S.circbw, free);
    return;
  }
  circbw_subscribed();
  S.circbw_tick++;
  circbw_walk_t w;
  circbw_now(&w);
  circuits_foreach(CIRC_KIND_ORIGIN, circbw_visit, &w);
  circuits_foreach(CIRC_KIND_OR, circbw_visit, &w);
  /* Entries of circuits no longer walked (closed, or no longer measured):
   * the close observer removes most; this catches the rest. */
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, S.circbw);
  while (hmap_iter_next(&it, NULL, &v))
    if (((circbw_entry_t *)v)->seen_tick != S.circbw_tick)
      free(hmap_iter_remove_current(&it));
  S.circbw_tick_us = evloop_now_us(S.loop);
}

/* ---- CONN_BW, CELL_STATS (control_cellstats.h) ---- */

/* Every tick while the option is set: each channel's bytes of the last
 * second are taken (so they do not pile up), and sent if wanted. */
static void
connbw_visit(channel_t *chan, void *arg)
{
  int want = *(int *)arg;
  uint64_t rd, wr;
  if (channel_take_bytes(chan, &rd, &wr) < 0 || !want)
    return;
  char *text = control_connbw_event(channel_global_id(chan), "OR", rd, wr);
  if (text) {
    send_event(EV_CONN_BW, text);
    free(text);
  }
}

static void
cellstats_visit(circuit_t *circ, void *arg)
{
  int want = *(int *)arg;
  control_cellstats_side_t in, out;
  memset(&in, 0, sizeof(in));
  memset(&out, 0, sizeof(out));
  if (circ->kind == CIRC_KIND_OR) {
    or_circuit_t *oc = (or_circuit_t *)circ;
    in.present = oc->p_chan != NULL;
    if (in.present) {
      in.circ_id = oc->p_circ_id;
      in.conn_id = channel_global_id(oc->p_chan);
    }
    circ_queue_take_cmd_stats(&oc->p_queue, &in.counts);
  }
  out.present = circ->n_chan != NULL;
  if (out.present) {
    out.circ_id = circ->n_circ_id;
    out.conn_id = channel_global_id(circ->n_chan);
  }
  circ_queue_take_cmd_stats(&circ->n_queue, &out.counts);
  if (!want)
    return;
  char *text = control_cellstats_event(circ->kind == CIRC_KIND_ORIGIN,
                                       circ->gid, &in, &out);
  if (text) {
    send_event(EV_CELL_STATS, text);
    free(text);
  }
}

/* A closing circuit's last (partial) second, so that its counts add up
 * (tor loses them). */
static void
cellstats_closing(circuit_t *circ)
{
  int want = 1;
  cellstats_visit(circ, &want);
}

static void
testing_events_tick(void)
{
  if (S.conn_bw_event) {
    int want = (all_events() & EVBIT(EV_CONN_BW)) != 0;
    channels_foreach(connbw_visit, &want);
  }
  if (S.cell_stats_event) {
    int want = (all_events() & EVBIT(EV_CELL_STATS)) != 0;
    circuits_foreach(CIRC_KIND_ORIGIN, cellstats_visit, &want);
    circuits_foreach(CIRC_KIND_OR, cellstats_visit, &want);
  }
}

static void
apply_testing(const control_config_t *cfg)
{
  S.conn_bw_event = cfg->conn_bw_event;
  S.cell_stats_event = cfg->cell_stats_event;
  circ_queues_count_commands(S.cell_stats_event);
}

static void
bw_timer_cb(void *arg)
{
  (void)arg;
  uint64_t r, w;
  conn_get_totals(&r, &w);
  uint64_t dr = r - S.last_read, dw = w - S.last_written;
  S.last_read = r;
  S.last_written = w;
  S.bw_cache[S.bw_cache_next][0] = dr;
  S.bw_cache[S.bw_cache_next][1] = dw;
  S.bw_cache_next = (S.bw_cache_next + 1) % CONTROL_BW_CACHE_LEN;
  if (S.bw_cache_n < CONTROL_BW_CACHE_LEN)
    S.bw_cache_n++;
  circbw_tick();
  testing_events_tick();
  time_t now = time(NULL);
  int64_t jump = control_clock_jump_seconds(S.last_tick_wall, now);
  S.last_tick_wall = now;
  if (jump) {
    char text[64];
    log_notice("The system clock jumped %lld seconds %s between two "
               "one-second ticks", (long long)(jump < 0 ? -jump : jump),
               jump < 0 ? "backward" : "forward");
    snprintf(text, sizeof(text), "CLOCK_JUMPED TIME=%lld", (long long)jump);
    control_event_status(CONTROL_STATUS_GENERAL, "WARN", text);
  }
  if (all_events() & EVBIT(EV_BW)) {
    char text[64];
    snprintf(text, sizeof(text), "BW %llu %llu", (unsigned long long)dr,
             (unsigned long long)dw);
    send_event(EV_BW, text);
  }
}

int64_t
control_clock_jump_seconds(int64_t prev_wall, int64_t now_wall)
{
  if (prev_wall <= 0)
    return 0;
  int64_t d = now_wall - prev_wall;
  return d >= CONTROL_CLOCK_JUMP_SECONDS || d <= -CONTROL_CLOCK_JUMP_SECONDS
             ? d
             : 0;
}

/* Out of descriptors (a listener's accept() or a new socket failed):
 * STATUS_GENERAL WARN TOO_MANY_CONNECTIONS CURRENT=<descriptors open>
 * (control-spec 4.1.10), once per episode (lib/net reports the next one
 * after a descriptor was obtained again). */
static void
fds_exhausted_cb(int err, void *arg)
{
  (void)err;
  (void)arg;
  if (!(all_events() & EVBIT(EV_STATUS_GENERAL)))
    return; /* counting probes every descriptor: only when asked for */
  char text[64];
  snprintf(text, sizeof(text), "TOO_MANY_CONNECTIONS CURRENT=%u",
           conn_count_open_fds());
  control_event_status(CONTROL_STATUS_GENERAL, "WARN", text);
}

/* "$HEX~nick" for a relay identity, nickname from the consensus. */
static void
format_relay(char *out, size_t outlen, const uint8_t *rsa_id)
{
  char hex[41];
  base16_encode(hex, sizeof(hex), rsa_id, 20, BASE16_UPPER);
  const consensus_t *c = S.host.consensus ? S.host.consensus(S.host.arg)
                                          : NULL;
  const consensus_rs_t *rs = c ? consensus_find(c, rsa_id) : NULL;
  if (rs)
    snprintf(out, outlen, "$%s~%s", hex, rs->nickname);
  else
    snprintf(out, outlen, "$%s", hex);
}

static const char *
chan_target(const channel_t *chan, char *buf, size_t len)
{
  const uint8_t *id = channel_peer_rsa_id(chan);
  if (id) {
    format_relay(buf, len, id);
  } else {
    char a[PC_ADDR_STR_LEN];
    snprintf(buf, len, "%s", pc_addr_fmt(channel_peer_addr(chan), a,
                                         sizeof(a), 1));
  }
  return buf;
}

/* STATUS_GENERAL WARN CLOCK_SKEW SKEW=... SOURCE=OR:ADDR:PORT
 * (control-spec 4.1.10): the peer's NETINFO time is more than an hour
 * from ours, and the peer is a relay (authenticated, or one we connected
 * to), as tor reports it. SKEW is our clock minus theirs. */
static void
clock_skew_or(channel_t *chan)
{
  int64_t skew;
  if (!(all_events() & EVBIT(EV_STATUS_GENERAL)) ||
      !channel_netinfo_skew(chan, &skew) ||
      (skew <= CHANNEL_NETINFO_SKEW_WARN &&
       skew >= -CHANNEL_NETINFO_SKEW_WARN) ||
      (!channel_is_outgoing(chan) && !channel_is_authenticated_relay(chan)))
    return;
  char a[PC_ADDR_STR_LEN], text[128];
  snprintf(text, sizeof(text), "CLOCK_SKEW SKEW=%+lld SOURCE=OR:%s",
           (long long)skew,
           pc_addr_fmt(channel_peer_addr(chan), a, sizeof(a), 1));
  control_event_status(CONTROL_STATUS_GENERAL, "WARN", text);
}

/* STATUS_GENERAL WARN BUG REASON="..." (control-spec 4.1.10): pctor's
 * log_bug() fired. */
static void
bug_cb(const char *msg, void *arg)
{
  (void)arg;
  char *q = control_proto_quote(msg);
  char *text = pc_asprintf("BUG REASON=%s", q);
  control_event_status(CONTROL_STATUS_GENERAL, "WARN", text);
  free(text);
  free(q);
}

static void
orconn_open_cb(channel_t *chan, void *arg)
{
  (void)arg;
  clock_skew_or(chan);
  if (!(all_events() & EVBIT(EV_ORCONN)))
    return;
  char t[128], text[200];
  snprintf(text, sizeof(text), "ORCONN %s CONNECTED ID=%llu",
           chan_target(chan, t, sizeof(t)),
           (unsigned long long)channel_global_id(chan));
  send_event(EV_ORCONN, text);
}

static char *
circuit_path(const origin_circuit_t *oc)
{
  size_t cap = 1 + (size_t)oc->n_hops_open * 64;
  char *p = pc_zalloc(cap);
  for (int i = 0; i < oc->n_hops_open; i++) {
    char r[100];
    format_relay(r, sizeof(r), oc->hops[i].target.rsa_id);
    if (i)
      strcat(p, ",");
    strncat(p, r, cap - strlen(p) - 1);
  }
  return p;
}

/* "ID STATUS [PATH] PURPOSE=GENERAL TIME_CREATED=... [CONFLUX_ID=...
 * [CONFLUX_RTT=...]]" (control-spec 4.1.1), as circuit-status lines and
 * CIRC events share it. */
static char *
circ_line(const origin_circuit_t *oc, const char *status)
{
  const circuit_t *circ = &oc->base;
  char *path = circuit_path(oc);
  char created[32];
  time_t wall = time(NULL) -
                (time_t)((evloop_now_us(S.loop) - circ->created_us) /
                         1000000);
  struct tm tm;
  gmtime_r(&wall, &tm);
  strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
  /* A circuit its builder ended after one hop is a directory tunnel. */
  int onehop = oc->n_hops == 1 && oc->n_hops_open == 1;
  /* A conflux leg: tor's purposes, its set's nonce and its link RTT
   * (usec), as tor. */
  char cfx[160] = "";
  uint8_t nonce[32];
  uint64_t rtt_us = 0;
  int leg = client_ctl_conflux_id(circ->gid, nonce, &rtt_us);
  if (leg) {
    char hex[65];
    base16_encode(hex, sizeof(hex), nonce, sizeof(nonce), BASE16_UPPER);
    int n = snprintf(cfx, sizeof(cfx), " CONFLUX_ID=%s", hex);
    if (rtt_us)
      snprintf(cfx + n, sizeof(cfx) - (size_t)n, " CONFLUX_RTT=%llu",
               (unsigned long long)rtt_us);
  }
  char *line = pc_asprintf("%llu %s%s%s %sPURPOSE=%s "
                           "TIME_CREATED=%s.000000%s",
                           (unsigned long long)circ->gid, status,
                           *path ? " " : "", path,
                           onehop ? "BUILD_FLAGS=ONEHOP_TUNNEL " : "",
                           leg == 2   ? "CONFLUX_LINKED"
                           : leg == 1 ? "CONFLUX_UNLINKED"
                                      : "GENERAL",
                           created, cfx);
  free(path);
  return line;
}

static const char *
circ_status(const origin_circuit_t *oc)
{
  return oc->n_hops_open == 0          ? "LAUNCHED"
         : oc->n_hops_open < oc->n_hops ? "EXTENDED"
                                        : "BUILT";
}

static void
circ_event(const origin_circuit_t *oc, const char *status)
{
  char *line = circ_line(oc, status);
  char *text = pc_asprintf("CIRC %s", line);
  send_event(EV_CIRC, text);
  free(text);
  free(line);
}

static void
circ_progress_cb(origin_circuit_t *oc, void *arg)
{
  (void)arg;
  if (all_events() & EVBIT(EV_CIRC))
    circ_event(oc, circ_status(oc));
}

/* A conflux leg linked: its purpose changed (tor's CIRC_MINOR). */
static void
conflux_link_cb(const origin_circuit_t *oc, void *arg)
{
  (void)arg;
  if (!(all_events() & EVBIT(EV_CIRC_MINOR)))
    return;
  char *line = circ_line(oc, "PURPOSE_CHANGED");
  char *text = pc_asprintf("CIRC_MINOR %s OLD_PURPOSE=CONFLUX_UNLINKED",
                           line);
  send_event(EV_CIRC_MINOR, text);
  free(text);
  free(line);
}

/* A MeasureMe hop answered (or sent garbage): one MEASUREME event per
 * status, per record, per garbage answer. */
static void
measureme_answer_cb(const client_measureme_event_t *ev, void *arg)
{
  (void)arg;
  if (!(all_events() & EVBIT(EV_MEASUREME)))
    return;
  char head[96];
  snprintf(head, sizeof(head), "MEASUREME CircuitID=%llu Hop=%d",
           (unsigned long long)ev->circ_gid, ev->hop);
  const measureme_answer_t *a = ev->answer;
  if (!a) {
    char *q = control_proto_quote(ev->error ? ev->error : "garbage");
    char *text = pc_asprintf("%s Type=ERROR Reason=%s", head, q);
    send_event(EV_MEASUREME, text);
    free(text);
    free(q);
    return;
  }
  char label[17];
  base16_encode(label, sizeof(label), a->label, 8, BASE16_LOWER);
  if (a->type == MEASUREME_ANSWER_STATUS) {
    const char *name = measureme_result_name(a->result);
    char *text = pc_asprintf("%s Label=%s Type=STATUS Result=%s", head,
                             label, name ? name : "unknown");
    send_event(EV_MEASUREME, text);
    free(text);
    return;
  }
  for (unsigned i = 0; i < a->n_records; i++) {
    const measureme_answer_record_t *r = &a->records[i];
    char *text = pc_asprintf(
        "%s Label=%s Type=RECORD Seq=%u OffsetMs=%u CellsFwd=%u "
        "CellsBwd=%u QueuedFwd=%u SentFwd=%u DelayAvgFwdUs=%u "
        "DelayMaxFwdUs=%u QueuedBwd=%u SentBwd=%u DelayAvgBwdUs=%u "
        "DelayMaxBwdUs=%u",
        head, label, r->seq, r->offset_ms, r->cells_fwd, r->cells_bwd,
        r->fwd.queued, r->fwd.sent, r->fwd.delay_avg_us, r->fwd.delay_max_us,
        r->bwd.queued, r->bwd.sent, r->bwd.delay_avg_us, r->bwd.delay_max_us);
    send_event(EV_MEASUREME, text);
    free(text);
  }
}

static void
circ_close_cb(circuit_t *circ, void *arg)
{
  (void)arg;
  if (S.circbw && (all_events() & EVBIT(EV_CIRC_BW)))
    circbw_closing(circ);
  if (S.cell_stats_event && (all_events() & EVBIT(EV_CELL_STATS)))
    cellstats_closing(circ);
  if (circ->kind != CIRC_KIND_ORIGIN || !(all_events() & EVBIT(EV_CIRC)))
    return;
  const origin_circuit_t *oc = (const origin_circuit_t *)circ;
  /* As tor: a circuit that never got built FAILED, a built one CLOSED. */
  int built = oc->n_hops_open > 0 && oc->n_hops_open == oc->n_hops;
  circ_event(oc, built ? "CLOSED" : "FAILED");
}

static const char *const stream_status_names[] = {
    [CLIENT_STREAM_NEW] = "NEW", [CLIENT_STREAM_SENTCONNECT] = "SENTCONNECT",
    [CLIENT_STREAM_SUCCEEDED] = "SUCCEEDED",
    [CLIENT_STREAM_FAILED] = "FAILED", [CLIENT_STREAM_CLOSED] = "CLOSED",
    [CLIENT_STREAM_DETACHED] = "DETACHED",
    [CLIENT_STREAM_NEWRESOLVE] = "NEWRESOLVE",
    [CLIENT_STREAM_SENTRESOLVE] = "SENTRESOLVE"};

/* "ID STATUS CIRCID TARGET" (control-spec 4.1.2), IPv6 in brackets. */
static char *
stream_line(const client_stream_info_t *si)
{
  int v6 = strchr(si->address, ':') != NULL;
  return pc_asprintf("%llu %s %llu %s%s%s:%u", (unsigned long long)si->id,
                     stream_status_names[si->status],
                     (unsigned long long)si->circ_gid, v6 ? "[" : "",
                     si->address, v6 ? "]" : "", si->port);
}

static void
stream_event_cb(const client_stream_info_t *si, void *arg)
{
  (void)arg;
  if (!(all_events() & EVBIT(EV_STREAM)))
    return;
  char *line = stream_line(si);
  char src[PC_ADDR_STR_LEN + 16] = "";
  if ((si->status == CLIENT_STREAM_NEW ||
       si->status == CLIENT_STREAM_NEWRESOLVE) &&
      si->source &&
      si->source->family != AF_UNSPEC) {
    char a[PC_ADDR_STR_LEN];
    snprintf(src, sizeof(src), " SOURCE_ADDR=%s",
             pc_addr_fmt(si->source, a, sizeof(a), 1));
  }
  char why[64] = "";
  if (si->status == CLIENT_STREAM_FAILED ||
      si->status == CLIENT_STREAM_CLOSED)
    control_proto_stream_reason(why, sizeof(why), si->reason,
                                si->reason_remote);
  char *text = pc_asprintf("STREAM %s%s%s PURPOSE=%s", line, why, src,
                           si->is_resolve ? "DNS_REQUEST" : "USER");
  send_event(EV_STREAM, text);
  free(text);
  free(line);
}

static void
owner_timer_cb(void *arg)
{
  (void)arg;
  if (S.owning_pid <= 0)
    return;
  if (kill((pid_t)S.owning_pid, 0) < 0 && errno == ESRCH) {
    log_notice("Owning controller process %ld vanished -- exiting now.",
               S.owning_pid);
    S.owning_pid = 0;
    evloop_timer_cancel(S.owner_timer);
    if (S.host.signal)
      S.host.signal(CONTROL_SIGNAL_HALT, S.host.arg);
  }
}

/* ---- GETINFO ---- */

static char *
getinfo_listeners(const char *which)
{
  if (!strcmp(which, "control")) {
    char *s = pc_strdup("");
    if (S.tcp) {
      char *q = control_proto_quote(S.tcp_addr);
      free(s);
      s = q;
    }
    if (S.unix_l) {
      char *u = pc_asprintf("unix:%s", S.unix_path);
      char *q = control_proto_quote(u);
      char *both = pc_asprintf("%s%s%s", s, *s ? " " : "", q);
      free(u);
      free(q);
      free(s);
      s = both;
    }
    return s;
  }
  return NULL;
}

static void
circ_status_cb(circuit_t *circ, void *arg)
{
  const origin_circuit_t *oc = (const origin_circuit_t *)circ;
  char *line = circ_line(oc, circ_status(oc));
  strbuf_addf(arg, "%s\n", line);
  free(line);
}

static void
stream_status_cb(const client_stream_info_t *si, void *arg)
{
  char *line = stream_line(si);
  strbuf_addf(arg, "%s\n", line);
  free(line);
}

static void
addrmap_line_cb(const char *from, const char *to, void *arg)
{
  strbuf_addf(arg, "%s %s NEVER\n", from, to);
}

static void
orconn_status_cb(channel_t *chan, void *arg)
{
  strbuf_t *b = arg;
  char t[128];
  const char *st = channel_is_open(chan) ? "CONNECTED" : "LAUNCHED";
  if (!channel_is_open(chan) && !channel_is_outgoing(chan))
    return; /* tor lists incoming connections once they are open */
  strbuf_addf(b, "%s %s\n", chan_target(chan, t, sizeof(t)), st);
}

static void
format_rs(strbuf_t *b, const consensus_t *c, const consensus_rs_t *rs)
{
  char id[40], dg[64], when[TIME_ISO_LEN + 1];
  base64_encode(id, sizeof(id), rs->rsa_id, 20, BASE64_NOPAD);
  time_format_iso(when, c->valid_after);
  uint32_t ip = rs->ipv4;
  strbuf_addf(b, "r %s %s", rs->nickname, id);
  /* A microdescriptor consensus has no descriptor digests: zeros, as tor
   * writes them (stem parses the "r" line by its field count). */
  static const uint8_t zero[20];
  base64_encode(dg, sizeof(dg),
                rs->has_digest && c->flavor == CONSENSUS_FLAVOR_NS
                    ? rs->digest
                    : zero,
                20, BASE64_NOPAD);
  strbuf_addf(b, " %s", dg);
  strbuf_addf(b, " %s %u.%u.%u.%u %u %u\n", when, ip >> 24, (ip >> 16) & 255,
         (ip >> 8) & 255, ip & 255, rs->or_port, rs->dir_port);
  if (rs->has_ipv6) {
    char a[PC_ADDR_STR_LEN];
    strbuf_addf(b, "a %s\n", pc_addr_fmt(&rs->ipv6_or, a, sizeof(a), 1));
  }
  strbuf_addf(b, "s");
  for (uint32_t bit = 1; bit && bit <= RS_FLAG_SYBIL; bit <<= 1)
    if ((rs->flags & bit) && consensus_flag_name(bit))
      strbuf_addf(b, " %s", consensus_flag_name(bit));
  strbuf_addf(b, "\n");
  if (rs->version)
    strbuf_addf(b, "v %s\n", rs->version);
  if (rs->protocols)
    strbuf_addf(b, "pr %s\n", rs->protocols);
  if (rs->has_bandwidth)
    strbuf_addf(b, "w Bandwidth=%u%s\n", rs->bandwidth,
           rs->bw_unmeasured ? " Unmeasured=1" : "");
}

/* ---- NEWCONSENSUS, NS, STATUS_CLIENT ---- */

void
control_event_status(control_status_t which, const char *severity,
                     const char *text)
{
  static const char *const names[] = {"STATUS_GENERAL", "STATUS_CLIENT",
                                      "STATUS_SERVER"};
  static const int evs[] = {EV_STATUS_GENERAL, EV_STATUS_CLIENT,
                            EV_STATUS_SERVER};
  if (!S.started || !(all_events() & EVBIT(evs[which])))
    return;
  char *line = pc_asprintf("%s %s %s", names[which], severity, text);
  send_event(evs[which], line);
  free(line);
}

/* Is there a ControlPort or ControlSocket (then the one-second timer
 * runs)? Without one, no state is kept for events. */
static int
control_listening(void)
{
  return S.started && S.bw_timer;
}

void
control_event_descriptors(const dir_nodelist_t *nl)
{
  if (!control_listening() || !nl || !nl->consensus)
    return;
  int f = nl->consensus->flavor == CONSENSUS_FLAVOR_NS ? 0 : 1;
  hmap_t *seen = hmap_new(20);
  strbuf_t b = {0};
  strbuf_addf(&b, "NEWDESC");
  size_t base = b.len;
  for (int i = 0; i < nl->n_nodes; i++) {
    const dir_node_t *n = &nl->nodes[i];
    if (!n->desc)
      continue;
    uintptr_t v = (uintptr_t)(get_u64(n->desc->digest) | 1);
    hmap_set(seen, n->rsa_id, (void *)v);
    /* The first round only learns what we have. */
    if (S.desc_seen[f] && (uintptr_t)hmap_get(S.desc_seen[f], n->rsa_id) != v)
      strbuf_addf(&b, " $%s~%s", n->hex_id, n->nickname);
  }
  if (b.len > base && (all_events() & EVBIT(EV_NEWDESC)))
    send_event(EV_NEWDESC, b.s);
  free(b.s);
  if (S.desc_seen[f])
    hmap_free(S.desc_seen[f], NULL);
  S.desc_seen[f] = seen;
}

/* What an NS event reports a change of: flags, descriptor, address,
 * weight (not the publication time, which every consensus changes). */
static uint64_t
rs_fingerprint(const consensus_rs_t *rs)
{
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  uint8_t b[32 + 4 + 2 + 2 + 4 + 4];
  memcpy(b, rs->digest, 32);
  set_u32(b + 32, rs->ipv4);
  set_u16(b + 36, rs->or_port);
  set_u16(b + 38, rs->dir_port);
  set_u32(b + 40, rs->flags);
  set_u32(b + 44, rs->has_bandwidth ? rs->bandwidth : 0);
  for (size_t i = 0; i < sizeof(b); i++)
    h = (h ^ b[i]) * 1099511628211ULL;
  return h ? h : 1; /* a map value is never 0 */
}

void
control_event_new_consensus(const consensus_t *c)
{
  if (!control_listening() || !c)
    return;
  uint64_t want = all_events();
  /* A consensus from the future: STATUS_GENERAL WARN CLOCK_SKEW
   * MIN_SKEW=-SECONDS SOURCE=CONSENSUS (control-spec 4.1.10; our clock is
   * at least that far behind). consensus.c logged the warning. */
  time_t now = time(NULL);
  if (c->valid_after > now + CONSENSUS_EARLY_WARN) {
    char text[96];
    snprintf(text, sizeof(text), "CLOCK_SKEW MIN_SKEW=%+lld SOURCE=CONSENSUS",
             (long long)now - (long long)c->valid_after);
    control_event_status(CONTROL_STATUS_GENERAL, "WARN", text);
  }
  if (!S.bootstrapped) {
    S.bootstrapped = 1;
    control_event_status(CONTROL_STATUS_CLIENT, "NOTICE",
                         "BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"");
  }
  strbuf_t all = {0}, changed = {0};
  strbuf_addf(&all, "NEWCONSENSUS\n");
  strbuf_addf(&changed, "NS\n");
  size_t base = changed.len;
  hmap_t *seen = hmap_new(20);
  for (int i = 0; i < c->n_rs; i++) {
    const consensus_rs_t *rs = &c->rs[i];
    uint64_t fp = rs_fingerprint(rs);
    hmap_set(seen, rs->rsa_id, (void *)(uintptr_t)fp);
    if (want & EVBIT(EV_NEWCONSENSUS))
      format_rs(&all, c, rs);
    /* The first consensus is all new; later ones, what changed. */
    if ((want & EVBIT(EV_NS)) &&
        (!S.ns_seen ||
         (uintptr_t)hmap_get(S.ns_seen, rs->rsa_id) != (uintptr_t)fp))
      format_rs(&changed, c, rs);
  }
  if (want & EVBIT(EV_NEWCONSENSUS))
    send_event(EV_NEWCONSENSUS, all.s);
  if (changed.len > base)
    send_event(EV_NS, changed.s);
  free(all.s);
  free(changed.s);
  if (S.ns_seen)
    hmap_free(S.ns_seen, NULL);
  S.ns_seen = seen;
}

/* The value of one GETINFO key: 1 with *value, 0 unknown key, -1 with
 * *value the 551 reason. */
static int
getinfo_one(const char *key, char **value)
{
  *value = NULL;
  if (!strcmp(key, "version")) {
    *value = pc_strdup(control_version_string());
    return 1;
  }
  if (!strcmp(key, "process/pid")) {
    *value = pc_asprintf("%ld", (long)getpid());
    return 1;
  }
  if (!strcmp(key, "process/user")) {
    struct passwd *pw = getpwuid(geteuid());
    *value = pc_strdup(pw && pw->pw_name ? pw->pw_name : "");
    return 1;
  }
  if (!strcmp(key, "process/descriptor-limit")) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
      *value = pc_strdup("cannot read the descriptor limit");
      return -1;
    }
    *value = pc_asprintf("%llu", (unsigned long long)rl.rlim_cur);
    return 1;
  }
  if (!strcmp(key, "uptime")) {
    *value = pc_asprintf("%lld", (long long)(time(NULL) - S.started_at));
    return 1;
  }
  if (!strcmp(key, "traffic/read") || !strcmp(key, "traffic/written")) {
    uint64_t r, w;
    conn_get_totals(&r, &w);
    *value = pc_asprintf("%llu", (unsigned long long)(key[8] == 'r' ? r : w));
    return 1;
  }
  if (!strcmp(key, "bw-event-cache")) {
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    unsigned first = (S.bw_cache_next + CONTROL_BW_CACHE_LEN - S.bw_cache_n) %
                     CONTROL_BW_CACHE_LEN;
    for (unsigned i = 0; i < S.bw_cache_n; i++) {
      unsigned k = (first + i) % CONTROL_BW_CACHE_LEN;
      strbuf_addf(&b, "%s%llu,%llu", i ? " " : "",
             (unsigned long long)S.bw_cache[k][0],
             (unsigned long long)S.bw_cache[k][1]);
    }
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "events/names")) {
    strbuf_t b = {0};
    for (size_t i = 0; i < N_EVENTS; i++)
      strbuf_addf(&b, "%s%s", i ? " " : "", event_names[i]);
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "circuit-status")) {
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    circuits_foreach(CIRC_KIND_ORIGIN, circ_status_cb, &b);
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "orconn-status")) {
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    channels_foreach(orconn_status_cb, &b);
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "address-mappings/all") ||
      !strcmp(key, "address-mappings/control") ||
      !strcmp(key, "address-mappings/config") ||
      !strcmp(key, "address-mappings/cache")) {
    /* Every mapping pctor keeps is a controller's (MAPADDRESS): none
     * from the torrc, no DNS cache. */
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    if (!strcmp(key, "address-mappings/all") ||
        !strcmp(key, "address-mappings/control"))
      client_ctl_foreach_mapping(addrmap_line_cb, &b);
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "stream-status")) {
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    client_foreach_stream(stream_status_cb, &b);
    *value = b.s;
    return 1;
  }
  if (!strcmp(key, "status/version/current")) {
    *value = pc_strdup("unknown");
    return 1;
  }
  if (!strcmp(key, "signal/names")) {
    *value = pc_strdup("RELOAD SHUTDOWN DUMP DEBUG HALT HUP INT USR1 USR2 "
                       "TERM NEWNYM CLEARDNSCACHE HEARTBEAT ACTIVE DORMANT");
    return 1;
  }
  if (!strcmp(key, "features/names")) {
    *value = pc_strdup("VERBOSE_NAMES EXTENDED_EVENTS");
    return 1;
  }
  if (!strcmp(key, "status/clients-seen")) {
    *value = pc_strdup("Not a bridge");
    return -1;
  }
  if (!strcmp(key, "dormant")) {
    *value = pc_strdup("0");
    return 1;
  }
  const consensus_t *c =
      S.host.consensus ? S.host.consensus(S.host.arg) : NULL;
  if (!strcmp(key, "status/bootstrap-phase")) {
    *value = pc_strdup(c ? "NOTICE BOOTSTRAP PROGRESS=100 TAG=done "
                           "SUMMARY=\"Done\""
                         : "NOTICE BOOTSTRAP PROGRESS=0 TAG=starting "
                           "SUMMARY=\"Starting\"");
    return 1;
  }
  if (!strcmp(key, "network-liveness")) {
    channel_stats_t st;
    channels_get_stats(&st);
    *value = pc_strdup(st.n_open > 0 || c ? "up" : "down");
    return 1;
  }
  if (!strcmp(key, "ns/all") || !strncmp(key, "ns/id/", 6) ||
      !strncmp(key, "ns/name/", 8)) {
    if (!c) {
      *value = pc_strdup("no consensus yet");
      return -1;
    }
    strbuf_t b = {0};
    strbuf_addf(&b, "%s", "");
    if (!strcmp(key, "ns/all")) {
      for (int i = 0; i < c->n_rs; i++)
        format_rs(&b, c, &c->rs[i]);
      *value = b.s;
      return 1;
    }
    const consensus_rs_t *rs = NULL;
    if (key[3] == 'i') {
      const char *h = key + 6;
      uint8_t id[20];
      if (*h == '$')
        h++;
      if (strlen(h) < 40 || base16_decode(id, sizeof(id), h, 40) != 20) {
        free(b.s);
        *value = pc_asprintf("\"%s\" is not a relay fingerprint", key + 6);
        return -1;
      }
      rs = consensus_find(c, id);
    } else {
      for (int i = 0; i < c->n_rs && !rs; i++)
        if (!strcasecmp(c->rs[i].nickname, key + 8))
          rs = &c->rs[i];
    }
    if (!rs) {
      free(b.s);
      *value = pc_strdup("no such relay in the consensus");
      return -1;
    }
    format_rs(&b, c, rs);
    *value = b.s;
    return 1;
  }
  if (!strncmp(key, "net/listeners/", 14)) {
    char *v = getinfo_listeners(key + 14);
    if (v) {
      *value = v;
      return 1;
    }
  }
  if (S.host.getinfo) {
    int r = S.host.getinfo(key, value, S.host.arg);
    if (r != 0)
      return r;
  }
  if (!strcmp(key, "net/listeners/or") || !strcmp(key, "net/listeners/dir") ||
      !strcmp(key, "net/listeners/socks") ||
      !strcmp(key, "net/listeners/metrics") ||
      !strcmp(key, "net/listeners/trans") ||
      !strcmp(key, "net/listeners/natd") ||
      !strcmp(key, "net/listeners/dns") ||
      !strcmp(key, "net/listeners/extor") ||
      !strcmp(key, "net/listeners/httptunnel")) {
    *value = pc_strdup("");
    return 1;
  }
  return 0;
}

/* Keys for info/names ("key -- description"). */
static const char *const info_names[] = {
    "address-mappings/* -- Current address mappings.",
    "accounting/bytes -- Number of bytes read/written so far in the "
    "accounting interval.",
    "accounting/bytes-left -- Number of bytes left to write/read so far in "
    "the accounting interval.",
    "accounting/enabled -- Is accounting currently enabled?",
    "accounting/hibernating -- Are we hibernating or awake?",
    "accounting/interval-end -- Time when the accounting period ends.",
    "accounting/interval-start -- Time when the accounting period starts.",
    "accounting/interval-wake -- Time to wake up in this accounting period.",
    "address -- IP address of this relay.",
    "address/v4 -- IPv4 address of this relay.",
    "address/v6 -- IPv6 address of this relay.",
    "bw-event-cache -- Cached BW events for a short interval.",
    "circuit-status -- List of current circuits originating here.",
    "config-file -- Current location of the torrc file.",
    "config/names -- List of configuration options, types, and "
    "documentation.",
    "config-text -- Return the current configuration as text.",
    "dormant -- Is Tor dormant (not building circuits because it's idle)?",
    "events/names -- Events that the controller can ask for with SETEVENTS.",
    "exit-policy/default -- The default value appended to the configured "
    "exit policy.",
    "exit-policy/full -- The entire exit policy of onion router.",
    "exit-policy/ipv4 -- The IPv4 rules of this relay's exit policy.",
    "exit-policy/ipv6 -- The IPv6 rules of this relay's exit policy.",
    "features/names -- What arguments can USEFEATURE take?",
    "desc/id/* -- Server descriptor by hex ID.",
    "desc/name/* -- Server descriptor by nickname.",
    "fingerprint -- Fingerprint of this relay.",
    "info/names -- List of GETINFO options, types, and documentation.",
    "md/id/* -- Microdescriptor by ID",
    "md/name/* -- Microdescriptor by name",
    "net/listeners/* -- Bound addresses by type (or, control, socks, "
    "metrics).",
    "network-liveness -- Current opinion on whether the network is live.",
    "ns/all -- Brief summary of router status (v2 directory format).",
    "ns/id/* -- Brief summary of router status by ID (v2 directory format).",
    "ns/name/* -- Brief summary of router status by nickname (v2 directory "
    "format).",
    "orconn-status -- A list of current OR connections.",
    "process/descriptor-limit -- File descriptor limit.",
    "process/pid -- Process id belonging to the main tor process.",
    "process/user -- Username under which the tor process is running.",
    "signal/names -- Signals that the controller can send with SIGNAL.",
    "status/bootstrap-phase -- The last bootstrap phase status event.",
    "status/version/current -- Status of the current version.",
    "stream-status -- List of current streams.",
    "traffic/read -- Bytes read since the process was started.",
    "traffic/written -- Bytes written since the process was started.",
    "uptime -- Uptime of the Tor daemon in seconds.",
    "version -- The current version of Tor.",
};

static int
cmd_getinfo(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *key;
  buf_t *tmp = buf_new();
  int ok = 1;
  while ((key = control_proto_next_arg(&p))) {
    char *v = NULL;
    int r;
    if (!strcmp(key, "info/names")) {
      strbuf_t b = {0};
      for (size_t i = 0; i < sizeof(info_names) / sizeof(info_names[0]); i++)
        strbuf_addf(&b, "%s\n", info_names[i]);
      v = b.s;
      r = 1;
    } else {
      r = getinfo_one(key, &v);
    }
    if (r == 0) {
      char *q = control_proto_quote(key);
      replyf(cc, 552, "Unrecognized key %s", q);
      free(q);
      ok = 0;
    } else if (r < 0) {
      replyf(cc, 551, "%s", v ? v : "Internal error");
      ok = 0;
    } else if (strchr(v, '\n') || !strcmp(key, "circuit-status") ||
               !strcmp(key, "orconn-status") ||
               !strcmp(key, "stream-status") || !strncmp(key, "ns/", 3) ||
               !strncmp(key, "address-mappings/", 17) ||
               !strncmp(key, "desc/", 5) || !strncmp(key, "md/", 3)) {
      char *head = pc_asprintf("%s=", key);
      control_proto_add_line(tmp, 250, '+', head);
      control_proto_add_data(tmp, v);
      free(head);
    } else {
      char *line = pc_asprintf("%s=%s", key, v);
      control_proto_add_line(tmp, 250, '-', line);
      free(line);
    }
    free(v);
    free(key);
    if (ok && buf_datalen(tmp) > CONTROL_MAX_OUTBUF) {
      /* Many large keys in one command: refuse rather than buffer it. */
      reply(cc, 551, "Reply too large; ask for fewer keys at a time");
      ok = 0;
    }
    if (!ok)
      break;
  }
  if (ok) {
    buf_move_all(conn_outbuf(cc->conn), tmp);
    reply(cc, 250, "OK");
  }
  buf_free(tmp);
  return 0;
}

/* ---- GETCONF ---- */

static void
cmd_getconf(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *key;
  buf_t *tmp = buf_new();
  int ok = 1;
  while ((key = control_proto_next_arg(&p)) && ok) {
    char *canon = NULL, **vals = NULL;
    int n = 0;
    int r = S.host.getconf ? S.host.getconf(key, &canon, &vals, &n,
                                            S.host.arg)
                           : 0;
    if (r <= 0) {
      char *q = control_proto_quote(key);
      replyf(cc, 552, "Unrecognized configuration key %s", q);
      free(q);
      ok = 0;
    } else if (n == 0) {
      control_proto_add_line(tmp, 250, '-', canon);
    } else {
      for (int i = 0; i < n; i++) {
        char *line = pc_asprintf("%s=%s", canon, vals[i]);
        control_proto_add_line(tmp, 250, '-', line);
        free(line);
      }
    }
    for (int i = 0; i < n; i++)
      free(vals[i]);
    free(vals);
    free(canon);
    free(key);
  }
  free(key);
  if (ok) {
    /* The last line of the reply has "250 " instead of "250-". */
    size_t len = buf_datalen(tmp);
    if (len == 0) {
      reply(cc, 250, "OK");
    } else {
      char *all = pc_malloc(len + 1);
      buf_get(tmp, all, len);
      all[len] = '\0';
      /* find the start of the last line */
      char *last = all + len - 2;
      while (last > all && last[-1] != '\n')
        last--;
      last[3] = ' ';
      buf_add(conn_outbuf(cc->conn), all, len);
      free(all);
    }
  }
  buf_free(tmp);
}

/* ---- SETCONF, RESETCONF, LOADCONF, SAVECONF ---- */

/* Answer a host's result: 0 is "250 OK", else the code and its text. */
static void
reply_result(ctl_conn_t *cc, int code, char *err)
{
  if (code == 0)
    reply(cc, 250, "OK");
  else
    reply(cc, code, err ? err : "Failed");
  free(err);
}

static void
cmd_setconf(ctl_conn_t *cc, const char *args, int reset)
{
  control_kv_t *kvs = NULL;
  int n = 0;
  char *err = NULL;
  if (control_proto_parse_kvs(args, &kvs, &n, &err) < 0) {
    replyf(cc, 513, "syntax error in configuration values: %s", err);
    free(err);
    return;
  }
  if (n == 0) {
    /* tor: nothing to set is a success (stem sends none at times). */
    reply(cc, 250, "OK");
    free(kvs);
    return;
  }
  int code = S.host.setconf
                 ? S.host.setconf(kvs, n, reset, &err, S.host.arg)
                 : (err = pc_strdup("not supported by this daemon"), 553);
  control_kvs_free(kvs, n);
  reply_result(cc, code, err);
}

static void
cmd_loadconf(ctl_conn_t *cc, const control_cmd_t *cmd)
{
  char *err = NULL;
  if (!cmd->has_data) {
    reply(cc, 513, "LOADCONF needs a data block: +LOADCONF, the torrc's "
                   "lines, then a line with \".\"");
    return;
  }
  int code = S.host.loadconf
                 ? S.host.loadconf(cmd->data, &err, S.host.arg)
                 : (err = pc_strdup("not supported by this daemon"), 553);
  reply_result(cc, code, err);
}

static void
cmd_saveconf(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *a;
  int force = 0;
  while ((a = control_proto_next_arg(&p))) {
    if (control_proto_eq(a, "FORCE")) {
      force = 1;
    } else {
      char *q = control_proto_quote(a);
      replyf(cc, 513, "Unrecognized SAVECONF argument %s", q);
      free(q);
      free(a);
      return;
    }
    free(a);
  }
  char *err = NULL;
  /* SAVECONF's failures are 551 in tor (stem expects that code). */
  int code = S.host.saveconf
                 ? S.host.saveconf(force, &err, S.host.arg)
                 : (err = pc_strdup("not supported by this daemon"), 551);
  reply_result(cc, code, err);
}

/* ---- circuits and streams by hand (the SocksPort client) ---- */

/* A decimal ID (circuit or stream): 1 with *out, 0 when s is not one. */
static int
parse_id(const char *s, uint64_t *out)
{
  if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 19)
    return 0;
  *out = strtoull(s, NULL, 10);
  return 1;
}

static void
cmd_extendcircuit(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *id = control_proto_next_arg(&p), *a;
  char *path = NULL, *err = NULL;
  uint64_t circ = 0;
  int bad = 0;
  if (!parse_id(id, &circ)) {
    char *q = control_proto_quote(id ? id : "");
    replyf(cc, 552, "Unknown circuit %s", q);
    free(q);
    free(id);
    return;
  }
  free(id);
  while (!bad && (a = control_proto_next_arg(&p))) {
    if (!strncasecmp(a, "purpose=", 8)) {
      if (strcasecmp(a + 8, "general")) {
        replyf(cc, 552, "pctor builds circuits of purpose general only, "
               "not %s", a + 8);
        bad = 1;
      }
    } else if (!path && !strchr(a, '=')) {
      path = pc_strdup(a);
    } else {
      char *q = control_proto_quote(a);
      replyf(cc, 512, "Unexpected argument %s", q);
      free(q);
      bad = 1;
    }
    free(a);
  }
  if (bad) {
    free(path);
    return;
  }
  if (!path && circ) {
    reply(cc, 552, "EXTENDCIRCUIT needs the relays to add: "
                   "EXTENDCIRCUIT ID RELAY[,RELAY...]");
    return;
  }
  if (!path) { /* EXTENDCIRCUIT 0: pctor chooses the path */
    uint64_t gid = 0;
    int code = client_ctl_extend_auto(&gid, &err);
    if (code)
      replyf(cc, 552, "%s", err); /* stem expects 552 for every failure */
    else
      replyf(cc, 250, "EXTENDED %llu", (unsigned long long)gid);
    free(err);
    return;
  }
  const char *hops[CIRCUIT_MAX_HOPS + 1];
  int n = 0;
  char *save = NULL;
  for (char *h = strtok_r(path, ",", &save); h;
       h = strtok_r(NULL, ",", &save))
    if (n <= CIRCUIT_MAX_HOPS)
      hops[n++] = h;
  uint64_t gid = circ;
  int code = circ ? client_ctl_extend_existing(circ, hops, n, &err)
                  : client_ctl_extend(hops, n, &gid, &err);
  if (code)
    replyf(cc, 552, "%s", err); /* stem expects 552 for every failure */
  else
    replyf(cc, 250, "EXTENDED %llu", (unsigned long long)gid);
  free(err);
  free(path);
}

/* 552 "Unknown WHAT "S"" unless s is a decimal ID (then 0, *out set). */
static int
need_id(const char *s, const char *what, uint64_t *out, char **err_out)
{
  if (parse_id(s, out))
    return 0;
  *err_out = pc_asprintf("Unknown %s \"%s\"", what, s ? s : "");
  return 552;
}

static void
cmd_setcircuitpurpose(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *id = control_proto_next_arg(&p);
  char *purpose = control_proto_next_arg(&p);
  uint64_t circ = 0;
  char *err = NULL;
  int code = need_id(id, "circuit", &circ, &err);
  if (!code && !client_ctl_has_circuit(circ)) {
    err = pc_asprintf("Unknown circuit \"%s\"", id);
    code = 552;
  } else if (!code && (!purpose || strncasecmp(purpose, "purpose=", 8))) {
    err = pc_strdup("Invalid purpose: SETCIRCUITPURPOSE ID purpose=P");
    code = 552;
  } else if (!code && strcasecmp(purpose + 8, "general")) {
    err = pc_asprintf("pctor's circuits have purpose general only, not %s",
                      purpose + 8);
    code = 552;
  }
  reply_result(cc, code, err);
  free(id);
  free(purpose);
}

static void
cmd_attachstream(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *sid = control_proto_next_arg(&p);
  char *cid = control_proto_next_arg(&p);
  char *hop = control_proto_next_arg(&p);
  uint64_t stream = 0, circ = 0, hopnum = 0;
  char *err = NULL;
  int code = need_id(sid, "stream", &stream, &err);
  if (!code)
    code = need_id(cid, "circuit", &circ, &err);
  /* [SP "HOP=" HopNum] (control-spec 3.13), 1-based. */
  if (!code && hop &&
      (strncasecmp(hop, "HOP=", 4) || !parse_id(hop + 4, &hopnum) ||
       hopnum < 1 || hopnum > CIRCUIT_MAX_HOPS)) {
    err = pc_asprintf("Bad value \"%s\"", hop);
    code = 552;
  }
  if (!code)
    code = client_ctl_attach_stream(stream, circ, (int)hopnum, &err);
  reply_result(cc, code, err);
  free(sid);
  free(cid);
  free(hop);
}

static void
cmd_closecircuit(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *id = control_proto_next_arg(&p), *f;
  uint64_t circ = 0;
  int if_unused = 0;
  while ((f = control_proto_next_arg(&p))) {
    if (control_proto_eq(f, "IfUnused"))
      if_unused = 1;
    free(f);
  }
  char *err = NULL;
  int code = need_id(id, "circuit", &circ, &err);
  if (!code)
    code = client_ctl_close_circuit(circ, if_unused, &err);
  reply_result(cc, code, err);
  free(id);
}

static void
cmd_closestream(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *sid = control_proto_next_arg(&p);
  char *why = control_proto_next_arg(&p);
  uint64_t stream = 0, reason = 0;
  char *err = NULL;
  int code = need_id(sid, "stream", &stream, &err);
  if (!code && (!parse_id(why, &reason) || reason > 255)) {
    err = pc_asprintf("Unrecognized reason \"%s\"", why ? why : "");
    code = 552;
  }
  if (!code)
    code = client_ctl_close_stream(stream, (uint8_t)reason, &err);
  reply_result(cc, code, err);
  free(sid);
  free(why);
}

/* ---- authentication ---- */

static int
auth_needed(void)
{
  return S.have_cookie || S.hashed_password;
}

static void
cmd_protocolinfo(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *a;
  while ((a = control_proto_next_arg(&p))) {
    int digits = strspn(a, "0123456789") == strlen(a);
    free(a);
    if (!digits) {
      reply(cc, 513, "No such version");
      return;
    }
  }
  strbuf_t m = {0};
  if (!auth_needed())
    strbuf_addf(&m, "NULL");
  if (S.have_cookie)
    strbuf_addf(&m, "COOKIE,SAFECOOKIE");
  if (S.hashed_password)
    strbuf_addf(&m, "%sHASHEDPASSWORD", S.have_cookie ? "," : "");
  buf_t *out = conn_outbuf(cc->conn);
  control_proto_add_line(out, 250, '-', "PROTOCOLINFO 1");
  char *line;
  if (S.have_cookie) {
    char *q = control_proto_quote(S.cookie_file);
    line = pc_asprintf("AUTH METHODS=%s COOKIEFILE=%s", m.s, q);
    free(q);
  } else {
    line = pc_asprintf("AUTH METHODS=%s", m.s);
  }
  control_proto_add_line(out, 250, '-', line);
  free(line);
  char *q = control_proto_quote(control_version_string());
  line = pc_asprintf("VERSION Tor=%s", q);
  control_proto_add_line(out, 250, '-', line);
  free(line);
  free(q);
  reply(cc, 250, "OK");
  free(m.s);
  cc->sent_protocolinfo = 1;
}

/* Decode an AUTHENTICATE/AUTHCHALLENGE argument: a quoted string or hex.
 * Returns the bytes (newly allocated), NULL when malformed. */
static uint8_t *
decode_secret(const char *arg, size_t *len)
{
  if (*arg == '"') {
    const char *end = NULL;
    char *s = control_proto_unquote(arg, len, &end);
    if (s && *end) {
      free(s);
      return NULL;
    }
    return (uint8_t *)s;
  }
  size_t n = strlen(arg);
  if (n % 2)
    return NULL;
  uint8_t *b = pc_malloc(n / 2 + 1);
  if (n && base16_decode(b, n / 2, arg, n) != (long)(n / 2)) {
    free(b);
    return NULL;
  }
  *len = n / 2;
  return b;
}

static void
auth_failed(ctl_conn_t *cc, const char *why)
{
  replyf(cc, 515, "Authentication failed: %s", why);
  log_info("Control connection from %s: authentication failed (%s)",
           cc->peer, why);
  cc->closing = 1;
}

static void
cmd_authchallenge(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *method = control_proto_next_arg(&p);
  char *nonce_arg = control_proto_next_arg(&p);
  char *extra = control_proto_next_arg(&p);
  if (!method || !control_proto_eq(method, "SAFECOOKIE")) {
    reply(cc, 513, "AUTHCHALLENGE only supports SAFECOOKIE authentication");
    cc->closing = 1;
  } else if (!S.have_cookie) {
    reply(cc, 513, "Cookie authentication is disabled");
    cc->closing = 1;
  } else if (!nonce_arg || extra) {
    reply(cc, 513, "Wrong number of arguments for AUTHCHALLENGE");
    cc->closing = 1;
  } else {
    size_t n = 0;
    uint8_t *cn = decode_secret(nonce_arg, &n);
    if (!cn) {
      reply(cc, 513, "Invalid base16 client nonce");
      cc->closing = 1;
    } else {
      uint8_t sn[CONTROL_NONCE_LEN], sh[32];
      crypt_rand(sn, sizeof(sn));
      control_auth_safecookie(S.cookie, cn, n, sn, sh, cc->client_hash);
      char shx[65], snx[65];
      base16_encode(shx, sizeof(shx), sh, 32, BASE16_UPPER);
      base16_encode(snx, sizeof(snx), sn, 32, BASE16_UPPER);
      replyf(cc, 250, "AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s", shx,
             snx);
      cc->challenged = 1;
      free(cn);
    }
  }
  free(method);
  free(nonce_arg);
  free(extra);
}

static void
cmd_authenticate(ctl_conn_t *cc, const char *args)
{
  size_t n = 0;
  while (*args == ' ')
    args++;
  uint8_t *secret = decode_secret(args, &n);
  if (!secret) {
    auth_failed(cc, "Invalid quoted string.  You need to put the password "
                    "in double quotes.");
    return;
  }
  int ok = 0;
  const char *why = NULL;
  if (cc->challenged) {
    ok = n == 32 && control_auth_memeq(secret, cc->client_hash, 32);
    why = "Safe cookie response did not match expected value.";
  } else if (!auth_needed()) {
    ok = 1;
  } else {
    if (S.have_cookie && n == CONTROL_COOKIE_LEN &&
        control_auth_memeq(secret, S.cookie, CONTROL_COOKIE_LEN))
      ok = 1;
    if (!ok && S.hashed_password &&
        control_auth_check_password(S.hashed_password, (const char *)secret,
                                    n) == 1)
      ok = 1;
    if (S.have_cookie && S.hashed_password)
      why = "Password did not match HashedControlPassword *or* "
            "authentication cookie.";
    else if (S.have_cookie)
      why = n == CONTROL_COOKIE_LEN
                ? "Authentication cookie did not match expected value."
                : "Wrong length on authentication cookie.";
    else
      why = "Password did not match HashedControlPassword value from "
            "configuration";
  }
  pc_memwipe(secret, n);
  free(secret);
  if (!ok) {
    auth_failed(cc, why);
    return;
  }
  cc->authenticated = 1;
  cc->challenged = 0;
  log_info("Authenticated control connection from %s", cc->peer);
  reply(cc, 250, "OK");
}

/* ---- other commands ---- */

static void
cmd_setevents(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *e;
  uint64_t mask = 0;
  while ((e = control_proto_next_arg(&p))) {
    size_t i;
    for (i = 0; i < N_EVENTS; i++)
      if (control_proto_eq(e, event_names[i]))
        break;
    if (i == N_EVENTS && !control_proto_eq(e, "EXTENDED")) {
      char *q = control_proto_quote(e);
      replyf(cc, 552, "Unrecognized event %s", q);
      free(q);
      free(e);
      return;
    }
    if (i < N_EVENTS)
      mask |= EVBIT(i);
    free(e);
  }
  cc->events = mask;
  update_log_hook();
  circbw_subscribed();
  reply(cc, 250, "OK");
}

static const struct {
  const char *name, *alias;
  control_signal_t sig;
} signals[] = {
    {"RELOAD", "HUP", CONTROL_SIGNAL_RELOAD},
    {"SHUTDOWN", "INT", CONTROL_SIGNAL_SHUTDOWN},
    {"HALT", "TERM", CONTROL_SIGNAL_HALT},
    {"DUMP", "USR1", CONTROL_SIGNAL_DUMP},
    {"DEBUG", "USR2", CONTROL_SIGNAL_DEBUG},
    {"NEWNYM", NULL, CONTROL_SIGNAL_NEWNYM},
    {"CLEARDNSCACHE", NULL, CONTROL_SIGNAL_CLEARDNSCACHE},
    {"HEARTBEAT", NULL, CONTROL_SIGNAL_HEARTBEAT},
    {"ACTIVE", NULL, CONTROL_SIGNAL_ACTIVE},
    {"DORMANT", NULL, CONTROL_SIGNAL_DORMANT},
};

static void
cmd_signal(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *s = control_proto_next_arg(&p);
  size_t i, n = sizeof(signals) / sizeof(signals[0]);
  for (i = 0; s && i < n; i++)
    if (control_proto_eq(s, signals[i].name) ||
        (signals[i].alias && control_proto_eq(s, signals[i].alias)))
      break;
  if (!s || i == n) {
    char *q = control_proto_quote(s ? s : "");
    replyf(cc, 552, "Unrecognized signal code %s", q);
    free(q);
    free(s);
    return;
  }
  free(s);
  if (!S.host.signal || S.host.signal(signals[i].sig, S.host.arg) < 0) {
    replyf(cc, 552, "Signal %s is not supported yet by pctor",
           signals[i].name);
    return;
  }
  reply(cc, 250, "OK");
  if (signals[i].sig != CONTROL_SIGNAL_SHUTDOWN &&
      signals[i].sig != CONTROL_SIGNAL_HALT) {
    char text[64];
    snprintf(text, sizeof(text), "SIGNAL %s", signals[i].name);
    send_event(EV_SIGNAL, text);
  }
}

/* ---- MAPADDRESS, DROPTIMEOUTS ---- */

static void
cmd_mapaddress(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *a;
  buf_t *out = buf_new();
  int n = 0, last_code = 0;
  char *last = NULL;
  strbuf_t events = {0};
  while ((a = control_proto_next_arg(&p))) {
    char *eq = strchr(a, '=');
    int code = 0;
    char *text = NULL, *from_out = NULL, *err = NULL;
    if (!eq || eq == a || !eq[1]) {
      code = 512;
      text = pc_asprintf("syntax error: mapping '%s' is not of the form "
                         "OldAddress=NewAddress",
                         a);
    } else {
      *eq = 0;
      code = client_ctl_mapaddress(a, eq + 1, &from_out, &err);
      if (code == 0) {
        code = 250;
        text = pc_asprintf("%s=%s", from_out, eq + 1);
        if (strcasecmp(a, eq + 1))
          strbuf_addf(&events, "ADDRMAP %s %s NEVER CACHED=\"NO\"\n",
                      from_out, eq + 1);
      } else {
        text = pc_asprintf("%s%s", code == 512 ? "syntax error: " : "",
                           err ? err : "mapping failed");
      }
    }
    free(from_out);
    free(err);
    free(a);
    if (last)
      control_proto_add_line(out, last_code, '-', last);
    free(last);
    last = text;
    last_code = code;
    n++;
  }
  if (!n) {
    reply(cc, 512, "syntax error: not enough arguments to mapaddress.");
  } else {
    control_proto_add_line(out, last_code, ' ', last);
    buf_move_all(conn_outbuf(cc->conn), out);
  }
  free(last);
  buf_free(out);
  /* After the reply, as tor. */
  if (events.s) {
    char *save = NULL;
    for (char *l = strtok_r(events.s, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save))
      send_event(EV_ADDRMAP, l);
  }
  free(events.s);
}

static void
cmd_droptimeouts(ctl_conn_t *cc, const char *args)
{
  (void)args;
  char *err = NULL;
  int code = client_ctl_drop_timeouts(&err);
  if (code) {
    replyf(cc, code, "%s", err);
    free(err);
    return;
  }
  reply(cc, 250, "OK");
  client_ctl_cbt_event(CBT_EV_RESET);
}

/* RESOLVE [mode=reverse] ADDRESS...: 250 OK, then one ADDRMAP event per
 * address when its lookup ends. */
static void
cmd_resolve(ctl_conn_t *cc, const char *args)
{
  const char *p = args;
  char *a;
  int reverse = 0, n = 0;
  char *names[16];
  while ((a = control_proto_next_arg(&p))) {
    if (!strcasecmp(a, "mode=reverse")) {
      reverse = 1;
      free(a);
    } else if (strchr(a, '=')) {
      char *q = control_proto_quote(a);
      replyf(cc, 512, "Unrecognized argument %s", q);
      free(q);
      free(a);
      for (int i = 0; i < n; i++)
        free(names[i]);
      return;
    } else if (n < 16) {
      names[n++] = a;
    } else {
      free(a);
    }
  }
  int code = n ? 0 : 512;
  char *err = n ? NULL : pc_strdup("Missing address");
  for (int i = 0; i < n && !code; i++)
    code = client_ctl_resolve_check(names[i], reverse, &err);
  if (code)
    replyf(cc, code, "%s", err);
  else
    reply(cc, 250, "OK");
  free(err);
  /* The answers come as ADDRMAP events, after the reply. */
  for (int i = 0; i < n; i++) {
    if (!code)
      client_ctl_resolve(names[i], reverse);
    free(names[i]);
  }
}

/* A lookup ended (control-spec ADDRMAP): the answer, or <error>. */
static void
resolve_cb(const client_resolve_result_t *r, void *arg)
{
  (void)arg;
  if (!(all_events() & EVBIT(EV_ADDRMAP)))
    return;
  time_t now = time(NULL);
  time_t until = now + (r->answer ? (time_t)r->ttl : 0);
  char utc[TIME_ISO_LEN + 1], local[32];
  time_format_iso(utc, until);
  struct tm tm;
  if (!localtime_r(&until, &tm) ||
      !strftime(local, sizeof(local), "%Y-%m-%d %H:%M:%S", &tm))
    snprintf(local, sizeof(local), "%s", utc);
  char *text;
  if (r->answer)
    text = pc_asprintf("ADDRMAP %s%s%s %s \"%s\" EXPIRES=\"%s\" "
                       "CACHED=\"NO\" STREAMID=%llu",
                       r->reverse ? "REVERSE[" : "", r->address,
                       r->reverse ? "]" : "", r->answer, local, utc,
                       (unsigned long long)r->stream_id);
  else
    text = pc_asprintf("ADDRMAP %s%s%s <error> \"%s\" error=yes "
                       "EXPIRES=\"%s\" CACHED=\"NO\" STREAMID=%llu",
                       r->reverse ? "REVERSE[" : "", r->address,
                       r->reverse ? "]" : "", local, utc,
                       (unsigned long long)r->stream_id);
  send_event(EV_ADDRMAP, text);
  free(text);
}

/* The client's build timeout changed (control-spec BUILDTIMEOUT_SET). */
static void
buildtimeout_cb(cbt_event_t ev, const cbt_info_t *i, void *arg)
{
  (void)arg;
  if (!(all_events() & EVBIT(EV_BUILDTIMEOUT_SET)))
    return;
  char text[320];
  snprintf(text, sizeof(text),
           "BUILDTIMEOUT_SET %s TOTAL_TIMES=%d TIMEOUT_MS=%u XM=%u "
           "ALPHA=%f CUTOFF_QUANTILE=%f TIMEOUT_RATE=%f CLOSE_MS=%u "
           "CLOSE_RATE=%f",
           ev == CBT_EV_RESET ? "RESET" : "COMPUTED", i->total_times,
           (unsigned)i->timeout_ms, (unsigned)(i->xm + 0.5), i->alpha,
           i->quantile, i->timeout_rate, (unsigned)i->close_ms,
           i->close_rate);
  send_event(EV_BUILDTIMEOUT_SET, text);
}

/* Commands whose handler needs only the arguments. */
typedef void (*arg_cmd_fn)(ctl_conn_t *cc, const char *args);
static const struct {
  const char *name;
  arg_cmd_fn fn;
} arg_commands[] = {
    {"GETCONF", cmd_getconf},
    {"SAVECONF", cmd_saveconf},
    {"EXTENDCIRCUIT", cmd_extendcircuit},
    {"SETCIRCUITPURPOSE", cmd_setcircuitpurpose},
    {"ATTACHSTREAM", cmd_attachstream},
    {"CLOSECIRCUIT", cmd_closecircuit},
    {"CLOSESTREAM", cmd_closestream},
    {"SETEVENTS", cmd_setevents},
    {"SIGNAL", cmd_signal},
    {"MAPADDRESS", cmd_mapaddress},
    {"DROPTIMEOUTS", cmd_droptimeouts},
    {"RESOLVE", cmd_resolve},
};

static arg_cmd_fn
arg_command(const char *keyword)
{
  for (size_t i = 0; i < sizeof(arg_commands) / sizeof(arg_commands[0]); i++)
    if (!strcmp(keyword, arg_commands[i].name))
      return arg_commands[i].fn;
  return NULL;
}

/* One command; returns -1 when cc was closed. */
static int
handle_cmd(ctl_conn_t *cc, control_cmd_t *cmd)
{
  const char *k = cmd->keyword;
  /* Never the arguments of AUTHENTICATE (a password or a cookie). */
  log_debug("Controller %s: %s %s", cc->peer, k,
            strcmp(k, "AUTHENTICATE") ? cmd->args : "(hidden)");
  if (!strcmp(k, "QUIT")) {
    reply(cc, 250, "closing connection");
    cc->closing = 1;
    return 0;
  }
  if (!cc->authenticated) {
    if (!strcmp(k, "PROTOCOLINFO") && !cc->sent_protocolinfo &&
        !cc->challenged) {
      cmd_protocolinfo(cc, cmd->args);
      return 0;
    }
    if (!strcmp(k, "AUTHCHALLENGE") && !cc->challenged) {
      cmd_authchallenge(cc, cmd->args);
      return 0;
    }
    if (!strcmp(k, "AUTHENTICATE")) {
      cmd_authenticate(cc, cmd->args);
      return 0;
    }
    reply(cc, 514, "Authentication required.");
    cc->closing = 1;
    return 0;
  }
  if (!strcmp(k, "PROTOCOLINFO"))
    cmd_protocolinfo(cc, cmd->args);
  else if (!strcmp(k, "AUTHENTICATE"))
    reply(cc, 250, "OK"); /* tor accepts a repeated AUTHENTICATE */
  else if (!strcmp(k, "AUTHCHALLENGE"))
    reply(cc, 513, "AUTHCHALLENGE only before authentication");
  else if (!strcmp(k, "GETINFO"))
    cmd_getinfo(cc, cmd->args);
  else if (!strcmp(k, "SETCONF") || !strcmp(k, "RESETCONF"))
    cmd_setconf(cc, cmd->args, k[0] == 'R');
  else if (!strcmp(k, "LOADCONF"))
    cmd_loadconf(cc, cmd);
  else if (arg_command(k))
    arg_command(k)(cc, cmd->args);
  else if (!strcmp(k, "TAKEOWNERSHIP")) {
    cc->owning = 1;
    /* As tor: ownership by connection replaces polling for the owner. */
    S.owning_pid = 0;
    if (S.owner_timer)
      evloop_timer_cancel(S.owner_timer);
    reply(cc, 250, "OK");
  } else if (!strcmp(k, "DROPOWNERSHIP")) {
    cc->owning = 0;
    reply(cc, 250, "OK");
  } else if (!strcmp(k, "USEFEATURE")) {
    const char *p = cmd->args;
    char *f;
    int ok = 1;
    while (ok && (f = control_proto_next_arg(&p))) {
      if (!control_proto_eq(f, "EXTENDED_EVENTS") &&
          !control_proto_eq(f, "VERBOSE_NAMES")) {
        char *q = control_proto_quote(f);
        replyf(cc, 552, "Unrecognized feature %s", q);
        free(q);
        ok = 0;
      }
      free(f);
    }
    if (ok)
      reply(cc, 250, "OK");
  } else {
    char *q = control_proto_quote(k);
    replyf(cc, 510, "Unrecognized command %s", q);
    free(q);
  }
  return 0;
}

/* ---- connections ---- */

static void
ctl_close(ctl_conn_t *cc, int flush, const char *why)
{
  if (cc->in_cb) {
    /* An event (a log line) written while this controller's own command
     * runs may overflow it: close it once its callback is done. */
    if (!cc->doomed) {
      cc->doomed = 1;
      cc->doomed_flush = flush != 0;
      snprintf(cc->doomed_why, sizeof(cc->doomed_why), "%s", why);
    }
    return;
  }
  log_info("Closing control connection from %s: %s", cc->peer, why);
  int owning = cc->owning;
  dlist_remove(&cc->node);
  S.n_conns--;
  conn_close(cc->conn, flush);
  free(cc);
  update_log_hook();
  if (owning) {
    log_notice("Owning controller connection has closed -- exiting now.");
    if (S.host.signal)
      S.host.signal(CONTROL_SIGNAL_HALT, S.host.arg);
  }
}

static void
ctl_conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  ctl_conn_t *cc = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN:
  case CONN_EV_DRAINED:
    return;
  case CONN_EV_EOF:
  case CONN_EV_ERROR:
    ctl_close(cc, 0, ev == CONN_EV_EOF ? "the controller closed it"
                                       : conn_error(c));
    return;
  case CONN_EV_DATA:
    break;
  }
  cc->in_cb = 1;
  while (!cc->doomed) {
    control_cmd_t cmd;
    int r = control_proto_take_cmd(conn_inbuf(cc->conn),
                                   CONTROL_MAX_COMMAND_LEN, &cmd);
    if (r == CONTROL_TAKE_NEED_MORE)
      break;
    if (r == CONTROL_TAKE_TOO_LONG) {
      ctl_close(cc, 0, "a command longer than the limit");
      break;
    }
    handle_cmd(cc, &cmd);
    control_cmd_clear(&cmd);
    if (cc->closing) {
      ctl_close(cc, 1, "as the protocol asks");
      break;
    }
    ctl_flush(cc);
  }
  cc->in_cb = 0;
  if (cc->doomed) {
    char why[sizeof(cc->doomed_why)];
    memcpy(why, cc->doomed_why, sizeof(why));
    ctl_close(cc, cc->doomed_flush, why);
  }
}

static void
accept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  int is_unix = arg != NULL;
  if (S.n_conns >= CONTROL_MAX_CONNECTIONS) {
    log_warn("Refusing a control connection: already %u controllers",
             S.n_conns);
    close(fd);
    return;
  }
  ctl_conn_t *cc = pc_zalloc(sizeof(*cc));
  if (is_unix)
    snprintf(cc->peer, sizeof(cc->peer), "unix socket");
  else
    pc_addr_fmt(peer, cc->peer, sizeof(cc->peer), 1);
  cc->conn = conn_new_accepted(S.loop, NULL, fd, peer, ctl_conn_cb, cc);
  conn_set_buckets(cc->conn, NULL, NULL);
  conn_set_counted(cc->conn, 0);
  dlist_insert_tail(&S.conns, &cc->node);
  S.n_conns++;
  log_info("New control connection from %s", cc->peer);
}

/* The user files are handed to (User, while we are still root): 0 and its
 * ids, or -1 when there is none. */
static int
handover_user(const char *user, uid_t *uid, gid_t *gid)
{
  if (!user || geteuid() != 0)
    return -1;
  struct passwd *pw = getpwnam(user);
  if (!pw)
    return -1; /* the privilege drop reports an unknown User */
  *uid = pw->pw_uid;
  *gid = pw->pw_gid;
  return 0;
}

/* Hand a file made while root to User, as the DataDirectory is. */
static int
hand_over(const char *path, const char *user, char **err_out)
{
  uid_t uid;
  gid_t gid;
  if (handover_user(user, &uid, &gid) < 0)
    return 0;
  if (chown(path, uid, gid) < 0) {
    *err_out = pc_asprintf("cannot hand %s over to %s: %s", path, user,
                           strerror(errno));
    return -1;
  }
  return 0;
}

/* The directory of a unix socket must be ours (or, while root, User's,
 * who will own the socket) and private (0700), or with RelaxDirModeCheck
 * at least not writable by others. */
static int
check_socket_dir(const char *path, unsigned flags, const char *user,
                 char **err_out)
{
  uid_t user_uid;
  gid_t user_gid;
  int have_user = handover_user(user, &user_uid, &user_gid) == 0;
  char *dir = pc_strdup(path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  struct stat st;
  int r = 0;
  if (stat(dir, &st) < 0) {
    *err_out = pc_asprintf("the directory %s of the control socket: %s",
                           dir, strerror(errno));
    r = -1;
  } else if (st.st_uid != geteuid() &&
             !(have_user && st.st_uid == user_uid)) {
    *err_out = pc_asprintf("the directory %s of the control socket is not "
                           "owned by us%s%s", dir, have_user ? " or by " : "",
                           have_user ? user : "");
    r = -1;
  } else if (!(flags & CONTROL_UNIX_RELAX_DIR_MODE) && (st.st_mode & 077)) {
    *err_out = pc_asprintf("the directory %s of the control socket is "
                           "accessible by others (mode %o); make it 0700 or "
                           "use RelaxDirModeCheck", dir,
                           (unsigned)(st.st_mode & 0777));
    r = -1;
  } else if ((flags & CONTROL_UNIX_RELAX_DIR_MODE) && (st.st_mode & 002)) {
    *err_out = pc_asprintf("the directory %s of the control socket is "
                           "world-writable", dir);
    r = -1;
  }
  free(dir);
  return r;
}

static int
open_listener(const control_listen_t *l, const char *user, char **err_out)
{
  const char *e = NULL;
  if (l->kind == CONTROL_LISTEN_TCP) {
    if (S.tcp) {
      *err_out = pc_strdup("only one TCP ControlPort is supported");
      return -1;
    }
    if (!pc_addr_is_loopback(&l->addr))
      log_warn("You have a ControlPort set to accept connections from a "
               "non-local address. This means that programs not running on "
               "your computer can control pctor. Use authentication "
               "(CookieAuthentication or HashedControlPassword) and a "
               "firewall.");
    S.tcp = listener_new(S.loop, &l->addr, accept_cb, NULL, &e);
    if (!S.tcp) {
      char a[PC_ADDR_STR_LEN];
      *err_out = pc_asprintf("Could not bind ControlPort %s: %s",
                             pc_addr_fmt(&l->addr, a, sizeof(a), 1),
                             e ? e : "?");
      return -1;
    }
    pc_addr_fmt(listener_addr(S.tcp), S.tcp_addr, sizeof(S.tcp_addr), 1);
    log_notice("Opened Control listener on %s", S.tcp_addr);
  } else if (l->kind == CONTROL_LISTEN_UNIX) {
    if (S.unix_l) {
      *err_out = pc_strdup("only one control socket is supported");
      return -1;
    }
    if (check_socket_dir(l->path, l->flags, user, err_out) < 0)
      return -1;
    unsigned mode = 0600;
    if (l->flags & CONTROL_UNIX_GROUP_WRITABLE)
      mode |= 0060;
    if (l->flags & CONTROL_UNIX_WORLD_WRITABLE)
      mode |= 0066;
    S.unix_l = listener_new_unix(S.loop, l->path, mode, accept_cb, &S, &e);
    if (!S.unix_l) {
      *err_out = pc_asprintf("Could not open control socket %s: %s",
                             l->path, e ? e : "?");
      return -1;
    }
    snprintf(S.unix_path, sizeof(S.unix_path), "%s", l->path);
    if (hand_over(l->path, user, err_out) < 0)
      return -1;
    log_notice("Opened Control listener on unix:%s", l->path);
  }
  return 0;
}

static void
apply_auth(const control_config_t *cfg)
{
  free(S.hashed_password);
  S.hashed_password =
      cfg->hashed_password ? pc_strdup(cfg->hashed_password) : NULL;
  S.owning_pid = cfg->owning_pid;
  if (S.owning_pid > 0) {
    if (!S.owner_timer)
      S.owner_timer = evloop_timer_new(S.loop, owner_timer_cb, NULL);
    evloop_timer_schedule_periodic(S.owner_timer, 1000000);
  } else if (S.owner_timer) {
    evloop_timer_cancel(S.owner_timer);
  }
}

int
control_start(evloop_t *loop, const control_config_t *cfg,
              const control_host_t *host, char **err_out)
{
  memset(&S, 0, sizeof(S));
  S.loop = loop;
  S.host = *host;
  dlist_init(&S.conns);
  S.started_at = time(NULL);
  S.last_tick_wall = S.started_at;
  S.started = 1;
  if (cfg->port.kind == CONTROL_LISTEN_NONE &&
      cfg->socket.kind == CONTROL_LISTEN_NONE)
    return 0;
  conn_get_totals(&S.last_read, &S.last_written);
  S.bw_timer = evloop_timer_new(loop, bw_timer_cb, NULL);
  evloop_timer_schedule_periodic(S.bw_timer, 1000000);
  if (channel_add_open_observer(orconn_open_cb, NULL) == 0)
    S.observers |= 1;
  if (circuits_add_close_observer(circ_close_cb, NULL) == 0)
    S.observers |= 2;
  if (circuits_set_origin_observer(circ_progress_cb, NULL) == 0)
    S.observers |= 4; /* (else core warned: no CIRC progress events) */
  if (client_set_stream_observer(stream_event_cb, NULL) == 0)
    S.observers |= 8; /* (else the client warned: no STREAM events) */
  if (client_set_buildtimeout_observer(buildtimeout_cb, NULL) == 0)
    S.observers |= 16; /* (else the client warned: no BUILDTIMEOUT_SET) */
  if (client_set_resolve_observer(resolve_cb, NULL) == 0)
    S.observers |= 32; /* (else no ADDRMAP events for lookups) */
  if (client_set_conflux_link_observer(conflux_link_cb, NULL) == 0)
    S.observers |= 64; /* (else no CIRC_MINOR when a leg links) */
  if (client_set_measureme_observer(measureme_answer_cb, NULL) == 0)
    S.observers |= 128; /* (else no MEASUREME events) */
  conn_set_fd_exhausted_hook(fds_exhausted_cb, NULL);
  log_set_bug_hook(bug_cb, NULL);
  apply_auth(cfg);
  apply_testing(cfg);
  S.cookie_auth = cfg->cookie_auth;
  if (cfg->cookie_auth) {
    S.cookie_file = cfg->cookie_file
                        ? pc_strdup(cfg->cookie_file)
                        : fs_path_join(cfg->data_dir, "control_auth_cookie");
    if (control_auth_write_cookie(S.cookie_file, cfg->cookie_group_readable,
                                  S.cookie, err_out) < 0 ||
        hand_over(S.cookie_file, cfg->user, err_out) < 0)
      return -1;
    S.have_cookie = 1;
  }
  if (open_listener(&cfg->port, cfg->user, err_out) < 0 ||
      open_listener(&cfg->socket, cfg->user, err_out) < 0)
    return -1;
  return 0;
}

uint32_t
control_own_flags(void)
{
  if (!S.started || !S.host.consensus || !S.host.getinfo)
    return 0;
  const consensus_t *c = S.host.consensus(S.host.arg);
  char *fp = NULL;
  uint8_t id[20];
  uint32_t flags = 0;
  if (c && S.host.getinfo("fingerprint", &fp, S.host.arg) == 1 && fp &&
      strlen(fp) >= 40 && base16_decode(id, sizeof(id), fp, 40) == 20) {
    const consensus_rs_t *rs = consensus_find(c, id);
    if (rs)
      flags = rs->flags;
  }
  free(fp);
  return flags;
}

void
control_reconfigure(const control_config_t *cfg)
{
  if (!S.started)
    return;
  apply_auth(cfg);
  apply_testing(cfg);
}

void
control_shutdown(void)
{
  if (!S.started)
    return;
  while (!dlist_is_empty(&S.conns)) {
    ctl_conn_t *cc = DLIST_ENTRY(dlist_first(&S.conns), ctl_conn_t, node);
    cc->owning = 0;
    ctl_close(cc, 0, "pctor is stopping");
  }
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  if (S.observers & 1)
    channel_remove_open_observer(orconn_open_cb, NULL);
  if (S.observers & 2)
    circuits_remove_close_observer(circ_close_cb, NULL);
  if (S.observers & 4)
    circuits_set_origin_observer(NULL, NULL);
  if (S.observers & 8)
    client_set_stream_observer(NULL, NULL);
  if (S.observers & 16)
    client_set_buildtimeout_observer(NULL, NULL);
  if (S.observers & 32)
    client_set_resolve_observer(NULL, NULL);
  if (S.observers & 64)
    client_set_conflux_link_observer(NULL, NULL);
  if (S.observers & 128)
    client_set_measureme_observer(NULL, NULL);
  conn_set_fd_exhausted_hook(NULL, NULL);
  log_set_bug_hook(NULL, NULL);
  listener_free(S.tcp);
  if (S.unix_l) {
    listener_free(S.unix_l);
    unlink(S.unix_path);
  }
  evloop_timer_free(S.bw_timer);
  evloop_timer_free(S.owner_timer);
  circ_queues_count_commands(0);
  if (S.circbw)
    hmap_free(S.circbw, free);
  if (S.ns_seen)
    hmap_free(S.ns_seen, NULL);
  for (int f = 0; f < 2; f++)
    if (S.desc_seen[f])
      hmap_free(S.desc_seen[f], NULL);
  free(S.hashed_password);
  free(S.cookie_file);
  pc_memwipe(S.cookie, sizeof(S.cookie));
  memset(&S, 0, sizeof(S));
}
