#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cc_ext_ref.py -- reference bytes for congestion-control negotiation in
ntor v3 (proposal 324 section 10.3 on top of proposal 332 A.2).

The client's message asking for congestion control is an extension list
with one extension, type 1 (CC_FIELD_REQUEST), empty body; the relay's
answer is one extension, type 2 (CC_FIELD_RESPONSE), whose body is the
one-byte sendme_inc (31, tor's default). This script encodes both from the
proposal text and runs them through the ntor v3 reference in
ntor_v3_ref.py (same directory) with fixed keys, printing the onionskin
and the reply for tests/unit/check_congestion.c.

Run by hand: python3 tests/vectors/cc_ext_ref.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ntor_v3_ref as n3  # noqa: E402


def ext_list(exts):
    """N_EXTENSIONS [1] then TYPE [1] | LEN [1] | BODY for each."""
    out = bytes([len(exts)])
    for t, body in exts:
        out += bytes([t, len(body)]) + body
    return out


def main():
    CM = ext_list([(1, b"")])             # CC request
    SM = ext_list([(2, bytes([31]))])     # CC response, sendme_inc 31
    assert CM == bytes([1, 1, 0]) and SM == bytes([1, 2, 1, 31])
    ID = bytes(range(0x20, 0x40))
    b = bytes(range(0x40, 0x60))
    x = bytes(range(0x10, 0x30))
    y = bytes(range(0x70, 0x90))
    B = n3.pub(b)
    VER = b"circuit extend"
    hs, _ = n3.client_phase1(ID, B, x, CM, VER)
    reply, cm, ks, _ = n3.server(hs, ID, b, y, SM, VER, 72)
    sm, ks2 = n3.client_phase2(hs, reply, x, B, ID, VER, 72)
    assert cm == CM and sm == SM and ks == ks2
    print("CM        =", CM.hex())
    print("SM        =", SM.hex())
    print("onionskin =", hs.hex())
    print("reply     =", reply.hex())
    print("keys72    =", ks.hex())


if __name__ == "__main__":
    main()
