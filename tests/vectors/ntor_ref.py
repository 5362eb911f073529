#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ntor_ref.py -- independent reference for the ntor handshake (tor-spec
5.1.4, "ntor-curve25519-sha256-1") and the KDF-RFC5869 key layout (5.2.2).

Written from the specification text only, on top of the `cryptography`
module, to produce known-answer values for tests/unit/check_onion.c. The
private keys are fixed so the output is reproducible; run by hand:

    python3 tests/vectors/ntor_ref.py

and paste the printed hex into the C test.
"""
import hashlib
import hmac

from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey, X25519PublicKey)
from cryptography.hazmat.primitives import serialization

PROTOID = b"ntor-curve25519-sha256-1"
T_MAC = PROTOID + b":mac"
T_KEY = PROTOID + b":key_extract"
T_VERIFY = PROTOID + b":verify"
M_EXPAND = PROTOID + b":key_expand"


def H(x, t):
    """H(x,t): HMAC-SHA256 with message x and key t."""
    return hmac.new(t, x, hashlib.sha256).digest()


def pub(secret):
    k = X25519PrivateKey.from_private_bytes(secret)
    return k.public_key().public_bytes(serialization.Encoding.Raw,
                                       serialization.PublicFormat.Raw)


def exp(secret, public):
    k = X25519PrivateKey.from_private_bytes(secret)
    return k.exchange(X25519PublicKey.from_public_bytes(public))


def kdf_rfc5869(key_seed, n):
    """K_1 = H(m_expand | INT8(1), KEY_SEED); K_(i+1) = H(K_i | m_expand |
    INT8(i+1), KEY_SEED), written out as in the spec rather than through
    an HKDF library."""
    out = b""
    prev = b""
    i = 1
    while len(out) < n:
        prev = H(prev + M_EXPAND + bytes([i]), key_seed)
        out += prev
        i += 1
    return out[:n]


def main():
    # Fixed inputs (arbitrary, chosen for this vector).
    node_id = bytes.fromhex("a5" * 4 + "0123456789abcdef0123456789abcdef")[:20]
    b = bytes(range(0x40, 0x60))           # relay ntor onion key secret
    x = bytes(range(0x10, 0x30))           # client ephemeral secret
    y = bytes(range(0x70, 0x90))           # server ephemeral secret
    B = pub(b)
    X = pub(x)
    Y = pub(y)

    onionskin = node_id + B + X

    # Server side.
    si = exp(y, X) + exp(b, X) + node_id + B + X + Y + PROTOID
    key_seed = H(si, T_KEY)
    verify = H(si, T_VERIFY)
    auth_input = verify + node_id + B + Y + X + PROTOID + b"Server"
    auth = H(auth_input, T_MAC)
    reply = Y + auth
    keys = kdf_rfc5869(key_seed, 72 + 20)
    # Cross-check: the same bytes are HKDF-SHA256(salt=t_key,
    # ikm=secret_input, info=m_expand), as 5.2.2 says.
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    from cryptography.hazmat.primitives import hashes
    assert keys == HKDF(algorithm=hashes.SHA256(), length=92, salt=T_KEY,
                        info=M_EXPAND).derive(si)

    # Client side computes the same secret_input from its own secrets.
    si_c = exp(x, Y) + exp(x, B) + node_id + B + X + Y + PROTOID
    assert si_c == si

    print("ID        =", node_id.hex())
    print("b         =", b.hex())
    print("B         =", B.hex())
    print("x         =", x.hex())
    print("X         =", X.hex())
    print("y         =", y.hex())
    print("Y         =", Y.hex())
    print("onionskin =", onionskin.hex())
    print("key_seed  =", key_seed.hex())
    print("reply     =", reply.hex())
    print("keys92    =", keys.hex())
    print("  Df =", keys[0:20].hex())
    print("  Db =", keys[20:40].hex())
    print("  Kf =", keys[40:56].hex())
    print("  Kb =", keys[56:72].hex())
    print("  KH =", keys[72:92].hex())


if __name__ == "__main__":
    main()
