/* SPDX-License-Identifier: BSD-3-Clause */
/* check_measureme.c -- the MeasureMe request body (measureme.h), and the
 * limits on what unauthenticated requests can make a relay do: off by
 * default, one measurement per circuit and a token bucket per circuit and
 * per client address, a cap on circuits measured per client, the state
 * bounded and counted, the record file rotated at its size. Requests are
 * given to measureme_request_at() with circuits that exist only in this
 * test (no channels) and a clock the test sets. The recording itself is
 * checked end to end in tests/integration/measureme.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/or/circuit.h"
#include "feature/measureme/measureme.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

Suite *suite_measureme(void);

START_TEST(test_encode_known_bytes)
{
  measureme_request_t r = {1000, 30, {1, 2, 3, 4, 5, 6, 7, 8}};
  uint8_t out[MEASUREME_BODY_LEN];
  measureme_request_encode(out, &r);
  static const uint8_t want[MEASUREME_BODY_LEN] = {
      0x01, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x00, 0x1e,
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  ck_assert_mem_eq(out, want, sizeof(want));
  measureme_request_t back;
  const char *err = NULL;
  ck_assert_int_eq(measureme_request_parse(out, sizeof(out), &back, &err), 0);
  ck_assert_uint_eq(back.interval_ms, 1000);
  ck_assert_uint_eq(back.duration_s, 30);
  ck_assert_mem_eq(back.label, r.label, 8);
  /* longer bodies (a later version's extra fields) are fine */
  uint8_t longer[40];
  memset(longer, 0xee, sizeof(longer));
  memcpy(longer, out, sizeof(out));
  ck_assert_int_eq(measureme_request_parse(longer, sizeof(longer), &back,
                                           &err), 0);
}
END_TEST

START_TEST(test_parse_rejects)
{
  measureme_request_t r = {100, 0, {0}};
  uint8_t b[MEASUREME_BODY_LEN];
  measureme_request_t out;
  const char *err = NULL;
  measureme_request_encode(b, &r);
  ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err), 0);
  ck_assert_int_eq(measureme_request_parse(b, 15, &out, &err), -1);
  ck_assert_str_eq(err, "body too short");
  ck_assert_int_eq(measureme_request_parse(b, 0, &out, &err), -1);
  b[0] = 2;
  ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err), -1);
  ck_assert_str_eq(err, "unknown version");
  const struct {
    uint16_t iv;
    uint32_t dur;
    int ok;
  } cases[] = {{99, 0, 0},    {100, 0, 1},     {60000, 0, 1},
               {60001, 0, 0}, {1000, 86400, 1}, {1000, 86401, 0},
               {0, 0, 0},     {65535, 0, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    r.interval_ms = cases[i].iv;
    r.duration_s = cases[i].dur;
    measureme_request_encode(b, &r);
    ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err),
                     cases[i].ok ? 0 : -1);
  }
}
END_TEST


/* ---- limits ---------------------------------------------------------- */

#define N_CIRCS 300
static struct {
  char dir[64];
  evloop_t *loop;
  or_circuit_t circ[N_CIRCS];
  pc_addr_t ip[4];
  uint8_t body[MEASUREME_BODY_LEN];
} X;

static void
mm_setup(const measureme_config_t *cfg)
{
  memset(&X, 0, sizeof(X));
  strcpy(X.dir, "/tmp/pctor-check-mm.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(X.dir));
  X.loop = evloop_new();
  for (int i = 0; i < N_CIRCS; i++) {
    X.circ[i].base.kind = CIRC_KIND_OR;
    X.circ[i].base.gid = 1000 + (uint64_t)i;
  }
  for (int i = 0; i < 4; i++) {
    X.ip[i].family = AF_INET;
    X.ip[i].addr[0] = 10;
    X.ip[i].addr[3] = (uint8_t)(i + 1);
  }
  measureme_request_t r = {100, 0, {1, 2, 3, 4, 5, 6, 7, 8}};
  measureme_request_encode(X.body, &r);
  measureme_init(X.loop, X.dir, cfg);
}

static void
mm_teardown(void)
{
  measureme_shutdown();
  evloop_free(X.loop);
  char *p = pc_asprintf("%s/measureme.jsonl", X.dir);
  unlink(p);
  free(p);
  p = pc_asprintf("%s/measureme.jsonl.1", X.dir);
  unlink(p);
  free(p);
  rmdir(X.dir);
}

/* Ask on circuit i from address ip at second t (duration dur s). */
static measureme_result_t
ask(int i, int ip, double t, uint32_t dur)
{
  measureme_request_t r = {100, dur, {1, 2, 3, 4, 5, 6, 7, 8}};
  measureme_request_encode(X.body, &r);
  return measureme_request_at(&X.circ[i], &X.ip[ip], X.body, sizeof(X.body),
                              (uint64_t)(t * 1e6) + 1000000);
}

static void
closing(int i)
{
  measureme_circuit_closing(&X.circ[i].base);
}

static off_t
file_size(const char *name)
{
  char *p = pc_asprintf("%s/%s", X.dir, name);
  struct stat st;
  off_t n = stat(p, &st) == 0 ? st.st_size : -1;
  free(p);
  return n;
}

START_TEST(test_off_by_default)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  ck_assert_int_eq(cfg.enabled, 0);
  mm_setup(&cfg);
  ck_assert_int_eq(measureme_is_enabled(), 0);
  ck_assert_int_eq(ask(0, 0, 0, 0), MEASUREME_REFUSED_DISABLED);
  ck_assert_uint_eq(measureme_n_active(), 0);
  ck_assert_int_eq(file_size("measureme.jsonl"), -1);
  /* Turned on by SIGHUP: accepted; off again: stopped. */
  cfg.enabled = 1;
  measureme_configure(&cfg);
  ck_assert_int_eq(measureme_is_enabled(), 1);
  ck_assert_int_eq(ask(0, 0, 1, 0), MEASUREME_ACCEPTED);
  ck_assert_uint_eq(measureme_n_active(), 1);
  ck_assert_int_gt(file_size("measureme.jsonl"), 0); /* the first record */
  cfg.enabled = 0;
  measureme_configure(&cfg);
  ck_assert_uint_eq(measureme_n_active(), 0);
  ck_assert_int_eq(measureme_is_enabled(), 0);
  /* What the heartbeat counts: one accepted, one refused. */
  measureme_stats_t st;
  measureme_get_stats(&st);
  ck_assert_uint_eq(st.n_by_result[MEASUREME_ACCEPTED], 1);
  ck_assert_uint_eq(st.n_by_result[MEASUREME_REFUSED_DISABLED], 1);
  mm_teardown();
  ck_assert_int_eq(measureme_is_enabled(), 0);
}
END_TEST

START_TEST(test_circuit_limits)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  cfg.enabled = 1;
  mm_setup(&cfg);
  ck_assert_int_eq(ask(0, 0, 0, 1), MEASUREME_ACCEPTED);
  /* One measurement at a time. */
  ck_assert_int_eq(ask(0, 0, 0.5, 1), MEASUREME_REFUSED_BUSY);
  /* Its duration ends at the tick after 1 s. */
  measureme_tick_at(2200000);
  ck_assert_uint_eq(measureme_n_active(), 0);
  /* The circuit's bucket: MEASUREME_CIRC_BURST requests, then one per
   * MEASUREME_CIRC_REFILL_S seconds. */
  double t = 2;
  for (int k = 1; k < MEASUREME_CIRC_BURST; k++) {
    ck_assert_int_eq(ask(0, 0, t, 1), MEASUREME_ACCEPTED);
    measureme_tick_at((uint64_t)((t + 2.2) * 1e6));
    t += 2.5;
  }
  ck_assert_int_eq(ask(0, 0, t, 1), MEASUREME_REFUSED_CIRCUIT_RATE);
  ck_assert_int_eq(ask(0, 0, t + MEASUREME_CIRC_REFILL_S, 1),
                   MEASUREME_ACCEPTED);
  /* Another circuit of the same client is not affected. */
  ck_assert_int_eq(ask(1, 0, t, 0), MEASUREME_ACCEPTED);
  /* The state is counted for MaxMemInQueues while the circuit lives,
   * and goes with it. */
  ck_assert_uint_gt(measureme_circuit_mem(&X.circ[0].base), 0);
  ck_assert_uint_eq(measureme_circuit_mem(&X.circ[2].base), 0);
  /* The memory budget holds the two circuits' and the client's records. */
  uint64_t budget = memacct_get(MEMACCT_MEASUREME);
  ck_assert_uint_ge(budget, 2 * measureme_circuit_mem(&X.circ[0].base));
  closing(0);
  ck_assert_uint_eq(measureme_circuit_mem(&X.circ[0].base), 0);
  ck_assert_uint_lt(memacct_get(MEMACCT_MEASUREME), budget);
  measureme_stats_t st;
  measureme_get_stats(&st);
  ck_assert_uint_eq(st.n_circuits_known, 1);
  ck_assert_uint_eq(st.n_by_result[MEASUREME_REFUSED_BUSY], 1);
  ck_assert_uint_eq(st.n_by_result[MEASUREME_REFUSED_CIRCUIT_RATE], 1);
  mm_teardown();
  ck_assert_uint_eq(memacct_get(MEMACCT_MEASUREME), 0);
}
END_TEST

START_TEST(test_client_limits)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  cfg.enabled = 1;
  cfg.client_burst = 5;
  cfg.client_rate = 60; /* one a second */
  mm_setup(&cfg);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(ask(i, 0, 0, 0), MEASUREME_ACCEPTED);
  ck_assert_int_eq(ask(5, 0, 0, 0), MEASUREME_REFUSED_CLIENT_RATE);
  /* Another address has its own bucket. */
  ck_assert_int_eq(ask(6, 1, 0, 0), MEASUREME_ACCEPTED);
  /* One more a second. */
  ck_assert_int_eq(ask(5, 0, 1.01, 0), MEASUREME_ACCEPTED);
  ck_assert_int_eq(ask(7, 0, 1.02, 0), MEASUREME_REFUSED_CLIENT_RATE);
  measureme_shutdown();
  evloop_free(X.loop);

  /* At most MEASUREME_MAX_PER_CLIENT measured at once per address,
   * MEASUREME_MAX_CIRCUITS in all. */
  cfg.client_burst = 10000;
  cfg.client_rate = 60000;
  X.loop = evloop_new();
  measureme_init(X.loop, X.dir, &cfg);
  for (int i = 0; i < MEASUREME_MAX_PER_CLIENT; i++)
    ck_assert_int_eq(ask(i, 0, 0, 0), MEASUREME_ACCEPTED);
  ck_assert_int_eq(ask(MEASUREME_MAX_PER_CLIENT, 0, 0, 0),
                   MEASUREME_REFUSED_CLIENT_MAX);
  closing(3);
  ck_assert_int_eq(ask(MEASUREME_MAX_PER_CLIENT, 0, 0, 0),
                   MEASUREME_ACCEPTED);
  /* Four addresses fill the global table. */
  int next = MEASUREME_MAX_PER_CLIENT + 1;
  for (int ip = 1; ip < 4; ip++)
    for (int k = 0; k < MEASUREME_MAX_PER_CLIENT; k++)
      ck_assert_int_eq(ask(next++, ip, 0, 0), MEASUREME_ACCEPTED);
  ck_assert_uint_eq(measureme_n_active(), MEASUREME_MAX_CIRCUITS);
  ck_assert_int_eq(ask(next, 3, 0, 0), MEASUREME_REFUSED_FULL);
  measureme_stats_t st;
  measureme_get_stats(&st);
  ck_assert_uint_eq(st.n_clients_known, 4);
  /* A circuit's entry holds its batch of answer records (10 of 48
   * bytes): under 768 bytes each. */
  ck_assert_uint_le(st.mem_bytes, MEASUREME_MAX_CIRCUITS * 768 + 4 * 64);
  /* A tick costs one look per measured circuit: 256 records written. */
  uint64_t before = measureme_n_records();
  measureme_tick_at(1200000);
  ck_assert_uint_eq(measureme_n_records() - before, MEASUREME_MAX_CIRCUITS);
  for (int i = 0; i < next; i++)
    closing(i);
  ck_assert_uint_eq(measureme_n_active(), 0);
  measureme_get_stats(&st);
  ck_assert_uint_eq(st.n_circuits_known, 0);
  /* Idle clients with full buckets are forgotten by the sweep. */
  measureme_tick_at(1200000 + 3600 * 1000000ULL);
  measureme_get_stats(&st);
  ck_assert_uint_eq(st.n_clients_known, 0);
  mm_teardown();
}
END_TEST

START_TEST(test_rotation)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  cfg.enabled = 1;
  cfg.log_max_size = 8192;
  mm_setup(&cfg);
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(ask(i, 0, 0, 0), MEASUREME_ACCEPTED);
  /* Records of about 400 bytes (no channels), four per tick: 40 ticks
   * write over 60 kB. */
  for (int k = 1; k <= 40; k++)
    measureme_tick_at(1000000 + (uint64_t)k * 100000);
  measureme_stats_t st;
  measureme_get_stats(&st);
  ck_assert_uint_ge(st.n_rotations, 3);
  off_t cur = file_size("measureme.jsonl"), old = file_size("measureme.jsonl.1");
  ck_assert_int_ge(old, 8192);
  ck_assert_int_lt(old, 8192 + 2048);
  ck_assert_int_lt(cur, 8192);
  /* Both files hold whole JSON lines. */
  char *p = pc_asprintf("%s/measureme.jsonl.1", X.dir);
  FILE *f = fopen(p, "r");
  free(p);
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof(line), f)) {
    ck_assert(line[0] == '{');
    ck_assert(!strcmp(line + strlen(line) - 2, "}\n"));
    n++;
  }
  fclose(f);
  ck_assert_int_ge(n, 10);
  mm_teardown();
}
END_TEST

/* Lines in the record file, and whether it ends with a whole line. */
static int
count_lines(int *whole)
{
  char *p = pc_asprintf("%s/measureme.jsonl", X.dir);
  FILE *f = fopen(p, "r");
  free(p);
  ck_assert_ptr_nonnull(f);
  int n = 0, c, last = '\n';
  while ((c = fgetc(f)) != EOF) {
    if (c == '\n')
      n++;
    last = c;
  }
  fclose(f);
  *whole = last == '\n';
  return n;
}

/* Records are buffered within a tick and flushed at its end: after each
 * tick, and after a record written outside one (the first, at the request;
 * the last, at the close), the file holds every record, in whole lines. */
START_TEST(test_flush_per_tick)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  cfg.enabled = 1;
  mm_setup(&cfg);
  int whole;
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(ask(i, 0, 0, 0), MEASUREME_ACCEPTED);
    ck_assert_int_eq(count_lines(&whole), i + 1);
    ck_assert(whole);
  }
  measureme_tick_at(1000000 + 100000);
  ck_assert_int_eq(count_lines(&whole), 8);
  ck_assert(whole);
  measureme_tick_at(1000000 + 200000);
  ck_assert_int_eq(count_lines(&whole), 12);
  closing(2);
  ck_assert_int_eq(count_lines(&whole), 13);
  ck_assert(whole);
  ck_assert_uint_eq(measureme_n_records(), 13);
  mm_teardown();
}
END_TEST

/* ---- answers ----------------------------------------------------------- */

START_TEST(test_answer_status_known_bytes)
{
  measureme_answer_t a;
  memset(&a, 0, sizeof(a));
  a.type = MEASUREME_ANSWER_STATUS;
  memcpy(a.label, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  a.result = MEASUREME_REFUSED_CLIENT_RATE;
  uint8_t out[MEASUREME_ANSWER_MAX_LEN];
  ck_assert_uint_eq(measureme_answer_encode(out, &a),
                    MEASUREME_ANSWER_STATUS_LEN);
  static const uint8_t want[] = {0x01, 0x01, 0x01, 0x02, 0x03, 0x04,
                                 0x05, 0x06, 0x07, 0x08, 0x05};
  ck_assert_mem_eq(out, want, sizeof(want));
  measureme_answer_t back;
  const char *err = NULL;
  ck_assert_int_eq(measureme_answer_parse(out, sizeof(want), &back, &err), 0);
  ck_assert_uint_eq(back.type, MEASUREME_ANSWER_STATUS);
  ck_assert_uint_eq(back.result, MEASUREME_REFUSED_CLIENT_RATE);
  ck_assert_mem_eq(back.label, a.label, 8);
  ck_assert_str_eq(measureme_result_name(back.result), "client_rate");
  ck_assert_str_eq(measureme_result_name(MEASUREME_ACCEPTED), "accepted");
  ck_assert_ptr_null(measureme_result_name(MEASUREME_N_RESULTS));
  /* A result this version does not know is refused, both ways. */
  a.result = MEASUREME_N_RESULTS;
  ck_assert_uint_eq(measureme_answer_encode(out, &a), 0);
  uint8_t bad[sizeof(want)];
  memcpy(bad, want, sizeof(want));
  bad[10] = MEASUREME_N_RESULTS;
  ck_assert_int_eq(measureme_answer_parse(bad, sizeof(bad), &back, &err), -1);
  ck_assert_str_eq(err, "unknown result in a status answer");
}
END_TEST

START_TEST(test_answer_records_bounds)
{
  measureme_answer_t a;
  memset(&a, 0, sizeof(a));
  a.type = MEASUREME_ANSWER_RECORDS;
  memset(a.label, 0xab, 8);
  a.n_records = MEASUREME_ANSWER_MAX_RECORDS;
  for (unsigned i = 0; i < a.n_records; i++) {
    measureme_answer_record_t *r = &a.records[i];
    r->seq = i;
    r->offset_ms = 100 * i;
    r->cells_fwd = 0x01020304;
    r->cells_bwd = UINT32_MAX;
    r->fwd = (measureme_answer_queue_t){1, 2, 3, 4};
    r->bwd = (measureme_answer_queue_t){5, 6, 7, 8 + i};
  }
  uint8_t out[MEASUREME_ANSWER_MAX_LEN];
  size_t n = measureme_answer_encode(out, &a);
  /* The largest answer fits a relay cell's body (498 bytes). */
  ck_assert_uint_eq(n, 11 + 10 * 48);
  ck_assert_uint_eq(n, MEASUREME_ANSWER_MAX_LEN);
  ck_assert_uint_le(MEASUREME_ANSWER_MAX_LEN, 498);
  /* The first record's bytes, big-endian. */
  static const uint8_t rec0[48] = {
      0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff,
      0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4,
      0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 8};
  ck_assert_uint_eq(out[10], 10);
  ck_assert_mem_eq(out + 11, rec0, 48);
  measureme_answer_t back;
  const char *err = NULL;
  ck_assert_int_eq(measureme_answer_parse(out, n, &back, &err), 0);
  ck_assert_uint_eq(back.n_records, 10);
  ck_assert_mem_eq(back.records, a.records, sizeof(a.records));
  /* One byte short of its records: refused; a longer body is fine. */
  ck_assert_int_eq(measureme_answer_parse(out, n - 1, &back, &err), -1);
  ck_assert_str_eq(err, "answer shorter than its records");
  uint8_t longer[498];
  memset(longer, 0xee, sizeof(longer));
  memcpy(longer, out, n);
  ck_assert_int_eq(measureme_answer_parse(longer, sizeof(longer), &back,
                                          &err), 0);
  /* Counts out of range, both ways. */
  a.n_records = 0;
  ck_assert_uint_eq(measureme_answer_encode(out, &a), 0);
  a.n_records = MEASUREME_ANSWER_MAX_RECORDS + 1;
  ck_assert_uint_eq(measureme_answer_encode(out, &a), 0);
  longer[10] = 0;
  ck_assert_int_eq(measureme_answer_parse(longer, sizeof(longer), &back,
                                          &err), -1);
  longer[10] = 11;
  ck_assert_int_eq(measureme_answer_parse(longer, sizeof(longer), &back,
                                          &err), -1);
  ck_assert_str_eq(err, "record count out of range (1 to 10)");
  longer[10] = 255;
  ck_assert_int_eq(measureme_answer_parse(longer, sizeof(longer), &back,
                                          &err), -1);
  /* Header faults. */
  for (size_t len = 0; len < MEASUREME_ANSWER_STATUS_LEN; len++) {
    ck_assert_int_eq(measureme_answer_parse(out, len, &back, &err), -1);
    ck_assert_str_eq(err, "answer too short");
  }
  out[0] = 2;
  ck_assert_int_eq(measureme_answer_parse(out, n, &back, &err), -1);
  ck_assert_str_eq(err, "unknown answer version");
  out[0] = 1;
  out[1] = 3;
  ck_assert_int_eq(measureme_answer_parse(out, n, &back, &err), -1);
  ck_assert_str_eq(err, "unknown answer type");
  a.type = 0;
  a.n_records = 1;
  ck_assert_uint_eq(measureme_answer_encode(out, &a), 0);
}
END_TEST

/* Random bodies: the parser says yes or no, never reads past the body
 * (ASan builds check that) and never returns more records than fit. */
START_TEST(test_answer_parse_garbage)
{
  uint32_t x = 12345;
  for (int k = 0; k < 20000; k++) {
    size_t len = (x = x * 1103515245 + 12345) % 500;
    uint8_t *b = pc_malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++)
      b[i] = (uint8_t)((x = x * 1103515245 + 12345) >> 16);
    if (len > 1 && (k & 1)) {
      b[0] = 1; /* often a valid header, to reach the records */
      b[1] = (uint8_t)(1 + (k & 2) / 2);
    }
    measureme_answer_t a;
    const char *err = NULL;
    if (measureme_answer_parse(b, len, &a, &err) == 0) {
      ck_assert(a.type == MEASUREME_ANSWER_STATUS ||
                a.type == MEASUREME_ANSWER_RECORDS);
      ck_assert_uint_le(a.n_records, MEASUREME_ANSWER_MAX_RECORDS);
      ck_assert_uint_ge(len, MEASUREME_ANSWER_HEADER_LEN + 1 +
                                 a.n_records * MEASUREME_ANSWER_RECORD_LEN);
    } else {
      ck_assert_ptr_nonnull(err);
    }
    free(b);
  }
}
END_TEST

/* What the relay sends back, caught instead of sent on a circuit. */
#define MAX_SENT 64
static struct {
  int n;
  uint64_t gid[MAX_SENT];
  measureme_answer_t a[MAX_SENT];
} S;

static int
catch_answer(or_circuit_t *circ, const uint8_t *body, size_t len)
{
  ck_assert_int_lt(S.n, MAX_SENT);
  ck_assert_uint_le(len, 498);
  const char *err = NULL;
  ck_assert_int_eq(measureme_answer_parse(body, len, &S.a[S.n], &err), 0);
  S.gid[S.n++] = circ->base.gid;
  return 0;
}

static measureme_result_t
ask_every(int i, double t, uint16_t interval_ms, uint32_t dur)
{
  measureme_request_t r = {interval_ms, dur, {9, 9, 9, 9, 9, 9, 9, (uint8_t)i}};
  measureme_request_encode(X.body, &r);
  return measureme_request_at(&X.circ[i], &X.ip[0], X.body, sizeof(X.body),
                              (uint64_t)(t * 1e6) + 1000000);
}

static void
tick(double t)
{
  measureme_tick_at((uint64_t)(t * 1e6) + 1000000);
}

START_TEST(test_answers_sent)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  mm_setup(&cfg);
  memset(&S, 0, sizeof(S));
  measureme_set_answer_sender(catch_answer);
  /* Off: a status "disabled", with the request's label. */
  ck_assert_int_eq(ask_every(0, 0, 100, 0), MEASUREME_REFUSED_DISABLED);
  ck_assert_int_eq(S.n, 1);
  ck_assert_uint_eq(S.a[0].type, MEASUREME_ANSWER_STATUS);
  ck_assert_uint_eq(S.a[0].result, MEASUREME_REFUSED_DISABLED);
  ck_assert_uint_eq(S.a[0].label[7], 0);
  ck_assert_uint_eq(S.a[0].label[0], 9);
  cfg.enabled = 1;
  measureme_configure(&cfg);
  /* A body too short: "malformed", label zeros. */
  ck_assert_int_eq(measureme_request_at(&X.circ[1], &X.ip[0], X.body, 5,
                                        1000000), MEASUREME_REFUSED_MALFORMED);
  ck_assert_int_eq(S.n, 2);
  ck_assert_uint_eq(S.a[1].result, MEASUREME_REFUSED_MALFORMED);
  static const uint8_t zeros[8] = {0};
  ck_assert_mem_eq(S.a[1].label, zeros, 8);
  /* Accepted every 100 ms: the status at once, the first record waits. */
  S.n = 0;
  ck_assert_int_eq(ask_every(2, 0, 100, 0), MEASUREME_ACCEPTED);
  ck_assert_int_eq(S.n, 1);
  ck_assert_uint_eq(S.a[0].result, MEASUREME_ACCEPTED);
  ck_assert_uint_eq(S.gid[0], X.circ[2].base.gid);
  /* A second request while measured: "busy", and nothing else. */
  ck_assert_int_eq(ask_every(2, 0.05, 100, 0), MEASUREME_REFUSED_BUSY);
  ck_assert_int_eq(S.n, 2);
  ck_assert_uint_eq(S.a[1].result, MEASUREME_REFUSED_BUSY);
  /* Ten records (0 ms .. 900 ms) fill one cell. */
  for (int k = 1; k <= 8; k++)
    tick(0.1 * k);
  ck_assert_int_eq(S.n, 2);
  tick(0.9);
  ck_assert_int_eq(S.n, 3);
  ck_assert_uint_eq(S.a[2].type, MEASUREME_ANSWER_RECORDS);
  ck_assert_uint_eq(S.a[2].n_records, 10);
  for (unsigned i = 0; i < 10; i++) {
    ck_assert_uint_eq(S.a[2].records[i].seq, i);
    ck_assert_uint_eq(S.a[2].records[i].offset_ms, 100 * i);
  }
  ck_assert_uint_eq(S.a[2].label[7], 2);
  /* At most one records cell a second: 20 more ticks, two cells. */
  for (int k = 10; k < 30; k++)
    tick(0.1 * k);
  ck_assert_int_eq(S.n, 5);
  ck_assert_uint_eq(S.a[4].records[9].seq, 29);
  /* A circuit that closes takes its waiting records with it. */
  tick(3.0);
  closing(2);
  ck_assert_int_eq(S.n, 5);

  /* Every 1000 ms: a record waits at most a second, so each cell carries
   * the records of about a second. */
  ck_assert_int_eq(ask_every(3, 10, 1000, 2), MEASUREME_ACCEPTED);
  ck_assert_int_eq(S.n, 6);
  tick(10.5);
  ck_assert_int_eq(S.n, 6);
  tick(11.0);
  ck_assert_int_eq(S.n, 7);
  ck_assert_uint_eq(S.a[6].n_records, 2);
  ck_assert_uint_eq(S.a[6].records[1].offset_ms, 1000);
  /* The duration (2 s) ends with the record at 12 s, which goes back
   * with the end rather than a second later. */
  tick(12.0);
  ck_assert_int_eq(S.n, 8);
  ck_assert_uint_eq(S.a[7].n_records, 1);
  ck_assert_uint_eq(S.a[7].records[0].seq, 2);
  ck_assert_uint_eq(measureme_n_active(), 0);
  tick(20.0);
  ck_assert_int_eq(S.n, 8);
  /* With the two refusals before S was reset: 10 in all. */
  ck_assert_uint_eq(measureme_n_answers(), 10);
  mm_teardown();
}
END_TEST

/* __MeasureMeGarbageAnswers: every answer is followed by a bad one that
 * a client refuses (parse error, or a label not the one it sent). */
static int n_good, n_bad, n_bad_label;
static int
catch_any(or_circuit_t *circ, const uint8_t *body, size_t len)
{
  (void)circ;
  measureme_answer_t a;
  const char *err = NULL;
  if (measureme_answer_parse(body, len, &a, &err) < 0)
    n_bad++;
  else if (a.label[0] != 9)
    n_bad_label++;
  else
    n_good++;
  return 0;
}

START_TEST(test_garbage_answers_option)
{
  measureme_config_t cfg;
  measureme_config_default(&cfg);
  cfg.enabled = 1;
  cfg.garbage_answers = 1;
  mm_setup(&cfg);
  measureme_set_answer_sender(catch_any);
  n_good = n_bad = n_bad_label = 0;
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(ask_every(i, 0, 100, 0), MEASUREME_ACCEPTED);
  ck_assert_int_eq(n_good, 8);
  ck_assert_int_eq(n_bad + n_bad_label, 8);
  ck_assert_int_eq(n_bad_label, 2); /* one fault in four is the label */
  /* Records too (the fourth fault cuts them short). */
  tick(1.0);
  ck_assert_int_eq(n_good, 16);
  ck_assert_int_eq(n_bad + n_bad_label, 16);
  mm_teardown();
}
END_TEST

Suite *
suite_measureme(void)
{
  Suite *s = suite_create("measureme");
  TCase *tc = tcase_create("request");
  tcase_add_test(tc, test_encode_known_bytes);
  tcase_add_test(tc, test_parse_rejects);
  suite_add_tcase(s, tc);
  TCase *ta = tcase_create("answer");
  tcase_add_test(ta, test_answer_status_known_bytes);
  tcase_add_test(ta, test_answer_records_bounds);
  tcase_add_test(ta, test_answer_parse_garbage);
  tcase_add_test(ta, test_answers_sent);
  tcase_add_test(ta, test_garbage_answers_option);
  suite_add_tcase(s, ta);
  TCase *tl = tcase_create("limits");
  tcase_add_test(tl, test_off_by_default);
  tcase_add_test(tl, test_circuit_limits);
  tcase_add_test(tl, test_client_limits);
  tcase_add_test(tl, test_rotation);
  tcase_add_test(tl, test_flush_per_tick);
  suite_add_tcase(s, tl);
  return s;
}
