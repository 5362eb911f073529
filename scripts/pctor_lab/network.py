# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.network -- the Tor network and its daemons: finding the
# binaries, keys and torrcs, starting authorities, relays, exits, clients,
# charon and the web servers, and waiting until the network works.
#
# - Tor: real tor 0.4.9 authorities (keys from tor-gencert and
#   tor --list-fingerprint, as scripts/pctor-privnet does), tor or pctor
#   relays/exits/clients, and HTTP servers (pctor_lab/webserver.py) serving
#   random files whose sha256 is recorded. Every tor/pctor torrc has
#   TestingTorNetwork 1 and the run's own DirAuthority lines only; extra
#   torrc lines from the TOML may not change either. Exits resolve names
#   only through 127.0.0.1 of their own namespace (ServerDNSDetectHijacking
#   0). Their policy (testbed.exit_policy) is "open" by default, so that its
#   summary lets microdescriptor clients (tor's default) use them; traffic
#   cannot leave anyway: no namespace has a route out of 10.77.0.0/16 and
#   core's forward chain drops anything addressed elsewhere (and all IPv6).
#   "private" accepts only 10.77.0.0/16 (then tor clients get
#   UseMicrodescriptors 0 and pctor clients ExitNodes). Clients are started
#   once the consensus lists every relay; `up` returns when every client
#   has carried a test request through a circuit.
# - IPsec: a pctor relay or exit with `ipsec = true` gets its own charon
#   (kernel-libipsec, started with scripts/pctor-charon in the host's
#   namespace before the relays), ipsec-conf/nftables-pctor-ipsec.nft, and
#   the torrc lines IPsec 1 and IPsecVICISocket (pctor-charon runs
#   ipsec-conf/pctor-updown for the SAs); pctor sets up the SAs itself
#   (scripts/testbed/ipsec.toml).
# - new_run/undo_on_failure: a run's directory and state, and undoing a
#   half-built run on an error or a signal (see netns.py, Run).

import contextlib
import hashlib
import http.client
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time

from .common import (CONTROLPORT, DATAGRAMPORT, DIRPORT, HOSTS_PER_SLOT, HTTPPORT, NETNS_DIR,
                     NET_PREFIX, ORPORT, PROG, SCRIPTS_DIR, SOCKSPORT, WEBSERVER, TestbedError,
                     atomic_write, debug, hex_to_b64, note, nsrun, tail)
from .config import expand_placeholders
from .control import ControlConnection
from .netns import Run, allocate_slots, http_get_ns, ns_connect, recv_http_head, socks5_open


# --------------------------------------------------------------------------
# binaries

def find_binaries(args, need_tor, need_pctor, need_delayd, need_ipsec=False):
    out = {}

    def which(p):
        if not p:
            return None
        if os.sep in p:
            return os.path.abspath(p) if os.access(p, os.X_OK) else None
        return shutil.which(p)

    bd = args.builddir
    if not bd and os.path.exists("src/app/pctor"):
        bd = "."   # run from a build directory
    if need_tor:
        t = args.tor or os.environ.get("TOR")
        out["tor"] = which(t if t and t != "no" else "tor")
        if not out["tor"]:
            raise TestbedError("tor not found (apt-get install tor, or --tor PATH)")
        gencert = args.tor_gencert or os.path.join(os.path.dirname(out["tor"]), "tor-gencert")
        out["tor-gencert"] = which(gencert) or which("tor-gencert")
        if not out["tor-gencert"]:
            raise TestbedError("tor-gencert not found (it comes with Debian's tor package)")
    if need_pctor:
        cand = [args.pctor] if args.pctor else (
            ([os.path.join(bd, "src/app/pctor")] if bd else []) + ["pctor"])
        out["pctor"] = next((w for w in map(which, cand) if w), None)
        if not out["pctor"]:
            raise TestbedError("pctor not found (give --builddir DIR or --pctor PATH)")
    if need_delayd:
        cand = [args.delayd] if args.delayd else (
            ([os.path.join(bd, "src/tools/delayd/pctor-delayd")] if bd else [])
            + ["pctor-delayd"])
        out["delayd"] = next((w for w in map(which, cand) if w), None)
    if need_ipsec:
        find_ipsec(out, bd, which)
    return out


def find_ipsec(out, bd, which):
    """charon, its kernel-libipsec plugin, scripts/pctor-charon, and
    ipsec-conf/ (pctor-updown, the nftables filter): what hosts with
    ipsec = true need. Errors name the package to install."""
    out["charon"] = which(os.environ.get("CHARON") or "/usr/lib/ipsec/charon")
    if not out["charon"]:
        raise TestbedError("charon not found (apt-get install strongswan-charon, or $CHARON)")
    plugin_dir = os.path.join(os.path.dirname(out["charon"]), "plugins")
    if not os.path.exists(os.path.join(plugin_dir, "libstrongswan-kernel-libipsec.so")):
        raise TestbedError("charon's kernel-libipsec plugin is missing "
                           "(apt-get install libcharon-extra-plugins)")
    if not os.path.exists("/dev/net/tun"):
        raise TestbedError("kernel-libipsec needs /dev/net/tun")
    here = SCRIPTS_DIR
    out["pctor-charon"] = which(os.path.join(here, "pctor-charon")) or which("pctor-charon")
    if not out["pctor-charon"]:
        raise TestbedError("pctor-charon not found beside pctor-testbed or on PATH")
    conf = os.environ.get("PCTOR_IPSEC_CONF_DIR")
    for d in ([conf] if conf else []) + [os.path.join(here, "..", "ipsec-conf"),
                                          "/usr/share/pctor/ipsec-conf"]:
        if os.path.exists(os.path.join(d, "pctor-updown")):
            out["ipsec-conf"] = os.path.abspath(d)
            break
    else:
        raise TestbedError("ipsec-conf/ (pctor-updown) not found; set PCTOR_IPSEC_CONF_DIR")
    for c in ([os.environ["PCTOR_VICI"]] if os.environ.get("PCTOR_VICI") else []) + \
            ([os.path.join(bd, "src/tools/vicitest/pctor-vici")] if bd else []) + ["pctor-vici"]:
        w = which(c)
        if w:
            out["pctor-vici"] = w
            break


# --------------------------------------------------------------------------
# tor configuration

COMMON_TORRC = """TestingTorNetwork 1
UseDefaultFallbackDirs 0
AssumeReachable 1
PathsNeededToBuildCircuits 0.25
TestingDirAuthVoteExit *
TestingDirAuthVoteGuard *
TestingMinExitFlagThreshold 0
V3AuthNIntervalsValid 2
ServerDNSDetectHijacking 0
SafeLogging 0
RunAsDaemon 0
"""

AUTHORITY_TORRC = """AuthoritativeDirectory 1
V3AuthoritativeDirectory 1
TestingV3AuthInitialVotingInterval 5
TestingV3AuthInitialVoteDelay 2
TestingV3AuthInitialDistDelay 2
V3AuthVotingInterval 10
V3AuthVoteDelay 2
V3AuthDistDelay 2
ExitRelay 0
ExitPolicy reject *:*
"""

# exit_policy = "open": the policy accepts everything, so that its summary
# (which ignores private addresses) says "accept" and clients using
# microdescriptors -- tor's default -- see the exits. Traffic still cannot
# leave: the namespaces have no route out of 10.77.0.0/16 and core drops
# anything addressed elsewhere. exit_policy = "private" accepts only the
# test bed's range; then tor clients need UseMicrodescriptors 0 and pctor
# clients get ExitNodes (both added automatically).
EXIT_POLICY = {"open": """ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicyRejectLocalInterfaces 0
ExitPolicy accept *:*
""", "private": f"""ExitRelay 1
ExitPolicyRejectPrivate 0
ExitPolicyRejectLocalInterfaces 0
ExitPolicy accept {NET_PREFIX}.0.0/16:*
ExitPolicy reject *:*
"""}


def gen_authority_keys(run_, name, info, bins):
    hd = info["dir"]
    keys = os.path.join(hd, "data", "keys")
    os.makedirs(keys, mode=0o700, exist_ok=True)
    os.chmod(os.path.join(hd, "data"), 0o700)
    p = subprocess.run([bins["tor-gencert"], "--create-identity-key", "-m", "12", "-a",
                        f"{info['ip']}:{DIRPORT}", "--passphrase-fd", "0"], cwd=keys,
                       input="\n", capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise TestbedError(f"tor-gencert failed for {name}: {p.stdout}{p.stderr}")
    zeros = "0" * 40
    tmp = os.path.join(hd, "list-fingerprint.torrc")
    atomic_write(tmp, f"TestingTorNetwork 1\n"
                      f"DirAuthority placeholder orport=1 no-v2 v3ident={zeros} "
                      f"127.0.0.1:1 {zeros}\n"
                      f"DataDirectory {hd}/data\nNickname {name}\nAddress {info['ip']}\n"
                      f"ORPort {info['ip']}:{ORPORT}\nLog warn stderr\n")
    empty = os.path.join(run_.rundir, "torrc-defaults")
    p = subprocess.run([bins["tor"], "--list-fingerprint", "-f", tmp, "--defaults-torrc", empty],
                       capture_output=True, text=True, timeout=120)
    os.unlink(tmp)
    if p.returncode != 0:
        raise TestbedError(f"tor --list-fingerprint failed for {name}: {p.stdout}{p.stderr}")
    with open(os.path.join(keys, "authority_certificate")) as f:
        v3 = re.search(r"^fingerprint ([0-9A-F]{40})$", f.read(), re.M)
    fp = read_fingerprint(os.path.join(hd, "data"))
    if not v3 or not fp:
        raise TestbedError(f"no fingerprints for authority {name}")
    return (f"DirAuthority {name} orport={ORPORT} no-v2 v3ident={v3.group(1)} "
            f"{info['ip']}:{DIRPORT} {fp}")


def read_fingerprint(datadir):
    try:
        with open(os.path.join(datadir, "fingerprint")) as f:
            parts = f.read().split()
    except OSError:
        return None
    if len(parts) >= 2 and re.fullmatch(r"[0-9A-F]{40}", parts[1]):
        return parts[1]
    return None


def write_torrc(run_, h, info, dirauth, exits, exit_policy, control=False):
    """control: give a pctor client a ControlPort even if it is not a relay
    (wait_relay_datagram_links closes its circuits through it)."""
    hd = info["dir"]
    data = os.path.join(hd, "data")
    os.makedirs(data, mode=0o700, exist_ok=True)
    os.chmod(data, 0o700)
    resolv = os.path.join(hd, "resolv.conf")
    atomic_write(resolv, "nameserver 127.0.0.1\n")
    ip = info["ip"]
    info["ports"] = ({"socks": SOCKSPORT} if h.role == "client" else {"or": ORPORT})
    if h.relay:
        info["ports"]["or"] = ORPORT
    if h.has_datagram_port():
        info["ports"]["datagram"] = DATAGRAMPORT
    if h.binary == "tor":
        info["ports"]["control"] = CONTROLPORT
        if h.role != "client":
            info["ports"]["dir"] = DIRPORT
    lines = [f"# {h.role} {h.name} ({h.binary}) of test-bed run {run_.runid}, "
             f"written by {PROG}"]
    if h.binary == "tor":
        lines.append(COMMON_TORRC.rstrip())
        lines += [f"ServerDNSResolvConfFile {resolv}", f"DataDirectory {data}",
                  f"Nickname {h.name}", "ContactInfo pctor-testbed",
                  f"Log notice file {hd}/notice.log",
                  f"ControlPort 127.0.0.1:{CONTROLPORT}", "CookieAuthentication 1"]
        if h.role == "client":
            lines.append(f"SocksPort 127.0.0.1:{SOCKSPORT}")
            if exit_policy == "private":
                lines.append("UseMicrodescriptors 0")
        else:
            lines += ["SocksPort 0", f"Address {ip}", f"ORPort {ip}:{ORPORT}",
                      f"DirPort {ip}:{DIRPORT}"]
        if h.role == "authority":
            lines.append(AUTHORITY_TORRC.rstrip())
        elif h.role == "exit":
            lines.append(EXIT_POLICY[exit_policy].rstrip())
        elif h.role == "relay":
            lines += ["ExitRelay 0", "ExitPolicy reject *:*"]
    else:
        lines += ["TestingTorNetwork 1", f"ServerDNSResolvConfFile {resolv}",
                  f"DataDirectory {data}", f"Nickname {h.name}",
                  f"Log notice file {hd}/notice.log"]
        if h.role == "client":
            lines.append(f"SocksPort 127.0.0.1:{SOCKSPORT}")
            # A private-address-only exit policy summarises to "reject all",
            # so pin the exits (unless the TOML chose some).
            if exit_policy == "private" and \
                    not any(l.split()[0].lower() == "exitnodes" for l in h.torrc):
                lines.append("ExitNodes " + ",".join(exits))
            if h.relay:
                # An unpublished relay: its identity authenticates its
                # links (TLS and datagram) to its guard, so that it can take
                # BackTap or TCP-over-DTLS for its circuits' first hop
                # (doc/backtap.md). The ControlPort lets the test bed close
                # the circuits built before its datagram link was up.
                lines += [f"Address {ip}", f"ORPort {ip}:{ORPORT}", "AssumeReachable 1",
                          "PublishServerDescriptor 0", "ContactInfo pctor-testbed",
                          "ExitRelay 0", "ExitPolicy reject *:*"]
                # (experiment.paired_paths gives clients this ControlPort
                # already, among the definition's torrc lines)
                if not any(l.split()[0].lower() == "controlport" for l in h.torrc):
                    lines += [f"ControlPort 127.0.0.1:{CONTROLPORT}", "CookieAuthentication 1"]
                info["ports"]["control"] = CONTROLPORT
            elif control:
                if not any(l.split()[0].lower() == "controlport" for l in h.torrc):
                    lines += [f"ControlPort 127.0.0.1:{CONTROLPORT}", "CookieAuthentication 1"]
                info["ports"]["control"] = CONTROLPORT
        else:
            lines += [f"Address {ip}", f"ORPort {ip}:{ORPORT}", "AssumeReachable 1",
                      "ContactInfo pctor-testbed"]
            if h.role == "exit":
                lines.append(EXIT_POLICY[exit_policy].rstrip())
            else:
                lines += ["ExitRelay 0", "ExitPolicy reject *:*"]
            if h.ipsec:
                # (no IPsecUpdown: pctor-charon runs pctor-updown itself)
                lines += ["IPsec 1", f"IPsecVICISocket {hd}/charon/charon.vici"]
            # Experiments ask relays to record their circuits (MeasureMe,
            # off by default); many clients reach a middle through one
            # guard's address, so the per-client limits are raised too.
            # The test-bed file's own torrc lines, later, may override.
            lines += ["MeasureMeEnabled 1", "MeasureMeClientRate 60000",
                      "MeasureMeClientBurst 60000"]
    lines += dirauth
    if h.torrc:
        lines.append("# extra lines from the test-bed file")
        lines += [expand_placeholders(l, ip, ORPORT, DATAGRAMPORT) for l in h.torrc]
    path = os.path.join(hd, "torrc")
    atomic_write(path, "\n".join(lines) + "\n")
    return path


def start_charon(run_, h, info, bins):
    """The host's own charon (kernel-libipsec) in its namespace, started
    with scripts/pctor-charon, plus the nftables filter that drops
    plaintext TCP to the ORPort from peers we have an SA with. charon's PID
    and start time are recorded like every other process; its command line
    is charon's own, so the record's marker is the charon binary."""
    cdir = os.path.join(info["dir"], "charon")
    conf = bins["ipsec-conf"]
    nsrun(info["ns"], ["nft", "-D", f"ORPORT={ORPORT}", "-f",
                       os.path.join(conf, "nftables-pctor-ipsec.nft")])
    env = dict(os.environ, CHARON=bins["charon"], PCTOR_IPSEC_CONF_DIR=conf)
    if "initcwnd" in h.tcp:
        env["PCTOR_UPDOWN_ROUTE_OPTS"] = f"initcwnd {h.tcp['initcwnd']}"
    if bins.get("pctor-vici"):
        env["PCTOR_VICI"] = bins["pctor-vici"]
    p = subprocess.run([bins["pctor-charon"], "start", cdir, "--netns", info["ns"],
                        "--timeout", "30"], env=env, capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise TestbedError(f"charon on {h.name} did not start: "
                           f"{(p.stderr or p.stdout).strip()[-600:]}")
    with open(os.path.join(cdir, "charon.pid")) as f:
        pid, start = f.read().split()[:2]
    rec = {"host": h.name, "kind": "charon", "pid": int(pid), "start": int(start),
           "marker": bins["charon"], "argv": [bins["charon"]]}
    run_.state["processes"].append(rec)
    info["charon"] = {"dir": cdir, "pid": int(pid), "vici": os.path.join(cdir, "charon.vici")}
    run_.save()
    debug(f"started charon on {h.name}: pid {pid}")
    return rec


def start_tor_host(run_, h, info, bins):
    torrc = os.path.join(info["dir"], "torrc")
    if h.binary == "tor":
        argv = [bins["tor"], "-f", torrc, "--defaults-torrc",
                os.path.join(run_.rundir, "torrc-defaults")]
    else:
        argv = [bins["pctor"], "-f", torrc]
    rec = run_.spawn(h.name, info["ns"], argv, h.binary, f"{h.binary}.out")
    info["pid"] = rec["pid"]
    run_.save()
    return rec


def write_www(runid, h, info):
    """The server's random files (seeded by run and host), their sizes,
    sha256 and URLs in info["files"]; returns the directory."""
    www = os.path.join(info["dir"], "www")
    os.makedirs(www, exist_ok=True)
    rnd = random.Random(f"{runid}-{h.name}")
    files = {}
    for fname, size in h.files.items():
        path = os.path.join(www, fname)
        digest = hashlib.sha256()
        with open(path, "wb") as f:
            left = size
            while left:
                chunk = rnd.randbytes(min(left, 1 << 20))
                f.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
        files[fname] = {"size": size, "sha256": digest.hexdigest(),
                        "url": f"http://{info['ip']}/{fname}"}
    info["files"] = files
    return www


def start_server(run_, h, info):
    www = write_www(run_.runid, h, info)
    argv = [sys.executable, WEBSERVER, str(HTTPPORT), "--bind", info["ip"],
            "--directory", www]
    rec = run_.spawn(h.name, info["ns"], argv, "http", "http.log")
    info["pid"] = rec["pid"]
    run_.save()
    return rec


def fetch_consensus(run_, auths):
    for a in auths:
        info = run_.state["hosts"][a]
        try:
            status, body = http_get_ns(info["ns"], info["ip"], DIRPORT,
                                       "/tor/status-vote/current/consensus", timeout=5)
        except (OSError, http.client.HTTPException, TestbedError):
            continue
        if status == 200 and body:
            return body.decode(errors="replace")
    return None


def consensus_flags(text):
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("r "):
            parts = line.split()
            cur = parts[2] if len(parts) > 2 else None
        elif line.startswith("s ") and cur:
            out[cur] = line.split()[1:]
    return out


def wait_consensus(run_, relays, auths, timeout, want=("Running", "Valid")):
    t0 = time.monotonic()
    last = None
    while True:
        for r in relays:
            rec = next(p for p in run_.state["processes"] if p["host"] == r and
                       p["kind"] in ("tor", "pctor"))
            if not run_.proc_alive(rec):
                info = run_.state["hosts"][r]
                raise TestbedError(f"{r} exited: " +
                                   tail(os.path.join(info["dir"], "notice.log")) + "\n" +
                                   tail(os.path.join(info["dir"], f"{info['binary']}.out")))
        text = fetch_consensus(run_, auths)
        missing = []
        if text is None:
            msg = "no consensus yet"
        else:
            flags = consensus_flags(text)
            for r in relays:
                info = run_.state["hosts"][r]
                fp = info.get("fingerprint") or read_fingerprint(os.path.join(info["dir"], "data"))
                if not fp:
                    missing.append(f"{r}(no fingerprint yet)")
                    continue
                info["fingerprint"] = fp
                fl = flags.get(hex_to_b64(fp))
                if fl is None:
                    missing.append(f"{r}(absent)")
                elif not all(w in fl for w in want):
                    missing.append(f"{r}({','.join(fl)})")
            msg = "missing " + " ".join(missing) if missing else ""
        if text is not None and not missing:
            run_.save()
            return time.monotonic() - t0
        if msg != last:
            note(f"[{time.monotonic() - t0:.0f}s] consensus: {msg}")
            last = msg
        if time.monotonic() - t0 > timeout:
            raise TestbedError(f"the consensus does not list every relay after {timeout:.0f}s: "
                               f"{msg}")
        time.sleep(1)


def probe_target(run_):
    """A URL path every client should be able to fetch: a server's smallest
    file, else an authority's own descriptor from its DirPort."""
    hosts = run_.state["hosts"]
    servers = [n for n, i in hosts.items() if i["role"] == "server" and i.get("files")]
    if servers:
        info = hosts[servers[0]]
        fname = min(info["files"], key=lambda k: info["files"][k]["size"])
        return info["ip"], HTTPPORT, f"/{fname}"
    auth = next(n for n, i in hosts.items() if i["role"] == "authority")
    return hosts[auth]["ip"], DIRPORT, "/tor/server/authority"


def socks_http_get(ns, ip, port, path, timeout=60, socks=("127.0.0.1", SOCKSPORT),
                   stream_to=None):
    """GET through the SOCKS port of the client in ns. Returns a dict with
    status, body (unless stream_to), bytes, ttfb and total (seconds from the
    start of the SOCKS connection)."""
    t0 = time.monotonic()
    s = ns_connect(ns, socks, timeout=timeout)
    try:
        socks5_open(s, ip, port, timeout)
        t_conn = time.monotonic() - t0
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: {ip}\r\nUser-Agent: {PROG}\r\n\r\n".encode())
        status, _, body, ttfb = recv_http_head(s, t0)
        digest = hashlib.sha256(body)
        n = len(body)
        chunks = [body] if stream_to is None else None
        while True:
            b = s.recv(262144)
            if not b:
                break
            n += len(b)
            digest.update(b)
            if chunks is not None:
                chunks.append(b)
        return {"status": status, "bytes": n, "connect": t_conn, "ttfb": ttfb,
                "total": time.monotonic() - t0,
                "sha256": digest.hexdigest(),
                "body": b"".join(chunks) if chunks is not None else None}
    finally:
        s.close()


def wait_clients(run_, clients, timeout):
    ip, port, path = probe_target(run_)
    t0 = time.monotonic()
    pending = list(clients)
    errs = {}
    while pending:
        for c in list(pending):
            info = run_.state["hosts"][c]
            rec = next(p for p in run_.state["processes"] if p["host"] == c and
                       p["kind"] in ("tor", "pctor"))
            if not run_.proc_alive(rec):
                raise TestbedError(f"client {c} exited: " +
                                   tail(os.path.join(info["dir"], "notice.log")))
            if info["binary"] == "tor":
                try:
                    with open(os.path.join(info["dir"], "notice.log")) as f:
                        if "Bootstrapped 100%" not in f.read():
                            errs[c] = "not bootstrapped"
                            continue
                except OSError:
                    errs[c] = "no log yet"
                    continue
            try:
                r = socks_http_get(info["ns"], ip, port, path, timeout=20)
                if r["status"] == 200:
                    pending.remove(c)
                    note(f"client {c} carried a request after {time.monotonic() - t0:.0f}s")
                    continue
                errs[c] = f"HTTP {r['status']}"
            except (OSError, TestbedError) as e:
                errs[c] = str(e)
        if not pending:
            break
        if time.monotonic() - t0 > timeout:
            raise TestbedError("clients not ready after %.0fs: %s" % (
                timeout, "; ".join(f"{c}: {errs.get(c, '?')}" for c in pending)))
        time.sleep(1)


# "Datagram link ADDR:PORT (we opened, ed25519 0123...) is up: ..." (feature/dgram)
DGRAM_UP = re.compile(r"Datagram link (\S+)(?: \([^)]*\))? is up")


def control_commands(ns, datadir, commands, timeout=20):
    """Send commands to the ControlPort (127.0.0.1:CONTROLPORT) of the pctor
    or tor in namespace ns, authenticated with the cookie in datadir; the
    reply lines of each, in order. A reply that is not 250 raises."""
    with ControlConnection(ns) as c:
        c.open(timeout=timeout)
        c.authenticate(os.path.join(datadir, "control_auth_cookie"), timeout)
        return [c.cmd(x, timeout) for x in commands]


def circuit_ids(lines):
    """The IDs of the circuits a GETINFO circuit-status reply lists."""
    ids = []
    for line in lines:
        line = line.removeprefix("250-circuit-status=").removeprefix("250+circuit-status=")
        m = re.match(r"(\d+) (LAUNCHED|BUILT|GUARD_WAIT|EXTENDED)\b", line)
        if m:
            ids.append(m.group(1))
    return ids


def wait_datagram_first_hops(run_, clients, timeout):
    """Clients that are relays with a DatagramPort take a datagram
    transport for their first hop only once their datagram link to the
    guard is up, which the first circuit's TLS link brings about
    (wait_clients made one). Wait until each client logs a datagram link
    up, then close every circuit it has, so that the workload's circuits
    are all built over it. Returns {client: seconds waited}."""
    t0 = time.monotonic()
    out = {}
    for c in clients:
        info = run_.state["hosts"][c]
        log = os.path.join(info["dir"], "notice.log")
        while True:
            try:
                with open(log, errors="replace") as f:
                    m = DGRAM_UP.search(f.read())
            except OSError:
                m = None
            if m:
                break
            if time.monotonic() - t0 > timeout:
                raise TestbedError(f"client {c}: no datagram link up after {timeout:.0f}s: "
                                   + tail(log, 3))
            time.sleep(1)
        ids = circuit_ids(control_commands(info["ns"], os.path.join(info["dir"], "data"),
                                           ["GETINFO circuit-status"])[0])
        closed = 0
        for cid in ids:
            try:
                control_commands(info["ns"], os.path.join(info["dir"], "data"),
                                 [f"CLOSECIRCUIT {cid}"])
                closed += 1
            except TestbedError:
                pass   # it closed meanwhile
        info["datagram_link"] = m.group(1)
        out[c] = round(time.monotonic() - t0, 1)
        note(f"client {c}: datagram link to {m.group(1)} up; closed {closed} circuit(s) "
             f"built before it")
    run_.save()
    return out


def _close_all_circuits(info):
    """Close every circuit of the pctor/tor host (through its ControlPort);
    how many were closed."""
    datadir = os.path.join(info["dir"], "data")
    ids = circuit_ids(control_commands(info["ns"], datadir, ["GETINFO circuit-status"])[0])
    closed = 0
    for cid in ids:
        try:
            control_commands(info["ns"], datadir, [f"CLOSECIRCUIT {cid}"])
            closed += 1
        except TestbedError:
            pass   # it closed meanwhile
    return closed


def relay_links(ns):
    """The addresses of the hosts with which the namespace ns has an
    established TCP connection to or from an ORPort (TLS links, and PCTCP's
    per-circuit connections)."""
    p = nsrun(ns, ["ss", "-Htn", "state", "established"], check=False)
    peers = set()
    for line in (p.stdout or "").splitlines():
        addrs = [w for w in line.split() if ":" in w]
        if len(addrs) < 2:
            continue
        (lip, lport), (pip, pport) = (a.rsplit(":", 1) for a in addrs[-2:])
        if str(ORPORT) in (lport, pport):
            peers.add(pip)
    return peers


def datagram_links_up(log):
    """The peer addresses of the datagram links a notice.log reports up."""
    try:
        with open(log, errors="replace") as f:
            return {m.group(1).rsplit(":", 1)[0] for m in DGRAM_UP.finditer(f.read())}
    except OSError:
        return set()


# "IPsec SA with relay $ID (ADDR:PORT) is up ..." (feature/ipsec)
IPSEC_SA_UP = re.compile(r"IPsec SA with relay \S+ \(([0-9.]+):\d+\) is up")


def ipsec_sas_up(log):
    """The peer addresses of the IPsec SAs a notice.log reports up."""
    try:
        with open(log, errors="replace") as f:
            return {m.group(1) for m in IPSEC_SA_UP.finditer(f.read())}
    except OSError:
        return set()


def wait_relay_datagram_links(run_, hosts, timeout, ipsec=False):
    """Relays learn a peer's DatagramPort only on a TLS link (doc/dgram.md),
    so the first circuits between two relays that both carry hops over
    datagram links (CircuitTransport dtls-tcp or backtap) go over TLS; the
    datagram link comes up a moment later. Wait until every TLS link
    between two such relays (the clients' first circuits made them) has its
    datagram link up at both ends, then close every circuit of every pctor
    client, so that the workload's circuits are built over the datagram
    links. What each circuit hop then really used is counted by the relays
    (experiment.transport_counters). Returns {"pairs": [...], "wait_s": s}."""
    hinfo = run_.state["hosts"]
    if ipsec:
        # the same for PerCircuitTCP inside IPsec: circuits share one TLS
        # connection with a peer until its SA is up (doc/ipsec.md)
        dg = {h.name: h for h in hosts if h.role in ("relay", "exit") and h.ipsec
              and h.binary == "pctor"}
        links_up, what, key = ipsec_sas_up, "relay IPsec SAs", "relay_ipsec_sas"
    else:
        dg = {h.name: h for h in hosts if h.role in ("relay", "exit")
              and h.has_datagram_port() and h.datagram_transport()}
        links_up, what, key = datagram_links_up, "relay datagram links", "relay_datagram_links"
    ip_of = {n: hinfo[n]["ip"] for n in dg}
    name_of = {ip: n for n, ip in ip_of.items()}
    t0 = time.monotonic()
    while True:
        pairs, missing = set(), []
        up = {n: links_up(os.path.join(hinfo[n]["dir"], "notice.log")) for n in dg}
        for n in sorted(dg):
            for pip in relay_links(hinfo[n]["ns"]):
                peer = name_of.get(pip)
                if peer is None or peer == n:
                    continue
                pair = tuple(sorted((n, peer)))
                pairs.add(pair)
                if pip not in up[n] or ip_of[n] not in up[peer]:
                    missing.append(f"{n}-{peer}")
        if not missing:
            break
        if time.monotonic() - t0 > timeout:
            raise TestbedError(f"{what} not up after {timeout:.0f}s: "
                               + ", ".join(sorted(set(missing))))
        time.sleep(1)
    closed = {}
    for h in hosts:
        if h.role == "client" and h.binary == "pctor" and \
                hinfo[h.name].get("ports", {}).get("control"):
            closed[h.name] = _close_all_circuits(hinfo[h.name])
    wait = round(time.monotonic() - t0, 1)
    run_.state[key] = {"pairs": sorted("-".join(p) for p in pairs),
                       "wait_s": wait, "circuits_closed": closed}
    run_.save()
    note(f"{what} up for {len(pairs)} relay pair(s) "
         f"({', '.join(sorted('-'.join(p) for p in pairs)) or 'none yet'}) after {wait}s; "
         f"closed {sum(closed.values())} client circuit(s) built before them")
    return run_.state[key]


# --------------------------------------------------------------------------
# commands: up / down / status / list / exec

def new_run(cfg, args, kind, extra_hosts=()):
    while True:
        runid = secrets.token_hex(3)
        if not any(n.startswith(f"tb{runid}-") for n in
                   (os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else [])):
            break
    rundir = os.path.abspath(args.rundir or f"/tmp/pctor-testbed.{cfg['name']}.{runid}")
    if os.path.exists(rundir) and os.listdir(rundir):
        raise TestbedError(f"{rundir} exists and is not empty")
    os.makedirs(rundir, exist_ok=True)
    os.chmod(rundir, 0o755)
    run_ = Run(rundir)
    hosts = list(cfg["hosts"]) + list(extra_hosts)
    nslots = (len(hosts) + HOSTS_PER_SLOT - 1) // HOSTS_PER_SLOT
    run_.state = {"version": 1, "runid": runid, "kind": kind, "name": cfg["name"],
                  "rundir": rundir, "config_file": os.path.abspath(args.file),
                  "status": "building", "created": time.time(), "namespaces": [],
                  "processes": [], "hosts": {}, "congestion_control": cfg["congestion_control"],
                  "queue_ms": cfg["queue_ms"], "owner_pid": os.getpid()}
    shutil.copy(args.file, os.path.join(rundir, "testbed.toml"))
    run_.save()
    first = allocate_slots(nslots, runid, rundir, run_.ns("core"))
    run_.state["first_slot"] = first
    run_.state["slots"] = nslots
    run_.save()
    return run_, hosts


class Interrupted(Exception):
    pass


def _raise_interrupt(signum, frame):
    raise Interrupted(f"signal {signum}")


@contextlib.contextmanager
def undo_on_failure(run_):
    """Tear the run down if the body fails or is interrupted (Ctrl-C, TERM, HUP)."""
    # SIGINT too: a shell starts background jobs with SIGINT ignored.
    old = {s: signal.signal(s, _raise_interrupt)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    except BaseException as e:
        what = "interrupted" if isinstance(e, (KeyboardInterrupt, Interrupted)) else "failed"
        note(f"{what}; removing what was built ({run_.rundir})")
        # Ignore further interrupts while cleaning up.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            run_.state["status"] = "failed"
            run_.teardown()
        except Exception as e2:
            note(f"clean-up problem: {e2}")
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
