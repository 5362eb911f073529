/* SPDX-License-Identifier: BSD-3-Clause */
/* dirport.c -- the DirPort's HTTP connections (see dirport.h).
 *
 * One record (dpconn_t) per accepted connection, in one list (at most
 * DIRPORT_MAX_CONNECTIONS, so the per-address count at accept is a walk
 * of it). Each has one timer: first the request deadline, set once at
 * accept and never moved by partial data (a slow client cannot keep a
 * connection by trickling bytes); once the answer is chosen, the idle
 * timeout, moved on every piece the socket takes. Bytes read are handed
 * to dircache_request_feed() and drained from the input buffer at once,
 * so the input buffer holds one read at most; reading stops when the
 * answer is chosen. The output buffer is refilled up to DIRPORT_CHUNK
 * from dircache_request_next() whenever it drains below half of that
 * (CONN_EV_DRAINED with a low-water mark), so a connection never holds a
 * copy of the document. When the answer is all in the output buffer the
 * connection is handed to conn_close() with flushing (bounded by conn's
 * own close timeout) and the record freed.
 */
#include "feature/dircache/dirport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feature/dircache/dircache.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/net/conn.h"

typedef struct dpconn_t {
  conn_t *conn;
  pc_addr_t peer;
  evloop_timer_t *timer;
  dircache_request_t *req;
  struct dpconn_t *next;
} dpconn_t;

static struct {
  evloop_t *loop;
  listener_t *l[DIRPORT_MAX_LISTENERS];
  int n_l;
  dpconn_t *conns;
  uint64_t request_usec, idle_usec;
  dirport_stats_t st;
  dircache_doc_t *front_page;
} D;

static uint64_t
request_timeout(void)
{
  return D.request_usec ? D.request_usec : DIRPORT_REQUEST_TIMEOUT_USEC;
}

static uint64_t
idle_timeout(void)
{
  return D.idle_usec ? D.idle_usec : DIRCACHE_IDLE_TIMEOUT_USEC;
}

void
dirport_set_timeouts_for_testing(uint64_t request_usec, uint64_t idle_usec)
{
  D.request_usec = request_usec;
  D.idle_usec = idle_usec;
}

/* Unlink and free dc; the connection is closed (after writing what its
 * output buffer holds when flush). */
static void
dpconn_free(dpconn_t *dc, int flush)
{
  for (dpconn_t **pp = &D.conns; *pp; pp = &(*pp)->next)
    if (*pp == dc) {
      *pp = dc->next;
      break;
    }
  D.st.n_open--;
  evloop_timer_free(dc->timer);
  dircache_request_free(dc->req);
  if (dc->conn)
    conn_close(dc->conn, flush);
  memacct_sub(MEMACCT_DIRCACHE, sizeof(*dc));
  free(dc);
}

/* Move the answer into the output buffer up to DIRPORT_CHUNK; when all of
 * it is there, close after flushing. Returns 1 if dc was freed. */
static int
fill(dpconn_t *dc)
{
  buf_t *out = conn_outbuf(dc->conn);
  const uint8_t *p;
  size_t n;
  while (buf_datalen(out) < DIRPORT_CHUNK &&
         (n = dircache_request_next(dc->req, &p)) > 0) {
    size_t room = DIRPORT_CHUNK - buf_datalen(out);
    if (n > room)
      n = room;
    buf_add(out, p, n);
    dircache_request_sent(dc->req, n);
  }
  if (!dircache_request_next(dc->req, &p)) {
    D.st.n_answered++;
    dpconn_free(dc, 1);
    return 1;
  }
  conn_flush_soon(dc->conn);
  evloop_timer_schedule(dc->timer, idle_timeout());
  return 0;
}

/* The answer is chosen: stop reading and start sending. */
static void
start_answer(dpconn_t *dc)
{
  conn_set_reading(dc->conn, 0);
  buf_clear(conn_inbuf(dc->conn));
  fill(dc);
}

static void
dpconn_timeout(void *arg)
{
  dpconn_t *dc = arg;
  char a[PC_ADDR_STR_LEN];
  D.st.n_timed_out++;
  if (!dircache_request_answering(dc->req)) {
    log_info("DirPort: %s did not send a whole request within %llu s; "
             "closing", pc_addr_fmt(&dc->peer, a, sizeof(a), 0),
             (unsigned long long)(request_timeout() / 1000000));
    dircache_request_refuse(dc->req, "408 Request timeout");
    conn_set_reading(dc->conn, 0);
    /* The 408 header is a few bytes: it fits the output buffer whole. */
    fill(dc);
    return;
  }
  log_info("DirPort: %s read nothing for %llu s; closing",
           pc_addr_fmt(&dc->peer, a, sizeof(a), 0),
           (unsigned long long)(idle_timeout() / 1000000));
  dpconn_free(dc, 0);
}

static void
dpconn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  dpconn_t *dc = arg;
  if (ev == CONN_EV_EOF && dircache_request_answering(dc->req))
    return; /* a client that half-closed after its request still reads */
  if (ev == CONN_EV_ERROR || ev == CONN_EV_EOF) {
    dpconn_free(dc, 0); /* EOF before a whole request: nothing to answer */
    return;
  }
  if (ev == CONN_EV_DRAINED) {
    if (dircache_request_answering(dc->req))
      fill(dc);
    return;
  }
  if (ev != CONN_EV_DATA)
    return;
  buf_t *in = conn_inbuf(c);
  if (dircache_request_answering(dc->req)) {
    buf_clear(in);
    return;
  }
  uint8_t tmp[2048];
  size_t n;
  while ((n = buf_datalen(in)) > 0) {
    if (n > sizeof(tmp))
      n = sizeof(tmp);
    buf_get(in, tmp, n);
    if (dircache_request_feed(dc->req, tmp, n)) {
      start_answer(dc);
      return;
    }
  }
}

static unsigned
conns_from(const pc_addr_t *a)
{
  unsigned n = 0;
  for (const dpconn_t *dc = D.conns; dc; dc = dc->next)
    if (pc_addr_eq(&dc->peer, a, 0))
      n++;
  return n;
}

static void
accept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  char a[PC_ADDR_STR_LEN];
  if (D.st.n_open >= DIRPORT_MAX_CONNECTIONS ||
      conns_from(peer) >= DIRPORT_MAX_PER_ADDR) {
    D.st.n_refused++;
    log_info("DirPort: refusing a connection from %s: %s",
             pc_addr_fmt(peer, a, sizeof(a), 0),
             D.st.n_open >= DIRPORT_MAX_CONNECTIONS
                 ? "too many DirPort connections"
                 : "too many connections from that address");
    close(fd);
    return;
  }
  dpconn_t *dc = pc_zalloc(sizeof(*dc));
  memacct_add(MEMACCT_DIRCACHE, sizeof(*dc));
  dc->peer = *peer;
  dc->req = dircache_request_new();
  dircache_request_set_client(dc->req, peer, 0);
  dc->conn = conn_new_accepted(D.loop, NULL, fd, peer, dpconn_cb, dc);
  conn_set_memacct(dc->conn, MEMACCT_DIRCACHE);
  conn_set_lowat(dc->conn, DIRPORT_CHUNK / 2);
  conn_set_read_budget(dc->conn, DIR_REQUEST_MAX);
  dc->timer = evloop_timer_new(D.loop, dpconn_timeout, dc);
  evloop_timer_schedule(dc->timer, request_timeout());
  dc->next = D.conns;
  D.conns = dc;
  D.st.n_open++;
  D.st.n_accepted++;
}

int
dirport_listen(evloop_t *loop, const pc_addr_t *addr, pc_addr_t *bound,
               char **err_out)
{
  char a[PC_ADDR_STR_LEN];
  const char *e = NULL;
  pc_addr_fmt(addr, a, sizeof(a), 1);
  if (D.n_l == DIRPORT_MAX_LISTENERS) {
    *err_out = pc_asprintf("Could not open DirPort %s: at most %d DirPort "
                           "listeners", a, DIRPORT_MAX_LISTENERS);
    return -1;
  }
  D.loop = loop;
  listener_t *l = listener_new(loop, addr, accept_cb, NULL, &e);
  if (!l) {
    *err_out = pc_asprintf("Could not bind DirPort %s: %s", a, e ? e : "?");
    return -1;
  }
  D.l[D.n_l++] = l;
  if (bound)
    *bound = *listener_addr(l);
  log_notice("Opened Directory listener on %s",
             pc_addr_fmt(listener_addr(l), a, sizeof(a), 1));
  return 0;
}

static dircache_doc_t *
front_page(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  return D.front_page ? dircache_doc_ref(D.front_page) : NULL;
}

int
dirport_set_front_page(const char *path, char **err_out)
{
  uint8_t *data = NULL;
  size_t len = 0;
  int r = fs_read_file(path, DIRPORT_FRONT_PAGE_MAX, &data, &len);
  if (r < 0) {
    *err_out = pc_asprintf("DirPortFrontPage file '%s' cannot be read: %s",
                           path, r == -EFBIG ? "larger than 1 MiB"
                                             : strerror(-r));
    return -1;
  }
  dircache_doc_retire(D.front_page);
  D.front_page = dircache_doc_new(data, len, 1);
  dircache_doc_set_content_type(D.front_page, "text/html");
  dircache_register("/", front_page, NULL);
  log_notice("Serving %s (%zu bytes) as the DirPort's front page", path,
             len);
  return 0;
}

void
dirport_shutdown(void)
{
  dircache_doc_retire(D.front_page);
  D.front_page = NULL;
  while (D.conns)
    dpconn_free(D.conns, 0);
  for (int i = 0; i < D.n_l; i++)
    listener_free(D.l[i]);
  uint64_t rq = D.request_usec, id = D.idle_usec;
  memset(&D, 0, sizeof(D));
  D.request_usec = rq;
  D.idle_usec = id;
}

void
dirport_close_listeners(void)
{
  for (int i = 0; i < D.n_l; i++) {
    char a[PC_ADDR_STR_LEN];
    log_notice("Closing Directory listener on %s",
               pc_addr_fmt(listener_addr(D.l[i]), a, sizeof(a), 1));
    listener_free(D.l[i]);
    D.l[i] = NULL;
  }
  D.n_l = 0;
}

void
dirport_get_stats(dirport_stats_t *out)
{
  *out = D.st;
}
