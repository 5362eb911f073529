#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dir-cache.sh -- pctor relays as the only directory caches of a network:
# tor 0.4.9 and pctor clients fetch from them over BEGIN_DIR, and the
# answers travel lzma- and zstd-encoded.
#
# One tor authority and two pctor relays, p1 and p2 (an exit accepting
# only 127.0.0.1), so the only caches a client can pick besides the
# authority are pctor relays. Once the
# consensus lists both and both have cached every microdescriptor:
#   1. a pctor client (SocksPort, no ORPort) bootstraps: the first
#      consensus and the certificates from the authority, then the
#      microdescriptors and later consensuses from p1/p2 over BEGIN_DIR
#      (the authority is never asked for descriptors); p1/p2's logs show
#      they served them, the consensus lzma-encoded and the descriptors
#      zstd-encoded, as the client's Accept-Encoding allowed;
#   2. a tor 0.4.9 client (UseMicrodescriptors 0: the ns consensus and
#      server descriptors) bootstraps to 100% in the same network, with
#      the pctor caches answering its requests in lzma/zstd, which tor
#      decodes (it would not bootstrap otherwise).
# Neither pctor relay nor the pctor client logs a warning.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
# p1 keeps its cache apart (CacheDirectory) and lets its group read its
# DataDirectory, as tor's options say.
cache1=$net/p1-cache
it_start_pctor "$net" p1 relay "CacheDirectory $cache1
DataDirectoryGroupReadable 1"
# p2 is a (loopback-only) exit, so the tor client finds an exit path.
it_start_pctor "$net" p2 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 120 --flags Running,Valid,V2Dir ||
    it_fail "the consensus does not list p1 and p2 as Running, Valid, V2Dir"
d1=$(cat "$net/p1.dir")
d2=$(cat "$net/p2.dir")

# Both caches hold a descriptor of every relay (authority, p1, p2).
have_descs() {
    local c
    for c in "$cache1" "$d2/data"; do
        [ "$(cat "$c/cached-microdescs" 2>/dev/null | grep -c '^ntor-onion-key')" -ge 3 ] ||
            return 1
        [ "$(cat "$c/cached-descriptors" 2>/dev/null | grep -c '^router ')" -ge 3 ] ||
            return 1
    done
}
it_wait_until 90 have_descs || it_fail "p1/p2 did not cache every descriptor"
[ "$(stat -c %a "$d1/data")" = 750 ] ||
    it_fail "DataDirectoryGroupReadable 1: p1's DataDirectory has mode $(stat -c %a "$d1/data")"
[ "$(stat -c %a "$cache1")" = 700 ] || it_fail "p1's CacheDirectory is not private"
[ "$(stat -c %a "$d1/data/keys")" = 700 ] || it_fail "p1's keys directory is not private"
ls "$d1/data" | grep -q '^cached-' &&
    it_fail "p1 cached documents in DataDirectory, not CacheDirectory: $(ls "$d1/data")"
it_log "p1 and p2 are listed and cache every descriptor"

# --- 1. a pctor client -------------------------------------------------------------
it_start_pctor "$net" pc client ""
dc=$(cat "$net/pc.dir")
from_cache() {
    grep -q 'directory cache p[12] .*BEGIN_DIR) served [1-9][0-9]* of the' "$dc/info.log" &&
        grep -q 'Accepted a microdesc consensus from directory cache p[12] ' "$dc/info.log"
}
it_wait_until 90 from_cache ||
    { tail -n 30 "$dc/info.log" >&2; it_fail "the pctor client did not fetch from p1/p2 over BEGIN_DIR"; }
grep 'Fetching descriptors from ' "$dc/info.log" | grep -v 'from directory cache' &&
    it_fail "the pctor client fetched descriptors from the authority"
grep -q 'Content-Encoding x-tor-lzma, [0-9]* bytes decoded' "$dc/info.log" ||
    it_fail "no lzma-encoded consensus reached the pctor client"
grep -q 'Content-Encoding x-zstd, [0-9]* bytes decoded' "$dc/info.log" ||
    it_fail "no zstd-encoded descriptors reached the pctor client"
grep -h 'Serving /tor/micro/d/.*x-zstd' "$d1/info.log" "$d2/info.log" | grep -q . ||
    it_fail "p1/p2 did not log serving zstd-encoded microdescriptors"
grep -h 'Serving /tor/status-vote/current/consensus-microdesc.z .*x-tor-lzma' \
    "$d1/info.log" "$d2/info.log" | grep -q . ||
    it_fail "p1/p2 did not log serving an lzma-encoded consensus"
it_log "pctor client: $(grep -c 'over BEGIN_DIR' "$dc/info.log") requests to p1/p2 over BEGIN_DIR"

# --- 2. a tor client ---------------------------------------------------------------
before=$(cat "$d1/info.log" "$d2/info.log" | grep -c 'Serving /tor/')
read -r cnode _ _ < <(it_privnet add-client "$net" --owner-pid $$) ||
    it_fail "could not start the tor client"
it_run "$PRIVNET" wait-client "$net" "$cnode" --timeout 120 ||
    it_fail "the tor client did not bootstrap from the pctor caches"
# The tor client asked for the ns flavor and server descriptors; what the
# caches served it, by encoding.
served=$(cat "$d1/info.log" "$d2/info.log" | grep 'Serving /tor/' | tail -n +$((before + 1)))
echo "$served" | grep -q 'Serving /tor/status-vote/current/consensus[^ ]* .*x-tor-lzma\|Serving /tor/server/.*x-zstd' ||
    it_log "note: the tor client fetched nothing from p1/p2 (it asked the authority)"
it_log "tor client bootstrapped; pctor caches served it: $(echo "$served" | grep -o ', [a-z-]*: ' | sort | uniq -c | tr -s ' \n' ' ')"

it_pctor_alive_quiet "$net" p1 p2 pc
it_log "pass"
