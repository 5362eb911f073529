/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_keycert.c -- parse and verify authority key certificates
 * (dir-spec 3.1; see dir_keycert.h).
 *
 * Design: one pass of the netdoc tokenizer from the
 * "dir-key-certificate-version" item to the "dir-key-certification" item,
 * counting each known keyword (duplicates and missing items are errors,
 * unknown keywords are ignored as the meta-format requires), then the
 * checks in order: fingerprint = SHA-1(identity key), key sizes,
 * cross-certificate (signing key over SHA-1 of the identity key),
 * certification (identity key over SHA-1 of the text through the newline
 * after "dir-key-certification"). Signatures are PKCS#1 v1.5 over the
 * bare digest (crypt_rsa_verify_raw).
 */
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_keycert.h"
#include "feature/dir/netdoc.h"
#include "lib/crypt/digest.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/time/timefmt.h"

#define MAX_KEY_DER 1024 /* a 4096-bit PKCS#1 public key is ~526 bytes */
#define MAX_SIG 512

static crypt_rsa_t *
key_from_item(const netdoc_item_t *it, uint8_t digest[20], const char **why)
{
  uint8_t der[MAX_KEY_DER];
  if (!netdoc_obj_is(it, "RSA PUBLIC KEY")) {
    *why = "is not an RSA PUBLIC KEY object";
    return NULL;
  }
  long n = netdoc_obj_decode(it, der, sizeof(der));
  if (n <= 0) {
    *why = "has a bad or oversized key object";
    return NULL;
  }
  crypt_rsa_t *k = crypt_rsa_from_public_der(der, (size_t)n);
  if (!k) {
    *why = "is not a valid RSA public key";
    return NULL;
  }
  int bits = crypt_rsa_bits(k);
  if (bits < DIR_KEYCERT_MIN_BITS || bits > DIR_KEYCERT_MAX_BITS) {
    crypt_rsa_free(k);
    *why = "has an RSA key of unacceptable size";
    return NULL;
  }
  crypt_sha1(digest, der, (size_t)n);
  return k;
}

static int
parse_time_args(const netdoc_item_t *it, time_t *out)
{
  if (it->argc < 2)
    return -1;
  /* "YYYY-MM-DD HH:MM:SS" is two arguments, contiguous in the line. */
  const char *s = it->argv[0].s;
  size_t len = (size_t)(it->argv[1].s + it->argv[1].len - s);
  return time_parse_iso(s, len, out);
}

void
dir_keycert_free_(dir_keycert_t *c)
{
  if (!c)
    return;
  crypt_rsa_free(c->identity_key);
  crypt_rsa_free(c->signing_key);
  free(c->text);
  free(c);
}

enum {
  K_VERSION, K_DIRADDR, K_FP, K_IDKEY, K_PUB, K_EXP, K_SIGNKEY, K_CROSS,
  K_CERTIFICATION, K_N
};
static const char *const kw_names[K_N] = {
  "dir-key-certificate-version", "dir-address", "fingerprint",
  "dir-identity-key", "dir-key-published", "dir-key-expires",
  "dir-signing-key", "dir-key-crosscert", "dir-key-certification",
};

int
dir_keycert_parse(const char *s, size_t len, dir_keycert_t **out,
                  size_t *consumed, char **err)
{
  *out = NULL;
  *err = NULL;
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, s, len);
  dir_keycert_t *c = pc_zalloc(sizeof(*c));
  int seen[K_N] = {0};
  uint8_t fp[20];
  uint8_t cross_sig[MAX_SIG], cert_sig[MAX_SIG];
  long cross_len = -1, cert_len = -1;
  size_t doc_start = 0, signed_end = 0;
  const char *why = NULL;
  char *msg = NULL;
  int first = 1;

  for (;;) {
    int rv = netdoc_next(&r, &it);
    if (rv < 0) {
      msg = pc_asprintf("key certificate: %s", r.err);
      goto bad;
    }
    if (rv == 0) {
      msg = pc_strdup(first ? "key certificate: empty document"
                            : "key certificate: truncated (no "
                              "dir-key-certification)");
      goto bad;
    }
    int k;
    for (k = 0; k < K_N; k++)
      if (netdoc_kw_is(&it, kw_names[k]))
        break;
    if (first) {
      if (k != K_VERSION) {
        msg = pc_asprintf("key certificate: does not start with "
                          "dir-key-certificate-version (line %d)",
                          r.line_no - 1);
        goto bad;
      }
      doc_start = it.start;
      first = 0;
    }
    if (k == K_N)
      continue; /* unknown keyword: ignored */
    if (seen[k]++) {
      msg = pc_asprintf("key certificate: duplicate %s", kw_names[k]);
      goto bad;
    }
    switch (k) {
    case K_VERSION:
      if (it.argc < 1 || !netdoc_arg_is(&it, 0, "3")) {
        msg = pc_strdup("key certificate: version is not 3");
        goto bad;
      }
      break;
    case K_DIRADDR:
      if (it.argc >= 1) {
        char a[64];
        if (netdoc_arg_copy(&it, 0, a, sizeof(a)) == 0 &&
            pc_addr_parse(&c->dir_addr, a) == 0)
          c->has_dir_addr = 1;
      }
      break;
    case K_FP:
      if (it.argc < 1 ||
          netdoc_parse_hex_exact(it.argv[0].s, it.argv[0].len, fp, 20) < 0) {
        msg = pc_strdup("key certificate: malformed fingerprint");
        goto bad;
      }
      break;
    case K_IDKEY:
      c->identity_key = key_from_item(&it, c->id_digest, &why);
      if (!c->identity_key) {
        msg = pc_asprintf("key certificate: dir-identity-key %s", why);
        goto bad;
      }
      break;
    case K_SIGNKEY:
      c->signing_key = key_from_item(&it, c->signing_key_digest, &why);
      if (!c->signing_key) {
        msg = pc_asprintf("key certificate: dir-signing-key %s", why);
        goto bad;
      }
      break;
    case K_PUB:
    case K_EXP:
      if (parse_time_args(&it, k == K_PUB ? &c->published : &c->expires) <
          0) {
        msg = pc_asprintf("key certificate: malformed %s time", kw_names[k]);
        goto bad;
      }
      break;
    case K_CROSS:
      if (!netdoc_obj_is(&it, "ID SIGNATURE") &&
          !netdoc_obj_is(&it, "SIGNATURE")) {
        msg = pc_strdup("key certificate: dir-key-crosscert without a "
                        "signature object");
        goto bad;
      }
      cross_len = netdoc_obj_decode(&it, cross_sig, sizeof(cross_sig));
      if (cross_len <= 0) {
        msg = pc_strdup("key certificate: malformed dir-key-crosscert");
        goto bad;
      }
      break;
    case K_CERTIFICATION:
      if (!netdoc_obj_is(&it, "SIGNATURE")) {
        msg = pc_strdup("key certificate: dir-key-certification without a "
                        "signature object");
        goto bad;
      }
      cert_len = netdoc_obj_decode(&it, cert_sig, sizeof(cert_sig));
      if (cert_len <= 0) {
        msg = pc_strdup("key certificate: malformed dir-key-certification");
        goto bad;
      }
      signed_end = it.line_end;
      break;
    }
    if (k == K_CERTIFICATION)
      break;
  }
  static const int required[] = {K_FP, K_IDKEY, K_PUB, K_EXP, K_SIGNKEY,
                                 K_CROSS};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
    if (!seen[required[i]]) {
      msg = pc_asprintf("key certificate: missing %s",
                        kw_names[required[i]]);
      goto bad;
    }
  }
  if (memcmp(fp, c->id_digest, 20) != 0) {
    msg = pc_strdup("key certificate: fingerprint does not match the "
                    "identity key");
    goto bad;
  }
  if (crypt_rsa_verify_raw(c->signing_key, c->id_digest, 20, cross_sig,
                           (size_t)cross_len) != 0) {
    msg = pc_strdup("key certificate: bad dir-key-crosscert (the signing "
                    "key did not sign this identity)");
    goto bad;
  }
  {
    uint8_t d[20];
    crypt_sha1(d, s + doc_start, signed_end - doc_start);
    if (crypt_rsa_verify_raw(c->identity_key, d, 20, cert_sig,
                             (size_t)cert_len) != 0) {
      char hex[41];
      base16_encode(hex, sizeof(hex), c->id_digest, 20, BASE16_UPPER);
      msg = pc_asprintf("key certificate of %s: bad dir-key-certification "
                        "signature", hex);
      goto bad;
    }
  }
  if (c->expires <= c->published) {
    msg = pc_strdup("key certificate: expires before it was published");
    goto bad;
  }
  c->text_len = r.pos - doc_start;
  c->text = pc_strndup(s + doc_start, c->text_len);
  *consumed = r.pos;
  *out = c;
  return 0;
bad:
  *consumed = r.pos;
  dir_keycert_free(c);
  *err = msg;
  return -1;
}

int
dir_keycert_parse_all(const char *s, size_t len, dir_keycert_t ***certs,
                      int *n, char **err)
{
  *err = NULL;
  size_t off = 0;
  int n_bad = 0, n_good = 0;
  char *last_err = NULL;
  while (off < len) {
    while (off < len && s[off] == '\n')
      off++;
    if (off >= len)
      break;
    dir_keycert_t *c = NULL;
    size_t used = 0;
    char *e = NULL;
    if (dir_keycert_parse(s + off, len - off, &c, &used, &e) == 0) {
      *certs = pc_realloc(*certs, (size_t)(*n + 1) * sizeof(**certs));
      (*certs)[(*n)++] = c;
      n_good++;
      off += used;
      continue;
    }
    log_warn("skipping a key certificate: %s", e);
    n_bad++;
    free(last_err);
    last_err = e;
    /* Resynchronise at the next certificate, if any. */
    size_t next = len;
    for (size_t i = off + 1; i + 27 <= len; i++) {
      if (s[i - 1] == '\n' &&
          !memcmp(s + i, "dir-key-certificate-version", 27)) {
        next = i;
        break;
      }
    }
    off = next;
  }
  if (n_good == 0) {
    *err = last_err ? last_err : pc_strdup("no key certificates in the "
                                           "document");
    return -1;
  }
  free(last_err);
  return n_bad;
}

int
dir_keycert_check_time(const dir_keycert_t *c, time_t now, char **err)
{
  char t[TIME_ISO_LEN + 1];
  if (c->expires < now) {
    time_format_iso(t, c->expires);
    *err = pc_asprintf("authority key certificate expired at %s", t);
    return -1;
  }
  if (c->published > now + DIR_KEYCERT_FUTURE_SKEW) {
    time_format_iso(t, c->published);
    *err = pc_asprintf("authority key certificate published in the future "
                       "(%s): is our clock wrong?", t);
    return -1;
  }
  return 0;
}
