#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""relay_crypto_ref.py -- independent reference for tor1 relay-cell crypto
(tor-spec 5.5 and 6.1), producing known-answer values for
tests/unit/check_relay_crypto.c.

Per hop, 72 bytes of key material = Df[20] | Db[20] | Kf[16] | Kb[16].
Forward: the origin seeds a running SHA-1 with Df, adds the relay payload
(509 bytes, digest field zeroed), puts the first 4 bytes of the running
digest into the digest field (offset 5), then encrypts with AES-128-CTR
(zero IV, keystream continuing across cells) for hops N..1. Backward: the
edge hop does the same with Db/Kb and every hop on the way adds its Kb
layer; the origin removes layers 1..N.

Scenario (3 hops, fixed key material, fixed cell contents):
  F1  forward RELAY_DATA to hop 3     (printed after each layer)
  F2  forward RELAY_DATA to hop 2     (wire bytes and layer-2 view)
  B1  backward RELAY_DATA from hop 3  (printed after each layer)
  B2  backward RELAY_SENDME from hop 1
Run by hand: python3 tests/vectors/relay_crypto_ref.py
"""
import hashlib

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PAYLOAD_LEN = 509


class Hop:
    def __init__(self, km):
        assert len(km) == 72
        self.df = hashlib.sha1(km[0:20])
        self.db = hashlib.sha1(km[20:40])
        self.kf = Cipher(algorithms.AES(km[40:56]),
                         modes.CTR(bytes(16))).encryptor()
        self.kb = Cipher(algorithms.AES(km[56:72]),
                         modes.CTR(bytes(16))).encryptor()


def key_material(k):
    return bytes(((0x11 * k + 3 * j) & 0xff) for j in range(72))


def relay_cell(cmd, stream_id, data, fill):
    """Plain relay payload, digest and recognized fields zero; padding is
    four zero bytes then a fixed filler (random in real life)."""
    hdr = bytes([cmd, 0, 0]) + stream_id.to_bytes(2, "big") + bytes(4) + \
        len(data).to_bytes(2, "big")
    body = hdr + data
    pad = PAYLOAD_LEN - len(body)
    padding = bytes(min(4, pad)) + bytes(((fill + i) & 0xff)
                                         for i in range(max(0, pad - 4)))
    cell = body + padding
    assert len(cell) == PAYLOAD_LEN
    return bytearray(cell)


def set_digest(running, cell):
    """Add the cell (digest field zero) to the running digest; write the
    first four bytes of the result into the cell; return the full 20."""
    assert cell[5:9] == bytes(4) and cell[1:3] == bytes(2)
    running.update(bytes(cell))
    d = running.copy().digest()
    cell[5:9] = d[:4]
    return d


def xor_layer(cipher, cell):
    return bytearray(cipher.update(bytes(cell)))


def show(name, cell):
    print("%s = %s" % (name, bytes(cell).hex()))


def main():
    hops = [None] + [Hop(key_material(k)) for k in (1, 2, 3)]
    for k in (1, 2, 3):
        print("km%d = %s" % (k, key_material(k).hex()))

    # F1: forward to hop 3.
    c = relay_cell(2, 0x1234, b"hello, tor relay", 0x40)
    d = set_digest(hops[3].df, c)
    show("F1_plain", c)
    print("F1_digest =", d.hex())
    for k in (3, 2, 1):
        c = xor_layer(hops[k].kf, c)
        show("F1_after_layer%d" % k, c)

    # F2: forward to hop 2 (hop 1 and 2 keystreams continue after F1).
    c = relay_cell(2, 0x0777, b"second cell", 0x90)
    d = set_digest(hops[2].df, c)
    show("F2_plain", c)
    print("F2_digest =", d.hex())
    for k in (2, 1):
        c = xor_layer(hops[k].kf, c)
    show("F2_wire", c)

    # B1: backward from hop 3.
    c = relay_cell(2, 0x1234, b"reply from the exit", 0x20)
    d = set_digest(hops[3].db, c)
    show("B1_plain", c)
    print("B1_digest =", d.hex())
    for k in (3, 2, 1):
        c = xor_layer(hops[k].kb, c)
        show("B1_after_layer%d" % k, c)

    # B2: backward SENDME (circuit-level, stream 0) from hop 1.
    c = relay_cell(5, 0, bytes([0, 0, 0]), 0x00)
    d = set_digest(hops[1].db, c)
    show("B2_plain", c)
    print("B2_digest =", d.hex())
    c = xor_layer(hops[1].kb, c)
    show("B2_wire", c)


if __name__ == "__main__":
    main()
