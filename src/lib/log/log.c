/* SPDX-License-Identifier: BSD-3-Clause */
/* log.c -- tor-style log destinations and formatting (see log.h).
 *
 * Destinations are a small fixed table; a message is formatted once and
 * written with a single write() per destination so lines from different
 * events never interleave.
 */
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define LOG_MAX_DESTS 16
#define LOG_LINE_MAX 4096

typedef enum { DEST_FD, DEST_FILE, DEST_SYSLOG } dest_kind_t;

typedef struct {
  dest_kind_t kind;
  log_severity_t min, max;
  int fd;
  char *path;
} log_dest_t;

static log_dest_t dests[LOG_MAX_DESTS];
static int n_dests;
static log_hook_fn hook_fn;
static void *hook_arg;
static log_severity_t hook_min = LOG_SEV_ERR;
static int default_min = LOG_SEV_NOTICE;

static const char *const sev_names[] = {"debug", "info", "notice", "warn",
                                        "err"};

const char *
log_severity_name(log_severity_t sev)
{
  if ((int)sev < 0 || sev > LOG_SEV_ERR)
    return "?";
  return sev_names[sev];
}

int
log_severity_parse(const char *name)
{
  for (int i = 0; i <= LOG_SEV_ERR; i++)
    if (!strcasecmp(name, sev_names[i]))
      return i;
  if (!strcasecmp(name, "warning"))
    return LOG_SEV_WARN;
  if (!strcasecmp(name, "error"))
    return LOG_SEV_ERR;
  return -1;
}

/* Parse "SEV" or "SEV-SEV" or "SEV-" into min/max. */
static int
parse_range(const char *s, size_t len, log_severity_t *min,
            log_severity_t *max)
{
  char buf[32];
  if (len == 0 || len >= sizeof(buf))
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  char *dash = strchr(buf, '-');
  if (dash) {
    *dash = '\0';
    int lo = log_severity_parse(buf);
    int hi = dash[1] ? log_severity_parse(dash + 1) : LOG_SEV_ERR;
    if (lo < 0 || hi < 0 || lo > hi)
      return -1;
    *min = lo;
    *max = hi;
  } else {
    int lo = log_severity_parse(buf);
    if (lo < 0)
      return -1;
    *min = lo;
    *max = LOG_SEV_ERR;
  }
  return 0;
}

/* Split spec into range, kind and optional path; does not open anything. */
static int
parse_spec(const char *spec, log_dest_t *out, char **err_out)
{
  while (*spec == ' ' || *spec == '\t')
    spec++;
  const char *sp = strpbrk(spec, " \t");
  if (!sp) {
    *err_out = pc_asprintf("Log \"%s\": expected SEVERITY DESTINATION", spec);
    return -1;
  }
  if (parse_range(spec, (size_t)(sp - spec), &out->min, &out->max) < 0) {
    *err_out = pc_asprintf("Log \"%s\": unknown severity (use debug, info, "
                           "notice, warn or err, or a range like info-warn)",
                           spec);
    return -1;
  }
  while (*sp == ' ' || *sp == '\t')
    sp++;
  out->path = NULL;
  out->fd = -1;
  if (!strcmp(sp, "stderr")) {
    out->kind = DEST_FD;
    out->fd = 2;
  } else if (!strcmp(sp, "stdout")) {
    out->kind = DEST_FD;
    out->fd = 1;
  } else if (!strcmp(sp, "syslog")) {
    out->kind = DEST_SYSLOG;
  } else if (!strncmp(sp, "file", 4) && (sp[4] == ' ' || sp[4] == '\t')) {
    const char *p = sp + 5;
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p) {
      *err_out = pc_asprintf("Log \"%s\": 'file' needs a path", spec);
      return -1;
    }
    out->kind = DEST_FILE;
    out->path = (char *)p;
  } else {
    *err_out = pc_asprintf("Log \"%s\": unknown destination '%s' (use "
                           "stderr, stdout, syslog or file PATH)",
                           spec, sp);
    return -1;
  }
  return 0;
}

int
log_check_destination(const char *spec, char **err_out)
{
  log_dest_t d;
  return parse_spec(spec, &d, err_out);
}

int
log_parse_destination(const char *spec, char **err_out)
{
  log_dest_t d;
  if (parse_spec(spec, &d, err_out) < 0)
    return -1;
  if (n_dests >= LOG_MAX_DESTS) {
    *err_out = pc_asprintf("Too many Log lines (at most %d)", LOG_MAX_DESTS);
    return -1;
  }
  if (d.kind == DEST_FILE) {
    d.path = pc_strdup(d.path);
    d.fd = open(d.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (d.fd < 0) {
      *err_out = pc_asprintf("Couldn't open log file \"%s\": %s", d.path,
                             strerror(errno));
      free(d.path);
      return -1;
    }
  } else if (d.kind == DEST_SYSLOG) {
    openlog("pctor", LOG_PID | LOG_NDELAY, LOG_DAEMON);
  }
  dests[n_dests++] = d;
  return 0;
}

void
log_reset_destinations(void)
{
  for (int i = 0; i < n_dests; i++) {
    if (dests[i].kind == DEST_FILE && dests[i].fd >= 0)
      close(dests[i].fd);
    free(dests[i].path);
  }
  n_dests = 0;
}

void
log_reopen_files(void)
{
  for (int i = 0; i < n_dests; i++) {
    if (dests[i].kind != DEST_FILE)
      continue;
    int fd = open(dests[i].path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                  0640);
    if (fd < 0)
      continue; /* keep writing to the old file rather than losing logs */
    close(dests[i].fd);
    dests[i].fd = fd;
  }
}

void
log_set_default_min(int sev)
{
  default_min = sev;
}

int
log_is_enabled(log_severity_t sev)
{
  if (hook_fn && sev >= hook_min)
    return 1;
  if (n_dests == 0)
    return (int)sev >= default_min;
  for (int i = 0; i < n_dests; i++)
    if (sev >= dests[i].min && sev <= dests[i].max)
      return 1;
  return 0;
}

void
log_set_hook(log_severity_t min_sev, log_hook_fn fn, void *arg)
{
  hook_fn = fn;
  hook_arg = arg;
  hook_min = min_sev;
}

static void
write_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    buf += w;
    len -= (size_t)w;
  }
}

static const int syslog_prio[] = {LOG_DEBUG, LOG_INFO, LOG_NOTICE,
                                  LOG_WARNING, LOG_ERR};

void
log_vmsg(log_severity_t sev, const char *func, const char *fmt, va_list ap)
{
  if (!log_is_enabled(sev))
    return;
  char line[LOG_LINE_MAX];
  struct timeval tv;
  struct tm tm;
  gettimeofday(&tv, NULL);
  localtime_r(&tv.tv_sec, &tm);
  size_t hdr = strftime(line, sizeof(line), "%b %d %H:%M:%S", &tm);
  int n = snprintf(line + hdr, sizeof(line) - hdr, ".%03d [%s] ",
                   (int)(tv.tv_usec / 1000), log_severity_name(sev));
  size_t body_off = hdr + (size_t)n;
  size_t off = body_off;
  /* tor prefixes debug/info messages with the function that logged them. */
  if (sev <= LOG_SEV_INFO && func)
    off += (size_t)snprintf(line + off, sizeof(line) - off, "%s(): ", func);
  int m = vsnprintf(line + off, sizeof(line) - off - 1, fmt, ap);
  if (m < 0)
    m = 0;
  off += (size_t)m;
  if (off > sizeof(line) - 2)
    off = sizeof(line) - 2;
  /* Never let a message (which may hold network data) break the line. */
  for (size_t i = body_off; i < off; i++)
    if (line[i] == '\n' || line[i] == '\r')
      line[i] = ' ';
  line[off++] = '\n';
  line[off] = '\0';

  if (hook_fn && sev >= hook_min) {
    line[off - 1] = '\0';
    hook_fn(sev, line + body_off, hook_arg);
    line[off - 1] = '\n';
  }
  if (n_dests == 0) {
    if ((int)sev >= default_min)
      write_all(2, line, off);
    return;
  }
  for (int i = 0; i < n_dests; i++) {
    if (sev < dests[i].min || sev > dests[i].max)
      continue;
    if (dests[i].kind == DEST_SYSLOG)
      syslog(syslog_prio[sev], "%s", line + body_off);
    else
      write_all(dests[i].fd, line, off);
  }
}

void
log_msg(log_severity_t sev, const char *func, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  log_vmsg(sev, func, fmt, ap);
  va_end(ap);
}
