/* SPDX-License-Identifier: BSD-3-Clause */
/* check_statefile.c -- unit tests for lib/fs/statefile: parsing tor's
 * state format (comments, repeated keys, blanks), keeping lines pctor does
 * not use across a rewrite, replacing a key's lines in place, the atomic
 * save and reload, and bad content (NUL, no key, overlong line) giving a
 * warning, a fresh state and the old file moved to "state.bad". */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fs/files.h"
#include "lib/fs/statefile.h"

Suite *suite_statefile(void);

static char tmpdir[64];

static void
setup(void)
{
  strcpy(tmpdir, "/tmp/pctor-check-state-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st;
  (void)ftw;
  if (flag == FTW_DP)
    return rmdir(p);
  return unlink(p);
}

static void
teardown(void)
{
  nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
put(const char *path, const char *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* Lines as tor 0.4.9 writes them (shortened). */
static const char tor_state[] =
    "# Tor state file last generated on 2026-11-20 10:00:00 local time\n"
    "# Other times below are in UTC\n"
    "# You *do not* need to edit this file.\n"
    "\n"
    "Guard in=default rsa_id=AAAA nickname=a sampled_on=2026-11-01T00:00:00 "
    "sampled_by=0.4.9.11 listed=1\n"
    "Guard in=default rsa_id=BBBB nickname=b sampled_on=2026-11-02T00:00:00 "
    "listed=1 confirmed_on=2026-11-03T00:00:00 confirmed_idx=0   \n"
    "CircuitBuildAbandonedCount 0\n"
    "CircuitBuildTimeBin 475 2\n"
    "TorVersion Tor 0.4.9.11\n"
    "LastWritten 2026-11-20 10:00:00\n";

START_TEST(test_parse_tor_state)
{
  statefile_t *st = statefile_new("/nonexistent/state");
  char *err = NULL;
  ck_assert_int_eq(statefile_parse(st, tor_state, strlen(tor_state), &err),
                   0);
  ck_assert_uint_eq(statefile_count(st, "Guard"), 2);
  size_t pos = 0;
  const char *v = statefile_next(st, "Guard", &pos);
  ck_assert_ptr_nonnull(strstr(v, "rsa_id=AAAA"));
  v = statefile_next(st, "Guard", &pos);
  /* trailing blanks removed */
  ck_assert_str_eq(v + strlen(v) - 15, "confirmed_idx=0");
  ck_assert_ptr_null(statefile_next(st, "Guard", &pos));
  ck_assert_str_eq(statefile_get(st, "CircuitBuildTimeBin"), "475 2");
  ck_assert_str_eq(statefile_get(st, "TorVersion"), "Tor 0.4.9.11");
  ck_assert_ptr_null(statefile_get(st, "Nope"));
  ck_assert_int_eq(statefile_is_dirty(st), 0);
  statefile_free(st);
}
END_TEST

START_TEST(test_set_keeps_other_lines)
{
  statefile_t *st = statefile_new("/nonexistent/state");
  char *err = NULL;
  ck_assert_int_eq(statefile_parse(st, tor_state, strlen(tor_state), &err),
                   0);
  const char *g[] = {"in=default rsa_id=CCCC listed=1"};
  ck_assert_int_eq(statefile_set_all(st, "Guard", g, 1), 0);
  ck_assert_int_eq(statefile_is_dirty(st), 1);
  char *text = statefile_format(st, 0);
  /* The new Guard line took the first one's place; tor's lines stay. */
  const char *p = strstr(text, "Guard in=default rsa_id=CCCC listed=1\n"
                               "CircuitBuildAbandonedCount 0\n"
                               "CircuitBuildTimeBin 475 2\n"
                               "TorVersion Tor 0.4.9.11\n");
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_null(strstr(text, "AAAA"));
  ck_assert_ptr_nonnull(strstr(text, "1970-01-01 00:00:00"));
  free(text);
  /* Same values again: not dirty after a save-equivalent reset. */
  ck_assert_int_eq(statefile_set(st, "NewKey", "x y"), 0);
  ck_assert_str_eq(statefile_get(st, "NewKey"), "x y");
  ck_assert_int_eq(statefile_set(st, "NewKey", NULL), 0);
  ck_assert_ptr_null(statefile_get(st, "NewKey"));
  ck_assert_int_eq(statefile_set(st, "Bad", "a\nb"), -1);
  statefile_free(st);
}
END_TEST

START_TEST(test_save_load_roundtrip)
{
  char *path = fs_path_join(tmpdir, "state");
  put(path, tor_state, strlen(tor_state));
  char *warn = NULL;
  statefile_t *st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  ck_assert_int_eq(statefile_set(st, "Guard", "in=default rsa_id=DDDD"), 0);
  char *err = NULL;
  ck_assert_int_eq(statefile_save(st, 1700000000, &err), 0);
  ck_assert_int_eq(statefile_is_dirty(st), 0);
  statefile_free(st);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0600);
  st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  ck_assert_str_eq(statefile_get(st, "Guard"), "in=default rsa_id=DDDD");
  ck_assert_uint_eq(statefile_count(st, "Guard"), 1);
  ck_assert_str_eq(statefile_get(st, "LastWritten"), "2023-11-14 22:13:20");
  ck_assert_str_eq(statefile_get(st, "CircuitBuildTimeBin"), "475 2");
  statefile_free(st);
  free(path);
}
END_TEST

START_TEST(test_missing_file)
{
  char *path = fs_path_join(tmpdir, "state");
  char *warn = NULL;
  statefile_t *st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  ck_assert_uint_eq(statefile_count(st, "Guard"), 0);
  statefile_free(st);
  free(path);
}
END_TEST

static void
check_bad(const char *content, size_t len, const char *expect)
{
  char *path = fs_path_join(tmpdir, "state");
  char *bad = fs_path_join(tmpdir, "state.bad");
  unlink(bad);
  put(path, content, len);
  char *warn = NULL;
  statefile_t *st = statefile_load(path, &warn);
  ck_assert_ptr_nonnull(warn);
  ck_assert_msg(strstr(warn, expect), "warning \"%s\" lacks \"%s\"", warn,
                expect);
  ck_assert_ptr_nonnull(strstr(warn, "state.bad"));
  ck_assert_int_eq(fs_file_exists(path), 0);
  ck_assert_int_eq(fs_file_exists(bad), 1);
  ck_assert_ptr_null(statefile_get(st, "Guard"));
  ck_assert_int_eq(statefile_is_dirty(st), 1);
  free(warn);
  statefile_free(st);
  free(path);
  free(bad);
}

START_TEST(test_bad_content)
{
  check_bad("Guard a\0b\n", 10, "NUL");
  check_bad("Guard ok\n=bad line\n", 19, "line 2");
  check_bad("Guard ok\nKey-with-dash x\n", 25, "line 2");
  size_t n = STATEFILE_MAX_LINE + 10;
  char *big = malloc(n);
  memset(big, 'a', n);
  big[0] = 'K';
  big[1] = ' ';
  check_bad(big, n, "longer than");
  free(big);
}
END_TEST

Suite *
suite_statefile(void)
{
  Suite *s = suite_create("statefile");
  TCase *tc = tcase_create("statefile");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_parse_tor_state);
  tcase_add_test(tc, test_set_keeps_other_lines);
  tcase_add_test(tc, test_save_load_roundtrip);
  tcase_add_test(tc, test_missing_file);
  tcase_add_test(tc, test_bad_content);
  suite_add_tcase(s, tc);
  return s;
}
