/* SPDX-License-Identifier: BSD-3-Clause */
/* check_strbuf.c -- unit tests for lib/string/strbuf: appends that fit
 * and that grow the buffer, the empty append that makes an empty string,
 * long texts built in many pieces compared with a reference, and raw
 * appends (strbuf_addn, strbuf_add, strbuf_addc) and strbuf_take. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/string/strbuf.h"

Suite *suite_strbuf(void);

START_TEST(test_strbuf_basic)
{
  strbuf_t b = {0};
  ck_assert_ptr_null(b.s);
  strbuf_addf(&b, "%s", "");
  ck_assert_ptr_nonnull(b.s);
  ck_assert_str_eq(b.s, "");
  ck_assert_uint_eq(b.len, 0);
  strbuf_addf(&b, "r %s %d", "nick", 42);
  strbuf_addf(&b, "%c", '\n');
  ck_assert_str_eq(b.s, "r nick 42\n");
  ck_assert_uint_eq(b.len, strlen(b.s));
  ck_assert_uint_gt(b.cap, b.len);
  free(b.s);
}
END_TEST

START_TEST(test_strbuf_many_pieces)
{
  strbuf_t b = {0};
  char *ref = calloc(1, 200000);
  size_t rlen = 0;
  for (int i = 0; i < 5000; i++) {
    /* Pieces of varying length, some longer than the spare room. */
    char piece[64];
    int n = snprintf(piece, sizeof(piece), "%d:%.*s;", i, i % 40,
                     "0123456789012345678901234567890123456789");
    memcpy(ref + rlen, piece, (size_t)n + 1);
    rlen += (size_t)n;
    strbuf_addf(&b, "%d:%.*s;", i, i % 40,
                "0123456789012345678901234567890123456789");
    ck_assert_uint_eq(b.len, rlen);
  }
  ck_assert_str_eq(b.s, ref);
  char big[3000];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  strbuf_addf(&b, "%s", big);
  ck_assert_uint_eq(b.len, rlen + sizeof(big) - 1);
  ck_assert_str_eq(b.s + rlen, big);
  free(ref);
  free(b.s);
}
END_TEST

/* strbuf_addn / strbuf_add: raw bytes, the empty append, growth past the
 * first allocation, mixed with strbuf_addf. */
START_TEST(test_strbuf_addn)
{
  strbuf_t b = {0};
  strbuf_addn(&b, "", 0);
  ck_assert_ptr_nonnull(b.s);
  ck_assert_str_eq(b.s, "");
  strbuf_addn(&b, "abcdef", 3);
  strbuf_add(&b, "-");
  strbuf_addf(&b, "%d", 7);
  ck_assert_str_eq(b.s, "abc-7");
  ck_assert_uint_eq(b.len, 5);
  char big[1000];
  memset(big, 'y', sizeof(big));
  for (int i = 0; i < 50; i++)
    strbuf_addn(&b, big, sizeof(big));
  ck_assert_uint_eq(b.len, 5 + 50 * sizeof(big));
  ck_assert_uint_eq(strlen(b.s), b.len);
  ck_assert_int_eq(b.s[b.len - 1], 'y');
  free(b.s);
}
END_TEST

/* strbuf_addc and strbuf_take: the text handed over, the buffer empty
 * again; taking from an empty buffer gives "". */
START_TEST(test_strbuf_addc_take)
{
  strbuf_t b = {0};
  char *t = strbuf_take(&b);
  ck_assert_str_eq(t, "");
  free(t);
  for (int i = 0; i < 200; i++)
    strbuf_addc(&b, (char)('a' + i % 26));
  ck_assert_uint_eq(b.len, 200);
  ck_assert_int_eq(b.s[25], 'z');
  ck_assert_int_eq(b.s[200], '\0');
  t = strbuf_take(&b);
  ck_assert_ptr_null(b.s);
  ck_assert_uint_eq(b.len, 0);
  ck_assert_uint_eq(b.cap, 0);
  ck_assert_uint_eq(strlen(t), 200);
  free(t);
}
END_TEST

Suite *
suite_strbuf(void)
{
  Suite *s = suite_create("strbuf");
  TCase *tc = tcase_create("strbuf");
  tcase_add_test(tc, test_strbuf_basic);
  tcase_add_test(tc, test_strbuf_many_pieces);
  tcase_add_test(tc, test_strbuf_addn);
  tcase_add_test(tc, test_strbuf_addc_take);
  suite_add_tcase(s, tc);
  return s;
}
