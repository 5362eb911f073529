#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# sandbox.sh -- Sandbox 1 (seccomp-bpf + Landlock) on live pctor relays.
#
# A private network (1 tor authority, 3 tor relays) and two pctor relays
# with Sandbox 1 (and User nobody when the test runs as root): p1 a middle
# relay, p2 an exit for 127.0.0.1. Checks:
#  1. both run with the filter in place: /proc/PID/status says Seccomp: 2
#     (filter mode) and NoNewPrivs: 1, and they logged that the filter is
#     active; every thread has Seccomp: 2, and the circuit-handshake worker
#     threads were started after the sandbox (their log line comes after
#     the sandbox's, and they are all the other threads), so Landlock
#     binds them too: it reaches only threads created after it is installed
#     (the kernel shows no Landlock state in /proc, so the order is what
#     can be seen here; tests/unit/check_sandbox.c shows that a thread
#     started after the sandbox cannot write outside the allowed paths and
#     one started before it can);
#  2. they work under it: p2 fetches and caches a consensus and publishes
#     its descriptor (files written in DataDirectory), and a file
#     downloaded through tor -> p1 -> p2 (exit connections, DNS-less
#     BEGIN to 127.0.0.1) arrives whole;
#  3. log rotation: info.log is moved away, SIGHUP makes p1 and p2 reload
#     and write a new info.log, and traffic passes again;
#  4. paths are restricted (kernel with Landlock): a SIGHUP with a Log
#     file, or an %include, in a directory that was not allowed at start-up
#     is refused with the sandbox's explanation, the old configuration is
#     kept and p1 lives on;
#  5. SETCONF Sandbox 0 is refused (needs a restart); SAVECONF writes the
#     torrc (its directory is allowed);
#  6. nothing but the expected lines reached the warn level, and no
#     forbidden-system-call line was logged.
# That a forbidden call (execve, fork, ptrace, ...) stops the process is
# shown by tests/unit/check_sandbox.c, which makes those calls.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
CIRCTEST=${PCTOR_CIRCTEST:-${top_builddir:?}/src/tools/circtest/pctor-circtest}
[ -x "$PCTOR" ] && [ -x "$CIRCTEST" ] || it_fail "pctor binaries not built"

probe=$(it_tmpdir)
printf 'Sandbox 1\nDataDirectory %s/data\n' "$probe" > "$probe/torrc"
if ! "$PCTOR" --verify-config -f "$probe/torrc" > "$probe/out" 2>&1; then
    grep -q "not supported in this build" "$probe/out" &&
        it_skip "pctor was built without libseccomp"
    it_fail "--verify-config refused Sandbox 1: $(cat "$probe/out")"
fi

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
nodes=$net/nodes.txt

www=$(it_tmpdir)
head -c $((4 * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

user_line=""
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    user_line="User nobody"
    chmod 755 "$IT_ROOT" "$(dirname "$net")" "$net"
fi

start_pctor() { # NICK EXTRA-TORRC-LINES
    local nick=$1 extra=$2 node port cport
    read -r node port _ cport < <(it_privnet reserve "$net" --role pctor --nickname "$nick")
    local d=$net/$node
    # Logs in a directory of their own that the relay's user may write
    # (a rotated log is created again after the switch to User).
    mkdir -p "$d/logs"
    [ -n "$user_line" ] && chown nobody "$d/logs" "$d" && chmod 755 "$d"
    cat > "$d/torrc" <<EOF
DataDirectory $d/data
ORPort 127.0.0.1:$port
ControlPort 127.0.0.1:$cport
Nickname $nick
Log info file $d/logs/info.log
TestingTorNetwork 1
Sandbox 1
$user_line
$(cat "$net/dirauth.torrc")
$extra
EOF
    "$PCTOR" -f "$d/torrc" > "$d/stderr" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")"
    it_wait_port 127.0.0.1 "$port" 30 || it_fail "$nick did not open its ORPort: $(tail -3 "$d/stderr")"
    # pctor-circtest reads the relay's keys from a DataDirectory its own
    # user owns: a copy (the relay's belongs to nobody with User).
    mkdir -m 700 "$d/keycopy"
    cp -r "$d/data/keys" "$d/data/fingerprint" "$d/keycopy/"
    echo "pctor:$d/keycopy@127.0.0.1:$port" > "$net/$nick.hop"
    echo "$d" > "$net/$nick.dir"
    echo "$cport" > "$net/$nick.cport"
}
start_pctor p1 ""
start_pctor p2 "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf
RefuseUnknownExits 0"
P1=$(cat "$net/p1.hop") P2=$(cat "$net/p2.hop")
d1=$(cat "$net/p1.dir") d2=$(cat "$net/p2.dir")
pid1=$(cat "$d1/pid") pid2=$(cat "$d2/pid")

# 1. The filter is in place.
for n in p1 p2; do
    d=$(cat "$net/$n.dir")
    pid=$(cat "$d/pid")
    it_wait_until 20 grep -q 'Sandbox: the system-call filter is active' "$d/logs/info.log" ||
        it_fail "$n did not log the sandbox: $(tail -3 "$d/logs/info.log")"
    grep -q '^Seccomp:[[:space:]]*2$' "/proc/$pid/status" ||
        it_fail "$n: $(grep Seccomp "/proc/$pid/status")"
    # Every thread, the onion-skin workers included.
    nthreads=0
    for t in /proc/"$pid"/task/*; do
        nthreads=$((nthreads + 1))
        grep -q '^Seccomp:[[:space:]]*2$' "$t/status" ||
            it_fail "$n: thread ${t##*/} runs without the filter: $(grep Seccomp "$t/status")"
    done
    # The workers start after the sandbox (Landlock), and are the only
    # threads besides the main one.
    sline=$(grep -n -m1 'Sandbox: the system-call filter is active' "$d/logs/info.log" | cut -d: -f1)
    wline=$(grep -n -m1 'Started [0-9]* worker threads\? for circuit handshakes' "$d/logs/info.log") ||
        it_fail "$n did not log its handshake workers"
    nworkers=$(echo "$wline" | sed 's/.*Started \([0-9]*\) worker.*/\1/')
    [ "${wline%%:*}" -gt "$sline" ] ||
        it_fail "$n started its handshake workers before the sandbox (log lines ${wline%%:*} and $sline)"
    [ "$nthreads" -eq $((nworkers + 1)) ] ||
        it_fail "$n has $nthreads threads, expected the main one and $nworkers workers"
    grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" ||
        it_fail "$n: $(grep NoNewPrivs "/proc/$pid/status")"
    if [ -n "$user_line" ]; then
        [ "$(awk '/^Uid:/ {print $3}' "/proc/$pid/status")" = "$(id -u nobody)" ] ||
            it_fail "$n does not run as nobody"
    fi
done
landlock=1
grep -q 'kernel has no Landlock' "$d1/logs/info.log" && landlock=0
it_log "p1 and p2 run with Seccomp: 2 in all their threads ($nthreads in p2, the $nworkers workers started after the sandbox), NoNewPrivs: 1 (Landlock: $landlock)"

# 2. Work under the filter: a consensus fetched and cached, a descriptor
# published, a download through tor -> p1 -> p2.
it_wait_until 90 grep -q 'Accepted a .* consensus' "$d2/logs/info.log" ||
    it_fail "p2 never got a consensus"
ls "$d2/data"/cached-* > /dev/null 2>&1 || it_fail "p2 cached nothing in DataDirectory"
fetch() { # NAME
    local out=$net/body-$1 got
    "$CIRCTEST" --timeout 90 --nodes "$nodes" --begin "127.0.0.1:$hport" \
        --get /file --out "$out" relay1 "$P1" "$P2" 2> "$net/$1.err" ||
        it_fail "download $1 failed: $(cat "$net/$1.err")"
    got=$(sha256sum < "$out" | cut -d' ' -f1)
    [ "$got" = "$want" ] || it_fail "download $1: sha256 mismatch"
    rm -f "$out"
    it_log "download $1 through relay1 -> p1 -> p2: 4 MiB, sha256 ok"
}
fetch first

# 3. Log rotation: move the logs away, SIGHUP, new logs are written.
for n in p1 p2; do
    d=$(cat "$net/$n.dir")
    mv "$d/logs/info.log" "$d/logs/info.log.1"
    kill -HUP "$(cat "$d/pid")"
done
for n in p1 p2; do
    d=$(cat "$net/$n.dir")
    it_wait_until 20 grep -q 'Configuration reloaded' "$d/logs/info.log" ||
        it_fail "$n did not reopen its log after SIGHUP"
done
fetch after-sighup
it_log "SIGHUP after log rotation: new logs written, traffic passes"

# 4. A Log file where the sandbox allows nothing.
if [ "$landlock" = 1 ]; then
    elsewhere=$(it_tmpdir)
    chmod 777 "$elsewhere"
    cp "$d1/torrc" "$d1/torrc.orig"
    echo "Log notice file $elsewhere/new.log" >> "$d1/torrc"
    kill -HUP "$pid1"
    it_wait_until 20 grep -q 'with Sandbox 1, log files can only be opened in the directories they had at start-up' "$d1/logs/info.log" ||
        it_fail "p1 did not refuse the new Log file: $(tail -3 "$d1/logs/info.log")"
    [ ! -e "$elsewhere/new.log" ] || it_fail "p1 created a log file outside its sandbox"
    # An %include of a file in that directory cannot be read again.
    echo "ContactInfo included" > "$elsewhere/inc.conf"
    chmod 644 "$elsewhere/inc.conf"
    cp "$d1/torrc.orig" "$d1/torrc"
    echo "%include $elsewhere/inc.conf" >> "$d1/torrc"
    kill -HUP "$pid1"
    it_wait_until 20 grep -q 'With Sandbox 1, pctor can only read files in the directories allowed at start-up' "$d1/logs/info.log" ||
        it_fail "p1 did not explain the unreadable %include: $(tail -3 "$d1/logs/info.log")"
    cp "$d1/torrc.orig" "$d1/torrc"
    kill -HUP "$pid1"
    it_wait_until 20 bash -c "[ \$(grep -c 'Configuration reloaded' '$d1/logs/info.log') -ge 2 ]" ||
        it_fail "p1 did not reload its old torrc"
    it_log "a Log file and an %include outside the sandbox's directories were refused"
fi

# 5. The control port: Sandbox cannot be switched off; SAVECONF works.
ctl() { # NICK COMMAND: reply lines
    python3 - "$(cat "$net/$1.cport")" "$2" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
f = s.makefile("rwb")
f.write(b"AUTHENTICATE\r\n" + sys.argv[2].encode() + b"\r\nQUIT\r\n")
f.flush()
print(f.read().decode(errors="replace"))
EOF
}
ctl p2 'SETCONF Sandbox=0' | grep -q '^553 ' || it_fail "SETCONF Sandbox=0 was not refused"
ctl p2 'SAVECONF' | grep -q '^250' || it_fail "SAVECONF failed: $(ctl p2 SAVECONF)"
grep -q '^Sandbox 1$' "$d2/torrc" || it_fail "SAVECONF wrote no Sandbox line"
ls "$d2"/torrc.orig.1 > /dev/null || it_fail "SAVECONF kept no torrc.orig.1"
ctl p2 'GETINFO version' | grep -q '^250' || it_fail "p2's control port stopped answering"
it_log "SETCONF Sandbox=0 refused, SAVECONF wrote the torrc"
fetch last

# 6. Alive, with no forbidden call and only the expected warnings.
for n in p1 p2; do
    d=$(cat "$net/$n.dir")
    kill -0 "$(cat "$d/pid")" || it_fail "$n died: $(tail -3 "$d/stderr") $(tail -3 "$d/logs/info.log")"
    if cat "$d/logs"/info.log* | grep -F 'forbidden system call'; then
        it_fail "$n made a forbidden system call"
    fi
    if cat "$d/logs"/info.log* | grep -E '\[(warn|err)\]' |
            grep -v -e 'Could not apply the new Log lines' -e 'keeping the old configuration' \
                -e 'inc.conf' -e 'With Sandbox 1' -e 'keeping the old one'; then
        it_fail "$n logged warnings"
    fi
done
it_log "sandbox checks passed"
