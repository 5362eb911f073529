/* SPDX-License-Identifier: BSD-3-Clause */
/* client_port.c -- SocksPort lines, the requests they allow, and stream
 * isolation (client_port.h explains the rules).
 *
 * Flags are read as tor reads them: case-insensitively, left to right (a
 * later flag overrides an earlier one), a "No" prefix turning a flag off,
 * and the isolation flags also in the plural (IsolateDestPorts). Flags
 * whose effect pctor's client cannot give (DNS caches, automapping, unix
 * sockets, onion services, extended SOCKS errors) are refused by name as
 * "not supported yet"; their "No" forms, which ask for what pctor does
 * anyway, are accepted.
 */
#include "feature/client/client_port.h"
#include "core/or/edge.h"
#include "core/proto/relay_msg.h"
#include "lib/malloc/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  unsigned iso;
} iso_flags[] = {
    {"IsolateClientAddr", CLIENT_ISO_CLIENTADDR},
    {"IsolateSOCKSAuth", CLIENT_ISO_SOCKSAUTH},
    {"IsolateClientProtocol", CLIENT_ISO_CLIENTPROTO},
    {"IsolateDestPort", CLIENT_ISO_DESTPORT},
    {"IsolateDestAddr", CLIENT_ISO_DESTADDR},
};

/* Flags that set (or, with "No", clear) a CLIENT_PORT_* bit; inverted:
 * the bit means the flag is off. */
static const struct {
  const char *name;
  unsigned flag;
  int inverted;
} port_flags[] = {
    {"IPv4Traffic", CLIENT_PORT_NO_IPV4, 1},
    {"IPv6Traffic", CLIENT_PORT_NO_IPV6, 1},
    {"PreferIPv6", CLIENT_PORT_NO_PREFER_IPV6, 1},
    {"DNSRequest", CLIENT_PORT_NO_DNS, 1},
    {"OnionTraffic", CLIENT_PORT_NO_ONION, 1},
    {"KeepAliveIsolateSOCKSAuth", CLIENT_PORT_KEEPALIVE_AUTH, 0},
    {"PreferSOCKSNoAuth", CLIENT_PORT_PREFER_NOAUTH, 0},
};

/* tor's flags pctor cannot honour, and why; their "No" forms (the
 * default) are fine unless no_ok is 0. */
static const struct {
  const char *name;
  const char *why;
  int no_ok;
} unsupported[] = {
    {"OnionTrafficOnly", "pctor's client does not reach onion services", 0},
    {"CacheIPv4DNS", "pctor's client keeps no DNS cache", 1},
    {"CacheIPv6DNS", "pctor's client keeps no DNS cache", 1},
    {"CacheDNS", "pctor's client keeps no DNS cache", 1},
    {"UseIPv4Cache", "pctor's client keeps no DNS cache", 1},
    {"UseIPv6Cache", "pctor's client keeps no DNS cache", 1},
    {"UseDNSCache", "pctor's client keeps no DNS cache", 1},
    {"PreferIPv6Automap",
     "pctor does not automap host names (AutomapHostsOnResolve)", 0},
    {"ExtendedErrors",
     "its error codes are about onion services, which pctor's client does "
     "not reach", 1},
    {"GroupWritable", "SocksPort unix: sockets are not supported", 0},
    {"WorldWritable", "SocksPort unix: sockets are not supported", 0},
    {"RelaxDirModeCheck", "SocksPort unix: sockets are not supported", 0},
};

/* The address part: PORT, auto, ADDRESS:PORT, ADDRESS:auto ([IPv6]). */
static int
parse_addr(const char *s, pc_addr_t *out, char **err_out)
{
  memset(out, 0, sizeof(*out));
  if (!strncasecmp(s, "unix:", 5)) {
    *err_out = pc_asprintf("SocksPort '%s': unix sockets are not supported "
                           "yet; give [ADDRESS:]PORT or auto", s);
    return -1;
  }
  if (!strcasecmp(s, "auto"))
    return pc_addr_parse_ip(out, "127.0.0.1", 0) == 0 ? 0 : -1;
  char *end = NULL;
  long port = strtol(s, &end, 10);
  if (*s >= '0' && *s <= '9' && !*end) {
    if (port < 1 || port > 65535) {
      *err_out = pc_asprintf("SocksPort '%s': the port must be 1 to 65535, "
                             "auto, or 0 for no SocksPort", s);
      return -1;
    }
    return pc_addr_parse_ip(out, "127.0.0.1", (uint16_t)port) == 0 ? 0 : -1;
  }
  const char *colon = strrchr(s, ':');
  if (colon && !strcasecmp(colon + 1, "auto")) {
    char host[PC_ADDR_STR_LEN];
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
      s++;
      hl -= 2;
    }
    if (hl > 0 && hl < sizeof(host)) {
      memcpy(host, s, hl);
      host[hl] = '\0';
      if (pc_addr_parse_ip(out, host, 0) == 0)
        return 0;
    }
  } else if (pc_addr_parse(out, s) == 0 && out->port != 0) {
    return 0;
  }
  *err_out = pc_asprintf("SocksPort '%s' is not PORT, ADDRESS:PORT, auto, "
                         "ADDRESS:auto or 0", s);
  return -1;
}

/* One flag word; 0 or -1 with *err_out. */
static int
parse_flag(const char *f, client_port_t *p, int *seen_group, char **err_out)
{
  if (!strncasecmp(f, "SessionGroup=", 13)) {
    const char *v = f + 13;
    char *end = NULL;
    long g = strtol(v, &end, 10);
    if (!*v || *end || *v == '-' || *v == '+' || g < 0 ||
        g > CLIENT_SESSION_GROUP_MAX) {
      *err_out = pc_asprintf("SocksPort flag '%s': SessionGroup needs a "
                             "number from 0 to %d",
                             f, CLIENT_SESSION_GROUP_MAX);
      return -1;
    }
    if (*seen_group) {
      *err_out = pc_asprintf("SocksPort has more than one SessionGroup "
                             "flag ('%s')", f);
      return -1;
    }
    *seen_group = 1;
    p->session_group = (int)g;
    return 0;
  }
  int no = !strncasecmp(f, "No", 2);
  const char *name = no ? f + 2 : f;
  for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
    if (!strcasecmp(name, unsupported[i].name)) {
      if (no && unsupported[i].no_ok)
        return 0; /* asks for what pctor does anyway */
      *err_out = pc_asprintf("SocksPort flag '%s' is not supported yet: %s",
                             f, unsupported[i].why);
      return -1;
    }
  for (size_t i = 0; i < sizeof(port_flags) / sizeof(port_flags[0]); i++)
    if (!strcasecmp(name, port_flags[i].name)) {
      if (no != port_flags[i].inverted)
        p->flags &= ~port_flags[i].flag;
      else
        p->flags |= port_flags[i].flag;
      return 0;
    }
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof(iso_flags) / sizeof(iso_flags[0]); i++) {
    size_t k = strlen(iso_flags[i].name);
    /* tor also takes the plural ("IsolateDestPorts"). */
    if (!strncasecmp(name, iso_flags[i].name, k) &&
        (n == k || (n == k + 1 && (name[k] == 's' || name[k] == 'S')))) {
      if (no)
        p->iso &= ~iso_flags[i].iso;
      else
        p->iso |= iso_flags[i].iso;
      return 0;
    }
  }
  *err_out = pc_asprintf(
      "unknown SocksPort flag '%s' (pctor knows tor's IsolateClientAddr, "
      "IsolateSOCKSAuth, IsolateClientProtocol, IsolateDestPort, "
      "IsolateDestAddr, SessionGroup=N, KeepAliveIsolateSOCKSAuth, "
      "PreferSOCKSNoAuth, NoIPv4Traffic, NoIPv6Traffic, NoPreferIPv6, "
      "NoDNSRequest and NoOnionTraffic; No in front turns a flag off)",
      f);
  return -1;
}

int
client_port_parse(const char *value, client_port_t *out, char **err_out)
{
  memset(out, 0, sizeof(*out));
  out->iso = CLIENT_ISO_DEFAULT;
  out->session_group = CLIENT_SESSION_GROUP_UNSET;
  char *copy = pc_strdup(value);
  char *save = NULL;
  char *first = strtok_r(copy, " \t", &save);
  int r = 0;
  if (!first) {
    *err_out = pc_strdup("SocksPort needs a value: [ADDRESS:]PORT, auto "
                         "or 0");
    r = -1;
  } else if (!strcmp(first, "0")) {
    r = strtok_r(NULL, " \t", &save) ? -1 : 1;
    if (r < 0)
      *err_out = pc_strdup("SocksPort 0 (no SocksPort) takes no flags");
  } else if (parse_addr(first, &out->addr, err_out) < 0) {
    r = -1;
  } else {
    int seen_group = 0;
    for (char *f = strtok_r(NULL, " \t", &save); f && r == 0;
         f = strtok_r(NULL, " \t", &save))
      r = parse_flag(f, out, &seen_group, err_out);
    if (r == 0 && (out->flags & CLIENT_PORT_NO_IPV4) &&
        (out->flags & CLIENT_PORT_NO_IPV6)) {
      /* tor allows it only for onion services, which pctor lacks. */
      *err_out = pc_asprintf("SocksPort '%s': NoIPv4Traffic and "
                             "NoIPv6Traffic together leave no address "
                             "pctor's client can reach", first);
      r = -1;
    }
  }
  free(copy);
  return r;
}

void
client_port_format(const client_port_t *p, char *buf, size_t len)
{
  char a[PC_ADDR_STR_LEN + 8], h[PC_ADDR_STR_LEN];
  if (p->addr.port) {
    pc_addr_fmt(&p->addr, a, sizeof(a), 1);
  } else {
    pc_addr_fmt(&p->addr, h, sizeof(h), 0);
    if (p->addr.family == AF_INET6)
      snprintf(a, sizeof(a), "[%s]:auto", h);
    else
      snprintf(a, sizeof(a), "%s:auto", h);
  }
  size_t n = (size_t)snprintf(buf, len, "%s", a);
#define ADD(...)                                                              \
  do {                                                                        \
    if (n < len)                                                              \
      n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__);                   \
  } while (0)
  for (size_t i = 0; i < sizeof(iso_flags) / sizeof(iso_flags[0]); i++) {
    int on = (p->iso & iso_flags[i].iso) != 0;
    int dflt = (CLIENT_ISO_DEFAULT & iso_flags[i].iso) != 0;
    if (on != dflt)
      ADD(" %s%s", on ? "" : "No", iso_flags[i].name);
  }
  if (p->session_group >= 0)
    ADD(" SessionGroup=%d", p->session_group);
  for (size_t i = 0; i < sizeof(port_flags) / sizeof(port_flags[0]); i++)
    if (p->flags & port_flags[i].flag)
      ADD(" %s%s", port_flags[i].inverted ? "No" : "", port_flags[i].name);
#undef ADD
}

void
client_iso_from_request(client_iso_t *out, const socks_request_t *req,
                        const pc_addr_t *client, unsigned iso, int group)
{
  memset(out, 0, sizeof(*out));
  out->fields = iso | CLIENT_ISO_SESSIONGRP;
  out->session_group = group;
  if (client) {
    out->client_addr = *client;
    out->client_addr.port = 0;
  } else {
    out->client_addr.family = AF_UNSPEC;
  }
  out->proto = req->version;
  out->dest_port = req->port;
  snprintf(out->dest_addr, sizeof(out->dest_addr), "%s", req->address);
  out->username_len = req->username_len;
  out->password_len = req->password_len;
  memcpy(out->username, req->username, req->username_len);
  memcpy(out->password, req->password, req->password_len);
}

unsigned
client_iso_differs(const client_iso_t *a, const client_iso_t *b)
{
  unsigned d = 0;
  if (a->session_group != b->session_group)
    d |= CLIENT_ISO_SESSIONGRP;
  if (a->client_addr.family != b->client_addr.family ||
      (a->client_addr.family != AF_UNSPEC &&
       !pc_addr_eq(&a->client_addr, &b->client_addr, 0)))
    d |= CLIENT_ISO_CLIENTADDR;
  if (a->proto != b->proto)
    d |= CLIENT_ISO_CLIENTPROTO;
  if (a->dest_port != b->dest_port)
    d |= CLIENT_ISO_DESTPORT;
  if (strcasecmp(a->dest_addr, b->dest_addr))
    d |= CLIENT_ISO_DESTADDR;
  /* The bytes only, as tor: a SOCKS4 user id is a username, and empty
   * credentials are none. */
  if (a->username_len != b->username_len ||
      a->password_len != b->password_len ||
      memcmp(a->username, b->username, a->username_len) ||
      memcmp(a->password, b->password, a->password_len))
    d |= CLIENT_ISO_SOCKSAUTH;
  return d;
}

int
client_iso_compatible(const client_circ_iso_t *c, const client_iso_t *s)
{
  if (!c->set)
    return 1;
  unsigned need = s->fields | c->fields;
  if (c->mixed & need)
    return 0;
  return (client_iso_differs(&c->v, s) & need) == 0;
}

void
client_iso_add(client_circ_iso_t *c, const client_iso_t *s)
{
  if (!c->set) {
    c->v = *s;
    c->set = 1;
    c->fields = s->fields;
    c->mixed = 0;
    return;
  }
  c->mixed |= client_iso_differs(&c->v, s);
  c->fields |= s->fields;
}

/* Does a host name end in ".onion" (one trailing dot allowed)? */
static int
is_onion(const char *a)
{
  size_t n = strlen(a);
  if (n && a[n - 1] == '.')
    n--;
  return n >= 6 && !strncasecmp(a + n - 6, ".onion", 6);
}

int
client_port_check_request(unsigned flags, const socks_request_t *req,
                          const char **why)
{
  pc_addr_t a;
  int literal = pc_addr_parse_ip(&a, req->address, 0) == 0;
  if ((flags & CLIENT_PORT_NO_ONION) && is_onion(req->address)) {
    *why = "an onion address on a port with NoOnionTraffic";
    return END_STREAM_REASON_EXITPOLICY;
  }
  if ((flags & CLIENT_PORT_NO_DNS) &&
      (req->command != SOCKS_CMD_CONNECT || !literal)) {
    *why = "a name lookup on a port with NoDNSRequest";
    return END_STREAM_REASON_EXITPOLICY;
  }
  if (req->command != SOCKS_CMD_CONNECT || !literal)
    return -1;
  if (a.family == AF_INET && (flags & CLIENT_PORT_NO_IPV4)) {
    *why = "an IPv4 address on a port with NoIPv4Traffic";
    return END_STREAM_REASON_EXITPOLICY;
  }
  if (a.family == AF_INET6 && (flags & CLIENT_PORT_NO_IPV6)) {
    *why = "an IPv6 address on a port with NoIPv6Traffic";
    return END_STREAM_REASON_EXITPOLICY;
  }
  return -1;
}

uint32_t
client_port_begin_flags(unsigned flags, int version)
{
  uint32_t f = 0;
  if (!(flags & CLIENT_PORT_NO_IPV6) && version == 5)
    f |= RELAY_BEGIN_FLAG_IPV6_OK;
  if (flags & CLIENT_PORT_NO_IPV4)
    f |= RELAY_BEGIN_FLAG_IPV4_NOT_OK;
  if (!(flags & CLIENT_PORT_NO_PREFER_IPV6) && (f & RELAY_BEGIN_FLAG_IPV6_OK))
    f |= RELAY_BEGIN_FLAG_IPV6_PREFERRED;
  return f;
}
