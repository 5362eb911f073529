/* SPDX-License-Identifier: BSD-3-Clause */
/* check_cpuworker.c -- CREATE handshakes on the worker pool
 * (core/or/cpuworker.c) with socketless channels: results come back to
 * the channel they were for, a full queue refuses (counted as dropped),
 * a request that waited longer than MaxOnionQueueDelay is expired, and a
 * channel closed while its handshake was computed gets no callback, nor
 * does a circuit whose DESTROY came first. The
 * handshakes are real CREATE_FAST ones; a gate hook holds the one worker
 * so the queue's state is known. The key-rotation tests run real ntor and
 * ntor v3 handshakes that the client side verifies, while the keys are
 * rotated the way feature/relay does it (relay_keys_update_onion() after
 * changing the ntor fields) with the jobs queued or being computed.
 * The held-cell tests feed RELAY cells through command_process_cell()
 * while a circuit's handshake waits at the gate: they are held (counted
 * in MEMACCT_CELLS), processed in arrival order once the circuit is made
 * (their relay digests chain, so any other order fails), freed when the
 * handshake is abandoned or expires, and one cell too many closes the
 * circuit; one channel cannot take more than its share of the queue,
 * and over MaxMemInQueues the handler frees them (oldest first), as it
 * closes circuits. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/or/channel_internal.h"
#include "core/or/circuit.h"
#include "core/or/command.h"
#include "core/or/cpuworker.h"
#include "core/or/onion.h"
#include "core/or/relay.h"
#include "core/crypto/relay_crypto.h"
#include "lib/crypt/crypt_init.h"
#include "lib/malloc/memacct.h"
#include "lib/crypt/rand.h"
#include "lib/malloc/alloc.h"
#include "lib/evloop/evloop.h"
#include "lib/evloop/workqueue.h"

static struct {
  evloop_t *loop;
  evloop_timer_t *tick;
  int n_finish, n_expired, want;
  uint32_t finish_ids[64];
  channel_t *finish_chan[64];
  uint32_t expired_ids[64];
  relay_keys_t keys; /* the relay's view; keys.onion goes to the jobs */
  /* Key-rotation tests: the client state of each circuit (by circuit ID
   * & 255) to check the answer with, and how many answers checked out. */
  void *cstate[256];
  uint16_t chtype[256];
  int n_verified;
  /* Held-cell tests: stream IDs of the BEGIN_DIR cells the handler saw. */
  int n_handled;
  uint16_t handled_streams[64];
  relay_crypto_t *client; /* the client's side of the held-cell circuit */
} T;

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_closed, gate_waiting;

static void
gate_hook(void)
{
  pthread_mutex_lock(&gate_lock);
  gate_waiting++;
  while (gate_closed)
    pthread_cond_wait(&gate_cond, &gate_lock);
  gate_waiting--;
  pthread_mutex_unlock(&gate_lock);
}

static void
set_gate(int closed)
{
  pthread_mutex_lock(&gate_lock);
  gate_closed = closed;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
}

/* Up to 20 s: on a loaded machine (CI runs this beside the integration
 * tests) a worker thread may wait seconds for a core; 2 s were not
 * always enough. */
static void
wait_worker_at_gate(void)
{
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    pthread_mutex_lock(&gate_lock);
    int w = gate_waiting;
    pthread_mutex_unlock(&gate_lock);
    if (w)
      return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec > 20)
      break;
    usleep(1000);
  }
  ck_abort_msg("the worker never reached the gate");
}

static void
finish(channel_t *chan, const cpuworker_result_t *res)
{
  ck_assert_msg(res->ok, "handshake failed: %s", res->why);
  if (res->htype == CIRC_HTYPE_FAST) {
    ck_assert_uint_eq(res->rlen, 20 + 20); /* CREATE_FAST: Y | KH */
  } else {
    /* The client, holding the key it used, accepts the answer and
     * derives the same keys. */
    void **st = &T.cstate[res->circ_id & 255];
    ck_assert_ptr_nonnull(*st);
    uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
    onion_circ_params_t p;
    ck_assert_int_eq(onion_client_finish(res->htype, *st, res->reply,
                                         res->rlen, km, sizeof(km), 0, &p),
                     0);
    ck_assert_mem_eq(km, res->km, sizeof(km));
    ck_assert_uint_eq(T.chtype[res->circ_id & 255], res->htype);
    onion_client_free(res->htype, *st);
    *st = NULL;
    T.n_verified++;
  }
  if (T.n_finish < 64) {
    T.finish_chan[T.n_finish] = chan;
    T.finish_ids[T.n_finish] = res->circ_id;
  }
  T.n_finish++;
}

static void
expired(channel_t *chan, uint32_t circ_id)
{
  (void)chan;
  if (T.n_expired < 64)
    T.expired_ids[T.n_expired] = circ_id;
  T.n_expired++;
}

static void
tick_cb(void *arg)
{
  (void)arg;
  if (T.n_finish + T.n_expired >= T.want)
    evloop_exit(T.loop);
}

/* Run the loop until want callbacks happened (or 5 s). */
static void
run_until(int want)
{
  T.want = want;
  evloop_timer_schedule_periodic(T.tick, 2000);
  for (int i = 0; i < 2500 && T.n_finish + T.n_expired < want; i++)
    evloop_run(T.loop);
  evloop_timer_cancel(T.tick);
}

static void
submit(channel_t *chan, uint32_t id, int want_ok)
{
  uint8_t x[20];
  memset(x, (int)id, sizeof(x));
  ck_assert_int_eq(cpuworker_submit(chan, T.keys.onion, id, CIRC_HTYPE_FAST,
                                    x,
                                    sizeof(x)),
                   want_ok ? 0 : -1);
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  ck_assert_int_eq(crypt_global_init(), 0);
  crypt_rand(T.keys.rsa_id_digest, sizeof(T.keys.rsa_id_digest));
  ed25519_keypair_generate(&T.keys.ed_identity);
  curve25519_keypair_generate(&T.keys.ntor_current);
  relay_keys_update_onion(&T.keys);
  T.loop = evloop_new();
  T.tick = evloop_timer_new(T.loop, tick_cb, NULL);
  channels_init(T.loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  cpuworker_options_t o = {1, 100000};
  ck_assert_int_eq(cpuworker_init(T.loop, &o, finish, expired), 0);
  cpuworker_set_work_hook_for_testing(gate_hook);
  set_gate(0);
}

static void
teardown(void)
{
  set_gate(0);
  cpuworker_shutdown();
  cpuworker_set_work_hook_for_testing(NULL);
  ck_assert_int_eq(cpuworker_enabled(), 0);
  channels_shutdown();
  circuits_shutdown();
  evloop_timer_free(T.tick);
  evloop_free(T.loop);
  for (int i = 0; i < 256; i++)
    if (T.cstate[i])
      onion_client_free(T.chtype[i], T.cstate[i]);
  relay_keys_clear_onion(&T.keys);
  pc_memwipe(&T.keys, sizeof(T.keys));
  relay_clear_handlers();
  relay_crypto_free(T.client);
}

static channel_t *
client_channel(const char *ip)
{
  pc_addr_t a;
  pc_addr_parse_ip(&a, ip, 5000);
  channel_t *c = channel_accept_socketless_for_testing(&a, NULL, NULL);
  channel_open_socketless_for_testing(c);
  return c;
}

START_TEST(test_results_in_order)
{
  channel_t *a = client_channel("127.0.0.5");
  for (uint32_t i = 1; i <= 10; i++)
    submit(a, 0x80000000u | i, 1);
  run_until(10);
  ck_assert_int_eq(T.n_finish, 10);
  for (int i = 0; i < 10; i++) {
    ck_assert_uint_eq(T.finish_ids[i], 0x80000000u | (uint32_t)(i + 1));
    ck_assert_ptr_eq(T.finish_chan[i], a);
  }
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_processed, 10);
  ck_assert_uint_eq(st.n_dropped, 0);
  ck_assert_uint_eq(st.n_threads, 1);
  char line[256];
  cpuworker_heartbeat_line(line, sizeof(line));
  ck_assert_ptr_nonnull(strstr(line, "10 onionskins processed"));
}
END_TEST

START_TEST(test_queue_full_drops)
{
  channel_t *a = client_channel("127.0.0.5");
  /* One channel may hold only half the queue: fill it from three. */
  channel_t *fill[3] = {a, client_channel("127.0.0.6"),
                        client_channel("127.0.0.7")};
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate();
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_ge(st.max_pending, 16);
  unsigned bound = st.max_pending;
  for (unsigned i = 0; i < bound; i++)
    submit(fill[i % 3], 0x80000100u + i, 1);
  submit(a, 0x80000fffu, 0); /* full: refused, counted */
  submit(a, 0x80000ffeu, 0);
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_dropped, 2);
  ck_assert_uint_eq(st.n_pending, bound);
  set_gate(0);
  run_until((int)bound + 1);
  ck_assert_int_eq(T.n_finish, (int)bound + 1);
  ck_assert_int_eq(T.n_expired, 0);
}
END_TEST

START_TEST(test_expired_refused)
{
  channel_t *a = client_channel("127.0.0.5");
  cpuworker_options_t o = {1, 20}; /* MaxOnionQueueDelay 20 msec */
  cpuworker_set_options(&o);
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate();
  submit(a, 0x80000002u, 1);
  usleep(60000);
  set_gate(0);
  run_until(2);
  ck_assert_int_eq(T.n_finish, 1);
  ck_assert_uint_eq(T.finish_ids[0], 0x80000001u);
  ck_assert_int_eq(T.n_expired, 1);
  ck_assert_uint_eq(T.expired_ids[0], 0x80000002u);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_dropped, 1);
}
END_TEST

START_TEST(test_channel_closed_meanwhile)
{
  channel_t *a = client_channel("127.0.0.5");
  channel_t *b = client_channel("127.0.0.6");
  uint64_t b_id = channel_global_id(b);
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate();
  submit(b, 0x80000002u, 1);
  submit(a, 0x80000003u, 1);
  channel_close(b, "test");
  /* Let the reaper free b before the answers come back. */
  evloop_timer_schedule_periodic(T.tick, 2000);
  T.want = 0;
  evloop_run(T.loop);
  evloop_timer_cancel(T.tick);
  ck_assert_ptr_null(channel_find_by_global_id(b_id));
  set_gate(0);
  /* Two answers for a; b's is computed and thrown away. */
  for (int i = 0; i < 2500; i++) {
    cpuworker_stats_t st;
    cpuworker_get_stats(&st);
    if (st.n_orphaned == 1 && T.n_finish == 2)
      break;
    run_until(T.n_finish + 1);
  }
  ck_assert_int_eq(T.n_finish, 2);
  ck_assert_ptr_eq(T.finish_chan[0], a);
  ck_assert_ptr_eq(T.finish_chan[1], a);
  ck_assert_uint_eq(T.finish_ids[1], 0x80000003u);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_orphaned, 1);
  ck_assert_uint_eq(st.n_processed, 3);
}
END_TEST

/* Run the loop for one tick (about 2 ms). */
static void
run_tick(void)
{
  T.want = 0;
  evloop_timer_schedule_periodic(T.tick, 2000);
  evloop_run(T.loop);
  evloop_timer_cancel(T.tick);
}

START_TEST(test_destroy_while_pending)
{
  channel_t *a = client_channel("127.0.0.5");
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate();
  submit(a, 0x80000002u, 1);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000001u), 1);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000002u), 1);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000003u), 0);
  /* Queued: cancelled at once; running: its answer will be dropped. */
  ck_assert_int_eq(cpuworker_abandon(a, 0x80000002u), 1);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000002u), 0);
  ck_assert_int_eq(cpuworker_abandon(a, 0x80000001u), 1);
  ck_assert_int_eq(cpuworker_abandon(a, 0x80000003u), 0);
  submit(a, 0x80000004u, 1);
  set_gate(0);
  run_until(1);
  cpuworker_stats_t st;
  for (int i = 0; i < 1000; i++) {
    cpuworker_get_stats(&st);
    if (st.n_processed == 2)
      break;
    run_tick();
  }
  ck_assert_uint_eq(st.n_processed, 2); /* 1 (thrown away) and 4 */
  ck_assert_uint_eq(st.n_orphaned, 2);
  ck_assert_int_eq(T.n_finish, 1);
  ck_assert_uint_eq(T.finish_ids[0], 0x80000004u);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000001u), 0);
}
END_TEST

/* command.c's halves: the answer makes the circuit; an expired request
 * makes none and is counted as a refused CREATE (DESTROY RESOURCELIMIT). */
START_TEST(test_command_finish_and_expired)
{
  cpuworker_shutdown();
  cpuworker_options_t o = {1, 20};
  ck_assert_int_eq(cpuworker_init(T.loop, &o, command_create_finish,
                                  command_create_expired), 0);
  channel_t *a = client_channel("127.0.0.5");
  command_stats_t cs0, cs1;
  command_get_stats(&cs0);
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate();
  submit(a, 0x80000002u, 1);
  usleep(60000); /* 0x80000002 waits past MaxOnionQueueDelay */
  set_gate(0);
  cpuworker_stats_t st;
  for (int i = 0; i < 1000; i++) {
    cpuworker_get_stats(&st);
    if (st.n_processed + st.n_dropped == 2)
      break;
    run_tick();
  }
  ck_assert_uint_eq(st.n_processed, 1);
  ck_assert_uint_eq(st.n_dropped, 1);
  ck_assert_ptr_nonnull(channel_get_circuit(a, 0x80000001u));
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000002u));
  command_get_stats(&cs1);
  ck_assert_uint_eq(cs1.n_create_refused, cs0.n_create_refused + 1);
  channel_close(a, "test");
}
END_TEST

/* ---- Cells that come while a handshake is pending ---- */

static int
begin_dir_handler(or_circuit_t *circ, const relay_header_t *h,
                  const uint8_t *body, int early)
{
  (void)body;
  (void)early;
  ck_assert_ptr_nonnull(circ);
  ck_assert(!circ->base.marked_for_close);
  if (T.n_handled < 64)
    T.handled_streams[T.n_handled] = h->stream_id;
  T.n_handled++;
  return 0;
}

/* finish for the held-cell tests: the client's side of the relay crypto
 * from the handshake's keys encrypts each held cell (in the order the
 * queue holds them: the forward digest chains them), as a client that
 * knew the keys early would have; then command.c makes the circuit,
 * sends CREATED_FAST and processes them. */
static void
finish_encrypting_held(channel_t *chan, const cpuworker_result_t *res)
{
  ck_assert_ptr_nonnull(res->held);
  relay_crypto_free(T.client);
  T.client = relay_crypto_new(res->km);
  for (packed_cell_t *pc = res->held->head; pc; pc = pc->next)
    relay_crypto_origin_encrypt(&T.client, 0, pc->body + 5);
  T.n_finish++;
  command_create_finish(chan, res);
}

static void
restart_with(cpuworker_finish_fn fn, int max_delay_ms)
{
  cpuworker_shutdown();
  cpuworker_options_t o = {1, max_delay_ms};
  ck_assert_int_eq(cpuworker_init(T.loop, &o, fn, expired), 0);
  relay_register_handler(RELAY_COMMAND_BEGIN_DIR, begin_dir_handler);
}

/* A RELAY (or RELAY_EARLY) BEGIN_DIR cell for circuit id, stream sid, in
 * clear (finish_encrypting_held() encrypts it) or encrypted with
 * T.client, through command.c. */
static void
feed_relay_(channel_t *chan, uint32_t id, uint16_t sid, int early,
            int encrypt)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, sizeof(pc->body));
  pc->body[0] = (uint8_t)(id >> 24);
  pc->body[1] = (uint8_t)(id >> 16);
  pc->body[2] = (uint8_t)(id >> 8);
  pc->body[3] = (uint8_t)id;
  pc->body[4] = early ? CELL_RELAY_EARLY : CELL_RELAY;
  ck_assert_int_eq(relay_payload_encode(pc->body + 5,
                                        RELAY_COMMAND_BEGIN_DIR, sid, NULL,
                                        0),
                   0);
  pc->len = CELL_MAX_NETWORK_LEN;
  if (encrypt)
    relay_crypto_origin_encrypt(&T.client, 0, pc->body + 5);
  command_process_cell(chan, pc);
}

#define feed_relay(chan, id, sid, early) feed_relay_(chan, id, sid, early, 0)

static void
wait_processed(uint64_t n)
{
  cpuworker_stats_t st;
  for (int i = 0; i < 1000; i++) {
    cpuworker_get_stats(&st);
    if (st.n_processed + st.n_dropped >= n)
      return;
    run_tick();
  }
  ck_abort_msg("the handshakes were not answered");
}

/* The held-cell tests' start: the pool restarted with
 * finish_encrypting_held and MaxOnionQueueDelay max_delay_ms, a client
 * channel, the cell budget as it was, and the handshake of circuit
 * 0x80000001 being computed, held at the gate. */
typedef struct held_fixture_t {
  channel_t *chan;
  uint64_t base; /* MEMACCT_CELLS before any cell was held */
} held_fixture_t;

static held_fixture_t
held_begin(int max_delay_ms)
{
  restart_with(finish_encrypting_held, max_delay_ms);
  held_fixture_t f;
  f.chan = client_channel("127.0.0.5");
  f.base = memacct_get(MEMACCT_CELLS);
  set_gate(1);
  submit(f.chan, 0x80000001u, 1);
  wait_worker_at_gate();
  return f;
}

/* Their end: no cell is held any more, the budget is back where it was;
 * the channel is closed. */
static void
held_end(const held_fixture_t *f)
{
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), f->base);
  channel_close(f->chan, "test");
}

START_TEST(test_held_cells_delivered_in_order)
{
  command_stats_t cs0, cs1;
  command_get_stats(&cs0);
  held_fixture_t f = held_begin(100000);
  channel_t *a = f.chan;
  for (uint16_t i = 1; i <= 6; i++)
    feed_relay(a, 0x80000001u, i, i <= 2);
  /* Held, counted, not processed; the circuit does not exist yet. */
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 6);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS),
                    f.base + 6 * sizeof(packed_cell_t));
  command_get_stats(&cs1);
  ck_assert_uint_eq(cs1.n_held_pending, cs0.n_held_pending + 6);
  ck_assert_uint_eq(cs1.n_unknown_circ, cs0.n_unknown_circ);
  ck_assert_int_eq(T.n_handled, 0);
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000001u));
  set_gate(0);
  wait_processed(1);
  ck_assert_int_eq(T.n_finish, 1);
  /* All six, in arrival order, on a circuit that stays open. */
  ck_assert_int_eq(T.n_handled, 6);
  for (int i = 0; i < 6; i++)
    ck_assert_uint_eq(T.handled_streams[i], (unsigned)(i + 1));
  circuit_t *c = channel_get_circuit(a, 0x80000001u);
  ck_assert_ptr_nonnull(c);
  ck_assert(!c->marked_for_close);
  command_get_stats(&cs1);
  ck_assert_uint_eq(cs1.n_protocol_closes, cs0.n_protocol_closes);
  /* Later cells go straight to the circuit, after the held ones (their
   * digests continue the chain). */
  feed_relay_(a, 0x80000001u, 7, 0, 1);
  ck_assert_int_eq(T.n_handled, 7);
  ck_assert_uint_eq(T.handled_streams[6], 7);
  ck_assert(!c->marked_for_close);
  held_end(&f);
}
END_TEST

/* One cell more than CPUWORKER_MAX_HELD_PER_CIRC closes the circuit
 * (DESTROY RESOURCELIMIT, the handshake abandoned, queued or running)
 * and frees what was held. */
START_TEST(test_held_cells_bound_closes)
{
  command_stats_t cs0, cs1;
  command_get_stats(&cs0);
  held_fixture_t f = held_begin(100000); /* 1: being computed */
  channel_t *a = f.chan;
  submit(a, 0x80000002u, 1);    /* 2: queued */
  submit(a, 0x80000003u, 1);    /* 3: queued, stays within the bound */
  for (uint16_t i = 1; i <= CPUWORKER_MAX_HELD_PER_CIRC; i++) {
    feed_relay(a, 0x80000001u, i, 0);
    feed_relay(a, 0x80000002u, i, 0);
  }
  feed_relay(a, 0x80000003u, 1, 0);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 2 * CPUWORKER_MAX_HELD_PER_CIRC + 1);
  ck_assert_uint_eq(st.n_held_closed, 0);
  feed_relay(a, 0x80000001u, 99, 0);
  feed_relay(a, 0x80000002u, 99, 0);
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held_closed, 2);
  ck_assert_uint_eq(st.n_held, 1);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000001u), 0);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000002u), 0);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000003u), 1);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS),
                    f.base + 1 * sizeof(packed_cell_t));
  command_get_stats(&cs1);
  ck_assert_uint_eq(cs1.n_protocol_closes, cs0.n_protocol_closes + 2);
  /* A cell for a closed one is now a cell for an unknown circuit. */
  feed_relay(a, 0x80000002u, 100, 0);
  command_get_stats(&cs1);
  ck_assert_uint_eq(cs1.n_unknown_circ, cs0.n_unknown_circ + 1);
  set_gate(0);
  wait_processed(2); /* 1 (thrown away) and 3; 2 was cancelled */
  for (int i = 0; i < 50 && T.n_finish < 1; i++)
    run_tick();
  ck_assert_int_eq(T.n_finish, 1);
  ck_assert_int_eq(T.n_handled, 1);
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000001u));
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000002u));
  ck_assert_ptr_nonnull(channel_get_circuit(a, 0x80000003u));
  held_end(&f);
}
END_TEST

/* DESTROY while cells are held (queued job and running job), and a job
 * that expires with cells held: the cells are freed, none is processed,
 * the budget is back where it was. */
START_TEST(test_held_cells_freed_on_abandon_and_expiry)
{
  held_fixture_t f = held_begin(20);
  channel_t *a = f.chan;
  submit(a, 0x80000002u, 1);
  submit(a, 0x80000003u, 1);
  for (uint16_t i = 1; i <= 3; i++) {
    feed_relay(a, 0x80000001u, i, 0);
    feed_relay(a, 0x80000002u, i, 0);
    feed_relay(a, 0x80000003u, i, 0);
  }
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS),
                    f.base + 9 * sizeof(packed_cell_t));
  /* DESTROY through command.c for the running and one queued job. */
  for (uint32_t id = 0x80000001u; id <= 0x80000002u; id++) {
    cell_t d;
    destroy_cell_make(&d, id, DESTROY_REASON_FINISHED);
    packed_cell_t *pc = packed_cell_new();
    cell_pack(pc->body, &d, 4);
    pc->len = CELL_MAX_NETWORK_LEN;
    command_process_cell(a, pc);
  }
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 3);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS),
                    f.base + 3 * sizeof(packed_cell_t));
  usleep(60000); /* 3 waits past MaxOnionQueueDelay */
  set_gate(0);
  wait_processed(2); /* 1 computed, thrown away; 3 expired */
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_dropped, 1);
  ck_assert_int_eq(T.n_finish, 0);
  ck_assert_int_eq(T.n_handled, 0);
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000003u));
  ck_assert_uint_eq(memacct_underflows(), 0);
  held_end(&f);
}
END_TEST

/* A channel holds at most half the queue bound (never fewer than 16)
 * of pending handshakes; other channels still get in. */
START_TEST(test_per_channel_pending_bound)
{
  channel_t *a = client_channel("127.0.0.5");
  channel_t *b = client_channel("127.0.0.6");
  cpuworker_options_t o = {1, 20}; /* a bound of about 20 */
  cpuworker_set_options(&o);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  unsigned lim = st.max_pending / 2 < 16 ? 16 : st.max_pending / 2;
  ck_assert_uint_lt(lim, st.max_pending); /* the queue is not what stops a */
  set_gate(1);
  submit(a, 0x80000000u, 1);
  wait_worker_at_gate();
  for (unsigned i = 1; i < lim; i++)
    submit(a, 0x80000000u + i, 1);
  ck_assert_uint_eq(cpuworker_chan_pending(a), lim);
  uint8_t x[20] = {0};
  ck_assert_int_eq(cpuworker_submit(a, T.keys.onion, 0x80000fffu,
                                    CIRC_HTYPE_FAST, x, sizeof(x)),
                   -2);
  submit(b, 0x80000001u, 1);
  ck_assert_uint_eq(cpuworker_chan_pending(b), 1);
  /* Cancelling one gives a its slot back. */
  ck_assert_int_eq(cpuworker_abandon(a, 0x80000001u), 1);
  ck_assert_uint_eq(cpuworker_chan_pending(a), lim - 1);
  submit(a, 0x80000ffeu, 1);
  set_gate(0);
  run_until((int)lim + 1); /* a's lim (one cancelled, one added) and b's */
  ck_assert_int_eq(T.n_finish + T.n_expired, (int)lim + 1);
  ck_assert_uint_eq(cpuworker_chan_pending(a), 0);
  ck_assert_uint_eq(cpuworker_chan_pending(b), 0);
}
END_TEST

/* Over MaxMemInQueues, the handler treats cells held for pending
 * handshakes as it treats circuits: the holder of the oldest held cell
 * first (here job 2, 2 cells, though 1 and 3 hold more), then equal ages
 * by size and creation, until 90% of the limit is reached. Each chosen
 * handshake is abandoned (queued or running), answered through the
 * expired callback (DESTROY RESOURCELIMIT in command.c), its cells freed;
 * the rest go on as before. */
START_TEST(test_oom_frees_held_cells)
{
  const uint64_t cell = sizeof(packed_cell_t);
  restart_with(finish_encrypting_held, 100000);
  channel_t *a = client_channel("127.0.0.5");
  for (int k = 0; k < MEMACCT_N_KINDS; k++)
    memacct_exclude_for_testing(k, k != MEMACCT_CELLS);
  uint64_t base = memacct_get(MEMACCT_CELLS);
  set_gate(1);
  submit(a, 0x80000001u, 1);
  wait_worker_at_gate(); /* 1: being computed */
  submit(a, 0x80000002u, 1);
  submit(a, 0x80000003u, 1);
  feed_relay(a, 0x80000002u, 1, 0);
  feed_relay(a, 0x80000002u, 2, 0);
  usleep(3000);
  run_tick(); /* later cached time for the next ones */
  for (uint16_t i = 1; i <= 8; i++) {
    feed_relay(a, 0x80000001u, i, 0);
    feed_relay(a, 0x80000003u, i, 0);
  }
  cpuworker_held_t h[4];
  ck_assert_uint_eq(cpuworker_list_held(h, 4), 3);
  ck_assert_uint_eq(cpuworker_list_held(NULL, 0), 3);
  uint64_t u = memacct_total();
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), base + 18 * cell);
  ck_assert_uint_lt(u, 20 * cell);
  /* A limit whose 90% is 2.5 cells below what is held: freeing job 2
   * is not enough, freeing job 1 as well is. */
  uint64_t lim = (u - 5 * cell / 2) * 100 / 90 + 1;
  ck_assert_uint_lt(lim, u);
  circuits_set_max_mem_in_queues(lim);
  run_tick();
  ck_assert_int_eq(T.n_expired, 2);
  ck_assert_uint_eq(T.expired_ids[0], 0x80000002u);
  ck_assert_uint_eq(T.expired_ids[1], 0x80000001u);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 8);
  ck_assert_uint_eq(st.n_oom_freed, 2);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), base + 8 * cell);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000001u), 0);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000002u), 0);
  ck_assert_int_eq(cpuworker_is_pending(a, 0x80000003u), 1);
  circuits_oom_stats_t os;
  circuits_get_oom_stats(&os);
  ck_assert_uint_eq(os.n_pending_killed, 2);
  ck_assert_uint_eq(os.n_circuits_killed, 0);
  ck_assert_uint_eq(os.n_oom_events, 1);
  /* The survivor completes with its 8 cells; the running one's answer
   * is thrown away. */
  circuits_set_max_mem_in_queues(0);
  set_gate(0);
  wait_processed(2);
  for (int i = 0; i < 50 && T.n_finish < 1; i++)
    run_tick();
  ck_assert_int_eq(T.n_finish, 1);
  ck_assert_int_eq(T.n_handled, 8);
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000001u));
  ck_assert_ptr_null(channel_get_circuit(a, 0x80000002u));
  ck_assert_ptr_nonnull(channel_get_circuit(a, 0x80000003u));
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_held, 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), base);
  ck_assert_uint_eq(memacct_underflows(), 0);
  channel_close(a, "test");
  for (int k = 0; k < MEMACCT_N_KINDS; k++)
    memacct_exclude_for_testing(k, 0);
}
END_TEST

/* The relay rotates its ntor onion key as feature/relay/router_keys.c
 * does: the current key becomes the previous one, and the set the
 * handshakes use is replaced. */
static void
rotate_keys(void)
{
  T.keys.ntor_previous = T.keys.ntor_current;
  T.keys.has_ntor_previous = 1;
  curve25519_keypair_generate(&T.keys.ntor_current);
  relay_keys_update_onion(&T.keys);
}

/* The previous key's grace period is over. */
static void
drop_previous(void)
{
  curve25519_keypair_wipe(&T.keys.ntor_previous);
  T.keys.has_ntor_previous = 0;
  relay_keys_update_onion(&T.keys);
}

/* A client makes a CREATE2 (ntor or ntor v3) for the relay's current key
 * (or its previous one) and the relay queues it. */
static void
submit_ntor(channel_t *chan, uint32_t id, uint16_t htype, int use_previous)
{
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  memcpy(t.rsa_id, T.keys.rsa_id_digest, 20);
  memcpy(t.ed_id, T.keys.ed_identity.pub, 32);
  t.has_ed_id = 1;
  memcpy(t.ntor_key,
         use_previous ? T.keys.ntor_previous.pub : T.keys.ntor_current.pub,
         32);
  t.handshake = htype;
  uint8_t hdata[CREATE2_HDATA_MAX];
  size_t hlen = 0;
  ck_assert_ptr_null(T.cstate[id & 255]);
  ck_assert_int_eq(onion_client_start(&t, hdata, sizeof(hdata), &hlen,
                                      &T.cstate[id & 255]),
                   0);
  T.chtype[id & 255] = htype;
  ck_assert_int_eq(cpuworker_submit(chan, T.keys.onion, id, htype, hdata,
                                    hlen),
                   0);
}

/* Keys rotated twice and the grace period ended while the handshakes
 * waited: each is answered with the keys of the moment it was queued
 * (the relay no longer has the key the first ones used), and every
 * client accepts its answer. */
START_TEST(test_rotation_while_queued)
{
  channel_t *a = client_channel("127.0.0.5");
  set_gate(1);
  submit_ntor(a, 0x80000001u, HTYPE_NTOR, 0);
  wait_worker_at_gate(); /* taken by the worker, handshake not begun */
  submit_ntor(a, 0x80000002u, HTYPE_NTOR_V3, 0);
  rotate_keys();
  submit_ntor(a, 0x80000003u, HTYPE_NTOR, 1); /* still on the old key */
  submit_ntor(a, 0x80000004u, HTYPE_NTOR_V3, 0);
  rotate_keys();
  drop_previous();
  submit_ntor(a, 0x80000005u, HTYPE_NTOR_V3, 0);
  set_gate(0);
  run_until(5);
  ck_assert_int_eq(T.n_finish, 5);
  ck_assert_int_eq(T.n_verified, 5);
  ck_assert_int_eq(T.n_expired, 0);
}
END_TEST

/* Two workers compute while the event loop keeps rotating and dropping
 * keys and answers (with them the last references to old sets) come
 * back: no handshake fails, and under ASan no set is read after it was
 * freed. */
START_TEST(test_rotation_stress)
{
  cpuworker_shutdown();
  cpuworker_options_t o = {2, 100000};
  ck_assert_int_eq(cpuworker_init(T.loop, &o, finish, expired), 0);
  channel_t *a = client_channel("127.0.0.5");
  const int n = 200;
  for (int i = 1; i <= n; i++) {
    submit_ntor(a, 0x80000000u | (uint32_t)i,
                i % 2 ? HTYPE_NTOR : HTYPE_NTOR_V3, 0);
    if (i % 5 == 0)
      rotate_keys();
    if (i % 15 == 0)
      drop_previous();
    if (i % 20 == 0)
      run_tick();
  }
  run_until(n);
  ck_assert_int_eq(T.n_finish, n);
  ck_assert_int_eq(T.n_verified, n);
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_processed, (uint64_t)n);
}
END_TEST

/* NumCPUs: that many worker threads; 0 (the default) one per online
 * core. */
START_TEST(test_num_cpus_threads)
{
  cpuworker_stats_t st;
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_threads, 1); /* setup's NumCPUs 1 */
  cpuworker_shutdown();
  cpuworker_options_t o = {3, 100000};
  ck_assert_int_eq(cpuworker_init(T.loop, &o, finish, expired), 0);
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_threads, 3);
  cpuworker_shutdown();
  o.num_cpus = 0;
  ck_assert_int_eq(cpuworker_init(T.loop, &o, finish, expired), 0);
  cpuworker_get_stats(&st);
  ck_assert_uint_eq(st.n_threads, workqueue_num_cpus());
}
END_TEST

Suite *suite_cpuworker(void);
Suite *
suite_cpuworker(void)
{
  Suite *s = suite_create("cpuworker");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_results_in_order);
  tcase_add_test(tc, test_queue_full_drops);
  tcase_add_test(tc, test_expired_refused);
  tcase_add_test(tc, test_channel_closed_meanwhile);
  tcase_add_test(tc, test_destroy_while_pending);
  tcase_add_test(tc, test_command_finish_and_expired);
  tcase_add_test(tc, test_rotation_while_queued);
  tcase_add_test(tc, test_rotation_stress);
  tcase_add_test(tc, test_held_cells_delivered_in_order);
  tcase_add_test(tc, test_held_cells_bound_closes);
  tcase_add_test(tc, test_held_cells_freed_on_abandon_and_expiry);
  tcase_add_test(tc, test_per_channel_pending_bound);
  tcase_add_test(tc, test_oom_frees_held_cells);
  tcase_add_test(tc, test_num_cpus_threads);
  suite_add_tcase(s, tc);
  return s;
}
