/* SPDX-License-Identifier: BSD-3-Clause */
/* serverdesc.c -- minimal server-descriptor parsing for
 * UseMicrodescriptors 0 (see serverdesc.h).
 *
 * Design: like microdesc.c, one tokenizer pass finds the descriptor
 * boundaries ("router" items) and a second pass per descriptor extracts
 * the few items a client uses; everything else is skipped. The digest is
 * the SHA-1 of the bytes from "router" through the newline after
 * "router-signature", exactly as received.
 */
#include <stdlib.h>
#include <string.h>

#include "core/proto/torcert.h"
#include "feature/dir/netdoc.h"
#include "feature/dir/serverdesc.h"
#include "lib/crypt/digest.h"
#include "lib/encoding/base64.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/relay_names.h"

/* Each family-cert (tor 0.4.9's family keys) that is a type-12
 * certificate of md's ed25519 identity signed by the family key in its
 * extension puts "ed25519:" and that key in md->family_ids, as the
 * authorities do for microdescriptors; others are ignored (the relay is
 * then simply not in that family). Expiry is not checked here: a
 * descriptor the authorities list had valid certificates. */
static void
add_family_certs(microdesc_t *md, uint8_t (*certs)[SERVERDESC_FAMILY_CERT_MAX],
                 const size_t *lens, int n)
{
  for (int i = 0; i < n && md->has_ed25519_id; i++) {
    torcert_t *c = NULL;
    if (torcert_parse(certs[i], lens[i], &c) < 0)
      continue;
    if (c->cert_type == TORCERT_TYPE_FAMILY_V_IDENTITY &&
        c->key_type == TORCERT_KEY_ED25519 && c->signing_key_included &&
        !memcmp(c->certified_key, md->ed25519_id, 32) &&
        torcert_checksig(c, NULL, 0) == 0) {
      char id[8 + 44] = "ed25519:";
      base64_encode(id + 8, sizeof(id) - 8, c->signing_key, 32,
                    BASE64_NOPAD);
      int dup = 0;
      for (int k = 0; k < md->n_family_ids; k++)
        dup |= !strcmp(md->family_ids[k], id);
      if (!dup) {
        md->family_ids = pc_realloc(md->family_ids,
                                    (size_t)(md->n_family_ids + 1) *
                                        sizeof(char *));
        md->family_ids[md->n_family_ids++] = pc_strdup(id);
      }
    }
    torcert_free(c);
  }
}

int
serverdesc_parse(const char *s, size_t len, microdesc_t **out, char **err)
{
  uint8_t certs[SERVERDESC_FAMILY_CERTS][SERVERDESC_FAMILY_CERT_MAX];
  size_t cert_lens[SERVERDESC_FAMILY_CERTS];
  int n_certs = 0;
  *out = NULL;
  *err = NULL;
  if (len > SERVERDESC_MAX_SIZE) {
    *err = pc_asprintf("server descriptor: %zu bytes is too large", len);
    return -1;
  }
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, s, len);
  microdesc_t *md = pc_zalloc(sizeof(*md));
  int first = 1, seen_ntor = 0, seen_sig = 0, seen_signkey = 0, rv;
  size_t start = 0, signed_end = 0;
  char *msg = NULL;
  while ((rv = netdoc_next(&r, &it)) == 1) {
    if (first) {
      if (!netdoc_kw_is(&it, "router") || it.argc < 5) {
        msg = pc_strdup("server descriptor: does not start with a router "
                        "line");
        goto bad;
      }
      start = it.start;
      first = 0;
      continue;
    }
    if (netdoc_kw_is(&it, "ntor-onion-key")) {
      if (seen_ntor++ || it.argc < 1 ||
          netdoc_parse_b64_exact(it.argv[0].s, it.argv[0].len, md->ntor_key,
                                 32) < 0) {
        msg = pc_strdup("server descriptor: bad ntor-onion-key");
        goto bad;
      }
    } else if (netdoc_kw_is(&it, "master-key-ed25519")) {
      if (md->has_ed25519_id || it.argc < 1 ||
          netdoc_parse_b64_exact(it.argv[0].s, it.argv[0].len,
                                 md->ed25519_id, 32) < 0) {
        msg = pc_strdup("server descriptor: bad master-key-ed25519");
        goto bad;
      }
      md->has_ed25519_id = 1;
    } else if (netdoc_kw_is(&it, "signing-key")) {
      uint8_t der[1024];
      long n = netdoc_obj_decode(&it, der, sizeof(der));
      if (seen_signkey++ || n <= 0 ||
          !netdoc_obj_is(&it, "RSA PUBLIC KEY")) {
        msg = pc_strdup("server descriptor: bad signing-key");
        goto bad;
      }
      crypt_sha1(md->rsa_id_digest, der, (size_t)n);
      md->has_rsa_id_digest = 1;
    } else if (netdoc_kw_is(&it, "onion-key")) {
      md->has_onion_key = 1;
    } else if (netdoc_kw_is(&it, "family")) {
      if (md->n_family) {
        msg = pc_strdup("server descriptor: duplicate family");
        goto bad;
      }
      size_t cur = 0;
      netdoc_arg_t a;
      while (netdoc_arg_iter(&it, &cur, &a)) {
        if (md->n_family >= MICRODESC_MAX_FAMILY) {
          msg = pc_strdup("server descriptor: family too large");
          goto bad;
        }
        md->family = pc_realloc(md->family,
                                (size_t)(md->n_family + 1) * sizeof(char *));
        md->family[md->n_family++] = pc_family_normalise(a.s, a.len);
      }
    } else if (netdoc_kw_is(&it, "family-cert")) {
      long n;
      if (n_certs == SERVERDESC_FAMILY_CERTS ||
          !netdoc_obj_is(&it, "FAMILY CERT") ||
          (n = netdoc_obj_decode(&it, certs[n_certs],
                                 SERVERDESC_FAMILY_CERT_MAX)) <= 0) {
        msg = pc_strdup("server descriptor: bad family-cert, or more than "
                        "8");
        goto bad;
      }
      cert_lens[n_certs++] = (size_t)n;
    } else if (netdoc_kw_is(&it, "router-signature")) {
      seen_sig = 1;
      signed_end = it.line_end;
      break;
    }
  }
  if (rv < 0) {
    msg = pc_asprintf("server descriptor: %s", r.err);
    goto bad;
  }
  if (first || !seen_sig) {
    msg = pc_strdup("server descriptor: truncated (no router-signature)");
    goto bad;
  }
  if (!seen_ntor || !seen_signkey) {
    msg = pc_strdup("server descriptor: missing ntor-onion-key or "
                    "signing-key");
    goto bad;
  }
  add_family_certs(md, certs, cert_lens, n_certs);
  uint8_t d[20];
  crypt_sha1(d, s + start, signed_end - start);
  memcpy(md->digest, d, 20);
  md->text = pc_strndup(s, len);
  md->text_len = len;
  *out = md;
  return 0;
bad:
  microdesc_free(md);
  *err = msg;
  return -1;
}

int
serverdesc_parse_many(const char *s, size_t len, microdesc_t ***out, int *n,
                      char **err)
{
  *err = NULL;
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, s, len);
  int open = 0, n_good = 0, n_bad = 0, rv;
  size_t cur = 0;
  for (;;) {
    rv = netdoc_next(&r, &it);
    int boundary = rv == 1 && netdoc_kw_is(&it, "router");
    if (open && (boundary || rv == 0)) {
      size_t end = rv == 1 ? it.start : len;
      microdesc_t *md = NULL;
      char *e = NULL;
      if (serverdesc_parse(s + cur, end - cur, &md, &e) == 0) {
        *out = pc_realloc(*out, (size_t)(*n + 1) * sizeof(**out));
        (*out)[(*n)++] = md;
        n_good++;
      } else {
        log_info("skipping a server descriptor: %s", e);
        free(e);
        n_bad++;
      }
      open = 0;
    }
    if (rv < 0) {
      if (n_good == 0) {
        *err = pc_asprintf("server descriptors: %s", r.err);
        return -1;
      }
      return n_bad + 1;
    }
    if (rv == 0)
      break;
    if (!open) {
      if (!boundary) {
        if (n_good + n_bad == 0) {
          *err = pc_strdup("server descriptors: document does not start "
                           "with a router line");
          return -1;
        }
        continue;
      }
      open = 1;
      cur = it.start;
    }
  }
  if (n_good == 0 && n_bad > 0) {
    *err = pc_strdup("server descriptors: none of them is well formed");
    return -1;
  }
  return n_bad;
}
