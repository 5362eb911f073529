/* SPDX-License-Identifier: BSD-3-Clause */
/* check_crypt.c -- unit tests for lib/crypt.
 *
 * Known-answer vectors come from independent sources: FIPS 180 / FIPS 202
 * examples ("abc"), RFC 4231 (HMAC-SHA256), NIST SP 800-38A F.5.1
 * (AES-128-CTR), RFC 7748 section 6.1 (X25519), RFC 8032 section 7.1
 * (Ed25519), RFC 5869 (HKDF), and reference scripts under tests/vectors/
 * (crypt_kdf_tor.py, crypt_misc.py, crypt_rsa.py) written with python's
 * hashlib and the `cryptography` package, whose printed output is pasted
 * here. The rest are round trips and malformed-input cases.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crypt/crypt.h"
#include "lib/crypt/pwbox.h"
#include "lib/encoding/base16.h"
#include "lib/crypt/s2k.h"

Suite *suite_crypt(void);

/* Decode a hex string into a fresh buffer; *len_out gets its length. */
static uint8_t *
unhex(const char *hex, size_t *len_out)
{
  size_t n = strlen(hex) / 2;
  uint8_t *b = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(b);
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
    b[i] = (uint8_t)v;
  }
  if (len_out)
    *len_out = n;
  return b;
}

static void
unhex_to(uint8_t *out, size_t outlen, const char *hex)
{
  size_t n;
  uint8_t *b = unhex(hex, &n);
  ck_assert_uint_eq(n, outlen);
  memcpy(out, b, n);
  free(b);
}

/* Assert that buf (len bytes) equals the hex string. */
static void
assert_hex_eq(const uint8_t *buf, size_t len, const char *hex)
{
  char *s = malloc(len * 2 + 1);
  for (size_t i = 0; i < len; i++)
    sprintf(s + 2 * i, "%02x", buf[i]);
  s[len * 2] = '\0';
  ck_assert_str_eq(s, hex);
  free(s);
}

START_TEST(test_init)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ck_assert_int_eq(crypt_global_init(), 0); /* idempotent */
  ck_assert_ptr_nonnull(strstr(crypt_library_version(), "OpenSSL"));
}
END_TEST

START_TEST(test_hashes)
{
  uint8_t out[32], body[509];
  crypt_sha1(out, "abc", 3);
  assert_hex_eq(out, 20, "a9993e364706816aba3e25717850c26c9cd0d89d");
  crypt_sha256(out, "abc", 3);
  assert_hex_eq(out, 32, "ba7816bf8f01cfea414140de5dae2223"
                         "b00361a396177a9cb410ff61f20015ad");
  crypt_sha3_256(out, "abc", 3);
  assert_hex_eq(out, 32, "3a985da74fe225b2045c172d6bd390bd"
                         "855f086e3e9d525b46bfe24511431532");
  /* crypt_misc.py */
  char a1000[1000];
  memset(a1000, 'a', sizeof(a1000));
  crypt_sha3_256(out, a1000, sizeof(a1000));
  assert_hex_eq(out, 32, "8f3934e6f7a15698fe0f396b95d8c444"
                         "0929a8fa6eae140171c068b4549fbf81");
  for (int i = 0; i < 509; i++)
    body[i] = (uint8_t)i;
  crypt_sha1(out, body, sizeof(body));
  assert_hex_eq(out, 20, "82fdf2cccc77ab556aa35557d0923b162d1b98cf");
}
END_TEST

START_TEST(test_shake256)
{
  uint8_t out[64];
  /* FIPS 202 example / hashlib.shake_256(b"abc").hexdigest(64) */
  crypt_shake256(out, 64, "abc", 3);
  assert_hex_eq(out, 64,
                "483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739"
                "d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4");
  /* A shorter output is a prefix of the longer one. */
  crypt_shake256(out, 7, "abc", 3);
  assert_hex_eq(out, 7, "483366601360a8");
  crypt_shake256(out, 32, "", 0);
  assert_hex_eq(out, 32, "46b9dd2b0ba88d13233b3feb743eeb24"
                         "3fcd52ea62b81b82b50c27646ed5762f");
}
END_TEST

START_TEST(test_hmac_sha256)
{
  uint8_t out[32], key[100];
  /* RFC 4231 test case 1 */
  memset(key, 0x0b, 20);
  crypt_hmac_sha256(out, key, 20, "Hi There", 8);
  assert_hex_eq(out, 32, "b0344c61d8db38535ca8afceaf0bf12b"
                         "881dc200c9833da726e9376c2e32cff7");
  /* RFC 4231 test case 2 */
  crypt_hmac_sha256(out, "Jefe", 4, "what do ya want for nothing?", 28);
  assert_hex_eq(out, 32, "5bdcc146bf60754e6a042426089575c7"
                         "5a003f089d2739839dec58b964ec3843");
  /* crypt_misc.py: empty key; key longer than the block size. */
  crypt_hmac_sha256(out, "", 0, "abc", 3);
  assert_hex_eq(out, 32, "fd7adb152c05ef80dccf50a1fa4c05d5"
                         "a3ec6da95575fc312ae7c5d091836351");
  memset(key, 0x01, 100);
  crypt_hmac_sha256(out, key, 100, "abc", 3);
  assert_hex_eq(out, 32, "ef6d619c4813f73441699e6626126ec4"
                         "1b89213839c00899f7fb5cda20edd9ea");
}
END_TEST

static const char *sp800_38a_pt =
  "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
  "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
static const char *sp800_38a_ct =
  "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
  "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee";

START_TEST(test_aes128_ctr_nist)
{
  uint8_t key[16], iv[16], pt[64], ct[64], buf[64];
  static const size_t chunks[] = { 1, 15, 17, 31 }; /* = 64 */
  size_t off = 0;
  unhex_to(key, 16, "2b7e151628aed2a6abf7158809cf4f3c");
  unhex_to(iv, 16, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  unhex_to(pt, 64, sp800_38a_pt);

  /* Uneven chunks: the keystream must continue across calls. */
  crypt_aes_t *c = crypt_aes_new(key, 128, iv);
  for (size_t i = 0; i < 4; i++) {
    crypt_aes_crypt(c, ct + off, pt + off, chunks[i]);
    off += chunks[i];
  }
  ck_assert_uint_eq(off, 64);
  assert_hex_eq(ct, 64, sp800_38a_ct);
  crypt_aes_free(c);
  ck_assert_ptr_null(c);

  /* Decryption is the same operation; in place, zero-length calls too. */
  memcpy(buf, ct, 64);
  c = crypt_aes_new(key, 128, iv);
  crypt_aes_crypt(c, buf, buf, 0);
  crypt_aes_crypt(c, buf, buf, 33);
  crypt_aes_crypt(c, buf + 33, buf + 33, 31);
  ck_assert_mem_eq(buf, pt, 64);
  crypt_aes_free(c);
  crypt_aes_free(c); /* NULL is fine */
}
END_TEST

/* The two AES-128 implementations behind crypt_aes_t (cipher.c: AES-NI
 * where the CPU has it, else OpenSSL's EVP) give the same keystream for
 * any chunking: 4 KiB in chunks of 0..300 bytes (so the eight-block loop,
 * single blocks and partial blocks all run, from every offset inside a
 * block), from counter blocks whose low half or whole 128 bits wrap
 * inside the data. On a CPU without AES-NI both objects are EVP ones and
 * this only checks EVP against itself (the NIST vectors still check it). */
START_TEST(test_aes128_ctr_impls)
{
  static uint8_t pt[4096], a[4096], b[4096];
  uint8_t key[16], iv[16];
  uint32_t x = 0x9e3779b9u;
  for (size_t i = 0; i < sizeof(pt); i++) {
    x = x * 1103515245u + 12345u;
    pt[i] = (uint8_t)(x >> 16);
  }
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 16; i++)
      key[i] = (uint8_t)(x >> (i % 4 * 8)) ^ (uint8_t)(round * 37 + i);
    memset(iv, 0, sizeof(iv));
    if (round == 1)
      memset(iv + 8, 0xff, 8);  /* the low 64 bits wrap: carry */
    if (round == 2)
      memset(iv, 0xff, 16);     /* the whole counter wraps */
    iv[15] = (uint8_t)(round == 0 ? 0x42 : 0xf0);
    crypt_aes_use_evp_for_testing(0);
    crypt_aes_t *ca = crypt_aes_new(key, 128, iv);
    crypt_aes_use_evp_for_testing(1);
    crypt_aes_t *cb = crypt_aes_new(key, 128, iv);
    crypt_aes_use_evp_for_testing(0);
    size_t off = 0;
    while (off < sizeof(pt)) {
      x = x * 1103515245u + 12345u;
      size_t n = (x >> 8) % 301;
      if (n > sizeof(pt) - off)
        n = sizeof(pt) - off;
      crypt_aes_crypt(ca, a + off, pt + off, n);
      memcpy(b + off, pt + off, n);
      crypt_aes_crypt(cb, b + off, b + off, n); /* in place */
      off += n;
    }
    ck_assert_mem_eq(a, b, sizeof(a));
    ck_assert(memcmp(a, pt, sizeof(a)) != 0);
    crypt_aes_free(ca);
    crypt_aes_free(cb);
  }
}
END_TEST

/* The NIST vectors again with the EVP implementation forced. */
START_TEST(test_aes128_ctr_nist_evp)
{
  uint8_t key[16], iv[16], pt[64], ct[64];
  unhex_to(key, 16, "2b7e151628aed2a6abf7158809cf4f3c");
  unhex_to(iv, 16, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  unhex_to(pt, 64, sp800_38a_pt);
  crypt_aes_use_evp_for_testing(1);
  crypt_aes_t *c = crypt_aes_new(key, 128, iv);
  crypt_aes_use_evp_for_testing(0);
  crypt_aes_crypt(c, ct, pt, 7);
  crypt_aes_crypt(c, ct + 7, pt + 7, 57);
  assert_hex_eq(ct, 64, sp800_38a_ct);
  crypt_aes_free(c);
}
END_TEST

START_TEST(test_aes_ctr_misc)
{
  uint8_t key[32], iv[16], buf[64];
  /* crypt_misc.py: the whole 128-bit counter wraps. */
  for (int i = 0; i < 32; i++)
    key[i] = (uint8_t)i;
  memset(iv, 0xff, 16);
  iv[15] = 0xfe;
  memset(buf, 0, sizeof(buf));
  crypt_aes_t *c = crypt_aes_new(key, 128, iv);
  crypt_aes_crypt(c, buf, buf, 5);
  crypt_aes_crypt(c, buf + 5, buf + 5, 59);
  assert_hex_eq(buf, 64,
                "b6b5c2d82d8bd40fcf4ed8f4ae6e97ee3c441f32ce07822364d7a2990e50bb13"
                "c6a13b37878f5b826f4f8162a1c8d8797346139595c0b41e497bbde365f42d0a");
  crypt_aes_free(c);
  /* AES-256, NULL iv = zero counter block. */
  memset(buf, 0, sizeof(buf));
  c = crypt_aes_new(key, 256, NULL);
  for (int i = 0; i < 40; i++)
    crypt_aes_crypt(c, buf + i, buf + i, 1);
  assert_hex_eq(buf, 40, "f29000b62a499fd0a9f39a6add2e7780f05d76ae4ab99fe5"
                         "a6f69b3148c2363d0ebcb5deb52c83bd");
  crypt_aes_free(c);
}
END_TEST

START_TEST(test_x25519)
{
  /* RFC 7748 section 6.1 */
  uint8_t a_sk[32], b_sk[32], pub[32], out[32], out2[32];
  unhex_to(a_sk, 32, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  unhex_to(b_sk, 32, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
  const char *a_pk = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
  const char *b_pk = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
  const char *k = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";

  ck_assert_int_eq(curve25519_public_from_secret(pub, a_sk), 0);
  assert_hex_eq(pub, 32, a_pk);
  ck_assert_int_eq(curve25519_dh(out, b_sk, pub), 0);
  assert_hex_eq(out, 32, k);
  ck_assert_int_eq(curve25519_public_from_secret(pub, b_sk), 0);
  assert_hex_eq(pub, 32, b_pk);
  ck_assert_int_eq(curve25519_dh(out, a_sk, pub), 0);
  assert_hex_eq(out, 32, k);

  /* Small-order peer keys (u = 0, u = 1) give an all-zero secret. */
  memset(pub, 0, 32);
  memset(out, 0xaa, 32);
  ck_assert_int_eq(curve25519_dh(out, a_sk, pub), -1);
  uint8_t zero[32] = { 0 };
  ck_assert_mem_eq(out, zero, 32);
  pub[0] = 1;
  ck_assert_int_eq(curve25519_dh(out, a_sk, pub), -1);

  /* Fresh keypairs agree. */
  curve25519_keypair_t x, y;
  curve25519_keypair_generate(&x);
  curve25519_keypair_generate(&y);
  ck_assert_mem_ne(x.secret, y.secret, 32);
  ck_assert_int_eq(curve25519_public_from_secret(pub, x.secret), 0);
  ck_assert_mem_eq(pub, x.pub, 32);
  ck_assert_int_eq(curve25519_dh(out, x.secret, y.pub), 0);
  ck_assert_int_eq(curve25519_dh(out2, y.secret, x.pub), 0);
  ck_assert_mem_eq(out, out2, 32);
  curve25519_keypair_wipe(&x);
  ck_assert_mem_eq(x.secret, zero, 32);
}
END_TEST

/* Public keys from the table-based base-point multiplication
 * (curve25519_base.c): vectors from tests/vectors/x25519_base_ref.py (RFC
 * 7748's ladder in plain Python), then 512 more scalars against OpenSSL's
 * ladder (X25519(secret, 9) through curve25519_dh()). */
static const struct {
  const char *name, *secret, *pub;
} x25519_base_vectors[] = {
  { "zero",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "2fe57da347cd62431528daac5fbb290730fff684afc4cfc2ed90995f58cb3b74" },
  { "ones",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "847c0d2c375234f365e660955187a3735a0f7613d1609d3a6a4d8c53aeaa5a22" },
  { "nine",
    "0900000000000000000000000000000000000000000000000000000000000000",
    "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079" },
  { "bit-byte-17",
    "0000000000000000000000000000000000800000000000000000000000000000",
    "7d31cdd2f114cb4a7b1d931c10a9efb46c18004504bd4c13dea2b3848ee68634" },
  { "sha-0",
    "916dc70dd6e5ffb66caf62d91f1dc83d9218b11a06991cefa91133ee8a97ed48",
    "8c8d76c94be9154fa12fa257b3405d277c8253429eb2260622345203e35fd460" },
  { "sha-1",
    "eaf12b3468e7e66b1c1a6f6ca4b4b3ac6aad1909dd9403e005bb95999e09c2e0",
    "09c5cd5d059d3ff5a25e405800f12d604c45070dffffb4616b2a24ccfdafd347" },
  { "sha-2",
    "f32122037074c523252fb0e85ba226e0802dd0b0f8f58c65a8b1d7622a70be6c",
    "23777433c50ee3ad77a5eb5dabb5108706e2092a1a7e664dccdce7097944c50a" },
  { "sha-255",
    "04a59665dea99b6259b745c9f1be8f8725ab03c8acb05c9153e550413ce20633",
    "6ba9a9556730d676310b720c79b2ec30684c048467781fbf8615dec7c98e4226" },
};

START_TEST(test_x25519_base)
{
  uint8_t sk[32], pub[32], nine[32] = { 9 }, ref[32];
  for (size_t i = 0; i < sizeof(x25519_base_vectors) /
                             sizeof(x25519_base_vectors[0]); i++) {
    unhex_to(sk, 32, x25519_base_vectors[i].secret);
    ck_assert_int_eq(curve25519_public_from_secret(pub, sk), 0);
    assert_hex_eq(pub, 32, x25519_base_vectors[i].pub);
  }
  for (unsigned n = 0; n < 512; n++) {
    char label[32];
    snprintf(label, sizeof(label), "check_crypt %u", n);
    crypt_sha256(sk, label, strlen(label));
    if (n % 4 == 1)
      memset(sk + 16, 0xff, 16); /* high digits at their largest */
    else if (n % 4 == 2)
      memset(sk, 0, 16); /* low digits zero */
    ck_assert_int_eq(curve25519_public_from_secret(pub, sk), 0);
    ck_assert_int_eq(curve25519_dh(ref, sk, nine), 0);
    ck_assert_mem_eq(pub, ref, 32);
  }
}
END_TEST

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

START_TEST(test_ed25519_rfc8032)
{
  for (size_t t = 0; t < 3; t++) {
    ed25519_keypair_t kp;
    uint8_t seed[32], sig[64], bad[64], pub[32];
    size_t mlen;
    uint8_t *msg = unhex(rfc8032[t].msg, &mlen);
    unhex_to(seed, 32, rfc8032[t].seed);
    ck_assert_int_eq(ed25519_keypair_from_seed(&kp, seed), 0);
    ck_assert_mem_eq(kp.seed, seed, 32);
    assert_hex_eq(kp.pub, 32, rfc8032[t].pub);
    ck_assert_int_eq(ed25519_sign(sig, mlen ? msg : NULL, mlen, &kp), 0);
    assert_hex_eq(sig, 64, rfc8032[t].sig);
    ck_assert_int_eq(ed25519_verify(sig, msg, mlen, kp.pub), 0);

    /* Any flipped bit in signature, message or key must fail. */
    for (int bit = 0; bit < 512; bit += 37) {
      memcpy(bad, sig, 64);
      bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      ck_assert_int_eq(ed25519_verify(bad, msg, mlen, kp.pub), -1);
    }
    if (mlen) {
      msg[0] ^= 0x01;
      ck_assert_int_eq(ed25519_verify(sig, msg, mlen, kp.pub), -1);
      msg[0] ^= 0x01;
    }
    memcpy(pub, kp.pub, 32);
    pub[5] ^= 0x10;
    ck_assert_int_eq(ed25519_verify(sig, msg, mlen, pub), -1);
    /* Appending a byte to the message fails too. */
    uint8_t longer[3] = { 0 };
    memcpy(longer, msg, mlen);
    ck_assert_int_eq(ed25519_verify(sig, longer, mlen + 1, kp.pub), -1);
    free(msg);
  }
}
END_TEST

START_TEST(test_ed25519_roundtrip)
{
  ed25519_keypair_t kp, kp2;
  uint8_t sig[64], zero[32] = { 0 };
  const char *m = "pctor ed25519 round trip";
  ed25519_keypair_generate(&kp);
  ck_assert_int_eq(ed25519_keypair_from_seed(&kp2, kp.seed), 0);
  ck_assert_mem_eq(kp2.pub, kp.pub, 32);
  /* from_seed may be called with the struct's own seed */
  ck_assert_int_eq(ed25519_keypair_from_seed(&kp2, kp2.seed), 0);
  ck_assert_mem_eq(kp2.pub, kp.pub, 32);
  ck_assert_int_eq(ed25519_sign(sig, (const uint8_t *)m, strlen(m), &kp), 0);
  ck_assert_int_eq(ed25519_verify(sig, (const uint8_t *)m, strlen(m), kp.pub), 0);
  /* An all-zero public key is not a valid key for this signature. */
  ck_assert_int_eq(ed25519_verify(sig, (const uint8_t *)m, strlen(m), zero), -1);
  ed25519_keypair_wipe(&kp);
  ck_assert_mem_eq(kp.seed, zero, 32);
}
END_TEST

START_TEST(test_hkdf)
{
  uint8_t ikm[22], salt[13], info[10], okm[72];
  memset(ikm, 0x0b, sizeof(ikm));
  for (int i = 0; i < 13; i++)
    salt[i] = (uint8_t)i;
  for (int i = 0; i < 10; i++)
    info[i] = (uint8_t)(0xf0 + i);
  /* RFC 5869 test case 1 */
  ck_assert_int_eq(crypt_hkdf_sha256(okm, 42, ikm, 22, salt, 13, info, 10), 0);
  assert_hex_eq(okm, 42, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db0"
                         "2d56ecc4c5bf34007208d5b887185865");
  /* RFC 5869 test case 3: zero-length salt and info; NULL salt is the
   * same thing. */
  const char *tc3 = "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec345"
                    "4e5f3c738d2d9d201395faa4b61a96c8";
  ck_assert_int_eq(crypt_hkdf_sha256(okm, 42, ikm, 22, salt, 0, info, 0), 0);
  assert_hex_eq(okm, 42, tc3);
  memset(okm, 0, sizeof(okm));
  ck_assert_int_eq(crypt_hkdf_sha256(okm, 42, ikm, 22, NULL, 0, NULL, 0), 0);
  assert_hex_eq(okm, 42, tc3);
  /* A shorter output is a prefix. */
  ck_assert_int_eq(crypt_hkdf_sha256(okm, 5, ikm, 22, NULL, 0, NULL, 0), 0);
  assert_hex_eq(okm, 5, "8da4e775a5");
  /* crypt_misc.py: empty IKM, no salt, 72 bytes */
  ck_assert_int_eq(crypt_hkdf_sha256(okm, 72, NULL, 0, NULL, 0,
                                     (const uint8_t *)"ntor", 4), 0);
  assert_hex_eq(okm, 72,
                "0a98c95454ca9e156f3d29f709d5ea6643152e839a050d8345f0206dd24d8589"
                "fda3be38e111d0bdef645e6be3d93c2eb89112840fc2b6b6578d841ea723047a"
                "6ab8234a50451312");
  /* Length limit: 255 blocks. */
  uint8_t *big = malloc(255 * 32 + 1);
  ck_assert_int_eq(crypt_hkdf_sha256(big, 255 * 32, ikm, 22, NULL, 0, NULL, 0), 0);
  ck_assert_int_eq(crypt_hkdf_sha256(big, 255 * 32 + 1, ikm, 22, NULL, 0, NULL, 0), -1);
  free(big);
}
END_TEST

START_TEST(test_kdf_tor)
{
  /* tests/vectors/crypt_kdf_tor.py */
  uint8_t k0[40], out[92];
  for (int i = 0; i < 40; i++)
    k0[i] = (uint8_t)i;
  ck_assert_int_eq(crypt_kdf_tor(out, 92, k0, 40), 0);
  assert_hex_eq(out, 92,
                "ee4290b7cadc050642954479851159fd567f8cf39e917161fbf90a6e0016f447"
                "e7b0c384fea2312acdb67f371199aade028288f642c193300a48d9e169024d75"
                "bc21fa80d52349328e7d0ce219337e74a980c2672535f15661c9aa31");
  ck_assert_int_eq(crypt_kdf_tor(out, 25, (const uint8_t *)"Tor", 3), 0);
  assert_hex_eq(out, 25, "776c6214fc647aaa5f683c737ee66ec44f03d0372e1cce6922");
  ck_assert_int_eq(crypt_kdf_tor(out, 41, NULL, 0), 0);
  assert_hex_eq(out, 41, "5ba93c9db0cff93f52b521d7420e43f6eda2784fbf8b4530d8"
                         "d246dd74ac53a13471bba17941dff7c4");
  uint8_t *big = malloc(255 * 20 + 1);
  ck_assert_int_eq(crypt_kdf_tor(big, 255 * 20, k0, 40), 0);
  assert_hex_eq(big + 254 * 20, 20, "746c8ff140b1fe53da3ab8211b73580945003883");
  ck_assert_int_eq(crypt_kdf_tor(big, 255 * 20 + 1, k0, 40), -1);
  free(big);
}
END_TEST

static void
check_digest_semantics(digest_alg_t alg, size_t len,
                       void (*oneshot)(uint8_t *, const void *, size_t))
{
  uint8_t msg[1200], a[32], b[32], want[32];
  for (size_t i = 0; i < sizeof(msg); i++)
    msg[i] = (uint8_t)(i * 7 + 3);

  crypt_digest_t *d = crypt_digest_new(alg);
  ck_assert_uint_eq(crypt_digest_len(d), len);
  /* Peek of nothing = digest of the empty string. */
  crypt_digest_peek(d, a, len);
  oneshot(want, "", 0);
  ck_assert_mem_eq(a, want, len);

  crypt_digest_add(d, msg, 509);
  crypt_digest_peek(d, a, len);
  crypt_digest_peek(d, b, len); /* peek twice: same answer */
  ck_assert_mem_eq(a, b, len);
  oneshot(want, msg, 509);
  ck_assert_mem_eq(a, want, len);

  /* Truncated peek gives a prefix. */
  memset(b, 0, sizeof(b));
  crypt_digest_peek(d, b, 4);
  ck_assert_mem_eq(b, want, 4);

  /* dup snapshots; adding after a peek continues the same stream. */
  crypt_digest_t *snap = crypt_digest_dup(d);
  crypt_digest_add(d, msg + 509, 1);
  crypt_digest_add(d, msg + 510, 690);
  crypt_digest_peek(d, a, len);
  oneshot(want, msg, 1200);
  ck_assert_mem_eq(a, want, len);

  /* The snapshot is independent of later adds. */
  crypt_digest_peek(snap, b, len);
  oneshot(want, msg, 509);
  ck_assert_mem_eq(b, want, len);

  /* assign: snap takes d's state (1200 bytes) and both then continue
   * identically; assigning back restores. */
  crypt_digest_t *saved = crypt_digest_new(alg);
  crypt_digest_assign(saved, snap); /* 509 bytes */
  crypt_digest_assign(snap, d);
  crypt_digest_peek(snap, b, len);
  oneshot(want, msg, 1200);
  ck_assert_mem_eq(b, want, len);
  crypt_digest_add(snap, "x", 1);
  crypt_digest_add(d, "x", 1);
  crypt_digest_peek(snap, a, len);
  crypt_digest_peek(d, b, len);
  ck_assert_mem_eq(a, b, len);
  crypt_digest_assign(d, saved);
  crypt_digest_assign(d, d); /* self-assignment is a no-op */
  crypt_digest_peek(d, a, len);
  oneshot(want, msg, 509);
  ck_assert_mem_eq(a, want, len);

  crypt_digest_free(d);
  ck_assert_ptr_null(d);
  crypt_digest_free(snap);
  crypt_digest_free(saved);
  crypt_digest_free(saved); /* NULL after the macro */
}

static void
sha1_oneshot(uint8_t *o, const void *m, size_t n)
{
  crypt_sha1(o, m, n);
}
static void
sha256_oneshot(uint8_t *o, const void *m, size_t n)
{
  crypt_sha256(o, m, n);
}
static void
sha3_oneshot(uint8_t *o, const void *m, size_t n)
{
  crypt_sha3_256(o, m, n);
}

START_TEST(test_digest_incremental)
{
  check_digest_semantics(DIGEST_ALG_SHA1, 20, sha1_oneshot);
  check_digest_semantics(DIGEST_ALG_SHA256, 32, sha256_oneshot);
  check_digest_semantics(DIGEST_ALG_SHA3_256, 32, sha3_oneshot);
  /* Incremental "abc" in pieces matches the FIPS example. */
  crypt_digest_t *d = crypt_digest_new(DIGEST_ALG_SHA1);
  uint8_t out[20];
  crypt_digest_add(d, "a", 1);
  crypt_digest_add(d, "", 0);
  crypt_digest_add(d, "bc", 2);
  crypt_digest_peek(d, out, 20);
  assert_hex_eq(out, 20, "a9993e364706816aba3e25717850c26c9cd0d89d");
  crypt_digest_free(d);
}
END_TEST

START_TEST(test_rand)
{
  uint8_t a[32], b[32];
  crypt_rand(a, sizeof(a));
  crypt_rand(b, sizeof(b));
  ck_assert_mem_ne(a, b, sizeof(a));
  crypt_rand(a, 0);
  ck_assert_uint_eq(crypt_rand_u64_below(1), 0);
  int count[3] = { 0, 0, 0 };
  for (int i = 0; i < 3000; i++) {
    uint64_t v = crypt_rand_u64_below(3);
    ck_assert_uint_lt(v, 3);
    count[v]++;
  }
  for (int i = 0; i < 3; i++) { /* expected 1000, sd ~26 */
    ck_assert_int_gt(count[i], 800);
    ck_assert_int_lt(count[i], 1200);
  }
  /* Large bounds: 2^63 + 1 rejects almost half the draws. */
  for (int i = 0; i < 100; i++) {
    ck_assert_uint_lt(crypt_rand_u64_below((UINT64_C(1) << 63) + 1),
                      (UINT64_C(1) << 63) + 1);
    ck_assert_uint_lt(crypt_rand_u64_below(UINT64_MAX), UINT64_MAX);
  }
}
END_TEST

/* ---- RSA ---- */

/* tests/vectors/crypt_rsa.py: a fixed 1024-bit key. */
static const uint8_t fixed_pub_der[] = {
  0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00, 0xce, 0x70, 0xcc, 0x35, 0x72,
  0x35, 0xbc, 0x37, 0x93, 0x47, 0x5c, 0xa2, 0x12, 0x70, 0xb9, 0x2e, 0xcd,
  0xc6, 0xe5, 0xf9, 0xdb, 0x77, 0x83, 0x32, 0x9c, 0x3f, 0x22, 0xb8, 0x21,
  0xbf, 0x67, 0x52, 0x95, 0x69, 0xfc, 0x20, 0xdf, 0x98, 0x38, 0x22, 0x87,
  0x97, 0x00, 0xb4, 0xb8, 0x56, 0xdf, 0x5e, 0x55, 0x67, 0x87, 0x18, 0x97,
  0x85, 0xbb, 0x50, 0xc8, 0xa7, 0x3a, 0xa8, 0xf2, 0x54, 0x47, 0x8b, 0x2b,
  0x6b, 0xb5, 0x7d, 0xab, 0x70, 0x4a, 0x57, 0x43, 0x94, 0x4e, 0xc9, 0x81,
  0x97, 0x85, 0xd6, 0xb8, 0x11, 0x67, 0x2c, 0xca, 0xff, 0x1c, 0x26, 0x9d,
  0xdc, 0xde, 0x6a, 0x33, 0x9f, 0x61, 0x2e, 0xcf, 0x87, 0x1c, 0x02, 0x0d,
  0xff, 0x34, 0xc6, 0xce, 0x6f, 0x13, 0x93, 0x1d, 0x31, 0x45, 0xbd, 0x77,
  0x1a, 0x37, 0xf8, 0xcd, 0x20, 0xb2, 0xf4, 0x84, 0x8b, 0xc0, 0xdf, 0xf1,
  0x24, 0x05, 0xd5, 0x02, 0x03, 0x01, 0x00, 0x01,
};
static const uint8_t fixed_priv_der[] = {
  0x30, 0x82, 0x02, 0x5e, 0x02, 0x01, 0x00, 0x02, 0x81, 0x81, 0x00, 0xce,
  0x70, 0xcc, 0x35, 0x72, 0x35, 0xbc, 0x37, 0x93, 0x47, 0x5c, 0xa2, 0x12,
  0x70, 0xb9, 0x2e, 0xcd, 0xc6, 0xe5, 0xf9, 0xdb, 0x77, 0x83, 0x32, 0x9c,
  0x3f, 0x22, 0xb8, 0x21, 0xbf, 0x67, 0x52, 0x95, 0x69, 0xfc, 0x20, 0xdf,
  0x98, 0x38, 0x22, 0x87, 0x97, 0x00, 0xb4, 0xb8, 0x56, 0xdf, 0x5e, 0x55,
  0x67, 0x87, 0x18, 0x97, 0x85, 0xbb, 0x50, 0xc8, 0xa7, 0x3a, 0xa8, 0xf2,
  0x54, 0x47, 0x8b, 0x2b, 0x6b, 0xb5, 0x7d, 0xab, 0x70, 0x4a, 0x57, 0x43,
  0x94, 0x4e, 0xc9, 0x81, 0x97, 0x85, 0xd6, 0xb8, 0x11, 0x67, 0x2c, 0xca,
  0xff, 0x1c, 0x26, 0x9d, 0xdc, 0xde, 0x6a, 0x33, 0x9f, 0x61, 0x2e, 0xcf,
  0x87, 0x1c, 0x02, 0x0d, 0xff, 0x34, 0xc6, 0xce, 0x6f, 0x13, 0x93, 0x1d,
  0x31, 0x45, 0xbd, 0x77, 0x1a, 0x37, 0xf8, 0xcd, 0x20, 0xb2, 0xf4, 0x84,
  0x8b, 0xc0, 0xdf, 0xf1, 0x24, 0x05, 0xd5, 0x02, 0x03, 0x01, 0x00, 0x01,
  0x02, 0x81, 0x81, 0x00, 0x8e, 0x3f, 0x3f, 0x16, 0xdc, 0xb9, 0x96, 0x15,
  0x9d, 0x50, 0x20, 0xce, 0x34, 0x72, 0xa3, 0xc7, 0x52, 0x57, 0x69, 0x03,
  0xff, 0x6b, 0x9c, 0x65, 0x75, 0x30, 0x33, 0xd6, 0x38, 0xba, 0xd0, 0x91,
  0x21, 0x0f, 0x44, 0x81, 0xca, 0x4f, 0xf2, 0xee, 0x28, 0x0b, 0xae, 0x9a,
  0xd8, 0x22, 0x54, 0x0b, 0x86, 0x41, 0xad, 0xdf, 0x0e, 0x19, 0x41, 0xf6,
  0xea, 0x2c, 0x00, 0xc9, 0x85, 0x20, 0xf9, 0xa1, 0xf8, 0x77, 0xa2, 0xf5,
  0x3a, 0xfe, 0x52, 0x1b, 0xb9, 0xf7, 0x0f, 0x38, 0xf7, 0xab, 0xe4, 0xd8,
  0x60, 0xa6, 0x0c, 0x7c, 0xc7, 0xa0, 0x8d, 0x87, 0xab, 0xaf, 0xf3, 0x4a,
  0xa6, 0x6a, 0x9b, 0x2b, 0xe7, 0x52, 0xc6, 0xef, 0xe1, 0x85, 0xcf, 0xb1,
  0x8a, 0xab, 0x40, 0x11, 0xd1, 0x1d, 0x99, 0x4e, 0x91, 0x92, 0x5c, 0x72,
  0x06, 0xb3, 0x01, 0xa7, 0x76, 0xe7, 0xb0, 0xd8, 0x6a, 0xf0, 0xed, 0x89,
  0x02, 0x41, 0x00, 0xf1, 0x93, 0x76, 0x90, 0x46, 0xdc, 0x6e, 0x28, 0x37,
  0xb3, 0x23, 0x18, 0xe8, 0x79, 0x70, 0xb9, 0xcb, 0xbb, 0x24, 0xa2, 0x71,
  0x09, 0x88, 0xe1, 0xdb, 0x07, 0xe0, 0x4d, 0x26, 0x39, 0x4e, 0x18, 0xfc,
  0x4f, 0x93, 0xaa, 0x14, 0x6f, 0xfc, 0x0f, 0x92, 0xda, 0x54, 0xcc, 0x63,
  0x52, 0x70, 0x5c, 0xa8, 0x91, 0x79, 0x5f, 0x08, 0xa6, 0x58, 0x2c, 0x53,
  0xb8, 0xc8, 0x72, 0xdb, 0xf1, 0xb8, 0x1f, 0x02, 0x41, 0x00, 0xda, 0xc4,
  0x48, 0x6c, 0x72, 0x49, 0xa8, 0x7e, 0x63, 0x9b, 0xba, 0xee, 0xff, 0x4a,
  0x57, 0xcd, 0x26, 0xf0, 0xc4, 0x6f, 0x52, 0x2f, 0x6a, 0x3f, 0x1e, 0x83,
  0x51, 0xd7, 0x4a, 0x9d, 0xdc, 0x14, 0xf5, 0xe8, 0x41, 0x8b, 0xaf, 0x49,
  0x42, 0x66, 0xec, 0x81, 0x6b, 0xcf, 0x70, 0x30, 0x34, 0x26, 0xba, 0x8d,
  0x27, 0xa7, 0xf4, 0xc5, 0x97, 0x64, 0x61, 0x20, 0xee, 0x84, 0x1f, 0x6d,
  0x53, 0x8b, 0x02, 0x40, 0x69, 0x34, 0x7c, 0x34, 0xf6, 0xf7, 0x36, 0x6e,
  0x03, 0x5b, 0xdb, 0x54, 0x14, 0xa2, 0x16, 0x8a, 0x83, 0x84, 0x1b, 0xbf,
  0x36, 0x95, 0x1d, 0x6c, 0xa6, 0xd3, 0xb6, 0x46, 0x42, 0xf8, 0x3f, 0xdf,
  0xb7, 0xb9, 0xfc, 0x27, 0xdc, 0xc0, 0xac, 0x38, 0x28, 0x0f, 0x37, 0x50,
  0xcf, 0x8c, 0x6e, 0x6c, 0x9b, 0xe8, 0xc6, 0xbf, 0xb1, 0x67, 0xa8, 0x0c,
  0x9d, 0xe5, 0x62, 0x3e, 0x4b, 0x34, 0xe8, 0xa7, 0x02, 0x41, 0x00, 0xc7,
  0xd6, 0x29, 0x3a, 0x37, 0x24, 0x25, 0xf0, 0x5e, 0x59, 0x31, 0x67, 0x84,
  0x78, 0x8a, 0xbf, 0xf2, 0x64, 0x59, 0x6c, 0x3f, 0x2c, 0xe4, 0xe7, 0x07,
  0x9e, 0x79, 0xb2, 0x2a, 0x8d, 0x0d, 0x2f, 0x70, 0x7a, 0x5a, 0xf5, 0x98,
  0x87, 0x59, 0x4a, 0xdf, 0x9c, 0x51, 0xb9, 0x4a, 0x08, 0x1e, 0x7b, 0x8a,
  0x49, 0xcb, 0x01, 0xd7, 0xcc, 0x6f, 0x40, 0xd8, 0xa0, 0xd6, 0x80, 0x86,
  0x9c, 0xbd, 0x85, 0x02, 0x41, 0x00, 0x80, 0x98, 0x16, 0x1f, 0x96, 0x8b,
  0xf2, 0x72, 0x78, 0x9d, 0xb8, 0xa0, 0xcd, 0x30, 0x40, 0x7c, 0x23, 0xf4,
  0x3a, 0x40, 0x66, 0xec, 0xa2, 0x55, 0xb6, 0x16, 0xde, 0x9c, 0x09, 0x9b,
  0x22, 0xd1, 0x17, 0x41, 0xbe, 0x01, 0x59, 0x92, 0xd1, 0x40, 0x70, 0xb1,
  0x1e, 0xa1, 0x18, 0xf9, 0x61, 0x36, 0xb2, 0xd2, 0xa1, 0x35, 0x38, 0x1b,
  0xd1, 0x24, 0x59, 0xa0, 0xab, 0x20, 0x25, 0x81, 0x8c, 0xca,
};
static const char fixed_fingerprint[] =
  "75de11e70436e7a131592d9b9b088dc5c29e1627";
static const char fixed_raw_data[] =
  "471aa8340f6fe6a8eb306aae2041cd7d573cf66a";
static const char fixed_raw_sig[] =
  "70f4338034958e3e9f018cd6109406d4181df0a3bac5a4e342bd055255dd2765"
  "2d9f14cfadf0a0111e001bbcfb6ce88231fee53c0b319867d12216526b46b96d"
  "e901e372c33b3c8e70878f34a5bc73a0ca1bbc5ef8735ce0665621db9919f17b"
  "88f20e1163a3dd5ef0cf343abbc0a6ce600c4033ee3b697cdb0fb6fcf7933676";
static const char fixed_sha256_sig[] =
  "afd960d1521af46f34cc11d6b80866ecdc4e8b1e16de9d5bc678108eaca927fb"
  "c0ab33af8bba46531d9808556d185310940d87d6f9423e37c01d570e8057d436"
  "6b3ddeae3c3a61419ea1ea392d6c1bdbf6971a7ad47a4b7cd505b2028c145c6d"
  "01f69195d2be1f95f0956538c95f7748a333623b4a95533751e1cd832ae72028";
static const char fixed_pub_pem[] =
  "-----BEGIN RSA PUBLIC KEY-----\n"
  "MIGJAoGBAM5wzDVyNbw3k0dcohJwuS7NxuX523eDMpw/Irghv2dSlWn8IN+YOCKH\n"
  "lwC0uFbfXlVnhxiXhbtQyKc6qPJUR4sra7V9q3BKV0OUTsmBl4XWuBFnLMr/HCad\n"
  "3N5qM59hLs+HHAIN/zTGzm8Tkx0xRb13Gjf4zSCy9ISLwN/xJAXVAgMBAAE=\n"
  "-----END RSA PUBLIC KEY-----\n";
static const char fixed_priv_pem[] =
  "-----BEGIN RSA PRIVATE KEY-----\n"
  "MIICXgIBAAKBgQDOcMw1cjW8N5NHXKIScLkuzcbl+dt3gzKcPyK4Ib9nUpVp/CDf\n"
  "mDgih5cAtLhW315VZ4cYl4W7UMinOqjyVEeLK2u1fatwSldDlE7JgZeF1rgRZyzK\n"
  "/xwmndzeajOfYS7PhxwCDf80xs5vE5MdMUW9dxo3+M0gsvSEi8Df8SQF1QIDAQAB\n"
  "AoGBAI4/PxbcuZYVnVAgzjRyo8dSV2kD/2ucZXUwM9Y4utCRIQ9EgcpP8u4oC66a\n"
  "2CJUC4ZBrd8OGUH26iwAyYUg+aH4d6L1Ov5SG7n3Dzj3q+TYYKYMfMegjYerr/NK\n"
  "pmqbK+dSxu/hhc+xiqtAEdEdmU6RklxyBrMBp3bnsNhq8O2JAkEA8ZN2kEbcbig3\n"
  "syMY6Hlwucu7JKJxCYjh2wfgTSY5Thj8T5OqFG/8D5LaVMxjUnBcqJF5XwimWCxT\n"
  "uMhy2/G4HwJBANrESGxySah+Y5u67v9KV80m8MRvUi9qPx6DUddKndwU9ehBi69J\n"
  "QmbsgWvPcDA0JrqNJ6f0xZdkYSDuhB9tU4sCQGk0fDT29zZuA1vbVBSiFoqDhBu/\n"
  "NpUdbKbTtkZC+D/ft7n8J9zArDgoDzdQz4xubJvoxr+xZ6gMneViPks06KcCQQDH\n"
  "1ik6NyQl8F5ZMWeEeIq/8mRZbD8s5OcHnnmyKo0NL3B6WvWYh1lK35xRuUoIHnuK\n"
  "ScsB18xvQNig1oCGnL2FAkEAgJgWH5aL8nJ4nbigzTBAfCP0OkBm7KJVthbenAmb\n"
  "ItEXQb4BWZLRQHCxHqEY+WE2stKhNTgb0SRZoKsgJYGMyg==\n"
  "-----END RSA PRIVATE KEY-----\n";
/* The same RSA key as X.509 SubjectPublicKeyInfo (prefix + PKCS#1). */
static const char spki_prefix[] = "30819f300d06092a864886f70d010101050003818d00";
/* ... and its private half as PKCS#8 PrivateKeyInfo (prefix + PKCS#1). */
static const char pkcs8_prefix[] =
  "30820278020100300d06092a864886f70d010101050004820262";
static const uint8_t ec_spki_der[] = {
  0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
  0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03,
  0x42, 0x00, 0x04, 0x26, 0xef, 0xce, 0xbd, 0x0e, 0xe9, 0xe3, 0x4a, 0x66,
  0x91, 0x87, 0xe1, 0x8b, 0x3a, 0x91, 0x22, 0xb2, 0xf7, 0x33, 0x94, 0x5b,
  0x64, 0x9c, 0xc9, 0xf9, 0xf9, 0x21, 0xe9, 0xf9, 0xda, 0xd8, 0x12, 0x90,
  0x23, 0x8b, 0xde, 0x9c, 0xc7, 0xbb, 0x33, 0x0d, 0x15, 0x0c, 0x67, 0x70,
  0x4d, 0xd2, 0x5a, 0xe7, 0x05, 0x52, 0x05, 0x74, 0x4b, 0x6f, 0x31, 0xbf,
  0x40, 0x70, 0x74, 0x58, 0x72, 0xd0, 0xe6,
};
static const uint8_t ec_priv_der[] = {
  0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x30, 0x39, 0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d,
  0x03, 0x01, 0x07, 0xa1, 0x44, 0x03, 0x42, 0x00, 0x04, 0x26, 0xef, 0xce,
  0xbd, 0x0e, 0xe9, 0xe3, 0x4a, 0x66, 0x91, 0x87, 0xe1, 0x8b, 0x3a, 0x91,
  0x22, 0xb2, 0xf7, 0x33, 0x94, 0x5b, 0x64, 0x9c, 0xc9, 0xf9, 0xf9, 0x21,
  0xe9, 0xf9, 0xda, 0xd8, 0x12, 0x90, 0x23, 0x8b, 0xde, 0x9c, 0xc7, 0xbb,
  0x33, 0x0d, 0x15, 0x0c, 0x67, 0x70, 0x4d, 0xd2, 0x5a, 0xe7, 0x05, 0x52,
  0x05, 0x74, 0x4b, 0x6f, 0x31, 0xbf, 0x40, 0x70, 0x74, 0x58, 0x72, 0xd0,
  0xe6,
};

START_TEST(test_rsa_fixed_key)
{
  uint8_t fp[20], data[20], sig[128];
  size_t siglen, len;
  uint8_t *der;

  crypt_rsa_t *priv = crypt_rsa_from_private_der(fixed_priv_der,
                                                 sizeof(fixed_priv_der));
  crypt_rsa_t *pub = crypt_rsa_from_public_der(fixed_pub_der,
                                               sizeof(fixed_pub_der));
  ck_assert_ptr_nonnull(priv);
  ck_assert_ptr_nonnull(pub);
  ck_assert_int_eq(crypt_rsa_bits(priv), 1024);
  ck_assert_int_eq(crypt_rsa_bits(pub), 1024);
  ck_assert_int_eq(crypt_rsa_has_private(priv), 1);
  ck_assert_int_eq(crypt_rsa_has_private(pub), 0);
  ck_assert_int_eq(crypt_rsa_public_eq(priv, pub), 1);

  /* Fingerprint computed independently by crypt_rsa.py. */
  ck_assert_int_eq(crypt_rsa_fingerprint(pub, fp), 0);
  assert_hex_eq(fp, 20, fixed_fingerprint);
  ck_assert_int_eq(crypt_rsa_fingerprint(priv, fp), 0);
  assert_hex_eq(fp, 20, fixed_fingerprint);

  /* Encodings reproduce the reference bytes exactly. */
  ck_assert_int_eq(crypt_rsa_public_der(priv, &der, &len), 0);
  ck_assert_uint_eq(len, sizeof(fixed_pub_der));
  ck_assert_mem_eq(der, fixed_pub_der, len);
  free(der);
  ck_assert_int_eq(crypt_rsa_private_der(priv, &der, &len), 0);
  ck_assert_uint_eq(len, sizeof(fixed_priv_der));
  ck_assert_mem_eq(der, fixed_priv_der, len);
  free(der);
  ck_assert_int_eq(crypt_rsa_private_der(pub, &der, &len), -1);
  ck_assert_ptr_null(der);
  char *pem = crypt_rsa_public_pem(pub);
  ck_assert_str_eq(pem, fixed_pub_pem);
  free(pem);

  /* Raw PKCS#1 v1.5 signing is deterministic: python computed it with
   * integer arithmetic. */
  unhex_to(data, 20, fixed_raw_data);
  ck_assert_int_eq(crypt_rsa_sign_raw(priv, data, 20, sig, &siglen), 0);
  ck_assert_uint_eq(siglen, 128);
  assert_hex_eq(sig, 128, fixed_raw_sig);
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 20, sig, 128), 0);
  ck_assert_int_eq(crypt_rsa_sign_raw(pub, data, 20, sig, &siglen), -1);

  /* RSASSA-PKCS1-v1_5 with SHA-256 (cryptography's signature). */
  ck_assert_int_eq(crypt_rsa_sign_sha256(priv, (const uint8_t *)"pctor", 5,
                                         sig, &siglen), 0);
  ck_assert_uint_eq(siglen, 128);
  assert_hex_eq(sig, 128, fixed_sha256_sig);
  ck_assert_int_eq(crypt_rsa_verify_sha256(pub, (const uint8_t *)"pctor", 5,
                                           sig, 128), 0);
  ck_assert_int_eq(crypt_rsa_verify_sha256(pub, (const uint8_t *)"pctoR", 5,
                                           sig, 128), -1);
  /* A SHA-256 signature is not a raw signature of the digest (no
   * DigestInfo in the raw scheme). */
  uint8_t h[32];
  crypt_sha256(h, "pctor", 5);
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, h, 32, sig, 128), -1);

  /* PEM inputs. */
  crypt_rsa_t *k = crypt_rsa_from_pem(fixed_pub_pem, strlen(fixed_pub_pem), 0);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(crypt_rsa_public_eq(k, pub), 1);
  ck_assert_int_eq(crypt_rsa_has_private(k), 0);
  crypt_rsa_free(k);
  k = crypt_rsa_from_pem(fixed_priv_pem, strlen(fixed_priv_pem), 1);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(crypt_rsa_has_private(k), 1);
  ck_assert_int_eq(crypt_rsa_sign_raw(k, data, 20, sig, &siglen), 0);
  assert_hex_eq(sig, 128, fixed_raw_sig);
  crypt_rsa_free(k);
  /* Wrong label either way. */
  ck_assert_ptr_null(crypt_rsa_from_pem(fixed_pub_pem, strlen(fixed_pub_pem), 1));
  ck_assert_ptr_null(crypt_rsa_from_pem(fixed_priv_pem, strlen(fixed_priv_pem), 0));
  /* Length bounds the input: a PEM cut before its END line fails. */
  ck_assert_ptr_null(crypt_rsa_from_pem(fixed_pub_pem, strlen(fixed_pub_pem) - 10, 0));
  ck_assert_ptr_null(crypt_rsa_from_pem("garbage", 7, 0));
  ck_assert_ptr_null(crypt_rsa_from_pem("", 0, 0));

  /* dup shares the key. */
  k = crypt_rsa_dup(priv);
  crypt_rsa_free(priv);
  ck_assert_ptr_null(priv);
  ck_assert_int_eq(crypt_rsa_sign_raw(k, data, 20, sig, &siglen), 0);
  assert_hex_eq(sig, 128, fixed_raw_sig);
  ck_assert_ptr_nonnull(crypt_rsa_evp_pkey_(k));
  crypt_rsa_free(k);
  crypt_rsa_free(pub);
  crypt_rsa_free(pub);
}
END_TEST

START_TEST(test_rsa_malformed)
{
  uint8_t buf[700];
  size_t n;

  /* Every truncation fails. */
  for (size_t len = 0; len < sizeof(fixed_pub_der); len++)
    ck_assert_ptr_null(crypt_rsa_from_public_der(fixed_pub_der, len));
  for (size_t len = 0; len < sizeof(fixed_priv_der); len += 7)
    ck_assert_ptr_null(crypt_rsa_from_private_der(fixed_priv_der, len));
  /* Trailing bytes fail. */
  memcpy(buf, fixed_pub_der, sizeof(fixed_pub_der));
  buf[sizeof(fixed_pub_der)] = 0;
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, sizeof(fixed_pub_der) + 1));
  memcpy(buf, fixed_priv_der, sizeof(fixed_priv_der));
  buf[sizeof(fixed_priv_der)] = 0x05;
  ck_assert_ptr_null(crypt_rsa_from_private_der(buf, sizeof(fixed_priv_der) + 1));
  /* Public and private formats are not interchangeable. */
  ck_assert_ptr_null(crypt_rsa_from_public_der(fixed_priv_der, sizeof(fixed_priv_der)));
  ck_assert_ptr_null(crypt_rsa_from_private_der(fixed_pub_der, sizeof(fixed_pub_der)));
  /* SubjectPublicKeyInfo is not PKCS#1; nor are EC keys. */
  uint8_t *pre = unhex(spki_prefix, &n);
  memcpy(buf, pre, n);
  memcpy(buf + n, fixed_pub_der, sizeof(fixed_pub_der));
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, n + sizeof(fixed_pub_der)));
  free(pre);
  pre = unhex(pkcs8_prefix, &n);
  ck_assert_uint_le(n + sizeof(fixed_priv_der), sizeof(buf));
  memcpy(buf, pre, n);
  memcpy(buf + n, fixed_priv_der, sizeof(fixed_priv_der));
  ck_assert_ptr_null(crypt_rsa_from_private_der(buf, n + sizeof(fixed_priv_der)));
  free(pre);
  ck_assert_ptr_null(crypt_rsa_from_public_der(ec_spki_der, sizeof(ec_spki_der)));
  ck_assert_ptr_null(crypt_rsa_from_private_der(ec_priv_der, sizeof(ec_priv_der)));
  /* Non-canonical (BER) length: 30 82 00 89 instead of 30 81 89. */
  buf[0] = 0x30;
  buf[1] = 0x82;
  buf[2] = 0x00;
  buf[3] = 0x89;
  memcpy(buf + 4, fixed_pub_der + 3, sizeof(fixed_pub_der) - 3);
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, sizeof(fixed_pub_der) + 1));
  /* An even modulus (last modulus byte sits before "02 03 01 00 01"). */
  memcpy(buf, fixed_pub_der, sizeof(fixed_pub_der));
  buf[sizeof(fixed_pub_der) - 6] ^= 0x01;
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, sizeof(fixed_pub_der)));
  /* Exponent 65536 (even). */
  memcpy(buf, fixed_pub_der, sizeof(fixed_pub_der));
  buf[sizeof(fixed_pub_der) - 1] = 0x00;
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, sizeof(fixed_pub_der)));
  /* A private key whose components do not match (one byte of d). */
  memcpy(buf, fixed_priv_der, sizeof(fixed_priv_der));
  buf[160] ^= 0x40;
  ck_assert_ptr_null(crypt_rsa_from_private_der(buf, sizeof(fixed_priv_der)));
  /* Garbage. */
  memset(buf, 0x30, 200);
  ck_assert_ptr_null(crypt_rsa_from_public_der(buf, 200));
  ck_assert_ptr_null(crypt_rsa_from_private_der(buf, 200));
}
END_TEST

/* tor's --hash-password (RFC 2440 S2K, count byte 0x60): the vector is
 * tor 0.4.9's own output for "foo" (checked with Python's hashlib too). */
/* TORBOX00 boxes with scrypt (N = 2^10, r = 8, p = 2) and PBKDF2 (2^10
 * iterations) of the bytes 0..63 under "pctor test passphrase", from
 * tests/vectors/pwbox_ref.py (hashlib, cryptography). */
static const char PWBOX_SCRYPT_HEX[] =
    "544f52424f5830301302101112131415161718191a1b1c1d1e1f0a3140414243"
    "4445464748494a4b4c4d4e4f8c202521ab6d50d4e578083dd6cbe74e8f52dda1"
    "aeffea7e87076f7d07ba6ac8a849d94fd340ee0d895984f5240bca702540f199"
    "bbd65c2ea94d1d48f05dc23163d0990ac257966cb2681382cc48b8255ac5940d"
    "687868d85e6ace4131dad0be424661610cae8e23979d6e9f87960d50298d454a"
    "045b1eee4e9f84116d41d2523b3a7ab653d2edccc4e249a4d054b90fdb5cadfa"
    "e0ac512887a363cdd7a04dc9";
static const char PWBOX_PBKDF2_HEX[] =
    "544f52424f5830301201101112131415161718191a1b1c1d1e1f0a4041424344"
    "45464748494a4b4c4d4e4f6f6dccaf9a8bdb5f1c813d71835f43d1dbe4d3fcde"
    "df21590ccb192aca7daa02b533a2b8094e45fdffee46bbeb60533abad6964194"
    "3c96e25921bfffb213f34eb66e30b1424ec8b575e1eb80eb34ea54f9eb6be5a6"
    "ca7fd9520bfa9d7611511533b3f3bfc1aa298d2f6cddb244bd64194b0a3ccc0d"
    "20afde3dc2ac53bdd8f756e0c8ccc867655d1a3200045a1cbdb810448691306f"
    "3354de78f5e666174e3fa5";

START_TEST(test_pwbox)
{
  /* Round trip, wrong passphrase, and bounded refusal of bad boxes. The
   * interop vector (a box made by tor) is in check_router_keys. */
  static const uint8_t msg[] = "sixty-four bytes of secret, more or less";
  uint8_t *box = NULL, *out = NULL;
  size_t box_len = 0, out_len = 0;
  const char *why = NULL;
  ck_assert_int_eq(crypt_pwbox_seal(&box, &box_len, msg, sizeof(msg), "pw",
                                    2), 0);
  /* magic, H = 10, type 0 specifier with count 0x60, iv, 128, mac */
  ck_assert_uint_eq(box_len, 8 + 1 + 10 + 16 + 128 + 32);
  ck_assert_mem_eq(box, "TORBOX00\x0a\x00", 10);
  ck_assert_uint_eq(box[18], 0x60);
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, box, box_len, "pw", 2,
                                    &why), PWBOX_OK);
  ck_assert_uint_eq(out_len, sizeof(msg));
  ck_assert_mem_eq(out, msg, sizeof(msg));
  free(out);
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, box, box_len, "pX", 2,
                                    &why), PWBOX_BAD_PASSPHRASE);
  ck_assert_ptr_null(out);
  box[box_len - 40] ^= 1; /* ciphertext: the MAC catches it */
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, box, box_len, "pw", 2,
                                    &why), PWBOX_BAD_PASSPHRASE);
  box[box_len - 40] ^= 1;
  for (size_t n = 0; n < 8 + 1 + 10 + 16 + 32 + 4; n++)
    ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, box, n, "pw", 2, &why),
                     PWBOX_CORRUPT);
  /* An scrypt specifier asking for 1 GiB is refused uncomputed. */
  uint8_t bad[8 + 1 + 19 + 16 + 128 + 32];
  memset(bad, 0, sizeof(bad));
  memcpy(bad, "TORBOX00", 8);
  bad[8] = 19;
  bad[9] = 2;
  bad[9 + 17] = 20;   /* N = 2^20: 1 GiB */
  bad[9 + 18] = 0x31; /* r = 8, p = 2 */
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, bad, sizeof(bad), "pw",
                                    2, &why), PWBOX_CORRUPT);
  ck_assert_str_eq(why, "scrypt parameters out of bounds");
  /* A small scrypt box (N = 2^10) is computed: only the MAC fails. */
  bad[9 + 17] = 10;
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, bad, sizeof(bad), "pw",
                                    2, &why), PWBOX_BAD_PASSPHRASE);
  /* The reference boxes open to the bytes 0..63. */
  const char *refs[] = {PWBOX_SCRYPT_HEX, PWBOX_PBKDF2_HEX};
  for (int i = 0; i < 2; i++) {
    uint8_t ref[256];
    size_t rl = strlen(refs[i]) / 2;
    ck_assert_uint_le(rl, sizeof(ref));
    ck_assert_int_eq(base16_decode(ref, sizeof(ref), refs[i], strlen(refs[i])),
                     (int)rl);
    ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, ref, rl,
                                      "pctor test passphrase", 21, &why),
                     PWBOX_OK);
    ck_assert_uint_eq(out_len, 64);
    for (int k = 0; k < 64; k++)
      ck_assert_uint_eq(out[k], (unsigned)k);
    free(out);
    ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, ref, rl, "pctor", 5,
                                      &why), PWBOX_BAD_PASSPHRASE);
  }
  bad[9] = 7; /* unknown type */
  ck_assert_int_eq(crypt_pwbox_open(&out, &out_len, bad, sizeof(bad), "pw",
                                    2, &why), PWBOX_CORRUPT);
  free(box);
}
END_TEST

START_TEST(test_s2k_hash_password)
{
  static const uint8_t salt[8] = {0xE9, 0x69, 0x17, 0x5B,
                                  0xBF, 0x77, 0x53, 0xAD};
  char *h = crypt_hash_password("foo", salt);
  ck_assert_str_eq(h, "16:E969175BBF7753AD60C3CEB78DC631E2E0D6EE972CE0AB"
                      "353DDB1445DD");
  free(h);
  /* A random salt each time, same shape. */
  char *a = crypt_hash_password("foo", NULL);
  char *b = crypt_hash_password("foo", NULL);
  ck_assert_uint_eq(strlen(a), 3 + 58);
  ck_assert(strncmp(a, "16:", 3) == 0);
  ck_assert_str_ne(a, b);
  ck_assert(!strncmp(a + 3 + 16, "60", 2));
  free(a);
  free(b);
  /* A secret longer than the count is hashed once, whole. */
  uint8_t d1[20], d2[20];
  crypt_s2k_sha1(d1, salt, 0x00, "x", 1); /* 1024 octets */
  crypt_s2k_sha1(d2, salt, 0x00, "x", 1);
  ck_assert(!memcmp(d1, d2, 20));
}
END_TEST

START_TEST(test_rsa_generate)
{
  uint8_t *der, *der2, fp[20], want_fp[20], data[20], sig[128], bad[128];
  size_t len, len2, siglen;

  crypt_rsa_t *k = crypt_rsa_generate(1024);
  ck_assert_int_eq(crypt_rsa_bits(k), 1024);
  ck_assert_int_eq(crypt_rsa_has_private(k), 1);

  /* Public DER round trip; exponent 65537 ends the DER. */
  ck_assert_int_eq(crypt_rsa_public_der(k, &der, &len), 0);
  ck_assert_uint_eq(len, 140);
  ck_assert_mem_eq(der + len - 5, "\x02\x03\x01\x00\x01", 5);
  crypt_rsa_t *pub = crypt_rsa_from_public_der(der, len);
  ck_assert_ptr_nonnull(pub);
  ck_assert_int_eq(crypt_rsa_has_private(pub), 0);
  ck_assert_int_eq(crypt_rsa_public_eq(k, pub), 1);
  ck_assert_int_eq(crypt_rsa_public_der(pub, &der2, &len2), 0);
  ck_assert_uint_eq(len2, len);
  ck_assert_mem_eq(der2, der, len);
  free(der2);

  /* Fingerprint = SHA-1 of the public DER. */
  crypt_sha1(want_fp, der, len);
  ck_assert_int_eq(crypt_rsa_fingerprint(k, fp), 0);
  ck_assert_mem_eq(fp, want_fp, 20);
  free(der);

  /* Private DER round trip. */
  ck_assert_int_eq(crypt_rsa_private_der(k, &der, &len), 0);
  crypt_rsa_t *priv = crypt_rsa_from_private_der(der, len);
  ck_assert_ptr_nonnull(priv);
  ck_assert_int_eq(crypt_rsa_public_eq(priv, k), 1);
  ck_assert_int_eq(crypt_rsa_private_der(priv, &der2, &len2), 0);
  ck_assert_uint_eq(len2, len);
  ck_assert_mem_eq(der2, der, len);
  free(der);
  free(der2);

  /* PEM: Tor's layout and a round trip. */
  char *pem = crypt_rsa_public_pem(k);
  ck_assert_ptr_nonnull(pem);
  ck_assert_int_eq(strncmp(pem, "-----BEGIN RSA PUBLIC KEY-----\n", 31), 0);
  const char *endl = "-----END RSA PUBLIC KEY-----\n";
  ck_assert_str_eq(pem + strlen(pem) - strlen(endl), endl);
  int nlines = 0;
  for (const char *p = pem + 31; strncmp(p, "-----END", 8) != 0; nlines++) {
    const char *nl = strchr(p, '\n');
    ck_assert_ptr_nonnull(nl);
    /* 140 bytes = 188 base64 chars: 64 + 64 + 60 */
    ck_assert_int_eq((int)(nl - p), nlines < 2 ? 64 : 60);
    p = nl + 1;
  }
  ck_assert_int_eq(nlines, 3);
  crypt_rsa_t *frompem = crypt_rsa_from_pem(pem, strlen(pem), 0);
  ck_assert_ptr_nonnull(frompem);
  ck_assert_int_eq(crypt_rsa_public_eq(frompem, k), 1);
  free(pem);

  /* Raw signatures: sign with the re-imported private key, verify with
   * the original and the public-only copy. */
  crypt_rand(data, sizeof(data));
  ck_assert_int_eq(crypt_rsa_sign_raw(priv, data, 20, sig, &siglen), 0);
  ck_assert_uint_eq(siglen, 128);
  ck_assert_int_eq(crypt_rsa_verify_raw(k, data, 20, sig, siglen), 0);
  ck_assert_int_eq(crypt_rsa_verify_raw(frompem, data, 20, sig, siglen), 0);
  /* Tampering. */
  memcpy(bad, sig, 128);
  bad[77] ^= 0x04;
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 20, bad, 128), -1);
  data[19] ^= 1;
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 20, sig, 128), -1);
  data[19] ^= 1;
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 19, sig, 128), -1);
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 20, sig, 127), -1);
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, data, 20, sig + 1, 127), -1);
  /* Another key's signature fails. */
  crypt_rsa_t *other = crypt_rsa_from_public_der(fixed_pub_der,
                                                 sizeof(fixed_pub_der));
  ck_assert_int_eq(crypt_rsa_public_eq(other, k), 0);
  ck_assert_int_eq(crypt_rsa_verify_raw(other, data, 20, sig, 128), -1);
  /* Data too long for type-1 padding (> k - 11 bytes). */
  uint8_t big[118];
  memset(big, 1, sizeof(big));
  ck_assert_int_eq(crypt_rsa_sign_raw(k, big, 117, sig, &siglen), 0);
  ck_assert_int_eq(crypt_rsa_verify_raw(pub, big, 117, sig, siglen), 0);
  ck_assert_int_eq(crypt_rsa_sign_raw(k, big, 118, sig, &siglen), -1);

  crypt_rsa_free(other);
  crypt_rsa_free(frompem);
  crypt_rsa_free(priv);
  crypt_rsa_free(pub);
  crypt_rsa_free(k);
  ck_assert_ptr_null(k);
}
END_TEST

Suite *
suite_crypt(void)
{
  Suite *s = suite_create("crypt");
  TCase *tc = tcase_create("symmetric");
  tcase_add_test(tc, test_init);
  tcase_add_test(tc, test_hashes);
  tcase_add_test(tc, test_shake256);
  tcase_add_test(tc, test_hmac_sha256);
  tcase_add_test(tc, test_aes128_ctr_nist);
  tcase_add_test(tc, test_aes_ctr_misc);
  tcase_add_test(tc, test_aes128_ctr_impls);
  tcase_add_test(tc, test_aes128_ctr_nist_evp);
  tcase_add_test(tc, test_hkdf);
  tcase_add_test(tc, test_kdf_tor);
  tcase_add_test(tc, test_digest_incremental);
  tcase_add_test(tc, test_rand);
  suite_add_tcase(s, tc);

  tc = tcase_create("curve25519");
  tcase_add_test(tc, test_x25519);
  tcase_add_test(tc, test_x25519_base);
  tcase_add_test(tc, test_ed25519_rfc8032);
  tcase_add_test(tc, test_ed25519_roundtrip);
  suite_add_tcase(s, tc);

  tc = tcase_create("rsa");
  tcase_set_timeout(tc, 30); /* key generation under sanitizers */
  tcase_add_test(tc, test_rsa_fixed_key);
  tcase_add_test(tc, test_rsa_malformed);
  tcase_add_test(tc, test_rsa_generate);
  tcase_add_test(tc, test_s2k_hash_password);
  tcase_add_test(tc, test_pwbox);
  suite_add_tcase(s, tc);
  return s;
}
