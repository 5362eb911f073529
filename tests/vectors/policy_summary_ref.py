#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""policy_summary_ref.py -- reference exit-policy summaries for
tests/unit/check_policy.c, written from dir-spec 3.4.1 / 3.8.2 (and tor's
documented behaviour where the spec is silent: the 2^25-address IPv4 cutoff,
IPv6 counted in /64s with a /16 cutoff, rejects of exactly the private
netblocks ignored, accepts for fewer than all addresses ignored, the 1000
character limit cutting the accept list at a comma).

Independent of the C code: it simulates every port 1..65535 one by one
instead of working on port ranges. Run by hand:  python3 policy_summary_ref.py
"""
import ipaddress

PRIVATE = {ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "169.254.0.0/16", "127.0.0.0/8", "192.168.0.0/16",
    "10.0.0.0/8", "172.16.0.0/12", "::/8", "fc00::/7", "fe80::/10",
    "fec0::/10", "ff00::/8", "::/127")}
MAXLEN = 1000


def parse(entry):
    """'accept 1.2.0.0/16:80-90' (only *4, *6, a.b.c.d/bits, [v6]/bits)."""
    verb, pat = entry.split()
    addr, ports = pat.rsplit(":", 1)
    if addr == "*4":
        net = ipaddress.ip_network("0.0.0.0/0")
    elif addr == "*6":
        net = ipaddress.ip_network("::/0")
    else:
        bare = addr.replace("[", "").replace("]", "")
        net = ipaddress.ip_network(bare, strict=False)
    if ports == "*":
        lo, hi = 1, 65535
    elif "-" in ports:
        lo, hi = map(int, ports.split("-"))
    else:
        lo = hi = int(ports)
    return verb == "accept", net, lo, hi


def summarize(entries, family):
    bits = 32 if family == 4 else 128
    scale = 0 if family == 4 else 64
    cutoff = 1 << 25 if family == 4 else 1 << 48
    count = [0] * 65536
    acc = [False] * 65536
    for e in entries:
        accept, net, lo, hi = parse(e)
        if net.version != family:
            continue
        if accept:
            if net.prefixlen != 0:
                continue
            for p in range(lo, hi + 1):
                if not acc[p] and count[p] <= cutoff:
                    acc[p] = True
        else:
            if net in PRIVATE or net.prefixlen > bits - scale:
                continue
            c = 1 << (bits - scale - net.prefixlen)
            c = min(c, (1 << 64) - 1)
            for p in range(lo, hi + 1):
                count[p] = min(count[p] + c, (1 << 64) - 1)
    runs = {True: [], False: []}
    p = 1
    while p <= 65535:
        q = p
        while q + 1 <= 65535 and acc[q + 1] == acc[p]:
            q += 1
        runs[acc[p]].append(str(p) if p == q else "%d-%d" % (p, q))
        p = q + 1
    if not runs[True]:
        return "reject 1-65535"
    if not runs[False]:
        return "accept 1-65535"
    a, r = ",".join(runs[True]), ",".join(runs[False])
    room = MAXLEN - len("accept ")
    if len(a) > room and len(r) > room:
        cut = a.rfind(",", 0, room + 1)
        return "accept " + a[:cut]
    if len(r) < len(a):
        return "reject " + r
    return "accept " + a


DEFAULT = ["reject *4:25", "reject *4:119", "reject *4:135-139",
           "reject *4:445", "reject *4:563", "reject *4:1214",
           "reject *4:4661-4666", "reject *4:6346-6429", "reject *4:6699",
           "reject *4:6881-6999", "accept *4:*"]

CASES = [
    ("default", DEFAULT, 4),
    ("default_private_first",
     ["reject 0.0.0.0/8:*", "reject 169.254.0.0/16:*", "reject 127.0.0.0/8:*",
      "reject 192.168.0.0/16:*", "reject 10.0.0.0/8:*",
      "reject 172.16.0.0/12:*", "reject 1.2.3.4/32:*"] + DEFAULT, 4),
    ("web_only", ["accept *4:80", "accept *4:443", "reject *4:*"], 4),
    ("loopback_only", ["accept 127.0.0.0/8:*", "reject *4:*"], 4),
    ("adjacent", ["accept *4:80-88", "accept *4:89-100", "accept *4:20",
                  "accept *4:21", "reject *4:*"], 4),
    ("tie", ["reject *4:1", "reject *4:65535", "accept *4:*"], 4),
    ("cutoff_at", ["reject 1.0.0.0/8:80", "reject 2.0.0.0/8:80",
                   "accept *4:*"], 4),
    ("cutoff_over", ["reject 1.0.0.0/8:80", "reject 2.0.0.0/8:80",
                     "reject 3.0.0.1/32:80", "accept *4:*"], 4),
    ("private_ignored", ["reject 10.0.0.0/8:*", "reject 11.0.0.0/8:*",
                         "reject 12.0.0.0/8:*", "accept *4:*"], 4),
    ("not_private_7", ["reject 10.0.0.0/7:*", "reject 12.0.0.0/8:*",
                       "accept *4:*"], 4),
    ("accept16_in_rejects", ["reject *4:22", "accept 1.2.0.0/16:*",
                             "reject 5.0.0.0/8:443", "accept *4:80-443",
                             "reject *4:*"], 4),
    ("v6_16", ["reject [2001:db8::]/16:80", "accept *6:*"], 6),
    ("v6_15", ["reject [2000::]/15:80", "accept *6:*"], 6),
    ("v6_small", ["reject [2001:db8::]/65:80", "reject [2001:db8::1]/128:81",
                  "accept *6:*"], 6),
    ("v6_all", ["reject *6:80", "accept *6:*"], 6),
    ("odd_ports", ["accept *4:%d" % p for p in range(1, 1200, 2)]
     + ["reject *4:*"], 4),
]

if __name__ == "__main__":
    for name, entries, fam in CASES:
        print('  /* %s */ "%s",' % (name, summarize(entries, fam)))
