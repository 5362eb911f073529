#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# testbed-smoke.sh -- bring up scripts/testbed/small.toml with pctor-testbed
# (3 tor authorities, 5 relays of which 2 pctor relays and 1 pctor exit, a
# pctor and a tor client, 1 web server, each host in its own namespace
# behind an emulated access link), fetch files through the pctor client's
# SocksPort with curl --socks5-hostname to the web server's address and
# check their sha256, run one web and one bulk request of the traffic
# models on both clients and the file's [[traffic]] workload for 12 s (JSON
# lines with connect/TTFB/total times), then `down` and check that no
# namespace, process or nft table of the run is left and that `down` is
# idempotent.
#
# Skipped (77) unless run as root with tor, curl and pctor-delayd.
# About 60-90 s.

. "$(dirname "$0")/lib.sh"
set -u

it_require_testbed
rundir=$(it_tmpdir)/run
it_register_testbed "$rundir"   # taken down whatever happens
tb() { it_run "$TB" "$@"; }
state() { it_testbed_state "$rundir" "$1"; }   # PYTHON-EXPRESSION on the state dict `s`

t0=$SECONDS
tb up "$IT_TOP_SRCDIR/scripts/testbed/small.toml" --rundir "$rundir" --tor "$TOR" \
    --pctor "$PCTOR" --delayd "$DELAYD" > /dev/null || it_fail "pctor-testbed up failed"
it_log "network up in $((SECONDS - t0)) s"
runid=$(state 's["runid"]')
tb status --rundir "$rundir" >&2 || it_fail "status failed"

# Every relay of the TOML file is in the consensus (up waited for it); the
# pctor ones are pctor processes.
[ "$(state 'sum(1 for h in s["hosts"].values() if h.get("fingerprint"))')" = 8 ] ||
    it_fail "not every relay has a fingerprint in the state file"
for h in middle prelay pexit client1; do
    pid=$(state "s['hosts']['$h']['pid']")
    grep -q pctor "/proc/$pid/cmdline" || it_fail "$h does not run pctor"
done

web=$(state 's["hosts"]["web"]["ip"]')
for f in 320KiB 5MiB; do
    want=$(state "s['hosts']['web']['files']['$f']['sha256']")
    got=$(tb exec --rundir "$rundir" client1 -- curl -sf --max-time 120 \
        --socks5-hostname 127.0.0.1:9050 "http://$web/$f" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || it_fail "$f through the pctor client: sha256 $got, want $want"
    it_log "$f through the pctor client (curl --socks5-hostname): sha256 ok"
done

# The traffic models record TTFB and download time as JSON lines.
res=$IT_ROOT/traffic.jsonl
for c in client1 client2; do
    tb traffic --rundir "$rundir" "$c" --model web --count 1 --duration 120 --out "$res" ||
        it_fail "web request through $c failed"
    tb traffic --rundir "$rundir" "$c" --model bulk --count 1 --duration 120 --out "$res" ||
        it_fail "bulk request through $c failed"
done
/usr/bin/python3 - "$res" <<'PY' || it_fail "bad traffic records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 4, recs
for r in recs:
    assert r["ok"] and 0 < r["ttfb"] <= r["total"], r
    assert r["bytes"] == (327680 if r["model"] == "web" else 5242880), r
print("traffic:", ", ".join(f"{r['client']}/{r['model']} ttfb {r['ttfb']:.2f}s total {r['total']:.2f}s"
                            for r in recs), file=sys.stderr)
PY

# The file's [[traffic]] mix (client1: 2 web loops, client2: bulk) for 12 s
# with short think times.
wl=$IT_ROOT/workload.jsonl
tb workload --rundir "$rundir" --duration 12 --think-min 0.5 --think-max 1 --seed 7 \
    --out "$wl" || it_fail "workload failed"
/usr/bin/python3 - "$wl" <<'PY' || it_fail "bad workload records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
web = [r for r in recs if r["client"] == "client1" and r["model"] == "web"]
bulk = [r for r in recs if r["client"] == "client2" and r["model"] == "bulk"]
assert len(web) >= 4 and {r["stream"] for r in web} == {0, 1}, web
assert len(bulk) >= 1, bulk
assert all(r["ok"] and r["connect"] <= r["ttfb"] <= r["total"] for r in recs), recs
print(f"workload: {len(web)} web and {len(bulk)} bulk downloads, all ok", file=sys.stderr)
PY

# down: nothing of the run may be left.
t1=$SECONDS
tb down --rundir "$rundir" || it_fail "pctor-testbed down failed"
it_log "down in $((SECONDS - t1)) s"
if ip netns list | grep -q "^tb$runid-"; then
    it_fail "namespaces left behind: $(ip netns list | grep "^tb$runid-" | tr '\n' ' ')"
fi
for f in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' 2> /dev/null < "$f" | grep -q "$rundir/"; then
        it_fail "a process naming $rundir is still running: $f"
    fi
done
for pid in $(state '" ".join(str(p["pid"]) for p in s["processes"])'); do
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$rundir"; then
        it_fail "process $pid of the run is still alive"
    fi
done
if nft list tables 2> /dev/null | grep -q pctor_tb; then
    it_fail "an nft table of the test bed exists in the root namespace"
fi
[ "$(state 's["status"]')" = down ] || it_fail "state is not 'down'"
tb down --rundir "$rundir" > /dev/null 2>&1 || it_fail "a second down failed"
it_log "teardown left nothing behind; total $((SECONDS - t0)) s"
