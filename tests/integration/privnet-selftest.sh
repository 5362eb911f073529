#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# privnet-selftest.sh -- checks scripts/pctor-privnet against real tor 0.4.9.
#
# Starts a private network (1 authority and 2 relays by default: the fastest
# layout that bootstraps reliably; PRIVNET_SELFTEST_AUTHORITIES=3 for three),
# waits for a consensus that lists every relay as Running on every node, checks
# that nodes.txt and dirauth.torrc are well formed and agree with each relay's
# own server descriptor (fetched from its DirPort), then stops the network and
# checks that no tor process is left and that stop is idempotent.
# With PRIVNET_SELFTEST_CLIENT=1 it also starts a tor client (add-client) and
# fetches a file from a local HTTP server through a 3-hop circuit (about 15 s
# more).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor

AUTHS=${PRIVNET_SELFTEST_AUTHORITIES:-1}
RELAYS=2
NODES=$((AUTHS + RELAYS))
net=$(it_tmpdir)/net

t0=$(date +%s%N)
it_privnet_start "$net" --authorities "$AUTHS" --relays "$RELAYS" --exit-relays 1 \
    --base-port auto || it_fail "pctor-privnet start failed"
t1=$(date +%s%N)
it_privnet wait "$net" --timeout 120 || it_fail "no consensus listing every relay"
t2=$(date +%s%N)
it_log "start $(((t1 - t0) / 1000000)) ms, start+wait $(((t2 - t0) / 1000000)) ms" \
    "($AUTHS authorities, $RELAYS relays)"
it_privnet wait "$net" --timeout 60 --everywhere --flags Running,Valid ||
    it_fail "the relays' own consensus does not list every relay"

# --- nodes.txt ---------------------------------------------------------------
nodes=$net/nodes.txt
[ "$(grep -c . "$nodes")" = "$NODES" ] || it_fail "nodes.txt has not $NODES lines"
n_auth=0 n_exit=0 n_relay=0
while read -r nick orport dirport fp ed ntor role extra; do
    [ -z "${extra:-}" ] || it_fail "nodes.txt: extra fields in line of $nick"
    [[ $nick =~ ^[A-Za-z0-9]{1,19}$ ]] || it_fail "nodes.txt: bad nickname '$nick'"
    [[ $orport =~ ^[0-9]+$ && $dirport =~ ^[0-9]+$ ]] || it_fail "nodes.txt: bad ports for $nick"
    [[ $fp =~ ^[0-9A-F]{40}$ ]] || it_fail "nodes.txt: bad RSA fingerprint '$fp' for $nick"
    [[ $ed =~ ^[A-Za-z0-9+/]{43}$ ]] || it_fail "nodes.txt: bad ed25519 id '$ed' for $nick"
    [[ $ntor =~ ^[A-Za-z0-9+/]{43}$ ]] || it_fail "nodes.txt: bad ntor key '$ntor' for $nick"
    case $role in
        authority) n_auth=$((n_auth + 1)) ;;
        exit) n_exit=$((n_exit + 1)) ;;
        relay) n_relay=$((n_relay + 1)) ;;
        *) it_fail "nodes.txt: bad role '$role' for $nick" ;;
    esac

    # The relay's own descriptor must carry the same identities and ntor key.
    desc=$(curl -sf --max-time 10 "http://127.0.0.1:$dirport/tor/server/authority") ||
        it_fail "cannot fetch /tor/server/authority from $nick's DirPort $dirport"
    first=$(printf '%s\n' "$desc" | head -n1)
    [ "$first" = "router $nick 127.0.0.1 $orport 0 $dirport" ] ||
        [ "$first" = "router $nick 127.0.0.1 $orport 0 0" ] ||
        it_fail "$nick: descriptor starts with '$first'"
    spaced=$(printf '%s' "$fp" | sed 's/..../& /g; s/ $//')
    printf '%s\n' "$desc" | grep -qx "fingerprint $spaced" ||
        it_fail "$nick: descriptor fingerprint differs from nodes.txt ($fp)"
    # (base64 has '+' and '/': compare as fixed strings, padding ignored)
    desc_ed=$(printf '%s\n' "$desc" | awk '$1 == "master-key-ed25519" { print $2 }' | tr -d =)
    [ "$desc_ed" = "$ed" ] ||
        it_fail "$nick: descriptor master-key-ed25519 $desc_ed, nodes.txt $ed"
    desc_ntor=$(printf '%s\n' "$desc" | awk '$1 == "ntor-onion-key" { print $2 }' | tr -d =)
    [ "$desc_ntor" = "$ntor" ] ||
        it_fail "$nick: descriptor ntor-onion-key $desc_ntor, nodes.txt $ntor"
    printf '%s\n' "$desc" | tail -n1 | grep -qx -- '-----END SIGNATURE-----' ||
        it_fail "$nick: descriptor does not end with a signature"
done < "$nodes"
[ "$n_auth" = "$AUTHS" ] && [ "$n_exit" = 1 ] && [ "$n_relay" = $((RELAYS - 1)) ] ||
    it_fail "nodes.txt roles: $n_auth authorities, $n_exit exits, $n_relay relays"

# --- dirauth.torrc and network.env ----------------------------------------------
[ "$(grep -c . "$net/dirauth.torrc")" = "$AUTHS" ] || it_fail "dirauth.torrc has not $AUTHS lines"
while read -r kw nick orp no2 v3 addr fp; do
    [ "$kw $no2" = "DirAuthority no-v2" ] || it_fail "dirauth.torrc: bad line for $nick"
    [[ $v3 =~ ^v3ident=[0-9A-F]{40}$ ]] || it_fail "dirauth.torrc: bad v3ident for $nick"
    grep -q "^$nick ${orp#orport=} ${addr#127.0.0.1:} $fp authority\$" <(awk '{ print $1, $2, $3, $4, $7 }' "$nodes") ||
        it_fail "dirauth.torrc line of $nick does not match nodes.txt"
done < "$net/dirauth.torrc"
( . "$net/network.env" && [ "$PRIVNET_AUTHORITIES" = "$AUTHS" ] &&
  [ "$PRIVNET_DIRAUTH_LINES" = "$(cat "$net/dirauth.torrc")" ] ) ||
    it_fail "network.env does not describe the network"
grep -qx 'nameserver 127.0.0.1' "$net/resolv.conf" || it_fail "resolv.conf is not loopback-only"
for t in "$net"/node*/torrc; do
    grep -qx 'ServerDNSDetectHijacking 0' "$t" && grep -qx "ServerDNSResolvConfFile $net/resolv.conf" "$t" &&
        grep -qx 'TestingTorNetwork 1' "$t" || it_fail "$t lacks the test-network safety options"
done

# --- status, control port ----------------------------------------------------------
status=$(it_privnet status "$net") || it_fail "pctor-privnet status failed"
[ "$(printf '%s\n' "$status" | grep -c ' running ')" = "$NODES" ] ||
    it_fail "status does not show $NODES running nodes: $status"
it_privnet ctl "$net" node0 'GETINFO version' | grep -q '^250-version=' ||
    it_fail "ctl GETINFO version failed"

# --- optional: a tor client through the network ------------------------------------
if [ "${PRIVNET_SELFTEST_CLIENT:-0}" = 1 ]; then
    read -r _ socks _ < <(it_privnet add-client "$net") || it_fail "add-client failed"
    read -r _ webport _ < <(it_privnet reserve "$net" --role http) || it_fail "reserve failed"
    web=$(it_tmpdir)
    echo "hello through tor $$" > "$web/hello.txt"
    it_http_server "$web" "$webport"
    it_privnet wait-client "$net" client$NODES --timeout 90 || it_fail "the client did not bootstrap"
    got=$(curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$socks" \
        "http://127.0.0.1:$webport/hello.txt") || it_fail "fetch through the client failed"
    [ "$got" = "hello through tor $$" ] || it_fail "fetched '$got'"
    it_log "client fetched a file through the network"
fi

# --- stop ---------------------------------------------------------------------------
pids=$(cat "$net"/node*/pid)
[ "$(echo $pids | wc -w)" -ge "$NODES" ] || it_fail "not every node recorded a pid"
it_privnet stop "$net" || it_fail "stop failed"
for pid in $pids; do
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$net/"; then
        it_fail "process $pid still runs after stop"
    fi
done
it_privnet stop "$net" || it_fail "a second stop failed"
it_privnet status "$net" | grep -q ' running ' && it_fail "status shows running nodes after stop"
# --- port blocks ---------------------------------------------------------------------
# An auto block stays its network's while one of the network's processes
# runs, even when none of its ports listens: a network started then must
# take another block.
net2=$(it_tmpdir)/net
it_privnet_start "$net2" --authorities 1 --relays 0 --base-port auto > /dev/null 2>&1 ||
    it_fail "pctor-privnet start (second network) failed"
base2=$(cat "$net2/base-port")
read -r hnode _ < <(it_privnet reserve "$net2" --role pctor --nickname holder) ||
    it_fail "reserve failed"
: > "$net2/$hnode/holder.log"
tail -f "$net2/$hnode/holder.log" > /dev/null 2>&1 &
echo $! > "$net2/$hnode/pid"
it_register_pid "$(cat "$net2/$hnode/pid")"
apid=$(cat "$net2/node0/pid")
kill "$apid"
it_wait_until 20 bash -c "! kill -0 $apid 2>/dev/null" || it_fail "the second network's authority did not exit"
net3=$(it_tmpdir)/net
it_privnet_start "$net3" --authorities 1 --relays 0 --base-port auto > /dev/null 2>&1 ||
    it_fail "pctor-privnet start (third network) failed"
base3=$(cat "$net3/base-port")
[ "$base3" != "$base2" ] ||
    it_fail "a new network took port block $base2 while a process of its network still ran"
it_privnet stop "$net3" > /dev/null 2>&1
it_privnet stop "$net2" > /dev/null 2>&1
it_log "port blocks: block $base2 stayed taken while its network had a process but no listener (the next network got $base3)"

it_log "pass ($(((t2 - t0) / 1000000)) ms to a consensus)"
exit 0
