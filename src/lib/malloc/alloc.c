/* SPDX-License-Identifier: BSD-3-Clause */
/* alloc.c -- allocation wrappers that abort on exhaustion (see alloc.h). */
#include "lib/malloc/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
alloc_die(size_t n)
{
  fprintf(stderr, "pctor: out of memory allocating %zu bytes; aborting\n", n);
  abort();
}

void *
pc_malloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p)
    alloc_die(n);
  return p;
}

void *
pc_calloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p)
    alloc_die(count * size);
  return p;
}

void *
pc_zalloc(size_t n)
{
  return pc_calloc(1, n);
}

void *
pc_realloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);
  if (!q)
    alloc_die(n);
  return q;
}

char *
pc_strdup(const char *s)
{
  return pc_memdup(s, strlen(s) + 1);
}

char *
pc_strndup(const char *s, size_t n)
{
  size_t len = strnlen(s, n);
  char *r = pc_malloc(len + 1);
  memcpy(r, s, len);
  r[len] = '\0';
  return r;
}

void *
pc_memdup(const void *p, size_t n)
{
  void *r = pc_malloc(n);
  if (n)
    memcpy(r, p, n);
  return r;
}

void
pc_memwipe(void *p, size_t n)
{
  if (!p || !n)
    return;
  explicit_bzero(p, n);
}

char *
pc_asprintf(const char *fmt, ...)
{
  va_list ap;
  char *out = NULL;
  va_start(ap, fmt);
  int r = vasprintf(&out, fmt, ap);
  va_end(ap);
  if (r < 0)
    alloc_die(strlen(fmt));
  return out;
}
