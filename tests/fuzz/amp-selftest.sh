#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# amp-selftest.sh -- the amplification check of the fuzz drivers works:
# replay_selftest (fuzz_selftest.c) must accept an input that allocates
# 2 x 20 KiB at its peak and abort, naming the bound, on one that allocates
# 2 x 40 KiB (bound: 64 KiB + 1 byte per input byte).
set -u
bin=${top_builddir:-.}/tests/fuzz/replay_selftest
[ -x "$bin" ] || { echo "amp-selftest: $bin not built" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf '\024' > "$tmp/small"
printf '\050' > "$tmp/big"
"$bin" "$tmp/small" || { echo "FAIL: a 40 KiB peak was refused" >&2; exit 1; }
if "$bin" "$tmp/big" 2> "$tmp/err"; then
  echo "FAIL: an 80 KiB peak for a 1-byte input was not caught" >&2
  exit 1
fi
grep -q 'AMPLIFICATION: a 1-byte input made the heap grow by' "$tmp/err" || {
  echo "FAIL: no amplification message:" >&2; cat "$tmp/err" >&2; exit 1; }
echo "amp-selftest: ok ($(grep -o 'grow by [0-9]* bytes' "$tmp/err"))"
