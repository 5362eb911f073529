#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# conflux-exit.sh -- a tor 0.4.9 client with ConfluxEnabled 1 through a
# pctor exit: conflux (proposal 329) at pctor's exit, wire-compatible with
# tor's client.
#
# A private network (1 tor authority voting "ConsensusParams cc_alg=2
# cc_sendme_inc=31", 4 tor relays, no tor exits) plus two pctor relays:
# p1 (middle, directory cache) and p2 (exit for 127.0.0.1; its descriptor
# lists Conflux=1 and FlowCtrl=1-2). A local web server serves a random
# file. The tor client (ExitNodes p2, ConfluxEnabled 1) pre-builds conflux
# sets: two legs through different guards and middles, each negotiating
# congestion control with p2 in ntor v3 and linking with CONFLUX_LINK.
# Checks:
#   - p2's log shows a linked set with two legs, each acknowledged
#     (LINKED_ACK, the exit's RTT measurement);
#   - a download of CONFLUX_MB MiB (default 20) through the client is
#     intact (sha256) and its exit stream lives on a conflux leg;
#   - when the client goes away, p2 logs the set's closing summary;
#   - p2 stays up and logs no warnings.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${CONFLUX_MB:-20}

auth_extra=$(it_tmpdir)/auth.torrc
echo "ConsensusParams cc_alg=2 cc_sendme_inc=31" > "$auth_extra"
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 4 --exit-relays 0 \
    --base-port auto --torrc-extra "authority=$auth_extra" ||
    it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/file"
echo hello > "$www/small"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
HeartbeatPeriod 2 seconds
ServerDNSResolvConfFile $net/resolv.conf"
d2=$(cat "$net/p2.dir")
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists p1 and p2 as Running, Valid"

fp2=$(awk '$1 == "p2" {print $4}' "$nodes")
extra=$(it_tmpdir)/client.torrc
cat > "$extra" <<EOF
UseMicrodescriptors 0
ExitNodes \$$fp2
StrictNodes 1
ConfluxEnabled 1
ConfluxClientUX throughput
Log info file $net/tor-client-info.log
EOF
read -r cnode sport _ < <(it_privnet add-client "$net" --torrc-extra "$extra" --owner-pid $$) ||
    it_fail "could not start the tor client"
it_run "$PRIVNET" wait-client "$net" "$cnode" --timeout 120 ||
    it_fail "the tor client did not bootstrap"

# A first request makes the client predict our port; it then keeps
# pre-built conflux sets for it. Wait until p2 linked a set with two legs,
# both acknowledged.
small() {
    curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$sport" \
        "http://127.0.0.1:$hport/small" > /dev/null
}
it_wait_until 120 small || it_fail "no request got through the tor client"
linked() {
    grep -q 'Conflux set #[0-9]*: circuit [0-9]* acknowledged the link (RTT [0-9.]* ms); 2 legs' \
        "$d2/info.log"
}
it_wait_until 120 linked ||
    it_fail "p2 never linked a two-leg conflux set: $(grep -i conflux "$d2/info.log" | tail -5)"
it_log "p2: $(grep -m1 'acknowledged the link (RTT [0-9.]* ms); 2 legs' "$d2/info.log" | sed 's/.*\] //')"

out=$(it_tmpdir)/body
# The client uses a linked set for new streams once one is ready; the
# stream must end up on a conflux leg. Try a few times in case the client
# used a plain circuit it already had.
ok=0
for try in 1 2 3; do
    t0=$SECONDS
    curl -sf --max-time 300 --socks5-hostname "127.0.0.1:$sport" \
        "http://127.0.0.1:$hport/file" -o "$out" ||
        it_fail "curl through the tor client failed"
    [ "$(sha256sum < "$out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "sha256 mismatch through the tor client and the pctor exit"
    circ=$(sed -n 's/.*Exit stream [0-9]* on circuit \([0-9]*\) connected.*/\1/p' \
        "$d2/info.log" | tail -1)
    if grep -q "Conflux set #[0-9]*: linked circuit $circ as leg" "$d2/info.log"; then
        ok=1
        break
    fi
    it_log "try $try: the stream used circuit $circ, not a conflux leg; again"
    sleep 5
done
[ $ok = 1 ] || it_fail "the download never used a conflux set"
set_no=$(sed -n "s/.*Conflux set #\([0-9]*\): linked circuit $circ as leg.*/\1/p" \
    "$d2/info.log" | tail -1)
it_log "tor client fetched $MB MiB through conflux set #$set_no at p2 ($((SECONDS - t0)) s), sha256 ok"

# p2's summary of the set: SIGUSR1 logs every open set. (Waiting for the
# set to close after killing the client is not reliable: a tor relay on
# the way may hold a DESTROY back until its channel carries more.)
logged() {
    kill -USR1 "$(cat "$d2/pid")" 2>/dev/null
    sleep 0.5
    grep -Eq "Conflux set #$set_no (open|closed):" "$d2/info.log"
}
it_wait_until 30 logged || it_fail "p2 did not log a summary of set #$set_no"
line=$(grep -E "Conflux set #$set_no (open|closed):" "$d2/info.log" | tail -1)
it_log "p2: ${line#*\] }"
# The exit sent the file's cells as multiplexed messages.
sent=$(echo "$line" | sed -n 's/.*, sent \([0-9]*\),.*/\1/p')
cells=$((MB * 1024 * 1024 / 498))
[ -n "$sent" ] && [ "$sent" -ge "$cells" ] ||
    it_fail "set #$set_no sent ${sent:-no} multiplexed messages for $cells cells"

# The heartbeat counts the sets p2 linked (what an operator or an
# experiment reads to see that clients use conflux).
hb() {
    n=$(sed -n 's/.*Heartbeat: Conflux linked \([0-9]*\) sets (\([0-9]*\) legs).*/\1 \2/p' \
        "$d2/info.log" | tail -1)
    [ -n "$n" ] && [ "${n% *}" -ge 1 ] && [ "${n#* }" -ge 2 ]
}
it_wait_until 10 hb || it_fail "no heartbeat line counting p2's conflux sets: \
$(grep 'Heartbeat' "$d2/info.log" | tail -3)"
# ... and what it sent on the legs: the file's cells, with few SWITCH cells
# (each one is a cell more; a scheduler that changed legs per cell sent one
# for every two data cells).
hbsent() {
    ms=$(sed -n 's/.*Heartbeat: Conflux.* Sent \([0-9]*\) messages on legs and \([0-9]*\) SWITCH cells.*/\1 \2/p' \
        "$d2/info.log" | tail -1)
    [ -n "$ms" ] && [ "${ms% *}" -ge "$cells" ]
}
it_wait_until 10 hbsent ||
    it_fail "no heartbeat line counting the $cells cells sent on legs: \
$(grep 'Heartbeat: Conflux' "$d2/info.log" | tail -1)"
it_log "p2: $(grep 'Heartbeat: Conflux' "$d2/info.log" | tail -1 | sed 's/.*\] //')"
[ $((${ms#* } * 10)) -le "${ms% *}" ] ||
    it_fail "${ms#* } SWITCH cells for ${ms% *} messages on legs (over 10%)"

it_pctor_alive_quiet "$net" p1 p2
it_log "conflux exit interop passed"
