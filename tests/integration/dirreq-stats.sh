#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dirreq-stats.sh -- DirReqStatistics: a pctor relay counts consensus
# requests as tor does, writes each finished interval to
# DataDirectory/stats/dirreq-stats, keeps the interval under way in the
# state file across a restart, and a tor 0.4.9 authority accepts the
# extra-info document that carries the dirreq-* lines.
#
# One tor authority and one pctor relay p1 with a DirPort, a GeoIP file
# that puts 127.0.0.0/8 in "AQ", and __DirReqStatisticsInterval 30 s.
#   1. p1 runs with PublishServerDescriptor 0 (the authority must first
#      see a descriptor that already has the lines: a later one that
#      differs only in its extra-info is "cosmetic" to tor and not kept).
#      Once its DirPort serves the consensus: 6 consensus downloads on
#      the DirPort (curl), 2 over BEGIN_DIR (pctor-circtest --get on a
#      one-hop circuit), 1 over BEGIN_DIR at the end of a two-hop circuit
#      through the authority (anonymous: by status only, as in tor), 1
#      request for a consensus flavor nobody has. The stats file that
#      holds them must say, with tor's rounding: dirreq-v3-ips aq=8 (one
#      address), dirreq-v3-reqs aq=8 (8, not 9: the anonymous one is no
#      country's), served=16 and ok=16 (9), unavailable=8, direct-dl
#      complete=8 (6), tunneled-dl complete=4 (3).
#   2. One more download in the next interval; after SIGTERM the state
#      file holds it (DirReqStatsReqs aq=1) and the interval's start.
#   3. p1 starts again, publishing: the authority serves p1's extra-info,
#      whose dirreq-* lines are exactly the stats file's; and the next
#      interval's stats file counts the request saved in the state file
#      (dirreq-v3-reqs aq=8 with no request made since the restart).
# Takes about 3 minutes.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
[ -x "$CIRCTEST" ] || it_skip "$CIRCTEST is not built"
command -v curl > /dev/null || it_skip "curl is not installed"

it_net_start --authorities 1 --relays 0 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$net/nodes.txt")

read -r node port dport _ < <(it_privnet reserve "$net" --role pctor \
    --nickname p1) || it_fail "reserve failed"
d=$net/$node
# 127.0.0.0 - 127.255.255.255 (as integers) is "AQ".
echo "2130706432,2147483647,AQ" > "$d/geoip"
write_torrc() {
    cat > "$d/torrc" <<EOT
DataDirectory $d/data
ORPort 127.0.0.1:$port
DirPort 127.0.0.1:$dport
Address 127.0.0.1
Nickname p1
ContactInfo pctor test relay p1
Log info file $d/info.log
TestingTorNetwork 1
AssumeReachable 1
GeoIPFile $d/geoip
PublishServerDescriptor $1
__DirReqStatisticsInterval 30 seconds
__StateSaveInterval 5 seconds
$(cat "$net/dirauth.torrc")
EOT
}
start_p1() {
    "$PCTOR" -f "$d/torrc" >> "$d/stderr" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")" || it_fail "p1 did not start: $(cat "$d/stderr")"
    it_wait_port 127.0.0.1 "$port" 30 || it_fail "p1 did not open its ORPort"
    it_wait_port 127.0.0.1 "$dport" 5 || it_fail "p1 did not open its DirPort"
}
stop_p1() {
    local pid
    pid=$(cat "$d/pid")
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && it_fail "p1 did not exit on SIGTERM"
    return 0
}
write_torrc 0
start_p1
fp=$(awk '{ print $2 }' "$d/data/fingerprint")
stats=$d/data/stats/dirreq-stats
cons=/tor/status-vote/current/consensus

# --- 1. requests, counted and rounded --------------------------------------
get() { curl -sf --max-time 5 "http://127.0.0.1:$dport$1"; }
serves() { get "$cons" > "$d/cons" && head -1 "$d/cons" | grep -q '^network-status-version 3'; }
it_wait_until 120 serves || it_fail "p1's DirPort does not serve the consensus"
# The probes are counted too: let their interval end, so that the
# requests below are counted alone in the next one.
cat "$stats" > "$d/stats-probes" 2>/dev/null
rotated() { [ -s "$stats" ] && ! cmp -s "$stats" "$d/stats-probes"; }
it_wait_until 100 rotated ||
    it_fail "p1 wrote no stats file within 100 s: $(grep -i 'statistics' "$d/info.log" | tail -3)"
cp "$stats" "$d/stats-probes"
for _ in 1 2 3 4 5 6; do
    get "$cons" > /dev/null || it_fail "a DirPort consensus download failed"
done
for _ in 1 2; do
    "$CIRCTEST" --timeout 20 --handshake fast --get "$cons" --out "$d/tunneled" \
        "127.0.0.1:$port,$fp" > "$d/circtest.out" 2>&1 ||
        it_fail "a BEGIN_DIR consensus download failed: $(tail -n 3 "$d/circtest.out")"
    head -1 "$d/tunneled" | grep -q '^network-status-version 3' ||
        it_fail "the BEGIN_DIR download is not a consensus: $(head -c 200 "$d/tunneled")"
done
echo "$port" > "$d/orport"
it_pctor_node_line "$d" p1 >> "$net/nodes.txt"
auth=$(awk '$7 == "authority" { print $1; exit }' "$net/nodes.txt")
"$CIRCTEST" --timeout 30 --nodes "$net/nodes.txt" --get "$cons" --out "$d/anon" \
    "$auth" p1 > "$d/circtest2.out" 2>&1 ||
    it_fail "a BEGIN_DIR download over two hops failed: $(tail -n 3 "$d/circtest2.out")"
head -1 "$d/anon" | grep -q '^network-status-version 3' ||
    it_fail "the two-hop BEGIN_DIR download is not a consensus"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
    "http://127.0.0.1:$dport$cons-nosuchflavor")
[ "$code" = 404 ] || it_fail "a missing consensus flavor gave HTTP $code, not 404"
counted() { ! cmp -s "$stats" "$d/stats-probes" && grep -q '^dirreq-v3-reqs aq=' "$stats"; }
it_wait_until 100 counted ||
    it_fail "no new stats file with the requests: $(cat "$stats")"
cp "$stats" "$d/stats-1"
it_log "stats file: $(tr '\n' '|' < "$d/stats-1")"
for re in '^dirreq-stats-end [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \(30 s\)$' \
          '^dirreq-v3-ips aq=8$' '^dirreq-v3-reqs aq=8$' \
          '^dirreq-v3-resp served=16,ok=16,not-enough-sigs=0,unavailable=8,not-found=0,not-modified=0,busy=0$' \
          '^dirreq-v3-direct-dl complete=8,timeout=0,running=0$' \
          '^dirreq-v3-tunneled-dl complete=4,timeout=0,running=0$'; do
    grep -Eq "$re" "$d/stats-1" || it_fail "the stats file has no line matching $re: $(cat "$d/stats-1")"
done
[ "$(wc -l < "$d/stats-1")" -eq 6 ] || it_fail "the stats file has other lines: $(cat "$d/stats-1")"
it_log "p1 counted 6 direct, 2 tunneled and 1 anonymous tunneled downloads and 1 unavailable answer, rounded as tor"

# --- 2. the interval under way survives in the state file ------------------
get "$cons" > /dev/null || it_fail "a DirPort consensus download failed"
saved() { grep -qx 'DirReqStatsReqs aq=1' "$d/data/state"; }
it_wait_until 20 saved ||
    it_fail "the state file does not hold the request: $(grep DirReqStats "$d/data/state")"
stop_p1
saved || it_fail "after SIGTERM the state file lost the request: $(grep DirReqStats "$d/data/state")"
grep -q '^DirReqStatsStart [0-9]' "$d/data/state" ||
    it_fail "the state file has no DirReqStatsStart"
cmp -s "$stats" "$d/stats-1" ||
    it_fail "an interval ended between the checks; the test was too slow: $(cat "$stats")"
it_log "the state file keeps the interval under way: $(grep '^DirReqStats' "$d/data/state" | tr '\n' '|')"

# --- 3. published, and accepted by tor ---------------------------------------
write_torrc 1
start_p1
have_extra() {
    curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/extra/fp/$fp" > "$d/extra" &&
        [ -s "$d/extra" ]
}
it_wait_until 60 have_extra ||
    it_fail "the authority does not serve p1's extra-info: $(grep -i 'upload' "$d/info.log" | tail -3)"
grep '^dirreq-' "$d/extra" > "$d/extra-dirreq"
cmp -s "$d/extra-dirreq" "$d/stats-1" ||
    it_fail "the authority's extra-info does not carry the stats file's lines: $(cat "$d/extra-dirreq")"
it_log "the tor authority accepted p1's extra-info with its dirreq-* lines"
later() { ! cmp -s "$stats" "$d/stats-1"; }
it_wait_until 100 later || it_fail "no stats file after the restart"
grep -qx 'dirreq-v3-reqs aq=8' "$stats" ||
    it_fail "the interval after the restart lost the saved request: $(cat "$stats")"
it_log "the request saved before the restart is in the next interval: $(grep reqs "$stats")"
grep -E '\[(warn|err)\]' "$d/info.log" | grep -v 'ContactInfo\|GeoIP' &&
    it_fail "p1 logged warnings"
exit 0
