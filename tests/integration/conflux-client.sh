#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# conflux-client.sh -- pctor's SocksPort client with conflux (proposal 329):
# to a tor 0.4.9 exit, and pctor <-> pctor with each scheduler.
#
# A private network (1 tor authority voting "ConsensusParams cc_alg=2
# cc_sendme_inc=31", 4 tor relays and 1 tor exit for 127.0.0.1) plus pctor
# relays p1, p2 (middles) and three pctor exits for 127.0.0.1: p3
# (ConfluxScheduler auto: tor's choice, LowRTT for a client asking for
# throughput), p4 (minrtt) and p5 (proportional, the paper's splitter). A
# web server serves a random file; an upload sink answers a PUT with the
# sha256 of what it received.
# Clients (ConfluxEnabled 1, two legs through different guards and
# middles, each negotiating congestion control with the exit; c1's
# controller sees both legs in circuit-status with one CONFLUX_ID and
# each leg's CONFLUX_RTT, as tor shows them):
#   c1 -> exit1 (tor): CONFLUX_MB MiB (default 20) down, sha256 intact;
#   c2 -> p3 (lowrtt both ways), c3 -> p4 (minrtt, ConfluxClientUX
#   latency), c4 -> p5 (proportional both ways): the same download and a
#   CONFLUX_UP_MB (default 5) MiB upload, both intact.
# Each client's log must show its set linked with two legs; the exits'
# logs show the sets they served and, for lowrtt and proportional, that
# both legs carried data.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
MB=${CONFLUX_MB:-20}
UPMB=${CONFLUX_UP_MB:-5}
PY=$(it_python3) || it_skip "python3 is not installed"

auth_extra=$(it_tmpdir)/auth.torrc
echo "ConsensusParams cc_alg=2 cc_sendme_inc=31" > "$auth_extra"
net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 4 --exit-relays 1 \
    --base-port auto --torrc-extra "authority=$auth_extra" ||
    it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((MB * 1024 * 1024)) /dev/urandom > "$www/file"
head -c $((UPMB * 1024 * 1024)) /dev/urandom > "$www/up"
echo hello > "$www/small"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
want_up=$(sha256sum < "$www/up" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"
read -r _ uport _ _ < <(it_privnet reserve "$net" --role web --nickname sink)
cat > "$www/sink.py" <<'EOF'
import hashlib, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        h = hashlib.sha256()
        while n:
            b = self.rfile.read(min(n, 65536))
            if not b:
                break
            h.update(b)
            n -= len(b)
        out = (h.hexdigest() + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
"$PY" "$www/sink.py" "$uport" > "$IT_ROOT/sink.log" 2>&1 < /dev/null &
it_register_pid $! || it_fail "the upload sink did not start"
it_wait_port 127.0.0.1 "$uport" 20 || it_fail "the upload sink does not listen"

exitconf() { # SCHEDULER
    cat <<EOF
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf
ConfluxScheduler $1
EOF
}
it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay ""
it_start_pctor "$net" p3 relay "$(exitconf auto)"
it_start_pctor "$net" p4 relay "$(exitconf minrtt)"
it_start_pctor "$net" p5 relay "$(exitconf proportional)"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"
it_log "consensus lists the pctor relays as Running, Valid"

# Every client: no pctor exit in the middle of another's path.
read -r _ c1ctl _ _ < <(it_privnet reserve "$net" --role aux --nickname c1ctl)
it_start_pctor "$net" c1 client "ConfluxEnabled 1
ControlPort $c1ctl
ExitNodes exit1
ExcludeNodes p3,p4,p5"
it_start_pctor "$net" c2 client "ConfluxEnabled 1
ConfluxScheduler lowrtt
ExitNodes p3
ExcludeNodes exit1,p4,p5"
it_start_pctor "$net" c3 client "ConfluxEnabled 1
ConfluxScheduler minrtt
ConfluxClientUX latency
ExitNodes p4
ExcludeNodes exit1,p3,p5"
it_start_pctor "$net" c4 client "ConfluxEnabled 1
ConfluxScheduler proportional
ExitNodes p5
ExcludeNodes exit1,p3,p4"

get() { # CLIENT NAME OUT
    curl -sf --max-time 300 --socks5-hostname "127.0.0.1:$(cat "$net/$1.port")" \
        "http://127.0.0.1:$hport/$2" -o "$3"
}
put() { # CLIENT
    curl -sf --max-time 300 --socks5-hostname "127.0.0.1:$(cat "$net/$1.port")" \
        -T "$www/up" "http://127.0.0.1:$uport/up"
}
# A client that holds only some descriptors may find no guard and middle
# for a second leg and take a plain circuit, which later requests reuse:
# first let each client learn every relay.
all_descs() { grep -q 'We have the descriptors of all' "$(cat "$net/$1.dir")/info.log"; }
for c in c1 c2 c3 c4; do
    it_wait_until 90 all_descs "$c" ||
        it_fail "$c never had every relay's descriptor: $(grep -E 'served|enough' "$(cat "$net/$c.dir")/info.log" | tail -3)"
done
for c in c1 c2 c3 c4; do
    it_wait_until 90 get "$c" small "$net/$c.small" ||
        it_fail "$c never carried a request: $(tail -5 "$(cat "$net/$c.dir")/info.log")"
done

check_linked() { # CLIENT
    local d
    d=$(cat "$net/$1.dir")
    grep -q 'Conflux set #[0-9]* linked: 2 legs' "$d/info.log" ||
        it_fail "$1 did not link a two-leg conflux set: $(grep -i conflux "$d/info.log" | tail -5)"
}
# c1's controller sees the legs of its set in circuit-status, as tor
# shows them: the same CONFLUX_ID (64 hex digits), each with its
# CONFLUX_RTT (microseconds, from the link handshake).
c1_circuit_status() {
    "$PY" - "$c1ctl" <<'EOF' || it_fail "c1's circuit-status does not show its conflux legs"
import re, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"AUTHENTICATE\r\nGETINFO circuit-status\r\nQUIT\r\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
text = data.decode()
legs = {}
for line in text.splitlines():
    m = re.search(r" BUILT .* CONFLUX_ID=([0-9A-F]{64})(?: CONFLUX_RTT=(\d+))?$", line)
    if m:
        legs.setdefault(m.group(1), []).append(int(m.group(2) or 0))
sets = [n for n, rtts in legs.items() if len(rtts) >= 2 and min(rtts) > 0]
assert sets, text
print("c1: circuit-status shows a conflux set of %d legs, CONFLUX_RTT %s us"
      % (len(legs[sets[0]]), legs[sets[0]]))
EOF
}
for c in c1 c2 c3 c4; do
    check_linked "$c"
    t0=$SECONDS
    get "$c" file "$net/$c.out" ||
        it_fail "$c: download failed (curl exit $?): $(grep -E 'warn|err\]|[Cc]onflux|closed' "$(cat "$net/$c.dir")/info.log" | tail -8)"
    [ "$(sha256sum < "$net/$c.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "$c: sha256 mismatch on the download"
    rm -f "$net/$c.out"
    msg="$c: $MB MiB down through a conflux set in $((SECONDS - t0)) s, sha256 ok"
    [ "$c" != c1 ] || c1_circuit_status
    if [ "$c" != c1 ]; then
        t0=$SECONDS
        got=$(put "$c") || it_fail "$c: upload failed"
        [ "$got" = "$want_up" ] || it_fail "$c: sha256 mismatch on the upload ($got)"
        msg="$msg; $UPMB MiB up in $((SECONDS - t0)) s, sha256 ok"
    fi
    it_log "$msg"
done

# The exits' view: the set that carried the download, with its legs.
for e in p3 p4 p5; do
    d=$(cat "$net/$e.dir")
    line=$(grep 'Conflux set #[0-9]*: circuit [0-9]* acknowledged the link' "$d/info.log" | tail -1)
    [ -n "$line" ] || it_fail "$e linked no conflux set"
    it_log "$e: ${line#*acknowledged the link }"
done

# The exits' summaries of their sets: SIGUSR1 logs every open set (a set
# that closed logged its summary then). Waiting for the sets to close
# after killing the clients is not reliable: tor relays on the way may
# hold a DESTROY back until the channel carries something else.
summary() { # EXIT: the summary of the set that sent the most
    grep -E 'Conflux set #[0-9]* (closed|open):' "$(cat "$net/$1.dir")/info.log" |
        awk '{ if (match($0, /sent [0-9]+/)) {
                 v = substr($0, RSTART + 5, RLENGTH - 5) + 0
                 if (v >= best) { best = v; line = $0 } } }
             END { if (line) print line; else exit 1 }'
}
# busy EXIT: the summary of the set that carried the downloads is there.
busy() {
    local l
    kill -USR1 "$(cat "$(cat "$net/$1.dir")/pid")" 2>/dev/null
    sleep 0.5
    l=$(summary "$1") || return 1
    [ "$(echo "$l" | sed -n 's/.* sent \([0-9]*\),.*/\1/p')" -ge 1000 ] 2> /dev/null
}
for e in p3 p4 p5; do
    it_wait_until 30 busy "$e" ||
        it_fail "$e logged no summary of a set that carried the downloads: $(summary "$e")"
    line=$(summary "$e")
    it_log "$e: ${line#*: }"
    case $e in
    p4) # minrtt: no switching needed
        ;;
    *) # both legs carried data
        echo "$line" | grep -Eq 'switches' || it_fail "$e: no summary"
        n=$(echo "$line" | sed -n 's/.* \([0-9]*\) switches.*/\1/p')
        [ -n "$n" ] && [ "$n" -gt 0 ] || it_fail "$e never switched legs"
        # ... but not per cell: proportional keeps a drawn leg for 31
        # data cells, so at most about one SWITCH per 31 messages (one per
        # two when it drew a leg for every cell)
        if [ "$e" = p5 ]; then
            s=$(echo "$line" | sed -n 's/.* sent \([0-9]*\),.*/\1/p')
            [ $((n * 25)) -le "$s" ] ||
                it_fail "$e: $n switches for $s messages sent (over 1 in 25)"
        fi
        ;;
    esac
done

it_pctor_alive_quiet "$net" p1 p2 p3 p4 p5
it_log "conflux client checks passed"
