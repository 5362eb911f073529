#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""crypt_misc.py -- reference values for check_crypt.c that no RFC lists.

Computed with python's hashlib/hmac and the `cryptography` package, run by
hand; the output is pasted into tests/unit/check_crypt.c.
"""
import hashlib
import hmac

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes

print("SHAKE-256('abc', 64):", hashlib.shake_256(b"abc").hexdigest(64))
print("SHAKE-256('', 32):", hashlib.shake_256(b"").hexdigest(32))
print("SHA3-256(1000 x 'a'):", hashlib.sha3_256(b"a" * 1000).hexdigest())
print("SHA-1 of bytes 0..508 (a relay cell body):",
      hashlib.sha1(bytes(i & 0xff for i in range(509))).hexdigest())

# HMAC-SHA256 with an empty key and with a 100-byte key (longer than a
# block, so it is hashed first).
print("HMAC-SHA256(key='', 'abc'):",
      hmac.new(b"", b"abc", hashlib.sha256).hexdigest())
print("HMAC-SHA256(key=100 x 0x01, 'abc'):",
      hmac.new(b"\x01" * 100, b"abc", hashlib.sha256).hexdigest())

# AES-128-CTR with the counter at 2^128 - 2: the 128-bit big-endian counter
# must wrap to zero (not only its low 64 bits).
key = bytes(range(16))
iv = b"\xff" * 15 + b"\xfe"
enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
print("AES-128-CTR wrap, key 00..0f, iv ff..fe, 64 zero bytes:",
      enc.update(bytes(64)).hex())
# AES-256-CTR, zero IV (Tor's hs relay crypto), key 00..1f.
enc = Cipher(algorithms.AES(bytes(range(32))), modes.CTR(bytes(16))).encryptor()
print("AES-256-CTR key 00..1f, zero iv, 40 zero bytes:",
      enc.update(bytes(40)).hex())

# HKDF-SHA256 with an empty IKM and no salt, 72 bytes (ntor's length).
print("HKDF(ikm='', salt=None, info='ntor', 72):",
      HKDF(hashes.SHA256(), 72, None, b"ntor").derive(b"").hex())
