#!/bin/bash
# conflux-faults.sh -- conflux (proposal 329) when things go wrong, pctor
# client and pctor exits:
#   (a) out-of-order floods that hit the queue bound: p4 splits downloads
#       at random in proportion to the legs' throughput, and the client c2
#       allows only 16 waiting messages (ConfluxMaxOutOfOrder 16); c2
#       splits its uploads the same way towards p4, which also allows 16.
#       Whichever side's queue overflows closes the set with a notice
#       naming the bound; the transfer fails (it never "succeeds" with
#       wrong data); both pctors stay up.
#   (b) a leg killed in the middle of a download: c1's legs start at p1
#       and p2 (EntryNodes), and p2 is killed (SIGKILL) while 50 MiB flow.
#       The set either goes on over p1 (the dead leg had nothing in
#       flight) and the file arrives intact, or -- when data was in flight
#       on it, which nothing can retransmit -- the client and the exit close
#       the set, say why, and the transfer fails cleanly. Never a corrupt
#       file reported as success.
#   (c) a leg that cannot be built: c3 starts after p2 died, so the leg
#       through p2 fails while the other links; the set goes on with one
#       leg and a download is intact.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${CONFLUX_FAULT_MB:-50}
PY=$(it_python3) || it_skip "python3 is not installed"

auth_extra=$(it_tmpdir)/auth.torrc
echo "ConsensusParams cc_alg=2 cc_sendme_inc=31" > "$auth_extra"
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
it_start_pctor "$net" p3 relay "$(exitconf lowrtt 10000)"
it_start_pctor "$net" p4 relay "$(exitconf proportional 16)"
it_run "$PRIVNET" wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists the pctor relays as Running, Valid"

it_start_pctor "$net" c1 client "ConfluxEnabled 1
EntryNodes p1,p2
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

# ---- (b) a leg killed mid-download -------------------------------------
d1=$(cat "$net/c1.dir") d3=$(cat "$net/p3.dir")
get c1 file "$net/c1.out" --limit-rate 5M &
cpid=$!
sleep 3
kill -KILL "$(cat "$(cat "$net/p2.dir")/pid")"
it_log "(b) killed p2 (one leg's guard) during c1's download"
if wait $cpid; then
    [ "$(sha256sum < "$net/c1.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "c1: the download reported success with wrong data"
    grep -q 'Conflux set #[0-9]*: leg p2 -> .* closed' "$d1/info.log" ||
        it_fail "c1 did not notice that its leg through p2 closed"
    it_log "(b) the set went on over the other leg; $MB MiB intact"
else
    why=$(grep 'Conflux set #[0-9]* closed (' "$d1/info.log" | tail -1)
    [ -n "$why" ] || it_fail "c1's download failed without a conflux set closing"
    it_log "(b) the set closed as it must (data in flight on the dead leg): ${why#*\] }"
    # A new download works (a new set, or a plain circuit).
    get c1 file "$net/c1.out" || it_fail "c1: no download after the set closed"
    [ "$(sha256sum < "$net/c1.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "c1: sha256 mismatch after the set closed"
    it_log "(b) the next download is intact"
fi

# ---- (c) a leg that cannot be built ------------------------------------
it_start_pctor "$net" c3 client "ConfluxEnabled 1
EntryNodes p1,p2
ExitNodes p3
ExcludeNodes p4"
it_wait_until 90 get c3 file "$net/c3.out" || it_fail "c3: download failed"
[ "$(sha256sum < "$net/c3.out" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "c3: sha256 mismatch"
d3c=$(cat "$net/c3.dir")
grep -q 'Conflux set #[0-9]* linked: 1 leg,' "$d3c/info.log" ||
    it_fail "c3 did not go on with one leg: $(grep -i conflux "$d3c/info.log" | tail -5)"
it_log "(c) the leg through the dead p2 failed; the set linked one leg and $MB MiB arrived intact"

it_pctor_alive_quiet "$net" p1 p3 p4 c1 c2 c3
it_log "conflux fault checks passed"
