#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# control-status.sh -- STATUS_GENERAL events on pctor's ControlPort.
#
# A private network of one tor authority and one pctor client with a
# ControlPort. A stem controller subscribes to STATUS_GENERAL; the test
# then stops pctor with SIGSTOP for 23 s and continues it: its next
# one-second tick sees the wall clock 20 s or more ahead and sends
# "650 STATUS_GENERAL WARN CLOCK_JUMPED TIME=N" (control-spec 4.1.10),
# which stem must parse with N >= 20; pctor keeps answering afterwards.
# A second client, c2, runs with at most 64 descriptors (ulimit -n): 80
# idle connections to its SocksPort exhaust them, and its controller gets
# "STATUS_GENERAL WARN TOO_MANY_CONNECTIONS CURRENT=N" with N near 64;
# once they close, c2 accepts connections again.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=
for p in /usr/bin/python3 "$(it_python3)"; do
    [ -x "$p" ] && "$p" -c 'import stem' 2> /dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || it_skip "python3-stem is not installed (scripts/install-deps)"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
read -r _ cport _ _ < <(it_privnet reserve "$net" --role aux --nickname c1ports)
it_start_pctor "$net" c1 client "ControlPort $cport"
it_wait_port 127.0.0.1 "$cport" 10 || it_fail "c1 does not listen on its ControlPort"
export CPORT=$cport PID1=$(cat "$(cat "$net/c1.dir")/pid")

"$PY" - <<'EOF' || it_fail "CLOCK_JUMPED checks failed"
import os, queue, signal, time
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
got = queue.Queue()
c.add_event_listener(got.put, EventType.STATUS_GENERAL)
pid = int(os.environ["PID1"])
time.sleep(2)
os.kill(pid, signal.SIGSTOP)
try:
    time.sleep(23)
finally:
    os.kill(pid, signal.SIGCONT)
ev = got.get(timeout=10)
assert ev.action == "CLOCK_JUMPED", ev
assert ev.runlevel == "WARN", ev
assert int(ev.arguments["TIME"]) >= 20, ev.arguments
assert c.get_info("version").find("pctor") >= 0
c.close()
print("STATUS_GENERAL CLOCK_JUMPED TIME=%s after a 23 s stop" % ev.arguments["TIME"])
EOF
read -r _ cport2 _ _ < <(it_privnet reserve "$net" --role aux --nickname c2ports)
(ulimit -n 64 && it_start_pctor "$net" c2 client "ControlPort $cport2
ConnLimit 20") || it_fail "c2 did not start with 64 descriptors"
it_wait_port 127.0.0.1 "$cport2" 10 || it_fail "c2 does not listen on its ControlPort"
export CPORT2=$cport2 SOCKS2=$(cat "$net/c2.port")
"$PY" - <<'EOF' || it_fail "TOO_MANY_CONNECTIONS checks failed"
import os, queue, socket, time
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT2"]))
c.authenticate()
got = queue.Queue()
c.add_event_listener(got.put, EventType.STATUS_GENERAL)
socks = int(os.environ["SOCKS2"])
held = []
for _ in range(80):
    s = socket.create_connection(("127.0.0.1", socks), timeout=5)
    held.append(s)
ev = got.get(timeout=10)
assert ev.action == "TOO_MANY_CONNECTIONS", ev
assert ev.runlevel == "WARN", ev
n = int(ev.arguments["CURRENT"])
assert 50 <= n <= 64, n
for s in held:
    s.close()
time.sleep(3)
# Accepting resumes: a SOCKS5 greeting is answered again.
s = socket.create_connection(("127.0.0.1", socks), timeout=5)
s.settimeout(10)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.close()
c.close()
print("STATUS_GENERAL TOO_MANY_CONNECTIONS CURRENT=%d with 64 descriptors" % n)
EOF
it_log "control-status checks passed"
