/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-delayd -- emulate per-link delay, jitter and loss by holding
 * NFQUEUE verdicts (the test bed's delay element; this kernel has no
 * sch_netem).
 *
 *   pctor-delayd [-o] [-r] [-P PRIO] [-m MAXHELD] [-s SEED] [-p PIDFILE]
 *                [-k QUEUE] [-v] LINK...
 *   LINK = ID:DELAY_MS[:JITTER_MS[:LOSS_PCT]]
 *
 * Design:
 * - Packets reach us through iptables' NFQUEUE target (e.g. in a router
 *   namespace: FORWARD -i <host veth> for a host's uplink, POSTROUTING
 *   -o <host veth> for its downlink). The kernel keeps each packet; we get
 *   only its metadata (NFQNL_COPY_META, no payload copy) and later send a
 *   verdict: NF_ACCEPT when its deadline passes, NF_DROP when the loss model
 *   says so or when we hold too many packets. One netlink socket serves
 *   every queue. Queues are configured with NFQA_CFG_F_GSO so that GSO
 *   super-packets are not segmented on our account, and without fail-open:
 *   if the daemon is not running, queued packets are dropped rather than
 *   silently passed undelayed.
 * - Without -k every LINK's ID is a queue number (one FIFO queue per link,
 *   which keeps the kernel's verdict lookup at the head of its list). With
 *   -k QUEUE we bind that one queue and a LINK's ID is a packet mark (an nft
 *   map "saddr . daddr : mark" gives per-pair links); packets whose mark
 *   names no link pass at once and are counted as unmatched.
 * - Each packet is stamped with CLOCK_MONOTONIC on receipt; its deadline
 *   (delayq.c: delay + truncated normal jitter, FIFO per link unless -o)
 *   goes into a fixed-capacity min-heap. The loop sleeps in ppoll() with a
 *   nanosecond timeout up to the earliest deadline (timer slack set to
 *   1 ns) and sends all due verdicts in one sendto() batch. Packets are
 *   read with recvmmsg(), up to 32 per system call.
 * - Bounded memory: the heap holds at most MAXHELD packets (default
 *   100000); when full, new packets get NF_DROP and are counted. Each
 *   kernel queue's maxlen is MAXHELD plus a little headroom for messages in
 *   flight, so overload shows in our counters rather than as silent kernel
 *   drops (the kernel's own drop counters are printed too). All buffers are
 *   allocated at start-up; the per-packet path does not allocate.
 * - -r switches to SCHED_FIFO (priority -P, default 10) and locks memory:
 *   without it other processes' CPU use shows up as tens of ms of tail
 *   latency.
 * - Signals: SIGTERM/SIGINT stop cleanly (held packets are released at
 *   once, queues unbound, counters printed); SIGUSR1 and SIGHUP print the
 *   counters. They are blocked except inside ppoll(), so they never
 *   interrupt the packet path. Counters go to stdout as one
 *   "pctor-delayd: stats ..." line per link plus a total line, in
 *   key=value form for scripts; events go to the log (stderr).
 * - -p PIDFILE is written only once every queue is bound, so a script can
 *   wait for it before installing the NFQUEUE rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "tools/delayd/delayq.h"

#define RX_BATCH 32
#define RX_BUFSZ 4096
#define RX_ROUNDS 16          /* recvmmsg calls before releasing again */
#define VBUF_SIZE (64 * 1024) /* verdict batch buffer */
#define VMSG_MAX 64           /* upper bound of one verdict message */
#define DEFAULT_MAXHELD 100000
#define RCVBUF_BYTES (64 * 1024 * 1024)
#define KERNEL_QUEUE_HEADROOM 8192

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_stats;

typedef struct daemon_t {
  struct mnl_socket *nl;
  int fd;
  uint32_t seq;
  delayd_link_t *links;
  uint32_t *order;   /* link indices sorted by id, for lookup */
  size_t n_links;
  int mark_mode;
  uint32_t mark_queue;
  int fifo;
  int draining;      /* shutting down: pass new packets at once */
  delayq_t *q;
  delayd_rng_t rng;
  uint32_t maxheld;
  /* receive */
  struct mmsghdr rx_msgs[RX_BATCH];
  struct iovec rx_iov[RX_BATCH];
  char *rx_buf;
  /* verdict batch */
  char *vbuf;
  size_t vlen;
  /* ack wait (configuration) */
  uint32_t want_seq;
  int got_ack;
  int ack_err;
  /* global counters */
  uint64_t unmatched, nl_errors, truncated, enobufs, send_errors,
    verdict_errors;
} daemon_t;

static uint64_t
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void
on_signal(int sig)
{
  if (sig == SIGTERM || sig == SIGINT)
    g_stop = 1;
  else
    g_stats = 1;
}

/* ---- link lookup ---- */

static int
cmp_order(const void *a, const void *b, void *arg)
{
  const delayd_link_t *l = arg;
  uint32_t x = l[*(const uint32_t *)a].id, y = l[*(const uint32_t *)b].id;
  return x < y ? -1 : x > y;
}

static long
link_find(const daemon_t *d, uint32_t id)
{
  size_t lo = 0, hi = d->n_links;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t v = d->links[d->order[mid]].id;
    if (v == id)
      return (long)d->order[mid];
    if (v < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

static uint32_t
link_queue(const daemon_t *d, const delayd_link_t *l)
{
  return d->mark_mode ? d->mark_queue : l->id;
}

/* ---- verdicts ---- */

static void
verdict_flush(daemon_t *d)
{
  if (!d->vlen)
    return;
  ssize_t r = mnl_socket_sendto(d->nl, d->vbuf, d->vlen);
  if (r < 0) {
    d->send_errors++;
    log_warn("sending %zu bytes of verdicts failed: %s", d->vlen,
             strerror(errno));
  }
  d->vlen = 0;
}

static void
verdict_add(daemon_t *d, uint32_t queue, uint32_t pkt_id, int verdict)
{
  if (d->vlen + VMSG_MAX > VBUF_SIZE)
    verdict_flush(d);
  struct nlmsghdr *nlh =
    nfq_nlmsg_put(d->vbuf + d->vlen, NFQNL_MSG_VERDICT, queue);
  nfq_nlmsg_verdict_put(nlh, (int)pkt_id, verdict);
  d->vlen += NLMSG_ALIGN(nlh->nlmsg_len);
}

/* Release every held packet whose deadline is at or before now. */
static void
release_due(daemon_t *d, uint64_t now)
{
  const delayq_ent_t *top;
  while ((top = delayq_top(d->q)) && top->deadline_ns <= now) {
    delayq_ent_t e;
    delayq_pop(d->q, &e);
    delayd_link_t *l = &d->links[e.link];
    verdict_add(d, link_queue(d, l), e.pkt_id, NF_ACCEPT);
    uint64_t late = now - e.deadline_ns;
    l->st.released++;
    l->st.held--;
    l->st.late_sum_ns += late;
    if (late > l->st.late_max_ns)
      l->st.late_max_ns = late;
  }
}

/* Release everything at once (shutdown). */
static void
release_all(daemon_t *d)
{
  delayq_ent_t e;
  uint64_t now = now_ns();
  while (delayq_pop(d->q, &e) == 0) {
    delayd_link_t *l = &d->links[e.link];
    verdict_add(d, link_queue(d, l), e.pkt_id, NF_ACCEPT);
    l->st.released++;
    l->st.held--;
    if (now > e.deadline_ns) {
      l->st.late_sum_ns += now - e.deadline_ns;
    }
  }
  verdict_flush(d);
}

/* ---- packets ---- */

static void
handle_packet(daemon_t *d, const struct nlmsghdr *nlh, uint64_t now)
{
  struct nlattr *attr[NFQA_MAX + 1];
  memset(attr, 0, sizeof(attr));
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct nfgenmsg) ||
      nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR] ||
      mnl_attr_get_payload_len(attr[NFQA_PACKET_HDR]) <
        sizeof(struct nfqnl_msg_packet_hdr)) {
    d->nl_errors++;
    return;
  }
  const struct nfgenmsg *nfg = mnl_nlmsg_get_payload(nlh);
  uint32_t queue = ntohs(nfg->res_id);
  const struct nfqnl_msg_packet_hdr *ph =
    mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
  uint32_t pkt_id = ntohl(ph->packet_id);
  uint32_t key = queue;
  if (d->mark_mode) {
    key = 0;
    if (attr[NFQA_MARK] && mnl_attr_get_payload_len(attr[NFQA_MARK]) >= 4)
      key = ntohl(mnl_attr_get_u32(attr[NFQA_MARK]));
  }
  long li = link_find(d, key);
  if (li < 0) {
    d->unmatched++;
    verdict_add(d, queue, pkt_id, NF_ACCEPT);
    return;
  }
  delayd_link_t *l = &d->links[li];
  l->st.received++;
  if (d->draining) {
    l->st.released++;
    verdict_add(d, queue, pkt_id, NF_ACCEPT);
    return;
  }
  if (delayd_link_lose(l, &d->rng)) {
    l->st.lost++;
    verdict_add(d, queue, pkt_id, NF_DROP);
    return;
  }
  uint64_t prev_last = l->last_deadline_ns;
  uint64_t deadline = delayd_link_deadline(l, now, &d->rng, d->fifo);
  if (deadline <= now) {
    l->st.released++;
    verdict_add(d, queue, pkt_id, NF_ACCEPT);
    return;
  }
  if (delayq_push(d->q, deadline, pkt_id, (uint32_t)li) < 0) {
    l->last_deadline_ns = prev_last;
    l->st.dropped_full++;
    verdict_add(d, queue, pkt_id, NF_DROP);
    return;
  }
  if (++l->st.held > l->st.max_held)
    l->st.max_held = l->st.held;
}

static void
handle_buffer(daemon_t *d, const char *buf, size_t len, uint64_t now)
{
  const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
  int rest = (int)len;
  while (mnl_nlmsg_ok(nlh, rest)) {
    uint16_t type = nlh->nlmsg_type;
    if (type == NLMSG_ERROR) {
      const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
      int err = 0;
      if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(*e))
        err = -e->error;
      if (d->want_seq && nlh->nlmsg_seq == d->want_seq) {
        d->got_ack = 1;
        d->ack_err = err;
      } else if (err) {
        d->verdict_errors++;
        if (d->verdict_errors <= 5 || d->verdict_errors % 10000 == 0)
          log_warn("the kernel refused a verdict (%s; %" PRIu64 " so far)",
                   strerror(err), d->verdict_errors);
      }
    } else if (type == ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET)) {
      handle_packet(d, nlh, now);
    } else if (type != NLMSG_NOOP && type != NLMSG_DONE) {
      d->nl_errors++;
    }
    nlh = mnl_nlmsg_next(nlh, &rest);
  }
}

/* Read what is queued on the socket: up to RX_ROUNDS recvmmsg calls,
 * releasing due packets between them. Returns -1 on a fatal error. */
static int
receive(daemon_t *d)
{
  for (int round = 0; round < RX_ROUNDS; round++) {
    for (int i = 0; i < RX_BATCH; i++) {
      d->rx_iov[i].iov_base = d->rx_buf + (size_t)i * RX_BUFSZ;
      d->rx_iov[i].iov_len = RX_BUFSZ;
      memset(&d->rx_msgs[i].msg_hdr, 0, sizeof(struct msghdr));
      d->rx_msgs[i].msg_hdr.msg_iov = &d->rx_iov[i];
      d->rx_msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int n = recvmmsg(d->fd, d->rx_msgs, RX_BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
      if (errno == ENOBUFS) {
        d->enobufs++;
        continue;
      }
      log_err("netlink receive failed: %s", strerror(errno));
      return -1;
    }
    uint64_t now = now_ns();
    for (int i = 0; i < n; i++) {
      if (d->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
        d->truncated++;
        continue;
      }
      handle_buffer(d, d->rx_buf + (size_t)i * RX_BUFSZ, d->rx_msgs[i].msg_len,
                    now);
    }
    release_due(d, now_ns());
    verdict_flush(d);
    if (n < RX_BATCH)
      return 0;
  }
  return 0;
}

/* ---- configuration ---- */

/* Send a config message (with an ACK request) and wait for its ACK,
 * handling any packets that arrive meanwhile. Returns 0 or -errno. */
static int
config_send(daemon_t *d, struct nlmsghdr *nlh)
{
  nlh->nlmsg_flags |= NLM_F_ACK;
  nlh->nlmsg_seq = ++d->seq;
  d->want_seq = nlh->nlmsg_seq;
  d->got_ack = 0;
  d->ack_err = 0;
  if (mnl_socket_sendto(d->nl, nlh, nlh->nlmsg_len) < 0)
    return -errno;
  uint64_t deadline = now_ns() + 2000000000ULL;
  while (!d->got_ack) {
    uint64_t now = now_ns();
    if (now >= deadline) {
      d->want_seq = 0;
      return -ETIMEDOUT;
    }
    struct pollfd pfd = {d->fd, POLLIN, 0};
    int left_ms = (int)((deadline - now) / 1000000ULL) + 1;
    if (poll(&pfd, 1, left_ms) < 0 && errno != EINTR)
      return -errno;
    if (receive(d) < 0)
      return -EIO;
  }
  d->want_seq = 0;
  return -d->ack_err;
}

static int
queue_bind(daemon_t *d, uint32_t queue)
{
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, queue);
  nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
  int r = config_send(d, nlh);
  if (r < 0) {
    log_err("cannot bind NFQUEUE %u: %s%s", queue, strerror(-r),
            r == -EBUSY ? " (another process holds it)" : "");
    return -1;
  }
  nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, queue);
  nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_META, 0);
  /* The kernel may queue a little more than we hold (messages still in our
   * socket buffer), so that a full heap shows up in our counters rather
   * than as silent kernel drops. */
  nfq_nlmsg_cfg_put_qmaxlen(nlh, d->maxheld + KERNEL_QUEUE_HEADROOM);
  mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
  mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
  r = config_send(d, nlh);
  if (r < 0) {
    log_err("cannot configure NFQUEUE %u: %s", queue, strerror(-r));
    return -1;
  }
  return 0;
}

static void
queue_unbind(daemon_t *d, uint32_t queue)
{
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, queue);
  nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_UNBIND);
  int r = config_send(d, nlh);
  if (r < 0)
    log_warn("unbinding NFQUEUE %u: %s", queue, strerror(-r));
}

/* Open the netfilter netlink socket: large receive buffer, no ENOBUFS
 * reports, non-blocking. */
static int
netlink_open(daemon_t *d)
{
  d->nl = mnl_socket_open(NETLINK_NETFILTER);
  if (!d->nl) {
    log_err("cannot open a netfilter netlink socket: %s", strerror(errno));
    return -1;
  }
  if (mnl_socket_bind(d->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    log_err("cannot bind the netlink socket: %s", strerror(errno));
    return -1;
  }
  d->fd = mnl_socket_get_fd(d->nl);
  int one = 1, rcvbuf = RCVBUF_BYTES;
  if (setsockopt(d->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
                 sizeof(rcvbuf)) < 0)
    setsockopt(d->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  mnl_socket_setsockopt(d->nl, NETLINK_NO_ENOBUFS, &one, sizeof(one));
  int fl = fcntl(d->fd, F_GETFL);
  if (fl < 0 || fcntl(d->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    log_err("cannot make the netlink socket non-blocking: %s",
            strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- counters ---- */

/* The kernel's own counters of queue `queue` in this namespace
 * (/proc/net/netfilter/nfnetlink_queue): packets dropped because the queue
 * was full, and because our socket buffer was. -1 when unavailable. */
static void
kernel_counters(uint32_t queue, long long *qdropped, long long *udropped)
{
  *qdropped = *udropped = -1;
  FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
  if (!f)
    return;
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    unsigned long qn, portid, total, mode, range, qd, ud;
    if (sscanf(line, "%lu %lu %lu %lu %lu %lu %lu", &qn, &portid, &total,
               &mode, &range, &qd, &ud) == 7 && qn == queue) {
      *qdropped = (long long)qd;
      *udropped = (long long)ud;
      break;
    }
  }
  fclose(f);
}

static void
print_stats(const daemon_t *d, const char *when)
{
  uint64_t tot_rx = 0, tot_rel = 0, tot_lost = 0, tot_full = 0;
  for (size_t i = 0; i < d->n_links; i++) {
    const delayd_link_t *l = &d->links[i];
    const delayd_link_stats_t *s = &l->st;
    double late_avg = s->released ? (double)s->late_sum_ns / 1e3 /
                                      (double)s->released
                                  : 0;
    long long kq = -1, ku = -1;
    if (!d->mark_mode)
      kernel_counters(l->id, &kq, &ku);
    printf("pctor-delayd: stats when=%s %s=%" PRIu32 " delay_ms=%.3f "
           "jitter_ms=%.3f loss_pct=%.4f received=%" PRIu64
           " released=%" PRIu64 " lost=%" PRIu64 " dropped_full=%" PRIu64
           " held=%" PRIu64 " max_held=%" PRIu64
           " late_avg_us=%.1f late_max_us=%.1f kernel_dropped=%lld"
           " kernel_user_dropped=%lld\n",
           when, d->mark_mode ? "mark" : "queue", l->id,
           (double)l->delay_ns / 1e6, (double)l->jitter_ns / 1e6,
           l->loss * 100.0, s->received, s->released, s->lost,
           s->dropped_full, s->held, s->max_held, late_avg,
           (double)s->late_max_ns / 1e3, kq, ku);
    tot_rx += s->received;
    tot_rel += s->released;
    tot_lost += s->lost;
    tot_full += s->dropped_full;
  }
  printf("pctor-delayd: stats when=%s total links=%zu received=%" PRIu64
         " released=%" PRIu64 " lost=%" PRIu64 " dropped_full=%" PRIu64
         " held=%zu unmatched=%" PRIu64 " nl_errors=%" PRIu64
         " truncated=%" PRIu64 " enobufs=%" PRIu64 " send_errors=%" PRIu64
         " verdict_errors=%" PRIu64 "%s",
         when, d->n_links, tot_rx, tot_rel, tot_lost, tot_full,
         delayq_len(d->q), d->unmatched, d->nl_errors, d->truncated,
         d->enobufs, d->send_errors, d->verdict_errors,
         d->mark_mode ? "" : "\n");
  if (d->mark_mode) {
    long long kq, ku;
    kernel_counters(d->mark_queue, &kq, &ku);
    printf(" kernel_dropped=%lld kernel_user_dropped=%lld\n", kq, ku);
  }
  fflush(stdout);
}

/* ---- start-up ---- */

static void
usage(FILE *f)
{
  fprintf(f,
"Usage: pctor-delayd [options] LINK...\n"
"Hold NFQUEUE verdicts to add per-link delay, jitter and loss.\n"
"  LINK          ID:DELAY_MS[:JITTER_MS[:LOSS_PCT]]; ID is an NFQUEUE number\n"
"                (or a packet mark with -k). Jitter is the standard deviation\n"
"                of a normal distribution truncated at +/-3 sigma.\n"
"  -k QUEUE      mark mode: bind only QUEUE, LINK IDs are packet marks;\n"
"                packets with other marks pass undelayed\n"
"  -o            allow jitter to reorder a link's packets (default: FIFO)\n"
"  -r            run SCHED_FIFO (priority -P, default 10) with locked memory\n"
"  -P PRIO       SCHED_FIFO priority (1..99)\n"
"  -m MAXHELD    hold at most MAXHELD packets (default %d); more are dropped\n"
"                and counted\n"
"  -s SEED       seed of the random generator (default: random)\n"
"  -p PIDFILE    write our pid here once every queue is bound\n"
"  -v            log at info level\n"
"Signals: TERM/INT stop (held packets are released), USR1/HUP print the\n"
"counters on stdout.\n", DEFAULT_MAXHELD);
}

/* Fill d->links / d->order from the LINK arguments; -1 (with a message)
 * on a bad or repeated LINK. */
static int
parse_links(daemon_t *d, int n, char **specs)
{
  d->n_links = (size_t)n;
  d->links = pc_calloc(d->n_links, sizeof(delayd_link_t));
  d->order = pc_calloc(d->n_links, sizeof(uint32_t));
  for (size_t i = 0; i < d->n_links; i++) {
    char err[256];
    if (delayd_link_parse(specs[i], &d->links[i], err, sizeof(err)) < 0) {
      fprintf(stderr, "pctor-delayd: %s\n", err);
      return -1;
    }
    if (!d->mark_mode && d->links[i].id > 65535) {
      fprintf(stderr, "pctor-delayd: '%s': queue numbers are 0..65535\n",
              specs[i]);
      return -1;
    }
    d->order[i] = (uint32_t)i;
  }
  qsort_r(d->order, d->n_links, sizeof(uint32_t), cmp_order, d->links);
  for (size_t i = 1; i < d->n_links; i++) {
    if (d->links[d->order[i]].id == d->links[d->order[i - 1]].id) {
      fprintf(stderr, "pctor-delayd: link %u is given twice\n",
              d->links[d->order[i]].id);
      return -1;
    }
  }
  return 0;
}

/* Free what main() allocated (NULL-safe). */
static void
daemon_clear(daemon_t *d)
{
  if (d->nl)
    mnl_socket_close(d->nl);
  d->nl = NULL;
  delayq_free(d->q);
  PC_FREE(d->rx_buf);
  PC_FREE(d->vbuf);
  PC_FREE(d->links);
  PC_FREE(d->order);
}

static int
parse_ulong(const char *s, unsigned long lo, unsigned long hi,
            unsigned long *out)
{
  if (!s || s[0] < '0' || s[0] > '9')
    return -1;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = (unsigned long)v;
  return 0;
}

static int
write_pidfile(const char *path)
{
  char *tmp = pc_asprintf("%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int ok = f && fprintf(f, "%ld\n", (long)getpid()) > 0;
  if (f && fclose(f) != 0)
    ok = 0;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    unlink(tmp);
  free(tmp);
  return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
  daemon_t d;
  memset(&d, 0, sizeof(d));
  d.fifo = 1;
  d.maxheld = DEFAULT_MAXHELD;
  int realtime = 0, verbose = 0, have_seed = 0;
  unsigned long prio = 10, v;
  uint64_t seed = 0;
  const char *pidfile = NULL;
  int c;
  while ((c = getopt(argc, argv, "k:orP:m:s:p:vh")) != -1) {
    switch (c) {
    case 'k':
      if (parse_ulong(optarg, 0, 65535, &v) < 0) {
        fprintf(stderr, "pctor-delayd: -k needs a queue number 0..65535\n");
        return 2;
      }
      d.mark_mode = 1;
      d.mark_queue = (uint32_t)v;
      break;
    case 'o':
      d.fifo = 0;
      break;
    case 'r':
      realtime = 1;
      break;
    case 'P':
      if (parse_ulong(optarg, 1, 99, &prio) < 0) {
        fprintf(stderr, "pctor-delayd: -P needs a priority 1..99\n");
        return 2;
      }
      break;
    case 'm':
      if (parse_ulong(optarg, 1, 10000000, &v) < 0) {
        fprintf(stderr, "pctor-delayd: -m needs a number 1..10000000\n");
        return 2;
      }
      d.maxheld = (uint32_t)v;
      break;
    case 's':
      if (parse_ulong(optarg, 0, ULONG_MAX, &v) < 0) {
        fprintf(stderr, "pctor-delayd: -s needs a number\n");
        return 2;
      }
      seed = v;
      have_seed = 1;
      break;
    case 'p':
      pidfile = optarg;
      break;
    case 'v':
      verbose = 1;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "pctor-delayd: no LINK given\n");
    usage(stderr);
    return 2;
  }
  if (verbose) {
    char *err = NULL;
    if (log_parse_destination("info stderr", &err) < 0) {
      fprintf(stderr, "pctor-delayd: %s\n", err ? err : "log setup failed");
      free(err);
      return 1;
    }
  }

  if (parse_links(&d, argc - optind, argv + optind) < 0) {
    daemon_clear(&d);
    return 2;
  }
  if (!have_seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
    seed = now_ns() ^ ((uint64_t)getpid() << 32);
  delayd_rng_seed(&d.rng, seed);
  d.q = delayq_new(d.maxheld);
  d.rx_buf = pc_malloc((size_t)RX_BATCH * RX_BUFSZ);
  d.vbuf = pc_zalloc(VBUF_SIZE);

  /* Signals: blocked except inside ppoll(). */
  sigset_t block, waitmask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGHUP);
  sigprocmask(SIG_BLOCK, &block, &waitmask);
  sigdelset(&waitmask, SIGTERM);
  sigdelset(&waitmask, SIGINT);
  sigdelset(&waitmask, SIGUSR1);
  sigdelset(&waitmask, SIGHUP);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (realtime) {
    struct sched_param sp;
    memset(&sp, 0, sizeof(sp));
    sp.sched_priority = (int)prio;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
      log_warn("cannot switch to SCHED_FIFO: %s", strerror(errno));
    if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
      log_warn("cannot lock memory: %s", strerror(errno));
  }

  int rc = 0;
  size_t bound = 0;
  if (netlink_open(&d) < 0)
    rc = 1;
  else if (d.mark_mode) {
    if (queue_bind(&d, d.mark_queue) < 0)
      rc = 1;
    else
      bound = 1;
  } else {
    for (bound = 0; bound < d.n_links; bound++) {
      if (queue_bind(&d, d.links[bound].id) < 0) {
        rc = 1;
        break;
      }
    }
  }
  if (!rc && pidfile && write_pidfile(pidfile) < 0) {
    log_err("cannot write %s: %s", pidfile, strerror(errno));
    rc = 1;
  }
  if (!rc)
    log_notice("ready: %zu link(s)%s%s, holding at most %u packets, seed "
               "%" PRIu64, d.n_links, d.mark_mode ? " by mark" : "",
               d.fifo ? "" : ", reordering allowed", d.maxheld, seed);

  struct pollfd pfd = {d.fd, POLLIN, 0};
  while (!rc && !g_stop) {
    if (g_stats) {
      g_stats = 0;
      print_stats(&d, "signal");
    }
    uint64_t now = now_ns();
    release_due(&d, now);
    verdict_flush(&d);
    struct timespec ts, *tsp = NULL;
    const delayq_ent_t *top = delayq_top(d.q);
    if (top) {
      now = now_ns();
      if (top->deadline_ns <= now)
        continue;
      uint64_t wait = top->deadline_ns - now;
      ts.tv_sec = (time_t)(wait / 1000000000ULL);
      ts.tv_nsec = (long)(wait % 1000000000ULL);
      tsp = &ts;
    }
    int r = ppoll(&pfd, 1, tsp, &waitmask);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      log_err("ppoll failed: %s", strerror(errno));
      rc = 1;
      break;
    }
    if (r > 0 && (pfd.revents & POLLIN) && receive(&d) < 0)
      rc = 1;
    if (r > 0 && (pfd.revents & (POLLERR | POLLNVAL)) &&
        !(pfd.revents & POLLIN)) {
      /* ENOBUFS is reported as POLLERR; reading clears it. */
      if (receive(&d) < 0)
        rc = 1;
    }
  }

  d.draining = 1;
  release_all(&d);
  if (d.nl)
    print_stats(&d, "exit"); /* before unbinding: kernel counters go then */
  if (d.mark_mode) {
    if (bound)
      queue_unbind(&d, d.mark_queue);
  } else {
    for (size_t i = 0; i < bound; i++)
      queue_unbind(&d, d.links[i].id);
  }
  if (!rc)
    log_notice("stopped");
  daemon_clear(&d);
  return rc;
}
