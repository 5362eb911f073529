/* SPDX-License-Identifier: BSD-3-Clause */
/* selftest.c -- the ORPort reachability self-test (see selftest.h).
 *
 * IPv6: a relay asked to extend to us reuses a channel it already has with
 * our identity, whatever its address family (tor's channel choice for
 * extensions: a canonical channel serves any address), so a built circuit
 * alone does not show that the IPv6 ORPort is reachable. As tor counts
 * only CREATEs that arrive on an inbound channel of the tested family, an
 * IPv6 attempt succeeds only if, when it is built, an open inbound IPv6
 * channel from the relay before us exists; and that relay is chosen among
 * those we have no channel with, when there are any, so that it must open
 * a new connection to our IPv6 address. The IPv4 test (selftest_set_other)
 * would give it one: while both run, the IPv6 test avoids the relays of
 * the IPv4 attempt in progress, and the IPv4 test the IPv6 attempt's relay
 * before us, when others are available.
 *
 * Bandwidth: the first test circuit that confirms the ORPort also carries
 * the bandwidth self-test, as tor's: DROP cells from us, through the two
 * relays, back to us, so that the relay reads and writes some traffic
 * and its first descriptors advertise a bandwidth above 0. The builder is
 * kept SELFTEST_BW_HOLD_SECS for the cells to cross, then freed.
 *
 * One periodic timer drives everything: each tick (the first one second
 * after the address is set, then every interval) abandons an attempt
 * still pending from the previous tick, logs the complaint when it is due
 * and starts a new attempt. The circuit itself is built by
 * feature/client's circbuild; its callbacks only record the outcome and
 * ask a zero-delay timer to free the builder, since a builder must not be
 * freed from inside its own callback.
 */
#include "feature/relay/selftest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/proto/cell.h"
#include "core/proto/create.h"
#include "core/proto/relay_msg.h"
#include "feature/client/circbuild.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct selftest_t {
  evloop_t *loop;
  selftest_config_t cfg;
  pc_addr_t addr;           /* advertised ORPort; family AF_UNSPEC: none */
  int reachable;
  circbuild_t *cb;          /* the attempt in progress, or NULL */
  circbuild_t *done_cb;     /* an attempt that ended, freed by reap */
  circbuild_t *bw_cb;       /* the bandwidth test's circuit, until bw_end */
  int bw_done;
  uint8_t hop_ids[2][20];   /* RSA identities of the attempt's two relays */
  const selftest_t *other;  /* the other family's test, or NULL */
  evloop_timer_t *tick, *reap, *bw_end;
  time_t started, last_complaint;
  selftest_stats_t st;
};

static unsigned
interval_secs(const selftest_t *st)
{
  return st->cfg.testing ? SELFTEST_TESTING_INTERVAL_SECS
                         : SELFTEST_INTERVAL_SECS;
}

static unsigned
complain_secs(const selftest_t *st)
{
  return st->cfg.testing ? SELFTEST_TESTING_COMPLAIN_SECS
                         : SELFTEST_COMPLAIN_SECS;
}

static void
reap_cb(void *arg)
{
  selftest_t *st = arg;
  circbuild_free(st->done_cb);
}

static void
bw_end_cb(void *arg)
{
  selftest_t *st = arg;
  circbuild_free(st->bw_cb);
}

unsigned
selftest_bw_cells(uint64_t rate)
{
  uint64_t cells = rate * 10 / CELL_MAX_NETWORK_LEN;
  return cells > SELFTEST_BW_MAX_CELLS ? SELFTEST_BW_MAX_CELLS
                                       : (unsigned)cells;
}

/* The bandwidth self-test on cb's circuit (built, ending at us): returns 1
 * if cb is kept for it (then not to be freed now). */
static int
bandwidth_test(selftest_t *st, circbuild_t *cb, origin_circuit_t *circ)
{
  if (!st->cfg.bw_test_cells || st->bw_done || !circ)
    return 0;
  st->bw_done = 1;
  unsigned sent = 0;
  for (unsigned i = 0; i < st->cfg.bw_test_cells; i++) {
    if (origin_circuit_send_relay(circ, 2, RELAY_COMMAND_DROP, 0, NULL, 0))
      break;
    sent++;
  }
  log_notice("Performing bandwidth self-test: %u cells through our own "
             "ORPort...done.", sent);
  if (st->cb == cb)
    st->cb = NULL;
  st->bw_cb = cb;
  evloop_timer_schedule(st->bw_end, (uint64_t)SELFTEST_BW_HOLD_SECS * 1000000);
  return 1;
}

/* The attempt cb ended: free it soon (not from inside its callback). */
static void
attempt_ended(selftest_t *st, circbuild_t *cb)
{
  if (st->cb == cb)
    st->cb = NULL;
  circbuild_free(st->done_cb); /* an older one, if the reaper has not run */
  st->done_cb = cb;
  evloop_timer_schedule(st->reap, 0);
}

/* Channels with one relay: any open one, and inbound IPv6 ones. */
typedef struct chan_seen_t {
  const uint8_t *rsa_id;
  int any, inbound_v6;
} chan_seen_t;

static void
see_channel(channel_t *chan, void *arg)
{
  chan_seen_t *cs = arg;
  const uint8_t *id = channel_peer_rsa_id(chan);
  if (!id || memcmp(id, cs->rsa_id, 20) || !channel_is_open(chan))
    return;
  cs->any = 1;
  if (!channel_is_outgoing(chan) &&
      channel_peer_addr(chan)->family == AF_INET6)
    cs->inbound_v6 = 1;
}

static chan_seen_t
channels_with(const uint8_t *rsa_id)
{
  chan_seen_t cs = {rsa_id, 0, 0};
  channels_foreach(see_channel, &cs);
  return cs;
}

static void
built_cb(circbuild_t *cb, origin_circuit_t *circ, void *arg)
{
  selftest_t *st = arg;
  char a[PC_ADDR_STR_LEN];
  if (st->reachable) {
    attempt_ended(st, cb);
    return;
  }
  if (st->addr.family == AF_INET6 &&
      !channels_with(st->hop_ids[1]).inbound_v6) {
    attempt_ended(st, cb);
    st->st.n_failed++;
    log_info("Reachability test circuit built, but the relay before us "
             "used a connection that is not an IPv6 one from it to us; "
             "trying again in %u s", interval_secs(st));
    return;
  }
  st->reachable = 1;
  evloop_timer_cancel(st->tick);
  int publish = !st->cfg.publishable || st->cfg.publishable(st->cfg.arg);
  log_notice("Self-testing indicates your ORPort %s is reachable from "
             "the outside. Excellent.%s",
             pc_addr_fmt(&st->addr, a, sizeof(a), 1),
             publish ? " Publishing server descriptor." : "");
  if (!bandwidth_test(st, cb, circ))
    attempt_ended(st, cb);
  if (st->cfg.reachable)
    st->cfg.reachable(st->cfg.arg);
}

static void
closed_cb(circbuild_t *cb, int reason, const char *why, void *arg)
{
  selftest_t *st = arg;
  (void)reason;
  if (cb != st->cb)
    return; /* a built test circuit closing later: nothing to learn */
  st->st.n_failed++;
  log_info("Reachability test circuit failed: %s; trying again in %u s",
           why ? why : "closed", interval_secs(st));
  attempt_ended(st, cb);
}

static const circbuild_cbs_t cbs = {built_cb, closed_cb, NULL};

/* Can nd extend a circuit to an IPv6 address? As tor asks of the hop
 * before the tested one: an IPv6 ORPort of its own and Relay=3. */
static int
extends_over_ipv6(const dir_node_t *nd)
{
  return nd->has_ipv6 && nd->protocols &&
         dir_protocols_support(nd->protocols, "Relay", 3);
}

/* Is id one of the relays of the other test's attempt in progress (its
 * relay before us; with both, either relay)? Those will have a channel
 * with us soon. */
static int
in_other_attempt(const selftest_t *st, const uint8_t *id, int both)
{
  const selftest_t *o = st->other;
  if (!o || !o->cb)
    return 0;
  return !memcmp(o->hop_ids[1], id, 20) ||
         (both && !memcmp(o->hop_ids[0], id, 20));
}

/* need_ipv6: 0 any relay, but preferably not the IPv6 test's relay before
 * us; 1 the relay must extend over IPv6; 2 also without a channel with us
 * (now or soon, through the IPv4 test). 3: any relay. */
static int
is_candidate(const selftest_t *st, const dir_node_t *nd, const dir_node_t *not,
             int need_ipv6)
{
  return dir_node_is_usable(nd) && nd != not &&
         memcmp(nd->rsa_id, st->cfg.keys->rsa_id_digest, 20) != 0 &&
         (need_ipv6 != 0 || !in_other_attempt(st, nd->rsa_id, 0)) &&
         ((need_ipv6 != 1 && need_ipv6 != 2) || extends_over_ipv6(nd)) &&
         (need_ipv6 != 2 || (!channels_with(nd->rsa_id).any &&
                             !in_other_attempt(st, nd->rsa_id, 1)));
}

/* A usable relay from the consensus that is neither us nor not (and see
 * is_candidate for need_ipv6), chosen at random; NULL when there is
 * none. */
static const dir_node_t *
pick_node(const selftest_t *st, const dir_nodelist_t *nl,
          const dir_node_t *not, int need_ipv6)
{
  int n = 0;
  for (int i = 0; i < nl->n_nodes; i++)
    n += is_candidate(st, &nl->nodes[i], not, need_ipv6);
  if (!n)
    return NULL;
  uint32_t r;
  crypt_rand((uint8_t *)&r, sizeof(r));
  int k = (int)(r % (uint32_t)n);
  for (int i = 0; i < nl->n_nodes; i++)
    if (is_candidate(st, &nl->nodes[i], not, need_ipv6) && !k--)
      return &nl->nodes[i];
  return NULL;
}

static const char *
family_name(const selftest_t *st)
{
  return st->addr.family == AF_INET6 ? "IPv6" : "IPv4";
}

/* Two relays, then us: a relay refuses to extend a circuit back to the
 * relay it came from, so the hop before us must not be our first hop's
 * peer (we are). For an IPv6 ORPort the hop before us must be able to
 * extend over IPv6; it is picked first. */
static void
attempt(selftest_t *st)
{
  extend_target_t hops[3];
  char a[PC_ADDR_STR_LEN], b[PC_ADDR_STR_LEN];
  int v6 = st->addr.family == AF_INET6;
  const dir_nodelist_t *nl = st->cfg.nodelist(st->cfg.arg);
  const dir_node_t *n2 = nl ? pick_node(st, nl, NULL, v6 ? 2 : 0) : NULL;
  if (nl && !n2)
    n2 = pick_node(st, nl, NULL, v6 ? 1 : 3);
  const dir_node_t *n1 = n2 ? pick_node(st, nl, n2, v6 ? 3 : 0) : NULL;
  if (n2 && !n1)
    n1 = pick_node(st, nl, n2, 3);
  if (!n1) {
    log_info("Reachability test: the consensus does not have two other "
             "usable relays to test through yet%s",
             v6 && !n2 ? " (one with an IPv6 ORPort and Relay=3 to extend "
                         "to our IPv6 ORPort)" : "");
    return;
  }
  dir_node_extend_target(n1, &hops[0]);
  dir_node_extend_target(n2, &hops[1]);
  memcpy(st->hop_ids[0], n1->rsa_id, 20);
  memcpy(st->hop_ids[1], n2->rsa_id, 20);
  extend_target_t *self = &hops[2];
  const relay_keys_t *k = st->cfg.keys;
  memset(self, 0, sizeof(*self));
  self->addr = st->addr;
  memcpy(self->rsa_id, k->rsa_id_digest, 20);
  self->has_ed_id = 1;
  memcpy(self->ed_id, k->ed_identity.pub, 32);
  memcpy(self->ntor_key, k->ntor_current.pub, 32);
  self->handshake = HTYPE_NTOR;
  st->st.n_attempts++;
  log_info("Testing the reachability of our %s ORPort %s through %s and %s",
           family_name(st), pc_addr_fmt(&st->addr, a, sizeof(a), 1),
           pc_addr_fmt(&hops[0].addr, b, sizeof(b), 1), n2->nickname);
  st->cb = circbuild_start(hops, 3, &cbs, st);
  if (!st->cb) {
    st->st.n_failed++;
    log_info("Reachability test: could not start a circuit");
  }
}

static void
tick_cb(void *arg)
{
  selftest_t *st = arg;
  char a[PC_ADDR_STR_LEN];
  if (st->reachable)
    return;
  if (st->cb) { /* still not built after a whole interval */
    circbuild_t *cb = st->cb;
    st->st.n_failed++;
    log_info("Reachability test circuit not built after %u s; abandoning "
             "it", interval_secs(st));
    st->cb = NULL;
    circbuild_free(cb);
  }
  time_t now = time(NULL);
  if (now - st->started >= (time_t)complain_secs(st) &&
      (!st->last_complaint ||
       now - st->last_complaint >= (time_t)complain_secs(st))) {
    st->last_complaint = now;
    st->st.n_complaints++;
    log_warn("Your server has not managed to confirm reachability for "
             "its ORPort(s) at %s. Relays do not publish descriptors "
             "until their ORPort is reachable. Please check your "
             "firewalls, ports, address, /etc/hosts file, etc.",
             pc_addr_fmt(&st->addr, a, sizeof(a), 1));
  }
  attempt(st);
  if (!st->reachable && !evloop_timer_is_pending(st->tick))
    evloop_timer_schedule_periodic(st->tick,
                                   (uint64_t)interval_secs(st) * 1000000);
}

selftest_t *
selftest_new(evloop_t *loop, const selftest_config_t *cfg)
{
  selftest_t *st = pc_zalloc(sizeof(*st));
  st->loop = loop;
  st->cfg = *cfg;
  st->addr.family = AF_UNSPEC;
  st->tick = evloop_timer_new(loop, tick_cb, st);
  st->reap = evloop_timer_new(loop, reap_cb, st);
  st->bw_end = evloop_timer_new(loop, bw_end_cb, st);
  return st;
}

void
selftest_set_address(selftest_t *st, const pc_addr_t *orport)
{
  if (st->addr.family != AF_UNSPEC && pc_addr_eq(&st->addr, orport, 1))
    return;
  char a[PC_ADDR_STR_LEN];
  int again = st->addr.family != AF_UNSPEC;
  st->addr = *orport;
  st->reachable = 0;
  if (st->cb) {
    circbuild_t *cb = st->cb;
    st->cb = NULL;
    circbuild_free(cb);
  }
  st->started = time(NULL);
  st->last_complaint = 0;
  log_notice("Now checking whether %s ORPort %s is reachable%s... (this "
             "may take up to %u minutes -- look for log messages "
             "indicating success)",
             family_name(st), pc_addr_fmt(orport, a, sizeof(a), 1),
             again ? " (the advertised address changed)" : "",
             complain_secs(st) >= 60 ? complain_secs(st) / 60 : 1);
  evloop_timer_cancel(st->tick);
  evloop_timer_schedule(st->tick, 1000000);
}

void
selftest_set_other(selftest_t *st, const selftest_t *other)
{
  st->other = other;
}

int
selftest_is_reachable(const selftest_t *st)
{
  return st && st->reachable;
}

const pc_addr_t *
selftest_address(const selftest_t *st)
{
  return &st->addr;
}

void
selftest_get_stats(const selftest_t *st, selftest_stats_t *out)
{
  *out = st->st;
}

void
selftest_free_(selftest_t *st)
{
  if (!st)
    return;
  circbuild_free(st->cb);
  circbuild_free(st->done_cb);
  circbuild_free(st->bw_cb);
  evloop_timer_free(st->tick);
  evloop_timer_free(st->reap);
  evloop_timer_free(st->bw_end);
  free(st);
}
