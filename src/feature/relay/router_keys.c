/* SPDX-License-Identifier: BSD-3-Clause */
/* router_keys.c -- create, store, load and rotate a relay's keys.
 *
 * Files in DataDirectory/keys (directory 0700, files 0600, each written
 * atomically: a temporary file, fsync, rename):
 *
 *   secret_id_key  RSA-1024 identity as PEM "RSA PRIVATE KEY" (PKCS#1),
 *       64-column base64 -- byte for byte what tor writes, so a tor
 *       relay's RSA identity file can be used as is.
 *   ed25519_master_id_seed  (96 bytes)
 *       "== pctor ed25519 identity v1 ==" NUL-padded to 32 bytes,
 *       the 32-byte RFC 8032 seed, the 32-byte public key.
 *       Tor's own secret-key file holds the expanded key (SHA-512 of the
 *       seed), from which OpenSSL cannot sign, hence our own format.
 *   ed25519_master_id_public_key  (64 bytes, tor's format)
 *       "== ed25519v1-public: type0 ==" NUL-padded to 32, the public key.
 *   ed25519_signing_seed  (96 bytes)
 *       "== pctor ed25519 signing v1 ==" NUL-padded to 32, seed, public.
 *   ed25519_signing_cert  (tor's format, tor-print-ed-signing-cert reads it)
 *       "== ed25519v1-cert: type4 ==" NUL-padded to 32, the type-4 cert.
 *   secret_onion_key  RSA-1024 TAP onion key, PEM "RSA PRIVATE KEY" like
 *       secret_id_key (and like tor's file of that name). TAP handshakes
 *       are refused, but the authorities still require the key in the
 *       descriptor. It is made and replaced together with the current
 *       ntor key; no previous TAP key is kept, since nothing decrypts
 *       with it.
 *   ntor_onion_keys  (105 or 169 bytes)
 *       "== pctor ntor onion keys v1 ==" NUL-padded to 32,
 *       CREATED[8] (big-endian seconds since the epoch: when the current
 *       key was made, which is also when the previous one was retired),
 *       N_KEYS[1] (1 or 2), then N_KEYS x (SECRET[32] PUBLIC[32]),
 *       current key first.
 *
 * Design choices:
 * - Every secret-key file carries its public key too, so a flipped or
 *   missing byte is detected by re-deriving the public key, and the error
 *   names that very file. The RSA file is checked by parsing it, its size,
 *   and a sign/verify round trip.
 * - Loading is done in phases: first every existing file is read and
 *   checked (no writes at all, so a corrupt file makes start-up fail
 *   without touching anything), then missing keys are made and due
 *   rotations happen, then the certificates are built, then the
 *   fingerprint files are written.
 * - A corrupt file is never replaced. A missing file is created, except
 *   for the master seed when its public key file exists: that is a tor
 *   data directory or an offline master key, and creating a new identity
 *   there would silently change who we are.
 * - The medium-term signing key is stored as two files; renewal writes the
 *   seed, then the certificate. A crash in between leaves a certificate
 *   that is valid and signed by our identity but certifies another key:
 *   that is treated as "renewal needed", not as corruption.
 * - The relay_keys_t given to core is the first member of a private
 *   struct that also holds the schedule (ntor key creation, certificate
 *   expiries), so core keeps seeing plain data and this file finds its
 *   bookkeeping from the same pointer.
 * - Maintenance builds replacements first and changes the struct only once
 *   everything needed is made and stored, so a failed write leaves the
 *   keys in memory as they were.
 */
#include "feature/relay/router_keys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/proto/torcert.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/time/timefmt.h"
#include "lib/tls/x509.h"

#define DAY 86400
#define KEYS_SUBDIR "keys"

#define FN_RSA_ID "secret_id_key"
#define FN_ED_ID_SEED "ed25519_master_id_seed"
#define FN_ED_ID_PUB "ed25519_master_id_public_key"
#define FN_ED_SIGN_SEED "ed25519_signing_seed"
#define FN_ED_SIGN_CERT "ed25519_signing_cert"
#define FN_NTOR "ntor_onion_keys"
#define FN_TAP "secret_onion_key"
/* tor's own file, recognised only to explain why we refuse to start. */
#define FN_TOR_ED_ID_SECRET "ed25519_master_id_secret_key"

#define HDR_LEN 32
#define TAG_ED_ID_SEED "== pctor ed25519 identity v1 =="
#define TAG_ED_SIGN_SEED "== pctor ed25519 signing v1 =="
#define TAG_ED_PUB "== ed25519v1-public: type0 =="
#define TAG_ED_CERT4 "== ed25519v1-cert: type4 =="
#define TAG_NTOR "== pctor ntor onion keys v1 =="

#define SEED_FILE_LEN (HDR_LEN + ED25519_SEED_LEN + ED25519_PUBKEY_LEN)
#define PUB_FILE_LEN (HDR_LEN + ED25519_PUBKEY_LEN)
#define NTOR_KEY_LEN (2 * CURVE25519_KEY_LEN)
#define NTOR_FILE_LEN(n) (HDR_LEN + 8 + 1 + (n) * NTOR_KEY_LEN)
#define CERT_FILE_MAX (HDR_LEN + 1024)
#define RSA_FILE_MAX 8192

#define RSA_PEM_BEGIN "-----BEGIN RSA PRIVATE KEY-----\n"
#define RSA_PEM_END "-----END RSA PRIVATE KEY-----\n"

#define RK_MAGIC 0x704b6579u

/* Renew the RSA identity certificate and the crosscert when less than
 * this is left; the link and auth certificates when less than a day is. */
#define RSA_CERTS_RENEW_SECS (30 * DAY)
#define LINK_CERTS_RENEW_SECS (1 * DAY)
/* An ntor creation time this far in the future means the clock moved
 * back: start the schedule again from now. */
#define NTOR_FUTURE_SLACK DAY

typedef struct rk_state_t {
  relay_keys_t k; /* must stay first: (relay_keys_t *) == (rk_state_t *) */
  uint32_t magic;
  time_t ntor_created;
  time_t rsa_cert_expires;
  time_t crosscert_expires;
  time_t link_certs_expire; /* types 5 and 6 */
} rk_state_t;

static rk_state_t *
rk_state(relay_keys_t *k)
{
  rk_state_t *st = (rk_state_t *)k;
  if (st->magic != RK_MAGIC) {
    log_err("router_keys: relay_keys_t not made by router_keys");
    abort();
  }
  return st;
}

/* ---------------------------------------------------------------- */
/* Error strings and paths */

static void rk_seterr(char **err, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void
rk_seterr(char **err, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (err) {
    free(*err);
    *err = pc_strdup(buf);
  } else {
    log_warn("%s", buf);
  }
}

static void
rk_corrupt(char **err, const char *path, const char *why)
{
  rk_seterr(err,
            "%s is corrupt or truncated (%s); refusing to start. Move it "
            "away to create a new key.",
            path, why);
}

typedef struct rk_paths_t {
  char *keydir;
  char *rsa_id, *ed_id_seed, *ed_id_pub, *ed_sign_seed, *ed_sign_cert;
  char *ntor, *tap, *tor_ed_id_secret;
} rk_paths_t;

static void
rk_paths_init(rk_paths_t *p, const char *datadir)
{
  p->keydir = pc_asprintf("%s/%s", datadir, KEYS_SUBDIR);
  p->rsa_id = pc_asprintf("%s/%s", p->keydir, FN_RSA_ID);
  p->ed_id_seed = pc_asprintf("%s/%s", p->keydir, FN_ED_ID_SEED);
  p->ed_id_pub = pc_asprintf("%s/%s", p->keydir, FN_ED_ID_PUB);
  p->ed_sign_seed = pc_asprintf("%s/%s", p->keydir, FN_ED_SIGN_SEED);
  p->ed_sign_cert = pc_asprintf("%s/%s", p->keydir, FN_ED_SIGN_CERT);
  p->ntor = pc_asprintf("%s/%s", p->keydir, FN_NTOR);
  p->tap = pc_asprintf("%s/%s", p->keydir, FN_TAP);
  p->tor_ed_id_secret = pc_asprintf("%s/%s", p->keydir, FN_TOR_ED_ID_SECRET);
}

static void
rk_paths_clear(rk_paths_t *p)
{
  free(p->keydir);
  free(p->rsa_id);
  free(p->ed_id_seed);
  free(p->ed_id_pub);
  free(p->ed_sign_seed);
  free(p->ed_sign_cert);
  free(p->ntor);
  free(p->tap);
  free(p->tor_ed_id_secret);
  memset(p, 0, sizeof(*p));
}

/* ---------------------------------------------------------------- */
/* File access (lib/fs) */

/* Read path into *buf (NUL-terminated, *len bytes). Returns 1 if read,
 * 0 if the file does not exist, -1 (with *err) on any other failure,
 * including a file larger than max. */
static int
rk_read(const char *path, size_t max, uint8_t **buf, size_t *len,
        char **err)
{
  int r = fs_read_file(path, max, buf, len);
  if (r == -ENOENT)
    return 0;
  if (r == -EFBIG) {
    rk_corrupt(err, path, "file too large");
    return -1;
  }
  if (r < 0) {
    rk_seterr(err, "Cannot read %s: %s", path, strerror(-r));
    return -1;
  }
  return 1;
}

static int
rk_write(const char *path, const void *data, size_t len, char **err)
{
  int r = fs_write_file_atomic(path, data, len, 0600);
  if (r < 0) {
    rk_seterr(err, "Cannot write %s: %s", path, strerror(-r));
    return -1;
  }
  return 0;
}

static void
rk_free_secret(uint8_t *buf, size_t len)
{
  if (buf) {
    pc_memwipe(buf, len);
    free(buf);
  }
}

/* ---------------------------------------------------------------- */
/* File formats */

static void
hdr_set(uint8_t hdr[HDR_LEN], const char *tag)
{
  memset(hdr, 0, HDR_LEN);
  memcpy(hdr, tag, strlen(tag));
}

static int
hdr_is(const uint8_t *buf, size_t len, const char *tag)
{
  uint8_t want[HDR_LEN];
  if (len < HDR_LEN)
    return 0;
  hdr_set(want, tag);
  return memcmp(buf, want, HDR_LEN) == 0;
}

/* Ed25519 seed file: tag | seed | pub. */
static int
ed_seed_parse(const uint8_t *buf, size_t len, const char *tag,
              ed25519_keypair_t *kp, const char **why)
{
  if (len != SEED_FILE_LEN) {
    *why = "wrong size";
    return -1;
  }
  if (!hdr_is(buf, len, tag)) {
    *why = "wrong header";
    return -1;
  }
  if (ed25519_keypair_from_seed(kp, buf + HDR_LEN) < 0) {
    *why = "unusable seed";
    return -1;
  }
  if (pc_memneq(kp->pub, buf + HDR_LEN + ED25519_SEED_LEN,
                ED25519_PUBKEY_LEN)) {
    ed25519_keypair_wipe(kp);
    *why = "public key does not match the secret key";
    return -1;
  }
  return 0;
}

static void
ed_seed_encode(uint8_t out[SEED_FILE_LEN], const char *tag,
               const ed25519_keypair_t *kp)
{
  hdr_set(out, tag);
  memcpy(out + HDR_LEN, kp->seed, ED25519_SEED_LEN);
  memcpy(out + HDR_LEN + ED25519_SEED_LEN, kp->pub, ED25519_PUBKEY_LEN);
}

static int
write_ed_seed(const char *path, const char *tag, const ed25519_keypair_t *kp,
              char **err)
{
  uint8_t buf[SEED_FILE_LEN];
  ed_seed_encode(buf, tag, kp);
  int r = rk_write(path, buf, sizeof(buf), err);
  pc_memwipe(buf, sizeof(buf));
  return r;
}

static int
write_ed_pub(const char *path, const uint8_t pub[ED25519_PUBKEY_LEN],
             char **err)
{
  uint8_t buf[PUB_FILE_LEN];
  hdr_set(buf, TAG_ED_PUB);
  memcpy(buf + HDR_LEN, pub, ED25519_PUBKEY_LEN);
  return rk_write(path, buf, sizeof(buf), err);
}

static int
write_cert4(const char *path, const uint8_t *cert, size_t len, char **err)
{
  uint8_t *buf = pc_malloc(HDR_LEN + len);
  hdr_set(buf, TAG_ED_CERT4);
  memcpy(buf + HDR_LEN, cert, len);
  int r = rk_write(path, buf, HDR_LEN + len, err);
  free(buf);
  return r;
}

typedef struct ntor_file_t {
  time_t created;
  curve25519_keypair_t current;
  curve25519_keypair_t previous;
  int has_previous;
} ntor_file_t;

static void
ntor_file_wipe(ntor_file_t *nf)
{
  pc_memwipe(nf, sizeof(*nf));
}

static int
ntor_key_parse(curve25519_keypair_t *kp, const uint8_t *p)
{
  uint8_t pub[CURVE25519_KEY_LEN];
  memcpy(kp->secret, p, CURVE25519_KEY_LEN);
  memcpy(kp->pub, p + CURVE25519_KEY_LEN, CURVE25519_KEY_LEN);
  if (curve25519_public_from_secret(pub, kp->secret) < 0)
    return -1;
  return pc_memneq(pub, kp->pub, CURVE25519_KEY_LEN) ? -1 : 0;
}

static int
ntor_file_parse(const uint8_t *buf, size_t len, ntor_file_t *nf,
                const char **why)
{
  memset(nf, 0, sizeof(*nf));
  if (len < NTOR_FILE_LEN(1)) {
    *why = "wrong size";
    return -1;
  }
  if (!hdr_is(buf, len, TAG_NTOR)) {
    *why = "wrong header";
    return -1;
  }
  uint64_t created = get_u64(buf + HDR_LEN);
  uint8_t n = buf[HDR_LEN + 8];
  if (n != 1 && n != 2) {
    *why = "bad key count";
    return -1;
  }
  if (len != NTOR_FILE_LEN(n)) {
    *why = "wrong size";
    return -1;
  }
  if (created > (uint64_t)INT64_MAX / 2) {
    *why = "bad creation time";
    return -1;
  }
  nf->created = (time_t)created;
  const uint8_t *p = buf + NTOR_FILE_LEN(0);
  if (ntor_key_parse(&nf->current, p) < 0 ||
      (n == 2 && ntor_key_parse(&nf->previous, p + NTOR_KEY_LEN) < 0)) {
    ntor_file_wipe(nf);
    *why = "public key does not match the secret key";
    return -1;
  }
  nf->has_previous = (n == 2);
  return 0;
}

static int
write_ntor(const char *path, const ntor_file_t *nf, char **err)
{
  uint8_t buf[NTOR_FILE_LEN(2)];
  size_t n = nf->has_previous ? 2 : 1;
  hdr_set(buf, TAG_NTOR);
  set_u64(buf + HDR_LEN, (uint64_t)(nf->created < 0 ? 0 : nf->created));
  buf[HDR_LEN + 8] = (uint8_t)n;
  uint8_t *p = buf + NTOR_FILE_LEN(0);
  memcpy(p, nf->current.secret, CURVE25519_KEY_LEN);
  memcpy(p + CURVE25519_KEY_LEN, nf->current.pub, CURVE25519_KEY_LEN);
  if (n == 2) {
    memcpy(p + NTOR_KEY_LEN, nf->previous.secret, CURVE25519_KEY_LEN);
    memcpy(p + NTOR_KEY_LEN + CURVE25519_KEY_LEN, nf->previous.pub,
           CURVE25519_KEY_LEN);
  }
  int r = rk_write(path, buf, NTOR_FILE_LEN(n), err);
  pc_memwipe(buf, sizeof(buf));
  return r;
}

/* RSA keys (identity, TAP onion key): PEM PKCS#1, as tor. */
static crypt_rsa_t *
rsa_parse(const uint8_t *buf, size_t len, const char **why)
{
  /* Exactly one PEM block and nothing else but trailing white space, so
   * that a truncated or appended-to file is noticed. */
  size_t blen = strlen(RSA_PEM_BEGIN), elen = strlen(RSA_PEM_END);
  size_t end = len;
  while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r' ||
                     buf[end - 1] == ' ' || buf[end - 1] == '\t'))
    end--;
  if (len < blen + elen || memcmp(buf, RSA_PEM_BEGIN, blen) != 0 ||
      end < blen + elen - 1 ||
      memcmp(buf + end - (elen - 1), RSA_PEM_END, elen - 1) != 0 ||
      memchr(buf, '\0', len) != NULL) {
    *why = "not a PEM RSA private key";
    return NULL;
  }
  crypt_rsa_t *k = crypt_rsa_from_pem((const char *)buf, len, 1);
  if (!k) {
    *why = "not a PEM RSA private key";
    return NULL;
  }
  if (!crypt_rsa_has_private(k) || crypt_rsa_bits(k) != RSA1024_BITS) {
    *why = "not a 1024-bit RSA private key";
    crypt_rsa_free(k);
    return NULL;
  }
  /* The private and public halves must agree. */
  uint8_t msg[DIGEST_SHA1_LEN], sig[RSA1024_SIG_LEN];
  size_t siglen = sizeof(sig);
  crypt_rand(msg, sizeof(msg));
  if (crypt_rsa_sign_raw(k, msg, sizeof(msg), sig, &siglen) < 0 ||
      crypt_rsa_verify_raw(k, msg, sizeof(msg), sig, siglen) < 0) {
    *why = "private and public parts do not match";
    crypt_rsa_free(k);
    return NULL;
  }
  return k;
}

static int
write_rsa(const char *path, const crypt_rsa_t *k, char **err)
{
  uint8_t *der = NULL;
  size_t derlen = 0;
  if (crypt_rsa_private_der(k, &der, &derlen) < 0) {
    rk_seterr(err, "Cannot encode the RSA key for %s", path);
    return -1;
  }
  size_t b64len = base64_encoded_len(derlen, BASE64_MULTILINE);
  size_t total = strlen(RSA_PEM_BEGIN) + b64len + strlen(RSA_PEM_END);
  char *pem = pc_malloc(total + 1);
  strcpy(pem, RSA_PEM_BEGIN);
  long n = base64_encode(pem + strlen(RSA_PEM_BEGIN), b64len + 1, der, derlen,
                         BASE64_MULTILINE);
  rk_free_secret(der, derlen);
  int r = -1;
  if (n == (long)b64len) {
    strcpy(pem + strlen(RSA_PEM_BEGIN) + b64len, RSA_PEM_END);
    r = rk_write(path, pem, total, err);
  } else {
    rk_seterr(err, "Cannot encode the RSA key for %s", path);
  }
  rk_free_secret((uint8_t *)pem, total + 1);
  return r;
}

/* ---------------------------------------------------------------- */
/* Certificates */

/* Encoded bytes of a new Ed25519 certificate, or NULL. */
static uint8_t *
make_cert(const ed25519_keypair_t *signer, uint8_t type, uint8_t key_type,
          const uint8_t *certified, time_t expires, size_t *len,
          time_t *expires_out)
{
  torcert_t *c = torcert_create(signer, type, key_type, certified, expires, 1);
  if (!c)
    return NULL;
  uint8_t *out = pc_memdup(c->encoded, c->encoded_len);
  *len = c->encoded_len;
  if (expires_out)
    *expires_out = torcert_expires(c);
  torcert_free(c);
  return out;
}

/* Check a stored type-4 cert (body after the tor header) against our
 * identity. Returns 0 and sets *certified / *expires, or -1 with *why. */
static int
cert4_check(const uint8_t *buf, size_t len,
            const uint8_t id_pub[ED25519_PUBKEY_LEN],
            uint8_t certified[ED25519_PUBKEY_LEN], time_t *expires,
            const char **why)
{
  torcert_t *c = NULL;
  if (len < HDR_LEN || !hdr_is(buf, len, TAG_ED_CERT4)) {
    *why = "wrong header";
    return -1;
  }
  if (torcert_parse(buf + HDR_LEN, len - HDR_LEN, &c) < 0) {
    *why = "malformed certificate";
    return -1;
  }
  int r = -1;
  if (c->cert_type != TORCERT_TYPE_ID_SIGNING)
    *why = "not a type-4 certificate";
  else if (!c->signing_key_included)
    *why = "certificate lacks the signed-with-key extension";
  else if (torcert_checksig(c, id_pub, 0) < 0)
    *why = "certificate is not signed by our ed25519 identity";
  else {
    memcpy(certified, c->certified_key, ED25519_PUBKEY_LEN);
    *expires = torcert_expires(c);
    r = 0;
  }
  torcert_free(c);
  return r;
}

/* A hostname like tor's random certificate names: "www." + 8 to 20
 * base32 letters + suffix. */
static char *
random_hostname(const char *suffix)
{
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  char name[21];
  size_t n = 8 + (size_t)crypt_rand_u64_below(13);
  for (size_t i = 0; i < n; i++)
    name[i] = alphabet[crypt_rand_u64_below(32)];
  name[n] = '\0';
  return pc_asprintf("www.%s%s", name, suffix);
}

typedef struct rsa_certs_t {
  uint8_t *id_cert, *crosscert;
  size_t id_cert_len, crosscert_len;
  time_t id_cert_expires, crosscert_expires;
} rsa_certs_t;

static int
make_rsa_certs(rsa_certs_t *out, const crypt_rsa_t *rsa,
               const uint8_t ed_id[ED25519_PUBKEY_LEN], time_t now)
{
  memset(out, 0, sizeof(*out));
  char *cn = random_hostname(".net");
  time_t nb = now - DAY;
  time_t na = now + (time_t)ROUTER_KEYS_RSA_CERT_LIFETIME_DAYS * DAY;
  int r = x509_make_self_signed(rsa, cn, nb, na, &out->id_cert,
                                &out->id_cert_len);
  free(cn);
  if (r < 0) {
    log_warn("Cannot make the RSA identity certificate");
    return -1;
  }
  out->id_cert_expires = na;
  time_t ce = now + (time_t)ROUTER_KEYS_CROSSCERT_LIFETIME_DAYS * DAY;
  if (rsa_ed_crosscert_create(ed_id, rsa, ce, &out->crosscert,
                              &out->crosscert_len) < 0) {
    log_warn("Cannot make the RSA->Ed25519 cross-certificate");
    PC_FREE(out->id_cert);
    return -1;
  }
  rsa_ed_crosscert_t parsed;
  if (rsa_ed_crosscert_parse(&parsed, out->crosscert, out->crosscert_len) <
      0) {
    log_warn("Cannot parse our own RSA->Ed25519 cross-certificate");
    PC_FREE(out->id_cert);
    PC_FREE(out->crosscert);
    return -1;
  }
  out->crosscert_expires = (time_t)parsed.expiration_hours * 3600;
  return 0;
}

typedef struct link_certs_t {
  tls_context_t *tls; /* only when a new context was made */
  uint8_t *link_cert, *auth_cert;
  size_t link_cert_len, auth_cert_len;
  ed25519_keypair_t auth;
  time_t expires;
} link_certs_t;

/* Type-5 cert for tls's certificate (a new context if tls is NULL) and a
 * new authentication key with its type-6 cert, signed by signing. */
static int
make_link_certs(link_certs_t *out, tls_context_t *tls,
                const ed25519_keypair_t *signing, time_t now)
{
  memset(out, 0, sizeof(*out));
  if (!tls) {
    out->tls = tls_context_new(ROUTER_KEYS_TLS_CERT_LIFETIME_DAYS);
    if (!out->tls) {
      log_warn("Cannot make the TLS context");
      return -1;
    }
    tls = out->tls;
  }
  size_t derlen = 0;
  const uint8_t *der = tls_context_cert_der(tls, &derlen);
  uint8_t digest[DIGEST_SHA256_LEN];
  time_t exp = now + (time_t)ROUTER_KEYS_LINK_CERT_LIFETIME_DAYS * DAY;
  time_t e5 = 0, e6 = 0;
  if (!der || !derlen)
    goto err;
  crypt_sha256(digest, der, derlen);
  out->link_cert = make_cert(signing, TORCERT_TYPE_SIGNING_LINK,
                             TORCERT_KEY_SHA256_X509, digest, exp,
                             &out->link_cert_len, &e5);
  if (!out->link_cert)
    goto err;
  ed25519_keypair_generate(&out->auth);
  out->auth_cert = make_cert(signing, TORCERT_TYPE_SIGNING_AUTH,
                             TORCERT_KEY_ED25519, out->auth.pub, exp,
                             &out->auth_cert_len, &e6);
  if (!out->auth_cert)
    goto err;
  out->expires = e5 < e6 ? e5 : e6;
  return 0;
 err:
  log_warn("Cannot make the link certificates");
  free(out->link_cert);
  ed25519_keypair_wipe(&out->auth);
  tls_context_free(out->tls);
  memset(out, 0, sizeof(*out));
  return -1;
}

static void
install_rsa_certs(rk_state_t *st, rsa_certs_t *rc)
{
  relay_keys_t *k = &st->k;
  free(k->rsa_id_cert);
  free(k->rsa_ed_crosscert);
  k->rsa_id_cert = rc->id_cert;
  k->rsa_id_cert_len = rc->id_cert_len;
  k->rsa_ed_crosscert = rc->crosscert;
  k->rsa_ed_crosscert_len = rc->crosscert_len;
  st->rsa_cert_expires = rc->id_cert_expires;
  st->crosscert_expires = rc->crosscert_expires;
  memset(rc, 0, sizeof(*rc));
}

static void
install_link_certs(rk_state_t *st, link_certs_t *lc)
{
  relay_keys_t *k = &st->k;
  if (lc->tls) {
    tls_context_free(k->tls);
    k->tls = lc->tls;
  }
  free(k->tls_link_cert);
  free(k->ed_auth_cert);
  k->tls_link_cert = lc->link_cert;
  k->tls_link_cert_len = lc->link_cert_len;
  k->ed_auth_cert = lc->auth_cert;
  k->ed_auth_cert_len = lc->auth_cert_len;
  ed25519_keypair_wipe(&k->ed_link_auth);
  k->ed_link_auth = lc->auth;
  st->link_certs_expire = lc->expires;
  pc_memwipe(lc, sizeof(*lc));
}

/* ---------------------------------------------------------------- */
/* Configuration */

void
router_keys_config_init(router_keys_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->onion_key_rotation_days = ROUTER_KEYS_ONION_ROTATION_DAYS_DEFAULT;
  cfg->onion_key_grace_days = ROUTER_KEYS_ONION_GRACE_DAYS_DEFAULT;
}

static int
config_check(const router_keys_config_t *cfg, char **err)
{
  if (cfg->onion_key_rotation_days < 1 ||
      cfg->onion_key_rotation_days > 3650) {
    rk_seterr(err, "Onion key rotation period of %d days is out of range "
              "(1 to 3650)", cfg->onion_key_rotation_days);
    return -1;
  }
  if (cfg->onion_key_grace_days < 0 ||
      cfg->onion_key_grace_days > cfg->onion_key_rotation_days) {
    rk_seterr(err, "Onion key grace period of %d days is out of range "
              "(0 to the rotation period, %d)", cfg->onion_key_grace_days,
              cfg->onion_key_rotation_days);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- */
/* Maintenance */

/* The ntor schedule at now: what nf should become. Returns ROTATED bits
 * (0 if nothing changes). */
static int
ntor_schedule(ntor_file_t *nf, const router_keys_config_t *cfg, time_t now)
{
  int bits = 0;
  if (nf->created > now + NTOR_FUTURE_SLACK) {
    log_warn("The ntor onion key claims to be made in the future; the "
             "clock must have moved back. Restarting its rotation schedule.");
    nf->created = now;
  }
  if (now - nf->created >= (time_t)cfg->onion_key_rotation_days * DAY) {
    nf->previous = nf->current;
    nf->has_previous = 1;
    curve25519_keypair_generate(&nf->current);
    nf->created = now;
    bits |= ROUTER_KEYS_ROTATED_NTOR;
  }
  if (nf->has_previous &&
      now - nf->created >= (time_t)cfg->onion_key_grace_days * DAY) {
    curve25519_keypair_wipe(&nf->previous);
    nf->has_previous = 0;
    bits |= ROUTER_KEYS_DROPPED_NTOR_OLD;
  }
  return bits;
}

static int
maintain(rk_state_t *st, const rk_paths_t *paths,
         const router_keys_config_t *cfg, time_t now, int *rotated,
         char **err)
{
  relay_keys_t *k = &st->k;
  int bits = 0;
  int r = -1;
  ntor_file_t nf;
  crypt_rsa_t *new_tap = NULL;
  ed25519_keypair_t new_signing;
  uint8_t *new_cert4 = NULL;
  size_t new_cert4_len = 0;
  time_t new_cert4_expires = 0;
  rsa_certs_t rc;
  link_certs_t lc;
  int have_rc = 0, have_lc = 0;

  memset(&new_signing, 0, sizeof(new_signing));
  memset(&rc, 0, sizeof(rc));
  memset(&lc, 0, sizeof(lc));

  /* ntor keys */
  nf.created = st->ntor_created;
  nf.current = k->ntor_current;
  nf.previous = k->ntor_previous;
  nf.has_previous = k->has_ntor_previous;
  int clock_fix = nf.created > now + NTOR_FUTURE_SLACK;
  int nbits = ntor_schedule(&nf, cfg, now);
  /* A new TAP key goes with a new ntor key; it is stored first, so that
   * the ntor file (which holds the schedule) commits the rotation. */
  if (nbits & ROUTER_KEYS_ROTATED_NTOR) {
    new_tap = crypt_rsa_generate(RSA1024_BITS);
    if (write_rsa(paths->tap, new_tap, err) < 0)
      goto done;
  }
  if ((nbits || clock_fix) && write_ntor(paths->ntor, &nf, err) < 0)
    goto done;

  /* signing key */
  const ed25519_keypair_t *signing = &k->ed_signing;
  if (k->ed_signing_expires - now <
      (time_t)ROUTER_KEYS_SIGNING_RENEW_DAYS * DAY) {
    ed25519_keypair_generate(&new_signing);
    new_cert4 = make_cert(&k->ed_identity, TORCERT_TYPE_ID_SIGNING,
                          TORCERT_KEY_ED25519, new_signing.pub,
                          now + (time_t)ROUTER_KEYS_SIGNING_LIFETIME_DAYS * DAY,
                          &new_cert4_len, &new_cert4_expires);
    if (!new_cert4) {
      rk_seterr(err, "Cannot certify a new ed25519 signing key");
      goto done;
    }
    if (write_ed_seed(paths->ed_sign_seed, TAG_ED_SIGN_SEED, &new_signing,
                      err) < 0 ||
        write_cert4(paths->ed_sign_cert, new_cert4, new_cert4_len, err) < 0)
      goto done;
    signing = &new_signing;
    bits |= ROUTER_KEYS_ROTATED_SIGNING;
  }

  /* certificates kept only in memory */
  if (!k->rsa_id_cert || !k->rsa_ed_crosscert ||
      st->rsa_cert_expires - now < RSA_CERTS_RENEW_SECS ||
      st->crosscert_expires - now < RSA_CERTS_RENEW_SECS) {
    if (make_rsa_certs(&rc, k->rsa_identity, k->ed_identity.pub, now) < 0) {
      rk_seterr(err, "Cannot make the RSA identity certificates");
      goto done;
    }
    have_rc = 1;
  }
  if (!k->tls || !k->tls_link_cert || !k->ed_auth_cert ||
      (bits & ROUTER_KEYS_ROTATED_SIGNING) ||
      st->link_certs_expire - now < LINK_CERTS_RENEW_SECS) {
    if (make_link_certs(&lc, k->tls, signing, now) < 0) {
      rk_seterr(err, "Cannot make the link certificates");
      goto done;
    }
    have_lc = 1;
  }

  /* Everything is made and stored: commit. */
  bits |= nbits;
  k->ntor_current = nf.current;
  k->ntor_previous = nf.previous;
  k->has_ntor_previous = nf.has_previous;
  if (!nf.has_previous)
    curve25519_keypair_wipe(&k->ntor_previous);
  st->ntor_created = nf.created;
  if (new_tap) {
    crypt_rsa_free(k->tap_onion_key);
    k->tap_onion_key = new_tap;
    new_tap = NULL;
  }
  if (bits & ROUTER_KEYS_ROTATED_SIGNING) {
    ed25519_keypair_wipe(&k->ed_signing);
    k->ed_signing = new_signing;
    free(k->ed_signing_cert);
    k->ed_signing_cert = new_cert4;
    k->ed_signing_cert_len = new_cert4_len;
    k->ed_signing_expires = new_cert4_expires;
    new_cert4 = NULL;
  }
  if (have_rc) {
    install_rsa_certs(st, &rc);
    bits |= ROUTER_KEYS_RENEWED_CERTS;
  }
  if (have_lc) {
    install_link_certs(st, &lc);
    bits |= ROUTER_KEYS_RENEWED_CERTS;
  }
  if (bits & ROUTER_KEYS_ROTATED_NTOR)
    log_notice("Rotated the ntor and TAP onion keys.");
  if (bits & ROUTER_KEYS_DROPPED_NTOR_OLD)
    log_info("Dropped the previous ntor onion key (grace period over).");
  if (bits & ROUTER_KEYS_ROTATED_SIGNING) {
    char when[TIME_ISO_LEN + 1];
    time_format_iso(when, k->ed_signing_expires);
    log_notice("Made a new ed25519 signing key, certified until %s UTC.",
               when);
  }
  r = 0;

 done:
  if (r < 0) {
    free(rc.id_cert);
    free(rc.crosscert);
    if (have_lc) {
      free(lc.link_cert);
      free(lc.auth_cert);
      tls_context_free(lc.tls);
    }
  }
  free(new_cert4);
  crypt_rsa_free(new_tap);
  ntor_file_wipe(&nf);
  pc_memwipe(&new_signing, sizeof(new_signing));
  pc_memwipe(&lc, sizeof(lc));
  if (rotated)
    *rotated = r == 0 ? bits : 0;
  return r;
}

int
router_keys_rotate_if_needed(relay_keys_t *k, const char *datadir,
                             const router_keys_config_t *cfg, time_t now,
                             int *rotated)
{
  router_keys_config_t defaults;
  char *err = NULL;
  rk_paths_t paths;
  if (rotated)
    *rotated = 0;
  if (!cfg) {
    router_keys_config_init(&defaults);
    cfg = &defaults;
  }
  if (config_check(cfg, &err) < 0) {
    log_warn("%s", err);
    free(err);
    return -1;
  }
  rk_state_t *st = rk_state(k);
  rk_paths_init(&paths, datadir);
  int r = maintain(st, &paths, cfg, now, rotated, &err);
  if (r < 0) {
    log_warn("Key maintenance failed: %s", err ? err : "unknown error");
    free(err);
  }
  rk_paths_clear(&paths);
  return r;
}

time_t
router_keys_ntor_created(const relay_keys_t *k)
{
  return rk_state((relay_keys_t *)k)->ntor_created;
}

/* ---------------------------------------------------------------- */
/* Fingerprints */

char *
router_keys_format_rsa_fingerprint(const char *nickname,
                                   const uint8_t digest[20], int with_spaces)
{
  char hex[2 * DIGEST_SHA1_LEN + 1];
  char spaced[2 * DIGEST_SHA1_LEN + DIGEST_SHA1_LEN / 2];
  const char *fp = hex;
  base16_encode(hex, sizeof(hex), digest, DIGEST_SHA1_LEN, BASE16_UPPER);
  if (with_spaces) {
    char *o = spaced;
    for (size_t i = 0; i < 2 * DIGEST_SHA1_LEN; i += 4) {
      if (i)
        *o++ = ' ';
      memcpy(o, hex + i, 4);
      o += 4;
    }
    *o = '\0';
    fp = spaced;
  }
  if (nickname)
    return pc_asprintf("%s %s", nickname, fp);
  return pc_strdup(fp);
}

char *
router_keys_format_ed25519_id(const char *nickname, const uint8_t pub[32])
{
  char b64[64];
  base64_encode(b64, sizeof(b64), pub, ED25519_PUBKEY_LEN, BASE64_NOPAD);
  if (nickname)
    return pc_asprintf("%s %s", nickname, b64);
  return pc_strdup(b64);
}

/* Write path with content + "\n" unless it already holds exactly that. */
static int
write_text_if_changed(const char *path, const char *content, char **err)
{
  char *want = pc_asprintf("%s\n", content);
  size_t wantlen = strlen(want);
  uint8_t *have = NULL;
  size_t havelen = 0;
  int r = 0;
  if (fs_read_file(path, 4096, &have, &havelen) == 0 && havelen == wantlen &&
      memcmp(have, want, wantlen) == 0) {
    r = 0;
  } else {
    r = rk_write(path, want, wantlen, err);
  }
  free(have);
  free(want);
  return r;
}

int
router_keys_write_fingerprints(const relay_keys_t *k, const char *datadir,
                               const char *nickname, char **err)
{
  if (!nickname)
    nickname = "Unnamed";
  char *fp = router_keys_format_rsa_fingerprint(nickname, k->rsa_id_digest, 0);
  char *ed = router_keys_format_ed25519_id(nickname, k->ed_identity.pub);
  char *fp_path = pc_asprintf("%s/fingerprint", datadir);
  char *ed_path = pc_asprintf("%s/fingerprint-ed25519", datadir);
  int r = -1;
  if (write_text_if_changed(fp_path, fp, err) == 0 &&
      write_text_if_changed(ed_path, ed, err) == 0)
    r = 0;
  free(fp);
  free(ed);
  free(fp_path);
  free(ed_path);
  return r;
}

/* ---------------------------------------------------------------- */
/* Loading */

static int
private_dir(const char *path, char **err)
{
  char *msg = NULL;
  if (fs_check_private_dir(path, &msg) < 0) {
    rk_seterr(err, "%s", msg ? msg : path);
    free(msg);
    return -1;
  }
  return 0;
}

static rk_state_t *
rk_state_new(void)
{
  rk_state_t *st = pc_zalloc(sizeof(*st));
  st->magic = RK_MAGIC;
  return st;
}

void
router_keys_free_(relay_keys_t *k)
{
  if (!k)
    return;
  rk_state_t *st = rk_state(k);
  crypt_rsa_free(k->rsa_identity);
  crypt_rsa_free(k->tap_onion_key);
  free(k->rsa_id_cert);
  free(k->rsa_ed_crosscert);
  free(k->ed_signing_cert);
  tls_context_free(k->tls);
  free(k->tls_link_cert);
  free(k->ed_auth_cert);
  pc_memwipe(st, sizeof(*st));
  free(st);
}

/* Phase 1 result: what the existing files hold. */
typedef struct loaded_t {
  crypt_rsa_t *rsa;
  int have_ed_id, have_ed_id_pub_file;
  ed25519_keypair_t ed_id;
  int have_signing, have_cert4;
  ed25519_keypair_t signing;
  uint8_t cert4_key[ED25519_PUBKEY_LEN];
  uint8_t *cert4;
  size_t cert4_len;
  time_t cert4_expires;
  int have_ntor;
  ntor_file_t ntor;
  crypt_rsa_t *tap;
} loaded_t;

static void
loaded_clear(loaded_t *l)
{
  crypt_rsa_free(l->rsa);
  crypt_rsa_free(l->tap);
  free(l->cert4);
  pc_memwipe(l, sizeof(*l));
}

/* Read and check every existing key file; write nothing. */
static int
load_existing(loaded_t *l, const rk_paths_t *p, char **err)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  const char *why = NULL;
  int r;

  /* RSA identity */
  if ((r = rk_read(p->rsa_id, RSA_FILE_MAX, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    l->rsa = rsa_parse(buf, len, &why);
    rk_free_secret(buf, len);
    if (!l->rsa) {
      rk_corrupt(err, p->rsa_id, why);
      return -1;
    }
  }

  /* Ed25519 identity */
  if ((r = rk_read(p->ed_id_seed, SEED_FILE_LEN + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    r = ed_seed_parse(buf, len, TAG_ED_ID_SEED, &l->ed_id, &why);
    rk_free_secret(buf, len);
    if (r < 0) {
      rk_corrupt(err, p->ed_id_seed, why);
      return -1;
    }
    l->have_ed_id = 1;
  }
  if ((r = rk_read(p->ed_id_pub, PUB_FILE_LEN + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    l->have_ed_id_pub_file = 1;
    if (len != PUB_FILE_LEN || !hdr_is(buf, len, TAG_ED_PUB)) {
      free(buf);
      rk_corrupt(err, p->ed_id_pub,
                 len != PUB_FILE_LEN ? "wrong size" : "wrong header");
      return -1;
    }
    if (l->have_ed_id &&
        memcmp(buf + HDR_LEN, l->ed_id.pub, ED25519_PUBKEY_LEN) != 0) {
      free(buf);
      rk_corrupt(err, p->ed_id_pub,
                 "does not match the identity in " FN_ED_ID_SEED);
      return -1;
    }
    free(buf);
    if (!l->have_ed_id) {
      if (fs_file_exists(p->tor_ed_id_secret))
        rk_seterr(err,
                  "%s holds a tor ed25519 identity key, which pctor cannot "
                  "use, and %s is missing; refusing to start with a "
                  "different identity. Use a new DataDirectory, or move "
                  "%s away to create a new identity.",
                  p->tor_ed_id_secret, p->ed_id_seed, p->keydir);
      else
        rk_seterr(err,
                  "%s exists but %s is missing (pctor does not support "
                  "offline master keys); refusing to start with a "
                  "different identity. Move %s away to create a new one.",
                  p->ed_id_pub, p->ed_id_seed, p->ed_id_pub);
      return -1;
    }
  }

  /* Medium-term signing key and its certificate */
  if ((r = rk_read(p->ed_sign_seed, SEED_FILE_LEN + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    r = ed_seed_parse(buf, len, TAG_ED_SIGN_SEED, &l->signing, &why);
    rk_free_secret(buf, len);
    if (r < 0) {
      rk_corrupt(err, p->ed_sign_seed, why);
      return -1;
    }
    l->have_signing = 1;
  }
  if ((r = rk_read(p->ed_sign_cert, CERT_FILE_MAX, &buf, &len, err)) < 0)
    return -1;
  if (r && l->have_ed_id) {
    /* (Without our identity the certificate is a leftover to replace.) */
    r = cert4_check(buf, len, l->ed_id.pub, l->cert4_key, &l->cert4_expires,
                    &why);
    if (r < 0) {
      free(buf);
      rk_corrupt(err, p->ed_sign_cert, why);
      return -1;
    }
    l->cert4_len = len - HDR_LEN;
    l->cert4 = pc_memdup(buf + HDR_LEN, l->cert4_len);
    l->have_cert4 = 1;
  }
  free(buf);
  buf = NULL;

  /* ntor onion keys */
  if ((r = rk_read(p->ntor, NTOR_FILE_LEN(2) + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    r = ntor_file_parse(buf, len, &l->ntor, &why);
    rk_free_secret(buf, len);
    if (r < 0) {
      rk_corrupt(err, p->ntor, why);
      return -1;
    }
    l->have_ntor = 1;
  }

  /* TAP onion key */
  if ((r = rk_read(p->tap, RSA_FILE_MAX, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    l->tap = rsa_parse(buf, len, &why);
    rk_free_secret(buf, len);
    if (!l->tap) {
      rk_corrupt(err, p->tap, why);
      return -1;
    }
  }
  return 0;
}

/* Phase 2: make and store what is missing. */
static int
create_missing(rk_state_t *st, loaded_t *l, const rk_paths_t *p, time_t now,
               char **err)
{
  relay_keys_t *k = &st->k;

  if (!l->rsa) {
    log_notice("Generating a new RSA-1024 identity key in %s.", p->rsa_id);
    l->rsa = crypt_rsa_generate(RSA1024_BITS);
    if (write_rsa(p->rsa_id, l->rsa, err) < 0)
      return -1;
  }
  k->rsa_identity = l->rsa;
  l->rsa = NULL;
  if (crypt_rsa_fingerprint(k->rsa_identity, k->rsa_id_digest) < 0) {
    rk_seterr(err, "Cannot compute the RSA identity digest");
    return -1;
  }

  if (!l->have_ed_id) {
    log_notice("Generating a new ed25519 identity key in %s.",
               p->ed_id_seed);
    ed25519_keypair_generate(&l->ed_id);
    if (write_ed_seed(p->ed_id_seed, TAG_ED_ID_SEED, &l->ed_id, err) < 0)
      return -1;
    l->have_ed_id = 1;
    l->have_signing = l->have_cert4 = 0; /* leftovers of another identity */
  }
  if (!l->have_ed_id_pub_file &&
      write_ed_pub(p->ed_id_pub, l->ed_id.pub, err) < 0)
    return -1;
  k->ed_identity = l->ed_id;

  if (l->have_signing && l->have_cert4 &&
      memcmp(l->cert4_key, l->signing.pub, ED25519_PUBKEY_LEN) == 0) {
    k->ed_signing = l->signing;
    k->ed_signing_cert = l->cert4;
    k->ed_signing_cert_len = l->cert4_len;
    k->ed_signing_expires = l->cert4_expires;
    l->cert4 = NULL;
  } else {
    if (l->have_signing && l->have_cert4)
      log_notice("%s certifies another key than %s (interrupted renewal?); "
                 "making a new signing key.", p->ed_sign_cert,
                 p->ed_sign_seed);
    /* ed_signing_expires = 0: maintain() makes a new signing key. */
  }

  if (!l->have_ntor) {
    log_notice("Generating a new ntor onion key in %s.", p->ntor);
    curve25519_keypair_generate(&l->ntor.current);
    l->ntor.created = now;
    l->ntor.has_previous = 0;
    if (write_ntor(p->ntor, &l->ntor, err) < 0)
      return -1;
  }
  k->ntor_current = l->ntor.current;
  k->ntor_previous = l->ntor.previous;
  k->has_ntor_previous = l->ntor.has_previous;
  st->ntor_created = l->ntor.created;

  /* A data directory from before pctor kept a TAP key gets one now (it is
   * not an identity: nothing is lost by making it). */
  if (!l->tap) {
    log_notice("Generating a new TAP onion key in %s.", p->tap);
    l->tap = crypt_rsa_generate(RSA1024_BITS);
    if (write_rsa(p->tap, l->tap, err) < 0)
      return -1;
  }
  k->tap_onion_key = l->tap;
  l->tap = NULL;
  return 0;
}

relay_keys_t *
router_keys_load_or_create(const char *datadir,
                           const router_keys_config_t *cfg, time_t now,
                           char **err)
{
  router_keys_config_t defaults;
  rk_paths_t paths;
  loaded_t l;
  rk_state_t *st = NULL;

  if (err)
    *err = NULL;
  if (!cfg) {
    router_keys_config_init(&defaults);
    cfg = &defaults;
  }
  if (!datadir || !*datadir) {
    rk_seterr(err, "No DataDirectory for the relay keys");
    return NULL;
  }
  if (config_check(cfg, err) < 0)
    return NULL;

  memset(&l, 0, sizeof(l));
  rk_paths_init(&paths, datadir);
  if (private_dir(datadir, err) < 0 || private_dir(paths.keydir, err) < 0)
    goto err;
  if (load_existing(&l, &paths, err) < 0)
    goto err;
  if (cfg->read_only && (!l.rsa || !l.have_ed_id || !l.have_ntor ||
                         !l.have_ed_id_pub_file)) {
    if (err)
      *err = pc_asprintf("%s holds no complete set of relay keys",
                         paths.keydir);
    goto err;
  }
  st = rk_state_new();
  if (create_missing(st, &l, &paths, now, err) < 0)
    goto err;
  if (!cfg->read_only) {
    if (maintain(st, &paths, cfg, now, NULL, err) < 0)
      goto err;
    if (router_keys_write_fingerprints(&st->k, datadir, cfg->nickname,
                                       err) < 0)
      goto err;
  }
  loaded_clear(&l);
  rk_paths_clear(&paths);
  return &st->k;

 err:
  loaded_clear(&l);
  rk_paths_clear(&paths);
  if (st)
    router_keys_free_(&st->k);
  return NULL;
}
