/* SPDX-License-Identifier: BSD-3-Clause */
/* rand.h -- cryptographically secure random numbers (OpenSSL's DRBG). */
#ifndef PCTOR_LIB_CRYPT_RAND_H
#define PCTOR_LIB_CRYPT_RAND_H
#include <stddef.h>
#include <stdint.h>
/* Fill out with n random bytes; aborts if the RNG fails (never returns
 * predictable bytes). */
void crypt_rand(uint8_t *out, size_t n);
/* Uniform integer in [0, max) without modulo bias; max > 0. */
uint64_t crypt_rand_u64_below(uint64_t max);
#endif
