/* SPDX-License-Identifier: BSD-3-Clause */
/* x509.c -- the X.509 operations of Tor's link handshake (see x509.h).
 *
 * The RSA identity certificate (CERTS cell type 2) is a self-signed X.509
 * certificate over the relay's RSA-1024 identity key; its key comes from
 * lib/crypt (crypt_rsa_evp_pkey_() gives the EVP_PKEY). Keys read out of a
 * peer's certificate go back to lib/crypt as PKCS#1 RSAPublicKey DER
 * (i2d_PublicKey() of an RSA key is exactly that encoding), so the caller
 * gets the same crypt_rsa_t it would from a descriptor and can compute the
 * fingerprint from it. All parsers reject trailing bytes after the
 * certificate.
 */
#include "lib/tls/x509.h"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include "lib/log/log.h"
#include "lib/tls/tls_cert.h"

int
x509_make_self_signed(const crypt_rsa_t *key, const char *cn,
                      time_t not_before, time_t not_after, uint8_t **der,
                      size_t *derlen)
{
  EVP_PKEY *pkey = crypt_rsa_evp_pkey_(key);
  if (!pkey || !crypt_rsa_has_private(key) || not_after < not_before)
    return -1;
  X509 *x = tls_cert_make_self_signed_(pkey, cn, not_before, not_after);
  if (!x)
    return -1;
  int r = tls_cert_to_der_(x, der, derlen);
  X509_free(x);
  return r;
}

crypt_rsa_t *
x509_get_rsa_key(const uint8_t *der, size_t len)
{
  X509 *x = tls_cert_from_der_(der, len);
  crypt_rsa_t *k = NULL;
  unsigned char *pk_der = NULL;
  if (!x)
    return NULL;
  EVP_PKEY *pkey = X509_get0_pubkey(x);
  if (!pkey || !EVP_PKEY_is_a(pkey, "RSA"))
    goto done;
  int n = i2d_PublicKey(pkey, &pk_der);
  if (n <= 0)
    goto done;
  k = crypt_rsa_from_public_der(pk_der, (size_t)n);
done:
  OPENSSL_free(pk_der);
  X509_free(x);
  ERR_clear_error();
  return k;
}

int
x509_check_self_signed(const uint8_t *der, size_t len, time_t now, long slack)
{
  X509 *x = tls_cert_from_der_(der, len);
  int r = -1;
  if (!x) {
    log_info("X.509: malformed certificate");
    return -1;
  }
  EVP_PKEY *pkey = X509_get0_pubkey(x);
  if (!pkey || X509_verify(x, pkey) != 1) {
    log_info("X.509: certificate is not signed by its own key");
    goto done;
  }
  /* not_before <= now + slack and not_after >= now - slack. */
  int c1 = ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), now + slack);
  int c2 = ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), now - slack);
  if (c1 == -2 || c2 == -2) {
    log_info("X.509: unreadable validity period");
    goto done;
  }
  if (c1 > 0) {
    log_info("X.509: certificate is not yet valid");
    goto done;
  }
  if (c2 < 0) {
    log_info("X.509: certificate has expired");
    goto done;
  }
  r = 0;
done:
  X509_free(x);
  ERR_clear_error();
  return r;
}
