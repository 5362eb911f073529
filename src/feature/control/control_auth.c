/* SPDX-License-Identifier: BSD-3-Clause */
/* control_auth.c -- control-port authentication secrets (control_auth.h).
 *
 * The S2K loop feeds SHA-1 with salt||password repeatedly, cutting the
 * last copy so that exactly count bytes are hashed (or the whole of
 * salt||password once when that is longer than count), as RFC 4880
 * describes; the hash is compared in constant time. Secrets in temporary
 * buffers are wiped before they are freed.
 */
#include "feature/control/control_auth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"

#define HASH_HEX_LEN ((CONTROL_S2K_SALT_LEN + 1 + DIGEST_SHA1_LEN) * 2)

static const char server_key[] =
    "Tor safe cookie authentication server-to-controller hash";
static const char client_key[] =
    "Tor safe cookie authentication controller-to-server hash";

int
control_auth_memeq(const void *a, const void *b, size_t n)
{
  const uint8_t *x = a, *y = b;
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++)
    d |= x[i] ^ y[i];
  return d == 0;
}

static void
s2k(uint8_t out[DIGEST_SHA1_LEN], const uint8_t salt[CONTROL_S2K_SALT_LEN],
    uint8_t spec, const char *password, size_t len)
{
  size_t count = (size_t)(16 + (spec & 15)) << ((spec >> 4) + 6);
  size_t tlen = CONTROL_S2K_SALT_LEN + len;
  uint8_t *tmp = pc_malloc(tlen);
  memcpy(tmp, salt, CONTROL_S2K_SALT_LEN);
  memcpy(tmp + CONTROL_S2K_SALT_LEN, password, len);
  if (count < tlen)
    count = tlen;
  crypt_digest_t *d = crypt_digest_new(DIGEST_ALG_SHA1);
  while (count > 0) {
    size_t n = count < tlen ? count : tlen;
    crypt_digest_add(d, tmp, n);
    count -= n;
  }
  crypt_digest_peek(d, out, DIGEST_SHA1_LEN);
  crypt_digest_free(d);
  pc_memwipe(tmp, tlen);
  free(tmp);
}

char *
control_auth_hash_password(const char *password, size_t len,
                           const uint8_t salt[CONTROL_S2K_SALT_LEN])
{
  uint8_t raw[CONTROL_S2K_SALT_LEN + 1 + DIGEST_SHA1_LEN];
  memcpy(raw, salt, CONTROL_S2K_SALT_LEN);
  raw[CONTROL_S2K_SALT_LEN] = CONTROL_S2K_COUNT_SPEC;
  s2k(raw + CONTROL_S2K_SALT_LEN + 1, salt, CONTROL_S2K_COUNT_SPEC, password,
      len);
  char *out = pc_malloc(3 + HASH_HEX_LEN + 1);
  memcpy(out, "16:", 3);
  base16_encode(out + 3, HASH_HEX_LEN + 1, raw, sizeof(raw), BASE16_UPPER);
  return out;
}

static int
hash_decode(const char *s, uint8_t raw[CONTROL_S2K_SALT_LEN + 1 +
                                       DIGEST_SHA1_LEN])
{
  if (strncmp(s, "16:", 3) || strlen(s + 3) != HASH_HEX_LEN)
    return -1;
  if (base16_decode(raw, CONTROL_S2K_SALT_LEN + 1 + DIGEST_SHA1_LEN, s + 3,
                    HASH_HEX_LEN) != CONTROL_S2K_SALT_LEN + 1 +
                                         DIGEST_SHA1_LEN)
    return -1;
  return 0;
}

int
control_auth_hash_is_valid(const char *s)
{
  uint8_t raw[CONTROL_S2K_SALT_LEN + 1 + DIGEST_SHA1_LEN];
  return hash_decode(s, raw) == 0;
}

int
control_auth_check_password(const char *hashed, const char *password,
                            size_t len)
{
  uint8_t raw[CONTROL_S2K_SALT_LEN + 1 + DIGEST_SHA1_LEN];
  uint8_t got[DIGEST_SHA1_LEN];
  if (hash_decode(hashed, raw) < 0)
    return -1;
  s2k(got, raw, raw[CONTROL_S2K_SALT_LEN], password, len);
  int ok = control_auth_memeq(got, raw + CONTROL_S2K_SALT_LEN + 1,
                              DIGEST_SHA1_LEN);
  pc_memwipe(got, sizeof(got));
  return ok;
}

void
control_auth_safecookie(const uint8_t cookie[CONTROL_COOKIE_LEN],
                        const uint8_t *client_nonce, size_t cn_len,
                        const uint8_t server_nonce[CONTROL_NONCE_LEN],
                        uint8_t server_hash[32], uint8_t client_hash[32])
{
  size_t n = CONTROL_COOKIE_LEN + cn_len + CONTROL_NONCE_LEN;
  uint8_t *m = pc_malloc(n);
  memcpy(m, cookie, CONTROL_COOKIE_LEN);
  memcpy(m + CONTROL_COOKIE_LEN, client_nonce, cn_len);
  memcpy(m + CONTROL_COOKIE_LEN + cn_len, server_nonce, CONTROL_NONCE_LEN);
  crypt_hmac_sha256(server_hash, server_key, strlen(server_key), m, n);
  crypt_hmac_sha256(client_hash, client_key, strlen(client_key), m, n);
  pc_memwipe(m, n);
  free(m);
}

int
control_auth_write_cookie(const char *path, int group_readable,
                          uint8_t cookie_out[CONTROL_COOKIE_LEN],
                          char **err_out)
{
  crypt_rand(cookie_out, CONTROL_COOKIE_LEN);
  int r = fs_write_file_atomic(path, cookie_out, CONTROL_COOKIE_LEN,
                               group_readable ? 0640 : 0600);
  if (r < 0) {
    *err_out = pc_asprintf("cannot write the authentication cookie to %s: "
                           "%s", path, strerror(-r));
    return -1;
  }
  return 0;
}
