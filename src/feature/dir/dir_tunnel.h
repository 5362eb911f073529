/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_tunnel.h -- directory requests tunnelled to a relay's ORPort, as
 * tor clients make them to directory caches: a one-hop circuit opened
 * with CREATE_FAST (tor-spec 5.1.3: the TLS link already authenticates
 * the relay), a BEGIN_DIR stream on it (tor-spec 6.2), and the same
 * HTTP/1.0 GET as on a DirPort (dir_http) carried in DATA cells.
 *
 * The relay must advertise tunnelled-dir-server (the consensus' V2Dir
 * flag). One request per circuit: the answer ends with the relay's END
 * (reason DONE), the circuit is then closed. The answer is bounded and
 * decoded exactly as dir_http does (dir_http_parse_response), and
 * reported once through the same callback type: errors include the
 * circuit failing or closing early, END before a complete answer, a
 * relay that refuses the stream, a timeout, or an answer over the limit.
 *
 * Layering: this uses only core (origin circuits, relay cells) and lib,
 * so feature/dir stays below the features that build client circuits.
 * The caller must have set up core's channels (channels_init), as the
 * daemon does; tools without channels keep fetching from DirPorts.
 */
#ifndef PCTOR_FEATURE_DIR_DIR_TUNNEL_H
#define PCTOR_FEATURE_DIR_DIR_TUNNEL_H
#include <stddef.h>
#include <stdint.h>

#include "core/or/circuit.h"
#include "feature/dir/dir_http.h"
#include "lib/evloop/evloop.h"

typedef struct dir_tunnel_req_t dir_tunnel_req_t;

/* Start GET path from relay (its address, RSA identity and, if known,
 * Ed25519 identity; the handshake is forced to CREATE_FAST). max_body
 * bounds the body before and after decompression; timeout_ms the whole
 * exchange. Never returns NULL: failures to start are reported through
 * the callback from the loop, never from inside this call. */
dir_tunnel_req_t *dir_tunnel_get(evloop_t *loop, const extend_target_t *relay,
                                 const char *path, size_t max_body,
                                 uint64_t timeout_ms, dir_http_done_fn cb,
                                 void *arg);
/* Abandon a request (no callback) and close its circuit. */
void dir_tunnel_cancel(dir_tunnel_req_t *req);

#endif
