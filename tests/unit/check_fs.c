/* SPDX-License-Identifier: BSD-3-Clause */
/* check_fs.c -- unit tests for lib/fs in a fresh mkdtemp() directory:
 * bounded reads (missing, too large, endless device, directory), atomic
 * writes (mode, replacement, stale temporary file), private directory
 * creation/checks (wrong type, wrong owner when we can chown, loose
 * permissions), and the small helpers; and lib/fs/statefile: parsing
 * tor's state format (comments, repeated keys, blanks), keeping lines
 * pctor does not use across a rewrite, replacing a key's lines in place,
 * the atomic save and reload, and bad content (NUL, no key, overlong
 * line) giving a warning, a fresh state and the old file moved to
 * "state.bad". */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fs/files.h"
#include "lib/fs/statefile.h"

Suite *suite_fs(void);

static char tmpdir[64];

static void
setup(void)
{
  strcpy(tmpdir, "/tmp/pctor-check-fs-XXXXXX");
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

/* Newly allocated path of name inside the test directory. */
static char *
tpath(const char *name)
{
  return fs_path_join(tmpdir, name);
}

static void
put(const char *path, const char *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

START_TEST(test_path_join)
{
  char *p = fs_path_join("a", "b");
  ck_assert_str_eq(p, "a/b");
  free(p);
  p = fs_path_join("/var/lib/pctor/", "keys");
  ck_assert_str_eq(p, "/var/lib/pctor/keys");
  free(p);
  p = fs_path_join("/", "etc");
  ck_assert_str_eq(p, "/etc");
  free(p);
  p = fs_path_join("", "x");
  ck_assert_str_eq(p, "x");
  free(p);
}
END_TEST

START_TEST(test_read_file)
{
  char *p = tpath("f");
  uint8_t *data;
  size_t len;
  char content[100];
  for (int i = 0; i < 100; i++)
    content[i] = (char)(i == 50 ? 0 : 'a' + i % 26);
  put(p, content, 100);

  ck_assert_int_eq(fs_read_file(p, 100, &data, &len), 0);
  ck_assert_uint_eq(len, 100);
  ck_assert(memcmp(data, content, 100) == 0);
  ck_assert_int_eq(data[100], 0); /* extra NUL */
  free(data);

  /* One byte over the limit. */
  errno = 0;
  ck_assert_int_eq(fs_read_file(p, 99, &data, &len), -EFBIG);
  ck_assert_int_eq(errno, EFBIG);
  ck_assert_ptr_null(data);
  ck_assert_uint_eq(len, 0);

  /* Empty file. */
  put(p, "", 0);
  ck_assert_int_eq(fs_read_file(p, 0, &data, &len), 0);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(data[0], 0);
  free(data);

  /* A file larger than the initial buffer. */
  size_t big = 300000;
  char *b = malloc(big);
  for (size_t i = 0; i < big; i++)
    b[i] = (char)(i * 31);
  put(p, b, big);
  ck_assert_int_eq(fs_read_file(p, big, &data, &len), 0);
  ck_assert_uint_eq(len, big);
  ck_assert(memcmp(data, b, big) == 0);
  free(data);
  ck_assert_int_eq(fs_read_file(p, big - 1, &data, &len), -EFBIG);
  ck_assert_int_eq(fs_read_file(p, SIZE_MAX, &data, &len), 0);
  ck_assert_uint_eq(len, big);
  free(data);
  free(b);
  free(p);

  /* Missing file, and a directory. */
  p = tpath("missing");
  errno = 0;
  ck_assert_int_eq(fs_read_file(p, 10, &data, &len), -ENOENT);
  ck_assert_int_eq(errno, ENOENT);
  ck_assert_ptr_null(data);
  free(p);
  ck_assert_int_eq(fs_read_file(tmpdir, 10, &data, &len), -EISDIR);
}
END_TEST

START_TEST(test_read_endless)
{
  /* A device with no size and no end: bounded by max_len. */
  uint8_t *data;
  size_t len;
  ck_assert_int_eq(fs_read_file("/dev/zero", 5000, &data, &len), -EFBIG);
  ck_assert_ptr_null(data);
  /* And one with no data. */
  ck_assert_int_eq(fs_read_file("/dev/null", 10, &data, &len), 0);
  ck_assert_uint_eq(len, 0);
  free(data);
}
END_TEST

START_TEST(test_read_text)
{
  char *p = tpath("t");
  char *text;
  put(p, "hello\nworld\n", 12);
  ck_assert_int_eq(fs_read_text(p, 100, &text), 0);
  ck_assert_str_eq(text, "hello\nworld\n");
  free(text);
  put(p, "nul\0inside", 10);
  ck_assert_int_eq(fs_read_text(p, 100, &text), -EINVAL);
  ck_assert_ptr_null(text);
  ck_assert_int_eq(fs_read_text(p, 9, &text), -EFBIG);
  free(p);
}
END_TEST

START_TEST(test_write_atomic)
{
  char *p = tpath("key");
  char *tmp = tpath("key.tmp");
  uint8_t *data;
  size_t len;
  struct stat st;

  ck_assert_int_eq(fs_write_file_atomic(p, "secret", 6, 0600), 0);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0600);
  ck_assert(!fs_file_exists(tmp));
  ck_assert_int_eq(fs_read_file(p, 100, &data, &len), 0);
  ck_assert_uint_eq(len, 6);
  ck_assert(memcmp(data, "secret", 6) == 0);
  free(data);

  /* Replace, with a different mode: mode is exact, not umask-reduced. */
  mode_t old = umask(077);
  ck_assert_int_eq(fs_write_file_atomic(p, "new contents", 12, 0644), 0);
  umask(old);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0644);
  ck_assert_int_eq(fs_file_size(p), 12);

  /* A stale temporary file (even read-only) from a crash is replaced. */
  put(tmp, "stale", 5);
  chmod(tmp, 0400);
  ck_assert_int_eq(fs_write_file_atomic(p, "", 0, 0600), 0);
  ck_assert_int_eq(fs_file_size(p), 0);
  ck_assert(!fs_file_exists(tmp));

  /* A symlink at the temporary name is removed, not followed. */
  char *target = tpath("target");
  put(target, "keep", 4);
  ck_assert_int_eq(symlink(target, tmp), 0);
  ck_assert_int_eq(fs_write_file_atomic(p, "xy", 2, 0600), 0);
  ck_assert_int_eq(fs_file_size(target), 4);
  ck_assert_int_eq(fs_file_size(p), 2);
  free(target);

  /* Missing directory. */
  char *bad = tpath("nodir/file");
  errno = 0;
  ck_assert_int_eq(fs_write_file_atomic(bad, "x", 1, 0600), -ENOENT);
  ck_assert_int_eq(errno, ENOENT);
  free(bad);
  /* Target is a directory: rename fails, temporary file cleaned up. */
  char *d = tpath("adir");
  char *dtmp = tpath("adir.tmp");
  ck_assert_int_eq(mkdir(d, 0700), 0);
  ck_assert_int_lt(fs_write_file_atomic(d, "x", 1, 0600), 0);
  ck_assert(!fs_file_exists(dtmp));
  free(d);
  free(dtmp);
  free(p);
  free(tmp);
}
END_TEST

START_TEST(test_exists_size)
{
  char *p = tpath("s");
  ck_assert(!fs_file_exists(p));
  ck_assert_int_eq(fs_file_size(p), -ENOENT);
  put(p, "12345", 5);
  ck_assert(fs_file_exists(p));
  ck_assert_int_eq(fs_file_size(p), 5);
  ck_assert(fs_file_exists(tmpdir));
  free(p);
}
END_TEST

START_TEST(test_private_dir)
{
  char *d = tpath("data");
  char *err = NULL;
  struct stat st;

  /* Created with 0700, whatever the umask. */
  mode_t old = umask(0);
  ck_assert_int_eq(fs_check_private_dir(d, &err), 0);
  umask(old);
  ck_assert_ptr_null(err);
  ck_assert_int_eq(stat(d, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  ck_assert_int_eq(st.st_mode & 07777, 0700);
  /* Existing and fine. */
  ck_assert_int_eq(fs_check_private_dir(d, &err), 0);

  /* Too open: tightened. */
  ck_assert_int_eq(chmod(d, 0755), 0);
  ck_assert_int_eq(fs_check_private_dir(d, &err), 0);
  ck_assert_int_eq(stat(d, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0700);
  ck_assert_int_eq(chmod(d, 0777), 0);
  ck_assert_int_eq(fs_check_private_dir(d, &err), 0);
  ck_assert_int_eq(stat(d, &st), 0);
  ck_assert_int_eq(st.st_mode & 07777, 0700);

  /* Through a symlink. */
  char *link = tpath("datalink");
  ck_assert_int_eq(symlink(d, link), 0);
  ck_assert_int_eq(fs_check_private_dir(link, &err), 0);
  free(link);

  /* A regular file is not a directory. */
  char *f = tpath("file");
  put(f, "x", 1);
  ck_assert_int_eq(fs_check_private_dir(f, &err), -1);
  ck_assert_ptr_nonnull(err);
  ck_assert_ptr_nonnull(strstr(err, "not a directory"));
  free(err);
  err = NULL;

  /* Parent missing. */
  char *deep = tpath("no/such");
  ck_assert_int_eq(fs_check_private_dir(deep, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "cannot create"));
  free(err);
  err = NULL;
  free(deep);
  free(f);
  free(d);
}
END_TEST

START_TEST(test_private_dir_not_owned)
{
  char *d = tpath("theirs");
  char *err = NULL;
  ck_assert_int_eq(mkdir(d, 0700), 0);
  /* Only root can give a directory away; elsewhere this check cannot be
   * simulated and the test only checks the owned case. */
  if (chown(d, geteuid() + 4242, (gid_t)-1) == 0) {
    ck_assert_int_eq(fs_check_private_dir(d, &err), -1);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "owned by uid"));
    free(err);
  } else {
    ck_assert_int_eq(fs_check_private_dir(d, &err), 0);
  }
  free(d);
}
END_TEST

/* ---- lib/fs/statefile ---- */

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

/* Periodic saving: nothing while clean; a change is saved once interval
 * seconds have passed since the first check that saw it, at once when
 * asked; a failed save stays due and is retried. */
START_TEST(test_save_schedule)
{
  char *path = fs_path_join(tmpdir, "state");
  char *err = NULL;
  statefile_t *st = statefile_new(path);
  ck_assert_int_eq(statefile_save_if_due(st, 1000, 600, &err), 0);
  ck_assert(!fs_file_exists(path));
  statefile_set(st, "BWHistoryReadValues", "1,2");
  ck_assert_int_eq(statefile_save_if_due(st, 1000, 600, &err), 0);
  ck_assert_int_eq(statefile_save_if_due(st, 1599, 600, &err), 0);
  ck_assert(!fs_file_exists(path));
  ck_assert_int_eq(statefile_save_if_due(st, 1600, 600, &err), 1);
  ck_assert_ptr_null(err);
  ck_assert(fs_file_exists(path));
  ck_assert_int_eq(statefile_is_dirty(st), 0);
  ck_assert_int_eq(statefile_save_if_due(st, 5000, 600, &err), 0);
  /* The same value again is no change. */
  statefile_set(st, "BWHistoryReadValues", "1,2");
  ck_assert_int_eq(statefile_save_if_due(st, 9000, 600, &err), 0);
  /* A new change starts its own interval. */
  statefile_set(st, "BWHistoryReadValues", "1,2,3");
  ck_assert_int_eq(statefile_save_if_due(st, 9000, 600, &err), 0);
  ck_assert_int_eq(statefile_save_if_due(st, 9060, 600, &err), 0);
  /* Something important: the next check saves. */
  statefile_want_save_now(st);
  ck_assert_int_eq(statefile_save_if_due(st, 9120, 600, &err), 1);
  statefile_free(st);
  char *warn = NULL;
  st = statefile_load(path, &warn);
  ck_assert_ptr_null(warn);
  ck_assert_str_eq(statefile_get(st, "BWHistoryReadValues"), "1,2,3");
  statefile_free(st);
  /* A save that fails stays dirty and is tried again at the next check. */
  char *bad = fs_path_join(tmpdir, "no-such-dir/state");
  st = statefile_new(bad);
  statefile_set(st, "Guard", "x");
  statefile_want_save_now(st);
  ck_assert_int_lt(statefile_save_if_due(st, 100, 600, &err), 0);
  ck_assert_ptr_nonnull(err);
  ck_assert(strstr(err, "Cannot write state file") != NULL);
  free(err);
  err = NULL;
  ck_assert_int_eq(statefile_is_dirty(st), 1);
  ck_assert_int_lt(statefile_save_if_due(st, 160, 600, &err), 0);
  free(err);
  err = NULL;
  statefile_free(st);
  free(bad);
  free(path);
}
END_TEST

Suite *
suite_fs(void)
{
  Suite *s = suite_create("fs");
  TCase *tc = tcase_create("files");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_path_join);
  tcase_add_test(tc, test_read_file);
  tcase_add_test(tc, test_read_endless);
  tcase_add_test(tc, test_read_text);
  tcase_add_test(tc, test_write_atomic);
  tcase_add_test(tc, test_exists_size);
  tcase_add_test(tc, test_private_dir);
  tcase_add_test(tc, test_private_dir_not_owned);
  suite_add_tcase(s, tc);
  /* lib/fs/statefile: tor's state file. */
  TCase *st = tcase_create("statefile");
  tcase_add_checked_fixture(st, setup, teardown);
  tcase_add_test(st, test_parse_tor_state);
  tcase_add_test(st, test_set_keeps_other_lines);
  tcase_add_test(st, test_save_load_roundtrip);
  tcase_add_test(st, test_missing_file);
  tcase_add_test(st, test_bad_content);
  tcase_add_test(st, test_save_schedule);
  suite_add_tcase(s, st);
  return s;
}
