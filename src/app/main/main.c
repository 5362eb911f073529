/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c -- the pctor daemon's entry point: command line, options,
 * logging, start-up order, signals.
 *
 * Start-up order (each step needs the previous ones):
 *   1. parse the command line; --help, --version, --list-options and
 *      --keygen-family exit here (--keygen, --list-fingerprint and
 *      --key-expiration after step 2; --keygen asks for passphrases on
 *      the terminal or reads --passphrase-fd, as tor);
 *   2. read and validate the torrc (errors name option and line and exit
 *      1); --verify-config exits here;
 *   3. apply the Log lines (files are opened as the starting user, so a
 *      log file in a root-only directory still works after User);
 *   4. RunAsDaemon: detach, but keep the original process waiting so that
 *      it can exit with our start-up status;
 *   5. crypto, the event loop, the signal handlers;
 *   6. app_start(): bind ports and read keys, still privileged;
 *   7. PidFile (our final pid, written before losing the right to);
 *   8. User: hand DataDirectory over, switch user, drop capabilities;
 *   9. RunAsDaemon: stdio to /dev/null, release the original process;
 *  10. Sandbox 1, then the handshake worker threads (app_start_workers():
 *      a thread started before Landlock would escape its path rules);
 *  11. tell a service manager (Type=notify, $NOTIFY_SOCKET) we are ready;
 *  12. run the loop until SIGTERM/SIGINT, then clean up and exit 0.
 * SIGHUP re-reads the same torrc and command line; a bad new configuration
 * is logged and the old one kept. SIGUSR1 logs statistics. Options that
 * cannot change while running keep their old values, with a warning.
 * The ControlPort's SETCONF/RESETCONF (an overlay on the torrc's lines as
 * last read, forgotten on SIGHUP as in tor), LOADCONF (new torrc lines)
 * and SAVECONF (the running configuration written to the torrc) are
 * here too, since main.c owns the running configuration; unlike SIGHUP
 * they refuse (553) a change that needs a restart.
 */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <termios.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/config/log_domains.h"
#include "app/config/options.h"
#include "app/main/daemon.h"
#include "app/main/privdrop.h"
#include "app/main/sdnotify.h"
#include "app/main/start.h"
#include "feature/relay/family_keys.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/s2k.h"
#include "lib/fs/files.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/allocator.h"
#include "lib/sandbox/sandbox.h"

#ifndef PCTOR_SYSCONFDIR
#define PCTOR_SYSCONFDIR "/etc"
#endif
#define DEFAULT_TORRC PCTOR_SYSCONFDIR "/pctor/torrc"

/* The daemon's state: only main.c's signal handlers use it. */
static struct {
  evloop_t *loop;
  options_cmdline_t *cmdline;
  options_t *opts;
  evloop_signal_t *sig_hup, *sig_term, *sig_int, *sig_usr1, *sig_usr2;
  evloop_timer_t *shutdown_timer; /* SIGINT: ShutdownWaitLength */
  evloop_timer_t *watchdog_timer; /* WATCHDOG=1 to the service manager */
  int debug_logging;              /* SIGUSR2 switched logs to debug */
  /* The configuration's sources as last read (start-up, SIGHUP) or set
   * (LOADCONF, SAVECONF), and the controller's SETCONF overlay: SETCONF
   * changes the configuration pctor runs with, not a torrc edited
   * since. */
  conf_line_t *defaults_lines, *file_lines, *overlay;
} daemon_state;

static void
print_version(void)
{
  printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
  printf("Libraries: Libevent %s, %s, malloc %s\n", evloop_library_version(),
         crypt_library_version(), allocator_version());
  printf("License: BSD-3-Clause (see the file LICENSE)\n");
}

/* --list-modules, in tor's format: the optional parts of tor, and
 * pctor's own features (all built in). */
static void
print_modules(void)
{
  printf("relay: yes\n");
  printf("dirauth: no\n");
  printf("dircache: yes\n");
  printf("pow: no\n");
  printf("pctcp: yes\n");
  printf("ipsec: yes\n");
  printf("conflux: yes\n");
  printf("measureme: yes\n");
}

/* --library-versions, in tor's layout (pctor knows the run-time versions
 * only). */
static void
print_library_versions(void)
{
  printf("%s version %s.\n", PACKAGE_NAME, PACKAGE_VERSION);
  printf("Library versions\tRuntime\n");
  printf("Libevent\t\t%s\n", evloop_library_version());
  printf("OpenSSL \t\t%s\n", crypt_library_version());
  printf("malloc  \t\t%s%s\n", allocator_version(),
         allocator_check() < 0 ? " (linked, but not serving malloc)" : "");
}

/* The console level while no Log line is configured (--hush, --quiet). */
static void
restore_console_level(void)
{
  int q = daemon_state.cmdline ? daemon_state.cmdline->quiet : 0;
  log_set_default_min(q == 2 ? LOG_SEV_NONE
                      : q == 1 ? LOG_SEV_WARN
                               : LOG_SEV_NOTICE);
}

/* DisableDebuggerAttachment, as tor: no ptrace attach, no core dump. */
static void
apply_dumpable(const options_t *opts)
{
  if (opts->disable_debugger_attachment &&
      prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    log_warn("Could not disable debugger attachment: prctl failed");
}

static void cleanup(void);

/* Allow the directory that holds path (made absolute against cwd). */
static void
allow_parent(sandbox_cfg_t *cfg, const char *path, const char *cwd,
             int write)
{
  if (!path || !*path)
    return;
  char *abs = path[0] == '/' || !cwd ? pc_strdup(path)
                                     : pc_asprintf("%s/%s", cwd, path);
  char *dir = dirname(abs);
  if (write)
    sandbox_cfg_allow_write(cfg, dir);
  else
    sandbox_cfg_allow_read(cfg, dir);
  free(abs);
}

/* Sandbox 1 (lib/sandbox): the paths pctor may still use, then the
 * filter. Called once everything privileged is done. 0, or -1 (logged). */
static int
start_sandbox(const options_cmdline_t *cl, const options_t *opts)
{
  sandbox_cfg_t *cfg = sandbox_cfg_new();
  sandbox_cfg_allow_write(cfg, opts->data_directory);
  sandbox_cfg_allow_write(cfg, opts->key_directory);
  if (opts->cache_directory)
    sandbox_cfg_allow_write(cfg, opts->cache_directory);
  /* FamilyId's keys are read again at each SIGHUP. */
  if (opts->family_key_directory)
    sandbox_cfg_allow_read(cfg, opts->family_key_directory);
  /* GeoIP files are read again on SIGHUP when their paths change. */
  if (opts->geoip_file)
    sandbox_cfg_allow_read(cfg, opts->geoip_file);
  if (opts->geoip_v6_file)
    sandbox_cfg_allow_read(cfg, opts->geoip_v6_file);
  const char *logs[16];
  int n = log_file_paths(logs, 16);
  for (int i = 0; i < n; i++) /* reopened after rotation: the directory */
    allow_parent(cfg, logs[i], NULL, 1);
  allow_parent(cfg, opts->pid_file, NULL, 1);
  allow_parent(cfg, opts->cookie_auth_file, NULL, 1);
  allow_parent(cfg, opts->control_port_write_to_file, NULL, 1);
  if (opts->control_socket && strcmp(opts->control_socket, "0")) {
    char *sock = pc_strdup(opts->control_socket);
    sock[strcspn(sock, " \t")] = '\0';
    allow_parent(cfg, sock, NULL, 1);
    free(sock);
  }
  /* SIGHUP reads the torrcs again, SAVECONF writes the torrc (beside
   * its old copy); an exit reads its resolv.conf. */
  allow_parent(cfg, cl->torrc, cl->cwd, 1);
  allow_parent(cfg, cl->defaults_torrc, cl->cwd, 0);
  sandbox_cfg_allow_read(cfg, opts->server_dns_resolv_conf_file);
  static const char *const system_read[] = {
      "/etc", "/usr", "/lib", "/lib64", "/dev/urandom", "/dev/random",
      "/proc/self", "/proc/sys/net"};
  for (size_t i = 0; i < sizeof(system_read) / sizeof(system_read[0]); i++)
    sandbox_cfg_allow_read(cfg, system_read[i]);
  sandbox_cfg_allow_write(cfg, "/dev/null");
  char *note = NULL, *err = NULL;
  int r = sandbox_install(cfg, &note, &err);
  sandbox_cfg_free(cfg);
  if (r < 0) {
    log_err("Sandbox: %s", err);
    free(err);
    return -1;
  }
  if (note) {
    log_notice("Sandbox: %s.", note);
    free(note);
  }
  log_notice("Sandbox: the system-call filter is active.");
  return 0;
}

/* For the key commands: crypto ready and DataDirectory usable (owned by
 * us, or by User after a relay handed it over). 0, or -1 with *err. */
static int
keys_dir_usable(const options_t *opts, char **err)
{
  if (crypt_global_init() < 0) {
    *err = pc_strdup("the crypto library could not be initialised");
    return -1;
  }
  if (opts->user && privdrop_check(opts->user, err) < 0)
    return -1;
  return fs_check_private_dir_mode(opts->data_directory,
                                   opts->data_directory_group_readable, err);
}

/* --list-fingerprint [rsa|ed25519], as tor: load (or make) the keys in
 * DataDirectory and print "NICKNAME FINGERPRINT" (the RSA fingerprint in
 * groups of four hex digits, or the base64 Ed25519 identity). */
static int
list_fingerprint(const options_cmdline_t *cl, const options_t *opts)
{
  const char *type = *cl->command_arg ? cl->command_arg : "rsa";
  char *err = NULL;
  int ed = !strcmp(type, "ed25519");
  if (!ed && strcmp(type, "rsa")) {
    fprintf(stderr, "pctor: --list-fingerprint: '%s' is not rsa or "
            "ed25519\n", type);
    cleanup();
    return 1;
  }
  if (keys_dir_usable(opts, &err) < 0) {
    log_err("DataDirectory %s: %s", opts->data_directory,
            err ? err : "unusable");
    free(err);
    cleanup();
    return 1;
  }
  router_keys_config_t cfg;
  app_keys_config(opts, &cfg);
  relay_keys_t *keys = router_keys_load_or_create(opts->data_directory,
                                                  &cfg, time(NULL), &err);
  if (!keys) {
    log_err("%s", err ? err : "Could not load or create keys");
    free(err);
    cleanup();
    return 1;
  }
  char *fp = ed ? router_keys_format_ed25519_id(opts->nickname,
                                                keys->ed_identity.pub)
                : router_keys_format_rsa_fingerprint(opts->nickname,
                                                     keys->rsa_id_digest,
                                                     1);
  printf("%s\n", fp);
  free(fp);
  router_keys_free(keys);
  cleanup();
  return 0;
}

/* Where --keygen's passphrases come from, as in tor: --passphrase-fd N
 * gives everything read from N up to its end, verbatim (a trailing
 * newline is part of it); tor reads the fd for every passphrase it needs,
 * so a second one (--newpass on an encrypted key) is empty and fails.
 * Without it, a terminal on stdin is asked (echo off; a new passphrase
 * twice, empty: do not encrypt); with neither, a new master key is stored
 * unencrypted and an encrypted one cannot be opened. */
#define PASSPHRASE_MAX 1024
typedef struct {
  int fd;
} pass_src_t;

static char *
tty_passphrase(const char *prompt, size_t *len)
{
  FILE *tty = fopen("/dev/tty", "r+");
  if (!tty)
    return NULL;
  setvbuf(tty, NULL, _IONBF, 0); /* no copy of the passphrase in stdio */
  struct termios old, quiet;
  int have = tcgetattr(fileno(tty), &old) == 0;
  if (have) {
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
  }
  fputs(prompt, tty);
  fflush(tty);
  char *buf = pc_zalloc(PASSPHRASE_MAX + 2);
  char *r = fgets(buf, PASSPHRASE_MAX + 2, tty);
  if (have)
    tcsetattr(fileno(tty), TCSAFLUSH, &old);
  fputs("\n", tty);
  fclose(tty);
  if (!r) {
    free(buf);
    return NULL;
  }
  size_t n = strlen(buf);
  if (n && buf[n - 1] == '\n')
    buf[--n] = '\0';
  *len = n;
  return buf;
}

static char *
keygen_passphrase(void *arg, int new_pass, size_t *len, const char **why)
{
  pass_src_t *src = arg;
  *len = 0;
  if (src->fd >= 0) {
    char *buf = pc_zalloc(PASSPHRASE_MAX + 1);
    size_t n = 0;
    for (;;) {
      ssize_t r = read(src->fd, buf + n, PASSPHRASE_MAX + 1 - n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0) {
        *why = "cannot read the passphrase file descriptor";
        free(buf);
        return NULL;
      }
      if (r == 0)
        break;
      n += (size_t)r;
      if (n > PASSPHRASE_MAX) {
        pc_memwipe(buf, PASSPHRASE_MAX + 1);
        free(buf);
        *why = "the passphrase is longer than 1024 bytes";
        return NULL;
      }
    }
    if (n == 0) {
      free(buf);
      *why = "--passphrase-fd gave an empty passphrase";
      return NULL;
    }
    *len = n;
    return buf;
  }
  if (!isatty(STDIN_FILENO)) {
    if (new_pass)
      return pc_strdup(""); /* store unencrypted */
    *why = "no --passphrase-fd and no terminal";
    return NULL;
  }
  if (!new_pass) {
    char *pw = tty_passphrase("Enter passphrase for master key:", len);
    if (!pw)
      *why = "no passphrase was entered";
    return pw;
  }
  size_t len2 = 0;
  char *a = tty_passphrase("Enter new passphrase:", len);
  char *b = a ? tty_passphrase("Re-enter new passphrase:", &len2) : NULL;
  if (!a || !b || *len != len2 || memcmp(a, b, len2) != 0) {
    if (a)
      pc_memwipe(a, *len);
    if (b)
      pc_memwipe(b, len2);
    free(a);
    free(b);
    *why = a && b ? "the passphrases do not match"
                  : "no passphrase was entered";
    return NULL;
  }
  pc_memwipe(b, len2);
  free(b);
  return a;
}

/* --keygen (tor's): a new signing key and certificate from the master
 * identity key (opened with a passphrase if it is encrypted), made first
 * if there is no identity at all; --newpass stores it again under a new
 * passphrase. */
static int
keygen(const options_cmdline_t *cl, const options_t *opts)
{
  char *err = NULL, *out = NULL;
  router_keys_config_t cfg;
  pass_src_t src = {cl->passphrase_fd};
  app_keys_config(opts, &cfg);
  cfg.get_passphrase = keygen_passphrase;
  cfg.passphrase_arg = &src;
  cfg.no_passphrase = cl->no_passphrase;
  cfg.newpass = cl->newpass;
  if (keys_dir_usable(opts, &err) < 0 ||
      router_keys_keygen(opts->data_directory, &cfg, time(NULL), &out,
                         &err) < 0) {
    log_err("--keygen: %s", err ? err : "failed");
    free(err);
    cleanup();
    return 1;
  }
  if (out)
    fputs(out, stdout);
  free(out);
  cleanup();
  return 0;
}

/* --key-expiration [sign] [--format iso8601|timestamp], as tor. */
static int
key_expiration(const options_cmdline_t *cl, const options_t *opts)
{
  if (strcmp(cl->command_arg, "sign")) {
    fprintf(stderr, "No valid argument to --key-expiration found!\n"
            "Currently recognised arguments are: 'sign'\n");
    cleanup();
    return 1;
  }
  char *err = NULL;
  router_keys_config_t cfg;
  app_keys_config(opts, &cfg);
  relay_keys_t *keys = NULL;
  if (keys_dir_usable(opts, &err) == 0)
    keys = router_keys_load_or_create(opts->data_directory, &cfg,
                                      time(NULL), &err);
  if (!keys) {
    log_err("%s", err ? err : "Could not load or create keys");
    free(err);
    cleanup();
    return 1;
  }
  char *line = router_keys_key_expiration(
      keys, opts->data_directory, &cfg,
      cl->key_format && !strcmp(cl->key_format, "timestamp"));
  fputs(line, stdout);
  free(line);
  router_keys_free(keys);
  cleanup();
  return 0;
}

/* Replace the log destinations by the Log lines (none: the default,
 * notice and above to stderr), with SafeLogging and SyslogIdentityTag
 * from opts. Returns 0, or -1 with *err_out set, in which case the
 * destinations applied before the bad line remain. */
static int
apply_logs(const options_t *opts, char **err_out)
{
  const options_strlist_t *logs = &opts->logs;
  log_set_scrub(opts->safe_logging != 0);
  log_set_message_domains(opts->log_message_domains);
  log_set_syslog_ident(opts->syslog_identity_tag);
  restore_console_level();
  log_reset_destinations();
  for (int i = 0; i < logs->n; i++)
    if (log_parse_destination(logs->v[i], err_out) < 0)
      return -1;
  return 0;
}

/* Make new_opts the running configuration (it is taken over: freed on
 * failure). strict (the controller): refuse a change to an option that
 * cannot change while running, instead of keeping its old value with a
 * warning (SIGHUP). Logs are applied first, since they can be put back if
 * something later fails. Returns 0, or a control reply code (553) with
 * *err_out. */
static int
reconfigure_to(options_t *new_opts, int strict, char **err_out)
{
  char *err = NULL;
  if (strict) {
    char *names = options_non_reloadable_changes(daemon_state.opts,
                                                 new_opts);
    if (names) {
      *err_out = pc_asprintf("Transition not allowed: %s cannot be changed "
                             "while pctor is running (set it in the torrc, "
                             "or SAVECONF, and restart pctor)", names);
      free(names);
      options_free(new_opts);
      return 553;
    }
  } else {
    options_keep_non_reloadable(daemon_state.opts, new_opts);
  }

  const option_def_t *log_def = options_find("Log");
  /* After SIGUSR2 (debug everywhere), SIGHUP applies the Log lines again
   * even when they did not change, as tor does. */
  int logs_changed = !options_equal(daemon_state.opts, new_opts, log_def) ||
                     (!strict && daemon_state.debug_logging) ||
                     daemon_state.opts->safe_logging !=
                         new_opts->safe_logging ||
                     !options_equal(daemon_state.opts, new_opts,
                                    options_find("SyslogIdentityTag"));
  if (logs_changed) {
    if (apply_logs(new_opts, &err) < 0) {
      char *err2 = NULL;
      if (apply_logs(daemon_state.opts, &err2) < 0)
        free(err2);
      *err_out = pc_asprintf("Could not apply the new Log lines (%s)%s",
                             err, sandbox_is_active()
                                      ? "; with Sandbox 1, log files can "
                                        "only be opened in the directories "
                                        "they had at start-up"
                                      : "");
      free(err);
      options_free(new_opts);
      return 553;
    }
    daemon_state.debug_logging = 0;
  } else if (!strict) {
    log_reopen_files();
  }

  if (app_reconfigure(daemon_state.opts, new_opts) < 0) {
    if (logs_changed && apply_logs(daemon_state.opts, &err) < 0)
      free(err);
    *err_out = pc_strdup("Could not apply the new configuration");
    options_free(new_opts);
    return 553;
  }
  options_free(daemon_state.opts);
  daemon_state.opts = new_opts;
  apply_dumpable(new_opts);
  return 0;
}

/* An options error without start-up's trailing " Failing.". */
static void
strip_failing(char *err)
{
  size_t len = strlen(err);
  if (len > 9 && !strcmp(err + len - 9, " Failing."))
    err[len - 9] = '\0';
}

static void
reload_config(void)
{
  options_t *new_opts = NULL;
  conf_line_t *defaults = NULL, *file = NULL;
  char *err = NULL;
  const options_cmdline_t *cl = daemon_state.cmdline;
  log_notice("Received reload signal (hup). Reloading config.");
  if (options_read_files(cl, &defaults, &file, &err) < 0 ||
      options_from_sources(defaults, file, cl->options, cl->cwd, &new_opts,
                           &err) < 0) {
    strip_failing(err);
    log_warn("%s", err);
    if (sandbox_is_active() && strstr(err, "Permission denied"))
      log_warn("With Sandbox 1, pctor can only read files in the "
               "directories allowed at start-up (see Sandbox in pctor(1)).");
    log_warn("Reloading the configuration failed; keeping the old one.");
    free(err);
    conf_lines_free(defaults);
    conf_lines_free(file);
    return;
  }
  if (reconfigure_to(new_opts, 0, &err) != 0) {
    log_warn("%s; keeping the old configuration.", err);
    free(err);
    conf_lines_free(defaults);
    conf_lines_free(file);
    return;
  }
  /* As tor: the torrc on disk replaces what controllers changed. */
  conf_lines_free(daemon_state.defaults_lines);
  conf_lines_free(daemon_state.file_lines);
  conf_lines_free(daemon_state.overlay);
  daemon_state.defaults_lines = defaults;
  daemon_state.file_lines = file;
  log_notice("Configuration reloaded.");
}

/* SIGHUP. The service manager hears of the reload and of its end (whether
 * the new configuration was taken or the old one kept). */
static void
on_hup(void *arg)
{
  (void)arg;
  sdnotify_send("RELOADING=1\nSTATUS=Reloading the configuration");
  reload_config();
  sdnotify_send("READY=1\nSTATUS=Running");
}

static void
on_watchdog(void *arg)
{
  (void)arg;
  sdnotify_send("WATCHDOG=1");
}

/* ---- the ControlPort's SETCONF, RESETCONF, LOADCONF, SAVECONF ---- */

/* Options from the kept files' lines (file: instead of the torrc's), the
 * command line and overlay. Returns 0 or code with *err_out. */
static int
ctl_build(const conf_line_t *file, const conf_line_t *overlay, int code,
          const char *prefix, options_t **out, char **err_out)
{
  const options_cmdline_t *cl = daemon_state.cmdline;
  conf_line_t *cmd = options_overlay_cmdline(cl->options, overlay);
  char *err = NULL;
  int r = options_from_sources(daemon_state.defaults_lines, file, cmd,
                               cl->cwd, out, &err);
  conf_lines_free(cmd);
  if (r < 0) {
    strip_failing(err);
    *err_out = pc_asprintf("%s: %s", prefix, err);
    free(err);
    return code;
  }
  return 0;
}

/* ctl_build, then run with the result (refusing restart-only changes). */
static int
ctl_apply(const conf_line_t *file, const conf_line_t *overlay, int code,
          const char *prefix, char **err_out)
{
  options_t *new_opts = NULL;
  int r = ctl_build(file, overlay, code, prefix, &new_opts, err_out);
  return r ? r : reconfigure_to(new_opts, 1, err_out);
}

static int
ctl_setconf(const conf_line_t *changes, char **err_out)
{
  conf_line_t *overlay = conf_lines_dup(daemon_state.overlay);
  options_overlay_update(&overlay, changes);
  int r = ctl_apply(daemon_state.file_lines, overlay, 513,
                    "Unacceptable option value", err_out);
  if (r != 0) {
    conf_lines_free(overlay);
    return r;
  }
  conf_lines_free(daemon_state.overlay);
  daemon_state.overlay = overlay;
  for (const conf_line_t *c = changes; c; c = c->next)
    log_info("Controller set %s%s%s", c->key,
             c->cmd == CONF_LINE_CLEAR ? " to its default" : " ",
             c->cmd == CONF_LINE_CLEAR ? "" : c->value);
  return 0;
}

static int
ctl_loadconf(const char *text, char **err_out)
{
  conf_line_t *lines = NULL;
  char *err = NULL;
  if (conf_lex_text(text, strlen(text), "LOADCONF", &lines, &err) < 0) {
    *err_out = pc_asprintf("Invalid config file: %s", err);
    free(err);
    return 552;
  }
  int r = ctl_apply(lines, NULL, 552, "Invalid config file", err_out);
  if (r != 0) {
    conf_lines_free(lines);
    return r;
  }
  conf_lines_free(daemon_state.file_lines);
  conf_lines_free(daemon_state.overlay);
  daemon_state.file_lines = lines;
  log_notice("Configuration loaded by a controller (LOADCONF).");
  return 0;
}

#define SAVECONF_HEADER \
  "# This file was generated by pctor (SAVECONF); if you edit it, " \
  "comments will not be preserved\n"

/* Whether a torrc's text has an %include line. */
static int
has_include(const char *text)
{
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
    while (*l == ' ' || *l == '\t')
      l++;
    if (!strncmp(l, "%include", 8))
      return 1;
  }
  return 0;
}

static int
ctl_saveconf(int force, char **err_out)
{
  const options_cmdline_t *cl = daemon_state.cmdline;
  const char *path = cl->torrc;
  char *old = NULL, *err = NULL, *text = NULL, *orig = NULL;

  size_t len = 0;
  int r = fs_read_text(path, CONF_MAX_FILE_SIZE, &old);
  if (r < 0 && r != -ENOENT) {
    *err_out = pc_asprintf("Unable to write configuration to disk: "
                           "reading %s: %s", path, strerror(-r));
    return 551;
  }
  if (old && has_include(old) && !force) {
    *err_out = pc_asprintf("Unable to write configuration to disk: %s has "
                           "%%include lines, which SAVECONF would replace "
                           "by their contents (SAVECONF FORCE does it)",
                           path);
    free(old);
    return 551;
  }
  /* What differs from the defaults torrc and the built-in defaults. */
  options_t *base = NULL;
  if (options_from_sources(daemon_state.defaults_lines, NULL, NULL, cl->cwd,
                           &base, &err) < 0) {
    *err_out = pc_asprintf("Unable to write configuration to disk: %s", err);
    free(err);
    free(old);
    return 551;
  }
  FILE *f = open_memstream(&text, &len);
  if (!f)
    abort();
  fputs(SAVECONF_HEADER, f);
  /* As tor: a torrc pctor did not write is kept under another name. */
  if (old && strncmp(old, SAVECONF_HEADER, strlen(SAVECONF_HEADER))) {
    for (int i = 1; i < 1000 && !orig; i++) {
      orig = pc_asprintf("%s.orig.%d", path, i);
      if (fs_file_exists(orig))
        PC_FREE(orig);
    }
    if (!orig || rename(path, orig) < 0) {
      *err_out = pc_asprintf("Unable to write configuration to disk: "
                             "keeping the old %s as %s: %s", path,
                             orig ? orig : "torrc.orig.N",
                             orig ? strerror(errno) : "all names in use");
      fclose(f);
      free(text);
      free(orig);
      free(old);
      options_free(base);
      return 551;
    }
    const char *slash = strrchr(orig, '/');
    fprintf(f, "# The old torrc file was renamed to %s, and pctor will "
            "ignore it\n", slash ? slash + 1 : orig);
  }
  fputc('\n', f);
  options_dump(f, daemon_state.opts, base);
  fclose(f);
  options_free(base);
  free(old);
  /* The old file's permissions, else private (it may hold a
   * HashedControlPassword). */
  struct stat st;
  mode_t mode = stat(orig ? orig : path, &st) == 0 ? st.st_mode & 0777
                                                   : 0600;
  r = fs_write_file_atomic(path, text, len, mode);
  if (r < 0) {
    *err_out = pc_asprintf("Unable to write configuration to disk: %s: %s",
                           path, strerror(-r));
    if (orig && rename(orig, path) < 0)
      log_warn("Could not put %s back as %s: %s", orig, path,
               strerror(errno));
    free(text);
    free(orig);
    return 551;
  }
  if (orig)
    log_notice("SAVECONF: renamed the old %s to %s", path, orig);
  log_notice("Saved the configuration to %s (SAVECONF).", path);
  /* The file now holds the running configuration: it is what SETCONF
   * changes from here on. */
  conf_line_t *lines = NULL;
  if (conf_lex_text(text, len, path, &lines, &err) == 0) {
    conf_lines_free(daemon_state.file_lines);
    conf_lines_free(daemon_state.overlay);
    daemon_state.file_lines = lines;
  } else {
    free(err);
  }
  free(text);
  free(orig);
  return 0;
}

static const app_conf_ops_t conf_ops = {ctl_setconf, ctl_loadconf,
                                        ctl_saveconf};

static void
on_term(void *arg)
{
  (void)arg;
  log_notice("Interrupt: exiting cleanly.");
  sdnotify_send("STOPPING=1");
  app_shutdown();
  evloop_exit(daemon_state.loop);
}

/* SIGINT, as tor: a relay stops accepting connections and exits after
 * ShutdownWaitLength; a second SIGINT (or no ORPort, or a wait of 0)
 * exits now. */
static void
on_shutdown_timer(void *arg)
{
  (void)arg;
  log_notice("Clean shutdown finished. Exiting.");
  sdnotify_send("STOPPING=1");
  app_shutdown();
  evloop_exit(daemon_state.loop);
}

static void
on_int(void *arg)
{
  const options_t *o = daemon_state.opts;
  if (daemon_state.shutdown_timer || o->or_ports.n == 0 ||
      o->shutdown_wait_length == 0) {
    on_term(arg);
    return;
  }
  app_stop_listening();
  sdnotify_send("STOPPING=1\nSTATUS=Shutting down after ShutdownWaitLength");
  log_notice("Interrupt: we have stopped accepting new connections, and "
             "will shut down in %d seconds. Interrupt again to exit now.",
             o->shutdown_wait_length);
  daemon_state.shutdown_timer =
      evloop_timer_new(daemon_state.loop, on_shutdown_timer, NULL);
  evloop_timer_schedule(daemon_state.shutdown_timer,
                        (uint64_t)o->shutdown_wait_length * 1000000);
}

/* SIGUSR2, as tor: debug logging on every destination until SIGHUP. */
static void
on_usr2(void *arg)
{
  (void)arg;
  log_set_all_debug();
  daemon_state.debug_logging = 1;
  log_notice("Received SIGUSR2: logging at debug level on every "
             "destination until the next SIGHUP.");
}

static void
on_usr1(void *arg)
{
  (void)arg;
  app_log_statistics();
}

static void
cleanup(void)
{
  evloop_signal_free(daemon_state.sig_hup);
  evloop_signal_free(daemon_state.sig_term);
  evloop_signal_free(daemon_state.sig_int);
  evloop_signal_free(daemon_state.sig_usr1);
  evloop_signal_free(daemon_state.sig_usr2);
  evloop_timer_free(daemon_state.shutdown_timer);
  evloop_timer_free(daemon_state.watchdog_timer);
  evloop_free(daemon_state.loop);
  options_free(daemon_state.opts);
  options_cmdline_free(daemon_state.cmdline);
  conf_lines_free(daemon_state.defaults_lines);
  conf_lines_free(daemon_state.file_lines);
  conf_lines_free(daemon_state.overlay);
}

/* Log the failure, remove what we wrote, and return the exit status. */
static int
fail_startup(void)
{
  log_err("pctor could not start; exiting.");
  daemon_remove_pidfile();
  cleanup();
  return 1;
}

int
main(int argc, char **argv)
{
  char *err = NULL;
  options_cmdline_t *cl = NULL;

  if (options_cmdline_parse(argc, argv, DEFAULT_TORRC, &cl, &err) < 0) {
    fprintf(stderr, "pctor: %s\nTry 'pctor --help'.\n", err);
    free(err);
    return 1;
  }
  daemon_state.cmdline = cl;
  log_set_domain_classifier(log_domain_of_source);
  /* --hush / --quiet: the console log until Log lines say otherwise. */
  log_set_default_min(cl->quiet == 2   ? LOG_SEV_NONE
                      : cl->quiet == 1 ? LOG_SEV_WARN
                                       : LOG_SEV_NOTICE);
  switch (cl->command) {
  case OPTIONS_CMD_HELP:
    options_usage(stdout, "pctor", DEFAULT_TORRC);
    cleanup();
    return 0;
  case OPTIONS_CMD_VERSION:
    print_version();
    cleanup();
    return 0;
  case OPTIONS_CMD_LIST_OPTIONS:
    options_list(stdout);
    cleanup();
    return 0;
  case OPTIONS_CMD_LIST_TORRC_OPTIONS:
    options_list_names(stdout);
    cleanup();
    return 0;
  case OPTIONS_CMD_LIST_MODULES:
    print_modules();
    cleanup();
    return 0;
  case OPTIONS_CMD_LIBRARY_VERSIONS:
    print_library_versions();
    cleanup();
    return 0;
  case OPTIONS_CMD_HASH_PASSWORD: {
    if (crypt_global_init() < 0) {
      fprintf(stderr, "pctor: the crypto library could not be "
              "initialised\n");
      cleanup();
      return 1;
    }
    char *h = crypt_hash_password(cl->command_arg, NULL);
    printf("%s\n", h);
    free(h);
    cleanup();
    return 0;
  }
  case OPTIONS_CMD_KEYGEN_FAMILY: {
    /* As tor: NAME.secret_family_key and NAME.public_family_id, relative
     * to the working directory; no configuration is read. */
    char *out = NULL;
    if (crypt_global_init() < 0 ||
        family_keys_generate(cl->command_arg, &out, &err) < 0) {
      log_err("--keygen-family: %s", err ? err : "the crypto library "
              "could not be initialised");
      free(err);
      cleanup();
      return 1;
    }
    fputs(out, stdout);
    free(out);
    cleanup();
    return 0;
  }
  case OPTIONS_CMD_LIST_FINGERPRINT:
  case OPTIONS_CMD_KEYGEN:
  case OPTIONS_CMD_KEY_EXPIRATION:
  case OPTIONS_CMD_RUN:
  case OPTIONS_CMD_VERIFY_CONFIG:
  case OPTIONS_CMD_DUMP_CONFIG:
    break;
  default:
    fprintf(stderr, "pctor: this command-line action is not supported "
            "yet.\n");
    cleanup();
    return 1;
  }

  if (options_read_files(cl, &daemon_state.defaults_lines,
                         &daemon_state.file_lines, &err) < 0 ||
      options_from_sources(daemon_state.defaults_lines,
                           daemon_state.file_lines, cl->options, cl->cwd,
                           &daemon_state.opts, &err) < 0) {
    log_err("%s", err);
    free(err);
    cleanup();
    return 1;
  }
  const options_t *opts = daemon_state.opts;
  if (cl->command == OPTIONS_CMD_LIST_FINGERPRINT)
    return list_fingerprint(cl, opts);
  if (cl->command == OPTIONS_CMD_KEYGEN)
    return keygen(cl, opts);
  if (cl->command == OPTIONS_CMD_KEY_EXPIRATION)
    return key_expiration(cl, opts);
  if (cl->command == OPTIONS_CMD_DUMP_CONFIG) {
    int r = options_dump_config(stdout, cl, opts, &err);
    if (r < 0) {
      fprintf(stderr, "pctor: %s\n", err);
      free(err);
    }
    cleanup();
    return r < 0 ? 1 : 0;
  }
  /* Switching to User is checked before --verify-config answers. */
  if (opts->user && privdrop_check(opts->user, &err) < 0) {
    log_err("%s. Failing.", err);
    free(err);
    cleanup();
    return 1;
  }
  /* Under a bounding set as narrow as tor's units give (no
   * CAP_DAC_OVERRIDE), log files, keys and the PidFile are opened as User
   * from here on, and checked so below (--verify-config too). */
  if (opts->user && privdrop_fs_as_user(opts->user) < 0) {
    cleanup();
    return 1;
  }
  if (options_check_startable(opts, &err) < 0) {
    log_err("%s. Failing.", err);
    free(err);
    cleanup();
    return 1;
  }
  if (cl->verify_config) {
    printf("Configuration was valid\n");
    cleanup();
    return 0;
  }

  if (apply_logs(opts, &err) < 0) {
    log_err("%s. Failing.", err);
    free(err);
    cleanup();
    return 1;
  }
  log_notice("%s %s starting with Libevent %s, %s and malloc %s.",
             PACKAGE_NAME, PACKAGE_VERSION, evloop_library_version(),
             crypt_library_version(), allocator_version());
  if (allocator_check() < 0)
    log_warn("This pctor was built for %s, but malloc() does not return "
             "its memory: the build is broken.", allocator_name());
  if (access(cl->torrc, F_OK) == 0)
    log_notice("Read configuration file \"%s\".", cl->torrc);

  apply_dumpable(opts);
  if (opts->run_as_daemon && daemon_start() < 0)
    return fail_startup();

  if (crypt_global_init() < 0) {
    log_err("The crypto library could not be initialised.");
    return fail_startup();
  }
  /* A peer closing a connection must show up as EPIPE, not kill us. */
  signal(SIGPIPE, SIG_IGN);
  daemon_state.loop = evloop_new();
  daemon_state.sig_hup = evloop_signal_new(daemon_state.loop, SIGHUP,
                                           on_hup, NULL);
  daemon_state.sig_term = evloop_signal_new(daemon_state.loop, SIGTERM,
                                            on_term, NULL);
  daemon_state.sig_int = evloop_signal_new(daemon_state.loop, SIGINT,
                                           on_int, NULL);
  daemon_state.sig_usr2 = evloop_signal_new(daemon_state.loop, SIGUSR2,
                                            on_usr2, NULL);
  daemon_state.sig_usr1 = evloop_signal_new(daemon_state.loop, SIGUSR1,
                                            on_usr1, NULL);

  app_set_config_file(cl->torrc); /* ControlPort: GETINFO config-file */
  app_set_conf_ops(&conf_ops);    /* ControlPort: SETCONF and friends */
  if (app_start(daemon_state.loop, opts) < 0)
    return fail_startup();
  if (opts->pid_file && daemon_write_pidfile(opts->pid_file) < 0) {
    app_shutdown();
    return fail_startup();
  }
  if (opts->user) {
    if (privdrop_switch_user(opts->user, opts->data_directory,
                             opts->cache_directory) < 0) {
      app_shutdown();
      return fail_startup();
    }
  } else if (geteuid() == 0) {
    log_notice("Running as root. Consider setting User to run pctor as an "
               "unprivileged user.");
  }
  apply_dumpable(opts); /* switching user may have reset it */
  (void)privdrop_no_new_privs(); /* logged; a guard, not a requirement */
  daemon_finish();
  if (opts->sandbox && start_sandbox(cl, opts) < 0) {
    app_shutdown();
    return fail_startup();
  }
  app_start_workers(opts); /* after the sandbox: see start.h */

  /* Type=notify: ready now that ports are bound and privileges dropped.
   * After RunAsDaemon the daemon is not the process the service manager
   * started, so it names itself (needs NotifyAccess=all). */
  char ready[96];
  snprintf(ready, sizeof(ready), "READY=1\nSTATUS=Running\nMAINPID=%ld",
           (long)getpid());
  sdnotify_send(ready);
  uint64_t wd = sdnotify_watchdog_usec();
  if (wd) {
    daemon_state.watchdog_timer =
        evloop_timer_new(daemon_state.loop, on_watchdog, NULL);
    evloop_timer_schedule_periodic(daemon_state.watchdog_timer, wd / 2);
  }

  int r = evloop_run(daemon_state.loop);
  if (r < 0)
    log_err("The event loop failed.");
  daemon_remove_pidfile();
  cleanup();
  return r < 0 ? 1 : 0;
}
