/* SPDX-License-Identifier: BSD-3-Clause */
/* statefile.c -- tor-format state file (see statefile.h).
 *
 * Design: lines are kept in one array of owned (key, value) strings in
 * file order; lookups scan it (a state file has tens of lines, a client's
 * at most a few hundred Guard lines). Replacing a key's lines builds a
 * new array in one pass, so the first old line's position is kept and no
 * line moves otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fs/files.h"
#include "lib/fs/statefile.h"
#include "lib/malloc/alloc.h"
#include "lib/string/strbuf.h"
#include "lib/time/timefmt.h"

typedef struct {
  char *key;
  char *value;
} sf_line_t;

struct statefile_t {
  char *path;
  sf_line_t *lines;
  size_t n, cap;
  int dirty;
  int urgent;          /* statefile_want_save_now() since the last save */
  time_t dirty_since;  /* first statefile_save_if_due() that saw it dirty */
};

statefile_t *
statefile_new(const char *path)
{
  statefile_t *st = pc_zalloc(sizeof(*st));
  st->path = pc_strdup(path);
  return st;
}

static void
clear_lines(statefile_t *st)
{
  for (size_t i = 0; i < st->n; i++) {
    free(st->lines[i].key);
    free(st->lines[i].value);
  }
  free(st->lines);
  st->lines = NULL;
  st->n = st->cap = 0;
}

static void
push_line(statefile_t *st, char *key, char *value)
{
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 16;
    st->lines = pc_realloc(st->lines, st->cap * sizeof(*st->lines));
  }
  st->lines[st->n].key = key;
  st->lines[st->n].value = value;
  st->n++;
}

static int
is_key_char(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '_';
}

static int
is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r';
}

int
statefile_parse(statefile_t *st, const char *text, size_t len, char **err)
{
  *err = NULL;
  clear_lines(st);
  if (len > STATEFILE_MAX_SIZE) {
    *err = pc_asprintf("larger than %d bytes", STATEFILE_MAX_SIZE);
    return -1;
  }
  if (memchr(text, '\0', len)) {
    *err = pc_strdup("contains a NUL byte (not a text file)");
    return -1;
  }
  size_t pos = 0, lineno = 0;
  while (pos < len) {
    const char *line = text + pos;
    const char *nl = memchr(line, '\n', len - pos);
    size_t ll = nl ? (size_t)(nl - line) : len - pos;
    pos += ll + (nl ? 1 : 0);
    lineno++;
    if (ll > STATEFILE_MAX_LINE) {
      *err = pc_asprintf("line %zu is longer than %d bytes", lineno,
                         STATEFILE_MAX_LINE);
      goto bad;
    }
    size_t i = 0;
    while (i < ll && is_blank(line[i]))
      i++;
    if (i == ll || line[i] == '#')
      continue;
    size_t k0 = i;
    while (i < ll && is_key_char(line[i]))
      i++;
    if (i == k0 || (i < ll && !is_blank(line[i]))) {
      *err = pc_asprintf("line %zu does not start with a key "
                         "(letters, digits, '_'): \"%.*s\"",
                         lineno, (int)(ll > 40 ? 40 : ll), line);
      goto bad;
    }
    size_t k1 = i;
    while (i < ll && is_blank(line[i]))
      i++;
    size_t v1 = ll;
    while (v1 > i && is_blank(line[v1 - 1]))
      v1--;
    if (st->n >= STATEFILE_MAX_LINES) {
      *err = pc_asprintf("more than %d lines", STATEFILE_MAX_LINES);
      goto bad;
    }
    push_line(st, pc_strndup(line + k0, k1 - k0),
              pc_strndup(line + i, v1 - i));
  }
  st->dirty = 0;
  return 0;
bad:
  clear_lines(st);
  return -1;
}

statefile_t *
statefile_load(const char *path, char **warn)
{
  *warn = NULL;
  statefile_t *st = statefile_new(path);
  uint8_t *text = NULL;
  size_t len = 0;
  int r = fs_read_file(path, STATEFILE_MAX_SIZE, &text, &len);
  if (r == -ENOENT)
    return st;
  char *why = NULL;
  if (r < 0) {
    why = pc_asprintf("cannot be read (%s)", strerror(-r));
  } else if (statefile_parse(st, (const char *)text, len, &why) == 0) {
    free(text);
    return st;
  }
  free(text);
  /* Keep the bad file for the operator; start afresh. */
  char *aside = pc_asprintf("%s.bad", path);
  if (rename(path, aside) == 0)
    *warn = pc_asprintf("State file %s %s; moved it to %s and starting "
                        "with a fresh state",
                        path, why, aside);
  else
    *warn = pc_asprintf("State file %s %s; could not move it aside (%s), "
                        "starting with a fresh state that will replace it",
                        path, why, strerror(errno));
  free(aside);
  free(why);
  st->dirty = 1;
  return st;
}

const char *
statefile_next(const statefile_t *st, const char *key, size_t *pos)
{
  for (size_t i = *pos; i < st->n; i++)
    if (!strcmp(st->lines[i].key, key)) {
      *pos = i + 1;
      return st->lines[i].value;
    }
  *pos = st->n;
  return NULL;
}

const char *
statefile_get(const statefile_t *st, const char *key)
{
  size_t pos = 0;
  return statefile_next(st, key, &pos);
}

size_t
statefile_count(const statefile_t *st, const char *key)
{
  size_t n = 0;
  for (size_t i = 0; i < st->n; i++)
    n += !strcmp(st->lines[i].key, key);
  return n;
}

int
statefile_set_all(statefile_t *st, const char *key,
                  const char *const *values, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strchr(values[i], '\n'))
      return -1;
  /* Unchanged? (saves a rewrite for every periodic update) */
  size_t pos = 0, k = 0;
  const char *v;
  int same = 1;
  while ((v = statefile_next(st, key, &pos)) != NULL && same)
    same = k < n && !strcmp(v, values[k++]);
  if (same && k == n && statefile_count(st, key) == n)
    return 0;
  sf_line_t *old = st->lines;
  size_t n_old = st->n;
  st->lines = NULL;
  st->n = st->cap = 0;
  int placed = 0;
  for (size_t i = 0; i < n_old; i++) {
    if (strcmp(old[i].key, key)) {
      push_line(st, old[i].key, old[i].value);
      continue;
    }
    if (!placed) {
      for (size_t j = 0; j < n; j++)
        push_line(st, pc_strdup(key), pc_strdup(values[j]));
      placed = 1;
    }
    free(old[i].key);
    free(old[i].value);
  }
  if (!placed)
    for (size_t j = 0; j < n; j++)
      push_line(st, pc_strdup(key), pc_strdup(values[j]));
  free(old);
  st->dirty = 1;
  return 0;
}

int
statefile_set(statefile_t *st, const char *key, const char *value)
{
  return statefile_set_all(st, key, value ? &value : NULL, value ? 1 : 0);
}

int
statefile_is_dirty(const statefile_t *st)
{
  return st->dirty;
}

char *
statefile_format(statefile_t *st, time_t now)
{
  char t[TIME_ISO_LEN + 1];
  time_format_iso(t, now);
  strbuf_t b = {0};
  strbuf_addf(&b,
              "# Tor state file last generated on %s UTC\n"
              "# (written by pctor; lines it does not use are kept)\n"
              "# Other times below are in UTC\n"
              "# You *do not* need to edit this file.\n\n",
              t);
  for (size_t i = 0; i < st->n; i++)
    strbuf_addf(&b, "%s %s\n", st->lines[i].key, st->lines[i].value);
  return b.s;
}

int
statefile_save(statefile_t *st, time_t now, char **err)
{
  *err = NULL;
  char t[TIME_ISO_LEN + 1];
  time_format_iso(t, now);
  statefile_set(st, "LastWritten", t);
  char *text = statefile_format(st, now);
  int r = fs_write_file_atomic(st->path, text, strlen(text), 0600);
  free(text);
  if (r < 0) {
    *err = pc_asprintf("Cannot write state file %s: %s", st->path,
                       strerror(-r));
    return r;
  }
  st->dirty = 0;
  st->urgent = 0;
  st->dirty_since = 0;
  return 0;
}

void
statefile_want_save_now(statefile_t *st)
{
  st->urgent = 1;
}

int
statefile_save_if_due(statefile_t *st, time_t now, time_t interval,
                      char **err)
{
  *err = NULL;
  if (!st->dirty)
    return 0;
  /* The clock of the change is the first check that sees it: modules
   * change lines without a time, and the checks come often enough. */
  if (!st->dirty_since || st->dirty_since > now)
    st->dirty_since = now;
  if (!st->urgent && now - st->dirty_since < interval)
    return 0;
  int r = statefile_save(st, now, err);
  return r < 0 ? r : 1;
}

const char *
statefile_path(const statefile_t *st)
{
  return st->path;
}

void
statefile_free_(statefile_t *st)
{
  if (!st)
    return;
  clear_lines(st);
  free(st->path);
  free(st);
}
