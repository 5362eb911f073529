/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_serverdesc.c -- fuzz target: server descriptors (one or more,
 * feature/dir/serverdesc, as fetched from /tor/server/). Bound: 64 KiB +
 * 16 bytes per input byte.
 */
#include "fuzz.h"
#include "fuzz_mdlist.h"

#include "feature/dir/serverdesc.h"

static void
run(const uint8_t *data, size_t len)
{
  fuzz_mdlist_run(serverdesc_parse_many, data, len);
}

const fuzz_target_t fuzz_target = {
  .name = "serverdesc", .run = run, .amp_factor = 16,
  .amp_slack = 64 * 1024,
};
