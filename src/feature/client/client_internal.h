/* SPDX-License-Identifier: BSD-3-Clause */
/* client_internal.h -- what the parts of the SocksPort client share: its
 * circuits (ccirc_t: one plain circuit or a conflux set, one circuit end
 * of core/or/edge.h), their legs (cleg_t), SOCKS streams (cstream_t) and
 * the client's state. Not for use outside feature/client.
 *
 * The client is split by job:
 *   client.c          circuits as stream carriers: sending, the circuit
 *                     end's ops, messages from the exit, closing, the
 *                     periodic timer, init/shutdown;
 *   client_socks.c    SOCKS connections and their streams (the owner of
 *                     each edge_stream_t);
 *   client_pool.c     choosing a circuit for a stream, launching circuits
 *                     and conflux sets, preemptive (clean) circuits;
 *   client_conflux.c  building, linking and relaunching conflux legs;
 *   client_resolve.c  name lookups: SOCKS RESOLVE/RESOLVE_PTR and a
 *                     controller's RESOLVE (RELAY_RESOLVE/RESOLVED);
 *   client_ctl.c      what controllers do by hand: EXTENDCIRCUIT,
 *                     ATTACHSTREAM, CLOSECIRCUIT, CLOSESTREAM, MAPADDRESS
 *                     (the address map is addrmap.c), SIGNAL NEWNYM,
 *                     DROPTIMEOUTS and BUILDTIMEOUT_SET events;
 *   client_measureme.c  MeasureMeHops: asking hops to measure a circuit
 *                     and checking their answers (MEASUREME events).
 */
#ifndef PCTOR_FEATURE_CLIENT_CLIENT_INTERNAL_H
#define PCTOR_FEATURE_CLIENT_CLIENT_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "feature/client/client.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/edge.h"
#include "feature/client/addrmap.h"
#include "feature/client/circbuild.h"
#include "feature/client/cbt.h"
#include "feature/client/guards.h"
#include "feature/client/socks_proto.h"
#include "feature/conflux/conflux_set.h"
#include "lib/container/dlist.h"
#include "lib/net/conn.h"

#define CLIENT_HOPS 3
/* Circuit build timeouts are learned (cbt.h); the state is saved after
 * this many new build times. */
#define CBT_SAVE_EVERY 10
#define CLIENT_TIMER_US (1ULL * 1000000)
#define CLEAN_IDLE_US (300ULL * 1000000)
/* Conflux: legs relaunched per set after failing to link when the
 * consensus has no cfx_max_unlinked_leg_retry, and linked legs replaced
 * per set. */
#define CFX_DEFAULT_UNLINKED_RETRY 3
/* The least a set that streams wait for gives its slower legs to link
 * after its first did (client_cfx_maybe_ready). */
#define CFX_READY_GRACE_MIN_US (200ULL * 1000)
#define CFX_MAX_REPLACEMENTS 3
/* Preemptive circuits: ports remembered (tor: predicted ports; port 80 is
 * predicted at start), for how long after their last request, how many
 * clean circuits at most, how long one waits unused before it is closed,
 * and how long to wait after one failed to build. */
#define PREDICTED_PORTS_MAX 8
#define PREDICTED_PORT_LIFETIME_US (3600ULL * 1000000)
#define PREEMPTIVE_MAX_CLEAN 3
#define PREEMPTIVE_IDLE_US (3600ULL * 1000000)
#define PREEMPTIVE_RETRY_US (30ULL * 1000000)

typedef enum {
  CS_SOCKS,
  CS_HELD,       /* __LeaveStreamsUnattached: waiting for ATTACHSTREAM */
  CS_WAIT_PATH,  /* no usable circuit and none can be built yet: retried
                  * by the client's timer until SocksTimeout */
  CS_WAIT_CIRC,
  CS_CONNECTING,
  CS_OPEN,
} cstream_state_t;
/* SocksTimeout's default: how long a held stream waits for its
 * controller, and a stream for a path (client_socks_timeout_us()). */
#define CLIENT_SOCKS_TIMEOUT_DEFAULT_S 120
/* tor's schedule when CircuitStreamTimeout is 0: a stream's first two
 * BEGINs wait this long for their answer, later ones the second. */
#define CLIENT_STREAM_TIMEOUT_FIRST_S 10
#define CLIENT_STREAM_TIMEOUT_LATER_S 15
/* SIGNAL NEWNYM at most this often; one sooner waits (tor: 10 s). */
#define CLIENT_NEWNYM_INTERVAL_US (10ULL * 1000000)

typedef struct ccirc_t ccirc_t;

typedef struct cstream_t {
  dlist_node_t node;      /* in client_g.unattached or its circuit's list */
  conn_t *conn;
  socks_parser_t socks;
  socks_request_t req;
  const client_port_t *port; /* its SocksPort line (NULL: a controller's) */
  /* The target as the application asked for it, when MAPADDRESS changed
   * it (IsolateDestAddr compares this, as tor); else NULL. */
  char *orig_address;
  cstream_state_t state;
  ccirc_t *circ;
  edge_stream_t *es;      /* on circ's edge from BEGIN on, else NULL */
  int retried;
  /* For controllers (client_set_stream_observer): a process-wide ID once
   * reported NEW, and whether it ends as FAILED. */
  uint64_t gid;
  unsigned failed : 1;
  /* Why it ended, for STREAM events: the RELAY_END reason plus one (0:
   * not ended yet), and whether the far side sent it (an END cell). */
  uint16_t end_reason1;
  unsigned end_remote : 1;
  unsigned ctl_release : 1; /* ATTACHSTREAM ... 0: let the pool choose */
  unsigned resolve_reported : 1; /* a lookup's result went to observers */
  uint64_t held_since_us;   /* CS_HELD */
  uint64_t path_wait_since_us; /* first found no path (CS_WAIT_PATH); 0 */
  /* Where a stream's set-up time goes (the info line at CONNECTED): when
   * the request was complete, and when its (last) BEGIN left. */
  uint64_t requested_us, begin_us;
  int n_begin_timeouts;   /* BEGINs that went unanswered in time */
} cstream_t;

/* One circuit of a ccirc_t. */
typedef struct cleg_t {
  ccirc_t *owner;
  circbuild_t *cb;
  origin_circuit_t *circ;  /* once built */
  unsigned built : 1;
  unsigned link_sent : 1;
  unsigned linked : 1;     /* LINKED taken, LINKED_ACK sent */
  uint64_t link_sent_us;
  unsigned replacement : 1; /* launched for a linked leg that died */
  cfx_leg_t *leg;          /* in owner->cfx once linked */
  /* What our CONFLUX_LINK said: the exit starts the leg's counts from
   * these, so we do too (see handle_linked in client_conflux.c). */
  uint64_t link_seq_sent, link_seq_recv;
  uint8_t guard_id[20], middle_id[20];
  char path[64];           /* "guard -> middle", for logs */
  /* MeasureMe: the label sent, the hops asked and the hops whose garbage
   * answer was logged at notice (bit h for hop h+1). */
  uint8_t mm_label[8];
  uint8_t mm_asked, mm_garbage_logged;
} cleg_t;

/* Relays of failed legs a set remembers, so relaunches avoid them. */
#define CFX_MAX_FAILED_RELAYS 8

struct ccirc_t {
  dlist_node_t node;
  cleg_t *legs[CFX_MAX_LEGS];
  int n_legs;
  cfx_set_t *cfx;          /* conflux: the set; NULL for a plain circuit */
  uint8_t nonce[CFX_NONCE_LEN];
  uint64_t serial;         /* its number in logs (sets and circuits) */
  int n_relaunches;        /* legs relaunched after failing to link */
  /* When its first leg linked (0: none yet), and the timer that lets it
   * take streams without the slower legs (client_cfx_maybe_ready). */
  uint64_t first_link_us;
  evloop_timer_t *ready_timer;
  /* Since when its out-of-order queue has held messages (0: empty), and,
   * while queued messages are being delivered, how long the gap before
   * them lasted (0 otherwise): the info line at CONNECTED shows it. */
  uint64_t ooo_since_us, ooo_held_us;
  int n_replacements;      /* legs launched to replace linked ones */
  uint8_t failed_ids[CFX_MAX_FAILED_RELAYS][20];
  int n_failed_ids;
  int built;               /* streams may use it */
  int busy;                /* > 0 while delivering (free deferred) */
  int dead;                /* closed; freed when busy drops to 0 */
  int timed_out;           /* past the build timeout: building for its
                            * time only, takes no streams (cbt.h) */
  uint8_t exit_id[20];
  uint16_t exit_port_ok;   /* the port the exit was chosen for (0: any) */
  int pinned_exit;         /* chosen from ExitNodes whatever the port */
  /* isolation (client_port.h): its streams' values */
  client_circ_iso_t iso;
  uint64_t created_us, dirty_since_us, idle_since_us;
  /* Built ahead of need (preemptive) for this port; until a stream takes
   * it, any isolation may (iso_open), as for tor's clean circuits. */
  int preemptive;
  uint16_t preempt_port;
  int iso_open;
  /* Built by a controller (EXTENDCIRCUIT): carries only the streams a
   * controller attaches to it, never the pool's. */
  int controller;
  /* A controller's EXTENDCIRCUIT on this built circuit is adding hops:
   * no stream may be attached until they are open. */
  int extending;
  /* ATTACHSTREAM HOP=: the 1-based hop where this circuit's streams
   * leave (0: the last hop). One hop per circuit: the circuit's windows
   * and SENDMEs are with that hop. */
  int exit_hop;
  /* SIGNAL NEWNYM: the pool gives it no new stream (its streams go on;
   * it closes once it has none). */
  int retired;
  edge_t *edge;            /* the circuit end: streams, windows, SENDMEs */
  dlist_t streams;         /* attached: waiting, connecting, open */
};

/* The client's state (one SocksPort client per process). */
typedef struct client_globals_t {
  evloop_t *loop;
  client_config_t cfg;
  listener_t *listeners[CLIENT_MAX_SOCKS_PORTS];
  /* The SocksPort lines as opened (a port without SessionGroup has a
   * negative group of its own); kept across reconfiguration. */
  client_ports_t ports;
  dlist_t circs;
  dlist_t unattached;      /* in the SOCKS handshake, or held (CS_HELD) */
  evloop_timer_t *timer;
  client_stats_t stats;
  uint64_t next_serial;
  /* predicted ports: the last request time of each (0: free slot) */
  struct {
    uint16_t port;
    uint64_t last_us;
  } predicted[PREDICTED_PORTS_MAX];
  evloop_deferred_t *preempt_ev;
  uint64_t preempt_not_before_us;
  guards_t *guards;        /* entry guards (guard-spec) */
  cbt_t *cbt;              /* learned circuit build timeout */
  time_t protocols_checked; /* valid-after of the consensus checked */
  int cbt_unsaved;         /* build times not yet in the state file */
  /* Enough directory information (client_enough_dir_info), cached for
   * one nodelist: which, and its descriptor count at the time. */
  const dir_nodelist_t *dirinfo_nl;
  int dirinfo_n_desc;
  int dirinfo_enough;      /* 0 until the first decision */
  addrmap_t *addrmap;      /* MAPADDRESS */
  /* SIGNAL NEWNYM: when the last one took effect; a timer for one that
   * waits for CLIENT_NEWNYM_INTERVAL_US to pass. */
  uint64_t newnym_last_us;
  evloop_timer_t *newnym_timer;
} client_globals_t;
extern client_globals_t client_g;

/* ---- client.c: circuits as stream carriers ---- */
/* The current consensus' nodes, or NULL (none yet, or no directory). */
const dir_nodelist_t *client_nodelist(void);
/* 1 if nl holds the descriptors of enough relays to build circuits for
 * streams (PathsNeededToBuildCircuits, path_dir_info); a notice says
 * when this changes, with the fractions, as tor. */
int client_enough_dir_info(const dir_nodelist_t *nl);
/* A guard for a new circuit from the entry guards (guards.h), fitting
 * the n_avoid relays given; NULL if none can be used now. */
const dir_node_t *client_choose_guard(const dir_nodelist_t *nl,
                                      const dir_node_t *const *avoid,
                                      int n_avoid);
/* The index of a circuit's last open hop (its exit once built). */
int client_last_hop(const origin_circuit_t *circ);
/* The index of the hop where a plain circuit's streams leave: the last
 * one, or the hop a controller chose (ccirc_t.exit_hop). */
int ccirc_stream_hop(const ccirc_t *cc, const origin_circuit_t *circ);
/* The exit hop's controller of a leg, or NULL. */
const cc_t *cleg_cc(const cleg_t *leg);
/* Close cc: end open streams, retry the others once elsewhere (or fail
 * them with fail_reason >= 0); freed once no delivery loop uses it. */
void ccirc_close(ccirc_t *cc, int fail_reason, const char *why);
/* Drop a busy count taken around a loop that may close cc. */
void ccirc_unbusy(ccirc_t *cc);
/* MeasureMeHops: ask those hops of a new circuit (leg's circuit circ) to
 * measure it (client_measureme.c). leg may be NULL (no answers taken). */
void client_ask_measureme(cleg_t *leg, origin_circuit_t *circ);
/* A RELAY_MEASUREME_ANSWER from hop (0-based) of leg's circuit circ. */
void client_measureme_answer(cleg_t *leg, origin_circuit_t *circ, int hop,
                             const uint8_t *body, size_t len);
/* cc can take streams now: send their BEGINs. */
void ccirc_ready(ccirc_t *cc);
/* A window reopened: the streams held back may send. */
void ccirc_wake_streams(ccirc_t *cc);
/* A protocol violation by the exit: close cc. */
void ccirc_violation(ccirc_t *cc, const char *why);
/* A stream message from the exit, in order, for cc's circuit end. */
void ccirc_stream_msg(ccirc_t *cc, uint8_t cmd, uint16_t id,
                      const uint8_t *body, uint16_t len);
extern const circbuild_cbs_t client_circ_cbs;
/* The circuit end of a ccirc_t (its edge_t). */
extern const edge_end_ops_t client_end_ops;

/* ---- client_socks.c: SOCKS connections ---- */
/* Free a stream; its connection is closed after flushing. */
void socks_stream_free(cstream_t *cs);
/* The stream failed: SOCKS error reply (unless open), then free. */
void socks_stream_fail(cstream_t *cs, int end_reason, const char *why);
/* Open cs's stream on its circuit (BEGIN). */
void socks_send_begin(cstream_t *cs);
/* Tell the controller's stream observer (if any) that cs is now in state
 * st; gives cs its process-wide ID on first report. */
void socks_stream_report(cstream_t *cs, client_stream_status_t st);
/* The SocksPort listener's accept callback. */
void client_socks_accept(int fd, const pc_addr_t *peer, void *arg);

/* ---- client_resolve.c: lookups ---- */
/* Is cs a lookup (RESOLVE or RESOLVE_PTR) rather than a CONNECT? */
int client_stream_is_resolve(const cstream_t *cs);
/* A lookup whose request is complete (SOCKS or controller): rewrite it
 * through MAPADDRESS, answer an IP literal at once, else find it a
 * circuit. */
void client_resolve_start(cstream_t *cs);
/* Send cs's RELAY_RESOLVE on its circuit (socks_send_begin for lookups). */
void client_resolve_send(cstream_t *cs);
/* cs is being freed: a lookup not answered yet is reported failed. */
void client_resolve_freeing(cstream_t *cs);

/* ---- client_pool.c: the circuit pool ---- */
/* Start building one circuit (a plain one, or a leg of cc's set) through
 * path[0..n_hops-1]. */
cleg_t *client_leg_start(ccirc_t *cc, const dir_node_t *const *path,
                         int n_hops, int want_cc);
/* Add path[0..n-1] to a plain circuit's leg (EXTENDCIRCUIT on an existing
 * circuit), asking the new last hop for congestion control as
 * client_leg_start() does. Returns 0 or -1. */
int client_leg_extend(cleg_t *leg, const dir_node_t *const *path, int n,
                      int want_cc);
/* Can streams still be attached to cc? */
int ccirc_usable(const ccirc_t *cc);
/* A stream asked for port at now (predicted ports). */
void client_predict_port(uint16_t port, uint64_t now);
/* Build the preemptive circuits the predicted ports want. */
void client_preempt_cb(void *arg);
/* cs was attached to cc by a controller: cc's isolation includes it
 * (a clean circuit takes its isolation), as when the pool chooses. */
void ccirc_note_stream_iso(ccirc_t *cc, const cstream_t *cs);
/* Find or launch a circuit for cs (after its SOCKS handshake, or to retry
 * it when its circuit closed before CONNECTED). When none can be built
 * (no path fits, not enough directory information yet), cs waits as
 * CS_WAIT_PATH on client_g.unattached and the timer retries it until
 * SocksTimeout, as tor holds such streams. */
void client_stream_attach(cstream_t *cs);
/* Attach every stream on client_g.unattached in this state (CS_WAIT_PATH:
 * the timer's retries, which fail those that have waited SocksTimeout;
 * CS_HELD: no controller holds streams any more). */
void client_attach_unattached(cstream_state_t state);
/* Streams that sent BEGIN (or RESOLVE) and got no answer within
 * CircuitStreamTimeout (tor's schedule when 0) end there with reason
 * TIMEOUT and go to another circuit, which no new stream then takes;
 * past SocksTimeout since the request they fail. Run by the timer. */
void client_expire_connecting(uint64_t now);
/* SocksTimeout in microseconds. */
uint64_t client_socks_timeout_us(void);

/* ---- client_ctl.c: circuits and streams by a controller ---- */
/* Keep cs (SOCKS done, reported NEW) for ATTACHSTREAM. */
void client_ctl_hold_stream(cstream_t *cs);
/* The timer: fail held streams nobody attached in time. */
void client_ctl_expire_held(uint64_t now);
/* A conflux leg linked: tell the controller's observer. */
void client_ctl_note_linked(const cleg_t *leg);


/* ---- client_conflux.c: conflux legs ---- */
/* A leg's congestion state for the conflux schedulers. */
void cleg_state(void *handle, cfx_leg_state_t *out);
void client_cfx_leg_built(ccirc_t *cc, cleg_t *leg, origin_circuit_t *circ);
void client_cfx_maybe_ready(ccirc_t *cc);
/* client_cfx_maybe_ready's rule: with linked and pending (still linking)
 * legs, streams waiting or not, the set launched at created_us and its
 * first leg linked at first_link_us: ready now, not until more legs link,
 * or at *at_us unless they link before. */
typedef enum {
  CFX_READY_NOT_YET,
  CFX_READY_NOW,
  CFX_READY_LATER,
} cfx_ready_t;
cfx_ready_t client_cfx_ready_rule(int linked, int pending, int streams_wait,
                                  uint64_t created_us, uint64_t first_link_us,
                                  uint64_t now_us, uint64_t *at_us);
void client_cfx_check_link_timeouts(ccirc_t *cc, uint64_t now);
void client_cfx_leg_closed(ccirc_t *cc, cleg_t *leg, int reason,
                           const char *why);
void client_cfx_leg_relay(ccirc_t *cc, cleg_t *leg, uint8_t cmd, uint16_t id,
                          const uint8_t *body, uint16_t len);
#endif
