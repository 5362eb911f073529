#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dtls-tcp-circuit.sh -- circuits over TCP-over-DTLS (CircuitTransport
# dtls-tcp) between pctor relays on their datagram links: a user-level TCP
# connection (lwIP) per circuit hop, its segments inside the DTLS session.
#
# Private network (1 tor 0.4.9 authority, 1 tor relay) plus pctor relays p1,
# p3 and p2 (an exit to 127.0.0.1), all with a DatagramPort and
# CircuitTransport dtls-tcp, and a web server. Checks:
#   - a first circuit p1 -> p2 goes over TLS (no datagram link yet) and
#     brings the datagram link up;
#   - then pctor-circtest downloads a file through p1 -> p2 -> web: p1 logs
#     that the hop to p2 uses TCP-over-DTLS, the body's sha256 is right,
#     and the relays' TCP-over-DTLS counters (SIGUSR1 statistics) show that
#     the cells crossed it: p2 sent at least one cell per 498 bytes of the
#     file and p1 received as many, TCP segments flowed both ways (data one
#     way, ACKs the other), nothing malformed, no connection failed; p2's
#     MetricsPort shows the same (pctor_dtcp_cells_sent_total);
#   - a download stopped after 2 MB (the circuit is torn down while p2's
#     connection still has cells queued): both relays drop the hop (0 hops
#     afterwards), keep their link, and log no warning;
#   - p1 -> p3 -> p2: two TCP-over-DTLS hops, p3 relaying every cell from
#     one connection into the other (its receive windows reopen only as
#     cells leave it), no faster than p3's RelayBandwidthRate (1 MB/s);
#   - a hop p1 -> relay1 (tor, no DatagramPort) uses TLS and says so, and
#     the circuit works;
#   - garbage TCP segment records (pctor-dgramtest on an authenticated
#     link, record type 0x30) are dropped and counted; p1 keeps running;
#   - no warning in any log.
# Skipped in a build without lwIP (dtls-tcp is refused there; check_options
# tests the refusal).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
DGRAMTEST=${top_builddir:?}/src/tools/dgramtest/pctor-dgramtest
MB=${DTLS_TCP_TEST_MB:-8}
grep -q "define HAVE_LWIP 1" "${top_builddir:?}/config.h" ||
    it_skip "built without lwIP: CircuitTransport dtls-tcp is not supported in this build"

it_net_start --authorities 1 --relays 1 --exit-relays 0
it_web_file "$MB"

# p3 relays under a bandwidth limit (step 3), which its datagram hops obey.
it_dgram_relays dtls-tcp "RelayBandwidthRate 1 MBytes
RelayBandwidthBurst 1 MBytes"
hop() { it_pctor_hop "$net" "$1"; }
grep -q "CircuitTransport dtls-tcp: hops to relays with a datagram link use TCP-over-DTLS (lwIP" "$d1/info.log" ||
    it_fail "p1 does not run CircuitTransport dtls-tcp: $(grep -i -e dtls -e err "$d1/info.log" | tail -3)"

# stats NICK: the TCP-over-DTLS statistics line of a fresh SIGUSR1.
stats() { it_usr1_line "$net" "$1" "Statistics: TCP-over-DTLS:" "TCP-over-DTLS statistics"; }
# num_before LINE WORDS: the number just before WORDS.
num_before() { echo "$1" | grep -o "[0-9]* $2" | head -1 | cut -d' ' -f1; }

# 1. The first circuit p1 -> p2 brings the datagram link up.
it_dgram_link p1 p2
it_log "datagram link p1 -> p2 up"

# 2. The download over TCP-over-DTLS.
t0=$SECONDS
"$CIRCTEST" --timeout 180 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /file --out "$net/body" "$(hop p1)" "$(hop p2)" 2> "$net/get.err" ||
    it_fail "download p1 -> p2 failed: $(tail -5 "$net/get.err")"
got=$(sha256sum < "$net/body" | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "download over TCP-over-DTLS: sha256 mismatch"
it_log "$MB MiB through p1 -> p2 (TCP-over-DTLS hop), sha256 ok ($((SECONDS - t0)) s)"
grep -q "CircuitTransport: the hop to 127.0.0.1:$(cat "$net/p2.port") uses TCP-over-DTLS" "$d1/info.log" ||
    it_fail "p1 did not log the TCP-over-DTLS hop: $(grep 'CircuitTransport' "$d1/info.log" | tail -3)"
s1=$(stats p1)
s2=$(stats p2)
it_log "p1: $s1"
it_log "p2: $s2"
cells=$((MB * 1024 * 1024 / 498))
[ "$(num_before "$s1" "over TCP-over-DTLS")" -ge 1 ] || it_fail "p1 extended nothing over TCP-over-DTLS: $s1"
[ "$(num_before "$s2" "hops from peers")" -ge 1 ] || it_fail "p2 took no TCP-over-DTLS hop: $s2"
[ "$(num_before "$s2" "sent,")" -ge "$cells" ] ||
    it_fail "p2 sent fewer than $cells cells over TCP-over-DTLS: $s2"
[ "$(num_before "$s1" "received;")" -ge "$cells" ] ||
    it_fail "p1 received fewer than $cells TCP-over-DTLS cells: $s1"
# Segments: p2 sent the data (a full segment holds 1126 bytes, 2.2 cells),
# p1 the ACKs.
[ "$(num_before "$s2" "out,")" -ge $((cells / 3)) ] || it_fail "p2 sent too few TCP segments: $s2"
[ "$(num_before "$s1" "out,")" -ge 1 ] && [ "$(num_before "$s2" "in,")" -ge 1 ] ||
    it_fail "no ACK segments from p1 to p2: $s1 / $s2"
# The exit's hop writes a multi-MiB download into lwIP's 64 KiB send
# buffer: it finds it full and waits (counted; doc/dgram.md).
[ "$(num_before "$s2" "times,")" -ge 1 ] || it_fail "p2's send buffer was never full: $s2"
echo "$s2" | grep -q "[0-9]* segments retransmitted ([0-9]* timeouts, [0-9]* fast retransmits)" ||
    it_fail "no retransmission counters: $s2"
for s in "$s1" "$s2"; do
    [ "$(num_before "$s" "malformed")" = 0 ] || it_fail "malformed TCP segments between the relays: $s"
    [ "$(num_before "$s" "connections failed")" = 0 ] || it_fail "a TCP-over-DTLS connection failed: $s"
done
# The same counters on p2's MetricsPort.
m=$(curl -sf -m 5 "http://127.0.0.1:$mport/metrics") || it_fail "p2's MetricsPort did not answer"
msent=$(echo "$m" | awk '$1 == "pctor_dtcp_cells_sent_total" {print $2}')
[ -n "$msent" ] && [ "$msent" -ge "$cells" ] ||
    it_fail "MetricsPort: pctor_dtcp_cells_sent_total '$msent' < $cells"
echo "$m" | grep -q '^pctor_dtcp_dropped_total{reason="malformed"} 0$' ||
    it_fail "MetricsPort: $(echo "$m" | grep pctor_dtcp_dropped)"
mfull=$(echo "$m" | awk '$1 == "pctor_dtcp_sndbuf_full_total" {print $2}')
[ -n "$mfull" ] && [ "$mfull" -ge 1 ] ||
    it_fail "MetricsPort: pctor_dtcp_sndbuf_full_total '$mfull' < 1"
echo "$m" | grep -q '^pctor_dtcp_retransmits_total{kind="timeout"} [0-9]*$' ||
    it_fail "MetricsPort: $(echo "$m" | grep pctor_dtcp_retransmits)"
it_log "MetricsPort: pctor_dtcp_cells_sent_total $msent, pctor_dtcp_sndbuf_full_total $mfull"

# 2b. A circuit torn down in the middle of a download.
"$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "127.0.0.1:$hport" --max-bytes 2000000 \
    --get /file --out "$net/body-cut" "$(hop p1)" "$(hop p2)" 2> "$net/get-cut.err" &&
    it_fail "the download was not cut"
grep -q "response too large" "$net/get-cut.err" ||
    it_fail "the download did not stop at 2 MB: $(tail -3 "$net/get-cut.err")"
no_hops() { stats "$1" | grep -q " 0 circuit hops;"; }
it_wait_until 20 no_hops p1 || it_fail "p1 kept a TCP-over-DTLS hop after the cut: $(stats p1)"
it_wait_until 20 no_hops p2 || it_fail "p2 kept a TCP-over-DTLS hop after the cut: $(stats p2)"
stats p1 | grep -q "TCP-over-DTLS: 1 links" || it_fail "p1 lost its link after the cut: $(stats p1)"
it_log "download cut after 2 MB: no hop left on p1 or p2, link kept"

# 3. Two TCP-over-DTLS hops in a row: p1 -> p3 -> p2.
it_dgram_link p1 p3
it_dgram_link p3 p2
t0=$SECONDS
"$CIRCTEST" --timeout 180 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /file --out "$net/body3" "$(hop p1)" "$(hop p3)" "$(hop p2)" 2> "$net/get3.err" ||
    it_fail "download p1 -> p3 -> p2 failed: $(tail -5 "$net/get3.err")"
got=$(sha256sum < "$net/body3" | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "download over two TCP-over-DTLS hops: sha256 mismatch"
s3=$(stats p3)
it_log "p3: $s3"
[ "$(num_before "$s3" "over TCP-over-DTLS")" -ge 1 ] && [ "$(num_before "$s3" "hops from peers")" -ge 1 ] ||
    it_fail "p3 did not carry the circuit over TCP-over-DTLS on both sides: $s3"
[ "$(num_before "$s3" "received;")" -ge "$cells" ] && [ "$(num_before "$s3" "sent,")" -ge "$cells" ] ||
    it_fail "p3 did not relay $cells cells between its TCP-over-DTLS hops: $s3"
took=$((SECONDS - t0))
# RelayBandwidthRate 1 MBytes at p3: MB MiB take MB - 1 seconds beyond the
# burst (each way); allow for rounding.
[ "$took" -ge $((MB - 3)) ] ||
    it_fail "p3 relayed $MB MiB over its datagram hops in $took s, faster than its RelayBandwidthRate allows"
it_log "$MB MiB through p1 -> p3 -> p2 (two TCP-over-DTLS hops, 1 MB/s at p3), sha256 ok ($took s)"

# 4. A hop to a tor relay falls back to TLS.
it_dgram_tls_hop
it_log "hop p1 -> relay1 (tor) over TLS"

# 5. Garbage TCP segment records on an authenticated link.
before=$(stats p1)
"$DGRAMTEST" --datadir "$net/dgt" --target "127.0.0.1:$u1" --expect-ed "$ed1" \
    --records 20 --record-type 0x30 --timeout 20 > "$net/dgt.out" 2> "$net/dgt.err" ||
    it_fail "pctor-dgramtest: $(tail -3 "$net/dgt.err")"
it_wait_until 10 true
after=$(stats p1)
m0=$(num_before "$before" "malformed")
m1=$(num_before "$after" "malformed")
[ $((m1 - m0)) -ge 20 ] || it_fail "garbage TCP segments not counted: $before / $after"
it_log "20 garbage TCP segment records dropped and counted ($m0 -> $m1)"

it_pctor_alive_quiet "$net" p1 p2 p3
it_log "ok"
exit 0
