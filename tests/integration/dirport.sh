#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dirport.sh -- a pctor relay's DirPort, as tor's: it is published in the
# descriptor's router line, a tor 0.4.9 authority lists it in the
# consensus, and plain HTTP clients (curl) fetch the directory from it.
#
# One tor authority and one pctor relay p1 with "DirPort 127.0.0.1:PORT"
# and a DirPortFrontPage.
# Once the consensus lists p1 as Running and Valid:
#   1. the authority's ns consensus has p1's "r" line with PORT as its
#      DirPort field, and p1's own descriptor (/tor/server/authority, from
#      the DirPort) has "router p1 127.0.0.1 ORPORT 0 PORT";
#   2. curl fetches /tor/status-vote/current/consensus (and the microdesc
#      flavour) from the DirPort: a consensus that lists p1, the same
#      document p1 cached; ".z" gives the deflate-encoded form, which
#      decodes to the same bytes; a missing document is 404; "/" is the
#      DirPortFrontPage file, as text/html;
#   3. bad requests are answered as the man page says: a non-GET 400; a
#      request that never ends is answered 408 and closed within the
#      request timeout (10 s), not kept open.
# p1 logs no warning.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
command -v curl > /dev/null || it_skip "curl is not installed"
PY=$(it_python3) || it_skip "python3 is not installed"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

read -r node port dport _ < <(it_privnet reserve "$net" --role pctor \
    --nickname p1) || it_fail "reserve failed"
d=$net/$node
printf '<html><body>This is a pctor test relay.</body></html>\n' > "$d/front.html"
cat > "$d/torrc" <<EOT
DataDirectory $d/data
ORPort 127.0.0.1:$port
DirPort 127.0.0.1:$dport
DirPortFrontPage $d/front.html
Address 127.0.0.1
Nickname p1
Log info file $d/info.log
TestingTorNetwork 1
$(cat "$net/dirauth.torrc")
EOT
"$PCTOR" -f "$d/torrc" > "$d/stderr" 2>&1 &
echo $! > "$d/pid"
it_register_pid "$(cat "$d/pid")" || it_fail "p1 did not start: $(cat "$d/stderr")"
it_wait_port 127.0.0.1 "$port" 30 || it_fail "p1 did not open its ORPort"
it_wait_port 127.0.0.1 "$dport" 5 || it_fail "p1 did not open its DirPort"
echo "$d" > "$net/p1.dir"
fp=$(awk '{ print $2 }' "$d/data/fingerprint")
echo "p1 $port $dport $fp $(awk '{ print $2 }' "$d/data/fingerprint-ed25519") - pctor" >> "$nodes"
grep -q "Opened Directory listener on 127.0.0.1:$dport" "$d/info.log" ||
    it_fail "p1 did not log its DirPort"

it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list p1 as Running and Valid"

# --- 1. the DirPort in the descriptor and the consensus ----------------------
get() { curl -sf --max-time 5 "http://127.0.0.1:$1$2"; }
get "$dport" /tor/server/authority > "$d/desc" ||
    it_fail "p1's DirPort does not serve /tor/server/authority"
grep -qx "router p1 127.0.0.1 $port 0 $dport" "$d/desc" ||
    it_fail "p1's router line does not carry its DirPort: $(grep '^router ' "$d/desc")"
listed() {
    get "$auth_dirport" /tor/status-vote/current/consensus > "$d/auth-cons" &&
        grep -Eq "^r p1 .* 127\.0\.0\.1 $port $dport\$" "$d/auth-cons"
}
it_wait_until 60 listed ||
    it_fail "the authority's consensus does not list p1's DirPort: $(grep '^r p1 ' "$d/auth-cons")"
it_log "the authority lists p1 with DirPort $dport: $(grep '^r p1 ' "$d/auth-cons")"

# --- 2. curl fetches the consensus from p1's DirPort ------------------------
have_cons() {
    get "$dport" /tor/status-vote/current/consensus > "$d/cons" &&
        grep -q "^r p1 " "$d/cons" &&
        get "$dport" /tor/status-vote/current/consensus-microdesc > "$d/cons-md" &&
        grep -q "^r p1 " "$d/cons-md"
}
it_wait_until 60 have_cons ||
    it_fail "p1's DirPort does not serve both consensus flavours listing p1"
head -1 "$d/cons" | grep -qx "network-status-version 3" ||
    it_fail "not a consensus: $(head -1 "$d/cons")"
head -1 "$d/cons-md" | grep -qx "network-status-version 3 microdesc" ||
    it_fail "not a microdesc consensus: $(head -1 "$d/cons-md")"
# The document p1 serves is one p1 cached (it may have fetched a newer one
# between the two reads: compare with either file).
cmp -s "$d/cons" "$d/data/cached-consensus" || {
    sleep 1
    get "$dport" /tor/status-vote/current/consensus > "$d/cons"
    cmp -s "$d/cons" "$d/data/cached-consensus"
} || it_fail "the consensus from the DirPort is not p1's cached-consensus"
get "$dport" /tor/status-vote/current/consensus.z > "$d/cons.z" ||
    it_fail "no /tor/status-vote/current/consensus.z"
"$PY" - "$d/cons.z" "$d/data/cached-consensus" <<'PYEOF' || it_fail "the .z consensus does not decode to p1's cached-consensus"
import sys, zlib
z = open(sys.argv[1], "rb").read()
plain = open(sys.argv[2], "rb").read()
assert len(z) < len(plain), "not compressed"
assert zlib.decompress(z) == plain, "decodes to something else"
PYEOF
hdr=$(curl -s -o /dev/null -D - --max-time 5 \
    "http://127.0.0.1:$dport/tor/status-vote/current/consensus.z")
echo "$hdr" | grep -qi '^Content-Encoding: deflate' ||
    it_fail ".z was not deflate-encoded: $hdr"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$dport/tor/nothing")
[ "$code" = 404 ] || it_fail "a missing document gave $code, not 404"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST -d x \
    "http://127.0.0.1:$dport/tor/")
[ "$code" = 400 ] || it_fail "a POST gave $code, not 400"
hdr=$(curl -s -D - -o "$d/front.got" --max-time 5 "http://127.0.0.1:$dport/")
echo "$hdr" | grep -qi '^Content-Type: text/html' ||
    it_fail "the front page is not text/html: $hdr"
cmp -s "$d/front.got" "$d/front.html" || it_fail "/ is not the DirPortFrontPage file"
it_log "curl: consensus $(wc -c < "$d/cons") bytes, .z $(wc -c < "$d/cons.z") bytes, microdesc consensus $(wc -c < "$d/cons-md") bytes"

# --- 3. a request that never ends -----------------------------------------
start=$SECONDS
ans=$("$PY" - "$dport" <<'PYEOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
s.sendall(b"GET /tor/status-vote/")
data = b""
for i in range(30):           # a byte every half second
    time.sleep(0.5)
    try:
        s.sendall(b"a")
    except OSError:
        break
    s.setblocking(False)
    try:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    except BlockingIOError:
        pass
    s.setblocking(True)
print(data.decode(errors="replace").split("\r\n")[0])
PYEOF
)
took=$((SECONDS - start))
[ "$ans" = "HTTP/1.0 408 Request timeout" ] || it_fail "a slow request got '$ans', not 408"
[ "$took" -le 13 ] || it_fail "the slow request was kept open for $took s"
it_log "a slow request was answered '$ans' and closed after $took s"

it_pctor_alive_quiet "$net" p1
it_log "pass"
