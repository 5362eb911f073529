/* SPDX-License-Identifier: BSD-3-Clause */
/* check_addrmap.c -- unit tests for feature/client/addrmap (MAPADDRESS):
 * mapping and rewriting without case, removal by mapping an address to
 * itself, virtual addresses of each kind (in their ranges, distinct,
 * reused for the same target), chains and loops, invalid addresses, the
 * size bound, a buffer too small, and clearing. */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/addrmap.h"

Suite *suite_addrmap(void);

/* addrmap_set that must succeed; returns the mapped address (static). */
static const char *
set_ok(addrmap_t *m, const char *from, const char *to)
{
  static char out[300];
  char *f = NULL, *err = NULL;
  int r = addrmap_set(m, from, to, &f, &err);
  ck_assert_msg(r == 0, "%s=%s: %s", from, to, err ? err : "?");
  ck_assert_ptr_null(err);
  snprintf(out, sizeof(out), "%s", f);
  free(f);
  return out;
}

static int
set_err(addrmap_t *m, const char *from, const char *to, const char *want)
{
  char *f = NULL, *err = NULL;
  int r = addrmap_set(m, from, to, &f, &err);
  ck_assert_int_lt(r, 0);
  ck_assert_ptr_null(f);
  ck_assert_ptr_nonnull(err);
  ck_assert_msg(strstr(err, want) != NULL, "%s", err);
  free(err);
  return r;
}

START_TEST(test_map_rewrite_remove)
{
  addrmap_t *m = addrmap_new();
  char a[256] = "Example.ORG";
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 0);
  ck_assert_str_eq(set_ok(m, "example.org", "127.0.0.1"), "example.org");
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 1);
  ck_assert_str_eq(a, "127.0.0.1");
  /* replaced */
  set_ok(m, "EXAMPLE.org", "www.example.net");
  strcpy(a, "example.org");
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 1);
  ck_assert_str_eq(a, "www.example.net");
  ck_assert_uint_eq(addrmap_size(m), 1);
  /* a buffer too small: unchanged, -1 */
  char small[8] = "example";
  set_ok(m, "example", "much-longer-name.example");
  ck_assert_int_eq(addrmap_rewrite(m, small, sizeof(small)), -1);
  ck_assert_str_eq(small, "example");
  /* removed by mapping to itself */
  ck_assert_str_eq(set_ok(m, "example.org", "example.org"), "example.org");
  strcpy(a, "example.org");
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 0);
  ck_assert_uint_eq(addrmap_size(m), 1);
  addrmap_clear(m);
  ck_assert_uint_eq(addrmap_size(m), 0);
  addrmap_free(m);
  ck_assert_ptr_null(m);
}
END_TEST

START_TEST(test_virtual)
{
  addrmap_t *m = addrmap_new();
  char v4[64], v4b[64], v6[64], vh[64], a[256];
  snprintf(v4, sizeof(v4), "%s", set_ok(m, "0.0.0.0", "one.example"));
  struct in_addr ia;
  ck_assert_int_eq(inet_pton(AF_INET, v4, &ia), 1);
  uint32_t h = ntohl(ia.s_addr);
  ck_assert_uint_eq(h >> 22, (127u << 2) | 3u); /* 127.192.0.0/10 */
  /* the same target: the same address; another target: another */
  ck_assert_str_eq(set_ok(m, "0.0.0.0", "ONE.example"), v4);
  snprintf(v4b, sizeof(v4b), "%s", set_ok(m, "0.0.0.0", "two.example"));
  ck_assert_str_ne(v4b, v4);
  snprintf(v6, sizeof(v6), "%s", set_ok(m, "::0", "one.example"));
  struct in6_addr i6;
  ck_assert_int_eq(inet_pton(AF_INET6, v6, &i6), 1);
  ck_assert_uint_eq(i6.s6_addr[0], 0xfe);
  ck_assert_uint_eq(i6.s6_addr[1] & 0xc0, 0x80); /* fe80::/10 */
  snprintf(vh, sizeof(vh), "%s", set_ok(m, ".", "one.example"));
  ck_assert_uint_eq(strlen(vh), 16 + strlen(".virtual"));
  ck_assert_str_eq(vh + 16, ".virtual");
  ck_assert_uint_eq(addrmap_size(m), 4);
  snprintf(a, sizeof(a), "%s", vh);
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 1);
  ck_assert_str_eq(a, "one.example");
  /* A virtual address removed: a new one for its target afterwards. */
  set_ok(m, v4, v4);
  char again[64];
  snprintf(again, sizeof(again), "%s", set_ok(m, "0.0.0.0", "one.example"));
  snprintf(a, sizeof(a), "%s", again);
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 1);
  ck_assert_str_eq(a, "one.example");
  /* Replacing a virtual address's mapping drops its reuse too. */
  set_ok(m, again, "three.example");
  ck_assert_str_ne(set_ok(m, "0.0.0.0", "one.example"), again);
  addrmap_free(m);
}
END_TEST

START_TEST(test_chains_and_bad_input)
{
  addrmap_t *m = addrmap_new();
  char a[256];
  set_ok(m, "a.example", "b.example");
  set_ok(m, "b.example", "c.example");
  strcpy(a, "a.example");
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), 1);
  ck_assert_str_eq(a, "c.example");
  set_ok(m, "c.example", "a.example"); /* a loop */
  strcpy(a, "a.example");
  ck_assert_int_eq(addrmap_rewrite(m, a, sizeof(a)), -1);
  ck_assert_str_eq(a, "a.example");
  ck_assert_int_eq(set_err(m, "@@@", "x.example", "invalid address '@@@'"),
                   -1);
  set_err(m, "x.example", "bad host", "invalid address 'bad host'");
  set_err(m, "x.example", "a..b", "invalid address");
  set_err(m, "x.example", "", "invalid address");
  char longname[300];
  memset(longname, 'a', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = 0;
  set_err(m, longname, "x.example", "invalid address");
  ck_assert_int_eq(addrmap_address_ok("2001:db8::1"), 1);
  ck_assert_int_eq(addrmap_address_ok("192.0.2.1"), 1);
  ck_assert_int_eq(addrmap_address_ok("under_score-ok.example"), 1);
  ck_assert_int_eq(addrmap_address_ok("semi;colon"), 0);
  /* SOCKS's rule (socks_hostname_is_valid()): what a SocksPort would
   * refuse as a target cannot be mapped either */
  ck_assert_int_eq(addrmap_address_ok("-lead.example"), 0);
  ck_assert_int_eq(addrmap_address_ok("ok._under.example"), 0);
  ck_assert_int_eq(addrmap_address_ok("fqdn.example."), 1);
  ck_assert_int_eq(addrmap_address_ok("fqdn.example.."), 0);
  ck_assert_int_eq(addrmap_address_ok("[2001:db8::1]"), 1);
  ck_assert_int_eq(addrmap_address_ok(NULL), 0);
  set_err(m, "x.example", "-x.example", "invalid address '-x.example'");
  set_err(m, "_x.example", "y.example", "invalid address '_x.example'");
  addrmap_free(m);
}
END_TEST

START_TEST(test_bounded)
{
  addrmap_t *m = addrmap_new();
  char from[32];
  for (int i = 0; i < ADDRMAP_MAX_ENTRIES; i++) {
    snprintf(from, sizeof(from), "h%d.example", i);
    char *f = NULL, *err = NULL;
    ck_assert_int_eq(addrmap_set(m, from, "t.example", &f, &err), 0);
    free(f);
  }
  ck_assert_uint_eq(addrmap_size(m), ADDRMAP_MAX_ENTRIES);
  ck_assert_int_eq(set_err(m, "one-more.example", "t.example",
                           "too many address mappings"),
                   -2);
  ck_assert_int_eq(set_err(m, "0.0.0.0", "u.example",
                           "too many address mappings"),
                   -2);
  /* Replacing an existing one still works at the bound. */
  set_ok(m, "h7.example", "other.example");
  addrmap_free(m);
}
END_TEST

Suite *
suite_addrmap(void)
{
  Suite *s = suite_create("addrmap");
  TCase *tc = tcase_create("addrmap");
  tcase_add_test(tc, test_map_rewrite_remove);
  tcase_add_test(tc, test_virtual);
  tcase_add_test(tc, test_chains_and_bad_input);
  tcase_add_test(tc, test_bounded);
  suite_add_tcase(s, tc);
  return s;
}
