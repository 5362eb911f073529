#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# delayd_rng_ref.py -- reference outputs for pctor-delayd's random generator
# (src/tools/delayd/delayq.c), written from the published descriptions of
# splitmix64 and xoshiro256** (Blackman & Vigna, "Scrambled linear
# pseudorandom number generators", 2018/2021), independently of the C code.
#
# Seeding: the four state words are the first four splitmix64 outputs
# starting from the seed. uniform() takes the top 53 bits / 2^53.
# Run by hand: python3 tests/vectors/delayd_rng_ref.py
# and paste the output into tests/unit/check_delayd.c.

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro256ss:
    def __init__(self, seed):
        st = seed & M64
        self.s = []
        for _ in range(4):
            st, v = splitmix64(st)
            self.s.append(v)

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result


def main():
    for seed in (0, 1, 0x0123456789ABCDEF):
        st, first = splitmix64(seed)
        print("/* seed %#x: splitmix64 first output %#018xULL */" % (seed, first))
        g = Xoshiro256ss(seed)
        outs = [g.next() for _ in range(6)]
        print("  {0x%016xULL, {%s}}," % (seed, ", ".join("0x%016xULL" % o for o in outs)))
    g = Xoshiro256ss(42)
    us = [(g.next() >> 11) / float(1 << 53) for _ in range(3)]
    print("/* seed 42 uniform: %s */" % ", ".join(repr(u) for u in us))


if __name__ == "__main__":
    main()
