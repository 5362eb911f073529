/* SPDX-License-Identifier: BSD-3-Clause */
/* allocator.c -- the name, version and self-check of the malloc chosen
 * with ./configure --with-malloc (see allocator.h). PCTOR_MALLOC_JEMALLOC
 * or PCTOR_MALLOC_MIMALLOC come from config.h; neither means glibc.
 * The check asks the allocator itself whether a fresh malloc() block is
 * its own: jemalloc through mallctl("arenas.lookup"), which fails for a
 * pointer it does not manage, mimalloc through mi_is_in_heap_region().
 */
#include "config.h"

#include "lib/malloc/allocator.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(PCTOR_MALLOC_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(PCTOR_MALLOC_MIMALLOC)
#include <mimalloc.h>
#else
#include <gnu/libc-version.h>
#endif

const char *
allocator_name(void)
{
#if defined(PCTOR_MALLOC_JEMALLOC)
  return "jemalloc";
#elif defined(PCTOR_MALLOC_MIMALLOC)
  return "mimalloc";
#else
  return "glibc";
#endif
}

const char *
allocator_version(void)
{
  static char buf[96];
#if defined(PCTOR_MALLOC_JEMALLOC)
  const char *v = NULL;
  size_t sz = sizeof(v);
  if (mallctl("version", &v, &sz, NULL, 0) != 0 || !v)
    v = JEMALLOC_VERSION;
  snprintf(buf, sizeof(buf), "jemalloc %s", v);
#elif defined(PCTOR_MALLOC_MIMALLOC)
  int v = mi_version(); /* e.g. 209 for 2.0.9 */
  snprintf(buf, sizeof(buf), "mimalloc %d.%d.%d", v / 100, (v / 10) % 10,
           v % 10);
#else
  snprintf(buf, sizeof(buf), "glibc %s", gnu_get_libc_version());
#endif
  return buf;
}

int
allocator_check(void)
{
  int ok = 1;
#if defined(PCTOR_MALLOC_JEMALLOC) || defined(PCTOR_MALLOC_MIMALLOC)
  /* volatile: the compiler may not pair malloc with free and drop both. */
  void *volatile p = malloc(64);
  if (!p)
    return -1;
#if defined(PCTOR_MALLOC_JEMALLOC)
  unsigned arena;
  size_t sz = sizeof(arena);
  void *q = p;
  ok = mallctl("arenas.lookup", &arena, &sz, &q, sizeof(q)) == 0;
#else
  ok = mi_is_in_heap_region(p);
#endif
  free(p);
#endif
  return ok ? 0 : -1;
}
