#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""x509_ref.py -- independent X.509 vectors for tests/unit/check_tls.c.

Makes, with the `cryptography` module (not OpenSSL's C API as pctor uses
it), a self-signed RSA-1024 certificate and a self-signed ECDSA P-256
certificate, both valid 2020-01-01 .. 2040-01-01, and prints:
  - the RSA certificate's DER,
  - the SHA-1 of the certificate key's PKCS#1 RSAPublicKey DER (the Tor RSA
    fingerprint that x509_get_rsa_key() + crypt_rsa_fingerprint() must give),
  - the EC certificate's DER (x509_get_rsa_key() must refuse it).
Keys are random, so each run prints different (equally valid) vectors; the
C test holds the output of one run. Run by hand: python3 x509_ref.py
"""
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


def self_signed(key, cn):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    return (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(0x1234567890abcdef)
            .not_valid_before(datetime.datetime(2020, 1, 1))
            .not_valid_after(datetime.datetime(2040, 1, 1))
            .sign(key, hashes.SHA256()))


def c_array(name, data):
    print(f"static const uint8_t {name}[{len(data)}] = {{")
    for i in range(0, len(data), 12):
        print("  " + " ".join(f"0x{b:02x}," for b in data[i:i + 12]))
    print("};")


rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
rsa_cert = self_signed(rsa_key, "www.example-rsa.net").public_bytes(
    serialization.Encoding.DER)
pkcs1 = rsa_key.public_key().public_bytes(
    serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
ec_key = ec.generate_private_key(ec.SECP256R1())
ec_cert = self_signed(ec_key, "www.example-ec.net").public_bytes(
    serialization.Encoding.DER)

c_array("py_rsa_cert", rsa_cert)
print("/* SHA-1 of the key's PKCS#1 DER */")
print('static const char py_rsa_fp_hex[] = "%s";' % hashlib.sha1(pkcs1).hexdigest())
c_array("py_ec_cert", ec_cert)
