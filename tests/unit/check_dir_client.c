/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dir_client.c -- unit tests for feature/dir/dir_http and
 * feature/dir/dir_client: HTTP answer parsing (status, Content-Length,
 * Content-Encoding in every method, limits, the Accept-Encoding we send),
 * and whole fetch rounds against in-process HTTP servers on 127.0.0.1
 * that negotiate the encoding as tor's do and serve the real
 * private-network documents of tests/data/dir -- or truncated, oversized,
 * compressed-bomb, wrongly signed, unrequested and tampered ones, or
 * nothing at all. The client
 * must end with verified data only, keep its good cache, fail over to a
 * good authority, and say what went wrong. */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feature/dir/dir_authority.h"
#include "feature/dir/dir_client.h"
#include "feature/dir/dir_http.h"
#include "lib/buf/buf.h"
#include "lib/compress/compress.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"
#include "lib/time/clock.h"
#include "lib/time/timefmt.h"

Suite *suite_dir_client(void);
char *dirtest_load_fixture(const char *name, size_t *len);

/* ---- dir_http_parse_response ---- */

static int
parse(const char *resp, int is_z, size_t max, char **body, size_t *len,
      char **err)
{
  return dir_http_parse_response((const uint8_t *)resp, strlen(resp), is_z,
                                 max, (uint8_t **)body, len, err);
}

START_TEST(test_http_parse)
{
  char *body = NULL, *err = NULL;
  size_t len;
  ck_assert_int_eq(parse("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                         0, 100, &body, &len, &err), 200);
  ck_assert_str_eq(body, "hello");
  ck_assert_uint_eq(len, 5);
  free(body);
  /* LF-only headers, no Content-Length. */
  ck_assert_int_eq(parse("HTTP/1.1 200 OK\nServer: x\n\nabc", 0, 100, &body,
                         &len, &err), 200);
  ck_assert_str_eq(body, "abc");
  free(body);
  /* Non-200: the reason phrase is the message. */
  ck_assert_int_eq(parse("HTTP/1.0 404 Not found\r\n\r\n", 0, 100, &body,
                         &len, &err), 404);
  ck_assert_str_eq(err, "HTTP 404 Not found");
  free(err);
  free(body);
  static const struct {
    const char *resp;
    const char *needle;
  } bad[] = {
    {"", "truncated"},
    {"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n", "truncated"},
    {"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nhello", "Content-Length 9"},
    {"HTTP/1.0 200 OK\r\nContent-Length: x\r\n\r\nhello", "Content-Length"},
    {"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP"},
    {"HTTP/1.0 2x0 OK\r\n\r\n", "not an HTTP"},
    {"HTTP/1.0 200 OK\r\n\r\n0123456789", "exceeds"},
    {"HTTP/1.0 200 OK\r\nContent-Encoding: br\r\n\r\nabc",
     "unsupported Content-Encoding"},
    {"HTTP/1.0 200 OK\r\nContent-Encoding: x-zstd\r\n\r\nabc",
     "cannot decode the x-zstd body: corrupt"},
    {"HTTP/1.0 200 OK\r\nContent-Encoding: x-tor-lzma\r\n\r\nabc",
     "cannot decode the x-tor-lzma body"},
    {"HTTP/1.0 200 OK\r\nContent-Encoding: deflate\r\n\r\nabc",
     "corrupt"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    body = err = NULL;
    int st = parse(bad[i].resp, 0, 8, &body, &len, &err);
    if (st != DIR_HTTP_ERR || !err || !strstr(err, bad[i].needle))
      ck_abort_msg("case %zu: st=%d err='%s'", i, st, err ? err : "(null)");
    ck_assert_ptr_null(body);
    free(err);
  }
  /* Headers without an end, longer than the limit. */
  char *big = malloc(DIR_HTTP_MAX_HEADER + 100);
  memset(big, 'a', DIR_HTTP_MAX_HEADER + 99);
  big[DIR_HTTP_MAX_HEADER + 99] = 0;
  ck_assert_int_eq(parse(big, 0, 100, &body, &len, &err), DIR_HTTP_ERR);
  ck_assert_ptr_nonnull(strstr(err, "too long"));
  free(err);
  free(big);
  /* Deflate: by header, or detected for a .z path. */
  char payload[141];
  for (int i = 0; i < 20; i++)
    memcpy(payload + 7 * i, "payload", 7);
  payload[140] = 0;
  uint8_t *z = NULL;
  size_t zl;
  ck_assert_int_eq(compress_buf(COMPRESS_ZLIB, (const uint8_t *)payload, 140,
                                &z, &zl), 0);
  ck_assert_uint_lt(zl, 100);
  const char *hdrs[] = {"HTTP/1.0 200 OK\r\nContent-Encoding: deflate\r\n\r\n",
                        "HTTP/1.0 200 OK\r\n\r\n"};
  for (int k = 0; k < 2; k++) {
    size_t hl = strlen(hdrs[k]);
    uint8_t *resp = malloc(hl + zl);
    memcpy(resp, hdrs[k], hl);
    memcpy(resp + hl, z, zl);
    ck_assert_int_eq(dir_http_parse_response(resp, hl + zl, 1, 200,
                                             (uint8_t **)&body, &len, &err),
                     200);
    ck_assert_str_eq(body, payload);
    free(body);
    /* Decompressed size above the limit. */
    ck_assert_int_eq(dir_http_parse_response(resp, hl + zl, 1, 100,
                                             (uint8_t **)&body, &len, &err),
                     DIR_HTTP_ERR);
    ck_assert_ptr_nonnull(strstr(err, "size limit"));
    free(err);
    free(resp);
  }
  free(z);
  /* zstd and lzma by Content-Encoding (and the zstd magic for a .z path
   * without the header); over the limit after decoding, refused. */
  for (int m = COMPRESS_ZSTD; m <= COMPRESS_LZMA; m++) {
    ck_assert_int_eq(compress_buf((compress_method_t)m,
                                  (const uint8_t *)payload, 140, &z, &zl),
                     0);
    for (int with_hdr = 0; with_hdr < 2; with_hdr++) {
      if (!with_hdr && m == COMPRESS_LZMA)
        continue; /* .lzma has no magic: only the header says so */
      char *hdr = pc_asprintf("HTTP/1.0 200 OK\r\n%s%s%s\r\n",
                              with_hdr ? "Content-Encoding: " : "",
                              with_hdr ? compress_method_name(
                                             (compress_method_t)m)
                                       : "",
                              with_hdr ? "\r\n" : "");
      size_t hl = strlen(hdr);
      uint8_t *resp = malloc(hl + zl);
      memcpy(resp, hdr, hl);
      memcpy(resp + hl, z, zl);
      ck_assert_int_eq(dir_http_parse_response(resp, hl + zl, 1, 200,
                                               (uint8_t **)&body, &len, &err),
                       200);
      ck_assert_str_eq(body, payload);
      free(body);
      ck_assert_int_eq(dir_http_parse_response(resp, hl + zl, 1, 139,
                                               (uint8_t **)&body, &len, &err),
                       DIR_HTTP_ERR);
      ck_assert_ptr_nonnull(strstr(err, "size limit"));
      free(err);
      /* Cut short: truncated. */
      ck_assert_int_eq(dir_http_parse_response(resp, hl + zl - 3, 1, 200,
                                               (uint8_t **)&body, &len, &err),
                       DIR_HTTP_ERR);
      ck_assert_ptr_nonnull(strstr(err, "truncated"));
      free(err);
      free(resp);
      free(hdr);
    }
    free(z);
  }
  /* The request offers every method we decode. */
  char *req = dir_http_format_request("/tor/keys/all.z", "127.0.0.1:9030");
  ck_assert_ptr_nonnull(strstr(req, "GET /tor/keys/all.z HTTP/1.0\r\n"));
  ck_assert_ptr_nonnull(strstr(req, "\r\nHost: 127.0.0.1:9030\r\n"));
  const char *ae = strstr(req, "\r\nAccept-Encoding: ");
  ck_assert_ptr_nonnull(ae);
  char line[256];
  ck_assert_int_eq(sscanf(ae + 2, "Accept-Encoding: %255[^\r]", line), 1);
  for (int m = 0; m < COMPRESS_N_METHODS; m++)
    ck_assert(compress_parse_accept_encoding(line) & (1u << m));
  ck_assert_ptr_nonnull(strstr(req, "\r\n\r\n"));
  free(req);
}
END_TEST

/* ---- an in-process directory server ---- */

typedef enum {
  SERVE_GOOD,       /* the fixtures */
  SERVE_TAMPERED,   /* consensus with a changed bandwidth */
  SERVE_TRUNCATED,  /* the .z consensus cut in half */
  SERVE_BOMB,       /* 40 MB of zeros, deflated */
  SERVE_GARBAGE,    /* not a consensus */
  SERVE_404,        /* everything 404 */
  SERVE_CLOSE,      /* close without answering */
  SERVE_SILENT,     /* never answer */
  SERVE_BAD_MDS,    /* microdescs: one tampered, one unrequested extra */
} serve_mode_t;

typedef struct {
  evloop_t *loop;
  listener_t *lst;
  serve_mode_t mode;
  int n_requests;
  int n_by_method[COMPRESS_N_METHODS]; /* answers by Content-Encoding */
  conn_t *silent[8];
  int n_silent;
} server_t;

typedef struct {
  server_t *srv;
  conn_t *c;
} sconn_t;

/* Answers as tor 0.4.9's directory servers choose (dir-spec 6.1): the
 * best method both sides support among Accept-Encoding (plus deflate for
 * ".z"); lzma first for the consensus and certificates, zstd first for
 * descriptors. */
static char *
make_response(server_t *s, const char *path, unsigned accept, size_t *len)
{
  char *body = NULL;
  size_t blen = 0;
  int status = 200;
  int dotz = strlen(path) > 2 && !strcmp(path + strlen(path) - 2, ".z");
  if (dotz)
    accept |= 1u << COMPRESS_ZLIB;
  compress_method_t method = compress_choose(
      accept, strncmp(path, "/tor/micro/", 11) != 0);
  int deflate = method != COMPRESS_NONE;
  if (s->mode == SERVE_404) {
    status = 404;
  } else if (!strncmp(path, "/tor/status-vote/current/consensus-microdesc",
                      44)) {
    body = dirtest_load_fixture("consensus-microdesc", &blen);
    if (s->mode == SERVE_TAMPERED) {
      char *p = strstr(body, "Bandwidth=102");
      p[12] = '3';
    } else if (s->mode == SERVE_GARBAGE) {
      free(body);
      body = pc_strdup("hello world I am not a consensus\n");
      blen = strlen(body);
    }
  } else if (!strncmp(path, "/tor/keys/all", 13)) {
    body = dirtest_load_fixture("keys-all", &blen);
  } else if (!strncmp(path, "/tor/micro/d/", 13)) {
    body = dirtest_load_fixture("microdescs", &blen);
    if (s->mode == SERVE_BAD_MDS) {
      /* Tamper with relay4's ntor key and append a microdesc nobody
       * asked for. */
      char *p = strstr(body, "ntor-onion-key YBd0");
      p[16] = 'c';
      const char *extra =
        "ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n";
      body = realloc(body, blen + strlen(extra) + 1);
      memcpy(body + blen, extra, strlen(extra) + 1);
      blen += strlen(extra);
    }
  } else {
    status = 404;
  }
  uint8_t *payload = (uint8_t *)body;
  size_t plen = blen;
  uint8_t *z = NULL;
  if (body && (deflate || s->mode == SERVE_BOMB)) {
    if (s->mode == SERVE_BOMB) {
      size_t n = 40 * 1024 * 1024;
      uint8_t *zeros = calloc(1, n);
      ck_assert_int_eq(compress_buf(COMPRESS_ZLIB, zeros, n, &z, &plen), 0);
      free(zeros);
    } else {
      ck_assert_int_eq(compress_buf(method, payload, blen, &z, &plen), 0);
    }
    if (s->mode == SERVE_TRUNCATED)
      plen /= 2;
    payload = z;
  }
  compress_method_t used = !z ? COMPRESS_NONE
                           : s->mode == SERVE_BOMB ? COMPRESS_ZLIB
                                                   : method;
  if (body && status == 200)
    s->n_by_method[used]++;
  char *hdr = pc_asprintf("HTTP/1.0 %d %s\r\nContent-Encoding: %s\r\n\r\n",
                          status, status == 200 ? "OK" : "Not found",
                          compress_method_name(used));
  size_t hl = strlen(hdr);
  char *resp = pc_malloc(hl + (body ? plen : 0) + 1);
  memcpy(resp, hdr, hl);
  if (body)
    memcpy(resp + hl, payload, plen);
  *len = hl + (body ? plen : 0);
  free(hdr);
  free(body);
  free(z);
  return resp;
}

/* Connections we never answer: ignore everything until server_stop. */
static void
silent_cb(conn_t *c, conn_event_t ev, void *arg)
{
  (void)c;
  (void)ev;
  (void)arg;
}

static void
sconn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  sconn_t *sc = arg;
  server_t *s = sc->srv;
  if (ev == CONN_EV_DATA) {
    buf_t *in = conn_inbuf(c);
    long e = buf_find(in, "\r\n\r\n", 4);
    if (e < 0)
      return;
    size_t n = (size_t)e;
    char *req = pc_strndup((const char *)buf_pullup(in, n), n);
    buf_drain(in, buf_datalen(in));
    s->n_requests++;
    char path[4096] = "";
    sscanf(req, "GET %4095s", path);
    const char *ae = strstr(req, "\r\nAccept-Encoding: ");
    char aev[256] = "";
    if (ae)
      sscanf(ae + 2, "Accept-Encoding: %255[^\r]", aev);
    unsigned accept = compress_parse_accept_encoding(ae ? aev : NULL);
    free(req);
    if (s->mode == SERVE_SILENT) {
      ck_assert_int_lt(s->n_silent, 8);
      s->silent[s->n_silent++] = c;
      free(sc);
      conn_set_callback(c, silent_cb, NULL);
      return;
    }
    if (s->mode == SERVE_CLOSE) {
      conn_close(c, 0);
      free(sc);
      return;
    }
    size_t rl;
    char *resp = make_response(s, path, accept, &rl);
    buf_add(conn_outbuf(c), resp, rl);
    free(resp);
    conn_flush_soon(c);
    conn_close(c, 1);
    free(sc);
    return;
  }
  if (ev == CONN_EV_EOF || ev == CONN_EV_ERROR) {
    conn_free(c);
    free(sc);
  }
}

static void
accept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  server_t *s = arg;
  sconn_t *sc = pc_zalloc(sizeof(*sc));
  sc->srv = s;
  sc->c = conn_new_accepted(s->loop, NULL, fd, peer, sconn_cb, sc);
}

static void
server_start(server_t *s, evloop_t *loop, serve_mode_t mode)
{
  memset(s, 0, sizeof(*s));
  s->loop = loop;
  s->mode = mode;
  pc_addr_t a;
  pc_addr_parse(&a, "127.0.0.1:0");
  const char *err = NULL;
  s->lst = listener_new(loop, &a, accept_cb, s, &err);
  ck_assert_ptr_nonnull(s->lst);
}

static uint16_t
server_port(const server_t *s)
{
  return listener_addr(s->lst)->port;
}

static void
drain_exit_cb(void *arg)
{
  evloop_exit(arg);
}

static void
server_stop(server_t *s)
{
  for (int i = 0; i < s->n_silent; i++)
    conn_free(s->silent[i]);
  listener_free(s->lst);
  /* Let connections we closed with flush_first finish and free
   * themselves. */
  evloop_timer_t *t = evloop_timer_new(s->loop, drain_exit_cb, s->loop);
  evloop_timer_schedule(t, 50 * 1000);
  evloop_run(s->loop);
  evloop_timer_free(t);
}

/* ---- fixtures for the client ---- */

static char tmpdir[64];

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void
setup(void)
{
  strcpy(tmpdir, "/tmp/pctor-check-dirc-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  time_t t;
  time_parse_iso("2026-11-22 03:58:35", 19, &t);
  time_approx_set(t);
}

static void
teardown(void)
{
  nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  time_approx_set(0);
}

/* The fixture authorities, with DirPorts pointing at our servers (the
 * v3idents are what matters for verification). */
static int
auths_at(dir_authority_t *auths, const uint16_t *ports, int n_ports)
{
  size_t len;
  char *t = dirtest_load_fixture("dirauth.torrc", &len);
  int n = 0;
  char *save = NULL;
  for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char *err = NULL;
    ck_assert_int_eq(dir_authority_parse(&auths[n], l + 13, &err), 0);
    n++;
  }
  free(t);
  for (int i = 0; i < n; i++)
    auths[i].dir_addr.port = ports[i % n_ports];
  return n;
}

typedef struct {
  evloop_t *loop;
  int done, ok;
} waiter_t;

static void
round_done(dir_client_t *dc, int ok, void *arg)
{
  waiter_t *w = arg;
  (void)dc;
  w->done = 1;
  w->ok = ok;
  evloop_exit(w->loop);
}

static void
guard_cb(void *arg)
{
  waiter_t *w = arg;
  evloop_exit(w->loop);
}

/* Run one fetch round; returns ok. */
static int
run_round(evloop_t *loop, dir_client_t *dc)
{
  waiter_t w = {loop, 0, 0};
  evloop_timer_t *guard = evloop_timer_new(loop, guard_cb, &w);
  evloop_timer_schedule(guard, 20 * 1000000);
  dir_client_fetch(dc, round_done, &w);
  evloop_run(loop);
  evloop_timer_free(guard);
  ck_assert_msg(w.done, "the fetch round did not finish");
  return w.ok;
}

static dir_client_t *
client_new(evloop_t *loop, const dir_authority_t *auths, int n,
           uint64_t timeout_ms)
{
  dir_client_config_t cfg = {
    .data_dir = tmpdir,
    .auths = auths,
    .n_auths = n,
    .use_microdescriptors = 1,
    .request_timeout_ms = timeout_ms,
    .eager_refresh = 1,
  };
  return dir_client_new(loop, &cfg);
}

static char *cache_file(const char *name, size_t *len)
  __attribute__((noinline));

static char *
cache_file(const char *name, size_t *len)
{
  char *p = fs_path_join(tmpdir, name);
  uint8_t *d = NULL;
  if (fs_read_file(p, 1 << 24, &d, len) < 0)
    d = NULL;
  free(p);
  return (char *)d;
}

START_TEST(test_fetch_and_cache)
{
  evloop_t *loop = evloop_new();
  server_t s;
  server_start(&s, loop, SERVE_GOOD);
  uint16_t port = server_port(&s);
  dir_authority_t auths[4];
  int n = auths_at(auths, &port, 1);
  dir_client_t *dc = client_new(loop, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 0);
  ck_assert(dir_client_consensus_wanted(dc, time_approx_now()));
  ck_assert_int_eq(run_round(loop, dc), 1);
  dir_client_stats_t st;
  dir_client_get_stats(dc, &st);
  ck_assert_int_eq(st.n_requests, 3); /* consensus, keys, microdescs */
  /* Offered everything, the server chose as tor's does: the consensus
   * and certificates lzma, the microdescriptors zstd. */
  ck_assert_int_eq(s.n_by_method[COMPRESS_LZMA], 2);
  ck_assert_int_eq(s.n_by_method[COMPRESS_ZSTD], 1);
  ck_assert_int_eq(st.n_consensus_accepted, 1);
  ck_assert_int_eq(st.n_certs_added, 3);
  ck_assert_int_eq(st.n_descs_added, 7);
  ck_assert_int_eq(dir_client_n_missing_descs(dc), 0);
  const dir_nodelist_t *nl = dir_client_nodelist(dc);
  ck_assert_int_eq(nl->n_with_desc, 7);
  ck_assert_str_eq(dir_client_last_error(dc), "");
  dir_client_free(dc);

  /* The cache holds exactly the fixtures. */
  size_t l1, l2;
  char *a = cache_file("cached-microdesc-consensus", &l1);
  char *b = dirtest_load_fixture("consensus-microdesc", &l2);
  ck_assert_uint_eq(l1, l2);
  ck_assert(memcmp(a, b, l1) == 0);
  free(a);
  free(b);
  a = cache_file("cached-microdescs", &l1);
  b = dirtest_load_fixture("microdescs", &l2);
  ck_assert_uint_eq(l1, l2); /* the same 7, possibly in another order */
  free(a);
  free(b);

  /* A new client starts from the cache, offline, with nothing to fetch. */
  dc = client_new(NULL, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 1);
  ck_assert(!dir_client_consensus_wanted(dc, time_approx_now()));
  ck_assert_int_eq(dir_client_nodelist(dc)->n_with_desc, 7);
  ck_assert_int_eq(dir_client_n_missing_descs(dc), 0);
  dir_client_free(dc);

  /* Daemon mode (eager_refresh 0): dir-spec 5.1's window, here
   * fresh-until 03:58:40 + 3/4 x 10 s = :47, plus up to 7/8 of the 3 s
   * left: the fetch is due somewhere in [:47, :49]. */
  {
    dir_client_config_t cfg = {.data_dir = tmpdir, .auths = auths,
                               .n_auths = n, .use_microdescriptors = 1};
    time_t t0 = time_approx_now();
    for (int k = 0; k < 20; k++) {
      dc = dir_client_new(NULL, &cfg);
      ck_assert_int_eq(dir_client_load_cache(dc, t0), 1);
      ck_assert(!dir_client_consensus_wanted(dc, t0 + 11));  /* :46 */
      ck_assert(dir_client_consensus_wanted(dc, t0 + 14));   /* :49 */
      dir_client_free(dc);
    }
  }

  /* Once no longer fresh, a round fetches the consensus only. */
  time_approx_set(time_approx_now() + 10);
  dc = client_new(loop, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 1);
  ck_assert(dir_client_consensus_wanted(dc, time_approx_now()));
  int before = s.n_requests;
  ck_assert_int_eq(run_round(loop, dc), 1);
  ck_assert_int_eq(s.n_requests - before, 1);
  dir_client_free(dc);
  server_stop(&s);
  evloop_free(loop);
}
END_TEST

/* Fill the cache with the good documents first. */
static void
prime_cache(evloop_t *loop)
{
  server_t s;
  server_start(&s, loop, SERVE_GOOD);
  uint16_t port = server_port(&s);
  dir_authority_t auths[4];
  int n = auths_at(auths, &port, 1);
  dir_client_t *dc = client_new(loop, auths, n, 5000);
  ck_assert_int_eq(run_round(loop, dc), 1);
  dir_client_free(dc);
  server_stop(&s);
}

START_TEST(test_bad_answers)
{
  static const struct {
    serve_mode_t mode;
    const char *needle;
  } cases[] = {
    {SERVE_TAMPERED, "bad signature"},
    {SERVE_TRUNCATED, "truncated"},
    {SERVE_BOMB, "bomb"},
    {SERVE_GARBAGE, "does not start with network-status-version"},
    {SERVE_404, "HTTP 404"},
    {SERVE_CLOSE, "truncated HTTP answer"},
    {SERVE_SILENT, "timed out"},
  };
  evloop_t *loop = evloop_new();
  prime_cache(loop);
  size_t good_len;
  char *good = cache_file("cached-microdesc-consensus", &good_len);
  /* Past fresh-until: the client wants a new consensus. */
  time_approx_set(time_approx_now() + 10);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    server_t bad;
    server_start(&bad, loop, cases[i].mode);
    uint16_t port = server_port(&bad);
    dir_authority_t auths[4];
    int n = auths_at(auths, &port, 1);
    dir_client_t *dc = client_new(loop, auths, n, 3000);
    ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 1);
    int ok = run_round(loop, dc);
    ck_assert_int_eq(ok, 0);
    const char *err = dir_client_last_error(dc);
    if (!strstr(err, cases[i].needle))
      ck_abort_msg("case %zu: error '%s' lacks '%s'", i, err,
                   cases[i].needle);
    /* Every authority was tried. */
    ck_assert_int_ge(bad.n_requests, 3);
    /* The good consensus is still in use and still cached. */
    ck_assert_ptr_nonnull(dir_client_consensus(dc));
    ck_assert_int_eq(dir_client_nodelist(dc)->n_with_desc, 7);
    size_t l;
    char *now_cached = cache_file("cached-microdesc-consensus", &l);
    ck_assert_uint_eq(l, good_len);
    ck_assert(memcmp(now_cached, good, l) == 0);
    free(now_cached);
    dir_client_free(dc);
    server_stop(&bad);
  }

  /* One bad and one good authority: the round succeeds. */
  for (int k = 0; k < 4; k++) {
    server_t bad, oks;
    server_start(&bad, loop, k % 2 ? SERVE_TAMPERED : SERVE_CLOSE);
    server_start(&oks, loop, SERVE_GOOD);
    uint16_t ports[2] = {server_port(&bad), server_port(&oks)};
    dir_authority_t auths[4];
    int n = auths_at(auths, ports, 2);
    dir_client_t *dc = client_new(loop, auths, n, 2000);
    dir_client_load_cache(dc, time_approx_now());
    ck_assert_int_eq(run_round(loop, dc), 1);
    dir_client_free(dc);
    server_stop(&bad);
    server_stop(&oks);
  }
  free(good);
  evloop_free(loop);
}
END_TEST

START_TEST(test_tampered_cache)
{
  evloop_t *loop = evloop_new();
  prime_cache(loop);
  char *p = fs_path_join(tmpdir, "cached-microdesc-consensus");
  size_t len;
  char *t = cache_file("cached-microdesc-consensus", &len);
  char *w = strstr(t, "Bandwidth=102");
  w[12] = '7';
  ck_assert_int_eq(fs_write_file_atomic(p, t, len, 0600), 0);
  /* Rejected at load; a fetch replaces it. */
  server_t s;
  server_start(&s, loop, SERVE_GOOD);
  uint16_t port = server_port(&s);
  dir_authority_t auths[4];
  int n = auths_at(auths, &port, 1);
  dir_client_t *dc = client_new(loop, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 0);
  ck_assert_ptr_nonnull(strstr(dir_client_last_error(dc), "bad signature"));
  dir_client_stats_t st;
  dir_client_get_stats(dc, &st);
  ck_assert_int_eq(st.cache_consensus_rejected, 1);
  ck_assert_int_eq(run_round(loop, dc), 1);
  dir_client_free(dc);
  free(t);
  t = cache_file("cached-microdesc-consensus", &len);
  ck_assert_ptr_nonnull(strstr(t, "Bandwidth=102"));
  free(t);
  /* Truncated cache files: no crash, nothing used. */
  ck_assert_int_eq(fs_write_file_atomic(p, "network-status-version 3 micro",
                                        30, 0600), 0);
  char *mp = fs_path_join(tmpdir, "cached-microdescs");
  ck_assert_int_eq(fs_write_file_atomic(mp, "onion-key\n-----BEGIN", 20,
                                        0600), 0);
  char *cp = fs_path_join(tmpdir, "cached-certs");
  ck_assert_int_eq(fs_write_file_atomic(cp, "garbage\n", 8, 0600), 0);
  dc = client_new(NULL, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 0);
  ck_assert_ptr_null(dir_client_nodelist(dc));
  dir_client_free(dc);
  /* An expired cached consensus (more than a day) is refused. */
  prime_cache(loop);
  time_approx_set(time_approx_now() + 2 * 86400);
  dc = client_new(NULL, auths, n, 5000);
  ck_assert_int_eq(dir_client_load_cache(dc, time_approx_now()), 0);
  ck_assert_ptr_nonnull(strstr(dir_client_last_error(dc), "expired"));
  dir_client_free(dc);
  free(p);
  free(mp);
  free(cp);
  server_stop(&s);
  evloop_free(loop);
}
END_TEST

START_TEST(test_bad_microdescs)
{
  evloop_t *loop = evloop_new();
  server_t s;
  server_start(&s, loop, SERVE_BAD_MDS);
  uint16_t port = server_port(&s);
  dir_authority_t auths[4];
  int n = auths_at(auths, &port, 1);
  dir_client_t *dc = client_new(loop, auths, n, 5000);
  ck_assert_int_eq(run_round(loop, dc), 0);
  dir_client_stats_t st;
  dir_client_get_stats(dc, &st);
  ck_assert_int_eq(st.n_descs_added, 6);
  ck_assert_int_eq(st.n_descs_unrequested, 2); /* tampered + extra */
  ck_assert_int_eq(dir_client_n_missing_descs(dc), 1);
  ck_assert_ptr_nonnull(strstr(dir_client_last_error(dc),
                               "1 descriptors could not be fetched"));
  const dir_node_t *r4 = dir_nodelist_find_nickname(dir_client_nodelist(dc),
                                                    "relay4");
  ck_assert_ptr_null(r4->desc);
  ck_assert(!dir_node_is_usable(r4));
  dir_client_free(dc);
  server_stop(&s);
  evloop_free(loop);
}
END_TEST

Suite *
suite_dir_client(void)
{
  Suite *s = suite_create("dir_client");
  TCase *tc = tcase_create("http");
  tcase_add_test(tc, test_http_parse);
  suite_add_tcase(s, tc);
  tc = tcase_create("client");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_fetch_and_cache);
  tcase_add_test(tc, test_bad_answers);
  tcase_add_test(tc, test_tampered_cache);
  tcase_add_test(tc, test_bad_microdescs);
  suite_add_tcase(s, tc);
  return s;
}
