/* SPDX-License-Identifier: BSD-3-Clause */
/* cipher.c -- AES-128/256 in counter mode, as a continuing stream cipher.
 *
 * Design: two implementations behind one crypt_aes_t.
 *
 * AES-128 on an x86-64 CPU with the AES instructions (AES-NI, checked once
 * at run time) uses our own counter mode on those instructions: the
 * expanded key (11 round keys, 176 bytes), the 128-bit big-endian counter
 * (as in NIST SP 800-38A and Tor's relay crypto) and the unused rest of
 * the last keystream block live inside the crypt_aes_t (224 bytes,
 * cipher.h, embeddable). Blocks are encrypted eight at a time so that the rounds of
 * independent blocks overlap in the pipeline. This path exists for memory:
 * every relayed circuit holds two AES-128 states, and OpenSSL 3's
 * EVP_CIPHER_CTX with its provider context costs about 660 bytes of heap
 * each (measured with glibc 2.36, OpenSSL 3.0), which made the two ciphers
 * half of an idle circuit's memory (doc/benchmarks.md, "Where an idle
 * circuit's bytes go"). It is also faster per relay cell than the EVP
 * path was (52 against 73 ns for a 509-byte cell on the machine measured
 * there: no per-call dispatch, and the last partial batch of blocks is
 * computed eight wide as well).
 *
 * Otherwise (AES-256, other CPUs and compilers, or
 * crypt_aes_use_evp_for_testing(1)) one EVP_CIPHER_CTX lives inside each
 * crypt_aes_t, set up once with the key and the 16-byte initial counter
 * block. OpenSSL's CTR mode remembers its position inside a partial block,
 * so successive crypt_aes_crypt() calls of any lengths produce one
 * continuous keystream, and each call is a single EVP_EncryptUpdate()
 * with no allocation. The cipher object itself comes from the shared table
 * (crypt_algs_()), so crypt_aes_new() does not fetch by name either. A
 * failure of EVP_EncryptUpdate() on a correctly set-up CTR context would
 * be a library bug; we abort rather than return unencrypted data.
 *
 * Neither path allocates in crypt_aes_crypt(). Both wipe the key schedule
 * when the object is freed (the AES-NI path does not wipe the keystream
 * blocks its functions leave on the stack; the unused part of the last
 * one is in the object anyway). The AES-NI path is constant-time (no table
 * lookups); OpenSSL's own switch OPENSSL_ia32cap does not affect it.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#ifdef CRYPT_AES_HAVE_AESNI
#define PCTOR_AESNI 1
#include <immintrin.h>
#endif

#define AES128_ROUNDS 10

static int force_evp;

void
crypt_aes_use_evp_for_testing(int on)
{
  force_evp = on;
}

#ifdef PCTOR_AESNI
#define AESNI_FN __attribute__((target("aes,ssse3")))

/* Reads what libgcc's (or compiler-rt's) constructor found: no state of
 * ours, so worker threads may call it too. */
static int
aesni_available(void)
{
  return __builtin_cpu_supports("aes") && __builtin_cpu_supports("ssse3");
}

/* One step of the AES-128 key schedule (FIPS-197 5.2): the previous round
 * key k and assist = aeskeygenassist(k, rcon). */
static inline AESNI_FN __m128i
aesni_key_step(__m128i k, __m128i assist)
{
  assist = _mm_shuffle_epi32(assist, 0xff);
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  return _mm_xor_si128(k, assist);
}

static AESNI_FN void
aesni_expand_key128(uint8_t rk[AES128_ROUNDS + 1][16], const uint8_t *key)
{
  __m128i k = _mm_loadu_si128((const __m128i *)key);
  _mm_storeu_si128((__m128i *)rk[0], k);
#define KEY_STEP(i, rcon)                                              \
  do {                                                                 \
    k = aesni_key_step(k, _mm_aeskeygenassist_si128(k, rcon));         \
    _mm_storeu_si128((__m128i *)rk[i], k);                             \
  } while (0)
  KEY_STEP(1, 0x01);
  KEY_STEP(2, 0x02);
  KEY_STEP(3, 0x04);
  KEY_STEP(4, 0x08);
  KEY_STEP(5, 0x10);
  KEY_STEP(6, 0x20);
  KEY_STEP(7, 0x40);
  KEY_STEP(8, 0x80);
  KEY_STEP(9, 0x1b);
  KEY_STEP(10, 0x36);
#undef KEY_STEP
}

/* The counter is kept as two native 64-bit halves. In the fast path
 * below it sits in an XMM register as (lo, hi) 64-bit lanes, incremented
 * with one 64-bit add, and a byte reversal of the whole register gives
 * the big-endian counter block. That add does not carry into the high
 * half, so it is used only while the low half cannot wrap inside a batch
 * of eight; near a wrap aesni_ctr_tail() counts block by block with the
 * carry. */
static inline AESNI_FN __m128i
aesni_bswap128(__m128i x)
{
  const __m128i rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   13, 14, 15);
  return _mm_shuffle_epi8(x, rev);
}

#define AESNI_PAR 8

/* One round of the eight blocks of the fast path (macros, so that the
 * eight stay in registers whatever the compiler's unrolling). */
#define AES8(op, k)                                                    \
  do {                                                                 \
    b0 = op(b0, k); b1 = op(b1, k); b2 = op(b2, k); b3 = op(b3, k);    \
    b4 = op(b4, k); b5 = op(b5, k); b6 = op(b6, k); b7 = op(b7, k);    \
  } while (0)
#define XOR_OUT(j, bj)                                                 \
  _mm_storeu_si128((__m128i *)(out + 16 * (j)),                        \
                   _mm_xor_si128(bj, _mm_loadu_si128(                  \
                                          (const __m128i *)(in + 16 * (j)))))

/* XOR the keystream of the next nb (1..AESNI_PAR) counter blocks into the
 * first n (<= 16 * nb, > 16 * (nb - 1)) bytes of in, writing out; when the
 * last block is partial its keystream is kept in c->ks_. The eight blocks
 * are computed together like the bulk path (the unused ones cost little:
 * they run in parallel with the used ones). */
static AESNI_FN void
aesni_ctr_tail(crypt_aes_t *c, const __m128i *rk, uint8_t *out,
               const uint8_t *in, size_t n, size_t nb)
{
  __m128i b[AESNI_PAR];
  if (c->ctr_lo_ <= UINT64_MAX - AESNI_PAR) {
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i ctr = _mm_set_epi64x((long long)c->ctr_hi_,
                                 (long long)c->ctr_lo_);
    for (int j = 0; j < AESNI_PAR; j++) {
      b[j] = aesni_bswap128(ctr);
      ctr = _mm_add_epi64(ctr, one);
    }
    c->ctr_lo_ += nb;
  } else {
    for (int j = 0; j < AESNI_PAR; j++) {
      b[j] = aesni_bswap128(
          _mm_set_epi64x((long long)c->ctr_hi_, (long long)c->ctr_lo_));
      if ((size_t)j < nb && ++c->ctr_lo_ == 0)
        c->ctr_hi_++;
    }
  }
  __m128i b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3], b4 = b[4], b5 = b[5],
          b6 = b[6], b7 = b[7];
  AES8(_mm_xor_si128, rk[0]);
  for (int r = 1; r < AES128_ROUNDS; r++)
    AES8(_mm_aesenc_si128, rk[r]);
  AES8(_mm_aesenclast_si128, rk[AES128_ROUNDS]);
  b[0] = b0; b[1] = b1; b[2] = b2; b[3] = b3;
  b[4] = b4; b[5] = b5; b[6] = b6; b[7] = b7;
  size_t j = 0;
  for (; 16 * (j + 1) <= n; j++)
    XOR_OUT(j, b[j]);
  if (n % 16) {
    _mm_storeu_si128((__m128i *)c->ks_, b[j]);
    for (size_t i = 0; i < n % 16; i++)
      out[16 * j + i] = in[16 * j + i] ^ c->ks_[i];
    c->ks_used_ = (uint8_t)(n % 16);
  }
}

/* XOR n keystream bytes into in, writing out, starting at a block
 * boundary; the unused rest of the last block's keystream stays in c->ks_
 * (c->ks_used_ its used bytes). */
static AESNI_FN void
aesni_ctr(crypt_aes_t *c, uint8_t *out, const uint8_t *in, size_t n)
{
  const __m128i *rk = (const __m128i *)c->rk_; /* 16-byte aligned */
  const __m128i one = _mm_set_epi64x(0, 1);
  while (n >= 16 * AESNI_PAR && c->ctr_lo_ <= UINT64_MAX - AESNI_PAR) {
    __m128i ctr = _mm_set_epi64x((long long)c->ctr_hi_,
                                 (long long)c->ctr_lo_);
    do {
      __m128i b0, b1, b2, b3, b4, b5, b6, b7;
      b0 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b1 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b2 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b3 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b4 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b5 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b6 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      b7 = aesni_bswap128(ctr); ctr = _mm_add_epi64(ctr, one);
      AES8(_mm_xor_si128, rk[0]);
      for (int r = 1; r < AES128_ROUNDS; r++)
        AES8(_mm_aesenc_si128, rk[r]);
      AES8(_mm_aesenclast_si128, rk[AES128_ROUNDS]);
      XOR_OUT(0, b0); XOR_OUT(1, b1); XOR_OUT(2, b2); XOR_OUT(3, b3);
      XOR_OUT(4, b4); XOR_OUT(5, b5); XOR_OUT(6, b6); XOR_OUT(7, b7);
      in += 16 * AESNI_PAR;
      out += 16 * AESNI_PAR;
      n -= 16 * AESNI_PAR;
      c->ctr_lo_ += AESNI_PAR;
    } while (n >= 16 * AESNI_PAR && c->ctr_lo_ <= UINT64_MAX - AESNI_PAR);
  }
  /* The rest (and everything near a wrap of the low half), up to eight
   * blocks at a time; a partial last block leaves its unused keystream in
   * c->ks_. */
  while (n > 0) {
    size_t take = n < 16 * AESNI_PAR ? n : 16 * AESNI_PAR;
    aesni_ctr_tail(c, rk, out, in, take, (take + 15) / 16);
    in += take;
    out += take;
    n -= take;
  }
}
#undef AES8
#undef XOR_OUT

static void
aesni_crypt(crypt_aes_t *c, uint8_t *out, const uint8_t *in, size_t n)
{
  /* The rest of the previous block's keystream first. */
  while (n > 0 && c->ks_used_ < 16) {
    *out++ = *in++ ^ c->ks_[c->ks_used_++];
    n--;
  }
  if (n > 0)
    aesni_ctr(c, out, in, n);
}
#endif /* PCTOR_AESNI */

void
crypt_aes_init(crypt_aes_t *c, const uint8_t *key, int key_bits,
               const uint8_t *iv)
{
  static const uint8_t zero_iv[16];
  const crypt_algs_t *a = crypt_algs_();
  const EVP_CIPHER *cipher;

  if (key_bits == 128) {
    cipher = a->aes128_ctr;
  } else if (key_bits == 256) {
    cipher = a->aes256_ctr;
  } else {
    log_err("AES key size %d is not 128 or 256", key_bits);
    abort();
  }
  memset(c, 0, sizeof(*c));
#ifdef PCTOR_AESNI
  if (key_bits == 128 && !force_evp && aesni_available() &&
      ((uintptr_t)c->rk_ & 15) == 0) {
    const uint8_t *b = iv ? iv : zero_iv;
    aesni_expand_key128(c->rk_, key);
    c->ctr_hi_ = get_u64(b);
    c->ctr_lo_ = get_u64(b + 8);
    c->ks_used_ = 16;
    return;
  }
#endif
  c->ctx_ = EVP_CIPHER_CTX_new();
  if (!c->ctx_)
    crypt_fatal_("AES context");
  if (EVP_EncryptInit_ex2(c->ctx_, cipher, key, iv ? iv : zero_iv, NULL) != 1)
    crypt_fatal_("AES-CTR init");
}

crypt_aes_t *
crypt_aes_new(const uint8_t *key, int key_bits, const uint8_t *iv)
{
  crypt_aes_t *c = pc_zalloc(sizeof(*c));
  crypt_aes_init(c, key, key_bits, iv);
  return c;
}

void
crypt_aes_crypt(crypt_aes_t *c, uint8_t *out, const uint8_t *in, size_t n)
{
#ifdef PCTOR_AESNI
  if (!c->ctx_) {
    aesni_crypt(c, out, in, n);
    return;
  }
#endif
  while (n > 0) {
    int chunk = n > (INT_MAX & ~15) ? (INT_MAX & ~15) : (int)n;
    int outl = 0;
    if (EVP_EncryptUpdate(c->ctx_, out, &outl, in, chunk) != 1 ||
        outl != chunk)
      crypt_fatal_("AES-CTR");
    out += chunk;
    in += chunk;
    n -= (size_t)chunk;
  }
}

const char *
crypt_aes_impl_name(const crypt_aes_t *c)
{
  return c->ctx_ ? "OpenSSL EVP" : "AES-NI";
}

void
crypt_aes_clear(crypt_aes_t *c)
{
  EVP_CIPHER_CTX_free(c->ctx_); /* cleanses its key schedule */
  pc_memwipe(c, sizeof(*c));
}

void
crypt_aes_free_(crypt_aes_t *c)
{
  if (!c)
    return;
  crypt_aes_clear(c);
  free(c);
}
