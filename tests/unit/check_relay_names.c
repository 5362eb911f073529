/* SPDX-License-Identifier: BSD-3-Clause */
/* check_relay_names.c -- unit tests for lib/string/relay_names: nickname
 * bounds and alphabet (including bytes above 127), fingerprint entries
 * with and without a name, and family normalisation of fingerprints,
 * nicknames and entries that are neither. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/string/relay_names.h"

Suite *suite_relay_names(void);

#define FP_LOWER "0123456789abcdef0123456789abcdef01234567"
#define FP_UPPER "0123456789ABCDEF0123456789ABCDEF01234567"

static int
nick(const char *s)
{
  return pc_nickname_ok(s, strlen(s));
}

START_TEST(test_nickname)
{
  ck_assert(nick("a"));
  ck_assert(nick("Relay0"));
  ck_assert(nick("abcdefghijklmnopqrs")); /* 19 */
  ck_assert(!nick(""));
  ck_assert(!nick("abcdefghijklmnopqrst")); /* 20 */
  ck_assert(!nick("re-lay"));
  ck_assert(!nick("re lay"));
  ck_assert(!nick("caf\xc3\xa9"));
  ck_assert(!nick("$AB"));
  /* only the given length counts */
  ck_assert(pc_nickname_ok("abc def", 3));
}
END_TEST

START_TEST(test_hex_and_fingerprint)
{
  ck_assert(pc_hex_ok(FP_LOWER, 40));
  ck_assert(pc_hex_ok(FP_UPPER, 40));
  ck_assert(pc_hex_ok("", 0));
  ck_assert(!pc_hex_ok("0g", 2));
  ck_assert(!pc_hex_ok("0\0", 2));
  const char *ok[] = {"$" FP_LOWER, "$" FP_UPPER "~nick", "$" FP_UPPER "=x"};
  for (size_t i = 0; i < 3; i++)
    ck_assert_msg(pc_fingerprint_entry_ok(ok[i], strlen(ok[i])), "%s", ok[i]);
  const char *bad[] = {FP_UPPER, "$" FP_UPPER "x", "$0123", "$" FP_UPPER};
  for (size_t i = 0; i < 3; i++)
    ck_assert_msg(!pc_fingerprint_entry_ok(bad[i], strlen(bad[i])), "%s",
                  bad[i]);
  /* length shorter than the text: not 40 digits */
  ck_assert(!pc_fingerprint_entry_ok(bad[3], 40));
  char h[] = "09afAFxz";
  pc_hex_upper(h, strlen(h));
  ck_assert_str_eq(h, "09AFAFxz");
}
END_TEST

static void
norm_is(const char *in, const char *want)
{
  char *got = pc_family_normalise(in, strlen(in));
  ck_assert_str_eq(got, want);
  free(got);
}

START_TEST(test_family_normalise)
{
  norm_is("$" FP_LOWER, "$" FP_UPPER);
  norm_is("$" FP_LOWER "~Nick", "$" FP_UPPER);
  norm_is("$" FP_UPPER "=Nick", "$" FP_UPPER);
  norm_is("MyRelay", "myrelay");
  /* neither: kept as is */
  norm_is("$" FP_LOWER "x", "$" FP_LOWER "x");
  norm_is("Not-A-Nick", "Not-A-Nick");
  norm_is("ABCDEFGHIJKLMNOPQRST", "ABCDEFGHIJKLMNOPQRST");
  /* only len bytes are read */
  char *got = pc_family_normalise("AbC trailing", 3);
  ck_assert_str_eq(got, "abc");
  free(got);
}
END_TEST

Suite *
suite_relay_names(void)
{
  Suite *s = suite_create("relay_names");
  TCase *tc = tcase_create("relay_names");
  tcase_add_test(tc, test_nickname);
  tcase_add_test(tc, test_hex_and_fingerprint);
  tcase_add_test(tc, test_family_normalise);
  suite_add_tcase(s, tc);
  return s;
}
