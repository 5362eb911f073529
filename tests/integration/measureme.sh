#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# measureme.sh -- MeasureMe: relays record statistics of the one circuit
# that asked, and tor relays ignore the request without closing the circuit.
#
# Private network (1 tor authority, 2 tor relays) plus pctor relays p1
# (MeasureMeEnabled 0, the default), p2 (PerCircuitTCP 1) and p3 (exit),
# both with MeasureMeEnabled 1, and a pctor
# client with MeasureMeHops. Checks:
#   - a circuit p1 -> p2 -> p3 that asks p2 and p3 to measure it every
#     200 ms while it downloads: p2's and p3's measureme.jsonl hold records
#     of that circuit only (its label), with consecutive sequence numbers,
#     cells adding up to the download, and (p2, PerCircuitTCP) TCP_INFO of
#     its own connection towards p3, which p3 sees as an incoming
#     connection carrying that one circuit; the circuit negotiated congestion
#     control with p3, whose records (not p2's) carry the controller (cwnd,
#     in flight, RTTs, SENDMEs counted); a second circuit downloading at
#     the same time without asking leaves no record;
#   - p1 (MeasureMeEnabled 0) refuses: no file, a log line;
#   - answers (doc/measureme.md) reach the asking client: p2 and p3 answer
#     "accepted" and return batches of records (seq from 0, no gaps), p1
#     answers "disabled";
#   - a circuit p1 -> relay1 (tor) -> p3 that asks relay1 and p3: tor drops
#     the unknown relay command without answering, the circuit carries the
#     download intact, p3 records it, and p3's answers come back through
#     tor relay1;
#   - a pctor SOCKS client with MeasureMeHops 2,3 logs the label of its
#     circuit, p2 and p3 record that label, and the client takes their
#     "accepted" answers.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
PY=$(it_python3) || it_skip "python3 is not installed"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((2 * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

it_start_pctor "$net" p1 relay "MeasureMeEnabled 0"
it_start_pctor "$net" p2 relay "PerCircuitTCP 1
MeasureMeEnabled 1"
it_start_pctor "$net" p3 relay "MeasureMeEnabled 1
ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RelayBandwidthRate 512 KBytes
RelayBandwidthBurst 512 KBytes
ServerDNSResolvConfFile $net/resolv.conf"
hop() { echo "pctor:$(cat "$net/$1.dir")/data@127.0.0.1:$(cat "$net/$1.port")"; }
P1=$(hop p1) P2=$(hop p2) P3=$(hop p3)
d1=$(cat "$net/p1.dir") d2=$(cat "$net/p2.dir") d3=$(cat "$net/p3.dir")

fetch() { # NAME ARGS...
    local name=$1
    shift
    "$CIRCTEST" --timeout 120 --nodes "$nodes" --begin "127.0.0.1:$hport" \
        --get /file --out "$net/$name.out" "$@" 2> "$net/$name.err" ||
        it_fail "$name: download failed: $(tail -3 "$net/$name.err")"
    [ "$(sha256sum < "$net/$name.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "$name: download corrupted"
}

# 1. One circuit asks p1, p2 and p3; another, at the same time, does not.
L1=00112233aabbccdd
fetch quiet "$P1" "$P2" "$P3" &
quiet=$!
fetch measured --cc --measureme "1:200:$L1" --measureme "2:200:$L1" \
    --measureme "3:200:$L1" "$P1" "$P2" "$P3"
wait "$quiet" || it_fail "the circuit that did not ask failed"
grep -q "asked hop 2 to measure" "$net/measured.err" || it_fail "circtest did not ask"
sleep 1 # the circuits' DESTROYs end the records

check_records() { # FILE LABEL MIN_RECORDS WANT_TCP(0/1)
    "$PY" - "$@" "$((2 * 1024 * 1024))" <<'EOF' || return 1
import json, sys
path, label, min_n, want_tcp, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
recs = [json.loads(l) for l in open(path)]
assert len(recs) >= min_n, f"{len(recs)} records, expected at least {min_n}"
assert {r["label"] for r in recs} == {label}, "records of another circuit"
assert len({r["circuit"] for r in recs}) == 1, "records of several circuits"
assert [r["seq"] for r in recs] == list(range(len(recs))), "sequence gaps"
bwd = sum(r["cells_bwd"] for r in recs)
# the body plus HTTP headers in 498-byte RELAY_DATA cells, plus CONNECTED/END
assert size // 498 <= bwd <= size // 498 + 50, f"{bwd} backward cells"
for r in recs:
    for k in ("queue_fwd", "queue_bwd"):
        q = r[k]
        assert q["queued"] >= 0 and q["ewma"] >= 0 and q["delay_max_us"] >= 0
# the circuit negotiated congestion control with p3 (--cc): the exit's
# records carry its controller, the middle's none; no conflux leg here
assert not any("mux_leg" in r for r in recs), "an ordinary circuit marked as a conflux leg"
if want_tcp:
    assert not any("cc" in r for r in recs), "a congestion controller at the middle"
else:
    cc = [r["cc"] for r in recs if "cc" in r]
    assert cc, "no congestion controller in the exit's records"
    assert all(c["cwnd"] > 0 for c in cc), cc[:3]
    # Vegas may cut the window below what is already in flight (leaving
    # slow start it becomes the BDP estimate, which the RTT of a loaded
    # machine makes small; tor does the same), so a record can show more in
    # flight than the window. A sender that ignored its window would have
    # most of the download in flight and its window rarely held.
    over = [c for c in cc if c["inflight"] > c["cwnd"] + 31]
    assert len(over) <= len(cc) // 2, f"{len(over)} of {len(cc)} records over cwnd: {over[:3]}"
    assert all(c["inflight"] <= size // 498 // 2 for c in cc), max(c["inflight"] for c in cc)
    assert any(c["acks"] > 0 and c["rtt_us"] > 0 and c["min_rtt_us"] > 0 for c in cc), \
        f"no SENDME counted in the exit's controller: {cc[-1]}"
if want_tcp:
    tcp = [r["chan_fwd"]["tcp"] for r in recs if r["chan_fwd"] and "tcp" in r["chan_fwd"]]
    assert tcp, "no TCP_INFO of the connection towards the next hop"
    assert all(r["chan_fwd"]["per_circuit"] == 1 for r in recs if r["chan_fwd"]), "not per circuit"
    assert all(t["cwnd"] > 0 and t["mss"] > 0 for t in tcp)
    # p2 opened the connection, and it carries this circuit alone (the
    # channel may not count it at a record's instant: 0; never a second)
    seen = [(r["seq"], r["chan_fwd"]["outgoing"], r["chan_fwd"]["circuits"])
            for r in recs if r["chan_fwd"]]
    assert all(o == 1 and n <= 1 for _, o, n in seen) and \
        any(n == 1 for _, _, n in seen), \
        f"per-circuit connection not outgoing with 1 circuit: (seq, outgoing, circuits) {seen}"
else:
    # p3 accepted p2's per-circuit connection: not marked per_circuit (nothing
    # on the wire says so) but incoming, carrying this one circuit
    back = [r["chan_bwd"] for r in recs if r["chan_bwd"]]
    assert back and all(c["outgoing"] == 0 and c["circuits"] == 1 for c in back), \
        f"p3's connection from p2: {back[:1]}"
print(f"{len(recs)} records, {bwd} backward cells, max queue delay "
      f"{max(r['queue_bwd']['delay_max_us'] for r in recs)} us")
EOF
}
out=$(check_records "$d2/data/measureme.jsonl" "$L1" 5 1) || it_fail "p2's records: see above"
it_log "p2: $out"
out=$(check_records "$d3/data/measureme.jsonl" "$L1" 5 0) || it_fail "p3's records: see above"
it_log "p3: $out"
[ ! -e "$d1/data/measureme.jsonl" ] || it_fail "p1 recorded although MeasureMeEnabled is 0"
grep -q "MeasureMe: refusing a request (MeasureMeEnabled 0)" "$d1/info.log" ||
    it_fail "p1 did not log that it refused"
grep -q "MeasureMe: stopped measuring circuit .*the circuit closed" "$d2/info.log" ||
    it_fail "p2 did not stop when the circuit closed"
# The answers the measured circuit's client got.
check_answers() { # ERRFILE HOP LABEL: prints the records returned
    grep -q "MeasureMe answer from hop $2: status accepted (label $3)" "$1" ||
        { grep "MeasureMe answer" "$1" | head -5; return 1; }
    local n
    n=$(sed -n "s/.*MeasureMe answer from hop $2: \([0-9]*\) records .*(label $3)/\1/p" "$1" |
        awk '{s += $1} END {print s + 0}')
    [ "$n" -ge 3 ] || { echo "hop $2 returned $n records"; return 1; }
    echo "$n"
}
n2=$(check_answers "$net/measured.err" 2 "$L1") || it_fail "p2's answer did not reach the client: $n2"
n3=$(check_answers "$net/measured.err" 3 "$L1") || it_fail "p3's answer did not reach the client: $n3"
grep -q "MeasureMe answer from hop 1: status disabled (label $L1)" "$net/measured.err" ||
    it_fail "p1 (MeasureMeEnabled 0) did not answer 'disabled'"
! grep "MeasureMe answer" "$net/measured.err" | grep -q garbage || it_fail "a garbage answer"
# the records returned are the circuit's: seq from 0 without gaps, their
# backward cells at most the download's
"$PY" - "$net/measured.err" "$L1" "$((2 * 1024 * 1024))" <<'EOF' || it_fail "p3's returned records: see above"
import re, sys
path, label, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [m.groups() for m in re.finditer(r"answer from hop 3: (\d+) records seq (\d+)-(\d+), "
                                        r"(\d+) cells backward \(label " + label + r"\)",
                                        open(path).read())]
seqs = [(int(a), int(b)) for _, a, b, _ in rows]
assert seqs and seqs[0][0] == 0, seqs
for (a0, b0), (a1, b1) in zip(seqs, seqs[1:]):
    assert a1 == b0 + 1, ("records skipped", seqs)
bwd = sum(int(r[3]) for r in rows)
assert 0 < bwd <= size // 498 + 50, bwd
print(f"p3 returned {len(rows)} answer cells, {bwd} backward cells")
EOF
it_log "answers: p2 returned $n2 records, p3 $n3, p1 answered 'disabled'"

# 2. tor 0.4.9 in the middle ignores the request.
L2=ffeeddccbbaa9988
fetch via-tor --measureme "2:200:$L2" --measureme "3:200:$L2" "$P1" relay1 "$P3"
sleep 1
n=$(grep -c "\"label\":\"$L2\"" "$d3/data/measureme.jsonl")
[ "$n" -ge 3 ] || it_fail "p3 recorded $n records for the circuit through tor"
! grep -q "MeasureMe answer from hop 2" "$net/via-tor.err" || it_fail "tor relay1 answered?"
# silently: tor logs an unknown relay command only as a protocol warning
# (info level unless ProtocolWarnings 1); nothing at notice or above
! grep -il "unknown relay command" "$net"/*/tor.out || it_fail "a tor relay complained (above)"
n3=$(check_answers "$net/via-tor.err" 3 "$L2") ||
    it_fail "p3's answer did not come back through tor relay1: $n3"
it_log "circuit through tor relay1 (asked, ignored it): download intact; p3 wrote $n records, returned $n3 through relay1"

# 3. A SOCKS client asking hops 2 and 3 of its circuits.
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"
it_start_pctor "$net" c1 client "EntryNodes p1
MiddleNodes p2
ExitNodes p3
MeasureMeHops 2,3
MeasureMeInterval 300"
socks=$(cat "$net/c1.port")
get() { curl -sf --max-time 60 -x "socks5h://127.0.0.1:$socks" "http://127.0.0.1:$hport/file" -o "$net/socks.out"; }
it_wait_until 90 get || it_fail "the SOCKS client never carried a request"
[ "$(sha256sum < "$net/socks.out" | cut -d' ' -f1)" = "$want" ] || it_fail "SOCKS download corrupted"
dc=$(cat "$net/c1.dir")
L3=$(sed -n 's/.*MeasureMe: asked hop 2 of circuit [0-9]* to measure it every 300 ms (label \([0-9a-f]*\)).*/\1/p' "$dc/info.log" | tail -1)
[ -n "$L3" ] || it_fail "the client did not log a MeasureMe label"
grep -q "asked hop 3 of circuit .*(label $L3)" "$dc/info.log" || it_fail "the client did not ask hop 3"
grep -q "MeasureMe: hop 2 of circuit [0-9]* answered: accepted" "$dc/info.log" ||
    it_fail "the SOCKS client did not get p2's answer"
grep -q "MeasureMe: hop 3 of circuit [0-9]* answered: accepted" "$dc/info.log" ||
    it_fail "the SOCKS client did not get p3's answer"
it_wait_until 10 grep -q "\"label\":\"$L3\"" "$d2/data/measureme.jsonl" || it_fail "p2 has no record of the client's circuit"
it_wait_until 10 grep -q "\"label\":\"$L3\"" "$d3/data/measureme.jsonl" || it_fail "p3 has no record of the client's circuit"
it_log "SOCKS client with MeasureMeHops 2,3: label $L3 recorded by p2 and p3"

it_pctor_alive_quiet "$net" p1 p2 p3 c1
it_log "MeasureMe checks passed"
