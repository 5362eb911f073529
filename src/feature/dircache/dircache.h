/* SPDX-License-Identifier: BSD-3-Clause */
/* dircache.h -- answering directory requests tunnelled over BEGIN_DIR
 * (and, through the same dircache_request_t, on the DirPort: dirport.h).
 *
 * A relay that advertises `tunnelled-dir-server` accepts BEGIN_DIR streams
 * and answers HTTP/1.0 GET requests on them. Documents come from providers
 * that other modules register for a URL path (the relay's own descriptor
 * from app, cached consensus documents and descriptors from dirdocs.c); a
 * path nobody provides gets 404. The answer is compressed with the best
 * method the request's Accept-Encoding names (x-tor-lzma, x-zstd,
 * deflate, gzip; dir-spec 6.1), a path ending in ".z" adding deflate; the
 * Content-Encoding header says which (dircache.c explains the choice).
 *
 * Documents are shared, reference-counted objects (dircache_doc_t): a
 * provider keeps one reference to the current copy of a document and
 * hands every request another; each compressed form is made once per
 * document, on first use, and kept with it. When the provider replaces a
 * document it drops its reference (dircache_doc_retire): streams still
 * sending the old copy keep it alive until the last one finishes.
 *
 * Bounds (the memory one client can make a relay hold): at most
 * DIRCACHE_MAX_STREAMS_PER_CIRCUIT BEGIN_DIR streams per circuit (more
 * are refused with END RESOURCELIMIT); a stream that neither receives nor
 * sends for DIRCACHE_IDLE_TIMEOUT_USEC is ended with reason TIMEOUT; a
 * stream holds a small record (dircache_stream_private_bytes) plus, once
 * bytes arrive, its request (at most DIR_REQUEST_MAX, freed once parsed),
 * the answer's header and a reference to the document, which is sent
 * straight from the shared copy as the windows allow (edge.h). What a
 * circuit's streams hold privately, plus their share of documents that
 * only they keep alive, is reported to MaxMemInQueues
 * (circuits_add_extra_mem_fn; dircache_edge_mem). Per-request
 * documents in all are capped (DIRCACHE_PRIVATE_BYTES_MAX).
 */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#define PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#include <stddef.h>
#include <stdint.h>

#include "core/or/edge.h"
#include "feature/dircache/dirreq_stats.h"
#include "lib/compress/compress.h"
#include "lib/evloop/evloop.h"

#define DIR_REQUEST_MAX 8192
#define DIRCACHE_MAX_STREAMS_PER_CIRCUIT 64
#define DIRCACHE_IDLE_TIMEOUT_USEC (60 * 1000000ULL)
/* Per-request documents (descriptor lists) alive at once, in bytes: past
 * it requests for them get "503 Directory busy, try again later", as
 * tor's busy caches answer. */
#define DIRCACHE_PRIVATE_BYTES_MAX (16 * 1024 * 1024)

/* ---- shared documents -------------------------------------------- */
typedef struct dircache_doc_t dircache_doc_t;
/* A document owning body (malloc'd, len bytes), with one reference (the
 * caller's). shared = 1 for documents many clients fetch whole (the
 * consensus, certificates): they get the smallest encoding the client
 * accepts; 0 for per-request answers (descriptor lists): the cheapest. */
dircache_doc_t *dircache_doc_new(uint8_t *body, size_t len, int shared);
/* Another reference to d (returns d). */
dircache_doc_t *dircache_doc_ref(dircache_doc_t *d);
/* Drop a reference; the last one frees the document. Accepts NULL. */
void dircache_doc_unref(dircache_doc_t *d);
/* The provider's reference is being dropped because a newer copy replaced
 * it: from now on the streams holding d are charged for it. Drops the
 * reference. Accepts NULL. */
void dircache_doc_retire(dircache_doc_t *d);
/* Answer d with this Content-Type (a static string) instead of
 * text/plain. */
void dircache_doc_set_content_type(dircache_doc_t *d, const char *ctype);
size_t dircache_doc_len(const dircache_doc_t *d);
/* Body plus every compressed form made so far. */
size_t dircache_doc_mem(const dircache_doc_t *d);
unsigned dircache_doc_refcount(const dircache_doc_t *d);
/* Documents alive now and the bytes they hold (tests, statistics). */
void dircache_docs_alive(unsigned *n_docs, size_t *bytes);

/* Return a new reference to the document at path, or NULL for 404. */
typedef dircache_doc_t *(*dircache_provider_fn)(const char *path, void *arg);

/* Register the BEGIN_DIR handler and the memory reporter; loop runs the
 * idle-stream sweep. */
void dircache_init(evloop_t *loop);
/* Serve path (exact match, without a ".z" suffix) from fn. */
void dircache_register(const char *path, dircache_provider_fn fn, void *arg);
/* Serve every path that starts with prefix from fn (which gets the whole
 * path and may return NULL for 404). Exact registrations win. */
void dircache_register_prefix(const char *prefix, dircache_provider_fn fn,
                              void *arg);
/* The whole HTTP answer to a complete request (request line and headers
 * up to the blank line, NUL-terminated): 200 with the provider's document
 * encoded as negotiated, 404, or 400 for anything but a GET. New buffer,
 * *len set. Tests only: streams send the header and then the shared
 * document in pieces, never a whole copy. */
uint8_t *dircache_answer(const char *request, size_t *len);
/* ---- one request on any transport (BEGIN_DIR streams, the DirPort) --
 * Bytes are fed as they arrive; the request text is kept (at most
 * DIR_REQUEST_MAX bytes, counted in MEMACCT_DIRCACHE) until the blank
 * line, then the answer is chosen and the text freed. The answer is sent
 * in pieces straight from the shared document: dircache_request_next()
 * gives the next unsent bytes, dircache_request_sent() says how many of
 * them went out. */
typedef struct dircache_request_t dircache_request_t;
dircache_request_t *dircache_request_new(void);
void dircache_request_free_(dircache_request_t *r);
#define dircache_request_free(r) \
  do { dircache_request_free_(r); (r) = NULL; } while (0)
/* Who asked (the DirPort's peer, or a BEGIN_DIR circuit's previous hop)
 * and how, for the directory request statistics. */
void dircache_request_set_client(dircache_request_t *r,
                                 const pc_addr_t *client, int tunneled);
/* Append bytes: 0 while the request is incomplete, 1 once the answer is
 * chosen (complete request; or 400 for a request over DIR_REQUEST_MAX or
 * with a NUL byte). Bytes after that are ignored. */
int dircache_request_feed(dircache_request_t *r, const uint8_t *data,
                          size_t len);
/* Answer with status (e.g. "408 Request timeout") and no body, unless
 * the answer is already chosen. */
void dircache_request_refuse(dircache_request_t *r, const char *status);
int dircache_request_answering(const dircache_request_t *r);
/* The next unsent bytes of the answer (*p set), or 0 when all are sent. */
size_t dircache_request_next(const dircache_request_t *r, const uint8_t **p);
void dircache_request_sent(dircache_request_t *r, size_t n);
/* What r holds privately plus its share of a document no provider holds
 * any more (or made for it alone). Accepts NULL (0). */
size_t dircache_request_mem(const dircache_request_t *r);

/* Free the compressed forms of the current shared documents that no
 * answer is sending (what MaxMemInQueues frees first: they are made again
 * on the next request); returns the bytes freed. */
size_t dircache_free_copies(void);

/* Forget all providers (streams in progress keep their documents). */
void dircache_shutdown(void);

/* ---- streams (exposed for tests: an edge with test ops) ----------- */
/* What handle_begin_dir does on an or_circuit's edge: open stream id on
 * e, or refuse it. Returns the stream, or NULL (ID zero or in use: the
 * caller closes the circuit, *refused = 0; over the per-circuit limit:
 * END RESOURCELIMIT was sent, *refused = 1). */
edge_stream_t *dircache_stream_open(edge_t *e, uint16_t id, int *refused);
/* End the streams that have been idle since before now_us -
 * DIRCACHE_IDLE_TIMEOUT_USEC (what the sweep timer does); returns how
 * many were ended. */
unsigned dircache_sweep_idle(uint64_t now_us);
/* Bytes e's directory streams hold (what MaxMemInQueues counts for the
 * circuit): their private allocations plus their share of documents no
 * provider holds any more. */
size_t dircache_edge_mem(const edge_t *e);
/* Directory streams of e. */
unsigned dircache_edge_streams(const edge_t *e);

/* Counters, for tests and statistics. */
typedef struct dircache_stats_t {
  uint64_t n_requests, n_ok, n_not_found, n_bad_request;
  /* answers by Content-Encoding (compress_method_t), and compressed
   * answers taken from a document's stored compressed form */
  uint64_t n_by_method[COMPRESS_N_METHODS];
  uint64_t n_compress_cached;
  uint64_t n_streams_refused;   /* over the per-circuit limit */
  uint64_t n_streams_timed_out; /* idle */
  uint64_t n_busy;              /* 503: per-request documents at the cap */
  uint64_t n_streams_opened;    /* BEGIN_DIR streams taken, in all */
  uint64_t n_copies_freed_bytes; /* compressed copies freed when over */
  unsigned n_streams;           /* open now */
} dircache_stats_t;
void dircache_get_stats(dircache_stats_t *out);
#endif
