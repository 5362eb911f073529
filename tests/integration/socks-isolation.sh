#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# socks-isolation.sh -- SocksPort auto, several SocksPort lines and stream
# isolation, seen by a controller (stem) in a private network.
#
# Private network: 1 tor authority, 3 tor relays, a pctor exit x (to
# 127.0.0.1), two web servers (ports h1, h2) and a pctor client c with a
# ControlPort, ExitNodes x and four SocksPort lines: p1 (a fixed port,
# default flags), p2 (auto IsolateDestPort SessionGroup=9), p3 (auto
# NoIsolateSOCKSAuth NoDNSRequest) and p4 (auto SessionGroup=9). Checks:
#   - GETINFO net/listeners/socks lists the four bound ports in order, the
#     auto ones the kernel's (not 0, all different), and c's log says
#     "Opened SocksPort on 127.0.0.1:PORT (auto)" for each;
#   - downloads through p1 with SOCKS username alice twice share one
#     circuit (the STREAM events' SUCCEEDED circuit); bob's download and
#     one without credentials each take another circuit
#     (IsolateSOCKSAuth); alice through p2 takes another one still
#     (streams of different SocksPort lines never share); alice and bob
#     through p3 share one (NoIsolateSOCKSAuth); GETINFO circuit-status
#     lists these circuits BUILT;
#   - SessionGroup=9: alice through p2 and through p4 to h1 share a
#     circuit; alice through p2 to h2 takes another (IsolateDestPort);
#   - p3 refuses a host name (NoDNSRequest): SOCKS5 error 2, a notice in
#     c's log; an IP address through it works;
#   - KeepAliveIsolateSOCKSAuth, on a second client c2 with
#     MaxCircuitDirtiness 10 and a second line "auto
#     KeepAliveIsolateSOCKSAuth": three downloads 6 s apart as carol through
#     c2's first line take a new circuit for the third (dirty for 12 s);
#     through the keep-alive line all three share one (each stream with
#     credentials renews it).
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=$(it_python3_with stem) || it_fail "python3-stem is not installed (scripts/install-deps installs it)"

it_net_start --authorities 1 --relays 3 --exit-relays 0
it_web_file 1
read -r _ hport2 _ _ < <(it_privnet reserve "$net" --role web --nickname web2)
it_http_server "$www" "$hport2"

read -r _ cport _ _ < <(it_privnet reserve "$net" --role aux --nickname cports)
it_start_pctor "$net" x relay "ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_start_pctor "$net" c client "ControlPort $cport
ExitNodes x
SocksPort auto IsolateDestPort SessionGroup=9
SocksPort auto NoIsolateSOCKSAuth NoDNSRequest
SocksPort auto SessionGroup=9"
read -r _ c2port _ _ < <(it_privnet reserve "$net" --role aux --nickname c2ports)
it_start_pctor "$net" c2 client "ControlPort $c2port
ExitNodes x
MaxCircuitDirtiness 10
SocksPort auto KeepAliveIsolateSOCKSAuth"
export C2PORT=$c2port C2P1=$(cat "$net/c2.port")
export CPORT=$cport HPORT=$hport HPORT2=$hport2 P1=$(cat "$net/c.port") WANT=$want \
    LOGC=$(cat "$net/c.dir")/info.log LOGC2=$(cat "$net/c2.dir")/info.log

"$PY" - <<'EOF' || it_fail "SocksPort isolation checks failed"
import hashlib, os, re, subprocess, time
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
hport, want, p1 = os.environ["HPORT"], os.environ["WANT"], os.environ["P1"]

# 1. The listeners: the fixed port, then the two auto ones.
listeners = re.findall(r'"127\.0\.0\.1:(\d+)"', c.get_info("net/listeners/socks"))
assert len(listeners) == 4 and listeners[0] == p1, listeners
p2, p3, p4 = listeners[1:]
assert "0" not in (p2, p3, p4) and len(set(listeners)) == 4, listeners
log = open(os.environ["LOGC"]).read()
for p in (p2, p3, p4):
    assert "Opened SocksPort on 127.0.0.1:%s (auto)" % p in log, "no log line for port %s" % p
print("SocksPort lines bound to %s, then %s, %s, %s (auto)" % (p1, p2, p3, p4))

def fetch(port, user=None, host="127.0.0.1", scheme="socks5h", timeout=60,
          web=hport):
    cred = "%s:secret@" % user if user else ""
    p = subprocess.run(["curl", "-sS", "--max-time", str(timeout), "-x",
                        "%s://%s127.0.0.1:%s" % (scheme, cred, port),
                        "http://%s:%s/file" % (host, web)], capture_output=True)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace")
    return hashlib.sha256(p.stdout).hexdigest(), ""

# The client needs a consensus with x and its descriptor first.
deadline = time.time() + 180
while fetch(p1, timeout=20)[0] != want:
    assert time.time() < deadline, "no download through c at all"
    time.sleep(3)

streams = []
c.add_event_listener(lambda e: streams.append(e), EventType.STREAM)
def circ_of(port, user=None, scheme="socks5h", web=hport):
    """Download through port as user; the circuit its stream used."""
    n = len(streams)
    got, err = fetch(port, user, scheme=scheme, web=web)
    if got is None and "(4)" in err:
        # "Host unreachable": the client found no path (seen once in CI
        # right after a new consensus, when the client still failed such
        # a stream at once; it now holds it up to SocksTimeout, as tor).
        # One retry, said out loud.
        print("download through %s as %s: %s; retrying once" % (port, user, err.strip()))
        time.sleep(3)
        n = len(streams)
        got, err = fetch(port, user, scheme=scheme, web=web)
    if got != want:
        why = [l.strip() for f in (os.environ["LOGC"], os.environ["LOGC2"])
               for l in open(f) if "SOCKS request" in l or "No path" in l]
        raise AssertionError("download through %s as %s failed: %s; the clients' last words: %s"
                             % (port, user, err, why[-4:]))
    deadline = time.time() + 5
    while True:
        ok = [e for e in streams[n:] if e.status == "SUCCEEDED"]
        if ok:
            return ok[-1].circ_id
        assert time.time() < deadline, [str(e) for e in streams[n:]]
        time.sleep(0.1)

# 2. IsolateSOCKSAuth (default): same username shares, others do not.
a1 = circ_of(p1, "alice")
a2 = circ_of(p1, "alice")
assert a1 == a2, "alice's two downloads used circuits %s and %s" % (a1, a2)
b = circ_of(p1, "bob")
assert b != a1, "bob's download used alice's circuit %s" % a1
n = circ_of(p1)
assert n not in (a1, b), "a download without credentials used circuit %s (alice %s, bob %s)" % (n, a1, b)
print("p1: alice %s twice, bob %s, no credentials %s" % (a1, b, n))

# 3. Another SocksPort line (its own session group): another circuit.
a_p2 = circ_of(p2, "alice")
assert a_p2 not in (a1, b, n), "alice through p2 used circuit %s of p1" % a_p2
print("p2: alice %s" % a_p2)

# 4. NoIsolateSOCKSAuth: alice and bob share (socks5: no names).
a_p3 = circ_of(p3, "alice", scheme="socks5")
b_p3 = circ_of(p3, "bob", scheme="socks5")
assert a_p3 == b_p3, "alice and bob through p3 used %s and %s" % (a_p3, b_p3)
assert a_p3 not in (a1, b, n, a_p2), "p3 used a circuit of another line: %s" % a_p3
print("p3 (NoIsolateSOCKSAuth): alice and bob on %s" % a_p3)

# 5. One SessionGroup for p2 and p4; p2 isolates on the destination port.
a_p4 = circ_of(p4, "alice")
assert a_p4 == a_p2, "alice through p4 (SessionGroup=9 as p2) used %s, through p2 %s" % (a_p4, a_p2)
a_p2_h2 = circ_of(p2, "alice", web=os.environ["HPORT2"])
assert a_p2_h2 != a_p2, "alice through p2 (IsolateDestPort) to another port used %s again" % a_p2
print("SessionGroup=9: p2 and p4 share %s; IsolateDestPort: the other port took %s" % (a_p2, a_p2_h2))

status = c.get_info("circuit-status").splitlines()
for circ in (a1, b, n, a_p2, a_p3, a_p2_h2):
    assert any(l.startswith("%s BUILT " % circ) for l in status), (circ, status)

# 6. NoDNSRequest: a host name through p3 is refused.
got, err = fetch(p3, host="web.example", timeout=30)
assert got is None and "(2)" in err, "a host name through p3: %s %s" % (got, err)
deadline = time.time() + 5
while "a name lookup on a port with NoDNSRequest" not in open(os.environ["LOGC"]).read():
    assert time.time() < deadline, "c did not log the NoDNSRequest refusal"
    time.sleep(0.2)
print("p3 (NoDNSRequest): a host name refused with SOCKS5 error 2")
c.close()

# 7. KeepAliveIsolateSOCKSAuth on c2 (MaxCircuitDirtiness 10).
c = Controller.from_port(port=int(os.environ["C2PORT"]))
c.authenticate()
q1 = os.environ["C2P1"]
q2 = re.findall(r'"127\.0\.0\.1:(\d+)"', c.get_info("net/listeners/socks"))[1]
deadline = time.time() + 180
while fetch(q1, timeout=20)[0] != want:
    assert time.time() < deadline, "no download through c2 at all"
    time.sleep(3)
streams = []
c.add_event_listener(lambda e: streams.append(e), EventType.STREAM)
def three(port, user):
    circs = []
    for i in range(3):
        if i:
            time.sleep(5.5)
        circs.append(circ_of(port, user))
    return circs
plain = three(q1, "carol")
assert plain[0] == plain[1] and plain[2] != plain[0], \
    "without keep-alive, carol's circuits were %s (want the third new)" % plain
kept = three(q2, "dave")
assert kept[0] == kept[1] == kept[2], \
    "with KeepAliveIsolateSOCKSAuth, dave's circuits were %s" % kept
print("MaxCircuitDirtiness 10: carol %s; dave (KeepAliveIsolateSOCKSAuth) %s" % (plain, kept))
c.close()
EOF

it_pctor_alive_quiet "$net" x c c2
it_log "SocksPort isolation checks passed"
