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
it_log "control-status checks passed"
