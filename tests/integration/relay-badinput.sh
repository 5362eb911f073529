#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# relay-badinput.sh -- pctor against bad input from the network.
#
# Starts one pctor relay on 127.0.0.1 and lets tor_link_client.py (a raw
# link-protocol client, Python standard library only) misbehave at it, each
# case on fresh TLS connections: cells before or instead of VERSIONS, bad
# VERSIONS/NETINFO/CERTS/AUTHENTICATE cells (garbage, missing types, flipped
# signature bytes in each certificate of the chain), then, on an open
# connection, unknown commands, cells for circuits that don't exist, bad
# CREATE/CREATE2 cells, a garbage RELAY cell, a DESTROY for another
# connection's circuit, too many RELAY cells behind a CREATE2 whose
# handshake is pending, truncated and oversized cells, and a peer that
# floods requests without reading the answers.
#
# For every case the client checks what pctor did (closed the connection,
# answered with a DESTROY, or ignored the cell and kept the connection
# usable) and this script checks the log line pctor wrote for it, among the
# lines the case added to info.log. Afterwards the same pctor process must
# still serve well-behaved clients (pctor-circtest with ntor, ntor v3 and
# CREATE_FAST) while an idle TCP connection is held open, log no warning, and
# exit cleanly on SIGTERM with no sanitizer report on stderr.
#
# Needs: python3 (skipped with 77 without it); the binaries from
# $top_builddir (set by make check) or $PCTOR and $PCTOR_CIRCTEST.

. "$(dirname "$0")/lib.sh"
set -u

PY=$(it_python3) || it_skip "python3 is not installed"
CLIENT=$IT_LIBDIR/tor_link_client.py
if [ -z "${PCTOR:-}" ] || [ -z "${PCTOR_CIRCTEST:-}" ]; then
    [ -n "${top_builddir:-}" ] ||
        it_fail "set top_builddir (make check does) or PCTOR and" \
            "PCTOR_CIRCTEST"
fi
PCTOR=${PCTOR:-$top_builddir/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-$top_builddir/src/tools/circtest/pctor-circtest}
[ -x "$PCTOR" ] && [ -x "$CIRCTEST" ] || it_fail "pctor binaries not built"

# running PID: is PID alive? (pctor is our child: once dead it stays a
# zombie, which kill -0 still finds, until we wait for it.)
running() {
    local st
    st=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
    st=${st##*) }
    [ "${st%% *}" != Z ]
}

dir=$(it_tmpdir)
datadir=$dir/data
log=$dir/info.log

# Start pctor on a free port (asked from the kernel; retried if another
# process takes it before pctor binds it).
free_port() {
    "$PY" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
pid=
for attempt in 1 2 3; do
    port=$(free_port) || it_fail "cannot find a free port"
    cat > "$dir/torrc" <<EOF
DataDirectory $datadir
ORPort 127.0.0.1:$port
Nickname badinput
Log info file $log
TestingTorNetwork 1
# A private network needs its own authorities; this relay publishes to none.
DirAuthority testauth orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002
PublishServerDescriptor 0
EOF
    "$PCTOR" -f "$dir/torrc" > "$dir/stderr" 2>&1 &
    pid=$!
    it_register_pid "$pid"
    if it_wait_port 127.0.0.1 "$port" 30 && running "$pid"; then
        break
    fi
    running "$pid" && it_fail "pctor did not open its ORPort"
    cat "$dir/stderr" "$log" 2> /dev/null | grep -q "in use" ||
        it_fail "pctor exited: $(tail -5 "$dir/stderr")"
    it_log "port $port was taken; retrying"
    pid=
done
[ -n "$pid" ] || it_fail "could not start pctor on a free port"
it_log "pctor (pid $pid) listens on 127.0.0.1:$port"

# new_lines_have FROM WANT: does a line of info.log after line FROM match
# WANT? WANT is "TEXT" (a fixed string on any line) or "close:TEXT" (pctor
# closed one of the case's connections -- named by its local port, in
# $ports -- for a reason that contains TEXT).
new_lines_have() {
    local from=$1 want=$2 p
    case $want in
    close:*)
        for p in $ports; do
            tail -n +"$((from + 1))" "$log" |
                grep -F "Closing channel" | grep -E "127\.0\.0\.1:$p[: ]" |
                grep -qF -- "${want#close:}" && return 0
        done
        return 1 ;;
    *)
        tail -n +"$((from + 1))" "$log" | grep -qF -- "$want" ;;
    esac
}

# run_case NAME WANT...: run one client case, then check pctor's log.
n_cases=0
n_skipped=0
ports=
run_case() {
    local name=$1 before out rc want
    shift
    before=$(wc -l < "$log")
    out=$("$PY" "$CLIENT" --port "$port" --datadir "$datadir" \
        --case "$name" 2>&1)
    rc=$?
    ports=$(sed -n 's/^local ports: //p' <<< "$out")
    if [ "$rc" = 77 ]; then
        it_log "$name: skipped: $out"
        n_skipped=$((n_skipped + 1))
        return
    fi
    [ "$rc" = 0 ] || it_fail "case $name: $out"
    for want in "$@"; do
        it_wait_until 5 new_lines_have "$before" "$want" ||
            it_fail "case $name: pctor did not log \"${want#close:}\"$(
                printf '\n%s' "$out")$(printf '\nnew log lines:\n'
                tail -n +"$((before + 1))" "$log" | tail -n 20)"
    done
    running "$pid" || it_fail "pctor died during case $name"
    n_cases=$((n_cases + 1))
    it_log "$name: ok"
}

# 1. Before and during the link handshake: the connection is closed.
run_case first-not-versions "close:first cell was not VERSIONS"
run_case versions-odd "VERSIONS cell has odd length 3" \
    "close:malformed VERSIONS cell"
run_case versions-none-common "close:no link protocol version in common"
run_case versions-empty "close:no link protocol version in common"
run_case create-during-handshake \
    "close:cell other than NETINFO during the handshake"
run_case netinfo-malformed "close:malformed NETINFO cell"
run_case authenticate-before-certs "close:AUTHENTICATE before CERTS"
run_case certs-garbage "truncated" "close:malformed CERTS cell"
run_case certs-duplicate-type "lists certificate type 2 twice" \
    "close:malformed CERTS cell"
run_case certs-255-empty \
    "close:RSA identity certificate is not validly self-signed"
run_case certs-missing-auth "close:CERTS cell lacks a required certificate"
run_case certs-wrong-cert-type \
    "close:malformed Ed25519 signing->link/auth certificate"
run_case certs-rsa-bad-signature "certificate is not signed by its own key" \
    "close:RSA identity certificate is not validly self-signed"
run_case certs-ed-bad-signature \
    "close:Ed25519 identity->signing certificate does not verify"
run_case certs-auth-bad-signature \
    "close:Ed25519 signing->link/auth certificate does not verify"
run_case certs-crosscert-bad-signature \
    "close:RSA->Ed25519 cross-certificate does not verify"
run_case certs-duplicate-cell "close:duplicate CERTS cell"
run_case authenticate-bad "close:AUTHENTICATE cell does not verify"
run_case netinfo-without-authenticate \
    "close:NETINFO after CERTS without AUTHENTICATE"

# 2. On an open connection. Circuit IDs in the log are decimal:
# 0x80000bad = 2147486637, 0x80000101 = 2147483905, 0x80000008 =
# 2147483656, 0x80000009 = 2147483657, 0x80000abc = 2147486396.
run_case open-sequence \
    "Ignoring cell with unknown command 50 on" \
    "(command 200) on open channel" \
    "DESTROY for unknown circuit 2147486637 on" \
    "CREATED_FAST for unknown circuit 2147486637 on" \
    "Dropping CREATE for existing circuit 2147483905 on" \
    "(circuit 5): circuit ID has the wrong high bit for this side" \
    "TAP (CREATE) handshakes are not supported" \
    "(circuit 2147483656): handshake data has the wrong length" \
    "(circuit 2147483657): malformed CREATE2" \
    "unsupported handshake type" \
    "unrecognized relay cell at the end of the circuit" \
    "close:CREATE cell with circuit ID 0"
run_case destroy-other-connection \
    "DESTROY for unknown circuit 2147486396 on" \
    "Dropping CREATE for existing circuit 2147486396 on" \
    "unrecognized relay cell at the end of the circuit"
run_case relay-while-create2-pending \
    "too many relay cells (more than 16 for the circuit"

# 3. Truncated and oversized input, and a peer that never reads.
run_case truncated-prehandshake "close:connection closed by peer"
run_case huge-var-prehandshake "close:connection closed by peer"
run_case truncated-open "close:connection closed by peer"
run_case huge-var-open "close:connection closed by peer"
run_case huge-var-complete
run_case flood-without-reading "close:peer is not reading"
it_log "$n_cases cases passed, $n_skipped skipped"

# 4. The same pctor still serves well-behaved clients, also while a
# connection that never starts its TLS handshake is held open.
running "$pid" || it_fail "pctor died"
exec 3<> "/dev/tcp/127.0.0.1/$port" || it_fail "cannot connect to pctor"
hop="pctor:$datadir@127.0.0.1:$port"
for hs in ntor ntor3 fast; do
    "$CIRCTEST" --timeout 20 --handshake "$hs" "$hop" \
        > "$dir/circtest-$hs.out" 2>&1 ||
        it_fail "pctor-circtest --handshake $hs failed after the bad" \
            "input: $(tail -5 "$dir/circtest-$hs.out")"
    it_log "a well-behaved client built a circuit with $hs"
done
exec 3>&-

# 5. Nothing alarming in the log, a clean exit, no sanitizer report.
if grep -E '\[(warn|err)\]' "$log" | head -5 | grep .; then
    it_fail "pctor logged warnings or errors on peer input"
fi
if grep -iE 'assert|AddressSanitizer|LeakSanitizer|runtime error' \
        "$log" "$dir/stderr" | head -20 | grep .; then
    it_fail "pctor reported an assertion or a sanitizer error"
fi
kill -TERM "$pid"
for ((i = 0; i < 100; i++)); do
    running "$pid" || break
    sleep 0.1
done
running "$pid" && it_fail "pctor did not exit within 10 s of SIGTERM"
wait "$pid"
rc=$?
[ "$rc" = 0 ] || it_fail "pctor exited with status $rc on SIGTERM$(
    printf '\n'; tail -20 "$dir/stderr")"
if grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$dir/stderr" |
        head -20 | grep .; then
    it_fail "sanitizer report at pctor's exit (see above)"
fi
it_log "pctor survived all bad input and exited cleanly"
