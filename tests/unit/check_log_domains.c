/* SPDX-License-Identifier: BSD-3-Clause */
/* check_log_domains.c -- app/config/log_domains: the classifier the daemon
 * installs in lib/log, which puts a message in one of tor's logging
 * domains by the source file (and for a few, the function) it comes from.
 * lib/log's own tests (domain syntax and filtering with a classifier of
 * their own) are in check_log.c. */
#include <check.h>

#include "app/config/log_domains.h"
#include "lib/log/log.h"

Suite *suite_log_domains(void);

/* The source-file classifier, as the daemon installs it. */
START_TEST(test_domain_of_source)
{
  ck_assert_int_eq(log_domain_of_source("../src/core/or/channel_hs.c", "f"),
                   LOG_DOM_HANDSHAKE);
  ck_assert_int_eq(log_domain_of_source("/b/src/core/or/channel.c", "f"),
                   LOG_DOM_CHANNEL);
  ck_assert_int_eq(log_domain_of_source("src/feature/dircache/dircache.c",
                                        "f"), LOG_DOM_DIRSERV);
  ck_assert_int_eq(log_domain_of_source("src/feature/dir/dir_http.c", "f"),
                   LOG_DOM_HTTP);
  ck_assert_int_eq(log_domain_of_source("src/feature/dir/consensus.c", "f"),
                   LOG_DOM_DIR);
  ck_assert_int_eq(log_domain_of_source("src/lib/crypt/rsa.c", "f"),
                   LOG_DOM_CRYPTO);
  ck_assert_int_eq(log_domain_of_source("src/app/main/start.c",
                                        "heartbeat_cb"), LOG_DOM_HEARTBEAT);
  ck_assert_int_eq(log_domain_of_source("src/app/main/start.c", "app_start"),
                   LOG_DOM_GENERAL);
  ck_assert_int_eq(log_domain_of_source("elsewhere.c", "f"),
                   LOG_DOM_GENERAL);
}
END_TEST

Suite *
suite_log_domains(void)
{
  Suite *s = suite_create("log_domains");
  TCase *tc = tcase_create("classifier");
  tcase_add_test(tc, test_domain_of_source);
  suite_add_tcase(s, tc);
  return s;
}
