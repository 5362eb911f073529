# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.config -- the test-bed file (TOML): reading and validating it
# into Host objects and plain dicts, before anything is built.
#
# The format is described in scripts/testbed/tiny.toml (links) and
# scripts/testbed/small.toml (roles, binaries, torrc lines). Every value is
# checked here (unknown keys, ranges, units, names, torrc lines that would
# change TestingTorNetwork or the run's authorities), so `pctor-testbed
# check` refuses a bad file without root and before any namespace exists.
# [[pair]] entries (loss between two given hosts only) and [[traffic]]
# entries (web/bulk client loops) are parsed here too.
# torrc lines may use the placeholders of common.PLACEHOLDERS (the host's
# address, ORPort, DatagramPort), and a pctor client may be a relay too
# (relay = true: an unpublished relay with an ORPort, whose identity
# authenticates its datagram link to its guard; doc/backtap.md).

import os
import re
import tomllib

from .common import (FORBIDDEN_TORRC, PLACEHOLDERS, RESERVED_NAMES, ROLES, TOR_ROLES, TestbedError,
                     parse_rate, parse_size)


# --------------------------------------------------------------------------
# configuration

class Host:
    def __init__(self, name, role, binary, link, torrc, files, index, ipsec=False, tcp=None,
                 relay=False):
        self.name = name
        self.role = role
        self.binary = binary
        self.link = link      # dict: up, down (bit/s), delay/jitter/loss up/down
        self.torrc = torrc    # list of extra lines
        self.files = files    # server: {name: size}
        self.index = index
        self.ipsec = ipsec    # pctor relay with its own charon (IPsec 1)
        self.tcp = tcp or {}  # congestion_control, slow_start_after_idle, initcwnd
        self.relay = relay    # a pctor client that is also an (unpublished) relay

    def to_dict(self):
        return {"name": self.name, "role": self.role, "binary": self.binary,
                "link": self.link, "torrc": self.torrc, "files": self.files,
                "index": self.index, "ipsec": self.ipsec, "tcp": self.tcp,
                "relay": self.relay}

    def has_orport(self):
        return self.role in ("authority", "relay", "exit") or self.relay

    def has_datagram_port(self):
        """A pctor host whose torrc opens a DatagramPort (other than 0)."""
        return self.binary == "pctor" and any(
            l.split()[0].lower() == "datagramport" and l.split()[1:2] != ["0"]
            for l in self.torrc)

    def datagram_transport(self):
        """The datagram CircuitTransport (dtls-tcp or backtap) a pctor host's
        torrc asks for, or None (tls, pctcp, or none given)."""
        if self.binary != "pctor":
            return None
        return torrc_datagram_transport(self.torrc)


def torrc_values(lines):
    """{option in lower case: its value} of torrc lines, the last line of an
    option winning (as for pctor's single-valued options)."""
    out = {}
    for line in lines:
        w = line.split(None, 1)
        if len(w) == 2 and not w[0].startswith("#"):
            out[w[0].lower()] = w[1].strip()
    return out


def torrc_datagram_transport(lines):
    """The datagram CircuitTransport ("dtls-tcp" or "backtap") that torrc
    lines ask for (the last CircuitTransport line wins), or None."""
    t = (torrc_values(lines).get("circuittransport", "").split() or [""])[0].lower()
    return t if t in ("dtls-tcp", "backtap") else None


LINK_KEYS = ("up", "down", "delay_ms", "delay_up_ms", "delay_down_ms", "jitter_ms",
             "jitter_up_ms", "jitter_down_ms", "loss_pct", "loss_up_pct", "loss_down_pct")
# the host's own TCP settings (namespace sysctls, route metrics)
TCP_KEYS = ("congestion_control", "slow_start_after_idle", "initcwnd")
HOST_KEYS = ("name", "role", "binary", "count", "torrc", "files", "ipsec", "relay") + LINK_KEYS + \
    TCP_KEYS
TESTBED_KEYS = ("name", "congestion_control", "queue_ms", "per_packet_loss",
                "seed", "delayd_realtime", "bootstrap_timeout", "exit_policy")


def _num(v, what, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi):
        raise TestbedError(f"{what}: must be a number in [{lo}, {hi}], not {v!r}")
    return float(v)


def parse_link(h, defaults, what):
    def get(k, fallback=None):
        if k in h:
            return h[k]
        if k in defaults:
            return defaults[k]
        return fallback

    link = {"up": parse_rate(get("up", 0), f"{what}.up"),
            "down": parse_rate(get("down", 0), f"{what}.down")}
    for q, lo, hi in (("delay", 0, 10000), ("jitter", 0, 10000), ("loss", 0, 100)):
        unit = "pct" if q == "loss" else "ms"
        both = get(f"{q}_{unit}", 0)
        for d in ("up", "down"):
            v = get(f"{q}_{d}_{unit}", both)
            link[f"{q}_{d}"] = _num(v, f"{what}.{q}_{d}_{unit}", lo, hi)
    return link


def parse_tcp(h, defaults, what):
    """A host's TCP_KEYS (from the host, else [defaults]); absent keys are
    left to the test bed (congestion_control) or the kernel."""
    tcp = {}
    for k in TCP_KEYS:
        v = h.get(k, defaults.get(k))
        if v is None:
            continue
        if k == "congestion_control" and v not in ("cubic", "reno", "bbr"):
            raise TestbedError(f"{what}: congestion_control must be cubic, reno or bbr")
        if k == "slow_start_after_idle" and not isinstance(v, bool):
            raise TestbedError(f"{what}: slow_start_after_idle must be true or false")
        if k == "initcwnd" and (isinstance(v, bool) or not isinstance(v, int)
                                or not 1 <= v <= 1000):
            raise TestbedError(f"{what}: initcwnd must be an integer in [1, 1000]")
        tcp[k] = v
    return tcp


def read_toml(path, error=TestbedError):
    """The TOML file at path as a dict; error(message) when it cannot be
    read or parsed."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise error(f"cannot read {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise error(f"{path}: {e}")


def load_config(path):
    raw = read_toml(path)
    for k in raw:
        if k not in ("testbed", "defaults", "host", "traffic", "pair"):
            raise TestbedError(f"{path}: unknown section [{k}]")
    tb = dict(raw.get("testbed", {}))
    for k in tb:
        if k not in TESTBED_KEYS:
            raise TestbedError(f"{path}: unknown key testbed.{k}")
    defaults = dict(raw.get("defaults", {}))
    for k in defaults:
        if k not in LINK_KEYS + TCP_KEYS + ("binary", "torrc"):
            raise TestbedError(f"{path}: unknown key defaults.{k}")
    name = tb.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
        raise TestbedError(f"{path}: testbed.name must be 1-40 of [A-Za-z0-9_.-]")
    cc = tb.get("congestion_control", "cubic")
    if cc not in ("cubic", "reno", "bbr"):
        raise TestbedError(f"{path}: congestion_control must be cubic, reno or bbr")
    cfg = {
        "name": name,
        "congestion_control": cc,
        "queue_ms": _num(tb.get("queue_ms", 100), "testbed.queue_ms", 1, 10000),
        "seed": int(_num(tb.get("seed", 1), "testbed.seed", 0, 2**63)),
        "delayd_realtime": bool(tb.get("delayd_realtime", True)),
        "bootstrap_timeout": _num(tb.get("bootstrap_timeout", 180),
                                  "testbed.bootstrap_timeout", 10, 3600),
        "traffic": parse_traffic(raw.get("traffic", []), f"{path}: [[traffic]]"),
        "per_packet_loss": tb.get("per_packet_loss"),
        "exit_policy": tb.get("exit_policy", "open"),
    }
    if cfg["exit_policy"] not in ("open", "private"):
        raise TestbedError(f"{path}: exit_policy must be 'open' or 'private'")
    hosts = []
    seen = set()
    entries = raw.get("host", [])
    if not isinstance(entries, list) or not entries:
        raise TestbedError(f"{path}: no [[host]] entries")
    for n, h in enumerate(entries):
        what = f"host #{n + 1}"
        for k in h:
            if k not in HOST_KEYS:
                raise TestbedError(f"{path}: {what}: unknown key '{k}'")
        base = h.get("name")
        if not isinstance(base, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,15}", base):
            raise TestbedError(f"{path}: {what}: name must be a letter then up to 15 "
                               f"letters/digits (it is also the tor nickname)")
        what = f"host '{base}'"
        role = h.get("role", "host")
        if role not in ROLES:
            raise TestbedError(f"{path}: {what}: role must be one of {', '.join(ROLES)}")
        binary = h.get("binary", defaults.get("binary", "tor") if role in TOR_ROLES else None)
        if role == "authority" and binary != "tor":
            raise TestbedError(f"{path}: {what}: authorities run tor")
        if role in ("relay", "exit", "client") and binary not in ("tor", "pctor"):
            raise TestbedError(f"{path}: {what}: binary must be 'tor' or 'pctor'")
        if role not in TOR_ROLES:
            binary = None
        torrc = h.get("torrc", defaults.get("torrc", []))
        if isinstance(torrc, str):
            torrc = torrc.splitlines()
        if not isinstance(torrc, list) or not all(isinstance(x, str) for x in torrc):
            raise TestbedError(f"{path}: {what}: torrc must be a string or a list of strings")
        torrc = [x.strip() for x in torrc if x.strip() and not x.strip().startswith("#")]
        for line in torrc:
            if "\n" in line or "\r" in line:
                raise TestbedError(f"{path}: {what}: torrc lines must not contain newlines")
            key = line.split()[0].lower()
            if key in FORBIDDEN_TORRC or key.startswith("%"):
                raise TestbedError(f"{path}: {what}: torrc may not set {line.split()[0]} "
                                   f"(the test bed controls it)")
        if torrc and role not in TOR_ROLES:
            raise TestbedError(f"{path}: {what}: torrc lines need a tor role")
        relay = h.get("relay", False)
        if not isinstance(relay, bool):
            raise TestbedError(f"{path}: {what}: relay must be true or false")
        if relay and (role != "client" or binary != "pctor"):
            raise TestbedError(f"{path}: {what}: relay = true is for pctor clients (relays "
                               f"and exits are relays anyway)")
        check_placeholders(torrc, role in ("authority", "relay", "exit") or relay,
                           f"{path}: {what}")
        files = {}
        if role == "server":
            fl = h.get("files", ["320KiB", "5MiB"])
            if not isinstance(fl, list) or not fl:
                raise TestbedError(f"{path}: {what}: files must be a list of sizes")
            for s in fl:
                size = parse_size(s, f"{what}.files")
                fname = str(s).replace(" ", "")
                if not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", fname):
                    raise TestbedError(f"{path}: {what}: bad file name {s!r}")
                files[fname] = size
        elif "files" in h:
            raise TestbedError(f"{path}: {what}: files only for role 'server'")
        ipsec = h.get("ipsec", False)
        if not isinstance(ipsec, bool):
            raise TestbedError(f"{path}: {what}: ipsec must be true or false")
        if ipsec and (role not in ("relay", "exit") or binary != "pctor"):
            raise TestbedError(f"{path}: {what}: ipsec = true needs a pctor relay or exit")
        count = h.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 256:
            raise TestbedError(f"{path}: {what}: count must be 1..256")
        link = parse_link(h, defaults, what)
        tcp = parse_tcp(h, defaults, f"{path}: {what}")
        names = [base] if count == 1 else [f"{base}{i}" for i in range(1, count + 1)]
        for nm in names:
            if len(nm) > 19:
                raise TestbedError(f"{path}: {what}: name {nm} longer than 19 characters")
            if nm.lower() in RESERVED_NAMES:
                raise TestbedError(f"{path}: host name '{nm}' is reserved")
            if nm.lower() in seen:
                raise TestbedError(f"{path}: host name '{nm}' is used twice")
            seen.add(nm.lower())
            hosts.append(Host(nm, role, binary, dict(link), list(torrc), dict(files),
                              len(hosts), ipsec, dict(tcp), relay))
    cfg["hosts"] = hosts
    clients = {h.name for h in hosts if h.role == "client"}
    for t in cfg["traffic"]:
        if t["client"] not in clients:
            raise TestbedError(f"{path}: [[traffic]] names '{t['client']}', which is not a "
                               f"client host")
    cfg["pairs"] = parse_pairs(raw.get("pair", []), {h.name for h in hosts}, path)
    n_auth = sum(1 for h in hosts if h.role == "authority")
    if any(h.role in ("relay", "exit", "client") for h in hosts) and n_auth == 0:
        raise TestbedError(f"{path}: tor relays and clients need at least one authority")
    if any(h.role == "client" for h in hosts) and not any(h.role == "exit" for h in hosts):
        raise TestbedError(f"{path}: clients need at least one exit")
    return cfg


def check_placeholders(torrc, orport, what):
    """Every @WORD@ in the torrc lines must be one of PLACEHOLDERS, and
    @ORPORT@ needs a host with an ORPort."""
    for line in torrc:
        for ph in re.findall(r"@[A-Za-z_]*@", line):
            if ph not in PLACEHOLDERS:
                raise TestbedError(f"{what}: unknown placeholder {ph} in torrc line '{line}' "
                                   f"(known: {', '.join(PLACEHOLDERS)})")
            if ph == "@ORPORT@" and not orport:
                raise TestbedError(f"{what}: @ORPORT@ in torrc line '{line}', but the host "
                                   f"has no ORPort")


def expand_placeholders(line, ip, orport, dgramport):
    """line with the placeholders replaced by the host's values."""
    return (line.replace("@ADDRESS@", ip).replace("@ORPORT@", str(orport))
            .replace("@DATAGRAMPORT@", str(dgramport)))


def parse_pairs(entries, names, path):
    """[[pair]] entries: hosts = [A, B] with loss_pct (both directions) or
    loss_ab_pct (A to B) / loss_ba_pct (B to A)."""
    out = []
    if not isinstance(entries, list) or not all(isinstance(t, dict) for t in entries):
        raise TestbedError(f"{path}: [[pair]] must be an array of tables")
    for i, t in enumerate(entries):
        w = f"{path}: [[pair]] #{i + 1}"
        for k in t:
            if k not in ("hosts", "loss_pct", "loss_ab_pct", "loss_ba_pct"):
                raise TestbedError(f"{w}: unknown key '{k}'")
        hs = t.get("hosts")
        if not isinstance(hs, list) or len(hs) != 2 or hs[0] == hs[1] or \
                not all(isinstance(h, str) and h in names for h in hs):
            raise TestbedError(f"{w}: hosts must name two different hosts of the file")
        both = t.get("loss_pct", 0)
        ab = _num(t.get("loss_ab_pct", both), f"{w}.loss_ab_pct", 0, 100)
        ba = _num(t.get("loss_ba_pct", both), f"{w}.loss_ba_pct", 0, 100)
        out.append({"a": hs[0], "b": hs[1], "loss_ab": ab, "loss_ba": ba})
    return out


def pair_loss(pairs, src, dst):
    """Loss in percent that [[pair]] entries add from host src to host dst."""
    keep = 1.0
    for p in pairs:
        if (p["a"], p["b"]) == (src, dst):
            keep *= 1 - p["loss_ab"] / 100
        elif (p["b"], p["a"]) == (src, dst):
            keep *= 1 - p["loss_ba"] / 100
    return (1 - keep) * 100


# --------------------------------------------------------------------------
# traffic: web and bulk client models

DEFAULT_SIZE = {"web": 320 * 1024, "bulk": 5 * 1024 * 1024}


def parse_traffic(entries, what):
    """[[traffic]] entries (or --spec CLIENT:MODEL[:STREAMS]) -> list of dicts."""
    out = []
    if not isinstance(entries, list) or not all(isinstance(t, dict) for t in entries):
        raise TestbedError(f"{what}: must be an array of tables ([[traffic]])")
    for i, t in enumerate(entries):
        w = f"{what} #{i + 1}"
        for k in t:
            if k not in ("client", "clients", "model", "streams", "size", "think_min_s",
                         "think_max_s", "server"):
                raise TestbedError(f"{w}: unknown key '{k}'")
        clients = t.get("clients", [t["client"]] if "client" in t else [])
        if not clients or not all(isinstance(c, str) for c in clients):
            raise TestbedError(f"{w}: needs client = NAME or clients = [NAMES]")
        model = t.get("model", "web")
        if model not in ("web", "bulk"):
            raise TestbedError(f"{w}: model must be web or bulk")
        streams = t.get("streams", 1)
        if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= 64:
            raise TestbedError(f"{w}: streams must be 1..64")
        size = parse_size(t["size"], f"{w}.size") if "size" in t else DEFAULT_SIZE[model]
        tmin = _num(t.get("think_min_s", 1), f"{w}.think_min_s", 0, 3600)
        tmax = _num(t.get("think_max_s", 30), f"{w}.think_max_s", tmin, 3600)
        for c in clients:
            out.append({"client": c, "model": model, "streams": streams, "size": size,
                        "think": (tmin, tmax), "server": t.get("server")})
    return out
