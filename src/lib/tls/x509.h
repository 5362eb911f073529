/* SPDX-License-Identifier: BSD-3-Clause */
/* x509.h -- the few X.509 operations Tor's link handshake still needs:
 * the self-signed RSA-1024 identity certificate (CERTS type 2) and
 * reading the RSA key out of a peer's certificate. */
#ifndef PCTOR_LIB_TLS_X509_H
#define PCTOR_LIB_TLS_X509_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "lib/crypt/rsa.h"

/* Self-signed certificate for key (subject = issuer = cn), valid
 * [not_before, not_after], signed with SHA-256. New buffer in *der. */
int x509_make_self_signed(const crypt_rsa_t *key, const char *cn,
                          time_t not_before, time_t not_after,
                          uint8_t **der, size_t *derlen);
/* The RSA public key in a certificate; NULL if not RSA or malformed. */
crypt_rsa_t *x509_get_rsa_key(const uint8_t *der, size_t len);
/* 0 if the certificate is signed by its own key and valid at now
 * (with slack seconds of tolerance either side). */
int x509_check_self_signed(const uint8_t *der, size_t len, time_t now,
                           long slack);
#endif
