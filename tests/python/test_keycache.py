# SPDX-License-Identifier: BSD-3-Clause
# test_keycache.py -- the Shadow engine's key cache (pctor_lab/keycache.py)
# and its use by scripts/pctor-shadow's compile step, without Shadow: an
# entry is made once and reused, a change of any dependency (or of the
# cache format) gives a new entry, a broken or incomplete entry is made
# again, a failing generator leaves nothing behind; compiling a network
# twice keys it once (stand-ins for tor, tor-gencert, pctor and faketime
# count their calls), gives the same fingerprints and key files, and a
# new generator version or authority address makes only what depends on it.
import importlib.machinery
import importlib.util
import json
import os
import sys

import pytest

from pctor_lab import keycache

DEPS = {"name": "relay1", "binary": "pctor", "version": "pctor 0.1.0-dev"}
FILES = ["keys/a", "fingerprint"]


class Maker:
    """A make(tmpdir) that writes FILES and counts its calls."""

    def __init__(self, files=FILES, fail=False):
        self.calls, self.files, self.fail = 0, files, fail

    def __call__(self, tmp):
        self.calls += 1
        for f in self.files:
            os.makedirs(os.path.dirname(os.path.join(tmp, f)), exist_ok=True)
            with open(os.path.join(tmp, f), "w") as fh:
                fh.write(f"{f} {self.calls}\n")
        if self.fail:
            raise RuntimeError("generator broke")


def test_made_once_then_reused(tmp_path):
    m = Maker()
    d1, made1 = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    d2, made2 = keycache.get("relay", "relay1", dict(DEPS), FILES, m, root=str(tmp_path))
    assert (made1, made2, m.calls) == (True, False, 1)
    assert d1 == d2 and d1.startswith(os.path.join(str(tmp_path), "relay", "relay1-"))
    assert open(os.path.join(d1, "keys/a")).read() == "keys/a 1\n"
    with open(os.path.join(d1, "deps.json")) as f:
        assert json.load(f) == dict(DEPS, format=keycache.FORMAT)
    assert not [n for n in os.listdir(os.path.dirname(d1)) if n.startswith(".tmp")]


@pytest.mark.parametrize("change", [{"version": "pctor 0.2.0"}, {"binary": "tor"},
                                    {"cert_date": "1999-12-31 13:00:00"}])
def test_dependency_change_gives_new_entry(tmp_path, change):
    m = Maker()
    d1, _ = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    d2, made = keycache.get("relay", "relay1", dict(DEPS, **change), FILES, m,
                            root=str(tmp_path))
    assert made and d1 != d2 and m.calls == 2
    assert os.path.isdir(d1)   # the old entry is left for runs that still want it
    d3, made = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    assert (d3, made, m.calls) == (d1, False, 2)


def test_format_change_invalidates(tmp_path, monkeypatch):
    m = Maker()
    d1, _ = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    monkeypatch.setattr(keycache, "FORMAT", keycache.FORMAT + 1)
    d2, made = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    assert made and d2 != d1 and m.calls == 2


@pytest.mark.parametrize("damage", ["remove", "empty", "deps", "nodeps"])
def test_broken_entry_made_again(tmp_path, damage):
    m = Maker()
    d, _ = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    if damage == "remove":
        os.unlink(os.path.join(d, "keys/a"))
    elif damage == "empty":
        open(os.path.join(d, "fingerprint"), "w").close()
    elif damage == "deps":
        with open(os.path.join(d, "deps.json"), "w") as f:
            json.dump(dict(DEPS, version="other"), f)
    else:
        os.unlink(os.path.join(d, "deps.json"))
    d2, made = keycache.get("relay", "relay1", DEPS, FILES, m, root=str(tmp_path))
    assert (d2, made, m.calls) == (d, True, 2)
    assert open(os.path.join(d, "keys/a")).read() == "keys/a 2\n"


def test_failing_generator_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError, match="generator broke"):
        keycache.get("relay", "relay1", DEPS, FILES, Maker(fail=True), root=str(tmp_path))
    with pytest.raises(keycache.KeyCacheError, match="left no fingerprint"):
        keycache.get("relay", "relay1", DEPS, FILES, Maker(files=["keys/a"]),
                     root=str(tmp_path))
    assert os.listdir(os.path.join(str(tmp_path), "relay")) == []
    assert keycache.entries(str(tmp_path)) == []


def test_bad_names_refused(tmp_path):
    for kind, name in (("relay", "../x"), ("relay", ".hidden"), ("relay", ""),
                       ("client", "c")):
        with pytest.raises(keycache.KeyCacheError):
            keycache.get(kind, name, DEPS, FILES, Maker(), root=str(tmp_path))


def test_location_entries_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("PCTOR_SHADOW_CACHE", str(tmp_path / "c"))
    assert keycache.cache_root() == str(tmp_path / "c")
    monkeypatch.delenv("PCTOR_SHADOW_CACHE")
    assert keycache.cache_root() == os.path.expanduser("~/.cache/pctor-shadow")
    root = str(tmp_path / "c")
    keycache.get("relay", "relay1", DEPS, FILES, Maker(), root=root)
    keycache.get("authority", "auth", {"name": "auth", "ip": "11.0.0.1"}, FILES, Maker(),
                 root=root)
    os.makedirs(os.path.join(root, "relay", "relay9-broken"))
    got = {(k, n.rsplit("-", 1)[0], (d or {}).get("name")) for k, n, d in
           keycache.entries(root)}
    assert got == {("authority", "auth", "auth"), ("relay", "relay1", "relay1"),
                   ("relay", "relay9", None)}
    assert keycache.clear(root) == 3
    assert keycache.entries(root) == [] and os.path.isdir(root)


# -- pctor-shadow's compile step with stand-in binaries ---------------------

FAKE = r'''#!PYTHON
# stand-in for tor, pctor, tor-gencert and faketime: logs its calls
import os, sys, hashlib
prog = os.path.basename(sys.argv[0])
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(prog + " " + " ".join(sys.argv[1:]) + "\n")
if prog == "faketime":
    os.execv(sys.argv[2], sys.argv[2:])
if "--version" in sys.argv:
    print(os.environ.get("FAKE_VERSION_" + prog.replace("-", "_"), prog + " 1.0"))
    sys.exit(0)
if prog == "tor-gencert":
    fp = hashlib.sha1(os.getcwd().encode() + os.urandom(8)).hexdigest().upper()
    for n in ("authority_identity_key", "authority_signing_key"):
        open(n, "w").write("key\n")
    open("authority_certificate", "w").write("dir-key-certificate-version 3\nfingerprint %s\n" % fp)
    sys.exit(0)
torrc = sys.argv[sys.argv.index("-f") + 1]
conf = dict(l.split(" ", 1) for l in open(torrc).read().splitlines() if " " in l)
data = conf["DataDirectory"]
os.makedirs(os.path.join(data, "keys"), exist_ok=True)
for n in ("secret_id_key", "ed25519_master_id_secret_key", "ed25519_master_id_public_key",
          "ed25519_signing_secret_key", "ed25519_signing_cert", "secret_onion_key_ntor"):
    open(os.path.join(data, "keys", n), "wb").write(os.urandom(32))
fp = hashlib.sha1(open(os.path.join(data, "keys", "secret_id_key"), "rb").read()).hexdigest()
open(os.path.join(data, "fingerprint"), "w").write("%s %s\n" % (conf["Nickname"], fp.upper()))
'''

TESTBED = """
[testbed]
name = "kc"
[defaults]
binary = "pctor"
[[host]]
name = "auth"
role = "authority"
binary = "tor"
[[host]]
name = "{first}"
role = "relay"
[[host]]
name = "r2"
role = "relay"
[[host]]
name = "x1"
role = "exit"
[[host]]
name = "c1"
role = "client"
[[host]]
name = "srv"
role = "server"
files = ["1KiB"]
"""


@pytest.fixture
def shadow_mod(top):
    loader = importlib.machinery.SourceFileLoader(
        "pctor_shadow_t", os.path.join(top, "scripts", "pctor-shadow"))
    spec = importlib.util.spec_from_loader("pctor_shadow_t", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for n in ("tor", "pctor", "tor-gencert", "faketime"):
        p = bindir / n
        p.write_text(FAKE.replace("PYTHON", sys.executable))
        p.chmod(0o755)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("PCTOR_SHADOW_CACHE", str(tmp_path / "cache"))
    bins = {n: str(bindir / n) for n in ("tor", "pctor", "tor-gencert")}

    def calls(what):
        if not log.exists():
            return 0
        return sum(1 for line in log.read_text().splitlines()
                   if line.startswith(what) and "--version" not in line)
    return bins, calls


def compile_once(mod, tmp_path, bins, out, first="r1"):
    tb = tmp_path / f"{out}.toml"
    tb.write_text(TESTBED.format(first=first))
    mod._versions.clear()   # as a fresh run would ask again
    mod.compile_network(str(tb), str(tmp_path / out), bins, 1, 60, dict(mod.DEFAULTS))
    with open(tmp_path / out / "compiled.json") as f:
        return json.load(f)


def test_compile_cpu_pinning(shadow_mod, fakes, tmp_path):
    """Shadow's CPU pinning is off unless [shadow] cpu_pinning = 1: it pins
    from CPU 0 on, so simulations side by side would share one core."""
    bins, _ = fakes
    compile_once(shadow_mod, tmp_path, bins, "run1")
    yaml = (tmp_path / "run1" / "shadow.yaml").read_text()
    assert "experimental:\n  use_cpu_pinning: false\n" in yaml
    tb = tmp_path / "run1.toml"
    shadow_mod.compile_network(str(tb), str(tmp_path / "pin"), bins, 1, 60,
                               dict(shadow_mod.DEFAULTS, cpu_pinning=1))
    assert "  use_cpu_pinning: true\n" in (tmp_path / "pin" / "shadow.yaml").read_text()


def keyfile(tmp_path, out, host, name="secret_id_key"):
    return (tmp_path / out / "template" / "hosts" / host / "data" / "keys" / name).read_bytes()


def test_compile_keys_once(shadow_mod, fakes, tmp_path):
    bins, calls = fakes
    a = compile_once(shadow_mod, tmp_path, bins, "run1")
    assert a["keycache"]["made_authorities"] == 1 and a["keycache"]["made_relays"] == 3
    assert calls("pctor --list-fingerprint") == 3 and calls("tor-gencert") == 1
    # every identity file is placed, onion keys are not
    keys = tmp_path / "run1" / "template" / "hosts" / "x1" / "data" / "keys"
    assert sorted(os.listdir(keys)) == sorted(shadow_mod.RELAY_KEY_FILES)
    assert all(oct(os.stat(keys / n).st_mode & 0o777) == "0o600" for n in os.listdir(keys))
    assert oct(os.stat(keys).st_mode & 0o777) == "0o700"
    # generated under faketime, dated before Shadow's clock starts
    assert f"faketime {shadow_mod.CERT_DATE}" in (tmp_path / "calls.log").read_text()

    b = compile_once(shadow_mod, tmp_path, bins, "run2")
    assert b["keycache"]["made_authorities"] == 0 and b["keycache"]["made_relays"] == 0
    assert calls("pctor --list-fingerprint") == 3 and calls("tor-gencert") == 1
    fps = {h: i.get("fingerprint") for h, i in a["hosts"].items()}
    assert fps == {h: i.get("fingerprint") for h, i in b["hosts"].items()}
    assert all(fps[h] and len(fps[h]) == 40 for h in ("r1", "r2", "x1"))
    assert len({fps["r1"], fps["r2"], fps["x1"]}) == 3
    for h in ("auth", "r1", "x1"):
        assert keyfile(tmp_path, "run1", h) == keyfile(tmp_path, "run2", h)
    torrc = lambda out: (tmp_path / out / "template" / "hosts" / "r1" / "torrc").read_text()
    assert [l for l in torrc("run1").splitlines() if l.startswith("DirAuthority")] == \
           [l for l in torrc("run2").splitlines() if l.startswith("DirAuthority")]


def test_compile_invalidation(shadow_mod, fakes, tmp_path, monkeypatch):
    bins, calls = fakes
    compile_once(shadow_mod, tmp_path, bins, "run1")
    # a new pctor version: the pctor relays are keyed again, the tor authority not
    monkeypatch.setenv("FAKE_VERSION_pctor", "pctor 0.2.0")
    b = compile_once(shadow_mod, tmp_path, bins, "run2")
    assert (b["keycache"]["made_authorities"], b["keycache"]["made_relays"]) == (0, 3)
    assert keyfile(tmp_path, "run1", "r1") != keyfile(tmp_path, "run2", "r1")
    # a renamed relay is a new identity; the others are reused
    c = compile_once(shadow_mod, tmp_path, bins, "run3", first="r9")
    assert (c["keycache"]["made_authorities"], c["keycache"]["made_relays"]) == (0, 1)
    assert keyfile(tmp_path, "run2", "r2") == keyfile(tmp_path, "run3", "r2")
    # a new tor version: the authority is keyed again
    monkeypatch.setenv("FAKE_VERSION_tor", "Tor version 0.4.9.99.")
    d = compile_once(shadow_mod, tmp_path, bins, "run4")
    assert (d["keycache"]["made_authorities"], d["keycache"]["made_relays"]) == (1, 0)
    assert calls("tor-gencert") == 2


def test_compile_measured_bandwidths(shadow_mod, fakes, tmp_path):
    """The authority votes each relay's access-link rate as its measured
    bandwidth (V3BandwidthsFile), dated at Shadow's epoch; relays on
    unshaped links are left unmeasured; [shadow] measured_bandwidths = 0
    turns it off."""
    bins, _ = fakes
    tb = tmp_path / "bw.toml"
    tb.write_text(TESTBED.format(first="r1")
                  .replace('name = "r1"\nrole = "relay"',
                           'name = "r1"\nrole = "relay"\nup = "10mbit"\ndown = "20mbit"')
                  .replace('name = "x1"\nrole = "exit"',
                           'name = "x1"\nrole = "exit"\nup = "8mbit"\ndown = "8mbit"'))
    shadow_mod._versions.clear()
    _, notes = shadow_mod.compile_network(str(tb), str(tmp_path / "on"), bins, 1, 60,
                                          dict(shadow_mod.DEFAULTS))
    # one authority: the consensus will not use them, and the run says so
    assert any("three or more authorities" in n for n in notes)
    with open(tmp_path / "on" / "compiled.json") as f:
        fps = {h: i.get("fingerprint") for h, i in json.load(f)["hosts"].items()}
    auth = tmp_path / "on" / "template" / "hosts" / "auth"
    final = tmp_path / "on" / "shadow.data" / "hosts" / "auth" / "bandwidths"
    assert f"V3BandwidthsFile {final}" in (auth / "torrc").read_text().splitlines()
    lines = (auth / "bandwidths").read_text().splitlines()
    assert lines[0] == str(shadow_mod.SIM_EPOCH)
    assert sorted(lines[1:]) == sorted([f"node_id=${fps['r1']} bw=1250",
                                        f"node_id=${fps['x1']} bw=1000"])
    # only the authority gets it
    assert "V3BandwidthsFile" not in (tmp_path / "on" / "template" / "hosts" / "r1" /
                                      "torrc").read_text()
    _, notes = shadow_mod.compile_network(str(tb), str(tmp_path / "off"), bins, 1, 60,
                                          dict(shadow_mod.DEFAULTS, measured_bandwidths=0))
    auth = tmp_path / "off" / "template" / "hosts" / "auth"
    assert "V3BandwidthsFile" not in (auth / "torrc").read_text()
    assert not (auth / "bandwidths").exists()
    assert not any("consensus weights" in n for n in notes)
    # three authorities: every one votes the file, and the note says measured
    tb.write_text(tb.read_text().replace('name = "auth"\nrole = "authority"',
                                         'name = "auth"\ncount = 3\nrole = "authority"'))
    _, notes = shadow_mod.compile_network(str(tb), str(tmp_path / "three"), bins, 1, 60,
                                          dict(shadow_mod.DEFAULTS))
    assert any(n.startswith("consensus weights: each relay's access-link rate") for n in notes)
    for i in (1, 2, 3):
        auth = tmp_path / "three" / "template" / "hosts" / f"auth{i}"
        assert (auth / "bandwidths").read_text().splitlines()[1:] == lines[1:]
        assert "V3BandwidthsFile" in (auth / "torrc").read_text()
