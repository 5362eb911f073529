# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.netns -- namespaces and links: entering a namespace from Python,
# the address slots, a run's state, building the emulated links, and
# measuring them (selftest).
#
# - Star topology: one namespace per host (tbRUN-NAME) and a router
#   namespace (tbRUN-core). Host number i has one veth pair: "eth0" in the
#   host, "hI" in core, on a /30: core .4k+1, host .4k+2, inside 10.77.0.0/16.
#   Each run takes one or more consecutive /24 "slots" (64 hosts per slot)
#   registered under /run/pctor-testbed/slots (flock-serialised; a slot whose
#   core namespace is gone is stale and reused), so runs never share names
#   or addresses.
# - Rate: HTB (one class, rate = ceil, quantum 1514) with an explicit bfifo
#   leaf of queue_ms worth of bytes, on both veth ends: the host's eth0 for
#   its uplink, core's hI for its downlink. HTB counts Ethernet frames.
# - Loss: nft "numgen random mod 1000000 < N drop" in core's forward chain
#   (priority -300: before the delay queues), iifname hI for the uplink,
#   oifname hI for the downlink. When any link has loss, every host veth gets
#   gso_max_segs 1 so a drop removes one packet, not a GSO super-packet.
#   Never on a sender's own egress (it would see send errors, not loss).
#   [[pair]] entries add loss between two given hosts only (nft rules
#   matching ip saddr and ip daddr in the same chain), e.g. the relay-to-relay link
#   of the cross-circuit interference experiment; a pair has no delay of
#   its own (delay stays per access link).
# - Delay and jitter: pctor-delayd (src/tools/delayd) in core, SCHED_FIFO,
#   one FIFO NFQUEUE per direction and link: iptables mangle FORWARD -i hI
#   (queue 10000+I, uplink) and POSTROUTING -o hI (queue 20000+I, downlink).
#   Rules go in only after delayd has bound every queue; links without delay
#   are not queued at all.
# - TCP congestion control is set explicitly in every host namespace
#   (default cubic, as the papers assume loss-based TCP). The kernel only
#   lets a namespace pick an algorithm that is in the host-wide
#   net.ipv4.tcp_allowed_congestion_control, so `up`/`selftest` add it there
#   when missing (root namespace; it is a permission list, left in place,
#   and the change is recorded in the state file and printed).
#   Per host (or in [defaults]; experiments may vary them per
#   configuration): `congestion_control` overrides the test bed's,
#   `slow_start_after_idle = true|false` sets
#   net.ipv4.tcp_slow_start_after_idle in the host's namespace (unset: the
#   kernel's default, 1), `initcwnd = N` adds "initcwnd N" to the host's
#   default route and, on IPsec hosts, to the ipsec0 routes pctor-updown
#   installs (PCTOR_UPDOWN_ROUTE_OPTS), so it applies inside ESP as well.
# - Everything a run creates is recorded in RUNDIR/state.json as it is
#   created (namespaces, all named tbRUNID-*; processes with pid + start
#   time), so `down`, a failure or Ctrl-C during `up` undo exactly that:
#   processes are signalled by PID only while their start time and command
#   line (which names RUNDIR) still match, stragglers inside our namespaces
#   (found with `ip netns pids`) are ours by construction, and deleting the
#   namespaces removes the veths, qdiscs, nft tables and iptables rules
#   inside them. Nothing is created in the root namespace except the
#   namespace files themselves (and the congestion-control permission
#   above).
# - Measurements (selftest, traffic, readiness probes) run in this Python
#   process: a thread enters a namespace with setns(2) just long enough to
#   create a socket, which then keeps working from anywhere. No ping, curl
#   or iperf is needed.

import contextlib
import ctypes
import fcntl
import http.client
import json
import math
import os
import random
import select
import signal
import socket
import statistics
import struct
import subprocess
import threading
import time

from .common import (DOWNQ_BASE, HOSTS_PER_SLOT, NETNS_DIR, NET_PREFIX, REGISTRY, SLOT_COUNT,
                     TestbedError, UPQ_BASE, atomic_write, debug, note, nsrun, proc_cmdline,
                     proc_starttime, run, tail)
from .config import pair_loss


# --------------------------------------------------------------------------
# entering namespaces from Python

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def in_netns(name):
    """Run the body with the calling thread in namespace NAME (sockets made
    inside stay in NAME after the block)."""
    orig = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        fd = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise TestbedError(f"setns({name}): {os.strerror(e)}")
        finally:
            os.close(fd)
        try:
            yield
        finally:
            if _libc.setns(orig, CLONE_NEWNET) != 0:
                # Cannot return to our namespace: nothing sane is left to do.
                os._exit(99)
    finally:
        os.close(orig)


def ns_socket(ns, family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
    with in_netns(ns):
        return socket.socket(family, type, proto)


def ns_connect(ns, addr, timeout=10):
    with in_netns(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(addr)
    except BaseException:
        s.close()
        raise
    return s


def http_get_ns(ns, ip, port, path, timeout=10):
    """GET http://ip:port/path from inside namespace ns; returns (status, body)."""
    with in_netns(ns):
        conn = http.client.HTTPConnection(ip, port, timeout=timeout)
        conn.connect()
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "identity"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def socks5_open(sock, host, port, timeout, user=None):
    """SOCKS5 CONNECT by host name; with user, username/password
    authentication (RFC 1929), which pctor and tor use to isolate circuits."""
    sock.settimeout(timeout)
    if user is None:
        sock.sendall(b"\x05\x01\x00")
        r = recv_exact(sock, 2)
        if r != b"\x05\x00":
            raise TestbedError(f"SOCKS5: no-auth method refused ({r.hex()})")
    else:
        u = user.encode()[:255]
        sock.sendall(b"\x05\x01\x02")
        if recv_exact(sock, 2) != b"\x05\x02":
            raise TestbedError("SOCKS5: username/password method refused")
        sock.sendall(b"\x01" + bytes([len(u)]) + u + b"\x01x")
        if recv_exact(sock, 2)[1] != 0:
            raise TestbedError("SOCKS5: authentication refused")
    h = host.encode()
    sock.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + struct.pack(">H", port))
    r = recv_exact(sock, 4)
    if r[1] != 0:
        raise TestbedError(f"SOCKS5: CONNECT failed with error {r[1]}")
    alen = {1: 4, 4: 16}.get(r[3])
    if alen is None:
        alen = recv_exact(sock, 1)[0]
    recv_exact(sock, alen + 2)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            raise TestbedError("connection closed early")
        buf += b
    return buf


def recv_http_head(sock, t0):
    """Read an HTTP answer's header (at most 64 KiB) from sock. Returns
    (status, head, the body bytes read with it, ttfb: seconds from t0, a
    time.monotonic() value, to the first byte)."""
    buf = b""
    ttfb = None
    while b"\r\n\r\n" not in buf:
        b = sock.recv(65536)
        if not b:
            raise TestbedError("connection closed before the HTTP header ended")
        if ttfb is None:
            ttfb = time.monotonic() - t0
        buf += b
        if len(buf) > 65536:
            raise TestbedError("HTTP header too long")
    head, body = buf.split(b"\r\n\r\n", 1)
    return int(head.split(b" ", 2)[1]), head, body, ttfb


# --------------------------------------------------------------------------
# slots (address blocks) and the run registry

@contextlib.contextmanager
def registry_lock():
    os.makedirs(os.path.join(REGISTRY, "slots"), exist_ok=True)
    fd = os.open(os.path.join(REGISTRY, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def netns_exists(name):
    return os.path.exists(os.path.join(NETNS_DIR, name))


def read_slot(n):
    try:
        with open(os.path.join(REGISTRY, "slots", str(n))) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def slot_in_use(n):
    info = read_slot(n)
    if not info:
        return False
    # In use while its run's core namespace exists or its run is being built
    # by a live process.
    if netns_exists(info.get("core_ns", "")):
        return True
    pid, st = info.get("owner_pid"), info.get("owner_start")
    return bool(pid and proc_starttime(pid) == st and info.get("building"))


def allocate_slots(nslots, runid, rundir, core_ns):
    with registry_lock():
        for first in range(0, SLOT_COUNT - nslots + 1):
            if all(not slot_in_use(first + k) for k in range(nslots)):
                info = {"runid": runid, "rundir": rundir, "core_ns": core_ns,
                        "first": first, "count": nslots, "owner_pid": os.getpid(),
                        "owner_start": proc_starttime(os.getpid()), "building": True}
                for k in range(nslots):
                    atomic_write(os.path.join(REGISTRY, "slots", str(first + k)),
                                 json.dumps(info))
                return first
    raise TestbedError("no free address slot in 10.77.0.0/16 (too many runs?)")


def mark_slots_built(first, nslots):
    with registry_lock():
        for k in range(nslots):
            p = os.path.join(REGISTRY, "slots", str(first + k))
            info = read_slot(first + k)
            if info:
                info["building"] = False
                atomic_write(p, json.dumps(info))


def release_slots(runid):
    with registry_lock():
        d = os.path.join(REGISTRY, "slots")
        for fn in os.listdir(d):
            info = read_slot(fn)
            if info and info.get("runid") == runid:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(d, fn))


def live_runs():
    runs = {}
    d = os.path.join(REGISTRY, "slots")
    if not os.path.isdir(d):
        return []
    for fn in sorted(os.listdir(d)):
        if not fn.isdigit():
            continue
        info = read_slot(fn)
        if info and slot_in_use(int(fn)):
            runs[info["runid"]] = info
    return list(runs.values())


# --------------------------------------------------------------------------
# a run: state file, processes, namespaces

class Run:
    def __init__(self, rundir):
        self.rundir = os.path.abspath(rundir)
        self.state_path = os.path.join(self.rundir, "state.json")
        self.state = None
        self.popen = {}   # pid -> Popen (only in the process that started them)

    # -- state
    def load(self):
        try:
            with open(self.state_path) as f:
                self.state = json.load(f)
        except OSError:
            raise TestbedError(f"no test-bed state in {self.rundir}")
        except ValueError as e:
            raise TestbedError(f"{self.state_path}: {e}")
        return self

    def save(self):
        atomic_write(self.state_path, json.dumps(self.state, indent=1, sort_keys=True) + "\n")

    @property
    def runid(self):
        return self.state["runid"]

    def ns(self, host):
        return f"tb{self.runid}-{host}"

    def host_dir(self, name):
        return os.path.join(self.rundir, "hosts", name)

    # -- processes
    def spawn(self, host, ns, argv, kind, log_name, env=None):
        """Start argv inside namespace ns, detached from our session; record it."""
        hd = self.host_dir(host)
        os.makedirs(hd, exist_ok=True)
        log = open(os.path.join(hd, log_name), "ab")
        try:
            p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, close_fds=True,
                                 start_new_session=True, env=env)
        finally:
            log.close()
        st = proc_starttime(p.pid)
        for _ in range(50):
            if st is not None or p.poll() is not None:
                break
            time.sleep(0.01)
            st = proc_starttime(p.pid)
        rec = {"host": host, "kind": kind, "pid": p.pid, "start": st, "marker": self.rundir,
               "argv": argv}
        self.popen[p.pid] = p
        self.state["processes"].append(rec)
        self.save()
        debug(f"started {kind} on {host}: pid {p.pid}")
        return rec

    def proc_alive(self, rec):
        pid = rec["pid"]
        p = self.popen.get(pid)
        if p is not None:
            # our own child: exact
            return p.poll() is None
        st = proc_starttime(pid)
        ok = st is not None and st == rec["start"] and rec["marker"] in proc_cmdline(pid)
        if not ok:
            debug(f"pid {pid}: start {st} vs {rec['start']}, cmdline {proc_cmdline(pid)!r}")
        return ok

    def stop_processes(self, recs, grace=10.0):
        live = [r for r in recs if self.proc_alive(r)]
        for r in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(r["pid"], signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            live = [r for r in live if self.proc_alive(r)]
            if not live:
                break
            time.sleep(0.1)
        for r in live:
            if self.proc_alive(r):
                note(f"{r['kind']} on {r['host']} (pid {r['pid']}) ignored SIGTERM; SIGKILL")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(r["pid"], signal.SIGKILL)
        for r in recs:
            p = self.popen.pop(r["pid"], None)
            if p is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=5)

    # -- teardown
    def teardown(self):
        """Stop every process and remove every namespace of the run. Safe to
        call repeatedly and on a half-built run."""
        st = self.state
        st["status"] = "stopping"
        self.save()
        # delayd last: while tor processes close their connections the
        # delay queues must still be served.
        procs = st.get("processes", [])
        self.stop_processes([r for r in procs if r["kind"] != "delayd"])
        self.stop_processes([r for r in procs if r["kind"] == "delayd"])
        # Namespaces named with our run id are ours even if not recorded.
        prefix = f"tb{self.runid}-"
        with contextlib.suppress(OSError):
            for ns in sorted(os.listdir(NETNS_DIR)):
                if ns.startswith(prefix) and ns not in st["namespaces"]:
                    st["namespaces"].append(ns)
        # Anything else still inside our namespaces (e.g. commands started
        # with `exec`) is ours too.
        for ns in st.get("namespaces", []):
            if not netns_exists(ns):
                continue
            for attempt in range(3):
                p = run(["ip", "netns", "pids", ns], check=False)
                pids = [int(x) for x in p.stdout.split() if x.isdigit()]
                if not pids:
                    break
                sig = signal.SIGTERM if attempt == 0 else signal.SIGKILL
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                time.sleep(1.0 if attempt == 0 else 0.3)
        failed = []
        for ns in reversed(st.get("namespaces", [])):
            if netns_exists(ns):
                p = run(["ip", "netns", "del", ns], check=False)
                if p.returncode != 0 and netns_exists(ns):
                    failed.append(ns)
        release_slots(self.runid)
        st["status"] = "down" if not failed else "down-with-errors"
        st["stopped"] = time.time()
        self.save()
        if failed:
            raise TestbedError(f"could not delete namespace(s): {' '.join(failed)}")

    def leftovers(self):
        """What of this run still exists (for tests): namespaces and processes."""
        out = []
        for ns in self.state.get("namespaces", []):
            if netns_exists(ns):
                out.append(f"namespace {ns}")
        for r in self.state.get("processes", []):
            if self.proc_alive(r):
                out.append(f"process {r['pid']} ({r['kind']} on {r['host']})")
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid() and self.rundir + "/" in proc_cmdline(pid):
                if proc_starttime(int(pid)) is not None:
                    out.append(f"process {pid} naming {self.rundir}")
        return sorted(set(out))


# --------------------------------------------------------------------------
# links

def host_addrs(first_slot, index):
    block = first_slot * HOSTS_PER_SLOT + index
    third, fourth = block // HOSTS_PER_SLOT, (block % HOSTS_PER_SLOT) * 4
    return f"{NET_PREFIX}.{third}.{fourth + 1}", f"{NET_PREFIX}.{third}.{fourth + 2}"


def ensure_congestion_control(cc):
    """Make cc usable in namespaces; returns the allowed list we replaced, or None."""
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        avail = f.read().split()
    if cc not in avail:
        # Loading the module makes it available (root).
        run(["modprobe", f"tcp_{cc}"], check=False)
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            avail = f.read().split()
        if cc not in avail:
            raise TestbedError(f"TCP congestion control '{cc}' is not available here "
                               f"(available: {' '.join(avail)})")
    path = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    with open(path) as f:
        allowed = f.read().split()
    if cc in allowed:
        return None
    new = " ".join(allowed + [cc])
    with open(path, "w") as f:
        f.write(new)
    note(f"added {cc} to the host-wide net.ipv4.tcp_allowed_congestion_control "
         f"(was '{' '.join(allowed)}', now '{new}'); it is left in place")
    return " ".join(allowed)


def build_links(run_, hosts, cfg, delayd_path):
    """Create the namespaces, veths, shaping, loss and delay of the run."""
    st = run_.state
    first = st["first_slot"]
    core = run_.ns("core")
    pairs = cfg.get("pairs", [])
    any_loss = any(h.link["loss_up"] or h.link["loss_down"] for h in hosts) or \
        any(p["loss_ab"] or p["loss_ba"] for p in pairs)
    per_packet = cfg["per_packet_loss"] if cfg["per_packet_loss"] is not None else any_loss
    st["per_packet_loss"] = bool(per_packet)

    def add_ns(ns):
        # `ip netns add` fails if the name exists, so we never adopt (and
        # later delete) a namespace we did not create; teardown also finds
        # ours by their tbRUNID- prefix should we die between the two lines.
        run(["ip", "netns", "add", ns])
        st["namespaces"].append(ns)
        run_.save()
        run(["ip", "-n", ns, "link", "set", "lo", "up"])

    add_ns(core)
    nsrun(core, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
    hinfo = st["hosts"]
    for h in hosts:
        ns = run_.ns(h.name)
        core_ip, ip = host_addrs(first, h.index)
        cif = f"h{h.index}"
        hinfo[h.name] = {"ns": ns, "ip": ip, "core_ip": core_ip, "core_if": cif,
                         "role": h.role, "binary": h.binary, "link": h.link,
                         "index": h.index, "dir": run_.host_dir(h.name)}
        add_ns(ns)
        run(["ip", "-n", core, "link", "add", cif, "type", "veth", "peer", "name", "eth0",
             "netns", ns])
        run(["ip", "-n", core, "addr", "add", f"{core_ip}/30", "dev", cif])
        run(["ip", "-n", core, "link", "set", cif, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        route_opts = []
        if "initcwnd" in h.tcp:
            route_opts = ["initcwnd", str(h.tcp["initcwnd"])]
        run(["ip", "-n", ns, "route", "add", "default", "via", core_ip] + route_opts)
        if per_packet:
            run(["ip", "-n", ns, "link", "set", "dev", "eth0", "gso_max_segs", "1"])
        cc = h.tcp.get("congestion_control", cfg["congestion_control"])
        nsrun(ns, ["sysctl", "-qw", f"net.ipv4.tcp_congestion_control={cc}"])
        if "slow_start_after_idle" in h.tcp:
            nsrun(ns, ["sysctl", "-qw", "net.ipv4.tcp_slow_start_after_idle="
                       f"{int(h.tcp['slow_start_after_idle'])}"])
        # rate: uplink on the host's end, downlink on core's end
        for which, dev_ns, dev in (("up", ns, "eth0"), ("down", core, cif)):
            rate = h.link[which]
            if not rate:
                continue
            limit = max(int(rate / 8 * cfg["queue_ms"] / 1000), 10 * 1514)
            run(["tc", "-n", dev_ns, "qdisc", "add", "dev", dev, "root", "handle", "1:",
                 "htb", "default", "10"])
            run(["tc", "-n", dev_ns, "class", "add", "dev", dev, "parent", "1:", "classid",
                 "1:10", "htb", "rate", f"{rate}bit", "ceil", f"{rate}bit", "quantum", "1514"])
            run(["tc", "-n", dev_ns, "qdisc", "add", "dev", dev, "parent", "1:10", "handle",
                 "10:", "bfifo", "limit", str(limit)])
        run_.save()

    # containment (nothing leaves 10.77.0.0/16) and loss: nft in core's
    # forward chain
    rules = [f"    ip daddr != {NET_PREFIX}.0.0/16 drop", "    meta nfproto ipv6 drop"]
    for h in hosts:
        cif = f"h{h.index}"
        for which, match in (("up", "iifname"), ("down", "oifname")):
            p = h.link[f"loss_{which}"]
            if p > 0:
                n = int(round(p / 100 * 1000000))
                rules.append(f'    {match} "{cif}" numgen random mod 1000000 < {n} drop')
    for p in pairs:
        for src, dst, pct in ((p["a"], p["b"], p["loss_ab"]), (p["b"], p["a"], p["loss_ba"])):
            if pct > 0:
                n = int(round(pct / 100 * 1000000))
                rules.append(f"    ip saddr {hinfo[src]['ip']} ip daddr {hinfo[dst]['ip']} "
                             f"numgen random mod 1000000 < {n} drop")
    st["pairs"] = pairs
    if rules:
        text = ("table inet pctor_tb {\n  chain fw {\n"
                "    type filter hook forward priority -300; policy accept;\n"
                + "\n".join(rules) + "\n  }\n}\n")
        path = os.path.join(run_.rundir, "core.nft")
        atomic_write(path, text)
        nsrun(core, ["nft", "-f", path])

    # delay: delayd in core, then the NFQUEUE rules
    links, ipt = [], ["*mangle"]
    for h in hosts:
        cif = f"h{h.index}"
        for which, chain, opt, base in (("up", "FORWARD", "-i", UPQ_BASE),
                                        ("down", "POSTROUTING", "-o", DOWNQ_BASE)):
            d, j = h.link[f"delay_{which}"], h.link[f"jitter_{which}"]
            if d > 0 or j > 0:
                q = base + h.index
                links.append(f"{q}:{d:g}:{j:g}")
                ipt.append(f"-A {chain} {opt} {cif} -j NFQUEUE --queue-num {q}")
    st["delay_links"] = links
    if links:
        if not delayd_path:
            raise TestbedError("links have delay or jitter but pctor-delayd was not found "
                               "(build it: apt-get install libnetfilter-queue-dev libmnl-dev, "
                               "re-run configure; or give --delayd PATH)")
        pidfile = os.path.join(run_.rundir, "delayd.pid")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pidfile)
        argv = [delayd_path, "-m", "200000", "-s", str(cfg["seed"]), "-p", pidfile]
        if cfg["delayd_realtime"]:
            argv.append("-r")
        rec = run_.spawn("core", core, argv + links, "delayd", "delayd.log")
        os.makedirs(run_.host_dir("core"), exist_ok=True)
        deadline = time.monotonic() + 15
        while not os.path.exists(pidfile):
            if not run_.proc_alive(rec):
                raise TestbedError("pctor-delayd exited during start-up: " +
                                   tail(os.path.join(run_.host_dir("core"), "delayd.log")))
            if time.monotonic() > deadline:
                raise TestbedError("pctor-delayd did not bind its queues within 15 s")
            time.sleep(0.05)
        ipt.append("COMMIT")
        path = os.path.join(run_.rundir, "delay.iptables")
        atomic_write(path, "\n".join(ipt) + "\n")
        with open(path) as f:
            nsrun(core, ["iptables-restore", "--noflush"], input=f.read())
    run_.save()


# --------------------------------------------------------------------------
# selftest: measure the links

class Row:
    def __init__(self, link, metric, want, got, lo, hi, method, checked=True):
        self.link, self.metric, self.want, self.got = link, metric, want, got
        self.lo, self.hi, self.method, self.checked = lo, hi, method, checked

    @property
    def ok(self):
        if not self.checked:
            return True
        return self.got is not None and self.lo <= self.got <= self.hi


def icmp_checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def measure_rtt(src_ns, dst_ip, count=100, interval=0.02, wait=2.0):
    """ICMP echo from src_ns to dst_ip; returns the list of RTTs in ms
    (lost echoes are missing)."""
    s = ns_socket(src_ns, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = random.getrandbits(16)
    sent, rtts = {}, []
    # Kernel receive timestamps: a busy machine's scheduling delay of this
    # process must not count as network delay.
    so_ts = getattr(socket, "SO_TIMESTAMPNS", 35)
    s.setsockopt(socket.SOL_SOCKET, so_ts, 1)
    try:
        s.setblocking(False)
        t_next = time.monotonic()
        seq = 0
        end = None
        while True:
            now = time.monotonic()
            if seq < count and now >= t_next:
                payload = struct.pack("!d", now) + b"pctor-testbed" * 3
                hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
                pkt = struct.pack("!BBHHH", 8, 0, icmp_checksum(hdr + payload), ident, seq) + payload
                sent[seq] = time.time_ns()
                s.sendto(pkt, (dst_ip, 0))
                seq += 1
                t_next += interval
                if seq == count:
                    end = now + wait
            if end is not None and (now >= end or len(rtts) == count):
                break
            timeout = max(0.0, (t_next if seq < count else end) - time.monotonic())
            r, _, _ = select.select([s], [], [], timeout)
            if not r:
                continue
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(2048, 256)
                except BlockingIOError:
                    break
                t = time.time_ns()
                for level, ctype, cdata in anc:
                    if level == socket.SOL_SOCKET and ctype == so_ts and len(cdata) >= 16:
                        sec, nsec = struct.unpack("qq", cdata[:16])
                        t = sec * 1000000000 + nsec
                ihl = (data[0] & 0x0F) * 4
                if len(data) < ihl + 8:
                    continue
                typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
                if typ == 0 and rid == ident and rseq in sent:
                    rtts.append((t - sent.pop(rseq)) / 1e6)
    finally:
        s.close()
    return rtts


def measure_tcp(src_ns, dst_ns, dst_ip, port, seconds, warm):
    """Bulk TCP from src_ns to dst_ip:port (listener in dst_ns); goodput in
    bit/s over [warm, seconds] measured at the receiver."""
    ls = ns_socket(dst_ns)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((dst_ip, port))
    ls.listen(1)
    ls.settimeout(10)
    samples = []
    err = []

    def receiver():
        try:
            c, _ = ls.accept()
            c.settimeout(seconds + 30)
            total = 0
            t0 = time.monotonic()
            samples.append((t0, 0))
            while True:
                b = c.recv(262144)
                if not b:
                    break
                total += len(b)
                samples.append((time.monotonic(), total))
            c.close()
        except OSError as e:
            err.append(e)

    th = threading.Thread(target=receiver, daemon=True)
    th.start()
    s = ns_connect(src_ns, (dst_ip, port), timeout=10)
    try:
        buf = b"\0" * 65536
        t0 = time.monotonic()
        s.settimeout(5)
        while time.monotonic() - t0 < seconds:
            try:
                s.send(buf)
            except socket.timeout:
                pass
    finally:
        s.close()
    th.join(seconds + 40)
    ls.close()
    if err or len(samples) < 3:
        return None
    t_start = samples[0][0]
    a = next((x for x in samples if x[0] >= t_start + warm), None)
    b = [x for x in samples if x[0] <= t_start + seconds]
    if a is None or not b or b[-1][0] <= a[0]:
        return None
    b = b[-1]
    return (b[1] - a[1]) * 8 / (b[0] - a[0])


def measure_udp(src_ns, dst_ns, dst_ip, port, pps, count, payload=1200, settle=1.0):
    """Send count datagrams at pps from src_ns; returns (received, wire bit/s
    at the receiver over the arrival span, elapsed)."""
    rs = ns_socket(dst_ns, socket.AF_INET, socket.SOCK_DGRAM)
    rs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    rs.bind((dst_ip, port))
    got = set()
    arrivals = []
    stop = threading.Event()

    def receiver():
        rs.settimeout(0.2)
        while not stop.is_set():
            try:
                data = rs.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if len(data) >= 8:
                seq = struct.unpack("!Q", data[:8])[0]
                if seq not in got:
                    got.add(seq)
                    arrivals.append((time.monotonic(), len(data)))

    th = threading.Thread(target=receiver, daemon=True)
    th.start()
    ss = ns_socket(src_ns, socket.AF_INET, socket.SOCK_DGRAM)
    ss.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    pad = b"\0" * (payload - 8)
    t0 = time.monotonic()
    try:
        i = 0
        while i < count:
            # send what is due, then sleep (>= 0.5 ms: no busy waiting)
            due = min(count, int((time.monotonic() - t0) * pps) + 1)
            while i < due:
                try:
                    ss.sendto(struct.pack("!Q", i) + pad, (dst_ip, port))
                except OSError:
                    pass
                i += 1
            if i < count:
                time.sleep(max(0.0005, t0 + i / pps - time.monotonic()))
    finally:
        ss.close()
    time.sleep(settle)
    stop.set()
    th.join(2)
    rs.close()
    rate = None
    if len(arrivals) > 10:
        # skip the first 10 % (queue filling), count wire bytes
        k = len(arrivals) // 10
        span = arrivals[-1][0] - arrivals[k][0]
        if span > 0:
            rate = sum(n + 42 for _, n in arrivals[k + 1:]) * 8 / span
    return len(got), rate, time.monotonic() - t0


def expected_rtt_sd(jitters):
    return 0.98659 * math.sqrt(sum(j * j for j in jitters))


def selftest_pair(rows, label, src, dst, hinfo, args, port, pairs=()):
    """Measure src -> dst (and back for RTT). src/dst are host infos with the
    link parameters; the probe host has an unlimited, perfect link."""
    sl, dl = src["link"], dst["link"]
    # RTT: src up + dst down, then dst up + src down.
    d_exp = sl["delay_up"] + dl["delay_down"] + dl["delay_up"] + sl["delay_down"]
    jit = [sl["jitter_up"], dl["jitter_down"], dl["jitter_up"], sl["jitter_down"]]
    sd_exp = expected_rtt_sd(jit)
    count = args.pings
    rtts = measure_rtt(src["ns"], dst["ip"], count=count, interval=args.ping_interval / 1000)
    avg = statistics.fmean(rtts) if rtts else None
    tol = 1.0 + 0.02 * d_exp + 3 * sd_exp / math.sqrt(max(len(rtts), 1))
    lo = d_exp - 3 * sd_exp / math.sqrt(max(len(rtts), 1)) - 0.05
    rows.append(Row(label, "rtt avg ms", d_exp, avg, lo, d_exp + tol, "icmp echo"))
    if sd_exp > 0:
        sd = statistics.pstdev(rtts) if len(rtts) > 1 else None
        rows.append(Row(label, "rtt sd ms", sd_exp, sd, sd_exp * 0.65 - 0.1,
                        sd_exp * 1.35 + 0.3, "icmp echo"))
    elif rtts:
        rows.append(Row(label, "rtt sd ms", 0.0, statistics.pstdev(rtts), 0, 0,
                        "icmp echo", checked=False))
    # rate and loss, each direction
    for dirn, a, b in (("->", src, dst), ("<-", dst, src)):
        rate = min([x for x in (a["link"]["up"], b["link"]["down"]) if x] or [0])
        loss_a, loss_b = a["link"]["loss_up"] / 100, b["link"]["loss_down"] / 100
        name_of = {id(i): n for n, i in hinfo.items()}
        loss_p = pair_loss(pairs, name_of.get(id(a)), name_of.get(id(b))) / 100
        path_loss = 1 - (1 - loss_a) * (1 - loss_p) * (1 - loss_b)
        name = f"{label} {dirn}"
        if rate:
            if path_loss == 0:
                g = measure_tcp(a["ns"], b["ns"], b["ip"], port, args.seconds, args.warmup)
                port += 1
                wire = g * 1514 / 1448 if g else None
                rows.append(Row(name, "rate Mbit/s", rate / 1e6, wire / 1e6 if wire else None,
                                rate / 1e6 * args.rate_low, rate / 1e6 * args.rate_high,
                                f"tcp {args.seconds:g}s (wire)"))
            elif rate <= 200e6:
                # Loss-based TCP cannot fill a lossy link: offer UDP at 125 %
                # of the rate and count what arrives.
                payload = 1200
                pps = 1.25 * rate / ((payload + 42) * 8)
                n = int(pps * args.seconds)
                _, wire, _ = measure_udp(a["ns"], b["ns"], b["ip"], port, pps, n,
                                         payload=payload)
                port += 1
                # uplink loss is after the uplink shaper, downlink loss
                # before the downlink shaper
                offered = 1.25 * rate
                after_up = min(offered, a["link"]["up"] or offered) * (1 - loss_a)
                exp = min(after_up * (1 - loss_p) * (1 - loss_b),
                          b["link"]["down"] or float("inf"))
                rows.append(Row(name, "rate Mbit/s", exp / 1e6, wire / 1e6 if wire else None,
                                exp / 1e6 * args.rate_low, exp / 1e6 * args.rate_high,
                                "udp 125% (lossy)"))
        # loss by counting UDP datagrams at a rate well below the link's
        n = args.loss_packets if path_loss > 0 else min(args.loss_packets, 1000)
        pps = min(2000.0, (rate or 1e9) * 0.4 / ((32 + 42) * 8))
        got, _, _ = measure_udp(a["ns"], b["ns"], b["ip"], port, pps, n, payload=32,
                                settle=1.0 + d_exp / 1000)
        port += 1
        lost = 100.0 * (n - got) / n
        sd = 100 * math.sqrt(max(path_loss * (1 - path_loss), 1e-9) / n)
        rows.append(Row(name, "loss %", path_loss * 100, lost,
                        max(0.0, path_loss * 100 - 4 * sd - 0.05), path_loss * 100 + 4 * sd + 0.1,
                        f"udp count n={n}"))
    return port
