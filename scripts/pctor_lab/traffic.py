# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.traffic -- pctor-testbed's own client loops (`traffic`,
# `workload`): web (one file, then a think time) and bulk (files back to
# back) requests through a client's SocksPort, one JSON line per request
# (Emitter), and the summary printed at the end. pctor-experiment's richer
# request loops are in workload.py.

import json
import statistics
import sys
import threading
import time

from .common import HTTPPORT, TestbedError, note
from .network import socks_http_get


def pick_file(hosts, server, size):
    servers = [n for n, i in hosts.items() if i["role"] == "server"]
    srv = server or (servers[0] if servers else None)
    if srv not in hosts or not hosts[srv].get("files"):
        raise TestbedError("no server with files in the run (give --server HOST)")
    files = hosts[srv]["files"]
    fname = next((f for f, v in files.items() if v["size"] == size), None)
    if fname is None:
        raise TestbedError(f"server {srv} has no file of {size} bytes "
                           f"(has: {', '.join(files)}; add it to its `files`)")
    return srv, fname, files[fname]["sha256"]


def run_stream(run_, client, model, server, size, think, deadline, count, timeout, rnd,
               emit, stream=0):
    """One request loop of a client: web = one file, then a think time
    uniform in think=(min, max) seconds; bulk = files back to back. Stops
    starting requests at deadline (monotonic) or after count requests.
    Every request becomes one record passed to emit(). TTFB and total are
    seconds from the start of the SOCKS connection to the first byte of the
    HTTP response and to its last byte; connect is when the SOCKS CONNECT
    (the stream through the circuit) succeeded."""
    hosts = run_.state["hosts"]
    info = hosts[client]
    srv, fname, want = pick_file(hosts, server, size)
    n = ok = 0
    while time.monotonic() < deadline and (not count or n < count):
        rec = {"client": client, "binary": info["binary"], "model": model, "stream": stream,
               "server": srv, "file": fname, "size": size, "start": round(time.time(), 6)}
        try:
            r = socks_http_get(info["ns"], hosts[srv]["ip"], HTTPPORT, f"/{fname}",
                               timeout=timeout, stream_to=True)
            rec.update({"ok": r["status"] == 200 and r["sha256"] == want and
                        r["bytes"] == size, "status": r["status"], "bytes": r["bytes"],
                        "connect": round(r["connect"], 6), "ttfb": round(r["ttfb"], 6),
                        "total": round(r["total"], 6)})
            if not rec["ok"]:
                rec["error"] = "bad status, size or sha256"
        except (OSError, TestbedError) as e:
            rec.update({"ok": False, "error": str(e) or type(e).__name__})
        n += 1
        ok += rec["ok"]
        emit(rec)
        if count and n >= count:
            break
        if model == "web":
            pause = rnd.uniform(*think)
            time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
    return n, ok


class Emitter:
    """Thread-safe JSON-lines writer that also keeps the records."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.f = open(path, "a") if path else sys.stdout
        self.records = []

    def __call__(self, rec):
        with self.lock:
            self.records.append(rec)
            print(json.dumps(rec, sort_keys=True), file=self.f, flush=True)

    def close(self):
        if self.f is not sys.stdout:
            self.f.close()


def summarize(records):
    groups = {}
    for r in records:
        groups.setdefault((r["client"], r["model"]), []).append(r)
    for (c, m), rs in sorted(groups.items()):
        good = [r for r in rs if r["ok"]]
        line = f"{c} {m}: {len(good)}/{len(rs)} ok"
        if good:
            tt = sorted(r["ttfb"] for r in good)
            to = sorted(r["total"] for r in good)
            line += (f"; ttfb median {statistics.median(tt):.3f}s; total median "
                     f"{statistics.median(to):.3f}s, p90 {to[int(0.9 * (len(to) - 1))]:.3f}s")
        note(line)


def check_client(run_, client):
    hosts = run_.state["hosts"]
    if client not in hosts or hosts[client]["role"] != "client":
        raise TestbedError(f"'{client}' is not a client of run {run_.runid}")
