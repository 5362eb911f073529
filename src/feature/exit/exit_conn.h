/* SPDX-License-Identifier: BSD-3-Clause */
/* exit_conn.h -- the exit role: RELAY_BEGIN opens a TCP connection to the
 * destination the client names (after the exit policy and DNS), RELAY_DATA
 * flows both ways, RELAY_END closes; RELAY_RESOLVE answers DNS questions.
 */
#ifndef PCTOR_FEATURE_EXIT_EXIT_CONN_H
#define PCTOR_FEATURE_EXIT_EXIT_CONN_H
#include "core/or/circuit.h"
#include "feature/exit/policy.h"
#include "lib/evloop/dns.h"
#include "lib/evloop/evloop.h"

/* Streams one circuit may have open at once (exit, resolve and directory
 * streams together); more BEGINs and RESOLVEs are refused with END
 * RESOURCELIMIT. */
#define EXIT_MAX_STREAMS_PER_CIRCUIT 512
/* Name resolutions (BEGIN to a name, RESOLVE) one circuit may have waiting
 * for the resolver at once, so that one circuit cannot take every
 * resolver slot (DNS_DEFAULT_MAX_PENDING in all); more are refused with
 * END RESOURCELIMIT. */
#define EXIT_MAX_DNS_PER_CIRCUIT 32

#define EXIT_DNS_N_RESULTS 7

typedef struct exit_config_t {
  /* NULL: not an exit (every BEGIN is refused with EXITPOLICY). */
  const exit_policy_t *policy;
  dns_resolver_t *dns;
  /* RefuseUnknownExits: 1, 0, or -1 for auto (the consensus parameter
   * refuseunknownexits decides; tor's default). With 1 or auto, BEGIN is
   * refused when the previous hop is a relay the consensus does not list
   * (see exit_set_relay_lookup()). Streams on a client's first hop are
   * refused whatever this says, as tor does. */
  int refuse_unknown;
  /* Seconds to wait for a destination to accept the connection. */
  unsigned connect_timeout;
  /* IPv6Exit: names are also resolved to IPv6 (AAAA) and a BEGIN's flags
   * may give it an IPv6 address. 0: IPv4 only, as tor -- a BEGIN that
   * refuses IPv4 gets END EXITPOLICY, IPv6 destinations are refused
   * whatever the policy says. */
  int ipv6_exit;
} exit_config_t;

/* Which of the addresses a name resolved to a BEGIN gets, as tor decides
 * (answers as dns_resolve() gives them, flags the BEGIN's
 * RELAY_BEGIN_FLAG_*): IPv4 is acceptable unless IPV4_NOT_OK, IPv6 only
 * with IPV6_OK and ipv6_exit. With both acceptable, the family whose
 * address the policy accepts for port, or, when it accepts both or
 * neither, IPv6 exactly when IPV6_PREFERRED; with one acceptable, that
 * one; with none, the preferred family anyway (tor connects to the IPv4
 * address of a name that has no IPv6 one even under IPV4_NOT_OK). In each
 * family the first address the policy accepts is taken, else the first.
 * Returns the index in answers, or -1 when there is no address of the
 * family chosen (END RESOLVEFAILED). */
int exit_pick_answer(const exit_policy_t *policy, int ipv6_exit,
                     uint32_t flags, const dns_answer_t *answers, int n,
                     uint16_t port);

/* Register the BEGIN and RESOLVE handlers. The policy and resolver must
 * stay valid until exit_shutdown() or the next exit_configure(). */
void exit_init(evloop_t *loop, const exit_config_t *cfg);
void exit_configure(const exit_config_t *cfg);
/* How the exit learns whether a relay is in the consensus: fn returns 1
 * if rsa_id (20 bytes) is listed, 0 if not, -1 when there is no consensus
 * yet; it sets *refuse_param to the consensus parameter
 * "refuseunknownexits" (0 or 1, default 1) when it returns 0 or 1. NULL
 * (the default after exit_init()): never refuse for this reason. */
typedef int (*exit_relay_lookup_fn)(const uint8_t *rsa_id, int *refuse_param,
                                    void *arg);
void exit_set_relay_lookup(exit_relay_lookup_fn fn, void *arg);
/* Close every exit connection. */
void exit_shutdown(void);

typedef struct exit_stats_t {
  uint64_t n_begin, n_connected, n_refused_policy, n_resolve_failed,
      n_connect_failed, n_refused_unknown;
  uint64_t n_resolve; /* RESOLVE cells (lookups asked for) */
  /* Answers from the resolver by result, indexed by -DNS_RESULT_* (0 OK
   * ... 6 ERROR); their sum is the lookups done. */
  uint64_t n_dns_by_result[EXIT_DNS_N_RESULTS];
  uint64_t n_refused_dos;          /* DoSStreamCreation* */
  uint64_t n_refused_streams_cap;  /* EXIT_MAX_STREAMS_PER_CIRCUIT */
  uint64_t n_refused_dns_cap;      /* EXIT_MAX_DNS_PER_CIRCUIT */
  unsigned n_open;
} exit_stats_t;
void exit_get_stats(exit_stats_t *out);
/* Bytes buffered for circ's exit streams (both directions); what
 * exit_init() registers with circuits_add_extra_mem_fn(). */
size_t exit_circuit_buffered_bytes(circuit_t *circ);
/* Exit streams (including those still resolving or connecting) and the
 * bytes all of them hold in their buffers. */
void exit_get_buffered(unsigned *n_streams, uint64_t *bytes);
#endif
