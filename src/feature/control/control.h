/* SPDX-License-Identifier: BSD-3-Clause */
/* control.h -- the ControlPort: tor's control protocol (control-spec) for
 * controllers such as stem and nyx.
 *
 * What it offers (module overview; see control.c for the design):
 *   - listeners: ControlPort (TCP, 127.0.0.1 unless an address is given)
 *     and ControlSocket (a unix socket, with tor's GroupWritable,
 *     WorldWritable and RelaxDirModeCheck flags);
 *   - authentication as tor: NULL only when neither CookieAuthentication
 *     nor HashedControlPassword is set, else COOKIE, SAFECOOKIE
 *     (AUTHCHALLENGE) and HASHEDPASSWORD (control_auth.h); PROTOCOLINFO 1;
 *   - commands: PROTOCOLINFO, AUTHCHALLENGE, AUTHENTICATE, GETINFO,
 *     GETCONF, SETCONF, RESETCONF, LOADCONF, SAVECONF (the daemon does
 *     the work through control_host_t), SETEVENTS, SIGNAL, TAKEOWNERSHIP,
 *     USEFEATURE, QUIT; for the SocksPort client EXTENDCIRCUIT,
 *     SETCIRCUITPURPOSE, ATTACHSTREAM, CLOSECIRCUIT, CLOSESTREAM,
 *     MAPADDRESS, RESOLVE, DROPTIMEOUTS (feature/client's client_ctl_*);
 *   - events: BW every second, the log events DEBUG..ERR, ORCONN when a
 *     link opens, CIRC for the circuits pctor builds (LAUNCHED, EXTENDED,
 *     BUILT, FAILED, CLOSED), STREAM for SocksPort streams, SIGNAL,
 *     CONF_CHANGED, ADDRMAP (MAPADDRESS), BUILDTIMEOUT_SET (the client's
 *     learned build timeout), CIRC_BW (control_circbw.h) every second for our own
 *     circuits and for relayed ones MeasureMe measures, CONN_BW and
 *     CELL_STATS (control_cellstats.h) every second while their testing
 *     options are set, NEWCONSENSUS, NS
 *     and STATUS_CLIENT BOOTSTRAP when the daemon reports a consensus,
 *     other STATUS_* events the daemon reports (control_event_status),
 *     STATUS_GENERAL CLOCK_SKEW (a relay's NETINFO time, when its link
 *     opens; a consensus from the future) and BUG (lib/log's log_bug()),
 *     NEWDESC after each directory fetch round that brought descriptors.
 *
 * The module knows nothing of the option table or of start-up: the daemon
 * hands it a control_config_t (parsed with control_parse_listen()) and a
 * control_host_t of callbacks for what only the daemon knows (its options,
 * its directory information, how to act on a signal).
 *
 * Version: controllers get a tor version string, CONTROL_TOR_VERSION (the
 * tor release whose protocols pctor implements), followed by pctor's own
 * in parentheses, e.g. "0.4.9.11 (pctor-0.1.0-dev)": stem accepts only
 * versions of tor's form.
 */
#ifndef PCTOR_FEATURE_CONTROL_CONTROL_H
#define PCTOR_FEATURE_CONTROL_CONTROL_H
#include <stddef.h>
#include <stdint.h>

#include "feature/control/control_proto.h"
#include "feature/dir/consensus.h"
#include "feature/dir/nodelist.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

#define CONTROL_TOR_VERSION "0.4.9.11"
/* One command (with its data block) may have at most this many bytes. */
#define CONTROL_MAX_COMMAND_LEN (64 * 1024)
/* A controller with more than this many bytes of replies and events
 * waiting to be read is closed. */
#define CONTROL_MAX_OUTBUF (4 * 1024 * 1024)
/* Controllers at once; further connections are closed at once. */
#define CONTROL_MAX_CONNECTIONS 64
/* BW events remembered for GETINFO bw-event-cache (tor: 300 s). */
#define CONTROL_BW_CACHE_LEN 300

/* Unix socket flags (ControlSocket, ControlPort unix:PATH). */
#define CONTROL_UNIX_GROUP_WRITABLE 0x1
#define CONTROL_UNIX_WORLD_WRITABLE 0x2
#define CONTROL_UNIX_RELAX_DIR_MODE 0x4

/* Where to listen. kind NONE: not at all. */
typedef struct control_listen_t {
  enum { CONTROL_LISTEN_NONE, CONTROL_LISTEN_TCP, CONTROL_LISTEN_UNIX } kind;
  pc_addr_t addr;  /* TCP; port 0 for "auto" */
  char path[108];  /* unix */
  unsigned flags;  /* unix: CONTROL_UNIX_* */
} control_listen_t;

/* Parse a ControlPort value ("0", "PORT", "ADDR:PORT", "auto", "unix:PATH
 * [FLAGS]") or, with is_socket_option, a ControlSocket value ("0", "PATH
 * [FLAGS]", "unix:PATH [FLAGS]"). A port without address is
 * 127.0.0.1:PORT, as in tor. Returns 0, or -1 with *err_out set (newly
 * allocated). The same parser serves MetricsPort with default_port_only
 * semantics (is_socket_option 0; unix sockets refused by the caller). */
int control_parse_listen(const char *value, int is_socket_option,
                         control_listen_t *out, char **err_out);

typedef enum {
  CONTROL_SIGNAL_RELOAD,
  CONTROL_SIGNAL_SHUTDOWN,
  CONTROL_SIGNAL_HALT,
  CONTROL_SIGNAL_DUMP,
  CONTROL_SIGNAL_DEBUG,
  CONTROL_SIGNAL_NEWNYM,
  CONTROL_SIGNAL_CLEARDNSCACHE,
  CONTROL_SIGNAL_HEARTBEAT,
  CONTROL_SIGNAL_ACTIVE,
  CONTROL_SIGNAL_DORMANT,
} control_signal_t;

/* What the daemon does for the module. Every callback may be NULL. */
typedef struct control_host_t {
  /* Act on a signal soon (not from inside this call when the action
   * would shut the control module down). Returns 0, or -1 when pctor
   * cannot do it (the controller then gets 552 ... not supported). */
  int (*signal)(control_signal_t sig, void *arg);
  /* GETCONF: 1 and the option's canonical name and values (n may be 0
   * for an unset option; all newly allocated), or 0 for an unknown key. */
  int (*getconf)(const char *key, char **canonical, char ***values,
                 int *n, void *arg);
  /* GETINFO keys only the daemon knows (config-file, fingerprint,
   * address, net/listeners/or, net/listeners/socks, ...): 1 with *value
   * (newly allocated), 0 for a key it does not know, -1 with *value the
   * reason the key has no value now (sent as a 551 error). */
  int (*getinfo)(const char *key, char **value, void *arg);
  /* The consensus to answer ns/ and node names from (NULL: none). */
  const consensus_t *(*consensus)(void *arg);
  /* SETCONF (reset 0) and RESETCONF (reset 1): apply the n KEY[=VALUE]
   * pairs as one change, all or nothing (a key without a value goes back
   * to its default). Returns 0, or the reply code with *err_out its text
   * (newly allocated): 552 an unknown option, 513 a value the option
   * refuses, 553 a change pctor cannot make while running. */
  int (*setconf)(const control_kv_t *kvs, int n, int reset, char **err_out,
                 void *arg);
  /* LOADCONF: text replaces the torrc's lines. Codes as setconf. */
  int (*loadconf)(const char *text, char **err_out, void *arg);
  /* SAVECONF [FORCE]: write the running configuration to the torrc.
   * Returns 0, or 551 with *err_out. */
  int (*saveconf)(int force, char **err_out, void *arg);
  void *arg;
} control_host_t;

typedef struct control_config_t {
  control_listen_t port;       /* ControlPort */
  control_listen_t socket;     /* ControlSocket */
  int cookie_auth;             /* CookieAuthentication */
  const char *cookie_file;     /* CookieAuthFile; NULL: DataDirectory/
                                * control_auth_cookie */
  int cookie_group_readable;   /* CookieAuthFileGroupReadable */
  const char *hashed_password; /* HashedControlPassword; NULL: none */
  long owning_pid;             /* __OwningControllerProcess; 0: none */
  const char *data_dir;
  const char *user;            /* User: the socket's directory may be that
                                * user's, and a socket and cookie file made
                                * while root are handed to it; NULL: none */
  int conn_bw_event;           /* TestingEnableConnBwEvent */
  int cell_stats_event;        /* TestingEnableCellStatsEvent */
} control_config_t;

/* Open the listeners and write the cookie. Returns 0, or -1 with *err_out
 * set. Nothing is opened when neither port nor socket is configured. */
int control_start(evloop_t *loop, const control_config_t *cfg,
                  const control_host_t *host, char **err_out);
/* SIGHUP: new password, cookie settings and owning process (listeners
 * stay as they are). */
void control_reconfigure(const control_config_t *cfg);
/* Close every controller and listener, remove the unix socket. */
void control_shutdown(void);
/* Is a listener open? The address of the TCP one ("127.0.0.1:9051"),
 * or NULL. */
const char *control_listen_address(void);
/* CONF_CHANGED: the options whose values changed, one "Key=Value" (or
 * "Key" for an option without a value) per line. */
void control_event_conf_changed(const char *const *lines, int n);
/* STATUS_GENERAL, STATUS_CLIENT, STATUS_SERVER (control-spec 4.1.10):
 * "650 STATUS_x SEVERITY ACTION ARGS" with text as ACTION ARGS. */
typedef enum {
  CONTROL_STATUS_GENERAL,
  CONTROL_STATUS_CLIENT,
  CONTROL_STATUS_SERVER,
} control_status_t;
/* STATUS_GENERAL CLOCK_JUMPED TIME=<seconds> (control-spec 4.1.10): the
 * one-second BW tick compares the wall clock with its previous reading;
 * a difference of CONTROL_CLOCK_JUMP_SECONDS or more either way (as tor:
 * a suspended machine, a stalled process or a clock set by hand) is
 * reported. Returns the jump in seconds, or 0 (also when prev_wall is
 * not set yet, <= 0). */
#define CONTROL_CLOCK_JUMP_SECONDS 20
int64_t control_clock_jump_seconds(int64_t prev_wall, int64_t now_wall);
void control_event_status(control_status_t which, const char *severity,
                          const char *text);
/* A new consensus is in use: NEWCONSENSUS (every entry), NS (the entries
 * whose flags, descriptor, address or weight changed since the previous
 * one; all of them the first time) and, the first time, STATUS_CLIENT
 * BOOTSTRAP PROGRESS=100. */
void control_event_new_consensus(const consensus_t *c);
/* A directory fetch round ended: NEWDESC naming the relays whose
 * descriptor in nl (either flavor) is new since the previous round of
 * that flavor (nothing after the first). */
void control_event_descriptors(const dir_nodelist_t *nl);
/* "0.4.9.11 (pctor-VERSION)". */
const char *control_version_string(void);
/* For the MetricsPort: this relay's flags in the consensus pctor holds
 * (RS_FLAG_*); 0 when it is not listed, has no identity or no consensus
 * is known. */
uint32_t control_own_flags(void);
#endif
