/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_http.h -- an asynchronous HTTP/1.0 GET client for Tor's directory
 * protocol (dir-spec 4, 6), over a plain TCP connection to a DirPort.
 *
 * One request per connection (HTTP/1.0: the server closes after the
 * body). The answer is bounded (headers DIR_HTTP_MAX_HEADER, body the
 * caller's max_body, compressed and uncompressed), decompressed according
 * to Content-Encoding ("deflate", "gzip", "identity", "x-zstd",
 * "x-tor-lzma": the request's Accept-Encoding offers them all; for a
 * ".z" URL without that header the magic number decides; concatenated
 * compressed documents count as one, dir-spec 6.1), and handed to the
 * callback exactly once: with the status code and body, or with a
 * negative status and an error message (connection failure, timeout,
 * oversized or malformed answer, corrupt compression). A Content-Length
 * that does not match what arrived is an error (a truncated answer).
 */
#ifndef PCTOR_FEATURE_DIR_DIR_HTTP_H
#define PCTOR_FEATURE_DIR_DIR_HTTP_H
#include <stddef.h>
#include <stdint.h>

#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

#define DIR_HTTP_MAX_HEADER (16 * 1024)
#define DIR_HTTP_ERR (-1)

typedef struct dir_http_req_t dir_http_req_t;

/* status: the HTTP status (200, 404, ...) or DIR_HTTP_ERR; body (NUL-
 * terminated, decompressed) and len only when status >= 0; err a message
 * when status < 0 or the status is not 200 (the reason phrase). The
 * request is freed after the callback returns; do not cancel it from
 * inside the callback. */
typedef void (*dir_http_done_fn)(int status, const uint8_t *body, size_t len,
                                 const char *err, void *arg);

/* Start GET path on addr. max_body bounds the body before and after
 * decompression; timeout_ms bounds the whole exchange. Never returns NULL:
 * immediate failures are reported through the callback from the loop. */
dir_http_req_t *dir_http_get(evloop_t *loop, const pc_addr_t *addr,
                             const char *path, size_t max_body,
                             uint64_t timeout_ms, dir_http_done_fn cb,
                             void *arg);
/* Abandon a request: no callback will be made. */
void dir_http_cancel(dir_http_req_t *req);

/* The request we send for path: GET, Host, and Accept-Encoding listing
 * every method we decode. Newly allocated. */
char *dir_http_format_request(const char *path, const char *host);

/* Parse a complete HTTP response held in memory (exposed for tests): the
 * same rules as the network path. Returns the status (>= 0) with a new
 * *body (free it) and *len, or DIR_HTTP_ERR with *err (allocated). */
int dir_http_parse_response(const uint8_t *resp, size_t resp_len,
                            int path_is_z, size_t max_body, uint8_t **body,
                            size_t *len, char **err);
#endif
