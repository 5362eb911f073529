/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dir_authority.c -- unit tests for feature/dir/dir_authority: the
 * DirAuthority syntax of tor's manual (nickname, flags, address, spaced
 * fingerprint), the lines a private test network writes, malformed values,
 * and the built-in list of public authorities. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_authority.h"
#include "lib/encoding/base16.h"

Suite *suite_dir_authority(void);

static void
hex20(const char *hex, uint8_t out[20])
{
  ck_assert_int_eq(base16_decode(out, 20, hex, 40), 20);
}

START_TEST(test_manpage_example)
{
  /* moria1 as tor prints it in its default list (spaced fingerprint). */
  dir_authority_t a;
  char *err = NULL;
  uint8_t id[20], v3[20];
  int r = dir_authority_parse(
    &a,
    "moria1 orport=9101 v3ident=D586D18309DED4CD6D57C18FDB97EFA96D330566 "
    "128.31.0.39:9131 9695 DFC3 5FFE B861 329B 9F1A B04C 4639 7020 CE31",
    &err);
  ck_assert_int_eq(r, 0);
  ck_assert_ptr_null(err);
  ck_assert_str_eq(a.nickname, "moria1");
  ck_assert_int_eq(a.or_port, 9101);
  ck_assert_int_eq(a.dir_addr.family, AF_INET);
  ck_assert_uint_eq(pc_addr_ipv4_h(&a.dir_addr), 0x801f0027u);
  ck_assert_int_eq(a.dir_addr.port, 9131);
  hex20("9695DFC35FFEB861329B9F1AB04C46397020CE31", id);
  ck_assert_mem_eq(a.rsa_id, id, 20);
  ck_assert_int_eq(a.has_v3ident, 1);
  hex20("D586D18309DED4CD6D57C18FDB97EFA96D330566", v3);
  ck_assert_mem_eq(a.v3ident, v3, 20);
  ck_assert_int_eq(a.no_v2, 0);
  ck_assert_int_eq(a.is_bridge_auth, 0);
  ck_assert_int_eq(a.has_ipv6, 0);
  ck_assert(a.weight == 1.0);
}
END_TEST

START_TEST(test_privnet_line)
{
  /* The form scripts/pctor-privnet writes (no-v2, lower-case hex). */
  dir_authority_t a;
  char *err = NULL;
  ck_assert_int_eq(
    dir_authority_parse(
      &a,
      "auth0 orport=5000 no-v2 v3ident=0123456789abcdef0123456789ABCDEF01234567 "
      "127.0.0.1:7000 FEDCBA9876543210FEDCBA9876543210FEDCBA98",
      &err),
    0);
  ck_assert_str_eq(a.nickname, "auth0");
  ck_assert_int_eq(a.no_v2, 1);
  ck_assert_int_eq(a.or_port, 5000);
  ck_assert_int_eq(a.dir_addr.port, 7000);
  ck_assert_int_eq(pc_addr_is_loopback(&a.dir_addr), 1);
  ck_assert_int_eq(a.v3ident[0], 0x01);
  ck_assert_int_eq(a.v3ident[19], 0x67);
  ck_assert_int_eq(a.rsa_id[0], 0xfe);
}
END_TEST

START_TEST(test_flags)
{
  dir_authority_t a;
  char *err = NULL;
  /* No nickname, ipv6, bridge, weight, unknown flags ignored. */
  ck_assert_int_eq(
    dir_authority_parse(
      &a,
      "  bridge\tipv6=[2001:db8::1]:443 weight=2.5 hs no-hs "
      "10.1.2.3:80 0000000000000000000000000000000000000001 ",
      &err),
    0);
  /* "bridge" is a legal nickname, so as in tor it is taken as one. */
  ck_assert_str_eq(a.nickname, "bridge");
  ck_assert_int_eq(a.is_bridge_auth, 0);
  ck_assert_int_eq(a.has_ipv6, 1);
  ck_assert_int_eq(a.ipv6_or_addr.family, AF_INET6);
  ck_assert_int_eq(a.ipv6_or_addr.port, 443);
  ck_assert_int_eq(a.ipv6_or_addr.addr[0], 0x20);
  ck_assert_int_eq(a.ipv6_or_addr.addr[15], 0x01);
  ck_assert(a.weight == 2.5);
  ck_assert_int_eq(a.has_v3ident, 0);
  ck_assert_int_eq(a.rsa_id[19], 1);

  ck_assert_int_eq(
    dir_authority_parse(
      &a, "Serge orport=9001 bridge 66.111.2.131:9030 "
          "BA44 A889 E64B 93FA A2B1 14E0 2C2A 279A 8555 C533", &err),
    0);
  ck_assert_int_eq(a.is_bridge_auth, 1);
  ck_assert_str_eq(a.nickname, "Serge");

  /* No nickname at all. */
  ck_assert_int_eq(
    dir_authority_parse(&a, "orport=1 1.2.3.4:5 "
                            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &err),
    0);
  ck_assert_str_eq(a.nickname, "");
  ck_assert_int_eq(a.or_port, 1);
}
END_TEST

START_TEST(test_malformed)
{
  static const struct {
    const char *value;
    const char *needle; /* expected in the error */
  } bad[] = {
    {"", "empty"},
    {"   ", "empty"},
    {"moria1", "missing IPV4"},
    {"moria1 orport=9101", "missing IPV4"},
    {"moria1 128.31.0.39:9131", "missing fingerprint"},
    {"moria1 128.31.0.39 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "missing DirPort"},
    {"moria1 128.31.0.39:0 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "missing DirPort"},
    {"moria1 128.31.0.39:70000 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "not an IPv4"},
    {"moria1 1.2.3:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "not an IPv4"},
    {"m 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE3", "40 hex"},
    {"m 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE311",
     "longer than 40"},
    {"m 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE3G", "40 hex"},
    {"m 1.2.3.4:80 9695 DFC3 5FFE B861 329B 9F1A B04C 4639 7020 CE31 00",
     "longer than 40"},
    {"m orport=0 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "orport"},
    {"m orport=65536 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "orport"},
    {"m orport=12x 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "orport"},
    {"m orport= 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "orport"},
    {"m v3ident=1234 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "v3ident"},
    {"m ipv6=2001:db8::1 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "ipv6"},
    {"m ipv6=[2001:db8::1] 1.2.3.4:80 "
     "9695DFC35FFEB861329B9F1AB04C46397020CE31", "ipv6"},
    {"m ipv6=[1.2.3.4]:5 1.2.3.4:80 "
     "9695DFC35FFEB861329B9F1AB04C46397020CE31", "ipv6"},
    {"m weight=x 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "weight"},
    {"m weight=-1 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "weight"},
    {"m weight=nan 1.2.3.4:80 9695DFC35FFEB861329B9F1AB04C46397020CE31",
     "weight"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    dir_authority_t a;
    char *err = NULL;
    int r = dir_authority_parse(&a, bad[i].value, &err);
    if (r != -1 || !err || !strstr(err, bad[i].needle))
      ck_abort_msg("'%s': r=%d err='%s' (wanted '%s')", bad[i].value, r,
                   err ? err : "(null)", bad[i].needle);
    free(err);
  }
  /* NULL and over-long values. */
  dir_authority_t a;
  char *err = NULL;
  ck_assert_int_eq(dir_authority_parse(&a, NULL, &err), -1);
  free(err);
  char *big = malloc(5000);
  memset(big, 'a', 4999);
  big[4999] = 0;
  ck_assert_int_eq(dir_authority_parse(&a, big, NULL), -1);
  /* Many words: bounded. */
  for (int i = 0; i < 4999; i += 2)
    big[i] = ' ';
  big[1000] = 0;
  ck_assert_int_eq(dir_authority_parse(&a, big, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "too many"));
  free(err);
  free(big);
}
END_TEST

START_TEST(test_defaults)
{
  int n = -1;
  const dir_authority_t *d = dir_authority_defaults(&n);
  ck_assert_int_eq(n, 10);
  int n_v3 = 0, n_bridge = 0;
  for (int i = 0; i < n; i++) {
    ck_assert(d[i].nickname[0] != 0);
    ck_assert_int_eq(d[i].dir_addr.family, AF_INET);
    ck_assert(d[i].dir_addr.port != 0);
    ck_assert(d[i].or_port != 0);
    n_v3 += d[i].has_v3ident;
    n_bridge += d[i].is_bridge_auth;
  }
  ck_assert_int_eq(n_v3, 9);
  ck_assert_int_eq(n_bridge, 1);
  ck_assert_str_eq(d[0].nickname, "moria1");
  uint8_t id[20];
  hex20("1A25C6358DB91342AA51720A5038B72742732498", id);
  ck_assert_mem_eq(d[0].rsa_id, id, 20);
  /* Second call returns the same table. */
  int n2;
  ck_assert_ptr_eq(dir_authority_defaults(&n2), d);
  ck_assert_int_eq(n2, n);
}
END_TEST

Suite *
suite_dir_authority(void)
{
  Suite *s = suite_create("dir_authority");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_manpage_example);
  tcase_add_test(tc, test_privnet_line);
  tcase_add_test(tc, test_flags);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_defaults);
  suite_add_tcase(s, tc);
  return s;
}
