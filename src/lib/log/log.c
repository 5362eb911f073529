/* SPDX-License-Identifier: BSD-3-Clause */
/* log.c -- tor-style log destinations and formatting (see log.h).
 *
 * Destinations are a small fixed table. Each holds, per severity, the set
 * of domains it takes (a bit per domain), so "[~net]info notice stderr"
 * is masks[info] = all but net, masks[notice..err] = all. A message is
 * classified into its domain only when that matters (some destination
 * takes part of the domains at its severity, or LogMessageDomains is on);
 * it is formatted once and
 * written with a single write() per destination so lines from different
 * events never interleave. Scrubbing (SafeLogging) rewrites the formatted
 * message once, before any destination sees it. A file destination
 * remembers whether this process created it (O_EXCL), so that a daemon
 * switching user hands over its own new log files and nothing else.
 */
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <errno.h>
#include <stdint.h>
#include <strings.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_MAX_DESTS 16
#define LOG_LINE_MAX 4096

typedef enum { DEST_FD, DEST_FILE, DEST_SYSLOG } dest_kind_t;

#define DOMAINS_ALL ((1u << LOG_N_DOMAINS) - 1)

typedef struct {
  dest_kind_t kind;
  uint32_t masks[LOG_SEV_ERR + 1]; /* per severity: domains taken */
  int fd;
  char *path;
  int created; /* this process created the file (see log_give_created_files) */
} log_dest_t;

static log_dest_t dests[LOG_MAX_DESTS];
static int n_dests;
static log_hook_fn hook_fn;
static void *hook_arg;
static log_bug_fn bug_fn;
static void *bug_arg;
static int in_bug_hook;
static log_severity_t hook_min = LOG_SEV_ERR;
static int default_min = LOG_SEV_NOTICE;
static int scrub_addresses;
static char syslog_ident[64] = "pctor";
static log_domain_fn domain_fn;
static int message_domains;

static const char *const domain_names[LOG_N_DOMAINS] = {
  "GENERAL", "CRYPTO", "NET", "CONFIG", "FS", "PROTOCOL", "MM", "HTTP",
  "APP", "CONTROL", "CIRC", "REND", "BUG", "DIR", "DIRSERV", "OR", "EDGE",
  "ACCT", "HIST", "HANDSHAKE", "HEARTBEAT", "CHANNEL", "SCHED", "GUARD",
  "CONSDIFF", "DOS", "PROCESS", "PT", "BTRACK", "MESG"};

int
log_domain_parse(const char *name, size_t len)
{
  for (int i = 0; i < LOG_N_DOMAINS; i++)
    if (strlen(domain_names[i]) == len &&
        !strncasecmp(domain_names[i], name, len))
      return i;
  return -1;
}

const char *
log_domain_name(log_domain_t d)
{
  if ((int)d < 0 || d >= LOG_N_DOMAINS)
    return "GENERAL";
  return domain_names[d];
}

void
log_set_domain_classifier(log_domain_fn fn)
{
  domain_fn = fn;
}

void
log_set_message_domains(int on)
{
  message_domains = on;
}

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

/* Parse the domain list of "[net,~mm]" (without brackets, len bytes) into
 * a mask: named domains, all but the ~named ones, or * for all. */
static int
parse_domains(const char *s, size_t len, uint32_t *mask, char **err_out,
              const char *spec)
{
  uint32_t yes = 0, no = 0;
  int any_yes = 0, any_no = 0;
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && s[j] != ',')
      j++;
    const char *name = s + i;
    size_t n = j - i;
    int neg = n > 0 && name[0] == '~';
    if (neg) {
      name++;
      n--;
    }
    if (n == 1 && name[0] == '*') {
      if (neg)
        no = DOMAINS_ALL;
      else
        yes = DOMAINS_ALL;
    } else {
      int d = log_domain_parse(name, n);
      if (d < 0) {
        *err_out = pc_asprintf("Log \"%s\": unknown logging domain '%.*s' "
                               "(tor's domains: general, crypto, net, "
                               "config, fs, protocol, mm, http, app, "
                               "control, circ, rend, bug, dir, dirserv, or, "
                               "edge, acct, hist, handshake, heartbeat, "
                               "channel, sched, guard, consdiff, dos, "
                               "process, pt, btrack, mesg; * for all, ~ to "
                               "exclude)", spec, (int)n, name);
        return -1;
      }
      if (neg)
        no |= 1u << d;
      else
        yes |= 1u << d;
    }
    if (neg)
      any_no = 1;
    else
      any_yes = 1;
    i = j + 1;
  }
  /* As tor: only exclusions ("[~net]") mean all but those. */
  if (!any_yes && any_no)
    yes = DOMAINS_ALL;
  *mask = yes & ~no & DOMAINS_ALL;
  return 0;
}

static int
is_destination_word(const char *w, size_t n)
{
  return (n == 6 && (!strncmp(w, "stderr", 6) || !strncmp(w, "stdout", 6) ||
                     !strncmp(w, "syslog", 6))) ||
         (n == 4 && !strncmp(w, "file", 4));
}

/* Split spec into its severity ranges (each optionally limited to domains),
 * kind and optional path; does not open anything. */
static int
parse_spec(const char *spec, log_dest_t *out, char **err_out)
{
  while (*spec == ' ' || *spec == '\t')
    spec++;
  memset(out->masks, 0, sizeof(out->masks));
  const char *sp = spec;
  int n_ranges = 0;
  for (;;) {
    while (*sp == ' ' || *sp == '\t')
      sp++;
    size_t n = strcspn(sp, " \t");
    if (n == 0 || is_destination_word(sp, n))
      break;
    uint32_t mask = DOMAINS_ALL;
    const char *range = sp;
    size_t rlen = n;
    if (*sp == '[') {
      const char *close = memchr(sp, ']', n);
      if (!close) {
        *err_out = pc_asprintf("Log \"%s\": a domain list needs its ']' "
                               "right before the severity, without spaces "
                               "(\"[net,circ]info\")", spec);
        return -1;
      }
      if (parse_domains(sp + 1, (size_t)(close - sp - 1), &mask, err_out,
                        spec) < 0)
        return -1;
      range = close + 1;
      rlen = n - (size_t)(range - sp);
    }
    log_severity_t lo, hi;
    if (parse_range(range, rlen, &lo, &hi) < 0) {
      *err_out = pc_asprintf("Log \"%s\": unknown severity '%.*s' (use "
                             "debug, info, notice, warn or err, or a range "
                             "like info-warn, optionally after logging "
                             "domains like [net,~mm])", spec, (int)n, sp);
      return -1;
    }
    for (int v = lo; v <= (int)hi; v++)
      out->masks[v] |= mask;
    n_ranges++;
    sp += n;
  }
  if (!n_ranges || !*sp) {
    *err_out = pc_asprintf("Log \"%s\": expected SEVERITY... DESTINATION",
                           spec);
    return -1;
  }
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
  d.created = 0;
  if (d.kind == DEST_FILE) {
    d.path = pc_strdup(d.path);
    /* O_EXCL first, to know whether the file is ours to hand over. */
    d.fd = open(d.path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC,
                0640);
    if (d.fd >= 0)
      d.created = 1;
    else if (errno == EEXIST)
      d.fd = open(d.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (d.fd < 0) {
      *err_out = pc_asprintf("Couldn't open log file \"%s\": %s", d.path,
                             strerror(errno));
      free(d.path);
      return -1;
    }
  } else if (d.kind == DEST_SYSLOG) {
    openlog(syslog_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
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

int
log_reopen_files(void)
{
  int failed = 0;
  for (int i = 0; i < n_dests; i++) {
    if (dests[i].kind != DEST_FILE)
      continue;
    int fd = open(dests[i].path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                  0640);
    if (fd < 0) {
      /* Keep writing to the old file rather than losing logs, but say so
       * loudly: after a rotation the old file may be gone from view. */
      int e = errno;
      failed++;
      log_msg(LOG_SEV_WARN, __func__, "Could not reopen log file \"%s\": "
              "%s. Still writing to the file that was open before, which "
              "log rotation may have renamed or deleted; fix the file's "
              "permissions (it must be writable by the user pctor runs "
              "as) and send SIGHUP again.", dests[i].path, strerror(e));
      continue;
    }
    close(dests[i].fd);
    dests[i].fd = fd;
  }
  return failed;
}

int
log_give_created_files(uid_t uid, gid_t gid)
{
  int given = 0;
  for (int i = 0; i < n_dests; i++) {
    log_dest_t *d = &dests[i];
    struct stat st;
    if (d->kind != DEST_FILE || !d->created || d->fd < 0)
      continue;
    /* Only a plain file, still ours and with no other name. */
    if (fstat(d->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        st.st_uid != geteuid())
      continue;
    if (fchown(d->fd, uid, gid) < 0) {
      log_msg(LOG_SEV_WARN, __func__, "Could not give log file \"%s\" to "
              "uid %lu: %s. pctor will not be able to reopen it on SIGHUP.",
              d->path, (unsigned long)uid, strerror(errno));
      return -1;
    }
    given++;
  }
  return given;
}

void
log_set_all_debug(void)
{
  for (int i = 0; i < n_dests; i++)
    for (int v = 0; v <= LOG_SEV_ERR; v++)
      dests[i].masks[v] = DOMAINS_ALL;
  default_min = LOG_SEV_DEBUG;
}

void
log_set_scrub(int on)
{
  scrub_addresses = on;
}

void
log_set_syslog_ident(const char *tag)
{
  if (tag && *tag)
    snprintf(syslog_ident, sizeof(syslog_ident), "pctor-%s", tag);
  else
    snprintf(syslog_ident, sizeof(syslog_ident), "pctor");
}

const char *
log_syslog_ident(void)
{
  return syslog_ident;
}

static int
is_hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* Whether text[i..j) is an IPv4 address (four 1-3 digit numbers). */
static int
looks_ipv4(const char *t, size_t i, size_t j)
{
  int dots = 0, digits = 0;
  for (size_t k = i; k < j; k++) {
    if (t[k] == '.') {
      if (!digits)
        return 0;
      dots++;
      digits = 0;
    } else if (t[k] >= '0' && t[k] <= '9') {
      if (++digits > 3)
        return 0;
    } else {
      return 0;
    }
  }
  return dots == 3 && digits > 0;
}

/* Whether text[i..j) looks like an IPv6 address: hex digits and colons
 * (and an IPv4 tail), with "::" or at least five colons, so that times
 * such as 12:30:00 are left alone. */
static int
looks_ipv6(const char *t, size_t i, size_t j)
{
  int colons = 0, dcolon = 0;
  for (size_t k = i; k < j; k++) {
    if (t[k] == ':') {
      colons++;
      if (k + 1 < j && t[k + 1] == ':')
        dcolon = 1;
    } else if (!is_hex(t[k]) && t[k] != '.') {
      return 0;
    }
  }
  return colons >= 2 && (dcolon || colons >= 5);
}

/* Copy in[0..len) to out (cap bytes) with IP addresses replaced by
 * "[scrubbed]". Returns the new length. */
static size_t
scrub(const char *in, size_t len, char *out, size_t cap)
{
  static const char tag[] = "[scrubbed]";
  size_t o = 0, i = 0;
  while (i < len && o + sizeof(tag) < cap) {
    size_t j = i;
    while (j < len && (is_hex(in[j]) || in[j] == '.' || in[j] == ':'))
      j++;
    int boundary = i == 0 || !((in[i - 1] >= 'a' && in[i - 1] <= 'z') ||
                               (in[i - 1] >= 'A' && in[i - 1] <= 'Z') ||
                               (in[i - 1] >= '0' && in[i - 1] <= '9'));
    if (j > i && j - i <= 64 && boundary) {
      /* An IPv4 address may be followed by ":PORT"; keep the port. */
      size_t e = j;
      while (e > i && !looks_ipv4(in, i, e) && !looks_ipv6(in, i, e))
        e--;
      if (e > i) {
        memcpy(out + o, tag, sizeof(tag) - 1);
        o += sizeof(tag) - 1;
        i = e;
        continue;
      }
    }
    if (j == i)
      j = i + 1;
    while (i < j && o + 1 < cap)
      out[o++] = in[i++];
  }
  return o;
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
    if (dests[i].masks[sev])
      return 1;
  return 0;
}

/* Whether messages at sev must be classified: some destination takes only
 * part of the domains at that severity, or domains are printed. */
static int
need_domain(log_severity_t sev)
{
  if (message_domains)
    return 1;
  for (int i = 0; i < n_dests; i++)
    if (dests[i].masks[sev] && dests[i].masks[sev] != DOMAINS_ALL)
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

void
log_write_sigsafe(const char *msg, size_t len)
{
  int wrote = 0;
  for (int i = 0; i < n_dests; i++)
    if (dests[i].kind != DEST_SYSLOG && dests[i].fd >= 0 &&
        dests[i].masks[LOG_SEV_ERR]) {
      write_all(dests[i].fd, msg, len);
      wrote = 1;
    }
  if (!wrote)
    write_all(2, msg, len);
}

int
log_file_paths(const char **out, int max)
{
  int n = 0;
  for (int i = 0; i < n_dests && n < max; i++)
    if (dests[i].kind == DEST_FILE && dests[i].path)
      out[n++] = dests[i].path;
  return n;
}

static const int syslog_prio[] = {LOG_DEBUG, LOG_INFO, LOG_NOTICE,
                                  LOG_WARNING, LOG_ERR};

void
log_vmsg_at(log_severity_t sev, const char *file, const char *func,
            const char *fmt, va_list ap)
{
  if ((int)sev < 0 || sev > LOG_SEV_ERR)
    sev = LOG_SEV_ERR;
  if (!log_is_enabled(sev))
    return;
  log_domain_t dom = LOG_DOM_GENERAL;
  if (domain_fn && need_domain(sev)) {
    dom = domain_fn(file ? file : "", func ? func : "");
    if ((int)dom < 0 || dom >= LOG_N_DOMAINS)
      dom = LOG_DOM_GENERAL;
  }
  uint32_t dbit = 1u << dom;
  int wanted = hook_fn && sev >= hook_min;
  for (int i = 0; i < n_dests && !wanted; i++)
    wanted = (dests[i].masks[sev] & dbit) != 0;
  if (n_dests == 0 && (int)sev >= default_min)
    wanted = 1;
  if (!wanted)
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
  if (message_domains)
    off += (size_t)snprintf(line + off, sizeof(line) - off, "{%s} ",
                            log_domain_name(dom));
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
  if (scrub_addresses && sev > LOG_SEV_DEBUG) {
    char body[LOG_LINE_MAX];
    size_t blen = scrub(line + body_off, off - body_off, body, sizeof(body));
    if (blen > sizeof(line) - 2 - body_off)
      blen = sizeof(line) - 2 - body_off;
    memcpy(line + body_off, body, blen);
    off = body_off + blen;
  }
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
    if (!(dests[i].masks[sev] & dbit))
      continue;
    if (dests[i].kind == DEST_SYSLOG)
      syslog(syslog_prio[sev], "%s", line + body_off);
    else
      write_all(dests[i].fd, line, off);
  }
}

void
log_msg_at(log_severity_t sev, const char *file, const char *func,
           const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  log_vmsg_at(sev, file, func, fmt, ap);
  va_end(ap);
}

int
log_set_bug_hook(log_bug_fn fn, void *arg)
{
  if (fn && bug_fn && (fn != bug_fn || arg != bug_arg)) {
    log_warn("A second bug hook was refused: one is set already");
    return -1;
  }
  bug_fn = fn;
  bug_arg = arg;
  return 0;
}

void
log_bug_at(const char *file, const char *func, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log_msg_at(LOG_SEV_WARN, file, func, "Bug: %s (in %s)", msg,
             func ? func : "?");
  if (bug_fn && !in_bug_hook) {
    in_bug_hook = 1;
    bug_fn(msg, bug_arg);
    in_bug_hook = 0;
  }
}
