#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dos-flood.sh -- pctor's DoS defences (DoSCircuitCreation*, DoSConnection*)
# against floods from one address, with tor's default limits.
#
# A private network (1 tor authority) and a pctor relay P with
# DoSCircuitCreationEnabled 1 and DoSConnectionEnabled 1 (every number at
# tor's default: burst 90 and 3 circuits per second with 3 connections;
# 100 connections at once, 40 new at once and 20 per second). The flooders
# are tests/integration/tor_link_client.py bound to their own loopback
# source addresses:
#   - 127.0.0.2 opens 3 connections and floods CREATE2 cells, each a valid
#     ntor onionskin for P's keys, at CREATE2_RATE (default 100) per second
#     -- 33 times tor's rate -- without waiting for answers, for as long as
#     a legitimate client (pctor-circtest at 127.0.0.1) downloads a 4 MiB
#     file through P -> E (E: a pctor exit), again and again for at least
#     3 s (the first download falls in the burst P still answers, the
#     others after P marked the address): about 90 are created (each
#     CREATED2's ntor AUTH checked), every other one gets DESTROY
#     (RESOURCELIMIT); P's DoS line and MetricsPort
#     (tor_relay_dos_total{type="circuit_rejected"}) count at least the
#     refusals the flooder saw. Each download must complete with the right
#     sha256 within 3 x the same download without the flood + 5 s;
#   - 127.0.0.4 opens 150 connections and holds them, then goes on
#     opening 20 per second, while 127.0.0.1 downloads the 4 MiB file
#     through P -> E again and again for at least 3 s (the downloads start
#     with the flood): at most 40 + 20 per second of flooding, and no more
#     than 100, complete their handshake (which limit bites first depends
#     on how fast the machine is), the rest are closed at once; MetricsPort
#     (tor_relay_dos_total conn_rejected + concurrent_conn_rejected) counts
#     at least the connections the flooder saw closed, and each download
#     completes within the same bound as during the CREATE2 flood;
#   - 127.0.0.5 sends 100 RESOLVE cells on one circuit; P is an exit whose
#     resolver (127.0.0.1, a UDP socket of ours) never answers, with
#     DoSStreamCreationBurst 50: 32 names wait for the resolver (the
#     per-circuit limit), the next ones are refused by that limit, and the
#     last 50 by DoSStreamCreation* (END RESOURCELIMIT for each);
# while clients at other addresses (127.0.0.3, and pctor-circtest from
# 127.0.0.1) still build circuits. P stays up, logs each marked address
# once, adds less than DOS_RSS_MAX_KB (default 30 MB) of RSS over the
# floods, logs tor's "DoS mitigation since startup" line with the counts
# on SIGUSR1, and logs no warning.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PY=$(it_python3) || it_skip "python3 is not installed"
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
CLIENT=$IT_LIBDIR/tor_link_client.py
RSS_MAX=${DOS_RSS_MAX_KB:-30000}
CREATE2_RATE=${CREATE2_RATE:-100}
MB=4

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
# A nameserver that never answers: name lookups stay pending.
"$PY" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    s.recv(4096)' > "$net/silent.port" &
it_register_pid $!
it_wait_until 10 test -s "$net/silent.port" || it_fail "no silent nameserver"
echo "nameserver 127.0.0.1:$(cat "$net/silent.port")" > "$net/resolv.conf"
it_web_file "$MB"
read -r _ mport _ _ < <(it_privnet reserve "$net" --role aux --nickname pmetrics)
it_start_pctor "$net" E relay "ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_start_pctor "$net" P relay "MetricsPort 127.0.0.1:$mport
MetricsPortPolicy accept 127.0.0.1
DoSCircuitCreationEnabled 1
DoSConnectionEnabled 1
DoSStreamCreationEnabled 1
DoSStreamCreationBurst 50
DoSStreamCreationRate 1
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
d=$(cat "$net/P.dir")
port=$(cat "$net/P.port")
pid=$(cat "$d/pid")
log=$d/info.log
it_wait_until 20 grep -q "DoS defences: circuit creation on, connections on, stream creation on" \
    "$log" || it_fail "P did not turn its DoS defences on"

HP=$(it_pctor_hop "$net" P) HE=$(it_pctor_hop "$net" E)

rss() { it_rss_kb "$pid"; }
download() { # NAME: fetch the file through P -> E; prints the milliseconds
    local out=$net/body-$1 t0 got
    t0=$(date +%s%N)
    "$CIRCTEST" --timeout 120 --begin "127.0.0.1:$hport" --get /file \
        --out "$out" "$HP" "$HE" 2> "$net/$1.err" ||
        it_fail "download $1 failed: $(tail -2 "$net/$1.err")"
    got=$(sha256sum < "$out" | cut -d' ' -f1)
    [ "$got" = "$want" ] || it_fail "download $1: sha256 mismatch"
    rm -f "$out"
    echo $((($(date +%s%N) - t0) / 1000000))
}
metric() { # TYPE: P's tor_relay_dos_total{type=TYPE}
    curl -sf -m 5 "http://127.0.0.1:$mport/metrics" |
        sed -n "s/^tor_relay_dos_total{type=\"$1\"} \([0-9]*\)$/\1/p"
}
client() { # CASE BIND ARGS...
    local name=$1 bind=$2
    shift 2
    "$PY" "$CLIENT" --port "$port" --case "$name" --bind "$bind" "$@" 2>&1
}
# downloads_during WHAT FLOOD-PID FLOOD-OUT READY: download again and again
# while the flooder FLOOD-PID runs, each within $limit_ms, for at least 3 s
# and (READY not empty) until FLOOD-OUT contains READY.
downloads_during() {
    local t0=$SECONDS all= ms
    while :; do
        ms=$(download "during-${1// /-}")
        [ "$ms" -le "$limit_ms" ] ||
            it_fail "a download during $1 took $ms ms (limit $limit_ms)"
        kill -0 "$2" 2> /dev/null ||
            it_fail "$1 ended before the download: $(cat "$3")"
        all="$all $ms"
        if [ $((SECONDS - t0)) -ge 3 ] && { [ -z "$4" ] || grep -q "$4" "$3"; }; then
            break
        fi
    done
    it_log "downloads during $1 (ms):$all"
}
legit() { # WHEN
    local out
    out=$(client create-one 127.0.0.3) ||
        it_fail "a client at another address was refused $1: $out"
    "$CIRCTEST" --timeout 20 --handshake ntor "pctor:$d/data@127.0.0.1:$port" \
        > "$net/circtest.out" 2>&1 ||
        it_fail "pctor-circtest failed $1: $(tail -3 "$net/circtest.out")"
    it_log "clients at 127.0.0.3 and 127.0.0.1 still build circuits $1"
}

r0=$(rss)
legit "before the floods"

# 1. CREATE2 flood from 127.0.0.2 while 127.0.0.1 downloads through P.
base_ms=$(download baseline)
limit_ms=$((3 * base_ms + 5000))
it_log "baseline: $MB MiB through P -> E in $base_ms ms (limit during the flood $limit_ms ms)"
stop=$net/create2.stop
client dos-create2-flood 127.0.0.2 --datadir "$d/data" --count 100000 \
    --send-rate "$CREATE2_RATE" --seconds 120 --stop-file "$stop" \
    --burst 90 --rate 3 > "$net/create2.out" &
fl_pid=$!
it_register_pid "$fl_pid"
it_wait_until 10 grep -q "3 connections open" "$net/create2.out" ||
    it_fail "CREATE2 flood did not start: $(cat "$net/create2.out")"
downloads_during "the CREATE2 flood" "$fl_pid" "$net/create2.out" ""
touch "$stop"
wait "$fl_pid" || it_fail "CREATE2 flood: $(cat "$net/create2.out")"
it_log "CREATE2 flood: $(grep -E '^ +[0-9]+ CREATE2 in' "$net/create2.out" | sed 's/^ *//')"
read -r _ sent _ _ _ created _ frefused _ _ < <(grep '^sent ' "$net/create2.out")
[ "$created" -ge 80 ] ||
    it_fail "CREATE2 flood: only $created created (tor's burst is 90)"
[ $((created + frefused)) = "$sent" ] || it_fail "CREATE2 flood: counts do not add up"
it_wait_until 5 grep -q "DoS: the client address 127.0.0.2 created circuits" \
    "$log" || it_fail "P did not log the marked address 127.0.0.2"
mrej=$(metric circuit_rejected)
[ -n "$mrej" ] && [ "$mrej" -ge "$frefused" ] ||
    it_fail "MetricsPort counts ${mrej:-no} rejected circuits, the flooder saw $frefused refused"
it_log "MetricsPort: tor_relay_dos_total{type=\"circuit_rejected\"} $mrej, marked_address $(metric marked_address)"
legit "after the CREATE2 flood"

# 2. Connection flood from 127.0.0.4 while 127.0.0.1 downloads through P.
stop=$net/conn.stop
c0=$(($(metric conn_rejected) + $(metric concurrent_conn_rejected)))
client dos-conn-flood 127.0.0.4 --count 150 --burst 40 --rate 20 \
    --max-open 100 --timeout 3 --send-rate 20 --seconds 120 \
    --stop-file "$stop" > "$net/conn.out" &
cf_pid=$!
it_register_pid "$cf_pid"
# The downloads start with the flood's first connections and go on past
# its first 150.
downloads_during "the connection flood" "$cf_pid" "$net/conn.out" "flooding on"
touch "$stop"
wait "$cf_pid" || it_fail "connection flood: $(cat "$net/conn.out")"
it_log "connection flood: $(grep -E '^ +[0-9]+ connections in ' "$net/conn.out" | sed 's/^ *//')"
read -r _ caccepted _ crefused _ ctimeouts < <(grep '^accepted ' "$net/conn.out")
conn_refused_counted() { [ $(($(metric conn_rejected) + $(metric concurrent_conn_rejected) - c0)) -ge "$crefused" ]; }
it_wait_until 5 conn_refused_counted ||
    it_fail "MetricsPort counts $(($(metric conn_rejected) + $(metric concurrent_conn_rejected) - c0)) refused connections, the flooder saw $crefused closed"
it_log "MetricsPort: conn_rejected $(metric conn_rejected), concurrent_conn_rejected $(metric concurrent_conn_rejected) ($crefused refused, $caccepted accepted, $ctimeouts timed out at the flooder)"
legit "after the connection flood"

# 3. RESOLVE flood on one circuit from 127.0.0.5.
out=$(client resolve-flood 127.0.0.5 --count 100) || it_fail "RESOLVE flood: $out"
answered=$(sed -n 's/^answered \([0-9]*\)$/\1/p' <<< "$out")
it_log "RESOLVE flood: 100 on one circuit, $answered refused at once"
# 32 wait for the resolver, every other one is refused at once.
[ "$answered" = 68 ] ||
    it_fail "RESOLVE flood: $answered answered at once, expected 68 (100 - 32 waiting)"
legit "after the RESOLVE flood"

# 4. Memory, counters, health.
r1=$(rss)
it_log "P's RSS: $r0 kB before the floods, $r1 kB after"
[ $((r1 - r0)) -le "$RSS_MAX" ] ||
    it_fail "P's RSS grew by $((r1 - r0)) kB over the floods (limit $RSS_MAX)"
kill -USR1 "$pid"
it_wait_until 10 grep -q "DoS mitigation since startup:" "$log" ||
    it_fail "no DoS line in P's statistics"
line=$(grep "DoS mitigation since startup:" "$log" | tail -1)
it_log "${line#*] }"
grep -qE "since startup: [1-9][0-9]* circuits rejected, [1-9][0-9]* marked addresses" \
    <<< "$line" || it_fail "the DoS line does not count the refused circuits"
crej=$(sed -n 's/.*since startup: \([0-9]*\) circuits rejected.*/\1/p' <<< "$line")
[ "$crej" -ge "$frefused" ] ||
    it_fail "the DoS line counts $crej rejected circuits, the CREATE2 flooder saw $frefused"
st=$(sed -n 's/.* \([0-9]*\) stream requests rejected.*/\1/p' <<< "$line")
[ -n "$st" ] && [ "$st" -ge 45 ] ||
    it_fail "the DoS line counts ${st:-no} refused stream requests, expected 45 or more"
conc=$(sed -n 's/.* \([0-9]*\) same address concurrent connections rejected.*/\1/p' <<< "$line")
rate=$(sed -n 's/.*rejected, \([0-9]*\) connections rejected.*/\1/p' <<< "$line")
[ -n "$conc" ] && [ -n "$rate" ] && [ $((conc + rate)) -gt 0 ] ||
    it_fail "the DoS line does not count the refused connections"
it_pctor_alive_quiet "$net" P E
echo "dos-flood: ok"
