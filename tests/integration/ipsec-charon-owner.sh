#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ipsec-charon-owner.sh -- pctor checks who serves charon's VICI socket
# before it sends anything (issue 14): its IKE private key must only ever
# go to root's charon or IPsecCharonUser's.
#
# A fake VICI server runs as user nobody on the socket path pctor is given
# (IPsec 1). It accepts connections and records every byte it receives.
#   1. pctor (root-only default) refuses the socket: it logs "Refusing
#      charon's VICI socket ...: not talking to a socket served by uid
#      65534" once as a warning, keeps retrying, and the server receives
#      not a single byte although pctor connected (the server counts the
#      connections).
#   2. After SIGHUP with "IPsecCharonUser nobody", pctor talks to it (its
#      first command arrives; the fake never answers, so no key follows).
# Needs root (to run the server as nobody), python3 and setpriv; skips (77)
# otherwise. About 10 s.
. "$(dirname "$0")/lib.sh"
set -u

PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ "$(id -u)" = 0 ] || it_skip "needs root (runs the fake charon as nobody)"
PY=$(it_python3) || it_skip "python3 is not installed"
command -v setpriv > /dev/null 2>&1 || it_skip "setpriv is not installed"
id nobody > /dev/null 2>&1 || it_skip "no user nobody"
[ -x "$PCTOR" ] || it_fail "pctor is not built ($PCTOR)"
"$PCTOR" --list-options 2> /dev/null | grep -q '^IPsecCharonUser ' ||
    it_fail "$PCTOR has no IPsecCharonUser option"

D=$(it_tmpdir)
chmod 755 "$IT_ROOT" "$D"
mkdir -p "$D/sock" && chown nobody "$D/sock" && chmod 755 "$D/sock"
SOCK=$D/sock/charon.vici
cat > "$D/fake.py" <<'EOF'
import os, socket, sys, threading
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
s.listen(16)
lock = threading.Lock()
state = {"conns": 0, "bytes": 0}
def save():
    with open(log + ".tmp", "w") as f:
        f.write("%d %d\n" % (state["conns"], state["bytes"]))
    os.rename(log + ".tmp", log)
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            return
        with lock:
            state["bytes"] += len(d)
            save()
while True:
    c, _ = s.accept()
    with lock:
        state["conns"] += 1
        save()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
setpriv --reuid=nobody --regid=nogroup --clear-groups "$PY" "$D/fake.py" "$SOCK" "$D/sock/fake.log" \
    > "$D/fake.out" 2>&1 &
it_register_pid $!
it_wait_until 10 test -S "$SOCK" || it_fail "the fake charon did not start: $(cat "$D/fake.out")"
[ "$(stat -c %U "$SOCK")" = nobody ] || it_fail "the fake socket is not nobody's"

port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$D/p" && chmod 700 "$D/p"
write_torrc() { # EXTRA-LINE
    cat > "$D/p/torrc" <<EOF
DataDirectory $D/p/data
ORPort 127.0.0.1:$port
Address 127.0.0.1
Nickname owner
Log info file $D/p/info.log
TestingTorNetwork 1
DirAuthority fake orport=1 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:1 0000000000000000000000000000000000000002
PublishServerDescriptor 0
IPsec 1
IPsecVICISocket $SOCK
$1
EOF
}
write_torrc ""
"$PCTOR" -f "$D/p/torrc" > "$D/p/stderr" 2>&1 &
PID=$!
it_register_pid "$PID"
conns() { read -r c _ < "$D/sock/fake.log" 2> /dev/null && echo "${c:-0}" || echo 0; }
bytes() { read -r _ b < "$D/sock/fake.log" 2> /dev/null && echo "${b:-0}" || echo 0; }

# ---- 1. root only (default): refused, nothing sent ----
it_wait_until 20 grep -q "Refusing charon's VICI socket $SOCK: not talking to a socket served by uid 65534" "$D/p/info.log" ||
    it_fail "pctor did not refuse a socket served by nobody: $(grep -i vici "$D/p/info.log" | tail -3)"
it_wait_until 10 sh -c "[ \$(read -r c _ < '$D/sock/fake.log' && echo \$c) -ge 2 ]" ||
    it_fail "pctor did not retry (connections: $(conns))"
sleep 1
[ "$(bytes)" = 0 ] || it_fail "pctor sent $(bytes) bytes to a socket served by nobody"
n=$(grep -c "\[warn\] .*Refusing charon's VICI socket" "$D/p/info.log")
[ "$n" = 1 ] || it_fail "$n warnings for the refused socket (want 1, then info)"
grep -q "IPsec: connected to charon" "$D/p/info.log" && it_fail "pctor counted the refused socket as charon"
it_log "socket served by nobody: refused $(conns) connections, 0 bytes sent, one warning"

# ---- 2. IPsecCharonUser nobody: accepted ----
write_torrc "IPsecCharonUser nobody"
kill -HUP "$PID"
it_wait_until 20 grep -q "IPsec: connected to charon at $SOCK" "$D/p/info.log" ||
    it_fail "pctor did not take the socket after IPsecCharonUser nobody: $(tail -3 "$D/p/info.log")"
it_wait_until 10 sh -c "[ \$(read -r _ b < '$D/sock/fake.log' && echo \$b) -gt 0 ]" ||
    it_fail "pctor sent nothing to its configured charon user"
kill -0 "$PID" || it_fail "pctor died"
it_log "IPsecCharonUser nobody: connected, $(bytes) bytes of commands sent"
exit 0
