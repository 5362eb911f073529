/* SPDX-License-Identifier: BSD-3-Clause */
/* check_ipsec_broker.c -- unit tests for the IPsec SA broker
 * (feature/ipsec: ike_key, ipsec_link, broker) and lib/crypt/ed25519_pem.
 *
 * Known answers come from tests/vectors/ipsec_broker_ref.py (written from
 * RFC 8410 and cert-spec.txt with python's `cryptography`; its output is
 * pasted below) and from RFC 8410's own example key.
 *
 * The broker is tested as two (or three) relays in one process: each has
 * its own broker and its own fake charon on a unix socket. The fake
 * charon speaks real VICI (feature/ipsec/vici_msg) and models what matters
 * of charon 5.9.8: load-key / load-conn / unload-conn / get-conns /
 * list-sas / initiate / terminate, ike-updown and child-updown events to
 * registered clients, and -- the facts the broker is built around -- an
 * initiation succeeds only if the responder's charon has the mirrored
 * connection loaded and both sides' connections name the other's real IKE
 * public key (a wrong key is an authentication failure); a new IKE_SA
 * replaces the responder's old one for the same peer (unique = replace);
 * a restarted charon has forgotten everything. Announcements between the
 * brokers travel through a small in-process "network" instead of
 * channels. Checked: the responder loads before the initiator initiates,
 * only the lower identity initiates, PerCircuitTCP verdicts follow the
 * SAs, charon restarts on either side and socket blips, refused
 * announcements, probing relays that never answer (tor), a bounded peer
 * table, initiation failures with backoff, and odd events.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/proto/torcert.h"
#include "feature/ipsec/broker.h"
#include "feature/ipsec/ike_key.h"
#include "feature/ipsec/ipsec_link.h"
#include "feature/ipsec/vici_msg.h"
#include "lib/buf/buf.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/ed25519_pem.h"
#include "lib/encoding/base16.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

Suite *suite_ipsec_broker(void);

static void
unhex(const char *h, uint8_t *out, size_t len)
{
  ck_assert_int_eq(strlen(h), 2 * len);
  ck_assert_int_eq(base16_decode(out, len, h, 2 * len), (long)len);
}

/* ---- output of tests/vectors/ipsec_broker_ref.py ---- */
static const char rfc8410_priv_pem[] =
  "-----BEGIN PRIVATE KEY-----\n"
  "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
  "-----END PRIVATE KEY-----\n";
static const char rfc8410_pub_pem[] =
  "-----BEGIN PUBLIC KEY-----\n"
  "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
  "-----END PUBLIC KEY-----\n";
static const char rfc8410_seed[] =
  "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842";
static const char rfc8410_pub[] =
  "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1";

static const char vec_identity[] =
  "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
static const char vec_signing[] =
  "29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7";
static const char vec_ike[] =
  "2543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d";
#define VEC_H4 480000u /* type-4 certificate expiry, hours */
#define VEC_HI 479900u /* IKE certificate expiry, hours */
/* type-4 certificate (140 bytes) */
static const char vec_scert[] =
  "0104000753000129acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c897"
  "94bc9322966dd7010020040003a107bff3ce10be1d70dd18e74bc09967e4d630"
  "9ba50d5f1ddc8664125531b8e038f983fa54fef78ab91fe91ad574fb94e69b25"
  "12b5f486d878c71835069e99fa607dfb6cb7fb7df066bdf32c6db4d384113079"
  "b3344421438c2658c65d3104";
/* IKE key certificate (140 bytes) */
static const char vec_icert[] =
  "01f00007529c012543b92ff1095511476adc8369db6ddc933665a11978dda140"
  "4ee1066ca9559d010020040029acbae141bccaf0b22e1a94d34d0bc7361e526d"
  "0bfe12c89794bc9322966dd78e2b7b238349a97eaffa629fd1b345091abadff2"
  "b79ced5425505693f5536ddcdab971103b196a31efa46afce194073743ac102e"
  "b8fca46e3176d58ab4761505";
/* announcement (361 bytes) */
static const char vec_announce[] =
  "010301020304040aca000123292543b92ff1095511476adc8369db6ddc933665"
  "a11978dda1404ee1066ca9559daaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
  "aaaaaaaaaaaaaaaaaaaaaaaaaa008c0104000753000129acbae141bccaf0b22e"
  "1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7010020040003a107bff3"
  "ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8e038f983fa"
  "54fef78ab91fe91ad574fb94e69b2512b5f486d878c71835069e99fa607dfb6c"
  "b7fb7df066bdf32c6db4d384113079b3344421438c2658c65d3104008c01f000"
  "07529c012543b92ff1095511476adc8369db6ddc933665a11978dda1404ee106"
  "6ca9559d010020040029acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12"
  "c89794bc9322966dd78e2b7b238349a97eaffa629fd1b345091abadff2b79ced"
  "5425505693f5536ddcdab971103b196a31efa46afce194073743ac102eb8fca4"
  "6e3176d58ab4761505";
/* ---- end of pasted output ---- */

static void
seq_seed(uint8_t seed[32], int start)
{
  for (int i = 0; i < 32; i++)
    seed[i] = (uint8_t)(start + i);
}

/* The vector keys: identity seed 00..1f, signing 20..3f, IKE 40..5f. */
static void
vec_keys(ed25519_keypair_t *id, ed25519_keypair_t *sg, ed25519_keypair_t *ik)
{
  uint8_t s[32];
  seq_seed(s, 0);
  ck_assert_int_eq(ed25519_keypair_from_seed(id, s), 0);
  seq_seed(s, 32);
  ck_assert_int_eq(ed25519_keypair_from_seed(sg, s), 0);
  seq_seed(s, 64);
  ck_assert_int_eq(ed25519_keypair_from_seed(ik, s), 0);
}

/* ==== ed25519_pem ==== */

START_TEST(test_pem_rfc8410)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ed25519_keypair_t kp;
  uint8_t seed[32], pub[32];
  unhex(rfc8410_seed, seed, 32);
  unhex(rfc8410_pub, pub, 32);
  ck_assert_int_eq(ed25519_keypair_from_seed(&kp, seed), 0);
  ck_assert_mem_eq(kp.pub, pub, 32);
  size_t len = 0;
  char *priv = ed25519_pem_encode_private(&kp, &len);
  ck_assert_str_eq(priv, rfc8410_priv_pem);
  ck_assert_int_eq(len, strlen(rfc8410_priv_pem));
  char *pubpem = ed25519_pem_encode_public(kp.pub);
  ck_assert_str_eq(pubpem, rfc8410_pub_pem);
  free(priv);
  free(pubpem);

  ed25519_keypair_t back;
  const char *err = NULL;
  ck_assert_int_eq(ed25519_pem_decode_private(rfc8410_priv_pem,
                                              strlen(rfc8410_priv_pem), &back,
                                              &err),
                   0);
  ck_assert_mem_eq(back.seed, seed, 32);
  ck_assert_mem_eq(back.pub, pub, 32);
  uint8_t p2[32];
  ck_assert_int_eq(ed25519_pem_decode_public(rfc8410_pub_pem,
                                             strlen(rfc8410_pub_pem), p2, &err),
                   0);
  ck_assert_mem_eq(p2, pub, 32);
  /* Surrounding whitespace and CRLF line ends are fine. */
  const char *crlf = "\r\n  -----BEGIN PUBLIC KEY-----\r\n"
                     "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\r\n"
                     "-----END PUBLIC KEY-----\r\n\r\n";
  ck_assert_int_eq(ed25519_pem_decode_public(crlf, strlen(crlf), p2, &err), 0);
  ck_assert_mem_eq(p2, pub, 32);
}
END_TEST

START_TEST(test_pem_round_trip)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  for (int i = 0; i < 20; i++) {
    ed25519_keypair_t kp, back;
    ed25519_keypair_generate(&kp);
    size_t len;
    char *priv = ed25519_pem_encode_private(&kp, &len);
    char *pub = ed25519_pem_encode_public(kp.pub);
    uint8_t p[32];
    ck_assert_int_eq(ed25519_pem_decode_private(priv, len, &back, NULL), 0);
    ck_assert_mem_eq(back.seed, kp.seed, 32);
    ck_assert_mem_eq(back.pub, kp.pub, 32);
    ck_assert_int_eq(ed25519_pem_decode_public(pub, strlen(pub), p, NULL), 0);
    ck_assert_mem_eq(p, kp.pub, 32);
    /* A private key is not a public key and vice versa. */
    ck_assert_int_eq(ed25519_pem_decode_public(priv, len, p, NULL), -1);
    ck_assert_int_eq(ed25519_pem_decode_private(pub, strlen(pub), &back, NULL),
                     -1);
    free(priv);
    free(pub);
  }
}
END_TEST

START_TEST(test_pem_malformed)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ed25519_keypair_t kp;
  uint8_t pub[32];
  const char *err = NULL;
  static const char *bad_priv[] = {
    "",
    "-----BEGIN PRIVATE KEY-----\n",
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n",
    /* truncated DER (47 bytes) */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVg=\n"
    "-----END PRIVATE KEY-----\n",
    /* X25519 (OID 1.3.101.110) instead of Ed25519 */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VuBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\n",
    /* not base64 */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdV!C\n"
    "-----END PRIVATE KEY-----\n",
    /* an encrypted key's headers */
    "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\n",
    /* garbage after the block */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\nextra\n",
    /* two blocks */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\n-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\n",
    /* a 49-byte DER with a trailing byte */
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhCAA==\n"
    "-----END PRIVATE KEY-----\n",
  };
  for (size_t i = 0; i < sizeof(bad_priv) / sizeof(bad_priv[0]); i++) {
    err = NULL;
    ck_assert_msg(ed25519_pem_decode_private(bad_priv[i], strlen(bad_priv[i]),
                                             &kp, &err) == -1,
                  "bad private key %zu accepted", i);
    ck_assert_ptr_nonnull(err);
  }
  /* Every truncation of a good key fails. */
  for (size_t n = 0; n < strlen(rfc8410_pub_pem) - 1; n++)
    ck_assert_int_eq(ed25519_pem_decode_public(rfc8410_pub_pem, n, pub, &err),
                     -1);
  const char *rsa_spki =
    "-----BEGIN PUBLIC KEY-----\n"
    "MCowBQYDK2VxAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
    "-----END PUBLIC KEY-----\n"; /* Ed448 OID arc */
  ck_assert_int_eq(ed25519_pem_decode_public(rsa_spki, strlen(rsa_spki), pub,
                                             &err),
                   -1);
}
END_TEST

/* ==== ike_key ==== */

static char *
tmpdir(void)
{
  char *d = pc_strdup("/tmp/check-ipsec.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

static void
rm_rf(const char *d)
{
  char *cmd = pc_asprintf("rm -rf '%s'", d);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
}

START_TEST(test_ike_key_file)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  char *d = tmpdir();
  char *err = NULL;
  ike_key_t *k = ike_key_load_or_create(d, &err);
  ck_assert_ptr_nonnull(k);
  char *path = pc_asprintf("%s/keys/%s", d, IKE_KEY_FILENAME);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  char *kd = pc_asprintf("%s/keys", d);
  ck_assert_int_eq(stat(kd, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0700);
  /* The file is the PKCS#8 PEM charon gets. */
  char *text = NULL;
  ck_assert_int_eq(fs_read_text(path, 4096, &text), 0);
  size_t plen;
  ck_assert_str_eq(text, ike_key_private_pem(k, &plen));
  ck_assert_int_eq(plen, strlen(text));
  ed25519_keypair_t kp;
  ck_assert_int_eq(ed25519_pem_decode_private(text, strlen(text), &kp, NULL),
                   0);
  ck_assert_mem_eq(kp.pub, ike_key_public(k), 32);
  uint8_t pub[32];
  const char *pp = ike_key_public_pem(k);
  ck_assert_int_eq(ed25519_pem_decode_public(pp, strlen(pp), pub, NULL), 0);
  ck_assert_mem_eq(pub, ike_key_public(k), 32);
  /* Loading again gives the same key. */
  ike_key_t *k2 = ike_key_load_or_create(d, &err);
  ck_assert_ptr_nonnull(k2);
  ck_assert_mem_eq(ike_key_public(k2), ike_key_public(k), 32);
  ike_key_free(k2);
  /* Too open: still used, mode fixed. */
  ck_assert_int_eq(chmod(path, 0644), 0);
  k2 = ike_key_load_or_create(d, &err);
  ck_assert_ptr_nonnull(k2);
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  ike_key_free(k2);
  /* A broken file is an error and is left alone. */
  ck_assert_int_eq(fs_write_file_atomic(path, "garbage\n", 8, 0600), 0);
  k2 = ike_key_load_or_create(d, &err);
  ck_assert_ptr_null(k2);
  ck_assert_ptr_nonnull(err);
  ck_assert_ptr_nonnull(strstr(err, "unusable"));
  free(err);
  free(text);
  text = NULL;
  ck_assert_int_eq(fs_read_text(path, 4096, &text), 0);
  ck_assert_str_eq(text, "garbage\n");
  free(text);
  ike_key_free(k);
  free(kd);
  free(path);
  rm_rf(d);
  free(d);
}
END_TEST

/* ==== certificates ==== */

START_TEST(test_cert_vectors)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ed25519_keypair_t id, sg, ik;
  vec_keys(&id, &sg, &ik);
  uint8_t exp[32];
  unhex(vec_identity, exp, 32);
  ck_assert_mem_eq(id.pub, exp, 32);
  unhex(vec_signing, exp, 32);
  ck_assert_mem_eq(sg.pub, exp, 32);
  unhex(vec_ike, exp, 32);
  ck_assert_mem_eq(ik.pub, exp, 32);

  uint8_t sv[140], iv[140];
  unhex(vec_scert, sv, sizeof(sv));
  unhex(vec_icert, iv, sizeof(iv));
  torcert_t *sc = torcert_create(&id, TORCERT_TYPE_ID_SIGNING,
                                 TORCERT_KEY_ED25519, sg.pub,
                                 (time_t)VEC_H4 * 3600, 1);
  torcert_t *ic = ike_cert_create(&sg, ik.pub, (time_t)VEC_HI * 3600);
  ck_assert_int_eq(sc->encoded_len, sizeof(sv));
  ck_assert_mem_eq(sc->encoded, sv, sizeof(sv));
  ck_assert_int_eq(ic->encoded_len, sizeof(iv));
  ck_assert_mem_eq(ic->encoded, iv, sizeof(iv));

  uint8_t got[32];
  time_t expires = 0;
  const char *why = NULL;
  time_t now = (time_t)(VEC_HI - 100) * 3600;
  ck_assert_int_eq(ike_cert_check_chain(sv, sizeof(sv), iv, sizeof(iv),
                                        id.pub, now, got, &expires, &why),
                   0);
  ck_assert_mem_eq(got, ik.pub, 32);
  ck_assert_int_eq(expires, (time_t)VEC_HI * 3600);
  torcert_free(sc);
  torcert_free(ic);
}
END_TEST

START_TEST(test_cert_refusals)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ed25519_keypair_t id, sg, ik, other;
  vec_keys(&id, &sg, &ik);
  ed25519_keypair_generate(&other);
  uint8_t sv[140], iv[140], t[140], got[32];
  unhex(vec_scert, sv, sizeof(sv));
  unhex(vec_icert, iv, sizeof(iv));
  time_t now = (time_t)(VEC_HI - 100) * 3600, e;
  const char *why;

#define REFUSED(scert, slen, icert, ilen, ident, when, text)                  \
  do {                                                                        \
    why = NULL;                                                               \
    ck_assert_int_eq(ike_cert_check_chain(scert, slen, icert, ilen, ident,    \
                                          when, got, &e, &why),               \
                     -1);                                                     \
    ck_assert_ptr_nonnull(why);                                               \
    ck_assert_msg(strstr(why, text), "'%s' lacks '%s'", why, text);           \
  } while (0)

  /* Wrong identity: the chain is for another relay. */
  REFUSED(sv, sizeof(sv), iv, sizeof(iv), other.pub, now, "not from this");
  /* Expired: the IKE certificate, then the type-4 certificate. */
  REFUSED(sv, sizeof(sv), iv, sizeof(iv), id.pub,
          (time_t)VEC_HI * 3600 + 1, "IKE key certificate expired");
  REFUSED(sv, sizeof(sv), iv, sizeof(iv), id.pub,
          (time_t)VEC_H4 * 3600 + 1, "signing-key certificate expired");
  /* Swapped: the IKE certificate is not a type-4 one. */
  REFUSED(iv, sizeof(iv), sv, sizeof(sv), id.pub, now, "type 4");
  /* Type-4 certificate twice: wrong type for the IKE key. */
  torcert_t *c4b = torcert_create(&sg, TORCERT_TYPE_ID_SIGNING,
                                  TORCERT_KEY_ED25519, ik.pub,
                                  (time_t)VEC_HI * 3600, 1);
  REFUSED(sv, sizeof(sv), c4b->encoded, c4b->encoded_len, id.pub, now,
          "wrong type");
  torcert_free(c4b);
  /* An IKE certificate signed by another key (not the signing key). */
  torcert_t *forged = ike_cert_create(&other, ik.pub, (time_t)VEC_HI * 3600);
  REFUSED(sv, sizeof(sv), forged->encoded, forged->encoded_len, id.pub, now,
          "not signed by the identity's signing key");
  torcert_free(forged);
  /* ... also without the signed-with-key extension. */
  forged = torcert_create(&other, IKE_CERT_TYPE, TORCERT_KEY_ED25519, ik.pub,
                          (time_t)VEC_HI * 3600, 0);
  REFUSED(sv, sizeof(sv), forged->encoded, forged->encoded_len, id.pub, now,
          "not signed");
  torcert_free(forged);
  /* A type-4 certificate made by another identity for our signing key. */
  torcert_t *c4o = torcert_create(&other, TORCERT_TYPE_ID_SIGNING,
                                  TORCERT_KEY_ED25519, sg.pub,
                                  (time_t)VEC_H4 * 3600, 1);
  REFUSED(c4o->encoded, c4o->encoded_len, iv, sizeof(iv), id.pub, now,
          "not from this identity");
  torcert_free(c4o);
  /* Flipped bits: certified key, signature, expiry. */
  int flips[] = {10, 139, 5};
  for (size_t i = 0; i < 3; i++) {
    memcpy(t, iv, sizeof(t));
    t[flips[i]] ^= 1;
    REFUSED(sv, sizeof(sv), t, sizeof(t), id.pub, now, "not signed");
    memcpy(t, sv, sizeof(t));
    t[flips[i]] ^= 1;
    REFUSED(t, sizeof(t), iv, sizeof(iv), id.pub, now, "not signed");
  }
  /* Truncated, padded, empty. */
  for (size_t n = 0; n < sizeof(iv); n += 7) {
    REFUSED(sv, sizeof(sv), iv, n, id.pub, now, "malformed");
    REFUSED(sv, n, iv, sizeof(iv), id.pub, now, "malformed");
  }
  uint8_t pad[141];
  memcpy(pad, iv, sizeof(iv));
  pad[140] = 0;
  REFUSED(sv, sizeof(sv), pad, sizeof(pad), id.pub, now, "malformed");
  REFUSED(sv, sizeof(sv), iv, IKE_CERT_MAX_LEN + 1, id.pub, now, "too long");
#undef REFUSED
}
END_TEST

/* ==== announcements ==== */

static void
vec_announce_struct(ipsec_announce_t *a, uint8_t *scert, uint8_t *icert)
{
  memset(a, 0, sizeof(*a));
  a->version = 1;
  a->flags = IPSEC_ANN_OFFER | IPSEC_ANN_READY;
  a->generation = 0x01020304;
  ck_assert_int_eq(pc_addr_parse(&a->orport, "10.202.0.1:9001"), 0);
  unhex(vec_ike, a->ike_key, 32);
  memset(a->ready_for, 0xaa, 32);
  unhex(vec_scert, scert, 140);
  unhex(vec_icert, icert, 140);
  a->signing_cert = scert;
  a->signing_cert_len = 140;
  a->ike_cert = icert;
  a->ike_cert_len = 140;
}

START_TEST(test_announce_vector)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ipsec_announce_t a, b;
  uint8_t sc[140], ic[140], want[361], out[IPSEC_ANNOUNCE_MAX_LEN];
  vec_announce_struct(&a, sc, ic);
  unhex(vec_announce, want, sizeof(want));
  size_t n = ipsec_announce_encode(&a, out, sizeof(out));
  ck_assert_int_eq(n, sizeof(want));
  ck_assert_mem_eq(out, want, n);
  /* Too small a buffer. */
  ck_assert_int_eq(ipsec_announce_encode(&a, out, n - 1), 0);

  const char *why = NULL;
  ck_assert_int_eq(ipsec_announce_parse(want, sizeof(want), &b, &why), 0);
  ck_assert_int_eq(b.version, 1);
  ck_assert_int_eq(b.flags, IPSEC_ANN_OFFER | IPSEC_ANN_READY);
  ck_assert_uint_eq(b.generation, 0x01020304);
  ck_assert(pc_addr_eq(&b.orport, &a.orport, 1));
  ck_assert_mem_eq(b.ike_key, a.ike_key, 32);
  ck_assert_mem_eq(b.ready_for, a.ready_for, 32);
  ck_assert_int_eq(b.signing_cert_len, 140);
  ck_assert_mem_eq(b.signing_cert, sc, 140);
  ck_assert_int_eq(b.ike_cert_len, 140);
  ck_assert_mem_eq(b.ike_cert, ic, 140);

  /* Verified against the identity, with the link's address (any port). */
  uint8_t idpub[32];
  unhex(vec_identity, idpub, 32);
  pc_addr_t link, other;
  ck_assert_int_eq(pc_addr_parse(&link, "10.202.0.1:43210"), 0);
  ck_assert_int_eq(pc_addr_parse(&other, "10.202.0.9:9001"), 0);
  time_t now = (time_t)(VEC_HI - 1) * 3600, exp = 0;
  ck_assert_int_eq(ipsec_announce_verify(&b, idpub, &link, now, &exp, &why),
                   0);
  ck_assert_int_eq(exp, (time_t)VEC_HI * 3600);
  ck_assert_int_eq(ipsec_announce_verify(&b, idpub, &other, now, &exp, &why),
                   -1);
  ck_assert_ptr_nonnull(strstr(why, "address"));
  /* A key that is not the certified one. */
  b.ike_key[0] ^= 1;
  ck_assert_int_eq(ipsec_announce_verify(&b, idpub, &link, now, &exp, &why),
                   -1);
  ck_assert_ptr_nonnull(strstr(why, "not the certified"));
  b.ike_key[0] ^= 1;
  /* Another relay's identity. */
  idpub[5] ^= 0x40;
  ck_assert_int_eq(ipsec_announce_verify(&b, idpub, &link, now, &exp, &why),
                   -1);
  idpub[5] ^= 0x40;
  /* Expired. */
  ck_assert_int_eq(ipsec_announce_verify(&b, idpub, &link,
                                         (time_t)VEC_HI * 3600 + 60, &exp,
                                         &why),
                   -1);

  /* IPv6 round trip, and trailing bytes are ignored. */
  ck_assert_int_eq(pc_addr_parse(&a.orport, "[2001:db8::7]:443"), 0);
  a.flags = IPSEC_ANN_OFFER | 0x80;
  n = ipsec_announce_encode(&a, out, sizeof(out));
  ck_assert_int_eq(n, sizeof(want) + 12);
  out[n] = 0;
  out[n + 1] = 0;
  ck_assert_int_eq(ipsec_announce_parse(out, n + 2, &b, &why), 0);
  ck_assert(pc_addr_eq(&b.orport, &a.orport, 1));
  ck_assert_int_eq(b.flags, IPSEC_ANN_OFFER | 0x80);
  ck_assert_mem_eq(b.ike_cert, ic, 140);
}
END_TEST

START_TEST(test_announce_malformed)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  uint8_t v[361], t[400];
  ipsec_announce_t a;
  const char *why;
  unhex(vec_announce, v, sizeof(v));
  /* Every truncation. */
  for (size_t n = 0; n < sizeof(v); n++) {
    why = NULL;
    ck_assert_msg(ipsec_announce_parse(v, n, &a, &why) == -1,
                  "truncated to %zu accepted", n);
    ck_assert_ptr_nonnull(why);
  }
  /* Wrong versions. */
  int versions[] = {0, 2, 255};
  for (size_t i = 0; i < 3; i++) {
    memcpy(t, v, sizeof(v));
    t[0] = (uint8_t)versions[i];
    ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
    ck_assert_str_eq(why, "unsupported announcement version");
  }
  /* Unknown address type. */
  memcpy(t, v, sizeof(v));
  t[6] = 5;
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  ck_assert_str_eq(why, "unknown address type");
  /* Address type 6 with IPv4 data: everything shifts, the certificate
   * lengths no longer fit. */
  memcpy(t, v, sizeof(v));
  t[6] = 6;
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  /* Port 0. */
  memcpy(t, v, sizeof(v));
  t[11] = t[12] = 0;
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  /* The first certificate's length: one more than there is, huge, and
   * more than the limit with enough bytes behind it. */
  size_t off1 = 1 + 1 + 4 + 1 + 4 + 2 + 64;
  memcpy(t, v, sizeof(v));
  set_u16(t + off1, 0xffff);
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  ck_assert_str_eq(why, "certificate length too large");
  memcpy(t, v, sizeof(v));
  set_u16(t + off1, (uint16_t)(sizeof(v) - off1 - 2 + 1));
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  /* The second certificate's length one too many. */
  size_t off2 = off1 + 2 + 140;
  memcpy(t, v, sizeof(v));
  set_u16(t + off2, 141);
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v), &a, &why), -1);
  ck_assert_str_eq(why, "certificate length beyond the announcement");
  /* A shorter first certificate: parses (lengths are consistent), but the
   * chain no longer verifies. */
  memcpy(t, v, sizeof(v));
  set_u16(t + off1, 139);
  memmove(t + off1 + 2 + 139, t + off1 + 2 + 140, sizeof(v) - off1 - 2 - 140);
  ck_assert_int_eq(ipsec_announce_parse(t, sizeof(v) - 1, &a, &why), 0);
  uint8_t idpub[32];
  unhex(vec_identity, idpub, 32);
  time_t e;
  ck_assert_int_eq(ipsec_announce_verify(&a, idpub, NULL,
                                         (time_t)(VEC_HI - 1) * 3600, &e,
                                         &why),
                   -1);
  /* Far too long. */
  uint8_t *big = pc_zalloc(IPSEC_ANNOUNCE_MAX_LEN + 1);
  memcpy(big, v, sizeof(v));
  ck_assert_int_eq(ipsec_announce_parse(big, IPSEC_ANNOUNCE_MAX_LEN + 1, &a,
                                        &why),
                   -1);
  free(big);
  /* Random bytes never crash the parser. */
  uint32_t x = 12345;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i % 400);
    for (size_t j = 0; j < n; j++) {
      x = x * 1103515245u + 12345u;
      t[j] = (uint8_t)(x >> 16);
    }
    if (n)
      t[0] = 1;
    (void)ipsec_announce_parse(t, n, &a, &why);
  }
}
END_TEST

/* ==== the fake charon ==== */

#define FC_MAX_CONNS 16
#define FC_MAX_SAS 32

typedef struct fc_conn_t {
  char name[80];
  char local_pub[32 + 1], remote_pub[32 + 1]; /* raw keys (32 bytes) */
  char remote_id[80];
  int n_children;
  char out_lts[64], out_rts[64], in_lts[64], in_rts[64];
  char updown[64];
} fc_conn_t;

typedef struct fc_sa_t {
  char conn[80];
  char child[8];
  uint32_t ike, uid;
  int initiator;        /* this charon initiated the IKE_SA */
} fc_sa_t;

typedef struct fc_t fc_t;
struct fc_t {
  evloop_t *loop;
  char path[108];
  int lfd;
  evloop_io_t *lio;
  int fd;
  evloop_io_t *io;
  uint8_t *in;
  size_t in_len;
  buf_t *out;
  char regs[8][32];
  int n_regs;
  int key_loaded;
  uint8_t key_pub[32];
  fc_conn_t conns[FC_MAX_CONNS];
  int n_conns;
  fc_sa_t sas[FC_MAX_SAS];
  int n_sas;
  uint32_t next_uid;
  fc_t *peer;           /* the other relay's charon */
  char my_conn_at_peer[80]; /* "pctor-<our relay's identity hex>" */
  int n_initiate, n_terminate, n_load_conn, n_load_key, n_list, n_unload;
  int n_accepted;
  int fail_initiates;
  int odd_events;       /* send strange events before every answer */
  char last_cmd[32];
};

static void fc_io_cb(int fd, int what, void *arg);

static void
fc_flush(fc_t *f)
{
  while (f->fd >= 0 && buf_datalen(f->out)) {
    size_t len;
    const uint8_t *p = buf_head(f->out, &len);
    ssize_t n = send(f->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0)
      break;
    buf_drain(f->out, (size_t)n);
  }
  if (f->io)
    evloop_io_set(f->io, EVLOOP_READ |
                             (buf_datalen(f->out) ? EVLOOP_WRITE : 0));
}

static void
fc_send(fc_t *f, vici_packet_type_t type, const char *name, vici_builder_t *b)
{
  const uint8_t *d = NULL;
  size_t len = 0;
  const char *err = NULL;
  if (b) {
    d = vici_builder_data(b, &len, &err);
    ck_assert_msg(d != NULL, "fake charon built a bad message: %s", err);
  }
  if (f->fd >= 0)
    ck_assert_int_eq(vici_packet_encode(f->out, type, name, d, len, &err), 0);
  vici_builder_free(b);
  fc_flush(f);
}

static int
fc_registered(const fc_t *f, const char *ev)
{
  for (int i = 0; i < f->n_regs; i++)
    if (!strcmp(f->regs[i], ev))
      return 1;
  return 0;
}

static void
fc_event(fc_t *f, const char *ev, vici_builder_t *b)
{
  if (f->fd >= 0 && fc_registered(f, ev))
    fc_send(f, VICI_EVENT, ev, b);
  else
    vici_builder_free(b);
}

static vici_builder_t *
fc_reply(int ok, const char *errmsg)
{
  vici_builder_t *b = vici_builder_new();
  vici_builder_add_str(b, "success", ok ? "yes" : "no");
  if (!ok)
    vici_builder_add_str(b, "errmsg", errmsg);
  return b;
}

static fc_conn_t *
fc_conn(fc_t *f, const char *name)
{
  for (int i = 0; i < f->n_conns; i++)
    if (!strcmp(f->conns[i].name, name))
      return &f->conns[i];
  return NULL;
}

static const char *
first_item(const vici_node_t *sec, const char *list)
{
  const vici_node_t *l = vici_node_get(sec, list);
  const vici_node_t *i = l ? vici_node_first(l) : NULL;
  return i ? vici_node_value(i, NULL) : NULL;
}

static void
pem_pub(const char *pem, char out[33])
{
  uint8_t pub[32];
  ck_assert_ptr_nonnull(pem);
  ck_assert_int_eq(ed25519_pem_decode_public(pem, strlen(pem), pub, NULL), 0);
  memcpy(out, pub, 32);
  out[32] = 0;
}

static void
fc_load_conn(fc_t *f, const vici_msg_t *m)
{
  const vici_node_t *c = vici_node_first(vici_msg_root(m));
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(vici_node_type(c), VICI_NODE_SECTION);
  fc_conn_t *fcn = fc_conn(f, vici_node_name(c));
  if (!fcn) {
    ck_assert_int_lt(f->n_conns, FC_MAX_CONNS);
    fcn = &f->conns[f->n_conns++];
  }
  memset(fcn, 0, sizeof(*fcn));
  snprintf(fcn->name, sizeof(fcn->name), "%s", vici_node_name(c));
  ck_assert_str_eq(vici_node_get_str(c, "version"), "2");
  ck_assert_str_eq(vici_node_get_str(c, "unique"), "replace");
  const vici_node_t *lo = vici_node_get(c, "local");
  const vici_node_t *re = vici_node_get(c, "remote");
  ck_assert_str_eq(vici_node_get_str(lo, "auth"), "pubkey");
  ck_assert_str_eq(vici_node_get_str(re, "auth"), "pubkey");
  pem_pub(first_item(lo, "pubkeys"), fcn->local_pub);
  pem_pub(first_item(re, "pubkeys"), fcn->remote_pub);
  snprintf(fcn->remote_id, sizeof(fcn->remote_id), "%s",
           vici_node_get_str(re, "id"));
  const vici_node_t *ch = vici_node_get(c, "children");
  fcn->n_children = (int)vici_node_count(ch);
  const vici_node_t *o = vici_node_get(ch, "out");
  const vici_node_t *i = vici_node_get(ch, "in");
  ck_assert_ptr_nonnull(o);
  ck_assert_ptr_nonnull(i);
  snprintf(fcn->out_lts, 64, "%s", first_item(o, "local_ts"));
  snprintf(fcn->out_rts, 64, "%s", first_item(o, "remote_ts"));
  snprintf(fcn->in_lts, 64, "%s", first_item(i, "local_ts"));
  snprintf(fcn->in_rts, 64, "%s", first_item(i, "remote_ts"));
  /* pctor never gives charon a command to run (issue 14). */
  ck_assert_ptr_null(vici_node_get(o, "updown"));
  ck_assert_ptr_null(vici_node_get(i, "updown"));
  snprintf(fcn->updown, 64, "%s", "");
  ck_assert_str_eq(vici_node_get_str(o, "start_action"), "none");
}

static uint32_t
fc_ike_of(fc_t *f, const char *conn)
{
  for (int i = 0; i < f->n_sas; i++)
    if (!strcmp(f->sas[i].conn, conn))
      return f->sas[i].ike;
  return 0;
}

static vici_builder_t *
fc_sa_msg(const fc_t *f, const fc_sa_t *s, int up)
{
  char key[32], uid[16], ike[16];
  vici_builder_t *b = vici_builder_new();
  if (up)
    vici_builder_add_str(b, "up", "yes");
  snprintf(ike, sizeof(ike), "%u", s->ike);
  snprintf(uid, sizeof(uid), "%u", s->uid);
  snprintf(key, sizeof(key), "%s-%u", s->child, s->uid);
  vici_builder_begin_section(b, s->conn);
  vici_builder_add_str(b, "uniqueid", ike);
  vici_builder_add_str(b, "state", up ? "ESTABLISHED" : "DELETING");
  if (s->initiator)
    vici_builder_add_str(b, "initiator", "yes");
  vici_builder_begin_section(b, "child-sas");
  vici_builder_begin_section(b, key);
  vici_builder_add_str(b, "name", s->child);
  vici_builder_add_str(b, "uniqueid", uid);
  vici_builder_add_str(b, "state", up ? "INSTALLED" : "DELETING");
  vici_builder_end_section(b);
  vici_builder_end_section(b);
  vici_builder_end_section(b);
  return b;
}

static void
fc_ike_down(fc_t *f, const char *conn, uint32_t ike)
{
  char v[16];
  vici_builder_t *b = vici_builder_new();
  snprintf(v, sizeof(v), "%u", ike);
  vici_builder_begin_section(b, conn);
  vici_builder_add_str(b, "uniqueid", v);
  vici_builder_add_str(b, "state", "DELETING");
  vici_builder_end_section(b);
  fc_event(f, "ike-updown", b);
}

/* Remove (with down events) every SA of conn. */
static int
fc_remove_conn_sas(fc_t *f, const char *conn)
{
  int n = 0;
  uint32_t ike = 0;
  for (int i = 0; i < f->n_sas;) {
    if (!strcmp(f->sas[i].conn, conn)) {
      ike = f->sas[i].ike;
      fc_event(f, "child-updown", fc_sa_msg(f, &f->sas[i], 0));
      f->sas[i] = f->sas[--f->n_sas];
      n++;
    } else {
      i++;
    }
  }
  if (ike)
    fc_ike_down(f, conn, ike);
  return n;
}

static void
fc_add_sa(fc_t *f, const char *conn, const char *child, uint32_t ike,
          int initiator)
{
  ck_assert_int_lt(f->n_sas, FC_MAX_SAS);
  fc_sa_t *s = &f->sas[f->n_sas++];
  snprintf(s->conn, sizeof(s->conn), "%s", conn);
  snprintf(s->child, sizeof(s->child), "%s", child);
  s->ike = ike;
  s->initiator = initiator;
  s->uid = ++f->next_uid;
  fc_event(f, "child-updown", fc_sa_msg(f, s, 1));
}

/* Send some well-formed but odd events: unknown connections, bad ids,
 * missing sections, a down for a child that does not exist. */
static void
fc_odd_events(fc_t *f)
{
  vici_builder_t *b = vici_builder_new();
  vici_builder_add_str(b, "up", "yes");
  vici_builder_begin_section(b, "pctor-zz");
  vici_builder_end_section(b);
  vici_builder_begin_section(b, "somebody-else");
  vici_builder_add_str(b, "uniqueid", "1");
  vici_builder_end_section(b);
  fc_event(f, "child-updown", b);
  for (int i = 0; i < f->n_conns; i++) {
    b = vici_builder_new();
    vici_builder_add_str(b, "up", "yes");
    vici_builder_begin_section(b, f->conns[i].name);
    vici_builder_add_str(b, "uniqueid", "-4");
    vici_builder_begin_section(b, "child-sas");
    vici_builder_begin_section(b, "out-1");
    vici_builder_add_str(b, "name", "out");
    vici_builder_add_str(b, "uniqueid", "99999999999");
    vici_builder_add_str(b, "state", "INSTALLED");
    vici_builder_end_section(b);
    vici_builder_end_section(b);
    vici_builder_end_section(b);
    fc_event(f, "child-updown", b);
    b = vici_builder_new();
    vici_builder_begin_section(b, f->conns[i].name);
    vici_builder_add_str(b, "uniqueid", "7777");
    vici_builder_begin_list(b, "child-sas");
    vici_builder_add_item_str(b, "x");
    vici_builder_end_list(b);
    vici_builder_end_section(b);
    fc_event(f, "child-updown", b);
    b = vici_builder_new();
    vici_builder_begin_section(b, f->conns[i].name);
    vici_builder_add_str(b, "uniqueid", "7777");
    vici_builder_begin_section(b, "old");
    vici_builder_end_section(b);
    vici_builder_end_section(b);
    fc_event(f, "ike-rekey", b);
    b = vici_builder_new();
    vici_builder_begin_section(b, f->conns[i].name);
    vici_builder_add_str(b, "uniqueid", "abc");
    vici_builder_end_section(b);
    fc_event(f, "ike-updown", b);
  }
}

static void
fc_initiate(fc_t *f, const vici_msg_t *m)
{
  const char *child = vici_msg_get_str(m, "child");
  const char *ike = vici_msg_get_str(m, "ike");
  fc_conn_t *c = ike ? fc_conn(f, ike) : NULL;
  fc_t *p = f->peer;
  fc_conn_t *pc = p && p->fd >= 0 ? fc_conn(p, f->my_conn_at_peer) : NULL;
  f->n_initiate++;
  if (!c || !child || (strcmp(child, "out") && strcmp(child, "in"))) {
    fc_send(f, VICI_CMD_RESPONSE, NULL, fc_reply(0, "no config"));
    return;
  }
  if (f->fail_initiates > 0) {
    f->fail_initiates--;
    fc_send(f, VICI_CMD_RESPONSE, NULL,
            fc_reply(0, "establishing CHILD_SA failed (test)"));
    return;
  }
  /* The responder needs the mirrored connection, and both sides must
   * expect the other's real key. */
  if (!pc || !f->key_loaded || !p->key_loaded ||
      memcmp(pc->remote_pub, f->key_pub, 32) ||
      memcmp(c->remote_pub, p->key_pub, 32)) {
    fc_send(f, VICI_CMD_RESPONSE, NULL,
            fc_reply(0, "establishing CHILD_SA failed: AUTH_FAILED"));
    return;
  }
  uint32_t ike_uid = fc_ike_of(f, ike);
  uint32_t pike = fc_ike_of(p, f->my_conn_at_peer);
  int ini = 1;
  for (int i = 0; i < f->n_sas; i++)
    if (f->sas[i].ike == ike_uid && ike_uid)
      ini = f->sas[i].initiator;
  if (!ike_uid) {
    /* A new IKE_SA replaces the responder's old one. */
    ike_uid = ++f->next_uid;
    fc_remove_conn_sas(p, f->my_conn_at_peer);
    pike = 0;
  }
  if (!pike)
    pike = ++p->next_uid;
  fc_add_sa(f, ike, child, ike_uid, ini);
  fc_add_sa(p, f->my_conn_at_peer, strcmp(child, "out") ? "out" : "in", pike,
            !ini);
  fc_flush(p);
  fc_send(f, VICI_CMD_RESPONSE, NULL, fc_reply(1, NULL));
}

static void
fc_list(fc_t *f, const vici_msg_t *m)
{
  const char *only = vici_msg_get_str(m, "ike");
  f->n_list++;
  ck_assert_ptr_null(vici_msg_get_str(m, "noblock"));
  for (int i = 0; i < f->n_sas; i++) {
    const fc_sa_t *s = &f->sas[i];
    if (only && strcmp(only, s->conn))
      continue;
    /* One event per IKE_SA: emit when this is its first child. */
    int first = 1;
    for (int j = 0; j < i; j++)
      if (f->sas[j].ike == s->ike && !strcmp(f->sas[j].conn, s->conn))
        first = 0;
    if (!first)
      continue;
    char v[16];
    vici_builder_t *b = vici_builder_new();
    snprintf(v, sizeof(v), "%u", s->ike);
    vici_builder_begin_section(b, s->conn);
    vici_builder_add_str(b, "uniqueid", v);
    vici_builder_add_str(b, "state", "ESTABLISHED");
    if (s->initiator)
      vici_builder_add_str(b, "initiator", "yes");
    vici_builder_begin_section(b, "child-sas");
    for (int j = i; j < f->n_sas; j++) {
      const fc_sa_t *t = &f->sas[j];
      if (t->ike != s->ike || strcmp(t->conn, s->conn))
        continue;
      char key[32], uid[16];
      snprintf(key, sizeof(key), "%s-%u", t->child, t->uid);
      snprintf(uid, sizeof(uid), "%u", t->uid);
      vici_builder_begin_section(b, key);
      vici_builder_add_str(b, "name", t->child);
      vici_builder_add_str(b, "uniqueid", uid);
      vici_builder_add_str(b, "state", "INSTALLED");
      vici_builder_end_section(b);
    }
    vici_builder_end_section(b);
    vici_builder_end_section(b);
    fc_event(f, "list-sa", b);
  }
  fc_send(f, VICI_CMD_RESPONSE, NULL, NULL);
}

static void
fc_command(fc_t *f, const char *cmd, const vici_msg_t *m)
{
  snprintf(f->last_cmd, sizeof(f->last_cmd), "%.31s", cmd);
  if (f->odd_events)
    fc_odd_events(f);
  if (!strcmp(cmd, "load-key")) {
    ed25519_keypair_t kp;
    size_t len = 0;
    const vici_node_t *d = vici_node_get(vici_msg_root(m), "data");
    const char *pem = vici_node_value(d, &len);
    ck_assert_str_eq(vici_msg_get_str(m, "type"), "ed25519");
    ck_assert_int_eq(ed25519_pem_decode_private(pem, len, &kp, NULL), 0);
    memcpy(f->key_pub, kp.pub, 32);
    f->key_loaded = 1;
    f->n_load_key++;
    vici_builder_t *b = fc_reply(1, NULL);
    vici_builder_add_str(b, "id", "0123456789abcdef0123456789abcdef01234567");
    fc_send(f, VICI_CMD_RESPONSE, NULL, b);
  } else if (!strcmp(cmd, "load-conn")) {
    f->n_load_conn++;
    fc_load_conn(f, m);
    fc_send(f, VICI_CMD_RESPONSE, NULL, fc_reply(1, NULL));
  } else if (!strcmp(cmd, "unload-conn")) {
    f->n_unload++;
    fc_conn_t *c = fc_conn(f, vici_msg_get_str(m, "name"));
    if (c)
      *c = f->conns[--f->n_conns];
    fc_send(f, VICI_CMD_RESPONSE, NULL, fc_reply(c != NULL, "not found"));
  } else if (!strcmp(cmd, "get-conns")) {
    vici_builder_t *b = vici_builder_new();
    vici_builder_begin_list(b, "conns");
    for (int i = 0; i < f->n_conns; i++)
      vici_builder_add_item_str(b, f->conns[i].name);
    vici_builder_end_list(b);
    fc_send(f, VICI_CMD_RESPONSE, NULL, b);
  } else if (!strcmp(cmd, "list-sas")) {
    fc_list(f, m);
  } else if (!strcmp(cmd, "initiate")) {
    fc_initiate(f, m);
  } else if (!strcmp(cmd, "terminate")) {
    f->n_terminate++;
    const char *ike = vici_msg_get_str(m, "ike");
    ck_assert_str_eq(vici_msg_get_str(m, "force"), "yes");
    int n = ike ? fc_remove_conn_sas(f, ike) : 0;
    vici_builder_t *b = fc_reply(1, NULL);
    vici_builder_addf(b, "matches", "%d", n ? 1 : 0);
    fc_send(f, VICI_CMD_RESPONSE, NULL, b);
  } else {
    fc_send(f, VICI_CMD_UNKNOWN, NULL, NULL);
  }
}

static void
fc_packet(fc_t *f, const vici_packet_t *p)
{
  vici_msg_t *m = NULL;
  const char *err = NULL;
  switch (p->type) {
  case VICI_CMD_REQUEST:
    ck_assert_int_eq(vici_msg_parse(p->body, p->body_len, &m, &err), 0);
    fc_command(f, p->name, m);
    vici_msg_free(m);
    break;
  case VICI_EVENT_REGISTER:
    if (!fc_registered(f, p->name)) {
      ck_assert_int_lt(f->n_regs, 8);
      snprintf(f->regs[f->n_regs++], 32, "%.31s", p->name);
    }
    fc_send(f, VICI_EVENT_CONFIRM, NULL, NULL);
    break;
  case VICI_EVENT_UNREGISTER:
    for (int i = 0; i < f->n_regs; i++)
      if (!strcmp(f->regs[i], p->name)) {
        memcpy(f->regs[i], f->regs[--f->n_regs], 32);
        break;
      }
    fc_send(f, VICI_EVENT_CONFIRM, NULL, NULL);
    break;
  default:
    ck_abort_msg("fake charon got packet type %d", p->type);
  }
}

static void
fc_drop_client(fc_t *f)
{
  if (f->fd < 0)
    return;
  evloop_io_free(f->io);
  close(f->fd);
  f->fd = -1;
  f->in_len = 0;
  f->n_regs = 0;
  buf_clear(f->out);
}

static void
fc_io_cb(int fd, int what, void *arg)
{
  fc_t *f = arg;
  if (what & EVLOOP_WRITE)
    fc_flush(f);
  if (!(what & EVLOOP_READ) || f->fd < 0)
    return;
  ssize_t n = read(fd, f->in + f->in_len, VICI_SEGMENT_MAX + 4 - f->in_len);
  if (n <= 0) {
    fc_drop_client(f);
    return;
  }
  f->in_len += (size_t)n;
  while (f->fd >= 0 && f->in_len >= 4) {
    size_t len;
    const char *err = NULL;
    ck_assert_int_eq(vici_segment_length(f->in, &len, &err), 0);
    if (f->in_len < 4 + len)
      break;
    vici_packet_t p;
    ck_assert_int_eq(vici_packet_parse(f->in + 4, len, &p, &err), 0);
    fc_packet(f, &p);
    if (f->fd < 0)
      return;
    memmove(f->in, f->in + 4 + len, f->in_len - 4 - len);
    f->in_len -= 4 + len;
  }
}

static void
fc_accept_cb(int fd, int what, void *arg)
{
  fc_t *f = arg;
  int c = accept(fd, NULL, NULL);
  if (c < 0)
    return;
  if (f->fd >= 0) { /* one client at a time */
    close(c);
    return;
  }
  f->fd = c;
  f->n_accepted++;
  f->io = evloop_io_new(f->loop, c, fc_io_cb, f);
  evloop_io_set(f->io, EVLOOP_READ);
}

static void
fc_listen(fc_t *f)
{
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
  unlink(f->path);
  f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ck_assert_int_ge(f->lfd, 0);
  ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(listen(f->lfd, 4), 0);
  f->lio = evloop_io_new(f->loop, f->lfd, fc_accept_cb, f);
  evloop_io_set(f->lio, EVLOOP_READ);
}

static void
fc_unlisten(fc_t *f)
{
  if (f->lfd < 0)
    return;
  evloop_io_free(f->lio);
  close(f->lfd);
  f->lfd = -1;
  unlink(f->path);
}

static fc_t *
fc_new(evloop_t *loop, const char *dir, const char *name)
{
  fc_t *f = pc_zalloc(sizeof(*f));
  f->loop = loop;
  f->fd = -1;
  f->lfd = -1;
  f->in = pc_malloc(VICI_SEGMENT_MAX + 4);
  f->out = buf_new();
  f->next_uid = 100;
  snprintf(f->path, sizeof(f->path), "%s/%s.vici", dir, name);
  fc_listen(f);
  return f;
}

/* charon restarts: the socket closes and every VICI-loaded thing is gone
 * (the peer's charon keeps its view of the SAs). */
static void
fc_restart(fc_t *f)
{
  fc_drop_client(f);
  f->key_loaded = 0;
  f->n_conns = 0;
  f->n_sas = 0;
}

static void
fc_free(fc_t *f)
{
  fc_drop_client(f);
  fc_unlisten(f);
  buf_free(f->out);
  free(f->in);
  free(f);
}

/* ==== relays: a broker, its keys, its fake charon ==== */

typedef struct relay_t {
  relay_keys_t keys;
  torcert_t *scert;
  ipsec_broker_t *b;
  fc_t *fc;
  uint8_t rsa[20];
  pc_addr_t orport;
  char hex[65];
  int has_broker;   /* a tor relay has none: it ignores announcements */
  int n_rx;         /* announcements delivered to it */
  uint8_t last_flags;
  /* The test "consensus": listed (at listed_at) or not. */
  int listed;
  pc_addr_t listed_at;
} relay_t;

#define MAX_RELAYS 4
static relay_t R[MAX_RELAYS];
static int n_relays;
static evloop_t *L;
static int linked[MAX_RELAYS][MAX_RELAYS]; /* a channel exists */

/* In-flight announcements, delivered from the loop. */
typedef struct msg_t {
  int from, to;
  uint8_t data[IPSEC_ANNOUNCE_MAX_LEN];
  size_t len;
} msg_t;
static msg_t Q[64];
static int nq;
static evloop_timer_t *qtimer;

static int
relay_index(const uint8_t ed[32])
{
  for (int i = 0; i < n_relays; i++)
    if (!memcmp(R[i].keys.ed_identity.pub, ed, 32))
      return i;
  return -1;
}

static ipsec_link_peer_t
peer_of(int i, int outgoing)
{
  ipsec_link_peer_t p;
  memset(&p, 0, sizeof(p));
  memcpy(p.ed_id, R[i].keys.ed_identity.pub, 32);
  memcpy(p.rsa_id, R[i].rsa, 20);
  p.have_rsa = 1;
  p.addr = R[i].orport;
  p.outgoing = outgoing;
  return p;
}

static void
deliver_cb(void *arg)
{
  while (nq > 0) {
    msg_t m = Q[0];
    memmove(Q, Q + 1, sizeof(Q[0]) * (size_t)(--nq));
    relay_t *to = &R[m.to];
    to->n_rx++;
    if (m.len > 1)
      to->last_flags = m.data[1];
    if (!to->has_broker)
      continue; /* tor: "Variable-length cell of unknown type" */
    ipsec_link_peer_t p = peer_of(m.from, 0);
    ipsec_broker_announce_for_testing(to->b, &p, m.data, m.len);
  }
}

static int
net_send(void *arg, const uint8_t ed[32], const uint8_t *payload, size_t len)
{
  int from = (int)((relay_t *)arg - R);
  int to = relay_index(ed);
  ck_assert_int_ge(to, 0);
  if (!linked[from][to] && !linked[to][from])
    return -1;
  ck_assert_int_lt(nq, 64);
  ck_assert_int_le(len, IPSEC_ANNOUNCE_MAX_LEN);
  Q[nq].from = from;
  Q[nq].to = to;
  memcpy(Q[nq].data, payload, len);
  Q[nq].len = len;
  nq++;
  evloop_timer_schedule(qtimer, 0);
  return 0;
}

/* The brokers' directory lookup: the test consensus lists relay i at
 * R[i].listed_at while R[i].listed. Counts lookups. */
static int n_dir_lookups;
static int
test_dir(void *arg, const uint8_t ed[32], const uint8_t *rsa,
         pc_addr_t *orport)
{
  (void)arg;
  n_dir_lookups++;
  int i = relay_index(ed);
  if (i < 0 || !R[i].listed || (rsa && memcmp(rsa, R[i].rsa, 20)))
    return 0;
  *orport = R[i].listed_at;
  return 1;
}

static ipsec_broker_config_t
relay_cfg(relay_t *r, ipsec_mode_t mode)
{
  ipsec_broker_config_t cfg;
  ipsec_broker_config_init(&cfg);
  cfg.mode = mode;
  cfg.vici_socket = r->fc->path;
  cfg.orport = r->orport;
  /* The fake charons run as this process's user. */
  cfg.charon_uid = (long)getuid();
  return cfg;
}

/* Relay i: identity seed from i, its own fake charon, a broker in mode. */
static relay_t *
relay_add(const char *dir, ipsec_mode_t mode, int with_broker)
{
  int i = n_relays++;
  relay_t *r = &R[i];
  uint8_t s[32];
  memset(r, 0, sizeof(*r));
  memset(s, 0x11 * (i + 1), 32);
  ck_assert_int_eq(ed25519_keypair_from_seed(&r->keys.ed_identity, s), 0);
  memset(s, 0x51 + i, 32);
  ck_assert_int_eq(ed25519_keypair_from_seed(&r->keys.ed_signing, s), 0);
  r->keys.ed_signing_expires = time(NULL) + 30 * 86400;
  r->scert = torcert_create(&r->keys.ed_identity, TORCERT_TYPE_ID_SIGNING,
                            TORCERT_KEY_ED25519, r->keys.ed_signing.pub,
                            r->keys.ed_signing_expires, 1);
  r->keys.ed_signing_cert = r->scert->encoded;
  r->keys.ed_signing_cert_len = r->scert->encoded_len;
  memset(r->rsa, 0xa0 + i, 20);
  char a[32];
  snprintf(a, sizeof(a), "10.202.0.%d:9001", i + 1);
  ck_assert_int_eq(pc_addr_parse(&r->orport, a), 0);
  r->listed = 1;
  r->listed_at = r->orport;
  base16_encode(r->hex, sizeof(r->hex), r->keys.ed_identity.pub, 32,
                BASE16_LOWER);
  char name[8];
  snprintf(name, sizeof(name), "c%d", i);
  r->fc = fc_new(L, dir, name);
  snprintf(r->fc->my_conn_at_peer, sizeof(r->fc->my_conn_at_peer),
           "pctor-%s", r->hex);
  r->has_broker = with_broker;
  if (with_broker) {
    memset(s, 0x91 + i, 32);
    r->b = ipsec_broker_new_for_testing(L, &r->keys, ike_key_new_from_seed(s));
    ipsec_broker_set_sender_for_testing(r->b, net_send, r);
    ipsec_broker_set_directory(r->b, test_dir, NULL);
    ipsec_broker_set_timing_for_testing(r->b, 10, 300, 30, 30, 150);
    ipsec_broker_config_t cfg = relay_cfg(r, mode);
    ck_assert_int_eq(ipsec_broker_configure(r->b, &cfg), 0);
  }
  return r;
}

static char *testdir;

static void
world_setup(void)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  L = evloop_new();
  qtimer = evloop_timer_new(L, deliver_cb, NULL);
  n_relays = 0;
  nq = 0;
  memset(linked, 0, sizeof(linked));
  testdir = tmpdir();
}

static void
world_teardown(void)
{
  for (int i = 0; i < n_relays; i++) {
    ipsec_broker_free(R[i].b);
    fc_free(R[i].fc);
    torcert_free(R[i].scert);
  }
  evloop_timer_free(qtimer);
  evloop_free(L);
  rm_rf(testdir);
  free(testdir);
}

typedef int (*pred_fn)(void);
static pred_fn run_pred;
static uint64_t run_deadline;

static void
run_check(void *arg)
{
  if ((run_pred && run_pred()) || evloop_now_us(L) > run_deadline)
    evloop_exit(L);
}

/* Run the loop until pred() holds or max_ms passed; returns pred(). */
static int
run_until(pred_fn pred, int max_ms)
{
  evloop_timer_t *t = evloop_timer_new(L, run_check, NULL);
  run_pred = pred;
  evloop_update_time(L);
  run_deadline = evloop_now_us(L) + (uint64_t)max_ms * 1000;
  evloop_timer_schedule_periodic(t, 1000);
  evloop_run(L);
  evloop_timer_free(t);
  return pred ? pred() : 1;
}

static pctcp_peer_verdict_t
verdict(int from, int to)
{
  return ipsec_broker_verdict(R[from].b, &R[to].orport, R[to].rsa,
                              R[to].keys.ed_identity.pub);
}

static ipsec_broker_stats_t
stats(int i)
{
  ipsec_broker_stats_t st;
  ipsec_broker_get_stats(R[i].b, &st);
  return st;
}

static int
both_connected(void)
{
  return stats(0).charon_connects >= 1 && stats(1).charon_connects >= 1 &&
         R[0].fc->key_loaded && R[1].fc->key_loaded;
}

static int
sa_up_01(void)
{
  return stats(0).n_sa_up == 1 && stats(1).n_sa_up == 1 &&
         R[0].fc->n_sas == 2 && R[1].fc->n_sas == 2;
}

/* Relay 0 opens a channel to relay 1. */
static void
open_channel(int from, int to)
{
  linked[from][to] = 1;
  ipsec_link_peer_t p = peer_of(to, 1);
  ipsec_broker_open_for_testing(R[from].b, &p);
}

/* Index of the relay that initiates between 0 and 1. */
static int
initiator01(void)
{
  return memcmp(R[0].keys.ed_identity.pub, R[1].keys.ed_identity.pub, 32) < 0
             ? 0
             : 1;
}

/* Two relays with IPsec auto whose SA comes up. */
static void
two_relays_up(void)
{
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  R[0].fc->peer = R[1].fc;
  R[1].fc->peer = R[0].fc;
  ck_assert(run_until(both_connected, 3000));
  /* Unknown peer: shared, and we start tracking it. */
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  open_channel(0, 1);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA did not come up");
}

/* Predicates on relay P_i (run_until takes no argument). */
static int P_i;
static uint64_t P_n;
static int
p_losses(void)
{
  return stats(P_i).charon_losses == P_n;
}
static int
p_back(void)
{
  return stats(P_i).charon_connects == P_n && stats(P_i).n_sa_up == 1;
}
static int
p_no_sa(void)
{
  return stats(P_i).n_sa_up == 0;
}
static int
p_no_conns(void)
{
  return R[P_i].fc->n_conns == 0;
}
static int
p_probed(void)
{
  return verdict(0, 2) == PCTCP_PEER_PER_CIRCUIT;
}
static int
wait_losses(int i, uint64_t n)
{
  P_i = i;
  P_n = n;
  return run_until(p_losses, 2000);
}

/* ==== broker tests ==== */

START_TEST(test_broker_establish)
{
  world_setup();
  two_relays_up();
  int ini = initiator01(), resp = 1 - ini;
  /* Only the lower identity initiated, once per child. */
  ck_assert_int_eq(R[ini].fc->n_initiate, 2);
  ck_assert_int_eq(R[resp].fc->n_initiate, 0);
  ck_assert_int_eq(stats(ini).initiation_failures, 0);
  /* The first question, about an unknown peer, was answered "shared",
   * not counted as waiting for an SA (the peer's offer was not known). */
  ipsec_broker_stats_t s0 = stats(0);
  ck_assert_uint_eq(s0.verdict_shared, 1);
  ck_assert_uint_eq(s0.verdict_shared_waiting, 0);
  ck_assert_uint_eq(s0.verdict_ipsec + s0.verdict_plain, 0);
  /* Per-circuit both ways now, inside the SA. */
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  ck_assert_int_eq(verdict(1, 0), PCTCP_PEER_PER_CIRCUIT);
  ck_assert_uint_eq(stats(0).verdict_ipsec, 1);
  ck_assert_uint_eq(stats(0).verdict_plain, 0);
  ck_assert_uint_eq(stats(1).verdict_ipsec, 1);
  /* ... but not to another address or port of that relay: shared, and
   * counted as an extension to a peer offering IPsec without a usable
   * SA. */
  pc_addr_t other;
  ck_assert_int_eq(pc_addr_parse(&other, "10.202.0.2:9002"), 0);
  ck_assert_int_eq(ipsec_broker_verdict(R[0].b, &other, R[1].rsa,
                                        R[1].keys.ed_identity.pub),
                   PCTCP_PEER_SHARED);
  ck_assert_uint_eq(stats(0).verdict_shared, 2);
  ck_assert_uint_eq(stats(0).verdict_shared_waiting, 1);
  /* Found by RSA identity alone too (EXTEND2 without an Ed25519 ID). */
  ck_assert_int_eq(ipsec_broker_verdict(R[0].b, &R[1].orport, R[1].rsa, NULL),
                   PCTCP_PEER_PER_CIRCUIT);
  /* What relay 0 loaded into its charon for relay 1. */
  char name[80];
  snprintf(name, sizeof(name), "pctor-%s", R[1].hex);
  fc_conn_t *c = fc_conn(R[0].fc, name);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(R[0].fc->n_conns, 1);
  char id[80];
  snprintf(id, sizeof(id), "@#%s", R[1].hex);
  ck_assert_str_eq(c->remote_id, id);
  ck_assert_mem_eq(c->remote_pub, R[1].fc->key_pub, 32);
  ck_assert_mem_eq(c->local_pub, R[0].fc->key_pub, 32);
  ck_assert_int_eq(c->n_children, 2);
  ck_assert_str_eq(c->out_lts, "10.202.0.1/32[tcp]");
  ck_assert_str_eq(c->out_rts, "10.202.0.2/32[tcp/9001]");
  ck_assert_str_eq(c->in_lts, "10.202.0.1/32[tcp/9001]");
  ck_assert_str_eq(c->in_rts, "10.202.0.2/32[tcp]");
  ck_assert_str_eq(c->updown, ""); /* no updown command, ever */
  /* The mirror image on relay 1. */
  snprintf(name, sizeof(name), "pctor-%s", R[0].hex);
  c = fc_conn(R[1].fc, name);
  ck_assert_ptr_nonnull(c);
  ck_assert_str_eq(c->out_rts, "10.202.0.1/32[tcp/9001]");
  ck_assert_str_eq(c->in_lts, "10.202.0.2/32[tcp/9001]");
  ipsec_broker_stats_t st = stats(0);
  ck_assert_int_eq(st.n_peers, 1);
  ck_assert_int_eq(st.n_offering, 1);
  ck_assert_int_ge(st.announce_sent, 2);
  ck_assert_int_ge(st.announce_received, 2);
  ck_assert_int_eq(st.announce_refused, 0);
  ck_assert_int_eq(st.sa_setups, 1);
  ck_assert_int_gt(st.sa_setup_us_last, 0);
  /* Nothing more happens while all is well. */
  int ni = R[ini].fc->n_initiate, nl = R[ini].fc->n_load_conn;
  run_until(NULL, 200);
  ck_assert_int_eq(R[ini].fc->n_initiate, ni);
  ck_assert_int_eq(R[ini].fc->n_load_conn, nl);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  world_teardown();
}
END_TEST

/* The responder's charon restarts: the responder reloads and, since the
 * initiator still believes in the old SA, initiates itself after its grace
 * period; the new IKE_SA replaces the initiator's stale one. Nothing is
 * terminated. */
START_TEST(test_broker_responder_charon_restart)
{
  world_setup();
  two_relays_up();
  int ini = initiator01(), resp = 1 - ini;
  int ni = R[ini].fc->n_initiate;
  fc_restart(R[resp].fc);
  /* At once: the responder shares (its charon's SAs are gone). */
  ck_assert(wait_losses(resp, 1));
  ck_assert_int_eq(ipsec_broker_verdict(R[resp].b, &R[ini].orport,
                                        R[ini].rsa,
                                        R[ini].keys.ed_identity.pub),
                   PCTCP_PEER_SHARED);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA not re-established");
  ck_assert_int_ge(stats(resp).charon_connects, 2);
  ck_assert_int_eq(R[ini].fc->n_terminate, 0);
  ck_assert_int_eq(R[ini].fc->n_initiate, ni);
  ck_assert_int_eq(R[resp].fc->n_initiate, 2);
  ck_assert_int_eq(R[resp].fc->n_load_key, 2);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  ck_assert_int_eq(verdict(1, 0), PCTCP_PEER_PER_CIRCUIT);
  world_teardown();
}
END_TEST

/* The initiator's charon restarts; then, separately, its VICI socket
 * closes without a restart (nothing is re-initiated then). */
START_TEST(test_broker_initiator_charon_restart)
{
  world_setup();
  two_relays_up();
  int ini = initiator01();
  fc_restart(R[ini].fc);
  ck_assert(wait_losses(ini, 1));
  ck_assert_int_eq(stats(ini).n_sa_up, 0);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA not re-established");
  ck_assert_int_eq(R[ini].fc->n_initiate, 4);
  ck_assert_int_eq(R[ini].fc->n_load_key, 2);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);

  /* A blip: the connection drops, charon keeps its state. */
  fc_drop_client(R[ini].fc);
  ck_assert(wait_losses(ini, 2));
  P_i = ini;
  P_n = 3;
  ck_assert_msg(run_until(p_back, 3000), "SA state not re-read");
  run_until(NULL, 200);
  ck_assert_int_eq(R[ini].fc->n_initiate, 4); /* nothing re-initiated */
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  ck_assert_int_eq(verdict(1, 0), PCTCP_PEER_PER_CIRCUIT);
  world_teardown();
}
END_TEST

/* charon is away for a while: everything shares; when it is back (the
 * socket reappears), SAs come back without help. */
START_TEST(test_broker_charon_away)
{
  world_setup();
  two_relays_up();
  int ini = initiator01();
  fc_restart(R[ini].fc);
  fc_unlisten(R[ini].fc);
  ck_assert(wait_losses(ini, 1));
  run_until(NULL, 300);
  /* Both share: the relay without charon has no SA; its peer still has
   * one in its charon, but was told its peer is not READY any more. */
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  ck_assert_int_eq(verdict(1, 0), PCTCP_PEER_SHARED);
  ck_assert_int_eq(stats(1 - ini).n_sa_up, 1);
  fc_listen(R[ini].fc);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA not re-established");
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  world_teardown();
}
END_TEST

/* A relay whose announcement carries an IKE key that its identity did not
 * certify is refused; nothing is loaded for it. */

START_TEST(test_broker_refuses_unbound_key)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  ck_assert(run_until(both_connected, 3000));
  /* Relay 2 presents relay 1's announcement (relay 1's IKE key and
   * certificates) as its own. */
  uint8_t a1[IPSEC_ANNOUNCE_MAX_LEN];
  size_t n = ipsec_broker_build_announce_for_testing(
      R[1].b, R[0].keys.ed_identity.pub, a1, sizeof(a1));
  ck_assert_int_gt(n, 0);
  ipsec_link_peer_t p2 = peer_of(2, 0);
  ipsec_broker_announce_for_testing(R[0].b, &p2, a1, n);
  ck_assert_int_eq(stats(0).announce_refused, 1);
  /* Its own certificates with another key in IKE_KEY. */
  uint8_t a2[IPSEC_ANNOUNCE_MAX_LEN];
  n = ipsec_broker_build_announce_for_testing(R[2].b,
                                              R[0].keys.ed_identity.pub, a2,
                                              sizeof(a2));
  ipsec_announce_t an;
  const char *why;
  ck_assert_int_eq(ipsec_announce_parse(a2, n, &an, &why), 0);
  a2[1 + 1 + 4 + 1 + 4 + 2] ^= 0x01; /* first byte of IKE_KEY */
  ipsec_broker_announce_for_testing(R[0].b, &p2, a2, n);
  ck_assert_int_eq(stats(0).announce_refused, 2);
  a2[1 + 1 + 4 + 1 + 4 + 2] ^= 0x01;
  /* The right announcement from the wrong address. */
  p2.addr = R[1].orport;
  ipsec_broker_announce_for_testing(R[0].b, &p2, a2, n);
  ck_assert_int_eq(stats(0).announce_refused, 3);
  /* Garbage and truncations. */
  for (size_t k = 0; k < n; k += 3)
    ipsec_broker_announce_for_testing(R[0].b, &p2, a2, k);
  ck_assert_int_eq(stats(0).announce_refused, 3 + (n + 2) / 3);
  run_until(NULL, 200);
  ck_assert_int_eq(R[0].fc->n_load_conn, 0);
  ck_assert_int_eq(stats(0).n_offering, 0);
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED);
  /* The genuine one is accepted. */
  p2 = peer_of(2, 0);
  ipsec_broker_announce_for_testing(R[0].b, &p2, a2, n);
  ck_assert_int_eq(stats(0).announce_refused, 3 + (n + 2) / 3);
  ck_assert_int_eq(stats(0).n_offering, 1);
  world_teardown();
}
END_TEST

/* A tor relay never answers: after the probe time it gets per-circuit
 * connections in the clear with IPsec auto, shared ones with IPsec 1. */
START_TEST(test_broker_probe_tor_relay)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_ON, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 0); /* tor */
  ck_assert(run_until(both_connected, 3000));
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED);
  ck_assert_int_eq(verdict(1, 2), PCTCP_PEER_SHARED);
  open_channel(0, 2);
  open_channel(1, 2);
  run_until(NULL, 100);
  ck_assert_int_ge(R[2].n_rx, 2);
  ck_assert(R[2].last_flags & IPSEC_ANN_ANSWER);
  ck_assert(R[2].last_flags & IPSEC_ANN_OFFER);
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED); /* still probing */
  ck_assert(run_until(p_probed, 2000));
  ck_assert_int_eq(verdict(1, 2), PCTCP_PEER_SHARED); /* IPsec 1 */
  /* No more announcements to it after that. */
  int rx = R[2].n_rx;
  open_channel(0, 2);
  run_until(NULL, 100);
  ck_assert_int_eq(R[2].n_rx, rx);
  /* PerCircuitTCPRequireIPsec with IPsec auto: like IPsec 1. */
  ipsec_broker_config_t cfg = relay_cfg(&R[0], IPSEC_MODE_AUTO);
  cfg.require_for_pctcp = 1;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED);
  /* IPsec off: everything per circuit again, unless required. */
  cfg.mode = IPSEC_MODE_OFF;
  cfg.require_for_pctcp = 0;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_PER_CIRCUIT);
  ck_assert_int_eq(stats(0).n_peers, 0);
  cfg.require_for_pctcp = 1;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED);
  world_teardown();
}
END_TEST

/* A relay with IPsec off (pctor without the broker) says so when asked:
 * treated like tor. And a relay that stops offering is unloaded. */
START_TEST(test_broker_peer_withdraws)
{
  world_setup();
  two_relays_up();
  ck_assert_int_eq(R[0].fc->n_conns, 1);
  /* Relay 1 sends an announcement without OFFER (hand-made). */
  uint8_t a[IPSEC_ANNOUNCE_MAX_LEN];
  size_t n = ipsec_broker_build_announce_for_testing(
      R[1].b, R[0].keys.ed_identity.pub, a, sizeof(a));
  a[1] = 0;
  ipsec_link_peer_t p1 = peer_of(1, 0);
  ipsec_broker_announce_for_testing(R[0].b, &p1, a, n);
  P_i = 0;
  ck_assert(run_until(p_no_conns, 2000));
  ck_assert_int_eq(R[0].fc->n_unload, 1);
  ck_assert_int_eq(stats(0).n_offering, 0);
  world_teardown();
}
END_TEST

/* Relay i's announcement for a (new) IKE key, with its real certificates
 * and no READY. */
static size_t
announce_with_key(int i, const uint8_t ike_pub[32], uint8_t *out, size_t len)
{
  ipsec_announce_t a;
  memset(&a, 0, sizeof(a));
  a.version = IPSEC_ANNOUNCE_VERSION;
  a.flags = IPSEC_ANN_OFFER;
  a.generation = 7;
  a.orport = R[i].orport;
  memcpy(a.ike_key, ike_pub, 32);
  torcert_t *ic = ike_cert_create(&R[i].keys.ed_signing, ike_pub,
                                  time(NULL) + 86400);
  a.signing_cert = R[i].scert->encoded;
  a.signing_cert_len = R[i].scert->encoded_len;
  a.ike_cert = ic->encoded;
  a.ike_cert_len = ic->encoded_len;
  size_t n = ipsec_announce_encode(&a, out, len);
  torcert_free(ic);
  ck_assert_int_gt(n, 0);
  return n;
}

static int
p_reloaded(void)
{
  return R[0].fc->n_load_conn == (int)P_n;
}

/* A peer that announces new IKE keys has its connection reloaded with the
 * newest one, at most once per RELOAD_MIN_MS (5 s); the SA is left alone
 * and, as the peer is not READY for the new key, circuits share. */
START_TEST(test_broker_peer_key_change)
{
  world_setup();
  two_relays_up();
  int loads = R[0].fc->n_load_conn;
  uint8_t a[IPSEC_ANNOUNCE_MAX_LEN], last[32];
  ipsec_link_peer_t p1 = peer_of(1, 0);
  for (int k = 0; k < 3; k++) {
    ed25519_keypair_t kp;
    ed25519_keypair_generate(&kp);
    memcpy(last, kp.pub, 32);
    size_t n = announce_with_key(1, kp.pub, a, sizeof(a));
    ipsec_broker_announce_for_testing(R[0].b, &p1, a, n);
    run_until(NULL, 30);
  }
  ck_assert_int_eq(stats(0).announce_refused, 0);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  ck_assert_int_eq(stats(0).n_sa_up, 1);
  P_n = (uint64_t)loads + 1;
  ck_assert(run_until(p_reloaded, 8000));
  run_until(NULL, 300);
  ck_assert_int_eq(R[0].fc->n_load_conn, loads + 1);
  char name[80];
  snprintf(name, sizeof(name), "pctor-%s", R[1].hex);
  fc_conn_t *c = fc_conn(R[0].fc, name);
  ck_assert_ptr_nonnull(c);
  ck_assert_mem_eq(c->remote_pub, last, 32);
  ck_assert_int_eq(R[0].fc->n_terminate, 0);
  world_teardown();
}
END_TEST

/* Initiations that fail are retried with growing delays. */
START_TEST(test_broker_initiate_backoff)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  R[0].fc->peer = R[1].fc;
  R[1].fc->peer = R[0].fc;
  int ini = initiator01();
  R[ini].fc->fail_initiates = 3;
  /* The other relay must not step in. */
  ipsec_broker_set_timing_for_testing(R[1 - ini].b, 10, 300, 30, 30, 100000);
  ck_assert(run_until(both_connected, 3000));
  uint64_t t0 = evloop_now_us(L);
  open_channel(0, 1);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA never came up");
  uint64_t took = evloop_now_us(L) - t0;
  ck_assert_int_eq(stats(ini).initiation_failures, 3);
  ck_assert_int_eq(R[ini].fc->n_initiate, 5);
  /* 30 + 60 + 120 ms of backoff at least. */
  ck_assert_uint_ge(took, 200000);
  world_teardown();
}
END_TEST

/* The peer table is bounded: the least recently used peer without an SA
 * makes room. */
START_TEST(test_broker_table_bound)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 0);
  relay_add(testdir, IPSEC_MODE_AUTO, 0);
  relay_add(testdir, IPSEC_MODE_AUTO, 0);
  ipsec_broker_config_t cfg = relay_cfg(&R[0], IPSEC_MODE_AUTO);
  cfg.max_peers = 2;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  open_channel(0, 1);
  run_until(NULL, 20);
  open_channel(0, 2);
  run_until(NULL, 20);
  ck_assert_int_eq(stats(0).n_peers, 2);
  (void)verdict(0, 1); /* relay 1 used recently; 2 is the oldest now */
  run_until(NULL, 20);
  open_channel(0, 3);
  ck_assert_int_eq(stats(0).n_peers, 2);
  /* Relay 2 was forgotten: unknown again, so shared and probed anew. */
  int rx = R[2].n_rx;
  ck_assert_int_eq(verdict(0, 2), PCTCP_PEER_SHARED);
  run_until(NULL, 20);
  ck_assert_int_eq(R[2].n_rx, rx + 1);
  ck_assert_int_eq(stats(0).n_peers, 2);
  world_teardown();
}
END_TEST

/* Odd but well-formed events from charon change nothing. */
START_TEST(test_broker_odd_events)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  R[0].fc->peer = R[1].fc;
  R[1].fc->peer = R[0].fc;
  R[0].fc->odd_events = R[1].fc->odd_events = 1;
  ck_assert(run_until(both_connected, 3000));
  open_channel(0, 1);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA did not come up");
  /* The bogus "out" with uniqueid 99999999999 was ignored: after the real
   * SAs go away on the responder (which does not re-initiate), nothing is
   * left. */
  int ini = initiator01(), resp = 1 - ini;
  ck_assert_int_eq(stats(ini).charon_losses, 0);
  ck_assert_int_eq(stats(resp).charon_losses, 0);
  R[0].fc->odd_events = R[1].fc->odd_events = 0;
  char name[80];
  snprintf(name, sizeof(name), "pctor-%s", R[ini].hex);
  fc_remove_conn_sas(R[resp].fc, name);
  fc_flush(R[resp].fc);
  P_i = resp;
  ck_assert(run_until(p_no_sa, 2000));
  ck_assert_int_eq(verdict(resp, ini), PCTCP_PEER_SHARED);
  world_teardown();
}
END_TEST

/* ==== trust rules (issue 14) ==== */

/* Relay k announces itself to relay 0 (as on a link from k's address). */
static void
announce_to_0(int k)
{
  uint8_t a[IPSEC_ANNOUNCE_MAX_LEN];
  size_t n = ipsec_broker_build_announce_for_testing(
      R[k].b, R[0].keys.ed_identity.pub, a, sizeof(a));
  ck_assert_int_gt(n, 0);
  ipsec_link_peer_t p = peer_of(k, 0);
  ipsec_broker_announce_for_testing(R[0].b, &p, a, n);
}

/* A relay the consensus does not list gets nothing loaded and only
 * shared connections; once a newer consensus lists it, it is asked again
 * and the SA comes up. */
START_TEST(test_broker_trust_unlisted)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  R[0].fc->peer = R[1].fc;
  R[1].fc->peer = R[0].fc;
  R[1].listed = 0;
  ck_assert(run_until(both_connected, 3000));
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  open_channel(0, 1);
  run_until(NULL, 300);
  ck_assert_uint_ge(stats(0).refused_unlisted, 1);
  ck_assert_int_eq(R[0].fc->n_load_conn, 0);
  ck_assert_int_eq(stats(0).n_offering, 0);
  ck_assert_int_eq(stats(0).n_sa_up, 0);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  /* Listed, but at another address than the link's: still refused. */
  ck_assert_int_eq(pc_addr_parse(&R[1].listed_at, "10.202.9.9:9001"), 0);
  R[1].listed = 1;
  ipsec_broker_directory_changed(R[0].b);
  announce_to_0(1);
  run_until(NULL, 100);
  ck_assert_int_eq(R[0].fc->n_load_conn, 0);
  ck_assert_int_eq(stats(0).n_offering, 0);
  /* A newer consensus lists it where it is: asked again, SA up. */
  R[1].listed_at = R[1].orport;
  ipsec_broker_directory_changed(R[0].b);
  ck_assert_msg(run_until(sa_up_01, 5000), "SA did not come up once listed");
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_PER_CIRCUIT);
  /* Dropped from the consensus: no more per-circuit connections, its
   * connection leaves charon. */
  R[1].listed = 0;
  ipsec_broker_directory_changed(R[0].b);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  P_i = 0;
  ck_assert(run_until(p_no_conns, 2000));
  world_teardown();
}
END_TEST

/* An announced ORPort other than the listed one is refused. */
START_TEST(test_broker_trust_port)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  R[0].fc->peer = R[1].fc;
  R[1].fc->peer = R[0].fc;
  ck_assert(run_until(both_connected, 3000));
  ck_assert_int_eq(pc_addr_parse(&R[1].listed_at, "10.202.0.2:443"), 0);
  announce_to_0(1);
  run_until(NULL, 300);
  ck_assert_int_eq(stats(0).refused_port, 1);
  ck_assert_int_eq(stats(0).refused_unlisted, 0);
  ck_assert_int_eq(stats(0).n_offering, 0);
  ck_assert_int_eq(R[0].fc->n_load_conn, 0);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  /* The listed port: accepted and loaded. */
  R[1].listed_at = R[1].orport;
  announce_to_0(1);
  ck_assert_int_eq(stats(0).n_offering, 1);
  world_teardown();
}
END_TEST

/* Move relay i to ADDR (its ORPort and its listing). */
static void
relay_move(int i, const char *addr)
{
  ck_assert_int_eq(pc_addr_parse(&R[i].orport, addr), 0);
  R[i].listed_at = R[i].orport;
  ipsec_broker_config_t cfg = relay_cfg(&R[i], IPSEC_MODE_AUTO);
  ck_assert_int_eq(ipsec_broker_configure(R[i].b, &cfg), 0);
}

/* At most IPsecMaxPeersPerAddress identities per address; a newcomer
 * replaces one the consensus does not list there. */
START_TEST(test_broker_per_addr_cap)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  relay_move(1, "10.202.0.50:9001");
  relay_move(2, "10.202.0.50:9002");
  relay_move(3, "10.202.0.50:9003");
  ck_assert_int_eq(stats(0).n_peers, 0);
  announce_to_0(1);
  announce_to_0(2);
  ck_assert_int_eq(stats(0).n_offering, 2);
  announce_to_0(3);
  ck_assert_int_eq(stats(0).refused_per_addr, 1);
  ck_assert_int_eq(stats(0).n_peers, 2);
  ck_assert_int_eq(stats(0).n_offering, 2);
  /* Many more identities from that address change nothing. */
  for (int k = 0; k < 20; k++)
    announce_to_0(3);
  ck_assert_int_eq(stats(0).n_peers, 2);
  /* Relay 1 leaves the consensus: relay 3 takes its place. */
  R[1].listed = 0;
  ipsec_broker_directory_changed(R[0].b);
  announce_to_0(3);
  ck_assert_int_eq(stats(0).n_peers, 2);
  ck_assert_int_eq(stats(0).n_offering, 2);
  ck_assert_int_eq(verdict(0, 1), PCTCP_PEER_SHARED);
  /* A different address is not affected. */
  ipsec_broker_config_t cfg = relay_cfg(&R[0], IPSEC_MODE_AUTO);
  cfg.max_peers_per_addr = 1;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  world_teardown();
}
END_TEST

static int
p_sa_gone_1(void)
{
  return R[0].fc->n_sas == 0 && R[0].fc->n_terminate >= 1 &&
         R[0].fc->n_conns == 1;
}

/* A full table of peers with SAs: an unlisted one is evicted by age,
 * SAs and all; listed ones with SAs are kept. */
START_TEST(test_broker_evict_unlisted_with_sa)
{
  world_setup();
  two_relays_up();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  ipsec_broker_config_t cfg = relay_cfg(&R[0], IPSEC_MODE_AUTO);
  cfg.max_peers = 1;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  /* Listed with an SA: relay 2 cannot get in. */
  announce_to_0(2);
  ck_assert_int_eq(stats(0).n_peers, 1);
  ck_assert_int_eq(stats(0).n_sa_up, 1);
  ck_assert_int_eq(stats(0).evicted_with_sa, 0);
  /* Relay 1 is no longer listed: it gives way, and its SAs are closed. */
  R[1].listed = 0;
  ipsec_broker_directory_changed(R[0].b);
  announce_to_0(2);
  ck_assert_int_eq(stats(0).evicted_with_sa, 1);
  ck_assert_int_eq(stats(0).n_peers, 1);
  ck_assert_int_eq(stats(0).n_offering, 1);
  ck_assert(run_until(p_sa_gone_1, 2000));
  world_teardown();
}
END_TEST

/* The VICI socket must be served by root or the charon user: otherwise
 * nothing is sent, the key least of all. */
START_TEST(test_broker_charon_owner)
{
  world_setup();
  relay_add(testdir, IPSEC_MODE_AUTO, 1);
  ipsec_broker_refuse_root_for_testing(R[0].b);
  ipsec_broker_config_t cfg = relay_cfg(&R[0], IPSEC_MODE_AUTO);
  cfg.charon_uid = (long)getuid() + 1;
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  run_until(NULL, 300);
  ck_assert_int_eq(stats(0).charon_connects, 0);
  ck_assert_int_eq(R[0].fc->n_load_key, 0);
  ck_assert_int_eq(R[0].fc->key_loaded, 0);
  /* The right user: connected, key loaded. */
  cfg.charon_uid = (long)getuid();
  ck_assert_int_eq(ipsec_broker_configure(R[0].b, &cfg), 0);
  P_i = 0;
  P_n = 1;
  run_until(NULL, 300);
  ck_assert_int_ge(stats(0).charon_connects, 1);
  ck_assert_int_eq(R[0].fc->n_load_key, 1);
  world_teardown();
}
END_TEST

START_TEST(test_broker_mode_parse)
{
  ipsec_mode_t m;
  ck_assert_int_eq(ipsec_mode_parse("0", &m), 0);
  ck_assert_int_eq(m, IPSEC_MODE_OFF);
  ck_assert_int_eq(ipsec_mode_parse("1", &m), 0);
  ck_assert_int_eq(m, IPSEC_MODE_ON);
  ck_assert_int_eq(ipsec_mode_parse("AUTO", &m), 0);
  ck_assert_int_eq(m, IPSEC_MODE_AUTO);
  ck_assert_int_eq(ipsec_mode_parse("yes", &m), -1);
  ck_assert_int_eq(ipsec_mode_parse("", &m), -1);
  ck_assert_str_eq(ipsec_mode_name(IPSEC_MODE_AUTO), "auto");
  /* IPsec on needs an ORPort address. */
  ck_assert_int_eq(crypt_global_init(), 0);
  evloop_t *loop = evloop_new();
  relay_keys_t keys;
  memset(&keys, 0, sizeof(keys));
  uint8_t s[32] = {1};
  ck_assert_int_eq(ed25519_keypair_from_seed(&keys.ed_identity, s), 0);
  ck_assert_int_eq(ed25519_keypair_from_seed(&keys.ed_signing, s), 0);
  ipsec_broker_t *b =
      ipsec_broker_new_for_testing(loop, &keys, ike_key_new_from_seed(s));
  ipsec_broker_config_t cfg;
  ipsec_broker_config_init(&cfg);
  cfg.mode = IPSEC_MODE_AUTO;
  ck_assert_int_eq(ipsec_broker_configure(b, &cfg), -1);
  ipsec_broker_free(b);
  evloop_free(loop);
}
END_TEST

Suite *
suite_ipsec_broker(void)
{
  Suite *s = suite_create("ipsec_broker");
  TCase *t = tcase_create("pem");
  tcase_add_test(t, test_pem_rfc8410);
  tcase_add_test(t, test_pem_round_trip);
  tcase_add_test(t, test_pem_malformed);
  suite_add_tcase(s, t);
  t = tcase_create("ike_key");
  tcase_add_test(t, test_ike_key_file);
  tcase_add_test(t, test_cert_vectors);
  tcase_add_test(t, test_cert_refusals);
  suite_add_tcase(s, t);
  t = tcase_create("announce");
  tcase_add_test(t, test_announce_vector);
  tcase_add_test(t, test_announce_malformed);
  suite_add_tcase(s, t);
  t = tcase_create("broker");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, test_broker_mode_parse);
  tcase_add_test(t, test_broker_establish);
  tcase_add_test(t, test_broker_responder_charon_restart);
  tcase_add_test(t, test_broker_initiator_charon_restart);
  tcase_add_test(t, test_broker_charon_away);
  tcase_add_test(t, test_broker_refuses_unbound_key);
  tcase_add_test(t, test_broker_probe_tor_relay);
  tcase_add_test(t, test_broker_peer_withdraws);
  tcase_add_test(t, test_broker_initiate_backoff);
  tcase_add_test(t, test_broker_peer_key_change);
  tcase_add_test(t, test_broker_table_bound);
  tcase_add_test(t, test_broker_odd_events);
  tcase_add_test(t, test_broker_trust_unlisted);
  tcase_add_test(t, test_broker_trust_port);
  tcase_add_test(t, test_broker_per_addr_cap);
  tcase_add_test(t, test_broker_evict_unlisted_with_sa);
  tcase_add_test(t, test_broker_charon_owner);
  suite_add_tcase(s, t);
  return s;
}
