#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# make-seeds.py -- (re)write the synthetic part of tests/fuzz/corpus/:
# well-formed examples of each input format, built from the specs, plus the
# directory documents of tests/data/dir. Cells captured from tor 0.4.9 are
# written by capture-tor-cells.py (see doc/fuzzing.md), not here.
# Usage: python3 tests/fuzz/make-seeds.py   (from the source tree; needs
# the zstd program for the zstd seeds)
import gzip
import lzma
import os
import shutil
import struct
import subprocess
import zlib

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CORPUS = os.path.join(TOP, "tests", "fuzz", "corpus")
DATA = os.path.join(TOP, "tests", "data", "dir")


def put(target, name, data):
    if data is None:
        print("make-seeds: no zstd program, %s/%s kept" % (target, name))
        return
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def doc(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def cell(circ, cmd, payload=b"", proto=4):
    cid = struct.pack(">I" if proto >= 4 else ">H", circ)
    if cmd == 7 or cmd >= 128:
        return cid + struct.pack(">BH", cmd, len(payload)) + payload
    return cid + bytes([cmd]) + payload.ljust(509, b"\0")


def relay(cmd, stream, body):
    return (bytes([cmd]) + b"\0\0" + struct.pack(">H", stream) + b"\0" * 4 +
            struct.pack(">H", len(body)) + body).ljust(509, b"\0")


# The zstd program is optional (a maintainer tool, not a test dependency):
# without it the zstd seeds already in the tree are kept as they are.
ZSTD = shutil.which("zstd")


def zstd(data):
    if not ZSTD:
        return None
    argv = [ZSTD, "-q", "-c"]
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE,
                          check=True).stdout


netinfo = struct.pack(">I", 0) + b"\x04\x04\x7f\0\0\x01" + b"\x01\x04\x04\x7f\0\0\x02"
versions = cell(0, 7, struct.pack(">HHH", 3, 4, 5), proto=3)
# ---- cells
put("cell", "versions-netinfo", b"\x04" + versions[0:0] +
    cell(0, 8, netinfo) + cell(5, 10, struct.pack(">HH", 2, 84) + b"A" * 84))
put("cell", "create-fast-destroy", b"\x04" + cell(7, 5, b"K" * 20) +
    cell(7, 4, b"\x03") + cell(0, 128, b"padding"))
put("cell", "proto3", b"\x03" + cell(9, 10, struct.pack(">HH", 3, 100) +
                                     b"B" * 100, proto=3))
put("cell", "created2", b"\x04" + cell(5, 11, struct.pack(">H", 64) + b"C" * 64))
# ---- link handshake (synthetic; see also the captured ones)
certs = bytes([2]) + struct.pack(">BH", 4, 4) + b"cert" + \
    struct.pack(">BH", 7, 5) + b"cross"
put("linkcells", "synthetic-greeting", versions + cell(0, 129, certs) +
    cell(0, 130, b"\x11" * 32 + struct.pack(">HHH", 2, 1, 3)) +
    cell(0, 8, netinfo))
put("linkcells", "synthetic-authenticate", versions +
    cell(0, 131, struct.pack(">HH", 3, 352) + b"AUTH0003" + b"\0" * 344) +
    cell(0, 8, netinfo))
# ---- the link handshake as a state machine: role byte (0 responder,
# 1 initiator), feed-step byte (0 all at once), the peer's bytes
challenge = cell(0, 130, b"\x11" * 32 + struct.pack(">HHH", 2, 1, 3))
auth = cell(0, 131, struct.pack(">HH", 3, 352) + b"AUTH0003" + b"\0" * 344)
client_open = (versions + cell(0, 8, netinfo) +
               cell(0x80000001, 5, b"K" * 20) + cell(0, 128, b""))
put("linkhs", "responder-client-open", b"\0\0" + client_open)
put("linkhs", "responder-client-open-split1", b"\0\x01" + client_open)
put("linkhs", "responder-client-open-split7", b"\0\x07" + client_open)
put("linkhs", "responder-certs-authenticate", b"\0\0" + versions +
    cell(0, 129, certs) + auth + cell(0, 8, netinfo))
put("linkhs", "responder-authenticate-first", b"\0\0" + versions + auth)
put("linkhs", "responder-certs-then-netinfo", b"\0\0" + versions +
    cell(0, 129, certs) + cell(0, 8, netinfo))
put("linkhs", "responder-netinfo-first", b"\0\0" + cell(0, 8, netinfo))
put("linkhs", "responder-padding-authorize", b"\0\0" + versions +
    cell(0, 0) + cell(0, 132, b"x") + cell(0, 128, b"pad") +
    cell(0, 8, netinfo))
put("linkhs", "responder-versions-twice", b"\0\0" + versions +
    cell(0, 7, struct.pack(">HH", 4, 5)) + cell(0, 8, netinfo))
put("linkhs", "responder-no-common-version", b"\0\0" +
    cell(0, 7, struct.pack(">HH", 1, 2), proto=3))
put("linkhs", "initiator-greeting", b"\x01\0" + versions +
    cell(0, 129, certs) + challenge + cell(0, 8, netinfo))
put("linkhs", "initiator-netinfo-first", b"\x01\0" + versions +
    cell(0, 8, netinfo))
put("linkhs", "initiator-challenge-first", b"\x01\0" + versions +
    challenge + cell(0, 8, netinfo))
# ---- CREATE2 (raw) and ntor v3 client messages (0xFF + CM)
put("create2", "ntor", struct.pack(">HH", 2, 84) + b"\x22" * 84)
put("create2", "ntor3-raw", struct.pack(">HH", 3, 128) + b"\x33" * 128)
put("create2", "ntor3-cm-cc", b"\xff" + b"\x01\x02\x00")  # one ext: CC request
# ntor has no MAC on the client's side: the target's fixed NODEID and KEYID
# (fuzz_create2.c: byte i = seed + 7 i) with any X get an answer.
node_id = bytes((0x22 + 7 * i) & 0xff for i in range(20))
ntor_pub = X25519PrivateKey.from_private_bytes(
    bytes((0x11 + 7 * i) & 0xff for i in range(32))).public_key().public_bytes(
        Encoding.Raw, PublicFormat.Raw)
put("create2", "ntor-valid", struct.pack(">HH", 2, 84) + node_id + ntor_pub +
    bytes(range(9, 41)))
put("create2", "ntor3-cm-empty", b"\xff" + b"\x00")
put("create2", "ntor3-cm-two", b"\xff" + b"\x02\x02\x00\x05\x03abc")
# ---- relay cells
ls = (b"\x00\x06\x7f\x00\x00\x01\x23\x29" + b"\x02\x14" + b"\x44" * 20 +
      b"\x03\x20" + b"\x55" * 32)
ext2 = bytes([3]) + ls + struct.pack(">HH", 2, 84) + b"\x66" * 84
put("relay", "extend2", relay(14, 0, ext2))
put("relay", "extended2", relay(15, 0, struct.pack(">H", 64) + b"\x77" * 64))
link = bytes([1]) + b"\x88" * 32 + struct.pack(">QQ", 5, 6) + b"\x02"
put("relay", "conflux", relay(19, 0, link) + relay(20, 0, link) +
    relay(22, 0, struct.pack(">I", 1000)))
put("relay", "measureme", relay(224, 0, b"\x00" * 16))
rec = struct.pack(">12I", 0, 0, 3, 40, 0, 3, 12, 50, 2, 40, 900, 4000)
put("relay", "measureme-answer",
    relay(225, 0, b"\x01\x01" + b"\xab" * 8 + b"\x00") +
    relay(225, 0, b"\x01\x02" + b"\xab" * 8 + b"\x02" + rec + rec))
put("relay", "xoff-xon", relay(43, 3, b"\x00") + relay(44, 3, b"\x00" + struct.pack(">I", 500)))
put("relay", "sendme", relay(5, 0, b"\x01" + struct.pack(">H", 20) + b"\x5a" * 20) +
    relay(5, 7, b""))
# ---- directory documents
put("consensus", "consensus-ns", doc("consensus-ns"))
put("consensus", "consensus-microdesc", doc("consensus-microdesc"))
put("microdesc", "microdescs", doc("microdescs"))
put("serverdesc", "server-all", doc("server-all"))
put("keycert", "keys-all", doc("keys-all"))
# ---- HTTP (0 + response, 2 + response to a .z path, 1 + request)
md = doc("microdescs")
put("dir_http", "resp-identity", b"\x00HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
    b"Content-Length: %d\r\n\r\n" % len(md) + md)
put("dir_http", "resp-deflate", b"\x02HTTP/1.0 200 OK\r\nContent-Encoding: deflate\r\n\r\n" +
    zlib.compress(md))
zmd = zstd(md)
put("dir_http", "resp-zstd", zmd and b"\x00HTTP/1.0 200 OK\r\n"
    b"Content-Encoding: x-zstd\r\n\r\n" + zmd)
put("dir_http", "resp-404", b"\x00HTTP/1.0 404 Not found\r\n\r\n")
put("dir_http", "req-consensus", b"\x01GET /tor/status-vote/current/consensus-microdesc HTTP/1.0\r\n"
    b"Accept-Encoding: deflate, identity, gzip, x-zstd, x-tor-lzma\r\n\r\n")
put("dir_http", "req-md-z", b"\x01GET /tor/micro/d/AAAA-BBBB.z HTTP/1.0\r\n\r\n")
put("dir_http", "req-bad", b"\x01POST / HTTP/1.1\r\n\r\n")
# ---- compressed bodies (byte 0: method | 8 for streaming; byte 1: step)
for m, name, z in ((0, "identity", md), (1, "deflate", zlib.compress(md)),
                   (2, "gzip", gzip.compress(md, mtime=0)), (3, "zstd", zmd),
                   (4, "lzma", lzma.compress(md, format=lzma.FORMAT_ALONE,
                                             preset=6))):
    put("compress", name, z and bytes([m, 0]) + z)
    put("compress", name + "-stream", z and bytes([m | 8, 5]) + z)
put("compress", "deflate-concat", bytes([1, 0]) + zlib.compress(b"one ") + zlib.compress(b"two"))
# ---- SOCKS (byte 0: flags | step << 1)
put("socks", "socks4a", b"\x1e\x04\x01\x00\x50\x00\x00\x00\x01user\x00example.com\x00")
put("socks", "socks4", b"\x02\x04\x01\x01\xbb\x7f\x00\x00\x01\x00")
put("socks", "socks5-noauth-host", b"\x3f\x05\x01\x00" + b"\x05\x01\x00\x03\x0bexample.com\x00\x50")
put("socks", "socks5-userpass-v6", b"\x08\x05\x02\x00\x02" + b"\x01\x03usr\x04pass" +
    b"\x05\x01\x00\x04" + b"\0" * 15 + b"\x01\x01\xbb")
put("socks", "socks5-resolve-ptr", b"\x10\x05\x01\x00\x05\xf1\x00\x01\x7f\x00\x00\x01\x00\x00")
put("socks", "http", b"\x00GET / HTTP/1.1\r\n\r\n")
# ---- DNS names
for i, n in enumerate([b"example.com", b"1.2.3.4", b"[::1]", b"4.3.2.1.in-addr.arpa",
                       b"b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.0.0.0.0.1.2.3.4.ip6.arpa",
                       b"a-b.c_d.example.", b"x" * 64 + b".com"]):
    put("dns", "name%d" % i, n)
# ---- VICI (segment header + packet type + message)
def vici_kv(k, v):
    return b"\x03" + bytes([len(k)]) + k + struct.pack(">H", len(v)) + v


msg = (vici_kv(b"success", b"yes") + b"\x01\x04conn" + vici_kv(b"state", b"ESTABLISHED") +
       b"\x04\x05addrs" + b"\x05" + struct.pack(">H", 8) + b"10.0.0.1" + b"\x06" + b"\x02")
seg = b"\x01" + msg
put("vici", "response", struct.pack(">I", len(seg)) + seg)
ev = b"\x07" + bytes([8]) + b"ike-updown" [:8] + msg
put("vici", "event", struct.pack(">I", len(ev)) + ev + struct.pack(">I", 1) + b"\x05")
put("vici", "error", struct.pack(">I", 1 + 24) + b"\x01" + vici_kv(b"success", b"no") +
    vici_kv(b"errmsg", b"x"))
# ---- IPsec announcement (version 1), with a valid certificate chain
# identity --type 4--> signing key --type 0xF0--> IKE key (ike_key.h),
# valid at the fuzz target's fixed time (2023-11-14) for ten years.
def ed_key(seed_byte):
    k = Ed25519PrivateKey.from_private_bytes(bytes([seed_byte]) * 32)
    return k, k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def ed_cert(signer, signer_pub, cert_type, certified):
    expires = 1700000000 // 3600 + 24 * 365 * 10
    body = (struct.pack(">BBIB", 1, cert_type, expires, 1) + certified +
            b"\x01" + struct.pack(">HBB", 32, 4, 0) + signer_pub)
    return body + signer.sign(body)


idk, idpub = ed_key(1)
sigk, sigpub = ed_key(2)
_, ikepub = ed_key(3)
scert = ed_cert(idk, idpub, 4, sigpub)
icert = ed_cert(sigk, sigpub, 0xF0, ikepub)
for name, flags, ready in (("offer", 1, b"\0" * 32), ("offer-ready", 3, b"\xaa" * 32)):
    ann = (b"\x01" + bytes([flags]) + struct.pack(">I", 7) + b"\x04\x7f\x00\x00\x01" +
           struct.pack(">H", 9001) + ikepub + ready +
           struct.pack(">H", len(scert)) + scert + struct.pack(">H", len(icert)) + icert)
    put("ipsec_announce", name, ann)
put("ipsec_announce", "v6-no-certs", b"\x01\x04" + struct.pack(">I", 1) + b"\x06" +
    b"\0" * 15 + b"\x01" + struct.pack(">H", 443) + b"\x99" * 64 + b"\0\0\0\0")
# ---- torrc
put("torrc", "basic", "# comment\nORPort 9001\nNickname test\nExitPolicy accept *:80, reject *:*\n"
    "Address \"127.0.0.1\"\nContactInfo a \\\n  continued\n%include /nonexistent\n"
    "+HiddenServicePort 80\n/ExitPolicy\n")
put("torrc", "dirauth", doc("dirauth.torrc"))
# ---- exit policies (byte 0: mode; then lines)
put("policy", "default-exit", "\x03accept *:80\nreject 10.0.0.0/8:*\naccept6 [::1]:443\n"
    "accept *:1024-65535\nreject *:*")
put("policy", "plain", "\x00reject private:*\naccept 192.168.0.0/16:22,accept *4:*")
put("policy", "summary", "\x02accept 80,443,1000-2000")
# ---- BackTap records (doc/backtap.md), as operations on one link
def bt_op(op, body=b""):
    return bytes([op]) + (struct.pack(">H", len(body)) + body if op in (0, 1) else b"")


def bt_cell(circ, seq, flags, cmd=3):
    return struct.pack(">IIBB", circ, seq, flags, cmd) + b"\0" * 509


def bt_fb(circ, flags, ack, fwd):
    return struct.pack(">IBII", circ, flags, ack, fwd)


put("backtap", "open-and-deliver",
    bt_op(0, bt_cell(0x200, 1000, 1)) + bt_op(0, bt_cell(0x200, 1001, 0)) +
    bt_op(4) + bt_op(3) + bt_op(3) + bt_op(4))
put("backtap", "out-of-order",
    bt_op(0, bt_cell(0x200, 7, 1)) + bt_op(0, bt_cell(0x200, 9, 0)) +
    bt_op(0, bt_cell(0x200, 10, 0)) + bt_op(0, bt_cell(0x200, 8, 0)) +
    bt_op(0, bt_cell(0x200, 9, 0)) + bt_op(4))
put("backtap", "feedback-and-timers",
    bt_op(1, bt_fb(0x100, 0x1b, 5, 3)) + bt_op(1, bt_fb(0x100, 4, 0, 0)) +
    bytes([2, 250, 2, 250, 2, 250, 2, 250]) + bt_op(1, bt_fb(0x100, 3, 0, 0)))


# ---- relay cells on a live circuit (fuzz_circuit.c): byte 0 picks the
# circuit (1: previous hop is a relay), then records of a control byte
# (1: encrypted by the client and given to command.c, 2: RELAY_EARLY,
# 4: run the event loop after it, 8: with 1, for a hop beyond the relay,
# 16/32: CREATED2/RELAY from the next hop) and a 509-byte relay payload.
def rec(ctl, cmd, stream, body):
    return bytes([ctl]) + relay(cmd, stream, body)


DIRREQ = (b"GET /tor/status-vote/current/consensus-microdesc HTTP/1.0\r\n"
          b"Accept-Encoding: deflate, identity\r\n\r\n")
put("circuit", "begin-dir-get",
    b"\x01" + rec(1, 13, 1, b"") + rec(1, 2, 1, DIRREQ) +
    rec(5, 5, 1, b"") + rec(1, 3, 1, b"\x06"))
put("circuit", "begin-dir-raw-split",
    b"\x00" + rec(0, 13, 3, b"") + rec(0, 2, 3, DIRREQ[:20]) +
    rec(0, 2, 3, DIRREQ[20:]) + rec(4, 13, 3, b"") + rec(0, 13, 0, b""))
put("circuit", "begin-ip-literal",
    b"\x01" + rec(1, 1, 5, b"127.0.0.1:80\0" + struct.pack(">I", 0)) +
    rec(1, 1, 6, b"[::1]:443\0" + struct.pack(">I", 5)) +
    rec(1, 2, 5, b"hello") + rec(5, 3, 5, b"\x06"))
put("circuit", "begin-name",
    b"\x01" + rec(1, 1, 7, b"example.com:443\0") +
    rec(1, 1, 8, b"x.onion:80\0") + rec(5, 3, 7, b"\x01"))
put("circuit", "begin-first-hop",
    b"\x02" + rec(1, 1, 9, b"127.0.0.1:80\0") + rec(1, 13, 10, b""))
put("circuit", "resolve",
    b"\x01" + rec(1, 11, 11, b"example.com\0") +
    rec(1, 11, 12, b"1.0.0.127.in-addr.arpa\0") +
    rec(1, 11, 13, b"4.3.2.1.in-addr.arpa\0") + rec(5, 11, 14, b"a.exit\0"))
put("circuit", "sendme-xoff-data",
    b"\x01" + rec(1, 13, 2, b"") + rec(1, 43, 2, b"\x00") +
    rec(1, 44, 2, b"\x00" + struct.pack(">I", 500)) +
    rec(1, 5, 2, b"") + rec(1, 5, 0, b"\x01" + struct.pack(">H", 20) +
                              b"\x5a" * 20) + rec(1, 2, 2, b"x" * 498))
put("circuit", "extend2-middle",
    b"\x01" + rec(3, 14, 0, ext2) + rec(1, 4, 0, b"") + rec(5, 2, 1, b""))
put("circuit", "conflux-link",
    b"\x01" + rec(1, 19, 0, link) + rec(1, 22, 0, struct.pack(">I", 3)) +
    rec(1, 13, 4, b"") + rec(5, 2, 4, DIRREQ))
# 5: a relay's circuit with congestion control (ntor v3).
put("circuit", "cc-xoff-xon-conflux",
    b"\x05" + rec(1, 13, 2, b"") + rec(1, 2, 2, DIRREQ) +
    rec(1, 43, 2, b"\x00") + rec(1, 44, 2, b"\x00" + struct.pack(">I", 500)) +
    rec(1, 19, 0, link) + rec(1, 22, 0, struct.pack(">I", 3)) +
    rec(5, 5, 0, b"\x01" + struct.pack(">H", 20) + b"\x5a" * 20))
put("circuit", "extend2-then-forward",
    b"\x05" + rec(3, 14, 0, ext2) + rec(4, 2, 1, b"") +
    bytes([0x10]) + (struct.pack(">H", 64) + b"\x77" * 64).ljust(509, b"\0") +
    rec(9, 2, 1, b"on") + rec(13, 4, 0, b"") +
    bytes([0x24]) + b"\x5b" * 509 + rec(1, 4, 0, b""))
MM = struct.pack(">BBHI", 1, 0, 100, 0) + b"fuzzlab1"
put("circuit", "measureme",
    b"\x01" + rec(1, 224, 0, MM) + rec(5, 2, 0, b"") +
    rec(1, 224, 0, MM) + rec(5, 13, 1, b"") + rec(1, 2, 1, DIRREQ) +
    rec(5, 5, 0, b""))
# 9: a relay's circuit at an exit whose policy accepts 127.0.0.1:9.
put("circuit", "begin-connect-port9",
    b"\x09" + rec(1, 1, 5, b"127.0.0.1:9\0") + rec(1, 2, 5, b"early data") +
    rec(5, 2, 5, b"more") + rec(4, 2, 0, b"") + rec(5, 3, 5, b"\x06"))
