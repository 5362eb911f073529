/* SPDX-License-Identifier: BSD-3-Clause */
/* base16.c -- hexadecimal encoding (see base16.h).
 *
 * Plain loops over nibbles; the decoder maps each character with explicit
 * range checks so that only 0-9, A-F and a-f are accepted.
 */
#include "lib/encoding/base16.h"

#include <limits.h>

long
base16_encode(char *dest, size_t destlen, const uint8_t *src, size_t srclen,
              int lettercase)
{
  if (srclen > (size_t)(LONG_MAX / 2) || destlen <= srclen * 2)
    return BASE16_ERR_SPACE;
  const char *digits =
    lettercase == BASE16_LOWER ? "0123456789abcdef" : "0123456789ABCDEF";
  for (size_t i = 0; i < srclen; i++) {
    dest[2 * i] = digits[src[i] >> 4];
    dest[2 * i + 1] = digits[src[i] & 15];
  }
  dest[2 * srclen] = '\0';
  return (long)(2 * srclen);
}

int
base16_digit_value(int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

long
base16_decode(uint8_t *dest, size_t destlen, const char *src, size_t srclen)
{
  if (srclen % 2)
    return BASE16_ERR_INVALID;
  if (destlen < srclen / 2 || srclen / 2 > (size_t)LONG_MAX)
    return BASE16_ERR_SPACE;
  for (size_t i = 0; i < srclen; i += 2) {
    int hi = base16_digit_value(src[i]), lo = base16_digit_value(src[i + 1]);
    if (hi < 0 || lo < 0)
      return BASE16_ERR_INVALID;
    dest[i / 2] = (uint8_t)((hi << 4) | lo);
  }
  return (long)(srclen / 2);
}
