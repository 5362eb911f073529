#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""x25519_base_ref.py -- reference X25519 public keys (secret * base point)
for the table-based base-point multiplication in src/lib/crypt/
curve25519_base.c (test_x25519_base in tests/unit/check_crypt.c).

X25519 is computed here with the Montgomery ladder exactly as RFC 7748
section 5 gives it, on Python integers (no library), for edge scalars
(zero, all ones, the RFC's "9" start value, a single bit per byte
position) and scalars SHA-256("pctor x25519 base N").

Run by hand: python3 tests/vectors/x25519_base_ref.py
"""
import hashlib

P = 2**255 - 19
A24 = 121665


def x25519(k, u):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    k = int.from_bytes(k, "little")
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    for t in reversed(range(255)):
        kt = (k >> t) & 1
        swap ^= kt
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = kt
        a, b = (x2 + z2) % P, (x2 - z2) % P
        aa, bb = a * a % P, b * b % P
        e = (aa - bb) % P
        c, d = (x3 + z3) % P, (x3 - z3) % P
        da, cb = d * a % P, c * b % P
        x3 = (da + cb) ** 2 % P
        z3 = x1 * (da - cb) ** 2 % P
        x2 = aa * bb % P
        z2 = e * (aa + A24 * e) % P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, "little")


def scalars():
    yield "zero", bytes(32)
    yield "ones", b"\xff" * 32
    yield "nine", bytes([9]) + bytes(31)
    yield "bit-byte-17", bytes(17) + b"\x80" + bytes(14)
    for n in (0, 1, 2, 255):
        yield "sha-%d" % n, hashlib.sha256(b"pctor x25519 base %d" % n).digest()


if __name__ == "__main__":
    for name, k in scalars():
        print('  { "%s",\n    "%s",\n    "%s" },' % (name, k.hex(), x25519(k, 9).hex()))
