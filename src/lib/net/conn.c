/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c -- non-blocking TCP/TLS connections and listeners (see conn.h).
 *
 * Design:
 *  - A conn_t is a small state machine: CONNECTING (non-blocking connect
 *    in progress, waiting for writability), HANDSHAKING (TLS handshake
 *    driven by whatever the TLS layer wants next), OPEN, and two states the
 *    owner no longer sees after conn_close(c, 1): CLOSING (writing out the
 *    outbuf) and LINGER (our side shut down for writing; discarding input
 *    until the peer closes, so that closing a socket with unread input
 *    does not send a RST that could destroy the data we just sent). DEAD
 *    means an error was reported and only conn_free() remains.
 *  - I/O goes straight between the socket/TLS object and the buffers:
 *    reads land in the inbuf's tail chunk (buf_tail_space/buf_commit),
 *    writes leave from its head chunk (buf_head/buf_drain). Reading stops
 *    at the read budget per event; with TLS, decrypted or read-ahead data
 *    may remain inside OpenSSL after the socket stopped being readable, so
 *    then a zero-delay timer continues reading in the next iteration.
 *  - Interest is recomputed from the state after every piece of work:
 *    read interest while the owner wants data (or a TLS write needs to
 *    read), write interest only while the outbuf is non-empty (or a TLS
 *    read needs to write). conn_flush_soon() schedules one deferred
 *    callback per connection, so many appends in one loop iteration become
 *    one write.
 *  - Callbacks may free or close the connection. Every entry point from
 *    the event loop (fd readiness, the deferred callback, the close timer)
 *    marks the conn busy; conn_free() on a busy conn only marks it for
 *    destruction, which happens when the outermost entry point returns.
 *    After each callback the code checks whether the owner is still there
 *    (state still OPEN, callback not cleared) before touching the
 *    connection's I/O again. No callback is ever made from inside an API
 *    call, so callbacks never nest for the same connection.
 *  - Plain (non-TLS) connections use recv/send with MSG_NOSIGNAL; a short
 *    read or write ends the I/O for this event (the kernel buffer is empty
 *    or full), saving the EAGAIN system call. TLS reads stop likewise when
 *    the TLS layer's last socket read was short and it holds nothing more
 *    (tls_conn_drained()).
 *  - Bandwidth limits (conn_set_buckets()): without buckets the only cost
 *    is one flag test per read and per write. With buckets, a read moves
 *    at most min(read budget, tokens of every bucket) and a write at most
 *    the write tokens; what was moved is consumed from every bucket. When
 *    a bucket is empty (before or after the I/O), the conn queues its read
 *    (write) waiter on it and drops read (write) interest; the bucket's
 *    refill tick calls the waiter, which reads (writes) directly -- not by
 *    re-enabling interest -- so waiters are served in FIFO order and TLS
 *    bytes already inside OpenSSL are not forgotten. Bytes counted are
 *    those crossing the conn's boundary: for TLS, plaintext returned by
 *    tls_conn_read() and accepted by tls_conn_write(). TLS framing (about
 *    0.2% for full records) and handshake bytes are not counted, and
 *    OpenSSL may pull one record (plus read-ahead) from the socket before
 *    the bucket allows us to take it. A TLS write that wanted to be
 *    retried is retried at its first length even if that exceeds the
 *    tokens (OpenSSL requires it); the bucket then goes into deficit.
 *  - Plain connections (exit streams, SOCKS, directory HTTP) get the
 *    default group (conn_set_default_buckets()) when they are made, so
 *    the owners need no code for BandwidthRate; for them the bytes counted
 *    are exactly the socket's. The default is one pointer and one flag,
 *    set by the daemon at start-up and reload (a registry, not state that
 *    changes while connections run).
 */
#include "lib/net/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/ratelimit.h"

#define CONN_DEFAULT_READ_BUDGET (64 * 1024)
#define CONN_MIN_READ_SPACE 1024
/* Smallest slice of a refill given to a woken conn (see conn_rl_wake_*). */
#define CONN_RL_MIN_SHARE 4096
#define CONN_CLOSE_TIMEOUT_USEC (10 * 1000000ULL)
#define LISTENER_BACKLOG 1024
#define LISTENER_MAX_ACCEPTS_PER_EVENT 256
#define LISTENER_PAUSE_USEC (1000000ULL)

typedef enum {
  ST_CONNECTING,
  ST_HANDSHAKING,
  ST_OPEN,
  ST_CLOSING,
  ST_LINGER,
  ST_DEAD,
} conn_state_t;

struct conn_t {
  evloop_t *loop;
  int fd;
  conn_state_t state;
  evloop_io_t *io;
  evloop_deferred_t *deferred;
  evloop_timer_t *close_timer;
  evloop_timer_t *resume_timer; /* continue reading what TLS holds */
  tls_conn_t *tls;
  buf_t *in, *out;
  conn_cb_fn cb;
  void *arg;
  pc_addr_t peer;
  size_t lowat;
  size_t read_budget;
  uint64_t nread, nwritten;
  ratelimit_t *rl[2];            /* bandwidth buckets (global, relay) */
  ratelimit_waiter_t rl_rwait;   /* queued: blocked on read tokens */
  ratelimit_waiter_t rl_wwait;   /* queued: blocked on write tokens */
  size_t tls_retry_len;          /* TLS write to retry at >= this length */
  size_t rl_share;               /* while woken: at most this much I/O */
  conn_prio_fn rprio_fn;         /* read priority when blocked on tokens */
  void *rprio_arg;
  int hs_want; /* TLS_WANT_READ/WRITE while handshaking */
  unsigned busy; /* entry points on the stack */
  unsigned reading : 1;          /* owner wants input */
  unsigned eof : 1;              /* peer closed its side */
  unsigned read_wants_write : 1; /* TLS read needs writability */
  unsigned write_wants_read : 1; /* TLS write needs readability */
  unsigned write_blocked : 1;    /* socket full: wait for writability */
  unsigned pending_open : 1;     /* OPEN to report from the deferred cb */
  unsigned pending_error : 1;    /* ERROR to report from the deferred cb */
  unsigned destroy_pending : 1;
  unsigned rl_on : 1;            /* rl[0] or rl[1] set */
  unsigned uncounted : 1;        /* not in conn_get_totals() */
  char err[160];
};

/* Bytes moved by every counted connection since start (conn_get_totals):
 * a process-wide statistic, like the byte counters of a kernel. */
static uint64_t total_read, total_written;

static void conn_update_interest(conn_t *c);
static void conn_io_cb(int fd, int what, void *arg);
static void conn_deferred_cb(void *arg);
static void conn_rl_wake_read(void *arg);
static void conn_rl_wake_write(void *arg);
static void conn_rl_detach(conn_t *c);

/* Buckets for plain connections (conn_set_default_buckets()). */
static struct {
  ratelimit_t *global;
  int count_private;
} conn_defaults;

/* Running out of file descriptors (conn.h): when it last happened, the
 * subscriber (a registry filled at start-up) and whether the current
 * episode was reported to it. */
static struct {
  time_t last;
  int reported;
  void (*fn)(int err, void *arg);
  void *arg;
} fd_exhausted;

void
conn_note_fd_exhausted(int err)
{
  if (err == EMFILE || err == ENFILE)
    fd_exhausted.last = time(NULL);
  if (fd_exhausted.reported)
    return;
  fd_exhausted.reported = 1;
  if (fd_exhausted.fn)
    fd_exhausted.fn(err, fd_exhausted.arg);
}

/* A descriptor was obtained: the next failure starts a new episode. */
static void
fd_obtained(void)
{
  fd_exhausted.reported = 0;
}

time_t
conn_last_fd_exhausted(void)
{
  return fd_exhausted.last;
}

int
conn_set_fd_exhausted_hook(void (*fn)(int err, void *arg), void *arg)
{
  if (fn && fd_exhausted.fn &&
      (fn != fd_exhausted.fn || arg != fd_exhausted.arg)) {
    log_warn("A second subscriber to descriptor exhaustion was refused: "
             "one is set already");
    return -1;
  }
  fd_exhausted.fn = fn;
  fd_exhausted.arg = fn ? arg : NULL;
  return 0;
}

void
conn_set_default_buckets(ratelimit_t *global, int count_private)
{
  if (global)
    ratelimit_ref(global);
  if (conn_defaults.global)
    ratelimit_unref(conn_defaults.global);
  conn_defaults.global = global;
  conn_defaults.count_private = count_private ? 1 : 0;
}

/* A new plain connection: the default buckets, unless its peer is exempt
 * (private or unknown address, without count_private). */
static void
conn_apply_default_buckets(conn_t *c)
{
  if (!conn_defaults.global)
    return;
  if (!conn_defaults.count_private && pc_addr_is_private(&c->peer))
    return;
  conn_set_buckets(c, conn_defaults.global, NULL);
}

/* ---- life cycle ---- */

static void
conn_destroy(conn_t *c)
{
  conn_rl_detach(c);
  evloop_io_free(c->io);
  evloop_deferred_free(c->deferred);
  evloop_timer_free(c->close_timer);
  evloop_timer_free(c->resume_timer);
  tls_conn_free(c->tls);
  if (c->fd >= 0)
    close(c->fd);
  buf_free(c->in);
  buf_free(c->out);
  free(c);
}

/* Destroy now, or when the outermost entry point returns. */
static void
conn_destroy_soon(conn_t *c)
{
  c->cb = NULL;
  c->arg = NULL;
  if (c->busy) {
    c->destroy_pending = 1;
    c->state = ST_DEAD;
    ratelimit_waiter_cancel(&c->rl_rwait);
    ratelimit_waiter_cancel(&c->rl_wwait);
    evloop_io_set(c->io, 0);
    evloop_deferred_cancel(c->deferred);
    if (c->resume_timer)
      evloop_timer_cancel(c->resume_timer);
  } else {
    conn_destroy(c);
  }
}

static inline void
conn_enter(conn_t *c)
{
  c->busy++;
}

/* Leave an entry point; returns 1 if c was destroyed. */
static int
conn_leave(conn_t *c)
{
  if (--c->busy == 0 && c->destroy_pending) {
    conn_destroy(c);
    return 1;
  }
  if (!c->destroy_pending)
    conn_update_interest(c);
  return 0;
}

/* Is the owner still listening to this connection? */
static inline int
conn_owned_open(const conn_t *c)
{
  return c->state == ST_OPEN && c->cb && !c->destroy_pending;
}

static void
conn_emit(conn_t *c, conn_event_t ev)
{
  if (c->cb && !c->destroy_pending)
    c->cb(c, ev, c->arg);
}

static conn_t *
conn_alloc(evloop_t *loop, int fd, const pc_addr_t *peer, conn_cb_fn cb,
           void *arg)
{
  conn_t *c = pc_zalloc(sizeof(*c));
  c->loop = loop;
  c->fd = fd;
  c->cb = cb;
  c->arg = arg;
  if (peer)
    c->peer = *peer;
  else
    c->peer.family = AF_UNSPEC;
  c->in = buf_new();
  c->out = buf_new();
  c->reading = 1;
  c->read_budget = CONN_DEFAULT_READ_BUDGET;
  c->io = evloop_io_new(loop, fd, conn_io_cb, c);
  c->deferred = evloop_deferred_new(loop, conn_deferred_cb, c);
  c->rl_share = SIZE_MAX;
  ratelimit_waiter_init(&c->rl_rwait, conn_rl_wake_read, c);
  ratelimit_waiter_init(&c->rl_wwait, conn_rl_wake_write, c);
  return c;
}

/* An error before the owner could hear of it: report from the loop. */
static void
conn_fail_later(conn_t *c, const char *what, const char *detail)
{
  snprintf(c->err, sizeof(c->err), "%s: %s", what, detail);
  c->state = ST_DEAD;
  c->pending_error = 1;
  evloop_deferred_schedule(c->deferred);
}

/* The connection broke: report once (or, without an owner, go away). */
static void
conn_fail(conn_t *c, const char *what, const char *detail)
{
  if (c->state == ST_DEAD)
    return;
  snprintf(c->err, sizeof(c->err), "%s%s%s", what, detail ? ": " : "",
           detail ? detail : "");
  c->state = ST_DEAD;
  evloop_io_set(c->io, 0);
  if (c->cb)
    conn_emit(c, CONN_EV_ERROR);
  else
    conn_destroy_soon(c);
}

static void
set_nodelay(int fd)
{
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
    log_info("cannot set TCP_NODELAY on fd %d: %s", fd, strerror(errno));
}

/* Local addresses for outgoing connections, per kind and family
 * (0: IPv4, 1: IPv6); family AF_UNSPEC when unset. */
static pc_addr_t outbound[CONN_OUT_N_KINDS][2];

static int
family_slot(int family)
{
  return family == AF_INET6 ? 1 : family == AF_INET ? 0 : -1;
}

void
conn_set_outbound_addr(conn_out_kind_t kind, int family, const pc_addr_t *a)
{
  if ((int)kind < 0 || kind >= CONN_OUT_N_KINDS)
    return;
  int f = family_slot(a && a->family != AF_UNSPEC ? a->family : family);
  if (f < 0)
    return;
  memset(&outbound[kind][f], 0, sizeof(pc_addr_t));
  outbound[kind][f].family = AF_UNSPEC;
  if (a && a->family != AF_UNSPEC) {
    outbound[kind][f] = *a;
    outbound[kind][f].port = 0;
  }
}

void
conn_clear_outbound_addrs(void)
{
  memset(outbound, 0, sizeof(outbound)); /* family 0 is AF_UNSPEC */
}

/* The address to bind to for kind and family, or NULL. */
static const pc_addr_t *
outbound_for(conn_out_kind_t kind, int family)
{
  int f = family_slot(family);
  if (f < 0 || (int)kind < 0 || kind >= CONN_OUT_N_KINDS)
    return NULL;
  if (outbound[kind][f].family == family)
    return &outbound[kind][f];
  if (outbound[CONN_OUT_ANY][f].family == family)
    return &outbound[CONN_OUT_ANY][f];
  return NULL;
}

conn_t *
conn_connect(evloop_t *loop, tls_context_t *tls_ctx, const pc_addr_t *addr,
             conn_cb_fn cb, void *arg, const char **err)
{
  return conn_connect_kind(loop, tls_ctx, addr, CONN_OUT_ANY, cb, arg, err);
}

conn_t *
conn_connect_kind(evloop_t *loop, tls_context_t *tls_ctx,
                  const pc_addr_t *addr, conn_out_kind_t kind, conn_cb_fn cb,
                  void *arg, const char **err)
{
  struct sockaddr_storage ss;
  socklen_t sslen;
  if (pc_addr_to_sockaddr(addr, &ss, &sslen) < 0) {
    if (err)
      *err = "address family not supported";
    return NULL;
  }
  int fd = socket(addr->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  IPPROTO_TCP);
  if (fd < 0) {
    int e = errno;
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
      conn_note_fd_exhausted(e);
    if (err)
      *err = strerror(e);
    log_warn("cannot create a socket: %s", strerror(e));
    return NULL;
  }
  fd_obtained();
  set_nodelay(fd);
  tls_conn_t *tls = NULL;
  if (tls_ctx) {
    tls = tls_conn_new(tls_ctx, fd, 0);
    if (!tls) {
      close(fd);
      if (err)
        *err = "cannot set up TLS";
      return NULL;
    }
  }
  conn_t *c = conn_alloc(loop, fd, addr, cb, arg);
  c->tls = tls;
  c->state = ST_CONNECTING;
  if (!tls)
    conn_apply_default_buckets(c);
  /* As tor: never for loopback destinations. */
  const pc_addr_t *local =
      pc_addr_is_loopback(addr) ? NULL : outbound_for(kind, addr->family);
  if (local) {
    struct sockaddr_storage ls;
    socklen_t lslen;
    if (pc_addr_to_sockaddr(local, &ls, &lslen) < 0 ||
        bind(fd, (struct sockaddr *)&ls, lslen) < 0) {
      char shown[PC_ADDR_STR_LEN];
      pc_addr_fmt(local, shown, sizeof(shown), 0);
      log_warn("Could not bind an outgoing connection to %s "
               "(OutboundBindAddress*): %s", shown, strerror(errno));
      conn_fail_later(c, "bind", strerror(errno));
      return c;
    }
  }
  int r;
  do {
    r = connect(fd, (struct sockaddr *)&ss, sslen);
  } while (r < 0 && errno == EINTR);
  if (r < 0 && errno != EINPROGRESS) {
    conn_fail_later(c, "connect", strerror(errno));
    return c;
  }
  /* Connected at once (r == 0) or in progress: either way the socket
   * becomes writable and conn_finish_connect() takes over. */
  conn_update_interest(c);
  return c;
}

conn_t *
conn_new_accepted(evloop_t *loop, tls_context_t *tls_ctx, int fd,
                  const pc_addr_t *peer, conn_cb_fn cb, void *arg)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK))
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  set_nodelay(fd);
  conn_t *c = conn_alloc(loop, fd, peer, cb, arg);
  if (tls_ctx) {
    c->tls = tls_conn_new(tls_ctx, fd, 1);
    if (!c->tls) {
      conn_fail_later(c, "TLS", "cannot set up a TLS connection");
      return c;
    }
    c->state = ST_HANDSHAKING;
    c->hs_want = TLS_WANT_READ;
  } else {
    c->state = ST_OPEN;
    c->pending_open = 1;
    evloop_deferred_schedule(c->deferred);
    conn_apply_default_buckets(c);
  }
  conn_update_interest(c);
  return c;
}

void
conn_free_(conn_t *c)
{
  if (!c)
    return;
  conn_destroy_soon(c);
}

/* ---- interest ---- */

static void
conn_update_interest(conn_t *c)
{
  int w = 0;
  switch (c->state) {
  case ST_CONNECTING:
    w = EVLOOP_WRITE;
    break;
  case ST_HANDSHAKING:
    w = c->hs_want == TLS_WANT_WRITE ? EVLOOP_WRITE : EVLOOP_READ;
    break;
  case ST_OPEN:
  case ST_CLOSING:
    /* A conn waiting for tokens has no interest in that direction: the
     * bucket's refill calls it back. */
    if ((c->state == ST_OPEN && c->reading && !c->eof &&
         !ratelimit_waiter_is_waiting(&c->rl_rwait)) ||
        c->write_wants_read)
      w |= EVLOOP_READ;
    /* Write interest only after a write found the socket full; otherwise
     * the deferred flush writes directly, without epoll_ctl calls. */
    if ((buf_datalen(c->out) && c->write_blocked && !c->write_wants_read &&
         !ratelimit_waiter_is_waiting(&c->rl_wwait)) ||
        c->read_wants_write)
      w |= EVLOOP_WRITE;
    break;
  case ST_LINGER:
    w = EVLOOP_READ;
    break;
  case ST_DEAD:
    w = 0;
    break;
  }
  if (evloop_io_get(c->io) != w)
    evloop_io_set(c->io, w);
}

/* ---- bandwidth buckets ---- */

/* Bytes the conn's buckets allow in direction d now (SIZE_MAX: no
 * limit); *empty gets the first bucket that allows nothing. */
static size_t
conn_rl_allowance(const conn_t *c, ratelimit_dir_t d, ratelimit_t **empty)
{
  size_t lim = SIZE_MAX;
  *empty = NULL;
  for (int i = 0; i < 2; i++) {
    if (!c->rl[i])
      continue;
    size_t a = ratelimit_avail(c->rl[i], d);
    if (a == 0 && !*empty)
      *empty = c->rl[i];
    if (a < lim)
      lim = a;
  }
  return lim;
}

/* Record n bytes moved; then wait on an empty bucket (only if more_to_do:
 * otherwise nothing needs waking) or stop waiting. Returns 1 if the conn
 * now waits for tokens. */
/* Queue c on the empty bucket for direction d (reads with the owner's
 * priority). */
static void
conn_rl_wait(conn_t *c, ratelimit_t *empty, ratelimit_dir_t d)
{
  if (d == RATELIMIT_READ)
    ratelimit_wait_prio(empty, d, &c->rl_rwait,
                        c->rprio_fn ? c->rprio_fn(c->rprio_arg) : 0);
  else
    ratelimit_wait(empty, d, &c->rl_wwait);
}

void
conn_set_read_priority(conn_t *c, conn_prio_fn fn, void *arg)
{
  c->rprio_fn = fn;
  c->rprio_arg = arg;
}

int
conn_set_congestion_control(conn_t *c, const char *name)
{
#ifdef TCP_CONGESTION
  if (setsockopt(c->fd, IPPROTO_TCP, TCP_CONGESTION, name,
                 (socklen_t)strlen(name)) < 0)
    return -1;
  return 0;
#else
  (void)c;
  (void)name;
  errno = ENOTSUP;
  return -1;
#endif
}

static int
conn_rl_account(conn_t *c, ratelimit_dir_t d, size_t n, int more_to_do)
{
  ratelimit_waiter_t *w = d == RATELIMIT_READ ? &c->rl_rwait : &c->rl_wwait;
  ratelimit_t *empty;
  for (int i = 0; i < 2; i++)
    if (c->rl[i] && n)
      ratelimit_consume(c->rl[i], d, n);
  if (more_to_do && conn_rl_allowance(c, d, &empty) == 0) {
    conn_rl_wait(c, empty, d);
    return 1;
  }
  ratelimit_waiter_cancel(w);
  return 0;
}

static void
conn_rl_detach(conn_t *c)
{
  ratelimit_waiter_cancel(&c->rl_rwait);
  ratelimit_waiter_cancel(&c->rl_wwait);
  for (int i = 0; i < 2; i++) {
    ratelimit_unref(c->rl[i]);
    c->rl[i] = NULL;
  }
  c->rl_on = 0;
}

/* ---- reading and writing ---- */

/* Write what we can from the outbuf. Emits DRAINED (OPEN only) or fails
 * the connection. */
static void
conn_write_some(conn_t *c)
{
  size_t before = buf_datalen(c->out);
  size_t allow = SIZE_MAX, done = 0;
  if (c->rl_on) {
    ratelimit_t *empty;
    allow = conn_rl_allowance(c, RATELIMIT_WRITE, &empty);
    if (allow == 0 && !c->tls_retry_len) {
      ratelimit_wait(empty, RATELIMIT_WRITE, &c->rl_wwait);
      return;
    }
    if (allow > c->rl_share)
      allow = c->rl_share;
  }
  c->write_wants_read = 0;
  while (buf_datalen(c->out)) {
    size_t len;
    const uint8_t *p = buf_head(c->out, &len);
    ssize_t n;
    if (allow != SIZE_MAX) {
      if (done >= allow && !c->tls_retry_len)
        break;
      size_t room = done < allow ? allow - done : 0;
      if (len > room)
        len = room > c->tls_retry_len ? room : c->tls_retry_len;
    }
    if (c->tls) {
      n = tls_conn_write(c->tls, p, len);
      if (n == TLS_WANT_WRITE || n == TLS_WANT_READ) {
        /* OpenSSL wants the same bytes again, never fewer. */
        c->tls_retry_len = len;
        if (n == TLS_WANT_WRITE)
          c->write_blocked = 1;
        else
          c->write_wants_read = 1;
        break;
      }
      if (n <= 0) {
        conn_fail(c, "TLS write", tls_conn_last_error(c->tls));
        return;
      }
      c->tls_retry_len = 0;
    } else {
      n = send(c->fd, p, len, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          c->write_blocked = 1;
          break;
        }
        conn_fail(c, "write", strerror(errno));
        return;
      }
    }
    buf_drain(c->out, (size_t)n);
    c->nwritten += (uint64_t)n;
    if (!c->uncounted)
      total_written += (uint64_t)n;
    done += (size_t)n;
    if (!c->tls && (size_t)n < len) {
      c->write_blocked = 1; /* socket buffer full */
      break;
    }
  }
  size_t after = buf_datalen(c->out);
  /* Stopped by the tokens or a fair slice with tokens left: nothing else
   * would restart the write, so continue from the loop. */
  if (c->rl_on && !conn_rl_account(c, RATELIMIT_WRITE, done, after > 0) &&
      after && !c->write_blocked && !c->write_wants_read &&
      c->state != ST_DEAD)
    evloop_deferred_schedule(c->deferred);
  if (c->state == ST_OPEN && before > c->lowat && after <= c->lowat)
    conn_emit(c, CONN_EV_DRAINED);
}

static void conn_resume_cb(void *arg);

/* OpenSSL holds input that the socket will not signal again: read it in
 * the next loop iteration (a zero timer, not a deferred callback, so that
 * one busy connection cannot keep the loop from polling the others). */
static void
conn_schedule_resume(conn_t *c)
{
  if (!c->resume_timer)
    c->resume_timer = evloop_timer_new(c->loop, conn_resume_cb, c);
  if (!evloop_timer_is_pending(c->resume_timer))
    evloop_timer_schedule(c->resume_timer, 0);
}

/* Read up to the budget into the inbuf; emits DATA, then EOF or ERROR. */
static void
conn_read_some(conn_t *c)
{
  size_t total = 0, budget = c->read_budget;
  int eof = 0;
  const char *fail_what = NULL, *fail_detail = NULL;
  if (c->rl_on) {
    ratelimit_t *empty;
    size_t allow = conn_rl_allowance(c, RATELIMIT_READ, &empty);
    if (allow == 0) {
      conn_rl_wait(c, empty, RATELIMIT_READ);
      return;
    }
    if (allow > c->rl_share)
      allow = c->rl_share;
    if (allow < budget)
      budget = allow;
  }
  c->read_wants_write = 0;
  while (total < budget) {
    size_t avail;
    uint8_t *p = buf_tail_space(c->in, CONN_MIN_READ_SPACE, &avail);
    size_t want = budget - total;
    if (want > avail)
      want = avail;
    ssize_t n;
    if (c->tls) {
      n = tls_conn_read(c->tls, p, want);
      if (n > 0) {
        buf_commit(c->in, (size_t)n);
        total += (size_t)n;
        if (tls_conn_drained(c->tls))
          break; /* socket and OpenSSL empty: save the EAGAIN read */
        continue;
      }
      if (n == TLS_WANT_READ)
        break;
      if (n == TLS_WANT_WRITE) {
        c->read_wants_write = 1;
        break;
      }
      if (n == TLS_CLOSED) {
        eof = 1;
        break;
      }
      fail_what = "TLS read";
      fail_detail = tls_conn_last_error(c->tls);
      break;
    } else {
      n = recv(c->fd, p, want, 0);
      if (n > 0) {
        buf_commit(c->in, (size_t)n);
        total += (size_t)n;
        if ((size_t)n < want)
          break; /* kernel buffer drained */
        continue;
      }
      if (n == 0) {
        eof = 1;
        break;
      }
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      fail_what = "read";
      fail_detail = strerror(errno);
      break;
    }
  }
  c->nread += total;
  if (!c->uncounted)
    total_read += total;
  int rl_waiting = c->rl_on &&
      conn_rl_account(c, RATELIMIT_READ, total, !eof && !fail_what);
  if (!eof && !fail_what && total >= budget && !rl_waiting && c->tls &&
      tls_conn_pending(c->tls))
    conn_schedule_resume(c);
  if (total) {
    conn_emit(c, CONN_EV_DATA);
    if (!conn_owned_open(c))
      return;
  }
  if (eof) {
    c->eof = 1;
    snprintf(c->err, sizeof(c->err), "connection closed by peer");
    conn_emit(c, CONN_EV_EOF);
  } else if (fail_what) {
    conn_fail(c, fail_what, fail_detail);
  }
}

static void
conn_open(conn_t *c)
{
  c->state = ST_OPEN;
  if (c->tls && log_is_enabled(LOG_SEV_DEBUG)) {
    char a[PC_ADDR_STR_LEN];
    log_debug("connection with %s: %s",
              pc_addr_fmt(&c->peer, a, sizeof(a), 1),
              tls_conn_describe(c->tls));
  }
  conn_emit(c, CONN_EV_OPEN);
  if (conn_owned_open(c) && buf_datalen(c->out))
    evloop_deferred_schedule(c->deferred); /* queued before OPEN */
  /* With TLS, application data may have arrived with the last handshake
   * records and already sit inside OpenSSL. */
  if (conn_owned_open(c) && c->tls && c->reading && tls_conn_pending(c->tls))
    conn_read_some(c);
}

static void
conn_do_handshake(conn_t *c)
{
  int r = tls_conn_handshake(c->tls);
  if (r == TLS_OK) {
    conn_open(c);
  } else if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
    c->hs_want = r;
  } else {
    conn_fail(c, "TLS handshake", tls_conn_last_error(c->tls));
  }
}

static void
conn_finish_connect(conn_t *c)
{
  int e = 0;
  socklen_t elen = sizeof(e);
  if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
    e = errno;
  if (e == EINPROGRESS || e == EALREADY)
    return;
  if (e) {
    conn_fail(c, "connect", strerror(e));
    return;
  }
  if (c->tls) {
    c->state = ST_HANDSHAKING;
    conn_do_handshake(c);
  } else {
    conn_open(c);
  }
}

/* ---- closing ---- */

static void
conn_close_timeout_cb(void *arg)
{
  conn_t *c = arg;
  conn_enter(c);
  log_info("closing connection: timed out flushing or lingering");
  conn_destroy_soon(c);
  conn_leave(c);
}

/* Discard input until the peer closes (LINGER). */
static void
conn_linger_read(conn_t *c)
{
  uint8_t scratch[4096];
  for (int i = 0; i < 16; i++) {
    ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
    if (n > 0)
      continue;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    conn_destroy_soon(c); /* EOF or error: done */
    return;
  }
}

/* CLOSING: write; once the outbuf is empty, shut down and linger. */
static void
conn_close_progress(conn_t *c)
{
  if (buf_datalen(c->out)) {
    conn_write_some(c);
    if (c->state != ST_CLOSING)
      return; /* failed (and destroyed) */
    if (buf_datalen(c->out))
      return;
  }
  if (c->tls)
    (void)tls_conn_shutdown(c->tls); /* best effort close_notify */
  if (c->eof || shutdown(c->fd, SHUT_WR) < 0) {
    conn_destroy_soon(c);
    return;
  }
  c->state = ST_LINGER;
  conn_linger_read(c);
}

void
conn_close(conn_t *c, int flush_first)
{
  if (!c)
    return;
  c->cb = NULL;
  c->arg = NULL;
  c->rprio_fn = NULL; /* its argument belongs to the owner, who let go */
  c->rprio_arg = NULL;
  if (!flush_first || c->state != ST_OPEN || c->destroy_pending) {
    conn_destroy_soon(c);
    return;
  }
  c->state = ST_CLOSING;
  c->reading = 0;
  ratelimit_waiter_cancel(&c->rl_rwait);
  c->close_timer = evloop_timer_new(c->loop, conn_close_timeout_cb, c);
  evloop_timer_schedule(c->close_timer, CONN_CLOSE_TIMEOUT_USEC);
  evloop_deferred_schedule(c->deferred);
  if (!c->busy)
    conn_update_interest(c);
}

/* ---- event-loop entry points ---- */

static void
conn_io_cb(int fd, int what, void *arg)
{
  conn_t *c = arg;
  (void)fd;
  conn_enter(c);
  switch (c->state) {
  case ST_CONNECTING:
    if (what & EVLOOP_WRITE)
      conn_finish_connect(c);
    break;
  case ST_HANDSHAKING:
    conn_do_handshake(c);
    break;
  case ST_OPEN:
    if (c->pending_open) {
      c->pending_open = 0;
      conn_emit(c, CONN_EV_OPEN);
      if (!conn_owned_open(c))
        break;
    }
    if ((what & EVLOOP_WRITE) && c->read_wants_write && c->reading) {
      conn_read_some(c);
      if (!conn_owned_open(c))
        break;
    }
    if (what & EVLOOP_WRITE)
      c->write_blocked = 0;
    if (((what & EVLOOP_WRITE) ||
         ((what & EVLOOP_READ) && c->write_wants_read)) &&
        buf_datalen(c->out)) {
      conn_write_some(c);
      if (!conn_owned_open(c))
        break;
    }
    if ((what & EVLOOP_READ) && c->reading && !c->eof)
      conn_read_some(c);
    break;
  case ST_CLOSING:
    if (what & EVLOOP_WRITE)
      c->write_blocked = 0;
    conn_close_progress(c);
    break;
  case ST_LINGER:
    conn_linger_read(c);
    break;
  case ST_DEAD:
    break;
  }
  conn_leave(c);
}

static void
conn_deferred_cb(void *arg)
{
  conn_t *c = arg;
  conn_enter(c);
  if (c->pending_error) {
    c->pending_error = 0;
    conn_emit(c, CONN_EV_ERROR);
  } else if (c->pending_open) {
    c->pending_open = 0;
    conn_emit(c, CONN_EV_OPEN);
  }
  int rl_waiting = ratelimit_waiter_is_waiting(&c->rl_wwait);
  if (c->state == ST_OPEN && !c->destroy_pending) {
    if (buf_datalen(c->out) && !c->write_blocked && !c->write_wants_read &&
        !rl_waiting)
      conn_write_some(c);
  } else if (c->state == ST_CLOSING && !c->destroy_pending &&
             !c->write_blocked && !c->write_wants_read && !rl_waiting) {
    conn_close_progress(c);
  }
  conn_leave(c);
}

/* This conn's fair slice of its buckets' refill (ratelimit_share()). */
static size_t
conn_rl_share(const conn_t *c, ratelimit_dir_t d)
{
  size_t share = SIZE_MAX;
  for (int i = 0; i < 2; i++) {
    if (c->rl[i]) {
      size_t s = ratelimit_share(c->rl[i], d, CONN_RL_MIN_SHARE);
      if (s < share)
        share = s;
    }
  }
  return share;
}

/* Read now if the owner still wants to: rate-limited wake-ups (rl) read at
 * most their slice, a resume (conn_resume_cb) reads as the buckets allow. */
static void
conn_wake_reader(conn_t *c, int rl)
{
  conn_enter(c);
  if (conn_owned_open(c) && c->reading && !c->eof) {
    if (rl)
      c->rl_share = conn_rl_share(c, RATELIMIT_READ);
    conn_read_some(c);
    c->rl_share = SIZE_MAX;
  }
  conn_leave(c);
}

/* A bucket refilled after this conn found it empty (FIFO among the
 * bucket's waiters): read or write now, directly, at most a fair slice of
 * the refill. If tokens remain after every waiter had its slice, conns
 * with interest take them through the normal readiness path. */
static void
conn_rl_wake_read(void *arg)
{
  conn_wake_reader(arg, 1);
}

static void
conn_rl_wake_write(void *arg)
{
  conn_t *c = arg;
  conn_enter(c);
  if (!c->destroy_pending && buf_datalen(c->out) && !c->write_blocked &&
      !c->write_wants_read) {
    c->rl_share = conn_rl_share(c, RATELIMIT_WRITE);
    if (c->state == ST_OPEN)
      conn_write_some(c);
    else if (c->state == ST_CLOSING)
      conn_close_progress(c);
    c->rl_share = SIZE_MAX;
  }
  /* Otherwise conn_leave() restores write interest: the socket decides. */
  conn_leave(c);
}

static void
conn_resume_cb(void *arg)
{
  conn_wake_reader(arg, 0);
}

/* ---- small API ---- */

void
conn_set_callback(conn_t *c, conn_cb_fn cb, void *arg)
{
  if (c->state == ST_CLOSING || c->state == ST_LINGER || c->destroy_pending)
    return; /* handed over: no more callbacks */
  c->cb = cb;
  c->arg = arg;
}

buf_t *
conn_inbuf(conn_t *c)
{
  return c->in;
}

buf_t *
conn_outbuf(conn_t *c)
{
  return c->out;
}

void
conn_set_memacct(conn_t *c, int kind)
{
  buf_set_memacct(c->in, kind);
  buf_set_memacct(c->out, kind);
}

size_t
conn_buffered_alloc(const conn_t *c)
{
  return buf_allocation(c->in) + buf_allocation(c->out);
}

uint64_t
conn_oldest_data_us(const conn_t *c)
{
  uint64_t i = buf_oldest_us(c->in), o = buf_oldest_us(c->out);
  return i < o ? i : o;
}

void
conn_flush_soon(conn_t *c)
{
  if (c->state == ST_OPEN && buf_datalen(c->out) &&
      !ratelimit_waiter_is_waiting(&c->rl_wwait))
    evloop_deferred_schedule(c->deferred);
}

void
conn_set_buckets(conn_t *c, ratelimit_t *global, ratelimit_t *relay)
{
  if (global == relay)
    relay = NULL;
  if (!global && relay) {
    global = relay;
    relay = NULL;
  }
  if (c->rl[0] == global && c->rl[1] == relay)
    return;
  int was_r = ratelimit_waiter_is_waiting(&c->rl_rwait);
  int was_w = ratelimit_waiter_is_waiting(&c->rl_wwait);
  if (global)
    ratelimit_ref(global);
  if (relay)
    ratelimit_ref(relay);
  conn_rl_detach(c);
  c->rl[0] = global;
  c->rl[1] = relay;
  c->rl_on = global != NULL;
  /* Blocked under the old buckets: try again from the loop under the new
   * ones (no callback from inside this call). */
  if (was_r && c->state == ST_OPEN && c->tls && tls_conn_pending(c->tls))
    conn_schedule_resume(c);
  if (was_w && (c->state == ST_OPEN || c->state == ST_CLOSING) &&
      buf_datalen(c->out))
    evloop_deferred_schedule(c->deferred);
  if (!c->busy && !c->destroy_pending)
    conn_update_interest(c);
}

void
conn_set_reading(conn_t *c, int enabled)
{
  if (c->state == ST_CLOSING || c->state == ST_LINGER)
    return;
  int was = c->reading;
  c->reading = enabled ? 1 : 0;
  if (!c->reading)
    ratelimit_waiter_cancel(&c->rl_rwait); /* keep no slot we won't use */
  if (c->reading && !was && c->state == ST_OPEN && c->tls &&
      tls_conn_pending(c->tls))
    conn_schedule_resume(c);
  if (!c->busy && !c->destroy_pending)
    conn_update_interest(c);
}

void
conn_set_lowat(conn_t *c, size_t lowat)
{
  c->lowat = lowat;
}

void
conn_set_read_budget(conn_t *c, size_t bytes)
{
  c->read_budget = bytes ? bytes : CONN_DEFAULT_READ_BUDGET;
}

const pc_addr_t *
conn_peer(const conn_t *c)
{
  return &c->peer;
}

tls_conn_t *
conn_tls(conn_t *c)
{
  return c->tls;
}

int
conn_fd(const conn_t *c)
{
  return c->fd;
}

const char *
conn_error(const conn_t *c)
{
  return c->err[0] ? c->err : "no error";
}

uint64_t
conn_bytes_read(const conn_t *c)
{
  return c->nread;
}

uint64_t
conn_bytes_written(const conn_t *c)
{
  return c->nwritten;
}

void
conn_set_counted(conn_t *c, int counted)
{
  c->uncounted = !counted;
}

void
conn_get_totals(uint64_t *bytes_read, uint64_t *bytes_written)
{
  *bytes_read = total_read;
  *bytes_written = total_written;
}

/* ---- listeners ---- */

unsigned
conn_count_open_fds(void)
{
  struct rlimit rl;
  rlim_t max = 1u << 20;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
    max = rl.rlim_cur;
  unsigned n = 0;
  for (rlim_t fd = 0; fd < max; fd++)
    if (fcntl((int)fd, F_GETFD) >= 0)
      n++;
  return n;
}

struct listener_t {
  evloop_t *loop;
  int fd;
  evloop_io_t *io;
  evloop_timer_t *pause_timer;
  listener_cb_fn cb;
  void *arg;
  pc_addr_t addr;
  unsigned busy;
  int free_pending;
  int warned_exhausted; /* logged the current fd-exhaustion episode */
};

static void
listener_destroy(listener_t *l)
{
  evloop_io_free(l->io);
  evloop_timer_free(l->pause_timer);
  if (l->fd >= 0)
    close(l->fd);
  free(l);
}

static void
listener_resume_cb(void *arg)
{
  listener_t *l = arg;
  evloop_io_set(l->io, EVLOOP_READ);
}

static void
listener_accept_cb(int lfd, int what, void *arg)
{
  listener_t *l = arg;
  (void)what;
  l->busy++;
  for (int i = 0; i < LISTENER_MAX_ACCEPTS_PER_EVENT && !l->free_pending;
       i++) {
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sslen,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK)
        break;
      if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM ||
          e == ENETDOWN || e == ENOPROTOOPT || e == EHOSTDOWN ||
          e == EHOSTUNREACH || e == ENETUNREACH || e == EOPNOTSUPP)
        continue; /* that one connection failed; others may be waiting */
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        conn_note_fd_exhausted(e);
        /* Out of descriptors or memory: the pending connection stays in
         * the backlog and the socket stays readable, so stop watching it
         * for a while instead of spinning. */
        if (!l->warned_exhausted) {
          char a[PC_ADDR_STR_LEN];
          log_warn("cannot accept on %s: %s; pausing accepts",
                   pc_addr_fmt(&l->addr, a, sizeof(a), 1), strerror(e));
          l->warned_exhausted = 1;
        }
        evloop_io_set(l->io, 0);
        evloop_timer_schedule(l->pause_timer, LISTENER_PAUSE_USEC);
        break;
      }
      log_warn("accept failed: %s", strerror(e));
      break;
    }
    l->warned_exhausted = 0;
    fd_obtained();
    pc_addr_t peer;
    if (pc_addr_from_sockaddr(&peer, (struct sockaddr *)&ss, sslen) < 0)
      memset(&peer, 0, sizeof(peer)); /* family AF_UNSPEC */
    l->cb(fd, &peer, l->arg);
  }
  if (--l->busy == 0 && l->free_pending)
    listener_destroy(l);
}

int
listener_ipv6_available(const char **err)
{
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) {
    if (err)
      *err = strerror(errno);
    return 0;
  }
  close(fd);
  return 1;
}

/* A listener on fd, which is bound and listening: accepting from now on.
 * Both kinds (TCP, unix) end here. */
static listener_t *
listener_start(evloop_t *loop, int fd, const pc_addr_t *addr,
               listener_cb_fn cb, void *arg)
{
  listener_t *l = pc_zalloc(sizeof(*l));
  l->addr = *addr;
  l->loop = loop;
  l->fd = fd;
  l->cb = cb;
  l->arg = arg;
  l->io = evloop_io_new(loop, fd, listener_accept_cb, l);
  l->pause_timer = evloop_timer_new(loop, listener_resume_cb, l);
  evloop_io_set(l->io, EVLOOP_READ);
  return l;
}

/* The failure path of both kinds: say why, close fd (if open), and give
 * the reason to the caller. */
static void
listener_fail(const char *where, int fd, const char *why, const char **err)
{
  log_warn("cannot listen on %s: %s", where, why);
  if (fd >= 0)
    close(fd);
  if (err)
    *err = why;
}

listener_t *
listener_new(evloop_t *loop, const pc_addr_t *bind_addr, listener_cb_fn cb,
             void *arg, const char **err)
{
  struct sockaddr_storage ss;
  socklen_t sslen;
  char a[PC_ADDR_STR_LEN];
  const char *e = NULL;
  int fd = -1, one = 1;

  if (pc_addr_to_sockaddr(bind_addr, &ss, &sslen) < 0) {
    if (err)
      *err = "address family not supported";
    return NULL;
  }
  fd = socket(bind_addr->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
              IPPROTO_TCP);
  if (fd < 0) {
    e = strerror(errno);
    goto fail;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
    e = strerror(errno);
    goto fail;
  }
  if (bind_addr->family == AF_INET6 &&
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) {
    e = strerror(errno);
    goto fail;
  }
  if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 ||
      listen(fd, LISTENER_BACKLOG) < 0) {
    e = strerror(errno);
    goto fail;
  }
  sslen = sizeof(ss);
  pc_addr_t bound;
  if (getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0 ||
      pc_addr_from_sockaddr(&bound, (struct sockaddr *)&ss, sslen) < 0)
    bound = *bind_addr;
  listener_t *l = listener_start(loop, fd, &bound, cb, arg);
  log_info("listening on %s", pc_addr_fmt(&l->addr, a, sizeof(a), 1));
  return l;
fail:
  listener_fail(pc_addr_fmt(bind_addr, a, sizeof(a), 1), fd, e, err);
  return NULL;
}

listener_t *
listener_new_unix(evloop_t *loop, const char *path, unsigned mode,
                  listener_cb_fn cb, void *arg, const char **err)
{
  struct sockaddr_un sun;
  const char *e = NULL;
  int fd = -1;
  memset(&sun, 0, sizeof(sun));
  sun.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(sun.sun_path)) {
    if (err)
      *err = "socket path too long";
    return NULL;
  }
  memcpy(sun.sun_path, path, strlen(path));
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    e = strerror(errno);
    goto fail;
  }
  /* A socket file left by an earlier run is replaced; anything else of
   * that name is not touched. */
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path);
  if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
    e = strerror(errno);
    goto fail;
  }
  if (chmod(path, (mode_t)mode) < 0 || listen(fd, LISTENER_BACKLOG) < 0) {
    e = strerror(errno);
    unlink(path);
    goto fail;
  }
  pc_addr_t none;
  memset(&none, 0, sizeof(none));
  none.family = AF_UNSPEC;
  listener_t *l = listener_start(loop, fd, &none, cb, arg);
  log_info("listening on unix:%s", path);
  return l;
fail:;
  char where[sizeof(sun.sun_path) + 5];
  snprintf(where, sizeof(where), "unix:%s", path);
  listener_fail(where, fd, e, err);
  return NULL;
}

const pc_addr_t *
listener_addr(const listener_t *l)
{
  return &l->addr;
}

void
listener_free_(listener_t *l)
{
  if (!l)
    return;
  if (l->busy) {
    l->free_pending = 1;
    evloop_io_set(l->io, 0);
    evloop_timer_cancel(l->pause_timer);
    return;
  }
  listener_destroy(l);
}
