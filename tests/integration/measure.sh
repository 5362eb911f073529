#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# measure.sh -- scripts/pctor-measure end to end in a private network of
# tor 0.4.9 and pctor relays on 127.0.0.1.
#
# Network: one tor authority, a tor exit (exit1) and a tor relay (relay2)
# from pctor-privnet, pctor relays p1 (guard) and p2 (middle), both with
# MeasureMeEnabled 1, and a web server with 50KiB, 1MiB and 5MiB files. The
# client pctor-measure starts is pinned to p1 -> {p2, relay2} -> exit1, so
# every circuit has pctor hops that record and tor hops that ignore.
#
# Run length: MEASURE_DURATION seconds (default 45) with a round every
# MEASURE_INTERVAL seconds (default 10): short enough for make check. The
# 10-minute run the issue asks for is
#     MEASURE_DURATION=600 MEASURE_INTERVAL=30 make check TESTS=tests/integration/measure.sh
# and its result is noted in doc/experiments.md ("pctor-measure").
#
# Checks:
#   - the run ends normally; onionperf.analysis.json (and the dated .xz)
#     load in tests/onionperf_reader.py, a reader written from OnionPerf's
#     documented format: complete transfers of every size, tgen streams
#     linked to tor streams and circuits with paths;
#   - every complete transfer had its own circuit, p1 -> p2|relay2 -> exit1,
#     with a build time; its MeasureMe hops are "recorded" at p1 (and p2),
#     "ignored" at relay2 and exit1 (tor drops the relay command);
#   - MeasureMe answers (doc/measureme.md): p1 and p2 answer "accepted" on
#     every circuit and return records (MEASUREME events) that pctor-measure
#     keeps in measureme.jsonl: the same figures, seq by seq, as the
#     relay's own file; tor hops answer nothing ("ignored"), and their
#     circuits still carry the transfer; p2 also sends garbage answers
#     (__MeasureMeGarbageAnswers): each is recorded as an error of that hop
#     with the client's reason, the client logs it and goes on, and the
#     circuits carry their transfers;
#   - CIRC_BW: every transfer with a circuit carries the client's figures
#     for it, counted past the transfer's end (its circuit reported after
#     the stream closed): READ/WRITTEN in whole cells, DELIVERED + OVERHEAD
#     = 498 bytes a cell, the bytes the transfer received within
#     DELIVERED_READ, congestion-control fields (SS, CWND, RTT, MIN_RTT)
#     and pctor's own, per-event samples; the report has their percentiles;
#   - bad input: a second server that does not listen (every transfer from
#     it fails and is recorded as an error), and the pctor client killed
#     with SIGKILL after the first round: the run records it, starts the
#     client again and goes on;
#   - `report` writes the percentile table and "what was collected" (and
#     CDF plots when matplotlib is installed); `join` with a relay record
#     file holding garbage skips the bad line, says so, and the output
#     stays valid;
#   - refusals before anything starts: a server off 127.0.0.0/8 in a
#     private run, a loopback server in a live run;
#   - pctor-measure stopped by SIGTERM mid-run exits 130 within 30 s, its
#     client with it, and leaves a valid OnionPerf file;
#   - p1's heartbeat counts the MeasureMe requests it served.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=$(it_python3) || it_skip "python3 is not installed"
MEASURE=$IT_TOP_SRCDIR/scripts/pctor-measure
READER=$IT_TOP_SRCDIR/tests/onionperf_reader.py
DUR=${MEASURE_DURATION:-45}
INTERVAL=${MEASURE_INTERVAL:-10}

# 1. Refusals (nothing is started).
out0=$(it_tmpdir)/refused
rc=0
"$MEASURE" run --privnet /nonexistent --server http://192.0.2.1/ --out "$out0" \
    2> "$IT_ROOT/refuse1.err" || rc=$?
[ "$rc" = 2 ] && grep -q "only uses servers on 127.0.0.0/8" "$IT_ROOT/refuse1.err" ||
    it_fail "a non-loopback server in a private run was not refused: $(cat "$IT_ROOT/refuse1.err")"
rc=0
"$MEASURE" run --network live --i-have-read-the-norms --interval 300 \
    --server http://127.0.0.1:8080/ --out "$out0" 2> "$IT_ROOT/refuse2.err" || rc=$?
[ "$rc" = 2 ] && grep -q "needs your own public server" "$IT_ROOT/refuse2.err" ||
    it_fail "a loopback server in a live run was not refused: $(cat "$IT_ROOT/refuse2.err")"
[ ! -e "$out0" ] || it_fail "a refused run left $out0"
it_log "refused: non-loopback server (private), loopback server (live)"

# 2. The network.
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 1 --base-port auto ||
    it_fail "pctor-privnet start failed"
www=$(it_tmpdir)
head -c $((50 * 1024)) /dev/urandom > "$www/50KiB"
head -c $((1024 * 1024)) /dev/urandom > "$www/1MiB"
head -c $((5 * 1024 * 1024)) /dev/urandom > "$www/5MiB"
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"
read -r _ deadport _ _ < <(it_privnet reserve "$net" --role web --nickname dead)

it_start_pctor "$net" p1 relay "MeasureMeEnabled 1
HeartbeatPeriod 5 seconds"
# p2 follows each answer with a garbage one (a relay that answers garbage)
it_start_pctor "$net" p2 relay "MeasureMeEnabled 1
__MeasureMeGarbageAnswers 1"
it_privnet wait "$net" --timeout 150 --flags Running,Valid ||
    it_fail "the consensus does not list every relay"
fp() { awk -v n="$1" '$1 == n { print $4 }' "$net/nodes.txt"; }
FP1=$(fp p1) FP2=$(fp p2) FPR=$(fp relay2) FPX=$(fp exit1)
[ -n "$FP1" ] && [ -n "$FP2" ] && [ -n "$FPR" ] && [ -n "$FPX" ] ||
    it_fail "missing fingerprints in nodes.txt"

cat > "$IT_ROOT/client.torrc" <<EOF
EntryNodes p1
MiddleNodes p2,relay2
ExitNodes exit1
EOF

# 3. The run, with the client killed after the first round.
out=$(it_tmpdir)/run
it_log "pctor-measure run: ${DUR}s, a round every ${INTERVAL}s"
"$MEASURE" run --privnet "$net" --out "$out" --pctor "$PCTOR" \
    --server "http://127.0.0.1:$hport/" --server "http://127.0.0.1:$deadport/" \
    --interval "$INTERVAL" --duration "$DUR" --transfer-timeout 60 \
    --measureme-interval 200 --torrc-extra "$IT_ROOT/client.torrc" \
    > "$IT_ROOT/measure.out" 2> "$IT_ROOT/measure.err" &
mpid=$!
it_register_pid "$mpid"
first_round() { [ "$(cat "$out/transfers.jsonl" 2>/dev/null | wc -l)" -ge 6 ]; }
it_wait_until 180 first_round ||
    it_fail "no first round: $(tail -5 "$IT_ROOT/measure.err")"
cpid=$(cat "$out/client/pid")
kill -KILL "$cpid" || it_fail "cannot kill the client $cpid"
it_log "killed the pctor client (pid $cpid) after the first round"
rc=0
wait "$mpid" || rc=$?
[ "$rc" = 0 ] || it_fail "pctor-measure exited with $rc: $(tail -8 "$IT_ROOT/measure.err")"
grep -q "restarting it" "$IT_ROOT/measure.err" || it_fail "no restart after the kill"
it_log "run done: $(grep -c . "$out/transfers.jsonl") transfers"

# 4. OnionPerf's format, read independently.
for f in "$out/onionperf.analysis.json" "$out"/*.onionperf.analysis.json.xz; do
    "$PY" "$READER" "$f" > "$IT_ROOT/reader.json" ||
        it_fail "onionperf_reader rejects $f: $(cat "$IT_ROOT/reader.json")"
done
"$PY" - "$IT_ROOT/reader.json" <<'EOF' || it_fail "the OnionPerf summary: see above"
import json, sys
s = json.load(open(sys.argv[1]))["sources"]["pctor-measure"]
per = s["per_recvsize"]
for size in ("51200", "1048576", "5242880"):
    e = per.get(size)
    assert e and e["success"] >= 2, f"{size}: {e}"
    assert e["error"] >= 1, f"{size}: the dead server's failures are missing: {e}"
    assert e["ttlb_median"] >= e["ttfb_median"] > 0, e
ok = sum(e["success"] for e in per.values())
assert s["tgen_streams_linked_to_circuits"] >= ok, s
assert s["circuits_with_path"] >= ok, s
print(f"OnionPerf file: {s['tgen_streams']} transfers, {ok} complete, "
      f"{s['tor_circuits']} circuits")
EOF

# 5. Circuits, MeasureMe, the restart.
check_run() { # extra checks of a join: BAD_LINES_EXPECTED
    "$PY" - "$out" "$FP1" "$FP2" "$FPR" "$FPX" "$1" <<'EOF'
import json, sys
out, fp1, fp2, fpr, fpx, bad = sys.argv[1:7]
meta = json.load(open(f"{out}/meta.json"))
tr = [json.loads(l) for l in open(f"{out}/transfers.jsonl")]
mm = [json.loads(l) for l in open(f"{out}/measureme.jsonl")]
good = [t for t in tr if t["ok"]]
assert meta["restarts"] == 1, f"restarts {meta['restarts']}"
warm = [json.loads(l) for l in open(f"{out}/warmup.jsonl")]
assert {w["epoch"] for w in warm if w["ok"]} == {0, 1}, "no complete warm-up in each epoch"
# after the warm-up, every transfer from the server that listens completes
# (one cut by the kill may fail, with the client recorded as dead)
goodname = meta["servers"][0]["name"]
lost = [t for t in tr if t["server"] == goodname and not t["ok"]]
assert len(lost) <= 1 and all(t.get("client_died") for t in lost), lost
assert "exited" in meta["epochs"][0]["why"], meta["epochs"][0]
assert any(t["epoch"] == 1 for t in good), "nothing complete after the restart"
deadname = [s["name"] for s in meta["servers"]][1]
for t in tr:
    if t["server"] == deadname:
        assert not t["ok"] and t["error"], t
circs = set()
n_garbage = 0
GARBAGE = {"the label is not the one sent", "unknown answer version", "unknown answer type",
           "answer shorter than its records", "unknown result in a status answer"}
for t in good:
    p = [h["fingerprint"] for h in t["path"]]
    assert len(p) == 3 and p[0] == fp1 and p[1] in (fp2, fpr) and p[2] == fpx, p
    assert t["build_time"] > 0, t
    assert t["first_byte"] <= t["last_byte"] and t["socks_connect"] <= t["first_byte"], t
    key = (t["epoch"], t["circuit_id"])
    assert key not in circs, f"circuit {key} carried two transfers"
    circs.add(key)
    st = {h["hop"]: h["status"] for h in t["measureme"]}
    assert st[3] == "ignored", st
    assert st[2] == ("recorded" if p[1] == fp2 else "ignored"), (p[1] == fp2, st)
    assert st[1] == "recorded", (t["seq"], st)
    an = {h["hop"]: (h["answer"], h.get("answer_errors", 0)) for h in t["measureme"]}
    assert an[3] == ("ignored", 0), (t["seq"], an)
    if p[1] == fp2:   # a garbage answer after each good one
        assert an[2][0] == "accepted" and an[2][1] >= 1, (t["seq"], an)
        reasons = t["measureme"][1]["answer_error_reasons"]
        assert reasons and set(reasons) <= GARBAGE, reasons
        n_garbage += an[2][1]
    else:
        assert an[2] == ("ignored", 0), (t["seq"], an)
    assert an[1] == ("accepted", 0), (t["seq"], an)
# the records a pctor hop returned are its own file's, seq by seq
n_ret = n_cmp = 0
for l in mm:
    if l["answer"] != "accepted":
        assert not l["returned"], l
        continue
    ret = l["returned"]
    n_ret += len(ret)
    seqs = [x["seq"] for x in ret]
    assert seqs == list(range(len(ret))), ("returned records out of order", seqs)
    offs = [x["offset_ms"] for x in ret]
    assert offs == sorted(offs), offs
    file_by_seq = {x["seq"]: x for x in l["records"]}
    for x in ret:
        f = file_by_seq.get(x["seq"])
        assert f, ("a returned record not in the relay's file", l["label"], x["seq"])
        assert (x["cells_fwd"], x["cells_bwd"]) == (f["cells_fwd"], f["cells_bwd"]), (x, f)
        assert (x["sent_bwd"], x["delay_avg_bwd_us"], x["queued_bwd"]) == \
            (f["queue_bwd"]["sent"], f["queue_bwd"]["delay_avg_us"], f["queue_bwd"]["queued"]), (x, f)
        n_cmp += 1
acc = [l for l in mm if l["answer"] == "accepted"]
with_ret = [l for l in acc if l["returned"]]
# a circuit keeps its last batch when it closes; most return some
assert acc and len(with_ret) >= 0.8 * len(acc), (len(with_ret), len(acc))
# CIRC_BW: every transfer that got a circuit has the client's figures
# for it, counted to its end; a complete one's cells carried its bytes
# (tor's accounting: 509 bytes a cell, delivered + overhead = 498 a cell)
bw_all = [t for t in tr if t.get("circuit_id") is not None]
for t in bw_all:
    bw = t["circ_bw"]
    assert bw and bw["complete"] and bw["events"] >= 1, (t["seq"], bw)
    for d in ("read", "written"):
        assert bw[d] > 0 and bw[d] % 509 == 0, (d, bw)
        assert bw[f"delivered_{d}"] + bw[f"overhead_{d}"] == bw[d] // 509 * 498, (d, bw)
    assert len(bw["samples"]) == min(bw["events"], 48), bw
    if not bw["samples_dropped"]:
        assert sum(x["read"] for x in bw["samples"]) == bw["read"], bw
    assert bw["first_at"] <= bw["last_at"] and bw["first_time"] <= bw["last_time"], bw
    # tor 0.4.9's exit negotiates congestion control; pctor adds its own fields
    assert bw["ss"] in (0, 1) and bw["cwnd"] > 0 and bw["rtt"] >= 0 <= bw["min_rtt"], bw
    assert "pctor_conn_fwd" in bw and "pctor_tcp_rtt_us_fwd" in bw, bw
for t in good:
    bw = t["circ_bw"]
    # the MeasureMe answers are relay cells the client takes too: a status
    # (11 bytes) per hop asked, records of 48 bytes in cells of 11 + 48 n,
    # and p2's garbage ones (at most 491 bytes each)
    mm_bytes = sum(11 + 59 * (h.get("returned_records") or 0) + 491 * h.get("answer_errors", 0)
                   for h in t["measureme"] if h.get("answer") == "accepted")
    assert t["total_bytes_recv"] <= bw["delivered_read"] <= \
        t["total_bytes_recv"] + 4096 + mm_bytes, (t["seq"], t["total_bytes_recv"], bw)
    assert bw["delivered_written"] >= t["bytes_sent"], (t["seq"], bw)
assert meta["circ_bw_transfers"] == {"with_figures": len(bw_all), "complete": len(bw_all)}, \
    meta["circ_bw_transfers"]
assert meta["circ_bw"].startswith("produced: "), meta["circ_bw"]
rec = [l for l in mm if l["status"] == "recorded"]
assert rec and all(r["records"] and all(x["label"] == r["label"] for x in r["records"])
                   for r in rec)
assert {l["fingerprint"] for l in rec} <= {fp1, fp2}
m = meta["measureme"]
if bad == "1":
    assert list(m["bad_record_lines"].values()) == [1], m["bad_record_lines"]
assert m["answers"]["error"] == 0, m["answers"]
if n_garbage:
    import glob
    logs = "".join(open(f, errors="replace").read() for f in glob.glob(f"{out}/client/*.log"))
    assert "MeasureMe: a garbage answer from hop 2 of circuit" in logs, "the client did not log garbage"
print(f"{len(tr)} transfers, {len(good)} complete on {len(circs)} circuits; MeasureMe "
      f"hops: {m['hops']}; answers: {m['answers']}, {n_ret} records returned by "
      f"{len(with_ret)} of {len(acc)} hops that accepted, {n_cmp} matched the relays' files, "
      f"{n_garbage} garbage answers from p2 recorded as errors; "
      f"CIRC_BW: {meta['circ_bw']}")
EOF
}
res=$(check_run 0) || it_fail "transfers/MeasureMe: see above"
it_log "$res"

# 6. report
"$MEASURE" report "$out" > /dev/null 2> "$IT_ROOT/report.err" ||
    it_fail "report failed: $(cat "$IT_ROOT/report.err")"
grep -q "## What was collected" "$out/report/README.md" || it_fail "report: no 'what was collected'"
grep -q "| 5MiB | total |" "$out/report/README.md" || it_fail "report: no percentile rows"
grep -q "| 5MiB | bytes delivered to the client | " "$out/report/README.md" ||
    it_fail "report: no CIRC_BW rows"
[ -s "$out/report/percentiles.csv" ] || it_fail "report: no percentiles.csv"
if grep -q "matplotlib is not available" "$out/report/README.md"; then
    it_log "report: matplotlib is not installed for the script's python3; plots not checked"
else
    ls "$out"/report/plots/*-total.png > /dev/null 2>&1 || it_fail "report: no CDF plots"
    it_log "report: $(ls "$out"/report/plots | wc -l) plots"
fi

# 7. join with a record file that holds garbage
d1=$(cat "$net/p1.dir")
cp "$d1/data/measureme.jsonl" "$IT_ROOT/p1.jsonl"
printf '{"label": not json\n' >> "$IT_ROOT/p1.jsonl"
d2=$(cat "$net/p2.dir")
# p2 is one of two middles to choose from: it may have measured nothing
# (then it wrote no file, and there is nothing of it to join).
p2rec=()
[ -e "$d2/data/measureme.jsonl" ] && p2rec=(--relay-records "$FP2=$d2/data/measureme.jsonl")
"$MEASURE" join "$out" --no-privnet --relay-records "$FP1=$IT_ROOT/p1.jsonl" \
    "${p2rec[@]}" 2> "$IT_ROOT/join.err" ||
    it_fail "join failed: $(cat "$IT_ROOT/join.err")"
grep -q "skipped bad lines" "$IT_ROOT/join.err" || it_fail "join did not report the bad line"
res=$(check_run 1) || it_fail "after join: see above"
"$PY" "$READER" "$out/onionperf.analysis.json" > /dev/null || it_fail "after join: bad OnionPerf file"
it_log "join with a garbage line: skipped and reported; output valid"

# 8. pctor-measure itself stopped with SIGTERM mid-run: it stops its client,
# says why, and leaves valid output.
out2=$(it_tmpdir)/run2
"$MEASURE" run --privnet "$net" --out "$out2" --pctor "$PCTOR" \
    --server "http://127.0.0.1:$hport/" --interval 5 --duration 600 \
    --torrc-extra "$IT_ROOT/client.torrc" > /dev/null 2> "$IT_ROOT/measure2.err" &
mpid=$!
it_register_pid "$mpid"
one_transfer() { [ -s "$out2/transfers.jsonl" ]; }
it_wait_until 120 one_transfer || it_fail "second run: no transfer: $(tail -3 "$IT_ROOT/measure2.err")"
cpid=$(cat "$out2/client/pid")
t=$SECONDS
kill -TERM "$mpid"
rc=0
wait "$mpid" || rc=$?
[ "$rc" = 130 ] || it_fail "pctor-measure ended with $rc after SIGTERM (want 130)"
[ $((SECONDS - t)) -le 30 ] || it_fail "pctor-measure took $((SECONDS - t)) s to stop"
! kill -0 "$cpid" 2> /dev/null || it_fail "the client $cpid outlived pctor-measure"
grep -q '"stopped": "signal 15"' "$out2/meta.json" || it_fail "meta.json does not say why it stopped"
"$PY" "$READER" "$out2/onionperf.analysis.json" > /dev/null ||
    it_fail "bad OnionPerf file after SIGTERM"
it_log "SIGTERM mid-run: stopped in $((SECONDS - t)) s, client gone, output valid"

# 9. the relay's heartbeat
n=$(sed -n 's/.*Heartbeat: MeasureMe served \([0-9]*\) measurement requests.*/\1/p' \
    "$d1/info.log" | tail -1)
[ -n "$n" ] && [ "$n" -ge 1 ] || it_fail "p1's heartbeat does not count MeasureMe requests"
a=$(sed -n 's/.*Heartbeat: MeasureMe served .*, \([0-9]*\) answer cells sent\./\1/p' \
    "$d1/info.log" | tail -1)
[ -n "$a" ] && [ "$a" -ge "$n" ] || it_fail "p1's heartbeat does not count its answers ($a)"
it_log "p1 heartbeat: MeasureMe served $n requests, sent $a answer cells"
it_pctor_alive_quiet "$net" p1 p2
it_log "pctor-measure checks passed"
