#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# control-testing-events.sh -- tor's testing events CONN_BW and CELL_STATS
# (control-spec) on a pctor relay, read with stem.
#
# Private network: 1 tor authority, 2 tor relays, pctor relays p1
# (ControlPort, TestingEnableConnBwEvent 1, TestingEnableCellStatsEvent 1)
# and p3 (exit). A stem controller on p1 subscribes to CONN_BW and
# CELL_STATS while a 2 MiB download crosses the circuit relay1 -> p1 -> p3
# (p1 in the middle: cells queue towards both hops). Checks:
#   - every event parses with stem's ConnectionBandwidthEvent /
#     CellStatsEvent, and its text with the spec's grammar;
#   - CONN_BW: TYPE=OR, and the connections' READ and WRITTEN over the
#     download each add up to at least 2 MiB;
#   - CELL_STATS: p1 reports the circuit (no ID: it is not p1's own) with
#     InboundQueue/InboundConn and OutboundQueue/OutboundConn naming
#     connections CONN_BW named, and the relay cells added to and removed
#     from its inbound queue (towards relay1) add up to the download's
#     cells, with InboundTime for the removed ones;
#   - pctor refuses TestingEnableConnBwEvent without TestingTorNetwork,
#     with tor's message.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
PY=$(it_python3_with stem.response.events) ||
    it_skip "python3-stem is not installed (scripts/install-deps)"

# Refused outside a test network (tor's reason), before anything starts.
t=$(it_tmpdir)
printf 'DataDirectory %s/data\nTestingEnableConnBwEvent 1\n' "$t" > "$t/torrc"
if "$PCTOR" -f "$t/torrc" --verify-config > "$t/out" 2>&1; then
    it_fail "TestingEnableConnBwEvent was accepted without TestingTorNetwork"
fi
grep -q "TestingEnableConnBwEvent may only be changed in testing Tor networks!" "$t/out" ||
    it_fail "no tor-style refusal: $(cat "$t/out")"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt
www=$(it_tmpdir)
head -c $((2 * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

read -r _ cport _ _ < <(it_privnet reserve "$net" --role aux --nickname p1ctl)
it_start_pctor "$net" p1 relay "ControlPort $cport
TestingEnableConnBwEvent 1
TestingEnableCellStatsEvent 1"
it_start_pctor "$net" p3 relay "ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RelayBandwidthRate 512 KBytes
RelayBandwidthBurst 512 KBytes
ServerDNSResolvConfFile $net/resolv.conf"
it_wait_port 127.0.0.1 "$cport" 10 || it_fail "p1 does not listen on its ControlPort"
hop() { echo "pctor:$(cat "$net/$1.dir")/data@127.0.0.1:$(cat "$net/$1.port")"; }
export CPORT=$cport OUT=$net/events.txt DL=$net/dl.out
export CIRCTEST NODES=$nodes HPORT=$hport P1=$(hop p1) P3=$(hop p3)

"$PY" - <<'EOF' || it_fail "CONN_BW / CELL_STATS checks failed"
import os, queue, re, subprocess, time
from stem.control import Controller, EventType
from stem.response.events import ConnectionBandwidthEvent, CellStatsEvent
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
got = queue.Queue()
c.add_event_listener(got.put, EventType.CONN_BW, EventType.CELL_STATS)
dl = subprocess.run([os.environ["CIRCTEST"], "--timeout", "120", "--nodes", os.environ["NODES"],
                     "--begin", "127.0.0.1:" + os.environ["HPORT"], "--get", "/file",
                     "--out", os.environ["DL"], "relay1", os.environ["P1"], os.environ["P3"]],
                    stderr=subprocess.PIPE)
assert dl.returncode == 0, dl.stderr.decode()[-500:]
time.sleep(2.5)  # the last second's events
c.close()
CBT = r"[a-z0-9_]+:[0-9]+(,[a-z0-9_]+:[0-9]+)*"
def side(d):
    return (r"( {0}Queue=[0-9]+ {0}Conn=[0-9]+( {0}Added={1})?"
            r"( {0}Removed={1} {0}Time={1})?)?").format(d, CBT)
cell_re = re.compile(r"CELL_STATS( ID=[0-9]+)?" + side("Inbound") + side("Outbound"))
conn_re = re.compile(r"CONN_BW ID=[0-9]+ TYPE=(OR|DIR|EXIT) READ=[0-9]+ WRITTEN=[0-9]+")
evs = []
while not got.empty():
    evs.append(got.get())
with open(os.environ["OUT"], "w") as f:
    for e in evs:
        f.write(str(e) + "\n")
cbw = [e for e in evs if isinstance(e, ConnectionBandwidthEvent)]
cst = [e for e in evs if isinstance(e, CellStatsEvent)]
assert cbw and cst, "%d CONN_BW, %d CELL_STATS events" % (len(cbw), len(cst))
for e in cbw:
    assert conn_re.fullmatch(str(e)), str(e)
    assert e.conn_type == "OR", e
    assert e.read > 0 or e.written > 0, e
for e in cst:
    assert cell_re.fullmatch(str(e)), str(e)
size = 2 * 1024 * 1024
rd, wr = sum(e.read for e in cbw), sum(e.written for e in cbw)
assert rd >= size and wr >= size, (rd, wr)
conns = {e.id for e in cbw}
# The download's circuit: the one whose inbound queue carried most relay cells.
relayed = [e for e in cst if e.inbound_queue is not None]
assert relayed, "no CELL_STATS event of a relayed circuit"
by_circ = {}
for e in relayed:
    assert e.id is None, e  # not p1's own circuit
    assert e.inbound_connection in conns, e
    k = (e.inbound_connection, e.inbound_queue)
    a = by_circ.setdefault(k, {"added": 0, "removed": 0, "ms": 0, "out_added": 0, "n": 0, "outconn": set()})
    # (stem gives None for a field the event leaves out)
    ia, ir, it = e.inbound_added or {}, e.inbound_removed or {}, e.inbound_time or {}
    oa = e.outbound_added or {}
    a["added"] += ia.get("relay", 0)
    a["removed"] += ir.get("relay", 0)
    a["ms"] += it.get("relay", 0)
    a["out_added"] += oa.get("relay", 0) + oa.get("relay_early", 0)
    a["n"] += 1
    if e.outbound_connection is not None:
        assert e.outbound_connection in conns, e
        a["outconn"].add(e.outbound_connection)
    assert set(ir) == set(it), e
k, a = max(by_circ.items(), key=lambda kv: kv[1]["added"])
# the body plus HTTP headers in 498-byte RELAY_DATA cells, plus CONNECTED/END
assert size // 498 <= a["added"] <= size // 498 + 50, a
assert a["removed"] == a["added"], a
assert a["n"] >= 2, a  # several one-second events
assert a["out_added"] >= 2, a  # BEGIN, SENDMEs towards p3
assert a["outconn"], a
print("%d CONN_BW events (read %d, written %d bytes over %d connections); "
      "%d CELL_STATS events; the download's circuit %s: inbound relay cells "
      "added %d removed %d waiting %d ms in all, outbound relay cells %d" %
      (len(cbw), rd, wr, len(conns), len(cst), k, a["added"], a["removed"], a["ms"], a["out_added"]))
EOF
[ "$(sha256sum < "$net/dl.out" | cut -d' ' -f1)" = "$want" ] || it_fail "download corrupted"
it_pctor_alive_quiet "$net" p1 p3
it_log "CONN_BW and CELL_STATS checks passed"
