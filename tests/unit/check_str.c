/* SPDX-License-Identifier: BSD-3-Clause */
/* check_str.c -- lib/string/str.h: NULL-safe string equality. */
#include <check.h>

#include "lib/string/str.h"

Suite *suite_str(void);

START_TEST(test_eq_nullable)
{
  char a[] = "geoip", b[] = "geoip";
  ck_assert_int_eq(str_eq_nullable(NULL, NULL), 1);
  ck_assert_int_eq(str_eq_nullable(a, b), 1); /* equal bytes, two copies */
  ck_assert_int_eq(str_eq_nullable(a, a), 1);
  ck_assert_int_eq(str_eq_nullable(NULL, ""), 0);
  ck_assert_int_eq(str_eq_nullable("", NULL), 0);
  ck_assert_int_eq(str_eq_nullable(a, NULL), 0);
  ck_assert_int_eq(str_eq_nullable("", ""), 1);
  ck_assert_int_eq(str_eq_nullable("geoip", "geoip6"), 0);
  ck_assert_int_eq(str_eq_nullable("geoip6", "geoip"), 0);
}
END_TEST

Suite *
suite_str(void)
{
  Suite *s = suite_create("str");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_eq_nullable);
  suite_add_tcase(s, tc);
  return s;
}
