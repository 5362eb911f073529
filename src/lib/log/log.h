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
 *
 * Domains, as tor's: every message belongs to one of tor's logging domains
 * (general, crypto, net, ..., see log_domain_t), and a destination may
 * take several severity ranges, each limited to a set of domains:
 * "[handshake]debug [~net,~mm]info notice stderr". lib/log does not know
 * the program's modules: the program installs a classifier
 * (log_set_domain_classifier()) that names the domain of a message from
 * the source file and function that logged it; without one, every
 * message is "general". The classifier runs only when some destination
 * filters by domain or LogMessageDomains prints them ("{NET} ...").
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

/* tor's logging domains, in tor's order (names: log_domain_name()). */
typedef enum {
  LOG_DOM_GENERAL = 0,
  LOG_DOM_CRYPTO,
  LOG_DOM_NET,
  LOG_DOM_CONFIG,
  LOG_DOM_FS,
  LOG_DOM_PROTOCOL,
  LOG_DOM_MM,
  LOG_DOM_HTTP,
  LOG_DOM_APP,
  LOG_DOM_CONTROL,
  LOG_DOM_CIRC,
  LOG_DOM_REND,
  LOG_DOM_BUG,
  LOG_DOM_DIR,
  LOG_DOM_DIRSERV,
  LOG_DOM_OR,
  LOG_DOM_EDGE,
  LOG_DOM_ACCT,
  LOG_DOM_HIST,
  LOG_DOM_HANDSHAKE,
  LOG_DOM_HEARTBEAT,
  LOG_DOM_CHANNEL,
  LOG_DOM_SCHED,
  LOG_DOM_GUARD,
  LOG_DOM_CONSDIFF,
  LOG_DOM_DOS,
  LOG_DOM_PROCESS,
  LOG_DOM_PT,
  LOG_DOM_BTRACK,
  LOG_DOM_MESG,
  LOG_N_DOMAINS
} log_domain_t;

/* The domain called name (case-insensitive, len bytes), or -1. */
int log_domain_parse(const char *name, size_t len);
/* The domain's name as tor prints it ("NET"). */
const char *log_domain_name(log_domain_t d);
/* Which domain a message logged in source file `file` (as __FILE__ gave
 * it) by function `func` belongs to. */
typedef log_domain_t (*log_domain_fn)(const char *file, const char *func);
void log_set_domain_classifier(log_domain_fn fn);
/* LogMessageDomains: put "{DOMAIN} " before every message. */
void log_set_message_domains(int on);

void log_msg_at(log_severity_t sev, const char *file, const char *func,
                const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void log_vmsg_at(log_severity_t sev, const char *file, const char *func,
                 const char *fmt, va_list ap)
  __attribute__((format(printf, 4, 0)));

#define log_msg(sev, func, ...) log_msg_at(sev, __FILE__, func, __VA_ARGS__)
#define log_debug(...) log_msg_at(LOG_SEV_DEBUG, __FILE__, __func__, __VA_ARGS__)
#define log_info(...) log_msg_at(LOG_SEV_INFO, __FILE__, __func__, __VA_ARGS__)
#define log_notice(...) \
  log_msg_at(LOG_SEV_NOTICE, __FILE__, __func__, __VA_ARGS__)
#define log_warn(...) log_msg_at(LOG_SEV_WARN, __FILE__, __func__, __VA_ARGS__)
#define log_err(...) log_msg_at(LOG_SEV_ERR, __FILE__, __func__, __VA_ARGS__)

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
/* The identity syslog lines carry now ("pctor" or "pctor-TAG"). */
const char *log_syslog_ident(void);

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

/* log_bug(): something pctor's own code never expects happened (a
 * should-not-happen branch, not bad input from outside): a warning
 * "Bug: MESSAGE (in FUNCTION)", as tor's, and the bug hook is called with
 * MESSAGE (the ControlPort's STATUS_GENERAL BUG event). One hook: setting
 * a different one while one is set is refused with a warning (-1); fn NULL
 * removes it. A bug logged from inside the hook is not passed to it. */
typedef void (*log_bug_fn)(const char *msg, void *arg);
int log_set_bug_hook(log_bug_fn fn, void *arg);
void log_bug_at(const char *file, const char *func, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
#define log_bug(...) log_bug_at(__FILE__, __func__, __VA_ARGS__)

#endif
