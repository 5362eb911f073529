#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# client-stream-timeout.sh -- a stream whose BEGIN goes unanswered is
# retried on another circuit (CircuitStreamTimeout, as tor), and fails
# once it has waited SocksTimeout.
#
# A private network (1 tor authority, 3 tor relays) plus pctor relays p1,
# p2 and p3 (an exit for 127.0.0.1 only) and a pctor client c1 pinned to
# p1 -> p2 -> p3 with CircuitStreamTimeout 3 seconds and SocksTimeout 12
# seconds. The destination is a "black hole": a listener on 127.0.0.1
# whose accept queue is full and never drained, so the exit's SYNs are
# dropped and its connect never completes (no CONNECTED, no END). Checks:
#   - after 3 s the client ends the stream there and retries it on another
#     circuit, several times, each on a circuit it had not tried;
#   - the SOCKS request fails after about SocksTimeout (12 s) with reply 6
#     (TTL expired) and a notice naming SocksTimeout, not at curl's limit;
#   - a download from a live server afterwards works, and not on a
#     circuit the timed-out stream had left (they take no new streams).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((512 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

# The black hole: backlog 0 lets one connection wait in the accept queue;
# with that one made and never accepted, later SYNs are dropped.
read -r _ bport _ _ < <(it_privnet reserve "$net" --role web --nickname hole)
python3 -c '
import socket, sys, time
port = int(sys.argv[1])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port)); l.listen(0)
filler = socket.create_connection(("127.0.0.1", port))
print("ready", flush=True)
time.sleep(3600)
' "$bport" > "$net/hole.out" 2>&1 &
it_register_pid $!
it_wait_until 10 grep -q ready "$net/hole.out" || it_fail "the black hole did not start"
if timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$bport" 2>/dev/null; then
    it_fail "a connection to the black hole completed; the test needs its SYNs dropped"
fi
it_log "black hole on 127.0.0.1:$bport drops SYNs"

it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay ""
it_start_pctor "$net" p3 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"

it_start_pctor "$net" c1 client "EntryNodes p1
MiddleNodes p2
ExitNodes p3
CircuitStreamTimeout 3 seconds
SocksTimeout 12 seconds"
d=$(cat "$net/c1.dir") socks=$(cat "$net/c1.port")
log=$d/info.log
it_wait_until 120 grep -q 'Preemptive circuit for port 80 is ready' "$log" ||
    it_fail "c1 built no circuit: $(grep -i circuit "$log" | tail -5)"

t0=$SECONDS
crc=0
curl -sS --max-time 60 --socks5-hostname "127.0.0.1:$socks" --proxy-user hole:x \
    "http://127.0.0.1:$bport/" -o /dev/null 2> "$net/curl.err" || crc=$?
took=$((SECONDS - t0))
[ "$crc" != 0 ] || it_fail "a request to the black hole succeeded"
[ "$crc" != 28 ] || it_fail "curl gave up first (60 s): the stream never failed on its own"
grep -q -E '\(6\)|TTL expired' "$net/curl.err" ||
    it_fail "the SOCKS reply was not 6 (TTL expired): $(cat "$net/curl.err")"
[ "$took" -ge 10 ] && [ "$took" -le 25 ] ||
    it_fail "the request failed after $took s, expected about 12 (SocksTimeout)"
grep -q "A stream to port $bport failed: no answer to its BEGIN within 3 s on .*SocksTimeout" "$log" ||
    it_fail "no notice that the stream failed at SocksTimeout: $(grep -i "port $bport" "$log" | tail -5)"
it_log "$(grep -h "A stream to port $bport failed" "$log" | tail -1 | sed 's/.*\] //')"

retries=$(grep "to port $bport: no answer to its BEGIN within 3 s on circuit #[0-9]*; retrying on another circuit" "$log")
n=$(printf '%s\n' "$retries" | grep -c retrying)
[ "$n" -ge 2 ] || it_fail "expected at least 2 retries in 12 s, got $n: $(grep -i "port $bport" "$log" | tail -5)"
circs=$(printf '%s\n' "$retries" | sed 's/.*on circuit #\([0-9]*\);.*/\1/')
[ "$(printf '%s\n' "$circs" | sort -u | wc -l)" = "$n" ] ||
    it_fail "a retry went back to a circuit it had left: $(printf '%s ' $circs)"
it_log "$n retries, each on another circuit (#$(printf '%s ' $circs | sed 's/ $//; s/ /, #/g')), then the stream failed after $took s"

# A live request works, on none of the circuits the stream left.
curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$socks" --proxy-user hole:x \
    "http://127.0.0.1:$hport/file" -o "$net/out" || it_fail "the download after the timeouts failed"
[ "$(sha256sum < "$net/out" | cut -d' ' -f1)" = "$want" ] || it_fail "the download is corrupt"
used=$(grep "to port $hport connected .* its BEGIN left on circuit #" "$log" | tail -1 |
    sed 's/.*left on circuit #\([0-9]*\),.*/\1/')
[ -n "$used" ] || it_fail "no CONNECTED line for the download: $(grep "port $hport" "$log" | tail -3)"
for c in $circs; do
    [ "$c" != "$used" ] || it_fail "the new stream went on circuit #$c, which a timed-out stream had left"
done
it_log "the next request (same isolation) went on circuit #$used"
it_pctor_alive_quiet "$net" p1 p2 p3 c1
it_log "stream timeout checks passed"
