#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""siphash24_ref.py -- SipHash-2-4 reference, written from the SipHash paper
(Aumasson & Bernstein 2012), used to produce the vectors in
tests/unit/check_container.c. Run by hand: python3 siphash24_ref.py

It first checks itself against the paper's Appendix A example (key 00..0f,
message 00..0e -> a129ca6149be45e5), then prints the hash of the messages
00, 00 01, ... (lengths 0..64) under key 00..0f, as C initialisers.
"""
import struct

M = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def siphash24(key: bytes, msg: bytes) -> int:
    k0, k1 = struct.unpack("<QQ", key)
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & M; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
        v2 = (v2 + v3) & M; v3 = rotl(v3, 16); v3 ^= v2
        v0 = (v0 + v3) & M; v3 = rotl(v3, 21); v3 ^= v0
        v2 = (v2 + v1) & M; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)

    # Pad: message, zeros, then a final byte holding len mod 256, so the
    # padded length is a multiple of 8.
    padded = msg + b"\0" * (7 - len(msg) % 8) + bytes([len(msg) & 0xFF])
    for i in range(0, len(padded), 8):
        m = struct.unpack("<Q", padded[i:i + 8])[0]
        v3 ^= m
        rnd(); rnd()
        v0 ^= m
    v2 ^= 0xFF
    rnd(); rnd(); rnd(); rnd()
    return v0 ^ v1 ^ v2 ^ v3


key = bytes(range(16))
assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5, "paper vector"
for n in range(65):
    print("  UINT64_C(0x%016x), /* len %d */" % (siphash24(key, bytes(range(n))), n))
