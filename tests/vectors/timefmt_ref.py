#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""timefmt_ref.py -- reference UTC conversions for tests/unit/check_time.c,
from Python's calendar/datetime (independent of pctor's own calendar code).
Run by hand: python3 timefmt_ref.py; paste the output into the test.

Prints {seconds, "YYYY-MM-DD HH:MM:SS", "RFC 1123 date"} rows for chosen
edge cases (epoch, leap days, century rules, 2^31, the year 9999) and for
pseudo-random times spread over 1970..9999.
"""
import calendar
import datetime
import email.utils
import random

fixed = [
    "1970-01-01 00:00:00", "1970-01-01 00:00:01", "1970-12-31 23:59:59",
    "1972-02-29 12:00:00", "1999-12-31 23:59:59", "2000-01-01 00:00:00",
    "2000-02-29 00:00:00", "2000-03-01 00:00:00", "2000-12-31 23:59:59",
    "2020-01-01 00:00:00", "2038-01-19 03:14:07", "2038-01-19 03:14:08",
    "2100-02-28 23:59:59", "2100-03-01 00:00:00", "2400-02-29 00:00:00",
    "2400-12-31 23:59:59", "9999-12-31 23:59:59",
]
times = [calendar.timegm(datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S").timetuple()) for s in fixed]
rnd = random.Random(1)
times += [rnd.randrange(0, 253402300800) for _ in range(40)]
for t in times:
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    iso = d.strftime("%Y-%m-%d %H:%M:%S")
    # email.utils.formatdate uses the C library for years > 9999 only;
    # build RFC 1123 by hand with fixed English names to avoid locales.
    wd = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][d.weekday()]
    mo = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
          "Oct", "Nov", "Dec"][d.month - 1]
    http = "%s, %02d %s %04d %02d:%02d:%02d GMT" % (wd, d.day, mo, d.year,
                                                    d.hour, d.minute, d.second)
    if d.year < 10000 and t < 2**31:
        assert http == email.utils.formatdate(t, usegmt=True), http
    print('  {INT64_C(%d), "%s", "%s"},' % (t, iso, http))
