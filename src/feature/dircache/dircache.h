/* dircache.h -- answering directory requests tunnelled over BEGIN_DIR.
 *
 * A relay that advertises `tunnelled-dir-server` accepts BEGIN_DIR streams
 * and answers HTTP/1.0 GET requests on them. Documents come from providers
 * that other modules register for a URL path (the relay's own descriptor
 * from feature/relay, cached consensus documents from feature/dir); a path
 * nobody provides gets 404. A path ending in ".z" is answered with the
 * same document compressed with deflate (Content-Encoding: deflate), as
 * tor's directory protocol allows.
 */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#define PCTOR_FEATURE_DIRCACHE_DIRCACHE_H
#include <stddef.h>
#include <stdint.h>

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
/* Forget all providers (streams in progress keep their copies). */
void dircache_shutdown(void);

/* Counters, for tests and statistics. */
typedef struct dircache_stats_t {
  uint64_t n_requests, n_ok, n_not_found, n_bad_request;
} dircache_stats_t;
void dircache_get_stats(dircache_stats_t *out);
#endif
