/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-floorbench.c -- the least CPU a relay can spend per relayed cell on
 * this machine: a stripped "middle" that only does what every relay must.
 *
 * Three processes over loopback TCP, as in scripts/bench-relay's networks:
 *
 *   source --TLS--> floor relay --TLS--> sink
 *
 * The source writes --cells cells of 514 bytes, --in-cells cells per TLS
 * record (a tor guard sends about 6, pctor up to 31). The floor relay
 * reads records with blocking I/O (no event loop), and for every whole
 * cell it removes one relay layer (relay_crypto_encrypt_backward(): one
 * AES-128-CTR pass over the 509-byte payload, what a middle does per
 * cell); once it holds --out-cells cells it writes them in one
 * tls_conn_write() (OpenSSL cuts records of at most 16 KiB); with --rate,
 * also whenever OpenSSL holds nothing more, as a relay must. The sink
 * reads and counts. Nothing else: no circuit map, no scheduler, no queue,
 * no bookkeeping per cell. The TLS contexts are pctor's own (lib/tls), so
 * the cipher suite is the one pctor's links negotiate with each other.
 *
 * The floor relay's CPU (getrusage, user and system) is taken from after
 * both handshakes to after its last write; on loopback its sends include
 * the kernel's receive work for the sink, as a relay's sends do in
 * bench-relay. With --plain the links are plain TCP (no TLS): what the
 * kernel and the relay layer cost without the record crypto.
 *
 * Prints one line:
 *   floor: N cells in W s (MB/s), relay CPU us/cell: C (user U, system S);
 *   reads R, writes W per cell; TLSv1.3 ...
 * and exits 0, or non-zero with the reason if it could not measure (a
 * short transfer, a failed handshake, a child that died).
 *
 * With --rate the source keeps to that many MB/s (10^6 bytes), so that the
 * floor can be taken at the rate a relay of bench-relay saw: at lower
 * rates each wake-up brings fewer cells, and costs more per cell.
 *
 * Usage: pctor-floorbench [--cells N] [--in-cells K] [--out-cells K]
 *                         [--rate MB/s] [--plain]
 *        (defaults 1000000 cells, 31 and 62 cells per write, no pacing)
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/crypto/relay_crypto.h"
#include "lib/crypt/crypt_init.h"
#include "lib/time/clock.h"
#include "lib/tls/tls.h"

#define CELL_LEN 514
#define CELL_HDR 5 /* 4-byte circuit ID, command */

typedef struct opts_t {
  long cells;
  int in_cells, out_cells;
  int plain;
  double rate; /* MB/s the source keeps to; 0: as fast as it can */
} opts_t;

/* One end of a link: a TCP socket, with TLS over it unless --plain. */
typedef struct link_t {
  int fd;
  tls_conn_t *tls;
  long n_reads, n_writes;
} link_t;

typedef struct report_t {
  long cells;
  double user_s, sys_s, wall_s;
  long n_reads, n_writes;
  char suite[64];
} report_t;

/* "pctor-floorbench: WHAT[: DETAIL]" on stderr, exit 1. */
static void
die(const char *what, const char *detail)
{
  fprintf(stderr, "pctor-floorbench: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  exit(1);
}

static double
now_s(void)
{
  return (double)time_mono_ns() * 1e-9;
}

static double
tv_s(struct timeval tv)
{
  return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* A TCP socket, and 127.0.0.1:port in *a. */
static int
loopback_socket(struct sockaddr_in *a, uint16_t port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    die("socket", strerror(errno));
  memset(a, 0, sizeof(*a));
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a->sin_port = htons(port);
  return fd;
}

static int
listen_loopback(uint16_t *port)
{
  struct sockaddr_in a;
  socklen_t alen = sizeof(a);
  int fd = loopback_socket(&a, 0);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
    die("listening on 127.0.0.1", strerror(errno));
  *port = ntohs(a.sin_port);
  return fd;
}

static int
connect_loopback(uint16_t port)
{
  struct sockaddr_in a;
  int fd = loopback_socket(&a, port);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
    die("connecting to 127.0.0.1", strerror(errno));
  return fd;
}

/* Wrap fd (blocking) and finish the handshake; NULL tls when plain. */
static void
link_open(link_t *l, tls_context_t *ctx, int fd, int is_server)
{
  int one = 1;
  memset(l, 0, sizeof(*l));
  l->fd = fd;
  /* relays set TCP_NODELAY on their links too */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (!ctx)
    return;
  l->tls = tls_conn_new(ctx, fd, is_server);
  if (!l->tls)
    die("tls_conn_new failed", NULL);
  int r = tls_conn_handshake(l->tls);
  if (r != TLS_OK)
    die("TLS handshake failed", tls_conn_last_error(l->tls));
}

/* Up to len bytes into buf; 0 on a clean close; exits on an error. */
static size_t
link_read(link_t *l, uint8_t *buf, size_t len)
{
  l->n_reads++;
  if (!l->tls) {
    ssize_t r;
    do
      r = read(l->fd, buf, len);
    while (r < 0 && errno == EINTR);
    if (r < 0)
      die("read", strerror(errno));
    return (size_t)r;
  }
  ssize_t r = tls_conn_read(l->tls, buf, len);
  if (r == TLS_CLOSED)
    return 0;
  if (r < 0)
    die("TLS read failed", tls_conn_last_error(l->tls));
  return (size_t)r;
}

static void
link_write_all(link_t *l, const uint8_t *buf, size_t len)
{
  while (len > 0) {
    ssize_t r;
    l->n_writes++;
    if (l->tls) {
      r = tls_conn_write(l->tls, buf, len);
      if (r <= 0)
        die("TLS write failed", tls_conn_last_error(l->tls));
    } else {
      r = write(l->fd, buf, len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        die("write", strerror(errno));
    }
    buf += r;
    len -= (size_t)r;
  }
}

static void
link_close(link_t *l)
{
  if (l->tls) {
    tls_conn_shutdown(l->tls);
    tls_conn_free(l->tls);
  }
  close(l->fd);
}

/* The source: cells in records of in_cells cells. */
static void
run_source(const opts_t *o, tls_context_t *ctx, uint16_t port)
{
  link_t out;
  size_t rec = (size_t)o->in_cells * CELL_LEN;
  uint8_t *buf = calloc(1, rec);
  if (!buf)
    die("out of memory", NULL);
  for (int i = 0; i < o->in_cells; i++) {
    uint8_t *c = buf + (size_t)i * CELL_LEN;
    c[3] = 1; /* circuit ID 1 */
    c[4] = 3; /* RELAY */
    for (int j = CELL_HDR; j < CELL_LEN; j++)
      c[j] = (uint8_t)(j * 31 + i);
  }
  link_open(&out, ctx, connect_loopback(port), 0);
  double t0 = now_s();
  for (long sent = 0; sent < o->cells;) {
    long n = o->cells - sent < o->in_cells ? o->cells - sent : o->in_cells;
    if (o->rate > 0) {
      /* paced: this record leaves when the rate allows it */
      double due = t0 + (double)sent * CELL_LEN / (o->rate * 1e6);
      double wait = due - now_s();
      if (wait > 0) {
        struct timespec ts = { (time_t)wait,
                               (long)((wait - (double)(time_t)wait) * 1e9) };
        nanosleep(&ts, NULL);
      }
    }
    link_write_all(&out, buf, (size_t)n * CELL_LEN);
    sent += n;
  }
  link_close(&out);
  free(buf);
}

/* The sink: count bytes until the source's cells have all arrived. */
static void
run_sink(const opts_t *o, tls_context_t *ctx, int lfd)
{
  link_t in;
  static uint8_t buf[1 << 16];
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0)
    die("accept", strerror(errno));
  link_open(&in, ctx, fd, 1);
  long long want = (long long)o->cells * CELL_LEN, got = 0;
  while (got < want) {
    size_t r = link_read(&in, buf, sizeof(buf));
    if (r == 0)
      die("the floor relay closed early", NULL);
    got += (long long)r;
  }
  link_close(&in);
}

/* The floor relay; fills rep. */
static void
run_relay(const opts_t *o, tls_context_t *ctx, int lfd, uint16_t sink_port,
          report_t *rep)
{
  link_t in, out;
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  for (size_t i = 0; i < sizeof(km); i++)
    km[i] = (uint8_t)(i * 13 + 5);
  relay_crypto_t *layer = relay_crypto_new(km);
  size_t cap = (size_t)o->out_cells * CELL_LEN + (1 << 16);
  uint8_t *buf = malloc(cap);
  if (!buf || !layer)
    die("out of memory", NULL);
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0)
    die("accept", strerror(errno));
  link_open(&out, ctx, connect_loopback(sink_port), 0);
  link_open(&in, ctx, fd, 1);

  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now_s();
  size_t have = 0, done = 0; /* bytes held; bytes of them already crypted */
  long cells = 0;
  size_t batch = (size_t)o->out_cells * CELL_LEN;
  for (;;) {
    size_t r = link_read(&in, buf + have, cap - have);
    have += r;
    /* the relay layer, once per whole cell */
    while (have - done >= CELL_LEN) {
      relay_crypto_encrypt_backward(layer, buf + done + CELL_HDR);
      done += CELL_LEN;
      cells++;
    }
    int last = (r == 0 || cells >= o->cells);
    /* Unpaced, cells wait for a full batch (the least work per cell). Paced,
     * a relay cannot hold cells for later ones: what a wake-up brought
     * goes out once OpenSSL holds no more. */
    int idle = o->rate > 0 && (!in.tls || tls_conn_pending(in.tls) == 0);
    if (done >= batch || ((last || idle) && done > 0)) {
      link_write_all(&out, buf, done);
      memmove(buf, buf + done, have - done);
      have -= done;
      done = 0;
    }
    if (last)
      break;
  }
  double t1 = now_s();
  getrusage(RUSAGE_SELF, &r1);
  rep->cells = cells;
  rep->user_s = tv_s(r1.ru_utime) - tv_s(r0.ru_utime);
  rep->sys_s = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
  rep->wall_s = t1 - t0;
  rep->n_reads = in.n_reads;
  rep->n_writes = out.n_writes;
  snprintf(rep->suite, sizeof(rep->suite), "%s",
           in.tls ? tls_conn_describe(in.tls) : "plain TCP");
  link_close(&in);
  link_close(&out);
  relay_crypto_free(layer);
  free(buf);
}

static int
parse_opts(int argc, char **argv, opts_t *o)
{
  o->cells = 1000000;
  o->in_cells = 31;
  o->out_cells = 62;
  o->plain = 0;
  o->rate = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cells") && i + 1 < argc)
      o->cells = atol(argv[++i]);
    else if (!strcmp(argv[i], "--in-cells") && i + 1 < argc)
      o->in_cells = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--out-cells") && i + 1 < argc)
      o->out_cells = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
      o->rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--plain"))
      o->plain = 1;
    else
      return -1;
  }
  /* a TLS record holds at most 16384 bytes: 31 cells */
  if (o->cells <= 0 || o->in_cells < 1 || o->in_cells > 31 ||
      o->out_cells < 1 || o->out_cells > 1024 || o->rate < 0)
    return -1;
  return 0;
}

/* Wait for pid; 0 if it exited 0. */
static int
reap(pid_t pid, const char *who, char *err, size_t errlen)
{
  int st;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      snprintf(err, errlen, "waiting for the %s: %s", who, strerror(errno));
      return -1;
    }
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  if (WIFSIGNALED(st))
    snprintf(err, errlen, "the %s was killed by signal %d", who,
             WTERMSIG(st));
  else
    snprintf(err, errlen, "the %s exited with status %d", who,
             WEXITSTATUS(st));
  return -1;
}

int
main(int argc, char **argv)
{
  opts_t o;
  if (parse_opts(argc, argv, &o) < 0) {
    fprintf(stderr, "usage: pctor-floorbench [--cells N] [--in-cells 1-31] "
                    "[--out-cells 1-1024] [--rate MB/s] [--plain]\n");
    return 2;
  }
  if (crypt_global_init() < 0)
    die("the crypto library is unusable", NULL);
  signal(SIGPIPE, SIG_IGN);
  tls_context_t *ctx = NULL;
  if (!o.plain && !(ctx = tls_context_new(1)))
    die("could not make a TLS context", NULL);

  uint16_t relay_port, sink_port;
  int relay_l = listen_loopback(&relay_port);
  int sink_l = listen_loopback(&sink_port);
  int pfd[2];
  if (pipe(pfd) < 0)
    die("pipe", strerror(errno));

  pid_t sink = fork();
  if (sink < 0)
    die("fork", strerror(errno));
  if (sink == 0) {
    run_sink(&o, ctx, sink_l);
    _exit(0);
  }
  pid_t relay = fork();
  if (relay < 0)
    die("fork", strerror(errno));
  if (relay == 0) {
    report_t rep;
    memset(&rep, 0, sizeof(rep));
    run_relay(&o, ctx, relay_l, sink_port, &rep);
    if (write(pfd[1], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
      _exit(1);
    _exit(0);
  }
  pid_t source = fork();
  if (source < 0)
    die("fork", strerror(errno));
  if (source == 0) {
    run_source(&o, ctx, relay_port);
    _exit(0);
  }
  close(pfd[1]);
  close(relay_l);
  close(sink_l);

  report_t rep;
  memset(&rep, 0, sizeof(rep));
  ssize_t got = read(pfd[0], &rep, sizeof(rep));
  char err[3][160] = { "", "", "" };
  int bad = reap(source, "source", err[0], sizeof(err[0]));
  bad |= reap(relay, "floor relay", err[1], sizeof(err[1]));
  bad |= reap(sink, "sink", err[2], sizeof(err[2]));
  if (bad) {
    for (int i = 0; i < 3; i++)
      if (err[i][0])
        fprintf(stderr, "pctor-floorbench: %s\n", err[i]);
    return 1;
  }
  if (got != (ssize_t)sizeof(rep) || rep.cells != o.cells) {
    fprintf(stderr,
            "pctor-floorbench: the floor relay relayed %ld of %ld cells\n",
            got == (ssize_t)sizeof(rep) ? rep.cells : 0L, o.cells);
    return 1;
  }
  double n = (double)rep.cells;
  printf("floor: %ld cells in %.2f s (%.1f MB/s), relay CPU us/cell: %.3f "
         "(user %.3f, system %.3f); reads %.3f, writes %.3f per cell; "
         "in %d, out %d cells per write; %s\n",
         rep.cells, rep.wall_s, n * CELL_LEN / rep.wall_s / 1e6,
         (rep.user_s + rep.sys_s) * 1e6 / n, rep.user_s * 1e6 / n,
         rep.sys_s * 1e6 / n, (double)rep.n_reads / n,
         (double)rep.n_writes / n, o.in_cells, o.out_cells, rep.suite);
  if (ctx)
    tls_context_free(ctx);
  return 0;
}
