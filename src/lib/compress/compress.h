/* SPDX-License-Identifier: BSD-3-Clause */
/* compress.h -- compression for directory documents: zlib, zstd, lzma.
 *
 * Tor's directory protocol (dir-spec 6.1) moves documents raw
 * ("identity"), in zlib format (RFC 1950, which tor calls "deflate": the
 * ".z" URLs and "Content-Encoding: deflate"), gzip (RFC 1952), zstd frames
 * ("x-zstd") or the legacy .lzma format of liblzma's "alone" coder
 * ("x-tor-lzma", preset at most 6). This module is the only place that
 * includes <zlib.h>, <zstd.h> and <lzma.h>.
 *
 * Decompression is always bounded: the caller gives an absolute cap on the
 * output, and a "bomb" check fails any stream whose output exceeds
 * COMPRESS_BOMB_MIN_OUT bytes and more than COMPRESS_BOMB_RATIO times its
 * input, whatever the method (real directory documents compress 2-10x;
 * a bomb is 1000x).
 * Failures are negative COMPRESS_ERR_* codes; compress_strerror() names
 * them for log lines. The coders' own memory (windows, dictionaries) is
 * counted in the memory budget as MEMACCT_COMPRESS while a stream lives.
 */
#ifndef PCTOR_LIB_COMPRESS_COMPRESS_H
#define PCTOR_LIB_COMPRESS_COMPRESS_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
  COMPRESS_NONE = 0, /* identity */
  COMPRESS_ZLIB = 1, /* RFC 1950; "deflate" in tor's HTTP */
  COMPRESS_GZIP = 2, /* RFC 1952 */
  COMPRESS_ZSTD = 3, /* zstd frame; "x-zstd" */
  COMPRESS_LZMA = 4, /* .lzma ("LZMA alone"); "x-tor-lzma" */
} compress_method_t;
#define COMPRESS_N_METHODS 5

/* Decoder memory bounds: an lzma stream may not need more than this
 * (its dictionary size is in its header), a zstd frame's window may not
 * exceed 2^COMPRESS_ZSTD_WINDOW_LOG_MAX bytes (8 MiB), which the decoder
 * allocates as soon as it has read the frame header. Beyond: CORRUPT.
 * The zstd bound: libzstd's levels 1 to 19 never use a larger window,
 * and tor 0.4.9 sends windows of 2^19 (documents compressed per request)
 * and 2^22 (its precompressed consensuses, level 9), checked against a
 * tor authority; only the "ultra" levels 20-22 go beyond. */
#define COMPRESS_LZMA_MEMLIMIT (16 * 1024 * 1024)
#define COMPRESS_ZSTD_WINDOW_LOG_MAX 23

/* Bomb detection: output/input ratio allowed once output is this large. */
#define COMPRESS_BOMB_RATIO 25
#define COMPRESS_BOMB_MIN_OUT (64 * 1024)

/* Results. */
#define COMPRESS_OK 0
#define COMPRESS_DONE 1         /* streaming: end of the compressed data */
#define COMPRESS_ERR_CORRUPT (-1)   /* not valid data for the method */
#define COMPRESS_ERR_TRUNCATED (-2) /* input ended inside the stream */
#define COMPRESS_ERR_TOO_BIG (-3)   /* output would exceed the cap */
#define COMPRESS_ERR_BOMB (-4)      /* output/input ratio too high */
#define COMPRESS_ERR_TRAILING (-5)  /* data after the end of the stream */
#define COMPRESS_ERR_INTERNAL (-6)  /* zlib failed for another reason */

const char *compress_strerror(int code);

/* "identity", "deflate", "gzip", "x-zstd", "x-tor-lzma" (the HTTP
 * Content-Encoding names); NULL for an unknown method. */
const char *compress_method_name(compress_method_t m);
/* Inverse of compress_method_name (also "x-deflate", "x-gzip"); the name
 * is compared case-insensitively; returns -1 for unknown names. */
int compress_method_from_name(const char *name);
/* Guess the method from the first bytes: gzip magic, zstd frame magic, a
 * valid zlib header, or COMPRESS_NONE (.lzma has no magic number). */
compress_method_t compress_detect(const uint8_t *in, size_t len);

/* HTTP content negotiation (dir-spec 6.1).
 * The value for an Accept-Encoding header listing every method we
 * decode, e.g. "deflate, identity, gzip, x-zstd, x-tor-lzma". */
const char *compress_accept_encoding(void);
/* The methods an Accept-Encoding value names, as a bit mask (bit m for
 * method m); identity is always included, unknown names are skipped,
 * q-values are ignored. NULL gives identity only. */
unsigned compress_parse_accept_encoding(const char *value);
/* The method to answer with, among those in mask: for a document
 * compressed once and served many times (precompressed = 1) the smallest
 * output first (lzma, zstd, deflate, gzip, identity); for one compressed
 * per request the cheapest good one (zstd, deflate, gzip, identity). */
compress_method_t compress_choose(unsigned mask, int precompressed);

/* Compress inlen bytes into a newly allocated buffer (*out, free() it;
 * *outlen). method COMPRESS_NONE copies. Returns 0 or a negative code. */
int compress_buf(compress_method_t method, const uint8_t *in, size_t inlen,
                 uint8_t **out, size_t *outlen);

/* Decompress exactly one complete stream (no trailing bytes) into a newly
 * allocated buffer of at most max_out bytes, NUL-terminated one byte past
 * *outlen (so text can be used as a string). Returns 0 or a negative
 * code, with *out = NULL on failure. */
int compress_uncompress(compress_method_t method, const uint8_t *in,
                        size_t inlen, size_t max_out, uint8_t **out,
                        size_t *outlen);

/* The same for one or more complete streams of one method back to back
 * (dir-spec 6.1: "concatenated compressed documents" must be accepted
 * like one compressed document). The cap and the bomb ratio apply to the
 * whole; input that is not a complete stream of the method after the
 * first one fails as it would alone (CORRUPT or TRUNCATED). */
int compress_uncompress_concat(compress_method_t method, const uint8_t *in,
                               size_t inlen, size_t max_out, uint8_t **out,
                               size_t *outlen);

/* Streaming, for documents that arrive or leave in pieces. Coders are
 * set up on the first call to compress_stream_process(). */
typedef struct compress_stream_t compress_stream_t;
/* compress: 1 to compress, 0 to decompress. max_out bounds the total
 * output of a decompressing stream (ignored when compressing). */
compress_stream_t *compress_stream_new(int compress, compress_method_t method,
                                       size_t max_out);
void compress_stream_free_(compress_stream_t *st);
#define compress_stream_free(st)                                              \
  do {                                                                        \
    compress_stream_free_(st);                                                \
    (st) = NULL;                                                              \
  } while (0)
/* Compressing: the total input expected, when known (0: unknown). Lets
 * zstd and lzma size their windows to the document instead of their
 * defaults (an lzma encoder with an 8 MiB dictionary takes ~90 MB);
 * only has an effect before the first compress_stream_process(). */
void compress_stream_set_size_hint(compress_stream_t *st, size_t total_in);
/* Consume input from *in / *inlen and write output to *out / *outlen,
 * advancing both pointers and decreasing both lengths. finish=1 says no
 * more input will come (compressing: flush and end the stream;
 * decompressing: input ending before the stream does is TRUNCATED).
 * Returns COMPRESS_DONE at the end of the stream, COMPRESS_OK when more
 * input or more output space is needed, or a negative code (the stream is
 * then unusable). */
int compress_stream_process(compress_stream_t *st, const uint8_t **in,
                            size_t *inlen, uint8_t **out, size_t *outlen,
                            int finish);
/* Totals so far. */
uint64_t compress_stream_total_in(const compress_stream_t *st);
uint64_t compress_stream_total_out(const compress_stream_t *st);
#endif
