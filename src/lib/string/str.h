/* SPDX-License-Identifier: BSD-3-Clause */
/* str.h -- small comparisons of C strings that the standard library lacks.
 *
 * Optional strings (an unset option, a descriptor field that may be
 * absent) are NULL, so comparing two of them must treat NULL as a value
 * of its own rather than crash in strcmp(). */
#ifndef PCTOR_LIB_STRING_STR_H
#define PCTOR_LIB_STRING_STR_H

/* 1 if a and b are both NULL or both strings with the same bytes, else 0
 * (NULL differs from every string, "" included). */
int str_eq_nullable(const char *a, const char *b);

#endif
