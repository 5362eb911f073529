/* SPDX-License-Identifier: BSD-3-Clause */
/* dos.c -- denial-of-service defences (see dos.h).
 *
 * Design:
 *  - Client records are in one hash keyed by family + address (17 bytes),
 *    created when a counted connection arrives. The connection count is
 *    exact (each counted connection is uncounted when it closes, whatever
 *    the parameters became meanwhile: the caller remembers it counted).
 *  - Buckets follow parameter changes lazily: on each use a bucket whose
 *    rate or burst differs from the current parameters is adjusted
 *    (tokens kept, capped at the new burst).
 *  - A mark is a time until which the defence applies; its length is
 *    drawn uniformly from [N+1, 3N/2] seconds, as tor does, so that an
 *    attacker cannot time its return exactly.
 *  - Relay addresses (from the consensus) are a hash set of the same
 *    17-byte keys, replaced whole when a consensus arrives.
 *  - A timer sweeps, once a minute, the records that hold nothing: no
 *    connection, no running mark, buckets full again. The number of
 *    records is thus bounded by the addresses that connected within about
 *    a burst's refill time (30 s with tor's defaults) plus those holding
 *    connections or marks; the MaxMemInQueues handler sweeps too, before
 *    it closes anything (tor frees its caches first).
 *  - Each record is counted in the memory budget (MEMACCT_DOS: the record,
 *    its allocation overhead and two hash slots, the table being at most
 *    half full). Their number is capped (DOS_MAX_CLIENTS): a new address
 *    arriving at the cap first sweeps; if that frees less than 1/16 of
 *    the cap, records without a connection (marked ones: many addresses,
 *    e.g. from one IPv6 prefix, each marked for hours) are dropped in
 *    table order down to 7/8 of it, losing their marks. Records holding
 *    connections are never dropped (their count must stay exact); they
 *    are bounded by the descriptors. If the cap is still reached, the new
 *    address is not counted at all (dos_conn_accepted() returns 0), with
 *    a rate-limited warning.
 */
#include "core/or/dos.h"
#include "core/or/dos_options.h"
#include "lib/container/hmap.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOS_KEY_LEN 17
#define DOS_SWEEP_USEC (60 * UINT64_C(1000000))
/* At about 150 bytes each, 36 MiB. */
#define DOS_MAX_CLIENTS (1u << 18)

typedef struct dos_client_t {
  uint32_t n_conns;
  tbucket_t circ_bucket;
  tbucket_t conn_bucket;
  uint64_t cc_marked_until_us;
  uint64_t conn_marked_until_us;
} dos_client_t;

static struct {
  evloop_t *loop;
  dos_params_t p;
  hmap_t *clients;
  hmap_t *relays;
  evloop_timer_t *sweep;
  dos_stats_t stats;
  uint64_t fake_now_us;
  size_t max_clients;
  int initialised;
} D;

/* What one address record costs: the record with malloc's overhead, and
 * two slots of a hash table kept at most half full. */
#define DOS_SLOT_BYTES ((16 + DOS_KEY_LEN + 7) & ~(size_t)7)
#define DOS_RECORD_BYTES (sizeof(dos_client_t) + 16 + 2 * DOS_SLOT_BYTES)

static log_ratelim_t full_ratelim = LOG_RATELIM_INIT(300, 1);

/* One notice per kind of mark every 5 minutes. */
static log_ratelim_t cc_mark_ratelim = LOG_RATELIM_INIT(300, 1);
static log_ratelim_t conn_mark_ratelim = LOG_RATELIM_INIT(300, 1);

/* ---- parameters ----------------------------------------------------- */

void
dos_params_default(dos_params_t *out)
{
  memset(out, 0, sizeof(*out));
  out->cc_enabled = 0;
  out->cc_min_conns = 3;
  out->cc_rate = 3;
  out->cc_burst = 90;
  out->cc_defense = DOS_CC_DEFENSE_REFUSE_CELL;
  out->cc_defense_period = 3600;
  out->conn_enabled = 0;
  out->conn_max_concurrent = 100;
  out->conn_defense = DOS_CONN_DEFENSE_CLOSE;
  out->conn_connect_rate = 20;
  out->conn_connect_burst = 40;
  out->conn_connect_defense_period = 24 * 3600;
  out->stream_enabled = 0;
  out->stream_defense = DOS_STREAM_DEFENSE_REFUSE_STREAM;
  out->stream_rate = 100;
  out->stream_burst = 300;
}

/* The option if set (> 0), else the consensus parameter, else dflt. */
static uint32_t
pick(int opt, dos_param_fn fn, void *arg, const char *name, int32_t dflt,
     int32_t min, int32_t max)
{
  if (opt > 0)
    return (uint32_t)opt;
  if (!fn)
    return (uint32_t)dflt;
  return (uint32_t)fn(arg, name, dflt, min, max);
}

/* An AUTOBOOL: 0 or 1 as set, -1 (auto) the consensus parameter. */
static int
pick_bool(int opt, dos_param_fn fn, void *arg, const char *name, int dflt)
{
  if (opt >= 0)
    return opt != 0;
  return fn ? fn(arg, name, dflt, 0, 1) != 0 : dflt;
}

void
dos_params_resolve(dos_params_t *out, const dos_options_t *o,
                   dos_param_fn fn, void *arg)
{
  dos_params_t d;
  dos_params_default(&d);
  out->cc_enabled =
      pick_bool(o->cc_enabled, fn, arg, "DoSCircuitCreationEnabled", 0);
  out->cc_min_conns = pick(o->cc_min_conns, fn, arg,
                           "DoSCircuitCreationMinConnections",
                           (int32_t)d.cc_min_conns, 1, INT32_MAX);
  out->cc_rate = pick(o->cc_rate, fn, arg, "DoSCircuitCreationRate",
                      (int32_t)d.cc_rate, 1, INT32_MAX);
  out->cc_burst = pick(o->cc_burst, fn, arg, "DoSCircuitCreationBurst",
                       (int32_t)d.cc_burst, 1, INT32_MAX);
  out->cc_defense = (int)pick(o->cc_defense_type, fn, arg,
                              "DoSCircuitCreationDefenseType",
                              d.cc_defense, DOS_DEFENSE_NONE,
                              DOS_CC_DEFENSE_REFUSE_CELL);
  out->cc_defense_period = pick(o->cc_defense_period, fn, arg,
                                "DoSCircuitCreationDefenseTimePeriod",
                                (int32_t)d.cc_defense_period, 0,
                                INT32_MAX);
  out->conn_enabled =
      pick_bool(o->conn_enabled, fn, arg, "DoSConnectionEnabled", 0);
  out->conn_max_concurrent = pick(o->conn_max_concurrent, fn, arg,
                                  "DoSConnectionMaxConcurrentCount",
                                  (int32_t)d.conn_max_concurrent, 1,
                                  INT32_MAX);
  out->conn_defense = (int)pick(o->conn_defense_type, fn, arg,
                                "DoSConnectionDefenseType", d.conn_defense,
                                DOS_DEFENSE_NONE, DOS_CONN_DEFENSE_CLOSE);
  out->conn_connect_rate = pick(o->conn_connect_rate, fn, arg,
                                "DoSConnectionConnectRate",
                                (int32_t)d.conn_connect_rate, 1, INT32_MAX);
  out->conn_connect_burst = pick(o->conn_connect_burst, fn, arg,
                                 "DoSConnectionConnectBurst",
                                 (int32_t)d.conn_connect_burst, 1,
                                 INT32_MAX);
  out->conn_connect_defense_period =
      pick(o->conn_connect_defense_period, fn, arg,
           "DoSConnectionConnectDefenseTimePeriod",
           (int32_t)d.conn_connect_defense_period, 10, INT32_MAX);
  out->stream_enabled =
      pick_bool(o->stream_enabled, fn, arg, "DoSStreamCreationEnabled", 0);
  out->stream_defense = (int)pick(o->stream_defense_type, fn, arg,
                                  "DoSStreamCreationDefenseType",
                                  d.stream_defense, DOS_DEFENSE_NONE,
                                  DOS_STREAM_DEFENSE_CLOSE_CIRCUIT);
  out->stream_rate = pick(o->stream_rate, fn, arg, "DoSStreamCreationRate",
                          (int32_t)d.stream_rate, 1, INT32_MAX);
  out->stream_burst = pick(o->stream_burst, fn, arg,
                           "DoSStreamCreationBurst",
                           (int32_t)d.stream_burst, 1, INT32_MAX);
}

/* ---- life ------------------------------------------------------------ */

static void sweep_cb(void *arg);

void
dos_init(evloop_t *loop)
{
  if (D.initialised)
    dos_shutdown();
  memset(&D, 0, sizeof(D));
  D.loop = loop;
  dos_params_default(&D.p);
  D.clients = hmap_new(DOS_KEY_LEN);
  D.relays = hmap_new(DOS_KEY_LEN);
  D.max_clients = DOS_MAX_CLIENTS;
  if (loop) {
    D.sweep = evloop_timer_new(loop, sweep_cb, NULL);
    evloop_timer_schedule_periodic(D.sweep, DOS_SWEEP_USEC);
  }
  D.initialised = 1;
}

void
dos_shutdown(void)
{
  if (!D.initialised)
    return;
  evloop_timer_free(D.sweep);
  memacct_sub(MEMACCT_DOS, hmap_size(D.clients) * DOS_RECORD_BYTES);
  hmap_free(D.clients, free);
  hmap_free(D.relays, NULL);
  memset(&D, 0, sizeof(D));
}

void
dos_set_params(const dos_params_t *p)
{
  D.p = *p;
}

const dos_params_t *
dos_get_params(void)
{
  return &D.p;
}

static uint64_t
now_us(void)
{
  if (D.fake_now_us)
    return D.fake_now_us;
  return D.loop ? evloop_now_us(D.loop) : 0;
}

void
dos_set_now_for_testing(uint64_t us)
{
  D.fake_now_us = us;
}

static void
addr_key(const pc_addr_t *a, uint8_t key[DOS_KEY_LEN])
{
  memset(key, 0, DOS_KEY_LEN);
  key[0] = (uint8_t)a->family;
  memcpy(key + 1, a->addr, a->family == AF_INET ? 4 : 16);
}

/* A value the hash set can hold for "present". */
static int present;

void
dos_set_relay_addrs(const pc_addr_t *addrs, size_t n)
{
  if (!D.initialised)
    return;
  hmap_clear(D.relays);
  for (size_t i = 0; i < n; i++) {
    uint8_t key[DOS_KEY_LEN];
    addr_key(&addrs[i], key);
    hmap_set(D.relays, key, &present);
  }
}

int
dos_addr_is_relay(const pc_addr_t *a)
{
  uint8_t key[DOS_KEY_LEN];
  if (!D.initialised)
    return 0;
  addr_key(a, key);
  return hmap_get(D.relays, key) != NULL;
}

static void
client_free(dos_client_t *c)
{
  memacct_sub(MEMACCT_DOS, DOS_RECORD_BYTES);
  free(c);
}

/* At the cap: make room (see the design note). 1 if a record fits now. */
static int
make_room(uint64_t now)
{
  size_t cap = D.max_clients;
  dos_sweep_at(now);
  if (hmap_size(D.clients) + cap / 16 > cap) {
    size_t dropped = 0;
    hmap_iter_t it;
    const uint8_t *k;
    void *v;
    hmap_iter_init(&it, D.clients);
    while (hmap_size(D.clients) > cap / 8 * 7 && hmap_iter_next(&it, &k, &v)) {
      dos_client_t *c = v;
      if (c->n_conns)
        continue;
      hmap_iter_remove_current(&it);
      client_free(c);
      dropped++;
    }
    D.stats.records_dropped += dropped;
  }
  if (hmap_size(D.clients) < cap)
    return 1;
  D.stats.addrs_untracked++;
  unsigned suppressed = 0;
  if (log_ratelim_allow(&full_ratelim, time(NULL), &suppressed))
    log_warn("DoS: %zu client addresses hold connections, the most pctor "
             "keeps records for; new addresses are not limited until some "
             "close%s", hmap_size(D.clients),
             suppressed ? " (repeated)" : "");
  return 0;
}

static dos_client_t *
client_get(const pc_addr_t *a, int create)
{
  uint8_t key[DOS_KEY_LEN];
  addr_key(a, key);
  dos_client_t *c = hmap_get(D.clients, key);
  if (!c && create) {
    uint64_t now = now_us();
    if (hmap_size(D.clients) >= D.max_clients && !make_room(now))
      return NULL;
    memacct_add(MEMACCT_DOS, DOS_RECORD_BYTES);
    c = pc_zalloc(sizeof(*c));
    tbucket_init(&c->circ_bucket, D.p.cc_rate, D.p.cc_burst, now);
    tbucket_init(&c->conn_bucket, D.p.conn_connect_rate,
                 D.p.conn_connect_burst, now);
    hmap_set(D.clients, key, c);
  }
  return c;
}

/* Follow parameter changes. */
static void
bucket_sync(tbucket_t *b, uint32_t rate, uint32_t burst, uint64_t now)
{
  if (b->rate != rate || b->burst != burst)
    tbucket_adjust(b, rate, burst, now);
}

/* A mark of [period+1, 3 period / 2] seconds from now. */
static uint64_t
mark_until(uint32_t period, uint64_t now)
{
  uint64_t lo = (uint64_t)period + 1;
  uint64_t hi = (uint64_t)period * 3 / 2;
  uint64_t s = lo;
  if (hi > lo)
    s = lo + crypt_rand_u64_below(hi - lo + 1);
  return now + s * 1000000u;
}

static void
log_marked(log_ratelim_t *rl, const pc_addr_t *a, const char *what,
           uint32_t period)
{
  unsigned suppressed = 0;
  if (!log_ratelim_allow(rl, time(NULL), &suppressed))
    return;
  char s[PC_ADDR_STR_LEN];
  log_notice("DoS: the client address %s %s; defence applied for about %u "
             "seconds%s",
             pc_addr_fmt(a, s, sizeof(s), 0), what, (unsigned)period,
             suppressed ? " (and other addresses, not logged)" : "");
}

/* ---- connections ----------------------------------------------------- */

int
dos_conn_accepted(const pc_addr_t *peer)
{
  if (!D.initialised || (!D.p.conn_enabled && !D.p.cc_enabled))
    return 0;
  if (dos_addr_is_relay(peer))
    return 0;
  uint64_t now = now_us();
  dos_client_t *c = client_get(peer, 1);
  if (!c)
    return 0; /* the table is full of addresses holding connections */
  if (D.p.conn_enabled && D.p.conn_defense == DOS_CONN_DEFENSE_CLOSE) {
    if (c->conn_marked_until_us > now) {
      D.stats.conn_rate_rejected++;
      return -1;
    }
    if (c->n_conns >= D.p.conn_max_concurrent) {
      D.stats.conn_concurrent_rejected++;
      return -1;
    }
  }
  c->n_conns++;
  if (D.p.conn_enabled) {
    bucket_sync(&c->conn_bucket, D.p.conn_connect_rate,
                D.p.conn_connect_burst, now);
    if (!tbucket_take(&c->conn_bucket, now) &&
        c->conn_marked_until_us <= now) {
      c->conn_marked_until_us =
          mark_until(D.p.conn_connect_defense_period, now);
      D.stats.conn_marked_addrs++;
      log_marked(&conn_mark_ratelim, peer, "opened connections faster than "
                 "DoSConnectionConnectRate/Burst",
                 D.p.conn_connect_defense_period);
    }
  }
  return 1;
}

void
dos_conn_closed(const pc_addr_t *peer)
{
  if (!D.initialised)
    return;
  dos_client_t *c = client_get(peer, 0);
  if (c && c->n_conns)
    c->n_conns--;
}

/* ---- circuits -------------------------------------------------------- */

int
dos_create_allowed(const pc_addr_t *peer)
{
  if (!D.initialised || !D.p.cc_enabled)
    return 0;
  dos_client_t *c = client_get(peer, 0);
  if (!c)
    return 0; /* not counted: a relay's address, or arrived while off */
  uint64_t now = now_us();
  if (c->cc_marked_until_us > now) {
    if (D.p.cc_defense == DOS_CC_DEFENSE_REFUSE_CELL) {
      D.stats.cc_circuits_rejected++;
      return -1;
    }
    return 0;
  }
  bucket_sync(&c->circ_bucket, D.p.cc_rate, D.p.cc_burst, now);
  (void)tbucket_take(&c->circ_bucket, now);
  if (c->circ_bucket.tokens == 0 && c->n_conns >= D.p.cc_min_conns) {
    c->cc_marked_until_us = mark_until(D.p.cc_defense_period, now);
    D.stats.cc_marked_addrs++;
    log_marked(&cc_mark_ratelim, peer, "created circuits faster than "
               "DoSCircuitCreationRate/Burst",
               D.p.cc_defense_period);
  }
  return 0;
}

/* ---- streams --------------------------------------------------------- */

int
dos_stream_allowed(dos_stream_state_t *st)
{
  if (!D.initialised || !D.p.stream_enabled)
    return DOS_STREAM_OK;
  uint64_t now = now_us();
  if (!st->initialised) {
    tbucket_init(&st->bucket, D.p.stream_rate, D.p.stream_burst, now);
    st->initialised = 1;
  }
  bucket_sync(&st->bucket, D.p.stream_rate, D.p.stream_burst, now);
  if (tbucket_take(&st->bucket, now))
    return DOS_STREAM_OK;
  switch (D.p.stream_defense) {
  case DOS_STREAM_DEFENSE_REFUSE_STREAM:
    D.stats.stream_rejected++;
    return DOS_STREAM_REFUSE;
  case DOS_STREAM_DEFENSE_CLOSE_CIRCUIT:
    D.stats.stream_rejected++;
    D.stats.stream_circuits_closed++;
    return DOS_STREAM_CLOSE_CIRC;
  default:
    return DOS_STREAM_OK;
  }
}

/* ---- upkeep and reporting ------------------------------------------- */

void
dos_sweep_at(uint64_t now)
{
  if (!D.initialised)
    return;
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  hmap_iter_init(&it, D.clients);
  while (hmap_iter_next(&it, &k, &v)) {
    dos_client_t *c = v;
    if (c->n_conns || c->cc_marked_until_us > now ||
        c->conn_marked_until_us > now)
      continue;
    if (!tbucket_is_full(&c->circ_bucket, now) ||
        !tbucket_is_full(&c->conn_bucket, now))
      continue;
    hmap_iter_remove_current(&it);
    client_free(c);
  }
}

void
dos_set_max_clients_for_testing(size_t n)
{
  D.max_clients = n ? n : DOS_MAX_CLIENTS;
}

size_t
dos_record_bytes(void)
{
  return DOS_RECORD_BYTES;
}

static void
sweep_cb(void *arg)
{
  (void)arg;
  dos_sweep_at(now_us());
}

void
dos_get_stats(dos_stats_t *out)
{
  *out = D.stats;
  out->n_clients = D.initialised ? (unsigned)hmap_size(D.clients) : 0;
}

void
dos_heartbeat_line(char *out, size_t outlen)
{
  const dos_stats_t *s = &D.stats;
  char cc[128], conn[160], st[128];
  if (D.p.cc_enabled)
    snprintf(cc, sizeof(cc), " %llu circuits rejected, %llu marked "
             "addresses.",
             (unsigned long long)s->cc_circuits_rejected,
             (unsigned long long)s->cc_marked_addrs);
  else
    snprintf(cc, sizeof(cc), " [DoSCircuitCreationEnabled disabled]");
  if (D.p.conn_enabled)
    snprintf(conn, sizeof(conn), " %llu same address concurrent "
             "connections rejected, %llu connections rejected, %llu "
             "addresses marked by the connect rate.",
             (unsigned long long)s->conn_concurrent_rejected,
             (unsigned long long)s->conn_rate_rejected,
             (unsigned long long)s->conn_marked_addrs);
  else
    snprintf(conn, sizeof(conn), " [DoSConnectionEnabled disabled]");
  if (D.p.stream_enabled)
    snprintf(st, sizeof(st), " %llu stream requests rejected (%llu "
             "circuits closed).",
             (unsigned long long)s->stream_rejected,
             (unsigned long long)s->stream_circuits_closed);
  else
    snprintf(st, sizeof(st), " [DoSStreamCreationEnabled disabled]");
  snprintf(out, outlen, "DoS mitigation since startup:%s%s%s", cc, conn,
           st);
}
