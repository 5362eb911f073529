/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dirport.c -- unit tests for the DirPort (feature/dircache/dirport):
 * a real listener on 127.0.0.1 and plain client sockets in the same
 * process; the event loop is run in short slices between the client's
 * non-blocking reads. What is checked: a GET answered with the
 * provider's exact document (a large one, so the answer goes out in many
 * pieces) and its compressed form; the HTTP edge cases -- other methods,
 * a request line without a version, a NUL byte, a request over
 * DIR_REQUEST_MAX, an absolute URL, 404 -- each answered with its status
 * and the connection closed; a slowloris client (partial request, then a
 * byte now and then) answered 408 and closed at the request deadline, not
 * later; a reader that stops reading closed after the idle timeout; the
 * per-address connection limit; the DirPortFrontPage at "/" as text/html;
 * and that the memory counted under
 * MEMACCT_DIRCACHE goes back to where it was. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "feature/dir/dir_http.h"
#include "feature/dircache/dircache.h"
#include "feature/dircache/dirport.h"
#include "lib/compress/compress.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

Suite *suite_dirport(void);

#define CONS_PATH "/tor/status-vote/current/consensus"

static evloop_t *L;
static pc_addr_t port;
static dircache_doc_t *cons;
static uint8_t *cons_text;
static size_t cons_len;
static uint64_t mem0;

static dircache_doc_t *
provide(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  return dircache_doc_ref(cons);
}

static void
stop_cb(void *arg)
{
  evloop_exit(arg);
}

/* Run the loop for ms milliseconds. */
static void
run_for(unsigned ms)
{
  evloop_timer_t *t = evloop_timer_new(L, stop_cb, L);
  evloop_timer_schedule(t, (uint64_t)ms * 1000);
  evloop_run(L);
  evloop_timer_free(t);
}

static void
setup(void)
{
  L = evloop_new();
  mem0 = memacct_get(MEMACCT_DIRCACHE);
  /* 1 MB of consensus-like text. */
  cons_len = 1 << 20;
  cons_text = pc_malloc(cons_len);
  /* Lines with a pseudo-random hex field: compressible, not so much
   * that the client's decompression-bomb check refuses it. */
  uint32_t x = 12345;
  for (size_t off = 0; off < cons_len;) {
    char line[64];
    x = x * 1103515245u + 12345u;
    int k = snprintf(line, sizeof(line), "r relay%u %08x 127.0.0.1\n",
                     (unsigned)(off % 1000), (unsigned)x);
    size_t m = (size_t)k < cons_len - off ? (size_t)k : cons_len - off;
    memcpy(cons_text + off, line, m);
    off += m;
  }
  cons = dircache_doc_new(pc_memdup(cons_text, cons_len), cons_len, 1);
  dircache_init(L);
  dircache_register(CONS_PATH, provide, NULL);
  pc_addr_t a;
  pc_addr_parse(&a, "127.0.0.1:0");
  char *err = NULL;
  ck_assert_int_eq(dirport_listen(L, &a, &port, &err), 0);
  ck_assert_int_ne(port.port, 0);
}

static void
teardown(void)
{
  dirport_shutdown();
  dirport_set_timeouts_for_testing(0, 0);
  dircache_shutdown();
  dircache_doc_unref(cons);
  free(cons_text);
  run_for(10); /* closing connections finish */
  evloop_free(L);
}

static int
client_connect(int rcvbuf)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  if (rcvbuf)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = htons(port.port);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static void
client_send(int fd, const void *p, size_t n)
{
  ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read until the server closes (1) or max_ms pass (0); the bytes in
 * *out (NUL-terminated), their number in *len. */
static int
client_read_all(int fd, unsigned max_ms, uint8_t **out, size_t *len)
{
  size_t cap = 65536, n = 0;
  uint8_t *b = pc_malloc(cap + 1);
  int closed = 0;
  for (unsigned t = 0; t < max_ms && !closed; t += 5) {
    run_for(5);
    for (;;) {
      if (cap - n < 65536) {
        cap *= 2;
        b = pc_realloc(b, cap + 1);
      }
      ssize_t r = recv(fd, b + n, cap - n, 0);
      if (r > 0) {
        n += (size_t)r;
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        closed = 1;
      break;
    }
  }
  b[n] = 0;
  *out = b;
  *len = n;
  return closed;
}

/* Send req on a new connection; the whole answer (server closed within
 * 3 s) is returned. */
static uint8_t *
fetch(const char *req, size_t req_len, size_t *len)
{
  int fd = client_connect(0);
  client_send(fd, req, req_len);
  uint8_t *ans;
  ck_assert_int_eq(client_read_all(fd, 3000, &ans, len), 1);
  close(fd);
  return ans;
}

static void
assert_status(const char *req, size_t req_len, const char *status)
{
  size_t n;
  uint8_t *a = fetch(req, req_len, &n);
  ck_assert_msg(!strncmp((char *)a, status, strlen(status)),
                "for %.40s: got '%.40s', wanted '%s'", req, (char *)a,
                status);
  free(a);
}

START_TEST(test_get_consensus)
{
  static const char req[] = "GET " CONS_PATH " HTTP/1.0\r\n"
                            "Host: 127.0.0.1\r\n\r\n";
  size_t n;
  uint8_t *a = fetch(req, sizeof(req) - 1, &n);
  uint8_t *body = NULL;
  size_t blen = 0;
  char *err = NULL;
  ck_assert_msg(dir_http_parse_response(a, n, 0, 4 * cons_len, &body, &blen,
                                        &err) == 200, "%s", err ? err : "");
  ck_assert_uint_eq(blen, cons_len);
  ck_assert(!memcmp(body, cons_text, cons_len));
  free(body);
  free(a);

  /* curl's HTTP/1.1 request, compressed: ".z" means deflate. */
  static const char zreq[] = "GET " CONS_PATH ".z HTTP/1.1\r\n"
                             "Host: 127.0.0.1:9030\r\nUser-Agent: curl/8\r\n"
                             "Accept: */*\r\n\r\n";
  a = fetch(zreq, sizeof(zreq) - 1, &n);
  ck_assert_msg(dir_http_parse_response(a, n, 1, 4 * cons_len, &body, &blen,
                                        &err) == 200, "%s", err ? err : "");
  ck_assert_uint_eq(blen, cons_len); /* decoded by the parser */
  ck_assert(!memcmp(body, cons_text, cons_len));
  ck_assert_uint_lt(n, cons_len / 2);
  ck_assert_ptr_nonnull(strstr((char *)a, "Content-Encoding: deflate"));
  free(body);
  free(a);

  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_answered, 2);
  ck_assert_uint_eq(st.n_open, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), mem0);
}
END_TEST

START_TEST(test_malformed)
{
#define REQ(s) s, sizeof(s) - 1
  assert_status(REQ("POST " CONS_PATH " HTTP/1.0\r\n\r\n"), "HTTP/1.0 400");
  assert_status(REQ("GET " CONS_PATH "\r\n\r\n"), "HTTP/1.0 400");
  assert_status(REQ("GET " CONS_PATH " SPDY/3\r\n\r\n"), "HTTP/1.0 400");
  assert_status(REQ("\r\n\r\n"), "HTTP/1.0 400");
  assert_status(REQ("GET /tor/nothing HTTP/1.0\r\n\r\n"), "HTTP/1.0 404");
  assert_status(REQ("GET http://example.com" CONS_PATH
                    " HTTP/1.0\r\n\r\n"), "HTTP/1.0 200");
  assert_status(REQ("GET http://example.com HTTP/1.0\r\n\r\n"),
                "HTTP/1.0 400");
  /* A NUL byte inside the request. */
  assert_status("GET /tor\0/x HTTP/1.0\r\n\r\n", 24, "HTTP/1.0 400");
#undef REQ
  /* Over DIR_REQUEST_MAX without a blank line: 400 at once, not a wait
   * for the deadline. */
  size_t big = DIR_REQUEST_MAX + 100;
  char *r = pc_malloc(big);
  memcpy(r, "GET /", 5);
  memset(r + 5, 'a', big - 5);
  assert_status(r, big, "HTTP/1.0 400 Request too long");
  free(r);
  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_timed_out, 0);
  ck_assert_uint_eq(st.n_open, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), mem0);
}
END_TEST

START_TEST(test_slowloris)
{
  dirport_set_timeouts_for_testing(400000, 0);
  int fd = client_connect(0);
  client_send(fd, "GET /tor/", 9);
  /* A byte every 100 ms does not move the deadline. */
  uint8_t *a = NULL;
  size_t n = 0;
  int closed = 0;
  for (int i = 0; i < 10 && !closed; i++) {
    free(a);
    closed = client_read_all(fd, 100, &a, &n);
    if (!closed && n == 0)
      send(fd, "a", 1, MSG_NOSIGNAL);
  }
  /* 400 ms deadline: answered and closed within about 500 ms. */
  ck_assert_int_eq(closed, 1);
  ck_assert_msg(!strncmp((char *)a, "HTTP/1.0 408", 12), "got '%.30s'", a);
  free(a);
  close(fd);
  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_timed_out, 1);
  ck_assert_uint_eq(st.n_open, 0);

  /* A client that connects and sends nothing: closed too. */
  fd = client_connect(0);
  ck_assert_int_eq(client_read_all(fd, 1500, &a, &n), 1);
  free(a);
  close(fd);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), mem0);
}
END_TEST

static dircache_doc_t *
provide_big(const char *path, void *arg)
{
  (void)path;
  return dircache_doc_ref(arg);
}

START_TEST(test_reader_stalls)
{
  /* More than the kernel's socket buffers on both sides hold. */
  size_t big_len = 32u << 20;
  dircache_doc_t *big = dircache_doc_new(pc_zalloc(big_len), big_len, 1);
  dircache_register("/tor/big", provide_big, big);
  dirport_set_timeouts_for_testing(0, 300000);
  int fd = client_connect(4096);
  static const char req[] = "GET /tor/big HTTP/1.0\r\n\r\n";
  client_send(fd, req, sizeof(req) - 1);
  run_for(50);
  /* The server holds at most one piece in its buffer, not the document. */
  ck_assert_uint_lt(memacct_get(MEMACCT_DIRCACHE) - mem0,
                    2 * DIRPORT_CHUNK + 4 * DIR_REQUEST_MAX);
  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 1);
  run_for(500); /* never read: the idle timeout ends it */
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_open, 0);
  ck_assert_uint_eq(st.n_timed_out, 1);
  ck_assert_uint_eq(st.n_answered, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), mem0);
  close(fd);
  dircache_doc_unref(big);
}
END_TEST

START_TEST(test_per_address_limit)
{
  int fds[DIRPORT_MAX_PER_ADDR + 1];
  for (int i = 0; i <= DIRPORT_MAX_PER_ADDR; i++) {
    fds[i] = client_connect(0);
    run_for(5);
  }
  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_open, DIRPORT_MAX_PER_ADDR);
  ck_assert_uint_eq(st.n_refused, 1);
  /* The last one was closed at once; the first still works. */
  uint8_t *a;
  size_t n;
  ck_assert_int_eq(client_read_all(fds[DIRPORT_MAX_PER_ADDR], 200, &a, &n),
                   1);
  ck_assert_uint_eq(n, 0);
  free(a);
  static const char req[] = "GET /tor/x HTTP/1.0\r\n\r\n";
  client_send(fds[0], req, sizeof(req) - 1);
  ck_assert_int_eq(client_read_all(fds[0], 1000, &a, &n), 1);
  ck_assert(!strncmp((char *)a, "HTTP/1.0 404", 12));
  free(a);
  for (int i = 0; i <= DIRPORT_MAX_PER_ADDR; i++)
    close(fds[i]);
}
END_TEST

START_TEST(test_front_page)
{
  char path[] = "/tmp/pctor-check-dirport.XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  static const char html[] = "<html><body>This is a Tor relay.</body>"
                             "</html>\n";
  ck_assert_int_eq(write(fd, html, sizeof(html) - 1),
                   (ssize_t)(sizeof(html) - 1));
  close(fd);
  char *err = NULL;
  ck_assert_int_eq(dirport_set_front_page(path, &err), 0);
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  size_t n;
  uint8_t *a = fetch(req, sizeof(req) - 1, &n);
  ck_assert_msg(!strncmp((char *)a, "HTTP/1.0 200 OK\r\n"
                                    "Content-Type: text/html\r\n", 41),
                "%s", a);
  ck_assert_str_eq((char *)a + n - (sizeof(html) - 1), html);
  free(a);
  /* Other paths keep their documents and types. */
  static const char other[] = "GET /index.html HTTP/1.0\r\n\r\n";
  assert_status(other, sizeof(other) - 1, "HTTP/1.0 404");
  unlink(path);
  ck_assert_int_eq(dirport_set_front_page(path, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "cannot be read: No such file"));
  free(err);
}
END_TEST

START_TEST(test_bind_error)
{
  char *err = NULL;
  /* The port is taken by the fixture's listener. */
  ck_assert_int_eq(dirport_listen(L, &port, NULL, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "Could not bind DirPort 127.0.0.1:"));
  free(err);
}
END_TEST

/* Hibernation (tor): the listeners close, a connection already accepted
 * is still answered; listening again works on the same port. */
START_TEST(test_close_listeners_keeps_connections)
{
  static const char req[] = "GET " CONS_PATH " HTTP/1.0\r\n\r\n";
  int fd = client_connect(0);
  client_send(fd, req, 10); /* half a request */
  run_for(50);
  dirport_close_listeners();
  /* No new connections. */
  int fd2 = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = htons(port.port);
  ck_assert_int_eq(connect(fd2, (struct sockaddr *)&sin, sizeof(sin)), -1);
  ck_assert_int_eq(errno, ECONNREFUSED);
  close(fd2);
  /* The open one finishes its request and gets the whole answer. */
  client_send(fd, req + 10, sizeof(req) - 1 - 10);
  uint8_t *a;
  size_t n;
  ck_assert_int_eq(client_read_all(fd, 3000, &a, &n), 1);
  close(fd);
  ck_assert_msg(!strncmp((char *)a, "HTTP/1.0 200", 12), "got '%.40s'",
                (char *)a);
  ck_assert_uint_gt(n, cons_len);
  free(a);
  dirport_stats_t st;
  dirport_get_stats(&st);
  ck_assert_uint_eq(st.n_answered, 1);
  /* Waking up: the same port again. */
  char *err = NULL;
  ck_assert_msg(dirport_listen(L, &port, NULL, &err) == 0, "%s",
                err ? err : "");
  assert_status(req, sizeof(req) - 1, "HTTP/1.0 200");
}
END_TEST

Suite *
suite_dirport(void)
{
  Suite *s = suite_create("dirport");
  TCase *tc = tcase_create("http");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_get_consensus);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_slowloris);
  tcase_add_test(tc, test_reader_stalls);
  tcase_add_test(tc, test_per_address_limit);
  tcase_add_test(tc, test_front_page);
  tcase_add_test(tc, test_bind_error);
  tcase_add_test(tc, test_close_listeners_keeps_connections);
  suite_add_tcase(s, tc);
  return s;
}
