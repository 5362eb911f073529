/* SPDX-License-Identifier: BSD-3-Clause */
/* dns.h -- asynchronous DNS resolution on the main loop (exit relays).
 *
 * A dns_resolver_t sends queries to the nameservers listed in one
 * resolv.conf file (tor's ServerDNSResolvConfFile; /etc/resolv.conf when
 * the caller passes NULL) and reports the answers through callbacks run
 * from the loop. Built on libevent's evdns, which stays hidden here.
 *
 * Contract of a request:
 *  - dns_resolve() and dns_resolve_reverse() never call the callback
 *    before they return; the callback runs later from the loop, exactly
 *    once, unless the request is cancelled first (dns_request_cancel()) or
 *    the resolver is freed first (both: the callback is never called).
 *  - The dns_request_t handle is valid until its callback starts or until
 *    it is cancelled, whichever comes first. Do not cancel a request from
 *    inside its own callback.
 *  - A callback may start new requests, cancel other requests, and free
 *    the resolver.
 *  - Hostnames are checked before any query is sent (dns_hostname_is_valid);
 *    rejected ones complete with DNS_RESULT_INVALID. IP literals ("1.2.3.4",
 *    "2001:db8::1", "[2001:db8::1]") complete with that address without a
 *    query, whatever families were asked for.
 *  - At most dns_resolver_set_max_pending() requests (default
 *    DNS_DEFAULT_MAX_PENDING) may wait for nameservers at once; more
 *    complete with DNS_RESULT_LIMIT.
 * There is no cache: each request queries the nameservers (which usually
 * cache themselves).
 */
#ifndef PCTOR_LIB_EVLOOP_DNS_H
#define PCTOR_LIB_EVLOOP_DNS_H
#include <stdint.h>

#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

typedef struct dns_resolver_t dns_resolver_t;
typedef struct dns_request_t dns_request_t;

/* Result codes (the callback's first argument). */
#define DNS_RESULT_OK 0        /* at least one answer */
#define DNS_RESULT_NOTFOUND (-1) /* NXDOMAIN, or no record of the asked type */
#define DNS_RESULT_TIMEOUT (-2)  /* no answer in time (SERVFAIL ends here too) */
#define DNS_RESULT_SERVFAIL (-3) /* nameserver refused or sent an error */
#define DNS_RESULT_INVALID (-4)  /* hostname rejected; nothing was sent */
#define DNS_RESULT_LIMIT (-5)    /* too many requests outstanding */
#define DNS_RESULT_ERROR (-6)    /* the query could not be started */

/* Families for dns_resolve(); with both, A and AAAA are queried in
 * parallel and the answers merged (IPv4 first). */
#define DNS_WANT_IPV4 0x1
#define DNS_WANT_IPV6 0x2

/* Most addresses kept per family from one answer. */
#define DNS_MAX_ADDRS_PER_FAMILY 8
/* TTL reported for IP literals (seconds). */
#define DNS_LITERAL_TTL 3600u
#define DNS_DEFAULT_MAX_PENDING 1024u
/* Counted in the memory budget (MEMACCT_DNS) for each query evdns has
 * still to report, besides the request itself (see dns.c). */
#define DNS_EVDNS_QUERY_BYTES 768u
/* Longest hostname accepted, in characters (a final dot not counted). */
#define DNS_MAX_NAME_LEN 253

typedef struct dns_answer_t {
  /* Forward lookups: the address found (port 0). Reverse lookups: the
   * address that was looked up. */
  pc_addr_t addr;
  /* Reverse lookups: the name found; NULL for forward lookups. */
  const char *hostname;
  uint32_t ttl; /* seconds, as the nameserver gave it */
} dns_answer_t;

/* answers[0..n_answers-1] are valid only during the call; n_answers is 0
 * unless result is DNS_RESULT_OK. */
typedef void (*dns_cb_fn)(int result, const dns_answer_t *answers,
                          int n_answers, void *arg);

/* Read resolv_conf_path (NULL: /etc/resolv.conf): its "nameserver" lines
 * ("nameserver 127.0.0.1" or "nameserver 127.0.0.1:5353") and "options"
 * lines (timeout:SECONDS, attempts:N, ...). Search domains are ignored:
 * names are always queried as given. Returns NULL and sets *err (newly
 * allocated, if err is not NULL) when the file cannot be read or names no
 * usable nameserver. */
dns_resolver_t *dns_resolver_new(evloop_t *loop, const char *resolv_conf_path,
                                 char **err);
/* Outstanding requests are cancelled (callbacks not called). Their
 * memory is released when the loop next runs. */
void dns_resolver_free_(dns_resolver_t *r);
#define dns_resolver_free(r) do { dns_resolver_free_(r); (r) = NULL; } while (0)

/* Per-attempt timeout in milliseconds (>= 1) and number of attempts
 * (1..255) before DNS_RESULT_TIMEOUT. Returns 0 or -1. */
int dns_resolver_set_timeout(dns_resolver_t *r, unsigned timeout_ms,
                             unsigned attempts);
/* Limit on requests waiting for nameservers (>= 1). */
void dns_resolver_set_max_pending(dns_resolver_t *r, unsigned max_pending);
/* Requests currently waiting for nameservers. */
unsigned dns_resolver_n_pending(const dns_resolver_t *r);
int dns_resolver_n_nameservers(const dns_resolver_t *r);

/* Look up hostname's addresses; want is DNS_WANT_IPV4 and/or
 * DNS_WANT_IPV6 (0 means IPv4). Never returns NULL. */
dns_request_t *dns_resolve(dns_resolver_t *r, const char *hostname,
                           int want, dns_cb_fn cb, void *arg);
/* Look up the name of addr (PTR in in-addr.arpa or ip6.arpa). */
dns_request_t *dns_resolve_reverse(dns_resolver_t *r, const pc_addr_t *addr,
                                   dns_cb_fn cb, void *arg);
/* Forget a request: its callback will not be called. */
void dns_request_cancel(dns_request_t *req);

/* 1 if name may be sent to a nameserver: 1..253 characters (plus an
 * optional final dot) of labels of 1..63 letters, digits, '-' and '_',
 * no label starting with '-', and a last label that is not all digits
 * (so malformed IPv4 addresses such as "1.2.3" are rejected). */
int dns_hostname_is_valid(const char *name);
/* If name is an IP literal ("1.2.3.4", "::1", "[::1]"), store it in *out
 * (port 0) and return 0; otherwise return -1. */
int dns_parse_ip_literal(const char *name, pc_addr_t *out);
/* Parse a reverse-lookup name: "4.3.2.1.in-addr.arpa" or the 32-nibble
 * "....ip6.arpa" form (case-insensitive, optional final dot) into *out.
 * Returns 0 or -1. */
int dns_reverse_name_parse(const char *name, pc_addr_t *out);
/* Short English description of a DNS_RESULT_* code. */
const char *dns_result_str(int result);
/* 1 for results that may differ if retried later (timeout, server
 * failure, limit, error), 0 for OK, NOTFOUND and INVALID. */
int dns_result_is_transient(int result);
#endif
