#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# outbound-bind.sh -- OutboundBindAddress and OutboundBindAddressExit.
#
# A private network (1 tor authority, 2 tor relays), a pctor exit p3 and a
# pctor client c1 (relay1 -> relay2 -> p3). The web server lives in a
# network namespace this test creates, behind a veth pair whose host side
# holds two addresses, .1 and .3; the exit's connections to it must leave
# from the address the options name (the web server's log shows the
# client address), while its connections to the relays (loopback) are
# never bound, as in tor:
#   1. OutboundBindAddress .1, OutboundBindAddressExit .3: from .3;
#   2. SIGHUP without OutboundBindAddressExit: from .1 (the general one);
#   3. SIGHUP with OutboundBindAddressExit .99 (not on this host): the
#      download fails, p3 says why and keeps running;
#   4. two IPv4 addresses for one option: --verify-config refuses them.
# Needs root and ip netns (skipped without them).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
it_veth_ns pob 231

# The web server in the namespace; its log names each client address.
www=$(it_tmpdir)
head -c $((256 * 1024)) /dev/urandom > "$www/f"
want=$(sha256sum < "$www/f" | cut -d' ' -f1)
hport=8080
py=$(it_python3) || it_skip "python3 is not installed"
(cd "$www" && exec ip netns exec "$NS" "$py" -m http.server "$hport" --bind "${sub}2") \
    > "$www/http.log" 2>&1 < /dev/null &
it_register_pid $! || it_fail "the web server did not start"
it_wait_until 20 sh -c "ip netns exec $NS ss -ltn | grep -q '${sub}2:$hport'" ||
    it_fail "the web server does not listen"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

exit_lines="ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept ${sub}0/24:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf
OutboundBindAddress ${sub}1"
it_start_pctor "$net" p3 relay "$exit_lines
OutboundBindAddressExit ${sub}3"
d3=$(cat "$net/p3.dir")
grep -q "Exit connections originate from ${sub}3" "$d3/info.log" ||
    it_fail "p3 does not log its exit bind address"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list p3"
it_start_pctor "$net" c1 client "EntryNodes relay1
MiddleNodes relay2
ExitNodes p3"
s1=$(cat "$net/c1.port")

fetch() { # OUT
    curl -sf --max-time 60 -x "socks5h://127.0.0.1:$s1" "http://${sub}2:$hport/f" -o "$1"
}
# from ADDR: the last request the web server logged came from ADDR.
last_client() { grep '"GET /f' "$www/http.log" | tail -1 | cut -d' ' -f1; }
it_wait_until 90 fetch "$www/got1" || it_fail "no download through p3: $(tail -3 "$d3/info.log")"
[ "$(sha256sum < "$www/got1" | cut -d' ' -f1)" = "$want" ] || it_fail "download 1: sha256 mismatch"
[ "$(last_client)" = "${sub}3" ] ||
    it_fail "the exit's connection came from $(last_client), not OutboundBindAddressExit ${sub}3"
it_log "1: the exit connects from OutboundBindAddressExit ${sub}3"

# 2. Without OutboundBindAddressExit, OutboundBindAddress applies.
sed -i '/^OutboundBindAddressExit/d' "$d3/torrc"
kill -HUP "$(cat "$d3/pid")"
it_wait_until 20 grep -q "Outgoing connections originate from ${sub}1" "$d3/info.log" ||
    it_fail "p3 did not apply the new configuration"
sleep 1
fetch "$www/got2" || it_fail "download 2 failed"
[ "$(last_client)" = "${sub}1" ] ||
    it_fail "after SIGHUP the connection came from $(last_client), not ${sub}1"
it_log "2: after SIGHUP the exit connects from OutboundBindAddress ${sub}1"

# 3. An address that is not on this host: a clear warning, no crash.
echo "OutboundBindAddressExit ${sub}99" >> "$d3/torrc"
kill -HUP "$(cat "$d3/pid")"
it_wait_until 20 grep -q "Exit connections originate from ${sub}99" "$d3/info.log" ||
    it_fail "p3 did not apply the third configuration"
sleep 1
if fetch "$www/got3"; then it_fail "a download worked from an address that is not here"; fi
grep -q "Could not bind an outgoing connection to ${sub}99" "$d3/info.log" ||
    it_fail "p3 does not say why the exit connection failed"
kill -0 "$(cat "$d3/pid")" || it_fail "p3 died"
it_log "3: an unusable OutboundBindAddressExit fails the stream with a warning"

# 4. One address per family.
printf 'SocksPort 0\nTestingTorNetwork 1\n%s\nOutboundBindAddress %s\nOutboundBindAddress %s\n' \
    "$(cat "$net/dirauth.torrc")" "${sub}1" "${sub}3" > "$www/two.torrc"
if "$PCTOR" --verify-config -f "$www/two.torrc" > "$www/two.out" 2>&1; then
    it_fail "two IPv4 OutboundBindAddress lines were accepted"
fi
grep -q "more than one IPv4 address" "$www/two.out" ||
    it_fail "no clear refusal of two IPv4 addresses: $(cat "$www/two.out")"
it_log "4: two IPv4 addresses for one option are refused"
