#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# accounting.sh -- AccountingMax: a pctor relay hibernates when its quota is
# used up, tells stem so, refuses new circuits, and keeps the count across
# a restart (tor's state-file keys).
#
# Private network: 1 tor authority, 1 tor relay (for the DirAuthority
# lines), a pctor exit p2 to a local web server, and a pctor relay p1 with
# AccountingMax 1 MBytes, AccountingStart day HH:MM (HH:MM 1.5 to 2.5
# minutes after the start of the test) and a ControlPort.
# Checks:
#   - before traffic, stem reads accounting/enabled 1, hibernating awake,
#     bytes-left near 1 MiB each way, interval-start/-end one day apart in
#     tor's time format, interval-wake == interval-start (no estimate yet),
#     and (as tor) no tunnelled-dir-server line in p1's descriptor;
#   - 3 MiB downloaded through p1 -> p2 (pctor-circtest) push p1 past its
#     quota: stem sees accounting/hibernating become "hard", bytes-left
#     reach 0 in a direction, STATUS_SERVER HIBERNATION_STATUS events SOFT
#     then HARD, p1's own descriptor says "hibernating 1"; p1 logs the soft
#     and hard limits;
#   - a new circuit through p1 fails (its ORPort is closed; its DirPort
#     too), while a circuit through p2 alone still works;
#   - after SIGTERM the state file holds AccountingIntervalStart and
#     AccountingBytes*InInterval (at least the quota); tor 0.4.9 started
#     on a copy of it with the same quota hibernates at once; a restarted
#     p1 reads them back and comes up hibernating ("hard", same bytes);
#   - at HH:MM the next interval begins: p1 wakes at the time tor's rule
#     gives (computed here in Python from the state file: the usage
#     estimate from the soft-limit record, SHA-1 of the interval start and
#     the identity), which is the interval's start: stem sees AWAKE (event
#     and GETINFO), bytes back near 0, interval-start == HH:MM, the
#     descriptor without "hibernating 1", and circuits through p1 work
#     again; its DirPort answers again;
#   - soft hibernation alone (SETCONF AccountingMax to put the count between
#     the soft and hard limits): state "soft" with bytes left, a SOFT event,
#     and a CREATE on p2's already open connection to p1 answered with
#     DESTROY (p1 logs the refusal as hibernating); as tor, the DirPort no
#     longer accepts connections but answers a request on one it accepted
#     before.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
[ -x "$CIRCTEST" ] || it_fail "pctor-circtest is not built ($CIRCTEST)"
PY=$(it_python3_with stem) || it_fail "python3-stem is not installed (scripts/install-deps installs it)"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 1 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((3 * 1024 * 1024)) /dev/urandom > "$www/file"
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

read -r _ cport dport _ < <(it_privnet reserve "$net" --role aux --nickname p1ctl)
# The interval boundary 1.5-2.5 minutes from now (local time, as tor's), so
# that the test sees the next interval begin.
boundary=$(date -d "+150 sec" +%H:%M)
boundary_epoch=$(date -d "$boundary" +%s)
[ "$boundary_epoch" -gt "$(date +%s)" ] || boundary_epoch=$((boundary_epoch + 86400))
it_start_pctor "$net" p1 relay "PublishServerDescriptor 0
ControlPort $cport
DirPort 127.0.0.1:$dport
AccountingMax 1 MBytes
AccountingStart day $boundary"
it_start_pctor "$net" p2 relay "PublishServerDescriptor 0
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RefuseUnknownExits 0
ServerDNSResolvConfFile $net/resolv.conf"
d1=$(cat "$net/p1.dir")
it_wait_port 127.0.0.1 "$cport" 10 || it_fail "p1 does not listen on its ControlPort"
it_wait_port 127.0.0.1 "$dport" 10 || it_fail "p1 does not listen on its DirPort"
hop() { echo "pctor:$(cat "$net/$1.dir")/data@127.0.0.1:$(cat "$net/$1.port")"; }
export D1=$d1 CPORT=$cport DPORT=$dport FP1=$(awk '{print $2}' "$d1/data/fingerprint")
# p1's controller for the Python checks below ("from p1ctl import ...";
# p1py runs a check from stdin with it on the path): c, connected and
# authenticated, and seen, the HIBERNATION_STATUS values of the
# STATUS_SERVER events since it connected.
cat > "$net/p1ctl.py" <<'EOF'
import os, time
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
seen = []
def on_status(ev):
    if ev.action == "HIBERNATION_STATUS":
        seen.append(ev.arguments.get("STATUS"))
c.add_event_listener(on_status, EventType.STATUS_SERVER)
def wait_seen(status, pause):
    """Until seen holds status (at most 20 pauses)."""
    for _ in range(20):
        if status in seen:
            break
        time.sleep(pause)
EOF
p1py() { PYTHONPATH=$net "$PY" - "$@"; }

# 1. Awake, with tor's formats.
p1py <<'EOF' || it_fail "accounting GETINFO before traffic"
import os, re
from datetime import datetime
from p1ctl import c
g = c.get_info
assert g("accounting/enabled") == "1", g("accounting/enabled")
assert g("accounting/hibernating") == "awake", g("accounting/hibernating")
left = [int(x) for x in g("accounting/bytes-left").split()]
assert len(left) == 2 and all(900000 < x <= 1048576 for x in left), left
used = [int(x) for x in g("accounting/bytes").split()]
assert len(used) == 2 and all(0 <= x < 148576 for x in used), used
fmt = "%Y-%m-%d %H:%M:%S"
t = {k: datetime.strptime(g("accounting/interval-" + k), fmt)
     for k in ("start", "wake", "end")}
assert (t["end"] - t["start"]).total_seconds() in (82800, 86400, 90000), t
assert t["wake"] == t["start"], t
# stem's own view of the same keys
a = c.get_accounting_stats()
assert a.status == "awake" and a.read_limit == 1048576, a
# As tor: 1 MiB a day could go at the advertised rate, so no directory
# service is advertised (no tunnelled-dir-server, DirPort 0).
desc = c.get_info("desc/id/" + os.environ["FP1"])
assert "tunnelled-dir-server" not in desc, desc
assert re.search(r"^router p1 127\.0\.0\.1 \d+ 0 0$", desc, re.M), desc.splitlines()[0]
print("awake:", left, used, t["start"], t["end"])
EOF
it_log "p1 reports accounting awake with a 1 MiB quota"

# 2. Use the quota; watch it hibernate.
cat > "$net/watch.py" <<'EOF'
import os, sys, time
from p1ctl import c, seen
open(sys.argv[1], "w").write("ready\n")
deadline = time.time() + 120
while time.time() < deadline:
    if c.get_info("accounting/hibernating") == "hard" and "HARD" in seen:
        break
    time.sleep(0.5)
state = c.get_info("accounting/hibernating")
left = [int(x) for x in c.get_info("accounting/bytes-left").split()]
used = [int(x) for x in c.get_info("accounting/bytes").split()]
desc = ""
for _ in range(20):  # the descriptor is rebuilt on the next loop turn
    desc = c.get_info("desc/id/" + os.environ["FP1"])
    if "\nhibernating 1\n" in desc:
        break
    time.sleep(0.5)
print("state", state, "left", left, "used", used, "events", seen)
assert state == "hard", state
assert 0 in left, left
assert max(used) >= 1048576, used
assert seen[:2] == ["SOFT", "HARD"], seen
assert "\nhibernating 1\n" in desc, "the descriptor does not say hibernating 1"
print("ok")
EOF
"$PY" "$net/watch.py" "$net/watch.ready" > "$net/watch.out" 2>&1 &
wpid=$!
it_register_pid "$wpid"
it_wait_until 20 test -s "$net/watch.ready" || it_fail "the stem watcher did not start: $(cat "$net/watch.out")"
"$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /file --out "$net/body" "$(hop p1)" "$(hop p2)" > "$net/get.out" 2>&1 ||
    it_log "the download through p1 ended early (p1 hibernated): $(tail -1 "$net/get.out")"
it_log "downloaded $(stat -c %s "$net/body" 2>/dev/null || echo 0) bytes through p1 -> p2"
wait "$wpid" || it_fail "stem did not see p1 hibernate: $(cat "$net/watch.out")"
it_log "stem: $(head -1 "$net/watch.out")"
grep -q "Bandwidth soft limit reached; commencing hibernation" "$d1/info.log" ||
    it_fail "p1 did not log the soft limit"
grep -q "Bandwidth hard limit reached" "$d1/info.log" ||
    it_fail "p1 did not log the hard limit"

# 3. New circuits through p1 are refused; p2 still works.
if "$CIRCTEST" --timeout 20 --nodes "$nodes" "$(hop p1)" "$(hop p2)" > "$net/circ1.out" 2>&1; then
    it_fail "a circuit through the hibernating p1 was built"
fi
"$CIRCTEST" --timeout 30 --nodes "$nodes" "$(hop p2)" > "$net/circ2.out" 2>&1 ||
    it_fail "a circuit through p2 failed: $(tail -3 "$net/circ2.out")"
curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$dport/tor/server/authority" &&
    it_fail "p1's DirPort still answers while hibernating"
it_log "a new circuit through p1 fails (its DirPort is closed too); through p2 it works"

# 4. The count survives a restart.
pid1=$(cat "$d1/pid")
kill -TERM "$pid1"
for _ in $(seq 1 100); do kill -0 "$pid1" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid1" 2>/dev/null && it_fail "p1 did not exit on SIGTERM"
st=$d1/data/state
grep -q '^AccountingIntervalStart [0-9-]* [0-9:]*$' "$st" ||
    it_fail "no AccountingIntervalStart in the state file: $(grep Accounting "$st")"
w=$(awk '$1 == "AccountingBytesWrittenInInterval" { print $2 }' "$st")
r=$(awk '$1 == "AccountingBytesReadInInterval" { print $2 }' "$st")
[ "${w:-0}" -ge 1048576 ] || [ "${r:-0}" -ge 1048576 ] ||
    it_fail "the state file does not hold the used quota: $(grep Accounting "$st")"
[ $(( ${w:-0} % 1024 )) = 0 ] || it_fail "written bytes not in whole KiB (tor's rounding): $w"
it_log "state file: read $r, written $w"
cp "$st" "$net/state.before"
# tor 0.4.9 on a copy of the state file reads the count: it hibernates at
# once (same quota and interval).
it_tor_on_state "$net" "$st" "AccountingMax 1 MBytes
AccountingStart day $boundary"
tdir=$IT_TOR_DIR tpid=$IT_TOR_PID
it_wait_until 30 grep -qs "Bandwidth soft limit reached" "$tdir/notice.log" ||
    it_fail "tor did not take pctor's accounting state: $(grep -i -e account -e hibernat "$tdir/notice.log" | tail -3)"
kill -TERM "$tpid"; sleep 0.5; kill -TERM "$tpid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
it_log "tor 0.4.9 on pctor's state file hibernates at once: $(grep -o 'Bandwidth soft limit reached.*' "$tdir/notice.log" | head -1)"
"$PCTOR" -f "$d1/torrc" > "$d1/stderr.2" 2>&1 &
echo $! > "$d1/pid"
it_register_pid "$(cat "$d1/pid")"
it_wait_port 127.0.0.1 "$cport" 30 || it_fail "p1 did not restart: $(tail -3 "$d1/stderr.2")"
export R=$r W=$w
p1py <<'EOF' || it_fail "p1 after the restart"
import os
from p1ctl import c
state = c.get_info("accounting/hibernating")
used = [int(x) for x in c.get_info("accounting/bytes").split()]
print("restarted:", state, used)
assert state == "hard", state
assert used[0] >= int(os.environ["R"] or 0) and used[1] >= int(os.environ["W"] or 0), used
EOF
if "$CIRCTEST" --timeout 20 --nodes "$nodes" "$(hop p1)" > "$net/circ3.out" 2>&1; then
    it_fail "a circuit through p1 was built after its restart with a used-up quota"
fi
it_log "restarted p1 reads its counters back and stays hibernating"

# 5. The next interval: p1 wakes when tor's rule says.
now=$(date +%s)
[ "$boundary_epoch" -gt "$now" ] ||
    it_fail "the test was too slow: the interval boundary $boundary passed before step 5"
it_log "waiting $((boundary_epoch - now)) s for the next interval ($boundary local time)"
export BOUNDARY=$boundary_epoch STATE_BEFORE=$net/state.before
p1py <<'EOF' || it_fail "p1 did not wake in the next interval as tor's rule says"
import calendar, hashlib, os, time
from p1ctl import c, seen, wait_seen
fmt = "%Y-%m-%d %H:%M:%S"
utc = lambda s: calendar.timegm(time.strptime(s, fmt))
boundary = int(os.environ["BOUNDARY"])
assert c.get_info("accounting/hibernating") == "hard"
deadline = boundary + 30
while time.time() < deadline:
    if utc(c.get_info("accounting/interval-start")) == boundary:
        break
    time.sleep(0.5)
start = utc(c.get_info("accounting/interval-start"))
end = utc(c.get_info("accounting/interval-end"))
wake = utc(c.get_info("accounting/interval-wake"))
assert start == boundary, (start, boundary)
# tor's rule, from the last interval's record in the state file
st = dict(l.rstrip("\n").split(" ", 1) for l in open(os.environ["STATE_BEFORE"])
          if l[:1].isalpha())
prev = utc(st["AccountingIntervalStart"])
soft_at = utc(st["AccountingSoftLimitHitAt"]) if "AccountingSoftLimitHitAt" in st else 0
at_soft = int(st.get("AccountingBytesAtSoftLimit", 0))
active = int(st.get("AccountingSecondsActive", 0))
used = max(int(st.get("AccountingBytesReadInInterval", 0)),
           int(st.get("AccountingBytesWrittenInInterval", 0)))
if soft_at > prev and at_soft and soft_at - prev > 1800:
    expected = at_soft // (soft_at - prev) // 60
elif active >= 1800:
    expected = used // (active // 60)
else:
    expected = 0
if expected == 0:
    want = start
else:
    exhaust = 1048576 // expected * 60
    span = (end - start) - exhaust
    fp = open(os.environ["D1"] + "/data/fingerprint").read().split()[1]
    h = hashlib.sha1(time.strftime(fmt, time.gmtime(start)).encode() +
                     bytes.fromhex(fp)).digest()
    want = start if span <= 0 else start + int.from_bytes(h[:4], "little") % span
print("interval", start, "wake", wake, "tor's rule", want, "expected/min", expected)
assert wake == want, (wake, want)
assert want <= boundary + 5, "tor's rule would not wake p1 now; the test cannot check waking"
while time.time() < deadline and c.get_info("accounting/hibernating") != "awake":
    time.sleep(0.5)
assert c.get_info("accounting/hibernating") == "awake", c.get_info("accounting/hibernating")
wait_seen("AWAKE", 0.5)
assert "AWAKE" in seen, seen
b = [int(x) for x in c.get_info("accounting/bytes").split()]
assert max(b) < 200000, b
desc = ""
for _ in range(20):
    desc = c.get_info("desc/id/" + os.environ["FP1"])
    if "\nhibernating 1\n" not in desc:
        break
    time.sleep(0.5)
assert "\nhibernating 1\n" not in desc, "the descriptor still says hibernating 1"
print("awake again; bytes", b, "events", seen)
EOF
it_wait_port 127.0.0.1 "$(cat "$net/p1.port")" 10 || it_fail "p1 did not reopen its ORPort"
curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$dport/tor/server/authority" ||
    it_fail "p1's DirPort does not answer after it woke"
"$CIRCTEST" --timeout 30 --nodes "$nodes" "$(hop p1)" "$(hop p2)" > "$net/circ4.out" 2>&1 ||
    it_fail "no circuit through p1 after it woke: $(tail -3 "$net/circ4.out")"
grep -q "Hibernation period ended. Resuming normal activity." "$d1/info.log" ||
    it_fail "p1 did not log its wake-up"
it_log "the next interval began; p1 woke at the interval start (tor's rule) and relays again"

# 6. Soft hibernation alone: a lower AccountingMax (SETCONF) puts p1 between
# its soft and hard limits; a CREATE on a connection that is already open
# gets DESTROY (HIBERNATING) while open circuits go on.
"$CIRCTEST" --timeout 30 --nodes "$nodes" "$(hop p2)" "$(hop p1)" > "$net/circ5.out" 2>&1 ||
    it_fail "circuit p2 -> p1 failed: $(tail -3 "$net/circ5.out")"
head -c $((512 * 1024)) /dev/urandom > "$www/small"
"$CIRCTEST" --timeout 60 --nodes "$nodes" --begin "127.0.0.1:$hport" \
    --get /small --out "$net/small" "$(hop p1)" "$(hop p2)" > "$net/get2.out" 2>&1 ||
    it_fail "download through the woken p1 failed: $(tail -3 "$net/get2.out")"
cmp -s "$net/small" "$www/small" || it_fail "the download through p1 is corrupt"
p1py <<'EOF' || it_fail "soft hibernation"
import os, time
from p1ctl import c, seen, wait_seen
used = 0
for _ in range(20):  # counted once a second
    used = max(int(x) for x in c.get_info("accounting/bytes").split())
    if used > 500000:
        break
    time.sleep(0.5)
assert used > 500000, used
limit = used * 100 // 96   # used is 96%: past the soft limit (95%), not the hard
import socket
dir_conn = socket.create_connection(("127.0.0.1", int(os.environ["DPORT"])))
dir_conn.sendall(b"GET /tor/server/authority HTTP/1.0\r\n")  # half of it
c.set_conf("AccountingMax", "%d bytes" % limit)
deadline = time.time() + 20
while time.time() < deadline and c.get_info("accounting/hibernating") != "soft":
    time.sleep(0.3)
state = c.get_info("accounting/hibernating")
left = [int(x) for x in c.get_info("accounting/bytes-left").split()]
print("AccountingMax", limit, "used", used, "state", state, "left", left)
assert state == "soft", state
assert min(left) > 0, left
wait_seen("SOFT", 0.3)
assert seen == ["SOFT"], seen
try:
    socket.create_connection(("127.0.0.1", int(os.environ["DPORT"])), 2).close()
    raise AssertionError("the DirPort still accepts connections while soft")
except ConnectionRefusedError:
    pass
dir_conn.sendall(b"\r\n")
answer = b""
dir_conn.settimeout(10)
while True:
    b = dir_conn.recv(65536)
    if not b:
        break
    answer += b
assert answer.startswith(b"HTTP/1.0 200"), answer[:60]
assert b"\nrouter p1 " in answer, answer[:200]
print("DirPort: a request begun before soft hibernation answered,", len(answer),
      "bytes")
EOF
if "$CIRCTEST" --timeout 20 --nodes "$nodes" "$(hop p2)" "$(hop p1)" > "$net/circ6.out" 2>&1; then
    it_fail "p1 in soft hibernation accepted a new circuit"
fi
it_wait_until 10 grep -q "Refusing CREATE .*hibernating" "$d1/info.log" ||
    it_fail "p1 did not refuse the CREATE as hibernating: $(tail -3 "$net/circ6.out")"
it_log "soft: p1 answers a CREATE on an open connection with DESTROY HIBERNATING ($(grep -o 'Refusing CREATE .*' "$d1/info.log" | tail -1))"
