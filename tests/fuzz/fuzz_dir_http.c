/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_dir_http.c -- fuzz target: directory HTTP, both directions.
 *
 * Input, byte 0 selects:
 *   even  the rest is a directory server's response to us
 *         (dir_http_parse_response, feature/dir: status line, headers,
 *         Content-Encoding and the compressed body; byte 0 bit 1 says the
 *         request path ended in ".z");
 *   odd   the rest is a request a client sent on a BEGIN_DIR stream,
 *         answered by dircache_answer() (feature/dircache) with one
 *         registered document, so the Accept-Encoding negotiation and the
 *         compress-once cache run too; then the same bytes fed in pieces
 *         to a dircache_request_t, as the DirPort and BEGIN_DIR streams
 *         receive them, and its answer drained.
 * Bound: a response body is decompressed (ratio capped at 25 by
 * lib/compress), and the decoder's state is what the body's header asks
 * for within lib/compress's limits: a zstd frame of a few bytes may declare
 * a window of up to 2^23 bytes, which zstd allocates (this target found a
 * 361-byte response declaring 22.5 MiB, +23.5 MB when the bound was 2^25;
 * now refused: regression/dir_http/zstd-22MiB-window), the lzma decoder
 * may use 16 MiB. An answer compresses the 4 KiB test
 * document once (the lzma encoder, sized to the document, ~1.3 MB).
 * 32 MiB + 64 bytes per input byte, as fuzz_compress.
 */
#include "fuzz.h"

#include "feature/dir/dir_http.h"
#include "feature/dircache/dircache.h"

#include <stdlib.h>
#include <string.h>

/* A 4 KiB document made per request (as descriptor lists are). */
static dircache_doc_t *
provide(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  size_t n = 4096;
  uint8_t *doc = malloc(n);
  if (!doc)
    abort();
  for (size_t i = 0; i < n; i++)
    doc[i] = (uint8_t)("network-status-version 3\n"[i % 26]);
  return dircache_doc_new(doc, n, 0);
}

static void
setup(void)
{
  dircache_register_prefix("/tor/", provide, NULL);
}

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  if (data[0] & 1) {
    char *req = fuzz_strndup(data + 1, len - 1);
    size_t alen = 0;
    free(dircache_answer(req, &alen));
    free(req);
    /* The same bytes as they arrive on a DirPort connection or a stream:
     * fed in pieces of (data[0] >> 1) + 1 bytes, the answer drained. */
    size_t piece = (size_t)(data[0] >> 1) + 1;
    dircache_request_t *r = dircache_request_new();
    for (size_t off = 1; off < len; off += piece)
      if (dircache_request_feed(r, data + off,
                                len - off < piece ? len - off : piece))
        break;
    const uint8_t *p;
    size_t n;
    while ((n = dircache_request_next(r, &p)) > 0)
      dircache_request_sent(r, n > 1000 ? 1000 : n);
    dircache_request_free(r);
    return;
  }
  uint8_t *body = NULL;
  size_t blen = 0;
  char *err = NULL;
  (void)dir_http_parse_response(data + 1, len - 1, (data[0] >> 1) & 1,
                                1 << 20, &body, &blen, &err);
  free(body);
  free(err);
}

const fuzz_target_t fuzz_target = {
  .name = "dir_http", .setup = setup, .run = run, .amp_factor = 64,
  .amp_slack = 32u << 20,
};
