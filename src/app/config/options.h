/* SPDX-License-Identifier: BSD-3-Clause */
/* options.h -- pctor's torrc options: the one option table, the parsed
 * options_t, and the command line.
 *
 * Every option pctor accepts is one row of the table in options.c (name,
 * type, syntax, default, whether SIGHUP may change it, help text); the
 * parser, --list-options, --help and the man-page check all read that
 * table, so an option cannot exist in one place and not the others.
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
#include "lib/net/address.h"

/* The ORPort lines: at most one IPv4 and one IPv6 address. "ORPort 9001"
 * is 0.0.0.0:9001; "ORPort 0" (the default) means no ORPort (n == 0). */
typedef struct {
  int n;
  pc_addr_t addrs[2]; /* family AF_INET or AF_INET6, port != 0 */
} options_ports_t;

/* The values of a repeatable option, in order. */
typedef struct {
  int n;
  char **v;
} options_strlist_t;

typedef struct options_t {
  char *data_directory;          /* DataDirectory: absolute path */
  options_ports_t or_ports;      /* ORPort */
  char *address;                 /* Address: NULL if unset */
  pc_addr_t address_ip;          /* Address if it is an IP literal, else
                                  * family AF_UNSPEC */
  char *nickname;                /* Nickname: 1-19 [A-Za-z0-9] */
  char *contact_info;            /* ContactInfo: NULL if unset */
  options_strlist_t logs;        /* Log: values, in order ("notice stderr") */
  int run_as_daemon;             /* RunAsDaemon: 0 or 1 */
  char *pid_file;                /* PidFile: absolute path, NULL if unset */
  char *user;                    /* User: NULL if unset */
  int testing_tor_network;       /* TestingTorNetwork: 0 or 1 */
  int extend_allow_private_addresses; /* ExtendAllowPrivateAddresses */
  int onion_key_rotation_days;   /* OnionKeyRotationDays: 1-90 */
  int onion_key_grace_period_days; /* OnionKeyGracePeriodDays */
  options_strlist_t dir_authorities; /* DirAuthority: the lines' values,
                                      * each one dir_authority_parse()
                                      * accepts; empty: none configured */
  options_strlist_t my_family;   /* MyFamily: one normalised entry each
                                  * ("$HEX40" or a nickname), no
                                  * duplicates */
  int publish_server_descriptor; /* PublishServerDescriptor: 0 or 1 */
  int assume_reachable;          /* AssumeReachable: 0 or 1 */
  int exit_relay;                /* ExitRelay: 0 or 1 */
  options_strlist_t exit_policy; /* ExitPolicy: one "accept/reject
                                  * ADDR:PORTS" line each */
  int exit_policy_reject_private;          /* ExitPolicyRejectPrivate */
  int exit_policy_reject_local_interfaces; /* ...RejectLocalInterfaces */
  char *server_dns_resolv_conf_file;       /* ServerDNSResolvConfFile:
                                            * NULL = /etc/resolv.conf */
  char *socks_port;              /* SocksPort as written ("0": off) */
  pc_addr_t socks_addr;          /* SocksPort parsed; AF_UNSPEC when off */
  char *entry_nodes, *middle_nodes, *exit_nodes, *exclude_nodes;
  int max_circuit_dirtiness;     /* MaxCircuitDirtiness, seconds */
  int use_microdescriptors;      /* UseMicrodescriptors: 0 or 1 */
  char *bandwidth_rate_str, *bandwidth_burst_str;       /* as written */
  char *relay_bandwidth_rate_str, *relay_bandwidth_burst_str;
  uint64_t bandwidth_rate, bandwidth_burst;    /* bytes/s; parsed */
  uint64_t relay_bandwidth_rate, relay_bandwidth_burst; /* 0: no limit */
  int token_bucket_refill_interval;            /* milliseconds */
  char *max_mem_in_queues_str;   /* MaxMemInQueues as written */
  uint64_t max_mem_in_queues;    /* parsed; 0 = automatic */
  /* Circuit scheduler. */
  char *circuit_priority_halflife_str; /* as written; NULL: consensus */
  double circuit_priority_halflife;    /* parsed; seconds, <= 0: off */
  char *schedulers;                    /* "KIST,KISTLite" */
  int scheduler_socket_aware;          /* parsed: KIST (1) or KISTLite */
  int kist_sched_run_interval;          /* milliseconds */
  char *kist_sock_buf_size_factor_str;
  double kist_sock_buf_size_factor;
  /* PCTCP. */
  int per_circuit_tcp;
  int per_circuit_tcp_max_connections; /* 0: automatic */
  int per_circuit_tcp_spares;
  int per_circuit_tcp_require_ipsec;
  /* IPsec between relays (feature/ipsec/broker.h). */
  char *ipsec_str;                /* IPsec as written: "0", "1", "auto" */
  int ipsec_mode;                 /* parsed: an ipsec_mode_t */
  char *ipsec_vici_socket;        /* IPsecVICISocket */
  char *ipsec_updown;             /* IPsecUpdown: NULL if unset */
  int ipsec_max_peers;            /* IPsecMaxPeers */
  /* ---- IPsec broker trust (issue 14) ---- */
  int ipsec_max_peers_per_address; /* IPsecMaxPeersPerAddress */
  char *ipsec_charon_user;        /* IPsecCharonUser: NULL if unset */
  long ipsec_charon_uid;          /* its uid, -1 if unset (validated) */
  /* ---- end of IPsec broker trust ---- */
  int measureme_enabled;
  char *measureme_hops_str;       /* MeasureMeHops as written */
  unsigned measureme_hops;        /* parsed: bit h-1 for hop h */
  int measureme_interval;         /* milliseconds */
  /* ---- MeasureMe limits (issue 14) ---- */
  char *measureme_log_max_size_str; /* MeasureMeLogMaxSize as written */
  uint64_t measureme_log_max_size;  /* parsed, bytes */
  int measureme_client_rate;        /* MeasureMeClientRate, per minute */
  int measureme_client_burst;       /* MeasureMeClientBurst */
  /* ---- end of MeasureMe limits ---- */
  /* Conflux (proposal 329). */
  char *refuse_unknown_exits_str; /* RefuseUnknownExits as written */
  int refuse_unknown_exits;       /* parsed: 1, 0, -1 auto */
  char *conflux_enabled_str;      /* ConfluxEnabled as written */
  int conflux_enabled;            /* parsed: 1, 0, -1 auto */
  char *conflux_client_ux_str;    /* ConfluxClientUX as written */
  int conflux_client_ux;          /* parsed: a CFX_UX_* code */
  int conflux_legs;               /* ConfluxLegs: 0 (consensus) or 2..8 */
  char *conflux_scheduler_str;    /* ConfluxScheduler as written */
  int conflux_scheduler;          /* parsed: 0 auto, or a cfx_alg_t */
  int conflux_max_ooo;            /* ConfluxMaxOutOfOrder, messages */

  /* ---- ControlPort and MetricsPort (feature/control) ----
   * One block, for the port to per-module option tables. Values as
   * written; feature/control parses them (checked by validate()). */
  char *control_port;             /* ControlPort: "0" off */
  char *control_socket;           /* ControlSocket: NULL or "0" off */
  int cookie_authentication;      /* CookieAuthentication */
  char *cookie_auth_file;         /* CookieAuthFile: NULL = default */
  int cookie_auth_file_group_readable; /* CookieAuthFileGroupReadable */
  char *hashed_control_password;  /* HashedControlPassword: NULL none */
  char *owning_controller_process; /* __OwningControllerProcess: a pid */
  char *metrics_port;             /* MetricsPort: "0" off */
  char *metrics_port_policy;      /* MetricsPortPolicy: NULL reject all */
  /* ---- end of ControlPort and MetricsPort ---- */

  /* Private bookkeeping: which table rows were set explicitly (a bit per
   * row, OPTIONS_SET_WORDS words). */
#define OPTIONS_SET_WORDS 2
  uint64_t set_explicitly_[OPTIONS_SET_WORDS];
} options_t;

/* The table, for --list-options, the man-page check and tests. */
typedef enum {
  OPT_TYPE_PATH,     /* a file name; "~/" and relative names are expanded */
  OPT_TYPE_STRING,   /* printable text */
  OPT_TYPE_NICKNAME, /* 1-19 characters [A-Za-z0-9] */
  OPT_TYPE_HOST,     /* IP address or DNS name */
  OPT_TYPE_USER,     /* an existing user name */
  OPT_TYPE_BOOL,     /* 0 or 1 */
  OPT_TYPE_INT,      /* integer in [min, max] */
  OPT_TYPE_ORPORT,   /* [ADDR:]PORT, repeatable once per address family */
  OPT_TYPE_LOG,      /* a Log line, repeatable */
  OPT_TYPE_DIRAUTH,  /* a DirAuthority line, repeatable */
  OPT_TYPE_FAMILY,   /* relays separated by commas/spaces, repeatable */
  OPT_TYPE_POLICY,   /* accept/reject rules separated by commas,
                      * repeatable */
} option_type_t;

typedef struct {
  const char *name;
  option_type_t type;
  const char *syntax;       /* for --list-options and the man page */
  const char *default_str;  /* value applied as the default; NULL: unset */
  const char *default_doc;  /* the default as documented */
  int reloadable;           /* may change on SIGHUP */
  int64_t min, max;         /* OPT_TYPE_INT */
  size_t offset;            /* into options_t */
  const char *help;         /* one paragraph, as in the man page */
} option_def_t;

/* The table and its length. */
const option_def_t *options_table(size_t *n_out);
/* Look up an option by name, case-insensitively; NULL if unknown. */
const option_def_t *options_find(const char *name);

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
} options_command_t;

typedef struct {
  options_command_t command; /* the last action flag given wins */
  char *command_arg;     /* its value ("short", "ed25519", a password),
                          * "" if none */
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

/* GETCONF for the ControlPort: the canonical name and the values of the
 * option named name (case-insensitive), each as a torrc would write it
 * (newly allocated; *n 0 when unset). Returns 0, or -1 for an unknown
 * option. */
int options_get_values(const options_t *o, const char *name,
                       char **canonical, char ***values, int *n);

/* Whether two options_t have the same value for one option. */
int options_equal(const options_t *a, const options_t *b,
                  const option_def_t *def);

/* --list-options: every option with its syntax, default, whether SIGHUP
 * changes it, and its help text. Lines naming an option start in column
 * 0; the rest are indented. */
void options_list(FILE *out);
/* --help. */
void options_usage(FILE *out, const char *progname, const char *torrc);

#endif
