/* SPDX-License-Identifier: BSD-3-Clause */
/* sockstat.c -- TCP_INFO and send-queue sizes of a TCP socket (Linux).
 *
 * The scheduler asks once per run and per connection with data, so the
 * number of system calls matters: Linux's own struct tcp_info (from
 * <linux/tcp.h>; glibc's copy stops before the newer fields) carries the
 * unsent bytes since Linux 4.6, so one getsockopt answers what KIST needs;
 * SIOCOUTQNSD is asked only of older kernels, and SIOCOUTQ (the whole
 * send queue, which only MeasureMe records) only by sockstat_tcp().
 */
#include "lib/net/sockstat.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#ifdef __linux__
#include <linux/sockios.h>
#include <linux/tcp.h>
#else
#include <netinet/tcp.h>
#endif

int
sockstat_tcp_available(void)
{
#if defined(__linux__) && defined(TCP_INFO)
  return 1;
#else
  return 0;
#endif
}

/* Fill *out from TCP_INFO (and, with want_outq, SIOCOUTQ). */
static int
sockstat_query(int fd, sockstat_tcp_t *out, int want_outq)
{
#if defined(__linux__) && defined(TCP_INFO)
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
    return -1;
  memset(out, 0, sizeof(*out));
  out->cwnd = ti.tcpi_snd_cwnd;
  out->unacked = ti.tcpi_unacked;
  out->mss = ti.tcpi_snd_mss;
  out->rtt_us = ti.tcpi_rtt;
  out->rttvar_us = ti.tcpi_rttvar;
  out->total_retrans = ti.tcpi_total_retrans;
  /* The kernel says TCP_INFINITE_SSTHRESH before the first loss. */
  out->ssthresh =
      ti.tcpi_snd_ssthresh >= 0x7fffffffu ? 0 : ti.tcpi_snd_ssthresh;
  out->rto_us = ti.tcpi_rto;
  int n = 0;
  if (want_outq && ioctl(fd, SIOCOUTQ, &n) == 0 && n > 0)
    out->outq = (uint32_t)n;
  if (len >= offsetof(struct tcp_info, tcpi_notsent_bytes) +
                 sizeof(ti.tcpi_notsent_bytes)) {
    out->notsent = ti.tcpi_notsent_bytes;
  } else {
#ifdef SIOCOUTQNSD
    n = 0;
    if (ioctl(fd, SIOCOUTQNSD, &n) == 0 && n > 0)
      out->notsent = (uint32_t)n;
#endif
  }
  return 0;
#else
  (void)fd;
  (void)out;
  (void)want_outq;
  errno = ENOTSUP;
  return -1;
#endif
}

int
sockstat_tcp(int fd, sockstat_tcp_t *out)
{
  return sockstat_query(fd, out, 1);
}

int
sockstat_tcp_send(int fd, sockstat_tcp_t *out)
{
  return sockstat_query(fd, out, 0);
}

int64_t
sockstat_kist_limit(const sockstat_tcp_t *st, double factor)
{
  int64_t window = (int64_t)st->cwnd * st->mss;
  int64_t free_cwnd = st->cwnd > st->unacked
                          ? (int64_t)(st->cwnd - st->unacked) * st->mss
                          : 0;
  int64_t extra = (int64_t)((double)window * factor) - (int64_t)st->notsent;
  int64_t limit = free_cwnd + extra;
  return limit > 0 ? limit : 0;
}
