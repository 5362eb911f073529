/* SPDX-License-Identifier: BSD-3-Clause */
/* check_log.c -- unit tests for lib/log: severity parsing, destination
 * syntax, and that messages reach hooks only at enabled severities. The
 * daemon's classifier of source files into domains (app/config) is tested
 * in check_log_domains.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int bug_calls_a, bug_calls_b;
static void
bug_hook_a(const char *msg, void *arg)
{
  (void)msg;
  (void)arg;
  bug_calls_a++;
}
static void
bug_hook_b(const char *msg, void *arg)
{
  (void)msg;
  (void)arg;
  bug_calls_b++;
}

/* One bug hook: setting the same one again is fine, a different one (or
 * the same function with another argument) is refused and the first one
 * keeps getting the bugs; once removed, another may be set. */
START_TEST(test_bug_hook_one_subscriber)
{
  int x, y;
  bug_calls_a = bug_calls_b = 0;
  ck_assert_int_eq(log_set_bug_hook(bug_hook_a, &x), 0);
  ck_assert_int_eq(log_set_bug_hook(bug_hook_a, &x), 0);
  ck_assert_int_eq(log_set_bug_hook(bug_hook_b, &x), -1);
  ck_assert_int_eq(log_set_bug_hook(bug_hook_a, &y), -1);
  log_bug("test bug %d", 1);
  ck_assert_int_eq(bug_calls_a, 1);
  ck_assert_int_eq(bug_calls_b, 0);
  ck_assert_int_eq(log_set_bug_hook(NULL, NULL), 0);
  ck_assert_int_eq(log_set_bug_hook(bug_hook_b, &y), 0);
  log_bug("test bug %d", 2);
  ck_assert_int_eq(bug_calls_a, 1);
  ck_assert_int_eq(bug_calls_b, 1);
  ck_assert_int_eq(log_set_bug_hook(NULL, NULL), 0);
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

/* SafeLogging: addresses above debug level become [scrubbed]. */
START_TEST(test_scrub)
{
  n_seen = 0;
  log_set_hook(LOG_SEV_DEBUG, hook, NULL);
  log_set_scrub(1);
  log_notice("Opened ORPort on 192.0.2.7:9001 and [2001:db8::1]:9001");
  ck_assert_str_eq(last, "Opened ORPort on [scrubbed]:9001 and "
                         "[[scrubbed]]:9001");
  log_notice("at 12:30:00, relay $ABCDEF0123 v1.2.3 fe80::1%%eth0");
  ck_assert_str_eq(last, "at 12:30:00, relay $ABCDEF0123 v1.2.3 "
                         "[scrubbed]%eth0");
  log_debug("debug keeps 10.0.0.1");
  ck_assert(strstr(last, "10.0.0.1") != NULL);
  log_set_scrub(0);
  log_notice("again 192.0.2.7");
  ck_assert(strstr(last, "192.0.2.7") != NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
}
END_TEST

/* SIGUSR2's debug switch, and a log file that cannot be reopened. */
START_TEST(test_debug_switch_and_reopen)
{
  char dir[] = "/tmp/check_log_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[128], spec[160];
  snprintf(path, sizeof(path), "%s/pctor.log", dir);
  snprintf(spec, sizeof(spec), "notice file %s", path);
  char *err = NULL;
  log_reset_destinations();
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  log_debug("hidden before");
  log_set_all_debug();
  log_debug("shown after");
  FILE *f = fopen(path, "r");
  char buf[2048] = "";
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  ck_assert(strstr(buf, "hidden before") == NULL);
  ck_assert(strstr(buf, "shown after") != NULL);
  /* Reopening works while the file can be made... */
  ck_assert_int_eq(log_reopen_files(), 0);
  /* ...and fails loudly when its directory is gone. */
  unlink(path);
  rmdir(dir);
  n_seen = 0;
  log_set_hook(LOG_SEV_WARN, hook, NULL);
  ck_assert_int_eq(log_reopen_files(), 1);
  ck_assert_int_eq(n_seen, 1);
  ck_assert(strstr(last, "Could not reopen log file") != NULL);
  ck_assert(strstr(last, path) != NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  log_reset_destinations();
  log_set_default_min(LOG_SEV_NOTICE);
}
END_TEST

/* Only the log files this process created are handed over to the user
 * a daemon switches to; files that existed before keep their owner. */
START_TEST(test_give_created_files)
{
  char dir[] = "/tmp/check_log_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char old_path[128], new_path[128], spec[160];
  snprintf(old_path, sizeof(old_path), "%s/existing.log", dir);
  snprintf(new_path, sizeof(new_path), "%s/new.log", dir);
  FILE *f = fopen(old_path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  char *err = NULL;
  log_reset_destinations();
  snprintf(spec, sizeof(spec), "notice file %s", old_path);
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  snprintf(spec, sizeof(spec), "info file %s", new_path);
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  /* To ourselves (any user can): one file, the new one. */
  ck_assert_int_eq(log_give_created_files(getuid(), getgid()), 1);
  log_notice("still logging");
  log_reset_destinations();
  /* The existing file was opened and written, not created. */
  f = fopen(old_path, "r");
  char buf[256] = "";
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  ck_assert(strstr(buf, "still logging") != NULL);
  /* Opened again, the file that now exists is no longer "created". */
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  ck_assert_int_eq(log_give_created_files(getuid(), getgid()), 0);
  log_reset_destinations();
  unlink(old_path);
  unlink(new_path);
  rmdir(dir);
  log_set_default_min(LOG_SEV_NOTICE);
}
END_TEST

/* Read the whole file at path into buf (NUL-terminated). */
static void
slurp(const char *path, char *buf, size_t cap)
{
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* tor's domain syntax: names, *, ~exclusions, several ranges. */
START_TEST(test_domain_syntax)
{
  char *err = NULL;
  ck_assert_int_eq(log_domain_parse("net", 3), LOG_DOM_NET);
  ck_assert_int_eq(log_domain_parse("HandShake", 9), LOG_DOM_HANDSHAKE);
  ck_assert_int_eq(log_domain_parse("mesg", 4), LOG_DOM_MESG);
  ck_assert_int_eq(log_domain_parse("nett", 4), -1);
  ck_assert_str_eq(log_domain_name(LOG_DOM_DIRSERV), "DIRSERV");
  ck_assert_int_eq(log_check_destination("[handshake]debug [~net,~mm]info "
                                         "notice stdout", &err), 0);
  ck_assert_int_eq(log_check_destination("[*]info file /tmp/x", &err), 0);
  ck_assert_int_eq(log_check_destination("info-notice [dir]debug stderr",
                                         &err), 0);
  ck_assert_int_eq(log_check_destination("[bogus]info stderr", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "unknown logging domain 'bogus'"));
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("[net info stderr", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "']'"));
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("[]info stderr", &err), -1);
  free(err);
  err = NULL;
  ck_assert_int_eq(log_check_destination("[net]loud stderr", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "unknown severity"));
  free(err);
  err = NULL;
  /* Severities but no destination. */
  ck_assert_int_eq(log_check_destination("notice warn", &err), -1);
  free(err);
}
END_TEST

/* This file is in the "general" domain for the classifier below unless
 * the function says otherwise. */
static log_domain_t
test_classifier(const char *file, const char *func)
{
  (void)file;
  if (strstr(func, "net"))
    return LOG_DOM_NET;
  if (strstr(func, "circ"))
    return LOG_DOM_CIRC;
  return LOG_DOM_GENERAL;
}

static void log_from_net(void) { log_info("net info"); }
static void log_from_circ(void) { log_info("circ info"); }
static void log_from_circ_debug(void) { log_debug("circ debug"); }
static void log_from_net_notice(void) { log_notice("net notice"); }

/* Destinations take only their domains at each severity, and
 * LogMessageDomains prints the domain. */
/* SyslogIdentityTag: "pctor-TAG", bounded; unset or empty: "pctor". */
START_TEST(test_syslog_ident)
{
  ck_assert_str_eq(log_syslog_ident(), "pctor");
  log_set_syslog_ident("relay1");
  ck_assert_str_eq(log_syslog_ident(), "pctor-relay1");
  char tag[200];
  memset(tag, 'x', sizeof(tag) - 1);
  tag[sizeof(tag) - 1] = '\0';
  log_set_syslog_ident(tag);
  ck_assert_uint_eq(strlen(log_syslog_ident()), 63);
  ck_assert_int_eq(strncmp(log_syslog_ident(), "pctor-xxx", 9), 0);
  log_set_syslog_ident("");
  ck_assert_str_eq(log_syslog_ident(), "pctor");
  log_set_syslog_ident("relay2");
  log_set_syslog_ident(NULL);
  ck_assert_str_eq(log_syslog_ident(), "pctor");
}
END_TEST

START_TEST(test_domain_filtering)
{
  char dir[] = "/tmp/check_log_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char a[128], b[128], spec[200];
  snprintf(a, sizeof(a), "%s/a.log", dir);
  snprintf(b, sizeof(b), "%s/b.log", dir);
  char *err = NULL;
  log_set_domain_classifier(test_classifier);
  log_reset_destinations();
  snprintf(spec, sizeof(spec), "[circ]debug [~net]info notice file %s", a);
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  snprintf(spec, sizeof(spec), "[net]info-notice file %s", b);
  ck_assert_int_eq(log_parse_destination(spec, &err), 0);
  log_from_net();
  log_from_circ();
  log_from_circ_debug();
  log_from_net_notice();
  log_info("general info");
  log_debug("general debug");
  log_set_message_domains(1);
  log_from_circ();
  log_set_message_domains(0);
  char buf[4096];
  slurp(a, buf, sizeof(buf));
  ck_assert(strstr(buf, "net info") == NULL);
  ck_assert(strstr(buf, "circ info") != NULL);
  ck_assert(strstr(buf, "circ debug") != NULL);
  ck_assert(strstr(buf, "net notice") != NULL);
  ck_assert(strstr(buf, "general info") != NULL);
  ck_assert(strstr(buf, "general debug") == NULL);
  ck_assert(strstr(buf, "[info] {CIRC} log_from_circ(): circ info") != NULL);
  slurp(b, buf, sizeof(buf));
  ck_assert(strstr(buf, "net info") != NULL);
  ck_assert(strstr(buf, "net notice") != NULL);
  ck_assert(strstr(buf, "circ") == NULL);
  ck_assert(strstr(buf, "general") == NULL);
  /* SIGUSR2: everything, every domain. */
  log_set_all_debug();
  log_debug("general debug after");
  slurp(b, buf, sizeof(buf));
  ck_assert(strstr(buf, "general debug after") != NULL);
  log_reset_destinations();
  log_set_domain_classifier(NULL);
  log_set_default_min(LOG_SEV_NOTICE);
  unlink(a);
  unlink(b);
  rmdir(dir);
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
  tcase_add_test(tc, test_bug_hook_one_subscriber);
  tcase_add_test(tc, test_ratelim);
  tcase_add_test(tc, test_scrub);
  tcase_add_test(tc, test_debug_switch_and_reopen);
  tcase_add_test(tc, test_give_created_files);
  tcase_add_test(tc, test_domain_syntax);
  tcase_add_test(tc, test_domain_filtering);
  tcase_add_test(tc, test_syslog_ident);
  suite_add_tcase(s, tc);
  return s;
}
