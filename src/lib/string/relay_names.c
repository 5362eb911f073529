/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_names.c -- nicknames, hex fingerprints and family entries (see
 * relay_names.h). ASCII tests by hand rather than <ctype.h>, so that the
 * answers never depend on the locale. */
#include "lib/string/relay_names.h"

#include "lib/malloc/alloc.h"

static int
is_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

static int
is_hex_digit(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

int
pc_nickname_ok(const char *s, size_t len)
{
  if (len < 1 || len > PC_NICKNAME_MAX_LEN)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_alnum(s[i]))
      return 0;
  return 1;
}

int
pc_hex_ok(const char *s, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (!is_hex_digit(s[i]))
      return 0;
  return 1;
}

int
pc_fingerprint_entry_ok(const char *s, size_t len)
{
  return len >= 41 && s[0] == '$' && pc_hex_ok(s + 1, 40) &&
         (len == 41 || s[41] == '=' || s[41] == '~');
}

void
pc_hex_upper(char *s, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (s[i] >= 'a' && s[i] <= 'f')
      s[i] = (char)(s[i] - 'a' + 'A');
}

char *
pc_family_normalise(const char *s, size_t len)
{
  if (pc_fingerprint_entry_ok(s, len)) {
    char *out = pc_strndup(s, 41);
    pc_hex_upper(out + 1, 40);
    return out;
  }
  char *out = pc_strndup(s, len);
  if (pc_nickname_ok(s, len))
    for (size_t i = 0; i < len; i++)
      if (out[i] >= 'A' && out[i] <= 'Z')
        out[i] = (char)(out[i] - 'A' + 'a');
  return out;
}
