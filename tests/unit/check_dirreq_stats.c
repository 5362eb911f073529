/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dirreq_stats.c -- unit tests for feature/dircache/dirreq_stats:
 * the dirreq-* lines as dir-spec 2.1.2 words them (keywords, order,
 * "CC=N" lists sorted by count then code, statuses, download counts and
 * rates) with tor's rounding (countries and statuses up to multiples of
 * 8, downloads of 4), unique addresses, the interval and its rotation
 * (the result kept, written to the stats file, published for a day), the
 * state file round trip, and the directory cache feeding it: a consensus
 * request answered 200 and sent whole is one complete download, one
 * freed half-sent is a timeout, a missing consensus is "unavailable", and
 * other paths are not counted. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feature/dircache/dircache.h"
#include "feature/dircache/dirreq_stats.h"
#include "lib/fs/files.h"
#include "lib/fs/statefile.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

Suite *suite_dirreq_stats(void);

/* 2010-08-11 13:27:30 UTC */
#define T0 ((time_t)1281533250)

static pc_addr_t
v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
  pc_addr_t x;
  memset(&x, 0, sizeof(x));
  x.family = AF_INET;
  x.addr[0] = a, x.addr[1] = b, x.addr[2] = c, x.addr[3] = d;
  return x;
}

/* 10.x.y.z is "de", 192.0.2.x "us", anything else unknown. */
static const char *
test_country(const pc_addr_t *a, void *arg)
{
  (void)arg;
  if (a->family == AF_INET && a->addr[0] == 10)
    return "de";
  if (a->family == AF_INET && a->addr[0] == 192)
    return "us";
  return "??";
}

START_TEST(test_empty)
{
  dirreq_stats_t *s = dirreq_stats_new(T0, 86400, NULL);
  char *f = dirreq_stats_format(s, T0 + 86400);
  ck_assert_str_eq(f,
                   "dirreq-stats-end 2010-08-12 13:27:30 (86400 s)\n"
                   "dirreq-v3-ips\n"
                   "dirreq-v3-reqs\n"
                   "dirreq-v3-resp served=0,ok=0,not-enough-sigs=0,"
                   "unavailable=0,not-found=0,not-modified=0,busy=0\n"
                   "dirreq-v3-direct-dl complete=0,timeout=0,running=0\n"
                   "dirreq-v3-tunneled-dl complete=0,timeout=0,running=0\n");
  free(f);
  dirreq_stats_free(s);
}
END_TEST

START_TEST(test_counts_rounding_order)
{
  dirreq_stats_t *s = dirreq_stats_new(T0, 86400, NULL);
  dirreq_stats_set_country_fn(s, test_country, NULL);
  /* de: 9 requests from 9 addresses; us: 3 requests from one address;
   * unknown: 1; one busy and one unavailable answer. */
  for (int i = 0; i < 9; i++) {
    pc_addr_t a = v4(10, 0, 0, (uint8_t)i);
    dirreq_stats_note_response(s, &a, DIRREQ_RESP_OK);
  }
  pc_addr_t u = v4(192, 0, 2, 1), x = v4(203, 0, 113, 5);
  for (int i = 0; i < 3; i++)
    dirreq_stats_note_response(s, &u, DIRREQ_RESP_OK);
  dirreq_stats_note_response(s, &x, DIRREQ_RESP_OK);
  dirreq_stats_note_response(s, &x, DIRREQ_RESP_BUSY);
  dirreq_stats_note_response(s, NULL, DIRREQ_RESP_UNAVAILABLE);
  /* An anonymous request: by status only. */
  dirreq_stats_note_response(s, NULL, DIRREQ_RESP_OK);
  /* Downloads: 2 direct complete, 1 tunneled timeout, 1 running. */
  for (int i = 0; i < 2; i++) {
    dirreq_stats_dl_start(s, 0);
    dirreq_stats_dl_end(s, 0, 1, 1000, 1000000);
  }
  dirreq_stats_dl_start(s, 1);
  dirreq_stats_dl_end(s, 1, 0, 10, 5000000);
  dirreq_stats_dl_start(s, 1);
  char *f = dirreq_stats_format(s, T0 + 86400);
  /* us and ?? both round to 8 and sort by code ("??" < "us"). */
  ck_assert_str_eq(f,
                   "dirreq-stats-end 2010-08-12 13:27:30 (86400 s)\n"
                   "dirreq-v3-ips de=16,?" "?=8,us=8\n"
                   "dirreq-v3-reqs de=16,?" "?=8,us=8\n"
                   "dirreq-v3-resp served=16,ok=16,not-enough-sigs=0,"
                   "unavailable=8,not-found=0,not-modified=0,busy=8\n"
                   "dirreq-v3-direct-dl complete=4,timeout=0,running=0\n"
                   "dirreq-v3-tunneled-dl complete=0,timeout=4,running=4\n");
  free(f);
  dirreq_stats_free(s);
}
END_TEST

START_TEST(test_rates)
{
  dirreq_stats_t *s = dirreq_stats_new(T0, 86400, NULL);
  /* 20 downloads at 1000, 2000, ... 20000 bytes per second. */
  for (int i = 20; i >= 1; i--) {
    dirreq_stats_dl_start(s, 1);
    dirreq_stats_dl_end(s, 1, 1, (uint64_t)i * 1000, 1000000);
  }
  char *f = dirreq_stats_format(s, T0 + 86400);
  ck_assert_ptr_nonnull(strstr(
      f, "dirreq-v3-tunneled-dl complete=20,timeout=0,running=0,min=1000,"
         "d1=3000,d2=5000,q1=6000,d3=7000,d4=9000,md=11000,d6=13000,"
         "d7=15000,q3=16000,d8=17000,d9=19000,max=20000\n"));
  /* Below 16 completed downloads: no rates. */
  ck_assert_ptr_nonnull(strstr(
      f, "dirreq-v3-direct-dl complete=0,timeout=0,running=0\n"));
  free(f);
  /* An anonymous request (no client address) is no country's. */
  dirreq_stats_note_response(s, NULL, DIRREQ_RESP_OK);
  f = dirreq_stats_format(s, T0 + 86400);
  ck_assert_ptr_nonnull(strstr(f, "\ndirreq-v3-ips\ndirreq-v3-reqs\n"
                                  "dirreq-v3-resp served=8,ok=8,"));
  free(f);
  dirreq_stats_free(s);
}
END_TEST

START_TEST(test_rotate_state_file)
{
  char dir[] = "/tmp/check_dirreq.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char *path = pc_asprintf("%s/stats/dirreq-stats", dir);
  dirreq_stats_t *s = dirreq_stats_new(T0, 60, path);
  pc_addr_t a = v4(10, 1, 2, 3);
  dirreq_stats_note_response(s, &a, DIRREQ_RESP_OK);
  ck_assert_int_eq(dirreq_stats_rotate(s, T0 + 59), 0);
  ck_assert_ptr_null(dirreq_stats_published(s, T0 + 59));
  /* Saved and loaded into a new object: the interval goes on. */
  statefile_t *st = statefile_new("/nonexistent/state");
  dirreq_stats_save(s, st);
  ck_assert_str_eq(statefile_get(st, "DirReqStatsStart"),
                   "2010-08-11 13:27:30");
  ck_assert_str_eq(statefile_get(st, "DirReqStatsReqs"), "?" "?=1");
  dirreq_stats_free(s);
  s = dirreq_stats_new(T0 + 30, 60, path);
  dirreq_stats_load(s, st, T0 + 30);
  dirreq_stats_note_response(s, &a, DIRREQ_RESP_OK);
  ck_assert_int_eq(dirreq_stats_rotate(s, T0 + 61), 1);
  const char *p = dirreq_stats_published(s, T0 + 61);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(
      strstr(p, "dirreq-stats-end 2010-08-11 13:28:30 (60 s)\n"));
  /* 2 requests (1 before the restart), 2 "addresses" (the set of
   * addresses is not saved), rounded. */
  ck_assert_ptr_nonnull(strstr(p, "dirreq-v3-reqs ?" "?=8\n"));
  ck_assert_ptr_nonnull(strstr(p, "dirreq-v3-ips ?" "?=8\n"));
  ck_assert_ptr_nonnull(strstr(p, "ok=8,"));
  /* The stats file holds the same lines, in tor's place. */
  char *text = NULL;
  ck_assert_int_eq(fs_read_text(path, 65536, &text), 0);
  ck_assert_str_eq(text, p);
  free(text);
  /* Counting started again. */
  char *f = dirreq_stats_format(s, T0 + 62);
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-reqs\n"));
  free(f);
  /* Published for a day after its end, then not. */
  ck_assert_ptr_nonnull(dirreq_stats_published(s, T0 + 60 + 86400));
  ck_assert_ptr_null(dirreq_stats_published(s, T0 + 61 + 86400));
  dirreq_stats_free(s);
  /* A new start reads the last result from the stats file. */
  s = dirreq_stats_new(T0 + 100, 60, path);
  dirreq_stats_load(s, NULL, T0 + 100);
  ck_assert_ptr_nonnull(dirreq_stats_published(s, T0 + 100));
  dirreq_stats_free(s);
  /* Malformed state lines are ignored, not fatal. */
  statefile_set(st, "DirReqStatsReqs", "xx=,=3,de");
  statefile_set(st, "DirReqStatsResp", "1,2");
  s = dirreq_stats_new(T0, 60, NULL);
  dirreq_stats_load(s, st, T0 + 10);
  f = dirreq_stats_format(s, T0 + 10);
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-reqs\n"));
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-resp served=0,ok=0,"));
  free(f);
  dirreq_stats_free(s);
  statefile_free(st);
  unlink(path);
  char *sd = pc_asprintf("%s/stats", dir);
  rmdir(sd);
  rmdir(dir);
  free(sd);
  free(path);
}
END_TEST

/* The set of addresses is bounded and counted in the budget: past
 * DIRREQ_MAX_ADDRS every address counts as new. */
START_TEST(test_address_bound)
{
  uint64_t before = memacct_get(MEMACCT_DIRCACHE);
  dirreq_stats_t *s = dirreq_stats_new(T0, 86400, NULL);
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  a.family = AF_INET6;
  for (uint32_t i = 0; i < DIRREQ_MAX_ADDRS + 10; i++) {
    memcpy(a.addr, &i, sizeof(i));
    dirreq_stats_note_response(s, &a, DIRREQ_RESP_OK);
  }
  uint64_t held = memacct_get(MEMACCT_DIRCACHE) - before;
  ck_assert_uint_eq(held, (uint64_t)DIRREQ_MAX_ADDRS * 2 * 17);
  uint32_t first = 0;
  memcpy(a.addr, &first, sizeof(first));
  dirreq_stats_note_response(s, &a, DIRREQ_RESP_OK); /* full: "new" */
  char *f = dirreq_stats_format(s, T0 + 1);
  char *want = pc_asprintf("dirreq-v3-ips ?" "?=%u\n",
                           (unsigned)(DIRREQ_MAX_ADDRS + 16));
  ck_assert_ptr_nonnull(strstr(f, want));
  free(want);
  free(f);
  dirreq_stats_free(s);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), before);
}
END_TEST

static dircache_doc_t *cons_doc;
static dircache_doc_t *
cons_provider(const char *path, void *arg)
{
  (void)path, (void)arg;
  return cons_doc ? dircache_doc_ref(cons_doc) : NULL;
}

/* Feed a whole request; send at most max bytes of the answer. */
static dircache_request_t *
request(const char *path, const pc_addr_t *client, int tunneled, size_t max)
{
  dircache_request_t *r = dircache_request_new();
  dircache_request_set_client(r, client, tunneled);
  char *req = pc_asprintf("GET %s HTTP/1.0\r\n\r\n", path);
  ck_assert_int_eq(dircache_request_feed(r, (const uint8_t *)req,
                                         strlen(req)), 1);
  free(req);
  const uint8_t *p;
  size_t n, sent = 0;
  while (sent < max && (n = dircache_request_next(r, &p)) > 0) {
    if (n > max - sent)
      n = max - sent;
    dircache_request_sent(r, n);
    sent += n;
  }
  return r;
}

START_TEST(test_dircache_feeds)
{
  dirreq_stats_t *s = dirreq_stats_new(T0, 86400, NULL);
  dirreq_stats_set_country_fn(s, test_country, NULL);
  dirreq_stats_set_global(s);
  dircache_register_prefix("/tor/status-vote/current/consensus",
                           cons_provider, NULL);
  pc_addr_t a = v4(10, 0, 0, 1), b = v4(192, 0, 2, 7);
  /* No consensus yet: unavailable. */
  dircache_request_t *r = request("/tor/status-vote/current/consensus", &a,
                                  0, SIZE_MAX);
  dircache_request_free(r);
  char *body = pc_strdup("network-status-version 3\n");
  cons_doc = dircache_doc_new((uint8_t *)body, strlen(body), 1);
  /* A whole direct download, a half-sent tunneled one, a microdesc
   * consensus over the DirPort still being sent, and a request that is
   * not for a network status. */
  r = request("/tor/status-vote/current/consensus.z", &a, 0, SIZE_MAX);
  dircache_request_free(r);
  r = request("/tor/status-vote/current/consensus-microdesc", &b, 1, 10);
  dircache_request_free(r);
  dircache_request_t *running =
      request("/tor/status-vote/current/consensus-microdesc", &b, 0, 10);
  r = request("/tor/server/authority", &a, 0, SIZE_MAX);
  dircache_request_free(r);
  char *f = dirreq_stats_format(s, T0 + 86400);
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-ips de=8,us=8\n"));
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-reqs de=8,us=8\n"));
  ck_assert_ptr_nonnull(strstr(f, "dirreq-v3-resp served=8,ok=8,"
                                  "not-enough-sigs=0,unavailable=8,"
                                  "not-found=0,not-modified=0,busy=0\n"));
  ck_assert_ptr_nonnull(
      strstr(f, "dirreq-v3-direct-dl complete=4,timeout=0,running=4\n"));
  ck_assert_ptr_nonnull(
      strstr(f, "dirreq-v3-tunneled-dl complete=0,timeout=4,running=0\n"));
  free(f);
  dircache_request_free(running);
  dircache_doc_unref(cons_doc);
  cons_doc = NULL;
  dircache_shutdown();
  dirreq_stats_free(s);
  ck_assert_ptr_null(dirreq_stats_global());
}
END_TEST

Suite *
suite_dirreq_stats(void)
{
  Suite *s = suite_create("dirreq_stats");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_counts_rounding_order);
  tcase_add_test(tc, test_rates);
  tcase_add_test(tc, test_rotate_state_file);
  tcase_add_test(tc, test_dircache_feeds);
  tcase_add_test(tc, test_address_bound);
  suite_add_tcase(s, tc);
  return s;
}
