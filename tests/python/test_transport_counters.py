# SPDX-License-Identifier: BSD-3-Clause
# test_transport_counters.py -- the experiment runner's reading of the
# relays' extension counters for a datagram CircuitTransport or for
# PerCircuitTCP inside IPsec (the SIGUSR1 statistics lines of
# app/main/start.c) and its refusal of a run whose circuit hops did not
# take the transport.
from pctor_lab import experiment

LINE = ("Nov 27 20:00:00.000 [notice] Statistics: TCP-over-DTLS: 3 links, 5 circuit hops; "
        "extensions 42 over TCP-over-DTLS, 7 over TLS (2 to relays with no "
        "DatagramPort known); 9 hops from peers, 0 refused; cells 1 sent, 2 received")
BT = ("[notice] Statistics: BackTap: 1 links, 0 circuit hops; extensions 3 over BackTap, "
      "0 over TLS (0 to relays with no DatagramPort known); 0 circuits from peers; cells 0 sent")


def test_stats_line():
    m = experiment.TRANSPORT_STATS.search(LINE)
    assert m and m.groups() == ("TCP-over-DTLS", "42", "7", "2")
    m = experiment.TRANSPORT_STATS.search(BT)
    assert m and m.groups() == ("BackTap", "3", "0", "0")


IPSEC = ("Nov 29 08:00:00.000 [notice] Statistics: IPsec: extensions 12 per circuit inside "
         "IPsec, 1 per circuit without it, 5 over a shared connection (2 to relays "
         "offering IPsec, with no usable SA yet)")


def test_ipsec_line():
    assert experiment.transport_stats(IPSEC, "ipsec") == [
        {"transport": "IPsec", "carried": 12, "fallback": 2, "not_offered": 4}]
    # a datagram line is not an IPsec one, and the other way round
    assert experiment.transport_stats(LINE, "ipsec") == []
    assert experiment.transport_stats(IPSEC, "backtap") == []
    assert experiment.transport_stats(LINE + "\n" + BT, "backtap") == [
        {"transport": "BackTap", "carried": 3, "fallback": 0, "not_offered": 0}]


def test_ipsec_relays(tmp_path):
    def host(name, role, *lines):
        d = tmp_path / name
        d.mkdir()
        (d / "torrc").write_text("\n".join(lines) + "\n")
        return {"dir": str(d), "role": role}
    hosts = {"m": host("m", "relay", "PerCircuitTCP 1", "PerCircuitTCPRequireIPsec 1",
                       "IPsec 1"),
             "x": host("x", "exit", "PerCircuitTCP 0", "PerCircuitTCP 1",
                       "PerCircuitTCPRequireIPsec 1", "IPsec 1"),
             "p": host("p", "relay", "PerCircuitTCP 1", "IPsec 1"),    # IPsec not required
             "q": host("q", "relay", "PerCircuitTCP 1", "PerCircuitTCPRequireIPsec 1",
                       "IPsec 1", "PerCircuitTCP 0"),                   # the last line wins
             "c": host("c", "client", "PerCircuitTCP 1", "PerCircuitTCPRequireIPsec 1",
                       "IPsec 1")}
    assert experiment.ipsec_relays(hosts) == {"m": "ipsec", "x": "ipsec"}


def c(carried, tls, not_offered, t="TCP-over-DTLS"):
    # tls: every extension not carried (the datagram line's "over TLS")
    return {"transport": t, "carried": carried, "fallback": tls - not_offered,
            "not_offered": not_offered}


def test_engaged():
    hops, problem = experiment.transport_check({"mid": c(1, 3, 1), "g1": c(0, 1, 0)},
                                               {"mid": c(30, 4, 2), "g1": c(12, 1, 0)})
    # mid's one new TLS hop went to a relay without a port: not a failure
    assert hops == {"mid": c(29, 1, 1), "g1": c(12, 0, 0)} and problem is None


def test_fell_back_refused():
    hops, problem = experiment.transport_check({"mid": c(1, 3, 1)}, {"mid": c(30, 6, 1)})
    assert hops["mid"] == c(29, 3, 0)
    assert problem.startswith("transport not engaged: 3 circuit hop(s)")


def test_none_carried_refused():
    _, problem = experiment.transport_check({"mid": c(5, 0, 0)}, {"mid": c(5, 0, 0)})
    assert problem == "transport not engaged: no circuit hop went over TCP-over-DTLS"


def test_ipsec_fell_back_refused():
    hops, problem = experiment.transport_check(
        {"mid": c(0, 3, 3, "IPsec")}, {"mid": c(10, 5, 3, "IPsec")})
    assert hops["mid"] == {"transport": "IPsec", "carried": 10, "fallback": 2,
                           "not_offered": 0}
    assert problem == ("transport not engaged: 2 circuit hop(s) to relays that offer "
                       "IPsec did not use it (10 did)")


def test_counters_of_the_configured_transport(tmp_path):
    # A relay with a DatagramPort logs both lines; the one of its
    # CircuitTransport is read, and only one logged after the signal.
    import subprocess
    import time
    log = tmp_path / "notice.log"
    log.write_text(LINE + "\n" + BT + "\n")
    script = ("n=0; trap 'n=$((n+1)); printf \"%s\\n%s\\n\" "
              f"\"{BT.replace('3 over BackTap', '$n over BackTap')}\" \"{LINE}\" >> {log}' USR1; "
              "echo ready; while :; do sleep 0.05; done")
    p = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        hosts = {"g": {"dir": str(tmp_path), "pid": p.pid}}
        a = experiment.transport_counters(hosts, {"g": "backtap"})
        b = experiment.transport_counters(hosts, {"g": "dtls-tcp"})
        c = experiment.transport_counters(hosts, {"g": "backtap"})
    finally:
        p.kill()
        p.wait()
    assert a["g"] == {"transport": "BackTap", "carried": 1, "fallback": 0, "not_offered": 0}
    assert b["g"] == {"transport": "TCP-over-DTLS", "carried": 42, "fallback": 5,
                      "not_offered": 2}
    assert c["g"]["carried"] == 3


def mmrec(relay, label, t, cells, bwd, fwd):
    ch = lambda tr: None if tr is None else {"id": 1, "transport": tr}
    return {"relay": relay, "label": label, "time": t, "cells_fwd": cells, "cells_bwd": 0,
            "chan_bwd": ch(bwd), "chan_fwd": ch(fwd)}


def test_measureme_hops():
    # Under Shadow: hops of the circuits that moved cells from the
    # workload's start on, each (circuit, side) once however many records
    mm = [mmrec("m", "a", 1010.0, 50, "BackTap", "BackTap"),
          mmrec("m", "a", 1011.0, 60, "BackTap", "BackTap"),
          mmrec("m", "b", 990.0, 20, "TLS", "BackTap"),    # before the start only
          mmrec("m", "d", 1010.0, 0, "TLS", "TLS"),        # idle since the start
          dict(mmrec("m", "f", 1010.0, 0, "TLS", "TLS"), cells_bwd=2),  # MeasureMe answers
          mmrec("x", "f", 1010.0, 0, "TLS", None),
          mmrec("m", "e", 1012.0, 9, "TLS", "BackTap"),    # an early circuit, used
          mmrec("x", "a", 1010.0, 0, "BackTap", None),     # the exit: no next hop,
                                                           # nothing forwarded
          mmrec("g1", "c", 1010.0, 10, "TLS", "BackTap"),  # from a client over TLS
          mmrec("srv", "a", 1010.0, 50, "TLS", "TLS")]     # not a datagram relay
    hops = experiment.measureme_hops(mm, {"m": "backtap", "x": "backtap",
                                          "g1": "backtap"}, 1000.0)
    assert hops == {"m": {"BackTap": 3, "TLS": 1}, "x": {"BackTap": 1},
                    "g1": {"TLS": 1, "BackTap": 1}}
    # records without the transport field (older relays) count nothing
    old = [{"relay": "m", "label": "z", "time": 1010.0, "cells_fwd": 5,
            "chan_bwd": {"id": 1}, "chan_fwd": None}]
    assert experiment.measureme_hops(old, {"m": "backtap"}, 1000.0) == {}
