/* SPDX-License-Identifier: BSD-3-Clause */
/* check_ed25519_ext.c -- unit tests for lib/crypt/ed25519_ext.c.
 *
 * Independent sources: RFC 8032 section 7.1 test vectors 1-3 (signing with
 * the expanded form of the RFC's seeds must give the RFC's signatures),
 * OpenSSL's seed-based Ed25519 (random seeds, same signatures), and
 * tests/vectors/ed25519_conv_ref.py (written from RFC 8032 and dir-spec
 * appendix C with integer arithmetic, cross-checked by the `cryptography`
 * package), whose printed table is pasted below. The rest are round trips
 * (a crosscert-style signature by a converted key verifies under the key
 * a verifier rebuilds from the X25519 public key and the sign bit) and
 * malformed inputs.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crypt/crypt.h"
#include "lib/crypt/ed25519_pem.h"
#include "lib/bytes/bytes.h"
#include "lib/malloc/alloc.h"

Suite *suite_ed25519_ext(void);

static void
unhex_to(uint8_t *out, size_t outlen, const char *hex)
{
  ck_assert_uint_eq(strlen(hex), outlen * 2);
  for (size_t i = 0; i < outlen; i++) {
    unsigned v;
    ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
    out[i] = (uint8_t)v;
  }
}

static void
assert_hex_eq(const uint8_t *buf, size_t len, const char *hex)
{
  char s[257];
  ck_assert_uint_le(len, 128);
  for (size_t i = 0; i < len; i++)
    sprintf(s + 2 * i, "%02x", buf[i]);
  s[len * 2] = '\0';
  ck_assert_str_eq(s, hex);
}

/* RFC 8032 section 7.1, TEST 1-3. */
static const struct {
  const char *seed, *pub, *msg, *sig;
} rfc8032[] = {
  { "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
    "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
  { "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
    "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00" },
  { "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
    "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
    "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
    "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a" },
};

START_TEST(test_rfc8032_expanded)
{
  for (size_t t = 0; t < 3; t++) {
    uint8_t seed[32], esk[64], pub[32], sig[64], msg[2];
    size_t mlen = strlen(rfc8032[t].msg) / 2;
    unhex_to(seed, 32, rfc8032[t].seed);
    unhex_to(msg, mlen, rfc8032[t].msg);
    ck_assert_int_eq(ed25519_expand_seed(esk, seed), 0);
    ck_assert_int_eq(esk[0] & 7, 0);
    ck_assert_int_eq(esk[31] & 0xc0, 0x40);
    ck_assert_int_eq(ed25519_public_from_expanded(pub, esk), 0);
    assert_hex_eq(pub, 32, rfc8032[t].pub);
    ck_assert_int_eq(ed25519_sign_expanded(sig, mlen ? msg : NULL, mlen,
                                           esk, pub), 0);
    assert_hex_eq(sig, 64, rfc8032[t].sig);
    ck_assert_int_eq(ed25519_verify(sig, msg, mlen, pub), 0);
  }
}
END_TEST

/* Keypairs that hold only an expanded key (tor's key files): built from
 * RFC 8032's expanded vectors, they give RFC 8032's public keys and
 * signatures through ed25519_sign(); unclamped scalars are refused; such
 * a key has no PKCS#8 form. */
START_TEST(test_expanded_keypair)
{
  for (size_t t = 0; t < 3; t++) {
    uint8_t seed[32], esk[64], sig[64], msg[2], back[64];
    size_t mlen = strlen(rfc8032[t].msg) / 2;
    ed25519_keypair_t kp, seeded;
    unhex_to(seed, 32, rfc8032[t].seed);
    unhex_to(msg, mlen, rfc8032[t].msg);
    ck_assert_int_eq(ed25519_expand_seed(esk, seed), 0);
    ck_assert_int_eq(ed25519_keypair_from_expanded(&kp, esk), 0);
    ck_assert(kp.expanded_only);
    ck_assert(pc_is_zero(kp.seed, 32));
    assert_hex_eq(kp.pub, 32, rfc8032[t].pub);
    ck_assert_int_eq(ed25519_sign(sig, mlen ? msg : NULL, mlen, &kp), 0);
    assert_hex_eq(sig, 64, rfc8032[t].sig);
    ck_assert_int_eq(ed25519_keypair_get_expanded(&kp, back), 0);
    ck_assert_mem_eq(back, esk, 64);
    ck_assert_int_eq(ed25519_keypair_from_seed(&seeded, seed), 0);
    ck_assert(!seeded.expanded_only);
    ck_assert_int_eq(ed25519_keypair_get_expanded(&seeded, back), 0);
    ck_assert_mem_eq(back, esk, 64);
    ck_assert_ptr_null(ed25519_pem_encode_private(&kp, NULL));
    /* A public key that is not the secret's: no signature. */
    kp.pub[0] ^= 1;
    ck_assert_int_eq(ed25519_sign(sig, msg, mlen, &kp), -1);
    /* Not clamped as RFC 8032 makes scalars. */
    uint8_t bad[64];
    memcpy(bad, esk, 64);
    bad[0] |= 1;
    ck_assert_int_eq(ed25519_keypair_from_expanded(&kp, bad), -1);
    memcpy(bad, esk, 64);
    bad[31] &= 0xbf;
    ck_assert_int_eq(ed25519_keypair_from_expanded(&kp, bad), -1);
    memcpy(bad, esk, 64);
    bad[31] |= 0x80;
    ck_assert_int_eq(ed25519_keypair_from_expanded(&kp, bad), -1);
    ed25519_keypair_wipe(&kp);
  }
}
END_TEST

/* Random seeds and messages: same signature as OpenSSL's seed signing. */
START_TEST(test_random_seeds)
{
  for (int i = 0; i < 12; i++) {
    ed25519_keypair_t kp;
    uint8_t esk[64], pub[32], sig[64], sig2[64], msg[300];
    uint8_t lenb[2];
    size_t mlen;
    crypt_rand(lenb, 2);
    mlen = (size_t)((lenb[0] | (lenb[1] << 8)) % sizeof(msg));
    crypt_rand(msg, sizeof(msg));
    ed25519_keypair_generate(&kp);
    ck_assert_int_eq(ed25519_sign(sig, msg, mlen, &kp), 0);
    ck_assert_int_eq(ed25519_expand_seed(esk, kp.seed), 0);
    ck_assert_int_eq(ed25519_public_from_expanded(pub, esk), 0);
    ck_assert_mem_eq(pub, kp.pub, 32);
    ck_assert_int_eq(ed25519_sign_expanded(sig2, msg, mlen, esk, pub), 0);
    ck_assert_mem_eq(sig, sig2, 64);
    ck_assert_int_eq(ed25519_verify(sig2, msg, mlen, pub), 0);
    ed25519_keypair_wipe(&kp);
  }
}
END_TEST

/* From tests/vectors/ed25519_conv_ref.py: curve25519 secret, X25519
 * public key, expanded Ed25519 secret, Ed25519 public key, sign bit, and
 * the signature of CONV_MSG by the expanded key. The first two secrets are
 * RFC 7748 section 6.1's; the last is not clamped. */
#define CONV_MSG "pctor ntor-onion-key-crosscert test message"
static const struct {
  const char *secret, *xpub, *esk, *pub;
  int signbit;
  const char *sig;
} conv[] = {
  { "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
    "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
    "70076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c6a"
    "ca7267f9ab5d3b67ff3b1a8be23febd771d60e47b40b270aaaeb7990be8d84e9",
    "8120f299c37ae1ca64a179f638a6c6fafde968f1c33705e28c413c7579d988cf", 1,
    "77ec0d47d8c1cf92e2fd6e828bafa1bb42cecf2be9c9dac2a6fd6a9606d64052"
    "93b629b537b95cde1f72a2fba07343b4286c82c3d2fa9a95adf32741b6b93b0b" },
  { "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
    "58ab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e06b"
    "6ba50fc85fbdd9f48207696d1b256ac48cbbe99376acffb1859ba266c9d622d6",
    "ef4e197de29e38eae689f2f3c2954d14dd70cbcd5a14f8003a12def08174c6fa", 1,
    "9b72da3d1675c926415efcc5102f3607841fa356b985facc522ddeab706d9fbc"
    "7166e61f8fb4a41d9748630ce41cf260ac16799bf22d9ae7383943cb3297be0e" },
  { "38e07706912259dd045c989472ded94c0ac06ab69d16fe7b093ca8ed638143a5",
    "34aad546af85383d49c911cb9fbc5b78f71f529bf64d1d43ecf24527b4f9a011",
    "38e07706912259dd045c989472ded94c0ac06ab69d16fe7b093ca8ed63814365"
    "3040067563011d97aeed12b0a23233193b746112490463a58e67c94920835b48",
    "260878524a1f9fdad629e8d2e8518b7dcab2bef2e417e35e3ec6739d162e0039", 0,
    "c1ba0be4af54a0a3381e1e3e63517810e057c542020b1371c36bc205589697ae"
    "ee179dbfee8a28b19c5a1ef3ede9d8917b6b5951bb7abf2d78b8de370145140d" },
  { "ddeb0bcaaa9deef5a0266692ff54dfd91189328516de1c444b8dd29f88b63e2c",
    "8a9f04b4d4b8fb774c25ec6a985fce33bbd11b0575c554279085d2dc88cd3036",
    "d8eb0bcaaa9deef5a0266692ff54dfd91189328516de1c444b8dd29f88b63e6c"
    "655a1ae90c1180f21e0f644230665f83350308b074f6aba0a3f5968028447f37",
    "f6ff62543f663898c02a3c4623c891a5b69533b24872ba45ede021ce51240716", 0,
    "baab80e338cf469c1f09119323b36e94b4fab1a7fc0cbfd62aec504b54518e4c"
    "7571d9ab2fc03311e7b5d1fc705bbc1d0192eff2b171b4c9c07d2341a297fd00" },
  { "28688d2ae3c8dc593ef0f35d97de8d4bbfca4447f0838166ac5d47cb1a01401e",
    "f3579ff4d1e4f17d732cd35c437ff5c7b187cfd0c6c53a5b467c2f49a7e4852e",
    "28688d2ae3c8dc593ef0f35d97de8d4bbfca4447f0838166ac5d47cb1a01405e"
    "7598555d2e63bad6512e8ad547034737fbf60ec4cc7600ea240d126802a15ddd",
    "d8f8c99ddb89b35e792c1fe8a0584b3ce9b41c0d053ad50499250bfe27151f34", 0,
    "af68f1687a12f9d57a4b02b5dbb6ffea4d600de303ac04babe7b64386c93b2c3"
    "52b89d8ae69065014f1b754a3775cd9c874db5768d4b6a1d229056a5430f030d" },
  { "27bb99993e245f352b84dd2d8d2b7fd844f209ab36aee883b6415e718c335393",
    "e6393937c7cdda962ac906372051cf6b3d65b370d1aff5e0de47078463c20b54",
    "20bb99993e245f352b84dd2d8d2b7fd844f209ab36aee883b6415e718c335353"
    "3437796452c209939f9888870bc3770beae12ab75bf41c8ba315d60b9ee0b3b1",
    "9bacebbc52967620c0189ecebff606be7cbfc798dfbe485ad6f00781e779b59e", 1,
    "8e8b6383c17b1481d3ff98b9cfe74954b0eeca1a51c6a280fdff022d69585bd4"
    "74c25edf6541b586dbfcc810ef180457450562bcf18ea293ad05d8d5b7dfa90b" },
  { "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
    "736845d54e87de09d6bb114aa7042c50a4a015bd9901d1a0026f5956533a1519",
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfe7f"
    "ef70290354643fd3fced406870c5c19313a11a900680713d6ccee1797e161f4c",
    "4fc68b00fa3e0aa2657d41dfc6993c8e7ca113f4c21541766cd947420b5ed69b", 1,
    "c138764b26147f5d8bdb260a648129f3e916b199fce1985fe9fea78e1111e012"
    "58f587afe8f2cbd9bcb92922743b1642782865d19c95738ed04ea2f805975404" },
};

START_TEST(test_conversion_vectors)
{
  const uint8_t *msg = (const uint8_t *)CONV_MSG;
  size_t mlen = strlen(CONV_MSG);
  for (size_t t = 0; t < sizeof(conv) / sizeof(conv[0]); t++) {
    curve25519_keypair_t kp;
    uint8_t esk[64], pub[32], pub2[32], sig[64], xpub[32];
    int sb = -1;
    unhex_to(kp.secret, 32, conv[t].secret);
    unhex_to(kp.pub, 32, conv[t].xpub);
    /* The X25519 public key in the table is the real one. */
    ck_assert_int_eq(curve25519_public_from_secret(xpub, kp.secret), 0);
    ck_assert_mem_eq(xpub, kp.pub, 32);

    ck_assert_int_eq(ed25519_keypair_from_curve25519(esk, pub, &sb, &kp), 0);
    assert_hex_eq(esk, 64, conv[t].esk);
    assert_hex_eq(pub, 32, conv[t].pub);
    ck_assert_int_eq(sb, conv[t].signbit);
    ck_assert_int_eq(sb, pub[31] >> 7);

    ck_assert_int_eq(ed25519_sign_expanded(sig, msg, mlen, esk, pub), 0);
    assert_hex_eq(sig, 64, conv[t].sig);
    ck_assert_int_eq(ed25519_verify(sig, msg, mlen, pub), 0);

    /* A verifier's view: the X25519 key plus the sign bit. */
    ck_assert_int_eq(ed25519_public_from_curve25519_public(pub2, kp.pub, sb),
                     0);
    ck_assert_mem_eq(pub2, pub, 32);
    /* The ignored top bit of a u-coordinate changes nothing. */
    xpub[31] |= 0x80;
    ck_assert_int_eq(ed25519_public_from_curve25519_public(pub2, xpub, sb),
                     0);
    ck_assert_mem_eq(pub2, pub, 32);
    /* The other sign bit is the negated point: same y, and the
     * signature does not verify under it. */
    ck_assert_int_eq(ed25519_public_from_curve25519_public(pub2, kp.pub,
                                                           !sb), 0);
    ck_assert_int_eq(pub2[31], pub[31] ^ 0x80);
    ck_assert_mem_eq(pub2, pub, 31);
    ck_assert_int_eq(ed25519_verify(sig, msg, mlen, pub2), -1);
    curve25519_keypair_wipe(&kp);
  }
}
END_TEST

/* Fresh onion keys: a crosscert-style signature by the converted key
 * verifies under the key rebuilt from (X25519 public key, sign bit). */
START_TEST(test_conversion_roundtrip)
{
  int seen[2] = { 0, 0 };
  for (int i = 0; i < 16; i++) {
    curve25519_keypair_t kp;
    uint8_t esk[64], pub[32], pub2[32], sig[64], msg[140];
    int sb = -1;
    curve25519_keypair_generate(&kp);
    crypt_rand(msg, sizeof(msg));
    ck_assert_int_eq(ed25519_keypair_from_curve25519(esk, pub, &sb, &kp), 0);
    ck_assert(sb == 0 || sb == 1);
    seen[sb]++;
    /* The scalar is the curve25519 secret (already clamped). */
    ck_assert_mem_eq(esk, kp.secret, 32);
    ck_assert_int_eq(ed25519_sign_expanded(sig, msg, sizeof(msg), esk, pub),
                     0);
    ck_assert_int_eq(ed25519_public_from_curve25519_public(pub2, kp.pub, sb),
                     0);
    ck_assert_mem_eq(pub2, pub, 32);
    ck_assert_int_eq(ed25519_verify(sig, msg, sizeof(msg), pub2), 0);
    msg[7] ^= 1;
    ck_assert_int_eq(ed25519_verify(sig, msg, sizeof(msg), pub2), -1);
    curve25519_keypair_wipe(&kp);
  }
  /* 16 fair coin flips all alike: probability 2^-15. */
  ck_assert_int_gt(seen[0], 0);
  ck_assert_int_gt(seen[1], 0);
}
END_TEST

START_TEST(test_malformed)
{
  uint8_t seed[32] = { 1, 2, 3 }, esk[64], pub[32], sig[64], u[32];
  uint8_t out[32];
  curve25519_keypair_t kp, kp2;
  int sb = 7;

  ck_assert_int_eq(ed25519_expand_seed(esk, seed), 0);
  ck_assert_int_eq(ed25519_public_from_expanded(pub, esk), 0);
  /* A public key that does not belong to the secret: refuse to sign. */
  pub[3] ^= 0x40;
  memset(sig, 0xaa, sizeof(sig));
  ck_assert_int_eq(ed25519_sign_expanded(sig, (const uint8_t *)"x", 1, esk,
                                         pub), -1);
  for (size_t i = 0; i < sizeof(sig); i++)
    ck_assert_int_eq(sig[i], 0xaa);
  pub[3] ^= 0x40;
  /* NULL message with a length. */
  ck_assert_int_eq(ed25519_sign_expanded(sig, NULL, 5, esk, pub), -1);
  /* Output may alias the message. */
  memcpy(sig, "abcdef", 6);
  ck_assert_int_eq(ed25519_sign_expanded(sig, sig, 6, esk, pub), 0);
  ck_assert_int_eq(ed25519_verify(sig, (const uint8_t *)"abcdef", 6, pub), 0);

  /* Sign bit must be 0 or 1. */
  memset(u, 0, sizeof(u));
  u[0] = 9;
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 2), -1);
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, -1), -1);
  /* u = 9 is the base point: its Edwards image is B = (x, 4/5). */
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 0), 0);
  assert_hex_eq(out, 32,
      "5866666666666666666666666666666666666666666666666666666666666666");
  /* u = -1 = p - 1 has no image. */
  memset(u, 0xff, sizeof(u));
  u[0] = 0xec;
  u[31] = 0x7f;
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 0), -1);
  /* u = 2 is on the twist: y = 1/3 has no x on the curve. */
  memset(u, 0, sizeof(u));
  u[0] = 2;
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 0), -1);
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 1), -1);
  /* u = 0 maps to (0, -1): x = 0 cannot carry sign bit 1. */
  memset(u, 0, sizeof(u));
  ck_assert_int_eq(ed25519_public_from_curve25519_public(out, u, 1), -1);

  /* A curve25519 keypair whose public half is not its secret's. */
  curve25519_keypair_generate(&kp);
  curve25519_keypair_generate(&kp2);
  memcpy(kp.pub, kp2.pub, 32);
  sb = 7;
  ck_assert_int_eq(ed25519_keypair_from_curve25519(esk, pub, &sb, &kp), -1);
  ck_assert_int_eq(sb, 7);
  curve25519_keypair_wipe(&kp);
  curve25519_keypair_wipe(&kp2);
}
END_TEST

Suite *
suite_ed25519_ext(void)
{
  Suite *s = suite_create("ed25519_ext");
  TCase *tc = tcase_create("ed25519_ext");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rfc8032_expanded);
  tcase_add_test(tc, test_random_seeds);
  tcase_add_test(tc, test_expanded_keypair);
  tcase_add_test(tc, test_conversion_vectors);
  tcase_add_test(tc, test_conversion_roundtrip);
  tcase_add_test(tc, test_malformed);
  suite_add_tcase(s, tc);
  return s;
}
