/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dns.c -- unit tests for lib/evloop/dns: asynchronous resolution
 * against a tiny DNS server that runs inside the test.
 *
 * Safety: every resolver here reads only a temporary resolv.conf naming
 * the test's own server on 127.0.0.1 (a random UDP port); the system's
 * /etc/resolv.conf and its nameservers are never used. The server answers
 * from a fixed table (A, AAAA, PTR), stays silent for one name (timeouts),
 * refuses another, and says NXDOMAIN for everything else. It counts the
 * queries it receives, so tests can check that IP literals and invalid
 * names are answered without a query.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bytes/bytes.h"
#include "lib/evloop/dns.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/memacct.h"
#include "lib/address/address.h"

Suite *suite_dns(void);

/* ---- the test's DNS server ---- */

typedef struct {
  evloop_t *loop;
  int fd;
  evloop_io_t *io;
  uint16_t port;
  int n_queries;
  int n_silent; /* queries for silent.example.com */
  int exit_after_answering; /* make evloop_run() return after answering */
  char last_qname_raw[256]; /* as received (evdns randomizes case) */
  char conf[64];            /* temporary resolv.conf */
  dns_resolver_t *r;
} env_t;

static env_t E;

/* Append a name in wire format (no compression). */
static size_t
put_name(uint8_t *p, const char *name)
{
  size_t o = 0;
  while (*name) {
    const char *dot = strchr(name, '.');
    size_t l = dot ? (size_t)(dot - name) : strlen(name);
    p[o++] = (uint8_t)l;
    memcpy(p + o, name, l);
    o += l;
    name += l;
    if (*name == '.')
      name++;
  }
  p[o++] = 0;
  return o;
}

/* Append one answer record whose owner is the question (pointer to 12). */
static size_t
put_rr(uint8_t *p, uint16_t type, uint32_t ttl, const uint8_t *rdata,
       size_t rdlen)
{
  p[0] = 0xc0;
  p[1] = 0x0c;
  set_u16(p + 2, type);
  set_u16(p + 4, 1); /* IN */
  set_u32(p + 6, ttl);
  set_u16(p + 10, (uint16_t)rdlen);
  memcpy(p + 12, rdata, rdlen);
  return 12 + rdlen;
}

static size_t
put_a(uint8_t *p, const char *ip, uint32_t ttl)
{
  uint8_t a[4];
  ck_assert_int_eq(inet_pton(AF_INET, ip, a), 1);
  return put_rr(p, 1, ttl, a, 4);
}

static size_t
put_aaaa(uint8_t *p, const char *ip, uint32_t ttl)
{
  uint8_t a[16];
  ck_assert_int_eq(inet_pton(AF_INET6, ip, a), 1);
  return put_rr(p, 28, ttl, a, 16);
}

static size_t
put_ptr(uint8_t *p, const char *name, uint32_t ttl)
{
  uint8_t rd[256];
  size_t l = put_name(rd, name);
  return put_rr(p, 12, ttl, rd, l);
}

#define V6_PTR_NAME \
  "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"

/* Handle one query; returns 0 when there was none to read. */
static int
server_handle_one(env_t *e, int fd)
{
  uint8_t q[512], resp[1024];
  struct sockaddr_storage from;
  socklen_t fromlen = sizeof(from);
  ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from,
                       &fromlen);
  if (n < 0)
    return 0;
  if (n < 12)
    return 1;
  e->n_queries++;
  if (get_u16(q + 4) != 1)
    return 1;
  /* Parse the question name (lower-cased for matching). */
  char name[256];
  size_t nl = 0, i = 12;
  while (i < (size_t)n && q[i]) {
    size_t l = q[i];
    if (l > 63 || i + 1 + l > (size_t)n || nl + l + 1 >= sizeof(name))
      return 1;
    if (nl)
      name[nl++] = '.';
    memcpy(name + nl, q + i + 1, l);
    nl += l;
    i += 1 + l;
  }
  if (i + 5 > (size_t)n)
    return 1;
  name[nl] = '\0';
  memcpy(e->last_qname_raw, name, nl + 1);
  for (size_t k = 0; k < nl; k++)
    name[k] = (char)tolower((unsigned char)name[k]);
  i++; /* root label */
  uint16_t qtype = get_u16(q + i);
  i += 4;
  size_t qend = i;

  int rcode = 0;
  uint16_t ancount = 0;
  size_t o = qend;
  memcpy(resp, q, qend);
  if (!strcmp(name, "silent.example.com")) {
    e->n_silent++;
    return 1;
  } else if (!strcmp(name, "refused.example.com")) {
    rcode = 5;
  } else if (!strcmp(name, "www.example.com")) {
    if (qtype == 1) {
      o += put_a(resp + o, "192.0.2.1", 300);
      o += put_a(resp + o, "192.0.2.2", 300);
      ancount = 2;
    } else if (qtype == 28) {
      o += put_aaaa(resp + o, "2001:db8::1", 600);
      ancount = 1;
    }
  } else if (!strcmp(name, "v4only.example.com") ||
             !strcmp(name, "under_score.example.com")) {
    if (qtype == 1) {
      o += put_a(resp + o, "198.51.100.7", 60);
      ancount = 1;
    } /* AAAA: NOERROR without records */
  } else if (!strcmp(name, "many.example.com")) {
    if (qtype == 1) {
      for (int k = 1; k <= 10; k++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "203.0.113.%d", k);
        o += put_a(resp + o, ip, 30);
        ancount++;
      }
    }
  } else if (!strcmp(name, "1.2.0.192.in-addr.arpa") && qtype == 12) {
    o += put_ptr(resp + o, "www.example.com", 120);
    ancount = 1;
  } else if (!strcmp(name, "9.2.0.192.in-addr.arpa") && qtype == 12) {
    o += put_ptr(resp + o, "bad name!.example", 120);
    ancount = 1;
  } else if (!strcmp(name, V6_PTR_NAME) && qtype == 12) {
    o += put_ptr(resp + o, "v6.example.com", 90);
    ancount = 1;
  } else {
    rcode = 3; /* NXDOMAIN */
  }
  set_u16(resp + 2, (uint16_t)(0x8180 | rcode)); /* QR RD RA */
  set_u16(resp + 6, ancount);
  set_u16(resp + 8, 0);
  set_u16(resp + 10, 0);
  ck_assert_int_eq(sendto(fd, resp, o, 0, (struct sockaddr *)&from, fromlen),
                   (ssize_t)o);
  return 1;
}

/* Answers every query waiting on the socket, so that queries sent
 * together are answered together. */
static void
server_read(int fd, int what, void *arg)
{
  env_t *e = arg;
  (void)what;
  while (server_handle_one(e, fd))
    ;
  if (e->exit_after_answering)
    evloop_exit(e->loop);
}

static void
write_file(const char *path, const char *content)
{
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(content, f);
  fclose(f);
}

/* A temporary resolv.conf naming the test server, with extra lines. */
static void
write_conf(const char *extra)
{
  char buf[512];
  snprintf(buf, sizeof(buf), "# test resolver\nnameserver 127.0.0.1:%u\n%s",
           (unsigned)E.port, extra ? extra : "");
  write_file(E.conf, buf);
}

static void
env_setup(void)
{
  memset(&E, 0, sizeof(E));
  memacct_reset_for_testing();
  E.loop = evloop_new();
  E.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(E.fd, 0);
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = 0;
  ck_assert_int_eq(bind(E.fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  socklen_t sl = sizeof(sin);
  ck_assert_int_eq(getsockname(E.fd, (struct sockaddr *)&sin, &sl), 0);
  E.port = ntohs(sin.sin_port);
  E.io = evloop_io_new(E.loop, E.fd, server_read, &E);
  evloop_io_set(E.io, EVLOOP_READ);
  strcpy(E.conf, "/tmp/pctor-check-dns-XXXXXX");
  int cfd = mkstemp(E.conf);
  ck_assert_int_ge(cfd, 0);
  close(cfd);
  write_conf("options timeout:3 attempts:1\n");
}

/* Make the resolver from E.conf (which must name only 127.0.0.1). */
static void
env_resolver(void)
{
  char *err = NULL;
  E.r = dns_resolver_new(E.loop, E.conf, &err);
  ck_assert_msg(E.r != NULL, "dns_resolver_new: %s", err ? err : "?");
  ck_assert_int_eq(dns_resolver_n_nameservers(E.r), 1);
}

static void
env_teardown(void)
{
  dns_resolver_free(E.r);
  /* Cancelled requests are released by evdns's reports, which run from
   * the loop: let it run with the server gone. */
  evloop_io_free(E.io);
  close(E.fd);
  ck_assert_int_eq(evloop_run(E.loop), 0);
  evloop_free(E.loop);
  unlink(E.conf);
  /* Every request, whatever its end, gave back what it counted. */
  ck_assert_uint_eq(memacct_get(MEMACCT_DNS), 0);
  ck_assert_uint_eq(memacct_underflows(), 0);
}

/* ---- collecting results ---- */

typedef struct {
  int called;
  int result;
  int n;
  dns_answer_t ans[2 * DNS_MAX_ADDRS_PER_FAMILY];
  char host[256];
} res_t;

static int n_done, n_wanted;

static void
res_cb(int result, const dns_answer_t *answers, int n_answers, void *arg)
{
  res_t *r = arg;
  r->called++;
  r->result = result;
  r->n = n_answers;
  ck_assert_int_le(n_answers, 2 * DNS_MAX_ADDRS_PER_FAMILY);
  if (result != DNS_RESULT_OK)
    ck_assert_int_eq(n_answers, 0);
  for (int i = 0; i < n_answers; i++) {
    r->ans[i] = answers[i];
    r->ans[i].hostname = NULL;
    if (answers[i].hostname)
      snprintf(r->host, sizeof(r->host), "%s", answers[i].hostname);
  }
  if (++n_done >= n_wanted)
    evloop_exit(E.loop);
}

static void
guard_cb(void *arg)
{
  int *fired = arg;
  *fired = 1;
  evloop_exit(E.loop);
}

/* Run the loop until `wanted` callbacks ran (counting from now), or for
 * max_ms. Returns 1 if the time ran out. */
static int
run_for(int wanted, unsigned max_ms)
{
  int fired = 0;
  n_done = 0;
  n_wanted = wanted;
  evloop_timer_t *t = evloop_timer_new(E.loop, guard_cb, &fired);
  evloop_timer_schedule(t, (uint64_t)max_ms * 1000u);
  ck_assert_int_eq(evloop_run(E.loop), 0);
  evloop_timer_free(t);
  return fired;
}

static void
wait_for(int wanted)
{
  ck_assert_msg(!run_for(wanted, 5000), "timed out waiting for %d callbacks",
                wanted);
  ck_assert_int_eq(n_done, wanted);
}

static void
assert_addr(const dns_answer_t *a, const char *ip, uint32_t ttl)
{
  pc_addr_t want;
  ck_assert_int_eq(pc_addr_parse_ip(&want, ip, 0), 0);
  char buf[PC_ADDR_STR_LEN];
  ck_assert_msg(pc_addr_eq(&a->addr, &want, 1), "got %s, want %s",
                pc_addr_fmt(&a->addr, buf, sizeof(buf), 0), ip);
  ck_assert_uint_eq(a->ttl, ttl);
}

/* ---- tests ---- */

START_TEST(test_hostname_validation)
{
  static const char *good[] = {
    "example.com", "www.example.com.", "a", "under_score.example.com",
    "x-1.example", "xn--bcher-kva.example", "1.2.3.example", "a1", "A.B.C",
    "123abc",
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
    ck_assert_msg(dns_hostname_is_valid(good[i]), "rejected %s", good[i]);
  char label63[64], label64[65], name253[300], name254[300];
  memset(label63, 'a', 63);
  label63[63] = '\0';
  memset(label64, 'a', 64);
  label64[64] = '\0';
  /* 4 labels of 63 = 252 characters with dots (63*4 + 3 = 255): too long;
   * build 253 = 63+1+63+1+63+1+61 and 254 = one more. */
  snprintf(name253, sizeof(name253), "%s.%s.%s.%.61s", label63, label63,
           label63, label63);
  ck_assert_uint_eq(strlen(name253), 253);
  ck_assert(dns_hostname_is_valid(name253));
  snprintf(name254, sizeof(name254), "%s.", name253);
  ck_assert(dns_hostname_is_valid(name254)); /* final dot not counted */
  snprintf(name254, sizeof(name254), "%s.%s.%s.%.62s", label63, label63,
           label63, label63);
  ck_assert_uint_eq(strlen(name254), 254);
  ck_assert(!dns_hostname_is_valid(name254));
  ck_assert(dns_hostname_is_valid(label63));
  ck_assert(!dns_hostname_is_valid(label64));
  static const char *bad[] = {
    "", ".", "..", ".example.com", "a..b", "example.com..", "-a.example",
    "a.-b.example", "a b.example", "a\tb", "a/b", "a:b", "a@b", "exa\x01mple",
    "caf\xc3\xa9.example", "1.2.3", "1.2.3.4.5", "256.1.1.1", "a.123",
    "example.com:80", "[::1", "::1]", "*.example.com",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(!dns_hostname_is_valid(bad[i]), "accepted '%s'", bad[i]);
  ck_assert(!dns_hostname_is_valid(NULL));

  pc_addr_t a, want;
  ck_assert_int_eq(dns_parse_ip_literal("192.0.2.55", &a), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "192.0.2.55", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  ck_assert_int_eq(dns_parse_ip_literal("[2001:db8::5]", &a), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "2001:db8::5", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  ck_assert_int_eq(dns_parse_ip_literal("2001:db8::5", &a), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  static const char *not_literal[] = {
    "[192.0.2.1]", "1.2.3", "192.0.2.1:80", "[::1]:80", "[]", "[", "::1]",
    "www.example.com", "", "01.2.3.4", "fe80::1%eth0",
  };
  for (size_t i = 0; i < sizeof(not_literal) / sizeof(not_literal[0]); i++)
    ck_assert_msg(dns_parse_ip_literal(not_literal[i], &a) < 0,
                  "took '%s' as a literal", not_literal[i]);
  ck_assert_int_lt(dns_parse_ip_literal(NULL, &a), 0);
}
END_TEST

START_TEST(test_reverse_names)
{
  pc_addr_t a, want;
  ck_assert_int_eq(dns_reverse_name_parse("1.2.0.192.in-addr.arpa", &a), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "192.0.2.1", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  ck_assert_int_eq(dns_reverse_name_parse("0.0.255.10.IN-ADDR.ARPA.", &a), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "10.255.0.0", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  ck_assert_int_eq(dns_reverse_name_parse(V6_PTR_NAME, &a), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "2001:db8::1", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  /* RFC 3596 section 2.5's example address 4321:0:1:2:3:4:567:89ab. */
  ck_assert_int_eq(
    dns_reverse_name_parse("b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0."
                           "0.0.0.0.1.2.3.4.IP6.ARPA",
                           &a),
    0);
  ck_assert_int_eq(pc_addr_parse_ip(&want, "4321:0:1:2:3:4:567:89ab", 0), 0);
  ck_assert(pc_addr_eq(&a, &want, 1));
  static const char *bad[] = {
    "in-addr.arpa", ".in-addr.arpa", "2.0.192.in-addr.arpa",
    "5.1.2.0.192.in-addr.arpa", "256.2.0.192.in-addr.arpa",
    "01.2.0.192.in-addr.arpa", "1.2..192.in-addr.arpa",
    "a.2.0.192.in-addr.arpa", "1.2.0.192.in-addr.arpa.com", "1.2.0.192",
    "1.0.0.0.ip6.arpa", "g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b."
    "d.0.1.0.0.2.ip6.arpa", "10.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0."
    "8.b.d.0.1.0.0.2.ip6.arpa", "", NULL,
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(dns_reverse_name_parse(bad[i], &a) < 0, "accepted '%s'",
                  bad[i] ? bad[i] : "(null)");

  ck_assert_str_eq(dns_result_str(DNS_RESULT_OK), "ok");
  ck_assert_str_eq(dns_result_str(DNS_RESULT_NOTFOUND), "name not found");
  ck_assert_str_eq(dns_result_str(DNS_RESULT_LIMIT),
                   "too many DNS requests outstanding");
  ck_assert_str_eq(dns_result_str(12345), "unknown DNS result");
  ck_assert(!dns_result_is_transient(DNS_RESULT_OK));
  ck_assert(!dns_result_is_transient(DNS_RESULT_NOTFOUND));
  ck_assert(!dns_result_is_transient(DNS_RESULT_INVALID));
  ck_assert(dns_result_is_transient(DNS_RESULT_TIMEOUT));
  ck_assert(dns_result_is_transient(DNS_RESULT_SERVFAIL));
  ck_assert(dns_result_is_transient(DNS_RESULT_LIMIT));
  ck_assert(dns_result_is_transient(DNS_RESULT_ERROR));
}
END_TEST

static void
expect_conf_error(const char *content, const char *needle)
{
  if (content)
    write_file(E.conf, content);
  else
    unlink(E.conf);
  char *err = NULL;
  dns_resolver_t *r = dns_resolver_new(E.loop, E.conf, &err);
  ck_assert_ptr_null(r);
  ck_assert_ptr_nonnull(err);
  ck_assert_msg(strstr(err, E.conf) && strstr(err, needle),
                "error '%s' lacks '%s'", err, needle);
  free(err);
  r = dns_resolver_new(E.loop, E.conf, NULL); /* err is optional */
  ck_assert_ptr_null(r);
}

START_TEST(test_config)
{
  env_setup();
  expect_conf_error(NULL, "cannot open");
  expect_conf_error("", "no usable nameserver");
  expect_conf_error("# nothing here\n\n", "no usable nameserver");
  expect_conf_error("search example.com\noptions timeout:1\n",
                    "no usable nameserver");
  expect_conf_error("nameserver not-an-address\n", "no usable nameserver");
  expect_conf_error("nameserver 127.0.0.1:99999\n", "no usable nameserver");
  /* A directory cannot be read as a file. */
  char dir[64];
  strcpy(dir, "/tmp/pctor-check-dns-dir-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char *err = NULL;
  ck_assert_ptr_null(dns_resolver_new(E.loop, dir, &err));
  ck_assert_ptr_nonnull(err);
  ck_assert_ptr_nonnull(strstr(err, dir));
  free(err);
  rmdir(dir);

  /* Two nameservers, both on loopback, with and without a port. */
  char buf[256];
  snprintf(buf, sizeof(buf),
           "nameserver 127.0.0.1:%u\nnameserver 127.0.0.2\n"
           "search example.com\noptions attempts:1\n",
           (unsigned)E.port);
  write_file(E.conf, buf);
  err = NULL;
  dns_resolver_t *r = dns_resolver_new(E.loop, E.conf, &err);
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_null(err);
  ck_assert_int_eq(dns_resolver_n_nameservers(r), 2);
  ck_assert_int_eq(dns_resolver_set_timeout(r, 250, 2), 0);
  ck_assert_int_lt(dns_resolver_set_timeout(r, 0, 1), 0);
  ck_assert_int_lt(dns_resolver_set_timeout(r, 100, 0), 0);
  ck_assert_int_lt(dns_resolver_set_timeout(r, 100, 256), 0);
  dns_resolver_free(r);
  ck_assert_ptr_null(r);
  dns_resolver_free(r); /* NULL is fine */
  write_conf(NULL);
  env_teardown();
}
END_TEST

START_TEST(test_forward)
{
  env_setup();
  env_resolver();
  res_t a = {0}, aaaa = {0}, both = {0}, many = {0}, v4both = {0},
        us = {0}, upper = {0}, dot = {0};
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &a);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV6, res_cb, &aaaa);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6, res_cb,
              &both);
  dns_resolve(E.r, "many.example.com", 0, res_cb, &many); /* 0: IPv4 */
  dns_resolve(E.r, "v4only.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6,
              res_cb, &v4both);
  dns_resolve(E.r, "under_score.example.com", DNS_WANT_IPV4, res_cb, &us);
  dns_resolve(E.r, "WWW.Example.COM", DNS_WANT_IPV4, res_cb, &upper);
  dns_resolve(E.r, "www.example.com.", DNS_WANT_IPV6, res_cb, &dot);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 8);
  ck_assert_int_eq(a.called, 0); /* never from inside dns_resolve() */
  wait_for(8);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 0);
  ck_assert_int_eq(E.n_queries, 10); /* two requests asked A and AAAA */

  ck_assert_int_eq(a.called, 1);
  ck_assert_int_eq(a.result, DNS_RESULT_OK);
  ck_assert_int_eq(a.n, 2);
  assert_addr(&a.ans[0], "192.0.2.1", 300);
  assert_addr(&a.ans[1], "192.0.2.2", 300);

  ck_assert_int_eq(aaaa.result, DNS_RESULT_OK);
  ck_assert_int_eq(aaaa.n, 1);
  assert_addr(&aaaa.ans[0], "2001:db8::1", 600);

  ck_assert_int_eq(both.result, DNS_RESULT_OK);
  ck_assert_int_eq(both.n, 3); /* IPv4 first */
  assert_addr(&both.ans[0], "192.0.2.1", 300);
  assert_addr(&both.ans[1], "192.0.2.2", 300);
  assert_addr(&both.ans[2], "2001:db8::1", 600);

  ck_assert_int_eq(many.result, DNS_RESULT_OK);
  ck_assert_int_eq(many.n, DNS_MAX_ADDRS_PER_FAMILY);
  assert_addr(&many.ans[0], "203.0.113.1", 30);
  assert_addr(&many.ans[7], "203.0.113.8", 30);

  /* AAAA had no record, A had one: the request succeeds. */
  ck_assert_int_eq(v4both.result, DNS_RESULT_OK);
  ck_assert_int_eq(v4both.n, 1);
  assert_addr(&v4both.ans[0], "198.51.100.7", 60);

  ck_assert_int_eq(us.result, DNS_RESULT_OK);
  assert_addr(&us.ans[0], "198.51.100.7", 60);
  ck_assert_int_eq(upper.result, DNS_RESULT_OK);
  ck_assert_int_eq(upper.n, 2);
  ck_assert_int_eq(dot.result, DNS_RESULT_OK);
  assert_addr(&dot.ans[0], "2001:db8::1", 600);
  for (int i = 0; i < a.n; i++)
    ck_assert_uint_eq(a.ans[i].addr.port, 0);
  env_teardown();
}
END_TEST

START_TEST(test_notfound)
{
  env_setup();
  env_resolver();
  res_t nx = {0}, nx6 = {0}, nodata = {0};
  dns_resolve(E.r, "nonexistent.example.com", DNS_WANT_IPV4, res_cb, &nx);
  dns_resolve(E.r, "nonexistent.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6,
              res_cb, &nx6);
  dns_resolve(E.r, "v4only.example.com", DNS_WANT_IPV6, res_cb, &nodata);
  wait_for(3);
  ck_assert_int_eq(nx.result, DNS_RESULT_NOTFOUND);
  ck_assert_int_eq(nx.n, 0);
  ck_assert_int_eq(nx6.result, DNS_RESULT_NOTFOUND);
  ck_assert_int_eq(nodata.result, DNS_RESULT_NOTFOUND);
  ck_assert(!dns_result_is_transient(nx.result));
  env_teardown();
}
END_TEST

START_TEST(test_timeout)
{
  env_setup();
  write_conf("options timeout:0.2 attempts:1\n");
  env_resolver();
  res_t t1 = {0};
  uint64_t start = evloop_now_us(E.loop);
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4, res_cb, &t1);
  wait_for(1);
  uint64_t took = evloop_now_us(E.loop) - start;
  ck_assert_int_eq(t1.result, DNS_RESULT_TIMEOUT);
  ck_assert(dns_result_is_transient(t1.result));
  ck_assert_uint_ge(took, 150000);
  ck_assert_uint_lt(took, 2000000);
  ck_assert_int_eq(E.n_silent, 1);

  /* The setter: 100 ms per attempt, 3 attempts -> 3 queries sent. */
  ck_assert_int_eq(dns_resolver_set_timeout(E.r, 100, 3), 0);
  res_t t2 = {0};
  start = evloop_now_us(E.loop);
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4, res_cb, &t2);
  wait_for(1);
  took = evloop_now_us(E.loop) - start;
  ck_assert_int_eq(t2.result, DNS_RESULT_TIMEOUT);
  ck_assert_int_eq(E.n_silent, 4);
  ck_assert_uint_ge(took, 250000);
  ck_assert_uint_lt(took, 2000000);

  /* With both families, both queries timing out is a timeout. */
  res_t t3 = {0};
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6,
              res_cb, &t3);
  wait_for(1);
  ck_assert_int_eq(t3.result, DNS_RESULT_TIMEOUT);
  env_teardown();
}
END_TEST

START_TEST(test_refused)
{
  env_setup();
  env_resolver();
  res_t r = {0};
  dns_resolve(E.r, "refused.example.com", DNS_WANT_IPV4, res_cb, &r);
  wait_for(1);
  ck_assert_int_eq(r.result, DNS_RESULT_SERVFAIL);
  ck_assert(dns_result_is_transient(r.result));
  env_teardown();
}
END_TEST

static res_t cancel_first;
static dns_request_t *cancel_victim;

static void
cancel_other_cb(int result, const dns_answer_t *answers, int n_answers,
                void *arg)
{
  res_cb(result, answers, n_answers, arg);
  dns_request_cancel(cancel_victim);
  cancel_victim = NULL;
}

START_TEST(test_cancel)
{
  env_setup();
  write_conf("options timeout:0.2 attempts:1\n");
  env_resolver();
  res_t c1 = {0}, c2 = {0}, c3 = {0}, c4 = {0}, kept = {0};
  dns_request_t *r1 =
    dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4, res_cb, &c1);
  dns_request_t *r2 = dns_resolve(E.r, "www.example.com",
                                  DNS_WANT_IPV4 | DNS_WANT_IPV6, res_cb, &c2);
  dns_request_t *r3 = dns_resolve(E.r, "192.0.2.9", 0, res_cb, &c3);
  dns_request_t *r4 = dns_resolve(E.r, "bad..name", 0, res_cb, &c4);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &kept);
  ck_assert_ptr_nonnull(r1);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 3);
  dns_request_cancel(r1);
  dns_request_cancel(r2);
  dns_request_cancel(r3);
  dns_request_cancel(r4);
  dns_request_cancel(NULL);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 1);
  /* Run past the timeout: only the request we kept reports. */
  ck_assert_int_eq(run_for(100, 500), 1);
  ck_assert_int_eq(n_done, 1);
  ck_assert_int_eq(kept.called, 1);
  ck_assert_int_eq(kept.result, DNS_RESULT_OK);
  ck_assert_int_eq(c1.called + c2.called + c3.called + c4.called, 0);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 0);

  /* Cancel once the answer waits on evdns's socket, unread: evdns drops
   * the answer and nothing is reported. */
  res_t c5 = {0};
  dns_request_t *r5 =
    dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &c5);
  E.exit_after_answering = 1;
  int queries = E.n_queries;
  ck_assert_int_eq(run_for(100, 1000), 0);
  E.exit_after_answering = 0;
  ck_assert_int_eq(E.n_queries, queries + 1);
  ck_assert_int_eq(c5.called, 0);
  dns_request_cancel(r5);
  ck_assert_int_eq(run_for(100, 200), 1);
  ck_assert_int_eq(c5.called, 0);

  /* Cancel once evdns has read the answer and queued its report: two
   * queries are answered in one packet batch, and the first one's
   * callback cancels the second. */
  res_t c6 = {0};
  memset(&cancel_first, 0, sizeof(cancel_first));
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, cancel_other_cb,
              &cancel_first);
  cancel_victim =
    dns_resolve(E.r, "v4only.example.com", DNS_WANT_IPV4, res_cb, &c6);
  ck_assert_int_eq(run_for(100, 300), 1);
  ck_assert_int_eq(cancel_first.called, 1);
  ck_assert_int_eq(cancel_first.result, DNS_RESULT_OK);
  ck_assert_ptr_null(cancel_victim);
  ck_assert_int_eq(c6.called, 0);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 0);
  env_teardown();
}
END_TEST

START_TEST(test_literals)
{
  env_setup();
  env_resolver();
  res_t l4 = {0}, l6 = {0}, l6b = {0}, l4as6 = {0};
  dns_resolve(E.r, "192.0.2.55", DNS_WANT_IPV4, res_cb, &l4);
  dns_resolve(E.r, "2001:db8::5", DNS_WANT_IPV4, res_cb, &l6);
  dns_resolve(E.r, "[2001:db8::5]", DNS_WANT_IPV6, res_cb, &l6b);
  dns_resolve(E.r, "192.0.2.56", DNS_WANT_IPV6, res_cb, &l4as6);
  ck_assert_int_eq(l4.called, 0);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 0); /* nothing to wait for */
  wait_for(4);
  ck_assert_int_eq(l4.result, DNS_RESULT_OK);
  ck_assert_int_eq(l4.n, 1);
  assert_addr(&l4.ans[0], "192.0.2.55", DNS_LITERAL_TTL);
  ck_assert_int_eq(l6.result, DNS_RESULT_OK);
  assert_addr(&l6.ans[0], "2001:db8::5", DNS_LITERAL_TTL);
  ck_assert_int_eq(l6b.result, DNS_RESULT_OK);
  assert_addr(&l6b.ans[0], "2001:db8::5", DNS_LITERAL_TTL);
  ck_assert_int_eq(l4as6.result, DNS_RESULT_OK);
  assert_addr(&l4as6.ans[0], "192.0.2.56", DNS_LITERAL_TTL);
  ck_assert_int_eq(E.n_queries, 0);
  env_teardown();
}
END_TEST

START_TEST(test_invalid)
{
  env_setup();
  env_resolver();
  char longname[300];
  memset(longname, 'a', 299);
  longname[299] = '\0';
  for (int i = 50; i < 299; i += 50)
    longname[i] = '.';
  static const char *bad[] = {
    "", "a..b", ".example.com", "-a.example", "a b.example", "a\nb.example",
    "evil.example\r\nX", "a/b", "%s%s%s", "1.2.3", "256.1.1.1",
    "[192.0.2.1]", "example.com:443", "xn--\xff.example",
  };
  res_t res[sizeof(bad) / sizeof(bad[0]) + 2];
  memset(res, 0, sizeof(res));
  size_t n = sizeof(bad) / sizeof(bad[0]);
  for (size_t i = 0; i < n; i++)
    dns_resolve(E.r, bad[i], DNS_WANT_IPV4 | DNS_WANT_IPV6, res_cb, &res[i]);
  dns_resolve(E.r, longname, DNS_WANT_IPV4, res_cb, &res[n]);
  dns_resolve(E.r, NULL, DNS_WANT_IPV4, res_cb, &res[n + 1]);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 0);
  wait_for((int)n + 2);
  for (size_t i = 0; i < n + 2; i++) {
    ck_assert_int_eq(res[i].called, 1);
    ck_assert_msg(res[i].result == DNS_RESULT_INVALID, "'%s': result %d",
                  i < n ? bad[i] : "long/NULL", res[i].result);
  }
  /* A valid query afterwards is the first the server sees. */
  res_t ok = {0};
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &ok);
  wait_for(1);
  ck_assert_int_eq(ok.result, DNS_RESULT_OK);
  ck_assert_int_eq(E.n_queries, 1);
  env_teardown();
}
END_TEST

START_TEST(test_limit)
{
  env_setup();
  write_conf("options timeout:0.2 attempts:1\n");
  env_resolver();
  dns_resolver_set_max_pending(E.r, 2);
  res_t s1 = {0}, s2 = {0}, over = {0}, lit = {0}, over_rev = {0};
  dns_request_t *r1 =
    dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6,
                res_cb, &s1);
  /* Waiting requests are in the memory budget: the request and one
   * DNS_EVDNS_QUERY_BYTES per query out (two here, one next). */
  uint64_t two_queries = memacct_get(MEMACCT_DNS);
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4, res_cb, &s2);
  uint64_t one_query = memacct_get(MEMACCT_DNS) - two_queries;
  ck_assert_uint_gt(one_query, DNS_EVDNS_QUERY_BYTES);
  ck_assert_uint_eq(two_queries, one_query + DNS_EVDNS_QUERY_BYTES);
  ck_assert_uint_eq(memacct_total(), two_queries + one_query);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 2);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &over);
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse_ip(&a, "192.0.2.1", 0), 0);
  dns_resolve_reverse(E.r, &a, res_cb, &over_rev);
  dns_resolve(E.r, "192.0.2.7", DNS_WANT_IPV4, res_cb, &lit); /* no query */
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 2);
  dns_request_cancel(r1);
  ck_assert_uint_eq(dns_resolver_n_pending(E.r), 1);
  wait_for(4); /* over, over_rev, lit at once; s2 after its timeout */
  ck_assert_int_eq(over.result, DNS_RESULT_LIMIT);
  ck_assert(dns_result_is_transient(over.result));
  ck_assert_int_eq(over_rev.result, DNS_RESULT_LIMIT);
  ck_assert_int_eq(lit.result, DNS_RESULT_OK);
  ck_assert_int_eq(s2.result, DNS_RESULT_TIMEOUT);
  ck_assert_int_eq(s1.called, 0);
  /* Room again. */
  res_t again = {0};
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &again);
  wait_for(1);
  ck_assert_int_eq(again.result, DNS_RESULT_OK);
  env_teardown();
}
END_TEST

START_TEST(test_reverse)
{
  env_setup();
  env_resolver();
  res_t p4 = {0}, p6 = {0}, pbad = {0}, pnx = {0}, pinv = {0};
  pc_addr_t a4, a6, abad, anx, unset;
  ck_assert_int_eq(dns_reverse_name_parse("1.2.0.192.in-addr.arpa", &a4), 0);
  ck_assert_int_eq(dns_reverse_name_parse(V6_PTR_NAME, &a6), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&abad, "192.0.2.9", 0), 0);
  ck_assert_int_eq(pc_addr_parse_ip(&anx, "192.0.2.200", 0), 0);
  memset(&unset, 0, sizeof(unset));
  unset.family = AF_UNSPEC;
  dns_resolve_reverse(E.r, &a4, res_cb, &p4);
  dns_resolve_reverse(E.r, &a6, res_cb, &p6);
  dns_resolve_reverse(E.r, &abad, res_cb, &pbad);
  dns_resolve_reverse(E.r, &anx, res_cb, &pnx);
  dns_resolve_reverse(E.r, &unset, res_cb, &pinv);
  wait_for(5);
  ck_assert_int_eq(E.n_queries, 4);
  ck_assert_int_eq(p4.result, DNS_RESULT_OK);
  ck_assert_int_eq(p4.n, 1);
  ck_assert_str_eq(p4.host, "www.example.com");
  assert_addr(&p4.ans[0], "192.0.2.1", 120);
  ck_assert_int_eq(p6.result, DNS_RESULT_OK);
  ck_assert_str_eq(p6.host, "v6.example.com");
  assert_addr(&p6.ans[0], "2001:db8::1", 90);
  ck_assert_int_eq(pbad.result, DNS_RESULT_SERVFAIL); /* unusable name */
  ck_assert_int_eq(pnx.result, DNS_RESULT_NOTFOUND);
  ck_assert_int_eq(pinv.result, DNS_RESULT_INVALID);
  env_teardown();
}
END_TEST

START_TEST(test_free_with_outstanding)
{
  env_setup();
  env_resolver();
  res_t s = {0}, w = {0}, l = {0}, inv = {0};
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6,
              res_cb, &s);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4 | DNS_WANT_IPV6, res_cb,
              &w);
  dns_resolve(E.r, "192.0.2.1", DNS_WANT_IPV4, res_cb, &l);
  dns_resolve(E.r, "-x", DNS_WANT_IPV4, res_cb, &inv);
  dns_resolver_free(E.r);
  ck_assert_int_eq(run_for(100, 300), 1);
  ck_assert_int_eq(s.called + w.called + l.called + inv.called, 0);
  env_teardown();
}
END_TEST

/* Callbacks that free the resolver or start new requests. */
static res_t chain_second;
static int freer_calls;

static void
freer_cb(int result, const dns_answer_t *answers, int n_answers, void *arg)
{
  (void)result;
  (void)answers;
  (void)n_answers;
  (void)arg;
  freer_calls++;
  dns_resolver_free(E.r);
  evloop_exit(E.loop);
}

static void
chain_cb(int result, const dns_answer_t *answers, int n_answers, void *arg)
{
  res_t *first = arg;
  res_cb(result, answers, n_answers, first);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV6, res_cb, &chain_second);
}

START_TEST(test_callbacks_reenter)
{
  env_setup();
  env_resolver();
  /* A callback starts another request. */
  res_t first = {0};
  memset(&chain_second, 0, sizeof(chain_second));
  dns_resolve(E.r, "192.0.2.3", DNS_WANT_IPV4, chain_cb, &first);
  wait_for(2);
  ck_assert_int_eq(first.result, DNS_RESULT_OK);
  ck_assert_int_eq(chain_second.result, DNS_RESULT_OK);
  assert_addr(&chain_second.ans[0], "2001:db8::1", 600);

  /* The first of several ready callbacks frees the resolver: the others
   * are dropped. */
  res_t other = {0}, other2 = {0};
  freer_calls = 0;
  dns_resolve(E.r, "192.0.2.4", DNS_WANT_IPV4, freer_cb, NULL);
  dns_resolve(E.r, "192.0.2.5", DNS_WANT_IPV4, res_cb, &other);
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, res_cb, &other2);
  run_for(100, 300);
  ck_assert_int_eq(freer_calls, 1);
  ck_assert_ptr_null(E.r);
  ck_assert_int_eq(run_for(100, 200), 1);
  ck_assert_int_eq(other.called + other2.called, 0);

  /* A query's callback frees the resolver while another query is out. */
  env_resolver();
  freer_calls = 0;
  res_t other3 = {0};
  dns_resolve(E.r, "www.example.com", DNS_WANT_IPV4, freer_cb, NULL);
  dns_resolve(E.r, "silent.example.com", DNS_WANT_IPV4, res_cb, &other3);
  run_for(100, 2000);
  ck_assert_int_eq(freer_calls, 1);
  ck_assert_ptr_null(E.r);
  ck_assert_int_eq(run_for(100, 200), 1);
  ck_assert_int_eq(other3.called, 0);
  env_teardown();
}
END_TEST

Suite *
suite_dns(void)
{
  Suite *s = suite_create("dns");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_hostname_validation);
  tcase_add_test(tc, test_reverse_names);
  tcase_add_test(tc, test_config);
  tcase_add_test(tc, test_forward);
  tcase_add_test(tc, test_notfound);
  tcase_add_test(tc, test_timeout);
  tcase_add_test(tc, test_refused);
  tcase_add_test(tc, test_cancel);
  tcase_add_test(tc, test_literals);
  tcase_add_test(tc, test_invalid);
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_reverse);
  tcase_add_test(tc, test_free_with_outstanding);
  tcase_add_test(tc, test_callbacks_reenter);
  suite_add_tcase(s, tc);
  return s;
}
