/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_http.c -- asynchronous HTTP/1.0 GET for directory documents (see
 * dir_http.h).
 *
 * Design: the connection's input buffer accumulates the whole answer
 * (bounded: headers + max_body + slack) until the server closes; then the
 * in-memory parser (dir_http_parse_response, also used by the unit tests)
 * splits headers from body, checks the status line, Content-Length and
 * Content-Encoding, and decompresses with lib/compress under the same
 * bound. Failures and the final answer are delivered from a deferred
 * callback or the connection callback, never from inside dir_http_get(),
 * so callers can start a request while holding their own state. The
 * request lists every method lib/compress decodes in Accept-Encoding
 * (dir-spec 6.1), so tor's authorities answer with lzma or zstd; the
 * ".z" suffix stays for servers that ignore the header.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_http.h"
#include "lib/buf/buf.h"
#include "lib/compress/compress.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"

struct dir_http_req_t {
  evloop_t *loop;
  conn_t *conn;
  evloop_timer_t *timer;
  evloop_deferred_t *fail_soon;
  char *fail_msg;
  char *path;
  int path_is_z;
  size_t max_body;
  pc_addr_t addr;
  dir_http_done_fn cb;
  void *arg;
  int done;
};

static void
req_free(dir_http_req_t *r)
{
  if (!r)
    return;
  conn_free(r->conn);
  evloop_timer_free(r->timer);
  evloop_deferred_free(r->fail_soon);
  free(r->fail_msg);
  free(r->path);
  free(r);
}

static void
finish(dir_http_req_t *r, int status, const uint8_t *body, size_t len,
       const char *err)
{
  if (r->done)
    return;
  r->done = 1;
  r->cb(status, body, len, err, r->arg);
  req_free(r);
}

static void
fail(dir_http_req_t *r, const char *why)
{
  finish(r, DIR_HTTP_ERR, NULL, 0, why);
}

/* Case-insensitive header lookup in hdr (lines after the status line). */
static int
find_header(const char *hdr, size_t hlen, const char *name, char *out,
            size_t outlen)
{
  size_t nlen = strlen(name);
  size_t i = 0;
  while (i < hlen) {
    size_t e = i;
    while (e < hlen && hdr[e] != '\n')
      e++;
    size_t le = e;
    if (le > i && hdr[le - 1] == '\r')
      le--;
    if (le - i > nlen && hdr[i + nlen] == ':' &&
        strncasecmp(hdr + i, name, nlen) == 0) {
      size_t v = i + nlen + 1;
      while (v < le && (hdr[v] == ' ' || hdr[v] == '\t'))
        v++;
      size_t ve = le;
      while (ve > v && (hdr[ve - 1] == ' ' || hdr[ve - 1] == '\t'))
        ve--;
      if (ve - v >= outlen)
        return -1;
      memcpy(out, hdr + v, ve - v);
      out[ve - v] = 0;
      return 1;
    }
    i = e + 1;
  }
  return 0;
}

int
dir_http_parse_response(const uint8_t *resp, size_t resp_len, int path_is_z,
                        size_t max_body, uint8_t **body, size_t *len,
                        char **err)
{
  *body = NULL;
  *len = 0;
  *err = NULL;
  const char *s = (const char *)resp;
  size_t scan = resp_len < DIR_HTTP_MAX_HEADER ? resp_len
                                                : DIR_HTTP_MAX_HEADER;
  size_t hend = 0, body_off = 0;
  for (size_t i = 0; i + 1 < scan; i++) {
    if (s[i] == '\n' && s[i + 1] == '\n') {
      hend = i + 1;
      body_off = i + 2;
      break;
    }
    if (i + 3 < scan && !memcmp(s + i, "\r\n\r\n", 4)) {
      hend = i + 2;
      body_off = i + 4;
      break;
    }
  }
  if (!body_off) {
    *err = pc_strdup(resp_len >= DIR_HTTP_MAX_HEADER
                       ? "HTTP headers too long"
                       : "truncated HTTP answer (no end of headers)");
    return DIR_HTTP_ERR;
  }
  /* Status line: "HTTP/1.x NNN reason". */
  size_t sl = 0;
  while (sl < hend && s[sl] != '\n')
    sl++;
  if (sl < 12 || strncmp(s, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)s[7])
      || s[8] != ' ' || !isdigit((unsigned char)s[9]) ||
      !isdigit((unsigned char)s[10]) || !isdigit((unsigned char)s[11])) {
    *err = pc_strdup("not an HTTP answer");
    return DIR_HTTP_ERR;
  }
  int status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
  const char *hdrs = s + sl + 1;
  size_t hlen = hend > sl + 1 ? hend - sl - 1 : 0;
  size_t blen = resp_len - body_off;
  char val[128];
  int r = find_header(hdrs, hlen, "Content-Length", val, sizeof(val));
  if (r < 0) {
    *err = pc_strdup("malformed Content-Length");
    return DIR_HTTP_ERR;
  }
  if (r == 1) {
    char *end = NULL;
    unsigned long long cl = strtoull(val, &end, 10);
    if (!isdigit((unsigned char)val[0]) || *end) {
      *err = pc_strdup("malformed Content-Length");
      return DIR_HTTP_ERR;
    }
    if (cl != blen) {
      *err = pc_asprintf("truncated HTTP answer: Content-Length %llu, got "
                         "%zu bytes", cl, blen);
      return DIR_HTTP_ERR;
    }
  }
  if (blen > max_body) {
    *err = pc_asprintf("HTTP body of %zu bytes exceeds the %zu-byte limit",
                       blen, max_body);
    return DIR_HTTP_ERR;
  }
  if (status != 200) {
    /* The reason phrase is the message; the body is not decoded. */
    size_t rl = sl > 13 ? sl - 13 : 0;
    if (rl && s[13 + rl - 1] == '\r')
      rl--;
    if (rl > 100)
      rl = 100;
    *err = pc_asprintf("HTTP %d %.*s", status, (int)rl, sl > 13 ? s + 13 : "");
    *body = pc_malloc(1);
    (*body)[0] = 0;
    return status;
  }
  compress_method_t m = COMPRESS_NONE;
  r = find_header(hdrs, hlen, "Content-Encoding", val, sizeof(val));
  if (r == 1) {
    int mm = compress_method_from_name(val);
    if (mm < 0) {
      *err = pc_asprintf("unsupported Content-Encoding \"%s\"", val);
      return DIR_HTTP_ERR;
    }
    m = (compress_method_t)mm;
  } else if (path_is_z) {
    m = compress_detect(resp + body_off, blen);
  }
  /* dir-spec 6.1: concatenated compressed documents count as one. */
  int cr = compress_uncompress_concat(m, resp + body_off, blen, max_body,
                                      body, len);
  if (cr != COMPRESS_OK) {
    *err = pc_asprintf("cannot decode the %s body: %s",
                       compress_method_name(m), compress_strerror(cr));
    return DIR_HTTP_ERR;
  }
  log_info("Directory answer: %zu bytes, Content-Encoding %s, %zu bytes "
           "decoded", blen, compress_method_name(m), *len);
  return status;
}

char *
dir_http_format_request(const char *path, const char *host)
{
  return pc_asprintf("GET %s HTTP/1.0\r\nHost: %s\r\nAccept-Encoding: %s"
                     "\r\n\r\n",
                     path, host, compress_accept_encoding());
}

static void
conn_cb(conn_t *c, conn_event_t ev, void *arg)
{
  dir_http_req_t *r = arg;
  (void)c;
  switch (ev) {
  case CONN_EV_OPEN: {
    char a[PC_ADDR_STR_LEN];
    pc_addr_fmt(&r->addr, a, sizeof(a), 1);
    char *req = dir_http_format_request(r->path, a);
    buf_add(conn_outbuf(r->conn), req, strlen(req));
    free(req);
    conn_flush_soon(r->conn);
    return;
  }
  case CONN_EV_DATA:
    if (buf_datalen(conn_inbuf(r->conn)) >
        r->max_body + DIR_HTTP_MAX_HEADER) {
      char *m = pc_asprintf("answer exceeds %zu bytes",
                            r->max_body + DIR_HTTP_MAX_HEADER);
      fail(r, m);
      free(m);
    }
    return;
  case CONN_EV_DRAINED:
    return;
  case CONN_EV_EOF: {
    buf_t *in = conn_inbuf(r->conn);
    size_t n = buf_datalen(in);
    const uint8_t *data = n ? buf_pullup(in, n) : (const uint8_t *)"";
    uint8_t *body = NULL;
    size_t blen = 0;
    char *err = NULL;
    int st = dir_http_parse_response(data, n, r->path_is_z, r->max_body,
                                     &body, &blen, &err);
    finish(r, st, body, blen, err);
    free(body);
    free(err);
    return;
  }
  case CONN_EV_ERROR: {
    char *m = pc_strdup(conn_error(r->conn) ? conn_error(r->conn)
                                            : "connection failed");
    fail(r, m);
    free(m);
    return;
  }
  }
}

static void
timeout_cb(void *arg)
{
  dir_http_req_t *r = arg;
  fail(r, "timed out");
}

static void
fail_soon_cb(void *arg)
{
  dir_http_req_t *r = arg;
  char *m = r->fail_msg;
  r->fail_msg = NULL;
  fail(r, m ? m : "request failed");
  free(m);
}

dir_http_req_t *
dir_http_get(evloop_t *loop, const pc_addr_t *addr, const char *path,
             size_t max_body, uint64_t timeout_ms, dir_http_done_fn cb,
             void *arg)
{
  dir_http_req_t *r = pc_zalloc(sizeof(*r));
  r->loop = loop;
  r->path = pc_strdup(path);
  size_t pl = strlen(path);
  r->path_is_z = pl >= 2 && !strcmp(path + pl - 2, ".z");
  r->max_body = max_body;
  r->addr = *addr;
  r->cb = cb;
  r->arg = arg;
  r->timer = evloop_timer_new(loop, timeout_cb, r);
  evloop_timer_schedule(r->timer, timeout_ms * 1000);
  const char *err = NULL;
  r->conn = conn_connect(loop, NULL, addr, conn_cb, r, &err);
  if (!r->conn) {
    r->fail_msg = pc_strdup(err ? err : "cannot create a socket");
    r->fail_soon = evloop_deferred_new(loop, fail_soon_cb, r);
    evloop_deferred_schedule(r->fail_soon);
  }
  return r;
}

void
dir_http_cancel(dir_http_req_t *req)
{
  if (!req || req->done)
    return;
  req->done = 1;
  req_free(req);
}
