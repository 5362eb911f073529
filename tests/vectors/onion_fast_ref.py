#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""onion_fast_ref.py -- independent reference for CREATE_FAST (tor-spec
5.1.5) and KDF-TOR (5.2.1), producing known-answer values for
tests/unit/check_onion.c.

K0 = X | Y; K = SHA1(K0 | [00]) | SHA1(K0 | [01]) | ...; the first 20
bytes are KH (sent in CREATED_FAST), then Df, Db (20 each), Kf, Kb (16
each). Run by hand: python3 tests/vectors/onion_fast_ref.py
"""
import hashlib


def kdf_tor(k0, n):
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha1(k0 + bytes([i])).digest()
        i += 1
    return out[:n]


def main():
    X = bytes(range(1, 21))
    Y = bytes(range(0xe0, 0xf4))
    k = kdf_tor(X + Y, 20 + 72)
    print("X      =", X.hex())
    print("Y      =", Y.hex())
    print("reply  =", (Y + k[:20]).hex())
    print("KH     =", k[:20].hex())
    print("keys72 =", k[20:].hex())
    print("  Df =", k[20:40].hex())
    print("  Db =", k[40:60].hex())
    print("  Kf =", k[60:76].hex())
    print("  Kb =", k[76:92].hex())


if __name__ == "__main__":
    main()
