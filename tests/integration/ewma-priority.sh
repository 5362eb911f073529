#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ewma-priority.sh -- EWMA circuit scheduling gives an interactive circuit
# lower latency than round robin when it competes with a bulk circuit.
#
# Private network (1 tor authority, 1 tor relay) plus pctor relays p1
# (guard), p2 (middle) and p3 (exit, RelayBandwidthRate 200 KBytes: the
# bottleneck), and a pctor client whose SOCKS usernames put a bulk download
# and the interactive requests on two circuits over the same path (so they
# share every connection). While the bulk download runs, the interactive
# circuit fetches 200 KiB every second; the relays switch between round
# robin (CircuitPriorityHalflife 0) and EWMA (30 s) by SIGHUP, alternating
# phases. Checks: the median request time with EWMA is clearly lower than
# with round robin (EWMA_MAX_RATIO, default 0.8), the bulk download kept
# going through every switch (no circuit dropped), every body is intact.
#
# EWMA_ROUNDS (default 2) off/on rounds of EWMA_REQS (default 5) requests.
# With EWMA_REPORT=FILE the figures are also written there (the benchmark
# scripts/bench-scheduler uses this).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
ROUNDS=${EWMA_ROUNDS:-2}
REQS=${EWMA_REQS:-5}
MAX_RATIO=${EWMA_MAX_RATIO:-0.8}
EXTRA_RELAY_LINES=${EWMA_EXTRA_RELAY_LINES:-}

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 1 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((64 * 1024 * 1024)) /dev/zero > "$www/bulk"
head -c $((200 * 1024)) /dev/urandom > "$www/web"
want_web=$(sha256sum < "$www/web" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

relay_lines() { # HALFLIFE
    echo "CircuitPriorityHalflife $1"
    [ -n "$EXTRA_RELAY_LINES" ] && printf '%b\n' "$EXTRA_RELAY_LINES"
}
it_start_pctor "$net" p1 relay "$(relay_lines 0)"
it_start_pctor "$net" p2 relay "$(relay_lines 0)"
it_start_pctor "$net" p3 relay "$(relay_lines 0)
RelayBandwidthRate 200 KBytes
RelayBandwidthBurst 200 KBytes
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"
it_start_pctor "$net" c1 client "EntryNodes p1
MiddleNodes p2
ExitNodes p3"
socks=$(cat "$net/c1.port")

web() { # OUT: one interactive request on the "web" circuit; prints seconds
    curl -sf --max-time 60 -x "socks5h://web:x@127.0.0.1:$socks" \
        -w '%{time_total}\n' "http://127.0.0.1:$hport/web" -o "$1"
}
it_wait_until 90 web "$net/probe" > /dev/null ||
    it_fail "the client never carried a request: $(tail -5 "$(cat "$net/c1.dir")/info.log")"

set_halflife() { # SECONDS: rewrite the relays' torrcs and SIGHUP them
    local n d
    for n in p1 p2 p3; do
        d=$(cat "$net/$n.dir")
        sed -i "s/^CircuitPriorityHalflife .*/CircuitPriorityHalflife $1/" "$d/torrc"
        kill -HUP "$(cat "$d/pid")"
    done
    sleep 1
    for n in p1 p2 p3; do
        d=$(cat "$net/$n.dir")
        grep -q "Circuit scheduling: $2" "$d/info.log" ||
            it_fail "$n did not switch to $2 scheduling"
    done
}

# The bulk download: as fast as the exit's 200 KB/s allows, all along.
curl -s --max-time 3600 -x "socks5h://bulk:x@127.0.0.1:$socks" \
    "http://127.0.0.1:$hport/bulk" -o "$net/bulk.out" &
bulk=$!
it_register_pid "$bulk"
sleep 6
size0=$(stat -c %s "$net/bulk.out" 2>/dev/null || echo 0)
[ "$size0" -gt $((300 * 1024)) ] || it_fail "the bulk download does not run ($size0 bytes after 6 s)"

if printf '%b' "$EXTRA_RELAY_LINES" | grep -q '^PerCircuitTCP 1'; then
    # The two circuits must really be on connections of their own.
    n=$(ss -tnpH state established "( dport = :$(cat "$net/p3.port") )" 2> /dev/null |
        grep -c "pid=$(cat "$(cat "$net/p2.dir")/pid"),")
    [ "$n" -ge 2 ] || it_fail "PerCircuitTCP: only $n connection(s) p2->p3"
    it_log "PerCircuitTCP: $n connections p2->p3"
fi

declare -a t_off t_on
phase() { # MODE HALFLIFE LABEL
    local i t
    set_halflife "$2" "$3"
    sleep 2
    for i in $(seq "$REQS"); do
        t=$(web "$net/web.out") || it_fail "interactive request failed ($1)"
        [ "$(sha256sum < "$net/web.out" | cut -d' ' -f1)" = "$want_web" ] ||
            it_fail "interactive body corrupted ($1)"
        if [ "$1" = off ]; then t_off+=("$t"); else t_on+=("$t"); fi
        sleep 1
    done
    kill -0 "$bulk" 2>/dev/null || it_fail "the bulk download stopped during the $1 phase"
}
for r in $(seq "$ROUNDS"); do
    phase off 0 "round robin"
    phase on 30 "EWMA"
done
size1=$(stat -c %s "$net/bulk.out")
kill "$bulk" 2>/dev/null
wait "$bulk" 2>/dev/null
[ "$size1" -gt "$size0" ] || it_fail "the bulk download made no progress"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
m_off=$(median "${t_off[@]}")
m_on=$(median "${t_on[@]}")
ratio=$(awk -v a="$m_on" -v b="$m_off" 'BEGIN {printf "%.3f", a / b}')
it_log "interactive 200 KiB request, median of ${#t_off[@]}: round robin ${m_off} s, EWMA ${m_on} s (ratio $ratio)"
it_log "round robin: ${t_off[*]}"
it_log "EWMA:        ${t_on[*]}"
if [ -n "${EWMA_REPORT:-}" ]; then
    {
        echo "requests_per_mode ${#t_off[@]}"
        echo "median_rr_s $m_off"
        echo "median_ewma_s $m_on"
        echo "ratio $ratio"
        echo "rr_all ${t_off[*]}"
        echo "ewma_all ${t_on[*]}"
    } > "$EWMA_REPORT"
fi
awk -v r="$ratio" -v m="$MAX_RATIO" 'BEGIN {exit !(r < m)}' ||
    it_fail "EWMA did not help the interactive circuit enough: ratio $ratio (must be < $MAX_RATIO)"
it_pctor_alive_quiet "$net" p1 p2 p3 c1
it_log "EWMA priority checks passed"
