#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# capture-tor-cells.py -- record what a real tor relay sends, as seeds for
# the fuzz targets (tests/fuzz/corpus/<target>/tor049-*).
#
# Connects to a tor relay's ORPort on 127.0.0.1 (tor_link_client.Link),
# records the raw bytes of its link greeting (VERSIONS, CERTS,
# AUTH_CHALLENGE, NETINFO), opens a one-hop circuit with CREATE_FAST, and
# fetches directory documents over BEGIN_DIR streams, recording the
# decrypted relay cells and the HTTP answers (identity and ".z"). Relay
# crypto (tor-spec 5.2.1/6.1: AES-128-CTR, running SHA-1 digests) is done
# here with python3-cryptography.
# Usage: capture-tor-cells.py HOST ORPORT OUTDIR [PATH...]
import hashlib
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import tor_link_client as T  # noqa: E402
from cryptography.hazmat.primitives.ciphers import (  # noqa: E402
    Cipher, algorithms, modes)

BEGIN_DIR, DATA, END, CONNECTED = 13, 2, 3, 4
# Which fuzz target parses the document at a path.
DOC_TARGETS = (("/tor/server/", "serverdesc"), ("/tor/keys/", "keycert"),
               ("/tor/status-vote/", "consensus"), ("/tor/micro/", "microdesc"))


def put(outdir, target, name, data):
    d = os.path.join(outdir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tor049-" + name), "wb") as f:
        f.write(data)


class Recorder(T.Link):
    """A Link that keeps every raw byte it received."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.raw = b""

    def _fill(self, n, deadline):
        old = len(self.buf)
        try:
            super()._fill(n, deadline)
        finally:
            self.raw += self.buf[old:] if len(self.buf) > old else b""


class Circuit:
    def __init__(self, link, circ_id):
        self.lk, self.cid = link, circ_id
        x = os.urandom(T.HASH_LEN)
        link.send_cell(circ_id, T.CREATE_FAST, x)
        p = link.expect_cell(T.CREATED_FAST, circ_id)
        self.created_fast = p
        k = T.kdf_tor(x + p[:T.HASH_LEN], 92)
        if k[:20] != p[T.HASH_LEN:2 * T.HASH_LEN]:
            raise T.Failed("bad KH")
        self.df = hashlib.sha1(k[20:40])
        self.enc = Cipher(algorithms.AES(k[60:76]), modes.CTR(b"\0" * 16)).encryptor()
        self.dec = Cipher(algorithms.AES(k[76:92]), modes.CTR(b"\0" * 16)).decryptor()

    def send(self, cmd, stream, body):
        p = bytearray((bytes([cmd]) + b"\0\0" + struct.pack(">H", stream) +
                       b"\0" * 4 + struct.pack(">H", len(body)) +
                       body).ljust(T.PAYLOAD_LEN, b"\0"))
        self.df.update(bytes(p))
        p[5:9] = self.df.copy().digest()[:4]
        self.lk.send_cell(self.cid, T.RELAY, self.enc.update(bytes(p)))

    def recv(self):
        cid, cmd, payload = self.lk.recv_cell()
        if cmd != T.RELAY or cid != self.cid:
            raise T.Failed("unexpected cell %d on %#x" % (cmd, cid))
        # Documents here are far below the windows (500 cells a stream,
        # 1000 a circuit), so no SENDME is ever needed.
        return self.dec.update(payload)


def fetch(circ, stream, path):
    """Relay payloads received and the HTTP answer for path."""
    circ.send(BEGIN_DIR, stream, b"")
    req = ("GET %s HTTP/1.0\r\nAccept-Encoding: identity\r\n\r\n" % path).encode()
    circ.send(DATA, stream, req)
    cells, body = [], b""
    while True:
        p = circ.recv()
        cells.append(p)
        cmd, length = p[0], struct.unpack(">H", p[9:11])[0]
        if cmd == DATA:
            body += p[11:11 + length]
        if cmd == END:
            return cells, body


def main():
    host, port, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    paths = sys.argv[4:] or ["/tor/server/authority", "/tor/keys/all"]
    lk = Recorder(host, port, 10.0)
    lk.send_versions((3, 4, 5))
    lk.read_greeting()
    greeting = lk.raw
    put(outdir, "linkcells", "greeting", greeting)
    # fuzz_linkhs as the initiator: role 1, all at once, and 3 at a time.
    put(outdir, "linkhs", "greeting", b"\x01\x00" + greeting)
    put(outdir, "linkhs", "greeting-split3", b"\x01\x03" + greeting)
    lk.send_cell(0, T.NETINFO, T.netinfo_payload(0))
    circ = Circuit(lk, 0x80000001)
    # cell target: link protocol byte, then everything after VERSIONS.
    vlen = 5 + struct.unpack(">H", greeting[3:5])[0]
    put(outdir, "cell", "after-versions", bytes([4]) + greeting[vlen:])
    all_relay = b""
    for i, path in enumerate(paths):
        for z in ("", ".z"):
            cells, body = fetch(circ, 2 * i + 1 + (1 if z else 0), path + z)
            all_relay += b"".join(cells)
            name = path.strip("/").replace("/", "-") + z.replace(".", "-")
            put(outdir, "dir_http", name, bytes([2 if z else 0]) + body)
            hdr_end = body.find(b"\r\n\r\n")
            if hdr_end < 0 or not body.startswith(b"HTTP/1.0 200"):
                continue
            doc = body[hdr_end + 4:]
            if z:
                put(outdir, "compress", name, bytes([1, 0]) + doc)
            else:
                for prefix, target in DOC_TARGETS:
                    if path.startswith(prefix):
                        put(outdir, target, name, doc)
    put(outdir, "relay", "begin-dir-streams", all_relay[:16 * T.PAYLOAD_LEN])
    lk.close()
    print("capture-tor-cells: %d greeting bytes, %d relay cells" %
          (len(greeting), len(all_relay) // T.PAYLOAD_LEN))


if __name__ == "__main__":
    main()
