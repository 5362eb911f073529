# SPDX-License-Identifier: BSD-3-Clause
# test_parsers.py -- pctor_lab's parsers of what daemons and tools write:
# `ss -tinHO` lines (relay-to-relay TCP state), consensus flags, the
# client's "MeasureMe: asked hop ..." log lines and the relays'
# measureme.jsonl files (collect_hosts: rotated file first, garbage lines
# skipped), and the test bed's traffic JSON lines (Emitter, summarize).
import json
import os

import pytest

import socket
import time

from pctor_lab import experiment, netns, network, report, traffic, workload
from pctor_lab.common import TestbedError

RELAYS = {"10.77.0.14", "10.77.0.18"}
SS = """\
ESTAB 0 1448 10.77.0.14:9001 10.77.0.18:40000 cubic wscale:7,7 rto:204 rtt:20.5/1.2 mss:1448 cwnd:10 ssthresh:7 bytes_acked:5000 bytes_received:300 notsent:2896 retrans:0/3 send 5.6Mbps pacing_rate 11.2Mbps delivery_rate 800Kbps app_limited
ESTAB 0 0 10.77.0.14:9001 10.77.0.42:5555 cubic cwnd:10
ESTAB 0 0 10.77.0.14:40001 10.77.0.18:40002 cubic cwnd:10
0 0 10.77.0.18:40000 10.77.0.14:9001 reno rtt:bad cwnd:x bytes_acked:12
FIN-WAIT-2 garbage
"""


def test_parse_ss():
    recs = workload.parse_ss(SS, RELAYS)
    assert len(recs) == 2       # not a relay peer, not an ORPort, garbage: skipped
    a, b = recs
    assert a == {"local": "10.77.0.14:9001", "peer": "10.77.0.18:40000",
                 "peer_ip": "10.77.0.18", "recvq": 0, "sendq": 1448, "app_limited": True,
                 "rto": 204.0, "rtt_ms": 20.5, "mss": 1448, "cwnd": 10, "ssthresh": 7,
                 "bytes_acked": 5000, "bytes_received": 300, "notsent": 2896,
                 "retrans_total": 3, "cc": "cubic", "send_bps": pytest.approx(5.6e6),
                 "pacing_rate_bps": pytest.approx(11.2e6),
                 "delivery_rate_bps": pytest.approx(8e5)}
    # no State column (ss given a state filter); bad numbers are left out
    assert b == {"local": "10.77.0.18:40000", "peer": "10.77.0.14:9001",
                 "peer_ip": "10.77.0.14", "recvq": 0, "sendq": 0, "app_limited": False,
                 "bytes_acked": 12, "cc": "reno"}


def test_consensus_flags():
    text = ("network-status-version 3 microdesc\n"
            "r guard AAAAAAAAAAAAAAAAAAAAAAAAAAA 2026-11-27 09:00:00 10.77.0.14 9001 0\n"
            "s Fast Guard Running Stable V2Dir Valid\n"
            "r exit BBBBBBBBBBBBBBBBBBBBBBBBBBB 2026-11-27 09:00:00 10.77.0.26 9001 0\n"
            "s Exit Running\n"
            "r short\n"                 # no identity: its flags are dropped
            "s Ignored\n")
    assert network.consensus_flags(text) == {
        "AAAAAAAAAAAAAAAAAAAAAAAAAAA": ["Fast", "Guard", "Running", "Stable", "V2Dir", "Valid"],
        "BBBBBBBBBBBBBBBBBBBBBBBBBBB": ["Exit", "Running"]}


def test_measureme_ask_regex():
    line = ("Nov 27 09:00:01.000 [notice] MeasureMe: asked hop 2 of circuit 12 to measure it "
            "every 500 ms (label 0123456789abcdef)")
    m = report.MEASUREME_ASK.search(line)
    assert m.groups() == ("2", "12", "500", "0123456789abcdef")
    assert report.MEASUREME_ASK.search(line.replace("abcdef)", "abcde)")) is None
    assert report.MEASUREME_ASK.search(line.replace("0123", "0G23")) is None


def test_collect_hosts(tmp_path):
    c1, mid, rdir = tmp_path / "c1", tmp_path / "mid", tmp_path / "out"
    (c1).mkdir()
    (mid / "data").mkdir(parents=True)
    (c1 / "torrc").write_text("SocksPort 9050\n")
    (c1 / "notice.log").write_text(
        "Nov 27 [notice] Bootstrapped 100% (done): Done\n"
        "Nov 27 [notice] MeasureMe: asked hop 2 of circuit 12 to measure it every 500 ms "
        "(label 0123456789abcdef)\n"
        "Nov 27 [notice] MeasureMe: asked hop 3 of circuit 12 to measure it every 500 ms "
        "(label fedcba9876543210)\n"
        "Nov 27 [notice] MeasureMe: asked hop x of circuit 12\n")
    (mid / "data" / "measureme.jsonl.1").write_text('{"label": "0123456789abcdef", "seq": 1}\n')
    (mid / "data" / "measureme.jsonl").write_text(
        '{"label": "0123456789abcdef", "seq": 2}\nnot json\n{"label": "fedcba9876543210"\n')
    runrec = {"run": "r1", "config": "A", "seed": 3}
    hosts = {"c1": {"dir": str(c1), "role": "client"}, "mid": {"dir": str(mid), "role": "relay"}}
    asks, n = experiment.collect_hosts(runrec, hosts, str(rdir))
    records = list(experiment.run_measureme(str(rdir)))
    base = {"run": "r1", "config": "A", "seed": 3}
    assert asks == [dict(base, client="c1", hop=2, circuit=12, interval_ms=500,
                         label="0123456789abcdef"),
                    dict(base, client="c1", hop=3, circuit=12, interval_ms=500,
                         label="fedcba9876543210")]
    assert n == 2 and records == [dict(base, relay="mid", label="0123456789abcdef", seq=1),
                                  dict(base, relay="mid", label="0123456789abcdef", seq=2)]
    # the runner moves a run's records into the experiment's file
    out = tmp_path / "measureme.jsonl"
    out.write_text('{"seq": 0}\n')
    experiment.move_records(experiment.run_measureme(str(rdir)).path, str(out))
    assert [r["seq"] for r in report.JsonlRecords(str(out))] == [0, 1, 2]
    assert list(experiment.run_measureme(str(rdir))) == []
    experiment.move_records(str(tmp_path / "missing"), str(out))   # nothing to move
    assert sorted(os.listdir(rdir / "measureme")) == ["mid.jsonl", "mid.jsonl.1"]
    assert (rdir / "torrc" / "c1.torrc").read_text() == "SocksPort 9050\n"


def test_traffic_json_lines(tmp_path, capsys):
    p = tmp_path / "t.jsonl"
    em = traffic.Emitter(str(p))
    recs = [{"client": "c1", "model": "web", "ok": True, "ttfb": 0.1, "total": 0.2},
            {"client": "c1", "model": "web", "ok": True, "ttfb": 0.2, "total": 0.4},
            {"client": "c1", "model": "web", "ok": False, "ttfb": None, "total": None,
             "error": "timeout"},
            {"client": "c2", "model": "bulk", "ok": False, "ttfb": None, "total": None}]
    for r in recs:
        em(r)
    em.close()
    lines = p.read_text().splitlines()
    assert [json.loads(x) for x in lines] == recs and em.records == recs
    assert lines[0] == '{"client": "c1", "model": "web", "ok": true, "total": 0.2, "ttfb": 0.1}'
    assert report.read_jsonl(str(p)) == recs
    traffic.summarize(recs)
    err = capsys.readouterr().err.splitlines()
    assert err == ["pctor-testbed: c1 web: 2/3 ok; ttfb median 0.150s; total median 0.300s, "
                   "p90 0.200s",
                   "pctor-testbed: c2 bulk: 0/1 ok"]


def test_recv_http_head():
    """The header shared by both HTTP clients (network.socks_http_get and
    workload.fetch): status, head, the body bytes that came with it; a
    header cut short or over 64 KiB is refused."""
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"HTTP/1.0 404 Not Found\r\nContent-Length: 3\r\n\r\nabc")
        b.shutdown(socket.SHUT_WR)
        status, head, body, ttfb = netns.recv_http_head(a, time.monotonic())
        assert status == 404
        assert head == b"HTTP/1.0 404 Not Found\r\nContent-Length: 3"
        assert body == b"abc"
        assert ttfb >= 0
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"HTTP/1.0 200 OK\r\nServer: x\r\n")
        b.shutdown(socket.SHUT_WR)
        with pytest.raises(TestbedError, match="before the HTTP header ended"):
            netns.recv_http_head(a, time.monotonic())
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"HTTP/1.0 200 OK\r\nX: " + b"y" * 70000)
        with pytest.raises(TestbedError, match="too long"):
            netns.recv_http_head(a, time.monotonic())
