/* SPDX-License-Identifier: BSD-3-Clause */
/* sockstat.c -- TCP_INFO and send-queue sizes of a TCP socket (Linux). */
#include "lib/net/sockstat.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#ifdef __linux__
#include <linux/sockios.h>
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

int
sockstat_tcp(int fd, sockstat_tcp_t *out)
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
  int n = 0;
  if (ioctl(fd, SIOCOUTQ, &n) == 0 && n > 0)
    out->outq = (uint32_t)n;
  n = 0;
#ifdef SIOCOUTQNSD
  if (ioctl(fd, SIOCOUTQNSD, &n) == 0 && n > 0)
    out->notsent = (uint32_t)n;
#endif
  return 0;
#else
  (void)fd;
  (void)out;
  errno = ENOTSUP;
  return -1;
#endif
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
