# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.common -- what every part of the test bed shares: the fixed
# numbers (address plan, ports, roles, torrc options a test-bed file may not
# set), TestbedError, logging (note/debug, prefixed "pctor-testbed"), running
# commands (in a namespace: nsrun), atomic file writes, /proc identity of a
# process (start time, command line: PIDs are signalled only while they
# still match) and the rate/size units of the test-bed files.
#
# VERBOSE is the one setting changed at run time (pctor-testbed -v sets
# common.VERBOSE); everything else here is constant.

import os
import re
import subprocess
import sys


PROG = "pctor-testbed"
# The directory of the scripts (pctor-testbed, pctor-experiment, pctor-charon):
# the package sits beside them, in the source tree and installed.
SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the experiments' web server (a standalone file, so Shadow can run it by path)
WEBSERVER = os.path.join(SCRIPTS_DIR, "pctor_lab", "webserver.py")
REGISTRY = os.environ.get("PCTOR_TESTBED_REGISTRY", "/run/pctor-testbed")
NETNS_DIR = "/run/netns"
NET_PREFIX = "10.77"
SLOT_COUNT = 256
HOSTS_PER_SLOT = 64
ORPORT, DIRPORT, SOCKSPORT, CONTROLPORT, HTTPPORT = 9001, 9030, 9050, 9051, 80
DATAGRAMPORT = 9002   # UDP, for pctor's DatagramPort (doc/dgram.md)
# Placeholders a test-bed file's torrc lines may use; write_torrc replaces
# them with the host's own values (e.g. "DatagramPort @ADDRESS@:@DATAGRAMPORT@").
# @ORPORT@ only on hosts that have an ORPort (relays, and clients with
# relay = true).
PLACEHOLDERS = ("@ADDRESS@", "@ORPORT@", "@DATAGRAMPORT@")
UPQ_BASE, DOWNQ_BASE = 10000, 20000
ROLES = ("authority", "relay", "exit", "client", "server", "host")
TOR_ROLES = ("authority", "relay", "exit", "client")
RESERVED_NAMES = ("core", "probe")
FORBIDDEN_TORRC = ("dirauthority", "alternatedirauthority", "alternatebridgeauthority",
                   "fallbackdir", "testingtornetwork", "usedefaultfallbackdirs",
                   "serverdnsresolvconffile", "serverdnsdetecthijacking",
                   "datadirectory", "ipsec", "ipsecvicisocket", "ipsecupdown")

VERBOSE = False


class TestbedError(Exception):
    pass


def note(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def debug(msg):
    if VERBOSE:
        note(msg)


# --------------------------------------------------------------------------
# small helpers

def run(argv, check=True, input=None, capture=True, timeout=60):
    """Run a command; raise TestbedError with its output when it fails."""
    debug("run: " + " ".join(argv))
    try:
        p = subprocess.run(argv, input=input, capture_output=capture, text=True,
                           timeout=timeout)
    except FileNotFoundError:
        raise TestbedError(f"'{argv[0]}' not found")
    except subprocess.TimeoutExpired:
        raise TestbedError(f"timed out: {' '.join(argv)}")
    if check and p.returncode != 0:
        out = ((p.stdout or "") + (p.stderr or "")).strip()
        raise TestbedError(f"failed ({p.returncode}): {' '.join(argv)}: {out}")
    return p


def nsrun(ns, argv, **kw):
    return run(["ip", "netns", "exec", ns] + argv, **kw)


def atomic_write(path, text, mode=0o644):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def proc_starttime(pid):
    """Start time (clock ticks) of a live, non-zombie process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2:].split()
    if not rest or rest[0] in ("Z", "X"):
        return None
    return int(rest[19])


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def parse_rate(v, what):
    """Rate in bit/s from a number (Mbit/s) or a string like '10mbit'.
    0, 'unlimited' or 'none' mean no shaping."""
    if isinstance(v, bool):
        raise TestbedError(f"{what}: bad rate {v!r}")
    if isinstance(v, (int, float)):
        if v < 0:
            raise TestbedError(f"{what}: negative rate")
        return int(round(v * 1e6))
    if not isinstance(v, str):
        raise TestbedError(f"{what}: bad rate {v!r}")
    s = v.strip().lower()
    if s in ("0", "unlimited", "none"):
        return 0
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*(bit|kbit|mbit|gbit)", s)
    if not m:
        raise TestbedError(f"{what}: bad rate {v!r} (use e.g. '500kbit', '20mbit', "
                           f"'1gbit', a number of Mbit/s, or 'unlimited')")
    mult = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)]
    bits = int(round(float(m.group(1)) * mult))
    if bits and bits < 8000:
        raise TestbedError(f"{what}: rate below 8 kbit/s")
    if bits > 100e9:
        raise TestbedError(f"{what}: rate above 100 gbit/s")
    return bits


def parse_size(v, what):
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"([0-9]+)\s*(B|KiB|MiB|GiB|k|K|M|G)?", v.strip())
        if m:
            mult = {None: 1, "B": 1, "KiB": 1024, "k": 1024, "K": 1024, "MiB": 1 << 20,
                    "M": 1 << 20, "GiB": 1 << 30, "G": 1 << 30}[m.group(2)]
            n = int(m.group(1)) * mult
            if 0 < n <= (1 << 32):
                return n
    raise TestbedError(f"{what}: bad size {v!r} (e.g. 320KiB, 5MiB, 1000)")


def fmt_rate(bits):
    if not bits:
        return "unlimited"
    if bits >= 1e9 and bits % 1e9 == 0:
        return f"{bits / 1e9:g}gbit"
    if bits >= 1e6:
        return f"{bits / 1e6:g}mbit"
    return f"{bits / 1e3:g}kbit"


def hex_to_b64(h):
    import base64
    return base64.b64encode(bytes.fromhex(h)).decode().rstrip("=")


def tail(path, n=10):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
        return "".join(lines[-n:]).rstrip()
    except OSError:
        return "(no log)"
