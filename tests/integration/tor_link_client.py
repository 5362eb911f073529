#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tor_link_client.py -- a raw Tor link-protocol client for misbehaviour tests.

Speaks just enough of tor-spec sections 3-5 (cells, the in-protocol link
handshake, CREATE_FAST) over TLS to send a relay the malformed or
out-of-place input that a real client never would, and checks how the relay
reacts: closes the connection, answers with a DESTROY, or ignores the cell
and keeps the connection usable. Used by relay-badinput.sh, one case per
run:

    tor_link_client.py --port P [--host H] [--datadir DIR] --case NAME
    tor_link_client.py --list

It prints one line per step, then the local ports of its connections
("local ports: P ..."; the relay's log names a connection by them), and
exits 0 when the relay behaved as expected,
1 with the reason otherwise, 77 when the case cannot run here (a case that
needs --datadir without it).

Design:
- Python 3 standard library only (socket, ssl, struct, os, hashlib), so it
  runs wherever the test suite runs; only the flood cases that need relay
  crypto or ntor use python3-cryptography, and skip without it. TLS
  certificates are not verified: the relay's identity is not what these
  tests are about.
- "Ignored" is checked by ordering rather than by waiting: after the bad
  cell the client sends a CREATE_FAST and the first cell back must be its
  CREATED_FAST. A relay processes a connection's cells in order, so an
  answer to the bad cell would have arrived first.
- Cases that need a valid initiator certificate chain (type 6, signing key
  -> AUTHENTICATE key) sign one with the relay's own medium-term signing key
  from its DataDirectory (--datadir), with a small pure-Python Ed25519
  (RFC 8032 section 5.1) since the standard library has none. The relay
  then sees a plausible chain whose only fault is the one the case plants.
"""

import argparse
import hashlib
import os
import socket
import ssl
import struct
import sys
import time

# Cell commands (tor-spec 3).
PADDING, CREATE, CREATED, RELAY, DESTROY = 0, 1, 2, 3, 4
CREATE_FAST, CREATED_FAST, VERSIONS, NETINFO = 5, 6, 7, 8
RELAY_EARLY, CREATE2, CREATED2 = 9, 10, 11
VPADDING, CERTS, AUTH_CHALLENGE, AUTHENTICATE = 128, 129, 130, 131

PAYLOAD_LEN = 509
HASH_LEN = 20


class Closed(Exception):
    """The relay closed the connection."""


class Failed(Exception):
    """The relay did not behave as the case expects."""


class Skip(Exception):
    """The case cannot run here."""


def is_var(command):
    return command == VERSIONS or command >= 128


def cmd_name(command):
    names = {PADDING: "PADDING", CREATE: "CREATE", CREATED: "CREATED",
             RELAY: "RELAY", DESTROY: "DESTROY", CREATE_FAST: "CREATE_FAST",
             CREATED_FAST: "CREATED_FAST", VERSIONS: "VERSIONS",
             NETINFO: "NETINFO", CREATE2: "CREATE2", CREATED2: "CREATED2",
             VPADDING: "VPADDING", CERTS: "CERTS",
             AUTH_CHALLENGE: "AUTH_CHALLENGE", AUTHENTICATE: "AUTHENTICATE"}
    return names.get(command, "command %d" % command)


# ---- Ed25519 (RFC 8032 section 5.1), signing only ---------------------

ED_P = 2 ** 255 - 19
ED_L = 2 ** 252 + 27742317777372353535851937790883648493
ED_D = -121665 * pow(121666, ED_P - 2, ED_P) % ED_P


def _ed_add(p1, p2):
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % ED_P
    b = (y1 + x1) * (y2 + x2) % ED_P
    c = 2 * t1 * t2 * ED_D % ED_P
    d = 2 * z1 * z2 % ED_P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % ED_P, g * h % ED_P, f * g % ED_P, e * h % ED_P)


def _ed_mul(s, pt):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _ed_add(q, pt)
        pt = _ed_add(pt, pt)
        s >>= 1
    return q


def _ed_encode(pt):
    x, y, z, _ = pt
    zi = pow(z, ED_P - 2, ED_P)
    x, y = x * zi % ED_P, y * zi % ED_P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _ed_base():
    y = 4 * pow(5, ED_P - 2, ED_P) % ED_P
    x2 = (y * y - 1) * pow(ED_D * y * y + 1, ED_P - 2, ED_P) % ED_P
    x = pow(x2, (ED_P + 3) // 8, ED_P)
    if (x * x - x2) % ED_P:
        x = x * pow(2, (ED_P - 1) // 4, ED_P) % ED_P
    if x & 1:
        x = ED_P - x
    return (x, y, 1, x * y % ED_P)


ED_B = _ed_base()


def _sha512_int(data):
    return int.from_bytes(hashlib.sha512(data).digest(), "little")


class Ed25519Key:
    """An Ed25519 key pair from a 32-byte RFC 8032 seed, or (expanded=True)
    from a 64-byte expanded secret key as tor's key files hold it: the
    clamped scalar, then the nonce prefix."""

    def __init__(self, seed, expanded=False):
        h = seed if expanded else hashlib.sha512(seed).digest()
        a = int.from_bytes(h[:32], "little")
        a &= (1 << 254) - 8
        a |= 1 << 254
        self.a = a
        self.prefix = h[32:]
        self.pub = _ed_encode(_ed_mul(a, ED_B))

    def sign(self, msg):
        r = _sha512_int(self.prefix + msg) % ED_L
        big_r = _ed_encode(_ed_mul(r, ED_B))
        k = _sha512_int(big_r + self.pub + msg) % ED_L
        s = (r + k * self.a) % ED_L
        return big_r + s.to_bytes(32, "little")


def ed_cert(signer, cert_type, certified_key, hours_valid=48):
    """A cert-spec Ed25519 certificate with no extensions."""
    expires = int(time.time()) // 3600 + hours_valid
    body = struct.pack(">BBIB", 1, cert_type, expires, 1) + certified_key
    body += b"\x00"
    return body + signer.sign(body)


# ---- cells --------------------------------------------------------------

def pack_cell(circ_id, command, payload=b"", proto=4):
    """A fixed-length cell (payload zero-padded) or, for variable-length
    commands, a var cell. proto 0 means 2-byte circuit IDs."""
    cid = struct.pack(">I", circ_id) if proto >= 4 else \
        struct.pack(">H", circ_id & 0xffff)
    if is_var(command):
        return cid + struct.pack(">BH", command, len(payload)) + payload
    if len(payload) > PAYLOAD_LEN:
        raise ValueError("payload too long")
    return cid + bytes([command]) + payload.ljust(PAYLOAD_LEN, b"\x00")


def netinfo_payload(timestamp=0, other=b"\x7f\x00\x00\x01", my=()):
    p = struct.pack(">I", timestamp) + bytes([4, len(other)]) + other
    p += bytes([len(my)])
    for a in my:
        p += bytes([4 if len(a) == 4 else 6, len(a)]) + a
    return p


def parse_certs(payload):
    """[(type, body), ...] from a CERTS payload."""
    n = payload[0]
    off = 1
    out = []
    for _ in range(n):
        ctype, clen = struct.unpack(">BH", payload[off:off + 3])
        off += 3
        out.append((ctype, payload[off:off + clen]))
        off += clen
    return out


def build_certs(certs):
    p = bytes([len(certs)])
    for ctype, body in certs:
        p += struct.pack(">BH", ctype, len(body)) + body
    return p


def flip_last(data):
    return data[:-1] + bytes([data[-1] ^ 0x01])


def kdf_tor(k0, n):
    """KDF-TOR (tor-spec 5.2.1): SHA1(K0|0) | SHA1(K0|1) | ..."""
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha1(k0 + bytes([i])).digest()
        i += 1
    return out[:n]


class Link:
    """One TLS connection to a relay's ORPort."""

    def __init__(self, host, port, timeout=5.0, rcvbuf=None, bind=None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        family, _, _, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        raw = socket.socket(family, socket.SOCK_STREAM)
        if bind:
            # Another source address (127.0.0.0/8 is all ours): the relay
            # sees another client.
            raw.bind((bind, 0))
        if rcvbuf:
            # Fixed before connecting, so the kernel does not grow it.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.settimeout(timeout)
        raw.connect(addr)
        # Cells are small writes answered at once; don't let Nagle hold them.
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.local_port = raw.getsockname()[1]
        self.sock = ctx.wrap_socket(raw)
        self.sock.settimeout(timeout)
        self.timeout = timeout
        self.buf = b""
        self.proto = 0          # 0 until VERSIONS: 2-byte circuit IDs
        self.peer_certs = None  # [(type, body)] from the relay's CERTS
        self.eof = False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (OSError, ssl.SSLError) as e:
            raise Closed("send failed: %s" % e)

    def send_cell(self, circ_id, command, payload=b""):
        self.send(pack_cell(circ_id, command, payload, self.proto))

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            if self.eof:
                raise Closed("EOF")
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError,
                    ConnectionError) as e:
                self.eof = True
                raise Closed(str(e) or type(e).__name__)
            except ssl.SSLError as e:
                self.eof = True
                raise Closed("TLS error: %s" % e)
            if not data:
                self.eof = True
                raise Closed("EOF")
            self.buf += data

    def recv_cell(self, timeout=None):
        """(circ_id, command, payload); raises Closed or socket.timeout."""
        deadline = time.monotonic() + (timeout or self.timeout)
        idlen = 4 if self.proto >= 4 else 2
        self._fill(idlen + 1, deadline)
        command = self.buf[idlen]
        if is_var(command):
            self._fill(idlen + 3, deadline)
            plen = struct.unpack(">H", self.buf[idlen + 1:idlen + 3])[0]
            total = idlen + 3 + plen
            self._fill(total, deadline)
            payload = self.buf[idlen + 3:total]
        else:
            total = idlen + 1 + PAYLOAD_LEN
            self._fill(total, deadline)
            payload = self.buf[idlen + 1:total]
        circ_id = int.from_bytes(self.buf[:idlen], "big")
        self.buf = self.buf[total:]
        return circ_id, command, payload

    def expect_closed(self, timeout=5.0):
        """Read (and discard) until the relay closes the connection."""
        deadline = time.monotonic() + timeout
        n = 0
        while True:
            try:
                self._fill(len(self.buf) + 1, deadline)
            except Closed as e:
                return "connection closed by the relay (%s) after %d more " \
                       "bytes" % (e, n + len(self.buf))
            except socket.timeout:
                raise Failed("connection still open after %.0f s" % timeout)
            n += len(self.buf)
            self.buf = b""

    def expect_cell(self, want_cmd, circ_id=None, timeout=None):
        """The next cell must be want_cmd (on circ_id); returns payload."""
        try:
            cid, cmd, payload = self.recv_cell(timeout)
        except Closed as e:
            raise Failed("connection closed (%s) while waiting for %s"
                         % (e, cmd_name(want_cmd)))
        except socket.timeout:
            raise Failed("no %s within %.0f s" % (cmd_name(want_cmd),
                                                  timeout or self.timeout))
        if cmd != want_cmd or (circ_id is not None and cid != circ_id):
            detail = ""
            if cmd == DESTROY:
                detail = " (reason %d)" % payload[0]
            raise Failed("expected %s on circuit %s, got %s on circuit %d%s"
                         % (cmd_name(want_cmd),
                            "?" if circ_id is None else "%#x" % circ_id,
                            cmd_name(cmd), cid, detail))
        return payload

    # -- handshake steps --

    def send_versions(self, versions=(4, 5), raw_payload=None):
        payload = raw_payload if raw_payload is not None else \
            b"".join(struct.pack(">H", v) for v in versions)
        self.send(struct.pack(">HBH", 0, VERSIONS, len(payload)) + payload)

    def read_greeting(self):
        """VERSIONS, CERTS, AUTH_CHALLENGE, NETINFO from a responder."""
        payload = self.expect_cell(VERSIONS)
        theirs = [struct.unpack(">H", payload[i:i + 2])[0]
                  for i in range(0, len(payload) - 1, 2)]
        common = set(theirs) & {4, 5}
        if not common:
            raise Failed("relay offered versions %s" % theirs)
        self.proto = max(common)
        self.peer_certs = parse_certs(self.expect_cell(CERTS))
        self.expect_cell(AUTH_CHALLENGE)
        self.expect_cell(NETINFO)

    def client_handshake(self):
        self.send_versions()
        self.read_greeting()
        self.send_cell(0, NETINFO, netinfo_payload(0))

    # -- circuits --

    def create_fast(self, circ_id):
        """CREATE_FAST; checks the CREATED_FAST's KH (tor-spec 5.1.5)."""
        x = os.urandom(HASH_LEN)
        self.send_cell(circ_id, CREATE_FAST, x)
        payload = self.expect_cell(CREATED_FAST, circ_id)
        y, kh = payload[:HASH_LEN], payload[HASH_LEN:2 * HASH_LEN]
        if kdf_tor(x + y, HASH_LEN) != kh:
            raise Failed("CREATED_FAST on %#x has a wrong KH" % circ_id)

    def expect_destroy(self, circ_id, reason=None):
        payload = self.expect_cell(DESTROY, circ_id)
        if reason is not None and payload[0] != reason:
            raise Failed("DESTROY on %#x has reason %d, expected %d"
                         % (circ_id, payload[0], reason))
        return payload[0]


# ---- cases ----------------------------------------------------------------

CASES = {}


def case(name, needs_datadir=False):
    def reg(fn):
        fn.needs_datadir = needs_datadir
        CASES[name] = fn
        return fn
    return reg


def say(msg):
    print("  " + msg, flush=True)


class Ctx:
    def __init__(self, args):
        self.args = args
        self.links = []

    def link(self, rcvbuf=None):
        lk = Link(self.args.host, self.args.port, self.args.timeout, rcvbuf,
                  self.args.bind)
        self.links.append(lk)
        return lk

    def open_link(self, rcvbuf=None):
        lk = self.link(rcvbuf)
        lk.client_handshake()
        return lk

    def close_all(self):
        for lk in self.links:
            lk.close()


def check_usable(lk, circ_id, what):
    """The connection still works: a CREATE_FAST is answered first."""
    lk.create_fast(circ_id)
    say("%s; the connection still works (CREATE_FAST %#x answered)"
        % (what, circ_id))


# -- before / during the handshake --

@case("first-not-versions")
def c_first_not_versions(ctx):
    lk = ctx.link()
    # A CREATE2 with a 2-byte circuit ID, as a pre-v4 first cell would be.
    lk.send(pack_cell(1, CREATE2, struct.pack(">HH", 2, 84) + os.urandom(84),
                      proto=0))
    say(lk.expect_closed())


@case("versions-odd")
def c_versions_odd(ctx):
    lk = ctx.link()
    lk.send_versions(raw_payload=b"\x00\x04\x00")
    say(lk.expect_closed())


@case("versions-none-common")
def c_versions_none_common(ctx):
    lk = ctx.link()
    lk.send_versions((3,))
    say(lk.expect_closed())


@case("versions-empty")
def c_versions_empty(ctx):
    lk = ctx.link()
    lk.send_versions(())
    say(lk.expect_closed())


@case("create-during-handshake")
def c_create_during_hs(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0x80000001, CREATE_FAST, os.urandom(HASH_LEN))
    say(lk.expect_closed())


@case("netinfo-malformed")
def c_netinfo_malformed(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    # The other-address claims 255 bytes, then one of "my" addresses does
    # too: together they run past the 509-byte payload.
    p = struct.pack(">I", 0) + bytes([4, 255]) + b"\x01" * 255 + bytes([1])
    p += bytes([4, 255])
    lk.send_cell(0, NETINFO, p.ljust(PAYLOAD_LEN, b"\x02"))
    say(lk.expect_closed())


@case("authenticate-before-certs")
def c_auth_before_certs(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, AUTHENTICATE, struct.pack(">HH", 3, 352) +
                 os.urandom(352))
    say(lk.expect_closed())


@case("certs-garbage")
def c_certs_garbage(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    # Three certificates announced; the second runs past the payload.
    p = bytes([3]) + struct.pack(">BH", 2, 4) + b"abcd" + \
        struct.pack(">BH", 4, 1000) + os.urandom(20)
    lk.send_cell(0, CERTS, p)
    say(lk.expect_closed())


@case("certs-duplicate-type")
def c_certs_dup(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    certs = dict(lk.peer_certs)
    lk.send_cell(0, CERTS, build_certs([(2, certs[2]), (2, certs[2])]))
    say(lk.expect_closed())


@case("certs-255-empty")
def c_certs_255(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    # The most entries a CERTS cell can list, all distinct and empty.
    lk.send_cell(0, CERTS, build_certs([(t, b"") for t in range(255)]))
    say(lk.expect_closed())


@case("certs-missing-auth")
def c_certs_missing(ctx):
    """Replay the relay's own responder CERTS (2,4,5,7): no type 6."""
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(lk.peer_certs))
    say(lk.expect_closed())


def relabelled_certs(lk, flip=None):
    """The relay's own CERTS with its link cert (5) sent as type 6; with
    flip, the last byte (in the signature) of that type is flipped."""
    out = []
    for ctype, body in lk.peer_certs:
        if ctype == 5:
            ctype = 6
        if ctype == flip:
            body = flip_last(body)
        out.append((ctype, body))
    return out


@case("certs-wrong-cert-type")
def c_certs_wrong_type(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(relabelled_certs(lk)))
    say(lk.expect_closed())


@case("certs-rsa-bad-signature")
def c_certs_rsa_badsig(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(relabelled_certs(lk, flip=2)))
    say(lk.expect_closed())


@case("certs-ed-bad-signature")
def c_certs_ed_badsig(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(relabelled_certs(lk, flip=4)))
    say(lk.expect_closed())


def signing_key(datadir):
    """The relay's medium-term Ed25519 signing key from its DataDirectory
    (keys/ed25519_signing_secret_key, tor's format: the 32-byte header
    "== ed25519v1-secret: type4 ==", then the 64-byte expanded key). The
    public key is checked against keys/ed25519_signing_cert."""
    path = os.path.join(datadir, "keys", "ed25519_signing_secret_key")
    cpath = os.path.join(datadir, "keys", "ed25519_signing_cert")
    try:
        with open(path, "rb") as f:
            data = f.read()
        with open(cpath, "rb") as f:
            cert = f.read()
    except OSError as e:
        raise Skip("cannot read the signing key: %s" % e)
    if len(data) != 96 or not data.startswith(b"== ed25519v1-secret: type4 =="):
        raise Skip("%s is not in tor's 96-byte format" % path)
    key = Ed25519Key(data[32:96], expanded=True)
    # cert: 32-byte header, version, type, expiry[4], key type, key[32]
    if cert[32 + 7:32 + 39] != key.pub:
        raise Failed("Ed25519 self-check failed: the key in %s is not the "
                     "one %s certifies" % (path, cpath))
    return key


def initiator_certs(ctx, lk, flip=None):
    """A complete initiator CERTS (2,4,6,7): the relay's own 2, 4 and 7 and
    a type-6 certificate for a fresh key signed with its signing key."""
    signer = signing_key(ctx.args.datadir)
    auth_pub = Ed25519Key(os.urandom(32)).pub
    certs = dict(lk.peer_certs)
    out = [(2, certs[2]), (4, certs[4]), (6, ed_cert(signer, 6, auth_pub)),
           (7, certs[7])]
    return [(t, flip_last(b) if t == flip else b) for t, b in out]


@case("certs-auth-bad-signature", needs_datadir=True)
def c_certs_auth_badsig(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(initiator_certs(ctx, lk, flip=6)))
    say(lk.expect_closed())


@case("certs-crosscert-bad-signature", needs_datadir=True)
def c_certs_cross_badsig(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(initiator_certs(ctx, lk, flip=7)))
    say(lk.expect_closed())


@case("certs-duplicate-cell", needs_datadir=True)
def c_certs_twice(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    good = build_certs(initiator_certs(ctx, lk))
    lk.send_cell(0, CERTS, good)
    lk.send_cell(0, CERTS, good)
    say(lk.expect_closed())


@case("authenticate-bad", needs_datadir=True)
def c_authenticate_bad(ctx):
    """Valid certificates, then an AUTHENTICATE that proves nothing."""
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(initiator_certs(ctx, lk)))
    body = b"AUTH0003" + os.urandom(352 - 8)
    lk.send_cell(0, AUTHENTICATE, struct.pack(">HH", 3, len(body)) + body)
    say(lk.expect_closed())


@case("netinfo-without-authenticate", needs_datadir=True)
def c_netinfo_no_auth(ctx):
    lk = ctx.link()
    lk.send_versions()
    lk.read_greeting()
    lk.send_cell(0, CERTS, build_certs(initiator_certs(ctx, lk)))
    lk.send_cell(0, NETINFO, netinfo_payload(0))
    say(lk.expect_closed())


# -- on an open connection --

@case("open-sequence")
def c_open_sequence(ctx):
    """Bad cells on one open connection, each ignored or answered with a
    DESTROY, the connection usable after each."""
    lk = ctx.open_link()
    say("handshake done (link protocol %d)" % lk.proto)
    lk.send_cell(0, 50, os.urandom(PAYLOAD_LEN))
    check_usable(lk, 0x80000101, "unknown fixed-length command 50 ignored")
    lk.send_cell(0x80000002, 200, os.urandom(100))
    check_usable(lk, 0x80000102, "unknown variable-length command 200 "
                 "ignored")
    lk.send_cell(0x80000bad, RELAY, os.urandom(PAYLOAD_LEN))
    check_usable(lk, 0x80000103, "RELAY for a non-existent circuit dropped")
    lk.send_cell(0x80000bad, DESTROY, b"\x00")
    check_usable(lk, 0x80000104, "DESTROY for a non-existent circuit "
                 "ignored")
    lk.send_cell(0x80000bad, CREATED_FAST, os.urandom(40))
    check_usable(lk, 0x80000105, "CREATED_FAST for a non-existent circuit "
                 "ignored")
    lk.send_cell(0x80000101, CREATE_FAST, os.urandom(HASH_LEN))
    check_usable(lk, 0x80000106, "CREATE_FAST for an existing circuit "
                 "dropped")
    lk.send_cell(0x00000005, CREATE_FAST, os.urandom(HASH_LEN))
    lk.expect_destroy(0x00000005, reason=1)
    say("CREATE_FAST with the high bit clear: DESTROY (PROTOCOL) back")
    lk.send_cell(0x80000007, CREATE, os.urandom(PAYLOAD_LEN))
    lk.expect_destroy(0x80000007, reason=1)
    say("CREATE (TAP): DESTROY (PROTOCOL) back")
    lk.send_cell(0x80000008, CREATE2, struct.pack(">HH", 2, 10) +
                 os.urandom(10))
    lk.expect_destroy(0x80000008, reason=1)
    say("CREATE2 ntor with HLEN 10: DESTROY (PROTOCOL) back")
    lk.send_cell(0x80000009, CREATE2, struct.pack(">HH", 2, 0xffff) +
                 os.urandom(84))
    lk.expect_destroy(0x80000009, reason=1)
    say("CREATE2 with HLEN 65535: DESTROY (PROTOCOL) back")
    lk.send_cell(0x8000000a, CREATE2, struct.pack(">HH", 0x77, 4) + b"abcd")
    lk.expect_destroy(0x8000000a, reason=1)
    say("CREATE2 with unknown HTYPE 0x77: DESTROY (PROTOCOL) back")
    lk.send_cell(0x80000101, RELAY, os.urandom(PAYLOAD_LEN))
    lk.expect_destroy(0x80000101, reason=1)
    say("garbage RELAY cell on a one-hop circuit: DESTROY (PROTOCOL) back")
    check_usable(lk, 0x80000101, "circuit ID reusable after the DESTROY")
    lk.send_cell(0, CREATE_FAST, os.urandom(HASH_LEN))
    say(lk.expect_closed())
    say("CREATE_FAST with circuit ID 0 closed the connection")


@case("destroy-other-connection")
def c_destroy_other(ctx):
    """A DESTROY on connection B for the ID of a circuit on connection A
    must not touch A's circuit."""
    a = ctx.open_link()
    b = ctx.open_link()
    x = 0x80000abc
    a.create_fast(x)
    say("A: circuit %#x created" % x)
    b.send_cell(x, DESTROY, b"\x03")
    b.create_fast(0x80000def)  # B's DESTROY has been processed
    say("B: DESTROY %#x sent (and processed)" % x)
    # On A: the circuit still exists, so a second CREATE_FAST with its ID
    # is dropped, and the next reply is for another circuit -- not a DESTROY.
    a.send_cell(x, CREATE_FAST, os.urandom(HASH_LEN))
    a.create_fast(0x80000123)
    say("A: no DESTROY for %#x; CREATE_FAST with its ID dropped as a "
        "duplicate" % x)
    a.send_cell(x, RELAY, os.urandom(PAYLOAD_LEN))
    a.expect_destroy(x, reason=1)
    say("A: circuit %#x still there (a garbage RELAY on it is answered "
        "with DESTROY)" % x)


@case("relay-while-create2-pending")
def c_relay_while_pending(ctx):
    """RELAY cells right behind a CREATE2 (in the same write, so they
    arrive while the handshake is still on a worker thread) are held for
    the circuit, at most 16: the 17th closes it with DESTROY
    (RESOURCELIMIT) instead of the handshake's answer."""
    lk = ctx.open_link()
    cid = 0x80000c01
    data = pack_cell(cid, CREATE2, struct.pack(">HH", 2, 84) +
                     os.urandom(84))
    for _ in range(17):
        data += pack_cell(cid, RELAY, os.urandom(PAYLOAD_LEN))
    lk.send(data)
    lk.expect_destroy(cid, reason=5)
    say("CREATE2 and 17 RELAY cells at once: DESTROY (RESOURCELIMIT) back")
    check_usable(lk, 0x80000c02, "the circuit was closed")


# -- truncated input: the relay must just survive these --

@case("truncated-prehandshake")
def c_trunc_pre(ctx):
    lk = ctx.link()
    lk.send(b"\x00\x00\x07\x00")  # half a VERSIONS header
    lk.close()
    say("sent 4 bytes of a VERSIONS cell and closed")


@case("huge-var-prehandshake")
def c_huge_pre(ctx):
    lk = ctx.link()
    lk.send(struct.pack(">HBH", 0, VERSIONS, 0xffff) + b"\x00\x04" * 5)
    lk.close()
    say("sent a VERSIONS header claiming 65535 bytes, 10 of them, closed")


@case("truncated-open")
def c_trunc_open(ctx):
    lk = ctx.open_link()
    lk.send(pack_cell(0x80000001, CREATE_FAST, os.urandom(20), 5)[:200])
    lk.close()
    say("sent 200 of 514 bytes of a cell on an open connection and closed")


@case("huge-var-open")
def c_huge_open(ctx):
    lk = ctx.open_link()
    lk.send(struct.pack(">IBH", 0, VPADDING, 0xffff) + os.urandom(1000))
    lk.close()
    say("sent a VPADDING header claiming 65535 bytes, 1000 of them, closed")


@case("huge-var-complete")
def c_huge_complete(ctx):
    lk = ctx.open_link()
    lk.send(struct.pack(">IBH", 0, VPADDING, 0xffff) + os.urandom(0xffff))
    check_usable(lk, 0x80000001, "a complete 65535-byte VPADDING ignored")


@case("flood-without-reading")
def c_flood(ctx):
    """Requests that each get an answer, sent by a peer that never reads
    the answers: the relay must stop buffering and close the connection.
    (The answers fill our small receive buffer, the relay's socket buffer
    and then its output buffer, which pctor caps at 4 MB.)"""
    lk = ctx.open_link(rcvbuf=65536)
    # CREATE_FASTs with the wrong high bit: a DESTROY each, no state kept.
    batch = b"".join(pack_cell(i, CREATE_FAST, b"", lk.proto)
                     for i in range(1, 1001))
    sent = 0
    try:
        for _ in range(40):  # up to 20 MB of requests, 20 MB of answers
            lk.send(batch)
            sent += len(batch)
    except Closed:
        say("the relay closed the connection after %d MB of requests it "
            "could not answer" % (sent >> 20))
        return
    # The relay may also close while we still send; then the send fails
    # above. Otherwise it must close soon after the last request.
    lk.buf = b""
    try:
        lk.sock.settimeout(10)
        lk.sock.recv(1)
    except (OSError, ssl.SSLError):
        pass
    raise Failed("sent %d MB of requests without reading; the relay kept "
                 "the connection open" % (sent >> 20))


# -- denial-of-service defences (dos-flood.sh) --

@case("create-one")
def c_create_one(ctx):
    lk = ctx.open_link()
    check_usable(lk, 0x80000001, "a well-behaved client")


@case("dos-create-flood")
def c_dos_create_flood(ctx):
    """Three connections from one address, then --count CREATE_FASTs as
    fast as the answers come: with tor's defaults (burst 90, 3 per second,
    3 connections) the relay answers CREATED_FAST about 90 times, then
    DESTROY (RESOURCELIMIT), also on a connection opened afterwards."""
    links = [ctx.open_link() for _ in range(3)]
    n = ctx.args.count or 200
    created = refused = 0
    first_refused = None
    cid = 0x80000001
    start = time.monotonic()
    for i in range(n):
        lk = links[i % 3]
        lk.send_cell(cid, CREATE_FAST, os.urandom(HASH_LEN))
        got, cmd, payload = lk.recv_cell()
        if got != cid:
            raise Failed("answer on circuit %#x, expected %#x" % (got, cid))
        if cmd == CREATED_FAST:
            created += 1
        elif cmd == DESTROY and payload[0] == 5:
            refused += 1
            if first_refused is None:
                first_refused = i + 1
        else:
            raise Failed("CREATE_FAST %d answered with %s" % (i + 1,
                                                             cmd_name(cmd)))
        cid += 1
    elapsed = time.monotonic() - start
    say("%d CREATE_FAST in %.1f s: %d created, %d refused (RESOURCELIMIT), "
        "the first refusal at #%s" % (n, elapsed, created, refused,
                                      first_refused))
    print("created %d refused %d" % (created, refused), flush=True)
    if not refused:
        raise Failed("no CREATE was refused")
    allowed = ctx.args.burst + ctx.args.rate * elapsed + 2
    if created > allowed:
        raise Failed("%d circuits created; at most %.0f expected"
                     % (created, allowed))
    lk = ctx.open_link()
    lk.send_cell(0x80000001, CREATE_FAST, os.urandom(HASH_LEN))
    lk.expect_destroy(0x80000001, 5)
    say("a new connection from the same address is refused too")


NTOR_PROTOID = b"ntor-curve25519-sha256-1"


def relay_ntor_keys(datadir):
    """(RSA identity digest, ntor public key) of the relay whose
    DataDirectory is datadir: its "fingerprint" file and the public key
    that tor's 96-byte keys/secret_onion_key_ntor ends with."""
    try:
        with open(os.path.join(datadir, "fingerprint")) as f:
            node_id = bytes.fromhex(f.read().split()[1])
        with open(os.path.join(datadir, "keys",
                               "secret_onion_key_ntor"), "rb") as f:
            ntor = f.read()
    except (OSError, IndexError, ValueError) as e:
        raise Skip("cannot read the relay's keys: %s" % e)
    if len(node_id) != HASH_LEN or len(ntor) != 96:
        raise Skip("the relay's keys are not in tor's format")
    return node_id, ntor[64:]


class NtorClient:
    """The client side of one ntor handshake (tor-spec 5.1.4) with
    python3-cryptography's X25519: onionskin() is the CREATE2 body,
    check() verifies the CREATED2's AUTH, so a CREATED2 proves the relay
    did the whole handshake."""

    def __init__(self, node_id, ntor_pub):
        from cryptography.hazmat.primitives.asymmetric.x25519 import (
            X25519PrivateKey, X25519PublicKey)
        from cryptography.hazmat.primitives import serialization
        self._pub = X25519PublicKey
        raw = serialization.Encoding.Raw
        self.x = X25519PrivateKey.generate()
        self.X = self.x.public_key().public_bytes(
            raw, serialization.PublicFormat.Raw)
        self.node_id, self.B = node_id, ntor_pub

    def onionskin(self):
        hdata = self.node_id + self.B + self.X
        return struct.pack(">HH", 2, len(hdata)) + hdata

    def check(self, payload):
        import hmac
        hlen = struct.unpack(">H", payload[:2])[0]
        if hlen != 64:
            return False
        Y, auth = payload[2:34], payload[34:66]
        try:
            xy = self.x.exchange(self._pub.from_public_bytes(Y))
            xb = self.x.exchange(self._pub.from_public_bytes(self.B))
        except ValueError:
            return False
        secret = xy + xb + self.node_id + self.B + self.X + Y + NTOR_PROTOID
        verify = hmac.new(NTOR_PROTOID + b":verify", secret,
                          hashlib.sha256).digest()
        auth_input = verify + self.node_id + self.B + Y + self.X + \
            NTOR_PROTOID + b"Server"
        want = hmac.new(NTOR_PROTOID + b":mac", auth_input,
                        hashlib.sha256).digest()
        return hmac.compare_digest(want, auth)


def create2_flood(ctx):
    """Send --count CREATE2 (ntor) cells over three connections at
    --send-rate per second, without waiting for answers, until they are
    sent, --seconds have passed or --stop-file exists; then wait up to 20 s
    for the answers. Each CREATE2 carries a fresh, valid ntor onionskin for
    the relay's keys (from --datadir), so every one the relay accepts costs
    it a full handshake; each CREATED2's AUTH is verified. Prints and
    returns the counts."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise Skip("needs python3-cryptography")
    node_id, ntor_pub = relay_ntor_keys(ctx.args.datadir)
    links = [ctx.open_link() for _ in range(3)]
    n = ctx.args.count or 1000
    rate = ctx.args.send_rate
    pending = {}  # circ_id -> NtorClient
    c = {"sent": 0, "created": 0, "refused": 0, "other": 0,
         "first_refused": None}
    cid = 0x80000001
    start = time.monotonic()
    say("3 connections open; sending up to %d CREATE2 at %.0f per second"
        % (n, rate))

    def stopped():
        return (c["sent"] >= n or
                time.monotonic() - start >= ctx.args.seconds or
                (ctx.args.stop_file and os.path.exists(ctx.args.stop_file)))

    def drain(lk, timeout):
        while True:
            try:
                got, cmd, payload = lk.recv_cell(timeout=timeout)
            except socket.timeout:
                return
            nc = pending.pop(got, None)
            if nc is None:
                raise Failed("%s on unknown circuit %#x" % (cmd_name(cmd),
                                                           got))
            if cmd == CREATED2:
                if not nc.check(payload):
                    raise Failed("CREATED2 on %#x fails the ntor AUTH check"
                                 % got)
                c["created"] += 1
            elif cmd == DESTROY and payload[0] == 5:
                c["refused"] += 1
                if c["first_refused"] is None:
                    c["first_refused"] = c["created"] + c["refused"]
            else:
                c["other"] += 1
                say("CREATE2 on %#x answered with %s" % (got, cmd_name(cmd)))

    while not stopped():
        due = min(n, int(rate * (time.monotonic() - start)) + 1)
        while c["sent"] < due:
            nc = NtorClient(node_id, ntor_pub)
            pending[cid] = nc
            links[c["sent"] % 3].send_cell(cid, CREATE2, nc.onionskin())
            c["sent"] += 1
            cid += 1
        for lk in links:
            drain(lk, 0.01)
    c["seconds"] = time.monotonic() - start
    deadline = time.monotonic() + 20
    while pending and time.monotonic() < deadline:
        for lk in links:
            drain(lk, 0.05)
    c["unanswered"] = len(pending)
    say("%d CREATE2 in %.1f s (%.0f per second): %d created, %d refused "
        "(RESOURCELIMIT), %d other, %d unanswered; the first refusal at "
        "#%s" % (c["sent"], c["seconds"], c["sent"] / max(c["seconds"], 1e-3),
                 c["created"], c["refused"], c["other"], c["unanswered"],
                 c["first_refused"]))
    print("sent %d seconds %.1f created %d refused %d other %d"
          % (c["sent"], c["seconds"], c["created"], c["refused"],
             c["other"]), flush=True)
    if c["unanswered"]:
        raise Failed("%d CREATE2 never answered" % c["unanswered"])
    return c


@case("dos-create2-flood", needs_datadir=True)
def c_dos_create2_flood(ctx):
    """create2_flood() at a relay with DoSCircuitCreation at tor's
    defaults (burst 90, 3 per second, 3 connections): it creates about 90
    and answers the rest with DESTROY (RESOURCELIMIT)."""
    c = create2_flood(ctx)
    if c["other"]:
        raise Failed("%d CREATE2 answered otherwise" % c["other"])
    if not c["refused"]:
        raise Failed("no CREATE2 was refused")
    allowed = ctx.args.burst + ctx.args.rate * c["seconds"] + 2
    if c["created"] > allowed:
        raise Failed("%d circuits created; at most %.0f expected"
                     % (c["created"], allowed))


@case("create2-bench", needs_datadir=True)
def c_create2_bench(ctx):
    """create2_flood() for a benchmark (scripts/bench-floods): the caller
    reads the relay's CPU time around it; every CREATE2 must be
    answered."""
    create2_flood(ctx)


class FastCircuit:
    """A one-hop CREATE_FAST circuit that sends RELAY cells (tor-spec 5.1.5
    keys, 6.1 digest, AES-128-CTR), for floods of relay commands. Needs
    python3-cryptography (Skip without it). Nothing that comes back is
    decrypted: the cases read answers' cell types only."""

    def __init__(self, lk, circ_id):
        try:
            from cryptography.hazmat.primitives.ciphers import (
                Cipher, algorithms, modes)
        except ImportError:
            raise Skip("needs python3-cryptography")
        x = os.urandom(HASH_LEN)
        lk.send_cell(circ_id, CREATE_FAST, x)
        y = lk.expect_cell(CREATED_FAST, circ_id)[:HASH_LEN]
        k = kdf_tor(x + y, 92)
        self.lk, self.circ_id = lk, circ_id
        self.digest = hashlib.sha1(k[20:40])
        self.enc = Cipher(algorithms.AES(k[60:76]),
                          modes.CTR(b"\0" * 16)).encryptor()

    def send(self, command, stream_id, data=b""):
        body = struct.pack(">BHHIH", command, 0, stream_id, 0, len(data)) \
            + data
        body = body.ljust(PAYLOAD_LEN, b"\0")
        self.digest.update(body)
        body = body[:5] + self.digest.digest()[:4] + body[9:]
        self.lk.send_cell(self.circ_id, RELAY, self.enc.update(body))


@case("resolve-flood")
def c_resolve_flood(ctx):
    """--count RESOLVE cells on one circuit, for names the exit's resolver
    never answers: the relay must answer some of them at once (END: the
    per-circuit limits refuse them) and stay usable. The caller checks
    which limit refused what in the relay's counters."""
    lk = ctx.open_link()
    fc = FastCircuit(lk, 0x80000001)
    n = ctx.args.count or 100
    for i in range(n):
        fc.send(11, 1 + i, b"host%d.example\0" % i)   # RELAY_RESOLVE
    answered = 0
    try:
        while True:
            lk.recv_cell(timeout=3)
            answered += 1
    except socket.timeout:
        pass
    say("%d RESOLVE cells on one circuit: %d answered at once" % (n, answered))
    print("answered %d" % answered, flush=True)
    if not answered:
        raise Failed("no RESOLVE was refused")
    check_usable(lk, 0x80000002, "after the flood")


@case("begindir-flood")
def c_begindir_flood(ctx):
    """--count BEGIN_DIR cells on one CREATE_FAST circuit, sent at once;
    then reads and discards what comes back (never a SENDME) for
    --seconds, holding the circuit open while the caller reads the
    relay's memory. Prints the number of cells received."""
    lk = ctx.open_link()
    fc = FastCircuit(lk, 0x80000001)
    n = ctx.args.count or 10000
    for i in range(n):
        fc.send(13, 1 + i % 0xffff)   # RELAY_BEGIN_DIR
    say("%d BEGIN_DIR cells sent on one circuit" % n)
    got = 0
    end = time.monotonic() + ctx.args.seconds
    while time.monotonic() < end:
        try:
            lk.recv_cell(timeout=0.5)
            got += 1
        except socket.timeout:
            pass
        except Closed as e:
            say("the relay closed the connection (%s)" % e)
            break
    print("received %d" % got, flush=True)


@case("dos-conn-flood")
def c_dos_conn_flood(ctx):
    """--count connections from one address, kept open: with tor's
    defaults (40 at once, 20 per second, marked for a day past that; 100
    open at most) the relay completes at most 40 + 20 per second of
    flooding, and no more than 100, handshakes and closes the rest at
    once. With --stop-file, it then goes on opening connections at
    --send-rate per second (holding the ones that complete) until that
    file exists or --seconds have passed, so that the flood lasts as long
    as the test wants (a download through the same relay, meanwhile).
    Prints "accepted A refused R timeouts T": R connections the relay
    closed, T that neither completed nor were closed within --timeout."""
    n = ctx.args.count or 120
    ok = refused = timeouts = tried = 0
    start = time.monotonic()

    def attempt():
        nonlocal ok, refused, timeouts, tried
        tried += 1
        lk = None
        try:
            lk = ctx.link()
            lk.client_handshake()
            ok += 1
            return
        except (socket.timeout, TimeoutError):
            timeouts += 1
        except (Closed, Failed, OSError, ssl.SSLError):
            refused += 1
        if lk is not None:
            ctx.links.remove(lk)
            lk.close()

    for _ in range(n):
        attempt()
    if ctx.args.stop_file:
        say("%d connections tried; flooding on at %.0f per second until %s "
            "exists" % (n, ctx.args.send_rate, ctx.args.stop_file))
        more_start = time.monotonic()
        while (not os.path.exists(ctx.args.stop_file) and
               time.monotonic() - start < ctx.args.seconds):
            due = n + int(ctx.args.send_rate *
                          (time.monotonic() - more_start)) + 1
            if tried < due:
                attempt()
            else:
                time.sleep(0.01)
    elapsed = time.monotonic() - start
    say("%d connections in %.1f s: %d completed the handshake, %d closed "
        "by the relay, %d timed out" % (tried, elapsed, ok, refused,
                                        timeouts))
    print("accepted %d refused %d timeouts %d" % (ok, refused, timeouts),
          flush=True)
    if not refused:
        raise Failed("no connection was refused")
    allowed = ctx.args.burst + ctx.args.rate * elapsed + 2
    if ctx.args.max_open and allowed > ctx.args.max_open:
        allowed = ctx.args.max_open
    if ok > allowed:
        raise Failed("%d connections accepted; at most %.0f expected"
                     % (ok, allowed))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int)
    ap.add_argument("--datadir", help="the relay's DataDirectory (for cases "
                    "that sign certificates with its signing key)")
    ap.add_argument("--case", dest="case_name")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--bind", help="source address of the connections")
    ap.add_argument("--count", type=int, default=0,
                    help="flood cases: how many")
    ap.add_argument("--burst", type=float, default=90,
                    help="flood cases: the burst the relay should allow")
    ap.add_argument("--rate", type=float, default=3,
                    help="flood cases: the rate per second it should allow")
    ap.add_argument("--send-rate", type=float, default=100,
                    help="create2 floods: cells sent per second; "
                    "dos-conn-flood: connections per second after --count")
    ap.add_argument("--seconds", type=float, default=60,
                    help="create2 floods: flood at most this long; "
                    "begindir-flood: hold the circuit this long")
    ap.add_argument("--stop-file",
                    help="create2 floods, dos-conn-flood: stop when this "
                    "file exists")
    ap.add_argument("--max-open", type=int, default=0,
                    help="dos-conn-flood: connections it may hold at once")
    ap.add_argument("--list", action="store_true", help="list the cases")
    args = ap.parse_args(argv)
    if args.list:
        for name, fn in CASES.items():
            print(name + (" (needs --datadir)" if fn.needs_datadir else ""))
        return 0
    if not args.port or not args.case_name:
        ap.error("--port and --case are required")
    fn = CASES.get(args.case_name)
    if not fn:
        ap.error("unknown case %r (see --list)" % args.case_name)
    if fn.needs_datadir and not args.datadir:
        print("SKIP %s: needs --datadir" % args.case_name)
        return 77
    print("case %s:" % args.case_name, flush=True)
    ctx = Ctx(args)
    try:
        fn(ctx)
    except Skip as e:
        print("SKIP %s: %s" % (args.case_name, e))
        return 77
    except Failed as e:
        print("FAIL %s: %s" % (args.case_name, e))
        return 1
    except Closed as e:
        print("FAIL %s: connection closed unexpectedly (%s)"
              % (args.case_name, e))
        return 1
    except (OSError, ssl.SSLError) as e:
        print("FAIL %s: %s: %s" % (args.case_name, type(e).__name__, e))
        return 1
    finally:
        ctx.close_all()
        # The relay's log names connections by the peer's address and port.
        print("local ports: %s"
              % " ".join(str(lk.local_port) for lk in ctx.links))
    print("ok %s" % args.case_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
