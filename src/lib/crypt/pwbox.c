/* SPDX-License-Identifier: BSD-3-Clause */
/* pwbox.c -- tor's "TORBOX00" passphrase boxes (format in pwbox.h).
 *
 * Design: the box is parsed by offsets into the caller's buffer (no
 * copies of the ciphertext), the MAC is checked in constant time before
 * anything is decrypted, and the plaintext length field is checked
 * against the body before it is used. The derived keys live on the stack
 * and are wiped on every path. scrypt and PBKDF2 come from OpenSSL
 * (EVP_PBE_scrypt, PKCS5_PBKDF2_HMAC_SHA1) with their work bounded first;
 * the RFC 2440 S2K is lib/crypt/s2k's, the one control passwords use.
 */
#include "lib/crypt/pwbox.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/kdf.h"
#include "lib/crypt/rand.h"
#include "lib/crypt/s2k.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define MAGIC "TORBOX00"
#define MAGIC_LEN 8
#define IV_LEN 16
#define MAC_LEN 32
#define BLOCK 128
#define KEYS_LEN 48 /* AES-128 key, then the HMAC key */

#define S2K_RFC2440 0
#define S2K_PBKDF2 1
#define S2K_SCRYPT 2

/* Largest scrypt memory (128 * r * N), PBKDF2 iteration count and RFC
 * 2440 count byte accepted: tor's own parameters (N = 2^15, r = 8: 32
 * MiB; 2^17 iterations; 0x60, 64 KiB hashed) with room to spare. */
#define SCRYPT_MAX_MEM ((uint64_t)64 << 20)
#define PBKDF2_MAX_LOG 20
#define RFC2440_MAX_COUNT_BYTE 0x9f /* about 1 MiB hashed */

/* Derive the 48 key bytes from spec (type byte first, or 9 bytes of a
 * type-0 specifier without it). 0, or -1 with *why. */
static int
derive_keys(uint8_t keys[KEYS_LEN], const uint8_t *spec, size_t spec_len,
            const char *pw, size_t pwlen, const char **why)
{
  int type;
  if (spec_len == S2K_SALT_LEN + 1) {
    type = S2K_RFC2440;
  } else if (spec_len >= 1) {
    type = spec[0];
    spec++;
    spec_len--;
  } else {
    *why = "empty key-derivation specifier";
    return -1;
  }
  switch (type) {
  case S2K_RFC2440: {
    if (spec_len != S2K_SALT_LEN + 1) {
      *why = "bad RFC 2440 specifier length";
      return -1;
    }
    if (spec[S2K_SALT_LEN] > RFC2440_MAX_COUNT_BYTE) {
      *why = "RFC 2440 count out of bounds";
      return -1;
    }
    uint8_t d[20];
    crypt_s2k_sha1(d, spec, spec[S2K_SALT_LEN], pw, pwlen);
    int r = crypt_hkdf_sha256(keys, KEYS_LEN, d, sizeof(d), spec,
                              S2K_SALT_LEN, (const uint8_t *)"EXPAND", 6);
    pc_memwipe(d, sizeof(d));
    if (r < 0) {
      *why = "HKDF failed";
      return -1;
    }
    return 0;
  }
  case S2K_PBKDF2: {
    if (spec_len != 17 || spec[16] > PBKDF2_MAX_LOG) {
      *why = "bad PBKDF2 specifier";
      return -1;
    }
    if (PKCS5_PBKDF2_HMAC_SHA1(pw, (int)pwlen, spec, 16, 1 << spec[16],
                               KEYS_LEN, keys) != 1) {
      *why = "PBKDF2 failed";
      return -1;
    }
    return 0;
  }
  case S2K_SCRYPT: {
    if (spec_len != 18) {
      *why = "bad scrypt specifier length";
      return -1;
    }
    unsigned log_n = spec[16], log_r = spec[17] >> 4, log_p = spec[17] & 15;
    if (log_n < 1 || log_n > 30 || log_r > 10 || log_p > 4 ||
        ((uint64_t)128 << (log_n + log_r)) > SCRYPT_MAX_MEM) {
      *why = "scrypt parameters out of bounds";
      return -1;
    }
    if (EVP_PBE_scrypt(pw, pwlen, spec, 16, (uint64_t)1 << log_n,
                       (uint64_t)1 << log_r, (uint64_t)1 << log_p,
                       SCRYPT_MAX_MEM + ((uint64_t)1 << 20), keys,
                       KEYS_LEN) != 1) {
      *why = "scrypt failed";
      return -1;
    }
    return 0;
  }
  default:
    *why = "unknown key-derivation type";
    return -1;
  }
}

int
crypt_pwbox_seal(uint8_t **out, size_t *outlen, const uint8_t *in,
                 size_t len, const char *passphrase, size_t pwlen)
{
  const char *why = NULL;
  if (len > PWBOX_MAX_LEN)
    return -1;
  size_t body = BLOCK * ((len + 4 + BLOCK - 1) / BLOCK);
  const size_t spec_len = 1 + S2K_SALT_LEN + 1;
  size_t total = MAGIC_LEN + 1 + spec_len + IV_LEN + body + MAC_LEN;
  uint8_t *b = pc_zalloc(total), *p = b;
  memcpy(p, MAGIC, MAGIC_LEN);
  p += MAGIC_LEN;
  *p++ = (uint8_t)spec_len;
  uint8_t *spec = p;
  spec[0] = S2K_RFC2440;
  crypt_rand(spec + 1, S2K_SALT_LEN);
  spec[1 + S2K_SALT_LEN] = S2K_TOR_COUNT_BYTE;
  p += spec_len;
  uint8_t *iv = p;
  crypt_rand(iv, IV_LEN);
  p += IV_LEN;
  set_u32(p, (uint32_t)len);
  memcpy(p + 4, in, len);
  uint8_t keys[KEYS_LEN];
  if (derive_keys(keys, spec, spec_len, passphrase, pwlen, &why) < 0) {
    pc_memwipe(b, total);
    free(b);
    return -1;
  }
  crypt_aes_t *c = crypt_aes_new(keys, 128, iv);
  crypt_aes_crypt(c, p, p, body);
  crypt_aes_free(c);
  p += body;
  crypt_hmac_sha256(p, keys + 16, KEYS_LEN - 16, b, (size_t)(p - b));
  pc_memwipe(keys, sizeof(keys));
  *out = b;
  *outlen = total;
  return 0;
}

int
crypt_pwbox_open(uint8_t **out, size_t *outlen, const uint8_t *box,
                 size_t boxlen, const char *passphrase, size_t pwlen,
                 const char **why)
{
  const char *dummy;
  if (!why)
    why = &dummy;
  *out = NULL;
  *outlen = 0;
  if (boxlen > PWBOX_MAX_LEN) {
    *why = "too large";
    return PWBOX_CORRUPT;
  }
  if (boxlen < MAGIC_LEN + 1 || memcmp(box, MAGIC, MAGIC_LEN) != 0) {
    *why = "not a TORBOX00 box";
    return PWBOX_CORRUPT;
  }
  size_t spec_len = box[MAGIC_LEN];
  size_t off = MAGIC_LEN + 1;
  if (boxlen < off + spec_len + IV_LEN + MAC_LEN) {
    *why = "truncated";
    return PWBOX_CORRUPT;
  }
  const uint8_t *spec = box + off;
  const uint8_t *iv = spec + spec_len;
  const uint8_t *body = iv + IV_LEN;
  size_t body_len = boxlen - off - spec_len - IV_LEN - MAC_LEN;
  if (body_len < 4) {
    *why = "no encrypted length";
    return PWBOX_CORRUPT;
  }
  uint8_t keys[KEYS_LEN], mac[MAC_LEN];
  if (derive_keys(keys, spec, spec_len, passphrase, pwlen, why) < 0)
    return PWBOX_CORRUPT;
  crypt_hmac_sha256(mac, keys + 16, KEYS_LEN - 16, box, boxlen - MAC_LEN);
  if (CRYPTO_memcmp(mac, box + boxlen - MAC_LEN, MAC_LEN) != 0) {
    pc_memwipe(keys, sizeof(keys));
    *why = "wrong passphrase (or a corrupt file)";
    return PWBOX_BAD_PASSPHRASE;
  }
  uint8_t *plain = pc_malloc(body_len);
  crypt_aes_t *c = crypt_aes_new(keys, 128, iv);
  crypt_aes_crypt(c, plain, body, body_len);
  crypt_aes_free(c);
  pc_memwipe(keys, sizeof(keys));
  uint32_t n = get_u32(plain);
  if (n > body_len - 4) {
    pc_memwipe(plain, body_len);
    free(plain);
    *why = "plaintext length exceeds the box";
    return PWBOX_CORRUPT;
  }
  memmove(plain, plain + 4, n);
  pc_memwipe(plain + n, body_len - n);
  *out = plain;
  *outlen = n;
  return PWBOX_OK;
}
