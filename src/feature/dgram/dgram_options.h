/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_options.h -- the torrc options of the datagram link layer and of
 * the circuit transport choice, owned by this module (registered with the
 * option manager as dgram_conf_module, read with options_module()).
 */
#ifndef PCTOR_FEATURE_DGRAM_DGRAM_OPTIONS_H
#define PCTOR_FEATURE_DGRAM_DGRAM_OPTIONS_H

#include "lib/conf/confdecl.h"
#include "lib/address/address.h"

typedef struct {
  pc_addr_t port;      /* DatagramPort; family AF_UNSPEC: off */
  int transport;       /* CircuitTransport: a circuit_transport_t */
  int idle_timeout;    /* DatagramLinkIdleTimeout, seconds */
  int max_links;       /* DatagramMaxLinks */
} dgram_options_t;

extern const conf_module_t dgram_conf_module;

#endif
