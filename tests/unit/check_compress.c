/* check_compress.c -- unit tests for lib/compress: known-answer inputs from
 * Python's zlib and gzip (tests/vectors/compress_vectors.py), round trips
 * in every method, the output cap (exact boundary), decompression bombs,
 * truncated / corrupted / trailing input, streaming in tiny pieces, method
 * names and detection. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compress/compress.h"

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
#define TEXT1 "network-status-version 3 microdesc\nvote-status consensus\n"
static const char vec_text[] = TEXT1 TEXT1 TEXT1;

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
}
END_TEST

START_TEST(test_roundtrip)
{
  size_t sizes[] = {0, 1, 100, 4096, 70000, 300000};
  for (int m = 0; m < 3; m++) {
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      uint8_t *t = make_text(sizes[k], (uint32_t)k);
      uint8_t *c = NULL, *d = NULL;
      size_t cl = 0, dl = 0;
      ck_assert_int_eq(compress_buf((compress_method_t)m, t, sizes[k], &c,
                                    &cl), 0);
      if (m != COMPRESS_NONE) {
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
  for (int m = 0; m < 3; m++) {
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
  ck_assert_int_eq(compress_method_from_name("x-zstd"), -1);
  ck_assert_int_eq(compress_method_from_name("x-tor-lzma"), -1);
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
  tcase_add_test(tc, test_streaming);
  tcase_add_test(tc, test_names);
  suite_add_tcase(s, tc);
  return s;
}
