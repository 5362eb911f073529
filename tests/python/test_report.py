# SPDX-License-Identifier: BSD-3-Clause
# test_report.py -- pctor_lab.report's statistics with known answers:
# percentiles (linear interpolation between order statistics, as numpy's
# default), relative changes, number formatting, empirical CDF steps, the
# percentile and throughput tables, the MeasureMe join of relay records
# with the clients' asks (weighted queueing delay, TCP figures, unexpected
# labels, setup circuits) and its per-relay aggregate, and the JSON-lines,
# CSV and Markdown writers.
import csv

import pytest

from pctor_lab import report


@pytest.mark.parametrize("vals,p,want", [
    ([1, 2, 3, 4], 50, 2.5), ([1, 2, 3, 4], 25, 1.75), ([1, 2, 3, 4], 75, 3.25),
    ([1, 2, 3, 4], 90, 3.7), ([1, 2, 3, 4], 0, 1), ([1, 2, 3, 4], 100, 4),
    ([7], 90, 7), ([10, 20], 90, 19), ([0, 10, 20, 30, 40], 30, 12)])
def test_percentile(vals, p, want):
    assert report.percentile(vals, p) == pytest.approx(want)


def test_percentile_empty():
    assert report.percentile([], 50) is None


@pytest.mark.parametrize("v,base,want", [
    (110, 100, 10.0), (90, 100, -10.0), (5.0, 2.5, 100.0), (1, 0, None), (None, 1, None),
    (1, None, None)])
def test_pct_change(v, base, want):
    got = report.pct_change(v, base)
    assert got == (pytest.approx(want) if want is not None else None)


@pytest.mark.parametrize("v,text", [
    (None, "-"), (123.4, "123"), (-250.0, "-250"), (12.34, "12.3"), (1.234, "1.23"),
    (0.01234, "0.0123"), (5, "5"), ("x", "x")])
def test_fmt(v, text):
    assert report.fmt(v) == text


def test_cdf_steps():
    xs, ys = report.cdf_steps([1, 2, 2, 5])
    assert xs == [1, 1, 2, 2, 5]
    assert ys == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert report.cdf_steps([3.5]) == ([3.5, 3.5], [0.0, 1.0])


def res(config, cls, ttfb, total, counted=True, ok=True, **kw):
    return dict({"config": config, "class": cls, "ttfb": ttfb, "total": total,
                 "counted": counted, "ok": ok}, **kw)


def test_percentile_rows():
    results = [res("A", "web", t, 2 * t) for t in (1, 2, 3, 4)] + \
        [res("B", "web", 2 * t, 4 * t) for t in (1, 2, 3, 4)] + \
        [res("A", "web", 100, 100, counted=False), res("B", "web", 100, 100, ok=False),
         res("A", "bulk", 10, 20)]
    rows = report.percentile_rows(results, ["A", "B"], {"A": "A", "B": "A"})
    key = {(r["config"], r["class"], r["metric"]): r for r in rows}
    # classes in class_order (web before bulk), metrics ttfb, total, rate; both configs
    assert [(r["class"], r["metric"], r["config"]) for r in rows][:6] == [
        ("web", "ttfb", "A"), ("web", "ttfb", "B"), ("web", "total", "A"),
        ("web", "total", "B"), ("web", "rate", "A"), ("web", "rate", "B")]
    a, b = key[("A", "web", "ttfb")], key[("B", "web", "ttfb")]
    assert (a["n"], a["p25"], a["p50"], a["p75"], a["p90"], a["mean"]) == \
        (4, 1.75, 2.5, 3.25, pytest.approx(3.7), 2.5)
    assert a["p50_change_pct"] is None and a["baseline"] == "A"
    assert b["p50"] == 5.0 and b["p50_change_pct"] == pytest.approx(100.0)
    assert key[("B", "web", "total")]["p90"] == pytest.approx(14.8)
    assert key[("A", "web", "rate")]["n"] == 0 and key[("A", "web", "rate")]["p50"] is None
    assert key[("A", "bulk", "ttfb")]["n"] == 1 and key[("B", "bulk", "ttfb")]["n"] == 0
    assert key[("B", "bulk", "ttfb")]["p50_change_pct"] is None


def test_throughput_rows():
    def r(run, client, t, nbytes, elapsed):
        return {"config": "A", "class": "bulk", "run": run, "client": client, "stream": 0,
                "t": t, "bytes": nbytes, "elapsed": elapsed}
    results = [r("r1", "c1", 0, 1e6, 10), r("r1", "c1", 10, 1e6, 10),   # 2 MB in 20 s, 1 loop
               r("r2", "c1", 0, 3e6, 10), r("r2", "c2", 0, 1e6, 10)]    # 4 MB in 10 s, 2 loops
    assert report.throughput_rows(results, ["A"]) == [
        {"config": "A", "class": "bulk", "runs": 2, "loops": 3, "mbytes": 6.0,
         "kbps_per_loop": 150.0}]


def test_per_run_rows():
    results = [dict(res("A", "web", t, 2 * t), run="r1") for t in (1, 2, 3)]
    assert report.per_run_rows(results, [{"run": "r1"}]) == [
        {"run": "r1", "class": "web", "n": 3, "ttfb_p50": 2, "ttfb_p75": 2.5,
         "total_p50": 4, "total_p75": 5.0}]


def mmrec(label, seq, time, sent, avg_us, max_us, tcp, circuit=7, relay="mid", cells=(1, 2)):
    return {"run": "r1", "config": "A", "seed": 1, "relay": relay, "label": label,
            "circuit": circuit, "seq": seq, "time": time, "role": "middle",
            "age_ms": seq * 1000, "cells_fwd": cells[0], "cells_bwd": cells[1],
            "queue_bwd": {"sent": sent, "delay_avg_us": avg_us, "delay_max_us": max_us,
                          "queued": sent // 2, "ewma": 1.25 * seq},
            "chan_bwd": {"per_circuit": 1, "tcp": tcp}}


def test_measureme_join():
    mm = [
        # out of order on purpose: the join sorts by seq
        mmrec("L1", 2, 160.0, 30, 3000, 9000,
              {"rtt_us": 40000, "cwnd": 30, "retrans": 4}, cells=(10, 20)),
        mmrec("L1", 1, 150.0, 10, 1000, 5000,
              {"rtt_us": 20000, "cwnd": 10, "retrans": 1, "notsent": 2000}, cells=(1, 2)),
        mmrec("L2", 1, 50.0, 0, 0, 0, None, circuit=3),          # before the workload
        mmrec("LX", 1, 170.0, 5, 100, 100, None, circuit=9),     # nobody asked
    ]
    asks = [{"run": "r1", "label": "L1", "client": "c1"},
            {"run": "r1", "label": "L2", "client": "c1"}]
    results = [{"run": "r1", "client": "c1", "class": "web"}]
    runs = [{"run": "r1", "workload_started": 100.0}]
    circuits, unexpected = report.summarize_measureme(mm, asks, results, runs)
    assert unexpected == [{"run": "r1", "relay": "mid", "label": "LX"}]
    c = {x["label"]: x for x in circuits}
    l1 = c["L1"]
    assert (l1["client"], l1["class"], l1["circuit"], l1["records"]) == ("c1", "web", 7, 2)
    assert (l1["first_record"], l1["seconds"], l1["cells_fwd"], l1["cells_bwd"]) == \
        (150.0, 2.0, 11, 22)
    # cell-weighted average queueing delay: (10*1 ms + 30*3 ms) / 40
    assert l1["qdelay_bwd_ms"] == 2.5 and l1["qdelay_bwd_max_ms"] == 9.0
    assert l1["queued_bwd_max"] == 15 and l1["ewma_bwd_max"] == 2.5
    assert l1["chan_bwd_per_circuit"] == 1
    assert (l1["tcp_bwd_rtt_ms"], l1["tcp_bwd_cwnd"], l1["tcp_bwd_retrans"],
            l1["tcp_bwd_notsent_kb"]) == (30.0, 20.0, 3, 1.0)
    assert l1["qdelay_fwd_ms"] is None and l1["tcp_fwd_rtt_ms"] is None
    assert c["L2"]["class"] == "setup" and c["L2"]["qdelay_bwd_ms"] is None
    assert c["LX"]["client"] is None and c["LX"]["class"] == "-"

    agg = {(r["relay"], r["class"]): r for r in report.measureme_aggregate(circuits, mm, ["A"])}
    web = agg[("mid", "web")]
    assert (web["circuits"], web["records"], web["cells_bwd"]) == (1, 2, 22)
    assert web["qdelay_bwd_ms"] == 2.5 and web["qdelay_bwd_max_ms"] == 9.0
    # per-record delays 1 ms and 3 ms: p90 = 1 + 0.9 * 2
    assert web["qdelay_bwd_p90_ms"] == 2.8
    assert (web["tcp_bwd_rtt_ms"], web["tcp_bwd_cwnd"], web["tcp_retrans"]) == (30.0, 20.0, 3)
    assert agg[("mid", "setup")]["qdelay_bwd_ms"] is None
    assert sorted(agg) == [("mid", "-"), ("mid", "setup"), ("mid", "web")]


def test_measureme_join_streams(tmp_path):
    # The report reads a large run's records from disk in a few passes:
    # each of the join's functions takes a one-shot iterator (one pass)
    # and gives what it gives for the list, and so does the file.
    mm = [mmrec("L1", 2, 160.0, 30, 3000, 9000, {"rtt_us": 40000, "cwnd": 30, "retrans": 4}),
          mmrec("L1", 1, 150.0, 10, 1000, 5000, {"rtt_us": 20000, "cwnd": 10, "retrans": 1}),
          mmrec("L1", 3, 170.0, 0, 0, 0, None),
          mmrec("L2", 1, 150.0, 5, 500, 800, None, relay="x1", circuit=4)]
    asks = [{"run": "r1", "label": "L1", "client": "c1"}]
    results = [{"run": "r1", "client": "c1", "class": "web"}]
    runs = [{"run": "r1", "workload_started": 100.0}]
    p = str(tmp_path / "measureme.jsonl")
    report.append_jsonl(p, mm)
    want = report.summarize_measureme(mm, asks, results, runs)
    assert report.summarize_measureme(iter(mm), asks, results, runs) == want
    assert report.summarize_measureme(report.JsonlRecords(p), asks, results, runs) == want
    circuits = want[0]
    assert [(c["relay"], c["records"], c["tcp_bwd_retrans"], c["seconds"]) for c in circuits] \
        == [("mid", 3, 3, 3.0), ("x1", 1, None, 1.0)]
    agg = report.measureme_aggregate(circuits, mm, ["A"])
    assert report.measureme_aggregate(circuits, iter(mm), ["A"]) == agg
    assert report.measureme_aggregate(circuits, report.JsonlRecords(p), ["A"]) == agg
    assert list(report.JsonlRecords(str(tmp_path / "missing"))) == []


def test_measureme_join_mixed_client():
    mm = [mmrec("L1", 1, 150.0, 1, 1, 1, None)]
    asks = [{"run": "r1", "label": "L1", "client": "c1"}]
    results = [{"run": "r1", "client": "c1", "class": "web"},
               {"run": "r1", "client": "c1", "class": "bulk"}]
    circuits, _ = report.summarize_measureme(mm, asks, results, [{"run": "r1",
                                                                  "workload_started": 1.0}])
    assert circuits[0]["class"] == "mixed"


def test_measureme_join_paired_paths():
    # Paired paths: the loops' circuits are built before the workload and
    # pinned, one per loop; a circuit takes its loop's class (the client
    # runs two classes, one with a dash in its name), not "setup"; a
    # measured circuit no loop was pinned to stays "setup".
    mm = [mmrec("LW", 1, 50.0, 1, 1, 1, None, circuit=11),
          mmrec("LB", 1, 50.0, 1, 1, 1, None, circuit=12),
          mmrec("LS", 1, 50.0, 1, 1, 1, None, circuit=13)]
    asks = [{"run": "r1", "label": "LW", "client": "c-1", "circuit": 4},
            {"run": "r1", "label": "LB", "client": "c-1", "circuit": 5},
            {"run": "r1", "label": "LS", "client": "c-1", "circuit": 6}]
    results = [{"run": "r1", "client": "c-1", "class": "bridge-web"},
               {"run": "r1", "client": "c-1", "class": "bulk"}]
    runs = [{"run": "r1", "workload_started": 100.0,
             "paired_paths": {"c-1": {"circuits": {"4": "bridge-web-c-1-0",
                                                   "5": "bulk-c-1-3"}}}}]
    circuits, _ = report.summarize_measureme(mm, asks, results, runs)
    c = {x["label"]: x["class"] for x in circuits}
    assert c == {"LW": "bridge-web", "LB": "bulk", "LS": "setup"}


def test_jsonl_roundtrip(tmp_path):
    p = str(tmp_path / "r.jsonl")
    assert report.read_jsonl(p) == []          # missing file: nothing
    report.append_jsonl(p, [{"b": 1, "a": [1, 2]}, {"x": None}])
    report.append_jsonl(p, [{"c": "é"}])
    with open(p, "a") as f:
        f.write("\n   \n")                    # blank lines are skipped
    assert report.read_jsonl(p) == [{"a": [1, 2], "b": 1}, {"x": None}, {"c": "é"}]
    with open(p) as f:
        assert f.readline() == '{"a": [1, 2], "b": 1}\n'   # sorted keys


def test_save_json(tmp_path):
    p = str(tmp_path / "x.json")
    report.save_json(p, {"b": 2, "a": 1})
    assert open(p).read() == '{\n "a": 1,\n "b": 2\n}\n'


def test_write_csv(tmp_path):
    p = str(tmp_path / "t.csv")
    report.write_csv(p, [{"a": 1.234567, "b": None, "c": "x"}, {"a": 2, "b": 0.5, "c": "y"}],
                     ["a", "b"])
    assert list(csv.reader(open(p))) == [["a", "b"], ["1.2346", ""], ["2", "0.5"]]
    report.write_csv(p, [])
    assert open(p).read() == ""


def test_md_table():
    assert report.md_table(["a", "b", "c"], [[1, "x", None]]) == \
        "| a | b | c |\n|---|---:|---:|\n| 1 | x | None |"


def ss(t, acked, cwnd, local="10.77.0.18:9001", peer="10.77.0.26:40000", **kw):
    return dict({"run": "r1", "config": "A", "relay": "mid", "local": local, "peer": peer,
                 "peer_ip": peer.split(":")[0], "t": t, "bytes_acked": acked, "cwnd": cwnd},
                **kw)


def test_ss_summary():
    samples = [
        ss(0, 0, 10), ss(1, 100000, 20, rtt_ms=10, pacing_rate_bps=8e6, notsent=1000),
        ss(2, 100000, 20),                                  # idle: not a sending interval
        ss(3.5, 250000, 5, rtt_ms=30, pacing_rate_bps=16e6, notsent=3000),   # after 2.5 s idle
        ss(0, 0, 10, local="10.77.0.18:9001", peer="10.77.0.26:40001"),
        ss(1, 49999, 10, local="10.77.0.18:9001", peer="10.77.0.26:40001"),  # too little: left out
    ]
    for port, sent in ((1, 300000), (2, 100000), (3, 60000)):   # three to one peer
        p = f"10.77.0.30:4000{port}"
        samples += [ss(0, 0, 10, peer=p), ss(1, sent, 40, peer=p, ssthresh=30)]
    rows = report.ss_summary(samples, {"10.77.0.26": "exit"}, ["A"])
    assert [(r["peer"], r["class"], r["connections"], r["sent_mb"]) for r in rows] == [
        ("10.77.0.30", "bulk", 1, 0.3), ("10.77.0.30", "other", 2, 0.2),
        ("exit", "shared", 1, 0.2)]
    shared = rows[2]
    assert shared["sending_s"] == 2.5
    assert (shared["cwnd_p50"], shared["cwnd_p75"]) == (12.5, 16.2)
    # the window at the first send, and at the first send after >= 1 s idle
    assert (shared["restart_cwnd_p50"], shared["restarts"]) == (7.5, 2)
    assert shared["ssthresh_p50"] is None and shared["ssthresh_share"] == 0.0
    assert (shared["rtt_ms_p50"], shared["rtt_ms_p75"]) == (20.0, 25.0)
    assert shared["pacing_kBps_p50"] == 1500.0 and shared["notsent_kB_p50"] == 2.0
    assert (shared["rate_kBps_p50"], shared["rate_kBps_p75"]) == (100.0, 100.0)
    assert rows[0]["ssthresh_p50"] == 30 and rows[0]["ssthresh_share"] == 1.0
    assert rows[0]["rate_kBps_p50"] == 300.0


def test_paired_rows():
    pp = lambda paths, ok: {"c": {"paths": paths, "streams_on_pinned_path": ok,
                                  "streams_on_other_circuit": 0, "unpinned_streams": 0,
                                  "circuits_built": {"a": 1, "b": 2}}}
    p1 = {"a": ["r1", "r2", "x1"], "b": ["r2", "r1", "x2"]}
    p2 = {"a": ["r1", "r2", "x1"], "b": ["r2", "r3", "x2"]}
    runs = [{"run": "v-s1", "seed": 1, "paired_paths": pp(p1, 5), "paired_paths_flags": "ok"},
            {"run": "p-s1", "seed": 1, "paired_paths": pp(p1, 6)},
            {"run": "q-s1", "seed": 1, "paired_paths": pp(p2, 6),
             "paired_paths_flags": ["a: exit x1 lacks Exit"]},
            {"run": "v-s2", "seed": 2, "paired_paths": pp(p2, 4)},
            {"run": "old", "seed": 2}]
    rows = report.paired_rows(runs)
    assert [r[0] for r in rows] == ["v-s1", "p-s1", "q-s1", "v-s2"]
    assert rows[0] == ["v-s1", 5, 0, 0, 3, "ok", "yes", "-"]
    assert rows[1][-2] == "yes" and rows[2][-2] == "NO" and rows[3][-2] == "yes"
    assert rows[2][5] == "a: exit x1 lacks Exit"


def test_paired_loop_rows():
    def rec(cfg, seed, stream, total, ttfb, path="r1-r2-x1", counted=True):
        return {"config": cfg, "class": "web", "seed": seed, "client": "c", "stream": stream,
                "path": path, "total": total, "ttfb": ttfb, "ok": True, "counted": counted}
    res = [rec("v", 1, 0, 2.0, 1.0), rec("v", 1, 0, 4.0, 1.0),   # median 3
           rec("p", 1, 0, 1.5, 0.5),                               # -50%
           rec("v", 1, 1, 1.0, 1.0), rec("p", 1, 1, 1.5, 1.0),    # +50%
           rec("v", 2, 1, 2.0, 1.0), rec("p", 2, 1, 2.2, 1.0),    # +10%
           rec("p", 2, 2, 9.0, 1.0),                               # no baseline: skipped
           rec("p", 2, 1, 99.0, 1.0, counted=False),
           {"config": "p", "class": "web", "seed": 1, "client": "c", "stream": 0,
            "total": 99.0, "ttfb": 9.0, "ok": True, "counted": True}]  # no path: not paired
    rows = report.paired_loop_rows(res, ["v", "p"], {"p": "v", "v": "v"})
    tot = next(r for r in rows if r["metric"] == "total")
    assert tot["loops"] == 3 and tot["faster"] == 1
    assert tot["change_p50"] == pytest.approx(10.0)
    assert tot["change_p25"] == pytest.approx(-20.0)
    ttfb = next(r for r in rows if r["metric"] == "ttfb")
    assert ttfb["change_p50"] == pytest.approx(0.0) and ttfb["faster"] == 1


def test_relay_confirmations():
    pp = {"c": {"paths": {"a": ["r1", "r2", "x1"], "b": ["r2", "r1", "x2"]},
                "circuits": {"7": "a", "9": "b", "12": "a"}}}
    asks = [{"run": "R", "client": "c", "circuit": 7, "hop": h, "label": "L7"} for h in (1, 2, 3)]
    asks += [{"run": "R", "client": "c", "circuit": 9, "hop": h, "label": "L9"} for h in (1, 2, 3)]
    asks += [{"run": "R", "client": "c", "circuit": 12, "hop": h, "label": "L12"} for h in (1, 2)]
    asks += [{"run": "R", "client": "c", "circuit": 5, "hop": 1, "label": "L5"}]  # not pinned
    asks += [{"run": "Q", "client": "c", "circuit": 7, "hop": 1, "label": "Q7"}]  # other run
    mm = [{"run": "R", "label": "L7", "relay": r} for r in ("r1", "r2", "x1", "r1")]
    mm += [{"run": "R", "label": "L9", "relay": r} for r in ("r2", "r3", "x2")]  # r3: wrong
    mm += [{"run": "R", "label": "L12", "relay": r} for r in ("r1", "r2")]
    mm += [{"run": "R", "label": "L5", "relay": "r4"}]
    assert report.relay_confirmations("R", pp, asks, mm) == (2, 3)
    runs = [{"run": "R", "seed": 1, "paired_paths": {"c": dict(pp["c"], streams_on_pinned_path=3)}}]
    assert report.paired_rows(runs, asks, mm)[0][-1] == "2 of 3"


def test_exit_conflux_sets(tmp_path):
    """The runner counts the conflux sets the exits linked from the last
    heartbeat line of each exit's notice.log; None when no exit logged one."""
    from pctor_lab import experiment
    exp = {"network": {"hosts": [{"name": "x1", "role": "exit"}, {"name": "x2", "role": "exit"},
                                 {"name": "r1", "role": "relay"}]}}
    assert experiment.exit_conflux_sets(exp, str(tmp_path)) is None
    for h, lines in (("x1", ["Heartbeat: Conflux linked 3 sets (6 legs) and refused 0 links "
                             "since start; 3 sets are open.",
                             "Heartbeat: Conflux linked 21 sets (42 legs) and refused 1 links "
                             "since start; 4 sets are open."]),
                     ("x2", ["Heartbeat: pctor's uptime is 0:01 hours, with 3 circuits open."]),
                     ("r1", ["Heartbeat: Conflux linked 100 sets (200 legs) and refused 0 "
                             "links since start; 0 sets are open."])):
        (tmp_path / h).mkdir()
        (tmp_path / h / "notice.log").write_text(
            "".join(f"Jan 01 00:00:{i:02d}.000 [notice] {l}\n" for i, l in enumerate(lines)))
    # the last line of x1 counts; x2 logged none; r1 is no exit
    assert experiment.exit_conflux_sets(exp, str(tmp_path)) == (21, 42)
    (tmp_path / "x2" / "notice.log").write_text(
        "[notice] Heartbeat: Conflux linked 6 sets (12 legs) and refused 0 links since start; "
        "0 sets are open.\n")
    assert experiment.exit_conflux_sets(exp, str(tmp_path)) == (27, 54)
    # older exits' lines have no message counts: none are summed
    assert experiment.exit_conflux_counts(exp, str(tmp_path)) == {"sets": 27, "legs": 54}
    # every exit counting: messages and SWITCH cells are summed
    for h, (m, sw) in (("x1", (9000, 300)), ("x2", (1000, 31))):
        (tmp_path / h / "notice.log").write_text(
            "[notice] Heartbeat: Conflux linked 2 sets (4 legs) and refused 0 links since start; "
            f"1 sets are open. Sent {m} messages on legs and {sw} SWITCH cells (3.3%).\n")
    assert experiment.exit_conflux_counts(exp, str(tmp_path)) == {
        "sets": 4, "legs": 8, "messages": 10000, "switches": 331}
    rec = {}
    experiment.record_conflux_sets(rec, exp, str(tmp_path))
    assert rec == {"conflux_sets": 4, "conflux_legs": 8, "conflux_messages": 10000,
                   "conflux_switches": 331}


def test_run_note():
    """The Runs table's note: the error, the conflux sets and, where the
    exits counted them, the share of SWITCH cells."""
    assert report.run_note({"run": "a"}) == ""
    assert report.run_note({"error": "x" * 200}) == "x" * 120
    assert report.run_note({"conflux_sets": 3, "conflux_legs": 6}) == \
        "exits linked 3 conflux sets (6 legs)"
    assert report.run_note({"conflux_sets": 3, "conflux_legs": 6, "conflux_messages": 1000,
                            "conflux_switches": 25}) == \
        "exits linked 3 conflux sets (6 legs); 25 SWITCH cells for 1000 messages on legs (2.5%)"


def test_per_client_rows():
    """Per class and client host, medians and their change against the same
    host under the baseline; classes on one host only are left out."""
    res = []

    def add(cls, client, config, ttfb, total, n=3):
        for _ in range(n):
            res.append({"counted": True, "ok": True, "class": cls, "client": client,
                        "config": config, "ttfb": ttfb, "total": total})
    add("web", "c1", "a", 1.0, 10.0)
    add("web", "c1", "b", 0.5, 12.0)
    add("web", "c2", "a", 2.0, 4.0)
    add("web", "c2", "b", 2.0, 2.0, n=5)
    add("bulk", "c3", "a", 1.0, 50.0)
    res.append({"counted": False, "ok": True, "class": "web", "client": "c1", "config": "b",
                "ttfb": 99.0, "total": 99.0})
    rows = report.per_client_rows(res, ["a", "b"], {"a": "a", "b": "a"})
    got = {(r["client"], r["config"]): r for r in rows}
    assert {r["class"] for r in rows} == {"web"}
    assert got[("c1", "a")]["total_change_pct"] is None
    assert got[("c1", "b")]["n"] == 3
    assert got[("c1", "b")]["ttfb_change_pct"] == pytest.approx(-50.0)
    assert got[("c1", "b")]["total_change_pct"] == pytest.approx(20.0)
    assert got[("c2", "b")]["n"] == 5
    assert got[("c2", "b")]["total_change_pct"] == pytest.approx(-50.0)
