#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ed25519_conv_ref.py -- reference vectors for lib/crypt/ed25519_ext.c.

Written from RFC 8032 (sections 5.1 and 6) and dir-spec.txt appendix C
("Converting a curve25519 public key to an ed25519 public key"), with plain
integer arithmetic; the `cryptography` package provides the independent
X25519 public keys and Ed25519 verification.  Run by hand:

    python3 tests/vectors/ed25519_conv_ref.py

and paste the printed table into tests/unit/check_ed25519_ext.c.

For each curve25519 secret it prints:
  secret, X25519 public key (from `cryptography`),
  expanded Ed25519 secret (clamped secret | SHA-512(secret | STR)[0:32]
  with STR = "Derive high part of ed25519 key from curve25519 key\\0"),
  Ed25519 public key = encode(a*B), its sign bit,
  and a signature of a fixed message by the expanded key (RFC 8032
  5.1.6), which `cryptography` verifies under the public key.
It also checks that y = (u-1)/(u+1) of the X25519 key, with the sign bit,
encodes to the same public key (the birational map verifiers use).
"""
import hashlib

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey, Ed25519PublicKey)
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives import serialization

p = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
d = (-121665 * pow(121666, p - 2, p)) % p
SQRTM1 = pow(2, (p - 1) // 4, p)


def inv(x):
    return pow(x, p - 2, p)


def recover_x(y, sign):
    x2 = (y * y - 1) * inv(d * y * y + 1) % p
    if x2 == 0:
        if sign:
            return None
        return 0
    x = pow(x2, (p + 3) // 8, p)
    if (x * x - x2) % p != 0:
        x = x * SQRTM1 % p
    if (x * x - x2) % p != 0:
        return None
    if (x & 1) != sign:
        x = p - x
    return x


By = 4 * inv(5) % p
Bx = recover_x(By, 0)
B = (Bx, By, 1, Bx * By % p)
IDENT = (0, 1, 1, 0)


def add(P, Q):
    A = (P[1] - P[0]) * (Q[1] - Q[0]) % p
    Bv = (P[1] + P[0]) * (Q[1] + Q[0]) % p
    C = 2 * P[3] * Q[3] * d % p
    D = 2 * P[2] * Q[2] % p
    E, F, G, H = Bv - A, D - C, D + C, Bv + A
    return (E * F % p, G * H % p, F * G % p, E * H % p)


def mul(s, P):
    Q = IDENT
    while s > 0:
        if s & 1:
            Q = add(Q, P)
        P = add(P, P)
        s >>= 1
    return Q


def encode(P):
    zi = inv(P[2])
    x, y = P[0] * zi % p, P[1] * zi % p
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def sha512(*parts):
    return hashlib.sha512(b"".join(parts)).digest()


def clamp(b):
    b = bytearray(b)
    b[0] &= 248
    b[31] &= 127
    b[31] |= 64
    return bytes(b)


def sign_expanded(esk, pub, msg):
    a = int.from_bytes(esk[:32], "little")
    r = int.from_bytes(sha512(esk[32:], msg), "little") % L
    R = encode(mul(r, B))
    k = int.from_bytes(sha512(R, pub, msg), "little") % L
    S = (r + k * a) % L
    return R + S.to_bytes(32, "little")


TAG = b"Derive high part of ed25519 key from curve25519 key\0"


def convert(secret):
    esk = clamp(secret)
    esk = esk + sha512(esk, TAG)[:32]
    pub = encode(mul(int.from_bytes(esk[:32], "little"), B))
    return esk, pub, pub[31] >> 7


def map_public(xpub, signbit):
    u = int.from_bytes(xpub, "little") & ((1 << 255) - 1)
    u %= p
    y = (u - 1) * inv(u + 1) % p
    assert recover_x(y, signbit) is not None
    return (y | (signbit << 255)).to_bytes(32, "little")


def raw_pub(k):
    return k.public_key().public_bytes(serialization.Encoding.Raw,
                                       serialization.PublicFormat.Raw)


# Self-check the group code against RFC 8032 via `cryptography`: signing
# with SHA-512(seed) expanded must equal Ed25519 with the seed.
for i in range(4):
    seed = hashlib.sha256(b"pctor ed25519 seed %d" % i).digest()
    h = sha512(seed)
    esk = clamp(h[:32]) + h[32:]
    k = Ed25519PrivateKey.from_private_bytes(seed)
    pub = encode(mul(int.from_bytes(esk[:32], "little"), B))
    assert pub == raw_pub(k)
    assert sign_expanded(esk, pub, b"abc") == k.sign(b"abc")

MSG = b"pctor ntor-onion-key-crosscert test message"
print("/* msg = \"%s\" */" % MSG.decode())
# Secrets: RFC 7748 section 6.1's Alice and Bob keys, then hash-derived
# ones; the last is deliberately not clamped.
secrets = [
    bytes.fromhex("77076d0a7318a57d3c16c17251b26645"
                  "df4c2f87ebc0992ab177fba51db92c2a"),
    bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee6"
                  "6f3bb1292618b6fd1c2f8b27ff88e0eb"),
]
secrets += [hashlib.sha256(b"pctor conv %d" % i).digest() for i in range(4)]
secrets.append(bytes(range(0xe0, 0x100)))
signbits = set()
for secret in secrets:
    xk = X25519PrivateKey.from_private_bytes(secret)
    xpub = raw_pub(xk)
    esk, pub, sb = convert(secret)
    signbits.add(sb)
    assert map_public(xpub, sb) == pub
    sig = sign_expanded(esk, pub, MSG)
    Ed25519PublicKey.from_public_bytes(pub).verify(sig, MSG)
    print("  { \"%s\",\n    \"%s\",\n    \"%s\"\n    \"%s\",\n"
          "    \"%s\", %d,\n    \"%s\"\n    \"%s\" },"
          % (secret.hex(), xpub.hex(), esk[:32].hex(), esk[32:].hex(),
             pub.hex(), sb, sig[:32].hex(), sig[32:].hex()))
assert signbits == {0, 1}
