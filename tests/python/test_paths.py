# SPDX-License-Identifier: BSD-3-Clause
# test_paths.py -- paired paths (pctor_lab.paths): the drawing is
# deterministic for a seed and loop, bandwidth-weighted, puts only guards
# first and exits last on three distinct relays, does not depend on the
# other loops; the flag check against a consensus; the definition option
# adds a ControlPort to pctor clients; the CIRC path parser.
import collections
import os
import tomllib

import pytest

from pctor_lab import definition, paths

RELAYS = [
    {"name": "r1", "bw": 4e6, "guard": True, "exit": False},
    {"name": "r2", "bw": 8e6, "guard": True, "exit": False},
    {"name": "r3", "bw": 12e6, "guard": True, "exit": False},
    {"name": "r4", "bw": 20e6, "guard": True, "exit": False},
    {"name": "x1", "bw": 6e6, "guard": False, "exit": True},
    {"name": "x2", "bw": 16e6, "guard": False, "exit": True},
]
LOOPS = [f"web-webc-{i}" for i in range(18)] + ["bulk-bulkc-0", "bulk-bulkc-1"]


def test_deterministic_per_seed():
    a = paths.draw_paths(RELAYS, LOOPS, 1)
    assert a == paths.draw_paths(RELAYS, LOOPS, 1)
    assert a != paths.draw_paths(RELAYS, LOOPS, 2)
    # a loop's path does not depend on which other loops there are
    one = paths.draw_paths(RELAYS, ["bulk-bulkc-1"], 1)
    assert one["bulk-bulkc-1"] == a["bulk-bulkc-1"]


def test_valid_positions():
    guards = {r["name"] for r in RELAYS if r["guard"]}
    exits = {r["name"] for r in RELAYS if r["exit"]}
    for seed in range(1, 30):
        for loop, (g, m, x) in paths.draw_paths(RELAYS, LOOPS, seed).items():
            assert g in guards and x in exits and m not in exits, (loop, g, m, x)
            assert len({g, m, x}) == 3


def test_bandwidth_weighted():
    n = collections.Counter()
    loops = [f"l{i}" for i in range(6000)]
    for g, m, x in paths.draw_paths(RELAYS, loops, 7).values():
        n[("exit", x)] += 1
        n[("guard", g)] += 1
    # exits 6:16 -> 27% / 73%
    assert abs(n[("exit", "x1")] / 6000 - 6 / 22) < 0.03
    # guards 4:8:12:20 -> r4 most, r1 least, in the ratio of capacities
    share = {r: n[("guard", r)] / 6000 for r in ("r1", "r2", "r3", "r4")}
    assert share["r4"] > share["r3"] > share["r2"] > share["r1"]
    assert abs(share["r4"] / share["r1"] - 5.0) < 1.0


def test_refusals():
    with pytest.raises(paths.TestbedError):
        paths.draw_paths([r for r in RELAYS if not r["exit"]], ["a"], 1)
    with pytest.raises(paths.TestbedError):
        paths.draw_paths([RELAYS[0], RELAYS[4]], ["a"], 1)
    # an exit is a middle only when no other relay is left
    assert paths.draw_paths([RELAYS[0], RELAYS[4], RELAYS[5]], ["a"], 1)["a"][0] == "r1"


def test_flag_check():
    fps = {r["name"]: f"{i:040X}" for i, r in enumerate(RELAYS)}
    good = {fps[r["name"]]: ["Running", "Valid"] + (["Guard"] if r["guard"] else [])
            + (["Exit"] if r["exit"] else []) for r in RELAYS}
    drawn = paths.draw_paths(RELAYS, LOOPS, 3)
    assert paths.check_flags(drawn, fps, good) == []
    bad = dict(good)
    bad[fps["x2"]] = ["Running", "Valid"]
    probs = paths.check_flags(drawn, fps, bad)
    assert probs and all("x2 lacks Exit" in p for p in probs)


def test_circ_path_names():
    by_fp = {"AA" * 20: "r1", "BB" * 20: "r2"}
    assert paths._path_names(f"${'AA' * 20}~r1,${'BB' * 20}~r2,$" + "CC" * 20, by_fp) == \
        ("r1", "r2", "CC" * 20)


def test_webbulk_definition(top):
    f = os.path.join(top, "scripts", "experiments", "pctcp-webbulk.toml")
    exp = definition.load_experiment(f)
    assert exp["paired_paths"] is True
    cands = paths.path_candidates(exp["network"]["hosts"], exp["network"]["defaults"])
    assert {c["name"] for c in cands if c["exit"]} == {"x1", "x2"}
    assert {c["name"]: c["bw"] for c in cands}["r4"] == 20e6
    cfg = next(c for c in exp["configs"] if c["name"] == "pctcp")
    doc = tomllib.loads(definition.testbed_toml(exp, cfg, 1))
    for h in doc["host"]:
        has = any(l.startswith("ControlPort") for l in h.get("torrc", []))
        assert has == (h["role"] == "client"), h["name"]
    assert definition.definition_summary(exp)["paired_paths"] is True
