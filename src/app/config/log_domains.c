/* SPDX-License-Identifier: BSD-3-Clause */
/* log_domains.c -- pctor's source modules mapped to tor's logging domains
 * (see log_domains.h).
 *
 * The first matching prefix of the path below "src/" wins, so more
 * specific prefixes come first. A function whose name contains
 * "heartbeat" logs in the HEARTBEAT domain wherever it is.
 */
#include "app/config/log_domains.h"

#include <string.h>

static const struct {
  const char *prefix;
  log_domain_t dom;
} source_domains[] = {
  {"lib/crypt/", LOG_DOM_CRYPTO},
  {"core/crypto/", LOG_DOM_CRYPTO},
  {"lib/tls/", LOG_DOM_NET},
  {"lib/net/", LOG_DOM_NET},
  {"lib/evloop/", LOG_DOM_NET},
  {"lib/buf/", LOG_DOM_NET},
  {"lib/fs/", LOG_DOM_FS},
  {"lib/conf/", LOG_DOM_CONFIG},
  {"lib/malloc/", LOG_DOM_MM},
  {"app/config/", LOG_DOM_CONFIG},
  {"core/or/channel_hs", LOG_DOM_HANDSHAKE},
  {"core/or/link_auth", LOG_DOM_HANDSHAKE},
  {"core/proto/linkcells", LOG_DOM_HANDSHAKE},
  {"core/or/channel", LOG_DOM_CHANNEL},
  {"core/or/pctcp", LOG_DOM_CHANNEL},
  {"core/or/scheduler", LOG_DOM_SCHED},
  {"core/or/cell_queue", LOG_DOM_SCHED},
  {"core/or/circuit", LOG_DOM_CIRC},
  {"core/or/onion", LOG_DOM_CIRC},
  {"core/or/congestion", LOG_DOM_CIRC},
  {"core/or/edge", LOG_DOM_EDGE},
  {"core/or/stream", LOG_DOM_EDGE},
  {"core/or/sendme", LOG_DOM_EDGE},
  {"core/or/dos", LOG_DOM_DOS},
  {"core/or/", LOG_DOM_OR},
  {"core/proto/", LOG_DOM_PROTOCOL},
  {"feature/dir/dir_http", LOG_DOM_HTTP},
  {"feature/dir/", LOG_DOM_DIR},
  {"feature/dircache/", LOG_DOM_DIRSERV},
  {"feature/relay/publish", LOG_DOM_DIR},
  {"feature/relay/", LOG_DOM_OR},
  {"feature/client/guards", LOG_DOM_GUARD},
  {"feature/client/cbt", LOG_DOM_CIRC},
  {"feature/client/circbuild", LOG_DOM_CIRC},
  {"feature/client/", LOG_DOM_APP},
  {"feature/exit/", LOG_DOM_EDGE},
  {"feature/control/", LOG_DOM_CONTROL},
  {"feature/conflux/", LOG_DOM_CIRC},
  {"feature/measureme/", LOG_DOM_HIST},
  {"feature/ipsec/", LOG_DOM_NET},
  {"feature/dgram/", LOG_DOM_NET},
  {"feature/backtap/", LOG_DOM_NET},
  {"feature/dtcp/", LOG_DOM_NET},
  {"lib/utcp/", LOG_DOM_NET},
};

log_domain_t
log_domain_of_source(const char *file, const char *func)
{
  if (func && strstr(func, "heartbeat"))
    return LOG_DOM_HEARTBEAT;
  /* The last "src/" in the path: builds outside the source tree name
   * files "../src/core/or/channel.c". */
  const char *rel = NULL;
  for (const char *p = file; p && (p = strstr(p, "src/")); p += 4)
    rel = p + 4;
  if (!rel)
    return LOG_DOM_GENERAL;
  for (size_t i = 0; i < sizeof(source_domains) / sizeof(source_domains[0]);
       i++)
    if (!strncmp(rel, source_domains[i].prefix,
                 strlen(source_domains[i].prefix)))
      return source_domains[i].dom;
  return LOG_DOM_GENERAL;
}
