/* SPDX-License-Identifier: BSD-3-Clause */
/* torcert.h -- Tor's Ed25519 certificates and the RSA->Ed25519
 * cross-certificate (cert-spec.txt), and the certificate types of the
 * CERTS cell (tor-spec 4.2).
 *
 * An Ed25519 certificate is
 *   VERSION[1]=1 CERT_TYPE[1] EXPIRATION[4, hours since the epoch]
 *   CERT_KEY_TYPE[1] CERTIFIED_KEY[32] N_EXTENSIONS[1]
 *   N x (ExtLength[2] ExtType[1] ExtFlags[1] ExtData[ExtLength])
 *   SIGNATURE[64]  (Ed25519 over every preceding byte, no prefix)
 * Parsing checks structure only (and rejects unknown extensions flagged
 * AFFECTS_VALIDATION); torcert_checksig() checks the signature and expiry.
 * A parsed torcert_t keeps a copy of its encoding, which is both what the
 * signature covers and what a CERTS cell resends.
 *
 * The cross-certificate (CERTS type 7) is
 *   ED25519_KEY[32] EXPIRATION[4, hours] SIGLEN[1] SIGNATURE[SIGLEN]
 * where SIGNATURE is the RSA identity key's PKCS#1 v1.5 signature (no
 * DigestInfo) of SHA-256("Tor TLS RSA/Ed25519 cross-certificate" |
 * ED25519_KEY | EXPIRATION).
 *
 * A certificate whose expiration is E hours is valid up to and including
 * second E*3600.
 */
#ifndef PCTOR_CORE_PROTO_TORCERT_H
#define PCTOR_CORE_PROTO_TORCERT_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/crypt/ed25519.h"
#include "lib/crypt/rsa.h"

/* CERTS cell certificate types (tor-spec 4.2). */
enum {
  CERTS_TYPE_RSA_LINK = 1,           /* X.509 link cert, RSA identity */
  CERTS_TYPE_RSA_ID = 2,             /* X.509 RSA identity, self-signed */
  CERTS_TYPE_RSA_AUTH = 3,           /* X.509 RSA AUTHENTICATE cert */
  CERTS_TYPE_ED_ID_SIGNING = 4,      /* Ed25519 identity -> signing key */
  CERTS_TYPE_ED_SIGNING_LINK = 5,    /* signing key -> TLS link cert */
  CERTS_TYPE_ED_SIGNING_AUTH = 6,    /* signing key -> AUTHENTICATE key */
  CERTS_TYPE_RSA_ED_CROSSCERT = 7,   /* RSA identity -> Ed25519 identity */
};
/* "RSA_ID", "ED_ID_SIGNING"... or "UNKNOWN". */
const char *certs_type_name(uint8_t type);

/* CERT_TYPE values of Ed25519 certificates (cert-spec A.1). */
enum {
  TORCERT_TYPE_ID_SIGNING = 0x04,
  TORCERT_TYPE_SIGNING_LINK = 0x05,
  TORCERT_TYPE_SIGNING_AUTH = 0x06,
  TORCERT_TYPE_HS_DESC_SIGNING = 0x08,
  TORCERT_TYPE_HS_INTRO_AUTH = 0x09,
  TORCERT_TYPE_NTOR_CROSSCERT = 0x0A,
  TORCERT_TYPE_HS_NTOR_ENC = 0x0B,
  TORCERT_TYPE_FAMILY_V_IDENTITY = 0x0C, /* family key -> relay identity */
};
/* CERT_KEY_TYPE values (cert-spec A.4). Older tors put 1 everywhere, so
 * readers should infer the kind of key from CERT_TYPE. */
enum {
  TORCERT_KEY_ED25519 = 0x01,
  TORCERT_KEY_SHA256_RSA = 0x02,
  TORCERT_KEY_SHA256_X509 = 0x03,
};
#define TORCERT_EXT_SIGNED_WITH_KEY 0x04
#define TORCERT_EXT_FLAG_AFFECTS_VALIDATION 0x01

#define TORCERT_VERSION 1
#define TORCERT_KEY_LEN 32
/* Smallest encoding: fixed header (40 bytes incl. N_EXTENSIONS) + sig. */
#define TORCERT_HEADER_LEN 40
#define TORCERT_MIN_LEN (TORCERT_HEADER_LEN + ED25519_SIG_LEN)

/* Error codes (all negative). */
#define TORCERT_ERR_MALFORMED (-1)
#define TORCERT_ERR_UNKNOWN_EXT (-2)    /* unknown AFFECTS_VALIDATION ext */
#define TORCERT_ERR_NO_KEY (-3)         /* no signing key given or included */
#define TORCERT_ERR_KEY_MISMATCH (-4)   /* included key != expected key */
#define TORCERT_ERR_EXPIRED (-5)
#define TORCERT_ERR_BAD_SIG (-6)
const char *torcert_strerror(int err);

typedef struct torcert_t {
  uint8_t cert_type;
  uint32_t expiration_hours;
  uint8_t key_type;
  uint8_t certified_key[TORCERT_KEY_LEN];
  uint8_t n_extensions;
  int signing_key_included; /* extension type 4 was present */
  uint8_t signing_key[ED25519_PUBKEY_LEN];
  uint8_t signature[ED25519_SIG_LEN];
  uint8_t *encoded; /* owned copy of the whole certificate */
  size_t encoded_len;
} torcert_t;

/* Parse len bytes (exactly one certificate, no trailing bytes) into a new
 * *out. Returns 0, TORCERT_ERR_MALFORMED, or TORCERT_ERR_UNKNOWN_EXT. */
int torcert_parse(const uint8_t *in, size_t len, torcert_t **out);
/* Check c: signed by signing_key (or, if NULL, by the key in its type-4
 * extension; if both are present they must be equal) and, if now != 0,
 * not expired at now. 0 or a TORCERT_ERR_* code. */
int torcert_checksig(const torcert_t *c, const uint8_t *signing_key,
                     time_t now);
/* Seconds since the epoch after which c is no longer valid. */
time_t torcert_expires(const torcert_t *c);
int torcert_is_expired(const torcert_t *c, time_t now);

/* New certificate of cert_type certifying certified_key (key_type),
 * signed by signer, expiring at `expires` rounded up to the next hour;
 * with include_signing_key, signer's public key goes in a type-4
 * extension (required for CERTS type 4). Never NULL unless signing
 * fails. */
torcert_t *torcert_create(const ed25519_keypair_t *signer, uint8_t cert_type,
                          uint8_t key_type,
                          const uint8_t certified_key[TORCERT_KEY_LEN],
                          time_t expires, int include_signing_key);
torcert_t *torcert_dup(const torcert_t *c);
/* Same encoding. */
int torcert_eq(const torcert_t *a, const torcert_t *b);
void torcert_free_(torcert_t *c);
#define torcert_free(c) do { torcert_free_(c); (c) = NULL; } while (0)

/* ---- RSA->Ed25519 cross-certificate (CERTS type 7) ---- */
#define RSA_ED_CROSSCERT_PREFIX "Tor TLS RSA/Ed25519 cross-certificate"
#define RSA_ED_CROSSCERT_SIGNED_LEN 36 /* ED25519_KEY | EXPIRATION */

typedef struct rsa_ed_crosscert_t {
  uint8_t ed_key[ED25519_PUBKEY_LEN];
  uint32_t expiration_hours;
  uint8_t sig_len;
  uint8_t sig[255];
} rsa_ed_crosscert_t;

/* Parse exactly len bytes; -1 if truncated, SIGLEN is 0, or bytes trail. */
int rsa_ed_crosscert_parse(rsa_ed_crosscert_t *out, const uint8_t *in,
                           size_t len);
/* Certify ed_key with rsa_id (a private key of at most 2040 bits),
 * expiring at `expires` rounded up to the next hour. *out is new, *outlen
 * its length. 0 or -1. */
int rsa_ed_crosscert_create(const uint8_t ed_key[ED25519_PUBKEY_LEN],
                            const crypt_rsa_t *rsa_id, time_t expires,
                            uint8_t **out, size_t *outlen);
/* 0 if in is a cross-certificate of ed_key by rsa_id's public key, not
 * expired at now (skipped if now == 0). TORCERT_ERR_MALFORMED,
 * TORCERT_ERR_KEY_MISMATCH, TORCERT_ERR_EXPIRED or TORCERT_ERR_BAD_SIG. */
int rsa_ed_crosscert_check(const uint8_t *in, size_t len,
                           const crypt_rsa_t *rsa_id,
                           const uint8_t ed_key[ED25519_PUBKEY_LEN],
                           time_t now);
#endif
