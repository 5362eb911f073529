/* SPDX-License-Identifier: BSD-3-Clause */
/* log_domains.h -- which of tor's logging domains a pctor message is in.
 *
 * lib/log knows tor's domain names but not pctor's modules; this table,
 * at the top of the layers, maps a source file (and for heartbeat lines,
 * the function) to a domain. main() installs it with
 * log_set_domain_classifier(). The mapping is documented in pctor(1)
 * under Log.
 */
#ifndef PCTOR_APP_CONFIG_LOG_DOMAINS_H
#define PCTOR_APP_CONFIG_LOG_DOMAINS_H

#include "lib/log/log.h"

/* The domain of a message logged in `file` (a __FILE__ path, absolute or
 * relative, containing "src/...") by `func`. GENERAL when unknown. */
log_domain_t log_domain_of_source(const char *file, const char *func);

#endif
