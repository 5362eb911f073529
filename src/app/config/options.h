/* SPDX-License-Identifier: BSD-3-Clause */
/* options.h -- pctor's torrc options: the option manager, the parsed
 * options_t, and the command line.
 *
 * Every option pctor accepts is one typed row (lib/conf/confdecl.h: name,
 * type, syntax, default, whether SIGHUP may change it, help text), in the
 * daemon's own table in options.c or in the table of the module that uses
 * it (feature/conflux/conflux_options.c, ...), registered in options.c's
 * modules[]. The parser, --list-options, --list-torrc-options,
 * --dump-config and the man-page check all read those tables, so an
 * option cannot exist in one place and not the others. A module reads its
 * own values with options_module(). Names of tor options pctor does not
 * implement are refused with one line (tor_option_names.h).
 *
 * Sources combine as in tor: the defaults torrc (--defaults-torrc,
 * default SYSCONFDIR/pctor/torrc-defaults, may be missing) gives defaults:
 * any option the torrc sets replaces all of the defaults file's lines for
 * it. Both files may %include others (lib/conf/conf.h). Then every option
 * given on the command line replaces the torrc's lines for that option
 * ("--Log X" replaces all torrc Log lines), "--+Log X" adds to them and
 * "--/Log" removes them. Within one source, the last line of a
 * single-valued option wins (with a warning); a line with an empty value
 * resets the option to its default. Keys are case-insensitive.
 *
 * Errors are returned as one newly allocated message naming the option and
 * where it came from, e.g.
 *   "Unknown option 'Foo' on line 12 of /etc/pctor/torrc. Failing."
 *   "Option 'ORPort' on line 3 of /etc/pctor/torrc: '70000' is not a port
 *    number (1 to 65535). Failing."
 */
#ifndef PCTOR_APP_CONFIG_OPTIONS_H
#define PCTOR_APP_CONFIG_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "lib/conf/conf.h"
#include "lib/conf/confdecl.h"
#include "feature/client/client_port.h"
#include "lib/address/address.h"

/* ORPort flags (tor's). */
#define OPTIONS_PORT_NO_LISTEN 0x1    /* advertise, do not bind */
#define OPTIONS_PORT_NO_ADVERTISE 0x2 /* bind, do not advertise */
#define OPTIONS_PORT_IPV4_ONLY 0x4
#define OPTIONS_PORT_IPV6_ONLY 0x8    /* "9001 IPv6Only" is [::]:9001 */
/* Not flags one writes: "auto" (port 0 here; the listener's bound port is
 * what counts), a line without an address, and the [::] half that a bare
 * ORPort PORT adds beside 0.0.0.0:PORT (as tor 0.4.9; not fatal where the
 * host has no IPv6). */
#define OPTIONS_PORT_AUTO 0x10
#define OPTIONS_PORT_BARE 0x20
#define OPTIONS_PORT_IMPLICIT 0x40

/* The ORPort lines: per address family at most one that is bound and one
 * that is advertised (a line without NoListen/NoAdvertise is both), so at
 * most four. "ORPort 9001" is 0.0.0.0:9001 and [::]:9001 (IMPLICIT);
 * "ORPort 0" (the default) means no ORPort (n == 0). */
typedef struct {
  int n;
  pc_addr_t addrs[4]; /* family AF_INET or AF_INET6; port 0 only if AUTO */
  unsigned flags[4];  /* OPTIONS_PORT_* */
} options_ports_t;

/* The values of a repeatable option, in order. */
typedef conf_strlist_t options_strlist_t;

typedef struct options_t {
  char *data_directory;          /* DataDirectory: absolute path */
  options_ports_t or_ports;      /* ORPort */
  options_ports_t dir_ports;     /* DirPort (same rules as ORPort) */
  char *dir_port_front_page;     /* DirPortFrontPage: NULL if unset */
  options_strlist_t address;     /* Address: at most two lines (tor
                                  * 0.4.5+), IP literals (at most one per
                                  * family) or host names, checked in
                                  * validate() */
  pc_addr_t address_ip;          /* the IPv4 literal among them, else
                                  * family AF_UNSPEC */
  pc_addr_t address_ip6;         /* the IPv6 literal among them, else
                                  * family AF_UNSPEC */
  int address_disable_ipv6;      /* AddressDisableIPv6: 0 or 1 */
  char *nickname;                /* Nickname: 1-19 [A-Za-z0-9] */
  char *contact_info;            /* ContactInfo: NULL if unset */
  options_strlist_t logs;        /* Log: values, in order ("notice stderr") */
  int run_as_daemon;             /* RunAsDaemon: 0 or 1 */
  char *pid_file;                /* PidFile: absolute path, NULL if unset */
  char *user;                    /* User: NULL if unset */
  int testing_tor_network;       /* TestingTorNetwork: 0 or 1 */
  int testing_enable_conn_bw_event;    /* TestingEnableConnBwEvent */
  int testing_enable_cell_stats_event; /* TestingEnableCellStatsEvent */
  int extend_allow_private_addresses; /* ExtendAllowPrivateAddresses */
  int onion_key_rotation_days;   /* OnionKeyRotationDays: 1-90 */
  int onion_key_grace_period_days; /* OnionKeyGracePeriodDays */
  char *key_directory;            /* KeyDirectory: NULL = DataDirectory/keys */
  int data_directory_group_readable; /* DataDirectoryGroupReadable */
  char *cache_directory;          /* CacheDirectory: NULL = DataDirectory */
  char *geoip_file;               /* GeoIPFile: NULL = none */
  char *geoip_v6_file;            /* GeoIPv6File: NULL = none */
  int cache_directory_group_readable; /* CacheDirectoryGroupReadable: -1 auto */
  int offline_master_key;         /* OfflineMasterKey */
  int signing_key_lifetime;       /* SigningKeyLifetime, seconds */
  options_strlist_t dir_authorities; /* DirAuthority: the lines' values,
                                      * each one dir_authority_parse()
                                      * accepts; empty: none configured */
  options_strlist_t my_family;   /* MyFamily: one normalised entry each
                                  * ("$HEX40" or a nickname), no
                                  * duplicates */
  options_strlist_t family_ids;  /* FamilyId: family IDs or "*" */
  char *family_key_directory;    /* FamilyKeyDirectory: NULL = KeyDirectory */
  int key_directory_group_readable; /* KeyDirectoryGroupReadable: -1 auto */
  int publish_server_descriptor; /* PublishServerDescriptor: 0 or 1 */
  int dir_cache;                 /* DirCache: 0 or 1 */
  uint64_t max_advertised_bandwidth; /* MaxAdvertisedBandwidth, bytes/s */
  int heartbeat_period;          /* HeartbeatPeriod, seconds; 0: none */
  int shutdown_wait_length;      /* ShutdownWaitLength, seconds */
  int safe_logging;              /* SafeLogging: 0, 1, 2 (relay) */
  int log_message_domains;       /* LogMessageDomains: 0 or 1 */
  char *syslog_identity_tag;     /* SyslogIdentityTag: NULL if unset */
  int disable_debugger_attachment; /* DisableDebuggerAttachment */
  int sandbox;                   /* Sandbox: 0 or 1 (lib/sandbox) */
  int avoid_disk_writes;         /* AvoidDiskWrites: state saved 6x rarer */
  int conn_limit;                /* ConnLimit: fewest descriptors needed */
  int assume_reachable;          /* AssumeReachable: 0 or 1 */
  int assume_reachable_ipv6;     /* AssumeReachableIPv6: 0, 1, -1 auto */
  int ipv6_exit;                 /* IPv6Exit: 0 or 1 */
  int exit_relay;                /* ExitRelay: 0, 1 or -1 (auto) */
  int is_exit;                   /* derived: ExitRelay 1, or auto with an
                                  * ExitPolicy line (tor's rule) */
  options_strlist_t exit_policy; /* ExitPolicy: one "accept/reject
                                  * ADDR:PORTS" line each */
  int exit_policy_reject_private;          /* ExitPolicyRejectPrivate */
  int reduced_exit_policy;                 /* ReducedExitPolicy */
  /* OutboundBindAddress, ...OR, ...Exit (the conn_out_kind_t order):
   * address values, at most one per family (checked in validate()). */
  options_strlist_t outbound_bind[3];
  int exit_policy_reject_local_interfaces; /* ...RejectLocalInterfaces */
  char *server_dns_resolv_conf_file;       /* ServerDNSResolvConfFile:
                                            * NULL = /etc/resolv.conf */
  client_ports_t socks_ports;    /* SocksPort lines; n == 0 when off */
  char *entry_nodes, *middle_nodes, *exit_nodes, *exclude_nodes;
  int max_circuit_dirtiness;     /* MaxCircuitDirtiness, seconds */
  int socks_timeout;             /* SocksTimeout, seconds */
  int circuit_stream_timeout;    /* CircuitStreamTimeout, seconds; 0 */
  int use_microdescriptors;      /* UseMicrodescriptors: 0 or 1 */
  uint64_t bandwidth_rate, bandwidth_burst;    /* bytes/s */
  uint64_t relay_bandwidth_rate, relay_bandwidth_burst; /* 0: no limit */
  int token_bucket_refill_interval;            /* milliseconds */
  uint64_t max_mem_in_queues;    /* bytes; 0 = automatic */
  /* PathsNeededToBuildCircuits: 0.25..0.95, or negative: consensus. */
  double paths_needed_to_build_circuits;
  /* Circuit scheduler. */
  double circuit_priority_halflife;    /* seconds; 0: off; -1: unset,
                                        * from the consensus */
  char *schedulers;                    /* "KIST,KISTLite" */
  int scheduler_socket_aware;          /* derived: KIST (1) or KISTLite */
  int kist_sched_run_interval;          /* milliseconds */
  double kist_sock_buf_size_factor;
  int circuit_priority_reads;
  char *relay_tcp_congestion_control; /* NULL: the host's default */
  /* PCTCP. */
  int per_circuit_tcp;
  int per_circuit_tcp_max_connections; /* 0: automatic */
  int per_circuit_tcp_spares;
  int per_circuit_tcp_require_ipsec;
  int refuse_unknown_exits;       /* RefuseUnknownExits: 1, 0, -1 auto */

  /* ---- ControlPort and MetricsPort (feature/control) ----
   * Values as written, checked when read by feature/control's parsers
   * (control_parse_listen(), metrics_parse_port(), ...). */
  char *control_port;             /* ControlPort: "0" off */
  char *control_socket;           /* ControlSocket: NULL or "0" off */
  int cookie_authentication;      /* CookieAuthentication */
  char *cookie_auth_file;         /* CookieAuthFile: NULL = default */
  int cookie_auth_file_group_readable; /* CookieAuthFileGroupReadable */
  char *control_port_write_to_file; /* ControlPortWriteToFile, or NULL */
  int control_port_file_group_readable; /* ControlPortFileGroupReadable */
  char *hashed_control_password;  /* HashedControlPassword: NULL none */
  char *owning_controller_process; /* __OwningControllerProcess: a pid */
  int leave_streams_unattached;   /* __LeaveStreamsUnattached */
  int state_save_interval;        /* __StateSaveInterval, seconds */
  char *metrics_port;             /* MetricsPort: "0" off */
  char *metrics_port_policy;      /* MetricsPortPolicy: NULL reject all */
  /* ---- end of ControlPort and MetricsPort ---- */

  /* Private to options.c: the registered modules' option structs, and
   * which options were set explicitly (one byte per option). */
  void **mod_objs_;
  unsigned char *set_;
} options_t;
struct options_cmdline_t;
/* An option's declaration (lib/conf/confdecl.h). */
typedef conf_var_t option_def_t;

/* Every registered option, the daemon's first: options_var(i) for i below
 * options_count(). */
size_t options_count(void);
const option_def_t *options_var(size_t i);
/* Look up an option by name, case-insensitively; NULL if unknown. */
const option_def_t *options_find(const char *name);
/* A registered module's options struct within o (mod must be one of the
 * registered modules). */
const void *options_module(const options_t *o, const conf_module_t *mod);
/* Whether option name was set by a line (not left at its default). */
int options_is_set(const options_t *o, const char *name);
/* The one-line refusal of tor's option name (newly allocated), or NULL
 * when name is not a tor option. For the unit tests. */
char *options_tor_refusal(const char *name);
/* Check every registered table (defaults parse, names unique, rows
 * documented). For the unit tests. */
int options_module_check_all(char **err_out);

/* What the command line asked for. */
/* tor's command-line actions other than running the relay. */
typedef enum {
  OPTIONS_CMD_RUN = 0,
  OPTIONS_CMD_VERIFY_CONFIG,
  OPTIONS_CMD_VERSION,
  OPTIONS_CMD_HELP,
  OPTIONS_CMD_LIST_OPTIONS,
  OPTIONS_CMD_LIST_TORRC_OPTIONS,
  OPTIONS_CMD_LIST_FINGERPRINT,
  OPTIONS_CMD_DUMP_CONFIG,
  OPTIONS_CMD_LIST_MODULES,
  OPTIONS_CMD_LIBRARY_VERSIONS,
  OPTIONS_CMD_HASH_PASSWORD,
  OPTIONS_CMD_KEYGEN,
  OPTIONS_CMD_KEY_EXPIRATION,
  OPTIONS_CMD_KEYGEN_FAMILY,
} options_command_t;

/* The i-th address of OutboundBindAddress (kind 0), ...OR (1) or ...Exit
 * (2), parsed: 0, or -1 if there is none. */
int options_outbound_addr(const options_t *o, int kind, int i,
                          pc_addr_t *out);

/* CacheDirectory, or DataDirectory when it is unset. */
const char *options_cache_directory(const options_t *o);
/* Whether CacheDirectory is group readable (CacheDirectoryGroupReadable,
 * auto resolved as tor does). */
int options_cache_directory_group_readable(const options_t *o);
/* KeyDirectoryGroupReadable resolved (auto: DataDirectoryGroupReadable
 * when KeyDirectory is DataDirectory, else 0). */
int options_key_directory_group_readable(const options_t *o);
/* Where FamilyId's keys are: FamilyKeyDirectory, else KeyDirectory, else
 * DataDirectory/keys. Newly allocated. */
char *options_family_key_directory(const options_t *o);

typedef struct options_cmdline_t {
  options_command_t command; /* the last action flag given wins */
  char *command_arg;     /* its value ("short", "ed25519", a password),
                          * "" if none */
  char *key_format;      /* --format iso8601|timestamp (--key-expiration),
                          * NULL if not given */
  char *torrc;           /* -f FILE, or the default torrc */
  int torrc_is_default;  /* a missing default torrc is not an error */
  int ignore_missing_torrc; /* --ignore-missing-torrc: a missing torrc is
                             * read as empty */
  int allow_missing_torrc;  /* --allow-missing-torrc: likewise, if the
                             * defaults torrc exists */
  char *defaults_torrc;  /* --defaults-torrc FILE, or the default one;
                          * a missing defaults torrc is read as empty */
  int quiet;             /* 0; 1 --hush (warn and err on the console);
                          * 2 --quiet (nothing on the console) */
  char *cwd;             /* working directory at start-up, for relative
                          * paths (the same on every reload) */
  int verify_config;     /* --verify-config */
  int show_version;      /* --version */
  int show_help;         /* --help, -h */
  int list_options;      /* --list-options */
  conf_line_t *options;  /* "--Key value" lines */
  int passphrase_fd;     /* --passphrase-fd N, -1 if not given */
  int no_passphrase;     /* --no-passphrase */
  int newpass;           /* --newpass */
} options_cmdline_t;

/* Parse argv. default_torrc is used when there is no -f. Returns 0, or -1
 * with *err_out set (an option without its value, a repeated -f). */
int options_cmdline_parse(int argc, char *const *argv,
                          const char *default_torrc,
                          options_cmdline_t **out, char **err_out);
void options_cmdline_free_(options_cmdline_t *cl);
#define options_cmdline_free(c) \
  do { options_cmdline_free_(c); (c) = NULL; } while (0)

/* Read the torrc named by cl (a missing default torrc is logged and
 * treated as empty), apply cl's command-line lines, validate. Returns 0
 * with *out set, or -1 with *err_out set. */
int options_load(const options_cmdline_t *cl, options_t **out,
                 char **err_out);
/* The first half of options_load(): the defaults torrc's and the torrc's
 * lines (%include expanded; NULL for a missing or empty file), which the
 * daemon keeps so that the controller's changes apply to the
 * configuration it runs with, not to a torrc edited since. Returns 0, or
 * -1 with *err_out. */
int options_read_files(const options_cmdline_t *cl, conf_line_t **defaults_out,
                       conf_line_t **file_out, char **err_out);

/* The controller's changes (SETCONF, RESETCONF) are an overlay: lines
 * applied after the command line, so they win over the torrc and the
 * command line alike, and SIGHUP (which re-reads the torrc) forgets them,
 * as tor does. options_overlay_update() merges changes (one line per
 * value; a key with the empty value, or a CONF_LINE_CLEAR line, resets it
 * to its default) into *overlay: every key in changes replaces the
 * overlay's lines for it. options_overlay_cmdline() is the command line
 * to pass to options_from_sources(): cmdline without the overlay's keys,
 * then the overlay (newly allocated). */
void options_overlay_update(conf_line_t **overlay, const conf_line_t *changes);
conf_line_t *options_overlay_cmdline(const conf_line_t *cmdline,
                                     const conf_line_t *overlay);

/* The same from lines already lexed (file_lines may be NULL); cwd is the
 * base for relative paths (NULL: the current directory). */
int options_from_lines(const conf_line_t *file_lines,
                       const conf_line_t *cmdline_lines, const char *cwd,
                       options_t **out, char **err_out);

/* The same with a defaults torrc's lines (may be NULL): the torrc's lines
 * for an option replace all of the defaults' lines for it. */
int options_from_sources(const conf_line_t *defaults_lines,
                         const conf_line_t *file_lines,
                         const conf_line_t *cmdline_lines, const char *cwd,
                         options_t **out, char **err_out);

void options_free_(options_t *opts);
#define options_free(o) do { options_free_(o); (o) = NULL; } while (0)

/* DataDirectory's default: "/var/lib/pctor" for root, else "HOME/.pctor"
 * (home is $HOME, or the password database's entry when home is NULL or
 * empty). Newly allocated; NULL if there is no home directory. */
char *options_default_data_directory(int is_root, const char *home);

/* On SIGHUP: for every option that may not change while running and whose
 * value differs between old and new_opts, log a warning naming it and put
 * the old value back into new_opts. Returns how many were kept. */
int options_keep_non_reloadable(const options_t *old, options_t *new_opts);

/* For the controller, which refuses instead of keeping old values: the
 * names of the options that may not change while running and differ
 * between old and new_opts, separated by ", " (newly allocated), or NULL
 * when there are none. */
char *options_non_reloadable_changes(const options_t *old,
                                     const options_t *new_opts);

/* GETCONF for the ControlPort: the canonical name and the values of the
 * option named name (case-insensitive), each as a torrc would write it
 * (newly allocated; *n 0 when unset). Returns 0, or -1 for an unknown
 * option. */
int options_get_values(const options_t *o, const char *name,
                       char **canonical, char ***values, int *n);

/* tor's name for the type of an option, for GETINFO config/names
 * ("Boolean", "Integer", "Interval", "DataSize", "LineList", ...). */
const char *options_type_name(const option_def_t *def);

/* Whether two options_t have the same value for one option. */
int options_equal(const options_t *a, const options_t *b,
                  const option_def_t *def);

/* --list-options: every option with its syntax, default, whether SIGHUP
 * changes it, and its help text. Lines naming an option start in column
 * 0; the rest are indented. */
void options_list(FILE *out);
/* --list-torrc-options: every option's name, one per line (tor's). */
void options_list_names(FILE *out);
/* --dump-config: "Name value" lines, sorted by name, values in base units
 * (as tor's). With base, only options whose value differs from base's. */
void options_dump(FILE *out, const options_t *o, const options_t *base);
/* Before start-up (--verify-config too): what would make start-up or
 * the Log lines fail that can be seen without starting: a log file that
 * cannot be written, a DataDirectory that cannot be made or used, a
 * PidFile in a directory that cannot be written, an exit's unreadable
 * ServerDNSResolvConfFile, a descriptor limit below ConnLimit. Changes
 * nothing. Returns
 * 0, or -1 with *err_out (the problem, naming the option). */
int options_check_startable(const options_t *opts, char **err_out);

/* The ORPort addresses to advertise (without NoAdvertise) into out;
 * returns how many. p is o->or_ports or, once listening, the same with
 * the bound ports of "auto" lines (app keeps that copy). */
int options_orports_advertised(const options_ports_t *p, pc_addr_t out[4]);
/* The DirPort to publish in the descriptor's router line: the first IPv4
 * DirPort without NoAdvertise, or 0 (of o->dir_ports or app's bound copy). */
uint16_t options_dirport_advertised(const options_ports_t *p);

/* How long after a change the state file is written while running, in
 * seconds: __StateSaveInterval, six times longer with AvoidDiskWrites (an
 * hour by default, as tor). */
int options_state_save_interval(const options_t *o);

/* 1 if a relay should be warned at start that ContactInfo is not set
 * (as tor): it has an ORPort, publishes its descriptor and is not in a
 * TestingTorNetwork. */
int options_warn_no_contact_info(const options_t *o);

/* The bandwidth the descriptor advertises, as tor computes it: rate is
 * the smallest of BandwidthRate, RelayBandwidthRate (if set) and
 * MaxAdvertisedBandwidth; burst the smaller of BandwidthBurst and
 * RelayBandwidthBurst (if set). Bytes per second. */
void options_advertised_bandwidth(const options_t *o, uint64_t *rate,
                                  uint64_t *burst);
/* --dump-config [short|full|non-builtin] for o loaded from cl: short (the
 * default) prints what differs from the defaults torrc and the built-in
 * defaults, non-builtin what differs from the built-in defaults, full
 * every option that has a value. Returns 0, or -1 with *err_out. */
int options_dump_config(FILE *out, const struct options_cmdline_t *cl,
                        const options_t *o, char **err_out);
/* --help. */
void options_usage(FILE *out, const char *progname, const char *torrc);

#endif
