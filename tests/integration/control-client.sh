#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# control-client.sh -- a controller (stem) uses the client commands
# MAPADDRESS, SIGNAL NEWNYM and DROPTIMEOUTS (control-spec 3.8, 3.7, 3.34)
# on a pctor client, in a private network.
#
# Private network: 1 tor authority, 2 tor relays, a pctor exit x (to
# 127.0.0.1), a pctor client c with a ControlPort and ExitNodes x, a pctor
# relay r with a ControlPort but no SocksPort.
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
#     TOTAL_TIMES=0 and the initial 60 s timeout, as stem parses it.
. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
PY=
for p in /usr/bin/python3 "$(it_python3)"; do
    [ -x "$p" ] && "$p" -c 'import stem' 2> /dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || it_fail "python3-stem is not installed (scripts/install-deps installs it)"

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 2 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((1024 * 1024)) /dev/urandom > "$www/file"
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

read -r _ cport rport _ < <(it_privnet reserve "$net" --role aux --nickname cports)
it_start_pctor "$net" x relay "ExitRelay 1
RefuseUnknownExits 0
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_start_pctor "$net" r relay "ControlPort $rport"
it_start_pctor "$net" c client "ControlPort $cport
ExitNodes x"
export CPORT=$cport RPORT=$rport HPORT=$hport SOCKS=$(cat "$net/c.port") \
    WANT=$(sha256sum < "$www/file" | cut -d' ' -f1) \
    LOGX=$(cat "$net/x.dir")/info.log LOGC=$(cat "$net/c.dir")/info.log

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
c.close()
EOF
it_pctor_alive_quiet "$net" x r c
it_log "MAPADDRESS (names, virtual addresses, removal, errors), NEWNYM (new circuit, old one closed, rate limit) and DROPTIMEOUTS (BUILDTIMEOUT_SET RESET) work on a pctor client"
