#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run-fuzz.sh -- run libFuzzer targets one after another (what `make fuzz`
# calls). Usage: run-fuzz.sh SECONDS TARGET...   from the build directory
# of a --enable-fuzzing build. Each target starts from its seed corpus and
# regression inputs (read only) plus a work corpus in
# tests/fuzz/work/<target>/ (new inputs go there); crashes, leaks, timeouts
# and amplification failures are written to tests/fuzz/crashes/. Runs under
# nice; FUZZ_ARGS adds libFuzzer options (e.g. FUZZ_ARGS=-jobs=4).
# Exit status: 1 if any target failed.
set -u
secs=${1:?usage: run-fuzz.sh SECONDS TARGET...}
shift
src=${top_srcdir:-$(dirname "$0")/../..}/tests/fuzz
mkdir -p tests/fuzz/crashes
failed=""
for t in "$@"; do
  bin=tests/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "run-fuzz: $bin not built (--enable-fuzzing?)" >&2; exit 1; }
  mkdir -p "tests/fuzz/work/$t"
  dirs="tests/fuzz/work/$t"
  for d in "$src/corpus/$t" "$src/regression/$t"; do
    [ -d "$d" ] && dirs="$dirs $d"
  done
  echo "run-fuzz: $t for ${secs}s"
  # shellcheck disable=SC2086
  if ! nice -n 10 "$bin" -max_total_time="$secs" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
      -artifact_prefix="tests/fuzz/crashes/$t-" ${FUZZ_ARGS:-} $dirs \
      > "tests/fuzz/work/$t.log" 2>&1; then
    echo "run-fuzz: $t FAILED (tests/fuzz/work/$t.log):" >&2
    grep -E 'ERROR|AMPLIFICATION|SUMMARY|stalled|Test unit written' \
      "tests/fuzz/work/$t.log" | head -20 >&2
    failed="$failed $t"
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' \
      "tests/fuzz/work/$t.log" | tail -2
  fi
done
[ -z "$failed" ] || { echo "run-fuzz: failed:$failed" >&2; exit 1; }
echo "run-fuzz: all targets ran ${secs}s without a failure"
