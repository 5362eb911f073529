/* SPDX-License-Identifier: BSD-3-Clause */
/* dirport.h -- the DirPort: the documents dircache serves over BEGIN_DIR,
 * answered to plain HTTP/1.0 GET requests on a TCP port, as tor's
 * DirPort (dir-spec 6; tor's syntax "DirPort [ADDRESS:]PORT [FLAGS]").
 *
 * The answers are dircache's (dircache_request_t): the same providers,
 * encodings, per-request document cap (503) and memory accounting
 * (MEMACCT_DIRCACHE). What a TCP client can make the relay hold is
 * bounded here:
 *   - at most DIRPORT_MAX_CONNECTIONS connections at once, and
 *     DIRPORT_MAX_PER_ADDR from one address (more are closed at accept);
 *   - the whole request must arrive within the request timeout
 *     (DIRPORT_REQUEST_TIMEOUT_USEC; a client that trickles bytes is
 *     answered "408 Request timeout" and closed), and is at most
 *     DIR_REQUEST_MAX bytes (else 400); reading stops once the answer is
 *     chosen;
 *   - the answer goes into the connection's output buffer in pieces of
 *     at most DIRPORT_CHUNK bytes, each added when the previous drained,
 *     straight from the shared document; a client that does not read for
 *     the idle timeout (DIRCACHE_IDLE_TIMEOUT_USEC) is closed.
 * One request per connection (HTTP/1.0, no keep-alive). The connection's
 * buffers are counted in MEMACCT_DIRCACHE and its traffic draws on the
 * global bandwidth buckets, as other plain connections.
 */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRPORT_H
#define PCTOR_FEATURE_DIRCACHE_DIRPORT_H
#include <stdint.h>

#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

#define DIRPORT_MAX_LISTENERS 4
#define DIRPORT_MAX_CONNECTIONS 256
#define DIRPORT_MAX_PER_ADDR 16
#define DIRPORT_REQUEST_TIMEOUT_USEC (10ULL * 1000000)
#define DIRPORT_CHUNK 16384

/* Open a DirPort listener on addr. 0, or -1 with *err_out set (newly
 * allocated). bound (may be NULL) gets the address bound. */
int dirport_listen(evloop_t *loop, const pc_addr_t *addr, pc_addr_t *bound,
                   char **err_out);
/* DirPortFrontPage: serve the file at path (at most
 * DIRPORT_FRONT_PAGE_MAX bytes, read now) as text/html at "/". 0, or -1
 * with *err_out set (newly allocated). */
#define DIRPORT_FRONT_PAGE_MAX (1024 * 1024)
int dirport_set_front_page(const char *path, char **err_out);
/* Close every listener and connection; forget the front page. */
void dirport_shutdown(void);
/* Close the listeners only (tor's soft and hard hibernation): the
 * connections already accepted are answered and closed as usual, each
 * within its own timeouts. dirport_listen() opens them again. */
void dirport_close_listeners(void);
/* Tests: other timeouts (0 keeps the default). */
void dirport_set_timeouts_for_testing(uint64_t request_usec,
                                      uint64_t idle_usec);

typedef struct dirport_stats_t {
  uint64_t n_accepted, n_refused; /* refused: over a connection limit */
  uint64_t n_timed_out;           /* request or idle timeout */
  uint64_t n_answered;            /* answers sent whole */
  unsigned n_open;
} dirport_stats_t;
void dirport_get_stats(dirport_stats_t *out);
#endif
