#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dgram-link.sh -- datagram links (DatagramPort): DTLS 1.2 between pctor
# relays, authenticated with their Tor identities.
#
# Private network (1 tor 0.4.9 authority, 1 tor relay) plus pctor relays p1
# and p2 with a DatagramPort each (p1 with CircuitTransport pctcp, which is
# PerCircuitTCP 1). Checks:
#   - a circuit p1 -> p2 (pctor-circtest) makes p1 open a TLS link to p2;
#     both announce their DatagramPort on it, p1 opens a datagram link, and
#     both log it up with the other's identity authenticated and a first
#     PING/PONG round trip; SIGUSR1 statistics count the records;
#   - a circuit p1 -> relay1 (tor): tor ignores the announcement cell and
#     the circuit is built;
#   - pctor-dgramtest with its own relay keys: a link to p1 expecting p1's
#     identity comes up and its records arrive (p1 counts them as unknown
#     types); expecting p2's identity at p1's port is refused ("different
#     Ed25519 identity") and p1 keeps no link for it;
#   - a flood of garbage and cookie-less ClientHellos from 32 source ports
#     is answered with HelloVerifyRequests only: p1 allocates no link
#     (statistics: links, cookies sent, datagrams dropped), its link to p2
#     stays up;
#   - SIGHUP with a new DatagramLinkIdleTimeout keeps the link; SIGHUP with
#     CircuitTransport dtls-tcp is taken in a build with lwIP, refused ("not
#     supported in this build") without, and the relay keeps running; no
#     other warning in either log.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
DGRAMTEST=${top_builddir:?}/src/tools/dgramtest/pctor-dgramtest
FLOOD=${DGRAM_TEST_FLOOD:-2000}

it_net_start --authorities 1 --relays 1 --exit-relays 0

# A UDP port per relay: a reserved node's port number (free for TCP on
# 127.0.0.1 and not used for UDP by anything the network starts).
udp_port() { local _n p _r; read -r _n p _r < <(it_privnet reserve "$net" --role udp); echo "$p"; }
u1=$(udp_port)
u2=$(udp_port)
it_start_pctor "$net" p1 relay "PublishServerDescriptor 0
CircuitTransport pctcp
DatagramPort 127.0.0.1:$u1"
it_start_pctor "$net" p2 relay "PublishServerDescriptor 0
DatagramPort 127.0.0.1:$u2"
hop() { it_pctor_hop "$net" "$1"; }
d1=$(cat "$net/p1.dir")
d2=$(cat "$net/p2.dir")
ed1=$(awk '{print $2}' "$d1/data/fingerprint-ed25519")
ed2=$(awk '{print $2}' "$d2/data/fingerprint-ed25519")
grep -q "PerCircuitTCP: each circuit to another relay gets its own connection" "$d1/info.log" ||
    it_fail "CircuitTransport pctcp did not turn PerCircuitTCP on"
for n in 1 2; do
    d=$(cat "$net/p$n.dir")
    port=$([ $n = 1 ] && echo "$u1" || echo "$u2")
    grep -q "Opened DatagramPort on UDP 127.0.0.1:$port" "$d/info.log" ||
        it_fail "p$n did not open its DatagramPort"
done

# stats NICK: the datagram statistics line of a fresh SIGUSR1.
stats() { it_usr1_line "$net" "$1" "Statistics: datagram links" "datagram statistics"; }
# stats_has NICK REGEX: a fresh statistics line of NICK matches REGEX.
stats_has() { stats "$1" | grep -Eq "$2"; }
# field LINE WORDS...: the number before WORDS in a statistics line.
field() { echo "$1" | grep -o "[0-9]* $2" | head -1 | cut -d' ' -f1; }
# num_after LINE WORD: the number after WORD.
num_after() { echo "$1" | grep -o "$2 [0-9]*" | head -1 | awk '{print $NF}'; }

# 1. A circuit p1 -> p2 brings up the datagram link p1 -> p2.
"$CIRCTEST" --timeout 60 --nodes "$nodes" "$(hop p1)" "$(hop p2)" > "$net/circ12.out" 2>&1 ||
    it_fail "circuit p1 -> p2 failed: $(tail -3 "$net/circ12.out")"
short() { echo "$1" | base64 -d 2> /dev/null | od -An -tx1 -N8 | tr -d ' \n'; }
it_wait_until 30 grep -q "Datagram link 127.0.0.1:$u2 (we opened, ed25519 $(short "$ed2")...) is up: DTLSv1.2" "$d1/info.log" ||
    it_fail "p1 did not bring up a datagram link to p2: $(grep -i datagram "$d1/info.log" | tail -3)"
it_wait_until 30 grep -q "Datagram link 127.0.0.1:$u1 (peer opened, ed25519 $(short "$ed1")...) is up" "$d2/info.log" ||
    it_fail "p2 did not authenticate p1's datagram link: $(grep -i datagram "$d2/info.log" | tail -3)"
for n in 1 2; do
    d=$(cat "$net/p$n.dir")
    it_wait_until 10 grep -q "first round trip" "$d/info.log" ||
        it_fail "p$n: no PING/PONG round trip on the link"
done
s1=$(stats p1)
s2=$(stats p2)
it_log "p1: $s1"
[ "$(field "$s1" "up")" = 1 ] || it_fail "p1 does not have 1 link up: $s1"
[ "$(field "$s2" "up")" = 1 ] || it_fail "p2 does not have 1 link up: $s2"
[ "$(num_after "$s1" "authenticated")" = 1 ] || it_fail "p1: $s1"
[ "$(num_after "$s2" "accepted")" = 1 ] || it_fail "p2 accepted no session: $s2"
# CERTS, AUTH_OK, PING, PONG at least, each way
[ "$(field "$s1" "in,")" -ge 4 ] && [ "$(field "$s2" "in,")" -ge 4 ] ||
    it_fail "too few records exchanged: p1: $s1 / p2: $s2"
it_log "link p1 -> p2 up and authenticated both ways"

# 2. tor ignores the announcement: a circuit p1 -> relay1 works.
"$CIRCTEST" --timeout 60 --nodes "$nodes" "$(hop p1)" relay1 > "$net/circ1r.out" 2>&1 ||
    it_fail "circuit p1 -> relay1 (tor) failed: $(tail -3 "$net/circ1r.out")"
it_log "tor relay accepted a link with the announcement"

# 3. An outside peer with its own relay keys.
out=$("$DGRAMTEST" --datadir "$net/dgt" --target "127.0.0.1:$u1" \
    --expect-ed "$ed1" --records 5 --timeout 20 2> "$net/dgt.err") ||
    it_fail "link to p1 with p1's identity failed: $out $(tail -3 "$net/dgt.err")"
echo "$out" | grep -q "^up rtt_ms=" || it_fail "pctor-dgramtest: $out"
it_wait_until 10 stats_has p1 '([5-9]|[1-9][0-9]+) unknown types' ||
    it_fail "p1 did not count the 5 records: $(stats p1)"
it_log "outside peer: $out; p1 received its records"

out=$("$DGRAMTEST" --datadir "$net/dgt" --target "127.0.0.1:$u1" \
    --expect-ed "$ed2" --timeout 20 2> "$net/dgt2.err") &&
    it_fail "a link expecting p2's identity at p1's port came up: $out"
echo "$out" | grep -q "refused: peer has a different Ed25519 identity than we expected" ||
    it_fail "wrong identity not refused as such: $out $(tail -3 "$net/dgt2.err")"
it_log "wrong identity: $out"
# p1 drops the refused session (the tool told it, or the handshake times out)
it_wait_until 30 stats_has p1 'links: 1 \(1 up\)' ||
    it_fail "p1 kept state for the refused session: $(stats p1)"

# 4. The flood: no state.
before=$(stats p1)
out=$("$DGRAMTEST" --flood "$FLOOD" --sources 32 --datadir "$net/dgt" \
    --target "127.0.0.1:$u1" 2> "$net/flood.err") ||
    it_fail "flood failed: $(tail -3 "$net/flood.err")"
it_log "$out"
after=$(stats p1)
it_log "p1 after the flood: $after"
echo "$after" | grep -q "links: 1 (1 up)" || it_fail "p1 has state after the flood: $after"
hv0=$(field "$before" "cookies sent")
hv1=$(field "$after" "cookies sent")
dr0=$(field "$before" "datagrams without a link dropped")
dr1=$(field "$after" "datagrams without a link dropped")
acc0=$(num_after "$before" "accepted")
acc1=$(num_after "$after" "accepted")
hvr=$(echo "$out" | sed -n 's/.*hvr=\([0-9]*\).*/\1/p')
[ "$acc1" = "$acc0" ] || it_fail "p1 accepted sessions during the flood: $before / $after"
os0=$(field "$before" "oversize")
os1=$(field "$after" "oversize")
# UDP: the kernel may drop part of the burst before p1 reads it (more so on
# a loaded machine or a sanitizer build); what p1 read must be accounted
# for, and it must have read a good part of it.
[ $((hv1 - hv0)) -ge $((FLOOD / 2)) ] ||
    it_fail "p1 answered only $((hv1 - hv0)) of $FLOOD ClientHellos with a cookie"
[ $((dr1 - dr0 + os1 - os0)) -ge $((FLOOD / 2)) ] ||
    it_fail "p1 dropped only $((dr1 - dr0 + os1 - os0)) of $FLOOD garbage datagrams"
[ "$hvr" -le $((hv1 - hv0)) ] && [ "$hvr" -ge $((FLOOD / 2)) ] ||
    it_fail "$hvr HelloVerifyRequests came back for $((hv1 - hv0)) sent"
# the link to p2 survived
grep -q "Datagram link 127.0.0.1:$u2 .* closed" "$d1/info.log" &&
    it_fail "p1's link to p2 closed: $(grep 'Datagram link' "$d1/info.log" | tail -2)"
rss=$(awk '/VmRSS/ {print $2}' "/proc/$(cat "$d1/pid")/status")
it_log "flood: $((hv1 - hv0)) cookies, $((dr1 - dr0 + os1 - os0)) dropped, no link; p1 RSS ${rss} kB"

# 5. SIGHUP: a new idle timeout is taken and the link stays; asking p2 for
# TCP-over-DTLS is taken with lwIP, refused without, and p2 keeps running.
echo "DatagramLinkIdleTimeout 5 minutes" >> "$d1/torrc"
kill -HUP "$(cat "$d1/pid")"
echo "CircuitTransport dtls-tcp" >> "$d2/torrc"
n_hup=$(grep -c "Configuration reloaded" "$d2/info.log")
kill -HUP "$(cat "$d2/pid")"
if grep -q "define HAVE_LWIP 1" "${top_builddir:?}/config.h"; then
    hup_done() { [ "$(grep -c "Configuration reloaded" "$d2/info.log")" -gt "$n_hup" ]; }
    it_wait_until 10 hup_done || it_fail "p2 did not reload"
    sleep 1
    grep -q "not supported" "$d2/info.log" && it_fail "p2 refused CircuitTransport dtls-tcp on SIGHUP"
    hup_what="CircuitTransport dtls-tcp taken"
else
    it_wait_until 10 grep -q "'dtls-tcp' is not supported in this build" "$d2/info.log" ||
        it_fail "p2 did not refuse CircuitTransport dtls-tcp on SIGHUP"
    hup_what="CircuitTransport dtls-tcp refused: $(grep -o "'dtls-tcp' is not supported in this build[^.]*" "$d2/info.log" | head -1)"
fi
sleep 1
kill -0 "$(cat "$d2/pid")" || it_fail "p2 exited after SIGHUP"
stats_has p1 'links: 1 \(1 up\)' || it_fail "p1's link did not survive SIGHUP: $(stats p1)"
if grep -E '\[(warn|err)\]' "$d2/info.log" | grep -v -e "not supported in this build" -e "Reloading the configuration failed; keeping the old one"; then
    it_fail "p2 logged other warnings"
fi
it_log "SIGHUP: link kept; $hup_what"

it_pctor_alive_quiet "$net" p1
echo "PASS: $IT_NAME"
