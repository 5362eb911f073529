/* SPDX-License-Identifier: BSD-3-Clause */
/* channel.h -- Tor link connections ("channels") between us and another
 * Tor instance: the link handshake, cell framing, circuit-ID allocation and
 * the per-channel list of circuits that have cells waiting to be sent.
 *
 * A channel wraps one TLS conn_t. It moves through
 *   CONNECTING -> HANDSHAKING -> OPEN -> CLOSING/CLOSED.
 * While handshaking it speaks only VERSIONS, CERTS, AUTH_CHALLENGE,
 * AUTHENTICATE, NETINFO and padding; once OPEN it hands every other cell to
 * the circuit layer (command.h). We support link protocols 4 and 5, so an
 * open channel always uses 4-byte circuit IDs and 514-byte cells.
 *
 * Identity: as initiator we verify the responder's RSA and Ed25519
 * identities against the ones we were asked to reach; as responder we learn
 * the initiator's identities only if it AUTHENTICATEs (relays do, clients
 * don't). channel_is_authenticated_relay() tells which.
 */
#ifndef PCTOR_CORE_OR_CHANNEL_H
#define PCTOR_CORE_OR_CHANNEL_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/cell_queue.h"
#include "core/or/circ_queue.h"
#include "core/or/relay_keys.h"
#include "core/proto/cell.h"
#include "lib/container/dlist.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

typedef struct channel_t channel_t;
struct circuit_t;

typedef enum {
  CHAN_STATE_CONNECTING,
  CHAN_STATE_HANDSHAKING,
  CHAN_STATE_OPEN,
  CHAN_STATE_CLOSED,
} channel_state_t;

/* Set up the channel subsystem. keys may be NULL (pure client: we never
 * authenticate and cannot accept connections). The keys object must stay
 * valid until channels_shutdown() or the next channels_set_keys(). */
void channels_init(evloop_t *loop, const relay_keys_t *keys);
void channels_set_keys(const relay_keys_t *keys);
/* Addresses we advertise in NETINFO as a relay (our ORPort addresses). */
void channels_set_my_addrs(const pc_addr_t *addrs, int n);
/* Close every channel (without flushing) and free the subsystem. */
void channels_shutdown(void);
/* Stop accepting connections on the ORPorts; open channels stay (a
 * graceful shutdown, SIGINT with ShutdownWaitLength). */
void channels_close_listeners(void);
/* Close every channel (hard hibernation); listeners stay as they are. */
void channels_close_all(const char *why);
/* The event loop channels run on. */
evloop_t *channels_loop(void);
/* Our relay keys, or NULL when we are a pure client. */
const relay_keys_t *channels_keys(void);

/* Listen for incoming link connections on addr (an ORPort). Returns 0, or
 * -1 with *err set. The bound address is written to *bound if non-NULL. */
int channel_listen(const pc_addr_t *addr, pc_addr_t *bound, const char **err);

/* Open a channel to the relay at addr that must have the given identities
 * (rsa_id: 20 bytes, ed_id: 32 bytes; either may be NULL = don't check).
 * As a relay we authenticate; as a client we don't. Returns NULL only when
 * the socket cannot be created; later failure is reported to the circuit
 * layer through circuit_n_chan_done(chan, 0). */
channel_t *channel_connect(const pc_addr_t *addr, const uint8_t *rsa_id,
                           const uint8_t *ed_id);
/* An open or opening channel to a relay with these identities that a
 * circuit extension may reuse (tor-spec 5.3.1: the identity matches and the
 * address matches the one asked for or is canonical), or NULL. Per-circuit
 * channels are never returned. */
channel_t *channel_find_for_extend(const pc_addr_t *addr,
                                   const uint8_t *rsa_id,
                                   const uint8_t *ed_id);
/* PerCircuitTCP: like channel_connect(), for one circuit alone. The
 * channel is never offered to other extensions by
 * channel_find_for_extend(), and it is closed (after flushing) as soon as
 * it carries no circuit any more. */
channel_t *channel_connect_per_circuit(const pc_addr_t *addr,
                                       const uint8_t *rsa_id,
                                       const uint8_t *ed_id);
/* Among all open or opening channels to that relay, per-circuit ones
 * included, the one whose circuits have sent least recently (lowest sum
 * of their EWMA averages towards it), or NULL: where a circuit that cannot
 * have its own connection bothers the fewest quiet circuits. A per-circuit
 * channel chosen so keeps counting as one and closes when its last
 * circuit has gone. */
channel_t *channel_find_quietest_for_extend(const pc_addr_t *addr,
                                            const uint8_t *rsa_id,
                                            const uint8_t *ed_id);
int channel_is_per_circuit(const channel_t *chan);
/* Spare per-circuit channels: opened ahead of need so that a circuit
 * extension does not wait for TCP, TLS and the link handshake. A spare
 * without a circuit is closed after CHANNEL_SPARE_IDLE_SEC.
 * channel_take_spare() returns one to that relay (open ones first) and
 * makes it an ordinary per-circuit channel, or NULL. */
#define CHANNEL_SPARE_IDLE_SEC 60
channel_t *channel_connect_spare(const pc_addr_t *addr,
                                 const uint8_t *rsa_id, const uint8_t *ed_id);
channel_t *channel_take_spare(const pc_addr_t *addr, const uint8_t *rsa_id,
                              const uint8_t *ed_id);
unsigned channels_n_spares(const pc_addr_t *addr, const uint8_t *rsa_id,
                           const uint8_t *ed_id);
/* Per-circuit channels that are not closed yet. */
unsigned channels_n_per_circuit(void);

channel_state_t channel_state(const channel_t *chan);
int channel_is_open(const channel_t *chan);
/* Whether the peer proved a relay identity (it sent CERTS with identities
 * and, as initiator, AUTHENTICATE). */
int channel_is_authenticated_relay(const channel_t *chan);
/* Whether we initiated the connection. */
int channel_is_outgoing(const channel_t *chan);
const uint8_t *channel_peer_rsa_id(const channel_t *chan); /* NULL if none */
const uint8_t *channel_peer_ed_id(const channel_t *chan);  /* NULL if none */
const pc_addr_t *channel_peer_addr(const channel_t *chan);
/* Our clock minus the time the peer put in its NETINFO cell, in seconds,
 * as measured when it arrived: 1 with *skew_out, or 0 when the peer sent
 * none (timestamp 0, as clients may) or the handshake has not got there.
 * Handshakes log a warning when an authenticated relay's, or one we
 * connected to, differs by more than CHANNEL_NETINFO_SKEW_WARN. */
#define CHANNEL_NETINFO_SKEW_WARN 3600
int channel_netinfo_skew(const channel_t *chan, int64_t *skew_out);
uint64_t channel_global_id(const channel_t *chan);
/* The open channel with this global ID, or NULL (closed or freed since):
 * for work that outlives a callback (cpuworker.c) and must not keep a
 * channel pointer. */
channel_t *channel_find_by_global_id(uint64_t id);
/* "[12] 127.0.0.1:5001 ($HEXFP)" style description for logs. */
const char *channel_describe(const channel_t *chan);

/* Circuit IDs on this channel. */
uint32_t channel_alloc_circ_id(channel_t *chan); /* 0 if none free */
struct circuit_t *channel_get_circuit(channel_t *chan, uint32_t circ_id);
void channel_set_circuit(channel_t *chan, uint32_t circ_id,
                         struct circuit_t *circ);
void channel_remove_circuit(channel_t *chan, uint32_t circ_id);
unsigned channel_n_circuits(const channel_t *chan);
/* For circuit.c: the list (through circuit_t's pending_node) of circuits
 * whose extension waits for chan to open, and every circuit in chan's
 * map appended to out, so that neither an open nor a close of a channel
 * walks every circuit. */
dlist_t *channel_pending_circuits(channel_t *chan);
struct ptrvec_t;
void channel_collect_circuits(const channel_t *chan, struct ptrvec_t *out);

/* Send a cell now (ahead of queued circuit cells): for link-level and
 * circuit-management cells such as CREATE2 and DESTROY. */
void channel_send_cell(channel_t *chan, const cell_t *cell);
void channel_send_var_cell(channel_t *chan, const var_cell_t *vc);

/* The bytes chan's connection read and wrote since the previous call
 * (since it opened, the first time), for tor's CONN_BW event. Returns 0,
 * or -1 for a channel without a connection of its own (a carrier). */
int channel_take_bytes(channel_t *chan, uint64_t *rd, uint64_t *wr);
/* Cells waiting in the output buffer (bytes). */
size_t channel_outbuf_len(const channel_t *chan);
/* The kernel's view of the channel's TCP socket (lib/net/sockstat.h);
 * for a carried channel, its carrier's (channel_carrier_ops_t.sockstat).
 * Returns 0, or -1 if there is no socket or the kernel cannot say. */
struct sockstat_tcp_t;
int channel_sockstat(const channel_t *chan, struct sockstat_tcp_t *out);
/* Tests only: while set, queued circuit cells are not moved into the
 * output buffers of outgoing / incoming channels (cells sent directly,
 * such as DESTROY, still go out), so circuit queues grow as behind a peer
 * that does not read. Cleared by channels_init(); clearing it wakes the
 * scheduler for every channel. */
void channels_block_flush_for_testing(int outgoing, int incoming);

/* Tests and benchmarks of the scheduler: an OPEN channel over a plain
 * (non-TLS) connection on fd (a socketpair end), outside the channel
 * registry, usable without channels_init() (scheduler_init() suffices).
 * What the scheduler writes stays in its output buffer until the event
 * loop runs. Free with channel_free_plain_for_testing() (closes fd). */
channel_t *channel_new_plain_for_testing(evloop_t *loop, int fd);
void channel_free_plain_for_testing(channel_t *chan);
/* An open channel over a plain socket fd, listed with the others (the OOM
 * handler sees it) and counted as MEMACCT_CHAN_BUF; channel_close() it. */
channel_t *channel_new_listed_plain_for_testing(int fd);
struct buf_t;
struct buf_t *channel_outbuf_for_testing(channel_t *chan);
/* Fuzzing and tests of the link handshake (tests/fuzz/fuzz_linkhs.c): a
 * listed channel over a plain (non-TLS) connection on fd, in the
 * handshake as the responder (outgoing 0) or as the initiator (outgoing
 * 1, which writes its VERSIONS at once). channel_feed_for_testing() puts
 * bytes in its input buffer and runs the same framing and handshake
 * state machine as on a TLS connection, without the event loop: 0, or -1
 * once the channel is closing. The checks that need TLS (the peer's
 * certificate, the RFC 5705 exporter) fail as on a connection without
 * one. channel_close() it (channels_shutdown() frees it). */
channel_t *channel_new_handshaking_plain_for_testing(int fd, int outgoing);
int channel_feed_for_testing(channel_t *chan, const uint8_t *data,
                             size_t len);

/* Tests and benchmarks of the channel and circuit bookkeeping (which
 * channel an extension takes, teardown at scale) without descriptors:
 * while on, channel_connect() and its per-circuit and spare variants make
 * no socket, and such channels stay CONNECTING until
 * channel_open_socketless_for_testing() completes their handshake as if
 * the peer had proved the identities asked for. Cells written to them go
 * nowhere. channel_accept_socketless_for_testing() makes an incoming one
 * (HANDSHAKING, with the peer's identities if given, as after
 * AUTHENTICATE); open it the same way. Cleared by channels_init(). */
void channels_set_socketless_for_testing(int on);
channel_t *channel_accept_socketless_for_testing(const pc_addr_t *peer,
                                                 const uint8_t *rsa_id,
                                                 const uint8_t *ed_id);
void channel_open_socketless_for_testing(channel_t *chan);

/* Carried channels: a channel for one circuit whose cells travel over a
 * transport that a feature provides (BackTap over a datagram link,
 * feature/btcirc) instead of a TLS connection. The feature authenticated
 * the peer (rsa_id and ed_id are its proved identities) and carries only
 * fixed-length cells, link protocol 5 (variable-length cells written to a
 * carried channel are dropped). The channel is OPEN at once, is never
 * offered to other extensions, and closes when its circuit has gone (then
 * closed() tells the carrier, which must not use chan any more). The
 * scheduler writes a cell only while can_send() says yes; the carrier
 * calls channel_carried_writable() when it may again. Cells written
 * directly (CREATE2, DESTROY) go to send() whatever can_send() says. */
/* A carrier's hop-by-hop flow control for one hop (BackTap's per-circuit
 * window): what MeasureMe records per circuit beside the TCP state. Times
 * in microseconds; 0 where nothing was measured yet. */
typedef struct channel_flowstat_t {
  uint32_t window;      /* sending window, cells */
  uint32_t inflight;    /* cells sent and not yet released by the peer */
  uint32_t unacked;     /* cells sent and not yet acknowledged */
  uint32_t queued;      /* cells received here, not yet forwarded */
  uint32_t base_rtt_us; /* smallest round trip seen towards the peer */
  uint32_t rtt_us;      /* the window's latest round-trip sample */
  uint32_t srtt_us, rto_us;
  uint32_t retransmitted; /* cells sent again, over the hop's lifetime */
  uint32_t dropped;     /* cells dropped here before acknowledgement */
  uint32_t slow_start;  /* 1 while the window is still in slow start */
} channel_flowstat_t;

typedef struct channel_carrier_ops_t {
  int (*can_send)(void *arg);
  /* One packed 514-byte cell: 0, or -1 (the cell is lost). */
  int (*send)(void *arg, const uint8_t *cell, size_t len);
  void (*closed)(void *arg);
  /* The carrier's per-hop sending window now, in cells (BackTap: the
   * flow's Vegas window), or 0 if it has none. May be NULL (0). */
  unsigned (*window)(void *arg);
  /* The carrier's TCP state for the hop (channel_sockstat(): MeasureMe,
   * the controller's circuit bandwidth events): 0, or -1 when it has
   * none. May be NULL. */
  int (*sockstat)(void *arg, struct sockstat_tcp_t *out);
  /* The carrier's hop-by-hop flow control for the hop
   * (channel_carried_flowstat()): 0, or -1 when it has none. May be
   * NULL. */
  int (*flowstat)(void *arg, channel_flowstat_t *out);
} channel_carrier_ops_t;
channel_t *channel_new_carried(const channel_carrier_ops_t *ops, void *arg,
                               const pc_addr_t *addr, const uint8_t *rsa_id,
                               const uint8_t *ed_id, int outgoing,
                               const char *kind);
/* A cell that arrived over the carrier (takes ownership of pc). */
void channel_carried_input(channel_t *chan, packed_cell_t *pc);
/* can_send() became true again. */
void channel_carried_writable(channel_t *chan);
int channel_is_carried(const channel_t *chan);
/* The carrier's window (channel_carrier_ops_t.window) of a carried
 * channel; 0 for any other channel, a closing one or a carrier without. */
unsigned channel_carried_window(const channel_t *chan);
/* The transport a channel's cells travel over: "TLS" (a TLS connection,
 * shared or per circuit), or a carried channel's kind ("BackTap",
 * "TCP-over-DTLS"). A static string. */
const char *channel_transport_name(const channel_t *chan);
/* The carrier's flow control state (channel_carrier_ops_t.flowstat) of a
 * carried channel: 0, or -1 for any other channel, a closing one or a
 * carrier without. */
int channel_carried_flowstat(const channel_t *chan, channel_flowstat_t *out);
/* The carrier's arg if chan is carried by ops, else NULL. */
void *channel_carrier_arg(const channel_t *chan,
                          const channel_carrier_ops_t *ops);

/* Hop-by-hop backpressure (BackTap, doc/backtap.md "End-to-end
 * windows"): the carrier says so of its channels when it releases a cell
 * to its sender only once the cell has left this relay, so that a
 * circuit queue fed by it is bounded by the hop's window. The path bit
 * says more: every hop from the circuit's origin up to and including this
 * channel has backpressure. On an outgoing carried channel core sets it
 * at extension time (the origin's first hop, or a relay's next hop when
 * its previous one has the bit) and the carrier tells the peer; on an
 * incoming one the carrier sets it from what the authenticated peer said.
 * Only a channel with backpressure can have the path bit; the exit agrees
 * to run a circuit without end-to-end windows only when its previous
 * hop has it. */
void channel_carried_set_backpressure(channel_t *chan);
int channel_has_backpressure(const channel_t *chan);
void channel_set_path_backpressure(channel_t *chan, int on);
int channel_path_backpressure(const channel_t *chan);

/* Close the channel: every circuit on it is closed with reason
 * CHANNEL_CLOSED. The channel object is freed from the event loop. */
void channel_close(channel_t *chan, const char *why);
/* Close after the output buffer is written. */
void channel_close_after_flush(channel_t *chan, const char *why);

/* Open channels without circuits are closed after this long: client
 * (unauthenticated) channels after client_sec, relay channels after
 * relay_sec (defaults 180 s and 3600 s, as tor). Checked every few
 * seconds. */
void channels_set_idle_timeouts(unsigned client_sec, unsigned relay_sec);

/* Close channels whose link handshake (TCP, TLS and the Tor cells) has not
 * completed after sec seconds (default 60). */
void channels_set_handshake_timeout(unsigned sec);

/* Bandwidth buckets (BandwidthRate, RelayBandwidthRate): every channel
 * uses global (if not NULL); channels with relays also use relay.
 * Channels to private addresses are exempt unless count_private (tor's
 * CountPrivateBandwidth, on with TestingTorNetwork). With
 * read_by_priority (CircuitPriorityReads), a channel blocked on an empty
 * read bucket queues with the sum of the EWMA averages of the circuit
 * queues it feeds, so the quietest circuits' connections read first and
 * alone (ratelimit_wait_prio()); else FIFO with fair shares. Applies to
 * existing channels too. */
struct ratelimit_t;
void channels_set_buckets(struct ratelimit_t *global,
                          struct ratelimit_t *relay, int count_private,
                          int read_by_priority);

/* RelayTCPCongestionControl: the TCP congestion control (TCP_CONGESTION,
 * at most 15 characters) of connections with relays, existing and new;
 * NULL or "" leaves them at the host's default (new ones; existing ones
 * keep what they have). A failure is logged once per configuration. */
void channels_set_relay_congestion_control(const char *name);

/* Extensions (for features such as IPsec brokering, which core knows
 * nothing about): a handler for a variable-length cell command that
 * arrives on an open channel (tor ignores unknown ones; so does pctor
 * without a handler), and observers told when a channel opens. At most
 * CHANNEL_MAX_OPEN_OBSERVERS observers. Handlers may close the channel.
 * One handler a command: registering a different one while one is set is
 * refused with a warning (-1); the same one again is fine (0); NULL
 * unregisters. */
typedef void (*channel_var_cell_fn)(channel_t *chan, const var_cell_t *vc);
int channel_register_var_cell_handler(uint8_t command,
                                      channel_var_cell_fn fn);
#define CHANNEL_MAX_OPEN_OBSERVERS 4
typedef void (*channel_open_fn)(channel_t *chan, void *arg);
int channel_add_open_observer(channel_open_fn fn, void *arg);
void channel_remove_open_observer(channel_open_fn fn, void *arg);

/* What channels deliver upward. channel.c calls nothing above it for
 * these: circuits_init() registers cell dispatch (command.c) and the
 * circuit side of channel opens and closes (circuit.c). There is one set;
 * registering a different one while one is set is refused with a warning
 * (-1); registering the same again is fine; NULL unregisters. Without
 * one, cells after the handshake are dropped (counted in cells_in). */
typedef struct channel_upcalls_t {
  /* A fixed-length cell on an open channel; takes ownership of pc. */
  void (*cell)(channel_t *chan, packed_cell_t *pc);
  /* An outgoing channel opened (ok = 1) or failed before opening (0);
   * incoming channels report their opening too. Before the open
   * observers. */
  void (*opened)(channel_t *chan, int ok);
  /* The channel is closing (after opened(chan, 0) for one that never
   * opened). */
  void (*closed)(channel_t *chan);
} channel_upcalls_t;
int channels_set_upcalls(const channel_upcalls_t *up);

/* Counters for tests and statistics. */
typedef struct channel_stats_t {
  uint64_t cells_in, cells_out;
  unsigned n_open, n_handshaking;
  unsigned n_per_circuit;
  unsigned n_carried;       /* carried channels not closed yet */
  /* Outgoing channels: time from connect() to OPEN (TCP, TLS and the link
   * handshake), what an extension over a new connection waits for. */
  uint64_t setups, setup_us_total, setup_us_max;
} channel_stats_t;
void channels_get_stats(channel_stats_t *out);
/* Read-only walk over the channels not being closed (for controllers);
 * fn must not open or close channels. */
/* For the OOM handler (circuit.c): whether the channel is closing, the
 * memory its connection's buffers hold and when their oldest byte
 * arrived (UINT64_MAX: they are empty). */
int channel_is_closing(const channel_t *chan);
size_t channel_buffered_alloc(const channel_t *chan);
uint64_t channel_oldest_data_us(const channel_t *chan);

typedef void (*channel_visit_fn)(channel_t *chan, void *arg);
void channels_foreach(channel_visit_fn fn, void *arg);
#endif
