/* SPDX-License-Identifier: BSD-3-Clause */
/* client.h -- pctor as a Tor client: a SOCKS port whose streams travel
 * over circuits chosen from the consensus.
 *
 * SOCKS4a/5 CONNECT requests become RELAY_BEGIN streams on three-hop
 * circuits. Circuits are shared by streams that their SocksPort lines'
 * isolation flags let share one (client_port.h: by default the same SOCKS
 * client address, credentials and SocksPort line) whose destination port
 * the exit accepts, until they are MaxCircuitDirtiness old; a stream whose circuit
 * fails before CONNECTED is retried once on a new circuit; idle circuits
 * are closed. Flow control at the client edge: circuit windows (1000/100,
 * authenticated v1 SENDMEs both ways) and stream windows (500/50), or
 * congestion control with XON/XOFF where the exit supports it (proposal
 * 324). With conflux (proposal 329) a circuit is a set of legs to one exit
 * through different guards and middles (client.c explains). A few clean
 * circuits are kept built ahead of need for the ports asked for recently
 * (port 80 from the start), as tor's predicted-port circuits.
 */
#ifndef PCTOR_FEATURE_CLIENT_CLIENT_H
#define PCTOR_FEATURE_CLIENT_CLIENT_H
#include <stdint.h>
#include "feature/dir/dir_client.h"
#include "feature/client/cbt.h"
#include "feature/client/client_port.h"
#include "feature/client/guards.h"
#include "feature/dir/path.h"
#include "lib/fs/statefile.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

/* The subprotocols pctor's client speaks (tor's names and versions):
 * compared with the consensus' required- and recommended-client-
 * protocols. No onion services (HSDir, HSIntro, HSRend), no padding. */
#define CLIENT_PROTOCOLS                                                      \
  "Conflux=1 Cons=2 Desc=2 FlowCtrl=1-2 Link=4-5 Microdesc=2 Relay=2-4"

typedef struct client_config_t {
  client_ports_t socks_ports;    /* SocksPort lines (client_port.h) */
  const dir_client_t *dir;       /* the consensus and descriptors */
  /* Path restrictions (owned by the caller, must outlive the client). */
  const path_config_t *path;
  /* The state file the guards are kept in (guards.h), or NULL. */
  statefile_t *state;
  unsigned max_circuit_dirtiness; /* seconds (MaxCircuitDirtiness) */
  /* SocksTimeout: how long a stream waits for a usable circuit (no path
   * yet) or for its controller; 0 means tor's default, 120 s. */
  unsigned socks_timeout;
  /* CircuitStreamTimeout: seconds a stream waits for CONNECTED (or
   * RESOLVED) before it is retried on another circuit; 0 means tor's
   * schedule (CLIENT_STREAM_TIMEOUT_*). */
  unsigned circuit_stream_timeout;
  /* With ExitNodes pinned and no exit whose policy summary accepts the
   * port (as in private networks whose exits only accept 127.0.0.0/8),
   * use the pinned exits anyway and let them decide. */
  int exit_nodes_pinned;
  /* PathsNeededToBuildCircuits (path_min_fraction); <= 0: the consensus'. */
  double paths_needed;
  /* MeasureMe: ask these hops (bit h-1 for hop h) of every new circuit to
   * record its statistics every measureme_interval_ms (MeasureMeHops,
   * MeasureMeInterval); 0: none. */
  unsigned measureme_hops;
  uint16_t measureme_interval_ms;
  /* Conflux (proposal 329): ConfluxEnabled (1 on, 0 off, -1 auto: the
   * consensus' cfx_enabled decides, on by default), ConfluxClientUX (the
   * CFX_UX_* code we ask the exit for; tor's default "throughput"),
   * ConfluxLegs (legs per set; 0: the consensus' cfx_num_legs_set, 2),
   * ConfluxScheduler for what we send (0: follow the exit's wish, as tor
   * does; else a cfx_alg_t), and the out-of-order queue bound per set
   * (0: the default). */
  /* __LeaveStreamsUnattached: SOCKS streams wait for a controller's
   * ATTACHSTREAM instead of taking a circuit (client_ctl_*). */
  int leave_streams_unattached;
  /* NumEntryGuards, NumPrimaryGuards, GuardLifetime, UseEntryGuards. */
  guards_options_t guards;
  int conflux_enabled;
  uint8_t conflux_ux;
  int conflux_legs;
  int conflux_alg;
  uint32_t conflux_max_ooo;
} client_config_t;

/* Open the SocksPort listeners. Returns 0, or -1 with *err (static) and
 * *failed_port the index of the line that failed. */
int client_init(evloop_t *loop, const client_config_t *cfg, const char **err,
                int *failed_port);
/* The addresses the SocksPort listeners are bound to (auto ones with the
 * port the kernel chose), in the order of the lines; returns how many
 * (at most max). */
int client_socks_listeners(pc_addr_t *out, int max);
void client_reconfigure(const client_config_t *cfg);
void client_shutdown(void);

typedef struct client_stats_t {
  uint64_t n_socks_conns, n_streams_connected, n_streams_failed;
  uint64_t n_circuits_built, n_circuits_failed, n_retries;
  uint64_t n_streams_waited_path; /* found no circuit at first, waited */
  /* conflux sets linked, torn down by a closing leg, closed because the
   * out-of-order queue was full; circuits that stayed plain because no
   * distinct guard and middle were left */
  uint64_t n_conflux_sets, n_conflux_teardowns, n_conflux_ooo_full;
  uint64_t n_conflux_fallbacks;
  /* legs relaunched after failing before they linked; legs launched to
   * replace a linked leg that died while its set went on */
  uint64_t n_conflux_relaunches, n_conflux_replacements;
  /* sets that went ready before every leg linked (streams waited; the
   * others joined later), and legs closed for no LINKED in time */
  uint64_t n_conflux_early_ready, n_conflux_link_timeouts;
  /* streams retried on another circuit for no answer to their BEGIN in
   * time */
  uint64_t n_stream_timeouts;
  /* preemptive (clean) circuits that finished building, and that a
   * stream then took */
  uint64_t n_preemptive_built, n_preemptive_used;
  /* DATA cells for streams we no longer have (ended by us while the exit
   * was still sending): dropped after counting in the circuit window */
  uint64_t n_data_unknown_stream;
  /* MeasureMe answers taken from the hops asked, and garbage ones */
  uint64_t n_measureme_answers, n_measureme_garbage;
  unsigned n_open_streams, n_circuits;
} client_stats_t;
void client_get_stats(client_stats_t *out);

/* Controllers (STREAM events, GETINFO stream-status): a read-only view
 * of the SOCKS streams. Statuses as control-spec's STREAM event. */
typedef enum {
  CLIENT_STREAM_NEW,
  CLIENT_STREAM_SENTCONNECT,
  CLIENT_STREAM_SUCCEEDED,
  CLIENT_STREAM_FAILED,
  CLIENT_STREAM_CLOSED,
  CLIENT_STREAM_DETACHED, /* its circuit closed; waits for a controller */
  CLIENT_STREAM_NEWRESOLVE,  /* a lookup (SOCKS or controller RESOLVE) */
  CLIENT_STREAM_SENTRESOLVE,
} client_stream_status_t;
typedef struct client_stream_info_t {
  uint64_t id;                /* process-wide, from 1 */
  client_stream_status_t status;
  uint64_t circ_gid;          /* the circuit's gid; 0 while unattached */
  const char *address;        /* the SOCKS target, without port */
  uint16_t port;
  const pc_addr_t *source;    /* the SOCKS client, or NULL */
  /* FAILED and CLOSED: the RELAY_END reason (tor-spec 6.3) the stream
   * ended with, -1 when unknown; reason_remote when the exit sent it in
   * an END cell (control-spec's REASON=END REMOTE_REASON=...). */
  int reason;
  int reason_remote;
  int is_resolve;             /* a lookup: PURPOSE=DNS_REQUEST */
} client_stream_info_t;
/* One observer, told of every status change (the info is valid during
 * the call only); NULL removes it. Registering another while one is
 * registered is refused with a warning (-1); the same fn and arg again is
 * fine (0). */
typedef void (*client_stream_observer_fn)(const client_stream_info_t *si,
                                          void *arg);
int client_set_stream_observer(client_stream_observer_fn fn, void *arg);
/* Every stream attached to a circuit or held for a controller, with its
 * current status. */
void client_foreach_stream(void (*fn)(const client_stream_info_t *, void *),
                           void *arg);

/* Controllers building circuits and placing streams (control-spec
 * EXTENDCIRCUIT, ATTACHSTREAM, CLOSECIRCUIT, CLOSESTREAM). Errors return a
 * control-protocol code (551, 552, 555) with *err_out its text (newly
 * allocated). */
/* Build a plain circuit through the relays named by path (n names, 1 to
 * CIRCUIT_MAX_HOPS: "$FINGERPRINT", "$FINGERPRINT~NICK", "$FP=NICK" or a
 * nickname, all in the consensus with an ntor key), asking the last for
 * congestion control where it supports it. Such a circuit carries only
 * the streams a controller attaches to it. Returns 0 and *gid_out. */
int client_ctl_extend(const char *const *path, int n, uint64_t *gid_out,
                      char **err_out);
/* EXTENDCIRCUIT 0 without a path: as client_ctl_extend() through three
 * relays pctor chooses as for a stream to port 80 (entry guard, path
 * rules, ExitNodes). Returns 0 and *gid_out, or 551 with *err_out. */
int client_ctl_extend_auto(uint64_t *gid_out, char **err_out);
/* EXTENDCIRCUIT gid PATH: add the relays to a circuit a controller built
 * (one that has carried no stream yet; while building, or built: the new
 * hops are reported in CIRC events as EXTENDED, then BUILT). Returns 0, or
 * a reply code with *err_out: 552 unknown circuit or relay, 551 a
 * circuit pctor does not extend. */
int client_ctl_extend_existing(uint64_t gid, const char *const *path, int n,
                               char **err_out);
/* Is gid one of the client's circuits (a plain one or a conflux leg)? */
int client_ctl_has_circuit(uint64_t gid);
/* For CIRC events (control-spec CONFLUX_ID, CONFLUX_RTT, and tor's
 * purposes CONFLUX_UNLINKED and CONFLUX_LINKED): when gid is a leg of a
 * conflux set, 1 (not linked yet) or 2 (linked) with the set's nonce in
 * nonce_out (32 bytes) and the leg's RTT from its link handshake in
 * *rtt_us_out (0 until linked); else 0. */
int client_ctl_conflux_id(uint64_t gid, uint8_t nonce_out[32],
                          uint64_t *rtt_us_out);
/* Close the client's circuit gid (with if_unused, only when no stream
 * uses it). Not-yet-connected streams on it are detached (held for the
 * controller with __LeaveStreamsUnattached) or retried elsewhere. */
int client_ctl_close_circuit(uint64_t gid, int if_unused, char **err_out);
/* Attach a held stream to circuit circ_gid, which must be built (0: let
 * the client choose, as without __LeaveStreamsUnattached). hop (1-based,
 * ATTACHSTREAM HOP=; 0: the last) is where the stream leaves the circuit:
 * hop 1 is refused, and all streams of a circuit leave at one hop (551
 * when the circuit already carried streams leaving elsewhere). */
int client_ctl_attach_stream(uint64_t stream_id, uint64_t circ_gid, int hop,
                             char **err_out);
/* End a stream (held or attached) with END reason `reason`. */
int client_ctl_close_stream(uint64_t stream_id, uint8_t reason,
                            char **err_out);
/* MAPADDRESS from=to (addrmap.h has the rules): SOCKS streams to from go
 * to to. Returns 0 with *from_out (newly allocated: the address mapped,
 * the virtual one chosen for 0.0.0.0, ::0 or "."), or a reply code with
 * *err_out: 512 an invalid address, 451 no room, 551 no client. */
int client_ctl_mapaddress(const char *from, const char *to, char **from_out,
                          char **err_out);
/* Every MAPADDRESS mapping (nothing without a client). */
void client_ctl_foreach_mapping(void (*fn)(const char *from, const char *to,
                                           void *arg),
                                void *arg);
/* SIGNAL NEWNYM: circuits that carried or were built for streams take no
 * new ones (tor's "clean slate"); at most once per
 * CLIENT_NEWNYM_INTERVAL_US, a sooner one waits and *delay_s_out says how
 * long (else 0). Returns 0, or 551 without a client. */
int client_ctl_newnym(unsigned *delay_s_out, char **err_out);
/* A faster transport to the relay with RSA identity rsa_id is up (a
 * datagram link, CircuitTransport backtap or dtls-tcp): the circuits whose
 * first hop reaches it over a TLS connection take no new streams (as after
 * NEWNYM), so that new ones are built over the new transport; their
 * streams go on. Returns how many were retired (0 without a client). */
int client_retire_tls_first_hops(const uint8_t rsa_id[20], const char *why);
/* DROPTIMEOUTS: forget the circuit build times (cbt_reset). Returns 0
 * (the caller then reports CBT_EV_RESET), or 551 without a client. */
int client_ctl_drop_timeouts(char **err_out);
/* RESOLVE [mode=reverse] ADDRESS: may the address be looked up (a name,
 * or for reverse an IP address)? Returns 0, or a reply code with
 * *err_out: 512 an invalid address, 551 no client. */
int client_ctl_resolve_check(const char *address, int reverse,
                             char **err_out);
/* Look the name (reverse: the IP address) up through an exit; the result
 * goes to the resolve observer (nothing happens if the check fails). */
void client_ctl_resolve(const char *address, int reverse);
/* The result of a lookup, SOCKS or controller (control: ADDRMAP). */
typedef struct client_resolve_result_t {
  const char *address;   /* as asked (after MAPADDRESS) */
  int reverse;           /* RESOLVE_PTR / mode=reverse */
  const char *answer;    /* the address or name found, or NULL */
  const char *error;     /* why not, when answer is NULL */
  uint32_t ttl;          /* seconds, as the exit gave it (0: none) */
  uint64_t stream_id;
} client_resolve_result_t;
typedef void (*client_resolve_observer_fn)(const client_resolve_result_t *r,
                                           void *arg);
/* One observer; NULL removes it. Like every client observer below, a
 * different second one is refused with a warning (-1) instead of taking
 * the first one's place; the same one again is fine (0). */
int client_set_resolve_observer(client_resolve_observer_fn fn, void *arg);
/* Told when a conflux leg links (CIRC_MINOR PURPOSE_CHANGED); one
 * observer, NULL removes it. */
struct origin_circuit_t;
typedef void (*client_conflux_link_fn)(const struct origin_circuit_t *oc,
                                       void *arg);
int client_set_conflux_link_observer(client_conflux_link_fn fn, void *arg);
/* MeasureMe answers (control: MEASUREME events): hop is 1-based; answer
 * is the parsed answer, or NULL with error saying why it was garbage.
 * Valid during the call. One observer, NULL removes it. */
struct measureme_answer_t;
typedef struct client_measureme_event_t {
  uint64_t circ_gid;
  int hop;
  const struct measureme_answer_t *answer;
  const char *error;
} client_measureme_event_t;
typedef void (*client_measureme_observer_fn)(
    const client_measureme_event_t *ev, void *arg);
int client_set_measureme_observer(client_measureme_observer_fn fn,
                                  void *arg);
/* BUILDTIMEOUT_SET: told when the build timeout is computed from the
 * history or reset; one observer, NULL removes it. */
typedef void (*client_buildtimeout_observer_fn)(cbt_event_t ev,
                                                const cbt_info_t *info,
                                                void *arg);
int client_set_buildtimeout_observer(client_buildtimeout_observer_fn fn,
                                     void *arg);
/* Tell the observer of ev with the current figures (CBT_EV_NONE: nothing
 * to tell); DROPTIMEOUTS' RESET is reported so, after its reply. */
void client_ctl_cbt_event(cbt_event_t ev);
#endif
