#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cc-interop.sh -- congestion control (proposal 324, negotiated in ntor v3)
# between pctor and tor 0.4.9, both ways.
#
# A private network (1 tor authority voting "ConsensusParams cc_alg=2
# cc_sendme_inc=31", 3 tor relays of which one is a loopback exit) plus two
# pctor relays that publish descriptors listing FlowCtrl=1-2: p1 (middle,
# directory cache) and p2 (exit for 127.0.0.1). A local web server serves a
# random file.
#   (a) A tor 0.4.9 client (ExitNodes p2) downloads the file through p2:
#       tor asks p2 for congestion control since p2 lists FlowCtrl=2; p2's
#       log must show it negotiated on the circuit that carried the exit
#       stream, and, once the client is gone, that the circuit ran Vegas
#       with SENDMEs every 31 cells (checked in p2's "congestion control at
#       close" line). sha256 must match.
#   (b) pctor-circtest --cc, choosing its path from the consensus p1 caches,
#       downloads the file through the tor exit (exit1): the consensus says
#       cc_alg=2 and exit1 lists FlowCtrl=2, so it negotiates congestion
#       control with tor; core acknowledges every 31 cells with an
#       authenticated SENDME and sends no stream SENDMEs (tor would close
#       the circuit otherwise). sha256 must match.
#   (c) The same through the pctor exit p2 (pctor on both ends).
#   (d) pctor's SocksPort client (c1) downloads it through the tor exit and
#       (c2) through the pctor exit: the client asks the exit for
#       congestion control on its own (cc_alg=2, FlowCtrl=2), its log must
#       show it negotiated with hop 3, it sends no stream SENDMEs (tor
#       would close the circuit), and the sha256 must match.
# CC_INTEROP_MB sets the size (default 50 MiB).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
MB=${CC_INTEROP_MB:-50}

auth_extra=$(it_tmpdir)/auth.torrc
echo "ConsensusParams cc_alg=2 cc_sendme_inc=31" > "$auth_extra"
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 1 \
    --base-port auto --torrc-extra "authority=$auth_extra" ||
    it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
d1=$(cat "$net/p1.dir")
d2=$(cat "$net/p2.dir")

it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists p1 and p2 as Running, Valid"

# p1's cached consensus: the one pctor-circtest chooses paths from. Wait
# until it lists both pctor relays, with FlowCtrl=2 and the cc_alg param.
P1="pctor:$d1/data@127.0.0.1:$(cat "$net/p1.port")"
cons=$(it_tmpdir)/cons
fetch_cons() {
    "$CIRCTEST" --timeout 20 --get /tor/status-vote/current/consensus-microdesc \
        --out "$cons" "$P1" 2>/dev/null &&
        grep -q '^r p1 ' "$cons" && grep -q '^r p2 ' "$cons" &&
        grep -q '^params .*cc_alg=2' "$cons"
}
it_wait_until 120 fetch_cons ||
    it_fail "p1 does not serve a consensus listing p1, p2 and cc_alg=2"
awk '$1 == "r" {n = $2} $1 == "pr" && n == "p2" {print; exit}' "$cons" |
    grep -q 'FlowCtrl=1-2' || it_fail "the consensus does not list FlowCtrl=1-2 for p2"
it_log "consensus: cc_alg=2, p2 with FlowCtrl=1-2"

# ---- (a) tor client -> pctor exit -------------------------------------
# The web server's address is every relay's address, so tor would send the
# stream to an "exit enclave" there -- possibly the tor exit, which
# ExcludeExitNodes rules out (it also applies to enclaves).
fp2=$(awk '$1 == "p2" {print $4}' "$nodes")
fpx=$(awk '$7 == "exit" {print $4}' "$nodes")
extra=$(it_tmpdir)/client.torrc
cat > "$extra" <<EOF
UseMicrodescriptors 0
ExitNodes \$$fp2
ExcludeExitNodes \$$fpx
StrictNodes 1
ConfluxEnabled 0
EOF
read -r cnode sport _ < <(it_privnet add-client "$net" --torrc-extra "$extra" --owner-pid $$) ||
    it_fail "could not start the tor client"
it_run "$PRIVNET" wait-client "$net" "$cnode" --timeout 120 ||
    it_fail "the tor client did not bootstrap"
out=$(it_tmpdir)/body
t0=$SECONDS
curl -sf --max-time 180 --socks5-hostname "127.0.0.1:$sport" \
    "http://127.0.0.1:$hport/file" -o "$out" ||
    it_fail "curl through the tor client failed"
[ "$(sha256sum < "$out" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "sha256 mismatch through tor -> pctor exit"
it_log "(a) tor client fetched $MB MiB through the pctor exit ($((SECONDS - t0)) s), sha256 ok"

# Stop the client: its circuits close, and p2 logs each one's congestion
# controller at close. The download's circuit is the one whose controller
# got a SENDME for about every 31st DATA cell of the 50 MiB (the last few
# may be in flight); it must have negotiated congestion control in ntor v3.
cells=$((MB * 1024 * 1024 / 498))
cpid=$(cat "$net/$cnode/pid")
kill "$cpid" 2>/dev/null
closed_line() {
    grep "congestion control at close:" "$d2/info.log" |
        awk -v min=$((cells / 31 - 200)) '{
            for (i = 1; i < NF; i++) if ($i == "got") { if ($(i + 1) + 0 >= min) print; break }
        }' | tail -1 | grep .
}
# (a client that does not exit on SIGTERM at once is killed after 30 s)
it_wait_until 30 closed_line > /dev/null || {
    kill -KILL "$cpid" 2>/dev/null
    it_wait_until 90 closed_line > /dev/null
} || it_fail "p2 logged no circuit closing with SENDMEs for $cells cells; at close: $(grep 'congestion control at close:' "$d2/info.log" | tail -5); client $(kill -0 "$cpid" 2>/dev/null && echo alive || echo gone)"
line=$(closed_line)
it_log "p2: $line"
circ=$(echo "$line" | sed -n 's/.*Circuit \([0-9]*\): congestion control at close.*/\1/p')
grep -q "Circuit $circ: congestion control negotiated in ntor v3 (vegas, sendme_inc 31)" \
    "$d2/info.log" ||
    it_fail "p2 did not negotiate congestion control on circuit $circ"
echo "$line" | grep -q 'slow-start 0' || it_fail "p2 never left slow start"

# ---- (b) pctor client -> tor exit, (c) pctor client -> pctor exit ----
auth_args=()
while read -r l; do auth_args+=(--DirAuthority "$l"); done < "$net/dirauth.torrc"
fetch_cc() { # NAME CIRCTEST-ARGS...
    local name=$1
    shift
    it_run "$CIRCTEST" --timeout 240 --consensus "$d1/data" "${auth_args[@]}" \
        --testing --cc --begin "127.0.0.1:$hport" --get /file \
        --out "$net/$name.out" "$@" 2> "$net/$name.err" ||
        it_fail "$name: $(tail -3 "$net/$name.err")"
    [ "$(sha256sum < "$net/$name.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "$name: sha256 mismatch"
    grep -q 'congestion control requested from the last hop' "$net/$name.err" ||
        it_fail "$name: pctor-circtest did not ask for congestion control"
    local l sent
    l=$(grep 'congestion control negotiated:' "$net/$name.err") ||
        it_fail "$name: congestion control was not negotiated"
    sent=$(echo "$l" | sed -n 's/.* sent \([0-9]*\)$/\1/p')
    # At least one per 31 full cells of body (partial cells add some).
    [ -n "$sent" ] && [ "$sent" -ge $((cells / 31)) ] &&
        [ "$sent" -le $((cells / 31 * 2)) ] ||
        it_fail "$name: ${sent:-no} SENDMEs sent for $cells cells of body ($l)"
    grep 'hop [0-9]' "$net/$name.err" | tr '\n' ' ' >&2; echo >&2
    it_log "$name: ${l#pctor-circtest: }"
}
t0=$SECONDS
fetch_cc tor-exit --ExitNodes exit1 --ExcludeNodes p1,p2
grep -q 'hop 3: exit1 ' "$net/tor-exit.err" || it_fail "(b) exit1 was not the exit"
it_log "(b) pctor-circtest fetched $MB MiB through the tor exit with congestion control ($((SECONDS - t0)) s)"
t0=$SECONDS
fetch_cc pctor-exit --MiddleNodes p1 --ExitNodes p2
it_log "(c) pctor-circtest fetched $MB MiB through the pctor exit with congestion control ($((SECONDS - t0)) s)"
pcirc=$(grep -c 'congestion control negotiated in ntor v3' "$d2/info.log")
[ "$pcirc" -ge 2 ] || it_fail "p2 negotiated congestion control only $pcirc time(s)"

# ---- (d) pctor SocksPort client -> tor exit / pctor exit ---------------
it_start_pctor "$net" c1 client "MiddleNodes p1
ExitNodes exit1
ExcludeNodes p2"
it_start_pctor "$net" c2 client "MiddleNodes p1
ExitNodes p2"
socks_fetch() { # NAME
    local port
    port=$(cat "$net/$1.port")
    curl -sf --max-time 240 --socks5-hostname "127.0.0.1:$port" \
        "http://127.0.0.1:$hport/file" -o "$net/$1.out"
}
for c in c1 c2; do
    it_wait_until 90 socks_fetch "$c" || it_fail "$c: download failed: $(tail -3 "$(cat "$net/$c.dir")/info.log")"
    [ "$(sha256sum < "$net/$c.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "$c: sha256 mismatch"
    cd_=$(cat "$net/$c.dir")
    grep -q 'asking the exit for congestion control' "$cd_/info.log" ||
        it_fail "$c did not ask the exit for congestion control"
    grep -q 'congestion control with hop 3 (sendme_inc 31)' "$cd_/info.log" ||
        it_fail "$c: congestion control was not negotiated with the exit"
    it_log "(d) $c: $MB MiB through pctor's SocksPort with congestion control, sha256 ok"
done
it_pctor_alive_quiet "$net" p1 p2 c1 c2
it_log "congestion control interop passed"
