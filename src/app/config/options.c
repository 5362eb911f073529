/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c -- the option table, merging torrc and command line, typed
 * assignment and cross-option validation (see options.h).
 *
 * Design:
 *  - The table is the single source of truth. A row says where its value
 *    lives in options_t (offset) and which of a handful of types it has;
 *    assignment, comparison, copying (for SIGHUP) and --list-options are
 *    generic over those types, so adding an option is adding a row (and a
 *    field, and a paragraph in doc/pctor.1, which `make check` enforces).
 *  - Defaults are applied by parsing the row's default string with the
 *    same code as a torrc value, so a default can never be invalid
 *    without a unit test noticing.
 *  - Command-line lines are merged into the torrc's lines before anything
 *    is assigned (replace / "+" append / "/" clear, as tor does), then
 *    every line is assigned in order; the first error stops the parse and
 *    names the option and its line.
 *  - Only this file knows option names; the rest of pctor reads options_t.
 */
#include "app/config/options.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_set.h"
#include "feature/control/control.h"      /* ControlPort, MetricsPort */
#include "feature/control/control_auth.h"
#include "feature/control/metrics.h"
#include "feature/dir/dir_authority.h"
#include "feature/dir/path.h"
#include "feature/exit/policy.h"
#include "feature/ipsec/broker.h"
#include "feature/relay/routerdesc.h"
#include "lib/conf/confval.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/sockstat.h"

#define OFF(field) offsetof(options_t, field)

/* clang-format off */
static const option_def_t option_table[] = {
  {"DataDirectory", OPT_TYPE_PATH, "PATH", NULL,
   "/var/lib/pctor when started as root, otherwise ~/.pctor",
   0, 0, 0, OFF(data_directory),
   "The directory where pctor keeps its state: its keys (in the keys "
   "subdirectory) and the files fingerprint and fingerprint-ed25519. "
   "pctor creates it (mode 0700) if it does not exist. With User, the "
   "directory and the files in it that pctor owns are handed to that "
   "user before pctor switches to it. A relative path or one starting "
   "with ~/ is made absolute when pctor starts."},
  {"ORPort", OPT_TYPE_ORPORT, "[ADDRESS:]PORT | 0", "0",
   "0 (no ORPort)",
   0, 0, 0, OFF(or_ports),
   "Accept connections from Tor clients and relays on PORT. A port "
   "alone listens on every IPv4 address (0.0.0.0:PORT); ADDRESS is an "
   "IPv4 address (192.0.2.1:9001) or an IPv6 address in brackets "
   "([2001:db8::1]:9001). Give the option twice, once with an IPv4 and "
   "once with an IPv6 address, to listen on both; more ORPort lines are "
   "an error, and 0 (no ORPort) cannot be combined with another line. "
   "Ports are bound while pctor still runs as root, so ports below 1024 "
   "work with User."},
  {"Address", OPT_TYPE_HOST, "ADDRESS | HOSTNAME", NULL,
   "unset (pctor guesses its address)",
   1, 0, 0, OFF(address),
   "The relay's public address, published in its descriptor: an IPv4 "
   "or IPv6 address, or a host name that resolves to one. If unset, "
   "pctor uses the ORPort's address when that is a public one and "
   "otherwise guesses it from the local interfaces."},
  {"Nickname", OPT_TYPE_NICKNAME, "NAME", "Unnamed", "Unnamed",
   1, 0, 0, OFF(nickname),
   "The relay's nickname, published in its descriptor: 1 to 19 ASCII "
   "letters and digits."},
  {"ContactInfo", OPT_TYPE_STRING, "TEXT", NULL, "unset",
   1, 0, 0, OFF(contact_info),
   "How to reach the relay's operator, published in its descriptor "
   "(for example an e-mail address written so that harvesters do not "
   "recognise it). Printable text without control characters."},
  {"Log", OPT_TYPE_LOG, "SEVERITY[-SEVERITY] stderr|stdout|syslog|file PATH",
   NULL, "notice stderr",
   1, 0, 0, OFF(logs),
   "Send messages with a severity from the first SEVERITY up to the "
   "second (err if omitted; severities are debug, info, notice, warn "
   "and err) to standard error, standard output, syslog (facility "
   "daemon) or the file PATH (appended to, created with mode 0640). "
   "Repeat the option for several destinations. Without any Log line, "
   "notice and above go to standard error, which RunAsDaemon sends to "
   "/dev/null. SIGHUP applies changed Log lines and reopens log files; "
   "with User, log files must be writable by that user to be reopened."},
  {"RunAsDaemon", OPT_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(run_as_daemon),
   "If 1, run in the background: pctor forks, starts a new session, "
   "changes its working directory to / and, once it has started, "
   "connects its standard input, output and error to /dev/null. The "
   "command that started pctor waits until then and exits with status "
   "0, or with status 1 if start-up failed."},
  {"PidFile", OPT_TYPE_PATH, "PATH", NULL, "unset",
   0, 0, 0, OFF(pid_file),
   "Write pctor's process ID to PATH once it has started (after going "
   "to the background with RunAsDaemon), and remove the file on a clean "
   "exit. The file is written before pctor switches to User; if that "
   "user may not remove it at exit, pctor empties it instead."},
  {"User", OPT_TYPE_USER, "NAME", NULL, "unset (keep the starting user)",
   0, 0, 0, OFF(user),
   "After binding its ports and reading its keys, switch to the user "
   "NAME, its primary group and its supplementary groups, and give up "
   "every capability. DataDirectory is handed to NAME first. Switching "
   "to another user requires starting pctor as root; naming the user "
   "pctor already runs as is allowed and changes nothing."},
  {"TestingTorNetwork", OPT_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(testing_tor_network),
   "For private test networks only, with tor's meaning. If 1, "
   "DirAuthority lines are required (the public authorities are never "
   "used), the default of ExtendAllowPrivateAddresses becomes 1, a "
   "private address may be published in the descriptor, the descriptor "
   "is republished every 5 minutes instead of every 18 hours and failed "
   "uploads are retried after 1 second (doubling up to 30 seconds) "
   "instead of after 1 minute (up to an hour). Key lifetimes stay as on "
   "the public network."},
  {"ExtendAllowPrivateAddresses", OPT_TYPE_BOOL, "0|1", NULL,
   "0 (1 with TestingTorNetwork 1)",
   1, 0, 0, OFF(extend_allow_private_addresses),
   "If 1, extend circuits to relays at private addresses (RFC 1918 "
   "and other private IPv4 ranges, loopback, link-local, unique local "
   "IPv6). If 0, such extend requests are refused."},
  {"OnionKeyRotationDays", OPT_TYPE_INT, "N", "28", "28",
   1, 1, 90, OFF(onion_key_rotation_days),
   "Rotate the relay's onion (ntor) key every N days, 1 to 90."},
  {"OnionKeyGracePeriodDays", OPT_TYPE_INT, "N", "7", "7",
   1, 1, 90, OFF(onion_key_grace_period_days),
   "After a rotation, keep accepting the previous onion key for N "
   "days, 1 to OnionKeyRotationDays."},
  {"DirAuthority", OPT_TYPE_DIRAUTH,
   "[NICKNAME] [FLAGS] ADDRESS:DIRPORT FINGERPRINT", NULL,
   "unset (the public Tor network's authorities)",
   1, 0, 0, OFF(dir_authorities),
   "A directory authority to publish the relay's descriptor to, in "
   "tor's syntax: FLAGS are orport=PORT, v3ident=HEX, no-v2, "
   "ipv6=[ADDRESS]:PORT, bridge and weight=N; FINGERPRINT is the "
   "authority's RSA identity (40 hex digits, spaces allowed). Repeat the "
   "option for each authority. Without any DirAuthority line pctor uses "
   "the public Tor network's authorities; with TestingTorNetwork 1 at "
   "least one line is required."},
  {"MyFamily", OPT_TYPE_FAMILY, "RELAY[,RELAY...]", NULL, "unset",
   1, 0, 0, OFF(my_family),
   "Other relays run by the same operator, published in the family line "
   "of the descriptor so that clients never use two of them in one "
   "circuit. A RELAY is $ and its 40-digit RSA fingerprint (a ~NICKNAME "
   "after it is accepted and dropped) or a nickname; list them separated "
   "by commas or spaces, on one line or several. Each of those relays "
   "should list this one too."},
  {"PublishServerDescriptor", OPT_TYPE_BOOL, "0|1", "1", "1",
   1, 0, 0, OFF(publish_server_descriptor),
   "If 1, upload the relay's server descriptor to the directory "
   "authorities after start-up, whenever it changes, and every 18 "
   "hours, so that clients can find the relay. If 0, never upload it."},
  {"AssumeReachable", OPT_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(assume_reachable),
   "Accepted for compatibility with tor's torrc. pctor does not test "
   "whether its ORPort is reachable from outside before publishing, so "
   "it always behaves as tor does with AssumeReachable 1: it publishes "
   "right after start-up and leaves the reachability test to the "
   "authorities, which list the relay as Running only once they reached "
   "it."},
  {"ExitRelay", OPT_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(exit_relay),
   "If 1, the relay is an exit: it opens TCP connections to the "
   "destinations clients ask for (RELAY_BEGIN), resolves names for them "
   "(RELAY_RESOLVE) through the resolver in ServerDNSResolvConfFile, and "
   "publishes its exit policy. If 0, every stream request is refused and "
   "the published policy is \"reject *:*\". As in tor, streams are "
   "refused on a client's first hop (a previous hop that did not "
   "authenticate as a relay, or CREATE_FAST); see also "
   "RefuseUnknownExits."},
  {"RefuseUnknownExits", OPT_TYPE_STRING, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(refuse_unknown_exits_str),
   "Exit: with 1, once the relay has a consensus, streams (RELAY_BEGIN) "
   "are refused with END reason MISC on circuits whose previous hop is a "
   "relay the consensus does not list (by identity), as tor does. auto "
   "(as tor) follows the consensus parameter refuseunknownexits, which "
   "defaults to 1. 0 never refuses for this reason. Without a consensus "
   "nothing is refused for this reason."},
  {"ExitPolicy", OPT_TYPE_POLICY, "accept|reject ADDRESS:PORTS[,...]",
   NULL, "unset (tor's default exit policy when ExitRelay is 1)",
   1, 0, 0, OFF(exit_policy),
   "Exit policy rules in tor's syntax, in order, the first match "
   "deciding: accept, reject, accept6 or reject6, then *, *4, *6, "
   "private, or an address with an optional /BITS or /MASK, a colon and "
   "*, a port or a range PORT-PORT. Several rules go on one line "
   "separated by commas, or on several lines. With ExitRelay 1, tor's "
   "default exit policy (rejecting ports 25, 119, 135-139, 445, 563, "
   "1214, 4661-4666, 6346-6429, 6699 and 6881-6999, accepting the rest) "
   "follows the configured rules; end them with \"reject *:*\" to avoid "
   "that. Only used with ExitRelay 1."},
  {"ExitPolicyRejectPrivate", OPT_TYPE_BOOL, "0|1", "1", "1",
   1, 0, 0, OFF(exit_policy_reject_private),
   "If 1, the exit policy starts with rules rejecting private and local "
   "networks and the relay's own addresses. Private test networks on "
   "127.0.0.1 set it to 0."},
  {"ExitPolicyRejectLocalInterfaces", OPT_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(exit_policy_reject_local_interfaces),
   "If 1, the exit policy also rejects the public addresses of the "
   "relay's ORPorts and Address."},
  {"ServerDNSResolvConfFile", OPT_TYPE_PATH, "PATH", NULL,
   "unset (/etc/resolv.conf)",
   0, 0, 0, OFF(server_dns_resolv_conf_file),
   "The resolv.conf file whose nameservers an exit uses to resolve the "
   "names clients ask for. Only its nameserver lines are used; nothing "
   "else (no hosts file, no search domains). Tests point it at a "
   "resolver on 127.0.0.1."},
  {"SocksPort", OPT_TYPE_STRING, "[ADDRESS:]PORT | 0", "0", "0 (no client)",
   0, 0, 0, OFF(socks_port),
   "Accept SOCKS4a and SOCKS5 connections from applications on PORT (on "
   "127.0.0.1 unless ADDRESS is given) and carry them over three-hop "
   "circuits chosen from the consensus. Streams with different SOCKS "
   "usernames or passwords never share a circuit (IsolateSOCKSAuth). Only "
   "CONNECT is supported; RESOLVE requests are refused. 0 disables the "
   "client."},
  {"EntryNodes", OPT_TYPE_STRING, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(entry_nodes),
   "Client circuits start at one of these relays (fingerprints with or "
   "without $, or nicknames)."},
  {"MiddleNodes", OPT_TYPE_STRING, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(middle_nodes),
   "The middle hop of client circuits is one of these relays."},
  {"ExitNodes", OPT_TYPE_STRING, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(exit_nodes),
   "Client circuits end at one of these relays. When none of them accepts "
   "a port by its published policy summary (private networks whose exits "
   "only accept 127.0.0.0/8 summarise to \"reject all\"), they are used "
   "anyway and the exit decides."},
  {"ExcludeNodes", OPT_TYPE_STRING, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(exclude_nodes),
   "Client circuits never use these relays."},
  {"MaxCircuitDirtiness", OPT_TYPE_INT, "SECONDS", "600", "600",
   1, 10, 30 * 24 * 3600, OFF(max_circuit_dirtiness),
   "A client circuit takes new streams for at most this many seconds "
   "after its first stream; idle old circuits are then closed."},
  {"BandwidthRate", OPT_TYPE_STRING, "N bytes|KBytes|MBytes|GBytes", NULL,
   "1 GByte", 1, 0, 0, OFF(bandwidth_rate_str),
   "Average bandwidth per second this relay may use for reading, and "
   "separately for writing, on all its connections: link connections, "
   "exit connections, SocksPort connections and directory connections "
   "(token buckets, as tor). Connections to private addresses are not "
   "counted unless TestingTorNetwork is 1. At least 75 KBytes."},
  {"BandwidthBurst", OPT_TYPE_STRING, "N bytes|KBytes|MBytes|GBytes", NULL,
   "1 GByte", 1, 0, 0, OFF(bandwidth_burst_str),
   "The size of the BandwidthRate buckets: the most that may be used in a "
   "burst. Must not be smaller than BandwidthRate."},
  {"RelayBandwidthRate", OPT_TYPE_STRING, "N bytes|KBytes|MBytes|GBytes",
   NULL, "0 (no separate limit)", 1, 0, 0, OFF(relay_bandwidth_rate_str),
   "Like BandwidthRate, for connections to and from other relays only, in "
   "addition to BandwidthRate. 0: no separate limit."},
  {"RelayBandwidthBurst", OPT_TYPE_STRING, "N bytes|KBytes|MBytes|GBytes",
   NULL, "RelayBandwidthRate", 1, 0, 0, OFF(relay_bandwidth_burst_str),
   "The size of the RelayBandwidthRate buckets."},
  {"TokenBucketRefillInterval", OPT_TYPE_INT, "MILLISECONDS", "100", "100",
   0, 1, 1000, OFF(token_bucket_refill_interval),
   "How often the bandwidth buckets are refilled, in milliseconds (1 to "
   "1000)."},
  {"MaxMemInQueues", OPT_TYPE_STRING, "N bytes|KB|MB|GB", NULL,
   "unset (tor's rule: 3/4 of RAM, 2/5 with 8 GB or more, between 256 MB "
   "and 8 GB)",
   1, 0, 0, OFF(max_mem_in_queues_str),
   "When the cells queued on all circuits take more memory than this, "
   "close circuits, the one whose oldest queued cell has waited longest "
   "first, until they take at most 90% of it; each such event is logged. "
   "At least 64 MB."},
  {"CircuitPriorityHalflife", OPT_TYPE_STRING, "SECONDS", NULL,
   "unset (the consensus parameter CircuitPriorityHalflifeMsec, else 30)",
   1, 0, 0, OFF(circuit_priority_halflife_str),
   "Half-life, in seconds (fractions allowed), of the moving average of "
   "cells each circuit has sent recently. Whenever there is room to "
   "write, the circuit with the lowest average goes first, across all "
   "connections, so quiet interactive circuits overtake bulk ones (EWMA "
   "scheduling). 0 or a negative value turns this off: circuits are then "
   "served round robin. Changes take effect on SIGHUP without dropping "
   "circuits."},
  {"Schedulers", OPT_TYPE_STRING, "KIST|KISTLite[,...]", "KIST,KISTLite",
   "KIST,KISTLite", 1, 0, 0, OFF(schedulers),
   "How much the scheduler writes to a connection: KIST asks the kernel "
   "(TCP_INFO) how much the socket can send soon and writes no more, so "
   "that cells stay where they can still be reordered; KISTLite only "
   "bounds pctor's own output buffer. The first one that works on this "
   "system is used. tor's Vanilla scheduler is not supported."},
  {"KISTSchedRunInterval", OPT_TYPE_INT, "MILLISECONDS", "2", "2",
   1, 1, 100, OFF(kist_sched_run_interval),
   "How often connections that the kernel held back are offered cells "
   "again, in milliseconds (1 to 100)."},
  {"KISTSockBufSizeFactor", OPT_TYPE_STRING, "NUM", "1.0", "1.0",
   1, 0, 0, OFF(kist_sock_buf_size_factor_str),
   "KIST writes to a socket the free part of its congestion window plus "
   "this many congestion windows, minus what is still unsent in the "
   "kernel (0 to 100)."},
  {"PerCircuitTCP", OPT_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(per_circuit_tcp),
   "If 1, every circuit this relay extends to another relay gets a TCP "
   "connection (with TLS and a full link handshake) of its own, closed "
   "when the circuit ends (PCTCP), so that one circuit's losses and "
   "congestion do not stall the others. Connections from clients stay "
   "shared. The next relay needs no change."},
  {"PerCircuitTCPMaxConnections", OPT_TYPE_INT, "NUM", "0",
   "0 (half the file-descriptor limit)", 1, 0, 10000000,
   OFF(per_circuit_tcp_max_connections),
   "With PerCircuitTCP, at most this many per-circuit connections (and "
   "never more than half the file-descriptor limit); beyond it, new "
   "circuits share the existing connection to their next relay whose "
   "circuits have sent least recently."},
  {"PerCircuitTCPSpares", OPT_TYPE_INT, "NUM", "1", "1", 1, 0, 16,
   OFF(per_circuit_tcp_spares),
   "With PerCircuitTCP, keep this many connections to each relay that "
   "circuits were recently extended to open ahead of need, so that the "
   "next extension does not wait for TCP, TLS and the link handshake. "
   "Unused spares close after a minute. 0 to 16."},
  {"PerCircuitTCPRequireIPsec", OPT_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(per_circuit_tcp_require_ipsec),
   "Use per-circuit connections only to relays with an installed IPsec "
   "SA (so that an observer cannot count circuits); circuits to other "
   "relays share a connection. Needs IPsec auto or 1 (with IPsec 1 it "
   "is implied)."},
  {"IPsec", OPT_TYPE_STRING, "0|1|auto", "0", "0", 1, 0, 0, OFF(ipsec_str),
   "IPsec between relays, negotiated by strongSwan's charon through its "
   "VICI socket (IPsecVICISocket). With auto or 1, this relay tells each "
   "relay it connects to that it offers IPsec (a link cell that tor "
   "ignores), with its Ed25519 IKE key (DataDirectory/keys/"
   "ike_ed25519_key, made on first start) certified by its identity. "
   "With a relay that offers it too, pctor loads an IPsec connection "
   "into charon whose IKE identities are the two relays' Ed25519 "
   "identities and which protects the TCP between this relay and the "
   "other's ORPort, and the relay with the lower identity initiates it. "
   "PerCircuitTCP then opens per-circuit connections to that relay only "
   "while its SA is installed; meanwhile circuits share a TLS "
   "connection. With auto, relays that do not offer IPsec (tor relays) "
   "get per-circuit connections without it; with 1 they share. pctor "
   "never closes circuits or connections because of IPsec."},
  {"IPsecVICISocket", OPT_TYPE_PATH, "PATH", IPSEC_DEFAULT_VICI_SOCKET,
   IPSEC_DEFAULT_VICI_SOCKET, 1, 0, 0, OFF(ipsec_vici_socket),
   "The unix socket of charon's VICI plugin. pctor reconnects (with "
   "growing delays up to 30 seconds) whenever it goes away, and then "
   "loads its key and connections again. With User, the socket must "
   "stay usable by that user (scripts/pctor-charon --vici-group)."},
  {"IPsecUpdown", OPT_TYPE_STRING, "COMMAND", NULL, "unset (none)",
   1, 0, 0, OFF(ipsec_updown),
   "Obsolete: accepted and ignored with a warning. pctor no longer "
   "names an updown command in what it loads into charon (charon would "
   "run it as root); the updown script is part of charon's set-up: "
   "scripts/pctor-charon runs ipsec-conf/pctor-updown for pctor's "
   "CHILD_SAs (doc/ipsec.md)."},
  {"IPsecMaxPeers", OPT_TYPE_INT, "NUM", "1024", "1024", 1, 1, 1000000,
   OFF(ipsec_max_peers),
   "Relays pctor keeps IPsec state for (known to offer IPsec or not). "
   "Beyond it the least recently used relay without an SA is forgotten; "
   "if every one has an SA, further relays share connections."},
  /* ---- IPsec broker trust (issue 14): IPsecMaxPeersPerAddress,
   * IPsecCharonUser. Validated in the matching block of
   * options_validate(); used by app/main/start.c apply_ipsec(). ---- */
  {"IPsecMaxPeersPerAddress", OPT_TYPE_INT, "NUM", "2", "2", 1, 1, 1000,
   OFF(ipsec_max_peers_per_address),
   "Relay identities pctor keeps IPsec state for per IP address (tor's "
   "authorities list at most two relays per address). A further identity "
   "at that address replaces the least recently used one the consensus "
   "does not list there, or is ignored if all are listed."},
  {"IPsecCharonUser", OPT_TYPE_USER, "USERNAME", NULL, "unset (root only)",
   1, 0, 0, OFF(ipsec_charon_user),
   "Besides root, the user charon may run as. Before it sends anything "
   "(its IKE private key first), pctor checks who serves the VICI socket "
   "(SO_PEERCRED) and refuses a socket served by any other user."},
  /* ---- end of IPsec broker trust ---- */
  {"MeasureMeEnabled", OPT_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(measureme_enabled),
   "If 1, a client may ask this relay (with a MeasureMe relay cell) to "
   "record statistics of its circuit, for that circuit only, as JSON lines "
   "in DataDirectory/measureme.jsonl: cells per direction, queueing delay, "
   "EWMA average, output-buffer and kernel send-queue sizes and the "
   "connections' TCP_INFO, within per-circuit and per-client rate limits. "
   "0 refuses such requests."},
  {"MeasureMeHops", OPT_TYPE_STRING, "HOP[,HOP...]", NULL, "unset (none)",
   1, 0, 0, OFF(measureme_hops_str),
   "Client: ask these hops (1 = guard, 2 = middle, 3 = exit) of every new "
   "circuit to record statistics of it (MeasureMe; relays without it "
   "ignore the request). Each circuit gets a random label, logged at "
   "notice level with the circuit, that the relays' records carry."},
  {"MeasureMeInterval", OPT_TYPE_INT, "MILLISECONDS", "1000", "1000",
   1, 100, 60000, OFF(measureme_interval),
   "Client: how often the relays asked by MeasureMeHops record (100 to "
   "60000)."},
  /* ---- MeasureMe limits (issue 14): MeasureMeLogMaxSize,
   * MeasureMeClientRate, MeasureMeClientBurst. Validated in the matching
   * block of options_validate(); used by app/main/start.c
   * measureme_config(). ---- */
  {"MeasureMeLogMaxSize", OPT_TYPE_STRING, "N bytes|KB|MB|GB", "100 MB",
   "100 MB", 1, 0, 0, OFF(measureme_log_max_size_str),
   "MeasureMe: when DataDirectory/measureme.jsonl reaches this size it is "
   "renamed measureme.jsonl.1 (replacing the previous one) and a new file "
   "is started. At least 64 KB."},
  {"MeasureMeClientRate", OPT_TYPE_INT, "NUM", "60", "60", 1, 1, 60000,
   OFF(measureme_client_rate),
   "MeasureMe: requests per minute accepted from one client address (the "
   "connection a circuit came from), on average."},
  {"MeasureMeClientBurst", OPT_TYPE_INT, "NUM", "120", "120", 1, 1, 60000,
   OFF(measureme_client_burst),
   "MeasureMe: requests one client address may make at once before "
   "MeasureMeClientRate applies."},
  /* ---- end of MeasureMe limits ---- */
  {"ConfluxEnabled", OPT_TYPE_STRING, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(conflux_enabled_str),
   "Client: 1 makes new circuits conflux sets (proposal 329) wherever the "
   "exit supports it (Conflux=1 and congestion control): several legs to "
   "the same exit through different guards and middles, one stream space, "
   "traffic split between them. 0 never does. auto (as tor) follows the "
   "consensus parameter cfx_enabled, which defaults to on. Exits serve "
   "conflux whatever this option says (unless the consensus sets "
   "cfx_enabled=0)."},
  {"ConfluxClientUX", OPT_TYPE_STRING,
   "throughput|latency|throughput_lowmem|latency_lowmem", "throughput",
   "throughput", 1, 0, 0, OFF(conflux_client_ux_str),
   "Client: the user experience asked from the exit for the data it sends "
   "(tor's values): throughput uses every leg with room in its congestion "
   "window (LowRTT), latency only the lowest-RTT leg (MinRTT); the lowmem "
   "variants keep the out-of-order queue small (MinRTT too)."},
  {"ConfluxLegs", OPT_TYPE_INT, "NUM", "0", "0 (the consensus' "
   "cfx_num_legs_set, 2)", 1, 0, 8, OFF(conflux_legs),
   "Client: legs per conflux set, 2 to 8; 0 takes the consensus parameter "
   "cfx_num_legs_set (default 2)."},
  {"ConfluxScheduler", OPT_TYPE_STRING,
   "auto|minrtt|lowrtt|proportional", "auto", "auto",
   1, 0, 0, OFF(conflux_scheduler_str),
   "How this pctor spreads what it sends over the legs of a conflux set, "
   "as a client (uploads) and as an exit (downloads). auto does what tor "
   "does: follow the other end's wish (an exit asks clients for latency; "
   "a client's ConfluxClientUX tells the exit). minrtt: only the "
   "lowest-RTT leg. lowrtt: the lowest-RTT leg with room in its congestion "
   "window. proportional: the splitter of AlSabah et al. (PETS 2013), each "
   "cell on a leg with room chosen at random in proportion to the leg's "
   "measured throughput (congestion window / RTT)."},
  {"ConfluxMaxOutOfOrder", OPT_TYPE_INT, "NUM", "10000", "10000",
   1, 16, 1000000, OFF(conflux_max_ooo),
   "The most stream messages (cells) one conflux set may hold waiting for "
   "an earlier one; a set that would hold more is closed with a notice."},
  {"UseMicrodescriptors", OPT_TYPE_BOOL, "0|1", "1", "1",
   0, 0, 0, OFF(use_microdescriptors),
   "If 1 the client and the relay's directory cache fetch the "
   "microdescriptor consensus and microdescriptors; if 0, the ns "
   "consensus and full server descriptors."},
  /* ---- ControlPort and MetricsPort (feature/control): one block ---- */
  {"ControlPort", OPT_TYPE_STRING,
   "[ADDRESS:]PORT | auto | unix:PATH [FLAGS] | 0", "0", "0 (none)",
   0, 0, 0, OFF(control_port),
   "Accept controllers (stem, nyx) speaking tor's control protocol. A "
   "port alone listens on 127.0.0.1; auto picks a free port (see GETINFO "
   "net/listeners/control); unix:PATH a unix socket, as ControlSocket. "
   "One ControlPort line is supported."},
  {"ControlSocket", OPT_TYPE_STRING, "PATH [FLAGS] | 0", NULL, "unset",
   0, 0, 0, OFF(control_socket),
   "Accept controllers on the unix socket PATH. FLAGS: GroupWritable, "
   "WorldWritable, RelaxDirModeCheck, as in tor."},
  {"CookieAuthentication", OPT_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(cookie_authentication),
   "Controllers may authenticate with the cookie pctor writes at start "
   "(COOKIE and SAFECOOKIE)."},
  {"CookieAuthFile", OPT_TYPE_PATH, "PATH", NULL,
   "DataDirectory/control_auth_cookie",
   0, 0, 0, OFF(cookie_auth_file),
   "Where to write the authentication cookie."},
  {"CookieAuthFileGroupReadable", OPT_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(cookie_auth_file_group_readable),
   "Make the cookie file readable by the group (mode 0640)."},
  {"HashedControlPassword", OPT_TYPE_STRING, "16:HEX", NULL, "unset",
   1, 0, 0, OFF(hashed_control_password),
   "Controllers may authenticate with the password whose hash this is "
   "(tor's format, from tor --hash-password)."},
  {"__OwningControllerProcess", OPT_TYPE_STRING, "PID", NULL, "unset",
   1, 0, 0, OFF(owning_controller_process),
   "Exit when the process PID ends (set by controllers that start pctor)."},
  {"MetricsPort", OPT_TYPE_STRING, "[ADDRESS:]PORT [prometheus] | 0", "0",
   "0 (none)", 0, 0, 0, OFF(metrics_port),
   "Serve Prometheus metrics over HTTP at /metrics. A port alone listens "
   "on 127.0.0.1."},
  {"MetricsPortPolicy", OPT_TYPE_STRING, "accept|reject ADDR[/MASK][,...]",
   NULL, "unset (reject everyone)", 1, 0, 0, OFF(metrics_port_policy),
   "Who may read the MetricsPort; the first matching rule decides, no "
   "match rejects."},
  /* ---- end of ControlPort and MetricsPort ---- */
};
/* clang-format on */

#define N_OPTIONS (sizeof(option_table) / sizeof(option_table[0]))
_Static_assert(N_OPTIONS <= 64 * OPTIONS_SET_WORDS,
               "set_explicitly_ has a bit per option");
#define SET_BIT_TEST(o, i) (((o)->set_explicitly_[(i) / 64] >> ((i) % 64)) & 1)
#define SET_BIT_ON(o, i) ((o)->set_explicitly_[(i) / 64] |= 1ull << ((i) % 64))
#define SET_BIT_OFF(o, i) ((o)->set_explicitly_[(i) / 64] &= ~(1ull << ((i) % 64)))

const option_def_t *
options_table(size_t *n_out)
{
  *n_out = N_OPTIONS;
  return option_table;
}

const option_def_t *
options_find(const char *name)
{
  for (size_t i = 0; i < N_OPTIONS; i++)
    if (conf_key_eq(option_table[i].name, name))
      return &option_table[i];
  return NULL;
}

static size_t
def_index(const option_def_t *def)
{
  return (size_t)(def - option_table);
}

static const option_def_t *
def_by_offset(size_t off)
{
  for (size_t i = 0; i < N_OPTIONS; i++)
    if (option_table[i].offset == off)
      return &option_table[i];
  abort();
}

/* ---- typed storage ---- */

#define FIELD(o, def, T) ((T *)(void *)((char *)(o) + (def)->offset))
#define CFIELD(o, def, T) \
  ((const T *)(const void *)((const char *)(o) + (def)->offset))

static void
strlist_clear(options_strlist_t *l)
{
  for (int i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

static void
strlist_add(options_strlist_t *l, const char *s)
{
  l->v = pc_realloc(l->v, sizeof(char *) * (size_t)(l->n + 1));
  l->v[l->n++] = pc_strdup(s);
}

/* Reset one option's storage to "unset" (0, NULL, empty). */
static void
field_clear(options_t *o, const option_def_t *def)
{
  switch (def->type) {
  case OPT_TYPE_BOOL:
  case OPT_TYPE_INT:
    *FIELD(o, def, int) = 0;
    break;
  case OPT_TYPE_ORPORT:
    memset(FIELD(o, def, options_ports_t), 0, sizeof(options_ports_t));
    break;
  case OPT_TYPE_LOG:
  case OPT_TYPE_DIRAUTH:
  case OPT_TYPE_FAMILY:
  case OPT_TYPE_POLICY:
    strlist_clear(FIELD(o, def, options_strlist_t));
    break;
  default:
    PC_FREE(*FIELD(o, def, char *));
    break;
  }
}

static int
addr_eq(const pc_addr_t *a, const pc_addr_t *b)
{
  return a->family == b->family && a->port == b->port &&
         !memcmp(a->addr, b->addr, sizeof(a->addr));
}

int
options_equal(const options_t *a, const options_t *b,
              const option_def_t *def)
{
  switch (def->type) {
  case OPT_TYPE_BOOL:
  case OPT_TYPE_INT:
    return *CFIELD(a, def, int) == *CFIELD(b, def, int);
  case OPT_TYPE_ORPORT: {
    const options_ports_t *pa = CFIELD(a, def, options_ports_t);
    const options_ports_t *pb = CFIELD(b, def, options_ports_t);
    if (pa->n != pb->n)
      return 0;
    for (int i = 0; i < pa->n; i++)
      if (!addr_eq(&pa->addrs[i], &pb->addrs[i]))
        return 0;
    return 1;
  }
  case OPT_TYPE_LOG:
  case OPT_TYPE_DIRAUTH:
  case OPT_TYPE_FAMILY:
  case OPT_TYPE_POLICY: {
    const options_strlist_t *la = CFIELD(a, def, options_strlist_t);
    const options_strlist_t *lb = CFIELD(b, def, options_strlist_t);
    if (la->n != lb->n)
      return 0;
    for (int i = 0; i < la->n; i++)
      if (strcmp(la->v[i], lb->v[i]))
        return 0;
    return 1;
  }
  default: {
    const char *sa = *CFIELD(a, def, char *);
    const char *sb = *CFIELD(b, def, char *);
    if (!sa || !sb)
      return sa == sb;
    return !strcmp(sa, sb);
  }
  }
}

/* Replace dst's value of def with a copy of src's. */
static void
field_copy(options_t *dst, const options_t *src, const option_def_t *def)
{
  field_clear(dst, def);
  switch (def->type) {
  case OPT_TYPE_BOOL:
  case OPT_TYPE_INT:
    *FIELD(dst, def, int) = *CFIELD(src, def, int);
    break;
  case OPT_TYPE_ORPORT:
    *FIELD(dst, def, options_ports_t) = *CFIELD(src, def, options_ports_t);
    break;
  case OPT_TYPE_LOG:
  case OPT_TYPE_DIRAUTH:
  case OPT_TYPE_FAMILY:
  case OPT_TYPE_POLICY: {
    const options_strlist_t *l = CFIELD(src, def, options_strlist_t);
    for (int i = 0; i < l->n; i++)
      strlist_add(FIELD(dst, def, options_strlist_t), l->v[i]);
    break;
  }
  default: {
    const char *s = *CFIELD(src, def, char *);
    *FIELD(dst, def, char *) = s ? pc_strdup(s) : NULL;
    break;
  }
  }
  size_t bit = def_index(def);
  if (SET_BIT_TEST(src, bit))
    SET_BIT_ON(dst, bit);
  else
    SET_BIT_OFF(dst, bit);
}

/* ---- value checks ---- */

static int
has_control_chars(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return 1;
  return 0;
}

static const char *
home_dir(void)
{
  const char *h = getenv("HOME");
  if (h && *h)
    return h;
  struct passwd *pw = getpwuid(getuid());
  if (pw && pw->pw_dir && *pw->pw_dir)
    return pw->pw_dir;
  return NULL;
}

char *
options_default_data_directory(int is_root, const char *home)
{
  if (is_root)
    return pc_strdup("/var/lib/pctor");
  if (!home || !*home) {
    struct passwd *pw = getpwuid(getuid());
    home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
  }
  if (!home)
    return NULL;
  return pc_asprintf("%s%s.pctor", home,
                     home[strlen(home) - 1] == '/' ? "" : "/");
}

/* Make a file name absolute: "~" and "~/x" use the home directory, other
 * relative names are taken relative to cwd. Trailing slashes go. */
static char *
expand_path(const char *v, const char *cwd, char **err_out)
{
  char *p;
  if (has_control_chars(v)) {
    *err_out = pc_strdup("control characters are not allowed in a path");
    return NULL;
  }
  if (v[0] == '~' && (v[1] == '/' || v[1] == '\0')) {
    const char *home = home_dir();
    if (!home) {
      *err_out = pc_asprintf("'%s': there is no home directory to expand "
                             "~ to", v);
      return NULL;
    }
    p = pc_asprintf("%s%s", home, v + 1);
  } else if (v[0] == '~') {
    *err_out = pc_asprintf("'%s': ~user paths are not supported", v);
    return NULL;
  } else if (v[0] == '/') {
    p = pc_strdup(v);
  } else {
    char *here = NULL;
    if (!cwd) {
      here = getcwd(NULL, 0);
      if (!here) {
        *err_out = pc_asprintf("'%s' is relative and the working "
                               "directory is unknown", v);
        return NULL;
      }
      cwd = here;
    }
    p = pc_asprintf("%s%s%s", cwd,
                    cwd[strlen(cwd) - 1] == '/' ? "" : "/", v);
    free(here);
  }
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/')
    p[--n] = '\0';
  return p;
}

static int
check_nickname(const char *v, char **err_out)
{
  size_t n = strlen(v);
  if (n < 1 || n > 19) {
    *err_out = pc_asprintf("'%s' is not a valid nickname: it must have "
                           "1 to 19 characters", v);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9'))) {
      *err_out = pc_asprintf("'%s' is not a valid nickname: only ASCII "
                             "letters and digits are allowed", v);
      return -1;
    }
  }
  return 0;
}

/* An IP literal (bracketed IPv6 too) or a DNS name (RFC 1123 labels). */
static int
check_host(const char *v, pc_addr_t *ip_out, char **err_out)
{
  char *e = NULL;
  pc_addr_t a;
  memset(ip_out, 0, sizeof(*ip_out));
  ip_out->family = AF_UNSPEC;
  if (conf_parse_addrport(v, CONF_PORT_OPTIONAL, &a, &e) == 0) {
    if (a.port != 0) {
      *err_out = pc_asprintf("'%s': give the address without a port", v);
      return -1;
    }
    *ip_out = a;
    return 0;
  }
  free(e);
  size_t n = strlen(v), label = 0;
  int all_numeric = 1;
  if (n == 0 || n > 253)
    goto bad;
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (c == '.') {
      if (label == 0 || v[i - 1] == '-')
        goto bad;
      label = 0;
      continue;
    }
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && !(c >= '0' && c <= '9') && c != '-')
      goto bad;
    if (c == '-' && label == 0)
      goto bad;
    if (alpha || c == '-')
      all_numeric = 0;
    if (++label > 63)
      goto bad;
  }
  if (label == 0 || v[n - 1] == '-' || all_numeric)
    goto bad;
  return 0;
bad:
  *err_out = pc_asprintf("'%s' is neither an IP address nor a host name",
                         v);
  return -1;
}

static int
check_user(const char *v, char **err_out)
{
  if (has_control_chars(v) || !*v) {
    *err_out = pc_asprintf("'%s' is not a user name", v);
    return -1;
  }
  errno = 0;
  struct passwd *pw = getpwnam(v);
  if (!pw) {
    *err_out = pc_asprintf("there is no user named '%s'", v);
    return -1;
  }
  return 0;
}

/* MyFamily: entries separated by commas and/or white space, each
 * normalised; entries already in l are skipped. */
static int
assign_family(options_strlist_t *l, const char *value, char **err_out)
{
  const char *p = value;
  while (*p) {
    size_t n = strcspn(p, ", \t");
    if (n > 0) {
      char *tok = pc_strndup(p, n);
      char *norm = routerdesc_family_normalize(tok, err_out);
      free(tok);
      if (!norm)
        return -1;
      int dup = 0;
      for (int i = 0; i < l->n; i++)
        if (!strcasecmp(l->v[i], norm))
          dup = 1;
      if (!dup)
        strlist_add(l, norm);
      free(norm);
    }
    p += n;
    p += strspn(p, ", \t");
  }
  return 0;
}

/* ExitPolicy: rules separated by commas, each "accept|reject PATTERN"
 * (spaces around the commas and between the words are tolerated). */
static int
assign_policy(options_strlist_t *l, const char *value, char **err_out)
{
  const char *p = value;
  int n_added = 0;
  while (*p) {
    p += strspn(p, " \t");
    size_t n = strcspn(p, ",");
    char *rule = pc_strndup(p, n);
    /* Trim, and make "accept   *:80" "accept *:80". */
    size_t len = strlen(rule);
    while (len > 0 && (rule[len - 1] == ' ' || rule[len - 1] == '\t'))
      rule[--len] = '\0';
    char *sp = strpbrk(rule, " \t");
    if (sp) {
      size_t gap = strspn(sp, " \t");
      *sp = ' ';
      memmove(sp + 1, sp + gap, strlen(sp + gap) + 1);
    }
    if (!*rule) {
      free(rule);
      *err_out = pc_strdup("empty exit policy rule");
      return -1;
    }
    const char *one[1] = {rule};
    char *perr = NULL;
    exit_policy_t *check = exit_policy_parse_plain(one, 1, &perr);
    if (!check) {
      free(rule);
      *err_out = perr ? perr : pc_strdup("bad exit policy rule");
      return -1;
    }
    exit_policy_free(check);
    strlist_add(l, rule);
    free(rule);
    n_added++;
    p += n;
    if (*p == ',')
      p++;
  }
  if (!n_added) {
    *err_out = pc_strdup("no exit policy rule");
    return -1;
  }
  return 0;
}

/* ---- assignment ---- */

typedef struct {
  const char *cwd;
  /* Where each option was last set, for messages. */
  const conf_line_t *where[N_OPTIONS];
  const conf_line_t *orport_line[2]; /* IPv4, IPv6 */
  const conf_line_t *orport_zero;
} parse_ctx_t;

/* Assign value (non-empty) to def. line is NULL for defaults. Returns 0
 * or -1 with *err_out set to the problem (without option name). */
static int
assign_value(options_t *o, const option_def_t *def, const char *value,
             parse_ctx_t *ctx, const conf_line_t *line, char **err_out)
{
  switch (def->type) {
  case OPT_TYPE_PATH: {
    char *p = expand_path(value, ctx->cwd, err_out);
    if (!p)
      return -1;
    field_clear(o, def);
    *FIELD(o, def, char *) = p;
    return 0;
  }
  case OPT_TYPE_STRING:
    if (has_control_chars(value)) {
      *err_out = pc_strdup("control characters are not allowed");
      return -1;
    }
    break;
  case OPT_TYPE_NICKNAME:
    if (check_nickname(value, err_out) < 0)
      return -1;
    break;
  case OPT_TYPE_HOST: {
    pc_addr_t ip;
    if (check_host(value, &ip, err_out) < 0)
      return -1;
    break;
  }
  case OPT_TYPE_USER:
    if (check_user(value, err_out) < 0)
      return -1;
    break;
  case OPT_TYPE_BOOL: {
    int b;
    if (conf_parse_bool(value, &b, err_out) < 0)
      return -1;
    *FIELD(o, def, int) = b;
    return 0;
  }
  case OPT_TYPE_INT: {
    int64_t v;
    if (conf_parse_int(value, def->min, def->max, &v, err_out) < 0)
      return -1;
    *FIELD(o, def, int) = (int)v;
    return 0;
  }
  case OPT_TYPE_ORPORT: {
    options_ports_t *ports = FIELD(o, def, options_ports_t);
    if (!line) { /* the default, "0" */
      memset(ports, 0, sizeof(*ports));
      return 0;
    }
    if (strpbrk(value, " \t")) {
      *err_out = pc_asprintf("'%s': only [ADDRESS:]PORT is supported "
                             "(no flags after the port)", value);
      return -1;
    }
    if (!strcmp(value, "0")) {
      if (ports->n > 0) {
        *err_out = pc_strdup("'ORPort 0' (no ORPort) cannot be combined "
                             "with other ORPort lines");
        return -1;
      }
      ctx->orport_zero = line;
      return 0;
    }
    if (ctx->orport_zero) {
      *err_out = pc_strdup("'ORPort 0' (no ORPort) cannot be combined "
                           "with other ORPort lines");
      return -1;
    }
    pc_addr_t a;
    if (conf_parse_addrport(value, CONF_ADDR_OPTIONAL, &a, err_out) < 0)
      return -1;
    if (a.family == AF_UNSPEC)
      a.family = AF_INET; /* 0.0.0.0:PORT */
    int fi = a.family == AF_INET6;
    if (ctx->orport_line[fi]) {
      char *w = conf_line_where(ctx->orport_line[fi]);
      *err_out = pc_asprintf("there is already an %s ORPort (on %s); at "
                             "most one IPv4 and one IPv6 ORPort are "
                             "allowed", fi ? "IPv6" : "IPv4", w);
      free(w);
      return -1;
    }
    ctx->orport_line[fi] = line;
    ports->addrs[ports->n++] = a;
    return 0;
  }
  case OPT_TYPE_LOG:
    if (log_check_destination(value, err_out) < 0)
      return -1;
    strlist_add(FIELD(o, def, options_strlist_t), value);
    return 0;
  case OPT_TYPE_DIRAUTH: {
    dir_authority_t da;
    if (dir_authority_parse(&da, value, err_out) < 0)
      return -1;
    strlist_add(FIELD(o, def, options_strlist_t), value);
    return 0;
  }
  case OPT_TYPE_FAMILY:
    return assign_family(FIELD(o, def, options_strlist_t), value, err_out);
  case OPT_TYPE_POLICY:
    return assign_policy(FIELD(o, def, options_strlist_t), value, err_out);
  }
  /* The string types. */
  field_clear(o, def);
  *FIELD(o, def, char *) = pc_strdup(value);
  return 0;
}

static int
assign_default(options_t *o, const option_def_t *def, parse_ctx_t *ctx)
{
  field_clear(o, def);
  SET_BIT_OFF(o, def_index(def));
  if (!def->default_str)
    return 0;
  char *err = NULL;
  if (assign_value(o, def, def->default_str, ctx, NULL, &err) < 0) {
    /* A bad default is a programming error; the unit tests catch it. */
    log_err("Bad default for %s: %s", def->name, err);
    free(err);
    return -1;
  }
  return 0;
}

static int
line_error(char **err_out, const option_def_t *def, const conf_line_t *l,
           const char *msg)
{
  char *w = conf_line_where(l);
  *err_out = pc_asprintf("Option '%s' on %s: %s. Failing.", def->name, w,
                         msg);
  free(w);
  return -1;
}

/* A "0|1|auto" option: 1 or 0, -1 for auto (also when unset). Returns -1
 * for any other value. */
static int
parse_auto_bool(const char *v, int *out)
{
  if (!v || !strcmp(v, "auto"))
    *out = -1;
  else if (!strcmp(v, "0") || !strcmp(v, "1"))
    *out = v[0] - '0';
  else
    return -1;
  return 0;
}

/* An error in the value of option def, found after parsing: names the line
 * that set it when there is one (a file or the command line), else the
 * option alone. Returns -1. */
static int
option_error(char **err_out, const option_def_t *def, const parse_ctx_t *ctx,
             const char *msg)
{
  const conf_line_t *l = ctx->where[def_index(def)];
  if (l)
    return line_error(err_out, def, l, msg);
  *err_out = pc_asprintf("Option '%s': %s. Failing.", def->name, msg);
  return -1;
}

static int
assign_line(options_t *o, const conf_line_t *l, parse_ctx_t *ctx,
            char **err_out)
{
  const option_def_t *def = options_find(l->key);
  if (!def) {
    char *w = conf_line_where(l);
    *err_out = pc_asprintf("Unknown option '%s' on %s. Failing.", l->key, w);
    free(w);
    return -1;
  }
  size_t idx = def_index(def);
  int multi = def->type == OPT_TYPE_LOG || def->type == OPT_TYPE_ORPORT ||
              def->type == OPT_TYPE_DIRAUTH ||
              def->type == OPT_TYPE_FAMILY || def->type == OPT_TYPE_POLICY;
  if (!*l->value) {
    if (def->type == OPT_TYPE_LOG) {
      char *w = conf_line_where(l);
      log_warn("Option '%s' on %s has no value; ignoring it.", def->name,
               w);
      free(w);
      return 0;
    }
    /* As in tor: an empty value resets the option to its default. */
    if (def->type == OPT_TYPE_ORPORT) {
      ctx->orport_line[0] = ctx->orport_line[1] = NULL;
      ctx->orport_zero = NULL;
    }
    ctx->where[idx] = NULL;
    return assign_default(o, def, ctx);
  }
  if (!multi && ctx->where[idx]) {
    char *w1 = conf_line_where(ctx->where[idx]);
    char *w2 = conf_line_where(l);
    log_warn("Option '%s' is set on %s and again on %s; using the last "
             "value.", def->name, w1, w2);
    free(w1);
    free(w2);
  }
  if (multi && !SET_BIT_TEST(o, idx))
    field_clear(o, def); /* the first line replaces the default */
  char *msg = NULL;
  if (assign_value(o, def, l->value, ctx, l, &msg) < 0) {
    line_error(err_out, def, l, msg);
    free(msg);
    return -1;
  }
  SET_BIT_ON(o, idx);
  ctx->where[idx] = l;
  return 0;
}

/* Remove from *list every line whose key is key. */
static void
remove_key(conf_line_t **list, const char *key)
{
  while (*list) {
    conf_line_t *l = *list;
    if (conf_key_eq(l->key, key)) {
      *list = l->next;
      l->next = NULL;
      conf_lines_free(l);
    } else {
      list = &l->next;
    }
  }
}

/* The torrc's lines with the command line applied (see options.h). */
static conf_line_t *
merge_lines(const conf_line_t *file, const conf_line_t *cmdline)
{
  conf_line_t *merged = conf_lines_dup(file);
  for (const conf_line_t *c = cmdline; c; c = c->next) {
    if (c->cmd == CONF_LINE_CLEAR) {
      remove_key(&merged, c->key);
      continue;
    }
    if (c->cmd == CONF_LINE_NORMAL) {
      /* The first plain command-line line for a key replaces the torrc's
       * lines; later ones for the same key add to it. */
      int first = 1;
      for (const conf_line_t *p = cmdline; p != c; p = p->next)
        if (p->cmd == CONF_LINE_NORMAL && conf_key_eq(p->key, c->key))
          first = 0;
      if (first)
        remove_key(&merged, c->key);
    }
    conf_line_t **tail = &merged;
    while (*tail)
      tail = &(*tail)->next;
    *tail = conf_line_new(c->key, c->value, c->source, c->lineno);
    (*tail)->from_cmdline = c->from_cmdline;
  }
  return merged;
}

/* Rules between options, and derived values. */
static int
validate(options_t *o, parse_ctx_t *ctx, char **err_out)
{
  const option_def_t *def;

  if (!o->data_directory) {
    o->data_directory = options_default_data_directory(geteuid() == 0,
                                                       getenv("HOME"));
    if (!o->data_directory) {
      *err_out = pc_strdup("There is no home directory for the default "
                           "DataDirectory; set DataDirectory. Failing.");
      return -1;
    }
  }

  def = def_by_offset(OFF(extend_allow_private_addresses));
  if (!SET_BIT_TEST(o, def_index(def)))
    o->extend_allow_private_addresses = o->testing_tor_network;

  if (o->onion_key_grace_period_days > o->onion_key_rotation_days) {
    /* Blame the grace period if it was set, else the rotation. */
    def = def_by_offset(OFF(onion_key_grace_period_days));
    const conf_line_t *l = ctx->where[def_index(def)];
    if (!l) {
      def = def_by_offset(OFF(onion_key_rotation_days));
      l = ctx->where[def_index(def)];
    }
    char *msg = pc_asprintf("OnionKeyGracePeriodDays (%d) must not be "
                            "larger than OnionKeyRotationDays (%d)",
                            o->onion_key_grace_period_days,
                            o->onion_key_rotation_days);
    if (l) {
      line_error(err_out, def, l, msg);
    } else {
      *err_out = pc_asprintf("%s. Failing.", msg);
    }
    free(msg);
    return -1;
  }

  /* Bandwidth buckets (tor's defaults: 1 GByte rate and burst). */
  struct {
    char *str;
    uint64_t *out;
    uint64_t dflt;
    size_t off;
  } bws[] = {
      {o->bandwidth_rate_str, &o->bandwidth_rate, 1ULL << 30,
       OFF(bandwidth_rate_str)},
      {o->bandwidth_burst_str, &o->bandwidth_burst, 1ULL << 30,
       OFF(bandwidth_burst_str)},
      {o->relay_bandwidth_rate_str, &o->relay_bandwidth_rate, 0,
       OFF(relay_bandwidth_rate_str)},
      {o->relay_bandwidth_burst_str, &o->relay_bandwidth_burst, 0,
       OFF(relay_bandwidth_burst_str)},
  };
  for (size_t i = 0; i < sizeof(bws) / sizeof(bws[0]); i++) {
    *bws[i].out = bws[i].dflt;
    if (!bws[i].str)
      continue;
    def = def_by_offset(bws[i].off);
    char *perr = NULL;
    if (conf_parse_memunit(bws[i].str, 0, bws[i].out, &perr) < 0) {
      char *msg = perr ? perr : pc_strdup("bad amount");
      option_error(err_out, def, ctx, msg);
      free(msg);
      return -1;
    }
  }
  if (!o->relay_bandwidth_burst_str)
    o->relay_bandwidth_burst = o->relay_bandwidth_rate;
  if (o->bandwidth_rate < 75 * 1024 ||
      o->bandwidth_burst < o->bandwidth_rate ||
      (o->relay_bandwidth_rate &&
       o->relay_bandwidth_burst < o->relay_bandwidth_rate)) {
    *err_out = pc_strdup("BandwidthRate must be at least 75 KBytes and each "
                         "burst at least its rate. Failing.");
    return -1;
  }

  o->max_mem_in_queues = 0;
  if (o->max_mem_in_queues_str) {
    def = def_by_offset(OFF(max_mem_in_queues_str));
    char *perr = NULL;
    uint64_t v = 0;
    if (conf_parse_memunit(o->max_mem_in_queues_str, 0, &v, &perr) < 0 ||
        v < 64ULL * 1024 * 1024) {
      char *msg = perr ? perr : pc_strdup("must be at least 64 MB");
      option_error(err_out, def, ctx, msg);
      free(msg);
      return -1;
    }
    o->max_mem_in_queues = v;
  }

  {
    ipsec_mode_t m = IPSEC_MODE_OFF;
    def = def_by_offset(OFF(ipsec_str));
    const char *msg = NULL;
    if (o->ipsec_str && ipsec_mode_parse(o->ipsec_str, &m) < 0)
      msg = "must be 0, 1 or auto";
    else if (m != IPSEC_MODE_OFF && o->or_ports.n == 0)
      msg = "needs an ORPort";
    if (msg) {
      option_error(err_out, def, ctx, msg);
      return -1;
    }
    o->ipsec_mode = (int)m;
  }
  /* ---- IPsec broker trust (issue 14) ---- */
  o->ipsec_charon_uid = -1;
  if (o->ipsec_charon_user) {
    struct passwd *pw = getpwnam(o->ipsec_charon_user);
    if (!pw) {
      def = def_by_offset(OFF(ipsec_charon_user));
      option_error(err_out, def, ctx, "no such user");
      return -1;
    }
    o->ipsec_charon_uid = (long)pw->pw_uid;
  }
  /* ---- end of IPsec broker trust ---- */
  /* ---- MeasureMe limits (issue 14) ---- */
  o->measureme_log_max_size = 0;
  if (o->measureme_log_max_size_str) {
    def = def_by_offset(OFF(measureme_log_max_size_str));
    char *perr = NULL;
    uint64_t v = 0;
    if (conf_parse_memunit(o->measureme_log_max_size_str, 0, &v, &perr) < 0 ||
        v < 64 * 1024) {
      char *msg = perr ? perr : pc_strdup("must be at least 64 KB");
      option_error(err_out, def, ctx, msg);
      free(msg);
      return -1;
    }
    o->measureme_log_max_size = v;
  }
  /* ---- end of MeasureMe limits ---- */
  if (o->per_circuit_tcp_require_ipsec && o->ipsec_mode == IPSEC_MODE_OFF) {
    def = def_by_offset(OFF(per_circuit_tcp_require_ipsec));
    const char *msg = "needs IPsec auto or 1";
    option_error(err_out, def, ctx, msg);
    return -1;
  }

  o->measureme_hops = 0;
  if (o->measureme_hops_str) {
    def = def_by_offset(OFF(measureme_hops_str));
    char *copy = pc_strdup(o->measureme_hops_str);
    int bad = 0;
    for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t;
         t = strtok_r(NULL, ", \t", &save)) {
      if (!strcmp(t, "1") || !strcmp(t, "2") || !strcmp(t, "3"))
        o->measureme_hops |= 1u << (t[0] - '1');
      else
        bad = 1;
    }
    free(copy);
    if (bad || !o->measureme_hops) {
      const char *msg = "must list hops 1, 2 and/or 3";
      option_error(err_out, def, ctx, msg);
      return -1;
    }
  }

  /* Conflux. */
  {
    const char *msg = NULL;
    const char *v;
    def = def_by_offset(OFF(conflux_enabled_str));
    if (parse_auto_bool(o->conflux_enabled_str, &o->conflux_enabled) < 0)
      msg = "must be 0, 1 or auto";
    if (!msg) {
      def = def_by_offset(OFF(refuse_unknown_exits_str));
      if (parse_auto_bool(o->refuse_unknown_exits_str,
                          &o->refuse_unknown_exits) < 0)
        msg = "must be 0, 1 or auto";
    }
    if (!msg) {
      v = o->conflux_client_ux_str;
      def = def_by_offset(OFF(conflux_client_ux_str));
      o->conflux_client_ux = cfx_ux_from_name(v ? v : "throughput");
      if (o->conflux_client_ux < 0)
        msg = "must be throughput, latency, throughput_lowmem or "
              "latency_lowmem";
    }
    if (!msg) {
      v = o->conflux_scheduler_str;
      def = def_by_offset(OFF(conflux_scheduler_str));
      o->conflux_scheduler =
          !v || !strcmp(v, "auto") ? 0 : cfx_alg_from_name(v);
      if (o->conflux_scheduler < 0)
        msg = "must be auto, minrtt, lowrtt or proportional";
    }
    if (!msg && o->conflux_legs == 1) {
      def = def_by_offset(OFF(conflux_legs));
      msg = "must be 0 or 2 to 8 (use ConfluxEnabled 0 for none)";
    }
    if (msg) {
      option_error(err_out, def, ctx, msg);
      return -1;
    }
  }

  /* The circuit scheduler. */
  o->circuit_priority_halflife = -1;
  if (o->circuit_priority_halflife_str) {
    def = def_by_offset(OFF(circuit_priority_halflife_str));
    char *end = NULL;
    double v = strtod(o->circuit_priority_halflife_str, &end);
    if (end == o->circuit_priority_halflife_str || *end || !isfinite(v) ||
        v > 2147483.0) {
      const char *msg = "must be a number of seconds (at most 2147483)";
      option_error(err_out, def, ctx, msg);
      return -1;
    }
    o->circuit_priority_halflife = v > 0 ? v : 0;
  }
  {
    def = def_by_offset(OFF(kist_sock_buf_size_factor_str));
    char *end = NULL;
    const char *fs = o->kist_sock_buf_size_factor_str
                         ? o->kist_sock_buf_size_factor_str : "1.0";
    double v = strtod(fs, &end);
    if (end == fs || *end || !isfinite(v) || v < 0 || v > 100) {
      const char *msg = "must be a number from 0 to 100";
      option_error(err_out, def, ctx, msg);
      return -1;
    }
    o->kist_sock_buf_size_factor = v;
  }
  {
    def = def_by_offset(OFF(schedulers));
    const char *sv = o->schedulers ? o->schedulers : "KIST,KISTLite";
    char *copy = pc_strdup(sv);
    int chosen = -1, bad = 0;
    for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t;
         t = strtok_r(NULL, ", \t", &save)) {
      int kind;
      if (!strcasecmp(t, "KIST"))
        kind = 1;
      else if (!strcasecmp(t, "KISTLite"))
        kind = 0;
      else if (!strcasecmp(t, "Vanilla"))
        kind = -2;
      else {
        bad = 1;
        break;
      }
      if (kind == 1 && !sockstat_tcp_available())
        continue;
      if (kind >= 0 && chosen < 0)
        chosen = kind;
    }
    free(copy);
    if (bad || chosen < 0) {
      const char *msg =
          bad ? "must list KIST and/or KISTLite"
              : "names no usable scheduler (Vanilla is not supported yet; "
                "use KISTLite)";
      option_error(err_out, def, ctx, msg);
      return -1;
    }
    o->scheduler_socket_aware = chosen;
  }

  /* SocksPort: "PORT" binds 127.0.0.1, "ADDR:PORT" that address. */
  memset(&o->socks_addr, 0, sizeof(o->socks_addr));
  o->socks_addr.family = AF_UNSPEC;
  if (o->socks_port && strcmp(o->socks_port, "0")) {
    def = def_by_offset(OFF(socks_port));
    pc_addr_t a;
    char *end = NULL;
    long port = strtol(o->socks_port, &end, 10);
    int ok;
    if (*o->socks_port && !*end)
      ok = port > 0 && port < 65536 &&
           pc_addr_parse_ip(&a, "127.0.0.1", (uint16_t)port) == 0;
    else
      ok = pc_addr_parse(&a, o->socks_port) == 0 && a.port != 0;
    if (!ok) {
      const char *msg = "SocksPort must be 0, PORT or ADDRESS:PORT";
      option_error(err_out, def, ctx, msg);
      return -1;
    }
    o->socks_addr = a;
  }
  const size_t node_opts[] = {OFF(entry_nodes), OFF(middle_nodes),
                              OFF(exit_nodes), OFF(exclude_nodes)};
  for (size_t i = 0; i < 4; i++) {
    def = def_by_offset(node_opts[i]);
    const char *v = *(char *const *)((const char *)o + node_opts[i]);
    routerset_t *rs = NULL;
    char *perr = NULL;
    if (v && routerset_parse(&rs, v, &perr) < 0) {
      option_error(err_out, def, ctx, perr ? perr : "bad relay list");
      free(perr);
      routerset_free(rs);
      return -1;
    }
    routerset_free(rs);
  }

  if (o->testing_tor_network && o->dir_authorities.n == 0) {
    *err_out = pc_strdup("TestingTorNetwork requires DirAuthority lines "
                         "naming the test network's authorities (pctor "
                         "never publishes to the public Tor network's "
                         "authorities in a test). Failing.");
    return -1;
  }

  memset(&o->address_ip, 0, sizeof(o->address_ip));
  o->address_ip.family = AF_UNSPEC;
  if (o->address) {
    char *e = NULL;
    if (check_host(o->address, &o->address_ip, &e) < 0)
      free(e); /* cannot happen: checked when assigned */
  }

  /* ---- ControlPort and MetricsPort (feature/control): one block ---- */
  {
    control_listen_t cl;
    char *perr = NULL;
    const char *msg = NULL;
    def = def_by_offset(OFF(control_port));
    if (o->control_port &&
        control_parse_listen(o->control_port, 0, &cl, &perr) < 0)
      goto control_bad;
    def = def_by_offset(OFF(control_socket));
    if (o->control_socket &&
        control_parse_listen(o->control_socket, 1, &cl, &perr) < 0)
      goto control_bad;
    def = def_by_offset(OFF(hashed_control_password));
    if (o->hashed_control_password &&
        !control_auth_hash_is_valid(o->hashed_control_password)) {
      msg = "must be a hash from 'tor --hash-password' (16: and 58 hex "
            "digits)";
      goto control_bad;
    }
    def = def_by_offset(OFF(owning_controller_process));
    if (o->owning_controller_process) {
      char *end = NULL;
      long pid = strtol(o->owning_controller_process, &end, 10);
      if (pid <= 0 || *end) {
        msg = "must be a process ID";
        goto control_bad;
      }
    }
    def = def_by_offset(OFF(metrics_port));
    if (o->metrics_port &&
        metrics_parse_port(o->metrics_port, &cl, &perr) < 0)
      goto control_bad;
    def = def_by_offset(OFF(metrics_port_policy));
    if (o->metrics_port_policy &&
        metrics_policy_check(o->metrics_port_policy, &perr) < 0)
      goto control_bad;
    goto control_ok;
  control_bad:
    option_error(err_out, def, ctx, perr ? perr : msg);
    free(perr);
    return -1;
  control_ok:;
  }
  /* ---- end of ControlPort and MetricsPort ---- */
  return 0;
}

int
options_from_lines(const conf_line_t *file_lines,
                   const conf_line_t *cmdline_lines, const char *cwd,
                   options_t **out, char **err_out)
{
  *out = NULL;
  *err_out = NULL;
  options_t *o = pc_zalloc(sizeof(*o));
  parse_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.cwd = cwd;
  for (size_t i = 0; i < N_OPTIONS; i++)
    if (assign_default(o, &option_table[i], &ctx) < 0) {
      *err_out = pc_asprintf("Internal error: bad default for %s",
                             option_table[i].name);
      options_free(o);
      return -1;
    }
  conf_line_t *lines = merge_lines(file_lines, cmdline_lines);
  for (const conf_line_t *l = lines; l; l = l->next)
    if (assign_line(o, l, &ctx, err_out) < 0)
      goto err;
  if (validate(o, &ctx, err_out) < 0)
    goto err;
  conf_lines_free(lines);
  *out = o;
  return 0;
err:
  conf_lines_free(lines);
  options_free(o);
  return -1;
}

/* The defaults file's lines without those for keys the torrc sets, then
 * the torrc's lines (tor: the torrc overrides its defaults file). */
static conf_line_t *
merge_defaults(const conf_line_t *defaults, const conf_line_t *file)
{
  conf_line_t *merged = conf_lines_dup(defaults);
  for (const conf_line_t *f = file; f; f = f->next)
    remove_key(&merged, f->key);
  conf_line_t **tail = &merged;
  while (*tail)
    tail = &(*tail)->next;
  *tail = conf_lines_dup(file);
  return merged;
}

int
options_from_sources(const conf_line_t *defaults_lines,
                     const conf_line_t *file_lines,
                     const conf_line_t *cmdline_lines, const char *cwd,
                     options_t **out, char **err_out)
{
  conf_line_t *merged = merge_defaults(defaults_lines, file_lines);
  int r = options_from_lines(merged, cmdline_lines, cwd, out, err_out);
  conf_lines_free(merged);
  return r;
}

int
options_load(const options_cmdline_t *cl, options_t **out, char **err_out)
{
  conf_line_t *file_lines = NULL, *defaults_lines = NULL;
  char *err = NULL;
  int have_defaults = 0;
  *out = NULL;
  *err_out = NULL;
  if (cl->defaults_torrc) {
    int r = conf_read_file(cl->defaults_torrc, cl->cwd, &defaults_lines,
                           &err);
    if (r == CONF_ERR_NOENT) {
      free(err); /* as tor: a missing defaults torrc is no error */
    } else if (r < 0) {
      *err_out = pc_asprintf("%s. Failing.", err);
      free(err);
      return -1;
    } else {
      have_defaults = 1;
    }
  }
  int r = conf_read_file(cl->torrc, cl->cwd, &file_lines, &err);
  if (r == CONF_ERR_NOENT &&
      (cl->torrc_is_default || cl->ignore_missing_torrc ||
       (cl->allow_missing_torrc && have_defaults))) {
    log_notice("Configuration file \"%s\" not present, using reasonable "
               "defaults.", cl->torrc);
    free(err);
  } else if (r < 0) {
    *err_out = pc_asprintf("%s. Failing.", err);
    free(err);
    conf_lines_free(defaults_lines);
    return -1;
  }
  r = options_from_sources(defaults_lines, file_lines, cl->options, cl->cwd,
                           out, err_out);
  conf_lines_free(file_lines);
  conf_lines_free(defaults_lines);
  return r;
}

void
options_free_(options_t *o)
{
  if (!o)
    return;
  for (size_t i = 0; i < N_OPTIONS; i++)
    field_clear(o, &option_table[i]);
  free(o);
}

int
options_keep_non_reloadable(const options_t *old, options_t *new_opts)
{
  int kept = 0;
  for (size_t i = 0; i < N_OPTIONS; i++) {
    const option_def_t *def = &option_table[i];
    if (def->reloadable || options_equal(old, new_opts, def))
      continue;
    log_warn("Option '%s' cannot be changed while pctor is running; "
             "keeping the old value until pctor is restarted.", def->name);
    field_copy(new_opts, old, def);
    kept++;
  }
  /* A kept TestingTorNetwork 1 keeps its own authorities: a test network
   * must never fall back to the public ones. */
  if (new_opts->testing_tor_network && new_opts->dir_authorities.n == 0) {
    log_warn("TestingTorNetwork is still 1, so the DirAuthority lines are "
             "kept until pctor is restarted.");
    field_copy(new_opts, old, def_by_offset(OFF(dir_authorities)));
  }
  /* A default that depends on a kept option follows the kept value. */
  const option_def_t *eapa = def_by_offset(OFF(extend_allow_private_addresses));
  if (!SET_BIT_TEST(new_opts, def_index(eapa)))
    new_opts->extend_allow_private_addresses = new_opts->testing_tor_network;
  return kept;
}

/* ---- the command line ---- */

/* Every flag tor 0.4.9 takes on its command line. A flag that pctor does
 * not implement has a message saying so, so that it is refused clearly
 * instead of being read as an option that lacks its value. */
typedef struct {
  conf_flag_t flag;
  options_command_t command; /* OPTIONS_CMD_RUN: not an action */
  const char *unsupported;   /* non-NULL: refused with this reason */
} cmdline_flag_t;

static const cmdline_flag_t cmdline_table[] = {
  {{"-f", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--torrc-file", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--defaults-torrc", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--ignore-missing-torrc", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--allow-missing-torrc", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--quiet", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--hush", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--verify-config", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_VERIFY_CONFIG, NULL},
  {{"--version", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_VERSION, NULL},
  {{"--help", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_HELP, NULL},
  {{"-h", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_HELP, NULL},
  {{"--list-options", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIST_OPTIONS, NULL},
  {{"--list-torrc-options", CONF_FLAG_NO_VALUE},
   OPTIONS_CMD_LIST_TORRC_OPTIONS, NULL},
  {{"--list-fingerprint", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_LIST_FINGERPRINT,
   NULL},
  {{"--dump-config", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_DUMP_CONFIG, NULL},
  {{"--list-modules", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIST_MODULES, NULL},
  {{"--library-versions", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIBRARY_VERSIONS,
   NULL},
  {{"--hash-password", CONF_FLAG_VALUE}, OPTIONS_CMD_HASH_PASSWORD, NULL},
  {{"--list-deprecated-options", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "pctor has no deprecated options"},
  {{"--keygen", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "pctor cannot make keys from an offline master key yet; pctor makes "
   "its keys itself when it first starts"},
  {{"--newpass", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "--newpass goes with --keygen, which pctor does not support yet"},
  {{"--no-passphrase", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "--no-passphrase goes with --keygen, which pctor does not support yet"},
  {{"--passphrase-fd", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN,
   "--passphrase-fd goes with --keygen, which pctor does not support yet"},
  {{"--key-expiration", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_RUN,
   "pctor cannot print key expiration times yet; its signing key "
   "certificate is renewed automatically"},
  {{"--format", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN,
   "--format goes with --key-expiration, which pctor does not support yet"},
  {{"--keygen-family", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN,
   "pctor does not support family keys (FamilyId) yet; use MyFamily"},
  {{"--nt-service", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "Windows services are not supported"},
  {{"--service", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN,
   "Windows services are not supported"},
  {{NULL, 0}, OPTIONS_CMD_RUN, NULL},
};

#define N_CMDLINE_FLAGS (sizeof(cmdline_table) / sizeof(cmdline_table[0]))

static const cmdline_flag_t *
cmdline_flag_find(const char *name)
{
  for (size_t i = 0; cmdline_table[i].flag.name; i++)
    if (!strcmp(cmdline_table[i].flag.name, name))
      return &cmdline_table[i];
  return NULL;
}

int
options_cmdline_parse(int argc, char *const *argv, const char *default_torrc,
                      options_cmdline_t **out, char **err_out)
{
  conf_line_t *flags = NULL, *opts = NULL;
  conf_flag_t lex_flags[N_CMDLINE_FLAGS];
  for (size_t i = 0; i < N_CMDLINE_FLAGS; i++)
    lex_flags[i] = cmdline_table[i].flag;
  *out = NULL;
  if (conf_lex_cmdline(argc, argv, lex_flags, &flags, &opts, err_out) < 0)
    return -1;
  options_cmdline_t *cl = pc_zalloc(sizeof(*cl));
  cl->options = opts;
  cl->cwd = getcwd(NULL, 0);
  cl->command_arg = pc_strdup("");
  const char *torrc = NULL, *defaults = NULL;
  for (const conf_line_t *f = flags; f; f = f->next) {
    const cmdline_flag_t *cf = cmdline_flag_find(f->key);
    if (cf->unsupported) {
      *err_out = pc_asprintf("%s: %s", f->key, cf->unsupported);
      goto err;
    }
    if (cf->command != OPTIONS_CMD_RUN) {
      cl->command = cf->command;
      cl->verify_config |= cf->command == OPTIONS_CMD_VERIFY_CONFIG;
      cl->show_version |= cf->command == OPTIONS_CMD_VERSION;
      cl->show_help |= cf->command == OPTIONS_CMD_HELP;
      cl->list_options |= cf->command == OPTIONS_CMD_LIST_OPTIONS;
      free(cl->command_arg);
      cl->command_arg = pc_strdup(f->value);
      continue;
    }
    if (!strcmp(f->key, "-f") || !strcmp(f->key, "--torrc-file")) {
      if (torrc) {
        *err_out = pc_strdup("-f may be given only once");
        goto err;
      }
      if (!*f->value) {
        *err_out = pc_strdup("-f needs a file name");
        goto err;
      }
      torrc = f->value;
    } else if (!strcmp(f->key, "--defaults-torrc")) {
      if (defaults) {
        *err_out = pc_strdup("--defaults-torrc may be given only once");
        goto err;
      }
      if (!*f->value) {
        *err_out = pc_strdup("--defaults-torrc needs a file name");
        goto err;
      }
      defaults = f->value;
    } else if (!strcmp(f->key, "--ignore-missing-torrc")) {
      cl->ignore_missing_torrc = 1;
    } else if (!strcmp(f->key, "--allow-missing-torrc")) {
      cl->allow_missing_torrc = 1;
    } else if (!strcmp(f->key, "--hush")) {
      cl->quiet = cl->quiet > 1 ? cl->quiet : 1;
    } else if (!strcmp(f->key, "--quiet")) {
      cl->quiet = 2;
    }
  }
  /* As before actions were one field: help, then version win. */
  if (cl->show_help)
    cl->command = OPTIONS_CMD_HELP;
  else if (cl->show_version)
    cl->command = OPTIONS_CMD_VERSION;
  if (!torrc) {
    torrc = default_torrc;
    cl->torrc_is_default = 1;
  }
  if (torrc[0] == '/' || !cl->cwd)
    cl->torrc = pc_strdup(torrc);
  else
    cl->torrc = pc_asprintf("%s/%s", cl->cwd, torrc);
  if (!defaults)
    cl->defaults_torrc = pc_asprintf("%s-defaults", default_torrc);
  else if (defaults[0] == '/' || !cl->cwd)
    cl->defaults_torrc = pc_strdup(defaults);
  else
    cl->defaults_torrc = pc_asprintf("%s/%s", cl->cwd, defaults);
  conf_lines_free(flags);
  *out = cl;
  return 0;
err:
  conf_lines_free(flags);
  options_cmdline_free(cl);
  return -1;
}

void
options_cmdline_free_(options_cmdline_t *cl)
{
  if (!cl)
    return;
  free(cl->torrc);
  free(cl->defaults_torrc);
  free(cl->command_arg);
  free(cl->cwd);
  conf_lines_free(cl->options);
  free(cl);
}

/* ---- --list-options and --help ---- */

/* Print text wrapped at width columns, each line indented by indent. */
static void
print_wrapped(FILE *out, const char *text, int indent, int width)
{
  const char *p = text;
  while (*p) {
    while (*p == ' ')
      p++;
    int col = indent;
    const char *line = p, *brk = NULL;
    while (*p && (col < width || !brk)) {
      if (*p == ' ')
        brk = p;
      p++;
      col++;
    }
    if (!*p)
      brk = p;
    fprintf(out, "%*s%.*s\n", indent, "", (int)(brk - line), line);
    p = brk;
  }
}

void
options_list(FILE *out)
{
  for (size_t i = 0; i < N_OPTIONS; i++) {
    const option_def_t *d = &option_table[i];
    fprintf(out, "%s %s\n", d->name, d->syntax);
    char *meta = pc_asprintf("Default: %s. Changes on SIGHUP: %s.",
                             d->default_doc,
                             d->reloadable ? "yes" : "no (restart pctor)");
    print_wrapped(out, meta, 4, 76);
    free(meta);
    print_wrapped(out, d->help, 4, 76);
  }
}

void
options_usage(FILE *out, const char *progname, const char *torrc)
{
  fprintf(out,
          "Usage: %s [-f FILE] [--defaults-torrc FILE] [--verify-config] "
          "[--OPTION VALUE]...\n"
          "A Tor relay.\n\n"
          "  -f, --torrc-file FILE  read the configuration from FILE\n"
          "                     (default: %s)\n"
          "  --defaults-torrc FILE  read default option values from FILE\n"
          "                     (default: %s-defaults; may be missing)\n"
          "  --ignore-missing-torrc  read a missing torrc as empty\n"
          "  --allow-missing-torrc  the same, if the defaults torrc "
          "exists\n"
          "  --verify-config    check the configuration, print "
          "\"Configuration was valid\"\n"
          "                     and exit (status 1 if it is not valid)\n"
          "  --list-options     list every torrc option with its syntax "
          "and default\n"
          "  --hush             log only warnings and errors to the "
          "console\n"
          "  --quiet            log nothing to the console\n"
          "  --version          print the version and exit\n"
          "  -h, --help         print this help and exit\n"
          "  --OPTION VALUE     set a torrc option, replacing the file's "
          "lines for it\n"
          "                     (for example --ORPort 9001)\n"
          "  --+OPTION VALUE    add a line to a repeatable option such as "
          "Log\n"
          "  --/OPTION          remove the file's lines for OPTION\n\n"
          "See pctor(1) for the options and signals.\n",
          progname, torrc, torrc);
}

/* ---- ControlPort GETCONF (feature/control): one block ---- */
int
options_get_values(const options_t *o, const char *name, char **canonical,
                   char ***values, int *n)
{
  const option_def_t *def = options_find(name);
  *values = NULL;
  *n = 0;
  if (!def)
    return -1;
  *canonical = pc_strdup(def->name);
  options_strlist_t l = {0, NULL};
  switch (def->type) {
  case OPT_TYPE_BOOL:
  case OPT_TYPE_INT: {
    char v[24];
    snprintf(v, sizeof(v), "%d", *CFIELD(o, def, int));
    strlist_add(&l, v);
    break;
  }
  case OPT_TYPE_ORPORT: {
    const options_ports_t *p = CFIELD(o, def, options_ports_t);
    for (int i = 0; i < p->n; i++) {
      char a[PC_ADDR_STR_LEN];
      strlist_add(&l, pc_addr_fmt(&p->addrs[i], a, sizeof(a), 1));
    }
    if (p->n == 0)
      strlist_add(&l, "0");
    break;
  }
  case OPT_TYPE_LOG:
  case OPT_TYPE_DIRAUTH:
  case OPT_TYPE_FAMILY:
  case OPT_TYPE_POLICY: {
    const options_strlist_t *src = CFIELD(o, def, options_strlist_t);
    for (int i = 0; i < src->n; i++)
      strlist_add(&l, src->v[i]);
    break;
  }
  default: {
    const char *v = *CFIELD(o, def, char *);
    if (v)
      strlist_add(&l, v);
    break;
  }
  }
  *values = l.v;
  *n = l.n;
  return 0;
}
/* ---- end of ControlPort GETCONF ---- */
