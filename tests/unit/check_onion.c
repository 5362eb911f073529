/* SPDX-License-Identifier: BSD-3-Clause */
/* check_onion.c -- unit tests for core/crypto onion handshakes:
 * CREATE_FAST, ntor and ntor v3 (plus ntor v3 extension lists).
 *
 * Known answers come from independent sources: proposal 332's own test
 * vectors for ntor v3, and small Python references written from the spec
 * text (tests/vectors/onion_fast_ref.py, ntor_ref.py, ntor_v3_ref.py) for
 * the rest. Round trips use random keys; every byte of every handshake
 * message is tampered with in turn to show that each one is covered.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto/onion_fast.h"
#include "core/crypto/onion_ntor.h"
#include "core/crypto/onion_ntor_v3.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/curve25519.h"
#include "lib/crypt/rand.h"

Suite *suite_onion(void);

/* Decode hex into out (exactly strlen(hex)/2 bytes, which must be <= cap);
 * returns the length. */
static size_t
unhex(uint8_t *out, size_t cap, const char *hex)
{
  size_t n = strlen(hex) / 2;
  ck_assert_uint_le(n, cap);
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
    out[i] = (uint8_t)v;
  }
  return n;
}

#define ck_assert_hex_eq(buf, len, hex)                                  \
  do {                                                                   \
    uint8_t exp_[1024];                                                  \
    size_t n_ = unhex(exp_, sizeof(exp_), (hex));                        \
    ck_assert_uint_eq((len), n_);                                        \
    ck_assert_mem_eq((buf), exp_, n_);                                   \
  } while (0)

static void
keypair_from_hex(curve25519_keypair_t *kp, const char *secret_hex)
{
  unhex(kp->secret, sizeof(kp->secret), secret_hex);
  ck_assert_int_eq(curve25519_public_from_secret(kp->pub, kp->secret), 0);
}

static void
setup(void)
{
  ck_assert_int_eq(crypt_global_init(), 0);
}

/* ---------------- CREATE_FAST ---------------- */

START_TEST(test_fast_kat)
{
  /* tests/vectors/onion_fast_ref.py */
  uint8_t x[20], y[20], skin[20], reply[40], skeys[72], ckeys[72];
  unhex(x, sizeof(x), "0102030405060708090a0b0c0d0e0f1011121314");
  unhex(y, sizeof(y), "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3");
  onion_fast_client_t *c = onion_fast_client_create_with_x_(x, skin);
  ck_assert_mem_eq(skin, x, 20);
  ck_assert_int_eq(
      onion_fast_server_handshake_with_y_(skin, y, reply, skeys, 72), 0);
  ck_assert_hex_eq(reply, sizeof(reply),
                   "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3"
                   "37e7f22a71c53233f509a394a3a4c36650c53b60");
  const char *keys72 =
      "a7566afc792f1ae06aaec9d0b4c5a82b674e9157" /* Df */
      "a2cd6d86c37f373d3d6f7de47010ebfb79d05e85" /* Db */
      "28a7d1caa52602cf60474e6c8bb7951d"         /* Kf */
      "9d136b61d4a00bb7e2e863728a70b290";        /* Kb */
  ck_assert_hex_eq(skeys, sizeof(skeys), keys72);
  ck_assert_int_eq(onion_fast_client_finish(c, reply, ckeys, 72), 0);
  ck_assert_hex_eq(ckeys, sizeof(ckeys), keys72);

  /* A wrong KH fails and leaves no keys behind. */
  for (int i = 20; i < 40; i++) {
    uint8_t bad[40];
    memcpy(bad, reply, 40);
    bad[i] ^= 0x01;
    memset(ckeys, 0xaa, sizeof(ckeys));
    ck_assert_int_eq(onion_fast_client_finish(c, bad, ckeys, 72), -1);
    ck_assert(ckeys[0] == 0 && ckeys[71] == 0);
  }
  /* A changed Y gives a different K0, so KH no longer matches. */
  reply[0] ^= 0x80;
  ck_assert_int_eq(onion_fast_client_finish(c, reply, ckeys, 72), -1);
  ck_assert_int_eq(onion_fast_client_finish(c, reply, ckeys, 0), -1);
  ck_assert_int_eq(onion_fast_server_handshake(skin, reply, skeys, 0), -1);
  onion_fast_client_free(c);
  ck_assert_ptr_null(c);
  onion_fast_client_free(c); /* NULL is fine */
}
END_TEST

START_TEST(test_fast_roundtrip)
{
  uint8_t skin[20], skin2[20], reply[40], skeys[100], ckeys[100];
  onion_fast_client_t *c = onion_fast_client_create(skin);
  onion_fast_client_t *c2 = onion_fast_client_create(skin2);
  ck_assert(memcmp(skin, skin2, 20) != 0);
  ck_assert_int_eq(onion_fast_server_handshake(skin, reply, skeys, 100), 0);
  ck_assert_int_eq(onion_fast_client_finish(c, reply, ckeys, 100), 0);
  ck_assert_mem_eq(skeys, ckeys, 100);
  /* The reply is bound to X: another client cannot finish with it. */
  ck_assert_int_eq(onion_fast_client_finish(c2, reply, ckeys, 100), -1);
  onion_fast_client_free(c);
  onion_fast_client_free(c2);
}
END_TEST

/* ---------------- ntor ---------------- */

/* tests/vectors/ntor_ref.py */
#define NTOR_ID "a5a5a5a50123456789abcdef0123456789abcdef"
#define NTOR_b "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
#define NTOR_x "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f"
#define NTOR_y "707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f"
#define NTOR_ONIONSKIN                                                   \
  "a5a5a5a50123456789abcdef0123456789abcdef"                             \
  "79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a"     \
  "d89e3bad79437dbed9f843418304f460ff05c7fe81fe4a9577a804cb9367ff66"
#define NTOR_REPLY                                                       \
  "23b7bb8c91ae008711fb12846780bcdf1e065f821bdfec49f57e7c7dcd4c4823"     \
  "be65c7e47dccc5f351ab9e464bb25b33e214f275165a294e581e10b32eb9aa45"
#define NTOR_KEYS92                                                      \
  "34b0ec27761390023fe297aa965cda91ddc0776d"                             \
  "ef232e0333546f6ca70f6ccc863f1c725fa53fc3"                             \
  "696ce63012c700018f90057ac3ea09be"                                     \
  "2913b071adc901bc4f30e01515e0585a"                                     \
  "ae7b382365f93f2d89bbf2c1e51596da9f5f3237"

START_TEST(test_ntor_kat)
{
  uint8_t id[20], skin[ONION_NTOR_ONIONSKIN_LEN], reply[ONION_NTOR_REPLY_LEN];
  uint8_t skeys[92], ckeys[92];
  curve25519_keypair_t b, x, y, other;
  unhex(id, sizeof(id), NTOR_ID);
  keypair_from_hex(&b, NTOR_b);
  keypair_from_hex(&x, NTOR_x);
  keypair_from_hex(&y, NTOR_y);
  curve25519_keypair_generate(&other);

  onion_ntor_client_t *c =
      onion_ntor_client_create_with_key_(id, b.pub, &x, skin);
  ck_assert_hex_eq(skin, sizeof(skin), NTOR_ONIONSKIN);

  /* Our current key is "other"; b is the previous one and must be used. */
  const curve25519_keypair_t *keys[] = { &other, NULL, &b };
  ck_assert_int_eq(onion_ntor_server_handshake_with_key_(
                       skin, id, keys, 3, &y, reply, skeys, 92), 0);
  ck_assert_hex_eq(reply, sizeof(reply), NTOR_REPLY);
  ck_assert_hex_eq(skeys, sizeof(skeys), NTOR_KEYS92);

  ck_assert_int_eq(onion_ntor_client_finish(c, reply, ckeys, 92), 0);
  ck_assert_hex_eq(ckeys, sizeof(ckeys), NTOR_KEYS92);
  /* Asking for 72 bytes gives the prefix. */
  ck_assert_int_eq(onion_ntor_client_finish(c, reply, ckeys, 72), 0);
  ck_assert_mem_eq(ckeys, skeys, 72);
  onion_ntor_client_free(c);
}
END_TEST

START_TEST(test_ntor_roundtrip_and_tamper)
{
  uint8_t id[20], skin[ONION_NTOR_ONIONSKIN_LEN], reply[ONION_NTOR_REPLY_LEN];
  uint8_t skeys[72], ckeys[72];
  curve25519_keypair_t cur, prev;
  crypt_rand(id, sizeof(id));
  curve25519_keypair_generate(&cur);
  curve25519_keypair_generate(&prev);
  const curve25519_keypair_t *keys[] = { &cur, &prev };

  for (int which = 0; which < 2; which++) {
    onion_ntor_client_t *c =
        onion_ntor_client_create(id, keys[which]->pub, skin);
    ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 2, reply,
                                                 skeys, 72), 0);
    ck_assert_int_eq(onion_ntor_client_finish(c, reply, ckeys, 72), 0);
    ck_assert_mem_eq(skeys, ckeys, 72);

    /* Every byte of the reply is authenticated. */
    for (size_t i = 0; i < sizeof(reply); i++) {
      reply[i] ^= 0x04;
      memset(ckeys, 0x55, sizeof(ckeys));
      ck_assert_int_eq(onion_ntor_client_finish(c, reply, ckeys, 72), -1);
      ck_assert(ckeys[0] == 0 && ckeys[71] == 0);
      reply[i] ^= 0x04;
    }
    /* Every byte of the onionskin matters: NODEID and KEYID make the
     * relay refuse; a changed X gives a reply the client rejects. */
    for (size_t i = 0; i < sizeof(skin); i++) {
      skin[i] ^= 0x10;
      int r = onion_ntor_server_handshake(skin, id, keys, 2, reply, skeys,
                                          72);
      if (i < 20 + 32) {
        ck_assert_int_eq(r, -1);
      } else {
        ck_assert_int_eq(r, 0);
        ck_assert_int_eq(onion_ntor_client_finish(c, reply, ckeys, 72), -1);
      }
      skin[i] ^= 0x10;
    }
    onion_ntor_client_free(c);
  }
}
END_TEST

/* ntor handshakes on several threads at once, as the cpuworker threads run
 * them: the base-point table is built on first use (here, by whichever
 * thread comes first) and every thread makes its own X25519 context. Each
 * thread's handshakes must succeed and both sides must agree. The result
 * does not depend on how the threads are scheduled. */
#define NTOR_THREADS 4
#define NTOR_PER_THREAD 40

typedef struct {
  const uint8_t *id;
  const curve25519_keypair_t *const *keys;
  pthread_barrier_t *start;
  int ok; /* handshakes that succeeded with equal keys */
} ntor_thread_arg_t;

static void *
ntor_thread_main(void *p)
{
  ntor_thread_arg_t *a = p;
  uint8_t skin[ONION_NTOR_ONIONSKIN_LEN], reply[ONION_NTOR_REPLY_LEN];
  uint8_t skeys[72], ckeys[72];
  pthread_barrier_wait(a->start);
  for (int i = 0; i < NTOR_PER_THREAD; i++) {
    onion_ntor_client_t *c =
        onion_ntor_client_create(a->id, a->keys[i % 2]->pub, skin);
    if (onion_ntor_server_handshake(skin, a->id, a->keys, 2, reply, skeys,
                                    72) == 0 &&
        onion_ntor_client_finish(c, reply, ckeys, 72) == 0 &&
        memcmp(skeys, ckeys, 72) == 0)
      a->ok++;
    onion_ntor_client_free(c);
  }
  return NULL;
}

START_TEST(test_ntor_threads)
{
  uint8_t id[20];
  curve25519_keypair_t cur, prev;
  const curve25519_keypair_t *keys[] = { &cur, &prev };
  pthread_t th[NTOR_THREADS];
  ntor_thread_arg_t arg[NTOR_THREADS];
  pthread_barrier_t start;

  memset(id, 0x5a, sizeof(id));
  keypair_from_hex(&cur, "a0b1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5"
                         "061728394a5b6c7d8e9f");
  keypair_from_hex(&prev, "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a"
                          "69788796a5b4c3d2e1f0");
  ck_assert_int_eq(pthread_barrier_init(&start, NULL, NTOR_THREADS), 0);
  for (int t = 0; t < NTOR_THREADS; t++) {
    arg[t] = (ntor_thread_arg_t){ .id = id, .keys = keys, .start = &start };
    ck_assert_int_eq(pthread_create(&th[t], NULL, ntor_thread_main, &arg[t]),
                     0);
  }
  for (int t = 0; t < NTOR_THREADS; t++) {
    ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    ck_assert_int_eq(arg[t].ok, NTOR_PER_THREAD);
  }
  pthread_barrier_destroy(&start);
}
END_TEST

START_TEST(test_ntor_bad_keys)
{
  uint8_t id[20], skin[ONION_NTOR_ONIONSKIN_LEN], reply[ONION_NTOR_REPLY_LEN];
  uint8_t keys_out[72];
  curve25519_keypair_t cur, stranger;
  crypt_rand(id, sizeof(id));
  curve25519_keypair_generate(&cur);
  curve25519_keypair_generate(&stranger);
  const curve25519_keypair_t *keys[] = { &cur };

  /* KEYID we do not have. */
  onion_ntor_client_t *c = onion_ntor_client_create(id, stranger.pub, skin);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 1, reply,
                                               keys_out, 72), -1);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 0, reply,
                                               keys_out, 72), -1);
  onion_ntor_client_free(c);

  /* A client key X of small order (all zero) makes EXP(X,.) zero. */
  c = onion_ntor_client_create(id, cur.pub, skin);
  memset(skin + 52, 0, 32);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 1, reply,
                                               keys_out, 72), -1);
  /* Likewise a relay reply with Y = 0. */
  memset(reply, 0, sizeof(reply));
  ck_assert_int_eq(onion_ntor_client_finish(c, reply, keys_out, 72), -1);
  /* Key material length bounds. */
  ck_assert_int_eq(onion_ntor_client_finish(c, reply, keys_out, 0), -1);
  onion_ntor_client_free(c);
  c = onion_ntor_client_create(id, cur.pub, skin);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 1, reply,
                                               keys_out, 0), -1);
  uint8_t *big = malloc(ONION_NTOR_KEYS_MAX + 1);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 1, reply, big,
                                               ONION_NTOR_KEYS_MAX + 1), -1);
  ck_assert_int_eq(onion_ntor_server_handshake(skin, id, keys, 1, reply, big,
                                               ONION_NTOR_KEYS_MAX), 0);
  ck_assert_int_eq(onion_ntor_client_finish(c, reply, keys_out, 72), 0);
  ck_assert_mem_eq(big, keys_out, 72);
  free(big);
  onion_ntor_client_free(c);
}
END_TEST

/* ---------------- ntor v3 ---------------- */

/* Proposal 332, section X.2. */
#define P332_b "4051daa5921cfa2a1c27b08451324919538e79e788a81b38cbed097a5dff454a"
#define P332_B "f8307a2bc1870b00b828bb74dbb8fd88e632a6375ab3bcd1ae706aaa8b6cdd1d"
#define P332_ID "9fad2af287ef942632833d21f946c6260c33fae6172b60006e86e4a6911753a2"
#define P332_x "b825a3719147bcbe5fb1d0b0fcb9c09e51948048e2e3283d2ab7b45b5ef38b49"
#define P332_X "252fe9ae91264c91d4ecb8501f79d0387e34ad8ca0f7c995184f7d11d5da4f46"
#define P332_CM "68656c6c6f20776f726c64"
#define P332_VER "78797a7a79"
#define P332_y "4865a5b7689dafd978f529291c7171bc159be076b92186405d13220b80e2a053"
#define P332_Y "4bf4814326fdab45ad5184f5518bd7fae25dc59374062698201a50a22954246d"
#define P332_SM "486f6c61204d756e646f"
#define P332_CLIENT_HS                                                    \
  "9fad2af287ef942632833d21f946c6260c33fae6172b60006e86e4a6911753a2"      \
  "f8307a2bc1870b00b828bb74dbb8fd88e632a6375ab3bcd1ae706aaa8b6cdd1d"      \
  "252fe9ae91264c91d4ecb8501f79d0387e34ad8ca0f7c995184f7d11d5da4f46"      \
  "3bebd9151fd3b47c180abc"                                                \
  "9e044d53565f04d82bbb3bebed3d06cea65db8be9c72b68cd461942088502f67"
#define P332_SERVER_HS                                                    \
  "4bf4814326fdab45ad5184f5518bd7fae25dc59374062698201a50a22954246d"      \
  "2fc5f8773ca824542bc6cf6f57c7c29bbf4e5476461ab130c5b18ab0a9127665"      \
  "1202c3e1e87c0d32054c"
#define P332_KEYSTREAM                                                    \
  "9c19b631fd94ed86a817e01f6c80b0743a43f5faebd39cfaa8b00fa8bcc65c3b"      \
  "feaa403d91acbd68a821bf6ee8504602b094a254392a07737d5662768c7a9fb1"      \
  "b2814bb34780eaee6e867c773e28c212ead563e98a1cd5d5b4576f5ee61c59bd"      \
  "e025ff2851bb19b721421694f263818e3531e43a9e4e3e2c661e2ad547d8984c"      \
  "aa28ebecd3e4525452299be26b9185a20a90ce1eac20a91f2832d731b54502b0"      \
  "9749b5a2a2949292f8cfcbeffb790c7790ed935a9d251e7e336148ea83b063a5"      \
  "618fcff674a44581585fd22077ca0e52c59a24347a38d1a1ceebddbf238541f2"      \
  "26b8f88d0fb9c07a1bcd2ea764bbbb5dacdaf5312a14c0b9e4f06309b0333b4a"

START_TEST(test_ntor3_proposal_vectors)
{
  uint8_t id[32], cm[16], ver[8], sm[16], skin[256], reply[256];
  uint8_t skeys[256], ckeys[256], sm_out[64];
  size_t cm_len, ver_len, sm_len, skin_len, reply_len, got_len;
  curve25519_keypair_t b, x, y;
  keypair_from_hex(&b, P332_b);
  keypair_from_hex(&x, P332_x);
  keypair_from_hex(&y, P332_y);
  ck_assert_hex_eq(b.pub, 32, P332_B);
  ck_assert_hex_eq(x.pub, 32, P332_X);
  ck_assert_hex_eq(y.pub, 32, P332_Y);
  unhex(id, sizeof(id), P332_ID);
  cm_len = unhex(cm, sizeof(cm), P332_CM);
  ver_len = unhex(ver, sizeof(ver), P332_VER);
  sm_len = unhex(sm, sizeof(sm), P332_SM);

  onion_ntor3_client_t *c = NULL;
  ck_assert_int_eq(onion_ntor3_client_create_with_key_(
                       id, b.pub, ver, ver_len, cm, cm_len, &x, skin,
                       sizeof(skin), &skin_len, &c), 0);
  ck_assert_hex_eq(skin, skin_len, P332_CLIENT_HS);

  const curve25519_keypair_t *keys[] = { &b };
  onion_ntor3_server_t *s = NULL;
  ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 1, ver,
                                            ver_len, &s), 0);
  const uint8_t *got = onion_ntor3_server_client_msg(s, &got_len);
  ck_assert_uint_eq(got_len, cm_len);
  ck_assert_mem_eq(got, cm, cm_len);
  ck_assert_int_eq(onion_ntor3_server_reply_with_key_(
                       s, sm, sm_len, &y, reply, sizeof(reply), &reply_len,
                       skeys, 256), 0);
  ck_assert_hex_eq(reply, reply_len, P332_SERVER_HS);
  ck_assert_hex_eq(skeys, 256, P332_KEYSTREAM);
  /* One reply per state. */
  ck_assert_int_eq(onion_ntor3_server_reply_with_key_(
                       s, sm, sm_len, &y, reply, sizeof(reply), &reply_len,
                       skeys, 256), -1);
  onion_ntor3_server_free(s);

  ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, sm_out,
                                             sizeof(sm_out), &got_len, ckeys,
                                             256), 0);
  ck_assert_uint_eq(got_len, sm_len);
  ck_assert_mem_eq(sm_out, sm, sm_len);
  ck_assert_hex_eq(ckeys, 256, P332_KEYSTREAM);
  onion_ntor3_client_free(c);
}
END_TEST

/* tests/vectors/ntor_v3_ref.py: circuit-extension verification string and
 * extension-list messages. */
START_TEST(test_ntor3_circuit_vector)
{
  uint8_t id[32], skin[256], reply[256], keys_out[72], sm_out[16];
  size_t skin_len, reply_len, got_len, n_exts;
  curve25519_keypair_t b, x, y;
  unhex(id, sizeof(id),
        "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f");
  keypair_from_hex(&b, NTOR_b);
  keypair_from_hex(&x, NTOR_x);
  keypair_from_hex(&y, NTOR_y);
  ck_assert_uint_eq(ONION_NTOR3_CIRC_VERIFICATION_LEN, 14);

  /* CM = [ext 1, empty], [ext 3, 01 02] */
  static const uint8_t body3[] = { 1, 2 };
  onion_ntor3_ext_t cm_exts[] = { { 1, 0, NULL }, { 3, 2, body3 } };
  uint8_t cm[32];
  size_t cm_len;
  ck_assert_int_eq(onion_ntor3_exts_encode(cm_exts, 2, cm, sizeof(cm),
                                           &cm_len), 0);
  ck_assert_hex_eq(cm, cm_len, "02010003020102");

  onion_ntor3_client_t *c = NULL;
  ck_assert_int_eq(onion_ntor3_client_create_with_key_(
                       id, b.pub,
                       (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION,
                       ONION_NTOR3_CIRC_VERIFICATION_LEN, cm, cm_len, &x,
                       skin, sizeof(skin), &skin_len, &c), 0);
  ck_assert_hex_eq(skin, skin_len,
      "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
      "79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a"
      "d89e3bad79437dbed9f843418304f460ff05c7fe81fe4a9577a804cb9367ff66"
      "29fccd767d84f8"
      "fe344d47f61468dd1ae65ed11b001593f6f5fd57e9d39127be2f023df0b032c9");

  const curve25519_keypair_t *keys[] = { &b };
  onion_ntor3_server_t *s = NULL;
  ck_assert_int_eq(onion_ntor3_server_begin(
                       skin, skin_len, id, keys, 1,
                       (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION,
                       ONION_NTOR3_CIRC_VERIFICATION_LEN, &s), 0);
  const uint8_t *got = onion_ntor3_server_client_msg(s, &got_len);
  onion_ntor3_ext_t exts[8];
  ck_assert_int_eq(onion_ntor3_exts_parse(got, got_len, exts, 8, &n_exts), 0);
  ck_assert_uint_eq(n_exts, 2);
  const onion_ntor3_ext_t *e3 = onion_ntor3_exts_find(exts, n_exts, 3);
  ck_assert_ptr_nonnull(e3);
  ck_assert_uint_eq(e3->len, 2);
  ck_assert_mem_eq(e3->body, body3, 2);
  ck_assert_ptr_null(onion_ntor3_exts_find(exts, n_exts, 2));

  static const uint8_t body2[] = { 0x1f };
  onion_ntor3_ext_t sm_exts[] = { { 2, 1, body2 } };
  uint8_t sm[8];
  size_t sm_len;
  ck_assert_int_eq(onion_ntor3_exts_encode(sm_exts, 1, sm, sizeof(sm),
                                           &sm_len), 0);
  ck_assert_int_eq(onion_ntor3_server_reply_with_key_(
                       s, sm, sm_len, &y, reply, sizeof(reply), &reply_len,
                       keys_out, 72), 0);
  const char *keys72 =
      "0536348fdf51dddfdf9b60f942d87bbfc4873168"
      "6232a9f4c1447b4a07e2ee9e972ef6772f339c17"
      "cf4c1313b47edefc9e0a847d649076b2"
      "51a602f4f801316e702c26b148a3b25c";
  ck_assert_hex_eq(reply, reply_len,
      "23b7bb8c91ae008711fb12846780bcdf1e065f821bdfec49f57e7c7dcd4c4823"
      "d3f963832e2a4e114f66b3dfa9de6eec0e7c83d6e78d591bf22aa79c12bcba01"
      "e24f845e");
  ck_assert_hex_eq(keys_out, 72, keys72);
  onion_ntor3_server_free(s);

  memset(keys_out, 0, sizeof(keys_out));
  ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, sm_out,
                                             sizeof(sm_out), &got_len,
                                             keys_out, 72), 0);
  ck_assert_hex_eq(sm_out, got_len, "0102011f");
  ck_assert_hex_eq(keys_out, 72, keys72);
  onion_ntor3_client_free(c);
}
END_TEST

START_TEST(test_ntor3_roundtrip_and_tamper)
{
  uint8_t id[32], skin[512], reply[512], skeys[72], ckeys[72], out[256];
  size_t skin_len, reply_len, got_len;
  uint8_t cm[40], sm[30];
  curve25519_keypair_t cur, prev;
  crypt_rand(id, sizeof(id));
  crypt_rand(cm, sizeof(cm));
  crypt_rand(sm, sizeof(sm));
  curve25519_keypair_generate(&cur);
  curve25519_keypair_generate(&prev);
  const curve25519_keypair_t *keys[] = { &cur, &prev };
  const uint8_t *ver = (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION;
  size_t ver_len = ONION_NTOR3_CIRC_VERIFICATION_LEN;

  for (int which = 0; which < 2; which++) {
    onion_ntor3_client_t *c = NULL;
    onion_ntor3_server_t *s = NULL;
    ck_assert_int_eq(onion_ntor3_client_create(id, keys[which]->pub, ver,
                                               ver_len, cm, sizeof(cm), skin,
                                               sizeof(skin), &skin_len, &c),
                     0);
    ck_assert_uint_eq(skin_len, ONION_NTOR3_CLIENT_OVERHEAD + sizeof(cm));
    ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                              ver, ver_len, &s), 0);
    const uint8_t *got = onion_ntor3_server_client_msg(s, &got_len);
    ck_assert_uint_eq(got_len, sizeof(cm));
    ck_assert_mem_eq(got, cm, sizeof(cm));
    ck_assert_int_eq(onion_ntor3_server_reply(s, sm, sizeof(sm), reply,
                                              sizeof(reply), &reply_len,
                                              skeys, 72), 0);
    onion_ntor3_server_free(s);
    ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, out,
                                               sizeof(out), &got_len, ckeys,
                                               72), 0);
    ck_assert_uint_eq(got_len, sizeof(sm));
    ck_assert_mem_eq(out, sm, sizeof(sm));
    ck_assert_mem_eq(skeys, ckeys, 72);

    /* Every byte of the reply is covered by AUTH. */
    for (size_t i = 0; i < reply_len; i++) {
      reply[i] ^= 0x20;
      ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, out,
                                                 sizeof(out), &got_len,
                                                 ckeys, 72), -1);
      reply[i] ^= 0x20;
    }
    /* Truncated and extended replies fail too. */
    ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len - 1, out,
                                               sizeof(out), &got_len, ckeys,
                                               72), -1);
    ck_assert_int_eq(onion_ntor3_client_finish(c, reply, 63, out,
                                               sizeof(out), &got_len, ckeys,
                                               72), -1);
    /* Every byte of the onionskin is checked by the relay. */
    for (size_t i = 0; i < skin_len; i++) {
      skin[i] ^= 0x01;
      s = NULL;
      ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                                ver, ver_len, &s), -1);
      ck_assert_ptr_null(s);
      skin[i] ^= 0x01;
    }
    ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len - 1, id, keys,
                                              2, ver, ver_len, &s), -1);
    ck_assert_int_eq(onion_ntor3_server_begin(skin, 127, id, keys, 2, ver,
                                              ver_len, &s), -1);
    /* Mismatched verification string. */
    ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                              ver, ver_len - 1, &s), -1);
    ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                              NULL, 0, &s), -1);
    /* Untouched, it still works. */
    ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                              ver, ver_len, &s), 0);
    onion_ntor3_server_free(s);
    onion_ntor3_client_free(c);
  }
}
END_TEST

START_TEST(test_ntor3_edge_cases)
{
  uint8_t id[32], skin[256], reply[256], keys_out[72], out[8];
  size_t skin_len, reply_len, got_len;
  curve25519_keypair_t cur, stranger;
  crypt_rand(id, sizeof(id));
  curve25519_keypair_generate(&cur);
  curve25519_keypair_generate(&stranger);
  const curve25519_keypair_t *keys[] = { NULL, &cur };
  onion_ntor3_client_t *c = NULL;
  onion_ntor3_server_t *s = NULL;

  /* Wrong KEYID. */
  ck_assert_int_eq(onion_ntor3_client_create(id, stranger.pub, NULL, 0, NULL,
                                             0, skin, sizeof(skin),
                                             &skin_len, &c), 0);
  ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                            NULL, 0, &s), -1);
  onion_ntor3_client_free(c);

  /* Empty messages and empty VER both ways. */
  ck_assert_int_eq(onion_ntor3_client_create(id, cur.pub, NULL, 0, NULL, 0,
                                             skin, sizeof(skin), &skin_len,
                                             &c), 0);
  ck_assert_uint_eq(skin_len, 128);
  ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                            NULL, 0, &s), 0);
  onion_ntor3_server_client_msg(s, &got_len);
  ck_assert_uint_eq(got_len, 0);
  /* Output buffer too small for the reply, then right. */
  ck_assert_int_eq(onion_ntor3_server_reply(s, (const uint8_t *)"abc", 3,
                                            reply, 66, &reply_len, keys_out,
                                            72), -1);
  ck_assert_int_eq(onion_ntor3_server_reply(s, NULL, 0, reply, 64,
                                            &reply_len, keys_out, 72), 0);
  ck_assert_uint_eq(reply_len, 64);
  onion_ntor3_server_free(s);
  ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, NULL, 0,
                                             &got_len, keys_out, 72), 0);
  ck_assert_uint_eq(got_len, 0);
  onion_ntor3_client_free(c);

  /* Client output buffers too small. */
  ck_assert_int_eq(onion_ntor3_client_create(id, cur.pub, NULL, 0,
                                             (const uint8_t *)"x", 1, skin,
                                             128, &skin_len, &c), -1);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(onion_ntor3_client_create(id, cur.pub, NULL, 0,
                                             (const uint8_t *)"x", 1, skin,
                                             129, &skin_len, &c), 0);
  ck_assert_int_eq(onion_ntor3_server_begin(skin, skin_len, id, keys, 2,
                                            NULL, 0, &s), 0);
  ck_assert_int_eq(onion_ntor3_server_reply(s, (const uint8_t *)"0123456789",
                                            10, reply, sizeof(reply),
                                            &reply_len, keys_out, 72), 0);
  onion_ntor3_server_free(s);
  ck_assert_int_eq(onion_ntor3_client_finish(c, reply, reply_len, out,
                                             sizeof(out), &got_len, keys_out,
                                             72), -1);
  onion_ntor3_client_free(c);

  /* A degenerate relay key makes the client refuse up front. */
  uint8_t zero[32] = { 0 };
  ck_assert_int_eq(onion_ntor3_client_create(id, zero, NULL, 0, NULL, 0,
                                             skin, sizeof(skin), &skin_len,
                                             &c), -1);
  ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_ntor3_exts)
{
  onion_ntor3_ext_t exts[300];
  uint8_t buf[1024];
  size_t len, n;

  /* Empty list: a single zero byte. */
  ck_assert_int_eq(onion_ntor3_exts_encode(NULL, 0, buf, sizeof(buf), &len),
                   0);
  ck_assert_uint_eq(len, 1);
  ck_assert_uint_eq(buf[0], 0);
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, 1, exts, 8, &n), 0);
  ck_assert_uint_eq(n, 0);

  /* Duplicates: find() returns the first. */
  static const uint8_t a[] = { 0xaa }, b[] = { 0xbb, 0xbc };
  onion_ntor3_ext_t in[] = { { 7, 1, a }, { 9, 0, NULL }, { 7, 2, b } };
  ck_assert_uint_eq(onion_ntor3_exts_encoded_len(in, 3), 1 + 3 + 2 + 4);
  ck_assert_int_eq(onion_ntor3_exts_encode(in, 3, buf, sizeof(buf), &len),
                   0);
  ck_assert_hex_eq(buf, len, "03" "0701aa" "0900" "0702bbbc");
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, len, exts, 3, &n), 0);
  ck_assert_uint_eq(n, 3);
  const onion_ntor3_ext_t *f = onion_ntor3_exts_find(exts, n, 7);
  ck_assert_ptr_eq(f, &exts[0]);
  ck_assert_uint_eq(f->len, 1);
  ck_assert_uint_eq(f->body[0], 0xaa);
  ck_assert_uint_eq(exts[1].len, 0);
  ck_assert_ptr_eq(exts[2].body, buf + 8);

  /* Malformed: empty, every truncation, trailing byte, too many. */
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, 0, exts, 3, &n), -1);
  for (size_t l = 1; l < len; l++)
    ck_assert_int_eq(onion_ntor3_exts_parse(buf, l, exts, 3, &n), -1);
  buf[len] = 0;
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, len + 1, exts, 3, &n), -1);
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, len, exts, 2, &n), -1);
  /* A length field pointing past the end. */
  static const uint8_t overlong[] = { 1, 5, 4, 1, 2, 3 };
  ck_assert_int_eq(onion_ntor3_exts_parse(overlong, sizeof(overlong), exts,
                                          3, &n), -1);

  /* Encode limits: output too small, body too long, too many. */
  ck_assert_int_eq(onion_ntor3_exts_encode(in, 3, buf, 9, &len), -1);
  uint8_t big[256] = { 0 };
  onion_ntor3_ext_t toolong = { 1, 256, big };
  ck_assert_uint_eq(onion_ntor3_exts_encoded_len(&toolong, 1), 0);
  ck_assert_int_eq(onion_ntor3_exts_encode(&toolong, 1, buf, sizeof(buf),
                                           &len), -1);
  toolong.len = 255;
  ck_assert_int_eq(onion_ntor3_exts_encode(&toolong, 1, buf, sizeof(buf),
                                           &len), 0);
  ck_assert_uint_eq(len, 258);
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, len, exts, 1, &n), 0);
  ck_assert_uint_eq(exts[0].len, 255);
  for (int i = 0; i < 256; i++) {
    exts[i].type = (uint8_t)i;
    exts[i].len = 0;
    exts[i].body = NULL;
  }
  ck_assert_int_eq(onion_ntor3_exts_encode(exts, 256, buf, sizeof(buf),
                                           &len), -1);
  ck_assert_int_eq(onion_ntor3_exts_encode(exts, 255, buf, sizeof(buf),
                                           &len), 0);
  ck_assert_uint_eq(len, 1 + 2 * 255);
  ck_assert_int_eq(onion_ntor3_exts_parse(buf, len, exts, 300, &n), 0);
  ck_assert_uint_eq(n, 255);
  ck_assert_uint_eq(exts[254].type, 254);
}
END_TEST

Suite *
suite_onion(void)
{
  Suite *s = suite_create("onion");
  TCase *tc = tcase_create("fast");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_fast_kat);
  tcase_add_test(tc, test_fast_roundtrip);
  suite_add_tcase(s, tc);

  tc = tcase_create("ntor");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_ntor_kat);
  tcase_add_test(tc, test_ntor_roundtrip_and_tamper);
  tcase_add_test(tc, test_ntor_bad_keys);
  tcase_add_test(tc, test_ntor_threads);
  suite_add_tcase(s, tc);

  tc = tcase_create("ntor3");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_ntor3_proposal_vectors);
  tcase_add_test(tc, test_ntor3_circuit_vector);
  tcase_add_test(tc, test_ntor3_roundtrip_and_tamper);
  tcase_add_test(tc, test_ntor3_edge_cases);
  tcase_add_test(tc, test_ntor3_exts);
  suite_add_tcase(s, tc);
  return s;
}
