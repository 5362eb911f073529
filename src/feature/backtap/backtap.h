/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap.h -- BackTap, the hop-by-hop transport of Tschorsch & Scheuermann
 * (NSDI 2016, sections 3.2-3.4), as a pure protocol engine.
 *
 * One backtap_link_t is one relay pair (one DTLS session of the datagram
 * link layer); it holds one backtap_flow_t per circuit on that pair. A flow
 * is bidirectional: its send half numbers our cells towards the peer, keeps
 * them until ACKed and counts them in flight until FWDed; its receive half
 * takes the peer's cells in order, ACKs them on arrival and FWDs them when
 * the circuit layer says the cell has left towards the next hop (or was
 * consumed at the circuit's end). That FWD is the backpressure: a circuit
 * whose next hop is slow FWDs slowly, so its previous hop's window fills.
 *
 * The engine has no sockets, clocks or timers of its own. Below it
 * (backtap_lower_ops_t): send a record, the time, one timer per link. Above
 * it (backtap_upper_ops_t): a new circuit opened by the peer, a cell
 * delivered in order, a flow whose window opened, a peer that stopped
 * acknowledging. Callbacks must not free the link; deliver() may close or
 * free its own flow (done when the cells it is handing over are through),
 * other callbacks must not free flows. Wire formats: backtap_wire.h,
 * doc/backtap.md.
 */
#ifndef PCTOR_FEATURE_BACKTAP_BACKTAP_H
#define PCTOR_FEATURE_BACKTAP_BACKTAP_H
#include <stddef.h>
#include <stdint.h>

#include "feature/backtap/backtap_wire.h"

typedef struct backtap_link_t backtap_link_t;
typedef struct backtap_flow_t backtap_flow_t;

typedef struct backtap_params_t {
  unsigned alpha, beta;        /* Vegas thresholds, cells (2, 4) */
  unsigned swnd_init;          /* initial sending window, cells (2) */
  unsigned swnd_max;           /* window cap and receive window (1024) */
  unsigned link_max_cells;     /* cells held per link and direction (16384) */
  unsigned max_flows;          /* circuits per link (16384) */
  uint64_t rto_init_us;        /* RFC 6298 initial RTO (1 s) */
  uint64_t rto_min_us;         /* lower bound (200 ms; RFC 6298 says 1 s) */
  uint64_t rto_max_us;         /* upper bound (60 s) */
  unsigned max_backoffs;       /* RTOs/probes unanswered before the peer
                                * is declared dead (8) */
  unsigned dupack_thresh;      /* fast retransmit (3) */
} backtap_params_t;

void backtap_params_default(backtap_params_t *p);

typedef struct backtap_lower_ops_t {
  /* Monotonic time in microseconds. */
  uint64_t (*now_us)(void *arg);
  /* Hand one record to the link layer for the peer (it may pack several
   * into a datagram). Loss is fine: BackTap retransmits. */
  void (*send_record)(void *arg, backtap_rec_type_t type, const uint8_t *rec,
                      size_t len);
  /* Call backtap_link_timer() once at or after deadline_us (one-shot);
   * replaces the previous request; UINT64_MAX cancels. deadline_us may be
   * now (feedback waits to be sent: run it after the current event). */
  void (*set_timer)(void *arg, uint64_t deadline_us);
} backtap_lower_ops_t;

typedef struct backtap_upper_ops_t {
  /* The peer opened a circuit (a SYN cell for an unknown circuit ID).
   * Return 0 and set *flow_arg to accept it; the cell then follows through
   * deliver(). Non-zero refuses (the cell is dropped, nothing is kept). */
  int (*flow_open)(void *arg, backtap_link_t *link, uint32_t circid,
                   void **flow_arg);
  /* A cell arrived in order: link_cell is the 514-byte link cell. The upper
   * layer queues it and calls backtap_flow_forwarded(flow, seq) when it has
   * left towards the next hop (or was consumed at the circuit's end). */
  void (*deliver)(void *arg, backtap_flow_t *flow, uint32_t seq,
                  const uint8_t *link_cell);
  /* backtap_flow_can_send() became true after it had been false. */
  void (*writable)(void *arg, backtap_flow_t *flow);
  /* The peer stopped acknowledging (max_backoffs timeouts in a row with
   * nothing at all from it meanwhile): the link refuses everything from
   * now on; free it (and its circuits). */
  void (*link_failed)(void *arg, backtap_link_t *link, const char *why);
  /* One circuit got no answer max_backoffs times in a row while the peer
   * answered for others: close the circuit. The engine forgets the flow
   * when this returns (do not use or free it). May be NULL. */
  void (*flow_failed)(void *arg, backtap_flow_t *flow, const char *why);
} backtap_upper_ops_t;

typedef struct backtap_stats_t {
  uint64_t cells_sent, cells_retransmitted, fast_retransmits, timeouts;
  uint64_t probes_sent, flows_failed;
  uint64_t cells_received, cells_delivered, cells_out_of_order;
  uint64_t feedback_sent, feedback_received;
  /* dropped without state: */
  uint64_t malformed;      /* truncated, overlong, reserved bits */
  uint64_t unknown_flow;   /* no such circuit (and no SYN, or refused) */
  uint64_t duplicate;      /* cell already received: replay or lost ACK */
  uint64_t out_of_window;  /* cell beyond the receive window, or before SYN */
  uint64_t excess_dropped; /* deliberate drop: link budget exhausted */
  uint64_t forged_feedback;/* ACK/FWD for cells never sent, FWD > ACK */
  uint64_t stale_feedback; /* feedback that moved nothing */
} backtap_stats_t;

backtap_link_t *backtap_link_new(const backtap_params_t *params,
                                 const backtap_lower_ops_t *lower,
                                 void *lower_arg,
                                 const backtap_upper_ops_t *upper,
                                 void *upper_arg);
void backtap_link_free_(backtap_link_t *link);
#define backtap_link_free(l) do { backtap_link_free_(l); (l) = NULL; } while (0)

/* One record from the peer. 0 if used, -1 if dropped (counted). */
int backtap_link_input(backtap_link_t *link, backtap_rec_type_t type,
                       const uint8_t *rec, size_t len);
/* The timer requested through set_timer() fired. */
void backtap_link_timer(backtap_link_t *link);
/* Send pending ACK/FWD feedback now (otherwise sent from the timer). */
void backtap_link_flush(backtap_link_t *link);
const backtap_stats_t *backtap_link_stats(const backtap_link_t *link);
/* Minimum FWD round trip over all circuits of the link (UINT64_MAX before
 * the first sample). */
uint64_t backtap_link_base_rtt_us(const backtap_link_t *link);
/* Bytes the engine holds for the link (cells to retransmit, out-of-order
 * cells, per-circuit state), for MaxMemInQueues. */
size_t backtap_link_mem_bytes(const backtap_link_t *link);
int backtap_link_is_dead(const backtap_link_t *link);
size_t backtap_link_n_flows(const backtap_link_t *link);

/* A circuit on the link, opened by us. NULL if the ID is in use, the link
 * has max_flows circuits or is dead. */
backtap_flow_t *backtap_flow_new(backtap_link_t *link, uint32_t circid,
                                 void *flow_arg);
/* Forget the circuit now. Accepts NULL. */
void backtap_flow_free_(backtap_flow_t *flow);
#define backtap_flow_free(f) do { backtap_flow_free_(f); (f) = NULL; } while (0)
/* Forget the circuit once the peer has ACKed every cell sent (at once if it
 * has). Meanwhile nothing more is sent or delivered on it: cells delivered
 * and not yet forwarded count as forwarded, and cells the peer still sends
 * are ACKed and FWDed and dropped, so the peer's side can close too. */
void backtap_flow_close(backtap_flow_t *flow);

/* May one more cell be sent now (window, link budget)? When this returns 0
 * the upper layer is told through writable() when it may. */
int backtap_flow_can_send(backtap_flow_t *flow);
/* Send the 514-byte link cell (its circuit ID field is replaced by the
 * flow's). 0, or -1 if backtap_flow_can_send() is false. */
int backtap_flow_send(backtap_flow_t *flow, const uint8_t *link_cell);
/* The delivered cell seq has left towards the next hop: FWD it. Cells are
 * forwarded in order; -1 if seq is not the next one to forward. */
int backtap_flow_forwarded(backtap_flow_t *flow, uint32_t seq);

/* PATH (backtap_wire.h): say it in our SYN (before the first cell is
 * sent: 0, else -1); whether the peer's SYN said it (0 before it came). */
int backtap_flow_set_path(backtap_flow_t *flow);
int backtap_flow_peer_path(const backtap_flow_t *flow);
void *backtap_flow_arg(const backtap_flow_t *flow);
uint32_t backtap_flow_circid(const backtap_flow_t *flow);
backtap_link_t *backtap_flow_link(const backtap_flow_t *flow);
unsigned backtap_flow_swnd(const backtap_flow_t *flow);
/* Cells sent and not yet FWDed (what the window limits). */
unsigned backtap_flow_inflight(const backtap_flow_t *flow);
/* Bytes the engine holds for this circuit (its share of
 * backtap_link_mem_bytes()), for the memory handler. */
size_t backtap_flow_mem_bytes(const backtap_flow_t *flow);
/* Cells received in order and not yet forwarded (the fused queue). */
unsigned backtap_flow_queued(const backtap_flow_t *flow);
uint64_t backtap_flow_srtt_us(const backtap_flow_t *flow);
uint64_t backtap_flow_rto_us(const backtap_flow_t *flow);

/* A flow's state at a glance (MeasureMe's per-circuit records). Times in
 * microseconds, 0 where nothing was measured yet. */
typedef struct backtap_flow_info_t {
  uint32_t swnd;       /* the Vegas window, cells */
  uint32_t inflight;   /* sent, not yet FWDed (what swnd limits) */
  uint32_t unacked;    /* sent, not yet ACKed (kept for retransmission) */
  uint32_t queued;     /* received in order here, not yet forwarded */
  uint32_t base_rtt_us;/* the link's baseRtt (smallest FWD round trip) */
  uint32_t act_rtt_us; /* actualRtt of the last round trip with a sample */
  uint32_t srtt_us, rto_us; /* the ACK round trip's SRTT and the RTO */
  uint32_t retransmitted; /* cells of this flow sent again, lifetime */
  uint32_t dropped;    /* cells of this flow dropped before ACK here */
  uint32_t slow_start; /* 1 while in slow start */
} backtap_flow_info_t;
void backtap_flow_info(const backtap_flow_t *flow, backtap_flow_info_t *out);

#endif
