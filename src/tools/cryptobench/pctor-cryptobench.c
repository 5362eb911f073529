/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-cryptobench.c -- CPU per relay cell of relay crypto (tor1,
 * core/crypto/relay_crypto.h), and the heap one hop's state takes.
 *
 * Times, per 509-byte relay payload (wall clock, best of --reps runs of
 * --cells cells each, so that a busy machine disturbs the figure less):
 *   pass      a relay adds or removes its layer of a cell that is not its
 *             own (relay_crypto_encrypt_backward): one AES-128-CTR pass,
 *             what a middle does for every cell it relays;
 *   fwd-ours  an origin packages a cell for the hop and the hop decrypts
 *             and recognizes it (relay_crypto_origin_encrypt +
 *             relay_crypto_decrypt_forward): two AES passes and two SHA-1
 *             updates, both ends together;
 *   bwd-ours  the hop originates a cell and the origin decrypts and
 *             recognizes it (relay_crypto_originate_backward +
 *             relay_crypto_origin_decrypt), the same work backwards.
 * Each is run with the AES-128 implementation crypt_aes_new() picks
 * ("auto": AES-NI where the CPU has it) and with OpenSSL's EVP forced
 * (crypt_aes_use_evp_for_testing). Also prints sizeof(relay_crypto_t),
 * the heap relay_crypto_new() takes (glibc's mallinfo2, over 10000
 * objects) and whether the AES-NI path is in use.
 *
 * Usage: pctor-cryptobench [--cells N] [--reps R]   (200000, 7)
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/crypto/relay_crypto.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/crypt_init.h"

static double
now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t
heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#else
  return 0;
#endif
}

static void
fail(const char *what)
{
  fprintf(stderr, "pctor-cryptobench: %s\n", what);
  exit(1);
}

/* Best of reps runs of n cells: ns per cell for the three operations. */
static void
run(long n, int reps, double out[3])
{
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  uint8_t p[CELL_PAYLOAD_LEN];
  for (size_t i = 0; i < sizeof(km); i++)
    km[i] = (uint8_t)(i * 7 + 1);
  /* origin's and relay's views of one hop, and a relay hop for "pass" */
  relay_crypto_t *o = relay_crypto_new(km), *r = relay_crypto_new(km);
  relay_crypto_t *pass = relay_crypto_new(km);
  relay_crypto_t *const hops[1] = { o };
  memset(p, 0x5a, sizeof(p));
  for (int k = 0; k < 3; k++)
    out[k] = 1e30;
  for (int rep = 0; rep < reps; rep++) {
    double t = now_s();
    for (long i = 0; i < n; i++)
      relay_crypto_encrypt_backward(pass, p);
    t = now_s() - t;
    if (t < out[0])
      out[0] = t;
    t = now_s();
    for (long i = 0; i < n; i++) {
      memset(p, 0, 11);
      p[0] = 2; /* DATA */
      relay_crypto_origin_encrypt(hops, 0, p);
      if (!relay_crypto_decrypt_forward(r, p))
        fail("a forward cell was not recognized");
    }
    t = now_s() - t;
    if (t < out[1])
      out[1] = t;
    t = now_s();
    for (long i = 0; i < n; i++) {
      memset(p, 0, 11);
      p[0] = 2;
      relay_crypto_originate_backward(r, p);
      if (relay_crypto_origin_decrypt(hops, 1, p) != 0)
        fail("a backward cell was not recognized");
    }
    t = now_s() - t;
    if (t < out[2])
      out[2] = t;
  }
  for (int k = 0; k < 3; k++)
    out[k] = out[k] / (double)n * 1e9;
  relay_crypto_free(o);
  relay_crypto_free(r);
  relay_crypto_free(pass);
}

int
main(int argc, char **argv)
{
  long n = 200000;
  int reps = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cells") && i + 1 < argc)
      n = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: pctor-cryptobench [--cells N] [--reps R]\n");
      return 2;
    }
  }
  if (n <= 0 || reps <= 0)
    fail("--cells and --reps must be positive");
  if (crypt_global_init() < 0)
    fail("the crypto library is unusable");

  enum { NOBJ = 10000 };
  static relay_crypto_t *objs[NOBJ];
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN] = { 1 };
  relay_crypto_free_(relay_crypto_new(km)); /* warm-up */
  size_t before = heap_in_use();
  for (int i = 0; i < NOBJ; i++)
    objs[i] = relay_crypto_new(km);
  size_t after = heap_in_use();
  for (int i = 0; i < NOBJ; i++)
    relay_crypto_free(objs[i]);
  crypt_aes_t probe;
  crypt_aes_init(&probe, km, 128, NULL);
  const char *impl = crypt_aes_impl_name(&probe);
  crypt_aes_clear(&probe);
  printf("relay_crypto_t: %zu bytes; relay_crypto_new(): %.0f bytes of "
         "heap each; AES-128: %s\n",
         sizeof(relay_crypto_t),
         before || after ? (double)(after - before) / NOBJ : -1.0,
         impl);

  printf("ns per cell, best of %d x %ld cells:\n", reps, n);
  printf("%-6s %8s %9s %9s\n", "aes", "pass", "fwd-ours", "bwd-ours");
  for (int evp = 0; evp < 2; evp++) {
    double ns[3];
    crypt_aes_use_evp_for_testing(evp);
    run(n, reps, ns);
    printf("%-6s %8.1f %9.1f %9.1f\n", evp ? "evp" : "auto", ns[0], ns[1],
           ns[2]);
  }
  crypt_aes_use_evp_for_testing(0);
  return 0;
}
