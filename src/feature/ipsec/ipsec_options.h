/* SPDX-License-Identifier: BSD-3-Clause */
/* ipsec_options.h -- the IPsec torrc options, owned by this module and
 * registered by the option manager (src/app/config); the daemon hands
 * them to the broker (ipsec_broker_configure()). */
#ifndef PCTOR_FEATURE_IPSEC_IPSEC_OPTIONS_H
#define PCTOR_FEATURE_IPSEC_IPSEC_OPTIONS_H

#include "lib/conf/confdecl.h"

typedef struct {
  int mode;          /* IPsec: an ipsec_mode_t */
  char *vici_socket; /* IPsecVICISocket: an absolute path */
  char *updown;      /* IPsecUpdown: NULL if unset */
  int max_peers;     /* IPsecMaxPeers */
  int max_peers_per_address; /* IPsecMaxPeersPerAddress */
  char *charon_user; /* IPsecCharonUser: NULL if unset (root only) */
} ipsec_options_t;

extern const conf_module_t ipsec_conf_module;

#endif
