/* SPDX-License-Identifier: BSD-3-Clause */
/* sdnotify.h -- telling a service manager (systemd's Type=notify) how
 * start-up, reloads and shutdown go, and keeping its watchdog fed.
 *
 * The protocol is one datagram of "KEY=VALUE" lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace);
 * see sd_notify(3). Without $NOTIFY_SOCKET every call does nothing, so the
 * daemon behaves the same under any other init system. No libsystemd.
 */
#ifndef PCTOR_APP_MAIN_SDNOTIFY_H
#define PCTOR_APP_MAIN_SDNOTIFY_H

#include <stdint.h>

/* Send state (e.g. "READY=1\nSTATUS=...") to the service manager. Returns 1
 * if sent, 0 if there is no service manager, -1 (and logs once) on error. */
int sdnotify_send(const char *state);

/* The watchdog interval the service manager asked for in microseconds
 * ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or names this process), or
 * 0 when no watchdog is wanted. */
uint64_t sdnotify_watchdog_usec(void);

#endif
