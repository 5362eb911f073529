/* SPDX-License-Identifier: BSD-3-Clause */
/* proto_internal.h -- what the cell codecs of core/proto share and nothing
 * outside core/proto includes.
 *
 * PROTO_BAD() is how a parser there gives up: the input came from a peer,
 * so the reason is logged at info level (a peer must not be able to fill
 * the log at notice or louder) and the parser returns -1 to its caller,
 * which decides what the failure costs the peer (usually the channel).
 */
#ifndef PCTOR_CORE_PROTO_PROTO_INTERNAL_H
#define PCTOR_CORE_PROTO_PROTO_INTERNAL_H

#include "lib/log/log.h"

/* Log printf-style why at info level and return -1 from the function. */
#define PROTO_BAD(...)                                                       \
  do {                                                                       \
    log_info(__VA_ARGS__);                                                   \
    return -1;                                                               \
  } while (0)

#endif
