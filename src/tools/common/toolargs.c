/* SPDX-License-Identifier: BSD-3-Clause */
/* toolargs.c -- "--name value" command lines of the test tools (see
 * toolargs.h). */
#include "tools/common/toolargs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const toolarg_t *
find_opt(const toolarg_t *opts, const char *name)
{
  for (; opts->name; opts++)
    if (!strcmp(opts->name, name))
      return opts;
  return NULL;
}

int
toolargs_parse(int argc, char **argv, const toolarg_t *opts)
{
  for (int i = 1; i < argc; i += 2) {
    const toolarg_t *o = find_opt(opts, argv[i]);
    if (!o) {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return -1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[i]);
      return -1;
    }
    const char *v = argv[i + 1];
    if (o->kind == TOOLARG_STR) {
      *(const char **)o->dst = v;
      continue;
    }
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(v, &end, 0);
    if (!*v || *v == '-' || *end || errno || n > UINT_MAX) {
      fprintf(stderr, "%s: %s wants an unsigned number, not \"%s\"\n",
              argv[0], argv[i], v);
      return -1;
    }
    *(unsigned *)o->dst = (unsigned)n;
  }
  return 0;
}
