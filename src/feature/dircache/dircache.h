/* SPDX-License-Identifier: BSD-3-Clause */
/* dircache.h -- answering directory requests tunnelled over BEGIN_DIR.
 *
 * A relay that advertises `tunnelled-dir-server` accepts BEGIN_DIR streams
 * and answers HTTP/1.0 GET requests on them. Documents come from providers
 * that other modules register for a URL path (the relay's own descriptor
 * from feature/relay, cached consensus documents from feature/dir); a path
 * nobody provides gets 404. The answer is compressed with the best
 * method the request's Accept-Encoding names (x-tor-lzma, x-zstd,
 * deflate, gzip; dir-spec 6.1), a path ending in ".z" adding deflate; the
 * Content-Encoding header says which (dircache.c explains the choice).
 */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#define PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#include <stddef.h>
#include <stdint.h>

#include "lib/compress/compress.h"

/* Return a newly allocated body for path (set *len), or NULL for 404. */
typedef uint8_t *(*dircache_provider_fn)(const char *path, size_t *len,
                                         void *arg);

/* Register the BEGIN_DIR handler. */
void dircache_init(void);
/* Serve path (exact match, without a ".z" suffix) from fn. */
void dircache_register(const char *path, dircache_provider_fn fn, void *arg);
/* Serve every path that starts with prefix from fn (which gets the whole
 * path and may return NULL for 404). Exact registrations win. */
void dircache_register_prefix(const char *prefix, dircache_provider_fn fn,
                              void *arg);
/* The whole HTTP answer to a complete request (request line and headers
 * up to the blank line, NUL-terminated): 200 with the provider's document
 * encoded as negotiated, 404, or 400 for anything but a GET. New buffer,
 * *len set. What BEGIN_DIR streams send; exposed for tests. */
uint8_t *dircache_answer(const char *request, size_t *len);
/* Forget all providers (streams in progress keep their copies). */
void dircache_shutdown(void);

/* Counters, for tests and statistics. */
typedef struct dircache_stats_t {
  uint64_t n_requests, n_ok, n_not_found, n_bad_request;
  /* answers by Content-Encoding (compress_method_t), and compressed
   * answers taken from the cache */
  uint64_t n_by_method[COMPRESS_N_METHODS];
  uint64_t n_compress_cached;
} dircache_stats_t;
void dircache_get_stats(dircache_stats_t *out);
#endif
