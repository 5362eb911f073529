/* SPDX-License-Identifier: BSD-3-Clause */
/* dircache.c -- HTTP GET over BEGIN_DIR streams (see dircache.h).
 *
 * Streams. A BEGIN_DIR stream gets a small record (dirstream_t) at once:
 * what the idle sweep and the per-circuit limit need. The request object
 * (dircache_request_t, shared with the DirPort: dirport.c) is made when the first bytes arrive; the request text grows
 * in a buffer doubled as needed up to DIR_REQUEST_MAX (else 400) and is
 * freed as soon as the blank line has come and the answer is chosen. The
 * answer is then a header of a few hundred bytes and a reference to a
 * shared document: the header is sent, then the document's body (or its
 * compressed form) straight from the shared copy, as far as the circuit
 * and stream windows allow (edge_stream_send), continuing from
 * on_writable. When everything is sent the stream is ended with reason
 * DONE. A client that never sends SENDMEs therefore holds one window of
 * cells in the circuit queue (counted there) and a reference here, never
 * a copy of the document.
 *
 * Idle streams: every record sits in one list ordered by its last
 * activity (moved to the tail on every byte received or sent), so the
 * sweep, once a second while streams exist, only looks at the head.
 *
 * Per-circuit limit: counted on the circuit's edge (edge_sum_streams over
 * the streams whose owner is this module) when a BEGIN_DIR arrives.
 *
 * Encoding (dir-spec 6.1, as tor's caches choose): the methods the
 * request's Accept-Encoding names, plus deflate for a ".z" URL; of those,
 * lzma > zstd > deflate > gzip for shared documents (the consensus and
 * certificates), compressed once per document and kept with it;
 * zstd > deflate > gzip for per-request documents (descriptor lists);
 * identity when the client names nothing we have.
 *
 * Statistics (dirreq_stats.h): a request for a consensus is reported
 * with its status and its client's address when its answer is chosen;
 * a 200 answer's download is reported when its last byte is sent or when
 * the request is freed before that.
 *
 * Compressed copies as a cache: the compressed forms of the current
 * shared documents can be made again from the body, so they are counted
 * in the budget apart (MEMACCT_DIRCOPIES) and freed first when the
 * budget is over MaxMemInQueues (dircache_free_copies, registered with
 * circuits_add_cache_free_fn), as tor's OOM handler frees its caches
 * before it closes circuits. A form that an answer is still sending is
 * kept (each form counts its senders); the next request for a freed form
 * compresses the body again. When a document is retired its forms move to
 * MEMACCT_DIRCACHE with the rest of it: they are then held by the streams
 * still sending it, which the handler accounts to their circuits.
 */
#include "feature/dircache/dircache.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "core/or/stream.h"
#include "lib/compress/compress.h"
#include "lib/container/dlist.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/time/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PC_STR_(x) #x
#define PC_STR(x) PC_STR_(x)
#define DIR_PROVIDERS_MAX 32
#define DIR_REQUEST_INITIAL 512
#define DIR_SWEEP_INTERVAL_USEC 1000000ULL

/* ---- shared documents -------------------------------------------- */

struct dircache_doc_t {
  unsigned refs;
  int shared;
  int retired;  /* no provider holds it: readers are charged for it */
  uint8_t *body;        /* NULL once dropped (see answer_request) */
  size_t len;
  uint8_t *z[COMPRESS_N_METHODS]; /* compressed forms, made on first use */
  size_t zlen[COMPRESS_N_METHODS];
  int zfailed[COMPRESS_N_METHODS];
  unsigned zusers[COMPRESS_N_METHODS]; /* answers sending z[m] */
  const char *ctype;    /* Content-Type (a static string) */
  dlist_node_t node;    /* in cached_docs while shared and not retired */
};

/* The current shared documents (whose compressed forms are a cache). */
static dlist_t cached_docs;
static int cached_docs_inited;

static struct {
  unsigned n;
  size_t bytes;
  size_t private_bytes; /* of documents made for one request */
} docs_alive;

/* The budget (lib/malloc/memacct, MEMACCT_DIRCACHE) holds what requests
 * keep alive: streams and their request buffers and headers, documents
 * made for one request, and retired documents still being sent. The
 * bodies of the current shared documents are the copies a provider keeps
 * and are not counted; their compressed forms are, as MEMACCT_DIRCOPIES. */
static int
doc_counted(const dircache_doc_t *d)
{
  return !d->shared || d->retired;
}

static int
doc_is_cached(const dircache_doc_t *d)
{
  return d->shared && !d->retired;
}

static size_t
doc_zbytes(const dircache_doc_t *d)
{
  size_t n = 0;
  for (int m = 0; m < COMPRESS_N_METHODS; m++)
    n += d->zlen[m];
  return n;
}

/* Stop treating d's compressed forms as a cache (it is retired, or
 * freed). */
static void
doc_uncache(dircache_doc_t *d)
{
  if (!dlist_node_is_linked(&d->node))
    return;
  dlist_remove(&d->node);
  memacct_sub(MEMACCT_DIRCOPIES, doc_zbytes(d));
}

dircache_doc_t *
dircache_doc_new(uint8_t *body, size_t len, int shared)
{
  dircache_doc_t *d = pc_zalloc(sizeof(*d));
  d->refs = 1;
  d->shared = shared;
  d->body = body;
  d->len = len;
  d->ctype = "text/plain";
  dlist_node_init(&d->node);
  if (shared) {
    if (!cached_docs_inited) {
      dlist_init(&cached_docs);
      cached_docs_inited = 1;
    }
    dlist_insert_tail(&cached_docs, &d->node);
  }
  docs_alive.n++;
  docs_alive.bytes += sizeof(*d) + len;
  if (!shared)
    docs_alive.private_bytes += sizeof(*d) + len;
  if (doc_counted(d))
    memacct_add(MEMACCT_DIRCACHE, sizeof(*d) + len);
  return d;
}

dircache_doc_t *
dircache_doc_ref(dircache_doc_t *d)
{
  d->refs++;
  return d;
}

size_t
dircache_doc_mem(const dircache_doc_t *d)
{
  size_t n = sizeof(*d) + (d->body ? d->len : 0);
  for (int m = 0; m < COMPRESS_N_METHODS; m++)
    n += d->zlen[m];
  return n;
}

void
dircache_doc_unref(dircache_doc_t *d)
{
  if (!d || --d->refs)
    return;
  docs_alive.n--;
  docs_alive.bytes -= dircache_doc_mem(d);
  if (!d->shared)
    docs_alive.private_bytes -= dircache_doc_mem(d);
  if (doc_counted(d))
    memacct_sub(MEMACCT_DIRCACHE, dircache_doc_mem(d));
  doc_uncache(d);
  free(d->body);
  for (int m = 0; m < COMPRESS_N_METHODS; m++)
    free(d->z[m]);
  free(d);
}

void
dircache_doc_retire(dircache_doc_t *d)
{
  if (!d)
    return;
  if (!doc_counted(d))
    memacct_add(MEMACCT_DIRCACHE, dircache_doc_mem(d));
  doc_uncache(d);
  d->retired = 1;
  dircache_doc_unref(d);
}

void
dircache_doc_set_content_type(dircache_doc_t *d, const char *ctype)
{
  d->ctype = ctype;
}

size_t
dircache_doc_len(const dircache_doc_t *d)
{
  return d->len;
}

unsigned
dircache_doc_refcount(const dircache_doc_t *d)
{
  return d->refs;
}

void
dircache_docs_alive(unsigned *n_docs, size_t *bytes)
{
  *n_docs = docs_alive.n;
  *bytes = docs_alive.bytes;
}

static dircache_stats_t stats;

/* The body of d in method m (made now if needed): 0, or -1 if compressing
 * failed (then identity is used). */
static int
doc_encoded(dircache_doc_t *d, compress_method_t m, const uint8_t **p,
            size_t *len)
{
  if (m == COMPRESS_NONE) {
    *p = d->body;
    *len = d->len;
    return 0;
  }
  if (d->zfailed[m])
    return -1;
  if (d->z[m]) {
    stats.n_compress_cached++;
  } else if (compress_buf(m, d->body, d->len, &d->z[m], &d->zlen[m]) < 0) {
    d->zfailed[m] = 1;
    d->z[m] = NULL;
    return -1;
  } else {
    docs_alive.bytes += d->zlen[m];
    if (!d->shared)
      docs_alive.private_bytes += d->zlen[m];
    if (doc_counted(d))
      memacct_add(MEMACCT_DIRCACHE, d->zlen[m]);
    else if (doc_is_cached(d))
      memacct_add(MEMACCT_DIRCOPIES, d->zlen[m]);
  }
  *p = d->z[m];
  *len = d->zlen[m];
  return 0;
}

size_t
dircache_free_copies(void)
{
  if (!cached_docs_inited)
    return 0;
  size_t freed = 0;
  unsigned kept = 0;
  for (dlist_node_t *nd = dlist_first(&cached_docs); nd;
       nd = dlist_next(&cached_docs, nd)) {
    dircache_doc_t *d = DLIST_ENTRY(nd, dircache_doc_t, node);
    for (int m = 0; m < COMPRESS_N_METHODS; m++) {
      if (!d->z[m])
        continue;
      if (d->zusers[m]) {
        kept++;
        continue;
      }
      freed += d->zlen[m];
      docs_alive.bytes -= d->zlen[m];
      memacct_sub(MEMACCT_DIRCOPIES, d->zlen[m]);
      PC_FREE(d->z[m]);
      d->zlen[m] = 0;
    }
  }
  if (freed)
    log_notice("Freed %zu bytes of compressed directory documents (they "
               "are made again when asked for) to stay under "
               "MaxMemInQueues%s",
               freed, kept ? "; copies being sent were kept" : "");
  stats.n_copies_freed_bytes += freed;
  return freed;
}

/* ---- providers ---------------------------------------------------- */

typedef struct provider_t {
  char *path;
  int is_prefix;
  dircache_provider_fn fn;
  void *arg;
} provider_t;

static provider_t providers[DIR_PROVIDERS_MAX];
static int n_providers;

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

/* ---- answers ------------------------------------------------------ */

/* What to send: a header, then (maybe) a document in one encoding. */
typedef struct answer_t {
  int is_ns;           /* a network-status (consensus) request */
  dirreq_resp_t resp;  /* its status, for the statistics */
  char *hdr;
  size_t hdr_len;
  dircache_doc_t *doc; /* NULL: header only */
  const uint8_t *body; /* doc's body in the chosen encoding */
  size_t body_len;
  int zuser;           /* 1 + the method of doc->z[] it sends, or 0 */
} answer_t;

static void
answer_clear(answer_t *a)
{
  free(a->hdr);
  memacct_sub(MEMACCT_DIRCACHE, a->hdr_len);
  if (a->zuser)
    a->doc->zusers[a->zuser - 1]--;
  dircache_doc_unref(a->doc);
  memset(a, 0, sizeof(*a));
}

static void
answer_status_type(answer_t *a, const char *status, const char *ctype,
                   const char *encoding, size_t blen)
{
  a->hdr = pc_asprintf("HTTP/1.0 %s\r\nContent-Type: %s\r\n"
                       "Content-Encoding: %s\r\nContent-Length: %zu\r\n\r\n",
                       status, ctype, encoding, blen);
  a->hdr_len = strlen(a->hdr);
  memacct_add(MEMACCT_DIRCACHE, a->hdr_len);
}

static void
answer_status(answer_t *a, const char *status, const char *encoding,
              size_t blen)
{
  answer_status_type(a, status, "text/plain", encoding, blen);
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

/* Choose the answer to a complete request. */
static void
answer_request(const char *req, answer_t *a)
{
  /* A path may fill the whole request: 92 microdescriptor digests are
   * over 4 kB. */
  char method[8], path[DIR_REQUEST_MAX + 1], version[16];
  memset(a, 0, sizeof(*a));
  stats.n_requests++;
  if (sscanf(req, "%7s %" PC_STR(DIR_REQUEST_MAX) "s %15s", method, path,
             version) != 3 ||
      strcmp(method, "GET") || strncmp(version, "HTTP/1.", 7)) {
    stats.n_bad_request++;
    log_info("Bad directory request");
    answer_status(a, "400 Bad request", "identity", 0);
    return;
  }
  /* An absolute URL, as HTTP proxies are sent: its path. */
  if (!strncasecmp(path, "http://", 7)) {
    char *slash = strchr(path + 7, '/');
    if (!slash) {
      stats.n_bad_request++;
      answer_status(a, "400 Bad request", "identity", 0);
      return;
    }
    memmove(path, slash, strlen(slash) + 1);
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
  /* dir-spec's "v3 network status" requests (any flavor, diffs too). */
  a->is_ns = !strncmp(path, "/tor/status-vote/current/consensus",
                      strlen("/tor/status-vote/current/consensus"));
  const provider_t *p = find_provider(path);
  dircache_doc_t *doc = p ? p->fn(path, p->arg) : NULL;
  if (!doc) {
    /* As tor: no consensus to serve is "unavailable". */
    a->resp = DIRREQ_RESP_UNAVAILABLE;
    stats.n_not_found++;
    log_info("Directory request for %s: not found", path);
    answer_status(a, "404 Not found", "identity", 0);
    return;
  }
  if (!doc->shared && docs_alive.private_bytes > DIRCACHE_PRIVATE_BYTES_MAX) {
    dircache_doc_unref(doc);
    a->resp = DIRREQ_RESP_BUSY;
    stats.n_busy++;
    log_info("Directory request for %s: busy (%zu bytes of answers made "
             "per request are held)", path, docs_alive.private_bytes);
    answer_status(a, "503 Directory busy, try again later", "identity", 0);
    return;
  }
  a->resp = DIRREQ_RESP_OK;
  stats.n_ok++;
  compress_method_t m = compress_choose(mask, doc->shared);
  if (doc_encoded(doc, m, &a->body, &a->body_len) < 0) {
    m = COMPRESS_NONE;
    doc_encoded(doc, m, &a->body, &a->body_len);
  }
  if (!doc->shared && doc->refs == 1 && m != COMPRESS_NONE) {
    /* Made for this request alone: only the encoded form is sent. */
    docs_alive.bytes -= doc->len;
    docs_alive.private_bytes -= doc->len;
    memacct_sub(MEMACCT_DIRCACHE, doc->len);
    PC_FREE(doc->body);
  }
  if (m != COMPRESS_NONE) {
    doc->zusers[m]++;
    a->zuser = 1 + (int)m;
  }
  stats.n_by_method[m]++;
  log_info("Serving %s%s (%zu bytes, %s: %zu)", path, want_z ? ".z" : "",
           doc->len, compress_method_name(m), a->body_len);
  a->doc = doc;
  answer_status_type(a, "200 OK", doc->ctype, compress_method_name(m),
                     a->body_len);
}

uint8_t *
dircache_answer(const char *req, size_t *len)
{
  answer_t a;
  answer_request(req, &a);
  uint8_t *out = pc_malloc(a.hdr_len + a.body_len + 1);
  memcpy(out, a.hdr, a.hdr_len);
  if (a.body_len)
    memcpy(out + a.hdr_len, a.body, a.body_len);
  *len = a.hdr_len + a.body_len;
  answer_clear(&a);
  return out;
}

/* ---- requests (any transport) ------------------------------------ */

/* Made when the first bytes arrive. */
struct dircache_request_t {
  char *buf;        /* the request so far, NUL-terminated; NULL once parsed */
  size_t len, cap;
  answer_t ans;     /* valid once answering */
  int answering;
  size_t sent;      /* bytes of header + body sent */
  pc_addr_t client; /* for the statistics; family AF_UNSPEC: unknown */
  int tunneled;     /* BEGIN_DIR (else the DirPort) */
  int dl_open;      /* a download counted in the statistics, not ended */
  uint64_t dl_start_us;
};

/* Tell the statistics that r's download ended. */
static void
request_dl_end(dircache_request_t *r, int complete)
{
  if (!r->dl_open)
    return;
  r->dl_open = 0;
  size_t body = r->sent > r->ans.hdr_len ? r->sent - r->ans.hdr_len : 0;
  dirreq_stats_dl_end(dirreq_stats_global(), r->tunneled, complete, body,
                      time_mono_us() - r->dl_start_us);
}

void
dircache_request_set_client(dircache_request_t *r, const pc_addr_t *client,
                            int tunneled)
{
  if (client)
    r->client = *client;
  r->tunneled = tunneled;
}

dircache_request_t *
dircache_request_new(void)
{
  dircache_request_t *r = pc_zalloc(sizeof(*r));
  memacct_add(MEMACCT_DIRCACHE, sizeof(*r));
  return r;
}

void
dircache_request_free_(dircache_request_t *r)
{
  if (!r)
    return;
  request_dl_end(r, 0);
  free(r->buf);
  memacct_sub(MEMACCT_DIRCACHE, r->cap + sizeof(*r));
  answer_clear(&r->ans);
  free(r);
}

static void
request_answer(dircache_request_t *r, const char *bad_status)
{
  if (bad_status) {
    stats.n_requests++;
    stats.n_bad_request++;
    memset(&r->ans, 0, sizeof(r->ans));
    answer_status(&r->ans, bad_status, "identity", 0);
  } else {
    answer_request(r->buf, &r->ans);
    dirreq_stats_t *ds = dirreq_stats_global();
    if (ds && r->ans.is_ns) {
      dirreq_stats_note_response(
          ds, r->client.family == AF_UNSPEC ? NULL : &r->client,
          r->ans.resp);
      if (r->ans.resp == DIRREQ_RESP_OK) {
        dirreq_stats_dl_start(ds, r->tunneled);
        r->dl_open = 1;
        r->dl_start_us = time_mono_us();
      }
    }
  }
  PC_FREE(r->buf);
  memacct_sub(MEMACCT_DIRCACHE, r->cap);
  r->len = r->cap = 0;
  r->answering = 1;
  r->sent = 0;
}

int
dircache_request_feed(dircache_request_t *r, const uint8_t *data, size_t len)
{
  if (r->answering)
    return 1; /* request already complete: ignore trailing bytes */
  if (r->len + len > DIR_REQUEST_MAX) {
    request_answer(r, "400 Request too long");
    return 1;
  }
  if (r->len + len + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : DIR_REQUEST_INITIAL;
    while (cap < r->len + len + 1)
      cap *= 2;
    if (cap > DIR_REQUEST_MAX + 1)
      cap = DIR_REQUEST_MAX + 1;
    r->buf = pc_realloc(r->buf, cap);
    memacct_add(MEMACCT_DIRCACHE, cap - r->cap);
    r->cap = cap;
  }
  memcpy(r->buf + r->len, data, len);
  r->len += len;
  r->buf[r->len] = '\0';
  /* Only the new bytes and the three before them can complete it. */
  size_t from = r->len - len > 3 ? r->len - len - 3 : 0;
  if (strlen(r->buf + from) != r->len - from) {
    request_answer(r, "400 Bad request"); /* a NUL in the request */
    return 1;
  }
  if (!strstr(r->buf + from, "\r\n\r\n"))
    return 0;
  request_answer(r, NULL);
  return 1;
}

void
dircache_request_refuse(dircache_request_t *r, const char *status)
{
  if (!r->answering)
    request_answer(r, status);
}

int
dircache_request_answering(const dircache_request_t *r)
{
  return r->answering;
}

size_t
dircache_request_next(const dircache_request_t *r, const uint8_t **p)
{
  const answer_t *a = &r->ans;
  if (!r->answering)
    return 0;
  if (r->sent < a->hdr_len) {
    *p = (const uint8_t *)a->hdr + r->sent;
    return a->hdr_len - r->sent;
  }
  if (r->sent - a->hdr_len < a->body_len) {
    *p = a->body + (r->sent - a->hdr_len);
    return a->body_len - (r->sent - a->hdr_len);
  }
  return 0;
}

void
dircache_request_sent(dircache_request_t *r, size_t n)
{
  r->sent += n;
  if (r->dl_open && r->sent >= r->ans.hdr_len + r->ans.body_len)
    request_dl_end(r, 1);
}

size_t
dircache_request_mem(const dircache_request_t *r)
{
  if (!r)
    return 0;
  size_t n = sizeof(*r) + r->cap + r->ans.hdr_len;
  const dircache_doc_t *d = r->ans.doc;
  if (d && (d->retired || !d->shared))
    n += (dircache_doc_mem(d) + d->refs - 1) / d->refs;
  return n;
}

/* ---- streams ------------------------------------------------------ */

/* Made at BEGIN_DIR: small. */
typedef struct dirstream_t {
  edge_stream_t *stream;
  dlist_node_t node;       /* in S.streams, oldest activity first */
  uint64_t last_active_us;
  dircache_request_t *req; /* NULL until bytes arrive */
  pc_addr_t client;        /* the circuit's previous hop */
} dirstream_t;

static struct {
  evloop_t *loop;
  evloop_timer_t *sweep;
  dlist_t streams;
  int inited;
} S;

static const edge_stream_ops_t dir_ops;

static uint64_t
now_us(void)
{
  return S.loop ? evloop_now_us(S.loop) : 0;
}

static void
touch(dirstream_t *ds)
{
  ds->last_active_us = now_us();
  dlist_remove(&ds->node);
  dlist_insert_tail(&S.streams, &ds->node);
}

static void
dirstream_free(dirstream_t *ds)
{
  dlist_remove(&ds->node);
  dircache_request_free(ds->req);
  memacct_sub(MEMACCT_DIRCACHE, sizeof(*ds));
  free(ds);
  stats.n_streams--;
  if (dlist_is_empty(&S.streams) && S.sweep)
    evloop_timer_cancel(S.sweep);
}

/* Private bytes of one stream plus its share of a retired document. */
static size_t
dirstream_mem(void *arg)
{
  const dirstream_t *ds = arg;
  return sizeof(*ds) + dircache_request_mem(ds->req);
}

static size_t
count_one(void *arg)
{
  (void)arg;
  return 1;
}

size_t
dircache_edge_mem(const edge_t *e)
{
  return e ? edge_sum_streams(e, &dir_ops, dirstream_mem) : 0;
}

unsigned
dircache_edge_streams(const edge_t *e)
{
  return e ? (unsigned)edge_sum_streams(e, &dir_ops, count_one) : 0;
}

static size_t
dircache_circuit_mem(circuit_t *c)
{
  or_circuit_t *oc = TO_OR_CIRCUIT(c);
  return oc ? dircache_edge_mem(oc->edge) : 0;
}

/* Send what the windows allow; end the stream when done. Returns 1 if the
 * stream was ended (and ds freed). */
static int
pump(dirstream_t *ds)
{
  dircache_request_t *r = ds->req;
  const uint8_t *p;
  size_t n;
  while ((n = dircache_request_next(r, &p)) > 0) {
    size_t w = edge_stream_send(ds->stream, p, n);
    if (w)
      touch(ds);
    dircache_request_sent(r, w);
    if (w < n)
      return 0; /* the windows are closed: on_writable continues */
  }
  edge_stream_t *s = ds->stream;
  dirstream_free(ds);
  edge_stream_end(s, END_STREAM_REASON_DONE);
  return 1;
}

static void
on_data(edge_stream_t *s, const uint8_t *data, size_t len, void *arg)
{
  dirstream_t *ds = arg;
  (void)s;
  touch(ds);
  if (!ds->req) {
    ds->req = dircache_request_new();
    dircache_request_set_client(ds->req, &ds->client, 1);
  }
  if (dircache_request_answering(ds->req))
    return; /* request already complete: ignore trailing bytes */
  if (dircache_request_feed(ds->req, data, len)) {
    log_debug("Directory request on stream %u", edge_stream_id(ds->stream));
    pump(ds);
  }
}

static void
on_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)reason;
  dirstream_free(arg);
}

static void
on_writable(edge_stream_t *s, void *arg)
{
  (void)s;
  dirstream_t *ds = arg;
  if (ds->req && dircache_request_answering(ds->req))
    pump(ds);
}

static const edge_stream_ops_t dir_ops = {
    .on_data = on_data, .on_end = on_end, .on_writable = on_writable};

static void
refused_data(edge_stream_t *s, const uint8_t *d, size_t n, void *arg)
{
  (void)s, (void)d, (void)n, (void)arg;
}
static void
refused_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s, (void)reason, (void)arg;
}
/* A refused stream lives only between its creation and its END. */
static const edge_stream_ops_t refused_ops = {.on_data = refused_data,
                                               .on_end = refused_end};

static void
sweep_cb(void *arg)
{
  (void)arg;
  dircache_sweep_idle(now_us());
}

unsigned
dircache_sweep_idle(uint64_t now)
{
  unsigned n = 0;
  dlist_node_t *nd;
  while ((nd = dlist_first(&S.streams)) != NULL) {
    dirstream_t *ds = DLIST_ENTRY(nd, dirstream_t, node);
    if (ds->last_active_us + DIRCACHE_IDLE_TIMEOUT_USEC > now)
      break;
    edge_stream_t *s = ds->stream;
    log_info("Ending directory stream %u: idle for %llu s",
             edge_stream_id(s),
             (unsigned long long)(DIRCACHE_IDLE_TIMEOUT_USEC / 1000000));
    dirstream_free(ds);
    edge_stream_end(s, END_STREAM_REASON_TIMEOUT);
    stats.n_streams_timed_out++;
    n++;
  }
  return n;
}

static edge_stream_t *
stream_open(edge_t *e, uint16_t id, int *refused, const pc_addr_t *client)
{
  *refused = 0;
  if (!S.inited) {
    dlist_init(&S.streams);
    S.inited = 1;
  }
  if (dircache_edge_streams(e) >= DIRCACHE_MAX_STREAMS_PER_CIRCUIT) {
    /* Open it only to refuse it: END RESOURCELIMIT and a half-closed
     * record, as for any stream we end (tor refuses streams over its
     * DoS limits with this reason). */
    edge_stream_t *r = edge_stream_new(e, id, &refused_ops, NULL);
    if (!r)
      return NULL;
    edge_stream_end(r, END_STREAM_REASON_RESOURCELIMIT);
    *refused = 1;
    stats.n_streams_refused++;
    log_info("Refusing a BEGIN_DIR: %d directory streams on the circuit "
             "already", DIRCACHE_MAX_STREAMS_PER_CIRCUIT);
    return NULL;
  }
  dirstream_t *ds = pc_zalloc(sizeof(*ds));
  dlist_node_init(&ds->node);
  edge_stream_t *s = edge_stream_new(e, id, &dir_ops, ds);
  if (!s) {
    free(ds);
    return NULL;
  }
  memacct_add(MEMACCT_DIRCACHE, sizeof(*ds));
  ds->stream = s;
  if (client)
    ds->client = *client;
  stats.n_streams++;
  stats.n_streams_opened++;
  touch(ds);
  if (S.sweep && !evloop_timer_is_pending(S.sweep))
    evloop_timer_schedule_periodic(S.sweep, DIR_SWEEP_INTERVAL_USEC);
  edge_stream_send_msg(s, RELAY_COMMAND_CONNECTED, NULL, 0);
  return s;
}

edge_stream_t *
dircache_stream_open(edge_t *e, uint16_t id, int *refused)
{
  return stream_open(e, id, refused, NULL);
}

static int
handle_begin_dir(or_circuit_t *circ, const relay_header_t *h,
                 const uint8_t *body, int early)
{
  (void)body;
  (void)early;
  int refused = 0;
  /* The client's address, unless the previous hop is a relay (then the
   * request is anonymous, as tor's statistics see it). */
  const pc_addr_t *client =
      circ->p_chan && !channel_is_authenticated_relay(circ->p_chan)
          ? channel_peer_addr(circ->p_chan)
          : NULL;
  if (stream_open(or_circuit_edge(circ), h->stream_id, &refused, client) ||
      refused)
    return 0;
  log_info("BEGIN_DIR with stream ID %u that is zero or in use on "
           "circuit %llu",
           h->stream_id, (unsigned long long)circ->base.gid);
  return -1;
}

void
dircache_init(evloop_t *loop)
{
  if (!S.inited) {
    dlist_init(&S.streams);
    S.inited = 1;
  }
  S.loop = loop;
  if (loop && !S.sweep)
    S.sweep = evloop_timer_new(loop, sweep_cb, NULL);
  relay_register_handler(RELAY_COMMAND_BEGIN_DIR, handle_begin_dir);
  if (circuits_add_extra_mem_fn(dircache_circuit_mem) < 0)
    log_warn("Directory streams cannot be counted in MaxMemInQueues: too "
             "many memory reporters");  if (circuits_add_cache_free_fn(dircache_free_copies) < 0)
    log_warn("Compressed directory documents cannot be freed by "
             "MaxMemInQueues: too many caches");
}

void
dircache_shutdown(void)
{
  for (int i = 0; i < n_providers; i++)
    free(providers[i].path);
  n_providers = 0;
  circuits_remove_extra_mem_fn(dircache_circuit_mem);
  circuits_remove_cache_free_fn(dircache_free_copies);
  relay_register_handler(RELAY_COMMAND_BEGIN_DIR, NULL);
  evloop_timer_free(S.sweep);
  S.loop = NULL;
}

void
dircache_get_stats(dircache_stats_t *out)
{
  *out = stats;
}
