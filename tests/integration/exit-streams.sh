#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# exit-streams.sh -- pctor as an exit, with real tor relays around it.
#
# A private network (1 tor authority, 3 tor relays) plus three pctor relays,
# the third an exit whose policy accepts only 127.0.0.1. A local HTTP server
# serves a random file; pctor's client (pctor-circtest --begin) downloads it
# through
#   (a) pctor -> pctor -> pctor exit,
#   (b) tor -> pctor -> pctor exit, and pctor -> tor -> pctor exit,
#       and tor -> tor -> pctor exit,
# and the sha256 of every body must match. Then the refusals: a destination
# the policy rejects (END reason 4, EXITPOLICY), a port where nothing
# listens (END reason 3, CONNECTREFUSED), and a stream opened on a one-hop
# circuit from a client (END reason 13: the previous hop is not a relay).
# RefuseUnknownExits: p5, an exit with RefuseUnknownExits 1, refuses a
# stream whose previous hop is p6, a relay that never publishes its
# descriptor and so is not in p5's consensus (END reason 1, MISC, as tor),
# and serves one whose previous hop is a tor relay the consensus lists.
# (p3 runs with RefuseUnknownExits 0: the pctor relays of this test are
# used before the consensus lists them.) BandwidthRate on an exit: 8 MiB
# through p7, an exit limited to 1 MByte/s, takes about 7 s.
# The file is 50 MiB as the streams issue asks; EXIT_TEST_MB overrides.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
MB=${EXIT_TEST_MB:-50}

it_net_start --authorities 1 --relays 3 --exit-relays 0

# The web server and its file.
it_web_file "$MB"

# Three pctor relays; p3 is the exit.
it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay ""
EXIT_LINES="ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_start_pctor "$net" p3 relay "$EXIT_LINES
RefuseUnknownExits 0"
it_start_pctor "$net" p4 relay "BandwidthRate 2 MBytes
BandwidthBurst 2 MBytes"
it_start_pctor "$net" p5 relay "$EXIT_LINES
RefuseUnknownExits 1"
it_start_pctor "$net" p6 relay "PublishServerDescriptor 0"
it_start_pctor "$net" p7 relay "$EXIT_LINES
RefuseUnknownExits 0
BandwidthRate 1 MBytes
BandwidthBurst 1 MBytes"
P1=$(it_pctor_hop "$net" p1) P2=$(it_pctor_hop "$net" p2) P3=$(it_pctor_hop "$net" p3)
P4=$(it_pctor_hop "$net" p4) P5=$(it_pctor_hop "$net" p5) P6=$(it_pctor_hop "$net" p6)
P7=$(it_pctor_hop "$net" p7)

has_own_desc() {
    local dirport
    dirport=$(awk -v n="$1" '$1 == n {print $3}' "$nodes")
    curl -sf -m 2 "http://127.0.0.1:$dirport/tor/server/authority" | grep -q "^router $1 "
}
for r in relay1 relay2; do
    it_wait_until 60 has_own_desc "$r" || it_fail "$r never built its descriptor"
done

# The descriptor advertises the bandwidth tor would compute: p4's
# BandwidthRate 2 MBytes (it always said 1 GB), and p7's 1 MBytes.
adv_bw() { # NICK: "RATE BURST" from NICK's descriptor at an authority
    local dirport
    dirport=$(awk '$7 == "authority" {print $3; exit}' "$nodes")
    curl -sf -m 5 "http://127.0.0.1:$dirport/tor/server/all" |
        awk -v n="$1" '$1 == "router" {on = ($2 == n)}
                       on && $1 == "bandwidth" {print $2, $3; exit}'
}
adv_bw_is() { [ "$(adv_bw "$1")" = "$2" ]; }
it_wait_until 60 adv_bw_is p4 "2097152 2097152" ||
    it_fail "p4 advertises '$(adv_bw p4)', not its BandwidthRate 2097152"
[ "$(adv_bw p7)" = "1048576 1048576" ] ||
    it_fail "p7 advertises '$(adv_bw p7)', not its BandwidthRate 1048576"
it_log "descriptors advertise BandwidthRate (p4: $(adv_bw p4))"

fetch() { # NAME HOP...
    local name=$1 out=$net/body-$1
    shift
    local t0=$SECONDS
    "$CIRCTEST" --timeout 120 --nodes "$nodes" --begin "127.0.0.1:$hport" \
        --get /file --out "$out" "$@" 2> "$net/$name.err" ||
        it_fail "download $name failed: $(cat "$net/$name.err")"
    local got
    got=$(sha256sum < "$out" | cut -d' ' -f1)
    [ "$got" = "$want" ] || it_fail "download $name: sha256 mismatch"
    it_log "$name: $MB MiB, sha256 ok ($((SECONDS - t0)) s)"
    rm -f "$out"
}
fetch pctor-pctor-pctor "$P1" "$P2" "$P3"
fetch tor-pctor-pctor relay1 "$P2" "$P3"
fetch pctor-tor-pctor "$P1" relay2 "$P3"
fetch tor-tor-pctor relay1 relay2 "$P3"

# BandwidthRate: 8 MiB through a middle limited to 2 MBytes/s (burst 2 MB)
# takes about (8 - 2) / 2 = 3 s; allow 2.4 s to 15 s.
head -c $((8 * 1024 * 1024)) /dev/urandom > "$www/limited"
t0=$(date +%s%N)
"$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /limited --out "$net/limited" "$P1" "$P4" "$P3" 2> "$net/limited.err" ||
    it_fail "download through the rate-limited relay failed: $(cat "$net/limited.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
cmp -s "$net/limited" "$www/limited" || it_fail "rate-limited download differs"
[ "$ms" -ge 2400 ] && [ "$ms" -le 15000 ] ||
    it_fail "8 MiB through BandwidthRate 2 MBytes took $ms ms"
it_log "BandwidthRate 2 MBytes: 8 MiB took $ms ms ($((8 * 1024 * 1000 / ms)) KiB/s)"

expect_refusal() { # NAME REASON BEGIN-TARGET HOP...
    local name=$1 reason=$2 target=$3
    shift 3
    if "$CIRCTEST" --timeout 30 --nodes "$nodes" --begin "$target" \
            --get / "$@" 2> "$net/$name.err"; then
        it_fail "$name: the stream was not refused"
    fi
    grep -q "stream refused (END reason $reason)" "$net/$name.err" ||
        it_fail "$name: expected END reason $reason, got: $(cat "$net/$name.err")"
    it_log "$name: refused with END reason $reason"
}
expect_refusal policy 4 127.0.0.2:80 "$P1" "$P2" "$P3"
unused=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_refusal connect-refused 3 "127.0.0.1:$unused" "$P1" "$P2" "$P3"
expect_refusal one-hop 13 "127.0.0.1:$hport" "$P3"

# RefuseUnknownExits 1, once p5 has a consensus.
d5=$(cat "$net/p5.dir")
it_wait_until 60 grep -q 'Accepted a .* consensus' "$d5/info.log" ||
    it_fail "p5 never got a consensus"
expect_refusal unknown-previous-hop 1 "127.0.0.1:$hport" "$P6" "$P5"
grep -q 'not a relay in the consensus (RefuseUnknownExits)' "$d5/info.log" ||
    it_fail "p5 did not log the RefuseUnknownExits refusal"
# p5's first consensus may predate relay1's listing; it fetches newer ones
# every voting interval, so allow it a minute to learn relay1.
known_ok() {
    "$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "127.0.0.1:$hport" \
        --get /limited --out "$net/known" relay1 "$P5" 2> "$net/known.err"
}
it_wait_until 60 known_ok ||
    it_fail "p5 refused a stream from a listed relay: $(cat "$net/known.err")"
cmp -s "$net/known" "$www/limited" || it_fail "download through p5 differs"
it_log "RefuseUnknownExits 1: refused after an unlisted relay, served after a listed one"

# BandwidthRate on the exit: 8 MiB at 1 MByte/s (burst 1 MByte) takes
# about 7 s; allow 5.5 s to 30 s.
t0=$(date +%s%N)
"$CIRCTEST" --timeout 90 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /limited --out "$net/exit-limited" "$P1" "$P2" "$P7" 2> "$net/exit-limited.err" ||
    it_fail "download through the rate-limited exit failed: $(cat "$net/exit-limited.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
cmp -s "$net/exit-limited" "$www/limited" || it_fail "download through the rate-limited exit differs"
[ "$ms" -ge 5500 ] && [ "$ms" -le 30000 ] ||
    it_fail "8 MiB through an exit with BandwidthRate 1 MBytes took $ms ms"
it_log "exit with BandwidthRate 1 MBytes: 8 MiB took $ms ms ($((8 * 1024 * 1000 / ms)) KiB/s)"

d3=$(cat "$net/p3.dir")
grep -q 'Exit policy rejects 127.0.0.2:80' "$d3/info.log" || it_fail "no policy log line"
for n in p1 p2 p3 p4 p5 p6 p7; do
    d=$(cat "$net/$n.dir")
    kill -0 "$(cat "$d/pid")" || it_fail "$n died"
    if grep -E '\[(warn|err)\]' "$d/info.log"; then it_fail "$n logged warnings"; fi
done
it_log "exit stream checks passed"
