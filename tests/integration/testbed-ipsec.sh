#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# testbed-ipsec.sh -- the test bed with IPsec hosts (scripts/testbed/ipsec.toml):
# two pctor relays, each with its own charon started by pctor-testbed
# (`ipsec = true`) and PerCircuitTCP 1, between a pctor client pinned to
# them and a pctor exit. Checks:
#   - both relays log their IPsec SA with each other (set up by pctor over
#     VICI, no manual step) and charon lists it INSTALLED;
#   - four downloads with different SOCKS credentials (four circuits) run
#     at once: the guard holds at least four TCP connections to the
#     middle's ORPort (per-circuit), every file's sha256 is right, and a
#     capture on the guard's link in the router namespace shows ESP
#     (UDP-encapsulated) between the two relays and no TCP at all;
#   - the guard's own counters (its SIGUSR1 "Statistics: IPsec: extensions"
#     line, as the experiment runner reads it: experiment.transport_counters)
#     say the downloads' circuits went to the middle per circuit inside
#     IPsec, at least four of them, none over a shared connection;
#   - `down` stops the charons (recorded PIDs gone) and leaves no namespace.
# Skipped (77) unless run as root with tor, curl, tcpdump, pctor-delayd,
# charon with kernel-libipsec and /dev/net/tun. About 60 s.

. "$(dirname "$0")/lib.sh"
set -u

it_require_testbed
CHARON=${CHARON:-}
[ -z "$CHARON" ] || [ "$CHARON" = no ] && CHARON=/usr/lib/ipsec/charon
export CHARON
export PCTOR_VICI=${PCTOR_VICI:-$top_builddir/src/tools/vicitest/pctor-vici}
[ -x "$CHARON" ] || it_skip "no charon at $CHARON (apt-get install strongswan-charon)"
ls /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so > /dev/null 2>&1 ||
    it_skip "kernel-libipsec plugin missing (apt-get install libcharon-extra-plugins)"
[ -c /dev/net/tun ] || it_skip "no /dev/net/tun"
for c in ip tc nft iptables-restore tcpdump curl ss sha256sum; do
    command -v "$c" > /dev/null 2>&1 || it_skip "$c is not installed"
done
"$PCTOR" --list-options 2> /dev/null | grep -q '^IPsec ' || it_fail "$PCTOR has no IPsec option"

rundir=$(it_tmpdir)/run
it_register_testbed "$rundir"   # taken down whatever happens
tb() { it_run "$TB" "$@"; }
state() { it_testbed_state "$rundir" "$1"; }   # PYTHON-EXPRESSION on the state dict `s`
counters() { # OUT: the guard's PerCircuitTCP-in-IPsec extension counters
    PYTHONPATH=$IT_TOP_SRCDIR/scripts /usr/bin/python3 - "$rundir/state.json" "$1" <<'PY'
import json, sys
from pctor_lab.experiment import transport_counters
hosts = json.load(open(sys.argv[1]))["hosts"]
json.dump(transport_counters(hosts, {"guard": "ipsec"}), open(sys.argv[2], "w"))
PY
}
fail() {
    for f in "$rundir"/hosts/guard/notice.log "$rundir"/hosts/middle/notice.log \
             "$rundir"/hosts/guard/charon/charon.log; do
        [ -s "$f" ] && { echo "----- $f" >&2; tail -n 20 "$f" >&2; }
    done
    it_fail "$@"
}

t0=$SECONDS
tb up "$IT_TOP_SRCDIR/scripts/testbed/ipsec.toml" --rundir "$rundir" --tor "$TOR" \
    --pctor "$PCTOR" --delayd "$DELAYD" > /dev/null || fail "pctor-testbed up failed"
it_log "network with two IPsec relays up in $((SECONDS - t0)) s"
G=$(state 's["hosts"]["guard"]["ip"]') M=$(state 's["hosts"]["middle"]["ip"]')
web=$(state 's["hosts"]["web"]["ip"]')
core=$(state '[n for n in s["namespaces"] if n.endswith("-core")][0]')
gif=$(state 's["hosts"]["guard"]["core_if"]')
ip -n "$core" link show "$gif" > /dev/null 2>&1 || fail "cannot find the guard's link in $core"
cpids=$(state '" ".join("%d:%d" % (p["pid"], p["start"]) for p in s["processes"] if p["kind"] == "charon")')
[ "$(echo "$cpids" | wc -w)" = 2 ] || fail "want 2 charon processes in the state file, got '$cpids'"

# The client's readiness request already made circuits guard -> middle.
for r in guard middle; do
    it_wait_until 60 grep -q "IPsec SA with relay .* is up" "$rundir/hosts/$r/notice.log" ||
        fail "$r: no IPsec SA with its peer"
done
"$PCTOR_VICI" -s "$rundir/hosts/guard/charon/charon.vici" list-sas > "$IT_ROOT/sas" ||
    fail "list-sas on the guard's charon"
grep -q "remote-host = $M\$" "$IT_ROOT/sas" && grep -q "state = INSTALLED" "$IT_ROOT/sas" ||
    fail "no INSTALLED CHILD_SA with $M: $(cat "$IT_ROOT/sas")"
it_log "IPsec SA guard <-> middle set up by pctor, INSTALLED in charon"

ip netns exec "$core" tcpdump -n -U -i "$gif" -w "$IT_ROOT/cap.pcap" \
    "host $G and host $M" > "$IT_ROOT/tcpdump.log" 2>&1 &
tdpid=$!
it_register_pid "$tdpid"
it_wait_until 10 grep -q "listening on" "$IT_ROOT/tcpdump.log" || fail "tcpdump did not start"

counters "$IT_ROOT/before.json" || fail "no IPsec statistics from the guard before the downloads"
want=$(state "s['hosts']['web']['files']['5MiB']['sha256']")
for i in 1 2 3 4; do
    tb exec --rundir "$rundir" client -- curl -sf --max-time 180 \
        --socks5-hostname "u$i:p$i@127.0.0.1:9050" "http://$web/5MiB" \
        -o "$IT_ROOT/dl$i" &
    it_register_pid $!
    dls="${dls:-} $!"
done
maxc=0
end=$((SECONDS + 180))
while [ $SECONDS -lt $end ]; do
    n=$(tb exec --rundir "$rundir" guard -- ss -Htn state established dst "$M:9001" | wc -l)
    [ "$n" -gt "$maxc" ] && maxc=$n
    alive=0
    for p in $dls; do kill -0 "$p" 2> /dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.3
done
for p in $dls; do wait "$p" 2> /dev/null; done
wait_ok=1
for i in 1 2 3 4; do
    [ "$(sha256sum < "$IT_ROOT/dl$i" 2> /dev/null | cut -d' ' -f1)" = "$want" ] || wait_ok=0
done
[ $wait_ok = 1 ] || fail "a download through the IPsec relays is missing or corrupt"
[ "$maxc" -ge 4 ] || fail "only $maxc TCP connections guard -> middle for 4 circuits (PerCircuitTCP)"
it_log "4 x 5 MiB intact; up to $maxc per-circuit connections guard -> middle"
counters "$IT_ROOT/after.json" || fail "no IPsec statistics from the guard after the downloads"
PYTHONPATH=$IT_TOP_SRCDIR/scripts /usr/bin/python3 - "$IT_ROOT/before.json" \
    "$IT_ROOT/after.json" <<'PY' || fail "the guard's extensions did not all go inside IPsec"
import json, sys
from pctor_lab.experiment import transport_check
before, after = (json.load(open(p)) for p in sys.argv[1:3])
hops, problem = transport_check(before, after)
print("guard's extensions during the downloads:", hops, file=sys.stderr)
assert problem is None, problem
assert hops["guard"]["carried"] >= 4, hops
PY
sleep 1
kill "$tdpid" 2> /dev/null
wait "$tdpid" 2> /dev/null
tcp=$(tcpdump -n -r "$IT_ROOT/cap.pcap" tcp 2> /dev/null | wc -l)
esp=$(tcpdump -n -r "$IT_ROOT/cap.pcap" "udp port 4500 or esp or (ip[6:2] & 0x1fff != 0)" 2> /dev/null | wc -l)
[ "$tcp" = 0 ] || fail "$tcp plaintext TCP packets between the IPsec relays: $(tcpdump -n -r "$IT_ROOT/cap.pcap" tcp 2> /dev/null | head -3)"
[ "$esp" -ge 1000 ] || fail "only $esp ESP packets between the relays for 20 MiB"
it_log "capture guard <-> middle: $esp ESP packets, no TCP"

tb down --rundir "$rundir" || fail "pctor-testbed down failed"
for pp in $cpids; do
    pid=${pp%%:*} st=${pp#*:}
    # (a zombie waiting for whoever adopted it to reap it has stopped)
    if [ -r "/proc/$pid/stat" ]; then
        set -- $(sed 's/.*) //' "/proc/$pid/stat")
        [ "$1" = Z ] || [ "${20}" != "$st" ] || fail "charon $pid still runs after down"
    fi
done
runid=$(state 's["runid"]')
ip netns list | grep -q "^tb$runid-" && fail "namespaces left behind"
it_log "down stopped both charons; total $((SECONDS - t0)) s"
