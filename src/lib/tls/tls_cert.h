/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_cert.h -- internal to src/lib/tls: build and parse X.509
 * certificates over OpenSSL types, shared by tls.c (link certificate) and
 * x509.c (RSA identity certificate). Not for use outside src/lib/tls. */
#ifndef PCTOR_LIB_TLS_TLS_CERT_H
#define PCTOR_LIB_TLS_TLS_CERT_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A version-3 certificate for pkey with subject = issuer = CN cn, a random
 * 64-bit serial, validity [not_before, not_after], self-signed with
 * SHA-256. NULL on failure (logged). */
X509 *tls_cert_make_self_signed_(EVP_PKEY *pkey, const char *cn,
                                 time_t not_before, time_t not_after);
/* DER encoding into a new pc_malloc'ed buffer; -1 on failure. */
int tls_cert_to_der_(X509 *x, uint8_t **der, size_t *len);
/* Parse DER; NULL unless it is exactly one well-formed certificate. */
X509 *tls_cert_from_der_(const uint8_t *der, size_t len);
#endif
