/* SPDX-License-Identifier: BSD-3-Clause */
/* check_time.c -- unit tests for lib/time: monotonic and cached clocks,
 * and the UTC formats against values computed by Python's calendar and
 * datetime modules (tests/vectors/timefmt_ref.py), plus malformed and
 * out-of-range input. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/time/clock.h"
#include "lib/time/timefmt.h"

Suite *suite_time(void);

/* From tests/vectors/timefmt_ref.py. */
static const struct {
  int64_t t;
  const char *iso, *http;
} time_vectors[] = {
  {INT64_C(0), "1970-01-01 00:00:00", "Thu, 01 Jan 1970 00:00:00 GMT"},
  {INT64_C(1), "1970-01-01 00:00:01", "Thu, 01 Jan 1970 00:00:01 GMT"},
  {INT64_C(31535999), "1970-12-31 23:59:59", "Thu, 31 Dec 1970 23:59:59 GMT"},
  {INT64_C(68212800), "1972-02-29 12:00:00", "Tue, 29 Feb 1972 12:00:00 GMT"},
  {INT64_C(946684799), "1999-12-31 23:59:59", "Fri, 31 Dec 1999 23:59:59 GMT"},
  {INT64_C(946684800), "2000-01-01 00:00:00", "Sat, 01 Jan 2000 00:00:00 GMT"},
  {INT64_C(951782400), "2000-02-29 00:00:00", "Tue, 29 Feb 2000 00:00:00 GMT"},
  {INT64_C(951868800), "2000-03-01 00:00:00", "Wed, 01 Mar 2000 00:00:00 GMT"},
  {INT64_C(978307199), "2000-12-31 23:59:59", "Sun, 31 Dec 2000 23:59:59 GMT"},
  {INT64_C(1577836800), "2020-01-01 00:00:00", "Wed, 01 Jan 2020 00:00:00 GMT"},
  {INT64_C(2147483647), "2038-01-19 03:14:07", "Tue, 19 Jan 2038 03:14:07 GMT"},
  {INT64_C(2147483648), "2038-01-19 03:14:08", "Tue, 19 Jan 2038 03:14:08 GMT"},
  {INT64_C(4107542399), "2100-02-28 23:59:59", "Sun, 28 Feb 2100 23:59:59 GMT"},
  {INT64_C(4107542400), "2100-03-01 00:00:00", "Mon, 01 Mar 2100 00:00:00 GMT"},
  {INT64_C(13574563200), "2400-02-29 00:00:00", "Tue, 29 Feb 2400 00:00:00 GMT"},
  {INT64_C(13601087999), "2400-12-31 23:59:59", "Sun, 31 Dec 2400 23:59:59 GMT"},
  {INT64_C(253402300799), "9999-12-31 23:59:59", "Fri, 31 Dec 9999 23:59:59 GMT"},
  {INT64_C(155195912693), "6887-12-17 23:44:53", "Wed, 17 Dec 6887 23:44:53 GMT"},
  {INT64_C(222683032287), "9026-07-18 21:51:27", "Tue, 18 Jul 9026 21:51:27 GMT"},
  {INT64_C(20460256196), "2618-05-12 12:29:56", "Tue, 12 May 2618 12:29:56 GMT"},
  {INT64_C(31160284220), "2957-06-06 10:30:20", "Mon, 06 Jun 2957 10:30:20 GMT"},
  {INT64_C(208286307707), "8570-05-01 03:41:47", "Tue, 01 May 8570 03:41:47 GMT"},
  {INT64_C(130779568291), "6114-03-29 09:51:31", "Thu, 29 Mar 6114 09:51:31 GMT"},
  {INT64_C(105877785627), "5325-02-18 08:00:27", "Sun, 18 Feb 5325 08:00:27 GMT"},
  {INT64_C(59222115862), "3846-09-04 03:44:22", "Fri, 04 Sep 3846 03:44:22 GMT"},
  {INT64_C(133547110028), "6201-12-10 03:27:08", "Thu, 10 Dec 6201 03:27:08 GMT"},
  {INT64_C(244934887336), "9731-09-05 12:42:16", "Wed, 05 Sep 9731 12:42:16 GMT"},
  {INT64_C(106668798898), "5350-03-14 13:54:58", "Sat, 14 Mar 5350 13:54:58 GMT"},
  {INT64_C(165067477638), "7200-10-12 05:07:18", "Thu, 12 Oct 7200 05:07:18 GMT"},
  {INT64_C(213727365509), "8742-10-02 08:38:29", "Fri, 02 Oct 8742 08:38:29 GMT"},
  {INT64_C(188987606438), "7958-10-12 13:20:38", "Sun, 12 Oct 7958 13:20:38 GMT"},
  {INT64_C(74927367469), "4344-05-09 21:37:49", "Tue, 09 May 4344 21:37:49 GMT"},
  {INT64_C(222142322942), "9009-05-30 16:49:02", "Tue, 30 May 9009 16:49:02 GMT"},
  {INT64_C(159896316209), "7036-11-29 19:23:29", "Tue, 29 Nov 7036 19:23:29 GMT"},
  {INT64_C(29829710498), "2915-04-08 06:41:38", "Mon, 08 Apr 2915 06:41:38 GMT"},
  {INT64_C(89770947385), "4814-09-23 14:16:25", "Tue, 23 Sep 4814 14:16:25 GMT"},
  {INT64_C(4426350300), "2110-04-07 21:45:00", "Mon, 07 Apr 2110 21:45:00 GMT"},
  {INT64_C(176202948281), "7553-08-25 23:24:41", "Tue, 25 Aug 7553 23:24:41 GMT"},
  {INT64_C(2325348894), "2043-09-08 18:14:54", "Tue, 08 Sep 2043 18:14:54 GMT"},
  {INT64_C(244551783498), "9719-07-16 10:58:18", "Sun, 16 Jul 9719 10:58:18 GMT"},
  {INT64_C(186320853455), "7874-04-10 08:37:35", "Fri, 10 Apr 7874 08:37:35 GMT"},
  {INT64_C(199381472501), "8288-02-23 22:21:41", "Thu, 23 Feb 8288 22:21:41 GMT"},
  {INT64_C(141858649991), "6465-04-27 12:33:11", "Mon, 27 Apr 6465 12:33:11 GMT"},
  {INT64_C(207110588669), "8533-01-27 07:04:29", "Tue, 27 Jan 8533 07:04:29 GMT"},
  {INT64_C(152453352724), "6801-01-20 09:32:04", "Sat, 20 Jan 6801 09:32:04 GMT"},
  {INT64_C(95490370617), "4995-12-20 14:56:57", "Sun, 20 Dec 4995 14:56:57 GMT"},
  {INT64_C(185675157983), "7853-10-24 00:46:23", "Mon, 24 Oct 7853 00:46:23 GMT"},
  {INT64_C(207098087593), "8532-09-04 14:33:13", "Thu, 04 Sep 8532 14:33:13 GMT"},
  {INT64_C(111761447285), "5511-08-01 06:28:05", "Tue, 01 Aug 5511 06:28:05 GMT"},
  {INT64_C(252705473182), "9977-12-01 20:46:22", "Thu, 01 Dec 9977 20:46:22 GMT"},
  {INT64_C(28528437075), "2874-01-11 05:51:15", "Thu, 11 Jan 2874 05:51:15 GMT"},
  {INT64_C(172597153159), "7439-05-22 05:39:19", "Wed, 22 May 7439 05:39:19 GMT"},
  {INT64_C(201831437104), "8365-10-14 00:05:04", "Thu, 14 Oct 8365 00:05:04 GMT"},
  {INT64_C(81002853565), "4536-11-17 00:39:25", "Sat, 17 Nov 4536 00:39:25 GMT"},
  {INT64_C(202382681328), "8383-04-03 03:28:48", "Sun, 03 Apr 8383 03:28:48 GMT"},
  {INT64_C(246242050806), "9773-02-05 17:40:06", "Fri, 05 Feb 9773 17:40:06 GMT"},
  {INT64_C(140493498871), "6422-01-23 03:54:31", "Sun, 23 Jan 6422 03:54:31 GMT"},
};
#define N_TV (sizeof(time_vectors) / sizeof(time_vectors[0]))

static int
parse_iso(const char *s, time_t *t)
{
  return time_parse_iso(s, strlen(s), t);
}

static int
parse_http(const char *s, time_t *t)
{
  return time_parse_http(s, strlen(s), t);
}

START_TEST(test_known_values)
{
  char buf[64];
  for (size_t i = 0; i < N_TV; i++) {
    time_t t = (time_t)time_vectors[i].t, back = -1;
    memset(buf, 'x', sizeof(buf));
    time_format_iso(buf, t);
    ck_assert_str_eq(buf, time_vectors[i].iso);
    ck_assert_int_eq(buf[TIME_ISO_LEN + 1], 'x'); /* no overrun */
    ck_assert_int_eq(parse_iso(time_vectors[i].iso, &back), 0);
    ck_assert_int_eq((int64_t)back, time_vectors[i].t);

    memset(buf, 'x', sizeof(buf));
    time_format_http(buf, t);
    ck_assert_str_eq(buf, time_vectors[i].http);
    ck_assert_int_eq(buf[TIME_HTTP_LEN + 1], 'x');
    back = -1;
    ck_assert_int_eq(parse_http(time_vectors[i].http, &back), 0);
    ck_assert_int_eq((int64_t)back, time_vectors[i].t);
  }
}
END_TEST

START_TEST(test_epoch_2020)
{
  time_t t;
  ck_assert_int_eq(parse_iso("2020-01-01 00:00:00", &t), 0);
  ck_assert_int_eq((int64_t)t, 1577836800);
  ck_assert_int_eq(parse_http("Wed, 01 Jan 2020 00:00:00 GMT", &t), 0);
  ck_assert_int_eq((int64_t)t, 1577836800);
}
END_TEST

/* Every day from 1970 to 2500 (and every second of one day) formats and
 * parses back to itself, and consecutive days have consecutive dates. */
START_TEST(test_round_trip_days)
{
  char buf[TIME_ISO_LEN + 1], prev[TIME_ISO_LEN + 1] = "";
  char hbuf[TIME_HTTP_LEN + 1];
  for (int64_t day = 0; day < 194000; day++) {
    time_t t = (time_t)(day * 86400 + (day * 7919) % 86400), back;
    time_format_iso(buf, t);
    if (parse_iso(buf, &back) != 0 || back != t)
      ck_abort_msg("iso round trip of %lld (%s)", (long long)t, buf);
    time_format_http(hbuf, t);
    if (parse_http(hbuf, &back) != 0 || back != t)
      ck_abort_msg("http round trip of %lld (%s)", (long long)t, hbuf);
    if (strncmp(buf, prev, 10) == 0)
      ck_abort_msg("day %lld has the same date as the day before: %s",
                   (long long)day, buf);
    memcpy(prev, buf, sizeof(buf));
  }
  for (int64_t s = 0; s < 86400; s++) {
    time_t t = (time_t)(1577836800 + s), back;
    time_format_iso(buf, t);
    if (parse_iso(buf, &back) != 0 || back != t)
      ck_abort_msg("iso round trip of %lld (%s)", (long long)t, buf);
  }
}
END_TEST

START_TEST(test_clamp)
{
  char buf[TIME_HTTP_LEN + 1];
  time_format_iso(buf, (time_t)-1);
  ck_assert_str_eq(buf, "1970-01-01 00:00:00");
  time_format_iso(buf, (time_t)INT64_C(253402300800));
  ck_assert_str_eq(buf, "9999-12-31 23:59:59");
  time_format_http(buf, (time_t)INT64_MAX);
  ck_assert_str_eq(buf, "Fri, 31 Dec 9999 23:59:59 GMT");
}
END_TEST

START_TEST(test_parse_iso_rejects)
{
  const char *bad[] = {
    "",
    "2020-01-01",
    "2020-01-01 00:00",
    "2020-01-01 00:00:0",
    "2020-01-01 00:00:00 ",     /* trailing garbage */
    "2020-01-01 00:00:00Z",
    " 2020-01-01 00:00:00",
    "2020-01-01T00:00:00",      /* ISO 'T' separator is not Tor's format */
    "2020/01/01 00:00:00",
    "2020-01-01 00.00.00",
    "2020-1-01 00:00:00 ",
    "+020-01-01 00:00:00",
    "2020-01-01 -0:00:00",
    "2020-0a-01 00:00:00",
    "2020-01-01 00:00:0x",
    "2020-00-01 00:00:00",      /* month 0 */
    "2020-13-01 00:00:00",      /* month 13 */
    "2020-01-00 00:00:00",      /* day 0 */
    "2020-01-32 00:00:00",
    "2020-04-31 00:00:00",      /* April has 30 days */
    "2019-02-29 00:00:00",      /* not a leap year */
    "2100-02-29 00:00:00",      /* century, not a leap year */
    "2020-01-01 24:00:00",
    "2020-01-01 23:60:00",
    "2020-01-01 23:59:60",      /* no leap seconds */
    "2020-01-01 99:99:99",
    "1969-12-31 23:59:59",      /* before the epoch */
    "0000-01-01 00:00:00",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    time_t t = 12345;
    if (parse_iso(bad[i], &t) != -1)
      ck_abort_msg("accepted \"%s\"", bad[i]);
    ck_assert_int_eq((int64_t)t, 12345); /* untouched */
  }
  /* The length is honoured: a valid prefix of a longer string. */
  time_t t;
  ck_assert_int_eq(time_parse_iso("2020-01-01 00:00:00xyz", 19, &t), 0);
  ck_assert_int_eq((int64_t)t, 1577836800);
  ck_assert_int_eq(time_parse_iso("2020-01-01 00:00:00", 18, &t), -1);
  /* Valid edge fields. */
  ck_assert_int_eq(parse_iso("2000-02-29 23:59:59", &t), 0);
  ck_assert_int_eq(parse_iso("2020-12-31 00:00:00", &t), 0);
}
END_TEST

START_TEST(test_parse_http_rejects)
{
  const char *bad[] = {
    "",
    "Wed, 01 Jan 2020 00:00:00",
    "Wed, 01 Jan 2020 00:00:00 UTC",
    "Wed, 01 Jan 2020 00:00:00 GMT ",
    "Wed, 1 Jan 2020 00:00:00 GMT",
    "Wed 01 Jan 2020 00:00:00 GMT ",
    "Xyz, 01 Jan 2020 00:00:00 GMT",
    "wed, 01 Jan 2020 00:00:00 GMT",
    "Wed, 01 Jam 2020 00:00:00 GMT",
    "Wed, 01 JAN 2020 00:00:00 GMT",
    "Wed, 00 Jan 2020 00:00:00 GMT",
    "Wed, 30 Feb 2020 00:00:00 GMT",
    "Wed, 01 Jan 1969 00:00:00 GMT",
    "Wed, 01 Jan 2020 24:00:00 GMT",
    "Wed, 01 Jan 2020 00:00:60 GMT",
    "Wed, 01 Jan 2020 00-00-00 GMT",
    "Wednesday, 01-Jan-20 00:00:00 GMT", /* RFC 850 */
    "Wed Jan  1 00:00:00 2020",          /* asctime */
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    time_t t = 12345;
    if (parse_http(bad[i], &t) != -1)
      ck_abort_msg("accepted \"%s\"", bad[i]);
    ck_assert_int_eq((int64_t)t, 12345);
  }
  /* The weekday name is not checked against the date. */
  time_t t;
  ck_assert_int_eq(parse_http("Mon, 01 Jan 2020 00:00:00 GMT", &t), 0);
  ck_assert_int_eq((int64_t)t, 1577836800);
}
END_TEST

START_TEST(test_monotonic)
{
  uint64_t a = time_mono_ns();
  uint64_t ams = time_mono_ms();
  usleep(20000);
  uint64_t b = time_mono_ns();
  uint64_t bus = time_mono_us();
  ck_assert_uint_ge(b - a, 20000000);
  ck_assert_uint_lt(b - a, 5000000000ULL);
  ck_assert_uint_ge(bus, b / 1000);
  ck_assert_uint_ge(time_mono_ms() - ams, 20);
  /* Never goes backwards. */
  uint64_t prev = time_mono_ns();
  for (int i = 0; i < 10000; i++) {
    uint64_t now = time_mono_ns();
    if (now < prev)
      ck_abort_msg("monotonic clock went back");
    prev = now;
  }

  time_mono_mock(UINT64_C(1234567890123));
  ck_assert_uint_eq(time_mono_ns(), UINT64_C(1234567890123));
  ck_assert_uint_eq(time_mono_us(), UINT64_C(1234567890));
  ck_assert_uint_eq(time_mono_ms(), UINT64_C(1234567));
  time_mono_unmock();
  ck_assert_uint_ge(time_mono_ns(), b);
}
END_TEST

START_TEST(test_wall_and_approx)
{
  time_t w = time_wall_now();
  ck_assert_int_gt((int64_t)w, 1577836800); /* after 2020 */
  int64_t us = time_wall_us();
  ck_assert_int_ge(us / 1000000, (int64_t)w);
  ck_assert_int_le(us / 1000000, (int64_t)w + 2);

  /* Unset: follows the wall clock. */
  time_t a = time_approx_now();
  ck_assert_int_ge((int64_t)a, (int64_t)w);
  ck_assert_int_le((int64_t)a, (int64_t)w + 2);
  /* Set: frozen at that value. */
  time_approx_set(1000);
  ck_assert_int_eq((int64_t)time_approx_now(), 1000);
  ck_assert_int_eq((int64_t)time_approx_now(), 1000);
  time_approx_update();
  a = time_approx_now();
  ck_assert_int_ge((int64_t)a, (int64_t)w);
  ck_assert_int_le((int64_t)a, (int64_t)time_wall_now());
}
END_TEST

Suite *
suite_time(void)
{
  Suite *s = suite_create("time");
  TCase *tc = tcase_create("format");
  tcase_add_test(tc, test_known_values);
  tcase_add_test(tc, test_epoch_2020);
  tcase_add_test(tc, test_round_trip_days);
  tcase_add_test(tc, test_clamp);
  tcase_add_test(tc, test_parse_iso_rejects);
  tcase_add_test(tc, test_parse_http_rejects);
  suite_add_tcase(s, tc);
  tc = tcase_create("clock");
  tcase_add_test(tc, test_monotonic);
  tcase_add_test(tc, test_wall_and_approx);
  suite_add_tcase(s, tc);
  return s;
}
