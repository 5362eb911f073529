/* SPDX-License-Identifier: BSD-3-Clause */
/* check_geoip.c -- unit tests for feature/geoip: tor's GeoIP formats,
 * lookups at range edges, refusals of malformed files, and (when
 * Debian's tor-geoipdb is installed) the real files. */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feature/geoip/geoip.h"
#include "lib/address/address.h"

Suite *suite_geoip(void);

static const char *
cc_of(const geoip_db_t *db, const char *ip)
{
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse_ip(&a, ip, 0), 0);
  return geoip_db_country(db, &a);
}

START_TEST(test_ipv4_ranges)
{
  geoip_db_t *db = geoip_db_new();
  char *err = NULL;
  /* 1.0.0.0-1.0.0.255 AU, 1.0.1.0-1.0.3.255 CN, 2.0.0.0-2.0.0.9 ?? */
  const char *text = "# comment\n"
                     "16777216,16777471,AU\n"
                     "16777472,16778239,cn\r\n"
                     "\n"
                     "33554432,33554441,??\n";
  ck_assert(!geoip_db_has(db, AF_INET));
  ck_assert_int_eq(geoip_db_load_text(db, AF_INET, text, strlen(text), &err),
                   3);
  ck_assert(geoip_db_has(db, AF_INET));
  ck_assert(!geoip_db_has(db, AF_INET6));
  ck_assert_str_eq(cc_of(db, "1.0.0.0"), "au");
  ck_assert_str_eq(cc_of(db, "1.0.0.255"), "au");
  ck_assert_str_eq(cc_of(db, "1.0.1.0"), "cn");
  ck_assert_str_eq(cc_of(db, "1.0.3.255"), "cn");
  ck_assert_str_eq(cc_of(db, "1.0.4.0"), "??");   /* a gap */
  ck_assert_str_eq(cc_of(db, "0.255.255.255"), "??"); /* before all */
  ck_assert_str_eq(cc_of(db, "2.0.0.5"), "??");   /* "??" in the file */
  ck_assert_str_eq(cc_of(db, "255.255.255.255"), "??");
  ck_assert_str_eq(cc_of(db, "2001:db8::1"), "??"); /* no IPv6 loaded */
  geoip_db_free(db);
  ck_assert_ptr_null(db);
}
END_TEST

START_TEST(test_ipv6_ranges)
{
  geoip_db_t *db = geoip_db_new();
  char *err = NULL;
  const char *text = "2001:2::,2001:2:0:ffff:ffff:ffff:ffff:ffff,JP\n"
                     "2001:4:112::,2001:4:112:ffff:ffff:ffff:ffff:ffff,US\n";
  ck_assert_int_eq(geoip_db_load_text(db, AF_INET6, text, strlen(text),
                                      &err), 2);
  ck_assert_str_eq(cc_of(db, "2001:2::1"), "jp");
  ck_assert_str_eq(cc_of(db, "2001:4:112:ffff::"), "us");
  ck_assert_str_eq(cc_of(db, "2001:4:113::"), "??");
  ck_assert_str_eq(cc_of(db, "::1"), "??");
  geoip_db_free(db);
}
END_TEST

/* A malformed file is refused whole, with its line, and the ranges
 * loaded before stay. */
START_TEST(test_refusals)
{
  geoip_db_t *db = geoip_db_new();
  char *err = NULL;
  const char *good = "16777216,16777471,AU\n";
  ck_assert_int_eq(geoip_db_load_text(db, AF_INET, good, strlen(good), &err),
                   1);
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"16777216,16777471\n", "line 1"},
      {"1,2,AU\nx,4,DE\n", "line 2"},
      {"5,4,AU\n", "ends before it starts"},
      {"10,20,AU\n15,30,DE\n", "not sorted or overlap"},
      {"10,20,AU\n1,5,DE\n", "not sorted or overlap"},
      {"1,4294967296,AU\n", "line 1"},
      {"1,2,DEU\n", "country code"},
      {"1,2,1!\n", "country code"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ck_assert_int_eq(geoip_db_load_text(db, AF_INET, bad[i].text,
                                        strlen(bad[i].text), &err), -1);
    ck_assert_msg(err && strstr(err, bad[i].why), "%s: %s", bad[i].text,
                  err ? err : "(null)");
    free(err);
    err = NULL;
  }
  ck_assert_int_eq(geoip_db_load_text(db, AF_INET6, "1.2.3.4,5.6.7.8,AU\n",
                                      19, &err), -1);
  free(err);
  err = NULL;
  ck_assert_str_eq(cc_of(db, "1.0.0.1"), "au");
  ck_assert_int_eq(geoip_db_load(db, AF_INET, "/nonexistent/geoip", &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/geoip"));
  free(err);
  geoip_db_free(db);
}
END_TEST

/* Debian's tor-geoipdb files (installed by scripts/install-deps). */
START_TEST(test_debian_files)
{
  const char *v4 = "/usr/share/tor/geoip", *v6 = "/usr/share/tor/geoip6";
  if (access(v4, R_OK) != 0 || access(v6, R_OK) != 0) {
    fprintf(stderr, "check_geoip: tor-geoipdb is not installed; real files "
                    "not tested\n");
    return;
  }
  geoip_db_t *db = geoip_db_new();
  char *err = NULL;
  ck_assert_int_gt(geoip_db_load(db, AF_INET, v4, &err), 100000);
  ck_assert_int_gt(geoip_db_load(db, AF_INET6, v6, &err), 100000);
  /* Addresses that stay in their country across database versions:
   * private and documentation ranges are not in the files. */
  ck_assert_str_eq(cc_of(db, "10.1.2.3"), "??");
  ck_assert_str_eq(cc_of(db, "127.0.0.1"), "??");
  ck_assert_str_eq(cc_of(db, "2001:db8::1"), "??");
  /* 1.0.0.1 is in APNIC's Australian test range (first line of the file). */
  ck_assert_str_eq(cc_of(db, "1.0.0.1"), "au");
  geoip_db_free(db);
}
END_TEST

Suite *
suite_geoip(void)
{
  Suite *s = suite_create("geoip");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_ipv4_ranges);
  tcase_add_test(tc, test_ipv6_ranges);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_debian_files);
  suite_add_tcase(s, tc);
  return s;
}
