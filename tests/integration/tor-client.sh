#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tor-client.sh -- an unmodified tor 0.4.9 client uses pctor relays that
# it found in the consensus.
#
# A private network (1 tor authority, 3 tor relays) plus two pctor relays
# that publish their descriptors: p1 (middle) and p2 (exit, accepting
# only 127.0.0.1). The test waits until the authority's consensus lists
# both pctor relays as Running and Valid, then starts a tor client with
# MiddleNodes p1 and ExitNodes p2 (UseMicrodescriptors 0: the loopback-only
# policy summarises to "reject all" in microdescriptors) and downloads a
# file from a local web server through it with curl; the sha256 must match,
# and p2's log must show the exit connection. The directory answers p1 and
# p2 gave (compressed as the requests' Accept-Encoding allowed) are
# summarised by encoding.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${TOR_CLIENT_TEST_MB:-50}

it_net_start --authorities 1 --relays 3 --exit-relays 0

it_web_file "$MB"

it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"

it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists p1 and p2 as Running, Valid"

# p1 caches the directory like a tor relay and serves it over BEGIN_DIR.
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
d1=$(cat "$net/p1.dir")
P1=$(it_pctor_hop "$net" p1)
cons=$(it_tmpdir)/cons
fetch_cons() {
    "$CIRCTEST" --timeout 20 --get /tor/status-vote/current/consensus-microdesc \
        --out "$cons" "$P1" 2>/dev/null &&
        head -1 "$cons" | grep -q '^network-status-version 3 microdesc' &&
        grep -q '^r p1 ' "$cons" && grep -q '^r p2 ' "$cons"
}
# p1 refreshes its cache as tor relays do (within the consensus' lifetime).
it_wait_until 120 fetch_cons || it_fail "p1 does not serve a consensus listing p1 and p2"
grep -q '^directory-signature ' "$cons" || it_fail "p1's consensus has no signature"
md=$(awk '/^m / {print $2; exit}' "$cons")
"$CIRCTEST" --timeout 20 --get "/tor/micro/d/$md" --out "$cons.md" "$P1" 2>/dev/null ||
    it_fail "p1 does not serve microdescriptor $md"
grep -q '^ntor-onion-key ' "$cons.md" || it_fail "p1 served no microdescriptor"
# ... and the ns flavor with server descriptors, for tor clients with
# UseMicrodescriptors 0 (like the one below).
fetch_ns() {
    "$CIRCTEST" --timeout 20 --get /tor/status-vote/current/consensus \
        --out "$cons.ns" "$P1" 2>/dev/null &&
        head -1 "$cons.ns" | grep -q '^network-status-version 3$' &&
        grep -q '^r p2 ' "$cons.ns"
}
it_wait_until 60 fetch_ns || it_fail "p1 does not serve an ns consensus listing p2"
fp_r1=$(awk '$1 == "relay1" {print $4}' "$nodes")
fetch_sd() {
    "$CIRCTEST" --timeout 20 --get "/tor/server/fp/$fp_r1+$(awk '$1 == "p2" {print $4}' "$nodes")" \
        --out "$cons.sd" "$P1" 2>/dev/null &&
        grep -q '^router relay1 ' "$cons.sd" && grep -q '^router p2 ' "$cons.sd"
}
it_wait_until 60 fetch_sd || it_fail "p1 does not serve server descriptors by fingerprint"
# by the digest the ns consensus lists (base64 there, hex in the URL)
d64=$(awk '$1 == "r" && $2 == "relay1" {print $4}' "$cons.ns")
dhex=$(python3 -c 'import base64,sys; s=sys.argv[1]; print(base64.b64decode(s + "=" * (-len(s) % 4)).hex())' "$d64")
"$CIRCTEST" --timeout 20 --get "/tor/server/d/$dhex" --out "$cons.sd1" "$P1" 2>/dev/null ||
    it_fail "p1 does not serve relay1's descriptor by digest"
grep -q '^router relay1 ' "$cons.sd1" || it_fail "p1 served the wrong descriptor for $dhex"
it_log "p1 serves its cached consensus (both flavors), microdescriptors and server descriptors over BEGIN_DIR"

# pctor's own client: paths chosen from the consensus p1 cached (verified
# against the network's authorities), pctor and tor relays in each position.
auth_args=()
while read -r line; do auth_args+=(--DirAuthority "$line"); done < "$net/dirauth.torrc"
choose() { # NAME CIRCTEST-ARGS...
    local name=$1
    shift
    "$CIRCTEST" --timeout 60 --consensus "$d1/data" "${auth_args[@]}" --testing \
        "$@" 2> "$net/choose-$name.err" || it_fail "$name: $(cat "$net/choose-$name.err")"
    grep 'hop [0-9]' "$net/choose-$name.err" | tr '\n' ' ' >&2; echo >&2
}
choose pctor-guard --EntryNodes p1 --ExitNodes p2 --begin "127.0.0.1:$hport" \
    --get /file --out "$cons.f1"
# (The guard is pinned too: otherwise it may be p1 itself, leaving no middle.)
choose pctor-middle --EntryNodes relay1 --MiddleNodes p1 --ExitNodes p2 \
    --begin "127.0.0.1:$hport" \
    --get /file --out "$cons.f2"
for f in "$cons.f1" "$cons.f2"; do
    [ "$(sha256sum < "$f" | cut -d' ' -f1)" = "$want" ] || it_fail "sha256 mismatch ($f)"
done
choose tor-last --EntryNodes p2 --MiddleNodes p1 --ExitNodes relay3 \
    --get /tor/server/authority --out "$cons.desc"
grep -q '^router relay3 ' "$cons.desc" || it_fail "tor-last: not relay3's descriptor"
grep -q 'hop 1: p1 ' "$net/choose-pctor-guard.err" || it_fail "EntryNodes not honoured"
grep -q 'hop 2: p1 ' "$net/choose-pctor-middle.err" || it_fail "MiddleNodes not honoured"
grep -q 'hop 3: relay3 ' "$net/choose-tor-last.err" || it_fail "ExitNodes not honoured"
it_log "pctor's client built circuits chosen from the consensus (pctor guard, middle, exit; tor last hop)"

fp1=$(awk '$1 == "p1" {print $4}' "$nodes")
fp2=$(awk '$1 == "p2" {print $4}' "$nodes")
# The guard is pinned to a tor relay: a client that drew p1 as its guard
# could never use it as the middle ("Restricted middle not available").
extra=$(it_tmpdir)/client.torrc
cat > "$extra" <<EOF
UseMicrodescriptors 0
EntryNodes \$$fp_r1
MiddleNodes \$$fp1
ExitNodes \$$fp2
StrictNodes 1
ConfluxEnabled 0
EOF
read -r cnode sport _ < <(it_privnet add-client "$net" --torrc-extra "$extra" --owner-pid $$) ||
    it_fail "could not start the tor client"
it_run "$PRIVNET" wait-client "$net" "$cnode" --timeout 120 ||
    it_fail "the tor client did not bootstrap"

out=$(it_tmpdir)/body
t0=$SECONDS
curl -sf --max-time 120 --socks5-hostname "127.0.0.1:$sport" \
    "http://127.0.0.1:$hport/file" -o "$out" ||
    it_fail "curl through the tor client failed"
got=$(sha256sum < "$out" | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "sha256 mismatch through tor -> pctor"
it_log "tor client fetched $MB MiB through pctor middle and exit ($((SECONDS - t0)) s), sha256 ok"

d2=$(cat "$net/p2.dir")
grep -q "Created circuit" "$d1/info.log" 2>/dev/null ||
    grep -q "is open (link protocol [45], incoming" "$d1/info.log" ||
    it_fail "p1 saw no circuit from the tor client's guard"
grep -q 'Exit stream [0-9]* on circuit [0-9]* connected' "$d2/info.log" ||
    it_fail "p2 did not carry the tor client's exit stream"
for d in "$d1" "$d2"; do
    if grep -E '\[(warn|err)\]' "$d/info.log"; then it_fail "a pctor relay logged warnings"; fi
done
# The tor client picks its directory caches at random among five relays;
# what p1 and p2 served (to it and to pctor-circtest), by encoding. Any
# lzma or zstd answer here was decoded by tor 0.4.9 (dir-cache.sh makes
# sure one is).
it_log "p1/p2 directory answers by encoding: $(cat "$d1/info.log" "$d2/info.log" |
    grep -o 'Serving /tor/[^ ]* ([0-9]* bytes, [a-z-]*' | sed 's/.*, //' | sort | uniq -c | tr -s ' \n' ' ')"
it_log "tor client interop passed"
