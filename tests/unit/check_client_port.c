/* SPDX-License-Identifier: BSD-3-Clause */
/* check_client_port.c -- SocksPort lines and stream isolation
 * (feature/client/client_port.c): flag parsing as tor reads them (case,
 * "No" prefixes, plurals, last flag wins, SessionGroup, the flags refused
 * by name), the isolation decision (streams that differ in a field either
 * isolates on never share a circuit; mixed circuits), the requests a port's
 * flags refuse, the BEGIN flags, and a client opening two auto ports that
 * it reports (client_socks_listeners).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/or/edge.h"
#include "core/proto/relay_msg.h"
#include "feature/client/client.h"
#include "feature/client/client_port.h"
#include "lib/evloop/evloop.h"

Suite *suite_client_port(void);

static client_port_t
parse_ok(const char *v)
{
  client_port_t p;
  char *err = NULL;
  int r = client_port_parse(v, &p, &err);
  ck_assert_msg(r == 0, "'%s': %s", v, err ? err : "?");
  return p;
}

static void
parse_bad(const char *v, const char *want)
{
  client_port_t p;
  char *err = NULL;
  ck_assert_int_eq(client_port_parse(v, &p, &err), -1);
  ck_assert_ptr_nonnull(err);
  ck_assert_msg(strstr(err, want), "'%s': got '%s', want '%s'", v, err,
                want);
  free(err);
}

START_TEST(test_parse_addresses)
{
  client_port_t p = parse_ok("9050");
  ck_assert_int_eq(p.addr.family, AF_INET);
  ck_assert_uint_eq(pc_addr_ipv4_h(&p.addr), 0x7f000001);
  ck_assert_uint_eq(p.addr.port, 9050);
  ck_assert_uint_eq(p.iso, CLIENT_ISO_DEFAULT);
  ck_assert_int_eq(p.session_group, CLIENT_SESSION_GROUP_UNSET);
  ck_assert_uint_eq(p.flags, 0);
  p = parse_ok("auto");
  ck_assert_uint_eq(pc_addr_ipv4_h(&p.addr), 0x7f000001);
  ck_assert_uint_eq(p.addr.port, 0);
  p = parse_ok("AUTO");
  ck_assert_uint_eq(p.addr.port, 0);
  p = parse_ok("127.0.0.3:auto");
  ck_assert_uint_eq(pc_addr_ipv4_h(&p.addr), 0x7f000003);
  ck_assert_uint_eq(p.addr.port, 0);
  p = parse_ok("[::1]:auto");
  ck_assert_int_eq(p.addr.family, AF_INET6);
  ck_assert_uint_eq(p.addr.port, 0);
  p = parse_ok("[::1]:9150");
  ck_assert_int_eq(p.addr.family, AF_INET6);
  ck_assert_uint_eq(p.addr.port, 9150);
  p = parse_ok("10.1.2.3:9150");
  ck_assert_uint_eq(pc_addr_ipv4_h(&p.addr), 0x0a010203);

  char *err = NULL;
  ck_assert_int_eq(client_port_parse("0", &p, &err), 1);
  parse_bad("0 IsolateDestPort", "takes no flags");
  parse_bad("65536", "the port must be 1 to 65535");
  parse_bad("-1", "is not PORT, ADDRESS:PORT, auto");
  parse_bad("127.0.0.1:0", "is not PORT, ADDRESS:PORT, auto");
  parse_bad("host.example:9050", "is not PORT");
  parse_bad("nine", "is not PORT");
  parse_bad("[::1:auto", "is not PORT");
  parse_bad("unix:/run/tor/socks", "unix sockets are not supported yet");
  parse_bad("", "needs a value");
}
END_TEST

START_TEST(test_parse_flags)
{
  client_port_t p = parse_ok("9050 IsolateDestPort IsolateDestAddr "
                             "IsolateClientProtocol NoIsolateClientAddr "
                             "NoIsolateSOCKSAuth");
  ck_assert_uint_eq(p.iso, CLIENT_ISO_DESTPORT | CLIENT_ISO_DESTADDR |
                               CLIENT_ISO_CLIENTPROTO | CLIENT_ISO_SESSIONGRP);
  /* Case, plurals, and the last flag winning. */
  p = parse_ok("9050 isolatedestports noisolatedestport ISOLATEDESTADDRS");
  ck_assert_uint_eq(p.iso, CLIENT_ISO_DEFAULT | CLIENT_ISO_DESTADDR);
  p = parse_ok("9050 SessionGroup=7");
  ck_assert_int_eq(p.session_group, 7);
  p = parse_ok("9050 sessiongroup=0");
  ck_assert_int_eq(p.session_group, 0);
  p = parse_ok("9050 NoIPv4Traffic NoPreferIPv6 NoDNSRequest "
               "NoOnionTraffic KeepAliveIsolateSOCKSAuth PreferSOCKSNoAuth");
  ck_assert_uint_eq(p.flags, CLIENT_PORT_NO_IPV4 |
                                 CLIENT_PORT_NO_PREFER_IPV6 |
                                 CLIENT_PORT_NO_DNS |
                                 CLIENT_PORT_NO_ONION |
                                 CLIENT_PORT_KEEPALIVE_AUTH |
                                 CLIENT_PORT_PREFER_NOAUTH);
  p = parse_ok("9050 NoIPv4Traffic IPv4Traffic NoIPv6Traffic IPv6Traffic "
               "NoPreferIPv6 PreferIPv6 NoDNSRequest DNSRequest");
  ck_assert_uint_eq(p.flags, 0);
  /* The "No" forms of the cache flags ask for what pctor does. */
  p = parse_ok("9050 NoCacheDNS NoUseDNSCache NoCacheIPv4DNS NoExtendedErrors");
  ck_assert_uint_eq(p.flags, 0);

  parse_bad("9050 NoIPv4Traffic NoIPv6Traffic", "leave no address");
  parse_bad("9050 SessionGroup=", "SessionGroup needs a number");
  parse_bad("9050 SessionGroup=-2", "SessionGroup needs a number");
  parse_bad("9050 SessionGroup=x", "SessionGroup needs a number");
  parse_bad("9050 SessionGroup=1 SessionGroup=2", "more than one SessionGroup");
  parse_bad("9050 CacheDNS", "'CacheDNS' is not supported yet");
  parse_bad("9050 UseIPv4Cache", "'UseIPv4Cache' is not supported yet");
  parse_bad("9050 OnionTrafficOnly", "'OnionTrafficOnly' is not supported "
                                     "yet: pctor's client does not reach "
                                     "onion services");
  parse_bad("9050 NoPreferIPv6Automap", "'NoPreferIPv6Automap' is not "
                                        "supported yet");
  parse_bad("9050 ExtendedErrors", "'ExtendedErrors' is not supported yet");
  parse_bad("9050 WorldWritable", "unix: sockets are not supported");
  parse_bad("9050 NoListen", "unknown SocksPort flag 'NoListen'");
  parse_bad("9050 IsolateDestPortss", "unknown SocksPort flag");
  parse_bad("9050 Isolate", "unknown SocksPort flag");
}
END_TEST

START_TEST(test_format)
{
  char buf[512];
  client_port_t p = parse_ok("9050");
  client_port_format(&p, buf, sizeof(buf));
  ck_assert_str_eq(buf, "127.0.0.1:9050");
  p = parse_ok("127.0.0.2:auto NoIsolateSOCKSAuth IsolateDestPort "
               "SessionGroup=4 NoIPv6Traffic NoDNSRequest");
  client_port_format(&p, buf, sizeof(buf));
  ck_assert_str_eq(buf, "127.0.0.2:auto NoIsolateSOCKSAuth IsolateDestPort "
                        "SessionGroup=4 NoIPv6Traffic NoDNSRequest");
  /* It parses back to the same port. */
  client_port_t q = parse_ok(buf);
  ck_assert_int_eq(memcmp(&p, &q, sizeof(p)), 0);
  p = parse_ok("[::1]:auto");
  client_port_format(&p, buf, sizeof(buf));
  ck_assert_str_eq(buf, "[::1]:auto");
}
END_TEST

/* A CONNECT request to addr:port with credentials user (NULL: none). */
static socks_request_t
req(const char *addr, uint16_t port, const char *user, int version)
{
  socks_request_t r;
  memset(&r, 0, sizeof(r));
  r.version = (uint8_t)version;
  r.command = SOCKS_CMD_CONNECT;
  r.port = port;
  snprintf(r.address, sizeof(r.address), "%s", addr);
  if (user) {
    r.auth = SOCKS_AUTH_USERPASS;
    r.username_len = (uint16_t)strlen(user);
    memcpy(r.username, user, r.username_len);
    r.password_len = 1;
    r.password[0] = 'x';
  }
  return r;
}

static client_iso_t
iso_of(const socks_request_t *r, const char *client, unsigned iso, int group)
{
  client_iso_t s;
  pc_addr_t c;
  ck_assert_int_eq(pc_addr_parse_ip(&c, client, 5555), 0);
  client_iso_from_request(&s, r, &c, iso, group);
  return s;
}

/* Would b share a circuit that a alone has taken? */
static int
shares(const client_iso_t *a, const client_iso_t *b)
{
  client_circ_iso_t c;
  memset(&c, 0, sizeof(c));
  ck_assert_int_eq(client_iso_compatible(&c, a), 1); /* clean: anyone */
  client_iso_add(&c, a);
  return client_iso_compatible(&c, b);
}

START_TEST(test_isolation)
{
  const unsigned D = CLIENT_ISO_DEFAULT;
  socks_request_t alice = req("web.example", 80, "alice", 5);
  socks_request_t alice443 = req("web.example", 443, "alice", 5);
  socks_request_t bob = req("web.example", 80, "bob", 5);
  socks_request_t none = req("web.example", 80, NULL, 5);
  socks_request_t other = req("WEB.example", 80, "alice", 5);
  socks_request_t far = req("other.example", 80, "alice", 5);
  socks_request_t s4 = req("web.example", 80, "alice", 4);

  client_iso_t a = iso_of(&alice, "127.0.0.1", D, -2);
  /* Same credentials, port, client: one circuit. */
  client_iso_t a2 = iso_of(&alice443, "127.0.0.1", D, -2);
  ck_assert_int_eq(shares(&a, &a2), 1);
  /* Different SOCKS username, or none: never (IsolateSOCKSAuth). */
  client_iso_t b = iso_of(&bob, "127.0.0.1", D, -2);
  ck_assert_int_eq(shares(&a, &b), 0);
  ck_assert_int_eq(shares(&b, &a), 0);
  client_iso_t n = iso_of(&none, "127.0.0.1", D, -2);
  ck_assert_int_eq(shares(&a, &n), 0);
  /* Empty credentials are none; a SOCKS4 user id is a username (tor). */
  socks_request_t empty = none;
  empty.auth = SOCKS_AUTH_USERPASS;
  client_iso_t e = iso_of(&empty, "127.0.0.1", D, -2);
  ck_assert_int_eq(shares(&n, &e), 1);
  socks_request_t s4id = req("web.example", 80, "alice", 4);
  s4id.auth = SOCKS_AUTH_SOCKS4_USERID;
  s4id.password_len = 0;
  socks_request_t alice_nopw = alice;
  alice_nopw.password_len = 0;
  client_iso_t a4 = iso_of(&s4id, "127.0.0.1", D, -2);
  client_iso_t a5 = iso_of(&alice_nopw, "127.0.0.1", D, -2);
  ck_assert_int_eq(shares(&a5, &a4), 1);
  ck_assert_int_eq(shares(&a, &a4), 0); /* the password differs */
  /* NoIsolateSOCKSAuth on both: they may share. */
  unsigned noauth = D & ~(unsigned)CLIENT_ISO_SOCKSAUTH;
  client_iso_t a_na = iso_of(&alice, "127.0.0.1", noauth, -2);
  client_iso_t b_na = iso_of(&bob, "127.0.0.1", noauth, -2);
  ck_assert_int_eq(shares(&a_na, &b_na), 1);
  /* ... but not when one of them isolates on it (either order). */
  ck_assert_int_eq(shares(&a_na, &b), 0);
  ck_assert_int_eq(shares(&b, &a_na), 0);
  /* IsolateClientAddr (default): another client address, same port. */
  client_iso_t a_other = iso_of(&alice, "127.0.0.9", D, -2);
  ck_assert_int_eq(shares(&a, &a_other), 0);
  client_iso_t a_other_nc = iso_of(&alice, "127.0.0.9",
                                   D & ~(unsigned)CLIENT_ISO_CLIENTADDR, -2);
  client_iso_t a_nc = iso_of(&alice, "127.0.0.1",
                             D & ~(unsigned)CLIENT_ISO_CLIENTADDR, -2);
  ck_assert_int_eq(shares(&a_nc, &a_other_nc), 1);
  /* The client's source port never matters. */
  client_iso_t a_port;
  pc_addr_t c;
  pc_addr_parse_ip(&c, "127.0.0.1", 6666);
  client_iso_from_request(&a_port, &alice, &c, D, -2);
  ck_assert_int_eq(shares(&a, &a_port), 1);
  /* IsolateDestPort, IsolateDestAddr (case-insensitive). */
  unsigned dport = D | CLIENT_ISO_DESTPORT, daddr = D | CLIENT_ISO_DESTADDR;
  client_iso_t p80 = iso_of(&alice, "127.0.0.1", dport, -2);
  client_iso_t p443 = iso_of(&alice443, "127.0.0.1", dport, -2);
  ck_assert_int_eq(shares(&p80, &p443), 0);
  ck_assert_int_eq(shares(&a, &p443), 0); /* p443 isolates: not with a */
  client_iso_t d1 = iso_of(&alice, "127.0.0.1", daddr, -2);
  client_iso_t d2 = iso_of(&other, "127.0.0.1", daddr, -2);
  client_iso_t d3 = iso_of(&far, "127.0.0.1", daddr, -2);
  ck_assert_int_eq(shares(&d1, &d2), 1);
  ck_assert_int_eq(shares(&d1, &d3), 0);
  ck_assert_int_eq(shares(&a, &d3), 0);
  /* IsolateClientProtocol: SOCKS4 and SOCKS5 apart. */
  unsigned proto = D | CLIENT_ISO_CLIENTPROTO;
  client_iso_t v5 = iso_of(&alice, "127.0.0.1", proto, -2);
  client_iso_t v4 = iso_of(&s4, "127.0.0.1", proto, -2);
  ck_assert_int_eq(shares(&v5, &v4), 0);
  /* Session groups: other SocksPort lines never share, one SessionGroup
   * does. */
  client_iso_t g2 = iso_of(&alice, "127.0.0.1", D, -3);
  ck_assert_int_eq(shares(&a, &g2), 0);
  client_iso_t s7a = iso_of(&alice, "127.0.0.1", D, 7);
  client_iso_t s7b = iso_of(&alice443, "127.0.0.1", D, 7);
  ck_assert_int_eq(shares(&s7a, &s7b), 1);
  /* A controller's lookup (no client address) is apart from SOCKS. */
  client_iso_t ctl;
  client_iso_from_request(&ctl, &alice, NULL, D, -2);
  ck_assert_int_eq(shares(&a, &ctl), 0);
}
END_TEST

START_TEST(test_isolation_mixed)
{
  /* Streams to ports 80 and 443 without IsolateDestPort share a circuit;
   * a stream that isolates on the destination port then cannot join it,
   * whatever its port. */
  socks_request_t r80 = req("web.example", 80, NULL, 5);
  socks_request_t r443 = req("web.example", 443, NULL, 5);
  client_iso_t s80 = iso_of(&r80, "127.0.0.1", CLIENT_ISO_DEFAULT, 1);
  client_iso_t s443 = iso_of(&r443, "127.0.0.1", CLIENT_ISO_DEFAULT, 1);
  client_iso_t iso80 = iso_of(&r80, "127.0.0.1",
                              CLIENT_ISO_DEFAULT | CLIENT_ISO_DESTPORT, 1);
  client_circ_iso_t c;
  memset(&c, 0, sizeof(c));
  client_iso_add(&c, &s80);
  ck_assert_int_eq(client_iso_compatible(&c, &iso80), 1);
  ck_assert_int_eq(client_iso_compatible(&c, &s443), 1);
  client_iso_add(&c, &s443);
  ck_assert_uint_eq(c.mixed, CLIENT_ISO_DESTPORT);
  ck_assert_int_eq(client_iso_compatible(&c, &iso80), 0);
  ck_assert_int_eq(client_iso_compatible(&c, &s80), 1);
  /* Once a stream that isolates on the port joined, other ports stay out
   * even for streams that do not isolate. */
  memset(&c, 0, sizeof(c));
  client_iso_add(&c, &s80);
  client_iso_add(&c, &iso80);
  ck_assert_int_eq(client_iso_compatible(&c, &s443), 0);
  ck_assert_int_eq(client_iso_compatible(&c, &s80), 1);
}
END_TEST

START_TEST(test_check_request)
{
  const char *why = NULL;
  socks_request_t name = req("web.example", 80, NULL, 5);
  socks_request_t v4 = req("192.0.2.1", 80, NULL, 5);
  socks_request_t v6 = req("2001:db8::1", 80, NULL, 5);
  socks_request_t onion = req("abcdef.onion.", 80, NULL, 5);
  socks_request_t resolve = name;
  resolve.command = SOCKS_CMD_RESOLVE;
  /* Defaults (tor 0.4.9's, checked with it): names, IPv4 and IPv6. */
  ck_assert_int_eq(client_port_check_request(0, &name, &why), -1);
  ck_assert_int_eq(client_port_check_request(0, &v4, &why), -1);
  ck_assert_int_eq(client_port_check_request(0, &resolve, &why), -1);
  ck_assert_int_eq(client_port_check_request(0, &v6, &why), -1);
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_IPV6, &v6, &why),
                   END_STREAM_REASON_EXITPOLICY);
  ck_assert_ptr_nonnull(strstr(why, "NoIPv6Traffic"));
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_IPV6, &v4, &why),
                   -1);
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_IPV4, &v4, &why),
                   END_STREAM_REASON_EXITPOLICY);
  ck_assert_ptr_nonnull(strstr(why, "NoIPv4Traffic"));
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_IPV4, &name,
                                             &why), -1);
  /* NoDNSRequest: no host names, no lookups; IP literals fine. */
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_DNS, &name, &why),
                   END_STREAM_REASON_EXITPOLICY);
  ck_assert_ptr_nonnull(strstr(why, "NoDNSRequest"));
  ck_assert_int_eq(
      client_port_check_request(CLIENT_PORT_NO_DNS, &resolve, &why),
      END_STREAM_REASON_EXITPOLICY);
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_DNS, &v4, &why),
                   -1);
  /* NoOnionTraffic. */
  ck_assert_int_eq(client_port_check_request(0, &onion, &why), -1);
  ck_assert_int_eq(
      client_port_check_request(CLIENT_PORT_NO_ONION, &onion, &why),
      END_STREAM_REASON_EXITPOLICY);
  ck_assert_int_eq(client_port_check_request(CLIENT_PORT_NO_ONION, &name,
                                             &why), -1);
}
END_TEST

START_TEST(test_begin_flags)
{
  const uint32_t ok6 = RELAY_BEGIN_FLAG_IPV6_OK,
                 pref6 = RELAY_BEGIN_FLAG_IPV6_PREFERRED,
                 no4 = RELAY_BEGIN_FLAG_IPV4_NOT_OK;
  /* Default: IPv6 fine and preferred (tor since 0.4.3). */
  ck_assert_uint_eq(client_port_begin_flags(0, 5), ok6 | pref6);
  ck_assert_uint_eq(client_port_begin_flags(CLIENT_PORT_NO_PREFER_IPV6, 5),
                    ok6);
  ck_assert_uint_eq(client_port_begin_flags(CLIENT_PORT_NO_IPV6, 5), 0);
  /* SOCKS4 cannot carry IPv6 answers. */
  ck_assert_uint_eq(client_port_begin_flags(0, 4), 0);
  ck_assert_uint_eq(client_port_begin_flags(CLIENT_PORT_NO_IPV4, 5),
                    ok6 | pref6 | no4);
  ck_assert_uint_eq(client_port_begin_flags(CLIENT_PORT_NO_IPV4, 4), no4);
}
END_TEST

START_TEST(test_two_auto_listeners)
{
  evloop_t *loop = evloop_new();
  client_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.max_circuit_dirtiness = 600;
  char *err = NULL;
  ck_assert_int_eq(client_port_parse("auto", &cfg.socks_ports.port[0], &err),
                   0);
  ck_assert_int_eq(client_port_parse("127.0.0.2:auto SessionGroup=1",
                                     &cfg.socks_ports.port[1], &err), 0);
  cfg.socks_ports.n = 2;
  const char *why = NULL;
  ck_assert_int_eq(client_init(loop, &cfg, &why, NULL), 0);
  pc_addr_t bound[4];
  ck_assert_int_eq(client_socks_listeners(bound, 4), 2);
  ck_assert_uint_eq(pc_addr_ipv4_h(&bound[0]), 0x7f000001);
  ck_assert_uint_eq(pc_addr_ipv4_h(&bound[1]), 0x7f000002);
  ck_assert_uint_ne(bound[0].port, 0);
  ck_assert_uint_ne(bound[1].port, 0);
  client_shutdown();
  ck_assert_int_eq(client_socks_listeners(bound, 4), 0);
  evloop_free(loop);
}
END_TEST

Suite *
suite_client_port(void)
{
  Suite *s = suite_create("client_port");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_parse_addresses);
  tcase_add_test(tc, test_parse_flags);
  tcase_add_test(tc, test_format);
  tcase_add_test(tc, test_isolation);
  tcase_add_test(tc, test_isolation_mixed);
  tcase_add_test(tc, test_check_request);
  tcase_add_test(tc, test_begin_flags);
  tcase_add_test(tc, test_two_auto_listeners);
  suite_add_tcase(s, tc);
  return s;
}
