# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.report -- pctor-experiment's report (and pctor-measure's, which
# imports it): the statistics and tables computed from the files in an
# output directory (results.jsonl, measureme.jsonl, runs.json,
# experiment.toml), so `pctor-experiment report DIR` can redo them.
#
# - Percentiles are linear interpolations between order statistics
#   (numpy's default); changes are relative to each configuration's
#   baseline.
# - MeasureMe: the clients' log lines ("MeasureMe: asked hop H of circuit N
#   ... (label L)", MEASUREME_ASK) are joined with the relays' records by
#   label; a relay record whose label no client logged is reported as
#   unexpected.
# - Plots need matplotlib and are skipped, with a note, without it.
# - class_order is looked up at call time, so that pctor-measure can order
#   its classes (file sizes) by size.

import array
import contextlib
import csv
import datetime
import json
import math
import os
import re

from .common import atomic_write
from .definition import PROG


PERCENTILES = (25, 50, 75, 90)
METRICS = (("ttfb", "time to first byte", "s"), ("total", "download time", "s"),
           ("rate", "throughput", "KB/s"))
MEASUREME_ASK = re.compile(r"MeasureMe: asked hop (\d+) of circuit (\d+) to measure it every "
                           r"(\d+) ms \(label ([0-9a-f]{16})\)")


def ss_summary(samples, ip_names, configs):
    """Per configuration, relay, peer and connection class: the sending side
    of relay-to-relay connections while they send (bytes acknowledged grew
    since the previous snapshot). Class: where a relay has three or more
    connections carrying data to one peer (per-circuit connections), the one
    that carried the most is "bulk" (in these experiments the bulk loops'
    circuits), the others "other"; with fewer, "shared". "restart cwnd" is
    the window at the first sending snapshot after 1 s or more without
    sending."""
    conns = {}
    for r in samples:
        conns.setdefault((r["run"], r["relay"], r["local"], r["peer"]), []).append(r)
    groups = {}
    for key, recs in conns.items():
        recs.sort(key=lambda x: x["t"])
        sent = recs[-1].get("bytes_acked", 0) - recs[0].get("bytes_acked", 0)
        if sent < 50000:
            continue
        groups.setdefault(key[:2] + (recs[0]["peer_ip"],), []).append((sent, key, recs))
    rows = {}
    for (run, relay, pip), cl in groups.items():
        cl.sort(key=lambda x: -x[0])
        cfg = cl[0][2][0]["config"]
        for i, (sent, key, recs) in enumerate(cl):
            cls = "shared" if len(cl) < 3 else ("bulk" if i == 0 else "other")
            row = rows.setdefault((cfg, relay, ip_names.get(pip, pip), cls),
                                  {"conns": 0, "sent": 0, "active_s": 0.0, "cwnd": [],
                                   "ssthresh": [], "rtt": [], "pacing": [], "rate": [],
                                   "restart": [], "notsent": [], "recvq": []})
            row["conns"] += 1
            row["sent"] += sent
            last_send = None
            for a, b in zip(recs, recs[1:]):
                d = b.get("bytes_acked", 0) - a.get("bytes_acked", 0)
                dt = b["t"] - a["t"]
                if d <= 0 or dt <= 0:
                    continue
                if last_send is None or b["t"] - last_send >= 1.0:
                    row["restart"].append(a.get("cwnd", 0) if last_send is None
                                          else b.get("cwnd", 0))
                last_send = b["t"]
                row["active_s"] += dt
                row["rate"].append(d / dt / 1000)
                row["cwnd"].append(b.get("cwnd", 0))
                if "ssthresh" in b:
                    row["ssthresh"].append(b["ssthresh"])
                row["rtt"].append(b.get("rtt_ms", 0))
                row["pacing"].append(b.get("pacing_rate_bps", 0) / 8000)
                row["notsent"].append(b.get("notsent", 0) / 1000)
    out = []

    def med(v, p=50):
        return round(percentile(sorted(v), p), 1) if v else None
    for (cfg, relay, peer, cls), r in sorted(rows.items(), key=lambda kv: (
            configs.index(kv[0][0]) if kv[0][0] in configs else 99, kv[0][1:])):
        out.append({"config": cfg, "relay": relay, "peer": peer, "class": cls,
                    "connections": r["conns"], "sent_mb": round(r["sent"] / 1e6, 1),
                    "sending_s": round(r["active_s"], 1),
                    "cwnd_p50": med(r["cwnd"]), "cwnd_p75": med(r["cwnd"], 75),
                    "restart_cwnd_p50": med(r["restart"]), "restarts": len(r["restart"]),
                    "ssthresh_p50": med(r["ssthresh"]),
                    "ssthresh_share": round(len(r["ssthresh"]) / len(r["cwnd"]), 2)
                    if r["cwnd"] else None,
                    "rtt_ms_p50": med(r["rtt"]), "rtt_ms_p75": med(r["rtt"], 75),
                    "pacing_kBps_p50": med(r["pacing"]),
                    "rate_kBps_p50": med(r["rate"]), "rate_kBps_p75": med(r["rate"], 75),
                    "notsent_kB_p50": med(r["notsent"])})
    return out


def save_json(path, obj):
    atomic_write(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


def append_jsonl(path, recs):
    with open(path, "a") as f:
        for r in recs:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def read_jsonl(path):
    out = []
    with contextlib.suppress(FileNotFoundError):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


class JsonlRecords:
    """The records of a JSON-lines file, read from disk again on each
    iteration (nothing if the file is missing). A large Shadow run's
    measureme.jsonl holds millions of records, more than memory holds as
    Python objects: the report and the runner make a few passes over it
    with small per-circuit accumulators instead of loading it."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        try:
            f = open(self.path)
        except FileNotFoundError:
            return
        with f:
            for line in f:
                line = line.strip()
                if line:
                    yield json.loads(line)


# --------------------------------------------------------------------------
# the report

def percentile(sorted_vals, p):
    """Linear interpolation between order statistics (numpy's default)."""
    n = len(sorted_vals)
    if n == 0:
        return None
    x = (n - 1) * p / 100
    lo = math.floor(x)
    hi = min(lo + 1, n - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (x - lo)


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.2f}"
    return str(v)


def pct_change(v, base):
    if v is None or base in (None, 0):
        return None
    return 100.0 * (v - base) / base


def percentile_rows(results, configs, baselines):
    """Rows: config, class, metric, n, p25..p90, mean, and changes vs the
    configuration's baseline."""
    groups = {}
    for r in results:
        if not r.get("counted") or not r.get("ok"):
            continue
        for m, _, _ in METRICS:
            if r.get(m) is not None:
                groups.setdefault((r["config"], r["class"], m), []).append(r[m])
    classes = sorted({k[1] for k in groups}, key=class_order)
    rows = []
    for cls in classes:
        for m, _, _ in METRICS:
            stats = {}
            for c in configs:
                vals = sorted(groups.get((c, cls, m), []))
                stats[c] = {"n": len(vals), "mean": sum(vals) / len(vals) if vals else None,
                            **{f"p{p}": percentile(vals, p) for p in PERCENTILES}}
            for c in configs:
                s = stats[c]
                base = stats.get(baselines.get(c, configs[0]))
                row = {"config": c, "class": cls, "metric": m, "n": s["n"],
                       "baseline": baselines.get(c, configs[0])}
                for p in PERCENTILES:
                    row[f"p{p}"] = s[f"p{p}"]
                    row[f"p{p}_change_pct"] = (None if c == row["baseline"] or base is None
                                               else pct_change(s[f"p{p}"], base[f"p{p}"]))
                row["mean"] = s["mean"]
                rows.append(row)
    return rows


def paired_loop_rows(results, configs, baselines):
    """With paired paths: per configuration, class and metric (ttfb, total),
    each loop's (seed, client, stream: the same path in every configuration)
    median against its median under the baseline. Rows: config, class,
    metric, loops, the median and quartiles of the per-loop change (%), and
    how many loops were faster (smaller)."""
    per = {}
    for r in results:
        if not r.get("counted") or not r.get("ok") or "path" not in r:
            continue
        for m in ("ttfb", "total"):
            if r.get(m) is not None:
                per.setdefault((r["config"], r["class"], m, r["seed"], r["client"], r["stream"],
                                r["path"]), []).append(r[m])
    med = {k: percentile(sorted(v), 50) for k, v in per.items()}
    rows = []
    classes = sorted({k[1] for k in med}, key=class_order)
    for c in configs:
        b = baselines.get(c, configs[0])
        if c == b:
            continue
        for cls in classes:
            for m in ("ttfb", "total"):
                ch = sorted(pct_change(v, med[(b,) + k[1:]]) for k, v in med.items()
                            if k[:3] == (c, cls, m) and med.get((b,) + k[1:]))
                if not ch:
                    continue
                rows.append({"config": c, "class": cls, "metric": m, "baseline": b,
                             "loops": len(ch), "change_p25": percentile(ch, 25),
                             "change_p50": percentile(ch, 50),
                             "change_p75": percentile(ch, 75),
                             "faster": sum(1 for x in ch if x < 0)})
    return rows


def per_client_rows(results, configs, baselines):
    """Per class, client host and configuration: requests counted, TTFB and
    download time at the median, and their change against the same host
    under the baseline. A class's pooled percentiles mix its hosts, and a
    configuration that lets a slow host complete more requests moves them
    towards that host; per host the comparison is like for like. Rows only
    for classes spread over more than one client host."""
    per = {}
    for r in results:
        if not r.get("counted") or not r.get("ok"):
            continue
        for m in ("ttfb", "total"):
            if r.get(m) is not None:
                per.setdefault((r["class"], r["client"], r["config"], m), []).append(r[m])
    hosts = {}
    for (cls, client, _, _) in per:
        hosts.setdefault(cls, set()).add(client)
    rows = []
    for cls in sorted(hosts, key=class_order):
        if len(hosts[cls]) < 2:
            continue
        for client in sorted(hosts[cls]):
            for c in configs:
                b = baselines.get(c, configs[0])
                t = sorted(per.get((cls, client, c, "ttfb"), []))
                d = sorted(per.get((cls, client, c, "total"), []))
                if not d:
                    continue
                row = {"class": cls, "client": client, "config": c, "n": len(d),
                       "ttfb_p50": percentile(t, 50), "total_p50": percentile(d, 50),
                       "baseline": b}
                for m, v in (("ttfb", row["ttfb_p50"]), ("total", row["total_p50"])):
                    bv = sorted(per.get((cls, client, b, m), []))
                    row[f"{m}_change_pct"] = (None if c == b or not bv or v is None
                                              else pct_change(v, percentile(bv, 50)))
                rows.append(row)
    return rows


def class_order(c):
    order = {"web": 0, "light": 1, "bulk": 2}
    return (order.get(c, 3), c)


def paired_loop_classes(runs, classes):
    """With paired paths the workload's circuits are built before it starts,
    each for one loop: {(run, client, client circuit ID as a string): its
    loop's class}, from the runs' paired_paths and the loop names
    (workload.loop_name: CLASS-CLIENT-INDEX; classes = {(run, client): the
    classes its records show}, so that a class or client name with a dash
    is read right)."""
    out = {}
    for run in runs:
        for client, info in (run.get("paired_paths") or {}).items():
            known = classes.get((run["run"], client), set())
            for circ, loop in (info.get("circuits") or {}).items():
                for cls in known:
                    if re.fullmatch(re.escape(cls) + "-" + re.escape(client) + r"-\d+", loop):
                        out[(run["run"], client, str(circ))] = cls
    return out


class _SideAcc:
    """One direction (bwd: towards the client, fwd) of a circuit's
    MeasureMe records, added up record by record."""
    __slots__ = ("sent", "waited", "delay_max", "queued_max", "ewma_max", "per_circuit",
                 "tcp_n", "rtt", "cwnd", "notsent", "tcp_first", "tcp_last")

    def __init__(self):
        self.sent = self.waited = self.delay_max = self.queued_max = 0
        self.ewma_max = 0.0
        self.per_circuit = 0
        self.tcp_n = self.rtt = self.cwnd = self.notsent = 0
        self.tcp_first = self.tcp_last = None   # (seq, retrans)

    def add(self, q, ch, seq):
        q = q or {}
        self.sent += q.get("sent", 0)
        self.waited += q.get("sent", 0) * q.get("delay_avg_us", 0)
        self.delay_max = max(self.delay_max, q.get("delay_max_us", 0))
        self.queued_max = max(self.queued_max, q.get("queued", 0))
        self.ewma_max = max(self.ewma_max, q.get("ewma", 0.0))
        if not ch:
            return
        if ch.get("per_circuit"):
            self.per_circuit = 1
        t = ch.get("tcp")
        if not t:
            return
        self.tcp_n += 1
        self.rtt += t["rtt_us"]
        self.cwnd += t["cwnd"]
        self.notsent += t.get("notsent", 0)
        # the earliest and the latest record by seq (ties: first and last read)
        if self.tcp_first is None or seq < self.tcp_first[0]:
            self.tcp_first = (seq, t["retrans"])
        if self.tcp_last is None or seq >= self.tcp_last[0]:
            self.tcp_last = (seq, t["retrans"])

    def fields(self, d):
        row = {f"qdelay_{d}_ms": round(self.waited / self.sent / 1000, 2) if self.sent else None,
               f"qdelay_{d}_max_ms": round(self.delay_max / 1000, 1),
               f"queued_{d}_max": self.queued_max,
               f"ewma_{d}_max": round(self.ewma_max, 1),
               f"chan_{d}_per_circuit": self.per_circuit}
        if self.tcp_n:
            row[f"tcp_{d}_rtt_ms"] = round(self.rtt / self.tcp_n / 1000, 1)
            row[f"tcp_{d}_cwnd"] = round(self.cwnd / self.tcp_n, 1)
            row[f"tcp_{d}_retrans"] = max(0, self.tcp_last[1] - self.tcp_first[1])
            row[f"tcp_{d}_notsent_kb"] = round(self.notsent / self.tcp_n / 1000, 1)
        else:
            for k in ("rtt_ms", "cwnd", "retrans", "notsent_kb"):
                row[f"tcp_{d}_{k}"] = None
        return row


class _CircuitAcc:
    """A circuit's MeasureMe records at one relay, added up record by record."""
    __slots__ = ("config", "seed", "records", "first", "last", "cells_fwd", "cells_bwd",
                 "bwd", "fwd")

    def __init__(self, r):
        self.config, self.seed = r["config"], r["seed"]
        self.records = self.cells_fwd = self.cells_bwd = 0
        self.first = self.last = None   # (seq, time) and (seq, role, age_ms)
        self.bwd, self.fwd = _SideAcc(), _SideAcc()

    def add(self, r):
        seq = r.get("seq", 0)
        self.records += 1
        if self.first is None or seq < self.first[0]:
            self.first = (seq, r.get("time"))
        if self.last is None or seq >= self.last[0]:
            self.last = (seq, r.get("role"), r.get("age_ms", 0))
        self.cells_fwd += r.get("cells_fwd", 0)
        self.cells_bwd += r.get("cells_bwd", 0)
        self.bwd.add(r.get("queue_bwd"), r.get("chan_bwd"), seq)
        self.fwd.add(r.get("queue_fwd"), r.get("chan_fwd"), seq)


def summarize_measureme(mm, asks, results, runs):
    """Per-circuit summaries (one per relay and label) and the label check,
    in one pass over the records mm (a list, or a JsonlRecords).
    A circuit measured since before the workload started carried the test
    bed's readiness probe only (the workload's own circuits, isolated by
    SOCKS user name, are built after it starts): class "setup"; unless the
    run pinned its loops to circuits built before it (paired paths), whose
    class is their loop's."""
    wl_start = {r["run"]: r.get("workload_started") for r in runs}
    ask_by_label = {}
    for a in asks:
        ask_by_label.setdefault((a["run"], a["label"]), a)
    # the class of a client: the one class it ran (else "mixed")
    client_classes = {}
    for r in results:
        client_classes.setdefault((r["run"], r["client"]), set()).add(r["class"])
    pinned = paired_loop_classes(runs, client_classes)
    per = {}
    for r in mm:
        key = (r["run"], r["relay"], r["label"], r.get("circuit"))
        acc = per.get(key)
        if acc is None:
            acc = per[key] = _CircuitAcc(r)
        acc.add(r)
    circuits, unexpected = [], []
    for (run, relay, label, circ), acc in sorted(per.items(), key=lambda kv: kv[0][:3]):
        a = ask_by_label.get((run, label))
        if a is None:
            unexpected.append({"run": run, "relay": relay, "label": label})
        client = a["client"] if a else None
        cls = client_classes.get((run, client), set())
        row = {"run": run, "config": acc.config, "seed": acc.seed,
               "relay": relay, "label": label, "circuit": circ, "client": client,
               "class": (next(iter(cls)) if len(cls) == 1 else ("mixed" if cls else "-")),
               "first_record": acc.first[1],
               "role": acc.last[1], "records": acc.records,
               "seconds": round(acc.last[2] / 1000, 1),
               "cells_fwd": acc.cells_fwd, "cells_bwd": acc.cells_bwd}
        for d in ("bwd", "fwd"):
            row.update(getattr(acc, d).fields(d))
        ws = wl_start.get(run)
        pin = pinned.get((run, client, str(a.get("circuit")))) if a else None
        if pin:
            row["class"] = pin
        elif ws is None or (row["first_record"] or 0) < ws:
            # workload circuits are built after it starts, so measured later
            row["class"] = "setup"
        circuits.append(row)
    return circuits, unexpected


def _mean_tcp(n, total, scale=1):
    return round(total / n / scale, 1) if n else None


def measureme_aggregate(circuits, mm, configs):
    """Per configuration, relay and client class: circuits, cells, weighted
    queueing delay towards the client, TCP figures (one pass over mm)."""
    circ_class = {(c["run"], c["relay"], c["label"]): c["class"] for c in circuits}
    groups = {}
    for r in mm:
        key = (r["config"], r["relay"], circ_class.get((r["run"], r["relay"], r["label"]), "-"))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"records": 0, "cells_bwd": 0, "sent": 0, "waited": 0,
                               "per_rec": array.array("d"), "delay_max": 0,
                               "bwd": [0, 0, 0], "fwd": [0, 0, 0],   # n, rtt, cwnd
                               "circuits": set(), "pc": [0, 0]}      # sum, n
        g["records"] += 1
        g["cells_bwd"] += r.get("cells_bwd", 0)
        q = r.get("queue_bwd") or {}
        g["sent"] += q.get("sent", 0)
        g["waited"] += q.get("sent", 0) * q.get("delay_avg_us", 0)
        if q.get("sent"):
            g["per_rec"].append(q["delay_avg_us"] / 1000)
        g["delay_max"] = max(g["delay_max"], q.get("delay_max_us", 0))
        for d in ("bwd", "fwd"):
            t = (r.get(f"chan_{d}") or {}).get("tcp")
            if t:
                g[d][0] += 1
                g[d][1] += t["rtt_us"]
                g[d][2] += t["cwnd"]
        g["circuits"].add((r["run"], r["label"]))
        if r.get("chan_fwd"):
            g["pc"][0] += r["chan_fwd"].get("per_circuit", 0)
            g["pc"][1] += 1
    retrans_by_group = {}
    for c in circuits:
        k = (c["config"], c["relay"], c["class"])
        retrans_by_group[k] = (retrans_by_group.get(k, 0) + (c.get("tcp_fwd_retrans") or 0)
                               + (c.get("tcp_bwd_retrans") or 0))
    rows = []
    for (cfg, relay, cls), g in sorted(groups.items(),
                                       key=lambda kv: (configs.index(kv[0][0])
                                                       if kv[0][0] in configs else 99,
                                                       kv[0][1], class_order(kv[0][2]))):
        per_rec = sorted(g["per_rec"])
        retrans = retrans_by_group.get((cfg, relay, cls), 0)
        sent, pc_sum, pc_n = g["sent"], g["pc"][0], g["pc"][1]
        rows.append({
            "config": cfg, "relay": relay, "class": cls, "circuits": len(g["circuits"]),
            "records": g["records"], "cells_bwd": g["cells_bwd"],
            "qdelay_bwd_ms": round(g["waited"] / sent / 1000, 2) if sent else None,
            "qdelay_bwd_p90_ms": round(percentile(per_rec, 90), 1) if per_rec else None,
            "qdelay_bwd_max_ms": round(g["delay_max"] / 1000, 1),
            "tcp_bwd_rtt_ms": _mean_tcp(g["bwd"][0], g["bwd"][1], 1000),
            "tcp_bwd_cwnd": _mean_tcp(g["bwd"][0], g["bwd"][2]),
            "tcp_fwd_rtt_ms": _mean_tcp(g["fwd"][0], g["fwd"][1], 1000),
            "tcp_fwd_cwnd": _mean_tcp(g["fwd"][0], g["fwd"][2]),
            "tcp_retrans": retrans,
            "per_circuit_fwd": round(pc_sum / pc_n, 2) if pc_n else None})
    return rows


def per_run_rows(results, runs):
    """Medians and 75th percentiles of counted requests per run and class."""
    order = [r["run"] for r in runs]
    g = {}
    for r in results:
        if r.get("counted") and r.get("ok"):
            g.setdefault((r["run"], r["class"]), []).append(r)
    rows = []
    for (run, cls), rs in sorted(g.items(), key=lambda kv: (class_order(kv[0][1]),
                                                            order.index(kv[0][0])
                                                            if kv[0][0] in order else 99)):
        row = {"run": run, "class": cls, "n": len(rs)}
        for m in ("ttfb", "total"):
            vals = sorted(x[m] for x in rs)
            row[f"{m}_p50"] = percentile(vals, 50)
            row[f"{m}_p75"] = percentile(vals, 75)
        rows.append(row)
    return rows


def throughput_rows(results, configs):
    """Per configuration and class: what each loop received per second over
    the whole run (all requests, including warm-up and cut ones), averaged
    over runs. This is how bulk throughput is judged: a run is too short
    for many complete 5 MiB downloads."""
    per_run = {}
    for r in results:
        if r.get("t") is None:
            continue
        k = (r["config"], r["class"], r["run"])
        d = per_run.setdefault(k, {"bytes": 0, "t0": r["t"], "t1": r["t"], "loops": set()})
        d["bytes"] += r.get("bytes") or 0
        d["t0"] = min(d["t0"], r["t"])
        d["t1"] = max(d["t1"], r["t"] + (r.get("elapsed") or r.get("total") or 0))
        d["loops"].add((r["client"], r["stream"]))
    rows = []
    for c in configs:
        for cls in sorted({k[1] for k in per_run}, key=class_order):
            runs = [d for k, d in per_run.items() if k[0] == c and k[1] == cls]
            if not runs:
                continue
            rates = [d["bytes"] / 1000 / (d["t1"] - d["t0"]) / len(d["loops"])
                     for d in runs if d["t1"] > d["t0"]]
            rows.append({"config": c, "class": cls, "runs": len(runs),
                         "loops": sum(len(d["loops"]) for d in runs),
                         "mbytes": round(sum(d["bytes"] for d in runs) / 1e6, 1),
                         "kbps_per_loop": round(sum(rates) / len(rates), 1) if rates else None})
    return rows


def write_csv(path, rows, fields=None):
    if not rows:
        with open(path, "w") as f:
            f.write("")
        return
    fields = fields or list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else
                            (round(r[k], 4) if isinstance(r[k], float) else r[k]))
                        for k in fields})


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(out)


def cdf_steps(vals):
    """The empirical CDF of sorted values as the points of a post-step plot:
    0 at the smallest value, then k/n at the k-th value."""
    return [vals[0]] + vals, [0.0] + [(k + 1) / len(vals) for k in range(len(vals))]


MAX_DELAY_PANELS = 12


def make_plots(out, results, configs, mm, circuits):
    """CDF plots per class and metric; returns (list of (file, caption), note)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [], f"matplotlib is not available ({e}); no plots"
    pdir = os.path.join(out, "plots")
    os.makedirs(pdir, exist_ok=True)
    figs = []
    classes = sorted({r["class"] for r in results if r.get("counted") and r.get("ok")},
                     key=class_order)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", "-.", ":"]
    for cls in classes:
        for m, label, unit in METRICS:
            if m == "rate" and cls == "web":
                continue
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            any_data = False
            for i, c in enumerate(configs):
                vals = sorted(r[m] for r in results if r["config"] == c and r["class"] == cls
                              and r.get("counted") and r.get("ok") and r.get(m) is not None)
                if not vals:
                    continue
                any_data = True
                xs, ys = cdf_steps(vals)
                ax.step(xs, ys, where="post", color=colors[i % len(colors)],
                        linestyle=styles[(i // len(colors)) % len(styles)],
                        label=f"{c} (n={len(vals)}, median {fmt(percentile(vals, 50))} {unit})")
            if not any_data:
                plt.close(fig)
                continue
            ax.set_xlabel(f"{label} ({unit})")
            ax.set_ylabel("cumulative fraction of requests")
            ax.set_ylim(0, 1.02)
            ax.set_xlim(left=0)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{cls}: {label}")
            ax.legend(loc="lower right", fontsize=8)
            fig.tight_layout()
            fn = f"{cls}-{m}.png"
            fig.savefig(os.path.join(pdir, fn), dpi=100)
            plt.close(fig)
            figs.append((f"plots/{fn}", f"{cls}: CDF of {label}"))
    # MeasureMe: queueing delay towards the client per relay record (one
    # pass over mm: the delays of the records with cells, per relay,
    # configuration and class)
    circ_class = {(c["run"], c["relay"], c["label"]): c["class"] for c in circuits}
    delays, relays = {}, set()
    for r in mm:
        relays.add(r["relay"])
        q = r.get("queue_bwd") or {}
        if not q.get("sent"):
            continue
        cls = circ_class.get((r["run"], r["relay"], r["label"]), "-")
        k = (r["relay"], r["config"], cls)
        if k not in delays:
            delays[k] = array.array("d")
        delays[k].append(q["delay_avg_us"] / 1000)
    relays = sorted(relays)
    shown_note = ""
    if len(relays) > MAX_DELAY_PANELS:
        # a panel per relay is unreadable (and past the image size limit) at
        # Shadow's scales: the relays with the most records with cells
        count = {}
        for (relay, _, _), vals in delays.items():
            count[relay] = count.get(relay, 0) + len(vals)
        relays = sorted(sorted(relays, key=lambda x: -count.get(x, 0))[:MAX_DELAY_PANELS])
        shown_note = (f" (the {MAX_DELAY_PANELS} relays with the most such intervals; "
                      "all of them in `measureme-summary.csv`)")
    if relays:
        fig, axes = plt.subplots(1, len(relays), figsize=(4.2 * len(relays), 3.8), squeeze=False)
        drew = False
        for ax, relay in zip(axes[0], relays):
            k = 0
            classes = sorted({key[2] for key in delays if key[0] == relay} - {"setup"},
                             key=class_order)
            for i, c in enumerate(configs):
                for cls in classes:
                    vals = sorted(delays.get((relay, c, cls), ()))
                    if not vals:
                        continue
                    drew = True
                    xs, ys = cdf_steps(vals)
                    ax.step(xs, ys, where="post", color=colors[i % len(colors)],
                            linestyle=styles[k % len(styles)], label=f"{c}/{cls}")
                    k += 1
                k = 0
            ax.set_title(f"{relay}", fontsize=10)
            ax.set_xlabel("queueing delay towards client (ms)")
            ax.set_ylim(0, 1.02)
            ax.set_xlim(left=0)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:   # a relay with no class's records: none
                ax.legend(fontsize=7, loc="lower right")
        axes[0][0].set_ylabel("fraction of MeasureMe intervals")
        if drew:
            fig.tight_layout()
            fig.savefig(os.path.join(pdir, "measureme-queue-delay.png"), dpi=100)
            figs.append(("plots/measureme-queue-delay.png",
                         "MeasureMe: average queueing delay of cells towards the client per "
                         "recording interval (intervals with cells), per relay" + shown_note))
        plt.close(fig)
    return figs, None


def relay_confirmations(run, pp, asks, mm):
    """The relays' side of the paired-paths check: for each pinned circuit
    that asked its hops for MeasureMe records (by label), whether the relays
    that recorded that label are exactly the asked hops of the drawn path.
    Returns (circuits confirmed, circuits checked)."""
    return _confirmations(run, pp, asks, recorded_relays(mm).get(run, {}))


def recorded_relays(mm):
    """{run: {label: the relays that recorded it}}, in one pass over mm."""
    out = {}
    for x in mm:
        out.setdefault(x.get("run"), {}).setdefault(x["label"], set()).add(x["relay"])
    return out


def _confirmations(run, pp, asks, recorded):
    want = {}
    for a in asks:
        if a.get("run") != run or a["client"] not in pp:
            continue
        loop = pp[a["client"]].get("circuits", {}).get(str(a["circuit"]))
        if loop is None:
            continue
        path = pp[a["client"]]["paths"][loop]
        if 1 <= a["hop"] <= len(path):
            want.setdefault(a["label"], set()).add(path[a["hop"] - 1])
    ok = sum(1 for lab, w in want.items() if recorded.get(lab, set()) == w)
    return ok, len(want)


def paired_rows(runs, asks=(), mm=()):
    """The report's paired-paths table: one row per run with paired paths."""
    first = {}
    rows = []
    recorded = recorded_relays(mm) if any(r.get("paired_paths") for r in runs) else {}
    for r in runs:
        pp = r.get("paired_paths")
        if not pp:
            continue
        paths = {l: p for c in pp.values() for l, p in c["paths"].items()}
        same = "yes" if first.setdefault(r["seed"], paths) == paths else "NO"
        tot = lambda k: sum(c.get(k, 0) for c in pp.values())
        nb = sum(sum(c.get("circuits_built", {}).values()) for c in pp.values())
        fl = r.get("paired_paths_flags", "-")
        ok, n = _confirmations(r["run"], pp, asks, recorded.get(r["run"], {}))
        rows.append([r["run"], tot("streams_on_pinned_path"), tot("streams_on_other_circuit"),
                     tot("unpinned_streams"), nb,
                     fl if isinstance(fl, str) else "; ".join(fl)[:120], same,
                     f"{ok} of {n}" if n else "-"])
    return rows


def switch_share(r):
    """"S SWITCH cells for M messages on legs (X%)" of run record r, or ""
    when its exits did not count them."""
    if not r.get("conflux_messages"):
        return ""
    return (f"{r['conflux_switches']} SWITCH cells for {r['conflux_messages']} messages "
            f"on legs ({100 * r['conflux_switches'] / r['conflux_messages']:.1f}%)")


def run_note(r):
    """The Runs table's note of run record r: its error, and what the
    exits' heartbeats counted of conflux (sets, legs, SWITCH cells)."""
    parts = [r.get("error", "")[:120]] if r.get("error") else []
    if "conflux_sets" in r:
        parts.append(f"exits linked {r['conflux_sets']} conflux sets "
                     f"({r['conflux_legs']} legs)")
    if switch_share(r):
        parts.append(switch_share(r))
    return "; ".join(parts)


def make_report(out):
    with open(os.path.join(out, "runs.json")) as f:
        meta = json.load(f)
    exp = meta["definition"]
    results = read_jsonl(os.path.join(out, "results.jsonl"))
    mm = JsonlRecords(os.path.join(out, "measureme.jsonl"))
    asks = read_jsonl(os.path.join(out, "measureme-asks.jsonl"))
    configs = [c for c in meta["configs"]]
    allcfg = {c["name"]: c for c in exp["configs"]}
    baselines = {c: (allcfg[c]["baseline"] if c in allcfg and allcfg[c]["baseline"] in configs
                     else configs[0]) for c in configs}
    rows = percentile_rows(results, configs, baselines)
    fields = ["config", "class", "metric", "n"] + [f"p{p}" for p in PERCENTILES] + ["mean"] + \
        ["baseline"] + [f"p{p}_change_pct" for p in PERCENTILES]
    write_csv(os.path.join(out, "percentiles.csv"), rows, fields)
    thr = throughput_rows(results, configs)
    write_csv(os.path.join(out, "throughput.csv"), thr)
    circuits, unexpected = summarize_measureme(mm, asks, results, meta["runs"])
    write_csv(os.path.join(out, "measureme-circuits.csv"), circuits)
    agg = measureme_aggregate(circuits, mm, configs)
    write_csv(os.path.join(out, "measureme-summary.csv"), agg)
    ssrows = []
    if os.path.exists(os.path.join(out, "ss.jsonl")):
        ip_names = {}
        for r in meta["runs"]:
            with contextlib.suppress(OSError, ValueError):
                with open(os.path.join(out, "runs", r["run"], "hosts.json")) as f:
                    ip_names.update(json.load(f))
        ssrows = ss_summary(read_jsonl(os.path.join(out, "ss.jsonl")), ip_names, configs)
        write_csv(os.path.join(out, "ss-summary.csv"), ssrows)
    figs, plot_note = make_plots(out, results, configs, mm, circuits)
    summary = {"percentiles": rows, "per_run": per_run_rows(results, meta["runs"]),
               "throughput": thr, "measureme": agg,
               "measureme_unexpected_labels": unexpected,
               "measureme_labels_asked": sorted({a["label"] for a in asks}),
               "measureme_labels_recorded": sorted({c["label"] for c in circuits}),
               "runs": meta["runs"], "figures": [f for f, _ in figs]}
    save_json(os.path.join(out, "summary.json"), summary)

    # README.md
    L = []
    L.append(f"# {exp['title']}\n")
    L.append(f"Experiment `{exp['name']}` ({os.path.basename(meta['file'])}), "
             f"written by `{PROG}`.\n")
    if exp["reproduces"]:
        L.append(f"**Reproduces:** {exp['reproduces']}\n")
    if exp["paper"]:
        L.append(f"**The paper found:** {exp['paper']}\n")
    if exp["scale"]:
        L.append(f"**Scale:** {exp['scale']}\n")
    if exp["notes"]:
        L.append(f"**Notes:** {exp['notes']}\n")
    mi = meta.get("machine", {})
    started = datetime.datetime.fromtimestamp(meta["started"]).strftime("%Y-%m-%d %H:%M")
    took = (meta.get("finished", meta["started"]) - meta["started"]) / 60
    L.append(f"Command: `{meta['command']}`  \nStarted {started}, took {took:.1f} min; "
             f"{meta['seeds']} seed(s) x {len(configs)} configurations, "
             f"{meta['warmup_s']:g} s warm-up + {meta['duration_s']:g} s measured per run.  \n"
             f"Machine: {mi.get('cpus', '?')} CPUs, {mi.get('mem_gb', '?')} GB, Linux "
             f"{mi.get('kernel', '?')}; {mi.get('tor', 'tor ?')}; pctor source "
             f"{mi.get('pctor_source', '?')}.\n")
    if meta.get("engine") == "shadow":
        sims = [r for r in meta["runs"] if r.get("engine") == "shadow"]
        notes = sorted({n for r in sims for n in r.get("notes", [])})
        wall = [r["wall_s"] for r in sims if "wall_s" in r]
        mem = [r["peak_rss_mib"] for r in sims if r.get("peak_rss_mib")]
        cpu = [r["cpu_s"] for r in sims if "cpu_s" in r]
        L.append("**Engine:** the Shadow simulator (simulated time; CPU cost of crypto does "
                 "not show, queueing and network effects do)"
                 + (f"; {sum(wall) / 60:.1f} min of real time for {len(wall)} simulation(s)"
                    if wall else "")
                 + (f" ({sum(cpu) / 60:.1f} min of CPU)" if cpu else "")
                 + (f", peak memory {max(mem):.0f} MiB" if mem else "") + ". "
                 + ("Differences from the test bed: " + "; ".join(notes) + "." if notes else "")
                 + "\n")
        kc = [r["keycache"] for r in sims if r.get("keycache")]
        if kc:
            made = sum(k["made_authorities"] + k["made_relays"] for k in kc)
            L.append(f"Keys: {sum(k['hosts'] for k in kc)} host keyings in {len(kc)} "
                     f"simulation(s), {made} made ({sum(k['seconds'] for k in kc):.1f} s), "
                     f"the rest from the key cache {kc[-1]['dir']}.\n")
    if meta.get("interrupted"):
        L.append("**This experiment was interrupted; the report covers the runs done.**\n")
    L.append("## Configurations\n")
    for c in configs:
        cf = allcfg.get(c)
        if not cf:
            continue
        L.append(f"- **{c}**: {cf['description']}")
        for sel, lines in cf["torrc_selectors"].items():
            L.append(f"  - `{sel}`: " + "; ".join(f"`{x}`" for x in lines))
        for p in cf["pairs"]:
            L.append(f"  - pair: `{json.dumps(p)}`")
        for h, l in cf["links"].items():
            L.append(f"  - link of {h}: `{json.dumps(l)}`")
        if cf.get("workloads") is not None:
            L.append(f"  - runs only the workload(s): {', '.join(cf['workloads'])}")
        if cf["baseline"] != c:
            L.append(f"  - compared with: {cf['baseline']}")
    L.append("\nWorkload:\n")
    for w in exp["workload"]:
        think = (f", think time uniform {w['think'][0]:g}-{w['think'][1]:g} s"
                 if w["model"] == "web" else ", back to back")
        L.append(f"- **{w['class']}**: {w['model']} client(s) {', '.join(w['clients'])}, "
                 f"{w['streams']} loop(s) each ({'own circuit each' if w['isolate'] else 'shared circuits'}), "
                 f"file {w['file']}{think}" + (", background load" if w["background"] else ""))
    L.append("\nThe network of every run (hosts, links, the generated torrc of every host) is in "
             "`runs/RUN/testbed.toml` and `runs/RUN/torrc/`; the definition as given is "
             "`experiment.toml`.\n")
    L.append("## Percentiles\n")
    L.append("Counted: successful requests that started after the warm-up (background "
             "transfers cut at the end are dropped). Times in seconds, throughput in KB/s "
             "(bytes / download time). Change: relative to the baseline configuration at the "
             "same percentile (negative = smaller). Machine-readable: `percentiles.csv`.\n")
    hdr = ["class", "metric", "config", "n"] + [f"p{p}" for p in PERCENTILES] + \
        [f"Δp{p}" for p in PERCENTILES]
    trs = []
    for r in rows:
        if r["n"] == 0:
            continue
        trs.append([r["class"], r["metric"], r["config"], r["n"]] +
                   [fmt(r[f"p{p}"]) for p in PERCENTILES] +
                   [("-" if r[f"p{p}_change_pct"] is None else f"{r[f'p{p}_change_pct']:+.0f}%")
                    for p in PERCENTILES])
    L.append(md_table(hdr, trs) if trs else "(no counted requests)")
    L.append("")
    per_run = per_run_rows(results, meta["runs"])
    if per_run and len(meta["runs"]) > len(configs):
        L.append("Per run (to judge how much the runs of one configuration differ; with "
                 "random paths the run-to-run spread can exceed the difference between "
                 "configurations):\n")
        L.append(md_table(["run", "class", "n", "ttfb p50", "ttfb p75", "total p50",
                           "total p75"],
                          [[r["run"], r["class"], r["n"], fmt(r["ttfb_p50"]), fmt(r["ttfb_p75"]),
                            fmt(r["total_p50"]), fmt(r["total_p75"])] for r in per_run]))
        L.append("")
    pc = per_client_rows(results, configs, baselines)
    if pc and len(configs) > 1:
        L.append("Per client host (a class's pooled percentiles mix its hosts: a "
                 "configuration that lets a slow host complete more requests moves them "
                 "towards that host; per host the comparison is like for like). Medians; "
                 "change against the same host under the baseline:\n")
        L.append(md_table(["class", "client", "config", "n", "ttfb p50", "Δ", "total p50",
                           "Δ"],
                          [[x["class"], x["client"], x["config"], x["n"], fmt(x["ttfb_p50"]),
                            "-" if x["ttfb_change_pct"] is None
                            else f"{x['ttfb_change_pct']:+.0f}%",
                            fmt(x["total_p50"]),
                            "-" if x["total_change_pct"] is None
                            else f"{x['total_change_pct']:+.0f}%"] for x in pc]))
        L.append("")
    if thr:
        L.append("Throughput per loop over whole runs (all bytes received, including the "
                 "warm-up and transfers cut at the end, divided by the time the loop ran; "
                 "mean over runs; `throughput.csv`):\n")
        base = {}
        for t in thr:
            base.setdefault(t["class"], {})[t["config"]] = t["kbps_per_loop"]
        L.append(md_table(["class", "config", "runs", "loops", "MB received", "KB/s per loop",
                           "change"],
                          [[t["class"], t["config"], t["runs"], t["loops"], t["mbytes"],
                            fmt(t["kbps_per_loop"]),
                            ("-" if t["config"] == baselines.get(t["config"]) else
                             (lambda v: "-" if v is None else f"{v:+.0f}%")(
                                 pct_change(t["kbps_per_loop"],
                                            base[t["class"]].get(baselines.get(t["config"])))))]
                           for t in sorted(thr, key=lambda t: class_order(t["class"]))]))
        L.append("")
    L.append("## Figures\n")
    if plot_note:
        L.append(plot_note + "\n")
    for f, cap in figs:
        L.append(f"**{cap}**\n\n![{cap}]({f})\n")
    L.append("## MeasureMe\n")
    L.append(f"Clients logged {len({a['label'] for a in asks})} circuit label(s) they asked "
             f"relays to measure; the relays wrote {sum(c['records'] for c in circuits)} "
             f"records for {len({(c['run'], c['relay'], c['label']) for c in circuits})} "
             "(relay, circuit) pairs. "
             + ("Every record carries a label that a client logged."
                if not unexpected else
                f"**{len(unexpected)} (relay, circuit) pairs carry labels no client logged.**")
             + "\n")
    if agg:
        L.append("Per configuration, relay and client class (queueing delay = time cells "
                 "waited in the circuit's queue at that relay before being written towards the "
                 "client, averaged over cells; p90 over the recording intervals; TCP figures "
                 "of the connection towards the client (bwd) and away from it (fwd), averaged "
                 "over records; retrans = retransmissions on those connections while measured, summed "
                 "over circuits, so a shared connection's count once per circuit on it; "
                 "per-circuit = share of records whose onward connection was the circuit's "
                 "own). All circuits: `measureme-circuits.csv`.\n")
        hdr = ["config", "relay", "class", "circuits", "cells bwd", "queue ms", "p90 ms",
               "max ms", "rtt bwd ms", "cwnd bwd", "rtt fwd ms", "cwnd fwd", "retrans",
               "per-circuit"]
        L.append(md_table(hdr, [[a["config"], a["relay"], a["class"], a["circuits"],
                                 a["cells_bwd"], fmt(a["qdelay_bwd_ms"]),
                                 fmt(a["qdelay_bwd_p90_ms"]), fmt(a["qdelay_bwd_max_ms"]),
                                 fmt(a["tcp_bwd_rtt_ms"]), fmt(a["tcp_bwd_cwnd"]),
                                 fmt(a["tcp_fwd_rtt_ms"]), fmt(a["tcp_fwd_cwnd"]),
                                 a["tcp_retrans"], fmt(a["per_circuit_fwd"])] for a in agg]))
        L.append("")
    if ssrows:
        L.append("## TCP of the relay-to-relay connections (ss)\n")
        L.append("`ss -tin` in every relay's namespace every "
                 f"{exp.get('ss_interval_ms', '?')} ms; the sending side of each "
                 "relay-to-relay connection, over the snapshots in which it sent (its bytes "
                 "acknowledged grew). class: with three or more data-carrying connections to "
                 "one peer (per-circuit), the one that carried most is 'bulk', the rest "
                 "'other'; else 'shared'. restart cwnd = window when a connection starts "
                 "sending again after 1 s or more without. ssthresh share = share of "
                 "snapshots that had left the initial slow start. All: `ss-summary.csv`, "
                 "raw: `ss.jsonl`.\n")
        hdr = ["config", "relay", "peer", "class", "conns", "MB", "sending s", "cwnd p50",
               "cwnd p75", "restart cwnd", "restarts", "ssthresh p50", "ssthresh share",
               "rtt ms p50", "rtt ms p75", "pacing KB/s", "rate KB/s p50", "rate KB/s p75",
               "notsent KB"]
        L.append(md_table(hdr, [[x["config"], x["relay"], x["peer"], x["class"],
                                 x["connections"], x["sent_mb"], x["sending_s"],
                                 fmt(x["cwnd_p50"]), fmt(x["cwnd_p75"]),
                                 fmt(x["restart_cwnd_p50"]), x["restarts"],
                                 fmt(x["ssthresh_p50"]), fmt(x["ssthresh_share"]),
                                 fmt(x["rtt_ms_p50"]), fmt(x["rtt_ms_p75"]),
                                 fmt(x["pacing_kBps_p50"]), fmt(x["rate_kBps_p50"]),
                                 fmt(x["rate_kBps_p75"]), fmt(x["notsent_kB_p50"])]
                                for x in ssrows]))
        L.append("")
    if exp.get("paired_paths"):
        prow = paired_loop_rows(results, configs, baselines)
        if prow:
            L.append("## Per loop, on the same path\n")
            L.append("Each loop ran on the same path in every configuration of its seed, so "
                     "its median under a configuration can be compared with its median under "
                     "the baseline. Per configuration, class and metric: loops compared, the "
                     "quartiles of the per-loop change (negative = smaller), and the loops "
                     "whose median got smaller.\n")
            L.append(md_table(["config", "class", "metric", "loops", "Δ p25", "Δ median",
                               "Δ p75", "faster"],
                              [[x["config"], x["class"], x["metric"], x["loops"],
                                f"{x['change_p25']:+.0f}%", f"{x['change_p50']:+.0f}%",
                                f"{x['change_p75']:+.0f}%", x["faster"]] for x in prow]))
            L.append("")
        L.append("## Paired paths\n")
        L.append("Each loop's path (guard, middle, exit) was drawn from the seed, weighted by "
                 "the relays' link capacity, and its streams were attached to a circuit over "
                 "it through the client's ControlPort (experiment.paired_paths). Per run: "
                 "streams that succeeded on their loop's circuit with the drawn path, on "
                 "another circuit, streams of no loop, circuits built, the consensus flags "
                 "check, whether the run's paths are those of the seed's first run, and "
                 "the relays' side: of the pinned circuits that asked their hops for "
                 "MeasureMe records, those whose label was recorded by exactly the drawn "
                 "relays.\n")
        L.append(md_table(["run", "on pinned path", "on another circuit", "unpinned",
                           "circuits built", "flags", "same paths as the seed's first run",
                           "relays confirm"],
                          paired_rows(meta["runs"], asks, mm)))
        L.append("")
    hop_runs = [r for r in meta["runs"] if r.get("circuit_hops")]
    if hop_runs:
        L.append("## Circuit hops by transport\n")
        L.append("The extensions each relay with a datagram CircuitTransport, or with "
                 "PerCircuitTCP inside IPsec, made during the workload (warm-up "
                 "included), from its own counters (SIGUSR1 statistics before and after): "
                 "over the transport; not over it although the next relay offers it (its "
                 "datagram link or IPsec SA not up: such a run is refused, status failed); "
                 "to relays that do not offer it or had not announced it (e.g. a tor "
                 "relay, or no TLS link to it so far). "
                 "Relay datagram links or IPsec SAs up before the workload: the test "
                 "bed's wait.\n")
        rows = []
        for r in hop_runs:
            after = (r.get("transport_counters") or {}).get("after", {})
            for relay, h in sorted(r["circuit_hops"].items()):
                if "datagram" in h:   # a record made before 2026-11-29
                    h = {"carried": h["datagram"], "fallback": h["tls"] - h["tls_no_port"],
                         "not_offered": h["tls_no_port"]}
                t = h.get("transport") or after.get(relay, {}).get("transport", "")
                rows.append([r["run"], relay, t, h["carried"], h["fallback"],
                             h["not_offered"]])
        L.append(md_table(["run", "relay", "transport", "over it",
                           "not over it (offered)", "to relays not offering it"], rows))
        L.append("")
    mm_hop_runs = [r for r in meta["runs"] if r.get("circuit_hops_measureme")]
    if mm_hop_runs:
        L.append("## Circuit hops by transport (MeasureMe)\n")
        L.append("Under Shadow the relays' counters cannot be asked during the run: the "
                 "hops of the circuits that carried cells towards the exit from the workload's start on, as the relays' "
                 "MeasureMe records show them (each circuit's previous and next hop at each "
                 "relay with a datagram CircuitTransport; circuits its clients asked to "
                 "measure). A run in which no hop used the datagram transport is refused "
                 "(status failed). TLS hops include those to and from hosts without a "
                 "DatagramPort.\n")
        ts = sorted({t for r in mm_hop_runs for h in r["circuit_hops_measureme"].values()
                     for t in h})
        rows = [[r["run"], relay] + [h.get(t, 0) for t in ts]
                for r in mm_hop_runs for relay, h in sorted(r["circuit_hops_measureme"].items())]
        L.append(md_table(["run", "relay"] + ts, rows))
        L.append("")
    L.append("## Runs\n")

    hdr = ["run", "status", "up s", "requests", "ok", "measured", "MeasureMe records",
           "load 1/5 min (start, end)", "note"]

    def ld(r):
        a, b = r.get("load_start"), r.get("load_end")
        return (f"{a[0]:.1f}/{a[1]:.1f}, {b[0]:.1f}/{b[1]:.1f}" if a and b else "-")
    L.append(md_table(hdr, [[r["run"], r["status"], fmt(r.get("up_s")), r.get("records", 0),
                             r.get("ok_records", 0), r.get("measured", "-"),
                             r.get("measureme_records", 0), ld(r), run_note(r)]
                            for r in meta["runs"]]))
    fails = [r for r in results if not r.get("ok") and not r.get("aborted")]
    if fails:
        L.append(f"\n{len(fails)} request(s) failed, e.g.: " +
                 "; ".join(f"{r['run']}/{r['client']}: {r.get('error', '?')}" for r in fails[:3]))
    L.append("\n## Files\n")
    L.append("- `results.jsonl`: every request (config, seed, class, client, stream, t = start "
             "in s since the workload began, ttfb, total, rate, ok, counted)\n"
             "- `percentiles.csv`, `throughput.csv`, `summary.json`: the tables above\n"
             "- `measureme.jsonl`: every relay record (the relay's own fields plus run, "
             "config, seed, relay); `measureme-asks.jsonl`: the clients' requests; "
             "`measureme-circuits.csv`, `measureme-summary.csv`: summaries\n"
             "- `runs/RUN/`: testbed.toml, torrc/, records.jsonl, measureme/, testbed.log and "
             "the test bed's run directory (logs; data directories removed)\n"
             "- `plots/`: the figures")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")
