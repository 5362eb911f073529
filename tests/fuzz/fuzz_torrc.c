/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_torrc.c -- fuzz target: the torrc lexer (lib/conf: keys, values,
 * quoting, escapes, continuation lines, comments). %include is not
 * followed here (conf_lex_text does not touch the file system); the
 * option table of src/app/config is not exercised (it is being rewritten).
 * Bound: each line keeps its key, value and source name: 4 KiB + 8 bytes
 * per input byte plus 96 bytes per line -- stated as 4 KiB + 104 bytes
 * per input byte (an input can be all newlines... which make no lines, so
 * in practice far less).
 */
#include "fuzz.h"

#include "lib/conf/conf.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  conf_line_t *lines = NULL;
  char *err = NULL;
  if (conf_lex_text((const char *)data, len, "fuzz", &lines, &err) == 0) {
    (void)conf_lines_count(lines);
    conf_line_t *dup = conf_lines_dup(lines);
    if (dup)
      free(conf_line_where(dup));
    conf_lines_free(dup);
    conf_lines_free(lines);
  }
  free(err);
}

const fuzz_target_t fuzz_target = {
  .name = "torrc", .run = run, .amp_factor = 104, .amp_slack = 4096,
};
