/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_cert.c -- X.509 building blocks shared inside src/lib/tls (see
 * tls_cert.h).
 *
 * Certificates are minimal, like the ones Tor relays present: version 3,
 * random positive 64-bit serial, a single commonName in subject and issuer,
 * no extensions, SHA-256 signature. Parsing insists that the DER is exactly
 * one certificate (no trailing bytes), so a certificate's digest is a
 * well-defined function of what the peer sent.
 */
#include "lib/tls/tls_cert.h"

#include <limits.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

static int
set_cn(X509_NAME *name, const char *cn)
{
  return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    (const unsigned char *)cn, -1, -1, 0);
}

X509 *
tls_cert_make_self_signed_(EVP_PKEY *pkey, const char *cn, time_t not_before,
                           time_t not_after)
{
  X509 *x = X509_new();
  X509_NAME *name = X509_NAME_new();
  BIGNUM *serial = BN_new();
  unsigned char sbytes[8];
  int ok = 0;

  if (!x || !name || !serial)
    goto done;
  if (RAND_bytes(sbytes, sizeof(sbytes)) != 1)
    goto done;
  sbytes[0] &= 0x7f; /* positive */
  sbytes[0] |= 0x01; /* and of a fixed length */
  if (!BN_bin2bn(sbytes, sizeof(sbytes), serial) ||
      !BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)))
    goto done;
  if (!X509_set_version(x, 2) || !set_cn(name, cn) ||
      !X509_set_subject_name(x, name) || !X509_set_issuer_name(x, name) ||
      !ASN1_TIME_set(X509_getm_notBefore(x), not_before) ||
      !ASN1_TIME_set(X509_getm_notAfter(x), not_after) ||
      !X509_set_pubkey(x, pkey))
    goto done;
  if (X509_sign(x, pkey, EVP_sha256()) <= 0)
    goto done;
  ok = 1;
done:
  if (!ok) {
    unsigned long e = ERR_peek_last_error();
    log_warn("cannot build a self-signed certificate: %s",
             e ? ERR_reason_error_string(e) : "unknown error");
    ERR_clear_error();
    X509_free(x);
    x = NULL;
  }
  X509_NAME_free(name);
  BN_free(serial);
  return x;
}

int
tls_cert_to_der_(X509 *x, uint8_t **der, size_t *len)
{
  int n = i2d_X509(x, NULL);
  if (n <= 0)
    return -1;
  uint8_t *buf = pc_malloc((size_t)n);
  unsigned char *p = buf;
  if (i2d_X509(x, &p) != n) {
    free(buf);
    return -1;
  }
  *der = buf;
  *len = (size_t)n;
  return 0;
}

X509 *
tls_cert_from_der_(const uint8_t *der, size_t len)
{
  if (!der || len == 0 || len > INT_MAX)
    return NULL;
  const unsigned char *p = der;
  X509 *x = d2i_X509(NULL, &p, (long)len);
  if (!x || p != der + len) {
    X509_free(x);
    ERR_clear_error();
    return NULL;
  }
  return x;
}

/* ---- per-connection operations shared by tls.c and dtls.c ---- */

int
tls_ssl_peer_cert_der_(const SSL *ssl, uint8_t **der, size_t *len)
{
  X509 *x = SSL_get1_peer_certificate(ssl);
  if (!x)
    return -1;
  int r = tls_cert_to_der_(x, der, len);
  X509_free(x);
  return r;
}

int
tls_ctx_set_identity_(SSL_CTX *ctx, X509 *cert, EVP_PKEY *pkey)
{
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  SSL_CTX_set_read_ahead(ctx, 1);
  if (SSL_CTX_use_certificate(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, pkey) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    return -1;
  return 0;
}

int
tls_ssl_own_cert_der_(const SSL *ssl, uint8_t **der, size_t *len)
{
  X509 *x = SSL_get_certificate(ssl); /* borrowed */
  if (!x)
    return -1;
  return tls_cert_to_der_(x, der, len);
}

void
tls_clear_errors_(void)
{
  if (ERR_peek_error())
    ERR_clear_error();
}

void
tls_take_error_(char *err, size_t errlen, const char *dflt)
{
  unsigned long e = ERR_get_error();
  if (e)
    ERR_error_string_n(e, err, errlen);
  else
    snprintf(err, errlen, "%s", dflt);
  ERR_clear_error();
}

int
tls_ssl_export_key_(SSL *ssl, uint8_t *out, size_t outlen, const char *label,
                    const uint8_t *context, size_t contextlen, char *err,
                    size_t errlen)
{
  tls_clear_errors_();
  if (SSL_export_keying_material(ssl, out, outlen, label, strlen(label),
                                 context, contextlen, context != NULL) != 1) {
    tls_take_error_(err, errlen, "keying material exporter failed");
    return -1;
  }
  return 0;
}
