/* SPDX-License-Identifier: BSD-3-Clause */
/* check_family_keys.c -- unit tests for feature/relay/family_keys: tor's
 * family key files (a key made by tor 0.4.9.11 in tests/data/torkeys),
 * --keygen-family, loading by FamilyId, and family certificates (one made
 * by tor as the vector), and the family-cert lines of a descriptor built
 * and checked by routerdesc and read by a client (feature/dir/serverdesc).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feature/dir/serverdesc.h"
#include "feature/relay/family_keys.h"
#include "feature/relay/router_keys.h"
#include "feature/relay/routerdesc.h"
#include "lib/crypt/crypt_init.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"

Suite *suite_family_keys(void);

/* tor --keygen-family torkeystest (tests/data/torkeys/README). */
#define TOR_FAMILY_ID "d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7w"

/* A family-cert from a descriptor tor 0.4.9.11 made (FamilyId
 * YZJjIqfo9WkfjdjSVdA9LLgpaTv5mOxjnsFG5ci6zYk) for the relay whose
 * master-key-ed25519 is Ogi0wF8Dg2qTPdOyOryQGCYt/1bn61mwWKOPZaurmPY. */
static const char TOR_CERT_B64[] =
    "AQwAB59UAToItMBfA4Nqkz3Tsjq8kBgmLf9W5+tZsFijj2Wrq5j2AQAgBABhkmMi"
    "p+j1aR+N2NJV0D0suClpO/mY7GOewUblyLrNiSnJ3J9Lj6eZVILu+uHwqv4n2dqX"
    "pfugBjmZ+WWdrAo+gyem8usXpTRBVsVu1Wpu+wdOLwg991xOC+q3ORT9zQ4=";
#define TOR_CERT_ID "Ogi0wF8Dg2qTPdOyOryQGCYt/1bn61mwWKOPZaurmPY"
#define TOR_CERT_FAMILY "YZJjIqfo9WkfjdjSVdA9LLgpaTv5mOxjnsFG5ci6zYk"

static char *
data_path(const char *name)
{
  const char *top = getenv("top_srcdir");
  if (top && *top)
    return pc_asprintf("%s/tests/data/torkeys/%s", top, name);
  const char *f = __FILE__;
  const char *q = strstr(f, "tests/unit/");
  return pc_asprintf("%.*stests/data/torkeys/%s", q ? (int)(q - f) : 0, f,
                     name);
}

/* tests/fuzz/corpus/serverdesc/tor049-family-cert: the descriptor of
 * that relay, as tor served it (GET /tor/server/authority). */
static char *
tor_desc_path(void)
{
  char *p = data_path("x");
  char *q = strstr(p, "tests/data/torkeys/x");
  *q = '\0';
  char *r = pc_asprintf("%stests/fuzz/corpus/serverdesc/tor049-family-cert",
                        p);
  free(p);
  return r;
}

static char *
tmpdir_new(void)
{
  char *d = pc_strdup("/tmp/pctor-fk-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

static void
tmpdir_free(char *d)
{
  char *cmd = pc_asprintf("rm -rf '%s'", d);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
  free(d);
}

static void
copy_file(const char *from, const char *to)
{
  uint8_t *b = NULL;
  size_t n = 0;
  ck_assert_int_eq(fs_read_file(from, 4096, &b, &n), 0);
  ck_assert_int_eq(fs_write_file_atomic(to, b, n, 0600), 0);
  free(b);
}

static void
b64_32(uint8_t out[32], const char *s)
{
  ck_assert_int_eq(base64_decode(out, 32, s, strlen(s)), 32);
}

START_TEST(test_ids)
{
  ck_assert(family_id_is_valid(TOR_FAMILY_ID));
  ck_assert(family_id_is_valid("*"));
  ck_assert(!family_id_is_valid(""));
  ck_assert(!family_id_is_valid("**"));
  ck_assert(!family_id_is_valid(TOR_FAMILY_ID "A"));
  ck_assert(!family_id_is_valid("d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7"));
  ck_assert(!family_id_is_valid("d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7!"));
  uint8_t pub[32];
  b64_32(pub, TOR_FAMILY_ID);
  char id[FAMILY_ID_LEN + 1];
  family_id_format(id, pub);
  ck_assert_str_eq(id, TOR_FAMILY_ID);
}
END_TEST

START_TEST(test_load_tor_key)
{
  /* tor's key file, found by its ID, by *, or not at all. */
  char *dir = tmpdir_new();
  char *src = data_path("torkeystest.secret_family_key");
  char *dst = fs_path_join(dir, "torkeystest.secret_family_key");
  copy_file(src, dst);
  family_keys_t fk;
  char *err = NULL;
  const char *ids[] = {TOR_FAMILY_ID};
  ck_assert_int_eq(family_keys_load(dir, ids, 1, &fk, &err), 0);
  ck_assert_int_eq(fk.n, 1);
  char id[FAMILY_ID_LEN + 1];
  family_id_format(id, fk.kp[0].pub);
  ck_assert_str_eq(id, TOR_FAMILY_ID);
  family_keys_clear(&fk);
  const char *star[] = {"*"};
  ck_assert_int_eq(family_keys_load(dir, star, 1, &fk, &err), 0);
  ck_assert_int_eq(fk.n, 1);
  family_keys_clear(&fk);
  ck_assert_int_eq(family_keys_load(dir, NULL, 0, &fk, &err), 0);
  ck_assert_int_eq(fk.n, 0);
  ck_assert_int_eq(family_keys_check(dir, ids, 1, &err), 0);
  /* A FamilyId without its key: an error naming both. */
  const char *other[] = {TOR_CERT_FAMILY};
  ck_assert_int_eq(family_keys_load(dir, other, 1, &fk, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, TOR_CERT_FAMILY));
  ck_assert_ptr_nonnull(strstr(err, dir));
  PC_FREE(err);
  ck_assert_int_eq(family_keys_check(dir, other, 1, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, TOR_CERT_FAMILY));
  PC_FREE(err);
  /* Corrupt files are named; other files are ignored. */
  char *junk = fs_path_join(dir, "notes.txt");
  ck_assert_int_eq(fs_write_file_atomic(junk, "x", 1, 0600), 0);
  ck_assert_int_eq(family_keys_load(dir, ids, 1, &fk, &err), 0);
  family_keys_clear(&fk);
  char *bad = fs_path_join(dir, "bad.secret_family_key");
  ck_assert_int_eq(fs_write_file_atomic(bad, "short", 5, 0600), 0);
  ck_assert_int_eq(family_keys_load(dir, ids, 1, &fk, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "bad.secret_family_key"));
  ck_assert_ptr_nonnull(strstr(err, "wrong size"));
  PC_FREE(err);
  uint8_t b[96];
  memset(b, 0, sizeof(b));
  memcpy(b, "== ed25519v1-secret: type0 ==", 29);
  ck_assert_int_eq(fs_write_file_atomic(bad, b, sizeof(b), 0600), 0);
  ck_assert_int_eq(family_keys_load(dir, ids, 1, &fk, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "wrong header"));
  PC_FREE(err);
  /* Bad IDs and a missing directory. */
  const char *badid[] = {"nope"};
  ck_assert_int_eq(family_keys_load(dir, badid, 1, &fk, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not a family ID"));
  PC_FREE(err);
  ck_assert_int_eq(family_keys_load("/nonexistent/pctor", ids, 1, &fk,
                                    &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/pctor"));
  PC_FREE(err);
  free(junk);
  free(bad);
  free(src);
  free(dst);
  tmpdir_free(dir);
}
END_TEST

START_TEST(test_generate)
{
  /* --keygen-family NAME: tor's files and output; never overwrites. */
  char *dir = tmpdir_new();
  char *name = fs_path_join(dir, "fam");
  char *out = NULL, *err = NULL;
  ck_assert_int_eq(family_keys_generate(name, &out, &err), 0);
  char *want = pc_asprintf("# Generated %s.secret_family_key\nFamilyId ",
                           name);
  ck_assert(!strncmp(out, want, strlen(want)));
  const char *id = out + strlen(want);
  ck_assert_uint_eq(strlen(id), FAMILY_ID_LEN + 1);
  ck_assert_int_eq(id[FAMILY_ID_LEN], '\n');
  char *pubf = pc_asprintf("%s.public_family_id", name);
  uint8_t *b = NULL;
  size_t n = 0;
  ck_assert_int_eq(fs_read_file(pubf, 100, &b, &n), 0);
  ck_assert_uint_eq(n, FAMILY_ID_LEN + 1);
  ck_assert_mem_eq(b, id, n);
  free(b);
  char *secf = pc_asprintf("%s.secret_family_key", name);
  struct stat st;
  ck_assert_int_eq(stat(secf, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  ck_assert_int_eq((int)st.st_size, 96);
  /* It loads under the printed ID. */
  char idz[FAMILY_ID_LEN + 1];
  memcpy(idz, id, FAMILY_ID_LEN);
  idz[FAMILY_ID_LEN] = '\0';
  const char *ids[] = {idz};
  family_keys_t fk;
  ck_assert_int_eq(family_keys_load(dir, ids, 1, &fk, &err), 0);
  ck_assert_int_eq(fk.n, 1);
  family_keys_clear(&fk);
  free(out);
  out = NULL;
  ck_assert_int_eq(family_keys_generate(name, &out, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "already exists"));
  PC_FREE(err);
  ck_assert_int_eq(family_keys_generate("", &out, &err), -1);
  PC_FREE(err);
  free(want);
  free(pubf);
  free(secf);
  free(name);
  tmpdir_free(dir);
}
END_TEST

START_TEST(test_cert_tor_vector)
{
  /* tor's family-cert checks; against another identity, or altered, it
   * does not. */
  uint8_t cert[200], id[32], fam[32], got[32];
  long n = base64_decode(cert, sizeof(cert), TOR_CERT_B64,
                         strlen(TOR_CERT_B64));
  ck_assert_int_gt(n, 0);
  b64_32(id, TOR_CERT_ID);
  b64_32(fam, TOR_CERT_FAMILY);
  const char *why = NULL;
  ck_assert_int_eq(family_keys_check_cert(cert, (size_t)n, id, 0, got, &why),
                   0);
  ck_assert_mem_eq(got, fam, 32);
  /* It expires with tor's signing certificate, an hour boundary. */
  ck_assert_int_eq(family_keys_check_cert(cert, (size_t)n, id,
                                          (time_t)0x79f54 * 3600 + 1, got,
                                          &why), -1);
  id[0] ^= 1;
  ck_assert_int_eq(family_keys_check_cert(cert, (size_t)n, id, 0, got, &why),
                   -1);
  id[0] ^= 1;
  cert[n - 1] ^= 1;
  ck_assert_int_eq(family_keys_check_cert(cert, (size_t)n, id, 0, got, &why),
                   -1);
  cert[n - 1] ^= 1;
  cert[1] = 0x04; /* another type */
  ck_assert_int_eq(family_keys_check_cert(cert, (size_t)n, id, 0, got, &why),
                   -1);
  /* The whole descriptor: routerdesc_check() accepts it and finds the
   * family; a client reading it gets the family ID authorities list. */
  char *path = tor_desc_path();
  uint8_t *doc = NULL;
  size_t len = 0;
  ck_assert_int_eq(fs_read_file(path, 65536, &doc, &len), 0);
  if (len > 2 && doc[len - 1] == '\n' && doc[len - 2] == '\n')
    len--; /* (tor's HTTP body ends with one more newline) */
  routerdesc_info_t info;
  char *err = NULL;
  ck_assert_msg(routerdesc_check((const char *)doc, len, 0, &info, &err) ==
                    0, "%s", err ? err : "?");
  ck_assert_int_eq(info.n_family_certs, 1);
  ck_assert_mem_eq(info.family_keys[0], fam, 32);
  microdesc_t *md = NULL;
  ck_assert_int_eq(serverdesc_parse((const char *)doc, len, &md, &err), 0);
  ck_assert_int_eq(md->n_family_ids, 1);
  ck_assert_str_eq(md->family_ids[0], "ed25519:" TOR_CERT_FAMILY);
  microdesc_free(md);
  free(doc);
  free(path);
}
END_TEST

START_TEST(test_descriptor)
{
  /* A descriptor with two family keys (tor's and a new one) carries two
   * family-certs that routerdesc_check() accepts, each certifying our
   * identity until the signing certificate expires. */
  time_t now = time(NULL);
  char *dir = tmpdir_new();
  char *kd = fs_path_join(dir, "keys");
  ck_assert_int_eq(mkdir(kd, 0700), 0);
  char *src = data_path("torkeystest.secret_family_key");
  char *dst = fs_path_join(kd, "a.secret_family_key");
  copy_file(src, dst);
  char *name = fs_path_join(kd, "b");
  char *out = NULL, *err = NULL;
  ck_assert_int_eq(family_keys_generate(name, &out, &err), 0);
  free(out);
  const char *star[] = {"*"};
  family_keys_t fk;
  ck_assert_int_eq(family_keys_load(kd, star, 1, &fk, &err), 0);
  ck_assert_int_eq(fk.n, 2);
  relay_keys_t *k = router_keys_load_or_create(dir, NULL, now, &err);
  ck_assert_msg(k != NULL, "%s", err ? err : "?");
  routerdesc_config_t rc;
  memset(&rc, 0, sizeof(rc));
  rc.nickname = "famtest";
  ck_assert_int_eq(pc_addr_parse(&rc.address, "203.0.113.9"), 0);
  rc.or_port = 9001;
  rc.bw_rate = ROUTERDESC_DEFAULT_BW_RATE;
  rc.bw_burst = ROUTERDESC_DEFAULT_BW_BURST;
  rc.ipv6_or.family = AF_UNSPEC;
  rc.published = now;
  rc.family_keys = fk.kp;
  rc.n_family_keys = fk.n;
  char *d = routerdesc_build(k, &rc, &err);
  ck_assert_msg(d != NULL, "%s", err ? err : "?");
  ck_assert_ptr_nonnull(strstr(d, "\nfamily-cert\n-----BEGIN FAMILY CERT"
                                  "-----\n"));
  routerdesc_info_t info;
  ck_assert_msg(routerdesc_check(d, strlen(d), now, &info, &err) == 0, "%s",
                err ? err : "?");
  ck_assert_int_eq(info.n_family_certs, 2);
  int seen_a = 0, seen_b = 0;
  for (int i = 0; i < 2; i++) {
    seen_a |= !memcmp(info.family_keys[i], fk.kp[0].pub, 32);
    seen_b |= !memcmp(info.family_keys[i], fk.kp[1].pub, 32);
  }
  ck_assert(seen_a && seen_b);
  /* A client reading server descriptors (UseMicrodescriptors 0) puts
   * both families in the relay's family IDs, as authorities do in
   * microdescriptors. */
  microdesc_t *md = NULL;
  ck_assert_int_eq(serverdesc_parse(d, strlen(d), &md, &err), 0);
  ck_assert_int_eq(md->n_family_ids, 2);
  char ida[FAMILY_ID_LEN + 1], want[8 + FAMILY_ID_LEN + 1];
  family_id_format(ida, fk.kp[0].pub);
  snprintf(want, sizeof(want), "ed25519:%s", ida);
  ck_assert(!strcmp(md->family_ids[0], want) ||
            !strcmp(md->family_ids[1], want));
  microdesc_free(md);
  /* Not a family key's: the check refuses it; a client drops that
   * family only. */
  char *p = strstr(d, "-----BEGIN FAMILY CERT-----\n") + 28 + 60;
  *p = *p == 'A' ? 'B' : 'A';
  ck_assert_int_eq(routerdesc_check(d, strlen(d), now, &info, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "family-cert"));
  PC_FREE(err);
  ck_assert_int_eq(serverdesc_parse(d, strlen(d), &md, &err), 0);
  ck_assert_int_eq(md->n_family_ids, 1);
  microdesc_free(md);
  free(d);
  family_keys_clear(&fk);
  router_keys_free(k);
  free(name);
  free(src);
  free(dst);
  free(kd);
  tmpdir_free(dir);
}
END_TEST

Suite *
suite_family_keys(void)
{
  Suite *s = suite_create("family_keys");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  crypt_global_init();
  tcase_add_test(tc, test_ids);
  tcase_add_test(tc, test_load_tor_key);
  tcase_add_test(tc, test_generate);
  tcase_add_test(tc, test_cert_tor_vector);
  tcase_add_test(tc, test_descriptor);
  suite_add_tcase(s, tc);
  return s;
}
