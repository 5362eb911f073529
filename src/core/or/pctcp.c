/* SPDX-License-Identifier: BSD-3-Clause */
/* pctcp.c -- choosing per-circuit or shared channels for extensions (see
 * pctcp.h). */
#include "core/or/pctcp.h"
#include "core/or/circuit.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"

#include <time.h>

static struct {
  pctcp_config_t cfg;
  pctcp_stats_t stats;
  pctcp_peer_policy_fn policy;
  void *policy_arg;
  pctcp_carrier_fn carrier;
  void *carrier_arg;
  pctcp_carrier_fn extra[PCTCP_MAX_EXTRA_CARRIERS];
  void *extra_arg[PCTCP_MAX_EXTRA_CARRIERS];
} P;

void
pctcp_set_peer_policy(pctcp_peer_policy_fn fn, void *arg)
{
  P.policy = fn;
  P.policy_arg = arg;
}

void
pctcp_configure(const pctcp_config_t *cfg)
{
  P.cfg = *cfg;
}

unsigned
pctcp_connection_limit(void)
{
  /* Keep half the descriptors for clients, exit streams and the rest. */
  uint64_t fd_cap = P.cfg.fd_limit ? P.cfg.fd_limit / 2 : 512;
  uint64_t lim = P.cfg.max_connections ? P.cfg.max_connections : fd_cap;
  if (lim > fd_cap)
    lim = fd_cap;
  return (unsigned)lim;
}

/* Keep cfg.spares connections to that relay open ahead of need, within
 * the limit. */
static void
open_spares(const pc_addr_t *addr, const uint8_t *rsa_id,
            const uint8_t *ed_id)
{
  unsigned have = channels_n_spares(addr, rsa_id, ed_id);
  while (have < P.cfg.spares &&
         channels_n_per_circuit() < pctcp_connection_limit()) {
    if (!channel_connect_spare(addr, rsa_id, ed_id))
      return;
    P.stats.spares_opened++;
    have++;
  }
}

int
pctcp_set_carrier_provider(pctcp_carrier_fn fn, void *arg)
{
  if (fn && P.carrier && (P.carrier != fn || P.carrier_arg != arg)) {
    log_warn("A second circuit carrier provider was refused");
    return -1;
  }
  P.carrier = fn;
  P.carrier_arg = fn ? arg : NULL;
  return 0;
}

int
pctcp_add_carrier_provider(pctcp_carrier_fn fn, void *arg)
{
  int free_slot = -1;
  for (int i = 0; i < PCTCP_MAX_EXTRA_CARRIERS; i++) {
    if (P.extra[i] == fn && P.extra_arg[i] == arg)
      return -1;
    if (!P.extra[i] && free_slot < 0)
      free_slot = i;
  }
  if (!fn || free_slot < 0)
    return -1;
  P.extra[free_slot] = fn;
  P.extra_arg[free_slot] = arg;
  return 0;
}

void
pctcp_remove_carrier_provider(pctcp_carrier_fn fn, void *arg)
{
  for (int i = 0; i < PCTCP_MAX_EXTRA_CARRIERS; i++)
    if (P.extra[i] == fn && P.extra_arg[i] == arg) {
      P.extra[i] = NULL;
      P.extra_arg[i] = NULL;
    }
}

channel_t *
pctcp_channel_for_extend(const circuit_t *circ, const pc_addr_t *addr,
                         const uint8_t *rsa_id, const uint8_t *ed_id)
{
  channel_t *chan = NULL;
  /* Carriers serve origin circuits too (a first hop over BackTap is what
   * lets a circuit drop its end-to-end windows); per-circuit TCP does
   * not. */
  if (P.carrier) {
    chan = P.carrier(addr, rsa_id, ed_id, P.carrier_arg);
    if (chan)
      return chan;
  }
  for (int i = 0; i < PCTCP_MAX_EXTRA_CARRIERS; i++) {
    chan = P.extra[i] ? P.extra[i](addr, rsa_id, ed_id, P.extra_arg[i])
                      : NULL;
    if (chan)
      return chan;
  }
  int per_circuit = P.cfg.enabled && circ->kind == CIRC_KIND_OR;
  if (per_circuit && P.policy &&
      P.policy(addr, rsa_id, ed_id, P.policy_arg) == PCTCP_PEER_SHARED) {
    P.stats.shared_by_policy++;
    per_circuit = 0;
  }
  if (per_circuit) {
    chan = channel_take_spare(addr, rsa_id, ed_id);
    if (chan) {
      P.stats.spares_used++;
      open_spares(addr, rsa_id, ed_id);
      return chan;
    }
    if (channels_n_per_circuit() < pctcp_connection_limit()) {
      chan = channel_connect_per_circuit(addr, rsa_id, ed_id);
      if (chan) {
        P.stats.per_circuit_opened++;
        open_spares(addr, rsa_id, ed_id);
        return chan;
      }
    }
    P.stats.shared_over_limit++;
    static log_ratelim_t rl = LOG_RATELIM_INIT(600, 1);
    unsigned suppressed = 0;
    if (log_ratelim_allow(&rl, time(NULL), &suppressed))
      log_notice("PerCircuitTCP: %u per-circuit connections (the limit is "
                 "%u); new circuits share the quietest existing connection "
                 "to their next relay (%u more times since the last notice)",
                 channels_n_per_circuit(), pctcp_connection_limit(),
                 suppressed);
    chan = channel_find_quietest_for_extend(addr, rsa_id, ed_id);
    if (chan)
      return chan;
  } else {
    chan = channel_find_for_extend(addr, rsa_id, ed_id);
    if (chan)
      return chan;
  }
  return channel_connect(addr, rsa_id, ed_id);
}

void
pctcp_get_stats(pctcp_stats_t *out)
{
  *out = P.stats;
}
