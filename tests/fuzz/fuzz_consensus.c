/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_consensus.c -- fuzz target: network-status consensus documents
 * (feature/dir/consensus), then the look-ups a relay makes on a parsed one
 * (parameters, bandwidth weights, a router by identity, the time check).
 * Signatures are not verified (no authority keys): the parser is the
 * target. Bound: the parsed consensus keeps one entry per "r" line and its
 * strings: 64 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"

#include "feature/dir/consensus.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  char *doc = fuzz_strndup(data, len);
  consensus_t *c = NULL;
  char *err = NULL;
  if (consensus_parse(doc, len, &c, &err) == 0 && c) {
    static const uint8_t id[20] = {0};
    (void)consensus_get_param(c, "circwindow", 1000, 100, 1000);
    (void)consensus_get_bw_weight(c, "Wgg", 10000);
    (void)consensus_find(c, id);
    char *terr = NULL;
    (void)consensus_check_time(c, 1700000000, &terr);
    free(terr);
    consensus_free(c);
  }
  free(err);
  free(doc);
}

const fuzz_target_t fuzz_target = {
  .name = "consensus", .run = run, .amp_factor = 16, .amp_slack = 64 * 1024,
};
