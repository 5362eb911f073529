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

/* Per-connection operations shared by tls.c (TLS over TCP) and dtls.c
 * (DTLS over UDP), which both sit on an SSL object. */
#include <openssl/ssl.h>
#include "lib/tls/tls.h"
/* The certificate and key of a context made by tls_context_new(), for a
 * DTLS context that must present the same link certificate. */
SSL_CTX *tls_context_ssl_ctx_(const tls_context_t *ctx);
/* What every pctor SSL_CTX (TLS and DTLS) shares: no session cache, no
 * X.509 verification by OpenSSL (peers prove who they are with the link
 * protocol's CERTS and AUTHENTICATE, not with certificate chains),
 * read-ahead, and cert with its key installed and checked against each
 * other. 0, or -1 with the reason on OpenSSL's error queue. */
int tls_ctx_set_identity_(SSL_CTX *ctx, X509 *cert, EVP_PKEY *pkey);
/* DER of the peer's / our certificate into a new buffer; -1 if none. */
int tls_ssl_peer_cert_der_(const SSL *ssl, uint8_t **der, size_t *len);
int tls_ssl_own_cert_der_(const SSL *ssl, uint8_t **der, size_t *len);
/* RFC 5705 exporter (context NULL: no context); on failure -1 with the
 * reason in err. */
int tls_ssl_export_key_(SSL *ssl, uint8_t *out, size_t outlen,
                        const char *label, const uint8_t *context,
                        size_t contextlen, char *err, size_t errlen);
/* Clear OpenSSL's error queue if it is not empty (cheap when it is). */
void tls_clear_errors_(void);
/* Move OpenSSL's first queued error (or dflt) into err, clearing the
 * queue. */
void tls_take_error_(char *err, size_t errlen, const char *dflt);
#endif
