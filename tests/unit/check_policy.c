/* SPDX-License-Identifier: BSD-3-Clause */
/* check_policy.c -- unit tests for feature/exit/policy.
 *
 *  - parsing: every torrc form (accept/reject/accept6/reject6, *, *4, *6,
 *    private, /bits, /netmask, bracketed IPv6, ports *, N, N-M, omitted),
 *    several entries per line and several lines, and malformed entries
 *    with the error message naming them;
 *  - decisions: first match wins, private and loopback rejection, our
 *    own addresses, IPv6Exit, IPv4-mapped addresses, unknown addresses;
 *  - known answers from tor 0.4.9.11 itself: a private network
 *    (scripts/pctor-privnet, one authority, six relays with the torrcs
 *    quoted in test_tor_vectors) gave each relay's server-descriptor
 *    policy lines (including ipv6-policy) and the "p" lines of the
 *    consensus the authority made from them; and "GETINFO
 *    exit-policy/full" of a tor exit gave the IPv4+IPv6 rule list;
 *  - summaries: edge cases checked against tests/vectors/policy_summary_ref.py
 *    (an independent per-port simulation of dir-spec 3.4.1/3.8.2), a
 *    randomised comparison with per-port decisions, and summary strings
 *    parsed back into port sets by feature/dir's policy_summary, the one
 *    implementation of those (round trips, both its strict and tor's
 *    lenient forms, malformed summaries).
 */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/policy_summary.h"
#include "feature/exit/policy.h"
#include "lib/malloc/alloc.h"

Suite *suite_policy(void);

static exit_policy_t *
plain(const char *line)
{
  char *err = NULL;
  const char *lines[1] = {line};
  exit_policy_t *p = exit_policy_parse_plain(lines, 1, &err);
  ck_assert_msg(p != NULL, "'%s': %s", line, err ? err : "?");
  return p;
}

static exit_policy_t *
build(const char *line, const exit_policy_options_t *o)
{
  char *err = NULL;
  const char *lines[1] = {line};
  exit_policy_t *p = exit_policy_parse(lines, line ? 1 : 0, o, &err);
  ck_assert_msg(p != NULL, "'%s': %s", line ? line : "", err ? err : "?");
  return p;
}

static void
check_summary(const char *line, int family, const char *want)
{
  exit_policy_t *p = plain(line);
  char *s = exit_policy_summarize(p, family);
  ck_assert_msg(!strcmp(s, want), "'%s': got '%s' want '%s'", line, s,
                want);
  free(s);
  exit_policy_free(p);
}

static void
check_error(const char *line, const char *want)
{
  char *err = NULL;
  const char *lines[1] = {line};
  exit_policy_t *p = exit_policy_parse_plain(lines, 1, &err);
  ck_assert_msg(p == NULL, "'%s' was accepted", line);
  ck_assert_msg(err && strstr(err, want), "'%s': error '%s', want '%s'",
                line, err ? err : "(none)", want);
  free(err);
}

static const char *
rule_str(const exit_policy_t *p, int i, int for_desc)
{
  static char buf[EXIT_POLICY_RULE_BUF_LEN];
  return exit_policy_rule_format(exit_policy_get_rule(p, i), for_desc, buf,
                                 sizeof(buf));
}

static pc_addr_t
A(const char *s)
{
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse(&a, s), 0);
  return a;
}

static int
allows(const exit_policy_t *p, const char *addr, uint16_t port)
{
  pc_addr_t a = A(addr);
  return exit_policy_allows(p, &a, port) == EXIT_POLICY_ACCEPTED;
}

/* ---- parsing ---- */

START_TEST(test_parse_forms)
{
  static const struct {
    const char *in;
    const char *out; /* the rules, torrc form, joined by ", " */
  } v[] = {
      {"accept *:80", "accept *4:80, accept *6:80"},
      {"reject *:*", "reject *4:*, reject *6:*"},
      {"accept6 *:80", "accept *6:80"},
      {"reject6 *", "reject *6:*"},
      {"accept *4:1-1024", "accept *4:1-1024"},
      {"reject *6:443", "reject *6:443"},
      {"accept 1.2.3.4", "accept 1.2.3.4:*"},
      {"accept 1.2.3.4:80", "accept 1.2.3.4:80"},
      {"accept 1.2.3.4/32:80", "accept 1.2.3.4:80"},
      {"accept 1.2.3.4/16:80-443", "accept 1.2.0.0/16:80-443"},
      {"reject 10.0.0.0/255.0.0.0:22", "reject 10.0.0.0/8:22"},
      {"reject 10.1.2.3/255.255.255.0", "reject 10.1.2.0/24:*"},
      {"accept 0.0.0.0/0:80", "accept *4:80"},
      {"accept 9.9.9.9/0.0.0.0:80", "accept *4:80"},
      {"reject [2001:db8::]/32:*", "reject [2001:db8::]/32:*"},
      {"reject6 [2001:db8::1:2]/32", "reject [2001:db8::]/32:*"},
      {"accept6 [::1]:22", "accept [::1]:22"},
      {"accept [::]/0:80", "accept *6:80"},
      {"accept [2001:DB8::1]/128:65535", "accept [2001:db8::1]:65535"},
      {"accept *:1-65535", "accept *4:*, accept *6:*"},
      {"accept *:7-7", "accept *4:7, accept *6:7"},
      {"  accept \t *:80  ", "accept *4:80, accept *6:80"},
      {"accept *:80, ,reject *:*,", "accept *4:80, accept *6:80, "
                                    "reject *4:*, reject *6:*"},
      {"accept6 1.2.3.4:80", ""},           /* ignored, as tor does */
      {"reject6 *4:*", ""},                 /* ignored too */
      {"accept6 10.0.0.0/8:*,accept6 *:9", "accept *6:9"},
      {"reject private:*",
       "reject 0.0.0.0/8:*, reject 169.254.0.0/16:*, reject 127.0.0.0/8:*, "
       "reject 192.168.0.0/16:*, reject 10.0.0.0/8:*, "
       "reject 172.16.0.0/12:*, reject [::]/8:*, reject [fc00::]/7:*, "
       "reject [fe80::]/10:*, reject [fec0::]/10:*, reject [ff00::]/8:*, "
       "reject [::]/127:*"},
      /* "private" means both families even after accept6 (tor(1)). */
      {"accept6 private:80",
       "accept 0.0.0.0/8:80, accept 169.254.0.0/16:80, accept 127.0.0.0/8:80, "
       "accept 192.168.0.0/16:80, accept 10.0.0.0/8:80, "
       "accept 172.16.0.0/12:80, accept [::]/8:80, accept [fc00::]/7:80, "
       "accept [fe80::]/10:80, accept [fec0::]/10:80, accept [ff00::]/8:80, "
       "accept [::]/127:80"},
  };
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    exit_policy_t *p = plain(v[i].in);
    char got[2048] = "";
    for (int j = 0; j < exit_policy_n_rules(p); j++) {
      if (j)
        strcat(got, ", ");
      strcat(got, rule_str(p, j, 0));
    }
    ck_assert_msg(!strcmp(got, v[i].out), "'%s': got '%s' want '%s'",
                  v[i].in, got, v[i].out);
    exit_policy_free(p);
  }

  /* Several lines, each with several entries, keep their order. */
  const char *lines[] = {"accept *4:80,accept *4:443", NULL, "reject *4:*"};
  char *err = NULL;
  exit_policy_t *p = exit_policy_parse_plain(lines, 3, &err);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(exit_policy_n_rules(p), 3);
  ck_assert_str_eq(rule_str(p, 0, 0), "accept *4:80");
  ck_assert_str_eq(rule_str(p, 1, 0), "accept *4:443");
  ck_assert_str_eq(rule_str(p, 2, 0), "reject *4:*");
  exit_policy_free(p);

  /* Rule fields. */
  p = plain("reject 172.16.5.4/12:100-200");
  const exit_policy_rule_t *r = exit_policy_get_rule(p, 0);
  ck_assert_int_eq(r->accept, 0);
  ck_assert_int_eq(r->family, AF_INET);
  ck_assert_int_eq(r->maskbits, 12);
  ck_assert_int_eq(r->prt_min, 100);
  ck_assert_int_eq(r->prt_max, 200);
  const uint8_t want[4] = {172, 16, 0, 0};
  ck_assert_mem_eq(r->addr, want, 4);
  ck_assert_ptr_null(exit_policy_get_rule(p, 1));
  ck_assert_ptr_null(exit_policy_get_rule(p, -1));
  exit_policy_free(p);
}
END_TEST

START_TEST(test_parse_errors)
{
  check_error("accept 1.2.3.4:99999",
              "ExitPolicy: 'accept 1.2.3.4:99999': bad port");
  check_error("accept 1.2.3.4:0", "'accept 1.2.3.4:0': bad port");
  check_error("accept *:0-80", "bad port");
  check_error("accept *:80-70", "bad port range");
  check_error("accept *:", "bad port");
  check_error("accept *:-5", "bad port");
  check_error("accept *:5-", "bad port");
  check_error("accept *:http", "bad port");
  check_error("accept *:+80", "bad port");
  check_error("accept *:080000", "bad port");
  check_error("accept *:80,accept *:1-2-3", "'accept *:1-2-3': bad port");
  check_error("allow *:80", "'allow *:80': must start with accept, reject");
  check_error("Accept *:80", "must start with accept");
  check_error("accept", "missing ADDRESS");
  check_error("reject6 ", "missing ADDRESS");
  check_error("accept *:80 *:81", "one ADDRESS");
  check_error("accept 1.2.3:80", "bad address");
  check_error("accept 256.1.1.1", "bad address");
  check_error("accept 1.2.3.4.5:80", "bad address");
  check_error("accept example.com:80", "bad address");
  check_error("accept :80", "bad address");
  check_error("accept **:80", "bad address");
  check_error("accept 1.2.3.4/33", "bad mask");
  check_error("accept 1.2.3.4/", "bad mask");
  check_error("accept 1.2.3.4/-1:80", "bad mask");
  check_error("accept 1.2.3.4/255.0.255.0", "bad mask");
  check_error("accept 1.2.3.4/255.255.255.256", "bad mask");
  check_error("accept */8:80", "no mask after");
  check_error("reject private/8:*", "no mask after");
  check_error("accept [::1/64]:80", "bad IPv6 address");
  check_error("accept []:80", "bad IPv6 address");
  check_error("accept [1.2.3.4]:80", "bad IPv6 address");
  check_error("accept [::1]/129", "bad mask");
  check_error("accept [::1]/:80", "bad mask");
  check_error("accept [::1", "missing ']'");
  check_error("accept [::1]x", "bad address");
  check_error("accept [::1]:", "bad port");
  check_error("accept 2001:db8::1:80", "IPv6 addresses go in brackets");
  check_error("accept *:8\x01", "control character");
  check_error("accept *:8\xc3\xa9", "non-ASCII");
  /* A long entry is quoted shortened. */
  char longe[400];
  snprintf(longe, sizeof(longe), "accept 1.2.3.4:%0300d", 8);
  char *err = NULL;
  const char *lines[1] = {longe};
  ck_assert_ptr_null(exit_policy_parse_plain(lines, 1, &err));
  ck_assert_ptr_nonnull(strstr(err, "...': entry too long"));
  ck_assert_uint_lt(strlen(err), 160);
  free(err);
  /* Too many rules. */
  size_t cap = 20 * (EXIT_POLICY_MAX_RULES + 2);
  char *many = pc_malloc(cap);
  many[0] = 0;
  for (int i = 0; i < EXIT_POLICY_MAX_RULES + 1; i++)
    strcat(many, "accept *4:80,");
  lines[0] = many;
  err = NULL;
  ck_assert_ptr_null(exit_policy_parse_plain(lines, 1, &err));
  ck_assert_ptr_nonnull(strstr(err, "too many"));
  free(err);
  free(many);
  /* The same errors come out of exit_policy_parse, even for a non-exit. */
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  lines[0] = "accept *:80,reject 1.2.3.4:99999";
  err = NULL;
  ck_assert_ptr_null(exit_policy_parse(lines, 1, &o, &err));
  ck_assert_str_eq(err, "ExitPolicy: 'reject 1.2.3.4:99999': bad port");
  free(err);
}
END_TEST

/* ---- decisions ---- */

START_TEST(test_first_match)
{
  /* tor(1)'s example: everything but MIT, except web.mit.edu. */
  exit_policy_t *p =
      plain("accept 18.7.22.69:*,reject 18.0.0.0/8:*,accept *:*");
  ck_assert(allows(p, "18.7.22.69", 80));
  ck_assert(!allows(p, "18.7.22.70", 80));
  ck_assert(!allows(p, "18.255.255.255", 1));
  ck_assert(allows(p, "19.0.0.0", 80));
  ck_assert(allows(p, "17.255.255.255", 65535));
  ck_assert(allows(p, "2001:db8::1", 80));
  ck_assert(!allows(p, "::ffff:18.1.2.3", 80)); /* IPv4-mapped */
  ck_assert(allows(p, "::ffff:19.1.2.3", 80));
  ck_assert(!allows(p, "1.1.1.1", 0)); /* port 0: never */
  pc_addr_t unset;
  memset(&unset, 0, sizeof(unset));
  ck_assert_int_eq(exit_policy_allows(p, &unset, 80), EXIT_POLICY_REJECTED);
  ck_assert_int_eq(exit_policy_allows(NULL, &unset, 80),
                   EXIT_POLICY_REJECTED);
  exit_policy_free(p);

  /* Order matters: the same rules the other way round. */
  p = plain("reject 18.0.0.0/8:*,accept 18.7.22.69:*,accept *:*");
  ck_assert(!allows(p, "18.7.22.69", 80));
  exit_policy_free(p);

  /* Ports, ranges and the edges of masks. */
  p = plain("reject 1.2.3.0/24:20-30,accept 1.2.0.0/16:25,"
            "accept6 [2001:db8::]/33:443,reject *:*");
  ck_assert(!allows(p, "1.2.3.255", 25));
  ck_assert(!allows(p, "1.2.3.0", 20));
  ck_assert(!allows(p, "1.2.3.0", 30));
  ck_assert(!allows(p, "1.2.3.0", 31));
  ck_assert(allows(p, "1.2.4.0", 25));
  ck_assert(!allows(p, "1.3.0.0", 25));
  ck_assert(allows(p, "2001:db8:7fff:ffff::1", 443));
  ck_assert(!allows(p, "2001:db8:8000::1", 443));
  ck_assert(!allows(p, "2001:db8::1", 444));
  exit_policy_free(p);

  /* What no rule matches is accepted (dir-spec 2.1.1). */
  p = plain("reject *:25");
  ck_assert(allows(p, "1.2.3.4", 80));
  ck_assert(!allows(p, "1.2.3.4", 25));
  exit_policy_free(p);
  p = plain("");
  ck_assert_int_eq(exit_policy_n_rules(p), 0);
  ck_assert(allows(p, "1.2.3.4", 80));
  exit_policy_free(p);
}
END_TEST

START_TEST(test_build_exit)
{
  pc_addr_t ours[3] = {A("1.2.3.4"), A("2001:db8::1"), A("192.168.1.1")};
  pc_addr_t local[3] = {A("5.6.7.8"), A("10.9.9.9"), A("2001:db8::99")};
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  ck_assert_int_eq(o.is_exit, 0);
  ck_assert_int_eq(o.reject_private, 1);
  ck_assert_int_eq(o.reject_local_interfaces, 0);
  o.is_exit = 1;
  o.our_addrs = ours;
  o.n_our_addrs = 3;
  o.local_addrs = local;
  o.n_local_addrs = 3;

  /* Default exit: private networks and our public IPv4 address first,
   * then the default policy; no IPv6 exit. */
  exit_policy_t *p = build(NULL, &o);
  char *d = exit_policy_format_descriptor(p);
  ck_assert_str_eq(d, "reject 0.0.0.0/8:*\n"
                      "reject 169.254.0.0/16:*\n"
                      "reject 127.0.0.0/8:*\n"
                      "reject 192.168.0.0/16:*\n"
                      "reject 10.0.0.0/8:*\n"
                      "reject 172.16.0.0/12:*\n"
                      "reject 1.2.3.4:*\n"
                      "reject *:25\n"
                      "reject *:119\n"
                      "reject *:135-139\n"
                      "reject *:445\n"
                      "reject *:563\n"
                      "reject *:1214\n"
                      "reject *:4661-4666\n"
                      "reject *:6346-6429\n"
                      "reject *:6699\n"
                      "reject *:6881-6999\n"
                      "accept *:*\n");
  free(d);
  ck_assert(allows(p, "8.8.8.8", 80));
  ck_assert(allows(p, "8.8.8.8", 443));
  ck_assert(!allows(p, "8.8.8.8", 25));
  ck_assert(!allows(p, "8.8.8.8", 6900));
  ck_assert(!allows(p, "127.0.0.1", 80));
  ck_assert(!allows(p, "10.1.2.3", 80));
  ck_assert(!allows(p, "172.31.255.255", 80));
  ck_assert(allows(p, "172.32.0.0", 80));
  ck_assert(!allows(p, "169.254.1.1", 80));
  ck_assert(!allows(p, "0.1.2.3", 80));
  ck_assert(!allows(p, "1.2.3.4", 80)); /* ourselves */
  ck_assert(allows(p, "1.2.3.5", 80));
  ck_assert(allows(p, "5.6.7.8", 80)); /* local interfaces not rejected */
  ck_assert(!allows(p, "2001:db8::5", 80)); /* no IPv6Exit */
  ck_assert(!allows(p, "::ffff:127.0.0.1", 80));
  ck_assert(exit_policy_is_reject_star(p, AF_INET6));
  ck_assert(!exit_policy_is_reject_star(p, AF_INET));
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET),
                   EXIT_POLICY_PROBABLY_ACCEPTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 25, AF_INET),
                   EXIT_POLICY_REJECTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET6),
                   EXIT_POLICY_REJECTED);
  char *s = exit_policy_summarize(p, AF_INET);
  ck_assert_str_eq(s, "reject 25,119,135-139,445,563,1214,4661-4666,"
                      "6346-6429,6699,6881-6999");
  free(s);
  s = exit_policy_summarize(p, AF_INET6);
  ck_assert_str_eq(s, "reject 1-65535");
  free(s);
  exit_policy_free(p);

  /* IPv6Exit and ExitPolicyRejectLocalInterfaces. */
  o.ipv6_exit = 1;
  o.reject_local_interfaces = 1;
  p = build(NULL, &o);
  d = exit_policy_format_descriptor(p);
  ck_assert_ptr_nonnull(strstr(d, "reject 172.16.0.0/12:*\n"
                                  "reject 1.2.3.4:*\n"
                                  "reject 5.6.7.8:*\n"
                                  "reject *:25\n"));
  ck_assert_ptr_null(strstr(d, "10.9.9.9")); /* private: not listed */
  ck_assert_ptr_null(strstr(d, "192.168.1.1:"));
  ck_assert_ptr_nonnull(
      strstr(d, "accept *:*\nipv6-policy reject 25,119,135-139,445,563,1214,"
                "4661-4666,6346-6429,6699,6881-6999\n"));
  ck_assert_ptr_null(strstr(d, "6 ")); /* no IPv6 rule lines */
  free(d);
  ck_assert(!allows(p, "5.6.7.8", 80));
  ck_assert(allows(p, "2001:db8::5", 80));
  ck_assert(!allows(p, "2001:db8::5", 25));
  ck_assert(!allows(p, "2001:db8::1", 80));  /* ourselves */
  ck_assert(!allows(p, "2001:db8::99", 80)); /* a local interface */
  ck_assert(!allows(p, "::1", 80));
  ck_assert(!allows(p, "::", 80));
  ck_assert(!allows(p, "::2", 80)); /* in [::]/8 */
  ck_assert(!allows(p, "fe80::1", 80));
  ck_assert(!allows(p, "fd00::1", 80));
  ck_assert(!allows(p, "ff02::1", 80));
  ck_assert(!allows(p, "fec0::1", 80));
  ck_assert(!exit_policy_is_reject_star(p, AF_INET6));
  exit_policy_free(p);

  /* ExitPolicyRejectPrivate 0: private networks are reachable. */
  o.reject_private = 0;
  o.reject_local_interfaces = 0;
  p = build(NULL, &o);
  ck_assert(allows(p, "127.0.0.1", 80));
  ck_assert(allows(p, "1.2.3.4", 80));
  ck_assert(!allows(p, "127.0.0.1", 25));
  exit_policy_free(p);

  /* tor(1): allow 127.0.0.1:80 and nothing else private. */
  p = build("accept 127.0.0.1:80,reject private:*", &o);
  ck_assert(allows(p, "127.0.0.1", 80));
  ck_assert(!allows(p, "127.0.0.1", 81));
  ck_assert(!allows(p, "10.0.0.1", 80));
  ck_assert(allows(p, "11.0.0.1", 80));
  exit_policy_free(p);

  /* A loopback-only exit (the private test network's) is no exit to
   * most addresses: "reject 1-65535", as tor summarises it. */
  p = build("accept 127.0.0.0/8:*, reject *:*", &o);
  s = exit_policy_summarize(p, AF_INET);
  ck_assert_str_eq(s, "reject 1-65535");
  free(s);
  ck_assert(allows(p, "127.0.0.1", 9999));
  ck_assert(!allows(p, "8.8.8.8", 80));
  d = exit_policy_format_descriptor(p);
  ck_assert_str_eq(d, "accept 127.0.0.0/8:*\nreject *:*\n");
  free(d);
  exit_policy_free(p);

  /* A policy ending in accept *:* replaces the default one. */
  o.reject_private = 1;
  o.ipv6_exit = 0;
  p = build("reject *:22,accept *:*", &o);
  ck_assert(allows(p, "8.8.8.8", 25));
  ck_assert(!allows(p, "8.8.8.8", 22));
  s = exit_policy_summarize(p, AF_INET);
  ck_assert_str_eq(s, "reject 22");
  free(s);
  exit_policy_free(p);
}
END_TEST

/* ReducedExitPolicy: the descriptor policy tor 0.4.9 publishes with
 * "ExitRelay 1, ReducedExitPolicy 1, ExitPolicyRejectPrivate 0" (read
 * from a tor relay's GETINFO exit-policy/full), after a configured rule. */
START_TEST(test_build_reduced)
{
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  o.is_exit = 1;
  o.reject_private = 0;
  o.reduced = 1;
  exit_policy_t *p = build(NULL, &o);
  char *d = exit_policy_format_descriptor(p);
  ck_assert_str_eq(d,
                      "accept *:20-23\n"
                      "accept *:43\n"
                      "accept *:53\n"
                      "accept *:79-81\n"
                      "accept *:88\n"
                      "accept *:110\n"
                      "accept *:143\n"
                      "accept *:194\n"
                      "accept *:220\n"
                      "accept *:389\n"
                      "accept *:443\n"
                      "accept *:464\n"
                      "accept *:465\n"
                      "accept *:531\n"
                      "accept *:543-544\n"
                      "accept *:554\n"
                      "accept *:563\n"
                      "accept *:587\n"
                      "accept *:636\n"
                      "accept *:706\n"
                      "accept *:749\n"
                      "accept *:873\n"
                      "accept *:902-904\n"
                      "accept *:981\n"
                      "accept *:989-995\n"
                      "accept *:1194\n"
                      "accept *:1220\n"
                      "accept *:1293\n"
                      "accept *:1500\n"
                      "accept *:1533\n"
                      "accept *:1677\n"
                      "accept *:1723\n"
                      "accept *:1755\n"
                      "accept *:1863\n"
                      "accept *:2082-2083\n"
                      "accept *:2086-2087\n"
                      "accept *:2095-2096\n"
                      "accept *:2102-2104\n"
                      "accept *:3128\n"
                      "accept *:3389\n"
                      "accept *:3690\n"
                      "accept *:4321\n"
                      "accept *:4643\n"
                      "accept *:5050\n"
                      "accept *:5190\n"
                      "accept *:5222-5223\n"
                      "accept *:5228\n"
                      "accept *:5900\n"
                      "accept *:6660-6669\n"
                      "accept *:6679\n"
                      "accept *:6697\n"
                      "accept *:8000\n"
                      "accept *:8008\n"
                      "accept *:8074\n"
                      "accept *:8080\n"
                      "accept *:8082\n"
                      "accept *:8087-8088\n"
                      "accept *:8232-8233\n"
                      "accept *:8332-8333\n"
                      "accept *:8443\n"
                      "accept *:8888\n"
                      "accept *:9418\n"
                      "accept *:9999\n"
                      "accept *:10000\n"
                      "accept *:11371\n"
                      "accept *:18080-18081\n"
                      "accept *:18089\n"
                      "accept *:19294\n"
                      "accept *:19638\n"
                      "accept *:50002\n"
                      "accept *:64738\n"
                      "reject *:*\n");
  free(d);
  ck_assert(allows(p, "8.8.8.8", 443));
  ck_assert(allows(p, "8.8.8.8", 18089));
  ck_assert(!allows(p, "8.8.8.8", 25));
  ck_assert(!allows(p, "8.8.8.8", 8081));
  ck_assert(!allows(p, "2001:db8::1", 443)); /* no IPv6Exit */
  exit_policy_free(p);
  /* Configured rules still come first. */
  p = build("accept *:25", &o);
  ck_assert(allows(p, "8.8.8.8", 25));
  ck_assert(!allows(p, "8.8.8.8", 26));
  exit_policy_free(p);
  /* ExitRelay auto: ReducedExitPolicy alone makes an exit (as tor). */
  ck_assert_int_eq(exit_policy_want_exit(-1, 0 + 1, 0), 1);
}
END_TEST

START_TEST(test_build_nonexit)
{
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  exit_policy_t *p = build("accept *:*", &o); /* ignored: not an exit */
  ck_assert_int_eq(exit_policy_n_rules(p), 2);
  ck_assert_str_eq(rule_str(p, 0, 0), "reject *4:*");
  ck_assert_str_eq(rule_str(p, 1, 0), "reject *6:*");
  char *d = exit_policy_format_descriptor(p);
  ck_assert_str_eq(d, "reject *:*\n");
  free(d);
  char *s = exit_policy_summarize(p, AF_INET);
  ck_assert_str_eq(s, "reject 1-65535");
  free(s);
  ck_assert(exit_policy_is_reject_star(p, AF_INET));
  ck_assert(exit_policy_is_reject_star(p, AF_INET6));
  ck_assert(!allows(p, "8.8.8.8", 80));
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_UNSPEC),
                   EXIT_POLICY_REJECTED);
  exit_policy_free(p);

  /* Defaults when no options are given at all: not an exit. */
  p = build("accept *:80", NULL);
  ck_assert(exit_policy_is_reject_star(p, AF_INET));
  exit_policy_free(p);

  /* ExitRelay: 1, 0, auto (-1). */
  ck_assert_int_eq(exit_policy_want_exit(1, 0, 0), 1);
  ck_assert_int_eq(exit_policy_want_exit(0, 3, 1), 0);
  ck_assert_int_eq(exit_policy_want_exit(-1, 0, 0), 0);
  ck_assert_int_eq(exit_policy_want_exit(-1, 1, 0), 1);
  ck_assert_int_eq(exit_policy_want_exit(-1, 0, 1), 1);
}
END_TEST

START_TEST(test_unknown_address)
{
  exit_policy_t *p = plain("reject 1.2.3.4:80,accept *:80,accept 1.0.0.0/8:22,"
                           "reject *4:22,accept *:443,reject *:*");
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET),
                   EXIT_POLICY_PROBABLY_ACCEPTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 22, AF_INET),
                   EXIT_POLICY_PROBABLY_REJECTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 443, AF_INET),
                   EXIT_POLICY_ACCEPTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 444, AF_INET),
                   EXIT_POLICY_REJECTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET6),
                   EXIT_POLICY_ACCEPTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 22, AF_INET6),
                   EXIT_POLICY_REJECTED);
  ck_assert_int_eq(exit_policy_allows_unknown(p, 0, AF_INET),
                   EXIT_POLICY_REJECTED);
  exit_policy_free(p);
  p = plain("reject 1.0.0.0/8:*");
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET),
                   EXIT_POLICY_PROBABLY_ACCEPTED);
  exit_policy_free(p);
  p = plain("");
  ck_assert_int_eq(exit_policy_allows_unknown(p, 80, AF_INET),
                   EXIT_POLICY_ACCEPTED);
  exit_policy_free(p);
}
END_TEST

START_TEST(test_redundancy)
{
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  o.is_exit = 1;
  o.reject_private = 0;
  o.ipv6_exit = 1;
  /* After a catch-all of a family nothing of it is kept; a rule covered
   * by an earlier one goes; an accept covered by a later accept with no
   * intersecting reject in between goes. */
  exit_policy_t *p = build("reject *:25-30,accept *:26,accept 1.2.3.0/24:27,"
                           "reject 1.0.0.0/8:80,reject 1.0.0.0/8:80,"
                           "accept *:443,reject *4:*,accept *4:80",
                           &o);
  char got[4096] = "";
  for (int i = 0; i < exit_policy_n_rules(p); i++) {
    strcat(got, rule_str(p, i, 1));
    strcat(got, "\n");
  }
  /* tor 0.4.9.11's GETINFO exit-policy/full for the same torrc. */
  ck_assert_str_eq(got, "reject6 *:25-30\n"
                        "accept *:443\n"
                        "reject *:*\n"
                        "reject6 *:119\n"
                        "reject6 *:135-139\n"
                        "reject6 *:445\n"
                        "reject6 *:563\n"
                        "reject6 *:1214\n"
                        "reject6 *:4661-4666\n"
                        "reject6 *:6346-6429\n"
                        "reject6 *:6699\n"
                        "reject6 *:6881-6999\n"
                        "accept6 *:*\n");
  exit_policy_free(p);
}
END_TEST

/* Policies and results from tor 0.4.9.11 (see the top of this file). */
START_TEST(test_tor_vectors)
{
  static const struct {
    const char *torrc; /* ExitPolicy lines, for the record */
    const char *lines[2];
    int reject_private, ipv6_exit;
    const char *desc; /* the descriptor's policy lines */
    const char *p;    /* the consensus "p" line */
  } v[] = {
      {"ExitRelay 1, ExitPolicyRejectPrivate 1", {NULL, NULL}, 1, 0,
       "reject 0.0.0.0/8:*\n"
       "reject 169.254.0.0/16:*\n"
       "reject 127.0.0.0/8:*\n"
       "reject 192.168.0.0/16:*\n"
       "reject 10.0.0.0/8:*\n"
       "reject 172.16.0.0/12:*\n"
       "reject *:25\n"
       "reject *:119\n"
       "reject *:135-139\n"
       "reject *:445\n"
       "reject *:563\n"
       "reject *:1214\n"
       "reject *:4661-4666\n"
       "reject *:6346-6429\n"
       "reject *:6699\n"
       "reject *:6881-6999\n"
       "accept *:*\n",
       "reject 25,119,135-139,445,563,1214,4661-4666,6346-6429,6699,"
       "6881-6999"},
      {"ExitRelay 1, ExitPolicyRejectPrivate 1, IPv6Exit 1",
       {"reject6 [2000::]/15:443, reject 1.0.0.0/8:443, accept *:80-443",
        "accept6 [2001:db8::]/32:22, reject *:*"},
       1, 1,
       "reject 0.0.0.0/8:*\n"
       "reject 169.254.0.0/16:*\n"
       "reject 127.0.0.0/8:*\n"
       "reject 192.168.0.0/16:*\n"
       "reject 10.0.0.0/8:*\n"
       "reject 172.16.0.0/12:*\n"
       "reject 1.0.0.0/8:443\n"
       "accept *:80-443\n"
       "reject *:*\n"
       "ipv6-policy accept 80-442\n",
       "accept 80-443"},
      {"ExitRelay 1 (TestingTorNetwork: ExitPolicyRejectPrivate 0)",
       {"reject 1.0.0.0/8:80, reject 2.0.0.0/8:80, reject 3.0.0.1:80, "
        "accept *:20-21, accept *:80, accept *:*",
        NULL},
       0, 0,
       "reject 1.0.0.0/8:80\n"
       "reject 2.0.0.0/8:80\n"
       "reject 3.0.0.1:80\n"
       "accept *:*\n",
       "reject 80"},
      {"ExitRelay 1, ExitPolicyRejectPrivate 0",
       {"accept 127.0.0.0/8:*, reject *:*", NULL}, 0, 0,
       "accept 127.0.0.0/8:*\n"
       "reject *:*\n",
       "reject 1-65535"},
      {"ExitRelay 1, ExitPolicyRejectPrivate 1, IPv6Exit 1",
       {"reject 10.0.0.0/8:*, reject 11.0.0.0/8:*, reject 12.0.0.0/8:*, "
        "reject 13.0.0.0/255.255.0.0:*",
        "reject6 [2000::]/16:80, reject6 [2001:db8::]/64:81, "
        "reject6 [2002::]/15:82, reject *:25-30,accept *:26, "
        "accept 1.2.3.0/24:27, reject *:6000-7000"},
       1, 1,
       "reject 0.0.0.0/8:*\n"
       "reject 169.254.0.0/16:*\n"
       "reject 127.0.0.0/8:*\n"
       "reject 192.168.0.0/16:*\n"
       "reject 10.0.0.0/8:*\n"
       "reject 172.16.0.0/12:*\n"
       "reject 11.0.0.0/8:*\n"
       "reject 12.0.0.0/8:*\n"
       "reject 13.0.0.0/16:*\n"
       "reject *:25-30\n"
       "reject *:6000-7000\n"
       "reject *:119\n"
       "reject *:135-139\n"
       "reject *:445\n"
       "reject *:563\n"
       "reject *:1214\n"
       "reject *:4661-4666\n"
       "accept *:*\n"
       "ipv6-policy reject 25-30,82,119,135-139,445,563,1214,4661-4666,"
       "6000-7000\n",
       "reject 1-65535"},
  };
  pc_addr_t ours = A("127.0.0.1"); /* every relay's Address */
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    exit_policy_options_t o;
    exit_policy_options_init(&o);
    o.is_exit = 1;
    o.reject_private = v[i].reject_private;
    o.ipv6_exit = v[i].ipv6_exit;
    o.our_addrs = &ours;
    o.n_our_addrs = 1;
    int n = v[i].lines[1] ? 2 : v[i].lines[0] ? 1 : 0;
    char *err = NULL;
    exit_policy_t *p = exit_policy_parse(v[i].lines, n, &o, &err);
    ck_assert_msg(p != NULL, "%zu: %s", i, err ? err : "?");
    char *d = exit_policy_format_descriptor(p);
    ck_assert_msg(!strcmp(d, v[i].desc), "%zu (%s): got\n%s", i,
                  v[i].torrc, d);
    char *s = exit_policy_summarize(p, AF_INET);
    ck_assert_msg(!strcmp(s, v[i].p), "%zu: p '%s' want '%s'", i, s,
                  v[i].p);
    free(s);
    /* An authority summarises the descriptor's lines: same answer. */
    char *nl = strstr(d, "ipv6-policy");
    if (nl)
      *nl = 0;
    for (char *c = d; (c = strchr(c, '\n'));)
      *c = ',';
    exit_policy_t *q = plain(d);
    s = exit_policy_summarize(q, AF_INET);
    ck_assert_str_eq(s, v[i].p);
    free(s);
    exit_policy_free(q);
    free(d);
    exit_policy_free(p);
  }

  /* 600 accepted odd ports: both lists are too long, so the accept list
   * is cut at the last comma within 1000 characters -- tor's "p" line
   * was "accept 1,3,5,...,521,523" (999 characters). */
  char *lines = pc_malloc(20000), *want = pc_malloc(2000);
  strcpy(lines, "");
  strcpy(want, "accept ");
  for (int port = 1; port < 1200; port += 2) {
    char e[32];
    snprintf(e, sizeof(e), "accept *:%d,", port);
    strcat(lines, e);
    if (port <= 523) {
      snprintf(e, sizeof(e), "%s%d", port > 1 ? "," : "", port);
      strcat(want, e);
    }
  }
  strcat(lines, "reject *:*");
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  o.is_exit = 1;
  o.reject_private = 0;
  exit_policy_t *p = build(lines, &o);
  char *s = exit_policy_summarize(p, AF_INET);
  ck_assert_uint_eq(strlen(s), 999);
  ck_assert_str_eq(s, want);
  free(s);
  exit_policy_free(p);
  free(lines);
  free(want);

  /* GETINFO exit-policy/full of a tor exit with IPv6Exit 1,
   * ExitPolicyRejectPrivate 0 and this ExitPolicy. */
  o.ipv6_exit = 1;
  p = build("accept *:80, reject 1.0.0.0/8:443, accept *:443, "
            "accept6 [2001:db8::]/32:22",
            &o);
  char *got = exit_policy_format_rules(p, AF_UNSPEC);
  ck_assert_str_eq(got, "reject 1.0.0.0/8:443\n"
                        "reject *:25\n"
                        "reject6 *:25\n"
                        "reject *:119\n"
                        "reject6 *:119\n"
                        "reject *:135-139\n"
                        "reject6 *:135-139\n"
                        "reject *:445\n"
                        "reject6 *:445\n"
                        "reject *:563\n"
                        "reject6 *:563\n"
                        "reject *:1214\n"
                        "reject6 *:1214\n"
                        "reject *:4661-4666\n"
                        "reject6 *:4661-4666\n"
                        "reject *:6346-6429\n"
                        "reject6 *:6346-6429\n"
                        "reject *:6699\n"
                        "reject6 *:6699\n"
                        "reject *:6881-6999\n"
                        "reject6 *:6881-6999\n"
                        "accept *:*\n"
                        "accept6 *:*");
  /* exit-policy/ipv4 and exit-policy/ipv6: the same rules, one family
   * each, in the same order. */
  char *v4 = exit_policy_format_rules(p, AF_INET);
  char *v6 = exit_policy_format_rules(p, AF_INET6);
  ck_assert_str_eq(v4, "reject 1.0.0.0/8:443\nreject *:25\nreject *:119\n"
                       "reject *:135-139\nreject *:445\nreject *:563\n"
                       "reject *:1214\nreject *:4661-4666\n"
                       "reject *:6346-6429\nreject *:6699\n"
                       "reject *:6881-6999\naccept *:*");
  ck_assert_str_eq(v6, "reject6 *:25\nreject6 *:119\nreject6 *:135-139\n"
                       "reject6 *:445\nreject6 *:563\nreject6 *:1214\n"
                       "reject6 *:4661-4666\nreject6 *:6346-6429\n"
                       "reject6 *:6699\nreject6 *:6881-6999\n"
                       "accept6 *:*");
  free(got);
  free(v4);
  free(v6);
  exit_policy_free(p);
  /* No policy (not an exit): everything is rejected. */
  got = exit_policy_format_rules(NULL, AF_UNSPEC);
  ck_assert_str_eq(got, "reject *:*");
  free(got);
  got = exit_policy_format_rules(NULL, AF_INET6);
  ck_assert_str_eq(got, "reject6 *:*");
  free(got);
}
END_TEST

/* ---- summaries ---- */

/* An ipv6-policy summary longer than a line buffer is written whole, with
 * its newline (the descriptor builder once cut it at 127 characters). */
START_TEST(test_descriptor_long_ipv6_summary)
{
  char line[1024], want[512];
  size_t n = 0, w = 0;
  w += (size_t)snprintf(want + w, sizeof(want) - w, "ipv6-policy reject ");
  for (int port = 1001; port < 1080; port += 2) {
    n += (size_t)snprintf(line + n, sizeof(line) - n, "reject6 *:%d, ", port);
    w += (size_t)snprintf(want + w, sizeof(want) - w, "%s%d",
                          port > 1001 ? "," : "", port);
  }
  snprintf(line + n, sizeof(line) - n, "accept *:*");
  snprintf(want + w, sizeof(want) - w, "\n");
  ck_assert_uint_gt(strlen(want), 150);
  exit_policy_t *p = plain(line);
  char *d = exit_policy_format_descriptor(p);
  const char *l6 = strstr(d, "ipv6-policy ");
  ck_assert_ptr_nonnull(l6);
  ck_assert_str_eq(l6, want);
  free(d);
  exit_policy_free(p);
}
END_TEST

START_TEST(test_summary_edges)
{
  /* Expected strings from tests/vectors/policy_summary_ref.py. */
  check_summary(EXIT_POLICY_DEFAULT, AF_INET,
                "reject 25,119,135-139,445,563,1214,4661-4666,6346-6429,"
                "6699,6881-6999");
  check_summary(EXIT_POLICY_DEFAULT, AF_INET6,
                "reject 25,119,135-139,445,563,1214,4661-4666,6346-6429,"
                "6699,6881-6999");
  check_summary("accept *4:80,accept *4:443,reject *4:*", AF_INET,
                "accept 80,443");
  check_summary("accept 127.0.0.0/8:*,reject *4:*", AF_INET,
                "reject 1-65535");
  check_summary("accept *4:80-88,accept *4:89-100,accept *4:20,"
                "accept *4:21,reject *4:*",
                AF_INET, "accept 20-21,80-100");
  check_summary("reject *4:1,reject *4:65535,accept *4:*", AF_INET,
                "accept 2-65534"); /* a tie: accept */
  check_summary("reject 1.0.0.0/8:80,reject 2.0.0.0/8:80,accept *4:*",
                AF_INET, "accept 1-65535"); /* exactly 2^25 */
  check_summary("reject 1.0.0.0/8:80,reject 2.0.0.0/8:80,"
                "reject 3.0.0.1/32:80,accept *4:*",
                AF_INET, "reject 80");
  check_summary("reject 10.0.0.0/8:*,reject 11.0.0.0/8:*,"
                "reject 12.0.0.0/8:*,accept *4:*",
                AF_INET, "accept 1-65535"); /* 10/8 is private: ignored */
  check_summary("reject 10.0.0.0/7:*,reject 12.0.0.0/8:*,accept *4:*",
                AF_INET, "reject 1-65535"); /* 10/7 is not */
  check_summary("reject *4:22,accept 1.2.0.0/16:*,reject 5.0.0.0/8:443,"
                "accept *4:80-443,reject *4:*",
                AF_INET, "accept 80-443");
  check_summary("reject [2001::]/16:80,accept *6:*", AF_INET6,
                "accept 1-65535");
  check_summary("reject [2000::]/15:80,accept *6:*", AF_INET6, "reject 80");
  check_summary("reject [2001:db8::]/65:80,reject [2001:db8::1]/128:81,"
                "accept *6:*",
                AF_INET6, "accept 1-65535");
  check_summary("reject *6:80,accept *6:*", AF_INET6, "reject 80");
  /* Extremes. */
  check_summary("accept *:*", AF_INET, "accept 1-65535");
  check_summary("reject *:*", AF_INET, "reject 1-65535");
  check_summary("", AF_INET, "reject 1-65535");
  check_summary("accept *6:*", AF_INET, "reject 1-65535");
  check_summary("accept *:65535,reject *:*", AF_INET, "accept 65535");
  check_summary("accept *:1,reject *:*", AF_INET, "accept 1");
  check_summary("reject *:1-65534,accept *:*", AF_INET, "accept 65535");
  char *s = exit_policy_summarize(NULL, AF_INET);
  ck_assert_str_eq(s, "reject 1-65535");
  free(s);
}
END_TEST

/* Small deterministic PRNG for the randomised test. */
static uint32_t
rnd(uint32_t *st)
{
  *st ^= *st << 13;
  *st ^= *st >> 17;
  *st ^= *st << 5;
  return *st;
}

/* For policies whose rules all cover every address, the summary must be
 * exactly the set of ports a public address is accepted on. */
START_TEST(test_summary_random)
{
  uint32_t st = 0x12345678;
  for (int iter = 0; iter < 200; iter++) {
    char line[4096] = "";
    int nr = 1 + (int)(rnd(&st) % 30);
    for (int i = 0; i < nr; i++) {
      unsigned lo = 1 + rnd(&st) % 400, len = rnd(&st) % 50;
      if (rnd(&st) % 8 == 0)
        lo = 65535 - len;
      char e[64];
      snprintf(e, sizeof(e), "%s *4:%u-%u,", rnd(&st) % 2 ? "accept" : "reject",
               lo, lo + len > 65535 ? 65535 : lo + len);
      strcat(line, e);
    }
    strcat(line, rnd(&st) % 2 ? "accept *4:*" : "reject *4:*");
    exit_policy_t *p = plain(line);
    /* What exit writes, read back by the one port-set implementation
     * (feature/dir's policy_summary, which path selection uses). */
    char *s1 = exit_policy_summarize(p, AF_INET);
    policy_summary_t *sum = policy_summary_parse_line(s1, NULL);
    ck_assert_ptr_nonnull(sum);
    pc_addr_t a = A("8.8.8.8");
    for (uint32_t port = 1; port <= 65535; port++) {
      int want = exit_policy_allows(p, &a, (uint16_t)port) ==
                 EXIT_POLICY_ACCEPTED;
      if (policy_summary_allows_port(sum, (uint16_t)port) != want)
        ck_abort_msg("%s: port %u: summary %d, policy %d", line, port, !want,
                     want);
    }
    /* The strict (dir-spec) parser takes it too: exit writes canonical
     * summaries. */
    const char *sp = strchr(s1, ' ');
    const char *perr = NULL;
    policy_summary_t *strict = policy_summary_parse(
        s1, (size_t)(sp - s1), sp + 1, strlen(sp + 1), &perr);
    ck_assert_msg(strict != NULL, "%s: %s", s1, perr ? perr : "?");
    policy_summary_free(strict);
    /* Round trip: summary -> port set -> the same summary. */
    char *s2 = policy_summary_format_new(sum);
    ck_assert_str_eq(s1, s2);
    free(s1);
    free(s2);
    policy_summary_free(sum);
    exit_policy_free(p);
  }
}
END_TEST

START_TEST(test_summary_parse)
{
  char *err = NULL;
  policy_summary_t *s = policy_summary_parse_line("accept 80,443", &err);
  ck_assert_ptr_nonnull(s);
  ck_assert(policy_summary_allows_port(s, 80));
  ck_assert(policy_summary_allows_port(s, 443));
  ck_assert(!policy_summary_allows_port(s, 81));
  ck_assert(!policy_summary_allows_port(s, 0));
  ck_assert(!policy_summary_is_reject_star(s));
  policy_summary_free(s);
  ck_assert_ptr_null(s);

  s = policy_summary_parse_line("reject 25,119,135-139", &err);
  ck_assert(policy_summary_allows_port(s, 80));
  ck_assert(policy_summary_allows_port(s, 1));
  ck_assert(policy_summary_allows_port(s, 65535));
  ck_assert(!policy_summary_allows_port(s, 25));
  ck_assert(!policy_summary_allows_port(s, 135));
  ck_assert(!policy_summary_allows_port(s, 137));
  ck_assert(!policy_summary_allows_port(s, 139));
  ck_assert(policy_summary_allows_port(s, 140));
  ck_assert(!policy_summary_allows_port(s, 0));
  policy_summary_free(s);

  s = policy_summary_parse_line("reject 1-65535", &err);
  ck_assert(policy_summary_is_reject_star(s));
  ck_assert(!policy_summary_allows_port(s, 80));
  policy_summary_free(s);
  s = policy_summary_parse_line("accept 1-65535", &err);
  ck_assert(!policy_summary_is_reject_star(s));
  ck_assert(policy_summary_allows_port(s, 1));
  ck_assert(policy_summary_allows_port(s, 65535));
  policy_summary_free(s);
  ck_assert(!policy_summary_allows_port(NULL, 80));
  ck_assert(policy_summary_is_reject_star(NULL));

  /* Normalised: sorted, overlaps and neighbours merged. */
  static const struct {
    const char *in, *out;
  } norm[] = {
      {"accept 443,80,79-81", "accept 79-81,443"},
      {"reject 1-100,101-65535", "reject 1-65535"},
      {"accept 5,4,3,2,1", "accept 1-5"},
      {"accept 10-20,15-16,12", "accept 10-20"},
      {"accept 80,foo,443", "accept 80,443"}, /* tor skips such entries */
      {"accept 80,,443", "accept 80,443"},
      {"accept 80,-5,443", "accept 80,443"},
      {"accept 80,443,", "accept 80,443"},
      {"reject 1-65535,x", "reject 1-65535"},
  };
  for (size_t i = 0; i < sizeof(norm) / sizeof(norm[0]); i++) {
    s = policy_summary_parse_line(norm[i].in, &err);
    ck_assert_msg(s != NULL, "'%s': %s", norm[i].in, err ? err : "?");
    char *f = policy_summary_format_new(s);
    ck_assert_msg(!strcmp(f, norm[i].out), "'%s' -> '%s'", norm[i].in, f);
    free(f);
    policy_summary_free(s);
  }

  static const struct {
    const char *in, *why;
  } bad[] = {
      {"allow 80", "must start with"},
      {"accept80", "must start with"},
      {"accept ", "no port ranges"},
      {"accept foo", "no port ranges"},
      {"accept 0", "bad port"},
      {"accept 65536", "bad port"},
      {"accept 123456", "bad port"},
      {"accept 80-79", "bad port range"},
      {"accept 80-", "bad port range"},
      {"accept 80-65536", "bad port range"},
      {"accept 80;443", "bad port list"},
      {"accept 80x", "bad port list"},
      {"accept 80-90x", "bad port list"},
      {"accept 80 443", "bad port list"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err = NULL;
    s = policy_summary_parse_line(bad[i].in, &err);
    ck_assert_msg(s == NULL, "'%s' accepted", bad[i].in);
    ck_assert_msg(err && strstr(err, bad[i].why), "'%s': '%s'", bad[i].in,
                  err ? err : "(none)");
    free(err);
  }
  ck_assert_ptr_null(policy_summary_parse_line(NULL, NULL));

  /* At most 1000 entries. */
  char *big = pc_malloc(8000);
  strcpy(big, "accept 1");
  for (int i = 2; i <= 1000; i++)
    sprintf(big + strlen(big), ",%d", i * 2);
  s = policy_summary_parse_line(big, &err);
  ck_assert_ptr_nonnull(s);
  ck_assert(policy_summary_allows_port(s, 2000));
  ck_assert(!policy_summary_allows_port(s, 1999));
  policy_summary_free(s);
  strcat(big, ",3000");
  err = NULL;
  ck_assert_ptr_null(policy_summary_parse_line(big, &err));
  ck_assert_ptr_nonnull(strstr(err, "too many"));
  free(err);
  free(big);
}
END_TEST

START_TEST(test_format_round_trip)
{
  pc_addr_t ours[2] = {A("1.2.3.4"), A("2001:db8::1")};
  exit_policy_options_t o;
  exit_policy_options_init(&o);
  o.is_exit = 1;
  o.ipv6_exit = 1;
  o.our_addrs = ours;
  o.n_our_addrs = 2;
  exit_policy_t *p = build("accept 18.7.22.69:*,reject 18.0.0.0/8:*,"
                           "accept6 [2001:db8::]/48:22-23,reject 9.9.9.9:99",
                           &o);
  /* The torrc form of each rule parses back to the same rule. */
  char line[65536] = "";
  for (int i = 0; i < exit_policy_n_rules(p); i++) {
    if (i)
      strcat(line, ",");
    strcat(line, rule_str(p, i, 0));
  }
  exit_policy_t *q = plain(line);
  ck_assert_int_eq(exit_policy_n_rules(p), exit_policy_n_rules(q));
  for (int i = 0; i < exit_policy_n_rules(p); i++)
    ck_assert_mem_eq(exit_policy_get_rule(p, i), exit_policy_get_rule(q, i),
                     sizeof(exit_policy_rule_t));
  exit_policy_free(q);
  exit_policy_free(p);

  /* Formats of single rules. */
  p = plain("accept6 [2001:db8::]/32:80-81,reject 1.2.3.4:*,accept *4:7");
  ck_assert_str_eq(rule_str(p, 0, 1), "accept6 [2001:db8::]/32:80-81");
  ck_assert_str_eq(rule_str(p, 0, 0), "accept [2001:db8::]/32:80-81");
  ck_assert_str_eq(rule_str(p, 1, 1), "reject 1.2.3.4:*");
  ck_assert_str_eq(rule_str(p, 2, 1), "accept *:7");
  ck_assert_str_eq(rule_str(p, 2, 0), "accept *4:7");
  exit_policy_free(p);
  /* The longest rule fits the buffer. */
  p = plain("accept6 [ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe]/127:"
            "65534-65535");
  ck_assert_str_eq(
      rule_str(p, 0, 1),
      "accept6 [ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe]/127:65534-65535");
  exit_policy_free(p);
  /* A policy without IPv4 rules still gives a descriptor line. */
  p = plain("accept6 *:80");
  char *d = exit_policy_format_descriptor(p);
  ck_assert_str_eq(d, "reject *:*\nipv6-policy accept 80\n");
  free(d);
  exit_policy_free(p);
}
END_TEST

Suite *
suite_policy(void)
{
  Suite *s = suite_create("policy");
  TCase *tc = tcase_create("policy");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_parse_forms);
  tcase_add_test(tc, test_parse_errors);
  tcase_add_test(tc, test_first_match);
  tcase_add_test(tc, test_build_exit);
  tcase_add_test(tc, test_build_nonexit);
  tcase_add_test(tc, test_build_reduced);
  tcase_add_test(tc, test_unknown_address);
  tcase_add_test(tc, test_redundancy);
  tcase_add_test(tc, test_tor_vectors);
  tcase_add_test(tc, test_summary_edges);
  tcase_add_test(tc, test_descriptor_long_ipv6_summary);
  tcase_add_test(tc, test_summary_random);
  tcase_add_test(tc, test_summary_parse);
  tcase_add_test(tc, test_format_round_trip);
  suite_add_tcase(s, tc);
  return s;
}
