/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_keycert.c -- fuzz target: directory authority key certificates
 * (feature/dir/dir_keycert, as fetched from /tor/keys/). Parsing includes
 * reading the RSA keys (OpenSSL) and checking the cross-certification.
 * Bound: 64 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"

#include "feature/dir/dir_keycert.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  char *doc = fuzz_strndup(data, len);
  dir_keycert_t **certs = NULL;
  int n = 0;
  char *err = NULL;
  (void)dir_keycert_parse_all(doc, len, &certs, &n, &err);
  for (int i = 0; i < n; i++) {
    char *terr = NULL;
    (void)dir_keycert_check_time(certs[i], 1700000000, &terr);
    free(terr);
    dir_keycert_free(certs[i]);
  }
  free(certs);
  free(err);
  free(doc);
}

const fuzz_target_t fuzz_target = {
  .name = "keycert", .run = run, .amp_factor = 16, .amp_slack = 64 * 1024,
};
