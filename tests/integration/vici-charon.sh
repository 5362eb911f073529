#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# vici-charon.sh -- pctor's VICI client and charon tooling against real
# strongSwan charons with kernel-libipsec, in two network namespaces.
#
# Two namespaces A and B on a veth pair, one charon each started with
# scripts/pctor-charon (private /run, own VICI socket, libipsec template).
# pctor-vici (built on feature/ipsec/vici_client) loads an Ed25519 IKE key
# into each charon and a host-to-host connection whose IDs are the relays'
# Ed25519 identities ("@#<64 hex>") and whose peer key is given as a public
# key; the CHILD_SA covers TCP from A to B's ORPort only. Checked:
#  - a responder expecting another key for A, and an initiator expecting
#    another key for B, both refuse the SA. The initiator never installs a
#    CHILD_SA. The responder may: in IKEv2 it verifies the initiator, installs
#    and answers before the initiator checks the responder's signature and
#    deletes the IKE_SA; that CHILD_SA must carry nothing, be gone within
#    a deadline, and leave no pctor-updown routing or nftables entry;
#  - with the right keys the CHILD_SA comes up (initiate, wait-sa, a
#    child-updown event seen by pctor-vici monitor, list-sas shows the Tor
#    identities as IKE identities);
#  - 4 MiB over TCP from A to B's ORPort arrive intact, while tcpdump on the
#    veth sees only IKE and ESP-in-UDP between the two addresses (no TCP);
#    ping still works (ipsec-conf/pctor-updown routes only that TCP into
#    ipsec0);
#  - a plaintext connection to the ORPort that bypasses the tunnel is
#    dropped by ipsec-conf/nftables-pctor-ipsec.nft;
#  - pctor-updown's fail-closed route is in table 221 while the SA is up;
#    terminate removes pctor-updown's routing (rules and table 221);
#  - killing B's charon makes pctor-vici monitor report the socket loss
#    (exit 3), and a monitor with --reconnect comes back after a restart;
#  - the VICI socket given to a group with --vici-group can be used by an
#    unprivileged member of that group, and not without it.
# Needs root, ip netns, /dev/net/tun, charon with kernel-libipsec, tcpdump,
# nft, openssl and python3; skips (77) otherwise. Namespaces are named
# after this shell's PID; addresses are in 10.201.0.0/16.

. "$(dirname "$0")/lib.sh"
set -u

CHARON=${CHARON:-}
[ -z "$CHARON" ] || [ "$CHARON" = no ] && CHARON=/usr/lib/ipsec/charon
export CHARON
VICI=${PCTOR_VICI:-${top_builddir:-$IT_TOP_SRCDIR}/src/tools/vicitest/pctor-vici}
export PCTOR_VICI=$VICI
PCHARON=$IT_TOP_SRCDIR/scripts/pctor-charon
UPDOWN=$IT_TOP_SRCDIR/ipsec-conf/pctor-updown
NFT_FILE=$IT_TOP_SRCDIR/ipsec-conf/nftables-pctor-ipsec.nft

[ "$(id -u)" = 0 ] || it_skip "needs root (network namespaces)"
[ -x "$CHARON" ] || it_skip "no charon at $CHARON (apt-get install strongswan-charon)"
ls /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so > /dev/null 2>&1 ||
    it_skip "kernel-libipsec plugin missing (apt-get install libcharon-extra-plugins)"
[ -c /dev/net/tun ] || it_skip "no /dev/net/tun"
for c in ip unshare setsid setpriv openssl tcpdump nft; do
    command -v "$c" > /dev/null 2>&1 || it_skip "$c is not installed"
done
PY=$(it_python3) || it_skip "python3 is not installed"
[ -x "$VICI" ] || it_fail "pctor-vici not built at $VICI"

NA=pv$$a NB=pv$$b
VA=pv$$a0 VB=pv$$b0
NET=10.201.$(( $$ % 250 + 1 ))
A=$NET.1 B=$NET.2
ORPORT=9001
D=$(it_tmpdir)
chmod 755 "$IT_ROOT" "$D"

vc_cleanup() {
    for h in a b; do
        [ -f "$D/$h/charon.pid" ] && "$PCHARON" stop "$D/$h" --timeout 5 > /dev/null 2>&1
    done
    ip netns del "$NA" 2> /dev/null
    ip netns del "$NB" 2> /dev/null
}
trap 'rc=$?; vc_cleanup; (exit $rc); it_cleanup' EXIT

ip netns add "$NA" 2> /dev/null || it_skip "cannot create network namespaces here"
ip netns add "$NB" || it_fail "ip netns add $NB"
ip link add "$VA" type veth peer name "$VB" || it_fail "cannot create a veth pair"
ip link set "$VA" netns "$NA" && ip link set "$VB" netns "$NB" || it_fail "veth into netns"
ip -n "$NA" addr add "$A/24" dev "$VA" && ip -n "$NB" addr add "$B/24" dev "$VB" ||
    it_fail "addresses"
for n in "$NA" "$NB"; do ip -n "$n" link set lo up; done
ip -n "$NA" link set "$VA" up && ip -n "$NB" link set "$VB" up || it_fail "links up"
ip netns exec "$NA" ping -c1 -W2 "$B" > /dev/null || it_fail "no connectivity on the veth"

# B drops plaintext TCP to its ORPort from IPsec peers.
ip netns exec "$NB" nft -D "ORPORT=$ORPORT" -f "$NFT_FILE" || it_fail "cannot load $NFT_FILE"

# ---- two charons ----
t0=$(date +%s.%N)
for h in a b; do
    ns=$NA; [ $h = b ] && ns=$NB
    it_run "$PCHARON" start "$D/$h" --netns "$ns" --timeout 20 > "$D/start-$h.out" 2>&1 ||
        { cat "$D/start-$h.out" >&2; it_fail "pctor-charon start $h failed"; }
    read -r pid _ < "$D/$h/charon.pid"
    it_register_pid "$pid"
    [ "$(cat /proc/"$pid"/comm)" = charon ] || it_fail "pid file of $h does not name charon"
done
t1=$(date +%s.%N)
it_log "both charons answer on VICI after $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s (started one after the other)"
"$PCHARON" status "$D/a" > /dev/null || it_fail "pctor-charon status a"
SA=$D/a/charon.vici SB=$D/b/charon.vici
"$VICI" -s "$SA" version | grep -q '^charon 5\.' || it_fail "version: $("$VICI" -s "$SA" version 2>&1)"

# ---- keys: Tor identities (the IKE IDs) and separate Ed25519 IKE keys ----
idhex() { openssl pkey -in "$1" -pubout -outform DER | tail -c 32 | od -An -tx1 | tr -d ' \n'; }
colons() { echo "$1" | sed 's/../&:/g; s/:$//'; }
for k in a/id a/ike b/id b/ike wrong; do
    mkdir -p "$D/$(dirname "$k")"
    openssl genpkey -algorithm ed25519 -out "$D/$k.key" 2> /dev/null || it_fail "openssl genpkey"
    openssl pkey -in "$D/$k.key" -pubout -out "$D/$k.pub" || it_fail "openssl pkey -pubout"
done
IDA=$(idhex "$D/a/id.key") IDB=$(idhex "$D/b/id.key")
[ ${#IDA} = 64 ] && [ ${#IDB} = 64 ] || it_fail "cannot compute identity hex"
"$VICI" -s "$SA" load-key "$D/a/ike.key" | grep -q '^loaded key [0-9a-f]\{40\}$' || it_fail "load-key a"
"$VICI" -s "$SB" load-key "$D/b/ike.key" | grep -q '^loaded key ' || it_fail "load-key b"

# conn_a REMOTE_PUB / conn_b REMOTE_PUB: the connection each side loads.
conn_a() {
    "$VICI" -s "$SA" load-conn peer-b --local-addr "$A" --remote-addr "$B" \
        --local-id "@#$IDA" --remote-id "@#$IDB" --local-pubkey "$D/a/ike.pub" \
        --remote-pubkey "$1" --remote-port "$ORPORT" --updown "$UPDOWN libipsec" > /dev/null ||
        it_fail "load-conn on a"
}
conn_b() {
    "$VICI" -s "$SB" load-conn peer-a --local-addr "$B" --remote-addr "$A" \
        --local-id "@#$IDB" --remote-id "@#$IDA" --local-pubkey "$D/b/ike.pub" \
        --remote-pubkey "$1" --local-port "$ORPORT" --updown "$UPDOWN libipsec" > /dev/null ||
        it_fail "load-conn on b"
}
no_child_sa() {
    ! "$VICI" -s "$1" list-sas | grep -q 'state = INSTALLED'
}
# After a refused key: the initiator (A) has no CHILD_SA at all. The
# responder (B) may briefly have one (see the top of the file): if so, it
# has carried no traffic, and it must be torn down within 15 s, together
# with the routing and nftables entry its updown made. LABEL names the case.
refused_cleanly() {
    no_child_sa "$SA" || it_fail "$1: the initiator installed a CHILD_SA"
    if ! no_child_sa "$SB"; then
        "$VICI" -s "$SB" list-sas > "$D/refused-sas.out"
        if grep -q 'bytes-in = [1-9]' "$D/refused-sas.out"; then
            it_fail "$1: the responder's CHILD_SA carried traffic: $(grep bytes- "$D/refused-sas.out")"
        fi
        it_log "$1: the responder installed a CHILD_SA before the initiator refused; waiting for its removal"
        it_wait_until 15 no_child_sa "$SB" ||
            it_fail "$1: the responder's CHILD_SA outlived the refusal by 15 s"
    fi
    it_wait_until 10 sh -c "! ip -n $NB rule | grep -q 'lookup 221'" ||
        it_fail "$1: routing rule left on b"
    it_wait_until 10 sh -c "[ -z \"\$(ip -n $NB route show table 221 2> /dev/null)\" ]" ||
        it_fail "$1: routes left in table 221 on b: $(ip -n "$NB" route show table 221)"
    it_wait_until 10 sh -c "! ip netns exec $NB nft list set inet pctor_ipsec ipsec_peers4 | grep -q elements" ||
        it_fail "$1: A left in b's nftables set"
    ! ip -n "$NA" rule | grep -q 'lookup 221' || it_fail "$1: routing rule on a"
}

# ---- wrong keys are refused, on either side ----
conn_a "$D/b/ike.pub"
conn_b "$D/wrong.pub"     # B expects another key for A
"$VICI" -s "$SA" initiate peer-b --timeout 5000 > "$D/init-wrong1.out" 2>&1
rc=$?
[ $rc = 1 ] || it_fail "initiate with a key B does not expect: exit $rc, $(tail -3 "$D/init-wrong1.out")"
grep -q "AUTHENTICATION_FAILED" "$D/init-wrong1.out" || it_fail "no AUTH_FAILED: $(cat "$D/init-wrong1.out")"
grep -q "signature validation failed" "$D/b/charon.log" || it_fail "B did not reject A's signature"
refused_cleanly "B refusing A's key"
conn_a "$D/wrong.pub"     # A expects another key for B
conn_b "$D/a/ike.pub"
"$VICI" -s "$SA" initiate peer-b --timeout 5000 > "$D/init-wrong2.out" 2>&1
rc=$?
[ $rc = 1 ] || it_fail "initiate expecting another key for B: exit $rc"
it_wait_until 5 grep -q "signature validation failed" "$D/a/charon.log" ||
    it_fail "A did not reject B's signature"
refused_cleanly "A refusing B's key"
it_log "wrong public keys refused on both sides"

# ---- the right keys ----
conn_a "$D/b/ike.pub"
"$VICI" -s "$SB" get-conns | grep -qx peer-a || it_fail "get-conns on b"
"$VICI" -s "$SB" monitor --count 2 > "$D/mon-up.out" 2>&1 &
mpid=$!
it_register_pid "$mpid"
it_wait_until 5 grep -q '^registered' "$D/mon-up.out" || it_fail "monitor did not register"
ti0=$(date +%s%N)
"$VICI" -s "$SA" initiate peer-b --timeout 5000 > "$D/init.out" 2>&1 ||
    it_fail "initiate: $(tail -5 "$D/init.out")"
ti1=$(date +%s%N)
"$VICI" -s "$SA" wait-sa peer-b --timeout 5000 > /dev/null || it_fail "no CHILD_SA on a"
ti2=$(date +%s%N)
"$VICI" -s "$SB" wait-sa peer-a --timeout 5000 > /dev/null || it_fail "no CHILD_SA on b"
it_log "initiate (IKE_SA_INIT + IKE_AUTH, CHILD_SA installed): $(( (ti1 - ti0) / 1000000 )) ms; wait-sa confirmed it in $(( (ti2 - ti1) / 1000000 )) ms"
grep -q "TS $A/32\[tcp\] === $B/32\[tcp/$ORPORT\]" "$D/init.out" ||
    it_fail "unexpected traffic selectors: $(grep 'CHILD_SA' "$D/init.out")"
wait "$mpid" || it_fail "monitor on b: exit $? ($(cat "$D/mon-up.out"))"
grep -q '^.* event child-updown:' "$D/mon-up.out" || it_fail "no child-updown event: $(cat "$D/mon-up.out")"
grep -q '^  up = yes' "$D/mon-up.out" || grep -q '^up = yes' "$D/mon-up.out" ||
    it_fail "child-updown without up = yes"
"$VICI" -s "$SA" list-sas peer-b > "$D/sas.out" || it_fail "list-sas"
grep -q "remote-id = $(colons "$IDB")" "$D/sas.out" || it_fail "remote-id is not B's identity: $(grep id "$D/sas.out")"
grep -q "local-id = $(colons "$IDA")" "$D/sas.out" || it_fail "local-id is not A's identity"
grep -q "state = INSTALLED" "$D/sas.out" || it_fail "list-sas: no INSTALLED child"
grep -q "encr-alg = AES_GCM_16" "$D/sas.out" || it_fail "list-sas: not AES-GCM"
ip -n "$NA" rule | grep -q "to $B ipproto tcp dport $ORPORT lookup 221" || it_fail "pctor-updown did not route on a"
ip -n "$NB" rule | grep -q "to $A ipproto tcp sport $ORPORT lookup 221" || it_fail "pctor-updown did not route on b"
ip -n "$NA" route show table 221 | grep -q "^unreachable $B " ||
    it_fail "no fail-closed route in table 221 on a: $(ip -n "$NA" route show table 221)"
ip netns exec "$NB" nft list set inet pctor_ipsec ipsec_peers4 | grep -q "$A" ||
    it_fail "pctor-updown did not add A to the nftables set"

# ---- data through the tunnel; only IKE/ESP on the wire ----
cat > "$D/xfer.py" <<'EOF'
import hashlib, os, socket, sys
if sys.argv[1] == "serve":
    addr, port, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    open(out + ".ready", "w").close()
    c, _ = s.accept()
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
    open(out, "w").write("%d %s\n" % (n, h.hexdigest()))
else:
    addr, port, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mark = int(sys.argv[5], 0) if len(sys.argv) > 5 else 0
    data = os.urandom(size)
    s = socket.socket()
    if mark:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
    s.settimeout(3)
    s.connect((addr, port))
    s.sendall(data)
    s.close()
    print("%d %s" % (size, hashlib.sha256(data).hexdigest()))
EOF
ip netns exec "$NA" tcpdump -i "$VA" -n -U -w "$D/cap.pcap" > "$D/tcpdump.out" 2>&1 &
tpid=$!
it_register_pid "$tpid"
it_wait_until 5 grep -q "listening on" "$D/tcpdump.out" || it_fail "tcpdump did not start"
ip netns exec "$NB" "$PY" "$D/xfer.py" serve "$B" "$ORPORT" "$D/rx" &
spid=$!
it_register_pid "$spid"
it_wait_until 5 test -e "$D/rx.ready" || it_fail "receiver did not start"
ip netns exec "$NA" "$PY" "$D/xfer.py" send "$B" "$ORPORT" 4194304 > "$D/tx" ||
    it_fail "sending through the tunnel failed"
wait "$spid" || it_fail "receiver failed"
[ "$(cat "$D/tx")" = "$(cat "$D/rx")" ] || it_fail "data differ: sent $(cat "$D/tx"), got $(cat "$D/rx")"
sleep 0.3
kill -INT "$tpid"
wait "$tpid"
total=$(tcpdump -r "$D/cap.pcap" -n "host $A and host $B" 2> /dev/null | wc -l)
tcp=$(tcpdump -r "$D/cap.pcap" -n "tcp" 2> /dev/null | wc -l)
esp=$(tcpdump -r "$D/cap.pcap" -n "host $A and host $B and udp port 4500" 2> /dev/null | wc -l)
other=$(tcpdump -r "$D/cap.pcap" -n "host $A and host $B and not (udp port 500 or udp port 4500 or ip proto 50)" 2> /dev/null | wc -l)
it_log "capture: $total packets between the relays, $esp ESP-in-UDP, $tcp TCP, $other other"
[ "$tcp" = 0 ] || it_fail "plain TCP on the wire: $(tcpdump -r "$D/cap.pcap" -n tcp 2>/dev/null | head -3)"
[ "$other" = 0 ] || it_fail "non-IKE/ESP packets on the wire"
[ "$esp" -gt 2000 ] || it_fail "too few ESP packets ($esp) for 4 MiB"
"$VICI" -s "$SA" list-sas peer-b | grep -q 'bytes-out = [1-9][0-9]\{6,\}' ||
    it_fail "the SA's byte counter did not grow"
ip netns exec "$NA" ping -c1 -W2 "$B" > /dev/null || it_fail "ping is blackholed while the SA is up"

# ---- a plaintext connection bypassing the tunnel is dropped by B ----
ip -n "$NA" rule add fwmark 0x43 lookup main pref 90 || it_fail "ip rule"
ip netns exec "$NB" "$PY" "$D/xfer.py" serve "$B" "$ORPORT" "$D/rx2" &
spid=$!
it_register_pid "$spid"
it_wait_until 5 test -e "$D/rx2.ready" || it_fail "receiver 2 did not start"
if ip netns exec "$NA" "$PY" "$D/xfer.py" send "$B" "$ORPORT" 1000 0x43 > /dev/null 2>&1; then
    it_fail "a plaintext connection to the ORPort was accepted while the SA is up"
fi
ip netns exec "$NB" nft list chain inet pctor_ipsec input | grep -q 'ipsec_peers4 counter packets [1-9]' ||
    it_fail "the nftables filter did not count the dropped SYNs"
# The tunnel still works for the receiver.
ip netns exec "$NA" "$PY" "$D/xfer.py" send "$B" "$ORPORT" 100000 > "$D/tx2" || it_fail "tunnel after bypass"
wait "$spid"
[ "$(cat "$D/tx2")" = "$(cat "$D/rx2")" ] || it_fail "data 2 differ"
it_log "plaintext bypass dropped; tunnel still carries data"

# ---- terminate removes the routing ----
"$VICI" -s "$SA" terminate peer-b > "$D/term.out" || it_fail "terminate: $(cat "$D/term.out")"
grep -q "terminated 1" "$D/term.out" || it_fail "terminate did not terminate: $(cat "$D/term.out")"
it_wait_until 5 sh -c "! ip -n $NA rule | grep -q 'lookup 221'" || it_fail "routing rule left on a"
it_wait_until 5 sh -c "! ip -n $NB rule | grep -q 'lookup 221'" || it_fail "routing rule left on b"
it_wait_until 5 sh -c "[ -z \"\$(ip -n $NA route show table 221 2> /dev/null)\" ]" ||
    it_fail "routes left in table 221 on a: $(ip -n "$NA" route show table 221)"
it_wait_until 5 sh -c "! ip netns exec $NB nft list set inet pctor_ipsec ipsec_peers4 | grep -q elements" ||
    it_fail "A still in the nftables set after terminate"

# ---- an unprivileged member of the socket's group ----
if setpriv --reuid=65534 --regid=65534 --clear-groups "$VICI" -s "$SB" version > /dev/null 2>&1; then
    it_fail "an unprivileged user could use charon's VICI socket"
fi
chgrp 65534 "$SB" && chmod 0660 "$SB" || it_fail "chgrp socket"
setpriv --reuid=65534 --regid=65534 --clear-groups "$VICI" -s "$SB" version > /dev/null ||
    it_fail "a member of the socket's group cannot use it"

# ---- charon goes away: the client notices; it comes back ----
"$VICI" -s "$SB" monitor > "$D/mon-lost.out" 2>&1 &
m1=$!
it_register_pid "$m1"
"$VICI" -s "$SB" monitor --reconnect > "$D/mon-re.out" 2>&1 &
m2=$!
it_register_pid "$m2"
it_wait_until 5 grep -q '^registered' "$D/mon-lost.out" || it_fail "monitor 1 did not register"
it_wait_until 5 grep -q '^registered' "$D/mon-re.out" || it_fail "monitor 2 did not register"
read -r bpid _ < "$D/b/charon.pid"
kill -KILL "$bpid"
wait "$m1"
rc=$?
[ $rc = 3 ] || it_fail "monitor exit status $rc after charon died, not 3"
grep -q '^connection lost: closed by charon' "$D/mon-lost.out" ||
    it_fail "monitor did not report the loss: $(cat "$D/mon-lost.out")"
# (monitor 2 notices on its own schedule: monitor 1 exiting says nothing
# about it.)
it_wait_until 5 grep -q '^connection lost' "$D/mon-re.out" ||
    it_fail "monitor --reconnect did not report the loss: $(cat "$D/mon-re.out")"
# The socket closes a moment before the process is gone.
gone() { ! grep -qs '^State:[[:space:]]*[^Z[:space:]]' "/proc/$1/status"; }
it_wait_until 5 gone "$bpid" || it_fail "charon b did not die"
it_run "$PCHARON" start "$D/b" --netns "$NB" --vici-group 65534 > "$D/start-b2.out" 2>&1 ||
    it_fail "restarting charon b: $(cat "$D/start-b2.out")"
read -r pid _ < "$D/b/charon.pid"
it_register_pid "$pid"
it_wait_until 10 sh -c "[ \$(grep -c '^connected to' '$D/mon-re.out') -ge 2 ]" ||
    it_fail "monitor --reconnect did not reconnect: $(cat "$D/mon-re.out")"
setpriv --reuid=65534 --regid=65534 --clear-groups "$VICI" -s "$SB" version > /dev/null ||
    it_fail "--vici-group did not give the socket to the group"
# The restarted charon forgot the VICI-loaded credentials and connections.
[ -z "$("$VICI" -s "$SB" get-conns)" ] || it_fail "restarted charon still has connections"
kill "$m2"
it_log "socket loss reported; reconnection after restart"
exit 0
