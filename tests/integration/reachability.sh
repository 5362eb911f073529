#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# reachability.sh -- AssumeReachable 0: a pctor relay tests that its
# advertised ORPort is reachable from outside before it publishes, as tor.
#
# One tor authority, one tor relay (a test circuit needs two relays before
# the tested one) and two pctor relays, both with AssumeReachable 0 set
# explicitly (TestingTorNetwork would make it 1):
#   p1 advertises the ORPort it listens on. It logs "Now checking whether
#      IPv4 ORPort ... is reachable", then, once a circuit through the
#      two tor relays back to itself was built, "Self-testing indicates your
#      ORPort 127.0.0.1:PORT is reachable from the outside. Excellent.";
#      its first descriptor upload comes after that line, never before,
#      and the authority lists it Running and Valid. Then it performs the
#      bandwidth self-test (1000 DROP cells through that circuit back to
#      itself) and republishes with an observed bandwidth of at least
#      20 KB/s.
#   p2 listens on one address and port (NoAdvertise) but advertises
#      another where nothing listens (NoListen, 127.0.0.2), as a relay
#      behind broken port forwarding would. Its test circuits fail; after 30 s (the
#      TestingTorNetwork complaint delay) it warns "Your server has not
#      managed to confirm reachability for its ORPort(s) at
#      127.0.0.2:BADPORT", and it never uploads: the authority has no
#      descriptor for it.
# p1 logs no warning; p2 logs only that one.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
command -v curl > /dev/null || it_skip "curl is not installed"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 1 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# start_relay NICK ORPORT-LINES: start a pctor relay with AssumeReachable 0.
start_relay() {
    it_start_pctor "$net" "$1" ports "$2
AssumeReachable 0"
}

start_relay p1 "ORPort 127.0.0.1:@PORT@
Address 127.0.0.1"
d1=$(cat "$net/p1.dir") port1=$(cat "$net/p1.port")
echo "p1 $port1 0 $(awk '{print $2}' "$d1/data/fingerprint") $(awk '{print $2}' "$d1/data/fingerprint-ed25519") - pctor" >> "$nodes"
# A port nobody listens on: a reserved node's ORPort that nothing uses.
read -r _ badport _ _ < <(it_privnet reserve "$net" --role unused --nickname unused)
# The advertised address is 127.0.0.2 while p2's own connections come from
# 127.0.0.1: a tor relay asked to extend to p2 reuses a connection it has
# with p2's identity when the address matches (ports are not compared), so
# on one address a wrong port alone would not show.
start_relay p2 "ORPort 127.0.0.1:@PORT@ NoAdvertise
ORPort 127.0.0.2:$badport NoListen
Address 127.0.0.2"
d2=$(cat "$net/p2.dir")

# --- p1: the notice, then the upload ---------------------------------------
ok_line="Self-testing indicates your ORPort 127.0.0.1:$port1 is reachable from the outside. Excellent."
it_wait_until 90 grep -qF "$ok_line" "$d1/info.log" ||
    { tail -20 "$d1/info.log" >&2; it_fail "p1 did not confirm its ORPort"; }
grep -q "Now checking whether IPv4 ORPort 127.0.0.1:$port1 is reachable" "$d1/info.log" ||
    it_fail "p1 did not say it started the self-test"
it_wait_until 30 grep -q "Uploaded descriptor to " "$d1/info.log" ||
    it_fail "p1 did not upload its descriptor after the self-test"
ok_at=$(grep -nF "$ok_line" "$d1/info.log" | head -1 | cut -d: -f1)
up_at=$(grep -n "Uploaded descriptor to \|Could not upload our descriptor" "$d1/info.log" | head -1 | cut -d: -f1)
[ "$up_at" -gt "$ok_at" ] ||
    it_fail "p1 tried to upload (line $up_at) before the self-test succeeded (line $ok_at)"
it_log "p1: self-test ok at log line $ok_at, first upload at line $up_at: $(grep -m1 'Testing the reachability' "$d1/info.log" | sed 's/^.*\] //')"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list p1 as Running and Valid"

# --- p2: the warning, and no upload -----------------------------------------
it_selftest_unconfirmed p2 "$d2" "127.0.0.2:$badport" "$auth_dirport"
grep -q "Reachability test circuit failed\|Reachability test circuit not built" "$d2/info.log" ||
    it_fail "p2 did not log a failed test circuit"
grep -q "Self-testing indicates" "$d2/info.log" && it_fail "p2 claims its bad ORPort is reachable"
it_log "p2: $(grep -c 'Reachability test circuit failed\|not built after' "$d2/info.log") failed test circuits, then: $(grep -m1 -F "$warn" "$d2/info.log" | sed 's/^.*\] //' | cut -c1-90)..."

# --- p1: the bandwidth self-test ------------------------------------------
# With its ORPort confirmed, p1 sends 1000 DROP cells (tor's count: ten
# seconds at its 1 GByte/s rate, at most a circuit window) through the test
# circuit back to itself, and republishes with the bandwidth it observed
# (about 50 KB/s: 514 KB read and written within a 10-second sample; the
# directory traffic of an idle relay stays far below 20 KB/s both ways).
grep -q "Performing bandwidth self-test: 1000 cells through our own ORPort...done." "$d1/info.log" ||
    it_fail "p1 did not perform the bandwidth self-test: $(grep -i 'bandwidth self-test' "$d1/info.log")"
fp1=$(awk '{print $2}' "$d1/data/fingerprint")
p1_observed() {
    curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/server/fp/$fp1" |
        awk '$1 == "bandwidth" { print $4 }'
}
p1_has_bw() { [ "$(p1_observed)" -ge 20000 ] 2>/dev/null; }
it_wait_until 120 p1_has_bw ||
    it_fail "p1's descriptor at the authority does not advertise the self-test's bandwidth: observed $(p1_observed)"
it_log "p1: bandwidth self-test done; its descriptor advertises $(p1_observed) bytes/s observed"
it_pctor_alive_quiet "$net" p1
kill -0 "$(cat "$d2/pid")" || it_fail "p2 died"
others=$(grep -E '\[(warn|err)\]' "$d2/info.log" | grep -vF "$warn")
[ -z "$others" ] || it_fail "p2 logged other warnings: $others"
it_log "pass"
