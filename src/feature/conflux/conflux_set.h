/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_set.h -- one conflux set (proposal 329): the legs that share a
 * stream space, their sequence numbers, the choice of the leg to send on
 * and the reordering of what arrives. No circuits and no I/O here: the
 * owner (the exit role, conflux_exit.c, or the client) keeps a handle per
 * leg, tells the set what it sent and received, and answers the set's
 * questions about a leg's congestion state through a callback. That keeps
 * the protocol logic testable on its own.
 *
 * Sequence numbers (section 2.6): every multiplexed message (the stream
 * commands, relay_command_is_multiplexed) has an implicit absolute
 * sequence number, one more than the previous one the sender sent on any
 * leg. Each side keeps, per leg, the last number sent and received on it.
 * Switching legs, the sender sends CONFLUX_SWITCH on the new leg carrying
 * how far that leg's count is behind (the absolute count minus the leg's
 * last sent) and brings the leg's count up; the receiver adds the same
 * amount to the leg's received count. A message whose number is one more
 * than the last delivered is processed at once; a later one waits in the
 * out-of-order queue (a min-heap on the number) until the gap fills; an
 * earlier or equal one is a protocol violation.
 *
 * The out-of-order queue is bounded (max_ooo messages, each a copy of at
 * most one relay body): when it is full the set must be closed (the owner
 * logs it and closes every leg). Entries are recycled through a free list,
 * so a set in its steady state allocates nothing per message; messages
 * that arrive in order are never copied.
 *
 * The sender's reordering window (not in the proposal; like MPTCP's
 * shared receive window): a leg's SENDMEs acknowledge cells when they
 * arrive, so a fast leg may run far ahead of one cell still on its way on
 * a slower leg, and the receiver holds everything in between. The set
 * remembers, per leg, the numbers of the DATA messages its congestion
 * controller still counts in flight (acknowledged ones leave as the
 * leg's inflight count drops). When the newest number is CFX_SEND_WINDOW
 * or more past the oldest unacknowledged one on another leg, DATA goes
 * only on that laggard leg (which also draws the SENDME that frees the
 * window) or waits for its SENDME. The receiver's queue then stays near
 * the window, whatever the rate and the legs' delays.
 *
 * Schedulers (section 3): which leg carries the next message.
 *   MINRTT        the leg with the lowest RTT, and only it: if its
 *                 congestion window is full, nothing is sent
 *                 (tor's choice for MIN_LATENCY and the low-memory UXs);
 *   LOWRTT        the lowest-RTT leg among those with room in their
 *                 window and no blocked channel (tor's HIGH_THROUGHPUT);
 *   PROPORTIONAL  the splitter of AlSabah et al. ("The Path Less
 *                 Travelled", PETS 2013): DATA goes to a leg with room,
 *                 chosen at random with probability proportional to the
 *                 leg's measured throughput, estimated as cwnd / RTT
 *                 (the congestion controller's rate; the paper used the
 *                 fixed window over the SENDME RTT, which is the same
 *                 quantity with a constant window). The paper drew a leg
 *                 for every cell, which cost nothing there (every cell
 *                 carried its sequence number); here every change of leg
 *                 costs a SWITCH cell, so a drawn leg keeps the next
 *                 CFX_PROP_BURST DATA messages while it has room, and the
 *                 shares stay proportional (each draw buys a burst of the
 *                 same length). Drawn per message, a two-leg set sent
 *                 about one SWITCH per two DATA cells.
 * A leg whose RTT is not known yet counts as infinitely slow (it is used
 * only when no measured leg qualifies). Non-DATA messages are never held
 * back: with no leg available they go on the current leg (section 2.5).
 *
 * Closing a leg (section 2.4.3, as tor 0.4.9 decides it): the whole set is
 * torn down if the leg still had at least a SENDME increment of data in
 * flight, if it was the current sending leg, or if it had sent or
 * received further than every remaining leg; otherwise the others go on.
 * A new leg may join a set only if the peer has not sent more than we
 * delivered (the data-loss check of section 2.4.4).
 */
#ifndef PCTOR_FEATURE_CONFLUX_CONFLUX_SET_H
#define PCTOR_FEATURE_CONFLUX_CONFLUX_SET_H
#include <stddef.h>
#include <stdint.h>

#include "feature/conflux/conflux_cell.h"

/* Legs per set (tor's cfx_max_legs_set default). */
#define CFX_MAX_LEGS 8
/* Default bound of the out-of-order queue, in messages (about 5 MB of
 * relay bodies): enough for a whole slow-start window of one leg arriving
 * ahead of the other. */
#define CFX_DEFAULT_MAX_OOO 32768
#define CFX_BODY_MAX 498
/* The sender's reordering window, in messages (about 4 MB), below the
 * receivers' bound (tor has none; older pctor 10000). */
#define CFX_SEND_WINDOW 8192
/* DATA messages a leg drawn by PROPORTIONAL keeps (one SENDME increment of
 * tor's default congestion control, so a SWITCH costs at most 1/31 of the
 * cells). */
#define CFX_PROP_BURST 31

typedef enum {
  CFX_ALG_MINRTT = 1,
  CFX_ALG_LOWRTT = 2,
  CFX_ALG_PROPORTIONAL = 3,
} cfx_alg_t;

/* tor's mapping from the peer's desired UX to our scheduler. */
cfx_alg_t cfx_alg_for_ux(uint8_t desired_ux);
const char *cfx_alg_name(cfx_alg_t alg);
/* "minrtt", "lowrtt", "proportional" -> alg; -1 if unknown. */
int cfx_alg_from_name(const char *name);

/* A leg's congestion state, as its owner sees it now. */
typedef struct cfx_leg_state_t {
  uint64_t cwnd, inflight; /* cells */
  uint64_t rtt_us;         /* smoothed RTT, 0 if unknown */
  uint32_t sendme_inc;
  int blocked;             /* the local channel cannot take more */
} cfx_leg_state_t;
typedef void (*cfx_leg_state_fn)(void *handle, cfx_leg_state_t *out);

typedef struct cfx_leg_t {
  void *handle;            /* the owner's circuit */
  uint64_t last_seq_sent, last_seq_recv;
  uint64_t link_rtt_us;    /* from the link handshake; 0 until measured */
  uint64_t n_sent, n_recv; /* multiplexed messages, for logs */
  /* Numbers of the DATA messages sent on this leg that its controller
   * still counts in flight, oldest first (a ring; see the window above). */
  uint64_t *unacked;
  uint32_t ua_cap, ua_head, ua_len;
} cfx_leg_t;

typedef struct cfx_msg_t {
  uint64_t seq;
  uint8_t command;
  uint16_t stream_id;
  uint16_t len;
  struct cfx_msg_t *next_free;
  uint8_t body[CFX_BODY_MAX];
} cfx_msg_t;

typedef struct cfx_set_t {
  uint8_t nonce[CFX_NONCE_LEN];
  cfx_leg_t *legs[CFX_MAX_LEGS];
  int n_legs;
  cfx_leg_t *curr, *prev;
  cfx_alg_t alg;
  cfx_leg_state_fn state_fn;
  uint64_t last_seq_delivered;
  /* out-of-order queue: min-heap on seq, and a free list */
  cfx_msg_t **heap;
  uint32_t n_queued, heap_cap, max_ooo;
  cfx_msg_t *free_list;
  uint32_t n_free;
  uint32_t max_queued_seen;
  uint64_t rng;            /* xorshift64* state (PROPORTIONAL) */
  uint32_t burst_left;     /* DATA messages the drawn leg keeps
                            * (PROPORTIONAL) */
  uint64_t n_switches;
  uint64_t n_sent;         /* multiplexed messages sent on any leg */
  uint64_t n_window_waits; /* DATA held back or moved by the window */
} cfx_set_t;

/* The most message bytes the out-of-order queue may hold. */
size_t cfx_set_ooo_bound_bytes(const cfx_set_t *set);
/* A set for this nonce with scheduler alg, a bound of max_ooo queued
 * messages (0: CFX_DEFAULT_MAX_OOO), asking state_fn about legs. */
cfx_set_t *cfx_set_new(const uint8_t nonce[CFX_NONCE_LEN], cfx_alg_t alg,
                       uint32_t max_ooo, cfx_leg_state_fn state_fn);
/* Frees the set, its legs and queued messages (not the handles). */
void cfx_set_free_(cfx_set_t *set);
#define cfx_set_free(s) do { cfx_set_free_(s); (s) = NULL; } while (0)

/* Would a leg whose peer says it sent up to peer_last_seq_sent lose data
 * (section 2.4.4)? It would if the peer sent more than any of our legs
 * received (queued or delivered): 1 yes (refuse it), 0 no. Comparing with
 * what arrived rather than what was delivered lets a replacement leg join
 * while messages of the other legs wait in the out-of-order queue. */
int cfx_set_link_loses_data(const cfx_set_t *set,
                            uint64_t peer_last_seq_sent);
/* Add a leg. The counts come from the peer's LINK/LINKED: our last
 * received is what it sent, our last sent is what it received. NULL if
 * the set already has CFX_MAX_LEGS legs. */
cfx_leg_t *cfx_set_add_leg(cfx_set_t *set, void *handle,
                           uint64_t peer_last_seq_sent,
                           uint64_t peer_last_seq_recv);
cfx_leg_t *cfx_set_find_leg(const cfx_set_t *set, const void *handle);
/* Remove (and free) a leg whose circuit is closing; state is its last
 * congestion state. Returns 1 if the whole set must now be torn down,
 * with *why, else 0. */
int cfx_set_remove_leg(cfx_set_t *set, cfx_leg_t *leg,
                       const cfx_leg_state_t *state, const char **why);

/* SWITCH messages sent by all sets of the process (the event loop's
 * thread), for the MetricsPort. */
uint64_t cfx_switches_total(void);

/* ---- sending ---- */
/* The leg for the next message with this relay command, or NULL (DATA
 * only: no leg can take it now; or no legs). When the choice changes the
 * current leg, *switch_seq is set to the SWITCH value the owner must send
 * on the returned leg before the message and 1 is stored in *send_switch
 * (else 0). -1 in *send_switch: a relative number would not fit in 32
 * bits (the set must be closed). */
cfx_leg_t *cfx_set_pick(cfx_set_t *set, uint8_t command, int *send_switch,
                        uint32_t *switch_seq);
/* Could a DATA message be sent now (what cfx_set_pick would answer),
 * without changing anything? */
int cfx_set_can_send_data(cfx_set_t *set);
/* A message with this command left on leg. */
void cfx_set_note_sent(cfx_set_t *set, cfx_leg_t *leg, uint8_t command);

/* ---- receiving ---- */
/* A SWITCH with this relative number arrived on leg. Returns 0, or -1 if
 * the count would overflow. */
int cfx_set_on_switch(cfx_set_t *set, cfx_leg_t *leg, uint32_t relative);

#define CFX_RECV_DELIVER 1   /* in order: process it now, then drain */
#define CFX_RECV_QUEUED 0    /* copied into the out-of-order queue */
#define CFX_RECV_OLD (-1)    /* number already delivered: violation */
#define CFX_RECV_FULL (-2)   /* the queue bound is hit: close the set */
/* A multiplexed message arrived on leg. */
int cfx_set_on_msg(cfx_set_t *set, cfx_leg_t *leg, uint8_t command,
                   uint16_t stream_id, const uint8_t *body, uint16_t len);
/* The next queued message that is now in order: 1 with *out (give it back
 * with cfx_set_msg_release() once processed), 0 if none, -1 if the queue
 * holds a message whose number was already delivered (a duplicate: close
 * the set). */
int cfx_set_next(cfx_set_t *set, cfx_msg_t **out);
void cfx_set_msg_release(cfx_set_t *set, cfx_msg_t *msg);

/* ---- memory (MaxMemInQueues) ---- */
/* Bytes the out-of-order queue holds while it holds a message: the queued
 * messages, the free list kept for reuse and the heap array; 0 when no
 * message waits (then closing a leg frees nothing of it). */
size_t cfx_set_ooo_bytes(const cfx_set_t *set);
/* The leg those bytes are attributed to (the circuit-level memory
 * accounting needs one circuit to charge them to): the leg that received
 * furthest (the highest last_seq_recv; the first such leg on ties), i.e.
 * the one whose early arrivals wait for the others. NULL when no message
 * waits. Its owner tears the whole set down when that leg closes while
 * messages wait, so closing that circuit frees the queue. */
const cfx_leg_t *cfx_set_ooo_holder(const cfx_set_t *set);

/* Largest last_seq_sent / last_seq_recv over the legs. */
uint64_t cfx_set_max_sent(const cfx_set_t *set);
uint64_t cfx_set_max_recv(const cfx_set_t *set);
/* The RTT the schedulers use for leg: the controller's, else the link
 * handshake's, else 0 (unknown). */
uint64_t cfx_set_leg_rtt(const cfx_set_t *set, const cfx_leg_t *leg);
/* "nonce 1a2b3c4d: 2 legs, delivered 123, queued 0 (max 5), ..." */
void cfx_set_describe(const cfx_set_t *set, char *buf, size_t len);
#endif
