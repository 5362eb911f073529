#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ntor_v3_ref.py -- independent reference for the ntor v3 handshake
(proposal 332, instantiation A.1, PROTOID "ntor3-curve25519-sha3_256-1").

Written from the proposal text on top of the `cryptography` module and
hashlib. It first reproduces the proposal's own test vectors (section X.2)
and asserts every intermediate value, then prints one more vector that uses
tor's circuit-extension verification string "circuit extend" and
extension-list messages (N_EXTENSIONS | {TYPE, LEN, BODY}*), for
tests/unit/check_onion.c. Run by hand: python3 tests/vectors/ntor_v3_ref.py
"""
import hashlib
import struct

from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey, X25519PublicKey)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PROTOID = b"ntor3-curve25519-sha3_256-1"
T_MSGKDF = PROTOID + b":kdf_phase1"
T_MSGMAC = PROTOID + b":msg_mac"
T_KEY_SEED = PROTOID + b":key_seed"
T_VERIFY = PROTOID + b":verify"
T_FINAL = PROTOID + b":kdf_final"
T_AUTH = PROTOID + b":auth_final"


def encap(s):
    return struct.pack(">Q", len(s)) + s


def H(s, t):
    return hashlib.sha3_256(encap(t) + s).digest()


def MAC(k, msg, t):
    return hashlib.sha3_256(encap(t) + encap(k) + msg).digest()


def KDF(s, t, n):
    return hashlib.shake_256(encap(t) + s).digest(n)


def ENC(k, m):
    c = Cipher(algorithms.AES(k), modes.CTR(bytes(16))).encryptor()
    return c.update(m) + c.finalize()


def pub(secret):
    return X25519PrivateKey.from_private_bytes(secret).public_key() \
        .public_bytes(serialization.Encoding.Raw,
                      serialization.PublicFormat.Raw)


def exp(secret, public):
    return X25519PrivateKey.from_private_bytes(secret).exchange(
        X25519PublicKey.from_public_bytes(public))


def client_phase1(ID, B, x, CM, VER):
    X = pub(x)
    Bx = exp(x, B)
    si1 = Bx + ID + X + B + PROTOID + encap(VER)
    k1 = KDF(si1, T_MSGKDF, 64)
    enc_k1, mac_k1 = k1[:32], k1[32:]
    emsg = ENC(enc_k1, CM)
    msg_mac = MAC(mac_k1, ID + B + X + emsg, T_MSGMAC)
    return ID + B + X + emsg + msg_mac, dict(ENC_K1=enc_k1, MAC_K1=mac_k1,
                                             msg_mac=msg_mac)


def server(hs, ID, b, y, SM, VER, nkeys):
    B = pub(b)
    assert hs[0:32] == ID and hs[32:64] == B
    X = hs[64:96]
    emsg = hs[96:-32]
    mac = hs[-32:]
    Xb = exp(b, X)
    si1 = Xb + ID + X + B + PROTOID + encap(VER)
    k1 = KDF(si1, T_MSGKDF, 64)
    assert MAC(k1[32:], ID + B + X + emsg, T_MSGMAC) == mac
    CM = ENC(k1[:32], emsg)
    Y = pub(y)
    Xy = exp(y, X)
    si = Xy + Xb + ID + B + X + Y + PROTOID + encap(VER)
    key_seed = H(si, T_KEY_SEED)
    verify = H(si, T_VERIFY)
    raw = KDF(key_seed, T_FINAL, 32 + nkeys)
    enc_key, keystream = raw[:32], raw[32:]
    esm = ENC(enc_key, SM)
    auth_input = (verify + ID + B + Y + X + mac + encap(esm) + PROTOID +
                  b"Server")
    auth = H(auth_input, T_AUTH)
    return Y + auth + esm, CM, keystream, dict(key_seed=key_seed,
                                                verify=verify,
                                                ENC_KEY=enc_key, AUTH=auth)


def client_phase2(hs, reply, x, B, ID, VER, nkeys):
    X = pub(x)
    Y, auth, esm = reply[:32], reply[32:64], reply[64:]
    mac = hs[-32:]
    si = exp(x, Y) + exp(x, B) + ID + B + X + Y + PROTOID + encap(VER)
    key_seed = H(si, T_KEY_SEED)
    verify = H(si, T_VERIFY)
    assert H(verify + ID + B + Y + X + mac + encap(esm) + PROTOID + b"Server",
             T_AUTH) == auth
    raw = KDF(key_seed, T_FINAL, 32 + nkeys)
    return ENC(raw[:32], esm), raw[32:]


def check_proposal_vectors():
    v = lambda s: bytes.fromhex(s)
    b = v("4051daa5921cfa2a1c27b08451324919538e79e788a81b38cbed097a5dff454a")
    B = v("f8307a2bc1870b00b828bb74dbb8fd88e632a6375ab3bcd1ae706aaa8b6cdd1d")
    ID = v("9fad2af287ef942632833d21f946c6260c33fae6172b60006e86e4a6911753a2")
    x = v("b825a3719147bcbe5fb1d0b0fcb9c09e51948048e2e3283d2ab7b45b5ef38b49")
    X = v("252fe9ae91264c91d4ecb8501f79d0387e34ad8ca0f7c995184f7d11d5da4f46")
    CM = v("68656c6c6f20776f726c64")
    VER = v("78797a7a79")
    y = v("4865a5b7689dafd978f529291c7171bc159be076b92186405d13220b80e2a053")
    Y = v("4bf4814326fdab45ad5184f5518bd7fae25dc59374062698201a50a22954246d")
    SM = v("486f6c61204d756e646f")
    assert pub(b) == B and pub(x) == X and pub(y) == Y
    hs, i1 = client_phase1(ID, B, x, CM, VER)
    assert i1["ENC_K1"].hex() == "4cd166e93f1c60a29f8fb9ec40ea0fc878930c27800594593e1c4d0f3b5fbd02"
    assert i1["MAC_K1"].hex() == "f5b69e85fdd26e1b0bdbbc8128e32d8123040255f11f744af3cc98fc13613cda"
    assert i1["msg_mac"].hex() == "9e044d53565f04d82bbb3bebed3d06cea65db8be9c72b68cd461942088502f67"
    assert hs.hex() == "9fad2af287ef942632833d21f946c6260c33fae6172b60006e86e4a6911753a2f8307a2bc1870b00b828bb74dbb8fd88e632a6375ab3bcd1ae706aaa8b6cdd1d252fe9ae91264c91d4ecb8501f79d0387e34ad8ca0f7c995184f7d11d5da4f463bebd9151fd3b47c180abc9e044d53565f04d82bbb3bebed3d06cea65db8be9c72b68cd461942088502f67"
    reply, cm, ks, i2 = server(hs, ID, b, y, SM, VER, 256)
    assert cm == CM
    assert i2["key_seed"].hex() == "b9a092741098e1f5b8ab37ce74399dd57522c974d7ae4626283a1077b9273255"
    assert i2["verify"].hex() == "1dc09fb249738a79f1bc3a545eee8c415f27213894a760bb4df58862e414799a"
    assert i2["ENC_KEY"].hex() == "cab8a93eef62246a83536c4384f331ec26061b66098c61421b6cae81f4f57c56"
    assert i2["AUTH"].hex() == "2fc5f8773ca824542bc6cf6f57c7c29bbf4e5476461ab130c5b18ab0a9127665"
    assert reply.hex() == "4bf4814326fdab45ad5184f5518bd7fae25dc59374062698201a50a22954246d2fc5f8773ca824542bc6cf6f57c7c29bbf4e5476461ab130c5b18ab0a91276651202c3e1e87c0d32054c"
    # The proposal's "KEYSTREAM" is what follows ENC_KEY in RAW_KEYSTREAM.
    assert ks.hex() == "9c19b631fd94ed86a817e01f6c80b0743a43f5faebd39cfaa8b00fa8bcc65c3bfeaa403d91acbd68a821bf6ee8504602b094a254392a07737d5662768c7a9fb1b2814bb34780eaee6e867c773e28c212ead563e98a1cd5d5b4576f5ee61c59bde025ff2851bb19b721421694f263818e3531e43a9e4e3e2c661e2ad547d8984caa28ebecd3e4525452299be26b9185a20a90ce1eac20a91f2832d731b54502b09749b5a2a2949292f8cfcbeffb790c7790ed935a9d251e7e336148ea83b063a5618fcff674a44581585fd22077ca0e52c59a24347a38d1a1ceebddbf238541f226b8f88d0fb9c07a1bcd2ea764bbbb5dacdaf5312a14c0b9e4f06309b0333b4a"
    sm, ks2 = client_phase2(hs, reply, x, B, ID, VER, 256)
    assert sm == SM and ks2 == ks
    print("proposal 332 X.2 vectors: reproduced")


def main():
    check_proposal_vectors()
    # A circuit-extension vector: VER = "circuit extend", messages are
    # extension lists (N_EXTENSIONS, then TYPE LEN BODY each).
    ID = bytes(range(0x20, 0x40))          # relay ed25519 identity
    b = bytes(range(0x40, 0x60))
    x = bytes(range(0x10, 0x30))
    y = bytes(range(0x70, 0x90))
    B = pub(b)
    VER = b"circuit extend"
    CM = bytes([2, 1, 0, 3, 2, 0x01, 0x02])    # ext 1 (empty), ext 3 [01 02]
    SM = bytes([1, 2, 1, 0x1f])                # ext 2 [1f]
    hs, _ = client_phase1(ID, B, x, CM, VER)
    reply, cm, ks, _ = server(hs, ID, b, y, SM, VER, 72)
    sm, ks2 = client_phase2(hs, reply, x, B, ID, VER, 72)
    assert cm == CM and sm == SM and ks == ks2
    print("ID        =", ID.hex())
    print("b         =", b.hex())
    print("B         =", B.hex())
    print("x         =", x.hex())
    print("y         =", y.hex())
    print("CM        =", CM.hex())
    print("SM        =", SM.hex())
    print("onionskin =", hs.hex())
    print("reply     =", reply.hex())
    print("keys72    =", ks.hex())


if __name__ == "__main__":
    main()
