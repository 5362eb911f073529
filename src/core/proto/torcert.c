/* SPDX-License-Identifier: BSD-3-Clause */
/* torcert.c -- Ed25519 certificates and the RSA->Ed25519 cross-certificate
 * (cert-spec.txt); see torcert.h for the formats.
 *
 * Design: parsing is separate from checking, as cert-spec suggests ("know
 * which key it is supposed to be signed by, then check"). torcert_parse()
 * validates the structure -- version 1, every extension inside the body,
 * the signature exactly at the end, a well-formed signed-with-key
 * extension at most once, no unknown extension with AFFECTS_VALIDATION --
 * and keeps the encoding; torcert_checksig() verifies the Ed25519
 * signature over all but the last 64 bytes against the expected key and
 * the expiry. Unknown extensions without the flag are skipped.
 *
 * Creation rounds the expiry up to a whole hour, so a certificate never
 * expires earlier than asked. The cross-certificate's signature is a raw
 * PKCS#1 v1.5 RSA signature of a SHA-256 digest, so it is verified by
 * recovering exactly those 32 bytes.
 */
#include "core/proto/torcert.h"

#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

const char *
certs_type_name(uint8_t type)
{
  switch (type) {
  case CERTS_TYPE_RSA_LINK: return "RSA_LINK";
  case CERTS_TYPE_RSA_ID: return "RSA_ID";
  case CERTS_TYPE_RSA_AUTH: return "RSA_AUTH";
  case CERTS_TYPE_ED_ID_SIGNING: return "ED_ID_SIGNING";
  case CERTS_TYPE_ED_SIGNING_LINK: return "ED_SIGNING_LINK";
  case CERTS_TYPE_ED_SIGNING_AUTH: return "ED_SIGNING_AUTH";
  case CERTS_TYPE_RSA_ED_CROSSCERT: return "RSA_ED_CROSSCERT";
  default: return "UNKNOWN";
  }
}

const char *
torcert_strerror(int err)
{
  switch (err) {
  case 0: return "ok";
  case TORCERT_ERR_MALFORMED: return "malformed certificate";
  case TORCERT_ERR_UNKNOWN_EXT:
    return "unknown extension that affects validation";
  case TORCERT_ERR_NO_KEY: return "no signing key";
  case TORCERT_ERR_KEY_MISMATCH: return "signing key does not match";
  case TORCERT_ERR_EXPIRED: return "certificate expired";
  case TORCERT_ERR_BAD_SIG: return "bad signature";
  default: return "unknown error";
  }
}

static uint32_t
hours_ceil(time_t t)
{
  if (t <= 0)
    return 0;
  uint64_t h = ((uint64_t)t + 3599) / 3600;
  return h > UINT32_MAX ? UINT32_MAX : (uint32_t)h;
}

/* ---------------------------------------------------------------- */
/* Ed25519 certificates */

int
torcert_parse(const uint8_t *in, size_t len, torcert_t **out)
{
  *out = NULL;
  if (len < TORCERT_MIN_LEN) {
    log_info("Ed25519 certificate too short (%zu bytes)", len);
    return TORCERT_ERR_MALFORMED;
  }
  if (in[0] != TORCERT_VERSION) {
    log_info("Ed25519 certificate has version %u", in[0]);
    return TORCERT_ERR_MALFORMED;
  }
  torcert_t c;
  memset(&c, 0, sizeof(c));
  c.cert_type = in[1];
  c.expiration_hours = get_u32(in + 2);
  c.key_type = in[6];
  memcpy(c.certified_key, in + 7, TORCERT_KEY_LEN);
  c.n_extensions = in[39];

  const size_t body_end = len - ED25519_SIG_LEN; /* extensions end here */
  size_t off = TORCERT_HEADER_LEN;
  for (unsigned i = 0; i < c.n_extensions; i++) {
    if (body_end - off < 4) {
      log_info("Ed25519 certificate extension %u header truncated", i);
      return TORCERT_ERR_MALFORMED;
    }
    uint16_t elen = get_u16(in + off);
    uint8_t etype = in[off + 2], eflags = in[off + 3];
    off += 4;
    if (body_end - off < elen) {
      log_info("Ed25519 certificate extension %u (%u bytes) truncated", i,
               elen);
      return TORCERT_ERR_MALFORMED;
    }
    if (etype == TORCERT_EXT_SIGNED_WITH_KEY) {
      if (elen != ED25519_PUBKEY_LEN || c.signing_key_included) {
        log_info("Ed25519 certificate has a bad or repeated signing-key "
                 "extension");
        return TORCERT_ERR_MALFORMED;
      }
      c.signing_key_included = 1;
      memcpy(c.signing_key, in + off, ED25519_PUBKEY_LEN);
    } else if (eflags & TORCERT_EXT_FLAG_AFFECTS_VALIDATION) {
      log_info("Ed25519 certificate has unknown critical extension %u",
               etype);
      return TORCERT_ERR_UNKNOWN_EXT;
    }
    off += elen;
  }
  if (off != body_end) {
    log_info("Ed25519 certificate has %zu stray bytes before signature",
             body_end - off);
    return TORCERT_ERR_MALFORMED;
  }
  memcpy(c.signature, in + body_end, ED25519_SIG_LEN);
  c.encoded = pc_memdup(in, len);
  c.encoded_len = len;
  *out = pc_memdup(&c, sizeof(c));
  return 0;
}

time_t
torcert_expires(const torcert_t *c)
{
  return (time_t)((uint64_t)c->expiration_hours * 3600);
}

int
torcert_is_expired(const torcert_t *c, time_t now)
{
  return now > torcert_expires(c);
}

int
torcert_checksig(const torcert_t *c, const uint8_t *signing_key, time_t now)
{
  const uint8_t *key = signing_key;
  if (c->signing_key_included) {
    if (key && pc_memneq(key, c->signing_key, ED25519_PUBKEY_LEN))
      return TORCERT_ERR_KEY_MISMATCH;
    key = c->signing_key;
  }
  if (!key)
    return TORCERT_ERR_NO_KEY;
  if (now != 0 && torcert_is_expired(c, now))
    return TORCERT_ERR_EXPIRED;
  if (c->encoded_len < TORCERT_MIN_LEN ||
      ed25519_verify(c->signature, c->encoded,
                     c->encoded_len - ED25519_SIG_LEN, key) < 0)
    return TORCERT_ERR_BAD_SIG;
  return 0;
}

torcert_t *
torcert_create(const ed25519_keypair_t *signer, uint8_t cert_type,
               uint8_t key_type, const uint8_t certified_key[TORCERT_KEY_LEN],
               time_t expires, int include_signing_key)
{
  size_t len = TORCERT_MIN_LEN +
               (include_signing_key ? 4 + ED25519_PUBKEY_LEN : 0);
  uint8_t *enc = pc_zalloc(len);
  enc[0] = TORCERT_VERSION;
  enc[1] = cert_type;
  set_u32(enc + 2, hours_ceil(expires));
  enc[6] = key_type;
  memcpy(enc + 7, certified_key, TORCERT_KEY_LEN);
  enc[39] = include_signing_key ? 1 : 0;
  size_t off = TORCERT_HEADER_LEN;
  if (include_signing_key) {
    set_u16(enc + off, ED25519_PUBKEY_LEN);
    enc[off + 2] = TORCERT_EXT_SIGNED_WITH_KEY;
    enc[off + 3] = 0;
    memcpy(enc + off + 4, signer->pub, ED25519_PUBKEY_LEN);
    off += 4 + ED25519_PUBKEY_LEN;
  }
  if (ed25519_sign(enc + off, enc, off, signer) < 0) {
    log_warn("Could not sign Ed25519 certificate");
    free(enc);
    return NULL;
  }
  torcert_t *c = NULL;
  int r = torcert_parse(enc, len, &c);
  free(enc);
  if (r < 0) {
    log_warn("Built an Ed25519 certificate we cannot parse: %s",
             torcert_strerror(r));
    return NULL;
  }
  return c;
}

torcert_t *
torcert_dup(const torcert_t *c)
{
  torcert_t *n = pc_memdup(c, sizeof(*c));
  n->encoded = pc_memdup(c->encoded, c->encoded_len);
  return n;
}

int
torcert_eq(const torcert_t *a, const torcert_t *b)
{
  return a->encoded_len == b->encoded_len &&
         !pc_memneq(a->encoded, b->encoded, a->encoded_len);
}

void
torcert_free_(torcert_t *c)
{
  if (!c)
    return;
  free(c->encoded);
  free(c);
}

/* ---------------------------------------------------------------- */
/* RSA->Ed25519 cross-certificate */

int
rsa_ed_crosscert_parse(rsa_ed_crosscert_t *out, const uint8_t *in,
                       size_t len)
{
  memset(out, 0, sizeof(*out));
  if (len < RSA_ED_CROSSCERT_SIGNED_LEN + 1) {
    log_info("RSA->Ed25519 crosscert truncated (%zu bytes)", len);
    return -1;
  }
  uint8_t siglen = in[RSA_ED_CROSSCERT_SIGNED_LEN];
  if (siglen == 0 || len != RSA_ED_CROSSCERT_SIGNED_LEN + 1 + (size_t)siglen) {
    log_info("RSA->Ed25519 crosscert SIGLEN %u does not match length %zu",
             siglen, len);
    return -1;
  }
  memcpy(out->ed_key, in, ED25519_PUBKEY_LEN);
  out->expiration_hours = get_u32(in + ED25519_PUBKEY_LEN);
  out->sig_len = siglen;
  memcpy(out->sig, in + RSA_ED_CROSSCERT_SIGNED_LEN + 1, siglen);
  return 0;
}

/* SHA-256 of the prefix and the 36 signed bytes. */
static void
crosscert_digest(uint8_t out[DIGEST_SHA256_LEN], const uint8_t *signed_part)
{
  const size_t plen = sizeof(RSA_ED_CROSSCERT_PREFIX) - 1;
  uint8_t buf[sizeof(RSA_ED_CROSSCERT_PREFIX) - 1 +
              RSA_ED_CROSSCERT_SIGNED_LEN];
  memcpy(buf, RSA_ED_CROSSCERT_PREFIX, plen);
  memcpy(buf + plen, signed_part, RSA_ED_CROSSCERT_SIGNED_LEN);
  crypt_sha256(out, buf, sizeof(buf));
}

int
rsa_ed_crosscert_create(const uint8_t ed_key[ED25519_PUBKEY_LEN],
                        const crypt_rsa_t *rsa_id, time_t expires,
                        uint8_t **out, size_t *outlen)
{
  *out = NULL;
  *outlen = 0;
  int bits = crypt_rsa_bits(rsa_id);
  if (bits <= 0 || (bits + 7) / 8 > 255 || !crypt_rsa_has_private(rsa_id))
    return -1;
  size_t keybytes = (size_t)(bits + 7) / 8;
  uint8_t *cc = pc_zalloc(RSA_ED_CROSSCERT_SIGNED_LEN + 1 + keybytes);
  memcpy(cc, ed_key, ED25519_PUBKEY_LEN);
  set_u32(cc + ED25519_PUBKEY_LEN, hours_ceil(expires));
  uint8_t digest[DIGEST_SHA256_LEN];
  crosscert_digest(digest, cc);
  size_t siglen = 0;
  if (crypt_rsa_sign_raw(rsa_id, digest, sizeof(digest),
                         cc + RSA_ED_CROSSCERT_SIGNED_LEN + 1, &siglen) < 0 ||
      siglen == 0 || siglen > keybytes) {
    log_warn("Could not sign RSA->Ed25519 crosscert");
    free(cc);
    return -1;
  }
  cc[RSA_ED_CROSSCERT_SIGNED_LEN] = (uint8_t)siglen;
  *out = cc;
  *outlen = RSA_ED_CROSSCERT_SIGNED_LEN + 1 + siglen;
  return 0;
}

int
rsa_ed_crosscert_check(const uint8_t *in, size_t len,
                       const crypt_rsa_t *rsa_id,
                       const uint8_t ed_key[ED25519_PUBKEY_LEN], time_t now)
{
  rsa_ed_crosscert_t cc;
  if (rsa_ed_crosscert_parse(&cc, in, len) < 0)
    return TORCERT_ERR_MALFORMED;
  if (pc_memneq(cc.ed_key, ed_key, ED25519_PUBKEY_LEN))
    return TORCERT_ERR_KEY_MISMATCH;
  if (now != 0 && (uint64_t)now > (uint64_t)cc.expiration_hours * 3600)
    return TORCERT_ERR_EXPIRED;
  uint8_t digest[DIGEST_SHA256_LEN];
  crosscert_digest(digest, in);
  if (crypt_rsa_verify_raw(rsa_id, digest, sizeof(digest), cc.sig,
                           cc.sig_len) < 0)
    return TORCERT_ERR_BAD_SIG;
  return 0;
}
