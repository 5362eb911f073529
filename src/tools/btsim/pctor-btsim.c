/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-btsim.c -- print the figures of one simulated BackTap circuit
 * (backtap_sim.h): rate, end-to-end backlog and delay, and per hop the
 * window against the bandwidth-delay product, the fused queue, the base
 * RTT and the retransmissions. Used by scripts/bench-backtap.
 *
 * Usage: pctor-btsim [--delays MS,MS,...] [--rate CELLS/S] [--loss P]
 *                    [--slowdown-at S --slowdown-rate CELLS/S]
 *                    [--circuits N [--stagger S]] [--duration S] [--seed N]
 *                    [--measure-from S] [--measure-to S]
 * With several circuits (same path, started --stagger seconds apart),
 * their rates and Jain's fairness index follow.
 * One line of key=value figures per run, then one line per hop, so a
 * script can grep them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/btsim/backtap_sim.h"

static void
usage(void)
{
  fprintf(stderr,
          "usage: pctor-btsim [--delays MS,MS,...] [--rate CELLS/S] "
          "[--loss P]\n"
          "                   [--slowdown-at S --slowdown-rate CELLS/S]\n"
          "                   [--circuits N [--stagger S]] [--duration S] "
          "[--seed N]\n"
          "                   [--measure-from S] [--measure-to S]\n");
  exit(2);
}

int
main(int argc, char **argv)
{
  btsim_cfg_t c;
  btsim_result_t r;
  double stagger = 0, measure_from = -1, measure_to = -1;
  btsim_cfg_default(&c);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      usage();
    const char *v = argv[++i];
    char *end;
    if (!strcmp(a, "--delays")) {
      unsigned n = 0;
      const char *p = v;
      while (*p && n < BTSIM_MAX_HOPS) {
        double ms = strtod(p, &end);
        if (end == p || ms < 0)
          usage();
        c.delay_us[n++] = (uint64_t)(ms * 1000);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
          usage();
      }
      if (n < 2)
        usage();
      c.n_hops = n;
      c.bottleneck_node = n / 2;
    } else if (!strcmp(a, "--rate")) {
      c.bottleneck_cps = strtoull(v, &end, 10);
      if (*end || !c.bottleneck_cps)
        usage();
    } else if (!strcmp(a, "--loss")) {
      c.loss = strtod(v, &end);
      if (*end || c.loss < 0 || c.loss >= 1)
        usage();
    } else if (!strcmp(a, "--slowdown-at")) {
      c.slowdown_at_us = (uint64_t)(strtod(v, &end) * 1e6);
      if (*end)
        usage();
    } else if (!strcmp(a, "--slowdown-rate")) {
      c.slowdown_cps = strtoull(v, &end, 10);
      if (*end)
        usage();
    } else if (!strcmp(a, "--circuits")) {
      c.n_circuits = (unsigned)strtoul(v, &end, 10);
      if (*end || c.n_circuits < 1 || c.n_circuits > BTSIM_MAX_CIRCS)
        usage();
    } else if (!strcmp(a, "--stagger")) {
      stagger = strtod(v, &end);
      if (*end || stagger < 0)
        usage();
    } else if (!strcmp(a, "--duration")) {
      c.duration_us = (uint64_t)(strtod(v, &end) * 1e6);
      if (*end || c.duration_us < 2000000)
        usage();
    } else if (!strcmp(a, "--measure-from")) {
      measure_from = strtod(v, &end);
      if (*end || measure_from < 0)
        usage();
    } else if (!strcmp(a, "--measure-to")) {
      measure_to = strtod(v, &end);
      if (*end || measure_to <= 0)
        usage();
    } else if (!strcmp(a, "--seed")) {
      c.seed = strtoull(v, &end, 10);
      if (*end)
        usage();
    } else {
      usage();
    }
  }
  for (unsigned k = 0; k < c.n_circuits; k++)
    c.start_us[k] = (uint64_t)(k * stagger * 1e6);
  c.measure_from_us = c.duration_us / 2;
  if (measure_from >= 0)
    c.measure_from_us = (uint64_t)(measure_from * 1e6);
  if (measure_to > 0)
    c.measure_to_us = (uint64_t)(measure_to * 1e6);
  /* Every circuit has started when the measurement begins (with
   * --measure-from, at that instant at the latest: a newcomer's first
   * moments are what it may measure). */
  uint64_t last_start = c.start_us[c.n_circuits - 1];
  if ((measure_from >= 0 ? last_start > c.measure_from_us
                         : last_start >= c.measure_from_us) ||
      (c.measure_to_us && c.measure_to_us <= c.measure_from_us) ||
      c.measure_from_us >= c.duration_us)
    usage();
  if (c.slowdown_at_us) {
    if (c.slowdown_at_us >= c.duration_us || !c.slowdown_cps)
      usage();
    c.measure_to_us = c.slowdown_at_us;
    c.measure_from_us = c.slowdown_at_us / 2;
  }
  if (btsim_run(&c, &r) < 0) {
    fprintf(stderr, "pctor-btsim: unusable configuration\n");
    return 1;
  }
  uint64_t rtt = 0;
  for (unsigned h = 0; h < c.n_hops; h++)
    rtt += 2 * c.delay_us[h];
  printf("rtt_ms=%.1f rate_cps=%.0f rate_kBps=%.0f backlog_cells=%.1f "
         "backlog_kB=%.1f delay_ms=%.1f in_order=%d delivered=%llu",
         rtt / 1e3, r.rate_cps, r.rate_cps * 512 / 1000, r.backlog_mean,
         r.backlog_mean * 512 / 1000, r.delay_mean_us / 1e3, r.in_order,
         (unsigned long long)r.delivered);
  if (c.slowdown_at_us)
    printf(" backpressure_ms=%.1f", r.backpressure_us / 1e3);
  if (c.n_circuits > 1)
    printf(" jain=%.3f", r.jain);
  printf("\n");
  for (unsigned k = 0; c.n_circuits > 1 && k < c.n_circuits; k++)
    printf("  circuit=%u start_s=%.1f rate_cps=%.0f\n", k,
           c.start_us[k] / 1e6, r.circ_rate_cps[k]);
  for (unsigned h = 0; h < c.n_hops; h++) {
    const btsim_hop_result_t *hr = &r.hop[h];
    double bdp = c.bottleneck_cps * (double)hr->base_rtt_us / 1e6;
    printf("  hop=%u base_rtt_ms=%.1f bdp_cells=%.1f swnd_mean=%.1f "
           "queue_mean=%.1f queue_max=%u retransmitted=%llu fast=%llu "
           "rto=%llu dropped=%llu mem_max_kB=%zu\n",
           h, hr->base_rtt_us / 1e3, bdp, hr->swnd_mean, hr->queue_mean,
           hr->queue_max,
           (unsigned long long)hr->snd.cells_retransmitted,
           (unsigned long long)hr->snd.fast_retransmits,
           (unsigned long long)hr->snd.timeouts,
           (unsigned long long)(hr->rcv.excess_dropped +
                                hr->rcv.out_of_window),
           hr->mem_max / 1024);
  }
  return 0;
}
