/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_serverdesc.c -- fuzz target: server descriptors (one or more,
 * feature/dir/serverdesc, as fetched from /tor/server/). Bound: 64 KiB +
 * 16 bytes per input byte.
 */
#include "fuzz.h"

#include "feature/dir/microdesc.h"
#include "feature/dir/serverdesc.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  char *doc = fuzz_strndup(data, len);
  microdesc_t **mds = NULL;
  int n = 0;
  char *err = NULL;
  (void)serverdesc_parse_many(doc, len, &mds, &n, &err);
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);
  free(err);
  free(doc);
}

const fuzz_target_t fuzz_target = {
  .name = "serverdesc", .run = run, .amp_factor = 16,
  .amp_slack = 64 * 1024,
};
