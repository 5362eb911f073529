/* SPDX-License-Identifier: BSD-3-Clause */
/* rand.c -- secure random bytes from OpenSSL's DRBG.
 *
 * Design: RAND_bytes() is OpenSSL's public CSPRNG, seeded from the kernel.
 * If it ever fails we log and abort instead of returning: a caller that
 * used unfilled or predictable bytes as a key would be silently broken.
 * crypt_rand_u64_below() rejects the low 2^64 mod max values so that the
 * modulo that follows is exactly uniform (expected < 2 draws).
 */
#include <limits.h>
#include <stdlib.h>

#include <openssl/rand.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"

void
crypt_rand(uint8_t *out, size_t n)
{
  while (n > 0) {
    int chunk = n > INT_MAX ? INT_MAX : (int)n;
    if (RAND_bytes(out, chunk) != 1)
      crypt_fatal_("RAND_bytes");
    out += chunk;
    n -= (size_t)chunk;
  }
}

uint64_t
crypt_rand_u64_below(uint64_t max)
{
  uint8_t b[8];
  uint64_t r, threshold;
  if (max == 0) {
    log_err("crypt_rand_u64_below called with max == 0");
    abort();
  }
  /* 2^64 mod max, computed without 128-bit arithmetic. Values below it
   * would be over-represented by the final modulo. */
  threshold = (0 - max) % max;
  do {
    crypt_rand(b, sizeof(b));
    r = get_u64(b);
  } while (r < threshold);
  return r % max;
}
