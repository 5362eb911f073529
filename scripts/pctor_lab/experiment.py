# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.experiment -- pctor-experiment's commands (run, report, check,
# shadow-client) and its command line; scripts/pctor-experiment only calls
# main().
#
# - One run = one configuration with one seed: a test-bed file is generated
#   (definition.testbed_toml), `pctor-testbed up` brings the network up, the
#   workload runs here (workload.py), `pctor-testbed down` takes it down.
#   Runs go seed by seed with the configurations interleaved, so that a
#   slow phase of the machine hits every configuration alike.
# - The testbed commands run in their own session: a Ctrl-C, TERM or HUP
#   reaches this process only, which then stops the child with SIGTERM
#   (pctor-testbed undoes a half-built network itself), waits for it, and
#   runs `down` on the run (idempotent) before writing what it has.
# - After `down` the clients' logs and the relays'
#   DataDirectory/measureme.jsonl are collected (collect_run: to a file,
#   never all in memory, as a large Shadow run has millions); the test
#   bed's run directory is kept without its data directories and web
#   files (--keep-data keeps them).
# - --engine shadow compiles the same runs for the Shadow simulator through
#   scripts/pctor-shadow (loaded as a module when first needed).

import argparse
import contextlib
import datetime
import importlib.machinery
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from .common import SCRIPTS_DIR, TestbedError, hex_to_b64, tail
from .config import torrc_datagram_transport, torrc_values
from .definition import (ExperimentError, PROG, config_workload, definition_summary,
                         load_experiment, note, print_plan, run_name, testbed_toml)
from .netns import Run
from .network import consensus_flags, fetch_consensus, find_binaries
from .paths import check_flags, path_candidates
from .report import (MEASUREME_ASK, JsonlRecords, append_jsonl, make_report, read_jsonl,
                     save_json, switch_share)
from .workload import run_workload, shadow_client


TESTBED = os.path.join(SCRIPTS_DIR, "pctor-testbed")
EXPERIMENT = os.path.join(SCRIPTS_DIR, "pctor-experiment")
SHADOW = os.path.join(SCRIPTS_DIR, "pctor-shadow")
_shadow_mod = []


class Interrupted(Exception):
    pass


def shadow_module():
    """pctor-shadow (the Shadow engine), loaded when first needed."""
    if not _shadow_mod:
        loader = importlib.machinery.SourceFileLoader("pctor_shadow", SHADOW)
        spec = importlib.util.spec_from_loader("pctor_shadow", loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        _shadow_mod.append(mod)
    return _shadow_mod[0]


# --------------------------------------------------------------------------
# running the testbed commands

class Child:
    """The testbed subprocess being waited for, so that a signal handler can
    stop it cleanly."""
    proc = None


def _on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def testbed_cmd(argv, log_path, timeout=None):
    """Run pctor-testbed ARGV in its own session, output to log_path;
    returns (rc, last lines of output)."""
    with open(log_path, "ab") as log:
        log.write(f"$ pctor-testbed {' '.join(argv)}\n".encode())
        log.flush()
        p = subprocess.Popen([sys.executable, TESTBED] + argv, stdin=subprocess.DEVNULL,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    Child.proc = p
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_child(p)
        rc = -1
    except BaseException:
        ignore_signals()
        stop_child(p)
        raise
    finally:
        Child.proc = None
    return rc, tail(log_path, 6)


def ignore_signals():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)


def stop_child(p):
    """SIGTERM the testbed child (it tears down what it built) and wait."""
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            note(f"pctor-testbed (pid {p.pid}) did not stop in 120 s; SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()


def testbed_down(rundir, log_path):
    if not os.path.exists(os.path.join(rundir, "state.json")):
        return 0
    old = {s: signal.signal(s, signal.SIG_IGN) for s in
           (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        rc, out = testbed_cmd(["down", "--rundir", rundir], log_path, timeout=300)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if rc != 0:
        note(f"pctor-testbed down failed for {rundir}: {out}")
    return rc


# --------------------------------------------------------------------------
# one run

def prune_rundir(rundir, keep_data):
    """Drop the bulky parts of a finished run (data directories, web files)."""
    if keep_data:
        return
    hd = os.path.join(rundir, "hosts")
    if not os.path.isdir(hd):
        return
    for h in os.listdir(hd):
        for sub in ("data", "www"):
            shutil.rmtree(os.path.join(hd, h, sub), ignore_errors=True)


def run_measureme(rdir):
    """The run's relay MeasureMe records, each with its run, config, seed
    and relay (collect_hosts writes them; cmd_run moves them into the
    experiment's measureme.jsonl): read from disk on each pass, as a large
    Shadow run has millions."""
    return JsonlRecords(os.path.join(rdir, "measureme-records.jsonl"))


def collect_run(exp, runrec, rundir, rdir):
    """Copy torrcs, client MeasureMe labels and relay MeasureMe records out
    of the test bed's run directory. Returns (asks, number of records);
    the records are in run_measureme(rdir)."""
    try:
        state = Run(rundir).load().state
    except TestbedError:
        return [], 0
    return collect_hosts(runrec, state["hosts"], rdir)


def collect_hosts(runrec, hosts, rdir):
    """collect_run for hosts = {name: {dir, role}} (each host's directory
    holds torrc, notice.log and data/)."""
    asks, n = [], 0
    os.makedirs(os.path.join(rdir, "torrc"), exist_ok=True)
    os.makedirs(os.path.join(rdir, "measureme"), exist_ok=True)
    with open(run_measureme(rdir).path, "w") as sink:
        for name, info in sorted(hosts.items()):
            hd = info["dir"]
            with contextlib.suppress(OSError):
                shutil.copy(os.path.join(hd, "torrc"),
                            os.path.join(rdir, "torrc", f"{name}.torrc"))
            if info["role"] == "client":
                asks += client_asks(runrec, name, os.path.join(hd, "notice.log"))
            n += copy_relay_records(runrec, name, os.path.join(hd, "data"), rdir, sink)
    return asks, n


def client_asks(runrec, name, log):
    """The MeasureMe requests client name logged in log."""
    asks = []
    with contextlib.suppress(OSError):
        with open(log, errors="replace") as f:
            for line in f:
                m = MEASUREME_ASK.search(line)
                if m:
                    asks.append({"run": runrec["run"], "config": runrec["config"],
                                 "seed": runrec["seed"], "client": name,
                                 "hop": int(m.group(1)), "circuit": int(m.group(2)),
                                 "interval_ms": int(m.group(3)), "label": m.group(4)})
    return asks


def copy_relay_records(runrec, name, datadir, rdir, sink):
    """Copy relay name's MeasureMe files from its data directory into the
    run's measureme/, and write each record, with its run, config, seed and
    relay, to sink (lines that are not JSON skipped). The relay rotates its
    file at MeasureMeLogMaxSize: the older part (measureme.jsonl.1) first.
    Returns the number of records."""
    n = 0
    mm = os.path.join(datadir, "measureme.jsonl")
    for suffix in (".1", ""):
        if not os.path.exists(mm + suffix):
            continue
        shutil.copy(mm + suffix, os.path.join(rdir, "measureme", f"{name}.jsonl{suffix}"))
        with open(mm + suffix, errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                r.update({"run": runrec["run"], "config": runrec["config"],
                          "seed": runrec["seed"], "relay": name})
                sink.write(json.dumps(r, sort_keys=True) + "\n")
                n += 1
    return n


def paired_flag_check(run_, hosts, pin_info, runrec):
    """The pinned paths against the run's consensus (Guard, Exit, Running,
    Valid where the path puts a relay); problems go into the run record."""
    auths = [n for n, i in hosts.items() if i["role"] == "authority"]
    text = fetch_consensus(run_, auths)
    if text is None:
        runrec["paired_paths_flags"] = ["no consensus to check the flags against"]
        return
    cflags = consensus_flags(text)
    fps = {n: i["fingerprint"] for n, i in hosts.items() if i.get("fingerprint")}
    flags = {fp: cflags.get(hex_to_b64(fp), []) for fp in fps.values()}
    paths = {l: p for info in pin_info.values() for l, p in info["paths"].items()}
    bad = check_flags(paths, fps, flags)
    runrec["paired_paths_flags"] = bad or "ok"
    for b in bad:
        note(f"paired paths: {b}")


# The relays' SIGUSR1 line for a datagram circuit transport (app/main/start.c)
TRANSPORT_STATS = re.compile(
    r"Statistics: (TCP-over-DTLS|BackTap): \d+ links, \d+ circuit hops; extensions "
    r"(\d+) over \S+, (\d+) over TLS \((\d+) to relays with no DatagramPort known\)")
# ... and the IPsec broker's for PerCircuitTCP's extensions
IPSEC_STATS = re.compile(
    r"Statistics: IPsec: extensions (\d+) per circuit inside IPsec, (\d+) per circuit "
    r"without it, (\d+) over a shared connection \((\d+) to relays offering IPsec")


# CircuitTransport value (or "ipsec": PerCircuitTCP inside IPsec) -> the
# name in its statistics line
TRANSPORT_NAMES = {"dtls-tcp": "TCP-over-DTLS", "backtap": "BackTap", "ipsec": "IPsec"}


def _torrc_lines(info):
    with contextlib.suppress(OSError):
        with open(os.path.join(info["dir"], "torrc")) as f:
            return f.read().splitlines()
    return []


def datagram_relays(hosts):
    """The pctor relays and exits of a run whose torrc asks for a datagram
    CircuitTransport: {name: "dtls-tcp" or "backtap"}."""
    out = {}
    for name, info in sorted(hosts.items()):
        if info["role"] not in ("relay", "exit"):
            continue
        t = torrc_datagram_transport(_torrc_lines(info))
        if t:
            out[name] = t
    return out


def ipsec_relays(hosts):
    """The pctor relays and exits of a run that carry PerCircuitTCP's
    connections inside IPsec only (IPsec 1, PerCircuitTCP 1,
    PerCircuitTCPRequireIPsec 1): {name: "ipsec"}."""
    out = {}
    for name, info in sorted(hosts.items()):
        if info["role"] not in ("relay", "exit"):
            continue
        opts = torrc_values(_torrc_lines(info))
        if all(opts.get(k) == "1" for k in ("ipsec", "percircuittcp",
                                            "percircuittcprequireipsec")):
            out[name] = "ipsec"
    return out


def transport_stats(text, transport):
    """The extension counters in a relay's log text, one dict per statistics
    line of that transport ("dtls-tcp", "backtap" or "ipsec"), oldest
    first: {"transport": its name, "carried": extensions that used it,
    "fallback": extensions that did not although the next relay offers it
    (a datagram link or an IPsec SA not up), "not_offered": extensions to
    relays that do not offer it, or not known to (no DatagramPort
    announced; IPsec not announced, or PerCircuitTCP without IPsec)}."""
    name = TRANSPORT_NAMES[transport]
    if transport == "ipsec":
        return [{"transport": name, "carried": int(m.group(1)),
                 "fallback": int(m.group(4)),
                 "not_offered": int(m.group(2)) + int(m.group(3)) - int(m.group(4))}
                for m in IPSEC_STATS.finditer(text)]
    return [{"transport": name, "carried": int(m.group(2)),
             "fallback": int(m.group(3)) - int(m.group(4)), "not_offered": int(m.group(4))}
            for m in TRANSPORT_STATS.finditer(text) if m.group(1) == name]


def transport_counters(hosts, names, timeout=15):
    """Ask each relay of names = {name: transport} (transport_stats) for
    its statistics (SIGUSR1, by its PID) and read its extension counters
    from the line it logs for that transport (a relay with a DatagramPort
    logs both datagram lines, the other one idle): {relay: counters}."""
    def lines(n):
        try:
            with open(os.path.join(hosts[n]["dir"], "notice.log"), errors="replace") as f:
                return transport_stats(f.read(), names[n])
        except OSError:
            return []

    seen, out = {}, {}
    for n in names:
        seen[n] = len(lines(n))
        with contextlib.suppress(OSError, KeyError, TypeError):
            os.kill(hosts[n]["pid"], signal.SIGUSR1)
    t0 = time.monotonic()
    while len(out) < len(names) and time.monotonic() - t0 < timeout:
        time.sleep(0.5)
        for n in names:
            ms = lines(n) if n not in out else []
            if len(ms) > seen[n]:
                out[n] = ms[-1]
    missing = [n for n in names if n not in out]
    if missing:
        raise ExperimentError("no transport statistics from " + ", ".join(missing))
    return out


HOP_KEYS = ("carried", "fallback", "not_offered")


def transport_check(before, after):
    """The circuit hops each relay extended during the workload, by the
    transport they used (after - before), and a complaint if any hop between
    two relays that both offer the transport did not take it, or none did."""
    hops = {}
    for n, a in after.items():
        b = before.get(n, {})
        hops[n] = {k: a[k] - b.get(k, 0) for k in HOP_KEYS}
        hops[n]["transport"] = a["transport"]
    names = "/".join(sorted({a["transport"] for a in after.values()})) or "the transport"
    carried = sum(h["carried"] for h in hops.values())
    fell_back = sum(h["fallback"] for h in hops.values())
    problem = None
    if fell_back:
        problem = (f"transport not engaged: {fell_back} circuit hop(s) to relays that offer "
                   f"{names} did not use it ({carried} did)")
    elif not carried:
        problem = f"transport not engaged: no circuit hop went over {names}"
    return hops, problem


def measureme_hops(mm, relays, since):
    """The circuit hops at the relays of relays = {name: CircuitTransport}
    by the transport MeasureMe saw them use (each record's channels'
    "transport"), for the circuits that carried cells towards the exit
    from since on (a wall-clock time: the workload's start), whenever they
    were made (a loop may take a circuit built before the start), as some
    relay before the exit saw them forward cells; cells towards the client
    alone do not count, as a measured circuit carries its own MeasureMe
    answers that way. A circuit is known by its MeasureMe label, the same
    at every hop: {relay: {transport: hops}}, a hop being a (circuit
    label, side) seen at that relay."""
    used, seen = set(), {}
    for r in mm:   # one pass: mm may be a file's records
        if r.get("time", 0) < since:
            continue
        if r.get("cells_fwd"):
            used.add(r.get("label"))
        relay = r.get("relay")
        if relay not in relays:
            continue
        for side in ("chan_bwd", "chan_fwd"):
            ch = r.get(side)
            if ch and ch.get("transport"):
                seen[(relay, r.get("label"), side)] = ch["transport"]
    out = {}
    for (relay, label, _), t in seen.items():
        if label not in used:
            continue
        out.setdefault(relay, {})
        out[relay][t] = out[relay].get(t, 0) + 1
    return out


CONFLUX_HEARTBEAT = re.compile(r"Heartbeat: Conflux linked (\d+) sets \((\d+) legs\)"
                               r"(?:.*Sent (\d+) messages on legs and (\d+) SWITCH cells)?")


def exit_conflux_counts(exp, hostsdir):
    """What the run's exits did with conflux, from the last "Heartbeat:
    Conflux linked N sets (M legs) ... Sent D messages on legs and S SWITCH
    cells" line of each exit's notice.log (an exit logs it each
    HeartbeatPeriod once it has linked a set): a dict of sets, legs and,
    when every exit's line had them (pctor since 2026-11-28), messages and
    switches; None when no exit logged one."""
    found, sets, legs, msgs, switches = False, 0, 0, 0, 0
    for h in exp["network"]["hosts"]:
        if h.get("role") != "exit":
            continue
        last = None
        with contextlib.suppress(OSError):
            with open(os.path.join(hostsdir, h["name"], "notice.log"),
                      errors="replace") as f:
                for line in f:
                    m = CONFLUX_HEARTBEAT.search(line)
                    if m:
                        last = m
        if last:
            found = True
            sets += int(last.group(1))
            legs += int(last.group(2))
            if last.group(3) is None or msgs is None:
                msgs = switches = None
            else:
                msgs += int(last.group(3))
                switches += int(last.group(4))
    if not found:
        return None
    out = {"sets": sets, "legs": legs}
    if msgs is not None:
        out.update(messages=msgs, switches=switches)
    return out


def exit_conflux_sets(exp, hostsdir):
    """(sets, legs) the run's exits linked (exit_conflux_counts), or None."""
    c = exit_conflux_counts(exp, hostsdir)
    return (c["sets"], c["legs"]) if c else None


def record_conflux_sets(runrec, exp, hostsdir):
    """runrec's conflux_sets and conflux_legs, and conflux_messages and
    conflux_switches (SWITCH cells, each an extra cell on a leg) where the
    exits count them, when an exit logged any."""
    cfx = exit_conflux_counts(exp, hostsdir)
    if cfx:
        runrec["conflux_sets"], runrec["conflux_legs"] = cfx["sets"], cfx["legs"]
        if "messages" in cfx:
            runrec["conflux_messages"] = cfx["messages"]
            runrec["conflux_switches"] = cfx["switches"]


def do_run(exp, config, seed, duration, args, out):
    name = run_name(exp, config, seed)
    rdir = os.path.join(out, "runs", name)
    os.makedirs(rdir, exist_ok=True)
    rundir = os.path.join(rdir, "testbed")
    log = os.path.join(rdir, "testbed.log")
    gen = os.path.join(rdir, "testbed.toml")
    with open(gen, "w") as f:
        f.write(testbed_toml(exp, config, seed))
    runrec = {"run": name, "config": config["name"], "seed": seed, "status": "starting",
              "started": time.time()}
    up = ["up", gen, "--rundir", rundir]
    for opt in ("builddir", "pctor", "tor", "delayd"):
        v = getattr(args, opt)
        if v:
            up += [f"--{opt}", os.path.abspath(v) if os.sep in v else v]
    results = []
    rpath = os.path.join(rdir, "records.jsonl")
    rlock = threading.Lock()

    def emit(rec):
        rec.update({"run": name, "config": config["name"], "seed": seed})
        with rlock:
            results.append(rec)
            with open(rpath, "a") as f:
                f.write(json.dumps(rec, sort_keys=True) + "\n")

    interrupted = None
    runrec["load_start"] = loadavg()
    try:
        note(f"run {name}: bringing the network up")
        t = time.monotonic()
        rc, tail = testbed_cmd(up, log)
        runrec["up_s"] = round(time.monotonic() - t, 1)
        if rc != 0:
            raise ExperimentError(f"pctor-testbed up failed ({rc}): {tail}")
        with contextlib.suppress(OSError, TestbedError):
            hinfo = Run(rundir).load().state["hosts"]
            save_json(os.path.join(rdir, "hosts.json"),
                      {i["ip"]: n for n, i in hinfo.items()})
        t = time.monotonic()
        runrec["status"] = "running"
        run_ = Run(rundir).load()
        hosts = run_.state["hosts"]
        pin_info = {}
        dgr = {**datagram_relays(hosts), **ipsec_relays(hosts)}
        before = transport_counters(hosts, dgr) if dgr else None
        for k in ("relay_datagram_links", "relay_ipsec_sas"):
            if run_.state.get(k):
                runrec[k] = run_.state[k]
        try:
            runrec["measured"], runrec["workload_started"] = run_workload(
                dict(exp, workload=config_workload(exp, config)), hosts, seed, duration, emit,
                ss_path=os.path.join(os.path.dirname(rundir), "ss.jsonl"), pin_info=pin_info)
        finally:
            if pin_info:
                runrec["paired_paths"] = pin_info
                paired_flag_check(run_, hosts, pin_info, runrec)
        runrec["workload_s"] = round(time.monotonic() - t, 1)
        runrec["status"] = "ok"
        if dgr:
            # What the relays say their hops used during the workload: a run
            # whose circuits did not take the datagram transport (or IPsec)
            # is refused.
            after = transport_counters(hosts, dgr)
            hops, problem = transport_check(before, after)
            runrec["transport_counters"] = {"before": before, "after": after}
            runrec["circuit_hops"] = hops
            if problem:
                runrec["status"] = "failed"
                runrec["error"] = problem
                note(f"run {name}: {problem}")
    except (KeyboardInterrupt, Interrupted):
        ignore_signals()   # one interruption is enough: finish cleanly
        runrec["status"] = "interrupted"
        interrupted = True
    except (ExperimentError, TestbedError, OSError) as e:
        runrec["status"] = "failed"
        runrec["error"] = str(e)
        note(f"run {name} failed: {e}")
    finally:
        t = time.monotonic()
        if testbed_down(rundir, log) != 0 and runrec["status"] == "ok":
            runrec["status"] = "failed"
            runrec["error"] = "pctor-testbed down failed"
        runrec["down_s"] = round(time.monotonic() - t, 1)
    runrec["load_end"] = loadavg()
    record_conflux_sets(runrec, exp, os.path.join(rundir, "hosts"))
    asks, n_mm = collect_run(exp, runrec, rundir, rdir)
    prune_rundir(rundir, args.keep_data)
    runrec["records"] = len(results)
    runrec["ok_records"] = sum(1 for r in results if r["ok"])
    runrec["measureme_asks"] = len(asks)
    runrec["measureme_records"] = n_mm
    runrec["finished"] = time.time()
    return runrec, results, asks, run_measureme(rdir)


def do_run_shadow(exp, config, seed, duration, args, out):
    """One run in Shadow; returns what do_run returns."""
    sh = shadow_module()
    name = run_name(exp, config, seed)
    rdir = os.path.join(out, "runs", name)
    os.makedirs(rdir, exist_ok=True)
    gen = os.path.join(rdir, "testbed.toml")
    with open(gen, "w") as f:
        f.write(testbed_toml(exp, config, seed))
    opts = dict(sh.DEFAULTS, **exp.get("shadow", {}))
    if args.shadow_parallelism:
        opts["parallelism"] = args.shadow_parallelism
    wstart = float(opts["workload_start_s"])
    stop_s = math.ceil(wstart + exp["warmup_s"] + duration + exp["request_timeout_s"] + 20)
    runrec = {"run": name, "config": config["name"], "seed": seed, "status": "starting",
              "started": time.time(), "engine": "shadow", "simulated_s": stop_s}
    sim = os.path.join(rdir, "shadow")
    bins_args = argparse.Namespace(builddir=args.builddir, pctor=args.pctor, tor=args.tor,
                                   tor_gencert=None)
    workload = config_workload(exp, config)
    wl_spec = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in w.items()}
               for w in workload]

    def client_procs(h, info, tdir):
        if not any(h.name in w["clients"] for w in workload):
            return []
        hosts = {n: {k: i[k] for k in ("ip", "binary", "role") if k in i} |
                 ({"files": i["files"]} if "files" in i else {}) for n, i in info.items()}
        spec = {"workload": wl_spec, "warmup_s": exp["warmup_s"],
                "request_timeout_s": exp["request_timeout_s"], "hosts": hosts,
                "seed": seed, "duration": duration, "client": h.name,
                "start_wall": sh.SIM_EPOCH + wstart,
                # requests still running then are cut, so that the workload
                # exits (as Shadow expects) before the simulation stops
                "end_by": stop_s - wstart - 15,
                "out": os.path.join(info[h.name]["dir"], "records.jsonl")}
        if exp.get("paired_paths"):
            # the runner cannot reach the clients' ControlPorts inside
            # the simulation: each client host's workload pins its own
            # loops (workload.shadow_pinner), on the test bed's draw
            net = exp["network"]
            spec.update({"paired_paths": True,
                         "path_relays": path_candidates(net["hosts"], net.get("defaults")),
                         "fingerprints": {n: i["fingerprint"] for n, i in info.items()
                                          if i.get("fingerprint")},
                         "pins": os.path.join(info[h.name]["dir"], "pins.json"),
                         "rebuild_after_links": any(
                             torrc_datagram_transport(lines)
                             for lines in config["torrc"].values())})
        with open(os.path.join(tdir, "workload.json"), "w") as f:
            json.dump(spec, f)
        return [{"path": sys.executable,
                 "args": [EXPERIMENT, "shadow-client",
                          os.path.join(info[h.name]["dir"], "workload.json")],
                 "start_time": f"{int(opts['clients_start_s']) + 5}s",
                 "expected_final_state": {"exited": 0}}]

    results, asks, n_mm = [], [], 0
    try:
        bins = find_binaries(bins_args, need_tor=True, need_pctor=True, need_delayd=False)
        shadow = sh.find_shadow(args.shadow)
        if not shadow:
            raise ExperimentError("shadow not found (scripts/install-shadow, or --shadow PATH)")
        state, notes = sh.compile_network(gen, sim, bins, seed, stop_s, opts, client_procs)
        runrec["notes"] = notes
        with open(os.path.join(sim, "compiled.json")) as f:
            kc = json.load(f)["keycache"]
        runrec["keycache"] = kc
        note(f"run {name}: keys of {kc['hosts']} hosts from {kc['dir']} "
             f"({kc['made_authorities'] + kc['made_relays']} made, {kc['seconds']} s)")
        note(f"run {name}: simulating {stop_s} s in Shadow")
        runrec["status"] = "running"
        rc, wall, mem, cpu = sh.run_shadow(sim, shadow, opts)
        runrec.update({"shadow_rc": rc, "wall_s": wall, "peak_rss_mib": mem, "cpu_s": cpu})
        pins = {}
        for cname, info in sorted(state.items()):
            for rec in read_jsonl(os.path.join(info["dir"], "records.jsonl")):
                rec.update({"run": name, "config": config["name"], "seed": seed})
                results.append(rec)
            with contextlib.suppress(OSError, ValueError):
                with open(os.path.join(info["dir"], "pins.json")) as f:
                    pins.update(json.load(f))
        if exp.get("paired_paths"):
            runrec["paired_paths"] = pins
            # (on the test bed checked against the consensus; here the
            # relays' flags are the authority's in the simulation)
            runrec["paired_paths_flags"] = "not checked under Shadow"
            clients = {c for w in workload for c in w["clients"]}
            if set(pins) != clients:
                runrec["paired_paths_missing"] = sorted(clients - set(pins))
        if rc != 0:
            runrec["status"] = "failed"
            runrec["error"] = f"shadow exited {rc}: " + " | ".join(
                tail(os.path.join(sim, "shadow.log"), 4).splitlines())
        elif not any(r["ok"] for r in results):
            runrec["status"] = "failed"
            runrec["error"] = "no request succeeded (see the clients' logs in the run's shadow/)"
        else:
            runrec["status"] = "ok"
        runrec["measured"] = sum(1 for r in results if r.get("counted") and
                                 not r.get("background"))
        asks, n_mm = collect_hosts(runrec, state, rdir)
        mm = run_measureme(rdir)
        # A datagram CircuitTransport: the relays' SIGUSR1 counters (the
        # test bed's check) cannot be asked inside the simulation; their
        # MeasureMe records say which transport each hop of the circuits
        # made for the workload used.
        dgr = datagram_relays(state)
        if dgr:
            hops = measureme_hops(mm, dgr, sh.SIM_EPOCH + wstart)
            runrec["circuit_hops_measureme"] = hops
            names = {TRANSPORT_NAMES[t] for t in dgr.values()}
            n_dg = sum(n for h in hops.values() for t, n in h.items() if t in names)
            if not hops:
                runrec["circuit_hops_note"] = ("not checked: no MeasureMe record of a "
                                               "workload circuit at the relays")
            elif not n_dg and runrec["status"] == "ok":
                runrec["status"] = "failed"
                runrec["error"] = ("transport not engaged: no hop of a workload circuit "
                                   "used " + "/".join(sorted(names)) + " (MeasureMe)")
        with open(os.path.join(rdir, "records.jsonl"), "w") as f:
            for r in results:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        record_conflux_sets(runrec, exp, os.path.join(sim, "shadow.data", "hosts"))
        if not args.keep_data:
            shutil.rmtree(os.path.join(sim, "template"), ignore_errors=True)
            prune_rundir(os.path.join(sim, "shadow.data"), False)
    except (KeyboardInterrupt, Interrupted):
        ignore_signals()
        runrec["status"] = "interrupted"
    except (ExperimentError, TestbedError, sh.ShadowError, sh.keycache.KeyCacheError,
            OSError) as e:
        runrec["status"] = "failed"
        runrec["error"] = str(e)
        note(f"run {name} failed: {e}")
    runrec["records"] = len(results)
    runrec["ok_records"] = sum(1 for r in results if r["ok"])
    runrec["measureme_asks"] = len(asks)
    runrec["measureme_records"] = n_mm
    runrec["finished"] = time.time()
    return runrec, results, asks, run_measureme(rdir)


def move_records(src, dst):
    """Append the JSON-lines file src to dst (created if missing) and
    remove src; nothing if src is missing."""
    try:
        f = open(src, "rb")
    except FileNotFoundError:
        return
    with f, open(dst, "ab") as g:
        shutil.copyfileobj(f, g, 1 << 20)
    os.unlink(src)


def cmd_shadow_client(args):
    """Inside a Shadow simulation: this client host's request loops
    (workload.shadow_client); records go to the spec's "out" file."""
    with open(args.spec) as f:
        spec = json.load(f)
    shadow_client(spec)
    return 0


def cmd_run(args):
    if args.engine == "shadow":
        pass
    elif os.geteuid() != 0:
        note("must run as root (network namespaces)")
        return 1
    exp = load_experiment(args.file, args.scale)
    seeds = args.seeds or exp["seeds"]
    duration = args.duration or exp["duration_s"]
    if args.ss_interval is not None:
        if not 0 <= args.ss_interval <= 60000:
            raise ExperimentError("--ss-interval must be 0..60000 ms")
        exp["ss_interval_ms"] = args.ss_interval
    configs = exp["configs"]
    if args.configs:
        want = args.configs.split(",")
        unknown = [c for c in want if c not in [x["name"] for x in configs]]
        if unknown:
            gone = [c for c in unknown if c in exp.get("configs_left_out", [])]
            raise ExperimentError(f"no configuration {', '.join(unknown)}" + (
                f" ({', '.join(gone)}: written for the network as given, left out of "
                f"--scale {args.scale})" if gone else ""))
        configs = [c for c in configs if c["name"] in want]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(args.out or f"pctor-experiment-{exp['name']}-{stamp}")
    if os.path.exists(out) and os.listdir(out):
        raise ExperimentError(f"{out} exists and is not empty")
    os.makedirs(out, exist_ok=True)
    shutil.copy(args.file, os.path.join(out, "experiment.toml"))
    if exp.get("network_file"):
        shutil.copy(exp["network_file"], os.path.join(out, "network.toml"))
    first = args.first_seed
    meta = {"experiment": exp["name"], "file": exp["file"], "seeds": seeds,
            "first_seed": first,
            "engine": args.engine,
            "duration_s": duration, "warmup_s": exp["warmup_s"],
            "configs": [c["name"] for c in configs],
            "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
            "started": time.time(), "machine": machine_info(args), "runs": [],
            "definition": definition_summary(exp)}
    save_json(os.path.join(out, "runs.json"), meta)
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    status = 0
    try:
        for seed in range(first, first + seeds):
            for c in configs:
                runner = do_run_shadow if args.engine == "shadow" else do_run
                runrec, res, asks, mm = runner(exp, c, seed, duration, args, out)
                meta["runs"].append(runrec)
                save_json(os.path.join(out, "runs.json"), meta)
                append_jsonl(os.path.join(out, "results.jsonl"), res)
                move_records(mm.path, os.path.join(out, "measureme.jsonl"))
                append_jsonl(os.path.join(out, "measureme-asks.jsonl"), asks)
                ssp = os.path.join(out, "runs", runrec["run"], "ss.jsonl")
                if os.path.exists(ssp):
                    sss = read_jsonl(ssp)
                    for r in sss:
                        r.update({"run": runrec["run"], "config": runrec["config"],
                                  "seed": runrec["seed"]})
                    append_jsonl(os.path.join(out, "ss.jsonl"), sss)
                if runrec["status"] != "ok":
                    status = 1
                cfx = (f", {runrec['conflux_sets']} conflux sets ({runrec['conflux_legs']} "
                       f"legs) linked at the exits" if "conflux_sets" in runrec else "")
                if switch_share(runrec):
                    cfx += ", " + switch_share(runrec)
                note(f"run {runrec['run']}: {runrec['status']}, {runrec['ok_records']} of "
                     f"{runrec['records']} requests ok, {runrec['measureme_records']} "
                     f"MeasureMe records{cfx}")
                if runrec["status"] == "interrupted":
                    raise Interrupted("during a run")
    except (KeyboardInterrupt, Interrupted):
        ignore_signals()
        meta["interrupted"] = True
        note("interrupted; the current run is down; writing the report of what was done")
        status = 130
    finally:
        meta["finished"] = time.time()
        save_json(os.path.join(out, "runs.json"), meta)
        for s, h in old.items():
            signal.signal(s, h)
    make_report(out)
    print(out)
    return status


def loadavg():
    """The 1- and 5-minute load averages (other tenants' load distorts runs)."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:2]]
    except (OSError, ValueError):
        return None


def machine_info(args):
    info = {"kernel": platform.release(), "cpus": os.cpu_count(),
            "python": platform.python_version()}
    with contextlib.suppress(OSError):
        with open("/proc/meminfo") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 1048576, 1)
    for name, argv in (("tor", [args.tor or "tor", "--version"]),):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            info[name] = p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        p = subprocess.run(["git", "-C", SCRIPTS_DIR, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=20)
        if p.returncode == 0:
            info["pctor_source"] = p.stdout.strip()
    return info


def cmd_report(args):
    if not os.path.exists(os.path.join(args.dir, "runs.json")):
        raise ExperimentError(f"{args.dir}: no runs.json (not an experiment output directory)")
    make_report(os.path.abspath(args.dir))
    print(os.path.join(os.path.abspath(args.dir), "README.md"))
    return 0


def cmd_check(args):
    exp = load_experiment(args.file, args.scale)
    print_plan(exp, args.seeds or exp["seeds"], args.duration or exp["duration_s"])
    if args.show_testbed:
        for c in exp["configs"]:
            print(f"\n# ---- configuration {c['name']} ----")
            print(testbed_toml(exp, c, 1))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="Run an experiment definition on "
                                 "the pctor test bed and write a report.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run every configuration with every seed, write a report")
    p.add_argument("file")
    p.add_argument("--out", help="report directory (default ./pctor-experiment-NAME-TIME)")
    p.add_argument("--seeds", type=int, help="repetitions per configuration "
                   "(default experiment.seeds)")
    p.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1): "
                   "--first-seed 4 --seeds 3 runs seeds 4, 5 and 6, e.g. to add seeds to "
                   "an earlier run or split one experiment over two processes")
    p.add_argument("--duration", type=float, help="measured seconds per run "
                   "(default experiment.duration_s)")
    p.add_argument("--configs", help="only these configurations (comma-separated)")
    p.add_argument("--builddir", help="pctor build directory (for pctor and pctor-delayd)")
    p.add_argument("--pctor")
    p.add_argument("--tor")
    p.add_argument("--delayd")
    p.add_argument("--keep-data", action="store_true", help="keep the relays' data "
                   "directories and the web files of every run")
    p.add_argument("--ss-interval", type=int, metavar="MS", help="snapshot the relays' "
                   "relay-to-relay TCP connections (ss -tin) every MS milliseconds "
                   "(overrides experiment.ss_interval_ms; 0 = off)")
    p.add_argument("--scale", help="the definition's [scale.NAME] network and workload "
                   "(default: the network as written)")
    p.add_argument("--engine", choices=("testbed", "shadow"), default="testbed",
                   help="network namespaces (default, root) or the Shadow simulator")
    p.add_argument("--shadow", help="the shadow binary (default: PATH, ~/.local/bin)")
    p.add_argument("--shadow-parallelism", type=int, help="Shadow's worker threads "
                   "(default shadow.parallelism of the definition, else 1)")
    p = sub.add_parser("shadow-client", help="(inside Shadow) one client host's workload")
    p.add_argument("spec")
    p = sub.add_parser("report", help="rebuild the report of an output directory")
    p.add_argument("dir")
    p = sub.add_parser("check", help="validate a definition and print the plan (no root)")
    p.add_argument("file")
    p.add_argument("--scale", help="the definition's [scale.NAME] network and workload")
    p.add_argument("--seeds", type=int)
    p.add_argument("--duration", type=float)
    p.add_argument("--show-testbed", action="store_true", help="print the generated "
                   "test-bed file of every configuration")
    args = ap.parse_args(argv)
    if getattr(args, "seeds", None) is not None and args.seeds < 1:
        ap.error("--seeds must be at least 1")
    if getattr(args, "first_seed", None) is not None and args.first_seed < 1:
        ap.error("--first-seed must be at least 1")
    if getattr(args, "duration", None) is not None and args.duration <= 0:
        ap.error("--duration must be positive")
    try:
        return {"run": cmd_run, "report": cmd_report, "check": cmd_check,
                "shadow-client": cmd_shadow_client}[args.cmd](args)
    except (ExperimentError, TestbedError) as e:
        note(str(e))
        return 1
    except (KeyboardInterrupt, Interrupted):
        note("interrupted")
        return 130
