/* SPDX-License-Identifier: BSD-3-Clause */
/* sdnotify.c -- the sd_notify(3) datagram protocol (see sdnotify.h). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "app/main/sdnotify.h"
#include "lib/log/log.h"

int
sdnotify_send(const char *state)
{
  static int warned;
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || !*path)
    return 0;
  struct sockaddr_un sun;
  memset(&sun, 0, sizeof(sun));
  sun.sun_family = AF_UNIX;
  size_t len = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sun.sun_path)) {
    if (!warned++)
      log_warn("NOTIFY_SOCKET \"%s\" is not a socket path; not telling the "
               "service manager about start-up.", path);
    return -1;
  }
  memcpy(sun.sun_path, path, len);
  if (path[0] == '@')
    sun.sun_path[0] = '\0'; /* abstract namespace */
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (!warned++)
      log_warn("Cannot reach the service manager: socket: %s",
               strerror(errno));
    return -1;
  }
  ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                     (struct sockaddr *)&sun, alen);
  int e = errno;
  close(fd);
  if (n < 0) {
    if (!warned++)
      log_warn("Cannot reach the service manager at %s: %s", path,
               strerror(e));
    return -1;
  }
  return 1;
}

uint64_t
sdnotify_watchdog_usec(void)
{
  const char *pid = getenv("WATCHDOG_PID");
  const char *usec = getenv("WATCHDOG_USEC");
  if (!usec || !*usec)
    return 0;
  char *end;
  if (pid && *pid) {
    errno = 0;
    unsigned long p = strtoul(pid, &end, 10);
    if (errno || *end || p != (unsigned long)getpid())
      return 0;
  }
  errno = 0;
  unsigned long long u = strtoull(usec, &end, 10);
  if (errno || *end || u == 0)
    return 0;
  return (uint64_t)u;
}
