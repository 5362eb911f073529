#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# pctcp.sh -- PerCircuitTCP: one TCP connection per circuit between relays.
#
# Private network (1 tor authority, 2 tor relays) plus pctor relays p1 and p2
# (PerCircuitTCP 1), p4 (PerCircuitTCP 0) and p3 (the exit). N circuits are
# built at once and held open by pctor-circbench while connections are
# counted with `ss` (by owning process and the peer's ORPort); then N
# concurrent pctor-circtest downloads over the same path check the data.
# Checks:
#   - p1 -> p2 -> p3: N connections p1->p2 and N p2->p3;
#   - p1 -> p4 -> p3: N connections p1->p4 (p1 still per circuit), 1 p4->p3;
#   - after the circuits end, the per-circuit connections are closed;
#   - PerCircuitTCPMaxConnections 2 (by SIGHUP): p2 opens only 2 to p3 and
#     multiplexes the rest (and says so);
#   - tor 0.4.9 as the next hop: p1 -> p2 -> relay1 -> p3 gives N
#     connections p2->relay1, and every download arrives intact;
#   - PerCircuitTCPSpares 2: a circuit leaves 2 ready connections behind
#     and the next circuit uses one (SIGUSR1 statistics).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
CIRCBENCH=${top_builddir:?}/src/tools/circbench/pctor-circbench
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
# Spare connections are off for exact counts, and tried on their own below.
it_start_pctor "$net" p1 relay "PerCircuitTCP 1
PerCircuitTCPSpares 0
PublishServerDescriptor 0"
it_start_pctor "$net" p2 relay "PerCircuitTCP 1
PerCircuitTCPSpares 0
PublishServerDescriptor 0"
it_start_pctor "$net" p4 relay "PerCircuitTCP 0
PublishServerDescriptor 0"
it_start_pctor "$net" p3 relay "PublishServerDescriptor 0
ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
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

# hold_circuits LABEL HOP...: N circuits over HOP... built at once and held
# open (pctor-circbench) until release_circuits; sets $holder.
hold_circuits() {
    local label=$1 i
    shift
    "$CIRCBENCH" --circuits "$N" --parallel "$N" --drop-cells 0 --pause 600 \
        --hold 0 --nodes "$nodes" "$@" > "$net/$label.hold" 2> "$net/$label.holderr" &
    holder=$!
    it_register_pid "$holder"
    for i in $(seq 300); do grep -q '^built' "$net/$label.hold" && break; sleep 0.1; done
    grep -q "^built $N failed 0" "$net/$label.hold" ||
        it_fail "$label: circuits not built: $(cat "$net/$label.hold") $(tail -3 "$net/$label.holderr")"
}
release_circuits() { kill "$holder" 2> /dev/null; wait "$holder" 2> /dev/null; }

# download LABEL HOP...: N concurrent downloads over HOP..., all intact.
download() {
    local label=$1 i pids=()
    shift
    for i in $(seq "$N"); do
        "$CIRCTEST" --timeout 120 --nodes "$nodes" --begin "127.0.0.1:$hport" \
            --get /file --out "$net/$label-$i.out" "$@" 2> "$net/$label-$i.err" &
        pids+=($!)
    done
    for i in $(seq "$N"); do
        wait "${pids[$((i - 1))]}" || it_fail "$label: download $i failed: $(tail -3 "$net/$label-$i.err")"
        [ "$(sha256sum < "$net/$label-$i.out" | cut -d' ' -f1)" = "$want" ] ||
            it_fail "$label: download $i corrupted"
        rm -f "$net/$label-$i.out"
    done
    it_log "$label: $N downloads, sha256 ok"
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
hold_circuits pctcp "$P1" "$P2" "$P3"
expect_conns p1 p2 "$N" "PerCircuitTCP on"
expect_conns p2 p3 "$N" "PerCircuitTCP on"
release_circuits
expect_conns p2 p3 0 "after the circuits closed"
expect_conns p1 p2 0 "after the circuits closed"
grep -q "its circuit closed (PerCircuitTCP)" "$(cat "$net/p2.dir")/info.log" ||
    it_fail "p2 did not log closing per-circuit connections"
download pctcp "$P1" "$P2" "$P3"

# 2. p4 has PerCircuitTCP 0: one shared connection to p3.
hold_circuits shared "$P1" "$P4" "$P3"
expect_conns p1 p4 "$N" "PerCircuitTCP on at p1"
expect_conns p4 p3 1 "PerCircuitTCP off at p4"
release_circuits

# 3. The threshold, set by SIGHUP.
d2=$(cat "$net/p2.dir")
echo "PerCircuitTCPMaxConnections 2" >> "$d2/torrc"
kill -HUP "$(pid_of p2)"
it_wait_until 10 grep -q "spare(s) per relay, up to 2$" "$d2/info.log" || it_fail "p2 did not apply the new limit"
hold_circuits limit "$P1" "$P2" "$P3"
expect_conns p1 p2 "$N" "limit at p2 only"
expect_conns p2 p3 2 "PerCircuitTCPMaxConnections 2"
release_circuits
grep -q "new circuits share the quietest existing connection" "$d2/info.log" ||
    it_fail "p2 did not say it multiplexed over the limit"
download limit "$P1" "$P2" "$P3"
sed -i '/^PerCircuitTCPMaxConnections/d' "$d2/torrc"
kill -HUP "$(pid_of p2)"
sleep 1

# 4. tor 0.4.9 as the next hop of per-circuit connections (and as the
# previous hop of p3).
hold_circuits tornext "$P1" "$P2" relay1 "$P3"
expect_conns p2 relay1 "$N" "tor relay as the next hop"
release_circuits
expect_conns p2 relay1 0 "after the circuits through tor closed"
download tornext "$P1" "$P2" relay1 "$P3"

# 5. Spare connections: with PerCircuitTCPSpares 2, a circuit through p2
# leaves 2 ready connections to p3, and the next circuit takes one.
sed -i 's/^PerCircuitTCPSpares 0/PerCircuitTCPSpares 2/' "$d2/torrc"
kill -HUP "$(pid_of p2)"
it_wait_until 10 grep -q "2 spare(s) per relay" "$d2/info.log" || it_fail "p2 did not apply PerCircuitTCPSpares 2"
N=1
hold_circuits spare1 "$P1" "$P2" "$P3"
expect_conns p2 p3 3 "one circuit and two spares"
release_circuits
expect_conns p2 p3 2 "spares after the circuit closed"
hold_circuits spare2 "$P1" "$P2" "$P3"
release_circuits
kill -USR1 "$(pid_of p2)"
it_wait_until 10 grep -q "spares ([1-9][0-9]* used)" "$d2/info.log" ||
    it_fail "p2's second circuit did not use a spare: $(grep 'Statistics: PerCircuitTCP' "$d2/info.log")"
it_log "$(grep -o 'PerCircuitTCP opened.*used)' "$d2/info.log" | tail -1)"

it_pctor_alive_quiet "$net" p1 p2 p3 p4
it_log "PerCircuitTCP checks passed"
