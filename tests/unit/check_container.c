/* SPDX-License-Identifier: BSD-3-Clause */
/* check_container.c -- unit tests for lib/container: SipHash-2-4 against
 * the SipHash paper, and hmap, ptrvec, minheap and dlist against simple
 * reference models under long random operation sequences. */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/container/minheap.h"
#include "lib/container/siphash.h"
#include "lib/container/vec.h"

Suite *suite_container(void);

/* Deterministic xorshift64* so failures are reproducible. */
static uint64_t rng_state;
static void
rng_seed(uint64_t s)
{
  rng_state = s ? s : 1;
}
static uint64_t
rng_next(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * UINT64_C(2685821657736338717);
}
static size_t
rng_below(size_t n)
{
  return (size_t)(rng_next() % n);
}

/* Check records every passing ck_assert (a write to a pipe), which is far
 * too slow inside loops of millions of operations; REQUIRE only reports
 * failures. */
#define REQUIRE(cond)                                                   \
  do {                                                                  \
    if (!(cond))                                                        \
      ck_abort_msg("%s:%d: requirement failed: %s", __FILE__, __LINE__, \
                   #cond);                                              \
  } while (0)

/* ---- SipHash ---- */

/* SipHash-2-4 with key 00 01 .. 0f of the messages 00, 00 01, ...,
 * 00 01 .. (n-1), for n = 0..64. Produced by tests/vectors/siphash24_ref.py,
 * which checks itself against the example in Appendix A of the SipHash
 * paper (n = 15 -> a129ca6149be45e5). */
static const uint64_t sip_vectors[65] = {
  UINT64_C(0x726fdb47dd0e0e31), /* len 0 */
  UINT64_C(0x74f839c593dc67fd), /* len 1 */
  UINT64_C(0x0d6c8009d9a94f5a), /* len 2 */
  UINT64_C(0x85676696d7fb7e2d), /* len 3 */
  UINT64_C(0xcf2794e0277187b7), /* len 4 */
  UINT64_C(0x18765564cd99a68d), /* len 5 */
  UINT64_C(0xcbc9466e58fee3ce), /* len 6 */
  UINT64_C(0xab0200f58b01d137), /* len 7 */
  UINT64_C(0x93f5f5799a932462), /* len 8 */
  UINT64_C(0x9e0082df0ba9e4b0), /* len 9 */
  UINT64_C(0x7a5dbbc594ddb9f3), /* len 10 */
  UINT64_C(0xf4b32f46226bada7), /* len 11 */
  UINT64_C(0x751e8fbc860ee5fb), /* len 12 */
  UINT64_C(0x14ea5627c0843d90), /* len 13 */
  UINT64_C(0xf723ca908e7af2ee), /* len 14 */
  UINT64_C(0xa129ca6149be45e5), /* len 15 */
  UINT64_C(0x3f2acc7f57c29bdb), /* len 16 */
  UINT64_C(0x699ae9f52cbe4794), /* len 17 */
  UINT64_C(0x4bc1b3f0968dd39c), /* len 18 */
  UINT64_C(0xbb6dc91da77961bd), /* len 19 */
  UINT64_C(0xbed65cf21aa2ee98), /* len 20 */
  UINT64_C(0xd0f2cbb02e3b67c7), /* len 21 */
  UINT64_C(0x93536795e3a33e88), /* len 22 */
  UINT64_C(0xa80c038ccd5ccec8), /* len 23 */
  UINT64_C(0xb8ad50c6f649af94), /* len 24 */
  UINT64_C(0xbce192de8a85b8ea), /* len 25 */
  UINT64_C(0x17d835b85bbb15f3), /* len 26 */
  UINT64_C(0x2f2e6163076bcfad), /* len 27 */
  UINT64_C(0xde4daaaca71dc9a5), /* len 28 */
  UINT64_C(0xa6a2506687956571), /* len 29 */
  UINT64_C(0xad87a3535c49ef28), /* len 30 */
  UINT64_C(0x32d892fad841c342), /* len 31 */
  UINT64_C(0x7127512f72f27cce), /* len 32 */
  UINT64_C(0xa7f32346f95978e3), /* len 33 */
  UINT64_C(0x12e0b01abb051238), /* len 34 */
  UINT64_C(0x15e034d40fa197ae), /* len 35 */
  UINT64_C(0x314dffbe0815a3b4), /* len 36 */
  UINT64_C(0x027990f029623981), /* len 37 */
  UINT64_C(0xcadcd4e59ef40c4d), /* len 38 */
  UINT64_C(0x9abfd8766a33735c), /* len 39 */
  UINT64_C(0x0e3ea96b5304a7d0), /* len 40 */
  UINT64_C(0xad0c42d6fc585992), /* len 41 */
  UINT64_C(0x187306c89bc215a9), /* len 42 */
  UINT64_C(0xd4a60abcf3792b95), /* len 43 */
  UINT64_C(0xf935451de4f21df2), /* len 44 */
  UINT64_C(0xa9538f0419755787), /* len 45 */
  UINT64_C(0xdb9acddff56ca510), /* len 46 */
  UINT64_C(0xd06c98cd5c0975eb), /* len 47 */
  UINT64_C(0xe612a3cb9ecba951), /* len 48 */
  UINT64_C(0xc766e62cfcadaf96), /* len 49 */
  UINT64_C(0xee64435a9752fe72), /* len 50 */
  UINT64_C(0xa192d576b245165a), /* len 51 */
  UINT64_C(0x0a8787bf8ecb74b2), /* len 52 */
  UINT64_C(0x81b3e73d20b49b6f), /* len 53 */
  UINT64_C(0x7fa8220ba3b2ecea), /* len 54 */
  UINT64_C(0x245731c13ca42499), /* len 55 */
  UINT64_C(0xb78dbfaf3a8d83bd), /* len 56 */
  UINT64_C(0xea1ad565322a1a0b), /* len 57 */
  UINT64_C(0x60e61c23a3795013), /* len 58 */
  UINT64_C(0x6606d7e446282b93), /* len 59 */
  UINT64_C(0x6ca4ecb15c5f91e1), /* len 60 */
  UINT64_C(0x9f626da15c9625f3), /* len 61 */
  UINT64_C(0xe51b38608ef25f57), /* len 62 */
  UINT64_C(0x958a324ceb064572), /* len 63 */
  UINT64_C(0xacd2c40b8502cad8), /* len 64 */
};

START_TEST(test_siphash_paper)
{
  uint8_t kb[16], msg[15];
  for (int i = 0; i < 16; i++)
    kb[i] = (uint8_t)i;
  for (int i = 0; i < 15; i++)
    msg[i] = (uint8_t)i;
  siphash_key_t key;
  siphash_key_from_bytes(&key, kb);
  ck_assert_uint_eq(key.k0, UINT64_C(0x0706050403020100));
  ck_assert_uint_eq(key.k1, UINT64_C(0x0f0e0d0c0b0a0908));
  /* Appendix A of the SipHash paper. */
  ck_assert_uint_eq(siphash24(&key, msg, sizeof(msg)),
                    UINT64_C(0xa129ca6149be45e5));
}
END_TEST

START_TEST(test_siphash_vectors)
{
  uint8_t kb[16], msg[64 + 1];
  for (int i = 0; i < 16; i++)
    kb[i] = (uint8_t)i;
  siphash_key_t key;
  siphash_key_from_bytes(&key, kb);
  for (size_t n = 0; n <= 64; n++) {
    for (size_t i = 0; i < n; i++)
      msg[i] = (uint8_t)i;
    ck_assert_uint_eq(siphash24(&key, msg, n), sip_vectors[n]);
    /* Same message at an odd address. */
    for (size_t i = 0; i < n; i++)
      msg[i + 1] = (uint8_t)i;
    if (n < 64)
      ck_assert_uint_eq(siphash24(&key, msg + 1, n), sip_vectors[n]);
  }
}
END_TEST

START_TEST(test_siphash_process_key)
{
  const siphash_key_t *a = siphash_process_key();
  const siphash_key_t *b = siphash_process_key();
  ck_assert_ptr_eq(a, b);
  ck_assert(a->k0 != 0 || a->k1 != 0);
}
END_TEST

/* ---- hmap ---- */

static int n_freed;
static void
count_free(void *p)
{
  n_freed++;
  free(p);
}

START_TEST(test_hmap_basic)
{
  hmap_t *m = hmap_new(32);
  uint8_t k1[32], k2[32];
  memset(k1, 0xaa, sizeof(k1));
  memset(k2, 0xaa, sizeof(k2));
  k2[31] = 0xab; /* differs only in the last byte */
  int a, b, c;

  ck_assert_uint_eq(hmap_keylen(m), 32);
  ck_assert_uint_eq(hmap_size(m), 0);
  ck_assert_ptr_null(hmap_get(m, k1));
  ck_assert_ptr_null(hmap_remove(m, k1));
  ck_assert_ptr_null(hmap_set(m, k1, &a));
  ck_assert_ptr_null(hmap_set(m, k2, &b));
  ck_assert_uint_eq(hmap_size(m), 2);
  ck_assert_ptr_eq(hmap_get(m, k1), &a);
  ck_assert_ptr_eq(hmap_get(m, k2), &b);
  /* Replace returns the old value and keeps the size. */
  ck_assert_ptr_eq(hmap_set(m, k1, &c), &a);
  ck_assert_uint_eq(hmap_size(m), 2);
  ck_assert_ptr_eq(hmap_get(m, k1), &c);
  /* The map copied the key. */
  k1[0] = 0;
  ck_assert_ptr_null(hmap_get(m, k1));
  k1[0] = 0xaa;
  ck_assert_ptr_eq(hmap_get(m, k1), &c);
  /* Remove returns the value. */
  ck_assert_ptr_eq(hmap_remove(m, k1), &c);
  ck_assert_ptr_null(hmap_remove(m, k1));
  ck_assert_ptr_null(hmap_get(m, k1));
  ck_assert_uint_eq(hmap_size(m), 1);
  /* Setting NULL removes. */
  ck_assert_ptr_eq(hmap_set(m, k2, NULL), &b);
  ck_assert_uint_eq(hmap_size(m), 0);
  ck_assert_ptr_null(hmap_get(m, k2));
  hmap_free(m, NULL);
  ck_assert_ptr_null(m);
  hmap_free(m, NULL); /* NULL is fine */
}
END_TEST

START_TEST(test_hmap_int_keys)
{
  hmap_t *m32 = hmap_new(4), *m64 = hmap_new(8);
  int v[3];
  ck_assert_ptr_null(hmap_set_u32(m32, 0x80000001u, &v[0]));
  ck_assert_ptr_null(hmap_set_u32(m32, 0, &v[1]));
  ck_assert_ptr_eq(hmap_get_u32(m32, 0x80000001u), &v[0]);
  ck_assert_ptr_eq(hmap_get_u32(m32, 0), &v[1]);
  ck_assert_ptr_null(hmap_get_u32(m32, 1));
  /* The integer is stored as its big-endian bytes. */
  uint8_t k[4] = {0x80, 0, 0, 1};
  ck_assert_ptr_eq(hmap_get(m32, k), &v[0]);
  ck_assert_ptr_eq(hmap_remove_u32(m32, 0), &v[1]);
  ck_assert_uint_eq(hmap_size(m32), 1);

  ck_assert_ptr_null(hmap_set_u64(m64, UINT64_MAX, &v[2]));
  ck_assert_ptr_eq(hmap_get_u64(m64, UINT64_MAX), &v[2]);
  ck_assert_ptr_null(hmap_get_u64(m64, 0));
  ck_assert_ptr_eq(hmap_remove_u64(m64, UINT64_MAX), &v[2]);
  ck_assert_uint_eq(hmap_size(m64), 0);
  hmap_free(m32, NULL);
  hmap_free(m64, NULL);
}
END_TEST

START_TEST(test_hmap_keylen_mismatch)
{
  hmap_t *m = hmap_new(8);
  hmap_get_u32(m, 1); /* aborts */
}
END_TEST

/* Random inserts, replacements and removals, compared after every step
 * with a plain array indexed by key number. Keys are NKEYS distinct
 * keylen-byte strings; a small key space makes re-insertion after removal
 * (tombstone reuse) frequent. */
#define NKEYS 3000
static void
hmap_model_run(size_t keylen, uint64_t seed, int nops)
{
  rng_seed(seed);
  hmap_t *m = hmap_new(keylen);
  static int present[NKEYS];
  static int vals[NKEYS][2];
  static int which[NKEYS];
  uint8_t key[64];
  size_t n = 0;
  memset(present, 0, sizeof(present));

  for (int op = 0; op < nops; op++) {
    size_t i = rng_below(NKEYS);
    memset(key, 0x5c, keylen);
    set_u32(key, (uint32_t)i);
    if (keylen > 4)
      key[keylen - 1] ^= (uint8_t)i;
    int r = (int)rng_below(10);
    if (r < 6) {
      int w = (int)rng_below(2);
      void *old = hmap_set(m, key, &vals[i][w]);
      if (present[i]) {
        REQUIRE(old == &vals[i][which[i]]);
      } else {
        REQUIRE(old == NULL);
        n++;
      }
      present[i] = 1;
      which[i] = w;
    } else if (r < 9) {
      void *old = hmap_remove(m, key);
      if (present[i]) {
        REQUIRE(old == &vals[i][which[i]]);
        n--;
      } else {
        REQUIRE(old == NULL);
      }
      present[i] = 0;
    } else {
      void *got = hmap_get(m, key);
      REQUIRE(got == (present[i] ? &vals[i][which[i]] : NULL));
    }
    REQUIRE(hmap_size(m) == n);
  }
  /* Full check of every key, and that iteration sees exactly the present
   * ones. */
  size_t seen = 0;
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  hmap_iter_init(&it, m);
  while (hmap_iter_next(&it, &k, &v)) {
    size_t i = get_u32(k);
    REQUIRE(i < NKEYS);
    REQUIRE(present[i] == 1);
    REQUIRE(v == &vals[i][which[i]]);
    present[i] = 2; /* seen */
    seen++;
  }
  ck_assert_uint_eq(seen, n);
  for (size_t i = 0; i < NKEYS; i++) {
    REQUIRE(present[i] != 1);
    memset(key, 0x5c, keylen);
    set_u32(key, (uint32_t)i);
    if (keylen > 4)
      key[keylen - 1] ^= (uint8_t)i;
    REQUIRE(hmap_get(m, key) == (present[i] ? &vals[i][which[i]] : NULL));
  }
  hmap_free(m, NULL);
}

START_TEST(test_hmap_model)
{
  hmap_model_run(4, 1, 200000);
  hmap_model_run(20, 2, 100000);
  hmap_model_run(32, 3, 100000);
  hmap_model_run(5, 4, 50000);
}
END_TEST

/* A sliding window: insert key i, remove key i - 8, for many i. The live
 * count stays small while every slot gets used and freed, which exercises
 * tombstone cleanup and same-size rebuilds. */
START_TEST(test_hmap_churn)
{
  hmap_t *m = hmap_new(8);
  int dummy;
  for (uint64_t i = 0; i < 200000; i++) {
    REQUIRE(hmap_set_u64(m, i, &dummy) == NULL);
    if (i >= 8)
      REQUIRE(hmap_remove_u64(m, i - 8) == &dummy);
    REQUIRE(hmap_size(m) == (i >= 8 ? 8 : i + 1));
  }
  for (uint64_t i = 200000 - 8; i < 200000; i++)
    ck_assert_ptr_eq(hmap_get_u64(m, i), &dummy);
  ck_assert_ptr_null(hmap_get_u64(m, 200000 - 9));
  hmap_free(m, NULL);
}
END_TEST

START_TEST(test_hmap_iter_remove)
{
  hmap_t *m = hmap_new(4);
  enum { N = 1000 };
  static int vals[N];
  static int seen[N];
  for (uint32_t i = 0; i < N; i++)
    hmap_set_u32(m, i, &vals[i]);
  memset(seen, 0, sizeof(seen));

  /* Remove the odd keys while iterating; every key is still visited
   * exactly once. */
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  hmap_iter_init(&it, m);
  while (hmap_iter_next(&it, &k, &v)) {
    uint32_t i = get_u32(k);
    ck_assert_ptr_eq(v, &vals[i]);
    seen[i]++;
    if (i & 1) {
      ck_assert_ptr_eq(hmap_iter_remove_current(&it), &vals[i]);
      ck_assert_ptr_null(hmap_iter_remove_current(&it)); /* only once */
    }
  }
  ck_assert_ptr_null(hmap_iter_remove_current(&it));
  for (int i = 0; i < N; i++)
    ck_assert_int_eq(seen[i], 1);
  ck_assert_uint_eq(hmap_size(m), N / 2);
  for (uint32_t i = 0; i < N; i++)
    ck_assert_ptr_eq(hmap_get_u32(m, i), (i & 1) ? NULL : &vals[i]);

  /* Removing by key (and replacing values) during iteration is fine too;
   * remove everything. */
  size_t visits = 0;
  hmap_iter_init(&it, m);
  while (hmap_iter_next(&it, &k, NULL)) {
    uint32_t i = get_u32(k);
    visits++;
    ck_assert_ptr_eq(hmap_set_u32(m, i, &vals[0]), &vals[i]);
    ck_assert_ptr_eq(hmap_remove_u32(m, i), &vals[0]);
    ck_assert_ptr_null(hmap_iter_remove_current(&it));
  }
  ck_assert_uint_eq(visits, N / 2);
  ck_assert_uint_eq(hmap_size(m), 0);

  /* The emptied map still works. */
  hmap_set_u32(m, 7, &vals[7]);
  ck_assert_ptr_eq(hmap_get_u32(m, 7), &vals[7]);
  hmap_free(m, NULL);
}
END_TEST

START_TEST(test_hmap_iter_insert_aborts)
{
  hmap_t *m = hmap_new(4);
  int dummy;
  hmap_set_u32(m, 0, &dummy);
  hmap_iter_t it;
  hmap_iter_init(&it, m);
  ck_assert(hmap_iter_next(&it, NULL, NULL));
  for (uint32_t i = 1; i < 100; i++)
    hmap_set_u32(m, i, &dummy); /* forces a rebuild */
  hmap_iter_next(&it, NULL, NULL); /* aborts */
}
END_TEST

START_TEST(test_hmap_empty_iter_clear_free)
{
  hmap_t *m = hmap_new(16);
  hmap_iter_t it;
  hmap_iter_init(&it, m);
  ck_assert_int_eq(hmap_iter_next(&it, NULL, NULL), 0);

  uint8_t key[16] = {0};
  for (int i = 0; i < 50; i++) {
    key[0] = (uint8_t)i;
    hmap_set(m, key, malloc(1));
  }
  ck_assert_uint_eq(hmap_size(m), 50);
  n_freed = 0;
  hmap_free(m, count_free);
  ck_assert_int_eq(n_freed, 50);

  m = hmap_new(16);
  int v;
  for (int i = 0; i < 50; i++) {
    key[0] = (uint8_t)i;
    hmap_set(m, key, &v);
  }
  hmap_clear(m);
  ck_assert_uint_eq(hmap_size(m), 0);
  key[0] = 3;
  ck_assert_ptr_null(hmap_get(m, key));
  hmap_set(m, key, &v);
  ck_assert_ptr_eq(hmap_get(m, key), &v);
  ck_assert_uint_eq(hmap_size(m), 1);
  hmap_free(m, NULL);
}
END_TEST

/* ---- ptrvec ---- */

START_TEST(test_vec_basic)
{
  ptrvec_t *v = ptrvec_new();
  int x[10];
  ck_assert_uint_eq(ptrvec_len(v), 0);
  ck_assert_ptr_null(ptrvec_pop(v));
  for (int i = 0; i < 10; i++)
    ptrvec_push(v, &x[i]);
  ck_assert_uint_eq(ptrvec_len(v), 10);
  for (int i = 0; i < 10; i++)
    ck_assert_ptr_eq(ptrvec_get(v, i), &x[i]);
  ck_assert_int_eq(ptrvec_find(v, &x[7]), 7);
  ck_assert_int_eq(ptrvec_find(v, NULL), -1);

  ck_assert_ptr_eq(ptrvec_set(v, 3, NULL), &x[3]);
  ck_assert_ptr_null(ptrvec_get(v, 3));
  ck_assert_int_eq(ptrvec_find(v, NULL), 3);
  ptrvec_set(v, 3, &x[3]);

  ck_assert_ptr_eq(ptrvec_pop(v), &x[9]);
  ck_assert_uint_eq(ptrvec_len(v), 9);

  /* remove_at swaps the last element in: 0 1 8 3 4 5 6 7 */
  ck_assert_ptr_eq(ptrvec_remove_at(v, 2), &x[2]);
  ck_assert_uint_eq(ptrvec_len(v), 8);
  ck_assert_ptr_eq(ptrvec_get(v, 2), &x[8]);
  ck_assert_ptr_eq(ptrvec_get(v, 7), &x[7]);
  /* Removing the last one works too. */
  ck_assert_ptr_eq(ptrvec_remove_at(v, 7), &x[7]);
  /* remove_at_ordered keeps order: 0 8 3 4 5 6 */
  ck_assert_ptr_eq(ptrvec_remove_at_ordered(v, 1), &x[1]);
  int *want1[] = {&x[0], &x[8], &x[3], &x[4], &x[5], &x[6]};
  ck_assert_uint_eq(ptrvec_len(v), 6);
  for (size_t i = 0; i < 6; i++)
    ck_assert_ptr_eq(ptrvec_get(v, i), want1[i]);
  /* insert at front, middle and end: 9 0 8 2 3 4 5 6 7 */
  ptrvec_insert(v, 0, &x[9]);
  ptrvec_insert(v, 3, &x[2]);
  ptrvec_insert(v, ptrvec_len(v), &x[7]);
  int *want2[] = {&x[9], &x[0], &x[8], &x[2], &x[3],
                  &x[4], &x[5], &x[6], &x[7]};
  ck_assert_uint_eq(ptrvec_len(v), 9);
  for (size_t i = 0; i < 9; i++)
    ck_assert_ptr_eq(ptrvec_get(v, i), want2[i]);

  ptrvec_clear(v);
  ck_assert_uint_eq(ptrvec_len(v), 0);
  ptrvec_push(v, &x[1]);
  ck_assert_ptr_eq(ptrvec_get(v, 0), &x[1]);
  ptrvec_free(v, NULL);
  ck_assert_ptr_null(v);
  ptrvec_free(v, NULL);
}
END_TEST

START_TEST(test_vec_grow_and_free)
{
  ptrvec_t *v = ptrvec_new();
  /* Inserting at the front many times crosses several growths. */
  for (int i = 0; i < 1000; i++)
    ptrvec_insert(v, 0, malloc(4));
  ptrvec_push(v, NULL);
  ck_assert_uint_eq(ptrvec_len(v), 1001);
  n_freed = 0;
  ptrvec_free(v, count_free);
  ck_assert_int_eq(n_freed, 1001); /* called on NULL elements too */
}
END_TEST

START_TEST(test_vec_foreach)
{
  ptrvec_t *v = ptrvec_new();
  int x[8];
  for (int i = 0; i < 8; i++) {
    x[i] = i;
    ptrvec_push(v, &x[i]);
  }
  /* Visit all in order. */
  int sum = 0;
  size_t expect_idx = 0;
  PTRVEC_FOREACH_BEGIN(v, int *, p) {
    ck_assert_uint_eq(p_idx, expect_idx++);
    ck_assert_int_eq(*p, (int)p_idx);
    sum += *p;
  } PTRVEC_FOREACH_END(p);
  ck_assert_int_eq(sum, 28);

  /* Delete the even ones (including index 0) while iterating. */
  int visited = 0;
  PTRVEC_FOREACH_BEGIN(v, int *, p) {
    visited++;
    if (*p % 2 == 0)
      PTRVEC_FOREACH_DEL_CURRENT(v, p);
  } PTRVEC_FOREACH_END(p);
  ck_assert_int_eq(visited, 8);
  ck_assert_uint_eq(ptrvec_len(v), 4);
  for (size_t i = 0; i < 4; i++)
    ck_assert_int_eq(*(int *)ptrvec_get(v, i), (int)(2 * i + 1));

  /* break leaves the loop; continue skips. */
  visited = 0;
  PTRVEC_FOREACH_BEGIN(v, int *, p) {
    if (*p == 3)
      continue;
    if (*p == 5)
      break;
    visited++;
  } PTRVEC_FOREACH_END(p);
  ck_assert_int_eq(visited, 1);

  /* Works on a const vector. */
  const ptrvec_t *cv = v;
  visited = 0;
  PTRVEC_FOREACH_BEGIN(cv, const int *, p) {
    visited += *p;
  } PTRVEC_FOREACH_END(p);
  ck_assert_int_eq(visited, 1 + 3 + 5 + 7);
  ptrvec_free(v, NULL);
}
END_TEST

START_TEST(test_vec_bad_index)
{
  ptrvec_t *v = ptrvec_new();
  ptrvec_push(v, NULL);
  ptrvec_get(v, 1); /* aborts */
}
END_TEST

START_TEST(test_vec_bad_remove)
{
  ptrvec_t *v = ptrvec_new();
  ptrvec_remove_at(v, 0); /* aborts */
}
END_TEST

/* ---- minheap ---- */

typedef struct {
  int key;
  int heap_idx;
  int in;
} helt_t;

static int
helt_cmp(const void *a, const void *b)
{
  const helt_t *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

START_TEST(test_minheap_basic)
{
  minheap_t *h = minheap_new(helt_cmp, offsetof(helt_t, heap_idx));
  helt_t e[5];
  int keys[5] = {50, 10, 40, 20, 30};
  ck_assert_ptr_null(minheap_peek(h));
  ck_assert_ptr_null(minheap_pop(h));
  for (int i = 0; i < 5; i++) {
    e[i].key = keys[i];
    e[i].heap_idx = MINHEAP_IDX_NONE;
    minheap_add(h, &e[i]);
    ck_assert_int_ne(e[i].heap_idx, MINHEAP_IDX_NONE);
    ck_assert_int_eq(minheap_check(h), 0);
  }
  ck_assert_uint_eq(minheap_len(h), 5);
  ck_assert_ptr_eq(minheap_peek(h), &e[1]);
  ck_assert_int_eq(e[1].heap_idx, 0);

  /* Decrease a key: 50 -> 5 becomes the minimum. */
  e[0].key = 5;
  minheap_update(h, &e[0]);
  ck_assert_int_eq(minheap_check(h), 0);
  ck_assert_ptr_eq(minheap_peek(h), &e[0]);
  /* Increase it again: 5 -> 45. */
  e[0].key = 45;
  minheap_update(h, &e[0]);
  ck_assert_int_eq(minheap_check(h), 0);
  ck_assert_ptr_eq(minheap_peek(h), &e[1]);

  /* Remove from the middle. */
  minheap_remove(h, &e[3]);
  ck_assert_int_eq(e[3].heap_idx, MINHEAP_IDX_NONE);
  ck_assert_int_eq(minheap_check(h), 0);
  ck_assert_uint_eq(minheap_len(h), 4);

  /* Visit all. */
  int sum = 0;
  for (size_t i = 0; i < minheap_len(h); i++)
    sum += ((helt_t *)minheap_get(h, i))->key;
  ck_assert_int_eq(sum, 10 + 40 + 30 + 45);

  int want[] = {10, 30, 40, 45};
  for (int i = 0; i < 4; i++) {
    helt_t *p = minheap_pop(h);
    ck_assert_int_eq(p->key, want[i]);
    ck_assert_int_eq(p->heap_idx, MINHEAP_IDX_NONE);
    ck_assert_int_eq(minheap_check(h), 0);
  }
  ck_assert_ptr_null(minheap_pop(h));
  /* An element can be re-added after leaving. */
  minheap_add(h, &e[3]);
  ck_assert_ptr_eq(minheap_peek(h), &e[3]);
  minheap_free(h, NULL);
  ck_assert_ptr_null(h);
}
END_TEST

/* Random adds, pops, removes and key changes (up and down, with many
 * ties), checking the invariant and the stored indices after every step
 * and that pop returns the smallest key. */
START_TEST(test_minheap_model)
{
  enum { N = 500 };
  static helt_t e[N];
  minheap_t *h = minheap_new(helt_cmp, offsetof(helt_t, heap_idx));
  rng_seed(42);
  size_t n = 0;
  for (int i = 0; i < N; i++) {
    e[i].heap_idx = MINHEAP_IDX_NONE;
    e[i].in = 0;
  }
  for (int op = 0; op < 50000; op++) {
    helt_t *x = &e[rng_below(N)];
    int r = (int)rng_below(8);
    if (r < 3) {
      if (!x->in) {
        x->key = (int)rng_below(100);
        minheap_add(h, x);
        x->in = 1;
        n++;
      }
    } else if (r == 3) {
      helt_t *top = minheap_peek(h);
      helt_t *p = minheap_pop(h);
      REQUIRE(p == top);
      if (n) {
        for (int i = 0; i < N; i++)
          if (e[i].in)
            REQUIRE(e[i].key >= p->key);
        REQUIRE(p->in);
        p->in = 0;
        n--;
      } else {
        REQUIRE(p == NULL);
      }
    } else if (r == 4) {
      if (x->in) {
        minheap_remove(h, x);
        x->in = 0;
        n--;
      }
    } else {
      if (x->in) {
        x->key = (int)rng_below(100);
        minheap_update(h, x);
      }
    }
    REQUIRE(minheap_len(h) == n);
    for (int i = 0; i < N; i++)
      if (!e[i].in)
        REQUIRE(e[i].heap_idx == MINHEAP_IDX_NONE);
    REQUIRE(minheap_check(h) == 0);
  }
  ck_assert_int_eq(minheap_check(h), 0);
  int last = -1;
  while (minheap_len(h)) {
    helt_t *p = minheap_pop(h);
    REQUIRE(p->key >= last);
    last = p->key;
  }
  minheap_free(h, NULL);
}
END_TEST

START_TEST(test_minheap_check_detects)
{
  minheap_t *h = minheap_new(helt_cmp, offsetof(helt_t, heap_idx));
  helt_t e[3] = {{1, -1, 0}, {2, -1, 0}, {3, -1, 0}};
  for (int i = 0; i < 3; i++)
    minheap_add(h, &e[i]);
  ck_assert_int_eq(minheap_check(h), 0);
  /* Change a key without minheap_update(). */
  e[2].key = 0;
  ck_assert_int_eq(minheap_check(h), -1);
  e[2].key = 3;
  ck_assert_int_eq(minheap_check(h), 0);
  /* Corrupt a stored index. */
  int saved = e[1].heap_idx;
  e[1].heap_idx = 0;
  ck_assert_int_eq(minheap_check(h), -1);
  e[1].heap_idx = saved;
  ck_assert_int_eq(minheap_check(h), 0);
  minheap_free(h, NULL);
}
END_TEST

START_TEST(test_minheap_double_add)
{
  minheap_t *h = minheap_new(helt_cmp, offsetof(helt_t, heap_idx));
  helt_t e = {1, -1, 0};
  minheap_add(h, &e);
  minheap_add(h, &e); /* aborts */
}
END_TEST

START_TEST(test_minheap_remove_absent)
{
  minheap_t *h = minheap_new(helt_cmp, offsetof(helt_t, heap_idx));
  helt_t a = {1, -1, 0}, b = {2, -1, 0};
  minheap_add(h, &a);
  b.heap_idx = 0; /* claims a's slot */
  minheap_remove(h, &b); /* aborts */
}
END_TEST

/* ---- dlist ---- */

typedef struct {
  int v;
  dlist_node_t link;
} ditem_t;

static void
dlist_expect(const dlist_t *l, const int *want, size_t n)
{
  ck_assert_uint_eq(dlist_len(l), n);
  size_t i = 0;
  for (const dlist_node_t *nd = dlist_first(l); nd; nd = dlist_next(l, nd))
    ck_assert_int_eq(DLIST_ENTRY(nd, ditem_t, link)->v, want[i++]);
  ck_assert_uint_eq(i, n);
  /* And backwards. */
  for (const dlist_node_t *nd = dlist_last(l); nd; nd = dlist_prev(l, nd))
    ck_assert_int_eq(DLIST_ENTRY(nd, ditem_t, link)->v, want[--i]);
  ck_assert_uint_eq(i, 0);
}

START_TEST(test_dlist)
{
  dlist_t l;
  ditem_t it[6];
  dlist_init(&l);
  ck_assert(dlist_is_empty(&l));
  ck_assert_ptr_null(dlist_first(&l));
  ck_assert_ptr_null(dlist_last(&l));
  for (int i = 0; i < 6; i++) {
    it[i].v = i;
    dlist_node_init(&it[i].link);
    ck_assert(!dlist_node_is_linked(&it[i].link));
  }
  dlist_insert_tail(&l, &it[1].link);
  dlist_insert_tail(&l, &it[2].link);
  dlist_insert_head(&l, &it[0].link);
  ck_assert(!dlist_is_empty(&l));
  ck_assert(dlist_node_is_linked(&it[0].link));
  dlist_expect(&l, (int[]){0, 1, 2}, 3);
  dlist_insert_after(&it[2].link, &it[4].link);
  dlist_insert_before(&it[4].link, &it[3].link);
  dlist_insert_after(&it[0].link, &it[5].link);
  dlist_expect(&l, (int[]){0, 5, 1, 2, 3, 4}, 6);

  dlist_remove(&it[5].link);
  ck_assert(!dlist_node_is_linked(&it[5].link));
  dlist_remove(&it[5].link); /* no-op */
  dlist_remove(&it[0].link); /* first */
  dlist_remove(&it[4].link); /* last */
  dlist_expect(&l, (int[]){1, 2, 3}, 3);

  /* Foreach-safe: remove the current node each time. */
  dlist_node_t *n, *tmp;
  int k = 1;
  DLIST_FOREACH_SAFE(&l, n, tmp) {
    ditem_t *d = DLIST_ENTRY(n, ditem_t, link);
    ck_assert_int_eq(d->v, k++);
    if (d->v != 2)
      dlist_remove(n);
  }
  dlist_expect(&l, (int[]){2}, 1);
  dlist_remove(&it[2].link);
  ck_assert(dlist_is_empty(&l));
  k = 0;
  DLIST_FOREACH_SAFE(&l, n, tmp)
    k++;
  ck_assert_int_eq(k, 0);
}
END_TEST

Suite *
suite_container(void)
{
  Suite *s = suite_create("container");
  TCase *tc = tcase_create("siphash");
  tcase_add_test(tc, test_siphash_paper);
  tcase_add_test(tc, test_siphash_vectors);
  tcase_add_test(tc, test_siphash_process_key);
  suite_add_tcase(s, tc);

  tc = tcase_create("hmap");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_hmap_basic);
  tcase_add_test(tc, test_hmap_int_keys);
  tcase_add_test_raise_signal(tc, test_hmap_keylen_mismatch, SIGABRT);
  tcase_add_test(tc, test_hmap_model);
  tcase_add_test(tc, test_hmap_churn);
  tcase_add_test(tc, test_hmap_iter_remove);
  tcase_add_test_raise_signal(tc, test_hmap_iter_insert_aborts, SIGABRT);
  tcase_add_test(tc, test_hmap_empty_iter_clear_free);
  suite_add_tcase(s, tc);

  tc = tcase_create("vec");
  tcase_add_test(tc, test_vec_basic);
  tcase_add_test(tc, test_vec_grow_and_free);
  tcase_add_test(tc, test_vec_foreach);
  tcase_add_test_raise_signal(tc, test_vec_bad_index, SIGABRT);
  tcase_add_test_raise_signal(tc, test_vec_bad_remove, SIGABRT);
  suite_add_tcase(s, tc);

  tc = tcase_create("minheap");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_minheap_basic);
  tcase_add_test(tc, test_minheap_model);
  tcase_add_test(tc, test_minheap_check_detects);
  tcase_add_test_raise_signal(tc, test_minheap_double_add, SIGABRT);
  tcase_add_test_raise_signal(tc, test_minheap_remove_absent, SIGABRT);
  suite_add_tcase(s, tc);

  tc = tcase_create("dlist");
  tcase_add_test(tc, test_dlist);
  suite_add_tcase(s, tc);
  return s;
}
