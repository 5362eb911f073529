#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# capture-tor-cells.sh -- refresh the tor049-* seeds of tests/fuzz/corpus/
# from a real tor (the one installed, 0.4.9 in CI): starts a private
# one-authority network on 127.0.0.1 with scripts/pctor-privnet (its tor has
# TestingTorNetwork 1 and only this network's DirAuthority line), runs
# capture-tor-cells.py against the authority's ORPort, stops everything.
# Not part of make check (a maintainer tool): run it by hand.
# Usage: tests/fuzz/capture-tor-cells.sh [OUTDIR]   (default: the corpus)
. "$(dirname "$0")/../integration/lib.sh"
set -u
it_require_tor
out=${1:-$IT_TOP_SRCDIR/tests/fuzz/corpus}
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
read -r _ orport _ < "$net/nodes.txt"
it_privnet wait "$net" --timeout 120 || it_log "no consensus yet; capturing anyway"
python3 "$(dirname "$0")/capture-tor-cells.py" 127.0.0.1 "$orport" "$out" \
    /tor/server/authority /tor/keys/all \
    /tor/status-vote/current/consensus-microdesc \
    || it_fail "capture failed"
it_log "seeds written under $out"
