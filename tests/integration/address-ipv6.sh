#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# address-ipv6.sh -- Address given once per family, as tor 0.4.5+: the
# IPv6 Address is the relay's published IPv6 ORPort address.
#
# One tor 0.4.9 authority (AuthDirHasIPv6Connectivity 1: it tests IPv6
# ORPorts and lists in the consensus, as "a" lines, those it reached) and
# pctor relays whose IPv6 ORPort listens on [::1] but is advertised without
# that address:
#   p1 "Address 127.0.0.1" + "Address [::1]", its IPv6 ORPort advertised
#      as [::]:P (NoListen; it listens on [::1]:P, NoAdvertise): the
#      descriptor has "router p1 127.0.0.1 ..." and "or-address
#      [::1]:P" (without the Address the [::] half would need a public
#      IPv6 address of an interface), the authority lists "a [::1]:P"
#      (it reached p1 there), GETINFO address/v6 is ::1 and address/v4
#      127.0.0.1.
#   p2 "Address ::1" (no brackets) + "Address 127.0.0.1" with an IPv6
#      ORPort line of its own address [2001:db8::1]:P (NoListen): the
#      Address wins, as in tor: "or-address [::1]:P", listed by the
#      authority. A tor 0.4.9 relay with the same lines publishes the same
#      (tor's manual: Address takes precedence over the ORPort).
#   p3 "Address localhost" (a host name: 127.0.0.1 from /etc/hosts; ::1
#      too where /etc/hosts says so) and "ORPort [::1]:P": router line
#      127.0.0.1, or-address [::1]:P either way (the host name's AAAA, or
#      the ORPort's own address when it has none).
#   p4 p1 with AddressDisableIPv6 1: no or-address (as tor); without it
#      (SIGHUP), "or-address [::1]:P".
#   p6 "ORPort [::1]:P" and AddressDisableIPv6 1: no or-address, as a
#      tor relay with the same lines (tor's manual: the relay will not
#      publish an IPv6 ORPort).
#   p5 an exit with public Address lines (198.51.100.7, [2001:db8::7])
#      and ExitPolicyRejectPrivate 1: its exit policy rejects
#      198.51.100.7 and [2001:db8::7] (GETINFO exit-policy/full, /ipv4
#      and /ipv6; the descriptor shows the IPv4 rules), as tor rejects the
#      relay's own addresses.
# And --verify-config: two IPv4 (or two IPv6) Address lines are refused
# with the line named; p1's torrc passes.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
command -v curl > /dev/null || it_skip "curl is not installed"
PY=$(it_python3) || it_skip "python3 is not installed"
it_require_ipv6_loopback "$PY"

# --- --verify-config, before any network -----------------------------------
vdir=$(it_tmpdir)
verify() { # TORRC-LINES: run pctor --verify-config on them; sets out
    printf 'DataDirectory %s/data\nORPort 127.0.0.1:9\n%s\n' "$vdir" "$1" > "$vdir/torrc"
    out=$("$PCTOR" --verify-config -f "$vdir/torrc" 2>&1)
}
verify "Address 192.0.2.1
Address 192.0.2.2" && it_fail "two IPv4 Address lines pass --verify-config"
grep -qF "Option 'Address' on line 4 of $vdir/torrc: two IPv4 Address lines ('192.0.2.1' and '192.0.2.2'); only one per address family is allowed. Failing." <<< "$out" ||
    it_fail "two IPv4 Address lines: unexpected message: $out"
verify "Address [2001:db8::1]
Address 2001:db8::2" && it_fail "two IPv6 Address lines pass --verify-config"
grep -qF "two IPv6 Address lines" <<< "$out" ||
    it_fail "two IPv6 Address lines: unexpected message: $out"
verify "Address 127.0.0.1
Address [::1]" || it_fail "Address 127.0.0.1 + Address [::1] fails --verify-config: $out"
it_log "--verify-config refuses two Address lines of one family, takes one per family"

# --- the network -------------------------------------------------------------
# Ports free on ::1 now (the privnet's reservations are for 127.0.0.1).
read -r v6a v6b v6c v6d v6e v6t v6u < <("$PY" -c '
import socket
ss = [socket.socket(socket.AF_INET6) for _ in range(7)]
for s in ss:
    s.bind(("::1", 0))
print(*[s.getsockname()[1] for s in ss])')
extras=$(it_tmpdir)
echo "AuthDirHasIPv6Connectivity 1" > "$extras/authority"
echo "nameserver 127.0.0.1" > "$extras/resolv.conf"
# The tor relay has p2's lines (beside its Address 127.0.0.1 and ORPort
# 127.0.0.1:PORT from pctor-privnet).
printf 'Address ::1\nORPort [::1]:%s NoAdvertise\nORPort [2001:db8::1]:%s NoListen\n' \
    "$v6t" "$v6t" > "$extras/relay"
# The second one has an IPv6 ORPort of its own address and
# AddressDisableIPv6 1, as p6 (on another port).
printf 'ORPort [::1]:%s\nAddressDisableIPv6 1\n' "$v6u" > "$extras/relay-disabled"
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto --torrc-extra "authority=$extras/authority" \
    --torrc-extra "relay1=$extras/relay" \
    --torrc-extra "relay2=$extras/relay-disabled" ||
    it_fail "pctor-privnet start failed"
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$net/nodes.txt")
tor_nick=$(awk '$7 == "relay" { print $1; exit }' "$net/nodes.txt")
tor_nick2=$(awk '$7 == "relay" { n++ } n == 2 { print $1; exit }' "$net/nodes.txt")

# start_relay NICK LINES: a pctor relay with ORPort 127.0.0.1:PORT and
# LINES; sets d to its directory.
start_relay() {
    it_start_pctor "$net" "$1" relay "ContactInfo pctor test relay $1
$2"
    d=$(cat "$net/$1.dir")
}
start_relay p1 "ORPort [::1]:$v6a NoAdvertise
ORPort [::]:$v6a NoListen
Address 127.0.0.1
Address [::1]
ControlPort auto
ControlPortWriteToFile $extras/p1-control-port"
d1=$d
start_relay p2 "ORPort [::1]:$v6b NoAdvertise
ORPort [2001:db8::1]:$v6b NoListen
Address ::1
Address 127.0.0.1"
d2=$d
start_relay p3 "ORPort [::1]:$v6c
Address localhost"
d3=$d
start_relay p4 "ORPort [::1]:$v6d NoAdvertise
ORPort [::]:$v6d NoListen
Address 127.0.0.1
Address [::1]
AddressDisableIPv6 1"
d4=$d
start_relay p6 "ORPort [::1]:$v6e
AddressDisableIPv6 1"
d6=$d
start_relay p5 "Address 198.51.100.7
Address [2001:db8::7]
ExitRelay 1
IPv6Exit 1
ExitPolicyRejectPrivate 1
ExitPolicy accept *:*
ServerDNSResolvConfFile $extras/resolv.conf
ControlPort auto
ControlPortWriteToFile $extras/p5-control-port"
d5=$d

# desc NICK: the authority's copy of NICK's descriptor, into $net/NICK.desc.
desc() {
    curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/server/all" |
        awk -v n="$1" '/^router / {on = ($2 == n)} on' > "$net/$1.desc" &&
        grep -q "^router $1 " "$net/$1.desc"
}
for n in p1 p2 p3 p4 p5 p6; do
    it_wait_until 60 desc "$n" ||
        it_fail "the authority has no descriptor of $n: $(tail -3 "$(cat "$net/$n.dir")/info.log")"
done
has_line() { # NICK LINE
    grep -qxF "$2" "$net/$1.desc" ||
        it_fail "$1's descriptor lacks '$2': $(grep -E '^(router|or-address) ' "$net/$1.desc")"
}
has_line p1 "or-address [::1]:$v6a"
grep -q "^router p1 127\.0\.0\.1 " "$net/p1.desc" || it_fail "p1's router line: $(grep '^router ' "$net/p1.desc")"
has_line p2 "or-address [::1]:$v6b"
has_line p3 "or-address [::1]:$v6c"
grep -q "^router p3 127\.0\.0\.1 " "$net/p3.desc" || it_fail "p3's router line: $(grep '^router ' "$net/p3.desc")"
grep -q "^or-address" "$net/p4.desc" &&
    it_fail "p4 advertises IPv6 with AddressDisableIPv6 1: $(grep '^or-address' "$net/p4.desc")"
grep -q "AddressDisableIPv6 is set: not advertising the IPv6 ORPort" "$d4/info.log" ||
    it_fail "p4 does not say why it advertises no IPv6 ORPort"
it_log "descriptors: p1 and p2 publish [::1] from Address, p3 [::1], p4 no or-address"
# tor 0.4.9 with p2's lines publishes the same: its Address, not the
# ORPort's own IPv6 address.
it_wait_until 60 desc "$tor_nick" || it_fail "the authority has no descriptor of the tor relay"
has_line "$tor_nick" "or-address [::1]:$v6t"
it_log "tor 0.4.9 with p2's lines publishes or-address [::1]:$v6t too"
# AddressDisableIPv6 1 drops even an IPv6 ORPort's own address, in tor
# as in pctor.
it_wait_until 60 desc "$tor_nick2" || it_fail "the authority has no descriptor of $tor_nick2"
grep -q "^or-address" "$net/$tor_nick2.desc" &&
    it_fail "tor with AddressDisableIPv6 1 publishes $(grep '^or-address' "$net/$tor_nick2.desc")"
grep -q "^or-address" "$net/p6.desc" &&
    it_fail "p6 publishes $(grep '^or-address' "$net/p6.desc") with AddressDisableIPv6 1"
it_log "with AddressDisableIPv6 1 and ORPort [::1]:PORT, neither tor nor p6 publishes an or-address"

# SIGHUP without AddressDisableIPv6: p4 publishes [::1] from its Address.
sed -i '/^AddressDisableIPv6 1$/d' "$d4/torrc"
kill -HUP "$(cat "$d4/pid")"
p4_v6() { desc p4 && grep -qxF "or-address [::1]:$v6d" "$net/p4.desc"; }
it_wait_until 60 p4_v6 ||
    it_fail "p4 does not publish [::1]:$v6d after SIGHUP: $(grep -E '^(router|or-address) ' "$net/p4.desc")"
it_log "p4 publishes or-address [::1]:$v6d once AddressDisableIPv6 is gone (SIGHUP)"

getinfo() { # NICK KEYS: GETINFO KEYS on NICK's ControlPort, into answers
    local cport
    it_wait_until 10 test -s "$extras/$1-control-port"
    cport=$(sed -n 's/^PORT=127\.0\.0\.1://p' "$extras/$1-control-port" 2> /dev/null)
    [ -n "$cport" ] || it_fail "$1 wrote no ControlPortWriteToFile"
    answers=$("$PY" - "$cport" "$2" << 'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b'AUTHENTICATE ""\r\nGETINFO ' + sys.argv[2].encode() + b'\r\nQUIT\r\n')
data = b""
while not data.endswith(b"250 closing connection\r\n"):
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.decode().replace("\r", ""))
EOF
)
}
# GETINFO address/v4 and address/v6 on p1.
getinfo p1 "address/v4 address/v6 address"
for want in "250-address/v4=127.0.0.1" "250-address/v6=::1" "250-address=127.0.0.1"; do
    grep -qF "$want" <<< "$answers" || it_fail "p1's GETINFO lacks $want: $answers"
done
it_log "p1: GETINFO address/v4 127.0.0.1, address/v6 ::1"

# p5, an exit with ExitPolicyRejectPrivate 1, rejects its own public
# addresses from Address, IPv4 and IPv6, as tor.
# GETINFO exit-policy/full has the rules of both families (IPv6 ones as
# "reject6"), exit-policy/ipv4 and exit-policy/ipv6 one family each.
getinfo p5 "exit-policy/full"
for want in "reject 198.51.100.7:*" "reject6 [2001:db8::7]:*"; do
    grep -qxF "$want" <<< "$answers" ||
        it_fail "p5's exit-policy/full lacks $want: $answers"
done
getinfo p5 "exit-policy/ipv4"
grep -qxF "reject 198.51.100.7:*" <<< "$answers" ||
    it_fail "p5's exit-policy/ipv4 lacks reject 198.51.100.7:*: $answers"
! grep -q "^[a-z]*6 " <<< "$answers" || it_fail "p5's exit-policy/ipv4 has IPv6 rules: $answers"
getinfo p5 "exit-policy/ipv6"
grep -qxF "reject6 [2001:db8::7]:*" <<< "$answers" ||
    it_fail "p5's exit-policy/ipv6 lacks reject6 [2001:db8::7]:*: $answers"
! grep -q "^\(accept\|reject\) " <<< "$answers" || it_fail "p5's exit-policy/ipv6 has IPv4 rules: $answers"
has_line p5 "reject 198.51.100.7:*"
it_log "p5 (exit) rejects its Address lines' addresses (descriptor; GETINFO exit-policy/full, /ipv4, /ipv6)"

# The authority reached p1 and p2 at [::1] and lists them so.
consensus() {
    curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus"
}
listed() { # NICK ADDRPORT
    consensus | awk -v n="$1" '$1 == "r" {on = ($2 == n)} on && $1 == "a" {print $2}' |
        grep -qxF "$2"
}
it_wait_until 180 listed p1 "[::1]:$v6a" ||
    it_fail "the consensus does not list p1 at [::1]:$v6a: $(consensus | grep -A1 '^r p1 ')"
it_wait_until 60 listed p2 "[::1]:$v6b" ||
    it_fail "the consensus does not list p2 at [::1]:$v6b: $(consensus | grep -A1 '^r p2 ')"
it_log "the authority lists p1 at [::1]:$v6a and p2 at [::1]:$v6b"

for d in "$d1" "$d2" "$d3" "$d4" "$d5" "$d6"; do
    kill -0 "$(cat "$d/pid")" || it_fail "$d: pctor died"
done
it_log "pass"
