#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# xoff-flood.sh -- a client that ignores XOFF floods a pctor exit with DATA
# for a destination that never reads (issue 14): the exit's memory stays
# bounded and it ends the stream or closes the circuit, saying why.
#
# A private network (1 tor authority), a pctor middle M and a pctor exit P
# with MaxMemInQueues 64 MB (pctor's smallest). The destination is a
# listener on 127.0.0.1 that accepts and never reads (64 KB receive
# buffers, so the kernel takes little of the flood). The client is
# pctor-circtest --cc --ignore-xoff: a circuit M -> P with congestion
# control (ntor v3), so the only brake on a stream is XON/XOFF, which it
# counts and ignores, sending DATA as fast as the circuit takes it:
#   1. one stream, 64 MiB (more with a larger tcp_wmem): P sends XOFF,
#      then ends the stream with END RESOURCELIMIT once it holds
#      EDGE_STREAM_MAX_PENDING (2 MiB) it cannot pass on (after the
#      kernel's socket buffers took theirs), logging "Stream N holds ...
#      cannot pass them on"; P's RSS grows by less than XOFF_RSS_STREAM_KB
#      (default 16 MB);
#   2. 48 streams, up to tcp_wmem's maximum + 4 MiB each (8 MiB here),
#      served in turn: each destination socket's kernel buffers take about
#      tcp_wmem's maximum (4 MB by default), then P holds the rest; the
#      streams grow together, so P holds 64 MB before any of them holds
#      2 MiB, and the MaxMemInQueues handler fires: it closes the circuit
#      (the client sees the circuit closed), logs "Out of memory for queues
#      and buffers", and MetricsPort counts it (pctor_oom_events_total,
#      pctor_oom_circuits_killed_total); P's RSS grows by less than 64 MB +
#      XOFF_RSS_SLACK_KB (default 24 MB).
# After both, P carries a normal download (4 MiB, sha256 checked) and
# logged no warning. The consensus raises the per-circuit queue limit
# (circ_max_cell_queue_size, tor's default 2500 cells), which the client
# ignores as well: M would otherwise close the circuit itself whenever P
# reads from it more slowly than the client sends (a loaded machine), and
# P's own limits would go untested.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PY=$(it_python3) || it_skip "python3 is not installed"
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
RSS_STREAM=${XOFF_RSS_STREAM_KB:-16000}
RSS_SLACK=${XOFF_RSS_SLACK_KB:-24000}
MAXMEM_MB=64
# What the kernel takes into one destination socket's send buffer before
# the exit holds anything (tcp_wmem's maximum; 4 MB by default): every
# stream's share of the flood must exceed it.
wmem=$(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_wmem 2> /dev/null)
PER_STREAM_MB=$(((${wmem:-4194304} >> 20) + 4))
ONE_STREAM_MB=$((PER_STREAM_MB > 32 ? 2 * PER_STREAM_MB : 64))

echo "ConsensusParams circ_max_cell_queue_size=1000000" > "$IT_ROOT/params.torrc"
it_net_start --authorities 1 --relays 0 --exit-relays 0 \
    --torrc-extra "authority=$IT_ROOT/params.torrc"
it_web_file 4
# The destination: accepts, never reads.
"$PY" -c 'import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.bind(("127.0.0.1", 0))
s.listen(256)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)' > "$net/sink.port" &
it_register_pid $!
it_wait_until 10 test -s "$net/sink.port" || it_fail "no sink listener"
sink=$(cat "$net/sink.port")

read -r _ mport _ _ < <(it_privnet reserve "$net" --role aux --nickname pmetrics)
it_start_pctor "$net" M relay ""
it_start_pctor "$net" P relay "MaxMemInQueues $MAXMEM_MB MB
MetricsPort 127.0.0.1:$mport
MetricsPortPolicy accept 127.0.0.1
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RefuseUnknownExits 0
ServerDNSResolvConfFile $net/resolv.conf"
for n in M P; do
    it_wait_until 30 grep -q "Circuit queue limits from the consensus: 1000000 cells towards the client, 1000000 towards the exit" \
        "$(cat "$net/$n.dir")/info.log" || it_fail "$n did not take the consensus' queue limits"
done
it_log "M and P take the consensus' circuit queue limits (1000000 cells)"
d=$(cat "$net/P.dir")
pid=$(cat "$d/pid")
log=$d/info.log
HM=$(it_pctor_hop "$net" M) HP=$(it_pctor_hop "$net" P)
it_wait_until 20 grep -q "MaxMemInQueues is $MAXMEM_MB MB" "$log" ||
    it_fail "P did not take MaxMemInQueues $MAXMEM_MB MB"

metric() { # NAME: P's MetricsPort value of NAME
    curl -sf -m 5 "http://127.0.0.1:$mport/metrics" |
        sed -n "s/^$1 \([0-9]*\)$/\1/p"
}
# xflood NAME ARGS...: pctor-circtest --ignore-xoff through M -> P; sets
# line (its xoff-flood line).
xflood() {
    local name=$1
    shift
    "$CIRCTEST" --timeout 120 --cc --begin "127.0.0.1:$sink" "$@" "$HM" "$HP" \
        > "$net/$name.out" 2> "$net/$name.err" ||
        it_fail "$name: $(cat "$net/$name.out") $(tail -3 "$net/$name.err")"
    line=$(grep '^xoff-flood:' "$net/$name.out") ||
        it_fail "$name: no xoff-flood line: $(tail -3 "$net/$name.err")"
    it_log "$name: ${line#xoff-flood: }"
}
num() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" <<< "$line"; }

r0=$(it_rss_kb "$pid")
oom0=$(metric pctor_oom_events_total)
[ -n "$oom0" ] || it_fail "P's MetricsPort has no pctor_oom_events_total"

# 1. One stream: ended by the per-stream cap.
xflood one-stream --ignore-xoff "$ONE_STREAM_MB"
sent=$(sed -n 's/.*streams, \([0-9]*\) bytes sent.*/\1/p' <<< "$line")
[ "$(num 'ended (END RESOURCELIMIT)')" = 1 ] ||
    it_fail "one stream: P did not end the stream with RESOURCELIMIT"
[ "$(num 'XOFF ignored')" -ge 1 ] || it_fail "one stream: P sent no XOFF"
[ "$sent" -lt $((ONE_STREAM_MB << 20)) ] || it_fail "one stream: P took all $ONE_STREAM_MB MiB"
grep -q "circuit open" <<< "$line" || it_fail "one stream: the circuit was closed"
it_wait_until 5 grep -qE "Stream [0-9]+ holds [0-9]+ bytes the peer sent and cannot pass them on \(limit 2097152\); ending it" \
    "$log" || it_fail "P did not log why it ended the stream"
r1=$(it_rss_kb "$pid")
it_log "P's RSS: $r0 kB before, $r1 kB after the one-stream flood"
[ $((r1 - r0)) -le "$RSS_STREAM" ] ||
    it_fail "P's RSS grew by $((r1 - r0)) kB in the one-stream flood (limit $RSS_STREAM)"
[ "$(metric pctor_oom_events_total)" = "$oom0" ] ||
    it_fail "one stream: the MaxMemInQueues handler ran"

# 2. 48 streams: the MaxMemInQueues handler closes the circuit.
xflood many-streams --ignore-xoff "$PER_STREAM_MB" --streams 48
grep -q "circuit closed" <<< "$line" ||
    it_fail "48 streams: the circuit was not closed"
it_wait_until 5 grep -q "Out of memory for queues and buffers: .*above MaxMemInQueues ($((MAXMEM_MB << 20)) bytes)\. Closed [1-9]" \
    "$log" || it_fail "P did not log the MaxMemInQueues handler closing the circuit"
it_log "P: $(grep -o 'Out of memory for queues and buffers: .*' "$log" | tail -1)"
r2=$(it_rss_kb "$pid")
oom=$(metric pctor_oom_events_total) killed=$(metric pctor_oom_circuits_killed_total)
it_log "P's RSS: $r2 kB after the 48-stream flood; MetricsPort: pctor_oom_events_total $oom, pctor_oom_circuits_killed_total $killed"
[ "$oom" -ge $((oom0 + 1)) ] && [ "$killed" -ge 1 ] ||
    it_fail "MetricsPort does not count the MaxMemInQueues handler's work"
[ $((r2 - r0)) -le $(((MAXMEM_MB << 10) + RSS_SLACK)) ] ||
    it_fail "P's RSS grew by $((r2 - r0)) kB in the 48-stream flood (limit MaxMemInQueues + $RSS_SLACK kB)"

# 3. P still serves a well-behaved client.
"$CIRCTEST" --timeout 60 --begin "127.0.0.1:$hport" --get /file \
    --out "$net/body" "$HM" "$HP" 2> "$net/download.err" ||
    it_fail "download after the floods failed: $(tail -2 "$net/download.err")"
[ "$(sha256sum < "$net/body" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "download after the floods: sha256 mismatch"
it_pctor_alive_quiet "$net" M P
echo "xoff-flood: ok"
