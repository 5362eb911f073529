#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pwbox_ref.py -- reference TORBOX00 boxes for check_crypt.c's pwbox test.

tor's passphrase boxes (format in src/lib/crypt/pwbox.h) with the scrypt
(type 2) and PBKDF2 (type 1) key derivations, which Debian's tor (built
without libscrypt) never writes, so no tor-made vector exists here. Built
with python's hashlib/hmac and the `cryptography` package from fixed salt,
iv and plaintext; run by hand, the hex is pasted into
tests/unit/check_crypt.c.
"""
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PASSPHRASE = b"pctor test passphrase"
PLAIN = bytes(range(64))  # an "expanded key"
IV = bytes(range(0x40, 0x50))


def box(spec, keys):
    body = struct.pack(">I", len(PLAIN)) + PLAIN
    body += b"\0" * (128 - len(body) % 128 if len(body) % 128 else 0)
    enc = Cipher(algorithms.AES(keys[:16]), modes.CTR(IV)).encryptor()
    ct = enc.update(body) + enc.finalize()
    head = b"TORBOX00" + bytes([len(spec)]) + spec + IV + ct
    return head + hmac.new(keys[16:48], head, hashlib.sha256).digest()


salt = bytes(range(0x10, 0x20))
# scrypt, log2 N = 10, r = 8, p = 2 (the parameter byte tor writes: 0x31)
spec = bytes([2]) + salt + bytes([10, 0x31])
keys = hashlib.scrypt(PASSPHRASE, salt=salt, n=1 << 10, r=8, p=2, dklen=48,
                      maxmem=64 << 20)
print("scrypt box:", box(spec, keys).hex())
# PBKDF2-HMAC-SHA1, 2^10 iterations
spec = bytes([1]) + salt + bytes([10])
keys = hashlib.pbkdf2_hmac("sha1", PASSPHRASE, salt, 1 << 10, 48)
print("pbkdf2 box:", box(spec, keys).hex())
