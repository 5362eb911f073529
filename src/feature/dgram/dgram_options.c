/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_options.c -- declarations of the datagram link and circuit
 * transport options (see dgram_options.h): one table; the rules that a
 * datagram transport needs a DatagramPort, and dtls-tcp a build with lwIP,
 * are enforced in validate, so that selecting one fails at start-up (and
 * on SIGHUP) with a clear message instead of silently carrying circuits
 * over TLS. */
#include "feature/dgram/dgram_options.h"
#include "feature/dgram/dgram.h"
#include "lib/conf/confval.h"
#include "lib/malloc/alloc.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(dgram_options_t, f)

static const conf_enum_t transport_names[] = {
  {"tls", CIRCUIT_TRANSPORT_TLS},
  {"pctcp", CIRCUIT_TRANSPORT_PCTCP},
  {"dtls-tcp", CIRCUIT_TRANSPORT_DTLS_TCP},
  {"backtap", CIRCUIT_TRANSPORT_BACKTAP},
  {NULL, 0},
};

/* DatagramPort: "0" (off), "PORT" (0.0.0.0:PORT) or "ADDRESS:PORT". */
static int
port_assign(void *field, const char *value, void *arg,
            const conf_line_t *line, char **err_out)
{
  (void)arg;
  (void)line;
  return conf_parse_listen_port(value, "DatagramPort", field, err_out);
}

static void
port_format(const void *field, conf_strlist_t *out)
{
  conf_format_listen_port(field, out);
}

static const conf_custom_t port_type = {
  CONF_STORE_BLOB, sizeof(pc_addr_t), 0, port_assign, port_format, NULL};

/* clang-format off */
static const conf_var_t dgram_vars[] = {
  {"DatagramPort", CONF_TYPE_CUSTOM, "[ADDRESS:]PORT | 0", "0",
   "0 (no datagram links)", 0, 0, 0, OFF(port),
   "Relay: open a UDP socket on PORT (a port alone: 0.0.0.0:PORT; IPv6 "
   "addresses in brackets) for datagram links with other pctor relays: "
   "one DTLS 1.2 session per relay pair, with a cookie exchange against "
   "spoofed sources, both sides authenticated with their Tor identity "
   "keys. The port is announced to relays on their TLS links (tor relays "
   "ignore the announcement), and a link is opened to every relay that "
   "announced one on a TLS link this relay opened. A relay with a "
   "DatagramPort accepts circuit hops over BackTap (and, built with lwIP, "
   "over TCP-over-DTLS) from its peers; it extends its own that way with "
   "CircuitTransport backtap or dtls-tcp.",
   &port_type},
  {"CircuitTransport", CONF_TYPE_ENUM, "tls|pctcp|dtls-tcp|backtap", "tls",
   "tls", 1, 0, 0, OFF(transport),
   "Relay: how circuits this relay extends to other relays travel. tls: "
   "over the shared TLS connection to the next relay (as tor). pctcp: a "
   "TLS connection per circuit, as PerCircuitTCP 1. backtap (Tschorsch "
   "and Scheuermann 2016; needs a DatagramPort): a hop to a relay with an "
   "authenticated datagram link carries the circuit's cells as BackTap "
   "records over it (hop-by-hop reliability, a Vegas window per hop); "
   "hops to other relays, and to relays whose link is not up yet, use "
   "TLS; a notice says which. dtls-tcp (TCP-over-DTLS, Reardon and "
   "Goldberg 2009; needs a DatagramPort and a build with lwIP): the same, "
   "with each hop its own user-level TCP connection whose segments travel "
   "in the datagram link; a build without lwIP refuses it.",
   transport_names},
  {"DatagramLinkIdleTimeout", CONF_TYPE_INTERVAL, "NUM", "10 minutes",
   "10 minutes", 1, 30, 86400, OFF(idle_timeout),
   "Relay: a datagram link that carried no record of a transport in "
   "either direction for this long is closed (keepalives do not count).",
   NULL},
  {"DatagramMaxLinks", CONF_TYPE_INT, "NUM", "1024", "1024", 1, 1, 65536,
   OFF(max_links),
   "Relay: the most datagram links at once, in any state; new sessions "
   "beyond it are refused (counted), and at most 64 may be "
   "unauthenticated at any time.", NULL},
};
/* clang-format on */

static int
dgram_validate(void *obj, const unsigned char *set, char **err_out,
               const conf_var_t **bad_var)
{
  (void)set;
  const dgram_options_t *o = obj;
  circuit_transport_t t = (circuit_transport_t)o->transport;
  if (!circuit_transport_is_supported(t)) {
    *bad_var = &dgram_vars[1];
    *err_out = pc_asprintf("'%s' is not supported in this build: pctor was "
                           "built without a user-level TCP stack (lwIP; on "
                           "Debian: apt-get install liblwip-dev, then "
                           "configure and build again). Use tls, pctcp or "
                           "backtap",
                           circuit_transport_name(t));
    return -1;
  }
  if (t == CIRCUIT_TRANSPORT_BACKTAP && o->port.family == AF_UNSPEC) {
    *bad_var = &dgram_vars[1];
    *err_out = pc_strdup("CircuitTransport backtap needs a DatagramPort: "
                         "BackTap hops run over the datagram links");
    return -1;
  }
  if (t == CIRCUIT_TRANSPORT_DTLS_TCP && o->port.family == AF_UNSPEC) {
    *bad_var = &dgram_vars[1];
    *err_out = pc_strdup("CircuitTransport dtls-tcp needs a DatagramPort: "
                         "TCP-over-DTLS hops run over the datagram links");
    return -1;
  }
  return 0;
}

const conf_module_t dgram_conf_module = {
  "dgram", dgram_vars, sizeof(dgram_vars) / sizeof(dgram_vars[0]),
  sizeof(dgram_options_t), dgram_validate,
};
