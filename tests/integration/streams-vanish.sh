#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# streams-vanish.sh -- a client that vanishes mid-download frees the
# circuit's memory (issue 4).
#
# A private network (1 tor authority, 3 tor relays) plus pctor relays p1,
# p2 and p3 (an exit for 127.0.0.1 only) and a pctor client c1 pinned to
# p1 -> p2 -> p3. curl downloads a large file through c1's SocksPort and
# is killed mid-download; then c1 itself is killed. p1, the guard, has a
# BandwidthRate, so the download is under way for a while. The relays
# report what they hold on SIGUSR1 (app_log_statistics: relayed circuits,
# exit streams and the bytes in their buffers, bytes in cell queues) and
# log each relayed circuit that closes, with its neighbours. Checks:
#   - while curl downloads, the exit has the stream open, with bytes in
#     its buffers;
#   - after curl is killed, the exit's stream is gone (no exit streams, no
#     bytes in their buffers) and the cell queues of p1, p2 and p3 are back
#     to (near) zero, with c1 still running;
#   - after c1 is killed (its link to p1 closes), its circuits are closed
#     on p1, p2 and p3 (followed through the close log lines, by the
#     neighbours' fingerprints; at the exit the download's circuit by its
#     number), and the queues stay empty;
#   - the relays logged no warnings.
# VANISH_TEST_MB sets the file size (default 64).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${VANISH_TEST_MB:-64}
# "Near zero": a few cells (514-byte cells, with queue overhead) may be in
# flight for other circuits at the moment of the snapshot.
NEAR_ZERO=${VANISH_NEAR_ZERO:-16384}

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/big"
head -c $((64 * 1024)) /dev/urandom > "$www/small"
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

# p1 is the bottleneck (BandwidthRate), so cells wait in its queues.
it_start_pctor "$net" p1 relay "BandwidthRate 512 KBytes
BandwidthBurst 512 KBytes"
it_start_pctor "$net" p2 relay ""
it_start_pctor "$net" p3 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"

# stats NICK: ask NICK for its statistics (SIGUSR1) and print
#   "CIRCUITS EXIT_STREAMS EXIT_BYTES QUEUE_BYTES"
# from the lines it logs.
stats() {
    local d log pid n0 line1 line2
    d=$(cat "$net/$1.dir")
    log=$d/info.log
    pid=$(cat "$d/pid")
    n0=$(grep -c 'exit streams holding' "$log")
    kill -USR1 "$pid" || it_fail "$1 is gone"
    _stats_more() { [ "$(grep -c 'exit streams holding' "$log")" -gt "$n0" ]; }
    it_wait_until 20 _stats_more || it_fail "$1 logged no statistics"
    line1=$(grep 'relayed circuits' "$log" | tail -1)
    line2=$(grep 'exit streams holding' "$log" | tail -1)
    echo "$(echo "$line1" | sed -E 's/.* ([0-9]+) relayed circuits.*/\1/') \
$(echo "$line2" | sed -E 's/.*Statistics: ([0-9]+) exit streams holding ([0-9]+) bytes in their buffers; ([0-9]+) bytes in cell queues.*/\1 \2 \3/')"
}

it_start_pctor "$net" c1 client "EntryNodes p1
MiddleNodes p2
ExitNodes p3"
socks=$(cat "$net/c1.port")
ready() {
    curl -sf --max-time 60 -x "socks5h://127.0.0.1:$socks" \
        "http://127.0.0.1:$hport/small" -o "$net/probe"
}
it_wait_until 120 ready || it_fail "c1 never carried a request"

# The download (p1 limits it to 512 KBytes/s).
curl -s --max-time 600 -x "socks5h://127.0.0.1:$socks" \
    "http://127.0.0.1:$hport/big" -o "$net/partial" &
curl_pid=$!
it_register_pid "$curl_pid"
got_some() { [ "$(stat -c %s "$net/partial" 2>/dev/null || echo 0)" -ge $((1024 * 1024)) ]; }
it_wait_until 60 got_some || it_fail "the download did not start"
# The exit holds the stream and, since p1 is slower than it, bytes in the
# stream's buffers (what MaxMemInQueues now counts).
holds() { read -r _ ns nb nq < <(stats p3); [ "$ns" -ge 1 ] && [ "$nb" -gt 0 ]; }
it_wait_until 20 holds || it_fail "p3 holds no stream data during the download: $(stats p3)"
it_log "during the download: p3 has $ns exit stream(s) holding $nb bytes, $nq bytes in cell queues"
for n in p1 p2; do
    read -r _ _ _ q < <(stats "$n")
    it_log "during the download: $n has $q bytes in cell queues"
done

kill -KILL "$curl_pid"
wait "$curl_pid" 2> /dev/null
size=$(stat -c %s "$net/partial")
[ "$size" -lt $((MB * 1024 * 1024)) ] || it_fail "the download finished before curl was killed"
it_log "curl killed after $size bytes"

# The stream ends at the exit, and nothing stays queued.
stream_gone() {
    local n s b q
    read -r _ s b q < <(stats p3)
    [ "$s" = 0 ] && [ "$b" = 0 ] && [ "$q" -le "$NEAR_ZERO" ]
}
it_wait_until 60 stream_gone || it_fail "p3 still holds the stream: $(stats p3)"
q_small() { local q; read -r _ _ _ q < <(stats "$1"); [ "$q" -le "$NEAR_ZERO" ]; }
for n in p1 p2; do
    it_wait_until 60 q_small "$n" || it_fail "$n still has queued cells: $(stats "$n")"
done
it_log "after curl vanished: the exit stream is closed and the queues are empty on p1, p2, p3"

# Now the client vanishes: its circuits close all along the path. Tor
# relays build circuits of their own through the pctor relays (testing
# circuits), so circuit counts say little; instead each relay logs every
# relayed circuit that closes with its neighbours ("Relayed circuit N
# closes: previous hop ..., next hop ..."): p1 must close the K circuits
# it had from c1 towards p2, p2 at least K from p1 towards p3, p3 at least
# K from p2, among them the download's circuit (by number).
fp() { awk -v n="$1" '$1 == n {print $4}' "$net/nodes.txt"; }
FP1=$(fp p1) FP2=$(fp p2) FP3=$(fp p3)
c1dir=$(cat "$net/c1.dir")
[ -s "$c1dir/data/fingerprint" ] || it_fail "c1 has no fingerprint file"
FPC=$(awk '{print $2}' "$c1dir/data/fingerprint")
log_of() { echo "$(cat "$net/$1.dir")/info.log"; }
gid=$(grep 'Exit stream .* on circuit .* connected' "$(log_of p3)" |
      tail -1 | sed -E 's/.*on circuit ([0-9]+) connected.*/\1/')
[ -n "$gid" ] || it_fail "p3 did not log the download's circuit"
declare -A mark
for n in p1 p2 p3; do mark[$n]=$(wc -l < "$(log_of "$n")"); done
c1pid=$(cat "$c1dir/pid")
kill -KILL "$c1pid"
wait "$c1pid" 2> /dev/null
closes() { # NICK FROM-FP TO-FP: closes logged since the kill
    tail -n +$((mark[$1] + 1)) "$(log_of "$1")" |
        grep -c "Relayed circuit [0-9]* closes: previous hop .*(\$$2), next hop .*(\$$3)"
}
at_least() { [ "$(closes "$1" "$2" "$3")" -ge "$4" ]; }
it_wait_until 60 at_least p1 "$FPC" "$FP2" 1 || it_fail "p1 closed no circuit from c1"
K=$(closes p1 "$FPC" "$FP2")
it_wait_until 60 at_least p2 "$FP1" "$FP3" "$K" ||
    it_fail "p2 closed $(closes p2 "$FP1" "$FP3") circuits from p1 to p3, expected $K"
gid_closed() {
    tail -n +$((mark[p3] + 1)) "$(log_of p3)" | grep -q "Relayed circuit $gid closes: previous hop .*(\$$FP2)"
}
it_wait_until 60 gid_closed || it_fail "p3 did not close the download's circuit $gid"
[ "$(tail -n +$((mark[p3] + 1)) "$(log_of p3)" | grep -c "Relayed circuit [0-9]* closes: previous hop .*(\$$FP2)")" -ge "$K" ] ||
    it_fail "p3 closed fewer than $K circuits from p2"
for n in p1 p2 p3; do
    it_wait_until 60 q_small "$n" || it_fail "$n still has queued cells: $(stats "$n")"
done
read -r _ s b _ < <(stats p3)
[ "$s" = 0 ] && [ "$b" = 0 ] || it_fail "p3 still has exit streams: $s ($b bytes)"
it_log "after c1 vanished: its $K circuit(s) closed on p1, p2 and p3 (the download's: $gid at the exit); queues empty"

for n in p1 p2 p3; do
    d=$(cat "$net/$n.dir")
    kill -0 "$(cat "$d/pid")" || it_fail "$n died"
    if grep -E '\[(warn|err)\]' "$d/info.log"; then it_fail "$n logged warnings"; fi
done
it_log "vanishing client checks passed"
