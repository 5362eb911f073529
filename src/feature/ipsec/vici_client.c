/* SPDX-License-Identifier: BSD-3-Clause */
/* vici_client.c -- non-blocking VICI client (see vici_client.h).
 *
 * Design:
 * - One queue of operations (ops): commands, event registrations and
 *   event unregistrations, all answered in order by charon, so only the
 *   head of the queue is ever on the wire (c->active). A streaming command
 *   is one op that goes through phases: REG (EVENT_REGISTER sent, waiting
 *   for EVENT_CONFIRM), CMD (CMD_REQUEST sent, events streamed), UNREG
 *   (EVENT_UNREGISTER sent after the answer; the owner already has it).
 * - Event names are tracked in a small list of reg_t: whether the owner
 *   wants the event permanently (persistent, with its callback) and
 *   whether charon currently has it registered on this connection
 *   (on_server). Streams and permanent registrations of the same name
 *   share one server-side registration; a stream never unregisters a name
 *   the owner wants.
 * - Re-entrancy: every entry from the loop (socket readiness, timers, the
 *   deferred "kick") counts itself in c->busy. User callbacks may call
 *   vici_client_free(), which then only marks the client dead; the
 *   outermost entry frees it on the way out. Each connection has a
 *   generation number, so code that made a callback can tell whether the
 *   connection it was working on is still the current one.
 * - Queue processing and the "connected" announcement always run from the
 *   deferred kick, never inside an API call, so callbacks never run
 *   inside vici_client_* calls.
 * - Input is one contiguous buffer that grows up to one whole segment
 *   (<= 512 KiB + 4); complete segments are handled in place and the rest
 *   is moved to the front.
 * - Output is one contiguous buffer too, written when the socket is
 *   writable. load-key messages carry our IKE private key (PEM), so
 *   nothing we send may linger: a command's message is wiped and freed as
 *   soon as it is copied into the output buffer (it is never resent: a
 *   lost connection fails the command), bytes are wiped as soon as the
 *   socket took them, and the buffer is grown by copy-and-wipe, never
 *   realloc (which could leave a copy in freed memory). Not a buf_t: its
 *   released chunks go to a free list unwiped. VICI traffic is a few
 *   commands per peer, so the extra copies cost nothing that matters.
 */
#include "feature/ipsec/vici_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/buf/buf.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define VICI_DEFAULT_QUEUE_LIMIT 64
#define VICI_DEFAULT_TIMEOUT_MS 30000
#define VICI_IN_INITIAL 16384
/* Bytes read per readiness event before yielding to the loop. */
#define VICI_READ_BUDGET (1024 * 1024)

typedef enum { OP_COMMAND, OP_REGISTER, OP_UNREGISTER } op_kind_t;
typedef enum { PH_QUEUED, PH_REG, PH_CMD, PH_UNREG } op_phase_t;

typedef enum {
  CS_IDLE,       /* not connected, nothing scheduled */
  CS_SCHEDULED,  /* a connection attempt will start from the kick */
  CS_CONNECTING, /* connect() in progress, waiting for writability */
  CS_CONNECTED,
  CS_WAIT_RETRY, /* waiting for the backoff timer */
} conn_state_t;

typedef struct vici_op_t {
  struct vici_op_t *prev, *next;
  vici_client_t *c;
  op_kind_t kind;
  op_phase_t phase;
  char name[VICI_NAME_MAX + 1];   /* command or event name */
  char stream[VICI_NAME_MAX + 1]; /* streamed event name, "" if none */
  uint8_t *msg;
  size_t msg_len;
  vici_event_cb stream_cb;
  vici_done_cb done;
  void *arg;
  evloop_timer_t *timer;
  unsigned counted : 1;     /* counts against the queue limit */
  unsigned done_called : 1;
} vici_op_t;

typedef struct reg_t {
  struct reg_t *next;
  char name[VICI_NAME_MAX + 1];
  int persistent;
  int on_server;
  vici_event_cb cb;
  void *arg;
} reg_t;

struct vici_client_t {
  evloop_t *loop;
  char *path;
  conn_state_t state;
  int fd;
  evloop_io_t *io;
  uint64_t gen;
  uint8_t *in;
  size_t in_len, in_cap;
  uint8_t *out;               /* unsent bytes are out[out_off, out_len) */
  size_t out_off, out_len, out_cap;
  vici_op_t *head, *tail;
  vici_op_t *active;
  size_t n_ops, n_counted, queue_limit;
  reg_t *regs;
  evloop_deferred_t *kick;
  evloop_timer_t *retry_timer;
  uint32_t retry_min_ms, retry_max_ms, retry_cur_ms;
  unsigned n_failures;
  int announce_connected;
  uint32_t default_timeout_ms;
  vici_state_cb state_cb;
  void *state_arg;
  int busy;
  int dead;
  /* Who may serve the socket (SO_PEERCRED), checked before anything is
   * sent: root when allow_root, and peer_uid when >= 0. */
  int check_peer, allow_root;
  long peer_uid;
};

static void client_destroy(vici_client_t *c);
static void conn_down(vici_client_t *c, const char *why);
static void process_queue(vici_client_t *c);

const char *
vici_result_name(vici_result_t res)
{
  switch (res) {
  case VICI_RESULT_OK: return "ok";
  case VICI_RESULT_UNKNOWN_CMD: return "unknown command";
  case VICI_RESULT_UNKNOWN_EVENT: return "unknown event";
  case VICI_RESULT_TIMEOUT: return "timed out";
  case VICI_RESULT_CONN_LOST: return "connection lost";
  case VICI_RESULT_CANCELLED: return "cancelled";
  }
  return "?";
}

/* ---- entering and leaving from the loop ---- */

static void
enter(vici_client_t *c)
{
  c->busy++;
}

/* Returns 1 if the client was freed. */
static int
leave(vici_client_t *c)
{
  if (--c->busy == 0 && c->dead) {
    client_destroy(c);
    return 1;
  }
  return 0;
}

/* ---- registrations ---- */

static reg_t *
reg_find(vici_client_t *c, const char *name)
{
  for (reg_t *r = c->regs; r; r = r->next)
    if (!strcmp(r->name, name))
      return r;
  return NULL;
}

static reg_t *
reg_add(vici_client_t *c, const char *name)
{
  reg_t *r = pc_zalloc(sizeof(*r));
  strcpy(r->name, name); /* length checked by the callers */
  r->next = c->regs;
  c->regs = r;
  return r;
}

static void
reg_remove(vici_client_t *c, reg_t *r)
{
  for (reg_t **p = &c->regs; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      free(r);
      return;
    }
  }
}

/* Whether the active op is a command streaming event name. */
static int
stream_in_use(const vici_client_t *c, const char *name)
{
  return c->active && c->active->kind == OP_COMMAND &&
         !strcmp(c->active->stream, name);
}

/* ---- the op queue ---- */

static void op_timeout_cb(void *arg);

static vici_op_t *
op_new(vici_client_t *c, op_kind_t kind, const char *name, uint32_t tmo_ms)
{
  vici_op_t *op = pc_zalloc(sizeof(*op));
  op->c = c;
  op->kind = kind;
  strcpy(op->name, name);
  op->timer = evloop_timer_new(c->loop, op_timeout_cb, op);
  evloop_timer_schedule(op->timer,
                        (uint64_t)(tmo_ms ? tmo_ms : c->default_timeout_ms) *
                          1000);
  return op;
}

static void
op_link_tail(vici_client_t *c, vici_op_t *op)
{
  op->prev = c->tail;
  op->next = NULL;
  if (c->tail)
    c->tail->next = op;
  else
    c->head = op;
  c->tail = op;
  c->n_ops++;
  if (op->counted)
    c->n_counted++;
}

static void
op_link_head(vici_client_t *c, vici_op_t *op)
{
  op->prev = NULL;
  op->next = c->head;
  if (c->head)
    c->head->prev = op;
  else
    c->tail = op;
  c->head = op;
  c->n_ops++;
  if (op->counted)
    c->n_counted++;
}

static void
op_unlink(vici_client_t *c, vici_op_t *op)
{
  if (op->prev)
    op->prev->next = op->next;
  else
    c->head = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    c->tail = op->prev;
  op->prev = op->next = NULL;
  c->n_ops--;
  if (op->counted)
    c->n_counted--;
  if (c->active == op)
    c->active = NULL;
}

static void
op_free(vici_op_t *op)
{
  evloop_timer_free(op->timer);
  if (op->msg) {
    pc_memwipe(op->msg, op->msg_len); /* load-key carries a private key */
    free(op->msg);
  }
  free(op);
}

/* Report res to op's owner once. Returns -1 if the client died in the
 * callback. */
static int
op_report(vici_client_t *c, vici_op_t *op, vici_result_t res,
          const vici_msg_t *msg)
{
  if (op->done_called)
    return c->dead ? -1 : 0;
  op->done_called = 1;
  evloop_timer_cancel(op->timer);
  if (op->done)
    op->done(c, res, msg, op->arg);
  return c->dead ? -1 : 0;
}

/* The active op is finished: drop it and start the next one. */
static void
op_finish_active(vici_client_t *c)
{
  vici_op_t *op = c->active;
  op_unlink(c, op);
  op_free(op);
  process_queue(c);
}

/* ---- output ---- */

static void
update_interest(vici_client_t *c)
{
  if (!c->io)
    return;
  int what = c->state == CS_CONNECTING ? EVLOOP_WRITE : EVLOOP_READ;
  if (c->state == CS_CONNECTED && c->out_len > c->out_off)
    what |= EVLOOP_WRITE;
  evloop_io_set(c->io, what);
}

/* Room for need more bytes at the end of the output buffer. */
static void
out_reserve(vici_client_t *c, size_t need)
{
  if (c->out_cap - c->out_len >= need)
    return;
  if (c->out_off) { /* move the unsent bytes to the front */
    size_t unsent = c->out_len - c->out_off;
    memmove(c->out, c->out + c->out_off, unsent);
    pc_memwipe(c->out + unsent, c->out_len - unsent);
    c->out_len = unsent;
    c->out_off = 0;
    if (c->out_cap - c->out_len >= need)
      return;
  }
  size_t ncap = c->out_cap ? c->out_cap * 2 : 4096;
  while (ncap - c->out_len < need)
    ncap *= 2;
  uint8_t *n = pc_malloc(ncap);
  if (c->out_len)
    memcpy(n, c->out, c->out_len);
  if (c->out) {
    pc_memwipe(c->out, c->out_cap);
    free(c->out);
  }
  c->out = n;
  c->out_cap = ncap;
}

static void
out_add(vici_client_t *c, const void *data, size_t len)
{
  if (!len)
    return;
  out_reserve(c, len);
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
}

/* Drop everything not yet sent (the connection is gone). */
static void
out_clear(vici_client_t *c)
{
  if (c->out)
    pc_memwipe(c->out, c->out_len);
  c->out_off = c->out_len = 0;
}

static void
send_packet(vici_client_t *c, vici_packet_type_t type, const char *name,
            const uint8_t *msg, size_t len)
{
  const char *err = NULL;
  uint8_t hdr[VICI_HEADER_MAX];
  size_t h = vici_packet_header(hdr, type, name, len, &err);
  if (!h) {
    /* Every op was validated when it was queued. */
    log_warn("cannot encode a VICI %s packet: %s",
             vici_packet_type_name(type), err);
    return;
  }
  out_reserve(c, h + len);
  out_add(c, hdr, h);
  out_add(c, msg, len);
  update_interest(c);
}

/* Write what we can; 0, or -1 with errno set on a socket error. Sent
 * bytes are wiped at once. */
static int
flush_out(vici_client_t *c)
{
  while (c->out_len > c->out_off) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      return -1;
    }
    pc_memwipe(c->out + c->out_off, (size_t)n);
    c->out_off += (size_t)n;
  }
  if (c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  update_interest(c);
  return 0;
}

/* ---- starting ops ---- */

static void
send_command(vici_client_t *c, vici_op_t *op)
{
  op->phase = PH_CMD;
  send_packet(c, VICI_CMD_REQUEST, op->name, op->msg, op->msg_len);
  /* Sent once only (a lost connection fails the command): the only copy
   * left is in the output buffer, wiped as the socket takes it. */
  if (op->msg) {
    pc_memwipe(op->msg, op->msg_len);
    free(op->msg);
    op->msg = NULL;
  }
  op->msg_len = 0;
}

/* Start op (the head of the queue). Returns 1 if it is now on the wire, 0
 * if it completed at once (already removed), -1 if the client died or the
 * connection changed. */
static int
start_op(vici_client_t *c, vici_op_t *op)
{
  uint64_t gen = c->gen;
  reg_t *r;
  c->active = op;
  switch (op->kind) {
  case OP_COMMAND:
    if (op->stream[0]) {
      r = reg_find(c, op->stream);
      if (!r)
        r = reg_add(c, op->stream);
      if (!r->on_server) {
        op->phase = PH_REG;
        send_packet(c, VICI_EVENT_REGISTER, op->stream, NULL, 0);
        return 1;
      }
    }
    send_command(c, op);
    return 1;
  case OP_REGISTER:
    r = reg_find(c, op->name);
    if (r && r->persistent && !r->on_server) {
      op->phase = PH_REG;
      send_packet(c, VICI_EVENT_REGISTER, op->name, NULL, 0);
      return 1;
    }
    /* Already registered on this connection, or no longer wanted. */
    if (op_report(c, op, VICI_RESULT_OK, NULL) < 0 || c->gen != gen)
      return -1;
    op_unlink(c, op);
    op_free(op);
    return 0;
  case OP_UNREGISTER:
    r = reg_find(c, op->name);
    if (r && !r->persistent && r->on_server) {
      op->phase = PH_UNREG;
      send_packet(c, VICI_EVENT_UNREGISTER, op->name, NULL, 0);
      return 1;
    }
    if (r && !r->persistent && !r->on_server)
      reg_remove(c, r);
    op_unlink(c, op);
    op_free(op);
    return 0;
  }
  return 0;
}

static void
process_queue(vici_client_t *c)
{
  while (!c->dead && c->state == CS_CONNECTED && !c->active && c->head) {
    if (start_op(c, c->head) != 0)
      return;
  }
}

/* ---- connection management ---- */

static void io_cb(int fd, int what, void *arg);

/* Whether the process serving the socket is one we may talk to (charon:
 * root, or the configured user). Sets why on refusal. */
static int
peer_allowed(vici_client_t *c, char *why, size_t len)
{
  if (!c->check_peer)
    return 1;
  struct ucred cr;
  socklen_t sl = sizeof(cr);
  memset(&cr, 0, sizeof(cr));
  if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) < 0 ||
      sl != sizeof(cr)) {
    snprintf(why, len, "cannot read the socket owner's credentials (%s)",
             strerror(errno));
    return 0;
  }
  if ((c->allow_root && cr.uid == 0) ||
      (c->peer_uid >= 0 && (long)cr.uid == c->peer_uid))
    return 1;
  if (c->peer_uid >= 0)
    snprintf(why, len, "not talking to a socket served by uid %lu (pid %ld): "
             "charon must run as %suid %ld",
             (unsigned long)cr.uid, (long)cr.pid,
             c->allow_root ? "root or " : "", c->peer_uid);
  else
    snprintf(why, len, "not talking to a socket served by uid %lu (pid %ld): "
             "charon must run as root",
             (unsigned long)cr.uid, (long)cr.pid);
  return 0;
}

static void
conn_established(vici_client_t *c)
{
  char why[200];
  if (!peer_allowed(c, why, sizeof(why))) {
    /* A warning the first time, then at info with each retry. */
    if (c->n_failures == 0)
      log_warn("Refusing charon's VICI socket %s: %s",
               c->path ? c->path : "(fd)", why);
    else
      log_info("Refusing charon's VICI socket %s: %s",
               c->path ? c->path : "(fd)", why);
    c->state = CS_CONNECTING;
    conn_down(c, why);
    return;
  }
  c->state = CS_CONNECTED;
  c->retry_cur_ms = c->retry_min_ms;
  c->n_failures = 0;
  c->gen++;
  c->io = evloop_io_new(c->loop, c->fd, io_cb, c);
  update_interest(c);
  /* Re-register the owner's events before anything else is sent. */
  for (reg_t *r = c->regs; r; r = r->next) {
    if (!r->persistent)
      continue;
    vici_op_t *op = op_new(c, OP_REGISTER, r->name, 0);
    op_link_head(c, op);
  }
  c->announce_connected = 1;
  evloop_deferred_schedule(c->kick);
}

static void
schedule_retry_or_idle(vici_client_t *c)
{
  if (c->retry_min_ms && c->path) {
    c->state = CS_WAIT_RETRY;
    if (!c->retry_cur_ms)
      c->retry_cur_ms = c->retry_min_ms;
    evloop_timer_schedule(c->retry_timer, (uint64_t)c->retry_cur_ms * 1000);
    uint64_t next = (uint64_t)c->retry_cur_ms * 2;
    c->retry_cur_ms = next > c->retry_max_ms ? c->retry_max_ms
                                             : (uint32_t)next;
  } else {
    c->state = CS_IDLE;
  }
}

/* Close the socket (if any) and report. Called from the loop only. */
static void
conn_down(vici_client_t *c, const char *why)
{
  int was_connected = c->state == CS_CONNECTED;
  if (c->io)
    evloop_io_free(c->io);
  if (c->fd >= 0) {
    close(c->fd);
    c->fd = -1;
  }
  c->gen++;
  c->in_len = 0;
  out_clear(c);
  c->active = NULL;
  /* charon forgot every registration with the connection. */
  for (reg_t *r = c->regs, *nx; r; r = nx) {
    nx = r->next;
    r->on_server = 0;
    if (!r->persistent)
      reg_remove(c, r);
  }
  schedule_retry_or_idle(c);
  if (was_connected) {
    log_warn("Lost the connection to charon's VICI socket %s: %s%s",
             c->path ? c->path : "(fd)", why,
             c->state == CS_WAIT_RETRY ? "; will reconnect" : "");
  } else if (c->n_failures++ == 0) {
    log_notice("Cannot connect to charon's VICI socket %s: %s%s",
               c->path ? c->path : "(fd)", why,
               c->state == CS_WAIT_RETRY ? "; will keep trying" : "");
  } else {
    log_info("Cannot connect to VICI socket %s: %s",
             c->path ? c->path : "(fd)", why);
  }
  /* Fail the ops: all of them after a loss (their fate is unknown) or
   * when we give up; after a failed attempt with a retry pending, the
   * owner's commands keep waiting (their own timeouts still run). */
  if (was_connected || c->state == CS_IDLE) {
    vici_op_t *list = c->head;
    c->head = c->tail = NULL;
    c->n_ops = c->n_counted = 0;
    while (list) {
      vici_op_t *op = list;
      list = op->next;
      op->prev = op->next = NULL;
      /* Reported even if the owner freed the client meanwhile, so that
       * every op's arg is released by its owner. */
      if (op->kind != OP_UNREGISTER)
        op_report(c, op, VICI_RESULT_CONN_LOST, NULL);
      op_free(op);
    }
  }
  if (c->state_cb && !c->dead)
    c->state_cb(c, was_connected ? VICI_STATE_LOST
                                 : VICI_STATE_CONNECT_FAILED,
                why, c->state_arg);
}

static void
try_connect(vici_client_t *c)
{
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, c->path, strlen(c->path)); /* length checked */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    c->state = CS_CONNECTING;
    conn_down(c, strerror(errno));
    return;
  }
  c->fd = fd;
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
    log_notice("Connected to charon's VICI socket %s", c->path);
    conn_established(c);
    return;
  }
  if (errno == EINPROGRESS) {
    c->state = CS_CONNECTING;
    c->io = evloop_io_new(c->loop, fd, io_cb, c);
    update_interest(c);
    return;
  }
  c->state = CS_CONNECTING;
  conn_down(c, strerror(errno));
}

static void
kick_cb(void *arg)
{
  vici_client_t *c = arg;
  enter(c);
  if (c->state == CS_SCHEDULED)
    try_connect(c);
  if (!c->dead && c->announce_connected && c->state == CS_CONNECTED) {
    c->announce_connected = 0;
    if (c->state_cb)
      c->state_cb(c, VICI_STATE_CONNECTED, "connected", c->state_arg);
  }
  if (!c->dead)
    process_queue(c);
  leave(c);
}

static void
retry_cb(void *arg)
{
  vici_client_t *c = arg;
  enter(c);
  if (c->state == CS_WAIT_RETRY)
    try_connect(c);
  if (!c->dead)
    process_queue(c);
  leave(c);
}

/* ---- incoming packets ---- */

static void
protocol_error(vici_client_t *c, const char *what)
{
  log_warn("Protocol error on charon's VICI socket %s: %s",
           c->path ? c->path : "(fd)", what);
  conn_down(c, what);
}

static void
handle_event(vici_client_t *c, const vici_packet_t *pkt)
{
  vici_msg_t *msg = NULL;
  const char *err = NULL;
  uint64_t gen = c->gen;
  if (vici_msg_parse(pkt->body, pkt->body_len, &msg, &err) < 0) {
    log_info("Malformed '%s' event from charon: %s", pkt->name, err);
    protocol_error(c, "malformed event message");
    return;
  }
  int delivered = 0;
  reg_t *r = reg_find(c, pkt->name);
  if (r && r->persistent && r->cb) {
    delivered = 1;
    r->cb(c, pkt->name, msg, r->arg);
  }
  if (!c->dead && c->gen == gen && c->active && c->active->phase == PH_CMD &&
      !strcmp(c->active->stream, pkt->name)) {
    delivered = 1;
    if (c->active->stream_cb)
      c->active->stream_cb(c, pkt->name, msg, c->active->arg);
  }
  if (!delivered)
    log_debug("Ignoring unexpected VICI event '%s'", pkt->name);
  vici_msg_free(msg);
}

static void
handle_response(vici_client_t *c, const vici_packet_t *pkt)
{
  vici_op_t *op = c->active;
  uint64_t gen = c->gen;
  vici_msg_t *msg = NULL;
  const char *err = NULL;
  if (!op || op->kind != OP_COMMAND || op->phase != PH_CMD) {
    protocol_error(c, "command answer with no command pending");
    return;
  }
  if (pkt->type == VICI_CMD_RESPONSE &&
      vici_msg_parse(pkt->body, pkt->body_len, &msg, &err) < 0) {
    log_info("Malformed answer to '%s' from charon: %s", op->name, err);
    protocol_error(c, "malformed command response");
    return;
  }
  if (pkt->type == VICI_CMD_UNKNOWN)
    log_info("charon does not know the VICI command '%s'", op->name);
  int r = op_report(c, op,
                    pkt->type == VICI_CMD_RESPONSE ? VICI_RESULT_OK
                                                   : VICI_RESULT_UNKNOWN_CMD,
                    msg);
  vici_msg_free(msg);
  if (r < 0 || c->gen != gen)
    return;
  reg_t *reg = op->stream[0] ? reg_find(c, op->stream) : NULL;
  if (reg && !reg->persistent && reg->on_server) {
    op->phase = PH_UNREG;
    /* Guard the unregistration too: a silent charon is a broken one. */
    evloop_timer_schedule(op->timer, (uint64_t)c->default_timeout_ms * 1000);
    send_packet(c, VICI_EVENT_UNREGISTER, op->stream, NULL, 0);
    return;
  }
  op_finish_active(c);
}

static void
handle_confirm(vici_client_t *c, const vici_packet_t *pkt)
{
  vici_op_t *op = c->active;
  uint64_t gen = c->gen;
  int ok = pkt->type == VICI_EVENT_CONFIRM;
  if (!op || (op->phase != PH_REG && op->phase != PH_UNREG)) {
    protocol_error(c, "event confirmation with no registration pending");
    return;
  }
  const char *name = op->kind == OP_COMMAND ? op->stream : op->name;
  reg_t *r = reg_find(c, name);
  if (op->phase == PH_UNREG) {
    int wanted = r && r->persistent;
    if (r) {
      r->on_server = 0;
      if (!wanted)
        reg_remove(c, r);
    }
    if (!ok)
      log_info("charon refused to unregister VICI event '%s'", name);
    if (wanted) {
      /* Wanted again meanwhile: make sure a registration follows. */
      vici_op_t *nop = op_new(c, OP_REGISTER, name, 0);
      op_unlink(c, op);
      op_free(op);
      op_link_head(c, nop);
      process_queue(c);
      return;
    }
    op_finish_active(c);
    return;
  }
  /* PH_REG */
  if (!ok) {
    log_warn("charon does not know the VICI event '%s'", name);
    if (r && !r->persistent)
      reg_remove(c, r);
    if (op_report(c, op, VICI_RESULT_UNKNOWN_EVENT, NULL) < 0 ||
        c->gen != gen)
      return;
    op_finish_active(c);
    return;
  }
  if (!r)
    r = reg_add(c, name); /* unregistered meanwhile; undone below */
  r->on_server = 1;
  if (op->kind == OP_COMMAND) {
    send_command(c, op);
    return;
  }
  if (op_report(c, op, VICI_RESULT_OK, NULL) < 0 || c->gen != gen)
    return;
  if (!r->persistent) {
    vici_op_t *uop = op_new(c, OP_UNREGISTER, name, 0);
    op_link_tail(c, uop);
  }
  op_finish_active(c);
}

/* One complete segment. */
static void
handle_segment(vici_client_t *c, const uint8_t *seg, size_t len)
{
  vici_packet_t pkt;
  const char *err = NULL;
  if (vici_packet_parse(seg, len, &pkt, &err) < 0) {
    protocol_error(c, err);
    return;
  }
  switch (pkt.type) {
  case VICI_EVENT:
    handle_event(c, &pkt);
    break;
  case VICI_CMD_RESPONSE:
  case VICI_CMD_UNKNOWN:
    handle_response(c, &pkt);
    break;
  case VICI_EVENT_CONFIRM:
  case VICI_EVENT_UNKNOWN:
    handle_confirm(c, &pkt);
    break;
  case VICI_CMD_REQUEST:
  case VICI_EVENT_REGISTER:
  case VICI_EVENT_UNREGISTER:
    protocol_error(c, "client packet type from the server");
    break;
  }
}

static void
in_reserve(vici_client_t *c, size_t need)
{
  if (need <= c->in_cap)
    return;
  size_t ncap = c->in_cap ? c->in_cap : VICI_IN_INITIAL;
  while (ncap < need)
    ncap *= 2;
  if (ncap > VICI_SEGMENT_MAX + 4)
    ncap = VICI_SEGMENT_MAX + 4;
  c->in = pc_realloc(c->in, ncap);
  c->in_cap = ncap;
}

/* Handle every complete segment in the input buffer. Returns -1 if the
 * connection was closed (or the client died) meanwhile. */
static int
process_input(vici_client_t *c)
{
  uint64_t gen = c->gen;
  size_t off = 0;
  while (c->in_len - off >= 4) {
    size_t len;
    const char *err = NULL;
    if (vici_segment_length(c->in + off, &len, &err) < 0) {
      protocol_error(c, err);
      return -1;
    }
    if (c->in_len - off < 4 + len)
      break;
    handle_segment(c, c->in + off + 4, len);
    if (c->dead || c->gen != gen)
      return -1;
    off += 4 + len;
  }
  if (off) {
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
  }
  /* Room for the whole segment being received. */
  if (c->in_len >= 4)
    in_reserve(c, 4 + (size_t)get_u32(c->in));
  return 0;
}

static void
read_input(vici_client_t *c)
{
  size_t total = 0;
  while (total < VICI_READ_BUDGET) {
    in_reserve(c, c->in_len + 1);
    if (c->in_len >= c->in_cap) { /* cannot happen: see process_input */
      log_bug("VICI input buffer full (%zu bytes)", c->in_len);
      protocol_error(c, "input buffer full");
      return;
    }
    ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n > 0) {
      c->in_len += (size_t)n;
      total += (size_t)n;
      if (process_input(c) < 0)
        return;
      continue;
    }
    if (n == 0) {
      conn_down(c, c->in_len ? "closed by charon in the middle of a message"
                             : "closed by charon");
      return;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      conn_down(c, strerror(errno));
    return;
  }
}

static void
io_cb(int fd, int what, void *arg)
{
  vici_client_t *c = arg;
  uint64_t gen = c->gen;
  (void)fd;
  enter(c);
  if (c->state == CS_CONNECTING) {
    int err = 0;
    socklen_t sl = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
      err = errno;
    if (err) {
      conn_down(c, strerror(err));
    } else {
      evloop_io_free(c->io);
      log_notice("Connected to charon's VICI socket %s", c->path);
      conn_established(c);
    }
    leave(c);
    return;
  }
  if (c->state != CS_CONNECTED) {
    leave(c);
    return;
  }
  if ((what & EVLOOP_WRITE) && flush_out(c) < 0)
    conn_down(c, strerror(errno));
  if (!c->dead && c->gen == gen && (what & EVLOOP_READ))
    read_input(c);
  leave(c);
}

static void
op_timeout_cb(void *arg)
{
  vici_op_t *op = arg;
  vici_client_t *c = op->c;
  enter(c);
  if (op == c->active && op->phase != PH_QUEUED) {
    char why[VICI_NAME_MAX + 64];
    if (op->done_called)
      snprintf(why, sizeof(why), "no confirmation of an event "
               "unregistration");
    else
      snprintf(why, sizeof(why), "'%s' timed out", op->name);
    log_info("VICI %s; closing the connection (it can no longer be "
             "matched to answers)", why);
    if (op_report(c, op, VICI_RESULT_TIMEOUT, NULL) == 0)
      conn_down(c, why);
  } else {
    op_unlink(c, op);
    op_report(c, op, VICI_RESULT_TIMEOUT, NULL);
    op_free(op);
  }
  leave(c);
}

/* ---- public API ---- */

vici_client_t *
vici_client_new(evloop_t *loop, const char *path)
{
  vici_client_t *c = pc_zalloc(sizeof(*c));
  c->loop = loop;
  c->path = path ? pc_strdup(path) : NULL;
  c->fd = -1;
  c->queue_limit = VICI_DEFAULT_QUEUE_LIMIT;
  c->default_timeout_ms = VICI_DEFAULT_TIMEOUT_MS;
  c->kick = evloop_deferred_new(loop, kick_cb, c);
  c->retry_timer = evloop_timer_new(loop, retry_cb, c);
  return c;
}

static void
client_destroy(vici_client_t *c)
{
  c->busy++; /* callbacks below must not re-enter destroy */
  if (c->io)
    evloop_io_free(c->io);
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->active = NULL;
  while (c->head) {
    vici_op_t *op = c->head;
    op_unlink(c, op);
    if (op->kind != OP_UNREGISTER)
      op_report(c, op, VICI_RESULT_CANCELLED, NULL);
    op_free(op);
  }
  while (c->regs) {
    reg_t *r = c->regs;
    c->regs = r->next;
    free(r);
  }
  evloop_deferred_free(c->kick);
  evloop_timer_free(c->retry_timer);
  if (c->out) {
    pc_memwipe(c->out, c->out_cap);
    free(c->out);
  }
  free(c->in);
  free(c->path);
  free(c);
}

void
vici_client_free_(vici_client_t *c)
{
  if (!c || c->dead)
    return;
  c->dead = 1;
  if (!c->busy)
    client_destroy(c);
}

void
vici_client_set_state_cb(vici_client_t *c, vici_state_cb cb, void *arg)
{
  c->state_cb = cb;
  c->state_arg = arg;
}

void
vici_client_set_reconnect(vici_client_t *c, uint32_t min_ms, uint32_t max_ms)
{
  c->retry_min_ms = min_ms;
  c->retry_max_ms = max_ms < min_ms ? min_ms : max_ms;
  c->retry_cur_ms = min_ms;
}

void
vici_client_set_queue_limit(vici_client_t *c, size_t limit)
{
  c->queue_limit = limit ? limit : 1;
}

void
vici_client_set_default_timeout(vici_client_t *c, uint32_t ms)
{
  c->default_timeout_ms = ms ? ms : VICI_DEFAULT_TIMEOUT_MS;
}

int
vici_client_connect(vici_client_t *c)
{
  if (c->dead)
    return -1;
  if (!c->path || !*c->path ||
      strlen(c->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    log_warn("Unusable VICI socket path %s", c->path ? c->path : "(none)");
    return -1;
  }
  if (c->state == CS_CONNECTED || c->state == CS_CONNECTING ||
      c->state == CS_SCHEDULED)
    return 0;
  evloop_timer_cancel(c->retry_timer);
  c->state = CS_SCHEDULED;
  evloop_deferred_schedule(c->kick);
  return 0;
}

void
vici_client_require_peer(vici_client_t *c, int allow_root, long uid)
{
  c->check_peer = 1;
  c->allow_root = allow_root != 0;
  c->peer_uid = uid;
}

int
vici_client_attach_fd(vici_client_t *c, int fd)
{
  if (c->dead || c->state == CS_CONNECTED || c->state == CS_CONNECTING) {
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
  evloop_timer_cancel(c->retry_timer);
  c->fd = fd;
  conn_established(c);
  return 0;
}

int
vici_client_is_connected(const vici_client_t *c)
{
  return c->state == CS_CONNECTED;
}

size_t
vici_client_n_pending(const vici_client_t *c)
{
  return c->n_ops;
}

static int
name_valid(const char *name)
{
  return name && *name && strlen(name) <= VICI_NAME_MAX;
}

int
vici_client_command(vici_client_t *c, const char *cmd, vici_builder_t *args,
                    const char *stream_event, vici_event_cb stream_cb,
                    vici_done_cb done, void *arg, uint32_t timeout_ms)
{
  const uint8_t *data = NULL;
  size_t len = 0;
  const char *err = "invalid";
  int rv = -1;
  if (c->dead || c->state == CS_IDLE) {
    log_info("VICI command '%s' refused: not connected to charon",
             cmd ? cmd : "?");
    goto out;
  }
  if (!name_valid(cmd) || (stream_event && !name_valid(stream_event))) {
    log_warn("Bad VICI command or event name");
    goto out;
  }
  if (args && !(data = vici_builder_data(args, &len, &err))) {
    log_warn("Bad arguments for VICI command '%s': %s", cmd, err);
    goto out;
  }
  if (len + 2 + strlen(cmd) > VICI_SEGMENT_MAX) {
    log_warn("VICI command '%s' too large", cmd);
    goto out;
  }
  if (c->n_counted >= c->queue_limit) {
    log_info("VICI command '%s' refused: %zu commands already pending",
             cmd, c->n_counted);
    goto out;
  }
  vici_op_t *op = op_new(c, OP_COMMAND, cmd, timeout_ms);
  if (stream_event)
    strcpy(op->stream, stream_event);
  if (len)
    op->msg = pc_memdup(data, len);
  op->msg_len = len;
  op->stream_cb = stream_cb;
  op->done = done;
  op->arg = arg;
  op->counted = 1;
  op_link_tail(c, op);
  evloop_deferred_schedule(c->kick);
  rv = 0;
out:
  vici_builder_free(args);
  return rv;
}

int
vici_client_register_event(vici_client_t *c, const char *event,
                           vici_event_cb cb, vici_done_cb done, void *arg)
{
  if (c->dead || !name_valid(event))
    return -1;
  reg_t *r = reg_find(c, event);
  if (r && r->persistent)
    return -1;
  if (c->n_counted >= c->queue_limit)
    return -1;
  if (!r)
    r = reg_add(c, event);
  r->persistent = 1;
  r->cb = cb;
  r->arg = arg;
  if (c->state == CS_IDLE && !done)
    return 0; /* registered with charon once connected */
  vici_op_t *op = op_new(c, OP_REGISTER, event, 0);
  op->done = done;
  op->arg = arg;
  op->counted = 1;
  op_link_tail(c, op);
  evloop_deferred_schedule(c->kick);
  return 0;
}

int
vici_client_unregister_event(vici_client_t *c, const char *event)
{
  if (c->dead || !name_valid(event))
    return -1;
  reg_t *r = reg_find(c, event);
  if (!r || !r->persistent)
    return -1;
  r->persistent = 0;
  r->cb = NULL;
  r->arg = NULL;
  if (!r->on_server) {
    if (!stream_in_use(c, event))
      reg_remove(c, r);
    return 0;
  }
  if (stream_in_use(c, event))
    return 0; /* the stream unregisters it when it ends */
  vici_op_t *op = op_new(c, OP_UNREGISTER, event, 0);
  op_link_tail(c, op);
  evloop_deferred_schedule(c->kick);
  return 0;
}

/* Whether hay[0..hlen) contains needle[0..nlen). */
static int
holds(const uint8_t *hay, size_t hlen, const void *needle, size_t nlen)
{
  return hay && nlen && hlen >= nlen && memmem(hay, hlen, needle, nlen);
}

int
vici_client_holds_for_testing(const vici_client_t *c, const void *needle,
                              size_t len)
{
  if (holds(c->out, c->out_cap, needle, len) ||
      holds(c->in, c->in_cap, needle, len))
    return 1;
  for (const vici_op_t *op = c->head; op; op = op->next)
    if (holds(op->msg, op->msg_len, needle, len))
      return 1;
  return 0;
}
