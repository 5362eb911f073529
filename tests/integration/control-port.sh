#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# control-port.sh -- the ControlPort with stem (Debian's python3-stem) and
# the MetricsPort, against pctor relays in a private network.
#
# Private network: 1 tor authority, 2 tor relays, a pctor exit p3 and
#   p1: ControlPort with CookieAuthentication and HashedControlPassword,
#       MetricsPort with MetricsPortPolicy accept 127.0.0.1;
#   p2: ControlSocket (unix, GroupWritable) with no authentication (NULL)
#       and __OwningControllerProcess set to a sleep process.
# Checks:
#   - stem authenticates to p1 with COOKIE, SAFECOOKIE and HASHEDPASSWORD
#     and is refused with a wrong password, a wrong cookie and no
#     credentials; PROTOCOLINFO lists the methods, the cookie file and a
#     version stem parses; p2's socket takes NULL authentication;
#   - GETINFO keys have the right values (pid, fingerprint, address,
#     listeners, config-file, ns/all and ns/id once p1 has a consensus...),
#     unknown keys give 552, GETCONF reads options; desc/id (p1's own and
#     another relay's server descriptor), md/id; a NEWCONSENSUS event
#     listing p1 arrives with the next consensus;
#   - SETCONF of Log starts a new log file (CONF_CHANGED says so), a new
#     ContactInfo is uploaded (STATUS_SERVER ACCEPTED_SERVER_DESCRIPTOR),
#     SETCONF BandwidthRate slows a download through p1 at once, ORPort,
#     ControlPort and DataDirectory are refused with 553, bad values with 513, unknown
#     options with 552, RESETCONF restores a default; SAVECONF writes the
#     torrc (keeping the original as torrc.orig.1), LOADCONF and SIGNAL
#     RELOAD read it back; NEWDESC names p1 when its new descriptor comes
#     back through the directory;
#   - BW events arrive every second and their byte counts move while a
#     2 MiB download crosses p1; traffic/read grows by at least that much;
#     the MetricsPort's tor_relay_traffic_bytes moves too, parses with
#     prometheus_client, passes `promtool check metrics` (Prometheus' own
#     linter: no parse error, and no lint complaint except the two names
#     kept as tor has them), and 127.0.0.2 is refused by the policy;
#   - SIGNAL RELOAD applies a new HashedControlPassword from the torrc;
#     HEARTBEAT and RELOAD are seen as NOTICE log events;
#   - bad input: an endless line and a controller flooding commands without
#     reading replies are disconnected, a GETINFO too large to answer gets
#     551, and p1 keeps working;
#   - nyx renders p1: nickname, fingerprint, a bandwidth
#     graph holding the download, the log panel;
#   - a pctor client reports CIRC LAUNCHED/EXTENDED/BUILT, STREAM
#     NEW/SENTCONNECT/SUCCEEDED/CLOSED and ORCONN events and lists its
#     circuits in circuit-status; its CIRC_BW events count the 2 MiB
#     download as DELIVERED_READ with tor's accounting and carry pctor's
#     PCTOR_ fields (queue, TCP_INFO);
#   - EXTENDCIRCUIT builds circuits over p2,p1,p3 and p2,relay1,p3; with
#     __LeaveStreamsUnattached a SOCKS stream waits until ATTACHSTREAM puts
#     it on one, and p1's and p2's traffic/read show which path carried
#     the 2 MiB; CLOSESTREAM fails a held stream, CLOSECIRCUIT ends both
#     circuits (CIRC CLOSED), unknown IDs and relays are refused;
#     MeasureMe switched on by SETCONF (p1 MeasureMeEnabled, c1
#     MeasureMeHops) makes p1 send CIRC_BW PCTOR_RELAYED=1 events for the
#     measured circuit that count the 2 MiB in and out;
#   - p2 exits when its owning process ends; p1 exits when the controller
#     that sent TAKEOWNERSHIP closes its connection.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
# stem from Debian's package lives in the system python3.
PY=$(it_python3_with "stem, prometheus_client") ||
    it_fail "python3-stem and python3-prometheus-client are not installed (scripts/install-deps installs them)"
command -v promtool > /dev/null 2>&1 ||
    it_fail "promtool is not installed (Debian package prometheus; scripts/install-deps installs it): the MetricsPort output cannot be checked"

net=$(it_tmpdir)/net
# Every relay Fast: pctor relays republish after about a minute with the
# bandwidth they have observed so far, and the authority may then leave the
# slowest of these five relays without Fast; c1 (3b) pins its exit p3 and
# found no path for two minutes in one CI run ("no usable relay for the
# last hop").
echo "AuthDirFastGuarantee 1 bytes" > "$IT_ROOT/auth-fast.torrc"
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto --torrc-extra "authority=$IT_ROOT/auth-fast.torrc" ||
    it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((2 * 1024 * 1024)) /dev/urandom > "$www/file"
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

read -r _ cport mport _ < <(it_privnet reserve "$net" --role aux --nickname p1ports)
pw_hash=$(tor --hash-password "correct horse" | tail -1)
case "$pw_hash" in 16:*) ;; *) it_fail "tor --hash-password gave '$pw_hash'";; esac
it_start_pctor "$net" p1 relay "ControlPort $cport
CookieAuthentication 1
HashedControlPassword $pw_hash
MetricsPort 127.0.0.1:$mport
MetricsPortPolicy accept 127.0.0.1"
d1=$(cat "$net/p1.dir")
it_wait_port 127.0.0.1 "$cport" 10 || it_fail "p1 does not listen on its ControlPort"

sockdir=$(it_tmpdir)
chmod 700 "$sockdir"
sleep 600 &
owner=$!
it_register_pid "$owner"
it_start_pctor "$net" p2 relay "ControlSocket $sockdir/control GroupWritable
__OwningControllerProcess $owner"
d2=$(cat "$net/p2.dir")
it_start_pctor "$net" p3 relay "ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
[ "$(stat -c %a "$sockdir/control")" = 660 ] || it_fail "the GroupWritable socket is not mode 0660"

export CPORT=$cport MPORT=$mport D1=$d1 D2=$d2 SOCK=$sockdir/control
export FP1=$(awk '{print $2}' "$d1/data/fingerprint") OR1=$(cat "$net/p1.port")
export PID1=$(cat "$d1/pid")

# 1. Authentication.
"$PY" - <<'EOF' || it_fail "authentication checks failed"
import os, stem, stem.connection, stem.socket
from stem.control import Controller
port = int(os.environ["CPORT"])
cookie = os.environ["D1"] + "/data/control_auth_cookie"
c = Controller.from_port(port=port)
pi = c.get_protocolinfo()
assert set(pi.auth_methods) == {stem.connection.AuthMethod.COOKIE,
    stem.connection.AuthMethod.SAFECOOKIE, stem.connection.AuthMethod.PASSWORD}, pi.auth_methods
assert pi.cookie_path == cookie, pi.cookie_path
assert str(pi.tor_version).startswith("0.4.9.11"), pi.tor_version
c.close()
for name, fn, arg in [("COOKIE", stem.connection.authenticate_cookie, cookie),
                      ("SAFECOOKIE", stem.connection.authenticate_safecookie, cookie),
                      ("HASHEDPASSWORD", stem.connection.authenticate_password, "correct horse")]:
    s = stem.socket.ControlPort(port=port)
    fn(s, arg)
    s.send("GETINFO version")
    r = s.recv()
    assert r.is_ok() and "pctor-" in str(r), str(r)
    s.close()
    print("authenticated with", name)
bad = os.environ["D1"] + "/bad_cookie"
open(bad, "wb").write(os.urandom(32))
for name, fn, arg, exc in [
        ("wrong password", stem.connection.authenticate_password, "wrong horse",
         stem.connection.IncorrectPassword),
        ("wrong cookie", stem.connection.authenticate_cookie, bad,
         stem.connection.IncorrectCookieValue),
        ("wrong safecookie", stem.connection.authenticate_safecookie, bad,
         stem.connection.AuthenticationFailure)]:
    s = stem.socket.ControlPort(port=port)
    try:
        fn(s, arg)
        raise SystemExit(name + " was accepted")
    except exc as e:
        print("refused:", name, "-", e)
    s.close()
s = stem.socket.ControlPort(port=port)
s.send("GETINFO version")
r = s.recv()
assert r.content()[0][0] == "514", str(r)
try:
    s.send("GETINFO version"); s.recv()
    raise SystemExit("still open after 514")
except stem.SocketClosed:
    pass
print("unauthenticated GETINFO: 514 and closed")
# NULL on p2's unix socket
c = Controller.from_socket_file(os.environ["SOCK"])
pi = c.get_protocolinfo()
assert pi.auth_methods == (stem.connection.AuthMethod.NONE,), pi.auth_methods
c.authenticate()
assert c.get_info("net/listeners/control") == '"unix:%s"' % os.environ["SOCK"]
c.close()
print("NULL authentication on the unix socket")
EOF
it_log "authentication: COOKIE, SAFECOOKIE, HASHEDPASSWORD, NULL accepted; wrong ones refused"

# 2. GETINFO and GETCONF.
it_privnet wait "$net" --timeout 180 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"
"$PY" - <<'EOF' || it_fail "GETINFO/GETCONF checks failed"
import os, re, time, stem
from stem.control import Controller
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate(password="correct horse")
v = c.get_version()
assert str(v).startswith("0.4.9.11"), v
info = lambda k: c.get_info(k)
assert info("version").startswith("0.4.9.11 (pctor-"), info("version")
assert info("process/pid") == os.environ["PID1"]
assert info("fingerprint") == os.environ["FP1"], info("fingerprint")
assert info("address") == "127.0.0.1", info("address")
assert info("config-file") == os.environ["D1"] + "/torrc", info("config-file")
assert info("net/listeners/control") == '"127.0.0.1:%s"' % os.environ["CPORT"]
assert info("net/listeners/metrics") == '"127.0.0.1:%s"' % os.environ["MPORT"]
assert info("net/listeners/or") == '"127.0.0.1:%s"' % os.environ["OR1"]
assert int(info("process/descriptor-limit")) > 0
assert info("process/user")
assert int(info("uptime")) >= 1
assert int(info("traffic/read")) > 0 and int(info("traffic/written")) > 0
assert "BW" in info("events/names").split()
assert "ns/all" in info("info/names")
assert info("dormant") == "0"
assert info("status/version/current") == "unknown"
for k in ("circuit-status", "orconn-status"):
    info(k)
# p1's own consensus (it fetches one as a directory cache)
deadline = time.time() + 120
while True:
    try:
        ns = info("ns/all")
        # p1 and another relay: an early consensus may list p1 alone.
        fps = [r.fingerprint for r in c.get_network_statuses()]
        if os.environ["FP1"] in fps and len(fps) >= 2:
            break
    except stem.OperationFailed:
        pass
    if time.time() > deadline:
        raise SystemExit("no consensus listing p1 at p1")
    time.sleep(2)
assert "BOOTSTRAP PROGRESS=100" in info("status/bootstrap-phase")
assert info("network-liveness") == "up"
me = c.get_network_status(os.environ["FP1"])
assert me.nickname == "p1" and me.or_port == int(os.environ["OR1"]), me
assert "Running" in me.flags, me.flags
print("ns/all: %d relays; ns/id of p1: %s %s" % (len(list(c.get_network_statuses())), me.nickname, me.flags))
try:
    info("no-such-key")
    raise SystemExit("unknown key accepted")
except stem.InvalidArguments as e:
    assert "no-such-key" in str(e)
assert c.get_conf("Nickname") == "p1"
assert c.get_conf("ControlPort") == os.environ["CPORT"]
assert c.get_conf("CookieAuthentication") == "1"
assert c.get_conf("__OwningControllerProcess", None) is None
assert len(c.get_conf("DirAuthority", multiple=True)) == 1
try:
    c.get_conf("NoSuchOption")
    raise SystemExit("unknown option accepted")
except stem.InvalidArguments:
    pass
# descriptors: p1's own server descriptor, and the others p1 caches
sd = c.get_server_descriptor(os.environ["FP1"])
assert sd.nickname == "p1" and sd.or_port == int(os.environ["OR1"]), sd
others = [r for r in c.get_network_statuses() if r.fingerprint != os.environ["FP1"]]
deadline = time.time() + 60
while True:
    try:
        od = c.get_server_descriptor(others[0].fingerprint)
        md = c.get_microdescriptor(os.environ["FP1"])
        break
    except stem.OperationFailed as e:  # not downloaded yet
        assert time.time() < deadline, str(e)
        time.sleep(2)
assert od.fingerprint == others[0].fingerprint and od.nickname == others[0].nickname, od
assert md.onion_key is None or md.ntor_onion_key, md
# Without AccountingMax, tor 0.4.9's answers (checked against tor itself).
for k, v in [("enabled", "0"), ("hibernating", "awake"), ("bytes", "0 0"),
             ("bytes-left", "0 0"), ("interval-start", "1970-01-01 00:00:00")]:
    assert c.get_info("accounting/" + k) == v, (k, c.get_info("accounting/" + k))
# NEWCONSENSUS (every entry) arrives with the next consensus (every 10 s)
nc = []
c.add_event_listener(lambda e: nc.append(e), stem.control.EventType.NEWCONSENSUS)
c.add_event_listener(lambda e: nc.append(e), stem.control.EventType.NS)
deadline = time.time() + 90
while not any(e.type == "NEWCONSENSUS" for e in nc):
    assert time.time() < deadline, "no NEWCONSENSUS in 90 s"
    time.sleep(0.5)
new_cons = [e for e in nc if e.type == "NEWCONSENSUS"][0]
assert os.environ["FP1"] in [r.fingerprint for r in new_cons.desc], str(new_cons)[:500]
print("GETINFO and GETCONF answered; desc/id, md/id, NEWCONSENSUS with %d relays" % len(new_cons.desc))
# SETCONF of a runtime option, proved by what it does: a new Log line
# starts a file with p1's info-level lines; CONF_CHANGED reports it.
changed = []
c.add_event_listener(lambda e: changed.append(e.changed), stem.control.EventType.CONF_CHANGED)
logs = c.get_conf("Log", multiple=True)
extra = os.environ["D1"] + "/setconf-info.log"
c.set_conf("Log", logs + ["info file " + extra])
assert c.get_conf("Log", multiple=True) == logs + ["info file " + extra]
c.get_info("version")
deadline = time.time() + 10
while not (os.path.exists(extra) and "[info]" in open(extra).read()):
    if time.time() > deadline:
        raise SystemExit("SETCONF Log did not start the new log file")
    time.sleep(0.2)
# restart-only options are refused, nothing changes
r = c.msg("SETCONF DataDirectory=/tmp/elsewhere")  # (stem refuses it itself)
assert str(r).startswith("Transition not allowed") and r.content()[0][0] == "553", str(r)
for k, v in (("ORPort", "1"), ("ControlPort", "1")):
    try:
        c.set_options([(k, v), ("ContactInfo", "not applied")])
        raise SystemExit("SETCONF %s accepted" % k)
    except stem.InvalidRequest as e:
        assert e.code == "553" and "Transition not allowed" in str(e) and k in str(e), str(e)
assert c.get_conf("ContactInfo", None) is None
# bad values and unknown options
for kv, exc, code in ((("BandwidthRate", "lots"), stem.InvalidRequest, "513"),
                      (("NoSuchOption", "1"), stem.InvalidArguments, "552")):
    try:
        c.set_options([kv])
        raise SystemExit("SETCONF %s=%s accepted" % kv)
    except exc as e:
        assert e.code == code, (e.code, str(e))
# RESETCONF puts the default back
c.set_conf("MaxCircuitDirtiness", "1 hour")
assert c.get_conf("MaxCircuitDirtiness") == "3600"
c.reset_conf("MaxCircuitDirtiness")
assert c.get_conf("MaxCircuitDirtiness") == "600"
time.sleep(0.5)
assert {"Log": logs + ["info file " + extra]} in changed, changed
assert {"MaxCircuitDirtiness": ["600"]} in changed, changed
# SAVECONF: the running configuration goes to the torrc (the original is
# kept as torrc.orig.1); LOADCONF of that text and SIGNAL RELOAD read it back.
torrc = os.environ["D1"] + "/torrc"
before = open(torrc).read()
status, newdesc = [], []
c.add_event_listener(lambda e: status.append(e), stem.control.EventType.STATUS_SERVER)
c.add_event_listener(lambda e: newdesc.append(e), stem.control.EventType.NEWDESC)
c.set_conf("ContactInfo", "saved by SETCONF <op@example>")
# a new descriptor goes to the authority: STATUS_SERVER says it took it
deadline = time.time() + 30
while not any(e.action == "ACCEPTED_SERVER_DESCRIPTOR" for e in status):
    assert time.time() < deadline, [str(e) for e in status]
    time.sleep(0.2)
acc = [e for e in status if e.action == "ACCEPTED_SERVER_DESCRIPTOR"][0]
assert acc.arguments["DIRAUTH"].startswith("127.0.0.1:"), str(acc)
c.save_conf()
saved = open(torrc).read()
assert saved.startswith("# This file was generated by pctor"), saved[:200]
assert open(torrc + ".orig.1").read() == before
assert "\nContactInfo saved by SETCONF <op@example>\n" in saved, saved
assert "\nLog info file %s\n" % extra in saved, saved
c.load_conf(saved.replace("saved by SETCONF", "loaded by LOADCONF"))
c.clear_cache()  # (stem's GETCONF cache would only follow CONF_CHANGED later)
assert c.get_conf("ContactInfo") == "loaded by LOADCONF <op@example>", c.get_conf("ContactInfo")
try:
    c.load_conf(re.sub(r"\nORPort [^\n]*", "\nORPort 1", saved))
    raise SystemExit("LOADCONF changed ORPort")
except stem.InvalidRequest as e:
    assert e.code == "553", str(e)
c.signal(stem.Signal.RELOAD)
time.sleep(1)
c.clear_cache()
assert c.get_conf("ContactInfo") == "saved by SETCONF <op@example>"
assert c.get_conf("Log", multiple=True) == logs + ["info file " + extra]
c.save_conf()
assert not os.path.exists(torrc + ".orig.2"), "SAVECONF renamed its own file"
# p1's new descriptor (new ContactInfo) comes back through the consensus:
# NEWDESC names p1 once p1's directory cache fetched it
deadline = time.time() + 90
while not any(os.environ["FP1"] in [fp for fp, nick in e.relays] for e in newdesc):
    assert time.time() < deadline, [str(e) for e in newdesc]
    time.sleep(0.5)
print("SETCONF/RESETCONF/LOADCONF/SAVECONF: runtime options applied, restart-only refused (553), torrc round trip")
EOF
it_log "GETINFO and GETCONF: expected values, 552 for unknown keys; SETCONF, RESETCONF, LOADCONF, SAVECONF work"

# 3. BW events and metrics during a download through p1.
hop() { echo "pctor:$(cat "$net/$1.dir")/data@127.0.0.1:$(cat "$net/$1.port")"; }
export FETCH="$CIRCTEST --timeout 120 --nodes $nodes --begin 127.0.0.1:$hport --get /file --out $net/dl.out relay1 $(hop p1) $(hop p3)"
"$PY" - <<'EOF' || it_fail "BW event / metrics checks failed"
import os, subprocess, time, urllib.request, stem
from stem.control import Controller, EventType
from prometheus_client.parser import text_string_to_metric_families
# promtool's lint complaints about names pctor keeps exactly as tor has
# them (dashboards made for tor relays query these names).
TOR_NAMES = {'tor_relay_circuits_total non-counter metrics should not have "_total" suffix',
             'tor_relay_traffic_bytes counter metrics should have "_total" suffix'}
LINT = []
def promtool(body):
    p = subprocess.run(["promtool", "check", "metrics"], input=body.encode(),
                       capture_output=True, timeout=30)
    out = (p.stdout + p.stderr).decode().strip()
    # 0: clean; 3: lint problems only; anything else (1): not parseable
    assert p.returncode in (0, 3), "promtool check metrics failed (%d): %s" % (p.returncode, out)
    lint = {l.strip() for l in out.splitlines() if l.strip()}
    assert lint <= TOR_NAMES, "promtool check metrics: %s" % "; ".join(sorted(lint - TOR_NAMES))
    return len(lint)
def metrics():
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % os.environ["MPORT"], timeout=10).read().decode()
    LINT.append(promtool(body))
    fams = {f.name: f for f in text_string_to_metric_families(body)}
    v = {s.labels["direction"]: s.value for s in fams["tor_relay_traffic_bytes"].samples}
    assert "tor_relay_connections" in fams and "pctor_pctcp_connections_opened" in fams, sorted(fams)
    # The memory budget by holder (the download's buffers and cells count)
    # and tor's DoS counters (issue 14).
    held = {s.labels["holder"]: s.value for s in fams["pctor_memory_budget_bytes"].samples}
    assert {"cells", "chan_buf", "exit_buf", "dircache"} <= set(held), held
    dos = {s.labels["type"] for s in fams["tor_relay_dos"].samples}
    assert {"circuit_rejected", "conn_rejected", "stream_rejected"} <= dos, dos
    # tor's flag gauge from the consensus (p1 carries this download, so
    # it is listed Running and Valid-ly), and the stream counters.
    flags = {s.labels["type"]: s.value for s in fams["tor_relay_flag"].samples}
    assert flags.get("Running") == 1 and set(flags) >= {"Fast", "Guard", "Exit", "Stable"}, flags
    streams = {s.labels["type"] for s in fams["tor_relay_streams"].samples}
    assert streams == {"BEGIN", "BEGIN_DIR", "RESOLVE"}, streams
    assert "pctor_measureme_requests" in fams, sorted(fams)
    ccx = {(s.labels["state"], s.labels["action"]) for s in fams["tor_relay_congestion_control"].samples}
    assert ("flow_control", "xoff_num_sent") in ccx and ("starvation", "rtt_reset") in ccx, ccx
    return v
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate(password="correct horse")
ev = []
c.add_event_listener(lambda e: ev.append((time.time(), e.read, e.written)), EventType.BW)
m0 = metrics()
r0 = int(c.get_info("traffic/read"))
p = subprocess.run(os.environ["FETCH"].split(), capture_output=True, timeout=150)
assert p.returncode == 0, p.stderr.decode()[-500:]
time.sleep(3.5)
r1 = int(c.get_info("traffic/read"))
m1 = metrics()
cache = [tuple(map(int, x.split(","))) for x in c.get_info("bw-event-cache").split()]
c.close()
assert len(cache) >= len(ev) and sum(r for r, w in cache) >= 2 * 1024 * 1024, cache
assert len(ev) >= 3, ev
gaps = [b[0] - a[0] for a, b in zip(ev, ev[1:])]
assert all(0.5 < g < 1.6 for g in gaps), gaps
moved = sum(e[1] for e in ev)
assert moved >= 2 * 1024 * 1024, (moved, ev)
assert max(e[1] for e in ev) > 100000 and max(e[2] for e in ev) > 100000, ev
assert r1 - r0 >= 2 * 1024 * 1024, (r0, r1)
assert m1["read"] - m0["read"] >= 2 * 1024 * 1024 and m1["written"] > m0["written"], (m0, m1)
print("%d BW events, %d bytes read in them; traffic/read +%d; metrics read +%d; "
      "promtool check metrics: parsed, %s lint lines (tor's names only)" %
      (len(ev), moved, r1 - r0, m1["read"] - m0["read"], LINT))
EOF
cmp -s "$net/dl.out" "$www/file" || it_fail "the download through p1 is corrupted"
# SETCONF BandwidthRate takes effect at once: the same download through p1
# now runs at most at 256 KBytes/s (BW events), then RESETCONF lifts it.
"$PY" - <<'EOF' || it_fail "SETCONF BandwidthRate checks failed"
import os, subprocess, time
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate(password="correct horse")
ev = []
c.add_event_listener(lambda e: ev.append(e.read), EventType.BW)
c.set_options({"BandwidthRate": "256 KBytes", "BandwidthBurst": "256 KBytes"})
t0 = time.time()
p = subprocess.run(os.environ["FETCH"].split(), capture_output=True, timeout=150)
took = time.time() - t0
assert p.returncode == 0, p.stderr.decode()[-500:]
slow = list(ev)
c.reset_conf("BandwidthRate", "BandwidthBurst")
assert c.get_conf("BandwidthRate") == str(1 << 30), c.get_conf("BandwidthRate")
assert took >= 6, took
busy = sorted(x for x in slow if x > 10000)
assert busy and busy[len(busy) // 2] <= 1.25 * 256 * 1024, slow  # (the first second may spend the burst)
del ev[:]
t0 = time.time()
p = subprocess.run(os.environ["FETCH"].split(), capture_output=True, timeout=150)
fast = time.time() - t0
assert p.returncode == 0 and fast < took / 2, (fast, took)
print("BandwidthRate 256 KBytes by SETCONF: 2 MiB in %.1f s (BW median %d B/s); after RESETCONF %.1f s" %
      (took, busy[len(busy) // 2], fast))
EOF
cmp -s "$net/dl.out" "$www/file" || it_fail "the download through p1 is corrupted"
it_log "SETCONF BandwidthRate slows p1 at once, RESETCONF lifts it"
code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.2 "http://127.0.0.1:$mport/metrics")
[ "$code" = 000 ] || it_fail "MetricsPortPolicy let 127.0.0.2 in (HTTP $code)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/other")
[ "$code" = 404 ] || it_fail "MetricsPort answered /other with $code"
it_log "BW events and the MetricsPort follow a 2 MiB download through p1; the policy refuses 127.0.0.2"

# 3a. nyx (scripts/install-deps installs it) renders p1: its header names p1 and its
# fingerprint, the bandwidth panel has a graph of the download (nyx fills
# it from bw-event-cache), the log panel shows pctor's lines.
command -v nyx > /dev/null 2>&1 ||
    it_fail "nyx is not installed (scripts/install-deps installs it)"
{
    export NYXHOME=$(it_tmpdir)
    "$PY" - <<'EOF2' || it_fail "nyx did not render p1"
import os, pty, re, select, struct, fcntl, termios, time, signal
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="xterm", HOME=os.environ["NYXHOME"])
    os.execvp("nyx", ["nyx", "-i", "127.0.0.1:" + os.environ["CPORT"],
                      "-c", os.environ["NYXHOME"] + "/nyxrc"])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 150, 0, 0))
out, end = b"", time.time() + 8
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
        if b"assword" in out[-200:]:
            os.write(fd, b"battery staple\r")
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]", " ", out.decode("utf-8", "replace"))
fp = os.environ["FP1"]
checks = {"nickname": re.search(r"\bp1 - 127\.0\.0\.1", text),
          "fingerprint": fp in text.replace(" ", ""),
          # the 2 MiB download, from bw-event-cache: "Download (... total: 2.2 MB)"
          "bandwidth": any(float(m) >= 2.0 for m in re.findall(r"total: ([0-9.]+) MB", text)),
          # the log panel lists pctor's events ("21:43:08 [NOTICE] ..."); which
          # ones depends on how many came since start-up
          "log panel": re.search(r"\d\d:\d\d:\d\d \[(NOTICE|INFO|WARN)\] \w", text)}
missing = [k for k, v in checks.items() if not v]
if missing:
    print(text[-3000:])
    raise SystemExit("nyx screen lacks: " + ", ".join(missing))
print("nyx shows p1, its fingerprint, a bandwidth graph and the log panel")
EOF2
    it_log "nyx renders p1's header, bandwidth graph and log panel"
}

# 3b. A pctor client: CIRC and ORCONN events, circuit-status.
read -r _ ccport _ _ < <(it_privnet reserve "$net" --role aux --nickname c1ports)
it_start_pctor "$net" c1 client "ControlPort $ccport
CookieAuthentication 1
ExitNodes p3"
export CCPORT=$ccport SOCKS=$(cat "$net/c1.port") HPORT=$hport
"$PY" - <<'EOF2' || it_fail "CIRC/ORCONN/CIRC_BW event checks failed"
import datetime, os, subprocess, time, stem
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CCPORT"]))
c.authenticate()
circ, orconn, streams = [], [], []
c.add_event_listener(lambda e: circ.append(e), EventType.CIRC)
c.add_event_listener(lambda e: streams.append(e), EventType.STREAM)
c.add_event_listener(lambda e: orconn.append(e), EventType.ORCONN)
cbw = []
c.add_event_listener(lambda e: cbw.append((time.time(), e)), EventType.CIRC_BW)
url = "http://127.0.0.1:%s/file" % os.environ["HPORT"]
deadline = time.time() + 120
while True:
    p = subprocess.run(["curl", "-sf", "--max-time", "60", "-x",
                        "socks5h://127.0.0.1:" + os.environ["SOCKS"], url, "-o", "/dev/null"])
    if p.returncode == 0:
        break
    if time.time() > deadline:
        raise SystemExit("the client never carried a request; its view of p3: %s"
                         % c.get_info("ns/name/p3", "none"))
    time.sleep(2)
time.sleep(1)
built = [e for e in circ if e.status == "BUILT" and len(e.path) == 3]
assert built, [str(e) for e in circ]
ids = {e.id for e in built}
assert any(e.status == "LAUNCHED" and e.id in ids for e in circ), [str(e) for e in circ]
assert any(e.status == "EXTENDED" and e.id in ids for e in circ), [str(e) for e in circ]
b = built[0]
assert len(b.path) == 3 and all(len(fp) == 40 for fp, nick in b.path), b.path
assert b.path[2][1] == "p3", b.path
listed = {x.id: x for x in c.get_circuits()}
assert any(i in listed and listed[i].status == "BUILT" for i in ids), (ids, list(listed))
tunnels = [e for e in circ if e.status == "BUILT" and len(e.path) == 1]
assert all("ONEHOP_TUNNEL" in e.build_flags for e in tunnels), [str(e) for e in tunnels]
assert any(e.status == "CONNECTED" for e in orconn), [str(e) for e in orconn]
target = "127.0.0.1:" + os.environ["HPORT"]
ok = [e for e in streams if e.status == "SUCCEEDED" and e.target == target]
assert ok, [str(e) for e in streams]
sid = ok[-1].id
seq = [e.status for e in streams if e.id == sid]
assert seq == ["NEW", "SENTCONNECT", "SUCCEEDED", "CLOSED"], seq
assert ok[-1].circ_id in listed or ok[-1].circ_id in {e.id for e in circ}, ok[-1]
assert any(e.source_address for e in streams if e.status == "NEW"), [str(e) for e in streams]
c.get_streams()  # stream-status parses
# CIRC_BW on the stream's circuit: the 2 MiB arrived as DELIVERED_READ,
# tor's accounting holds (509 per cell, 498 of body), once a second, and
# pctor's fields carry the circuit's queue and its connection's TCP_INFO.
# (With conflux the data may come over several legs: count them all.)
time.sleep(2.5)
mine = [(t, e) for t, e in cbw if e.id == ok[-1].circ_id]
assert len(mine) >= 1, [str(e) for t, e in cbw]
got = sum(e.delivered_read for t, e in cbw)
assert got >= 2 * 1024 * 1024, (got, [str(e) for t, e in cbw])
for t, e in cbw:
    assert e.read % 509 == 0 and e.written % 509 == 0, str(e)
    assert e.delivered_read + e.overhead_read == e.read // 509 * 498, str(e)
    assert e.delivered_written + e.overhead_written == e.written // 509 * 498, str(e)
    assert abs((e.time - datetime.datetime.utcfromtimestamp(t)).total_seconds()) < 2, (e.time, t)
    kw = e.keyword_args
    assert "PCTOR_QUEUE_FWD" in kw and "PCTOR_DELAY_US_FWD" in kw, str(e)
    if "PCTOR_TCP_RTT_US_FWD" in kw:  # (not in a closing circuit's last one)
        assert int(kw["PCTOR_TCP_RTT_US_FWD"]) > 0 and int(kw["PCTOR_TCP_CWND_FWD"]) > 0, str(e)
    if "CWND" in kw:
        assert int(kw["CWND"]) > 0 and int(kw["RTT"]) >= int(kw["MIN_RTT"]) >= 0, str(e)
assert any("PCTOR_TCP_RTT_US_FWD" in e.keyword_args for t, e in mine), [str(e) for t, e in mine]
times = [t for t, e in cbw]
assert all(b - a > 0.5 for a, b in zip(times, times[1:]) if b - a > 0.01), times
print("CIRC_BW: %d events (%d on circuit %s), %d bytes delivered; e.g. %s" %
      (len(cbw), len(mine), ok[-1].circ_id, got, str(mine[0][1])[:300]))
print("CIRC events:", " ".join("%s:%s" % (e.id, e.status) for e in circ[:8]), "...;",
      len(orconn), "ORCONN events; circuit-status lists", len(listed),
      "; stream %s: %s on circuit %s" % (sid, " ".join(seq), ok[-1].circ_id))
EOF2
it_log "a pctor client reports CIRC, STREAM, ORCONN and CIRC_BW events and lists its circuits"

# 3c. Circuits pinned by the controller: EXTENDCIRCUIT over p2,p1,p3 and
# over p2,relay1,p3; with __LeaveStreamsUnattached each SOCKS stream is
# attached to one of them by ATTACHSTREAM. p1's own byte counters prove
# which path the 2 MiB took; CLOSESTREAM and CLOSECIRCUIT end them.
export FP2=$(awk '{print $2}' "$d2/data/fingerprint") FP3=$(awk '{print $2}' "$(cat "$net/p3.dir")/data/fingerprint")
"$PY" - <<'EOF2' || it_fail "EXTENDCIRCUIT/ATTACHSTREAM checks failed"
import os, subprocess, threading, time, stem
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CCPORT"]))
c.authenticate()
p1 = Controller.from_port(port=int(os.environ["CPORT"]))
p1.authenticate(password="correct horse")
p2 = Controller.from_socket_file(os.environ["SOCK"])
p2.authenticate()
c.set_conf("__LeaveStreamsUnattached", "1")
# MeasureMe switched on at run time: p1 measures what c1's new circuits
# ask of their second hop, and reports it in CIRC_BW with PCTOR_RELAYED=1.
p1.set_conf("MeasureMeEnabled", "1")
c.set_conf("MeasureMeHops", "2")
relayed = []
p1.add_event_listener(lambda e: relayed.append(e), EventType.CIRC_BW)
fp1, fp2, fp3 = os.environ["FP1"], os.environ["FP2"], os.environ["FP3"]
via_p1 = c.new_circuit(["$" + fp2, fp1, "$%s~p3" % fp3], await_build=True, timeout=60)
via_relay1 = c.new_circuit([fp2, "relay1", fp3], await_build=True, timeout=60)
circs = {x.id: x for x in c.get_circuits()}
assert [fp for fp, nick in circs[via_p1].path] == [fp2, fp1, fp3], circs[via_p1].path
assert circs[via_relay1].path[1][1] == "relay1", circs[via_relay1].path
new = []
def on_stream(e):
    if e.status == "NEW":
        new.append(e)
c.add_event_listener(on_stream, EventType.STREAM)
streams = []
c.add_event_listener(lambda e: streams.append(e), EventType.STREAM)
url = "http://127.0.0.1:%s/file" % os.environ["HPORT"]
def start_held():
    """curl through c1; returns it and its held stream's NEW event."""
    n0 = len(new)
    p = subprocess.Popen(["curl", "-sf", "--max-time", "60", "-x",
                          "socks5h://127.0.0.1:" + os.environ["SOCKS"], url, "-o", "/dev/null"])
    deadline = time.time() + 20
    while len(new) == n0:
        assert time.time() < deadline, "no STREAM NEW for the held stream"
        time.sleep(0.05)
    return p, new[-1]
def fetch(circ_id):
    p, e = start_held()
    assert e.circ_id is None, str(e)  # held: not on a circuit
    time.sleep(0.5)
    assert p.poll() is None, "the held stream did not wait for ATTACHSTREAM"
    c.attach_stream(e.id, circ_id)
    assert p.wait(timeout=90) == 0, "the download on circuit %s failed" % circ_id
    return e.id
def read(ctl):
    return int(ctl.get_info("traffic/read"))
r1, r2 = read(p1), read(p2)
sid = fetch(via_p1)
d1, d2 = read(p1) - r1, read(p2) - r2
assert d1 >= 2 * 1024 * 1024 and d2 >= 2 * 1024 * 1024, (d1, d2)
ok = [e for e in streams if e.id == sid and e.status == "SUCCEEDED"]
assert ok and ok[0].circ_id == via_p1, [str(e) for e in streams if e.id == sid]
time.sleep(1.5)
mm = [e for e in relayed if e.keyword_args.get("PCTOR_RELAYED") == "1"]
cells = sum(e.read for e in mm)
# (READ counts the cells p1 received from either side: the 2 MiB, once)
assert cells >= 2 * 1024 * 1024, (cells, [str(e) for e in relayed][:5])
assert abs(sum(e.written for e in mm) - cells) < 20 * 509, [str(e) for e in mm]
assert all("PCTOR_QUEUE_BWD" in e.keyword_args and "PCTOR_TCP_RTT_US_BWD" in e.keyword_args
           for e in mm if e.read > 100000), [str(e) for e in mm]
print("p1 (MeasureMe via SETCONF): %d CIRC_BW events for the measured circuit, %d bytes of cells; %s" %
      (len(mm), cells, str(mm[0])[:200]))
p1.set_conf("MeasureMeEnabled", "0")
c.set_conf("MeasureMeHops", "")
r1, r2 = read(p1), read(p2)
fetch(via_relay1)
d1b, d2b = read(p1) - r1, read(p2) - r2
assert d2b >= 2 * 1024 * 1024 and d1b < 512 * 1024, (d1b, d2b)
print("pinned paths: via p1 p1 read +%d, p2 +%d; via relay1 p1 read +%d, p2 +%d" % (d1, d2, d1b, d2b))
# errors: unknown stream and circuit, a stream that is not held
for args, exc in (((9999, via_p1), stem.InvalidRequest), ((sid, 9999), stem.InvalidRequest)):
    try:
        c.attach_stream(*args)
        raise SystemExit("ATTACHSTREAM %s %s accepted" % args)
    except exc:
        pass
try:
    c.extend_circuit("0", ["$" + "0" * 40])
    raise SystemExit("EXTENDCIRCUIT through an unknown relay accepted")
except stem.InvalidRequest as e:
    assert "No such router" in str(e), str(e)
# CLOSESTREAM: a held stream's curl fails
p, e = start_held()
c.close_stream(e.id)
assert p.wait(timeout=10) != 0, "curl succeeded on a closed stream"
time.sleep(0.3)
assert [x.status for x in streams if x.id == e.id][-1] == "FAILED", [str(x) for x in streams if x.id == e.id]
# CLOSECIRCUIT
closed = []
c.add_event_listener(lambda e: closed.append(e.id) if e.status == "CLOSED" else None, EventType.CIRC)
c.close_circuit(via_p1)
c.close_circuit(via_relay1)
time.sleep(0.5)
assert via_p1 in closed and via_relay1 in closed, closed
assert via_p1 not in {x.id for x in c.get_circuits()}
try:
    c.close_circuit(via_p1)
    raise SystemExit("CLOSECIRCUIT of a closed circuit accepted")
except stem.InvalidArguments:
    pass
c.set_conf("__LeaveStreamsUnattached", "0")
p = subprocess.run(["curl", "-sf", "--max-time", "60", "-x",
                    "socks5h://127.0.0.1:" + os.environ["SOCKS"], url, "-o", "/dev/null"])
assert p.returncode == 0, "streams are still held after __LeaveStreamsUnattached 0"
print("ATTACHSTREAM/CLOSESTREAM/CLOSECIRCUIT: errors refused, streams and circuits ended")
EOF2
it_log "EXTENDCIRCUIT pins paths (p1's own counters show which one carried 2 MiB); ATTACHSTREAM, CLOSESTREAM, CLOSECIRCUIT"

# 4. SIGNAL RELOAD with a new password in the torrc.
new_hash=$(tor --hash-password "battery staple" | tail -1)
sed -i "s|^HashedControlPassword .*|HashedControlPassword $new_hash|" "$d1/torrc"
"$PY" - <<'EOF' || it_fail "SIGNAL RELOAD checks failed"
import os, time, stem, stem.connection, stem.socket
from stem.control import Controller
port = int(os.environ["CPORT"])
c = Controller.from_port(port=port)
c.authenticate(password="correct horse")
notices = []
c.add_event_listener(lambda e: notices.append(e.message), stem.control.EventType.NOTICE)
c.signal(stem.Signal.HEARTBEAT)
time.sleep(0.5)
assert any(m.startswith("Statistics:") for m in notices), notices
c.signal(stem.Signal.RELOAD)
time.sleep(0.5)
assert any("Configuration reloaded" in m for m in notices), notices
try:
    c.signal("NOSUCHSIGNAL")
    raise SystemExit("unknown signal accepted")
except stem.InvalidArguments:
    pass
c.close()
time.sleep(1)
s = stem.socket.ControlPort(port=port)
try:
    stem.connection.authenticate_password(s, "correct horse")
    raise SystemExit("the old password still works after RELOAD")
except stem.connection.IncorrectPassword:
    pass
s = stem.socket.ControlPort(port=port)
stem.connection.authenticate_password(s, "battery staple")
s.close()
print("HEARTBEAT and RELOAD logged as NOTICE events; RELOAD applied the new password")
EOF
grep -q "Configuration reloaded" "$d1/info.log" || it_fail "p1 did not log the reload"
it_log "SIGNAL RELOAD: the new HashedControlPassword is in force"

# 5. Bad input.
"$PY" - <<'EOF' || it_fail "bad-input checks failed"
import os, socket, time
port = int(os.environ["CPORT"])
def closed(s, timeout=20):
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
# an endless line
s = socket.create_connection(("127.0.0.1", port))
try:
    s.sendall(b"GETINFO " + b"x" * 200000)
except (ConnectionResetError, BrokenPipeError):
    pass
assert closed(s), "a 200 KB line did not close the connection"
s.close()
# a controller that floods commands and never reads
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b'AUTHENTICATE "battery staple"\r\n')
t = time.time()
cut = False
try:
    for i in range(40000):
        s.sendall(b"GETINFO info/names events/names\r\n")
except (ConnectionResetError, BrokenPipeError):
    cut = True
if not cut:
    time.sleep(2)
    s.setblocking(False)
    try:
        s.sendall(b"GETINFO version\r\n" * 1000)
        s.recv(1)
    except (ConnectionResetError, BrokenPipeError):
        cut = True
    except BlockingIOError:
        pass
s.close()
assert cut, "a controller that never reads was not disconnected"
print("endless line and unread flood: disconnected")
# one GETINFO asking for too much at once
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b'AUTHENTICATE "battery staple"\r\nGETINFO ' + b"info/names " * 5000 + b"\r\n")
s.settimeout(10)
got = b""
while got.count(b"\r\n") < 2:
    d = s.recv(4096)
    assert d, got
    got += d
lines = got.split(b"\r\n")
assert lines[0] == b"250 OK" and lines[1].startswith(b"551 Reply too large"), got[:200]
s.close()
print("a 7 MB GETINFO answer: 551 Reply too large")
# SAFECOOKIE with a wrong controller hash (stem would not send one)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"AUTHCHALLENGE SAFECOOKIE " + os.urandom(32).hex().encode() + b"\r\n")
s.settimeout(10)
got = b""
while b"\r\n" not in got:
    got += s.recv(4096)
assert got.startswith(b"250 AUTHCHALLENGE SERVERHASH="), got
s.sendall(b"AUTHENTICATE " + os.urandom(32).hex().encode() + b"\r\n")
got = b""
while b"\r\n" not in got:
    d = s.recv(4096)
    assert d, "closed without a reply"
    got += d
assert got.startswith(b"515 Authentication failed"), got
assert closed(s), "still open after a failed SAFECOOKIE"
s.close()
print("SAFECOOKIE with a wrong hash: 515 and closed")
EOF
grep -q "does not read its replies and events" "$d1/info.log" || it_fail "p1 did not log why it closed the flooding controller"
"$PY" - <<'EOF' || it_fail "p1 does not answer after the bad input"
import os
from stem.control import Controller
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate(password="battery staple")
assert c.get_info("version").startswith("0.4.9.11")
EOF
it_log "bad input: an endless line and an unread flood are disconnected; p1 still answers"

# 6. Owners.
kill "$owner"
it_wait_until 10 bash -c "! kill -0 $(cat "$d2/pid") 2> /dev/null" || it_fail "p2 outlived its owning process"
grep -q "Owning controller process $owner vanished" "$d2/info.log" || it_fail "p2 did not say why it exited"
[ ! -e "$sockdir/control" ] || it_fail "p2 left its control socket behind"
"$PY" - <<'EOF' || it_fail "TAKEOWNERSHIP failed"
import os
from stem.control import Controller
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate(password="battery staple")
r = c.msg("TAKEOWNERSHIP")
assert r.is_ok(), str(r)
c.close()
EOF
it_wait_until 10 bash -c "! kill -0 $PID1 2> /dev/null" || it_fail "p1 did not exit when its owning controller left"
grep -q "Owning controller connection has closed" "$d1/info.log" || it_fail "p1 did not say why it exited"
it_log "owners: p2 exits with its owning process, p1 with its owning connection"

if grep -E '\[(warn|err)\]' "$d1/info.log" "$d2/info.log"; then it_fail "p1 or p2 logged warnings"; fi
it_pctor_alive_quiet "$net" p3 c1
it_log "ControlPort and MetricsPort checks passed"
