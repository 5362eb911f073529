# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab.control -- the lab's one control-protocol client (control-spec):
# a connection to the ControlPort of a pctor or tor inside a host's network
# namespace, cookie authentication, commands with their whole reply, and
# asynchronous events.
#
# - One reader thread splits what arrives into replies: the "NNN-" lines of
#   a reply, each "NNN+" line with its data block up to the "." line, and
#   the final "NNN " line. A reply whose code starts with 6 is an event and
#   goes to the on_event callback, called on a thread of its own, so that
#   the callback may send commands itself; any other reply answers the
#   oldest command waiting (commands are sent one at a time).
# - cmd() returns the reply's lines (data lines included, the "." left out)
#   and raises ControlError unless the final line is 250.
# - Used for the paired paths' circuit pinning (paths.PathPinner, events)
#   and the test bed's one-shot commands (network.control_commands).

import contextlib
import queue
import re
import socket
import threading
import time

from .common import CONTROLPORT, TestbedError
from .netns import ns_connect


class ControlError(TestbedError):
    pass


class ControlConnection:
    """A control connection to 127.0.0.1:port in namespace ns (None: this
    process's own namespace). on_event(lines) is called for each event."""

    def __init__(self, ns, port=CONTROLPORT, on_event=None):
        self.ns, self.port, self.on_event = ns, port, on_event
        self.sock = None
        self.cmd_lock = threading.Lock()
        self.replies = queue.Queue()
        self.events = queue.Queue()
        self.threads = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- connection
    def open(self, timeout=10, retry_for=0):
        """Connect (each attempt bounded by timeout), retrying once a second
        for up to retry_for seconds; then start the reader (and the event
        thread when there is an on_event)."""
        deadline = time.monotonic() + retry_for
        while True:
            try:
                if self.ns is None:
                    self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
                else:
                    self.sock = ns_connect(self.ns, ("127.0.0.1", self.port), timeout=timeout)
                break
            except OSError as e:
                if time.monotonic() >= deadline:
                    where = f" in {self.ns}" if self.ns else ""
                    raise ControlError(f"cannot reach the ControlPort{where}: {e}") from e
                time.sleep(1)
        self.sock.settimeout(None)
        self._start(self._reader)
        if self.on_event is not None:
            self._start(self._dispatch)
        return self

    def _start(self, fn):
        th = threading.Thread(target=fn, daemon=True)
        th.start()
        self.threads.append(th)

    def close(self):
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
        for th in self.threads:
            if th is not threading.current_thread():
                th.join(5)

    # -- protocol
    def _reader(self):
        buf = b""
        lines = []
        in_data = False
        try:
            while True:
                b = self.sock.recv(65536)
                if not b:
                    break
                buf += b
                while b"\r\n" in buf:
                    raw, buf = buf.split(b"\r\n", 1)
                    line = raw.decode(errors="replace")
                    if in_data:
                        if line == ".":
                            in_data = False
                        else:   # a leading "." is doubled in a data block
                            lines.append(line[1:] if line.startswith("..") else line)
                        continue
                    lines.append(line)
                    if len(line) < 4:
                        continue
                    if line[3] == "+":
                        in_data = True
                    elif line[3] == " ":
                        (self.events if line.startswith("6") else self.replies).put(lines)
                        lines = []
        except OSError:
            pass
        self.events.put(None)
        self.replies.put(None)

    def _dispatch(self):
        while True:
            ev = self.events.get()
            if ev is None:
                return
            self.on_event(ev)

    def cmd(self, text, timeout=60):
        """Send one command; its reply lines. Raises ControlError if there
        is no reply within timeout, the connection closed, or the reply is
        not 250."""
        with self.cmd_lock:
            try:
                self.sock.sendall(text.encode() + b"\r\n")
            except OSError as e:
                raise ControlError(f"the control connection closed: {e}") from e
            try:
                r = self.replies.get(timeout=timeout)
            except queue.Empty:
                raise ControlError(f"no reply to {text.split()[0]}") from None
            if r is None:
                self.replies.put(None)   # for any later command too
                raise ControlError("the control connection closed")
        if not r[-1].startswith("250"):
            raise ControlError(f"{text.split()[0]}: {' '.join(r)}")
        return r

    def authenticate(self, cookie_file=None, timeout=60):
        """AUTHENTICATE with the cookie in cookie_file, or in the file that
        PROTOCOLINFO names."""
        if cookie_file is None:
            r = self.cmd("PROTOCOLINFO 1", timeout)
            m = re.search(r'COOKIEFILE="((?:[^"\\]|\\.)*)"', " ".join(r))
            if not m:
                raise ControlError("PROTOCOLINFO names no cookie file")
            cookie_file = m.group(1).replace('\\"', '"').replace("\\\\", "\\")
        with open(cookie_file, "rb") as f:
            cookie = f.read()
        self.cmd("AUTHENTICATE " + cookie.hex(), timeout)
