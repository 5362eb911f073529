/* SPDX-License-Identifier: BSD-3-Clause */
/* timefmt.c -- UTC time formatting and parsing (see timefmt.h).
 *
 * Calendar arithmetic is done on day numbers (days since 1970-01-01) with
 * the proleptic Gregorian rules: a year is a leap year if divisible by 4,
 * except centuries, except every fourth century. Day number -> date
 * splits the days since 1601-01-01 (the start of a 400-year cycle) into
 * 400-, 100-, 4- and 1-year periods; date -> day number counts the leap
 * days before the year. Parsers read fixed positions and check each field
 * before anything is computed from it.
 */
#include "lib/time/timefmt.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SECS_PER_DAY 86400
/* Days from 1601-01-01 to 1970-01-01: 369 years, 89 of them leap. */
#define DAYS_1601_TO_1970 134774
/* 1970-01-01 00:00:00 and 9999-12-31 23:59:59. */
#define MIN_TIME INT64_C(0)
#define MAX_TIME INT64_C(253402300799)

static const char *const wday_names[7] = {"Sun", "Mon", "Tue", "Wed",
                                          "Thu", "Fri", "Sat"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr",
                                            "May", "Jun", "Jul", "Aug",
                                            "Sep", "Oct", "Nov", "Dec"};
/* Days before the first of each month in a common year. */
static const int days_before_month[12] = {0,   31,  59,  90,  120, 151,
                                          181, 212, 243, 273, 304, 334};

typedef struct {
  int year, month, day; /* month 1-12, day 1-31 */
  int hour, min, sec;
  int wday; /* 0 = Sunday */
} civil_t;

static int
is_leap(int y)
{
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
days_in_month(int y, int m)
{
  static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Leap years in 1..y. */
static int64_t
leaps_through(int64_t y)
{
  return y / 4 - y / 100 + y / 400;
}

/* Seconds since the epoch of a valid date and time (year >= 1970). */
static int64_t
civil_to_time(const civil_t *c)
{
  int64_t days = (int64_t)365 * (c->year - 1970) +
                 leaps_through(c->year - 1) - leaps_through(1969);
  days += days_before_month[c->month - 1];
  if (c->month > 2 && is_leap(c->year))
    days++;
  days += c->day - 1;
  return days * SECS_PER_DAY + c->hour * 3600 + c->min * 60 + c->sec;
}

/* Break t (already clamped to [MIN_TIME, MAX_TIME]) into fields. */
static void
time_to_civil(int64_t t, civil_t *c)
{
  int64_t days = t / SECS_PER_DAY;
  int64_t secs = t % SECS_PER_DAY;
  c->hour = (int)(secs / 3600);
  c->min = (int)(secs / 60 % 60);
  c->sec = (int)(secs % 60);
  c->wday = (int)((days + 4) % 7); /* 1970-01-01 was a Thursday */

  int64_t d = days + DAYS_1601_TO_1970;
  int64_t n400 = d / 146097;
  d %= 146097;
  int64_t n100 = d / 36524;
  if (n100 == 4) /* the last day of a leap 400th year */
    n100 = 3;
  d -= n100 * 36524;
  int64_t n4 = d / 1461;
  d %= 1461;
  int64_t n1 = d / 365;
  if (n1 == 4) /* the last day of a leap year */
    n1 = 3;
  d -= n1 * 365;
  c->year = (int)(1601 + 400 * n400 + 100 * n100 + 4 * n4 + n1);

  int yday = (int)d, m = 12;
  while (m > 1) {
    int start = days_before_month[m - 1] + (m > 2 && is_leap(c->year));
    if (yday >= start) {
      yday -= start;
      break;
    }
    m--;
  }
  c->month = m;
  c->day = yday + 1;
}

static int64_t
clamp_time(time_t t)
{
  int64_t v = (int64_t)t;
  return v < MIN_TIME ? MIN_TIME : v > MAX_TIME ? MAX_TIME : v;
}

/* Parse n (1..4) digits at s; -1 if any is not a digit. */
static int
digits(const char *s, int n)
{
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* Check the fields of c (year, month, day, time) and store the time. */
static int
finish_parse(const civil_t *c, time_t *t_out)
{
  if (c->year < 1970 || c->year > 9999 || c->month < 1 || c->month > 12 ||
      c->day < 1 || c->day > days_in_month(c->year, c->month) ||
      c->hour < 0 || c->hour > 23 || c->min < 0 || c->min > 59 ||
      c->sec < 0 || c->sec > 59)
    return -1;
  int64_t t = civil_to_time(c);
  if ((int64_t)(time_t)t != t)
    return -1; /* does not fit a 32-bit time_t */
  *t_out = (time_t)t;
  return 0;
}

/* Parse "HH:MM:SS" at s. */
static void
parse_hms(const char *s, civil_t *c)
{
  c->hour = digits(s, 2);
  c->min = s[2] == ':' ? digits(s + 3, 2) : -1;
  c->sec = s[5] == ':' ? digits(s + 6, 2) : -1;
}

void
time_format_iso(char *buf, time_t t)
{
  civil_t c;
  time_to_civil(clamp_time(t), &c);
  snprintf(buf, TIME_ISO_LEN + 1, "%04d-%02d-%02d %02d:%02d:%02d", c.year,
           c.month, c.day, c.hour, c.min, c.sec);
}

int
time_parse_iso(const char *s, size_t len, time_t *t_out)
{
  if (len != TIME_ISO_LEN || s[4] != '-' || s[7] != '-' || s[10] != ' ')
    return -1;
  civil_t c;
  c.year = digits(s, 4);
  c.month = digits(s + 5, 2);
  c.day = digits(s + 8, 2);
  parse_hms(s + 11, &c);
  return finish_parse(&c, t_out);
}

void
time_format_http(char *buf, time_t t)
{
  civil_t c;
  time_to_civil(clamp_time(t), &c);
  snprintf(buf, TIME_HTTP_LEN + 1, "%s, %02d %s %04d %02d:%02d:%02d GMT",
           wday_names[c.wday], c.day, month_names[c.month - 1], c.year,
           c.hour, c.min, c.sec);
}

int
time_parse_http(const char *s, size_t len, time_t *t_out)
{
  /* "Wed, 01 Jan 2020 00:00:00 GMT"
   *  0    5  8   12   17       26 */
  if (len != TIME_HTTP_LEN || s[3] != ',' || s[4] != ' ' || s[7] != ' ' ||
      s[11] != ' ' || s[16] != ' ' || s[25] != ' ' ||
      memcmp(s + 26, "GMT", 3) != 0)
    return -1;
  int wday_ok = 0;
  for (int i = 0; i < 7; i++)
    if (!memcmp(s, wday_names[i], 3))
      wday_ok = 1;
  if (!wday_ok)
    return -1;
  civil_t c;
  c.month = 0;
  for (int i = 0; i < 12; i++)
    if (!memcmp(s + 8, month_names[i], 3))
      c.month = i + 1;
  c.day = digits(s + 5, 2);
  c.year = digits(s + 12, 4);
  parse_hms(s + 17, &c);
  return finish_parse(&c, t_out);
}
