#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""conflux_ref.py -- reference vectors for tests/unit/check_conflux.c,
written from proposal 329 (sections 2.2 and 2.6), independently of pctor's
C code. Run by hand (python3 tests/vectors/conflux_ref.py); its output is
pasted into the Check test.

1. CONFLUX_LINK / LINKED body: VERSION [1] = 1, NONCE [32],
   LAST_SEQNO_SENT [8], LAST_SEQNO_RECV [8], DESIRED_UX [1], big-endian.
2. CONFLUX_SWITCH body: SeqNum [4], big-endian.
3. Sequencing: a sender sends multiplexed messages 1..N following a leg
   schedule; whenever it changes leg it first sends SWITCH on the new leg
   carrying (absolute number sent so far) - (last absolute number sent on
   that leg), and the leg's count jumps to the absolute one. We print, per
   leg, the events the receiver sees on it in order: ("S", rel) or
   ("M", message number). The receiver's rule (per leg: last_seq_recv +=
   rel on SWITCH, += 1 on a message, which is then its absolute number)
   must recover every message's number whatever the interleaving of legs.
"""
import struct


def link_body(nonce, sent, recv, ux):
    return bytes([1]) + nonce + struct.pack(">QQ", sent, recv) + bytes([ux])


def switch_body(rel):
    return struct.pack(">I", rel)


def c_hex(b):
    return "".join("\\x%02x" % x for x in b)


def schedule(plan):
    """plan: list of (leg, count). Returns per-leg event lists."""
    last_sent = {}
    events = {}
    absolute = 0
    curr = None
    for leg, count in plan:
        last_sent.setdefault(leg, 0)
        events.setdefault(leg, [])
        if curr is not None and leg != curr:
            rel = absolute - last_sent[leg]
            events[leg].append(("S", rel))
            last_sent[leg] = absolute
        curr = leg
        for _ in range(count):
            absolute += 1
            last_sent[leg] += 1
            events[leg].append(("M", absolute))
    return events


def receive(events, order):
    """Replay per-leg events in the given leg interleaving; return the
    absolute numbers the receiver computes, in arrival order."""
    last_recv = {leg: 0 for leg in events}
    pos = {leg: 0 for leg in events}
    got = []
    for leg in order:
        kind, v = events[leg][pos[leg]]
        pos[leg] += 1
        if kind == "S":
            last_recv[leg] += v
        else:
            last_recv[leg] += 1
            assert last_recv[leg] == v, (leg, last_recv[leg], v)
            got.append(v)
    return got


def main():
    nonce = bytes(range(32))
    b = link_body(nonce, 0x0102030405060708, 42, 3)
    print("LINK (nonce 00..1f, sent 0x0102030405060708, recv 42, ux 3):")
    print('  "%s" (%d bytes)' % (c_hex(b), len(b)))
    b = link_body(b"\xff" * 32, 0, 0, 1)
    print("LINKED (nonce ff*32, sent 0, recv 0, ux 1):")
    print('  "%s"' % c_hex(b))
    print("SWITCH 0x01020304:", '"%s"' % c_hex(switch_body(0x01020304)))
    print("SWITCH 21:", '"%s"' % c_hex(switch_body(21)))

    # The proposal's example: 10 on leg A, 21 on leg B, then back to A.
    plan = [("A", 10), ("B", 21), ("A", 5), ("B", 3), ("A", 1), ("C", 4),
            ("A", 2)]
    ev = schedule(plan)
    for leg in sorted(ev):
        print("leg %s:" % leg, " ".join("%s%d" % e for e in ev[leg]))
    # Every leg in turn drained completely (worst reordering), B first.
    order = ["B"] * len(ev["B"]) + ["C"] * len(ev["C"]) + ["A"] * len(ev["A"])
    got = receive(ev, order)
    print("numbers in arrival order (B, C, then A):", got)
    total = sum(c for _, c in plan)
    assert sorted(got) == list(range(1, total + 1))


if __name__ == "__main__":
    main()
