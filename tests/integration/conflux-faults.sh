#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# conflux-faults.sh -- conflux (proposal 329) when things go wrong, pctor
# client and pctor exits:
#   (a) out-of-order floods that hit the queue bound: p4 splits downloads
#       at random in proportion to the legs' throughput, and the client c2
#       allows only 16 waiting messages (ConfluxMaxOutOfOrder 16); c2
#       splits its uploads the same way towards p4, which also allows 16.
#       Whichever side's queue overflows closes the set with a notice
#       naming the bound; the transfer fails (it never "succeeds" with
#       wrong data); both pctors stay up.
#   (b) a leg killed in the middle of a download, and its replacement:
#       c1's legs start at two of p1, p2, p5 (EntryNodes; the middles are
#       tor relays, so the third guard stays free); the guard of one
#       leg of the set carrying a 50 MiB download is killed (SIGKILL).
#       When the dead leg had nothing in flight and was not the exit's
#       current leg, tor's rules let the set go on over the other leg: then
#       c1 launches a replacement leg through the third guard, links it
#       into the same set (which is back to 2 legs) and the file arrives
#       intact. When data was in flight on it, which nothing can
#       retransmit, the client and the exit close the set, say why, and the
#       transfer fails cleanly (never a corrupt file reported as success);
#       the killed relay is restarted and the test tries again, up to eight
#       times, with a new set (other SOCKS credentials). The leg killed is
#       never c1's own current sending leg (which tor's rules would always
#       tear down); whether it is the exit's current one is chance.
#   (c) a leg that cannot be built: c3 (EntryNodes: the killed relay and
#       one live one) starts after the kill, so the leg through the dead
#       relay fails while the other links; no third guard is left for a
#       relaunch, so the set goes on with one leg and a download is intact.
#   (d) a leg that fails before linking is relaunched: clients with the
#       dead relay and two live ones as EntryNodes build their preemptive
#       set; when a leg went through the dead relay, it is relaunched
#       through the guard left and the set links with 2 legs (a new client
#       is tried, up to six, until one's first path met the dead relay).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${CONFLUX_FAULT_MB:-50}
PY=$(it_python3) || it_skip "python3 is not installed"

auth_extra=$(it_tmpdir)/auth.torrc
# Every relay Fast: a guard killed and restarted in (b) comes back with an
# observed bandwidth of 0 (its state was not saved), and the authority would
# leave it without Fast while the others have carried traffic; a new client
# (which needs Fast for every hop, as tor's) then found no second guard for
# a conflux leg ("No guard and middle left", seen in CI runs).
printf '%s\n' "ConsensusParams cc_alg=2 cc_sendme_inc=31" \
    "AuthDirFastGuarantee 1 bytes" > "$auth_extra"
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 4 --exit-relays 0 \
    --base-port auto --torrc-extra "authority=$auth_extra" ||
    it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/file"
head -c $((10 * 1024 * 1024)) /dev/urandom > "$www/up"
echo hello > "$www/small"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"
read -r _ uport _ _ < <(it_privnet reserve "$net" --role web --nickname sink)
cat > "$www/sink.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        while n:
            b = self.rfile.read(min(n, 65536))
            if not b:
                break
            n -= len(b)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
"$PY" "$www/sink.py" "$uport" > "$IT_ROOT/sink.log" 2>&1 < /dev/null &
it_register_pid $! || it_fail "the upload sink did not start"
it_wait_port 127.0.0.1 "$uport" 20 || it_fail "the upload sink does not listen"

exitconf() { # SCHEDULER MAXOOO
    cat <<EOF
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf
ConfluxScheduler $1
ConfluxMaxOutOfOrder $2
EOF
}
it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay ""
it_start_pctor "$net" p5 relay ""
it_start_pctor "$net" p3 relay "$(exitconf lowrtt 10000)"
it_start_pctor "$net" p4 relay "$(exitconf proportional 16)"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists the pctor relays as Running, Valid"

# The guards c1, c3 and r* may use are never middles, so that a third
# guard is free for a relaunched or replacement leg.
mids=relay1,relay2,relay3,relay4
it_start_pctor "$net" c1 client "ConfluxEnabled 1
EntryNodes p1,p2,p5
MiddleNodes $mids
ExitNodes p3
ExcludeNodes p4"
it_start_pctor "$net" c2 client "ConfluxEnabled 1
ConfluxMaxOutOfOrder 16
ConfluxScheduler proportional
ExitNodes p4
ExcludeNodes p3"
get() { # CLIENT NAME OUT [CURL-ARGS...]
    local c=$1 n=$2 o=$3
    shift 3
    curl -sf --max-time 300 --socks5-hostname "127.0.0.1:$(cat "$net/$c.port")" \
        "$@" "http://127.0.0.1:$hport/$n" -o "$o"
}
for c in c1 c2; do
    it_wait_until 90 get "$c" small "$net/$c.small" ||
        it_fail "$c never carried a request"
    d=$(cat "$net/$c.dir")
    grep -q 'Conflux set #[0-9]* linked: 2 legs' "$d/info.log" ||
        it_fail "$c did not link a two-leg conflux set"
done

# ---- (a) the out-of-order queue bound ---------------------------------
d2=$(cat "$net/c2.dir") d4=$(cat "$net/p4.dir")
full() {
    grep -q 'out-of-order queue full (16 messages); closing the set' \
        "$d2/info.log" "$d4/info.log"
}
for try in 1 2 3 4 5; do
    if get c2 file "$net/c2.out"; then
        [ "$(sha256sum < "$net/c2.out" | cut -d' ' -f1)" = "$want" ] ||
            it_fail "c2: a download reported success with wrong data"
    fi
    curl -sf --max-time 120 --socks5-hostname "127.0.0.1:$(cat "$net/c2.port")" \
        -T "$www/up" "http://127.0.0.1:$uport/up" > /dev/null || true
    full && break
done
full || it_fail "no queue overflowed with a bound of 16 in five tries"
grep -h 'out-of-order queue full' "$d2/info.log" "$d4/info.log" | head -2 |
    while read -r l; do it_log "(a) ${l#*\] }"; done
it_pctor_alive_quiet "$net" p4 c2

# ---- (b) a leg killed mid-download, and its replacement ----------------
d1=$(cat "$net/c1.dir") d3=$(cat "$net/p3.dir")
restart() { # NICK: start a killed pctor relay again (same keys)
    local d
    d=$(cat "$net/$1.dir")
    "$PCTOR" -f "$d/torrc" >> "$d/stderr" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")"
    it_wait_port 127.0.0.1 "$(cat "$net/$1.port")" 30 || it_fail "$1 did not restart"
    # Down for long (a stalled try lasts 90 s), it may have lost Running in
    # the consensus, and the next try's new client would not use it.
    it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
        it_fail "the consensus does not list $1 as Running again"
}
nbegin() { grep -c 'BEGIN on conflux set' "$d1/info.log"; }
began() { [ "$(nbegin)" -gt "$nb" ]; }
# began, or the client said it had to use a plain circuit (checked below).
nplain() { grep -c "No guard and middle left for a second conflux leg" "$d1/info.log"; }
began_or_plain() { began || [ "$(nplain)" -gt "$np" ]; }
grown() { [ "$(stat -c %s "$net/c1.out" 2>/dev/null || echo 0)" -gt 5000000 ]; }
ok= victim= cb=c1
for try in 1 2 3 4 5 6 7 8; do
    if [ "$try" -gt 1 ]; then
        # A new client for each try, whose sets were all built after the
        # last kill: a set built before it may keep a leg through the
        # killed relay that the exit learns of late (a tor middle may hold
        # a DESTROY back until its channel carries more), and stall.
        kill "$(cat "$d1/pid")"
        cb=b$try
        it_start_pctor "$net" "$cb" client "ConfluxEnabled 1
EntryNodes p1,p2,p5
MiddleNodes $mids
ExitNodes p3
ExcludeNodes p4"
        it_wait_until 90 get "$cb" small "$net/$cb.small" || it_fail "$cb never carried a request"
        d1=$(cat "$net/$cb.dir")
    fi
    rm -f "$net/c1.out"
    nb=$(nbegin) np=$(nplain)
    nteardown=$(grep -c 'closing every leg' "$d3/info.log")
    # (50 MiB at 5 MB/s: 10 s; a stalled download ends after 90.)
    get "$cb" file "$net/c1.out" --limit-rate 5M --max-time 90 --proxy-user "try$try:x" &
    cpid=$!
    it_wait_until 90 began_or_plain || true
    if ! began; then
        if grep -q "No guard and middle left for a second conflux leg" "$d1/info.log"; then
            # The new client took a plain circuit: a guard killed and
            # restarted in an earlier try was not usable to it yet (seen
            # once in CI, at the sixth try). Not this check's case.
            kill "$cpid" 2>/dev/null
            wait "$cpid" 2>/dev/null || true
            it_log "(b) try $try: $cb found no second guard and middle for a conflux leg and used a plain circuit; trying again"
            continue
        fi
        it_fail "(b) $cb sent no BEGIN on a conflux set: $(grep -i conflux "$d1/info.log" | tail -5)"
    fi
    set=$(grep 'BEGIN on conflux set' "$d1/info.log" | tail -1 | sed 's/.*set #\([0-9]*\).*/\1/')
    # c1 sends with MinRTT (the exit asks for latency) and so stays on the
    # leg that carried the BEGIN: kill the guard of the other leg (tor's
    # rules would always tear the set down for our own current leg);
    # whether the exit's current leg is the other one too is chance.
    bleg=$(grep 'BEGIN on conflux set' "$d1/info.log" | tail -1 | sed 's/.*, leg \([^ ]*\) -> .*/\1/')
    gone=$(grep "Conflux set #$set: leg .* closed" "$d1/info.log" |
        sed 's/.*: leg \([^ ]*\) -> .*/\1/')
    victim=$(grep "Conflux set #$set: leg .* linked, RTT" "$d1/info.log" |
        sed 's/.*: leg \([^ ]*\) -> .*/\1/' | grep -v -x -e "$bleg" ${gone:+$(printf -- '-e %s ' $gone)} | tail -1)
    if [ -z "$victim" ] && grep -q "Conflux set #$set: leg .* closed" "$d1/info.log"; then
        # The set lost its other leg before one could be chosen: a set
        # built before an earlier try kept a leg through that try's victim,
        # and the exit learnt of it late (a tor middle may hold a DESTROY
        # back until its channel carries more), with data in flight on it.
        # Not this try's case: let the download end and try again.
        wait $cpid || true
        it_log "(b) try $try: set #$set lost its other leg before a kill (an earlier try's late DESTROY); trying again"
        continue
    fi
    case $victim in p1|p2|p5) ;; *) it_fail "(b) no leg guard found for set #$set ($victim): $(grep -i "set #$set" "$d1/info.log" | tail -8)" ;; esac
    it_wait_until 60 grown || it_fail "(b) the download does not progress"
    kill -KILL "$(cat "$(cat "$net/$victim.dir")/pid")"
    it_log "(b) try $try: killed $victim, the guard of one leg of set #$set, during $cb's download"
    crc=0
    wait $cpid || crc=$?
    if [ "$crc" = 0 ]; then
        [ "$(sha256sum < "$net/c1.out" | cut -d' ' -f1)" = "$want" ] ||
            it_fail "$cb: the download reported success with wrong data"
        grep -q "Conflux set #$set: leg $victim -> .* closed" "$d1/info.log" ||
            it_fail "$cb did not notice that its leg through $victim closed"
        if grep -q "Conflux set #$set: cannot replace a leg: no guard left" "$d1/info.log"; then
            # The set survived, but the client had no third guard to
            # replace the leg with (the one restarted in an earlier try was
            # not usable to it yet); (c) checks this case. Try again.
            it_log "(b) try $try: the set survived, but $cb had no guard left for a replacement leg; trying again"
            restart "$victim"
            continue
        fi
        grep -q "Conflux set #$set: replacing a linked leg with" "$d1/info.log" ||
            it_fail "$cb launched no replacement leg: $(grep "Conflux set #$set" "$d1/info.log" | tail -5)"
        it_wait_until 60 grep -q "Conflux set #$set: replacement leg .* joined the set: 2 legs" "$d1/info.log" ||
            it_fail "the replacement leg did not join set #$set: $(grep "Conflux set #$set" "$d1/info.log" | tail -5)"
        it_log "(b) $(grep -h "Conflux set #$set: replacing a linked leg" "$d1/info.log" | tail -1 | sed 's/.*\] //')"
        it_log "(b) the set went on, got back to 2 legs; $MB MiB intact"
        ok=1
        break
    fi
    # (The set may close a moment after curl saw its stream end.)
    if ! it_wait_until 10 grep -q "Conflux set #$set closed (" "$d1/info.log"; then
        # The exit tore its side of the set down (the dead leg had data in
        # flight) and sent DESTROY on the surviving leg, but it never
        # reached c1: a tor middle may hold a DESTROY back until its
        # channel carries more. c1 cannot know; the download stalls until
        # curl gives up. Not this check's case: try again.
        if [ "$crc" = 28 ] && { [ "$(grep -c 'closing every leg' "$d3/info.log")" -gt "$nteardown" ] ||
            grep -q "Conflux set #$set: leg $victim -> .* closed" "$d1/info.log"; }; then
            it_log "(b) try $try: $cb noticed its leg close but the download stalled (the exit learnt late or its DESTROY did not reach $cb: a tor middle may hold it back); trying again"
            restart "$victim"
            continue
        fi
        it_fail "$cb's download failed (curl exit $crc) without its conflux set closing: $(grep -i -E "set #$set|stream|socks" "$d1/info.log" | tail -15)"
    fi
    why=$(grep "Conflux set #$set closed (" "$d1/info.log" | tail -1)
    it_log "(b) try $try: the set closed (data was in flight on the dead leg): ${why#*\] }"
    restart "$victim"
done
[ -n "$ok" ] || it_fail "(b) in eight tries the set never survived the killed leg"
alive=$(for p in p1 p2 p5; do [ "$p" = "$victim" ] || echo "$p"; done)
a1=$(echo "$alive" | head -1) a2=$(echo "$alive" | tail -1)

# ---- (c) a leg that cannot be built, no guard left -------------------
it_start_pctor "$net" c3 client "ConfluxEnabled 1
EntryNodes $victim,$a1
MiddleNodes $mids
ExitNodes p3
ExcludeNodes p4"
it_wait_until 90 get c3 file "$net/c3.out" || it_fail "c3: download failed"
[ "$(sha256sum < "$net/c3.out" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "c3: sha256 mismatch"
d3c=$(cat "$net/c3.dir")
grep -q 'Conflux set #[0-9]* linked: 1 leg,' "$d3c/info.log" ||
    it_fail "c3 did not go on with one leg: $(grep -i conflux "$d3c/info.log" | tail -5)"
grep -q 'cannot relaunch a leg: no guard left' "$d3c/info.log" ||
    it_fail "c3 did not say why it relaunched no leg: $(grep -i conflux "$d3c/info.log" | tail -5)"
it_log "(c) the leg through the dead $victim failed, no guard was left to relaunch it; the set linked one leg and $MB MiB arrived intact"

# ---- (d) a leg that fails before linking is relaunched ------------------
relaunched=
for try in 1 2 3 4 5 6; do
    it_start_pctor "$net" "r$try" client "ConfluxEnabled 1
EntryNodes $victim,$a1,$a2
MiddleNodes $mids
ExitNodes p3
ExcludeNodes p4"
    dr=$(cat "$net/r$try.dir")
    it_wait_until 90 grep -q 'Conflux set #1 linked:' "$dr/info.log" ||
        it_fail "(d) r$try: its preemptive set never linked: $(grep -i conflux "$dr/info.log" | tail -5)"
    if grep -q "Conflux set #1: leg $victim -> .* closed" "$dr/info.log"; then
        grep -q 'Conflux set #1: relaunching leg' "$dr/info.log" ||
            it_fail "(d) r$try: the failed leg was not relaunched"
        grep -q 'Conflux set #1 linked: 2 legs' "$dr/info.log" ||
            it_fail "(d) r$try: the set did not link 2 legs: $(grep 'Conflux set #1' "$dr/info.log" | tail -5)"
        it_log "(d) $(grep -h 'Conflux set #1: relaunching leg' "$dr/info.log" | head -1 | sed 's/.*\] //')"
        it_log "(d) r$try: the set linked 2 legs after the relaunch"
        relaunched=$try
        break
    fi
    kill -TERM "$(cat "$dr/pid")"
done
[ -n "$relaunched" ] || it_fail "(d) six clients never chose the dead $victim for a leg"

it_pctor_alive_quiet "$net" $a1 $a2 p3 p4 "$cb" c2 c3 "r$relaunched"
it_log "conflux fault checks passed"
