/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_common.c -- libFuzzer glue and the amplification check shared by
 * every fuzz target (see fuzz.h).
 *
 * Counting heap bytes: under AddressSanitizer (the libFuzzer build, or a
 * --enable-sanitizers build) the sanitizer's allocator tells us every
 * allocation and free through __sanitizer_install_malloc_and_free_hooks.
 * Without it (the plain gcc replay driver) this file interposes malloc,
 * calloc, realloc, free and the aligned allocators and forwards them to
 * glibc's __libc_* functions, reading sizes with malloc_usable_size. Both
 * count only while an input is being processed, in one thread, so the
 * counters are plain variables; the peak of (allocated - freed) during the
 * input is what the bound is checked against.
 *
 * Logging is silenced (parsers log every bad input); set PCTOR_FUZZ_LOG=1
 * to see the messages when reproducing a failure.
 */
#include "fuzz.h"

#include "lib/crypt/crypt_init.h"
#include "lib/log/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif

static int counting;
static long long live, peak;

static void
note_alloc(size_t n)
{
  if (!counting)
    return;
  live += (long long)n;
  if (live > peak)
    peak = live;
}

static void
note_free(size_t n)
{
  if (counting)
    live -= (long long)n;
}

#ifdef FUZZ_ASAN
#include <sanitizer/allocator_interface.h>

static void
malloc_hook(const volatile void *p, size_t n)
{
  (void)p;
  note_alloc(n);
}

static void
free_hook(const volatile void *p)
{
  if (p && counting)
    note_free(__sanitizer_get_allocated_size((const void *)p));
}

static void
install_hooks(void)
{
  __sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook);
}
#else
#include <malloc.h>

/* glibc's own allocator; interposing malloc and forwarding here is the
 * supported way to replace or wrap it. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

void *malloc(size_t n);
void *calloc(size_t c, size_t n);
void *realloc(void *p, size_t n);
void free(void *p);
void *memalign(size_t align, size_t n);
void *aligned_alloc(size_t align, size_t n);
int posix_memalign(void **out, size_t align, size_t n);

void *
malloc(size_t n)
{
  void *p = __libc_malloc(n);
  if (p)
    note_alloc(malloc_usable_size(p));
  return p;
}

void *
calloc(size_t c, size_t n)
{
  void *p = __libc_calloc(c, n);
  if (p)
    note_alloc(malloc_usable_size(p));
  return p;
}

void *
realloc(void *p, size_t n)
{
  size_t old = p ? malloc_usable_size(p) : 0;
  void *q = __libc_realloc(p, n);
  if (q || n == 0) {
    note_free(old);
    if (q)
      note_alloc(malloc_usable_size(q));
  }
  return q;
}

void
free(void *p)
{
  if (p)
    note_free(malloc_usable_size(p));
  __libc_free(p);
}

void *
memalign(size_t align, size_t n)
{
  void *p = __libc_memalign(align, n);
  if (p)
    note_alloc(malloc_usable_size(p));
  return p;
}

void *
aligned_alloc(size_t align, size_t n)
{
  return memalign(align, n);
}

int
posix_memalign(void **out, size_t align, size_t n)
{
  if (align < sizeof(void *) || (align & (align - 1)))
    return 22; /* EINVAL */
  void *p = memalign(align, n);
  if (!p)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}

static void
install_hooks(void)
{
}
#endif

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  if (!getenv("PCTOR_FUZZ_LOG"))
    log_set_default_min(LOG_SEV_NONE);
  else
    log_set_default_min(LOG_SEV_DEBUG);
  if (crypt_global_init() < 0) {
    fprintf(stderr, "fuzz: crypto initialisation failed\n");
    abort();
  }
  if (fuzz_target.setup)
    fuzz_target.setup();
  install_hooks();
  return 0;
}

size_t
fuzz_last_peak(void)
{
  return (size_t)(peak > 0 ? peak : 0);
}

void
fuzz_verbose(const char *fmt, ...)
{
  static int on = -1;
  if (on < 0)
    on = getenv("PCTOR_FUZZ_VERBOSE") != NULL;
  if (!on)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

char *
fuzz_strndup(const uint8_t *data, size_t len)
{
  char *s = malloc(len + 1);
  if (!s)
    abort();
  if (len)
    memcpy(s, data, len);
  s[len] = '\0';
  return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
  live = peak = 0;
  counting = 1;
  fuzz_target.run(data, len);
  counting = 0;
  double bound = (double)fuzz_target.amp_slack +
                 fuzz_target.amp_factor * (double)len;
  if ((double)peak > bound) {
    fprintf(stderr,
            "fuzz_%s: AMPLIFICATION: a %zu-byte input made the heap grow "
            "by %lld bytes at its peak; the stated bound is %zu + %.1f "
            "bytes per input byte = %.0f\n",
            fuzz_target.name, len, peak, fuzz_target.amp_slack,
            fuzz_target.amp_factor, bound);
    abort();
  }
  return 0;
}
