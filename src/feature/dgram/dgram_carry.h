/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_carry.h -- circuit hops carried over the datagram links: the glue
 * that BackTap (feature/btcirc) and TCP-over-DTLS (feature/dtcp) share.
 *
 * Both transports do the same things around their own engine: one
 * instance per process that attaches to the datagram links (record
 * handlers, a link observer), to the circuit layer (a carrier provider
 * for extensions, the packed-cell release hook of their tag class, the
 * memory handler's view of a circuit); one record per authenticated link;
 * one record per circuit hop holding a carried channel (core/or/channel.h)
 * found through a tag, never through a pointer a cell or a callback keeps;
 * a few "direct" cells (CREATE2, DESTROY) the circuit layer writes while
 * the engine has no room, sent when it has; the choice of transport for an
 * extension with its log lines and counters. This module does all of that
 * once; a transport supplies a dgram_carry_ops_t with what differs (its
 * engine per link and per hop) and embeds dgram_carry_link_t and
 * dgram_carry_hop_t as the first member of its own records (the sizes in
 * the ops), so a callback's record is the transport's record.
 *
 * Tags carry the transport's class (cell_queue.h, one transport per
 * class): the release hook, the carrier ops and the memory handler find
 * the instance from the tag's class, so one set of hooks serves every
 * transport. Links are kept in a map of our own (dgram link -> record),
 * so two transports can sit on the same datagram link.
 *
 * Bandwidth limits (BandwidthRate, RelayBandwidthRate): a hop's channel
 * may send a cell only while the datagram link layer has write tokens
 * (dgram_link_may_write()); hops told no wait in a list and their channels
 * are woken at the refill. Direct cells and what the engines send by
 * themselves are not held back (they are counted).
 *
 * Lifetimes: a hop lives while its channel is open or, after the channel
 * closed, while direct cells still wait (at most DGRAM_CARRY_LINGER_US);
 * then the transport's hop_close ends the engine's side and the record is
 * freed. A link that goes down closes the channels of its hops (and so
 * their circuits) and frees everything.
 */
#ifndef PCTOR_FEATURE_DGRAM_DGRAM_CARRY_H
#define PCTOR_FEATURE_DGRAM_DGRAM_CARRY_H
#include <stddef.h>
#include <stdint.h>

#include "core/or/channel.h"
#include "core/proto/cell.h"
#include "feature/dgram/dgram.h"
#include "lib/container/dlist.h"
#include "lib/evloop/evloop.h"
#include "lib/net/sockstat.h"

#define DGRAM_CARRY_DIRECT_MAX 4   /* direct cells waiting per hop */
#define DGRAM_CARRY_LINGER_US (30 * 1000000ULL)

typedef struct dgram_carry_t dgram_carry_t;

typedef struct dgram_carry_link_t {
  dgram_carry_t *c;
  dgram_link_t *dl;
  dlist_t hops;                   /* dgram_carry_hop_t */
  dlist_node_t node;              /* in the instance's list */
} dgram_carry_link_t;

typedef struct dgram_carry_hop_t {
  uint64_t tag;
  dgram_carry_link_t *lk;
  channel_t *chan;                /* NULL once the channel closed */
  dlist_node_t node;              /* in lk->hops */
  unsigned n_direct;
  uint8_t (*direct)[CELL_MAX_NETWORK_LEN]; /* on first use */
  uint64_t linger_until_us;       /* channel gone, direct cells wait */
  dlist_node_t bw_node;           /* waiting for bandwidth tokens */
} dgram_carry_hop_t;

typedef struct dgram_carry_ops_t {
  const char *name;               /* "BackTap": log lines */
  const char *chan_kind;          /* "BackTap": the channel's transport
                                   * (channel_transport_name()) */
  circuit_transport_t transport;  /* what CircuitTransport names it */
  unsigned tag_class;             /* 0-3, one transport per class */
  size_t link_size, hop_size;     /* >= the embedded records */
  uint8_t record_types[2];        /* dgram records handled (0: none) */
  /* A cell is released to the peer only once it left this relay (the
   * channels get channel_carried_set_backpressure()). */
  int backpressure;
  /* A link came up: start the engine (0), or -1 to leave it alone. */
  int (*link_up)(dgram_carry_link_t *lk);
  /* The link goes: before its hops are freed (may be NULL) and after. */
  void (*link_stop)(dgram_carry_link_t *lk);
  void (*link_down)(dgram_carry_link_t *lk);
  /* A record of one of record_types on the link. */
  void (*record)(dgram_carry_link_t *lk, uint8_t type, const uint8_t *body,
                 size_t len);
  /* Whether the link may carry new hops besides being up (may be NULL). */
  int (*link_usable)(dgram_carry_link_t *lk);
  /* An outgoing hop: open its engine side; NULL, or why it cannot (the
   * hop is then freed and the extension uses TLS). */
  const char *(*hop_connect)(dgram_carry_hop_t *h);
  /* Before a cell is written: 0 if the hop can take cells (make what the
   * first cell needs), -1 if not (the cell is lost). May be NULL. */
  int (*hop_ready)(dgram_carry_hop_t *h, const uint8_t *cell);
  /* Room for one cell now (false without an engine side). */
  int (*hop_can_send)(dgram_carry_hop_t *h);
  /* The hop's sending window now, in cells; 0 without one (may be
   * NULL). The channel's carrier window (channel_carried_window()). */
  unsigned (*hop_window)(const dgram_carry_hop_t *h);
  /* The hop's TCP state (channel_sockstat()): 0, or -1 (may be NULL). */
  int (*hop_sockstat)(const dgram_carry_hop_t *h, sockstat_tcp_t *out);
  /* The hop's flow control state (channel_carried_flowstat()): 0, or -1
   * (may be NULL). */
  int (*hop_flowstat)(const dgram_carry_hop_t *h, channel_flowstat_t *out);
  /* Write one 514-byte cell: 0, or -1. */
  int (*hop_send)(dgram_carry_hop_t *h, const uint8_t *cell);
  /* Whether the engine side still exists (direct cells can still go). */
  int (*hop_alive)(const dgram_carry_hop_t *h);
  /* End the engine side of a hop whose channel is gone (gracefully). */
  void (*hop_close)(dgram_carry_hop_t *h);
  /* A cell delivered with this hop's tag has left this relay. */
  void (*released)(dgram_carry_hop_t *h, uint32_t seq);
  /* What the engine holds for the hop (for MaxMemInQueues' handler). */
  size_t (*hop_mem)(const dgram_carry_hop_t *h);
  /* The hop's record is about to be freed (may be NULL). */
  void (*hop_gone)(dgram_carry_hop_t *h);
} dgram_carry_ops_t;

typedef struct dgram_carry_stats_t {
  unsigned links, hops;           /* now */
  uint64_t ext_carried;           /* extensions carried by the transport */
  uint64_t ext_tls;               /* extensions that fell back to TLS */
  uint64_t ext_tls_no_port;       /* ... of them to a relay whose
                                     DatagramPort we do not know (it has
                                     none, or has not announced it to us
                                     yet: no TLS link so far); the others
                                     know a port but had no link up yet,
                                     or the hop could not open */
  uint64_t hops_in;               /* hops peers opened */
  uint64_t hops_refused;          /* ... refused (limit, no identity) */
  uint64_t direct_queued;         /* CREATE/DESTROY waiting for room */
  uint64_t direct_dropped;        /* ... beyond the bound: lost */
  uint64_t bw_blocked;            /* times a hop waited for bandwidth */
} dgram_carry_stats_t;

/* Attach to d and to the circuit layer (see above): NULL with a log line
 * if a hook is taken (the steps taken are undone) or the class is used. */
dgram_carry_t *dgram_carry_new(evloop_t *loop, dgram_t *d,
                               const dgram_carry_ops_t *ops, void *arg);
/* Free every link (closing the hops' channels) and detach. */
void dgram_carry_free_(dgram_carry_t *c);
#define dgram_carry_free(x) do { dgram_carry_free_(x); (x) = NULL; } while (0)
void *dgram_carry_arg(const dgram_carry_t *c);
/* Whether our extensions to relays with a datagram link use it. */
void dgram_carry_set_outgoing(dgram_carry_t *c, int on);
void dgram_carry_get_stats(const dgram_carry_t *c, dgram_carry_stats_t *out);
void dgram_carry_foreach_link(const dgram_carry_t *c,
                              void (*fn)(const dgram_carry_link_t *lk,
                                         void *arg),
                              void *arg);

/* Hops. */
dgram_carry_hop_t *dgram_carry_hop_by_tag(const dgram_carry_t *c,
                                          uint64_t tag);
/* A hop the peer opens on lk: NULL (counted) without the peer's
 * identities or with max_hops (0: no limit) already on the link. */
dgram_carry_hop_t *dgram_carry_hop_accept(dgram_carry_link_t *lk,
                                          unsigned max_hops);
/* Give an accepted hop its channel (the circuit layer sees the peer). */
void dgram_carry_hop_open_channel(dgram_carry_hop_t *h);
/* A cell arrived for the hop's channel (takes pc, tagged with h's tag and
 * seq). */
void dgram_carry_hop_input(dgram_carry_hop_t *h, const uint8_t *cell,
                           uint32_t seq);
/* The engine has room again: waiting direct cells first, then the
 * channel; a hop whose channel is gone may end. */
void dgram_carry_hop_writable(dgram_carry_hop_t *h);
/* The engine side is gone (failed, reset): forget the hop and close its
 * channel with why. */
void dgram_carry_hop_lost(dgram_carry_hop_t *h, const char *why);
/* Hops of lk whose channel is gone and whose direct cells waited too long
 * end now (call from a timer). */
void dgram_carry_link_reap(dgram_carry_link_t *lk);
/* Free lk (its hops' channels close) and close the datagram link. */
void dgram_carry_link_close(dgram_carry_link_t *lk, const char *why);
#endif
