/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-dgramtest.c -- a datagram link peer for tests: opens one link to
 * a relay's DatagramPort with its own relay keys, or floods the port with
 * garbage and cookie-less ClientHellos.
 *
 *   pctor-dgramtest --datadir DIR --target ADDR:PORT --expect-ed ID
 *                   [--records N] [--record-type T] [--timeout SEC]
 *   pctor-dgramtest --flood N --target ADDR:PORT [--sources K]
 *
 * Link mode: uses (or makes) the relay keys in DIR, opens a link to the
 * target expecting the Ed25519 identity ID (base64 as in
 * fingerprint-ed25519, or 64 hex digits), and waits until it is up (the
 * first PING/PONG round trip done) or refused. Up: sends N records of
 * type 0x7e (which a relay counts as "unknown types"), waits until they
 * are flushed, prints "up rtt_ms=X sent=N" and exits 0. With
 * --record-type 0x21 or 0x22 (BackTap CELL / FEEDBACK) the records are
 * garbage of that type instead: every third one of a wrong length, the
 * others of the right length with reserved flags set, or (feedback) for a
 * circuit the relay does not know. Refused or timed
 * out: prints "refused: REASON" and exits 1.
 *
 * Flood mode: from K UDP sockets (K source ports, default 32), sends N
 * datagrams of garbage of varying length and N ClientHellos without a
 * cookie (made by a real DTLS client session, so they pass every cheap
 * check), counts the answers that are HelloVerifyRequests and prints
 * "flood garbage=N hellos=N hvr=M". Exits 0; 2 on usage errors.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "feature/dgram/dgram.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/encoding/base64.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/dtls.h"
#include "tools/common/toolargs.h"

static struct {
  evloop_t *loop;
  dgram_t *d;
  dgram_link_t *link;
  int done, ok;
  unsigned records;
  unsigned record_type;
  char why[200];
} T;

static void
usage(void)
{
  fprintf(stderr,
          "usage: pctor-dgramtest --datadir DIR --target ADDR:PORT "
          "--expect-ed ID [--records N] [--record-type T] [--timeout SEC]\n"
          "       pctor-dgramtest --flood N --target ADDR:PORT "
          "[--sources K]\n");
  exit(2);
}

static int
parse_id(const char *s, uint8_t out[32])
{
  size_t n = strlen(s);
  if (n == 64) {
    for (int i = 0; i < 32; i++) {
      unsigned v;
      if (sscanf(s + 2 * i, "%2x", &v) != 1)
        return -1;
      out[i] = (uint8_t)v;
    }
    return 0;
  }
  uint8_t buf[48];
  return base64_decode(buf, sizeof(buf), s, n) == 32 ? (memcpy(out, buf, 32),
                                                        0)
                                                     : -1;
}

static void
on_link(dgram_link_t *l, int up, const char *why, void *arg)
{
  (void)arg;
  if (l != T.link || T.done)
    return;
  if (!up) {
    snprintf(T.why, sizeof(T.why), "%s", why);
    T.done = 1;
    T.ok = 0;
    evloop_exit(T.loop);
  }
}

static void
poll_cb(void *arg)
{
  (void)arg;
  dgram_link_stats_t st;
  if (!T.link || T.done)
    return;
  dgram_link_get_stats(T.link, &st);
  if (!st.up || !st.rtt_us)
    return;
  uint8_t body[600];
  memset(body, 0x7e, sizeof(body));
  uint8_t type = T.record_type ? (uint8_t)T.record_type : 0x7e;
  for (unsigned i = 0; i < T.records; i++) {
    size_t len = 16;
    if (type == 0x21 || type == 0x22) {
      for (size_t k = 0; k < sizeof(body); k++)
        body[k] = (uint8_t)(i * 131u + k * 7u + 1u);
      if (i % 3 != 0)
        len = type == 0x21 ? 519 : 13;
      if (type == 0x21)
        body[8] = 0xfe; /* reserved cell flags */
      else
        body[4] = (i % 2) ? 0x01 : 0xe0; /* unknown circuit / reserved */
    }
    if (dgram_link_send(T.link, type, body, len) < 0) {
      snprintf(T.why, sizeof(T.why), "sending failed");
      T.done = 1;
      evloop_exit(T.loop);
      return;
    }
  }
  dgram_link_flush(T.link);
  printf("up rtt_ms=%.3f sent=%u\n", (double)st.rtt_us / 1000.0, T.records);
  T.done = T.ok = 1;
  evloop_exit(T.loop);
}

static void
timeout_cb(void *arg)
{
  (void)arg;
  snprintf(T.why, sizeof(T.why), "timed out");
  T.done = 1;
  evloop_exit(T.loop);
}

static void
capture(void *arg, const uint8_t *d, size_t len)
{
  struct {
    uint8_t buf[DTLS_LINK_MTU];
    size_t len;
  } *h = arg;
  if (h->len == 0 && len <= sizeof(h->buf)) {
    memcpy(h->buf, d, len);
    h->len = len;
  }
}

static int
flood(const pc_addr_t *target, unsigned n, unsigned k, const char *datadir)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (pc_addr_to_sockaddr(target, &ss, &sl) < 0)
    return 2;
  /* A genuine ClientHello without a cookie (any link certificate will
   * do for the client side). */
  char *err = NULL;
  relay_keys_t *keys = router_keys_load_or_create(datadir, NULL, time(NULL),
                                                  &err);
  if (!keys) {
    fprintf(stderr, "pctor-dgramtest: %s\n", err ? err : "keys");
    return 1;
  }
  dtls_context_t *dc = dtls_context_new(keys->tls);
  struct {
    uint8_t buf[DTLS_LINK_MTU];
    size_t len;
  } hello = {{0}, 0};
  dtls_conn_t *c = dtls_conn_new_client(dc, capture, &hello);
  (void)dtls_conn_handshake(c);
  if (!hello.len)
    return 1;
  int *fds = pc_malloc(k * sizeof(int));
  for (unsigned i = 0; i < k; i++) {
    fds[i] = socket(ss.ss_family, SOCK_DGRAM, 0);
    if (fds[i] < 0)
      return 1;
  }
  uint8_t junk[1300];
  unsigned sent_g = 0, sent_h = 0, hvr = 0;
  for (unsigned i = 0; i < n; i++) {
    int fd = fds[i % k];
    size_t len = 1 + (i * 37) % sizeof(junk);
    for (size_t j = 0; j < len; j++)
      junk[j] = (uint8_t)(i + j * 13);
    if (i % 3 == 0) { /* looks like a DTLS handshake record, but is not */
      junk[0] = 22;
      junk[1] = 0xfe;
      junk[2] = 0xfd;
    }
    if (sendto(fd, junk, len, 0, (struct sockaddr *)&ss, sl) > 0)
      sent_g++;
    if (sendto(fd, hello.buf, hello.len, 0, (struct sockaddr *)&ss, sl) > 0)
      sent_h++;
    if (i % 16 == 15)
      usleep(2000); /* do not overflow the receiver's socket buffer */
  }
  usleep(500000);
  uint8_t buf[2048];
  for (unsigned i = 0; i < k; i++) {
    ssize_t r;
    while ((r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
      if (r > 25 && buf[0] == 22 && buf[13] == 3)
        hvr++;
    close(fds[i]);
  }
  free(fds);
  printf("flood garbage=%u hellos=%u hvr=%u\n", sent_g, sent_h, hvr);
  dtls_conn_free(c);
  dtls_context_free(dc);
  router_keys_free(keys);
  return 0;
}

int
main(int argc, char **argv)
{
  const char *datadir = NULL, *target = NULL, *expect = NULL;
  unsigned timeout = 30, flood_n = 0, sources = 32;
  char *err = NULL;
  const toolarg_t opts[] = {
    {"--datadir", TOOLARG_STR, &datadir},
    {"--target", TOOLARG_STR, &target},
    {"--expect-ed", TOOLARG_STR, &expect},
    {"--records", TOOLARG_UINT, &T.records},
    {"--record-type", TOOLARG_UINT, &T.record_type},
    {"--timeout", TOOLARG_UINT, &timeout},
    {"--flood", TOOLARG_UINT, &flood_n},
    {"--sources", TOOLARG_UINT, &sources},
    {NULL, TOOLARG_STR, NULL},
  };
  if (toolargs_parse(argc, argv, opts) < 0)
    usage();
  pc_addr_t to;
  if (!target || pc_addr_parse(&to, target) < 0 || !to.port || !datadir ||
      sources == 0 || T.records > 1000 ||
      (T.record_type && (T.record_type < 0x20 || T.record_type > 0xff)))
    usage();
  if (crypt_global_init() < 0)
    return 1;
  if (log_parse_destination("notice stderr", &err) < 0)
    return 1;
  if (flood_n)
    return flood(&to, flood_n, sources, datadir);
  uint8_t ed[32];
  if (!expect || parse_id(expect, ed) < 0)
    usage();
  relay_keys_t *keys = router_keys_load_or_create(datadir, NULL, time(NULL),
                                                  &err);
  if (!keys) {
    fprintf(stderr, "pctor-dgramtest: %s\n", err ? err : "keys");
    return 1;
  }
  T.loop = evloop_new();
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  pc_addr_parse(&cfg.bind, to.family == AF_INET6 ? "[::1]:0" : "127.0.0.1:0");
  T.d = dgram_new(T.loop, keys, &cfg, &err);
  if (!T.d) {
    fprintf(stderr, "pctor-dgramtest: %s\n", err ? err : "dgram");
    return 1;
  }
  dgram_add_link_observer(T.d, on_link, NULL);
  T.link = dgram_link_open(T.d, &to, ed, NULL);
  if (!T.link) {
    printf("refused: cannot open a link\n");
    return 1;
  }
  evloop_timer_t *poll = evloop_timer_new(T.loop, poll_cb, NULL);
  evloop_timer_schedule_periodic(poll, 20000);
  evloop_timer_t *to_t = evloop_timer_new(T.loop, timeout_cb, NULL);
  evloop_timer_schedule(to_t, (uint64_t)timeout * 1000000u);
  evloop_run(T.loop);
  if (!T.ok)
    printf("refused: %s\n", T.why);
  fflush(stdout);
  evloop_timer_free(poll);
  evloop_timer_free(to_t);
  dgram_free(T.d);
  evloop_free(T.loop);
  router_keys_free(keys);
  return T.ok ? 0 : 1;
}
