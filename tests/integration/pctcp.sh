#!/bin/bash
# pctcp.sh -- PerCircuitTCP: one TCP connection per circuit between relays.
#
# Private network (1 tor authority, 2 tor relays) plus pctor relays p1 and p2
# (PerCircuitTCP 1), p4 (PerCircuitTCP 0) and p3 (the exit, limited to
# 1 MByte/s so that downloads last a few seconds). N concurrent
# pctor-circtest clients each build one circuit and download a file;
# connections are counted with `ss` by the owning process and the peer's
# ORPort while the downloads run. Checks:
#   - p1 -> p2 -> p3: N connections p1->p2 and N p2->p3;
#   - p1 -> p4 -> p3: N connections p1->p4 (p1 still per circuit), 1 p4->p3;
#   - after the circuits end, the per-circuit connections are closed;
#   - PerCircuitTCPMaxConnections 2 (by SIGHUP): p2 opens only 2 to p3 and
#     multiplexes the rest (and says so);
#   - tor 0.4.9 as the next hop: p1 -> p2 -> relay1 -> p3 gives N
#     connections p2->relay1, and every download arrives intact.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
N=${PCTCP_TEST_CIRCUITS:-6}
command -v ss > /dev/null || it_skip "ss (iproute2) is not installed"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((3 * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

# The pctor relays do not publish descriptors: tor relays would otherwise
# build their own (testing) circuits through them and add connections.
it_start_pctor "$net" p1 relay "PerCircuitTCP 1
PublishServerDescriptor 0"
it_start_pctor "$net" p2 relay "PerCircuitTCP 1
PublishServerDescriptor 0"
it_start_pctor "$net" p4 relay "PerCircuitTCP 0
PublishServerDescriptor 0"
it_start_pctor "$net" p3 relay "PublishServerDescriptor 0
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RelayBandwidthRate 1 MBytes
RelayBandwidthBurst 1 MBytes
ServerDNSResolvConfFile $net/resolv.conf"
hop() { echo "pctor:$(cat "$net/$1.dir")/data@127.0.0.1:$(cat "$net/$1.port")"; }
pid_of() { cat "$(cat "$net/$1.dir")/pid"; }
orport_of() { # NICK (pctor or privnet relay)
    if [ -f "$net/$1.port" ]; then cat "$net/$1.port"
    else awk -v n="$1" '$1 == n {print $2}' "$nodes"; fi
}
grep -q "PerCircuitTCP: each circuit to another relay gets its own connection" \
    "$(cat "$net/p2.dir")/info.log" || it_fail "p2 did not log PerCircuitTCP"
grep -q "File descriptor limit: " "$(cat "$net/p2.dir")/info.log" ||
    it_fail "p2 did not log its descriptor limit"

# conns FROM TO: established TCP connections owned by pctor FROM to TO's ORPort.
conns() {
    ss -tnpH state established "( dport = :$(orport_of "$2") )" 2> /dev/null |
        grep -c "pid=$(pid_of "$1"),"
}

# run_circuits LABEL HOP...: N concurrent downloads over HOP...; sets $pids.
run_circuits() {
    local label=$1 i
    shift
    pids=()
    for i in $(seq "$N"); do
        "$CIRCTEST" --timeout 120 --nodes "$nodes" --begin "127.0.0.1:$hport" \
            --get /file --out "$net/$label-$i.out" "$@" 2> "$net/$label-$i.err" &
        pids+=($!)
    done
}
finish_circuits() { # LABEL
    local i
    for i in $(seq "$N"); do
        wait "${pids[$((i - 1))]}" || it_fail "$1: download $i failed: $(tail -3 "$net/$1-$i.err")"
        [ "$(sha256sum < "$net/$1-$i.out" | cut -d' ' -f1)" = "$want" ] ||
            it_fail "$1: download $i corrupted"
        rm -f "$net/$1-$i.out"
    done
}
# expect_conns FROM TO WANT LABEL: wait (up to 20 s) until the count is WANT.
expect_conns() {
    local got deadline=$((SECONDS + 20))
    while :; do
        got=$(conns "$1" "$2")
        [ "$got" = "$3" ] && break
        [ "$SECONDS" -lt "$deadline" ] || it_fail "$4: $got connections $1->$2, expected $3"
        sleep 0.3
    done
    it_log "$4: $got connection(s) $1->$2"
}

P1=$(hop p1) P2=$(hop p2) P3=$(hop p3) P4=$(hop p4)

# 1. Per-circuit all along p1 -> p2 -> p3.
run_circuits pctcp "$P1" "$P2" "$P3"
expect_conns p1 p2 "$N" "PerCircuitTCP on"
expect_conns p2 p3 "$N" "PerCircuitTCP on"
finish_circuits pctcp
it_log "$N downloads over per-circuit connections: sha256 ok"
expect_conns p2 p3 0 "after the circuits closed"
expect_conns p1 p2 0 "after the circuits closed"
grep -q "its circuit closed (PerCircuitTCP)" "$(cat "$net/p2.dir")/info.log" ||
    it_fail "p2 did not log closing per-circuit connections"

# 2. p4 has PerCircuitTCP 0: one shared connection to p3.
run_circuits shared "$P1" "$P4" "$P3"
expect_conns p1 p4 "$N" "PerCircuitTCP on at p1"
expect_conns p4 p3 1 "PerCircuitTCP off at p4"
finish_circuits shared

# 3. The threshold, set by SIGHUP.
d2=$(cat "$net/p2.dir")
echo "PerCircuitTCPMaxConnections 2" >> "$d2/torrc"
kill -HUP "$(pid_of p2)"
it_wait_until 10 grep -q "up to 2$" "$d2/info.log" || it_fail "p2 did not apply the new limit"
run_circuits limit "$P1" "$P2" "$P3"
expect_conns p1 p2 "$N" "limit at p2 only"
expect_conns p2 p3 2 "PerCircuitTCPMaxConnections 2"
finish_circuits limit
grep -q "new circuits share the quietest existing connection" "$d2/info.log" ||
    it_fail "p2 did not say it multiplexed over the limit"
sed -i '/^PerCircuitTCPMaxConnections/d' "$d2/torrc"
kill -HUP "$(pid_of p2)"
sleep 1

# 4. tor 0.4.9 as the next hop of per-circuit connections (and as the
# previous hop of p3).
run_circuits tornext "$P1" "$P2" relay1 "$P3"
expect_conns p2 relay1 "$N" "tor relay as the next hop"
finish_circuits tornext
it_log "$N downloads through p2 -> tor relay1 over per-circuit connections: sha256 ok"
expect_conns p2 relay1 0 "after the circuits through tor closed"

it_pctor_alive_quiet "$net" p1 p2 p3 p4
it_log "PerCircuitTCP checks passed"
