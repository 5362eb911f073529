# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.testbed -- pctor-testbed's commands (up, down, status, list,
# check, exec, selftest, traffic, workload) and its command line; the
# script scripts/pctor-testbed only calls main(). The parts they use live in
# config (the file), netns (namespaces, links, run state), network (tor,
# daemons) and traffic (client loops).

import argparse
import os
import random
import signal
import threading
import time
import tomllib

from . import common
from .common import (PROG, TOR_ROLES, TestbedError, atomic_write, fmt_rate, hex_to_b64, note,
                     parse_size, tail)
from .config import DEFAULT_SIZE, Host, load_config, parse_traffic
from .netns import (Run, build_links, ensure_congestion_control, host_addrs, live_runs,
                    mark_slots_built, netns_exists, selftest_pair)
from .network import (Interrupted, consensus_flags, fetch_consensus, find_binaries,
                      gen_authority_keys, new_run, start_charon, start_server, start_tor_host,
                      undo_on_failure, wait_clients, wait_consensus,
                      wait_datagram_first_hops, wait_relay_datagram_links,
                      write_torrc)
from .traffic import Emitter, check_client, pick_file, run_stream, summarize


def cmd_up(args):
    cfg = load_config(args.file)
    hosts = cfg["hosts"]
    need_delay = any(h.link["delay_up"] or h.link["delay_down"] or h.link["jitter_up"] or
                     h.link["jitter_down"] for h in hosts)
    bins = find_binaries(args, need_tor=any(h.binary == "tor" for h in hosts),
                         need_pctor=any(h.binary == "pctor" for h in hosts),
                         need_delayd=need_delay, need_ipsec=any(h.ipsec for h in hosts))
    old_allowed = None
    for cc in sorted({cfg["congestion_control"]} |
                     {h.tcp["congestion_control"] for h in hosts
                      if "congestion_control" in h.tcp}):
        was = ensure_congestion_control(cc)
        if old_allowed is None:
            old_allowed = was
    run_, hosts = new_run(cfg, args, "network")
    if old_allowed is not None:
        run_.state["tcp_allowed_congestion_control_before"] = old_allowed
    t0 = time.monotonic()
    with undo_on_failure(run_):
        run_.state["binaries"] = bins
        build_links(run_, hosts, cfg, bins.get("delayd"))
        note(f"links built in {time.monotonic() - t0:.1f}s ({len(hosts)} hosts, "
             f"{len(run_.state['delay_links'])} delay queues)")
        atomic_write(os.path.join(run_.rundir, "torrc-defaults"), "")
        st = run_.state
        hinfo = st["hosts"]
        auths = [h.name for h in hosts if h.role == "authority"]
        # authority keys in parallel (RSA-3072 generation takes a while)
        dirauth = [None] * len(auths)
        errs = []

        def gen(i, name):
            try:
                dirauth[i] = gen_authority_keys(run_, name, hinfo[name], bins)
            except Exception as e:
                errs.append(e)

        ths = [threading.Thread(target=gen, args=(i, n)) for i, n in enumerate(auths)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        if errs:
            raise errs[0]
        atomic_write(os.path.join(run_.rundir, "dirauth.torrc"), "\n".join(dirauth) + "\n")
        st["dirauth"] = dirauth
        exits = [h.name for h in hosts if h.role == "exit"]
        # Relays that carry hops over datagram links: the test bed closes the
        # clients' first circuits once those links are up, through each
        # client's ControlPort.
        dgram_relays = [h for h in hosts if h.role in ("relay", "exit")
                        and h.has_datagram_port() and h.datagram_transport()]
        ipsec_relays = [h for h in hosts if h.role in ("relay", "exit") and h.ipsec
                        and h.binary == "pctor"]
        for h in hosts:
            if h.role in TOR_ROLES:
                write_torrc(run_, h, hinfo[h.name], dirauth, exits, cfg["exit_policy"],
                            control=len(dgram_relays) >= 2 or len(ipsec_relays) >= 2)
        for h in hosts:
            if h.role == "server":
                start_server(run_, h, hinfo[h.name])
        relays = [h for h in hosts if h.role in ("authority", "relay", "exit")]
        for h in relays:
            if h.ipsec:
                start_charon(run_, h, hinfo[h.name], bins)
        for h in relays:
            start_tor_host(run_, h, hinfo[h.name], bins)
        note(f"started {len(auths)} authorities and {len(relays) - len(auths)} relays; "
             f"waiting for the consensus")
        dt = wait_consensus(run_, [h.name for h in relays], auths, cfg["bootstrap_timeout"])
        note(f"the consensus lists all {len(relays)} relays after {dt:.0f}s")
        clients = [h for h in hosts if h.role == "client"]
        for h in clients:
            start_tor_host(run_, h, hinfo[h.name], bins)
        if clients:
            wait_clients(run_, [h.name for h in clients], cfg["bootstrap_timeout"])
        dgram_clients = [h.name for h in clients if h.relay and h.has_datagram_port()]
        if dgram_clients:
            wait_datagram_first_hops(run_, dgram_clients, cfg["bootstrap_timeout"])
        if clients and len(dgram_relays) >= 2:
            wait_relay_datagram_links(run_, hosts, cfg["bootstrap_timeout"])
        if clients and len(ipsec_relays) >= 2:
            wait_relay_datagram_links(run_, hosts, cfg["bootstrap_timeout"], ipsec=True)
        st["status"] = "up"
        st["ready_after_s"] = round(time.monotonic() - t0, 1)
        run_.save()
    mark_slots_built(run_.state["first_slot"], run_.state["slots"])
    note(f"run {run_.runid} is up after {time.monotonic() - t0:.0f}s: {run_.rundir}")
    print(run_.rundir)
    return 0


def find_run(args):
    rd = args.rundir or os.environ.get("PCTOR_TESTBED_RUNDIR")
    if rd:
        return Run(rd).load()
    runs = live_runs()
    if len(runs) == 1:
        return Run(runs[0]["rundir"]).load()
    if not runs:
        raise TestbedError("no live test-bed run found; give --rundir DIR")
    raise TestbedError("several runs are live; give --rundir DIR: " +
                       " ".join(r["rundir"] for r in runs))


def cmd_down(args):
    run_ = find_run(args)
    t0 = time.monotonic()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    run_.teardown()
    left = run_.leftovers()
    if left:
        raise TestbedError("left behind: " + "; ".join(left))
    note(f"run {run_.runid} is down ({time.monotonic() - t0:.1f}s); logs kept in {run_.rundir}")
    return 0


def cmd_status(args):
    run_ = find_run(args)
    st = run_.state
    hosts = st["hosts"]
    auths = [n for n, i in hosts.items() if i["role"] == "authority"]
    flags = {}
    if st.get("status") == "up" and auths:
        text = fetch_consensus(run_, auths)
        if text:
            flags = consensus_flags(text)
    print(f"run {st['runid']} ({st['name']}, {st.get('kind')}): {st['status']}; "
          f"rundir {run_.rundir}; tcp {st['congestion_control']}")
    print(f"{'HOST':<12} {'ROLE':<9} {'BIN':<5} {'ADDRESS':<14} {'UP':>9} {'DOWN':>9} "
          f"{'DELAY u/d ms':>12} {'JIT':>5} {'LOSS u/d %':>10} {'PID':>7} {'STATE':<7} FLAGS")
    procs = {p["host"]: p for p in st["processes"] if p["kind"] != "delayd"}
    for name, i in sorted(hosts.items(), key=lambda kv: kv[1]["index"]):
        l = i["link"]
        rec = procs.get(name)
        state = "-"
        if rec:
            state = "running" if run_.proc_alive(rec) else "stopped"
        fl = "-"
        if i.get("fingerprint") and flags:
            fl = ",".join(flags.get(hex_to_b64(i["fingerprint"]), ["(absent)"]))
        print(f"{name:<12} {i['role']:<9} {i['binary'] or '-':<5} {i['ip']:<14} "
              f"{fmt_rate(l['up']):>9} {fmt_rate(l['down']):>9} "
              f"{l['delay_up']:>5g}/{l['delay_down']:<6g} {max(l['jitter_up'], l['jitter_down']):>5g} "
              f"{l['loss_up']:>4g}/{l['loss_down']:<5g} {rec['pid'] if rec else '-':>7} "
              f"{state:<7} {fl}")
    for p in st.get("pairs", []):
        print(f"pair {p['a']} <> {p['b']}: loss {p['loss_ab']:g} % ({p['a']} -> {p['b']}), "
              f"{p['loss_ba']:g} % ({p['b']} -> {p['a']})")
    for p in st["processes"]:
        if p["kind"] == "delayd":
            print(f"delayd: pid {p['pid']} {'running' if run_.proc_alive(p) else 'stopped'}, "
                  f"{len(st.get('delay_links', []))} queues; counters: kill -USR1 {p['pid']}, "
                  f"then see {run_.host_dir('core')}/delayd.log")
    return 0


def cmd_check(args):
    """Validate a test-bed file and print what `up` would build (no root)."""
    cfg = load_config(args.file)
    hosts = cfg["hosts"]
    print(f"{args.file}: {cfg['name']}, {len(hosts)} hosts, tcp {cfg['congestion_control']}, "
          f"queue {cfg['queue_ms']:g} ms, exit policy {cfg['exit_policy']}")
    nq = 0
    for h in hosts:
        l = h.link
        core_ip, ip = host_addrs(0, h.index)
        q = [d for d in ("up", "down") if l[f"delay_{d}"] or l[f"jitter_{d}"]]
        nq += len(q)
        print(f"  {h.name:<12} {h.role:<9} {h.binary or '-':<5} {ip + '/30':<16} "
              f"up {fmt_rate(l['up'])} down {fmt_rate(l['down'])} "
              f"delay {l['delay_up']:g}/{l['delay_down']:g} ms jitter "
              f"{l['jitter_up']:g}/{l['jitter_down']:g} ms loss {l['loss_up']:g}/"
              f"{l['loss_down']:g} %" + (f" torrc +{len(h.torrc)}" if h.torrc else "") + (" ipsec" if h.ipsec else "")
              + (f" files {','.join(h.files)}" if h.files else ""))
    for p in cfg["pairs"]:
        print(f"  pair {p['a']} <> {p['b']}: loss {p['loss_ab']:g} % ({p['a']} -> {p['b']}), "
              f"{p['loss_ba']:g} % ({p['b']} -> {p['a']})")
    for t in cfg["traffic"]:
        print(f"  traffic: {t['client']} {t['model']} x{t['streams']} ({t['size']} bytes)")
    print(f"  {nq} delay queue(s); addresses shown for slot 0 (a run takes a free slot)")
    return 0


def cmd_list(args):
    runs = live_runs()
    for r in runs:
        print(f"{r['runid']} {r['rundir']} slots {r['first']}..{r['first'] + r['count'] - 1}")
    return 0


def cmd_exec(args):
    run_ = find_run(args)
    cmd = args.command
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise TestbedError("exec needs a command after --")
    hosts = run_.state["hosts"]
    if args.host == "core":
        ns = run_.ns("core")
    elif args.host in hosts:
        ns = hosts[args.host]["ns"]
    else:
        raise TestbedError(f"no host '{args.host}' in run {run_.runid} "
                           f"(hosts: {' '.join(sorted(hosts))}, core)")
    if not netns_exists(ns):
        raise TestbedError(f"namespace {ns} does not exist (is the run down?)")
    env = dict(os.environ, PCTOR_TESTBED_RUNDIR=run_.rundir, PCTOR_TESTBED_HOST=args.host)
    if args.host in hosts:
        env["PCTOR_TESTBED_IP"] = hosts[args.host]["ip"]
    os.execvpe("ip", ["ip", "netns", "exec", ns] + cmd, env)


def cmd_selftest(args):
    cfg = load_config(args.file)
    hosts = cfg["hosts"]
    need_delay = any(h.link["delay_up"] or h.link["delay_down"] or h.link["jitter_up"] or
                     h.link["jitter_down"] for h in hosts)
    bins = find_binaries(args, False, False, need_delay)
    old_allowed = ensure_congestion_control(cfg["congestion_control"])
    probe_link = {k: 0 for k in ("up", "down", "delay_up", "delay_down", "jitter_up",
                                 "jitter_down", "loss_up", "loss_down")}
    probe = Host("probe", "host", None, probe_link, [], {}, len(hosts))
    run_, all_hosts = new_run(cfg, args, "selftest", extra_hosts=[probe])
    if old_allowed is not None:
        run_.state["tcp_allowed_congestion_control_before"] = old_allowed
    rows = []
    t0 = time.monotonic()
    with undo_on_failure(run_):
        build_links(run_, all_hosts, cfg, bins.get("delayd"))
        note(f"links built in {time.monotonic() - t0:.1f}s; measuring "
             f"(tcp {cfg['congestion_control']})")
        hinfo = run_.state["hosts"]
        port = 5201
        for h in hosts:
            port = selftest_pair(rows, f"{h.name}<>probe", hinfo[h.name], hinfo["probe"],
                                 hinfo, args, port)
        if len(hosts) >= 2 and not args.no_pair:
            a, b = hosts[0].name, hosts[1].name
            port = selftest_pair(rows, f"{a}<>{b}", hinfo[a], hinfo[b], hinfo, args, port,
                                 cfg["pairs"])
        # delayd's own view
        for p in run_.state["processes"]:
            if p["kind"] == "delayd" and run_.proc_alive(p):
                os.kill(p["pid"], signal.SIGUSR1)
        time.sleep(0.3)
        st = tail(os.path.join(run_.host_dir("core"), "delayd.log"), 3)
        total = [l for l in st.splitlines() if " total " in l]
        if total:
            note("delayd: " + total[-1].split("when=signal ", 1)[-1])
        if not args.keep:
            run_.teardown()
            left = run_.leftovers()
            if left:
                raise TestbedError("left behind: " + "; ".join(left))
    print(f"selftest of {args.file}: run {run_.runid}, tcp {cfg['congestion_control']}, "
          f"queue {cfg['queue_ms']:g} ms, {time.monotonic() - t0:.0f}s")
    print("tolerances: rtt avg within [want - 3 sd/sqrt(n), want + 1 ms + 2% + 3 sd/sqrt(n)]; rtt sd within "
          f"±35% (+0.3 ms); rate within [{args.rate_low:g}, {args.rate_high:g}] x want "
          "(tcp goodput converted to Ethernet frame bytes, 1514/1448); loss within 4 binomial "
          "sd (+0.1 point)")
    print("LINK 'x<>probe ->' is x's uplink (towards an unshaped probe host), '<-' its "
          "downlink; 'x<>y' is end to end")
    print(f"{'LINK':<18} {'METRIC':<12} {'WANT':>9} {'GOT':>9} {'RANGE':>19}  {'METHOD':<22} OK")
    bad = 0
    for r in rows:
        rng = f"[{r.lo:.2f}, {r.hi:.2f}]" if r.checked else "(reported)"
        got = f"{r.got:.3f}" if r.got is not None else "-"
        ok = "ok" if r.ok else "FAIL"
        if not r.ok:
            bad += 1
        print(f"{r.link:<18} {r.metric:<12} {r.want:>9.3f} {got:>9} {rng:>19}  "
              f"{r.method:<22} {ok}")
    if args.keep:
        print(f"links kept: {run_.rundir} (pctor-testbed down --rundir {run_.rundir})")
    print(f"{len(rows) - bad} passed, {bad} failed")
    return 1 if bad else 0


def cmd_traffic(args):
    run_ = find_run(args)
    check_client(run_, args.client)
    size = parse_size(args.size, "--size") if args.size else DEFAULT_SIZE[args.model]
    rnd = random.Random(args.seed)
    em = Emitter(args.out)
    try:
        n, ok = run_stream(run_, args.client, args.model, args.server, size,
                           (args.think_min, args.think_max),
                           time.monotonic() + args.duration, args.count, args.timeout, rnd, em)
    finally:
        em.close()
    note(f"{args.client}: {ok} of {n} {args.model} downloads succeeded")
    return 0 if n and ok == n else 1


def cmd_workload(args):
    run_ = find_run(args)
    if args.spec:
        entries = []
        for sp in args.spec:
            parts = sp.split(":")
            if len(parts) not in (2, 3) or not all(parts):
                raise TestbedError(f"--spec {sp}: use CLIENT:MODEL[:STREAMS]")
            e = {"client": parts[0], "model": parts[1]}
            if len(parts) == 3:
                if not parts[2].isdigit():
                    raise TestbedError(f"--spec {sp}: STREAMS must be a number")
                e["streams"] = int(parts[2])
            entries.append(e)
        specs = parse_traffic(entries, "--spec")
    else:
        try:
            with open(os.path.join(run_.rundir, "testbed.toml"), "rb") as f:
                raw = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise TestbedError(f"cannot read the run's testbed.toml: {e}")
        specs = parse_traffic(raw.get("traffic", []), "[[traffic]]")
    if not specs:
        raise TestbedError("no traffic: add [[traffic]] entries to the test-bed file or "
                           "give --spec CLIENT:MODEL[:STREAMS]")
    for sp in specs:
        check_client(run_, sp["client"])
        pick_file(run_.state["hosts"], sp["server"], sp["size"])
        tmin = args.think_min if args.think_min is not None else sp["think"][0]
        tmax = args.think_max if args.think_max is not None else sp["think"][1]
        if not 0 <= tmin <= tmax:
            raise TestbedError("think times: need 0 <= min <= max")
        sp["think"] = (tmin, tmax)
    seed = args.seed if args.seed is not None else random.getrandbits(32)
    em = Emitter(args.out)
    deadline = time.monotonic() + args.duration
    threads = []
    k = 0
    for sp in specs:
        for st in range(sp["streams"]):
            rnd = random.Random(f"{seed}-{sp['client']}-{sp['model']}-{st}-{k}")
            th = threading.Thread(target=run_stream, daemon=True, args=(
                run_, sp["client"], sp["model"], sp["server"], sp["size"], sp["think"],
                deadline, 0, args.timeout, rnd, em, st))
            threads.append(th)
            k += 1
    note(f"workload: {len(threads)} streams for {args.duration:g}s (seed {seed})")
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        em.close()
    summarize(em.records)
    bad = [r for r in em.records if not r["ok"]]
    if not em.records:
        note("no request completed")
        return 1
    return 1 if bad else 0


# --------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="Private Tor network in network "
                                 "namespaces with emulated links.")
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def bin_opts(p):
        p.add_argument("--builddir", help="pctor build directory (default: the current "
                       "directory if it has src/app/pctor)")
        p.add_argument("--pctor", help="pctor binary (default BUILDDIR/src/app/pctor, else "
                       "pctor on PATH)")
        p.add_argument("--tor", help="tor binary (default: $TOR or tor)")
        p.add_argument("--tor-gencert", help="tor-gencert binary")
        p.add_argument("--delayd", help="pctor-delayd binary (default "
                       "BUILDDIR/src/tools/delayd/pctor-delayd or PATH)")
        p.add_argument("--rundir", help="run directory (default /tmp/pctor-testbed.NAME.RUNID)")

    p = sub.add_parser("up", help="build the links and start the network")
    p.add_argument("file")
    bin_opts(p)
    p = sub.add_parser("selftest", help="build the links only and measure them")
    p.add_argument("file")
    bin_opts(p)
    p.add_argument("--keep", action="store_true", help="keep the links after measuring")
    p.add_argument("--no-pair", action="store_true", help="skip the host-to-host pair")
    p.add_argument("--pings", type=int, default=100)
    p.add_argument("--ping-interval", type=float, default=20, help="ms")
    p.add_argument("--seconds", type=float, default=4.0, help="length of a rate test")
    p.add_argument("--warmup", type=float, default=1.5, help="seconds not counted")
    p.add_argument("--loss-packets", type=int, default=4000)
    p.add_argument("--rate-low", type=float, default=0.88)
    p.add_argument("--rate-high", type=float, default=1.03)
    for name, hlp in (("down", "stop and remove a run"), ("status", "show a run")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--rundir")
    sub.add_parser("list", help="list live runs")
    p = sub.add_parser("check", help="validate a test-bed file and print the plan")
    p.add_argument("file")
    p = sub.add_parser("exec", help="run a command in a host's namespace")
    p.add_argument("--rundir")
    p.add_argument("host")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("traffic", help="run a client traffic model, JSON lines out")
    p.add_argument("--rundir")
    p.add_argument("client")
    p.add_argument("--model", choices=("web", "bulk"), default="web")
    p.add_argument("--server")
    p.add_argument("--size", help="file size (default 320KiB web, 5MiB bulk)")
    p.add_argument("--duration", type=float, default=60.0, help="seconds")
    p.add_argument("--count", type=int, default=0, help="stop after N requests")
    p.add_argument("--think-min", type=float, default=1.0)
    p.add_argument("--think-max", type=float, default=30.0)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", help="append JSON lines here (default stdout)")
    p = sub.add_parser("workload", help="run the [[traffic]] mix of the run's file (or "
                       "--spec) on all clients at once, JSON lines out")
    p.add_argument("--rundir")
    p.add_argument("--spec", action="append", help="CLIENT:MODEL[:STREAMS] (repeatable; "
                   "replaces the file's [[traffic]])")
    p.add_argument("--duration", type=float, default=60.0, help="seconds")
    p.add_argument("--think-min", type=float, default=None)
    p.add_argument("--think-max", type=float, default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", help="append JSON lines here (default stdout)")
    args = ap.parse_args(argv)
    common.VERBOSE = args.verbose
    if os.geteuid() != 0 and args.cmd not in ("list", "check"):
        note("must run as root (network namespaces)")
        return 77 if os.environ.get("PCTOR_TESTBED_SKIP_NONROOT") else 1
    try:
        return {"up": cmd_up, "down": cmd_down, "status": cmd_status, "list": cmd_list,
                "exec": cmd_exec, "selftest": cmd_selftest, "traffic": cmd_traffic, "check": cmd_check,
                "workload": cmd_workload}[args.cmd](args)
    except TestbedError as e:
        note(str(e))
        return 1
    except (KeyboardInterrupt, Interrupted):
        note("interrupted")
        return 130
