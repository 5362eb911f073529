#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dir-client.sh -- pctor's directory client against real tor 0.4.9
# directory authorities.
#
# Starts a private network of 3 authorities and 3 relays (1 exit), waits
# for a consensus listing all six, then with src/tools/dirtest/pctor-dirtest:
#   1. fetches and verifies the microdesc consensus, certificates and
#      microdescriptors into an empty DataDirectory; checks every relay's
#      identity, ed25519 id and ntor key against nodes.txt;
#   2. chooses paths and checks they have distinct relays;
#   3. the same with UseMicrodescriptors 0 (ns consensus + server
#      descriptors);
#   4. with the wrong v3ident for two authorities: refused, clearly;
#   5. tampers with the cached consensus: show refuses it with a clear
#      message, fetch rejects it and fetches a good one;
#   6. a pctor client daemon (SocksPort, no ORPort) bootstraps from the
#      authorities, then fetches the microdescriptors -- and later
#      consensuses -- from directory caches (the tor relays, which
#      advertise tunnelled-dir-server) over BEGIN_DIR on one-hop circuits:
#      its log shows every descriptor batch served by a cache and none
#      fetched from an authority's DirPort;
#   7. stops the network and works offline from the cache (show, path);
#      an offline fetch fails cleanly and leaves the cache usable.
# Step 1 also checks compression against the real authorities: pctor
# offers deflate, gzip, zstd and lzma (Accept-Encoding), and tor 0.4.9
# answers the consensus lzma-encoded and the descriptors zstd-encoded,
# which pctor decodes.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
DIRTEST=${PCTOR_DIRTEST:-${top_builddir:?}/src/tools/dirtest/pctor-dirtest}
[ -x "$DIRTEST" ] || it_skip "$DIRTEST is not built"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 3 --relays 3 --exit-relays 1 \
    --base-port auto || it_fail "pctor-privnet start failed"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "no consensus listing every relay"

AUTH_ARGS=()
while read -r _ line; do AUTH_ARGS+=(--DirAuthority "$line"); done < "$net/dirauth.torrc"
[ "${#AUTH_ARGS[@]}" = 6 ] || it_fail "dirauth.torrc does not have 3 lines"

out=$(it_tmpdir)
# dirtest NAME DATADIR ARGS...: run pctor-dirtest, stdout to $out/NAME.out,
# stderr to $out/NAME.err; returns its status.
dirtest() {
    local name=$1 dd=$2
    shift 2
    it_run "$DIRTEST" --datadir "$dd" "${AUTH_ARGS[@]}" "$@" \
        > "$out/$name.out" 2> "$out/$name.err"
}
show_err() { sed 's/^/    /' "$out/$1.err" >&2; }

# --- 1. fetch into an empty DataDirectory ---------------------------------------
dd=$(it_tmpdir)
chmod 700 "$dd"
# `privnet wait` saw every relay in one authority's consensus; the one this
# fetch asks may still serve the previous consensus for a voting interval,
# so start again from an empty directory until all six are listed (30 s).
# For the same reason an authority may not have published its consensus
# yet and answer 404 for what the others serve: the fetch fails, and is
# tried again the same way.
tries=0
while :; do
    if dirtest fetch1 "$dd" --verbose fetch; then
        grep -q '^fetch ok=1 .* relays=6 with_desc=6$' "$out/fetch1.out" && break
        why="got an older consensus ($(grep -o 'relays=[0-9]*' "$out/fetch1.out"))"
    else
        why="failed ($(tail -n 1 "$out/fetch1.err"))"
    fi
    tries=$((tries + 1))
    [ $tries -lt 6 ] || { show_err fetch1; it_fail "first fetch $why, 6 times"; }
    it_log "first fetch $why; again"
    rm -rf "$dd" && mkdir -m 700 "$dd"
    sleep 5
done
# Offered every method, tor's authorities chose lzma for the consensus
# (precompressed) and zstd for the streamed documents; both decoded.
grep -q 'Content-Encoding x-tor-lzma, [0-9]* bytes decoded' "$out/fetch1.err" ||
    { show_err fetch1; it_fail "no lzma-encoded answer from the authorities"; }
grep -q 'Content-Encoding x-zstd, [0-9]* bytes decoded' "$out/fetch1.err" ||
    { show_err fetch1; it_fail "no zstd-encoded answer from the authorities"; }
it_log "authorities answered with $(grep -o 'Content-Encoding [a-z-]*' "$out/fetch1.err" | sort | uniq -c | tr -s ' \n' ' ')"
for f in cached-certs cached-microdesc-consensus cached-microdescs; do
    [ -s "$dd/$f" ] || it_fail "$f was not written"
done
dirtest show1 "$dd" show || { show_err show1; it_fail "show failed"; }
[ "$(grep -c '^node .* usable=1$' "$out/show1.out")" = 6 ] ||
    it_fail "show does not list 6 usable relays"
while read -r nick _ _ fp ed ntor _; do
    grep -q "^node $nick $fp .* ntor=$ntor ed25519=$ed " "$out/show1.out" ||
        it_fail "show: $nick's identity/keys differ from nodes.txt"
done < "$net/nodes.txt"
it_log "fetched and verified: $(head -n1 "$out/show1.out")"

# --- 2. paths -------------------------------------------------------------------
dirtest path1 "$dd" --EnforceDistinctSubnets 0 --count 50 path ||
    { show_err path1; it_fail "path selection failed"; }
[ "$(grep -c '^path ' "$out/path1.out")" = 50 ] || it_fail "not 50 paths"
while read -r _ a b c; do
    [ "$a" != "$b" ] && [ "$b" != "$c" ] && [ "$a" != "$c" ] ||
        it_fail "a path repeats a relay: $a $b $c"
done < "$out/path1.out"
# On 127.0.0.1 every relay is in the same /16: with the default
# EnforceDistinctSubnets there is no path, and the message says so.
dirtest path2 "$dd" path && it_fail "a path despite one shared /16"
grep -q 'no path' "$out/path2.err" || it_fail "no message for the impossible path"
# ExcludeNodes is honoured.
exitfp=$(awk '$7 == "exit" { print $4 }' "$net/nodes.txt")
dirtest path3 "$dd" --EnforceDistinctSubnets 0 --ExcludeNodes "$exitfp" --count 30 path ||
    it_fail "path with ExcludeNodes failed"
grep -q "$exitfp" "$out/path3.out" && it_fail "ExcludeNodes not honoured"

# --- 3. UseMicrodescriptors 0 -------------------------------------------------------
dd0=$(it_tmpdir)
chmod 700 "$dd0"
dirtest fetch0 "$dd0" --UseMicrodescriptors 0 fetch ||
    { show_err fetch0; it_fail "fetch with UseMicrodescriptors 0 failed"; }
grep -q '^fetch ok=1 .* relays=6 with_desc=6$' "$out/fetch0.out" ||
    it_fail "ns fetch: $(cat "$out/fetch0.out")"
[ -s "$dd0/cached-consensus" ] && [ -s "$dd0/cached-descriptors" ] ||
    it_fail "ns cache files missing"
dirtest show0 "$dd0" --UseMicrodescriptors 0 show || it_fail "ns show failed"
[ "$(grep -c '^node .* usable=1$' "$out/show0.out")" = 6 ] ||
    it_fail "ns show does not list 6 usable relays"

# --- 4. wrong authority keys -------------------------------------------------------
ddw=$(it_tmpdir)
chmod 700 "$ddw"
WRONG=()
i=0
while read -r _ line; do
    if [ $i -lt 2 ]; then
        # Change the first hex digit of the v3ident.
        v3=${line#*v3ident=}
        case ${v3:0:1} in F) d=E ;; *) d=F ;; esac
        line="${line%%v3ident=*}v3ident=$d${v3:1}"
    fi
    WRONG+=(--DirAuthority "$line")
    i=$((i + 1))
done < "$net/dirauth.torrc"
# Right at a voting boundary an authority may answer 404 for a moment:
# retry then, but any other outcome is final.
for attempt in 1 2 3 4 5; do
    it_run "$DIRTEST" --datadir "$ddw" "${WRONG[@]}" --timeout 30 fetch \
        > "$out/wrong.out" 2> "$out/wrong.err" && it_fail "a consensus verified with wrong keys"
    grep -q 'good signature' "$out/wrong.err" && break
    grep -q 'HTTP 404' "$out/wrong.err" || break
    sleep 2
done
grep -q 'good signature' "$out/wrong.err" ||
    { show_err wrong; it_fail "no clear message for the wrong authority keys"; }
[ -e "$ddw/cached-microdesc-consensus" ] && it_fail "an unverified consensus was cached"

# --- 5. a tampered cached consensus ------------------------------------------------
sed -i -E '0,/^w Bandwidth=/s/^w Bandwidth=([0-9]+)/w Bandwidth=9\1/' "$dd/cached-microdesc-consensus"
dirtest show2 "$dd" show && it_fail "show used a tampered consensus"
grep -q 'Rejecting the cached consensus' "$out/show2.err" &&
    grep -q 'bad signature' "$out/show2.err" ||
    { show_err show2; it_fail "no clear message for the tampered consensus"; }
dirtest fetch2 "$dd" fetch || { show_err fetch2; it_fail "refetch after tampering failed"; }
grep -q '^fetch ok=1 .*consensus_accepted=1 .*cache_consensus_rejected=1 ' "$out/fetch2.out" ||
    it_fail "refetch: $(cat "$out/fetch2.out")"
dirtest show3 "$dd" show || it_fail "show after the refetch failed"
# Truncated: same story.
head -c 3000 "$dd/cached-microdesc-consensus" > "$dd/t" && mv "$dd/t" "$dd/cached-microdesc-consensus"
dirtest show4 "$dd" show && it_fail "show used a truncated consensus"
grep -q 'Rejecting the cached consensus' "$out/show4.err" || it_fail "no message for truncation"
dirtest fetch3 "$dd" fetch || it_fail "refetch after truncation failed"

# --- 6. a pctor client fetches through directory caches over BEGIN_DIR ------------
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
if [ -x "$PCTOR" ]; then
    # tor's caches fetch microdescriptors some time after each consensus
    # (and answer 404 until then, which sends a client to the next
    # source): wait until every tor relay serves all six on its DirPort.
    mds=$(awk '/^m / {print $2}' "$dd/cached-microdesc-consensus" | paste -sd-)
    caches_ready() {
        local dp n
        for dp in $(awk '$7 == "relay" || $7 == "exit" {print $3}' "$net/nodes.txt"); do
            n=$(curl -sf --max-time 5 --compressed "http://127.0.0.1:$dp/tor/micro/d/$mds" |
                grep -c '^ntor-onion-key') || return 1
            [ "$n" -ge 6 ] || return 1
        done
    }
    it_wait_until 90 caches_ready || it_fail "the tor relays do not serve the microdescriptors"
    it_start_pctor "$net" pclient client ""
    pcd=$(cat "$net/pclient.dir")
    # The first consensus and the certificates come from the authorities
    # (no consensus: no caches known); the microdescriptors then come
    # from caches. Wait for all six.
    cache_descs() {
        [ "$(grep -c 'directory cache .*BEGIN_DIR) served [1-9][0-9]* of the' "$pcd/info.log")" -ge 1 ] &&
            [ "$(grep 'BEGIN_DIR) served' "$pcd/info.log" | awk '{s += $(NF-6)} END {print s + 0}')" -ge 6 ]
    }
    it_wait_until 90 cache_descs ||
        { tail -n 30 "$pcd/info.log" >&2; it_fail "the pctor client got no microdescriptors from a cache"; }
    grep 'Fetching descriptors from ' "$pcd/info.log" | grep -v 'from directory cache' &&
        it_fail "microdescriptors were fetched from an authority's DirPort"
    grep -q 'Tunnelled directory request .* failed' "$pcd/info.log" &&
        it_log "note: $(grep -c 'Tunnelled directory request .* failed' "$pcd/info.log") tunnelled request(s) failed and were retried elsewhere"
    # Later consensuses come from caches too (10-second voting here).
    it_wait_until 60 grep -q 'Accepted a microdesc consensus from directory cache' "$pcd/info.log" ||
        { tail -n 30 "$pcd/info.log" >&2; it_fail "no consensus from a directory cache"; }
    it_pctor_alive_quiet "$net" pclient
    it_log "pctor client: $(grep -o 'directory cache [a-z0-9]* ([0-9.:]*, BEGIN_DIR) served [0-9]* of the [0-9]*' "$pcd/info.log" | head -3 | tr '\n' ';')"
else
    it_log "skipping the pctor client part: $PCTOR is not built"
fi

# --- 7. offline ------------------------------------------------------------------------
it_privnet stop "$net" || it_fail "stop failed"
dirtest show5 "$dd" show || { show_err show5; it_fail "offline show failed"; }
[ "$(grep -c '^node .* usable=1$' "$out/show5.out")" = 6 ] || it_fail "offline show incomplete"
dirtest path5 "$dd" --EnforceDistinctSubnets 0 --count 5 path || it_fail "offline path failed"
# A fetch with every authority down fails (once the consensus is stale)
# but the cache stays usable.
sleep 11
dirtest fetch5 "$dd" --timeout 20 fetch && it_fail "a fetch succeeded with every authority down"
dirtest show6 "$dd" show || it_fail "the cache is unusable after a failed fetch"
it_log "pass"
exit 0
