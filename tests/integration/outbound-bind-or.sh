#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# outbound-bind-or.sh -- OutboundBindAddressOR alone, and OutboundBindAddress
# as its fallback, for a relay's connections to other relays.
#
# tor never binds a connection to a loopback destination, so the other
# relay q listens in a network namespace this test creates (it_veth_ns:
# q at .2, the host side of the veth holds .1 and .3). Two pctor relays on
# the host, pa with only "OutboundBindAddressOR .3" and pb with only
# "OutboundBindAddress .3", each extend a circuit (pctor-circtest) to q.
# Unbound, a connection to q would leave from .1 (the kernel's choice,
# checked first), so .3 can only come from the option:
#   1. pa's connection to q leaves from .3: the host's socket (ss, by
#      pa's PID) and q's side (ss in the namespace) agree;
#   2. pb's too (the general option applies to relay connections when
#      there is no OutboundBindAddressOR); q never sees a peer at .1;
#   3. each logs the address its relay connections originate from.
# Needs root and ip netns (skipped without them).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
[ -x "$PCTOR" ] && [ -x "$CIRCTEST" ] || it_skip "pctor or pctor-circtest is not built"
command -v ss > /dev/null || it_skip "ss (iproute2) is not installed"
it_veth_ns pbo 232

it_net_start --authorities 1 --relays 0 --exit-relays 0

# q, in the namespace: reachable only at ${sub}2.
read -r qnode qport _ _ < <(it_privnet reserve "$net" --role pctor --nickname q) ||
    it_fail "reserve failed"
qd=$net/$qnode
cat > "$qd/torrc" <<EOT
DataDirectory $qd/data
ORPort ${sub}2:$qport
Address ${sub}2
PublishServerDescriptor 0
AssumeReachable 1
Nickname q
Log info file $qd/info.log
TestingTorNetwork 1
$(cat "$net/dirauth.torrc")
EOT
ip netns exec "$NS" "$PCTOR" -f "$qd/torrc" > "$qd/stderr" 2>&1 &
echo $! > "$qd/pid"
it_register_pid "$(cat "$qd/pid")" || it_fail "q did not start: $(cat "$qd/stderr")"
it_wait_until 30 sh -c "ip netns exec $NS ss -ltn | grep -q '${sub}2:$qport '" ||
    it_fail "q does not listen on ${sub}2:$qport: $(tail -3 "$qd/stderr")"

it_start_pctor "$net" pa relay "PublishServerDescriptor 0
OutboundBindAddressOR ${sub}3"
it_start_pctor "$net" pb relay "PublishServerDescriptor 0
OutboundBindAddress ${sub}3"
da=$(cat "$net/pa.dir")
db=$(cat "$net/pb.dir")
grep -q "Relay connections originate from ${sub}3" "$da/info.log" ||
    it_fail "pa does not log its relay bind address"
grep -q "Outgoing connections originate from ${sub}3" "$db/info.log" ||
    it_fail "pb does not log its bind address"
it_log "3: pa: relay connections from ${sub}3; pb: all outgoing connections from ${sub}3"
ip route get "${sub}2" | grep -q "src ${sub}1 " ||
    it_fail "unbound connections to q would not leave from ${sub}1: $(ip route get "${sub}2")"

# from NICK: the local address of NICK's established connection to q.
from() {
    ss -tnpH state established "( dport = :$qport )" |
        awk -v pid="pid=$(cat "$(cat "$net/$1.dir")/pid")," -v q="${sub}2:$qport" \
            'index($0, pid) && $4 == q { sub(/:[0-9]+$/, "", $3); print $3 }' | head -1
}
# q's view: the addresses of its established peers.
peers() {
    ip netns exec "$NS" ss -tnH state established "( sport = :$qport )" |
        awk '{ sub(/:[0-9]+$/, "", $4); print $4 }' | sort -u | tr '\n' ' '
}
qhop="pctor:$qd/data@${sub}2:$qport"
n=0
for nick in pa pb; do
    n=$((n + 1))
    want=${sub}3
    "$CIRCTEST" --timeout 60 "$(it_pctor_hop "$net" "$nick")" "$qhop" \
        > "$net/circ-$nick.out" 2>&1 ||
        it_fail "no circuit $nick -> q: $(tail -3 "$net/circ-$nick.out"); $(tail -3 "$(cat "$net/$nick.dir")/info.log")"
    got=$(from "$nick")
    [ "$got" = "$want" ] ||
        it_fail "$nick's connection to q leaves from '$got', not $want: $(ss -tnpH state established "( dport = :$qport )")"
    [ "$(peers)" = "$want " ] || it_fail "q sees peers at $(peers), not only at $want"
    it_log "$n: $nick's connection to q leaves from $want (q sees: $(peers))"
done
for d in "$da" "$db" "$qd"; do
    kill -0 "$(cat "$d/pid")" || it_fail "a relay died: $(tail -3 "$d/info.log")"
done
exit 0
