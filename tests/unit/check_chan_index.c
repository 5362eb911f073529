/* SPDX-License-Identifier: BSD-3-Clause */
/* check_chan_index.c -- the index of channels by relay identity
 * (channel.c) and teardown through a channel's own circuits (circuit.c).
 *
 * The index must not change which channel an extension gets. The
 * reference here is what pctor did before it had one: walk every live
 * channel in creation order (channels_foreach()) and apply the same rules
 * (tor-spec 5.3.1 identity and address match; shared: the first, unless a
 * later one is open and it is not; spares likewise; quietest: the first
 * with the lowest EWMA sum). Random sequences of connects, accepts,
 * identities learned late, opens, closes, canonical addresses, spares
 * taken and circuits with loads are replayed and every search is
 * compared with the reference after every step; a few hand-made
 * scenarios check the expected choice directly. Channels are socketless
 * (channel.h), so nothing touches the network.
 *
 * Closing a channel must close exactly the circuits that use it (either
 * side, or waiting for it to open), once each, in creation order, and
 * none other; per-circuit channels close when their circuit has gone.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/or/channel_internal.h"
#include "core/or/circuit.h"
#include "core/or/pctcp.h"
#include "core/or/scheduler.h"
#include "lib/container/vec.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"

Suite *suite_chan_index(void);

#define N_RELAYS 3

static struct {
  evloop_t *loop;
  evloop_timer_t *tick;
  pc_addr_t addr[N_RELAYS], alt[N_RELAYS];
  uint8_t rsa[N_RELAYS][20], ed[N_RELAYS][32];
  uint8_t other_ed[32];
  ptrvec_t *closed; /* circuits in the order they were closed */
  uint64_t rng;
  uint64_t now_us; /* the scheduler's clock, fixed (see setup()) */
} T;

static uint32_t
rnd(uint32_t n)
{
  T.rng ^= T.rng << 13;
  T.rng ^= T.rng >> 7;
  T.rng ^= T.rng << 17;
  return (uint32_t)(T.rng % n);
}

static void
tick_cb(void *arg)
{
  evloop_exit(arg);
}

/* Let deferred callbacks (reapers) run. */
static void
run_once(void)
{
  evloop_timer_schedule(T.tick, 0);
  evloop_run(T.loop);
}

static void
on_close(circuit_t *c, void *arg)
{
  (void)arg;
  ptrvec_push(T.closed, c);
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  ck_assert_int_eq(crypt_global_init(), 0);
  T.loop = evloop_new();
  T.tick = evloop_timer_new(T.loop, tick_cb, T.loop);
  /* A clock that stands still: the circuits' EWMA averages do not decay
   * between the moment a test sets them and the searches, so the loads
   * compared are exact sums and equal loads are really equal (a moving
   * clock made 3x+x and 2x+2x differ in the last bit). */
  T.now_us = 1000000000;
  scheduler_set_clock_for_testing(&T.now_us);
  channels_init(T.loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  pctcp_config_t cfg = {0, 0, 0, 1024};
  pctcp_configure(&cfg);
  for (int i = 0; i < N_RELAYS; i++) {
    pc_addr_parse_ip(&T.addr[i], "127.0.0.2", (uint16_t)(9001 + i));
    pc_addr_parse_ip(&T.alt[i], "127.0.0.3", (uint16_t)(9001 + i));
    memset(T.rsa[i], 0x11 * (i + 1), 20);
    memset(T.ed[i], 0x21 * (i + 1), 32);
  }
  memset(T.other_ed, 0xee, 32);
  T.closed = ptrvec_new();
  circuits_add_close_observer(on_close, NULL);
  T.rng = 88172645463325252ULL;
}

static void
teardown(void)
{
  circuits_remove_close_observer(on_close, NULL);
  channels_shutdown();
  circuits_shutdown();
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
  ptrvec_free(T.closed, NULL);
  evloop_timer_free(T.tick);
  evloop_free(T.loop);
  scheduler_set_clock_for_testing(NULL);
  pctcp_config_t off = {0, 0, 0, 0};
  pctcp_configure(&off);
}

/* ---- the reference: a walk over every channel ----------------------- */

static void
collect_cb(channel_t *chan, void *arg)
{
  ptrvec_push(arg, chan);
}

static ptrvec_t *
all_channels(void)
{
  ptrvec_t *v = ptrvec_new();
  channels_foreach(collect_cb, v);
  return v;
}

static int
ref_matches(const channel_t *chan, const pc_addr_t *addr,
            const uint8_t *rsa_id, const uint8_t *ed_id)
{
  if (chan->state == CHAN_STATE_CLOSED || chan->close_pending)
    return 0;
  const uint8_t *crsa = chan->have_peer_rsa ? chan->peer_rsa_id
                        : chan->want_rsa    ? chan->want_rsa_id
                                            : NULL;
  const uint8_t *ced = chan->have_peer_ed ? chan->peer_ed_id
                       : chan->want_ed    ? chan->want_ed_id
                                          : NULL;
  if (!crsa || !rsa_id || memcmp(crsa, rsa_id, 20))
    return 0;
  if (ed_id && (!ced || memcmp(ced, ed_id, 32)))
    return 0;
  return pc_addr_eq(&chan->addr, addr, 1) || chan->addr_is_canonical;
}

/* kind: 0 shared (find_for_extend), 1 spare (take_spare). */
static channel_t *
ref_first_open(int kind, const pc_addr_t *addr, const uint8_t *rsa_id,
               const uint8_t *ed_id)
{
  ptrvec_t *v = all_channels();
  channel_t *best = NULL;
  for (size_t i = 0; i < ptrvec_len(v); i++) {
    channel_t *chan = ptrvec_get(v, i);
    if ((kind == 0 ? chan->per_circuit : !chan->spare) ||
        !ref_matches(chan, addr, rsa_id, ed_id))
      continue;
    if (!best || (chan->state == CHAN_STATE_OPEN &&
                  best->state != CHAN_STATE_OPEN))
      best = chan;
  }
  ptrvec_free(v, NULL);
  return best;
}

static unsigned
ref_n_spares(const pc_addr_t *addr, const uint8_t *rsa_id,
             const uint8_t *ed_id)
{
  ptrvec_t *v = all_channels();
  unsigned n = 0;
  for (size_t i = 0; i < ptrvec_len(v); i++) {
    channel_t *chan = ptrvec_get(v, i);
    n += chan->spare && ref_matches(chan, addr, rsa_id, ed_id);
  }
  ptrvec_free(v, NULL);
  return n;
}

static double
ref_load(channel_t *chan)
{
  ptrvec_t *cs = ptrvec_new();
  channel_collect_circuits(chan, cs);
  double load = 0;
  for (size_t i = 0; i < ptrvec_len(cs); i++) {
    circuit_t *c = ptrvec_get(cs, i);
    or_circuit_t *oc = TO_OR_CIRCUIT(c);
    if (c->n_chan == chan)
      load += circ_queue_ewma(&c->n_queue);
    else if (oc && oc->p_chan == chan)
      load += circ_queue_ewma(&oc->p_queue);
  }
  ptrvec_free(cs, NULL);
  return load;
}

static channel_t *
ref_quietest(const pc_addr_t *addr, const uint8_t *rsa_id,
             const uint8_t *ed_id)
{
  ptrvec_t *v = all_channels();
  channel_t *best = NULL;
  double best_load = 0;
  for (size_t i = 0; i < ptrvec_len(v); i++) {
    channel_t *chan = ptrvec_get(v, i);
    if (!ref_matches(chan, addr, rsa_id, ed_id))
      continue;
    double load = ref_load(chan);
    if (!best || load < best_load) {
      best = chan;
      best_load = load;
    }
  }
  ptrvec_free(v, NULL);
  return best;
}

/* ---- random sequences ----------------------------------------------- */

/* A random extension request: one of the relays, at its address or the
 * other one, with its Ed25519 identity, none, or a wrong one. */
static void
random_request(const pc_addr_t **addr, const uint8_t **rsa,
               const uint8_t **ed)
{
  int r = (int)rnd(N_RELAYS);
  *addr = rnd(4) ? &T.addr[r] : &T.alt[r];
  *rsa = T.rsa[r];
  uint32_t e = rnd(5);
  *ed = e < 3 ? T.ed[r] : e == 3 ? NULL : T.other_ed;
}

static channel_t *
random_channel(void)
{
  ptrvec_t *v = all_channels();
  channel_t *c = ptrvec_len(v) ? ptrvec_get(v, rnd((uint32_t)ptrvec_len(v)))
                               : NULL;
  ptrvec_free(v, NULL);
  return c;
}

/* Every search, for every kind of request, against the reference. */
static void
compare_all(void)
{
  for (int r = 0; r < N_RELAYS; r++)
    for (int a = 0; a < 2; a++)
      for (int e = 0; e < 3; e++) {
        const pc_addr_t *addr = a ? &T.alt[r] : &T.addr[r];
        const uint8_t *ed = e == 0 ? T.ed[r] : e == 1 ? NULL : T.other_ed;
        ck_assert_ptr_eq(channel_find_for_extend(addr, T.rsa[r], ed),
                         ref_first_open(0, addr, T.rsa[r], ed));
        ck_assert_uint_eq(channels_n_spares(addr, T.rsa[r], ed),
                          ref_n_spares(addr, T.rsa[r], ed));
      }
  ck_assert_ptr_null(channel_find_for_extend(&T.addr[0], NULL, NULL));
}

static void
random_step(uint32_t *next_circ_id)
{
  const pc_addr_t *addr;
  const uint8_t *rsa, *ed;
  random_request(&addr, &rsa, &ed);
  channel_t *c;
  switch (rnd(12)) {
  case 0:
    channel_connect(addr, rsa, ed);
    break;
  case 1:
    channel_connect_per_circuit(addr, rsa, ed);
    break;
  case 2:
    channel_connect_spare(addr, rsa, ed);
    break;
  case 3: /* incoming: a client, a relay known at once, or learned late */
    c = channel_accept_socketless_for_testing(
        addr, rnd(3) ? rsa : NULL, ed == T.other_ed ? NULL : ed);
    if (rnd(2))
      channel_open_socketless_for_testing(c);
    break;
  case 4: /* an incoming channel proves an identity (as AUTHENTICATE) */
    c = random_channel();
    if (c && !c->is_outgoing && !c->have_peer_rsa) {
      memcpy(c->peer_rsa_id, rsa, 20);
      c->have_peer_rsa = 1;
      c->peer_is_relay = 1;
      channel_index_update(c);
    }
    break;
  case 5:
  case 6:
    if ((c = random_channel()))
      channel_open_socketless_for_testing(c);
    break;
  case 7:
    if ((c = random_channel()))
      channel_close(c, "test");
    break;
  case 8: /* NETINFO said the address is the relay's own */
    if ((c = random_channel()))
      c->addr_is_canonical = 1;
    break;
  case 9: {
    channel_t *want = ref_first_open(1, addr, rsa, ed);
    ck_assert_ptr_eq(channel_take_spare(addr, rsa, ed), want);
    if (want)
      ck_assert(!want->spare);
    break;
  }
  case 10: { /* a circuit with some load on a random open channel */
    c = random_channel();
    if (c && c->state == CHAN_STATE_OPEN) {
      or_circuit_t *oc = or_circuit_new(c, (*next_circ_id)++);
      oc->p_queue.ewma = (double)rnd(4);
      oc->p_queue.ewma_base_us = T.now_us;
    }
    break;
  }
  case 11: {
    channel_t *want = ref_quietest(addr, rsa, ed);
    ck_assert_ptr_eq(channel_find_quietest_for_extend(addr, rsa, ed), want);
    if (want)
      ck_assert(!want->spare);
    break;
  }
  }
}

START_TEST(test_choices_match_scan)
{
  uint32_t circ_id = 1;
  T.rng += (uint64_t)_i * 7919;
  for (int step = 0; step < 400; step++) {
    random_step(&circ_id);
    compare_all();
    if (step % 50 == 49)
      run_once(); /* reapers: per-circuit channels, closed ones freed */
  }
}
END_TEST

/* ---- scenarios -------------------------------------------------------- */

START_TEST(test_shared_choice)
{
  const pc_addr_t *a = &T.addr[0];
  const uint8_t *rsa = T.rsa[0], *ed = T.ed[0];
  ck_assert_ptr_null(channel_find_for_extend(a, rsa, ed));
  channel_t *c1 = channel_connect(a, rsa, ed);
  channel_t *pc = channel_connect_per_circuit(a, rsa, ed);
  channel_open_socketless_for_testing(pc);
  /* Per-circuit channels are never offered, even when open. */
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), c1);
  channel_t *c2 = channel_connect(a, rsa, ed);
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), c1);
  channel_open_socketless_for_testing(c2);
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), c2); /* open wins */
  channel_open_socketless_for_testing(c1);
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), c1); /* then age */
  /* Another relay, a wrong Ed25519 identity, another address: none. */
  ck_assert_ptr_null(channel_find_for_extend(a, T.rsa[1], NULL));
  ck_assert_ptr_null(channel_find_for_extend(a, rsa, T.other_ed));
  ck_assert_ptr_null(channel_find_for_extend(&T.alt[0], rsa, ed));
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, NULL), c1);
  c2->addr_is_canonical = 1;
  ck_assert_ptr_eq(channel_find_for_extend(&T.alt[0], rsa, ed), c2);
  channel_close(c1, "test");
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), c2);
  channel_close(c2, "test");
  ck_assert_ptr_null(channel_find_for_extend(a, rsa, ed));
}
END_TEST

START_TEST(test_identity_learned_keeps_creation_order)
{
  const pc_addr_t *a = &T.addr[1];
  const uint8_t *rsa = T.rsa[1], *ed = T.ed[1];
  channel_t *in = channel_accept_socketless_for_testing(a, NULL, NULL);
  channel_t *out = channel_connect(a, rsa, ed);
  channel_open_socketless_for_testing(out);
  channel_open_socketless_for_testing(in);
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), out);
  /* The incoming one proves the relay's identities (as AUTHENTICATE). */
  memcpy(in->peer_rsa_id, rsa, 20);
  memcpy(in->peer_ed_id, ed, 32);
  in->have_peer_rsa = in->have_peer_ed = in->peer_is_relay = 1;
  channel_index_update(in);
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), in);
  channel_close(in, "test");
  ck_assert_ptr_eq(channel_find_for_extend(a, rsa, ed), out);
}
END_TEST

START_TEST(test_spares)
{
  const pc_addr_t *a = &T.addr[2];
  const uint8_t *rsa = T.rsa[2], *ed = T.ed[2];
  channel_t *s1 = channel_connect_spare(a, rsa, ed);
  channel_t *s2 = channel_connect_spare(a, rsa, ed);
  channel_t *s3 = channel_connect_spare(a, rsa, ed);
  ck_assert_uint_eq(channels_n_spares(a, rsa, ed), 3);
  ck_assert_uint_eq(channels_n_per_circuit(), 3);
  ck_assert_ptr_null(channel_find_for_extend(a, rsa, ed));
  channel_open_socketless_for_testing(s2);
  ck_assert_ptr_eq(channel_take_spare(a, rsa, ed), s2); /* open first */
  ck_assert_uint_eq(channels_n_spares(a, rsa, ed), 2);
  ck_assert_ptr_eq(channel_take_spare(a, rsa, ed), s1); /* then age */
  channel_close(s3, "test");
  ck_assert_uint_eq(channels_n_spares(a, rsa, ed), 0);
  ck_assert_ptr_null(channel_take_spare(a, rsa, ed));
  ck_assert_uint_eq(channels_n_per_circuit(), 2);
  ck_assert(channel_is_per_circuit(s1) && channel_is_per_circuit(s2));
}
END_TEST

static or_circuit_t *
loaded_circuit(channel_t *chan, uint32_t id, double ewma)
{
  or_circuit_t *oc = or_circuit_new(chan, id);
  oc->p_queue.ewma = ewma;
  oc->p_queue.ewma_base_us = T.now_us;
  return oc;
}

START_TEST(test_quietest)
{
  const pc_addr_t *a = &T.addr[0];
  const uint8_t *rsa = T.rsa[0], *ed = T.ed[0];
  channel_t *c1 = channel_connect(a, rsa, ed);
  channel_t *p1 = channel_connect_per_circuit(a, rsa, ed);
  channel_t *sp = channel_connect_spare(a, rsa, ed);
  channel_t *p2 = channel_connect_per_circuit(a, rsa, ed);
  channel_open_socketless_for_testing(c1);
  channel_open_socketless_for_testing(p1);
  channel_open_socketless_for_testing(p2);
  loaded_circuit(c1, 1, 3.0);
  loaded_circuit(c1, 2, 1.0);
  loaded_circuit(p1, 3, 2.0);
  loaded_circuit(p2, 4, 5.0);
  /* The spare (no circuit, load 0) is quietest, and is a spare no more. */
  ck_assert_ptr_eq(channel_find_quietest_for_extend(a, rsa, ed), sp);
  ck_assert_uint_eq(channels_n_spares(a, rsa, ed), 0);
  loaded_circuit(sp, 5, 9.0);
  ck_assert_ptr_eq(channel_find_quietest_for_extend(a, rsa, ed), p1);
  loaded_circuit(p1, 6, 2.0); /* 4.0 = c1: the first of equals */
  ck_assert_ptr_eq(channel_find_quietest_for_extend(a, rsa, ed), c1);
  ck_assert_ptr_null(channel_find_quietest_for_extend(a, T.rsa[1], ed));
}
END_TEST

/* ---- teardown through the channel's own circuits ---------------------- */

static const cell_t *
create_cell(void)
{
  static cell_t c;
  memset(&c, 0, sizeof(c));
  c.command = CELL_CREATE2;
  return &c;
}

static int
was_closed(const circuit_t *c)
{
  return ptrvec_find(T.closed, c) >= 0;
}

START_TEST(test_close_takes_own_circuits)
{
  /* Channels: A (incoming from relay 0), B (to relay 1, open), D (to
   * relay 2, still connecting), E (incoming from a client). */
  channel_t *A = channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0],
                                                       T.ed[0]);
  channel_open_socketless_for_testing(A);
  channel_t *B = channel_connect(&T.addr[1], T.rsa[1], T.ed[1]);
  channel_open_socketless_for_testing(B);
  channel_t *E = channel_accept_socketless_for_testing(&T.alt[2], NULL, NULL);
  channel_open_socketless_for_testing(E);
  or_circuit_t *a_b = or_circuit_new(A, 0x80000001u);  /* A -> B */
  ck_assert_int_eq(circuit_extend_to(&a_b->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], create_cell()), 0);
  ck_assert_ptr_eq(a_b->base.n_chan, B);
  or_circuit_t *e_b = or_circuit_new(E, 0x80000001u);  /* E -> B */
  ck_assert_int_eq(circuit_extend_to(&e_b->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], create_cell()), 0);
  or_circuit_t *e_a = or_circuit_new(E, 0x80000002u);  /* E -> A */
  ck_assert_int_eq(circuit_extend_to(&e_a->base, &T.addr[0], T.rsa[0],
                                     T.ed[0], create_cell()), 0);
  ck_assert_ptr_eq(e_a->base.n_chan, A);
  or_circuit_t *a_a = or_circuit_new(A, 0x80000002u);  /* A -> A */
  ck_assert_int_eq(circuit_extend_to(&a_a->base, &T.addr[0], T.rsa[0],
                                     T.ed[0], create_cell()), 0);
  ck_assert_ptr_eq(a_a->base.n_chan, A);
  or_circuit_t *a_d = or_circuit_new(A, 0x80000003u);  /* A -> D, waits */
  ck_assert_int_eq(circuit_extend_to(&a_d->base, &T.addr[2], T.rsa[2],
                                     T.ed[2], create_cell()), 0);
  channel_t *D = a_d->base.n_chan;
  ck_assert(a_d->base.n_pending && !channel_is_open(D));
  or_circuit_t *e_d = or_circuit_new(E, 0x80000003u);  /* E -> D, waits */
  ck_assert_int_eq(circuit_extend_to(&e_d->base, &T.addr[2], T.rsa[2],
                                     T.ed[2], create_cell()), 0);
  ck_assert_ptr_eq(e_d->base.n_chan, D);
  or_circuit_t *e_only = or_circuit_new(E, 0x80000004u);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 7);
  ck_assert_uint_eq(channel_n_circuits(A), 5); /* a_a twice */

  channel_close(A, "test");
  /* Exactly A's circuits, once each, in creation order. */
  ck_assert_uint_eq(ptrvec_len(T.closed), 4);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 0), &a_b->base);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 1), &e_a->base);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 2), &a_a->base);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 3), &a_d->base);
  ck_assert(!was_closed(&e_b->base) && !was_closed(&e_d->base) &&
            !was_closed(&e_only->base));
  ck_assert_uint_eq(channel_n_circuits(B), 1); /* e_b still there */
  ck_assert_uint_eq(channel_n_circuits(E), 3); /* e_b, e_d, e_only */
  ck_assert_uint_eq(dlist_len(channel_pending_circuits(D)), 1);

  /* D opens: only e_d is still waiting; its CREATE goes out. */
  channel_open_socketless_for_testing(D);
  ck_assert(!e_d->base.n_pending);
  ck_assert_ptr_eq(channel_get_circuit(D, e_d->base.n_circ_id), &e_d->base);
  ck_assert_uint_eq(dlist_len(channel_pending_circuits(D)), 0);

  /* A circuit still waiting when its channel closes is closed too. */
  channel_t *F = channel_connect(&T.alt[1], T.rsa[1], NULL);
  ck_assert_ptr_nonnull(F);
  or_circuit_t *e_f = or_circuit_new(E, 0x80000005u);
  ck_assert_int_eq(circuit_extend_to(&e_f->base, &T.alt[1], T.rsa[1], NULL,
                                     create_cell()), 0);
  ck_assert_ptr_eq(e_f->base.n_chan, F);
  channel_close(F, "test");
  ck_assert_uint_eq(ptrvec_len(T.closed), 5);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 4), &e_f->base);

  channel_close(E, "test");
  ck_assert_uint_eq(ptrvec_len(T.closed), 8);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 5), &e_b->base);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 6), &e_d->base);
  ck_assert_ptr_eq(ptrvec_get(T.closed, 7), &e_only->base);
  run_once();
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
}
END_TEST

/* channel_get_circuit() remembers the last circuit it found; setting,
 * replacing and removing IDs must never leave it answering wrongly. The
 * map only stores the pointers, so stand-ins do. */
START_TEST(test_circuit_lookup_cache)
{
  channel_t *E = channel_accept_socketless_for_testing(&T.alt[2], NULL, NULL);
  channel_open_socketless_for_testing(E);
  circuit_t *x = (circuit_t *)(uintptr_t)0x1000;
  circuit_t *y = (circuit_t *)(uintptr_t)0x2000;
  circuit_t *z = (circuit_t *)(uintptr_t)0x3000;
  ck_assert_ptr_null(channel_get_circuit(E, 7));
  channel_set_circuit(E, 7, x);
  channel_set_circuit(E, 8, y);
  ck_assert_ptr_eq(channel_get_circuit(E, 7), x);
  ck_assert_ptr_eq(channel_get_circuit(E, 7), x); /* from the cache */
  ck_assert_ptr_eq(channel_get_circuit(E, 8), y);
  ck_assert_ptr_null(channel_get_circuit(E, 9)); /* a miss keeps y */
  ck_assert_ptr_eq(channel_get_circuit(E, 8), y);
  channel_remove_circuit(E, 8); /* the cached one */
  ck_assert_ptr_null(channel_get_circuit(E, 8));
  ck_assert_ptr_eq(channel_get_circuit(E, 7), x);
  channel_set_circuit(E, 7, z); /* replaced while cached */
  ck_assert_ptr_eq(channel_get_circuit(E, 7), z);
  channel_set_circuit(E, 8, y);
  ck_assert_ptr_eq(channel_get_circuit(E, 8), y);
  channel_remove_circuit(E, 7); /* another one than the cached */
  ck_assert_ptr_eq(channel_get_circuit(E, 8), y);
  ck_assert_ptr_null(channel_get_circuit(E, 7));
  channel_remove_circuit(E, 8);
  ck_assert_ptr_null(channel_get_circuit(E, 8));
  ck_assert_uint_eq(channel_n_circuits(E), 0);
  channel_close(E, "test");
  run_once();
}
END_TEST

START_TEST(test_emptied_per_circuit_closed)
{
  pctcp_config_t on = {1, 0, 0, 1024};
  pctcp_configure(&on);
  channel_t *in = channel_accept_socketless_for_testing(&T.addr[0], T.rsa[0],
                                                        T.ed[0]);
  channel_open_socketless_for_testing(in);
  or_circuit_t *c1 = or_circuit_new(in, 0x80000001u);
  or_circuit_t *c2 = or_circuit_new(in, 0x80000002u);
  ck_assert_int_eq(circuit_extend_to(&c1->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], create_cell()), 0);
  ck_assert_int_eq(circuit_extend_to(&c2->base, &T.addr[1], T.rsa[1],
                                     T.ed[1], create_cell()), 0);
  channel_t *n1 = c1->base.n_chan, *n2 = c2->base.n_chan;
  ck_assert(n1 != n2 && channel_is_per_circuit(n1) &&
            channel_is_per_circuit(n2));
  channel_open_socketless_for_testing(n1);
  channel_open_socketless_for_testing(n2);
  ck_assert_uint_eq(channels_n_per_circuit(), 2);
  circuit_mark_for_close(&c1->base, DESTROY_REASON_NONE);
  run_once();
  /* n1 closed (and left the index); n2 carries c2 still. */
  ck_assert_uint_eq(channels_n_per_circuit(), 1);
  ck_assert_ptr_eq(channel_find_quietest_for_extend(&T.addr[1], T.rsa[1],
                                                    T.ed[1]),
                   n2);
  ck_assert(channel_is_open(n2));
  channel_close(in, "test");
  run_once();
  ck_assert_uint_eq(channels_n_per_circuit(), 0);
  ck_assert_ptr_null(channel_find_quietest_for_extend(&T.addr[1], T.rsa[1],
                                                      T.ed[1]));
}
END_TEST

Suite *
suite_chan_index(void)
{
  Suite *s = suite_create("chan_index");
  TCase *tc = tcase_create("index");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_loop_test(tc, test_choices_match_scan, 0, 20);
  tcase_add_test(tc, test_shared_choice);
  tcase_add_test(tc, test_identity_learned_keeps_creation_order);
  tcase_add_test(tc, test_spares);
  tcase_add_test(tc, test_quietest);
  tcase_add_test(tc, test_close_takes_own_circuits);
  tcase_add_test(tc, test_emptied_per_circuit_closed);
  tcase_add_test(tc, test_circuit_lookup_cache);
  suite_add_tcase(s, tc);
  return s;
}
