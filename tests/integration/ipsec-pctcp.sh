#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ipsec-pctcp.sh -- PerCircuitTCP inside IPsec brokered by pctor itself
# (feature/ipsec/broker.h): two pctor relays in two network namespaces,
# each with its own charon (kernel-libipsec), find each other over their
# Tor link, set up IPsec authenticated by their Ed25519 identities, and
# carry per-circuit TCP connections only inside ESP.
#
# Topology (three namespaces made here, in 10.N.0.0/16, N = 160 + $$ % 40):
#   A (relay pa, charon)  ----- 10.N.1.0/24 -----  B (relay pb, charon)
#        \ 10.N.2.0/24                          / 10.N.3.0/24
#         C: tor authority, tor relay "mid", pctor exit p3, web server,
#            pctor-circtest
#            (services on 10.N.9.1, C's loopback; A and B route to
#             it through C, C routes to A's and B's relay addresses)
# Both relays have PerCircuitTCP 1 and IPsec 1, their charons (started by
# scripts/pctor-charon) run pctor-updown libipsec through "pctor-vici
# updown" -- pctor sends charon no updown command (issue 14) -- and the
# nftables input filter (ipsec-conf/) is loaded; they
# publish their descriptors to the authority, since a relay brokers IPsec
# only with relays its consensus lists (issue 14). Circuits are
# pa -> pb -> mid -> p3 (a tor relay after pb, so that a tor 0.4.9
# receives pb's announcements). Checked:
#  - the first circuit makes the relays announce IPsec to each other; the
#    SA comes up without any manual step, with the Tor identities as IKE
#    identities (pctor-vici list-sas);
#  - tor 0.4.9 (mid) ignores the announcement cell pb sends it
#    ("Variable-length cell of unknown type (240)" at info), keeps the
#    link and carries the circuits; with IPsec 1, pb shares one connection
#    to it (it offers no IPsec);
#  - N concurrent downloads: N per-circuit connections pa -> pb, data
#    intact, and a capture on the A-B veth shows only IKE and ESP between
#    the relay addresses (no TCP);
#  - forged announcements (another relay's IKE key with our certificates;
#    another relay's certificate chain) are refused and nothing is loaded
#    for them; the same tool's genuine announcement is verified but refused
#    too, because the consensus does not list the tool's identity;
#  - the trust rules (issue 14): identities the consensus does not list,
#    many of them from one address, are refused and at most
#    IPsecMaxPeersPerAddress (2) of them are tracked (SIGUSR1's figures);
#    pb's identity announcing another ORPort than its listed one is
#    refused; none of them gets anything loaded into charon;
#  - charon is killed during a download, first A's then B's (so both the
#    initiator's and the responder's). While it is down, with the nftables
#    filters removed from both namespaces, no plaintext TCP between the
#    relays leaves (a capture on the A-B veth; pctor-updown's fail-closed
#    route makes the relay's TCP to its peer's ORPort unreachable instead
#    of routing it in the clear once ipsec0 is gone). The relay logs it and
#    stays up,
#    keeps forwarding (a circuit from it to p3 works meanwhile), and once
#    charon is restarted it reloads its key and connection and the SA is
#    re-established by itself; the download started before the kill
#    completes intact; new circuits are per-circuit inside ESP again.
# Needs root, ip netns, /dev/net/tun, charon with kernel-libipsec, tor and
# tor-gencert, tcpdump, nft, ss, python3, and a pctor built with the IPsec
# options; skips (77) otherwise.

. "$(dirname "$0")/lib.sh"
set -u

CHARON=${CHARON:-}
[ -z "$CHARON" ] || [ "$CHARON" = no ] && CHARON=/usr/lib/ipsec/charon
export CHARON
TOP_B=${top_builddir:-$IT_TOP_SRCDIR}
PCTOR=${PCTOR:-$TOP_B/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-$TOP_B/src/tools/circtest/pctor-circtest}
VICI=${PCTOR_VICI:-$TOP_B/src/tools/vicitest/pctor-vici}
ANNOUNCE=${PCTOR_IPSEC_ANNOUNCE:-$TOP_B/src/tools/ipsectest/pctor-ipsec-announce}
export PCTOR_VICI=$VICI
PCHARON=$IT_TOP_SRCDIR/scripts/pctor-charon
UPDOWN=$IT_TOP_SRCDIR/ipsec-conf/pctor-updown
NFT_FILE=$IT_TOP_SRCDIR/ipsec-conf/nftables-pctor-ipsec.nft
N=${IPSEC_TEST_CIRCUITS:-4}

[ "$(id -u)" = 0 ] || it_skip "needs root (network namespaces)"
[ -x "$CHARON" ] || it_skip "no charon at $CHARON (apt-get install strongswan-charon)"
ls /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so > /dev/null 2>&1 ||
    it_skip "kernel-libipsec plugin missing (apt-get install libcharon-extra-plugins)"
[ -c /dev/net/tun ] || it_skip "no /dev/net/tun"
it_require_tor
for c in ip unshare setsid tcpdump nft ss sha256sum; do
    command -v "$c" > /dev/null 2>&1 || it_skip "$c is not installed"
done
PY=$(it_python3) || it_skip "python3 is not installed"
for p in "$PCTOR" "$CIRCTEST" "$VICI" "$ANNOUNCE"; do
    [ -x "$p" ] || it_fail "not built: $p"
done
"$PCTOR" --list-options 2> /dev/null | grep -q '^IPsec ' ||
    it_skip "$PCTOR has no IPsec option (src/app not wired to feature/ipsec yet)"

NA=pi$$a NB=pi$$b NC=pi$$c
X=10.$(( 160 + $$ % 40 ))
A=$X.1.1 B=$X.1.2        # the relays (their ORPorts), on the A-B veth
AC=$X.2.2 CA=$X.2.1      # A-C link
BC=$X.3.2 CB=$X.3.1      # B-C link
S=$X.9.1                 # services in C
ORPORT=9001 AUTH_OR=7000 AUTH_DIR=7030 MID_OR=7100 P3_OR=7200 WEB=8080
VAB=pi$$ab VBA=pi$$ba VAC=pi$$ac VCA=pi$$ca VBC=pi$$bc VCB=pi$$cb
D=$(it_tmpdir)
chmod 755 "$IT_ROOT" "$D"

ip_cleanup() {
    for h in ca cb; do
        [ -f "$D/$h/charon.pid" ] && "$PCHARON" stop "$D/$h" --timeout 5 > /dev/null 2>&1
    done
    for n in "$NA" "$NB" "$NC"; do ip netns del "$n" 2> /dev/null; done
}
trap 'rc=$?; ip_cleanup; (exit $rc); it_cleanup' EXIT

dump() { # on failure: the end of the logs
    for f in "$D"/pa/info.log "$D"/pb/info.log "$D"/ca/charon.log "$D"/cb/charon.log \
             "$D"/p3/info.log "$D"/mid/info.log; do
        [ -s "$f" ] && { echo "----- $f" >&2; grep -v '\[debug\]' "$f" | tail -n 25 >&2; }
    done
}
fail() { dump; it_fail "$@"; }

# ---- namespaces and links ----
ip netns add "$NA" 2> /dev/null || it_skip "cannot create network namespaces here"
ip netns add "$NB" && ip netns add "$NC" || it_fail "ip netns add"
veth() { # NAME1 NS1 ADDR1 NAME2 NS2 ADDR2
    ip link add "$1" type veth peer name "$4" &&
        ip link set "$1" netns "$2" && ip link set "$4" netns "$5" &&
        ip -n "$2" addr add "$3/24" dev "$1" && ip -n "$5" addr add "$6/24" dev "$4" &&
        ip -n "$2" link set "$1" up && ip -n "$5" link set "$4" up ||
        it_fail "veth $1-$4"
}
veth "$VAB" "$NA" "$A" "$VBA" "$NB" "$B"
veth "$VAC" "$NA" "$AC" "$VCA" "$NC" "$CA"
veth "$VBC" "$NB" "$BC" "$VCB" "$NC" "$CB"
for n in "$NA" "$NB" "$NC"; do ip -n "$n" link set lo up; done
ip -n "$NC" addr add "$S/32" dev lo || it_fail "service address"
ip -n "$NA" route add "$S/32" via "$CA" && ip -n "$NB" route add "$S/32" via "$CB" &&
    ip -n "$NC" route add "$A/32" via "$AC" && ip -n "$NC" route add "$B/32" via "$BC" ||
    it_fail "routes"
for p in "$NA:$B" "$NA:$S" "$NB:$S" "$NC:$A" "$NC:$B"; do
    ip netns exec "${p%%:*}" ping -c1 -W2 "${p#*:}" > /dev/null || it_fail "no route ${p%%:*} -> ${p#*:}"
done
in_ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
# wait_port NS HOST PORT SECONDS
wait_port() {
    local deadline=$((SECONDS + $4))
    until in_ns "$1" timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2> /dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}
# start_bg NS CMD...: start a long-running process in NS, registered for cleanup.
start_bg() {
    local n=$1
    shift
    ip netns exec "$n" "$@" &
    BGPID=$!
    it_register_pid "$BGPID"
}

# ---- IPsec plumbing: input filter and one charon per relay ----
for n in "$NA" "$NB"; do
    in_ns "$n" nft -D "ORPORT=$ORPORT" -f "$NFT_FILE" || it_fail "cannot load $NFT_FILE"
done
start_charon() { # DIR NS
    it_run "$PCHARON" start "$1" --netns "$2" --timeout 20 > "$1.start" 2>&1 ||
        { cat "$1.start" >&2; fail "pctor-charon start $1 failed"; }
    local pid
    read -r pid _ < "$1/charon.pid"
    it_register_pid "$pid"
}
start_charon "$D/ca" "$NA"
start_charon "$D/cb" "$NB"

# ---- C: a tor authority, a tor relay, a pctor exit and a web server ----
echo "nameserver 127.0.0.1" > "$D/resolv.conf"
mkdir -p "$D/auth/keys" "$D/mid" && chmod 700 "$D/auth" "$D/auth/keys" "$D/mid"
(cd "$D/auth/keys" && echo "" | "${TOR_GENCERT:-tor-gencert}" --create-identity-key -m 12 \
    -a "$S:$AUTH_DIR" --passphrase-fd 0 > "$D/auth/gencert.log" 2>&1) ||
    it_fail "tor-gencert: $(tail -3 "$D/auth/gencert.log")"
zeros=0000000000000000000000000000000000000000
cat > "$D/auth/lf.torrc" <<EOF
TestingTorNetwork 1
DirAuthority placeholder orport=1 no-v2 v3ident=$zeros 127.0.0.1:1 $zeros
DataDirectory $D/auth
Nickname auth
Address $S
ORPort $S:$AUTH_OR
Log warn stderr
EOF
"$TOR" --list-fingerprint -f "$D/auth/lf.torrc" > "$D/auth/lf.log" 2>&1 ||
    it_fail "tor --list-fingerprint: $(tail -3 "$D/auth/lf.log")"
v3=$(awk '$1 == "fingerprint" { print $2 }' "$D/auth/keys/authority_certificate")
afp=$(awk '{ print $2 }' "$D/auth/fingerprint")
DIRAUTH="DirAuthority auth orport=$AUTH_OR no-v2 v3ident=$v3 $S:$AUTH_DIR $afp"
common() {
    cat <<EOF
TestingTorNetwork 1
UseDefaultFallbackDirs 0
AssumeReachable 1
ServerDNSDetectHijacking 0
ServerDNSResolvConfFile $D/resolv.conf
SafeLogging 0
SocksPort 0
Address $S
__OwningControllerProcess $$
$DIRAUTH
EOF
}
{ common; cat <<EOF
DataDirectory $D/auth
Nickname auth
ORPort $S:$AUTH_OR
DirPort $S:$AUTH_DIR
AuthoritativeDirectory 1
V3AuthoritativeDirectory 1
TestingV3AuthInitialVotingInterval 5
TestingV3AuthInitialVoteDelay 2
TestingV3AuthInitialDistDelay 2
V3AuthVotingInterval 10
V3AuthVoteDelay 2
V3AuthDistDelay 2
ExitRelay 0
ExitPolicy reject *:*
Log notice file $D/auth/notice.log
EOF
} > "$D/auth/torrc"
{ common; cat <<EOF
DataDirectory $D/mid
Nickname mid
ORPort $S:$MID_OR
ExitRelay 0
ExitPolicy reject *:*
Log info file $D/mid/info.log
EOF
} > "$D/mid/torrc"
start_bg "$NC" "$TOR" -f "$D/auth/torrc" --quiet
start_bg "$NC" "$TOR" -f "$D/mid/torrc" --quiet
mkdir -p "$D/www"
head -c $((3 * 1024 * 1024)) /dev/urandom > "$D/www/file"
head -c $((24 * 1024 * 1024)) /dev/urandom > "$D/www/big"
want=$(sha256sum < "$D/www/file" | cut -d' ' -f1)
want_big=$(sha256sum < "$D/www/big" | cut -d' ' -f1)
(cd "$D/www" && exec ip netns exec "$NC" "$PY" -m http.server "$WEB" --bind "$S") \
    > "$D/http.log" 2>&1 &
it_register_pid $! || it_fail "web server did not start"
wait_port "$NC" "$S" "$WEB" 20 || fail "web server does not listen"
wait_port "$NC" "$S" "$MID_OR" 60 || fail "tor relay mid does not listen"
for f in keys/secret_onion_key_ntor fingerprint fingerprint-ed25519; do
    it_wait_until 30 test -s "$D/mid/$f" || fail "tor relay mid did not write $f"
done
MIDHOP="$S:$MID_OR,$(awk '{print $2}' "$D/mid/fingerprint"),$(awk '{print $2}' "$D/mid/fingerprint-ed25519"),$(tail -c 32 "$D/mid/keys/secret_onion_key_ntor" | base64 | tr -d '=\n')"
# The exit: pctor without IPsec, 3 MB/s so that downloads take a while.
mkdir -p "$D/p3" && chmod 700 "$D/p3"
cat > "$D/p3/torrc" <<EOF
DataDirectory $D/p3/data
ORPort $S:$P3_OR
Address $S
Nickname p3
Log info file $D/p3/info.log
TestingTorNetwork 1
$DIRAUTH
PublishServerDescriptor 0
ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept $S:$WEB
ExitPolicy reject *:*
RelayBandwidthRate 3 MBytes
RelayBandwidthBurst 3 MBytes
ServerDNSResolvConfFile $D/resolv.conf
EOF
start_bg "$NC" "$PCTOR" -f "$D/p3/torrc"
wait_port "$NC" "$S" "$P3_OR" 30 || fail "p3 does not listen: $(tail -3 "$D/p3/info.log")"
HOP3="pctor:$D/p3/data@$S:$P3_OR"

# ---- the two pctor relays ----
start_pctor() { # NAME NS ADDR CHARON_DIR
    local d=$D/$1
    mkdir -p "$d" && chmod 700 "$d"
    cat > "$d/torrc" <<EOF
DataDirectory $d/data
ORPort $3:$ORPORT
Address $3
Nickname $1
Log info file $d/info.log
TestingTorNetwork 1
$DIRAUTH
PerCircuitTCP 1
IPsec 1
IPsecVICISocket $4/charon.vici
EOF
    start_bg "$2" "$PCTOR" -f "$d/torrc"
    echo "$BGPID" > "$d/pid"
    wait_port "$NC" "$3" "$ORPORT" 30 || fail "$1 does not listen: $(tail -3 "$d/info.log")"
}
start_pctor pa "$NA" "$A" "$D/ca"
start_pctor pb "$NB" "$B" "$D/cb"
for r in pa pb; do
    it_wait_until 10 grep -q "IPsec: connected to charon" "$D/$r/info.log" ||
        fail "$r did not connect to its charon"
done
PA=$(cat "$D/pa/pid") PB=$(cat "$D/pb/pid")
# IPsec only with relays the consensus lists: wait until each relay has a
# consensus listing both.
lists_both() { # RELAY
    local f=$D/$1/data/cached-microdesc-consensus
    grep -q "^r pa " "$f" 2> /dev/null && grep -q "^r pb " "$f" 2> /dev/null
}
t_pub=$SECONDS
for r in pa pb; do
    it_wait_until 120 lists_both "$r" || fail "$r has no consensus listing pa and pb"
done
it_log "pa and pb published and fetched a consensus listing both ($((SECONDS - t_pub)) s)"

HOPA="pctor:$D/pa/data@$A:$ORPORT" HOPB="pctor:$D/pb/data@$B:$ORPORT"
hexid() { # DATADIR: the Ed25519 identity in hex (IKE ID)
    base64 -d <<< "$(awk '{print $2}' "$1/fingerprint-ed25519")=" 2> /dev/null | od -An -tx1 | tr -d ' \n'
}
IDA=$(hexid "$D/pa/data") IDB=$(hexid "$D/pb/data")
[ ${#IDA} = 64 ] && [ ${#IDB} = 64 ] || fail "cannot read the relays' Ed25519 identities"
colons() { echo "$1" | sed 's/../&:/g; s/:$//'; }

# download LABEL FILE HOP...: one circuit, one GET; output in $D/LABEL.out.
download() {
    local label=$1 file=$2
    shift 2
    ip netns exec "$NC" "$CIRCTEST" --timeout 120 --begin "$S:$WEB" --get "/$file" \
        --out "$D/$label.out" "$@" 2> "$D/$label.err"
}
check_sum() { # LABEL WANT
    [ "$(sha256sum < "$D/$1.out" | cut -d' ' -f1)" = "$2" ] || fail "$1: download corrupted"
}

# ---- 1. the first circuit makes the relays set up IPsec ----
t0=$(date +%s%N)
download first file "$HOPA" "$HOPB" "$MIDHOP" "$HOP3" || fail "first download: $(tail -3 "$D/first.err")"
check_sum first "$want"
for r in pa pb; do
    it_wait_until 20 grep -q "IPsec SA with relay .* is up" "$D/$r/info.log" ||
        fail "$r: no IPsec SA with its peer"
done
t1=$(date +%s%N)
it_log "first circuit over shared connections; IPsec SA up $(( (t1 - t0) / 1000000 )) ms after it started"
setup=$(grep -ho "is up ([0-9.]* ms after a circuit first needed it)" "$D/pa/info.log" | head -1)
[ -n "$setup" ] && it_log "pa: SA $setup"
"$VICI" -s "$D/ca/charon.vici" list-sas > "$D/sas-a.out" || fail "list-sas on A"
grep -q "remote-id = $(colons "$IDB")" "$D/sas-a.out" || fail "A's IKE_SA is not with B's identity: $(grep -- '-id' "$D/sas-a.out")"
grep -q "local-id = $(colons "$IDA")" "$D/sas-a.out" || fail "A's IKE_SA does not use A's identity"
[ "$(grep -c 'state = INSTALLED' "$D/sas-a.out")" -ge 2 ] || fail "A: fewer than 2 CHILD_SAs installed"
grep -q "TS\|local-ts" "$D/sas-a.out" || true
"$VICI" -s "$D/ca/charon.vici" get-conns > "$D/conns-a.out"
[ "$(cat "$D/conns-a.out")" = "pctor-$IDB" ] || fail "A's charon has connections $(cat "$D/conns-a.out")"
# tor ignored pb's announcement and kept the link.
grep -q "Variable-length cell of unknown type (240) received" "$D/mid/info.log" ||
    fail "the tor relay did not see (and ignore) the announcement cell"
it_log "IKE identities are the relays' Ed25519 identities; tor ignored the announcement"

# ---- 2. per-circuit connections inside ESP ----
# running PID: alive and not a zombie (finished children stay zombies until
# waited for, and kill -0 succeeds on those).
running() { grep -qs '^State:[[:space:]]*[^Z[:space:]]' "/proc/$1/status"; }
conns() { # NS PID DST: established TCP connections of PID to DST
    in_ns "$1" ss -tnpH state established "( dst $3 )" 2> /dev/null | grep -c "pid=$2,"
}
ip netns exec "$NA" tcpdump -i "$VAB" -n -U -w "$D/cap1.pcap" > "$D/tcpdump1.out" 2>&1 &
tpid=$!
it_register_pid "$tpid"
it_wait_until 5 grep -q "listening on" "$D/tcpdump1.out" || fail "tcpdump did not start"
pids=()
for i in $(seq "$N"); do
    download "pc$i" file "$HOPA" "$HOPB" "$MIDHOP" "$HOP3" &
    pids+=($!)
done
maxab=0 maxbx=0
while :; do
    alive=0
    for p in "${pids[@]}"; do running "$p" && alive=1; done
    c=$(conns "$NA" "$PA" "$B:$ORPORT"); [ "$c" -gt "$maxab" ] && maxab=$c
    c=$(conns "$NB" "$PB" "$S:$MID_OR"); [ "$c" -gt "$maxbx" ] && maxbx=$c
    [ "$alive" = 0 ] && break
    sleep 0.2
done
for i in $(seq "$N"); do
    wait "${pids[$((i - 1))]}" || fail "download $i failed: $(tail -3 "$D/pc$i.err")"
    check_sum "pc$i" "$want"
done
sleep 0.5
kill -INT "$tpid"
wait "$tpid" 2> /dev/null
it_log "$N downloads intact; up to $maxab connections pa -> pb, $maxbx pb -> tor relay"
[ "$maxab" -ge "$N" ] || fail "only $maxab connections pa -> pb for $N circuits (PerCircuitTCP)"
[ "$maxbx" = 1 ] || fail "pb opened $maxbx connections to the tor relay (IPsec 1: shared)"
cap_check() { # PCAP LABEL
    local tcp esp other
    tcp=$(tcpdump -r "$1" -n "host $A and host $B and tcp" 2> /dev/null | wc -l)
    esp=$(tcpdump -r "$1" -n "host $A and host $B and udp port 4500" 2> /dev/null | wc -l)
    # (non-first fragments of large ESP-in-UDP packets carry no UDP ports)
    local f="ip and host $A and host $B and not (udp port 500 or udp port 4500) and not (udp and ip[6:2] & 0x1fff != 0)"
    other=$(tcpdump -r "$1" -n "$f" 2> /dev/null | wc -l)
    it_log "$2: capture between the relays: $esp ESP-in-UDP, $tcp TCP, $other other IP"
    [ "$tcp" = 0 ] || fail "$2: plain TCP between the relays: $(tcpdump -r "$1" -n tcp 2> /dev/null | head -3)"
    [ "$other" = 0 ] || fail "$2: non-IKE/ESP packets between the relays: $(tcpdump -r "$1" -n "$f" 2> /dev/null | head -3)"
    [ "$esp" -gt 1000 ] || fail "$2: too few ESP packets ($esp)"
}
cap_check "$D/cap1.pcap" "per-circuit"

# ---- 3. forged announcements are refused ----
mkdir -p "$D/forger" && chmod 700 "$D/forger"
fa() { in_ns "$NC" "$ANNOUNCE" --datadir "$D/forger" --target "$A:$ORPORT" --orport "$CA:$ORPORT" "$@"; }
fa --case other-key --other "$D/pb/data" > "$D/forge1.out" 2>&1 || fail "forger: $(cat "$D/forge1.out")"
fid=$(awk '$1 == "identity" {print $2}' "$D/forge1.out")
fa --case other-chain --other "$D/pb/data" > "$D/forge2.out" 2>&1 || fail "forger 2: $(cat "$D/forge2.out")"
it_wait_until 5 grep -qF "Refused an IPsec announcement from relay $fid at $CA:" "$D/pa/info.log" ||
    fail "pa did not refuse the forged announcement"
grep -F "Refused an IPsec announcement from relay $fid" "$D/pa/info.log" | grep -q "not the certified one" ||
    fail "pa did not refuse another relay's IKE key"
grep -F "Refused an IPsec announcement from relay $fid" "$D/pa/info.log" | grep -q "not from this identity" ||
    fail "pa did not refuse another relay's certificate chain"
[ "$("$VICI" -s "$D/ca/charon.vici" get-conns)" = "pctor-$IDB" ] ||
    fail "pa loaded a connection for a forged announcement"
fa --case valid > "$D/forge3.out" 2>&1 || fail "forger 3: $(cat "$D/forge3.out")"
it_wait_until 5 grep -qF "IPsec: not using relay $fid at $CA: not listed in the current consensus" "$D/pa/info.log" ||
    fail "pa did not refuse the unlisted tool's genuine announcement"
grep -qF "Relay $fid offers IPsec" "$D/pa/info.log" && fail "pa accepted an unlisted relay's announcement"
[ "$("$VICI" -s "$D/ca/charon.vici" get-conns)" = "pctor-$IDB" ] ||
    fail "pa loaded a connection for an unlisted relay"
it_log "forged announcements refused (another relay's key, another identity's chain); a genuine one from an unlisted relay refused too"

# ---- 4. charon goes away during a download and comes back ----
# charon_restart RELAY NS CHARON_DIR ADDR ROLE: kill the relay's charon
# during a long download through pa -> pb, check that the relay notices,
# stays up and keeps forwarding (a circuit RELAY -> p3), restart charon,
# and wait until the SA is back and the download has completed.
gone() { ! running "$1"; }
# The peer's ORPort is unreachable from NS (the fail-closed route), both
# for connections to it and for our ORPort's answers to it.
blocked() { # NS PEER
    in_ns "$1" ip route get "$2" ipproto tcp dport "$ORPORT" > /dev/null 2>&1 && return 1
    in_ns "$1" ip route get "$2" ipproto tcp sport "$ORPORT" dport 40000 > /dev/null 2>&1 && return 1
    return 0
}
charon_restart() {
    local r=$1 ns=$2 cdir=$3 addr=$4 role=$5 lpid cpid ups peer veth tp n
    if [ "$r" = pa ]; then peer=$B veth=$VAB; else peer=$A veth=$VBA; fi
    download "long-$r" big "$HOPA" "$HOPB" "$MIDHOP" "$HOP3" &
    lpid=$!
    sleep 2
    running "$lpid" || fail "the long download ended too early: $(tail -3 "$D/long-$r.err")"
    # No input filter anywhere while charon is down: what keeps the
    # relays' TCP off the wire must be the relay's own routing.
    for n in "$NA" "$NB"; do in_ns "$n" nft delete table inet pctor_ipsec || fail "nft delete"; done
    # (ip netns exec execs tcpdump in place, so $! is tcpdump itself)
    ip netns exec "$ns" tcpdump -i "$veth" -n -U -w "$D/cap-down-$r.pcap" > "$D/tcpdump-down-$r.out" 2>&1 &
    tp=$!
    it_register_pid "$tp"
    it_wait_until 5 grep -q "listening on" "$D/tcpdump-down-$r.out" || fail "tcpdump (down) did not start"
    read -r cpid _ < "$cdir/charon.pid"
    kill -KILL "$cpid"
    it_wait_until 10 grep -q "IPsec: lost charon" "$D/$r/info.log" ||
        fail "$r did not notice its charon's death"
    kill -0 "$(cat "$D/$r/pid")" || fail "$r died with its charon"
    it_wait_until 5 gone "$cpid" || fail "charon did not die"
    it_wait_until 5 sh -c "! ip -n '$ns' link show ipsec0 > /dev/null 2>&1" ||
        fail "ipsec0 outlived $r's charon"
    blocked "$ns" "$peer" ||
        fail "with its charon dead, $r routes TCP to its peer's ORPort: $(in_ns "$ns" ip route get "$peer" ipproto tcp dport "$ORPORT" 2>&1)"
    download "direct-$r" file "pctor:$D/$r/data@$addr:$ORPORT" "$HOP3" ||
        fail "$r -> p3 without charon: $(tail -3 "$D/direct-$r.err")"
    check_sum "direct-$r" "$want"
    it_log "charon of $r ($role) killed: $r noticed, still forwards ($r -> p3 download intact)"
    sleep 1 # (TCP retransmissions of the stalled download come meanwhile)
    kill -INT "$tp"
    wait "$tp" 2> /dev/null
    n=$(tcpdump -r "$D/cap-down-$r.pcap" -n "tcp and host $A and host $B" 2> /dev/null | wc -l)
    [ "$n" = 0 ] || fail "plaintext TCP between the relays while $r's charon was down: $(tcpdump -r "$D/cap-down-$r.pcap" -n "tcp and host $A and host $B" 2> /dev/null | head -3)"
    it_log "with $r's charon down and no nftables filter, no TCP between the relays left in the clear (fail-closed route)"
    for n in "$NA" "$NB"; do
        in_ns "$n" nft -D "ORPORT=$ORPORT" -f "$NFT_FILE" || fail "cannot reload $NFT_FILE"
    done
    ups=$(grep -c "IPsec SA with relay .* is up" "$D/$r/info.log")
    start_charon "$cdir" "$ns"
    it_wait_until 30 sh -c "[ \$(grep -c 'IPsec SA with relay .* is up' '$D/$r/info.log') -gt $ups ]" ||
        fail "$r did not re-establish the SA after charon came back"
    it_wait_until 10 sh -c "'$VICI' -s '$cdir/charon.vici' list-sas | grep -q 'state = INSTALLED'" ||
        fail "no CHILD_SA in $r's restarted charon"
    it_log "charon of $r restarted: key and connection reloaded, SA re-established"
    wait "$lpid" || fail "the download across the charon restart failed: $(tail -3 "$D/long-$r.err")"
    check_sum "long-$r" "$want_big"
    it_log "the download across the restart of $r's charon completed intact"
}
# The relay with the lower identity initiates; restarting the other one's
# charon is the harder case (its peer keeps a stale SA, see broker.h).
if [[ $IDA < $IDB ]]; then ra=initiator rb=responder; else ra=responder rb=initiator; fi
charon_restart pa "$NA" "$D/ca" "$A" "$ra"
charon_restart pb "$NB" "$D/cb" "$B" "$rb"
ip netns exec "$NA" tcpdump -i "$VAB" -n -U -w "$D/cap2.pcap" > "$D/tcpdump2.out" 2>&1 &
tpid=$!
it_register_pid "$tpid"
it_wait_until 5 grep -q "listening on" "$D/tcpdump2.out" || fail "tcpdump 2 did not start"
pids=()
for i in $(seq "$N"); do
    download "re$i" file "$HOPA" "$HOPB" "$MIDHOP" "$HOP3" &
    pids+=($!)
done
for i in $(seq "$N"); do
    wait "${pids[$((i - 1))]}" || fail "download $i after the restart failed: $(tail -3 "$D/re$i.err")"
    check_sum "re$i" "$want"
done
sleep 0.5
kill -INT "$tpid"
wait "$tpid" 2> /dev/null
cap_check "$D/cap2.pcap" "after the charon restart"

# pctor gave charon no updown command; the routing came from the runner.
grep -q "updown up-host out $A -> $B" "$D/ca/updown.log" ||
    fail "pctor-charon's updown runner did not see pa's CHILD_SA: $(tail -3 "$D/ca/updown.log")"

# ---- 5. trust rules: many identities from one address, a wrong port ----
# known_peers: pa's "known peers" figure, from a fresh SIGUSR1 line.
known_peers() {
    local n0
    n0=$(grep -c "Statistics: IPsec trust: refused" "$D/pa/info.log")
    kill -USR1 "$PA"
    it_wait_until 5 sh -c "[ \$(grep -c 'Statistics: IPsec trust: refused' '$D/pa/info.log') -gt $n0 ]" ||
        fail "no SIGUSR1 figures"
    grep -o "Statistics: IPsec: [0-9]* known peers" "$D/pa/info.log" | tail -1 | awk '{print $3}'
}
known0=$(known_peers)
for i in 1 2 3 4 5 6; do
    mkdir -p "$D/many$i" && chmod 700 "$D/many$i"
    in_ns "$NC" "$ANNOUNCE" --datadir "$D/many$i" --target "$A:$ORPORT" --orport "$CA:$ORPORT" \
        --case valid > "$D/many$i.out" 2>&1 || fail "announcer $i: $(cat "$D/many$i.out")"
done
it_wait_until 5 grep -q "IPsec: forgetting relay .* (too many relay identities at its address)" "$D/pa/info.log" ||
    fail "pa kept more identities from one address than IPsecMaxPeersPerAddress"
known=$(known_peers)
unlisted=$(grep -o "IPsec trust: refused [0-9]* relays not listed" "$D/pa/info.log" | tail -1 | awk '{print $4}')
# Before: the forger's identity was the one at C's address; after 6 more,
# at most IPsecMaxPeersPerAddress (2) there.
[ -n "$known" ] && [ -n "$known0" ] && [ "$known" -le $((known0 + 1)) ] ||
    fail "pa tracked $known0 relays, and $known after 6 more identities from one address"
[ "${unlisted:-0}" -ge 7 ] || fail "pa counted only ${unlisted:-0} unlisted refusals"
[ "$("$VICI" -s "$D/ca/charon.vici" get-conns)" = "pctor-$IDB" ] ||
    fail "pa loaded a connection for one of many identities from one address"
it_log "7 unlisted identities from one address: refused; relays tracked: $known0 before the last 6, $known after"
# pb's identity (a copy of its keys) announcing another ORPort.
mkdir -p "$D/pbcopy" && chmod 700 "$D/pbcopy" && cp -r "$D/pb/data/keys" "$D/pbcopy/" ||
    fail "cannot copy pb's keys"
in_ns "$NB" "$ANNOUNCE" --datadir "$D/pbcopy" --target "$A:$ORPORT" --orport "$B:$((ORPORT + 1))" \
    --case valid > "$D/wrongport.out" 2>&1 || fail "wrong-port announcer: $(cat "$D/wrongport.out")"
it_wait_until 5 grep -qF "it announced ORPort $B:$((ORPORT + 1)), but the consensus lists $B:$ORPORT" "$D/pa/info.log" ||
    fail "pa did not refuse pb's identity announcing another ORPort"
c=$("$VICI" -s "$D/ca/charon.vici" get-conns)
[ -z "$c" ] || [ "$c" = "pctor-$IDB" ] || fail "pa's charon has connections $c"
grep -q "pctor-.*$((ORPORT + 1))" "$D/ca/charon.log" && fail "pa loaded the wrong port into charon"
it_log "an announcement with another ORPort than the listed one refused"

kill -0 "$PA" && kill -0 "$PB" || fail "a relay died"
if grep -E '\[(warn|err)\]' "$D/pa/info.log" "$D/pb/info.log" |
        grep -v "Lost the connection to charon's VICI socket\|Cannot connect to charon's VICI socket"; then
    fail "unexpected warnings"
fi
it_log "IPsec with PerCircuitTCP: all checks passed"
exit 0
