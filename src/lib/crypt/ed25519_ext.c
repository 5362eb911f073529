/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519_ext.c -- Ed25519 signing with an expanded secret key, and Tor's
 * curve25519 -> Ed25519 key conversion (for ntor-onion-key-crosscert).
 *
 * Why this exists: OpenSSL 3.0 signs Ed25519 only from a 32-byte seed,
 * but the Ed25519 key Tor derives from a curve25519 onion key exists only
 * in expanded form (scalar a, nonce prefix), so signing is done here,
 * following RFC 8032 section 5.1.6 and the group law of its section 6
 * reference code.
 *
 * Design:
 *  - Field (mod p = 2^255 - 19) and scalar (mod L) arithmetic use OpenSSL
 *    BIGNUMs; points are kept in extended homogeneous coordinates
 *    (X:Y:Z:T), x = X/Z, y = Y/Z, x*y = T/Z, added with the complete
 *    formula of RFC 8032 section 5.1.4 (also used for doubling).
 *  - Scalar multiplication is plain double-and-add over the scalar's bits.
 *    It is NOT constant time. Multiplications by a secret scalar k are
 *    blinded instead: the loop runs over k + m*L with m a fresh random
 *    128-bit number (B has order L, so the result is the same), so the
 *    sequence of additions changes at every call and does not spell out
 *    k's bits. This code signs a few times a day (the crosscert, and
 *    certificates and descriptors when the relay's keys came from tor's
 *    expanded-key files), on the relay itself, with no remote trigger. A
 *    few milliseconds per signature is fine here; nothing on a hot path
 *    may call it.
 *  - Every call builds its own context (curve constants derived from their
 *    definitions: d = -121665/121666, B = (x, 4/5) with x even), so there is
 *    no global state. Numbers that depend on a secret come from
 *    BN_CTX_secure_new / BN_secure_new and are cleared when freed; byte
 *    buffers holding secrets are wiped with pc_memwipe().
 *  - ed25519_sign_expanded() recomputes the public key from the secret and
 *    refuses to sign if the caller's pub differs: signing with a wrong
 *    public key would leak the secret scalar (as ed25519.c explains).
 *  - The conversion follows dir-spec appendix C: the expanded key's scalar
 *    is the (clamped) curve25519 secret, its prefix is
 *    SHA-512(secret | "Derive high part of ed25519 key from curve25519
 *    key\0")[0..32], and the sign bit is the sign of the Edwards x of
 *    secret * B. Secrets from curve25519_keypair_generate() are already
 *    clamped; clamping a copy here only makes a non-clamped stored secret
 *    agree with the X25519 public key (X25519 clamps the same way).
 */
#include <string.h>

#include <openssl/bn.h>
#include <openssl/evp.h>

#include "lib/crypt/crypt_internal.h"
#include "lib/crypt/ed25519_ext.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

/* Fail (goto err) if an OpenSSL call returned 0 / NULL. */
#define CK(e) do { if (!(e)) goto err; } while (0)

/* Curve constants and the BIGNUM scratch pool for one operation. */
typedef struct {
  BN_CTX *bn;
  BIGNUM *p;       /* 2^255 - 19 */
  BIGNUM *L;       /* group order, 2^252 + 2774231777...8493 */
  BIGNUM *d2;      /* 2*d mod p */
  BIGNUM *d;       /* -121665/121666 mod p */
  BIGNUM *sqrtm1;  /* 2^((p-1)/4) mod p, a square root of -1 */
  BIGNUM *bx, *by; /* base point, affine */
} ed_ctx_t;

/* A point in extended coordinates. */
typedef struct {
  BIGNUM *X, *Y, *Z, *T;
} ed_point_t;

static void
point_clear(ed_point_t *P)
{
  BN_clear_free(P->X);
  BN_clear_free(P->Y);
  BN_clear_free(P->Z);
  BN_clear_free(P->T);
  memset(P, 0, sizeof(*P));
}

static int
point_init(ed_point_t *P)
{
  P->X = BN_secure_new();
  P->Y = BN_secure_new();
  P->Z = BN_secure_new();
  P->T = BN_secure_new();
  if (P->X && P->Y && P->Z && P->T)
    return 0;
  point_clear(P);
  return -1;
}

/* P = the neutral element (0 : 1 : 1 : 0). */
static int
point_set_identity(ed_point_t *P)
{
  BN_zero(P->X);
  BN_zero(P->T);
  return BN_one(P->Y) && BN_one(P->Z);
}

/* Little-endian 32 bytes -> BIGNUM. */
static int
bn_from_le(BIGNUM *r, const uint8_t *b, size_t n)
{
  return BN_lebin2bn(b, (int)n, r) != NULL;
}

/* x = the square root of (y^2-1)/(d y^2+1) whose low bit is sign
 * (RFC 8032 section 5.1.3 steps 2-4). -1 if there is none, or if x = 0
 * and sign = 1. y must be reduced mod p. */
static int
recover_x(ed_ctx_t *c, BIGNUM *x, const BIGNUM *y, int sign)
{
  int r = -1;
  BN_CTX_start(c->bn);
  BIGNUM *y2 = BN_CTX_get(c->bn), *num = BN_CTX_get(c->bn);
  BIGNUM *den = BN_CTX_get(c->bn), *x2 = BN_CTX_get(c->bn);
  BIGNUM *e = BN_CTX_get(c->bn), *t = BN_CTX_get(c->bn);
  CK(t);
  CK(BN_mod_sqr(y2, y, c->p, c->bn));
  CK(BN_mod_sub(num, y2, BN_value_one(), c->p, c->bn));
  CK(BN_mod_mul(den, c->d, y2, c->p, c->bn));
  CK(BN_mod_add(den, den, BN_value_one(), c->p, c->bn));
  /* d*y^2 + 1 is never 0 since d is not a square; check anyway. */
  if (BN_is_zero(den))
    goto err;
  CK(BN_mod_inverse(den, den, c->p, c->bn));
  CK(BN_mod_mul(x2, num, den, c->p, c->bn));
  if (BN_is_zero(x2)) {
    if (sign)
      goto err;
    BN_zero(x);
    r = 0;
    goto err;
  }
  /* Candidate x = x2^((p+3)/8). */
  CK(BN_copy(e, c->p));
  CK(BN_add_word(e, 3));
  CK(BN_rshift(e, e, 3));
  CK(BN_mod_exp(x, x2, e, c->p, c->bn));
  CK(BN_mod_sqr(t, x, c->p, c->bn));
  if (BN_cmp(t, x2) != 0) {
    CK(BN_mod_mul(x, x, c->sqrtm1, c->p, c->bn));
    CK(BN_mod_sqr(t, x, c->p, c->bn));
    if (BN_cmp(t, x2) != 0)
      goto err; /* not a square: no point with this y */
  }
  if (BN_is_odd(x) != (sign != 0))
    CK(BN_sub(x, c->p, x));
  r = 0;
 err:
  BN_CTX_end(c->bn);
  return r;
}

static void
ctx_clear(ed_ctx_t *c)
{
  BN_free(c->p);
  BN_free(c->L);
  BN_free(c->d2);
  BN_free(c->d);
  BN_free(c->sqrtm1);
  BN_free(c->bx);
  BN_free(c->by);
  BN_CTX_free(c->bn);
  memset(c, 0, sizeof(*c));
}

static int
ctx_init(ed_ctx_t *c)
{
  BIGNUM *t = NULL, *e = NULL;
  memset(c, 0, sizeof(*c));
  CK(c->bn = BN_CTX_secure_new());
  CK(c->p = BN_new());
  CK(c->L = BN_new());
  CK(c->d2 = BN_new());
  CK(c->d = BN_new());
  CK(c->sqrtm1 = BN_new());
  CK(c->bx = BN_new());
  CK(c->by = BN_new());
  CK(t = BN_new());
  CK(e = BN_new());

  /* p = 2^255 - 19 */
  BN_zero(c->p);
  CK(BN_set_bit(c->p, 255));
  CK(BN_sub_word(c->p, 19));
  /* L = 2^252 + 27742317777372353535851937790883648493 */
  CK(BN_dec2bn(&c->L, "27742317777372353535851937790883648493"));
  BN_zero(t);
  CK(BN_set_bit(t, 252));
  CK(BN_add(c->L, c->L, t));
  /* d = -121665 / 121666 mod p */
  CK(BN_set_word(t, 121666));
  CK(BN_mod_inverse(t, t, c->p, c->bn));
  CK(BN_set_word(c->d, 121665));
  CK(BN_mod_mul(c->d, c->d, t, c->p, c->bn));
  CK(BN_sub(c->d, c->p, c->d));
  CK(BN_mod_add(c->d2, c->d, c->d, c->p, c->bn));
  /* sqrt(-1) = 2^((p-1)/4) */
  CK(BN_copy(e, c->p));
  CK(BN_sub_word(e, 1));
  CK(BN_rshift(e, e, 2));
  CK(BN_set_word(t, 2));
  CK(BN_mod_exp(c->sqrtm1, t, e, c->p, c->bn));
  /* B: y = 4/5, x positive (even) */
  CK(BN_set_word(t, 5));
  CK(BN_mod_inverse(t, t, c->p, c->bn));
  CK(BN_set_word(c->by, 4));
  CK(BN_mod_mul(c->by, c->by, t, c->p, c->bn));
  if (recover_x(c, c->bx, c->by, 0) < 0)
    goto err;
  BN_free(t);
  BN_free(e);
  return 0;
 err:
  BN_free(t);
  BN_free(e);
  ctx_clear(c);
  crypt_log_openssl_errors_("Ed25519 arithmetic set-up");
  return -1;
}

/* R = P + Q (RFC 8032 section 5.1.4; complete, so P == Q is fine). R may
 * alias P or Q. */
static int
point_add(ed_ctx_t *c, ed_point_t *R, const ed_point_t *P,
          const ed_point_t *Q)
{
  int r = -1;
  BN_CTX *bn = c->bn;
  BN_CTX_start(bn);
  BIGNUM *A = BN_CTX_get(bn), *B = BN_CTX_get(bn), *C = BN_CTX_get(bn);
  BIGNUM *D = BN_CTX_get(bn), *E = BN_CTX_get(bn), *F = BN_CTX_get(bn);
  BIGNUM *G = BN_CTX_get(bn), *H = BN_CTX_get(bn), *t = BN_CTX_get(bn);
  CK(t);
  /* A = (Y1-X1)*(Y2-X2) */
  CK(BN_mod_sub(A, P->Y, P->X, c->p, bn));
  CK(BN_mod_sub(t, Q->Y, Q->X, c->p, bn));
  CK(BN_mod_mul(A, A, t, c->p, bn));
  /* B = (Y1+X1)*(Y2+X2) */
  CK(BN_mod_add(B, P->Y, P->X, c->p, bn));
  CK(BN_mod_add(t, Q->Y, Q->X, c->p, bn));
  CK(BN_mod_mul(B, B, t, c->p, bn));
  /* C = T1*2*d*T2 */
  CK(BN_mod_mul(C, P->T, c->d2, c->p, bn));
  CK(BN_mod_mul(C, C, Q->T, c->p, bn));
  /* D = Z1*2*Z2 */
  CK(BN_mod_mul(D, P->Z, Q->Z, c->p, bn));
  CK(BN_mod_add(D, D, D, c->p, bn));
  CK(BN_mod_sub(E, B, A, c->p, bn));
  CK(BN_mod_sub(F, D, C, c->p, bn));
  CK(BN_mod_add(G, D, C, c->p, bn));
  CK(BN_mod_add(H, B, A, c->p, bn));
  CK(BN_mod_mul(R->X, E, F, c->p, bn));
  CK(BN_mod_mul(R->Y, G, H, c->p, bn));
  CK(BN_mod_mul(R->T, E, H, c->p, bn));
  CK(BN_mod_mul(R->Z, F, G, c->p, bn));
  r = 0;
 err:
  BN_CTX_end(bn);
  return r;
}

/* R = k * B, B the base point; k any non-negative integer. Variable time
 * (see the top of the file); k is blinded with a random multiple of L. */
static int
point_mul_base(ed_ctx_t *c, ed_point_t *R, const BIGNUM *k_in)
{
  ed_point_t Bp = { 0 };
  BIGNUM *k = NULL, *m = NULL;
  int r = -1;
  if (point_init(&Bp) < 0)
    return -1;
  CK(k = BN_secure_new());
  CK(m = BN_secure_new());
  CK(BN_rand(m, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY));
  CK(BN_mul(m, m, c->L, c->bn));
  CK(BN_add(k, k_in, m));
  CK(BN_copy(Bp.X, c->bx));
  CK(BN_copy(Bp.Y, c->by));
  CK(BN_one(Bp.Z));
  CK(BN_mod_mul(Bp.T, c->bx, c->by, c->p, c->bn));
  CK(point_set_identity(R));
  for (int i = BN_num_bits(k) - 1; i >= 0; i--) {
    if (point_add(c, R, R, R) < 0)
      goto err;
    if (BN_is_bit_set(k, i) && point_add(c, R, R, &Bp) < 0)
      goto err;
  }
  r = 0;
 err:
  point_clear(&Bp);
  BN_clear_free(k);
  BN_clear_free(m);
  return r;
}

/* out = RFC 8032 encoding of P: y little-endian, sign of x in bit 255. */
static int
point_encode(ed_ctx_t *c, uint8_t out[32], const ed_point_t *P)
{
  int r = -1;
  BN_CTX_start(c->bn);
  BIGNUM *zi = BN_CTX_get(c->bn), *x = BN_CTX_get(c->bn);
  BIGNUM *y = BN_CTX_get(c->bn);
  CK(y);
  CK(BN_mod_inverse(zi, P->Z, c->p, c->bn));
  CK(BN_mod_mul(x, P->X, zi, c->p, c->bn));
  CK(BN_mod_mul(y, P->Y, zi, c->p, c->bn));
  CK(BN_bn2lebinpad(y, out, 32) == 32);
  out[31] |= (uint8_t)(BN_is_odd(x) ? 0x80 : 0);
  r = 0;
 err:
  BN_CTX_end(c->bn);
  return r;
}

/* out = SHA-512(a | b | m); any part may be empty. */
static int
sha512_3(uint8_t out[64], const void *a, size_t an, const void *b,
         size_t bn, const void *m, size_t mn)
{
  unsigned outlen = 0;
  int r = -1;
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  CK(h);
  CK(EVP_DigestInit_ex(h, EVP_sha512(), NULL));
  CK(an == 0 || EVP_DigestUpdate(h, a, an));
  CK(bn == 0 || EVP_DigestUpdate(h, b, bn));
  CK(mn == 0 || EVP_DigestUpdate(h, m, mn));
  CK(EVP_DigestFinal_ex(h, out, &outlen) && outlen == 64);
  r = 0;
 err:
  EVP_MD_CTX_free(h);
  if (r < 0)
    crypt_log_openssl_errors_("SHA-512");
  return r;
}

/* pub = encode(a * B) with an already set-up context. */
static int
public_from_expanded(ed_ctx_t *c, uint8_t pub[32], const uint8_t esk[64])
{
  ed_point_t A = { 0 };
  BIGNUM *a = NULL;
  int r = -1;
  CK(a = BN_secure_new());
  CK(bn_from_le(a, esk, 32));
  if (point_init(&A) < 0)
    goto err;
  if (point_mul_base(c, &A, a) < 0 || point_encode(c, pub, &A) < 0)
    goto err;
  r = 0;
 err:
  point_clear(&A);
  BN_clear_free(a);
  return r;
}

int
ed25519_public_from_expanded(uint8_t pub[ED25519_PUBKEY_LEN],
                             const uint8_t expanded[ED25519_EXPANDED_LEN])
{
  ed_ctx_t c;
  int r;
  if (ctx_init(&c) < 0)
    return -1;
  r = public_from_expanded(&c, pub, expanded);
  if (r < 0)
    crypt_log_openssl_errors_("Ed25519 public key from expanded key");
  ctx_clear(&c);
  return r;
}

int
ed25519_expand_seed(uint8_t expanded_out[ED25519_EXPANDED_LEN],
                    const uint8_t seed[ED25519_SEED_LEN])
{
  if (sha512_3(expanded_out, seed, ED25519_SEED_LEN, NULL, 0, NULL, 0) < 0)
    return -1;
  expanded_out[0] &= 248;
  expanded_out[31] &= 127;
  expanded_out[31] |= 64;
  return 0;
}

int
ed25519_sign_expanded(uint8_t sig[ED25519_SIG_LEN], const uint8_t *msg,
                      size_t len,
                      const uint8_t expanded_secret[ED25519_EXPANDED_LEN],
                      const uint8_t pub[ED25519_PUBKEY_LEN])
{
  ed_ctx_t c;
  ed_point_t Rp = { 0 };
  BIGNUM *a = NULL, *rs = NULL, *k = NULL, *s = NULL;
  uint8_t h[64], chk[32], out[64];
  int r = -1;

  if (!msg && len)
    return -1;
  if (ctx_init(&c) < 0)
    return -1;
  if (public_from_expanded(&c, chk, expanded_secret) < 0)
    goto err;
  if (memcmp(chk, pub, 32) != 0) {
    log_warn("ed25519_sign_expanded: public key does not match the secret "
             "key; refusing to sign");
    goto done;
  }
  CK(a = BN_secure_new());
  CK(rs = BN_secure_new());
  CK(k = BN_new());
  CK(s = BN_secure_new());
  if (point_init(&Rp) < 0)
    goto err;

  /* r = SHA-512(prefix | M) mod L; R = r*B */
  if (sha512_3(h, expanded_secret + 32, 32, msg, len, NULL, 0) < 0)
    goto done;
  CK(bn_from_le(rs, h, 64));
  CK(BN_nnmod(rs, rs, c.L, c.bn));
  if (point_mul_base(&c, &Rp, rs) < 0 || point_encode(&c, out, &Rp) < 0)
    goto err;
  /* k = SHA-512(enc(R) | A | M) mod L */
  if (sha512_3(h, out, 32, pub, 32, msg, len) < 0)
    goto done;
  CK(bn_from_le(k, h, 64));
  CK(BN_nnmod(k, k, c.L, c.bn));
  /* S = (r + k*a) mod L */
  CK(bn_from_le(a, expanded_secret, 32));
  CK(BN_mod_mul(s, k, a, c.L, c.bn));
  CK(BN_mod_add(s, s, rs, c.L, c.bn));
  CK(BN_bn2lebinpad(s, out + 32, 32) == 32);
  memcpy(sig, out, 64);
  r = 0;
  goto done;
 err:
  crypt_log_openssl_errors_("Ed25519 expanded-key signature");
 done:
  point_clear(&Rp);
  BN_clear_free(a);
  BN_clear_free(rs);
  BN_free(k);
  BN_clear_free(s);
  ctx_clear(&c);
  pc_memwipe(h, sizeof(h));
  pc_memwipe(out, sizeof(out));
  return r;
}

/* Birational map with a set-up context. */
static int
public_from_curve25519_public(ed_ctx_t *c, uint8_t ed_pub[32],
                              const uint8_t x_pub[32], int signbit)
{
  uint8_t ub[32];
  int r = -1;
  BN_CTX_start(c->bn);
  BIGNUM *u = BN_CTX_get(c->bn), *num = BN_CTX_get(c->bn);
  BIGNUM *den = BN_CTX_get(c->bn), *y = BN_CTX_get(c->bn);
  BIGNUM *x = BN_CTX_get(c->bn);
  CK(x);
  /* RFC 7748 section 5: the top bit of a u-coordinate is ignored, and a
   * non-canonical value is taken mod p. */
  memcpy(ub, x_pub, 32);
  ub[31] &= 0x7f;
  CK(bn_from_le(u, ub, 32));
  CK(BN_nnmod(u, u, c->p, c->bn));
  CK(BN_mod_sub(num, u, BN_value_one(), c->p, c->bn));
  CK(BN_mod_add(den, u, BN_value_one(), c->p, c->bn));
  if (BN_is_zero(den)) {
    r = -2; /* u = -1: no Edwards point */
    goto err;
  }
  CK(BN_mod_inverse(den, den, c->p, c->bn));
  CK(BN_mod_mul(y, num, den, c->p, c->bn));
  /* Only accept a y that decodes to a curve point with that sign (a u on
   * the twist does not); verification would reject anything else. */
  if (recover_x(c, x, y, signbit) < 0) {
    r = -2;
    goto err;
  }
  CK(BN_bn2lebinpad(y, ed_pub, 32) == 32);
  ed_pub[31] |= (uint8_t)(signbit ? 0x80 : 0);
  r = 0;
 err:
  BN_CTX_end(c->bn);
  return r;
}

int
ed25519_public_from_curve25519_public(uint8_t ed_pub[ED25519_PUBKEY_LEN],
                                      const uint8_t x_pub[CURVE25519_KEY_LEN],
                                      int signbit)
{
  ed_ctx_t c;
  int r;
  if (signbit != 0 && signbit != 1)
    return -1;
  if (ctx_init(&c) < 0)
    return -1;
  r = public_from_curve25519_public(&c, ed_pub, x_pub, signbit);
  if (r == -1)
    crypt_log_openssl_errors_("curve25519 to Ed25519 public key");
  ctx_clear(&c);
  return r < 0 ? -1 : 0;
}

int
ed25519_keypair_from_curve25519(uint8_t expanded_out[ED25519_EXPANDED_LEN],
                                uint8_t pub_out[ED25519_PUBKEY_LEN],
                                int *signbit_out,
                                const curve25519_keypair_t *kp)
{
  static const char tag[] =
    "Derive high part of ed25519 key from curve25519 key";
  uint8_t esk[64], h[64], pub[32], chk[32];
  ed_ctx_t c;
  int r = -1, signbit;

  memcpy(esk, kp->secret, 32);
  esk[0] &= 248;
  esk[31] &= 127;
  esk[31] |= 64;
  /* sizeof(tag) includes the terminating NUL, which the spec hashes. */
  if (sha512_3(h, esk, 32, tag, sizeof(tag), NULL, 0) < 0)
    goto out;
  memcpy(esk + 32, h, 32);
  if (ctx_init(&c) < 0)
    goto out;
  if (public_from_expanded(&c, pub, esk) < 0) {
    crypt_log_openssl_errors_("Ed25519 key from curve25519 key");
    ctx_clear(&c);
    goto out;
  }
  signbit = pub[31] >> 7;
  /* The map from kp->pub must give the same key, or the crosscert we are
   * about to make would not verify (kp->pub does not match kp->secret). */
  if (public_from_curve25519_public(&c, chk, kp->pub, signbit) < 0 ||
      memcmp(chk, pub, 32) != 0) {
    log_warn("ed25519_keypair_from_curve25519: the curve25519 public key "
             "does not match its secret key");
    ctx_clear(&c);
    goto out;
  }
  ctx_clear(&c);
  memcpy(expanded_out, esk, 64);
  memcpy(pub_out, pub, 32);
  *signbit_out = signbit;
  r = 0;
 out:
  pc_memwipe(esk, sizeof(esk));
  pc_memwipe(h, sizeof(h));
  return r;
}
