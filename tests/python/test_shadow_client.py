# SPDX-License-Identifier: BSD-3-Clause
# test_shadow_client.py -- the Shadow engine's client end, without Shadow:
# the workload's end (workload.run_workload's end_by): requests still
# running then are cut and recorded as aborted; and the whole Shadow client
# (workload.shadow_client): a probe still running at the common start is
# cut, the loops start then, and the process ends by start + end_by.
import json
import os

import pytest

@pytest.mark.skipif("faketime" in os.environ.get("LD_PRELOAD", ""),
                    reason="under libfaketime (check-package's second, "
                    "time-shifted build) the workload's cut never comes: "
                    "not investigated yet")
def test_workload_end_by_cuts_running_requests():
    """A bulk loop whose SOCKS peer never answers: with end_by the workload
    returns after end_by seconds with the request recorded as aborted and
    not counted, instead of running until request_timeout_s."""
    import socket
    import time

    from pctor_lab import workload
    peers = []

    def connect_for(info):
        def connect(timeout):
            a, b = socket.socketpair()
            peers.append(b)   # kept open and silent
            a.settimeout(timeout)
            return a
        return connect

    wl = {"class": "bulk", "model": "bulk", "clients": ["c"], "server": "srv",
          "file": "5MiB", "streams": 1, "stagger_s": 0, "background": False,
          "isolate": False, "think": (1, 1)}
    exp = {"warmup_s": 0, "request_timeout_s": 600, "workload": [wl]}
    hosts = {"c": {"binary": "pctor"},
             "srv": {"ip": "127.0.0.1", "files": {"5MiB": {"sha256": "0" * 64,
                                                            "size": 5 << 20}}}}
    recs = []
    t = time.monotonic()
    n, _ = workload.run_workload(exp, hosts, 1, 300, recs.append, connect_for=connect_for,
                                 end_by=0.5)
    assert time.monotonic() - t < 30
    assert n == 0
    assert len(recs) == 1 and not recs[0]["ok"] and recs[0]["aborted"]
    assert recs[0]["counted"] is False and recs[0]["error"] == "cut when the run ended"
    for p in peers:
        p.close()


@pytest.mark.skipif("faketime" in os.environ.get("LD_PRELOAD", ""),
                    reason="under libfaketime the workload's cut never comes "
                    "(as above)")
def test_shadow_client_ends_before_the_stop(tmp_path):
    """The seed-6 fault: a bulk host's probe (a whole 5 MiB download) that
    trickles is cut at the common start instead of running past the
    simulation's stop; the loops start at that start (not after the
    probe) and their requests, trickling too, are cut at start + end_by
    and recorded as aborted, and shadow_client returns."""
    import socket
    import threading
    import time

    from pctor_lab import workload
    peers, done = [], threading.Event()

    def serve(s):
        # a SOCKS5 server without authentication that answers the GET with
        # a 5 MiB Content-Length and then 100 bytes every 50 ms, for at
        # most 20 s (so that a regression fails rather than hangs)
        try:
            s.settimeout(20)
            assert s.recv(3) == b"\x05\x01\x00"
            s.sendall(b"\x05\x00")
            head = s.recv(5)
            s.recv(head[4] + 2)
            s.sendall(b"\x05\x00\x00\x01" + bytes(6))
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += s.recv(4096)
            s.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 5242880\r\n\r\n")
            t = time.monotonic()
            while not done.is_set() and time.monotonic() - t < 20:
                s.sendall(b"x" * 100)
                time.sleep(0.05)
        except (OSError, AssertionError, IndexError):
            pass
        finally:
            s.close()

    def connect_for(info):
        def connect(timeout):
            a, b = socket.socketpair()
            th = threading.Thread(target=serve, args=(b,), daemon=True)
            th.start()
            peers.append(th)
            a.settimeout(timeout)
            return a
        return connect

    wl = {"class": "bulk", "model": "bulk", "clients": ["c"], "server": "srv",
          "file": "5MiB", "streams": 2, "stagger_s": 0, "background": False,
          "isolate": False, "think": [1, 1]}
    out = tmp_path / "records.jsonl"
    t0 = time.time()
    spec = {"workload": [wl], "warmup_s": 0, "request_timeout_s": 180,
            "hosts": {"c": {"binary": "pctor"},
                      "srv": {"ip": "127.0.0.1",
                              "files": {"5MiB": {"sha256": "0" * 64, "size": 5 << 20}}}},
            "seed": 6, "duration": 300, "client": "c", "start_wall": t0 + 1.0,
            "end_by": 1.5, "out": str(out)}
    try:
        n = workload.shadow_client(spec, connect_for=connect_for)
        took = time.time() - t0
    finally:
        done.set()
    assert took < 10, took          # start + end_by = 2.5 s, plus the joins
    assert n == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 2            # one request per loop, both cut
    for r in recs:
        assert not r["ok"] and r["aborted"] and r["counted"] is False
        assert r["error"] == "cut when the run ended"
        assert 0 < r["bytes"] < 5 << 20
        # the loops started at the common start, not when the probe ended
        assert abs(r["start"] - spec["start_wall"]) < 0.5, r["start"] - spec["start_wall"]
    assert len(peers) == 3           # the probe's connection and the loops' two


def test_local_socks_connect_rotates_ports(monkeypatch):
    """Inside Shadow the workload binds its SOCKS connections to ports
    taken in turn (Shadow may otherwise reuse the port of a connection the
    SocksPort has not closed yet, and the new SYN is ignored for 31 s);
    a port in use is skipped."""
    import socket
    from pctor_lab import workload
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    monkeypatch.setattr(workload, "SOCKSPORT", lst.getsockname()[1])
    lo, hi = workload.SHADOW_SOCKS_PORTS
    # find two free consecutive ports in the range and start there
    for start in range(lo + 500, hi - 2):
        probe = [socket.socket(), socket.socket(), socket.socket()]
        try:
            for i, p in enumerate(probe):
                p.bind(("127.0.0.1", start + i))
            break
        except OSError:
            continue
        finally:
            for p in probe:
                p.close()
    monkeypatch.setattr(workload, "_shadow_port", [start])
    busy = socket.socket()
    busy.bind(("127.0.0.1", start + 1))
    connect = workload.local_socks_connect({})
    a = connect(5)
    b = connect(5)
    try:
        assert a.getsockname()[1] == start
        assert b.getsockname()[1] == start + 2     # start + 1 was taken
        assert workload._shadow_port[0] == start + 3
    finally:
        for s in (a, b, busy, lst):
            s.close()
    # the counter wraps at the top of the range
    monkeypatch.setattr(workload, "_shadow_port", [hi])
    assert workload._next_shadow_port() == hi
    assert workload._next_shadow_port() == lo
