#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# relay-interop.sh -- pctor's relay core against real tor 0.4.9 relays.
#
# Starts a private network (1 tor authority + 3 tor relays, on 127.0.0.1)
# and one pctor relay, then checks, each with ntor and with ntor v3:
#  1. pctor's client (pctor-circtest) builds a 3-hop circuit through three
#     tor relays and fetches the last hop's own descriptor over BEGIN_DIR;
#     also with CREATE_FAST to the first hop;
#  2. a circuit tor relay -> pctor -> tor relay: a tor relay extends to pctor
#     (pctor answers as link responder and CREATE2 server) and pctor extends
#     to a tor relay (pctor authenticates as initiator); the last hop answers
#     through all three layers; the tor relay pctor connected to lists pctor's
#     fingerprint on that connection, i.e. accepted its AUTHENTICATE;
#  3. pctor refuses to extend when the identity in EXTEND2 is not the one of
#     the relay at that address (the circuit fails, pctor logs why);
#  and that the pctor relay survived all of it with no error in its log.
# No consensus is needed for this: relays extend to relays they don't know.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
[ -x "$PCTOR" ] && [ -x "$CIRCTEST" ] || it_fail "pctor binaries not built"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

# A pctor relay as a node of the network.
read -r pnode pport _ _ < <(it_privnet reserve "$net" --role pctor \
    --nickname pctor1) || it_fail "reserve failed"
pdir=$net/$pnode
cat > "$pdir/torrc" <<EOF
DataDirectory $pdir/data
ORPort 127.0.0.1:$pport
Nickname pctor1
Log info file $pdir/info.log
TestingTorNetwork 1
$(cat "$net/dirauth.torrc")
EOF
"$PCTOR" -f "$pdir/torrc" > "$pdir/stderr" 2>&1 &
echo $! > "$pdir/pid"
it_register_pid "$(cat "$pdir/pid")"
it_wait_port 127.0.0.1 "$pport" 30 || it_fail "pctor did not open its ORPort"
PHOP="pctor:$pdir/data@127.0.0.1:$pport"
pfp=$(awk '{print $2}' "$pdir/data/fingerprint")

fp_of() { awk -v n="$1" '$1 == n {print $4}' "$nodes"; }
# A tor relay serves /tor/server/authority only once it has built its own
# descriptor (after its reachability self-test, a second or two in).
has_own_desc() {
    local dirport
    dirport=$(awk -v n="$1" '$1 == n {print $3}' "$nodes")
    curl -sf -m 2 "http://127.0.0.1:$dirport/tor/server/authority" |
        grep -q "^router $1 "
}
for r in relay1 relay2 relay3; do
    it_wait_until 60 has_own_desc "$r" || it_fail "$r never built its descriptor"
done
# The descriptor a relay serves for itself carries its fingerprint.
check_desc() {
    local file=$1 nick=$2 fp spaced
    fp=$(fp_of "$nick")
    spaced=$(echo "$fp" | sed 's/..../& /g; s/ $//')
    grep -q "^router $nick " "$file" || it_fail "$file is not $nick's descriptor"
    grep -q "^fingerprint $spaced\$" "$file" || it_fail "$file: wrong fingerprint"
}

# 1. Three tor relays.
for hs in ntor ntor3 fast; do
    out=$net/desc-tor-$hs
    "$CIRCTEST" --timeout 30 --handshake "$hs" --nodes "$nodes" \
        --get /tor/server/authority --out "$out" relay1 relay2 relay3 ||
        it_fail "3-hop circuit through tor relays failed ($hs)"
    check_desc "$out" relay3
    it_log "tor-tor-tor circuit with $hs: fetched relay3's descriptor"
done

# 2. tor -> pctor -> tor.
for hs in ntor ntor3; do
    out=$net/desc-mixed-$hs
    "$CIRCTEST" --timeout 30 --handshake "$hs" --nodes "$nodes" \
        --get /tor/server/authority --out "$out" relay1 "$PHOP" relay2 ||
        it_fail "circuit relay1 -> pctor -> relay2 failed ($hs)"
    check_desc "$out" relay2
    it_log "tor-pctor-tor circuit with $hs: fetched relay2's descriptor"
done
grep -q "is open (link protocol [45], incoming, authenticated relay)" \
    "$pdir/info.log" || it_fail "pctor saw no authenticated incoming tor relay"
grep -F "(\$$(fp_of relay2)) is open" "$pdir/info.log" |
    grep -q "outgoing, authenticated relay" || it_fail "pctor's channel to relay2 did not open"
it_privnet ctl "$net" relay2 'GETINFO orconn-status' | grep -q "^\\\$$pfp" ||
    it_fail "relay2 does not list pctor's identity: it did not accept AUTHENTICATE"

# 3. EXTEND2 naming, at relay2's address, an identity no relay has. (Naming
# another relay's identity is not a mismatch on a one-IP network: tor-spec
# 5.3.1 lets pctor reuse an existing channel to that relay, whose address
# is the same IP.)
r2port=$(awk '$1 == "relay2" {print $2}' "$nodes")
r2ntor=$(awk '$1 == "relay2" {print $6}' "$nodes")
wrong="127.0.0.1:$r2port,0123456789ABCDEF0123456789ABCDEF01234567,-,$r2ntor"
if "$CIRCTEST" --timeout 20 --nodes "$nodes" relay1 "$PHOP" "$wrong" \
        2> "$net/wrong.err"; then
    it_fail "a circuit to a mismatched identity was built"
fi
grep -q "circuit closed" "$net/wrong.err" || it_fail "unexpected failure: $(cat "$net/wrong.err")"
grep -q "failed: peer has a different RSA identity than we expected" \
    "$pdir/info.log" || it_fail "pctor did not log the identity mismatch"
it_log "pctor refused to extend to a relay with the wrong identity"

kill -0 "$(cat "$pdir/pid")" || it_fail "pctor died"
if grep -E '\[(warn|err)\]' "$pdir/info.log"; then
    it_fail "pctor logged warnings or errors"
fi
it_log "all interop checks passed"
