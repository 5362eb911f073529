/* SPDX-License-Identifier: BSD-3-Clause */
/* confval.c -- typed configuration values (see confval.h).
 *
 * Numbers are parsed by hand rather than with strtoll/strtod so that the
 * accepted syntax is exactly what the man page says (no hex, no exponent,
 * no locale, no leading blanks or signs) and overflow is detected exactly.
 * A unit is a rational factor num/den applied to the number: "kbit" is
 * 1000/8 bytes, "hour" is 3600000/1 milliseconds. Fractions keep at most
 * FRAC_DIGITS significant digits (later digits must still be digits), so
 * all arithmetic fits in 64 bits with explicit overflow checks.
 */
#include "lib/conf/confval.h"
#include "lib/malloc/alloc.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define FRAC_DIGITS 6
#define FRAC_SCALE 1000000ULL /* 10^FRAC_DIGITS */

typedef struct {
  const char *name;
  uint64_t num, den;
} unit_t;

static const unit_t time_units[] = {
  {"msec", 1, 1}, {"msecs", 1, 1}, {"ms", 1, 1},
  {"millisecond", 1, 1}, {"milliseconds", 1, 1},
  {"s", 1000, 1}, {"sec", 1000, 1}, {"secs", 1000, 1},
  {"second", 1000, 1}, {"seconds", 1000, 1},
  {"min", 60000, 1}, {"mins", 60000, 1},
  {"minute", 60000, 1}, {"minutes", 60000, 1},
  {"h", 3600000, 1}, {"hour", 3600000, 1}, {"hours", 3600000, 1},
  {"day", 86400000, 1}, {"days", 86400000, 1},
  {"week", 604800000, 1}, {"weeks", 604800000, 1},
  /* tor's month: 30.4368 days */
  {"month", 2629728000ULL, 1}, {"months", 2629728000ULL, 1},
  {NULL, 0, 0},
};

#define KI (1ULL << 10)
#define MI (1ULL << 20)
#define GI (1ULL << 30)
#define TI (1ULL << 40)

static const unit_t mem_units[] = {
  {"b", 1, 1}, {"byte", 1, 1}, {"bytes", 1, 1},
  {"k", KI, 1}, {"kb", KI, 1}, {"kbyte", KI, 1}, {"kbytes", KI, 1},
  {"kilobyte", KI, 1}, {"kilobytes", KI, 1},
  {"m", MI, 1}, {"mb", MI, 1}, {"mbyte", MI, 1}, {"mbytes", MI, 1},
  {"megabyte", MI, 1}, {"megabytes", MI, 1},
  {"g", GI, 1}, {"gb", GI, 1}, {"gbyte", GI, 1}, {"gbytes", GI, 1},
  {"gigabyte", GI, 1}, {"gigabytes", GI, 1},
  {"t", TI, 1}, {"tb", TI, 1}, {"tbyte", TI, 1}, {"tbytes", TI, 1},
  {"terabyte", TI, 1}, {"terabytes", TI, 1},
  {"bit", 1, 8}, {"bits", 1, 8},
  /* tor's bit units are binary too: a kbit is 1024 bits, 128 bytes. */
  {"kbit", KI, 8}, {"kbits", KI, 8}, {"kilobit", KI, 8},
  {"kilobits", KI, 8},
  {"mbit", MI, 8}, {"mbits", MI, 8}, {"megabit", MI, 8},
  {"megabits", MI, 8},
  {"gbit", GI, 8}, {"gbits", GI, 8}, {"gigabit", GI, 8},
  {"gigabits", GI, 8},
  {"tbit", TI, 8}, {"tbits", TI, 8}, {"terabit", TI, 8},
  {"terabits", TI, 8},
  {NULL, 0, 0},
};

static int
is_digit(char c)
{
  return c >= '0' && c <= '9';
}

int
conf_parse_bool(const char *s, int *out, char **err_out)
{
  if (!strcmp(s, "0") || !strcmp(s, "1")) {
    *out = s[0] == '1';
    return 0;
  }
  *err_out = pc_asprintf("'%s' is not a boolean (use 0 or 1)", s);
  return -1;
}

int
conf_parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
               char **err_out)
{
  const char *p = s;
  int neg = 0;
  if (*p == '-' && min < 0) {
    neg = 1;
    p++;
  }
  if (!is_digit(*p))
    goto not_int;
  /* Accumulate as a negative number so INT64_MIN fits. */
  int64_t v = 0;
  int overflow = 0;
  for (; is_digit(*p); p++) {
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_sub_overflow(v, (int64_t)(*p - '0'), &v))
      overflow = 1;
  }
  if (*p)
    goto not_int;
  if (!neg && !overflow) {
    if (v == INT64_MIN)
      overflow = 1;
    else
      v = -v;
  }
  if (overflow || v < min || v > max) {
    *err_out = pc_asprintf("'%s' is out of range (%lld to %lld)", s,
                           (long long)min, (long long)max);
    return -1;
  }
  *out = v;
  return 0;
not_int:
  *err_out = pc_asprintf("'%s' is not an integer", s);
  return -1;
}

/* Parse "123", "1.5" (fraction allowed) and a unit from table; the value
 * in output units is (int + frac/FRAC_SCALE) * num / den, rounded down. */
static int
parse_with_unit(const char *s, unsigned flags, const unit_t *units,
                const unit_t *dflt, const char *what, uint64_t *out,
                char **err_out)
{
  const char *p = s;
  uint64_t ip = 0, frac = 0;
  int overflow = 0;
  if (!is_digit(*p)) {
    *err_out = pc_asprintf("'%s' is not a %s (expected a number and a "
                           "unit, such as %s)", s, what,
                           units == time_units ? "\"30 minutes\""
                                               : "\"512 MB\"");
    return -1;
  }
  for (; is_digit(*p); p++)
    if (__builtin_mul_overflow(ip, 10, &ip) ||
        __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
      overflow = 1;
  if (*p == '.') {
    if (!(flags & CONF_ALLOW_FRACTION)) {
      *err_out = pc_asprintf("'%s': fractional values are not allowed here",
                             s);
      return -1;
    }
    p++;
    if (!is_digit(*p)) {
      *err_out = pc_asprintf("'%s': expected digits after the decimal "
                             "point", s);
      return -1;
    }
    uint64_t scale = FRAC_SCALE;
    for (; is_digit(*p); p++) {
      if (scale > 1) {
        scale /= 10;
        frac += (uint64_t)(*p - '0') * scale;
      }
    }
  }
  while (*p == ' ' || *p == '\t')
    p++;
  const unit_t *u = dflt;
  if (*p) {
    u = NULL;
    for (const unit_t *t = units; t->name; t++)
      if (!strcasecmp(t->name, p)) {
        u = t;
        break;
      }
    if (!u) {
      *err_out = pc_asprintf("'%s': unknown %s unit '%s'", s,
                             units == time_units ? "time" : "memory", p);
      return -1;
    }
  }
  uint64_t whole, part;
  if (overflow || __builtin_mul_overflow(ip, u->num, &whole))
    goto too_big;
  /* frac < 10^6 and num < 2^40, so this cannot overflow. */
  part = frac * u->num / FRAC_SCALE;
  if (__builtin_add_overflow(whole, part, &whole))
    goto too_big;
  *out = whole / u->den;
  return 0;
too_big:
  *err_out = pc_asprintf("'%s' is too large", s);
  return -1;
}

int
conf_parse_interval(const char *s, unsigned flags, uint64_t *out_msec,
                    char **err_out)
{
  static const unit_t seconds = {"seconds", 1000, 1};
  return parse_with_unit(s, flags, time_units, &seconds, "time interval",
                         out_msec, err_out);
}

int
conf_parse_memunit(const char *s, unsigned flags, uint64_t *out_bytes,
                   char **err_out)
{
  static const unit_t bytes = {"bytes", 1, 1};
  return parse_with_unit(s, flags, mem_units, &bytes, "memory size",
                         out_bytes, err_out);
}

/* Parse exactly s[0..len) as a port. */
static int
parse_port_n(const char *s, size_t len, int allow_zero, uint16_t *out)
{
  if (len == 0 || len > 5)
    return -1;
  uint32_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!is_digit(s[i]))
      return -1;
    v = v * 10 + (uint32_t)(s[i] - '0');
  }
  if (v > 65535 || (v == 0 && !allow_zero))
    return -1;
  *out = (uint16_t)v;
  return 0;
}

int
conf_parse_port(const char *s, int allow_zero, uint16_t *out,
                char **err_out)
{
  if (parse_port_n(s, strlen(s), allow_zero, out) == 0)
    return 0;
  *err_out = pc_asprintf("'%s' is not a port number (%d to 65535)", s,
                         allow_zero ? 0 : 1);
  return -1;
}

static int
all_digits(const char *s)
{
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!is_digit(*s))
      return 0;
  return 1;
}

/* Parse a numeric address (without brackets) of len bytes. */
static int
parse_ip_n(const char *s, size_t len, int family, pc_addr_t *out)
{
  char buf[64];
  if (len == 0 || len >= sizeof(buf))
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  uint8_t a[16];
  if (inet_pton(family, buf, a) != 1)
    return -1;
  memset(out->addr, 0, sizeof(out->addr));
  memcpy(out->addr, a, family == AF_INET ? 4 : 16);
  out->family = family;
  return 0;
}

int
conf_parse_addrport(const char *s, unsigned flags, pc_addr_t *out,
                    char **err_out)
{
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  a.family = AF_UNSPEC;
  const char *port_s = NULL;
  int zero_ok = (flags & CONF_PORT_ZERO_OK) != 0;
  size_t len = strlen(s);
  const char *colon = strchr(s, ':');

  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || parse_ip_n(s + 1, (size_t)(close - s - 1), AF_INET6,
                             &a) < 0) {
      *err_out = pc_asprintf("'%s': bad IPv6 address in brackets", s);
      return -1;
    }
    if (close[1] == ':')
      port_s = close + 2;
    else if (close[1] != '\0')
      goto bad_syntax;
  } else if (colon && strchr(colon + 1, ':')) {
    /* Two or more colons: a bare IPv6 address, no port. */
    if (!(flags & CONF_PORT_OPTIONAL)) {
      *err_out = pc_asprintf("'%s': write an IPv6 address and port as "
                             "[ADDRESS]:PORT", s);
      return -1;
    }
    if (parse_ip_n(s, len, AF_INET6, &a) < 0) {
      *err_out = pc_asprintf("'%s' is not an IPv6 address (write "
                             "[ADDRESS]:PORT to give a port)", s);
      return -1;
    }
  } else if (colon) {
    if (parse_ip_n(s, (size_t)(colon - s), AF_INET, &a) < 0) {
      *err_out = pc_asprintf("'%s': '%.*s' is not an IPv4 address (host "
                             "names are not allowed)", s,
                             (int)(colon - s), s);
      return -1;
    }
    port_s = colon + 1;
  } else if (all_digits(s) && (flags & CONF_ADDR_OPTIONAL)) {
    port_s = s;
  } else if (parse_ip_n(s, len, AF_INET, &a) < 0) {
    if (all_digits(s))
      *err_out = pc_asprintf("'%s': an address is needed (ADDRESS:PORT)",
                             s);
    else
      *err_out = pc_asprintf("'%s' is not an IPv4 or IPv6 address (host "
                             "names are not allowed)", s);
    return -1;
  }

  if (port_s) {
    if (parse_port_n(port_s, strlen(port_s), zero_ok, &a.port) < 0) {
      if (port_s == s)
        *err_out = pc_asprintf("'%s' is not a port number (%d to 65535)",
                               s, zero_ok ? 0 : 1);
      else
        *err_out = pc_asprintf("'%s': '%s' is not a port number (%d to "
                               "65535)", s, port_s, zero_ok ? 0 : 1);
      return -1;
    }
  } else if (!(flags & CONF_PORT_OPTIONAL)) {
    *err_out = pc_asprintf("'%s': a port is needed (ADDRESS:PORT)", s);
    return -1;
  }
  if (a.family == AF_UNSPEC && !(flags & CONF_ADDR_OPTIONAL)) {
    *err_out = pc_asprintf("'%s': an address is needed (ADDRESS:PORT)", s);
    return -1;
  }
  *out = a;
  return 0;
bad_syntax:
  *err_out = pc_asprintf("'%s' is not ADDRESS:PORT", s);
  return -1;
}

int
conf_parse_listen_port(const char *s, const char *what, pc_addr_t *out,
                       char **err_out)
{
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  a.family = AF_UNSPEC;
  if (strcmp(s, "0")) {
    if (conf_parse_addrport(s, CONF_ADDR_OPTIONAL, &a, err_out) < 0)
      return -1;
    if (a.port == 0) {
      free(*err_out);
      *err_out = pc_asprintf("%s needs a port other than 0", what);
      return -1;
    }
    if (a.family == AF_UNSPEC && pc_addr_parse_ip(&a, "0.0.0.0", a.port) < 0)
      return -1;
  }
  *out = a;
  return 0;
}

void
conf_format_listen_port(const pc_addr_t *a, conf_strlist_t *out)
{
  char buf[PC_ADDR_STR_LEN];
  if (a->family == AF_UNSPEC)
    snprintf(buf, sizeof(buf), "0");
  else
    pc_addr_fmt(a, buf, sizeof(buf), 1);
  conf_strlist_add(out, buf);
}
