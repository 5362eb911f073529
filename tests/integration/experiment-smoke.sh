#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# experiment-smoke.sh -- scripts/pctor-experiment end to end on a small
# network: 3 tor authorities, 5 pctor relays (3 relays, 2 exits), 2 pctor
# clients and 1 web server, each in its own namespace behind an emulated
# access link. Two configurations (round robin vs EWMA) x 1 seed, 3 s
# warm-up + 12 s measured each: about 30 s of workload in all. Client
# "asker" asks all three hops of its circuits to measure them (MeasureMeHops
# 1,2,3), client "quiet" does not. Checks:
#   - the run exits 0 and writes README.md, results.jsonl with successful
#     web and bulk requests of both configurations, and PNG CDF plots;
#   - percentiles.csv parses: a row per configuration, class and metric,
#     p25 <= p50 <= p75 <= p90, a relative change for the non-baseline
#     configuration only; the README's table has the same rows;
#   - MeasureMe: the relays wrote records, and every record's label is one
#     that "asker" logged ("MeasureMe: asked hop H of circuit N ...
#     (label L)"); "quiet" logged none; the report finds no unexpected label;
#     the generated torrcs say who asked;
#   - paired paths (experiment.paired_paths, pinned through the clients'
#     ControlPorts by the lab's control client): every stream that succeeded
#     ran on its loop's circuit over the drawn path, none elsewhere or
#     unpinned; both configurations drew the same paths;
#   - every run records the load average; --ss-interval wrote ss snapshots
#     of relay-to-relay connections (cwnd, RTT, MSS) for both
#     configurations and the report summarises them;
#   - after the run, and after a second run interrupted with SIGINT during
#     its workload (exit 130, a report of what was done), no namespace,
#     process or `pctor-testbed list` entry of any run is left.
#
# Skipped (77) unless run as root with tor, pctor-delayd and matplotlib.
# About 80 seconds here.

. "$(dirname "$0")/lib.sh"
set -u

it_require_testbed
PY=/usr/bin/python3
$PY -c 'import matplotlib' 2> /dev/null ||
    it_skip "needs /usr/bin/python3 with matplotlib (apt-get install python3-matplotlib)"

EXP=$IT_TOP_SRCDIR/scripts/pctor-experiment
work=$(it_tmpdir)
out=$work/report
out2=$work/report-interrupted

# Whatever happens, take down every run the experiments started.
exp_cleanup() {
    local s
    for s in "$work"/report*/runs/*/testbed/state.json; do
        [ -f "$s" ] && "$TB" down --rundir "$(dirname "$s")" > /dev/null 2>&1
    done
    return 0
}
trap 'rc=$?; exp_cleanup; (exit $rc); it_cleanup' EXIT

cat > "$work/smoke.toml" <<'EOF'
[experiment]
name = "smoke"
title = "experiment-smoke.sh"
scale = "3 authorities, 5 pctor relays, 2 clients, 1 server"
seeds = 1
duration_s = 12
warmup_s = 3
request_timeout_s = 60
paired_paths = true

[testbed]
name = "exp-smoke"
bootstrap_timeout = 120

[defaults]
up = "20mbit"
down = "20mbit"
delay_ms = 5
binary = "pctor"

[[host]]
name = "auth"
role = "authority"
binary = "tor"
count = 3

[[host]]
name = "r"
role = "relay"
count = 3

[[host]]
name = "x"
role = "exit"
count = 2
up = "8mbit"

[[host]]
name = "asker"
role = "client"
torrc = ["ExcludeNodes auth1,auth2,auth3", "MeasureMeHops 1,2,3", "MeasureMeInterval 500"]

[[host]]
name = "quiet"
role = "client"
torrc = ["ExcludeNodes auth1,auth2,auth3"]

[[host]]
name = "srv"
role = "server"
files = ["64KiB", "1MiB"]

[[workload]]
class = "web"
clients = ["asker"]
model = "web"
file = "64KiB"
streams = 2
think_min_s = 0.2
think_max_s = 0.8

[[workload]]
class = "bulk"
clients = ["quiet"]
model = "bulk"
file = "1MiB"

[[config]]
name = "rr"
description = "round robin"
[config.torrc]
pctor = ["CircuitPriorityHalflife 0"]

[[config]]
name = "ewma"
description = "EWMA"
[config.torrc]
relay = ["CircuitPriorityHalflife 10"]
exit = ["CircuitPriorityHalflife 10"]
EOF

"$EXP" check "$work/smoke.toml" > "$work/check.out" || it_fail "check refuses the definition"
grep -q "2 runs (2 configurations x 1 seeds)" "$work/check.out" || it_fail "bad plan: $(cat "$work/check.out")"
# a few malformed definitions are refused with a reason
bad() { # EXPECTED-MESSAGE-PART SED-EXPRESSION
    sed "$2" "$work/smoke.toml" > "$work/bad.toml"
    if "$EXP" check "$work/bad.toml" > /dev/null 2> "$work/bad.err"; then
        it_fail "check accepted a definition edited with '$2'"
    fi
    grep -q -- "$1" "$work/bad.err" || it_fail "expected '$1' for '$2'; got: $(cat "$work/bad.err")"
}
bad "is a pctor option but auth1 runs tor" 's/^pctor = \["CircuitPriorityHalflife 0"\]/all = ["PerCircuitTCP 1"]/'
bad "is no host, group, role" 's/^clients = \["quiet"\]/clients = ["nobody"]/'
bad "has no file 2MiB" 's/^file = "1MiB"/file = "2MiB"/'
bad "needs two or more" '/^description = "round robin"/,$d'
it_log "check: definition accepted, 4 malformed ones refused"

t0=$SECONDS
it_run "$EXP" run "$work/smoke.toml" --out "$out" --pctor "$PCTOR" --tor "$TOR" \
    --delayd "$DELAYD" --ss-interval 500 > "$work/run.out" 2> "$work/run.err" ||
    it_fail "pctor-experiment run failed: $(tail -15 "$work/run.err")"
it_log "experiment done in $((SECONDS - t0)) s"

$PY - "$out" <<'PY' || it_fail "the report is wrong"
import csv, json, os, sys
out = sys.argv[1]
def fail(msg):
    print("report check:", msg, file=sys.stderr)
    sys.exit(1)
for f in ("README.md", "results.jsonl", "percentiles.csv", "summary.json", "runs.json",
          "experiment.toml", "measureme.jsonl", "measureme-summary.csv"):
    if not os.path.getsize(os.path.join(out, f)):
        fail(f"{f} is empty")
runs = json.load(open(os.path.join(out, "runs.json")))["runs"]
if [r["status"] for r in runs] != ["ok", "ok"]:
    fail(f"runs: {runs}")
# paired paths (the lab's control client, pinning through the clients'
# ControlPorts): every stream that succeeded ran on its loop's circuit, whose
# BUILT path was the drawn one; the same paths in both configurations
for r in runs:
    pp = r.get("paired_paths")
    if not pp or set(pp) != {"asker", "quiet"}:
        fail(f"run {r['run']}: paired paths of {sorted(pp or {})}")
    tot = lambda k: sum(c[k] for c in pp.values())
    if (tot("streams_on_pinned_path") < 2 or tot("streams_on_other_circuit") or
            tot("unpinned_streams") or any(c["path_mismatches"] for c in pp.values())):
        fail(f"run {r['run']}: paired paths {pp}")
    if r.get("paired_paths_flags") != "ok":
        fail(f"run {r['run']}: paths' flags: {r.get('paired_paths_flags')}")
if runs[0]["paired_paths"]["asker"]["paths"] != runs[1]["paired_paths"]["asker"]["paths"]:
    fail("the two configurations drew different paths")
# the load average of each run, and (--ss-interval) ss snapshots of the
# relays' relay-to-relay connections with their TCP figures, summarised
for r in runs:
    if not (isinstance(r.get("load_start"), list) and isinstance(r.get("load_end"), list)):
        fail(f"run {r['run']} has no load average")
ss = [json.loads(l) for l in open(os.path.join(out, "ss.jsonl"))]
if not ss or not all(x.get("cwnd", 0) > 0 and x.get("rtt_ms", 0) > 0 and x.get("mss", 0) > 0
                     and (x["peer"].endswith(":9001") or x["local"].endswith(":9001"))
                     for x in ss):
    fail(f"ss.jsonl: {len(ss)} records, e.g. {ss[:1]}")
if {x["config"] for x in ss} != {r["config"] for r in runs}:
    fail("ss.jsonl lacks a configuration")
ssum = list(csv.DictReader(open(os.path.join(out, "ss-summary.csv"))))
if not ssum or any(float(x["cwnd_p50"]) <= 0 for x in ssum if x["cwnd_p50"]):
    fail(f"ss-summary.csv: {ssum[:2]}")
if "TCP of the relay-to-relay connections" not in open(os.path.join(out, "README.md")).read():
    fail("README lacks the ss table")
# results.jsonl: it_check_results, below
recs = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
# plots
for cls in ("web", "bulk"):
    for m in ("ttfb", "total"):
        p = os.path.join(out, "plots", f"{cls}-{m}.png")
        data = open(p, "rb").read()
        if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 10000:
            fail(f"{p} is no plot")
# percentile table
rows = list(csv.DictReader(open(os.path.join(out, "percentiles.csv"))))
keys = {(r["config"], r["class"], r["metric"]) for r in rows}
want = {(c, k, m) for c in ("rr", "ewma") for k in ("web", "bulk") for m in ("ttfb", "total", "rate")}
if not want <= keys:
    fail(f"percentiles.csv lacks {sorted(want - keys)}")
for r in rows:
    if (r["config"], r["class"], r["metric"]) not in want:
        continue
    ps = [float(r[f"p{p}"]) for p in (25, 50, 75, 90)]
    if int(r["n"]) < 1 or ps != sorted(ps) or ps[0] <= 0:
        fail(f"bad percentiles {r}")
    ch = [r[f"p{p}_change_pct"] for p in (25, 50, 75, 90)]
    if r["config"] == "rr":
        if r["baseline"] != "rr" or any(ch):
            fail(f"the baseline has changes: {r}")
    else:
        # the CSV rounds; check the changes against the full-precision rows
        full = json.load(open(os.path.join(out, "summary.json")))["percentiles"]
        me, base = ([f for f in full if f["config"] == c and f["class"] == r["class"]
                     and f["metric"] == r["metric"]][0] for c in ("ewma", "rr"))
        for p, c in zip((25, 50, 75, 90), ch):
            expect = 100 * (me[f"p{p}"] - base[f"p{p}"]) / base[f"p{p}"]
            if abs(me[f"p{p}_change_pct"] - expect) > 1e-9 or abs(float(c) - expect) > 0.01:
                fail(f"change p{p} {c} != {expect:.4f} in {r}")
readme = open(os.path.join(out, "README.md")).read()
table = [l for l in readme.splitlines() if l.startswith("| web | ") or l.startswith("| bulk | ")]
cells = {tuple(c.strip() for c in l.strip("|").split("|"))[:3] for l in table}
if not {(k, m, c) for (c, k, m) in want} <= cells:
    fail("the README's percentile table lacks rows")
for f in ("plots/web-ttfb.png", "plots/web-total.png"):
    if f"]({f})" not in readme:
        fail(f"README does not show {f}")
# MeasureMe: only what asker asked for
asks = [json.loads(l) for l in open(os.path.join(out, "measureme-asks.jsonl"))]
mm = [json.loads(l) for l in open(os.path.join(out, "measureme.jsonl"))]
if {a["client"] for a in asks} != {"asker"}:
    fail(f"asks from {sorted({a['client'] for a in asks})}")
for run in ("rr-s1", "ewma-s1"):
    asked = {a["label"] for a in asks if a["run"] == run}
    got = {r["label"] for r in mm if r["run"] == run}
    if not asked or not got:
        fail(f"{run}: {len(asked)} labels asked, {len(got)} recorded")
    if not got <= asked:
        fail(f"{run}: relays recorded labels nobody asked for: {sorted(got - asked)}")
    hops = {a["hop"] for a in asks if a["run"] == run}
    if hops != {1, 2, 3}:
        fail(f"{run}: asked hops {hops}")
    if not {r["relay"] for r in mm if r["run"] == run} <= {"r1", "r2", "r3", "x1", "x2"}:
        fail(f"{run}: records from a non-relay")
    if not any(r["cells_bwd"] > 0 for r in mm if r["run"] == run):
        fail(f"{run}: no record counted a cell")
    q = open(os.path.join(out, "runs", run, "testbed", "hosts", "quiet", "notice.log")).read()
    if "MeasureMe: asked" in q:
        fail(f"{run}: quiet asked")
    if "MeasureMeHops" in open(os.path.join(out, "runs", run, "torrc", "quiet.torrc")).read():
        fail("quiet's torrc has MeasureMeHops")
    if "MeasureMeHops 1,2,3" not in open(os.path.join(out, "runs", run, "torrc",
                                                       "asker.torrc")).read():
        fail("asker's torrc lacks MeasureMeHops")
    for h in ("r1", "x2"):
        t = open(os.path.join(out, "runs", run, "torrc", f"{h}.torrc")).read()
        if f"CircuitPriorityHalflife {0 if run == 'rr-s1' else 10}" not in t:
            fail(f"{run}: {h}'s torrc lacks the configuration's line")
summ = json.load(open(os.path.join(out, "summary.json")))
if summ["measureme_unexpected_labels"]:
    fail(f"unexpected labels {summ['measureme_unexpected_labels']}")
if "Every record carries a label that a client logged" not in readme:
    fail("README does not state the label check")
print(f"report ok: {len(recs)} requests, {len(mm)} MeasureMe records of "
      f"{len({(r['run'], r['label']) for r in mm})} circuits, all asked by asker", file=sys.stderr)
PY
it_check_results "$PY" "$out" "rr ewma" "web:4 bulk:1" || it_fail "the report is wrong"

# Nothing of either run is left.
check_gone() { # REPORT-DIR
    local s rd runid pid
    for s in "$1"/runs/*/testbed/state.json; do
        [ -f "$s" ] || continue
        rd=$(dirname "$s")
        runid=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["runid"])' "$s")
        [ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$s")" = down ] ||
            it_fail "run $runid is not down"
        ! ip netns list | grep -q "^tb$runid-" || it_fail "namespaces of run $runid left"
        ! "$TB" list | grep -q -- "$rd" || it_fail "pctor-testbed list still shows $rd"
        for pid in $($PY -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$s"); do
            if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$rd"; then
                it_fail "process $pid of run $runid is still alive"
            fi
        done
    done
    for f in /proc/[0-9]*/cmdline; do
        if tr '\0' ' ' 2> /dev/null < "$f" | grep -q -- "$1/runs/"; then
            it_fail "a process naming $1 is still running: $f"
        fi
    done
}
check_gone "$out"
it_log "teardown after the experiment left nothing behind"

# Ctrl-C during a run's workload: the run is taken down and a report written.
"$EXP" run "$work/smoke.toml" --out "$out2" --configs ewma --duration 60 --pctor "$PCTOR" \
    --tor "$TOR" --delayd "$DELAYD" > /dev/null 2> "$work/run2.err" &
pid=$!
it_register_pid "$pid"
it_wait_until 150 test -s "$out2/runs/ewma-s1/records.jsonl" ||
    it_fail "the second run's workload did not start: $(tail -5 "$work/run2.err")"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || it_fail "interrupted run exited $rc, not 130: $(tail -5 "$work/run2.err")"
[ -s "$out2/README.md" ] || it_fail "no report after the interruption"
grep -q "interrupted" "$out2/README.md" || it_fail "the report does not say it was interrupted"
grep -q "\"status\": \"interrupted\"" "$out2/runs.json" || it_fail "runs.json does not record the interrupted run"
check_gone "$out2"
it_log "SIGINT during a workload: exit 130, report written, nothing left behind; total $((SECONDS - IT_START)) s"
