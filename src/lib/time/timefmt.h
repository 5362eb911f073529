/* SPDX-License-Identifier: BSD-3-Clause */
/* timefmt.h -- the text time formats Tor uses, always in UTC.
 *
 * "YYYY-MM-DD HH:MM:SS" appears in directory documents (published,
 * valid-after, fresh-until, ...); RFC 1123 dates ("Sun, 06 Nov 1994
 * 08:49:37 GMT") in HTTP Date headers. Both are fixed-width; the parsers
 * accept exactly that width (no leading or trailing characters), only
 * digits where digits belong, and only real dates and times: months 1-12,
 * days that exist in that month (leap years included), hours 0-23,
 * minutes and seconds 0-59 (no leap seconds), years 1970-9999.
 *
 * Conversion is done here, not by the C library, so the results do not
 * depend on the TZ variable or the locale.
 */
#ifndef PCTOR_LIB_TIME_TIMEFMT_H
#define PCTOR_LIB_TIME_TIMEFMT_H

#include <stddef.h>
#include <time.h>

/* Lengths of the formatted strings, without the NUL. */
#define TIME_ISO_LEN 19  /* "2020-01-01 00:00:00" */
#define TIME_HTTP_LEN 29 /* "Wed, 01 Jan 2020 00:00:00 GMT" */

/* Write t as "YYYY-MM-DD HH:MM:SS" plus a NUL into buf (TIME_ISO_LEN + 1
 * bytes). Times before 1970 or after 9999 are clamped to those years'
 * ends. */
void time_format_iso(char *buf, time_t t);

/* Parse exactly len characters at s as "YYYY-MM-DD HH:MM:SS" (UTC) into
 * *t_out. Returns 0, or -1 if s is not such a time (see the top of this
 * file); *t_out is only written on success. */
int time_parse_iso(const char *s, size_t len, time_t *t_out);

/* Write t as an RFC 1123 date ("Wed, 01 Jan 2020 00:00:00 GMT") plus a NUL
 * into buf (TIME_HTTP_LEN + 1 bytes). Clamped like time_format_iso(). */
void time_format_http(char *buf, time_t t);

/* Parse exactly len characters at s as an RFC 1123 date. The weekday must
 * be one of the English abbreviations but is not checked against the date.
 * Returns 0, or -1 if s is not such a date; *t_out only written on
 * success. */
int time_parse_http(const char *s, size_t len, time_t *t_out);

#endif
