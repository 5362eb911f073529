/* SPDX-License-Identifier: BSD-3-Clause */
/* str.c -- small comparisons of C strings (see str.h). */
#include "lib/string/str.h"

#include <string.h>

int
str_eq_nullable(const char *a, const char *b)
{
  if (!a || !b)
    return a == b;
  return !strcmp(a, b);
}
