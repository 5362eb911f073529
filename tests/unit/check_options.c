/* SPDX-License-Identifier: BSD-3-Clause */
/* check_options.c -- unit tests for app/config/options: defaults, torrc
 * plus command line (overrides, +append, /clear), repeated options, error
 * messages naming option and line, Nickname and ORPort rules, cross-option
 * rules, and keeping non-reloadable options on SIGHUP. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/or/cpuworker.h"
#include "core/or/dos_options.h"
#include "lib/utcp/utcp.h"
#include "app/config/options.h"
#include "app/config/tor_option_names.h"
#include "feature/client/guards.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_options.h"
#include "feature/conflux/conflux_set.h"
#include "feature/dircache/dirreq_stats.h"
#include "feature/ipsec/ipsec_options.h"
#include "feature/measureme/measureme_options.h"
#include "lib/conf/conf.h"
#include "lib/log/log.h"

Suite *suite_options(void);

static conf_line_t *
lex(const char *text)
{
  conf_line_t *lines = NULL;
  char *err = NULL;
  int r = conf_lex_text(text, strlen(text), "test.torrc", &lines, &err);
  ck_assert_msg(r == 0, "lex: %s", err);
  return lines;
}

static conf_line_t *
cmdline(int argc, char **argv)
{
  conf_line_t *flags = NULL, *opts = NULL;
  char *err = NULL;
  ck_assert_int_eq(conf_lex_cmdline(argc, argv, NULL, &flags, &opts, &err),
                   0);
  ck_assert_ptr_null(flags);
  return opts;
}

/* Parse torrc text and optional argv as options_from_lines() would with
 * the data directory /srv/pctor; returns its result. */
static int
parse_text(const char *text, int argc, char **argv, options_t **o,
           char **err)
{
  conf_line_t *f = lex(text), *c = argc ? cmdline(argc, argv) : NULL;
  *o = NULL;
  *err = NULL;
  int r = options_from_lines(f, c, "/srv/pctor", o, err);
  conf_lines_free(f);
  conf_lines_free(c);
  return r;
}

/* Parse torrc text and optional argv; must succeed. */
static options_t *
parse_ok(const char *text, int argc, char **argv)
{
  options_t *o;
  char *err;
  int r = parse_text(text, argc, argv, &o, &err);
  ck_assert_msg(r == 0, "options: %s", err ? err : "(null)");
  ck_assert_ptr_nonnull(o);
  return o;
}

/* Parse torrc text; must fail. Returns the message (caller frees). */
static char *
parse_bad(const char *text, int argc, char **argv)
{
  options_t *o;
  char *err;
  ck_assert_int_eq(parse_text(text, argc, argv, &o, &err), -1);
  ck_assert_ptr_null(o);
  ck_assert_ptr_nonnull(err);
  return err;
}

static void
assert_has(const char *s, const char *needle)
{
  ck_assert_msg(strstr(s, needle) != NULL, "'%s' not in '%s'", needle, s);
}

/* Captures warnings logged during a test. */
static char warnings[4096];
static void
warn_hook(log_severity_t sev, const char *msg, void *arg)
{
  (void)sev;
  (void)arg;
  size_t n = strlen(warnings);
  snprintf(warnings + n, sizeof(warnings) - n, "%s\n", msg);
}

static void
capture_warnings(void)
{
  warnings[0] = '\0';
  log_set_hook(LOG_SEV_WARN, warn_hook, NULL);
}

START_TEST(test_defaults)
{
  options_t *o = parse_ok("", 0, NULL);
  ck_assert_str_eq(o->nickname, "Unnamed");
  ck_assert_int_eq(o->or_ports.n, 0);
  ck_assert_int_eq(o->address.n, 0);
  ck_assert_int_eq(o->address_ip.family, AF_UNSPEC);
  ck_assert_int_eq(o->address_ip6.family, AF_UNSPEC);
  ck_assert_ptr_null(o->contact_info);
  ck_assert_int_eq(o->logs.n, 0);
  ck_assert_int_eq(o->run_as_daemon, 0);
  ck_assert_ptr_null(o->pid_file);
  ck_assert_ptr_null(o->user);
  ck_assert_int_eq(o->testing_tor_network, 0);
  ck_assert_int_eq(o->extend_allow_private_addresses, 0);
  ck_assert_int_eq(o->assume_reachable, 0); /* tor's default */
  ck_assert_int_eq(o->onion_key_rotation_days, 28);
  ck_assert_int_eq(o->onion_key_grace_period_days, 7);
  /* MeasureMe is off unless the operator turns it on. */
  const measureme_options_t *mmo = options_module(o, &measureme_conf_module);
  ck_assert_int_eq(mmo->enabled, 0);
  ck_assert_uint_eq(mmo->log_max_size, 100ULL * 1024 * 1024);
  ck_assert_int_eq(mmo->client_rate, 60);
  ck_assert_int_eq(mmo->client_burst, 120);
  ck_assert_int_eq(o->dir_authorities.n, 0);
  ck_assert_int_eq(o->my_family.n, 0);
  ck_assert_int_eq(o->publish_server_descriptor, 1);
  ck_assert_int_eq(o->assume_reachable, 0);
  ck_assert_int_eq(o->is_exit, 0);
  ck_assert_int_eq(o->exit_policy.n, 0);
  char *dd = options_default_data_directory(geteuid() == 0, getenv("HOME"));
  ck_assert_str_eq(o->data_directory, dd);
  free(dd);
  options_free(o);
  ck_assert_ptr_null(o);

  dd = options_default_data_directory(1, "/home/alice");
  ck_assert_str_eq(dd, "/var/lib/pctor");
  free(dd);
  dd = options_default_data_directory(0, "/home/alice");
  ck_assert_str_eq(dd, "/home/alice/.pctor");
  free(dd);
  dd = options_default_data_directory(0, "/home/bob/");
  ck_assert_str_eq(dd, "/home/bob/.pctor");
  free(dd);

  /* Every row has a name, a syntax, help and a documented default. */
  size_t n = options_count();
  ck_assert_uint_ge(n, 56);
  for (size_t i = 0; i < n; i++) {
    const option_def_t *t = options_var(i);
    ck_assert_ptr_nonnull(t->syntax);
    ck_assert_ptr_nonnull(t->default_doc);
    ck_assert_uint_gt(strlen(t->help), 20);
    ck_assert_ptr_eq(options_find(t->name), t);
  }
  ck_assert_ptr_null(options_var(n));
  /* Every registered table's defaults parse; names are unique. */
  char *err = NULL;
  ck_assert_msg(options_module_check_all(&err) == 0, "%s", err);
  ck_assert_ptr_eq(options_find("orport"), options_find("ORPort"));
  ck_assert_ptr_null(options_find("NoSuchOption"));
}
END_TEST

START_TEST(test_file_values)
{
  options_t *o = parse_ok(
      "# a relay\n"
      "nickname  MyRelay42\n"
      "ContactInfo \"ops <at> example.org\"\n"
      "ORPort 9001\n"
      "orport [2001:db8::5]:443\n"
      "Address relay.example.org\n"
      "DataDirectory data\n"
      "PidFile /run/pctor.pid\n"
      "RunAsDaemon 1\n"
      "User root\n"
      "OnionKeyRotationDays 30\n"
      "OnionKeyGracePeriodDays 30\n",
      0, NULL);
  ck_assert_str_eq(o->nickname, "MyRelay42");
  ck_assert_str_eq(o->contact_info, "ops <at> example.org");
  ck_assert_int_eq(o->or_ports.n, 2);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET);
  ck_assert_int_eq(o->or_ports.addrs[0].port, 9001);
  static const uint8_t zero[16] = {0};
  ck_assert_mem_eq(o->or_ports.addrs[0].addr, zero, 16);
  ck_assert_int_eq(o->or_ports.addrs[1].family, AF_INET6);
  ck_assert_int_eq(o->or_ports.addrs[1].port, 443);
  ck_assert_int_eq(o->or_ports.addrs[1].addr[15], 5);
  ck_assert_int_eq(o->address.n, 1);
  ck_assert_str_eq(o->address.v[0], "relay.example.org");
  ck_assert_int_eq(o->address_ip.family, AF_UNSPEC);
  ck_assert_str_eq(o->data_directory, "/srv/pctor/data");
  ck_assert_str_eq(o->pid_file, "/run/pctor.pid");
  ck_assert_int_eq(o->run_as_daemon, 1);
  ck_assert_str_eq(o->user, "root");
  ck_assert_int_eq(o->onion_key_rotation_days, 30);
  ck_assert_int_eq(o->onion_key_grace_period_days, 30);
  options_free(o);

  /* ~/ expands to $HOME; trailing slashes go; IP Address is parsed. */
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", "/home/tester", 1);
  o = parse_ok("DataDirectory ~/relay/\nAddress 192.0.2.7\n", 0, NULL);
  ck_assert_str_eq(o->data_directory, "/home/tester/relay");
  ck_assert_int_eq(o->address_ip.family, AF_INET);
  ck_assert_int_eq(o->address_ip.addr[3], 7);
  options_free(o);
  if (old_home) {
    setenv("HOME", old_home, 1);
    free(old_home);
  } else {
    unsetenv("HOME");
  }
}
END_TEST

START_TEST(test_cmdline_overrides)
{
  char *argv[] = {"pctor", "--Nickname", "FromCmdline", "ORPort", "9002",
                  NULL};
  options_t *o = parse_ok("Nickname FromFile\nORPort 9001\n"
                          "ContactInfo file\n", 5, argv);
  ck_assert_str_eq(o->nickname, "FromCmdline");
  ck_assert_int_eq(o->or_ports.n, 2); /* IPv4 and IPv6 */
  ck_assert_int_eq(o->or_ports.addrs[0].port, 9002);
  ck_assert_str_eq(o->contact_info, "file");
  options_free(o);

  /* The command line may reset an option to its default. */
  char *argv2[] = {"pctor", "--/Nickname", NULL};
  o = parse_ok("Nickname FromFile\n", 2, argv2);
  ck_assert_str_eq(o->nickname, "Unnamed");
  options_free(o);
}
END_TEST

START_TEST(test_log_lines)
{
  const char *torrc = "Log notice stderr\nLog info file /tmp/pctor-x.log\n";
  options_t *o = parse_ok(torrc, 0, NULL);
  ck_assert_int_eq(o->logs.n, 2);
  ck_assert_str_eq(o->logs.v[0], "notice stderr");
  ck_assert_str_eq(o->logs.v[1], "info file /tmp/pctor-x.log");
  options_free(o);

  /* --Log replaces all the file's Log lines; repeated --Log add. */
  char *a1[] = {"pctor", "--Log", "warn stdout", "--Log", "err syslog",
                NULL};
  o = parse_ok(torrc, 5, a1);
  ck_assert_int_eq(o->logs.n, 2);
  ck_assert_str_eq(o->logs.v[0], "warn stdout");
  ck_assert_str_eq(o->logs.v[1], "err syslog");
  options_free(o);

  /* --+Log appends, --/Log clears. */
  char *a2[] = {"pctor", "--+Log", "debug stdout", NULL};
  o = parse_ok(torrc, 3, a2);
  ck_assert_int_eq(o->logs.n, 3);
  ck_assert_str_eq(o->logs.v[2], "debug stdout");
  options_free(o);
  char *a3[] = {"pctor", "--/Log", NULL};
  o = parse_ok(torrc, 2, a3);
  ck_assert_int_eq(o->logs.n, 0);
  options_free(o);

  /* An empty Log line is ignored with a warning. */
  capture_warnings();
  o = parse_ok("Log\nLog notice stdout\n", 0, NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  ck_assert_int_eq(o->logs.n, 1);
  assert_has(warnings, "Option 'Log' on line 1 of test.torrc has no value");
  options_free(o);

  char *err = parse_bad("Nickname a\n\nLog loud stderr\n", 0, NULL);
  assert_has(err, "Option 'Log' on line 3 of test.torrc: ");
  assert_has(err, "unknown severity");
  free(err);
}
END_TEST

START_TEST(test_scheduler_options)
{
  options_t *o = parse_ok("Nickname a\n", 0, NULL);
  ck_assert(o->circuit_priority_halflife == -1); /* from the consensus */
  ck_assert_int_eq(o->scheduler_socket_aware, 1);
  ck_assert_int_eq(o->kist_sched_run_interval, 2);
  ck_assert(o->kist_sock_buf_size_factor == 1.0);
  options_free(o);
  o = parse_ok("CircuitPriorityHalflife 2.5\nSchedulers KISTLite,KIST\n"
               "KISTSockBufSizeFactor 0.25\nKISTSchedRunInterval 10\n",
               0, NULL);
  ck_assert(o->circuit_priority_halflife == 2.5);
  ck_assert_int_eq(o->scheduler_socket_aware, 0);
  ck_assert(o->kist_sock_buf_size_factor == 0.25);
  ck_assert_int_eq(o->kist_sched_run_interval, 10);
  options_free(o);
  o = parse_ok("CircuitPriorityHalflife -1\n", 0, NULL);
  ck_assert(o->circuit_priority_halflife == 0); /* off */
  options_free(o);
  char *err = parse_bad("CircuitPriorityHalflife fast\n", 0, NULL);
  ck_assert_str_eq(err, "Option 'CircuitPriorityHalflife' on line 1 of "
                        "test.torrc: 'fast' is not a number. Failing.");
  free(err);
  err = parse_bad("Schedulers Vanilla\n", 0, NULL);
  ck_assert(strstr(err, "Vanilla is not supported yet") != NULL);
  free(err);
  /* CircuitTransport: backtap and dtls-tcp run on a DatagramPort;
   * dtls-tcp needs a build with lwIP. */
  o = parse_ok("DatagramPort 127.0.0.1:9050\nCircuitTransport backtap\n", 0,
               NULL);
  options_free(o);
  err = parse_bad("CircuitTransport backtap\n", 0, NULL);
  ck_assert(strstr(err, "CircuitTransport backtap needs a DatagramPort") !=
            NULL);
  free(err);
  if (utcp_available()) {
    o = parse_ok("DatagramPort 9050\nCircuitTransport dtls-tcp\n", 0, NULL);
    options_free(o);
    err = parse_bad("CircuitTransport dtls-tcp\n", 0, NULL);
    ck_assert(strstr(err, "CircuitTransport dtls-tcp needs a DatagramPort") !=
              NULL);
  } else {
    err = parse_bad("DatagramPort 9050\nCircuitTransport dtls-tcp\n", 0,
                    NULL);
    ck_assert(strstr(err, "'dtls-tcp' is not supported in this build") !=
              NULL);
  }
  free(err);
  err = parse_bad("Schedulers KIST,Magic\n", 0, NULL);
  ck_assert(strstr(err, "must list KIST and/or KISTLite") != NULL);
  free(err);
  err = parse_bad("KISTSockBufSizeFactor 101\n", 0, NULL);
  ck_assert(strstr(err, "'101' is out of range (0 to 100)") != NULL);
  free(err);
  err = parse_bad("KISTSchedRunInterval 0\n", 0, NULL);
  ck_assert(strstr(err, "out of range (1 to 100 milliseconds)") != NULL);
  free(err);
  /* Issue 22: reads by priority (default on), relay TCP congestion
   * control (default unset). */
  o = parse_ok("Nickname a\n", 0, NULL);
  ck_assert_int_eq(o->circuit_priority_reads, 1);
  ck_assert_ptr_null(o->relay_tcp_congestion_control);
  options_free(o);
  o = parse_ok("CircuitPriorityReads 0\nRelayTCPCongestionControl bbr\n", 0,
               NULL);
  ck_assert_int_eq(o->circuit_priority_reads, 0);
  ck_assert_str_eq(o->relay_tcp_congestion_control, "bbr");
  options_free(o);
  const char *bad_cc[] = {"RelayTCPCongestionControl BBR\n",
                          "RelayTCPCongestionControl a/b\n",
                          "RelayTCPCongestionControl abcdefghijklmnop\n"};
  for (size_t i = 0; i < sizeof(bad_cc) / sizeof(bad_cc[0]); i++) {
    err = parse_bad(bad_cc[i], 0, NULL);
    ck_assert_msg(strstr(err, "is not a TCP congestion control name") != NULL,
                  "%s", err);
    free(err);
  }
}
END_TEST

START_TEST(test_errors_name_line)
{
  char *err = parse_bad("# 1\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n"
                        "# 10\nNickname ok\nFoo bar\n", 0, NULL);
  ck_assert_str_eq(err, "Unknown option 'Foo' on line 12 of test.torrc. "
                        "Failing.");
  free(err);

  err = parse_bad("Nickname a\n\nORPort 70000\n", 0, NULL);
  ck_assert_str_eq(err, "Option 'ORPort' on line 3 of test.torrc: "
                        "'70000' is not a port number (1 to 65535). "
                        "Failing.");
  free(err);

  char *argv[] = {"pctor", "--Nickname", "x", "--Bogus", "1", NULL};
  err = parse_bad("", 5, argv);
  ck_assert_str_eq(err, "Unknown option 'Bogus' on the command line "
                        "(argument 3). Failing.");
  free(err);

  static const struct {
    const char *torrc;
    const char *needle;
  } cases[] = {
    {"RunAsDaemon yes\n", "Option 'RunAsDaemon' on line 1 of test.torrc: "
                          "'yes' is not a boolean"},
    {"\nOnionKeyRotationDays 91\n", "Option 'OnionKeyRotationDays' on line "
                                    "2 of test.torrc: '91' is out of range "
                                    "(1 to 90)"},
    {"OnionKeyRotationDays 0\n", "out of range (1 to 90)"},
    {"OnionKeyRotationDays 5\n", "Option 'OnionKeyRotationDays' on line 1 "
                                 "of test.torrc: OnionKeyGracePeriodDays (7)"
                                 " must not be larger than "
                                 "OnionKeyRotationDays (5)"},
    {"OnionKeyRotationDays 10\nOnionKeyGracePeriodDays 11\n",
     "Option 'OnionKeyGracePeriodDays' on line 2"},
    {"User pctor-no-such-user\n", "Option 'User' on line 1 of test.torrc: "
                                  "there is no user named "
                                  "'pctor-no-such-user'"},
    {"Address bad_host!\n", "is neither an IP address nor a host name"},
    {"Address 192.0.2.1:9001\n", "without a port"},
    {"Address [2001:db8::1]:9001\n", "without a port"},
    {"Address 192.0.2.1\nAddress 192.0.2.2\n",
     "Option 'Address' on line 2 of test.torrc: two IPv4 Address lines "
     "('192.0.2.1' and '192.0.2.2'); only one per address family is "
     "allowed. Failing."},
    {"Address 2001:db8::1\nAddress [2001:db8::2]\n",
     "two IPv6 Address lines ('2001:db8::1' and '[2001:db8::2]')"},
    {"Address 192.0.2.1\nAddress 2001:db8::1\nAddress relay.example\n",
     "Option 'Address' on line 3 of test.torrc: more than two Address "
     "lines; give at most one IPv4 and one IPv6 address (or host name)"},
    {"Address 12345\n", "is neither an IP address nor a host name"},
    {"ContactInfo \"a\\nb\"\n", "control characters are not allowed"},
    {"DataDirectory ~bob/x\n", "~user paths are not supported"},
    {"TestingTorNetwork 2\n", "not a boolean"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    err = parse_bad(cases[i].torrc, 0, NULL);
    assert_has(err, cases[i].needle);
    assert_has(err, "Failing.");
    free(err);
  }
}
END_TEST

START_TEST(test_nickname_rules)
{
  options_t *o = parse_ok("Nickname ABCDEFGHIJ012345678\n", 0, NULL);
  ck_assert_str_eq(o->nickname, "ABCDEFGHIJ012345678"); /* 19 */
  options_free(o);
  o = parse_ok("Nickname x\n", 0, NULL);
  ck_assert_str_eq(o->nickname, "x");
  options_free(o);
  /* An empty value resets to the default. */
  o = parse_ok("Nickname x\nNickname\n", 0, NULL);
  ck_assert_str_eq(o->nickname, "Unnamed");
  options_free(o);

  const char *bad[] = {"Nickname ABCDEFGHIJ0123456789\n", /* 20 */
                       "Nickname bad-name\n", "Nickname \"caf\\xc3\\xa9\"\n",
                       "Nickname \"two words\"\n", "Nickname a_b\n"};
  for (size_t i = 0; i < 5; i++) {
    char *err = parse_bad(bad[i], 0, NULL);
    assert_has(err, "Option 'Nickname' on line 1 of test.torrc: ");
    assert_has(err, "is not a valid nickname");
    free(err);
  }

  /* Repeating a single-valued option warns and keeps the last value. */
  capture_warnings();
  o = parse_ok("Nickname first\n\nNickname second\n", 0, NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  ck_assert_str_eq(o->nickname, "second");
  assert_has(warnings, "Option 'Nickname' is set on line 1 of test.torrc "
                       "and again on line 3 of test.torrc");
  options_free(o);
}
END_TEST

START_TEST(test_orport_forms)
{
  options_t *o = parse_ok("ORPort 127.0.0.1:9001\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 1);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET);
  static const uint8_t lo[4] = {127, 0, 0, 1};
  ck_assert_mem_eq(o->or_ports.addrs[0].addr, lo, 4);
  options_free(o);

  o = parse_ok("ORPort [::1]:9001\nORPort 9001\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 2);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET6);
  ck_assert_int_eq(o->or_ports.addrs[1].family, AF_INET);
  options_free(o);

  o = parse_ok("ORPort 0\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 0);
  options_free(o);

  /* An empty ORPort line starts over. */
  o = parse_ok("ORPort 9001\nORPort\nORPort 9002\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 2); /* 0.0.0.0:9002 and [::]:9002 */
  ck_assert_int_eq(o->or_ports.addrs[0].port, 9002);
  ck_assert_int_eq(o->or_ports.addrs[1].port, 9002);
  options_free(o);

  static const struct {
    const char *torrc;
    const char *needle;
  } cases[] = {
    {"ORPort 9001\nORPort 10.0.0.1:9002\n",
     "Option 'ORPort' on line 2 of test.torrc: there is already a "
     "listening IPv4 ORPort (on line 1 of test.torrc)"},
    {"ORPort [::1]:1\nORPort [::2]:2\n", "already a listening IPv6 ORPort"},
    {"ORPort 443 NoListen\nORPort 9001 NoListen\n",
     "already an advertised IPv4 ORPort"},
    {"ORPort 443 NoListen NoAdvertise\n", "leave nothing to do"},
    {"ORPort 443 IPv4Only IPv6Only\n", "cannot both be given"},
    {"ORPort [::1]:443 IPv4Only\n", "other family"},
    {"ORPort 443 Fast\n", "'Fast' is not an ORPort flag pctor supports"},
    {"ORPort 0\nORPort 9001\n", "cannot be combined"},
    {"ORPort 9001\nORPort 0\n", "cannot be combined"},
    {"ORPort relay.example.org:9001\n", "is not an IPv4 address"},
    {"ORPort 1.2.3.4\n", "a port is needed"},
    {"ORPort -1\n", "is not an IPv4 or IPv6 address"},
    {"ORPort 10.0.0.1:0\n", "is not a port number"},
    {"ORPort ::1\n", "[ADDRESS]:PORT"},
    {"ORPort auto NoListen\n", "'ORPort auto' with NoListen"},
    {"ORPort 127.0.0.1:auto NoAdvertise\nORPort auto IPv4Only\n",
     "already a listening IPv4 ORPort"},
    {"ORPort host:auto\n", "'host' is not an IP address"},
    {"ORPort [::1]:auto\nORPort [::2]:9001\n",
     "already a listening IPv6 ORPort"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *err = parse_bad(cases[i].torrc, 0, NULL);
    assert_has(err, cases[i].needle);
    assert_has(err, "Option 'ORPort' on line");
    free(err);
  }

  /* tor's flags: a relay behind port forwarding advertises 443 and
   * listens on 9090; IPv6Only makes a port alone an IPv6 one. */
  o = parse_ok("ORPort 203.0.113.5:443 NoListen\n"
               "ORPort 127.0.0.1:9090 noadvertise\n"
               "ORPort 9001 IPv6Only\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 3);
  ck_assert_uint_eq(o->or_ports.flags[0], OPTIONS_PORT_NO_LISTEN);
  ck_assert_uint_eq(o->or_ports.flags[1], OPTIONS_PORT_NO_ADVERTISE);
  ck_assert_int_eq(o->or_ports.addrs[2].family, AF_INET6);
  pc_addr_t adv[4];
  ck_assert_int_eq(options_orports_advertised(&o->or_ports, adv), 2);
  ck_assert_int_eq(adv[0].port, 443);
  ck_assert_int_eq(adv[1].port, 9001);
  options_t *base = parse_ok("", 0, NULL);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  options_dump(out, o, base);
  fclose(out);
  assert_has(buf, "ORPort 203.0.113.5:443 NoListen\n"
                  "ORPort 127.0.0.1:9090 NoAdvertise\n"
                  "ORPort 9001 IPv6Only\n");
  free(buf);
  options_free(base);
  options_free(o);

  /* The command line replaces the file's ORPort lines. */
  char *argv[] = {"pctor", "--ORPort", "[::]:9050", NULL};
  o = parse_ok("ORPort 9001\n", 3, argv);
  ck_assert_int_eq(o->or_ports.n, 1);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET6);
  ck_assert_int_eq(o->or_ports.addrs[0].port, 9050);
  options_free(o);
}
END_TEST

/* A dump of o's options that differ from the defaults. */
static char *
dump_of(const options_t *o)
{
  options_t *base = parse_ok("", 0, NULL);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  options_dump(out, o, base);
  fclose(out);
  options_free(base);
  return buf;
}

/* ORPort/DirPort auto, and a bare ORPort on IPv4 and IPv6 (tor 0.4.9). */
START_TEST(test_orport_auto_dual_stack)
{
  static const uint8_t zero[16] = {0};
  options_t *o = parse_ok("ORPort 9001\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 2);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET);
  ck_assert_int_eq(o->or_ports.addrs[1].family, AF_INET6);
  ck_assert_mem_eq(o->or_ports.addrs[1].addr, zero, 16);
  ck_assert_int_eq(o->or_ports.addrs[1].port, 9001);
  ck_assert_uint_eq(o->or_ports.flags[0], OPTIONS_PORT_BARE);
  ck_assert_uint_eq(o->or_ports.flags[1],
                    OPTIONS_PORT_BARE | OPTIONS_PORT_IMPLICIT);
  pc_addr_t adv[4];
  ck_assert_int_eq(options_orports_advertised(&o->or_ports, adv), 2);
  char *d = dump_of(o); /* one line, as written */
  assert_has(d, "ORPort 9001\n");
  ck_assert_ptr_null(strstr(d, "[::]"));
  free(d);
  options_free(o);

  o = parse_ok("ORPort 9001 IPv4Only\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 1);
  ck_assert_int_eq(o->or_ports.addrs[0].family, AF_INET);
  options_free(o);

  /* An IPv6 line of its own replaces the [::] half, before or after. */
  o = parse_ok("ORPort 9001\nORPort [2001:db8::1]:9001\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 2);
  ck_assert_int_eq(o->or_ports.addrs[1].addr[15], 1);
  ck_assert_uint_eq(o->or_ports.flags[1], 0);
  options_free(o);
  /* ... only in the role that line takes: [::] still listens. */
  o = parse_ok("ORPort [2001:db8::1]:443 NoListen\nORPort 9001\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 3);
  ck_assert_uint_eq(o->or_ports.flags[2], OPTIONS_PORT_BARE |
                                              OPTIONS_PORT_IMPLICIT |
                                              OPTIONS_PORT_NO_ADVERTISE);
  ck_assert_int_eq(options_orports_advertised(&o->or_ports, adv), 2);
  ck_assert_int_eq(adv[0].port, 443);
  ck_assert_int_eq(adv[1].family, AF_INET);
  options_free(o);

  /* auto: port 0 until the listener is bound; both families. */
  o = parse_ok("ORPort auto\nDirPort auto\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(o->or_ports.addrs[i].port, 0);
    ck_assert(o->or_ports.flags[i] & OPTIONS_PORT_AUTO);
  }
  ck_assert_int_eq(o->dir_ports.n, 1); /* tor's DirPort: IPv4 only */
  ck_assert_int_eq(o->dir_ports.addrs[0].family, AF_INET);
  ck_assert_uint_eq(o->dir_ports.flags[0],
                    OPTIONS_PORT_AUTO | OPTIONS_PORT_BARE);
  d = dump_of(o);
  assert_has(d, "ORPort auto\n");
  assert_has(d, "DirPort auto\n");
  free(d);
  options_free(o);

  o = parse_ok("ORPort 127.0.0.1:auto NoAdvertise\nORPort [::1]:AUTO\n"
               "ORPort 192.0.2.1:443 NoListen\n", 0, NULL);
  ck_assert_int_eq(o->or_ports.n, 3);
  ck_assert_uint_eq(o->or_ports.flags[0],
                    OPTIONS_PORT_AUTO | OPTIONS_PORT_NO_ADVERTISE);
  ck_assert_int_eq(o->or_ports.addrs[0].addr[0], 127);
  ck_assert_int_eq(o->or_ports.addrs[1].family, AF_INET6);
  ck_assert_int_eq(o->or_ports.addrs[1].addr[15], 1);
  d = dump_of(o);
  assert_has(d, "ORPort 127.0.0.1:auto NoAdvertise\n"
                "ORPort [::1]:auto\n"
                "ORPort 192.0.2.1:443 NoListen\n");
  free(d);
  options_free(o);

  /* Address once per family, as tor 0.4.5+: literals (IPv6 with or
   * without brackets) are kept per family, host names as given. */
  o = parse_ok("ORPort 9001\nAddress [2001:db8::7]\nAddress 192.0.2.7\n",
               0, NULL);
  ck_assert_int_eq(o->address.n, 2);
  ck_assert_str_eq(o->address.v[0], "[2001:db8::7]");
  ck_assert_int_eq(o->address_ip.family, AF_INET);
  ck_assert_int_eq(o->address_ip.addr[3], 7);
  ck_assert_int_eq(o->address_ip6.family, AF_INET6);
  ck_assert_int_eq(o->address_ip6.addr[15], 7);
  ck_assert_int_eq(o->address_ip6.port, 0);
  d = dump_of(o);
  assert_has(d, "Address [2001:db8::7]\nAddress 192.0.2.7\n");
  free(d);
  options_free(o);
  o = parse_ok("Address 2001:db8::8\n", 0, NULL);
  ck_assert_int_eq(o->address_ip.family, AF_UNSPEC);
  ck_assert_int_eq(o->address_ip6.addr[15], 8);
  options_free(o);
  o = parse_ok("Address relay.example\nAddress 2001:db8::8\n", 0, NULL);
  ck_assert_int_eq(o->address.n, 2);
  ck_assert_int_eq(o->address_ip.family, AF_UNSPEC);
  ck_assert_int_eq(o->address_ip6.family, AF_INET6);
  options_free(o);
  /* An empty value resets it (as every repeatable option). */
  o = parse_ok("Address 192.0.2.1\nAddress 192.0.2.2\nAddress\n", 0,
               NULL);
  ck_assert_int_eq(o->address.n, 0);
  ck_assert_int_eq(o->address_ip.family, AF_UNSPEC);
  options_free(o);

  /* tor's AddressDisableIPv6: no IPv6 discovery for [::]. */
  o = parse_ok("ORPort 9001\nAddressDisableIPv6 1\n", 0, NULL);
  ck_assert_int_eq(o->address_disable_ipv6, 1);
  options_free(o);

  /* ControlPort and MetricsPort took auto already. */
  o = parse_ok("ControlPort auto\nMetricsPort 127.0.0.1:auto\n", 0, NULL);
  options_free(o);
  o = parse_ok("MetricsPort auto\n", 0, NULL);
  options_free(o);
}
END_TEST

#define AUTH_LINE \
  "DirAuthority auth0 orport=7000 no-v2 " \
  "v3ident=0123456789ABCDEF0123456789ABCDEF01234567 127.0.0.1:7001 " \
  "AAAA BBBB CCCC DDDD EEEE FFFF 0000 1111 2222 3333\n"

START_TEST(test_testing_network)
{
  options_t *o = parse_ok("TestingTorNetwork 1\n" AUTH_LINE, 0, NULL);
  ck_assert_int_eq(o->testing_tor_network, 1);
  ck_assert_int_eq(o->extend_allow_private_addresses, 1);
  options_free(o);
  /* No ContactInfo warning in a test network. */
  o = parse_ok("TestingTorNetwork 1\nORPort 9001\n" AUTH_LINE, 0, NULL);
  ck_assert_int_eq(options_warn_no_contact_info(o), 0);
  options_free(o);
  o = parse_ok("TestingTorNetwork 1\n" AUTH_LINE, 0, NULL);
  /* Test networks publish at once unless AssumeReachable 0 is set. */
  ck_assert_int_eq(o->assume_reachable, 1);
  /* Nothing else changes. */
  ck_assert_int_eq(o->onion_key_rotation_days, 28);
  ck_assert_int_eq(o->onion_key_grace_period_days, 7);
  options_free(o);
  o = parse_ok("TestingTorNetwork 1\nExtendAllowPrivateAddresses 0\n"
               AUTH_LINE, 0, NULL);
  ck_assert_int_eq(o->extend_allow_private_addresses, 0);
  options_free(o);
  o = parse_ok("TestingTorNetwork 1\nAssumeReachable 0\n" AUTH_LINE, 0,
               NULL);
  ck_assert_int_eq(o->assume_reachable, 0);
  /* AssumeReachableIPv6 (tor's autobool): auto by default; 0 cannot go
   * with AssumeReachable 1, explicit or the test network's default. */
  ck_assert_int_eq(o->assume_reachable_ipv6, -1);
  options_free(o);
  o = parse_ok("TestingTorNetwork 1\nAssumeReachable 0\n"
               "AssumeReachableIPv6 0\n" AUTH_LINE, 0, NULL);
  ck_assert_int_eq(o->assume_reachable_ipv6, 0);
  options_free(o);
  o = parse_ok("AssumeReachableIPv6 1\n", 0, NULL);
  ck_assert_int_eq(o->assume_reachable_ipv6, 1);
  ck_assert_int_eq(o->assume_reachable, 0);
  options_free(o);
  char *e6 = parse_bad("AssumeReachable 1\nAssumeReachableIPv6 0\n", 0,
                       NULL);
  assert_has(e6, "Cannot set AssumeReachable 1 and AssumeReachableIPv6 0");
  free(e6);
  e6 = parse_bad("TestingTorNetwork 1\nAssumeReachableIPv6 0\n" AUTH_LINE, 0,
                 NULL);
  assert_has(e6, "the default with TestingTorNetwork 1");
  free(e6);
  /* IPv6Exit: a boolean; 1 makes ExitRelay auto an exit, as tor. */
  o = parse_ok("ORPort 9001\nIPv6Exit 1\n", 0, NULL);
  ck_assert_int_eq(o->ipv6_exit, 1);
  ck_assert_int_eq(o->is_exit, 1);
  options_free(o);
  o = parse_ok("ORPort 9001\nIPv6Exit 1\nExitRelay 0\n", 0, NULL);
  ck_assert_int_eq(o->is_exit, 0);
  options_free(o);
  o = parse_ok("ORPort 9001\n", 0, NULL);
  ck_assert_int_eq(o->ipv6_exit, 0);
  ck_assert_int_eq(o->is_exit, 0);
  options_free(o);
  o = parse_ok("ExtendAllowPrivateAddresses 1\n", 0, NULL);
  ck_assert_int_eq(o->extend_allow_private_addresses, 1);
  ck_assert_int_eq(o->testing_tor_network, 0);
  options_free(o);
  /* A test network never uses the public authorities. */
  char *err = parse_bad("TestingTorNetwork 1\n", 0, NULL);
  assert_has(err, "TestingTorNetwork requires DirAuthority lines");
  free(err);
  char *argv[] = {"pctor", "--/DirAuthority", NULL};
  err = parse_bad("TestingTorNetwork 1\n" AUTH_LINE, 2, argv);
  assert_has(err, "TestingTorNetwork requires DirAuthority lines");
  free(err);
  /* tor's testing events: only in a test network, with tor's reason */
  o = parse_ok("TestingTorNetwork 1\nTestingEnableConnBwEvent 1\n"
               "TestingEnableCellStatsEvent 1\n" AUTH_LINE, 0, NULL);
  ck_assert_int_eq(o->testing_enable_conn_bw_event, 1);
  ck_assert_int_eq(o->testing_enable_cell_stats_event, 1);
  options_free(o);
  err = parse_bad("TestingEnableConnBwEvent 1\n", 0, NULL);
  assert_has(err, "TestingEnableConnBwEvent may only be changed in testing "
                  "Tor networks!");
  free(err);
  err = parse_bad("TestingEnableCellStatsEvent 1\n", 0, NULL);
  assert_has(err, "TestingEnableCellStatsEvent may only be changed in "
                  "testing Tor networks!");
  free(err);
}
END_TEST

START_TEST(test_directory_options)
{
  options_t *o = parse_ok(AUTH_LINE
                          "DirAuthority 127.0.0.1:7004 "
                          "0123456789ABCDEF0123456789ABCDEF01234567\n"
                          "PublishServerDescriptor 0\nAssumeReachable 1\n"
                          "MyFamily $aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                          "~Sister, Brother\n"
                          "MyFamily Cousin brother "
                          "$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
                          "ExitPolicy accept *:80,reject  10.0.0.0/8:*  ,"
                          " accept 192.0.2.0/24:1-1024\n"
                          "ExitPolicy reject *:*\n",
                          0, NULL);
  ck_assert_int_eq(o->dir_authorities.n, 2);
  assert_has(o->dir_authorities.v[1], "127.0.0.1:7004");
  ck_assert_int_eq(o->publish_server_descriptor, 0);
  ck_assert_int_eq(o->assume_reachable, 1);
  /* Normalised, without duplicates (nicknames compare case-blind). */
  ck_assert_int_eq(o->my_family.n, 3);
  ck_assert_str_eq(o->my_family.v[0],
                   "$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  ck_assert_str_eq(o->my_family.v[1], "Brother");
  ck_assert_str_eq(o->my_family.v[2], "Cousin");
  ck_assert_int_eq(o->exit_policy.n, 4);
  ck_assert_str_eq(o->exit_policy.v[0], "accept *:80");
  ck_assert_str_eq(o->exit_policy.v[1], "reject 10.0.0.0/8:*");
  ck_assert_str_eq(o->exit_policy.v[2], "accept 192.0.2.0/24:1-1024");
  ck_assert_str_eq(o->exit_policy.v[3], "reject *:*");
  /* Reloadable: a reload keeps nothing back. */
  options_t *o2 = parse_ok("", 0, NULL);
  ck_assert_int_eq(options_keep_non_reloadable(o, o2), 0);
  options_free(o2);
  /* The command line replaces the torrc's lines. */
  char *argv[] = {"pctor", "--MyFamily", "solo", NULL};
  options_free(o);
  o = parse_ok("MyFamily a,b\n", 3, argv);
  ck_assert_int_eq(o->my_family.n, 1);
  ck_assert_str_eq(o->my_family.v[0], "solo");
  options_free(o);

  static const struct {
    const char *torrc, *needle;
  } cases[] = {
    {"DirAuthority 127.0.0.1:7001\n", "Option 'DirAuthority' on line 1"},
    {"DirAuthority nonsense\n", "Option 'DirAuthority' on line 1"},
    {"MyFamily $1234\n", "is not a relay fingerprint"},
    {"MyFamily bad-name\n", "nor a nickname"},
    {"ExitPolicy accept *:80,,reject *:*\n", "empty exit policy rule"},
    {"ExitPolicy allow *:80\n", "must start with accept, reject"},
    {"ExitPolicy accept *:0\n", "ExitPolicy: 'accept *:0'"},
    {"ExitPolicy accept 1.2.3.4:99999\n", "bad port"},
    {"ExitPolicy ,\n", "exit policy"},
    {"ExitRelay 2\n", "'2' must be 0, 1 or auto"},
    {"PublishServerDescriptor bridge\n", "'bridge' must be 0, 1 or v3"},
    {"AssumeReachable 2\n", "not a boolean"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *err = parse_bad(cases[i].torrc, 0, NULL);
    assert_has(err, cases[i].needle);
    assert_has(err, "Failing.");
    free(err);
  }
  o = parse_ok("ExitRelay 0\n", 0, NULL);
  ck_assert_int_eq(o->is_exit, 0);
  options_free(o);
  /* Exits and tor's full policy syntax are accepted now. */
  o = parse_ok("ExitRelay 1\nExitPolicy accept private:*, reject6 *:*\n"
               "ExitPolicyRejectPrivate 0\n"
               "ServerDNSResolvConfFile /tmp/resolv.conf\n",
               0, NULL);
  ck_assert_int_eq(o->is_exit, 1);
  ck_assert_int_eq(o->exit_policy.n, 2);
  ck_assert_int_eq(o->exit_policy_reject_private, 0);
  ck_assert_int_eq(o->exit_policy_reject_local_interfaces, 0);
  ck_assert_str_eq(o->server_dns_resolv_conf_file, "/tmp/resolv.conf");
  options_free(o);
  /* SocksPort: a bare port binds 127.0.0.1. */
  o = parse_ok("SocksPort 9050\nExitNodes $0123456789ABCDEF0123456789ABCDEF01234567"
               "\nMaxCircuitDirtiness 30\n", 0, NULL);
  ck_assert_int_eq(o->socks_ports.n, 1);
  ck_assert_int_eq(o->socks_ports.port[0].addr.family, AF_INET);
  ck_assert_uint_eq(o->socks_ports.port[0].addr.port, 9050);
  ck_assert_uint_eq(pc_addr_ipv4_h(&o->socks_ports.port[0].addr), 0x7f000001);
  ck_assert_uint_eq(o->socks_ports.port[0].iso, CLIENT_ISO_DEFAULT);
  ck_assert_int_eq(o->max_circuit_dirtiness, 30);
  options_free(o);
  o = parse_ok("SocksPort 0\n", 0, NULL);
  ck_assert_int_eq(o->socks_ports.n, 0);
  options_free(o);
  /* Several SocksPort lines with flags, and auto. */
  o = parse_ok("SocksPort 9050\nSocksPort auto IsolateDestPort "
               "NoIsolateSOCKSAuth SessionGroup=3\n"
               "SocksPort 127.0.0.2:auto KeepAliveIsolateSOCKSAuth\n",
               0, NULL);
  ck_assert_int_eq(o->socks_ports.n, 3);
  ck_assert_uint_eq(o->socks_ports.port[1].addr.port, 0);
  ck_assert_uint_eq(o->socks_ports.port[1].iso,
                    CLIENT_ISO_CLIENTADDR | CLIENT_ISO_DESTPORT |
                        CLIENT_ISO_SESSIONGRP);
  ck_assert_int_eq(o->socks_ports.port[1].session_group, 3);
  ck_assert_uint_eq(pc_addr_ipv4_h(&o->socks_ports.port[2].addr), 0x7f000002);
  ck_assert_uint_eq(o->socks_ports.port[2].flags, CLIENT_PORT_KEEPALIVE_AUTH);
  options_free(o);
  o = parse_ok("MaxMemInQueues 512 MB\n", 0, NULL);
  ck_assert_uint_eq(o->max_mem_in_queues, 512ULL * 1024 * 1024);
  options_free(o);
  char *e2 = parse_bad("MaxMemInQueues 1 MB\n", 0, NULL);
  assert_has(e2, "MaxMemInQueues");
  free(e2);
  /* MeasureMe limits. */
  o = parse_ok("MeasureMeLogMaxSize 2 MB\nMeasureMeClientRate 5\n", 0, NULL);
  const measureme_options_t *mmo =
      options_module(o, &measureme_conf_module);
  ck_assert_uint_eq(mmo->log_max_size, 2ULL * 1024 * 1024);
  ck_assert_int_eq(mmo->client_rate, 5);
  options_free(o);
  e2 = parse_bad("MeasureMeLogMaxSize 1 KB\n", 0, NULL);
  assert_has(e2, "MeasureMeLogMaxSize");
  free(e2);
  e2 = parse_bad("MeasureMeClientBurst 0\n", 0, NULL);
  assert_has(e2, "MeasureMeClientBurst");
  free(e2);
  e2 = parse_bad("SocksPort 70000\n", 0, NULL);
  assert_has(e2, "SocksPort '70000': the port must be 1 to 65535");
  free(e2);
  e2 = parse_bad("ExitNodes $12\n", 0, NULL);
  assert_has(e2, "ExitNodes");
  free(e2);
}
END_TEST

START_TEST(test_reload_keeps_non_reloadable)
{
  options_t *old = parse_ok("ORPort 9001\nNickname Old\nUser root\n"
                            "OnionKeyRotationDays 20\n", 0, NULL);
  options_t *new_opts = parse_ok("ORPort 9002\nNickname New\n"
                                 "OnionKeyRotationDays 21\n"
                                 "TestingTorNetwork 1\n" AUTH_LINE, 0,
                                 NULL);
  ck_assert_int_eq(new_opts->extend_allow_private_addresses, 1);
  capture_warnings();
  int kept = options_keep_non_reloadable(old, new_opts);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  ck_assert_int_eq(kept, 3); /* ORPort, User, TestingTorNetwork */
  assert_has(warnings, "Option 'ORPort' cannot be changed while pctor is "
                       "running");
  assert_has(warnings, "Option 'User' cannot be changed");
  assert_has(warnings, "Option 'TestingTorNetwork' cannot be changed");
  ck_assert_ptr_null(strstr(warnings, "Nickname"));
  ck_assert_int_eq(new_opts->or_ports.n, 2);
  ck_assert_int_eq(new_opts->or_ports.addrs[0].port, 9001);
  ck_assert_str_eq(new_opts->user, "root");
  ck_assert_int_eq(new_opts->testing_tor_network, 0);
  /* ...and the default that depends on it follows. */
  ck_assert_int_eq(new_opts->extend_allow_private_addresses, 0);
  ck_assert_int_eq(new_opts->assume_reachable, 0);
  /* Reloadable options take their new values. */
  ck_assert_str_eq(new_opts->nickname, "New");
  ck_assert_int_eq(new_opts->onion_key_rotation_days, 21);
  for (size_t i = 0; i < options_count(); i++)
    if (!options_var(i)->reloadable)
      ck_assert(options_equal(old, new_opts, options_var(i)));
  /* Nothing differs a second time. */
  ck_assert_int_eq(options_keep_non_reloadable(old, new_opts), 0);
  options_free(old);
  options_free(new_opts);

  /* Leaving a test network takes a restart: until then the test
   * network's authorities stay, never the public ones. */
  old = parse_ok("TestingTorNetwork 1\n" AUTH_LINE, 0, NULL);
  new_opts = parse_ok("", 0, NULL);
  capture_warnings();
  options_keep_non_reloadable(old, new_opts);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  assert_has(warnings, "DirAuthority lines are kept");
  ck_assert_int_eq(new_opts->testing_tor_network, 1);
  ck_assert_int_eq(new_opts->dir_authorities.n, 1);
  ck_assert_str_eq(new_opts->dir_authorities.v[0], old->dir_authorities.v[0]);
  options_free(old);
  options_free(new_opts);
}
END_TEST

START_TEST(test_cmdline_parse)
{
  char *argv[] = {"pctor", "-f", "etc/torrc", "--verify-config",
                  "--ORPort", "9001", "--list-options", NULL};
  options_cmdline_t *cl = NULL;
  char *err = NULL;
  ck_assert_int_eq(options_cmdline_parse(7, argv, "/etc/pctor/torrc", &cl,
                                         &err), 0);
  ck_assert_int_eq(cl->verify_config, 1);
  ck_assert_int_eq(cl->list_options, 1);
  ck_assert_int_eq(cl->show_help, 0);
  ck_assert_int_eq(cl->show_version, 0);
  ck_assert_int_eq(cl->torrc_is_default, 0);
  ck_assert_str_eq(cl->torrc + strlen(cl->torrc) - 10, "/etc/torrc");
  ck_assert(cl->torrc[0] == '/');
  ck_assert_str_eq(cl->options->key, "ORPort");
  options_cmdline_free(cl);

  char *argv2[] = {"pctor", "-h", "--version", NULL};
  ck_assert_int_eq(options_cmdline_parse(3, argv2, "/etc/pctor/torrc", &cl,
                                         &err), 0);
  ck_assert_int_eq(cl->show_help, 1);
  ck_assert_int_eq(cl->show_version, 1);
  ck_assert_int_eq(cl->torrc_is_default, 1);
  ck_assert_str_eq(cl->torrc, "/etc/pctor/torrc");
  options_cmdline_free(cl);

  char *argv3[] = {"pctor", "-f", "a", "-f", "b", NULL};
  ck_assert_int_eq(options_cmdline_parse(5, argv3, "/x", &cl, &err), -1);
  assert_has(err, "-f may be given only once");
  free(err);
}
END_TEST

START_TEST(test_load_files)
{
  char dir[] = "/tmp/check_options_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof(path), "%s/torrc", dir);

  /* A missing default torrc is fine; a missing -f torrc is not. */
  options_cmdline_t cl = {.torrc = path, .torrc_is_default = 1};
  options_t *o = NULL;
  char *err = NULL;
  ck_assert_int_eq(options_load(&cl, &o, &err), 0);
  ck_assert_str_eq(o->nickname, "Unnamed");
  options_free(o);
  cl.torrc_is_default = 0;
  ck_assert_int_eq(options_load(&cl, &o, &err), -1);
  assert_has(err, path);
  assert_has(err, "No such file");
  free(err);

  FILE *f = fopen(path, "w");
  fputs("Nickname FromFile\nDataDirectory rel\n\"Bad\n", f);
  fclose(f);
  ck_assert_int_eq(options_load(&cl, &o, &err), -1);
  char want[300];
  snprintf(want, sizeof(want), "line 3 of %s", path);
  assert_has(err, want);
  free(err);

  f = fopen(path, "w");
  fputs("Nickname FromFile\nDataDirectory rel\n", f);
  fclose(f);
  cl.cwd = dir;
  ck_assert_int_eq(options_load(&cl, &o, &err), 0);
  ck_assert_str_eq(o->nickname, "FromFile");
  snprintf(want, sizeof(want), "%s/rel", dir);
  ck_assert_str_eq(o->data_directory, want);
  options_free(o);
  unlink(path);
  rmdir(dir);
}
END_TEST

START_TEST(test_cmdline_flags)
{
  options_cmdline_t *cl = NULL;
  char *err = NULL;
  /* Flags without a value are flags, wherever they are. */
  char *argv[] = {"pctor", "--hush", "--ignore-missing-torrc",
                  "--defaults-torrc", "d/defaults", "--list-fingerprint",
                  "--Nickname", "x", NULL};
  ck_assert_int_eq(options_cmdline_parse(8, argv, "/etc/pctor/torrc", &cl,
                                         &err), 0);
  ck_assert_int_eq(cl->quiet, 1);
  ck_assert_int_eq(cl->ignore_missing_torrc, 1);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_LIST_FINGERPRINT);
  ck_assert_str_eq(cl->command_arg, "");
  ck_assert(cl->defaults_torrc[0] == '/');
  ck_assert_str_eq(cl->defaults_torrc + strlen(cl->defaults_torrc) - 10,
                   "d/defaults");
  ck_assert_str_eq(cl->options->key, "Nickname");
  ck_assert_ptr_null(cl->options->next);
  options_cmdline_free(cl);

  /* --quiet beats --hush; optional values; the default defaults file. */
  char *argv2[] = {"pctor", "--quiet", "--hush", "--dump-config", "short",
                   NULL};
  ck_assert_int_eq(options_cmdline_parse(5, argv2, "/etc/pctor/torrc", &cl,
                                         &err), 0);
  ck_assert_int_eq(cl->quiet, 2);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_DUMP_CONFIG);
  ck_assert_str_eq(cl->command_arg, "short");
  ck_assert_str_eq(cl->defaults_torrc, "/etc/pctor/torrc-defaults");
  options_cmdline_free(cl);

  char *argv3[] = {"pctor", "--list-modules", "--library-versions", NULL};
  ck_assert_int_eq(options_cmdline_parse(3, argv3, "/x", &cl, &err), 0);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_LIBRARY_VERSIONS);
  options_cmdline_free(cl);

  /* --keygen and --key-expiration, as tor's. */
  char *argv6[] = {"pctor", "--keygen", "--no-passphrase", NULL};
  ck_assert_int_eq(options_cmdline_parse(3, argv6, "/x", &cl, &err), 0);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_KEYGEN);
  options_cmdline_free(cl);
  char *argv7[] = {"pctor", "--key-expiration", "sign", "--format",
                   "timestamp", NULL};
  ck_assert_int_eq(options_cmdline_parse(5, argv7, "/x", &cl, &err), 0);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_KEY_EXPIRATION);
  ck_assert_str_eq(cl->command_arg, "sign");
  ck_assert_str_eq(cl->key_format, "timestamp");
  options_cmdline_free(cl);
  char *argv8[] = {"pctor", "--key-expiration", "--format", "rfc822", NULL};
  ck_assert_int_eq(options_cmdline_parse(4, argv8, "/x", &cl, &err), -1);
  assert_has(err, "--format: 'rfc822' is not iso8601 or timestamp");
  free(err);

  /* Passphrases and family keys, as tor's. */
  char *argv4[] = {"pctor", "--keygen", "--newpass", "--passphrase-fd", "7",
                   NULL};
  ck_assert_int_eq(options_cmdline_parse(5, argv4, "/x", &cl, &err), 0);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_KEYGEN);
  ck_assert_int_eq(cl->newpass, 1);
  ck_assert_int_eq(cl->passphrase_fd, 7);
  ck_assert_int_eq(cl->no_passphrase, 0);
  options_cmdline_free(cl);
  char *argv9[] = {"pctor", "--keygen", "--no-passphrase", "--passphrase-fd",
                   "0", NULL};
  ck_assert_int_eq(options_cmdline_parse(5, argv9, "/x", &cl, &err), -1);
  assert_has(err, "--no-passphrase specified with --passphrase-fd!");
  free(err);
  char *argv10[] = {"pctor", "--passphrase-fd", "x1", NULL};
  ck_assert_int_eq(options_cmdline_parse(3, argv10, "/x", &cl, &err), -1);
  assert_has(err, "--passphrase-fd: 'x1' is not a file descriptor number");
  free(err);
  char *argv11[] = {"pctor", "--keygen-family", "fam", NULL};
  ck_assert_int_eq(options_cmdline_parse(3, argv11, "/x", &cl, &err), 0);
  ck_assert_int_eq(cl->command, OPTIONS_CMD_KEYGEN_FAMILY);
  ck_assert_str_eq(cl->command_arg, "fam");
  ck_assert_int_eq(cl->passphrase_fd, -1);
  options_cmdline_free(cl);
  char *argv5[] = {"pctor", "--defaults-torrc", NULL};
  ck_assert_int_eq(options_cmdline_parse(2, argv5, "/x", &cl, &err), -1);
  assert_has(err, "'--defaults-torrc' needs a value");
  free(err);
}
END_TEST

/* Write text to path. */
static void
write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(test_defaults_torrc)
{
  char dir[] = "/tmp/check_options_d_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char torrc[256], defaults[256], inc[256];
  snprintf(torrc, sizeof(torrc), "%s/torrc", dir);
  snprintf(defaults, sizeof(defaults), "%s/torrc-defaults", dir);
  snprintf(inc, sizeof(inc), "%s/inc", dir);
  /* Debian's tor-service-defaults-torrc pattern: the defaults file sets
   * options, the torrc overrides some of them (all lines of a repeatable
   * option), the command line overrides both. */
  write_file(defaults, "Nickname FromDefaults\nContactInfo defaults\n"
             "Log notice file /tmp/a.log\nLog warn stderr\n"
             "%include inc\n");
  write_file(inc, "OnionKeyRotationDays 20\n");
  write_file(torrc, "Nickname FromTorrc\nLog info stdout\n");
  options_cmdline_t cl = {.torrc = torrc, .defaults_torrc = defaults,
                          .cwd = dir};
  options_t *o = NULL;
  char *err = NULL;
  ck_assert_int_eq(options_load(&cl, &o, &err), 0);
  ck_assert_str_eq(o->nickname, "FromTorrc");
  ck_assert_str_eq(o->contact_info, "defaults");
  ck_assert_int_eq(o->logs.n, 1);
  ck_assert_str_eq(o->logs.v[0], "info stdout");
  ck_assert_int_eq(o->onion_key_rotation_days, 20);
  options_free(o);

  /* A missing defaults file is fine; a missing -f torrc only with
   * --ignore-missing-torrc, or --allow-missing-torrc with defaults. */
  ck_assert_int_eq(unlink(torrc), 0);
  ck_assert_int_eq(options_load(&cl, &o, &err), -1);
  assert_has(err, "No such file");
  free(err);
  cl.allow_missing_torrc = 1;
  ck_assert_int_eq(options_load(&cl, &o, &err), 0);
  ck_assert_str_eq(o->nickname, "FromDefaults");
  options_free(o);
  ck_assert_int_eq(unlink(defaults), 0);
  ck_assert_int_eq(options_load(&cl, &o, &err), -1);
  free(err);
  cl.ignore_missing_torrc = 1;
  ck_assert_int_eq(options_load(&cl, &o, &err), 0);
  ck_assert_str_eq(o->nickname, "Unnamed");
  options_free(o);

  /* Errors in an included or defaults file name that file's line. */
  write_file(defaults, "Nickname ok\n%include inc\n");
  write_file(inc, "\n\nNoSuchOption 1\n");
  ck_assert_int_eq(options_load(&cl, &o, &err), -1);
  char want[300];
  snprintf(want, sizeof(want), "Unknown option 'NoSuchOption' on line 3 "
           "of %s", inc);
  assert_has(err, want);
  free(err);
  unlink(inc);
  unlink(defaults);
  rmdir(dir);
}
END_TEST

/* Values in tor's units are parsed once, when read. */
START_TEST(test_typed_values)
{
  options_t *o = parse_ok(
      "BandwidthRate 8 Mbits\nBandwidthBurst 2 MBytes\n"
      "RelayBandwidthRate 512 KBytes\n"
      "MaxMemInQueues 1 GB\nMaxCircuitDirtiness 2 hours\n"
      "TokenBucketRefillInterval 1 second\nKISTSchedRunInterval 5\n"
      "RefuseUnknownExits 0\nIPsec auto\nORPort 9001\n", 0, NULL);
  ck_assert_uint_eq(o->bandwidth_rate, 1048576); /* tor's binary bits */
  ck_assert_uint_eq(o->bandwidth_burst, 2 * 1048576);
  ck_assert_uint_eq(o->relay_bandwidth_rate, 512 * 1024);
  ck_assert_uint_eq(o->relay_bandwidth_burst, 512 * 1024); /* = rate */
  ck_assert_uint_eq(o->max_mem_in_queues, 1ULL << 30);
  ck_assert_int_eq(o->max_circuit_dirtiness, 7200);
  ck_assert_int_eq(o->token_bucket_refill_interval, 1000);
  ck_assert_int_eq(o->kist_sched_run_interval, 5); /* plain: msec */
  ck_assert_int_eq(o->refuse_unknown_exits, 0);
  const ipsec_options_t *io = options_module(o, &ipsec_conf_module);
  ck_assert_int_eq(io->mode, 1); /* IPSEC_MODE_AUTO */
  ck_assert_int_eq(io->max_peers_per_address, 2);
  ck_assert_ptr_null(io->charon_user);
  ck_assert(options_is_set(o, "maxmeminqueues"));
  ck_assert(!options_is_set(o, "Nickname"));
  options_free(o);

  /* Defaults. */
  o = parse_ok("", 0, NULL);
  ck_assert_uint_eq(o->bandwidth_rate, 1ULL << 30);
  ck_assert_uint_eq(o->max_mem_in_queues, 0); /* automatic */
  ck_assert_int_eq(o->max_circuit_dirtiness, 600);
  ck_assert_int_eq(o->refuse_unknown_exits, -1);
  ck_assert_int_eq(o->socks_ports.n, 0);
  /* Module-owned options live in the module's struct. */
  const conflux_options_t *co = options_module(o, &conflux_conf_module);
  ck_assert_int_eq(co->enabled, -1);
  ck_assert_int_eq(co->client_ux, CFX_UX_HIGH_THROUGHPUT);
  ck_assert_int_eq(co->max_ooo, 32768);
  const measureme_options_t *mo = options_module(o, &measureme_conf_module);
  ck_assert_int_eq(mo->enabled, 0); /* off unless the operator enables it */
  ck_assert_int_eq(mo->hops, 0);
  /* NumCPUs 0 (tor's default): one handshake worker per online core. */
  const cpuworker_options_t *cw = options_module(o, &cpuworker_conf_module);
  ck_assert_int_eq(cw->num_cpus, 0);
  options_free(o);
  o = parse_ok("NumCPUs 3\n", 0, NULL);
  cw = options_module(o, &cpuworker_conf_module);
  ck_assert_int_eq(cw->num_cpus, 3);
  options_free(o);
  char *e = parse_bad("NumCPUs 129\n", 0, NULL);
  assert_has(e, "Option 'NumCPUs' on line 1 of test.torrc");
  free(e);

  o = parse_ok("ConfluxClientUX latency_lowmem\nConfluxScheduler lowrtt\n"
               "ConfluxEnabled 0\nMeasureMeHops 3, 1\n"
               "MeasureMeInterval 2 seconds\n", 0, NULL);
  co = options_module(o, &conflux_conf_module);
  ck_assert_int_eq(co->client_ux, CFX_UX_LOW_MEM_LATENCY);
  ck_assert_int_eq(co->scheduler, CFX_ALG_LOWRTT);
  ck_assert_int_eq(co->enabled, 0);
  mo = options_module(o, &measureme_conf_module);
  ck_assert_int_eq(mo->hops, 5);
  ck_assert_int_eq(mo->interval_ms, 2000);
  options_free(o);

  /* tor's key options. */
  o = parse_ok("KeyDirectory /tmp/k\nOfflineMasterKey 1\n"
               "SigningKeyLifetime 2 weeks\n", 0, NULL);
  ck_assert_str_eq(o->key_directory, "/tmp/k");
  ck_assert_int_eq(o->offline_master_key, 1);
  ck_assert_int_eq(o->signing_key_lifetime, 14 * 86400);
  options_free(o);
  o = parse_ok("", 0, NULL);
  ck_assert_ptr_null(o->key_directory);
  ck_assert_int_eq(o->signing_key_lifetime, 30 * 86400);
  options_free(o);

  /* The IPsec broker's trust options (feature/ipsec). */
  o = parse_ok("IPsecMaxPeersPerAddress 5\nIPsecCharonUser root\n", 0, NULL);
  io = options_module(o, &ipsec_conf_module);
  ck_assert_int_eq(io->max_peers_per_address, 5);
  ck_assert_str_eq(io->charon_user, "root");
  options_free(o);

  /* Bad values name the option and line, with the type's message. */
  struct {
    const char *torrc, *want;
  } bad[] = {
    {"BandwidthRate 10 fortnights\n",
     "Option 'BandwidthRate' on line 1 of test.torrc: '10 fortnights': "
     "unknown memory unit 'fortnights'. Failing."},
    {"BandwidthRate 10 KBytes\n", "must be at least 75 KBytes"},
    {"BandwidthRate 4 GBytes\n", "out of range (0 to 2147483647 bytes)"},
    {"BandwidthBurst 100 KBytes\n", "BandwidthBurst' on line 1 of "
     "test.torrc: must be at least BandwidthRate"},
    {"MaxMemInQueues 1 MB\n", "less than the minimum (67108864 bytes)"},
    {"MaxCircuitDirtiness 5 seconds\n", "out of range (10 to 2592000 "
     "seconds)"},
    {"RefuseUnknownExits maybe\n", "'maybe' must be 0, 1 or auto"},
    {"IPsec sometimes\n", "'sometimes' must be 0, auto or 1"},
    {"IPsec 1\n", "Option 'IPsec' on line 1 of test.torrc: needs an ORPort"},
    {"\nConfluxClientUX fast\n", "Option 'ConfluxClientUX' on line 2 of "
     "test.torrc: 'fast' must be throughput, latency, throughput_lowmem or "
     "latency_lowmem. Failing."},
    {"ConfluxLegs 1\n", "Option 'ConfluxLegs' on line 1 of test.torrc: "
     "must be 0 or 2 to 8"},
    {"MeasureMeHops 4\n", "must list hops 1, 2 and/or 3"},
    {"IPsecMaxPeersPerAddress 0\n", "IPsecMaxPeersPerAddress' on line 1"},
    {"IPsecCharonUser no-such-user-here\n",
     "there is no user named 'no-such-user-here'"},
    {"SocksPort nine\n", "SocksPort 'nine' is not PORT, ADDRESS:PORT, auto"},
    {"SocksPort 9050 CacheDNS\n",
     "SocksPort flag 'CacheDNS' is not supported yet: pctor's client keeps "
     "no DNS cache"},
    {"SocksPort 9050 IsolateNothing\n",
     "unknown SocksPort flag 'IsolateNothing'"},
    {"SocksPort 9050\nSocksPort 0\n",
     "'SocksPort 0' (no SocksPort) cannot be combined"},
    {"SocksPort unix:/tmp/s\n", "unix sockets are not supported yet"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *err = parse_bad(bad[i].torrc, 0, NULL);
    assert_has(err, bad[i].want);
    free(err);
  }
}
END_TEST

START_TEST(test_dump_config)
{
  options_t *o = parse_ok("BandwidthRate 8 Mbits\nORPort 127.0.0.1:9001\n"
                          "Log notice stdout\nLog info file /tmp/x.log\n"
                          "ConfluxLegs 3\nMaxCircuitDirtiness 1 hour\n",
                          0, NULL);
  options_t *base = parse_ok("", 0, NULL);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  options_dump(out, o, base);
  fclose(out);
  /* Sorted by name, base units, repeatable options on several lines. */
  ck_assert_str_eq(buf, "BandwidthRate 1048576\n"
                        "ConfluxLegs 3\n"
                        "Log notice stdout\n"
                        "Log info file /tmp/x.log\n"
                        "MaxCircuitDirtiness 3600\n"
                        "ORPort 127.0.0.1:9001\n");
  free(buf);
  /* Full: every option with a value, automatic ones left out. */
  out = open_memstream(&buf, &len);
  options_dump(out, base, NULL);
  fclose(out);
  assert_has(buf, "\nNickname Unnamed\n");
  assert_has(buf, "\nRefuseUnknownExits auto\n");
  assert_has(buf, "\nKISTSockBufSizeFactor 1.000000\n");
  ck_assert_ptr_null(strstr(buf, "MaxMemInQueues"));
  ck_assert_ptr_null(strstr(buf, "CircuitPriorityHalflife"));
  free(buf);

  /* The dump reads back as the same configuration. */
  out = open_memstream(&buf, &len);
  options_dump(out, o, NULL);
  fclose(out);
  options_t *again = parse_ok(buf, 0, NULL);
  for (size_t i = 0; i < options_count(); i++)
    ck_assert_msg(options_equal(o, again, options_var(i)), "%s differs",
                  options_var(i)->name);
  free(buf);
  options_free(again);

  out = open_memstream(&buf, &len);
  options_list_names(out);
  fclose(out);
  ck_assert(!strncmp(buf, "DataDirectory\nORPort\n", 21));
  assert_has(buf, "\nConfluxLegs\n");
  free(buf);
  options_free(o);
  options_free(base);
}
END_TEST

/* Every tor option name is implemented or refused with one clear line,
 * never unknown and never ignored. */
START_TEST(test_tor_option_names)
{
  ck_assert_uint_eq(n_tor_option_names, 372); /* tor 0.4.9 */
  ck_assert_str_eq(tor_option_names_version, "0.4.9.11");
  size_t implemented = 0;
  for (size_t i = 0; i < n_tor_option_names; i++) {
    const char *name = tor_option_names[i];
    for (size_t j = 0; j < i; j++)
      ck_assert_msg(strcasecmp(name, tor_option_names[j]), "%s twice",
                    name);
    if (options_find(name)) {
      implemented++;
      continue;
    }
    char *msg = options_tor_refusal(name);
    ck_assert_ptr_nonnull(msg);
    assert_has(msg, "pctor does not support tor's option");
    ck_assert_ptr_null(strchr(msg, '\n'));
    free(msg);
  }
  /* Every option pctor implements that tor also has is in the list. */
  static const char *const ours[] = {"ORPort", "ExitRelay", "Log",
                                     "BandwidthRate", "SocksPort",
                                     "ConfluxEnabled"};
  for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
    int found = 0;
    for (size_t j = 0; j < n_tor_option_names; j++)
      found |= !strcasecmp(ours[i], tor_option_names[j]);
    ck_assert_msg(found, "%s", ours[i]);
  }
  ck_assert_uint_ge(implemented, 40);
  ck_assert_ptr_null(options_tor_refusal("NoSuchOption"));
  /* Refusals say what to do instead (by name and by prefix). */
  static const struct {
    const char *name, *advice;
  } advised[] = {
    {"AuthDirInvalid", "; pctor cannot be a directory authority"},
    {"V3AuthVotingInterval", "; pctor cannot be a directory authority"},
    {"RecommendedServerVersions", "; pctor cannot be a directory"},
    {"Socks5ProxyUsername", "; pctor connects to relays directly"},
    {"ExtORPortCookieAuthFile", "; pctor has no pluggable transports"},
    {"DNSPort", "; pctor's client listens only on SocksPort"},
    {"TruncateLogFile", "; pctor always appends to its log files"},
    {"MaxHSDirCacheBytes", "; pctor has no onion services"},
    {"BridgeRelay", "; pctor cannot run as a bridge"}, /* first match */
    {"BridgeDistribution", "; pctor has no bridge support"},
    {"TestingV3AuthVotingStartOffset", "pctor has TestingTorNetwork"},
  };
  for (size_t i = 0; i < sizeof(advised) / sizeof(advised[0]); i++) {
    char *msg = options_tor_refusal(advised[i].name);
    ck_assert_ptr_nonnull(msg);
    assert_has(msg, advised[i].advice);
    free(msg);
  }

  /* In a torrc: one line naming the file and line, with advice. */
  char *err = parse_bad("Nickname a\nORPort 9001\n\nhiddenservicedir /x\n",
                        0, NULL);
  ck_assert_str_eq(err, "Option 'hiddenservicedir' on line 4 of test.torrc: "
                        "pctor does not support tor's option "
                        "HiddenServiceDir; pctor has no onion services. "
                        "Failing.");
  free(err);
  /* DirPort: tor's syntax and flags, the ORPort's rules. */
  options_t *odp = parse_ok("ORPort 9001\nDirPort 9030\n"
                            "DirPort [::1]:9031 NoAdvertise\n", 0, NULL);
  ck_assert_int_eq(odp->dir_ports.n, 2);
  ck_assert_int_eq(odp->dir_ports.addrs[0].family, AF_INET);
  ck_assert_int_eq(odp->dir_ports.addrs[0].port, 9030);
  ck_assert_uint_eq(options_dirport_advertised(&odp->dir_ports), 9030);
  options_free(odp);
  odp = parse_ok("ORPort 9001\nDirPort 127.0.0.1:9030 NoAdvertise\n"
                 "DirPort 192.0.2.1:80 NoListen\n", 0, NULL);
  ck_assert_uint_eq(options_dirport_advertised(&odp->dir_ports), 80);
  options_free(odp);
  odp = parse_ok("ORPort 9001\nDirPort 9030 NoAdvertise\n", 0, NULL);
  ck_assert_uint_eq(options_dirport_advertised(&odp->dir_ports), 0);
  options_free(odp);
  err = parse_bad("ORPort 9001\nDirPort 9030 Bogus\n", 0, NULL);
  assert_has(err, "'Bogus' is not a DirPort flag");
  free(err);
  err = parse_bad("ORPort 9001\nDirPort auto NoListen\n", 0, NULL);
  assert_has(err, "'DirPort auto' with NoListen");
  free(err);
  err = parse_bad("ORPort 9001\nDirPort 9030\nDirPort 9031\n", 0, NULL);
  assert_has(err, "there is already a listening IPv4 DirPort (on line 2");
  free(err);
  err = parse_bad("ORPort 9001\nDirPort 0\nDirPort 9031\n", 0, NULL);
  assert_has(err, "'DirPort 0' (no DirPort) cannot be combined");
  free(err);
  err = parse_bad("DirPort 9030\n", 0, NULL);
  assert_has(err, "DirPort");
  assert_has(err, "needs an ORPort");
  free(err);
  err = parse_bad("ORPort 9001\nDirCache 0\nDirPort 9030\n", 0, NULL);
  assert_has(err, "needs DirCache 1");
  free(err);
  err = parse_bad("ORPort 9001\nDirPort 70000\n", 0, NULL);
  assert_has(err, "DirPort");
  free(err);
  /* The DoS* options are implemented (core/or/dos_options). */
  options_t *od = parse_ok("DoSCircuitCreationEnabled 1\n"
                           "DoSCircuitCreationBurst 20\n"
                           "DoSConnectionConnectDefenseTimePeriod 2 hours\n"
                           "DoSRefuseSingleHopClientRendezvous auto\n",
                           0, NULL);
  const dos_options_t *dopt = options_module(od, &dos_conf_module);
  ck_assert_int_eq(dopt->cc_enabled, 1);
  ck_assert_int_eq(dopt->cc_burst, 20);
  ck_assert_int_eq(dopt->cc_rate, 0);
  ck_assert_int_eq(dopt->conn_enabled, -1);
  ck_assert_int_eq(dopt->conn_connect_defense_period, 7200);
  options_free(od);
  err = parse_bad("DoSStreamCreationDefenseType 4\n", 0, NULL);
  assert_has(err, "DoSStreamCreationDefenseType");
  free(err);
  /* A tor option set to what pctor does anyway is accepted. */
  options_t *o = parse_ok("DirPort 0\nDirReqStatistics 0\n"
                          "HardwareAccel 1\nKeyDirectoryGroupReadable auto\n"
                          "ServerDNSAllowBrokenConfig 0\n",
                          0, NULL);
  ck_assert_int_eq(options_key_directory_group_readable(o), 0);
  options_free(o);
  /* KeyDirectoryGroupReadable, FamilyId: tor's. */
  o = parse_ok("KeyDirectoryGroupReadable 1\n"
               "FamilyId d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7w\n"
               "FamilyId *\n", 0, NULL);
  ck_assert_int_eq(options_key_directory_group_readable(o), 1);
  ck_assert_int_eq(o->family_ids.n, 2);
  ck_assert_str_eq(o->family_ids.v[1], "*");
  options_free(o);
  o = parse_ok("DataDirectory /tmp/x\nKeyDirectory /tmp/x\n"
               "DataDirectoryGroupReadable 1\n", 0, NULL);
  ck_assert_int_eq(options_key_directory_group_readable(o), 1);
  options_free(o);
  err = parse_bad("FamilyId d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7\n", 0,
                  NULL);
  assert_has(err, "is not a family ID");
  free(err);
  err = parse_bad("ServerDNSAllowBrokenConfig 1\n", 0, NULL);
  assert_has(err, "ServerDNSAllowBrokenConfig 0");
  free(err);
  err = parse_bad("EntryStatistics 1\n", 0, NULL);
  assert_has(err, "tor's option EntryStatistics; of tor's statistics "
                  "pctor keeps only DirReqStatistics");
  free(err);
  /* DirReqStatistics is pctor's own now, with tor's default. */
  o = parse_ok("DirReqStatistics 0\nExtraInfoStatistics 0\n"
               "__DirReqStatisticsInterval 30 seconds\n", 0, NULL);
  const dirreq_options_t *dro = options_module(o, &dirreq_conf_module);
  ck_assert_int_eq(dro->dirreq_statistics, 0);
  ck_assert_int_eq(dro->extra_info_statistics, 0);
  ck_assert_int_eq(dro->interval, 30);
  options_free(o);
  o = parse_ok("Nickname a\n", 0, NULL);
  dro = options_module(o, &dirreq_conf_module);
  ck_assert_int_eq(dro->dirreq_statistics, 1);
  ck_assert_int_eq(dro->extra_info_statistics, 1);
  ck_assert_int_eq(dro->interval, 86400);
  options_free(o);
  /* Every tor option pctor refuses says what to do instead. */
  for (size_t i = 0; i < n_tor_option_names; i++) {
    if (options_find(tor_option_names[i]))
      continue; /* implemented */
    char *m = options_tor_refusal(tor_option_names[i]);
    if (m && !strstr(m, "; "))
      ck_abort_msg("no advice for tor's option %s: %s", tor_option_names[i],
                   m);
    free(m);
  }
  err = parse_bad("Nickname a\nNoSuchOption 1\n", 0, NULL);
  ck_assert_str_eq(err, "Unknown option 'NoSuchOption' on line 2 of "
                        "test.torrc. Failing.");
  free(err);
}
END_TEST

/* SETCONF's overlay: the controller's keys replace the torrc's and the
 * command line's lines; a key without value resets; other keys stay. */
START_TEST(test_controller_overlay)
{
  conf_line_t *file = NULL, *cmd = NULL, *ov = NULL, *ch = NULL;
  char *err = NULL;
  const char *torrc = "Nickname FromFile\nContactInfo me\n"
                      "ExitPolicy accept *:80\nExitPolicy reject *:*\n"
                      "BandwidthRate 2 MB\n";
  ck_assert_int_eq(conf_lex_text(torrc, strlen(torrc), "torrc", &file,
                                 &err), 0);
  cmd = conf_line_new("Nickname", "FromArgv", "argv", 1);
  cmd->from_cmdline = 1;
  /* SETCONF Nickname=Ctl ExitPolicy="accept *:443" ExitPolicy="reject *:*"
   * ContactInfo */
  ch = conf_line_new("Nickname", "Ctl", "c", 1);
  ch->next = conf_line_new("ExitPolicy", "accept *:443", "c", 2);
  ch->next->next = conf_line_new("ExitPolicy", "reject *:*", "c", 3);
  ch->next->next->next = conf_line_new("ContactInfo", "", "c", 4);
  ch->next->next->next->cmd = CONF_LINE_CLEAR;
  options_overlay_update(&ov, ch);
  conf_line_t *all = options_overlay_cmdline(cmd, ov);
  options_t *o = NULL;
  ck_assert_int_eq(options_from_sources(NULL, file, all, "/", &o, &err), 0);
  ck_assert_str_eq(o->nickname, "Ctl");
  ck_assert_ptr_null(o->contact_info);
  ck_assert_int_eq(o->exit_policy.n, 2);
  ck_assert_str_eq(o->exit_policy.v[0], "accept *:443");
  ck_assert_uint_eq(o->bandwidth_rate, 2 * 1024 * 1024);
  options_free(o);
  conf_lines_free(all);
  conf_lines_free(ch);
  /* A second SETCONF of one key leaves the others; a bad value names the
   * controller. */
  ch = conf_line_new("BandwidthRate", "many", "c", 1);
  options_overlay_update(&ov, ch);
  all = options_overlay_cmdline(cmd, ov);
  ck_assert_int_eq(options_from_sources(NULL, file, all, "/", &o, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "controller's SETCONF"));
  free(err);
  conf_lines_free(all);
  conf_lines_free(ch);
  ch = conf_line_new("BandwidthRate", "", "c", 1);
  options_overlay_update(&ov, ch);
  all = options_overlay_cmdline(cmd, ov);
  ck_assert_int_eq(options_from_sources(NULL, file, all, "/", &o, &err), 0);
  ck_assert_str_eq(o->nickname, "Ctl");
  ck_assert_int_eq(o->exit_policy.n, 2);
  ck_assert_uint_eq(o->bandwidth_rate, 1024ull * 1024 * 1024); /* default */
  /* Which changes need a restart. */
  options_t *o2 = NULL;
  conf_line_t *orp = conf_line_new("ORPort", "9001", "c", 1);
  orp->next = conf_line_new("Nickname", "Other", "c", 2);
  ck_assert_int_eq(options_from_sources(NULL, file, orp, "/", &o2, &err), 0);
  char *names = options_non_reloadable_changes(o, o2);
  ck_assert_str_eq(names, "ORPort");
  free(names);
  ck_assert_ptr_null(options_non_reloadable_changes(o, o));
  options_free(o2);
  options_free(o);
  conf_lines_free(orp);
  conf_lines_free(all);
  conf_lines_free(ch);
  conf_lines_free(ov);
  conf_lines_free(cmd);
  conf_lines_free(file);
}
END_TEST

START_TEST(test_relay_options)
{
  /* ExitRelay auto (tor's default): an exit exactly with ExitPolicy. */
  options_t *o = parse_ok("ORPort 9001\n", 0, NULL);
  ck_assert_int_eq(o->is_exit, 0);
  /* A published relay without ContactInfo is warned, as in tor. */
  ck_assert_int_eq(options_warn_no_contact_info(o), 1);
  static const char *const no_warning[] = {
    "ORPort 9001\nContactInfo ops AT example DOT org\n",
    "ORPort 9001\nPublishServerDescriptor 0\n",
    "SocksPort 9050\n",
  };
  for (size_t i = 0; i < sizeof(no_warning) / sizeof(no_warning[0]); i++) {
    options_t *q = parse_ok(no_warning[i], 0, NULL);
    ck_assert_msg(!options_warn_no_contact_info(q), "%s", no_warning[i]);
    options_free(q);
  }
  /* Advertised bandwidth: tor's defaults, 1 GByte. */
  uint64_t rate, burst;
  options_advertised_bandwidth(o, &rate, &burst);
  ck_assert_uint_eq(rate, 1ULL << 30);
  ck_assert_uint_eq(burst, 1ULL << 30);
  ck_assert_int_eq(o->heartbeat_period, 6 * 3600);
  ck_assert_int_eq(o->shutdown_wait_length, 30);
  ck_assert_int_eq(o->disable_debugger_attachment, 1);
  ck_assert_int_eq(o->dir_cache, 1);
  ck_assert_int_eq(o->safe_logging, 0);
  options_free(o);
  o = parse_ok("ORPort 9001\nExitPolicy accept *:80\n", 0, NULL);
  ck_assert_int_eq(o->is_exit, 1);
  options_free(o);
  o = parse_ok("ORPort 9001\nExitPolicy reject *:*\nExitRelay 0\n", 0,
               NULL);
  ck_assert_int_eq(o->is_exit, 0);
  options_free(o);
  o = parse_ok("ExitRelay 1\n", 0, NULL);
  ck_assert_int_eq(o->is_exit, 1);
  options_free(o);

  /* The smallest of the rates and MaxAdvertisedBandwidth; the smaller
   * burst. */
  o = parse_ok("BandwidthRate 10 MBytes\nBandwidthBurst 20 MBytes\n"
               "RelayBandwidthRate 5 MBytes\nRelayBandwidthBurst 8 MBytes\n"
               "MaxAdvertisedBandwidth 6 MBytes\n", 0, NULL);
  options_advertised_bandwidth(o, &rate, &burst);
  ck_assert_uint_eq(rate, 5 << 20);
  ck_assert_uint_eq(burst, 8 << 20);
  options_free(o);
  o = parse_ok("BandwidthRate 10 MBytes\nMaxAdvertisedBandwidth 2 MBytes\n",
               0, NULL);
  options_advertised_bandwidth(o, &rate, &burst);
  ck_assert_uint_eq(rate, 2 << 20);
  ck_assert_uint_eq(burst, 1ULL << 30);
  options_free(o);

  /* tor's short-heartbeat rule, and values in tor's spelling. */
  capture_warnings();
  o = parse_ok("HeartbeatPeriod 5 minutes\nPublishServerDescriptor v3\n"
               "SafeLogging relay\nShutdownWaitLength 2 minutes\n"
               "SyslogIdentityTag relay1\nDirCache 0\n", 0, NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  assert_has(warnings, "HeartbeatPeriod is shorter than 30 minutes");
  ck_assert_int_eq(o->heartbeat_period, 1800);
  ck_assert_int_eq(o->publish_server_descriptor, 1);
  ck_assert_int_eq(o->safe_logging, 2);
  ck_assert_int_eq(o->shutdown_wait_length, 120);
  ck_assert_str_eq(o->syslog_identity_tag, "relay1");
  ck_assert_int_eq(o->dir_cache, 0);
  options_free(o);
  o = parse_ok("TestingTorNetwork 1\n" AUTH_LINE "HeartbeatPeriod 10\n", 0,
               NULL);
  ck_assert_int_eq(o->heartbeat_period, 10);
  options_free(o);
}
END_TEST

/* --verify-config's checks of what start-up would need. */
START_TEST(test_check_startable)
{
  char dir[] = "/tmp/check_options_s_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char torrc[512];
  snprintf(torrc, sizeof(torrc), "DataDirectory %s/data\n"
           "Log notice file %s/pctor.log\n", dir, dir);
  options_t *o = parse_ok(torrc, 0, NULL);
  char *err = NULL;
  ck_assert_int_eq(options_check_startable(o, &err), 0);
  options_free(o);
  /* A log file in a missing directory. */
  snprintf(torrc, sizeof(torrc), "DataDirectory %s/data\n"
           "Log notice file %s/no/such/dir/pctor.log\n", dir, dir);
  o = parse_ok(torrc, 0, NULL);
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "Log \"notice file");
  assert_has(err, "No such file or directory");
  free(err);
  options_free(o);
  /* A DataDirectory whose parent is missing, or that is a file. */
  snprintf(torrc, sizeof(torrc), "DataDirectory %s/a/b\n", dir);
  o = parse_ok(torrc, 0, NULL);
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "DataDirectory: cannot create");
  free(err);
  options_free(o);
  snprintf(torrc, sizeof(torrc), "DataDirectory %s/file\n", dir);
  char file[300];
  snprintf(file, sizeof(file), "%s/file", dir);
  FILE *f = fopen(file, "w");
  fclose(f);
  o = parse_ok(torrc, 0, NULL);
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "is not a directory");
  free(err);
  options_free(o);
  unlink(file);
  /* ConnLimit above the hard descriptor limit (as tor: no start). */
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < INT32_MAX) {
    snprintf(torrc, sizeof(torrc), "DataDirectory %s/data\nConnLimit %llu\n",
             dir, (unsigned long long)rl.rlim_max + 1);
    o = parse_ok(torrc, 0, NULL);
    ck_assert_int_eq(options_check_startable(o, &err), -1);
    assert_has(err, "file descriptors are available (ulimit -H -n)");
    free(err);
    options_free(o);
  }
  /* OfflineMasterKey without the signing key and certificate that the
   * relay would run on: refused, naming the missing file. */
  char keys[300], sk[340], cert[340];
  snprintf(keys, sizeof(keys), "%s/keys", dir);
  ck_assert_int_eq(mkdir(keys, 0700), 0);
  snprintf(torrc, sizeof(torrc), "DataDirectory %s/data\nKeyDirectory %s\n"
           "OfflineMasterKey 1\n", dir, keys);
  o = parse_ok(torrc, 0, NULL);
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "OfflineMasterKey is set but ");
  assert_has(err, "/keys/ed25519_signing_secret_key cannot be read");
  free(err);
  snprintf(sk, sizeof(sk), "%s/ed25519_signing_secret_key", keys);
  snprintf(cert, sizeof(cert), "%s/ed25519_signing_cert", keys);
  f = fopen(sk, "w");
  fclose(f);
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "/keys/ed25519_signing_cert cannot be read");
  free(err);
  f = fopen(cert, "w");
  fclose(f);
  /* Both there but not usable keys: refused as at start (a good set is
   * check_router_keys' test_check_offline). */
  ck_assert_int_eq(options_check_startable(o, &err), -1);
  assert_has(err, "ed25519_signing_secret_key");
  free(err);
  options_free(o);
  unlink(sk);
  unlink(cert);
  ck_assert_int_eq(rmdir(keys), 0);
  /* Nothing was created. */
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* ControlPort and MetricsPort options (feature/control parses them), and
 * the GETCONF accessor. */
START_TEST(test_control_options)
{
  options_t *o = parse_ok(
      "ControlPort 9051\nCookieAuthentication 1\n"
      "HashedControlPassword "
      "16:DACBE5B7066A86C7607426E42273EB5066E98185337925342F5A8B38C2\n"
      "MetricsPort 127.0.0.1:9035 prometheus\n"
      "MetricsPortPolicy accept 127.0.0.1, reject *\n"
      "__OwningControllerProcess 1234\nLog notice stderr\n"
      "Log info file /tmp/x.log\n", 0, NULL);
  char *canon = NULL, **vals = NULL;
  int n = 0;
  ck_assert_int_eq(options_get_values(o, "controlport", &canon, &vals, &n),
                   0);
  ck_assert_str_eq(canon, "ControlPort");
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(vals[0], "9051");
  free(vals[0]);
  free(vals);
  free(canon);
  ck_assert_int_eq(options_get_values(o, "Log", &canon, &vals, &n), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(vals[1], "info file /tmp/x.log");
  for (int i = 0; i < n; i++)
    free(vals[i]);
  free(vals);
  free(canon);
  ck_assert_int_eq(options_get_values(o, "ContactInfo", &canon, &vals, &n),
                   0);
  ck_assert_int_eq(n, 0); /* unset */
  free(canon);
  ck_assert_int_eq(options_get_values(o, "CookieAuthentication", &canon,
                                      &vals, &n), 0);
  ck_assert_str_eq(vals[0], "1");
  free(vals[0]);
  free(vals);
  free(canon);
  ck_assert_int_eq(options_get_values(o, "NoSuchOption", &canon, &vals, &n),
                   -1);
  options_free(o);

  struct {
    const char *text, *needle;
  } bad[] = {
      {"ControlPort 70000\n", "ControlPort"},
      {"ControlPort unix:relative\n", "absolute path"},
      {"ControlSocket /run/x Bogus\n", "unknown unix socket flag"},
      {"HashedControlPassword secret\n", "tor --hash-password"},
      {"__OwningControllerProcess abc\n", "process ID"},
      {"MetricsPort 9035 json\n", "prometheus"},
      {"MetricsPortPolicy allow 1.2.3.4\n", "MetricsPortPolicy"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *err = parse_bad(bad[i].text, 0, NULL);
    assert_has(err, bad[i].needle);
    assert_has(err, "line 1 of test.torrc");
    free(err);
  }
}
END_TEST

START_TEST(test_list_and_usage)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  options_list(out);
  fclose(out);
  for (size_t i = 0; i < options_count(); i++) {
    char want[128];
    const option_def_t *t = options_var(i);
    /* Each option starts a line, followed by its syntax. */
    snprintf(want, sizeof(want), "\n%s %s\n", t->name, t->syntax);
    if (i == 0)
      ck_assert(!strncmp(buf, want + 1, strlen(want + 1)));
    else
      assert_has(buf, want);
  }
  assert_has(buf, "Default: 28. Changes on SIGHUP: yes.");
  assert_has(buf, "Changes on SIGHUP: no (restart pctor).");
  /* Wrapped lines stay within 80 columns. */
  for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1)
    ck_assert_int_le(nl - p, 80);
  free(buf);

  out = open_memstream(&buf, &len);
  options_usage(out, "pctor", "/etc/pctor/torrc");
  fclose(out);
  assert_has(buf, "Usage: pctor [-f FILE]");
  assert_has(buf, "--verify-config");
  assert_has(buf, "(default: /etc/pctor/torrc)");
  free(buf);
}
END_TEST

/* tor's guard options (feature/client/guards_options.c) and
 * AvoidDiskWrites. */
START_TEST(test_guard_options)
{
  options_t *o = parse_ok("", 0, NULL);
  const guards_options_t *g = options_module(o, &guards_conf_module);
  ck_assert_int_eq(g->use_entry_guards, 1);
  ck_assert_int_eq(g->num_entry_guards, 0);
  ck_assert_int_eq(g->num_primary_guards, 0);
  ck_assert_int_eq(g->num_directory_guards, 0);
  ck_assert_int_eq(g->guard_lifetime, 0);
  ck_assert_int_eq(o->avoid_disk_writes, 0);
  ck_assert_int_eq(options_state_save_interval(o), 600);
  options_free(o);
  o = parse_ok("__StateSaveInterval 5 seconds\nAvoidDiskWrites 1\n", 0,
               NULL);
  ck_assert_int_eq(options_state_save_interval(o), 30);
  options_free(o);
  o = parse_ok("UseEntryGuards 0\nNumEntryGuards 2\nNumPrimaryGuards 5\n"
               "GuardLifetime 2 months\nAvoidDiskWrites 1\n", 0, NULL);
  g = options_module(o, &guards_conf_module);
  ck_assert_int_eq(g->use_entry_guards, 0);
  ck_assert_int_eq(g->num_entry_guards, 2);
  ck_assert_int_eq(g->num_primary_guards, 5);
  ck_assert_int_eq(g->guard_lifetime, 2 * 2629728); /* tor's month */
  ck_assert_int_eq(o->avoid_disk_writes, 1);
  ck_assert_int_eq(options_state_save_interval(o), 3600);
  options_free(o);
  o = parse_ok("GuardLifetime 10 weeks\n", 0, NULL);
  g = options_module(o, &guards_conf_module);
  ck_assert_int_eq(g->guard_lifetime, 70 * 86400);
  options_free(o);
  /* Out of range: refused naming the option. */
  char *err = parse_bad("NumEntryGuards 17\n", 0, NULL);
  assert_has(err, "NumEntryGuards");
  free(err);
  err = parse_bad("NumPrimaryGuards -1\n", 0, NULL);
  assert_has(err, "NumPrimaryGuards");
  free(err);
  err = parse_bad("GuardLifetime 3651 days\n", 0, NULL);
  assert_has(err, "GuardLifetime");
  free(err);
  err = parse_bad("UseEntryGuards 2\n", 0, NULL);
  assert_has(err, "UseEntryGuards");
  free(err);
  /* Below a day: accepted with tor's behaviour (the consensus' values)
   * and a warning; NumDirectoryGuards is accepted and said to do
   * nothing. */
  warnings[0] = '\0';
  log_set_hook(LOG_SEV_NOTICE, warn_hook, NULL);
  o = parse_ok("GuardLifetime 12 hours\nNumDirectoryGuards 3\n", 0, NULL);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
  assert_has(warnings, "GuardLifetime is below one day");
  assert_has(warnings, "NumDirectoryGuards has no effect");
  g = options_module(o, &guards_conf_module);
  ck_assert_int_eq(g->guard_lifetime, 12 * 3600);
  ck_assert_int_eq(g->num_directory_guards, 3);
  options_free(o);
  /* Reloadable, as in tor. */
  ck_assert_int_eq(options_find("NumEntryGuards")->reloadable, 1);
  ck_assert_int_eq(options_find("UseEntryGuards")->reloadable, 1);
}
END_TEST

Suite *
suite_options(void)
{
  Suite *s = suite_create("options");
  TCase *tc = tcase_create("options");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_file_values);
  tcase_add_test(tc, test_cmdline_overrides);
  tcase_add_test(tc, test_log_lines);
  tcase_add_test(tc, test_errors_name_line);
  tcase_add_test(tc, test_scheduler_options);
  tcase_add_test(tc, test_nickname_rules);
  tcase_add_test(tc, test_orport_forms);
  tcase_add_test(tc, test_orport_auto_dual_stack);
  tcase_add_test(tc, test_testing_network);
  tcase_add_test(tc, test_directory_options);
  tcase_add_test(tc, test_reload_keeps_non_reloadable);
  tcase_add_test(tc, test_cmdline_parse);
  tcase_add_test(tc, test_load_files);
  tcase_add_test(tc, test_cmdline_flags);
  tcase_add_test(tc, test_defaults_torrc);
  tcase_add_test(tc, test_control_options);
  tcase_add_test(tc, test_typed_values);
  tcase_add_test(tc, test_dump_config);
  tcase_add_test(tc, test_tor_option_names);
  tcase_add_test(tc, test_relay_options);
  tcase_add_test(tc, test_guard_options);
  tcase_add_test(tc, test_controller_overlay);
  tcase_add_test(tc, test_check_startable);
  tcase_add_test(tc, test_list_and_usage);
  suite_add_tcase(s, tc);
  return s;
}
