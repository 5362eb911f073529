/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519_pem.c -- Ed25519 keys as PKCS#8 / SPKI PEM (see ed25519_pem.h).
 *
 * Design: RFC 8410 fixes the whole DER encoding of an Ed25519 key apart
 * from the 32 key bytes, so encoding is "constant prefix + key" and
 * decoding is "exact length, constant prefix" -- no ASN.1 parser, no
 * OpenSSL object, nothing that could accept a malformed or unexpected
 * structure. The public key of a decoded private key is derived from the
 * seed (ed25519_keypair_from_seed), never taken from the file. Buffers
 * that held secret bytes (the DER, the base64 text) are wiped.
 */
#include "lib/crypt/ed25519_pem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/encoding/base64.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

/* DER up to the key bytes (RFC 8410 sections 4 and 7). */
static const uint8_t pkcs8_prefix[16] = {
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
  0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
};
static const uint8_t spki_prefix[12] = {
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
};

#define PEM_PRIV_LABEL "PRIVATE KEY"
#define PEM_PUB_LABEL "PUBLIC KEY"

/* "-----BEGIN label-----\n" base64 lines "-----END label-----\n". */
static char *
pem_wrap(const char *label, const uint8_t *der, size_t der_len,
         size_t *len_out)
{
  size_t b64len = base64_encoded_len(der_len, BASE64_MULTILINE);
  size_t cap = b64len + 2 * strlen(label) + 40;
  char *out = pc_malloc(cap);
  size_t n = (size_t)snprintf(out, cap, "-----BEGIN %s-----\n", label);
  long w = base64_encode(out + n, cap - n, der, der_len, BASE64_MULTILINE);
  if (w < 0) /* cannot happen: cap covers it */
    abort();
  n += (size_t)w;
  n += (size_t)snprintf(out + n, cap - n, "-----END %s-----\n", label);
  if (len_out)
    *len_out = n;
  return out;
}

static int
is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Find the base64 body of the one PEM block with this label in text.
 * Only whitespace may come before BEGIN and after END. */
static int
pem_unwrap(const char *text, size_t len, const char *label,
           uint8_t *der, size_t der_cap, size_t *der_len, const char **err)
{
  char begin[64], end[64];
  snprintf(begin, sizeof(begin), "-----BEGIN %s-----", label);
  snprintf(end, sizeof(end), "-----END %s-----", label);
  size_t bl = strlen(begin), el = strlen(end);
  size_t i = 0;
  while (i < len && is_space(text[i]))
    i++;
  if (len - i < bl || memcmp(text + i, begin, bl)) {
    *err = "no PEM BEGIN line for this kind of key";
    return -1;
  }
  i += bl;
  size_t j = len;
  while (j > i && is_space(text[j - 1]))
    j--;
  if (j - i < el || memcmp(text + j - el, end, el)) {
    *err = "no matching PEM END line";
    return -1;
  }
  j -= el;
  /* The body must hold nothing but base64 and whitespace: no headers
   * (encrypted keys have "Proc-Type:"), no second block. */
  for (size_t k = i; k < j; k++)
    if (text[k] == '-' || text[k] == ':') {
      *err = "unexpected content in the PEM block";
      return -1;
    }
  long n = base64_decode(der, der_cap, text + i, j - i);
  if (n < 0) {
    *err = n == BASE64_ERR_SPACE ? "PEM block too long for an Ed25519 key"
                                 : "PEM block is not base64";
    return -1;
  }
  *der_len = (size_t)n;
  return 0;
}

char *
ed25519_pem_encode_private(const ed25519_keypair_t *kp, size_t *len_out)
{
  uint8_t der[ED25519_PKCS8_DER_LEN];
  if (kp->expanded_only) {
    /* PKCS#8 holds a seed, which an expanded-only key does not have. */
    log_warn("An expanded-only Ed25519 key has no PKCS#8 form");
    return NULL;
  }
  memcpy(der, pkcs8_prefix, sizeof(pkcs8_prefix));
  memcpy(der + sizeof(pkcs8_prefix), kp->seed, ED25519_SEED_LEN);
  char *pem = pem_wrap(PEM_PRIV_LABEL, der, sizeof(der), len_out);
  pc_memwipe(der, sizeof(der));
  return pem;
}

char *
ed25519_pem_encode_public(const uint8_t pub[ED25519_PUBKEY_LEN])
{
  uint8_t der[ED25519_SPKI_DER_LEN];
  memcpy(der, spki_prefix, sizeof(spki_prefix));
  memcpy(der + sizeof(spki_prefix), pub, ED25519_PUBKEY_LEN);
  return pem_wrap(PEM_PUB_LABEL, der, sizeof(der), NULL);
}

int
ed25519_pem_decode_private(const char *pem, size_t len,
                           ed25519_keypair_t *kp, const char **err)
{
  const char *dummy;
  uint8_t der[ED25519_PKCS8_DER_LEN + 16];
  size_t n = 0;
  int r = -1;
  if (!err)
    err = &dummy;
  if (pem_unwrap(pem, len, PEM_PRIV_LABEL, der, sizeof(der), &n, err) < 0)
    goto out;
  if (n != ED25519_PKCS8_DER_LEN ||
      memcmp(der, pkcs8_prefix, sizeof(pkcs8_prefix))) {
    *err = "not an RFC 8410 Ed25519 PKCS#8 private key";
    goto out;
  }
  if (ed25519_keypair_from_seed(kp, der + sizeof(pkcs8_prefix)) < 0) {
    *err = "cannot derive the public key";
    goto out;
  }
  r = 0;
out:
  pc_memwipe(der, sizeof(der));
  return r;
}

int
ed25519_pem_decode_public(const char *pem, size_t len,
                          uint8_t pub[ED25519_PUBKEY_LEN], const char **err)
{
  const char *dummy;
  uint8_t der[ED25519_SPKI_DER_LEN + 16];
  size_t n = 0;
  if (!err)
    err = &dummy;
  if (pem_unwrap(pem, len, PEM_PUB_LABEL, der, sizeof(der), &n, err) < 0)
    return -1;
  if (n != ED25519_SPKI_DER_LEN ||
      memcmp(der, spki_prefix, sizeof(spki_prefix))) {
    *err = "not an RFC 8410 Ed25519 public key";
    return -1;
  }
  memcpy(pub, der + sizeof(spki_prefix), ED25519_PUBKEY_LEN);
  return 0;
}
