/* dircache.c -- HTTP GET over BEGIN_DIR streams (see dircache.h).
 *
 * Each BEGIN_DIR stream gets a small request object: the request bytes are
 * collected (at most DIR_REQUEST_MAX, else 400) until the blank line, the
 * path is looked up, and the whole response is produced at once and then
 * sent as the circuit and stream windows allow, continuing from
 * on_writable. When everything is sent the stream is ended with reason
 * DONE. Requests other than GET, or without a blank line within the size
 * limit, get "400 Bad request".
 */
#include "feature/dircache/dircache.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/compress/compress.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR_REQUEST_MAX 8192
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

typedef struct dirreq_t {
  relay_stream_t *stream;
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

static void
set_response_enc(dirreq_t *d, const char *status, const uint8_t *body,
                 size_t blen, const char *encoding)
{
  char hdr[200];
  int h = snprintf(hdr, sizeof(hdr),
                   "HTTP/1.0 %s\r\nContent-Type: text/plain\r\n"
                   "Content-Encoding: %s\r\nContent-Length: %zu\r\n\r\n",
                   status, encoding, blen);
  d->resp = pc_malloc((size_t)h + blen);
  memcpy(d->resp, hdr, (size_t)h);
  if (blen)
    memcpy(d->resp + h, body, blen);
  d->resp_len = (size_t)h + blen;
  d->resp_sent = 0;
}

static void
set_response(dirreq_t *d, const char *status, const uint8_t *body,
             size_t blen)
{
  set_response_enc(d, status, body, blen, "identity");
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
  d->resp_sent += relay_stream_send(d->stream, d->resp + d->resp_sent,
                                    d->resp_len - d->resp_sent);
  if (d->resp_sent < d->resp_len)
    return 0;
  relay_stream_t *s = d->stream;
  dirreq_free(d);
  relay_stream_end(s, END_STREAM_REASON_DONE);
  return 1;
}

static void
answer(dirreq_t *d)
{
  char method[8], path[1024], version[16];
  stats.n_requests++;
  if (sscanf(d->req, "%7s %1023s %15s", method, path, version) != 3 ||
      strcmp(method, "GET") || strncmp(version, "HTTP/1.", 7)) {
    stats.n_bad_request++;
    log_info("Bad directory request on stream %u",
             relay_stream_id(d->stream));
    set_response(d, "400 Bad request", NULL, 0);
    return;
  }
  size_t plen = strlen(path);
  int want_z = plen > 2 && !strcmp(path + plen - 2, ".z");
  if (want_z)
    path[plen - 2] = '\0';
  const provider_t *p = find_provider(path);
  size_t len = 0;
  uint8_t *body = p ? p->fn(path, &len, p->arg) : NULL;
  if (body) {
    stats.n_ok++;
    log_debug("Serving %s%s (%zu bytes) on stream %u", path,
              want_z ? ".z" : "", len, relay_stream_id(d->stream));
    uint8_t *z = NULL;
    size_t zlen = 0;
    if (want_z && compress_buf(COMPRESS_ZLIB, body, len, &z, &zlen) == 0) {
      set_response_enc(d, "200 OK", z, zlen, "deflate");
      free(z);
    } else {
      set_response(d, "200 OK", body, len);
    }
    free(body);
    return;
  }
  stats.n_not_found++;
  log_info("Directory request for %s: not found", path);
  set_response(d, "404 Not found", NULL, 0);
}

static void
on_data(relay_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  dirreq_t *d = arg;
  (void)s;
  if (d->resp)
    return; /* request already complete: ignore trailing bytes */
  if (d->req_len + len > DIR_REQUEST_MAX) {
    stats.n_requests++;
    stats.n_bad_request++;
    set_response(d, "400 Request too long", NULL, 0);
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
on_end(relay_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)reason;
  dirreq_free(arg);
}

static void
on_writable(relay_stream_t *s, void *arg)
{
  (void)s;
  dirreq_t *d = arg;
  if (d->resp)
    pump(d);
}

static const relay_stream_ops_t dir_ops = {on_data, on_end, on_writable, NULL};

static int
handle_begin_dir(or_circuit_t *circ, const relay_header_t *h,
                 const uint8_t *body, int early)
{
  (void)body;
  (void)early;
  dirreq_t *d = pc_zalloc(sizeof(*d));
  relay_stream_t *s = relay_stream_new(circ, h->stream_id, &dir_ops, d);
  if (!s) {
    free(d);
    log_info("BEGIN_DIR with stream ID %u that is zero or in use on "
             "circuit %llu",
             h->stream_id, (unsigned long long)circ->base.gid);
    return -1;
  }
  d->stream = s;
  relay_stream_send_connected(s, NULL, 0);
  return 0;
}

void
dircache_init(void)
{
  relay_register_handler(RELAY_COMMAND_BEGIN_DIR, handle_begin_dir);
}
