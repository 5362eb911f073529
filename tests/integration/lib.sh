# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/lib.sh -- shell helpers for pctor's integration tests.
#
# Source it from a bash test script:   . "$(dirname "$0")/lib.sh"
#
# Design:
# - Everything a test creates lives under one directory IT_ROOT
#   (/tmp/pctor-it.XXXXXX, made when this file is sourced) and every process it
#   starts is registered, so one EXIT trap (it_cleanup) can undo it all: it
#   stops the private networks started with it_privnet_start, kills the PIDs
#   registered with it_register_pid, and removes IT_ROOT (kept when IT_KEEP=1).
#   Registrations are written to files under IT_ROOT, so they also work from
#   inside $(...) subshells.
# - Processes are only ever signalled by PID, and a registered PID is signalled
#   only while its start time (from /proc/PID/stat) is the one recorded at
#   registration, so a reused PID is never hit.
# - Exit codes follow automake's test harness: 0 pass, 1 fail (it_fail), 77 skip
#   (it_skip). A failing test prints the end of every privnet node's log, which is
#   what one needs to debug a CI failure.
# - Private tor networks come from scripts/pctor-privnet (see its --help), started
#   with --owner-pid $$ so the tors exit on their own if this shell is killed
#   with SIGKILL before its trap runs.

IT_NAME=${0##*/}
# Switched off on package build machines (./configure
# --disable-integration-tests, or PCTOR_INTEGRATION_TESTS=no): skip, saying so.
if [ "${PCTOR_INTEGRATION_TESTS:-yes}" = no ]; then
    echo "SKIP: $IT_NAME: integration tests are disabled (--disable-integration-tests or PCTOR_INTEGRATION_TESTS=no)" >&2
    exit 77
fi
IT_LIBDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IT_TOP_SRCDIR=$(cd "$IT_LIBDIR/../.." && pwd)
PRIVNET=$IT_TOP_SRCDIR/scripts/pctor-privnet
IT_START=$SECONDS
IT_ROOT=$(mktemp -d /tmp/pctor-it.XXXXXX) || { echo "$IT_NAME: mktemp failed" >&2; exit 99; }
: > "$IT_ROOT/pids"
: > "$IT_ROOT/privnets"
: > "$IT_ROOT/children"
: > "$IT_ROOT/testbeds"

# PCTOR_IT_SANDBOX=1: every pctor the test starts runs with Sandbox 1 (the
# tests take PCTOR from the environment; a wrapper in IT_ROOT appends the
# option to the command line and execs pctor, so PIDs stay pctor's).
# Under make check every test runs sandboxed by default: PCTOR_IT_SANDBOX
# defaults to 1 when pctor can start with Sandbox 1 here, and a build
# without libseccomp runs the tests unsandboxed (said on stderr).
# PCTOR_IT_SANDBOX=0 turns it off; a test that cannot run under the filter
# sets PCTOR_IT_SANDBOX=0 before sourcing this file, saying why.
# Scripts that set PCTOR themselves (the benchmarks) are not sandboxed.
# it_start_pctor checks that each sandboxed pctor runs under the filter.
IT_SANDBOXED=0
if [ -z "${PCTOR_IT_SANDBOX:-}" ] &&
   [ -z "${PCTOR:-}" ] && [ -n "${top_builddir:-}" ]; then
    printf 'Sandbox 1\nDataDirectory %s/sandbox-probe\n' "$IT_ROOT" > "$IT_ROOT/sandbox-probe.torrc"
    if "$top_builddir/src/app/pctor" --verify-config -f "$IT_ROOT/sandbox-probe.torrc" \
           > "$IT_ROOT/sandbox-probe.out" 2>&1; then
        PCTOR_IT_SANDBOX=1
    else
        echo "[$IT_NAME] not sandboxed: $(tail -1 "$IT_ROOT/sandbox-probe.out")" >&2
    fi
fi
if [ "${PCTOR_IT_SANDBOX:-0}" = 1 ] && [ -z "${PCTOR:-}" ] && [ -n "${top_builddir:-}" ]; then
    printf '#!/bin/sh\nexec "%s" "$@" --Sandbox 1\n' \
        "$(cd "$top_builddir" && pwd)/src/app/pctor" > "$IT_ROOT/pctor-sandboxed"
    chmod 755 "$IT_ROOT/pctor-sandboxed"
    export PCTOR=$IT_ROOT/pctor-sandboxed
    IT_SANDBOXED=1
fi

# it_log MSG...: a progress line on stderr, with the seconds since the start.
it_log() { echo "[$IT_NAME +$((SECONDS - IT_START))s] $*" >&2; }

# it_fail MSG...: report a failure and exit 1 (the EXIT trap cleans up).
it_fail() { echo "FAIL: $IT_NAME: $*" >&2; exit 1; }

# it_skip MSG...: report why the test cannot run here and exit 77.
it_skip() { echo "SKIP: $IT_NAME: $*" >&2; exit 77; }

# it_tmpdir: make a fresh directory under IT_ROOT and print its path; it is
# removed when the test exits.
it_tmpdir() { mktemp -d "$IT_ROOT/tmp.XXXXXX" || it_fail "mktemp failed"; }

# _it_starttime PID: the start time (clock ticks since boot) of a live process.
_it_starttime() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }        # drop "pid (comm) " -- comm may contain spaces
    set -- $stat
    [ "$1" != Z ] || return 1  # a zombie has exited; only its parent's wait is missing
    echo "${20}"
}

# it_register_pid PID: kill PID (SIGTERM, then SIGKILL) when the test exits.
it_register_pid() {
    local st
    st=$(_it_starttime "$1") || { it_log "it_register_pid: no process $1"; return 1; }
    echo "$1 $st" >> "$IT_ROOT/pids"
}

# it_register_privnet DIR: run 'pctor-privnet stop DIR' when the test exits.
it_register_privnet() { echo "$1" >> "$IT_ROOT/privnets"; }

# --- the namespace test bed (scripts/pctor-testbed) ---------------------------
# it_require_testbed: skip (77) unless the test bed can run here: root, tor,
# pctor-delayd built, iproute2, nftables and iptables, /usr/bin/python3 >= 3.11
# (tomllib) and the right to create network namespaces; fail if pctor was not
# built. Sets DELAYD and PCTOR (from the environment, else the build tree) and
# TB (scripts/pctor-testbed).
it_require_testbed() {
    [ "$(id -u)" = 0 ] || it_skip "needs root (network namespaces)"
    it_require_tor
    DELAYD=${PCTOR_DELAYD:-${top_builddir:?}/src/tools/delayd/pctor-delayd}
    PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
    [ -x "$DELAYD" ] || it_skip "pctor-delayd was not built (apt-get install libnetfilter-queue-dev libmnl-dev; re-run configure)"
    [ -x "$PCTOR" ] || it_fail "no pctor binary at $PCTOR"
    command -v ip > /dev/null && command -v tc > /dev/null && command -v nft > /dev/null &&
        command -v iptables-restore > /dev/null ||
        it_skip "needs iproute2, nftables and iptables"
    /usr/bin/python3 -c 'import tomllib' 2> /dev/null || it_skip "needs python3 >= 3.11 (tomllib)"
    ip netns add "pctor-it-probe-$$" 2> /dev/null || it_skip "cannot create network namespaces here"
    ip netns del "pctor-it-probe-$$"
    TB=$IT_TOP_SRCDIR/scripts/pctor-testbed
}

# it_register_testbed RUNDIR: run 'pctor-testbed down --rundir RUNDIR' when
# the test exits, if a test bed came up there (its state.json exists).
it_register_testbed() { echo "$1" >> "$IT_ROOT/testbeds"; }

# it_testbed_state RUNDIR PYTHON-EXPRESSION: print the expression, evaluated
# on the dict `s` of RUNDIR/state.json.
it_testbed_state() {
    /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" \
        "$1/state.json"
}

# it_require_tor: skip unless tor, tor-gencert and curl are installed. Honours
# TOR (set by 'make check' from configure; "no" when configure found no tor).
it_require_tor() {
    if [ -z "${TOR:-}" ] || [ "$TOR" = no ]; then TOR=tor; fi
    command -v "$TOR" > /dev/null 2>&1 ||
        it_skip "tor is not installed (apt-get install tor); integration tests need it"
    command -v "${TOR_GENCERT:-tor-gencert}" > /dev/null 2>&1 ||
        it_skip "tor-gencert is not installed (it comes with Debian's tor package)"
    command -v curl > /dev/null 2>&1 || it_skip "curl is not installed (apt-get install curl)"
    [ -r /proc/net/tcp ] || it_skip "needs Linux /proc/net/tcp"
    export TOR
}

# it_require_ipv6_loopback PY: skip (77) unless a socket can bind ::1 (the
# IPv6 tests run their relays there).
it_require_ipv6_loopback() {
    "$1" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2> /dev/null ||
        it_skip "this machine has no ::1"
}

# it_run CMD...: run CMD and return its status, but in a way that a signal to
# the test (make check's timeout, ^C) is handled at once: bash defers traps
# while a foreground command runs, not while the `wait` builtin waits. CMD is
# killed by the cleanup if the test exits first.
it_run() {
    local pid rc
    "$@" &
    pid=$!
    echo "$pid $(_it_starttime "$pid")" >> "$IT_ROOT/children"
    wait "$pid"
    rc=$?
    return "$rc"
}

# it_privnet ARGS...: run scripts/pctor-privnet. After "wait NET ..."
# succeeds, also wait (up to 60 s) until every pctor relay that
# it_start_pctor started in NET and that still runs holds a consensus
# listing as many relays as the authorities' (the lines of nodes.txt).
# Without that, a relay may still hold the consensus it fetched before the
# others were listed, and as an exit refuse a BEGIN from a previous hop it
# does not know (RefuseUnknownExits, as tor does); relays fetch the next
# consensus only some seconds after the authorities publish it.
it_privnet() {
    it_run "$PRIVNET" "$@" || return
    [ "$1" = wait ] || return 0
    local net=$2 n nick d got checked=
    [ -s "$net/pctor-relays" ] || return 0
    n=$(grep -c '^[^#]' "$net/nodes.txt")
    while read -r nick; do
        d=$(cat "$net/$nick.dir")
        kill -0 "$(cat "$d/pid")" 2> /dev/null || continue
        if ! it_wait_until 60 _it_consensus_lists "$d/info.log" "$n"; then
            got=$(grep -h 'consensus from' "$d/info.log" | tail -1)
            echo "it_privnet wait: $nick has no consensus listing all $n relays yet (${got:-none})" >&2
            return 1
        fi
        checked="$checked $nick"
    done < "$net/pctor-relays"
    [ -z "$checked" ] || it_log "pctor relays${checked} hold a consensus listing all $n relays"
}

# _it_consensus_lists LOG N: the last consensus pctor logged in LOG as
# accepted or loaded lists at least N relays.
_it_consensus_lists() {
    local got
    got=$(sed -n 's/.* a [a-z]* consensus from .*, \([0-9]*\) relays\.$/\1/p' "$1" | tail -1)
    [ -n "$got" ] && [ "$got" -ge "$2" ]
}

# it_privnet_start DIR ARGS...: start a private tor network in DIR (see
# 'pctor-privnet help'), tied to this shell's lifetime and stopped on exit.
it_privnet_start() {
    local dir=$1
    shift
    it_register_privnet "$dir"
    it_run "$PRIVNET" start "$dir" --owner-pid $$ "$@"
}

# it_net_start ARGS...: a test's private network: pctor-privnet start in a
# new directory with ARGS (e.g. --authorities 1 --relays 3 --exit-relays 0)
# on ports chosen for it, or fail. Sets net (the network's directory) and
# nodes (its nodes.txt).
it_net_start() {
    net=$(it_tmpdir)/net
    it_privnet_start "$net" "$@" --base-port auto || it_fail "pctor-privnet start failed"
    nodes=$net/nodes.txt
}

# it_web_file MB: a web server for the network $net (it_net_start) on a
# port reserved in it, serving MB MiB of random bytes at /file. Sets www
# (the served directory), want (the file's sha256) and hport (the port).
it_web_file() {
    www=$(it_tmpdir)
    head -c $(($1 * 1024 * 1024)) /dev/urandom > "$www/file"
    want=$(sha256sum < "$www/file" | cut -d' ' -f1)
    read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
    it_http_server "$www" "$hport"
}

# it_wait_port HOST PORT TIMEOUT: wait until HOST:PORT accepts TCP connections.
it_wait_port() {
    local host=$1 port=$2 timeout=$3 deadline
    deadline=$((SECONDS + timeout))
    until timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# it_wait_until TIMEOUT CMD...: run CMD every 0.5 s until it succeeds; fails
# after TIMEOUT seconds.
it_wait_until() {
    local timeout=$1 deadline
    shift
    deadline=$((SECONDS + timeout))
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

# it_python3: print the real python3 executable (not a pyenv shim, whose PID
# would not be the interpreter's).
it_python3() {
    local py=${PYTHON3:-python3}
    [ "$py" = no ] && py=python3
    "$py" -c 'import sys; print(sys.executable)' 2>/dev/null
}

# it_tor_on_state NET STATE [TORRC-LINES]: start tor as a relay that
# publishes nothing ("torback"), on a new data directory holding a copy of
# the state file STATE, with the DirAuthority lines of the network NET and
# TORRC-LINES (one option a line): to check that tor reads a state file
# pctor wrote. Sets IT_TOR_DIR (its torrc, notice.log, stdout, data/) and
# IT_TOR_PID (killed by the cleanup).
it_tor_on_state() {
    IT_TOR_DIR=$(it_tmpdir)
    mkdir -m 700 "$IT_TOR_DIR/data"
    cp "$2" "$IT_TOR_DIR/data/state" || it_fail "it_tor_on_state: no state file $2"
    {
        printf '%s\n' "DataDirectory $IT_TOR_DIR/data" "TestingTorNetwork 1" "SocksPort 0" \
            "ORPort 127.0.0.1:auto" "Address 127.0.0.1" "AssumeReachable 1" \
            "PublishServerDescriptor 0" "Nickname torback" \
            "Log notice file $IT_TOR_DIR/notice.log"
        [ -z "${3:-}" ] || printf '%s\n' "$3"
        cat "$1/dirauth.torrc"
    } > "$IT_TOR_DIR/torrc"
    "$TOR" -f "$IT_TOR_DIR/torrc" > "$IT_TOR_DIR/stdout" 2>&1 &
    IT_TOR_PID=$!
    it_register_pid "$IT_TOR_PID" || it_fail "tor did not start: $(tail -3 "$IT_TOR_DIR/stdout")"
}

# it_python3_with MODULES: the path of a python3 that can "import MODULES"
# (e.g. stem, or "stem, prometheus_client"): Debian's /usr/bin/python3
# first (python3-stem and the like are installed for it), else
# it_python3's; returns 1 when neither can. Use:
#     PY=$(it_python3_with stem) || it_fail "python3-stem is not installed"
it_python3_with() {
    local p
    for p in /usr/bin/python3 "$(it_python3)"; do
        [ -x "$p" ] && "$p" -c "import $1" 2> /dev/null && { echo "$p"; return 0; }
    done
    return 1
}

# it_check_results PY OUT CONFIGS WANT: the workload results of an
# experiment report OUT (OUT/results.jsonl) are sound: for each configuration
# in CONFIGS and each CLASS:LEAST in WANT (e.g. "web:4 bulk:1") at least LEAST
# requests succeeded and were counted, each with 0 < connect <= ttfb <= total,
# and no request failed that was not aborted. PY is the python3 to use.
# Prints what is wrong and returns 1 otherwise.
it_check_results() {
    "$1" - "$2" "$3" "$4" <<'PY'
import json, os, sys
out, cfgs = sys.argv[1], sys.argv[2].split()
want = [(c, int(n)) for c, n in (w.split(":") for w in sys.argv[3].split())]
def fail(msg):
    print("results.jsonl:", msg, file=sys.stderr)
    sys.exit(1)
recs = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
for cfg in cfgs:
    for cls, least in want:
        good = [r for r in recs if r["config"] == cfg and r["class"] == cls and r["ok"]
                and r["counted"]]
        if len(good) < least:
            fail(f"{cfg}/{cls}: {len(good)} counted good requests, want {least}")
        for r in good:
            if not 0 < r["connect"] <= r["ttfb"] <= r["total"]:
                fail(f"bad times {r}")
bad = [r for r in recs if not r["ok"] and not r.get("aborted")]
if bad:
    fail(f"failed requests: {bad[:3]}")
PY
}

# it_http_server DIR PORT: serve the files in DIR on 127.0.0.1:PORT (python3
# http.server) until the test exits.
it_http_server() {
    local dir=$1 port=$2 py pid
    py=$(it_python3) || it_skip "python3 is not installed"
    (cd "$dir" && exec "$py" -m http.server "$port" --bind 127.0.0.1) \
        > "$IT_ROOT/http-$port.log" 2>&1 < /dev/null &
    pid=$!
    it_register_pid "$pid" || it_fail "http server on port $port did not start"
    it_wait_port 127.0.0.1 "$port" 20 || it_fail "http server on port $port does not listen"
}

# it_start_pctor NET NICK relay|client|ports EXTRA-TORRC-LINES: start a
# pctor in the private network NET (started with it_privnet_start) with an
# ORPort (relay) or a SocksPort (client) on a reserved port, or with the
# ports EXTRA-TORRC-LINES give (ports: "@PORT@" there is the reserved port;
# one of them must listen on 127.0.0.1:@PORT@), TestingTorNetwork and the
# network's DirAuthority lines, logging at info to its info.log.
# Writes NET/NICK.dir and NET/NICK.port; relays are added to NET/nodes.txt.
it_start_pctor() {
    local net=$1 nick=$2 kind=$3 extra=$4 node port d portline
    read -r node port _ _ < <(it_privnet reserve "$net" --role pctor --nickname "$nick")
    d=$net/$node
    portline="ORPort 127.0.0.1:$port"
    [ "$kind" = client ] && portline="SocksPort 127.0.0.1:$port"
    [ "$kind" = ports ] && portline=
    cat > "$d/torrc" <<EOF
DataDirectory $d/data
$portline
Nickname $nick
Log info file $d/info.log
TestingTorNetwork 1
$(cat "$net/dirauth.torrc")
${extra//@PORT@/$port}
EOF
    "${PCTOR:?}" -f "$d/torrc" > "$d/stderr" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")"
    it_wait_port 127.0.0.1 "$port" 30 || it_fail "$nick did not open its port: $(tail -3 "$d/stderr")"
    echo "$d" > "$net/$nick.dir"
    echo "$port" > "$net/$nick.port"
    if [ "$IT_SANDBOXED" = 1 ]; then
        it_wait_until 20 grep -q 'Sandbox: the system-call filter is active' "$d/info.log" ||
            it_fail "$nick did not log that the sandbox is active"
        grep -q '^Seccomp:[[:space:]]*2$' "/proc/$(cat "$d/pid")/status" ||
            it_fail "$nick does not run under the sandbox's filter"
        it_log "$nick runs with Sandbox 1 (filter active)"
    fi
    if [ "$kind" = relay ]; then
        echo "$nick" >> "$net/pctor-relays"
        echo "$nick $port 0 $(awk '{print $2}' "$d/data/fingerprint") \
$(awk '{print $2}' "$d/data/fingerprint-ed25519") - pctor" >> "$net/nodes.txt"
    fi
}

# it_veth_ns NAME OCTET: a network namespace of the test's own behind a
# veth pair, removed when the test exits: the host side holds ${sub}1 and
# ${sub}3, the namespace side ${sub}2 (sub=10.OCTET.N.; give each test its
# own OCTET). Sets NS (the namespace's name) and sub. Skips without root or
# ip netns. For traffic that must leave from a non-loopback address (tor
# never binds a connection to a loopback destination).
it_veth_ns() {
    [ "$(id -u)" = 0 ] || it_skip "needs root for a network namespace"
    command -v ip > /dev/null || it_skip "ip (iproute2) is not installed"
    NS=$1$$ _IT_VA=${1}a$$ _IT_VB=${1}b$$
    sub=10.$2.$(($$ % 250)).
    trap 'rc=$?; ip link del "$_IT_VA" 2> /dev/null; ip netns del "$NS" 2> /dev/null; (exit $rc); it_cleanup' EXIT
    ip netns add "$NS" 2> /dev/null || it_skip "cannot create network namespaces here"
    ip link add "$_IT_VA" type veth peer name "$_IT_VB" || it_fail "cannot create a veth pair"
    ip link set "$_IT_VB" netns "$NS" || it_fail "veth into the namespace"
    ip addr add "${sub}1/24" dev "$_IT_VA" && ip addr add "${sub}3/24" dev "$_IT_VA" &&
        ip link set "$_IT_VA" up || it_fail "host side of the veth"
    ip netns exec "$NS" ip addr add "${sub}2/24" dev "$_IT_VB" &&
        ip netns exec "$NS" ip link set "$_IT_VB" up &&
        ip netns exec "$NS" ip link set lo up || it_fail "namespace side of the veth"
}

# it_pctor_hop NET NICK: the pctor-circtest hop of a relay started by
# it_start_pctor (its keys read from its DataDirectory).
it_pctor_hop() { echo "pctor:$(cat "$1/$2.dir")/data@127.0.0.1:$(cat "$1/$2.port")"; }

# it_dgram_relays TRANSPORT [P3-TORRC-LINES]: in the network $net
# (it_net_start), pctor relays p1, p2 and p3, each with a DatagramPort and
# CircuitTransport TRANSPORT (backtap, dtls-tcp); p2 is an exit to
# 127.0.0.1 with a MetricsPort; p3 gets P3-TORRC-LINES too. Sets u1 u2 u3
# (their UDP ports), mport (p2's MetricsPort), d1 d2 d3 (their
# directories) and ed1 (p1's Ed25519 identity).
it_dgram_relays() {
    local tr=$1 p3extra=${2-} i
    for i in 1 2 3; do
        read -r _ "u$i" _ < <(it_privnet reserve "$net" --role udp)
    done
    read -r _ mport _ _ < <(it_privnet reserve "$net" --role metrics --nickname metrics)
    it_start_pctor "$net" p1 relay "PublishServerDescriptor 0
CircuitTransport $tr
DatagramPort 127.0.0.1:$u1"
    it_start_pctor "$net" p2 relay "PublishServerDescriptor 0
CircuitTransport $tr
DatagramPort 127.0.0.1:$u2
ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
RefuseUnknownExits 0
ServerDNSResolvConfFile $net/resolv.conf
MetricsPort 127.0.0.1:$mport
MetricsPortPolicy accept 127.0.0.1"
    it_start_pctor "$net" p3 relay "PublishServerDescriptor 0
CircuitTransport $tr
DatagramPort 127.0.0.1:$u3
$p3extra"
    d1=$(cat "$net/p1.dir")
    d2=$(cat "$net/p2.dir")
    d3=$(cat "$net/p3.dir")
    ed1=$(awk '{print $2}' "$d1/data/fingerprint-ed25519")
}

# it_dgram_link A B: a circuit A -> B (over TLS: there is no datagram link
# yet) makes A open a datagram link to B; both ends log it up. Relays of
# it_dgram_relays; uses $CIRCTEST and $nodes.
it_dgram_link() {
    local da db
    da=$(cat "$net/$1.dir")
    db=$(cat "$net/$2.dir")
    "${CIRCTEST:?}" --timeout 60 --nodes "$nodes" "$(it_pctor_hop "$net" "$1")" \
        "$(it_pctor_hop "$net" "$2")" > "$net/circ-$1$2.out" 2>&1 ||
        it_fail "circuit $1 -> $2 failed: $(tail -3 "$net/circ-$1$2.out")"
    it_wait_until 30 grep -q "Datagram link 127.0.0.1:$(_it_dgram_port "$db") (we opened.*is up" "$da/info.log" ||
        it_fail "$1 did not bring up a datagram link to $2: $(grep -i datagram "$da/info.log" | tail -3)"
    it_wait_until 10 grep -q "Datagram link 127.0.0.1:$(_it_dgram_port "$da") (peer opened.*is up" "$db/info.log" ||
        it_fail "$2 did not authenticate $1's datagram link"
}
_it_dgram_port() { sed -n 's/^DatagramPort 127.0.0.1://p' "$1/torrc"; }

# it_dgram_tls_hop: with CircuitTransport on a datagram transport, p1's hop
# to relay1 (tor, no DatagramPort) uses TLS, says so, and the circuit works.
it_dgram_tls_hop() {
    "${CIRCTEST:?}" --timeout 60 --nodes "$nodes" "$(it_pctor_hop "$net" p1)" relay1 > "$net/circ1r.out" 2>&1 ||
        it_fail "circuit p1 -> relay1 (tor) failed: $(tail -3 "$net/circ1r.out")"
    it_wait_until 10 grep -q "CircuitTransport: the hop to 127.0.0.1:[0-9]* uses TLS (the relay announced no DatagramPort)" "$d1/info.log" ||
        it_fail "p1 did not log the TLS fallback: $(grep 'CircuitTransport' "$d1/info.log" | tail -3)"
}

# it_start_published_pctor NET NICK TORRC-LINES [STATE-FILE]: start a pctor
# relay in NET that builds and publishes its descriptors as a relay on the
# real network does (Address 127.0.0.1, AssumeReachable 1, ContactInfo
# "pctor test relay NICK"), with TORRC-LINES added: its DirAuthority lines
# are among them ("$(cat "$NET/dirauth.torrc")" for the network's own), so a
# test can also point it elsewhere. STATE-FILE, when given, becomes its
# state file before it starts. Sets pdir to the relay's directory, which
# holds its pid and orport files. it_pctor_node_line makes its nodes.txt
# line.
it_start_published_pctor() {
    local net=$1 nick=$2 extra=$3 state=${4-} node port
    read -r node port _ _ < <(it_privnet reserve "$net" --role pctor \
        --nickname "$nick") || it_fail "reserve failed"
    pdir=$net/$node
    {
        echo "DataDirectory $pdir/data"
        echo "ORPort 127.0.0.1:$port"
        echo "Address 127.0.0.1"
        echo "Nickname $nick"
        echo "ContactInfo pctor test relay $nick"
        echo "Log info file $pdir/info.log"
        echo "TestingTorNetwork 1"
        echo "AssumeReachable 1"
        printf '%s\n' "$extra"
    } > "$pdir/torrc"
    if [ -n "$state" ]; then
        mkdir -p "$pdir/data" && chmod 700 "$pdir/data"
        cp "$state" "$pdir/data/state"
    fi
    "${PCTOR:?}" -f "$pdir/torrc" > "$pdir/stderr" 2>&1 &
    echo $! > "$pdir/pid"
    it_register_pid "$(cat "$pdir/pid")" || it_fail "$nick did not start: $(cat "$pdir/stderr")"
    it_wait_port 127.0.0.1 "$port" 30 || it_fail "$nick did not open its ORPort"
    echo "$port" > "$pdir/orport"
}

# it_pctor_node_line PDIR NICK: the nodes.txt line of a relay started by
# it_start_published_pctor (no DirPort), with the public ntor key that
# tor's secret_onion_key_ntor ends with (pctor keeps that file too), so
# that pctor-privnet and the tools can build circuits through it.
it_pctor_node_line() {
    local pdir=$1 nick=$2
    echo "$nick $(cat "$pdir/orport") 0 $(awk '{ print $2 }' "$pdir/data/fingerprint")" \
         "$(awk '{ print $2 }' "$pdir/data/fingerprint-ed25519")" \
         "$(tail -c 32 "$pdir/data/keys/secret_onion_key_ntor" | base64 -w0 | tr -d '=') pctor"
}

# it_selftest_unconfirmed NICK DIR ADDRPORT AUTH-DIRPORT: the pctor relay
# NICK (directory DIR, AssumeReachable 0) warns within 60 s that it cannot
# confirm its ORPort ADDRPORT, never says that one is reachable, never
# uploads, and the authority at 127.0.0.1:AUTH-DIRPORT has no descriptor
# of it; otherwise fail. Sets warn to the warning's text.
it_selftest_unconfirmed() {
    local nick=$1 dir=$2 ap=$3 adp=$4 code fp
    warn="Your server has not managed to confirm reachability for its ORPort(s) at $ap."
    it_wait_until 60 grep -qF "$warn" "$dir/info.log" ||
        { tail -20 "$dir/info.log" >&2; it_fail "$nick did not warn that $ap is unreachable"; }
    grep -qF "Self-testing indicates your ORPort $ap " "$dir/info.log" &&
        it_fail "$nick claims its bad ORPort $ap is reachable"
    grep -q "Uploaded descriptor to \|Could not upload our descriptor" "$dir/info.log" &&
        it_fail "$nick uploaded a descriptor although $ap was not confirmed"
    fp=$(awk '{print $2}' "$dir/data/fingerprint")
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        "http://127.0.0.1:$adp/tor/server/fp/$fp")
    [ "$code" = 404 ] || it_fail "the authority has $nick's descriptor (HTTP $code)"
}

# it_tor_client NET TORRC-FILE: start a tor client in the network NET
# (pctor-privnet add-client) with TORRC-FILE's lines added, and wait until
# it has bootstrapped, or fail. Sets cnode (its node) and sport (its
# SocksPort).
it_tor_client() {
    read -r cnode sport _ < <(it_privnet add-client "$1" --torrc-extra "$2" --owner-pid $$) ||
        it_fail "could not start the tor client"
    it_run "$PRIVNET" wait-client "$1" "$cnode" --timeout 120 ||
        it_fail "the tor client did not bootstrap"
}

# it_usr1_line NET NICK TEXT WHAT: send the pctor NICK (it_start_pctor) a
# SIGUSR1 and print the newest line of its info.log that contains TEXT (a
# fixed string), once one more such line came in answer; fails naming WHAT
# when none comes within 30 s.
_it_more_lines() { [ "$(grep -cF "$3" "$1")" -gt "$2" ]; }
it_usr1_line() {
    local d before
    d=$(cat "$1/$2.dir")
    before=$(grep -cF "$3" "$d/info.log")
    kill -USR1 "$(cat "$d/pid")"
    it_wait_until 30 _it_more_lines "$d/info.log" "$before" "$3" ||
        it_fail "$2 printed no $4"
    grep -F "$3" "$d/info.log" | tail -1
}

# it_pctor_alive_quiet NET NICK...: each pctor is running and logged no
# warning or error.
it_pctor_alive_quiet() {
    local net=$1 n d
    shift
    for n in "$@"; do
        d=$(cat "$net/$n.dir")
        kill -0 "$(cat "$d/pid")" || it_fail "$n died: $(tail -3 "$d/stderr")"
        if grep -E '\[(warn|err)\]' "$d/info.log"; then it_fail "$n logged warnings"; fi
    done
}

# it_rss_kb PID: the resident set size of process PID in KiB (VmRSS), for
# the flood tests' memory bounds.
it_rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# _it_dump_logs: the end of every privnet node's logs, for failed tests.
_it_dump_logs() {
    local net f
    while read -r net; do
        for f in "$net"/node*/notice.log "$net"/node*/tor.out; do
            [ -s "$f" ] || continue
            echo "----- last lines of $f" >&2
            tail -n 15 "$f" >&2
        done
        # Relays and clients a test started by hand in a node directory
        # (it_start_pctor's info.log among them; they log at info level:
        # only notices and worse, and descriptor uploads; not the routine
        # consensus and descriptor fetches, which would fill the tail).
        for f in "$net"/node*/pctor.log "$net"/node*/tor.log "$net"/node*/info.log; do
            [ -s "$f" ] || continue
            echo "----- notices of $f" >&2
            grep -E '\[(notice|warn|err)\]|descriptor' "$f" |
                grep -v -E 'a (ns|microdesc) consensus from|Fetching descriptors|served [0-9]+ of the|We have the descriptors of all' |
                tail -n 30 >&2
        done
    done < "$IT_ROOT/privnets"
}

it_cleanup() {
    local rc=$? net pid st i alive
    trap - EXIT
    # First the helper commands still running (it_run), so that a pctor-privnet
    # start cannot launch tors after its network was stopped.
    while read -r pid st; do
        [ -n "$st" ] && [ "$(_it_starttime "$pid")" = "$st" ] && kill -TERM "$pid" 2>/dev/null
    done < "$IT_ROOT/children"
    for ((i = 0; i < 50; i++)); do
        alive=0
        while read -r pid st; do
            [ -n "$st" ] && [ "$(_it_starttime "$pid")" = "$st" ] && alive=1
        done < "$IT_ROOT/children"
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        _it_dump_logs
    fi
    while read -r net; do
        [ -f "$net/state.json" ] &&
            "$IT_TOP_SRCDIR/scripts/pctor-testbed" down --rundir "$net" > /dev/null 2>&1
    done < "$IT_ROOT/testbeds"
    while read -r net; do
        [ -d "$net" ] && "$PRIVNET" stop "$net" > /dev/null 2>&1
    done < "$IT_ROOT/privnets"
    while read -r pid st; do
        [ "$(_it_starttime "$pid")" = "$st" ] && kill -TERM "$pid" 2>/dev/null
    done < "$IT_ROOT/pids"
    for ((i = 0; i < 50; i++)); do
        alive=0
        while read -r pid st; do
            [ "$(_it_starttime "$pid")" = "$st" ] && alive=1
        done < "$IT_ROOT/pids"
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    while read -r pid st; do
        [ "$(_it_starttime "$pid")" = "$st" ] && kill -KILL "$pid" 2>/dev/null
    done < "$IT_ROOT/pids"
    if [ "${IT_KEEP:-0}" = 1 ]; then
        echo "$IT_NAME: keeping $IT_ROOT (IT_KEEP=1)" >&2
    else
        rm -rf "$IT_ROOT"
    fi
    exit "$rc"
}

trap it_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
