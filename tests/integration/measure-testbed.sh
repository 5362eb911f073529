#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# measure-testbed.sh -- scripts/pctor-measure in network namespaces with
# emulated links: scripts/testbed/measure.toml (a tor authority, tor and
# pctor relays and exits, one pctor relay with MeasureMe off, a web server,
# each behind an access link with delay and jitter) brought up with
# pctor-testbed; pctor-measure runs its client in the namespace of the bare
# host "meas" (--testbed, --testbed-host) with unpinned paths.
#
# Run length: MEASURE_DURATION seconds (default 60), a round every
# MEASURE_INTERVAL seconds (default 15). The 10-minute run of issue 21 is
#     MEASURE_DURATION=600 MEASURE_INTERVAL=30 make check TESTS=tests/integration/measure-testbed.sh
# (result in doc/experiments.md, "pctor-measure").
#
# Checks: the run ends normally; its OnionPerf file loads in
# tests/onionperf_reader.py with complete transfers of every size linked
# to circuits; every path is three relays of the test bed; every hop's
# MeasureMe outcome matches the relay: pctor with MeasureMe on "recorded",
# tor "ignored", the pctor relay with MeasureMe off "no-records"; the times
# reflect the emulated delays (time to first byte above the sum of the
# access delays on the way); every complete transfer's CIRC_BW figures
# (summed over its circuit's events, and over the legs of its conflux set,
# which CIRC events name with CONFLUX_ID) count its bytes; `report` writes
# its tables; a server off the test bed's range is refused.
#
# Skipped (77) unless run as root with tor and pctor-delayd. About 2 min
# with the defaults.

. "$(dirname "$0")/lib.sh"
set -u

it_require_testbed
PY=$(it_python3) || it_skip "python3 is not installed"

MEASURE=$IT_TOP_SRCDIR/scripts/pctor-measure
READER=$IT_TOP_SRCDIR/tests/onionperf_reader.py
DUR=${MEASURE_DURATION:-60}
INTERVAL=${MEASURE_INTERVAL:-15}
rundir=$(it_tmpdir)/tb
out=$(it_tmpdir)/run
it_register_testbed "$rundir"   # taken down whatever happens

t0=$SECONDS
it_run "$TB" up "$IT_TOP_SRCDIR/scripts/testbed/measure.toml" --rundir "$rundir" --tor "$TOR" \
    --pctor "$PCTOR" --delayd "$DELAYD" > /dev/null || it_fail "pctor-testbed up failed"
it_log "test bed up in $((SECONDS - t0)) s"
webip=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"]["web"]["ip"])' \
    "$rundir/state.json")

rc=0
"$MEASURE" run --testbed "$rundir" --testbed-host meas --server http://127.0.0.1:80/ \
    --out "$out.refused" 2> "$IT_ROOT/refused.err" || rc=$?
[ "$rc" = 2 ] && grep -q "only uses servers of the test bed" "$IT_ROOT/refused.err" ||
    it_fail "a server off the test bed was not refused: $(cat "$IT_ROOT/refused.err")"

it_log "pctor-measure run: ${DUR}s, a round every ${INTERVAL}s, server $webip"
"$MEASURE" run --testbed "$rundir" --testbed-host meas --server "http://$webip/" \
    --out "$out" --pctor "$PCTOR" --interval "$INTERVAL" --duration "$DUR" \
    --transfer-timeout 120 > "$IT_ROOT/measure.out" 2> "$IT_ROOT/measure.err" ||
    it_fail "pctor-measure failed: $(tail -8 "$IT_ROOT/measure.err")"
it_log "run done: $(grep -c . "$out/transfers.jsonl") transfers"

"$PY" "$READER" "$out/onionperf.analysis.json" > "$IT_ROOT/reader.json" ||
    it_fail "onionperf_reader rejects the output: $(cat "$IT_ROOT/reader.json")"
"$PY" - "$out" "$rundir/state.json" "$IT_ROOT/reader.json" <<'EOF2' || it_fail "see above"
import json, sys
out, statef, readerf = sys.argv[1:4]
st = json.load(open(statef))
rd = json.load(open(readerf))["sources"]["pctor-measure"]
for size in ("51200", "1048576", "5242880"):
    e = rd["per_recvsize"].get(size)
    assert e and e["success"] >= 1 and e["linked_circuits"] >= e["success"], (size, e)
hosts = st["hosts"]
relay = {h["fingerprint"]: (n, h["binary"]) for n, h in hosts.items() if h.get("fingerprint")}
tr = [json.loads(l) for l in open(f"{out}/transfers.jsonl")]
good = [t for t in tr if t["ok"]]
assert len(good) >= len(tr) - 1, [t.get("error") for t in tr if not t["ok"]]
seen = {}
for t in good:
    names = [relay[h["fingerprint"]][0] for h in t["path"]]
    assert len(names) == 3, names
    # client access delay 20 ms each way plus the web server's 5 ms and at
    # least 10 ms per relay link: a round trip to the server is >= 100 ms
    assert t["ttfb"] > 0.1, (t["ttfb"], names)
    for h in t["measureme"]:
        n, binary = relay[h["fingerprint"]]
        want = "ignored" if binary == "tor" else ("no-records" if n == "poff" else "recorded")
        assert h["status"] == want, (n, h)
        seen[want] = seen.get(want, 0) + 1
        # the hop's answer: tor says nothing, poff refuses, the others accept
        wa = ("ignored", None) if binary == "tor" else \
            (("refused", "disabled") if n == "poff" else ("accepted", "accepted"))
        assert (h["answer"], h.get("answer_result")) == wa, (n, h)
        assert not h.get("answer_errors"), (n, h)
assert seen.get("recorded") and seen.get("ignored"), seen
# the client's CIRC_BW figures, summed over the events of each circuit,
# count every byte of its transfer (tor's accounting: 498 bytes a cell)
for t in good:
    bw = t["circ_bw"]
    assert bw and bw["complete"], (t["seq"], bw)
    # the MeasureMe answers are relay cells the client takes too (a status
    # of 11 bytes per hop asked, records of 48 bytes in cells of 11 + 48 n);
    # a conflux set's other legs were asked too: allow as much again
    mm_bytes = sum(11 + 59 * (h.get("returned_records") or 0) for h in t["measureme"]
                   if h.get("answer") in ("accepted", "refused"))
    mm_bytes *= max(1, len(bw.get("legs", [])))
    assert t["total_bytes_recv"] <= bw["delivered_read"] <= \
        t["total_bytes_recv"] + 4096 + mm_bytes, (t["seq"], t["total_bytes_recv"], bw)
    assert bw["delivered_read"] + bw["overhead_read"] == bw["read"] // 509 * 498, bw
assert max(t["circ_bw"]["events"] for t in good) >= 2, "no circuit reported twice"
# unpinned, the client links conflux sets: a transfer's cells come over
# every leg, which CIRC events name by CONFLUX_ID (as tor's)
cfx = [t for t in good if len(t["circ_bw"].get("legs", [])) >= 2]
assert cfx, "no transfer over a conflux set (no CONFLUX_ID in the CIRC events?)"
meta = json.load(open(f"{out}/meta.json"))
assert meta["measurement_ip"] == hosts["meas"]["ip"], meta["measurement_ip"]
print(f"{len(tr)} transfers, {len(good)} complete ({len(cfx)} over conflux sets); hop "
      f"outcomes {seen}; median ttfb "
      f"{sorted(t['ttfb'] for t in good)[len(good) // 2]:.3f} s")
EOF2
"$MEASURE" report "$out" > /dev/null 2> "$IT_ROOT/report.err" ||
    it_fail "report failed: $(cat "$IT_ROOT/report.err")"
grep -q "| 5MiB | total |" "$out/report/README.md" || it_fail "report: no percentile rows"
it_log "pctor-measure in the test bed: checks passed"
