#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# shadow-smoke.sh -- pctor in the Shadow simulator, end to end:
# `pctor-experiment run --engine shadow` on tests/data/shadow/smoke.toml (one
# tor 0.4.9 authority, four pctor relays of which two exits, one pctor
# client, one web server; two configurations: shared connections and
# PerCircuitTCP; 30 simulated seconds of web and bulk downloads). Checks:
#   - both runs are ok: Shadow exited 0 (every process ended as expected:
#     daemons still running at the end, the workload exited 0);
#   - in each configuration, counted web and bulk downloads succeeded (size
#     and sha256 of the file checked by the client) through circuits of pctor
#     relays (the only relays there are), with connect <= TTFB <= total;
#   - with PerCircuitTCP 1 the middles' onward connections are per-circuit
#     ones (their MeasureMe records say so), with PerCircuitTCP 0 never;
#   - the relay with ipsec = true (IPsec 1 in its torrc) logged exactly one
#     "IPsec: switched off" line, as Shadow has no XFRM;
#   - MeasureMe records of the relays join the client's labels, and the
#     report (README.md, percentiles.csv) was written;
#   - --first-seed 2: the runs (and their records) are seed 2's;
#   - experiment.paired_paths: every loop's streams went over the seed's
#     path, the same in both configurations, pinned by the client host's
#     workload through its pctor client's ControlPort (circuits BUILT on
#     the drawn path, streams SUCCEEDED on them, none elsewhere);
#   - the key cache (fresh for this test): the first run made the
#     authority's and the four relays' keys, the second made none, and
#     every relay ran in both runs with the fingerprint the cache gave it.
#
# Skipped (77) when Shadow is not installed (scripts/install-shadow), or
# without tor or faketime. About 1-3 minutes of CPU.

# Shadow interposes pctor's system calls itself (seccomp and a preloaded
# shim); under pctor's own filter the simulated runs carried no request,
# so this test always runs pctor without Sandbox 1.
PCTOR_IT_SANDBOX=0
. "$(dirname "$0")/lib.sh"
set -u

SHADOW=${SHADOW:-$(command -v shadow || echo "$HOME/.local/bin/shadow")}
[ -x "$SHADOW" ] || it_skip "Shadow is not installed (scripts/install-shadow SRC builds it; README)"
it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_fail "no pctor binary at $PCTOR"
PY=/usr/bin/python3
$PY -c 'import tomllib' 2> /dev/null || it_skip "needs /usr/bin/python3 >= 3.11"
command -v faketime > /dev/null ||
    it_skip "needs faketime (apt-get install faketime; the authorities' certificates are dated 1999)"

EXP=$IT_TOP_SRCDIR/scripts/pctor-experiment
work=$(it_tmpdir)
out=$work/report
# the authority's keys are cached per run of this test, not in $HOME
export PCTOR_SHADOW_CACHE=$work/cache

t0=$SECONDS
it_run nice -n 10 "$EXP" run "$IT_TOP_SRCDIR/tests/data/shadow/smoke.toml" --engine shadow \
    --shadow "$SHADOW" --out "$out" --pctor "$PCTOR" --tor "$TOR" --keep-data --first-seed 2 \
    > "$work/run.out" 2> "$work/run.err" ||
    it_fail "pctor-experiment run --engine shadow failed: $(tail -15 "$work/run.err")"
it_log "two simulations done in $((SECONDS - t0)) s"

$PY - "$out" <<'PY' || it_fail "the Shadow runs are wrong (logs under $out/runs/*/shadow)"
import csv, glob, json, os, sys
out = sys.argv[1]
def fail(msg):
    print("shadow-smoke:", msg, file=sys.stderr)
    sys.exit(1)
meta = json.load(open(os.path.join(out, "runs.json")))
if meta.get("engine") != "shadow":
    fail(f"engine {meta.get('engine')}")
runs = meta["runs"]
if [r["status"] for r in runs] != ["ok", "ok"]:
    fail(f"runs: {[(r['run'], r['status'], r.get('error')) for r in runs]}")
# --first-seed 2 with the definition's one seed: the runs are seed 2's
if meta.get("first_seed") != 2 or [r["seed"] for r in runs] != [2, 2] or \
        [r["run"] for r in runs] != ["shared-s2", "pctcp-s2"]:
    fail(f"--first-seed 2: first_seed {meta.get('first_seed')}, runs "
         f"{[(r['run'], r['seed']) for r in runs]}")
if any(r["seed"] != 2 for r in (json.loads(l) for l in open(os.path.join(out, "results.jsonl")))):
    fail("a record of a seed other than 2")
if any(not r.get("cpu_s") or not r.get("wall_s") or not r.get("peak_rss_mib") for r in runs):
    fail(f"run time, CPU or memory missing: {[(r.get('wall_s'), r.get('cpu_s'), r.get('peak_rss_mib')) for r in runs]}")
# results.jsonl: it_check_results, below
recs = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]

def logs(run, host):
    p = os.path.join(out, "runs", run, "shadow", "shadow.data", "hosts", host, "notice.log")
    return open(p, errors="replace").read()

relays = ("mid1", "mid2", "exit", "pexit")
for r in runs:
    off = logs(r["run"], "pexit").count("IPsec: switched off")
    if off != 1:
        fail(f"{r['run']}: pexit logged 'IPsec: switched off' {off} times")
    for h in relays:
        if "[err]" in logs(r["run"], h):
            fail(f"{r['run']}: {h} logged an error")
# Key cache (empty at the start of this test): the first run keys the
# authority and the four relays, the second takes them all from the cache,
# and each relay runs on the identity the cache gave it in both runs.
made = [(r["keycache"]["made_authorities"], r["keycache"]["made_relays"]) for r in runs]
if made != [(1, 4), (0, 0)] or any(r["keycache"]["hosts"] != 5 for r in runs):
    fail(f"keys made per run (authorities, relays): {made}, want [(1, 4), (0, 0)]")
for h in relays:
    fps = set()
    for r in runs:
        sim = os.path.join(out, "runs", r["run"], "shadow")
        want = json.load(open(os.path.join(sim, "compiled.json")))["hosts"][h]["fingerprint"]
        got = open(os.path.join(sim, "shadow.data", "hosts", h, "data",
                                "fingerprint")).read().split()
        if got != [h, want]:
            fail(f"{r['run']}: {h} ran as {got}, the key cache gave {want}")
        fps.add(want)
    if len(fps) != 1:
        fail(f"{h} changed identity between the runs: {fps}")
if "Keys: 10 host keyings in 2 simulation(s), 5 made" not in \
        open(os.path.join(out, "README.md")).read():
    fail("the report does not say how many keys were made")
mm = [json.loads(l) for l in open(os.path.join(out, "measureme.jsonl"))]
asks = [json.loads(l) for l in open(os.path.join(out, "measureme-asks.jsonl"))]
if not mm or not asks:
    fail(f"MeasureMe: {len(mm)} records, {len(asks)} asks")
labels = {a["label"] for a in asks}
if any(m.get("label") not in labels for m in mm):
    fail("a MeasureMe record with a label the client did not log")
# PerCircuitTCP: the middles' onward connections (MeasureMe's chan_fwd) are
# per-circuit ones with PerCircuitTCP 1 and never with PerCircuitTCP 0.
for cfg, want in (("shared", False), ("pctcp", True)):
    own = any((m.get("chan_fwd") or {}).get("per_circuit") for m in mm
              if m["config"] == cfg and m.get("role") == "middle")
    if own != want:
        fail(f"{cfg}: per-circuit onward connections at a middle: {own}, want {want}")
# experiment.paired_paths inside Shadow: the client's workload pinned every
# loop to the seed's path through its pctor client's ControlPort; the same
# paths in both configurations, circuits BUILT on exactly those paths, and
# the streams SUCCEEDED on their loop's circuit (pctor's own STREAM/CIRC
# events), none on another.
paths = None
for r in runs:
    pp = (r.get("paired_paths") or {}).get("cli")
    if not pp:
        fail(f"{r['run']}: no paired-paths summary for cli ({r.get('paired_paths_missing')})")
    if paths is None:
        paths = pp["paths"]
    elif pp["paths"] != paths:
        fail(f"{r['run']}: other paths than the first run's: {pp['paths']} vs {paths}")
    if set(pp["paths"]) != {"web-cli-0", "web-cli-1", "bulk-cli-0"}:
        fail(f"{r['run']}: pinned loops {sorted(pp['paths'])}")
    if pp["path_mismatches"] or pp["streams_on_other_circuit"]:
        fail(f"{r['run']}: pinning broken: {pp['path_mismatches']}, "
             f"{pp['streams_on_other_circuit']} streams on another circuit")
    ok = sum(1 for x in recs if x["run"] == r["run"] and x["ok"] and not x.get("aborted"))
    if pp["streams_on_pinned_path"] < ok:
        fail(f"{r['run']}: {pp['streams_on_pinned_path']} streams verified on their "
             f"pinned path, {ok} good downloads")
    if any(x["run"] == r["run"] and "-".join(paths[f"{x['class']}-cli-{x['stream']}"]) !=
           x.get("path") for x in recs):
        fail(f"{r['run']}: a record without its loop's path")
rows = list(csv.DictReader(open(os.path.join(out, "percentiles.csv"))))
if not any(r["config"] == "pctcp" and r["class"] == "web" and r["metric"] == "ttfb"
           for r in rows):
    fail("no percentile row for pctcp/web/ttfb")
if "shadow" not in open(os.path.join(out, "README.md")).read().lower():
    fail("the report does not say it ran in Shadow")
print("shadow-smoke: runs ok; good downloads per config/class:",
      {(c, k): sum(1 for r in recs if r["config"] == c and r["class"] == k and r["ok"])
       for c in ("shared", "pctcp") for k in ("web", "bulk")},
      "; streams verified on their pinned path per run:",
      {r["run"]: r["paired_paths"]["cli"]["streams_on_pinned_path"] for r in runs},
      "; paths:", paths, file=sys.stderr)
PY
it_check_results "$PY" "$out" "shared pctcp" "web:4 bulk:2" ||
    it_fail "the Shadow runs are wrong (logs under $out/runs/*/shadow)"
it_log "ok"
