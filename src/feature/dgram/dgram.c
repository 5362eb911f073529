/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram.c -- datagram links between relays (see dgram.h, doc/dgram.md).
 *
 * Design:
 *  - One UDP socket serves every peer; links are found by the source
 *    address of each datagram (hash map), and by Ed25519 identity once
 *    authenticated. A datagram from an address without a link goes to the
 *    stateless cookie exchange (lib/tls/dtls_listen): nothing is allocated
 *    for a source until it returns a valid cookie, and then only while
 *    fewer than max_handshaking links are unauthenticated.
 *  - A link's life: DTLS handshake (OpenSSL's retransmission timer, one
 *    evloop timer per link) -> AUTH (Tor's certificates inside the
 *    session: the responder sends CERTS 2,4,5,7, whose type 5 must certify
 *    the DTLS certificate the initiator saw; the initiator answers CERTS
 *    2,4,6,7 and an AUTH0003 body whose exporter value comes from this
 *    DTLS session; the responder confirms with AUTH_OK) -> UP -> closed.
 *    Authentication records are resent every second until answered,
 *    since datagrams may be lost; duplicates are answered idempotently.
 *  - Records are queued into the link's one pending frame and sent when
 *    the frame is full or from a deferred callback at the end of the loop
 *    iteration; nothing else is buffered per link, so a link costs its
 *    OpenSSL session plus one frame, whatever the upper layer sends.
 *  - Closing inside a callback only marks the link and unhooks it from
 *    the maps; it is freed from the deferred callback, after pending
 *    frames were walked.
 *  - A housekeeping timer (every 500 ms) ends handshakes that take too
 *    long, resends authentication records, sends keepalives and closes
 *    silent and idle links.
 *  - Bursts wait in the socket's receive buffer until the loop reads them:
 *    we ask for DGRAM_RCVBUF_DEFAULT (past net.core.rmem_max when allowed
 *    to), and read with recvmsg() so that the kernel's drop count
 *    (SO_RXQ_OVFL) comes along: drops are counted and logged once.
 *  - Bandwidth limits: every datagram to or from a peer that counts
 *    (dgram_config_t) is consumed from the groups; out of read tokens,
 *    the socket is not read until the refill (the kernel's buffer holds
 *    the burst); out of write tokens, upper layers that ask
 *    dgram_link_may_write() stop offering new cells and are woken at the
 *    refill, while what their engines must send (acknowledgements,
 *    retransmissions) goes and is counted, a deficit repaid later.
 */
#include "feature/dgram/dgram.h"
#include "lib/utcp/utcp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/or/channel.h"
#include "core/or/link_auth.h"
#include "core/proto/linkcells.h"
#include "core/proto/torcert.h"
#include "lib/bytes/bytes.h"
#include "lib/container/hmap.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/net/ratelimit.h"
#include "lib/tls/dtls.h"

#define ADDR_KEY_LEN 19
#define HOUSEKEEPING_US 500000u
#define AUTH_RESEND_US 1000000u
#define MAX_PEER_PORTS 16384
#define READS_PER_WAKEUP 64
/* Unauthenticated links from one IP address (any port) at once. */
#define MAX_HANDSHAKING_PER_ADDR 4
#define DGRAM_EXPORTER_LABEL "EXPORTER FOR PCTOR DATAGRAM LINK AUTH0003"

typedef enum {
  LINK_DTLS = 0,
  LINK_AUTH,
  LINK_UP,
  LINK_CLOSED,
} link_state_t;

struct dgram_link_t {
  dgram_t *d;
  pc_addr_t addr;
  uint8_t key[ADDR_KEY_LEN];
  link_state_t state;
  int initiator;
  dtls_conn_t *dtls;
  evloop_timer_t *timer; /* DTLS retransmission */
  /* The identity asked for (initiator). */
  uint8_t want_ed[32], want_rsa[20];
  int have_want_rsa;
  /* The peer, once its CERTS verified. */
  uint8_t peer_ed[32], peer_rsa[20], peer_rsa_sha256[32];
  int have_peer;
  int in_ed_map;
  /* Authentication transcript: SHA-256 of each side's CERTS body. */
  uint8_t slog[32], clog[32];
  uint8_t peer_auth_key[32];      /* responder: initiator's type 6 key */
  uint8_t auth_body[AUTH3_BODY_LEN]; /* initiator: what we sent */
  int auth_sent;
  uint64_t created_us, last_in_us, last_user_us, last_auth_us, last_ping_us;
  dgram_frame_t frame;
  int in_dirty;
  dgram_link_t *next_dirty, *next_dead;
  dgram_link_stats_t st;
};

struct dgram_t {
  evloop_t *loop;
  const relay_keys_t *keys;
  const tls_context_t *dtls_src; /* the link context dtls was made from */
  dtls_context_t *dtls;
  dtls_context_t *old_dtls; /* the previous one, for handshakes under way */
  dgram_config_t cfg;
  int fd;
  evloop_io_t *io;
  pc_addr_t bound;
  hmap_t *by_addr, *by_ed, *peer_ports;
  unsigned n_handshaking;
  evloop_timer_t *housekeeping;
  evloop_deferred_t *deferred;
  dgram_link_t *dirty, *dead;
  pc_addr_t cur_src; /* the source of the datagram being handled */
  struct {
    dgram_record_cb cb;
    void *arg;
  } handlers[256];
  struct {
    dgram_link_cb cb;
    void *arg;
  } observers[DGRAM_MAX_OBSERVERS];
  dgram_stats_t st;
  /* Bandwidth limits: the groups (referenced), the waiter that resumes
   * reading, the one that wakes the writers who asked. */
  ratelimit_t *bw[2];
  int reads_counted;             /* the last datagram read was counted */
  ratelimit_waiter_t read_waiter, write_waiter;
  struct {
    dgram_wake_fn fn;
    void *arg;
  } wake[DGRAM_MAX_OBSERVERS];
};

#define BUMP(l, f) ((l)->st.f++, (l)->d->st.f++)

static void link_close(dgram_link_t *l, const char *why, int notify_peer);
static void link_flush(dgram_link_t *l);

void
dgram_config_init(dgram_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->max_links = 1024;
  cfg->max_handshaking = 64;
  cfg->handshake_timeout_s = 20;
  cfg->idle_timeout_s = 600;
  cfg->peer_timeout_s = 60;
  cfg->keepalive_s = 15;
  cfg->open_announced = 1;
}

static void
addr_key(const pc_addr_t *a, uint8_t key[ADDR_KEY_LEN])
{
  memset(key, 0, ADDR_KEY_LEN);
  key[0] = a->family == AF_INET6 ? 6 : 4;
  memcpy(key + 1, a->addr, a->family == AF_INET6 ? 16 : 4);
  set_u16(key + 17, a->port);
}

static const char *
link_desc(const dgram_link_t *l, char *buf, size_t len)
{
  char a[PC_ADDR_STR_LEN];
  pc_addr_fmt(&l->addr, a, sizeof(a), 1);
  const uint8_t *id = l->have_peer ? l->peer_ed
                                   : (l->initiator ? l->want_ed : NULL);
  if (id) {
    char hex[17];
    for (int i = 0; i < 8; i++)
      snprintf(hex + 2 * i, 3, "%02x", id[i]);
    snprintf(buf, len, "%s (%s, ed25519 %s...)", a,
             l->initiator ? "we opened" : "peer opened", hex);
  } else {
    snprintf(buf, len, "%s (peer opened)", a);
  }
  return buf;
}

/* ---- bandwidth limits ---- */

/* Whether traffic with addr counts against the limits. */
static int
bw_counts(const dgram_t *d, const pc_addr_t *addr)
{
  return (d->bw[0] || d->bw[1]) &&
         (d->cfg.count_private || !pc_addr_is_private(addr));
}

static void
bw_consume(dgram_t *d, ratelimit_dir_t dir, size_t n)
{
  for (int i = 0; i < 2; i++)
    if (d->bw[i])
      ratelimit_consume(d->bw[i], dir, n);
}

/* A group without tokens for dir, or NULL. */
static ratelimit_t *
bw_empty(const dgram_t *d, ratelimit_dir_t dir)
{
  for (int i = 0; i < 2; i++)
    if (d->bw[i] && ratelimit_avail(d->bw[i], dir) == 0)
      return d->bw[i];
  return NULL;
}

static void
read_wake(void *arg)
{
  dgram_t *d = arg;
  ratelimit_t *rl = bw_empty(d, RATELIMIT_READ);
  if (rl) {
    ratelimit_wait(rl, RATELIMIT_READ, &d->read_waiter);
    return;
  }
  evloop_io_set(d->io, EVLOOP_READ);
}

static void
write_wake(void *arg)
{
  dgram_t *d = arg;
  ratelimit_t *rl = bw_empty(d, RATELIMIT_WRITE);
  if (rl) {
    ratelimit_wait(rl, RATELIMIT_WRITE, &d->write_waiter);
    return;
  }
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++) {
    dgram_wake_fn fn = d->wake[i].fn;
    if (!fn)
      continue;
    d->wake[i].fn = NULL;
    fn(d->wake[i].arg);
  }
}

int
dgram_link_may_write(dgram_link_t *l, dgram_wake_fn wake, void *arg)
{
  dgram_t *d = l->d;
  if (!bw_counts(d, &l->addr))
    return 1;
  ratelimit_t *rl = bw_empty(d, RATELIMIT_WRITE);
  if (!rl)
    return 1;
  int slot = -1;
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++) {
    if (d->wake[i].fn == wake && d->wake[i].arg == arg) {
      slot = i;
      break;
    }
    if (!d->wake[i].fn && slot < 0)
      slot = i;
  }
  if (slot < 0) {
    log_bug("DatagramPort: more writers wait for bandwidth than there are "
            "slots");
    return 1;
  }
  d->wake[slot].fn = wake;
  d->wake[slot].arg = arg;
  if (!ratelimit_waiter_is_waiting(&d->write_waiter))
    ratelimit_wait(rl, RATELIMIT_WRITE, &d->write_waiter);
  return 0;
}

void
dgram_cancel_wake(dgram_t *d, dgram_wake_fn wake, void *arg)
{
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++)
    if (d->wake[i].fn == wake && d->wake[i].arg == arg)
      d->wake[i].fn = NULL;
}

/* New groups (or none): references moved, waiters re-queued. */
static void
bw_set(dgram_t *d, ratelimit_t *global, ratelimit_t *relay)
{
  ratelimit_t *nw[2] = {global, relay};
  if (nw[0] == d->bw[0] && nw[1] == d->bw[1])
    return;
  ratelimit_waiter_cancel(&d->read_waiter);
  ratelimit_waiter_cancel(&d->write_waiter);
  for (int i = 0; i < 2; i++) {
    if (nw[i])
      ratelimit_ref(nw[i]);
    if (d->bw[i])
      ratelimit_unref(d->bw[i]);
    d->bw[i] = nw[i];
  }
  if (d->io)
    read_wake(d);
  write_wake(d);
}

/* ---- sending ---- */

static void
send_to(dgram_t *d, const pc_addr_t *to, const uint8_t *data, size_t len,
        dgram_link_t *l)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (pc_addr_to_sockaddr(to, &ss, &sl) < 0)
    return;
  ssize_t r = sendto(d->fd, data, len, MSG_NOSIGNAL, (struct sockaddr *)&ss,
                     sl);
  if (r == (ssize_t)len && bw_counts(d, to))
    bw_consume(d, RATELIMIT_WRITE, len);
  if (!l)
    return;
  if (r != (ssize_t)len) {
    l->st.send_failed++;
  } else {
    l->st.dgrams_out++;
    l->st.bytes_out += len;
    d->st.dgrams_out++;
  }
}

static void
link_output(void *arg, const uint8_t *data, size_t len)
{
  dgram_link_t *l = arg;
  send_to(l->d, &l->addr, data, len, l);
}

/* The listener's HelloVerifyRequests go to the datagram's source. */
static void
listener_output(void *arg, const uint8_t *data, size_t len)
{
  dgram_t *d = arg;
  send_to(d, &d->cur_src, data, len, NULL);
}

static void
schedule_deferred(dgram_t *d)
{
  evloop_deferred_schedule(d->deferred);
}

static size_t
link_frame_max(const dgram_link_t *l)
{
  size_t m = dtls_conn_max_record(l->dtls);
  return m < DGRAM_FRAME_MAX ? m : DGRAM_FRAME_MAX;
}

/* Queue a record (any type); sends the pending frame first if the record
 * does not fit it. -1 if it can never fit. */
static int
link_queue(dgram_link_t *l, uint8_t type, const uint8_t *body, size_t len)
{
  if (l->state == LINK_CLOSED || !dtls_conn_is_established(l->dtls))
    return -1;
  if (dgram_frame_is_empty(&l->frame))
    dgram_frame_init(&l->frame, link_frame_max(l));
  int r = dgram_frame_add(&l->frame, type, body, len);
  if (r == -1) {
    link_flush(l);
    dgram_frame_init(&l->frame, link_frame_max(l));
    r = dgram_frame_add(&l->frame, type, body, len);
  }
  if (r < 0)
    return -1;
  l->st.records_out++;
  l->d->st.records_out++;
  if (!l->in_dirty) {
    l->in_dirty = 1;
    l->next_dirty = l->d->dirty;
    l->d->dirty = l;
    schedule_deferred(l->d);
  }
  return 0;
}

static void
link_flush(dgram_link_t *l)
{
  if (dgram_frame_is_empty(&l->frame) || l->state == LINK_CLOSED)
    return;
  if (dtls_conn_write(l->dtls, l->frame.buf, l->frame.len) < 0)
    l->st.send_failed++;
  dgram_frame_init(&l->frame, link_frame_max(l));
}

static void
deferred_cb(void *arg)
{
  dgram_t *d = arg;
  while (d->dirty) {
    dgram_link_t *l = d->dirty;
    d->dirty = l->next_dirty;
    l->in_dirty = 0;
    l->next_dirty = NULL;
    link_flush(l);
  }
  while (d->dead) {
    dgram_link_t *l = d->dead;
    d->dead = l->next_dead;
    evloop_timer_free(l->timer);
    dtls_conn_free(l->dtls);
    pc_memwipe(l, sizeof(*l));
    free(l);
  }
}

/* ---- link objects ---- */

static void
notify(dgram_link_t *l, int up, const char *why)
{
  dgram_t *d = l->d;
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++)
    if (d->observers[i].cb)
      d->observers[i].cb(l, up, why, d->observers[i].arg);
}

static void link_timer_cb(void *arg);

static dgram_link_t *
link_new(dgram_t *d, const pc_addr_t *addr, int initiator, dtls_conn_t *c)
{
  dgram_link_t *l = pc_zalloc(sizeof(*l));
  l->d = d;
  l->addr = *addr;
  addr_key(addr, l->key);
  l->initiator = initiator;
  l->dtls = c;
  dtls_conn_set_output(c, link_output, l);
  l->timer = evloop_timer_new(d->loop, link_timer_cb, l);
  l->created_us = l->last_in_us = l->last_user_us = evloop_now_us(d->loop);
  l->st.initiator = initiator;
  dgram_frame_init(&l->frame, DGRAM_FRAME_MAX);
  hmap_set(d->by_addr, l->key, l);
  d->n_handshaking++;
  return l;
}

static void
rearm(dgram_link_t *l)
{
  uint64_t us;
  if (l->state == LINK_DTLS && dtls_conn_timeout_us(l->dtls, &us))
    evloop_timer_schedule(l->timer, us ? us : 1000);
  else
    evloop_timer_cancel(l->timer);
}

static void
link_close(dgram_link_t *l, const char *why, int notify_peer)
{
  dgram_t *d = l->d;
  char desc[160];
  if (l->state == LINK_CLOSED)
    return;
  int was_up = l->state == LINK_UP;
  if (notify_peer && dtls_conn_is_established(l->dtls)) {
    link_queue(l, DGRAM_REC_CLOSE, NULL, 0);
    link_flush(l);
    dtls_conn_shutdown(l->dtls);
  }
  log_msg(was_up || l->initiator ? LOG_SEV_NOTICE : LOG_SEV_INFO, __func__,
          "Datagram link %s closed: %s", link_desc(l, desc, sizeof(desc)),
          why);
  if (!was_up)
    d->n_handshaking--;
  l->state = LINK_CLOSED;
  l->st.up = 0;
  evloop_timer_cancel(l->timer);
  if (hmap_get(d->by_addr, l->key) == l)
    hmap_remove(d->by_addr, l->key);
  if (l->in_ed_map && hmap_get(d->by_ed, l->peer_ed) == l)
    hmap_remove(d->by_ed, l->peer_ed);
  d->st.links_closed++;
  if (was_up || l->initiator)
    notify(l, 0, why);
  l->next_dead = d->dead;
  d->dead = l;
  schedule_deferred(d);
}

static void
link_fail_auth(dgram_link_t *l, const char *why)
{
  l->d->st.auth_failed++;
  link_close(l, why, 1);
}

/* ---- authentication ---- */

/* Our CERTS payload for this role into a new var cell. */
static var_cell_t *
our_certs(dgram_t *d, int as_responder)
{
  var_cell_t *vc = NULL;
  if (link_certs_build(d->keys, as_responder, &vc) < 0 ||
      vc->payload_len > DGRAM_REC_BODY_MAX) {
    var_cell_free(vc);
    return NULL;
  }
  return vc;
}

static void
send_certs(dgram_link_t *l)
{
  var_cell_t *vc = our_certs(l->d, !l->initiator);
  if (!vc) {
    link_close(l, "our certificates do not fit a datagram", 1);
    return;
  }
  if (l->initiator)
    crypt_sha256(l->clog, vc->payload, vc->payload_len);
  else
    crypt_sha256(l->slog, vc->payload, vc->payload_len);
  link_queue(l, DGRAM_REC_CERTS, vc->payload, vc->payload_len);
  link_flush(l); /* CERTS fills a datagram of its own */
  var_cell_free(vc);
  l->last_auth_us = evloop_now_us(l->d->loop);
}

/* The AUTH0003 fields both sides compute; initiator_rsa_sha256 and the
 * Ed25519 identities in role order. */
static int
fill_auth3(dgram_link_t *l, auth3_t *a)
{
  const relay_keys_t *k = l->d->keys;
  uint8_t ours[32];
  uint8_t *der = NULL;
  size_t derlen = 0;
  memset(a, 0, sizeof(*a));
  if (link_rsa_sha256(k->rsa_identity, ours) < 0)
    return -1;
  memcpy(l->initiator ? a->cid : a->sid, ours, 32);
  memcpy(l->initiator ? a->sid : a->cid, l->peer_rsa_sha256, 32);
  memcpy(l->initiator ? a->cid_ed : a->sid_ed, k->ed_identity.pub, 32);
  memcpy(l->initiator ? a->sid_ed : a->cid_ed, l->peer_ed, 32);
  memcpy(a->slog, l->slog, 32);
  memcpy(a->clog, l->clog, 32);
  int r = l->initiator ? dtls_conn_peer_cert_der(l->dtls, &der, &derlen)
                       : dtls_conn_own_cert_der(l->dtls, &der, &derlen);
  if (r < 0)
    return -1;
  crypt_sha256(a->scert, der, derlen);
  free(der);
  return dtls_conn_export_key(l->dtls, a->tlssecrets, 32,
                              DGRAM_EXPORTER_LABEL, a->cid, 32);
}

static void
link_became_up(dgram_link_t *l)
{
  dgram_t *d = l->d;
  char desc[160];
  /* One link per peer: with two (both sides opened at once, or a peer
   * that restarted), both ends keep the one opened by the smaller
   * identity, or the newer one if the same side opened both. */
  dgram_link_t *old = hmap_get(d->by_ed, l->peer_ed);
  if (old && old != l) {
    const uint8_t *mine = d->keys->ed_identity.pub;
    const uint8_t *old_opener = old->initiator ? mine : old->peer_ed;
    const uint8_t *new_opener = l->initiator ? mine : l->peer_ed;
    if (memcmp(new_opener, old_opener, 32) > 0) {
      link_close(l, "a link with this relay already exists", 1);
      return;
    }
    link_close(old, "replaced by a newer link with this relay", 1);
  }
  l->state = LINK_UP;
  l->st.up = 1;
  d->n_handshaking--;
  d->st.links_authenticated++;
  l->last_user_us = l->last_in_us = evloop_now_us(d->loop);
  hmap_set(d->by_ed, l->peer_ed, l);
  l->in_ed_map = 1;
  log_notice("Datagram link %s is up: %s, peer authenticated",
             link_desc(l, desc, sizeof(desc)), dtls_conn_describe(l->dtls));
  /* A first round-trip sample right away (a transport's base RTT). */
  uint8_t ts[8];
  l->last_ping_us = evloop_now_us(d->loop);
  set_u64(ts, l->last_ping_us);
  link_queue(l, DGRAM_REC_PING, ts, sizeof(ts));
  notify(l, 1, "authenticated");
}

/* Initiator: the responder's CERTS. */
static void
init_handle_certs(dgram_link_t *l, const uint8_t *body, size_t len)
{
  certs_cell_t cc;
  link_certs_result_t res;
  const char *why = NULL;
  if (l->have_peer) { /* our answer was lost: send it again */
    send_certs(l);
    link_queue(l, DGRAM_REC_AUTHENTICATE, l->auth_body, sizeof(l->auth_body));
    return;
  }
  if (certs_cell_parse(&cc, body, len) < 0)
    return link_fail_auth(l, "malformed CERTS record");
  if (link_certs_check(&cc, CERTS_TYPE_ED_SIGNING_LINK, time(NULL), &res,
                       &why) < 0)
    return link_fail_auth(l, why);
  crypt_rsa_free(res.rsa);
  uint8_t *der = NULL;
  size_t derlen = 0;
  uint8_t digest[32];
  if (dtls_conn_peer_cert_der(l->dtls, &der, &derlen) < 0)
    return link_fail_auth(l, "peer presented no DTLS certificate");
  crypt_sha256(digest, der, derlen);
  free(der);
  if (pc_memneq(digest, res.third_key, 32))
    return link_fail_auth(l, "link certificate does not match the DTLS "
                             "certificate");
  if (pc_memneq(l->want_ed, res.ed_id, 32))
    return link_fail_auth(l, "peer has a different Ed25519 identity than we "
                             "expected");
  if (l->have_want_rsa && pc_memneq(l->want_rsa, res.rsa_id, 20))
    return link_fail_auth(l, "peer has a different RSA identity than we "
                             "expected");
  memcpy(l->peer_ed, res.ed_id, 32);
  memcpy(l->peer_rsa, res.rsa_id, 20);
  memcpy(l->peer_rsa_sha256, res.rsa_sha256, 32);
  crypt_sha256(l->slog, body, len);
  l->have_peer = 1;
  send_certs(l); /* sets clog */
  if (l->state == LINK_CLOSED)
    return;
  auth3_t a;
  if (fill_auth3(l, &a) < 0)
    return link_fail_auth(l, "cannot compute the authenticator");
  crypt_rand(a.rand, sizeof(a.rand));
  if (auth3_sign(l->auth_body, &a, &l->d->keys->ed_link_auth) < 0)
    return link_fail_auth(l, "signing the authenticator failed");
  l->auth_sent = 1;
  link_queue(l, DGRAM_REC_AUTHENTICATE, l->auth_body, sizeof(l->auth_body));
}

/* Responder: the initiator's CERTS. */
static void
resp_handle_certs(dgram_link_t *l, const uint8_t *body, size_t len)
{
  certs_cell_t cc;
  link_certs_result_t res;
  const char *why = NULL;
  if (l->have_peer)
    return; /* a resend; AUTHENTICATE decides */
  if (certs_cell_parse(&cc, body, len) < 0)
    return link_fail_auth(l, "malformed CERTS record");
  if (link_certs_check(&cc, CERTS_TYPE_ED_SIGNING_AUTH, time(NULL), &res,
                       &why) < 0)
    return link_fail_auth(l, why);
  crypt_rsa_free(res.rsa);
  memcpy(l->peer_ed, res.ed_id, 32);
  memcpy(l->peer_rsa, res.rsa_id, 20);
  memcpy(l->peer_rsa_sha256, res.rsa_sha256, 32);
  memcpy(l->peer_auth_key, res.third_key, 32);
  crypt_sha256(l->clog, body, len);
  l->have_peer = 1;
}

static void
resp_handle_authenticate(dgram_link_t *l, const uint8_t *body, size_t len)
{
  auth3_t want;
  if (l->state == LINK_UP) { /* our AUTH_OK was lost */
    link_queue(l, DGRAM_REC_AUTH_OK, NULL, 0);
    return;
  }
  if (!l->have_peer)
    return; /* CERTS was lost or reordered: the initiator resends both */
  if (fill_auth3(l, &want) < 0)
    return link_fail_auth(l, "cannot compute the authenticator");
  if (auth3_check(body, len, &want, l->peer_auth_key) < 0)
    return link_fail_auth(l, "AUTHENTICATE record does not verify");
  link_queue(l, DGRAM_REC_AUTH_OK, NULL, 0);
  link_became_up(l);
}

/* ---- receiving ---- */

static void
link_record(void *arg, uint8_t type, const uint8_t *body, size_t len)
{
  dgram_link_t *l = arg;
  dgram_t *d = l->d;
  if (l->state == LINK_CLOSED)
    return;
  l->st.records_in++;
  d->st.records_in++;
  if (type >= DGRAM_REC_USER_MIN) {
    if (l->state != LINK_UP) {
      BUMP(l, dropped_early);
      return;
    }
    if (!d->handlers[type].cb) {
      BUMP(l, dropped_type);
      return;
    }
    l->last_user_us = evloop_now_us(d->loop);
    d->handlers[type].cb(l, type, body, len, d->handlers[type].arg);
    return;
  }
  switch (type) {
  case DGRAM_REC_CERTS:
    if (l->state == LINK_AUTH && l->initiator)
      init_handle_certs(l, body, len);
    else if (l->state == LINK_AUTH)
      resp_handle_certs(l, body, len);
    return;
  case DGRAM_REC_AUTHENTICATE:
    if (!l->initiator)
      resp_handle_authenticate(l, body, len);
    return;
  case DGRAM_REC_AUTH_OK:
    if (l->initiator && l->state == LINK_AUTH && l->auth_sent)
      link_became_up(l);
    return;
  case DGRAM_REC_PING:
    if (l->state == LINK_UP && len <= 64)
      link_queue(l, DGRAM_REC_PONG, body, len);
    return;
  case DGRAM_REC_PONG:
    if (len == 8) {
      uint64_t sent = get_u64(body), now = evloop_now_us(d->loop);
      if (sent <= now && now - sent < 60000000u) {
        char desc[160];
        if (!l->st.rtt_us)
          log_info("Datagram link %s: first round trip %.3f ms",
                   link_desc(l, desc, sizeof(desc)),
                   (double)(now - sent) / 1000.0);
        l->st.rtt_us = now - sent;
      }
    }
    return;
  case DGRAM_REC_CLOSE:
    link_close(l, "closed by the peer", 0);
    return;
  default:
    BUMP(l, dropped_type);
    return;
  }
}

static void
dtls_established(dgram_link_t *l)
{
  l->state = LINK_AUTH;
  evloop_timer_cancel(l->timer);
  if (!l->initiator)
    send_certs(l);
}

static void
link_handshake_step(dgram_link_t *l)
{
  int r = dtls_conn_handshake(l->dtls);
  if (r == TLS_OK) {
    dtls_established(l);
  } else if (r != TLS_WANT_READ) {
    l->d->st.handshake_failed++;
    link_close(l, dtls_conn_last_error(l->dtls), 0);
    return;
  }
  rearm(l);
}

static void
link_input(dgram_link_t *l, const uint8_t *data, size_t len)
{
  uint8_t plain[DTLS_LINK_MTU];
  l->st.dgrams_in++;
  l->st.bytes_in += len;
  dtls_conn_input(l->dtls, data, len);
  if (l->state == LINK_DTLS) {
    link_handshake_step(l);
    if (l->state != LINK_AUTH)
      return;
    /* The datagram was handshake; nothing more in it. */
    l->last_in_us = evloop_now_us(l->d->loop);
    return;
  }
  ssize_t n = dtls_conn_read(l->dtls, plain, sizeof(plain));
  if (n == TLS_WANT_READ || n == DTLS_OVERSIZE) {
    /* Forged, replayed, or a handshake retransmission OpenSSL answered. */
    BUMP(l, dropped_dtls);
    return;
  }
  if (n < 0) {
    link_close(l, n == TLS_CLOSED ? "closed by the peer (close_notify)"
                                  : dtls_conn_last_error(l->dtls),
               0);
    return;
  }
  l->last_in_us = evloop_now_us(l->d->loop);
  dgram_frame_status_t s =
      dgram_frame_parse(plain, (size_t)n, link_record, l, NULL);
  if (s != DGRAM_FRAME_OK)
    BUMP(l, dropped_frame);
}

/* Unauthenticated links with src's IP address (any port). Runs only for
 * ClientHellos with a valid cookie, over at most max_links links. */
static unsigned
handshaking_from(dgram_t *d, const pc_addr_t *src)
{
  hmap_iter_t it;
  void *v;
  unsigned n = 0;
  if (d->n_handshaking == 0)
    return 0;
  hmap_iter_init(&it, d->by_addr);
  while (hmap_iter_next(&it, NULL, &v)) {
    const dgram_link_t *l = v;
    if (l->state != LINK_UP && pc_addr_eq(&l->addr, src, 0))
      n++;
  }
  return n;
}

/* A ClientHello whose cookie checked out, from src: a new responder link
 * (possibly replacing one with that address). */
static void
accept_link(dgram_t *d, const pc_addr_t *src, dtls_conn_t *c,
            dgram_link_t *existing)
{
  if (existing) {
    if (existing->initiator && existing->state != LINK_UP &&
        memcmp(d->keys->ed_identity.pub, existing->want_ed, 32) < 0) {
      /* Both opened at once; we have the smaller identity, so ours wins. */
      dtls_conn_free(c);
      return;
    }
    link_close(existing, "the peer started a new session", 0);
  }
  if (hmap_size(d->by_addr) >= d->cfg.max_links ||
      d->n_handshaking >= d->cfg.max_handshaking ||
      handshaking_from(d, src) >= MAX_HANDSHAKING_PER_ADDR) {
    static log_ratelim_t rl = LOG_RATELIM_INIT(300, 1);
    unsigned sup = 0;
    d->st.refused_full++;
    if (log_ratelim_allow(&rl, time(NULL), &sup))
      log_notice("Datagram links: refusing a new session (%zu links, %u "
                 "handshaking; %u more refusals suppressed)",
                 hmap_size(d->by_addr), d->n_handshaking, sup);
    dtls_conn_free(c);
    return;
  }
  dgram_link_t *l = link_new(d, src, 0, c);
  d->st.links_accepted++;
  link_handshake_step(l);
}

static int ensure_dtls(dgram_t *d, char **err);

static void
handle_datagram(dgram_t *d, const pc_addr_t *src, const uint8_t *data,
                size_t len)
{
  uint8_t key[ADDR_KEY_LEN];
  addr_key(src, key);
  dgram_link_t *l = hmap_get(d->by_addr, key);
  d->st.dgrams_in++;
  if (l && !(dtls_is_client_hello(data, len) &&
             (l->initiator || l->state != LINK_DTLS))) {
    link_input(l, data, len);
    return;
  }
  /* No session for this source (or a new ClientHello where we have one):
   * the stateless cookie exchange. */
  dtls_conn_t *c = NULL;
  if (ensure_dtls(d, NULL) < 0) /* after a link key rotation */
    return;
  d->cur_src = *src;
  switch (dtls_listen(d->dtls, key, sizeof(key), data, len, listener_output,
                      d, &c)) {
  case DTLS_LISTEN_DROPPED:
    d->st.dropped_no_link++;
    return;
  case DTLS_LISTEN_VERIFY:
    d->st.hello_verify_sent++;
    return;
  case DTLS_LISTEN_ACCEPT:
    accept_link(d, src, c, l);
    return;
  }
}

/* The kernel's count of datagrams it dropped on our socket (SO_RXQ_OVFL,
 * sent along with a datagram once any was dropped): counted, and said once
 * in the log, with what to do about it. */
static void
note_kernel_drops(dgram_t *d, const struct msghdr *mh)
{
#ifdef SO_RXQ_OVFL
  for (struct cmsghdr *cm = CMSG_FIRSTHDR((struct msghdr *)mh); cm;
       cm = CMSG_NXTHDR((struct msghdr *)mh, cm)) {
    uint32_t drops;
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SO_RXQ_OVFL ||
        cm->cmsg_len < CMSG_LEN(sizeof(drops)))
      continue;
    memcpy(&drops, CMSG_DATA(cm), sizeof(drops));
    if (drops <= d->st.dropped_rcvbuf)
      continue;
    if (d->st.dropped_rcvbuf == 0)
      log_notice("DatagramPort: the kernel dropped %u datagrams because "
                 "the UDP receive buffer (%llu bytes) was full; a larger "
                 "net.core.rmem_max lets pctor ask for more (counted in the "
                 "statistics, not logged again)",
                 (unsigned)drops, (unsigned long long)d->st.rcvbuf_bytes);
    d->st.dropped_rcvbuf = drops;
  }
#else
  (void)d;
  (void)mh;
#endif
}

static void
socket_cb(int fd, int what, void *arg)
{
  dgram_t *d = arg;
  uint8_t buf[2048];
  union {
    struct cmsghdr align;
    uint8_t b[CMSG_SPACE(sizeof(uint32_t))];
  } ctl;
  (void)what;
  for (int i = 0; i < READS_PER_WAKEUP; i++) {
    /* Out of read tokens (and the peers count): leave the datagrams in
     * the kernel's buffer until the refill. */
    ratelimit_t *rl = d->reads_counted ? bw_empty(d, RATELIMIT_READ) : NULL;
    if (rl) {
      evloop_io_set(d->io, 0);
      ratelimit_wait(rl, RATELIMIT_READ, &d->read_waiter);
      return;
    }
    struct sockaddr_storage ss;
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_name = &ss;
    mh.msg_namelen = sizeof(ss);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);
    ssize_t n = recvmsg(fd, &mh, MSG_TRUNC);
    if (n < 0)
      return; /* EAGAIN, or an ICMP error reported on the socket */
    if (mh.msg_controllen)
      note_kernel_drops(d, &mh);
    pc_addr_t src;
    if (pc_addr_from_sockaddr(&src, (struct sockaddr *)&ss, mh.msg_namelen) <
        0)
      continue;
    d->reads_counted = bw_counts(d, &src);
    if (d->reads_counted)
      bw_consume(d, RATELIMIT_READ, (size_t)n);
    if (n > DTLS_LINK_MTU) {
      d->st.dropped_oversize++;
      continue;
    }
    handle_datagram(d, &src, buf, (size_t)n);
  }
}

/* Ask for a receive buffer of `want` bytes: beyond net.core.rmem_max with
 * CAP_NET_ADMIN (SO_RCVBUFFORCE), else as much as the kernel allows; ask
 * for the kernel's drop counts. What we got (as the kernel reports it). */
static uint64_t
set_rcvbuf(int fd, unsigned want)
{
  int sz = want > INT32_MAX / 2 ? INT32_MAX / 2 : (int)want;
#ifdef SO_RCVBUFFORCE
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
#endif
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
#ifdef SO_RXQ_OVFL
  int on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on));
#endif
  int got = 0;
  socklen_t gl = sizeof(got);
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &gl) < 0 || got < 0)
    got = 0;
  return (uint64_t)got;
}

/* ---- timers ---- */

static void
link_timer_cb(void *arg)
{
  dgram_link_t *l = arg;
  if (l->state != LINK_DTLS)
    return;
  if (dtls_conn_handle_timeout(l->dtls) < 0) {
    l->d->st.handshake_failed++;
    link_close(l, dtls_conn_last_error(l->dtls), 0);
    return;
  }
  rearm(l);
}

static void
housekeep_link(dgram_link_t *l, uint64_t now)
{
  const dgram_config_t *c = &l->d->cfg;
  if (l->state == LINK_DTLS || l->state == LINK_AUTH) {
    if (now - l->created_us > (uint64_t)c->handshake_timeout_s * 1000000u) {
      l->d->st.handshake_failed++;
      link_close(l, l->state == LINK_DTLS ? "DTLS handshake timed out"
                                          : "authentication timed out",
                 1);
      return;
    }
    if (l->state == LINK_AUTH && now - l->last_auth_us >= AUTH_RESEND_US) {
      if (!l->initiator && !l->have_peer) {
        send_certs(l);
      } else if (l->initiator && l->auth_sent) {
        send_certs(l);
        link_queue(l, DGRAM_REC_AUTHENTICATE, l->auth_body,
                   sizeof(l->auth_body));
      }
      l->last_auth_us = now;
    }
    return;
  }
  if (l->state != LINK_UP)
    return;
  if (now - l->last_in_us > (uint64_t)c->peer_timeout_s * 1000000u) {
    link_close(l, "the peer went silent", 1);
    return;
  }
  if (now - l->last_user_us > (uint64_t)c->idle_timeout_s * 1000000u) {
    link_close(l, "idle", 1);
    return;
  }
  uint64_t ka = (uint64_t)c->keepalive_s * 1000000u;
  if (now - l->last_in_us >= ka && now - l->last_ping_us >= ka) {
    uint8_t ts[8];
    set_u64(ts, now);
    link_queue(l, DGRAM_REC_PING, ts, sizeof(ts));
    l->last_ping_us = now;
  }
}

static void
housekeeping_cb(void *arg)
{
  dgram_t *d = arg;
  size_t n = hmap_size(d->by_addr), i = 0;
  if (!n)
    return;
  dgram_link_t **all = pc_malloc(n * sizeof(*all));
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, d->by_addr);
  while (i < n && hmap_iter_next(&it, NULL, &v))
    all[i++] = v;
  uint64_t now = evloop_now_us(d->loop);
  for (size_t k = 0; k < i; k++)
    housekeep_link(all[k], now);
  free(all);
}

/* ---- public API ---- */

static int
ensure_dtls(dgram_t *d, char **err)
{
  if (d->dtls && d->dtls_src == d->keys->tls)
    return 0;
  dtls_context_t *n = dtls_context_new(d->keys->tls);
  if (!n) {
    if (err)
      *err = pc_strdup("cannot make a DTLS context from the link keys");
    return -1;
  }
  /* Sessions hold their own reference to OpenSSL's context, but a
   * responder's handshake still checks its cookie against ours: keep one
   * previous generation (key rotations are days apart). */
  dtls_context_free(d->old_dtls);
  d->old_dtls = d->dtls;
  d->dtls = n;
  d->dtls_src = d->keys->tls;
  return 0;
}

dgram_t *
dgram_new(evloop_t *loop, const relay_keys_t *keys, const dgram_config_t *cfg,
          char **err)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (!keys || !keys->tls) {
    *err = pc_strdup("datagram links need relay keys");
    return NULL;
  }
  if (pc_addr_to_sockaddr(&cfg->bind, &ss, &sl) < 0) {
    *err = pc_strdup("bad DatagramPort address");
    return NULL;
  }
  int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = pc_asprintf("socket: %s", strerror(errno));
    return NULL;
  }
  /* Room for bursts (the kernel caps SO_SNDBUF at net.core.wmem_max). */
  int bufsz = 1 << 20;
  uint64_t rcvbuf =
      set_rcvbuf(fd, cfg->rcvbuf ? cfg->rcvbuf : DGRAM_RCVBUF_DEFAULT);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
  if (ss.ss_family == AF_INET6) {
    int on = 1;
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  }
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
    char a[PC_ADDR_STR_LEN];
    *err = pc_asprintf("cannot bind UDP %s: %s",
                       pc_addr_fmt(&cfg->bind, a, sizeof(a), 1),
                       strerror(errno));
    close(fd);
    return NULL;
  }
  dgram_t *d = pc_zalloc(sizeof(*d));
  d->loop = loop;
  d->keys = keys;
  d->cfg = *cfg;
  if (!d->cfg.max_links)
    d->cfg.max_links = 1;
  if (!d->cfg.max_handshaking)
    d->cfg.max_handshaking = 1;
  d->fd = fd;
  d->st.rcvbuf_bytes = rcvbuf;
  log_info("DatagramPort: UDP receive buffer of %llu bytes",
           (unsigned long long)rcvbuf);
  sl = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
      pc_addr_from_sockaddr(&d->bound, (struct sockaddr *)&ss, sl) < 0)
    d->bound = cfg->bind;
  if (ensure_dtls(d, err) < 0) {
    close(fd);
    free(d);
    return NULL;
  }
  d->by_addr = hmap_new(ADDR_KEY_LEN);
  d->by_ed = hmap_new(32);
  d->peer_ports = hmap_new(32);
  ratelimit_waiter_init(&d->read_waiter, read_wake, d);
  ratelimit_waiter_init(&d->write_waiter, write_wake, d);
  d->io = evloop_io_new(loop, fd, socket_cb, d);
  evloop_io_set(d->io, EVLOOP_READ);
  bw_set(d, cfg->bw_global, cfg->bw_relay);
  d->housekeeping = evloop_timer_new(loop, housekeeping_cb, d);
  evloop_timer_schedule_periodic(d->housekeeping, HOUSEKEEPING_US);
  d->deferred = evloop_deferred_new(loop, deferred_cb, d);
  return d;
}

static dgram_t *attached; /* the one announcing on TLS links */

const dgram_t *
dgram_instance(void)
{
  return attached;
}
static void open_cb(channel_t *chan, void *arg);

void
dgram_free_(dgram_t *d)
{
  if (!d)
    return;
  if (attached == d) {
    channel_register_var_cell_handler(DGRAM_ANNOUNCE_CELL_COMMAND, NULL);
    channel_remove_open_observer(open_cb, NULL);
    attached = NULL;
  }
  hmap_iter_t it;
  void *v;
  for (;;) {
    hmap_iter_init(&it, d->by_addr);
    if (!hmap_iter_next(&it, NULL, &v))
      break;
    link_close(v, "shutting down", 1);
  }
  deferred_cb(d);
  memset(d->wake, 0, sizeof(d->wake));
  bw_set(d, NULL, NULL);
  evloop_deferred_free(d->deferred);
  evloop_timer_free(d->housekeeping);
  evloop_io_free(d->io);
  close(d->fd);
  hmap_free_(d->by_addr, NULL);
  hmap_free_(d->by_ed, NULL);
  hmap_free_(d->peer_ports, NULL);
  dtls_context_free(d->dtls);
  dtls_context_free(d->old_dtls);
  free(d);
}

void
dgram_reconfigure(dgram_t *d, const dgram_config_t *cfg)
{
  pc_addr_t bind = d->bound;
  d->cfg = *cfg;
  d->cfg.bind = bind;
  bw_set(d, cfg->bw_global, cfg->bw_relay);
  if (!d->cfg.max_links)
    d->cfg.max_links = 1;
  if (!d->cfg.max_handshaking)
    d->cfg.max_handshaking = 1;
}

const pc_addr_t *
dgram_bound_addr(const dgram_t *d)
{
  return &d->bound;
}

void
dgram_set_keys(dgram_t *d, const relay_keys_t *keys)
{
  d->keys = keys;
  (void)ensure_dtls(d, NULL);
}

dgram_link_t *
dgram_link_find(const dgram_t *d, const uint8_t ed_id[32])
{
  return hmap_get(d->by_ed, ed_id);
}

dgram_link_t *
dgram_link_open(dgram_t *d, const pc_addr_t *addr, const uint8_t ed_id[32],
                const uint8_t *rsa_id)
{
  uint8_t key[ADDR_KEY_LEN];
  dgram_link_t *l = dgram_link_find(d, ed_id);
  if (l)
    return l;
  addr_key(addr, key);
  l = hmap_get(d->by_addr, key);
  if (l)
    return l->initiator && !memcmp(l->want_ed, ed_id, 32) ? l : NULL;
  if (!pc_memneq(ed_id, d->keys->ed_identity.pub, 32) ||
      hmap_size(d->by_addr) >= d->cfg.max_links ||
      d->n_handshaking >= d->cfg.max_handshaking ||
      addr->port == 0 || ensure_dtls(d, NULL) < 0)
    return NULL;
  dtls_conn_t *c = dtls_conn_new_client(d->dtls, NULL, NULL);
  l = link_new(d, addr, 1, c);
  memcpy(l->want_ed, ed_id, 32);
  if (rsa_id) {
    memcpy(l->want_rsa, rsa_id, 20);
    l->have_want_rsa = 1;
  }
  d->st.links_opened++;
  char desc[160];
  log_info("Opening datagram link to %s", link_desc(l, desc, sizeof(desc)));
  link_handshake_step(l);
  return l->state == LINK_CLOSED ? NULL : l;
}

int
dgram_link_is_up(const dgram_link_t *l)
{
  return l && l->state == LINK_UP;
}

const uint8_t *
dgram_link_peer_ed_id(const dgram_link_t *l)
{
  return l->have_peer ? l->peer_ed : NULL;
}

const uint8_t *
dgram_link_peer_rsa_id(const dgram_link_t *l)
{
  return l->have_peer ? l->peer_rsa : NULL;
}

const pc_addr_t *
dgram_link_peer_addr(const dgram_link_t *l)
{
  return &l->addr;
}

int
dgram_link_send(dgram_link_t *l, uint8_t type, const uint8_t *body,
                size_t len)
{
  if (!l || l->state != LINK_UP || type < DGRAM_REC_USER_MIN ||
      len > dgram_link_max_record(l))
    return -1;
  if (link_queue(l, type, body, len) < 0)
    return -1;
  l->last_user_us = evloop_now_us(l->d->loop);
  return 0;
}

size_t
dgram_link_max_record(const dgram_link_t *l)
{
  size_t m = link_frame_max(l);
  return m > 1 + DGRAM_REC_HDR_LEN ? m - 1 - DGRAM_REC_HDR_LEN : 0;
}

void
dgram_link_flush(dgram_link_t *l)
{
  link_flush(l);
}

void
dgram_link_close(dgram_link_t *l, const char *why)
{
  link_close(l, why, 1);
}

int
dgram_register_handler(dgram_t *d, uint8_t type, dgram_record_cb cb,
                       void *arg)
{
  if (type < DGRAM_REC_USER_MIN)
    return -1;
  if (cb && d->handlers[type].cb &&
      (d->handlers[type].cb != cb || d->handlers[type].arg != arg)) {
    log_warn("Datagram record type %u already has a handler", type);
    return -1;
  }
  d->handlers[type].cb = cb;
  d->handlers[type].arg = cb ? arg : NULL;
  return 0;
}

int
dgram_add_link_observer(dgram_t *d, dgram_link_cb cb, void *arg)
{
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++)
    if (!d->observers[i].cb) {
      d->observers[i].cb = cb;
      d->observers[i].arg = arg;
      return 0;
    }
  return -1;
}

void
dgram_remove_link_observer(dgram_t *d, dgram_link_cb cb, void *arg)
{
  for (int i = 0; i < DGRAM_MAX_OBSERVERS; i++)
    if (d->observers[i].cb == cb && d->observers[i].arg == arg)
      d->observers[i].cb = NULL;
}

void
dgram_link_get_stats(const dgram_link_t *l, dgram_link_stats_t *out)
{
  *out = l->st;
}

void
dgram_get_stats(const dgram_t *d, dgram_stats_t *out)
{
  *out = d->st;
  out->links = (unsigned)hmap_size(d->by_addr);
  out->links_up = (unsigned)hmap_size(d->by_ed);
}

void
dgram_foreach_link(const dgram_t *d,
                   void (*fn)(const dgram_link_t *l, void *arg), void *arg)
{
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, d->by_addr);
  while (hmap_iter_next(&it, NULL, &v))
    fn(v, arg);
}

/* ---- the DatagramPort announcement on TLS links ---- */

static void
announce(channel_t *chan)
{
  if (!attached || !channel_is_authenticated_relay(chan))
    return;
  var_cell_t *vc = var_cell_new(4);
  vc->circ_id = 0;
  vc->command = DGRAM_ANNOUNCE_CELL_COMMAND;
  vc->payload[0] = DGRAM_ANNOUNCE_VERSION;
  set_u16(vc->payload + 1, attached->bound.port);
  vc->payload[3] = 0; /* flags, none yet */
  channel_send_var_cell(chan, vc);
  var_cell_free(vc);
}

static void
open_cb(channel_t *chan, void *arg)
{
  (void)arg;
  announce(chan);
}

static void
announce_cb(channel_t *chan, const var_cell_t *vc)
{
  dgram_t *d = attached;
  const uint8_t *ed = channel_peer_ed_id(chan);
  if (!d || !channel_is_authenticated_relay(chan) || !ed ||
      vc->payload_len < 3 || vc->payload[0] != DGRAM_ANNOUNCE_VERSION)
    return; /* later versions: a new command or a version we ignore */
  uint16_t port = get_u16(vc->payload + 1);
  if (port == 0) {
    hmap_remove(d->peer_ports, ed);
    return;
  }
  if (!hmap_get(d->peer_ports, ed) &&
      hmap_size(d->peer_ports) >= MAX_PEER_PORTS)
    return;
  hmap_set(d->peer_ports, ed, (void *)(uintptr_t)port);
  if (d->cfg.open_announced && channel_is_outgoing(chan)) {
    pc_addr_t to = *channel_peer_addr(chan);
    to.port = port;
    (void)dgram_link_open(d, &to, ed, channel_peer_rsa_id(chan));
  }
}

int
dgram_attach_channels(dgram_t *d)
{
  if (attached)
    return attached == d ? 0 : -1;
  if (channel_add_open_observer(open_cb, NULL) < 0)
    return -1;
  if (channel_register_var_cell_handler(DGRAM_ANNOUNCE_CELL_COMMAND,
                                        announce_cb) < 0) {
    channel_remove_open_observer(open_cb, NULL);
    return -1;
  }
  attached = d;
  return 0;
}

uint16_t
dgram_peer_port(const dgram_t *d, const uint8_t ed_id[32])
{
  return (uint16_t)(uintptr_t)hmap_get(d->peer_ports, ed_id);
}

/* ---- the transport choice ---- */

const char *
circuit_transport_name(circuit_transport_t t)
{
  switch (t) {
  case CIRCUIT_TRANSPORT_TLS:
    return "tls";
  case CIRCUIT_TRANSPORT_PCTCP:
    return "pctcp";
  case CIRCUIT_TRANSPORT_DTLS_TCP:
    return "dtls-tcp";
  case CIRCUIT_TRANSPORT_BACKTAP:
    return "backtap";
  }
  return "?";
}

int
circuit_transport_is_supported(circuit_transport_t t)
{
  return t == CIRCUIT_TRANSPORT_TLS || t == CIRCUIT_TRANSPORT_PCTCP ||
         t == CIRCUIT_TRANSPORT_BACKTAP ||
         (t == CIRCUIT_TRANSPORT_DTLS_TCP && utcp_available());
}

circuit_transport_t
circuit_transport_for_peer(circuit_transport_t configured,
                           int peer_offers_dgram, int peer_link_up)
{
  if (configured == CIRCUIT_TRANSPORT_TLS ||
      configured == CIRCUIT_TRANSPORT_PCTCP)
    return configured;
  if (!circuit_transport_is_supported(configured) || !peer_offers_dgram ||
      !peer_link_up)
    return CIRCUIT_TRANSPORT_TLS;
  return configured;
}
