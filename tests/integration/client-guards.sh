#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# client-guards.sh -- pctor's SocksPort client keeps entry guards as
# guard-spec says and checks the consensus against its authorities' keys
# (issue 21).
#
# A private network of 1 tor authority and 5 tor relays (one a
# loopback-only exit; the authority votes every relay Guard), and a pctor
# client c1 with ExitNodes the exit, ExcludeNodes the authority, no
# EntryNodes, conflux off. Checks:
#   1. c1 samples guards into DataDirectory/state (tor's "Guard
#      in=default rsa_id=..." lines), confirms the guard its first circuit
#      used (confirmed_idx=0) and carries a download through it;
#   1b. with cbtmincircs=10 in the consensus, c1 learns its circuit build
#      timeout from the build times (path-spec 2.4) and keeps them in the
#      state file (tor's CircuitBuildTimeBin lines);
#   2. after a restart c1 reads the state and uses the same primary guard
#      (its state keeps the same sample), reads its build times back (the
#      timeout stays learned); a line of tor's it does not use survives
#      the rewrite;
#   3. the primary guard's tor process is killed: c1 says the guard is
#      unreachable, builds through the next primary guard (confirmed as
#      #1) and downloads again;
#   4. a client c2 whose DirAuthority line has another v3ident (an
#      authority key it does not know) refuses every consensus with a
#      warning that names the signatures, caches none and builds nothing;
#   5. a state file with garbage: c3 warns once, moves it to state.bad and
#      starts with a fresh state; its torrc carries tor's guard options
#      (NumPrimaryGuards 2, NumEntryGuards 1, GuardLifetime in months,
#      NumDirectoryGuards, AvoidDiskWrites): accepted, and it keeps two
#      primary guards instead of three;
#   6. a tor 0.4.9 client's state file: a pctor client c4 started on it
#      uses tor's confirmed guard; tor started again on what c4 wrote
#      keeps that guard and does not complain.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}

net=$(it_tmpdir)/net
# Learn the build timeout from 10 circuits instead of 100 (and allow a
# lower floor), through the consensus parameters as tor would.
cbtparams=$(it_tmpdir)/cbt.torrc
echo "ConsensusParams cbtmincircs=10 cbtmintimeout=500" > "$cbtparams"
it_privnet_start "$net" --authorities 1 --relays 5 --exit-relays 1 \
    --torrc-extra "authority=$cbtparams" \
    --base-port auto || it_fail "pctor-privnet start failed"
it_privnet wait "$net" --timeout 120 --flags Running,Valid,Guard ||
    it_fail "the consensus does not list every relay as a guard"

www=$(it_tmpdir)
head -c $((256 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

exitnick=$(awk '$7 == "exit" { print $1; exit }' "$net/nodes.txt")
[ -n "$exitnick" ] || it_fail "no exit in nodes.txt"

authnick=$(awk '$7 == "authority" { print $1; exit }' "$net/nodes.txt")
# Plain circuits (a conflux set's second leg takes the next primary guard,
# which would blur "the guard c1 uses"); the authority is no guard of c1's
# (step 3 stops the guard, and stopping the only authority would stop the
# consensus too: another test).
it_start_pctor "$net" c1 client "ExitNodes $exitnick
ExcludeNodes $authnick
ConfluxEnabled 0"
d=$(cat "$net/c1.dir") socks=$(cat "$net/c1.port")
log=$d/info.log state=$d/data/state

get() { # USER
    curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$socks" \
        --proxy-user "$1:x" "http://127.0.0.1:$hport/file" -o "$net/out" &&
        [ "$(sha256sum < "$net/out" | cut -d' ' -f1)" = "$want" ]
}
# The confirmed guard with index N in the state file (its rsa_id).
confirmed() { # N
    sed -n "s/^Guard in=default rsa_id=\([0-9A-F]*\) .*confirmed_idx=$1\( .*\)\?\$/\1/p" "$state"
}
nick_of() { awk -v fp="$1" '$4 == fp { print $1 }' "$net/nodes.txt"; }

# --- 1. sampled and confirmed guards in the state file -------------------------
n=0
it_wait_until 120 get u$((n += 1)) || it_fail "c1 never carried a download: $(grep -E 'Guard|guard|path' "$log" | tail -5)"
it_wait_until 20 test -n "$(confirmed 0)" || it_fail "no confirmed guard in $state: $(cat "$state" 2>/dev/null)"
g0=$(confirmed 0)
n_sampled=$(grep -c '^Guard in=default ' "$state")
[ "$n_sampled" -ge 5 ] || it_fail "only $n_sampled sampled guards in the state file"
grep -q "^Guard in=default rsa_id=$g0 nickname=[A-Za-z0-9]* sampled_on=20[0-9-]*T[0-9:]* sampled_idx=[0-9]* sampled_by=pctor-[^ ]* listed=1 confirmed_on=20[0-9-]*T[0-9:]* confirmed_idx=0\$" "$state" ||
    it_fail "the confirmed guard's line is not in tor's format: $(grep "$g0" "$state")"
grep -q "^LastWritten 20" "$state" || it_fail "no LastWritten in the state file"
it_log "c1 sampled $n_sampled guards, confirmed $(nick_of "$g0") (\$$g0)"
grep -q "Building a circuit $(nick_of "$g0") -> " "$log" ||
    it_fail "no circuit through the confirmed guard $(nick_of "$g0")"

# --- 1b. the build timeout is learned (cbtmincircs=10 here) -------------------
for i in $(seq 12); do get cbt$i || it_fail "download cbt$i failed"; done
it_wait_until 20 grep -q 'Learned a circuit build timeout of [0-9]* ms from [0-9]* circuits' "$log" ||
    it_fail "no build timeout learned: $(grep -E 'built in|timeout' "$log" | tail -5)"
it_log "$(grep -h -m1 'Learned a circuit build timeout' "$log" | sed 's/.*\] //')"

# --- 2. restart: the same primary guard ------------------------------------------
sample_before=$(grep '^Guard in=default ' "$state" | sed 's/.* rsa_id=\([0-9A-F]*\) .*/\1/')
kill "$(cat "$d/pid")"
it_wait_until 20 bash -c "! kill -0 $(cat "$d/pid") 2>/dev/null" || it_fail "c1 did not stop"
grep -q '^CircuitBuildTimeBin [0-9]*[27]5 [0-9]*$' "$state" ||
    it_fail "no build times in the state file: $(grep -v '^Guard' "$state")"
total=$(sed -n 's/^TotalBuildTimes //p' "$state")
[ "${total:-0}" -ge 10 ] || it_fail "only ${total:-0} build times in the state file"
echo "BWHistoryReadInterval 900" >> "$state" # a line of tor's we do not use
mv "$log" "$log.1"
"$PCTOR" -f "$d/torrc" > "$d/stderr" 2>&1 &
echo $! > "$d/pid"
it_register_pid "$(cat "$d/pid")"
it_wait_port 127.0.0.1 "$socks" 30 || it_fail "c1 did not restart"
grep -q 'sampled guards read from the state file' "$log" ||
    it_fail "c1 did not read its guards: $(head -20 "$log")"
grep -q "Read $total circuit build times from the state file; build timeout [0-9]* ms (learned)" "$log" ||
    it_fail "c1 did not read its build times: $(grep -i 'build time' "$log" | head -3)"
it_wait_until 120 get u$((n += 1)) || it_fail "c1 carried nothing after the restart"
grep -q "Building a circuit $(nick_of "$g0") -> " "$log" ||
    it_fail "after the restart c1 did not use its primary guard $(nick_of "$g0"): $(grep 'Building a circuit' "$log" | head -3)"
if grep 'Building a circuit' "$log" | grep -v "Building a circuit $(nick_of "$g0") -> " | grep -q .; then
    it_fail "after the restart c1 used another guard: $(grep 'Building a circuit' "$log" | head -5)"
fi
[ "$(confirmed 0)" = "$g0" ] || it_fail "the confirmed guard changed across the restart"
sample_after=$(grep '^Guard in=default ' "$state" | sed 's/.* rsa_id=\([0-9A-F]*\) .*/\1/')
[ "$sample_before" = "$sample_after" ] || it_fail "the sample changed across the restart"
it_log "after a restart c1 kept its sample and primary guard $(nick_of "$g0")"

# --- 3. the primary guard goes down --------------------------------------------
gnick=$(nick_of "$g0")
gdir=$(dirname "$(grep -l "^Nickname $gnick\$" "$net"/node*/torrc)")
kill "$(cat "$gdir/pid")" || it_fail "cannot stop $gnick"
it_log "stopped guard $gnick"
# New circuits (new SOCKS credentials): the first through the dead guard
# fails at its first hop; the stream is retried through the next guard.
it_wait_until 120 get down$((n += 1)) || it_fail "no download after the guard went down: $(grep -E 'uarantee|guard|Guard' "$log" | tail -5)"
grep -q "primary guard $gnick is unreachable" "$log" ||
    it_fail "c1 did not notice that $gnick is down: $(grep -i guard "$log" | tail -5)"
it_wait_until 20 test -n "$(confirmed 1)" || it_fail "no second confirmed guard"
g1=$(confirmed 1)
[ "$g1" != "$g0" ] || it_fail "the second confirmed guard is the dead one"
grep -q "Building a circuit $(nick_of "$g1") -> " "$log" || it_fail "no circuit through $(nick_of "$g1")"
it_log "c1 replaced $gnick with $(nick_of "$g1") (confirmed #1)"
grep -q '^BWHistoryReadInterval 900$' "$state" || it_fail "tor's line was not kept in the state file"
it_pctor_alive_quiet "$net" c1

# --- 4. a consensus signed by keys we do not know ------------------------------
read -r kw anick orp no2 v3 addr fp < "$net/dirauth.torrc"
case ${v3#v3ident=} in F*) w=E ;; *) w=F ;; esac
wrong="$kw $anick $orp $no2 v3ident=$w${v3#v3ident=?} $addr $fp"
read -r node2 port2 _ _ < <(it_privnet reserve "$net" --role pctor --nickname c2)
d2=$net/$node2
cat > "$d2/torrc" <<EOT
DataDirectory $d2/data
SocksPort 127.0.0.1:$port2
Log info file $d2/info.log
TestingTorNetwork 1
$wrong
EOT
"$PCTOR" -f "$d2/torrc" > "$d2/stderr" 2>&1 &
echo $! > "$d2/pid"
it_register_pid "$(cat "$d2/pid")"
it_wait_until 60 grep -q 'Refusing a consensus' "$d2/info.log" ||
    it_fail "c2 did not refuse the consensus: $(grep -i consensus "$d2/info.log" | tail -5)"
line=$(grep -m1 'Refusing a consensus' "$d2/info.log")
echo "$line" | grep -q '\[warn\]' || it_fail "the refusal is not a warning: $line"
echo "$line" | grep -q "0 good signatures" && echo "$line" | grep -q "not configured" ||
    it_fail "the refusal does not say why: $line"
[ -e "$d2/data/cached-microdesc-consensus" ] && it_fail "c2 cached an unverified consensus"
curl -sf --max-time 20 --socks5-hostname "127.0.0.1:$port2" \
    "http://127.0.0.1:$hport/file" -o /dev/null && it_fail "c2 carried a stream"
grep -q 'Building a circuit' "$d2/info.log" && it_fail "c2 built a circuit"
kill -0 "$(cat "$d2/pid")" || it_fail "c2 died"
it_log "c2: ${line#*] }"

# --- 5. a broken state file ----------------------------------------------------
read -r node3 port3 _ _ < <(it_privnet reserve "$net" --role pctor --nickname c3)
d3=$net/$node3
mkdir -p -m 700 "$d3/data"
printf 'Guard in=default rsa_id=00\n=this is not a state line\n' > "$d3/data/state"
sed -e "s|$d2|$d3|g" -e "s|:$port2|:$port3|" "$d2/torrc" | grep -v '^DirAuthority' > "$d3/torrc"
cat "$net/dirauth.torrc" >> "$d3/torrc"
cat >> "$d3/torrc" <<EOT
NumPrimaryGuards 2
NumEntryGuards 1
GuardLifetime 3 months
NumDirectoryGuards 3
AvoidDiskWrites 1
EOT
"$PCTOR" -f "$d3/torrc" > "$d3/stderr" 2>&1 &
echo $! > "$d3/pid"
it_register_pid "$(cat "$d3/pid")"
it_wait_port 127.0.0.1 "$port3" 30 || it_fail "c3 did not start: $(tail -3 "$d3/stderr")"
grep -q "\[warn\] State file $d3/data/state line 2 does not start with a key.*moved it to $d3/data/state.bad" "$d3/info.log" ||
    it_fail "no clear warning for the broken state file: $(grep -i state "$d3/info.log" | head -3)"
[ -e "$d3/data/state.bad" ] || it_fail "the broken state file was not kept as state.bad"
kill -0 "$(cat "$d3/pid")" || it_fail "c3 died"
it_log "a broken state file is moved aside with a warning"
# NumPrimaryGuards 2: two primary guards, never three.
it_wait_until 90 grep -q 'Guards (default): primary guards now [A-Za-z0-9]*, [A-Za-z0-9]*$' "$d3/info.log" ||
    it_fail "c3 did not keep 2 primary guards: $(grep -i 'primary guards' "$d3/info.log" | tail -3)"
grep -q 'primary guards now [A-Za-z0-9]*, [A-Za-z0-9]*, ' "$d3/info.log" &&
    it_fail "c3 kept more than 2 primary guards: $(grep 'primary guards now' "$d3/info.log")"
cat "$d3/info.log" "$d3/stderr" | grep -q 'NumDirectoryGuards has no effect' ||
    it_fail "no notice that NumDirectoryGuards does nothing"
it_log "c3: $(grep -m1 'primary guards now' "$d3/info.log" | sed 's/.*\] //')"

# --- 6. the guards move between tor and pctor with the state file --------------
read -r tnode tsocks _ < <(it_privnet add-client "$net" --owner-pid $$) ||
    it_fail "cannot start a tor client"
tdir=$net/$tnode
it_register_pid "$(cat "$tdir/pid")"
it_privnet wait-client "$net" "$tnode" --timeout 120 || it_fail "the tor client did not bootstrap"
it_wait_until 60 curl -sf --max-time 30 --socks5-hostname "127.0.0.1:$tsocks" \
    "http://127.0.0.1:$hport/file" -o /dev/null || it_fail "no download through the tor client"
stop_tor() {
    local pid
    pid=$(cat "$tdir/pid")
    kill -TERM "$pid"
    it_wait_until 30 bash -c "! kill -0 $pid 2>/dev/null" || it_fail "the tor client did not stop"
}
stop_tor
tconf() { sed -n "s/^Guard in=default rsa_id=\([0-9A-F]*\) .*confirmed_idx=0\( .*\)\?\$/\1/p" "$1"; }
tg=$(tconf "$tdir/state")
[ -n "$tg" ] || it_fail "tor wrote no confirmed guard: $(grep '^Guard' "$tdir/state")"
read -r node4 port4 _ _ < <(it_privnet reserve "$net" --role pctor --nickname c4)
d4=$net/$node4
mkdir -p -m 700 "$d4/data"
cp "$tdir/state" "$d4/data/state"
sed -e "s|$d|$d4|g" -e "s|:$socks\$|:$port4|" -e '/^ExcludeNodes/d' "$d/torrc" > "$d4/torrc"
"$PCTOR" -f "$d4/torrc" > "$d4/stderr" 2>&1 &
echo $! > "$d4/pid"
it_register_pid "$(cat "$d4/pid")"
it_wait_port 127.0.0.1 "$port4" 30 || it_fail "c4 did not start: $(tail -3 "$d4/stderr")"
socks=$port4 log=$d4/info.log
it_wait_until 120 get tor2pctor || it_fail "c4 carried nothing"
grep -q 'sampled guards read from the state file' "$log" || it_fail "c4 did not read tor's guards"
grep -q "primary guards now $(nick_of "$tg")," "$log" ||
    it_fail "tor's guard $(nick_of "$tg") is not c4's first primary guard: $(grep 'primary guards now' "$log" | head -3)"
# (tor's guard may be the exit c4 is pinned to: then c4 uses the next one)
if [ "$(nick_of "$tg")" != "$exitnick" ]; then
    grep -q "Building a circuit $(nick_of "$tg") -> " "$log" ||
        it_fail "c4 did not use tor's guard $(nick_of "$tg"): $(grep 'Building a circuit' "$log" | head -3)"
fi
[ "$(tconf "$d4/data/state")" = "$tg" ] || it_fail "c4 changed the confirmed guard"
it_log "pctor took over tor's state file and its guard $(nick_of "$tg")"
kill "$(cat "$d4/pid")"
it_wait_until 20 bash -c "! kill -0 $(cat "$d4/pid") 2>/dev/null" || it_fail "c4 did not stop"
# And back: tor reads what pctor wrote and keeps it.
cp "$d4/data/state" "$tdir/state"
"$TOR" -f "$tdir/torrc" --defaults-torrc "$net/torrc-defaults" < /dev/null \
    > "$tdir/tor.out" 2>&1 &
echo $! > "$tdir/pid"
it_register_pid "$(cat "$tdir/pid")"
it_wait_until 120 bash -c "[ \$(grep -c 'Bootstrapped 100%' '$tdir/notice.log') -ge 2 ]" ||
    it_fail "the tor client did not bootstrap on pctor's state"
stop_tor
[ "$(tconf "$tdir/state")" = "$tg" ] || it_fail "tor changed the confirmed guard: $(grep '^Guard' "$tdir/state")"
if grep -iE 'state|guard' "$tdir/notice.log" | grep -E '\[(warn|err)\]'; then
    it_fail "tor complained about pctor's state file"
fi
it_log "tor read pctor's state file back and kept its guard"
it_log "guard and consensus checks passed"
