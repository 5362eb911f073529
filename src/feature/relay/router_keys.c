/* SPDX-License-Identifier: BSD-3-Clause */
/* router_keys.c -- create, store, load and rotate a relay's keys, in tor's
 * own files and formats.
 *
 * Files in the key directory (KeyDirectory, by default DataDirectory/keys;
 * directory 0700, files 0600, each written atomically: a temporary file,
 * fsync, rename). The names and formats are tor's (tor(1) FILES, and what
 * tor 0.4.9 writes; tests/data/torkeys holds a set made by tor itself):
 *
 *   secret_id_key  RSA-1024 identity as PEM "RSA PRIVATE KEY" (PKCS#1),
 *       64-column base64, followed by a NUL byte (tor writes the C
 *       string with its terminator; a file without it is read too).
 *   ed25519_master_id_secret_key  (96 bytes)
 *       "== ed25519v1-secret: type0 ==" NUL-padded to 32 bytes, then the
 *       64-byte expanded secret key: the clamped scalar (little-endian) and
 *       the nonce prefix, i.e. SHA-512 of an RFC 8032 seed with its first
 *       half clamped. The seed itself is not stored, so signing uses
 *       ed25519_sign() on an expanded-only keypair (lib/crypt/ed25519.h).
 *   ed25519_master_id_secret_key_encrypted  tor's passphrase-protected
 *       form: "== Boxed Ed25519 key: master ==" NUL-padded to 32, then a
 *       TORBOX00 box (lib/crypt/pwbox.h) of the 64-byte expanded key.
 *       Only --keygen opens it (with a passphrase); a running relay
 *       treats such a master key as offline, as tor does.
 *   ed25519_master_id_public_key  (64 bytes)
 *       "== ed25519v1-public: type0 ==" NUL-padded to 32, the public key.
 *   ed25519_signing_secret_key  (96 bytes)
 *       "== ed25519v1-secret: type4 ==" NUL-padded to 32, expanded key.
 *   ed25519_signing_cert
 *       "== ed25519v1-cert: type4 ==" NUL-padded to 32, the type-4 cert
 *       (identity -> signing key, with the signed-with-key extension).
 *   secret_onion_key_ntor, secret_onion_key_ntor.old  (96 bytes each)
 *       "== c25519v1: onion ==" NUL-padded to 32, secret[32], public[32]:
 *       the current curve25519 onion key and the previous one during its
 *       grace period.
 *   secret_onion_key, secret_onion_key.old  RSA-1024 TAP onion keys, PEM
 *       like secret_id_key. TAP handshakes are refused, but the
 *       authorities still require the key in the descriptor; it rotates
 *       with the ntor key.
 *
 * tor keeps the time of the last onion-key rotation in its state file;
 * pctor takes it from the modification time of secret_onion_key_ntor,
 * which it sets to the rotation time whenever it writes that file. Either
 * program can therefore take over the other's key directory: the worst
 * case is one rotation earlier or later than the other would have made.
 *
 * pctor 0.x before this file's tor layout used files of its own
 * (ed25519_master_id_seed, ed25519_signing_seed: a pctor header, the
 * RFC 8032 seed and the public key; ntor_onion_keys: a pctor header, the
 * creation time, and one or two curve25519 key pairs). Such a directory is
 * read once and converted: the keys are written in tor's files (the ntor
 * creation time becomes the file's modification time) and the old files
 * are removed, so the identity survives and tor can use it too.
 *
 * Offline master key (tor's OfflineMasterKey, or simply no master secret
 * next to ed25519_master_id_public_key): the relay then runs on the
 * signing key and certificate found in the key directory, never makes a
 * signing key itself, refuses to start when they are missing, do not
 * match or have expired, warns as expiry approaches, and adopts a newer
 * pair that the operator copies in (checked by the periodic maintenance
 * during the last ROUTER_KEYS_SIGNING_RENEW_DAYS).
 *
 * Design choices:
 * - Every stored secret is checked when loaded: the ed25519 public key
 *   file and the certificate must match the secret key, an ntor file's
 *   public half must match its secret half, an RSA key must sign and
 *   verify. A failing file is named in the error and never replaced.
 * - Loading is done in phases: first every existing file is read and
 *   checked (no writes at all, so a corrupt file makes start-up fail
 *   without touching anything), then missing keys are made, pctor's older
 *   files converted, due rotations done, the certificates built, and
 *   finally the fingerprint files written.
 * - A missing file is created, except the master secret when the public
 *   key file exists: that is an offline master key (see above), and
 *   making a new identity there would silently change who we are.
 * - The signing key is stored as two files; renewal writes the secret key,
 *   then the certificate. A crash in between leaves a certificate that is
 *   valid and signed by our identity but certifies another key: that is
 *   treated as "renewal needed", not as corruption.
 * - Onion-key rotation writes the .old files first (copies of the keys
 *   being retired), then the new TAP key, then the new ntor key, whose
 *   modification time commits the rotation: a crash at any point leaves a
 *   directory that loads, and at worst rotates again.
 * - The relay_keys_t given to core is the first member of a private
 *   struct that also holds the schedule (ntor key creation, certificate
 *   expiries), so core keeps seeing plain data and this file finds its
 *   bookkeeping from the same pointer.
 * - Maintenance builds replacements first and changes the struct only once
 *   everything needed is made and stored, so a failed write leaves the
 *   keys in memory as they were.
 * - The ntor fields of relay_keys_t are this file's (event-loop) copy;
 *   handshakes on worker threads read the reference-counted onion_keys_t
 *   set, which is replaced (never changed) whenever the ntor keys change
 *   (relay_keys_update_onion()), so a rotation cannot pull keys from under
 *   a worker. The TAP key is freed on rotation: only the event loop uses
 *   it (descriptors); TAP handshakes are refused.
 */
#include "feature/relay/router_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/proto/torcert.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/pwbox.h"
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
#define FN_ED_ID_SECRET "ed25519_master_id_secret_key"
#define FN_ED_ID_SECRET_ENC "ed25519_master_id_secret_key_encrypted"
#define FN_ED_ID_PUB "ed25519_master_id_public_key"
#define FN_ED_SIGN_SECRET "ed25519_signing_secret_key"
#define FN_ED_SIGN_CERT "ed25519_signing_cert"
#define FN_NTOR "secret_onion_key_ntor"
#define FN_NTOR_OLD "secret_onion_key_ntor.old"
#define FN_TAP "secret_onion_key"
#define FN_TAP_OLD "secret_onion_key.old"
/* pctor's earlier layout, read and converted */
#define FN_OLD_ED_ID_SEED "ed25519_master_id_seed"
#define FN_OLD_ED_SIGN_SEED "ed25519_signing_seed"
#define FN_OLD_NTOR "ntor_onion_keys"

#define HDR_LEN 32
#define TAG_ED_ID_SECRET "== ed25519v1-secret: type0 =="
#define TAG_ED_SIGN_SECRET "== ed25519v1-secret: type4 =="
#define TAG_ED_PUB "== ed25519v1-public: type0 =="
#define TAG_ED_CERT4 "== ed25519v1-cert: type4 =="
#define TAG_ED_ID_BOXED "== Boxed Ed25519 key: master =="
#define TAG_NTOR "== c25519v1: onion =="
#define TAG_OLD_ED_ID_SEED "== pctor ed25519 identity v1 =="
#define TAG_OLD_ED_SIGN_SEED "== pctor ed25519 signing v1 =="
#define TAG_OLD_NTOR "== pctor ntor onion keys v1 =="

#define SECRET_FILE_LEN (HDR_LEN + ED25519_EXPANDED_LEN)
#define SEED_FILE_LEN (HDR_LEN + ED25519_SEED_LEN + ED25519_PUBKEY_LEN)
#define PUB_FILE_LEN (HDR_LEN + ED25519_PUBKEY_LEN)
#define NTOR_KEY_LEN (2 * CURVE25519_KEY_LEN)
#define NTOR_FILE_LEN (HDR_LEN + NTOR_KEY_LEN)
#define OLD_NTOR_FILE_LEN(n) (HDR_LEN + 8 + 1 + (n) * NTOR_KEY_LEN)
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
  int offline;    /* no master secret: never make a signing key */
  int offline_warned; /* 1: near expiry was logged, 2: expiry was */
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
  char *rsa_id, *ed_id_secret, *ed_id_secret_enc, *ed_id_pub;
  char *ed_sign_secret, *ed_sign_cert;
  char *ntor, *ntor_old, *tap, *tap_old;
  char *old_ed_id_seed, *old_ed_sign_seed, *old_ntor;
} rk_paths_t;

static void
rk_paths_init(rk_paths_t *p, const char *datadir,
              const router_keys_config_t *cfg)
{
  if (cfg && cfg->key_directory && *cfg->key_directory)
    p->keydir = pc_strdup(cfg->key_directory);
  else
    p->keydir = pc_asprintf("%s/%s", datadir, KEYS_SUBDIR);
#define RK_PATH(field, name) p->field = pc_asprintf("%s/%s", p->keydir, name)
  RK_PATH(rsa_id, FN_RSA_ID);
  RK_PATH(ed_id_secret, FN_ED_ID_SECRET);
  RK_PATH(ed_id_secret_enc, FN_ED_ID_SECRET_ENC);
  RK_PATH(ed_id_pub, FN_ED_ID_PUB);
  RK_PATH(ed_sign_secret, FN_ED_SIGN_SECRET);
  RK_PATH(ed_sign_cert, FN_ED_SIGN_CERT);
  RK_PATH(ntor, FN_NTOR);
  RK_PATH(ntor_old, FN_NTOR_OLD);
  RK_PATH(tap, FN_TAP);
  RK_PATH(tap_old, FN_TAP_OLD);
  RK_PATH(old_ed_id_seed, FN_OLD_ED_ID_SEED);
  RK_PATH(old_ed_sign_seed, FN_OLD_ED_SIGN_SEED);
  RK_PATH(old_ntor, FN_OLD_NTOR);
#undef RK_PATH
}

static void
rk_paths_clear(rk_paths_t *p)
{
  char **all[] = { &p->keydir, &p->rsa_id, &p->ed_id_secret,
                   &p->ed_id_secret_enc, &p->ed_id_pub, &p->ed_sign_secret,
                   &p->ed_sign_cert, &p->ntor, &p->ntor_old, &p->tap,
                   &p->tap_old, &p->old_ed_id_seed, &p->old_ed_sign_seed,
                   &p->old_ntor };
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    free(*all[i]);
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

/* Remove path; a file that is already gone is fine. */
static int
rk_unlink(const char *path, char **err)
{
  if (unlink(path) < 0 && errno != ENOENT) {
    rk_seterr(err, "Cannot remove %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* Modification time of path in *t. 0, or -1 (with *err). */
static int
rk_mtime(const char *path, time_t *t, char **err)
{
  struct stat sb;
  if (stat(path, &sb) < 0) {
    rk_seterr(err, "Cannot stat %s: %s", path, strerror(errno));
    return -1;
  }
  *t = sb.st_mtime;
  return 0;
}

/* Set path's access and modification times to t. */
static int
rk_set_mtime(const char *path, time_t t, char **err)
{
  struct timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = t;
  ts[0].tv_nsec = ts[1].tv_nsec = 0;
  if (utimensat(AT_FDCWD, path, ts, 0) < 0) {
    rk_seterr(err, "Cannot set the time of %s: %s", path, strerror(errno));
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

/* tor's ed25519 secret key file: tag | expanded[64]. */
static int
ed_secret_parse(const uint8_t *buf, size_t len, const char *tag,
                ed25519_keypair_t *kp, const char **why)
{
  if (len != SECRET_FILE_LEN) {
    *why = "wrong size";
    return -1;
  }
  if (!hdr_is(buf, len, tag)) {
    *why = "wrong header";
    return -1;
  }
  if (ed25519_keypair_from_expanded(kp, buf + HDR_LEN) < 0) {
    *why = "not an ed25519 expanded secret key";
    return -1;
  }
  return 0;
}

static int
write_ed_secret(const char *path, const char *tag,
                const ed25519_keypair_t *kp, char **err)
{
  uint8_t buf[SECRET_FILE_LEN];
  hdr_set(buf, tag);
  if (ed25519_keypair_get_expanded(kp, buf + HDR_LEN) < 0) {
    rk_seterr(err, "Cannot expand the ed25519 key for %s", path);
    pc_memwipe(buf, sizeof(buf));
    return -1;
  }
  int r = rk_write(path, buf, sizeof(buf), err);
  pc_memwipe(buf, sizeof(buf));
  return r;
}

/* pctor's earlier seed file: tag | seed | pub. */
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

/* tor's secret_onion_key_ntor: tag | secret | public. */
static int
ntor_tor_parse(const uint8_t *buf, size_t len, curve25519_keypair_t *kp,
               const char **why)
{
  if (len != NTOR_FILE_LEN) {
    *why = "wrong size";
    return -1;
  }
  if (!hdr_is(buf, len, TAG_NTOR)) {
    *why = "wrong header";
    return -1;
  }
  if (ntor_key_parse(kp, buf + HDR_LEN) < 0) {
    curve25519_keypair_wipe(kp);
    *why = "public key does not match the secret key";
    return -1;
  }
  return 0;
}

/* Write one ntor key in tor's format; its file time becomes mtime. */
static int
write_ntor_tor(const char *path, const curve25519_keypair_t *kp,
               time_t mtime, char **err)
{
  uint8_t buf[NTOR_FILE_LEN];
  hdr_set(buf, TAG_NTOR);
  memcpy(buf + HDR_LEN, kp->secret, CURVE25519_KEY_LEN);
  memcpy(buf + HDR_LEN + CURVE25519_KEY_LEN, kp->pub, CURVE25519_KEY_LEN);
  int r = rk_write(path, buf, sizeof(buf), err);
  pc_memwipe(buf, sizeof(buf));
  if (r == 0)
    r = rk_set_mtime(path, mtime, err);
  return r;
}

/* pctor's earlier ntor_onion_keys file. */
static int
ntor_old_parse(const uint8_t *buf, size_t len, ntor_file_t *nf,
               const char **why)
{
  memset(nf, 0, sizeof(*nf));
  if (len < OLD_NTOR_FILE_LEN(1)) {
    *why = "wrong size";
    return -1;
  }
  if (!hdr_is(buf, len, TAG_OLD_NTOR)) {
    *why = "wrong header";
    return -1;
  }
  uint64_t created = get_u64(buf + HDR_LEN);
  uint8_t n = buf[HDR_LEN + 8];
  if (n != 1 && n != 2) {
    *why = "bad key count";
    return -1;
  }
  if (len != OLD_NTOR_FILE_LEN(n)) {
    *why = "wrong size";
    return -1;
  }
  if (created > (uint64_t)INT64_MAX / 2) {
    *why = "bad creation time";
    return -1;
  }
  nf->created = (time_t)created;
  const uint8_t *p = buf + OLD_NTOR_FILE_LEN(0);
  if (ntor_key_parse(&nf->current, p) < 0 ||
      (n == 2 && ntor_key_parse(&nf->previous, p + NTOR_KEY_LEN) < 0)) {
    ntor_file_wipe(nf);
    *why = "public key does not match the secret key";
    return -1;
  }
  nf->has_previous = (n == 2);
  return 0;
}

/* RSA keys (identity, TAP onion key): PEM PKCS#1, as tor. */
static crypt_rsa_t *
rsa_parse(const uint8_t *buf, size_t len, const char **why)
{
  /* Exactly one PEM block and nothing else but trailing white space, so
   * that a truncated or appended-to file is noticed. tor ends the file
   * with a NUL byte (it writes the C string with its terminator). */
  size_t blen = strlen(RSA_PEM_BEGIN), elen = strlen(RSA_PEM_END);
  if (len > 0 && buf[len - 1] == '\0')
    len--;
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
    /* With the terminating NUL, byte for byte what tor writes. */
    r = rk_write(path, pem, total + 1, err);
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
  cfg->signing_key_lifetime_days = ROUTER_KEYS_SIGNING_LIFETIME_DAYS;
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
  if (cfg->signing_key_lifetime_days < 0 ||
      cfg->signing_key_lifetime_days > 3650) {
    rk_seterr(err, "Signing key lifetime of %d days is out of range "
              "(1 to 3650)", cfg->signing_key_lifetime_days);
    return -1;
  }
  return 0;
}

static time_t
signing_lifetime(const router_keys_config_t *cfg)
{
  int days = cfg->signing_key_lifetime_days;
  return (time_t)(days > 0 ? days : ROUTER_KEYS_SIGNING_LIFETIME_DAYS) * DAY;
}

/* Make a new signing key when less than this is left on its certificate:
 * ROUTER_KEYS_SIGNING_RENEW_DAYS, or half the lifetime if that is less. */
static time_t
signing_renew_window(const router_keys_config_t *cfg)
{
  time_t w = (time_t)ROUTER_KEYS_SIGNING_RENEW_DAYS * DAY;
  time_t half = signing_lifetime(cfg) / 2;
  return half < w ? half : w;
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

/* Read the signing key and certificate files and check that the
 * certificate is signed by id_pub and certifies that key. Returns 1 with
 * the pair in *kp / *cert (newly allocated) / *cert_len / *expires, 0 if a
 * file is missing, -1 (with *err naming the file) if one is unusable. */
static int
read_signing_pair(const rk_paths_t *p, const uint8_t id_pub[32],
                  ed25519_keypair_t *kp, uint8_t **cert, size_t *cert_len,
                  time_t *expires, char **err);

/* Offline master key, certificate near expiry: adopt a newer signing key
 * and certificate if the operator put them in the key directory. */
static int
offline_adopt(rk_state_t *st, const rk_paths_t *p, time_t now,
              ed25519_keypair_t *kp, uint8_t **cert, size_t *cert_len,
              time_t *expires)
{
  char *err = NULL;
  int r = read_signing_pair(p, st->k.ed_identity.pub, kp, cert, cert_len,
                            expires, &err);
  if (r < 0)
    log_info("Not using the signing key files: %s", err);
  free(err);
  if (r <= 0)
    return 0;
  if (*expires > st->k.ed_signing_expires && *expires > now)
    return 1;
  ed25519_keypair_wipe(kp);
  PC_FREE(*cert);
  return 0;
}

static void
offline_warn(rk_state_t *st, const rk_paths_t *p, time_t now)
{
  char when[TIME_ISO_LEN + 1];
  time_format_iso(when, st->k.ed_signing_expires);
  if (st->k.ed_signing_expires <= now) {
    if (st->offline_warned < 2)
      log_err("The ed25519 signing certificate expired at %s UTC and the "
              "master identity key is offline: other relays and the "
              "authorities will refuse this relay until a new signing key "
              "and certificate are in %s (make them with --keygen where the "
              "master key is).", when, p->keydir);
    st->offline_warned = 2;
  } else if (st->offline_warned < 1) {
    log_warn("The ed25519 signing certificate expires at %s UTC and the "
             "master identity key is offline: make a new signing key with "
             "--keygen where the master key is and copy "
             FN_ED_SIGN_SECRET " and " FN_ED_SIGN_CERT " to %s.", when,
             p->keydir);
    st->offline_warned = 1;
  }
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
  if (nbits & ROUTER_KEYS_ROTATED_NTOR) {
    /* The retired keys go to the .old files first; the new TAP key next;
     * the new ntor key (whose file time is the schedule) commits. */
    if (write_ntor_tor(paths->ntor_old, &nf.previous, now, err) < 0)
      goto done;
    if (k->tap_onion_key && write_rsa(paths->tap_old, k->tap_onion_key,
                                      err) < 0)
      goto done;
    new_tap = crypt_rsa_generate(RSA1024_BITS);
    if (write_rsa(paths->tap, new_tap, err) < 0 ||
        write_ntor_tor(paths->ntor, &nf.current, nf.created, err) < 0)
      goto done;
  } else if (clock_fix && rk_set_mtime(paths->ntor, nf.created, err) < 0) {
    goto done;
  }
  if ((nbits & ROUTER_KEYS_DROPPED_NTOR_OLD) &&
      (rk_unlink(paths->ntor_old, err) < 0 ||
       rk_unlink(paths->tap_old, err) < 0))
    goto done;

  /* signing key */
  const ed25519_keypair_t *signing = &k->ed_signing;
  if (k->ed_signing_expires - now < signing_renew_window(cfg)) {
    if (st->offline) {
      if (offline_adopt(st, paths, now, &new_signing, &new_cert4,
                        &new_cert4_len, &new_cert4_expires)) {
        signing = &new_signing;
        bits |= ROUTER_KEYS_ROTATED_SIGNING;
        st->offline_warned = 0;
      } else {
        offline_warn(st, paths, now);
      }
    } else {
      ed25519_keypair_generate(&new_signing);
      new_cert4 = make_cert(&k->ed_identity, TORCERT_TYPE_ID_SIGNING,
                            TORCERT_KEY_ED25519, new_signing.pub,
                            now + signing_lifetime(cfg), &new_cert4_len,
                            &new_cert4_expires);
      if (!new_cert4) {
        rk_seterr(err, "Cannot certify a new ed25519 signing key");
        goto done;
      }
      if (write_ed_secret(paths->ed_sign_secret, TAG_ED_SIGN_SECRET,
                          &new_signing, err) < 0 ||
          write_cert4(paths->ed_sign_cert, new_cert4, new_cert4_len, err) < 0)
        goto done;
      signing = &new_signing;
      bits |= ROUTER_KEYS_ROTATED_SIGNING;
    }
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
  /* Handshakes queued on the workers keep the set they hold. */
  if (nbits || !k->onion)
    relay_keys_update_onion(k);
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
    log_notice("%s ed25519 signing key, certified until %s UTC.",
               st->offline ? "Using the new" : "Made a new", when);
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
  rk_paths_init(&paths, datadir, cfg);
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

int
router_keys_master_is_offline(const relay_keys_t *k)
{
  return rk_state((relay_keys_t *)k)->offline;
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
private_dir_mode(const char *path, int group_readable, char **err)
{
  char *msg = NULL;
  if (fs_check_private_dir_mode(path, group_readable, &msg) < 0) {
    rk_seterr(err, "%s", msg ? msg : path);
    free(msg);
    return -1;
  }
  return 0;
}

/* DataDirectory: private, but a group-readable one (mode 0750) stays so:
 * the daemon set that mode from DataDirectoryGroupReadable before the
 * keys are touched. */
static int
datadir_ok(const char *datadir, char **err)
{
  struct stat st;
  int group = stat(datadir, &st) == 0 && (st.st_mode & 077) == 050;
  return private_dir_mode(datadir, group, err);
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
  relay_keys_clear(k);
  pc_memwipe(st, sizeof(*st));
  free(st);
}

/* Phase 1 result: what the existing files hold. */
typedef struct loaded_t {
  crypt_rsa_t *rsa;
  int have_ed_id;                /* the master secret key */
  ed25519_keypair_t ed_id;
  int have_id_pub;               /* ed25519_master_id_public_key */
  uint8_t id_pub[ED25519_PUBKEY_LEN];
  int id_encrypted;              /* tor's passphrase-protected master key */
  int have_signing, have_cert4;
  ed25519_keypair_t signing;
  uint8_t cert4_key[ED25519_PUBKEY_LEN];
  uint8_t *cert4;
  size_t cert4_len;
  time_t cert4_expires;
  int have_ntor;
  ntor_file_t ntor;
  crypt_rsa_t *tap;
  /* pctor's earlier files that were found (converted, then removed) */
  int old_id, old_signing, old_ntor;
  int signing_from_old, ntor_from_old;
} loaded_t;

static void
loaded_clear(loaded_t *l)
{
  crypt_rsa_free(l->rsa);
  crypt_rsa_free(l->tap);
  free(l->cert4);
  pc_memwipe(l, sizeof(*l));
}

/* Read an ed25519 secret key file in the form fmt_old selects (0: tor's
 * expanded form, 1: pctor's earlier seed form). Returns 1 if read, 0 if
 * the file does not exist, -1 with *err. */
static int
read_ed_key(const char *path, const char *tag, int fmt_old,
            ed25519_keypair_t *kp, char **err)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  const char *why = NULL;
  int r = rk_read(path, (fmt_old ? SEED_FILE_LEN : SECRET_FILE_LEN) + 1,
                  &buf, &len, err);
  if (r <= 0)
    return r;
  r = fmt_old ? ed_seed_parse(buf, len, tag, kp, &why)
              : ed_secret_parse(buf, len, tag, kp, &why);
  rk_free_secret(buf, len);
  if (r < 0) {
    rk_corrupt(err, path, why);
    return -1;
  }
  return 1;
}

static int
read_signing_pair(const rk_paths_t *p, const uint8_t id_pub[32],
                  ed25519_keypair_t *kp, uint8_t **cert, size_t *cert_len,
                  time_t *expires, char **err)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  const char *why = NULL;
  uint8_t certified[ED25519_PUBKEY_LEN];
  int r;
  if ((r = rk_read(p->ed_sign_secret, SECRET_FILE_LEN + 1, &buf, &len,
                   err)) <= 0)
    return r;
  r = ed_secret_parse(buf, len, TAG_ED_SIGN_SECRET, kp, &why);
  rk_free_secret(buf, len);
  if (r < 0) {
    rk_corrupt(err, p->ed_sign_secret, why);
    return -1;
  }
  if ((r = rk_read(p->ed_sign_cert, CERT_FILE_MAX, &buf, &len, err)) <= 0) {
    ed25519_keypair_wipe(kp);
    return r;
  }
  if (cert4_check(buf, len, id_pub, certified, expires, &why) < 0) {
    rk_corrupt(err, p->ed_sign_cert, why);
    r = -1;
  } else if (memcmp(certified, kp->pub, ED25519_PUBKEY_LEN) != 0) {
    rk_seterr(err, "%s certifies another key than %s", p->ed_sign_cert,
              p->ed_sign_secret);
    r = -1;
  } else {
    *cert_len = len - HDR_LEN;
    *cert = pc_memdup(buf + HDR_LEN, *cert_len);
    r = 1;
  }
  free(buf);
  if (r < 0)
    ed25519_keypair_wipe(kp);
  return r;
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

  /* Ed25519 identity: the secret key (tor's file, or pctor's earlier
   * one), then the public key file. */
  ed25519_keypair_t old_kp;
  r = read_ed_key(p->old_ed_id_seed, TAG_OLD_ED_ID_SEED, 1, &old_kp, err);
  if (r < 0)
    return -1;
  l->old_id = r;
  r = read_ed_key(p->ed_id_secret, TAG_ED_ID_SECRET, 0, &l->ed_id, err);
  if (r < 0) {
    ed25519_keypair_wipe(&old_kp);
    return -1;
  }
  if (r && l->old_id &&
      memcmp(old_kp.pub, l->ed_id.pub, ED25519_PUBKEY_LEN) != 0) {
    /* (Both agree after an interrupted conversion.) */
    ed25519_keypair_wipe(&old_kp);
    rk_seterr(err, "%s and %s hold different ed25519 identities; refusing "
              "to start. Remove the one that is not this relay's.",
              p->ed_id_secret, p->old_ed_id_seed);
    return -1;
  }
  if (!r && l->old_id)
    l->ed_id = old_kp;
  ed25519_keypair_wipe(&old_kp);
  l->have_ed_id = r || l->old_id;
  l->id_encrypted = fs_file_exists(p->ed_id_secret_enc);
  if ((r = rk_read(p->ed_id_pub, PUB_FILE_LEN + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    if (len != PUB_FILE_LEN || !hdr_is(buf, len, TAG_ED_PUB)) {
      free(buf);
      rk_corrupt(err, p->ed_id_pub,
                 len != PUB_FILE_LEN ? "wrong size" : "wrong header");
      return -1;
    }
    memcpy(l->id_pub, buf + HDR_LEN, ED25519_PUBKEY_LEN);
    free(buf);
    l->have_id_pub = 1;
    if (l->have_ed_id &&
        memcmp(l->id_pub, l->ed_id.pub, ED25519_PUBKEY_LEN) != 0) {
      rk_seterr(err, "%s and %s do not match: one of them is corrupt or "
                "truncated; refusing to start.", p->ed_id_pub,
                fs_file_exists(p->ed_id_secret) ? p->ed_id_secret
                                                : p->old_ed_id_seed);
      return -1;
    }
  }

  /* Medium-term signing key and its certificate */
  r = read_ed_key(p->ed_sign_secret, TAG_ED_SIGN_SECRET, 0, &l->signing,
                  err);
  if (r < 0)
    return -1;
  l->have_signing = r;
  l->old_signing = fs_file_exists(p->old_ed_sign_seed);
  if (!r && l->old_signing) {
    r = read_ed_key(p->old_ed_sign_seed, TAG_OLD_ED_SIGN_SEED, 1,
                    &l->signing, err);
    if (r < 0)
      return -1;
    l->have_signing = l->signing_from_old = r;
  }
  if ((r = rk_read(p->ed_sign_cert, CERT_FILE_MAX, &buf, &len, err)) < 0)
    return -1;
  if (r && (l->have_ed_id || l->have_id_pub)) {
    /* (Without an identity the certificate is a leftover to replace.) */
    r = cert4_check(buf, len, l->have_ed_id ? l->ed_id.pub : l->id_pub,
                    l->cert4_key, &l->cert4_expires, &why);
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

  /* ntor onion keys: tor's two files, or pctor's earlier one. */
  l->old_ntor = fs_file_exists(p->old_ntor);
  if ((r = rk_read(p->ntor, NTOR_FILE_LEN + 1, &buf, &len, err)) < 0)
    return -1;
  if (r) {
    r = ntor_tor_parse(buf, len, &l->ntor.current, &why);
    rk_free_secret(buf, len);
    if (r < 0) {
      rk_corrupt(err, p->ntor, why);
      return -1;
    }
    if (rk_mtime(p->ntor, &l->ntor.created, err) < 0)
      return -1;
    if ((r = rk_read(p->ntor_old, NTOR_FILE_LEN + 1, &buf, &len, err)) < 0)
      return -1;
    if (r) {
      r = ntor_tor_parse(buf, len, &l->ntor.previous, &why);
      rk_free_secret(buf, len);
      if (r < 0) {
        rk_corrupt(err, p->ntor_old, why);
        return -1;
      }
      l->ntor.has_previous = 1;
    }
    l->have_ntor = 1;
  } else if (l->old_ntor) {
    if ((r = rk_read(p->old_ntor, OLD_NTOR_FILE_LEN(2) + 1, &buf, &len,
                     err)) < 0)
      return -1;
    r = ntor_old_parse(buf, len, &l->ntor, &why);
    rk_free_secret(buf, len);
    if (r < 0) {
      rk_corrupt(err, p->old_ntor, why);
      return -1;
    }
    l->have_ntor = l->ntor_from_old = 1;
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

/* A new master identity key in tor's files. */
static int
create_identity(loaded_t *l, const rk_paths_t *p, char **err)
{
  log_notice("Generating a new ed25519 identity key in %s.",
             p->ed_id_secret);
  ed25519_keypair_generate(&l->ed_id);
  if (write_ed_secret(p->ed_id_secret, TAG_ED_ID_SECRET, &l->ed_id, err) < 0
      || write_ed_pub(p->ed_id_pub, l->ed_id.pub, err) < 0)
    return -1;
  memcpy(l->id_pub, l->ed_id.pub, ED25519_PUBKEY_LEN);
  l->have_ed_id = l->have_id_pub = 1;
  l->have_signing = l->have_cert4 = 0; /* leftovers of another identity */
  return 0;
}

/* Offline master key: the signing key and certificate must be usable. */
static int
offline_check(const loaded_t *l, const rk_paths_t *p, const char *reason,
              time_t now, char **err)
{
  if (!l->have_signing || !l->have_cert4) {
    rk_seterr(err, "The ed25519 master identity key is offline (%s) and "
              "%s has no signing key and certificate (%s, %s); refusing to "
              "start. Make them with --keygen where the master key is and "
              "copy both files here.", reason, p->keydir, FN_ED_SIGN_SECRET,
              FN_ED_SIGN_CERT);
    return -1;
  }
  if (memcmp(l->cert4_key, l->signing.pub, ED25519_PUBKEY_LEN) != 0) {
    rk_seterr(err, "The ed25519 master identity key is offline (%s) and "
              "%s certifies another key than %s; refusing to start. Copy "
              "the signing key and certificate made together by --keygen.",
              reason, p->ed_sign_cert, p->ed_sign_secret);
    return -1;
  }
  if (l->cert4_expires <= now) {
    char when[TIME_ISO_LEN + 1];
    time_format_iso(when, l->cert4_expires);
    rk_seterr(err, "The ed25519 master identity key is offline (%s) and "
              "the signing certificate in %s expired at %s UTC; refusing to "
              "start. Make a new signing key with --keygen where the master "
              "key is and copy it here.", reason, p->ed_sign_cert, when);
    return -1;
  }
  return 0;
}

/* Phase 2: make and store what is missing. */
static int
create_missing(rk_state_t *st, loaded_t *l, const rk_paths_t *p,
               const router_keys_config_t *cfg, time_t now, char **err)
{
  relay_keys_t *k = &st->k;
  int ro = cfg->read_only;

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

  /* ed25519 identity: present, offline, or new. */
  const char *offline_reason = NULL;
  if (cfg->offline_master_key)
    offline_reason = "OfflineMasterKey is set";
  else if (!l->have_ed_id && l->id_encrypted)
    offline_reason = FN_ED_ID_SECRET_ENC " is encrypted; as tor, a running "
                     "relay does not ask for its passphrase";
  else if (!l->have_ed_id && l->have_id_pub)
    offline_reason = "there is no " FN_ED_ID_SECRET;
  if (!l->have_ed_id && !l->have_id_pub) {
    if (l->id_encrypted) {
      rk_seterr(err, "%s exists but %s does not; refusing to start with a "
                "different identity. Restore the public key file.",
                p->ed_id_secret_enc, p->ed_id_pub);
      return -1;
    }
    if (offline_reason) {
      rk_seterr(err, "OfflineMasterKey is set but %s holds no ed25519 "
                "identity (%s); refusing to start. Make the master key, a "
                "signing key and its certificate with --keygen, and copy "
                "all but %s here.", p->keydir, FN_ED_ID_PUB, FN_ED_ID_SECRET);
      return -1;
    }
    if (ro) {
      rk_seterr(err, "%s holds no ed25519 identity", p->keydir);
      return -1;
    }
    if (create_identity(l, p, err) < 0)
      return -1;
  }
  if (!l->have_id_pub && !ro) {
    if (write_ed_pub(p->ed_id_pub, l->ed_id.pub, err) < 0)
      return -1;
    memcpy(l->id_pub, l->ed_id.pub, ED25519_PUBKEY_LEN);
    l->have_id_pub = 1;
  }
  if (offline_reason) {
    if (offline_check(l, p, offline_reason, now, err) < 0)
      return -1;
    /* Public key only: signing with it fails (ed25519_sign() re-derives
     * the public key from the all-zero scalar and refuses). */
    memset(&k->ed_identity, 0, sizeof(k->ed_identity));
    memcpy(k->ed_identity.pub, l->have_ed_id ? l->ed_id.pub : l->id_pub,
           ED25519_PUBKEY_LEN);
    k->ed_identity.expanded_only = 1;
    st->offline = 1;
    char when[TIME_ISO_LEN + 1];
    time_format_iso(when, l->cert4_expires);
    log_notice("The ed25519 master identity key is offline (%s): using the "
               "signing key in %s, certified until %s UTC.", offline_reason,
               p->ed_sign_secret, when);
  } else {
    k->ed_identity = l->ed_id;
  }

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
                 p->ed_sign_secret);
    /* ed_signing_expires = 0: maintain() makes a new signing key. */
  }

  if (!l->have_ntor) {
    log_notice("Generating a new ntor onion key in %s.", p->ntor);
    curve25519_keypair_generate(&l->ntor.current);
    l->ntor.created = now;
    l->ntor.has_previous = 0;
    if (!ro && write_ntor_tor(p->ntor, &l->ntor.current, now, err) < 0)
      return -1;
  }
  k->ntor_current = l->ntor.current;
  k->ntor_previous = l->ntor.previous;
  k->has_ntor_previous = l->ntor.has_previous;
  st->ntor_created = l->ntor.created;

  /* A key directory without a TAP key gets one (it is not an identity:
   * nothing is lost by making it). */
  if (!l->tap) {
    log_notice("Generating a new TAP onion key in %s.", p->tap);
    l->tap = crypt_rsa_generate(RSA1024_BITS);
    if (!ro && write_rsa(p->tap, l->tap, err) < 0)
      return -1;
  }
  k->tap_onion_key = l->tap;
  l->tap = NULL;
  return 0;
}

/* Phase 3: write what came from pctor's earlier files in tor's files, then
 * remove the earlier files. */
static int
convert_old(const loaded_t *l, const rk_paths_t *p, char **err)
{
  if (!l->old_id && !l->old_signing && !l->old_ntor)
    return 0;
  if (l->old_id && l->have_ed_id && !fs_file_exists(p->ed_id_secret) &&
      write_ed_secret(p->ed_id_secret, TAG_ED_ID_SECRET, &l->ed_id, err) < 0)
    return -1;
  if (l->signing_from_old && !fs_file_exists(p->ed_sign_secret) &&
      write_ed_secret(p->ed_sign_secret, TAG_ED_SIGN_SECRET, &l->signing,
                      err) < 0)
    return -1;
  if (l->ntor_from_old) {
    if (l->ntor.has_previous &&
        write_ntor_tor(p->ntor_old, &l->ntor.previous, l->ntor.created,
                       err) < 0)
      return -1;
    if (write_ntor_tor(p->ntor, &l->ntor.current, l->ntor.created, err) < 0)
      return -1;
  }
  if ((l->old_id && rk_unlink(p->old_ed_id_seed, err) < 0) ||
      (l->old_signing && rk_unlink(p->old_ed_sign_seed, err) < 0) ||
      (l->old_ntor && rk_unlink(p->old_ntor, err) < 0))
    return -1;
  log_notice("Converted pctor's earlier key files in %s to tor's names and "
             "formats; tor can use this key directory too.", p->keydir);
  return 0;
}

static int
prepare_dirs(const char *datadir, const rk_paths_t *p,
             const router_keys_config_t *cfg, char **err)
{
  if (datadir_ok(datadir, err) < 0 ||
      private_dir_mode(p->keydir, cfg->key_directory_group_readable,
                       err) < 0)
    return -1;
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
  rk_paths_init(&paths, datadir, cfg);
  if (prepare_dirs(datadir, &paths, cfg, err) < 0)
    goto err;
  if (load_existing(&l, &paths, err) < 0)
    goto err;
  if (cfg->read_only && (!l.rsa || (!l.have_ed_id && !l.have_id_pub) ||
                         !l.have_ntor)) {
    rk_seterr(err, "%s holds no complete set of relay keys", paths.keydir);
    goto err;
  }
  st = rk_state_new();
  if (create_missing(st, &l, &paths, cfg, now, err) < 0)
    goto err;
  if (!cfg->read_only) {
    if (convert_old(&l, &paths, err) < 0)
      goto err;
    if (maintain(st, &paths, cfg, now, NULL, err) < 0)
      goto err;
    if (router_keys_write_fingerprints(&st->k, datadir, cfg->nickname,
                                       err) < 0)
      goto err;
  }
  if (!st->k.onion)
    relay_keys_update_onion(&st->k); /* read_only: maintain() did not run */
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

int
router_keys_check_offline(const char *datadir,
                          const router_keys_config_t *cfg, time_t now,
                          char **err)
{
  rk_paths_t paths;
  loaded_t l;
  if (err)
    *err = NULL;
  memset(&l, 0, sizeof(l));
  rk_paths_init(&paths, datadir, cfg);
  int r = load_existing(&l, &paths, err);
  if (r == 0 && !l.have_ed_id && !l.have_id_pub) {
    rk_seterr(err, "OfflineMasterKey is set but %s holds no ed25519 "
              "identity (%s): the relay would refuse to start. Copy %s "
              "there with the signing key and its certificate.",
              paths.keydir, FN_ED_ID_PUB, FN_ED_ID_PUB);
    r = -1;
  }
  if (r == 0)
    r = offline_check(&l, &paths, "OfflineMasterKey is set", now, err);
  loaded_clear(&l);
  rk_paths_clear(&paths);
  return r;
}

/* ---------------------------------------------------------------- */
/* Command-line helpers */

/* Open ed25519_master_id_secret_key_encrypted into l->ed_id with the
 * passphrase cfg gives. 0, or -1 with *err. */
static int
open_boxed_master(loaded_t *l, const rk_paths_t *p,
                  const router_keys_config_t *cfg, char **err)
{
  uint8_t *buf = NULL, *plain = NULL;
  size_t len = 0, plain_len = 0, pwlen = 0;
  const char *why = "no passphrase source";
  char *pw = NULL;
  int r = -1;

  int rr = rk_read(p->ed_id_secret_enc, HDR_LEN + PWBOX_MAX_LEN, &buf, &len,
                   err);
  if (rr == 0)
    rk_seterr(err, "%s has disappeared", p->ed_id_secret_enc);
  if (rr <= 0)
    return -1;
  if (!hdr_is(buf, len, TAG_ED_ID_BOXED)) {
    rk_corrupt(err, p->ed_id_secret_enc, "wrong header");
    goto done;
  }
  if (cfg->get_passphrase)
    pw = cfg->get_passphrase(cfg->passphrase_arg, 0, &pwlen, &why);
  if (!pw) {
    rk_seterr(err, "%s is encrypted, and there is no passphrase to open it "
              "(%s): give it with --passphrase-fd N or on a terminal.",
              p->ed_id_secret_enc, why);
    goto done;
  }
  int o = crypt_pwbox_open(&plain, &plain_len, buf + HDR_LEN, len - HDR_LEN,
                           pw, pwlen, &why);
  if (o == PWBOX_BAD_PASSPHRASE) {
    rk_seterr(err, "Cannot open %s: wrong passphrase (or the file is "
              "corrupt).", p->ed_id_secret_enc);
    goto done;
  }
  if (o != PWBOX_OK) {
    rk_corrupt(err, p->ed_id_secret_enc, why);
    goto done;
  }
  if (plain_len != ED25519_EXPANDED_LEN ||
      ed25519_keypair_from_expanded(&l->ed_id, plain) < 0) {
    rk_corrupt(err, p->ed_id_secret_enc,
               "the box holds no ed25519 expanded secret key");
    goto done;
  }
  if (l->have_id_pub &&
      memcmp(l->id_pub, l->ed_id.pub, ED25519_PUBKEY_LEN) != 0) {
    ed25519_keypair_wipe(&l->ed_id);
    rk_seterr(err, "%s and %s do not match: one of them is corrupt or "
              "truncated.", p->ed_id_pub, p->ed_id_secret_enc);
    goto done;
  }
  l->have_ed_id = 1;
  r = 0;
 done:
  if (pw) {
    pc_memwipe(pw, pwlen);
    free(pw);
  }
  rk_free_secret(plain, plain_len);
  free(buf);
  return r;
}

/* Store the master secret key of l: encrypted under the new passphrase
 * cfg gives, or unencrypted (no_passphrase, or an empty passphrase), and
 * remove the other form's file. *plain_out is set to 1 when stored
 * unencrypted. 0, or -1 with *err. */
static int
store_master(const loaded_t *l, const rk_paths_t *p,
             const router_keys_config_t *cfg, int *plain_out, char **err)
{
  char *pw = NULL;
  size_t pwlen = 0;
  const char *why = "no passphrase source";
  int r = -1;

  *plain_out = 0;
  if (!cfg->no_passphrase && cfg->get_passphrase) {
    pw = cfg->get_passphrase(cfg->passphrase_arg, 1, &pwlen, &why);
    if (!pw) {
      rk_seterr(err, "No passphrase for the master identity key (%s); give "
                "one with --passphrase-fd N or on a terminal, or use "
                "--no-passphrase.", why);
      return -1;
    }
  }
  if (!pw || pwlen == 0) {
    if (write_ed_secret(p->ed_id_secret, TAG_ED_ID_SECRET, &l->ed_id,
                        err) < 0 ||
        rk_unlink(p->ed_id_secret_enc, err) < 0)
      goto done;
    *plain_out = 1;
    r = 0;
    goto done;
  }
  uint8_t ex[ED25519_EXPANDED_LEN], *box = NULL;
  size_t box_len = 0;
  if (ed25519_keypair_get_expanded(&l->ed_id, ex) < 0 ||
      crypt_pwbox_seal(&box, &box_len, ex, sizeof(ex), pw, pwlen) < 0) {
    pc_memwipe(ex, sizeof(ex));
    rk_seterr(err, "Cannot encrypt the master identity key");
    goto done;
  }
  pc_memwipe(ex, sizeof(ex));
  uint8_t *file = pc_malloc(HDR_LEN + box_len);
  hdr_set(file, TAG_ED_ID_BOXED);
  memcpy(file + HDR_LEN, box, box_len);
  free(box);
  if (rk_write(p->ed_id_secret_enc, file, HDR_LEN + box_len, err) == 0 &&
      rk_unlink(p->ed_id_secret, err) == 0)
    r = 0;
  free(file);
 done:
  if (pw) {
    pc_memwipe(pw, pwlen);
    free(pw);
  }
  return r;
}

int
router_keys_keygen(const char *datadir, const router_keys_config_t *cfg,
                   time_t now, char **out, char **err)
{
  router_keys_config_t defaults;
  rk_paths_t paths;
  loaded_t l;
  int r = -1;
  uint8_t *cert = NULL;
  size_t cert_len = 0;
  time_t expires = 0;
  ed25519_keypair_t signing;

  if (err)
    *err = NULL;
  if (out)
    *out = NULL;
  if (!cfg) {
    router_keys_config_init(&defaults);
    cfg = &defaults;
  }
  if (!datadir || !*datadir) {
    rk_seterr(err, "No DataDirectory for the relay keys");
    return -1;
  }
  if (config_check(cfg, err) < 0)
    return -1;
  memset(&l, 0, sizeof(l));
  memset(&signing, 0, sizeof(signing));
  rk_paths_init(&paths, datadir, cfg);
  if (prepare_dirs(datadir, &paths, cfg, err) < 0 ||
      load_existing(&l, &paths, err) < 0)
    goto done;
  int made = 0, plain = 0;
  if (!l.have_ed_id && l.id_encrypted) {
    if (!l.have_id_pub) {
      rk_seterr(err, "%s exists but %s does not; restore the public key "
                "file.", paths.ed_id_secret_enc, paths.ed_id_pub);
      goto done;
    }
    if (open_boxed_master(&l, &paths, cfg, err) < 0)
      goto done;
  }
  if (!l.have_ed_id) {
    if (l.have_id_pub) {
      rk_seterr(err, "%s exists but %s does not: the master identity key is "
                "offline. Run --keygen where it is.", paths.ed_id_pub,
                paths.ed_id_secret);
      goto done;
    }
    log_notice("Generating a new ed25519 identity key in %s.",
               paths.keydir);
    ed25519_keypair_generate(&l.ed_id);
    if (write_ed_pub(paths.ed_id_pub, l.ed_id.pub, err) < 0)
      goto done;
    memcpy(l.id_pub, l.ed_id.pub, ED25519_PUBKEY_LEN);
    l.have_ed_id = l.have_id_pub = 1;
    made = 1;
  }
  if (made || cfg->newpass) {
    if (store_master(&l, &paths, cfg, &plain, err) < 0) {
      if (made) /* no identity after all: not an "offline" one either */
        (void)unlink(paths.ed_id_pub);
      goto done;
    }
    if (made && plain && out)
      *out = pc_strdup("Not encrypting the secret key.\n");
  } else if (l.old_id && !fs_file_exists(paths.ed_id_secret) &&
             write_ed_secret(paths.ed_id_secret, TAG_ED_ID_SECRET, &l.ed_id,
                             err) < 0) {
    goto done;
  }
  ed25519_keypair_generate(&signing);
  cert = make_cert(&l.ed_id, TORCERT_TYPE_ID_SIGNING, TORCERT_KEY_ED25519,
                   signing.pub, now + signing_lifetime(cfg), &cert_len,
                   &expires);
  if (!cert) {
    rk_seterr(err, "Cannot certify a new ed25519 signing key");
    goto done;
  }
  if (write_ed_secret(paths.ed_sign_secret, TAG_ED_SIGN_SECRET, &signing,
                      err) < 0 ||
      write_cert4(paths.ed_sign_cert, cert, cert_len, err) < 0)
    goto done;
  char when[TIME_ISO_LEN + 1];
  time_format_iso(when, expires);
  log_notice("Made a new ed25519 signing key in %s, certified until %s UTC.",
             paths.ed_sign_secret, when);
  r = 0;
 done:
  if (r < 0 && out)
    PC_FREE(*out);
  free(cert);
  ed25519_keypair_wipe(&signing);
  loaded_clear(&l);
  rk_paths_clear(&paths);
  return r;
}

char *
router_keys_key_expiration(const relay_keys_t *k, const char *datadir,
                           const router_keys_config_t *cfg, int as_timestamp)
{
  rk_paths_t paths;
  char when[TIME_ISO_LEN + 1];
  if (as_timestamp)
    snprintf(when, sizeof(when), "%lld", (long long)k->ed_signing_expires);
  else
    time_format_iso(when, k->ed_signing_expires);
  rk_paths_init(&paths, datadir, cfg);
  log_notice("The signing certificate stored in %s is valid until %s.",
             paths.ed_sign_cert, when);
  rk_paths_clear(&paths);
  return pc_asprintf("signing-cert-expiry: %s\n", when);
}

int
router_keys_lock_datadir(const char *datadir, char **err)
{
  if (err)
    *err = NULL;
  if (datadir_ok(datadir, err) < 0)
    return -1;
  char *path = pc_asprintf("%s/lock", datadir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    rk_seterr(err, "Cannot open %s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    int e = errno;
    if (e == EWOULDBLOCK)
      rk_seterr(err, "%s is locked: another tor or pctor is using the "
                "DataDirectory %s. Stop it first.", path, datadir);
    else
      rk_seterr(err, "Cannot lock %s: %s", path, strerror(e));
    close(fd);
    free(path);
    return -1;
  }
  free(path);
  return fd;
}
