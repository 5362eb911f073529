#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cc_vegas_ref.py -- an independent model of proposal 324's TOR_VEGAS
congestion control, written from the proposal text (sections 2.1 RTT,
2.1.1 clock heuristics, 2.1.2 N_EWMA, 3.1.2 cwnd BDP, 3.3 TOR_VEGAS with
RFC 3742 limited slow start) and tor 0.4.9's default parameters, to check
pctor's C controller (tests/unit/check_congestion.c) against.

It drives the model with a simulated path (a bottleneck of RATE cells/s
behind a base RTT, a receiver that sends a SENDME every sendme_inc cells)
and prints, as C, the event list the sender saw (cells sent, SENDMEs
arriving with the circuit queue length) and the controller's state after
every SENDME. The C test replays the events through cc_t and must reach
the same states.

Run by hand:  python3 tests/vectors/cc_vegas_ref.py > /tmp/vec.c
"""

# tor 0.4.9 defaults (consensus parameter names in comments)
SENDME_INC = 31          # cc_sendme_inc
CWND_INIT = 124          # cc_cwnd_init
CWND_MIN = 124           # cc_cwnd_min
CWND_MAX = 2**31 - 1     # cc_cwnd_max
CWND_INC = 1             # cc_cwnd_inc
CWND_INC_PCT_SS = 100    # cc_cwnd_inc_pct_ss
CWND_INC_RATE = 31       # cc_cwnd_inc_rate
EWMA_CWND_PCT = 50       # cc_ewma_cwnd_pct
EWMA_MAX = 10            # cc_ewma_max
EWMA_SS = 2              # cc_ewma_ss
RTT_RESET_PCT = 100      # cc_rtt_reset_pct
ALPHA, BETA, GAMMA, DELTA = 186, 248, 186, 310   # cc_vegas_*_exit
SS_CAP = 600             # cc_sscap_exit
SS_MAX = 5000            # cc_ss_max
FULL_GAP = 4             # cc_cwnd_full_gap
FULL_MINPCT = 25         # cc_cwnd_full_minpct
FULL_PER_CWND = 1        # cc_cwnd_full_per_cwnd
CELLQ_HIGH, CELLQ_LOW = 256, 10   # cellq_high, cellq_low


def n_ewma(curr, prev, n):
    # Section 2.1.2: the rearranged form, integer division.
    if prev == 0:
        return curr
    return (curr * 2 + prev * (n - 1)) // (n + 1)


class Vegas:
    def __init__(self, inc=SENDME_INC):
        self.inc = inc
        self.cwnd = CWND_INIT
        self.inflight = 0
        self.ss = True
        self.ewma = self.min = self.max = 0
        self.bdp = 0
        self.full = False
        self.blocked = False
        self.clock_stalled = False
        self.pending = []            # send times of acknowledged cells
        self.next_cc = self.update_rate()
        self.next_cwnd = 0

    def sendme_per_cwnd(self):
        return (self.cwnd + self.inc // 2) // self.inc

    def update_rate(self):
        if self.ss:
            return 1
        unit = CWND_INC_RATE * self.inc
        return (self.cwnd + unit // 2) // unit

    def ewma_n(self):
        if self.ss:
            n = EWMA_SS
        else:
            n = min(self.update_rate() * EWMA_CWND_PCT // 100, EWMA_MAX)
        return max(n, 2)

    def send(self, t):
        # Section 2.1: remember when we sent the cell that will be acked.
        if (self.inflight + 1) % self.inc == 0:
            self.pending.append(t)
        self.inflight += 1

    def sendable(self):
        return max(self.cwnd - self.inflight, 0)

    def rtt_fishy(self, new):
        # Section 2.1.1
        if new == 0:
            self.clock_stalled = True
            return True
        if self.ss or self.ewma == 0:
            return False
        if self.ewma > new * 5000:
            return self.clock_stalled
        if new > self.ewma * 5000:
            return True
        self.clock_stalled = False
        return False

    def ss_inc(self):
        # RFC 3742 as in section 3.3
        if self.cwnd <= SS_CAP:
            return (CWND_INC_PCT_SS * self.inc + 50) // 100
        return max((self.inc * SS_CAP + self.cwnd) // (2 * self.cwnd), 1)

    def ack(self, t, chanq):
        if self.next_cc:
            self.next_cc -= 1
        if self.next_cwnd:
            self.next_cwnd -= 1
        sent = self.pending.pop(0)
        rtt = max(t - sent, 0)
        if self.rtt_fishy(rtt):
            rtt = 0
        else:
            self.ewma = n_ewma(rtt, self.ewma, self.ewma_n())
            self.max = max(self.max, rtt)
            if self.min == 0:
                self.min = self.ewma
            elif self.cwnd == CWND_MIN and not self.ss:
                hi, lo = max(self.ewma, self.min), min(self.ewma, self.min)
                self.min = RTT_RESET_PCT * hi // 100 + \
                    (100 - RTT_RESET_PCT) * lo // 100
            elif self.ewma < self.min:
                self.min = self.ewma
        # The local channel counts as blocked above the cell-queue high
        # watermark until it drains to the low one; a change of state is
        # an immediate congestion signal (next_cc_event = 0).
        if chanq >= CELLQ_HIGH:
            blocked = True
        elif chanq <= CELLQ_LOW:
            blocked = False
        else:
            blocked = self.blocked
        if self.ewma == 0:
            cwnd = self.cwnd
            if blocked:
                cwnd = CWND_MIN if chanq >= cwnd else max(cwnd - chanq,
                                                          CWND_MIN)
            self.blocked = blocked
            self.bdp = cwnd
            estimated = blocked
        else:
            self.bdp = self.cwnd * self.min // self.ewma   # section 3.1.2
            if blocked != self.blocked:
                self.next_cc = 0
            self.blocked = blocked
            estimated = blocked or rtt != 0
        if estimated:
            self.vegas()
        self.cwnd = min(self.cwnd, CWND_MAX)
        self.inflight -= self.inc

    def vegas(self):
        queue_use = 0 if self.bdp > self.cwnd else self.cwnd - self.bdp
        if self.inflight + FULL_GAP * self.inc >= self.cwnd:
            self.full = True
        elif 100 * self.inflight < FULL_MINPCT * self.cwnd:
            self.full = False
        if self.ss:
            if queue_use < GAMMA and not self.blocked:
                if self.full:
                    inc = self.ss_inc()
                    self.cwnd += inc
                    if inc * self.sendme_per_cwnd() <= CWND_INC * \
                            CWND_INC_RATE:
                        self.ss = False
            else:
                self.cwnd = self.bdp + GAMMA
                self.ss = False
            if self.cwnd >= SS_MAX:
                self.cwnd = SS_MAX
                self.ss = False
        elif self.next_cc == 0:
            if queue_use > DELTA:
                self.cwnd = self.bdp + DELTA - CWND_INC
            elif queue_use > BETA or self.blocked:
                self.cwnd -= CWND_INC
            elif self.full and queue_use < ALPHA:
                self.cwnd += CWND_INC
            self.cwnd = max(self.cwnd, CWND_MIN)
        if self.next_cwnd == 0:
            self.next_cwnd = self.sendme_per_cwnd()
        if self.next_cc == 0:
            self.next_cc = self.update_rate()
        if FULL_PER_CWND:
            reset = self.next_cwnd == self.sendme_per_cwnd()
        else:
            reset = self.next_cc == self.update_rate()
        if reset:
            self.full = False


def simulate(base_rtt, rates, n_acks_max, limited, blocked):
    """A sender with unlimited data (except, for acks in `limited`, 10
    cells per round) over a path with a base RTT and a bottleneck whose
    rate in cells/s changes with the number of acks seen (`rates`: list of
    (from_ack, rate)); the queue there adds delay. For acks in `blocked`
    the local circuit queue is reported above cellq_high."""
    cc = Vegas()
    events, states = [], []
    t = 1000000
    bottleneck_free = t
    delivered = 0
    acks = []          # arrival times of SENDMEs at the sender
    n_acks = 0
    while n_acks < n_acks_max:
        rate = [r for a, r in rates if a <= n_acks][-1]
        n = cc.sendable()
        if limited[0] <= n_acks < limited[1]:
            n = min(n, 10)
        if n:
            events.append((0, n, t))
            for _ in range(n):
                cc.send(t)
                bottleneck_free = max(bottleneck_free, t) + 1000000 // rate
                delivered += 1
                if delivered % cc.inc == 0:
                    acks.append(bottleneck_free + base_rtt)
        acks.sort()
        if not acks:
            t += 5000      # app-limited: more data comes 5 ms later
            continue
        t = acks.pop(0)
        if blocked[0] <= n_acks < blocked[1]:
            chanq = 300
        elif n_acks == blocked[1]:
            chanq = 100    # between the watermarks: still blocked
        else:
            chanq = 3
        events.append((1, chanq, t))
        cc.ack(t, chanq)
        n_acks += 1
        states.append((cc.cwnd, cc.inflight, int(cc.ss), cc.ewma, cc.min,
                       cc.bdp, cc.next_cc, cc.next_cwnd, int(cc.full)))
    return events, states


SCENARIOS = [
    # name, base RTT (us), bottleneck rates, acks, app-limited, blocked
    ("moderate", 20000, [(0, 2000), (60, 8000), (200, 1500)], 320,
     (120, 150), (250, 258)),
    ("large_bdp", 150000, [(0, 40000)], 250, (0, 0), (0, 0)),
]


def main():
    print("/* Generated by tests/vectors/cc_vegas_ref.py. */")
    for name, base, rates, n, limited, blocked in SCENARIOS:
        events, states = simulate(base, rates, n, limited, blocked)
        print("static const cc_vec_event_t %s_events[] = {" % name)
        for k, v, t in events:
            print("  {%d, %d, %d}," % (k, v, t))
        print("};")
        print("/* After each SENDME: cwnd, inflight, slow start, ewma rtt, "
              "min rtt, bdp, next_cc_event, next_cwnd_event, cwnd_full. */")
        print("static const uint64_t %s_states[][9] = {" % name)
        for st in states:
            print("  {%s}," % ", ".join(str(x) for x in st))
        print("};")


if __name__ == "__main__":
    main()
