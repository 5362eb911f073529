/* SPDX-License-Identifier: BSD-3-Clause */
/* pctcp.h -- PCTCP: which channel a relay-to-relay circuit extension uses.
 *
 * With PerCircuitTCP on, every circuit this relay extends to another relay
 * gets a kernel TCP (+TLS, full link handshake) connection of its own
 * (AlSabah & Goldberg, "PCTCP", CCS 2013), so that one circuit's losses
 * and congestion-window cuts do not stall the others. The next hop needs
 * no change: it sees another link connection from us and sends the
 * circuit's cells back on the connection it arrived on. Circuits that a
 * client builds through us to its guard (origin circuits, and extensions
 * of circuits we originate) are not concerned: only or_circuits extend
 * relay to relay here.
 *
 * Set-up time: a new connection costs an extension a TCP, TLS and link
 * handshake. With spares > 0, after each per-circuit extension to a relay
 * that many further connections to it are opened ahead of need, and the
 * next extension takes one that is already open (unused spares close
 * after a minute).
 *
 * Threshold (the paper's section 6.5): beyond max_connections per-circuit
 * connections, or half the descriptor limit, new circuits share the
 * quietest existing connection to that relay (lowest EWMA sum), so that
 * loud circuits are kept away from quiet ones where possible.
 */
#ifndef PCTOR_CORE_OR_PCTCP_H
#define PCTOR_CORE_OR_PCTCP_H
#include <stdint.h>
#include "core/or/channel.h"

typedef struct pctcp_config_t {
  int enabled;               /* PerCircuitTCP */
  unsigned max_connections;  /* PerCircuitTCPMaxConnections; 0: automatic */
  unsigned spares;           /* PerCircuitTCPSpares: ready connections kept
                              * per relay we extended to */
  uint64_t fd_limit;         /* the process's descriptor limit */
} pctcp_config_t;

void pctcp_configure(const pctcp_config_t *cfg);
/* The per-circuit connection limit in force. */
unsigned pctcp_connection_limit(void);

struct circuit_t;
/* The channel that circ's extension to the relay at addr with these
 * identities should use: a new per-circuit channel, or an existing or new
 * shared one. NULL only when no socket can be made. */
channel_t *pctcp_channel_for_extend(const struct circuit_t *circ,
                                    const pc_addr_t *addr,
                                    const uint8_t *rsa_id,
                                    const uint8_t *ed_id);

/* A feature may veto per-circuit connections to some relays (IPsec: only
 * to peers with an established SA, so that circuits cannot be counted on
 * the wire). The policy is asked for every relay-to-relay extension while
 * PerCircuitTCP is on; PCTCP_PEER_SHARED sends the circuit over a shared
 * connection instead. NULL (the default): every peer is fine. */
typedef enum {
  PCTCP_PEER_PER_CIRCUIT = 0,
  PCTCP_PEER_SHARED = 1,
} pctcp_peer_verdict_t;
typedef pctcp_peer_verdict_t (*pctcp_peer_policy_fn)(const pc_addr_t *addr,
                                                     const uint8_t *rsa_id,
                                                     const uint8_t *ed_id,
                                                     void *arg);
void pctcp_set_peer_policy(pctcp_peer_policy_fn fn, void *arg);

/* A feature may carry relay-to-relay extensions itself (BackTap over a
 * datagram link, feature/btcirc): asked first for every extension of an
 * or_circuit, and for the first hop of an origin circuit of ours (a relay
 * that is also a client: its identity authenticates the datagram link, as
 * it does its TLS links), it returns a carried channel (channel.h) that is open, or
 * NULL to let the circuit take a TLS channel as usual. One provider; a
 * second, different one is refused (-1); NULL removes it. */
typedef channel_t *(*pctcp_carrier_fn)(const pc_addr_t *addr,
                                       const uint8_t *rsa_id,
                                       const uint8_t *ed_id, void *arg);
int pctcp_set_carrier_provider(pctcp_carrier_fn fn, void *arg);
/* Further providers (TCP-over-DTLS, feature/dtcp, next to BackTap's):
 * asked after the one above, in the order added, until one returns a
 * channel. At most PCTCP_MAX_EXTRA_CARRIERS; -1 when full or when (fn, arg)
 * is already there. */
#define PCTCP_MAX_EXTRA_CARRIERS 3
int pctcp_add_carrier_provider(pctcp_carrier_fn fn, void *arg);
void pctcp_remove_carrier_provider(pctcp_carrier_fn fn, void *arg);

typedef struct pctcp_stats_t {
  uint64_t per_circuit_opened; /* per-circuit connections opened */
  uint64_t shared_over_limit;  /* extensions that shared over the limit */
  uint64_t shared_by_policy;   /* extensions the peer policy kept shared */
  uint64_t spares_opened, spares_used;
} pctcp_stats_t;
void pctcp_get_stats(pctcp_stats_t *out);
#endif
