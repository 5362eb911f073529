/* SPDX-License-Identifier: BSD-3-Clause */
/* conf.c -- the torrc lexer and command-line splitter (see conf.h).
 *
 * The lexer walks the text once with an index that is always checked
 * against the length, so it never reads past the input even if the text
 * is not NUL-terminated. Values are built in a growable buffer because
 * quoted escapes and continuations make them differ from the raw bytes.
 * Lines are appended to a list through a tail pointer, keeping their order
 * (order matters: the last of repeated single-valued options wins, and
 * repeated Log lines are applied in order).
 * %include expansion (conf_read_file) recurses with an explicit depth and
 * a running byte total shared by all the files of one read, the two
 * bounds that make a self-including file an error rather than a loop.
 */
#include "lib/conf/conf.h"
#include "lib/encoding/base16.h"
#include "lib/malloc/alloc.h"
#include "lib/string/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMDLINE_SOURCE "the command line"

conf_line_t *
conf_line_new(const char *key, const char *value, const char *source,
              int lineno)
{
  conf_line_t *l = pc_zalloc(sizeof(*l));
  l->key = pc_strdup(key);
  l->value = pc_strdup(value ? value : "");
  l->source = pc_strdup(source ? source : "");
  l->lineno = lineno;
  return l;
}

void
conf_lines_free_(conf_line_t *lines)
{
  while (lines) {
    conf_line_t *next = lines->next;
    free(lines->key);
    free(lines->value);
    free(lines->source);
    free(lines);
    lines = next;
  }
}

conf_line_t *
conf_lines_dup(const conf_line_t *lines)
{
  conf_line_t *head = NULL, **tail = &head;
  for (; lines; lines = lines->next) {
    conf_line_t *l = conf_line_new(lines->key, lines->value, lines->source,
                                   lines->lineno);
    l->from_cmdline = lines->from_cmdline;
    l->cmd = lines->cmd;
    *tail = l;
    tail = &l->next;
  }
  return head;
}

size_t
conf_lines_count(const conf_line_t *lines)
{
  size_t n = 0;
  for (; lines; lines = lines->next)
    n++;
  return n;
}

int
conf_key_eq(const char *a, const char *b)
{
  return strcasecmp(a, b) == 0;
}

char *
conf_line_where(const conf_line_t *line)
{
  if (line->lineno == 0) /* not from a file or argv: "the controller" */
    return pc_strdup(line->source);
  if (line->from_cmdline)
    return pc_asprintf("the command line (argument %d)", line->lineno);
  return pc_asprintf("line %d of %s", line->lineno, line->source);
}

/* ---- the lexer ---- */

typedef struct {
  const char *text;
  size_t len;
  size_t pos;
  int lineno;       /* line of text[pos] */
  const char *source;
  char *err;
} lexer_t;

static int
is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int
lex_peek(const lexer_t *lx, size_t ahead)
{
  if (lx->pos + ahead >= lx->len)
    return -1;
  return (unsigned char)lx->text[lx->pos + ahead];
}

static int lex_fail(lexer_t *lx, int lineno, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Record an error message naming the line; returns -1. */
static int
lex_fail(lexer_t *lx, int lineno, const char *fmt, ...)
{
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  lx->err = pc_asprintf("line %d of %s: %s", lineno, lx->source, what);
  return -1;
}

/* Consume a '\n' at pos (which must be there): next physical line. */
static void
lex_newline(lexer_t *lx)
{
  lx->pos++;
  lx->lineno++;
}

/* Consume to the end of the physical line, not including the '\n'. */
static void
lex_skip_to_eol(lexer_t *lx)
{
  while (lx->pos < lx->len && lx->text[lx->pos] != '\n')
    lx->pos++;
}

/* Parse a quoted value starting at the opening quote. */
static int
lex_quoted(lexer_t *lx, int lineno, strbuf_t *val)
{
  lx->pos++; /* opening quote */
  for (;;) {
    int c = lex_peek(lx, 0);
    if (c < 0 || c == '\n')
      return lex_fail(lx, lineno, "unterminated quoted string");
    if (val->len >= CONF_MAX_LINE_LEN)
      return lex_fail(lx, lineno, "quoted value longer than %d bytes",
                      CONF_MAX_LINE_LEN);
    if (c == '"') {
      lx->pos++;
      break;
    }
    if (c != '\\') {
      strbuf_addc(val, (char)c);
      lx->pos++;
      continue;
    }
    int e = lex_peek(lx, 1);
    switch (e) {
    case 'n': strbuf_addc(val, '\n'); lx->pos += 2; break;
    case 't': strbuf_addc(val, '\t'); lx->pos += 2; break;
    case 'r': strbuf_addc(val, '\r'); lx->pos += 2; break;
    case '\\': case '"': case '\'':
      strbuf_addc(val, (char)e);
      lx->pos += 2;
      break;
    case 'x': {
      int h1 = base16_digit_value(lex_peek(lx, 2)),
          h2 = base16_digit_value(lex_peek(lx, 3));
      if (h1 < 0 || h2 < 0)
        return lex_fail(lx, lineno,
                        "\\x in a quoted string needs two hex digits");
      if (h1 == 0 && h2 == 0)
        return lex_fail(lx, lineno, "NUL byte (\\x00) in quoted string");
      strbuf_addc(val, (char)(h1 * 16 + h2));
      lx->pos += 4;
      break;
    }
    case '0': case '1': case '2': case '3':
    case '4': case '5': case '6': case '7': {
      int v = 0;
      for (int i = 1; i <= 3; i++) {
        int d = lex_peek(lx, (size_t)i);
        if (d < '0' || d > '7')
          return lex_fail(lx, lineno, "octal escape in a quoted string "
                          "needs three digits (\\OOO)");
        v = v * 8 + (d - '0');
      }
      if (v > 255)
        return lex_fail(lx, lineno, "octal escape out of range in quoted "
                        "string");
      if (v == 0)
        return lex_fail(lx, lineno, "NUL byte (\\000) in quoted string");
      strbuf_addc(val, (char)v);
      lx->pos += 4;
      break;
    }
    default:
      if (e < 0 || e == '\n')
        return lex_fail(lx, lineno, "unterminated quoted string");
      return lex_fail(lx, lineno, "unknown escape '\\%c' in quoted string",
                      e);
    }
  }
  /* Only blanks and a comment may follow. */
  while (lx->pos < lx->len && is_blank(lx->text[lx->pos]))
    lx->pos++;
  int c = lex_peek(lx, 0);
  if (c == '#')
    lex_skip_to_eol(lx);
  else if (c >= 0 && c != '\n')
    return lex_fail(lx, lineno, "unexpected text after the closing quote");
  return 0;
}

/* Parse an unquoted value (with continuations) up to its end of line. */
static int
lex_unquoted(lexer_t *lx, int lineno, strbuf_t *val)
{
  for (;;) {
    int c = lex_peek(lx, 0);
    if (c < 0 || c == '\n')
      break;
    if (c == '#') {
      lex_skip_to_eol(lx);
      break;
    }
    if (c == '\\') {
      /* Backslash, optional '\r', newline: continue on the next line. */
      size_t k = 1;
      if (lex_peek(lx, 1) == '\r')
        k = 2;
      if (lex_peek(lx, k) == '\n') {
        lx->pos += k;
        lex_newline(lx);
        /* Skip comment lines inside the continued value. */
        for (;;) {
          size_t p = lx->pos;
          while (p < lx->len && is_blank(lx->text[p]))
            p++;
          if (p < lx->len && lx->text[p] == '#') {
            lx->pos = p;
            lex_skip_to_eol(lx);
            if (lx->pos < lx->len)
              lex_newline(lx);
            continue;
          }
          break;
        }
        continue;
      }
    }
    if (val->len >= CONF_MAX_LINE_LEN)
      return lex_fail(lx, lineno, "continued line longer than %d bytes",
                      CONF_MAX_LINE_LEN);
    strbuf_addc(val, (char)c);
    lx->pos++;
  }
  while (val->len > 0 && is_blank(val->s[val->len - 1]))
    val->s[--val->len] = '\0';
  return 0;
}

int
conf_lex_text(const char *text, size_t len, const char *source,
              conf_line_t **lines_out, char **err_out)
{
  lexer_t lx = {.text = text, .len = len, .lineno = 1, .source = source};
  conf_line_t *head = NULL, **tail = &head;
  *lines_out = NULL;
  *err_out = NULL;

  if (len > CONF_MAX_FILE_SIZE) {
    *err_out = pc_asprintf("%s is larger than %d bytes", source,
                           CONF_MAX_FILE_SIZE);
    return -1;
  }
  /* Check the bounds that do not depend on the syntax first: no NUL
   * bytes, no overlong physical lines. */
  {
    int ln = 1;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
      if (text[i] == '\0') {
        *err_out = pc_asprintf("line %d of %s: NUL byte in configuration",
                               ln, source);
        return -1;
      }
      if (text[i] == '\n') {
        ln++;
        start = i + 1;
      } else if (i - start >= CONF_MAX_LINE_LEN) {
        *err_out = pc_asprintf("line %d of %s: line longer than %d bytes",
                               ln, source, CONF_MAX_LINE_LEN);
        return -1;
      }
    }
  }

  for (;;) {
    /* Skip blank lines and comment lines. */
    while (lx.pos < lx.len) {
      char c = lx.text[lx.pos];
      if (c == '\n')
        lex_newline(&lx);
      else if (is_blank(c))
        lx.pos++;
      else if (c == '#')
        lex_skip_to_eol(&lx);
      else
        break;
    }
    if (lx.pos >= lx.len)
      break;

    int lineno = lx.lineno;
    size_t kstart = lx.pos;
    while (lx.pos < lx.len && !is_blank(lx.text[lx.pos]) &&
           lx.text[lx.pos] != '\n' && lx.text[lx.pos] != '#')
      lx.pos++;
    char *key = pc_strndup(lx.text + kstart, lx.pos - kstart);
    while (lx.pos < lx.len &&
           (lx.text[lx.pos] == ' ' || lx.text[lx.pos] == '\t'))
      lx.pos++;

    strbuf_t val = {0};
    int r;
    if (lex_peek(&lx, 0) == '"')
      r = lex_quoted(&lx, lineno, &val);
    else
      r = lex_unquoted(&lx, lineno, &val);
    if (r < 0) {
      free(key);
      free(val.s);
      conf_lines_free(head);
      *err_out = lx.err;
      return -1;
    }
    char *value = strbuf_take(&val);
    conf_line_t *l = pc_zalloc(sizeof(*l));
    l->key = key;
    l->value = value;
    l->source = pc_strdup(source);
    l->lineno = lineno;
    *tail = l;
    tail = &l->next;
  }
  *lines_out = head;
  return 0;
}

int
conf_lex_file(const char *path, conf_line_t **lines_out, char **err_out)
{
  *lines_out = NULL;
  *err_out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    *err_out = pc_asprintf("Could not open configuration file \"%s\": %s",
                           path, strerror(e));
    return e == ENOENT ? CONF_ERR_NOENT : -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    *err_out = pc_asprintf("Configuration file \"%s\" is not a regular "
                           "file", path);
    close(fd);
    return -1;
  }
  if (st.st_size > CONF_MAX_FILE_SIZE) {
    *err_out = pc_asprintf("Configuration file \"%s\" is larger than %d "
                           "bytes", path, CONF_MAX_FILE_SIZE);
    close(fd);
    return -1;
  }
  /* Read at most one byte more than the bound, in case the file grew. */
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *buf = pc_malloc(cap + 1);
  for (;;) {
    if (len == cap) {
      if (cap > CONF_MAX_FILE_SIZE)
        break;
      cap = cap * 2 > CONF_MAX_FILE_SIZE + 1 ? CONF_MAX_FILE_SIZE + 1
                                             : cap * 2;
      buf = pc_realloc(buf, cap + 1);
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      *err_out = pc_asprintf("Error reading configuration file \"%s\": %s",
                             path, strerror(errno));
      free(buf);
      close(fd);
      return -1;
    }
    if (n == 0)
      break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  int r = conf_lex_text(buf, len, path, lines_out, err_out);
  free(buf);
  return r;
}

/* ---- %include ---- */

typedef struct {
  const char *cwd;
  size_t total; /* bytes of keys and values read so far */
} include_state_t;

static int read_with_includes(const char *path, int depth,
                              include_state_t *st, conf_line_t ***tail,
                              char **err_out);

static int
cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of directory dir, sorted, dot files skipped. Errors
 * are prefixed with where (the %include line). */
static int
list_dir(const char *dir, const char *where, char ***names_out,
         size_t *n_out, char **err_out)
{
  DIR *d = opendir(dir);
  char **names = NULL;
  size_t n = 0;
  if (!d) {
    *err_out = pc_asprintf("%s: cannot read directory \"%s\": %s", where,
                           dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char *full = pc_asprintf("%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(full, &st) < 0 || !S_ISREG(st.st_mode) || n >= 4096) {
      free(full); /* subdirectories (and dangling links) are ignored */
      continue;
    }
    names = pc_realloc(names, sizeof(char *) * (n + 1));
    names[n++] = full;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof(char *), cmp_names);
  *names_out = names;
  *n_out = n;
  return 0;
}

/* Include one path (after wildcard expansion): a file or a directory.
 * Errors about path itself are prefixed with where; errors inside the
 * files name their own line. */
static int
include_one(const char *path, const char *where, int depth,
            include_state_t *st, conf_line_t ***tail, char **err_out)
{
  struct stat sb;
  if (stat(path, &sb) < 0) {
    *err_out = pc_asprintf("%s: cannot include \"%s\": %s", where, path,
                           strerror(errno));
    return -1;
  }
  if (!S_ISDIR(sb.st_mode))
    return read_with_includes(path, depth, st, tail, err_out);
  char **names = NULL;
  size_t n = 0;
  int r = list_dir(path, where, &names, &n, err_out);
  for (size_t i = 0; i < n; i++) {
    if (r == 0)
      r = read_with_includes(names[i], depth, st, tail, err_out);
    free(names[i]);
  }
  free(names);
  return r;
}

/* Expand the value of a %include line found at depth. */
static int
expand_include(const conf_line_t *l, int depth, include_state_t *st,
               conf_line_t ***tail, char **err_out)
{
  char *where = conf_line_where(l);
  int r = -1;
  if (depth >= CONF_MAX_INCLUDE_DEPTH) {
    *err_out = pc_asprintf("%s: %%include nested more than %d deep (does "
                           "a file include itself?)", where,
                           CONF_MAX_INCLUDE_DEPTH);
  } else if (!*l->value) {
    *err_out = pc_asprintf("%s: %%include needs a file or directory name",
                           where);
  } else {
    char *pattern;
    if (l->value[0] == '/' || !st->cwd)
      pattern = pc_strdup(l->value);
    else
      pattern = pc_asprintf("%s/%s", st->cwd, l->value);
    if (strpbrk(l->value, "*?")) {
      glob_t g;
      memset(&g, 0, sizeof(g));
      int gr = glob(pattern, 0, NULL, &g);
      if (gr == 0) {
        r = 0;
        for (size_t i = 0; i < g.gl_pathc && r == 0; i++)
          r = include_one(g.gl_pathv[i], where, depth + 1, st, tail,
                          err_out);
      } else if (gr == GLOB_NOMATCH) {
        r = 0; /* as tor: a pattern that matches nothing adds nothing */
      } else {
        *err_out = pc_asprintf("%s: cannot expand \"%s\"", where,
                               pattern);
      }
      globfree(&g);
    } else {
      r = include_one(pattern, where, depth + 1, st, tail, err_out);
    }
    free(pattern);
  }
  free(where);
  return r;
}

static int
read_with_includes(const char *path, int depth, include_state_t *st,
                   conf_line_t ***tail, char **err_out)
{
  conf_line_t *lines = NULL;
  int r = conf_lex_file(path, &lines, err_out);
  if (r < 0)
    return depth == 0 ? r : -1; /* only the top file may be "missing" */
  conf_line_t *l = lines;
  while (l) {
    conf_line_t *next = l->next;
    l->next = NULL;
    st->total += strlen(l->key) + strlen(l->value) + 2;
    if (st->total > CONF_MAX_TOTAL_SIZE) {
      char *w = conf_line_where(l);
      *err_out = pc_asprintf("%s: the configuration files together are "
                             "larger than %d bytes", w, CONF_MAX_TOTAL_SIZE);
      free(w);
      conf_lines_free(l);
      conf_lines_free(next);
      return -1;
    }
    if (!strcasecmp(l->key, "%include")) {
      r = expand_include(l, depth, st, tail, err_out);
      conf_lines_free(l);
      if (r < 0) {
        conf_lines_free(next);
        return -1;
      }
    } else {
      **tail = l;
      *tail = &l->next;
    }
    l = next;
  }
  return 0;
}

int
conf_read_file(const char *path, const char *cwd, conf_line_t **lines_out,
               char **err_out)
{
  include_state_t st = {.cwd = cwd, .total = 0};
  conf_line_t *head = NULL, **tail = &head;
  *lines_out = NULL;
  *err_out = NULL;
  int r = read_with_includes(path, 0, &st, &tail, err_out);
  if (r < 0) {
    conf_lines_free(head);
    return r;
  }
  *lines_out = head;
  return 0;
}

static const conf_flag_t *
find_flag(const conf_flag_t *flags, const char *arg)
{
  for (; flags && flags->name; flags++)
    if (!strcmp(flags->name, arg))
      return flags;
  return NULL;
}

int
conf_lex_cmdline(int argc, char *const *argv, const conf_flag_t *flags,
                 conf_line_t **flags_out, conf_line_t **options_out,
                 char **err_out)
{
  conf_line_t *fh = NULL, **ft = &fh, *oh = NULL, **ot = &oh;
  *flags_out = *options_out = NULL;
  *err_out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const conf_flag_t *f = find_flag(flags, arg);
    if (f) {
      const char *v = "";
      if (f->takes_value == CONF_FLAG_OPT_VALUE) {
        if (i + 1 < argc && argv[i + 1][0] != '-')
          v = argv[++i];
      } else if (f->takes_value) {
        if (i + 1 >= argc) {
          *err_out = pc_asprintf("Command-line option '%s' needs a value",
                                 arg);
          goto err;
        }
        v = argv[++i];
      }
      conf_line_t *l = conf_line_new(f->name, v, CMDLINE_SOURCE, i);
      l->from_cmdline = 1;
      *ft = l;
      ft = &l->next;
      continue;
    }
    const char *key = arg;
    if (key[0] == '-' && key[1] == '-')
      key += 2;
    conf_line_cmd_t cmd = CONF_LINE_NORMAL;
    if (key[0] == '+') {
      cmd = CONF_LINE_APPEND;
      key++;
    } else if (key[0] == '/') {
      cmd = CONF_LINE_CLEAR;
      key++;
    }
    if (!*key || key[0] == '-') {
      *err_out = pc_asprintf("Unrecognized command-line argument '%s'",
                             arg);
      goto err;
    }
    const char *v = "";
    int at = i;
    if (cmd != CONF_LINE_CLEAR) {
      if (i + 1 >= argc) {
        *err_out = pc_asprintf("Command-line option '%s' needs a value",
                               arg);
        goto err;
      }
      v = argv[++i];
    }
    conf_line_t *l = conf_line_new(key, v, CMDLINE_SOURCE, at);
    l->from_cmdline = 1;
    l->cmd = cmd;
    *ot = l;
    ot = &l->next;
  }
  *flags_out = fh;
  *options_out = oh;
  return 0;
err:
  conf_lines_free(fh);
  conf_lines_free(oh);
  return -1;
}
