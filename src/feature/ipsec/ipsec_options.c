/* SPDX-License-Identifier: BSD-3-Clause */
/* ipsec_options.c -- declarations of the IPsec options (see
 * ipsec_options.h): names, types, defaults and the man page's text in one
 * table. The rules that involve other modules' options (IPsec needs an
 * ORPort; PerCircuitTCPRequireIPsec needs IPsec) are the manager's. */
#include "feature/ipsec/ipsec_options.h"
#include "feature/ipsec/broker.h"

#include <pwd.h>
#include <stddef.h>

#include "lib/malloc/alloc.h"

#define OFF(f) offsetof(ipsec_options_t, f)

static const conf_enum_t ipsec_modes[] = {
  {"0", IPSEC_MODE_OFF}, {"auto", IPSEC_MODE_AUTO}, {"1", IPSEC_MODE_ON},
  {NULL, 0},
};

/* IPsecCharonUser: an existing user (its uid is looked up again when the
 * broker is configured). */
static int
check_charon_user(const char *v, char **err_out)
{
  if (!*v || conf_has_control_chars(v) || !getpwnam(v)) {
    *err_out = pc_asprintf("there is no user named '%s'", v);
    return -1;
  }
  return 0;
}

static const conf_custom_t charon_user_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, check_charon_user,
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
   "never closes circuits or connections because of IPsec. Where the "
   "kernel has neither XFRM nor PF_KEY (the Shadow simulator) it logs "
   "one line and stays off.", ipsec_modes},
  {"IPsecVICISocket", CONF_TYPE_PATH, "PATH", IPSEC_DEFAULT_VICI_SOCKET,
   IPSEC_DEFAULT_VICI_SOCKET, 1, 0, 0, OFF(vici_socket),
   "The unix socket of charon's VICI plugin. pctor reconnects (with "
   "growing delays up to 30 seconds) whenever it goes away, and then "
   "loads its key and connections again. With User, the socket must "
   "stay usable by that user (scripts/pctor-charon --vici-group).", NULL},
  {"IPsecUpdown", CONF_TYPE_STRING, "COMMAND", NULL, "unset (none)",
   1, 0, 0, OFF(updown),
   "Obsolete: accepted and ignored with a warning. pctor no longer "
   "names an updown command in what it loads into charon (charon would "
   "run it as root); the updown script is part of charon's set-up: "
   "scripts/pctor-charon runs ipsec-conf/pctor-updown for pctor's "
   "CHILD_SAs (doc/ipsec.md).", NULL},
  {"IPsecMaxPeers", CONF_TYPE_INT, "NUM", "1024", "1024", 1, 1, 1000000,
   OFF(max_peers),
   "Relays pctor keeps IPsec state for (known to offer IPsec or not). "
   "Beyond it the least recently used relay without an SA is forgotten; "
   "if every one has an SA, further relays share connections.", NULL},
  {"IPsecMaxPeersPerAddress", CONF_TYPE_INT, "NUM", "2", "2", 1, 1, 1000,
   OFF(max_peers_per_address),
   "Relay identities pctor keeps IPsec state for per IP address (tor's "
   "authorities list at most two relays per address). A further identity "
   "at that address replaces the least recently used one the consensus "
   "does not list there, or is ignored if all are listed.", NULL},
  {"IPsecCharonUser", CONF_TYPE_CUSTOM, "USERNAME", NULL,
   "unset (root only)", 1, 0, 0, OFF(charon_user),
   "Besides root, the user charon may run as. Before it sends anything "
   "(its IKE private key first), pctor checks who serves the VICI socket "
   "(SO_PEERCRED) and refuses a socket served by any other user.",
   &charon_user_type},
};
/* clang-format on */

const conf_module_t ipsec_conf_module = {
  "ipsec", ipsec_vars, sizeof(ipsec_vars) / sizeof(ipsec_vars[0]),
  sizeof(ipsec_options_t), NULL,
};
