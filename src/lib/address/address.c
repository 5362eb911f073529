/* SPDX-License-Identifier: BSD-3-Clause */
/* address.c -- IPv4/IPv6 addresses with ports (see address.h).
 *
 * Parsing uses inet_pton() for the address part (so only numeric,
 * canonical dotted-quad IPv4 and RFC 4291 IPv6 text is accepted; never
 * DNS) and a strict decimal parser for ports. IPv6 with a port must be
 * bracketed ("[::1]:9001"); a bare IPv6 address has no port. Formatting
 * uses inet_ntop(), which gives RFC 5952 compressed IPv6.
 * Classification follows the special-purpose registries (RFC 6890):
 * "private" means not globally reachable -- loopback, RFC 1918, CGNAT
 * 100.64/10, link-local, "this network" 0/8, multicast/reserved 224/3 and
 * their IPv6 counterparts (::, ::1, fc00::/7, fe80::/10, fec0::/10,
 * ff00::/8), plus IPv4-mapped forms of private IPv4 addresses.
 */
#include "lib/address/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lib/bytes/bytes.h"

/* Strict port: 1-5 decimal digits, value <= 65535. */
static int
parse_port(const char *s, uint16_t *out)
{
  unsigned v = 0;
  size_t n = 0;
  for (; s[n]; n++) {
    if (s[n] < '0' || s[n] > '9' || n >= 5)
      return -1;
    v = v * 10 + (unsigned)(s[n] - '0');
  }
  if (n == 0 || v > 65535)
    return -1;
  *out = (uint16_t)v;
  return 0;
}

int
pc_addr_parse_ip(pc_addr_t *out, const char *ip, uint16_t port)
{
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  if (strchr(ip, ':')) {
    if (inet_pton(AF_INET6, ip, a.addr) != 1)
      return -1;
    a.family = AF_INET6;
  } else {
    if (inet_pton(AF_INET, ip, a.addr) != 1)
      return -1;
    a.family = AF_INET;
  }
  a.port = port;
  *out = a;
  return 0;
}

int
pc_addr_parse_ip_bracketed(pc_addr_t *out, const char *ip, uint16_t port)
{
  char buf[INET6_ADDRSTRLEN + 1];
  size_t n = strlen(ip);
  if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') {
    if (n - 2 >= sizeof(buf))
      return -1;
    memcpy(buf, ip + 1, n - 2);
    buf[n - 2] = '\0';
    return pc_addr_parse_ip(out, buf, port);
  }
  return pc_addr_parse_ip(out, ip, port);
}

int
pc_addr_parse(pc_addr_t *out, const char *s)
{
  char ip[INET6_ADDRSTRLEN + 1];
  const char *port_s = NULL;
  size_t iplen;
  uint16_t port = 0;

  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close)
      return -1;
    iplen = (size_t)(close - s - 1);
    if (iplen == 0 || iplen >= sizeof(ip) || !memchr(s + 1, ':', iplen))
      return -1;
    memcpy(ip, s + 1, iplen);
    ip[iplen] = '\0';
    if (close[1] == ':')
      port_s = close + 2;
    else if (close[1] != '\0')
      return -1;
  } else {
    const char *colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':')) {
      /* Two or more colons: a bare IPv6 address, no port. */
      iplen = strlen(s);
    } else if (colon) {
      iplen = (size_t)(colon - s);
      port_s = colon + 1;
    } else {
      iplen = strlen(s);
    }
    if (iplen == 0 || iplen >= sizeof(ip))
      return -1;
    memcpy(ip, s, iplen);
    ip[iplen] = '\0';
  }
  if (port_s && parse_port(port_s, &port) < 0)
    return -1;
  return pc_addr_parse_ip(out, ip, port);
}

const char *
pc_addr_fmt(const pc_addr_t *a, char *out, size_t outlen, int with_port)
{
  char ip[INET6_ADDRSTRLEN];
  if (outlen == 0)
    return out;
  if (a->family == AF_INET) {
    inet_ntop(AF_INET, a->addr, ip, sizeof(ip));
    if (with_port)
      snprintf(out, outlen, "%s:%u", ip, (unsigned)a->port);
    else
      snprintf(out, outlen, "%s", ip);
  } else if (a->family == AF_INET6) {
    inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
    if (with_port)
      snprintf(out, outlen, "[%s]:%u", ip, (unsigned)a->port);
    else
      snprintf(out, outlen, "%s", ip);
  } else {
    snprintf(out, outlen, "<unset>");
  }
  return out;
}

void
pc_addr_from_ipv4(pc_addr_t *out, uint32_t ipv4_host_order, uint16_t port)
{
  memset(out, 0, sizeof(*out));
  out->family = AF_INET;
  set_u32(out->addr, ipv4_host_order);
  out->port = port;
}

uint32_t
pc_addr_ipv4_h(const pc_addr_t *a)
{
  return a->family == AF_INET ? get_u32(a->addr) : 0;
}

int
pc_addr_to_sockaddr(const pc_addr_t *a, struct sockaddr_storage *ss,
                    socklen_t *len)
{
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(a->port);
    memcpy(&sin->sin_addr, a->addr, 4);
    *len = sizeof(*sin);
    return 0;
  }
  if (a->family == AF_INET6) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(a->port);
    memcpy(&sin6->sin6_addr, a->addr, 16);
    *len = sizeof(*sin6);
    return 0;
  }
  *len = 0;
  return -1;
}

int
pc_addr_from_sockaddr(pc_addr_t *out, const struct sockaddr *sa,
                      socklen_t len)
{
  memset(out, 0, sizeof(*out));
  out->family = AF_UNSPEC;
  if (!sa || len < (socklen_t)sizeof(sa_family_t))
    return -1;
  if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
    out->family = AF_INET;
    memcpy(out->addr, &sin->sin_addr, 4);
    out->port = ntohs(sin->sin_port);
    return 0;
  }
  if (sa->sa_family == AF_INET6 &&
      len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
    out->family = AF_INET6;
    memcpy(out->addr, &sin6->sin6_addr, 16);
    out->port = ntohs(sin6->sin6_port);
    return 0;
  }
  return -1;
}

int
pc_addr_eq(const pc_addr_t *a, const pc_addr_t *b, int cmp_port)
{
  if (a->family != b->family)
    return 0;
  if (cmp_port && a->port != b->port)
    return 0;
  if (a->family == AF_INET)
    return memcmp(a->addr, b->addr, 4) == 0;
  if (a->family == AF_INET6)
    return memcmp(a->addr, b->addr, 16) == 0;
  return 1; /* both unset */
}

/* If a is IPv4-mapped IPv6 (::ffff:a.b.c.d), the IPv4 address in host
 * order through *v4 and 1; else 0. */
static int
v4_of(const pc_addr_t *a, uint32_t *v4)
{
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a->family == AF_INET) {
    *v4 = get_u32(a->addr);
    return 1;
  }
  if (a->family == AF_INET6 && !memcmp(a->addr, mapped, 12)) {
    *v4 = get_u32(a->addr + 12);
    return 1;
  }
  return 0;
}

int
pc_addr_is_loopback(const pc_addr_t *a)
{
  static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 1};
  uint32_t v4;
  if (v4_of(a, &v4))
    return (v4 >> 24) == 127;
  return a->family == AF_INET6 && !memcmp(a->addr, v6lo, 16);
}

int
pc_addr_is_private(const pc_addr_t *a)
{
  uint32_t v4;
  if (v4_of(a, &v4)) {
    return (v4 >> 24) == 0 ||                  /* 0/8 "this network" */
           (v4 >> 24) == 10 ||                 /* 10/8 */
           (v4 >> 24) == 127 ||                /* loopback */
           (v4 >> 22) == (100u << 2 | 1) ||    /* 100.64/10 CGNAT */
           (v4 >> 16) == (169u << 8 | 254) ||  /* 169.254/16 link-local */
           (v4 >> 20) == (172u << 4 | 1) ||    /* 172.16/12 */
           (v4 >> 16) == (192u << 8 | 168) ||  /* 192.168/16 */
           (v4 >> 29) == 7;                    /* 224/3 multicast, reserved */
  }
  if (a->family != AF_INET6)
    return 1; /* unset: certainly not a public address */
  const uint8_t *p = a->addr;
  if (pc_is_zero(p, 15) && (p[15] == 0 || p[15] == 1))
    return 1;                                  /* :: and ::1 */
  if ((p[0] & 0xfe) == 0xfc)                   /* fc00::/7 ULA */
    return 1;
  if (p[0] == 0xfe && (p[1] & 0xc0) == 0x80)   /* fe80::/10 link-local */
    return 1;
  if (p[0] == 0xfe && (p[1] & 0xc0) == 0xc0)   /* fec0::/10 site-local */
    return 1;
  if (p[0] == 0xff)                            /* multicast */
    return 1;
  return 0;
}
