# SPDX-License-Identifier: BSD-3-Clause
# test_torrc.py -- what the test bed writes into each host's torrc for the
# datagram transports (doc/backtap.md, doc/dgram.md): the @ADDRESS@,
# @ORPORT@ and @DATAGRAMPORT@ placeholders, pctor clients that are also
# unpublished relays (relay = true), their refusals, the shipped BackTap
# experiments' generated test-bed files, and the parsing of the
# ControlPort's circuit-status reply the test bed uses to close circuits.
import os
import types

import pytest

from pctor_lab import common, config, definition, network

BadFile = common.TestbedError

NET = """[testbed]
name = "t"
[defaults]
binary = "pctor"
[[host]]
name = "auth"
role = "authority"
binary = "tor"
[[host]]
name = "g"
role = "relay"
torrc = ["CircuitTransport backtap", "DatagramPort @ADDRESS@:@DATAGRAMPORT@"]
[[host]]
name = "x"
role = "exit"
torrc = ["DatagramPort 0", "Nickname2 @ORPORT@"]
[[host]]
name = "c"
role = "client"
"""


def load(tmp_path, text):
    p = tmp_path / "t.toml"
    p.write_text(text)
    return config.load_config(str(p))


def hosts_by_name(cfg):
    return {h.name: h for h in cfg["hosts"]}


def test_relay_client_and_datagram_port(tmp_path):
    cfg = load(tmp_path, NET + "relay = true\ntorrc = ['DatagramPort @ADDRESS@:@DATAGRAMPORT@']\n")
    h = hosts_by_name(cfg)
    assert h["c"].relay and h["c"].has_orport() and h["c"].has_datagram_port()
    assert not h["g"].relay and h["g"].has_orport() and h["g"].has_datagram_port()
    # "DatagramPort 0" opens none; the authority has an ORPort, no datagram port
    assert not h["x"].has_datagram_port()
    assert h["auth"].has_orport() and not h["auth"].has_datagram_port()
    assert h["c"].to_dict()["relay"] is True and h["g"].to_dict()["relay"] is False


def test_plain_client_has_no_orport(tmp_path):
    c = hosts_by_name(load(tmp_path, NET))["c"]
    assert not c.relay and not c.has_orport() and not c.has_datagram_port()


@pytest.mark.parametrize("extra,msg", [
    ("relay = 1\n", "relay must be true or false"),
    ("torrc = ['DatagramPort @ADDR@:9002']\n", "unknown placeholder @ADDR@"),
    ("torrc = ['ORPort @ORPORT@']\n", "@ORPORT@ .* has no ORPort"),
    ("binary = 'tor'\nrelay = true\n", "relay = true is for pctor clients"),
])
def test_client_refused(tmp_path, extra, msg):
    with pytest.raises(BadFile, match=msg):
        load(tmp_path, NET + extra)


def test_relay_key_only_on_clients(tmp_path):
    with pytest.raises(BadFile, match="relay = true is for pctor clients"):
        load(tmp_path, NET.replace('role = "exit"\n', 'role = "exit"\nrelay = true\n'))


def test_expand_placeholders():
    assert config.expand_placeholders("DatagramPort @ADDRESS@:@DATAGRAMPORT@", "10.77.0.6",
                                      9001, 9002) == "DatagramPort 10.77.0.6:9002"
    assert config.expand_placeholders("X @ORPORT@ @ORPORT@", "a", 1, 2) == "X 1 1"
    assert config.expand_placeholders("MiddleNodes m", "a", 1, 2) == "MiddleNodes m"


def write(tmp_path, h, ip="10.77.0.10"):
    d = tmp_path / h.name
    d.mkdir()
    info = {"dir": str(d), "ip": ip}
    run_ = types.SimpleNamespace(runid="abc123")
    path = network.write_torrc(run_, h, info, ["DirAuthority auth orport=9001 x"], ["x"],
                               "open")
    with open(path) as f:
        return f.read().splitlines(), info


def test_write_torrc_relay_client(tmp_path):
    cfg = load(tmp_path, NET + "relay = true\ntorrc = ['CircuitTransport backtap', "
                               "'DatagramPort @ADDRESS@:@DATAGRAMPORT@']\n")
    lines, info = write(tmp_path, hosts_by_name(cfg)["c"])
    for want in ("TestingTorNetwork 1", "SocksPort 127.0.0.1:9050", "Address 10.77.0.10",
                 "ORPort 10.77.0.10:9001", "PublishServerDescriptor 0", "ExitRelay 0",
                 "ExitPolicy reject *:*", "ControlPort 127.0.0.1:9051",
                 "CookieAuthentication 1", "DatagramPort 10.77.0.10:9002",
                 "CircuitTransport backtap", "DirAuthority auth orport=9001 x"):
        assert want in lines, want
    assert not any("@" in l for l in lines)
    assert info["ports"] == {"socks": 9050, "or": 9001, "control": 9051, "datagram": 9002}


def test_write_torrc_relay_placeholders(tmp_path):
    cfg = load(tmp_path, NET)
    h = hosts_by_name(cfg)
    lines, info = write(tmp_path, h["g"], ip="10.77.0.6")
    assert "DatagramPort 10.77.0.6:9002" in lines and "ORPort 10.77.0.6:9001" in lines
    assert info["ports"] == {"or": 9001, "datagram": 9002}
    lines, info = write(tmp_path, h["x"], ip="10.77.0.14")
    assert "Nickname2 9001" in lines and "DatagramPort 0" in lines
    assert info["ports"] == {"or": 9001}
    # a plain pctor client: no ORPort, no ControlPort
    lines, info = write(tmp_path, h["c"])
    assert not any(l.startswith(("ORPort", "ControlPort", "Address")) for l in lines)
    assert info["ports"] == {"socks": 9050}


@pytest.mark.parametrize("name", ["backtap", "backtap-webbulk"])
def test_backtap_experiments(top, tmp_path, name):
    exp = definition.load_experiment(os.path.join(top, "scripts", "experiments",
                                                  f"{name}.toml"))
    names = [c["name"] for c in exp["configs"]]
    assert {"vanilla", "vegas", "pctcp", "backtap"} <= set(names)
    for c in exp["configs"]:
        p = tmp_path / f"{c['name']}.toml"
        p.write_text(definition.testbed_toml(exp, c, 3))
        tb = config.load_config(str(p))
        clients = [h for h in tb["hosts"] if h.role == "client"]
        assert clients and all(h.relay for h in clients)
        auth = next(h for h in tb["hosts"] if h.role == "authority")
        cc = [l for l in auth.torrc if l.startswith("ConsensusParams")]
        assert cc == ["ConsensusParams cc_alg=0" if c["name"].startswith("vanilla")
                      else "ConsensusParams cc_alg=2 cc_sendme_inc=31"]
        for h in tb["hosts"]:
            if h.binary != "pctor":
                continue
            transport = [l for l in h.torrc if l.startswith("CircuitTransport")]
            if c["name"].startswith("backtap"):
                # every pctor host, the clients included, is BackTap with a DatagramPort
                assert transport == ["CircuitTransport backtap"] and h.has_datagram_port()
            else:
                assert not h.has_datagram_port()
                want = ["CircuitTransport pctcp"] if c["name"].startswith("pctcp") and \
                    h.role in ("relay", "exit") else []
                assert transport == want


def test_backtap_rtt_configs(top):
    exp = definition.load_experiment(os.path.join(top, "scripts", "experiments",
                                                  "backtap.toml"))
    by = {c["name"]: c for c in exp["configs"]}
    hosts = [h["name"] for h in exp["network"]["hosts"]]
    for n in ("vanilla", "vegas", "pctcp", "backtap"):
        assert by[n]["links"] == {}
        # every host, the server included, gets 20 ms at 320 ms RTT
        assert by[f"{n}-320"]["links"] == {h: {"delay_ms": 20} for h in hosts}


def test_circuit_ids():
    reply = ["250+circuit-status=",
             "3 BUILT $AAAA~g,$BBBB~m,$CCCC~x PURPOSE=GENERAL",
             "7 EXTENDED $AAAA~g PURPOSE=GENERAL",
             "9 FAILED $AAAA~g",
             "250 OK"]
    assert network.circuit_ids(reply) == ["3", "7"]
    assert network.circuit_ids(["250-circuit-status=12 LAUNCHED PURPOSE=GENERAL",
                                "250 OK"]) == ["12"]
    assert network.circuit_ids(["250-circuit-status=", "250 OK"]) == []


def test_datagram_link_up_line():
    m = network.DGRAM_UP.search("Nov 27 16:00:00.000 [notice] Datagram link 10.77.0.6:9002 "
                                "(we opened, ed25519 0123456789abcdef...) is up: DTLSv1.2, "
                                "peer authenticated")
    assert m and m.group(1) == "10.77.0.6:9002"
    m = network.DGRAM_UP.search("[notice] Datagram link 10.77.0.6:9002 is up: x")
    assert m and m.group(1) == "10.77.0.6:9002"
    assert not network.DGRAM_UP.search("[notice] Datagram link 10.77.0.6:9002 (we opened, "
                                       "ed25519 0123...) closed: set-up timed out")


def test_dtls_interference_real_transports(top, tmp_path):
    exp = definition.load_experiment(os.path.join(top, "scripts", "experiments",
                                                  "dtls-interference.toml"))
    by = {c["name"]: c for c in exp["configs"]}
    loss = {n: [p["loss_pct"] for p in c["pairs"]] for n, c in by.items()}
    assert loss["shared-loss"] == loss["dtcp-loss"] == loss["pctcp-ipsec-loss"] == [1]
    assert loss["shared-loss01"] == loss["pctcp-loss01"] == loss["dtcp-loss01"] == [0.1]
    assert by["dtcp-loss01"]["baseline"] == "shared-loss01"
    for name in ("dtcp", "dtcp-loss", "dtcp-loss01", "pctcp-ipsec"):
        p = tmp_path / f"{name}.toml"
        p.write_text(definition.testbed_toml(exp, by[name], 1))
        tb = config.load_config(str(p))
        relays = [h for h in tb["hosts"] if h.role in ("relay", "exit")]
        assert len(relays) == 6
        for h in relays:
            if name.startswith("dtcp"):
                assert "CircuitTransport dtls-tcp" in h.torrc and h.has_datagram_port()
                assert not h.ipsec
            else:
                assert "PerCircuitTCPRequireIPsec 1" in h.torrc and h.ipsec
                assert not h.has_datagram_port()


def test_datagram_transport(tmp_path):
    h = hosts_by_name(load(tmp_path, NET))
    assert h["g"].datagram_transport() == "backtap"
    assert h["x"].datagram_transport() is None and h["auth"].datagram_transport() is None
    cfg = load(tmp_path, NET.replace("CircuitTransport backtap", "CircuitTransport pctcp"))
    assert hosts_by_name(cfg)["g"].datagram_transport() is None


def test_write_torrc_client_control(tmp_path):
    # a plain pctor client gets a ControlPort when relays carry hops over
    # datagram links (the test bed closes its first circuits through it)
    c = hosts_by_name(load(tmp_path, NET))["c"]
    d = tmp_path / "c"
    d.mkdir()
    info = {"dir": str(d), "ip": "10.77.0.10"}
    path = network.write_torrc(types.SimpleNamespace(runid="abc123"), c, info,
                               ["DirAuthority auth orport=9001 x"], ["x"], "open",
                               control=True)
    lines = open(path).read().splitlines()
    assert "ControlPort 127.0.0.1:9051" in lines and "CookieAuthentication 1" in lines
    assert not any(l.startswith(("ORPort", "Address")) for l in lines)
    assert info["ports"] == {"socks": 9050, "control": 9051}


def test_datagram_links_up(tmp_path):
    log = tmp_path / "notice.log"
    log.write_text("[notice] Datagram link 10.77.0.6:9002 (we opened, ed25519 01...) is up: x\n"
                   "[notice] Datagram link 10.77.0.7:9002 (we opened, ed25519 02...) closed\n"
                   "[notice] Datagram link 10.77.0.8:9002 is up: y\n")
    assert network.datagram_links_up(str(log)) == {"10.77.0.6", "10.77.0.8"}
    assert network.datagram_links_up(str(tmp_path / "none")) == set()


def test_ipsec_sas_up(tmp_path):
    log = tmp_path / "notice.log"
    log.write_text("[notice] IPsec SA with relay $zd+Zy/euSpDYxi5PpME at 10.77.0.18: x\n"
                   "[notice] IPsec SA with relay $9Uw8/vbPM (10.77.0.10:9001) is up (6660.1 ms "
                   "after a circuit first needed it): per-circuit connections ...\n"
                   "[notice] IPsec SA with relay $3ifj/CwSY (10.77.0.6:9001) is up: per-circuit\n"
                   "[notice] IPsec SA with relay $55Rw/dX0 is down: new circuits to it share\n")
    assert network.ipsec_sas_up(str(log)) == {"10.77.0.10", "10.77.0.6"}
