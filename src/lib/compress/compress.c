/* compress.c -- zlib wrapper: one-shot and streaming compression and
 * bounded decompression (see compress.h).
 *
 * Design: everything goes through one streaming core
 * (compress_stream_process); the one-shot functions drive it with a
 * buffer that doubles up to the caller's cap. The cap is enforced by never
 * offering zlib more output space than (cap - produced + 1): one byte past
 * the cap proves the stream is too big without ever writing more than the
 * cap plus one byte. zlib's 32-bit avail_in/avail_out are fed in chunks so
 * buffers over 4 GiB cannot wrap. The bomb check runs after every call, on
 * the totals, so a stream fed in small pieces is judged the same as one
 * fed at once.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/compress/compress.h"
#include "lib/malloc/alloc.h"

struct compress_stream_t {
  int compress;
  compress_method_t method;
  size_t max_out;
  int zinit;  /* z_stream initialised */
  int done;   /* end of stream seen */
  int failed; /* a previous call failed */
  uint64_t total_in, total_out;
  z_stream z;
};

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
  default: return NULL;
  }
}

int
compress_method_from_name(const char *name)
{
  if (!name)
    return -1;
  if (!strcmp(name, "identity"))
    return COMPRESS_NONE;
  if (!strcmp(name, "deflate") || !strcmp(name, "x-deflate"))
    return COMPRESS_ZLIB;
  if (!strcmp(name, "gzip") || !strcmp(name, "x-gzip"))
    return COMPRESS_GZIP;
  return -1;
}

compress_method_t
compress_detect(const uint8_t *in, size_t len)
{
  if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b)
    return COMPRESS_GZIP;
  /* RFC 1950: CM = 8, CINFO <= 7, (CMF*256 + FLG) % 31 == 0. */
  if (len >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 &&
      ((unsigned)in[0] * 256 + in[1]) % 31 == 0)
    return COMPRESS_ZLIB;
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
  if (method == COMPRESS_ZLIB || method == COMPRESS_GZIP) {
    int r;
    if (st->compress)
      r = deflateInit2(&st->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                       window_bits(method), 8, Z_DEFAULT_STRATEGY);
    else
      r = inflateInit2(&st->z, window_bits(method));
    if (r == Z_OK)
      st->zinit = 1;
    else
      st->failed = COMPRESS_ERR_INTERNAL; /* reported by the first call */
  } else if (method != COMPRESS_NONE) {
    st->failed = COMPRESS_ERR_INTERNAL;
  }
  return st;
}

void
compress_stream_free_(compress_stream_t *st)
{
  if (!st)
    return;
  if (st->zinit) {
    if (st->compress)
      deflateEnd(&st->z);
    else
      inflateEnd(&st->z);
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

static int
process_identity(compress_stream_t *st, const uint8_t **in, size_t *inlen,
                 uint8_t **out, size_t *outlen, int finish)
{
  size_t n = *inlen < *outlen ? *inlen : *outlen;
  if (!st->compress && st->total_out + n > st->max_out) {
    return COMPRESS_ERR_TOO_BIG;
  }
  memcpy(*out, *in, n);
  *in += n;
  *inlen -= n;
  *out += n;
  *outlen -= n;
  st->total_in += n;
  st->total_out += n;
  if (finish && *inlen == 0)
    return COMPRESS_DONE;
  return COMPRESS_OK;
}

static int
process_zlib(compress_stream_t *st, const uint8_t **in, size_t *inlen,
             uint8_t **out, size_t *outlen, int finish)
{
  for (;;) {
    if (st->done) {
      if (*inlen > 0 && !st->compress)
        return COMPRESS_ERR_TRAILING;
      return COMPRESS_DONE;
    }
    size_t in_chunk = *inlen > UINT_MAX ? UINT_MAX : *inlen;
    size_t out_chunk = *outlen > UINT_MAX ? UINT_MAX : *outlen;
    int last_in = (in_chunk == *inlen);
    if (!st->compress) {
      /* Never offer more than one byte past the cap. */
      uint64_t room = st->max_out - st->total_out + 1;
      if (out_chunk > room)
        out_chunk = (size_t)room;
    }
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
    *in += used_in;
    *inlen -= used_in;
    *out += used_out;
    *outlen -= used_out;
    st->total_in += used_in;
    st->total_out += used_out;
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

int
compress_stream_process(compress_stream_t *st, const uint8_t **in,
                        size_t *inlen, uint8_t **out, size_t *outlen,
                        int finish)
{
  if (st->failed)
    return st->failed;
  int r;
  if (st->method == COMPRESS_NONE)
    r = process_identity(st, in, inlen, out, outlen, finish);
  else
    r = process_zlib(st, in, inlen, out, outlen, finish);
  if (r < 0)
    st->failed = r;
  return r;
}

/* Drive a stream over a whole buffer, growing the output up to cap bytes
 * (plus one byte kept for a NUL terminator). */
static int
run_oneshot(compress_stream_t *st, const uint8_t *in, size_t inlen,
            size_t cap, uint8_t **out, size_t *outlen)
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
    if (r == COMPRESS_DONE)
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
        if (r == COMPRESS_DONE && plen == 1)
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
  return COMPRESS_OK;
}

int
compress_buf(compress_method_t method, const uint8_t *in, size_t inlen,
             uint8_t **out, size_t *outlen)
{
  compress_stream_t *st = compress_stream_new(1, method, 0);
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
