# SPDX-License-Identifier: BSD-3-Clause
# test_entry_points.py -- scripts/pctor-testbed and pctor-experiment are
# thin entry points over pctor_lab: run as programs (their `check`
# commands need no root), they find the package beside them, print the
# plan, refuse a bad file with their own name and exit status 1, and
# pctor-testbed's plan of tiny.toml is what it has always printed.
import os
import subprocess
import sys

TINY_PLAN = """\
{f}: tiny, 3 hosts, tcp cubic, queue 100 ms, exit policy open
  a            host      -     10.77.0.2/30     up 10mbit down 20mbit delay 10/10 ms jitter 0/0 ms loss 0/0 %
  b            host      -     10.77.0.6/30     up 5mbit down 8mbit delay 25/25 ms jitter 2/2 ms loss 1/1 %
  c            host      -     10.77.0.10/30    up 40mbit down 40mbit delay 2/2 ms jitter 0/0 ms loss 5/0 %
  pair a <> b: loss 2 % (a -> b), 0 % (b -> a)
  6 delay queue(s); addresses shown for slot 0 (a run takes a free slot)
"""


def run(top, script, *args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, os.path.join(top, "scripts", script), *args],
                          capture_output=True, text=True, timeout=60, env=env)


def test_testbed_check(top):
    f = os.path.join(top, "scripts", "testbed", "tiny.toml")
    p = run(top, "pctor-testbed", "check", f)
    assert p.returncode == 0, p.stderr
    assert p.stdout == TINY_PLAN.format(f=f)


def test_testbed_refuses(top, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[testbed]\nname = 'x'\n[[host]]\nname = 'a'\nup = 'fast'\n")
    p = run(top, "pctor-testbed", "check", str(bad))
    assert p.returncode == 1
    assert p.stderr.startswith("pctor-testbed: host 'a'.up: bad rate 'fast'")
    p = run(top, "pctor-testbed", "nonsense")
    assert p.returncode == 2 and "invalid choice: 'nonsense'" in p.stderr


def test_experiment_check(top, tmp_path):
    f = os.path.join(top, "scripts", "experiments", "pctcp-webbulk.toml")
    p = run(top, "pctor-experiment", "check", f)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{f}: pctcp-webbulk -- PerCircuitTCP vs shared connections")
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment]\nname = 'x'\n")
    p = run(top, "pctor-experiment", "check", str(bad))
    assert p.returncode == 1
    assert p.stderr == f"pctor-experiment: {bad}: no [[host]] entries\n"
