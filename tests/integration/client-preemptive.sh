#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# client-preemptive.sh -- pctor's SocksPort client keeps clean circuits
# built ahead of need (tor's predicted ports; issue 4).
#
# A private network (1 tor authority, 3 tor relays) plus pctor relays p1,
# p2 and p3 (an exit for 127.0.0.1 only) and one pctor client c1 pinned to
# p1 -> p2 -> p3. Checks:
#   - once c1 has a consensus it builds a preemptive circuit for port 80
#     (predicted at start) before any SOCKS request;
#   - the first stream after start (to the web server's port, which the
#     pinned exit takes) attaches to that already-built circuit: the log
#     says so and no circuit is built for it on demand (the time to the
#     first byte and the build time are logged for comparison; on
#     loopback both are milliseconds, too noisy to assert on);
#   - a replacement is built, and a second stream with other SOCKS
#     credentials (isolated from the first) takes it, again without an
#     on-demand build; the downloads are intact (sha256);
#   - it stays bounded: a handful of preemptive builds in all, not one per
#     timer tick.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 1 --relays 3 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"

www=$(it_tmpdir)
head -c $((2 * 1024 * 1024)) /dev/urandom > "$www/file"
want=$(sha256sum < "$www/file" | cut -d' ' -f1)
read -r _ hport _ _ < <(it_privnet reserve "$net" --role web --nickname web)
it_http_server "$www" "$hport"

it_start_pctor "$net" p1 relay ""
it_start_pctor "$net" p2 relay ""
it_start_pctor "$net" p3 relay "ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicy accept 127.0.0.1:*
ExitPolicy reject *:*
ServerDNSResolvConfFile $net/resolv.conf"
it_privnet wait "$net" --timeout 120 --flags Running,Valid ||
    it_fail "the consensus does not list the pctor relays"

it_start_pctor "$net" c1 client "EntryNodes p1
MiddleNodes p2
ExitNodes p3"
d=$(cat "$net/c1.dir") socks=$(cat "$net/c1.port")
log=$d/info.log

it_wait_until 120 grep -q 'Preemptive circuit for port 80 is ready' "$log" ||
    it_fail "no preemptive circuit: $(grep -i -E 'preemptive|circuit' "$log" | tail -5)"
grep -q 'SOCKS request\|attached to' "$log" &&
    it_fail "c1 saw a stream before the test made one"
it_log "$(grep -h 'Preemptive circuit for port 80 is ready' "$log" | head -1 | sed 's/.*\] //')"
built_before=$(grep -c 'Building a circuit' "$log")

get() { # USER OUT
    curl -sf --max-time 60 --socks5-hostname "127.0.0.1:$socks" \
        --proxy-user "$1:x" -w '%{time_starttransfer}\n' \
        "http://127.0.0.1:$hport/file" -o "$2"
}
t1=$(get alice "$net/out1") || it_fail "the first download failed"
[ "$(sha256sum < "$net/out1" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "the first download is corrupt"
grep -q "Stream to port $hport attached to a preemptive circuit built" "$log" ||
    it_fail "the first stream did not take the preemptive circuit: $(grep -E 'Stream|Building' "$log" | tail -5)"
# Nothing was built for it on demand: the circuits built since then (if
# any) are preemptive replacements.
n_build=$(grep -c 'Building a circuit' "$log")
n_pre=$(grep -c 'Building a preemptive circuit' "$log")
[ "$((n_build - built_before))" -le "$((n_pre - 1))" ] ||
    it_fail "a circuit was built on demand for the first stream"
build_ms=$(sed -n 's/.*Preemptive circuit for port 80 is ready (built in \([0-9]*\) ms).*/\1/p' "$log" | head -1)
it_log "first stream: first byte after ${t1}s (the circuit had taken ${build_ms} ms to build)"

# The replacement: built for the new predicted port (or any, with a
# pinned exit), then taken by an isolated stream.
it_wait_until 60 bash -c "[ \$(grep -c 'Preemptive circuit for port [0-9]* is ready' '$log') -ge 2 ]" ||
    it_fail "no replacement preemptive circuit: $(grep -i preemptive "$log" | tail -3)"
get bob "$net/out2" > /dev/null || it_fail "the second download failed"
[ "$(sha256sum < "$net/out2" | cut -d' ' -f1)" = "$want" ] ||
    it_fail "the second download is corrupt"
[ "$(grep -c "Stream to port $hport attached to a preemptive circuit built" "$log")" -ge 2 ] ||
    it_fail "the isolated second stream did not take the replacement circuit"
it_log "an isolated second stream took the replacement preemptive circuit"

# Bounded: wait a few timer ticks; each take allows one replacement.
sleep 6
n_pre=$(grep -c 'Building a preemptive circuit' "$log")
[ "$n_pre" -le 4 ] || it_fail "$n_pre preemptive builds for two streams"
it_log "$n_pre preemptive builds in all"
it_pctor_alive_quiet "$net" p1 p2 p3 c1
it_log "preemptive circuit checks passed"
