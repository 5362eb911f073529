/* SPDX-License-Identifier: BSD-3-Clause */
/* strbuf.h -- a growable NUL-terminated string, for building text replies
 * (control-port answers, metrics pages, descriptor policy lines, vici
 * dumps) piece by piece.
 *
 * A zeroed strbuf_t is an empty buffer; s stays NULL until the first
 * append. The caller owns s (free() it, or keep it as the result). Growth
 * doubles the capacity, so appending n bytes in pieces costs O(n).
 * Allocation failure aborts, as everywhere in pctor (lib/malloc). */
#ifndef PCTOR_LIB_STRING_STRBUF_H
#define PCTOR_LIB_STRING_STRBUF_H

#include <stddef.h>

typedef struct strbuf_t {
  char *s;     /* the text, NUL-terminated; NULL while nothing was added */
  size_t len;  /* bytes before the NUL */
  size_t cap;  /* bytes allocated */
} strbuf_t;

/* Make room for need more bytes (and the NUL) after len, for a caller
 * that writes into b->s + b->len itself and then adds to len. */
void strbuf_reserve(strbuf_t *b, size_t need);

/* Append n bytes of s (which should hold no NUL), or the string s. */
void strbuf_addn(strbuf_t *b, const char *s, size_t n);
void strbuf_add(strbuf_t *b, const char *s);

/* Append one character. */
void strbuf_addc(strbuf_t *b, char c);

/* The text built (an empty string if nothing was added), now the
 * caller's to free(); b is left empty. */
char *strbuf_take(strbuf_t *b);

/* Append printf-style text. */
void strbuf_addf(strbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
