/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_statefile.c -- fuzz target: tor's state file as pctor reads it at
 * start: lib/fs/statefile's line parser, then the two readers of its
 * values, feature/client/guards (tor's "Guard in=... rsa_id=..." lines)
 * and feature/client/cbt (CircuitBuildTimeBin, CircuitBuildAbandonedCount),
 * and a rewrite of the guard lines (what a save would write); then
 * feature/hibernate's Accounting* lines, one tick of accounting at a fixed
 * time (UTC) and its GETINFO answers.
 *
 * Input: the file's bytes.
 * Bound: the store keeps every line (two strings and a 16-byte slot, at
 * most doubled by growth: about 40 bytes for a 2-byte line) and the cbt
 * history and histogram are fixed-size (under 64 KiB).
 */
#include "fuzz.h"

#include "feature/client/cbt.h"
#include "feature/client/guards.h"
#include "feature/hibernate/hibernate.h"
#include "lib/fs/statefile.h"

#include <stdlib.h>

static uint64_t
fixed_below(void *arg, uint64_t bound)
{
  uint64_t *s = arg;
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (*s >> 11) % bound;
}

static void
run(const uint8_t *data, size_t len)
{
  statefile_t *st = statefile_new("/nonexistent/pctor-fuzz-state");
  char *err = NULL;
  if (statefile_parse(st, (const char *)data, len, &err) < 0) {
    fuzz_verbose("statefile: %s", err);
    free(err);
    statefile_free(st);
    return;
  }
  guards_t *g = guards_new(st, "default");
  for (int i = 0; i < guards_n_sampled(g); i++) {
    guard_info_t gi;
    guards_get(g, i, &gi);
  }
  /* Rewrite the Guard lines without saving (no state path: the store's
   * own lines are replaced in memory only). */
  char *text = statefile_format(st, 0);
  free(text);
  guards_free(g);
  cbt_t *cbt = cbt_new();
  uint64_t seed = 1;
  path_rng_t rng = {fixed_below, &seed};
  int bad = 0;
  (void)cbt_load_state(cbt, st, &rng, &bad);
  cbt_write_state(cbt, st);
  (void)cbt_timeout_ms(cbt);
  cbt_free(cbt);
  hibernate_options_t ho = {1 << 20, ACCT_RULE_SUM, {ACCT_UNIT_DAY, 0, 3, 0}};
  hibernate_t *h = hibernate_new(&ho, (const uint8_t *)"01234567890123456789",
                                 1 << 20, NULL);
  hibernate_load_state(h, st);
  hibernate_tick(h, 1795735320);
  static const char *const keys[] = {
      "accounting/bytes", "accounting/bytes-left", "accounting/hibernating",
      "accounting/interval-start", "accounting/interval-wake",
      "accounting/interval-end"};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    char *v = NULL;
    if (hibernate_getinfo(h, keys[i], &v) > 0)
      free(v);
  }
  hibernate_save_state(h, st);
  hibernate_free(h);
  statefile_free(st);
}

const fuzz_target_t fuzz_target = {
  .name = "statefile", .run = run, .amp_factor = 48, .amp_slack = 128 * 1024,
};
