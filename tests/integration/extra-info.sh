#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# extra-info.sh -- a pctor relay publishes an extra-info document (dir-spec
# 2.1.2) beside its server descriptor, and tor 0.4.9 authorities accept it.
#
# A private network of 3 tor authorities and 2 tor relays plus one pctor
# relay publishing to them. Once the consensus lists pctor as Running and
# Valid, the test fetches from an authority's DirPort the server descriptor
# (/tor/server/fp/FP) and the extra-info (/tor/extra/fp/FP), and checks:
# the descriptor has an extra-info-digest line; its SHA-1 is the hex SHA-1
# of the extra-info through "router-signature\n" and its SHA-256 the
# base64 SHA-256 of the whole document (so the authority took exactly
# what pctor signed); the document has pctor's nickname and fingerprint,
# its identity-ed25519 certificate equals the descriptor's, and it carries
# write-history/read-history lines with 900-second intervals. The state
# file is seeded (tor's BWHistory* keys) with two past intervals of read
# history, which the extra-info's read-history must carry, and with their
# highest rates (Maxima), which give the descriptor's observed bandwidth; after SIGTERM
# the state file holds the history again in tor's keys, and a tor 0.4.9
# started on a copy of that state file reads it back (its own saved
# read history holds the seeded bytes). pctor runs with the testing option
# __StateSaveInterval 5 seconds, and while it still runs the state file on
# disk must have been rewritten (LastWritten, an info line "Saved the state
# file") with the traffic so far: read history above the seeded bytes and
# some write history. A directory put in the state file's place makes the
# writes fail: one warning only, then a notice when it works again.
# Not in TESTS by default (about 1.5 minutes).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_fail "pctor is not built ($PCTOR)"
PY=$(it_python3) || it_skip "python3 is not installed"

it_net_start --authorities 3 --relays 2 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

state=$(it_tmpdir)/state
ends=$(date -u -d "@$(( $(date +%s) / 900 * 900 ))" '+%Y-%m-%d %H:%M:%S')
# With each interval's highest rate (tor's Maxima, bytes/s): the lower of
# read and write, 61000, is the observed bandwidth the first descriptor
# advertises, before any traffic.
printf 'BWHistoryReadEnds %s\nBWHistoryReadInterval 900\nBWHistoryReadValues 4242000,4343000\nBWHistoryReadMaxima 70000,65000\n' \
    "$ends" > "$state"
printf 'BWHistoryWriteEnds %s\nBWHistoryWriteInterval 900\nBWHistoryWriteValues 4000000,4100000\nBWHistoryWriteMaxima 61000,60000\n' \
    "$ends" >> "$state"
it_start_published_pctor "$net" pctorx \
    "$(cat "$net/dirauth.torrc"; echo "__StateSaveInterval 5 seconds")" "$state"
ppid=$(cat "$pdir/pid")
fp=$(awk '{ print $2 }' "$pdir/data/fingerprint")
it_pctor_node_line "$pdir" pctorx >> "$nodes"

it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list every relay (pctor included) as Running and Valid"

get() { curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport$1"; }
have_extra() { get "/tor/extra/fp/$fp" > "$pdir/extra" && [ -s "$pdir/extra" ]; }
it_wait_until 30 have_extra ||
    it_fail "the authority does not serve pctor's extra-info (/tor/extra/fp/$fp)"
get "/tor/server/fp/$fp" > "$pdir/desc" ||
    it_fail "the authority does not serve pctor's server descriptor"

"$PY" - "$pdir/desc" "$pdir/extra" "$fp" <<'PYEOF' || it_fail "extra-info check failed"
import base64, hashlib, re, sys
desc = open(sys.argv[1]).read()
extra = open(sys.argv[2]).read()
fp = sys.argv[3]
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
m = re.search(r"^extra-info-digest ([0-9A-F]{40}) ([A-Za-z0-9+/]{43})$", desc, re.M)
if not m:
    fail("no extra-info-digest line with both digests in the descriptor")
end = extra.index("\nrouter-signature\n") + len("\nrouter-signature\n")
sha1 = hashlib.sha1(extra[:end].encode()).hexdigest().upper()
sha256 = base64.b64encode(hashlib.sha256(extra.encode()).digest()).decode().rstrip("=")
if sha1 != m.group(1):
    fail("sha1 %s of the served extra-info != %s" % (sha1, m.group(1)))
if sha256 != m.group(2):
    fail("sha256 %s of the served extra-info != %s" % (sha256, m.group(2)))
if not extra.startswith("extra-info pctorx %s\n" % fp):
    fail("first line: " + extra.splitlines()[0])
cert = lambda d: re.search(r"identity-ed25519\n(-----BEGIN ED25519 CERT-----\n.*?-----END ED25519 CERT-----)", d, re.S).group(1)
if cert(desc) != cert(extra):
    fail("identity-ed25519 differs between descriptor and extra-info")
for kw in ("write-history", "read-history"):
    if not re.search(r"^%s \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(900 s\) [0-9,]*$" % kw, extra, re.M):
        fail("no %s line with 900-second intervals" % kw)
bw = re.search(r"^bandwidth (\d+) (\d+) (\d+)$", desc, re.M)
if not bw or int(bw.group(3)) < 61000:
    fail("the observed bandwidth is not the one of the state file's Maxima (61000): %s" %
         (bw.group(0) if bw else "no bandwidth line"))
if not re.search(r"^read-history .* 4242000,4343000(,\d+)*$", extra, re.M):
    fail("read-history does not carry the seeded state: " +
         [l for l in extra.splitlines() if l.startswith("read-history")][0])
print("extra-info ok: sha1 %s" % sha1)
PYEOF
it_log "the authority serves pctor's extra-info and its digests match"

# The state file is written while pctor runs (no exit needed).
bw_sum() { awk -v k="$1" '$1 == k { print $2 }' "$2" | tr ',' '\n' |
    awk '{ s += $1 } END { print s + 0 }'; }
saved_while_running() {
    grep -q '^LastWritten ' "$pdir/data/state" &&
        [ "$(bw_sum BWHistoryReadValues "$pdir/data/state")" -gt 8585000 ] &&
        [ "$(bw_sum BWHistoryWriteValues "$pdir/data/state")" -gt 0 ]
}
# (The history takes traffic from the bandwidth samples every 10 s, the
# first only a baseline, and a change is saved 5-10 s after the check that
# sees it: about 30 s after pctor started on a quiet machine, which a CI
# run at a load of 10 exceeded with a 30-second wait here.)
it_wait_until 90 saved_while_running ||
    it_fail "pctor did not write its traffic to the state file while running: $(grep -E 'BWHistory|LastWritten' "$pdir/data/state" | tr '\n' ' ')"
kill -0 "$ppid" || it_fail "pctor is not running"
grep -q 'Saved the state file' "$pdir/info.log" ||
    it_fail "no info line says the state file was saved"
it_log "pctor wrote its traffic to the state file while running ($(bw_sum BWHistoryReadValues "$pdir/data/state") bytes read)"

# A write that fails (a directory where the state file goes) is warned
# about once however often it is retried, and said when it works again.
# The relay is nearly idle here, and the state file is only written when
# its bandwidth history changed: a one-hop circuit (CREATE_FAST, a few
# cells) makes sure it did.
rm "$pdir/data/state" && mkdir "$pdir/data/state"
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
"$CIRCTEST" --timeout 20 --handshake fast "127.0.0.1:$(cat "$pdir/orport"),$fp" \
    > "$pdir/circtest.out" 2>&1 ||
    it_fail "no circuit to pctor to make traffic: $(tail -n 3 "$pdir/circtest.out")"
state_warns() { grep -c 'Cannot write state file' "$pdir/info.log"; }
it_wait_until 60 grep -q 'Cannot write state file' "$pdir/info.log" ||
    it_fail "no warning when the state file cannot be written"
sleep 16 # three more checks, each failing again
[ "$(state_warns)" -eq 1 ] ||
    it_fail "the failing state file write was warned about $(state_warns) times, not once"
rmdir "$pdir/data/state"
it_wait_until 30 grep -q 'Wrote the state file .* again' "$pdir/info.log" ||
    it_fail "no notice when the state file could be written again"
[ -f "$pdir/data/state" ] || it_fail "the state file was not written again"
it_log "a failing state file write is warned about once and retried until it works"

kill -TERM "$ppid"
for _ in $(seq 1 100); do kill -0 "$ppid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$ppid" 2>/dev/null && it_fail "pctor did not exit on SIGTERM"
grep -q '^BWHistoryReadInterval 900$' "$pdir/data/state" &&
    grep -Eq '^BWHistoryReadValues 4242000,4343000' "$pdir/data/state" &&
    grep -Eq '^BWHistoryReadMaxima 70000,65000' "$pdir/data/state" &&
    grep -Eq '^BWHistoryWriteMaxima 61000,60000' "$pdir/data/state" &&
    grep -Eq '^BWHistoryWriteValues [0-9]' "$pdir/data/state" &&
    grep -q '^BWHistoryWriteEnds ' "$pdir/data/state" ||
    it_fail "the state file lacks the bandwidth history: $(grep BWHistory "$pdir/data/state")"
it_log "the state file keeps the bandwidth history in tor's keys"

# tor reads the history back from pctor's state file.
it_tor_on_state "$net" "$pdir/data/state"
tdir=$IT_TOR_DIR tpid=$IT_TOR_PID
it_wait_until 30 grep -qs "identity key fingerprint" "$tdir/notice.log" ||
    it_fail "tor did not start on pctor's state file: $(tail -n 5 "$tdir/stdout")"
sleep 2
kill -TERM "$tpid"; sleep 1; kill -TERM "$tpid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$tpid" 2>/dev/null && it_fail "tor did not exit"
grep -Ei 'parse state|state file' "$tdir/notice.log" | grep -Ei 'unable|bad|fail' &&
    it_fail "tor complained about pctor's state file"
v=$(awk '$1 == "BWHistoryReadValues" { print $2 }' "$tdir/data/state" | tr ',' '\n' |
    awk '{ s += $1 } END { print s + 0 }')
# (tor keeps whole kilobytes: 4242000 + 4343000 = 8585000 bytes.)
[ "$v" -ge 8580000 ] ||
    it_fail "tor's state after reading pctor's has read history $v, not the seeded 8585000 bytes"
it_log "tor read pctor's bandwidth history back from the state file ($v bytes)"
