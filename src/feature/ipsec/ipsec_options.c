/* SPDX-License-Identifier: BSD-3-Clause */
/* ipsec_options.c -- declarations of the IPsec options (see
 * ipsec_options.h): names, types, defaults and the man page's text in one
 * table. The rules that involve other modules' options (IPsec needs an
 * ORPort; PerCircuitTCPRequireIPsec needs IPsec) are the manager's. */
#include "feature/ipsec/ipsec_options.h"
#include "feature/ipsec/broker.h"

#include <stddef.h>

#define OFF(f) offsetof(ipsec_options_t, f)

static const conf_enum_t ipsec_modes[] = {
  {"0", IPSEC_MODE_OFF}, {"auto", IPSEC_MODE_AUTO}, {"1", IPSEC_MODE_ON},
  {NULL, 0},
};

/* clang-format off */
static const conf_var_t ipsec_vars[] = {
  {"IPsec", CONF_TYPE_ENUM, "0|1|auto", "0", "0", 1, 0, 0, OFF(mode),
   "IPsec between relays, negotiated by strongSwan's charon through its "
   "VICI socket (IPsecVICISocket). With auto or 1, this relay tells each "
   "relay it connects to that it offers IPsec (a link cell that tor "
   "ignores), with its Ed25519 IKE key (DataDirectory/keys/"
   "ike_ed25519_key, made on first start) certified by its identity. "
   "With a relay that offers it too, pctor loads an IPsec connection "
   "into charon whose IKE identities are the two relays' Ed25519 "
   "identities and which protects the TCP between this relay and the "
   "other's ORPort, and the relay with the lower identity initiates it. "
   "PerCircuitTCP then opens per-circuit connections to that relay only "
   "while its SA is installed; meanwhile circuits share a TLS "
   "connection. With auto, relays that do not offer IPsec (tor relays) "
   "get per-circuit connections without it; with 1 they share. pctor "
   "never closes circuits or connections because of IPsec.", ipsec_modes},
  {"IPsecVICISocket", CONF_TYPE_PATH, "PATH", IPSEC_DEFAULT_VICI_SOCKET,
   IPSEC_DEFAULT_VICI_SOCKET, 1, 0, 0, OFF(vici_socket),
   "The unix socket of charon's VICI plugin. pctor reconnects (with "
   "growing delays up to 30 seconds) whenever it goes away, and then "
   "loads its key and connections again. With User, the socket must "
   "stay usable by that user (scripts/pctor-charon --vici-group).", NULL},
  {"IPsecUpdown", CONF_TYPE_STRING, "COMMAND", NULL, "unset (none)",
   1, 0, 0, OFF(updown),
   "The updown command charon runs when one of pctor's CHILD_SAs comes "
   "up or goes down, e.g. \"/usr/lib/pctor/pctor-updown libipsec\" on "
   "hosts whose kernel has no ESP (ipsec-conf/README.md): there it "
   "routes the SA's TCP into the tunnel device, without which the "
   "traffic would not be protected.", NULL},
  {"IPsecMaxPeers", CONF_TYPE_INT, "NUM", "1024", "1024", 1, 1, 1000000,
   OFF(max_peers),
   "Relays pctor keeps IPsec state for (known to offer IPsec or not). "
   "Beyond it the least recently used relay without an SA is forgotten; "
   "if every one has an SA, further relays share connections.", NULL},
};
/* clang-format on */

const conf_module_t ipsec_conf_module = {
  "ipsec", ipsec_vars, sizeof(ipsec_vars) / sizeof(ipsec_vars[0]),
  sizeof(ipsec_options_t), NULL,
};
