/* SPDX-License-Identifier: BSD-3-Clause */
/* check_encoding.c -- unit tests for lib/encoding: base64 and base16
 * against the RFC 4648 section 10 vectors and Python's base64 module,
 * round trips of random data, and malformed input. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"

Suite *suite_encoding(void);

/* RFC 4648, section 10. */
static const struct {
  const char *raw, *b64, *b64_nopad, *b16;
} rfc_vectors[] = {
  {"", "", "", ""},
  {"f", "Zg==", "Zg", "66"},
  {"fo", "Zm8=", "Zm8", "666F"},
  {"foo", "Zm9v", "Zm9v", "666F6F"},
  {"foob", "Zm9vYg==", "Zm9vYg", "666F6F62"},
  {"fooba", "Zm9vYmE=", "Zm9vYmE", "666F6F6261"},
  {"foobar", "Zm9vYmFy", "Zm9vYmFy", "666F6F626172"},
};
#define N_RFC (sizeof(rfc_vectors) / sizeof(rfc_vectors[0]))

/* Decode a NUL-terminated string into buf (size cap). */
static long
b64d(uint8_t *buf, size_t cap, const char *s)
{
  return base64_decode(buf, cap, s, strlen(s));
}

START_TEST(test_base64_rfc)
{
  char out[64];
  uint8_t raw[64];
  for (size_t i = 0; i < N_RFC; i++) {
    const uint8_t *r = (const uint8_t *)rfc_vectors[i].raw;
    size_t rl = strlen(rfc_vectors[i].raw);

    ck_assert_uint_eq(base64_encoded_len(rl, 0), strlen(rfc_vectors[i].b64));
    ck_assert_int_eq(base64_encode(out, sizeof(out), r, rl, 0),
                     (long)strlen(rfc_vectors[i].b64));
    ck_assert_str_eq(out, rfc_vectors[i].b64);

    ck_assert_uint_eq(base64_encoded_len(rl, BASE64_NOPAD),
                      strlen(rfc_vectors[i].b64_nopad));
    ck_assert_int_eq(base64_encode(out, sizeof(out), r, rl, BASE64_NOPAD),
                     (long)strlen(rfc_vectors[i].b64_nopad));
    ck_assert_str_eq(out, rfc_vectors[i].b64_nopad);

    /* Both forms decode. */
    memset(raw, 0xee, sizeof(raw));
    ck_assert_int_eq(b64d(raw, sizeof(raw), rfc_vectors[i].b64), (long)rl);
    ck_assert(memcmp(raw, r, rl) == 0);
    ck_assert_int_eq(raw[rl], 0xee);
    ck_assert_int_eq(b64d(raw, sizeof(raw), rfc_vectors[i].b64_nopad),
                     (long)rl);
    ck_assert(memcmp(raw, r, rl) == 0);
    /* The bound is exact without padding. */
    ck_assert_uint_eq(base64_decoded_len_max(strlen(rfc_vectors[i].b64_nopad)),
                      rl);
    ck_assert_uint_ge(base64_decoded_len_max(strlen(rfc_vectors[i].b64)), rl);
  }
}
END_TEST

START_TEST(test_base64_alphabet)
{
  /* The last two characters of the standard alphabet ('+', '/'), not the
   * URL-safe ones. Vector from Python's base64.b64encode. */
  const uint8_t raw[3] = {0xfb, 0xff, 0xbf};
  char out[8];
  uint8_t back[3];
  ck_assert_int_eq(base64_encode(out, sizeof(out), raw, 3, 0), 4);
  ck_assert_str_eq(out, "+/+/");
  ck_assert_int_eq(b64d(back, sizeof(back), "+/+/"), 3);
  ck_assert(memcmp(back, raw, 3) == 0);
  ck_assert_int_eq(b64d(back, sizeof(back), "-_-_"), BASE64_ERR_INVALID);
}
END_TEST

START_TEST(test_base64_multiline)
{
  /* bytes 0..99, from Python: base64.b64encode then 64-character lines. */
  const char *want =
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v\n"
    "MDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5f\n"
    "YGFiYw==\n";
  uint8_t raw[100], back[100];
  char out[200];
  for (int i = 0; i < 100; i++)
    raw[i] = (uint8_t)i;
  ck_assert_uint_eq(base64_encoded_len(100, BASE64_MULTILINE), strlen(want));
  ck_assert_int_eq(base64_encode(out, sizeof(out), raw, 100, BASE64_MULTILINE),
                   (long)strlen(want));
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(b64d(back, sizeof(back), want), 100);
  ck_assert(memcmp(back, raw, 100) == 0);

  /* Exactly 48 bytes = 64 characters: one line, one newline. */
  const char *want48 =
    "AwoRGB8mLTQ7QklQV15lbHN6gYiPlp2kq7K5wMfO1dzj6vH4/wYNFBsiKTA3PkVM\n";
  for (int i = 0; i < 48; i++)
    raw[i] = (uint8_t)((i * 7 + 3) & 255);
  ck_assert_int_eq(base64_encode(out, sizeof(out), raw, 48, BASE64_MULTILINE),
                   65);
  ck_assert_str_eq(out, want48);
  /* Multiline without padding. */
  ck_assert_int_eq(base64_encode(out, sizeof(out), raw, 1,
                                 BASE64_MULTILINE | BASE64_NOPAD), 3);
  ck_assert_str_eq(out, "Aw\n");
  /* Empty input: no newline at all. */
  ck_assert_int_eq(base64_encode(out, sizeof(out), raw, 0, BASE64_MULTILINE),
                   0);
  ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_base64_encode_space)
{
  const uint8_t raw[6] = "foobar";
  char out[9];
  /* Needs 8 characters + NUL. */
  memset(out, 'x', sizeof(out));
  ck_assert_int_eq(base64_encode(out, 8, raw, 6, 0), BASE64_ERR_SPACE);
  ck_assert_int_eq(out[0], 'x');
  ck_assert_int_eq(base64_encode(out, 0, raw, 0, 0), BASE64_ERR_SPACE);
  ck_assert_int_eq(base64_encode(out, 9, raw, 6, 0), 8);
  ck_assert_str_eq(out, "Zm9vYmFy");
}
END_TEST

START_TEST(test_base64_decode_whitespace)
{
  uint8_t raw[16];
  ck_assert_int_eq(b64d(raw, sizeof(raw), " Zm9v\r\nYm\tFy \n"), 6);
  ck_assert(memcmp(raw, "foobar", 6) == 0);
  ck_assert_int_eq(b64d(raw, sizeof(raw), "Zm9vYg=\n="), 4);
  ck_assert(memcmp(raw, "foob", 4) == 0);
  ck_assert_int_eq(b64d(raw, sizeof(raw), "Zm9vYg==\n\n"), 4);
  ck_assert_int_eq(b64d(raw, sizeof(raw), "  \n"), 0);
  ck_assert_int_eq(b64d(raw, sizeof(raw), ""), 0);
  /* Bits below the last byte are ignored ("Zh" has low bits set). */
  ck_assert_int_eq(b64d(raw, sizeof(raw), "Zh=="), 1);
  ck_assert_int_eq(raw[0], 'f');
  /* Length given explicitly: the NUL and what follows are not read. */
  ck_assert_int_eq(base64_decode(raw, sizeof(raw), "Zm9v\0!!", 4), 3);
}
END_TEST

START_TEST(test_base64_decode_malformed)
{
  uint8_t raw[32];
  const char *bad[] = {
    "Z",          /* one character in the last group */
    "Zm9vY",      /* ditto after a whole group */
    "Zm9vY===",   /* padding cannot fix that */
    "Zg=",        /* incomplete padding */
    "Zm8==",      /* too much padding */
    "Zm9v=",      /* padding after a whole group */
    "Zm9v====",
    "=",
    "====",
    "Zg==Zg==",   /* data after padding */
    "Zg=a",
    "Zm9v!Ym9v",  /* character outside the alphabet */
    "Zm9v.",
    "Zm9v-",
    "Zm9v_",
    "Zm9v\x80",
    "Zm9v\xff",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    long r = b64d(raw, sizeof(raw), bad[i]);
    if (r != BASE64_ERR_INVALID)
      ck_abort_msg("\"%s\" decoded to %ld", bad[i], r);
  }
  /* An embedded NUL is not base64 either. */
  ck_assert_int_eq(base64_decode(raw, sizeof(raw), "Zm\0v", 4),
                   BASE64_ERR_INVALID);
}
END_TEST

START_TEST(test_base64_decode_space)
{
  uint8_t raw[8];
  /* "foobar" needs 6 bytes; 5 is too few, for each partial case. */
  memset(raw, 0xee, sizeof(raw));
  ck_assert_int_eq(b64d(raw, 5, "Zm9vYmFy"), BASE64_ERR_SPACE);
  ck_assert_int_eq(raw[5], 0xee);
  ck_assert_int_eq(b64d(raw, 6, "Zm9vYmFy"), 6);
  memset(raw, 0xee, sizeof(raw));
  ck_assert_int_eq(b64d(raw, 4, "Zm9vYmE="), BASE64_ERR_SPACE);
  ck_assert_int_eq(raw[4], 0xee);
  ck_assert_int_eq(b64d(raw, 5, "Zm9vYmE="), 5);
  ck_assert_int_eq(b64d(raw, 3, "Zm9vYg"), BASE64_ERR_SPACE);
  ck_assert_int_eq(raw[3], 'b'); /* left from the previous call */
  ck_assert_int_eq(b64d(raw, 0, "Zg"), BASE64_ERR_SPACE);
  ck_assert_int_eq(b64d(raw, 0, ""), 0);
  /* A 32-byte key written as 43 unpadded characters fits 32 bytes
   * exactly, as does its padded form. */
  uint8_t key[32], back[32];
  char enc[64];
  for (int i = 0; i < 32; i++)
    key[i] = (uint8_t)(0xa0 + i);
  ck_assert_int_eq(base64_encode(enc, sizeof(enc), key, 32, BASE64_NOPAD), 43);
  ck_assert_uint_eq(base64_decoded_len_max(43), 32);
  ck_assert_int_eq(b64d(back, sizeof(back), enc), 32);
  ck_assert(memcmp(back, key, 32) == 0);
  ck_assert_int_eq(base64_encode(enc, sizeof(enc), key, 32, 0), 44);
  ck_assert_int_eq(b64d(back, sizeof(back), enc), 32);
  ck_assert_int_eq(b64d(back, 31, enc), BASE64_ERR_SPACE);
}
END_TEST

START_TEST(test_base64_roundtrip)
{
  uint8_t raw[300], back[300];
  char enc[500];
  uint32_t x = 12345;
  for (size_t len = 0; len <= sizeof(raw); len++) {
    for (size_t i = 0; i < len; i++) {
      x = x * 1103515245u + 12345u;
      raw[i] = (uint8_t)(x >> 16);
    }
    for (int flags = 0; flags < 4; flags++) {
      long n = base64_encode(enc, sizeof(enc), raw, len, flags);
      if (n < 0 || (size_t)n != base64_encoded_len(len, flags) ||
          strlen(enc) != (size_t)n)
        ck_abort_msg("encode len %zu flags %d -> %ld", len, flags, n);
      if (base64_decoded_len_max((size_t)n) < len)
        ck_abort_msg("bound too small for len %zu", len);
      long m = base64_decode(back, len, enc, (size_t)n);
      if (m != (long)len || memcmp(back, raw, len) != 0)
        ck_abort_msg("round trip len %zu flags %d -> %ld", len, flags, m);
    }
  }
}
END_TEST

START_TEST(test_base16_rfc)
{
  char out[64];
  uint8_t raw[32];
  for (size_t i = 0; i < N_RFC; i++) {
    const uint8_t *r = (const uint8_t *)rfc_vectors[i].raw;
    size_t rl = strlen(rfc_vectors[i].raw);
    ck_assert_int_eq(base16_encode(out, sizeof(out), r, rl, BASE16_UPPER),
                     (long)(2 * rl));
    ck_assert_str_eq(out, rfc_vectors[i].b16);
    memset(raw, 0xee, sizeof(raw));
    ck_assert_int_eq(base16_decode(raw, sizeof(raw), rfc_vectors[i].b16,
                                   2 * rl),
                     (long)rl);
    ck_assert(memcmp(raw, r, rl) == 0);
    ck_assert_int_eq(raw[rl], 0xee);
  }
}
END_TEST

START_TEST(test_base16_case_and_bytes)
{
  uint8_t all[256], back[256];
  char out[513];
  for (int i = 0; i < 256; i++)
    all[i] = (uint8_t)i;
  ck_assert_int_eq(base16_encode(out, sizeof(out), all, 256, BASE16_LOWER),
                   512);
  ck_assert(strncmp(out, "000102", 6) == 0);
  ck_assert(strncmp(out + 2 * 0xab, "abac", 4) == 0);
  ck_assert_str_eq(out + 508, "feff");
  ck_assert_int_eq(base16_decode(back, sizeof(back), out, 512), 256);
  ck_assert(memcmp(back, all, 256) == 0);

  ck_assert_int_eq(base16_encode(out, sizeof(out), all, 256, BASE16_UPPER),
                   512);
  ck_assert(strncmp(out + 2 * 0xab, "ABAC", 4) == 0);
  ck_assert_int_eq(base16_decode(back, sizeof(back), out, 512), 256);
  ck_assert(memcmp(back, all, 256) == 0);

  /* Mixed case decodes. */
  uint8_t b[4];
  ck_assert_int_eq(base16_decode(b, sizeof(b), "aBcDeF09", 8), 4);
  ck_assert_int_eq(b[0], 0xab);
  ck_assert_int_eq(b[1], 0xcd);
  ck_assert_int_eq(b[2], 0xef);
  ck_assert_int_eq(b[3], 0x09);
}
END_TEST

START_TEST(test_base16_malformed)
{
  uint8_t b[8];
  char out[8];
  const uint8_t raw[4] = {1, 2, 3, 4};
  memset(b, 0xee, sizeof(b));
  ck_assert_int_eq(base16_decode(b, sizeof(b), "abc", 3), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "a", 1), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "0g", 2), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "G0", 2), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "0 ", 2), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), " 0", 2), BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "0x12", 4),
                   BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "12\0" "3", 4),
                   BASE16_ERR_INVALID);
  ck_assert_int_eq(base16_decode(b, sizeof(b), "/:@`", 4),
                   BASE16_ERR_INVALID);
  /* Too small a destination: nothing written. */
  memset(b, 0xee, sizeof(b));
  ck_assert_int_eq(base16_decode(b, 1, "1234", 4), BASE16_ERR_SPACE);
  ck_assert_int_eq(b[0], 0xee);
  ck_assert_int_eq(base16_decode(b, 0, "", 0), 0);
  /* Encoding needs 2n + 1 bytes. */
  memset(out, 'x', sizeof(out));
  ck_assert_int_eq(base16_encode(out, 8, raw, 4, BASE16_UPPER),
                   BASE16_ERR_SPACE);
  ck_assert_int_eq(out[0], 'x');
  ck_assert_int_eq(base16_encode(out, 0, raw, 0, BASE16_UPPER),
                   BASE16_ERR_SPACE);
  ck_assert_int_eq(base16_encode(out, 1, raw, 0, BASE16_UPPER), 0);
  ck_assert_str_eq(out, "");
}
END_TEST

/* The digit helper lib/conf (\x escapes) and lib/evloop/dns (ip6.arpa
 * names) share with the decoder. */
START_TEST(test_base16_digit_value)
{
  const char *d = "0123456789abcdef", *u = "ABCDEF";
  for (int i = 0; i < 16; i++)
    ck_assert_int_eq(base16_digit_value(d[i]), i);
  for (int i = 0; i < 6; i++)
    ck_assert_int_eq(base16_digit_value(u[i]), 10 + i);
  int n_digits = 0;
  for (int c = -1; c < 256; c++)
    n_digits += base16_digit_value(c) >= 0;
  ck_assert_int_eq(n_digits, 22);
  ck_assert_int_eq(base16_digit_value('/'), -1);
  ck_assert_int_eq(base16_digit_value(':'), -1);
  ck_assert_int_eq(base16_digit_value('@'), -1);
  ck_assert_int_eq(base16_digit_value('G'), -1);
  ck_assert_int_eq(base16_digit_value('`'), -1);
  ck_assert_int_eq(base16_digit_value('g'), -1);
  ck_assert_int_eq(base16_digit_value((char)0xb0), -1);
}
END_TEST

Suite *
suite_encoding(void)
{
  Suite *s = suite_create("encoding");
  TCase *tc = tcase_create("base64");
  tcase_add_test(tc, test_base64_rfc);
  tcase_add_test(tc, test_base64_alphabet);
  tcase_add_test(tc, test_base64_multiline);
  tcase_add_test(tc, test_base64_encode_space);
  tcase_add_test(tc, test_base64_decode_whitespace);
  tcase_add_test(tc, test_base64_decode_malformed);
  tcase_add_test(tc, test_base64_decode_space);
  tcase_add_test(tc, test_base64_roundtrip);
  suite_add_tcase(s, tc);
  tc = tcase_create("base16");
  tcase_add_test(tc, test_base16_rfc);
  tcase_add_test(tc, test_base16_case_and_bytes);
  tcase_add_test(tc, test_base16_malformed);
  tcase_add_test(tc, test_base16_digit_value);
  suite_add_tcase(s, tc);
  return s;
}
