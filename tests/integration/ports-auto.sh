#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ports-auto.sh -- "ORPort auto" and "DirPort auto" as tor's, and a bare
# ORPort on IPv4 and IPv6 as tor 0.4.9's.
#
# 1. A pctor relay p1 with "ORPort 127.0.0.1:auto", "DirPort
#    127.0.0.1:auto", "ControlPort auto", "MetricsPort auto" and
#    AssumeReachable 0 in a private network with one tor 0.4.9 authority
#    and one tor relay: it logs the ports the kernel picked; GETINFO
#    net/listeners/or, dir and metrics give the same ones (and the
#    MetricsPort answers there); its descriptor's router line
#    carries them; ControlPortWriteToFile holds "PORT=127.0.0.1:CPORT" (and
#    is removed when p1 exits); its reachability self-test is about the
#    bound ORPort;
#    the authority lists p1 Running and Valid at that ORPort and DirPort
#    (so the authority's own reachability test reached the bound port).
# 2. In a network namespace of its own (nothing listens outside it), a
#    relay p2 with a bare "ORPort auto" listens on 0.0.0.0 and [::] (each
#    on the port the kernel picked) and says it advertises IPv4 only (the
#    namespace has no public IPv6 address). With 2001:db8::5 on the
#    namespace's loopback interface, p4's descriptor has "or-address
#    [2001:db8::5]:PORT" (tor's address discovery), p5's with
#    AddressDisableIPv6 1 has none.
# 3. The same relay where socket(AF_INET6) fails (no_ipv6.py: a seccomp
#    filter, as on a kernel without IPv6) starts, listens on 0.0.0.0 only
#    and says why.
# Parts 2 and 3 need root (unshare -n) and are skipped without it.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_skip "$PCTOR is not built"
command -v curl > /dev/null || it_skip "curl is not installed"
PY=$(it_python3) || it_skip "python3 is not installed"

it_net_start --authorities 1 --relays 1 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# --- 1. auto ports in a private network ------------------------------------
read -r node _ _ _ < <(it_privnet reserve "$net" --role pctor \
    --nickname p1) || it_fail "reserve failed"
d=$net/$node
cat > "$d/torrc" <<EOT
DataDirectory $d/data
ORPort 127.0.0.1:auto
DirPort 127.0.0.1:auto
ControlPort auto
ControlPortWriteToFile $d/control-port
MetricsPort auto
MetricsPortPolicy accept 127.0.0.1
Address 127.0.0.1
AssumeReachable 0
Nickname p1
ContactInfo pctor test relay p1
Log info file $d/info.log
TestingTorNetwork 1
$(cat "$net/dirauth.torrc")
EOT
"$PCTOR" -f "$d/torrc" > "$d/stderr" 2>&1 &
echo $! > "$d/pid"
it_register_pid "$(cat "$d/pid")" || it_fail "p1 did not start: $(cat "$d/stderr")"
logged_port() { # WHAT: the port of "Opened WHAT on 127.0.0.1:PORT" in p1's log
    sed -n "s/.*Opened $1 on 127\.0\.0\.1:\([0-9]*\).*/\1/p" "$d/info.log" | head -1
}
it_wait_until 30 grep -qs "Opened Metrics listener on 127.0.0.1:" "$d/info.log" ||
    it_fail "p1 did not open its ports: $(tail -3 "$d/stderr")"
port=$(logged_port ORPort)
dport=$(logged_port "Directory listener")
cport=$(logged_port "Control listener")
[ "$(cat "$d/control-port" 2> /dev/null)" = "PORT=127.0.0.1:$cport" ] ||
    it_fail "ControlPortWriteToFile: '$(cat "$d/control-port" 2>&1)', logged port $cport"
[ "$(stat -c %a "$d/control-port")" = 600 ] || it_fail "the control port file is not mode 0600"
mport=$(logged_port "Metrics listener")
[ -n "$port" ] && [ "$port" != 0 ] || it_fail "p1 logged no bound ORPort: $(grep Opened "$d/info.log")"
[ -n "$dport" ] && [ "$dport" != 0 ] || it_fail "p1 logged no bound DirPort"
it_wait_port 127.0.0.1 "$port" 5 || it_fail "p1 does not listen on its ORPort $port"
it_wait_port 127.0.0.1 "$dport" 5 || it_fail "p1 does not listen on its DirPort $dport"
it_log "p1 bound ORPort $port, DirPort $dport, ControlPort $cport"

ctl() { # COMMAND: reply lines from p1's ControlPort
    "$PY" - "$cport" "$1" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
f = s.makefile("rwb")
f.write(b"AUTHENTICATE\r\n" + sys.argv[2].encode() + b"\r\nQUIT\r\n")
f.flush()
print(f.read().decode(errors="replace").replace("\r", ""))
PYEOF
}
ctl "GETINFO net/listeners/or net/listeners/dir net/listeners/metrics" > "$d/listeners"
grep -qx "250-net/listeners/or=\"127.0.0.1:$port\"" "$d/listeners" ||
    it_fail "GETINFO net/listeners/or: $(cat "$d/listeners")"
grep -qx "250-net/listeners/dir=\"127.0.0.1:$dport\"" "$d/listeners" ||
    it_fail "GETINFO net/listeners/dir: $(cat "$d/listeners")"
[ -n "$mport" ] && grep -qx "250-net/listeners/metrics=\"127.0.0.1:$mport\"" "$d/listeners" ||
    it_fail "GETINFO net/listeners/metrics (logged: '$mport'): $(cat "$d/listeners")"
curl -sf --max-time 5 "http://127.0.0.1:$mport/metrics" | grep -q "^tor_relay_traffic_bytes" ||
    it_fail "the MetricsPort on its auto port does not answer"
ctl "GETCONF ORPort DirPort" > "$d/getconf"
grep -qx "250-ORPort=127.0.0.1:auto" "$d/getconf" && grep -qx "250 DirPort=127.0.0.1:auto" "$d/getconf" ||
    it_fail "GETCONF does not show the lines as written: $(cat "$d/getconf")"

curl -sf --max-time 5 "http://127.0.0.1:$dport/tor/server/authority" > "$d/desc" ||
    it_fail "p1's DirPort does not serve its descriptor"
grep -qx "router p1 127.0.0.1 $port 0 $dport" "$d/desc" ||
    it_fail "p1's router line does not carry the bound ports: $(grep '^router ' "$d/desc")"

fp=$(awk '{ print $2 }' "$d/data/fingerprint")
echo "p1 $port $dport $fp $(awk '{ print $2 }' "$d/data/fingerprint-ed25519") - pctor" >> "$nodes"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list p1 as Running and Valid"
listed() {
    curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus" \
        > "$d/auth-cons" && grep -Eq "^r p1 .* 127\.0\.0\.1 $port $dport\$" "$d/auth-cons"
}
it_wait_until 60 listed ||
    it_fail "the authority does not list p1 at its bound ports: $(grep '^r p1 ' "$d/auth-cons")"
it_log "the tor authority lists p1 at ORPort $port, DirPort $dport: $(grep '^r p1 ' "$d/auth-cons")"
grep -q "Now checking whether IPv4 ORPort 127.0.0.1:$port is reachable" "$d/info.log" &&
    grep -qF "Self-testing indicates your ORPort 127.0.0.1:$port is reachable from the outside. Excellent." "$d/info.log" ||
    it_fail "p1's self-test is not about its bound ORPort: $(grep -i 'reachab' "$d/info.log" | tail -3)"
kill -TERM "$(cat "$d/pid")"
it_wait_until 20 sh -c "! kill -0 $(cat "$d/pid") 2> /dev/null" || it_fail "p1 did not exit on SIGTERM"
[ ! -e "$d/control-port" ] || it_fail "p1 left its ControlPortWriteToFile behind"
if grep -E '\[(warn|err)\]' "$d/info.log" | grep -v "ContactInfo\|TestingTorNetwork"; then
    it_fail "p1 logged warnings"
fi

# --- 2./3. a bare ORPort: IPv4 and IPv6; a host without IPv6 --------------
[ "$(id -u)" = 0 ] || { it_log "not root: skipping the bare ORPort checks"; exit 0; }
command -v unshare > /dev/null && command -v ip > /dev/null ||
    { it_log "no unshare/ip: skipping the bare ORPort checks"; exit 0; }
unshare -n true 2> /dev/null || { it_log "unshare -n fails here: skipping the bare ORPort checks"; exit 0; }
bare() { # NICK IPV6-ADDR EXTRA [WRAPPER...]: a relay with "ORPort auto" in a
    # new network namespace (IPV6-ADDR, unless "-", on its lo), torrc EXTRA
    local nick=$1 b=$net/$1 v6=$2 extra=$3
    shift 3
    mkdir -p "$b"
    cat > "$b/torrc" <<EOT
DataDirectory $b/data
ORPort auto
PublishServerDescriptor 0
AssumeReachable 1
Nickname $nick
ContactInfo pctor test relay $nick
Log info file $b/info.log
TestingTorNetwork 1
$extra
$(cat "$net/dirauth.torrc")
EOT
    # unshare and sh exec: the PID is pctor's.
    unshare -n sh -c 'ip link set lo up && { [ "$0" = - ] || ip addr add "$0/64" dev lo; } && exec "$@"' \
        "$v6" "$@" "$PCTOR" -f "$b/torrc" > "$b/stderr" 2>&1 &
    echo $! > "$b/pid"
    it_register_pid "$(cat "$b/pid")" || it_fail "$nick did not start: $(cat "$b/stderr")"
    it_wait_until 30 grep -qs "Opened ORPort on 0.0.0.0:" "$b/info.log" ||
        it_fail "$nick did not open its IPv4 ORPort: $(tail -3 "$b/stderr")"
}
bare p2 - ""
b=$net/p2
it_wait_until 10 grep -q "Opened ORPort on \[::\]:" "$b/info.log" ||
    it_fail "a bare ORPort does not listen on IPv6: $(grep -i orport "$b/info.log")"
v4=$(sed -n 's/.*Opened ORPort on 0\.0\.0\.0:\([0-9]*\).*/\1/p' "$b/info.log")
v6=$(sed -n 's/.*Opened ORPort on \[::\]:\([0-9]*\).*/\1/p' "$b/info.log")
nsenter -t "$(cat "$b/pid")" -n ss -ltn > "$b/ss"
grep -q "0.0.0.0:$v4 " "$b/ss" && grep -q "\[::\]:$v6 " "$b/ss" ||
    it_fail "p2 does not listen on 0.0.0.0:$v4 and [::]:$v6: $(cat "$b/ss")"
it_wait_until 10 grep -q "Unable to find a public IPv6 address for ORPort $v6: advertising IPv4 only" "$b/info.log" ||
    it_fail "p2 does not say it advertises IPv4 only"
it_log "a bare ORPort auto listens on 0.0.0.0:$v4 and [::]:$v6"

bare p3 - "" "$PY" "$IT_TOP_SRCDIR/tests/integration/no_ipv6.py"
b=$net/p3
it_wait_until 10 grep -q "This host has no IPv6 (Address family not supported by protocol): the ORPort listens on IPv4 only" \
    "$b/info.log" || it_fail "p3 does not say that it has no IPv6: $(grep -i orport "$b/info.log")"
sleep 2
kill -0 "$(cat "$b/pid")" || it_fail "p3 died without IPv6: $(tail -3 "$b/info.log")"
if grep -q "Opened ORPort on \[" "$b/info.log"; then
    it_fail "p3 claims an IPv6 ORPort"
fi
nsenter -t "$(cat "$b/pid")" -n ss -ltn > "$b/ss"
grep -q "\[::\]" "$b/ss" && it_fail "p3 listens on IPv6: $(cat "$b/ss")"
it_log "without IPv6, a bare ORPort listens on IPv4 only and says so"

nsdesc() { # NICK: the relay's own descriptor, from its DirPort in its namespace
    local b=$net/$1 dp
    dp=$(sed -n 's/.*Opened Directory listener on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$b/info.log")
    [ -n "$dp" ] && nsenter -t "$(cat "$b/pid")" -n \
        curl -sf --max-time 5 "http://127.0.0.1:$dp/tor/server/authority" > "$b/desc"
}
bare p4 2001:db8::5 "DirPort 127.0.0.1:auto"
b=$net/p4
v6=$(sed -n 's/.*Opened ORPort on \[::\]:\([0-9]*\).*/\1/p' "$b/info.log")
it_wait_until 20 nsdesc p4 || it_fail "p4 serves no descriptor"
grep -qx "or-address \[2001:db8::5\]:$v6" "$b/desc" ||
    it_fail "p4 does not advertise its IPv6 ORPort: $(grep -E '^(router|or-address) ' "$b/desc")"
bare p5 2001:db8::5 "DirPort 127.0.0.1:auto
AddressDisableIPv6 1"
b=$net/p5
it_wait_until 20 nsdesc p5 || it_fail "p5 serves no descriptor"
if grep -q "^or-address" "$b/desc"; then
    it_fail "p5 advertises IPv6 with AddressDisableIPv6 1: $(grep '^or-address' "$b/desc")"
fi
it_log "a public IPv6 address is found and advertised for [::]:$v6, not with AddressDisableIPv6 1"
exit 0
