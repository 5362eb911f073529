/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_microdesc.c -- fuzz target: a microdescriptor download (one or more
 * documents back to back, feature/dir/microdesc, as dir_client parses a
 * /tor/micro/d/ answer). Bound: 64 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"
#include "fuzz_mdlist.h"

static void
run(const uint8_t *data, size_t len)
{
  fuzz_mdlist_run(microdesc_parse_many, data, len);
}

const fuzz_target_t fuzz_target = {
  .name = "microdesc", .run = run, .amp_factor = 16, .amp_slack = 64 * 1024,
};
