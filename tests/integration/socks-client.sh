#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# socks-client.sh -- curl through pctor's SocksPort.
#
# A private network (1 tor authority, 3 tor relays) plus three pctor relays
# (p3 an exit accepting only 127.0.0.1) and two pctor clients:
#   c1: EntryNodes p1, MiddleNodes p2, ExitNodes p3 (all pctor),
#   c2: EntryNodes relay1, MiddleNodes p2, ExitNodes p3 (tor guard).
# Checks: a 50 MiB download through each (sha256), 50 concurrent streams
# through c1 (sha256 each; they share circuits), SOCKS5 with username
# isolation, SOCKS4a, and the SOCKS errors for a destination the exit
# policy rejects (2), a port where nothing listens (5) and a name the
# exit cannot resolve (4; the network's resolver on 127.0.0.1 does not
# answer). Then requests without a path: they wait (SocksTimeout) until
# a new exit is listed, or fail with error 4 once SocksTimeout has passed.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${SOCKS_TEST_MB:-50}

net=$(it_tmpdir)/net
# Every relay Fast: p4 joins with no traffic of its own (bandwidth 0) after
# the others carried the downloads, so the authority would leave it without
# Fast once the slowest others have a bandwidth, and c3 (which pins it and
# needs Fast, as tor's clients do) would never find a path (CI, 2026-11-28:
# the no-dns case takes about 50 s since CircuitStreamTimeout retries the
# stream while the exit's resolver times out).
echo "AuthDirFastGuarantee 1 bytes" > "$IT_ROOT/auth-fast.torrc"
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto --torrc-extra "authority=$IT_ROOT/auth-fast.torrc" ||
    it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/big"
head -c $((1024 * 1024)) /dev/urandom > "$www/small"
want_big=$(sha256sum < "$www/big" | cut -d' ' -f1)
want_small=$(sha256sum < "$www/small" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

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
ExitNodes p3"
it_start_pctor "$net" c2 client "EntryNodes relay1
MiddleNodes p2
ExitNodes p3"
s1=$(cat "$net/c1.port") s2=$(cat "$net/c2.port")

# The clients fetch the consensus at start; wait until a download works.
fetch() { # SOCKSURL PATH OUT
    curl -sf --max-time 120 -x "$1" "http://127.0.0.1:$hport/$2" -o "$3"
}
ready() { fetch "socks5h://127.0.0.1:$1" small "$net/probe-$1"; }
it_wait_until 90 ready "$s1" || it_fail "c1 never carried a request: $(tail -5 "$(cat "$net/c1.dir")/info.log")"
it_wait_until 90 ready "$s2" || it_fail "c2 never carried a request"

for c in 1 2; do
    port=$(cat "$net/c$c.port")
    t0=$SECONDS
    fetch "socks5h://127.0.0.1:$port" big "$net/big-$c" || it_fail "c$c: download failed"
    [ "$(sha256sum < "$net/big-$c" | cut -d' ' -f1)" = "$want_big" ] ||
        it_fail "c$c: sha256 mismatch"
    it_log "c$c: $MB MiB through pctor's SocksPort in $((SECONDS - t0)) s, sha256 ok"
    rm -f "$net/big-$c"
done

# 50 concurrent streams on c1 (same credentials: shared circuits).
pids=()
for i in $(seq 50); do
    fetch "socks5h://127.0.0.1:$s1" small "$net/par-$i" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || it_fail "a concurrent download failed"; done
for i in $(seq 50); do
    [ "$(sha256sum < "$net/par-$i" | cut -d' ' -f1)" = "$want_small" ] ||
        it_fail "concurrent download $i: sha256 mismatch"
done
it_log "50 concurrent streams through c1: all sha256 ok"

# Other SOCKS flavours.
fetch "socks5h://alice:secret@127.0.0.1:$s1" small "$net/auth" || it_fail "SOCKS5 user/pass failed"
fetch "socks4a://127.0.0.1:$s1" small "$net/s4a" || it_fail "SOCKS4a failed"
cmp -s "$net/auth" "$www/small" && cmp -s "$net/s4a" "$www/small" ||
    it_fail "SOCKS5 auth / SOCKS4a bodies differ"

# Failures reach curl as tor's SOCKS5 error codes.
socks_error() { # NAME CODE URL
    curl -sS --max-time 90 -x "socks5h://127.0.0.1:$s1" "$3" -o /dev/null \
        2> "$net/$1.err" && it_fail "$1: the request succeeded"
    grep -q "($2)" "$net/$1.err" || it_fail "$1: expected SOCKS error $2, got: $(cat "$net/$1.err")"
    it_log "$1: SOCKS5 error $2"
}
socks_error policy 2 http://127.0.0.2:80/
unused=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
socks_error refused 5 "http://127.0.0.1:$unused/"
socks_error no-dns 4 http://no-such-host.invalid/

# A request for which no path fits yet waits for one (SocksTimeout), as in
# tor: c3 pins an exit, p4, that is not in the network yet; its request
# waits until p4 is listed, then succeeds. c4 pins an exit that never
# appears: its request fails after its SocksTimeout (3 s) with error 4.
it_start_pctor "$net" c3 client "EntryNodes p1
MiddleNodes p2
ExitNodes p4
SocksTimeout 5 minutes"
it_start_pctor "$net" c4 client "EntryNodes p1
MiddleNodes p2
ExitNodes nosuchrelay
SocksTimeout 3"
s3=$(cat "$net/c3.port") s4=$(cat "$net/c4.port")
c3log=$(cat "$net/c3.dir")/info.log c4log=$(cat "$net/c4.dir")/info.log
t_wait=$SECONDS
curl -sf --max-time 300 -x "socks5h://127.0.0.1:$s3" "http://127.0.0.1:$hport/small" \
    -o "$net/late" 2> "$net/late.err" &
late_pid=$!
it_register_pid "$late_pid"
it_wait_until 60 grep -q "waits for a circuit" "$c3log" ||
    it_fail "c3's request did not wait for a path: $(grep -E 'No path|SOCKS request' "$c3log" | tail -3)"
it_log "c3's request waits: $(grep -m1 'No path for a stream' "$c3log" | sed 's/^.*\] //')"
t4=$SECONDS
curl -sS --max-time 60 -x "socks5h://127.0.0.1:$s4" "http://127.0.0.1:$hport/small" \
    -o /dev/null 2> "$net/timeout.err" && it_fail "c4's request succeeded without an exit"
grep -q "(4)" "$net/timeout.err" || it_fail "c4: expected SOCKS error 4, got: $(cat "$net/timeout.err")"
[ $((SECONDS - t4)) -ge 3 ] || it_fail "c4's request failed after $((SECONDS - t4)) s, before its SocksTimeout of 3 s"
grep -q "after waiting [0-9]* s (SocksTimeout)" "$c4log" || it_fail "c4 did not log the SocksTimeout failure"
it_log "c4: SOCKS5 error 4 after $((SECONDS - t4)) s (SocksTimeout 3)"
kill -0 "$late_pid" 2>/dev/null || it_fail "c3's request ended before its exit existed: $(cat "$net/late.err")"
it_start_pctor "$net" p4 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 180 --flags Running,Valid ||
    it_fail "the consensus does not list p4"
wait "$late_pid" || it_fail "c3's waiting request failed: $(cat "$net/late.err"); $(grep -E 'No path|SOCKS request' "$c3log" | tail -3)"
cmp -s "$net/late" "$www/small" || it_fail "c3's late download differs"
it_log "c3's request waited $((SECONDS - t_wait)) s for p4, then succeeded (sha256 ok)"

it_pctor_alive_quiet "$net" p1 p2 p3 p4 c1 c2 c3 c4
it_log "SOCKS client checks passed"
