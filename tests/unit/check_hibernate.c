/* SPDX-License-Identifier: BSD-3-Clause */
/* check_hibernate.c -- unit tests for feature/hibernate: AccountingStart
 * parsing (tor's forms and its refusals), interval boundaries for day,
 * week and month (in UTC, and across a daylight-saving change in
 * Europe/Berlin), the four AccountingRules and GETINFO accounting/...
 * answers, the state machine on a fake clock (awake -> soft -> hard ->
 * awake in the next interval at the wake-up time tor's rule picks, the
 * same time for the same identity; a restart with a used-up quota goes
 * straight to hard), and the state-file round trip in tor's keys,
 * including a file written by tor 0.4.9 itself. The expected times were
 * computed independently with Python's calendar.timegm. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "feature/hibernate/hibernate.h"
#include "lib/fs/statefile.h"
#include "lib/time/timefmt.h"

Suite *suite_hibernate(void);

static void
set_tz(const char *tz)
{
  setenv("TZ", tz, 1);
  tzset();
}

static acct_start_t
start_of(const char *s)
{
  acct_start_t a;
  char *err = NULL;
  ck_assert_msg(hibernate_parse_start(s, &a, &err) == 0, "%s: %s", s, err);
  return a;
}

START_TEST(test_parse_start)
{
  acct_start_t a = start_of("day 03:00");
  ck_assert_int_eq(a.unit, ACCT_UNIT_DAY);
  ck_assert_int_eq(a.hour, 3);
  ck_assert_int_eq(a.min, 0);
  a = start_of("week 3 10:00");
  ck_assert_int_eq(a.unit, ACCT_UNIT_WEEK);
  ck_assert_int_eq(a.day, 3);
  ck_assert_int_eq(a.hour, 10);
  a = start_of("month 1 0:00");
  ck_assert_int_eq(a.unit, ACCT_UNIT_MONTH);
  ck_assert_int_eq(a.day, 1);
  a = start_of("  MONTH 28   23:59 ");
  ck_assert_int_eq(a.day, 28);
  ck_assert_int_eq(a.min, 59);
  static const char *const bad[] = {
      "",           "year 1 00:00", "day",         "month 1",
      "day 1 03:00", "month 29 0:00", "month 0 0:00", "week 0 1:00",
      "week 8 1:00", "day 24:00",    "day 12:60",   "day 12:5",
      "day 12",      "week x 1:00",  "day 1:00 x",  "day -1:00",
      "monthmonthmonthmonthmonthmonthmonthmonth 1 0:00",
      "month 1 0:00000000000000000000000000000000000000000",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *err = NULL;
    ck_assert_msg(hibernate_parse_start(bad[i], &a, &err) < 0,
                  "accepted '%s'", bad[i]);
    ck_assert_ptr_nonnull(err);
    free(err);
  }
}
END_TEST

START_TEST(test_intervals_utc)
{
  set_tz("UTC");
  acct_start_t d = start_of("day 03:00");
  /* Thu 2026-11-26 23:22 */
  ck_assert_int_eq(hibernate_period_start(&d, 1795735320), 1795662000);
  ck_assert_int_eq(hibernate_period_end(&d, 1795735320), 1795748400);
  /* exactly at the boundary: the new interval */
  ck_assert_int_eq(hibernate_period_start(&d, 1795748400), 1795748400);
  ck_assert_int_eq(hibernate_period_start(&d, 1795748399), 1795662000);

  /* Wednesdays 10:00 */
  acct_start_t w = start_of("week 3 10:00");
  ck_assert_int_eq(hibernate_period_start(&w, 1795735320), 1795600800);
  ck_assert_int_eq(hibernate_period_end(&w, 1795735320),
                   1795600800 + 7 * 86400);
  /* Wednesday 09:59: still last week's */
  ck_assert_int_eq(hibernate_period_start(&w, 1795600740), 1794996000);
  ck_assert_int_eq(hibernate_period_end(&w, 1795600740), 1795600800);
  acct_start_t sun = start_of("week 7 00:00");
  /* Sun 2027-01-10 00:00 is a boundary */
  ck_assert_int_eq(hibernate_period_start(&sun, 1799539200), 1799539200);

  /* the 15th 12:30, across the year's end */
  acct_start_t m = start_of("month 15 12:30");
  ck_assert_int_eq(hibernate_period_start(&m, 1799539200), 1797337800);
  ck_assert_int_eq(hibernate_period_end(&m, 1799539200), 1800016200);
}
END_TEST

START_TEST(test_intervals_dst)
{
  set_tz("Europe/Berlin");
  /* 2026-10-25: summer time ends, so that local day lasts 25 hours. */
  acct_start_t d = start_of("day 00:00");
  time_t noon = 1792929600; /* 2026-10-25 12:00 UTC */
  time_t s = hibernate_period_start(&d, noon);
  time_t e = hibernate_period_end(&d, noon);
  ck_assert_int_eq(s, 1792879200); /* 2026-10-24 22:00 UTC */
  ck_assert_int_eq(e - s, 25 * 3600);
  set_tz("UTC");
}
END_TEST

/* A recorder of the host's callbacks. */
static int n_changes, n_saves;
static hibernate_state_t changes[16];

static void
rec_changed(hibernate_state_t from, hibernate_state_t to, void *arg)
{
  (void)from;
  (void)arg;
  if (n_changes < 16)
    changes[n_changes] = to;
  n_changes++;
}

static void
rec_save(void *arg)
{
  (void)arg;
  n_saves++;
}

static const hibernate_host_t rec_host = {rec_changed, rec_save, NULL};

static hibernate_options_t
opts(uint64_t max, int rule, const char *start)
{
  hibernate_options_t o;
  memset(&o, 0, sizeof(o));
  o.max = max;
  o.rule = rule;
  o.start = start_of(start);
  return o;
}

static void
check_info(const hibernate_t *h, const char *key, const char *want)
{
  char *v = NULL;
  ck_assert_int_eq(hibernate_getinfo(h, key, &v), 1);
  ck_assert_msg(!strcmp(v, want), "%s: '%s', want '%s'", key, v, want);
  free(v);
}

START_TEST(test_rules)
{
  set_tz("UTC");
  static const struct {
    int rule;
    uint64_t used;
    const char *left;
  } r[] = {
      {ACCT_RULE_MAX, 300, "900 700"},
      {ACCT_RULE_SUM, 400, "600 600"},
      {ACCT_RULE_IN, 100, "900 1000"},
      {ACCT_RULE_OUT, 300, "1000 700"},
  };
  for (size_t i = 0; i < 4; i++) {
    hibernate_options_t o = opts(1000, r[i].rule, "day 00:00");
    hibernate_t *h = hibernate_new(&o, NULL, 0, NULL);
    hibernate_tick(h, 1795735320);
    hibernate_add_bytes(h, 100, 300, 1);
    ck_assert_uint_eq(hibernate_used(h), r[i].used);
    check_info(h, "accounting/bytes", "100 300");
    check_info(h, "accounting/bytes-left", r[i].left);
    char hb[512];
    hibernate_heartbeat_line(h, 1795735320, hb, sizeof(hb));
    ck_assert_msg(strstr(hb, "Heartbeat: Accounting enabled. Sent: 0.00 MB, "
                             "Received: 0.00 MB") &&
                      strstr(hb, "The current accounting interval ends on "
                                 "2026-11-27 00:00:00, in 0 days 0:38 "
                                 "hours."),
                  "%s", hb);
    hibernate_free(h);
  }
  /* Used up: nothing left, never negative. */
  hibernate_options_t o = opts(1000, ACCT_RULE_SUM, "day 00:00");
  hibernate_t *h = hibernate_new(&o, NULL, 0, NULL);
  hibernate_tick(h, 1795735320);
  hibernate_add_bytes(h, 800, 900, 1);
  check_info(h, "accounting/bytes-left", "0 0");
  hibernate_free(h);
  /* No accounting: enabled 0, awake. */
  check_info(NULL, "accounting/enabled", "0");
  check_info(NULL, "accounting/hibernating", "awake");
  /* tor 0.4.9's answers without AccountingMax */
  check_info(NULL, "accounting/bytes", "0 0");
  check_info(NULL, "accounting/bytes-left", "0 0");
  check_info(NULL, "accounting/interval-start", "1970-01-01 00:00:00");
  check_info(NULL, "accounting/interval-end", "1970-01-01 00:00:00");
  hibernate_options_t none = opts(0, ACCT_RULE_MAX, "month 1 0:00");
  hibernate_t *h0 = hibernate_new(&none, NULL, 0, NULL);
  hibernate_tick(h0, 1795735320);
  hibernate_add_bytes(h0, 5000, 5000, 1);
  check_info(h0, "accounting/bytes", "0 0");
  check_info(h0, "accounting/enabled", "0");
  hibernate_free(h0);
  char *v = NULL;
  ck_assert_int_eq(hibernate_getinfo(NULL, "accounting/nonsense", &v), 0);
  ck_assert_int_eq(hibernate_getinfo(NULL, "version", &v), 0);
}
END_TEST

#define MIB (1024 * 1024ULL)

START_TEST(test_transitions)
{
  set_tz("UTC");
  uint8_t id[20];
  memset(id, 0x42, sizeof(id));
  n_changes = n_saves = 0;
  hibernate_options_t o = opts(MIB, ACCT_RULE_MAX, "day 00:00");
  hibernate_t *h = hibernate_new(&o, id, 1000, &rec_host);
  time_t day = 1795651200; /* 2026-11-26 00:00 UTC */
  time_t t = day + 3600;
  hibernate_tick(h, t);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  check_info(h, "accounting/enabled", "1");
  check_info(h, "accounting/interval-start", "2026-11-26 00:00:00");
  check_info(h, "accounting/interval-end", "2026-11-27 00:00:00");
  /* No estimate yet: awake from the start. */
  check_info(h, "accounting/interval-wake", "2026-11-26 00:00:00");
  /* 50 active minutes, 900000 bytes written: below the soft limit. */
  for (int i = 0; i < 3000; i++) {
    hibernate_add_bytes(h, 100, 300, 1);
    hibernate_tick(h, ++t);
  }
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  ck_assert_int_eq(n_changes, 0);

  /* Day 2: the estimate is 900000 / 50 = 18000 bytes a minute, so the
   * quota lasts 1048576 / 18000 = 58 minutes; the wake-up time lies in
   * the first 86400 - 3480 seconds. */
  time_t day2 = day + 86400;
  hibernate_tick(h, day2);
  check_info(h, "accounting/interval-start", "2026-11-27 00:00:00");
  check_info(h, "accounting/bytes", "0 0");
  time_t wake = hibernate_wake_time(h);
  ck_assert_int_ge(wake, day2);
  ck_assert_int_lt(wake, day2 + 86400 - 3480);
  /* Computed with Python: int.from_bytes(sha1(b"2026-11-27 00:00:00" +
   * b"\x42" * 20).digest()[:4], "little") % (86400 - 3480) */
  ck_assert_int_eq(wake, day2 + 4933);
  if (wake > day2) {
    ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
    ck_assert_int_eq(changes[0], HIBERNATE_HARD);
    check_info(h, "accounting/hibernating", "hard");
    hibernate_tick(h, wake - 1);
    ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
  }
  hibernate_tick(h, wake);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  ck_assert_int_eq(changes[n_changes - 1], HIBERNATE_AWAKE);

  /* The wake-up time is a function of identity and interval. */
  statefile_t *st = statefile_new("/nonexistent/state");
  hibernate_save_state(h, st);
  hibernate_t *h2 = hibernate_new(&o, id, 1000, NULL);
  hibernate_load_state(h2, st);
  hibernate_tick(h2, wake + 2);
  ck_assert_int_eq(hibernate_wake_time(h2), wake);
  hibernate_free(h2);
  uint8_t other[20];
  memcpy(other, id, 20);
  other[0] ^= 1;
  int differs = 0;
  for (int k = 0; k < 4 && !differs; k++) {
    other[1] = (uint8_t)k;
    h2 = hibernate_new(&o, other, 1000, NULL);
    hibernate_load_state(h2, st);
    hibernate_tick(h2, wake + 2);
    differs = hibernate_wake_time(h2) != wake;
    hibernate_free(h2);
  }
  ck_assert_msg(differs, "four other identities all wake at the same time");
  statefile_free(st);

  /* Soft at 95% (996147 bytes), then hard at the quota. */
  n_changes = 0;
  t = (wake > day2 + 2000 ? wake : day2 + 2000) + 10;
  hibernate_add_bytes(h, 0, 996146, 1);
  hibernate_tick(h, t);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  hibernate_add_bytes(h, 0, 1, 1);
  hibernate_tick(h, ++t);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_SOFT);
  ck_assert_int_eq(changes[0], HIBERNATE_SOFT);
  ck_assert_int_ge(n_saves, 1);
  check_info(h, "accounting/hibernating", "soft");
  check_info(h, "accounting/bytes-left", "1048576 52429");
  hibernate_add_bytes(h, 0, MIB, 1);
  hibernate_tick(h, ++t);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
  ck_assert_int_eq(changes[1], HIBERNATE_HARD);
  check_info(h, "accounting/bytes-left", "1048576 0");
  hibernate_tick(h, day2 + 86399);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
  ck_assert_int_eq(n_changes, 2);
  /* Day 3: tor's estimate from the soft limit (bytes / seconds / 60)
   * is tiny, so the quota "lasts" longer than the day: awake at once. */
  hibernate_tick(h, day2 + 86400);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  check_info(h, "accounting/interval-wake", "2026-11-28 00:00:00");
  ck_assert_int_eq(changes[2], HIBERNATE_AWAKE);
  hibernate_free(h);

  /* Turning accounting off wakes the relay. */
  n_changes = 0;
  h = hibernate_new(&o, id, 1000, &rec_host);
  hibernate_tick(h, day + 10);
  hibernate_add_bytes(h, MIB, 0, 1);
  hibernate_tick(h, day + 11);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
  hibernate_options_t off = opts(0, ACCT_RULE_MAX, "day 00:00");
  hibernate_configure(h, &off, 1000, day + 12);
  hibernate_tick(h, day + 12);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  check_info(h, "accounting/enabled", "0");
  hibernate_free(h);
}
END_TEST

START_TEST(test_state_roundtrip)
{
  set_tz("UTC");
  char dir[] = "/tmp/pctor-check-hib-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof(path), "%s/state", dir);
  hibernate_options_t o = opts(10 * MIB, ACCT_RULE_SUM, "day 03:00");
  hibernate_t *h = hibernate_new(&o, NULL, 0, NULL);
  time_t t = 1795735320; /* 2026-11-26 23:22 */
  hibernate_tick(h, t);
  hibernate_add_bytes(h, 5000, 7000, 5);
  hibernate_tick(h, t + 5);
  statefile_t *st = statefile_new(path);
  statefile_set(st, "Guard", "in=default rsa_id=AAAA"); /* kept */
  hibernate_save_state(h, st);
  char *err = NULL;
  ck_assert_int_eq(statefile_save(st, t, &err), 0);
  statefile_free(st);
  hibernate_free(h);

  st = statefile_load(path, &err);
  ck_assert_ptr_null(err);
  ck_assert_str_eq(statefile_get(st, "AccountingIntervalStart"),
                   "2026-11-26 03:00:00");
  /* tor rounds byte counts up to whole KiB */
  ck_assert_str_eq(statefile_get(st, "AccountingBytesReadInInterval"),
                   "5120");
  ck_assert_str_eq(statefile_get(st, "AccountingBytesWrittenInInterval"),
                   "7168");
  ck_assert_str_eq(statefile_get(st, "AccountingSecondsActive"), "5");
  ck_assert_ptr_null(statefile_get(st, "AccountingSoftLimitHitAt"));
  ck_assert_str_eq(statefile_get(st, "Guard"), "in=default rsa_id=AAAA");
  /* A restart in the same interval continues the count... */
  h = hibernate_new(&o, NULL, 0, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, t + 60);
  check_info(h, "accounting/bytes", "5120 7168");
  check_info(h, "accounting/interval-start", "2026-11-26 03:00:00");
  hibernate_free(h);
  /* ...one in a later interval starts from zero. */
  h = hibernate_new(&o, NULL, 0, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, t + 86400);
  check_info(h, "accounting/bytes", "0 0");
  check_info(h, "accounting/interval-start", "2026-11-27 03:00:00");
  hibernate_free(h);
  statefile_free(st);

  /* A file tor 0.4.9 wrote (AccountingMax 1 GB, AccountingStart day
   * 03:00): its counters are read as they are. */
  static const char tor_state[] =
      "# Tor state file last generated on 2026-11-26 23:22:27 local time\n"
      "AccountingBytesAtSoftLimit 4000\n"
      "AccountingBytesReadInInterval 5120\n"
      "AccountingBytesWrittenInInterval 7168\n"
      "AccountingExpectedUsage 120000\n"
      "AccountingIntervalStart 2026-11-26 03:00:00\n"
      "AccountingSecondsActive 3700\n"
      "AccountingSecondsToReachSoftLimit 200\n"
      "AccountingSoftLimitHitAt 2026-11-26 05:00:00\n"
      "LastWritten 2026-11-26 23:22:27\n";
  st = statefile_new(path);
  ck_assert_int_eq(statefile_parse(st, tor_state, strlen(tor_state), &err),
                   0);
  hibernate_options_t g = opts(1024 * MIB, ACCT_RULE_MAX, "day 03:00");
  h = hibernate_new(&g, NULL, 0, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, t);
  check_info(h, "accounting/bytes", "5120 7168");
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_AWAKE);
  statefile_t *out = statefile_new(path);
  hibernate_save_state(h, out);
  ck_assert_str_eq(statefile_get(out, "AccountingSoftLimitHitAt"),
                   "2026-11-26 05:00:00");
  ck_assert_str_eq(statefile_get(out, "AccountingExpectedUsage"), "120000");
  ck_assert_str_eq(statefile_get(out, "AccountingSecondsToReachSoftLimit"),
                   "200");
  statefile_free(out);
  hibernate_free(h);
  /* Garbage is refused with a warning, not trusted. */
  statefile_set(st, "AccountingBytesReadInInterval", "lots");
  h = hibernate_new(&g, NULL, 0, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, t);
  check_info(h, "accounting/bytes", "0 0");
  hibernate_free(h);
  statefile_free(st);

  /* Extreme values from a file: no overflow into "quota left". */
  static const char extreme[] =
      "AccountingIntervalStart 2026-11-26 03:00:00\n"
      "AccountingBytesReadInInterval 18446744073709551615\n"
      "AccountingBytesWrittenInInterval 18446744073709551615\n"
      "AccountingExpectedUsage 1\n"
      "AccountingSecondsActive 99999999999\n";
  st = statefile_new(path);
  ck_assert_int_eq(statefile_parse(st, extreme, strlen(extreme), &err), 0);
  hibernate_options_t big = opts(UINT64_MAX, ACCT_RULE_SUM, "day 03:00");
  h = hibernate_new(&big, NULL, 0, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, t);
  ck_assert_uint_eq(hibernate_used(h), UINT64_MAX);
  ck_assert_int_eq(hibernate_state(h), HIBERNATE_HARD);
  check_info(h, "accounting/bytes-left", "0 0");
  hibernate_tick(h, t + 86400); /* next interval, estimate from the file */
  ck_assert_int_ne(hibernate_wake_time(h), 0);
  hibernate_free(h);
  statefile_free(st);

  /* A restart with the quota used up goes awake -> soft -> hard. */
  static const char used_up[] =
      "AccountingIntervalStart 2026-11-26 03:00:00\n"
      "AccountingBytesWrittenInInterval 10485760\n";
  st = statefile_new(path);
  ck_assert_int_eq(statefile_parse(st, used_up, strlen(used_up), &err), 0);
  n_changes = 0;
  h = hibernate_new(&o, NULL, 0, &rec_host);
  hibernate_load_state(h, st);
  hibernate_tick(h, t);
  ck_assert_int_eq(n_changes, 2);
  ck_assert_int_eq(changes[0], HIBERNATE_SOFT);
  ck_assert_int_eq(changes[1], HIBERNATE_HARD);
  check_info(h, "accounting/bytes-left", "0 0");
  hibernate_free(h);
  statefile_free(st);
  unlink(path);
  rmdir(dir);
}
END_TEST

START_TEST(test_dircache)
{
  set_tz("UTC");
  time_t now = 1795735320;
  ck_assert_int_eq(hibernate_dircache_allowed(NULL, 1 << 30, now), 1);
  /* 1 TByte a day allows less than 12725829 bytes/s; sum halves it; in never
   * limits (tor's rule). */
  hibernate_options_t o = opts(1ULL << 40, ACCT_RULE_MAX, "day 00:00");
  hibernate_t *h = hibernate_new(&o, NULL, 0, NULL);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 12725828, now), 1);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 12725829, now), 0);
  hibernate_free(h);
  o.rule = ACCT_RULE_SUM;
  h = hibernate_new(&o, NULL, 0, NULL);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 6362913, now), 1);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 6362914, now), 0);
  hibernate_free(h);
  o.rule = ACCT_RULE_IN;
  o.max = 1000;
  h = hibernate_new(&o, NULL, 0, NULL);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 1 << 30, now), 1);
  hibernate_free(h);
  /* a monthly interval of November: 30 days */
  o = opts(1ULL << 40, ACCT_RULE_OUT, "month 1 0:00");
  h = hibernate_new(&o, NULL, 0, NULL);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 424193, now), 1);
  ck_assert_int_eq(hibernate_dircache_allowed(h, 424194, now), 0);
  hibernate_free(h);
}
END_TEST

START_TEST(test_options_table)
{
  char *err = NULL;
  ck_assert_msg(conf_module_check(&hibernate_conf_module, &err) == 0, "%s",
                err);
}
END_TEST

Suite *
suite_hibernate(void)
{
  Suite *s = suite_create("hibernate");
  TCase *tc = tcase_create("hibernate");
  tcase_add_test(tc, test_parse_start);
  tcase_add_test(tc, test_intervals_utc);
  tcase_add_test(tc, test_intervals_dst);
  tcase_add_test(tc, test_rules);
  tcase_add_test(tc, test_transitions);
  tcase_add_test(tc, test_state_roundtrip);
  tcase_add_test(tc, test_dircache);
  tcase_add_test(tc, test_options_table);
  suite_add_tcase(s, tc);
  return s;
}
