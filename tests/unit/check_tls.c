/* SPDX-License-Identifier: BSD-3-Clause */
/* check_tls.c -- unit tests for lib/tls.
 *
 *  - x509: vectors from tests/vectors/x509_ref.py (python `cryptography`:
 *    a self-signed RSA-1024 and a self-signed ECDSA certificate, valid
 *    2020..2040, and the RSA key's Tor fingerprint), round trips with keys
 *    from lib/crypt, validity with slack, tampered/truncated/trailing-byte
 *    certificates.
 *  - tls_context: the link certificate is self-signed, RSA-2048, named
 *    "www.<random>.net".
 *  - tls_conn over a socketpair driven by hand: handshake, data, exporter
 *    equal on both sides and different for other labels/contexts, peer
 *    certificate, close.
 *  - Through lib/net/conn on 127.0.0.1: handshake, 1 MiB each way with
 *    content checked, exporter and peer certificate, flush-then-close.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf/buf.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/rsa.h"
#include "lib/evloop/evloop.h"
#include "lib/net/conn.h"
#include "lib/tls/dtls.h"
#include "lib/tls/tls.h"
#include "lib/tls/x509.h"

Suite *suite_tls(void);

/* ---- output of tests/vectors/x509_ref.py ---- */
static const uint8_t py_rsa_cert[443] = {
  0x30, 0x82, 0x01, 0xb7, 0x30, 0x82, 0x01, 0x20, 0xa0, 0x03, 0x02, 0x01,
  0x02, 0x02, 0x08, 0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x30,
  0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b,
  0x05, 0x00, 0x30, 0x1e, 0x31, 0x1c, 0x30, 0x1a, 0x06, 0x03, 0x55, 0x04,
  0x03, 0x0c, 0x13, 0x77, 0x77, 0x77, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70,
  0x6c, 0x65, 0x2d, 0x72, 0x73, 0x61, 0x2e, 0x6e, 0x65, 0x74, 0x30, 0x1e,
  0x17, 0x0d, 0x32, 0x30, 0x30, 0x31, 0x30, 0x31, 0x30, 0x30, 0x30, 0x30,
  0x30, 0x30, 0x5a, 0x17, 0x0d, 0x34, 0x30, 0x30, 0x31, 0x30, 0x31, 0x30,
  0x30, 0x30, 0x30, 0x30, 0x30, 0x5a, 0x30, 0x1e, 0x31, 0x1c, 0x30, 0x1a,
  0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x13, 0x77, 0x77, 0x77, 0x2e, 0x65,
  0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2d, 0x72, 0x73, 0x61, 0x2e, 0x6e,
  0x65, 0x74, 0x30, 0x81, 0x9f, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48,
  0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x03, 0x81, 0x8d, 0x00,
  0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00, 0xca, 0xeb, 0xea, 0x16, 0x9a,
  0x3f, 0x6e, 0x84, 0xad, 0xbf, 0xd6, 0x3d, 0x82, 0x9c, 0x48, 0xec, 0xb8,
  0xaf, 0x91, 0xb8, 0xd9, 0xa4, 0x79, 0x9a, 0x73, 0x1e, 0xe1, 0x0e, 0x2b,
  0x3e, 0x76, 0xb7, 0xa0, 0x96, 0x84, 0x80, 0xd6, 0x08, 0xe2, 0x4a, 0x86,
  0x5c, 0xc8, 0xa5, 0x60, 0x56, 0x34, 0x92, 0x7e, 0xca, 0xa5, 0x3e, 0x20,
  0x2a, 0xe4, 0x6f, 0x22, 0x03, 0xb9, 0xfa, 0xff, 0x67, 0x1f, 0xa6, 0xcf,
  0x6f, 0x3b, 0xdf, 0x06, 0x61, 0xba, 0xba, 0x6f, 0xf7, 0x1c, 0x3c, 0x86,
  0xa8, 0x6b, 0x52, 0x7d, 0x04, 0x88, 0xb6, 0xf7, 0x1b, 0x5a, 0xde, 0xfd,
  0x7c, 0xae, 0xd5, 0xd0, 0xb2, 0x0b, 0x56, 0xcd, 0xa5, 0x84, 0x40, 0x16,
  0xb3, 0xbd, 0xc4, 0x1b, 0x56, 0xec, 0xcf, 0x6e, 0x4b, 0xa4, 0x79, 0xc7,
  0x80, 0x72, 0x98, 0x38, 0x01, 0xf3, 0x29, 0xc3, 0xc2, 0xd5, 0x89, 0xbd,
  0xdd, 0x09, 0x89, 0x02, 0x03, 0x01, 0x00, 0x01, 0x30, 0x0d, 0x06, 0x09,
  0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00, 0x03,
  0x81, 0x81, 0x00, 0x39, 0x18, 0x16, 0x02, 0x46, 0x48, 0x5b, 0x4b, 0x28,
  0x75, 0x2a, 0xd6, 0x53, 0x8b, 0xdc, 0xc5, 0x20, 0x59, 0x9c, 0xc9, 0xa7,
  0xf5, 0x77, 0x4f, 0x4c, 0xc1, 0xa1, 0x90, 0x76, 0x66, 0x1e, 0xab, 0xe1,
  0x21, 0xcc, 0xb1, 0x88, 0xe7, 0xed, 0x58, 0x53, 0xb5, 0x0b, 0x3a, 0x24,
  0x02, 0xaa, 0x81, 0x55, 0xc7, 0x38, 0xa3, 0x60, 0x2f, 0x5c, 0x93, 0xa4,
  0x29, 0xab, 0x0c, 0x19, 0x8e, 0x2f, 0xcb, 0x91, 0x35, 0x02, 0x15, 0x5d,
  0xd8, 0x9b, 0x75, 0x1d, 0xa7, 0x2f, 0xf9, 0xf2, 0x81, 0xa6, 0x4d, 0x88,
  0xf6, 0x78, 0xf4, 0x2a, 0x75, 0x38, 0x97, 0x51, 0x0e, 0xba, 0x7b, 0xcb,
  0xdc, 0xb3, 0x01, 0x9e, 0x1d, 0x5b, 0x12, 0xef, 0x0d, 0x1a, 0x89, 0x49,
  0xdd, 0x3f, 0xb6, 0x6f, 0xf5, 0x0c, 0xc4, 0xde, 0x14, 0x98, 0x3f, 0x0d,
  0xba, 0xcd, 0x8c, 0x8a, 0x50, 0x03, 0xda, 0x85, 0x10, 0xa3, 0xe8,
};
/* SHA-1 of the key's PKCS#1 DER */
static const char py_rsa_fp_hex[] = "7f2b1421cb874490b142cbde16ba939a2a42f56d";
static const uint8_t py_ec_cert[305] = {
  0x30, 0x82, 0x01, 0x2d, 0x30, 0x81, 0xd4, 0xa0, 0x03, 0x02, 0x01, 0x02,
  0x02, 0x08, 0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x30, 0x0a,
  0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02, 0x30, 0x1d,
  0x31, 0x1b, 0x30, 0x19, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x12, 0x77,
  0x77, 0x77, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2d, 0x65,
  0x63, 0x2e, 0x6e, 0x65, 0x74, 0x30, 0x1e, 0x17, 0x0d, 0x32, 0x30, 0x30,
  0x31, 0x30, 0x31, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x5a, 0x17, 0x0d,
  0x34, 0x30, 0x30, 0x31, 0x30, 0x31, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30,
  0x5a, 0x30, 0x1d, 0x31, 0x1b, 0x30, 0x19, 0x06, 0x03, 0x55, 0x04, 0x03,
  0x0c, 0x12, 0x77, 0x77, 0x77, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c,
  0x65, 0x2d, 0x65, 0x63, 0x2e, 0x6e, 0x65, 0x74, 0x30, 0x59, 0x30, 0x13,
  0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
  0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04, 0x27,
  0x8f, 0x5b, 0x04, 0xc2, 0x80, 0x9c, 0x65, 0x44, 0x09, 0xfd, 0x2c, 0x08,
  0x86, 0x68, 0xb3, 0xb3, 0x8f, 0xe8, 0x92, 0x52, 0xc7, 0x91, 0x56, 0x81,
  0x7c, 0xd4, 0x11, 0x46, 0x6b, 0x31, 0x43, 0xe7, 0xad, 0x8c, 0xf5, 0x4d,
  0x98, 0x33, 0x86, 0x7d, 0x68, 0x22, 0x0f, 0x20, 0x55, 0x88, 0x6d, 0xb2,
  0xdc, 0xf5, 0xda, 0x91, 0x3a, 0xf1, 0x28, 0xfc, 0xc0, 0x14, 0xa6, 0x01,
  0x2c, 0xa8, 0x90, 0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d,
  0x04, 0x03, 0x02, 0x03, 0x48, 0x00, 0x30, 0x45, 0x02, 0x21, 0x00, 0x9a,
  0x1a, 0x1b, 0x09, 0xf2, 0x2d, 0x29, 0xd6, 0x02, 0x4c, 0x72, 0x64, 0xd4,
  0xac, 0x85, 0x35, 0xe1, 0x34, 0xfc, 0x70, 0xf0, 0x96, 0xc2, 0x53, 0x71,
  0x31, 0x31, 0x27, 0x5e, 0xd4, 0xfc, 0x42, 0x02, 0x20, 0x69, 0x4a, 0xfd,
  0x86, 0x7a, 0xe9, 0x85, 0x73, 0x29, 0x6b, 0x91, 0xc4, 0x92, 0x9a, 0x6f,
  0xf1, 0x1b, 0x4f, 0x8f, 0xd9, 0x6b, 0xf8, 0x73, 0x2e, 0xd0, 0x9e, 0xb0,
  0x66, 0x56, 0x76, 0xe1, 0x2e,
};
/* ---- end of x509_ref.py output ---- */

static time_t
utc(int y, int mo, int d, int h)
{
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  return timegm(&tm);
}

static void
hex_of(const uint8_t *b, size_t n, char *out)
{
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", b[i]);
}

static int
mem_contains(const uint8_t *hay, size_t hlen, const char *needle)
{
  size_t nlen = strlen(needle);
  for (size_t i = 0; i + nlen <= hlen; i++)
    if (!memcmp(hay + i, needle, nlen))
      return 1;
  return 0;
}

START_TEST(test_x509_python_vectors)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  time_t mid = utc(2030, 6, 1, 0);
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          mid, 0), 0);
  ck_assert_int_eq(x509_check_self_signed(py_ec_cert, sizeof(py_ec_cert),
                                          mid, 0), 0);
  /* Validity edges, with and without slack. */
  time_t before = utc(2019, 12, 31, 23); /* one hour before not_before */
  time_t after = utc(2040, 1, 1, 1);     /* one hour after not_after */
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          before, 0), -1);
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          before, 3000), -1);
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          before, 3600), 0);
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          after, 0), -1);
  ck_assert_int_eq(x509_check_self_signed(py_rsa_cert, sizeof(py_rsa_cert),
                                          after, 7200), 0);
  /* The key inside, with the fingerprint python computed. */
  crypt_rsa_t *k = x509_get_rsa_key(py_rsa_cert, sizeof(py_rsa_cert));
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(crypt_rsa_bits(k), 1024);
  ck_assert_int_eq(crypt_rsa_has_private(k), 0);
  uint8_t fp[20];
  char fphex[41];
  ck_assert_int_eq(crypt_rsa_fingerprint(k, fp), 0);
  hex_of(fp, 20, fphex);
  ck_assert_str_eq(fphex, py_rsa_fp_hex);
  crypt_rsa_free(k);
  /* Not RSA. */
  ck_assert_ptr_null(x509_get_rsa_key(py_ec_cert, sizeof(py_ec_cert)));
}
END_TEST

START_TEST(test_x509_malformed)
{
  time_t mid = utc(2030, 6, 1, 0);
  uint8_t c[sizeof(py_rsa_cert) + 1];
  /* Flip one bit of the signature (last byte). */
  memcpy(c, py_rsa_cert, sizeof(py_rsa_cert));
  c[sizeof(py_rsa_cert) - 1] ^= 0x01;
  ck_assert_int_eq(x509_check_self_signed(c, sizeof(py_rsa_cert), mid, 0),
                   -1);
  /* Change the subject name (inside the signed part). */
  memcpy(c, py_rsa_cert, sizeof(py_rsa_cert));
  int found = 0;
  for (size_t i = 0; i + 4 < sizeof(py_rsa_cert); i++) {
    if (!memcmp(c + i, "www.", 4)) {
      c[i] = 'W';
      found = 1;
      break;
    }
  }
  ck_assert(found);
  ck_assert_int_eq(x509_check_self_signed(c, sizeof(py_rsa_cert), mid, 0),
                   -1);
  /* Trailing byte, truncation, garbage, empty. */
  memcpy(c, py_rsa_cert, sizeof(py_rsa_cert));
  c[sizeof(py_rsa_cert)] = 0;
  ck_assert_int_eq(x509_check_self_signed(c, sizeof(c), mid, 0), -1);
  ck_assert_ptr_null(x509_get_rsa_key(c, sizeof(c)));
  ck_assert_int_eq(x509_check_self_signed(c, sizeof(py_rsa_cert) - 1, mid, 0),
                   -1);
  ck_assert_ptr_null(x509_get_rsa_key(c, sizeof(py_rsa_cert) - 1));
  ck_assert_ptr_null(x509_get_rsa_key(c, 10));
  ck_assert_ptr_null(x509_get_rsa_key((const uint8_t *)"hello", 5));
  ck_assert_ptr_null(x509_get_rsa_key(c, 0));
  ck_assert_int_eq(x509_check_self_signed(c, 0, mid, 0), -1);
}
END_TEST

START_TEST(test_x509_roundtrip)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  crypt_rsa_t *id = crypt_rsa_generate(1024);
  time_t now = time(NULL);
  uint8_t *der = NULL;
  size_t len = 0;
  ck_assert_int_eq(x509_make_self_signed(id, "www.pctor-test.net", now - 100,
                                         now + 1000, &der, &len),
                   0);
  ck_assert_uint_gt(len, 300);
  ck_assert(mem_contains(der, len, "www.pctor-test.net"));
  ck_assert_int_eq(x509_check_self_signed(der, len, now, 0), 0);
  ck_assert_int_eq(x509_check_self_signed(der, len, now + 2000, 0), -1);
  ck_assert_int_eq(x509_check_self_signed(der, len, now + 2000, 1000), 0);
  ck_assert_int_eq(x509_check_self_signed(der, len, now - 200, 0), -1);
  crypt_rsa_t *k = x509_get_rsa_key(der, len);
  ck_assert_ptr_nonnull(k);
  ck_assert(crypt_rsa_public_eq(k, id));
  /* A public-only key cannot sign. */
  uint8_t *d2 = NULL;
  size_t l2 = 0;
  ck_assert_int_eq(x509_make_self_signed(k, "x", now, now + 10, &d2, &l2),
                   -1);
  /* Tampering with the key bytes breaks the self-signature. */
  der[len / 2] ^= 0x40;
  ck_assert_int_eq(x509_check_self_signed(der, len, now, 0), -1);
  /* Signed by another key: not self-signed. Splice id2's signature onto
   * id's to-be-signed part is not possible here, so check that two
   * certificates for different keys differ in their keys. */
  crypt_rsa_t *id2 = crypt_rsa_generate(1024);
  uint8_t *der2 = NULL;
  size_t len2 = 0;
  ck_assert_int_eq(x509_make_self_signed(id2, "www.other.net", now, now + 10,
                                         &der2, &len2),
                   0);
  crypt_rsa_t *k2 = x509_get_rsa_key(der2, len2);
  ck_assert(!crypt_rsa_public_eq(k2, id));
  free(der);
  free(der2);
  crypt_rsa_free(k);
  crypt_rsa_free(k2);
  crypt_rsa_free(id);
  crypt_rsa_free(id2);
}
END_TEST

START_TEST(test_context)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  ck_assert_ptr_null(tls_context_new(0));
  ck_assert_ptr_null(tls_context_new(-5));
  tls_context_t *ctx = tls_context_new(2);
  ck_assert_ptr_nonnull(ctx);
  size_t len;
  const uint8_t *der = tls_context_cert_der(ctx, &len);
  ck_assert_uint_gt(len, 500);
  time_t now = time(NULL);
  ck_assert_int_eq(x509_check_self_signed(der, len, now, 0), 0);
  ck_assert_int_eq(x509_check_self_signed(der, len, now + 3 * 86400, 0), -1);
  ck_assert(mem_contains(der, len, "www."));
  ck_assert(mem_contains(der, len, ".net"));
  crypt_rsa_t *k = x509_get_rsa_key(der, len);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(crypt_rsa_bits(k), 2048);
  crypt_rsa_free(k);
  /* A second context has a different certificate. */
  tls_context_t *ctx2 = tls_context_new(1);
  size_t len2;
  const uint8_t *der2 = tls_context_cert_der(ctx2, &len2);
  ck_assert(len != len2 || memcmp(der, der2, len) != 0);
  tls_context_free(ctx);
  tls_context_free(ctx2);
  ck_assert_ptr_null(ctx);
}
END_TEST

/* ---- tls_conn driven by hand over a socketpair ---- */

START_TEST(test_tls_conn_socketpair)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  int sv[2];
  ck_assert_int_eq(
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
      0);
  tls_context_t *ctx = tls_context_new(1);
  tls_conn_t *cl = tls_conn_new(ctx, sv[0], 0);
  tls_conn_t *sr = tls_conn_new(ctx, sv[1], 1);
  uint8_t buf[256];
  ck_assert_int_eq(tls_conn_read(cl, buf, sizeof(buf)), TLS_WANT_READ);
  int rc = TLS_WANT_READ, rs = TLS_WANT_READ;
  for (int i = 0; i < 20 && (rc != TLS_OK || rs != TLS_OK); i++) {
    if (rc != TLS_OK)
      rc = tls_conn_handshake(cl);
    if (rs != TLS_OK)
      rs = tls_conn_handshake(sr);
    ck_assert(rc == TLS_OK || rc == TLS_WANT_READ);
    ck_assert(rs == TLS_OK || rs == TLS_WANT_READ);
  }
  ck_assert_int_eq(rc, TLS_OK);
  ck_assert_int_eq(rs, TLS_OK);
  ck_assert_ptr_nonnull(strstr(tls_conn_describe(cl), "TLSv1."));

  /* Data both ways. */
  ck_assert_int_eq(tls_conn_write(cl, (const uint8_t *)"ping", 4), 4);
  ck_assert_int_eq(tls_conn_read(sr, buf, 2), 2);
  ck_assert_mem_eq(buf, "pi", 2);
  ck_assert_uint_eq(tls_conn_pending(sr), 2);
  ck_assert_int_eq(tls_conn_drained(sr), 0); /* "ng" is still inside */
  ck_assert_int_eq(tls_conn_read(sr, buf, sizeof(buf)), 2);
  ck_assert_mem_eq(buf, "ng", 2);
  ck_assert_uint_eq(tls_conn_pending(sr), 0);
  /* The socket read was short and nothing is left: drained. */
  ck_assert_int_eq(tls_conn_drained(sr), 1);
  ck_assert_int_eq(tls_conn_read(sr, buf, sizeof(buf)), TLS_WANT_READ);
  /* Two records in one socket read: not drained until both are taken. */
  ck_assert_int_eq(tls_conn_write(cl, (const uint8_t *)"ab", 2), 2);
  ck_assert_int_eq(tls_conn_write(cl, (const uint8_t *)"cd", 2), 2);
  ck_assert_int_eq(tls_conn_read(sr, buf, sizeof(buf)), 2);
  ck_assert_mem_eq(buf, "ab", 2);
  ck_assert_int_eq(tls_conn_drained(sr), 0);
  ck_assert_int_eq(tls_conn_read(sr, buf, sizeof(buf)), 2);
  ck_assert_mem_eq(buf, "cd", 2);
  ck_assert_int_eq(tls_conn_drained(sr), 1);
  ck_assert_int_eq(tls_conn_write(sr, (const uint8_t *)"pong", 4), 4);
  ck_assert_int_eq(tls_conn_read(cl, buf, sizeof(buf)), 4);
  ck_assert_mem_eq(buf, "pong", 4);

  /* Exporter: equal on both sides; label and context matter. */
  uint8_t e1[32], e2[32], e3[32], e4[32], e5[32];
  const uint8_t cx[3] = {1, 2, 3};
  ck_assert_int_eq(tls_conn_export_key(cl, e1, 32, "EXPORTER FOR TEST A",
                                       cx, 3), 0);
  ck_assert_int_eq(tls_conn_export_key(sr, e2, 32, "EXPORTER FOR TEST A",
                                       cx, 3), 0);
  ck_assert_mem_eq(e1, e2, 32);
  ck_assert_int_eq(tls_conn_export_key(sr, e3, 32, "EXPORTER FOR TEST B",
                                       cx, 3), 0);
  ck_assert(memcmp(e1, e3, 32) != 0);
  const uint8_t cy[3] = {1, 2, 4};
  ck_assert_int_eq(tls_conn_export_key(sr, e4, 32, "EXPORTER FOR TEST A",
                                       cy, 3), 0);
  ck_assert(memcmp(e1, e4, 32) != 0);
  ck_assert_int_eq(tls_conn_export_key(cl, e5, 32, "EXPORTER FOR TEST A",
                                       NULL, 0), 0);
  ck_assert(memcmp(e1, e5, 32) != 0);

  /* Certificates: the client sees the context's; the server none. */
  uint8_t *der = NULL;
  size_t len = 0, mylen;
  const uint8_t *mine = tls_context_cert_der(ctx, &mylen);
  ck_assert_int_eq(tls_conn_peer_cert_der(cl, &der, &len), 0);
  ck_assert_uint_eq(len, mylen);
  ck_assert_mem_eq(der, mine, len);
  free(der);
  ck_assert_int_eq(tls_conn_own_cert_der(sr, &der, &len), 0);
  ck_assert_uint_eq(len, mylen);
  ck_assert_mem_eq(der, mine, len);
  free(der);
  ck_assert_int_eq(tls_conn_peer_cert_der(sr, &der, &len), -1);

  /* close_notify reads as TLS_CLOSED; a dead socket as CLOSED too. */
  ck_assert_int_eq(tls_conn_shutdown(cl), TLS_OK);
  ck_assert_int_eq(tls_conn_read(sr, buf, sizeof(buf)), TLS_CLOSED);
  tls_conn_free(cl);
  close(sv[0]);
  tls_conn_free(sr);
  close(sv[1]);
  tls_context_free(ctx);
}
END_TEST

START_TEST(test_tls_conn_garbage_peer)
{
  /* The "server" speaks something that is not TLS. */
  ck_assert_int_eq(crypt_global_init(), 0);
  int sv[2];
  ck_assert_int_eq(
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
      0);
  tls_context_t *ctx = tls_context_new(1);
  tls_conn_t *cl = tls_conn_new(ctx, sv[0], 0);
  ck_assert_int_eq(tls_conn_handshake(cl), TLS_WANT_READ);
  const char *junk = "HTTP/1.0 400 Bad Request\r\n\r\nnot tls at all....";
  ck_assert_int_eq(write(sv[1], junk, strlen(junk)), (ssize_t)strlen(junk));
  ck_assert_int_eq(tls_conn_handshake(cl), TLS_ERROR);
  ck_assert_str_ne(tls_conn_last_error(cl), "no error");
  tls_conn_free(cl);
  close(sv[0]);
  /* Writing to a vanished peer: an error, not SIGPIPE (the process would
   * die here otherwise; nothing in this test ignores the signal). */
  tls_conn_t *c2 = tls_conn_new(ctx, sv[1], 0);
  ck_assert_int_eq(tls_conn_handshake(c2), TLS_ERROR);
  ck_assert_ptr_nonnull(strstr(tls_conn_last_error(c2), "Broken pipe"));
  tls_conn_free(c2);
  close(sv[1]);
  /* EOF during the handshake, after our ClientHello went out. */
  ck_assert_int_eq(
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
      0);
  c2 = tls_conn_new(ctx, sv[0], 0);
  ck_assert_int_eq(tls_conn_handshake(c2), TLS_WANT_READ);
  char hello[4096];
  ck_assert_int_gt(read(sv[1], hello, sizeof(hello)), 50);
  ck_assert_int_eq(hello[0], 0x16); /* a TLS handshake record */
  close(sv[1]);
  ck_assert_int_eq(tls_conn_handshake(c2), TLS_CLOSED);
  ck_assert_str_eq(tls_conn_last_error(c2),
                   "connection closed during handshake");
  tls_conn_free(c2);
  close(sv[0]);
  tls_context_free(ctx);
}
END_TEST

/* ---- through lib/net/conn on 127.0.0.1 ---- */

#define BULK (1024 * 1024)
#define CHUNK_ADD (192 * 1024)

static evloop_t *L;
static tls_context_t *ctx_a, *ctx_b;

typedef struct side_t {
  conn_t *c;
  const char *name;
  int open, eof, error, drained;
  size_t sent, recvd;
  uint8_t seed;
  uint8_t peer_seed;
  int sends;            /* send BULK bytes after OPEN */
  int close_after_send; /* queue everything, then conn_close(c, 1) */
  uint8_t export_a[32], export_b[32];
  int exported;
} side_t;

static side_t srv, cli;
static listener_t *lst;

static uint8_t
pattern(uint8_t seed, size_t i)
{
  return (uint8_t)(seed + i * 7 + (i >> 11));
}

static void
queue_more(side_t *s)
{
  buf_t *out = conn_outbuf(s->c);
  uint8_t tmp[4096];
  size_t goal = s->sent + CHUNK_ADD;
  if (goal > BULK || s->close_after_send)
    goal = BULK;
  while (s->sent < goal) {
    size_t n = goal - s->sent;
    if (n > sizeof(tmp))
      n = sizeof(tmp);
    for (size_t i = 0; i < n; i++)
      tmp[i] = pattern(s->seed, s->sent + i);
    buf_add(out, tmp, n);
    s->sent += n;
  }
  conn_flush_soon(s->c);
  if (s->sent == BULK && s->close_after_send) {
    conn_close(s->c, 1);
    s->c = NULL;
  }
}

static void
maybe_done(void)
{
  if (srv.close_after_send ? (cli.recvd == BULK && cli.eof)
                           : (srv.recvd == BULK && cli.recvd == BULK))
    evloop_exit(L);
}

static void
side_cb(conn_t *c, conn_event_t ev, void *arg)
{
  side_t *s = arg;
  ck_assert_ptr_eq(c, s->c);
  switch (ev) {
  case CONN_EV_OPEN:
    ck_assert(!s->open);
    s->open = 1;
    ck_assert_ptr_nonnull(conn_tls(c));
    ck_assert_int_eq(tls_conn_export_key(conn_tls(c), s->export_a, 32,
                                         "EXPORTER FOR TOR TLS CLIENT BINDING "
                                         "AUTH0003",
                                         (const uint8_t *)"ctx", 3),
                     0);
    ck_assert_int_eq(tls_conn_export_key(conn_tls(c), s->export_b, 32,
                                         "another label",
                                         (const uint8_t *)"ctx", 3),
                     0);
    s->exported = 1;
    conn_set_lowat(c, 64 * 1024);
    if (s->sends)
      queue_more(s);
    break;
  case CONN_EV_DRAINED:
    s->drained++;
    if (s->sent < BULK)
      queue_more(s);
    break;
  case CONN_EV_DATA: {
    buf_t *in = conn_inbuf(c);
    size_t n = buf_datalen(in);
    ck_assert_uint_le(s->recvd + n, BULK);
    while (buf_datalen(in)) {
      size_t hl;
      const uint8_t *h = buf_head(in, &hl);
      for (size_t i = 0; i < hl; i++)
        if (h[i] != pattern(s->peer_seed, s->recvd + i))
          ck_abort_msg("%s: byte %zu differs", s->name, s->recvd + i);
      s->recvd += hl;
      buf_drain(in, hl);
    }
    maybe_done();
    break;
  }
  case CONN_EV_EOF:
    s->eof = 1;
    maybe_done();
    break;
  case CONN_EV_ERROR:
    ck_abort_msg("%s: unexpected error: %s", s->name, conn_error(c));
    break;
  }
}

static void
accept_cb(int fd, const pc_addr_t *peer, void *arg)
{
  (void)arg;
  ck_assert(pc_addr_is_loopback(peer));
  ck_assert_ptr_null(srv.c);
  srv.c = conn_new_accepted(L, ctx_b, fd, peer, side_cb, &srv);
}

static void
watchdog_cb(void *arg)
{
  (void)arg;
  ck_abort_msg("timed out: srv recvd %zu sent %zu, cli recvd %zu sent %zu",
               srv.recvd, srv.sent, cli.recvd, cli.sent);
}

static void
run_pair(int server_closes)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  L = evloop_new();
  ctx_a = tls_context_new(1);
  ctx_b = tls_context_new(1);
  memset(&srv, 0, sizeof(srv));
  memset(&cli, 0, sizeof(cli));
  srv.name = "server";
  cli.name = "client";
  srv.seed = 11;
  cli.seed = 99;
  srv.peer_seed = 99;
  cli.peer_seed = 11;
  srv.close_after_send = server_closes;
  srv.sends = 1;
  cli.sends = !server_closes;
  pc_addr_t a;
  const char *err = NULL;
  ck_assert_int_eq(pc_addr_parse(&a, "127.0.0.1:0"), 0);
  lst = listener_new(L, &a, accept_cb, NULL, &err);
  ck_assert_ptr_nonnull(lst);
  ck_assert_uint_ne(listener_addr(lst)->port, 0);
  cli.c = conn_connect(L, ctx_a, listener_addr(lst), side_cb, &cli, &err);
  ck_assert_ptr_nonnull(cli.c);
  if (server_closes) /* tiny reads: most input waits inside OpenSSL */
    conn_set_read_budget(cli.c, 1500);
  evloop_timer_t *wd = evloop_timer_new(L, watchdog_cb, NULL);
  evloop_timer_schedule(wd, 8 * 1000000ULL);
  ck_assert_int_eq(evloop_run(L), 0);
  evloop_timer_free(wd);
}

static void
free_pair(void)
{
  conn_free(cli.c);
  conn_free(srv.c);
  listener_free(lst);
  /* A conn handed to conn_close() finishes by itself: the loop runs out
   * of work only once it is gone. */
  uint64_t t0 = evloop_now_us(L);
  ck_assert_int_eq(evloop_run(L), 0);
  ck_assert_uint_lt(evloop_now_us(L) - t0, 2000000);
  tls_context_free(ctx_a);
  tls_context_free(ctx_b);
  evloop_free(L);
}

START_TEST(test_tls_over_conn_bulk)
{
  run_pair(0);
  ck_assert(srv.open && cli.open);
  ck_assert_uint_eq(srv.recvd, BULK);
  ck_assert_uint_eq(cli.recvd, BULK);
  ck_assert_int_gt(srv.drained, 0);
  ck_assert_int_gt(cli.drained, 0);
  ck_assert_uint_eq(conn_bytes_read(srv.c), BULK);
  ck_assert_uint_eq(conn_bytes_written(srv.c), BULK);
  ck_assert_uint_eq(conn_bytes_read(cli.c), BULK);
  /* Same exporter output on both ends; another label gives another. */
  ck_assert_mem_eq(srv.export_a, cli.export_a, 32);
  ck_assert_mem_eq(srv.export_b, cli.export_b, 32);
  ck_assert(memcmp(srv.export_a, srv.export_b, 32) != 0);
  /* The client's view of the server's certificate is the server's own. */
  uint8_t *der = NULL;
  size_t len = 0, blen;
  const uint8_t *bder = tls_context_cert_der(ctx_b, &blen);
  ck_assert_int_eq(tls_conn_peer_cert_der(conn_tls(cli.c), &der, &len), 0);
  ck_assert_uint_eq(len, blen);
  ck_assert_mem_eq(der, bder, len);
  free(der);
  /* ... and what the server says it presents. */
  ck_assert_int_eq(tls_conn_own_cert_der(conn_tls(srv.c), &der, &len), 0);
  ck_assert_uint_eq(len, blen);
  ck_assert_mem_eq(der, bder, len);
  free(der);
  size_t alen;
  tls_context_cert_der(ctx_a, &alen);
  ck_assert(alen != blen || memcmp(tls_context_cert_der(ctx_a, &alen), bder,
                                   blen) != 0);
  free_pair();
}
END_TEST

START_TEST(test_tls_over_conn_flush_close)
{
  /* The server queues 1 MiB and hands the conn to conn_close(c, 1) at
   * once; the client must get every byte and then EOF. */
  run_pair(1);
  ck_assert_uint_eq(cli.recvd, BULK);
  ck_assert(cli.eof);
  ck_assert_ptr_null(srv.c);
  free_pair();
}
END_TEST

/* ---- DTLS over datagrams carried by the test ---- */

#define DQ_MAX 32
typedef struct {
  uint8_t d[DQ_MAX][DTLS_LINK_MTU];
  size_t len[DQ_MAX];
  unsigned n;
} dq_t;

static void
dq_out(void *arg, const uint8_t *d, size_t len)
{
  dq_t *q = arg;
  ck_assert_uint_le(len, DTLS_LINK_MTU);
  ck_assert_uint_lt(q->n, DQ_MAX);
  memcpy(q->d[q->n], d, len);
  q->len[q->n++] = len;
}

/* Hand every queued datagram to c (handshake or read step each). */
static void
dq_deliver(dq_t *q, dtls_conn_t *c)
{
  for (unsigned i = 0; i < q->n; i++) {
    dtls_conn_input(c, q->d[i], q->len[i]);
    if (!dtls_conn_is_established(c))
      (void)dtls_conn_handshake(c);
    else {
      uint8_t sink[64];
      (void)dtls_conn_read(c, sink, sizeof(sink));
    }
  }
  q->n = 0;
}

START_TEST(test_dtls_cookie_handshake_replay)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  tls_context_t *lc = tls_context_new(1), *ls = tls_context_new(1);
  ck_assert_ptr_nonnull(lc);
  ck_assert_ptr_nonnull(ls);
  dtls_context_t *cc = dtls_context_new(lc), *sc = dtls_context_new(ls);
  ck_assert_ptr_nonnull(cc);
  ck_assert_ptr_nonnull(sc);
  static dq_t to_srv, to_cli;
  memset(&to_srv, 0, sizeof(to_srv));
  memset(&to_cli, 0, sizeof(to_cli));
  const uint8_t peer[] = "client-a:1234", other[] = "client-b:1234";
  dtls_conn_t *dc_cli = dtls_conn_new_client(cc, dq_out, &to_srv), *dc_srv = NULL;
  ck_assert_int_eq(dtls_conn_handshake(dc_cli), TLS_WANT_READ);
  ck_assert_uint_eq(to_srv.n, 1);
  ck_assert(dtls_is_client_hello(to_srv.d[0], to_srv.len[0]));
  /* not ClientHellos: dropped before OpenSSL */
  ck_assert(!dtls_is_client_hello(to_srv.d[0], 20));
  ck_assert_int_eq(dtls_listen(sc, peer, sizeof(peer), to_srv.d[0], 20,
                               dq_out, &to_cli, &dc_srv),
                   DTLS_LISTEN_DROPPED);
  /* no cookie: a HelloVerifyRequest, and no session */
  ck_assert_int_eq(dtls_listen(sc, peer, sizeof(peer), to_srv.d[0],
                               to_srv.len[0], dq_out, &to_cli, &dc_srv),
                   DTLS_LISTEN_VERIFY);
  ck_assert_ptr_null(dc_srv);
  ck_assert_uint_eq(to_cli.n, 1);
  to_srv.n = 0;
  dq_deliver(&to_cli, dc_cli); /* the client answers with the cookie */
  ck_assert_uint_eq(to_srv.n, 1);
  /* the cookie is bound to the peer: from elsewhere, another cookie */
  ck_assert_int_eq(dtls_listen(sc, other, sizeof(other), to_srv.d[0],
                               to_srv.len[0], dq_out, &to_cli, &dc_srv),
                   DTLS_LISTEN_VERIFY);
  ck_assert_ptr_null(dc_srv);
  to_cli.n = 0;
  ck_assert_int_eq(dtls_listen(sc, peer, sizeof(peer), to_srv.d[0],
                               to_srv.len[0], dq_out, &to_cli, &dc_srv),
                   DTLS_LISTEN_ACCEPT);
  ck_assert_ptr_nonnull(dc_srv);
  to_srv.n = 0;
  ck_assert_int_eq(dtls_conn_handshake(dc_srv), TLS_WANT_READ);
  for (int round = 0; round < 8 && !(dtls_conn_is_established(dc_cli) &&
                                     dtls_conn_is_established(dc_srv));
       round++) {
    dq_deliver(&to_cli, dc_cli);
    dq_deliver(&to_srv, dc_srv);
  }
  ck_assert(dtls_conn_is_established(dc_cli));
  ck_assert(dtls_conn_is_established(dc_srv));
  ck_assert_ptr_nonnull(strstr(dtls_conn_describe(dc_cli), "DTLSv1.2"));
  uint64_t us;
  ck_assert_int_eq(dtls_conn_timeout_us(dc_cli, &us), 0);
  ck_assert_uint_ge(dtls_conn_max_record(dc_cli), 1150);
  /* both ends export the same keying material; the client sees the
   * server's (link) certificate */
  uint8_t e1[32], e2[32];
  ck_assert_int_eq(dtls_conn_export_key(dc_cli, e1, 32, "L", e1, 0), 0);
  ck_assert_int_eq(dtls_conn_export_key(dc_srv, e2, 32, "L", e2, 0), 0);
  ck_assert_mem_eq(e1, e2, 32);
  uint8_t *der = NULL;
  size_t derlen = 0, mylen = 0;
  ck_assert_int_eq(dtls_conn_peer_cert_der(dc_cli, &der, &derlen), 0);
  const uint8_t *mine = tls_context_cert_der(ls, &mylen);
  ck_assert_uint_eq(derlen, mylen);
  ck_assert_mem_eq(der, mine, mylen);
  free(der);
  /* a record, then the same datagram again (replay), a forged copy and a
   * truncated one: only the first is read */
  to_srv.n = 0;
  ck_assert_int_eq(dtls_conn_write(dc_cli, (const uint8_t *)"abc", 3), 0);
  ck_assert_uint_eq(to_srv.n, 1);
  uint8_t rec[DTLS_LINK_MTU], out[64];
  size_t rlen = to_srv.len[0];
  memcpy(rec, to_srv.d[0], rlen);
  dtls_conn_input(dc_srv, rec, rlen);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), 3);
  ck_assert_mem_eq(out, "abc", 3);
  dtls_conn_input(dc_srv, rec, rlen);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), TLS_WANT_READ);
  ck_assert_int_eq(dtls_conn_write(dc_cli, (const uint8_t *)"def", 3), 0);
  memcpy(rec, to_srv.d[1], to_srv.len[1]);
  rlen = to_srv.len[1];
  rec[rlen - 1] ^= 1;
  dtls_conn_input(dc_srv, rec, rlen);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), TLS_WANT_READ);
  dtls_conn_input(dc_srv, to_srv.d[1], to_srv.len[1] - 5);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), TLS_WANT_READ);
  /* the genuine one still reads after the forgeries */
  dtls_conn_input(dc_srv, to_srv.d[1], to_srv.len[1]);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), 3);
  ck_assert_mem_eq(out, "def", 3);
  /* What an off-path sender can put in the peer's name must not end the
   * session: garbage, a plaintext fatal alert (epoch 0), a record of the
   * current epoch with a bad length. All discarded (feature/dgram sends
   * ClientHellos to the stateless listener, never into a session). */
  {
    uint8_t g[64];
    for (size_t i = 0; i < sizeof(g); i++)
      g[i] = (uint8_t)(i * 31 + 7);
    dtls_conn_input(dc_srv, g, sizeof(g));
    ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)),
                     TLS_WANT_READ);
    const uint8_t alert[] = {21, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 9,
                             0, 2, 2, 40};
    dtls_conn_input(dc_srv, alert, sizeof(alert));
    ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)),
                     TLS_WANT_READ);
    uint8_t badlen[40];
    memcpy(badlen, to_srv.d[1], 13);
    badlen[11] = 0xff; /* length beyond the datagram */
    memset(badlen + 13, 0, sizeof(badlen) - 13);
    dtls_conn_input(dc_srv, badlen, sizeof(badlen));
    ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)),
                     TLS_WANT_READ);
    ck_assert_int_eq(dtls_conn_write(dc_cli, (const uint8_t *)"ghi", 3), 0);
    dtls_conn_input(dc_srv, to_srv.d[to_srv.n - 1], to_srv.len[to_srv.n - 1]);
    ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), 3);
    ck_assert_mem_eq(out, "ghi", 3);
  }
  /* a record too big for the reader's buffer is refused whole */
  uint8_t big[200];
  memset(big, 7, sizeof(big));
  to_srv.n = 0;
  ck_assert_int_eq(dtls_conn_write(dc_cli, big, sizeof(big)), 0);
  dtls_conn_input(dc_srv, to_srv.d[0], to_srv.len[0]);
  ck_assert_int_eq(dtls_conn_read(dc_srv, out, sizeof(out)), DTLS_OVERSIZE);
  dtls_conn_free(dc_cli);
  dtls_conn_free(dc_srv);
  dtls_context_free(cc);
  dtls_context_free(sc);
  tls_context_free(lc);
  tls_context_free(ls);
}
END_TEST

Suite *
suite_tls(void)
{
  Suite *s = suite_create("tls");
  TCase *tc = tcase_create("x509");
  tcase_add_test(tc, test_x509_python_vectors);
  tcase_add_test(tc, test_x509_malformed);
  tcase_add_test(tc, test_x509_roundtrip);
  suite_add_tcase(s, tc);
  tc = tcase_create("conn");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_context);
  tcase_add_test(tc, test_tls_conn_socketpair);
  tcase_add_test(tc, test_tls_conn_garbage_peer);
  tcase_add_test(tc, test_tls_over_conn_bulk);
  tcase_add_test(tc, test_tls_over_conn_flush_close);
  tcase_add_test(tc, test_dtls_cookie_handshake_replay);
  suite_add_tcase(s, tc);
  return s;
}
