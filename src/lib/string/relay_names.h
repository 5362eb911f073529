/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_names.h -- the textual names of relays: nicknames, hex
 * fingerprints and family entries, checked and normalised in one place
 * for the configuration, the descriptors and the directory documents.
 *
 * A nickname is 1 to 19 ASCII letters and digits (dir-spec 2.1.1). A
 * family entry (dir-spec "family", consensus method 29 and later) is
 * normalised by pc_family_normalise(): "$" and 40 hex digits, optionally
 * followed by "=" or "~" and anything, becomes "$" and the 40 digits in
 * upper case; a nickname becomes lower case; anything else is kept as it
 * is. The functions are pure and locale-independent (ASCII only). */
#ifndef PCTOR_LIB_STRING_RELAY_NAMES_H
#define PCTOR_LIB_STRING_RELAY_NAMES_H

#include <stddef.h>

#define PC_NICKNAME_MAX_LEN 19

/* Whether s[0..len) is a legal nickname. */
int pc_nickname_ok(const char *s, size_t len);
/* Whether s[0..len) is all hex digits (either case); true for len 0. */
int pc_hex_ok(const char *s, size_t len);
/* Whether s[0..len) starts with "$" and 40 hex digits that end the entry
 * or are followed by "=" or "~" (a fingerprint with an optional name). */
int pc_fingerprint_entry_ok(const char *s, size_t len);
/* Upper-case the ASCII letters a-f of s[0..len) in place. */
void pc_hex_upper(char *s, size_t len);
/* A newly allocated normalised copy of the family entry s[0..len). */
char *pc_family_normalise(const char *s, size_t len);

#endif
