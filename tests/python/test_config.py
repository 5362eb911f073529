# SPDX-License-Identifier: BSD-3-Clause
# test_config.py -- pctor_lab's test-bed file parser (config.py) and the
# units it uses (common.py): known answers for rates, sizes, the files in
# scripts/testbed/, [[pair]] loss and [[traffic]] entries, and the
# refusals `pctor-testbed check` prints for bad files.
import pytest

from pctor_lab import common, config

BadFile = common.TestbedError   # imported as TestbedError, pytest would collect it


@pytest.mark.parametrize("v,bits", [
    (10, 10_000_000), (0.5, 500_000), ("500kbit", 500_000), ("20mbit", 20_000_000),
    ("1gbit", 1_000_000_000), ("1.5 Mbit", 1_500_000), ("8000bit", 8000),
    ("0", 0), ("unlimited", 0), ("none", 0)])
def test_parse_rate(v, bits):
    assert common.parse_rate(v, "up") == bits


@pytest.mark.parametrize("v,msg", [
    (True, "bad rate"), (-1, "negative rate"), ("10 mbps", "bad rate"), ("7999bit", "below 8"),
    ("101gbit", "above 100"), ([1], "bad rate")])
def test_parse_rate_refused(v, msg):
    with pytest.raises(BadFile, match=msg):
        common.parse_rate(v, "up")


@pytest.mark.parametrize("v,n", [
    (1000, 1000), ("1000", 1000), ("320KiB", 320 * 1024), ("5MiB", 5 << 20), ("2k", 2048),
    ("1 G", 1 << 30), ("4GiB", 1 << 32), ("7B", 7)])
def test_parse_size(v, n):
    assert common.parse_size(v, "file") == n


@pytest.mark.parametrize("v", [0, -5, True, "0", "5GiB", "1.5MiB", "5 MB", "", None, 2.0])
def test_parse_size_refused(v):
    with pytest.raises(BadFile, match="bad size"):
        common.parse_size(v, "file")


@pytest.mark.parametrize("bits,text", [
    (0, "unlimited"), (1_000_000_000, "1gbit"), (1_500_000_000, "1500mbit"),
    (20_000_000, "20mbit"), (500_000, "500kbit")])
def test_fmt_rate(bits, text):
    assert common.fmt_rate(bits) == text


def test_tiny_toml(top):
    cfg = config.load_config(f"{top}/scripts/testbed/tiny.toml")
    assert cfg["name"] == "tiny" and cfg["congestion_control"] == "cubic"
    assert cfg["queue_ms"] == 100.0 and cfg["exit_policy"] == "open"
    a, b, c = cfg["hosts"]
    assert [h.name for h in (a, b, c)] == ["a", "b", "c"]
    assert [h.index for h in (a, b, c)] == [0, 1, 2]
    assert a.link == {"up": 10_000_000, "down": 20_000_000, "delay_up": 10.0,
                      "delay_down": 10.0, "jitter_up": 0.0, "jitter_down": 0.0,
                      "loss_up": 0.0, "loss_down": 0.0}
    # jitter_ms and loss_pct apply to both directions, loss_up_pct to one
    assert (b.link["jitter_up"], b.link["jitter_down"]) == (2.0, 2.0)
    assert (b.link["loss_up"], b.link["loss_down"]) == (1.0, 1.0)
    assert (c.link["loss_up"], c.link["loss_down"]) == (5.0, 0.0)
    assert cfg["pairs"] == [{"a": "a", "b": "b", "loss_ab": 2.0, "loss_ba": 0.0}]


def test_small_toml(top):
    cfg = config.load_config(f"{top}/scripts/testbed/small.toml")
    roles = {}
    for h in cfg["hosts"]:
        roles.setdefault(h.role, []).append(h.name)
    assert len(cfg["hosts"]) == 11
    assert roles["authority"] == ["auth1", "auth2", "auth3"]
    assert roles["client"] == ["client1", "client2"]
    web = next(h for h in cfg["hosts"] if h.name == "web")
    assert sorted(web.files.values()) == [320 * 1024, 1 << 20, 5 << 20]
    assert [(t["client"], t["model"], t["size"]) for t in cfg["traffic"]] == \
        [("client1", "web", 327680), ("client2", "bulk", 5242880)]


def test_pair_loss():
    pairs = [{"a": "x", "b": "y", "loss_ab": 10.0, "loss_ba": 0.0},
             {"a": "y", "b": "x", "loss_ab": 20.0, "loss_ba": 50.0}]
    # x->y: kept 0.9 * 0.5 of the packets; y->x: 0.8
    assert config.pair_loss(pairs, "x", "y") == pytest.approx(55.0)
    assert config.pair_loss(pairs, "y", "x") == pytest.approx(20.0)
    assert config.pair_loss(pairs, "x", "z") == 0


HOST = '[[host]]\nname = "h1"\n'
AUTH = '[[host]]\nname = "auth"\nrole = "authority"\n'


@pytest.mark.parametrize("body,msg", [
    ("[testbed]\nname = 'x'\n[bogus]\n" + HOST, r"unknown section \[bogus\]"),
    ("[testbed]\nname = 'x'\ncolour = 1\n" + HOST, "unknown key testbed.colour"),
    ("[testbed]\nname = 'x y'\n" + HOST, "testbed.name must be"),
    ("[testbed]\nname = 'x'\ncongestion_control = 'vegas'\n" + HOST,
     "congestion_control must be cubic, reno or bbr"),
    ("[testbed]\nname = 'x'\n", r"no \[\[host\]\] entries"),
    ("[testbed]\nname = 'x'\n" + HOST + "up = '10 furlongs'\n", "bad rate"),
    ("[testbed]\nname = 'x'\n" + HOST + "hue = 1\n", "unknown key 'hue'"),
    ("[testbed]\nname = 'x'\n" + HOST + "role = 'king'\n", "role must be one of"),
    ("[testbed]\nname = 'x'\n" + HOST + HOST, "host name 'h1' is used twice"),
    ("[testbed]\nname = 'x'\n[[host]]\nname = 'core'\n", "host name 'core' is reserved"),
    ("[testbed]\nname = 'x'\n" + AUTH + "binary = 'pctor'\n", "authorities run tor"),
    ("[testbed]\nname = 'x'\n" + AUTH + "torrc = ['TestingTorNetwork 0']\n",
     "torrc may not set TestingTorNetwork"),
    ("[testbed]\nname = 'x'\n" + AUTH + "torrc = ['DirAuthority x']\n",
     "torrc may not set DirAuthority"),
    ("[testbed]\nname = 'x'\n" + HOST + "torrc = ['Log notice']\n",
     "torrc lines need a tor role"),
    ("[testbed]\nname = 'x'\n" + HOST + "files = ['1MiB']\n", "files only for role 'server'"),
    ("[testbed]\nname = 'x'\n" + HOST + "count = 0\n", "count must be 1..256"),
    ("[testbed]\nname = 'x'\n[[host]]\nname = 'r'\nrole = 'relay'\n",
     "need at least one authority"),
    ("[testbed]\nname = 'x'\n" + AUTH + "[[host]]\nname = 'c'\nrole = 'client'\n",
     "clients need at least one exit"),
    ("[testbed]\nname = 'x'\n" + HOST + "[[traffic]]\nclient = 'nobody'\n",
     "names 'nobody'"),
    ("[testbed\n", "Expected"),
])
def test_refused(tmp_path, body, msg):
    p = tmp_path / "bad.toml"
    p.write_text(body)
    with pytest.raises(BadFile, match=msg):
        config.load_config(str(p))


def test_unreadable(tmp_path):
    with pytest.raises(BadFile, match="cannot read"):
        config.load_config(str(tmp_path / "missing.toml"))


def test_count_expands_names(tmp_path):
    p = tmp_path / "g.toml"
    p.write_text("[testbed]\nname = 'g'\n[[host]]\nname = 'h'\ncount = 3\nup = 5\n")
    cfg = config.load_config(str(p))
    assert [h.name for h in cfg["hosts"]] == ["h1", "h2", "h3"]
    assert all(h.link["up"] == 5_000_000 for h in cfg["hosts"])
