/* SPDX-License-Identifier: BSD-3-Clause */
/* netdoc.c -- bounded tokenizer for Tor's directory document meta-format
 * (see netdoc.h for the rules it enforces).
 *
 * Design: a cursor over the caller's buffer. Each call finds the next LF
 * with memchr bounded by NETDOC_MAX_LINE, validates the bytes of the line
 * once, splits the arguments in place into (pointer, length) pairs and,
 * when the following line starts "-----BEGIN ", consumes the object up to
 * its matching END line. Errors record the line number; a reader that
 * failed keeps failing so a caller that ignores one error cannot resume in
 * the middle of garbage.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "feature/dir/netdoc.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"

void
netdoc_reader_init(netdoc_reader_t *r, const char *doc, size_t len)
{
  memset(r, 0, sizeof(*r));
  r->doc = doc;
  r->len = len;
  r->pos = 0;
  r->line_no = 1;
}

static int
fail(netdoc_reader_t *r, int line, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static int
fail(netdoc_reader_t *r, int line, const char *fmt, ...)
{
  char msg[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(r->err, sizeof(r->err), "line %d: %s", line, msg);
  r->pos = r->len;
  return -1;
}

static int
is_kw_char(unsigned char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-';
}

static int
is_ws(char c)
{
  return c == ' ' || c == '\t';
}

/* Find the line starting at pos: sets *eol to the LF's offset. Returns 0,
 * or -1 (with the error recorded) if there is none within bounds or the
 * line holds a forbidden byte. */
static int
get_line(netdoc_reader_t *r, size_t pos, int line, size_t *eol)
{
  size_t avail = r->len - pos;
  size_t scan = avail < NETDOC_MAX_LINE + 1 ? avail : NETDOC_MAX_LINE + 1;
  const char *nl = memchr(r->doc + pos, '\n', scan);
  if (!nl) {
    if (avail > NETDOC_MAX_LINE)
      return fail(r, line, "line longer than %d bytes", NETDOC_MAX_LINE);
    return fail(r, line, "truncated document (last line has no newline)");
  }
  size_t e = (size_t)(nl - r->doc);
  for (size_t i = pos; i < e; i++) {
    unsigned char c = (unsigned char)r->doc[i];
    if (c == 0)
      return fail(r, line, "NUL byte");
    if (c == '\r')
      return fail(r, line, "carriage return");
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return fail(r, line, "control character 0x%02x", c);
  }
  *eol = e;
  return 0;
}

static int
starts_with(const char *s, size_t len, const char *prefix)
{
  size_t n = strlen(prefix);
  return len >= n && memcmp(s, prefix, n) == 0;
}

/* Check an object type: Keyword (" " Keyword)*. */
static int
valid_obj_type(const char *s, size_t len)
{
  if (len == 0 || len > NETDOC_MAX_KEYWORD)
    return 0;
  int at_word_start = 1;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ') {
      if (at_word_start)
        return 0;
      at_word_start = 1;
    } else if (is_kw_char(c)) {
      at_word_start = 0;
    } else {
      return 0;
    }
  }
  return !at_word_start;
}

static int
read_object(netdoc_reader_t *r, netdoc_item_t *it, size_t pos, int *line)
{
  size_t eol;
  if (get_line(r, pos, *line, &eol) < 0)
    return -1;
  const char *l = r->doc + pos;
  size_t ll = eol - pos;
  /* "-----BEGIN " TYPE "-----" */
  if (ll < 16 || !starts_with(l, ll, "-----BEGIN ") ||
      memcmp(l + ll - 5, "-----", 5) != 0)
    return fail(r, *line, "malformed object BEGIN line");
  it->obj_type = l + 11;
  it->obj_type_len = ll - 16;
  if (!valid_obj_type(it->obj_type, it->obj_type_len))
    return fail(r, *line, "malformed object type");
  pos = eol + 1;
  (*line)++;
  it->obj_data = r->doc + pos;
  size_t data_start = pos;
  for (;;) {
    if (pos >= r->len)
      return fail(r, *line, "truncated object (no END line)");
    if (get_line(r, pos, *line, &eol) < 0)
      return -1;
    l = r->doc + pos;
    ll = eol - pos;
    if (starts_with(l, ll, "-----END ")) {
      if (ll != it->obj_type_len + 14 ||
          memcmp(l + 9, it->obj_type, it->obj_type_len) != 0 ||
          memcmp(l + ll - 5, "-----", 5) != 0)
        return fail(r, *line, "object END line does not match BEGIN %.*s",
                    (int)it->obj_type_len, it->obj_type);
      it->obj_data_len = pos - data_start;
      pos = eol + 1;
      (*line)++;
      break;
    }
    for (size_t i = 0; i < ll; i++) {
      char c = l[i];
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
        return fail(r, *line, "bad character in object body");
    }
    if (eol + 1 - data_start > NETDOC_MAX_OBJECT)
      return fail(r, *line, "object larger than %d bytes", NETDOC_MAX_OBJECT);
    pos = eol + 1;
    (*line)++;
  }
  it->has_object = 1;
  it->end = pos;
  return 0;
}

static int
read_item(netdoc_reader_t *r, netdoc_item_t *it, size_t *pos_io,
          int *line_io)
{
  if (r->err[0])
    return -1;
  size_t pos = *pos_io;
  int line = *line_io;
  /* Skip empty lines. */
  while (pos < r->len && r->doc[pos] == '\n') {
    pos++;
    line++;
  }
  if (pos >= r->len) {
    *pos_io = pos;
    *line_io = line;
    return 0;
  }
  size_t eol;
  if (get_line(r, pos, line, &eol) < 0)
    return -1;
  memset(it, 0, offsetof(netdoc_item_t, argv));
  it->has_object = 0;
  it->obj_type = it->obj_data = NULL;
  it->obj_type_len = it->obj_data_len = 0;
  const char *l = r->doc + pos;
  size_t ll = eol - pos;
  size_t k = 0;
  while (k < ll && !is_ws(l[k]))
    k++;
  if (k == 0)
    return fail(r, line, "line starts with whitespace");
  if (l[0] == '-')
    return fail(r, line, "unexpected '%.*s'", (int)(k > 20 ? 20 : k), l);
  if (k > NETDOC_MAX_KEYWORD)
    return fail(r, line, "keyword longer than %d characters",
                NETDOC_MAX_KEYWORD);
  for (size_t i = 0; i < k; i++)
    if (!is_kw_char((unsigned char)l[i]))
      return fail(r, line, "bad character in keyword");
  it->kw = l;
  it->kw_len = k;
  size_t a = k;
  while (a < ll && is_ws(l[a]))
    a++;
  size_t ae = ll;
  while (ae > a && is_ws(l[ae - 1]))
    ae--;
  it->args = l + a;
  it->args_len = ae - a;
  it->argc = 0;
  size_t i = a;
  while (i < ae) {
    size_t s = i;
    while (i < ae && !is_ws(l[i]))
      i++;
    if (it->argc < NETDOC_MAX_ARGV) {
      it->argv[it->argc].s = l + s;
      it->argv[it->argc].len = i - s;
    }
    it->argc++;
    while (i < ae && is_ws(l[i]))
      i++;
  }
  it->start = pos;
  it->line_end = eol + 1;
  it->end = eol + 1;
  pos = eol + 1;
  line++;
  if (pos < r->len && starts_with(r->doc + pos, r->len - pos, "-----")) {
    if (read_object(r, it, pos, &line) < 0)
      return -1;
    pos = it->end;
  }
  *pos_io = pos;
  *line_io = line;
  return 1;
}

int
netdoc_next(netdoc_reader_t *r, netdoc_item_t *it)
{
  return read_item(r, it, &r->pos, &r->line_no);
}

int
netdoc_peek(netdoc_reader_t *r, netdoc_item_t *it)
{
  size_t pos = r->pos;
  int line = r->line_no;
  return read_item(r, it, &pos, &line);
}

int
netdoc_kw_is(const netdoc_item_t *it, const char *kw)
{
  size_t n = strlen(kw);
  return it->kw_len == n && memcmp(it->kw, kw, n) == 0;
}

int
netdoc_arg_is(const netdoc_item_t *it, int i, const char *s)
{
  if (i < 0 || i >= it->argc || i >= NETDOC_MAX_ARGV)
    return 0;
  size_t n = strlen(s);
  return it->argv[i].len == n && memcmp(it->argv[i].s, s, n) == 0;
}

int
netdoc_arg_copy(const netdoc_item_t *it, int i, char *buf, size_t bufsize)
{
  if (i < 0 || i >= it->argc || i >= NETDOC_MAX_ARGV || bufsize == 0)
    return -1;
  if (it->argv[i].len >= bufsize)
    return -1;
  memcpy(buf, it->argv[i].s, it->argv[i].len);
  buf[it->argv[i].len] = 0;
  return 0;
}

int
netdoc_arg_iter(const netdoc_item_t *it, size_t *cursor, netdoc_arg_t *arg)
{
  size_t i = *cursor;
  while (i < it->args_len && is_ws(it->args[i]))
    i++;
  if (i >= it->args_len) {
    *cursor = i;
    return 0;
  }
  size_t s = i;
  while (i < it->args_len && !is_ws(it->args[i]))
    i++;
  arg->s = it->args + s;
  arg->len = i - s;
  *cursor = i;
  return 1;
}

int
netdoc_obj_is(const netdoc_item_t *it, const char *type)
{
  size_t n = strlen(type);
  return it->has_object && it->obj_type_len == n &&
         memcmp(it->obj_type, type, n) == 0;
}

long
netdoc_obj_decode(const netdoc_item_t *it, uint8_t *buf, size_t cap)
{
  if (!it->has_object)
    return -1;
  long n = base64_decode(buf, cap, it->obj_data, it->obj_data_len);
  return n < 0 ? -1 : n;
}

int
netdoc_parse_int(const char *s, size_t len, long long min, long long max,
                 long long *out)
{
  if (len == 0 || len > 20)
    return -1;
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-') {
    neg = 1;
    i = 1;
    if (len == 1)
      return -1;
  }
  unsigned long long v = 0;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    if (v > 1000000000000000000ULL)
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v > 9223372036854775807ULL)
    return -1;
  long long x = neg ? -(long long)v : (long long)v;
  if (x < min || x > max)
    return -1;
  *out = x;
  return 0;
}

int
netdoc_parse_b64_exact(const char *s, size_t len, uint8_t *out,
                       size_t outlen)
{
  uint8_t tmp[128];
  if (outlen > sizeof(tmp) || len > 2 * sizeof(tmp))
    return -1;
  for (size_t i = 0; i < len; i++)
    if (is_ws(s[i]) || s[i] == '\n')
      return -1;
  long n = base64_decode(tmp, sizeof(tmp), s, len);
  if (n != (long)outlen)
    return -1;
  memcpy(out, tmp, outlen);
  return 0;
}

int
netdoc_parse_hex_exact(const char *s, size_t len, uint8_t *out,
                       size_t outlen)
{
  if (len != 2 * outlen)
    return -1;
  return base16_decode(out, outlen, s, len) == (long)outlen ? 0 : -1;
}
