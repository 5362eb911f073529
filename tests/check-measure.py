#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check-measure.py -- scripts/pctor-measure's parts that need no daemon:
the control-event parser (CIRC, STREAM, CIRC_BW, malformed lines), the
OnionPerf "tor" section built from it (streams of other programs left out,
circuit IDs by epoch), the refusal of servers a network may not use, and the
MeasureMe join of relay records with a garbage line and of the hops'
answers (MEASUREME events: accepted with records, none from a tor hop,
garbage answers the client reported, malformed events), and each transfer's
CIRC_BW figures (summed over the legs of a conflux set, complete or not).
The end-to-end runs are tests/integration/measure.sh and
measure-testbed.sh."""
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "pctor-measure")
loader = importlib.machinery.SourceFileLoader("pctor_measure", SCRIPT)
spec = importlib.util.spec_from_loader("pctor_measure", loader)
pm = importlib.util.module_from_spec(spec)
loader.exec_module(pm)

FA, FB, FC = "A" * 40, "B" * 40, "C" * 40


def events(st):
    ev = [
        (1.0, "CIRC 5 LAUNCHED PURPOSE=GENERAL TIME_CREATED=2026-11-26T17:00:00.000000"),
        (1.1, f"CIRC 5 EXTENDED ${FA}~a PURPOSE=GENERAL"),
        (1.3, f"CIRC 5 BUILT ${FA}~a,${FB}~b,${FC} PURPOSE=GENERAL"),
        (1.4, "CIRC_BW ID=5 READ=100 WRITTEN=50 TIME=2026-11-26T17:00:01.000000 "
              "DELIVERED_READ=90 OVERHEAD_READ=10 SS=1 CWND=124 RTT=30 MIN_RTT=20"),
        (1.5, "CIRC_BW ID=5 READ=300 WRITTEN=0 TIME=x CWND=130 SS=0"),
        (1.5, "CIRC_BW ID=99 READ=1"),                       # not a known circuit
        (1.6, "STREAM 7 NEW 0 127.0.0.1:80 SOURCE_ADDR=127.0.0.1:4444 PURPOSE=USER"),
        (1.6, "STREAM 8 NEW 0 192.0.2.1:443 SOURCE_ADDR=127.0.0.1:4445 PURPOSE=USER"),
        (1.7, "STREAM 7 SUCCEEDED 5 127.0.0.1:80"),
        (1.8, "STREAM 7 CLOSED 5 127.0.0.1:80 REASON=DONE"),
        (1.9, "CIRC 5 CLOSED " + f"${FA}~a,${FB}~b,${FC} REASON=FINISHED"),
        (2.0, "CIRC garbage"), (2.0, "STREAM x y z w"), (2.0, ""), (2.0, "CIRC_BW ID=zz"),
    ]
    for t, e in ev:
        st.on_event(e, t)


def check_circ_bw(d):
    """A transfer's CIRC_BW figures: complete only with an event after its
    stream closed; a conflux leg's summed with the other legs of its set
    (CONFLUX_ID), not with another set's or a plain circuit's; samples
    capped; join_circ_bw's summary in meta."""
    st = pm.State(d)
    cfx, other = "AB" * 32, "CD" * 32
    for cid, tag in ((1, f" CONFLUX_ID={cfx}"), (2, f" CONFLUX_ID={cfx} CONFLUX_RTT=900"),
                     (3, f" CONFLUX_ID={other}"), (4, "")):
        st.on_event(f"CIRC {cid} LAUNCHED PURPOSE=GENERAL TIME_CREATED=x{tag}", 1.0)
    for t, cid, rd, dl in ((2.0, 1, 1018, 900), (2.0, 2, 509, 498), (2.0, 3, 509, 1),
                           (2.0, 4, 509, 7), (3.0, 2, 509, 400)):
        st.on_event(f"CIRC_BW ID={cid} READ={rd} WRITTEN=0 TIME=T{t} DELIVERED_READ={dl} "
                    f"OVERHEAD_READ={rd // 509 * 498 - dl} PCTOR_EWMA_FWD=1.5", t)
    bw = pm.circ_bw_of(st.circuits, 0, 1, 2.5)
    assert bw["legs"] == [1, 2] and bw["conflux_id"] == cfx, bw
    assert (bw["read"], bw["delivered_read"], bw["events"]) == (2036, 1798, 3), bw
    assert bw["delivered_read"] + bw["overhead_read"] == bw["read"] // 509 * 498, bw
    assert (bw["first_at"], bw["last_at"], bw["complete"]) == (2.0, 3.0, True), bw
    assert [x["circuit"] for x in bw["samples"]] == [1, 2, 2], bw["samples"]
    assert bw["pctor_ewma_fwd"] == 1.5
    assert not pm.circ_bw_of(st.circuits, 0, 1, 3.5)["complete"]
    assert not pm.circ_bw_of(st.circuits, 0, 1, None)["complete"]
    plain = pm.circ_bw_of(st.circuits, 0, 4, 1.9)
    assert "legs" not in plain and plain["read"] == 509 and plain["complete"], plain
    assert pm.circ_bw_of(st.circuits, 0, 3, 1.9)["read"] == 509   # its own set only
    assert pm.circ_bw_of(st.circuits, 0, 77, 1.9) is None
    # the figures are a copy: later events do not change a written record
    n = len(plain["samples"])
    st.on_event("CIRC_BW ID=4 READ=509 WRITTEN=0 TIME=T", 4.0)
    assert len(plain["samples"]) == n
    # samples stop at CIRC_BW_SAMPLES; the sums go on
    for k in range(pm.CIRC_BW_SAMPLES + 5):
        st.on_event("CIRC_BW ID=3 READ=509 WRITTEN=509 TIME=T", 5.0 + k)
    b3 = st.circuits[(0, 3)]["circ_bw"]
    assert len(b3["samples"]) == pm.CIRC_BW_SAMPLES and b3["samples_dropped"] == 6, b3
    assert b3["read"] == 509 * (pm.CIRC_BW_SAMPLES + 6), b3["read"]
    # the join: each transfer's figures again, and meta's summary
    st.streams[(0, 9)] = {"ended": 2.5}
    st.streams[(0, 10)] = {"ended": 9.0}
    tr = [{"epoch": 0, "circuit_id": 2, "stream_id": 9},
          {"epoch": 0, "circuit_id": 4, "stream_id": 10}, {"epoch": 0}]
    meta = {}
    pm.join_circ_bw(meta, tr, st)
    assert tr[0]["circ_bw"]["legs"] == [1, 2] and tr[0]["circ_bw"]["complete"]
    assert not tr[1]["circ_bw"]["complete"] and "circ_bw" not in tr[2]
    assert meta["circ_bw_transfers"] == {"with_figures": 2, "complete": 1}, meta
    assert meta["circ_bw"].startswith("produced: "), meta["circ_bw"]
    st.events.close()


def check_answers(d):
    """Circuit 6 asks hops 1-3 (label L): hop 1 (pctor) answers accepted
    and returns two records, hop 2 (tor) says nothing, hop 3 sends only
    garbage the client refused; malformed MEASUREME events are skipped."""
    L = "0123456789abcdef"
    st = pm.State(d)
    rec = ("Seq={} OffsetMs={} CellsFwd=3 CellsBwd=40 QueuedFwd=0 SentFwd=3 "
           "DelayAvgFwdUs=12 DelayMaxFwdUs=50 QueuedBwd=2 SentBwd=40 DelayAvgBwdUs=900 "
           "DelayMaxBwdUs=4000")
    for t, e in ((2.0, f"MEASUREME CircuitID=6 Hop=1 Label={L} Type=STATUS Result=accepted"),
                 (3.0, f"MEASUREME CircuitID=6 Hop=1 Label={L} Type=RECORD " + rec.format(0, 0)),
                 (3.0, f"MEASUREME CircuitID=6 Hop=1 Label={L} Type=RECORD " + rec.format(1, 1000)),
                 (3.1, 'MEASUREME CircuitID=6 Hop=3 Type=ERROR Reason="answer too short"'),
                 (3.2, 'MEASUREME CircuitID=6 Hop=3 Type=ERROR Reason="unknown answer type"'),
                 (3.3, "MEASUREME CircuitID=6 Hop=3 Label=nothex Type=STATUS Result=accepted"),
                 (3.4, "MEASUREME CircuitID=6 Hop=1 Label=" + L + " Type=RECORD Seq=x"),
                 (3.5, "MEASUREME Hop=2"),
                 (3.6, "MEASUREME")):
        st.on_event(e, t)
    a = st.mm_answers
    assert set(a) == {(0, 6, 1), (0, 6, 3)}, a
    assert a[(0, 6, 1)]["result"] == "accepted" and len(a[(0, 6, 1)]["records"]) == 2, a
    assert a[(0, 6, 1)]["records"][1]["offset_ms"] == 1000
    assert a[(0, 6, 1)]["records"][0]["delay_avg_bwd_us"] == 900
    assert a[(0, 6, 3)]["n_errors"] == 2 and a[(0, 6, 3)]["result"] is None, a
    os.makedirs(os.path.join(d, "client"))
    with open(os.path.join(d, "client", "notice.log"), "w") as f:
        for h in (1, 2, 3):
            f.write(f"[notice] MeasureMe: asked hop {h} of circuit 6 to measure it every "
                    f"1000 ms (label {L})\n")
    tr = [{"seq": 1, "server": "s", "size": 1, "epoch": 0, "circuit_id": 6,
           "path": [{"fingerprint": FA, "relay": f"${FA}~a"},
                    {"fingerprint": FB, "relay": f"${FB}~b"},
                    {"fingerprint": FC, "relay": f"${FC}~c"}]}]
    meta = {"epochs": [{"epoch": 0, "log_offset": 0}]}
    res = pm.join_measureme(d, meta, tr, {}, pm.relay_kind_fn({FA: "pctor", FB: "tor"}),
                            st.mm_answers)
    got = {h["hop"]: (h["status"], h["answer"], h.get("returned_records"))
           for h in tr[0]["measureme"]}
    assert got == {1: ("answered", "accepted", 2), 2: ("ignored", "ignored", None),
                   3: ("error", "error", 0)}, got
    assert tr[0]["measureme"][2]["answer_error_reasons"] == ["answer too short",
                                                             "unknown answer type"]
    assert res["answers"] == {"accepted": 1, "refused": 0, "error": 1, "ignored": 1}, res
    with open(os.path.join(d, "measureme.jsonl")) as f:
        lines = [json.loads(l) for l in f]
    assert [len(l["returned"]) for l in lines] == [2, 0, 0], lines
    # a refusal (MeasureMe off at that relay)
    st.on_event(f"MEASUREME CircuitID=6 Hop=2 Label={L} Type=STATUS Result=disabled", 4.0)
    pm.join_measureme(d, meta, tr, {}, pm.relay_kind_fn({FA: "pctor", FB: "pctor"}),
                      st.mm_answers)
    h2 = tr[0]["measureme"][1]
    assert (h2["answer"], h2["answer_result"], h2["status"]) == \
        ("refused", "disabled", "not-collected"), h2
    st.events.close()


def main():
    d = tempfile.mkdtemp(prefix="check-measure.")
    try:
        st = pm.State(d)
        st.our_targets = {"127.0.0.1:80"}
        events(st)
        c = st.circuit(0, 5)
        assert [p[0] for p in c["path"]] == [FA, FB, FC], c["path"]
        assert abs((c["built"] - c["launched"]) - 0.3) < 1e-9
        bw = dict(c["circ_bw"])
        samples = bw.pop("samples")
        assert bw == {"read": 400, "written": 50, "delivered_read": 90,
                      "overhead_read": 10, "ss": 0, "cwnd": 130, "rtt": 30,
                      "min_rtt": 20, "events": 2, "samples_dropped": 0,
                      "first_time": "2026-11-26T17:00:01.000000", "last_time": "x",
                      "first_at": 1.4, "last_at": 1.5}, bw
        assert [(x["at"], x["read"], x["cwnd"]) for x in samples] == \
            [(1.4, 100, 124), (1.5, 300, 130)], samples
        assert c.get("reason") == "FINISHED"
        s = st.stream_of(0, 4444, 1.0)
        assert s and s["circuit"] == 5 and s["reason"] == "DONE", s
        assert st.foreign_streams == 1
        # a later epoch (a restarted client) reuses IDs: kept apart
        st.epoch = 1
        st.on_event("CIRC 5 LAUNCHED PURPOSE=GENERAL", 3.0)
        tor = pm.op_tor(st)
        assert sorted(tor["circuits"]) == ["1000005", "5"], sorted(tor["circuits"])
        assert list(tor["streams"]) == ["7"], "the other program's stream was kept"
        assert tor["streams"]["7"]["circuit_id"] == "5"  # a string, as OnionPerf
        path = tor["circuits"]["5"]["path"]
        assert path[2][0] == f"${FC}~unknown" and path[0][1] == 0.1, path
        with open(os.path.join(d, "events.log")) as f:
            assert sum(1 for _ in f) == 16   # every event, malformed ones too
        # servers
        for url, net, ok in (("http://127.0.0.1:8080/x", "private", True),
                             ("http://10.0.0.1/", "private", False),
                             ("http://example.org/", "private", False),
                             ("https://127.0.0.1/", "private", False),
                             ("http://127.0.0.1/", "live", False),
                             ("http://192.168.1.1/", "live", False),
                             ("http://localhost/", "live", False),
                             ("http://abc.onion/", "live", False),
                             ("http://93.184.216.34:8000/files", "live", True),
                             ("http://measure.example.org/", "live", True)):
            try:
                srv = pm.parse_server(url, net)
                assert ok, f"{url} accepted on a {net} network"
            except pm.MeasureError:
                assert not ok, f"{url} refused on a {net} network"
        assert pm.parse_server("http://127.0.0.1:8080/x/", "private")["prefix"] == "/x"
        # the join: one good record, one garbage line, one of another label
        rec = os.path.join(d, "relay.jsonl")
        with open(rec, "w") as f:
            f.write(json.dumps({"label": "00112233aabbccdd", "seq": 0, "cells_bwd": 3}) + "\n")
            f.write('{"label": garbage\n')
            f.write(json.dumps({"label": "ffffffffffffffff", "seq": 0}) + "\n")
        os.makedirs(os.path.join(d, "client"))
        with open(os.path.join(d, "client", "notice.log"), "w") as f:
            for h in (1, 2):
                f.write(f"[notice] MeasureMe: asked hop {h} of circuit 5 to measure it every "
                        f"1000 ms (label 00112233aabbccdd)\n")
        tr = [{"seq": 1, "server": "s", "size": 1, "epoch": 0, "circuit_id": 5,
               "path": [{"fingerprint": FA, "relay": f"${FA}~a"},
                        {"fingerprint": FB, "relay": f"${FB}~b"},
                        {"fingerprint": FC, "relay": f"${FC}~c"}]}]
        meta = {"epochs": [{"epoch": 0, "log_offset": 0}]}
        kinds = {FA: "pctor", FB: "tor"}
        res = pm.join_measureme(d, meta, tr, {FA: [rec]}, pm.relay_kind_fn(kinds))
        got = {h["hop"]: (h["status"], h.get("records")) for h in tr[0]["measureme"]}
        assert got == {1: ("recorded", 1), 2: ("ignored", 0), 3: ("not-asked", None)}, got
        assert res["bad_record_lines"] == {FA: 1}, res
        with open(os.path.join(d, "measureme.jsonl")) as f:
            lines = [json.loads(l) for l in f]
        assert [(l["hop"], len(l["records"])) for l in lines] == [(1, 1), (2, 0)], lines
        os.makedirs(os.path.join(d, "mm"))
        check_answers(os.path.join(d, "mm"))
        os.makedirs(os.path.join(d, "bw"))
        check_circ_bw(os.path.join(d, "bw"))
    finally:
        shutil.rmtree(d)
    print("check-measure: event parser, CIRC_BW figures (conflux legs, completeness), "
          "OnionPerf tor section, server checks, join (relay records and answers): ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
