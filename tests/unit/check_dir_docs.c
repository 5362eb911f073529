/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dir_docs.c -- unit tests for authority key certificates,
 * consensuses (microdesc and ns flavors) and microdescriptors, against
 * real documents produced by a private network of tor 0.4.9.11
 * authorities (tests/data/dir/: their signatures are real tor signatures,
 * an independent test vector), plus synthetic documents for what the
 * private network does not show (params, accept policies, family-ids,
 * microdescriptors without a TAP key). Every truncation, flipped bytes in
 * the signed part, wrong authority keys, missing and expired certificates
 * and times outside the validity interval must give clear errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/client/client.h" /* CLIENT_PROTOCOLS */
#include "feature/dir/consensus.h"
#include "feature/dir/dir_authority.h"
#include "feature/dir/dir_keycert.h"
#include "feature/dir/microdesc.h"
#include "feature/dir/nodelist.h"
#include "lib/compress/compress.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/time/timefmt.h"

Suite *suite_dir_docs(void);

/* Load tests/data/dir/NAME (top_srcdir from the environment under make
 * check, else derived from this file's path). */
char *dirtest_load_fixture(const char *name, size_t *len);
char *
dirtest_load_fixture(const char *name, size_t *len)
{
  char path[1024];
  const char *top = getenv("top_srcdir");
  if (top && *top) {
    snprintf(path, sizeof(path), "%s/tests/data/dir/%s", top, name);
  } else {
    const char *f = __FILE__;
    const char *p = strstr(f, "tests/unit/");
    snprintf(path, sizeof(path), "%.*stests/data/dir/%s",
             p ? (int)(p - f) : 0, f, name);
  }
  uint8_t *data = NULL;
  int r = fs_read_file(path, 16 * 1024 * 1024, &data, len);
  if (r < 0)
    ck_abort_msg("cannot read fixture %s", path);
  return (char *)data;
}

/* The private network's authorities (tests/data/dir/dirauth.torrc). */
static int
load_auths(dir_authority_t *auths)
{
  size_t len;
  char *t = dirtest_load_fixture("dirauth.torrc", &len);
  int n = 0;
  char *save = NULL;
  for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (strncmp(l, "DirAuthority ", 13))
      continue;
    char *err = NULL;
    ck_assert_int_eq(dir_authority_parse(&auths[n], l + 13, &err), 0);
    n++;
  }
  free(t);
  return n;
}

static dir_keycert_t **
load_certs(int *n)
{
  size_t len;
  char *t = dirtest_load_fixture("keys-all", &len);
  dir_keycert_t **certs = NULL;
  *n = 0;
  char *err = NULL;
  ck_assert_int_eq(dir_keycert_parse_all(t, len, &certs, n, &err), 0);
  ck_assert_ptr_null(err);
  free(t);
  return certs;
}

static void
free_certs(dir_keycert_t **certs, int n)
{
  for (int i = 0; i < n; i++)
    dir_keycert_free(certs[i]);
  free(certs);
}

static time_t
iso(const char *s)
{
  time_t t;
  ck_assert_int_eq(time_parse_iso(s, strlen(s), &t), 0);
  return t;
}

/* "now" for the fixtures: the consensus' valid-after. */
#define FIXTURE_NOW "2026-11-22 03:58:35"

START_TEST(test_keycerts)
{
  int n;
  dir_keycert_t **certs = load_certs(&n);
  ck_assert_int_eq(n, 3);
  dir_authority_t auths[8];
  int na = load_auths(auths);
  ck_assert_int_eq(na, 3);
  for (int i = 0; i < n; i++) {
    int found = 0;
    for (int a = 0; a < na; a++)
      found += !memcmp(auths[a].v3ident, certs[i]->id_digest, 20);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(crypt_rsa_bits(certs[i]->identity_key), 3072);
    ck_assert_int_eq(crypt_rsa_bits(certs[i]->signing_key), 2048);
    ck_assert_int_eq(certs[i]->has_dir_addr, 1);
    ck_assert_ptr_nonnull(strstr(certs[i]->text, "dir-key-certification"));
    char *err = NULL;
    ck_assert_int_eq(dir_keycert_check_time(certs[i], iso(FIXTURE_NOW),
                                            &err), 0);
    ck_assert_int_eq(dir_keycert_check_time(certs[i],
                                            iso("2027-11-22 03:51:36"),
                                            &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "expired"));
    free(err);
    ck_assert_int_eq(dir_keycert_check_time(certs[i],
                                            iso("2026-11-20 03:51:34"),
                                            &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "future"));
    free(err);
  }
  /* The first certificate: D96E... published 2026-11-22 03:51:34. */
  ck_assert_int_eq(certs[0]->id_digest[0], 0xD9);
  ck_assert_int_eq(certs[0]->published, iso("2026-11-22 03:51:34"));
  ck_assert_int_eq(certs[0]->expires, iso("2027-11-22 03:51:34"));
  free_certs(certs, n);
}
END_TEST

/* Parse the first certificate of keys-all after applying edit(). */
static int
parse_first_cert_edited(const char *from, const char *to, char **err)
{
  size_t len;
  char *t = dirtest_load_fixture("keys-all", &len);
  char *p = strstr(t, from);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq(strlen(from), strlen(to));
  memcpy(p, to, strlen(to));
  dir_keycert_t *c = NULL;
  size_t used;
  int r = dir_keycert_parse(t, len, &c, &used, err);
  dir_keycert_free(c);
  free(t);
  return r;
}

START_TEST(test_keycert_tampered)
{
  char *err = NULL;
  /* A changed date in the signed part. */
  ck_assert_int_eq(parse_first_cert_edited("dir-key-expires 2027",
                                           "dir-key-expires 2028", &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "bad dir-key-certification"));
  free(err);
  /* A flipped byte in the cross-certificate. */
  ck_assert_int_eq(parse_first_cert_edited("MSPWY5Sv", "MSPWY5Sw", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "crosscert"));
  free(err);
  /* Fingerprint that does not match the identity key. */
  ck_assert_int_eq(parse_first_cert_edited("fingerprint D96E",
                                           "fingerprint D96F", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "fingerprint does not match"));
  free(err);
  /* Wrong version. */
  ck_assert_int_eq(parse_first_cert_edited("dir-key-certificate-version 3",
                                           "dir-key-certificate-version 4",
                                           &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "version"));
  free(err);
  /* A duplicate item. */
  ck_assert_int_eq(parse_first_cert_edited("dir-key-published 2026-11-22 "
                                           "03:51:34",
                                           "dir-key-expires   2027-11-22 "
                                           "03:51:34", &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "duplicate dir-key-expires"));
  free(err);
  ck_assert_int_eq(parse_first_cert_edited("dir-address 127.0.0.1:20001",
                                           "fingerprint D96E84FFE1B3FBD",
                                           &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "malformed fingerprint"));
  free(err);

  /* Every truncation of the first certificate fails cleanly. */
  size_t len;
  char *t = dirtest_load_fixture("keys-all", &len);
  char *second = strstr(t + 1, "dir-key-certificate-version");
  size_t first_len = (size_t)(second - t);
  for (size_t cut = 0; cut < first_len - 1; cut++) {
    char *copy = malloc(cut + 1);
    memcpy(copy, t, cut);
    dir_keycert_t *c = NULL;
    size_t used;
    char *e = NULL;
    int r = dir_keycert_parse(copy, cut, &c, &used, &e);
    if (r != -1 || !e)
      ck_abort_msg("truncation at %zu accepted", cut);
    free(e);
    free(copy);
  }
  /* keys-all with one broken certificate: the two others are kept. */
  char *p = strstr(second, "dir-key-expires 2027");
  p[16] = '8';
  dir_keycert_t **certs = NULL;
  int n = 0;
  char *e = NULL;
  ck_assert_int_eq(dir_keycert_parse_all(t, len, &certs, &n, &e), 1);
  ck_assert_int_eq(n, 2);
  free_certs(certs, n);
  /* Garbage. */
  certs = NULL;
  n = 0;
  ck_assert_int_eq(dir_keycert_parse_all("hello world\n", 12, &certs, &n,
                                         &e), -1);
  ck_assert_ptr_nonnull(e);
  free(e);
  free(t);
}
END_TEST

static consensus_t *
load_consensus(const char *name)
{
  size_t len;
  char *t = dirtest_load_fixture(name, &len);
  consensus_t *c = NULL;
  char *err = NULL;
  int r = consensus_parse(t, len, &c, &err);
  if (r != 0)
    ck_abort_msg("%s: %s", name, err);
  free(t);
  return c;
}

START_TEST(test_consensus_microdesc)
{
  consensus_t *c = load_consensus("consensus-microdesc");
  ck_assert_int_eq(c->flavor, CONSENSUS_FLAVOR_MICRODESC);
  ck_assert_int_eq(c->consensus_method, 35);
  ck_assert_int_eq(c->valid_after, iso("2026-11-22 03:58:30"));
  ck_assert_int_eq(c->fresh_until, iso("2026-11-22 03:58:40"));
  ck_assert_int_eq(c->valid_until, iso("2026-11-22 03:58:50"));
  ck_assert_int_eq(c->vote_seconds, 2);
  ck_assert_int_eq(c->dist_seconds, 2);
  ck_assert(c->known_flags & RS_FLAG_GUARD);
  ck_assert(c->known_flags & RS_FLAG_STALEDESC);
  ck_assert(!(c->known_flags & RS_FLAG_BADEXIT));
  ck_assert_int_eq(c->n_voters, 3);
  ck_assert_str_eq(c->voters[0].nickname, "auth1");
  ck_assert_int_eq(c->voters[0].dir_port, 20004);
  ck_assert_int_eq(c->voters[0].or_port, 20003);
  ck_assert_int_eq(c->n_rs, 7);
  ck_assert_int_eq(c->n_sigs, 3);
  ck_assert_int_eq(c->sigs[0].alg, CONSENSUS_SIG_SHA256);
  ck_assert_int_eq(c->sigs[0].sig_len, 256);
  ck_assert_int_eq(c->has_bw_weights, 1);
  ck_assert_int_eq(c->n_bw_weights, 19);
  ck_assert_int_eq(consensus_get_bw_weight(c, "Wgd", 0), 3333);
  ck_assert_int_eq(consensus_get_bw_weight(c, "Wme", -1), 0);
  ck_assert_int_eq(consensus_get_bw_weight(c, "Wxx", 77), 77);
  ck_assert_int_eq(consensus_get_param(c, "bwweightscale", 10000, 1,
                                       INT32_MAX), 10000);
  /* relay4: 4U1b3b4F0T7Af0DEHu7/IPstmE0 = E14D5BDD... */
  const consensus_rs_t *rs = &c->rs[4];
  ck_assert_str_eq(rs->nickname, "relay4");
  ck_assert_int_eq(rs->rsa_id[0], 0xE1);
  ck_assert_int_eq(rs->rsa_id[19], 0x4D);
  ck_assert_int_eq(rs->ipv4, 0x7f000001);
  ck_assert_int_eq(rs->or_port, 20012);
  ck_assert_int_eq(rs->dir_port, 0);
  ck_assert_int_eq(rs->has_bandwidth, 1);
  ck_assert_int_eq(rs->bandwidth, 102);
  ck_assert_int_eq(rs->bw_unmeasured, 1);
  ck_assert_uint_eq(rs->flags, RS_FLAG_EXIT | RS_FLAG_FAST | RS_FLAG_GUARD |
                                 RS_FLAG_HSDIR | RS_FLAG_RUNNING |
                                 RS_FLAG_STABLE | RS_FLAG_V2DIR |
                                 RS_FLAG_VALID);
  ck_assert_str_eq(rs->version, "Tor 0.4.9.11");
  ck_assert_ptr_nonnull(strstr(rs->protocols, "Relay=2-6"));
  ck_assert_int_eq(rs->has_digest, 1);
  char b64[64];
  base64_encode(b64, sizeof(b64), rs->digest, 32, BASE64_NOPAD);
  ck_assert_str_eq(b64, "1oWlR7ZXk7EwPm4/iEsTSe3nQFWlZOnoHT6KElg/cBY");
  ck_assert_ptr_eq(consensus_find(c, rs->rsa_id), rs);
  for (int i = 0; i < c->n_rs; i++)
    ck_assert_ptr_eq(consensus_find(c, c->rs[i].rsa_id), &c->rs[i]);
  uint8_t none[20] = {0};
  ck_assert_ptr_null(consensus_find(c, none));
  ck_assert(c->rs[6].flags & RS_FLAG_AUTHORITY);
  ck_assert_int_eq(c->rs[6].dir_port, 20001);

  dir_authority_t auths[8];
  int na = load_auths(auths);
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  consensus_verify_info_t info;
  char *err = NULL;
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso(FIXTURE_NOW), &info, &err),
                   CONSENSUS_VERIFY_OK);
  ck_assert_ptr_null(err);
  ck_assert_int_eq(info.n_good, 3);
  ck_assert_int_eq(info.n_needed, 2);
  ck_assert_int_eq(info.n_bad, 0);

  /* Times. */
  ck_assert_int_eq(consensus_check_time(c, iso(FIXTURE_NOW), &err), 0);
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-22 03:58:50"), &err),
                   0);
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-22 03:58:51"), &err),
                   1);
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-23 03:58:50"), &err),
                   1);
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-23 03:58:51"), &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "expired"));
  free(err);
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-21 03:58:29"), &err),
                   -1);
  ck_assert_ptr_nonnull(strstr(err, "clock"));
  free(err);
  /* Slightly early: accepted (with a warning). */
  ck_assert_int_eq(consensus_check_time(c, iso("2026-11-22 03:50:00"), &err),
                   0);
  free_certs(certs, nc);
  consensus_free(c);
  ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_consensus_ns)
{
  consensus_t *c = load_consensus("consensus-ns");
  ck_assert_int_eq(c->flavor, CONSENSUS_FLAVOR_NS);
  ck_assert_int_eq(c->n_rs, 7);
  ck_assert_int_eq(c->sigs[0].alg, CONSENSUS_SIG_SHA1);
  for (int i = 0; i < c->n_rs; i++) {
    ck_assert_ptr_nonnull(c->rs[i].policy);
    ck_assert(!policy_summary_allows_any(c->rs[i].policy));
    ck_assert_int_eq(c->rs[i].has_digest, 1);
  }
  dir_authority_t auths[8];
  int na = load_auths(auths);
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  char *err = NULL;
  consensus_verify_info_t info;
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso(FIXTURE_NOW), &info, &err),
                   CONSENSUS_VERIFY_OK);
  ck_assert_int_eq(info.n_good, 3);
  free_certs(certs, nc);
  consensus_free(c);
}
END_TEST

/* The configured authorities' keys are what counts: a consensus whose
 * signatures are all by keys we were not told about is refused and the
 * message says so, even with the signers' certificates at hand. */
START_TEST(test_consensus_unknown_signers)
{
  consensus_t *c = load_consensus("consensus-microdesc");
  /* The client-protocol lines of tor 0.4.9's authorities, as listed;
   * pctor's client speaks all the required ones, not the onion-service
   * ones recommended. */
  ck_assert_str_eq(c->required_client_protocols,
                   "Cons=2 Desc=2 FlowCtrl=1 Link=4 Microdesc=2 Relay=2");
  ck_assert_ptr_nonnull(strstr(c->recommended_client_protocols, "HSDir=2"));
  char miss[128];
  ck_assert_int_eq(dir_protocols_missing(c->required_client_protocols,
                                         CLIENT_PROTOCOLS, miss,
                                         sizeof(miss)),
                   0);
  ck_assert_int_eq(dir_protocols_missing(c->recommended_client_protocols,
                                         CLIENT_PROTOCOLS, miss,
                                         sizeof(miss)),
                   4);
  ck_assert_str_eq(miss, "DirCache=2 HSDir=2 HSIntro=4 HSRend=2");
  char *err = NULL;
  dir_authority_t auths[8];
  int na = load_auths(auths);
  for (int a = 0; a < na; a++)
    auths[a].v3ident[0] ^= 0x01; /* other keys */
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  consensus_verify_info_t info;
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso(FIXTURE_NOW), &info, &err),
                   CONSENSUS_VERIFY_BAD);
  ck_assert_int_eq(info.n_good, 0);
  ck_assert_int_eq(info.n_unknown, 3);
  ck_assert_int_eq(info.n_missing_cert, 0);
  ck_assert_ptr_nonnull(strstr(err, "0 good signatures"));
  ck_assert_ptr_nonnull(strstr(err, "3 signatures by authorities not "
                                    "configured"));
  free(err);
  /* Two of three known: still a majority of ours. One known: refused. */
  auths[0].v3ident[0] ^= 0x01;
  auths[1].v3ident[0] ^= 0x01;
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso(FIXTURE_NOW), &info, &err),
                   CONSENSUS_VERIFY_OK);
  ck_assert_int_eq(info.n_unknown, 1);
  free(err);
  auths[1].v3ident[0] ^= 0x01;
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso(FIXTURE_NOW), &info, &err),
                   CONSENSUS_VERIFY_BAD);
  ck_assert_int_eq(info.n_good, 1);
  ck_assert_int_eq(info.n_needed, 2);
  free(err);
  free_certs(certs, nc);
  consensus_free(c);
}
END_TEST

/* Parse the fixture after replacing from with to (same length); returns
 * the verify result (or 99 if parsing failed, with *err). */
static int
verify_edited(const char *name, const char *from, const char *to,
              char **err, consensus_verify_info_t *info)
{
  size_t len;
  char *t = dirtest_load_fixture(name, &len);
  if (from) {
    char *p = strstr(t, from);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(strlen(from), strlen(to));
    memcpy(p, to, strlen(to));
  }
  consensus_t *c = NULL;
  int r = consensus_parse(t, len, &c, err);
  free(t);
  if (r < 0)
    return 99;
  dir_authority_t auths[8];
  int na = load_auths(auths);
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  r = consensus_verify(c, auths, na, certs, nc, iso(FIXTURE_NOW), info, err);
  free_certs(certs, nc);
  consensus_free(c);
  return r;
}

START_TEST(test_consensus_tampered)
{
  char *err = NULL;
  consensus_verify_info_t info;
  /* A changed bandwidth: parses, but no signature matches. */
  ck_assert_int_eq(verify_edited("consensus-microdesc", "Bandwidth=102",
                                 "Bandwidth=103", &err, &info),
                   CONSENSUS_VERIFY_BAD);
  ck_assert_int_eq(info.n_bad, 3);
  ck_assert_int_eq(info.n_good, 0);
  ck_assert_ptr_nonnull(strstr(err, "0 good signatures"));
  ck_assert_ptr_nonnull(strstr(err, "bad signature by"));
  free(err);
  ck_assert_int_eq(verify_edited("consensus-ns", "Bandwidth=102",
                                 "Bandwidth=103", &err, &info),
                   CONSENSUS_VERIFY_BAD);
  free(err);
  /* A changed flag name. */
  ck_assert_int_eq(verify_edited("consensus-microdesc", "s Exit Fast Guard",
                                 "s Exit Fast Gcard", &err, &info),
                   CONSENSUS_VERIFY_BAD);
  free(err);
  /* One corrupted signature: 2 of 3 is still a majority. */
  {
    size_t len;
    char *t = dirtest_load_fixture("consensus-microdesc", &len);
    char *p = strstr(t, "-----BEGIN SIGNATURE-----\n");
    ck_assert_ptr_nonnull(p);
    p += strlen("-----BEGIN SIGNATURE-----\n") + 10;
    *p = (*p == 'A') ? 'B' : 'A';
    consensus_t *c = NULL;
    ck_assert_int_eq(consensus_parse(t, len, &c, &err), 0);
    dir_authority_t auths[8];
    int na = load_auths(auths);
    int nc;
    dir_keycert_t **certs = load_certs(&nc);
    ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                      iso(FIXTURE_NOW), &info, &err),
                     CONSENSUS_VERIFY_OK);
    ck_assert_int_eq(info.n_good, 2);
    ck_assert_int_eq(info.n_bad, 1);
    free_certs(certs, nc);
    consensus_free(c);
    free(t);
  }
}
END_TEST

START_TEST(test_consensus_wrong_keys)
{
  size_t len;
  char *t = dirtest_load_fixture("consensus-microdesc", &len);
  consensus_t *c = NULL;
  char *err = NULL;
  ck_assert_int_eq(consensus_parse(t, len, &c, &err), 0);
  free(t);
  dir_authority_t auths[8];
  int na = load_auths(auths);
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  consensus_verify_info_t info;
  time_t now = iso(FIXTURE_NOW);

  /* Our configuration knows other v3idents for two authorities. */
  dir_authority_t wrong[8];
  memcpy(wrong, auths, sizeof(auths));
  wrong[0].v3ident[0] ^= 1;
  ck_assert_int_eq(consensus_verify(c, wrong, na, certs, nc, now, &info,
                                    &err), CONSENSUS_VERIFY_OK);
  ck_assert_int_eq(info.n_good, 2);
  wrong[1].v3ident[5] ^= 0x80;
  ck_assert_int_eq(consensus_verify(c, wrong, na, certs, nc, now, &info,
                                    &err), CONSENSUS_VERIFY_BAD);
  ck_assert_int_eq(info.n_good, 1);
  ck_assert_ptr_nonnull(strstr(err, "1 good signature from 3 authorities, "
                                    "need 2"));
  free(err);

  /* The public network's authorities: nothing matches. */
  int nd;
  const dir_authority_t *defs = dir_authority_defaults(&nd);
  ck_assert_int_eq(consensus_verify(c, defs, nd, certs, nc, now, &info,
                                    &err), CONSENSUS_VERIFY_BAD);
  ck_assert_int_eq(info.n_needed, 5);
  ck_assert_int_eq(info.n_good, 0);
  free(err);

  /* No authorities at all. */
  ck_assert_int_eq(consensus_verify(c, auths, 0, certs, nc, now, &info,
                                    &err), CONSENSUS_VERIFY_BAD);
  ck_assert_ptr_nonnull(strstr(err, "no directory authorities"));
  free(err);

  /* A certificate whose signing key belongs to another authority: the
   * signing-key digest does not match, so it counts as missing. */
  dir_keycert_t *one[1] = {certs[0]};
  ck_assert_int_eq(consensus_verify(c, auths, na, one, 1, now, &info, &err),
                   CONSENSUS_VERIFY_NEED_CERTS);
  ck_assert_int_eq(info.n_good, 1);
  ck_assert_int_eq(info.n_missing_cert, 2);
  ck_assert_ptr_nonnull(strstr(err, "no valid certificate for"));
  free(err);
  ck_assert_int_eq(consensus_verify(c, auths, na, NULL, 0, now, &info, &err),
                   CONSENSUS_VERIFY_NEED_CERTS);
  ck_assert_int_eq(info.n_missing_cert, 3);
  free(err);

  /* Expired certificates do not count. */
  ck_assert_int_eq(consensus_verify(c, auths, na, certs, nc,
                                    iso("2027-12-01 00:00:00"), &info, &err),
                   CONSENSUS_VERIFY_NEED_CERTS);
  ck_assert_int_eq(info.n_good, 0);
  free(err);
  free_certs(certs, nc);
  consensus_free(c);
}
END_TEST

START_TEST(test_consensus_truncated)
{
  size_t len;
  char *t = dirtest_load_fixture("consensus-microdesc", &len);
  dir_authority_t auths[8];
  int na = load_auths(auths);
  int nc;
  dir_keycert_t **certs = load_certs(&nc);
  time_t now = iso(FIXTURE_NOW);
  int n_parsed = 0;
  for (size_t cut = 0; cut < len; cut++) {
    char *copy = malloc(cut ? cut : 1);
    memcpy(copy, t, cut);
    consensus_t *c = NULL;
    char *err = NULL;
    int r = consensus_parse(copy, cut, &c, &err);
    if (r == 0) {
      /* Only a cut right after a complete signature parses; its
       * signatures still verify. */
      n_parsed++;
      ck_assert(copy[cut - 1] == '\n');
      ck_assert_int_lt(c->n_sigs, 3);
      consensus_verify_info_t info;
      int v = consensus_verify(c, auths, na, certs, nc, now, &info, &err);
      ck_assert_int_eq(info.n_bad, 0);
      ck_assert_int_eq(v, c->n_sigs >= 2 ? CONSENSUS_VERIFY_OK
                                         : CONSENSUS_VERIFY_BAD);
      free(err);
      consensus_free(c);
    } else {
      if (!err || strncmp(err, "consensus: ", 11) != 0)
        ck_abort_msg("cut %zu: no message", cut);
      free(err);
    }
    free(copy);
  }
  ck_assert_int_eq(n_parsed, 2); /* after the 1st and the 2nd signature */
  free_certs(certs, nc);
  free(t);
}
END_TEST

START_TEST(test_consensus_malformed)
{
  static const struct {
    const char *from, *to, *needle;
  } edits[] = {
    {"network-status-version 3 microdesc", "network-status-version 4 microdesc",
     "not 3"},
    {"network-status-version 3 microdesc", "network-status-version 3 microdes!",
     "unsupported flavor"},
    {"vote-status consensus", "vote-status vote00000", "not \"consensus\""},
    {"valid-after 2026-11-22 03:58:30", "valid-after 2026-11-22 03:58:60",
     "malformed time"},
    {"fresh-until 2026-11-22 03:58:40", "fresh-until 2026-11-22 03:58:55",
     "not in order"},
    {"consensus-method 35", "consensus-method xx", "consensus-method"},
    {"voting-delay 2 2", "voting-delay 2 x", "voting-delay"},
    {"known-flags", "known-flagz", "missing known-flags"},
    {"r relay4 4U1b3b", "r relay4 4U1b3!", "bad identity"},
    {"r relay4", "r relay_", "bad nickname"},
    {"r relay4 4U1b3b4F0T7Af0DEHu7/IPstmE0 2038-01-01 00:00:00 127.0.0.1 20012",
     "r relay4 4U1b3b4F0T7Af0DEHu7/IPstmE0 2038-01-01 00:00:00 127.0.0.1 70012",
     "bad port"},
    {"127.0.0.1 20012", "127.0.0.x 20012", "bad IPv4"},
    /* relay4 gets relay5's identity: order broken. */
    {"r relay4 4U1b3b4F0T7Af0DEHu7/IPstmE0", "r relay4 0ZXIxPeWg+YdCvxJ7Dcx3s5/M/k",
     "not sorted"},
    {"m 1oWlR7ZXk7EwPm4/iEsTSe3nQFWlZOnoHT6KElg/cBY",
     "m 1oWlR7ZXk7EwPm4/iEsTSe3nQFWlZOnoHT6KElg/cB!", "bad microdescriptor"},
    {"m 1oWlR7ZXk7EwPm4/iEsTSe3nQFWlZOnoHT6KElg/cBY",
     "x 1oWlR7ZXk7EwPm4/iEsTSe3nQFWlZOnoHT6KElg/cBY", "without an \"m\""},
    {"w Bandwidth=102", "w Bandwidth=1x2", "Bandwidth="},
    {"directory-signature sha256 1184",
     "directory-signature sha256 118X", "malformed directory-signature"},
    {"-----END SIGNATURE-----\ndirectory-signature",
     "-----END SIGNATURE-----\ndirectory-signaturf", "after the signatures"},
    {"bandwidth-weights Wbd=3333", "bandwidth-weights Wbd:3333",
     "KEY=VALUE"},
  };
  size_t len;
  char *orig = dirtest_load_fixture("consensus-microdesc", &len);
  for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
    char *t = malloc(len + 1);
    memcpy(t, orig, len + 1);
    char *p = strstr(t, edits[i].from);
    if (!p)
      ck_abort_msg("edit %zu: '%s' not found", i, edits[i].from);
    ck_assert_uint_eq(strlen(edits[i].from), strlen(edits[i].to));
    memcpy(p, edits[i].to, strlen(edits[i].to));
    consensus_t *c = NULL;
    char *err = NULL;
    int r = consensus_parse(t, len, &c, &err);
    if (r != -1 || !err || !strstr(err, edits[i].needle))
      ck_abort_msg("edit %zu: r=%d err='%s' (wanted '%s')", i, r,
                   err ? err : "(null)", edits[i].needle);
    free(err);
    free(t);
  }
  /* Garbage after the signatures. */
  char *t = malloc(len + 10);
  memcpy(t, orig, len);
  memcpy(t + len, "junk\n", 5);
  consensus_t *c = NULL;
  char *err = NULL;
  ck_assert_int_eq(consensus_parse(t, len + 5, &c, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "after the signatures"));
  free(err);
  /* Oversized. */
  ck_assert_int_eq(consensus_parse(t, CONSENSUS_MAX_SIZE + 1, &c, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "exceeds"));
  free(err);
  /* Not a consensus. */
  ck_assert_int_eq(consensus_parse("hello\n", 6, &c, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "does not start with"));
  free(err);
  ck_assert_int_eq(consensus_parse("", 0, &c, &err), -1);
  free(err);
  free(t);
  free(orig);
}
END_TEST

START_TEST(test_consensus_synthetic)
{
  /* Unsigned, so only parsed: params, an IPv6 "a" line, ns "p" lines. */
  const char *doc =
    "network-status-version 3\n"
    "vote-status consensus\n"
    "consensus-method 35\n"
    "valid-after 2026-01-01 00:00:00\n"
    "fresh-until 2026-01-01 01:00:00\n"
    "valid-until 2026-01-01 03:00:00\n"
    "voting-delay 300 300\n"
    "known-flags BadExit Exit Fast Guard Running Valid\n"
    "params bwweightscale=10000 cbtmin=-5 circwindow=1000\n"
    "dir-source a1 0000000000000000000000000000000000000001 h 10.0.0.1 80 443\n"
    "contact x\n"
    "vote-digest 0000000000000000000000000000000000000000\n"
    "dir-source a1-legacy 0000000000000000000000000000000000000002 h 10.0.0.1 80 443\n"
    "r one AAAAAAAAAAAAAAAAAAAAAAAAAAA AAAAAAAAAAAAAAAAAAAAAAAAAAA "
    "2038-01-01 00:00:00 10.1.0.1 9001 0\n"
    "a [2001:db8::1]:9001\n"
    "s BadExit Exit Running Valid Unknown\n"
    "w Bandwidth=1000 Future=3\n"
    "p accept 80,443\n"
    "x-unknown stuff\n"
    "r two AQAAAAAAAAAAAAAAAAAAAAAAAAA AAAAAAAAAAAAAAAAAAAAAAAAAAA "
    "2038-01-01 00:00:00 10.2.0.1 9001 9030\n"
    "s Fast Guard Running Valid\n"
    "directory-footer\n"
    "directory-signature 0000000000000000000000000000000000000001 "
    "0000000000000000000000000000000000000003\n"
    "-----BEGIN SIGNATURE-----\n"
    "AAAA\n"
    "-----END SIGNATURE-----\n"
    "directory-signature xyz 0000000000000000000000000000000000000001 "
    "0000000000000000000000000000000000000003\n"
    "-----BEGIN SIGNATURE-----\n"
    "AAAA\n"
    "-----END SIGNATURE-----\n";
  consensus_t *c = NULL;
  char *err = NULL;
  int r = consensus_parse(doc, strlen(doc), &c, &err);
  if (r)
    ck_abort_msg("%s", err);
  ck_assert_int_eq(c->flavor, CONSENSUS_FLAVOR_NS);
  ck_assert_int_eq(c->n_params, 3);
  ck_assert_int_eq(consensus_get_param(c, "cbtmin", 0, -10, 10), -5);
  ck_assert_int_eq(consensus_get_param(c, "circwindow", 7, 1, 999), 7);
  ck_assert_int_eq(consensus_get_param(c, "nothere", 7, 1, 999), 7);
  ck_assert_int_eq(c->has_bw_weights, 0);
  ck_assert_int_eq(consensus_get_bw_weight(c, "Wgg", 10000), 10000);
  ck_assert_int_eq(c->n_voters, 2);
  ck_assert_int_eq(c->voters[1].is_legacy, 1);
  ck_assert_str_eq(c->voters[1].nickname, "a1");
  ck_assert_int_eq(c->n_rs, 2);
  ck_assert_int_eq(c->rs[0].has_ipv6, 1);
  ck_assert_int_eq(c->rs[0].ipv6_or.port, 9001);
  ck_assert_uint_eq(c->rs[0].flags, RS_FLAG_BADEXIT | RS_FLAG_EXIT |
                                      RS_FLAG_RUNNING | RS_FLAG_VALID);
  ck_assert_int_eq(c->rs[0].bandwidth, 1000);
  ck_assert_int_eq(c->rs[0].bw_unmeasured, 0);
  ck_assert(policy_summary_allows_port(c->rs[0].policy, 443));
  ck_assert(!policy_summary_allows_port(c->rs[0].policy, 22));
  ck_assert_ptr_null(c->rs[1].policy);
  ck_assert_int_eq(c->rs[1].has_bandwidth, 0);
  ck_assert_int_eq(c->rs[1].dir_port, 9030);
  ck_assert_int_eq(c->n_sigs, 2);
  ck_assert_int_eq(c->sigs[0].alg, CONSENSUS_SIG_SHA1);
  ck_assert_int_eq(c->sigs[1].alg, CONSENSUS_SIG_UNKNOWN);
  consensus_free(c);
}
END_TEST

START_TEST(test_microdescs)
{
  size_t len;
  char *t = dirtest_load_fixture("microdescs", &len);
  microdesc_t **mds = NULL;
  int n = 0;
  char *err = NULL;
  ck_assert_int_eq(microdesc_parse_many(t, len, &mds, &n, &err), 0);
  ck_assert_int_eq(n, 7);
  consensus_t *c = load_consensus("consensus-microdesc");
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    int match = 0;
    for (int k = 0; k < c->n_rs; k++)
      match += !memcmp(c->rs[k].digest, mds[i]->digest, 32);
    ck_assert_int_eq(match, 1);
    ck_assert_int_eq(mds[i]->has_onion_key, 1);
    ck_assert_int_eq(mds[i]->has_ed25519_id, 1);
    ck_assert_ptr_null(mds[i]->policy);
    total += mds[i]->text_len;
  }
  ck_assert_uint_eq(total, len); /* the pieces cover the document */
  /* relay4 (from nodes.txt): ntor key and ed25519 id. */
  const consensus_rs_t *rs4 = &c->rs[4];
  microdesc_t *m4 = NULL;
  for (int i = 0; i < n; i++)
    if (!memcmp(mds[i]->digest, rs4->digest, 32))
      m4 = mds[i];
  ck_assert_ptr_nonnull(m4);
  char b64[64];
  base64_encode(b64, sizeof(b64), m4->ntor_key, 32, BASE64_NOPAD);
  ck_assert_str_eq(b64, "YBd0gtYGahiCo15+8O+hhvmnXkumfU/RH9s+ioFioCQ");
  base64_encode(b64, sizeof(b64), m4->ed25519_id, 32, BASE64_NOPAD);
  ck_assert_str_eq(b64, "/TNxM8K2EwK6CG+YAIPpNUZIqwFwOfs0Dmh9XviZNJI");
  ck_assert_int_eq(m4->n_family, 2);
  ck_assert_str_eq(m4->family[0], "$D195C8C4F79683E61D0AFC49EC3731DECE7F33F9");
  ck_assert_str_eq(m4->family[1], "$E14D5BDDBE05D13EC07F40C41EEEFF20FB2D984D");
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);

  /* A flipped byte changes the digest of that one only. */
  char *p = strstr(t, "ntor-onion-key YBd0");
  p[16] = 'c';
  mds = NULL;
  n = 0;
  ck_assert_int_eq(microdesc_parse_many(t, len, &mds, &n, &err), 0);
  ck_assert_int_eq(n, 7);
  int n_match = 0;
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < c->n_rs; k++)
      n_match += !memcmp(c->rs[k].digest, mds[i]->digest, 32);
    microdesc_free(mds[i]);
  }
  ck_assert_int_eq(n_match, 6);
  free(mds);

  /* Every truncation: no crash; complete ones before the cut survive. */
  for (size_t cut = 0; cut < len; cut += 7) {
    mds = NULL;
    n = 0;
    err = NULL;
    int r = microdesc_parse_many(t, cut, &mds, &n, &err);
    ck_assert(r >= 0 || err != NULL);
    ck_assert_int_le(n, 7);
    for (int i = 0; i < n; i++)
      microdesc_free(mds[i]);
    free(mds);
    free(err);
  }
  consensus_free(c);
  free(t);

  /* The real ".z" documents inflate to the plain ones. */
  static const char *pairs[][2] = {
    {"consensus-microdesc.z", "consensus-microdesc"},
    {"microdescs.z", "microdescs"},
  };
  for (int i = 0; i < 2; i++) {
    size_t zl, pl, ol;
    char *z = dirtest_load_fixture(pairs[i][0], &zl);
    char *plain = dirtest_load_fixture(pairs[i][1], &pl);
    uint8_t *o = NULL;
    ck_assert_int_eq(compress_detect((uint8_t *)z, zl), COMPRESS_ZLIB);
    ck_assert_int_eq(compress_uncompress(COMPRESS_ZLIB, (uint8_t *)z, zl,
                                         1 << 20, &o, &ol), 0);
    ck_assert_uint_eq(ol, pl);
    ck_assert(memcmp(o, plain, pl) == 0);
    free(o);
    free(z);
    free(plain);
  }
}
END_TEST

START_TEST(test_microdesc_synthetic)
{
  const char *doc =
    "ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
    "family $0123456789abcdef0123456789abcdef01234567=Named Bob "
    "$fedcba9876543210fedcba9876543210fedcba98~x $12 weird!\n"
    "family-ids ed25519:AAAA ed25519:BBBB\n"
    "p accept 80,443\n"
    "p6 accept 443\n"
    "id ed25519 AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
    "id rsa1024 AAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
    "id x25519 whatever\n"
    "a [2001:db8::2]:443\n"
    "pr Relay=1-4\n"
    "ntor-onion-key AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
    "onion-key\n"
    "-----BEGIN RSA PUBLIC KEY-----\n"
    "AAAA\n"
    "-----END RSA PUBLIC KEY-----\n"
    "ntor-onion-key AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
    "p reject 1-65535\n";
  microdesc_t **mds = NULL;
  int n = 0;
  char *err = NULL;
  ck_assert_int_eq(microdesc_parse_many(doc, strlen(doc), &mds, &n, &err), 0);
  ck_assert_int_eq(n, 3);
  microdesc_t *m = mds[0];
  ck_assert_int_eq(m->has_onion_key, 0);
  ck_assert_int_eq(m->n_family, 5);
  ck_assert_str_eq(m->family[0], "$0123456789ABCDEF0123456789ABCDEF01234567");
  ck_assert_str_eq(m->family[1], "bob");
  ck_assert_str_eq(m->family[2], "$FEDCBA9876543210FEDCBA9876543210FEDCBA98");
  ck_assert_str_eq(m->family[3], "$12");
  ck_assert_str_eq(m->family[4], "weird!");
  ck_assert_int_eq(m->n_family_ids, 2);
  ck_assert_str_eq(m->family_ids[1], "ed25519:BBBB");
  ck_assert(policy_summary_allows_port(m->policy, 80));
  ck_assert(!policy_summary_allows_port(m->policy6, 80));
  ck_assert(policy_summary_allows_port(m->policy6, 443));
  ck_assert_int_eq(m->has_ed25519_id, 1);
  ck_assert_int_eq(m->ed25519_id[0], 1);
  ck_assert_int_eq(m->has_rsa_id_digest, 1);
  ck_assert_int_eq(m->has_ipv6, 1);
  ck_assert_int_eq(mds[1]->ntor_key[0], 1);
  ck_assert_int_eq(mds[1]->has_onion_key, 0);
  ck_assert_int_eq(mds[2]->has_onion_key, 1);
  ck_assert_int_eq(mds[2]->ntor_key[0], 2);
  ck_assert(!policy_summary_allows_any(mds[2]->policy));
  for (int i = 0; i < n; i++)
    microdesc_free(mds[i]);
  free(mds);

  static const struct {
    const char *doc, *needle;
  } bad[] = {
    {"onion-key\n-----BEGIN RSA PUBLIC KEY-----\nAAAA\n"
     "-----END RSA PUBLIC KEY-----\n", "missing ntor-onion-key"},
    {"ntor-onion-key AAAA\n", "malformed ntor-onion-key"},
    {"ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\np allow 80\n",
     "bad p line"},
    {"ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
     "family a\nfamily b\n", "duplicate family"},
    {"ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
     "id ed25519 AAAA\n", "malformed id ed25519"},
    {"ntor-onion-key AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
     "onion-key\n-----BEGIN RSA PUBLIC KEY-----\nAAAA\n"
     "-----END RSA PUBLIC KEY-----\n", "not the first"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    microdesc_t *md = NULL;
    err = NULL;
    int r = microdesc_parse(bad[i].doc, strlen(bad[i].doc), &md, &err);
    if (r != -1 || !err || !strstr(err, bad[i].needle))
      ck_abort_msg("case %zu: r=%d err='%s'", i, r, err ? err : "(null)");
    free(err);
  }
  /* Not microdescriptors at all. */
  mds = NULL;
  n = 0;
  ck_assert_int_eq(microdesc_parse_many("router x\n", 9, &mds, &n, &err), -1);
  ck_assert_ptr_nonnull(strstr(err, "does not start"));
  free(err);
}
END_TEST

Suite *
suite_dir_docs(void)
{
  Suite *s = suite_create("dir_docs");
  TCase *tc = tcase_create("keycert");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_keycerts);
  tcase_add_test(tc, test_keycert_tampered);
  suite_add_tcase(s, tc);
  tc = tcase_create("consensus");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_consensus_microdesc);
  tcase_add_test(tc, test_consensus_ns);
  tcase_add_test(tc, test_consensus_tampered);
  tcase_add_test(tc, test_consensus_unknown_signers);
  tcase_add_test(tc, test_consensus_wrong_keys);
  tcase_add_test(tc, test_consensus_truncated);
  tcase_add_test(tc, test_consensus_malformed);
  tcase_add_test(tc, test_consensus_synthetic);
  suite_add_tcase(s, tc);
  tc = tcase_create("microdesc");
  tcase_add_test(tc, test_microdescs);
  tcase_add_test(tc, test_microdesc_synthetic);
  suite_add_tcase(s, tc);
  return s;
}
