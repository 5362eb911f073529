/* SPDX-License-Identifier: BSD-3-Clause */
/* rsa.c -- RSA keys for Tor's legacy identities, TAP onion keys and link
 * certificates.
 *
 * Design: a crypt_rsa_t owns one EVP_PKEY reference plus a has_private
 * flag. Keys are immutable after creation, so crypt_rsa_dup() just takes
 * another reference.
 *
 * Encoding: Tor's wire format is PKCS#1 (RSAPublicKey / RSAPrivateKey),
 * with the fingerprint defined as SHA-1 over the public DER. We use
 * OpenSSL's PKCS#1 codecs (d2i_/i2d_RSAPublicKey, ...), which are
 * deprecated in OpenSSL 3 but over 100 times cheaper than OSSL_DECODER
 * (about 1 us against 125 us per public key here; clients parse thousands
 * of onion keys); deprecation warnings are silenced for this file only.
 * Parsing is strict: the input must be exactly one DER object with no
 * trailing bytes, and must re-encode to the same bytes (so one key has one
 * encoding and one fingerprint; BER variants are refused). Public keys
 * must look like real RSA keys: positive odd modulus of 512..16384 bits
 * (the upper bound keeps a hostile key from costing seconds per
 * operation), odd exponent of 3..64 bits. Private keys also pass
 * RSA_check_key(). The PKCS#1 structures carry no algorithm identifier, so
 * a PKCS#8 or SubjectPublicKeyInfo blob, or any non-RSA key, fails to
 * parse.
 *
 * Signatures: Tor signs by applying PKCS#1 v1.5 type-1 padding directly to
 * the data (usually a digest) without a DigestInfo; that is EVP_PKEY_sign
 * with RSA_PKCS1_PADDING and no signature digest, and its inverse is
 * EVP_PKEY_verify_recover, whose output we compare with the expected data
 * in constant time. OpenSSL blinds private-key operations.
 *
 * PEM: output is "-----BEGIN RSA PUBLIC KEY-----", base64 in 64-column
 * lines, as in Tor descriptors; input goes through OpenSSL's PEM reader,
 * bounded by the given length (text before the BEGIN line and after the
 * END line is ignored); the label must match and carry no encryption
 * headers.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rsa.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define RSA_MIN_BITS 512
#define RSA_MAX_BITS 16384

struct crypt_rsa_t {
  EVP_PKEY *pkey;
  int has_private;
};

static crypt_rsa_t *
rsa_wrap(EVP_PKEY *pkey, int has_private)
{
  crypt_rsa_t *k = pc_zalloc(sizeof(*k));
  k->pkey = pkey;
  k->has_private = has_private;
  return k;
}

crypt_rsa_t *
crypt_rsa_generate(int bits)
{
  EVP_PKEY_CTX *ctx;
  EVP_PKEY *pkey = NULL;
  BIGNUM *e = BN_new();

  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) {
    log_err("refusing to generate a %d-bit RSA key", bits);
    abort();
  }
  ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
  if (!e || !ctx || !BN_set_word(e, RSA_F4) ||
      EVP_PKEY_keygen_init(ctx) != 1 ||
      EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) != 1 ||
      EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx, e) != 1 ||
      EVP_PKEY_generate(ctx, &pkey) != 1)
    crypt_fatal_("RSA key generation");
  EVP_PKEY_CTX_free(ctx);
  BN_free(e);
  return rsa_wrap(pkey, 1);
}

/* Sanity checks on a parsed public key; 0 if acceptable. */
static int
rsa_check_public_parts(const RSA *rsa)
{
  const BIGNUM *n = NULL, *e = NULL;
  int bits;
  RSA_get0_key(rsa, &n, &e, NULL);
  if (!n || !e)
    return -1;
  bits = BN_num_bits(n);
  if (BN_is_negative(n) || !BN_is_odd(n) || bits < RSA_MIN_BITS ||
      bits > RSA_MAX_BITS) {
    log_info("RSA key rejected: bad modulus (%d bits)", bits);
    return -1;
  }
  if (BN_is_negative(e) || !BN_is_odd(e) || BN_is_one(e) ||
      BN_num_bits(e) > 64) {
    log_info("RSA key rejected: bad public exponent");
    return -1;
  }
  return 0;
}

/* Wrap rsa (ownership taken) in a new EVP_PKEY; NULL on failure. */
static EVP_PKEY *
rsa_to_pkey(RSA *rsa)
{
  EVP_PKEY *pkey = EVP_PKEY_new();
  if (!pkey || EVP_PKEY_assign_RSA(pkey, rsa) != 1) {
    EVP_PKEY_free(pkey);
    RSA_free(rsa);
    return NULL;
  }
  return pkey;
}

/* Parse PKCS#1 DER with the d2i/i2d pair of one key kind, refusing what
 * does not round-trip byte for byte (trailing bytes, non-canonical DER)
 * and keys whose public parts are unusable. Private keys are also checked
 * for consistency, and their re-encoding is wiped. */
typedef RSA *(*rsa_d2i_fn)(RSA **, const unsigned char **, long);
typedef int (*rsa_i2d_fn)(const RSA *, unsigned char **);

static crypt_rsa_t *
rsa_from_der(const uint8_t *der, size_t len, int is_private)
{
  const char *what = is_private ? "RSA private key" : "RSA public key";
  rsa_d2i_fn d2i = is_private ? d2i_RSAPrivateKey : d2i_RSAPublicKey;
  rsa_i2d_fn i2d = is_private ? i2d_RSAPrivateKey : i2d_RSAPublicKey;
  const unsigned char *p = der;
  unsigned char *re = NULL;
  RSA *rsa;
  EVP_PKEY *pkey;
  int relen, same;

  if (len == 0 || len > INT_MAX)
    return NULL;
  rsa = d2i(NULL, &p, (long)len);
  if (!rsa) {
    log_info("%s: malformed PKCS#1 DER", what);
    goto bad;
  }
  if ((size_t)(p - der) != len) {
    log_info("%s: %zu trailing bytes after the DER", what,
             len - (size_t)(p - der));
    goto bad;
  }
  relen = i2d(rsa, &re);
  same = relen >= 0 && (size_t)relen == len && memcmp(re, der, len) == 0;
  if (re)
    OPENSSL_clear_free(re, relen > 0 ? (size_t)relen : 0);
  if (!same) {
    log_info("%s: not in canonical DER", what);
    goto bad;
  }
  if (rsa_check_public_parts(rsa) < 0)
    goto bad;
  if (is_private && RSA_check_key(rsa) != 1) {
    log_info("%s: inconsistent key components", what);
    goto bad;
  }
  pkey = rsa_to_pkey(rsa);
  ERR_clear_error();
  return pkey ? rsa_wrap(pkey, is_private) : NULL;
 bad:
  RSA_free(rsa);
  ERR_clear_error();
  return NULL;
}

crypt_rsa_t *
crypt_rsa_from_public_der(const uint8_t *der, size_t len)
{
  return rsa_from_der(der, len, 0);
}

crypt_rsa_t *
crypt_rsa_from_private_der(const uint8_t *der, size_t len)
{
  return rsa_from_der(der, len, 1);
}

crypt_rsa_t *
crypt_rsa_from_pem(const char *pem, size_t len, int is_private)
{
  const char *want = is_private ? "RSA PRIVATE KEY" : "RSA PUBLIC KEY";
  char *name = NULL, *header = NULL;
  unsigned char *data = NULL;
  long dlen = 0;
  crypt_rsa_t *k = NULL;
  BIO *bio;

  if (len == 0 || len > INT_MAX)
    return NULL;
  bio = BIO_new_mem_buf(pem, (int)len);
  if (!bio)
    crypt_fatal_("BIO_new_mem_buf");
  if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
    log_info("PEM: no well-formed %s block", want);
    goto done;
  }
  if (strcmp(name, want) != 0) {
    log_info("PEM: found \"%s\" where \"%s\" was expected", name, want);
    goto done;
  }
  if (header && header[0]) {
    log_info("PEM: %s has headers (encrypted keys are not supported)", want);
    goto done;
  }
  if (is_private)
    k = crypt_rsa_from_private_der(data, (size_t)dlen);
  else
    k = crypt_rsa_from_public_der(data, (size_t)dlen);
 done:
  if (data)
    OPENSSL_clear_free(data, (size_t)dlen);
  OPENSSL_free(name);
  OPENSSL_free(header);
  BIO_free(bio);
  ERR_clear_error();
  return k;
}

int
crypt_rsa_public_der(const crypt_rsa_t *k, uint8_t **out, size_t *outlen)
{
  const RSA *rsa = EVP_PKEY_get0_RSA(k->pkey);
  unsigned char *p;
  int n;

  *out = NULL;
  *outlen = 0;
  if (!rsa || (n = i2d_RSAPublicKey(rsa, NULL)) <= 0) {
    crypt_log_openssl_errors_("RSA public key encoding");
    return -1;
  }
  *out = pc_malloc((size_t)n);
  p = *out;
  if (i2d_RSAPublicKey(rsa, &p) != n) {
    crypt_log_openssl_errors_("RSA public key encoding");
    PC_FREE(*out);
    return -1;
  }
  *outlen = (size_t)n;
  return 0;
}

int
crypt_rsa_private_der(const crypt_rsa_t *k, uint8_t **out, size_t *outlen)
{
  const RSA *rsa = EVP_PKEY_get0_RSA(k->pkey);
  unsigned char *p;
  int n;

  *out = NULL;
  *outlen = 0;
  if (!k->has_private) {
    log_warn("asked for the private DER of a public-only RSA key");
    return -1;
  }
  if (!rsa || (n = i2d_RSAPrivateKey(rsa, NULL)) <= 0) {
    crypt_log_openssl_errors_("RSA private key encoding");
    return -1;
  }
  *out = pc_malloc((size_t)n);
  p = *out;
  if (i2d_RSAPrivateKey(rsa, &p) != n) {
    crypt_log_openssl_errors_("RSA private key encoding");
    pc_memwipe(*out, (size_t)n);
    PC_FREE(*out);
    return -1;
  }
  *outlen = (size_t)n;
  return 0;
}

char *
crypt_rsa_public_pem(const crypt_rsa_t *k)
{
  static const char begin[] = "-----BEGIN RSA PUBLIC KEY-----\n";
  static const char end[] = "-----END RSA PUBLIC KEY-----\n";
  uint8_t *der;
  size_t derlen, nlines, cap, pos = 0;
  char *s;

  if (crypt_rsa_public_der(k, &der, &derlen) < 0)
    return NULL;
  /* 48 input bytes make one 64-character line. */
  nlines = (derlen + 47) / 48;
  cap = sizeof(begin) + nlines * 65 + sizeof(end) + 1;
  s = pc_malloc(cap);
  memcpy(s, begin, sizeof(begin) - 1);
  pos = sizeof(begin) - 1;
  for (size_t off = 0; off < derlen; off += 48) {
    size_t chunk = derlen - off < 48 ? derlen - off : 48;
    int w = EVP_EncodeBlock((unsigned char *)s + pos, der + off, (int)chunk);
    pos += (size_t)w;
    s[pos++] = '\n';
  }
  memcpy(s + pos, end, sizeof(end)); /* includes the NUL */
  free(der);
  return s;
}

int
crypt_rsa_bits(const crypt_rsa_t *k)
{
  return EVP_PKEY_get_bits(k->pkey);
}

int
crypt_rsa_has_private(const crypt_rsa_t *k)
{
  return k->has_private;
}

int
crypt_rsa_fingerprint(const crypt_rsa_t *k, uint8_t out[20])
{
  uint8_t *der;
  size_t len;
  if (crypt_rsa_public_der(k, &der, &len) < 0)
    return -1;
  crypt_sha1(out, der, len);
  free(der);
  return 0;
}

int
crypt_rsa_sign_raw(const crypt_rsa_t *k, const uint8_t *data, size_t len,
                   uint8_t *sig, size_t *siglen)
{
  EVP_PKEY_CTX *ctx;
  size_t outlen = (size_t)EVP_PKEY_get_size(k->pkey);
  int r = -1;

  *siglen = 0;
  if (!k->has_private) {
    log_warn("cannot sign with a public-only RSA key");
    return -1;
  }
  ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL);
  if (ctx && EVP_PKEY_sign_init(ctx) == 1 &&
      EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 &&
      EVP_PKEY_sign(ctx, sig, &outlen, data, len) == 1) {
    *siglen = outlen;
    r = 0;
  } else {
    crypt_log_openssl_errors_("RSA sign");
  }
  EVP_PKEY_CTX_free(ctx);
  return r;
}

int
crypt_rsa_verify_raw(const crypt_rsa_t *k, const uint8_t *data, size_t len,
                     const uint8_t *sig, size_t siglen)
{
  EVP_PKEY_CTX *ctx;
  uint8_t buf[RSA_MAX_BITS / 8];
  size_t keylen = (size_t)EVP_PKEY_get_size(k->pkey);
  size_t outlen = sizeof(buf);
  int r = -1;

  if (siglen != keylen || keylen > sizeof(buf))
    return -1;
  ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL);
  if (ctx && EVP_PKEY_verify_recover_init(ctx) == 1 &&
      EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 &&
      EVP_PKEY_verify_recover(ctx, buf, &outlen, sig, siglen) == 1 &&
      outlen == len && !pc_memneq(buf, data, len))
    r = 0;
  ERR_clear_error();
  EVP_PKEY_CTX_free(ctx);
  return r;
}

int
crypt_rsa_sign_sha256(const crypt_rsa_t *k, const uint8_t *msg, size_t len,
                      uint8_t *sig, size_t *siglen)
{
  EVP_MD_CTX *ctx;
  EVP_PKEY_CTX *pctx = NULL;
  size_t outlen = (size_t)EVP_PKEY_get_size(k->pkey);
  int r = -1;

  *siglen = 0;
  if (!k->has_private) {
    log_warn("cannot sign with a public-only RSA key");
    return -1;
  }
  ctx = EVP_MD_CTX_new();
  if (ctx &&
      EVP_DigestSignInit_ex(ctx, &pctx, "SHA256", NULL, NULL, k->pkey,
                            NULL) == 1 &&
      EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1 &&
      EVP_DigestSign(ctx, sig, &outlen, msg, len) == 1) {
    *siglen = outlen;
    r = 0;
  } else {
    crypt_log_openssl_errors_("RSA-SHA256 sign");
  }
  EVP_MD_CTX_free(ctx);
  return r;
}

int
crypt_rsa_verify_sha256(const crypt_rsa_t *k, const uint8_t *msg,
                        size_t len, const uint8_t *sig, size_t siglen)
{
  EVP_MD_CTX *ctx;
  EVP_PKEY_CTX *pctx = NULL;
  int r = -1;

  if (siglen != (size_t)EVP_PKEY_get_size(k->pkey))
    return -1;
  ctx = EVP_MD_CTX_new();
  if (ctx &&
      EVP_DigestVerifyInit_ex(ctx, &pctx, "SHA256", NULL, NULL, k->pkey,
                              NULL) == 1 &&
      EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1 &&
      EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1)
    r = 0;
  ERR_clear_error();
  EVP_MD_CTX_free(ctx);
  return r;
}

int
crypt_rsa_public_eq(const crypt_rsa_t *a, const crypt_rsa_t *b)
{
  int r = EVP_PKEY_eq(a->pkey, b->pkey) == 1;
  ERR_clear_error();
  return r;
}

crypt_rsa_t *
crypt_rsa_dup(const crypt_rsa_t *k)
{
  if (EVP_PKEY_up_ref(k->pkey) != 1)
    crypt_fatal_("EVP_PKEY_up_ref");
  return rsa_wrap(k->pkey, k->has_private);
}

void
crypt_rsa_free_(crypt_rsa_t *k)
{
  if (!k)
    return;
  EVP_PKEY_free(k->pkey); /* OpenSSL clears private components */
  free(k);
}

void *
crypt_rsa_evp_pkey_(const crypt_rsa_t *k)
{
  return k->pkey;
}
