/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_compress.c -- fuzz target: compressed directory bodies
 * (lib/compress).
 *
 * Input: byte 0 = method (low 3 bits, modulo 5: identity, deflate, gzip,
 * zstd, lzma) and API (bit 3: the streaming decoder fed in pieces of
 * 1..16 bytes as they would arrive from the network, sized by byte 1;
 * else compress_uncompress_concat on the whole); the rest is the body.
 * compress_detect() also looks at it.
 * Bound: output is capped at 1 MiB and, beyond 64 KiB, at 25x the input
 * (the bomb check); decoder state is allowed on top: the lzma decoder's
 * memory limit (16 MiB) and a zstd window of up to 2^23 bytes are what a
 * tiny header can ask for -- see doc/fuzzing.md. 32 MiB + 25 bytes per
 * input byte. (This target found legacy zstd frames, which ignored the
 * window limit: 128 MiB for 9 bytes; lib/compress now refuses them.)
 */
#include "fuzz.h"

#include "lib/compress/compress.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_OUT (1u << 20)

static void
streaming(compress_method_t m, const uint8_t *in, size_t len, size_t step)
{
  compress_stream_t *st = compress_stream_new(0, m, MAX_OUT);
  uint8_t out[4096];
  for (;;) {
    size_t n = len < step ? len : step;
    const uint8_t *p = in;
    size_t left = n;
    uint8_t *o = out;
    size_t olen = sizeof(out);
    int r = compress_stream_process(st, &p, &left, &o, &olen, n == len);
    if (r < 0 || r == COMPRESS_DONE) {
      fuzz_verbose("compress: %s stream: %s", compress_method_name(m),
                   r < 0 ? compress_strerror(r) : "done");
      break;
    }
    size_t used = n - left;
    if (used == 0 && olen == sizeof(out)) {
      /* No progress. Harmless mid-stream (the caller waits for more
       * bytes) but at the end of the input a caller would loop forever:
       * the decoder must say DONE or TRUNCATED there. */
      if (n == len) {
        fprintf(stderr, "fuzz_compress: decoder stalled at the end of the "
                        "input without an error\n");
        abort();
      }
      break;
    }
    in += used;
    len -= used;
  }
  compress_stream_free(st);
}

static void
run(const uint8_t *data, size_t len)
{
  if (len < 2)
    return;
  compress_method_t m = (compress_method_t)((data[0] & 7) % 5);
  int stream = data[0] & 8;
  size_t step = 1 + (data[1] & 15);
  data += 2;
  len -= 2;
  (void)compress_detect(data, len);
  if (stream) {
    streaming(m, data, len, step);
    return;
  }
  uint8_t *out = NULL;
  size_t outlen = 0;
  int r = compress_uncompress_concat(m, data, len, MAX_OUT, &out, &outlen);
  fuzz_verbose("compress: %s: %s", compress_method_name(m),
               r < 0 ? compress_strerror(r) : "done");
  if (r == 0)
    free(out);
}

const fuzz_target_t fuzz_target = {
  .name = "compress", .run = run, .amp_factor = 25,
  .amp_slack = 32u << 20,
};
