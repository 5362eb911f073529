# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.definition -- pctor-experiment's definitions (TOML): reading
# and validating [experiment], [[workload]] and [[config]] (and scales,
# which generate the network from distributions), and writing each run's
# test-bed file (groups expanded, the configuration's torrc lines appended
# to the hosts they select, testbed.seed = the seed). The stdlib reads
# TOML but does not write it: toml_dumps writes the subset the test-bed
# files use. A network given inline or by file is checked with
# config.load_config, so a definition is refused before anything runs.
# PROG and note() here are pctor-experiment's (its messages say so).

import contextlib
import json
import math
import os
import random
import re
import sys
import tomllib

from .common import CONTROLPORT, ROLES, TOR_ROLES, TestbedError, parse_size
from .config import LINK_KEYS, TCP_KEYS, load_config, read_toml


PROG = "pctor-experiment"
PCTOR_ONLY = ("percircuittcp", "percircuittcpspares", "percircuittcpmaxconnections",
              "percircuittcprequireipsec", "measuremeenabled", "measuremehops",
              "measuremeinterval", "circuitpriorityreads", "relaytcpcongestioncontrol",
              "circuittransport", "datagramport", "datagrammaxlinks")
EXPERIMENT_KEYS = ("name", "title", "reproduces", "scale", "paper", "seeds", "duration_s",
                   "warmup_s", "request_timeout_s", "network", "notes", "ss_interval_ms",
                   "paired_paths")
WORKLOAD_KEYS = ("class", "clients", "model", "file", "server", "streams", "isolate",
                 "think_min_s", "think_max_s", "stagger_s", "background")
CONFIG_KEYS = ("name", "description", "baseline", "torrc", "pair", "link", "workloads")


class ExperimentError(Exception):
    pass


def note(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# TOML output (the stdlib reads TOML but does not write it)

def _toml_key(k):
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ExperimentError(f"cannot write {v} to TOML")
        return repr(v)
    if isinstance(v, str):
        # JSON's escapes (\" \\ \n \uXXXX) are all valid in TOML basic strings.
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise ExperimentError(f"cannot write {type(v).__name__} to TOML")


def toml_dumps(doc, header=""):
    """doc: {section: dict} or {section: [dict, ...]} (arrays of tables);
    values inside are scalars, lists or inline tables."""
    out = [header.rstrip("\n")] if header else []
    for sec, body in doc.items():
        tables = body if isinstance(body, list) else [body]
        for t in tables:
            out.append("")
            out.append(f"[[{sec}]]" if isinstance(body, list) else f"[{sec}]")
            for k, v in t.items():
                out.append(f"{_toml_key(k)} = {_toml_value(v)}")
    text = "\n".join(out) + "\n"
    if tomllib.loads(text) != {k: v for k, v in doc.items()}:
        raise ExperimentError("internal error: generated TOML does not read back the same")
    return text


# --------------------------------------------------------------------------
# the experiment definition

def _num(v, what, lo, hi, integer=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi) or \
            (integer and not isinstance(v, int)):
        kind = "an integer" if integer else "a number"
        raise ExperimentError(f"{what}: must be {kind} in [{lo}, {hi}], not {v!r}")
    return v


def _lines(v, what):
    if isinstance(v, str):
        v = v.splitlines()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ExperimentError(f"{what}: must be a string or a list of strings")
    return [x.strip() for x in v if x.strip() and not x.strip().startswith("#")]


def expand_hosts(raw_hosts, defaults, what):
    """[[host]] entries -> one dict per host (count expanded), each with
    _group (the entry's name) and _binary (the program it runs)."""
    hosts = []
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise ExperimentError(f"{what}: no [[host]] entries")
    for h in raw_hosts:
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise ExperimentError(f"{what}: every [[host]] needs a name")
        count = h.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 256:
            raise ExperimentError(f"{what}: host '{h['name']}': count must be 1..256")
        base = h["name"]
        names = [base] if count == 1 else [f"{base}{i}" for i in range(1, count + 1)]
        role = h.get("role", "host")
        binary = h.get("binary", defaults.get("binary", "tor")) if role in TOR_ROLES else None
        if not isinstance(h.get("scaled", True), bool):
            raise ExperimentError(f"{what}: host '{h['name']}': scaled must be true or false")
        for nm in names:
            e = {k: v for k, v in h.items() if k not in ("count", "_group", "scaled")}
            e["name"] = nm
            if "torrc" in e or "torrc" in defaults:
                e["torrc"] = _lines(e.get("torrc", defaults.get("torrc", [])),
                                    f"{what}: host '{nm}' torrc")
            e["_group"] = h.get("_group", base)
            e["_binary"] = binary
            hosts.append(e)
    return hosts


SCALE_KEYS = ("description", "seed", "relays", "exits", "client_hosts", "clients",
              "relay_bandwidth_mbit", "relay_delay_ms", "client_rate_mbit", "client_delay_ms")


def parse_dist(v, what, lo, hi):
    """A distribution: a number (fixed), or {dist = "fixed", value},
    {dist = "uniform", min, max}, {dist = "lognormal", median, sigma[, min,
    max]} (clipped to [min, max]), {dist = "choice", values[, weights]}.
    Returns a function of a random.Random."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        x = _num(v, what, lo, hi)
        return lambda rnd: x
    if not isinstance(v, dict) or v.get("dist") not in ("fixed", "uniform", "lognormal",
                                                         "choice"):
        raise ExperimentError(f"{what}: a number or {{dist = fixed|uniform|lognormal|choice, "
                              f"...}}")
    d = v["dist"]
    allowed = {"fixed": ("value",), "uniform": ("min", "max"),
               "lognormal": ("median", "sigma", "min", "max"),
               "choice": ("values", "weights")}[d]
    for k in v:
        if k != "dist" and k not in allowed:
            raise ExperimentError(f"{what}: unknown key '{k}' for dist = {d}")
    if d == "fixed":
        x = _num(v.get("value"), f"{what}.value", lo, hi)
        return lambda rnd: x
    if d == "uniform":
        a = _num(v.get("min"), f"{what}.min", lo, hi)
        b = _num(v.get("max"), f"{what}.max", a, hi)
        return lambda rnd: rnd.uniform(a, b)
    if d == "lognormal":
        med = _num(v.get("median"), f"{what}.median", lo, hi)
        sig = _num(v.get("sigma"), f"{what}.sigma", 0, 10)
        a = _num(v.get("min", lo), f"{what}.min", lo, hi)
        b = _num(v.get("max", hi), f"{what}.max", a, hi)
        mu = math.log(med) if med > 0 else 0.0
        return lambda rnd: min(b, max(a, rnd.lognormvariate(mu, sig)))
    vals = v.get("values")
    if not isinstance(vals, list) or not vals:
        raise ExperimentError(f"{what}.values: a list of numbers")
    vals = [_num(x, f"{what}.values", lo, hi) for x in vals]
    w = v.get("weights")
    if w is not None and (not isinstance(w, list) or len(w) != len(vals) or
                          any(_num(x, f"{what}.weights", 0, 1e9) < 0 for x in w)):
        raise ExperimentError(f"{what}.weights: one non-negative number per value")
    return lambda rnd: rnd.choices(vals, weights=w)[0]


def apply_scale(raw, net_hosts, name, path):
    """Rewrite the network's [[host]] entries and the workload for
    [scale.NAME]: `relays` relays and `exits` exits (the first relay's and
    exit's entry as templates; bandwidth and delay drawn per host), the
    client hosts multiplied to `client_hosts` in all (in proportion to the
    loops each carries, names HOST1..HOSTk, group HOST, access rate and
    delay drawn per host) and each workload class's loops spread over them
    so that `clients.CLASS` virtual clients run in all. Hosts marked
    `scaled = false` (a handful of bridges, say) stay as written: they are
    neither templates nor replaced, and a client host so marked is not
    multiplied. The draw is seeded by scale.seed (default 1): every
    configuration and seed of a run sees the same network. Returns (hosts,
    workload entries, description)."""
    sc = raw.get("scale", {})
    if not isinstance(sc, dict) or name not in sc or not isinstance(sc[name], dict):
        known = ", ".join(sc) if isinstance(sc, dict) and sc else "none"
        raise ExperimentError(f"{path}: no [scale.{name}] (scales: {known})")
    s = sc[name]
    what = f"{path}: scale.{name}"
    for k in s:
        if k not in SCALE_KEYS:
            raise ExperimentError(f"{what}: unknown key '{k}'")
    rnd = random.Random(f"scale-{name}-{_num(s.get('seed', 1), what + '.seed', 0, 2**31, True)}")
    hosts = [dict(h) for h in net_hosts]
    out = []
    draws = {}
    for k, lo, hi in (("relay_bandwidth_mbit", 0.01, 100000), ("relay_delay_ms", 0, 10000),
                      ("client_rate_mbit", 0.01, 100000), ("client_delay_ms", 0, 10000)):
        draws[k] = parse_dist(s[k], f"{what}.{k}", lo, hi) if k in s else None

    def link(e, bw, delay):
        if draws[bw]:
            r = f"{draws[bw](rnd):.3f}mbit"
            e["up"] = e["down"] = r
        if draws[delay]:
            e["delay_ms"] = round(draws[delay](rnd), 3)
        for k in ("delay_up_ms", "delay_down_ms"):
            if draws[delay]:
                e.pop(k, None)
        return e

    for role, key, prefix in (("relay", "relays", "relay"), ("exit", "exits", "exit")):
        scaled = [h for h in hosts if h.get("role") == role and h.get("scaled", True) is not False]
        if key not in s:
            continue
        n = _num(s[key], f"{what}.{key}", 1, 5000, integer=True)
        if not scaled:
            raise ExperimentError(f"{what}: {key} given but the network has no {role} "
                                  f"(that is not marked scaled = false)")
        tmpl = scaled[0]
        hosts = [h for h in hosts if not any(h is x for x in scaled)]
        for i in range(1, n + 1):
            e = {k: v for k, v in tmpl.items() if k != "count"}
            e.update({"name": f"{prefix}{i}", "_group": f"{prefix}s"})
            out.append(link(e, "relay_bandwidth_mbit", "relay_delay_ms"))
    workload = [dict(w) for w in raw.get("workload", [])]
    clients_n = s.get("clients", {})
    if not isinstance(clients_n, dict):
        raise ExperimentError(f"{what}.clients: a table CLASS = number of virtual clients")
    classes = {w.get("class", w.get("model", "web")): w for w in workload}
    for c in clients_n:
        if c not in classes:
            raise ExperimentError(f"{what}.clients: no workload class '{c}'")
    # loops each original client host carries
    by_name = {h["name"]: h for h in hosts}
    loops = {}
    for w in workload:
        sels = w.get("clients", [])
        sels = [sels] if isinstance(sels, str) else sels
        for c in sels:
            if c in by_name and by_name[c].get("role") == "client" and \
                    by_name[c].get("scaled", True) is not False:
                loops[c] = loops.get(c, 0) + int(w.get("streams", 1))
    total = _num(s.get("client_hosts", len(loops) or 1), f"{what}.client_hosts", 1, 5000,
                 integer=True)
    k_of = {}
    if loops:
        all_loops = sum(loops.values())
        for c, n in loops.items():
            k_of[c] = max(1, round(total * n / all_loops))
    new_hosts = []
    for h in hosts:
        if h["name"] in k_of and h.get("count", 1) == 1:
            for i in range(1, k_of[h["name"]] + 1):
                e = dict(h, name=f"{h['name'][:12]}{i}", _group=h["name"])
                new_hosts.append(link(e, "client_rate_mbit", "client_delay_ms"))
        else:
            new_hosts.append(h)
    for w in workload:
        cls = w.get("class", w.get("model", "web"))
        sels = w.get("clients", [])
        sels = [sels] if isinstance(sels, str) else sels
        nhosts = sum(k_of.get(c, 1) for c in sels)
        if cls in clients_n:
            want = _num(clients_n[cls], f"{what}.clients.{cls}", 1, 100000, integer=True)
            w["streams"] = max(1, math.ceil(want / nhosts))
    desc = str(s.get("description", ""))
    return new_hosts + out, workload, desc


def load_experiment(path, scale=None):
    raw = read_toml(path, ExperimentError)
    for k in raw:
        if k not in ("experiment", "workload", "config", "testbed", "defaults", "host", "pair",
                     "shadow", "scale"):
            raise ExperimentError(f"{path}: unknown section [{k}]")
    ex = dict(raw.get("experiment", {}))
    for k in ex:
        if k not in EXPERIMENT_KEYS:
            raise ExperimentError(f"{path}: unknown key experiment.{k}")
    name = ex.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
        raise ExperimentError(f"{path}: experiment.name must be 1-40 of [A-Za-z0-9_.-]")
    exp = {
        "name": name,
        "title": str(ex.get("title", name)),
        "reproduces": str(ex.get("reproduces", "")),
        "scale": str(ex.get("scale", "")),
        "paper": str(ex.get("paper", "")),
        "notes": str(ex.get("notes", "")),
        "seeds": _num(ex.get("seeds", 1), "experiment.seeds", 1, 100, integer=True),
        "duration_s": float(_num(ex.get("duration_s", 60), "experiment.duration_s", 1, 86400)),
        "warmup_s": float(_num(ex.get("warmup_s", 0), "experiment.warmup_s", 0, 3600)),
        "request_timeout_s": float(_num(ex.get("request_timeout_s", 120),
                                        "experiment.request_timeout_s", 1, 3600)),
        "ss_interval_ms": int(_num(ex.get("ss_interval_ms", 0), "experiment.ss_interval_ms",
                                   0, 60000, integer=True)),
        "file": os.path.abspath(path),
    }
    if not isinstance(ex.get("paired_paths", False), bool):
        raise ExperimentError(f"{path}: experiment.paired_paths must be true or false")
    exp["paired_paths"] = ex.get("paired_paths", False)
    # [shadow]: the Shadow engine's timing (simulated seconds) and threads
    shadow = raw.get("shadow", {})
    if not isinstance(shadow, dict):
        raise ExperimentError(f"{path}: [shadow] must be a table")
    exp["shadow"] = {}
    for k, v in shadow.items():
        lim = {"clients_start_s": (1, 3600), "workload_start_s": (2, 7200),
               "parallelism": (1, 64), "nice": (0, 19), "measured_bandwidths": (0, 1),
               "cpu_pinning": (0, 1)}.get(k)
        if lim is None:
            raise ExperimentError(f"{path}: unknown key shadow.{k}")
        flag = k in ("measured_bandwidths", "cpu_pinning")
        if flag and isinstance(v, bool):
            v = int(v)
        exp["shadow"][k] = _num(v, f"shadow.{k}", *lim,
                                integer=flag or k in ("parallelism", "nice"))
    if exp["shadow"].get("workload_start_s", 90) <= exp["shadow"].get("clients_start_s", 30):
        raise ExperimentError(f"{path}: shadow.workload_start_s must come after "
                              f"shadow.clients_start_s")
    # the network: a file, or inline
    inline = {k: raw[k] for k in ("testbed", "defaults", "host", "pair") if k in raw}
    if "network" in ex:
        if inline:
            raise ExperimentError(f"{path}: give the network either as experiment.network "
                                  f"or inline, not both")
        npath = os.path.join(os.path.dirname(os.path.abspath(path)), str(ex["network"]))
        try:
            with open(npath, "rb") as f:
                net = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ExperimentError(f"{path}: network file {npath}: {e}")
        net.pop("traffic", None)
        exp["network_file"] = npath
    else:
        net = inline
    for k in net:
        if k not in ("testbed", "defaults", "host", "pair"):
            raise ExperimentError(f"{path}: network: unknown section [{k}]")
    net = {"testbed": dict(net.get("testbed", {})), "defaults": dict(net.get("defaults", {})),
           "host": net.get("host", []), "pair": net.get("pair", [])}
    if scale:
        net["host"], raw["workload"], desc = apply_scale(raw, net["host"], scale, path)
        exp["scale_name"] = scale
        if desc:
            exp["scale"] = desc
    hosts = expand_hosts(net["host"], net["defaults"], path)
    net["hosts"] = hosts
    exp["network"] = net
    byname = {h["name"]: h for h in hosts}
    groups = {}
    for h in hosts:
        groups.setdefault(h["_group"], []).append(h["name"])

    def select(sel, what):
        if sel in byname:
            return [sel]
        if sel in groups:
            return list(groups[sel])
        if sel in ROLES:
            return [h["name"] for h in hosts if h.get("role", "host") == sel]
        if sel in ("pctor", "tor"):
            return [h["name"] for h in hosts if h["_binary"] == sel]
        if sel == "all":
            return [h["name"] for h in hosts if h.get("role", "host") in TOR_ROLES]
        raise ExperimentError(f"{what}: '{sel}' is no host, group, role, binary or 'all'")

    def selectable(sel):
        try:
            select(sel, "")
            return True
        except ExperimentError:
            return False

    # workload
    wl = raw.get("workload", [])
    if not isinstance(wl, list) or not wl:
        raise ExperimentError(f"{path}: no [[workload]] entries")
    workload = []
    for i, w in enumerate(wl):
        what = f"{path}: [[workload]] #{i + 1}"
        for k in w:
            if k not in WORKLOAD_KEYS:
                raise ExperimentError(f"{what}: unknown key '{k}'")
        model = w.get("model", "web")
        if model not in ("web", "bulk"):
            raise ExperimentError(f"{what}: model must be web or bulk")
        cls = w.get("class", model)
        if not isinstance(cls, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,24}", cls):
            raise ExperimentError(f"{what}: class must be 1-24 of [A-Za-z0-9_-]")
        sels = w.get("clients", w.get("client"))
        if isinstance(sels, str):
            sels = [sels]
        if not isinstance(sels, list) or not sels:
            raise ExperimentError(f"{what}: needs clients = [host or group names]")
        clients = []
        for s in sels:
            for c in select(s, what):
                if byname[c].get("role") != "client":
                    raise ExperimentError(f"{what}: '{c}' is not a client")
                clients.append(c)
        servers = [h["name"] for h in hosts if h.get("role") == "server"]
        server = w.get("server", servers[0] if servers else None)
        if server not in byname or byname[server].get("role") != "server":
            raise ExperimentError(f"{what}: no server '{server}'")
        files = byname[server].get("files", ["320KiB", "5MiB"])
        fname = str(w.get("file", "320KiB" if model == "web" else "5MiB")).replace(" ", "")
        if fname not in [str(x).replace(" ", "") for x in files]:
            raise ExperimentError(f"{what}: server {server} has no file {fname} "
                                  f"(its files: {', '.join(map(str, files))})")
        tmin = float(_num(w.get("think_min_s", 1), f"{what}.think_min_s", 0, 3600))
        tmax = float(_num(w.get("think_max_s", 30), f"{what}.think_max_s", tmin, 3600))
        workload.append({
            "class": cls, "clients": clients, "model": model, "server": server,
            "file": fname, "size": parse_size(fname, what),
            "streams": _num(w.get("streams", 1), f"{what}.streams", 1, 256, integer=True),
            "isolate": bool(w.get("isolate", True)), "think": (tmin, tmax),
            "stagger_s": float(_num(w.get("stagger_s", 0), f"{what}.stagger_s", 0, 3600)),
            "background": bool(w.get("background", False))})
    if all(w["background"] for w in workload):
        raise ExperimentError(f"{path}: every [[workload]] is background; nothing to measure")
    exp["workload"] = workload

    # configurations
    cl = raw.get("config", [])
    if not isinstance(cl, list) or len(cl) < 2:
        raise ExperimentError(f"{path}: needs two or more [[config]] entries")
    configs = []
    left_out = []
    for i, c in enumerate(cl):
        what = f"{path}: [[config]] #{i + 1}"
        for k in c:
            if k not in CONFIG_KEYS:
                raise ExperimentError(f"{what}: unknown key '{k}'")
        cname = c.get("name")
        if not isinstance(cname, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,24}", cname):
            raise ExperimentError(f"{what}: name must be 1-24 of [A-Za-z0-9_-]")
        if any(x["name"] == cname for x in configs) or cname in left_out:
            raise ExperimentError(f"{what}: name '{cname}' used twice")
        # A configuration written for the network as given (its torrc or link
        # names hosts such as r1) does not fit a [scale]'s generated network:
        # it is left out of that scale, not refused.
        if scale is not None and any(
                not selectable(sel) for t in ("torrc", "link")
                for sel in (c.get(t) if isinstance(c.get(t), dict) else {})):
            left_out.append(cname)
            continue
        torrc = {}
        tsec = c.get("torrc", {})
        if not isinstance(tsec, dict):
            raise ExperimentError(f"{what}: torrc must be a table of SELECTOR = [lines]")
        for sel, lines in tsec.items():
            lines = _lines(lines, f"{what}: torrc.{sel}")
            for h in select(sel, f"{what}: torrc"):
                if byname[h].get("role", "host") not in TOR_ROLES:
                    raise ExperimentError(f"{what}: torrc.{sel}: {h} runs no tor/pctor")
                for line in lines:
                    key = line.split()[0].lower()
                    if key in PCTOR_ONLY and byname[h]["_binary"] == "tor":
                        raise ExperimentError(f"{what}: {line.split()[0]} is a pctor option "
                                              f"but {h} runs tor")
                torrc.setdefault(h, []).extend(lines)
        pairs = c.get("pair", [])
        if not isinstance(pairs, list):
            raise ExperimentError(f"{what}: pair must be an array of tables ([[config.pair]])")
        links = c.get("link", {})
        if not isinstance(links, dict):
            raise ExperimentError(f"{what}: link must be a table of HOST = {{link keys}}")
        # link.SELECTOR: a host, group, role ("relay", so that a [scale] keeps
        # it), binary or "all"; expanded here to one entry per host.
        expanded = {}
        for sel, l in links.items():
            if not isinstance(l, dict):
                raise ExperimentError(f"{what}: link.{sel}: must be a table of link keys")
            for k in l:
                # ipsec (a relay's own charon, pctor-testbed) goes with the link
                # so do the host's TCP settings (sysctls, route initcwnd)
                if k not in LINK_KEYS + TCP_KEYS + ("ipsec",):
                    raise ExperimentError(f"{what}: link.{sel}: unknown link key '{k}'")
            for h in select(sel, f"{what}: link.{sel}"):
                expanded.setdefault(h, {}).update(l)
        links = expanded
        # workloads: the classes this configuration runs (default: all), e.g.
        # the web loops alone, to measure them without the bulk traffic
        wls = c.get("workloads")
        if wls is not None:
            classes = [w["class"] for w in workload]
            if (not isinstance(wls, list) or not wls
                    or not all(isinstance(x, str) for x in wls)):
                raise ExperimentError(f"{what}: workloads must be a list of workload classes")
            for x in wls:
                if x not in classes:
                    raise ExperimentError(f"{what}: workloads: no [[workload]] of class '{x}' "
                                          f"(classes: {', '.join(classes)})")
            if all(w["background"] for w in workload if w["class"] in wls):
                raise ExperimentError(f"{what}: workloads: every one named is background; "
                                      f"nothing to measure")
            wls = [w["class"] for w in workload if w["class"] in wls]
        configs.append({"name": cname, "description": str(c.get("description", "")),
                        "baseline": c.get("baseline"), "torrc": torrc,
                        "torrc_selectors": {k: _lines(v, k) for k, v in tsec.items()},
                        "pairs": pairs, "links": links, "workloads": wls})
    names = [c["name"] for c in configs]
    for c in configs:
        if c["baseline"] is None:
            c["baseline"] = names[0]
        elif c["baseline"] not in names:
            raise ExperimentError(f"{path}: config {c['name']}: baseline '{c['baseline']}' "
                                  f"is no configuration")
    if len(configs) < 2:
        raise ExperimentError(f"{path}: [scale.{scale}] leaves fewer than two [[config]] "
                              f"entries (left out: {', '.join(left_out)})")
    exp["configs"] = configs
    exp["configs_left_out"] = left_out
    # every configuration's network must be a valid test-bed file
    for c in configs:
        text = testbed_toml(exp, c, 1)
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                           f"{PROG}.check.{os.getpid()}.{c['name']}.toml")
        try:
            with open(tmp, "w") as f:
                f.write(text)
            load_config(tmp)
        except TestbedError as e:
            raise ExperimentError(f"{path}: configuration {c['name']}: {e}")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return exp


def config_workload(exp, config):
    """The [[workload]] entries a configuration runs (its workloads key, or
    all of them)."""
    wls = config.get("workloads")
    return [w for w in exp["workload"] if wls is None or w["class"] in wls]


def run_name(exp, config, seed):
    return f"{config['name']}-s{seed}"


def testbed_toml(exp, config, seed):
    """The test-bed file of one run."""
    net = exp["network"]
    tbsec = dict(net["testbed"])
    tbsec["name"] = f"{exp['name'][:24]}-{config['name'][:10]}-s{seed}"[:40]
    tbsec["seed"] = seed
    hosts = []
    for h in net["hosts"]:
        e = {k: v for k, v in h.items() if not k.startswith("_")}
        extra = config["torrc"].get(h["name"], [])
        if extra:
            e["torrc"] = list(e.get("torrc", net["defaults"].get("torrc", []))) + extra
        e.update(config["links"].get(h["name"], {}))
        if exp.get("paired_paths") and h.get("role") == "client" and \
                h.get("_binary") != "tor":
            # the runner pins the loops' streams through the client's
            # ControlPort (paths.py); a tor client has one already
            e["torrc"] = list(e.get("torrc", net["defaults"].get("torrc", []))) + [
                f"ControlPort 127.0.0.1:{CONTROLPORT}", "CookieAuthentication 1"]
        hosts.append(e)
    doc = {"testbed": tbsec}
    if net["defaults"]:
        doc["defaults"] = net["defaults"]
    doc["host"] = hosts
    pairs = list(net["pair"]) + list(config["pairs"])
    if pairs:
        doc["pair"] = pairs
    header = (f"# generated by {PROG} for experiment {exp['name']}, configuration "
              f"{config['name']}, seed {seed}\n# from {exp['file']}")
    return toml_dumps(doc, header)


def print_plan(exp, seeds, duration):
    print(f"{exp['file']}: {exp['name']} -- {exp['title']}")
    if exp.get("network_file"):
        print(f"  network: {exp['network_file']}")
    hosts = exp["network"]["hosts"]
    roles = {}
    for h in hosts:
        roles.setdefault(h.get("role", "host"), []).append(h["name"])
    print("  hosts: " + "; ".join(f"{r}: {' '.join(n)}" for r, n in roles.items()))
    for p in exp["network"]["pair"]:
        print(f"  pair: {p}")
    for w in exp["workload"]:
        kind = "background" if w["background"] else "measured"
        think = f", think {w['think'][0]:g}-{w['think'][1]:g} s" if w["model"] == "web" else ""
        print(f"  workload {w['class']}: {w['model']} {w['file']} from {w['server']}, "
              f"{w['streams']} loop(s) on each of {' '.join(w['clients'])}{think}, {kind}"
              + ("" if w["isolate"] else ", circuits shared"))
    for c in exp["configs"]:
        print(f"  config {c['name']}: {c['description']}")
        for sel, lines in c["torrc_selectors"].items():
            print(f"    {sel}: {'; '.join(lines)}")
        for p in c["pairs"]:
            print(f"    pair: {p}")
        for h, l in c["links"].items():
            print(f"    link {h}: {l}")
        if c.get("workloads") is not None:
            print(f"    workloads: {' '.join(c['workloads'])} only")
    if exp.get("configs_left_out"):
        print(f"  left out of this scale (written for the network as given): "
              f"{' '.join(exp['configs_left_out'])}")
    n = len(exp["configs"]) * seeds
    print(f"  {n} runs ({len(exp['configs'])} configurations x {seeds} seeds), "
          f"{exp['warmup_s']:g} s warm-up + {duration:g} s measured each")


def definition_summary(exp):
    """What the report needs of the definition (kept in runs.json, so that
    `report` does not depend on the definition file still being there)."""
    return {k: exp[k] for k in ("name", "title", "reproduces", "scale", "paper", "notes",
                                "ss_interval_ms")} | {
        "paired_paths": exp.get("paired_paths", False),
        "workload": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in w.items()}
                     for w in exp["workload"]],
        "configs": [{k: c.get(k) for k in ("name", "description", "baseline", "torrc_selectors",
                                            "pairs", "links", "workloads")}
                    for c in exp["configs"]]}
