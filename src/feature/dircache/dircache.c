/* SPDX-License-Identifier: BSD-3-Clause */
/* dircache.c -- HTTP GET over BEGIN_DIR streams (see dircache.h).
 *
 * Each BEGIN_DIR stream gets a small request object: the request bytes are
 * collected (at most DIR_REQUEST_MAX, else 400) until the blank line, the
 * path is looked up, and the whole response is produced at once and then
 * sent as the circuit and stream windows allow, continuing from
 * on_writable. When everything is sent the stream is ended with reason
 * DONE. Requests other than GET, or without a blank line within the size
 * limit, get "400 Bad request".
 *
 * Encoding (dir-spec 6.1, as tor's caches choose): the methods the
 * request's Accept-Encoding names, plus deflate for a ".z" URL; of those,
 * lzma > zstd > deflate > gzip for the consensus and certificates, which
 * are compressed once and kept in a small cache keyed by the body's
 * SHA-256; zstd > deflate > gzip for descriptor lists, compressed per
 * request; identity when the client names nothing we have.
 */
#include "feature/dircache/dircache.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/compress/compress.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DIR_REQUEST_MAX 8192
#define PC_STR_(x) #x
#define PC_STR(x) PC_STR_(x)
#define DIR_PROVIDERS_MAX 32

typedef struct provider_t {
  char *path;
  int is_prefix;
  dircache_provider_fn fn;
  void *arg;
} provider_t;

static provider_t providers[DIR_PROVIDERS_MAX];
static int n_providers;
static dircache_stats_t stats;

static void zcache_clear(void);

typedef struct dirreq_t {
  edge_stream_t *stream;
  char req[DIR_REQUEST_MAX + 1];
  size_t req_len;
  uint8_t *resp;       /* NULL until the request is complete */
  size_t resp_len, resp_sent;
} dirreq_t;

static void
register_provider(const char *path, int is_prefix, dircache_provider_fn fn,
                  void *arg)
{
  for (int i = 0; i < n_providers; i++)
    if (!strcmp(providers[i].path, path) &&
        providers[i].is_prefix == is_prefix) {
      providers[i].fn = fn;
      providers[i].arg = arg;
      return;
    }
  if (n_providers == DIR_PROVIDERS_MAX) {
    log_warn("Too many directory document providers; ignoring %s", path);
    return;
  }
  providers[n_providers].path = pc_strdup(path);
  providers[n_providers].is_prefix = is_prefix;
  providers[n_providers].fn = fn;
  providers[n_providers].arg = arg;
  n_providers++;
}

void
dircache_register(const char *path, dircache_provider_fn fn, void *arg)
{
  register_provider(path, 0, fn, arg);
}

void
dircache_register_prefix(const char *prefix, dircache_provider_fn fn,
                         void *arg)
{
  register_provider(prefix, 1, fn, arg);
}

void
dircache_shutdown(void)
{
  for (int i = 0; i < n_providers; i++)
    free(providers[i].path);
  n_providers = 0;
  zcache_clear();
}

void
dircache_get_stats(dircache_stats_t *out)
{
  *out = stats;
}

static void
dirreq_free(dirreq_t *d)
{
  free(d->resp);
  free(d);
}

/* A whole HTTP answer: status line, headers, body. New buffer. */
static uint8_t *
make_response(const char *status, const uint8_t *body, size_t blen,
              const char *encoding, size_t *len)
{
  char hdr[200];
  int h = snprintf(hdr, sizeof(hdr),
                   "HTTP/1.0 %s\r\nContent-Type: text/plain\r\n"
                   "Content-Encoding: %s\r\nContent-Length: %zu\r\n\r\n",
                   status, encoding, blen);
  uint8_t *resp = pc_malloc((size_t)h + blen);
  memcpy(resp, hdr, (size_t)h);
  if (blen)
    memcpy(resp + h, body, blen);
  *len = (size_t)h + blen;
  return resp;
}

static void
set_response(dirreq_t *d, const char *status)
{
  d->resp = make_response(status, NULL, 0, "identity", &d->resp_len);
  d->resp_sent = 0;
}

/* The provider for path: an exact registration, else the longest prefix. */
static const provider_t *
find_provider(const char *path)
{
  const provider_t *best = NULL;
  size_t best_len = 0;
  for (int i = 0; i < n_providers; i++) {
    const provider_t *p = &providers[i];
    size_t n = strlen(p->path);
    if (!p->is_prefix) {
      if (!strcmp(p->path, path))
        return p;
    } else if (!strncmp(p->path, path, n) && n > best_len) {
      best = p;
      best_len = n;
    }
  }
  return best;
}

/* Send what the windows allow; end the stream when done. Returns 1 if the
 * stream was ended (and d freed). */
static int
pump(dirreq_t *d)
{
  d->resp_sent += edge_stream_send(d->stream, d->resp + d->resp_sent,
                                    d->resp_len - d->resp_sent);
  if (d->resp_sent < d->resp_len)
    return 0;
  edge_stream_t *s = d->stream;
  dirreq_free(d);
  edge_stream_end(s, END_STREAM_REASON_DONE);
  return 1;
}

/* The value of header name in the request (case-insensitive name), or
 * NULL; copied into out. */
static const char *
request_header(const char *req, const char *name, char *out, size_t outlen)
{
  size_t nlen = strlen(name);
  const char *line = strstr(req, "\r\n");
  while (line && line[2] && !(line[2] == '\r' && line[3] == '\n')) {
    line += 2;
    const char *end = strstr(line, "\r\n");
    if (!end)
      break;
    if ((size_t)(end - line) > nlen && line[nlen] == ':' &&
        !strncasecmp(line, name, nlen)) {
      const char *v = line + nlen + 1;
      while (v < end && (*v == ' ' || *v == '\t'))
        v++;
      size_t vl = (size_t)(end - v);
      if (vl >= outlen)
        vl = outlen - 1;
      memcpy(out, v, vl);
      out[vl] = 0;
      return out;
    }
    line = end;
  }
  return NULL;
}

/* A cache of compressed answers: a consensus is asked for by every client
 * and changes once an interval, and lzma at preset 6 costs far more than
 * reading the file. Entries are found by the SHA-256 of the uncompressed
 * body and the method, so a changed document simply misses; the least
 * recently used entry is replaced. */
#define ZCACHE_SIZE 8
static struct zcache_entry {
  uint8_t digest[DIGEST_SHA256_LEN];
  compress_method_t method;
  uint8_t *z;
  size_t zlen;
  uint64_t last_used;
} zcache[ZCACHE_SIZE];
static uint64_t zcache_clock;

static void
zcache_clear(void)
{
  for (int i = 0; i < ZCACHE_SIZE; i++) {
    free(zcache[i].z);
    memset(&zcache[i], 0, sizeof(zcache[i]));
  }
}

/* body compressed with m, from the cache or made now (*z is the cache's:
 * do not free). Returns 0, or -1 if compression failed. */
static int
compressed_body(const uint8_t *body, size_t len, compress_method_t m,
                const uint8_t **z, size_t *zlen)
{
  uint8_t dg[DIGEST_SHA256_LEN];
  crypt_sha256(dg, body, len);
  int victim = 0;
  for (int i = 0; i < ZCACHE_SIZE; i++) {
    if (zcache[i].z && zcache[i].method == m &&
        !memcmp(zcache[i].digest, dg, sizeof(dg))) {
      zcache[i].last_used = ++zcache_clock;
      stats.n_compress_cached++;
      *z = zcache[i].z;
      *zlen = zcache[i].zlen;
      return 0;
    }
    if (zcache[i].last_used < zcache[victim].last_used)
      victim = i;
  }
  uint8_t *out = NULL;
  size_t outlen = 0;
  if (compress_buf(m, body, len, &out, &outlen) < 0)
    return -1;
  struct zcache_entry *e = &zcache[victim];
  free(e->z);
  memcpy(e->digest, dg, sizeof(dg));
  e->method = m;
  e->z = out;
  e->zlen = outlen;
  e->last_used = ++zcache_clock;
  *z = out;
  *zlen = outlen;
  return 0;
}

uint8_t *
dircache_answer(const char *req, size_t *len)
{
  /* A path may fill the whole request: 92 microdescriptor digests are
   * over 4 kB. */
  char method[8], path[DIR_REQUEST_MAX + 1], version[16];
  stats.n_requests++;
  if (sscanf(req, "%7s %" PC_STR(DIR_REQUEST_MAX) "s %15s", method, path,
             version) != 3 ||
      strcmp(method, "GET") || strncmp(version, "HTTP/1.", 7)) {
    stats.n_bad_request++;
    log_info("Bad directory request");
    return make_response("400 Bad request", NULL, 0, "identity", len);
  }
  size_t plen = strlen(path);
  int want_z = plen > 2 && !strcmp(path + plen - 2, ".z");
  if (want_z)
    path[plen - 2] = '\0';
  /* dir-spec 6.1: Accept-Encoding names what the client decodes; ".z"
   * adds deflate; without either, identity. */
  char ae[256];
  unsigned mask = compress_parse_accept_encoding(
      request_header(req, "Accept-Encoding", ae, sizeof(ae)));
  if (want_z)
    mask |= 1u << COMPRESS_ZLIB;
  const provider_t *p = find_provider(path);
  size_t blen = 0;
  uint8_t *body = p ? p->fn(path, &blen, p->arg) : NULL;
  if (!body) {
    stats.n_not_found++;
    log_info("Directory request for %s: not found", path);
    return make_response("404 Not found", NULL, 0, "identity", len);
  }
  stats.n_ok++;
  /* Documents many clients fetch whole (consensus, certificates) are
   * compressed once and cached, so they get the smallest encoding;
   * descriptor lists differ per request and get the cheap one. */
  int precompressed = !strncmp(path, "/tor/status-vote/", 17) ||
                      !strncmp(path, "/tor/keys/", 10);
  compress_method_t m = compress_choose(mask, precompressed);
  const uint8_t *z = NULL;
  size_t zlen = 0;
  if (m != COMPRESS_NONE && compressed_body(body, blen, m, &z, &zlen) < 0)
    m = COMPRESS_NONE;
  if (m == COMPRESS_NONE) {
    z = body;
    zlen = blen;
  }
  stats.n_by_method[m]++;
  log_info("Serving %s%s (%zu bytes, %s: %zu)", path, want_z ? ".z" : "",
           blen, compress_method_name(m), zlen);
  uint8_t *resp = make_response("200 OK", z, zlen, compress_method_name(m),
                                len);
  free(body);
  return resp;
}

static void
answer(dirreq_t *d)
{
  log_debug("Directory request on stream %u", edge_stream_id(d->stream));
  d->resp = dircache_answer(d->req, &d->resp_len);
  d->resp_sent = 0;
}

static void
on_data(edge_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  dirreq_t *d = arg;
  (void)s;
  if (d->resp)
    return; /* request already complete: ignore trailing bytes */
  if (d->req_len + len > DIR_REQUEST_MAX) {
    stats.n_requests++;
    stats.n_bad_request++;
    set_response(d, "400 Request too long");
    pump(d);
    return;
  }
  memcpy(d->req + d->req_len, data, len);
  d->req_len += len;
  d->req[d->req_len] = '\0';
  if (!strstr(d->req, "\r\n\r\n"))
    return;
  answer(d);
  pump(d);
}

static void
on_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)reason;
  dirreq_free(arg);
}

static void
on_writable(edge_stream_t *s, void *arg)
{
  (void)s;
  dirreq_t *d = arg;
  if (d->resp)
    pump(d);
}

static const edge_stream_ops_t dir_ops = {on_data, on_end, on_writable, NULL,
                                           NULL};

static int
handle_begin_dir(or_circuit_t *circ, const relay_header_t *h,
                 const uint8_t *body, int early)
{
  (void)body;
  (void)early;
  dirreq_t *d = pc_zalloc(sizeof(*d));
  edge_stream_t *s = relay_stream_new(circ, h->stream_id, &dir_ops, d);
  if (!s) {
    free(d);
    log_info("BEGIN_DIR with stream ID %u that is zero or in use on "
             "circuit %llu",
             h->stream_id, (unsigned long long)circ->base.gid);
    return -1;
  }
  d->stream = s;
  edge_stream_send_msg(s, RELAY_COMMAND_CONNECTED, NULL, 0);
  return 0;
}

void
dircache_init(void)
{
  relay_register_handler(RELAY_COMMAND_BEGIN_DIR, handle_begin_dir);
}
