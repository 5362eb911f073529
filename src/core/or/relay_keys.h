/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_keys.h -- the key material the protocol spine needs, as plain data.
 *
 * core/ does not create, store or rotate keys: feature/relay does that and
 * hands core a filled relay_keys_t (core_set_relay_keys() in channel.h).
 * The link handshake sends the certificates below in CERTS cells and signs
 * AUTHENTICATE with the link authentication key; CREATE2 handling uses the
 * ntor keys. A process without relay keys (a pure client) passes NULL.
 *
 * All encoded certificates are exactly the bytes that go into a CERTS cell.
 */
#ifndef PCTOR_CORE_OR_RELAY_KEYS_H
#define PCTOR_CORE_OR_RELAY_KEYS_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "lib/crypt/curve25519.h"
#include "lib/crypt/ed25519.h"
#include "lib/crypt/rsa.h"
#include "lib/tls/tls.h"

typedef struct relay_keys_t {
  /* RSA-1024 identity (legacy, still required by tor 0.4.9). */
  crypt_rsa_t *rsa_identity;
  uint8_t rsa_id_digest[20];        /* SHA-1 of the public key DER */
  uint8_t *rsa_id_cert;             /* CERTS type 2: self-signed X.509 */
  size_t rsa_id_cert_len;
  uint8_t *rsa_ed_crosscert;        /* CERTS type 7: RSA id -> ed25519 id */
  size_t rsa_ed_crosscert_len;

  /* Ed25519 identity ("master") and medium-term signing key. */
  ed25519_keypair_t ed_identity;
  ed25519_keypair_t ed_signing;
  uint8_t *ed_signing_cert;         /* CERTS type 4: identity -> signing */
  size_t ed_signing_cert_len;
  time_t ed_signing_expires;

  /* Link keys: the TLS context whose certificate the type-5 cert binds,
   * and the link authentication key (type 6) for AUTHENTICATE. */
  tls_context_t *tls;
  uint8_t *tls_link_cert;           /* CERTS type 5: signing -> TLS cert */
  size_t tls_link_cert_len;
  ed25519_keypair_t ed_link_auth;
  uint8_t *ed_auth_cert;            /* CERTS type 6: signing -> auth key */
  size_t ed_auth_cert_len;

  /* RSA-1024 TAP onion key. pctor refuses TAP handshakes, but directory
   * authorities still require an onion-key (and its crosscert) in every
   * server descriptor; it rotates together with the ntor key. */
  crypt_rsa_t *tap_onion_key;

  /* ntor onion keys: current, and the previous one during its grace
   * period (has_ntor_previous). */
  curve25519_keypair_t ntor_current;
  curve25519_keypair_t ntor_previous;
  int has_ntor_previous;
} relay_keys_t;

#endif
