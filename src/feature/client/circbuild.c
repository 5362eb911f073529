/* SPDX-License-Identifier: BSD-3-Clause */
/* circbuild.c -- one-hop-at-a-time client circuit construction (see
 * circbuild.h). The builder owns the hop list and forwards the circuit's
 * events to its caller; once the circuit closes the builder forgets it.
 * The protocol-list check is feature/dir's (nodelist.h). */
#include "feature/client/circbuild.h"
#include "core/or/congestion_control.h"
#include "core/proto/create.h"
#include "feature/dir/nodelist.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

struct circbuild_t {
  extend_target_t hops[CIRCUIT_MAX_HOPS];
  int n_hops;
  origin_circuit_t *circ;
  const circbuild_cbs_t *cbs;
  void *arg;
  uint64_t started_us, built_us;
  int built;
  int n_open;
};

static void
on_extended(origin_circuit_t *circ, int n_open, void *arg)
{
  circbuild_t *cb = arg;
  cb->n_open = n_open;
  log_info("Circuit %llu: hop %d of %d open",
           (unsigned long long)circ->base.gid, n_open, cb->n_hops);
  if (n_open < cb->n_hops) {
    if (origin_circuit_extend(circ, &cb->hops[n_open]) < 0) {
      log_warn("Could not send EXTEND2 for hop %d", n_open + 1);
      circuit_mark_for_close(&circ->base, DESTROY_REASON_INTERNAL);
    }
    return;
  }
  cb->built = 1;
  cb->built_us = evloop_now_us(channels_loop());
  if (cb->cbs->built)
    cb->cbs->built(cb, circ, cb->arg);
}

static void
on_relay(origin_circuit_t *circ, int hop, uint8_t command, uint16_t stream_id,
         const uint8_t *body, uint16_t len, void *arg)
{
  circbuild_t *cb = arg;
  (void)circ;
  if (cb->cbs->relay)
    cb->cbs->relay(cb, hop, command, stream_id, body, len, cb->arg);
}

static void
on_closed(origin_circuit_t *circ, int reason, const char *why, void *arg)
{
  circbuild_t *cb = arg;
  (void)circ;
  cb->circ = NULL;
  if (cb->cbs->closed)
    cb->cbs->closed(cb, reason, why, cb->arg);
}

static const origin_circuit_ops_t ops = {on_extended, on_relay, on_closed};

int
circbuild_protocols_support(const char *protocols, const char *name,
                            unsigned version)
{
  return dir_protocols_support(protocols, name, version);
}

int
circbuild_exit_request_cc(extend_target_t *exit, int32_t cc_alg,
                          const char *exit_protocols)
{
  if (cc_alg == CC_ALG_SENDME || !exit->has_ed_id ||
      !circbuild_protocols_support(exit_protocols, "FlowCtrl", 2) ||
      !circbuild_protocols_support(exit_protocols, "Relay", 4))
    return 0;
  exit->handshake = HTYPE_NTOR_V3;
  exit->cc_request = 1;
  return 1;
}

int
circbuild_exit_request_nowin(extend_target_t *exit,
                             const char *exit_protocols)
{
  if (!exit->has_ed_id ||
      !circbuild_protocols_support(exit_protocols, "Relay", 4))
    return 0;
  exit->nowin_request = 1; /* core switches to ntor v3 if it asks */
  return 1;
}

circbuild_t *
circbuild_start(const extend_target_t *hops, int n_hops,
                const circbuild_cbs_t *cbs, void *arg)
{
  if (n_hops < 1 || n_hops > CIRCUIT_MAX_HOPS)
    return NULL;
  circbuild_t *cb = pc_zalloc(sizeof(*cb));
  memcpy(cb->hops, hops, sizeof(*hops) * (size_t)n_hops);
  cb->n_hops = n_hops;
  cb->cbs = cbs;
  cb->arg = arg;
  cb->started_us = evloop_now_us(channels_loop());
  cb->circ = origin_circuit_launch(&hops[0], &ops, cb);
  if (!cb->circ) {
    free(cb);
    return NULL;
  }
  return cb;
}

int
circbuild_extend(circbuild_t *cb, const extend_target_t *hops, int n)
{
  if (!cb->circ || cb->circ->base.marked_for_close || n < 1 ||
      n > CIRCUIT_MAX_HOPS - cb->n_hops)
    return -1;
  memcpy(cb->hops + cb->n_hops, hops, sizeof(*hops) * (size_t)n);
  int first = cb->n_hops;
  cb->n_hops += n;
  if (!cb->built)
    return 0; /* on_extended goes on to them */
  cb->built = 0;
  if (origin_circuit_extend(cb->circ, &cb->hops[first]) < 0) {
    cb->n_hops = first;
    cb->built = 1;
    return -1;
  }
  return 0;
}

origin_circuit_t *
circbuild_circuit(circbuild_t *cb)
{
  return cb->circ;
}

int
circbuild_hops_open(const circbuild_t *cb)
{
  return cb->n_open;
}

uint64_t
circbuild_build_time_us(const circbuild_t *cb)
{
  return cb->built ? cb->built_us - cb->started_us : 0;
}

void
circbuild_free_(circbuild_t *cb)
{
  if (!cb)
    return;
  if (cb->circ) {
    origin_circuit_t *c = cb->circ;
    c->ops = NULL; /* no callbacks into a freed builder */
    cb->circ = NULL;
    circuit_mark_for_close(&c->base, DESTROY_REASON_NONE);
  }
  free(cb);
}
