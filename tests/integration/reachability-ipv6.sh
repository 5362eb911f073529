#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# reachability-ipv6.sh -- the IPv6 ORPort self-test (AssumeReachableIPv6),
# as tor: a relay with an advertised IPv6 ORPort uploads its descriptor
# only once both ORPorts were reached from outside.
#
# One tor authority (AuthDirHasIPv6Connectivity 1, so the consensus lists
# IPv6 ORPorts it reached) and three tor relays with an IPv6 ORPort on ::1
# (the hop before the tested relay must be able to extend over IPv6, and
# must not hold a channel with it already: tor would reuse that IPv4
# channel; the IPv4 test takes at most two of them), and
# three pctor relays, all with AssumeReachable 0:
#   p1 listens on 127.0.0.1:PORT and [::1]:PORT and advertises both. It
#      logs "Now checking whether IPv6 ORPort [::1]:PORT is reachable",
#      then "Self-testing indicates your ORPort [::1]:PORT is reachable
#      from the outside. Excellent." (and the same for IPv4); its first
#      upload comes after both, and the authority's consensus lists p1
#      with "a [::1]:PORT" (it reached it over IPv6 too).
#   p2 advertises an IPv6 ORPort where nothing listens (NoListen). Its
#      IPv4 ORPort is confirmed ("Excellent." without "Publishing server
#      descriptor."), its IPv6 one never is: after 30 s it warns "Your
#      server has not managed to confirm reachability for its ORPort(s) at
#      [::1]:BADPORT" and it never uploads.
#   p3 is p2 with AssumeReachableIPv6 1: it does not test the IPv6 ORPort
#      and uploads once its IPv4 ORPort is confirmed.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
command -v curl > /dev/null || it_skip "curl is not installed"
PY=$(it_python3) || it_skip "python3 is not installed"
it_require_ipv6_loopback "$PY"

# IPv6 ORPorts of the tor relays: ports free on ::1 now (the privnet's
# port reservations are for 127.0.0.1).
extras=$(it_tmpdir)
read -r v6a v6b v6c < <("$PY" -c '
import socket
ss = [socket.socket(socket.AF_INET6) for _ in range(3)]
for s in ss:
    s.bind(("::1", 0))
print(*[s.getsockname()[1] for s in ss])')
echo "ORPort [::1]:$v6a" > "$extras/relay1"
echo "ORPort [::1]:$v6b" > "$extras/relay2"
echo "ORPort [::1]:$v6c" > "$extras/relay3"
echo "AuthDirHasIPv6Connectivity 1" > "$extras/authority"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto --torrc-extra "relay1=$extras/relay1" \
    --torrc-extra "relay2=$extras/relay2" \
    --torrc-extra "relay3=$extras/relay3" \
    --torrc-extra "authority=$extras/authority" ||
    it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# The tor relays' IPv6 ORPorts must be in the consensus first.
consensus() {
    curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus-microdesc"
}
ipv6_listed() { [ "$(consensus | grep -c '^a \[::1\]:')" -ge 3 ]; }
it_wait_until 120 ipv6_listed ||
    it_fail "the consensus does not list the tor relays' IPv6 ORPorts"
it_log "the consensus lists the tor relays' IPv6 ORPorts"

# start_relay NICK ORPORT-LINES [EXTRA]: start a pctor relay with
# AssumeReachable 0; sets d to its directory and port to its port.
start_relay() {
    it_start_pctor "$net" "$1" ports "$2
Address 127.0.0.1
AssumeReachable 0
${3-}"
    d=$(cat "$net/$1.dir") port=$(cat "$net/$1.port")
}

start_relay p1 "ORPort 127.0.0.1:@PORT@
ORPort [::1]:@PORT@"
d1=$d port1=$port
# A port nothing listens on, on ::1.
badport=$("$PY" -c '
import socket
s = socket.socket(socket.AF_INET6)
s.bind(("::1", 0))
print(s.getsockname()[1])')
start_relay p2 "ORPort 127.0.0.1:@PORT@
ORPort [::1]:$badport NoListen"
d2=$d
start_relay p3 "ORPort 127.0.0.1:@PORT@
ORPort [::1]:$badport NoListen" "AssumeReachableIPv6 1"
d3=$d port3=$port

# --- p1: both notices, then the upload --------------------------------------
ok6="Self-testing indicates your ORPort [::1]:$port1 is reachable from the outside. Excellent."
ok4="Self-testing indicates your ORPort 127.0.0.1:$port1 is reachable from the outside. Excellent."
grep -q "Now checking whether IPv6 ORPort \[::1\]:$port1 is reachable" "$d1/info.log" ||
    it_fail "p1 did not say it tests its IPv6 ORPort"
it_wait_until 120 grep -qF "$ok6" "$d1/info.log" ||
    { tail -20 "$d1/info.log" >&2; it_fail "p1 did not confirm its IPv6 ORPort"; }
it_wait_until 60 grep -qF "$ok4" "$d1/info.log" ||
    it_fail "p1 did not confirm its IPv4 ORPort"
it_wait_until 30 grep -q "Uploaded descriptor to " "$d1/info.log" ||
    it_fail "p1 did not upload its descriptor after the self-tests"
at6=$(grep -nF "$ok6" "$d1/info.log" | head -1 | cut -d: -f1)
at4=$(grep -nF "$ok4" "$d1/info.log" | head -1 | cut -d: -f1)
up_at=$(grep -n "Uploaded descriptor to \|Could not upload our descriptor" "$d1/info.log" | head -1 | cut -d: -f1)
[ "$up_at" -gt "$at6" ] && [ "$up_at" -gt "$at4" ] ||
    it_fail "p1 uploaded (line $up_at) before both self-tests succeeded (lines $at4, $at6)"
# The last of the two notices says it publishes, the first does not.
last=$at6 first=$at4
[ "$at4" -gt "$at6" ] && last=$at4 first=$at6
sed -n "${last}p" "$d1/info.log" | grep -q "Excellent. Publishing server descriptor." ||
    it_fail "p1's last reachability notice does not say it publishes"
if sed -n "${first}p" "$d1/info.log" | grep -q "Publishing server descriptor"; then
    it_fail "p1's first reachability notice says it publishes"
fi
it_log "p1: $(grep -m1 'Testing the reachability of our IPv6' "$d1/info.log" | sed 's/^.*\] //')"
fp1=$(awk '{print $2}' "$d1/data/fingerprint")
p1_ipv6_listed() {
    local id
    id=$("$PY" -c 'import base64, sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode().rstrip("="))' "$fp1")
    consensus | awk -v id="$id" '$1 == "r" {on = ($3 == id)} on && $1 == "a" {print $2}' |
        grep -qxF "[::1]:$port1"
}
it_wait_until 120 p1_ipv6_listed ||
    it_fail "the consensus does not list p1 with its IPv6 ORPort"
it_log "p1 uploaded after both self-tests; the consensus lists a [::1]:$port1"

# --- p3: AssumeReachableIPv6 1 publishes on IPv4 alone ----------------------
ok3="Self-testing indicates your ORPort 127.0.0.1:$port3 is reachable from the outside. Excellent. Publishing server descriptor."
it_wait_until 60 grep -qF "$ok3" "$d3/info.log" ||
    it_fail "p3 did not confirm its IPv4 ORPort and publish"
it_wait_until 30 grep -q "Uploaded descriptor to " "$d3/info.log" ||
    it_fail "p3 (AssumeReachableIPv6 1) did not upload"
grep -q "Now checking whether IPv6" "$d3/info.log" &&
    it_fail "p3 tests its IPv6 ORPort although AssumeReachableIPv6 is 1"
it_log "p3: uploaded without an IPv6 test (AssumeReachableIPv6 1)"

# --- p2: IPv4 confirmed, IPv6 not: the warning, and no upload ---------------
it_selftest_unconfirmed p2 "$d2" "[::1]:$badport" "$auth_dirport"
grep -q "reachable from the outside. Excellent.$" "$d2/info.log" ||
    it_fail "p2 did not confirm its IPv4 ORPort (without publishing)"
it_log "p2: IPv4 confirmed, IPv6 not; warned and never uploaded"

for d in "$d1" "$d2" "$d3"; do
    kill -0 "$(cat "$d/pid")" || it_fail "$d: pctor died"
done
it_log "pass"
