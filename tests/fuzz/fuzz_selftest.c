/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_selftest.c -- not a parser: proves that the amplification check of
 * fuzz_common.c sees allocations (amp-selftest.sh runs it). An input
 * whose first byte is N makes it allocate N KiB with malloc, N KiB with
 * calloc, grow one of them with realloc, and free all; the bound is 64 KiB
 * + 1 byte per input byte, so N <= 20 passes and N >= 40 must abort.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* The pointers escape through here, so the compiler cannot drop the
 * allocations (clang removes an unused malloc/free pair). */
void *volatile fuzz_selftest_sink;

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  size_t n = (size_t)data[0] * 1024;
  char *a = malloc(n + 1);
  char *b = calloc(1, n + 1);
  if (!a || !b)
    abort();
  memset(a, 1, n + 1);
  fuzz_selftest_sink = b;
  char *c = realloc(a, n + 2);
  if (!c)
    abort();
  fuzz_selftest_sink = c;
  free(c);
  free(b);
}

const fuzz_target_t fuzz_target = {
  .name = "selftest", .run = run, .amp_factor = 1, .amp_slack = 64 * 1024,
};
