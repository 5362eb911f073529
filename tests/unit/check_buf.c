/* SPDX-License-Identifier: BSD-3-Clause */
/* check_buf.c -- unit tests for lib/buf: basic FIFO behaviour, pullup
 * across chunk boundaries (including more than one chunk), tail
 * space/commit, move_all, find, and long random operation sequences
 * checked against a flat reference array. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf/buf.h"

Suite *suite_buf(void);

/* Small deterministic PRNG so failures reproduce. */
static uint64_t rng_state;
static uint32_t
rng(void)
{
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 33);
}

static void
fill_pattern(uint8_t *p, size_t n, size_t start)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)((start + i) * 131 + ((start + i) >> 8));
}

START_TEST(test_basic)
{
  buf_t *b = buf_new();
  uint8_t out[16];
  ck_assert_uint_eq(buf_datalen(b), 0);
  ck_assert_uint_eq(buf_allocation(b), 0);
  size_t len = 99;
  ck_assert_ptr_null(buf_head(b, &len));
  ck_assert_uint_eq(len, 0);
  buf_add(b, "hello ", 6);
  buf_add(b, "world", 5);
  ck_assert_uint_eq(buf_datalen(b), 11);
  ck_assert_uint_gt(buf_allocation(b), 0);
  buf_peek(b, out, 5);
  ck_assert_mem_eq(out, "hello", 5);
  ck_assert_uint_eq(buf_datalen(b), 11);
  buf_get(b, out, 6);
  ck_assert_mem_eq(out, "hello ", 6);
  ck_assert_mem_eq(buf_pullup(b, 5), "world", 5);
  const uint8_t *h = buf_head(b, &len);
  ck_assert_uint_eq(len, 5);
  ck_assert_mem_eq(h, "world", 5);
  buf_drain(b, 5);
  ck_assert_uint_eq(buf_datalen(b), 0);
  ck_assert_uint_eq(buf_allocation(b), 0); /* drained chunks are released */
  buf_add(b, "x", 1);
  buf_clear(b);
  ck_assert_uint_eq(buf_datalen(b), 0);
  ck_assert_uint_eq(buf_allocation(b), 0);
  buf_free(b);
  ck_assert_ptr_null(b);
  buf_free(b); /* NULL is fine */
}
END_TEST

START_TEST(test_pullup_across_chunks)
{
  /* 100 KiB added in odd-sized pieces, then pulled up in sizes that span
   * two, three and many chunks. */
  const size_t total = 100 * 1024;
  uint8_t *ref = malloc(total);
  fill_pattern(ref, total, 0);
  buf_t *b = buf_new();
  for (size_t off = 0; off < total;) {
    size_t n = 1 + (off * 7) % 3001;
    if (n > total - off)
      n = total - off;
    buf_add(b, ref + off, n);
    off += n;
  }
  ck_assert_uint_eq(buf_datalen(b), total);
  /* Spanning: misalign the head, then pull up more than a chunk. */
  buf_drain(b, 16000);
  const uint8_t *p = buf_pullup(b, 514);
  ck_assert_mem_eq(p, ref + 16000, 514);
  p = buf_pullup(b, 40000); /* bigger than one chunk */
  ck_assert_mem_eq(p, ref + 16000, 40000);
  size_t hl;
  buf_head(b, &hl);
  ck_assert_uint_ge(hl, 40000);
  buf_drain(b, 39999);
  p = buf_pullup(b, buf_datalen(b)); /* everything */
  ck_assert_uint_eq(buf_datalen(b), total - 16000 - 39999);
  ck_assert_mem_eq(p, ref + 16000 + 39999, buf_datalen(b));
  buf_free(b);
  free(ref);
}
END_TEST

START_TEST(test_cells_across_boundary)
{
  /* The relay pattern: data arrives in 16 KiB reads into the tail, is
   * consumed as 514-byte cells. Every cell must come out intact. */
  buf_t *b = buf_new();
  const size_t total = 514 * 1000;
  uint8_t *ref = malloc(total);
  fill_pattern(ref, total, 5);
  size_t in = 0, out = 0;
  while (out < total) {
    if (in < total) {
      size_t avail;
      uint8_t *t = buf_tail_space(b, 1024, &avail);
      ck_assert_uint_ge(avail, 1024);
      size_t n = avail < 16384 ? avail : 16384;
      if (n > total - in)
        n = total - in;
      memcpy(t, ref + in, n);
      buf_commit(b, n);
      in += n;
    }
    while (buf_datalen(b) >= 514) {
      ck_assert_mem_eq(buf_pullup(b, 514), ref + out, 514);
      buf_drain(b, 514);
      out += 514;
    }
  }
  ck_assert_uint_eq(buf_datalen(b), 0);
  buf_free(b);
  free(ref);
}
END_TEST

START_TEST(test_add_unsplit)
{
  /* Cells added whole: 31 to a 16 KiB chunk, so the head is always a run
   * of whole cells (one full TLS record), and the bytes are unchanged. */
  buf_t *b = buf_new();
  const size_t ncells = 100, total = 514 * ncells;
  uint8_t *ref = malloc(total);
  fill_pattern(ref, total, 9);
  for (size_t i = 0; i < ncells; i++)
    buf_add_unsplit(b, ref + 514 * i, 514);
  ck_assert_uint_eq(buf_datalen(b), total);
  size_t out = 0, len;
  while (buf_datalen(b)) {
    const uint8_t *h = buf_head(b, &len);
    ck_assert_uint_eq(len % 514, 0);
    ck_assert_uint_eq(len, out + 31 * 514 <= total ? 31 * 514 : total - out);
    ck_assert_mem_eq(h, ref + out, len);
    buf_drain(b, len);
    out += len;
  }
  ck_assert_uint_eq(out, total);
  /* After a partial drain the tail still fills up whole; a piece larger
   * than a chunk is split as buf_add() does. */
  buf_add_unsplit(b, ref, 514);
  buf_add_unsplit(b, ref, 300);
  buf_head(b, &len);
  ck_assert_uint_eq(len, 814);
  uint8_t *big = malloc(40000);
  fill_pattern(big, 40000, 3);
  buf_add_unsplit(b, big, 40000);
  ck_assert_uint_eq(buf_datalen(b), 40814);
  uint8_t *back = malloc(40814);
  buf_get(b, back, 40814);
  ck_assert_mem_eq(back, ref, 514);
  ck_assert_mem_eq(back + 514, ref, 300);
  ck_assert_mem_eq(back + 814, big, 40000);
  free(back);
  free(big);
  buf_free(b);
  free(ref);
}
END_TEST

START_TEST(test_tail_space)
{
  buf_t *b = buf_new();
  size_t avail;
  uint8_t *t = buf_tail_space(b, 10, &avail);
  ck_assert_uint_ge(avail, 10);
  buf_commit(b, 0); /* nothing read (EAGAIN) */
  ck_assert_uint_eq(buf_datalen(b), 0);
  memcpy(t, "abc", 3);
  buf_commit(b, 3);
  ck_assert_uint_eq(buf_datalen(b), 3);
  /* More than a standard chunk at once. */
  t = buf_tail_space(b, 100000, &avail);
  ck_assert_uint_ge(avail, 100000);
  memset(t, 'z', 100000);
  buf_commit(b, 100000);
  ck_assert_uint_eq(buf_datalen(b), 100003);
  uint8_t tmp[5];
  buf_get(b, tmp, 5);
  ck_assert_mem_eq(tmp, "abczz", 5);
  /* Reserved-but-unused tail followed by move_all and drain. */
  buf_tail_space(b, 20000, &avail);
  buf_t *c = buf_new();
  buf_add(c, "tail", 4);
  buf_move_all(b, c);
  ck_assert_uint_eq(buf_datalen(c), 0);
  ck_assert_uint_eq(buf_allocation(c), 0);
  ck_assert_uint_eq(buf_datalen(b), 100002);
  buf_drain(b, 99998);
  buf_get(b, tmp, 4);
  ck_assert_mem_eq(tmp, "tail", 4);
  ck_assert_uint_eq(buf_allocation(b), 0);
  buf_free(b);
  buf_free(c);
}
END_TEST

START_TEST(test_move_all)
{
  buf_t *a = buf_new(), *b = buf_new();
  uint8_t big[50000], out[50010];
  fill_pattern(big, sizeof(big), 9);
  buf_add(a, "12345", 5);
  buf_add(b, big, sizeof(big)); /* linked, not copied */
  buf_move_all(a, b);
  ck_assert_uint_eq(buf_datalen(a), 50005);
  ck_assert_uint_eq(buf_datalen(b), 0);
  ck_assert_uint_eq(buf_allocation(b), 0);
  buf_add(b, "xyz", 3); /* small: copied into a's tail */
  buf_move_all(a, b);
  buf_move_all(a, b); /* empty src */
  buf_move_all(a, a); /* self: no-op */
  ck_assert_uint_eq(buf_datalen(a), 50008);
  buf_get(a, out, 50008);
  ck_assert_mem_eq(out, "12345", 5);
  ck_assert_mem_eq(out + 5, big, sizeof(big));
  ck_assert_mem_eq(out + 50005, "xyz", 3);
  buf_free(a);
  buf_free(b);
}
END_TEST

START_TEST(test_find)
{
  buf_t *b = buf_new();
  ck_assert_int_eq(buf_find(b, "x", 1), -1);
  ck_assert_int_eq(buf_find(b, "", 0), 0);
  /* Put "\r\n\r\n" across a chunk boundary: fill one chunk exactly. */
  size_t avail;
  buf_tail_space(b, 1, &avail);
  uint8_t *filler = malloc(avail);
  memset(filler, 'a', avail);
  buf_add(b, filler, avail - 2);
  buf_add(b, "\r\n\r\nBODY", 8);
  ck_assert_int_eq(buf_find(b, "\r\n\r\n", 4), (long)(avail - 2));
  ck_assert_int_eq(buf_find(b, "BODY", 4), (long)(avail + 2));
  ck_assert_int_eq(buf_find(b, "BODYX", 5), -1);
  ck_assert_int_eq(buf_find(b, "aaa", 3), 0);
  ck_assert_int_eq(buf_find(b, "a\r", 2), (long)(avail - 3));
  ck_assert_int_eq(buf_find(b, "Y", 1), (long)(avail + 5));
  buf_drain(b, avail - 1);
  ck_assert_int_eq(buf_find(b, "\r\n\r\n", 4), -1);
  ck_assert_int_eq(buf_find(b, "\n\r\n", 3), 0);
  buf_free(b);
  free(filler);
}
END_TEST

START_TEST(test_random_vs_reference)
{
  /* Random add/tail-commit/drain/get/pullup/move sequences; a flat array
   * holds what the buffer must contain. */
  rng_state = 0x5eed0000ULL + (uint64_t)_i;
  const size_t refcap = 1 << 20;
  uint8_t *ref = malloc(refcap), *tmp = malloc(refcap);
  size_t rstart = 0, rlen = 0, counter = 0;
  buf_t *b = buf_new(), *other = buf_new();
  for (int step = 0; step < 4000; step++) {
    if (rstart > refcap / 2) {
      memmove(ref, ref + rstart, rlen);
      rstart = 0;
    }
    uint32_t op = rng() % 7;
    size_t n = rng() % (rng() % 4 == 0 ? 40000 : 1100);
    if (rstart + rlen + n > refcap)
      op = 2;
    switch (op) {
    case 0: /* add */
      fill_pattern(ref + rstart + rlen, n, counter);
      buf_add(b, ref + rstart + rlen, n);
      rlen += n;
      counter += n;
      break;
    case 1: { /* read into the tail */
      size_t avail;
      uint8_t *t = buf_tail_space(b, n % 5000, &avail);
      ck_assert_uint_ge(avail, n % 5000 ? n % 5000 : 1);
      size_t k = n < avail ? n : avail;
      fill_pattern(ref + rstart + rlen, k, counter);
      memcpy(t, ref + rstart + rlen, k);
      buf_commit(b, k);
      rlen += k;
      counter += k;
      break;
    }
    case 2: /* drain */
      if (n > rlen)
        n = rlen;
      buf_drain(b, n);
      rstart += n;
      rlen -= n;
      break;
    case 3: /* get */
      if (n > rlen)
        n = rlen;
      buf_get(b, tmp, n);
      ck_assert_mem_eq(tmp, ref + rstart, n);
      rstart += n;
      rlen -= n;
      break;
    case 4: /* pullup */
      if (n > rlen)
        n = rlen;
      ck_assert_mem_eq(buf_pullup(b, n), ref + rstart, n);
      break;
    case 5: { /* head */
      size_t hl;
      const uint8_t *h = buf_head(b, &hl);
      ck_assert_uint_le(hl, rlen);
      if (rlen)
        ck_assert_uint_gt(hl, 0);
      if (hl)
        ck_assert_mem_eq(h, ref + rstart, hl);
      break;
    }
    case 6: /* move through another buffer */
      buf_move_all(other, b);
      ck_assert_uint_eq(buf_datalen(b), 0);
      buf_move_all(b, other);
      break;
    }
    ck_assert_uint_eq(buf_datalen(b), rlen);
    if (rlen == 0 && (op == 2 || op == 3))
      ck_assert_uint_eq(buf_allocation(b), 0);
  }
  buf_peek(b, tmp, rlen);
  ck_assert_mem_eq(tmp, ref + rstart, rlen);
  buf_free(b);
  buf_free(other);
  free(ref);
  free(tmp);
}
END_TEST

static uint64_t fake_us;

static uint64_t
fake_clock(void)
{
  return fake_us;
}

/* The age of the oldest byte (for the OOM handler): the time stamp of the
 * head chunk, kept by pullup and move, gone when the buffer is empty. */
START_TEST(test_oldest_us)
{
  static uint8_t junk[20000];
  buf_t *b = buf_new(), *c = buf_new();
  ck_assert_uint_eq(buf_oldest_us(b), UINT64_MAX);
  buf_set_clock_for_testing(fake_clock);
  fake_us = 100;
  buf_add(b, junk, 16384); /* exactly one chunk */
  fake_us = 200;
  buf_add(b, junk, 1000); /* a second chunk, stamped later */
  ck_assert_uint_eq(buf_oldest_us(b), 100);
  buf_drain(b, 16384);
  ck_assert_uint_eq(buf_oldest_us(b), 200);
  fake_us = 300;
  buf_add(c, junk, sizeof(junk));
  buf_pullup(c, 18000); /* a bigger head chunk replaces the first */
  ck_assert_uint_eq(buf_oldest_us(c), 300);
  buf_move_all(b, c);
  ck_assert_uint_eq(buf_oldest_us(b), 200);
  ck_assert_uint_eq(buf_oldest_us(c), UINT64_MAX);
  buf_drain(b, buf_datalen(b));
  ck_assert_uint_eq(buf_oldest_us(b), UINT64_MAX);
  buf_set_clock_for_testing(NULL);
  buf_free(b);
  buf_free(c);
}
END_TEST

Suite *
suite_buf(void)
{
  Suite *s = suite_create("buf");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_basic);
  tcase_add_test(tc, test_pullup_across_chunks);
  tcase_add_test(tc, test_cells_across_boundary);
  tcase_add_test(tc, test_add_unsplit);
  tcase_add_test(tc, test_tail_space);
  tcase_add_test(tc, test_move_all);
  tcase_add_test(tc, test_find);
  tcase_add_test(tc, test_oldest_us);
  tcase_add_loop_test(tc, test_random_vs_reference, 0, 8);
  suite_add_tcase(s, tc);
  return s;
}
