/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_linkcells.c -- fuzz target: the cells of the link handshake.
 *
 * Input: what the peer sends from the start of a connection: a VERSIONS
 * cell (2-byte circuit ID), then cells with 4-byte circuit IDs. Every
 * VERSIONS, CERTS, AUTH_CHALLENGE, AUTHENTICATE and NETINFO cell goes to
 * its parser, and so does each certificate inside CERTS (Ed25519
 * certificates, the RSA->Ed25519 cross-certificate, the X.509 ones through
 * OpenSSL) and the AUTH0003 body inside AUTHENTICATE.
 *
 * Not the state machine: channel_hs.c needs a live TLS channel
 * (core/or/channel_internal.h) to run, so the order of the cells is not
 * checked here -- the per-cell checks it does (check_certs) are static.
 * Bound: a CERTS cell's certificates are parsed into copies (torcert_t,
 * OpenSSL's RSA key); OpenSSL's decoding of tor's X.509 identity
 * certificate alone peaks at ~100 KB (one per CERTS cell: a type may
 * appear once): 256 KiB + 16 bytes per input byte.
 */
#include "fuzz.h"

#include "core/proto/cell.h"
#include "core/proto/linkcells.h"
#include "core/proto/torcert.h"
#include "lib/tls/x509.h"

#include <stdlib.h>

static const uint16_t ours[] = {3, 4, 5};

static void
parse_certs(const uint8_t *p, size_t len)
{
  certs_cell_t *cc = malloc(sizeof(*cc));
  if (!cc)
    abort();
  if (certs_cell_parse(cc, p, len) == 0) {
    for (unsigned i = 0; i < cc->n_certs; i++) {
      const certs_entry_t *e = &cc->certs[i];
      (void)certs_type_name(e->type);
      if (e->type >= CERTS_TYPE_ED_ID_SIGNING &&
          e->type <= CERTS_TYPE_ED_SIGNING_AUTH) {
        torcert_t *c = NULL;
        if (torcert_parse(e->body, e->len, &c) == 0) {
          (void)torcert_expires(c);
          torcert_free(c);
        }
      } else if (e->type == CERTS_TYPE_RSA_ED_CROSSCERT) {
        rsa_ed_crosscert_t x;
        (void)rsa_ed_crosscert_parse(&x, e->body, e->len);
      } else if (e->type == CERTS_TYPE_RSA_ID) {
        crypt_rsa_t *k = x509_get_rsa_key(e->body, e->len);
        crypt_rsa_free(k);
      }
    }
  }
  free(cc);
}

static void
parse_var(const var_cell_t *vc)
{
  uint16_t v[64];
  size_t nv = 0;
  auth_challenge_t ac;
  uint16_t at;
  const uint8_t *auth;
  size_t alen;
  auth3_t a3;
  switch (vc->command) {
  case CELL_VERSIONS:
    (void)versions_cell_parse(vc->payload, vc->payload_len, v, 64, &nv);
    (void)versions_highest_common(vc->payload, vc->payload_len, ours, 3);
    break;
  case CELL_CERTS:
    parse_certs(vc->payload, vc->payload_len);
    break;
  case CELL_AUTH_CHALLENGE:
    if (auth_challenge_parse(&ac, vc->payload, vc->payload_len) == 0)
      (void)auth_challenge_has_method(&ac, AUTHTYPE_ED25519_SHA256_RFC5705);
    break;
  case CELL_AUTHENTICATE:
    if (authenticate_cell_parse(vc->payload, vc->payload_len, &at, &auth,
                                &alen) == 0 &&
        at == AUTHTYPE_ED25519_SHA256_RFC5705)
      (void)auth3_parse(&a3, auth, alen);
    break;
  default:
    break;
  }
}

static void
run(const uint8_t *data, size_t len)
{
  int proto = 3; /* VERSIONS always has a 2-byte circuit ID */
  for (;;) {
    size_t hdr = cell_circid_len(proto);
    if (len <= hdr)
      return;
    if (cell_command_is_var(data[hdr])) {
      var_cell_t *vc = NULL;
      size_t used = 0;
      if (var_cell_fetch(data, len, proto, &vc, &used) <= 0 || !vc)
        return;
      parse_var(vc);
      var_cell_free(vc);
      data += used;
      len -= used;
    } else {
      size_t n = cell_network_len(proto);
      if (len < n)
        return;
      cell_t c;
      cell_unpack(&c, data, proto);
      if (c.command == CELL_NETINFO) {
        netinfo_t ni;
        (void)netinfo_parse(&ni, c.payload, CELL_PAYLOAD_LEN);
      }
      data += n;
      len -= n;
    }
    proto = 4;
  }
}

const fuzz_target_t fuzz_target = {
  .name = "linkcells", .run = run, .amp_factor = 16,
  .amp_slack = 256 * 1024,
};
