/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rng.h -- a fixed-seed RNG for unit tests whose draws must be
 * reproducible (path selection, guard sampling, build-time fits):
 * splitmix64, and an unbiased "below bound" on it in the shape of
 * path_rng_t's callback. */
#ifndef PCTOR_TESTS_UNIT_TEST_RNG_H
#define PCTOR_TESTS_UNIT_TEST_RNG_H
#include <stdint.h>

/* The next splitmix64 output; *state advances. */
uint64_t test_rng_next(uint64_t *state);
/* Uniform in [0, bound), bound > 0; arg is a uint64_t state. */
uint64_t test_rng_below(void *arg, uint64_t bound);
#endif
