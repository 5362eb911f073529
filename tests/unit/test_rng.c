/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rng.c -- the unit tests' fixed-seed RNG (see test_rng.h). The
 * rejection step keeps "below" unbiased for any bound. */
#include "test_rng.h"

uint64_t
test_rng_next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t
test_rng_below(void *arg, uint64_t bound)
{
  uint64_t *s = arg;
  uint64_t lim = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do {
    x = test_rng_next(s);
  } while (x >= lim);
  return x % bound;
}
