#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# floorbench.sh -- pctor-floorbench (scripts/bench-relay --floor) relays
# every cell it is given, over TLS and over plain TCP, with record and
# batch sizes that split cells across reads, paced and unpaced, reports
# its figures in the form bench-relay parses, and refuses bad options.

. "$(dirname "$0")/lib.sh"
set -u

FLOOR=${top_builddir:?}/src/tools/floorbench/pctor-floorbench
dir=$(it_tmpdir)

# run NAME ARGS...: the tool must exit 0 and print one "floor:" line.
run() {
    local name=$1
    shift
    "$FLOOR" "$@" > "$dir/$name.out" 2> "$dir/$name.err" ||
        it_fail "pctor-floorbench $* failed: $(cat "$dir/$name.err")"
    [ "$(grep -c '^floor: ' "$dir/$name.out")" = 1 ] ||
        it_fail "pctor-floorbench $*: no single result line: $(cat "$dir/$name.out")"
    it_log "$name: $(cat "$dir/$name.out")"
}
# field NAME WORD: the number after WORD in NAME's result line.
field() {
    awk -v w="$2" '{ for (i = 1; i < NF; i++) if ($i == w) { x = $(i + 1); gsub(/[(),;]/, "", x); print x; exit } }' \
        "$dir/$1.out"
}

run tls --cells 20000
grep -q '^floor: 20000 cells in' "$dir/tls.out" || it_fail "TLS run: not all 20000 cells relayed"
grep -q 'TLSv1.3 ' "$dir/tls.out" || it_fail "TLS run: no TLS 1.3 suite named"
cpu=$(field tls "us/cell:")
awk -v c="$cpu" 'BEGIN { exit !(c > 0 && c < 1000) }' || it_fail "TLS run: CPU per cell '$cpu' out of range"

# 7-cell records and 5-cell writes: cells straddle reads and batches.
run plain --plain --cells 20003 --in-cells 7 --out-cells 5
grep -q '^floor: 20003 cells in' "$dir/plain.out" || it_fail "plain run: not all 20003 cells relayed"
grep -q 'plain TCP$' "$dir/plain.out" || it_fail "plain run: not over plain TCP"

# Paced at 20 MB/s: 5000 cells (2.57 MB) cannot take less than 0.128 s.
run paced --cells 5000 --in-cells 16 --rate 20
secs=$(awk '{ for (i = 1; i < NF; i++) if ($i == "in" && $(i + 2) == "s") { print $(i + 1); exit } }' "$dir/paced.out")
awk -v s="$secs" 'BEGIN { exit !(s >= 0.12) }' || it_fail "paced run took $secs s, under the 0.128 s its rate allows"

for bad in "--in-cells 32" "--out-cells 0" "--cells 0" "--rate -1" "--bogus"; do
    # shellcheck disable=SC2086
    "$FLOOR" $bad > /dev/null 2> "$dir/bad.err"
    rc=$?
    [ "$rc" = 2 ] || it_fail "pctor-floorbench $bad exited $rc, not 2"
    grep -q usage "$dir/bad.err" || it_fail "pctor-floorbench $bad: no usage line"
done
it_log "all cells relayed in every mode; bad options refused"
