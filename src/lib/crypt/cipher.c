/* SPDX-License-Identifier: BSD-3-Clause */
/* cipher.c -- AES-128/256 in counter mode, as a continuing stream cipher.
 *
 * Design: one EVP_CIPHER_CTX lives inside each crypt_aes_t, set up once
 * with the key and the 16-byte initial counter block (a 128-bit big-endian
 * counter, as in NIST SP 800-38A and Tor's relay crypto). OpenSSL's CTR
 * mode remembers its position inside a partial block, so successive
 * crypt_aes_crypt() calls of any lengths produce one continuous keystream,
 * and each call is a single EVP_EncryptUpdate() with no allocation. The
 * cipher object itself comes from the shared table (crypt_algs_()), so
 * crypt_aes_new() does not fetch by name either. A failure of
 * EVP_EncryptUpdate() on a correctly set-up CTR context would be a library
 * bug; we abort rather than return unencrypted data.
 */
#include <limits.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "lib/crypt/cipher.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct crypt_aes_t {
  EVP_CIPHER_CTX *ctx;
};

crypt_aes_t *
crypt_aes_new(const uint8_t *key, int key_bits, const uint8_t *iv)
{
  static const uint8_t zero_iv[16];
  const crypt_algs_t *a = crypt_algs_();
  const EVP_CIPHER *cipher;
  crypt_aes_t *c;

  if (key_bits == 128) {
    cipher = a->aes128_ctr;
  } else if (key_bits == 256) {
    cipher = a->aes256_ctr;
  } else {
    log_err("AES key size %d is not 128 or 256", key_bits);
    abort();
  }
  c = pc_zalloc(sizeof(*c));
  c->ctx = EVP_CIPHER_CTX_new();
  if (!c->ctx)
    crypt_fatal_("AES context");
  if (EVP_EncryptInit_ex2(c->ctx, cipher, key, iv ? iv : zero_iv, NULL) != 1)
    crypt_fatal_("AES-CTR init");
  return c;
}

void
crypt_aes_crypt(crypt_aes_t *c, uint8_t *out, const uint8_t *in, size_t n)
{
  while (n > 0) {
    int chunk = n > (INT_MAX & ~15) ? (INT_MAX & ~15) : (int)n;
    int outl = 0;
    if (EVP_EncryptUpdate(c->ctx, out, &outl, in, chunk) != 1 ||
        outl != chunk)
      crypt_fatal_("AES-CTR");
    out += chunk;
    in += chunk;
    n -= (size_t)chunk;
  }
}

void
crypt_aes_free_(crypt_aes_t *c)
{
  if (!c)
    return;
  EVP_CIPHER_CTX_free(c->ctx); /* cleanses the key schedule */
  free(c);
}
