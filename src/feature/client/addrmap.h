/* SPDX-License-Identifier: BSD-3-Clause */
/* addrmap.h -- the client's address map: SOCKS targets rewritten before a
 * stream leaves, as controllers ask with MAPADDRESS (control-spec 3.8).
 *
 * A mapping sends streams for one address (an IPv4 or IPv6 literal or a
 * hostname, compared without case) to another. Rules, as tor's:
 *   - "from=to" maps from to to, replacing an earlier mapping of from;
 *   - "from=from" removes the mapping of from;
 *   - a null from ("0.0.0.0", "::0" or ".") asks for a virtual address
 *     of that kind, unused so far: one in 127.192.0.0/10 (tor's default
 *     VirtualAddrNetworkIPv4), in fe80::/10 (VirtualAddrNetworkIPv6) or a
 *     random "<16 base32 letters>.virtual" name; a virtual address already
 *     mapped to the same target is given again.
 * Rewriting follows chains of mappings (a -> b -> c) up to
 * ADDRMAP_MAX_CHAIN steps, so a loop cannot hang the client.
 *
 * Bounded: at most ADDRMAP_MAX_ENTRIES mappings; further ones are
 * refused. Lookups are by a SHA-256 of the lower-cased address in a hash
 * map, so neither rewriting a stream nor finding a virtual address for a
 * target walks the map. Not thread-safe (the event loop's thread only).
 *
 * Not done (pctor(1) says so): wildcard mappings ("*.example.com"), the
 * torrc's MapAddress and AutomapHostsOnResolve, and expiring mappings
 * (every mapping lasts until removed or the client stops).
 */
#ifndef PCTOR_FEATURE_CLIENT_ADDRMAP_H
#define PCTOR_FEATURE_CLIENT_ADDRMAP_H
#include <stddef.h>

#define ADDRMAP_MAX_ENTRIES 65536
#define ADDRMAP_MAX_CHAIN 16
/* Longest address (a DNS name). */
#define ADDRMAP_MAX_ADDRESS 255

typedef struct addrmap_t addrmap_t;

addrmap_t *addrmap_new(void);
void addrmap_free_(addrmap_t *m);
#define addrmap_free(m)                                                       \
  do {                                                                        \
    addrmap_free_(m);                                                         \
    (m) = NULL;                                                               \
  } while (0)

/* MAPADDRESS from=to. Returns 0 with *from_out (newly allocated: the
 * address now mapped, the virtual one chosen for a null from), or with
 * *err_out (newly allocated) -1 for an invalid address (tor's wording:
 * "invalid address '...'") and -2 when the map is full.
 * Removing a mapping that does not exist is not an error. */
int addrmap_set(addrmap_t *m, const char *from, const char *to,
                char **from_out, char **err_out);
/* Rewrite addr (a NUL-terminated string in a buffer of len bytes) through
 * the map. Returns 1 if it was rewritten, 0 if not mapped, -1 if the
 * chain was too long or the result did not fit (addr is unchanged). */
int addrmap_rewrite(const addrmap_t *m, char *addr, size_t len);
/* Every mapping, in no particular order. */
void addrmap_foreach(const addrmap_t *m,
                     void (*fn)(const char *from, const char *to, void *arg),
                     void *arg);
size_t addrmap_size(const addrmap_t *m);
void addrmap_clear(addrmap_t *m);
/* 1 if s is an address a mapping may name: what SOCKS accepts as a target
 * (socks_hostname_is_valid(): IP literal, IPv6 maybe bracketed, or a
 * hostname whose labels do not start with '-' or '_'). */
int addrmap_address_ok(const char *s);
#endif
