/* SPDX-License-Identifier: BSD-3-Clause */
/* toolargs.h -- the "--name value" command lines of the test tools
 * (pctor-dgramtest, pctor-ipsec-announce).
 *
 * A tool describes its options in a table (name with its dashes, a kind,
 * where the value goes) and toolargs_parse() walks argv once: every
 * argument must be a known name followed by its value, and a number must
 * be a whole unsigned number that fits (decimal, or 0x... hex), so a typo
 * is a usage error instead of a silent 0. Options not given keep what the
 * caller put in their variables (the defaults); a later repeat wins.
 */
#ifndef PCTOR_TOOLS_COMMON_TOOLARGS_H
#define PCTOR_TOOLS_COMMON_TOOLARGS_H

typedef enum {
  TOOLARG_STR,  /* dst is a const char **: the argument itself */
  TOOLARG_UINT, /* dst is an unsigned * */
} toolarg_kind_t;

typedef struct toolarg_t {
  const char *name; /* "--datadir"; NULL ends the table */
  toolarg_kind_t kind;
  void *dst;
} toolarg_t;

/* Parse argv[1..argc-1] against opts. Returns 0, or -1 after printing
 * "PROG: WHY" to stderr (unknown option, missing or malformed value). */
int toolargs_parse(int argc, char **argv, const toolarg_t *opts);

#endif
