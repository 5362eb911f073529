/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram.h -- the datagram link layer between relays: one authenticated
 * DTLS 1.2 session per pair of relays over one UDP socket (DatagramPort),
 * carrying typed records packed into datagrams. The future datagram
 * transports (BackTap, TCP-over-DTLS; issue 18) sit on this API; see
 * doc/dgram.md for the design and the protocol.
 *
 * For an upper layer:
 *   - dgram_register_handler(d, type, cb, arg): records of a type
 *     (>= DGRAM_REC_USER_MIN, dgram_frame.h) that arrive on an
 *     authenticated link go to cb, one call per record, body borrowed for
 *     the call only.
 *   - dgram_add_link_observer(d, cb, arg): told when a link comes up
 *     (authenticated) or goes down (with the reason), and when a link we
 *     opened fails before coming up (up = 0, the reason: refused
 *     identity, handshake timeout, ...). When a link comes up, each side
 *     sends a PING at once, so dgram_link_get_stats()' rtt_us holds a
 *     first round-trip sample within one RTT.
 *   - dgram_link_open(d, addr, ed_id, rsa_id): the link to the relay with
 *     that identity at addr (its DatagramPort), found or opened;
 *     dgram_link_find(d, ed_id) only finds; dgram_peer_port(d, ed_id) is
 *     the port the relay announced on a TLS link, if any.
 *   - dgram_link_send(l, type, body, len): queue one record; records are
 *     packed into one datagram until it is full or the event loop
 *     iteration ends (dgram_link_flush() sends at once). There is no
 *     retransmission here: records are datagrams and may be lost,
 *     duplicated by nothing, reordered by the network; reliability is the
 *     upper layer's business. dgram_link_max_record(l) is the largest
 *     body that fits one datagram.
 *   - dgram_link_get_stats(l), dgram_get_stats(d): counters.
 * Everything runs on the event loop thread; callbacks may send and may
 * close links (closing is deferred to the end of the callback).
 *
 * The transports that carry circuit hops (BackTap, TCP-over-DTLS) attach
 * through dgram_carry.h, which keeps their per-link and per-hop records.
 * For BackTap (feature/backtap, a pure engine): one backtap_link_t per
 * dgram link, made when the link comes up and freed when it goes down;
 * its send_record maps BACKTAP_REC_CELL / _FEEDBACK onto
 * DGRAM_REC_BACKTAP_CELL / _FEEDBACK and calls dgram_link_send(); handlers
 * for those two types call backtap_link_input(); link_failed calls
 * dgram_link_close(). dgram_link_max_record() is at least 1146 bytes on
 * every link (AEAD suites only), so a 519-byte CELL record always fits.
 *
 * Who opens links: a relay with a DatagramPort announces it to every relay
 * it has an authenticated TLS link with (a variable-length cell, command
 * DGRAM_ANNOUNCE_CELL_COMMAND; tor ignores it), and opens a datagram link
 * to a relay that announced one on a TLS link it opened itself, so links
 * are ready when a transport wants one; transports may also open links
 * themselves. Idle links close after idle_timeout.
 */
#ifndef PCTOR_FEATURE_DGRAM_DGRAM_H
#define PCTOR_FEATURE_DGRAM_DGRAM_H
#include <stddef.h>
#include <stdint.h>

#include "core/or/relay_keys.h"
#include "feature/dgram/dgram_frame.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

typedef struct dgram_t dgram_t;
typedef struct dgram_link_t dgram_link_t;

/* Variable-length cell command of the DatagramPort announcement (next to
 * IPsec's 240, in the range tor leaves unused). */
#define DGRAM_ANNOUNCE_CELL_COMMAND 241
#define DGRAM_ANNOUNCE_VERSION 1

typedef struct dgram_config_t {
  pc_addr_t bind;               /* DatagramPort: address and UDP port */
  unsigned max_links;           /* links at once (any state) */
  unsigned max_handshaking;     /* links not yet authenticated */
  unsigned handshake_timeout_s; /* DTLS + authentication must finish */
  unsigned idle_timeout_s;      /* no upper-layer record either way */
  unsigned peer_timeout_s;      /* nothing at all from the peer */
  unsigned keepalive_s;         /* PING after this long without input */
  int open_announced;           /* open links to announcing relays */
  unsigned rcvbuf;              /* UDP receive buffer asked of the kernel
                                 * (bytes; 0: DGRAM_RCVBUF_DEFAULT) */
  /* Bandwidth limits (BandwidthRate, RelayBandwidthRate): the datagrams
   * to and from peers count in both groups (peers are relays), as the
   * bytes of TLS links to relays do; peers on private addresses only with
   * count_private (tor's CountPrivateBandwidth). NULL: unlimited. */
  struct ratelimit_t *bw_global, *bw_relay;
  int count_private;
} dgram_config_t;
/* Bursts of datagrams wait in the kernel's receive buffer until the loop
 * reads them; one that does not fit is dropped (counted, logged once). */
#define DGRAM_RCVBUF_DEFAULT (4u << 20)
void dgram_config_init(dgram_config_t *cfg);

/* Bind the socket and start. keys must outlive d; NULL with *err on
 * failure (address in use, no keys). */
dgram_t *dgram_new(evloop_t *loop, const relay_keys_t *keys,
                   const dgram_config_t *cfg, char **err);
/* Close every link (CLOSE record, close_notify) and the socket. */
void dgram_free_(dgram_t *d);
#define dgram_free(x) do { dgram_free_(x); (x) = NULL; } while (0)
/* New limits and timeouts (the bound address stays). */
void dgram_reconfigure(dgram_t *d, const dgram_config_t *cfg);
/* The address actually bound (port chosen by the kernel if 0 was asked). */
const pc_addr_t *dgram_bound_addr(const dgram_t *d);
/* The relay keys changed (rotation): new sessions use them. */
void dgram_set_keys(dgram_t *d, const relay_keys_t *keys);

/* Announce our port on TLS links and learn the peers' (registers a
 * channel-open observer and a var-cell handler; one dgram_t per process
 * may do this). 0 or -1. */
int dgram_attach_channels(dgram_t *d);
/* The dgram_t that dgram_attach_channels() attached, or NULL (for the
 * MetricsPort). */
const dgram_t *dgram_instance(void);
/* The UDP port the relay with this Ed25519 identity announced, or 0. */
uint16_t dgram_peer_port(const dgram_t *d, const uint8_t ed_id[32]);

/* Links. */
dgram_link_t *dgram_link_open(dgram_t *d, const pc_addr_t *addr,
                              const uint8_t ed_id[32],
                              const uint8_t *rsa_id /* 20 bytes or NULL */);
dgram_link_t *dgram_link_find(const dgram_t *d, const uint8_t ed_id[32]);
int dgram_link_is_up(const dgram_link_t *l);
const uint8_t *dgram_link_peer_ed_id(const dgram_link_t *l); /* NULL until
                                                                known */
const uint8_t *dgram_link_peer_rsa_id(const dgram_link_t *l); /* same */
const pc_addr_t *dgram_link_peer_addr(const dgram_link_t *l);
/* Queue a record of an upper-layer type: 0; -1 if the link is not up,
 * the type is a link-layer one or the body exceeds
 * dgram_link_max_record(). */
int dgram_link_send(dgram_link_t *l, uint8_t type, const uint8_t *body,
                    size_t len);
size_t dgram_link_max_record(const dgram_link_t *l);
/* Whether the bandwidth limits let the upper layer send more to l's peer
 * now: 1; or 0, and wake(arg) is called once when they do (one pending
 * wake per (wake, arg); records sent anyway still go, and are counted). */
typedef void (*dgram_wake_fn)(void *arg);
int dgram_link_may_write(dgram_link_t *l, dgram_wake_fn wake, void *arg);
/* Forget a pending wake (before arg is freed). */
void dgram_cancel_wake(dgram_t *d, dgram_wake_fn wake, void *arg);
void dgram_link_flush(dgram_link_t *l);
void dgram_link_close(dgram_link_t *l, const char *why);

typedef void (*dgram_record_cb)(dgram_link_t *l, uint8_t type,
                                const uint8_t *body, size_t len, void *arg);
/* One handler per type >= DGRAM_REC_USER_MIN; NULL unregisters. -1 if the
 * type is the link layer's or taken by another handler. */
int dgram_register_handler(dgram_t *d, uint8_t type, dgram_record_cb cb,
                           void *arg);

typedef void (*dgram_link_cb)(dgram_link_t *l, int up, const char *why,
                              void *arg);
#define DGRAM_MAX_OBSERVERS 4
int dgram_add_link_observer(dgram_t *d, dgram_link_cb cb, void *arg);
void dgram_remove_link_observer(dgram_t *d, dgram_link_cb cb, void *arg);

typedef struct dgram_link_stats_t {
  uint64_t dgrams_in, dgrams_out, bytes_in, bytes_out;
  uint64_t records_in, records_out;
  uint64_t dropped_dtls;    /* replayed, forged, truncated: no record */
  uint64_t dropped_frame;   /* bad frame (version, truncated record) */
  uint64_t dropped_type;    /* records of a type nobody handles */
  uint64_t dropped_early;   /* upper-layer records before authentication */
  uint64_t send_failed;     /* the socket refused a datagram */
  uint64_t rtt_us;          /* last PING/PONG round trip, 0 if none */
  int up, initiator;
} dgram_link_stats_t;
void dgram_link_get_stats(const dgram_link_t *l, dgram_link_stats_t *out);

typedef struct dgram_stats_t {
  unsigned links, links_up; /* now */
  uint64_t links_opened, links_accepted, links_authenticated, links_closed;
  uint64_t auth_failed;      /* a peer's identity or proof was refused */
  uint64_t handshake_failed; /* DTLS failed or timed out */
  uint64_t hello_verify_sent;   /* cookies sent (stateless) */
  uint64_t dropped_no_link;     /* from unknown sources, not a valid
                                 * ClientHello: ignored without state */
  uint64_t refused_full;        /* valid cookie, but too many links (or
                                 * 4 unauthenticated from that address) */
  uint64_t dropped_oversize;    /* datagrams longer than the MTU */
  uint64_t dropped_rcvbuf;      /* dropped by the kernel: the receive
                                 * buffer was full (SO_RXQ_OVFL) */
  uint64_t rcvbuf_bytes;        /* the receive buffer the kernel gave */
  uint64_t dropped_dtls, dropped_frame, dropped_type, dropped_early;
  uint64_t records_in, records_out, dgrams_in, dgrams_out;
} dgram_stats_t;
void dgram_get_stats(const dgram_t *d, dgram_stats_t *out);
/* Visit every link. */
void dgram_foreach_link(const dgram_t *d,
                        void (*fn)(const dgram_link_t *l, void *arg),
                        void *arg);

/* ---- the circuit transport choice (torrc CircuitTransport) ---- */
typedef enum {
  CIRCUIT_TRANSPORT_TLS = 0,
  CIRCUIT_TRANSPORT_PCTCP = 1,
  CIRCUIT_TRANSPORT_DTLS_TCP = 2,
  CIRCUIT_TRANSPORT_BACKTAP = 3,
} circuit_transport_t;
const char *circuit_transport_name(circuit_transport_t t);
/* Whether this build carries circuits over t (dtls-tcp: only when built
 * with lwIP, lib/utcp). */
int circuit_transport_is_supported(circuit_transport_t t);
/* The peer policy: the transport an extension to a peer uses when
 * `configured` is wanted. Datagram transports need a peer that announced
 * a DatagramPort and an authenticated link to it (peer_link_up), and
 * supported code; otherwise the extension uses TLS as today (and pctcp
 * stays pctcp). */
circuit_transport_t circuit_transport_for_peer(circuit_transport_t configured,
                                               int peer_offers_dgram,
                                               int peer_link_up);
#endif
