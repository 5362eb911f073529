/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_mdlist.h -- the body shared by the fuzz targets whose parser turns
 * a download of documents back to back into a microdesc_t array
 * (fuzz_microdesc.c, fuzz_serverdesc.c): parse one input as a string and
 * free whatever the parser returned. Header-only, included by each target
 * file, so that the targets keep their one-file build rule. */
#ifndef PCTOR_TESTS_FUZZ_FUZZ_MDLIST_H
#define PCTOR_TESTS_FUZZ_FUZZ_MDLIST_H

#include <stdlib.h>

#include "fuzz.h"
#include "feature/dir/microdesc.h"

typedef int (*fuzz_mdlist_parse_fn)(const char *s, size_t len,
                                    microdesc_t ***out, int *n, char **err);

static inline void
fuzz_mdlist_run(fuzz_mdlist_parse_fn parse, const uint8_t *data, size_t len)
{
  char *doc = fuzz_strndup(data, len);
  microdesc_t **mds = NULL;
  int n = 0;
  char *err = NULL;
  (void)parse(doc, len, &mds, &n, &err);
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);
  free(err);
  free(doc);
}

#endif
