# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.workload -- pctor-experiment's workload: request loops over
# SOCKS5 (a username per loop when isolated, so a circuit per loop), each
# request timed (time to first byte, total, throughput) and its sha256
# checked, and `ss -tin` samples of the relays' relay-to-relay connections
# (parse_ss).
#
# - The workload is run in pctor-experiment's process: threads enter the
#   client's namespace just to create their sockets (ns_socks_connect), or
#   under Shadow connect to 127.0.0.1 (local_socks_connect). Foreground
#   loops start after warmup_s and start no request after warmup_s +
#   duration_s; background loops (bulk transfers that load the network)
#   start at once and are cut when the last foreground loop finishes.
#   Requests that started during the warm-up are recorded but not counted.

import contextlib
import datetime
import hashlib
import json
import random
import re
import socket
import subprocess
import threading
import time

from .common import HTTPPORT, ORPORT, SOCKSPORT, TestbedError
from .definition import PROG, note
from .netns import ns_connect, recv_http_head, socks5_open
from .control import ControlError
from .paths import PathPinner, draw_paths, path_candidates


# --------------------------------------------------------------------------
# the workload

def loop_name(wl, client, index):
    """A request loop's name: the paired paths' key and its records'."""
    return f"{wl['class']}-{client}-{index}"


class Stream:
    """One request loop (a virtual client)."""

    def __init__(self, wl, client, index, rnd):
        self.wl, self.client, self.index, self.rnd = wl, client, index, rnd
        self.sock = None
        self.lock = threading.Lock()
        self.name = loop_name(wl, client, index)
        self.user = self.name if wl["isolate"] else None

    def abort(self):
        with self.lock:
            if self.sock is not None:
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)


def fetch(stream, connect, ip, path, want_sha, size, timeout, stop):
    """One HTTP GET through the client's SocksPort (connect(timeout) opens a
    TCP connection to it); a record (times in s from the start of the
    SOCKS connection)."""
    t0 = time.monotonic()
    rec = {"start": round(time.time(), 6)}
    s = None
    n = 0
    try:
        s = connect(timeout)
        rec["socks_tcp"] = round(time.monotonic() - t0, 6)
        with stream.lock:
            stream.sock = s
        if stop.is_set():
            raise TestbedError("stopped")
        socks5_open(s, ip, HTTPPORT, timeout, stream.user)
        rec["connect"] = round(time.monotonic() - t0, 6)
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: {ip}\r\nUser-Agent: {PROG}\r\n\r\n".encode())
        status, head, body, ttfb = recv_http_head(s, t0)
        # The download ends with the last byte Content-Length announces
        # (as for a browser), not with the server's FIN: Shadow's TCP now
        # and then never delivers the FIN of a connection the server closed
        # with data still queued (doc/experiments.md, Calibration).
        m = re.search(rb"(?im)^content-length:\s*([0-9]{1,12})\s*$", head)
        clen = int(m.group(1)) if m else None
        digest = hashlib.sha256(body)
        n = len(body)
        while clen is None or n < clen:
            b = s.recv(262144)
            if not b:
                break
            n += len(b)
            digest.update(b)
        total = time.monotonic() - t0
        rec.update({"status": status, "bytes": n, "ttfb": round(ttfb, 6),
                    "total": round(total, 6)})
        rec["ok"] = status == 200 and n == size and digest.hexdigest() == want_sha
        if not rec["ok"]:
            rec["error"] = "bad status, size or sha256"
        if total > ttfb:
            rec["rate"] = round(n / 1000 / total, 3)
    except (OSError, TestbedError, ValueError, IndexError) as e:
        rec.update({"ok": False, "error": str(e) or type(e).__name__, "bytes": n})
    finally:
        with stream.lock:
            stream.sock = None
        if s is not None:
            s.close()
    rec["elapsed"] = round(time.monotonic() - t0, 6)
    if stop.is_set() and not rec["ok"]:
        rec["aborted"] = True
        rec["error"] = "cut when the run ended"
    return rec


def ns_socks_connect(info):
    """The connect function of a test-bed client (its namespace's SocksPort)."""
    return lambda timeout: ns_connect(info["ns"], ("127.0.0.1", SOCKSPORT),
                                      timeout=timeout)


def start_pinners(exp, hosts, streams, seed, timeout=180):
    """experiment.paired_paths: the loops' paths drawn from the seed and a
    PathPinner per client host, every loop's circuit built. Returns
    ({client: pinner}, {loop: path})."""
    net = exp["network"]
    paths = draw_paths(path_candidates(net["hosts"], net.get("defaults")),
                       [st.name for st in streams], seed)
    fps = {n: i["fingerprint"] for n, i in hosts.items() if i.get("fingerprint")}
    pinners = {}
    try:
        for client in sorted({st.client for st in streams}):
            mine = {st.name: paths[st.name] for st in streams if st.client == client}
            pinners[client] = PathPinner(hosts[client].get("ns"), mine, fps)
            pinners[client].start()
        for p in pinners.values():
            p.wait_built(timeout)
    except BaseException:
        for p in pinners.values():
            p.stop()
        raise
    note(f"workload: paired paths, {len(paths)} circuits built on the seed's paths")
    return pinners, paths


def run_workload(exp, hosts, seed, duration, emit, connect_for=ns_socks_connect,
                 only_client=None, ss_path=None, end_by=None, pin_info=None,
                 pinned=None):
    """Run the workload on a live network; emit(record) for every request.
    hosts: the run's hosts (ip, binary, files of servers); connect_for(info)
    gives the function that opens a connection to a client's SocksPort;
    only_client: run just that client's loops (Shadow runs one workload
    process per client host); end_by: seconds after the start at which
    requests still running are cut (recorded as aborted, not counted), so
    that the process ends before a simulation does. Returns (the number of measured requests --
    foreground, after the warm-up --, the wall-clock time the workload
    started, or began building its pinned circuits). With
    experiment.paired_paths (live networks only), each loop's streams go
    over its seed's path (paths.py); pin_info (a dict)
    gets the pinners' summary. pinned: ({client: PathPinner}, {loop:
    path}) already started (Shadow: shadow_client builds them before the
    start), used instead of experiment.paired_paths."""
    warm = exp["warmup_s"]
    stop_bg = threading.Event()
    stop_fg = threading.Event()   # set only when the run is interrupted
    streams, threads = [], []
    counted = [0]
    lock = threading.Lock()

    pinners, paths = pinned if pinned else ({}, {})

    def pinned_connect(connect, pinner, name):
        def c(timeout):
            s = connect(timeout)
            pinner.register(s.getsockname()[1], name)
            return s
        return c

    def loop(st):
        wl, client = st.wl, st.client
        info = hosts[client]
        connect = connect_for(info)
        if client in pinners:
            connect = pinned_connect(connect, pinners[client], st.name)
        srv = hosts[wl["server"]]
        finfo = srv["files"][wl["file"]]
        bg = wl["background"]
        stop = stop_bg if bg else stop_fg
        start_at = (t0 if bg else t0 + warm) + st.rnd.uniform(0, wl["stagger_s"])
        while time.monotonic() < start_at and not stop.is_set():
            time.sleep(min(0.2, max(0.0, start_at - time.monotonic())))
        first = True
        while not stop.is_set():
            now = time.monotonic()
            if not bg and now >= fg_deadline:
                break
            rec = fetch(st, connect, srv["ip"], f"/{wl['file']}", finfo["sha256"],
                        finfo["size"], exp["request_timeout_s"], stop)
            rel = now - t0
            rec.update({"class": wl["class"], "model": wl["model"], "client": client,
                        "binary": info["binary"], "stream": st.index, "file": wl["file"],
                        "size": finfo["size"], "background": bg, "t": round(rel, 3),
                        "warmup": rel < warm, "first": first})
            if st.name in paths:
                rec["path"] = "-".join(paths[st.name])
            first = False
            if rec.get("aborted"):
                rec["counted"] = False
            else:
                rec["counted"] = not rec["warmup"]
            emit(rec)
            if rec["counted"] and not bg:
                with lock:
                    counted[0] += 1
            # A failed request is retried after a second, not at once: a
            # client that cannot build circuits must not spin (in Shadow,
            # a loop that never blocks long would not let time advance).
            if (wl["model"] == "web" or not rec["ok"]) and not stop.is_set():
                pause = st.rnd.uniform(*wl["think"]) if wl["model"] == "web" else 1.0
                end = time.monotonic() + pause
                while time.monotonic() < end and not stop.is_set():
                    if not bg and time.monotonic() >= fg_deadline:
                        break
                    time.sleep(min(0.2, max(0.0, end - time.monotonic())))

    k = 0
    for wl in exp["workload"]:
        for client in wl["clients"]:
            for i in range(wl["streams"]):
                if only_client is not None and client != only_client:
                    k += 1
                    continue
                st = Stream(wl, client, i, random.Random(f"{seed}-{wl['class']}-{client}-{i}-{k}"))
                streams.append(st)
                threads.append(threading.Thread(target=loop, args=(st,), daemon=True))
                k += 1
    # the workload's circuits are built from here on (report.py classes the
    # circuits measured before as the test bed's "setup")
    wall_circuits = time.time()
    if exp.get("paired_paths") and not pinned:
        if connect_for is not ns_socks_connect:
            raise TestbedError("paired_paths needs the test bed (namespaces)")
        pinners, paths = start_pinners(exp, hosts, streams, seed)
    t0 = time.monotonic()
    wall0 = time.time()
    fg_deadline = t0 + warm + duration
    sampler = None
    if exp.get("ss_interval_ms") and ss_path:  # (namespaces only: ss in each host)
        sampler = threading.Thread(target=ss_sampler, daemon=True,
                                   args=(hosts, exp["ss_interval_ms"] / 1000, t0, stop_bg,
                                         ss_path))
        sampler.start()
    note(f"workload: {len(threads)} loops, {warm:g} s warm-up + {duration:g} s "
         f"(seed {seed}, started {datetime.datetime.fromtimestamp(wall0):%H:%M:%S})")
    for th in threads:
        th.start()
    try:
        fg = [th for th, st in zip(threads, streams) if not st.wl["background"]]
        for th in fg:
            while th.is_alive():
                th.join(0.5)
                if end_by is not None and time.monotonic() - t0 >= end_by:
                    left = sum(1 for t in fg if t.is_alive())
                    note(f"workload: {left} loops still in a request {end_by:g} s after "
                         f"the start: cut")
                    break
            else:
                continue
            break
    finally:
        # normally only background loops are left; after an interrupt all
        stop_bg.set()
        stop_fg.set()
        for st in streams:
            st.abort()
        for th in threads:
            th.join(10)
        if sampler:
            sampler.join(10)
        for client, p in pinners.items():
            p.stop()
            if pin_info is not None:
                pin_info[client] = p.summary()
    return counted[0], min(wall0, wall_circuits)


# --------------------------------------------------------------------------
# ss -tin snapshots of the relays' relay-to-relay connections

SS_FIELDS = {"cwnd": int, "ssthresh": int, "bytes_acked": int, "bytes_received": int,
             "notsent": int, "unacked": int, "lastsnd": int, "retrans": None,
             "mss": int, "rto": float}
SS_RATE = re.compile(r"\b(pacing_rate|delivery_rate|send) ([0-9.]+)([KMG]?)bps")
# [State] Recv-Q Send-Q Local:Port Peer:Port details (no State column
# when ss is given a state filter)
SS_ADDR = re.compile(r"^(?:[A-Z][A-Z0-9-]*\s+)?(\d+)\s+(\d+)\s+(\S+):(\d+)\s+(\S+):(\d+)"
                     r"\s+(.*)$")


def parse_ss(text, relay_ips):
    """Parse `ss -tinHO` (one connection per line). Returns dicts for the
    TCP connections between two relays' ORPorts."""
    out = []
    for line in text.splitlines():
        m = SS_ADDR.match(line.strip())
        if not m:
            continue
        lip, lport, pip, pport = m.group(3), int(m.group(4)), m.group(5), int(m.group(6))
        if pip not in relay_ips or (lport != ORPORT and pport != ORPORT):
            continue
        rest = m.group(7)
        rec = {"local": f"{lip}:{lport}", "peer": f"{pip}:{pport}",
               "peer_ip": pip, "recvq": int(m.group(1)), "sendq": int(m.group(2)),
               "app_limited": " app_limited" in rest}
        for tok in rest.split():
            if ":" not in tok:
                continue
            k, _, v = tok.partition(":")
            if k in SS_FIELDS and SS_FIELDS[k]:
                with contextlib.suppress(ValueError):
                    rec[k] = SS_FIELDS[k](v)
            elif k == "rtt":
                with contextlib.suppress(ValueError):
                    rec["rtt_ms"] = float(v.split("/")[0])
            elif k == "retrans":
                with contextlib.suppress(ValueError, IndexError):
                    rec["retrans_total"] = int(v.split("/")[1])
        for cc in ("cubic", "bbr", "reno"):
            if f" {cc} " in f" {rest} ":
                rec["cc"] = cc
        for name, val, unit in SS_RATE.findall(rest):
            rec[f"{name}_bps"] = float(val) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[unit]
        out.append(rec)
    return out


def ss_sampler(hosts, interval, t0, stop, path):
    """Every interval seconds until stop: `ss -tinHO` in each relay's
    namespace, the relay-to-relay connections appended to path."""
    relays = {n: i for n, i in hosts.items() if i["role"] in ("relay", "exit")}
    relay_ips = {i["ip"] for i in relays.values()}
    with open(path, "a") as f:
        while not stop.is_set():
            t = time.monotonic()
            for name, info in sorted(relays.items()):
                try:
                    p = subprocess.run(["ip", "netns", "exec", info["ns"], "ss", "-tinHO",
                                        "state", "established"], capture_output=True,
                                       text=True, timeout=10)
                except (OSError, subprocess.SubprocessError):
                    continue
                for rec in parse_ss(p.stdout, relay_ips):
                    rec.update({"t": round(t - t0, 3), "relay": name})
                    f.write(json.dumps(rec, sort_keys=True) + "\n")
            f.flush()
            stop.wait(max(0.0, interval - (time.monotonic() - t)))


# --------------------------------------------------------------------------
# the Shadow engine (scripts/pctor-shadow compiles and runs; the workload
# runs inside the simulation as `pctor-experiment shadow-client`)

# Shadow (3.3) picks ephemeral ports at random from 10000-65535 and may give
# a new socket the local port of a connection that is still open on the
# same host to another peer (seen: the pinner's ControlPort connection,
# 127.0.0.1:13076 -> :9051, and a new SOCKS connection from 127.0.0.1:13076
# -> :9050 at 66 s of a calibration run). The new connection's handshake
# then failed until its fifth SYN retransmission, 31 s later, while Linux
# would have been fine. So inside Shadow the workload binds its SOCKS
# connections itself, to ports taken in turn from a range below Shadow's
# random ones, which no other socket of the host is given.
SHADOW_SOCKS_PORTS = (1100, 8999)
_shadow_port = [SHADOW_SOCKS_PORTS[0]]
_shadow_port_lock = threading.Lock()


def _next_shadow_port():
    with _shadow_port_lock:
        p = _shadow_port[0]
        _shadow_port[0] = p + 1 if p < SHADOW_SOCKS_PORTS[1] else SHADOW_SOCKS_PORTS[0]
        return p


def local_socks_connect(info):
    def connect(timeout):
        last = None
        for _ in range(64):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", _next_shadow_port()))
            except OSError as e:   # in use: take the next one
                s.close()
                last = e
                continue
            s.settimeout(timeout)
            try:
                s.connect(("127.0.0.1", SOCKSPORT))
            except OSError:
                s.close()
                raise
            return s
        raise OSError(f"no free local port for a SOCKS connection: {last}")
    return connect


def shadow_client(spec, connect_for=local_socks_connect):
    """Inside a Shadow simulation: one client host's request loops (spec:
    the host's workload.json). Probes until a request through a circuit
    succeeds, then runs the loops from the common start, spec["start_wall"]
    (a time.time() value), until spec["end_by"] seconds after that start,
    when requests still running are cut (recorded as aborted), so that the
    process exits before the simulation stops. Both bounds are absolute:
    a probe still running at the start is cut too (a bulk host's probe, a
    whole download, could take longer than the simulation; the loops then
    started late or never, see doc/experiments.md, seed 6), and the loops
    start at the common start whatever the probe did. Records are appended
    to spec["out"]; returns the number of measured requests."""
    exp = {"workload": [dict(w, think=tuple(w["think"])) for w in spec["workload"]],
           "warmup_s": spec["warmup_s"], "request_timeout_s": spec["request_timeout_s"]}
    hosts, client = spec["hosts"], spec["client"]
    start = spec["start_wall"]
    end_at = None if spec.get("end_by") is None else start + spec["end_by"]
    wl = [w for w in exp["workload"] if client in w["clients"]][0]
    srv = hosts[wl["server"]]
    finfo = srv["files"][wl["file"]]
    connect = connect_for(hosts[client])
    probe = Stream(dict(wl, isolate=False), client, 0, random.Random(0))
    stop = threading.Event()
    pinned = shadow_pinner(spec, exp, client) if spec.get("paired_paths") else None

    def cut_probe():
        stop.set()
        probe.abort()
    cutter = threading.Timer(max(0.0, start - time.time()), cut_probe)
    cutter.daemon = True
    cutter.start()
    tries, worked, cut = 0, False, False
    try:
        while time.time() < start and not stop.is_set():
            tries += 1
            rec = fetch(probe, connect, srv["ip"], f"/{wl['file']}", finfo["sha256"],
                        finfo["size"], spec["request_timeout_s"], stop)
            if rec["ok"]:
                worked = True
                break
            cut = bool(rec.get("aborted"))
            stop.wait(min(2.0, max(0.0, start - time.time())))
    finally:
        cutter.cancel()
    if worked:
        note(f"{client}: a request through a circuit worked (try {tries})")
    elif cut:
        note(f"{client}: the probe (try {tries}) was still running at the workload's "
             f"start: cut")
    else:
        note(f"{client}: no request worked before the workload's start ({tries} tries)")
    if pinned:
        p = pinned[0][client]
        with p.lock:
            missing = sorted(l for l in p.paths if p.circ_of.get(l) not in p.built)
        note(f"{client}: paired paths, {len(p.paths) - len(missing)} of {len(p.paths)} "
             f"circuits built at the start" +
             (f" (not yet: {', '.join(missing)}; their streams wait for them)"
              if missing else ""))
    time.sleep(max(0.0, start - time.time()))
    end_by = None if end_at is None else max(0.0, end_at - time.time())
    lock = threading.Lock()
    pin_info = {}
    try:
        with open(spec["out"], "a") as out:
            def emit(rec):
                with lock:
                    out.write(json.dumps(rec, sort_keys=True) + "\n")
                    out.flush()
            n, _ = run_workload(exp, hosts, spec["seed"], spec["duration"], emit,
                                connect_for=connect_for, only_client=client,
                                end_by=end_by, pin_info=pin_info, pinned=pinned)
    finally:
        if pinned:
            for c, p in pinned[0].items():
                if c not in pin_info:  # run_workload did not get to it
                    p.stop()
                    pin_info[c] = p.summary()
            with open(spec["pins"], "w") as f:
                json.dump(pin_info, f, sort_keys=True)
    note(f"{client}: done, {n} measured requests")
    return n


def shadow_pinner(spec, exp, client):
    """experiment.paired_paths inside Shadow: the client host's loops get
    the seed's paths (paths.draw_paths over spec["path_relays"], the same
    draw as on the test bed, loop by loop), pinned through the pctor
    client's ControlPort on this host. Started before the probe, so that
    the circuits are built by the common start; a loop whose circuit is
    not built yet then waits for it. Returns run_workload's `pinned`."""
    loops = [loop_name(w, client, i) for w in exp["workload"]
             if client in w["clients"] for i in range(w["streams"])]
    paths = draw_paths(spec["path_relays"], loops, spec["seed"])
    p = PathPinner(None, paths, spec["fingerprints"])
    p.start(timeout=120)
    if spec.get("rebuild_after_links"):
        # A datagram CircuitTransport: relays learn each other's
        # DatagramPort on a TLS link, so these first circuits made the
        # links and went over TLS themselves. Build them again once (what
        # the test bed does after waiting for the links).
        try:
            p.wait_built(max(10.0, spec["start_wall"] - time.time() - 30))
        except ControlError as e:
            note(f"{client}: paired paths: {e}")
        time.sleep(5)
        with p.lock:
            cids = [p.circ_of[l] for l in p.paths if p.circ_of.get(l) in p.built]
        for cid in cids:
            with contextlib.suppress(ControlError, OSError):
                p.cmd(f"CLOSECIRCUIT {cid}")
        note(f"{client}: paired paths: closed the {len(cids)} first circuits "
             f"(built before the relays' datagram links); building them again")
    return {client: p}, paths
