/* SPDX-License-Identifier: BSD-3-Clause */
/* alloc.h -- allocation helpers that never return NULL.
 *
 * pctor treats running out of memory as fatal: every pc_*alloc() either
 * returns usable memory or logs and aborts, so callers never check for NULL.
 * Memory that held secrets is wiped with pc_memwipe() before it is freed.
 * PC_FREE() frees and sets the pointer to NULL so a stale pointer cannot be
 * used twice.
 */
#ifndef PCTOR_LIB_MALLOC_ALLOC_H
#define PCTOR_LIB_MALLOC_ALLOC_H

#include <stddef.h>

void *pc_malloc(size_t n);
void *pc_calloc(size_t count, size_t size);
void *pc_zalloc(size_t n);
void *pc_realloc(void *p, size_t n);
char *pc_strdup(const char *s);
char *pc_strndup(const char *s, size_t n);
void *pc_memdup(const void *p, size_t n);
/* Overwrite n bytes at p with zeros in a way the compiler cannot elide. */
void pc_memwipe(void *p, size_t n);
/* printf into a freshly allocated string. */
char *pc_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define PC_FREE(p) do { free(p); (p) = NULL; } while (0)

#endif
