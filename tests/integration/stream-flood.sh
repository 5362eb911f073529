#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# stream-flood.sh -- BEGIN and BEGIN_DIR floods at a pctor exit, while a
# legitimate client downloads through the same relay.
#
# A private network (1 tor authority, 1 tor relay), a pctor middle M and a
# pctor exit P with DoSStreamCreationEnabled 1 and every other DoS number
# at tor's default (DoSStreamCreationRate 100, Burst 300, DefenseType 2:
# refuse the stream). A web server serves a file; a listener that never
# accepts (its kernel backlog completes the connections) is the flood's
# destination, so every stream P lets through stays open. Then, each flood
# from pctor-circtest --flood (all streams sent at once on one circuit),
# kept open while P's RSS is read:
#   1. BEGIN flood: FLOOD_BEGINS (default 1000) BEGIN cells on one circuit
#      M -> P: at most 300 + 100 per second of flooding are connected
#      (and never more than 512, EXIT_MAX_STREAMS_PER_CIRCUIT), every
#      other one is refused with END RESOURCELIMIT, and P's DoS line counts
#      the refusals by DoSStreamCreation*;
#   2. BEGIN_DIR flood: 300 BEGIN_DIR cells on a one-hop circuit to P
#      (tor applies DoSStreamCreation* to exit streams only; pctor's
#      directory cache takes at most 64 streams per circuit): exactly 64
#      connected, 236 refused with END RESOURCELIMIT.
# The legitimate client downloads the file through M -> P before the
# floods (the baseline) and while each flood's streams are held open; each
# download must complete with the right sha256 within 5 x the baseline +
# 15 s. P's RSS must grow by
# less than STREAM_FLOOD_RSS_MAX_KB (default 16 MB) over the floods while
# their streams are open; P logs no warning.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PY=$(it_python3) || it_skip "python3 is not installed"
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
RSS_MAX=${STREAM_FLOOD_RSS_MAX_KB:-16000}
NBEGIN=${FLOOD_BEGINS:-1000}
MB=4

it_net_start --authorities 1 --relays 1 --exit-relays 0
it_web_file "$MB"
# The flood's destination: a listener that never accepts.
"$PY" -c 'import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4096)
print(s.getsockname()[1], flush=True)
while True:
    time.sleep(60)' > "$net/sink.port" &
it_register_pid $!
it_wait_until 10 test -s "$net/sink.port" || it_fail "no sink listener"
sink=$(cat "$net/sink.port")

it_start_pctor "$net" M relay ""
it_start_pctor "$net" P relay "DoSStreamCreationEnabled 1
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RefuseUnknownExits 0
ServerDNSResolvConfFile $net/resolv.conf"
d=$(cat "$net/P.dir")
pid=$(cat "$d/pid")
HM=$(it_pctor_hop "$net" M) HP=$(it_pctor_hop "$net" P)
it_wait_until 20 grep -q "stream creation on" "$d/info.log" ||
    it_fail "P did not turn DoSStreamCreation on"


download() { # NAME: fetch the file through M -> P; prints the seconds taken
    local out=$net/body-$1 t0 got
    t0=$(date +%s%N)
    "$CIRCTEST" --timeout 120 --begin "127.0.0.1:$hport" --get /file \
        --out "$out" "$HM" "$HP" 2> "$net/$1.err" ||
        it_fail "download $1 failed: $(tail -2 "$net/$1.err")"
    got=$(sha256sum < "$out" | cut -d' ' -f1)
    [ "$got" = "$want" ] || it_fail "download $1: sha256 mismatch"
    rm -f "$out"
    echo $((($(date +%s%N) - t0) / 1000000))
}

# flood NAME ARGS...: run pctor-circtest --flood ARGS in the background,
# holding its streams open 8 s; sets fl_pid and fl_out.
flood() {
    local name=$1
    shift
    fl_out=$net/flood-$name.out
    "$CIRCTEST" --timeout 120 --flood-hold 8 "$@" > "$fl_out" \
        2> "$net/flood-$name.err" &
    fl_pid=$!
    it_register_pid "$fl_pid"
    it_wait_until 60 grep -q "^flood:" "$fl_out" ||
        it_fail "$name flood: no answer to every stream: $(tail -2 "$net/flood-$name.err")"
}
# field WORD: the number before WORD in the flood's line.
field() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$fl_out"; }

base_ms=$(download baseline)
limit_ms=$((5 * base_ms + 15000))
it_log "baseline: $MB MiB through M -> P in $base_ms ms (limit during floods $limit_ms ms)"
r0=$(it_rss_kb "$pid")

# 1. BEGIN flood through M.
flood begin --flood "$NBEGIN" --begin "127.0.0.1:$sink" "$HM" "$HP"
line=$(cat "$fl_out")
it_log "BEGIN ${line#flood: }"
conn=$(field connected) refused=$(field refused) other=$(field other)
secs=$(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' "$fl_out")
[ "$other" = 0 ] || it_fail "BEGIN flood: $other streams ended otherwise"
[ $((conn + refused)) = "$NBEGIN" ] || it_fail "BEGIN flood: counts do not add up"
allowed=$("$PY" -c "print(min(512, int(300 + 100 * $secs + 2)))")
[ "$conn" -le "$allowed" ] ||
    it_fail "BEGIN flood: $conn streams connected in $secs s, at most $allowed expected"
[ "$refused" -ge 1 ] || it_fail "BEGIN flood: nothing refused"
ms=$(download during-begin-flood)
it_log "download during the BEGIN flood: $ms ms"
[ "$ms" -le "$limit_ms" ] || it_fail "download during the BEGIN flood took $ms ms"
r1=$(it_rss_kb "$pid")
it_log "P's RSS: $r0 kB before, $r1 kB with $conn flood streams open"
[ $((r1 - r0)) -le "$RSS_MAX" ] ||
    it_fail "P's RSS grew by $((r1 - r0)) kB in the BEGIN flood (limit $RSS_MAX)"
begin_refused=$refused
wait "$fl_pid" || it_fail "BEGIN flood client failed: $(tail -2 "$net/flood-begin.err")"

# 2. BEGIN_DIR flood on a one-hop circuit.
flood begindir --flood 300 "$HP"
line=$(cat "$fl_out")
it_log "BEGIN_DIR ${line#flood: }"
[ "$(field connected)" = 64 ] && [ "$(field refused)" = 236 ] &&
    [ "$(field other)" = 0 ] ||
    it_fail "BEGIN_DIR flood: expected 64 connected and 236 refused: $line"
ms=$(download during-begindir-flood)
it_log "download during the BEGIN_DIR flood: $ms ms"
[ "$ms" -le "$limit_ms" ] || it_fail "download during the BEGIN_DIR flood took $ms ms"
r2=$(it_rss_kb "$pid")
it_log "P's RSS: $r2 kB with the BEGIN_DIR flood's streams open"
[ $((r2 - r0)) -le "$RSS_MAX" ] ||
    it_fail "P's RSS grew by $((r2 - r0)) kB over the floods (limit $RSS_MAX)"
wait "$fl_pid" || it_fail "BEGIN_DIR flood client failed: $(tail -2 "$net/flood-begindir.err")"

# 3. P's counters and health.
line=$(it_usr1_line "$net" P "DoS mitigation since startup:" "DoS line")
it_log "${line#*] }"
st=$(sed -n 's/.* \([0-9]*\) stream requests rejected.*/\1/p' <<< "$line")
[ -n "$st" ] && [ "$st" -ge 1 ] && [ "$st" -le "$begin_refused" ] ||
    it_fail "the DoS line counts ${st:-no} refused streams (the BEGIN flood had $begin_refused refused)"
it_pctor_alive_quiet "$net" M P
echo "stream-flood: ok"
