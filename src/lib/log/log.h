/* SPDX-License-Identifier: BSD-3-Clause */
/* log.h -- tor-style logging: severities, destinations, one line per event.
 *
 * A message goes to every destination whose severity range includes it.
 * Destinations are configured with tor's syntax ("notice stderr",
 * "info-warn file /var/log/pctor.log", "debug stdout") via
 * log_parse_destination(); until one is configured, notice and above go to
 * stderr. Lines look like tor's: "Nov 22 03:04:40.123 [notice] text".
 *
 * Tests may install a hook that sees every message (log_set_hook()).
 */
#ifndef PCTOR_LIB_LOG_LOG_H
#define PCTOR_LIB_LOG_LOG_H

#include <stdarg.h>
#include <sys/types.h>

typedef enum {
  LOG_SEV_DEBUG = 0,
  LOG_SEV_INFO = 1,
  LOG_SEV_NOTICE = 2,
  LOG_SEV_WARN = 3,
  LOG_SEV_ERR = 4,
} log_severity_t;

void log_msg(log_severity_t sev, const char *func, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
void log_vmsg(log_severity_t sev, const char *func, const char *fmt,
              va_list ap);

#define log_debug(...) log_msg(LOG_SEV_DEBUG, __func__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_SEV_INFO, __func__, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_SEV_NOTICE, __func__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_SEV_WARN, __func__, __VA_ARGS__)
#define log_err(...) log_msg(LOG_SEV_ERR, __func__, __VA_ARGS__)

/* Parse a severity name ("debug", "info", "notice", "warn", "err");
 * returns -1 if unknown. */
int log_severity_parse(const char *name);
const char *log_severity_name(log_severity_t sev);

/* Check a tor-style Log value ("SEV[-SEV] stderr|stdout|syslog|file PATH")
 * without applying it. On error returns -1 and sets *err_out to a newly
 * allocated message. */
int log_check_destination(const char *spec, char **err_out);
/* Add a destination described by a Log value. Returns 0 or -1 (+ *err_out). */
int log_parse_destination(const char *spec, char **err_out);
/* Remove every configured destination (back to the default: notice+ to
 * stderr). Used before re-applying the Log lines on SIGHUP. */
void log_reset_destinations(void);
/* The lowest severity of the default destination, stderr, used while no
 * destination is configured: LOG_SEV_NOTICE unless changed (--hush sets
 * LOG_SEV_WARN, --quiet LOG_SEV_NONE: nothing). */
#define LOG_SEV_NONE (LOG_SEV_ERR + 1)
void log_set_default_min(int sev);

/* Lowest severity any destination wants: callers may skip expensive
 * formatting when log_is_enabled(sev) is false. */
int log_is_enabled(log_severity_t sev);
/* Close and reopen file destinations (after log rotation, on SIGHUP). A
 * file that cannot be reopened keeps its old descriptor and is reported
 * with a warning; returns how many failed. */
int log_reopen_files(void);

/* Give the log files that this process created (not files that existed
 * before) to uid:gid, so that a daemon that opened them as root can still
 * reopen them after switching to that user (SIGHUP, log rotation). Plain
 * files with a single name only. Returns how many were given, or -1 (with
 * a warning) if fchown failed. */
int log_give_created_files(uid_t uid, gid_t gid);
/* SIGUSR2 (as tor): every destination logs from debug on, until the Log
 * lines are applied again. */
void log_set_all_debug(void);
/* SafeLogging: replace IP addresses in messages above debug level by
 * "[scrubbed]". */
void log_set_scrub(int on);
/* SyslogIdentityTag: syslog lines say "pctor-TAG" (NULL: "pctor"). Takes
 * effect when a syslog destination is (re)configured. */
void log_set_syslog_ident(const char *tag);

/* Write msg (a whole line with its newline, no header added) to every
 * file and stream destination, or to stderr when there is none, using
 * only write(2): callable from a signal handler (the sandbox's SIGSYS
 * handler). */
void log_write_sigsafe(const char *msg, size_t len);

/* The paths of the file destinations now configured, at most max of them
 * into out (pointers valid until the destinations change); returns how
 * many were stored. */
int log_file_paths(const char **out, int max);

typedef void (*log_hook_fn)(log_severity_t sev, const char *msg, void *arg);
/* Install (or with fn == NULL remove) a hook that receives every message at
 * or above min_sev in addition to the destinations. */
void log_set_hook(log_severity_t min_sev, log_hook_fn fn, void *arg);

#endif
