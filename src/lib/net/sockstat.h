/* SPDX-License-Identifier: BSD-3-Clause */
/* sockstat.h -- what the kernel says about a TCP socket's sending side.
 *
 * The scheduler asks, once per run and per connection, how many bytes the
 * kernel could put on the wire soon (the KIST idea: do not bury cells in a
 * kernel send buffer where nobody can reorder them any more); MeasureMe
 * records the same figures per circuit. Linux only (TCP_INFO,
 * SIOCOUTQ/SIOCOUTQNSD); elsewhere, and on non-TCP sockets,
 * sockstat_tcp() fails and callers fall back to not knowing.
 */
#ifndef PCTOR_LIB_NET_SOCKSTAT_H
#define PCTOR_LIB_NET_SOCKSTAT_H
#include <stdint.h>

typedef struct sockstat_tcp_t {
  uint32_t cwnd;          /* congestion window, segments */
  uint32_t unacked;       /* segments sent, not yet acknowledged */
  uint32_t mss;           /* sender MSS, bytes */
  uint32_t rtt_us;        /* smoothed RTT */
  uint32_t rttvar_us;
  uint32_t total_retrans; /* segments retransmitted over the lifetime */
  uint32_t notsent;       /* bytes in the send queue never sent */
  uint32_t outq;          /* bytes in the send queue (sent or not) */
  uint32_t ssthresh;      /* slow-start threshold, segments (0: not set
                           * yet, still in the first slow start) */
  uint32_t rto_us;        /* retransmission timeout now */
  uint32_t snd_wnd;       /* the peer's receive window, bytes (0: unknown) */
  uint32_t sndbuf_full;   /* times a cell found the send buffer full,
                           * and the milliseconds until it had room
                           * again, over the connection's lifetime
                           * (TCP-over-DTLS only; 0 for the kernel's) */
  uint32_t sndbuf_full_ms;
} sockstat_tcp_t;

/* Whether this build can ask the kernel at all (1 on Linux). */
int sockstat_tcp_available(void);

/* Fill *out for the TCP socket fd. Returns 0, or -1 (errno set) if fd is
 * not a TCP socket or the kernel cannot say. */
int sockstat_tcp(int fd, sockstat_tcp_t *out);

/* As sockstat_tcp() without outq (left 0): one system call on Linux >=
 * 4.6, for callers that ask often (the scheduler's KIST limit). */
int sockstat_tcp_send(int fd, sockstat_tcp_t *out);

/* KIST's write limit for one scheduling run: the bytes that fit the free
 * part of the congestion window plus factor x cwnd x mss, minus what
 * already waits unsent in the kernel; never negative. */
int64_t sockstat_kist_limit(const sockstat_tcp_t *st, double factor);
#endif
