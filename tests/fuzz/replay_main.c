/* SPDX-License-Identifier: BSD-3-Clause */
/* replay_main.c -- the plain driver that `make check` runs for each fuzz
 * target, without clang or libFuzzer: it feeds every file of
 * tests/fuzz/corpus/<target>/ and tests/fuzz/regression/<target>/ to the
 * target's LLVMFuzzerTestOneInput (crashes, sanitizer reports and the
 * amplification check abort the process, failing the test).
 *
 * The target name comes from the program name (replay_<target>); the
 * directories are found under $top_srcdir/tests/fuzz (set by make check),
 * else under PCTOR_FUZZ_DIR given at build time. Extra arguments are
 * files or directories to replay instead (for reproducing one input).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PCTOR_FUZZ_DIR
#define PCTOR_FUZZ_DIR "tests/fuzz"
#endif

/* Inputs larger than this are skipped with a message (libFuzzer's default
 * -max_len for our targets is far below). */
#define REPLAY_MAX_INPUT (8u << 20)

static int
replay_file(const char *path, unsigned *n)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  uint8_t *buf = malloc(REPLAY_MAX_INPUT);
  if (!buf) {
    fclose(f);
    return -1;
  }
  size_t len = fread(buf, 1, REPLAY_MAX_INPUT, f);
  int toolong = !feof(f);
  fclose(f);
  if (toolong) {
    fprintf(stderr, "replay: %s: larger than %u bytes, skipped\n", path,
            REPLAY_MAX_INPUT);
    free(buf);
    return 0;
  }
  /* An exact-size copy, so ASan sees reads past the input. */
  uint8_t *in = malloc(len ? len : 1);
  if (!in) {
    free(buf);
    return -1;
  }
  memcpy(in, buf, len);
  free(buf);
  if (getenv("PCTOR_FUZZ_VERBOSE"))
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput(in, len);
  free(in);
  (*n)++;
  return 0;
}

static int
cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay path (a file, or every regular file in a directory, sorted).
 * A missing directory counts as empty when optional. */
static int
replay_path(const char *path, int optional, unsigned *n)
{
  struct stat st;
  if (stat(path, &st) < 0) {
    if (optional && errno == ENOENT)
      return 0;
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    return replay_file(path, n);
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    if (nn == cap) {
      cap = cap ? 2 * cap : 64;
      char **nw = realloc(names, cap * sizeof(*names));
      if (!nw)
        abort();
      names = nw;
    }
    size_t l = strlen(path) + strlen(e->d_name) + 2;
    names[nn] = malloc(l);
    if (!names[nn])
      abort();
    snprintf(names[nn], l, "%s/%s", path, e->d_name);
    nn++;
  }
  closedir(d);
  if (nn)
    qsort(names, nn, sizeof(*names), cmp_str);
  int r = 0;
  for (size_t i = 0; i < nn; i++) {
    struct stat fst;
    if (r == 0 && stat(names[i], &fst) == 0 && S_ISREG(fst.st_mode))
      r = replay_file(names[i], n);
    free(names[i]);
  }
  free(names);
  return r;
}

int
main(int argc, char **argv)
{
  LLVMFuzzerInitialize(&argc, &argv);
  unsigned n = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      if (replay_path(argv[i], 0, &n) < 0)
        return 1;
    printf("replay_%s: %u inputs OK\n", fuzz_target.name, n);
    return 0;
  }
  const char *top = getenv("top_srcdir");
  char base[4096];
  if (top && *top)
    snprintf(base, sizeof(base), "%s/tests/fuzz", top);
  else
    snprintf(base, sizeof(base), "%s", PCTOR_FUZZ_DIR);
  const char *sub[] = {"corpus", "regression"};
  for (int i = 0; i < 2; i++) {
    char dir[4352];
    snprintf(dir, sizeof(dir), "%s/%s/%s", base, sub[i], fuzz_target.name);
    if (replay_path(dir, 1, &n) < 0)
      return 1;
  }
  if (n == 0) {
    fprintf(stderr, "replay_%s: no inputs found under %s\n",
            fuzz_target.name, base);
    return 1;
  }
  printf("replay_%s: %u inputs OK (peak heap of the last: %zu bytes)\n",
         fuzz_target.name, n, fuzz_last_peak());
  return 0;
}
