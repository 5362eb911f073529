/* SPDX-License-Identifier: BSD-3-Clause */
/* check_cbt.c -- unit tests for feature/client/cbt (path-spec 2.4): the
 * initial timeout until cbtmincircs times are known, the Pareto fit on
 * times drawn from a known Pareto distribution (Xm 2000 ms, alpha 2: the
 * 80% quantile is 2000 x 5^(1/2) = 4472 ms), the cbtmintimeout floor,
 * right-censoring by abandoned circuits, the reset after cbtmaxtimeouts
 * of cbtrecentcount (and the doubling after a second one), cbtdisabled,
 * and the state lines (tor's CircuitBuildTimeBin format) round trip. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/cbt.h"
#include "lib/fs/statefile.h"

#include "test_rng.h"

Suite *suite_cbt(void);


/* A Pareto(xm, alpha) variate by inversion. */
static uint32_t
pareto(uint64_t *s, double xm, double alpha)
{
  double u = ((double)(test_rng_next(s) >> 11) + 1.0) / 9007199254740993.0;
  return (uint32_t)(xm / pow(u, 1.0 / alpha));
}

/* A new estimator that has seen n build times from Pareto(2000 ms, 2),
 * drawn with the generator seeded with seed. */
static cbt_t *
cbt_with_history(uint64_t seed, int n)
{
  cbt_t *cbt = cbt_new();
  for (int i = 0; i < n; i++)
    cbt_note_built(cbt, pareto(&seed, 2000, 2));
  return cbt;
}

START_TEST(test_initial_then_learned)
{
  cbt_t *cbt = cbt_new();
  uint64_t s = 42;
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 60000);
  ck_assert_uint_eq(cbt_close_ms(cbt), 60000);
  for (int i = 0; i < 99; i++)
    cbt_note_built(cbt, pareto(&s, 2000, 2));
  ck_assert_int_eq(cbt_is_learned(cbt), 0);
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 60000);
  cbt_note_built(cbt, pareto(&s, 2000, 2));
  ck_assert_int_eq(cbt_is_learned(cbt), 1);
  for (int i = 0; i < 2000; i++)
    cbt_note_built(cbt, pareto(&s, 2000, 2));
  ck_assert_int_eq(cbt_n_recorded(cbt), 1000);
  /* Xm from the modal 50 ms bins (2000-2049 ms and its neighbours); the
   * estimator counts times below Xm as Xm, which biases alpha up (the
   * spec accepts a few percent of the CDF for it). */
  ck_assert_msg(cbt_xm(cbt) >= 2000 && cbt_xm(cbt) <= 2200, "xm %f",
                cbt_xm(cbt));
  ck_assert_msg(cbt_alpha(cbt) > 1.6 && cbt_alpha(cbt) < 3.2, "alpha %f",
                cbt_alpha(cbt));
  uint32_t t = cbt_timeout_ms(cbt);
  ck_assert_msg(t > 3600 && t < 5000, "timeout %u", t);
  /* close: the 95% quantile (2000 x 20^(1/2) = 8944), at least 60 s */
  ck_assert_uint_eq(cbt_close_ms(cbt), 60000);
  cbt_free(cbt);
}
END_TEST

START_TEST(test_floor_and_censoring)
{
  cbt_t *cbt = cbt_new();
  uint64_t s = 7;
  /* Loopback: every circuit in a few ms: the floor of cbtmintimeout. */
  for (int i = 0; i < 200; i++)
    cbt_note_built(cbt, 5 + (uint32_t)(test_rng_next(&s) % 20));
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 2000);
  cbt_free(cbt);
  /* Abandoned circuits make the tail heavier: a longer timeout. */
  cbt_t *a = cbt_new(), *b = cbt_new();
  s = 9;
  uint64_t s2 = 9;
  for (int i = 0; i < 500; i++) {
    cbt_note_built(a, pareto(&s, 3000, 3));
    cbt_note_built(b, pareto(&s2, 3000, 3));
    if (i % 50 == 0)
      cbt_note_abandoned(b);
  }
  ck_assert_uint_gt(cbt_timeout_ms(b), cbt_timeout_ms(a));
  cbt_free(a);
  cbt_free(b);
}
END_TEST

START_TEST(test_reset_after_timeouts)
{
  cbt_t *cbt = cbt_with_history(3, 300);
  ck_assert_int_eq(cbt_is_learned(cbt), 1);
  /* 17 of 20 time out: kept. */
  for (int i = 0; i < 17; i++)
    cbt_note_abandoned(cbt);
  ck_assert_int_eq(cbt_is_learned(cbt), 1);
  /* the 18th: history discarded, back to the initial timeout. */
  cbt_note_abandoned(cbt);
  ck_assert_int_eq(cbt_is_learned(cbt), 0);
  ck_assert_int_eq(cbt_n_recorded(cbt), 0);
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 60000);
  /* Again while at 60 s: doubled. */
  for (int i = 0; i < 18; i++)
    cbt_note_abandoned(cbt);
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 120000);
  cbt_free(cbt);
}
END_TEST

START_TEST(test_disabled_by_consensus)
{
  cbt_t *cbt = cbt_with_history(5, 150);
  ck_assert_int_eq(cbt_is_learned(cbt), 1);
  consensus_t c;
  memset(&c, 0, sizeof(c));
  consensus_param_t p[2] = {{"cbtdisabled", 1}, {"cbtinitialtimeout", 30000}};
  c.params = p;
  c.n_params = 2;
  cbt_set_consensus(cbt, &c);
  ck_assert_int_eq(cbt_is_learned(cbt), 0);
  ck_assert_int_eq(cbt_n_recorded(cbt), 0);
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 30000);
  cbt_note_built(cbt, 100);
  ck_assert_int_eq(cbt_n_recorded(cbt), 0);
  cbt_free(cbt);
}
END_TEST

START_TEST(test_state_roundtrip)
{
  cbt_t *cbt = cbt_with_history(11, 400);
  for (int i = 0; i < 5; i++)
    cbt_note_abandoned(cbt);
  statefile_t *st = statefile_new("/nonexistent/state");
  cbt_write_state(cbt, st);
  ck_assert_str_eq(statefile_get(st, "CircuitBuildAbandonedCount"), "5");
  ck_assert_str_eq(statefile_get(st, "TotalBuildTimes"), "405");
  const char *first = statefile_get(st, "CircuitBuildTimeBin");
  unsigned ms, count;
  ck_assert_int_eq(sscanf(first, "%u %u", &ms, &count), 2);
  ck_assert_uint_eq(ms % 50, 25); /* bin midpoints, as tor writes them */
  uint32_t t = cbt_timeout_ms(cbt);
  cbt_t *back = cbt_new();
  uint64_t rs = 1;
  path_rng_t rng = {test_rng_below, &rs};
  int bad = 0;
  ck_assert_int_eq(cbt_load_state(back, st, &rng, &bad), 405);
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(cbt_is_learned(back), 1);
  /* times become bin midpoints: close to the same fit */
  ck_assert_msg(fabs((double)cbt_timeout_ms(back) - t) < 0.1 * t,
                "%u vs %u", cbt_timeout_ms(back), t);
  /* Bad lines are skipped and counted. */
  statefile_set(st, "CircuitBuildTimeBin", "x 3");
  statefile_set(st, "CircuitBuildAbandonedCount", "-1");
  cbt_t *third = cbt_new();
  ck_assert_int_eq(cbt_load_state(third, st, &rng, &bad), 0);
  ck_assert_int_eq(bad, 2);
  cbt_free(third);
  cbt_free(back);
  cbt_free(cbt);
  statefile_free(st);
}
END_TEST

/* What controllers hear (BUILDTIMEOUT_SET): nothing before learning,
 * COMPUTED after, RESET after too many timeouts and after cbt_reset();
 * the figures of cbt_get_info(). */
START_TEST(test_events_and_info)
{
  cbt_t *cbt = cbt_new();
  uint64_t seed = 21;
  for (int i = 0; i < 99; i++)
    ck_assert_int_eq(cbt_note_built(cbt, pareto(&seed, 2000, 2)),
                     CBT_EV_NONE);
  ck_assert_int_eq(cbt_note_built(cbt, pareto(&seed, 2000, 2)),
                   CBT_EV_COMPUTED);
  cbt_info_t in;
  cbt_get_info(cbt, &in);
  ck_assert_int_eq(in.total_times, 100);
  ck_assert_uint_eq(in.timeout_ms, cbt_timeout_ms(cbt));
  ck_assert_uint_eq(in.close_ms, cbt_close_ms(cbt));
  ck_assert(fabs(in.quantile - 0.80) < 1e-9);
  ck_assert(in.xm > 1000 && in.xm < 3000);
  ck_assert(in.alpha > 0.5);
  /* 5 abandoned of the last 20: both rates 0.25 or more (times above
   * the timeout count as timeouts too). */
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(cbt_note_abandoned(cbt), CBT_EV_COMPUTED);
  cbt_get_info(cbt, &in);
  ck_assert(fabs(in.close_rate - 0.25) < 1e-9);
  ck_assert(in.timeout_rate >= in.close_rate);
  /* 13 more: 18 of 20 timed out, reset. */
  for (int i = 0; i < 12; i++)
    cbt_note_abandoned(cbt);
  ck_assert_int_eq(cbt_note_abandoned(cbt), CBT_EV_RESET);
  ck_assert_int_eq(cbt_n_recorded(cbt), 0);
  cbt_free(cbt);

  /* DROPTIMEOUTS: history gone, the initial timeout again. */
  cbt = cbt_with_history(3, 300);
  ck_assert_int_eq(cbt_is_learned(cbt), 1);
  cbt_reset(cbt);
  ck_assert_int_eq(cbt_is_learned(cbt), 0);
  ck_assert_int_eq(cbt_n_recorded(cbt), 0);
  ck_assert_uint_eq(cbt_timeout_ms(cbt), 60000);
  cbt_get_info(cbt, &in);
  ck_assert_int_eq(in.total_times, 0);
  ck_assert(in.timeout_rate == 0 && in.close_rate == 0);
  cbt_free(cbt);
}
END_TEST

Suite *
suite_cbt(void)
{
  Suite *s = suite_create("cbt");
  TCase *tc = tcase_create("cbt");
  tcase_add_test(tc, test_initial_then_learned);
  tcase_add_test(tc, test_floor_and_censoring);
  tcase_add_test(tc, test_reset_after_timeouts);
  tcase_add_test(tc, test_disabled_by_consensus);
  tcase_add_test(tc, test_state_roundtrip);
  tcase_add_test(tc, test_events_and_info);
  suite_add_tcase(s, tc);
  return s;
}
