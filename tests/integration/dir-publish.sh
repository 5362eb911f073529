#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dir-publish.sh -- pctor relays publish their server descriptors and tor
# 0.4.9 directory authorities list them in the consensus.
#
# A private network of 3 tor authorities and 2 tor relays (voting every 10
# s), plus:
#  - pctor1 and pctor2, ordinary pctor relays naming each other in MyFamily
#    and publishing to the three authorities. The test waits until a
#    consensus lists both as Running and Valid, checks that each logged the
#    authorities' answers ("Uploaded descriptor to auth0 (...): HTTP/1.0
#    200 OK"), and that the descriptor an authority serves for pctor1 is
#    the truthful one (platform, proto, family, contact, exit policy).
#  - pctor3, whose only DirAuthority is a fake authority run by this test:
#    it refuses the first upload with a 400 and takes the second, so
#    pctor3 must log the refusal with the authority's reason, retry, and
#    log the 200. The test then POSTs a copy of pctor3's descriptor with
#    one signed byte changed to the real authorities and checks that after
#    two more consensuses pctor3 is still not listed (whatever HTTP status
#    they answered: 200 is not acceptance); then it POSTs the intact copy
#    and checks that pctor3 now appears, Running and Valid -- so the
#    corrupted copy was dropped for its corruption alone.
# Not in TESTS by default (about a minute and a half).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_fail "pctor is not built ($PCTOR)"
PY=$(it_python3) || it_skip "python3 is not installed"

it_net_start --authorities 3 --relays 2 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# --- pctor1 and pctor2, publishing to the real authorities ------------------
dirauth=$(cat "$net/dirauth.torrc")
it_start_published_pctor "$net" pctor1 "$dirauth
MyFamily pctor2"
p1=$pdir
it_start_published_pctor "$net" pctor2 "$dirauth
MyFamily \$$(awk '{ print $2 }' "$p1/data/fingerprint")"
p2=$pdir
it_pctor_node_line "$p1" pctor1 >> "$nodes"
it_pctor_node_line "$p2" pctor2 >> "$nodes"
fp1=$(awk '{ print $2 }' "$p1/data/fingerprint")
fp2=$(awk '{ print $2 }' "$p2/data/fingerprint")

it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included) as Running and Valid"
it_log "consensus lists pctor1 and pctor2 as Running and Valid"

consensus() {
    curl -sf --max-time 5 --compressed \
        "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus"
}
# flags_of NICK: the s line of NICK's entry in the current consensus.
flags_of() {
    consensus | awk -v n="$1" '$1 == "r" { cur = $2 } $1 == "s" && cur == n { $1 = ""; print substr($0, 2) }'
}
# (wait accepted the first authority that lists them; ours may be a
# consensus behind.)
listed() { [ -n "$(flags_of "$1")" ]; }
it_wait_until 30 listed pctor1 && it_wait_until 30 listed pctor2 ||
    it_fail "auth0's consensus does not list pctor1 and pctor2"
it_log "pctor1 flags: $(flags_of pctor1); pctor2 flags: $(flags_of pctor2)"

# Each pctor relay logged a 200 from every authority, with its name.
while read -r kw nick rest; do
    addr=$(printf '%s\n' "$rest" | grep -o '127\.0\.0\.1:[0-9]*' | head -n1)
    for p in "$p1" "$p2"; do
        # (tor says "HTTP/1.0 200 [None]": the reason is its message.)
        grep -qF "Uploaded descriptor to $nick ($addr): HTTP/1.0 200 " "$p/info.log" ||
            it_fail "${p##*/} did not log the answer of $nick ($addr)"
    done
done < "$net/dirauth.torrc"

# The descriptor the authorities hold for pctor1 is the one it built.
desc=$(curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/server/fp/$fp1") ||
    it_fail "the authority does not serve pctor1's descriptor"
expect() {
    printf '%s\n' "$desc" | grep -qxF -- "$1" || it_fail "pctor1's descriptor lacks '$1'"
}
expect "router pctor1 127.0.0.1 $(cat "$p1/orport") 0 0"
expect "proto Conflux=1 DirCache=1 Desc=2 FlowCtrl=1-2 Link=4-5 LinkAuth=3 Microdesc=2 Relay=2-4"
expect "contact pctor test relay pctor1"
expect "family pctor2"
expect "reject *:*"
printf '%s\n' "$desc" | grep -q '^platform pctor ' || it_fail "pctor1's platform is not pctor's"
printf '%s\n' "$desc" | grep -q '^platform Tor ' && it_fail "pctor1 claims to be Tor"
# pctor1 caches the directory and answers BEGIN_DIR, so it says so.
printf '%s\n' "$desc" | grep -qx 'tunnelled-dir-server' || it_fail "pctor1 does not offer tunnelled directory service"
desc2=$(curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/server/fp/$fp2") ||
    it_fail "the authority does not serve pctor2's descriptor"
printf '%s\n' "$desc2" | grep -qxF "family \$$fp1" || it_fail "pctor2's family line is wrong"
it_log "the authorities serve pctor1's and pctor2's descriptors as built"

# --- pctor3 and a fake authority ----------------------------------------------
read -r fnode _ fport _ < <(it_privnet reserve "$net" --role fakeauth \
    --nickname fakeauth) || it_fail "reserve failed"
fdir=$net/$fnode
cat > "$fdir/fakeauth.py" <<'EOF'
# A directory authority that refuses the first upload and keeps the rest.
import http.server, sys
port, outfile = int(sys.argv[1]), sys.argv[2]
count = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers["Content-Length"]))
        count += 1
        if self.path != "/tor/" or count == 1:
            self.send_response(400, "Fake authority says no (upload %d)" % count)
        else:
            with open(outfile, "wb") as f:
                f.write(body)
            self.send_response(200, "OK")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
"$PY" "$fdir/fakeauth.py" "$fport" "$fdir/desc" > "$fdir/out" 2>&1 &
echo $! > "$fdir/pid"
it_register_pid "$(cat "$fdir/pid")" || it_fail "the fake authority did not start"
it_wait_port 127.0.0.1 "$fport" 20 || it_fail "the fake authority does not listen"
zeros=0000000000000000000000000000000000000000
it_start_published_pctor "$net" pctor3 "DirAuthority fakeauth orport=1 no-v2 v3ident=$zeros 127.0.0.1:$fport $zeros"
p3=$pdir
fp3=$(awk '{ print $2 }' "$p3/data/fingerprint")
it_wait_until 30 test -s "$fdir/desc" || it_fail "pctor3 did not upload to the fake authority"
grep -qF "Authority fakeauth (127.0.0.1:$fport) refused our descriptor: HTTP/1.0 400 Fake authority says no (upload 1)" \
    "$p3/info.log" || it_fail "pctor3 did not log the refusal with its reason"
grep -qF "Uploaded descriptor to fakeauth (127.0.0.1:$fport): HTTP/1.0 200 OK" "$p3/info.log" ||
    it_fail "pctor3 did not log the fake authority's 200"
it_log "pctor3 logged the fake authority's refusal, retried, and logged its 200"

# A copy with one signed byte changed (the uptime) is dropped by the
# authorities; the intact copy is then accepted.
sed 's/^uptime \([0-9]*\)$/uptime 9\1/' "$fdir/desc" > "$fdir/desc.bad"
cmp -s "$fdir/desc" "$fdir/desc.bad" && it_fail "could not corrupt pctor3's descriptor"
post() { # post FILE DIRPORT: prints the HTTP status
    curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
        -H 'Content-Type: text/plain' --data-binary "@$1" "http://127.0.0.1:$2/tor/"
}
codes=
while read -r _ _ _ _ _ addr _; do
    codes="$codes $(post "$fdir/desc.bad" "${addr##*:}")"
done < "$net/dirauth.torrc"
it_log "authorities answered the corrupted descriptor with HTTP$codes"
valid_after() { consensus | awk '$1 == "valid-after" { print $2 " " $3; exit }'; }
va0=$(valid_after)
newer_consensus() { local v; v=$(valid_after); [ -n "$v" ] && [ "$v" != "$1" ]; }
it_wait_until 60 newer_consensus "$va0" || it_fail "no new consensus"
va1=$(valid_after)
it_wait_until 60 newer_consensus "$va1" || it_fail "no new consensus"
consensus | grep -q "^r pctor3 " && it_fail "the authorities listed pctor3 from a corrupted descriptor"
for d in $(awk '{ print $6 }' "$net/dirauth.torrc"); do
    curl -sf --max-time 5 "http://127.0.0.1:${d##*:}/tor/server/fp/$fp3" > /dev/null &&
        it_fail "authority ${d} holds the corrupted descriptor"
done
it_log "two consensuses later pctor3 is not listed: the corrupted copy was dropped"

codes=
while read -r _ _ _ _ _ addr _; do
    codes="$codes $(post "$fdir/desc" "${addr##*:}")"
done < "$net/dirauth.torrc"
it_log "authorities answered the intact descriptor with HTTP$codes"
it_pctor_node_line "$p3" pctor3 >> "$nodes"
it_privnet wait "$net" --timeout 60 --flags Running,Valid ||
    it_fail "pctor3's intact descriptor did not get it listed"
it_log "with the intact copy pctor3 is listed: $(flags_of pctor3)"

for p in "$p1" "$p2" "$p3"; do
    kill -0 "$(cat "$p/pid")" 2>/dev/null || it_fail "${p##*/} died"
done
for p in "$p1" "$p2"; do
    if grep -E '\[(warn|err)\]' "$p/info.log"; then
        it_fail "${p##*/} logged warnings or errors"
    fi
done
it_log "all descriptor publishing checks passed"
