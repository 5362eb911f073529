#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# exit-ipv6.sh -- IPv6Exit at a pctor exit, as tor: BEGIN flags, IPv6
# destinations, the descriptor's ipv6-policy and the authorities' p6 line.
#
# A private network (1 tor authority, 2 tor relays) and two pctor exits
# whose policies accept 127.0.0.1 and [::1], and IPv6 to the web port
# (HPORT) anywhere, so that the IPv6 summary is not empty (a summary counts
# only rules for every address, and a tor client sends "IPv6 ok" only to an
# exit whose summary accepts the port); the only streams are this test's,
# to 127.0.0.1, ::1 and a name this test's nameserver resolves to them:
#   p6 with IPv6Exit 1, p4 with IPv6Exit 0.
# Two web servers listen on the same port, one on 127.0.0.1 (serving
# "four") and one on ::1 (serving "six"), and a nameserver on 127.0.0.1
# answers every name with A 127.0.0.1 and AAAA ::1. pctor-circtest
# downloads through tor -> tor -> exit with a BEGIN carrying tor-spec's
# flags (1 IPv6 ok, 2 IPv4 not ok, 4 IPv6 preferred), and the body tells
# which address the exit chose:
#   p6: [::1] literal -> six; the name without flags -> four; flags 1
#       (both fine, no preference: IPv4) -> four; 1|4 -> six; 1|2 -> six.
#   p4: [::1] literal -> END 4 (EXITPOLICY); the name with 1|2 -> END 4;
#       with 1|4 -> four (no IPv6 to prefer).
# RESOLVE of the name: 127.0.0.1 and ::1 from p6, 127.0.0.1 alone from p4.
# Then the tor authority's copies: p6's descriptor has "ipv6-policy accept
# HPORT" (p4's has none) and the microdescriptor the authority made for p6
# has "p6 accept HPORT". Last, a tor 0.4.9 client whose exit is p6 gets
# [::1] -> six (with tor's own BEGIN flags: IPv6 ok). Only one stream, on
# the circuit the client built at bootstrap: for a new circuit tor judges
# an IPv6 literal, as a name, by the IPv4 policy, which accepts only
# 127.0.0.1 and so "probably rejects" every other address, and finds no
# exit; for the same reason names cannot be tried through it here.
# Traffic stays on 127.0.0.1 and ::1.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
command -v curl > /dev/null || it_skip "curl is not installed"
PY=$(it_python3) || it_skip "python3 is not installed"
it_require_ipv6_loopback "$PY"

it_net_start --authorities 1 --relays 2 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# The two web servers on one port number.
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
www4=$(it_tmpdir) www6=$(it_tmpdir)
echo four > "$www4/f"
echo six > "$www6/f"
it_http_server "$www4" "$hport"
(cd "$www6" && exec "$PY" -m http.server "$hport" --bind ::1) \
    > "$IT_ROOT/http6.log" 2>&1 < /dev/null &
it_register_pid $! || it_fail "the ::1 web server did not start"
it_wait_port ::1 "$hport" 20 || it_fail "nothing listens on [::1]:$hport"

# A nameserver: A 127.0.0.1 and AAAA ::1 for every name, nothing else.
"$PY" -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 12:
        continue
    i = 12
    while i < len(q) and q[i]:
        i += 1 + q[i]
    if i + 5 > len(q):
        continue
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    rdata = {1: socket.inet_pton(socket.AF_INET, "127.0.0.1"),
             28: socket.inet_pton(socket.AF_INET6, "::1")}.get(qtype)
    hdr = q[:2] + struct.pack("!HHHHH", 0x8180, 1, 1 if rdata else 0, 0, 0)
    ans = b""
    if rdata:
        ans = struct.pack("!HHHIH", 0xc00c, qtype, 1, 60, len(rdata)) + rdata
    s.sendto(hdr + question + ans, peer)
' > "$net/dns.port" &
it_register_pid $! || it_fail "the nameserver did not start"
it_wait_until 10 test -s "$net/dns.port" || it_fail "no nameserver port"
echo "nameserver 127.0.0.1:$(cat "$net/dns.port")" > "$net/resolv-ipv6.conf"

EXIT_LINES="ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy accept6 [::1]:*
ExitPolicy accept6 *:$hport
ExitPolicy reject *:*
RefuseUnknownExits 0
ServerDNSResolvConfFile $net/resolv-ipv6.conf"
it_start_pctor "$net" p6 relay "$EXIT_LINES
IPv6Exit 1"
it_start_pctor "$net" p4 relay "$EXIT_LINES
IPv6Exit 0"
P6=$(it_pctor_hop "$net" p6) P4=$(it_pctor_hop "$net" p4)
d6=$(cat "$net/p6.dir")
grep -q "policy summary \"reject 1-65535\", IPv6 \"accept $hport\"" "$d6/info.log" ||
    it_fail "p6 does not log its IPv6 policy summary"

# fetch NAME EXIT TARGET FLAGS WANT: download /f through relay1, relay2
# and EXIT with a BEGIN to TARGET carrying FLAGS ("-" for none); the body
# must be WANT.
fetch() {
    local name=$1 exit=$2 target=$3 flags=$4 want=$5 err=$net/$1.err
    local fl=()
    [ "$flags" = - ] || fl=(--begin-flags "$flags")
    "$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "$target" "${fl[@]}" \
        --get /f --out "$net/$name.body" relay1 relay2 "$exit" 2> "$err" ||
        it_fail "$name: download failed: $(tail -3 "$err")"
    [ "$(cat "$net/$name.body")" = "$want" ] ||
        it_fail "$name: got '$(cat "$net/$name.body")', wanted '$want' ($(grep connected "$err"))"
    it_log "$name: $want ($(grep -o 'connected to .*' "$err"))"
}
# refused NAME EXIT TARGET FLAGS REASON: the exit ends the stream with REASON.
refused() {
    local name=$1 exit=$2 target=$3 flags=$4 reason=$5 err=$net/$1.err
    if "$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "$target" \
        --begin-flags "$flags" --get /f --out "$net/$name.body" \
        relay1 relay2 "$exit" 2> "$err"; then
        it_fail "$name: the stream was not refused"
    fi
    grep -q "stream refused (END reason $reason)" "$err" ||
        it_fail "$name: wanted END reason $reason: $(tail -3 "$err")"
    it_log "$name: END reason $reason"
}

fetch p6-literal "$P6" "[::1]:$hport" - six
grep -q "connected to ::1" "$net/p6-literal.err" ||
    it_fail "p6's CONNECTED cell does not carry ::1"
fetch p6-name "$P6" "web.test:$hport" - four
fetch p6-name-ipv6ok "$P6" "web.test:$hport" 1 four
fetch p6-name-prefer6 "$P6" "web.test:$hport" 5 six
grep -q "connected to ::1" "$net/p6-name-prefer6.err" ||
    it_fail "p6's CONNECTED cell does not carry ::1"
fetch p6-name-no4 "$P6" "web.test:$hport" 3 six
refused p4-literal "$P4" "[::1]:$hport" 1 4
refused p4-name-no4 "$P4" "web.test:$hport" 3 4
fetch p4-name-prefer6 "$P4" "web.test:$hport" 5 four
# RESOLVE: AAAA answers only from the IPv6 exit, as tor.
resolve() { # NAME EXIT: the addresses of the RESOLVED answer, sorted
    "$CIRCTEST" --timeout 60 --nodes "$nodes" --resolve web.test \
        relay1 relay2 "$2" 2> "$net/$1.err" ||
        it_fail "$1: RESOLVE failed: $(tail -3 "$net/$1.err")"
    grep -o 'resolved .*' "$net/$1.err" | cut -d' ' -f2 | sort | tr '\n' ' '
}
r6=$(resolve p6-resolve "$P6") r4=$(resolve p4-resolve "$P4")
[ "$r6" = "127.0.0.1 ::1 " ] || it_fail "p6 resolves web.test to '$r6'"
[ "$r4" = "127.0.0.1 " ] || it_fail "p4 (IPv6Exit 0) resolves web.test to '$r4'"
it_log "RESOLVE web.test: p6 '$r6', p4 '$r4'"

# The authority's copy of each descriptor.
desc_of() { # NICK
    curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/server/all" |
        awk -v n="$1" '$1 == "router" {on = ($2 == n)} on'
}
has_desc() { desc_of "$1" | grep -q '^router '; }
it_wait_until 60 has_desc p6 || it_fail "the authority has no descriptor of p6"
it_wait_until 60 has_desc p4 || it_fail "the authority has no descriptor of p4"
desc_of p6 | grep -qx "ipv6-policy accept $hport" ||
    it_fail "p6's descriptor has no 'ipv6-policy accept $hport': $(desc_of p6 | grep -E 'policy|accept|reject')"
if desc_of p4 | grep -q "^ipv6-policy"; then
    it_fail "p4 (IPv6Exit 0) publishes an ipv6-policy line"
fi
it_log "descriptors: p6 has 'ipv6-policy accept $hport', p4 none"

# The microdescriptor the authority made from p6's descriptor.
fp6=$(awk '{print $2}' "$d6/data/fingerprint")
md_digest() { # the "m" digest of p6 in the authority's microdesc consensus
    local id
    id=$("$PY" -c 'import base64, sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode().rstrip("="))' "$fp6")
    curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus-microdesc" |
        awk -v id="$id" '$1 == "r" {on = ($3 == id)} on && $1 == "m" {print $2; exit}'
}
has_md() { [ -n "$(md_digest)" ]; }
it_wait_until 90 has_md || it_fail "p6 is not in the authority's microdesc consensus"
md=$(curl -sf -m 5 "http://127.0.0.1:$auth_dirport/tor/micro/d/$(md_digest)") ||
    it_fail "cannot fetch p6's microdescriptor"
echo "$md" | grep -qx "p6 accept $hport" ||
    it_fail "p6's microdescriptor has no 'p6 accept $hport': $md"
it_log "microdescriptor: 'p6 accept $hport'"

# --- a tor client through p6 --------------------------------------------------
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (p6 and p4 included)"
fp_r1=$(awk '$1 == "relay1" {print $4}' "$nodes")
extra=$(it_tmpdir)/client.torrc
cat > "$extra" <<EOF
EntryNodes \$$fp_r1
ExitNodes \$$fp6
StrictNodes 1
ConfluxEnabled 0
EOF
it_tor_client "$net" "$extra"
via_tor() { # SOCKSPORT URL WANT
    local got
    got=$(curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$1" "$2") ||
        it_fail "curl $2 through the tor client (port $1) failed"
    [ "$got" = "$3" ] || it_fail "tor client, $2 on port $1: got '$got', wanted '$3'"
    it_log "tor client: $2 -> $got"
}
via_tor "$sport" "http://[::1]:$hport/f" six
echo "PASS: $IT_NAME"
