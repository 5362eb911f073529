/* SPDX-License-Identifier: BSD-3-Clause */
/* check_netdoc.c -- unit tests for feature/dir/netdoc (the directory
 * document tokenizer) and feature/dir/policy_summary: items, arguments,
 * objects and offsets of well-formed documents (dir-spec 1.2), and every
 * malformation the tokenizer must refuse with a message. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/netdoc.h"
#include "feature/dir/policy_summary.h"

Suite *suite_netdoc(void);

START_TEST(test_items_and_args)
{
  const char *doc = "network-status-version 3 microdesc\n"
                    "\n"
                    "client-versions \n"
                    "known-flags  Exit\tFast Guard \n"
                    "x-ext\n";
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, doc, strlen(doc));
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert(netdoc_kw_is(&it, "network-status-version"));
  ck_assert(!netdoc_kw_is(&it, "network-status"));
  ck_assert_int_eq(it.argc, 2);
  ck_assert(netdoc_arg_is(&it, 0, "3"));
  ck_assert(netdoc_arg_is(&it, 1, "microdesc"));
  ck_assert(!netdoc_arg_is(&it, 2, "microdesc"));
  ck_assert_uint_eq(it.start, 0);
  ck_assert_uint_eq(it.line_end, 35);
  ck_assert_uint_eq(it.end, 35);
  ck_assert_int_eq(it.has_object, 0);
  ck_assert_int_eq(netdoc_peek(&r, &it), 1);
  ck_assert(netdoc_kw_is(&it, "client-versions"));
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert(netdoc_kw_is(&it, "client-versions"));
  ck_assert_int_eq(it.argc, 0);
  ck_assert_uint_eq(it.args_len, 0);
  ck_assert_uint_eq(it.start, 36);
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert_int_eq(it.argc, 3);
  ck_assert(netdoc_arg_is(&it, 1, "Fast"));
  ck_assert_uint_eq(it.args_len, strlen("Exit\tFast Guard"));
  char buf[8];
  ck_assert_int_eq(netdoc_arg_copy(&it, 2, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "Guard");
  ck_assert_int_eq(netdoc_arg_copy(&it, 2, buf, 5), -1);
  ck_assert_int_eq(netdoc_arg_copy(&it, 3, buf, sizeof(buf)), -1);
  size_t cur = 0;
  netdoc_arg_t a;
  int n = 0;
  while (netdoc_arg_iter(&it, &cur, &a))
    n++;
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert(netdoc_kw_is(&it, "x-ext"));
  ck_assert_int_eq(netdoc_next(&r, &it), 0);
  ck_assert_int_eq(netdoc_next(&r, &it), 0);
}
END_TEST

START_TEST(test_many_args)
{
  char doc[2000] = "params";
  for (int i = 0; i < 100; i++) {
    char t[16];
    snprintf(t, sizeof(t), " k%d=%d", i, i);
    strcat(doc, t);
  }
  strcat(doc, "\n");
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, doc, strlen(doc));
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert_int_eq(it.argc, 100);
  ck_assert(netdoc_arg_is(&it, NETDOC_MAX_ARGV - 1, "k31=31"));
  ck_assert(!netdoc_arg_is(&it, NETDOC_MAX_ARGV, "k32=32"));
  size_t cur = 0;
  netdoc_arg_t a;
  int n = 0;
  while (netdoc_arg_iter(&it, &cur, &a)) {
    char want[32];
    snprintf(want, sizeof(want), "k%d=%d", n, n);
    ck_assert_uint_eq(a.len, strlen(want));
    ck_assert(memcmp(a.s, want, a.len) == 0);
    n++;
  }
  ck_assert_int_eq(n, 100);
}
END_TEST

START_TEST(test_objects)
{
  const char *doc = "onion-key\n"
                    "-----BEGIN RSA PUBLIC KEY-----\n"
                    "Zm9v\n"
                    "YmFy\n"
                    "-----END RSA PUBLIC KEY-----\n"
                    "directory-signature sha256 AA BB\n"
                    "-----BEGIN SIGNATURE-----\n"
                    "-----END SIGNATURE-----\n";
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, doc, strlen(doc));
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert(netdoc_kw_is(&it, "onion-key"));
  ck_assert_int_eq(it.has_object, 1);
  ck_assert(netdoc_obj_is(&it, "RSA PUBLIC KEY"));
  ck_assert(!netdoc_obj_is(&it, "RSA PUBLIC"));
  uint8_t out[16];
  ck_assert_int_eq(netdoc_obj_decode(&it, out, sizeof(out)), 6);
  ck_assert(memcmp(out, "foobar", 6) == 0);
  ck_assert_int_eq(netdoc_obj_decode(&it, out, 5), -1);
  ck_assert_uint_eq(it.line_end, 10);
  size_t sig_start = strstr(doc, "directory-signature") - doc;
  ck_assert_uint_eq(it.end, sig_start);
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
  ck_assert_uint_eq(it.start, sig_start);
  ck_assert_uint_eq(it.end, strlen(doc));
  ck_assert(netdoc_obj_is(&it, "SIGNATURE"));
  ck_assert_uint_eq(it.obj_data_len, 0);
  ck_assert_int_eq(netdoc_next(&r, &it), 0);
}
END_TEST

START_TEST(test_malformed)
{
  static const struct {
    const char *doc;
    size_t len; /* 0: strlen */
    const char *needle;
  } bad[] = {
    {"a b", 0, "no newline"},
    {"a\nb", 0, "line 2: truncated"},
    {"a\r\n", 0, "carriage return"},
    {"a\0b\n", 4, "NUL"},
    {"a \x01\n", 0, "control character"},
    {"a \x7f\n", 0, "control character"},
    {" a\n", 0, "whitespace"},
    {"\tb\n", 0, "whitespace"},
    {"-a\n", 0, "unexpected"},
    {"-----BEGIN X-----\nAA\n-----END X-----\n", 0, "unexpected"},
    {"a_b c\n", 0, "bad character in keyword"},
    {"a@b\n", 0, "bad character in keyword"},
    {"k\n-----BEGIN X-----\nAAAA\n", 0, "no END"},
    {"k\n-----BEGIN X-----\nAAAA", 0, "no newline"},
    {"k\n-----BEGIN X-----\nAAAA\n-----END Y-----\n", 0, "does not match"},
    {"k\n-----BEGIN X-----\nAAAA\n-----END X----\n", 0, "does not match"},
    {"k\n-----BEGIN X----\nAAAA\n-----END X-----\n", 0, "BEGIN"},
    {"k\n-----BEGIN -----\n-----END -----\n", 0, "type"},
    {"k\n-----BEGIN A  B-----\n-----END A  B-----\n", 0, "type"},
    {"k\n-----BEGIN X-----\nAA AA\n-----END X-----\n", 0, "bad character"},
    {"k\n-----BEGIN X-----\nAA!A\n-----END X-----\n", 0, "bad character"},
    {"k\n-----\n", 0, "BEGIN"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    netdoc_reader_t r;
    netdoc_item_t it;
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].doc);
    netdoc_reader_init(&r, bad[i].doc, len);
    int rv;
    while ((rv = netdoc_next(&r, &it)) == 1)
      ;
    if (rv != -1 || !strstr(r.err, bad[i].needle))
      ck_abort_msg("case %zu: rv=%d err='%s' (wanted '%s')", i, rv, r.err,
                   bad[i].needle);
    /* Stays failed. */
    ck_assert_int_eq(netdoc_next(&r, &it), -1);
  }
  /* Keyword too long. */
  char kw[200];
  memset(kw, 'k', 100);
  strcpy(kw + 100, "\n");
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, kw, strlen(kw));
  ck_assert_int_eq(netdoc_next(&r, &it), -1);
  ck_assert_ptr_nonnull(strstr(r.err, "keyword longer"));
  /* Line too long. */
  size_t big = NETDOC_MAX_LINE + 10;
  char *doc = malloc(big + 1);
  memset(doc, 'a', big);
  doc[1] = ' ';
  doc[big - 1] = '\n';
  netdoc_reader_init(&r, doc, big);
  ck_assert_int_eq(netdoc_next(&r, &it), -1);
  ck_assert_ptr_nonnull(strstr(r.err, "longer than"));
  /* Object too large. */
  size_t olen = NETDOC_MAX_OBJECT + 1000;
  doc = realloc(doc, olen + 100);
  strcpy(doc, "k\n-----BEGIN X-----\n");
  size_t p = strlen(doc);
  while (p < olen) {
    memcpy(doc + p, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
           65);
    p += 65;
  }
  strcpy(doc + p, "-----END X-----\n");
  netdoc_reader_init(&r, doc, strlen(doc));
  ck_assert_int_eq(netdoc_next(&r, &it), -1);
  ck_assert_ptr_nonnull(strstr(r.err, "object larger"));
  free(doc);
  /* UTF-8 in arguments is allowed. */
  const char *utf = "contact J\xc3\xb6rg\n";
  netdoc_reader_init(&r, utf, strlen(utf));
  ck_assert_int_eq(netdoc_next(&r, &it), 1);
}
END_TEST

START_TEST(test_value_helpers)
{
  long long v;
  ck_assert_int_eq(netdoc_parse_int("123", 3, 0, 1000, &v), 0);
  ck_assert_int_eq(v, 123);
  ck_assert_int_eq(netdoc_parse_int("-5", 2, -10, 10, &v), 0);
  ck_assert_int_eq(v, -5);
  ck_assert_int_eq(netdoc_parse_int("-", 1, -10, 10, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("", 0, -10, 10, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("11", 2, -10, 10, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("1x", 2, -10, 10, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("+1", 2, -10, 10, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("99999999999999999999", 20, 0,
                                    INT64_MAX, &v), -1);
  ck_assert_int_eq(netdoc_parse_int("2147483648", 10, INT32_MIN, INT32_MAX,
                                    &v), -1);
  uint8_t b[32];
  ck_assert_int_eq(netdoc_parse_b64_exact("Zm9vYg", 6, b, 4), 0);
  ck_assert_int_eq(netdoc_parse_b64_exact("Zm9vYg==", 8, b, 4), 0);
  ck_assert_int_eq(netdoc_parse_b64_exact("Zm9vYg", 6, b, 5), -1);
  ck_assert_int_eq(netdoc_parse_b64_exact("Zm9v Yg", 7, b, 4), -1);
  ck_assert_int_eq(netdoc_parse_hex_exact("00ff", 4, b, 2), 0);
  ck_assert_int_eq(b[1], 0xff);
  ck_assert_int_eq(netdoc_parse_hex_exact("00ff0", 5, b, 2), -1);
  ck_assert_int_eq(netdoc_parse_hex_exact("00fg", 4, b, 2), -1);
}
END_TEST

static policy_summary_t *
ps(const char *verb, const char *list, const char **err)
{
  return policy_summary_parse(verb, strlen(verb), list, strlen(list), err);
}

START_TEST(test_policy_summary)
{
  const char *err = NULL;
  char buf[128];
  policy_summary_t *p = ps("accept", "80,443,1000-2000,65535", &err);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p->n_ranges, 4);
  ck_assert(policy_summary_allows_port(p, 80));
  ck_assert(policy_summary_allows_port(p, 443));
  ck_assert(policy_summary_allows_port(p, 1000));
  ck_assert(policy_summary_allows_port(p, 1500));
  ck_assert(policy_summary_allows_port(p, 2000));
  ck_assert(policy_summary_allows_port(p, 65535));
  ck_assert(!policy_summary_allows_port(p, 81));
  ck_assert(!policy_summary_allows_port(p, 999));
  ck_assert(!policy_summary_allows_port(p, 2001));
  ck_assert(!policy_summary_allows_port(p, 0));
  ck_assert(policy_summary_allows_any(p));
  ck_assert_str_eq(policy_summary_format(p, buf, sizeof(buf)),
                   "accept 80,443,1000-2000,65535");
  policy_summary_free(p);
  ck_assert_ptr_null(p);

  p = ps("reject", "1-65535", &err);
  ck_assert(!policy_summary_allows_port(p, 80));
  ck_assert(!policy_summary_allows_any(p));
  policy_summary_free(p);
  p = ps("reject", "25,119,135-139,445", &err);
  ck_assert(policy_summary_allows_port(p, 80));
  ck_assert(!policy_summary_allows_port(p, 25));
  ck_assert(!policy_summary_allows_port(p, 137));
  ck_assert(policy_summary_allows_any(p));
  policy_summary_free(p);
  p = ps("reject", "1-65534", &err);
  ck_assert(policy_summary_allows_any(p));
  ck_assert(policy_summary_allows_port(p, 65535));
  policy_summary_free(p);
  p = policy_summary_new_reject_all();
  ck_assert(!policy_summary_allows_any(p));
  ck_assert_str_eq(policy_summary_format(p, buf, sizeof(buf)),
                   "reject 1-65535");
  policy_summary_free(p);
  ck_assert(!policy_summary_allows_port(NULL, 80));
  ck_assert(!policy_summary_allows_any(NULL));

  static const char *bad[][2] = {
    {"allow", "80"},    {"accept", ""},        {"accept", "0"},
    {"accept", "65536"}, {"accept", "80,"},     {"accept", ",80"},
    {"accept", "443,80"}, {"accept", "80,80"},  {"accept", "10-5"},
    {"accept", "1-"},   {"accept", "-5"},      {"accept", "8a"},
    {"accept", "1-2-3"}, {"accept", "100-200,150"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err = NULL;
    p = ps(bad[i][0], bad[i][1], &err);
    if (p || !err)
      ck_abort_msg("'%s %s' accepted", bad[i][0], bad[i][1]);
  }
}
END_TEST

Suite *
suite_netdoc(void)
{
  Suite *s = suite_create("netdoc");
  TCase *tc = tcase_create("netdoc");
  tcase_add_test(tc, test_items_and_args);
  tcase_add_test(tc, test_many_args);
  tcase_add_test(tc, test_objects);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_value_helpers);
  tcase_add_test(tc, test_policy_summary);
  suite_add_tcase(s, tc);
  return s;
}
