# SPDX-License-Identifier: BSD-3-Clause
# test_webserver.py -- the experiments' web server (pctor_lab/webserver.py):
# it serves files with their Content-Length, and its listen backlog holds
# far more unaccepted connections than http.server's 5 (whose overflow
# made exits' connects wait for SYN retransmissions at scale).
import os
import socket
import subprocess
import sys
import time
import urllib.request

from pctor_lab import common, webserver


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test_serves_files_and_holds_a_burst(tmp_path):
    (tmp_path / "f").write_bytes(os.urandom(70000))
    port = free_port()
    p = subprocess.Popen([sys.executable, common.WEBSERVER, str(port), "--bind", "127.0.0.1",
                          "--directory", str(tmp_path)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/f", timeout=5) as r:
                    body = r.read()
                    assert int(r.headers["Content-Length"]) == 70000
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
        assert body == (tmp_path / "f").read_bytes()
        # Stop the server from accepting and connect 64 times: with a
        # backlog of 5 most of these connects would hang in SYN retransmission.
        os.kill(p.pid, 19)   # SIGSTOP
        socks = []
        try:
            for _ in range(64):
                s = socket.socket()
                s.settimeout(2)
                s.connect(("127.0.0.1", port))
                socks.append(s)
        finally:
            for s in socks:
                s.close()
            os.kill(p.pid, 18)   # SIGCONT
        assert len(socks) == 64
    finally:
        p.terminate()
        p.wait(10)
    assert webserver.Server.request_queue_size == webserver.BACKLOG >= 1024


def test_both_engines_use_it(top):
    with open(os.path.join(top, "scripts", "pctor-shadow")) as f:
        assert "WEBSERVER" in f.read()
    with open(os.path.join(top, "scripts", "pctor_lab", "network.py")) as f:
        text = f.read()
    assert '"-m", "http.server"' not in text and "WEBSERVER" in text
