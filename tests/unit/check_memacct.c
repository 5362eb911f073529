/* SPDX-License-Identifier: BSD-3-Clause */
/* check_memacct.c -- the process-wide memory budget (lib/malloc/memacct)
 * and the holders that feed it from lib and core: buffers (the
 * connections' and hence exit, SOCKS and link buffers), queued cells.
 * Holders in features are checked in their own suites (dircache,
 * conflux, measureme, edge).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "core/or/cell_queue.h"
#include "lib/buf/buf.h"
#include "lib/malloc/memacct.h"

Suite *suite_memacct(void);

static int n_fired;
static void
fired(void *arg)
{
  int *p = arg;
  (*p)++;
  n_fired++;
}

START_TEST(test_counters_and_trigger)
{
  memacct_reset_for_testing();
  n_fired = 0;
  int mine = 0;
  memacct_add(MEMACCT_EXIT_BUF, 1000);
  memacct_add(MEMACCT_CONFLUX, 24);
  ck_assert_uint_eq(memacct_total(), 1024);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), 1000);
  ck_assert_int_eq(memacct_largest_kind(), MEMACCT_EXIT_BUF);
  char d[128];
  memacct_describe(d, sizeof(d));
  ck_assert_str_eq(d, "exit_buf=1 KB, conflux=1 KB");
  /* Arming below the total fires at once; then it stays disarmed. */
  memacct_set_trigger(1000, fired, &mine);
  ck_assert_int_eq(mine, 1);
  ck_assert_uint_eq(memacct_trigger(), UINT64_MAX);
  memacct_add(MEMACCT_CELLS, 5000);
  ck_assert_int_eq(mine, 1);
  /* Re-armed above the usage (nothing could be freed): fires only past
   * that; the limit stays what it was. */
  memacct_rearm(memacct_total() + 100);
  ck_assert_uint_eq(memacct_limit(), 1000);
  memacct_add(MEMACCT_CELLS, 100);
  ck_assert_int_eq(mine, 1);
  memacct_add(MEMACCT_CELLS, 1);
  ck_assert_int_eq(mine, 2);
  /* Once usage falls to the limit, a raised trigger comes back down. */
  memacct_rearm(memacct_total() + 100);
  memacct_sub(MEMACCT_CELLS, 5101);
  ck_assert_uint_eq(memacct_total(), 1024);
  ck_assert_uint_eq(memacct_trigger(), 1024 + 5101 + 100);
  memacct_sub(MEMACCT_EXIT_BUF, 24);
  ck_assert_uint_eq(memacct_trigger(), 1000);
  memacct_add(MEMACCT_DIRCACHE, 1);
  ck_assert_int_eq(mine, 3);
  /* memacct_set replaces one kind; a rise can fire. */
  memacct_rearm(2000);
  memacct_set(MEMACCT_MEASUREME, 500);
  ck_assert_uint_eq(memacct_total(), 1501);
  ck_assert_int_eq(mine, 3);
  memacct_set(MEMACCT_MEASUREME, 1500);
  ck_assert_int_eq(mine, 4);
  memacct_set(MEMACCT_MEASUREME, 0);
  ck_assert_uint_eq(memacct_total(), 1001);
  /* Subtracting more than was added is a holder's bug: clamped, counted. */
  memacct_sub(MEMACCT_CONFLUX, 25);
  ck_assert_uint_eq(memacct_get(MEMACCT_CONFLUX), 0);
  ck_assert_uint_eq(memacct_underflows(), 1);
  /* Bad kinds are ignored. */
  memacct_add(MEMACCT_N_KINDS, 10);
  memacct_add(MEMACCT_NONE, 10);
  ck_assert_uint_eq(memacct_total(), 977);
  /* No callback: never fires. */
  memacct_set_trigger(1, NULL, NULL);
  memacct_add(MEMACCT_CELLS, 1 << 20);
  ck_assert_int_eq(mine, 4);
  memacct_reset_for_testing();
}
END_TEST

START_TEST(test_exclude_for_testing)
{
  memacct_reset_for_testing();
  memacct_add(MEMACCT_CHAN_BUF, 300);
  memacct_add(MEMACCT_CELLS, 100);
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 1);
  ck_assert_uint_eq(memacct_total(), 100);
  memacct_add(MEMACCT_CHAN_BUF, 50);
  ck_assert_uint_eq(memacct_total(), 100);
  ck_assert_uint_eq(memacct_get(MEMACCT_CHAN_BUF), 350);
  memacct_exclude_for_testing(MEMACCT_CHAN_BUF, 0);
  ck_assert_uint_eq(memacct_total(), 450);
  memacct_reset_for_testing();
}
END_TEST

/* A buffer counts its chunk memory under its kind through every
 * operation that changes it, and gives it all back when freed. */
START_TEST(test_buffers_counted)
{
  memacct_reset_for_testing();
  static uint8_t data[100000];
  memset(data, 7, sizeof(data));
  buf_t *a = buf_new(), *b = buf_new();
  buf_add(a, data, 1000); /* before it is counted */
  buf_set_memacct(a, MEMACCT_EXIT_BUF);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), buf_allocation(a));
  buf_add(a, data, sizeof(data));
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), buf_allocation(a));
  ck_assert_uint_gt(buf_allocation(a), sizeof(data));
  /* A pull-up larger than one chunk replaces the head chunk. */
  (void)buf_pullup(a, 40000);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), buf_allocation(a));
  buf_drain(a, 30000);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), buf_allocation(a));
  size_t avail = 0;
  (void)buf_tail_space(a, 20000, &avail);
  buf_commit(a, 10);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), buf_allocation(a));
  /* Moving chunks between buffers of different kinds moves the count. */
  buf_set_memacct(b, MEMACCT_EDGE_BUF);
  buf_add(b, data, 10);
  buf_move_all(b, a);
  ck_assert_uint_eq(memacct_get(MEMACCT_EXIT_BUF), 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_EDGE_BUF), buf_allocation(b));
  /* Changing kind moves what it holds. */
  buf_set_memacct(b, MEMACCT_CHAN_BUF);
  ck_assert_uint_eq(memacct_get(MEMACCT_EDGE_BUF), 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_CHAN_BUF), buf_allocation(b));
  buf_free(a);
  buf_free(b);
  ck_assert_uint_eq(memacct_total(), 0);
  ck_assert_uint_eq(memacct_underflows(), 0);
}
END_TEST

START_TEST(test_cells_counted)
{
  memacct_reset_for_testing();
  packed_cell_t *c[10];
  for (int i = 0; i < 10; i++)
    c[i] = packed_cell_new();
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), 10 * sizeof(packed_cell_t));
  ck_assert_uint_eq(memacct_get(MEMACCT_CELLS), cell_queues_total_bytes());
  for (int i = 0; i < 10; i++)
    packed_cell_free(c[i]);
  ck_assert_uint_eq(memacct_total(), 0);
  ck_assert_uint_eq(memacct_underflows(), 0);
}
END_TEST

Suite *
suite_memacct(void)
{
  Suite *s = suite_create("memacct");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_counters_and_trigger);
  tcase_add_test(tc, test_exclude_for_testing);
  tcase_add_test(tc, test_buffers_counted);
  tcase_add_test(tc, test_cells_counted);
  suite_add_tcase(s, tc);
  return s;
}
