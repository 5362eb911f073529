/* SPDX-License-Identifier: BSD-3-Clause */
/* link_auth.h -- the certificate side of relay authentication, shared by
 * the TLS link handshake (channel_hs.c) and the datagram links
 * (feature/dgram), which authenticate relays with the same chain:
 *
 *   CERTS type 2  RSA-1024 identity, self-signed X.509
 *   CERTS type 4  Ed25519 identity -> signing key
 *   CERTS type 5  signing key -> SHA-256 of the (D)TLS certificate
 *                 (responder), or
 *   CERTS type 6  signing key -> link authentication key (initiator,
 *                 who then signs an AUTHENTICATE body with it)
 *   CERTS type 7  RSA identity -> Ed25519 identity cross-certificate
 *
 * link_certs_check() is the one place these are verified; what is then
 * bound to the session (TLS certificate, RFC 5705 exporter, transcripts)
 * is the caller's job, since it differs between TLS and DTLS.
 */
#ifndef PCTOR_CORE_OR_LINK_AUTH_H
#define PCTOR_CORE_OR_LINK_AUTH_H
#include <stdint.h>
#include <time.h>

#include "core/or/relay_keys.h"
#include "core/proto/cell.h"
#include "core/proto/linkcells.h"
#include "lib/crypt/rsa.h"

/* Clock skew tolerated on certificate validity. */
#define LINK_CERT_SLACK_SEC (2 * 24 * 3600)

/* Verified identity material from a CERTS cell. */
typedef struct link_certs_result_t {
  crypt_rsa_t *rsa;       /* RSA identity key (owned by the caller) */
  uint8_t rsa_id[20];     /* SHA-1 of its DER */
  uint8_t rsa_sha256[32]; /* SHA-256 of its DER (CID/SID) */
  uint8_t ed_id[32];
  uint8_t third_key[32];  /* type 5: TLS cert digest; type 6: auth key */
} link_certs_result_t;

/* Check the certificates a peer presented (tor-spec 4.2) at time now:
 * types 2, 4, third_type (CERTS_TYPE_ED_SIGNING_LINK or
 * CERTS_TYPE_ED_SIGNING_AUTH) and 7. 0 and *res filled (free res->rsa),
 * or -1 with *why set. */
int link_certs_check(const certs_cell_t *cc, uint8_t third_type, time_t now,
                     link_certs_result_t *res, const char **why);

/* A CERTS cell with our certificates: 2, 4, 7 and 5 (as_responder) or 6.
 * -1 if they do not fit. */
int link_certs_build(const relay_keys_t *k, int as_responder,
                     var_cell_t **out);

/* SHA-256 of the DER of an RSA public key (CID/SID); 0 or -1. */
int link_rsa_sha256(const crypt_rsa_t *rsa, uint8_t out[32]);
#endif
