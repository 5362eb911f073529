# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.paths -- paired paths (experiment.paired_paths): every request
# loop (virtual client) gets a path drawn from the seed, the same in every
# configuration of that seed, and its streams are pinned to a circuit over
# that path through the pctor client's ControlPort.
#
# - draw_paths(): per loop, an exit, a guard and a middle, each drawn with
#   probability proportional to its access-link capacity (min(up, down) of
#   the definition's network, before any configuration's link changes), from
#   a random.Random seeded by (seed, loop): a loop's path depends only on the
#   seed, its own name and the network, not on the other loops or the
#   configuration. Exits are the hosts with role "exit", guards those with
#   role "relay" (what the test bed's consensus flags Exit and Guard),
#   middles any other non-exit relay; the three are distinct.
# - PathPinner: through the client host's ControlPort (control.py), it builds one circuit per loop
#   (EXTENDCIRCUIT 0 $guard,$middle,$exit), holds SOCKS streams
#   (__LeaveStreamsUnattached) and attaches each to its loop's circuit,
#   recognising the loop by the stream's SOURCE_ADDR (the loop's own SOCKS
#   connection). A circuit that closes is built again over the same path.
#   Every attachment and every BUILT path is recorded, so that the run can
#   show that the streams went where they were pinned.

import contextlib
import random
import threading
import time

from .common import TestbedError, parse_rate
from .control import ControlConnection, ControlError
from .definition import note


# --------------------------------------------------------------------------
# drawing

def path_candidates(hosts, defaults=None):
    """The relays of a definition's network hosts (dicts with name, role, up,
    down; defaults: the network's [defaults]): [{name, bw (bit/s), guard,
    exit}]."""
    defaults = defaults or {}
    out = []
    for h in hosts:
        role = h.get("role")
        if role not in ("relay", "exit"):
            continue
        bw = min(parse_rate(h.get("up", defaults.get("up", 0)), f"{h['name']}.up"),
                 parse_rate(h.get("down", defaults.get("down", 0)), f"{h['name']}.down"))
        out.append({"name": h["name"], "bw": bw, "guard": role == "relay",
                    "exit": role == "exit"})
    return out


def _weighted(rnd, cands):
    total = sum(c["bw"] for c in cands)
    if total <= 0:
        return rnd.choice(cands)
    x = rnd.uniform(0, total)
    for c in cands:
        x -= c["bw"]
        if x < 0:
            return c
    return cands[-1]


def draw_paths(relays, loops, seed):
    """{loop: (guard, middle, exit)} (host names) for each loop name."""
    exits = [r for r in relays if r["exit"]]
    if not exits:
        raise TestbedError("paired paths: the network has no exit")
    out = {}
    for loop in loops:
        rnd = random.Random(f"paired-path-{seed}-{loop}")
        x = _weighted(rnd, exits)
        guards = [r for r in relays if r["guard"] and r["name"] != x["name"]]
        if not guards:
            raise TestbedError("paired paths: no guard besides the exit")
        g = _weighted(rnd, guards)
        # Exits are middles only when nothing else is left, as Tor's
        # bandwidth weights do when exit capacity is scarce (below a third
        # of the total, as in the test bed's networks).
        middles = [r for r in relays if r["name"] not in (g["name"], x["name"])]
        if any(not r["exit"] for r in middles):
            middles = [r for r in middles if not r["exit"]]
        if not middles:
            raise TestbedError("paired paths: no middle besides guard and exit")
        m = _weighted(rnd, middles)
        out[loop] = (g["name"], m["name"], x["name"])
    return out


def check_flags(paths, fingerprints, flags):
    """Problems with the drawn paths against a consensus: flags is
    {fingerprint (hex): [flags]}. Returns a list of strings (empty: fine)."""
    bad = []
    for loop, path in sorted(paths.items()):
        for pos, name in zip(("guard", "middle", "exit"), path):
            fl = flags.get(fingerprints.get(name, ""), [])
            want = ["Running", "Valid"] + {"guard": ["Guard"], "exit": ["Exit"]}.get(pos, [])
            miss = [w for w in want if w not in fl]
            if miss:
                bad.append(f"{loop}: {pos} {name} lacks {','.join(miss)}")
    return bad


# --------------------------------------------------------------------------
# the controller

def _path_names(field, by_fp):
    """A CIRC event's path ($FP~nick,...) as host names."""
    out = []
    for hop in field.split(","):
        fp = hop.lstrip("$").split("~")[0].split("=")[0].upper()
        out.append(by_fp.get(fp, fp))
    return tuple(out)


class PathPinner:
    """Pins the streams of one client host's loops to circuits over their
    drawn paths. loop names -> (guard, middle, exit) host names;
    fingerprints: host name -> hex fingerprint."""

    def __init__(self, ns, paths, fingerprints, log=None):
        self.ns, self.paths, self.fps = ns, paths, fingerprints
        self.by_fp = {v.upper(): k for k, v in fingerprints.items()}
        self.log = log
        self.lock = threading.Lock()
        self.conn = ControlConnection(ns, on_event=self._on_event)
        self.stopping = False
        self.circ_of = {}        # loop -> circuit id (str), built or building
        self.built = {}          # circuit id -> path (names) once BUILT
        self.loop_of_circ = {}   # circuit id -> loop
        self.port_loop = {}      # SOCKS source port -> loop
        self.pending = {}        # loop -> [stream ids]
        self.stream_loop = {}    # stream id -> loop
        self.attached = {}       # loop -> number of streams attached
        self.unknown = 0         # streams of no loop (attached by pctor)
        self.mismatch = []       # circuits whose BUILT path was not the drawn one
        self.builds = {}         # loop -> circuits built
        self.checked = {}        # streams SUCCEEDED on their loop's circuit or not
        self.circuit_log = {}    # every circuit id that was BUILT -> its loop

    # -- protocol
    def cmd(self, text, timeout=60):
        return self.conn.cmd(text, timeout)

    def start(self, timeout=60):
        self.conn.open(timeout=10, retry_for=timeout)
        self.conn.authenticate()
        self.cmd("SETEVENTS CIRC STREAM")
        self.cmd("SETCONF __LeaveStreamsUnattached=1")
        for loop in sorted(self.paths):
            self._build(loop)

    def wait_built(self, timeout):
        """Wait until every loop has a built circuit (each is retried when it
        fails); raises ControlError with the loops still missing."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                missing = [l for l in self.paths if self.circ_of.get(l) not in self.built]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ControlError(f"no circuit after {timeout:g} s for "
                                   f"{', '.join(sorted(missing))}")
            time.sleep(0.5)

    def stop(self):
        self.stopping = True
        self.conn.close()

    # -- circuits and streams
    def _build(self, loop):
        if self.stopping:
            return
        path = ",".join("$" + self.fps[n] for n in self.paths[loop])
        try:
            r = self.cmd(f"EXTENDCIRCUIT 0 {path}")
        except ControlError as e:
            note(f"paired paths: {loop}: {e}; retrying in 2 s")
            t = threading.Timer(2.0, self._build, args=(loop,))
            t.daemon = True
            t.start()
            return
        cid = r[-1].split()[-1]
        with self.lock:
            self.circ_of[loop] = cid
            self.loop_of_circ[cid] = loop

    def register(self, port, loop):
        with self.lock:
            self.port_loop[port] = loop

    def _attach(self, sid, cid):
        try:
            self.cmd(f"ATTACHSTREAM {sid} {cid}")
            return True
        except ControlError as e:
            note(f"paired paths: ATTACHSTREAM {sid} {cid}: {e}")
            return False

    def _flush(self, loop):
        with self.lock:
            cid = self.circ_of.get(loop)
            if cid not in self.built:
                return
            sids, self.pending[loop] = self.pending.get(loop, []), []
        for sid in sids:
            if self._attach(sid, cid):
                with self.lock:
                    self.attached[loop] = self.attached.get(loop, 0) + 1
            else:
                with self.lock:
                    self.pending.setdefault(loop, []).append(sid)

    def _on_event(self, lines):
        with contextlib.suppress(ControlError, OSError, ValueError, IndexError):
            self._event(lines[-1][4:].split())

    def _event(self, f):
        if f[0] == "CIRC":
            cid, status = f[1], f[2]
            with self.lock:
                loop = self.loop_of_circ.get(cid)
            if loop is None:
                return
            if status == "BUILT":
                got = _path_names(f[3], self.by_fp)
                with self.lock:
                    self.built[cid] = got
                    self.builds[loop] = self.builds.get(loop, 0) + 1
                    self.circuit_log[cid] = loop
                    if got != tuple(self.paths[loop]):
                        self.mismatch.append((loop, got))
                self._flush(loop)
            elif status in ("FAILED", "CLOSED"):
                with self.lock:
                    self.built.pop(cid, None)
                    self.loop_of_circ.pop(cid, None)
                    current = self.circ_of.get(loop) == cid
                    if current:
                        self.circ_of.pop(loop, None)
                if current:
                    self._build(loop)
        elif f[0] == "STREAM":
            sid, status = f[1], f[2]
            if status in ("NEW", "DETACHED"):
                loop = None
                with self.lock:
                    if status == "NEW":
                        src = next((x for x in f if x.startswith("SOURCE_ADDR=")), "")
                        port = int(src.rsplit(":", 1)[1]) if ":" in src else None
                        loop = self.port_loop.pop(port, None)
                        if loop is not None:
                            self.stream_loop[sid] = loop
                    else:
                        loop = self.stream_loop.get(sid)
                    if loop is not None:
                        self.pending.setdefault(loop, []).append(sid)
                if loop is None:
                    with self.lock:
                        self.unknown += 1
                    self._attach(sid, 0)
                else:
                    self._flush(loop)
            elif status == "SUCCEEDED":
                # the check: the stream runs on its loop's circuit, whose
                # BUILT path was the drawn one
                with self.lock:
                    loop = self.stream_loop.get(sid)
                    if loop is not None:
                        path = self.built.get(f[3])
                        ok = (self.loop_of_circ.get(f[3]) == loop and
                              path == tuple(self.paths[loop]))
                        k = "verified" if ok else "wrong_circuit"
                        self.checked[k] = self.checked.get(k, 0) + 1
            elif status in ("CLOSED", "FAILED"):
                with self.lock:
                    self.stream_loop.pop(sid, None)

    def summary(self):
        with self.lock:
            return {"paths": {l: list(p) for l, p in sorted(self.paths.items())},
                    "attached": dict(sorted(self.attached.items())),
                    "circuits_built": dict(sorted(self.builds.items())),
                    "unpinned_streams": self.unknown,
                    "streams_on_pinned_path": self.checked.get("verified", 0),
                    "streams_on_other_circuit": self.checked.get("wrong_circuit", 0),
                    "path_mismatches": [[l, list(p)] for l, p in self.mismatch],
                    "circuits": dict(self.circuit_log)}
