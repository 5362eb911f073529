/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap_sim.h -- a deterministic simulation of one BackTap circuit over a
 * chain of relays in virtual time (used by tests/unit/check_backtap.c and
 * pctor-btsim, the figures of scripts/bench-backtap).
 *
 * Node 0 is the circuit end that sends (a bulk source: an exit reading from
 * a fast server), node n_hops the end that receives (the client); nodes in
 * between are relays with a fused queue per circuit, served round robin.
 * Up to BTSIM_MAX_CIRCS circuits take the same path (so they share each
 * link, its base RTT and the bottleneck), each starting at its own time. Hop i joins node i and
 * node i+1 with a link in each direction: one-way delay, serialisation at a
 * rate (per hop if given: a slow link can be the bottleneck), a drop-tail
 * buffer and random loss, one record per datagram. One
 * relay (bottleneck_node) forwards at most bottleneck_cps cells per second
 * (the paper's application-layer rate limit at the middle relay, paced per
 * cell instead of a 100 ms token bucket), and from slowdown_at_us on at
 * slowdown_cps. Everything runs on one event queue: no wall clock, no
 * sockets, same seed same result.
 */
#ifndef PCTOR_TOOLS_BTSIM_BACKTAP_SIM_H
#define PCTOR_TOOLS_BTSIM_BACKTAP_SIM_H
#include <stddef.h>
#include <stdint.h>

#include "feature/backtap/backtap.h"

#define BTSIM_MAX_HOPS 8
#define BTSIM_MAX_CIRCS 8

typedef struct btsim_cfg_t {
  unsigned n_hops;                       /* 1..BTSIM_MAX_HOPS */
  uint64_t delay_us[BTSIM_MAX_HOPS];     /* one-way, per hop */
  uint64_t link_bps;                     /* bits/s per direction, 0: none */
  uint64_t hop_bps[BTSIM_MAX_HOPS];      /* per hop instead, if not 0 */
  unsigned link_buffer;                  /* records queued per direction */
  double loss;                           /* per record, both directions */
  unsigned bottleneck_node;              /* 1..n_hops-1, 0: none */
  uint64_t bottleneck_cps;
  uint64_t slowdown_at_us, slowdown_cps; /* 0: no slowdown */
  unsigned n_circuits;                   /* 1..BTSIM_MAX_CIRCS, same path */
  uint64_t start_us[BTSIM_MAX_CIRCS];    /* when each starts sending */
  uint64_t duration_us;
  uint64_t total_cells;                  /* 0: send for the whole run */
  uint64_t measure_from_us;              /* steady state from here ... */
  uint64_t measure_to_us;                /* ... to here (0: run's end) */
  uint64_t seed;
  /* 1: the peer at node hop+1 never answers (feedback and cells lost) */
  int blackhole_hop;                     /* -1: none */
  uint64_t blackhole_from_us;
  /* Optional: return 1 to drop this record (dir 0: downstream). */
  int (*drop)(void *arg, unsigned hop, int dir, backtap_rec_type_t type,
              const uint8_t *rec, size_t len);
  void *drop_arg;
  backtap_params_t params;
} btsim_cfg_t;

typedef struct btsim_hop_result_t {
  backtap_stats_t snd, rcv;   /* the link at node i, at node i+1 */
  unsigned swnd_final;
  double swnd_mean;           /* during the measurement */
  uint64_t base_rtt_us;
  double queue_mean;          /* fused queue at node i+1 (if a relay) */
  unsigned queue_max;         /* largest from measure_from_us to the end */
  size_t mem_max;             /* largest backtap_link_mem_bytes at node i */
} btsim_hop_result_t;

typedef struct btsim_result_t {
  uint64_t injected, delivered;   /* all circuits */
  double circ_rate_cps[BTSIM_MAX_CIRCS]; /* each, during the measurement */
  double jain;                    /* Jain's fairness index of those rates */
  int in_order;               /* every cell arrived once, in order */
  double rate_cps;            /* delivered cells/s during the measurement */
  double backlog_mean;        /* injected - delivered, cells */
  double delay_mean_us;       /* injection to delivery */
  int64_t backpressure_us;    /* slowdown until the source sent at most
                               * 1.25x the new rate; -1 if never */
  int link_failed;            /* a link reported a dead peer */
  unsigned failed_hop;
  uint64_t end_us;            /* virtual time when the run stopped */
  btsim_hop_result_t hop[BTSIM_MAX_HOPS]; /* circuit 0's flows */
} btsim_result_t;

void btsim_cfg_default(btsim_cfg_t *cfg);
/* Run the simulation; 0, or -1 if cfg is unusable. */
int btsim_run(const btsim_cfg_t *cfg, btsim_result_t *res);

#endif
