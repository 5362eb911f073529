#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""routerdesc_ref.py -- a reference server descriptor for
tests/unit/check_routerdesc.c.

Written from dir-spec.txt 2.1.1 (items, their objects, the two
signatures), 1.2-1.3 (document meta-format and signing), appendix C
(curve25519 -> ed25519) and cert-spec.txt (the type-4 and type-0A
certificates), independently of the C code. Everything in a descriptor is
deterministic for fixed keys and fields (RSA PKCS#1 v1.5 and Ed25519
signatures are), so routerdesc_build() must produce exactly this text
from the same inputs.

  * RSA signatures (onion-key-crosscert, router-signature) are PKCS#1
    v1.5 type-1 padding of the raw data, no DigestInfo, computed with
    plain integer arithmetic from the private key's numbers.
  * router-sig-ed25519 is Ed25519 (`cryptography`) over SHA-256("Tor
    router descriptor signature v1" | text through "router-sig-ed25519 ").
  * ntor-onion-key-crosscert is signed by the Ed25519 key derived from the
    curve25519 secret (clamped secret as the scalar, nonce prefix
    SHA-512(secret | "Derive high part of ed25519 key from curve25519
    key\\0")[0:32]), with RFC 8032 signing done here in integers; its sign
    bit is the top bit of that key's encoding.

The script also verifies what it made: the Ed25519 signatures with
`cryptography`, the RSA ones through `cryptography`'s public-key
operation (recover and compare), and the crosscert's key against the
birational map of the X25519 public key (y = (u-1)/(u+1)).

Run by hand (python3 tests/vectors/routerdesc_ref.py) and paste the output
into check_routerdesc.c.
"""
import base64
import hashlib
import struct
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey, Ed25519PublicKey)
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

# RSA identity: the key tor 0.4.9.11 wrote in check_router_keys.c.
ID_PEM = b"""-----BEGIN RSA PRIVATE KEY-----
MIICWwIBAAKBgQDQD2eWiZ8kvTRBHQCn06nOpTmimyHs/PP+ROHiFbbjF9SlbB8J
P8fkKferekfLdWVHQ0Rf3VkK+wyf4YJWLfTu3OaKF44OZgHPL1RZArapAr6SYHcq
6qxGI/MuXzxXzKmcUoBOSmKQGG3ZWYoeobUJxBetPwvkXrBKPDStMQnhTwIDAQAB
AoGAQOdNTSyJNJDBKD6/4ZqpsgjgvdTe9GrEQmGChWB4uMbKUwAzflMjLA3bcOao
VtO8UEqvnagTCtXdzlIusmuLqBfKmXaLNv4Z9Vu4samHvuDLaXbOCbL+1BnX2DhP
IAquZS5QY0xqHuCjH4S5BzeztIaTAHSh5BA7Gqu26uvtKKECQQDogR3uIDp75gNl
B1Uf3LHvvJva1kbwmTjhow2BB0xvU0Txpawb2fgWcPq36V1aYD2Ytxq54U0Nve7G
9mnE/kD9AkEA5RXqxSTuMbj6ptAUCWbOvyGwxYwML0LlrlqFV7qf9AWNEFfIigbT
E751P3+lxWqVPpEeq84R2uZMvzQP/wCzOwJABj9Z74kcKTIgCznsNqP2gAugYHv7
ggGL/rwj48CvdBpXsuqRulncCbZVdlWl9YS6gv0AkdgU+vaMkPoUE4AFfQJANMZ5
0XUSks3koK1rEEdo9ctTKA99dx3YP/SGp5FM7DCjMNKoVnQACJpl9Hz5uaM2QrW3
9SiCIIXRxHLABKUqpQJAJk74kLX0FpWgMEyw9f0yzvKqFj+dwlUJy7EhSJ9j/Fcp
1Ee88lY519F/Rb2vXtMaujIJ5q3HuxqMFmL0OH96dA==
-----END RSA PRIVATE KEY-----
"""
# TAP onion key: the fixed key of torcert_ref.py.
TAP_PEM = b"""-----BEGIN RSA PRIVATE KEY-----
MIICXQIBAAKBgQCvGKIfZAaiRE7l4vXnFSVz0SsqH7TjTmasgD5oT0sxu/HmNK05
tcXkFacmQ0CRgDbdEP5DgbFfOHD8pljGPb2jJT7g85YLC0MCAge33MVHOZgzNJ0/
hns4GVDfnJD8+KGTDJ3OH2eUyBAaCWsBjj6uvJ2WsmVXjN0zhZkYTsnIBwIDAQAB
AoGBAJ87SJxBa6L/ebyn1LZsTZ3wl098fBTGxKqVCav0iE5XO9n9B5dWzfrpEhPC
zyJCtiH+BSzA8dvFSUMJx+uoVB5aSNjoY+0Yp0Xf+Rvr+/hW23eqlcQXn+y4Wn7J
n5+mt3aZY8g5CyrraqadDm7SqCNsAaTUdJG26HXntkgGGwo5AkEA5Qwdkr8uVyKi
y79/rbIxzMt/dLzRanI55QPFFUwXjZKcylvGaElkiJ3Sgcj/Pkx/RDj7jDvnGZcY
W+KdDZIFKwJBAMOzR6uk2nEXXLyiBN3cxG2I8u8quWsrMhDBi9tmnjMOC7GAjz98
XEOqkw+ZMgiUHLLpsuxtEJ04wty4w3DvUpUCQQCJ4OgwfUuNAnmTQxy918XorRt1
j3BUrpwxQzqxXlPTUk119xcRkhSltLOSkwcrXmtCCzdJrImqOu1b6qd2Es9vAkAb
fLHjXOtFmSdwYz1VwC1iySp+Bz013UJR8i1nqpkryJxB2THFk/0NkAbJ2RWa+Nqz
EnoMFSGRQ6izAcyJr0OlAkBL3/QrumhdUEwLNphgwFuylLoE7HoBmMjZYi76U0yr
Mglpmcb01xMuAbpHcrc46xwXm9+V2ol9rc7j09uQUHVl
-----END RSA PRIVATE KEY-----
"""
ID_SEED = hashlib.sha256(b"pctor routerdesc identity").digest()
SIGNING_SEED = hashlib.sha256(b"pctor routerdesc signing").digest()
NTOR_SECRET = hashlib.sha256(b"pctor routerdesc ntor").digest()
PUBLISHED = 1700000000                 # 2023-11-14 22:13:20
CERT4_EXPIRES = PUBLISHED + 30 * 86400  # the signing key's certificate
CROSSCERT_DAYS = 35                     # ntor crosscert lifetime

NICKNAME = "pctorKAT"
ADDRESS = "192.0.2.7"
ORPORT = 9001
OR_ADDRESS = "[2001:db8::7]:9001"
PLATFORM = "pctor 0.1.0-dev on Linux"
PROTO = "Conflux=1 Desc=2 FlowCtrl=1-2 Link=4-5 LinkAuth=3 Microdesc=2 Relay=2-4"
UPTIME = 3600
BANDWIDTH = (1073741824, 1073741824, 12345)
FAMILY = ["$0123456789ABCDEF0123456789ABCDEF01234567", "friend"]
CONTACT = "ops <at> example dot org"
POLICY = ["accept 192.0.2.0/24:80-443", "reject *:*"]

# --- Ed25519 in integers (RFC 8032), for the crosscert's expanded key ----
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRTM1 = pow(2, (P - 1) // 4, P)


def inv(x):
    return pow(x, P - 2, P)


def recover_x(y, sign):
    x2 = (y * y - 1) * inv(D * y * y + 1) % P
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * SQRTM1 % P
    assert (x * x - x2) % P == 0
    if (x & 1) != sign:
        x = P - x
    return x


GY = 4 * inv(5) % P
G = (recover_x(GY, 0), GY, 1, recover_x(GY, 0) * GY % P)


def padd(a, b):
    A = (a[1] - a[0]) * (b[1] - b[0]) % P
    B = (a[1] + a[0]) * (b[1] + b[0]) % P
    C = 2 * a[3] * b[3] * D % P
    Dd = 2 * a[2] * b[2] % P
    E, F, Gg, H = B - A, Dd - C, Dd + C, B + A
    return (E * F % P, Gg * H % P, F * Gg % P, E * H % P)


def pmul(s, pt):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = padd(q, pt)
        pt = padd(pt, pt)
        s >>= 1
    return q


def penc(pt):
    zi = inv(pt[2])
    x, y = pt[0] * zi % P, pt[1] * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def sha512(*parts):
    return hashlib.sha512(b"".join(parts)).digest()


def ed_sign_expanded(esk, pub, msg):
    a = int.from_bytes(esk[:32], "little")
    r = int.from_bytes(sha512(esk[32:], msg), "little") % L
    R = penc(pmul(r, G))
    k = int.from_bytes(sha512(R, pub, msg), "little") % L
    return R + ((r + k * a) % L).to_bytes(32, "little")


def curve_to_ed(secret):
    s = bytearray(secret)
    s[0] &= 248
    s[31] &= 127
    s[31] |= 64
    s = bytes(s)
    esk = s + sha512(
        s, b"Derive high part of ed25519 key from curve25519 key\0")[:32]
    pub = penc(pmul(int.from_bytes(s, "little"), G))
    return esk, pub, pub[31] >> 7


# --- helpers ------------------------------------------------------------
def raw(pubkey):
    return pubkey.public_bytes(serialization.Encoding.Raw,
                               serialization.PublicFormat.Raw)


def b64(b, pad=True):
    s = base64.b64encode(b).decode()
    return s if pad else s.rstrip("=")


def obj(kind, b, pad=True):
    s = b64(b, pad)
    lines = [s[i:i + 64] for i in range(0, len(s), 64)]
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (
        kind, "\n".join(lines), kind)


def rsa_sign_raw(key, data):
    n = key.private_numbers().public_numbers.n
    dexp = key.private_numbers().d
    k = (n.bit_length() + 7) // 8
    em = b"\x00\x01" + b"\xff" * (k - 3 - len(data)) + b"\x00" + data
    return pow(int.from_bytes(em, "big"), dexp, n).to_bytes(k, "big")


def rsa_recover(pub, sig):
    nums = pub.public_numbers()
    k = (nums.n.bit_length() + 7) // 8
    em = pow(int.from_bytes(sig, "big"), nums.e, nums.n).to_bytes(k, "big")
    assert em[:2] == b"\x00\x01"
    return em[em.index(b"\x00", 2) + 1:]


def rsa_pub_pem(key):
    return key.public_key().public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.PKCS1).decode()


def rsa_pub_der(key):
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.PKCS1)


def ed_cert(signer, cert_type, certified, exp_hours, include_signer):
    body = struct.pack(">BBIB", 1, cert_type, exp_hours, 1) + certified
    if include_signer:
        body += bytes([1]) + struct.pack(">HBB", 32, 4, 0) + raw(
            signer.public_key())
    else:
        body += bytes([0])
    return body + signer.sign(body)


def hours_up(t):
    return (t + 3599) // 3600


def c_string(name, text):
    out = ["static const char %s[] =" % name]
    for line in text.splitlines(keepends=True):
        out.append('  "%s"' % line.replace("\\", "\\\\").replace(
            '"', '\\"').replace("\n", "\\n"))
    return "\n".join(out) + ";"


# --- the descriptor -------------------------------------------------------
rsa_id = serialization.load_pem_private_key(ID_PEM, None)
tap = serialization.load_pem_private_key(TAP_PEM, None)
ed_id = Ed25519PrivateKey.from_private_bytes(ID_SEED)
ed_signing = Ed25519PrivateKey.from_private_bytes(SIGNING_SEED)
id_digest = hashlib.sha1(rsa_pub_der(rsa_id)).digest()
ed_id_pub = raw(ed_id.public_key())
ntor = X25519PrivateKey.from_private_bytes(NTOR_SECRET)
ntor_pub = raw(ntor.public_key())

cert4 = ed_cert(ed_id, 4, raw(ed_signing.public_key()),
                hours_up(CERT4_EXPIRES), True)

esk, cc_pub, signbit = curve_to_ed(NTOR_SECRET)
# The verifier's view: the map of the X25519 u-coordinate plus the bit.
u = int.from_bytes(ntor_pub, "little") % P
y = (u - 1) * inv(u + 1) % P
assert (y | (signbit << 255)).to_bytes(32, "little") == cc_pub
cc_body = struct.pack(">BBIB", 1, 0x0A,
                      hours_up(PUBLISHED + CROSSCERT_DAYS * 86400), 1)
cc_body += ed_id_pub + bytes([0])
ntor_cc = cc_body + ed_sign_expanded(esk, cc_pub, cc_body)
Ed25519PublicKey.from_public_bytes(cc_pub).verify(ntor_cc[-64:], cc_body)

tap_cc = rsa_sign_raw(tap, id_digest + ed_id_pub)
assert rsa_recover(tap.public_key(), tap_cc) == id_digest + ed_id_pub

fp = id_digest.hex().upper()
doc = ""
doc += "router %s %s %d 0 0\n" % (NICKNAME, ADDRESS, ORPORT)
doc += "identity-ed25519\n" + obj("ED25519 CERT", cert4, pad=False)
doc += "master-key-ed25519 %s\n" % b64(ed_id_pub, pad=False)
doc += "or-address %s\n" % OR_ADDRESS
doc += "platform %s\n" % PLATFORM
doc += "proto %s\n" % PROTO
doc += "published %s\n" % time.strftime("%Y-%m-%d %H:%M:%S",
                                         time.gmtime(PUBLISHED))
doc += "fingerprint %s\n" % " ".join(fp[i:i + 4] for i in range(0, 40, 4))
doc += "uptime %d\n" % UPTIME
doc += "bandwidth %d %d %d\n" % BANDWIDTH
doc += "onion-key\n" + rsa_pub_pem(tap)
doc += "signing-key\n" + rsa_pub_pem(rsa_id)
doc += "onion-key-crosscert\n" + obj("CROSSCERT", tap_cc)
doc += "ntor-onion-key-crosscert %d\n" % signbit
doc += obj("ED25519 CERT", ntor_cc, pad=False)
doc += "family %s\n" % " ".join(FAMILY)
doc += "contact %s\n" % CONTACT
doc += "ntor-onion-key %s\n" % b64(ntor_pub, pad=False)
for line in POLICY:
    doc += line + "\n"
doc += "router-sig-ed25519 "
digest = hashlib.sha256(b"Tor router descriptor signature v1" +
                        doc.encode()).digest()
edsig = ed_signing.sign(digest)
ed_signing.public_key().verify(edsig, digest)
doc += b64(edsig, pad=False) + "\n"
doc += "router-signature\n"
rsasig = rsa_sign_raw(rsa_id, hashlib.sha1(doc.encode()).digest())
assert rsa_recover(rsa_id.public_key(), rsasig) == hashlib.sha1(
    doc.encode()).digest()
doc += obj("SIGNATURE", rsasig)
assert len(doc) < 20000

print("/* Generated by tests/vectors/routerdesc_ref.py. */")
print("#define KAT_PUBLISHED %d" % PUBLISHED)
print("#define KAT_CERT4_EXPIRES %d" % CERT4_EXPIRES)
print("static const char KAT_ID_SEED_HEX[] = \"%s\";" % ID_SEED.hex())
print("static const char KAT_SIGNING_SEED_HEX[] = \"%s\";" %
      SIGNING_SEED.hex())
print("static const char KAT_NTOR_SECRET_HEX[] = \"%s\";" % NTOR_SECRET.hex())
print("static const char KAT_CERT4_HEX[] =\n  \"%s\"\n  \"%s\";" %
      (cert4.hex()[:140], cert4.hex()[140:]))
print(c_string("KAT_ID_PEM", ID_PEM.decode()))
print(c_string("KAT_TAP_PEM", TAP_PEM.decode()))
print(c_string("KAT_DESC", doc))
