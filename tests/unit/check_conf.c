/* SPDX-License-Identifier: BSD-3-Clause */
/* check_conf.c -- unit tests for lib/conf: the torrc lexer (comments,
 * quoting and escapes, continuations, bounds, line numbers in errors), the
 * command-line splitter, and the typed value parsers with their errors. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/conf/conf.h"
#include "lib/conf/confdecl.h"
#include "lib/conf/confval.h"

Suite *suite_conf(void);

static conf_line_t *
lex_ok(const char *text)
{
  conf_line_t *lines = NULL;
  char *err = NULL;
  int r = conf_lex_text(text, strlen(text), "test.torrc", &lines, &err);
  ck_assert_msg(r == 0, "lex failed: %s", err ? err : "(null)");
  ck_assert_ptr_null(err);
  return lines;
}

/* Lexing must fail; returns the message (caller frees). */
static char *
lex_bad(const char *text, size_t len)
{
  conf_line_t *lines = NULL;
  char *err = NULL;
  ck_assert_int_eq(conf_lex_text(text, len, "test.torrc", &lines, &err), -1);
  ck_assert_ptr_null(lines);
  ck_assert_ptr_nonnull(err);
  return err;
}

static void
assert_line(const conf_line_t *l, const char *key, const char *value,
            int lineno)
{
  ck_assert_ptr_nonnull(l);
  ck_assert_str_eq(l->key, key);
  ck_assert_str_eq(l->value, value);
  ck_assert_int_eq(l->lineno, lineno);
  ck_assert_str_eq(l->source, "test.torrc");
  ck_assert_int_eq(l->from_cmdline, 0);
}

static void
assert_err_has(const char *err, const char *needle)
{
  ck_assert_msg(strstr(err, needle) != NULL, "'%s' not in error '%s'",
                needle, err);
}

START_TEST(test_lex_basic)
{
  conf_line_t *lines = lex_ok(
      "# a comment\n"
      "\n"
      "ORPort 9001\n"
      "   Nickname\tpctorTest   \n"
      "Log notice stderr # trailing comment\n"
      "Log info file /tmp/x.log\n"
      "ContactInfo\n"
      "  # indented comment\n"
      "Address 10.0.0.1#no space before comment\r\n"
      "Last value-without-newline");
  const conf_line_t *l = lines;
  assert_line(l, "ORPort", "9001", 3); l = l->next;
  assert_line(l, "Nickname", "pctorTest", 4); l = l->next;
  assert_line(l, "Log", "notice stderr", 5); l = l->next;
  assert_line(l, "Log", "info file /tmp/x.log", 6); l = l->next;
  assert_line(l, "ContactInfo", "", 7); l = l->next;
  assert_line(l, "Address", "10.0.0.1", 9); l = l->next;
  assert_line(l, "Last", "value-without-newline", 10);
  ck_assert_ptr_null(l->next);
  ck_assert_int_eq(conf_lines_count(lines), 7);

  conf_line_t *copy = conf_lines_dup(lines);
  ck_assert_int_eq(conf_lines_count(copy), 7);
  assert_line(copy->next->next, "Log", "notice stderr", 5);
  char *where = conf_line_where(copy->next);
  ck_assert_str_eq(where, "line 4 of test.torrc");
  free(where);
  conf_lines_free(copy);
  ck_assert_ptr_null(copy);
  conf_lines_free(lines);

  /* Empty input and comment-only input give no lines. */
  lines = lex_ok("");
  ck_assert_ptr_null(lines);
  lines = lex_ok("# only\n   \n\t# comments\n");
  ck_assert_ptr_null(lines);
  /* Backslashes inside a value are ordinary characters. */
  lines = lex_ok("Path C:\\dir\\file  \nNext a\\b\n");
  assert_line(lines, "Path", "C:\\dir\\file", 1);
  assert_line(lines->next, "Next", "a\\b", 2);
  conf_lines_free(lines);
  ck_assert_int_eq(conf_key_eq("orport", "ORPort"), 1);
  ck_assert_int_eq(conf_key_eq("orport", "ORPorts"), 0);
}
END_TEST

START_TEST(test_lex_quoted)
{
  conf_line_t *lines = lex_ok(
      "ContactInfo \"Jane Doe <jane AT example dot com>\"  # who\n"
      "Esc \"tab\\there\\nnl \\\"q\\\" back\\\\ \\x41\\102 it\\'s\"\n"
      "Hash \"a # not a comment\"\n"
      "Empty \"\"\r\n");
  const conf_line_t *l = lines;
  assert_line(l, "ContactInfo", "Jane Doe <jane AT example dot com>", 1);
  l = l->next;
  assert_line(l, "Esc", "tab\there\nnl \"q\" back\\ AB it's", 2);
  l = l->next;
  assert_line(l, "Hash", "a # not a comment", 3);
  l = l->next;
  assert_line(l, "Empty", "", 4);
  conf_lines_free(lines);
}
END_TEST

START_TEST(test_lex_bad_quotes)
{
  static const struct {
    const char *text;
    const char *needle;
  } cases[] = {
    {"A 1\nB \"unterminated\n", "line 2 of test.torrc: unterminated"},
    {"A 1\n\nC \"abc\" extra\n", "line 3 of test.torrc: unexpected text"},
    {"D \"bad \\q escape\"\n", "line 1 of test.torrc: unknown escape '\\q'"},
    {"E \"nul \\x00\"\n", "NUL byte"},
    {"F \"nul \\000\"\n", "NUL byte"},
    {"G \"\\x4\"\n", "two hex digits"},
    {"H \"\\77\"\n", "three digits"},
    {"I \"\\777\"\n", "out of range"},
    {"J \"ends in backslash\\", "unterminated"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *err = lex_bad(cases[i].text, strlen(cases[i].text));
    assert_err_has(err, cases[i].needle);
    free(err);
  }
}
END_TEST

START_TEST(test_lex_continuation)
{
  conf_line_t *lines = lex_ok(
      "Family a \\\n"
      "  b \\\r\n"
      "# a comment line inside the value\n"
      "   # another one\n"
      "c # comment ends it\n"
      "Next 1\n"
      "Tail x\\\n");
  const conf_line_t *l = lines;
  assert_line(l, "Family", "a   b c", 1);
  l = l->next;
  assert_line(l, "Next", "1", 6);
  l = l->next;
  /* A continuation at the end of the text just ends the value. */
  assert_line(l, "Tail", "x", 7);
  conf_lines_free(lines);

  /* A blank line after a continuation ends the value. */
  lines = lex_ok("A 1\\\n\nB 2\n");
  assert_line(lines, "A", "1", 1);
  assert_line(lines->next, "B", "2", 3);
  conf_lines_free(lines);
}
END_TEST

START_TEST(test_lex_bounds)
{
  /* An overlong physical line is rejected with its number. */
  size_t n = CONF_MAX_LINE_LEN + 10;
  char *text = malloc(n + 32);
  strcpy(text, "A 1\nLong ");
  size_t off = strlen(text);
  memset(text + off, 'x', n);
  text[off + n] = '\n';
  text[off + n + 1] = '\0';
  char *err = lex_bad(text, strlen(text));
  assert_err_has(err, "line 2 of test.torrc: line longer than");
  free(err);

  /* A line of exactly the maximum is fine. */
  memset(text, 'y', CONF_MAX_LINE_LEN);
  memcpy(text, "K ", 2);
  text[CONF_MAX_LINE_LEN] = '\0';
  conf_line_t *lines = lex_ok(text);
  ck_assert_uint_eq(strlen(lines->value), CONF_MAX_LINE_LEN - 2);
  conf_lines_free(lines);
  free(text);

  /* A continued value may not grow past the bound either. */
  size_t half = CONF_MAX_LINE_LEN / 2 + 100;
  text = malloc(3 * (half + 3) + 16);
  strcpy(text, "K ");
  off = 2;
  for (int i = 0; i < 3; i++) {
    memset(text + off, 'z', half);
    off += half;
    memcpy(text + off, "\\\n", 2);
    off += 2;
  }
  text[off] = '\0';
  err = lex_bad(text, off);
  assert_err_has(err, "line 1 of test.torrc: continued line longer");
  free(err);
  free(text);

  /* NUL bytes are rejected, naming the line. */
  static const char nul[] = "A 1\nB 2\nC x\0y\n";
  err = lex_bad(nul, sizeof(nul) - 1);
  assert_err_has(err, "line 3 of test.torrc: NUL byte");
  free(err);

  /* Text larger than the file bound. */
  char *big = calloc(1, CONF_MAX_FILE_SIZE + 2);
  memset(big, '#', CONF_MAX_FILE_SIZE + 1);
  err = lex_bad(big, CONF_MAX_FILE_SIZE + 1);
  assert_err_has(err, "larger than");
  free(err);
  free(big);
}
END_TEST

START_TEST(test_lex_file)
{
  char path[] = "/tmp/check_conf_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  static const char body[] = "# torrc\nORPort 9001\n\nNickname x\n";
  ck_assert_int_eq(write(fd, body, sizeof(body) - 1), sizeof(body) - 1);
  close(fd);
  conf_line_t *lines = NULL;
  char *err = NULL;
  ck_assert_int_eq(conf_lex_file(path, &lines, &err), 0);
  ck_assert_str_eq(lines->key, "ORPort");
  ck_assert_str_eq(lines->source, path);
  ck_assert_int_eq(lines->next->lineno, 4);
  conf_lines_free(lines);

  /* Errors carry the file name. */
  fd = open(path, O_WRONLY | O_TRUNC);
  static const char bad[] = "A 1\nB \"x\n";
  ck_assert_int_eq(write(fd, bad, sizeof(bad) - 1), sizeof(bad) - 1);
  close(fd);
  ck_assert_int_eq(conf_lex_file(path, &lines, &err), -1);
  char *want = NULL;
  ck_assert_int_gt(asprintf(&want, "line 2 of %s", path), 0);
  assert_err_has(err, want);
  free(want);
  free(err);
  unlink(path);

  err = NULL;
  ck_assert_int_eq(conf_lex_file(path, &lines, &err), CONF_ERR_NOENT);
  assert_err_has(err, path);
  free(err);
  err = NULL;
  ck_assert_int_eq(conf_lex_file("/tmp", &lines, &err), -1);
  assert_err_has(err, "not a regular file");
  free(err);
}
END_TEST

/* Write text to dir/name. */
static void
put_file(const char *dir, const char *name, const char *text)
{
  char *p = NULL;
  ck_assert_int_gt(asprintf(&p, "%s/%s", dir, name), 0);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  free(p);
}

/* The keys and values of a list as "K=V K=V". */
static char *
lines_str(const conf_line_t *l)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  for (int first = 1; l; l = l->next, first = 0)
    fprintf(f, "%s%s=%s", first ? "" : " ", l->key, l->value);
  fclose(f);
  return buf;
}

START_TEST(test_include)
{
  char dir[] = "/tmp/check_conf_inc_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char *sub = NULL, *top = NULL, *err = NULL;
  ck_assert_int_gt(asprintf(&sub, "%s/torrc.d", dir), 0);
  ck_assert_int_gt(asprintf(&top, "%s/torrc", dir), 0);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  /* A directory: its files in byte order; dot files and subdirectories
   * are skipped. A file: read where the line is. */
  put_file(sub, "20-b", "B 2\n");
  put_file(sub, "10-a", "A 1\n%include torrc.d/../one\n");
  put_file(sub, ".hidden", "Hidden 1\n");
  put_file(sub, "Z-upper", "Z 26\n");
  char *subsub = NULL;
  ck_assert_int_gt(asprintf(&subsub, "%s/deeper", sub), 0);
  ck_assert_int_eq(mkdir(subsub, 0700), 0);
  put_file(subsub, "x", "Deeper 1\n");
  put_file(dir, "one", "One 1\n");
  put_file(dir, "torrc", "First 0\n%include torrc.d\nLast 9\n");
  conf_line_t *lines = NULL;
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), 0);
  char *got = lines_str(lines);
  /* Byte order: digits before capitals. */
  ck_assert_str_eq(got, "First=0 A=1 One=1 B=2 Z=26 Last=9");
  free(got);
  /* Lines keep the file they came from, for messages. */
  ck_assert(strstr(lines->next->source, "10-a") != NULL);
  conf_lines_free(lines);

  /* Wildcards: matches in order, dot files need an explicit dot. */
  put_file(dir, "torrc", "%include torrc.d/*-?\n%include nomatch*\n");
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), 0);
  got = lines_str(lines);
  ck_assert_str_eq(got, "A=1 One=1 B=2");
  free(got);
  conf_lines_free(lines);

  /* A missing included file is an error naming the %include line. */
  put_file(dir, "torrc", "A 1\n%include /nonexistent/file\n");
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), -1);
  ck_assert_ptr_null(lines);
  char *want = NULL;
  ck_assert_int_gt(asprintf(&want, "line 2 of %s: cannot include "
                            "\"/nonexistent/file\"", top), 0);
  assert_err_has(err, want);
  free(want);
  free(err);

  /* An error inside an included file names that file's line. */
  put_file(dir, "one", "Good 1\nBad \"x\n");
  put_file(dir, "torrc", "%include one\n");
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), -1);
  ck_assert_int_gt(asprintf(&want, "line 2 of %s/one", dir), 0);
  assert_err_has(err, want);
  free(want);
  free(err);

  /* A file including itself stops at the depth bound. */
  put_file(dir, "torrc", "A 1\n%include torrc\n");
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), -1);
  assert_err_has(err, "%include nested more than 16 deep");
  free(err);
  put_file(dir, "torrc", "%include\n");
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), -1);
  assert_err_has(err, "line 1 of");
  assert_err_has(err, "needs a file or directory name");
  free(err);

  /* Only the top file may be missing (CONF_ERR_NOENT). */
  unlink(top);
  ck_assert_int_eq(conf_read_file(top, dir, &lines, &err), CONF_ERR_NOENT);
  free(err);

  char *cmd = NULL;
  ck_assert_int_gt(asprintf(&cmd, "rm -rf '%s'", dir), 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
  free(subsub);
  free(sub);
  free(top);
}
END_TEST

START_TEST(test_cmdline_optional_value)
{
  static const conf_flag_t fl[] = {
    {"--dump-config", CONF_FLAG_OPT_VALUE},
    {"--quiet", CONF_FLAG_NO_VALUE},
    {NULL, 0},
  };
  char *argv[] = {"pctor", "--dump-config", "--quiet", "--dump-config",
                  "short", "--dump-config", NULL};
  conf_line_t *flags = NULL, *opts = NULL;
  char *err = NULL;
  ck_assert_int_eq(conf_lex_cmdline(6, argv, fl, &flags, &opts, &err), 0);
  char *got = lines_str(flags);
  ck_assert_str_eq(got, "--dump-config= --quiet= --dump-config=short "
                        "--dump-config=");
  free(got);
  ck_assert_ptr_null(opts);
  conf_lines_free(flags);
}
END_TEST

static const conf_flag_t test_flags[] = {
  {"-f", 1},
  {"--verify-config", 0},
  {"--version", 0},
  {NULL, 0},
};

START_TEST(test_cmdline)
{
  char *argv[] = {"pctor", "-f", "/etc/x", "--ORPort", "9001",
                  "Nickname", "Foo", "--verify-config", "--+Log",
                  "info stdout", "/Log", "+Log", "notice stderr", NULL};
  int argc = 13;
  conf_line_t *flags = NULL, *opts = NULL;
  char *err = NULL;
  ck_assert_int_eq(conf_lex_cmdline(argc, argv, test_flags, &flags, &opts,
                                    &err), 0);
  ck_assert_int_eq(conf_lines_count(flags), 2);
  ck_assert_str_eq(flags->key, "-f");
  ck_assert_str_eq(flags->value, "/etc/x");
  ck_assert_str_eq(flags->next->key, "--verify-config");
  ck_assert_str_eq(flags->next->value, "");

  const conf_line_t *l = opts;
  ck_assert_str_eq(l->key, "ORPort");
  ck_assert_str_eq(l->value, "9001");
  ck_assert_int_eq(l->cmd, CONF_LINE_NORMAL);
  ck_assert_int_eq(l->from_cmdline, 1);
  ck_assert_int_eq(l->lineno, 3);
  char *where = conf_line_where(l);
  ck_assert_str_eq(where, "the command line (argument 3)");
  free(where);
  l = l->next;
  ck_assert_str_eq(l->key, "Nickname");
  ck_assert_str_eq(l->value, "Foo");
  l = l->next;
  ck_assert_str_eq(l->key, "Log");
  ck_assert_str_eq(l->value, "info stdout");
  ck_assert_int_eq(l->cmd, CONF_LINE_APPEND);
  l = l->next;
  ck_assert_str_eq(l->key, "Log");
  ck_assert_str_eq(l->value, "");
  ck_assert_int_eq(l->cmd, CONF_LINE_CLEAR);
  l = l->next;
  ck_assert_str_eq(l->value, "notice stderr");
  ck_assert_int_eq(l->cmd, CONF_LINE_APPEND);
  ck_assert_ptr_null(l->next);
  conf_lines_free(flags);
  conf_lines_free(opts);

  char *argv2[] = {"pctor", "--ORPort", NULL};
  ck_assert_int_eq(conf_lex_cmdline(2, argv2, test_flags, &flags, &opts,
                                    &err), -1);
  assert_err_has(err, "'--ORPort' needs a value");
  free(err);
  char *argv3[] = {"pctor", "-f", NULL};
  ck_assert_int_eq(conf_lex_cmdline(2, argv3, test_flags, &flags, &opts,
                                    &err), -1);
  assert_err_has(err, "'-f' needs a value");
  free(err);
  char *argv4[] = {"pctor", "---x", "1", NULL};
  ck_assert_int_eq(conf_lex_cmdline(3, argv4, test_flags, &flags, &opts,
                                    &err), -1);
  assert_err_has(err, "'---x'");
  free(err);
  ck_assert_ptr_null(flags);
  ck_assert_ptr_null(opts);
}
END_TEST

START_TEST(test_bool_int)
{
  int b = -1;
  char *err = NULL;
  ck_assert_int_eq(conf_parse_bool("1", &b, &err), 0);
  ck_assert_int_eq(b, 1);
  ck_assert_int_eq(conf_parse_bool("0", &b, &err), 0);
  ck_assert_int_eq(b, 0);
  const char *bad_bools[] = {"yes", "true", "2", "", "01", " 1"};
  for (size_t i = 0; i < 6; i++) {
    ck_assert_int_eq(conf_parse_bool(bad_bools[i], &b, &err), -1);
    assert_err_has(err, "not a boolean (use 0 or 1)");
    free(err);
  }
  ck_assert_int_eq(b, 0);

  int64_t v = 0;
  ck_assert_int_eq(conf_parse_int("28", 1, 90, &v, &err), 0);
  ck_assert_int_eq(v, 28);
  ck_assert_int_eq(conf_parse_int("-5", -10, 10, &v, &err), 0);
  ck_assert_int_eq(v, -5);
  ck_assert_int_eq(conf_parse_int("9223372036854775807", 0, INT64_MAX, &v,
                                  &err), 0);
  ck_assert_int_eq(v, INT64_MAX);
  ck_assert_int_eq(conf_parse_int("-9223372036854775808", INT64_MIN, 0, &v,
                                  &err), 0);
  ck_assert_int_eq(v, INT64_MIN);
  ck_assert_int_eq(conf_parse_int("91", 1, 90, &v, &err), -1);
  assert_err_has(err, "'91' is out of range (1 to 90)");
  free(err);
  ck_assert_int_eq(conf_parse_int("0", 1, 90, &v, &err), -1);
  free(err);
  ck_assert_int_eq(conf_parse_int("-1", 0, 90, &v, &err), -1);
  assert_err_has(err, "not an integer");
  free(err);
  ck_assert_int_eq(conf_parse_int("99999999999999999999", 0, INT64_MAX, &v,
                                  &err), -1);
  assert_err_has(err, "out of range");
  free(err);
  const char *bad_ints[] = {"", "abc", "12x", "0x10", "1 2", "+3", "1.0"};
  for (size_t i = 0; i < 7; i++) {
    ck_assert_int_eq(conf_parse_int(bad_ints[i], 0, 100, &v, &err), -1);
    assert_err_has(err, "not an integer");
    free(err);
  }
  ck_assert_int_eq(v, INT64_MIN);
}
END_TEST

START_TEST(test_interval)
{
  static const struct {
    const char *s;
    unsigned flags;
    uint64_t ms;
  } good[] = {
    {"30 seconds", 0, 30000},
    {"2 hours", 0, 7200000},
    {"1 day", 0, 86400000},
    {"90 minutes", 0, 5400000},
    {"45", 0, 45000},
    {"0", 0, 0},
    {"10 MSEC", 0, 10},
    {"250ms", 0, 250},
    {"2 weeks", 0, 1209600000},
    {"1 Hour", 0, 3600000},
    {"5 min", 0, 300000},
    {"1.5 hours", CONF_ALLOW_FRACTION, 5400000},
    {"0.25 seconds", CONF_ALLOW_FRACTION, 250},
    {"2.0005", CONF_ALLOW_FRACTION, 2000}, /* rounded down to the msec */
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    uint64_t ms = 1;
    char *err = NULL;
    ck_assert_msg(conf_parse_interval(good[i].s, good[i].flags, &ms, &err)
                  == 0, "%s: %s", good[i].s, err);
    ck_assert_msg(ms == good[i].ms, "%s -> %llu", good[i].s,
                  (unsigned long long)ms);
  }
  static const struct {
    const char *s;
    unsigned flags;
    const char *needle;
  } bad[] = {
    {"1.5 hours", 0, "fractional values are not allowed"},
    {"2 fortnights", 0, "unknown time unit 'fortnights'"},
    {"hours", 0, "not a time interval"},
    {"", 0, "not a time interval"},
    {"-1 seconds", 0, "not a time interval"},
    {"1. hours", CONF_ALLOW_FRACTION, "digits after the decimal point"},
    {"99999999999999999999 s", 0, "too large"},
    {"30000000000000 weeks", 0, "too large"},
    {"3 MB", 0, "unknown time unit 'MB'"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    uint64_t ms = 77;
    char *err = NULL;
    ck_assert_int_eq(conf_parse_interval(bad[i].s, bad[i].flags, &ms, &err),
                     -1);
    assert_err_has(err, bad[i].needle);
    ck_assert_int_eq(ms, 77);
    free(err);
  }
}
END_TEST

START_TEST(test_memunit)
{
  static const struct {
    const char *s;
    unsigned flags;
    uint64_t bytes;
  } good[] = {
    {"512 MB", 0, 512ULL << 20},
    {"1 GB", 0, 1ULL << 30},
    {"100 KBytes", 0, 102400},
    {"100 kilobytes", 0, 102400},
    {"4096", 0, 4096},
    {"7 bytes", 0, 7},
    {"2 TB", 0, 2ULL << 40},
    {"8 bits", 0, 1},
    /* tor's bit units are binary (tor --dump-config prints 1048576 for
     * "8 Mbits"). */
    {"1 kbit", 0, 128},
    {"8 Mbits", 0, 1048576},
    {"100 megabits", 0, 13107200},
    {"1 gigabit", 0, 134217728},
    {"1.5 GB", CONF_ALLOW_FRACTION, 3ULL << 29},
    {"64M", 0, 64ULL << 20},
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    uint64_t b = 1;
    char *err = NULL;
    ck_assert_msg(conf_parse_memunit(good[i].s, good[i].flags, &b, &err)
                  == 0, "%s: %s", good[i].s, err);
    ck_assert_msg(b == good[i].bytes, "%s -> %llu", good[i].s,
                  (unsigned long long)b);
  }
  static const struct {
    const char *s;
    const char *needle;
  } bad[] = {
    {"1.5 GB", "fractional values are not allowed"},
    {"12 parsecs", "unknown memory unit 'parsecs'"},
    {"MB", "not a memory size"},
    {"20000000 TB", "too large"},
    {"5 hours", "unknown memory unit"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    uint64_t b = 77;
    char *err = NULL;
    ck_assert_int_eq(conf_parse_memunit(bad[i].s, 0, &b, &err), -1);
    assert_err_has(err, bad[i].needle);
    ck_assert_int_eq(b, 77);
    free(err);
  }
}
END_TEST

START_TEST(test_port)
{
  uint16_t p = 1;
  char *err = NULL;
  ck_assert_int_eq(conf_parse_port("9001", 0, &p, &err), 0);
  ck_assert_int_eq(p, 9001);
  ck_assert_int_eq(conf_parse_port("65535", 0, &p, &err), 0);
  ck_assert_int_eq(p, 65535);
  ck_assert_int_eq(conf_parse_port("0", 1, &p, &err), 0);
  ck_assert_int_eq(p, 0);
  const char *bad[] = {"0", "65536", "-1", "abc", "", "9001x", "123456"};
  for (size_t i = 0; i < 7; i++) {
    ck_assert_int_eq(conf_parse_port(bad[i], 0, &p, &err), -1);
    assert_err_has(err, "is not a port number (1 to 65535)");
    free(err);
  }
  ck_assert_int_eq(p, 0);
}
END_TEST

START_TEST(test_addrport)
{
  pc_addr_t a;
  char *err = NULL;
  ck_assert_int_eq(conf_parse_addrport("1.2.3.4:9001", 0, &a, &err), 0);
  ck_assert_int_eq(a.family, AF_INET);
  ck_assert_int_eq(a.port, 9001);
  static const uint8_t v4[4] = {1, 2, 3, 4};
  ck_assert_mem_eq(a.addr, v4, 4);

  ck_assert_int_eq(conf_parse_addrport("[2001:db8::1]:443", 0, &a, &err), 0);
  ck_assert_int_eq(a.family, AF_INET6);
  ck_assert_int_eq(a.port, 443);
  static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                 0, 0, 0, 0, 0, 0, 0, 1};
  ck_assert_mem_eq(a.addr, v6, 16);

  ck_assert_int_eq(conf_parse_addrport("9001", CONF_ADDR_OPTIONAL, &a, &err),
                   0);
  ck_assert_int_eq(a.family, AF_UNSPEC);
  ck_assert_int_eq(a.port, 9001);

  ck_assert_int_eq(conf_parse_addrport("::1", CONF_PORT_OPTIONAL, &a, &err),
                   0);
  ck_assert_int_eq(a.family, AF_INET6);
  ck_assert_int_eq(a.port, 0);
  ck_assert_int_eq(a.addr[15], 1);
  ck_assert_int_eq(conf_parse_addrport("[::]", CONF_PORT_OPTIONAL, &a, &err),
                   0);
  ck_assert_int_eq(a.family, AF_INET6);
  ck_assert_int_eq(conf_parse_addrport("10.0.0.1", CONF_PORT_OPTIONAL, &a,
                                       &err), 0);
  ck_assert_int_eq(a.family, AF_INET);
  ck_assert_int_eq(conf_parse_addrport("0.0.0.0:0", CONF_PORT_ZERO_OK, &a,
                                       &err), 0);
  ck_assert_int_eq(a.port, 0);

  static const struct {
    const char *s;
    unsigned flags;
    const char *needle;
  } bad[] = {
    {"9001", 0, "an address is needed"},
    {"1.2.3.4", 0, "a port is needed"},
    {"example.com:9001", 0, "'example.com' is not an IPv4 address"},
    {"1.2.3:9001", 0, "is not an IPv4 address"},
    {"1.2.3.4:65536", 0, "'65536' is not a port number"},
    {"1.2.3.4:0", 0, "'0' is not a port number (1 to 65535)"},
    {"1.2.3.4:", 0, "is not a port number"},
    {"[::1]", 0, "a port is needed"},
    {"[::1]:x", 0, "'x' is not a port number"},
    {"[::1]9001", 0, "is not ADDRESS:PORT"},
    {"[1.2.3.4]:80", 0, "bad IPv6 address"},
    {"[::1:80", 0, "bad IPv6 address"},
    {"::1:9001", 0, "as [ADDRESS]:PORT"},
    {"2001:db8::g", CONF_PORT_OPTIONAL, "is not an IPv6 address"},
    {"host", CONF_PORT_OPTIONAL | CONF_ADDR_OPTIONAL,
     "is not an IPv4 or IPv6 address"},
    {"", CONF_ADDR_OPTIONAL, "is not an IPv4 or IPv6 address"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    a.port = 77;
    err = NULL;
    ck_assert_msg(conf_parse_addrport(bad[i].s, bad[i].flags, &a, &err)
                  == -1, "%s accepted", bad[i].s);
    assert_err_has(err, bad[i].needle);
    ck_assert_int_eq(a.port, 77);
    free(err);
  }
}
END_TEST

/* A module with one option of every type, for the generic operations. */
typedef struct {
  int b, ab, i, iv, ms, e;
  uint64_t mem, bw;
  double d;
  char *str;
  conf_strlist_t lines;
} test_opts_t;

static const conf_enum_t test_enum[] = {
  {"red", 1}, {"green", 2}, {NULL, 0},
};

#define TOFF(f) offsetof(test_opts_t, f)
static const conf_var_t test_vars[] = {
  {"B", CONF_TYPE_BOOL, "0|1", "1", "1", 1, 0, 0, TOFF(b), "h", NULL},
  {"AB", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto", 1, 0, 0, TOFF(ab),
   "h", NULL},
  {"I", CONF_TYPE_INT, "N", "5", "5", 1, 1, 9, TOFF(i), "h", NULL},
  {"IV", CONF_TYPE_INTERVAL, "T", "1 hour", "1 hour", 1, 0, 86400,
   TOFF(iv), "h", NULL},
  {"MS", CONF_TYPE_MSEC_INTERVAL, "T", "250", "250", 1, 1, 60000, TOFF(ms),
   "h", NULL},
  {"E", CONF_TYPE_ENUM, "red|green", "green", "green", 1, 0, 0, TOFF(e),
   "h", test_enum},
  {"Mem", CONF_TYPE_MEMUNIT, "N", "1.5 KB", "1.5 KB", 1, 0, 0, TOFF(mem),
   "h", NULL},
  {"BW", CONF_TYPE_BANDWIDTH, "N", NULL, "unset", 1, 0, 1000000, TOFF(bw),
   "h", NULL},
  {"D", CONF_TYPE_DOUBLE, "N", "-0.5", "-0.5", 1, -1, 1, TOFF(d), "h",
   NULL},
  {"S", CONF_TYPE_STRING, "S", NULL, "unset", 1, 0, 0, TOFF(str), "h",
   NULL},
  {"L", CONF_TYPE_LINELIST, "S", NULL, "unset", 1, 0, 0, TOFF(lines), "h",
   NULL},
};
static const conf_module_t test_module = {
  "test", test_vars, sizeof(test_vars) / sizeof(test_vars[0]),
  sizeof(test_opts_t), NULL,
};

/* conf_parse_listen_port / conf_format_listen_port: off, a port alone,
 * an address with a port, and the refusals. */
START_TEST(test_listen_port)
{
  pc_addr_t a;
  char *err = NULL;
  conf_strlist_t l = {0};
  ck_assert_int_eq(conf_parse_listen_port("0", "XPort", &a, &err), 0);
  ck_assert_int_eq(a.family, AF_UNSPEC);
  conf_format_listen_port(&a, &l);
  ck_assert_int_eq(conf_parse_listen_port("9100", "XPort", &a, &err), 0);
  ck_assert_int_eq(a.family, AF_INET);
  ck_assert_uint_eq(a.port, 9100);
  conf_format_listen_port(&a, &l);
  ck_assert_int_eq(conf_parse_listen_port("[::1]:9101", "XPort", &a, &err),
                   0);
  conf_format_listen_port(&a, &l);
  ck_assert_int_eq(l.n, 3);
  ck_assert_str_eq(l.v[0], "0");
  ck_assert_str_eq(l.v[1], "0.0.0.0:9100");
  ck_assert_str_eq(l.v[2], "[::1]:9101");
  conf_strlist_clear(&l);
  a.port = 7;
  ck_assert_int_eq(conf_parse_listen_port("127.0.0.1:0", "XPort", &a, &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "is not a port number"));
  ck_assert_uint_eq(a.port, 7); /* untouched on error */
  free(err);
  err = NULL;
  ck_assert_int_eq(conf_parse_listen_port("nonsense", "XPort", &a, &err), -1);
  ck_assert_ptr_nonnull(err);
  free(err);
}
END_TEST

START_TEST(test_confdecl)
{
  char *err = NULL;
  ck_assert_msg(conf_module_check(&test_module, &err) == 0, "%s", err);
  test_opts_t a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  for (size_t i = 0; i < test_module.n_vars; i++)
    if (test_vars[i].default_str)
      ck_assert_int_eq(conf_var_assign(&a, &test_vars[i],
                                       test_vars[i].default_str, NULL, NULL,
                                       &err), 0);
  ck_assert_int_eq(a.b, 1);
  ck_assert_int_eq(a.ab, -1);
  ck_assert_int_eq(a.iv, 3600);
  ck_assert_int_eq(a.ms, 250);
  ck_assert_int_eq(a.e, 2);
  ck_assert_uint_eq(a.mem, 1536);
  ck_assert(a.d == -0.5);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[7], "8 Mbits", NULL,
                                   NULL, &err), -1);
  assert_err_has(err, "out of range (0 to 1000000 bytes)");
  free(err);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[7], "512 KBytes", NULL,
                                   NULL, &err), 0);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[9], "text", NULL, NULL,
                                   &err), 0);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[9], "bad\x01", NULL,
                                   NULL, &err), -1);
  free(err);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[10], "one", NULL, NULL,
                                   &err), 0);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[10], "two", NULL, NULL,
                                   &err), 0);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[5], "blue", NULL, NULL,
                                   &err), -1);
  assert_err_has(err, "'blue' must be red or green");
  free(err);
  ck_assert_int_eq(conf_var_assign(&a, &test_vars[8], "1e3", NULL, NULL,
                                   &err), -1);
  free(err);
  ck_assert(conf_var_is_multi(&test_vars[10]));
  ck_assert(!conf_var_is_multi(&test_vars[9]));

  /* Copy, compare, format, clear. */
  const char *want[] = {"1", "auto", "5", "3600", "250", "green", "1536",
                        "524288", "-0.500000", "text", "one"};
  for (size_t i = 0; i < test_module.n_vars; i++) {
    ck_assert(!conf_var_equal(&a, &b, &test_vars[i]));
    conf_var_copy(&b, &a, &test_vars[i]);
    ck_assert(conf_var_equal(&a, &b, &test_vars[i]));
    conf_strlist_t out = {0, NULL};
    conf_var_format(&b, &test_vars[i], &out);
    ck_assert_int_ge(out.n, 1);
    ck_assert_str_eq(out.v[0], want[i]);
    conf_strlist_clear(&out);
  }
  ck_assert_int_eq(b.lines.n, 2);
  for (size_t i = 0; i < test_module.n_vars; i++) {
    conf_var_clear(&a, &test_vars[i]);
    conf_var_clear(&b, &test_vars[i]);
  }
  ck_assert_ptr_null(a.str);
  ck_assert_int_eq(a.lines.n, 0);
}
END_TEST

Suite *
suite_conf(void)
{
  Suite *s = suite_create("conf");
  TCase *tc = tcase_create("lex");
  tcase_add_test(tc, test_lex_basic);
  tcase_add_test(tc, test_lex_quoted);
  tcase_add_test(tc, test_lex_bad_quotes);
  tcase_add_test(tc, test_lex_continuation);
  tcase_add_test(tc, test_lex_bounds);
  tcase_add_test(tc, test_lex_file);
  tcase_add_test(tc, test_cmdline);
  tcase_add_test(tc, test_include);
  tcase_add_test(tc, test_cmdline_optional_value);
  suite_add_tcase(s, tc);
  tc = tcase_create("values");
  tcase_add_test(tc, test_bool_int);
  tcase_add_test(tc, test_interval);
  tcase_add_test(tc, test_memunit);
  tcase_add_test(tc, test_port);
  tcase_add_test(tc, test_addrport);
  tcase_add_test(tc, test_confdecl);
  tcase_add_test(tc, test_listen_port);
  suite_add_tcase(s, tc);
  return s;
}
