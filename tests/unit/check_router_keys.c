/* SPDX-License-Identifier: BSD-3-Clause */
/* check_router_keys.c -- unit tests for feature/relay/router_keys: first
 * start, reload, corrupt files, ntor (and TAP) rotation and grace period,
 * signing key renewal, the fingerprint files, a key directory made by tor
 * itself (tests/data/torkeys), offline master keys, --keygen and
 * --key-expiration, and the conversion of pctor's earlier key files.
 *
 * Every test works in its own mkdtemp() directory. The fingerprint
 * vectors were made by tor 0.4.9.11 itself:
 *   tor -f EMPTY_TORRC --DataDirectory D --ORPort 127.0.0.1:19999 \
 *       --Nickname pctortest --list-fingerprint
 * which wrote D/keys/secret_id_key (TOR_RSA_PEM below),
 * D/keys/ed25519_master_id_public_key, D/fingerprint and
 * D/fingerprint-ed25519, and printed the spaced form on stdout.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_relay.h"

#include "core/proto/torcert.h"
#include "feature/relay/router_keys.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/ed25519_ext.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/x509.h"

Suite *suite_router_keys(void);

#define DAY 86400

static const char TOR_RSA_PEM[] =
  "-----BEGIN RSA PRIVATE KEY-----\n"
  "MIICWwIBAAKBgQDQD2eWiZ8kvTRBHQCn06nOpTmimyHs/PP+ROHiFbbjF9SlbB8J\n"
  "P8fkKferekfLdWVHQ0Rf3VkK+wyf4YJWLfTu3OaKF44OZgHPL1RZArapAr6SYHcq\n"
  "6qxGI/MuXzxXzKmcUoBOSmKQGG3ZWYoeobUJxBetPwvkXrBKPDStMQnhTwIDAQAB\n"
  "AoGAQOdNTSyJNJDBKD6/4ZqpsgjgvdTe9GrEQmGChWB4uMbKUwAzflMjLA3bcOao\n"
  "VtO8UEqvnagTCtXdzlIusmuLqBfKmXaLNv4Z9Vu4samHvuDLaXbOCbL+1BnX2DhP\n"
  "IAquZS5QY0xqHuCjH4S5BzeztIaTAHSh5BA7Gqu26uvtKKECQQDogR3uIDp75gNl\n"
  "B1Uf3LHvvJva1kbwmTjhow2BB0xvU0Txpawb2fgWcPq36V1aYD2Ytxq54U0Nve7G\n"
  "9mnE/kD9AkEA5RXqxSTuMbj6ptAUCWbOvyGwxYwML0LlrlqFV7qf9AWNEFfIigbT\n"
  "E751P3+lxWqVPpEeq84R2uZMvzQP/wCzOwJABj9Z74kcKTIgCznsNqP2gAugYHv7\n"
  "ggGL/rwj48CvdBpXsuqRulncCbZVdlWl9YS6gv0AkdgU+vaMkPoUE4AFfQJANMZ5\n"
  "0XUSks3koK1rEEdo9ctTKA99dx3YP/SGp5FM7DCjMNKoVnQACJpl9Hz5uaM2QrW3\n"
  "9SiCIIXRxHLABKUqpQJAJk74kLX0FpWgMEyw9f0yzvKqFj+dwlUJy7EhSJ9j/Fcp\n"
  "1Ee88lY519F/Rb2vXtMaujIJ5q3HuxqMFmL0OH96dA==\n"
  "-----END RSA PRIVATE KEY-----\n";
static const char TOR_FINGERPRINT_FILE[] =
  "pctortest CC9E442744B8A918EA23B1D8691A45C0A7481AA1\n";
static const char TOR_LIST_FINGERPRINT[] =
  "pctortest CC9E 4427 44B8 A918 EA23 B1D8 691A 45C0 A748 1AA1";
static const uint8_t TOR_ED_PUB[32] = {
  0x40, 0x87, 0x74, 0x60, 0x90, 0x5f, 0x06, 0x05, 0xe5, 0x96, 0xc3,
  0xb4, 0xea, 0xb8, 0xf8, 0x09, 0xb7, 0xe2, 0x1c, 0x9e, 0x1b, 0x21,
  0xa4, 0xcd, 0x9d, 0x0e, 0x32, 0xe3, 0x50, 0x9a, 0xc1, 0xc7,
};
static const char TOR_FINGERPRINT_ED_FILE[] =
  "pctortest QId0YJBfBgXllsO06rj4CbfiHJ4bIaTNnQ4y41Cawcc\n";

static const char *const KEY_FILES[] = {
  "secret_id_key", "ed25519_master_id_secret_key",
  "ed25519_master_id_public_key", "ed25519_signing_secret_key",
  "ed25519_signing_cert", "secret_onion_key_ntor", "secret_onion_key",
};
#define N_KEY_FILES (sizeof(KEY_FILES) / sizeof(KEY_FILES[0]))

/* ---- helpers ---- */

static char *
tmpdir_new(void)
{
  char *t = pc_strdup("/tmp/pctor-rk-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(t));
  /* The data directory itself is created by router_keys, inside t. */
  char *dd = pc_asprintf("%s/data", t);
  free(t);
  return dd;
}

static void
tmpdir_free(char *dd)
{
  char *top = pc_strdup(dd);
  *strrchr(top, '/') = '\0';
  fixture_rmtree(top);
  free(top);
  free(dd);
}

static char *
kpath(const char *dd, const char *name)
{
  return pc_asprintf("%s/keys/%s", dd, name);
}

typedef struct blob_t {
  uint8_t *d;
  size_t n;
} blob_t;

static blob_t
slurp(const char *path)
{
  blob_t b = { NULL, 0 };
  ck_assert_msg(fs_read_file(path, 1 << 20, &b.d, &b.n) == 0, "read %s",
                path);
  return b;
}

static blob_t
kslurp(const char *dd, const char *name)
{
  char *p = kpath(dd, name);
  blob_t b = slurp(p);
  free(p);
  return b;
}

static int
kfile_exists(const char *dd, const char *name)
{
  char *p = kpath(dd, name);
  int r = fs_file_exists(p);
  free(p);
  return r;
}

static void
spit(const char *path, const void *d, size_t n)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(d, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

static int
blob_eq(blob_t a, blob_t b)
{
  return a.n == b.n && memcmp(a.d, b.d, a.n) == 0;
}

static int
file_mode(const char *path)
{
  struct stat st;
  ck_assert_msg(stat(path, &st) == 0, "stat %s", path);
  return (int)(st.st_mode & 07777);
}

static relay_keys_t *
load_ok(const char *dd, const router_keys_config_t *cfg, time_t now)
{
  char *err = NULL;
  relay_keys_t *k = router_keys_load_or_create(dd, cfg, now, &err);
  ck_assert_msg(k != NULL, "load failed: %s", err ? err : "(no message)");
  ck_assert_ptr_null(err);
  return k;
}

static void
check_certs(const relay_keys_t *k, time_t now)
{
  torcert_t *c = NULL;

  /* Type 4: identity -> signing, with the signed-with-key extension. */
  ck_assert_int_eq(torcert_parse(k->ed_signing_cert, k->ed_signing_cert_len,
                                 &c), 0);
  ck_assert_int_eq(c->cert_type, CERTS_TYPE_ED_ID_SIGNING);
  ck_assert_int_eq(c->key_type, TORCERT_KEY_ED25519);
  ck_assert(c->signing_key_included);
  ck_assert_mem_eq(c->signing_key, k->ed_identity.pub, 32);
  ck_assert_mem_eq(c->certified_key, k->ed_signing.pub, 32);
  ck_assert_int_eq(torcert_checksig(c, k->ed_identity.pub, now), 0);
  ck_assert_int_eq(torcert_checksig(c, k->ed_signing.pub, now),
                   TORCERT_ERR_KEY_MISMATCH);
  ck_assert(torcert_expires(c) == k->ed_signing_expires);
  ck_assert(k->ed_signing_expires >=
            now + (ROUTER_KEYS_SIGNING_RENEW_DAYS)*DAY);
  torcert_free(c);

  /* Type 5: signing -> SHA-256 of the TLS certificate. */
  size_t derlen = 0;
  const uint8_t *der = tls_context_cert_der(k->tls, &derlen);
  uint8_t d[32];
  ck_assert_ptr_nonnull(der);
  crypt_sha256(d, der, derlen);
  ck_assert_int_eq(torcert_parse(k->tls_link_cert, k->tls_link_cert_len, &c),
                   0);
  ck_assert_int_eq(c->cert_type, CERTS_TYPE_ED_SIGNING_LINK);
  ck_assert_int_eq(c->key_type, TORCERT_KEY_SHA256_X509);
  ck_assert_mem_eq(c->certified_key, d, 32);
  ck_assert_int_eq(torcert_checksig(c, k->ed_signing.pub, now), 0);
  ck_assert(torcert_expires(c) > now + DAY);
  ck_assert(torcert_expires(c) <= now + 3 * DAY);
  torcert_free(c);

  /* Type 6: signing -> link authentication key. */
  ck_assert_int_eq(torcert_parse(k->ed_auth_cert, k->ed_auth_cert_len, &c),
                   0);
  ck_assert_int_eq(c->cert_type, CERTS_TYPE_ED_SIGNING_AUTH);
  ck_assert_mem_eq(c->certified_key, k->ed_link_auth.pub, 32);
  ck_assert_int_eq(torcert_checksig(c, k->ed_signing.pub, now), 0);
  torcert_free(c);
  ed25519_keypair_t chk;
  ck_assert_int_eq(ed25519_keypair_from_seed(&chk, k->ed_link_auth.seed), 0);
  ck_assert_mem_eq(chk.pub, k->ed_link_auth.pub, 32);

  /* Type 7: RSA identity -> Ed25519 identity, about six months. */
  ck_assert_int_eq(rsa_ed_crosscert_check(k->rsa_ed_crosscert,
                                          k->rsa_ed_crosscert_len,
                                          k->rsa_identity,
                                          k->ed_identity.pub, now), 0);
  rsa_ed_crosscert_t cc;
  ck_assert_int_eq(rsa_ed_crosscert_parse(&cc, k->rsa_ed_crosscert,
                                          k->rsa_ed_crosscert_len), 0);
  ck_assert((time_t)cc.expiration_hours * 3600 > now + 150 * DAY);
  ck_assert((time_t)cc.expiration_hours * 3600 < now + 200 * DAY);

  /* Type 2: self-signed X.509 for the RSA identity. */
  ck_assert_int_eq(x509_check_self_signed(k->rsa_id_cert, k->rsa_id_cert_len,
                                          now, 0), 0);
  crypt_rsa_t *pub = x509_get_rsa_key(k->rsa_id_cert, k->rsa_id_cert_len);
  ck_assert_ptr_nonnull(pub);
  ck_assert(crypt_rsa_public_eq(pub, k->rsa_identity));
  crypt_rsa_free(pub);

  /* RSA identity digest. */
  uint8_t fp[20];
  ck_assert_int_eq(crypt_rsa_bits(k->rsa_identity), 1024);
  ck_assert_int_eq(crypt_rsa_fingerprint(k->rsa_identity, fp), 0);
  ck_assert_mem_eq(fp, k->rsa_id_digest, 20);

  /* The TAP onion key: a 1024-bit private key, not the identity. */
  ck_assert_ptr_nonnull(k->tap_onion_key);
  ck_assert_int_eq(crypt_rsa_bits(k->tap_onion_key), 1024);
  ck_assert(crypt_rsa_has_private(k->tap_onion_key));
  ck_assert(!crypt_rsa_public_eq(k->tap_onion_key, k->rsa_identity));

  /* ntor keys are real keypairs. */
  uint8_t p[32];
  ck_assert_int_eq(curve25519_public_from_secret(p, k->ntor_current.secret),
                   0);
  ck_assert_mem_eq(p, k->ntor_current.pub, 32);
  if (k->has_ntor_previous) {
    ck_assert_int_eq(curve25519_public_from_secret(p,
                                                   k->ntor_previous.secret),
                     0);
    ck_assert_mem_eq(p, k->ntor_previous.pub, 32);
  }
}

static void
setup(void)
{
  ck_assert_int_eq(crypt_global_init(), 0);
}

/* ---- tests ---- */

START_TEST(test_first_start)
{
  char *dd = tmpdir_new();
  time_t now = time(NULL);
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  ck_assert_int_eq(cfg.onion_key_rotation_days, 28);
  ck_assert_int_eq(cfg.onion_key_grace_days, 7);
  cfg.nickname = "pctortest";
  relay_keys_t *k = load_ok(dd, &cfg, now);

  ck_assert_int_eq(file_mode(dd), 0700);
  char *kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(file_mode(kd), 0700);
  free(kd);
  for (size_t i = 0; i < N_KEY_FILES; i++) {
    char *p = kpath(dd, KEY_FILES[i]);
    ck_assert_msg(file_mode(p) == 0600, "%s mode %o", p, file_mode(p));
    free(p);
  }
  char *fpp = pc_asprintf("%s/fingerprint", dd);
  char *edp = pc_asprintf("%s/fingerprint-ed25519", dd);
  ck_assert_int_eq(file_mode(fpp), 0600);
  ck_assert_int_eq(file_mode(edp), 0600);

  ck_assert(!k->has_ntor_previous);
  ck_assert(router_keys_ntor_created(k) == now);
  check_certs(k, now);
  /* The signing key is good for 30 days (rounded up to the hour). */
  ck_assert(k->ed_signing_expires >= now + 30 * DAY);
  ck_assert(k->ed_signing_expires < now + 30 * DAY + 3600);

  /* Stored files have the documented sizes and headers. */
  blob_t b = kslurp(dd, "ed25519_master_id_public_key");
  ck_assert_uint_eq(b.n, 64);
  ck_assert_str_eq((char *)b.d, "== ed25519v1-public: type0 ==");
  ck_assert_mem_eq(b.d + 32, k->ed_identity.pub, 32);
  free(b.d);
  /* tor's expanded secret-key format: header, SHA-512(seed) clamped. */
  uint8_t esk[64];
  ck_assert_int_eq(ed25519_expand_seed(esk, k->ed_identity.seed), 0);
  b = kslurp(dd, "ed25519_master_id_secret_key");
  ck_assert_uint_eq(b.n, 96);
  ck_assert_str_eq((char *)b.d, "== ed25519v1-secret: type0 ==");
  ck_assert(pc_is_zero(b.d + 29, 3));
  ck_assert_mem_eq(b.d + 32, esk, 64);
  free(b.d);
  ck_assert_int_eq(ed25519_expand_seed(esk, k->ed_signing.seed), 0);
  b = kslurp(dd, "ed25519_signing_secret_key");
  ck_assert_uint_eq(b.n, 96);
  ck_assert_str_eq((char *)b.d, "== ed25519v1-secret: type4 ==");
  ck_assert_mem_eq(b.d + 32, esk, 64);
  free(b.d);
  b = kslurp(dd, "ed25519_signing_cert");
  ck_assert_str_eq((char *)b.d, "== ed25519v1-cert: type4 ==");
  ck_assert_uint_eq(b.n, 32 + k->ed_signing_cert_len);
  ck_assert_mem_eq(b.d + 32, k->ed_signing_cert, k->ed_signing_cert_len);
  free(b.d);
  b = kslurp(dd, "secret_onion_key_ntor");
  ck_assert_uint_eq(b.n, 96);
  ck_assert_str_eq((char *)b.d, "== c25519v1: onion ==");
  ck_assert(pc_is_zero(b.d + 21, 11));
  ck_assert_mem_eq(b.d + 32, k->ntor_current.secret, 32);
  ck_assert_mem_eq(b.d + 64, k->ntor_current.pub, 32);
  free(b.d);
  /* The rotation schedule is the file's modification time. */
  char *np = kpath(dd, "secret_onion_key_ntor");
  struct stat nst;
  ck_assert_int_eq(stat(np, &nst), 0);
  ck_assert(nst.st_mtime == now);
  free(np);
  /* Nothing of pctor's earlier layout. */
  ck_assert(!kfile_exists(dd, "ed25519_master_id_seed"));
  ck_assert(!kfile_exists(dd, "ntor_onion_keys"));
  ck_assert(!kfile_exists(dd, "secret_onion_key_ntor.old"));
  /* The RSA key is PEM laid out as tor writes it: 64-column lines. */
  b = kslurp(dd, "secret_id_key");
  const char *s = (const char *)b.d;
  ck_assert(strncmp(s, "-----BEGIN RSA PRIVATE KEY-----\n", 32) == 0);
  /* (tor ends the file with the string's NUL.) */
  ck_assert_int_eq(s[b.n - 1], '\0');
  ck_assert(strcmp(s + b.n - 31, "-----END RSA PRIVATE KEY-----\n") == 0);
  ck_assert_int_eq(s[32 + 64], '\n');
  crypt_rsa_t *rk = crypt_rsa_from_pem(s, b.n, 1);
  ck_assert_ptr_nonnull(rk);
  ck_assert(crypt_rsa_public_eq(rk, k->rsa_identity));
  crypt_rsa_free(rk);
  free(b.d);
  /* The TAP onion key, in the same format (and tor's file name). */
  b = kslurp(dd, "secret_onion_key");
  s = (const char *)b.d;
  ck_assert(strncmp(s, "-----BEGIN RSA PRIVATE KEY-----\n", 32) == 0);
  ck_assert(strcmp(s + b.n - 31, "-----END RSA PRIVATE KEY-----\n") == 0);
  rk = crypt_rsa_from_pem(s, b.n - 1, 1);
  ck_assert_ptr_nonnull(rk);
  ck_assert(crypt_rsa_public_eq(rk, k->tap_onion_key));
  crypt_rsa_free(rk);
  free(b.d);

  /* Fingerprint files: "NICK HEX40\n" and "NICK BASE64-43\n". */
  b = slurp(fpp);
  char *want = router_keys_format_rsa_fingerprint("pctortest",
                                                  k->rsa_id_digest, 0);
  ck_assert_uint_eq(b.n, strlen(want) + 1);
  ck_assert_mem_eq(b.d, want, strlen(want));
  ck_assert_int_eq(b.d[b.n - 1], '\n');
  ck_assert_uint_eq(b.n, 10 + 40 + 1);
  for (size_t i = 10; i < 50; i++)
    ck_assert(strchr("0123456789ABCDEF", b.d[i]) != NULL);
  free(want);
  free(b.d);
  b = slurp(edp);
  ck_assert_uint_eq(b.n, 10 + 43 + 1);
  ck_assert(memcmp(b.d, "pctortest ", 10) == 0);
  uint8_t pub[33];
  ck_assert_int_eq(base64_decode(pub, sizeof(pub), (char *)b.d + 10, 43), 32);
  ck_assert_mem_eq(pub, k->ed_identity.pub, 32);
  free(b.d);

  free(fpp);
  free(edp);
  router_keys_free(k);
  ck_assert_ptr_null(k);
  router_keys_free(k); /* NULL is fine */
  tmpdir_free(dd);
}
END_TEST

/* read_only: another process's keys are read, nothing is written (not
 * even the fingerprint files, which carry the owner's nickname), and an
 * incomplete key directory is an error, not a reason to make keys. */
START_TEST(test_read_only)
{
  char *dd = tmpdir_new();
  time_t now = time(NULL);
  router_keys_config_t owner;
  router_keys_config_init(&owner);
  owner.nickname = "owner";
  relay_keys_t *a = load_ok(dd, &owner, now);
  char *fpath = pc_asprintf("%s/fingerprint", dd);
  blob_t fp_before = slurp(fpath);
  router_keys_config_t ro;
  router_keys_config_init(&ro);
  ro.read_only = 1;
  /* a year later, when the owner would rotate keys */
  relay_keys_t *b = load_ok(dd, &ro, now + 365 * 86400);
  ck_assert_mem_eq(a->rsa_id_digest, b->rsa_id_digest, 20);
  ck_assert_mem_eq(a->ed_identity.pub, b->ed_identity.pub, 32);
  ck_assert_mem_eq(a->ntor_current.pub, b->ntor_current.pub, 32);
  blob_t fp_after = slurp(fpath);
  ck_assert(blob_eq(fp_before, fp_after));
  ck_assert(memmem(fp_after.d, fp_after.n, "owner ", 6) != NULL);
  free(fp_before.d);
  free(fp_after.d);
  router_keys_free(a);
  router_keys_free(b);
  free(fpath);
  /* an empty directory: no keys are made */
  char *empty = tmpdir_new();
  char *err = NULL;
  ck_assert_ptr_null(router_keys_load_or_create(empty, &ro, now, &err));
  ck_assert_ptr_nonnull(strstr(err, "no complete set of relay keys"));
  free(err);
  char *rsa = kpath(empty, "secret_id_key");
  ck_assert_int_ne(access(rsa, F_OK), 0);
  free(rsa);
  tmpdir_free(empty);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_reload_same)
{
  char *dd = tmpdir_new();
  time_t now = time(NULL);
  relay_keys_t *a = load_ok(dd, NULL, now);
  blob_t before[N_KEY_FILES];
  for (size_t i = 0; i < N_KEY_FILES; i++)
    before[i] = kslurp(dd, KEY_FILES[i]);

  relay_keys_t *b = load_ok(dd, NULL, now + 3600);
  ck_assert_mem_eq(a->rsa_id_digest, b->rsa_id_digest, 20);
  ck_assert(crypt_rsa_public_eq(a->rsa_identity, b->rsa_identity));
  ck_assert_mem_eq(a->ed_identity.pub, b->ed_identity.pub, 32);
  /* (b's keys come from tor's expanded-key files.) */
  uint8_t ea[64], eb[64];
  ck_assert(b->ed_identity.expanded_only);
  ck_assert_int_eq(ed25519_keypair_get_expanded(&a->ed_identity, ea), 0);
  ck_assert_int_eq(ed25519_keypair_get_expanded(&b->ed_identity, eb), 0);
  ck_assert_mem_eq(ea, eb, 64);
  ck_assert_mem_eq(a->ed_signing.pub, b->ed_signing.pub, 32);
  ck_assert_uint_eq(a->ed_signing_cert_len, b->ed_signing_cert_len);
  ck_assert_mem_eq(a->ed_signing_cert, b->ed_signing_cert,
                   a->ed_signing_cert_len);
  ck_assert_mem_eq(a->ntor_current.pub, b->ntor_current.pub, 32);
  ck_assert_mem_eq(a->ntor_current.secret, b->ntor_current.secret, 32);
  ck_assert(crypt_rsa_public_eq(a->tap_onion_key, b->tap_onion_key));
  ck_assert(router_keys_ntor_created(b) == now);
  /* Link keys are made fresh at each start. */
  ck_assert(memcmp(a->ed_link_auth.pub, b->ed_link_auth.pub, 32) != 0);
  check_certs(b, now + 3600);
  /* Nothing stored was rewritten. */
  for (size_t i = 0; i < N_KEY_FILES; i++) {
    blob_t after = kslurp(dd, KEY_FILES[i]);
    ck_assert_msg(blob_eq(before[i], after), "%s changed", KEY_FILES[i]);
    free(after.d);
    free(before[i].d);
  }
  router_keys_free(a);
  router_keys_free(b);
  tmpdir_free(dd);
}
END_TEST

/* Corruptions applied to a copy of a file; each must be refused. */
enum { C_TRUNC_HALF, C_EMPTY, C_FLIP_MID, C_FLIP_END, C_FLIP_HDR, C_APPEND,
       C_N };

static blob_t
corrupt(blob_t orig, int how, int is_pem)
{
  blob_t b;
  b.d = pc_malloc(orig.n + 2);
  memcpy(b.d, orig.d, orig.n);
  b.n = orig.n;
  switch (how) {
  case C_TRUNC_HALF: b.n = orig.n / 2; break;
  case C_EMPTY: b.n = 0; break;
  case C_FLIP_MID:
    if (is_pem) {
      /* A base64 character inside the modulus (line 3). */
      size_t at = 32 + 65 + 20;
      b.d[at] = b.d[at] == 'A' ? 'B' : 'A';
    } else {
      b.d[orig.n / 2] ^= 0x01;
    }
    break;
  case C_FLIP_END:
    if (is_pem) {
      size_t at = orig.n - 30 - 10;  /* last base64 line */
      b.d[at] = b.d[at] == 'A' ? 'B' : 'A';
    } else {
      b.d[orig.n - 1] ^= 0x80;
    }
    break;
  case C_FLIP_HDR: b.d[5] ^= 0x20; break;
  case C_APPEND: b.d[b.n++] = 'x'; break;
  }
  return b;
}

/* tor's ed25519 secret-key files hold no public key: a flipped bit in the
 * nonce prefix (second half) changes no public key and cannot be noticed
 * (signatures stay valid), and a flipped bit in the signing key's scalar
 * looks like an interrupted renewal (the certificate names another key):
 * a new signing key is made. Everything else must be refused. */
static int
corruption_tolerated(const char *file, int how)
{
  int ed_secret = !strcmp(file, "ed25519_master_id_secret_key") ||
                  !strcmp(file, "ed25519_signing_secret_key");
  if (ed_secret && how == C_FLIP_END)
    return 1;
  if (!strcmp(file, "ed25519_signing_secret_key") && how == C_FLIP_MID)
    return 2;
  return 0;
}

START_TEST(test_corrupt_files)
{
  char *dd = tmpdir_new();
  time_t now = time(NULL);
  relay_keys_t *k0 = load_ok(dd, NULL, now);
  blob_t orig[N_KEY_FILES];
  for (size_t i = 0; i < N_KEY_FILES; i++)
    orig[i] = kslurp(dd, KEY_FILES[i]);
  char *fpp = pc_asprintf("%s/fingerprint", dd);
  blob_t fp0 = slurp(fpp);

  for (size_t i = 0; i < N_KEY_FILES; i++) {
    char *path = kpath(dd, KEY_FILES[i]);
    int is_pem = !strcmp(KEY_FILES[i], "secret_id_key") ||
                 !strcmp(KEY_FILES[i], "secret_onion_key");
    for (int how = 0; how < C_N; how++) {
      blob_t bad = corrupt(orig[i], how, is_pem);
      spit(path, bad.d, bad.n);
      char *err = NULL;
      int tolerated = corruption_tolerated(KEY_FILES[i], how);
      if (tolerated) {
        relay_keys_t *k = load_ok(dd, NULL, now);
        ck_assert_mem_eq(k->ed_identity.pub, k0->ed_identity.pub, 32);
        ck_assert_mem_eq(k->rsa_id_digest, k0->rsa_id_digest, 20);
        if (tolerated == 2)
          ck_assert(memcmp(k->ed_signing.pub, k0->ed_signing.pub, 32));
        else
          ck_assert_mem_eq(k->ed_signing.pub, k0->ed_signing.pub, 32);
        router_keys_free(k);
        for (size_t j = 0; j < N_KEY_FILES; j++) {
          char *pj = kpath(dd, KEY_FILES[j]);
          spit(pj, orig[j].d, orig[j].n);
          free(pj);
        }
        free(bad.d);
        continue;
      }
      relay_keys_t *k = router_keys_load_or_create(dd, NULL, now, &err);
      ck_assert_msg(k == NULL, "%s corruption %d accepted", KEY_FILES[i],
                    how);
      ck_assert_ptr_nonnull(err);
      ck_assert_msg(strstr(err, path) != NULL, "message does not name %s: %s",
                    path, err);
      ck_assert_msg(strstr(err, "corrupt or truncated") != NULL, "%s", err);
      ck_assert_msg(strstr(err, "refusing to start") != NULL, "%s", err);
      free(err);
      /* Neither the bad file nor any other was touched. */
      blob_t now_b = slurp(path);
      ck_assert_msg(blob_eq(now_b, bad), "%s was changed", path);
      free(now_b.d);
      for (size_t j = 0; j < N_KEY_FILES; j++) {
        if (j == i)
          continue;
        blob_t o = kslurp(dd, KEY_FILES[j]);
        ck_assert_msg(blob_eq(o, orig[j]), "%s changed", KEY_FILES[j]);
        free(o.d);
      }
      blob_t f = slurp(fpp);
      ck_assert(blob_eq(f, fp0));
      free(f.d);
      free(bad.d);
    }
    /* Restored, it loads again with the same identities. */
    spit(path, orig[i].d, orig[i].n);
    relay_keys_t *k = load_ok(dd, NULL, now);
    ck_assert_mem_eq(k->rsa_id_digest, k0->rsa_id_digest, 20);
    ck_assert_mem_eq(k->ed_identity.pub, k0->ed_identity.pub, 32);
    ck_assert_mem_eq(k->ntor_current.pub, k0->ntor_current.pub, 32);
    router_keys_free(k);
    free(path);
  }
  for (size_t i = 0; i < N_KEY_FILES; i++)
    free(orig[i].d);
  free(fp0.d);
  free(fpp);
  router_keys_free(k0);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_rotation)
{
  char *dd = tmpdir_new();
  time_t t0 = time(NULL);
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  relay_keys_t *k = load_ok(dd, &cfg, t0);
  curve25519_keypair_t first = k->ntor_current;
  crypt_rsa_t *tap0 = crypt_rsa_dup(k->tap_onion_key);
  uint8_t signing0[32];
  memcpy(signing0, k->ed_signing.pub, 32);
  int rot = -1;

  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, t0 + DAY, &rot),
                   0);
  ck_assert_int_eq(rot & (ROUTER_KEYS_ROTATED_NTOR |
                          ROUTER_KEYS_DROPPED_NTOR_OLD |
                          ROUTER_KEYS_ROTATED_SIGNING), 0);
  ck_assert_mem_eq(k->ntor_current.pub, first.pub, 32);
  ck_assert(crypt_rsa_public_eq(k->tap_onion_key, tap0));

  /* Day 29: the key is older than 28 days. */
  time_t t1 = t0 + 29 * DAY;
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, t1, &rot), 0);
  ck_assert(rot & ROUTER_KEYS_ROTATED_NTOR);
  ck_assert(!(rot & ROUTER_KEYS_DROPPED_NTOR_OLD));
  ck_assert(k->has_ntor_previous);
  ck_assert_mem_eq(k->ntor_previous.pub, first.pub, 32);
  ck_assert_mem_eq(k->ntor_previous.secret, first.secret, 32);
  ck_assert(memcmp(k->ntor_current.pub, first.pub, 32) != 0);
  ck_assert(router_keys_ntor_created(k) == t1);
  /* The TAP key was replaced with the ntor key. */
  ck_assert(!crypt_rsa_public_eq(k->tap_onion_key, tap0));
  crypt_rsa_t *tap1 = crypt_rsa_dup(k->tap_onion_key);
  /* One day of signing key left: renewed too, identity unchanged. */
  ck_assert(rot & ROUTER_KEYS_ROTATED_SIGNING);
  ck_assert(rot & ROUTER_KEYS_RENEWED_CERTS);
  ck_assert(memcmp(k->ed_signing.pub, signing0, 32) != 0);
  check_certs(k, t1);
  curve25519_keypair_t second = k->ntor_current;

  /* Persisted: a reload sees both keys and the schedule. */
  relay_keys_t *r = load_ok(dd, &cfg, t1 + 3600);
  ck_assert(r->has_ntor_previous);
  ck_assert_mem_eq(r->ntor_current.pub, second.pub, 32);
  ck_assert_mem_eq(r->ntor_current.secret, second.secret, 32);
  ck_assert_mem_eq(r->ntor_previous.pub, first.pub, 32);
  ck_assert(router_keys_ntor_created(r) == t1);
  ck_assert_mem_eq(r->ed_signing.pub, k->ed_signing.pub, 32);
  ck_assert(crypt_rsa_public_eq(r->tap_onion_key, tap1));
  router_keys_free(r);
  /* As tor keeps them: the retired keys in the .old files. */
  blob_t ob = kslurp(dd, "secret_onion_key_ntor.old");
  ck_assert_uint_eq(ob.n, 96);
  ck_assert_str_eq((char *)ob.d, "== c25519v1: onion ==");
  ck_assert_mem_eq(ob.d + 32, first.secret, 32);
  ck_assert_mem_eq(ob.d + 64, first.pub, 32);
  free(ob.d);
  ob = kslurp(dd, "secret_onion_key.old");
  crypt_rsa_t *oldtap = crypt_rsa_from_pem((const char *)ob.d, ob.n, 1);
  ck_assert_ptr_nonnull(oldtap);
  ck_assert(crypt_rsa_public_eq(oldtap, tap0));
  crypt_rsa_free(oldtap);
  free(ob.d);

  /* Still in the grace period six days later. */
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, t1 + 6 * DAY,
                                                &rot), 0);
  ck_assert_int_eq(rot & (ROUTER_KEYS_ROTATED_NTOR |
                          ROUTER_KEYS_DROPPED_NTOR_OLD), 0);
  ck_assert(k->has_ntor_previous);

  /* Seven days after the rotation the previous key goes. */
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, t1 + 7 * DAY,
                                                &rot), 0);
  ck_assert(rot & ROUTER_KEYS_DROPPED_NTOR_OLD);
  ck_assert(!(rot & ROUTER_KEYS_ROTATED_NTOR));
  ck_assert(!k->has_ntor_previous);
  ck_assert(pc_is_zero(&k->ntor_previous, sizeof(k->ntor_previous)));
  ck_assert_mem_eq(k->ntor_current.pub, second.pub, 32);
  /* Dropping the previous ntor key leaves the TAP key alone. */
  ck_assert(crypt_rsa_public_eq(k->tap_onion_key, tap1));
  crypt_rsa_free(tap0);
  crypt_rsa_free(tap1);

  r = load_ok(dd, &cfg, t1 + 7 * DAY + 60);
  ck_assert(!r->has_ntor_previous);
  ck_assert_mem_eq(r->ntor_current.pub, second.pub, 32);
  blob_t b = kslurp(dd, "secret_onion_key_ntor");
  ck_assert_uint_eq(b.n, 96);
  ck_assert_mem_eq(b.d + 64, second.pub, 32);
  free(b.d);
  ck_assert(!kfile_exists(dd, "secret_onion_key_ntor.old"));
  ck_assert(!kfile_exists(dd, "secret_onion_key.old"));
  router_keys_free(r);

  /* NULL rotated pointer and default config are fine. */
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, NULL, t1 + 8 * DAY,
                                                NULL), 0);
  router_keys_free(k);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_rotation_write_failure)
{
  /* When the new ntor key cannot be stored, nothing changes in memory or
   * on disk. (Root ignores file modes, so the temporary file's name is
   * blocked by a non-empty directory instead.) */
  char *dd = tmpdir_new();
  time_t t0 = time(NULL);
  relay_keys_t *k = load_ok(dd, NULL, t0);
  curve25519_keypair_t cur = k->ntor_current;
  uint8_t signing[32];
  memcpy(signing, k->ed_signing.pub, 32);
  uint8_t *cert4 = k->ed_signing_cert;
  blob_t before = kslurp(dd, "secret_onion_key_ntor");
  char *tmp = kpath(dd, "secret_onion_key_ntor.tmp");
  char *inner = pc_asprintf("%s/x", tmp);
  ck_assert_int_eq(mkdir(tmp, 0700), 0);
  spit(inner, "x", 1);

  int rot = -1;
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, NULL, t0 + 29 * DAY,
                                                &rot), -1);
  ck_assert_int_eq(rot, 0);
  ck_assert_mem_eq(k->ntor_current.secret, cur.secret, 32);
  ck_assert(!k->has_ntor_previous);
  ck_assert(router_keys_ntor_created(k) == t0);
  ck_assert_mem_eq(k->ed_signing.pub, signing, 32);
  ck_assert_ptr_eq(k->ed_signing_cert, cert4);
  blob_t after = kslurp(dd, "secret_onion_key_ntor");
  ck_assert(blob_eq(before, after));
  free(after.d);

  /* Once the obstacle is gone the rotation happens. */
  ck_assert_int_eq(unlink(inner), 0);
  ck_assert_int_eq(rmdir(tmp), 0);
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, NULL, t0 + 29 * DAY,
                                                &rot), 0);
  ck_assert(rot & ROUTER_KEYS_ROTATED_NTOR);
  ck_assert(rot & ROUTER_KEYS_DESCRIPTOR_CHANGED);
  ck_assert_mem_eq(k->ntor_previous.secret, cur.secret, 32);
  free(before.d);
  free(inner);
  free(tmp);

  /* When the new TAP key cannot be stored, the ntor key does not rotate
   * either: neither in memory nor on disk. */
  cur = k->ntor_current;
  crypt_rsa_t *tap = k->tap_onion_key;
  before = kslurp(dd, "secret_onion_key_ntor");
  blob_t tap_before = kslurp(dd, "secret_onion_key");
  tmp = kpath(dd, "secret_onion_key.tmp");
  inner = pc_asprintf("%s/x", tmp);
  ck_assert_int_eq(mkdir(tmp, 0700), 0);
  spit(inner, "x", 1);
  time_t t2 = t0 + 58 * DAY;
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, NULL, t2, &rot), -1);
  ck_assert_int_eq(rot, 0);
  ck_assert_ptr_eq(k->tap_onion_key, tap);
  ck_assert_mem_eq(k->ntor_current.secret, cur.secret, 32);
  after = kslurp(dd, "secret_onion_key_ntor");
  ck_assert(blob_eq(before, after));
  free(after.d);
  after = kslurp(dd, "secret_onion_key");
  ck_assert(blob_eq(tap_before, after));
  free(after.d);
  ck_assert_int_eq(unlink(inner), 0);
  ck_assert_int_eq(rmdir(tmp), 0);
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, NULL, t2, &rot), 0);
  ck_assert(rot & ROUTER_KEYS_ROTATED_NTOR);
  ck_assert(!crypt_rsa_public_eq(k->tap_onion_key, k->rsa_identity));
  after = kslurp(dd, "secret_onion_key");
  ck_assert(!blob_eq(tap_before, after));
  crypt_rsa_t *ondisk = crypt_rsa_from_pem((const char *)after.d, after.n, 1);
  ck_assert_ptr_nonnull(ondisk);
  ck_assert(crypt_rsa_public_eq(ondisk, k->tap_onion_key));
  crypt_rsa_free(ondisk);
  free(after.d);
  free(tap_before.d);
  free(before.d);
  free(inner);
  free(tmp);
  router_keys_free(k);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_rotation_across_restart)
{
  char *dd = tmpdir_new();
  time_t t0 = time(NULL);
  relay_keys_t *k = load_ok(dd, NULL, t0);
  curve25519_keypair_t first = k->ntor_current;
  router_keys_free(k);

  /* 27 days later: nothing due. */
  k = load_ok(dd, NULL, t0 + 27 * DAY);
  ck_assert(!k->has_ntor_previous);
  ck_assert_mem_eq(k->ntor_current.pub, first.pub, 32);
  router_keys_free(k);

  /* Exactly 28 days: rotated during start-up, previous kept. */
  k = load_ok(dd, NULL, t0 + 28 * DAY);
  ck_assert(k->has_ntor_previous);
  ck_assert_mem_eq(k->ntor_previous.pub, first.pub, 32);
  ck_assert(router_keys_ntor_created(k) == t0 + 28 * DAY);
  router_keys_free(k);

  /* A shorter schedule from the configuration. */
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.onion_key_rotation_days = 2;
  cfg.onion_key_grace_days = 1;
  k = load_ok(dd, &cfg, t0 + 29 * DAY);  /* grace over: previous gone */
  ck_assert(!k->has_ntor_previous);
  ck_assert(router_keys_ntor_created(k) == t0 + 28 * DAY);
  router_keys_free(k);

  /* The clock moved far back: the schedule restarts from now. */
  k = load_ok(dd, &cfg, t0 + 10 * DAY);
  ck_assert(router_keys_ntor_created(k) == t0 + 10 * DAY);
  router_keys_free(k);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_signing_renewal_at_start)
{
  char *dd = tmpdir_new();
  time_t t0 = time(NULL);
  relay_keys_t *k = load_ok(dd, NULL, t0);
  uint8_t id[32], s0[32];
  memcpy(id, k->ed_identity.pub, 32);
  memcpy(s0, k->ed_signing.pub, 32);
  router_keys_free(k);

  /* Eight days left: kept. */
  k = load_ok(dd, NULL, t0 + 22 * DAY);
  ck_assert_mem_eq(k->ed_signing.pub, s0, 32);
  router_keys_free(k);

  /* Six days left: a new signing key, certified by the same identity. */
  time_t t1 = t0 + 24 * DAY;
  k = load_ok(dd, NULL, t1);
  ck_assert_mem_eq(k->ed_identity.pub, id, 32);
  ck_assert(memcmp(k->ed_signing.pub, s0, 32) != 0);
  ck_assert(k->ed_signing_expires >= t1 + 30 * DAY);
  check_certs(k, t1);
  blob_t b = kslurp(dd, "ed25519_signing_cert");
  torcert_t *c = NULL;
  ck_assert_int_eq(torcert_parse(b.d + 32, b.n - 32, &c), 0);
  ck_assert_mem_eq(c->certified_key, k->ed_signing.pub, 32);
  torcert_free(c);
  free(b.d);
  b = kslurp(dd, "ed25519_signing_secret_key");
  ed25519_keypair_t fromfile;
  ck_assert_int_eq(ed25519_keypair_from_expanded(&fromfile, b.d + 32), 0);
  ck_assert_mem_eq(fromfile.pub, k->ed_signing.pub, 32);
  free(b.d);
  uint8_t s1[32];
  memcpy(s1, k->ed_signing.pub, 32);
  router_keys_free(k);

  k = load_ok(dd, NULL, t1 + 60);
  ck_assert_mem_eq(k->ed_signing.pub, s1, 32);
  router_keys_free(k);

  /* An interrupted renewal (a valid key file for another key than the
   * certificate's) is repaired with a new key, not refused. */
  ed25519_keypair_t other;
  ed25519_keypair_generate(&other);
  uint8_t f[96];
  memset(f, 0, 32);
  memcpy(f, "== ed25519v1-secret: type4 ==", 29);
  ck_assert_int_eq(ed25519_expand_seed(f + 32, other.seed), 0);
  char *p = kpath(dd, "ed25519_signing_secret_key");
  spit(p, f, sizeof(f));
  free(p);
  k = load_ok(dd, NULL, t1 + 120);
  ck_assert_mem_eq(k->ed_identity.pub, id, 32);
  ck_assert(memcmp(k->ed_signing.pub, s1, 32) != 0);
  check_certs(k, t1 + 120);
  router_keys_free(k);

  /* A missing certificate also means a new signing key. */
  p = kpath(dd, "ed25519_signing_cert");
  ck_assert_int_eq(unlink(p), 0);
  k = load_ok(dd, NULL, t1 + 180);
  ck_assert_int_eq(file_mode(p), 0600);
  check_certs(k, t1 + 180);
  router_keys_free(k);
  free(p);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_fingerprint_tor_vectors)
{
  /* tor's own RSA key file loads unchanged, and our fingerprint file is
   * byte for byte the one tor wrote for it. */
  char *dd = tmpdir_new();
  ck_assert_int_eq(mkdir(dd, 0700), 0);
  char *kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(mkdir(kd, 0700), 0);
  free(kd);
  char *p = kpath(dd, "secret_id_key");
  spit(p, TOR_RSA_PEM, strlen(TOR_RSA_PEM));
  /* (The same tor-written PEM as a TAP onion key file: same format.) */
  char *tp = kpath(dd, "secret_onion_key");
  spit(tp, TOR_RSA_PEM, strlen(TOR_RSA_PEM));
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.nickname = "pctortest";
  relay_keys_t *k = load_ok(dd, &cfg, time(NULL));
  char *fpp = pc_asprintf("%s/fingerprint", dd);
  blob_t b = slurp(fpp);
  ck_assert_uint_eq(b.n, strlen(TOR_FINGERPRINT_FILE));
  ck_assert_mem_eq(b.d, TOR_FINGERPRINT_FILE, b.n);
  free(b.d);
  b = slurp(p);
  ck_assert_uint_eq(b.n, strlen(TOR_RSA_PEM));
  ck_assert_mem_eq(b.d, TOR_RSA_PEM, b.n);
  free(b.d);
  b = slurp(tp);
  ck_assert_uint_eq(b.n, strlen(TOR_RSA_PEM));
  ck_assert_mem_eq(b.d, TOR_RSA_PEM, b.n);
  free(b.d);
  ck_assert(crypt_rsa_public_eq(k->tap_onion_key, k->rsa_identity));
  free(tp);

  char *s = router_keys_format_rsa_fingerprint("pctortest", k->rsa_id_digest,
                                               1);
  ck_assert_str_eq(s, TOR_LIST_FINGERPRINT);
  free(s);
  s = router_keys_format_rsa_fingerprint(NULL, k->rsa_id_digest, 1);
  /* 10 groups of 4 upper-case hex digits separated by single spaces. */
  ck_assert_uint_eq(strlen(s), 49);
  for (size_t i = 0; i < 49; i++) {
    if (i % 5 == 4)
      ck_assert_int_eq(s[i], ' ');
    else
      ck_assert(strchr("0123456789ABCDEF", s[i]) != NULL);
  }
  free(s);
  s = router_keys_format_rsa_fingerprint(NULL, k->rsa_id_digest, 0);
  ck_assert_str_eq(s, "CC9E442744B8A918EA23B1D8691A45C0A7481AA1");
  free(s);

  s = router_keys_format_ed25519_id("pctortest", TOR_ED_PUB);
  ck_assert_uint_eq(strlen(s) + 1, strlen(TOR_FINGERPRINT_ED_FILE));
  ck_assert_mem_eq(s, TOR_FINGERPRINT_ED_FILE, strlen(s));
  free(s);
  s = router_keys_format_ed25519_id(NULL, TOR_ED_PUB);
  ck_assert_str_eq(s, "QId0YJBfBgXllsO06rj4CbfiHJ4bIaTNnQ4y41Cawcc");
  free(s);

  /* Rewriting with another nickname; NULL means tor's "Unnamed". */
  char *err = NULL;
  ck_assert_int_eq(router_keys_write_fingerprints(k, dd, NULL, &err), 0);
  b = slurp(fpp);
  ck_assert_uint_eq(b.n, 8 + 40 + 1);
  ck_assert_mem_eq(b.d, "Unnamed CC9E442744B8A918EA23B1D8691A45C0A7481AA1\n",
                   b.n);
  free(b.d);
  free(fpp);
  free(p);
  router_keys_free(k);
  tmpdir_free(dd);
}
END_TEST

/* ---- a key directory made by tor 0.4.9.11 (tests/data/torkeys) ---- */

/* When tor made the fixture, and its signing certificate's expiry. */
#define TORKEYS_MADE ((time_t)1795699329)
#define TORKEYS_CERT_EXPIRES ((time_t)1798293600)
static const char *const TORKEYS_FILES[] = {
  "secret_id_key", "ed25519_master_id_secret_key",
  "ed25519_master_id_public_key", "ed25519_signing_secret_key",
  "ed25519_signing_cert", "secret_onion_key_ntor", "secret_onion_key",
};
#define N_TORKEYS (sizeof(TORKEYS_FILES) / sizeof(TORKEYS_FILES[0]))

static blob_t
torkeys_fixture(const char *name)
{
  char *path;
  const char *top = getenv("top_srcdir");
  if (top && *top) {
    path = pc_asprintf("%s/tests/data/torkeys/%s", top, name);
  } else {
    const char *f = __FILE__;
    const char *q = strstr(f, "tests/unit/");
    path = pc_asprintf("%.*stests/data/torkeys/%s", q ? (int)(q - f) : 0, f,
                       name);
  }
  blob_t b = slurp(path);
  free(path);
  return b;
}

/* A data directory holding a copy of tor's key directory (and, with
 * skip != NULL, without that one file). Every file's time is made. */
static char *
torkeys_datadir(const char *skip)
{
  char *dd = tmpdir_new();
  ck_assert_int_eq(mkdir(dd, 0700), 0);
  char *kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(mkdir(kd, 0700), 0);
  free(kd);
  for (size_t i = 0; i < N_TORKEYS; i++) {
    if (skip && !strcmp(skip, TORKEYS_FILES[i]))
      continue;
    blob_t b = torkeys_fixture(TORKEYS_FILES[i]);
    char *p = kpath(dd, TORKEYS_FILES[i]);
    spit(p, b.d, b.n);
    ck_assert_int_eq(chmod(p, 0600), 0);
    struct timespec ts[2] = { { TORKEYS_MADE, 0 }, { TORKEYS_MADE, 0 } };
    ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
    free(p);
    free(b.d);
  }
  return dd;
}

static void
check_signs(const ed25519_keypair_t *kp)
{
  uint8_t sig[64];
  static const uint8_t msg[] = "a descriptor to sign";
  ck_assert_int_eq(ed25519_sign(sig, msg, sizeof(msg), kp), 0);
  ck_assert_int_eq(ed25519_verify(sig, msg, sizeof(msg), kp->pub), 0);
}

START_TEST(test_tor_datadir)
{
  /* tor's files load unchanged and give tor's identities; pctor writes
   * tor's fingerprint files byte for byte and rewrites no key file. */
  char *dd = torkeys_datadir(NULL);
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.nickname = "torkeystest";
  time_t now = TORKEYS_MADE + 3600;
  relay_keys_t *k = load_ok(dd, &cfg, now);
  ck_assert(!router_keys_master_is_offline(k));
  blob_t fp = torkeys_fixture("fingerprint");
  char *path = pc_asprintf("%s/fingerprint", dd);
  blob_t b = slurp(path);
  ck_assert(blob_eq(fp, b));
  ck_assert_mem_eq(fp.d, "torkeystest D8847DCB6E76E5C7AA193848F67B7386FFCBAF81\n",
                   fp.n);
  free(b.d);
  free(fp.d);
  free(path);
  fp = torkeys_fixture("fingerprint-ed25519");
  path = pc_asprintf("%s/fingerprint-ed25519", dd);
  b = slurp(path);
  ck_assert(blob_eq(fp, b));
  free(b.d);
  free(fp.d);
  free(path);
  char *s = router_keys_format_rsa_fingerprint("torkeystest",
                                               k->rsa_id_digest, 1);
  ck_assert_str_eq(s, "torkeystest D884 7DCB 6E76 E5C7 AA19 3848 F67B 7386 "
                      "FFCB AF81");
  free(s);
  s = router_keys_format_ed25519_id("torkeystest", k->ed_identity.pub);
  ck_assert_str_eq(s, "torkeystest JqMvcVf2Yc9t6ZkEdr3rhiC9hlbiPeqL4/WyY7dfTZc");
  free(s);

  /* The keys are tor's: identity from the public key file, the stored
   * certificate, the ntor key; and they sign. */
  b = torkeys_fixture("ed25519_master_id_public_key");
  ck_assert_mem_eq(k->ed_identity.pub, b.d + 32, 32);
  free(b.d);
  b = torkeys_fixture("ed25519_signing_cert");
  ck_assert_uint_eq(k->ed_signing_cert_len, b.n - 32);
  ck_assert_mem_eq(k->ed_signing_cert, b.d + 32, b.n - 32);
  free(b.d);
  ck_assert(k->ed_signing_expires == TORKEYS_CERT_EXPIRES);
  b = torkeys_fixture("secret_onion_key_ntor");
  ck_assert_mem_eq(k->ntor_current.pub, b.d + 64, 32);
  free(b.d);
  ck_assert(router_keys_ntor_created(k) == TORKEYS_MADE);
  ck_assert(k->ed_identity.expanded_only && k->ed_signing.expanded_only);
  check_signs(&k->ed_identity);
  check_signs(&k->ed_signing);
  check_certs(k, now);
  for (size_t i = 0; i < N_TORKEYS; i++) {
    blob_t want = torkeys_fixture(TORKEYS_FILES[i]);
    b = kslurp(dd, TORKEYS_FILES[i]);
    ck_assert_msg(blob_eq(want, b), "%s changed", TORKEYS_FILES[i]);
    free(want.d);
    free(b.d);
  }

  /* --key-expiration sign, as tor printed it for these files. */
  s = router_keys_key_expiration(k, dd, &cfg, 0);
  ck_assert_str_eq(s, "signing-cert-expiry: 2026-12-26 14:00:00\n");
  free(s);
  s = router_keys_key_expiration(k, dd, &cfg, 1);
  ck_assert_str_eq(s, "signing-cert-expiry: 1798293600\n");
  free(s);

  /* 29 days on: the onion keys rotate in tor's files and the signing key
   * is renewed with the tor master key, in tor's format. */
  int rot = 0;
  time_t t1 = TORKEYS_MADE + 29 * DAY;
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, t1, &rot), 0);
  ck_assert(rot & ROUTER_KEYS_ROTATED_NTOR);
  ck_assert(rot & ROUTER_KEYS_ROTATED_SIGNING);
  blob_t old = kslurp(dd, "secret_onion_key_ntor.old");
  blob_t orig = torkeys_fixture("secret_onion_key_ntor");
  ck_assert(blob_eq(old, orig));
  free(old.d);
  free(orig.d);
  old = kslurp(dd, "secret_onion_key.old");
  orig = torkeys_fixture("secret_onion_key");
  ck_assert(blob_eq(old, orig)); /* tor's PEM, re-encoded byte for byte */
  free(old.d);
  free(orig.d);
  check_certs(k, t1);
  relay_keys_t *r = load_ok(dd, &cfg, t1 + 60);
  ck_assert_mem_eq(r->ed_signing.pub, k->ed_signing.pub, 32);
  ck_assert_mem_eq(r->ntor_current.pub, k->ntor_current.pub, 32);
  ck_assert(r->has_ntor_previous);
  ck_assert_mem_eq(r->ed_identity.pub, k->ed_identity.pub, 32);
  router_keys_free(r);
  router_keys_free(k);
  tmpdir_free(dd);
}
END_TEST

/* --verify-config's look at an offline key directory: what start-up
 * would refuse, found without writing anything. */
START_TEST(test_check_offline)
{
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.offline_master_key = 1;
  time_t now = TORKEYS_MADE + 3600;
  char *err = NULL;
  char *dd = torkeys_datadir("ed25519_master_id_secret_key");
  ck_assert_int_eq(router_keys_check_offline(dd, &cfg, now, &err), 0);
  ck_assert_ptr_null(err);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  /* Expired: as start-up says it. */
  ck_assert_int_eq(router_keys_check_offline(dd, &cfg,
                                             TORKEYS_CERT_EXPIRES + 1, &err),
                   -1);
  ck_assert_msg(strstr(err, "expired at 2026-12-26 14:00:00") != NULL, "%s",
                err);
  PC_FREE(err);
  /* The certificate is not signed by this master identity. */
  blob_t pub = kslurp(dd, "ed25519_master_id_public_key");
  blob_t orig = {pc_memdup(pub.d, pub.n), pub.n};
  ed25519_keypair_t other;
  ed25519_keypair_generate(&other);
  memcpy(pub.d + pub.n - 32, other.pub, 32);
  char *pp = kpath(dd, "ed25519_master_id_public_key");
  spit(pp, pub.d, pub.n);
  ck_assert_int_eq(router_keys_check_offline(dd, &cfg, now, &err), -1);
  ck_assert_msg(strstr(err, "not signed by our ed25519 identity") != NULL,
                "%s", err);
  PC_FREE(err);
  /* No master public key at all. */
  ck_assert_int_eq(unlink(pp), 0);
  ck_assert_int_eq(router_keys_check_offline(dd, &cfg, now, &err), -1);
  ck_assert_msg(strstr(err, "holds no ed25519 identity") != NULL, "%s", err);
  PC_FREE(err);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_public_key"));
  /* Back, without the certificate. */
  spit(pp, orig.d, orig.n);
  char *cp = kpath(dd, "ed25519_signing_cert");
  ck_assert_int_eq(unlink(cp), 0);
  ck_assert_int_eq(router_keys_check_offline(dd, &cfg, now, &err), -1);
  ck_assert_msg(strstr(err, "no signing key and certificate") != NULL, "%s",
                err);
  PC_FREE(err);
  ck_assert(!fs_file_exists(cp));
  free(cp);
  free(pp);
  free(pub.d);
  free(orig.d);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_offline_master)
{
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  time_t now = TORKEYS_MADE + 3600;
  char *err = NULL;

  /* No master secret key: run on the signing key and certificate. */
  char *dd = torkeys_datadir("ed25519_master_id_secret_key");
  relay_keys_t *k = load_ok(dd, &cfg, now);
  ck_assert(router_keys_master_is_offline(k));
  blob_t pubf = torkeys_fixture("ed25519_master_id_public_key");
  ck_assert_mem_eq(k->ed_identity.pub, pubf.d + 32, 32);
  free(pubf.d);
  uint8_t sig[64];
  ck_assert_int_eq(ed25519_sign(sig, (const uint8_t *)"x", 1,
                                &k->ed_identity), -1);
  check_signs(&k->ed_signing);
  check_certs(k, now);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));

  /* Near expiry nothing is made: no master key to certify a new one. */
  int rot = 0;
  time_t late = TORKEYS_CERT_EXPIRES - 2 * DAY;
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, late, &rot), 0);
  ck_assert(!(rot & ROUTER_KEYS_ROTATED_SIGNING));
  blob_t cert0 = torkeys_fixture("ed25519_signing_cert");
  blob_t b = kslurp(dd, "ed25519_signing_cert");
  ck_assert(blob_eq(cert0, b));
  free(b.d);

  /* --keygen where the master key is (a full copy of tor's directory);
   * the operator copies the two signing files over: they are adopted. */
  char *master = torkeys_datadir(NULL);
  char *out = (char *)1;
  ck_assert_int_eq(router_keys_keygen(master, &cfg, late, &out, &err), 0);
  ck_assert_ptr_null(out);
  ck_assert_ptr_null(err);
  const char *pair[] = { "ed25519_signing_secret_key",
                         "ed25519_signing_cert" };
  for (int i = 0; i < 2; i++) {
    b = kslurp(master, pair[i]);
    char *p = kpath(dd, pair[i]);
    spit(p, b.d, b.n);
    free(p);
    free(b.d);
  }
  ck_assert_int_eq(router_keys_rotate_if_needed(k, dd, &cfg, late + 60,
                                                &rot), 0);
  ck_assert(rot & ROUTER_KEYS_ROTATED_SIGNING);
  ck_assert(k->ed_signing_expires >= late + 30 * DAY);
  check_certs(k, late + 60);
  router_keys_free(k);
  tmpdir_free(master);

  /* Expired (the original certificate again): refused, clearly. */
  char *p = kpath(dd, "ed25519_signing_cert");
  spit(p, cert0.d, cert0.n);
  blob_t skey = torkeys_fixture("ed25519_signing_secret_key");
  char *sp = kpath(dd, "ed25519_signing_secret_key");
  spit(sp, skey.d, skey.n);
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg,
                                                TORKEYS_CERT_EXPIRES + 1,
                                                &err));
  ck_assert_msg(strstr(err, "expired at 2026-12-26 14:00:00") != NULL, "%s",
                err);
  ck_assert_msg(strstr(err, "refusing to start") != NULL, "%s", err);
  ck_assert_msg(strstr(err, "offline") != NULL, "%s", err);
  PC_FREE(err);
  /* Missing certificate: refused, nothing made. */
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg, now, &err));
  ck_assert_msg(strstr(err, "no signing key and certificate") != NULL, "%s",
                err);
  PC_FREE(err);
  ck_assert(!fs_file_exists(p));
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  /* A certificate for another key than the stored signing key. */
  spit(p, cert0.d, cert0.n);
  ed25519_keypair_t other;
  ed25519_keypair_generate(&other);
  memcpy(skey.d, "== ed25519v1-secret: type4 ==", 29);
  ck_assert_int_eq(ed25519_expand_seed(skey.d + 32, other.seed), 0);
  spit(sp, skey.d, skey.n);
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg, now, &err));
  ck_assert_msg(strstr(err, "certifies another key") != NULL, "%s", err);
  PC_FREE(err);
  free(skey.d);
  free(sp);
  free(p);
  free(cert0.d);
  tmpdir_free(dd);

  /* OfflineMasterKey 1 with the master key present: not used. */
  dd = torkeys_datadir(NULL);
  cfg.offline_master_key = 1;
  k = load_ok(dd, &cfg, now);
  ck_assert(router_keys_master_is_offline(k));
  ck_assert_int_eq(ed25519_sign(sig, (const uint8_t *)"x", 1,
                                &k->ed_identity), -1);
  router_keys_free(k);
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg,
                                                TORKEYS_CERT_EXPIRES, &err));
  ck_assert_msg(strstr(err, "OfflineMasterKey is set") != NULL, "%s", err);
  PC_FREE(err);
  tmpdir_free(dd);

  /* OfflineMasterKey 1 in an empty directory: refused, no identity made. */
  dd = tmpdir_new();
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg, now, &err));
  ck_assert_msg(strstr(err, "holds no ed25519 identity") != NULL, "%s", err);
  PC_FREE(err);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  ck_assert(!kfile_exists(dd, "ed25519_master_id_public_key"));
  tmpdir_free(dd);

  /* An encrypted master key (here not even a valid one): a running relay
   * treats it as offline; --keygen names the file it cannot read
   * (test_keygen_encrypted opens a real one). */
  dd = torkeys_datadir("ed25519_master_id_secret_key");
  char *ep = kpath(dd, "ed25519_master_id_secret_key_encrypted");
  spit(ep, "encrypted", 9);
  cfg.offline_master_key = 0;
  k = load_ok(dd, &cfg, now);
  ck_assert(router_keys_master_is_offline(k));
  router_keys_free(k);
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, NULL, &err), -1);
  ck_assert_msg(strstr(err, "wrong header") != NULL, "%s", err);
  ck_assert_msg(strstr(err, ep) != NULL, "%s", err);
  PC_FREE(err);
  free(ep);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_keygen)
{
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.signing_key_lifetime_days = 10;
  char *err = NULL, *out = NULL;
  time_t now = time(NULL);
  char *dd = tmpdir_new();
  /* A new master key (as tor --keygen: only the ed25519 files). */
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert_str_eq(out, "Not encrypting the secret key.\n");
  free(out);
  ck_assert(kfile_exists(dd, "ed25519_master_id_secret_key"));
  ck_assert(kfile_exists(dd, "ed25519_master_id_public_key"));
  ck_assert(kfile_exists(dd, "ed25519_signing_secret_key"));
  ck_assert(kfile_exists(dd, "ed25519_signing_cert"));
  ck_assert(!kfile_exists(dd, "secret_id_key"));
  ck_assert(!kfile_exists(dd, "secret_onion_key_ntor"));
  blob_t id0 = kslurp(dd, "ed25519_master_id_public_key");
  blob_t s0 = kslurp(dd, "ed25519_signing_secret_key");
  /* Again: a new signing key, the same master key, nothing printed. */
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert_ptr_null(out);
  blob_t id1 = kslurp(dd, "ed25519_master_id_public_key");
  blob_t s1 = kslurp(dd, "ed25519_signing_secret_key");
  ck_assert(blob_eq(id0, id1));
  ck_assert(!blob_eq(s0, s1));
  /* The relay then starts on them, certificate valid for 10 days. */
  relay_keys_t *k = load_ok(dd, &cfg, now);
  ck_assert_mem_eq(k->ed_identity.pub, id0.d + 32, 32);
  ck_assert(k->ed_signing_expires >= now + 10 * DAY);
  ck_assert(k->ed_signing_expires < now + 10 * DAY + 3600);
  check_certs(k, now);
  router_keys_free(k);
  free(id0.d);
  free(id1.d);
  free(s0.d);
  free(s1.d);
  /* Public key without the secret: keygen cannot certify. */
  char *sp = kpath(dd, "ed25519_master_id_secret_key");
  ck_assert_int_eq(unlink(sp), 0);
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), -1);
  ck_assert_msg(strstr(err, "offline") != NULL, "%s", err);
  PC_FREE(err);
  free(sp);
  tmpdir_free(dd);
}
END_TEST

/* A passphrase source for router_keys_keygen(): hands out the strings of
 * a fixed list in turn, then NULL. */
typedef struct {
  const char *pw[3];
  int next;
} test_pw_t;

static char *
test_passphrase(void *arg, int new_pass, size_t *len, const char **why)
{
  test_pw_t *t = arg;
  (void)new_pass;
  if (t->next >= 3 || !t->pw[t->next]) {
    *why = "test: no more passphrases";
    return NULL;
  }
  const char *pw = t->pw[t->next++];
  *len = strlen(pw);
  return pc_strdup(pw);
}

START_TEST(test_keygen_encrypted)
{
  /* tor 0.4.9.11 encrypted the fixture's master key with the passphrase
   * "pctor test passphrase" (tests/data/torkeys/README). */
  time_t now = time(NULL);
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  char *err = NULL, *out = NULL;
  char *dd = torkeys_datadir("ed25519_master_id_secret_key");
  blob_t enc = torkeys_fixture("ed25519_master_id_secret_key_encrypted");
  ck_assert_uint_eq(enc.n, 227);
  char *ep = kpath(dd, "ed25519_master_id_secret_key_encrypted");
  spit(ep, enc.d, enc.n);
  ck_assert_int_eq(chmod(ep, 0600), 0);
  /* A running relay treats it as an offline master key. */
  relay_keys_t *k = load_ok(dd, &cfg, TORKEYS_MADE + 60);
  ck_assert(router_keys_master_is_offline(k));
  router_keys_free(k);
  /* Without a passphrase source, and with a wrong passphrase: refused,
   * nothing written. */
  blob_t s0 = kslurp(dd, "ed25519_signing_secret_key");
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), -1);
  ck_assert_msg(strstr(err, "no passphrase") != NULL, "%s", err);
  PC_FREE(err);
  test_pw_t pw = {{"pctor test passphrase\n", NULL, NULL}, 0};
  cfg.get_passphrase = test_passphrase;
  cfg.passphrase_arg = &pw;
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), -1);
  ck_assert_msg(strstr(err, "wrong passphrase") != NULL, "%s", err);
  PC_FREE(err);
  blob_t s1 = kslurp(dd, "ed25519_signing_secret_key");
  ck_assert(blob_eq(s0, s1));
  free(s1.d);
  /* The right one: a new signing key certified by tor's identity; the
   * encrypted file is left as it was and no plain one appears. */
  pw = (test_pw_t){{"pctor test passphrase", NULL, NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert_ptr_null(out);
  s1 = kslurp(dd, "ed25519_signing_secret_key");
  ck_assert(!blob_eq(s0, s1));
  free(s1.d);
  free(s0.d);
  blob_t e1 = kslurp(dd, "ed25519_master_id_secret_key_encrypted");
  ck_assert(blob_eq(enc, e1));
  free(e1.d);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  cfg.get_passphrase = NULL;
  k = load_ok(dd, &cfg, now);
  blob_t pub = torkeys_fixture("ed25519_master_id_public_key");
  ck_assert_mem_eq(k->ed_identity.pub, pub.d + 32, 32);
  check_certs(k, now);
  router_keys_free(k);
  /* --newpass: stored again under "other" (a new box), which opens
   * with "other" only. */
  cfg.get_passphrase = test_passphrase;
  cfg.newpass = 1;
  pw = (test_pw_t){{"pctor test passphrase", "other", NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  e1 = kslurp(dd, "ed25519_master_id_secret_key_encrypted");
  ck_assert(!blob_eq(enc, e1));
  free(e1.d);
  cfg.newpass = 0;
  pw = (test_pw_t){{"pctor test passphrase", NULL, NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), -1);
  PC_FREE(err);
  /* --newpass --no-passphrase: stored unencrypted, the box removed; the
   * relay then runs with its master key online. */
  cfg.newpass = cfg.no_passphrase = 1;
  pw = (test_pw_t){{"other", NULL, NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert(kfile_exists(dd, "ed25519_master_id_secret_key"));
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key_encrypted"));
  k = load_ok(dd, &cfg, now);
  ck_assert(!router_keys_master_is_offline(k));
  ck_assert_mem_eq(k->ed_identity.pub, pub.d + 32, 32);
  router_keys_free(k);
  free(pub.d);
  free(enc.d);
  free(ep);
  tmpdir_free(dd);
  /* A new identity with a passphrase: only the encrypted file, which
   * opens with that passphrase; an empty passphrase stores it plain. */
  dd = tmpdir_new();
  cfg.newpass = cfg.no_passphrase = 0;
  pw = (test_pw_t){{"fresh", "fresh", NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert_ptr_null(out);
  ck_assert(kfile_exists(dd, "ed25519_master_id_secret_key_encrypted"));
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  tmpdir_free(dd);
  /* No passphrase to be had for a new key: nothing is left behind. */
  dd = tmpdir_new();
  pw = (test_pw_t){{NULL, NULL, NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), -1);
  ck_assert_msg(strstr(err, "No passphrase") != NULL, "%s", err);
  PC_FREE(err);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_public_key"));
  tmpdir_free(dd);
  dd = tmpdir_new();
  pw = (test_pw_t){{"", NULL, NULL}, 0};
  ck_assert_int_eq(router_keys_keygen(dd, &cfg, now, &out, &err), 0);
  ck_assert_str_eq(out, "Not encrypting the secret key.\n");
  PC_FREE(out);
  ck_assert(kfile_exists(dd, "ed25519_master_id_secret_key"));
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_convert_old_layout)
{
  /* pctor's earlier files are converted to tor's and removed; the
   * identity, the ntor keys and their schedule are kept. */
  char *dd = tmpdir_new();
  ck_assert_int_eq(mkdir(dd, 0700), 0);
  char *kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(mkdir(kd, 0700), 0);
  free(kd);
  time_t now = time(NULL);
  time_t made = now - 3 * DAY;
  ed25519_keypair_t id, sign;
  ed25519_keypair_generate(&id);
  ed25519_keypair_generate(&sign);
  uint8_t f[96];
  memset(f, 0, 32);
  memcpy(f, "== pctor ed25519 identity v1 ==", 31);
  memcpy(f + 32, id.seed, 32);
  memcpy(f + 64, id.pub, 32);
  char *p = kpath(dd, "ed25519_master_id_seed");
  spit(p, f, 96);
  free(p);
  memset(f, 0, 32);
  memcpy(f, "== pctor ed25519 signing v1 ==", 30);
  memcpy(f + 32, sign.seed, 32);
  memcpy(f + 64, sign.pub, 32);
  p = kpath(dd, "ed25519_signing_seed");
  spit(p, f, 96);
  free(p);
  curve25519_keypair_t n1, n2;
  curve25519_keypair_generate(&n1);
  curve25519_keypair_generate(&n2);
  uint8_t nf[32 + 8 + 1 + 128];
  memset(nf, 0, 32);
  memcpy(nf, "== pctor ntor onion keys v1 ==", 30);
  set_u64(nf + 32, (uint64_t)made);
  nf[40] = 2;
  memcpy(nf + 41, n1.secret, 32);
  memcpy(nf + 73, n1.pub, 32);
  memcpy(nf + 105, n2.secret, 32);
  memcpy(nf + 137, n2.pub, 32);
  p = kpath(dd, "ntor_onion_keys");
  spit(p, nf, sizeof(nf));
  free(p);

  relay_keys_t *k = load_ok(dd, NULL, now);
  ck_assert_mem_eq(k->ed_identity.pub, id.pub, 32);
  ck_assert_mem_eq(k->ntor_current.pub, n1.pub, 32);
  ck_assert(k->has_ntor_previous);
  ck_assert_mem_eq(k->ntor_previous.pub, n2.pub, 32);
  ck_assert(router_keys_ntor_created(k) == made);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_seed"));
  ck_assert(!kfile_exists(dd, "ed25519_signing_seed"));
  ck_assert(!kfile_exists(dd, "ntor_onion_keys"));
  router_keys_free(k);
  /* tor's files now hold the same keys. */
  k = load_ok(dd, NULL, now + 60);
  ck_assert_mem_eq(k->ed_identity.pub, id.pub, 32);
  ck_assert(k->ed_identity.expanded_only);
  ck_assert_mem_eq(k->ntor_current.pub, n1.pub, 32);
  ck_assert_mem_eq(k->ntor_previous.pub, n2.pub, 32);
  ck_assert(router_keys_ntor_created(k) == made);
  check_certs(k, now + 60);
  blob_t b = kslurp(dd, "ed25519_master_id_secret_key");
  uint8_t esk[64];
  ck_assert_int_eq(ed25519_expand_seed(esk, id.seed), 0);
  ck_assert_mem_eq(b.d + 32, esk, 64);
  free(b.d);
  router_keys_free(k);
  /* A seed file for another identity than tor's file: refused. */
  ed25519_keypair_t other;
  ed25519_keypair_generate(&other);
  memset(f, 0, 32);
  memcpy(f, "== pctor ed25519 identity v1 ==", 31);
  memcpy(f + 32, other.seed, 32);
  memcpy(f + 64, other.pub, 32);
  p = kpath(dd, "ed25519_master_id_seed");
  spit(p, f, 96);
  char *err = NULL;
  ck_assert_ptr_null(router_keys_load_or_create(dd, NULL, now, &err));
  ck_assert_msg(strstr(err, "different ed25519 identities") != NULL, "%s",
                err);
  free(err);
  free(p);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_tap_key_added_to_old_datadir)
{
  /* A data directory made before pctor kept a TAP key: the key is made,
   * nothing else changes. */
  char *dd = tmpdir_new();
  time_t now = time(NULL);
  relay_keys_t *a = load_ok(dd, NULL, now);
  blob_t before[N_KEY_FILES];
  for (size_t i = 0; i < N_KEY_FILES; i++)
    before[i] = kslurp(dd, KEY_FILES[i]);
  char *tp = kpath(dd, "secret_onion_key");
  ck_assert_int_eq(unlink(tp), 0);
  relay_keys_t *b = load_ok(dd, NULL, now + 60);
  ck_assert_int_eq(file_mode(tp), 0600);
  ck_assert(!crypt_rsa_public_eq(a->tap_onion_key, b->tap_onion_key));
  check_certs(b, now + 60);
  for (size_t i = 0; i < N_KEY_FILES; i++) {
    blob_t after = kslurp(dd, KEY_FILES[i]);
    if (strcmp(KEY_FILES[i], "secret_onion_key"))
      ck_assert_msg(blob_eq(before[i], after), "%s changed", KEY_FILES[i]);
    else
      ck_assert(!blob_eq(before[i], after));
    free(after.d);
    free(before[i].d);
  }
  /* A 2048-bit key in its place is refused like a corrupt one. */
  crypt_rsa_t *big = crypt_rsa_generate(2048);
  uint8_t *der = NULL;
  size_t derlen = 0;
  ck_assert_int_eq(crypt_rsa_private_der(big, &der, &derlen), 0);
  char b64[4096];
  ck_assert(base64_encode(b64, sizeof(b64), der, derlen,
                          BASE64_MULTILINE) > 0);
  char *pem = pc_asprintf("-----BEGIN RSA PRIVATE KEY-----\n%s"
                          "-----END RSA PRIVATE KEY-----\n", b64);
  spit(tp, pem, strlen(pem));
  char *err = NULL;
  ck_assert_ptr_null(router_keys_load_or_create(dd, NULL, now, &err));
  ck_assert_msg(strstr(err, "not a 1024-bit RSA private key") != NULL, "%s",
                err);
  ck_assert_msg(strstr(err, tp) != NULL, "%s", err);
  free(err);
  free(pem);
  free(der);
  crypt_rsa_free(big);
  router_keys_free(a);
  router_keys_free(b);
  free(tp);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_bad_config)
{
  char *dd = tmpdir_new();
  router_keys_config_t cfg;
  char *err = NULL;
  router_keys_config_init(&cfg);
  cfg.onion_key_rotation_days = 0;
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg, time(NULL), &err));
  ck_assert_ptr_nonnull(strstr(err, "rotation"));
  free(err);
  err = NULL;
  router_keys_config_init(&cfg);
  cfg.onion_key_grace_days = 29;
  ck_assert_ptr_null(router_keys_load_or_create(dd, &cfg, time(NULL), &err));
  ck_assert_ptr_nonnull(strstr(err, "grace"));
  free(err);
  err = NULL;
  ck_assert_ptr_null(router_keys_load_or_create("", NULL, time(NULL), &err));
  free(err);
  /* Nothing was created for a refused configuration. */
  ck_assert(!fs_file_exists(dd));
  /* A data directory whose parent does not exist. */
  char *deep = pc_asprintf("%s/no/such/dir", dd);
  err = NULL;
  ck_assert_ptr_null(router_keys_load_or_create(deep, NULL, time(NULL),
                                                &err));
  ck_assert_ptr_nonnull(err);
  free(err);
  free(deep);
  tmpdir_free(dd);
}
END_TEST

START_TEST(test_datadir_lock)
{
  /* tor's DataDirectory lock: one holder at a time (flock locks belong to
   * the open file, so a second open in this process is refused too). */
  char *dd = tmpdir_new(); /* (made by the call) */
  char *err = NULL;
  int fd = router_keys_lock_datadir(dd, &err);
  ck_assert_int_ge(fd, 0);
  ck_assert_ptr_null(err);
  char *lp = pc_asprintf("%s/lock", dd);
  ck_assert_int_eq(file_mode(lp), 0600);
  ck_assert_int_eq(router_keys_lock_datadir(dd, &err), -1);
  ck_assert_msg(strstr(err, "another tor or pctor") != NULL, "%s", err);
  ck_assert_msg(strstr(err, lp) != NULL, "%s", err);
  PC_FREE(err);
  close(fd);
  fd = router_keys_lock_datadir(dd, &err);
  ck_assert_int_ge(fd, 0);
  close(fd);
  free(lp);
  tmpdir_free(dd);
}
END_TEST

/* A KeyDirectory apart from the DataDirectory: keys there, fingerprint
 * files in the DataDirectory. */
START_TEST(test_key_directory)
{
  char *dd = tmpdir_new();
  char *kd = pc_asprintf("%s-keys", dd);
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.key_directory = kd;
  relay_keys_t *k = load_ok(dd, &cfg, time(NULL));
  char *p = pc_asprintf("%s/ed25519_master_id_secret_key", kd);
  ck_assert(fs_file_exists(p));
  ck_assert_int_eq(file_mode(kd), 0700);
  free(p);
  ck_assert(!kfile_exists(dd, "ed25519_master_id_secret_key"));
  p = pc_asprintf("%s/fingerprint", dd);
  ck_assert(fs_file_exists(p));
  free(p);
  relay_keys_t *k2 = load_ok(dd, &cfg, time(NULL));
  ck_assert_mem_eq(k->ed_identity.pub, k2->ed_identity.pub, 32);
  router_keys_free(k);
  router_keys_free(k2);
  free(kd);
  tmpdir_free(dd); /* (kd is inside the same temporary directory) */
}
END_TEST

START_TEST(test_group_readable_dir_fixed)
{
  char *dd = tmpdir_new();
  ck_assert_int_eq(mkdir(dd, 0755), 0);
  relay_keys_t *k = load_ok(dd, NULL, time(NULL));
  ck_assert_int_eq(file_mode(dd), 0700);
  router_keys_free(k);
  /* KeyDirectoryGroupReadable 1: the key directory becomes 0750 (made so,
   * or changed); 0 makes it private again. DataDirectory stays 0700. */
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.key_directory_group_readable = 1;
  k = load_ok(dd, &cfg, time(NULL));
  char *kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(file_mode(kd), 0750);
  ck_assert_int_eq(file_mode(dd), 0700);
  router_keys_free(k);
  cfg.key_directory_group_readable = 0;
  k = load_ok(dd, &cfg, time(NULL));
  ck_assert_int_eq(file_mode(kd), 0700);
  router_keys_free(k);
  tmpdir_free(dd);
  dd = tmpdir_new();
  cfg.key_directory_group_readable = 1;
  k = load_ok(dd, &cfg, time(NULL));
  free(kd);
  kd = pc_asprintf("%s/keys", dd);
  ck_assert_int_eq(file_mode(kd), 0750);
  router_keys_free(k);
  free(kd);
  tmpdir_free(dd);
}
END_TEST

Suite *
suite_router_keys(void)
{
  Suite *s = suite_create("router_keys");
  TCase *tc = tcase_create("router_keys");
  tcase_add_unchecked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_first_start);
  tcase_add_test(tc, test_reload_same);
  tcase_add_test(tc, test_read_only);
  tcase_add_test(tc, test_corrupt_files);
  tcase_add_test(tc, test_rotation);
  tcase_add_test(tc, test_rotation_write_failure);
  tcase_add_test(tc, test_rotation_across_restart);
  tcase_add_test(tc, test_signing_renewal_at_start);
  tcase_add_test(tc, test_fingerprint_tor_vectors);
  tcase_add_test(tc, test_tor_datadir);
  tcase_add_test(tc, test_offline_master);
  tcase_add_test(tc, test_check_offline);
  tcase_add_test(tc, test_keygen);
  tcase_add_test(tc, test_keygen_encrypted);
  tcase_add_test(tc, test_convert_old_layout);
  tcase_add_test(tc, test_datadir_lock);
  tcase_add_test(tc, test_key_directory);
  tcase_add_test(tc, test_tap_key_added_to_old_datadir);
  tcase_add_test(tc, test_bad_config);
  tcase_add_test(tc, test_group_readable_dir_fixed);
  suite_add_tcase(s, tc);
  return s;
}
