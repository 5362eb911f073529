#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# testbed-dgram.sh -- the test bed with datagram circuit transports
# (tests/data/testbed/dgram.toml): a tor authority, pctor relays g, m and
# exit x with DatagramPort and CircuitTransport backtap, and a pctor client
# c with `relay = true` and a DatagramPort, pinned to g, m, x. Checks:
#   1. `up` waited for c's datagram link to g and for the relays' own
#      datagram links g-m and m-x (the state records them) and closed the
#      circuits built before them.
#   2. A download through c (curl --socks5-hostname) has the file's sha256.
#   3. The hosts' own counters (SIGUSR1 statistics, read by the experiment
#      runner's transport_counters): during the download c, g and m each
#      extended at least one hop over BackTap and none over TLS to a relay
#      whose DatagramPort they knew (experiment.transport_check passes).
#   4. `down` leaves no namespace of the run.
#
# Skipped (77) unless run as root with tor and pctor-delayd. About 60 s.

. "$(dirname "$0")/lib.sh"
set -u

it_require_testbed
command -v curl > /dev/null || it_skip "needs curl"
rundir=$(it_tmpdir)/run
it_register_testbed "$rundir"   # taken down whatever happens
tb() { it_run "$TB" "$@"; }
state() { it_testbed_state "$rundir" "$1"; }   # PYTHON-EXPRESSION on the state dict `s`
counters() { # OUT: the counters of c, g, m (pctor_lab.experiment.transport_counters)
    PYTHONPATH=$IT_TOP_SRCDIR/scripts /usr/bin/python3 - "$rundir/state.json" "$1" <<'PY'
import json, sys
from pctor_lab.experiment import transport_counters
hosts = json.load(open(sys.argv[1]))["hosts"]
json.dump(transport_counters(hosts, {n: "backtap" for n in ("c", "g", "m")}),
          open(sys.argv[2], "w"))
PY
}

t0=$SECONDS
tb up "$IT_TOP_SRCDIR/tests/data/testbed/dgram.toml" --rundir "$rundir" --tor "$TOR" \
    --pctor "$PCTOR" --delayd "$DELAYD" > /dev/null || it_fail "pctor-testbed up failed"
it_log "network up in $((SECONDS - t0)) s"
runid=$(state 's["runid"]')

# 1. what up waited for
[ "$(state 's["hosts"]["c"].get("datagram_link") == s["hosts"]["g"]["ip"] + ":9002"')" = True ] ||
    it_fail "c: no datagram link to g recorded: $(state 's["hosts"]["c"].get("datagram_link")')"
pairs=$(state '" ".join(s["relay_datagram_links"]["pairs"])')
for p in g-m m-x; do
    case " $pairs " in *" $p "*) ;; *) it_fail "relay datagram link $p not waited for ($pairs)";; esac
done
it_log "up waited for c -> g and the relay links $pairs"

# 2. a download through c
counters "$IT_ROOT/before.json" || it_fail "no counters before the download"
web=$(state 's["hosts"]["web"]["ip"]')
want=$(state "s['hosts']['web']['files']['2MiB']['sha256']")
got=$(tb exec --rundir "$rundir" c -- curl -sf --max-time 60 \
    --socks5-hostname 127.0.0.1:9050 "http://$web/2MiB" | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || it_fail "2MiB through c: sha256 $got, want $want"
it_log "2MiB through c: sha256 ok"

# 3. every hop of its circuit over BackTap, by the hosts' own counters
counters "$IT_ROOT/after.json" || it_fail "no counters after the download"
PYTHONPATH=$IT_TOP_SRCDIR/scripts /usr/bin/python3 - "$IT_ROOT/before.json" \
    "$IT_ROOT/after.json" <<'PY' || it_fail "the hops did not all take BackTap"
import json, sys
from pctor_lab.experiment import transport_check
before, after = (json.load(open(p)) for p in sys.argv[1:3])
assert all(a["transport"] == "BackTap" for a in after.values()), after
hops, problem = transport_check(before, after)
print("hops during the download:", hops, file=sys.stderr)
assert problem is None, problem
for n in ("c", "g", "m"):
    assert hops[n]["carried"] >= 1, (n, hops[n])
PY

# 4. down
tb down --rundir "$rundir" || it_fail "pctor-testbed down failed"
if ip netns list | grep -q "^tb$runid-"; then
    it_fail "namespaces left behind: $(ip netns list | grep "^tb$runid-" | tr '\n' ' ')"
fi
it_log "done in $((SECONDS - t0)) s"
