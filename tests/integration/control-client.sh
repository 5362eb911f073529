#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# control-client.sh -- a controller (stem) uses the client commands
# MAPADDRESS, SIGNAL NEWNYM, DROPTIMEOUTS and RESOLVE (control-spec 3.8,
# 3.7, 3.34, 3.21) on a pctor client, and tor-resolve its SOCKS RESOLVE,
# in a private network.
#
# Private network: 1 tor authority, 3 tor relays, a pctor exit x (to
# 127.0.0.1), a pctor client c with a ControlPort and ExitNodes x, a pctor
# relay r with a ControlPort but no SocksPort, and a pctor client c2 with
# a ControlPort and ConfluxEnabled 1 (legs through the four non-exits).
# Checks:
#   - MAPADDRESS web.example=127.0.0.1: reply and ADDRMAP event, listed by
#     GETINFO address-mappings/control; a download to web.example through
#     c's SocksPort arrives whole (sha256) and x logs its exit stream to
#     127.0.0.1; removing the mapping (web.example=web.example) unlists it
#     and the same download fails;
#   - MAPADDRESS 0.0.0.0=127.0.0.1 and .=127.0.0.1 give an address in
#     127.192.0.0/10 and a ".virtual" name; downloads to both work, and the
#     same target again gives the same virtual address;
#   - bad input: an invalid address, a missing "=", no argument (512, and
#     the good mapping in the same command still made); on r: 551;
#   - SIGNAL NEWNYM: the next download uses another circuit than the one
#     before, the old circuit closes; a second NEWNYM at once is delayed
#     (c logs "Rate limiting NEWNYM request");
#   - DROPTIMEOUTS: 250 and a BUILDTIMEOUT_SET RESET event with
#     TOTAL_TIMES=0 and the initial 60 s timeout, as stem parses it;
#   - lookups through the exit (x asks a DNS stub of ours on 127.0.0.1
#     that knows dns.example and 192.0.2.7's PTR): RESOLVE dns.example,
#     RESOLVE mode=reverse 192.0.2.7, a name the stub does not know, an IP
#     literal and a reverse lookup of 127.0.0.1 (refused by the exit, an
#     internal address, as tor) each give their ADDRMAP event (answer or
#     <error>), with
#     STREAM NEWRESOLVE/SENTRESOLVE PURPOSE=DNS_REQUEST; tor-resolve (tor's
#     SOCKS RESOLVE and RESOLVE_PTR) through c's SocksPort gets the same
#     answers, and the stub saw the questions;
#   - EXTENDCIRCUIT 0 without a path builds a three-hop circuit ending at
#     x (ExitNodes);
#   - conflux legs (c2): CIRC_MINOR PURPOSE_CHANGED from CONFLUX_UNLINKED
#     to CONFLUX_LINKED for two circuits with the same CONFLUX_ID, and
#     circuit-status lists them with PURPOSE=CONFLUX_LINKED.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=$(it_python3_with stem) || it_fail "python3-stem is not installed (scripts/install-deps installs it)"

it_net_start --authorities 1 --relays 3 --exit-relays 0
it_web_file 1

# A DNS stub for x: dns.example A 127.0.0.1, 192.0.2.7 PTR doc.example,
# every other name NXDOMAIN; it logs each question. (No traffic goes to
# 192.0.2.7: only its name is asked for.)
dns=$(it_tmpdir)
/usr/bin/python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
open(sys.argv[1] + "/port", "w").write(str(s.getsockname()[1]))
log = open(sys.argv[1] + "/questions", "a")
def name(n):
    return b"".join(bytes([len(l)]) + l for l in n.encode().split(b".")) + b"\0"
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 17:
        continue
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace")); i += 1 + q[i]
    qname, (qtype,) = ".".join(labels).lower(), struct.unpack(">H", q[i + 1:i + 3])
    log.write("%s %d\n" % (qname, qtype)); log.flush()
    question = q[12:i + 5]
    rr = b""
    if qname == "dns.example" and qtype == 1:
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
    elif qname == "7.2.0.192.in-addr.arpa" and qtype == 12:
        d = name("doc.example")
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 12, 1, 60, len(d)) + d
    known = qname in ("dns.example", "7.2.0.192.in-addr.arpa")
    flags = 0x8180 if known else 0x8183
    s.sendto(q[:2] + struct.pack(">HHHHH", flags, 1, 1 if rr else 0, 0, 0) + question + rr, peer)
' "$dns" &
it_register_pid $!
it_wait_until 10 test -s "$dns/port" || it_fail "the DNS stub did not start"
echo "nameserver 127.0.0.1:$(cat "$dns/port")" > "$dns/resolv.conf"

read -r _ cport rport xmport < <(it_privnet reserve "$net" --role aux --nickname cports)
it_start_pctor "$net" x relay "MetricsPort 127.0.0.1:$xmport
MetricsPortPolicy accept 127.0.0.1
ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $dns/resolv.conf"
it_start_pctor "$net" r relay "ControlPort $rport"
it_start_pctor "$net" c client "ControlPort $cport
ExitNodes x"
read -r _ c2port _ _ < <(it_privnet reserve "$net" --role aux --nickname c2ports)
it_start_pctor "$net" c2 client "ControlPort $c2port
ExitNodes x
ConfluxEnabled 1"
export CPORT=$cport RPORT=$rport HPORT=$hport SOCKS=$(cat "$net/c.port") \
    WANT=$want \
    LOGX=$(cat "$net/x.dir")/info.log LOGC=$(cat "$net/c.dir")/info.log \
    FPX=$(awk '{print $2}' "$(cat "$net/x.dir")/data/fingerprint") \
    XMPORT=$xmport DNSDIR=$dns C2PORT=$c2port SOCKS2=$(cat "$net/c2.port")

"$PY" - <<'EOF' || it_fail "MAPADDRESS / NEWNYM / DROPTIMEOUTS checks failed"
import hashlib, ipaddress, os, subprocess, time, stem
from stem.control import Controller, EventType
c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
hport, socks, want = os.environ["HPORT"], os.environ["SOCKS"], os.environ["WANT"]

def fetch(host, hostname_socks=True, timeout=60):
    """Download the file through c's SocksPort; its sha256, or None."""
    proxy = ("socks5h://" if hostname_socks else "socks5://") + "127.0.0.1:" + socks
    p = subprocess.run(["curl", "-sf", "--max-time", str(timeout), "-x", proxy,
                        "http://%s:%s/file" % (host, hport)], capture_output=True)
    return hashlib.sha256(p.stdout).hexdigest() if p.returncode == 0 else None

# The client needs a consensus with x and its descriptor first.
deadline = time.time() + 180
while fetch("127.0.0.1", timeout=20) != want:
    assert time.time() < deadline, "no download through c at all"
    time.sleep(3)

addrmap = []
c.add_event_listener(lambda e: addrmap.append(e), EventType.ADDRMAP)

# 1. A hostname mapped to 127.0.0.1.
exits_before = sum(1 for l in open(os.environ["LOGX"]) if "Exit stream" in l)
r = c.map_address({"web.example": "127.0.0.1"})
assert r == {"web.example": "127.0.0.1"}, r
ml = c.get_info("address-mappings/control")
assert "web.example 127.0.0.1 NEVER" in ml.splitlines(), ml
assert fetch("web.example") == want, "the download to web.example (mapped) failed"
time.sleep(0.5)
assert any(e.hostname == "web.example" and e.destination == "127.0.0.1" for e in addrmap), \
    [str(e) for e in addrmap]
exits_after = sum(1 for l in open(os.environ["LOGX"]) if "Exit stream" in l)
assert exits_after > exits_before, "x logged no exit stream for the mapped download"
assert any("mapped to 127.0.0.1" in l for l in open(os.environ["LOGC"])), "c did not log the rewrite"
print("web.example=127.0.0.1: download whole, ADDRMAP event, listed")

# 2. Virtual addresses.
r = c.map_address({"0.0.0.0": "127.0.0.1"})
(v4, t4), = r.items()
assert t4 == "127.0.0.1" and ipaddress.ip_address(v4) in ipaddress.ip_network("127.192.0.0/10"), r
assert c.map_address({"0.0.0.0": "127.0.0.1"}) == {v4: "127.0.0.1"}, "the same target got another address"
r = c.map_address({".": "127.0.0.1"})
(vh, th), = r.items()
assert vh.endswith(".virtual") and len(vh) == 16 + len(".virtual"), r
assert fetch(v4, hostname_socks=False) == want, "the download to %s failed" % v4
assert fetch(vh) == want, "the download to %s failed" % vh
print("virtual %s and %s lead to 127.0.0.1" % (v4, vh))

# 3. Bad input: 512 per bad mapping, the good one in the command is made.
resp = c.msg("MAPADDRESS @@@=127.0.0.1 good.example=127.0.0.1 nothing")
lines = [(code, text) for code, div, text in resp.content()]
assert lines[0][0] == "512" and "invalid address '@@@'" in lines[0][1], lines
assert lines[1] == ("250", "good.example=127.0.0.1"), lines
assert lines[2][0] == "512", lines
resp = c.msg("MAPADDRESS")
assert resp.content()[0][0] == "512", resp.content()
assert "good.example 127.0.0.1 NEVER" in c.get_info("address-mappings/all").splitlines()
r = Controller.from_port(port=int(os.environ["RPORT"]))
r.authenticate()
resp = r.msg("MAPADDRESS a.example=127.0.0.1")
assert resp.content()[0][0] == "551" and "SocksPort" in resp.content()[0][2], resp.content()
r.close()

# 4. Removal: unlisted, and web.example no longer reaches anything.
assert c.map_address({"web.example": "web.example"}) == {"web.example": "web.example"}
ml = c.get_info("address-mappings/control").splitlines()
assert not any(l.startswith("web.example ") for l in ml), ml
assert fetch("web.example", timeout=30) is None, "web.example still downloads after its mapping was removed"
print("bad mappings refused (512, 551 without SocksPort); removal works")

# 5. NEWNYM: the next stream takes another circuit; the old one closes.
streams, circs = [], []
c.add_event_listener(lambda e: streams.append(e), EventType.STREAM)
c.add_event_listener(lambda e: circs.append(e), EventType.CIRC)
def last_circ():
    ok = [e for e in streams if e.status == "SUCCEEDED"]
    assert ok, [str(e) for e in streams]
    return ok[-1].circ_id
assert fetch("127.0.0.1") == want
first = last_circ()
assert fetch("127.0.0.1") == want
assert last_circ() == first, "two downloads in a row did not share a circuit"
c.signal("NEWNYM")
assert fetch("127.0.0.1") == want
second = last_circ()
assert second != first, "the stream after NEWNYM used the old circuit %s" % first
deadline = time.time() + 10
while not any(e.id == first and e.status == "CLOSED" for e in circs):
    assert time.time() < deadline, "circuit %s was not closed after NEWNYM" % first
    time.sleep(0.2)
c.signal("NEWNYM")  # within 10 s of the first: delayed, still 250
time.sleep(0.5)
assert any("Rate limiting NEWNYM request" in l for l in open(os.environ["LOGC"])), \
    "c did not log the delayed NEWNYM"
print("NEWNYM: circuit %s closed, the next stream took %s; a second NEWNYM was delayed" % (first, second))

# 6. DROPTIMEOUTS and BUILDTIMEOUT_SET RESET.
bt = []
c.add_event_listener(lambda e: bt.append(e), EventType.BUILDTIMEOUT_SET)
resp = c.msg("DROPTIMEOUTS")
assert resp.is_ok(), str(resp)
deadline = time.time() + 5
while not bt:
    assert time.time() < deadline, "no BUILDTIMEOUT_SET event after DROPTIMEOUTS"
    time.sleep(0.1)
e = bt[0]
assert e.set_type == "RESET" and e.total_times == 0 and e.timeout == 60000, str(e)
assert e.quantile == 0.8 and e.close_timeout >= 60000, str(e)
print("DROPTIMEOUTS: %s" % e)

# 7. RESOLVE through the exit: ADDRMAP events with the answers.
addrmap.clear()
resolves = []
c.add_event_listener(lambda e: resolves.append(e) if e.purpose == "DNS_REQUEST" else None,
                     EventType.STREAM)
for args in ("dns.example", "mode=reverse 192.0.2.7", "nx.example", "198.51.100.9",
             "mode=reverse 127.0.0.1"):
    resp = c.msg("RESOLVE " + args)
    assert resp.is_ok(), (args, str(resp))
deadline = time.time() + 60
while len(addrmap) < 5:
    assert time.time() < deadline, "ADDRMAP events: %s" % [str(e) for e in addrmap]
    time.sleep(0.2)
got = {e.hostname: e for e in addrmap}
assert got["dns.example"].destination == "127.0.0.1", str(got["dns.example"])
assert got["REVERSE[192.0.2.7]"].destination == "doc.example", str(got.get("REVERSE[192.0.2.7]"))
assert got["nx.example"].destination is None and got["nx.example"].error == "yes", str(got["nx.example"])
assert got["198.51.100.9"].destination == "198.51.100.9", str(got["198.51.100.9"])
assert got["REVERSE[127.0.0.1]"].destination is None, str(got["REVERSE[127.0.0.1]"])
st = [e.status for e in resolves]
assert "NEWRESOLVE" in st and "SENTRESOLVE" in st, st
resp = c.msg("RESOLVE")
assert resp.content()[0][0] == "512", resp.content()
resp = c.msg("RESOLVE mode=reverse not-an-ip")
assert resp.content()[0][0] == "512", resp.content()
print("RESOLVE: %s" % "; ".join(str(e) for e in addrmap))

# 8. tor-resolve (SOCKS RESOLVE, RESOLVE_PTR) through c's SocksPort.
sp = "127.0.0.1:" + socks
out = subprocess.run(["tor-resolve", "-5", "dns.example", sp], capture_output=True, text=True)
assert out.returncode == 0 and out.stdout.strip() == "127.0.0.1", (out.stdout, out.stderr)
out = subprocess.run(["tor-resolve", "-5", "-x", "192.0.2.7", sp], capture_output=True, text=True)
assert out.returncode == 0 and out.stdout.strip() == "doc.example", (out.stdout, out.stderr)
out = subprocess.run(["tor-resolve", "-5", "nx.example", sp], capture_output=True, text=True)
assert out.returncode != 0, (out.stdout, out.stderr)
out = subprocess.run(["tor-resolve", "-4", "dns.example", sp], capture_output=True, text=True)
assert out.returncode == 0 and out.stdout.strip() == "127.0.0.1", (out.stdout, out.stderr)
qs = open(os.environ["DNSDIR"] + "/questions").read().split()
assert "dns.example" in qs and "7.2.0.192.in-addr.arpa" in qs and "nx.example" in qs, qs
assert "1.0.0.127.in-addr.arpa" not in qs, "x asked for 127.0.0.1's name"
# x's MetricsPort counts the lookups (tor's exit DNS and stream series).
import urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % os.environ["XMPORT"], timeout=10).read().decode()
val = {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in body.splitlines() if l and not l.startswith("#")}
assert val["tor_relay_exit_dns_query_total"] >= 6, body
assert val['tor_relay_exit_dns_error_total{reason="notexist"}'] >= 2, body
assert val['tor_relay_exit_dns_error_total{reason="success"}'] >= 4, body
assert val['tor_relay_streams_total{type="RESOLVE",direction="received"}'] >= 7, body
print("x's metrics: %d DNS lookups, %d RESOLVE streams" % (val["tor_relay_exit_dns_query_total"],
      val['tor_relay_streams_total{type="RESOLVE",direction="received"}']))
print("tor-resolve: dns.example -> 127.0.0.1, -x 192.0.2.7 -> doc.example, nx.example fails")

# 9. EXTENDCIRCUIT 0 without a path: pctor chooses three relays (the
# last one of ExitNodes).
cid = c.new_circuit(await_build=True, timeout=60)
hops = [fp for fp, nick in c.get_circuit(cid).path]
assert len(hops) == 3 and hops[-1] == os.environ["FPX"] and len(set(hops)) == 3, hops
print("EXTENDCIRCUIT 0 without a path built %s through %d relays ending at x" % (cid, len(hops)))
c.close()

# 10. Conflux legs: CIRC_MINOR when they link, with their set's CONFLUX_ID.
c2 = Controller.from_port(port=int(os.environ["C2PORT"]))
c2.authenticate()
minor = []
c2.add_event_listener(lambda e: minor.append(e), EventType.CIRC_MINOR)
url = "http://127.0.0.1:%s/file" % hport
deadline = time.time() + 180
while True:
    p = subprocess.run(["curl", "-sf", "--max-time", "60", "-x", "socks5h://127.0.0.1:" +
                        os.environ["SOCKS2"], url], capture_output=True)
    if p.returncode == 0 and hashlib.sha256(p.stdout).hexdigest() == want:
        break
    assert time.time() < deadline, "no download through c2"
    time.sleep(3)
deadline = time.time() + 30
def linked():
    ev = [e for e in minor if e.event == "PURPOSE_CHANGED" and e.purpose == "CONFLUX_LINKED"]
    by = {}
    for e in ev:
        assert e.old_purpose == "CONFLUX_UNLINKED", str(e)
        cid = e.keyword_args.get("CONFLUX_ID")
        assert cid and len(cid) == 64, str(e)
        by.setdefault(cid, set()).add(e.id)
    return [ids for ids in by.values() if len(ids) >= 2]
while not linked():
    assert time.time() < deadline, "no conflux set linked two legs: %s" % [str(e) for e in minor]
    time.sleep(0.5)
ids = linked()[0]
status = c2.get_info("circuit-status").splitlines()
for i in ids:
    line = [l for l in status if l.split()[0] == i]
    assert line and "PURPOSE=CONFLUX_LINKED" in line[0] and "CONFLUX_ID=" in line[0], (i, status)
print("conflux: circuits %s linked (CIRC_MINOR PURPOSE_CHANGED, one CONFLUX_ID)" % sorted(ids))
c2.close()
EOF
it_pctor_alive_quiet "$net" x r c c2
it_log "MAPADDRESS, NEWNYM, DROPTIMEOUTS (BUILDTIMEOUT_SET), RESOLVE and SOCKS RESOLVE, EXTENDCIRCUIT 0 without a path and conflux CIRC_MINOR work on pctor clients"
