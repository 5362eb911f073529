/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.h -- the MetricsPort: Prometheus text exposition (format
 * 0.0.4) over HTTP, restricted by MetricsPortPolicy, as tor's.
 *
 * Series carry tor's names where tor has the same quantity
 * (tor_relay_traffic_bytes, tor_relay_connections, tor_relay_circuits_total,
 * tor_relay_oom_*), so dashboards made for tor relays work, and pctor_*
 * names for pctor's research features (PerCircuitTCP, the EWMA/KIST
 * scheduler, conflux at the exit, MeasureMe, IPsec between relays, the
 * SocksPort client). The man page lists them.
 *
 * Policy: "accept|reject ADDR[/BITS]" rules separated by commas, ADDR an
 * IPv4 or IPv6 address (brackets allowed), "*" (any), "*4" or "*6"; a port
 * after the address is ignored, as tor does. The first rule that matches
 * the client's address decides; no match (and no policy) rejects, so a
 * MetricsPort without MetricsPortPolicy answers nobody, as in tor.
 */
#ifndef PCTOR_FEATURE_CONTROL_METRICS_H
#define PCTOR_FEATURE_CONTROL_METRICS_H
#include "feature/control/control.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

/* Connections at once, request header limit, time to send the request. */
#define METRICS_MAX_CONNECTIONS 16
#define METRICS_MAX_REQUEST 8192
#define METRICS_REQUEST_TIMEOUT_USEC (10ULL * 1000000)

typedef struct metrics_policy_t metrics_policy_t;
/* Parse a policy; NULL with *err_out set (newly allocated) when bad. */
metrics_policy_t *metrics_policy_parse(const char *s, char **err_out);
void metrics_policy_free_(metrics_policy_t *p);
#define metrics_policy_free(p) \
  do { metrics_policy_free_(p); (p) = NULL; } while (0)
/* 1 when addr may connect, 0 when not (p NULL: nobody may). */
int metrics_policy_allows(const metrics_policy_t *p, const pc_addr_t *addr);
/* For the option check: 0, or -1 with *err_out set. */
int metrics_policy_check(const char *s, char **err_out);

/* MetricsPort "[ADDRESS:]PORT [prometheus]" or "0" (kind NONE). */
int metrics_parse_port(const char *value, control_listen_t *out,
                       char **err_out);

/* Open the port (no-op for kind NONE) with the policy text (NULL: reject
 * all). Returns 0, or -1 with *err_out set. */
int metrics_start(evloop_t *loop, const control_listen_t *port,
                  const char *policy, char **err_out);
/* The IPsec broker whose state to show (pctor_ipsec_*), or NULL. */
struct ipsec_broker_t;
void metrics_set_ipsec(const struct ipsec_broker_t *broker);
/* SIGHUP: a new policy. */
void metrics_set_policy(const char *policy);
void metrics_shutdown(void);
/* The metrics text (newly allocated), what GET /metrics returns. */
char *metrics_render(void);
/* "127.0.0.1:9035", or NULL without a MetricsPort. */
const char *metrics_listen_address(void);
#endif
