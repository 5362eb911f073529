/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_keycert.h -- directory authority key certificates (dir-spec 3.1).
 *
 * An authority's long-term RSA identity key (its v3ident is the SHA-1 of
 * that key) certifies a medium-term signing key, which is what signs
 * consensuses. A certificate is accepted only if it is well formed, its
 * "fingerprint" matches the identity key, the identity key signed it
 * ("dir-key-certification") and the signing key cross-signed the identity
 * ("dir-key-crosscert"): all of that is checked while parsing. Validity
 * in time depends on "now" and is checked separately.
 */
#ifndef PCTOR_FEATURE_DIR_DIR_KEYCERT_H
#define PCTOR_FEATURE_DIR_DIR_KEYCERT_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/crypt/rsa.h"
#include "lib/address/address.h"

/* Key sizes accepted (identity and signing keys). */
#define DIR_KEYCERT_MIN_BITS 1024
#define DIR_KEYCERT_MAX_BITS 4096
/* A certificate published this far in the future is refused. */
#define DIR_KEYCERT_FUTURE_SKEW (24 * 60 * 60)

typedef struct dir_keycert_t {
  uint8_t id_digest[20];          /* v3ident: SHA-1 of the identity key */
  uint8_t signing_key_digest[20]; /* SHA-1 of the signing key */
  crypt_rsa_t *identity_key;
  crypt_rsa_t *signing_key;
  time_t published, expires;
  int has_dir_addr;
  pc_addr_t dir_addr;
  char *text; /* the certificate as received, NUL-terminated */
  size_t text_len;
} dir_keycert_t;

/* Parse and verify one certificate at the start of s (len bytes, leading
 * blank lines allowed); *consumed gets the bytes used. Returns 0 and a
 * new *out, or -1 with *err (allocated message; free it). */
int dir_keycert_parse(const char *s, size_t len, dir_keycert_t **out,
                      size_t *consumed, char **err);
/* Parse every certificate in s (as served at /tor/keys/all). Good ones
 * are appended to *certs (an array grown with pc_realloc; *n updated);
 * each bad one is logged and skipped. Returns the number of certificates
 * that failed, or -1 (with *err, the last problem) if not one good
 * certificate was found. */
int dir_keycert_parse_all(const char *s, size_t len, dir_keycert_t ***certs,
                          int *n, char **err);
/* 0 if the certificate may be used at time now; -1 with *err if expired
 * or published too far in the future. */
int dir_keycert_check_time(const dir_keycert_t *c, time_t now, char **err);
void dir_keycert_free_(dir_keycert_t *c);
#define dir_keycert_free(c)                                                   \
  do {                                                                        \
    dir_keycert_free_(c);                                                     \
    (c) = NULL;                                                               \
  } while (0)
#endif
