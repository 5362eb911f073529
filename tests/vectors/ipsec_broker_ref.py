#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# ipsec_broker_ref.py -- reference vectors for tests/unit/check_ipsec_broker.c,
# written from the specifications with python's `cryptography` package (run
# by hand; the output is pasted into the C test):
#
#  1. RFC 8410 PEM encodings of an Ed25519 key: the RFC's own example key
#     (section 10.3 private, 10.1 public), re-encoded by `cryptography`.
#  2. The two certificates of the IKE key chain, in Tor's Ed25519
#     certificate format (cert-spec.txt section 2.1):
#       VERSION=1 CERT_TYPE EXPIRATION_HOURS[4] CERT_KEY_TYPE=1 KEY[32]
#       N_EXTENSIONS=1 ExtLength=32 ExtType=4 ExtFlags=0 SIGNER[32]
#       SIGNATURE[64] over all preceding bytes (no prefix)
#     type 4 (identity -> signing key) and pctor's type 0xF0 (signing key ->
#     IKE key), with keys from fixed seeds.
#  3. An IPsec announcement (src/feature/ipsec/ipsec_link.h, version 1)
#     carrying them.
import struct

from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def key(seed):
    k = Ed25519PrivateKey.from_private_bytes(seed)
    pub = k.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    return k, pub


def cert(signer, signer_pub, cert_type, certified, hours):
    body = struct.pack(">BBIB", 1, cert_type, hours, 1) + certified
    body += bytes([1]) + struct.pack(">HBB", 32, 4, 0) + signer_pub
    return body + signer.sign(body)


def announce(flags, gen, ip4, port, ike_pub, ready_for, scert, icert):
    out = struct.pack(">BBIB", 1, flags, gen, 4) + bytes(ip4) + struct.pack(">H", port)
    out += ike_pub + ready_for
    out += struct.pack(">H", len(scert)) + scert
    out += struct.pack(">H", len(icert)) + icert
    return out


def c_hex(name, b):
    print("/* %s (%d bytes) */" % (name, len(b)))
    h = b.hex()
    for i in range(0, len(h), 64):
        print('  "%s"' % h[i:i + 64])


# 1. RFC 8410 example key.
rfc_seed = bytes.fromhex(
    "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842")
k, pub = key(rfc_seed)
print(k.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                      ser.NoEncryption()).decode(), end="")
print(k.public_key().public_bytes(ser.Encoding.PEM,
                                  ser.PublicFormat.SubjectPublicKeyInfo).decode(), end="")
print("public key:", pub.hex())

# 2. The chain. Seeds: identity 00..1f, signing 20..3f, IKE 40..5f.
ident, ident_pub = key(bytes(range(0, 32)))
sign, sign_pub = key(bytes(range(32, 64)))
ike, ike_pub = key(bytes(range(64, 96)))
H4 = 480000        # type-4 certificate expires at hour 480000 (2024-10-04)
HI = 479900        # IKE certificate expires a little earlier
scert = cert(ident, ident_pub, 4, sign_pub, H4)
icert = cert(sign, sign_pub, 0xF0, ike_pub, HI)
print("identity:", ident_pub.hex())
print("signing: ", sign_pub.hex())
print("ike:     ", ike_pub.hex())
c_hex("type-4 certificate", scert)
c_hex("IKE key certificate", icert)

# 3. The announcement: OFFER|READY, generation 0x01020304, ORPort
# 10.202.0.1:9001, READY_FOR = 0xaa * 32.
ann = announce(0x03, 0x01020304, [10, 202, 0, 1], 9001, ike_pub, b"\xaa" * 32,
               scert, icert)
c_hex("announcement", ann)
