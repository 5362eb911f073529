/* SPDX-License-Identifier: BSD-3-Clause */
/* geoip.c -- tor's GeoIP files, loaded and searched (see geoip.h).
 *
 * Each family has a sorted array of ranges; a lookup bisects for the last
 * range whose low end is at or below the address and checks its high
 * end. IPv6 addresses compare as 16-byte big-endian strings (memcmp).
 * Country codes are interned in a table of at most 1024 entries (index 0
 * is "??"; the files hold about 260 codes), so a range costs 10 bytes
 * (IPv4) or 34 bytes (IPv6).
 */
#include "feature/geoip/geoip.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"

/* tor's files are about 10 MB (IPv4) and 16 MB (IPv6). */
#define GEOIP_MAX_FILE (64u << 20)
#define GEOIP_MAX_COUNTRIES 1024

typedef struct {
  uint8_t *lo, *hi; /* n entries of width bytes each, big-endian */
  uint16_t *cc;     /* country index per entry */
  size_t n, cap;
  int width;        /* 4 or 16 */
} range_table_t;

struct geoip_db_t {
  range_table_t v4, v6;
  char countries[GEOIP_MAX_COUNTRIES + 1][3]; /* lower case, "??" first */
  int n_countries;
};

geoip_db_t *
geoip_db_new(void)
{
  geoip_db_t *db = pc_zalloc(sizeof(*db));
  db->v4.width = 4;
  db->v6.width = 16;
  memcpy(db->countries[0], "??", 3);
  db->n_countries = 1;
  return db;
}

static void
table_clear(range_table_t *t)
{
  free(t->lo);
  free(t->hi);
  free(t->cc);
  t->lo = t->hi = NULL;
  t->cc = NULL;
  t->n = t->cap = 0;
}

void
geoip_db_free_(geoip_db_t *db)
{
  if (!db)
    return;
  table_clear(&db->v4);
  table_clear(&db->v6);
  free(db);
}

static int
table_push(range_table_t *t, const uint8_t *lo, const uint8_t *hi,
           uint16_t cc)
{
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    t->lo = pc_realloc(t->lo, cap * (size_t)t->width);
    t->hi = pc_realloc(t->hi, cap * (size_t)t->width);
    t->cc = pc_realloc(t->cc, cap * sizeof(*t->cc));
    t->cap = cap;
  }
  memcpy(t->lo + t->n * (size_t)t->width, lo, (size_t)t->width);
  memcpy(t->hi + t->n * (size_t)t->width, hi, (size_t)t->width);
  t->cc[t->n] = cc;
  t->n++;
  return 0;
}

/* The index of country code cc (two letters or "??"), added if new; -1
 * when the table is full or cc is not a code. */
static int
country_index(geoip_db_t *db, const char *cc, size_t len)
{
  if (len != 2)
    return -1;
  char lc[3] = {(char)tolower((unsigned char)cc[0]),
                (char)tolower((unsigned char)cc[1]), 0};
  if (strcmp(lc, "??") &&
      (!isalpha((unsigned char)lc[0]) || !isalpha((unsigned char)lc[1])))
    return -1;
  for (int i = 0; i < db->n_countries; i++)
    if (!strcmp(db->countries[i], lc))
      return i;
  if (db->n_countries >= GEOIP_MAX_COUNTRIES)
    return -1;
  memcpy(db->countries[db->n_countries], lc, 3);
  return db->n_countries++;
}

/* One address field of a line: a decimal IPv4 integer or IPv6 text. */
static int
parse_field(int family, const char *s, size_t len, uint8_t *out)
{
  char buf[64];
  if (len == 0 || len >= sizeof(buf))
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  if (family == AF_INET) {
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
      if (buf[i] < '0' || buf[i] > '9')
        return -1;
      v = v * 10 + (uint64_t)(buf[i] - '0');
      if (v > 0xffffffffu)
        return -1;
    }
    uint32_t be = htonl((uint32_t)v);
    memcpy(out, &be, 4);
    return 0;
  }
  return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -1;
}

long
geoip_db_load_text(geoip_db_t *db, int family, const char *text, size_t len,
                   char **err)
{
  *err = NULL;
  if (family != AF_INET && family != AF_INET6) {
    *err = pc_strdup("unknown address family");
    return -1;
  }
  range_table_t t = {0};
  t.width = family == AF_INET ? 4 : 16;
  int saved_countries = db->n_countries;
  const char *p = text, *end = text + len;
  long lineno = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    lineno++;
    const char *l = p;
    p = nl ? nl + 1 : end;
    const char *e = eol;
    while (e > l && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
      e--;
    while (l < e && (*l == ' ' || *l == '\t'))
      l++;
    if (l == e || *l == '#')
      continue;
    const char *c1 = memchr(l, ',', (size_t)(e - l));
    const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(e - c1 - 1)) : NULL;
    uint8_t lo[16], hi[16];
    int ci = -1;
    if (!c2 || parse_field(family, l, (size_t)(c1 - l), lo) < 0 ||
        parse_field(family, c1 + 1, (size_t)(c2 - c1 - 1), hi) < 0 ||
        (ci = country_index(db, c2 + 1, (size_t)(e - c2 - 1))) < 0) {
      *err = pc_asprintf("line %ld: expected LOW,HIGH,CC (%s)", lineno,
                         ci < 0 && c2 ? "a two-letter country code or ??"
                                      : "an address range");
      goto fail;
    }
    if (memcmp(lo, hi, (size_t)t.width) > 0) {
      *err = pc_asprintf("line %ld: the range ends before it starts",
                         lineno);
      goto fail;
    }
    if (t.n && memcmp(lo, t.hi + (t.n - 1) * (size_t)t.width,
                      (size_t)t.width) <= 0) {
      *err = pc_asprintf("line %ld: ranges are not sorted or overlap",
                         lineno);
      goto fail;
    }
    table_push(&t, lo, hi, (uint16_t)ci);
  }
  range_table_t *dst = family == AF_INET ? &db->v4 : &db->v6;
  table_clear(dst);
  *dst = t;
  return (long)t.n;
fail:
  table_clear(&t);
  db->n_countries = saved_countries;
  return -1;
}

long
geoip_db_load(geoip_db_t *db, int family, const char *path, char **err)
{
  char *text = NULL;
  int r = fs_read_text(path, GEOIP_MAX_FILE, &text);
  if (r < 0) {
    *err = pc_asprintf("cannot read %s: %s", path,
                       r == -EFBIG ? "larger than 64 MB" : strerror(-r));
    return -1;
  }
  char *perr = NULL;
  long n = geoip_db_load_text(db, family, text, strlen(text), &perr);
  free(text);
  if (n < 0) {
    *err = pc_asprintf("%s: %s", path, perr);
    free(perr);
  }
  return n;
}

int
geoip_db_has(const geoip_db_t *db, int family)
{
  if (!db)
    return 0;
  return (family == AF_INET ? db->v4.n : family == AF_INET6 ? db->v6.n : 0) >
         0;
}

const char *
geoip_db_country(const geoip_db_t *db, const pc_addr_t *a)
{
  if (!db || !a || (a->family != AF_INET && a->family != AF_INET6))
    return "??";
  const range_table_t *t = a->family == AF_INET ? &db->v4 : &db->v6;
  size_t w = (size_t)t->width;
  /* The last range with lo <= addr. */
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (memcmp(t->lo + mid * w, a->addr, w) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || memcmp(a->addr, t->hi + (lo - 1) * w, w) > 0)
    return "??";
  return db->countries[t->cc[lo - 1]];
}
