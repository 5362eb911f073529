/* SPDX-License-Identifier: BSD-3-Clause */
/* dns.c -- asynchronous DNS over libevent's evdns (see dns.h).
 *
 * Design:
 *  - One evdns_base per resolver, on the loop's event_base. It is created
 *    without nameservers (so the system's resolv.conf is never read by
 *    accident) and with EVDNS_BASE_DISABLE_WHEN_INACTIVE (an idle resolver
 *    keeps no event registered, so the loop can go idle). Only the file
 *    the caller names is parsed, with DNS_OPTION_NAMESERVERS_NO_DEFAULT:
 *    a file without a nameserver is an error instead of a silent fallback
 *    to 127.0.0.1:53, and /etc/hosts is not loaded (evdns would use it
 *    only for evdns_getaddrinfo()). Search domains are cleared and every
 *    query carries DNS_QUERY_NO_SEARCH, so names are looked up exactly as
 *    given. Case randomization of queries (evdns's default) stays on.
 *  - A request is one allocation: up to two evdns queries (A and AAAA, or
 *    one PTR) with room for their answers. evdns reports each query it
 *    accepted exactly once, always from a deferred callback: an answer, an
 *    error, or DNS_ERR_CANCEL after evdns_cancel_request() (or the real
 *    answer if it had already arrived). So a request is freed when its
 *    last query has reported. Cancelling detaches it from the resolver and
 *    from its owner, asks evdns to cancel, and lets those reports free it;
 *    that is why cancelled requests outlive a freed resolver until the
 *    loop runs their reports.
 *  - Requests that need no query (IP literals, rejected names, over the
 *    limit) wait in a "ready" list drained by one evloop deferred callback,
 *    so no callback ever runs inside dns_resolve(). A callback may free
 *    the resolver: if that happens while the drain loop runs, the free
 *    only marks the resolver dead and the drain loop releases it.
 *  - evdns_base_free() is called with fail_requests = 0. Our requests were
 *    all cancelled just before, and libevent 2.1's failing mode would
 *    also report to an in-flight nameserver probe whose nameserver it
 *    frees in the same call.
 *  - Answers are copied out of evdns's buffers into the request (at most
 *    DNS_MAX_ADDRS_PER_FAMILY per family); a PTR name is passed on only if
 *    it is a valid hostname, since callers put it into cells.
 *  - Hostnames are not logged (they are users' destinations).
 *  - What a request holds is counted in the memory budget (MEMACCT_DNS,
 *    lib/malloc/memacct): the request itself and its PTR name exactly,
 *    and DNS_EVDNS_QUERY_BYTES for each query evdns has still to report,
 *    an estimate of what libevent allocates for it (its request record
 *    with a timer event and the query packet, and the handle: about
 *    700 bytes in libevent 2.1 for the longest name). req->acct is what
 *    the request has added, all of it subtracted when it is freed.
 *  - evdns's own messages go to pctor's log through evdns_set_log_fn(),
 *    which is process-wide in libevent; it is (re)set to the same
 *    function by every dns_resolver_new().
 */
#include "lib/evloop/dns.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/container/dlist.h"
#include "lib/encoding/base16.h"
#include "lib/evloop/evloop_internal.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#define DEFAULT_RESOLV_CONF "/etc/resolv.conf"
/* DNS_OPTIONS_ALL without the hosts file (evdns consults it only for its
 * getaddrinfo, which we do not use) and without the silent default
 * nameserver. */
#define RESOLV_CONF_FLAGS                                               \
  ((DNS_OPTIONS_ALL & ~DNS_OPTION_HOSTSFILE) | DNS_OPTION_NAMESERVERS_NO_DEFAULT)
#define LIMIT_WARN_INTERVAL_US (60ull * 1000000ull)

typedef struct dns_query_t {
  dns_request_t *req;
  struct evdns_request *handle; /* set while evdns owes us a report */
  int asked;
  int result; /* DNS_RESULT_* once reported */
  int n;
  uint32_t ttl;
  pc_addr_t addrs[DNS_MAX_ADDRS_PER_FAMILY];
} dns_query_t;

struct dns_request_t {
  dns_resolver_t *resolver; /* NULL once cancelled */
  dlist_node_t link;        /* in resolver->pending or resolver->ready */
  dns_cb_fn cb;
  void *arg;
  int cancelled;
  int n_out;           /* queries evdns has still to report */
  int is_reverse;
  int is_literal;
  int ready_result;    /* result of a request in the ready list */
  pc_addr_t addr;      /* the literal, or the reverse-lookup address */
  char *ptr_name;      /* reverse lookups: the name found */
  size_t acct;         /* bytes counted in MEMACCT_DNS for it */
  dns_query_t q[2];    /* [0] A or PTR, [1] AAAA */
};

struct dns_resolver_t {
  evloop_t *loop;
  struct evdns_base *base;
  dlist_t pending; /* requests with queries out */
  dlist_t ready;   /* requests completed without a query, to report */
  evloop_deferred_t *ready_ev;
  unsigned n_pending, max_pending;
  int dispatching; /* dns_ready_cb is running */
  int dead;        /* freed while dispatching: dns_ready_cb frees r */
  uint64_t n_limited;
  uint64_t last_limit_warn_us;
  int limit_warned;
};

static void
dns_evdns_log(int is_warning, const char *msg)
{
  if (is_warning)
    log_warn("evdns: %s", msg);
  else
    log_debug("evdns: %s", msg);
}

static void dns_ready_cb(void *arg);

static void
set_err(char **err, char *msg)
{
  if (err)
    *err = msg;
  else
    free(msg);
}

dns_resolver_t *
dns_resolver_new(evloop_t *loop, const char *resolv_conf_path, char **err)
{
  const char *path = resolv_conf_path ? resolv_conf_path : DEFAULT_RESOLV_CONF;
  if (err)
    *err = NULL;
  evdns_set_log_fn(dns_evdns_log);
  struct evdns_base *base =
    evdns_base_new(evloop_event_base_(loop), EVDNS_BASE_DISABLE_WHEN_INACTIVE);
  if (!base) {
    set_err(err, pc_strdup("cannot create a DNS resolver"));
    return NULL;
  }
  int rv = evdns_base_resolv_conf_parse(base, RESOLV_CONF_FLAGS, path);
  if (rv != 0) {
    const char *why;
    switch (rv) {
    case 1: why = "cannot open it"; break;
    case 2: why = "cannot read it"; break;
    case 3: why = "it is too large"; break;
    case 4: why = "out of memory"; break;
    case 5: why = "short read"; break;
    default: why = "it is malformed"; break;
    }
    set_err(err, pc_asprintf("resolv.conf file %s: %s", path, why));
    evdns_base_free(base, 0);
    return NULL;
  }
  if (evdns_base_count_nameservers(base) <= 0) {
    set_err(err, pc_asprintf("resolv.conf file %s names no usable nameserver",
                             path));
    evdns_base_free(base, 0);
    return NULL;
  }
  evdns_base_search_clear(base);

  dns_resolver_t *r = pc_zalloc(sizeof(*r));
  r->loop = loop;
  r->base = base;
  dlist_init(&r->pending);
  dlist_init(&r->ready);
  r->ready_ev = evloop_deferred_new(loop, dns_ready_cb, r);
  r->max_pending = DNS_DEFAULT_MAX_PENDING;
  log_info("DNS resolver: %d nameserver(s) from %s",
           evdns_base_count_nameservers(base), path);
  return r;
}

static void
request_acct(dns_request_t *req, size_t n)
{
  req->acct += n;
  memacct_add(MEMACCT_DNS, n);
}

static void
request_unacct(dns_request_t *req, size_t n)
{
  req->acct -= n;
  memacct_sub(MEMACCT_DNS, n);
}

static void
request_free(dns_request_t *req)
{
  memacct_sub(MEMACCT_DNS, req->acct);
  free(req->ptr_name);
  free(req);
}

/* Detach req (which has queries out) from its resolver and owner; evdns's
 * reports free it later. */
static void
request_abandon(dns_request_t *req)
{
  dns_resolver_t *r = req->resolver;
  dlist_remove(&req->link);
  r->n_pending--;
  req->cancelled = 1;
  req->resolver = NULL;
  req->cb = NULL;
  for (int i = 0; i < 2; i++) {
    if (req->q[i].handle)
      evdns_cancel_request(r->base, req->q[i].handle);
  }
}

void
dns_resolver_free_(dns_resolver_t *r)
{
  if (!r)
    return;
  if (r->dead)
    return;
  dlist_node_t *n;
  while ((n = dlist_first(&r->pending)))
    request_abandon(DLIST_ENTRY(n, dns_request_t, link));
  while ((n = dlist_first(&r->ready))) {
    dlist_remove(n);
    request_free(DLIST_ENTRY(n, dns_request_t, link));
  }
  evdns_base_free(r->base, 0);
  r->base = NULL;
  if (r->dispatching) {
    r->dead = 1; /* dns_ready_cb finishes the job */
    return;
  }
  evloop_deferred_free(r->ready_ev);
  free(r);
}

int
dns_resolver_set_timeout(dns_resolver_t *r, unsigned timeout_ms,
                         unsigned attempts)
{
  if (timeout_ms < 1 || timeout_ms > 3600000u || attempts < 1 ||
      attempts > 255)
    return -1;
  char buf[32];
  snprintf(buf, sizeof(buf), "%u.%03u", timeout_ms / 1000u,
           timeout_ms % 1000u);
  if (evdns_base_set_option(r->base, "timeout:", buf) != 0)
    return -1;
  snprintf(buf, sizeof(buf), "%u", attempts);
  if (evdns_base_set_option(r->base, "attempts:", buf) != 0)
    return -1;
  return 0;
}

void
dns_resolver_set_max_pending(dns_resolver_t *r, unsigned max_pending)
{
  r->max_pending = max_pending ? max_pending : 1;
}

unsigned
dns_resolver_n_pending(const dns_resolver_t *r)
{
  return r->n_pending;
}

int
dns_resolver_n_nameservers(const dns_resolver_t *r)
{
  return evdns_base_count_nameservers(r->base);
}

/* ---- completion ---- */

static dns_request_t *
request_new(dns_resolver_t *r, dns_cb_fn cb, void *arg)
{
  dns_request_t *req = pc_zalloc(sizeof(*req));
  request_acct(req, sizeof(*req));
  req->resolver = r;
  req->cb = cb;
  req->arg = arg;
  dlist_node_init(&req->link);
  req->q[0].req = req;
  req->q[1].req = req;
  return req;
}

/* Queue req to be reported with result from the loop. */
static dns_request_t *
request_ready(dns_request_t *req, int result)
{
  dns_resolver_t *r = req->resolver;
  req->ready_result = result;
  dlist_insert_tail(&r->ready, &req->link);
  evloop_deferred_schedule(r->ready_ev);
  return req;
}

static void
dns_ready_cb(void *arg)
{
  dns_resolver_t *r = arg;
  dlist_node_t *n;
  r->dispatching = 1;
  while (!r->dead && (n = dlist_first(&r->ready))) {
    dns_request_t *req = DLIST_ENTRY(n, dns_request_t, link);
    dlist_remove(n);
    dns_answer_t ans;
    int n_ans = 0;
    if (req->ready_result == DNS_RESULT_OK && req->is_literal) {
      ans.addr = req->addr;
      ans.hostname = NULL;
      ans.ttl = DNS_LITERAL_TTL;
      n_ans = 1;
    }
    req->cb(req->ready_result, n_ans ? &ans : NULL, n_ans, req->arg);
    request_free(req);
  }
  r->dispatching = 0;
  if (r->dead) {
    evloop_deferred_free(r->ready_ev);
    free(r);
  }
}

static int
map_evdns_error(int err)
{
  switch (err) {
  case DNS_ERR_NOTEXIST:
  case DNS_ERR_NODATA:
    return DNS_RESULT_NOTFOUND;
  case DNS_ERR_TIMEOUT:
    return DNS_RESULT_TIMEOUT;
  case DNS_ERR_SERVERFAILED:
  case DNS_ERR_FORMAT:
  case DNS_ERR_NOTIMPL:
  case DNS_ERR_REFUSED:
  case DNS_ERR_TRUNCATED:
  case DNS_ERR_UNKNOWN:
    return DNS_RESULT_SERVFAIL;
  default: /* DNS_ERR_SHUTDOWN, DNS_ERR_CANCEL: not expected here */
    return DNS_RESULT_ERROR;
  }
}

/* Store one evdns report in q. */
static void
query_record(dns_query_t *q, int err, char type, int count, int ttl,
             void *addresses)
{
  dns_request_t *req = q->req;
  q->ttl = (uint32_t)ttl;
  if (err != DNS_ERR_NONE) {
    q->result = map_evdns_error(err);
    return;
  }
  q->result = DNS_RESULT_NOTFOUND;
  if (count <= 0 || !addresses)
    return;
  if (type == DNS_IPv4_A || type == DNS_IPv6_AAAA) {
    int v6 = (type == DNS_IPv6_AAAA);
    size_t len = v6 ? 16 : 4;
    int n = count < DNS_MAX_ADDRS_PER_FAMILY ? count : DNS_MAX_ADDRS_PER_FAMILY;
    const uint8_t *p = addresses;
    for (int i = 0; i < n; i++) {
      pc_addr_t *a = &q->addrs[i];
      memset(a, 0, sizeof(*a));
      a->family = v6 ? AF_INET6 : AF_INET;
      memcpy(a->addr, p + (size_t)i * len, len);
    }
    q->n = n;
    q->result = DNS_RESULT_OK;
  } else if (type == DNS_PTR && req->is_reverse) {
    const char *name = ((char *const *)addresses)[0];
    if (name && dns_hostname_is_valid(name)) {
      if (req->ptr_name)
        request_unacct(req, strlen(req->ptr_name) + 1);
      free(req->ptr_name);
      req->ptr_name = pc_strdup(name);
      request_acct(req, strlen(req->ptr_name) + 1);
      q->result = DNS_RESULT_OK;
    } else {
      log_info("DNS: nameserver sent an unusable PTR name");
      q->result = DNS_RESULT_SERVFAIL;
    }
  }
}

static void
request_complete(dns_request_t *req)
{
  dns_resolver_t *r = req->resolver;
  dlist_remove(&req->link);
  r->n_pending--;

  dns_answer_t ans[2 * DNS_MAX_ADDRS_PER_FAMILY];
  int n_ans = 0;
  if (req->is_reverse) {
    if (req->q[0].result == DNS_RESULT_OK && req->ptr_name) {
      ans[0].addr = req->addr;
      ans[0].hostname = req->ptr_name;
      ans[0].ttl = req->q[0].ttl;
      n_ans = 1;
    }
  } else {
    for (int i = 0; i < 2; i++) {
      const dns_query_t *q = &req->q[i];
      if (q->result != DNS_RESULT_OK)
        continue;
      for (int k = 0; k < q->n; k++) {
        ans[n_ans].addr = q->addrs[k];
        ans[n_ans].hostname = NULL;
        ans[n_ans].ttl = q->ttl;
        n_ans++;
      }
    }
  }
  int result = DNS_RESULT_OK;
  if (n_ans == 0) {
    /* No answer: a transient failure of either query wins over "not
     * found", since the name may exist after all. */
    result = DNS_RESULT_NOTFOUND;
    for (int i = 0; i < 2; i++) {
      const dns_query_t *q = &req->q[i];
      if (q->asked && q->result != DNS_RESULT_OK &&
          q->result != DNS_RESULT_NOTFOUND) {
        result = q->result;
        break;
      }
    }
  }
  req->cb(result, n_ans ? ans : NULL, n_ans, req->arg); /* may free r */
  request_free(req);
}

static void
dns_query_cb(int err, char type, int count, int ttl, void *addresses,
             void *arg)
{
  dns_query_t *q = arg;
  dns_request_t *req = q->req;
  q->handle = NULL; /* evdns frees it after we return */
  req->n_out--;
  request_unacct(req, DNS_EVDNS_QUERY_BYTES);
  if (req->cancelled) {
    if (req->n_out == 0)
      request_free(req);
    return;
  }
  query_record(q, err, type, count, ttl, addresses);
  if (req->n_out == 0)
    request_complete(req);
}

/* ---- starting requests ---- */

static int
over_limit(dns_resolver_t *r)
{
  if (r->n_pending < r->max_pending)
    return 0;
  r->n_limited++;
  uint64_t now = evloop_now_us(r->loop);
  if (!r->limit_warned || now - r->last_limit_warn_us >= LIMIT_WARN_INTERVAL_US) {
    log_warn("DNS: %u requests are already waiting for nameservers (the "
             "limit); refusing new ones (%llu refused so far)",
             r->n_pending, (unsigned long long)r->n_limited);
    r->limit_warned = 1;
    r->last_limit_warn_us = now;
  }
  return 1;
}

/* Record an evdns request handle (NULL: evdns refused to start it). */
static void
query_started(dns_query_t *q, struct evdns_request *h)
{
  q->asked = 1;
  if (h) {
    q->handle = h;
    q->req->n_out++;
    request_acct(q->req, DNS_EVDNS_QUERY_BYTES);
  } else {
    q->result = DNS_RESULT_ERROR;
  }
}

/* req has started its queries: wait for them, or report at once if
 * none could be started. */
static dns_request_t *
request_submitted(dns_request_t *req)
{
  if (req->n_out == 0) {
    log_info("DNS: could not start a query");
    return request_ready(req, DNS_RESULT_ERROR);
  }
  dns_resolver_t *r = req->resolver;
  dlist_insert_tail(&r->pending, &req->link);
  r->n_pending++;
  return req;
}

dns_request_t *
dns_resolve(dns_resolver_t *r, const char *hostname, int want, dns_cb_fn cb,
            void *arg)
{
  dns_request_t *req = request_new(r, cb, arg);
  want &= DNS_WANT_IPV4 | DNS_WANT_IPV6;
  if (!want)
    want = DNS_WANT_IPV4;
  if (dns_parse_ip_literal(hostname, &req->addr) == 0) {
    req->is_literal = 1;
    return request_ready(req, DNS_RESULT_OK);
  }
  if (!dns_hostname_is_valid(hostname)) {
    log_info("DNS: refusing to look up an invalid hostname");
    return request_ready(req, DNS_RESULT_INVALID);
  }
  if (over_limit(r))
    return request_ready(req, DNS_RESULT_LIMIT);
  if (want & DNS_WANT_IPV4)
    query_started(&req->q[0],
                  evdns_base_resolve_ipv4(r->base, hostname,
                                          DNS_QUERY_NO_SEARCH, dns_query_cb,
                                          &req->q[0]));
  if (want & DNS_WANT_IPV6)
    query_started(&req->q[1],
                  evdns_base_resolve_ipv6(r->base, hostname,
                                          DNS_QUERY_NO_SEARCH, dns_query_cb,
                                          &req->q[1]));
  return request_submitted(req);
}

dns_request_t *
dns_resolve_reverse(dns_resolver_t *r, const pc_addr_t *addr, dns_cb_fn cb,
                    void *arg)
{
  dns_request_t *req = request_new(r, cb, arg);
  req->is_reverse = 1;
  if (!addr || (addr->family != AF_INET && addr->family != AF_INET6))
    return request_ready(req, DNS_RESULT_INVALID);
  req->addr = *addr;
  req->addr.port = 0;
  if (over_limit(r))
    return request_ready(req, DNS_RESULT_LIMIT);
  struct evdns_request *h;
  if (addr->family == AF_INET) {
    struct in_addr in;
    memcpy(&in.s_addr, addr->addr, 4);
    h = evdns_base_resolve_reverse(r->base, &in, DNS_QUERY_NO_SEARCH,
                                   dns_query_cb, &req->q[0]);
  } else {
    struct in6_addr in6;
    memcpy(in6.s6_addr, addr->addr, 16);
    h = evdns_base_resolve_reverse_ipv6(r->base, &in6, DNS_QUERY_NO_SEARCH,
                                        dns_query_cb, &req->q[0]);
  }
  query_started(&req->q[0], h);
  return request_submitted(req);
}

void
dns_request_cancel(dns_request_t *req)
{
  if (!req)
    return;
  if (req->cancelled) {
    log_warn("DNS: request cancelled twice");
    return;
  }
  if (req->n_out == 0) { /* in the ready list */
    dlist_remove(&req->link);
    request_free(req);
    return;
  }
  request_abandon(req);
}

/* ---- names ---- */

static int
is_ascii_digit(char c)
{
  return c >= '0' && c <= '9';
}

static int
is_ascii_alnum(char c)
{
  return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int
dns_hostname_is_valid(const char *name)
{
  if (!name)
    return 0;
  size_t len = strnlen(name, DNS_MAX_NAME_LEN + 2);
  if (len > 0 && name[len - 1] == '.')
    len--;
  if (len == 0 || len > DNS_MAX_NAME_LEN)
    return 0;
  size_t start = 0;
  int all_digits = 1;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || name[i] == '.') {
      size_t label_len = i - start;
      if (label_len == 0 || label_len > 63 || name[start] == '-')
        return 0;
      if (i == len && all_digits)
        return 0;
      start = i + 1;
      all_digits = 1;
      continue;
    }
    char c = name[i];
    if (!is_ascii_alnum(c) && c != '-' && c != '_')
      return 0;
    if (!is_ascii_digit(c))
      all_digits = 0;
  }
  return 1;
}

int
dns_parse_ip_literal(const char *name, pc_addr_t *out)
{
  char buf[64];
  if (!name)
    return -1;
  size_t len = strnlen(name, sizeof(buf));
  if (len == 0 || len >= sizeof(buf))
    return -1;
  int bracketed = (name[0] == '[');
  if (bracketed) {
    if (len < 3 || name[len - 1] != ']')
      return -1;
    memcpy(buf, name + 1, len - 2);
    buf[len - 2] = '\0';
  } else {
    memcpy(buf, name, len);
    buf[len] = '\0';
  }
  pc_addr_t a;
  if (pc_addr_parse_ip(&a, buf, 0) != 0)
    return -1;
  if (bracketed && a.family != AF_INET6)
    return -1;
  *out = a;
  return 0;
}

static int
ends_with_ci(const char *s, size_t len, const char *suffix, size_t slen)
{
  if (len < slen)
    return 0;
  return strncasecmp(s + len - slen, suffix, slen) == 0;
}

int
dns_reverse_name_parse(const char *name, pc_addr_t *out)
{
  static const char v4_suffix[] = ".in-addr.arpa";
  static const char v6_suffix[] = ".ip6.arpa";
  if (!name)
    return -1;
  size_t len = strnlen(name, DNS_MAX_NAME_LEN + 2);
  if (len > 0 && name[len - 1] == '.')
    len--;
  if (len == 0 || len > DNS_MAX_NAME_LEN)
    return -1;
  pc_addr_t a;
  memset(&a, 0, sizeof(a));
  if (ends_with_ci(name, len, v4_suffix, sizeof(v4_suffix) - 1)) {
    /* "d.c.b.a" with each a decimal 0..255 without leading zeros */
    size_t plen = len - (sizeof(v4_suffix) - 1);
    size_t i = 0;
    for (int label = 0; label < 4; label++) {
      size_t start = i;
      unsigned v = 0;
      while (i < plen && is_ascii_digit(name[i]) && i - start < 3) {
        v = v * 10 + (unsigned)(name[i] - '0');
        i++;
      }
      size_t digits = i - start;
      if (digits == 0 || v > 255 || (digits > 1 && name[start] == '0'))
        return -1;
      if (label < 3) {
        if (i >= plen || name[i] != '.')
          return -1;
        i++;
      }
      a.addr[3 - label] = (uint8_t)v;
    }
    if (i != plen)
      return -1;
    a.family = AF_INET;
  } else if (ends_with_ci(name, len, v6_suffix, sizeof(v6_suffix) - 1)) {
    /* 32 single-nibble labels, least significant first */
    size_t plen = len - (sizeof(v6_suffix) - 1);
    if (plen != 63)
      return -1;
    for (int i = 0; i < 32; i++) {
      int v = base16_digit_value(name[2 * i]);
      if (v < 0 || (i < 31 && name[2 * i + 1] != '.'))
        return -1;
      int k = 31 - i; /* nibble index in the address, 0 = most significant */
      if (k % 2 == 0)
        a.addr[k / 2] |= (uint8_t)(v << 4);
      else
        a.addr[k / 2] |= (uint8_t)v;
    }
    a.family = AF_INET6;
  } else {
    return -1;
  }
  *out = a;
  return 0;
}

const char *
dns_result_str(int result)
{
  switch (result) {
  case DNS_RESULT_OK: return "ok";
  case DNS_RESULT_NOTFOUND: return "name not found";
  case DNS_RESULT_TIMEOUT: return "timed out";
  case DNS_RESULT_SERVFAIL: return "nameserver failure";
  case DNS_RESULT_INVALID: return "invalid hostname";
  case DNS_RESULT_LIMIT: return "too many DNS requests outstanding";
  case DNS_RESULT_ERROR: return "could not start the DNS query";
  default: return "unknown DNS result";
  }
}

int
dns_result_is_transient(int result)
{
  switch (result) {
  case DNS_RESULT_TIMEOUT:
  case DNS_RESULT_SERVFAIL:
  case DNS_RESULT_LIMIT:
  case DNS_RESULT_ERROR:
    return 1;
  default:
    return 0;
  }
}
