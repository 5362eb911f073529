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
# Clocks set back with libfaketime (control-spec 4.1.10, CLOCK_SKEW):
# client c3 runs two hours behind, so a link it opens to a relay (pctor
# relays g1, g2 and g3, the last started after the controller subscribed;
# a circuit through one it has no connection to yet)
# brings the relay's NETINFO time and its controller gets "STATUS_GENERAL
# WARN CLOCK_SKEW SKEW=-N SOURCE=OR:127.0.0.1:PORT", N about 7200 and PORT
# that relay's ORPort. Client c4 runs 90 s behind: each consensus it takes
# is from its future (it would not fetch a new one for two hours if it ran
# as far behind as c3), and its controller gets "CLOCK_SKEW MIN_SKEW=-N
# SOURCE=CONSENSUS" with N above 60.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=$(it_python3_with stem) || it_fail "python3-stem is not installed (scripts/install-deps installs it)"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
read -r _ cport _ _ < <(it_privnet reserve "$net" --role aux --nickname c1ports)
it_start_pctor "$net" c1 client "ControlPort $cport"
it_wait_port 127.0.0.1 "$cport" 10 || it_fail "c1 does not listen on its ControlPort"
# The relays and the client with the slow clock start now, so that they
# are in the consensus, and bootstrapped, when their part comes.
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[ -r "$faketime_lib" ] ||
    it_fail "libfaketime is not installed (Debian package faketime; scripts/install-deps)"
it_start_pctor "$net" g1 relay ""
it_start_pctor "$net" g2 relay ""
# c3 (below) keeps the first consensus it takes for two hours: it must
# list g1 and g2 (two CI runs at a load of 12 failed when it did not, and
# c3 knew no relay to link to).
it_privnet wait "$net" --timeout 120 || it_fail "g1 and g2 are not in the consensus"
read -r _ cport3 _ _ < <(it_privnet reserve "$net" --role aux --nickname c3ports)
read -r _ cport4 _ _ < <(it_privnet reserve "$net" --role aux --nickname c4ports)
for behind in 2h 90s; do
    printf '#!/bin/sh\nLD_PRELOAD=%s FAKETIME=-%s FAKETIME_DONT_FAKE_MONOTONIC=1 exec %s "$@"\n' \
        "$faketime_lib" "$behind" "$PCTOR" > "$net/pctor-$behind"
    chmod +x "$net/pctor-$behind"
done
# c3's only guard is g1 (EntryNodes), so it has no link of its own to g2
# when the test asks it for a circuit through g2: c3 (2 h behind) never
# takes a newer consensus, so g3 is unknown to it, and in one CI run it
# had linked to g1 and g2 before the controller listened (no event left
# to see).
PCTOR=$net/pctor-2h it_start_pctor "$net" c3 client "ControlPort $cport3
EntryNodes g1"
PCTOR=$net/pctor-90s it_start_pctor "$net" c4 client "ControlPort $cport4"
it_wait_port 127.0.0.1 "$cport3" 10 || it_fail "c3 does not listen on its ControlPort"
it_wait_port 127.0.0.1 "$cport4" 10 || it_fail "c4 does not listen on its ControlPort"
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
# c3 may have linked to g1 already (its guard), before a controller
# listened; its first link to g2 (the test's circuit) is seen. g3 starts
# now for the other clients' sake; c3, whose consensus is "from its
# future", does not learn of it.
it_start_pctor "$net" g3 relay ""
export CPORT3=$cport3 CPORT4=$cport4 G1PORT=$(cat "$net/g1.port") G2PORT=$(cat "$net/g2.port") \
    G3PORT=$(cat "$net/g3.port")
"$PY" - <<'EOF' || it_fail "CLOCK_SKEW checks failed"
import os, queue, re, time, stem
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT3"]))
c.authenticate()
got = queue.Queue()
c.add_event_listener(lambda e: got.put(("c3", e)), EventType.STATUS_GENERAL)
c4 = Controller.from_port(port=int(os.environ["CPORT4"]))
c4.authenticate()
c4.add_event_listener(lambda e: got.put(("c4", e)), EventType.STATUS_GENERAL)
ports = {os.environ["G1PORT"], os.environ["G2PORT"], os.environ["G3PORT"]}
seen, tried = {}, set()
deadline = time.time() + 240  # c4 takes a new consensus every ~100 s
while not ("CONSENSUS" in seen and "OR" in seen):
    assert time.time() < deadline, "CLOCK_SKEW events seen: %s" % seen
    # A circuit through a pctor relay c3 has no link to yet opens one.
    if "OR" not in seen:
        linked = set(re.findall(r"\$([0-9A-F]{40})", c.get_info("orconn-status")))
        try:
            relays = list(c.get_network_statuses())
        except stem.DescriptorUnavailable:
            relays = []  # no consensus yet
        for r in relays:
            if r.nickname in ("g1", "g2", "g3") and r.fingerprint not in linked | tried:
                tried.add(r.fingerprint)
                try:
                    c.extend_circuit("0", [r.fingerprint])
                except stem.InvalidRequest:
                    tried.discard(r.fingerprint)  # no microdescriptor yet
                break
    try:
        who, ev = got.get(timeout=3)
    except queue.Empty:
        continue
    if ev.action != "CLOCK_SKEW":
        continue
    assert ev.runlevel == "WARN", ev
    src = ev.arguments["SOURCE"]
    if src == "CONSENSUS":
        skew = int(ev.arguments["MIN_SKEW"])
        # (a consensus may be fetched just before its valid-after)
        assert (-95 <= skew < -60) if who == "c4" else (-7300 <= skew < -7100), (who, ev)
        if who == "c4":
            seen["CONSENSUS"] = skew
    else:
        assert who == "c3", ev
        m = re.fullmatch(r"OR:127\.0\.0\.1:(\d+)", src)
        assert m, ev
        skew = int(ev.arguments["SKEW"])
        assert -7210 <= skew <= -7190, ev
        if m.group(1) in ports:
            seen["OR"] = (skew, src)
c.close()
c4.close()
print("c3 (clock 2 h behind): CLOCK_SKEW SKEW=%d SOURCE=%s; c4 (90 s behind): MIN_SKEW=%d SOURCE=CONSENSUS" %
      (seen["OR"][0], seen["OR"][1], seen["CONSENSUS"]))
EOF
it_log "control-status checks passed"
