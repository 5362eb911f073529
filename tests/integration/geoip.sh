#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# geoip.sh -- GeoIPFile and GeoIPv6File with Debian's tor-geoipdb files.
#
# A pctor client (no network needed: its one DirAuthority is a closed port
# on 127.0.0.1) loads /usr/share/tor/geoip and geoip6; stem asks it
# GETINFO ip-to-country/ for IPv4 and IPv6 addresses and compares with the
# files themselves (looked up here independently, in Python). Then:
# SIGHUP with a broken GeoIPFile keeps the old data and says why (file and
# line); the broken file at start-up stops pctor with the same reason.

. "$(dirname "$0")/lib.sh"
set -u

PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
G4=/usr/share/tor/geoip G6=/usr/share/tor/geoip6
[ -r "$G4" ] && [ -r "$G6" ] || it_skip "tor-geoipdb is not installed (scripts/install-deps installs it)"
# stem from Debian's package lives in the system python3.
PY=$(it_python3_with stem) || it_skip "python3-stem is not installed (scripts/install-deps)"

d=$(it_tmpdir)
cport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$d/torrc" <<EOT
DataDirectory $d/data
TestingTorNetwork 1
DirAuthority auth orport=1 no-v2 v3ident=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 127.0.0.1:1 BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB
SocksPort 0
ControlPort 127.0.0.1:$cport
Log notice file $d/notice.log
GeoIPFile $G4
GeoIPv6File $G6
EOT
"$PCTOR" -f "$d/torrc" > "$d/out" 2>&1 &
echo $! > "$d/pid"
it_register_pid "$(cat "$d/pid")"
it_wait_port 127.0.0.1 "$cport" 30 || it_fail "pctor did not open its ControlPort: $(tail -3 "$d/out")"
grep -q "GeoIP data: [0-9]* IPv4 and [0-9]* IPv6 ranges loaded" "$d/notice.log" ||
    it_fail "pctor does not say it loaded the GeoIP files"

CPORT=$cport G4=$G4 G6=$G6 "$PY" - <<'PYEOF' || it_fail "GETINFO ip-to-country checks failed"
import ipaddress, os, stem
from stem.control import Controller

def lookup(path, addr, v6):
    """The country the file gives addr ("??" outside every range)."""
    a = int(ipaddress.ip_address(addr))
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        lo, hi, cc = line.strip().split(",")
        lo = int(ipaddress.ip_address(lo)) if v6 else int(lo)
        hi = int(ipaddress.ip_address(hi)) if v6 else int(hi)
        if lo <= a <= hi:
            return cc.lower()
    return "??"

c = Controller.from_port(port=int(os.environ["CPORT"]))
c.authenticate()
assert c.get_info("ip-to-country/ipv4-available") == "1"
assert c.get_info("ip-to-country/ipv6-available") == "1"
for addr, v6 in [("1.0.0.1", 0), ("8.8.8.8", 0), ("193.23.244.244", 0),
                 ("10.1.2.3", 0), ("2001:4:112::1", 1), ("2a0f:85c1:cc5::9", 1),
                 ("2001:db8::1", 1)]:
    want = lookup(os.environ["G6" if v6 else "G4"], addr, v6)
    got = c.get_info("ip-to-country/" + addr)
    assert got == want, (addr, got, want)
    print("ip-to-country/%s = %s (the file says %s)" % (addr, got, want))
try:
    c.get_info("ip-to-country/not-an-address")
    raise SystemExit("a bad address was answered")
except stem.OperationFailed as e:
    print("bad address:", e)
c.close()
PYEOF

# SIGHUP with a broken file: the old data stays, the reason is logged.
{ head -30 "$G4"; echo "16777472,16778239,XYZ"; } > "$d/broken"
sed -i "s|^GeoIPFile .*|GeoIPFile $d/broken|" "$d/torrc"
kill -HUP "$(cat "$d/pid")"
it_wait_until 20 grep -q "GeoIPFile: $d/broken: line 31: .*keeping the GeoIP data loaded before" "$d/notice.log" ||
    it_fail "no warning about the broken GeoIPFile: $(tail -3 "$d/notice.log")"
CPORT=$cport "$PY" -c '
import os
from stem.control import Controller
c = Controller.from_port(port=int(os.environ["CPORT"])); c.authenticate()
cc = c.get_info("ip-to-country/1.0.0.1")
assert cc == "au", cc
' || it_fail "the GeoIP data was lost after a bad SIGHUP"
kill -0 "$(cat "$d/pid")" || it_fail "pctor died"
it_log "a broken GeoIPFile on SIGHUP keeps the loaded data, with the file and line"

# The same file at start-up stops pctor.
pid=$(cat "$d/pid")
kill -TERM "$pid"
it_wait_until 20 sh -c "! kill -0 $pid 2> /dev/null" || it_fail "pctor did not stop"
if "$PCTOR" -f "$d/torrc" > "$d/out2" 2>&1; then it_fail "pctor started with a broken GeoIPFile"; fi
grep -q "GeoIPFile: $d/broken: line 31" "$d/out2" "$d/notice.log" ||
    it_fail "no reason given for refusing to start: $(tail -3 "$d/out2")"
it_log "a broken GeoIPFile at start-up: pctor exits with the file and line"
