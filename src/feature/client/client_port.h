/* SPDX-License-Identifier: BSD-3-Clause */
/* client_port.h -- SocksPort lines and stream isolation: what a SocksPort
 * line says (address or auto, tor's flags), what a request on such a port
 * may ask for, and whether two streams may share a circuit.
 *
 * Isolation as tor's (proposal 171): each stream carries the values of the
 * isolation fields (client address, SOCKS credentials, SOCKS version,
 * destination port and address, session group) and the set of fields its
 * port isolates on. A circuit takes the values of its first stream and
 * remembers the union of its streams' isolation fields and which fields
 * already hold different values ("mixed"). A new stream may join only when
 * no field in its own set or the circuit's union differs from the
 * circuit's values or is mixed, so that two streams that differ in a field
 * either of them isolates on never share a circuit. The session group is
 * always compared: each SocksPort line has its own unless SessionGroup=N
 * puts several in one. NEWNYM is handled by the pool (retired circuits).
 * Pure logic over plain structs, so the unit tests drive it directly.
 */
#ifndef PCTOR_FEATURE_CLIENT_CLIENT_PORT_H
#define PCTOR_FEATURE_CLIENT_CLIENT_PORT_H
#include <stddef.h>
#include <stdint.h>
#include "feature/client/socks_proto.h"
#include "lib/address/address.h"

/* Isolation fields (tor's names). */
#define CLIENT_ISO_CLIENTADDR 0x01  /* IsolateClientAddr (default on) */
#define CLIENT_ISO_SOCKSAUTH 0x02   /* IsolateSOCKSAuth (default on) */
#define CLIENT_ISO_CLIENTPROTO 0x04 /* IsolateClientProtocol: SOCKS 4/5 */
#define CLIENT_ISO_DESTPORT 0x08    /* IsolateDestPort */
#define CLIENT_ISO_DESTADDR 0x10    /* IsolateDestAddr */
#define CLIENT_ISO_SESSIONGRP 0x20  /* always: the port's session group */
#define CLIENT_ISO_DEFAULT                                                    \
  (CLIENT_ISO_CLIENTADDR | CLIENT_ISO_SOCKSAUTH | CLIENT_ISO_SESSIONGRP)

/* Other flags of a SocksPort line. */
#define CLIENT_PORT_NO_IPV4 0x01        /* NoIPv4Traffic */
#define CLIENT_PORT_NO_IPV6 0x02       /* NoIPv6Traffic */
#define CLIENT_PORT_NO_PREFER_IPV6 0x04 /* NoPreferIPv6 */
#define CLIENT_PORT_NO_DNS 0x08         /* NoDNSRequest */
#define CLIENT_PORT_NO_ONION 0x10       /* NoOnionTraffic */
#define CLIENT_PORT_KEEPALIVE_AUTH 0x20 /* KeepAliveIsolateSOCKSAuth */
#define CLIENT_PORT_PREFER_NOAUTH 0x40  /* PreferSOCKSNoAuth */

/* Session groups SessionGroup=N may give (N in 0..CLIENT_SESSION_GROUP_MAX);
 * a port without one gets a negative group of its own. */
#define CLIENT_SESSION_GROUP_MAX 1000000000
#define CLIENT_SESSION_GROUP_UNSET (-1)

typedef struct client_port_t {
  pc_addr_t addr;    /* port 0: auto (the kernel picks one) */
  unsigned iso;      /* CLIENT_ISO_* */
  int session_group; /* SessionGroup=N, or CLIENT_SESSION_GROUP_UNSET */
  unsigned flags;    /* CLIENT_PORT_* */
} client_port_t;

#define CLIENT_MAX_SOCKS_PORTS 16
typedef struct client_ports_t {
  int n;
  client_port_t port[CLIENT_MAX_SOCKS_PORTS];
} client_ports_t;

/* Parse one SocksPort value: "0" (returns 1: no port), "PORT" or "auto"
 * (on 127.0.0.1), "ADDRESS:PORT" or "ADDRESS:auto", then flags (tor's
 * names, case-insensitive, left to right, the last one winning). Returns
 * 0 with *out, 1 for "0", or -1 with *err_out (newly allocated) naming
 * the bad part; flags pctor cannot honour are refused as "not supported
 * yet" by name. */
int client_port_parse(const char *value, client_port_t *out, char **err_out);
/* The line as a torrc would give it (address, then the flags that differ
 * from the defaults), into buf. */
void client_port_format(const client_port_t *p, char *buf, size_t len);

/* The isolation values of one stream. */
typedef struct client_iso_t {
  unsigned fields;        /* CLIENT_ISO_* the stream isolates on */
  int session_group;
  pc_addr_t client_addr;  /* compared without the port; AF_UNSPEC: none */
  uint8_t proto;          /* SOCKS version (4, 5); 0: not SOCKS */
  uint16_t dest_port;
  char dest_addr[SOCKS_MAX_HOSTNAME + 1]; /* compared case-insensitively */
  uint16_t username_len, password_len;
  uint8_t username[SOCKS4_MAX_USERID + 1];
  uint8_t password[SOCKS_MAX_PASSWORD + 1];
} client_iso_t;

/* A circuit's isolation state; all zero: clean (no stream yet). */
typedef struct client_circ_iso_t {
  int set;             /* values taken from a first stream */
  unsigned fields;     /* union of its streams' fields */
  unsigned mixed;      /* fields whose values differed among its streams */
  client_iso_t v;      /* its first stream's values */
} client_circ_iso_t;

/* The values of a stream with request req from client (NULL: none) on a
 * port with fields iso and session group group. */
void client_iso_from_request(client_iso_t *out, const socks_request_t *req,
                             const pc_addr_t *client, unsigned iso,
                             int group);
/* The CLIENT_ISO_* fields whose values differ between a and b. */
unsigned client_iso_differs(const client_iso_t *a, const client_iso_t *b);
/* May stream s join a circuit whose isolation state is c? */
int client_iso_compatible(const client_circ_iso_t *c, const client_iso_t *s);
/* Stream s joined the circuit: update c. */
void client_iso_add(client_circ_iso_t *c, const client_iso_t *s);

/* May a request req (after MAPADDRESS) be carried for a port with flags
 * (CLIENT_PORT_*)? Returns -1 if so, else the RELAY_END reason to fail it
 * with, and *why says which flag refused it. */
int client_port_check_request(unsigned flags, const socks_request_t *req,
                              const char **why);
/* The BEGIN flags (tor-spec 6.2, RELAY_BEGIN_FLAG_*) for a stream of SOCKS
 * version `version` on a port with flags. */
uint32_t client_port_begin_flags(unsigned flags, int version);
#endif
