/* SPDX-License-Identifier: BSD-3-Clause */
/* strbuf.c -- a growable string (see strbuf.h). The text is formatted
 * once with vsnprintf into the buffer's spare room, and again only when
 * it did not fit, so most appends make no temporary copy. */
#include "lib/string/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/malloc/alloc.h"

void
strbuf_reserve(strbuf_t *b, size_t need)
{
  if (b->len + need + 1 <= b->cap)
    return;
  size_t cap = (b->len + need + 1) * 2;
  b->s = pc_realloc(b->s, cap);
  b->cap = cap;
}

void
strbuf_addn(strbuf_t *b, const char *s, size_t n)
{
  strbuf_reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void
strbuf_add(strbuf_t *b, const char *s)
{
  strbuf_addn(b, s, strlen(s));
}

void
strbuf_addc(strbuf_t *b, char c)
{
  strbuf_addn(b, &c, 1);
}

char *
strbuf_take(strbuf_t *b)
{
  char *s = b->s ? b->s : pc_strdup("");
  b->s = NULL;
  b->len = b->cap = 0;
  return s;
}

void
strbuf_addf(strbuf_t *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char dummy;
  char *at = b->s ? b->s + b->len : &dummy;
  size_t room = b->s ? b->cap - b->len : 1;
  int n = vsnprintf(at, room, fmt, ap);
  va_end(ap);
  if (n < 0)
    abort();
  if ((size_t)n >= room || !b->s) {
    strbuf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}
