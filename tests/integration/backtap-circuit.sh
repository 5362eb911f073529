#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# backtap-circuit.sh -- circuits over BackTap (CircuitTransport backtap)
# between two pctor relays on their datagram links.
#
# Private network (1 tor 0.4.9 authority, 1 tor relay) plus pctor relays p1
# and p2 (an exit to 127.0.0.1), both with a DatagramPort and
# CircuitTransport backtap, and a web server. Checks:
#   - a first circuit p1 -> p2 goes over TLS (no datagram link yet) and
#     brings the datagram link up;
#   - then pctor-circtest downloads a file through the pinned path
#     p1 -> p2 -> web: p1 logs that the hop to p2 uses BackTap, the body's
#     sha256 is right, and the relays' own BackTap counters (SIGUSR1
#     statistics) show the cells crossed BackTap: p2 sent at least one cell
#     per 498 bytes of the file and p1 received and delivered them, ACK/FWD
#     feedback flowed both ways, nothing was dropped as malformed; p2's
#     MetricsPort shows the same (pctor_backtap_cells_sent_total) and the
#     datagram link layer's gauges and drop counters (pctor_dgram_*);
#   - a third pctor relay p3 (backtap): the download p1 -> p3 -> p2 crosses
#     two BackTap hops, p3 relaying every cell from one flow to the other,
#     no faster than p3's RelayBandwidthRate (1 MB/s) allows;
#   - a hop p1 -> relay1 (tor, no DatagramPort) uses TLS and says so, and
#     the circuit works;
#   - garbage BackTap records (pctor-dgramtest with its own relay keys
#     sends records of type 0x21/0x22 on an authenticated link) are dropped
#     and counted as malformed or unknown circuit; p1 keeps running;
#   - no warning in either log.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
DGRAMTEST=${top_builddir:?}/src/tools/dgramtest/pctor-dgramtest
MB=${BACKTAP_TEST_MB:-8}

it_net_start --authorities 1 --relays 1 --exit-relays 0

it_web_file "$MB"

# p3 relays under a bandwidth limit (step 3), which its datagram hops obey.
it_dgram_relays backtap "RelayBandwidthRate 1 MBytes
RelayBandwidthBurst 1 MBytes"
hop() { it_pctor_hop "$net" "$1"; }
grep -q "CircuitTransport backtap: hops to relays with a datagram link use BackTap" "$d1/info.log" ||
    it_fail "p1 does not run CircuitTransport backtap: $(grep -i -e backtap -e err "$d1/info.log" | tail -3)"

# stats NICK: the BackTap statistics line of a fresh SIGUSR1.
stats() { it_usr1_line "$net" "$1" "Statistics: BackTap:" "BackTap statistics"; }
# num_before LINE WORDS: the number just before WORDS.
num_before() { echo "$1" | grep -o "[0-9]* $2" | head -1 | cut -d' ' -f1; }

# 1. The first circuit p1 -> p2 brings the datagram link up.
it_dgram_link p1 p2
it_log "datagram link p1 -> p2 up"

# 2. The download over BackTap.
t0=$SECONDS
"$CIRCTEST" --timeout 180 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /file --out "$net/body" "$(hop p1)" "$(hop p2)" 2> "$net/get.err" ||
    it_fail "download p1 -> p2 failed: $(tail -5 "$net/get.err")"
got=$(sha256sum < "$net/body" | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "download over BackTap: sha256 mismatch"
it_log "$MB MiB through p1 -> p2 (BackTap hop), sha256 ok ($((SECONDS - t0)) s)"
grep -q "CircuitTransport: the hop to 127.0.0.1:$(cat "$net/p2.port") uses BackTap" "$d1/info.log" ||
    it_fail "p1 did not log the BackTap hop: $(grep 'CircuitTransport' "$d1/info.log" | tail -3)"
s1=$(stats p1)
s2=$(stats p2)
it_log "p1: $s1"
it_log "p2: $s2"
cells=$((MB * 1024 * 1024 / 498))
[ "$(num_before "$s1" "over BackTap")" -ge 1 ] || it_fail "p1 extended nothing over BackTap: $s1"
[ "$(num_before "$s2" "circuits from peers")" -ge 1 ] || it_fail "p2 took no BackTap circuit: $s2"
[ "$(num_before "$s2" "sent,")" -ge "$cells" ] ||
    it_fail "p2 sent fewer than $cells cells over BackTap: $s2"
[ "$(num_before "$s1" "delivered;")" -ge "$cells" ] ||
    it_fail "p1 delivered fewer than $cells BackTap cells: $s1"
# ACK/FWD feedback: p1 sends it for p2's cells, p2 receives it.
echo "$s1" | grep -Eq "feedback [1-9][0-9]* sent" || it_fail "p1 sent no feedback: $s1"
echo "$s2" | grep -Eq "feedback [0-9]+ sent, [1-9][0-9]* received" || it_fail "p2 received no feedback: $s2"
for s in "$s1" "$s2"; do
    [ "$(num_before "$s" "malformed")" = 0 ] || it_fail "malformed BackTap records between the relays: $s"
done
# The same counter on p2's MetricsPort.
m=$(curl -sf -m 5 "http://127.0.0.1:$mport/metrics") || it_fail "p2's MetricsPort did not answer"
msent=$(echo "$m" | awk '$1 == "pctor_backtap_cells_sent_total" {print $2}')
[ -n "$msent" ] && [ "$msent" -ge "$cells" ] ||
    it_fail "MetricsPort: pctor_backtap_cells_sent_total '$msent' < $cells"
echo "$m" | grep -q '^pctor_backtap_dropped_total{reason="malformed"} 0$' ||
    it_fail "MetricsPort: $(echo "$m" | grep pctor_backtap_dropped)"
# ... and the datagram link layer's.
mlinks=$(echo "$m" | awk '$1 == "pctor_dgram_links_up" {print $2}')
mbuf=$(echo "$m" | awk '$1 == "pctor_dgram_rcvbuf_bytes" {print $2}')
[ -n "$mlinks" ] && [ "$mlinks" -ge 1 ] && [ -n "$mbuf" ] && [ "$mbuf" -gt 0 ] ||
    it_fail "MetricsPort: pctor_dgram_links_up '$mlinks', pctor_dgram_rcvbuf_bytes '$mbuf'"
echo "$m" | grep -Eq '^pctor_dgram_dropped_total\{reason="receive_buffer_full"\} [0-9]+$' ||
    it_fail "MetricsPort: no pctor_dgram_dropped_total for a full receive buffer"
it_log "MetricsPort: pctor_backtap_cells_sent_total $msent"

# 3. Two BackTap hops in a row: p1 -> p3 -> p2, p3 forwards from one flow
# into the other (FWD towards p2 when the cell left on p1's flow).
it_dgram_link p1 p3
it_dgram_link p3 p2
t0=$SECONDS
"$CIRCTEST" --timeout 180 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /file --out "$net/body3" "$(hop p1)" "$(hop p3)" "$(hop p2)" 2> "$net/get3.err" ||
    it_fail "download p1 -> p3 -> p2 failed: $(tail -5 "$net/get3.err")"
got=$(sha256sum < "$net/body3" | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "download over two BackTap hops: sha256 mismatch"
s3=$(stats p3)
it_log "p3: $s3"
[ "$(num_before "$s3" "over BackTap")" -ge 1 ] && [ "$(num_before "$s3" "circuits from peers")" -ge 1 ] ||
    it_fail "p3 did not carry the circuit over BackTap on both sides: $s3"
[ "$(num_before "$s3" "delivered;")" -ge "$cells" ] && [ "$(num_before "$s3" "sent,")" -ge "$cells" ] ||
    it_fail "p3 did not relay $cells cells between its BackTap hops: $s3"
took=$((SECONDS - t0))
# RelayBandwidthRate 1 MBytes at p3: MB MiB take MB - 1 seconds beyond the
# burst (each way); allow for rounding.
[ "$took" -ge $((MB - 3)) ] ||
    it_fail "p3 relayed $MB MiB over its datagram hops in $took s, faster than its RelayBandwidthRate allows"
it_log "$MB MiB through p1 -> p3 -> p2 (two BackTap hops, 1 MB/s at p3), sha256 ok ($took s)"

# 4. A hop to a tor relay falls back to TLS.
it_dgram_tls_hop
it_log "hop p1 -> relay1 (tor) over TLS"

# 5. Garbage BackTap records on an authenticated link.
if "$DGRAMTEST" --help 2>&1 | grep -q -- "--record-type"; then
    before=$(stats p1)
    "$DGRAMTEST" --datadir "$net/dgt" --target "127.0.0.1:$u1" --expect-ed "$ed1" \
        --records 20 --record-type 0x21 --timeout 20 > "$net/dgt.out" 2> "$net/dgt.err" ||
        it_fail "pctor-dgramtest: $(tail -3 "$net/dgt.err")"
    "$DGRAMTEST" --datadir "$net/dgt" --target "127.0.0.1:$u1" --expect-ed "$ed1" \
        --records 20 --record-type 0x22 --timeout 20 >> "$net/dgt.out" 2>> "$net/dgt.err" ||
        it_fail "pctor-dgramtest: $(tail -3 "$net/dgt.err")"
    after=$(stats p1)
    m0=$(( $(num_before "$before" "malformed") + $(num_before "$before" "unknown circuit") ))
    m1=$(( $(num_before "$after" "malformed") + $(num_before "$after" "unknown circuit") ))
    [ $((m1 - m0)) -ge 40 ] || it_fail "garbage BackTap records not counted: $before / $after"
    it_log "40 garbage BackTap records dropped and counted ($m0 -> $m1)"
else
    it_log "pctor-dgramtest has no --record-type: garbage records not tested here"
fi

it_pctor_alive_quiet "$net" p1 p2 p3
it_log "ok"
exit 0
