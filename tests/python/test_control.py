# SPDX-License-Identifier: BSD-3-Clause
# test_control.py -- the lab's control-protocol client (pctor_lab.control)
# against a scripted ControlPort on 127.0.0.1: cookie authentication through
# PROTOCOLINFO's COOKIEFILE, multi-line replies, data blocks (with a line
# that has a space where a reply's code ends, and a dot-escaped line),
# events interleaved with replies and delivered to on_event on their own
# thread (which may send a command), error replies, and a closed connection.
import socket
import threading

import pytest

from pctor_lab import control

COOKIE = bytes(range(32))


class FakeControlPort:
    """Answers each command line with the canned reply of the first prefix
    that matches; a reply may be preceded by events (sent first)."""

    def __init__(self, tmp_path):
        self.cookie_file = tmp_path / "control_auth_cookie"
        self.cookie_file.write_bytes(COOKIE)
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.received = []
        self.authenticated = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def reply_for(self, line):
        if line.startswith("PROTOCOLINFO"):
            return ("250-PROTOCOLINFO 1\r\n"
                    f'250-AUTH METHODS=COOKIE COOKIEFILE="{self.cookie_file}"\r\n'
                    '250-VERSION Tor="0.4.9.11"\r\n250 OK\r\n')
        if line.startswith("AUTHENTICATE "):
            self.authenticated = line.split()[1] == COOKIE.hex()
            return "250 OK\r\n" if self.authenticated else "515 Authentication failed\r\n"
        if line == "CLOSE":   # the test's way to have the peer close
            return None
        if not self.authenticated:
            return "514 Authentication required.\r\n"
        if line == "GETINFO circuit-status":
            # an event before the reply; the data block has a line whose
            # fourth character is a space, and a line starting with a dot
            return ("650 CIRC 7 BUILT $AA~a,$BB~b\r\n"
                    "250+circuit-status=\r\n"
                    "1 BUILT $AA~a,$BB~b PURPOSE=GENERAL\r\n"
                    "12 LAUNCHED\r\n"
                    "..dotted\r\n"
                    ".\r\n"
                    "250 OK\r\n")
        if line.startswith("EXTENDCIRCUIT"):
            return "250 EXTENDED 9\r\n"
        return '552 Unrecognized command "%s"\r\n' % line.split()[0]

    def serve(self):
        conn, _ = self.lsock.accept()
        buf = b""
        with conn:
            while True:
                b = conn.recv(4096)
                if not b:
                    return
                buf += b
                while b"\r\n" in buf:
                    raw, buf = buf.split(b"\r\n", 1)
                    line = raw.decode()
                    self.received.append(line)
                    r = self.reply_for(line)
                    if r is None:
                        conn.shutdown(socket.SHUT_RDWR)
                        return
                    conn.sendall(r.encode())

    def close(self):
        self.lsock.close()


@pytest.fixture
def port(tmp_path):
    p = FakeControlPort(tmp_path)
    yield p
    p.close()


def test_authenticate_via_protocolinfo_and_data_block(port):
    events = []
    got_event = threading.Event()

    def on_event(lines):
        events.append(lines)
        got_event.set()

    with control.ControlConnection(None, port=port.port, on_event=on_event) as c:
        c.open(timeout=5)
        c.authenticate(timeout=5)
        assert port.authenticated
        r = c.cmd("GETINFO circuit-status", timeout=5)
        assert r == ["250+circuit-status=", "1 BUILT $AA~a,$BB~b PURPOSE=GENERAL",
                     "12 LAUNCHED", ".dotted", "250 OK"]
        assert got_event.wait(5)
        assert events == [["650 CIRC 7 BUILT $AA~a,$BB~b"]]
    assert port.received[:2] == ["PROTOCOLINFO 1", "AUTHENTICATE " + COOKIE.hex()]


def test_cookie_file_given_and_error_reply(port):
    with control.ControlConnection(None, port=port.port) as c:
        c.open(timeout=5)
        c.authenticate(str(port.cookie_file), timeout=5)
        assert c.cmd("EXTENDCIRCUIT 0 $AA,$BB", timeout=5) == ["250 EXTENDED 9"]
        with pytest.raises(control.ControlError, match="FROB: 552"):
            c.cmd("FROB", timeout=5)
        # the connection is still usable after an error reply
        assert c.cmd("EXTENDCIRCUIT 0 $AA", timeout=5) == ["250 EXTENDED 9"]
    assert "PROTOCOLINFO 1" not in port.received


def test_event_callback_may_send_commands(port):
    replies = []
    done = threading.Event()

    def on_event(lines):
        # as PathPinner does: answer an event with a command
        replies.append(conn.cmd("EXTENDCIRCUIT 0 $CC", timeout=5))
        done.set()

    conn = control.ControlConnection(None, port=port.port, on_event=on_event)
    with conn:
        conn.open(timeout=5)
        conn.authenticate(timeout=5)
        conn.cmd("GETINFO circuit-status", timeout=5)
        assert done.wait(5)
    assert replies == [["250 EXTENDED 9"]]


def test_wrong_cookie_and_closed_connection(port, tmp_path):
    bad = tmp_path / "bad_cookie"
    bad.write_bytes(b"\x00" * 32)
    with control.ControlConnection(None, port=port.port) as c:
        c.open(timeout=5)
        with pytest.raises(control.ControlError, match="515"):
            c.authenticate(str(bad), timeout=5)
        with pytest.raises(control.ControlError, match="closed"):
            c.cmd("CLOSE", timeout=5)
        with pytest.raises(control.ControlError, match="closed"):
            c.cmd("GETINFO version", timeout=5)


def test_unreachable_port_names_the_failure():
    s = socket.create_server(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    with pytest.raises(control.ControlError, match="cannot reach the ControlPort"):
        control.ControlConnection(None, port=free).open(timeout=2)
