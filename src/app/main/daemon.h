/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon.h -- running in the background (RunAsDaemon) and the pid file.
 *
 * daemon_start() detaches early, before any port is bound, but the
 * process that ran "pctor" does not exit yet: it waits on a pipe until the
 * daemon calls daemon_finish() (start-up succeeded: it exits 0) or dies
 * (it exits 1). So an init script sees start-up failures in pctor's exit
 * status, and the daemon's start-up errors still reach the terminal,
 * because standard input, output and error are only connected to
 * /dev/null by daemon_finish().
 */
#ifndef PCTOR_APP_MAIN_DAEMON_H
#define PCTOR_APP_MAIN_DAEMON_H

/* Fork, start a new session, fork again and chdir to "/". Returns 0 in
 * the daemon; the original process never returns (it exits with the
 * daemon's start-up status). Returns -1 (and logs) if forking failed. */
int daemon_start(void);
/* Start-up succeeded: connect stdin, stdout and stderr to /dev/null and
 * let the original process exit 0. A no-op without daemon_start(). */
void daemon_finish(void);

/* Write our pid to path (replacing the file). Keeps the file open so that
 * daemon_remove_pidfile() can at least empty it if, after a switch of
 * user, it may no longer unlink it. Returns 0 or -1 (and logs). */
int daemon_write_pidfile(const char *path);
/* Remove the pid file written by daemon_write_pidfile(), if any. */
void daemon_remove_pidfile(void);

#endif
