/* SPDX-License-Identifier: BSD-3-Clause */
/* base16.h -- hexadecimal (RFC 4648 base16) encoding and decoding.
 *
 * Tor shows relay fingerprints and digests in upper-case hex; some other
 * places (control port, logs) use lower case. The encoder takes the case
 * as an argument; the decoder accepts both cases (even mixed), and
 * rejects odd lengths and any other character, including whitespace.
 */
#ifndef PCTOR_LIB_ENCODING_BASE16_H
#define PCTOR_LIB_ENCODING_BASE16_H

#include <stddef.h>
#include <stdint.h>

/* Letter case for base16_encode(). */
#define BASE16_UPPER 0
#define BASE16_LOWER 1

/* Errors. */
#define BASE16_ERR_INVALID (-1) /* not hex */
#define BASE16_ERR_SPACE (-2)   /* destination too small */

/* Encode srclen bytes as 2 * srclen hex digits plus a NUL into dest
 * (destlen >= 2 * srclen + 1). Returns the number of characters written
 * (2 * srclen), or BASE16_ERR_SPACE (writing nothing) if destlen is too
 * small. lettercase is BASE16_UPPER or BASE16_LOWER. */
long base16_encode(char *dest, size_t destlen, const uint8_t *src,
                   size_t srclen, int lettercase);

/* Decode srclen hex digits (either case; need not be NUL-terminated) into
 * srclen / 2 bytes at dest. Returns the number of bytes written,
 * BASE16_ERR_INVALID if srclen is odd or a character is not a hex digit,
 * or BASE16_ERR_SPACE if destlen < srclen / 2. On error the contents of
 * dest are unspecified (but nothing past destlen is written). */
long base16_decode(uint8_t *dest, size_t destlen, const char *src,
                   size_t srclen);

/* The value (0-15) of the hex digit c (either case), or -1 for any other
 * character (including EOF). */
int base16_digit_value(int c);

#endif
