/* SPDX-License-Identifier: BSD-3-Clause */
/* siphash.c -- SipHash-2-4 and the process-wide hashing key (see
 * siphash.h).
 *
 * Written from the description in the SipHash paper: four 64-bit state
 * words initialised from the key and four constants, two SipRounds per
 * 8-byte message word, a final word holding the trailing bytes and the
 * length modulo 256, and four finalisation rounds. Words are read byte by
 * byte (little-endian), so unaligned input is fine on every platform.
 *
 * The process key is created under pthread_once() so that worker threads
 * can use hash maps too; after that it is read-only.
 */
#include "lib/container/siphash.h"
#include "lib/malloc/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

static inline uint64_t
le64(const uint8_t *p)
{
  return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
         ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) |
         ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) |
         ((uint64_t)p[7] << 56);
}

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                        \
  do {                                                                  \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);           \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                              \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                              \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);           \
  } while (0)

void
siphash_key_from_bytes(siphash_key_t *key, const uint8_t bytes[16])
{
  key->k0 = le64(bytes);
  key->k1 = le64(bytes + 8);
}

uint64_t
siphash24(const siphash_key_t *key, const void *data, size_t len)
{
  const uint8_t *p = data;
  /* "somepseudorandomlygeneratedbytes", the paper's initialisation words */
  uint64_t v0 = key->k0 ^ UINT64_C(0x736f6d6570736575);
  uint64_t v1 = key->k1 ^ UINT64_C(0x646f72616e646f6d);
  uint64_t v2 = key->k0 ^ UINT64_C(0x6c7967656e657261);
  uint64_t v3 = key->k1 ^ UINT64_C(0x7465646279746573);
  size_t full = len & ~(size_t)7;

  for (size_t i = 0; i < full; i += 8) {
    uint64_t m = le64(p + i);
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
  }

  uint64_t b = (uint64_t)(len & 0xff) << 56;
  switch (len & 7) {
  case 7: b |= (uint64_t)p[full + 6] << 48; /* fall through */
  case 6: b |= (uint64_t)p[full + 5] << 40; /* fall through */
  case 5: b |= (uint64_t)p[full + 4] << 32; /* fall through */
  case 4: b |= (uint64_t)p[full + 3] << 24; /* fall through */
  case 3: b |= (uint64_t)p[full + 2] << 16; /* fall through */
  case 2: b |= (uint64_t)p[full + 1] << 8;  /* fall through */
  case 1: b |= (uint64_t)p[full];           /* fall through */
  default: break;
  }
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;

  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

static siphash_key_t process_key;
static pthread_once_t process_key_once = PTHREAD_ONCE_INIT;

/* Fill buf with n random bytes from the kernel, or abort. */
static void
get_os_random(uint8_t *buf, size_t n)
{
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r > 0) {
      got += (size_t)r;
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (got == n)
    return;

  /* getrandom() unavailable (old kernel, seccomp): try the device. */
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  while (fd >= 0 && got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r > 0)
      got += (size_t)r;
    else if (!(r < 0 && errno == EINTR))
      break;
  }
  if (fd >= 0)
    close(fd);
  if (got != n) {
    fprintf(stderr, "pctor: no random bytes for the hash key; aborting\n");
    abort();
  }
}

static void
init_process_key(void)
{
  uint8_t bytes[16];
  get_os_random(bytes, sizeof(bytes));
  siphash_key_from_bytes(&process_key, bytes);
  pc_memwipe(bytes, sizeof(bytes));
}

const siphash_key_t *
siphash_process_key(void)
{
  pthread_once(&process_key_once, init_process_key);
  return &process_key;
}
