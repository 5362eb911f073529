/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon.c -- RunAsDaemon and PidFile (see daemon.h).
 *
 * The double fork: the first child calls setsid() to leave the
 * terminal's session, and forks again so that the daemon is not a session
 * leader and can never acquire a controlling terminal. The original
 * process keeps the read end of a pipe whose write end only the daemon
 * holds (close-on-exec); one byte from the daemon means "started", end of
 * file without it means the daemon exited during start-up.
 *
 * The pid file is written with O_NOFOLLOW into a temporary name next to
 * it and renamed into place, so a reader never sees a half-written file and
 * a symlink planted at the pid file's name is replaced, not followed.
 */
#include "app/main/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

static int start_pipe_fd = -1; /* the daemon's write end */
static char *pidfile_path;
static int pidfile_fd = -1;

/* In the original process: wait for the daemon's verdict and exit. */
static void __attribute__((noreturn))
wait_for_daemon(int rfd, pid_t first_child)
{
  char c = 0;
  ssize_t n;
  do {
    n = read(rfd, &c, 1);
  } while (n < 0 && errno == EINTR);
  /* Reap the first child (it exits right after forking the daemon). */
  while (waitpid(first_child, NULL, 0) < 0 && errno == EINTR)
    ;
  _exit(n == 1 && c == 'y' ? 0 : 1);
}

int
daemon_start(void)
{
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    log_err("RunAsDaemon: pipe failed: %s", strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    log_err("RunAsDaemon: fork failed: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid > 0) {
    close(p[1]);
    wait_for_daemon(p[0], pid);
  }
  /* First child. */
  close(p[0]);
  if (setsid() < 0) {
    log_err("RunAsDaemon: setsid failed: %s", strerror(errno));
    _exit(1);
  }
  pid = fork();
  if (pid < 0) {
    log_err("RunAsDaemon: second fork failed: %s", strerror(errno));
    _exit(1);
  }
  if (pid > 0)
    _exit(0);
  /* The daemon. */
  if (chdir("/") < 0) {
    log_err("RunAsDaemon: chdir(\"/\") failed: %s", strerror(errno));
    _exit(1);
  }
  start_pipe_fd = p[1];
  return 0;
}

void
daemon_finish(void)
{
  if (start_pipe_fd < 0)
    return;
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    log_warn("RunAsDaemon: cannot open /dev/null: %s", strerror(errno));
  } else {
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i <= 2; i++)
      if (fd != i && dup2(fd, i) < 0)
        log_warn("RunAsDaemon: dup2 failed: %s", strerror(errno));
    if (fd > 2)
      close(fd);
  }
  ssize_t n;
  do {
    n = write(start_pipe_fd, "y", 1);
  } while (n < 0 && errno == EINTR);
  close(start_pipe_fd);
  start_pipe_fd = -1;
}

int
daemon_write_pidfile(const char *path)
{
  char *tmp = pc_asprintf("%s.tmp", path);
  char buf[32];
  int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
  (void)unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0644);
  if (fd < 0) {
    log_err("Unable to write PidFile \"%s\": %s", path, strerror(errno));
    free(tmp);
    return -1;
  }
  ssize_t w = write(fd, buf, (size_t)len);
  if (w != len || fsync(fd) < 0 || rename(tmp, path) < 0) {
    log_err("Unable to write PidFile \"%s\": %s", path,
            w == len ? strerror(errno) : "short write");
    close(fd);
    unlink(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  free(pidfile_path);
  if (pidfile_fd >= 0)
    close(pidfile_fd);
  pidfile_path = pc_strdup(path);
  pidfile_fd = fd;
  return 0;
}

void
daemon_remove_pidfile(void)
{
  if (!pidfile_path)
    return;
  if (unlink(pidfile_path) < 0 && errno != ENOENT) {
    int e = errno;
    /* Typically: we switched to User and may not write the directory.
     * An empty pid file at least names no process. */
    if (pidfile_fd >= 0 && ftruncate(pidfile_fd, 0) == 0)
      log_info("Could not remove PidFile \"%s\" (%s); emptied it instead.",
               pidfile_path, strerror(e));
    else
      log_warn("Could not remove PidFile \"%s\": %s", pidfile_path,
               strerror(e));
  }
  if (pidfile_fd >= 0)
    close(pidfile_fd);
  pidfile_fd = -1;
  PC_FREE(pidfile_path);
}
