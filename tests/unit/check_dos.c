/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dos.c -- the token buckets (lib/time/tbucket) and the DoS
 * defences (core/or/dos): parameter resolution (options, consensus, tor's
 * defaults), the connection, circuit-creation and stream limits, relay
 * exemption, marks that expire, the sweep and the heartbeat line. Time is
 * set by hand (dos_set_now_for_testing), so marks of an hour are tested
 * without waiting.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "core/or/dos.h"
#include "core/or/dos_options.h"
#include "lib/malloc/memacct.h"
#include "lib/address/address.h"
#include "lib/time/tbucket.h"

Suite *suite_dos(void);

#define SEC UINT64_C(1000000)

START_TEST(test_tbucket)
{
  tbucket_t b;
  tbucket_init(&b, 3, 5, 1000);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(tbucket_take(&b, 1000), 1);
  ck_assert_int_eq(tbucket_take(&b, 1000), 0);
  /* A third of a second earns one token at 3/s; fractions carry. */
  ck_assert_int_eq(tbucket_take(&b, 1000 + SEC / 3 - 1), 0);
  ck_assert_int_eq(tbucket_take(&b, 1000 + SEC / 3 + 1), 1);
  ck_assert_int_eq(tbucket_take(&b, 1000 + SEC / 3 + 2), 0);
  /* A long gap fills it to the burst, no more. */
  tbucket_refill(&b, 1000 + 3600 * SEC);
  ck_assert_uint_eq(b.tokens, 5);
  ck_assert_int_eq(tbucket_is_full(&b, 1000 + 3600 * SEC), 1);
  /* A smaller burst caps the tokens; time going backwards adds none. */
  tbucket_adjust(&b, 3, 2, 1000 + 3600 * SEC);
  ck_assert_uint_eq(b.tokens, 2);
  ck_assert_int_eq(tbucket_take(&b, 10), 1);
  ck_assert_uint_eq(b.tokens, 1);
  /* Rate 0 never refills; huge rates do not overflow. */
  tbucket_init(&b, 0, 1, 0);
  ck_assert_int_eq(tbucket_take(&b, 0), 1);
  ck_assert_int_eq(tbucket_take(&b, 1000 * SEC), 0);
  tbucket_init(&b, UINT32_MAX, UINT32_MAX, 0);
  b.tokens = 0;
  tbucket_refill(&b, UINT64_MAX / 2);
  ck_assert_uint_eq(b.tokens, UINT32_MAX);
}
END_TEST

static int32_t
fake_consensus(void *arg, const char *name, int32_t dflt, int32_t min,
               int32_t max)
{
  (void)arg;
  int32_t v = dflt;
  if (!strcmp(name, "DoSCircuitCreationEnabled"))
    v = 1;
  else if (!strcmp(name, "DoSCircuitCreationBurst"))
    v = 60;
  else if (!strcmp(name, "DoSConnectionMaxConcurrentCount"))
    v = 50;
  else if (!strcmp(name, "DoSStreamCreationDefenseType"))
    v = 9; /* out of range: clamped */
  return v < min ? min : v > max ? max : v;
}

START_TEST(test_params_resolve)
{
  dos_options_t o;
  memset(&o, 0, sizeof(o));
  o.cc_enabled = o.conn_enabled = o.stream_enabled = -1; /* auto */
  o.conn_connect_defense_period = 86400;
  dos_params_t p;
  /* No consensus: tor's defaults, all off. */
  dos_params_resolve(&p, &o, NULL, NULL);
  ck_assert_int_eq(p.cc_enabled, 0);
  ck_assert_int_eq(p.conn_enabled, 0);
  ck_assert_int_eq(p.stream_enabled, 0);
  ck_assert_uint_eq(p.cc_min_conns, 3);
  ck_assert_uint_eq(p.cc_rate, 3);
  ck_assert_uint_eq(p.cc_burst, 90);
  ck_assert_int_eq(p.cc_defense, 2);
  ck_assert_uint_eq(p.cc_defense_period, 3600);
  ck_assert_uint_eq(p.conn_max_concurrent, 100);
  ck_assert_uint_eq(p.conn_connect_rate, 20);
  ck_assert_uint_eq(p.conn_connect_burst, 40);
  ck_assert_uint_eq(p.conn_connect_defense_period, 86400);
  ck_assert_uint_eq(p.stream_rate, 100);
  ck_assert_uint_eq(p.stream_burst, 300);
  ck_assert_int_eq(p.stream_defense, 2);
  /* The consensus fills what the options leave at 0 / auto. */
  dos_params_resolve(&p, &o, fake_consensus, NULL);
  ck_assert_int_eq(p.cc_enabled, 1);
  ck_assert_uint_eq(p.cc_burst, 60);
  ck_assert_uint_eq(p.conn_max_concurrent, 50);
  ck_assert_int_eq(p.stream_defense, 3);
  ck_assert_int_eq(p.conn_enabled, 0);
  /* Options win over the consensus. */
  o.cc_enabled = 0;
  o.cc_burst = 7;
  o.conn_max_concurrent = 5;
  dos_params_resolve(&p, &o, fake_consensus, NULL);
  ck_assert_int_eq(p.cc_enabled, 0);
  ck_assert_uint_eq(p.cc_burst, 7);
  ck_assert_uint_eq(p.conn_max_concurrent, 5);
}
END_TEST

static pc_addr_t
addr(const char *s)
{
  pc_addr_t a;
  ck_assert_int_eq(pc_addr_parse(&a, s), 0);
  return a;
}

static dos_params_t P;

static void
setup(void)
{
  dos_init(NULL);
  dos_set_now_for_testing(1000 * SEC);
  dos_params_default(&P);
}

static void
teardown(void)
{
  dos_set_now_for_testing(0);
  dos_shutdown();
}

START_TEST(test_concurrent_connections)
{
  P.conn_enabled = 1;
  P.conn_max_concurrent = 3;
  dos_set_params(&P);
  pc_addr_t a = addr("198.51.100.7:4000"), b = addr("198.51.100.8:4000");
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
  ck_assert_int_eq(dos_conn_accepted(&a), -1);
  ck_assert_int_eq(dos_conn_accepted(&b), 1); /* another address */
  dos_conn_closed(&a);
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  dos_stats_t st;
  dos_get_stats(&st);
  ck_assert_uint_eq(st.conn_concurrent_rejected, 1);
  /* Defense type 1: counted, not refused. */
  P.conn_defense = DOS_DEFENSE_NONE;
  dos_set_params(&P);
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  /* Off: not counted at all. */
  P.conn_enabled = 0;
  dos_set_params(&P);
  ck_assert_int_eq(dos_conn_accepted(&a), 0);
}
END_TEST

START_TEST(test_connect_rate_marks)
{
  P.conn_enabled = 1;
  P.conn_connect_rate = 1;
  P.conn_connect_burst = 2;
  P.conn_connect_defense_period = 100;
  dos_set_params(&P);
  pc_addr_t a = addr("[2001:db8::5]:443");
  /* Two at once are fine; the third empties the bucket and marks. */
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
    dos_conn_closed(&a);
  }
  dos_stats_t st;
  dos_get_stats(&st);
  ck_assert_uint_eq(st.conn_marked_addrs, 1);
  ck_assert_int_eq(dos_conn_accepted(&a), -1);
  /* The mark lasts between 101 and 150 s. */
  dos_set_now_for_testing(1000 * SEC + 100 * SEC);
  ck_assert_int_eq(dos_conn_accepted(&a), -1);
  dos_set_now_for_testing(1000 * SEC + 151 * SEC);
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.conn_rate_rejected, 2);
}
END_TEST

START_TEST(test_relays_exempt)
{
  P.conn_enabled = 1;
  P.conn_max_concurrent = 1;
  dos_set_params(&P);
  pc_addr_t relays[2] = {addr("203.0.113.1:9001"), addr("[2001:db8::1]:9001")};
  dos_set_relay_addrs(relays, 2);
  pc_addr_t r = addr("203.0.113.1:5555"); /* any port */
  ck_assert_int_eq(dos_addr_is_relay(&r), 1);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(dos_conn_accepted(&r), 0);
  pc_addr_t c = addr("203.0.113.2:5555");
  ck_assert_int_eq(dos_addr_is_relay(&c), 0);
  ck_assert_int_eq(dos_conn_accepted(&c), 1);
  ck_assert_int_eq(dos_conn_accepted(&c), -1);
  /* A new consensus replaces the set. */
  dos_set_relay_addrs(&relays[1], 1);
  ck_assert_int_eq(dos_addr_is_relay(&r), 0);
}
END_TEST

START_TEST(test_circuit_creation)
{
  P.cc_enabled = 1;
  P.cc_burst = 10;
  P.cc_rate = 1;
  P.cc_min_conns = 3;
  P.cc_defense_period = 3600;
  dos_set_params(&P);
  pc_addr_t a = addr("192.0.2.9:1");
  /* Not counted (no connection seen): never limited. */
  for (int i = 0; i < 50; i++)
    ck_assert_int_eq(dos_create_allowed(&a), 0);
  /* Two connections: the burst runs out but the address is not marked
   * (fewer than DoSCircuitCreationMinConnections). */
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  for (int i = 0; i < 50; i++)
    ck_assert_int_eq(dos_create_allowed(&a), 0);
  dos_stats_t st;
  dos_get_stats(&st);
  ck_assert_uint_eq(st.cc_marked_addrs, 0);
  /* A third connection: the next CREATE with an empty bucket marks it,
   * and from then on its CREATEs are refused. */
  ck_assert_int_eq(dos_conn_accepted(&a), 1);
  ck_assert_int_eq(dos_create_allowed(&a), 0);
  ck_assert_int_eq(dos_create_allowed(&a), -1);
  ck_assert_int_eq(dos_create_allowed(&a), -1);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.cc_marked_addrs, 1);
  ck_assert_uint_eq(st.cc_circuits_rejected, 2);
  /* Still marked within N+1 s; free after 3/2 N. */
  dos_set_now_for_testing(1000 * SEC + 3601 * SEC - 1);
  ck_assert_int_eq(dos_create_allowed(&a), -1);
  dos_set_now_for_testing(1000 * SEC + 5401 * SEC);
  ck_assert_int_eq(dos_create_allowed(&a), 0);
  /* Defense type 1: marked but not refused. */
  P.cc_defense = DOS_DEFENSE_NONE;
  dos_set_params(&P);
  for (int i = 0; i < 50; i++)
    ck_assert_int_eq(dos_create_allowed(&a), 0);
  char line[512];
  dos_heartbeat_line(line, sizeof(line));
  ck_assert_msg(strstr(line, "DoS mitigation since startup: 3 circuits "
                             "rejected, 2 marked addresses.") != NULL,
                "%s", line);
  ck_assert_msg(strstr(line, "[DoSConnectionEnabled disabled]") != NULL,
                "%s", line);
}
END_TEST

START_TEST(test_stream_creation)
{
  P.stream_enabled = 1;
  P.stream_burst = 3;
  P.stream_rate = 1;
  dos_set_params(&P);
  dos_stream_state_t st;
  memset(&st, 0, sizeof(st));
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_OK);
  ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_REFUSE);
  dos_set_now_for_testing(1000 * SEC + SEC);
  ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_OK);
  ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_REFUSE);
  P.stream_defense = DOS_STREAM_DEFENSE_CLOSE_CIRCUIT;
  dos_set_params(&P);
  ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_CLOSE_CIRC);
  P.stream_enabled = 0;
  dos_set_params(&P);
  ck_assert_int_eq(dos_stream_allowed(&st), DOS_STREAM_OK);
  dos_stats_t s;
  dos_get_stats(&s);
  ck_assert_uint_eq(s.stream_rejected, 3);
  ck_assert_uint_eq(s.stream_circuits_closed, 1);
}
END_TEST

START_TEST(test_sweep)
{
  P.conn_enabled = 1;
  P.cc_enabled = 1;
  dos_set_params(&P);
  char s[64];
  for (int i = 0; i < 100; i++) {
    snprintf(s, sizeof(s), "10.9.%d.%d:1", i / 250, i % 250 + 1);
    pc_addr_t a = addr(s);
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
    if (i % 2)
      dos_conn_closed(&a);
  }
  dos_stats_t st;
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 100);
  /* Records with a connection open stay; the others go once their
   * buckets are full again. */
  dos_sweep_at(1000 * SEC);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 100);
  dos_sweep_at(1000 * SEC + 60 * SEC);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 50);
}
END_TEST

START_TEST(test_records_counted_and_capped)
{
  /* Every record is in the memory budget, and their number is capped:
   * at the cap, idle records go first, then the ones without a
   * connection (a marked flood of addresses), never the ones holding
   * connections; with only those left, a new address is not counted. */
  P.conn_enabled = 1;
  P.conn_connect_burst = 1; /* the second connection marks the address */
  dos_set_params(&P);
  dos_set_max_clients_for_testing(64);
  uint64_t base = memacct_get(MEMACCT_DOS);
  ck_assert_uint_ge(dos_record_bytes(), 64);
  char s[64];
  /* 16 addresses holding a connection each. */
  for (int i = 0; i < 16; i++) {
    snprintf(s, sizeof(s), "10.1.0.%d:1", i + 1);
    pc_addr_t a = addr(s);
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
  }
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base + 16 * dos_record_bytes());
  /* 48 marked addresses without connections fill the table. */
  for (int i = 0; i < 48; i++) {
    snprintf(s, sizeof(s), "10.2.0.%d:1", i + 1);
    pc_addr_t a = addr(s);
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
    dos_conn_closed(&a);
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
    dos_conn_closed(&a);
  }
  dos_stats_t st;
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 64);
  ck_assert_uint_eq(st.conn_marked_addrs, 48);
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base + 64 * dos_record_bytes());
  /* One more: marked records are dropped down to 7/8 of the cap. */
  pc_addr_t n = addr("10.3.0.1:1");
  ck_assert_int_eq(dos_conn_accepted(&n), 1);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 57);
  ck_assert_uint_eq(st.records_dropped, 8);
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base + 57 * dos_record_bytes());
  /* The addresses holding connections kept their records. */
  for (int i = 0; i < 16; i++) {
    snprintf(s, sizeof(s), "10.1.0.%d:1", i + 1);
    pc_addr_t a = addr(s);
    dos_conn_closed(&a); /* would underflow-clamp if the record had gone */
  }
  /* A table full of addresses holding connections: a new address is not
   * counted (and its connection not limited). */
  dos_shutdown();
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base);
  dos_init(NULL);
  dos_set_now_for_testing(1000 * SEC);
  P.conn_connect_burst = 40;
  dos_set_params(&P);
  dos_set_max_clients_for_testing(64);
  for (int i = 0; i < 64; i++) {
    snprintf(s, sizeof(s), "10.4.0.%d:1", i + 1);
    pc_addr_t a = addr(s);
    ck_assert_int_eq(dos_conn_accepted(&a), 1);
  }
  pc_addr_t late = addr("10.6.0.1:1");
  ck_assert_int_eq(dos_conn_accepted(&late), 0);
  dos_get_stats(&st);
  ck_assert_uint_eq(st.n_clients, 64);
  ck_assert_uint_eq(st.addrs_untracked, 1);
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base + 64 * dos_record_bytes());
  /* Everything is given back at shutdown. */
  dos_shutdown();
  ck_assert_uint_eq(memacct_get(MEMACCT_DOS), base);
  dos_init(NULL);
  dos_set_now_for_testing(1000 * SEC);
}
END_TEST

Suite *
suite_dos(void)
{
  Suite *s = suite_create("dos");
  TCase *tb = tcase_create("tbucket");
  tcase_add_test(tb, test_tbucket);
  tcase_add_test(tb, test_params_resolve);
  suite_add_tcase(s, tb);
  TCase *tc = tcase_create("defences");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_concurrent_connections);
  tcase_add_test(tc, test_connect_rate_marks);
  tcase_add_test(tc, test_relays_exempt);
  tcase_add_test(tc, test_circuit_creation);
  tcase_add_test(tc, test_stream_creation);
  tcase_add_test(tc, test_sweep);
  tcase_add_test(tc, test_records_counted_and_capped);
  suite_add_tcase(s, tc);
  return s;
}
