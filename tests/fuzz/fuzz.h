/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz.h -- the interface every fuzz target under tests/fuzz/ implements.
 *
 * A target file fuzz_<name>.c defines one fuzz_target_t named fuzz_target:
 * its name, an optional set-up function run once, the function that feeds
 * one input to pctor's parser, and its amplification bound. fuzz_common.c
 * turns that into libFuzzer's LLVMFuzzerInitialize/LLVMFuzzerTestOneInput,
 * so the same target file links into the libFuzzer binary (fuzz_<name>,
 * --enable-fuzzing) and into the plain replay driver (replay_<name>, every
 * build, run by `make check` over the corpus and regression directories).
 *
 * Amplification: while one input runs, fuzz_common.c counts the heap bytes
 * live above the level at the start (peak, not final) and aborts with a
 * message when the peak exceeds
 *     amp_slack + amp_factor * input length
 * i.e. "at most amp_factor heap bytes per input byte, after a fixed
 * allowance". A parser that lets a small input make pctor hold much more
 * memory fails the target just like a crash does.
 */
#ifndef PCTOR_TESTS_FUZZ_FUZZ_H
#define PCTOR_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_target_t {
  const char *name;
  /* Called once before the first input (may be NULL). */
  void (*setup)(void);
  /* Feed one input; must free everything it allocated. */
  void (*run)(const uint8_t *data, size_t len);
  /* Heap bound for one input: amp_slack + amp_factor * len bytes. */
  double amp_factor;
  size_t amp_slack;
} fuzz_target_t;

extern const fuzz_target_t fuzz_target;

/* libFuzzer's entry points (also called by the replay driver). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* Peak heap bytes above the start level during the last input. */
size_t fuzz_last_peak(void);

/* A line on stderr when PCTOR_FUZZ_VERBOSE is set (checking that seeds
 * reach deep into a parser); nothing otherwise. */
void fuzz_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A NUL-terminated copy of data (free() it): text parsers get strings. */
char *fuzz_strndup(const uint8_t *data, size_t len);

#endif
