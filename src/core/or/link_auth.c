/* SPDX-License-Identifier: BSD-3-Clause */
/* link_auth.c -- verifying and building the relay certificate chain (see
 * link_auth.h). The checks run in chain order and stop at the first
 * failure with a reason; nothing is kept but the identities and the third
 * certificate's key. */
#include "core/or/link_auth.h"
#include "core/proto/torcert.h"
#include "lib/crypt/digest.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/x509.h"

#include <stdlib.h>
#include <string.h>

int
link_certs_check(const certs_cell_t *cc, uint8_t third_type, time_t now,
                 link_certs_result_t *res, const char **why)
{
  const certs_entry_t *c2 = certs_cell_find(cc, CERTS_TYPE_RSA_ID);
  const certs_entry_t *c4 = certs_cell_find(cc, CERTS_TYPE_ED_ID_SIGNING);
  const certs_entry_t *c3 = certs_cell_find(cc, third_type);
  const certs_entry_t *c7 = certs_cell_find(cc, CERTS_TYPE_RSA_ED_CROSSCERT);
  torcert_t *t4 = NULL, *t3 = NULL;
  int ok = -1;
  memset(res, 0, sizeof(*res));
  if (!c2 || !c4 || !c3 || !c7) {
    *why = "CERTS cell lacks a required certificate";
    return -1;
  }
  if (x509_check_self_signed(c2->body, c2->len, now, LINK_CERT_SLACK_SEC) < 0) {
    *why = "RSA identity certificate is not validly self-signed or expired";
    return -1;
  }
  res->rsa = x509_get_rsa_key(c2->body, c2->len);
  if (!res->rsa || crypt_rsa_bits(res->rsa) != 1024) {
    *why = "RSA identity key is not a 1024-bit RSA key";
    goto out;
  }
  uint8_t *der = NULL;
  size_t derlen = 0;
  if (crypt_rsa_public_der(res->rsa, &der, &derlen) < 0) {
    *why = "cannot encode RSA identity";
    goto out;
  }
  crypt_sha1(res->rsa_id, der, derlen);
  crypt_sha256(res->rsa_sha256, der, derlen);
  free(der);

  int r = torcert_parse(c4->body, c4->len, &t4);
  if (r < 0 || t4->cert_type != TORCERT_TYPE_ID_SIGNING ||
      t4->key_type != TORCERT_KEY_ED25519 || !t4->signing_key_included) {
    *why = "malformed Ed25519 identity->signing certificate";
    goto out;
  }
  if ((r = torcert_checksig(t4, t4->signing_key, now)) < 0) {
    *why = "Ed25519 identity->signing certificate does not verify";
    goto out;
  }
  memcpy(res->ed_id, t4->signing_key, 32);

  uint8_t want_type = third_type == CERTS_TYPE_ED_SIGNING_LINK
                          ? TORCERT_TYPE_SIGNING_LINK
                          : TORCERT_TYPE_SIGNING_AUTH;
  r = torcert_parse(c3->body, c3->len, &t3);
  if (r < 0 || t3->cert_type != want_type) {
    *why = "malformed Ed25519 signing->link/auth certificate";
    goto out;
  }
  if (torcert_checksig(t3, t4->certified_key, now) < 0) {
    *why = "Ed25519 signing->link/auth certificate does not verify";
    goto out;
  }
  memcpy(res->third_key, t3->certified_key, 32);

  if (rsa_ed_crosscert_check(c7->body, c7->len, res->rsa, res->ed_id, now) <
      0) {
    *why = "RSA->Ed25519 cross-certificate does not verify";
    goto out;
  }
  ok = 0;
out:
  torcert_free(t4);
  torcert_free(t3);
  if (ok < 0)
    crypt_rsa_free(res->rsa);
  return ok;
}


int
link_certs_build(const relay_keys_t *k, int as_responder, var_cell_t **out)
{
  certs_cell_t cc;
  memset(&cc, 0, sizeof(cc));
  certs_cell_add(&cc, CERTS_TYPE_RSA_ID, k->rsa_id_cert, k->rsa_id_cert_len);
  certs_cell_add(&cc, CERTS_TYPE_ED_ID_SIGNING, k->ed_signing_cert,
                 k->ed_signing_cert_len);
  if (as_responder)
    certs_cell_add(&cc, CERTS_TYPE_ED_SIGNING_LINK, k->tls_link_cert,
                   k->tls_link_cert_len);
  else
    certs_cell_add(&cc, CERTS_TYPE_ED_SIGNING_AUTH, k->ed_auth_cert,
                   k->ed_auth_cert_len);
  certs_cell_add(&cc, CERTS_TYPE_RSA_ED_CROSSCERT, k->rsa_ed_crosscert,
                 k->rsa_ed_crosscert_len);
  return certs_cell_build(&cc, out);
}

int
link_rsa_sha256(const crypt_rsa_t *rsa, uint8_t out[32])
{
  uint8_t *der = NULL;
  size_t derlen = 0;
  if (crypt_rsa_public_der(rsa, &der, &derlen) < 0)
    return -1;
  crypt_sha256(out, der, derlen);
  free(der);
  return 0;
}
