#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""crypt_rsa.py -- reference values for the fixed RSA test key in
check_crypt.c.

The key below was generated once with `cryptography`
(rsa.generate_private_key(65537, 1024)). This script prints its PKCS#1
public and private DER, its Tor fingerprint (SHA-1 of the public DER), and
Tor-style raw PKCS#1 v1.5 type-1 signatures computed here with plain
integer arithmetic (EM = 00 01 FF..FF 00 | data, s = EM^d mod n), so the
C code is checked against an implementation that shares nothing with it.
Run by hand; paste the output into tests/unit/check_crypt.c.
"""
import hashlib

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

KEY_PEM = b"""-----BEGIN RSA PRIVATE KEY-----
MIICXgIBAAKBgQDOcMw1cjW8N5NHXKIScLkuzcbl+dt3gzKcPyK4Ib9nUpVp/CDf
mDgih5cAtLhW315VZ4cYl4W7UMinOqjyVEeLK2u1fatwSldDlE7JgZeF1rgRZyzK
/xwmndzeajOfYS7PhxwCDf80xs5vE5MdMUW9dxo3+M0gsvSEi8Df8SQF1QIDAQAB
AoGBAI4/PxbcuZYVnVAgzjRyo8dSV2kD/2ucZXUwM9Y4utCRIQ9EgcpP8u4oC66a
2CJUC4ZBrd8OGUH26iwAyYUg+aH4d6L1Ov5SG7n3Dzj3q+TYYKYMfMegjYerr/NK
pmqbK+dSxu/hhc+xiqtAEdEdmU6RklxyBrMBp3bnsNhq8O2JAkEA8ZN2kEbcbig3
syMY6Hlwucu7JKJxCYjh2wfgTSY5Thj8T5OqFG/8D5LaVMxjUnBcqJF5XwimWCxT
uMhy2/G4HwJBANrESGxySah+Y5u67v9KV80m8MRvUi9qPx6DUddKndwU9ehBi69J
QmbsgWvPcDA0JrqNJ6f0xZdkYSDuhB9tU4sCQGk0fDT29zZuA1vbVBSiFoqDhBu/
NpUdbKbTtkZC+D/ft7n8J9zArDgoDzdQz4xubJvoxr+xZ6gMneViPks06KcCQQDH
1ik6NyQl8F5ZMWeEeIq/8mRZbD8s5OcHnnmyKo0NL3B6WvWYh1lK35xRuUoIHnuK
ScsB18xvQNig1oCGnL2FAkEAgJgWH5aL8nJ4nbigzTBAfCP0OkBm7KJVthbenAmb
ItEXQb4BWZLRQHCxHqEY+WE2stKhNTgb0SRZoKsgJYGMyg==
-----END RSA PRIVATE KEY-----
"""


def c_array(b: bytes) -> str:
    lines = []
    for i in range(0, len(b), 12):
        lines.append("  " + ", ".join(f"0x{x:02x}" for x in b[i:i + 12]) + ",")
    return "\n".join(lines)


key = serialization.load_pem_private_key(KEY_PEM, password=None)
priv = key.private_numbers()
n, e, d = priv.public_numbers.n, priv.public_numbers.e, priv.d
k = (n.bit_length() + 7) // 8

pub_der = key.public_key().public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
priv_der = key.private_bytes(
    serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL,
    serialization.NoEncryption())


def sign_raw(data: bytes) -> bytes:
    em = b"\x00\x01" + b"\xff" * (k - 3 - len(data)) + b"\x00" + data
    return pow(int.from_bytes(em, "big"), d, n).to_bytes(k, "big")


print(f"bits {n.bit_length()}, e {e}, public DER {len(pub_der)} bytes,"
      f" private DER {len(priv_der)} bytes")
print("public DER:")
print(c_array(pub_der))
print("private DER:")
print(c_array(priv_der))
print("fingerprint (SHA-1 of public DER):", hashlib.sha1(pub_der).hexdigest().upper())
msg = hashlib.sha1(b"pctor raw signature test").digest()
print("data = SHA-1('pctor raw signature test'):", msg.hex())
print("sign_raw(data):", sign_raw(msg).hex())
sig256 = key.sign(b"pctor", padding.PKCS1v15(), hashes.SHA256())
print("RSASSA-PKCS1-v1_5 SHA-256 of 'pctor':", sig256.hex())
print("public PEM:")
print(key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.PKCS1).decode())

# Blobs the PKCS#1 parsers must refuse: the same RSA key wrapped as an
# X.509 SubjectPublicKeyInfo, and an EC P-256 key (fixed scalar 12345) as
# SubjectPublicKeyInfo and as SEC1 ECPrivateKey.
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

spki = key.public_key().public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
assert spki.endswith(pub_der)
print(f"RSA SubjectPublicKeyInfo = {spki[:-len(pub_der)].hex()} | public DER")
p8 = key.private_bytes(
    serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption())
assert p8.endswith(priv_der)
print(f"RSA PKCS#8 PrivateKeyInfo = {p8[:-len(priv_der)].hex()} | private DER")
eck = ec.derive_private_key(12345, ec.SECP256R1())
print("EC P-256 SubjectPublicKeyInfo DER:")
print(c_array(eck.public_key().public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)))
print("EC P-256 SEC1 private DER:")
print(c_array(eck.private_bytes(
    serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL,
    serialization.NoEncryption())))
