/* SPDX-License-Identifier: BSD-3-Clause */
/* curve25519_base.c -- X25519 public keys (secret * base point) with a
 * precomputed table, for the ephemeral key of every ntor handshake.
 *
 * Why this exists: each CREATE2 a relay answers makes a fresh X25519
 * keypair, and OpenSSL 3.0 computes the public half (through
 * EVP_PKEY_new_raw_private_key or EVP_PKEY_keygen) more slowly than a
 * whole X25519 exchange with its assembler ladder (measured 34 us against
 * 27 us on the benchmark machine): a third of the relay's CPU per CREATE2.
 * A fixed base point allows a table of its multiples, which makes the
 * multiplication several times cheaper; tor does the same (with its
 * bundled Ed25519 base-point code).
 *
 * Design (the method of the Ed25519 paper, Bernstein et al. 2011, written
 * from its description and RFC 7748/8032's formulas):
 *  - Field elements mod p = 2^255 - 19 are five 51-bit limbs (uint64_t),
 *    multiplied with unsigned __int128 products; 2^255 = 19 folds the top.
 *    Sums and differences are not carried: each is made from
 *    multiplication outputs (limbs below 2^51 + 2^20) and feeds a
 *    multiplication, so limbs stay below 2^54, which the products allow.
 *  - The scalar multiplication runs on the birationally equivalent twisted
 *    Edwards curve -x^2 + y^2 = 1 + d x^2 y^2 (RFC 7748 section 4.1) in
 *    extended coordinates, with the complete addition of Hisil et al.
 *    ("add-2008-hwcd-3", a = -1): one formula for every pair of points,
 *    the neutral element and doubling included, so there are no branches.
 *  - The clamped scalar is written in 64 signed radix-16 digits in
 *    [-8, 8]; the table holds j * 16^i * B (i < 64, j = 1..8) in affine
 *    "Niels" form (y+x, y-x, 2dxy), so the result is 64 mixed additions and
 *    no doubling. The entry is selected by scanning all 8 with masks and
 *    negated with masks (swap y+x and y-x, negate 2dxy): the memory access
 *    pattern and the instruction sequence do not depend on the secret.
 *  - The Montgomery u-coordinate of the result is (Z + Y) / (Z - Y); the
 *    inversion is an exponentiation by p - 2 with a fixed chain.
 *  - The table (60 KiB) is computed once, on first use, under pthread_once
 *    (about 3 ms); after that it is only read, so any thread may use it.
 *    It holds multiples of the public base point only, nothing secret.
 * The unit tests compare the result with OpenSSL's for many scalars and
 * with RFC 7748's vectors.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "lib/crypt/crypt_internal.h"
#include "lib/malloc/alloc.h"

/* Needs 64x64->128-bit products; elsewhere curve25519.c uses OpenSSL. */
#ifdef __SIZEOF_INT128__

typedef uint64_t fe[5];
typedef unsigned __int128 u128;

#define MASK51 ((UINT64_C(1) << 51) - 1)

/* d2 = 2 * (-121665 / 121666) mod p, and the base point's affine x and
 * y = 4/5 (computed with Python from their definitions in RFC 7748 4.1). */
static const fe fe_d2 = { 0x69b9426b2f159ULL, 0x35050762add7aULL,
                          0x3cf44c0038052ULL, 0x6738cc7407977ULL,
                          0x2406d9dc56dffULL };
static const fe base_x = { 0x62d608f25d51aULL, 0x412a4b4f6592aULL,
                           0x75b7171a4b31dULL, 0x1ff60527118feULL,
                           0x216936d3cd6e5ULL };
static const fe base_y = { 0x6666666666658ULL, 0x4ccccccccccccULL,
                           0x1999999999999ULL, 0x3333333333333ULL,
                           0x6666666666666ULL };

static void
fe_copy(fe h, const fe f)
{
  memcpy(h, f, sizeof(fe));
}

static void
fe_set_small(fe h, uint64_t v)
{
  h[0] = v;
  h[1] = h[2] = h[3] = h[4] = 0;
}

/* Bring every limb below 2^51 plus a little (one pass, top folded). */
static void
fe_carry(fe h)
{
  uint64_t c;
  c = h[0] >> 51, h[0] &= MASK51, h[1] += c;
  c = h[1] >> 51, h[1] &= MASK51, h[2] += c;
  c = h[2] >> 51, h[2] &= MASK51, h[3] += c;
  c = h[3] >> 51, h[3] &= MASK51, h[4] += c;
  c = h[4] >> 51, h[4] &= MASK51, h[0] += 19 * c;
}

/* h = f + g, not carried: the inputs are multiplication outputs (limbs
 * below 2^51 + 2^20), so the limbs stay below 2^53. */
static void
fe_add(fe h, const fe f, const fe g)
{
  for (int i = 0; i < 5; i++)
    h[i] = f[i] + g[i];
}

/* h = f - g, computed as f + 4p - g so that no limb goes negative (g is a
 * multiplication output, f below 2^53): limbs below 2^54, not carried. */
static void
fe_sub(fe h, const fe f, const fe g)
{
  h[0] = f[0] + UINT64_C(0x1FFFFFFFFFFFB4) - g[0];
  for (int i = 1; i < 5; i++)
    h[i] = f[i] + UINT64_C(0x1FFFFFFFFFFFFC) - g[i];
}

/* h = the five 128-bit column sums r0..r4 (each below 2^116) carried into
 * limbs below 2^51 (limb 1: 2^51 + 2^20). */
static void
fe_reduce(fe h, u128 r0, u128 r1, u128 r2, u128 r3, u128 r4)
{
  r1 += (uint64_t)(r0 >> 51);
  h[0] = (uint64_t)r0 & MASK51;
  r2 += (uint64_t)(r1 >> 51);
  h[1] = (uint64_t)r1 & MASK51;
  r3 += (uint64_t)(r2 >> 51);
  h[2] = (uint64_t)r2 & MASK51;
  r4 += (uint64_t)(r3 >> 51);
  h[3] = (uint64_t)r3 & MASK51;
  /* r4 >> 51 is below 2^66: fold it into limb 0 in 128 bits. */
  u128 t = (u128)h[0] + (r4 >> 51) * 19;
  h[4] = (uint64_t)r4 & MASK51;
  h[0] = (uint64_t)t & MASK51;
  h[1] += (uint64_t)(t >> 51);
}

/* h = f * g for limbs below 2^54. */
static void
fe_mul(fe h, const fe f, const fe g)
{
  uint64_t g1_19 = 19 * g[1], g2_19 = 19 * g[2], g3_19 = 19 * g[3],
           g4_19 = 19 * g[4];
  u128 r0, r1, r2, r3, r4;

  r0 = (u128)f[0] * g[0] + (u128)f[1] * g4_19 + (u128)f[2] * g3_19 +
       (u128)f[3] * g2_19 + (u128)f[4] * g1_19;
  r1 = (u128)f[0] * g[1] + (u128)f[1] * g[0] + (u128)f[2] * g4_19 +
       (u128)f[3] * g3_19 + (u128)f[4] * g2_19;
  r2 = (u128)f[0] * g[2] + (u128)f[1] * g[1] + (u128)f[2] * g[0] +
       (u128)f[3] * g4_19 + (u128)f[4] * g3_19;
  r3 = (u128)f[0] * g[3] + (u128)f[1] * g[2] + (u128)f[2] * g[1] +
       (u128)f[3] * g[0] + (u128)f[4] * g4_19;
  r4 = (u128)f[0] * g[4] + (u128)f[1] * g[3] + (u128)f[2] * g[2] +
       (u128)f[3] * g[1] + (u128)f[4] * g[0];

  fe_reduce(h, r0, r1, r2, r3, r4);
}

/* h = f^2: fe_mul's sums with the equal cross products added once, twice. */
static void
fe_sq(fe h, const fe f)
{
  uint64_t d0 = 2 * f[0], d1 = 2 * f[1], f3_19 = 19 * f[3],
           f3_38 = 38 * f[3], f4_19 = 19 * f[4], f4_38 = 38 * f[4];
  u128 r0, r1, r2, r3, r4;

  r0 = (u128)f[0] * f[0] + (u128)f[1] * f4_38 + (u128)f[2] * f3_38;
  r1 = (u128)d0 * f[1] + (u128)f[2] * f4_38 + (u128)f[3] * f3_19;
  r2 = (u128)d0 * f[2] + (u128)f[1] * f[1] + (u128)f[3] * f4_38;
  r3 = (u128)d0 * f[3] + (u128)d1 * f[2] + (u128)f[4] * f4_19;
  r4 = (u128)d0 * f[4] + (u128)d1 * f[3] + (u128)f[2] * f[2];
  fe_reduce(h, r0, r1, r2, r3, r4);
}

static void
fe_sq_n(fe h, const fe f, int n)
{
  fe_sq(h, f);
  for (int i = 1; i < n; i++)
    fe_sq(h, h);
}

/* h = z^(p-2) = 1/z (0 for z = 0); the chain's exponents are public. */
static void
fe_invert(fe h, const fe z)
{
  fe t0, t1, t2, t3;
  fe_sq_n(t0, z, 1);        /* z^2 */
  fe_sq_n(t1, t0, 2);       /* z^8 */
  fe_mul(t1, z, t1);        /* z^9 */
  fe_mul(t0, t0, t1);       /* z^11 */
  fe_sq_n(t2, t0, 1);       /* z^22 */
  fe_mul(t1, t1, t2);       /* z^(2^5 - 1) */
  fe_sq_n(t2, t1, 5);
  fe_mul(t1, t2, t1);       /* z^(2^10 - 1) */
  fe_sq_n(t2, t1, 10);
  fe_mul(t2, t2, t1);       /* z^(2^20 - 1) */
  fe_sq_n(t3, t2, 20);
  fe_mul(t2, t3, t2);       /* z^(2^40 - 1) */
  fe_sq_n(t2, t2, 10);
  fe_mul(t1, t2, t1);       /* z^(2^50 - 1) */
  fe_sq_n(t2, t1, 50);
  fe_mul(t2, t2, t1);       /* z^(2^100 - 1) */
  fe_sq_n(t3, t2, 100);
  fe_mul(t2, t3, t2);       /* z^(2^200 - 1) */
  fe_sq_n(t2, t2, 50);
  fe_mul(t1, t2, t1);       /* z^(2^250 - 1) */
  fe_sq_n(t1, t1, 5);       /* z^(2^255 - 32) */
  fe_mul(h, t1, t0);        /* z^(2^255 - 21) = z^(p - 2) */
  pc_memwipe(t0, sizeof(t0));
  pc_memwipe(t1, sizeof(t1));
  pc_memwipe(t2, sizeof(t2));
  pc_memwipe(t3, sizeof(t3));
}

/* The canonical 32-byte little-endian encoding of f mod p. */
static void
fe_tobytes(uint8_t s[32], const fe f)
{
  fe h;
  uint64_t q;
  fe_copy(h, f);
  fe_carry(h);
  fe_carry(h); /* now h < 2^255 + 2^13 or so, limbs below 2^51 */
  /* q = 1 iff h >= p, i.e. h + 19 >= 2^255. */
  q = (h[0] + 19) >> 51;
  q = (h[1] + q) >> 51;
  q = (h[2] + q) >> 51;
  q = (h[3] + q) >> 51;
  q = (h[4] + q) >> 51;
  h[0] += 19 * q;
  h[1] += h[0] >> 51, h[0] &= MASK51;
  h[2] += h[1] >> 51, h[1] &= MASK51;
  h[3] += h[2] >> 51, h[2] &= MASK51;
  h[4] += h[3] >> 51, h[3] &= MASK51;
  h[4] &= MASK51; /* drops the 2^255 that q stood for */
  uint64_t w[4] = { h[0] | (h[1] << 51), (h[1] >> 13) | (h[2] << 38),
                    (h[2] >> 26) | (h[3] << 25), (h[3] >> 39) | (h[4] << 12) };
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++)
      s[8 * i + j] = (uint8_t)(w[i] >> (8 * j));
  pc_memwipe(h, sizeof(h));
  pc_memwipe(w, sizeof(w));
}

/* ---- points ---- */

typedef struct {
  fe X, Y, Z, T; /* x = X/Z, y = Y/Z, xy = T/Z */
} ge_ext_t;

typedef struct {
  fe ypx, ymx, xy2d; /* y + x, y - x, 2dxy of an affine point */
} ge_niels_t;

static void
ge_set_neutral(ge_ext_t *r)
{
  fe_set_small(r->X, 0);
  fe_set_small(r->Y, 1);
  fe_set_small(r->Z, 1);
  fe_set_small(r->T, 0);
}

/* r = p + q (complete: any p, q, including p = q and the neutral). */
static void
ge_add_niels(ge_ext_t *r, const ge_ext_t *p, const ge_niels_t *q)
{
  fe a, b, c, d, e, f, g, h;
  fe_sub(a, p->Y, p->X);
  fe_mul(a, a, q->ymx);
  fe_add(b, p->Y, p->X);
  fe_mul(b, b, q->ypx);
  fe_mul(c, p->T, q->xy2d);
  fe_add(d, p->Z, p->Z);
  fe_sub(e, b, a);
  fe_sub(f, d, c);
  fe_add(g, d, c);
  fe_add(h, b, a);
  fe_mul(r->X, e, f);
  fe_mul(r->Y, g, h);
  fe_mul(r->T, e, h);
  fe_mul(r->Z, f, g);
}

static void
ge_to_niels(ge_niels_t *n, const ge_ext_t *p)
{
  fe zi, x, y;
  fe_invert(zi, p->Z);
  fe_mul(x, p->X, zi);
  fe_mul(y, p->Y, zi);
  fe_add(n->ypx, y, x);
  fe_sub(n->ymx, y, x);
  fe_mul(n->xy2d, x, y);
  fe_mul(n->xy2d, n->xy2d, fe_d2);
}

/* table[i][j] = (j + 1) * 16^i * B */
static ge_niels_t table[64][8];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void
table_setup(void)
{
  ge_ext_t p, acc;
  ge_niels_t step;
  /* p = B */
  fe_copy(p.X, base_x);
  fe_copy(p.Y, base_y);
  fe_set_small(p.Z, 1);
  fe_mul(p.T, base_x, base_y);
  for (int i = 0; i < 64; i++) {
    ge_to_niels(&step, &p); /* p = 16^i * B */
    ge_set_neutral(&acc);
    for (int j = 0; j < 8; j++) {
      ge_add_niels(&acc, &acc, &step);
      ge_to_niels(&table[i][j], &acc);
    }
    /* 16^(i+1) B = 8 * 16^i B + 8 * 16^i B */
    ge_add_niels(&p, &acc, &table[i][7]);
  }
}

/* 1 if a == b, else 0, without a branch (a, b < 2^32). */
static uint64_t
ct_eq(uint32_t a, uint32_t b)
{
  uint64_t x = (uint64_t)(a ^ b);
  return (x - 1) >> 63;
}

static void
fe_cmov(fe h, const fe f, uint64_t mask)
{
  for (int i = 0; i < 5; i++)
    h[i] ^= mask & (h[i] ^ f[i]);
}

/* n = digit * 16^i * B for a digit in [-8, 8], reading every entry. */
static void
table_select(ge_niels_t *n, int i, int8_t digit)
{
  uint64_t neg = (uint64_t)((uint8_t)digit >> 7);
  uint32_t abs = (uint32_t)(digit - (int8_t)((-(int)neg & digit) * 2));
  fe_set_small(n->ypx, 1);
  fe_set_small(n->ymx, 1);
  fe_set_small(n->xy2d, 0);
  for (uint32_t j = 0; j < 8; j++) {
    uint64_t m = 0 - ct_eq(abs, j + 1);
    fe_cmov(n->ypx, table[i][j].ypx, m);
    fe_cmov(n->ymx, table[i][j].ymx, m);
    fe_cmov(n->xy2d, table[i][j].xy2d, m);
  }
  /* -(x, y) = (-x, y): swap y+x and y-x, negate 2dxy. */
  uint64_t m = 0 - neg;
  fe t, zero, negxy;
  fe_copy(t, n->ypx);
  fe_cmov(n->ypx, n->ymx, m);
  fe_cmov(n->ymx, t, m);
  fe_set_small(zero, 0);
  fe_sub(negxy, zero, n->xy2d);
  fe_cmov(n->xy2d, negxy, m);
}

void
curve25519_base_mult_(uint8_t pub[32], const uint8_t secret[32])
{
  uint8_t s[32];
  int8_t e[64];
  ge_ext_t r;
  ge_niels_t n;
  fe num, den;

  pthread_once(&table_once, table_setup);
  memcpy(s, secret, 32);
  s[0] &= 248;
  s[31] &= 127;
  s[31] |= 64;
  for (int i = 0; i < 32; i++) {
    e[2 * i] = (int8_t)(s[i] & 15);
    e[2 * i + 1] = (int8_t)(s[i] >> 4);
  }
  /* Recenter to [-8, 8); the top digit ends at most 8 (s < 2^255). */
  int8_t carry = 0;
  for (int i = 0; i < 63; i++) {
    e[i] = (int8_t)(e[i] + carry);
    carry = (int8_t)((e[i] + 8) >> 4);
    e[i] = (int8_t)(e[i] - carry * 16);
  }
  e[63] = (int8_t)(e[63] + carry);

  ge_set_neutral(&r);
  for (int i = 0; i < 64; i++) {
    table_select(&n, i, e[i]);
    ge_add_niels(&r, &r, &n);
  }
  /* u = (1 + y) / (1 - y) = (Z + Y) / (Z - Y); Z != Y since the clamped
   * scalar is not a multiple of the base point's order. */
  fe_add(num, r.Z, r.Y);
  fe_sub(den, r.Z, r.Y);
  fe_invert(den, den);
  fe_mul(num, num, den);
  fe_tobytes(pub, num);

  pc_memwipe(s, sizeof(s));
  pc_memwipe(e, sizeof(e));
  pc_memwipe(&r, sizeof(r));
  pc_memwipe(&n, sizeof(n));
  pc_memwipe(num, sizeof(num));
  pc_memwipe(den, sizeof(den));
}

#else
typedef int curve25519_base_unused_t;
#endif
