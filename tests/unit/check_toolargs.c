/* SPDX-License-Identifier: BSD-3-Clause */
/* check_toolargs.c -- the test tools' "--name value" parser
 * (src/tools/common/toolargs.c): strings and numbers land in their
 * variables, options not given keep their defaults, a repeat wins, and an
 * unknown option, a missing value or a malformed number (trailing
 * garbage, a sign, empty, more than UINT_MAX) is refused. */
#include <check.h>
#include <limits.h>
#include <stdio.h>

#include "tools/common/toolargs.h"

Suite *suite_toolargs(void);

static const char *dir;
static unsigned count;

static int
parse(int argc, const char **argv)
{
  dir = NULL;
  count = 7; /* the default */
  const toolarg_t opts[] = {
    {"--datadir", TOOLARG_STR, &dir},
    {"--count", TOOLARG_UINT, &count},
    {NULL, TOOLARG_STR, NULL},
  };
  return toolargs_parse(argc, (char **)argv, opts);
}

START_TEST(test_values)
{
  const char *a[] = {"tool", "--count", "12", "--datadir", "/x"};
  ck_assert_int_eq(parse(5, a), 0);
  ck_assert_str_eq(dir, "/x");
  ck_assert_uint_eq(count, 12);
  const char *hex[] = {"tool", "--count", "0x30", "--count", "5"};
  ck_assert_int_eq(parse(5, hex), 0);
  ck_assert_uint_eq(count, 5); /* the last one wins */
  const char *big[] = {"tool", "--count", "4294967295"};
  ck_assert_int_eq(parse(3, big), 0);
  ck_assert_uint_eq(count, UINT_MAX);
}
END_TEST

START_TEST(test_defaults)
{
  const char *a[] = {"tool"};
  ck_assert_int_eq(parse(1, a), 0);
  ck_assert_ptr_null(dir);
  ck_assert_uint_eq(count, 7);
}
END_TEST

START_TEST(test_refused)
{
  static const char *bad[][3] = {
    {"tool", "--help", "x"},  {"tool", "--count", "5x"},
    {"tool", "--count", "-1"}, {"tool", "--count", ""},
    {"tool", "--count", "4294967296"},
    {"tool", "datadir", "/x"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ck_assert_msg(parse(3, bad[i]) == -1, "accepted %s %s", bad[i][1],
                  bad[i][2]);
    ck_assert_uint_eq(count, 7);
  }
  const char *missing[] = {"tool", "--datadir"};
  ck_assert_int_eq(parse(2, missing), -1);
  ck_assert_ptr_null(dir);
}
END_TEST

Suite *
suite_toolargs(void)
{
  Suite *s = suite_create("toolargs");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_values);
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  return s;
}
