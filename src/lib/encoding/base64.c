/* SPDX-License-Identifier: BSD-3-Clause */
/* base64.c -- RFC 4648 base64 (see base64.h).
 *
 * The encoder works in 3-byte groups and counts output characters to
 * place the optional newlines. The decoder classifies every input
 * character through a constant 256-entry table (6-bit value, whitespace,
 * '=', or invalid), packs four values into three bytes, and handles the final
 * partial group and its padding once the input is exhausted. Every write
 * is preceded by a check against destlen.
 */
#include "lib/encoding/base64.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define LINE_LEN 64

static const char b64_chars[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decoding table: 1 + the 6-bit value for alphabet characters, C_SPACE
 * for whitespace, C_PAD for '=', and 0 (C_BAD) for everything else. */
#define C_BAD 0
#define C_SPACE 65
#define C_PAD 66

static const uint8_t b64_class[256] = {
  ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6,
  ['G'] = 7, ['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12,
  ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18,
  ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
  ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30,
  ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36,
  ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
  ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
  ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54,
  ['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60,
  ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
  [' '] = C_SPACE, ['\t'] = C_SPACE, ['\n'] = C_SPACE, ['\r'] = C_SPACE,
  ['\f'] = C_SPACE, ['\v'] = C_SPACE, ['='] = C_PAD,
};

size_t
base64_encoded_len(size_t srclen, int flags)
{
  if (srclen > SIZE_MAX / 2)
    return SIZE_MAX; /* no buffer can hold it */
  size_t n;
  if (flags & BASE64_NOPAD) {
    static const size_t tail[3] = {0, 2, 3};
    n = srclen / 3 * 4 + tail[srclen % 3];
  } else {
    n = (srclen + 2) / 3 * 4;
  }
  if (flags & BASE64_MULTILINE)
    n += (n + LINE_LEN - 1) / LINE_LEN;
  return n;
}

long
base64_encode(char *dest, size_t destlen, const uint8_t *src, size_t srclen,
              int flags)
{
  size_t need = base64_encoded_len(srclen, flags);
  if (need >= destlen || need > (size_t)LONG_MAX)
    return BASE64_ERR_SPACE;

  char *d = dest;
  size_t col = 0;
  int multiline = (flags & BASE64_MULTILINE) != 0;
#define PUT(c)                                                          \
  do {                                                                  \
    *d++ = (c);                                                         \
    if (multiline && ++col == LINE_LEN) {                               \
      *d++ = '\n';                                                      \
      col = 0;                                                          \
    }                                                                   \
  } while (0)

  size_t i = 0;
  for (; i + 3 <= srclen; i += 3) {
    uint32_t v = ((uint32_t)src[i] << 16) | ((uint32_t)src[i + 1] << 8) |
                 src[i + 2];
    PUT(b64_chars[v >> 18]);
    PUT(b64_chars[(v >> 12) & 63]);
    PUT(b64_chars[(v >> 6) & 63]);
    PUT(b64_chars[v & 63]);
  }
  size_t rest = srclen - i;
  if (rest) {
    uint32_t v = (uint32_t)src[i] << 16;
    if (rest == 2)
      v |= (uint32_t)src[i + 1] << 8;
    PUT(b64_chars[v >> 18]);
    PUT(b64_chars[(v >> 12) & 63]);
    if (rest == 2)
      PUT(b64_chars[(v >> 6) & 63]);
    if (!(flags & BASE64_NOPAD)) {
      PUT('=');
      if (rest == 1)
        PUT('=');
    }
  }
#undef PUT
  if (multiline && col > 0)
    *d++ = '\n';
  *d = '\0';
  return (long)(d - dest);
}

size_t
base64_decoded_len_max(size_t srclen)
{
  static const size_t tail[4] = {0, 0, 1, 2};
  return srclen / 4 * 3 + tail[srclen % 4];
}

long
base64_decode(uint8_t *dest, size_t destlen, const char *src, size_t srclen)
{
  size_t out = 0;
  uint32_t acc = 0;
  int n = 0;       /* values in the current group */
  int n_pad = 0;   /* '=' seen */

  for (size_t i = 0; i < srclen; i++) {
    uint8_t c = b64_class[(uint8_t)src[i]];
    if (c != C_BAD && c <= 64) {
      if (n_pad)
        return BASE64_ERR_INVALID; /* data after padding */
      acc = (acc << 6) | (uint32_t)(c - 1);
      if (++n == 4) {
        if (destlen - out < 3)
          return BASE64_ERR_SPACE;
        dest[out++] = (uint8_t)(acc >> 16);
        dest[out++] = (uint8_t)(acc >> 8);
        dest[out++] = (uint8_t)acc;
        acc = 0;
        n = 0;
      }
    } else if (c == C_SPACE) {
      continue;
    } else if (c == C_PAD) {
      n_pad++;
    } else {
      return BASE64_ERR_INVALID;
    }
  }

  /* The final group: 2 values make one byte ("==" padding), 3 make two
   * ("="); 1 value cannot happen; padding must be absent or complete. */
  switch (n) {
  case 0:
    if (n_pad)
      return BASE64_ERR_INVALID;
    break;
  case 2:
    if (n_pad != 0 && n_pad != 2)
      return BASE64_ERR_INVALID;
    if (destlen - out < 1)
      return BASE64_ERR_SPACE;
    dest[out++] = (uint8_t)(acc >> 4);
    break;
  case 3:
    if (n_pad != 0 && n_pad != 1)
      return BASE64_ERR_INVALID;
    if (destlen - out < 2)
      return BASE64_ERR_SPACE;
    dest[out++] = (uint8_t)(acc >> 10);
    dest[out++] = (uint8_t)(acc >> 2);
    break;
  default:
    return BASE64_ERR_INVALID;
  }
  if (out > (size_t)LONG_MAX)
    return BASE64_ERR_SPACE;
  return (long)out;
}
