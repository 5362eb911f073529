#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""crypt_kdf_tor.py -- reference KDF-TOR (tor-spec 5.2.1) for check_crypt.c.

K = H(K0 | [00]) | H(K0 | [01]) | ...   with H = SHA-1, truncated.
Written from the spec with python's hashlib; run by hand and paste the
output into tests/unit/check_crypt.c (test_kdf_tor).
"""
import hashlib


def kdf_tor(k0: bytes, n: int) -> bytes:
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha1(k0 + bytes([i])).digest()
        i += 1
    return out[:n]


CASES = [
    # CREATE_FAST: K0 = X | Y (20 + 20 bytes); KEY_LEN*2 + HASH_LEN*3 = 92.
    ("bytes 0..39", bytes(range(40)), 92),
    ("'Tor'", b"Tor", 25),
    ("empty", b"", 41),
]

for name, k0, n in CASES:
    print(f"K0 = {name}, {n} bytes:")
    print(kdf_tor(k0, n).hex())
# The last block a 255-block output uses is H(K0 | [fe]).
print("K0 = bytes 0..39, blocks 254 (last 20 of 5100 bytes):")
print(kdf_tor(bytes(range(40)), 255 * 20)[-20:].hex())
