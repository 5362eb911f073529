/* SPDX-License-Identifier: BSD-3-Clause */
/* check_delayd.c -- pctor-delayd's timing model (src/tools/delayd/delayq.c):
 * the random generator against reference outputs, the jitter and loss
 * distributions, FIFO deadlines, link-spec parsing and the deadline heap.
 *
 * The generator's expected outputs come from tests/vectors/delayd_rng_ref.py,
 * written from the published splitmix64 / xoshiro256** descriptions (its
 * splitmix64(0) first output 0xe220a8397b1dcdaf is the widely published
 * value). Distribution checks use fixed seeds, so they are deterministic;
 * their tolerances are several standard errors wide.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/delayd/delayq.h"

Suite *suite_delayd(void);

/* ---- generator ---- */

static const struct {
  uint64_t seed;
  uint64_t out[6];
} rng_vectors[] = {
  /* python3 tests/vectors/delayd_rng_ref.py */
  {0x0000000000000000ULL, {0x99ec5f36cb75f2b4ULL, 0xbf6e1f784956452aULL,
                           0x1a5f849d4933e6e0ULL, 0x6aa594f1262d2d2cULL,
                           0xbba5ad4a1f842e59ULL, 0xffef8375d9ebcacaULL}},
  {0x0000000000000001ULL, {0xb3f2af6d0fc710c5ULL, 0x853b559647364ceaULL,
                           0x92f89756082a4514ULL, 0x642e1c7bc266a3a7ULL,
                           0xb27a48e29a233673ULL, 0x24c123126ffda722ULL}},
  {0x0123456789abcdefULL, {0xa2c2a42038d4ec3dULL, 0x05fc25d0738e7b0fULL,
                           0x625e7bff938e701eULL, 0x1ba4ddc6fe2b5726ULL,
                           0xdf0a2482ac9254cfULL, 0x3939eda866ababe8ULL}},
};

START_TEST(test_rng_vectors)
{
  for (size_t v = 0; v < sizeof(rng_vectors) / sizeof(rng_vectors[0]); v++) {
    delayd_rng_t r;
    delayd_rng_seed(&r, rng_vectors[v].seed);
    for (int i = 0; i < 6; i++)
      ck_assert_msg(delayd_rng_next(&r) == rng_vectors[v].out[i],
                    "seed %zu output %d", v, i);
  }
  /* seed 42 uniform: 0.08386297105988216, 0.3789802506626686,
   * 0.6800434110281394 */
  delayd_rng_t r;
  delayd_rng_seed(&r, 42);
  ck_assert_double_eq_tol(delayd_rng_uniform(&r), 0.08386297105988216, 1e-15);
  ck_assert_double_eq_tol(delayd_rng_uniform(&r), 0.3789802506626686, 1e-15);
  ck_assert_double_eq_tol(delayd_rng_uniform(&r), 0.6800434110281394, 1e-15);
}
END_TEST

START_TEST(test_rng_normal)
{
  delayd_rng_t r;
  delayd_rng_seed(&r, 7);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  int beyond3 = 0;
  for (int i = 0; i < n; i++) {
    double z = delayd_rng_normal(&r);
    sum += z;
    sum2 += z * z;
    if (fabs(z) > 3)
      beyond3++;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  /* standard errors: mean 0.0022, variance 0.0032 */
  ck_assert_msg(fabs(mean) < 0.012, "mean %f", mean);
  ck_assert_msg(fabs(var - 1.0) < 0.016, "variance %f", var);
  /* P(|z| > 3) = 0.0027: about 540 of 200000 */
  ck_assert_msg(beyond3 > 400 && beyond3 < 700, "beyond 3 sigma: %d", beyond3);
}
END_TEST

/* ---- links ---- */

static delayd_link_t
mklink(double delay_ms, double jitter_ms, double loss_pct)
{
  delayd_link_t l;
  memset(&l, 0, sizeof(l));
  l.delay_ns = (uint64_t)(delay_ms * 1e6);
  l.jitter_ns = (uint64_t)(jitter_ms * 1e6);
  l.loss = loss_pct / 100.0;
  return l;
}

START_TEST(test_jitter_truncated_normal)
{
  delayd_link_t l = mklink(50, 10, 0);
  delayd_rng_t r;
  delayd_rng_seed(&r, 11);
  const int n = 100000;
  double sum = 0, sum2 = 0, lo = 1e18, hi = 0;
  for (int i = 0; i < n; i++) {
    double d = (double)delayd_link_sample_delay(&l, &r) / 1e6;
    sum += d;
    sum2 += d * d;
    if (d < lo)
      lo = d;
    if (d > hi)
      hi = d;
  }
  double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  ck_assert_msg(lo >= 20.0 - 1e-6 && hi <= 80.0 + 1e-6,
                "range %f..%f beyond 3 sigma", lo, hi);
  ck_assert_msg(lo < 23 && hi > 77, "range %f..%f too narrow", lo, hi);
  ck_assert_msg(fabs(mean - 50.0) < 0.15, "mean %f", mean);
  /* sd of a normal truncated at +/-3 sigma: 0.98659 sigma */
  ck_assert_msg(fabs(sd - 9.8659) < 0.12, "sd %f", sd);

  /* No jitter: exactly the delay. */
  delayd_link_t fixed = mklink(12.5, 0, 0);
  for (int i = 0; i < 100; i++)
    ck_assert_uint_eq(delayd_link_sample_delay(&fixed, &r), 12500000);

  /* Jitter larger than the delay: clamped at zero, never negative. */
  delayd_link_t wide = mklink(1, 10, 0);
  int zeros = 0;
  for (int i = 0; i < 10000; i++) {
    uint64_t d = delayd_link_sample_delay(&wide, &r);
    ck_assert_uint_le(d, 31000000);
    if (d == 0)
      zeros++;
  }
  ck_assert_msg(zeros > 4000 && zeros < 5500, "zeros %d", zeros);
}
END_TEST

START_TEST(test_fifo_deadlines)
{
  delayd_link_t l = mklink(20, 5, 0);
  delayd_rng_t r;
  delayd_rng_seed(&r, 3);
  uint64_t prev = 0;
  int bumped = 0;
  /* packets 100 us apart: with 5 ms jitter most would overtake */
  for (int i = 0; i < 10000; i++) {
    uint64_t now = 1000000000ULL + (uint64_t)i * 100000ULL;
    uint64_t t = delayd_link_deadline(&l, now, &r, 1);
    ck_assert_uint_ge(t, prev);
    ck_assert_uint_ge(t, now);
    ck_assert_uint_le(t, now + 35000000ULL);
    if (t == prev)
      bumped++;
    prev = t;
  }
  ck_assert_int_gt(bumped, 100);

  /* Without FIFO the same arrivals are reordered. */
  delayd_link_t o = mklink(20, 5, 0);
  delayd_rng_seed(&r, 3);
  prev = 0;
  int reordered = 0;
  for (int i = 0; i < 10000; i++) {
    uint64_t now = 1000000000ULL + (uint64_t)i * 100000ULL;
    uint64_t t = delayd_link_deadline(&o, now, &r, 0);
    if (t < prev)
      reordered++;
    prev = t;
  }
  ck_assert_int_gt(reordered, 1000);

  /* Without jitter FIFO changes nothing: deadline = arrival + delay. */
  delayd_link_t f = mklink(7, 0, 0);
  for (int i = 0; i < 100; i++) {
    uint64_t now = 5000ULL * (uint64_t)i;
    ck_assert_uint_eq(delayd_link_deadline(&f, now, &r, 1), now + 7000000ULL);
  }
}
END_TEST

START_TEST(test_loss)
{
  delayd_rng_t r;
  delayd_rng_seed(&r, 99);
  delayd_link_t none = mklink(0, 0, 0), all = mklink(0, 0, 100),
                some = mklink(0, 0, 20), tiny = mklink(0, 0, 0.5);
  int n_some = 0, n_tiny = 0;
  const int n = 200000;
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(delayd_link_lose(&none, &r), 0);
    ck_assert_int_eq(delayd_link_lose(&all, &r), 1);
    n_some += delayd_link_lose(&some, &r);
    n_tiny += delayd_link_lose(&tiny, &r);
  }
  /* sd: 20 %: 179 packets; 0.5 %: 31.5 packets */
  ck_assert_msg(abs(n_some - 40000) < 900, "20%% loss gave %d", n_some);
  ck_assert_msg(abs(n_tiny - 1000) < 160, "0.5%% loss gave %d", n_tiny);
}
END_TEST

START_TEST(test_parse_ok)
{
  delayd_link_t l;
  char err[200];
  ck_assert_int_eq(delayd_link_parse("101:10", &l, err, sizeof(err)), 0);
  ck_assert_uint_eq(l.id, 101);
  ck_assert_uint_eq(l.delay_ns, 10000000);
  ck_assert_uint_eq(l.jitter_ns, 0);
  ck_assert(l.loss == 0);

  ck_assert_int_eq(delayd_link_parse("201:5:1", &l, err, sizeof(err)), 0);
  ck_assert_uint_eq(l.id, 201);
  ck_assert_uint_eq(l.delay_ns, 5000000);
  ck_assert_uint_eq(l.jitter_ns, 1000000);

  ck_assert_int_eq(delayd_link_parse("7:0.5:0.25:12.5", &l, err, sizeof(err)),
                   0);
  ck_assert_uint_eq(l.id, 7);
  ck_assert_uint_eq(l.delay_ns, 500000);
  ck_assert_uint_eq(l.jitter_ns, 250000);
  ck_assert_double_eq_tol(l.loss, 0.125, 1e-12);

  ck_assert_int_eq(delayd_link_parse("4294967295:60000:60000:100", &l, err,
                                     sizeof(err)), 0);
  ck_assert_uint_eq(l.id, 4294967295U);
  ck_assert_uint_eq(l.delay_ns, 60000000000ULL);
  ck_assert_double_eq_tol(l.loss, 1.0, 1e-12);

  ck_assert_int_eq(delayd_link_parse("0:0", &l, err, sizeof(err)), 0);
  ck_assert_uint_eq(l.delay_ns, 0);
  ck_assert_int_eq(delayd_link_parse("3:.5:2.", &l, err, sizeof(err)), 0);
  ck_assert_uint_eq(l.delay_ns, 500000);
  ck_assert_uint_eq(l.jitter_ns, 2000000);
}
END_TEST

START_TEST(test_parse_bad)
{
  static const char *bad[] = {
    "", "1", "1:", ":5", "a:5", "1:5:1:1:1", "1:-5", "1:60001", "1:5:60000.5",
    "1:5:1:101", "1:nan", "1:inf", "1:1e3", "1:5.5.5", "4294967296:1",
    " 1:5", "1:5 ", "1::1", "1:5:", "-1:5", "+1:5", "0x10:5", "1:.",
    "1:000000000000000000000000000000000000001", "1:5:1:100.0001",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    delayd_link_t l;
    char err[200] = "";
    ck_assert_msg(delayd_link_parse(bad[i], &l, err, sizeof(err)) == -1,
                  "'%s' was accepted", bad[i]);
    ck_assert_msg(err[0] != '\0', "'%s': no message", bad[i]);
  }
  /* A tiny error buffer is still NUL-terminated. */
  delayd_link_t l;
  char small[8];
  memset(small, 'x', sizeof(small));
  ck_assert_int_eq(delayd_link_parse("1:-5", &l, small, sizeof(small)), -1);
  ck_assert_ptr_nonnull(memchr(small, '\0', sizeof(small)));
}
END_TEST

/* ---- heap ---- */

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

START_TEST(test_heap_order)
{
  const size_t n = 10000;
  delayq_t *q = delayq_new(n);
  ck_assert_uint_eq(delayq_cap(q), n);
  ck_assert_ptr_null(delayq_top(q));
  delayq_ent_t e;
  ck_assert_int_eq(delayq_pop(q, &e), -1);
  uint64_t *ref = malloc(n * sizeof(uint64_t));
  delayd_rng_t r;
  delayd_rng_seed(&r, 5);
  for (size_t i = 0; i < n; i++) {
    ref[i] = delayd_rng_next(&r) % 1000000;
    ck_assert_int_eq(delayq_push(q, ref[i], (uint32_t)i, (uint32_t)(i % 7)),
                     0);
  }
  ck_assert_uint_eq(delayq_len(q), n);
  /* full: refused, nothing changes */
  ck_assert_int_eq(delayq_push(q, 0, 1, 1), -1);
  ck_assert_uint_eq(delayq_len(q), n);
  ck_assert_uint_ge(delayq_top(q)->deadline_ns, 0);
  qsort(ref, n, sizeof(uint64_t), cmp_u64);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq(delayq_top(q)->deadline_ns, ref[i]);
    ck_assert_int_eq(delayq_pop(q, &e), 0);
    ck_assert_uint_eq(e.deadline_ns, ref[i]);
    ck_assert_uint_eq(e.link, e.pkt_id % 7);
  }
  ck_assert_uint_eq(delayq_len(q), 0);
  ck_assert_int_eq(delayq_pop(q, &e), -1);
  free(ref);
  delayq_free(q);
  ck_assert_ptr_null(q);
  delayq_free(q); /* NULL is fine */
}
END_TEST

START_TEST(test_heap_ties_fifo)
{
  delayq_t *q = delayq_new(1000);
  /* three deadlines, many packets each, pushed interleaved */
  for (uint32_t i = 0; i < 999; i++)
    ck_assert_int_eq(delayq_push(q, 100 + (i % 3) * 10, i, 0), 0);
  delayq_ent_t e;
  uint64_t last_deadline = 0;
  uint32_t last_id = 0;
  int first = 1;
  while (delayq_pop(q, &e) == 0) {
    if (!first && e.deadline_ns == last_deadline)
      ck_assert_uint_gt(e.pkt_id, last_id);
    ck_assert_uint_ge(e.deadline_ns, last_deadline);
    last_deadline = e.deadline_ns;
    last_id = e.pkt_id;
    first = 0;
  }
  delayq_free(q);
}
END_TEST

START_TEST(test_heap_interleaved)
{
  /* Random pushes and pops against a brute-force reference. */
  enum { CAP = 64 };
  delayq_t *q = delayq_new(CAP);
  uint64_t ref[CAP];
  uint64_t seqs[CAP];
  size_t nref = 0;
  uint64_t seq = 0;
  delayd_rng_t r;
  delayd_rng_seed(&r, 1234);
  for (int step = 0; step < 200000; step++) {
    int push = (delayd_rng_next(&r) % 3) != 0;
    if (push) {
      uint64_t dl = delayd_rng_next(&r) % 50;
      int rc = delayq_push(q, dl, (uint32_t)seq, 0);
      if (nref == CAP) {
        ck_assert_int_eq(rc, -1);
      } else {
        ck_assert_int_eq(rc, 0);
        ref[nref] = dl;
        seqs[nref] = seq;
        nref++;
        seq++;
      }
    } else {
      delayq_ent_t e;
      int rc = delayq_pop(q, &e);
      if (nref == 0) {
        ck_assert_int_eq(rc, -1);
        continue;
      }
      ck_assert_int_eq(rc, 0);
      size_t best = 0;
      for (size_t i = 1; i < nref; i++)
        if (ref[i] < ref[best] || (ref[i] == ref[best] && seqs[i] < seqs[best]))
          best = i;
      ck_assert_uint_eq(e.deadline_ns, ref[best]);
      ck_assert_uint_eq(e.pkt_id, (uint32_t)seqs[best]);
      ref[best] = ref[nref - 1];
      seqs[best] = seqs[nref - 1];
      nref--;
    }
    ck_assert_uint_eq(delayq_len(q), nref);
  }
  delayq_free(q);
}
END_TEST

Suite *
suite_delayd(void)
{
  Suite *s = suite_create("delayd");
  TCase *tc = tcase_create("model");
  tcase_add_test(tc, test_rng_vectors);
  tcase_add_test(tc, test_rng_normal);
  tcase_add_test(tc, test_jitter_truncated_normal);
  tcase_add_test(tc, test_fifo_deadlines);
  tcase_add_test(tc, test_loss);
  tcase_add_test(tc, test_parse_ok);
  tcase_add_test(tc, test_parse_bad);
  tcase_add_test(tc, test_heap_order);
  tcase_add_test(tc, test_heap_ties_fifo);
  tcase_add_test(tc, test_heap_interleaved);
  suite_add_tcase(s, tc);
  return s;
}
