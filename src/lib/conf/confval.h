/* SPDX-License-Identifier: BSD-3-Clause */
/* confval.h -- typed configuration values: booleans, integers, intervals,
 * memory sizes, ports and address:port pairs, in tor's syntax.
 *
 * Every parser takes the value text (as the lexer produced it, already
 * trimmed), writes the result only on success, and returns 0; on failure
 * it returns -1 and sets *err_out to a newly allocated message saying what
 * was wrong with the value ("'2 fortnights': unknown time unit
 * 'fortnights'"). The caller adds the option name and line. Nothing here
 * allocates on success.
 *
 * Numbers are decimal, without sign unless the range allows negatives.
 * Units are case-insensitive and may follow the number with or without a
 * blank ("90 minutes", "512MB"); a number without a unit means seconds
 * (intervals) or bytes (memory).
 *   Time units: msec ms millisecond(s); s sec secs second(s);
 *     min mins minute(s); h hour(s); day(s); week(s).
 *   Memory units (binary, as tor's): b byte(s); k kb kbyte(s) kilobyte(s);
 *     m mb mbyte(s) megabyte(s); g gb gbyte(s) gigabyte(s);
 *     t tb tbyte(s) terabyte(s); bit units are binary, as tor's, and
 *     divided by eight: bit(s), kbit(s) kilobit(s) (128 bytes),
 *     mbit(s) megabit(s) (131072 bytes), gbit(s) gigabit(s),
 *     tbit(s) terabit(s). So "8 Mbits" is 1 MByte, as in tor.
 */
#ifndef PCTOR_LIB_CONF_CONFVAL_H
#define PCTOR_LIB_CONF_CONFVAL_H

#include <stdint.h>

#include "lib/conf/confdecl.h"
#include "lib/address/address.h"

/* Flags for intervals and memory sizes: accept a fractional number
 * ("1.5 hours"); the result is rounded down to the unit of the output. */
#define CONF_ALLOW_FRACTION 0x1

/* Flags for conf_parse_addrport(). */
#define CONF_ADDR_OPTIONAL 0x1  /* "9001" alone is fine (family AF_UNSPEC) */
#define CONF_PORT_OPTIONAL 0x2  /* "1.2.3.4" alone is fine (port 0) */
#define CONF_PORT_ZERO_OK 0x4   /* ":0" / "0" is fine */

/* "0" or "1". */
int conf_parse_bool(const char *s, int *out, char **err_out);
/* A decimal integer in [min, max]. */
int conf_parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
                   char **err_out);
/* A time interval, in milliseconds ("30 seconds" -> 30000). At most about
 * 290 million years; a plain number is seconds. */
int conf_parse_interval(const char *s, unsigned flags, uint64_t *out_msec,
                        char **err_out);
/* A memory size in bytes ("512 MB" -> 536870912). */
int conf_parse_memunit(const char *s, unsigned flags, uint64_t *out_bytes,
                       char **err_out);
/* A TCP port, 1-65535 (0 too if allow_zero). */
int conf_parse_port(const char *s, int allow_zero, uint16_t *out,
                    char **err_out);
/* "1.2.3.4:9001", "[2001:db8::1]:9001", and with CONF_ADDR_OPTIONAL
 * "9001", with CONF_PORT_OPTIONAL "1.2.3.4", "[::1]" and "::1". Addresses
 * are numeric (no DNS). A missing address leaves out->family AF_UNSPEC and
 * out->addr zero. */
int conf_parse_addrport(const char *s, unsigned flags, pc_addr_t *out,
                        char **err_out);
/* A listening port option: "0" (off: out->family AF_UNSPEC), "PORT"
 * (0.0.0.0:PORT) or "ADDRESS:PORT" as conf_parse_addrport() reads it, with
 * a port other than 0; what names the option in that error. */
int conf_parse_listen_port(const char *s, const char *what, pc_addr_t *out,
                           char **err_out);
/* The value of such an option as a torrc line would give it: "0" when off
 * (family AF_UNSPEC), else ADDRESS:PORT. */
void conf_format_listen_port(const pc_addr_t *a, conf_strlist_t *out);

#endif
