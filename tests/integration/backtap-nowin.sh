#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# backtap-nowin.sh -- circuits whose every hop is BackTap, the client
# included, run without end-to-end circuit windows (negotiated in ntor v3,
# doc/backtap.md "End-to-end windows"); any TLS hop keeps them.
#
# Private network (1 tor 0.4.9 authority, 2 tor relays) plus three
# published pctor relays g, m, x (x an exit to 127.0.0.1), each with a
# DatagramPort and CircuitTransport backtap, and a pctor c that is both an
# unpublished relay (its identity authenticates its datagram link to g) and
# a client: SocksPort, ControlPort, EntryNodes g, MiddleNodes m, ExitNodes
# x. A web server serves a random file. Checks:
#   1. c's first download goes out before any datagram link of c exists:
#      its first hop is TLS, so it does not ask; sha256 ok. That TLS link
#      brings c's datagram link to g up.
#   2. Once the link is up, c itself retires its circuits whose first hop
#      reaches g over TLS (it logs so; nothing closes them from outside);
#      the next download's circuit starts over BackTap (c logs it), c asks
#      x to drop the windows and x agrees (both log it); sha256 ok.
#   3. MiddleNodes relay1 (tor) on reload, circuits closed again: the hop
#      g -> relay1 is TLS, so x refuses when c asks (c logs that hop 3
#      keeps the end-to-end windows); the download works; sha256 ok.
#   4. A tor 0.4.9 client through m -> x (MiddleNodes, ExitNodes) works.
#   5. c closes its circuits: c and x log, for the circuit of step 2, no
#      end-to-end windows at close with every DATA cell of the file and no
#      circuit SENDME sent or received on either end; c logs, for the
#      circuit of step 3, the circuit SENDMEs it sent for the file's cells
#      (fixed windows, or congestion control when the consensus enables it).
#   6. No warning in any pctor log.
# Also, in step 2: the exit's queue towards the client stays bounded by its
# first hop's window (doc/backtap.md "Backpressure at the edge"), not by
# the 1000-cell safety net: c asks x to measure (MeasureMeHops 3, every
# 100 ms); x's MeasureMe records of the windowless circuit show at most
# BACKTAP_NOWIN_QMAX (default 200) cells waiting in its queue towards the
# client at any record, over records that saw at least 4 times that many
# cells leave (the exit had to stop reading).
# BACKTAP_NOWIN_MB sets the size (default 8 MiB).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
MB=${BACKTAP_NOWIN_MB:-8}
PY=$(it_python3) || it_skip "python3 is not installed"

it_net_start --authorities 1 --relays 2 --exit-relays 0
it_web_file "$MB"
cells=$((MB * 1024 * 1024 / 498))

for i in g m x c; do
    read -r _ "u$i" _ < <(it_privnet reserve "$net" --role udp)
done
read -r _ csport cport _ < <(it_privnet reserve "$net" --role aux --nickname cports)
it_start_pctor "$net" g relay "CircuitTransport backtap
DatagramPort 127.0.0.1:$ug"
it_start_pctor "$net" m relay "CircuitTransport backtap
DatagramPort 127.0.0.1:$um"
it_start_pctor "$net" x relay "CircuitTransport backtap
DatagramPort 127.0.0.1:$ux
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
MeasureMeEnabled 1
ServerDNSResolvConfFile $net/resolv.conf"
dg=$(cat "$net/g.dir")
dx=$(cat "$net/x.dir")
it_privnet wait "$net" --timeout 180 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included)"

# The relays' datagram links g - m - x: published relays may have opened
# them already, either way; a circuit A -> B over TLS brings one up if not.
link_up() { # A B
    local da p
    da=$(cat "$net/$1.dir")
    p=$(sed -n 's/^DatagramPort 127.0.0.1://p' "$(cat "$net/$2.dir")/torrc")
    grep -q "Datagram link 127.0.0.1:$p (.*) is up" "$da/info.log"
}
for pair in "g m" "m x"; do
    set -- $pair
    if ! link_up "$1" "$2"; then
        "$CIRCTEST" --timeout 60 --nodes "$nodes" "$(it_pctor_hop "$net" "$1")" \
            "$(it_pctor_hop "$net" "$2")" > "$net/circ-$1$2.out" 2>&1 ||
            it_fail "circuit $1 -> $2 failed: $(tail -3 "$net/circ-$1$2.out")"
    fi
    it_wait_until 30 link_up "$1" "$2" || it_fail "no datagram link $1 - $2"
done
it_log "datagram links g - m - x up"

it_start_pctor "$net" c ports "ORPort 127.0.0.1:@PORT@
PublishServerDescriptor 0
SocksPort 127.0.0.1:$csport
ControlPort 127.0.0.1:$cport
CircuitTransport backtap
DatagramPort 127.0.0.1:$uc
EntryNodes g
MiddleNodes m
ExitNodes x
MeasureMeHops 3
MeasureMeInterval 100"
dc=$(cat "$net/c.dir")

# ctl CMD...: send each command to c's ControlPort; print the replies.
ctl() {
    "$PY" - "$cport" "$@" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
f = s.makefile("rb")
def cmd(c):
    s.sendall(c.encode() + b"\r\n")
    out = []
    while True:
        l = f.readline().decode().rstrip("\r\n")
        if not l:
            sys.exit("control connection closed after: %s" % out)
        out.append(l)
        if len(l) >= 4 and l[3] == "+":  # a data block, up to "."
            while True:
                d = f.readline().decode().rstrip("\r\n")
                if d == "." or not d:
                    break
                out.append(d)
        elif len(l) >= 4 and l[3] == " ":
            break
    if not out[-1].startswith("250"):
        sys.exit("%s: %s" % (c, out[-1]))
    return out
cmd("AUTHENTICATE")
for c in sys.argv[2:]:
    for l in cmd(c):
        print(l)
EOF
}
# close_all: close every circuit of c (they are rebuilt on demand).
close_all() {
    local ids id
    ids=$(ctl "GETINFO circuit-status" |
        sed -n 's/^\(250-circuit-status=\)\{0,1\}\([0-9][0-9]*\) \(LAUNCHED\|BUILT\|GUARD_WAIT\|EXTENDED\) .*/\2/p')
    for id in $ids; do
        # (one that closed meanwhile is refused: fine)
        ctl "CLOSECIRCUIT $id" > /dev/null 2>&1 || true
    done
    echo "$ids" | wc -w
}
# fetch NAME USER: download the file through c with SOCKS user USER (a
# stream isolated from the others); sha256 must match.
fetch() {
    curl -sf --max-time 180 --proxy "socks5h://$2:x@127.0.0.1:$csport" \
        "http://127.0.0.1:$hport/file" -o "$net/$1.out" ||
        return 1
    [ "$(sha256sum < "$net/$1.out" | cut -d' ' -f1)" = "$want" ] ||
        it_fail "$1: sha256 mismatch"
}

# 1. First download: c has no datagram link yet.
it_wait_until 120 fetch first u1 || it_fail "c: first download failed: $(tail -3 "$dc/info.log")"
it_log "1. $MB MiB through c (first hop TLS), sha256 ok"
it_wait_until 60 link_up c g ||
    it_fail "c did not bring up a datagram link to g: $(grep -i datagram "$dc/info.log" | tail -3)"
it_log "datagram link c -> g up"

# 2. All BackTap: c retires its TLS-first-hop circuits on its own.
fpg=$(awk '$1 == "g" {print $4}' "$nodes")
retired() {
    grep -Eq "CircuitTransport backtap: [0-9]+ circuits? whose first hop reaches \\\$$fpg over TLS take no new streams" "$dc/info.log"
}
it_wait_until 10 retired ||
    it_fail "c did not retire its circuits over TLS to g: $(grep -e 'take no new' -e 'Datagram link' "$dc/info.log" | tail -3)"
it_log "c retired its circuits to g over TLS: $(grep -o 'backtap: [0-9]* circuits\{0,1\} whose' "$dc/info.log" | tail -1)"
asked0=$(grep -c "no end-to-end windows with hop 3 (every hop is BackTap)" "$dc/info.log")
t0=$SECONDS
it_wait_until 60 fetch nowin u2 || it_fail "c: download over BackTap failed: $(tail -3 "$dc/info.log")"
it_log "2. $MB MiB through c -> g -> m -> x, all BackTap ($((SECONDS - t0)) s), sha256 ok"
grep -q "CircuitTransport: the hop to 127.0.0.1:$(cat "$net/g.port") uses BackTap" "$dc/info.log" ||
    it_fail "c's first hop did not use BackTap: $(grep CircuitTransport "$dc/info.log" | tail -3)"
[ "$(grep -c "no end-to-end windows with hop 3 (every hop is BackTap)" "$dc/info.log")" -gt "$asked0" ] ||
    it_fail "c did not drop the end-to-end windows with x: $(grep -e 'end-to-end' -e 'hop 3' "$dc/info.log" | tail -3)"
grep -q "no end-to-end windows negotiated in ntor v3 (BackTap all the way from the client)" "$dx/info.log" ||
    it_fail "x did not agree to drop the windows"
# The exit's backlog: x's MeasureMe records of c's windowless circuits.
qmax=${BACKTAP_NOWIN_QMAX:-200}
exit_backlog() {
    "$PY" - "$dc/info.log" "$dx/data/measureme.jsonl" "$qmax" <<'EOF'
import json, re, sys
log, recs, qmax = sys.argv[1], sys.argv[2], int(sys.argv[3])
nowin, label = set(), {}
for l in open(log, errors="replace"):
    m = re.search(r"Circuit (\d+): no end-to-end windows with hop 3", l)
    if m:
        nowin.add(m.group(1))
    m = re.search(r"asked hop 3 of circuit (\d+) .*\(label ([0-9a-f]+)\)", l)
    if m:
        label[m.group(2)] = m.group(1)
q, cells, flows = [], 0, []
for l in open(recs):
    r = json.loads(l)
    if label.get(r.get("label")) in nowin:
        q.append(r["queue_bwd"]["queued"])
        cells += r["queue_bwd"]["sent"]
        # the BackTap hop towards c: its flow control state
        flows.append((r.get("chan_bwd") or {}).get("flow"))
if len(q) < 5 or cells < 4 * qmax:
    sys.exit("too few records of a windowless circuit at x: %d records, "
             "%d cells" % (len(q), cells))
if None in flows:
    sys.exit("a record of a windowless circuit at x has no BackTap flow "
             "state for its hop towards c")
if not any(f["window"] >= 2 and f["base_rtt_us"] > 0 and f["srtt_us"] > 0
           for f in flows):
    sys.exit("x's BackTap flow state never showed a window with round "
             "trips measured: %s" % flows[-1])
print("%d records, %d cells sent towards c, queued max %d mean %.1f "
      "(bound %d); BackTap window towards c max %d, base RTT %d us" %
      (len(q), cells, max(q), sum(q) / len(q), qmax,
       max(f["window"] for f in flows), flows[-1]["base_rtt_us"]))
sys.exit(0 if max(q) <= qmax else 1)
EOF
}
it_wait_until 10 exit_backlog > /dev/null 2>&1 || true
out=$(exit_backlog 2>&1) || it_fail "x's queue towards c: $out"
it_log "2. x's queue towards c (MeasureMe): $out"

# 3. A TLS hop (g -> relay1, tor) keeps them.
ctl "SETCONF MiddleNodes=relay1" > /dev/null || it_fail "SETCONF MiddleNodes failed"
n=$(close_all)
kept0=$(grep -c "hop 3 keeps the end-to-end windows" "$dc/info.log")
t0=$SECONDS
it_wait_until 60 fetch tlshop u3 || it_fail "c: download through relay1 failed: $(tail -3 "$dc/info.log")"
[ "$(grep -c "hop 3 keeps the end-to-end windows" "$dc/info.log")" -gt "$kept0" ] ||
    it_fail "x did not refuse over a TLS hop: $(grep -e 'end-to-end' "$dc/info.log" | tail -3)"
it_log "3. $MB MiB through c -> g -> relay1 (tor, TLS) -> x: windows kept ($((SECONDS - t0)) s), sha256 ok"

# 4. A tor client through m -> x.
fpm=$(awk '$1 == "m" {print $4}' "$nodes")
fpx=$(awk '$1 == "x" {print $4}' "$nodes")
extra=$(it_tmpdir)/client.torrc
cat > "$extra" <<EOF
UseMicrodescriptors 0
MiddleNodes \$$fpm
ExitNodes \$$fpx
StrictNodes 1
ConfluxEnabled 0
EOF
it_tor_client "$net" "$extra"
t0=$SECONDS
curl -sf --max-time 180 --socks5-hostname "127.0.0.1:$sport" \
    "http://127.0.0.1:$hport/file" -o "$net/tor.out" ||
    it_fail "curl through the tor client failed"
[ "$(sha256sum < "$net/tor.out" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "tor client: sha256 mismatch"
it_log "4. tor client fetched $MB MiB through m -> x ($((SECONDS - t0)) s), sha256 ok"

# 5. c closes its circuits: both ends log what crossed the windowless one.
# kept_closed: c's circuits that kept end-to-end SENDMEs for the file as
# they closed: congestion control (one SENDME per 31 cells) or the fixed
# windows (one per 100), less a margin.
kept_closed() {
    grep -E "Client circuit [0-9A-F]*.*: (congestion control|fixed end-to-end windows) at close:" "$dc/info.log" |
        awk -v cc=$((cells / 31 - 60)) -v fixed=$((cells / 100 - 10)) '{
            min = /fixed end-to-end/ ? fixed : cc
            for (i = 1; i < NF; i++) if ($i == "SENDMEs" && $(i + 1) == "sent") { if ($(i + 2) + 0 >= min) n++; break }
        } END { print n + 0 }'
}
kept0=$(kept_closed)
close_all > /dev/null
# at_close LOG WHO FIELD: the newest "no end-to-end windows at close" line
# of WHO in LOG whose FIELD ("sent" or "received") count of DATA cells is
# at least the file's.
at_close() {
    grep "$2: no end-to-end windows at close:" "$1" |
        awk -v min="$cells" -v f="$3" '{
            for (i = 1; i < NF; i++) if ($i == f && $(i + 1) + 0 >= min) { print; break }
        }' | tail -1 | grep .
}
it_wait_until 60 at_close "$dx/info.log" "Circuit [0-9]*" sent > /dev/null ||
    it_fail "x logged no windowless circuit carrying $cells cells: $(grep 'windows at close' "$dx/info.log" | tail -3)"
lx=$(at_close "$dx/info.log" "Circuit [0-9]*" sent)
it_log "x: ${lx#*] }"
echo "$lx" | grep -q "circuit SENDMEs sent 0, received 0$" ||
    it_fail "x sent or received circuit SENDMEs on the windowless circuit: $lx"
it_wait_until 30 at_close "$dc/info.log" "Client circuit to exit [0-9A-F]*" "received" > /dev/null ||
    it_fail "c logged no windowless circuit receiving $cells cells: $(grep 'windows at close' "$dc/info.log" | tail -3)"
lc=$(at_close "$dc/info.log" "Client circuit to exit [0-9A-F]*" "received")
it_log "c: ${lc#*] }"
echo "$lc" | grep -q "circuit SENDMEs sent 0, received 0$" ||
    it_fail "c sent or received circuit SENDMEs on the windowless circuit: $lc"
# ... while the circuit through relay1 (step 3, closed now) kept end-to-end
# SENDMEs: c acknowledged the file's cells.
more_kept() { [ "$(kept_closed)" -gt "$kept0" ]; }
it_wait_until 30 more_kept ||
    it_fail "c closed no circuit with SENDMEs for the file: $(grep -e 'at close' -e 'hop 3' "$dc/info.log" | tail -8)"
it_log "c: $(grep -E '(congestion control|fixed end-to-end windows) at close' "$dc/info.log" | tail -1 | sed 's/.*\] //')"
it_wait_until 60 grep -Eq "congestion control at close: .*got [1-9][0-9]{2,}" "$dx/info.log" ||
    it_fail "x logged no circuit with SENDMEs: $(grep 'at close' "$dx/info.log" | tail -3)"
it_log "5. no circuit SENDME on the windowless circuit at either end; the circuit with a TLS hop had SENDMEs"

# c's BackTap statistics: its own circuits went out over BackTap.
sc=$(it_usr1_line "$net" c "Statistics: BackTap:" "BackTap statistics")
it_log "c: ${sc#*] }"
echo "$sc" | grep -Eq "[1-9][0-9]* over BackTap" || it_fail "c extended nothing over BackTap: $sc"

it_pctor_alive_quiet "$net" g m x c
it_log "ok"
exit 0
