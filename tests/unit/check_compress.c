/* SPDX-License-Identifier: BSD-3-Clause */
/* check_compress.c -- unit tests for lib/compress: known-answer inputs from
 * Python's zlib, gzip and lzma modules and the zstd command-line tool
 * (tests/vectors/compress_vectors.py), round trips in every method, the
 * output cap (exact boundary), decompression bombs, truncated / corrupted /
 * trailing input, decoder memory limits, streaming in tiny pieces,
 * concatenated streams, method names, detection and Accept-Encoding
 * negotiation, and the coders' memory counted in the memory budget
 * (MEMACCT_COMPRESS). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compress/compress.h"
#include "lib/malloc/memacct.h"

Suite *suite_compress(void);

/* From tests/vectors/compress_vectors.py. */
static const uint8_t zlib_vec[63] = {
  0x78, 0xda, 0xcb, 0x4b, 0x2d, 0x29, 0xcf, 0x2f, 0xca, 0xd6, 0x2d, 0x2e,
  0x49, 0x2c, 0x29, 0x2d, 0xd6, 0x2d, 0x4b, 0x2d, 0x2a, 0xce, 0xcc, 0xcf,
  0x53, 0x30, 0x56, 0xc8, 0xcd, 0x4c, 0x2e, 0xca, 0x4f, 0x49, 0x2d, 0x4e,
  0xe6, 0x2a, 0xcb, 0x2f, 0x49, 0x85, 0xca, 0x2b, 0x24, 0xe7, 0xe7, 0x15,
  0xa7, 0xe6, 0x15, 0x97, 0x16, 0x73, 0xe5, 0xd1, 0x5d, 0x23, 0x00, 0x26,
  0xc0, 0x41, 0x9b,
};
static const uint8_t gzip_vec[75] = {
  0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x4b,
  0x2d, 0x29, 0xcf, 0x2f, 0xca, 0xd6, 0x2d, 0x2e, 0x49, 0x2c, 0x29, 0x2d,
  0xd6, 0x2d, 0x4b, 0x2d, 0x2a, 0xce, 0xcc, 0xcf, 0x53, 0x30, 0x56, 0xc8,
  0xcd, 0x4c, 0x2e, 0xca, 0x4f, 0x49, 0x2d, 0x4e, 0xe6, 0x2a, 0xcb, 0x2f,
  0x49, 0x85, 0xca, 0x2b, 0x24, 0xe7, 0xe7, 0x15, 0xa7, 0xe6, 0x15, 0x97,
  0x16, 0x73, 0xe5, 0xd1, 0x5d, 0x23, 0x00, 0x09, 0xee, 0xde, 0x11, 0xab,
  0x00, 0x00, 0x00,
};
static const uint8_t zlib_stored_vec[14] = {
  0x78, 0x01, 0x01, 0x03, 0x00, 0xfc, 0xff, 0x61, 0x62, 0x63, 0x02, 0x4d,
  0x01, 0x27,
};
static const uint8_t zstd_vec[67] = {
  0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x68, 0xb5, 0x01, 0x00, 0x22, 0x83, 0x0a,
  0x0f, 0xc0, 0xeb, 0x84, 0x48, 0x5c, 0x59, 0xb4, 0x93, 0x84, 0xff, 0x45,
  0x65, 0xfd, 0xac, 0x37, 0xe0, 0xe9, 0xd8, 0xa3, 0xcf, 0x9a, 0x56, 0xe0,
  0x5e, 0x62, 0x74, 0xe5, 0x98, 0x30, 0x74, 0x39, 0xaa, 0x0a, 0x4f, 0x39,
  0xf2, 0xc1, 0x20, 0xaf, 0x2c, 0x06, 0x02, 0x00, 0x8f, 0xab, 0xe4, 0x3f,
  0x5c, 0xf5, 0x04, 0x6e, 0x26, 0x50, 0xef,
};
static const uint8_t lzma_vec[76] = {
  0x5d, 0x00, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
  0xff, 0x00, 0x37, 0x19, 0x4a, 0xf0, 0x5b, 0xf8, 0x17, 0x75, 0x95, 0x7c,
  0x76, 0x61, 0x44, 0x91, 0x1b, 0x93, 0x95, 0x05, 0x90, 0x76, 0x27, 0x85,
  0xe6, 0xdf, 0x66, 0x8f, 0x87, 0x15, 0x4e, 0x76, 0x40, 0xbf, 0xaf, 0xa4,
  0x56, 0x4a, 0x05, 0xde, 0xd6, 0xba, 0xd8, 0xef, 0x18, 0xfa, 0xe1, 0x8f,
  0xa7, 0x3a, 0xb7, 0xeb, 0x5b, 0x57, 0xfc, 0x75, 0x1a, 0x03, 0xff, 0xff,
  0xcc, 0xe6, 0x00, 0x00,
};
#define TEXT1 "network-status-version 3 microdesc\nvote-status consensus\n"
static const char vec_text[] = TEXT1 TEXT1 TEXT1;

static uint8_t buf_lzma_big[sizeof(lzma_vec)];

/* Pseudo-random but compressible text of n bytes. */
static uint8_t *
make_text(size_t n, uint32_t seed)
{
  static const char *words[] = {"r ", "m ", "s Fast Guard Running ",
                                "w Bandwidth=", "ntor-onion-key ", "\n",
                                "accept 80,443", "id ed25519 "};
  uint8_t *p = malloc(n + 1);
  size_t i = 0;
  while (i < n) {
    seed = seed * 1103515245u + 12345u;
    const char *w = words[(seed >> 16) % 8];
    for (; *w && i < n; w++)
      p[i++] = (uint8_t)*w;
    if (i < n)
      p[i++] = (uint8_t)('A' + ((seed >> 8) % 26));
  }
  p[n] = 0;
  return p;
}

START_TEST(test_known_answers)
{
  uint8_t *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, zlib_vec,
                                       sizeof(zlib_vec), 1000, &out, &len),
                   0);
  ck_assert_uint_eq(len, strlen(vec_text));
  ck_assert_str_eq((char *)out, vec_text); /* NUL-terminated */
  free(out);
  ck_assert_int_eq(compress_uncompress(COMPRESS_GZIP, gzip_vec,
                                       sizeof(gzip_vec), 1000, &out, &len),
                   0);
  ck_assert_str_eq((char *)out, vec_text);
  free(out);
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, zlib_stored_vec,
                                       sizeof(zlib_stored_vec), 3, &out,
                                       &len),
                   0);
  ck_assert_uint_eq(len, 3);
  ck_assert_str_eq((char *)out, "abc");
  free(out);
  /* Wrong method: gzip data is not zlib and vice versa. */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, gzip_vec,
                                       sizeof(gzip_vec), 1000, &out, &len),
                   COMPRESS_ERR_CORRUPT);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(compress_uncompress(COMPRESS_GZIP, zlib_vec,
                                       sizeof(zlib_vec), 1000, &out, &len),
                   COMPRESS_ERR_CORRUPT);
  /* zstd (the zstd tool, level 19, with a checksum) and .lzma (Python's
   * lzma, FORMAT_ALONE). */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, zstd_vec,
                                       sizeof(zstd_vec), 1000, &out, &len),
                   0);
  ck_assert_uint_eq(len, strlen(vec_text));
  ck_assert_str_eq((char *)out, vec_text);
  free(out);
  ck_assert_int_eq(compress_uncompress(COMPRESS_LZMA, lzma_vec,
                                       sizeof(lzma_vec), 1000, &out, &len),
                   0);
  ck_assert_uint_eq(len, strlen(vec_text));
  ck_assert_str_eq((char *)out, vec_text);
  free(out);
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, lzma_vec,
                                       sizeof(lzma_vec), 1000, &out, &len),
                   COMPRESS_ERR_CORRUPT);
  ck_assert_int_eq(compress_uncompress(COMPRESS_LZMA, zstd_vec,
                                       sizeof(zstd_vec), 1000, &out, &len),
                   COMPRESS_ERR_CORRUPT);
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, zstd_vec,
                                       sizeof(zstd_vec), 1000, &out, &len),
                   COMPRESS_ERR_CORRUPT);
  ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_roundtrip)
{
  size_t sizes[] = {0, 1, 100, 4096, 70000, 300000};
  for (int m = 0; m < COMPRESS_N_METHODS; m++) {
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      uint8_t *t = make_text(sizes[k], (uint32_t)k);
      uint8_t *c = NULL, *d = NULL;
      size_t cl = 0, dl = 0;
      ck_assert_int_eq(compress_buf((compress_method_t)m, t, sizes[k], &c,
                                    &cl), 0);
      if (m != COMPRESS_NONE) {
        if (m != COMPRESS_LZMA) /* .lzma has no magic number */
          ck_assert_int_eq(compress_detect(c, cl), m);
        if (sizes[k] >= 4096)
          ck_assert_uint_lt(cl, sizes[k] / 2);
      } else {
        ck_assert_uint_eq(cl, sizes[k]);
      }
      ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl,
                                           sizes[k], &d, &dl), 0);
      ck_assert_uint_eq(dl, sizes[k]);
      ck_assert(memcmp(d, t, dl) == 0);
      ck_assert_int_eq(d[dl], 0);
      free(c);
      free(d);
      free(t);
    }
  }
}
END_TEST

START_TEST(test_cap)
{
  size_t n = 50000;
  uint8_t *t = make_text(n, 7);
  uint8_t *c = NULL, *d = NULL;
  size_t cl = 0, dl = 0;
  for (int m = 0; m < COMPRESS_N_METHODS; m++) {
    ck_assert_int_eq(compress_buf((compress_method_t)m, t, n, &c, &cl), 0);
    /* Exactly at the cap: fine. One byte below: too big. */
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl, n, &d,
                                         &dl), 0);
    ck_assert_uint_eq(dl, n);
    free(d);
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl, n - 1,
                                         &d, &dl),
                     COMPRESS_ERR_TOO_BIG);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl, 10, &d,
                                         &dl),
                     COMPRESS_ERR_TOO_BIG);
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl, 0, &d,
                                         &dl),
                     COMPRESS_ERR_TOO_BIG);
    free(c);
  }
  free(t);
}
END_TEST

START_TEST(test_bomb)
{
  /* 20 MB of zeros compress about 1000:1. */
  size_t n = 20 * 1024 * 1024;
  uint8_t *z = calloc(1, n);
  uint8_t *c = NULL, *d = NULL;
  size_t cl = 0, dl = 0;
  ck_assert_int_eq(compress_buf(COMPRESS_ZLIB, z, n, &c, &cl), 0);
  ck_assert_uint_lt(cl, n / 500);
  /* Even with a generous absolute cap the ratio check stops it early. */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, c, cl, 64 * n, &d,
                                       &dl),
                   COMPRESS_ERR_BOMB);
  ck_assert_ptr_null(d);
  free(c);
  /* The same limits for zstd and lzma (which compress zeros far better
   * still), one-shot and streamed in small pieces. */
  for (int m = COMPRESS_ZSTD; m <= COMPRESS_LZMA; m++) {
    ck_assert_int_eq(compress_buf((compress_method_t)m, z, n, &c, &cl), 0);
    ck_assert_uint_lt(cl, n / 1000);
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, c, cl, 64 * n,
                                         &d, &dl),
                     COMPRESS_ERR_BOMB);
    ck_assert_ptr_null(d);
    compress_stream_t *st = compress_stream_new(0, (compress_method_t)m,
                                                64 * n);
    uint8_t win[4096];
    int r = COMPRESS_OK;
    size_t fed = 0, out_total = 0;
    while (r == COMPRESS_OK && fed < cl) {
      const uint8_t *in = c + fed;
      size_t inlen = cl - fed < 16 ? cl - fed : 16;
      size_t before = inlen;
      do {
        uint8_t *o = win;
        size_t ol = sizeof(win);
        r = compress_stream_process(st, &in, &inlen, &o, &ol, 0);
        out_total += sizeof(win) - ol;
      } while (r == COMPRESS_OK && inlen > 0);
      fed += before - inlen;
    }
    ck_assert_int_eq(r, COMPRESS_ERR_BOMB);
    /* Stopped soon after the ratio was exceeded. */
    ck_assert_uint_le(out_total, (size_t)COMPRESS_BOMB_RATIO * fed +
                                     COMPRESS_BOMB_MIN_OUT + sizeof(win));
    compress_stream_free(st);
    free(c);
  }
  /* Small outputs are not judged by ratio. */
  ck_assert_int_eq(compress_buf(COMPRESS_ZLIB, z, 60000, &c, &cl), 0);
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, c, cl, 60000, &d, &dl),
                   0);
  free(d);
  free(c);
  free(z);
  ck_assert_ptr_nonnull(strstr(compress_strerror(COMPRESS_ERR_BOMB), "bomb"));
}
END_TEST

START_TEST(test_malformed)
{
  uint8_t *d = NULL;
  size_t dl = 0;
  /* Every proper prefix is truncated. */
  for (size_t i = 0; i < sizeof(zlib_vec); i++) {
    int r = compress_uncompress(COMPRESS_ZLIB, zlib_vec, i, 1000, &d, &dl);
    if (r != COMPRESS_ERR_TRUNCATED)
      ck_abort_msg("zlib prefix %zu -> %d", i, r);
  }
  for (size_t i = 0; i < sizeof(gzip_vec); i++) {
    int r = compress_uncompress(COMPRESS_GZIP, gzip_vec, i, 1000, &d, &dl);
    if (r != COMPRESS_ERR_TRUNCATED && r != COMPRESS_ERR_CORRUPT)
      ck_abort_msg("gzip prefix %zu -> %d", i, r);
  }
  /* A flipped bit anywhere fails (the checksum catches what the decoder
   * does not), or -- only in the unused padding bits of the last deflate
   * byte -- decodes to the very same text; never to wrong data. */
  uint8_t buf[sizeof(zlib_vec) + 4];
  int n_ok = 0;
  for (size_t i = 0; i < sizeof(zlib_vec); i++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(buf, zlib_vec, sizeof(zlib_vec));
      buf[i] ^= (uint8_t)(1 << bit);
      int r = compress_uncompress(COMPRESS_ZLIB, buf, sizeof(zlib_vec), 1000,
                                  &d, &dl);
      if (r >= 0) {
        if (dl != strlen(vec_text) || memcmp(d, vec_text, dl) != 0)
          ck_abort_msg("flip %zu/%d gave wrong data", i, bit);
        ck_assert_uint_eq(i, sizeof(zlib_vec) - 5);
        free(d);
        d = NULL;
        n_ok++;
      } else {
        ck_assert_ptr_null(d);
      }
    }
  }
  ck_assert_int_le(n_ok, 7);
  /* Trailing data. */
  memcpy(buf, zlib_vec, sizeof(zlib_vec));
  memcpy(buf + sizeof(zlib_vec), "junk", 4);
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, buf, sizeof(buf), 1000,
                                       &d, &dl),
                   COMPRESS_ERR_TRAILING);
  /* Plain text is not zlib. */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, (const uint8_t *)"hello",
                                       5, 1000, &d, &dl),
                   COMPRESS_ERR_CORRUPT);
}
END_TEST

/* Truncation, corruption, trailing data and memory limits for zstd and
 * lzma. */
START_TEST(test_malformed_zstd_lzma)
{
  uint8_t *d = NULL;
  size_t dl = 0;
  const struct {
    compress_method_t m;
    const uint8_t *v;
    size_t len;
  } vecs[] = {{COMPRESS_ZSTD, zstd_vec, sizeof(zstd_vec)},
              {COMPRESS_LZMA, lzma_vec, sizeof(lzma_vec)}};
  for (size_t k = 0; k < 2; k++) {
    compress_method_t m = vecs[k].m;
    const uint8_t *v = vecs[k].v;
    size_t vl = vecs[k].len;
    /* Every proper prefix fails: truncated (or, for a prefix cut inside
     * a header field, corrupt). */
    for (size_t i = 0; i < vl; i++) {
      int r = compress_uncompress(m, v, i, 1000, &d, &dl);
      if (r != COMPRESS_ERR_TRUNCATED && r != COMPRESS_ERR_CORRUPT)
        ck_abort_msg("%s prefix %zu -> %d", compress_method_name(m), i, r);
      ck_assert_ptr_null(d);
    }
    /* Flipped bits: zstd's checksum catches every change; .lzma has no
     * checksum, so a flip may decode to other text -- but never past the
     * cap, never crashing (ASan runs watch this). */
    uint8_t buf[128];
    for (size_t i = 0; i < vl; i++) {
      for (int bit = 0; bit < 8; bit++) {
        memcpy(buf, v, vl);
        buf[i] ^= (uint8_t)(1 << bit);
        int r = compress_uncompress(m, buf, vl, 1000, &d, &dl);
        if (r >= 0) {
          if (m == COMPRESS_ZSTD &&
              (dl != strlen(vec_text) || memcmp(d, vec_text, dl) != 0))
            ck_abort_msg("zstd flip %zu/%d gave wrong data", i, bit);
          ck_assert_uint_le(dl, 1000);
          free(d);
          d = NULL;
        } else {
          ck_assert_ptr_null(d);
        }
      }
    }
    /* Trailing data. */
    memcpy(buf, v, vl);
    memcpy(buf + vl, "junk", 4);
    ck_assert_int_eq(compress_uncompress(m, buf, vl + 4, 1000, &d, &dl),
                     COMPRESS_ERR_TRAILING);
    ck_assert_int_eq(compress_uncompress(m, (const uint8_t *)"hello world, "
                                            "this is not compressed",
                                         35, 1000, &d, &dl),
                     COMPRESS_ERR_CORRUPT);
    ck_assert_int_eq(compress_uncompress(m, v, 0, 1000, &d, &dl),
                     COMPRESS_ERR_TRUNCATED);
  }
  /* .lzma whose header asks for a 1 GiB dictionary: over the decoder's
   * memory limit, refused before anything is allocated. */
  memcpy(buf_lzma_big, lzma_vec, sizeof(lzma_vec));
  buf_lzma_big[1] = 0x00;
  buf_lzma_big[2] = 0x00;
  buf_lzma_big[3] = 0x00;
  buf_lzma_big[4] = 0x40; /* dict size 0x40000000, little-endian */
  ck_assert_int_eq(compress_uncompress(COMPRESS_LZMA, buf_lzma_big,
                                       sizeof(lzma_vec), 1000, &d, &dl),
                   COMPRESS_ERR_CORRUPT);
  /* A zstd frame (hand-made: magic, descriptor 0, window descriptor, one
   * raw last block "abc") with a 2 MiB window decodes; with a 1 GiB window
   * (over 2^COMPRESS_ZSTD_WINDOW_LOG_MAX) it is refused. */
  uint8_t fr[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58,
                  0x19, 0x00, 0x00, 'a', 'b', 'c'};
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, fr, sizeof(fr), 10, &d,
                                       &dl),
                   0);
  ck_assert_str_eq((char *)d, "abc");
  free(d);
  fr[5] = 0xa0; /* window log 10 + 20 = 30 */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, fr, sizeof(fr), 10, &d,
                                       &dl),
                   COMPRESS_ERR_CORRUPT);
  /* The bound itself: 2^23 bytes (tor sends at most 2^22) decodes, one
   * mantissa step above it (2^23 + 2^20) does not, also when the frame is
   * fed a byte at a time. */
  ck_assert_int_eq(COMPRESS_ZSTD_WINDOW_LOG_MAX, 23);
  fr[5] = 0x68; /* exponent 13: 2^23, mantissa 0 */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, fr, sizeof(fr), 10, &d,
                                       &dl),
                   0);
  ck_assert_str_eq((char *)d, "abc");
  free(d);
  fr[5] = 0x69; /* 2^23 + 2^23 / 8 */
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, fr, sizeof(fr), 10, &d,
                                       &dl),
                   COMPRESS_ERR_CORRUPT);
  {
    compress_stream_t *zs = compress_stream_new(0, COMPRESS_ZSTD, 10);
    uint8_t ob[16];
    int zr = COMPRESS_OK;
    for (size_t k = 0; k < sizeof(fr) && zr == COMPRESS_OK; k++) {
      const uint8_t *ip = fr + k;
      size_t il = 1, ol = sizeof(ob);
      uint8_t *op = ob;
      zr = compress_stream_process(zs, &ip, &il, &op, &ol,
                                   k + 1 == sizeof(fr));
    }
    ck_assert_int_eq(zr, COMPRESS_ERR_CORRUPT);
    compress_stream_free(zs);
  }
  /* A legacy (zstd 0.6) frame header, which the window limit does not
   * cover (libzstd allocated 128 MiB for it; found by fuzz_compress), is
   * refused as soon as its first byte arrives, also fed one byte at a
   * time; a current frame fed that way still decodes. */
  static const uint8_t legacy[] = {0x26, 0xb5, 0x2f, 0xfd, 0x5f, 0x2d, 0x47};
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZSTD, legacy, sizeof(legacy),
                                       1000, &d, &dl),
                   COMPRESS_ERR_CORRUPT);
  ck_assert_ptr_null(d);
  fr[5] = 0x58;
  for (int pass = 0; pass < 2; pass++) {
    const uint8_t *v = pass ? fr : legacy;
    size_t vlen = pass ? sizeof(fr) : sizeof(legacy);
    compress_stream_t *st = compress_stream_new(0, COMPRESS_ZSTD, 100);
    uint8_t ob[100];
    uint8_t *o = ob;
    size_t olen = sizeof(ob);
    int r = COMPRESS_OK;
    for (size_t i = 0; i < vlen && r == COMPRESS_OK; i++) {
      const uint8_t *p = v + i;
      size_t left = 1;
      r = compress_stream_process(st, &p, &left, &o, &olen, i + 1 == vlen);
    }
    ck_assert_int_eq(r, pass ? COMPRESS_DONE : COMPRESS_ERR_CORRUPT);
    if (pass)
      ck_assert_int_eq((int)(o - ob), 3);
    else
      ck_assert_uint_eq(compress_stream_total_in(st), 0);
    compress_stream_free(st);
  }
}
END_TEST

/* Every method streamed both ways in odd-sized pieces. */
START_TEST(test_streaming_all)
{
  size_t n = 150000;
  uint8_t *t = make_text(n, 11);
  for (int m = 0; m < COMPRESS_N_METHODS; m++) {
    /* Compress 777 bytes at a time into a 100-byte window. */
    compress_stream_t *st = compress_stream_new(1, (compress_method_t)m, 0);
    size_t cap = n + 4096, cl = 0, fed = 0;
    uint8_t *c = malloc(cap);
    int r = COMPRESS_OK;
    for (int iter = 0; r != COMPRESS_DONE; iter++) {
      ck_assert_int_lt(iter, 1000000);
      size_t chunk = n - fed < 777 ? n - fed : 777;
      const uint8_t *in = t + fed;
      size_t inlen = chunk;
      uint8_t *o = c + cl;
      size_t ol = cap - cl < 100 ? cap - cl : 100;
      size_t ol0 = ol;
      r = compress_stream_process(st, &in, &inlen, &o, &ol, fed + chunk == n);
      ck_assert_int_ge(r, 0);
      cl += ol0 - ol;
      fed += chunk - inlen;
    }
    compress_stream_free(st);
    if (m != COMPRESS_NONE)
      ck_assert_uint_lt(cl, n / 2);
    /* Decompress 5 bytes at a time into a 31-byte window. */
    st = compress_stream_new(0, (compress_method_t)m, n);
    uint8_t *res = malloc(n);
    size_t got = 0;
    fed = 0;
    r = COMPRESS_OK;
    for (int iter = 0; r != COMPRESS_DONE; iter++) {
      ck_assert_int_lt(iter, 1000000);
      size_t chunk = cl - fed < 5 ? cl - fed : 5;
      const uint8_t *in = c + fed;
      size_t inlen = chunk;
      uint8_t win[31];
      uint8_t *o = win;
      size_t ol = sizeof(win);
      r = compress_stream_process(st, &in, &inlen, &o, &ol, fed + chunk == cl);
      if (r < 0)
        ck_abort_msg("%s: %s", compress_method_name((compress_method_t)m),
                     compress_strerror(r));
      size_t k = sizeof(win) - ol;
      ck_assert_uint_le(got + k, n);
      memcpy(res + got, win, k);
      got += k;
      fed += chunk - inlen;
    }
    ck_assert_uint_eq(got, n);
    ck_assert(memcmp(res, t, n) == 0);
    ck_assert_uint_eq(compress_stream_total_in(st), cl);
    compress_stream_free(st);
    free(res);
    free(c);
  }
  free(t);
}
END_TEST

static int memacct_fired;
static void
on_over(void *arg)
{
  (void)arg;
  memacct_fired++;
}

/* Every coder's memory is in MEMACCT_COMPRESS while the stream lives (and
 * can fire the MaxMemInQueues trigger), and all of it is given back when
 * the stream is freed, one-shot calls included. */
START_TEST(test_memacct)
{
  memacct_reset_for_testing();
  size_t n = 200000;
  uint8_t *t = make_text(n, 5);
  for (int m = COMPRESS_ZLIB; m < COMPRESS_N_METHODS; m++) {
    const char *name = compress_method_name((compress_method_t)m);
    uint8_t *c = NULL, *d = NULL;
    size_t cl = 0, dl = 0;
    ck_assert_int_eq(compress_buf((compress_method_t)m, t, n, &c, &cl), 0);
    ck_assert_uint_eq(memacct_get(MEMACCT_COMPRESS), 0);
    ck_assert_int_eq(
        compress_uncompress((compress_method_t)m, c, cl, n, &d, &dl), 0);
    ck_assert_uint_eq(dl, n);
    ck_assert_uint_eq(memacct_get(MEMACCT_COMPRESS), 0);
    free(d);

    /* A decoder halfway through its input holds its window: counted. */
    memacct_fired = 0;
    memacct_set_trigger(1, on_over, NULL);
    compress_stream_t *st = compress_stream_new(0, (compress_method_t)m, n);
    uint8_t *out = malloc(n);
    const uint8_t *in = c;
    size_t inlen = cl / 2;
    uint8_t *o = out;
    size_t ol = n;
    ck_assert_int_eq(compress_stream_process(st, &in, &inlen, &o, &ol, 0),
                     COMPRESS_OK);
    uint64_t held = memacct_get(MEMACCT_COMPRESS);
    if (held < 32 * 1024)
      ck_abort_msg("%s decoder: %llu bytes counted", name,
                   (unsigned long long)held);
    ck_assert_uint_eq(memacct_total(), held);
    ck_assert_int_eq(memacct_fired, 1);
    compress_stream_free(st);
    ck_assert_uint_eq(memacct_get(MEMACCT_COMPRESS), 0);
    memacct_set_trigger(UINT64_MAX, NULL, NULL);

    /* The same for an encoder. */
    st = compress_stream_new(1, (compress_method_t)m, 0);
    in = t;
    inlen = n / 2;
    o = out;
    ol = n;
    ck_assert_int_eq(compress_stream_process(st, &in, &inlen, &o, &ol, 0),
                     COMPRESS_OK);
    if (memacct_get(MEMACCT_COMPRESS) < 32 * 1024)
      ck_abort_msg("%s encoder: %llu bytes counted", name,
                   (unsigned long long)memacct_get(MEMACCT_COMPRESS));
    compress_stream_free(st);
    ck_assert_uint_eq(memacct_get(MEMACCT_COMPRESS), 0);
    free(out);
    free(c);
  }
  ck_assert_uint_eq(memacct_underflows(), 0);
  free(t);
  memacct_reset_for_testing();
}
END_TEST

/* dir-spec 6.1: concatenated compressed documents decode like one. */
START_TEST(test_concat)
{
  uint8_t *d = NULL;
  size_t dl = 0;
  for (int m = COMPRESS_ZLIB; m < COMPRESS_N_METHODS; m++) {
    uint8_t *t1 = make_text(3000, 1), *t2 = make_text(5000, 2);
    uint8_t *c1 = NULL, *c2 = NULL;
    size_t l1 = 0, l2 = 0;
    ck_assert_int_eq(compress_buf((compress_method_t)m, t1, 3000, &c1, &l1),
                     0);
    ck_assert_int_eq(compress_buf((compress_method_t)m, t2, 5000, &c2, &l2),
                     0);
    uint8_t *cat = malloc(l1 + l2 + 8);
    memcpy(cat, c1, l1);
    memcpy(cat + l1, c2, l2);
    ck_assert_int_eq(compress_uncompress_concat((compress_method_t)m, cat,
                                                l1 + l2, 8000, &d, &dl),
                     0);
    ck_assert_uint_eq(dl, 8000);
    ck_assert(memcmp(d, t1, 3000) == 0 && memcmp(d + 3000, t2, 5000) == 0);
    ck_assert_int_eq(d[dl], 0);
    free(d);
    /* One stream alone is fine too; the plain function still refuses
     * the second stream as trailing data. */
    ck_assert_int_eq(compress_uncompress_concat((compress_method_t)m, c1, l1,
                                                3000, &d, &dl),
                     0);
    free(d);
    ck_assert_int_eq(compress_uncompress((compress_method_t)m, cat, l1 + l2,
                                         8000, &d, &dl),
                     COMPRESS_ERR_TRAILING);
    /* The cap is on the whole. */
    ck_assert_int_eq(compress_uncompress_concat((compress_method_t)m, cat,
                                                l1 + l2, 7999, &d, &dl),
                     COMPRESS_ERR_TOO_BIG);
    ck_assert_ptr_null(d);
    /* A cut second stream is truncated; junk after the first is not a
     * stream (lzma cannot always tell junk from a header: corrupt or
     * truncated, never success). */
    int r = compress_uncompress_concat((compress_method_t)m, cat,
                                       l1 + l2 - 5, 8000, &d, &dl);
    ck_assert_msg(r == COMPRESS_ERR_TRUNCATED || r == COMPRESS_ERR_CORRUPT,
                  "%s: cut second stream -> %d",
                  compress_method_name((compress_method_t)m), r);
    ck_assert_ptr_null(d);
    memcpy(cat + l1, "junk and more junk!", 19);
    r = compress_uncompress_concat((compress_method_t)m, cat, l1 + 19, 8000,
                                   &d, &dl);
    ck_assert_msg(r == COMPRESS_ERR_TRUNCATED || r == COMPRESS_ERR_CORRUPT,
                  "%s: junk after the stream -> %d",
                  compress_method_name((compress_method_t)m), r);
    ck_assert_ptr_null(d);
    free(cat);
    free(c1);
    free(c2);
    free(t1);
    free(t2);
  }
  /* Many small bombs, each below the size where the ratio is judged,
   * add up to one: the ratio applies to the totals. */
  uint8_t *zeros = calloc(1, 60000);
  uint8_t *c = NULL;
  size_t cl = 0;
  ck_assert_int_eq(compress_buf(COMPRESS_ZSTD, zeros, 60000, &c, &cl), 0);
  size_t n = 200;
  uint8_t *many = malloc(cl * n);
  for (size_t i = 0; i < n; i++)
    memcpy(many + i * cl, c, cl);
  ck_assert_int_eq(compress_uncompress_concat(COMPRESS_ZSTD, many, cl * n,
                                              64 * 1024 * 1024, &d, &dl),
                   COMPRESS_ERR_BOMB);
  ck_assert_ptr_null(d);
  free(many);
  free(c);
  free(zeros);
  /* identity and empty input behave as compress_uncompress. */
  ck_assert_int_eq(compress_uncompress_concat(COMPRESS_NONE,
                                              (const uint8_t *)"abc", 3, 3,
                                              &d, &dl),
                   0);
  ck_assert_str_eq((char *)d, "abc");
  free(d);
  ck_assert_int_eq(compress_uncompress_concat(COMPRESS_ZLIB,
                                              (const uint8_t *)"", 0, 3, &d,
                                              &dl),
                   COMPRESS_ERR_TRUNCATED);
}
END_TEST

START_TEST(test_negotiation)
{
  unsigned all = compress_parse_accept_encoding(compress_accept_encoding());
  for (int m = 0; m < COMPRESS_N_METHODS; m++)
    ck_assert(all & (1u << m));
  /* What a tor 0.4.9 client sends; spaces, case, q-values, unknowns. */
  unsigned t = compress_parse_accept_encoding(
      "identity, deflate, gzip, x-zstd, x-tor-lzma");
  ck_assert_uint_eq(t, all);
  ck_assert_int_eq(compress_choose(t, 1), COMPRESS_LZMA);
  ck_assert_int_eq(compress_choose(t, 0), COMPRESS_ZSTD);
  t = compress_parse_accept_encoding(" X-ZSTD;q=0.5 ,br,, deflate ");
  ck_assert_uint_eq(t, (1u << COMPRESS_NONE) | (1u << COMPRESS_ZSTD) |
                           (1u << COMPRESS_ZLIB));
  ck_assert_int_eq(compress_choose(t, 1), COMPRESS_ZSTD);
  t = compress_parse_accept_encoding("deflate");
  ck_assert_int_eq(compress_choose(t, 1), COMPRESS_ZLIB);
  ck_assert_int_eq(compress_choose(t, 0), COMPRESS_ZLIB);
  ck_assert_uint_eq(compress_parse_accept_encoding(NULL),
                    1u << COMPRESS_NONE);
  ck_assert_uint_eq(compress_parse_accept_encoding(""), 1u << COMPRESS_NONE);
  ck_assert_int_eq(compress_choose(compress_parse_accept_encoding(
                                       "x-tor-lzma-but-longer-than-32-chars"),
                                   1),
                   COMPRESS_NONE);
}
END_TEST

START_TEST(test_streaming)
{
  size_t n = 100000;
  uint8_t *t = make_text(n, 3);
  uint8_t *c = NULL;
  size_t cl = 0;
  ck_assert_int_eq(compress_buf(COMPRESS_GZIP, t, n, &c, &cl), 0);

  /* Decompress feeding 7 bytes at a time into a 13-byte window. */
  compress_stream_t *st = compress_stream_new(0, COMPRESS_GZIP, n);
  uint8_t *res = malloc(n);
  size_t got = 0, fed = 0;
  int r = COMPRESS_OK;
  for (int iter = 0; r != COMPRESS_DONE; iter++) {
    ck_assert_int_lt(iter, 100000); /* every call makes progress */
    size_t chunk = cl - fed < 7 ? cl - fed : 7;
    const uint8_t *in = c + fed;
    size_t inlen = chunk;
    uint8_t win[13];
    uint8_t *o = win;
    size_t ol = sizeof(win);
    r = compress_stream_process(st, &in, &inlen, &o, &ol, fed + chunk == cl);
    ck_assert_int_ge(r, 0);
    size_t k = sizeof(win) - ol;
    ck_assert_uint_le(got + k, n);
    memcpy(res + got, win, k);
    got += k;
    fed += chunk - inlen;
  }
  ck_assert_int_eq(r, COMPRESS_DONE);
  ck_assert_uint_eq(got, n);
  ck_assert(memcmp(res, t, n) == 0);
  ck_assert_uint_eq(compress_stream_total_out(st), n);
  ck_assert_uint_eq(compress_stream_total_in(st), cl);
  compress_stream_free(st);
  ck_assert_ptr_null(st);

  /* Compress in pieces, then decompress one-shot. */
  st = compress_stream_new(1, COMPRESS_ZLIB, 0);
  uint8_t *cc = malloc(n + 1000);
  uint8_t *o = cc;
  size_t ol = n + 1000;
  for (size_t off = 0; off < n; off += 1000) {
    const uint8_t *in = t + off;
    size_t inlen = 1000;
    r = compress_stream_process(st, &in, &inlen, &o, &ol, off + 1000 >= n);
    ck_assert_int_ge(r, 0);
    ck_assert_uint_eq(inlen, 0);
  }
  ck_assert_int_eq(r, COMPRESS_DONE);
  compress_stream_free(st);
  uint8_t *d = NULL;
  size_t dl = 0;
  ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, cc,
                                       (size_t)(o - cc), n, &d, &dl), 0);
  ck_assert_uint_eq(dl, n);
  ck_assert(memcmp(d, t, n) == 0);
  free(d);
  free(cc);

  /* A truncated stream reports TRUNCATED on finish. */
  st = compress_stream_new(0, COMPRESS_GZIP, n);
  const uint8_t *in = c;
  size_t inlen = cl / 2;
  do {
    uint8_t *ob = res;
    size_t obl = n;
    r = compress_stream_process(st, &in, &inlen, &ob, &obl, 1);
  } while (r == COMPRESS_OK);
  ck_assert_int_eq(r, COMPRESS_ERR_TRUNCATED);
  /* And stays failed. */
  {
    uint8_t *ob = res;
    size_t obl = n;
    ck_assert_int_eq(compress_stream_process(st, &in, &inlen, &ob, &obl, 1),
                     COMPRESS_ERR_TRUNCATED);
  }
  compress_stream_free(st);

  free(res);
  free(c);
  free(t);
}
END_TEST

START_TEST(test_names)
{
  ck_assert_str_eq(compress_method_name(COMPRESS_NONE), "identity");
  ck_assert_str_eq(compress_method_name(COMPRESS_ZLIB), "deflate");
  ck_assert_str_eq(compress_method_name(COMPRESS_GZIP), "gzip");
  ck_assert_ptr_null(compress_method_name((compress_method_t)9));
  ck_assert_int_eq(compress_method_from_name("deflate"), COMPRESS_ZLIB);
  ck_assert_int_eq(compress_method_from_name("x-gzip"), COMPRESS_GZIP);
  ck_assert_int_eq(compress_method_from_name("identity"), COMPRESS_NONE);
  ck_assert_str_eq(compress_method_name(COMPRESS_ZSTD), "x-zstd");
  ck_assert_str_eq(compress_method_name(COMPRESS_LZMA), "x-tor-lzma");
  ck_assert_int_eq(compress_method_from_name("x-zstd"), COMPRESS_ZSTD);
  ck_assert_int_eq(compress_method_from_name("x-tor-lzma"), COMPRESS_LZMA);
  ck_assert_int_eq(compress_method_from_name("Deflate"), COMPRESS_ZLIB);
  ck_assert_int_eq(compress_method_from_name("br"), -1);
  ck_assert_int_eq(compress_detect(zstd_vec, sizeof(zstd_vec)),
                   COMPRESS_ZSTD);
  ck_assert_int_eq(compress_detect(lzma_vec, sizeof(lzma_vec)),
                   COMPRESS_NONE);
  ck_assert_int_eq(compress_method_from_name(NULL), -1);
  ck_assert_int_eq(compress_detect(zlib_vec, sizeof(zlib_vec)),
                   COMPRESS_ZLIB);
  ck_assert_int_eq(compress_detect(zlib_stored_vec, 2), COMPRESS_ZLIB);
  ck_assert_int_eq(compress_detect(gzip_vec, sizeof(gzip_vec)),
                   COMPRESS_GZIP);
  ck_assert_int_eq(compress_detect((const uint8_t *)"network-status", 14),
                   COMPRESS_NONE);
  ck_assert_int_eq(compress_detect(zlib_vec, 1), COMPRESS_NONE);
  for (int code = -6; code <= 1; code++)
    ck_assert_ptr_nonnull(compress_strerror(code));
}
END_TEST

Suite *
suite_compress(void)
{
  Suite *s = suite_create("compress");
  TCase *tc = tcase_create("compress");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_known_answers);
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_cap);
  tcase_add_test(tc, test_bomb);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_malformed_zstd_lzma);
  tcase_add_test(tc, test_streaming);
  tcase_add_test(tc, test_streaming_all);
  tcase_add_test(tc, test_negotiation);
  tcase_add_test(tc, test_concat);
  tcase_add_test(tc, test_names);
  tcase_add_test(tc, test_memacct);
  suite_add_tcase(s, tc);
  return s;
}
