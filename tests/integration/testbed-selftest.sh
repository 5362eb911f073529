#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# testbed-selftest.sh -- `pctor-testbed selftest` on the tiny topology
# (scripts/testbed/tiny.toml): builds the namespaces and emulated links only
# (HTB rate, nft loss, pctor-delayd delay/jitter), measures RTT with ICMP
# echoes, rate with bulk TCP (UDP on lossy links) and loss by counting UDP
# datagrams, each against its configured value with a stated tolerance, then
# checks that no namespace or process of the run is left.
#
# Before that (and without root), `pctor-testbed check` must accept the
# shipped test-bed files and refuse malformed ones with a message naming the
# problem. The link part is skipped (77) unless run as root with
# pctor-delayd built (libnetfilter-queue and libmnl found by configure).
# About 75 s.

. "$(dirname "$0")/lib.sh"
set -u

TB=$IT_TOP_SRCDIR/scripts/pctor-testbed
/usr/bin/python3 -c 'import tomllib' 2> /dev/null || it_skip "needs python3 >= 3.11 (tomllib)"

# First, without root: `check` accepts the shipped files and refuses
# malformed ones with a message naming the problem.
for f in tiny small; do
    "$TB" check "$IT_TOP_SRCDIR/scripts/testbed/$f.toml" > /dev/null ||
        it_fail "check refuses scripts/testbed/$f.toml"
done
cfgdir=$(it_tmpdir)
bad() { # EXPECTED-MESSAGE-PART TOML
    printf '%s\n' "$2" > "$cfgdir/bad.toml"
    if "$TB" check "$cfgdir/bad.toml" > /dev/null 2> "$cfgdir/err"; then
        it_fail "check accepted: $2"
    fi
    grep -q -- "$1" "$cfgdir/err" || it_fail "expected '$1' for: $2; got: $(cat "$cfgdir/err")"
}
A='[[host]]
name = "a"
role = "authority"'
bad "unknown key 'bandwidth'" '[[host]]
name = "a"
bandwidth = 5'
bad "bad rate '10mbps'" '[[host]]
name = "a"
up = "10mbps"'
bad "loss_up_pct: must be a number in" '[[host]]
name = "a"
loss_pct = 150'
bad "delay_down_ms: must be a number" '[[host]]
name = "a"
delay_down_ms = "5"'
bad "used twice" '[[host]]
name = "a"
[[host]]
name = "A"'
bad "is reserved" '[[host]]
name = "core"'
bad "may not set DirAuthority" "$A
[[host]]
name = \"r\"
role = \"relay\"
torrc = [\"DirAuthority x orport=1 no-v2 v3ident=00 1.2.3.4:5 00\"]"
bad "may not set TestingTorNetwork" "$A
[[host]]
name = \"r\"
role = \"relay\"
torrc = \"TestingTorNetwork 0\""
bad "authorities run tor" '[[host]]
name = "a"
role = "authority"
binary = "pctor"'
bad "clients need at least one exit" "$A
[[host]]
name = \"c\"
role = \"client\""
bad "need at least one authority" '[[host]]
name = "r"
role = "relay"'
bad "not a client host" "$A
[[host]]
name = \"e\"
role = \"exit\"
[[traffic]]
client = \"e\"
model = \"web\""
bad "must be one of" '[[host]]
name = "a"
role = "router"'
bad "bad.toml" '[[host]
name = "a"'
bad "no \[\[host\]\] entries" '[testbed]
name = "x"'
it_log "check: shipped files accepted, 15 malformed files refused"

[ "$(id -u)" = 0 ] || it_skip "needs root (network namespaces)"
DELAYD=${PCTOR_DELAYD:-${top_builddir:?}/src/tools/delayd/pctor-delayd}
[ -x "$DELAYD" ] || it_skip "pctor-delayd was not built (apt-get install libnetfilter-queue-dev libmnl-dev; re-run configure)"
command -v ip > /dev/null && command -v tc > /dev/null && command -v nft > /dev/null &&
    command -v iptables-restore > /dev/null ||
    it_skip "needs iproute2, nftables and iptables"
ip netns add "pctor-tb-probe-$$" 2> /dev/null || it_skip "cannot create network namespaces here"
ip netns del "pctor-tb-probe-$$"

rundir=$(it_tmpdir)/run
out=$IT_ROOT/selftest.out
it_log "selftest of scripts/testbed/tiny.toml"
it_run "$TB" selftest "$IT_TOP_SRCDIR/scripts/testbed/tiny.toml" --rundir "$rundir" \
    --delayd "$DELAYD" > "$out"
rc=$?
cat "$out" >&2
[ -f "$rundir/state.json" ] || it_fail "no state file in $rundir"
runid=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runid"])' \
    "$rundir/state.json")
# Nothing of the run may be left, pass or fail.
if ip netns list | grep -q "^tb$runid-"; then
    it_fail "namespaces left behind: $(ip netns list | grep "^tb$runid-" | tr '\n' ' ')"
fi
for f in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' 2> /dev/null < "$f" | grep -q "$rundir/"; then
        it_fail "a process naming $rundir is still running: $f"
    fi
done
[ "$rc" = 0 ] || it_fail "selftest reported figures outside their tolerance (exit $rc)"
grep -q ' 0 failed$' "$out" || it_fail "no summary line in the selftest output"
n=$(grep -c ' ok$' "$out")
[ "$n" -ge 20 ] || it_fail "only $n checked figures"
it_log "all $n link figures within tolerance; nothing left behind"
