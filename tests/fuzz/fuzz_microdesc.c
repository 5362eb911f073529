/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_microdesc.c -- fuzz target: a microdescriptor download (one or more
 * documents back to back, feature/dir/microdesc, as dir_client parses a
 * /tor/micro/d/ answer). Bound: 64 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"

#include "feature/dir/microdesc.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  char *doc = fuzz_strndup(data, len);
  microdesc_t **mds = NULL;
  int n = 0;
  char *err = NULL;
  (void)microdesc_parse_many(doc, len, &mds, &n, &err);
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);
  free(err);
  free(doc);
}

const fuzz_target_t fuzz_target = {
  .name = "microdesc", .run = run, .amp_factor = 16, .amp_slack = 64 * 1024,
};
