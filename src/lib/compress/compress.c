/* SPDX-License-Identifier: BSD-3-Clause */
/* compress.c -- zlib, zstd and lzma: one-shot and streaming compression
 * and bounded decompression (see compress.h).
 *
 * Design: everything goes through one streaming core
 * (compress_stream_process), with one small step function per library
 * (process_zlib, process_zstd, process_lzma) behind the same rules; the
 * one-shot functions drive it with a buffer that doubles up to the
 * caller's cap. The cap is enforced by never offering a decoder more
 * output space than (cap - produced + 1): one byte past the cap proves the
 * stream is too big without ever writing more than the cap plus one byte.
 * zlib's 32-bit avail_in/avail_out are fed in chunks so buffers over 4 GiB
 * cannot wrap. The bomb check runs after every step, on the totals, so a
 * stream fed in small pieces is judged the same as one fed at once, and it
 * is the same for every method. Decoders also bound their own memory: the
 * lzma decoder gets a memory limit (its dictionary size is read from the
 * stream header), the zstd decoder a maximum window.
 *
 * Coders are created lazily on the first step so that a size hint given
 * after compress_stream_new() can shrink the encoders' windows: lzma's
 * dictionary becomes the next power of two above the input (at least
 * 4 KiB), zstd is told the exact size. "Truncated" is judged the same way
 * for every decoder: the caller said no more input comes, all of it was
 * consumed, output space was left over, and the stream has not ended.
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <lzma.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#include "lib/compress/compress.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

/* Encoder settings. lzma: preset 6 (dir-spec: at most 6), dictionary
 * capped at 1 MiB when the size is unknown; zstd: level 3 (its default,
 * fast enough to compress per request). */
#define LZMA_PRESET 6
#define LZMA_DICT_UNKNOWN_SIZE (1u << 20)
#define ZSTD_LEVEL 3

struct compress_stream_t {
  int compress;
  compress_method_t method;
  size_t max_out;
  size_t size_hint;
  int inited; /* the coder below is set up */
  int done;   /* end of stream seen */
  int failed; /* a previous call failed */
  uint64_t total_in, total_out;
  z_stream z;
  ZSTD_CCtx *zc;
  ZSTD_DCtx *zd;
  lzma_stream lz;
  size_t zstd_acct; /* bytes of zc/zd counted in MEMACCT_COMPRESS */
};

/* The coders' own memory (zlib's window and state, liblzma's dictionary,
 * zstd's context and window: megabytes that a peer's compressed document
 * makes us allocate) is counted in the memory budget as MEMACCT_COMPRESS.
 * zlib and liblzma take allocation hooks: ours put the block's size in a
 * header before it, so that the free subtracts exactly what was added.
 * zstd's only stable way is to ask its context for its size
 * (ZSTD_sizeof_CCtx/DCtx), which zstd_acct_sync() does after the setup and
 * after each call; the window a decoder allocates while reading a frame
 * header is therefore counted when that call returns. Allocation failures
 * are reported to the library (NULL), which fails the stream. */
typedef union {
  size_t n;
  max_align_t align;
} acct_hdr_t;

static void *
acct_alloc(size_t count, size_t size)
{
  if (size && count > (SIZE_MAX - sizeof(acct_hdr_t)) / size)
    return NULL;
  size_t n = count * size;
  acct_hdr_t *h = malloc(sizeof(*h) + n);
  if (!h)
    return NULL;
  h->n = sizeof(*h) + n;
  memacct_add(MEMACCT_COMPRESS, h->n);
  return h + 1;
}

static void
acct_free(void *p)
{
  if (!p)
    return;
  acct_hdr_t *h = (acct_hdr_t *)p - 1;
  memacct_sub(MEMACCT_COMPRESS, h->n);
  free(h);
}

static voidpf
zlib_alloc(voidpf opaque, uInt items, uInt size)
{
  (void)opaque;
  return acct_alloc(items, size);
}

static void
zlib_free(voidpf opaque, voidpf p)
{
  (void)opaque;
  acct_free(p);
}

static void *
lzma_alloc_hook(void *opaque, size_t nmemb, size_t size)
{
  (void)opaque;
  return acct_alloc(nmemb, size);
}

static void
lzma_free_hook(void *opaque, void *p)
{
  (void)opaque;
  acct_free(p);
}

static const lzma_allocator lzma_acct_allocator = {lzma_alloc_hook,
                                                   lzma_free_hook, NULL};

/* Bring MEMACCT_COMPRESS up to date with the zstd contexts' size. */
static void
zstd_acct_sync(compress_stream_t *st)
{
  size_t now = ZSTD_sizeof_CCtx(st->zc) + ZSTD_sizeof_DCtx(st->zd);
  if (now > st->zstd_acct)
    memacct_add(MEMACCT_COMPRESS, now - st->zstd_acct);
  else
    memacct_sub(MEMACCT_COMPRESS, st->zstd_acct - now);
  st->zstd_acct = now;
}

const char *
compress_strerror(int code)
{
  switch (code) {
  case COMPRESS_OK: return "ok";
  case COMPRESS_DONE: return "done";
  case COMPRESS_ERR_CORRUPT: return "corrupt compressed data";
  case COMPRESS_ERR_TRUNCATED: return "truncated compressed data";
  case COMPRESS_ERR_TOO_BIG: return "decompressed data exceeds the size limit";
  case COMPRESS_ERR_BOMB:
    return "compression ratio too high (possible decompression bomb)";
  case COMPRESS_ERR_TRAILING: return "data after the end of the compressed "
                                     "stream";
  case COMPRESS_ERR_INTERNAL: return "internal compression error";
  default: return "unknown compression error";
  }
}

const char *
compress_method_name(compress_method_t m)
{
  switch (m) {
  case COMPRESS_NONE: return "identity";
  case COMPRESS_ZLIB: return "deflate";
  case COMPRESS_GZIP: return "gzip";
  case COMPRESS_ZSTD: return "x-zstd";
  case COMPRESS_LZMA: return "x-tor-lzma";
  default: return NULL;
  }
}

int
compress_method_from_name(const char *name)
{
  if (!name)
    return -1;
  if (!strcasecmp(name, "identity"))
    return COMPRESS_NONE;
  if (!strcasecmp(name, "deflate") || !strcasecmp(name, "x-deflate"))
    return COMPRESS_ZLIB;
  if (!strcasecmp(name, "gzip") || !strcasecmp(name, "x-gzip"))
    return COMPRESS_GZIP;
  if (!strcasecmp(name, "x-zstd"))
    return COMPRESS_ZSTD;
  if (!strcasecmp(name, "x-tor-lzma"))
    return COMPRESS_LZMA;
  return -1;
}

compress_method_t
compress_detect(const uint8_t *in, size_t len)
{
  if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b)
    return COMPRESS_GZIP;
  /* zstd frame magic 0xFD2FB528, little-endian. */
  if (len >= 4 && in[0] == 0x28 && in[1] == 0xb5 && in[2] == 0x2f &&
      in[3] == 0xfd)
    return COMPRESS_ZSTD;
  /* RFC 1950: CM = 8, CINFO <= 7, (CMF*256 + FLG) % 31 == 0. */
  if (len >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 &&
      ((unsigned)in[0] * 256 + in[1]) % 31 == 0)
    return COMPRESS_ZLIB;
  return COMPRESS_NONE;
}

const char *
compress_accept_encoding(void)
{
  return "deflate, identity, gzip, x-zstd, x-tor-lzma";
}

unsigned
compress_parse_accept_encoding(const char *value)
{
  unsigned mask = 1u << COMPRESS_NONE;
  if (!value)
    return mask;
  const char *p = value;
  while (*p) {
    size_t n = strcspn(p, ",");
    /* One element: trim blanks, drop ";q=..." parameters. */
    const char *b = p, *e = p + n;
    while (b < e && (*b == ' ' || *b == '\t'))
      b++;
    const char *semi = memchr(b, ';', (size_t)(e - b));
    if (semi)
      e = semi;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    char name[32];
    if (e > b && (size_t)(e - b) < sizeof(name)) {
      memcpy(name, b, (size_t)(e - b));
      name[e - b] = 0;
      int m = compress_method_from_name(name);
      if (m >= 0)
        mask |= 1u << m;
    }
    p += n;
    if (*p == ',')
      p++;
  }
  return mask;
}

compress_method_t
compress_choose(unsigned mask, int precompressed)
{
  static const compress_method_t pre[] = {COMPRESS_LZMA, COMPRESS_ZSTD,
                                          COMPRESS_ZLIB, COMPRESS_GZIP};
  static const compress_method_t per_request[] = {
    COMPRESS_ZSTD, COMPRESS_ZLIB, COMPRESS_GZIP};
  const compress_method_t *list = precompressed ? pre : per_request;
  size_t n = precompressed ? sizeof(pre) / sizeof(pre[0])
                           : sizeof(per_request) / sizeof(per_request[0]);
  for (size_t i = 0; i < n; i++)
    if (mask & (1u << list[i]))
      return list[i];
  return COMPRESS_NONE;
}

static int
window_bits(compress_method_t m)
{
  return m == COMPRESS_GZIP ? 15 + 16 : 15;
}

compress_stream_t *
compress_stream_new(int compress, compress_method_t method, size_t max_out)
{
  compress_stream_t *st = pc_zalloc(sizeof(*st));
  st->compress = compress ? 1 : 0;
  st->method = method;
  st->max_out = compress ? SIZE_MAX : max_out;
  if ((unsigned)method >= COMPRESS_N_METHODS)
    st->failed = COMPRESS_ERR_INTERNAL; /* reported by the first call */
  return st;
}

void
compress_stream_set_size_hint(compress_stream_t *st, size_t total_in)
{
  st->size_hint = total_in;
}

/* Smallest power of two >= n, within [4 KiB, cap]. */
static uint32_t
dict_size_for(size_t n, uint32_t cap)
{
  uint32_t d = LZMA_DICT_SIZE_MIN;
  while (d < cap && d < n)
    d <<= 1;
  return d;
}

/* Set up the coder; COMPRESS_OK or COMPRESS_ERR_INTERNAL. */
static int
coder_init(compress_stream_t *st)
{
  st->inited = 1;
  switch (st->method) {
  case COMPRESS_NONE:
    return COMPRESS_OK;
  case COMPRESS_ZLIB:
  case COMPRESS_GZIP: {
    int r;
    st->z.zalloc = zlib_alloc;
    st->z.zfree = zlib_free;
    st->z.opaque = NULL;
    if (st->compress)
      r = deflateInit2(&st->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                       window_bits(st->method), 8, Z_DEFAULT_STRATEGY);
    else
      r = inflateInit2(&st->z, window_bits(st->method));
    if (r != Z_OK) {
      st->inited = 0;
      return COMPRESS_ERR_INTERNAL;
    }
    return COMPRESS_OK;
  }
  case COMPRESS_ZSTD:
    if (st->compress) {
      st->zc = ZSTD_createCCtx();
      if (!st->zc ||
          ZSTD_isError(ZSTD_CCtx_setParameter(st->zc, ZSTD_c_compressionLevel,
                                              ZSTD_LEVEL)) ||
          (st->size_hint &&
           ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(st->zc, st->size_hint))))
        return COMPRESS_ERR_INTERNAL;
    } else {
      st->zd = ZSTD_createDCtx();
      if (!st->zd ||
          ZSTD_isError(ZSTD_DCtx_setParameter(st->zd, ZSTD_d_windowLogMax,
                                              COMPRESS_ZSTD_WINDOW_LOG_MAX)))
        return COMPRESS_ERR_INTERNAL;
    }
    zstd_acct_sync(st);
    return COMPRESS_OK;
  case COMPRESS_LZMA: {
    lzma_stream init = LZMA_STREAM_INIT;
    st->lz = init;
    st->lz.allocator = &lzma_acct_allocator;
    lzma_ret r;
    if (st->compress) {
      lzma_options_lzma opt;
      if (lzma_lzma_preset(&opt, LZMA_PRESET))
        return COMPRESS_ERR_INTERNAL;
      opt.dict_size = dict_size_for(st->size_hint ? st->size_hint
                                                  : LZMA_DICT_UNKNOWN_SIZE,
                                    opt.dict_size);
      r = lzma_alone_encoder(&st->lz, &opt);
    } else {
      r = lzma_alone_decoder(&st->lz, COMPRESS_LZMA_MEMLIMIT);
    }
    return r == LZMA_OK ? COMPRESS_OK : COMPRESS_ERR_INTERNAL;
  }
  }
  return COMPRESS_ERR_INTERNAL;
}

void
compress_stream_free_(compress_stream_t *st)
{
  if (!st)
    return;
  if (st->inited) {
    switch (st->method) {
    case COMPRESS_ZLIB:
    case COMPRESS_GZIP:
      if (st->compress)
        deflateEnd(&st->z);
      else
        inflateEnd(&st->z);
      break;
    case COMPRESS_ZSTD:
      ZSTD_freeCCtx(st->zc);
      ZSTD_freeDCtx(st->zd);
      memacct_sub(MEMACCT_COMPRESS, st->zstd_acct);
      break;
    case COMPRESS_LZMA:
      lzma_end(&st->lz);
      break;
    default:
      break;
    }
  }
  free(st);
}

uint64_t
compress_stream_total_in(const compress_stream_t *st)
{
  return st->total_in;
}

uint64_t
compress_stream_total_out(const compress_stream_t *st)
{
  return st->total_out;
}

/* Decompression limits on the totals. */
static int
check_limits(const compress_stream_t *st)
{
  if (st->compress)
    return COMPRESS_OK;
  if (st->total_out > st->max_out)
    return COMPRESS_ERR_TOO_BIG;
  if (st->total_out > COMPRESS_BOMB_MIN_OUT &&
      st->total_out > (uint64_t)COMPRESS_BOMB_RATIO * st->total_in)
    return COMPRESS_ERR_BOMB;
  return COMPRESS_OK;
}

/* Output space to offer a decoder: never more than one byte past the
 * cap. */
static size_t
out_room(const compress_stream_t *st, size_t outlen)
{
  if (st->compress)
    return outlen;
  uint64_t room = st->max_out - st->total_out + 1;
  return outlen > room ? (size_t)room : outlen;
}

/* Account for one step of a coder. */
static void
advance(compress_stream_t *st, const uint8_t **in, size_t *inlen,
        uint8_t **out, size_t *outlen, size_t used_in, size_t used_out)
{
  *in += used_in;
  *inlen -= used_in;
  *out += used_out;
  *outlen -= used_out;
  st->total_in += used_in;
  st->total_out += used_out;
}

/* A coder's stream is finished: DONE, or TRAILING for a decoder given
 * bytes after the end. */
static int
done_result(const compress_stream_t *st, size_t inlen)
{
  if (inlen > 0 && !st->compress)
    return COMPRESS_ERR_TRAILING;
  return COMPRESS_DONE;
}

static int
process_identity(compress_stream_t *st, const uint8_t **in, size_t *inlen,
                 uint8_t **out, size_t *outlen, int finish)
{
  size_t n = *inlen < *outlen ? *inlen : *outlen;
  if (!st->compress && st->total_out + n > st->max_out) {
    return COMPRESS_ERR_TOO_BIG;
  }
  memcpy(*out, *in, n);
  advance(st, in, inlen, out, outlen, n, n);
  if (finish && *inlen == 0)
    return COMPRESS_DONE;
  return COMPRESS_OK;
}

static int
process_zlib(compress_stream_t *st, const uint8_t **in, size_t *inlen,
             uint8_t **out, size_t *outlen, int finish)
{
  for (;;) {
    if (st->done)
      return done_result(st, *inlen);
    size_t in_chunk = *inlen > UINT_MAX ? UINT_MAX : *inlen;
    size_t out_chunk = out_room(st, *outlen > UINT_MAX ? UINT_MAX : *outlen);
    int last_in = (in_chunk == *inlen);
    if (out_chunk == 0)
      return COMPRESS_OK; /* caller must drain */
    st->z.next_in = (Bytef *)(uintptr_t)*in;
    st->z.avail_in = (uInt)in_chunk;
    st->z.next_out = *out;
    st->z.avail_out = (uInt)out_chunk;
    int r;
    if (st->compress)
      r = deflate(&st->z, (finish && last_in) ? Z_FINISH : Z_NO_FLUSH);
    else
      r = inflate(&st->z, Z_NO_FLUSH);
    size_t used_in = in_chunk - st->z.avail_in;
    size_t used_out = out_chunk - st->z.avail_out;
    advance(st, in, inlen, out, outlen, used_in, used_out);
    int lim = check_limits(st);
    if (lim < 0)
      return lim;
    switch (r) {
    case Z_STREAM_END:
      st->done = 1;
      continue; /* reports DONE or TRAILING */
    case Z_OK:
      if (used_in == 0 && used_out == 0)
        return COMPRESS_OK;
      if (*outlen == 0)
        return COMPRESS_OK;
      if (*inlen == 0 && !finish)
        return COMPRESS_OK;
      continue;
    case Z_BUF_ERROR:
      /* No progress was possible. */
      if (!st->compress && finish && *inlen == 0 && *outlen > 0 &&
          st->z.avail_out > 0)
        return COMPRESS_ERR_TRUNCATED;
      return COMPRESS_OK;
    case Z_DATA_ERROR:
    case Z_NEED_DICT:
    case Z_STREAM_ERROR:
      return COMPRESS_ERR_CORRUPT;
    default:
      return COMPRESS_ERR_INTERNAL;
    }
  }
}

/* libzstd built with legacy support (Debian's is) also decodes the frame
 * formats from before zstd 0.8, whose magic numbers differ only in the
 * first byte, and ZSTD_d_windowLogMax does not apply to them: a 9-byte
 * legacy header made the decoder allocate 128 MiB (found by
 * tests/fuzz/fuzz_compress). Tor only sends current frames, so the
 * decoder accepts only input that starts with the current magic number,
 * checked byte by byte as it arrives (the stream position is total_in,
 * one frame per stream). Returns 0, or CORRUPT. */
static int
zstd_check_magic(const compress_stream_t *st, const uint8_t *in,
                 size_t inlen)
{
  static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  for (uint64_t pos = st->total_in; pos < 4 && inlen > 0; pos++, inlen--)
    if (*in++ != magic[pos])
      return COMPRESS_ERR_CORRUPT;
  return 0;
}

static int
process_zstd(compress_stream_t *st, const uint8_t **in, size_t *inlen,
             uint8_t **out, size_t *outlen, int finish)
{
  if (!st->compress && zstd_check_magic(st, *in, *inlen) < 0)
    return COMPRESS_ERR_CORRUPT;
  for (;;) {
    if (st->done)
      return done_result(st, *inlen);
    size_t out_chunk = out_room(st, *outlen);
    if (out_chunk == 0)
      return COMPRESS_OK; /* caller must drain */
    ZSTD_inBuffer ib = {*in, *inlen, 0};
    ZSTD_outBuffer ob = {*out, out_chunk, 0};
    size_t r;
    if (st->compress)
      r = ZSTD_compressStream2(st->zc, &ob, &ib,
                               finish ? ZSTD_e_end : ZSTD_e_continue);
    else
      r = ZSTD_decompressStream(st->zd, &ob, &ib);
    advance(st, in, inlen, out, outlen, ib.pos, ob.pos);
    if (ZSTD_isError(r))
      return st->compress ? COMPRESS_ERR_INTERNAL : COMPRESS_ERR_CORRUPT;
    int lim = check_limits(st);
    if (lim < 0)
      return lim;
    if (st->compress) {
      if (finish && r == 0 && *inlen == 0) {
        st->done = 1;
        continue;
      }
      if (ob.pos == out_chunk)
        return COMPRESS_OK; /* output full */
      if (!finish && *inlen == 0)
        return COMPRESS_OK;
      continue;
    }
    if (r == 0) { /* the frame is complete and flushed */
      st->done = 1;
      continue;
    }
    if (ob.pos == out_chunk)
      return COMPRESS_OK; /* output full: maybe more to come */
    if (*inlen == 0)
      return finish ? COMPRESS_ERR_TRUNCATED : COMPRESS_OK;
    if (ib.pos == 0 && ob.pos == 0)
      return COMPRESS_OK;
  }
}

static int
process_lzma(compress_stream_t *st, const uint8_t **in, size_t *inlen,
             uint8_t **out, size_t *outlen, int finish)
{
  for (;;) {
    if (st->done)
      return done_result(st, *inlen);
    size_t out_chunk = out_room(st, *outlen);
    if (out_chunk == 0)
      return COMPRESS_OK;
    st->lz.next_in = *in;
    st->lz.avail_in = *inlen;
    st->lz.next_out = *out;
    st->lz.avail_out = out_chunk;
    lzma_ret r = lzma_code(&st->lz,
                           (st->compress && finish) ? LZMA_FINISH : LZMA_RUN);
    size_t used_in = *inlen - st->lz.avail_in;
    size_t used_out = out_chunk - st->lz.avail_out;
    advance(st, in, inlen, out, outlen, used_in, used_out);
    int lim = check_limits(st);
    if (lim < 0)
      return lim;
    switch (r) {
    case LZMA_STREAM_END:
      st->done = 1;
      continue;
    case LZMA_OK:
    case LZMA_BUF_ERROR: /* no progress possible */
      if (used_out == out_chunk)
        return COMPRESS_OK; /* output full */
      if (*inlen == 0) {
        if (!finish)
          return COMPRESS_OK;
        if (!st->compress)
          return COMPRESS_ERR_TRUNCATED;
      }
      if (used_in == 0 && used_out == 0)
        return r == LZMA_BUF_ERROR ? COMPRESS_ERR_INTERNAL : COMPRESS_OK;
      continue;
    case LZMA_MEMLIMIT_ERROR: /* a dictionary bigger than we allow */
    case LZMA_FORMAT_ERROR:
    case LZMA_DATA_ERROR:
    case LZMA_OPTIONS_ERROR:
      return st->compress ? COMPRESS_ERR_INTERNAL : COMPRESS_ERR_CORRUPT;
    default:
      return COMPRESS_ERR_INTERNAL;
    }
  }
}

int
compress_stream_process(compress_stream_t *st, const uint8_t **in,
                        size_t *inlen, uint8_t **out, size_t *outlen,
                        int finish)
{
  if (st->failed)
    return st->failed;
  int r;
  if (!st->inited && (r = coder_init(st)) < 0) {
    st->failed = r;
    return r;
  }
  switch (st->method) {
  case COMPRESS_NONE:
    r = process_identity(st, in, inlen, out, outlen, finish);
    break;
  case COMPRESS_ZSTD:
    r = process_zstd(st, in, inlen, out, outlen, finish);
    zstd_acct_sync(st);
    break;
  case COMPRESS_LZMA:
    r = process_lzma(st, in, inlen, out, outlen, finish);
    break;
  default:
    r = process_zlib(st, in, inlen, out, outlen, finish);
    break;
  }
  if (r < 0)
    st->failed = r;
  return r;
}

/* Drive a stream over a whole buffer, growing the output up to cap bytes
 * (plus one byte kept for a NUL terminator). With rest != NULL, input
 * after the end of the stream is not an error: *rest / *rest_len say
 * where it starts (for concatenated streams). */
static int
run_oneshot_rest(compress_stream_t *st, const uint8_t *in, size_t inlen,
                 size_t cap, uint8_t **out, size_t *outlen,
                 const uint8_t **rest, size_t *rest_len)
{
  *out = NULL;
  *outlen = 0;
  size_t alloc = inlen * 2 + 64;
  if (alloc > cap + 1 || alloc < inlen) /* overflow guard */
    alloc = cap + 1;
  if (alloc < 2)
    alloc = 2;
  uint8_t *buf = pc_malloc(alloc);
  size_t used = 0;
  for (;;) {
    uint8_t *o = buf + used;
    size_t olen = alloc - used - 1; /* keep room for the NUL */
    int r = compress_stream_process(st, &in, &inlen, &o, &olen, 1);
    used = (size_t)(o - buf);
    if (r == COMPRESS_DONE || (rest && r == COMPRESS_ERR_TRAILING))
      break;
    if (r < 0) {
      free(buf);
      return r;
    }
    if (olen > 0) {
      /* No progress with output space left and all input given. */
      free(buf);
      return st->compress ? COMPRESS_ERR_INTERNAL : COMPRESS_ERR_TRUNCATED;
    }
    if (alloc - 1 >= cap) {
      /* Output is full at the cap and the stream wants more; one more
       * byte would show whether it really continues. */
      if (st->compress) {
        cap = cap * 2 + 64;
      } else {
        uint8_t probe[1];
        uint8_t *p = probe;
        size_t plen = 1;
        r = compress_stream_process(st, &in, &inlen, &p, &plen, 1);
        if ((r == COMPRESS_DONE || (rest && r == COMPRESS_ERR_TRAILING)) &&
            plen == 1)
          break;
        free(buf);
        return r < 0 ? r : COMPRESS_ERR_TOO_BIG;
      }
    }
    size_t want = alloc * 2;
    if (want < alloc || want > cap + 1)
      want = cap + 1;
    buf = pc_realloc(buf, want);
    alloc = want;
  }
  buf[used] = 0;
  *out = buf;
  *outlen = used;
  if (rest) {
    *rest = in;
    *rest_len = inlen;
  }
  return COMPRESS_OK;
}

static int
run_oneshot(compress_stream_t *st, const uint8_t *in, size_t inlen,
            size_t cap, uint8_t **out, size_t *outlen)
{
  return run_oneshot_rest(st, in, inlen, cap, out, outlen, NULL, NULL);
}

int
compress_buf(compress_method_t method, const uint8_t *in, size_t inlen,
             uint8_t **out, size_t *outlen)
{
  compress_stream_t *st = compress_stream_new(1, method, 0);
  compress_stream_set_size_hint(st, inlen);
  int r = run_oneshot(st, in, inlen, inlen + inlen / 8 + 1024, out, outlen);
  compress_stream_free(st);
  return r;
}

int
compress_uncompress(compress_method_t method, const uint8_t *in,
                    size_t inlen, size_t max_out, uint8_t **out,
                    size_t *outlen)
{
  if (max_out == SIZE_MAX)
    max_out = SIZE_MAX - 1;
  compress_stream_t *st = compress_stream_new(0, method, max_out);
  int r = run_oneshot(st, in, inlen, max_out, out, outlen);
  compress_stream_free(st);
  return r;
}

int
compress_uncompress_concat(compress_method_t method, const uint8_t *in,
                           size_t inlen, size_t max_out, uint8_t **out,
                           size_t *outlen)
{
  if (method == COMPRESS_NONE || inlen == 0)
    return compress_uncompress(method, in, inlen, max_out, out, outlen);
  if (max_out == SIZE_MAX)
    max_out = SIZE_MAX - 1;
  uint8_t *acc = NULL;
  size_t used = 0;
  const uint8_t *p = in;
  size_t left = inlen;
  *out = NULL;
  *outlen = 0;
  while (left > 0) {
    compress_stream_t *st = compress_stream_new(0, method, max_out - used);
    uint8_t *piece = NULL;
    size_t plen = 0;
    int r = run_oneshot_rest(st, p, left, max_out - used, &piece, &plen, &p,
                             &left);
    compress_stream_free(st);
    if (r < 0) {
      free(acc);
      return r;
    }
    acc = pc_realloc(acc, used + plen + 1);
    memcpy(acc + used, piece, plen);
    used += plen;
    acc[used] = 0;
    free(piece);
    /* The ratio over everything so far: many small streams are judged
     * like one big one. */
    uint64_t consumed = inlen - left;
    if (used > COMPRESS_BOMB_MIN_OUT &&
        used > (uint64_t)COMPRESS_BOMB_RATIO * consumed) {
      free(acc);
      return COMPRESS_ERR_BOMB;
    }
  }
  *out = acc;
  *outlen = used;
  return COMPRESS_OK;
}
