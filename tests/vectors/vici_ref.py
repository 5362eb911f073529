#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""vici_ref.py -- reference VICI encodings for tests/unit/check_vici.c.

Written from the wire format in strongSwan's src/libcharon/plugins/vici/
README.md (segment = u32 BE length + packet; packet = u8 type [+ u8 name
length + name] + message; message elements 1..6 with u8-length names and
u16 BE-length values). Python dicts become sections, lists become lists,
str/bytes become values, in insertion order.

Run by hand:  python3 tests/vectors/vici_ref.py
It prints C arrays that are pasted into check_vici.c. When the PyPI
package "vici" (strongSwan's own Python binding) is importable, the script
also checks that its Message.serialize() gives the same message bytes, as
an independent cross-check; it is optional.
"""
import struct

SECTION_START, SECTION_END, KEY_VALUE, LIST_START, LIST_ITEM, LIST_END = range(1, 7)
CMD_REQUEST, CMD_RESPONSE, CMD_UNKNOWN, EVENT_REGISTER, EVENT_UNREGISTER, \
    EVENT_CONFIRM, EVENT_UNKNOWN, EVENT = range(0, 8)


def name(n):
    b = n.encode("ascii")
    assert len(b) <= 255
    return bytes([len(b)]) + b


def value(v):
    b = v.encode() if isinstance(v, str) else bytes(v)
    assert len(b) <= 65535
    return struct.pack(">H", len(b)) + b


def encode_msg(d):
    out = b""
    for k, v in d.items():
        if isinstance(v, dict):
            out += bytes([SECTION_START]) + name(k) + encode_msg(v) + bytes([SECTION_END])
        elif isinstance(v, list):
            out += bytes([LIST_START]) + name(k)
            for item in v:
                out += bytes([LIST_ITEM]) + value(item)
            out += bytes([LIST_END])
        else:
            out += bytes([KEY_VALUE]) + name(k) + value(v)
    return out


def segment(ptype, pname=None, msg=b""):
    body = bytes([ptype]) + (name(pname) if pname is not None else b"") + msg
    return struct.pack(">I", len(body)) + body


def c_array(label, data):
    print("/* %s (%d bytes) */" % (label, len(data)))
    print("static const uint8_t %s[] = {" % label)
    for i in range(0, len(data), 12):
        print("  " + ", ".join("0x%02x" % x for x in data[i:i + 12]) + ",")
    print("};")


PUB3 = ("-----BEGIN PUBLIC KEY-----\n"
        "MCowBQYDK2VwAyEAFl2Aa6OfNGJ5L+9zS+pUmInjGyzNcM4D8fM6VepjMAc=\n"
        "-----END PUBLIC KEY-----\n")
PUB4 = ("-----BEGIN PUBLIC KEY-----\n"
        "MCowBQYDK2VwAyEAd/ZeIQxuyfWiSG8H1ioA9wSIPZ8rSjjjc5h4Lv8JZAk=\n"
        "-----END PUBLIC KEY-----\n")

LOAD_CONN = {"relay-r4": {
    "version": "2",
    "local_addrs": ["10.201.0.1"],
    "remote_addrs": ["10.201.0.2"],
    "proposals": ["aes128gcm16-prfsha256-x25519"],
    "local": {"auth": "pubkey",
              "id": "@#165d806ba39f3462792fef734bea549889e31b2ccd70ce03f1f33a55ea633007",
              "pubkeys": [PUB3]},
    "remote": {"auth": "pubkey",
               "id": "@#77f65e210c6ec9f5a2486f07d62a00f704883d9f2b4a38e37398782eff096409",
               "pubkeys": [PUB4]},
    "children": {"tor": {"mode": "tunnel",
                         "local_ts": ["10.201.0.1/32[tcp]"],
                         "remote_ts": ["10.201.0.2/32[tcp/9001]"],
                         "esp_proposals": ["aes128gcm16-x25519"],
                         "start_action": "none"}}}}

# An event shaped like charon's child-updown, with a binary value, an
# empty value and an empty list.
EVENT_MSG = {"up": "yes",
             "relay-r4": {"uniqueid": "7", "state": "ESTABLISHED",
                          "local-vips": [],
                          "child-sas": {"tor-3": {"state": "INSTALLED",
                                                  "spi-in": b"\x00\xff\x10",
                                                  "mark-in": ""}}}}


def main():
    load_conn = encode_msg(LOAD_CONN)
    c_array("vec_load_conn_msg", load_conn)
    c_array("vec_load_conn_seg", segment(CMD_REQUEST, "load-conn", load_conn))
    ev = encode_msg(EVENT_MSG)
    c_array("vec_event_seg", segment(EVENT, "child-updown", ev))
    c_array("vec_confirm_seg", segment(EVENT_CONFIRM))
    c_array("vec_unregister_seg", segment(EVENT_UNREGISTER, "control-log"))
    try:
        from vici.protocol import Message
    except ImportError:
        print("/* (python vici package not installed: no cross-check) */")
        return
    # vici.protocol encodes str values as UTF-8 and bytes as they are.
    assert bytes(Message.serialize(LOAD_CONN)) == load_conn
    assert bytes(Message.serialize(EVENT_MSG)) == ev
    print("/* cross-checked with the python vici package: identical */")


if __name__ == "__main__":
    main()
