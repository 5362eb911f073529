#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# daemon.sh -- pctor as a service: --verify-config, RunAsDaemon + PidFile,
# User (as root: switch to "nobody" and keep no capabilities), SIGHUP
# reload (a log file the dropped user cannot reopen is a warning), SIGUSR2
# debug logging, SIGINT graceful shutdown (ShutdownWaitLength) and a
# second SIGINT; --list-fingerprint; the relay still carries circuits
# after dropping privileges; sd_notify (Type=notify) messages and watchdog.

. "$(dirname "$0")/lib.sh"
set -u

PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
dir=$(it_tmpdir)
# The relay may run as "nobody": let it reach its DataDirectory.
chmod 755 "$IT_ROOT" "$dir"

# --verify-config: a bad line stops with the option and line named.
cat > "$dir/bad.torrc" <<EOF
Nickname good
# comment
NoSuchOption 1
EOF
if "$PCTOR" --verify-config -f "$dir/bad.torrc" > "$dir/bad.out" 2>&1; then
    it_fail "--verify-config accepted an unknown option"
fi
grep -q "Unknown option 'NoSuchOption' on line 3" "$dir/bad.out" ||
    it_fail "unexpected message: $(cat "$dir/bad.out")"
printf 'ORPort 99999\n' > "$dir/bad2.torrc"
"$PCTOR" --verify-config -f "$dir/bad2.torrc" > "$dir/bad2.out" 2>&1 &&
    it_fail "--verify-config accepted ORPort 99999"
grep -q "ORPort" "$dir/bad2.out" || it_fail "no ORPort in: $(cat "$dir/bad2.out")"

# A daemonised relay.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user_line=""
existing_log_line=""
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    user_line="User nobody"
    # A log file that exists before pctor starts stays root's.
    : > "$dir/existing.log"
    chmod 600 "$dir/existing.log"
    existing_log_line="Log notice file $dir/existing.log"
fi
cat > "$dir/torrc" <<EOF
DataDirectory $dir/data
# tor's port-forwarding pair: listen on one port, advertise another.
ORPort 127.0.0.1:$port NoAdvertise
ORPort 127.0.0.1:$port2 NoListen
Nickname daemontest
Log info file $dir/info.log
RunAsDaemon 1
PidFile $dir/pctor.pid
TestingTorNetwork 1
# A private network needs its own authorities; this relay publishes to none.
DirAuthority testauth orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002
PublishServerDescriptor 0
# Short periods are allowed in test networks (tor's rule).
HeartbeatPeriod 1 second
$user_line
$existing_log_line
EOF
"$PCTOR" --verify-config -f "$dir/torrc" | grep -q "Configuration was valid" ||
    it_fail "--verify-config rejected a good torrc"
# --list-fingerprint: tor's format, the keys it makes are the relay's.
"$PCTOR" --list-fingerprint -f "$dir/torrc" --quiet > "$dir/fp.out" ||
    it_fail "--list-fingerprint failed"
grep -Eq '^daemontest( [0-9A-F]{4}){10}$' "$dir/fp.out" ||
    it_fail "--list-fingerprint printed: $(cat "$dir/fp.out")"
[ "$(tr -d ' ' < "$dir/fp.out" | sed 's/^daemontest//')" = \
  "$(cut -d' ' -f2 "$dir/data/fingerprint")" ] ||
    it_fail "--list-fingerprint differs from the fingerprint file"
"$PCTOR" -f "$dir/torrc" || it_fail "pctor did not start as a daemon"
[ -s "$dir/pctor.pid" ] || it_fail "no pid file"
pid=$(cat "$dir/pctor.pid")
it_register_pid "$pid"
kill -0 "$pid" || it_fail "daemon not running"
it_wait_port 127.0.0.1 "$port" 20 || it_fail "ORPort not open"
# tor's DataDirectory lock: a second pctor (or tor) on the same keys is
# refused while the relay runs.
if "$PCTOR" -f "$dir/torrc" --RunAsDaemon 0 --ORPort 127.0.0.1:0 --quiet 2> "$dir/second.err"; then
    it_fail "a second pctor started on a locked DataDirectory"
fi
# --key-expiration reads the running relay's keys (tor's output format).
"$PCTOR" --key-expiration sign --format timestamp -f "$dir/torrc" --quiet > "$dir/exp.out" 2> "$dir/exp.err" ||
    it_fail "--key-expiration failed: $(cat "$dir/exp.err")"
grep -Eq '^signing-cert-expiry: [0-9]{10}$' "$dir/exp.out" ||
    it_fail "--key-expiration printed: $(cat "$dir/exp.out")"
grep -q "Advertising ORPort 127.0.0.1:$port2 without listening on it (NoListen)" \
    "$dir/info.log" || it_fail "no NoListen log line"
if (exec 3<>"/dev/tcp/127.0.0.1/$port2") 2>/dev/null; then
    it_fail "the NoListen ORPort $port2 accepts connections"
fi

if [ -n "$user_line" ]; then
    uid=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
    [ "$uid" = "$(id -u nobody) $(id -u nobody) $(id -u nobody) $(id -u nobody)" ] ||
        it_fail "daemon runs with uids $uid, not nobody's"
    for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
        v=$(awk -v c="$cap:" '$1 == c {print $2}' "/proc/$pid/status")
        [ -z "$v" ] || [ "$v" = 0000000000000000 ] || it_fail "$cap is $v, not empty"
    done
    # DisableDebuggerAttachment (default 1): not dumpable, so the kernel
    # gives its /proc files to root although it runs as nobody.
    [ "$(stat -c %U "/proc/$pid/environ")" = root ] ||
        it_fail "daemon is dumpable (DisableDebuggerAttachment)"
    it_log "daemon switched to nobody and holds no capabilities"
fi
# PR_SET_NO_NEW_PRIVS after the privilege drop (with or without User).
[ "$(awk '/^NoNewPrivs:/ {print $2}' "/proc/$pid/status")" = 1 ] ||
    it_fail "daemon runs without NoNewPrivs"

# It still works as a relay. (pctor-circtest reads the relay's keys, which
# now belong to the relay's user.)
as_owner=()
[ -z "$user_line" ] || as_owner=(runuser -u nobody --)
"${as_owner[@]}" "$CIRCTEST" --timeout 20 --handshake ntor3 \
    "pctor:$dir/data@127.0.0.1:$port" || it_fail "circuit through the daemon failed"

# SIGHUP: a new Nickname is applied (fingerprint file rewritten).
sed -i 's/^Nickname daemontest/Nickname reloaded/' "$dir/torrc"
kill -HUP "$pid"
it_wait_until 10 grep -q '^reloaded ' "$dir/data/fingerprint" ||
    it_fail "SIGHUP did not apply the new Nickname"
kill -0 "$pid" || it_fail "daemon died on SIGHUP"
if [ -n "$user_line" ]; then
    # info.log was created by this run as root and handed to nobody with
    # DataDirectory, so nobody reopens it. existing.log was root's before
    # the start and stays root's: nobody cannot reopen it, and says so
    # instead of silently keeping the old file.
    [ "$(stat -c %U "$dir/info.log")" = nobody ] || it_fail "info.log was not handed to nobody"
    [ "$(stat -c %U "$dir/existing.log")" = root ] || it_fail "existing.log changed hands"
    it_wait_until 10 grep -q 'Could not reopen log file ".*existing.log": Permission denied' \
        "$dir/info.log" || it_fail "no warning about the root-owned log file on SIGHUP"
    if grep -q 'Could not reopen log file ".*info.log"' "$dir/info.log"; then
        it_fail "nobody could not reopen the info.log that pctor created"
    fi
fi

it_wait_until 10 grep -q "Heartbeat: pctor's uptime is 0:00 hours, with [0-9]* circuits open" \
    "$dir/info.log" || it_fail "no heartbeat line (HeartbeatPeriod)"

# SIGUSR2: debug logging (tor's), not death.
kill -USR2 "$pid"
it_wait_until 10 grep -q "Received SIGUSR2" "$dir/info.log" ||
    it_fail "no SIGUSR2 log line"
kill -0 "$pid" || it_fail "daemon died on SIGUSR2"
"${as_owner[@]}" "$CIRCTEST" --timeout 20 --handshake ntor3 \
    "pctor:$dir/data@127.0.0.1:$port" > /dev/null 2>&1 || true
it_wait_until 10 grep -q "\[debug\]" "$dir/info.log" ||
    it_fail "no debug lines after SIGUSR2"

# SIGINT (tor's): stop accepting connections, wait ShutdownWaitLength
# (30 seconds); a second SIGINT exits at once. Clean exit, pid file
# removed (or emptied when the dropped user may not delete it).
kill -INT "$pid"
it_wait_until 10 grep -q "stopped accepting new connections, and will shut down in 30 seconds" \
    "$dir/info.log" || it_fail "no graceful-shutdown line after SIGINT"
it_wait_until 10 bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null" ||
    it_fail "ORPort still accepts connections after SIGINT"
kill -0 "$pid" || it_fail "daemon exited at once on the first SIGINT"
kill -INT "$pid"
it_wait_until 10 bash -c "! kill -0 $pid 2>/dev/null" || it_fail "daemon did not exit"
[ ! -s "$dir/pctor.pid" ] || it_fail "pid file left behind"
grep -q "Interrupt: exiting cleanly" "$dir/info.log" || it_fail "no clean-exit log line"
if grep -E '\[(warn|err)\]' "$dir/info.log" | grep -v "Running as root" |
   grep -v 'Could not reopen log file ".*existing.log"'; then
    it_fail "warnings in the log"
fi
# --keygen (no passphrase, as tor): a new identity in an empty directory,
# then a new signing key and certificate from it.
kg=$dir/keygen
"$PCTOR" --DataDirectory "$kg" --keygen --no-passphrase --ignore-missing-torrc \
    -f "$dir/none" --quiet > "$dir/keygen.out" || it_fail "--keygen failed"
grep -qx "Not encrypting the secret key." "$dir/keygen.out" || it_fail "--keygen printed: $(cat "$dir/keygen.out")"
for f in ed25519_master_id_secret_key ed25519_master_id_public_key ed25519_signing_secret_key ed25519_signing_cert; do
    [ -s "$kg/keys/$f" ] || it_fail "--keygen did not write keys/$f"
done
"$PCTOR" --DataDirectory "$kg" --keygen --no-passphrase --ignore-missing-torrc \
    -f "$dir/none" --quiet > "$dir/keygen2.out" || it_fail "a second --keygen failed"
[ ! -s "$dir/keygen2.out" ] || it_fail "a second --keygen made a new master key"
# --newpass with an empty --passphrase-fd: refused, nothing changed (as
# tor; family-keys.sh tests passphrases with tor).
if "$PCTOR" --DataDirectory "$kg" --keygen --newpass --passphrase-fd 0 \
    -f "$dir/none" --ignore-missing-torrc < /dev/null 2> "$dir/newpass.err"; then
    it_fail "--newpass with an empty passphrase was accepted"
fi
grep -q "empty passphrase" "$dir/newpass.err" || it_fail "--newpass: $(cat "$dir/newpass.err")"
[ -s "$kg/keys/ed25519_master_id_secret_key" ] &&
    [ ! -e "$kg/keys/ed25519_master_id_secret_key_encrypted" ] ||
    it_fail "a refused --newpass changed the master key files"
it_log "service behaviour checks passed"

# A second start as root after User handed DataDirectory over (what every
# restart of a packaged relay does): the directory now belongs to the user
# and must be accepted, and keys created meanwhile are handed over too.
if [ -n "$user_line" ]; then
    [ "$(stat -c %U "$dir/data")" = nobody ] || it_fail "DataDirectory not handed to nobody"
    "$PCTOR" -f "$dir/torrc" || it_fail "pctor did not start again after handing DataDirectory over"
    pid=$(cat "$dir/pctor.pid")
    it_register_pid "$pid"
    it_wait_port 127.0.0.1 "$port" 20 || it_fail "ORPort not open after the restart"
    kill -TERM "$pid"
    it_wait_until 10 bash -c "! kill -0 $pid 2>/dev/null" || it_fail "restarted daemon did not exit"
    left=$(find "$dir/data" ! -user nobody | head -3)
    [ -z "$left" ] || it_fail "files not handed to nobody: $left"
    it_log "restart as root with a handed-over DataDirectory works"

    # Under a capability bounding set as narrow as the systemd units' (tor's:
    # no CAP_DAC_OVERRIDE, no CAP_CHOWN), root cannot open nobody's files:
    # pctor opens its logs, keys and PidFile as nobody (file-system ids),
    # so a fresh DataDirectory made for nobody (as the units' ExecStartPre
    # does) gets keys, and nothing in it or in the log directory is root's.
    nd=$dir/narrow
    mkdir -m 0755 "$nd"
    install -d -m 0700 -o nobody "$nd/data"
    install -d -m 0750 -o nobody "$nd/log" "$nd/run"
    sed -e "s|^DataDirectory .*|DataDirectory $nd/data|" \
        -e "s|^Log info file .*|Log info file $nd/log/info.log|" \
        -e "s|^PidFile .*|PidFile $nd/run/pctor.pid|" \
        -e "/existing.log/d" "$dir/torrc" > "$nd/torrc"
    narrow=-all,+net_bind_service,+setuid,+setgid,+dac_read_search
    setpriv --bounding-set=$narrow -- "$PCTOR" -f "$nd/torrc" --verify-config > "$nd/verify.out" 2>&1 ||
        it_fail "--verify-config failed under a narrow bounding set: $(cat "$nd/verify.out")"
    setpriv --bounding-set=$narrow -- "$PCTOR" -f "$nd/torrc" 2> "$nd/start.err" ||
        it_fail "pctor did not start under a narrow bounding set: $(cat "$nd/start.err")"
    pid=$(cat "$nd/run/pctor.pid")
    it_register_pid "$pid"
    it_wait_port 127.0.0.1 "$port" 20 || it_fail "ORPort not open under a narrow bounding set"
    [ -s "$nd/data/keys/ed25519_master_id_secret_key" ] ||
        it_fail "no identity key made under a narrow bounding set"
    left=$(find "$nd/data" "$nd/log" "$nd/run" ! -user nobody | head -3)
    [ -z "$left" ] || it_fail "files not nobody's under a narrow bounding set: $left"
    grep -q "Switched to user nobody" "$nd/log/info.log" ||
        it_fail "no user switch logged under a narrow bounding set"
    # Without CAP_DAC_OVERRIDE a root-only log directory is refused clearly.
    mkdir -m 0700 "$nd/rootlog"
    sed -e "s|^Log info file .*|Log info file $nd/rootlog/info.log|" "$nd/torrc" > "$nd/bad.torrc"
    if setpriv --bounding-set=$narrow -- "$PCTOR" -f "$nd/bad.torrc" --verify-config > "$nd/bad.out" 2>&1; then
        it_fail "--verify-config accepted a log file nobody cannot create"
    fi
    grep -q "rootlog.*Permission denied" "$nd/bad.out" ||
        it_fail "unclear refusal of a root-only log directory: $(cat "$nd/bad.out")"
    kill -TERM "$pid"
    it_wait_until 10 bash -c "! kill -0 $pid 2>/dev/null" || it_fail "narrow-set daemon did not exit"
    it_log "under tor's capability bounding set pctor opens its files as nobody"
fi

# Type=notify (sd_notify(3)): in the foreground, pctor tells the socket in
# $NOTIFY_SOCKET READY=1 (naming its pid) once started, RELOADING=1 and
# READY=1 around a SIGHUP, STOPPING=1 on SIGTERM, and feeds a watchdog at
# half of $WATCHDOG_USEC. An abstract socket name ("@...") works too.
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/notify.torrc" <<EOF2
DataDirectory $dir/ndata
ORPort 127.0.0.1:$nport
Nickname notifytest
Log notice file $dir/notify.log
TestingTorNetwork 1
DirAuthority testauth orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002
PublishServerDescriptor 0
AssumeReachable 1
EOF2
nsock="@pctor-it-notify-$$"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1][1:])
with open(sys.argv[2], "w") as f:
    f.write("bound\n"); f.flush()
    while True:
        f.write(s.recv(4096).decode().replace("\n", "|") + "\n"); f.flush()
' "$nsock" "$dir/notify.msgs" &
it_register_pid $!
it_wait_until 10 test -s "$dir/notify.msgs" || it_fail "the notify listener did not start"
NOTIFY_SOCKET=$nsock WATCHDOG_USEC=400000 "$PCTOR" -f "$dir/notify.torrc" --RunAsDaemon 0 \
    > "$dir/notify.out" 2>&1 &
npid=$!
it_register_pid "$npid"
it_wait_until 20 grep -q "^READY=1" "$dir/notify.msgs" || it_fail "no READY=1: $(cat "$dir/notify.out")"
grep -q "^READY=1|STATUS=Running|MAINPID=$npid\$" "$dir/notify.msgs" ||
    it_fail "READY=1 does not name pid $npid: $(cat "$dir/notify.msgs")"
it_wait_port 127.0.0.1 "$nport" 5 || it_fail "READY=1 came but the ORPort is not open"
sleep 1.2
nwd=$(grep -c "^WATCHDOG=1$" "$dir/notify.msgs")
[ "$nwd" -ge 3 ] || it_fail "$nwd WATCHDOG=1 in 1.2 s at WATCHDOG_USEC=400000 (want >= 3)"
kill -HUP "$npid"
it_wait_until 10 bash -c "grep -A1 '^RELOADING=1' '$dir/notify.msgs' | grep -q '^READY=1'" ||
    it_fail "no RELOADING=1 then READY=1 on SIGHUP: $(grep -v WATCHDOG "$dir/notify.msgs")"
kill -TERM "$npid"
it_wait_until 10 grep -q "^STOPPING=1" "$dir/notify.msgs" || it_fail "no STOPPING=1 on SIGTERM"
it_wait_until 10 bash -c "! kill -0 $npid 2>/dev/null" || it_fail "the notify relay did not exit"
# A watchdog meant for another process (WATCHDOG_PID) is not fed.
NOTIFY_SOCKET=$nsock WATCHDOG_USEC=100000 WATCHDOG_PID=1 "$PCTOR" --verify-config -f "$dir/notify.torrc" \
    > /dev/null 2>&1 || it_fail "--verify-config under NOTIFY_SOCKET failed"
it_log "sd_notify: READY/RELOADING/STOPPING and the watchdog work"
