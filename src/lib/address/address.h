/* SPDX-License-Identifier: BSD-3-Clause */
/* address.h -- IPv4/IPv6 addresses with ports: parsing, formatting,
 * conversion to and from sockaddr, classification (private, loopback). */
#ifndef PCTOR_LIB_ADDRESS_ADDRESS_H
#define PCTOR_LIB_ADDRESS_ADDRESS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct {
  int family; /* AF_INET, AF_INET6, or AF_UNSPEC when unset */
  uint8_t addr[16]; /* network order; IPv4 uses the first 4 bytes */
  uint16_t port;    /* host order */
} pc_addr_t;

#define PC_ADDR_STR_LEN 64 /* "[ffff:...:ffff]:65535" and a NUL fit */

/* Parse "1.2.3.4", "1.2.3.4:9001", "[::1]:9001", "::1" (port 0 if
 * absent). Returns 0 or -1. No DNS lookups. */
int pc_addr_parse(pc_addr_t *out, const char *s);
/* Parse "1.2.3.4" or "::1" with an explicit port. */
int pc_addr_parse_ip(pc_addr_t *out, const char *ip, uint16_t port);
/* The same, also taking the address in brackets ("[::1]"), as torrc
 * options without a port write an IPv6 one. */
int pc_addr_parse_ip_bracketed(pc_addr_t *out, const char *ip,
                               uint16_t port);
/* "1.2.3.4:9001" or "[::1]:9001" (without port if with_port is 0). */
const char *pc_addr_fmt(const pc_addr_t *a, char *out, size_t outlen,
                        int with_port);
void pc_addr_from_ipv4(pc_addr_t *out, uint32_t ipv4_host_order,
                       uint16_t port);
uint32_t pc_addr_ipv4_h(const pc_addr_t *a);
int pc_addr_to_sockaddr(const pc_addr_t *a, struct sockaddr_storage *ss,
                        socklen_t *len);
int pc_addr_from_sockaddr(pc_addr_t *out, const struct sockaddr *sa,
                          socklen_t len);
/* Same address (and port if cmp_port). */
int pc_addr_eq(const pc_addr_t *a, const pc_addr_t *b, int cmp_port);
int pc_addr_is_loopback(const pc_addr_t *a);
/* RFC 1918, loopback, link-local, ULA, unspecified... */
int pc_addr_is_private(const pc_addr_t *a);
#endif
