/* exit_conn.h -- the exit role: RELAY_BEGIN opens a TCP connection to the
 * destination the client names (after the exit policy and DNS), RELAY_DATA
 * flows both ways, RELAY_END closes; RELAY_RESOLVE answers DNS questions.
 */
#ifndef PCTOR_FEATURE_EXIT_EXIT_CONN_H
#define PCTOR_FEATURE_EXIT_EXIT_CONN_H
#include "feature/exit/policy.h"
#include "lib/evloop/dns.h"
#include "lib/evloop/evloop.h"

typedef struct exit_config_t {
  /* NULL: not an exit (every BEGIN is refused with EXITPOLICY). */
  const exit_policy_t *policy;
  dns_resolver_t *dns;
  /* Refuse streams on circuits whose previous hop did not authenticate as
   * a relay (tor's RefuseUnknownExits; see exit_conn.c). */
  int refuse_unknown;
  /* Seconds to wait for a destination to accept the connection. */
  unsigned connect_timeout;
} exit_config_t;

/* Register the BEGIN and RESOLVE handlers. The policy and resolver must
 * stay valid until exit_shutdown() or the next exit_configure(). */
void exit_init(evloop_t *loop, const exit_config_t *cfg);
void exit_configure(const exit_config_t *cfg);
/* Close every exit connection. */
void exit_shutdown(void);

typedef struct exit_stats_t {
  uint64_t n_begin, n_connected, n_refused_policy, n_resolve_failed,
      n_connect_failed;
  unsigned n_open;
} exit_stats_t;
void exit_get_stats(exit_stats_t *out);
#endif
