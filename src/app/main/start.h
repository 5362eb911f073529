/* SPDX-License-Identifier: BSD-3-Clause */
/* start.h -- the relay's start-up, reconfiguration and shutdown, called by
 * main.c (which owns options, logging, signals, daemonizing and the
 * privilege drop).
 *
 * Order of calls: app_start() runs once, as the user pctor was started as
 * (usually root) and before RunAsDaemon's parent is released: it binds the
 * ORPorts and reads or creates the keys. Then main.c writes the pid file,
 * switches to User, installs the sandbox, calls app_start_workers() and
 * runs the loop. app_reconfigure() runs on SIGHUP
 * (unprivileged by then) and app_shutdown() on SIGTERM/SIGINT, from the
 * loop.
 *
 * The options_t passed to app_start() stays valid until app_reconfigure()
 * is called with it as old_opts; from then on new_opts is the current one
 * (main.c frees old_opts after app_reconfigure() returns 0).
 */
#ifndef PCTOR_APP_MAIN_START_H
#define PCTOR_APP_MAIN_START_H

#include "app/config/options.h"
#include "feature/relay/router_keys.h"
#include "lib/evloop/evloop.h"

/* The key handling the options ask for (KeyDirectory, OfflineMasterKey,
 * SigningKeyLifetime, onion-key rotation); cfg points into o. */
void app_keys_config(const options_t *o, router_keys_config_t *cfg);

/* Start the relay on loop. Returns 0, or -1 after logging why (pctor then
 * exits with status 1). */
int app_start(evloop_t *loop, const options_t *opts);
/* Start the CREATE2 handshake worker threads (a relay only). main.c
 * calls it after the sandbox is installed: Landlock restricts only the
 * thread that installs it and threads created afterwards, unlike the
 * seccomp filter (synchronised to every thread). Until then, and if the
 * threads cannot start, handshakes are computed in the main thread. */
void app_start_workers(const options_t *opts);
/* Apply new options (non-reloadable ones already hold their old values).
 * Returns 0, or -1 to keep running with old_opts. */
int app_reconfigure(const options_t *old_opts, const options_t *new_opts);
/* SIGUSR1: log what the relay is doing (connections, circuits, the
 * scheduler, PerCircuitTCP, queued cells) at notice level. */
void app_log_statistics(void);
/* SIGINT with ShutdownWaitLength: stop accepting connections on the
 * ORPorts; circuits and connections go on until app_shutdown(). */
void app_stop_listening(void);
/* The torrc's path, for the ControlPort's GETINFO config-file (main.c
 * calls it before app_start()). */
void app_set_config_file(const char *path);
/* What main.c, which owns the running configuration, does for the
 * ControlPort's SETCONF, RESETCONF, LOADCONF and SAVECONF. Each returns 0,
 * or a control-protocol reply code with *err_out its text (newly
 * allocated): 513 a value refused, 553 a change that needs a restart or
 * could not be applied, 551 SAVECONF could not write. */
typedef struct app_conf_ops_t {
  /* changes: one line per value in canonical option names, a
   * CONF_LINE_CLEAR line for a key to reset (lib/conf/conf.h). */
  int (*setconf)(const conf_line_t *changes, char **err_out);
  int (*loadconf)(const char *text, char **err_out);
  int (*saveconf)(int force, char **err_out);
} app_conf_ops_t;
/* Called by main.c before app_start(). */
void app_set_conf_ops(const app_conf_ops_t *ops);
/* Stop: close listeners and connections, free what app_start() made. */
void app_shutdown(void);

#endif
