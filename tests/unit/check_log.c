/* SPDX-License-Identifier: BSD-3-Clause */
/* check_log.c -- unit tests for lib/log: severity parsing, destination
 * syntax, and that messages reach hooks only at enabled severities. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log/log.h"
#include "lib/log/ratelim.h"

Suite *suite_log(void);

static char last[512];
static int n_seen;

static void
hook(log_severity_t sev, const char *msg, void *arg)
{
  (void)sev;
  (void)arg;
  n_seen++;
  strncpy(last, msg, sizeof(last) - 1);
}

START_TEST(test_severity_parse)
{
  ck_assert_int_eq(log_severity_parse("notice"), LOG_SEV_NOTICE);
  ck_assert_int_eq(log_severity_parse("WARN"), LOG_SEV_WARN);
  ck_assert_int_eq(log_severity_parse("err"), LOG_SEV_ERR);
  ck_assert_int_eq(log_severity_parse("loud"), -1);
}
END_TEST

START_TEST(test_destination_syntax)
{
  char *err = NULL;
  ck_assert_int_eq(log_check_destination("notice stderr", &err), 0);
  ck_assert_int_eq(log_check_destination("info-warn stdout", &err), 0);
  ck_assert_int_eq(log_check_destination("debug file /tmp/x.log", &err), 0);
  ck_assert_int_eq(log_check_destination("loud stderr", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "unknown severity"));
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("notice carrier-pigeon", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "carrier-pigeon"));
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("warn-info stderr", &err), -1);
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("notice file", &err), -1);
  free(err);
}
END_TEST

START_TEST(test_hook_and_newlines)
{
  n_seen = 0;
  log_set_hook(LOG_SEV_NOTICE, hook, NULL);
  log_info("not seen %d", 1);
  ck_assert_int_eq(n_seen, 0);
  log_warn("seen %d\nsecond line", 2);
  ck_assert_int_eq(n_seen, 1);
  ck_assert_str_eq(last, "seen 2 second line");
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
}
END_TEST

START_TEST(test_ratelim)
{
  log_ratelim_t rl = LOG_RATELIM_INIT(10, 3);
  unsigned sup = 99;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(log_ratelim_allow(&rl, 1000, &sup), 1);
    ck_assert_uint_eq(sup, 0);
  }
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(log_ratelim_allow(&rl, 1005, &sup), 0);
  /* Next window: allowed again, and told how many were dropped. */
  ck_assert_int_eq(log_ratelim_allow(&rl, 1010, &sup), 1);
  ck_assert_uint_eq(sup, 5);
  ck_assert_int_eq(log_ratelim_allow(&rl, 1011, &sup), 1);
  ck_assert_uint_eq(sup, 0);
}
END_TEST

Suite *
suite_log(void)
{
  Suite *s = suite_create("log");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_severity_parse);
  tcase_add_test(tc, test_destination_syntax);
  tcase_add_test(tc, test_hook_and_newlines);
  tcase_add_test(tc, test_ratelim);
  suite_add_tcase(s, tc);
  return s;
}
