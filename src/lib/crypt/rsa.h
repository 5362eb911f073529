/* SPDX-License-Identifier: BSD-3-Clause */
/* rsa.h -- RSA keys as Tor still needs them (1024-bit identity and TAP
 * onion keys, link certificates).
 *
 * Public keys travel as PKCS#1 RSAPublicKey DER; a relay's RSA identity
 * (its "fingerprint") is the SHA-1 of that DER. Tor's RSA signatures are
 * PKCS#1 v1.5 padding applied directly to the data (a digest), with no
 * DigestInfo: crypt_rsa_sign_raw()/crypt_rsa_verify_raw().
 * crypt_rsa_sign_sha256() is the ordinary RSASSA-PKCS1-v1_5 with SHA-256
 * (used by X.509 certificates only).
 */
#ifndef PCTOR_LIB_CRYPT_RSA_H
#define PCTOR_LIB_CRYPT_RSA_H
#include <stddef.h>
#include <stdint.h>

#define RSA1024_BITS 1024
#define RSA1024_SIG_LEN 128

typedef struct crypt_rsa_t crypt_rsa_t;

/* Generate a new key of the given size (1024 for Tor identities).
 * Never returns NULL. */
crypt_rsa_t *crypt_rsa_generate(int bits);
/* Parse a PKCS#1 RSAPublicKey DER; NULL if malformed or trailing bytes. */
crypt_rsa_t *crypt_rsa_from_public_der(const uint8_t *der, size_t len);
/* Parse a PKCS#1 RSAPrivateKey DER; NULL if malformed. */
crypt_rsa_t *crypt_rsa_from_private_der(const uint8_t *der, size_t len);
/* Parse a PEM "RSA PUBLIC KEY" / "RSA PRIVATE KEY" block. */
crypt_rsa_t *crypt_rsa_from_pem(const char *pem, size_t len, int is_private);
/* Encode as DER into a new buffer (*out, *outlen); returns 0 or -1. */
int crypt_rsa_public_der(const crypt_rsa_t *k, uint8_t **out,
                         size_t *outlen);
int crypt_rsa_private_der(const crypt_rsa_t *k, uint8_t **out,
                          size_t *outlen);
/* PEM "-----BEGIN RSA PUBLIC KEY-----" text (as in Tor descriptors),
 * newly allocated, NUL-terminated. */
char *crypt_rsa_public_pem(const crypt_rsa_t *k);
int crypt_rsa_bits(const crypt_rsa_t *k);
int crypt_rsa_has_private(const crypt_rsa_t *k);
/* SHA-1 of the public DER: the Tor RSA identity / fingerprint. */
int crypt_rsa_fingerprint(const crypt_rsa_t *k, uint8_t out[20]);
/* PKCS#1 v1.5 type-1 padding over data (no DigestInfo), private-key
 * operation. sig must hold crypt_rsa_bits()/8 bytes; *siglen set. */
int crypt_rsa_sign_raw(const crypt_rsa_t *k, const uint8_t *data,
                       size_t len, uint8_t *sig, size_t *siglen);
/* Public-key operation on sig; 0 if it unpads to exactly data. */
int crypt_rsa_verify_raw(const crypt_rsa_t *k, const uint8_t *data,
                         size_t len, const uint8_t *sig, size_t siglen);
/* Ordinary RSASSA-PKCS1-v1_5 with SHA-256 over msg (DigestInfo included),
 * for X.509 certificates. sig must hold crypt_rsa_bits()/8 bytes. */
int crypt_rsa_sign_sha256(const crypt_rsa_t *k, const uint8_t *msg,
                          size_t len, uint8_t *sig, size_t *siglen);
/* 0 if sig is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of msg. */
int crypt_rsa_verify_sha256(const crypt_rsa_t *k, const uint8_t *msg,
                            size_t len, const uint8_t *sig, size_t siglen);
/* Equality of public parts. */
int crypt_rsa_public_eq(const crypt_rsa_t *a, const crypt_rsa_t *b);
crypt_rsa_t *crypt_rsa_dup(const crypt_rsa_t *k);
void crypt_rsa_free_(crypt_rsa_t *k);
#define crypt_rsa_free(k) do { crypt_rsa_free_(k); (k) = NULL; } while (0)
/* For src/lib/tls only: the underlying EVP_PKEY * (borrowed). */
void *crypt_rsa_evp_pkey_(const crypt_rsa_t *k);
#endif
