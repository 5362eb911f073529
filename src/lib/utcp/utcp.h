/* SPDX-License-Identifier: BSD-3-Clause */
/* utcp.h -- TCP in user space over segments the caller carries: lwIP's
 * TCP (Debian's liblwip, raw API, no threads) behind pctor's own types,
 * the only user of <lwip/...> (as lib/tls/dtls is OpenSSL's DTLS over
 * caller-carried datagrams). For TCP-over-DTLS (feature/dtcp): one TCP
 * connection per circuit hop, its segments carried as records of the
 * datagram link to the peer relay.
 *
 * One stack per process (lwIP keeps global state): utcp_new() refuses a
 * second. A *peer* is one remote party reached through one output
 * function (one datagram link); every peer gets a private pseudo IPv4
 * address in the stack, so that lwIP demultiplexes connections by
 * (peer, port pair) as usual. What travels is the TCP segment alone (no
 * IP header): the receiver rebuilds the header with the addresses of its
 * own stack, so the two stacks need not agree on any address (utcp.c).
 * Each peer may open connections to the other; a connection accepted from
 * a peer is offered to the peer's accept callback.
 *
 * Everything runs on the event loop thread. lwIP is not re-entrant: the
 * output function must not call back into utcp (queue the segment; the
 * datagram link does). Callbacks may call any utcp function; closing a
 * connection inside a callback is deferred to the end of the call into
 * lwIP. Timers (retransmission, delayed ACKs) run from one event loop
 * timer.
 *
 * Bounds: a connection holds at most 64 KiB queued for sending and at
 * most the receive window (64 KiB) out of order; what they hold is set in
 * the memory budget (MEMACCT_UTCP) as it changes. Connections per peer
 * are capped by the caller's accept callback, half-open ones and the SYN
 * rate per peer here (utcp.c).
 *
 * Built without lwIP (no HAVE_LWIP), utcp_available() is 0 and utcp_new()
 * fails; nothing else may be called.
 */
#ifndef PCTOR_LIB_UTCP_UTCP_H
#define PCTOR_LIB_UTCP_UTCP_H
#include <stddef.h>
#include <stdint.h>

#include "lib/evloop/evloop.h"

typedef struct utcp_t utcp_t;
typedef struct utcp_peer_t utcp_peer_t;
typedef struct utcp_conn_t utcp_conn_t;

/* The largest segment utcp_peer_input() accepts and the output function
 * gets (TCP header included) is the seg_max given to utcp_new(), at most
 * UTCP_SEG_MAX. */
#define UTCP_SEG_MAX 1460
#define UTCP_SEG_MIN 20

/* Whether this build has a user-level TCP stack (lwIP). */
int utcp_available(void);
/* Name and version of the stack, for the log ("lwIP 2.1.3"). */
const char *utcp_stack_name(void);

/* The stack. seg_max: the largest segment (header included) the carrier
 * can take, >= 536. NULL (with a log line) without lwIP or when a stack
 * exists already. */
utcp_t *utcp_new(evloop_t *loop, size_t seg_max);
/* Every peer must have been freed. */
void utcp_free_(utcp_t *u);
#define utcp_free(x) do { utcp_free_(x); (x) = NULL; } while (0)

typedef struct utcp_conn_ops_t {
  /* In-order bytes (may be called several times per segment). The
   * receive window reopens only by utcp_conn_consumed(). */
  void (*recv)(void *arg, const uint8_t *data, size_t len);
  /* The peer acknowledged data: utcp_conn_room() may have grown. */
  void (*sent)(void *arg);
  /* The connection is over (peer's FIN, reset, timeout, peer freed): the
   * conn is freed after this returns; no other call comes. */
  void (*closed)(void *arg, const char *why);
} utcp_conn_ops_t;

/* Output: one segment for the peer (header included), len <= seg_max. */
typedef void (*utcp_output_fn)(void *peer_arg, const uint8_t *seg,
                               size_t len);
/* A connection the peer opened: return its ops and set *conn_arg, or NULL
 * to refuse it (it is reset). */
typedef const utcp_conn_ops_t *(*utcp_accept_fn)(void *peer_arg,
                                                 utcp_conn_t *c,
                                                 void **conn_arg);

/* A new peer; NULL when the stack's pseudo addresses are exhausted. */
utcp_peer_t *utcp_peer_new(utcp_t *u, utcp_output_fn out,
                           utcp_accept_fn accept, void *peer_arg);
/* Every open connection of the peer gets closed(), then every connection
 * the stack still has with it (closing, TIME_WAIT) is dropped. */
void utcp_peer_free_(utcp_peer_t *p);
#define utcp_peer_free(x) do { utcp_peer_free_(x); (x) = NULL; } while (0)
/* A segment from the peer: 0, or -1 when it was dropped before the stack
 * saw it (too short or long, bad header, SYN over the rate limit). */
int utcp_peer_input(utcp_peer_t *p, const uint8_t *seg, size_t len);
unsigned utcp_peer_n_conns(const utcp_peer_t *p);
/* New connections the peer may open: per second and in a burst (defaults
 * UTCP_SYN_RATE and UTCP_SYN_BURST, a CPU guard; tests change them). Half-
 * open connections are capped apart from this (utcp.c). */
#define UTCP_SYN_RATE 1024
#define UTCP_SYN_BURST 1024
void utcp_peer_set_syn_limit(utcp_peer_t *p, unsigned rate, unsigned burst);

/* Open a connection to the peer (SYN sent at once). Data may be written
 * before it is established. NULL if the stack refuses (no port left). */
utcp_conn_t *utcp_connect(utcp_peer_t *p, const utcp_conn_ops_t *ops,
                          void *arg);
/* Bytes utcp_conn_write() takes now. */
size_t utcp_conn_room(const utcp_conn_t *c);
/* Queue len bytes (copied), all or nothing: 0, or -1 (no room). Queued
 * data leaves at the end of the event loop iteration (or at once with
 * utcp_conn_flush()). */
int utcp_conn_write(utcp_conn_t *c, const uint8_t *data, size_t len);
void utcp_conn_flush(utcp_conn_t *c);
/* The receiver has passed on n bytes: the window reopens by n. */
void utcp_conn_consumed(utcp_conn_t *c, size_t n);
/* Send what is queued, then FIN; the connection lingers in the stack
 * without callbacks. c is invalid afterwards. */
void utcp_conn_close(utcp_conn_t *c);
/* Reset at once, dropping queued data. c is invalid afterwards. */
void utcp_conn_abort(utcp_conn_t *c);
/* Bytes the stack holds for c (send queue, out-of-order segments) and its
 * control block. */
size_t utcp_conn_mem(const utcp_conn_t *c);
/* The local and remote ports (for logs and tests). */
void utcp_conn_ports(const utcp_conn_t *c, uint16_t *local, uint16_t *remote);

/* What limits a connection's sending now (the TCP_INFO of the stack):
 * the stack's own state plus utcp's retransmission count. lwIP measures
 * RTT in ticks of its 500 ms slow timer, so rtt/rttvar/rto are multiples
 * of 500 ms (an RTT under one tick reads 0). */
typedef struct utcp_conn_info_t {
  uint32_t mss;                   /* bytes */
  uint32_t cwnd, ssthresh;        /* bytes */
  uint32_t snd_wnd;               /* the peer's advertised window, bytes */
  uint32_t rcv_wnd;               /* our receive window open now, bytes */
  uint32_t inflight;              /* sent, not acknowledged, bytes */
  uint32_t unacked_segs;          /* ... in segments */
  uint32_t unsent;                /* queued, never sent, bytes */
  uint32_t queued;                /* in the send buffer (sent or not) */
  uint32_t snd_buf_max;           /* the stack's send buffer (TCP_SND_BUF) */
  uint32_t wnd_max;               /* its largest receive window (TCP_WND) */
  uint32_t rtt_ms, rttvar_ms, rto_ms;
  uint64_t retrans;               /* segments sent again */
  uint64_t timeouts;              /* retransmission timeouts */
  uint64_t fast_retransmits;      /* fast retransmits (3 duplicate ACKs) */
} utcp_conn_info_t;
/* 0, or -1 when the connection has no control block any more. */
int utcp_conn_info(const utcp_conn_t *c, utcp_conn_info_t *out);

typedef struct utcp_stats_t {
  unsigned peers, conns;           /* now */
  uint64_t segs_in, segs_out, bytes_in, bytes_out;
  uint64_t dropped_bad;            /* malformed before the stack */
  uint64_t dropped_syn_rate;       /* SYNs over a peer's rate or its
                                    * half-open limit */
  uint64_t dropped_no_peer;        /* output for a peer that is gone */
  uint64_t conns_opened, conns_accepted, conns_refused;
  uint64_t mem_bytes;              /* what connections hold now */
  uint64_t retrans;                /* data segments sent again */
  uint64_t timeouts;               /* retransmission timeouts (each counted
                                    * once, at its first resent segment) */
  uint64_t fast_retransmits;       /* fast retransmits, likewise */
  size_t pcb_bytes;                /* the stack's control block per
                                    * connection (sizeof) */
} utcp_stats_t;
void utcp_get_stats(const utcp_t *u, utcp_stats_t *out);
#endif
