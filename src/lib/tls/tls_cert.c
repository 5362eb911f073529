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
