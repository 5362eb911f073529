/* SPDX-License-Identifier: BSD-3-Clause */
/* s2k.c -- RFC 2440 iterated+salted S2K with SHA-1 (see s2k.h).
 *
 * The octets to hash are laid out once in a buffer of the counted size
 * (64 KiB for tor's count byte) and hashed in one call, which is simpler
 * than streaming and bounded: the count byte is at most 0xff, about
 * 64 MiB, and callers use 0x60. The buffer is wiped because it holds the
 * secret many times over.
 */
#include "lib/crypt/s2k.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

void
crypt_s2k_sha1(uint8_t out[20], const uint8_t salt[S2K_SALT_LEN], uint8_t c,
               const void *secret, size_t len)
{
  size_t count = (size_t)(16 + (c & 15)) << ((c >> 4) + 6);
  size_t unit = S2K_SALT_LEN + len;
  if (count < unit)
    count = unit;
  uint8_t *buf = pc_malloc(count);
  size_t off = 0;
  while (off < count) {
    size_t n = count - off < S2K_SALT_LEN ? count - off : S2K_SALT_LEN;
    memcpy(buf + off, salt, n);
    off += n;
    n = count - off < len ? count - off : len;
    memcpy(buf + off, secret, n);
    off += n;
  }
  crypt_sha1(out, buf, count);
  pc_memwipe(buf, count);
  free(buf);
}

char *
crypt_hash_password(const char *password, const uint8_t salt[S2K_SALT_LEN])
{
  uint8_t key[S2K_SALT_LEN + 1 + 20];
  if (salt)
    memcpy(key, salt, S2K_SALT_LEN);
  else
    crypt_rand(key, S2K_SALT_LEN);
  key[S2K_SALT_LEN] = S2K_TOR_COUNT_BYTE;
  crypt_s2k_sha1(key + S2K_SALT_LEN + 1, key, S2K_TOR_COUNT_BYTE, password,
                 strlen(password));
  char hex[2 * sizeof(key) + 1];
  base16_encode(hex, sizeof(hex), key, sizeof(key), BASE16_UPPER);
  return pc_asprintf("16:%s", hex);
}
