/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.h -- one opaque connection type for everything pctor speaks over
 * TCP: TLS link connections to relays and clients, and (later) plain
 * connections (exit streams, SOCKS, HTTP directory).
 *
 * A conn_t owns its socket, its optional TLS object and two buf_t
 * buffers. Protocol code never touches sockets, events or TLS handles: it
 * gets a single callback with an event code, reads what arrived from
 * conn_inbuf(), appends to conn_outbuf() and calls conn_flush_soon().
 *
 * Events:
 *   CONN_EV_OPEN     TCP connected and, for TLS, the TLS handshake done
 *   CONN_EV_DATA     new bytes were appended to the inbuf
 *   CONN_EV_DRAINED  the outbuf went from above to at or below the
 *                    low-water mark set by conn_set_lowat()
 *   CONN_EV_EOF      the peer closed its side (inbuf may still hold data)
 *   CONN_EV_ERROR    connection failed or broke; conn_error() says why
 * After EOF or ERROR the owner must call conn_free() (possibly later).
 * Calling conn_free() or conn_close() from inside the callback is allowed.
 * Callbacks are only ever made from the event loop, never from inside a
 * conn_* call. There is no handshake or idle timeout here: owners that
 * need one run a timer and call conn_free().
 * Sockets are non-blocking, close-on-exec, TCP_NODELAY; writes never raise
 * SIGPIPE.
 */
#ifndef PCTOR_LIB_NET_CONN_H
#define PCTOR_LIB_NET_CONN_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "lib/buf/buf.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"
#include "lib/net/ratelimit.h"
#include "lib/tls/tls.h"

typedef struct conn_t conn_t;
typedef enum {
  CONN_EV_OPEN,
  CONN_EV_DATA,
  CONN_EV_DRAINED,
  CONN_EV_EOF,
  CONN_EV_ERROR,
} conn_event_t;
typedef void (*conn_cb_fn)(conn_t *c, conn_event_t ev, void *arg);

/* Start a non-blocking connect to addr; tls_ctx NULL means plain TCP.
 * Returns NULL (with *err set to a static string) only if the socket
 * cannot even be created; later failures arrive as CONN_EV_ERROR.
 * The socket is bound first to the outbound address of kind CONN_OUT_ANY
 * (conn_set_outbound_addr()) if one is set for addr's family. */
conn_t *conn_connect(evloop_t *loop, tls_context_t *tls_ctx,
                     const pc_addr_t *addr, conn_cb_fn cb, void *arg,
                     const char **err);

/* What an outgoing connection is for, to pick its local address (tor's
 * OutboundBindAddressOR, OutboundBindAddressExit and OutboundBindAddress,
 * which applies to all kinds without an address of their own). */
typedef enum {
  CONN_OUT_ANY = 0,
  CONN_OUT_OR,
  CONN_OUT_EXIT,
  CONN_OUT_N_KINDS
} conn_out_kind_t;
/* The local address (port ignored) that outgoing connections of kind
 * and a's family bind to; a with family AF_UNSPEC (or NULL with family
 * given) clears it. conn_clear_outbound_addrs() clears all. */
void conn_set_outbound_addr(conn_out_kind_t kind, int family,
                            const pc_addr_t *a);
void conn_clear_outbound_addrs(void);
/* conn_connect() for a connection of kind: bound to that kind's address
 * for addr's family, else CONN_OUT_ANY's, else not bound; never bound
 * for a loopback destination (as tor). A bind that
 * fails (the address is not on this host) fails the connection with
 * CONN_EV_ERROR and a warning naming the address. */
conn_t *conn_connect_kind(evloop_t *loop, tls_context_t *tls_ctx,
                          const pc_addr_t *addr, conn_out_kind_t kind,
                          conn_cb_fn cb, void *arg, const char **err);
/* Wrap an accepted socket (takes ownership of fd); TLS server side when
 * tls_ctx is non-NULL. */
conn_t *conn_new_accepted(evloop_t *loop, tls_context_t *tls_ctx, int fd,
                          const pc_addr_t *peer, conn_cb_fn cb, void *arg);
void conn_set_callback(conn_t *c, conn_cb_fn cb, void *arg);
buf_t *conn_inbuf(conn_t *c);
buf_t *conn_outbuf(conn_t *c);
/* Ask for the outbuf to be written out (batched: done from the loop).
 * Bytes appended without this call may wait until the next one. Only
 * append to the outbuf (never drain or pull it up): a TLS write that
 * could not finish is retried from the same bytes. */
void conn_flush_soon(conn_t *c);
/* Count both buffers' memory under a lib/malloc/memacct kind. */
void conn_set_memacct(conn_t *c, int kind);
/* Memory both buffers hold, and when their oldest byte arrived
 * (buf_oldest_us; UINT64_MAX when both are empty): for the OOM handler. */
size_t conn_buffered_alloc(const conn_t *c);
uint64_t conn_oldest_data_us(const conn_t *c);
/* Stop or resume reading (back-pressure). */
void conn_set_reading(conn_t *c, int enabled);
/* CONN_EV_DRAINED fires when the outbuf drops to <= lowat bytes
 * (default 0: when it empties). */
void conn_set_lowat(conn_t *c, size_t lowat);
/* Max bytes read per readiness event (fairness between connections). */
void conn_set_read_budget(conn_t *c, size_t bytes);
/* Bandwidth limits: reads and writes of c draw on the token buckets of
 * global and relay (lib/net/ratelimit.h), each may be NULL; NULL, NULL
 * (the default) means unlimited. The conn holds a reference to each group
 * until it is freed or the buckets are changed. May be called at any time
 * (e.g. once a link's peer is known to be a relay); a conn blocked under
 * the old buckets tries again from the loop. A conn that finds a bucket
 * empty stops reading (writing) until that bucket's next refill, which
 * resumes the blocked conns in the order they blocked. Counted bytes are
 * those moved between the buffers and the socket (TLS: plaintext; TLS
 * framing and handshakes are not counted). */
void conn_set_buckets(conn_t *c, ratelimit_t *global, ratelimit_t *relay);
/* Read priority under a bandwidth limit: when c blocks on an empty read
 * bucket it queues with priority fn(arg) (lower first; see
 * ratelimit_wait_prio()), so the owner can let its quietest connections
 * read first. NULL (the default): priority 0, FIFO. conn_close() forgets
 * fn and arg, as it forgets the callback. */
typedef double (*conn_prio_fn)(void *arg);
void conn_set_read_priority(conn_t *c, conn_prio_fn fn, void *arg);
/* TCP congestion control of c's socket (Linux TCP_CONGESTION, e.g.
 * "bbr"): 0, or -1 with errno set (ENOENT: not available; EPERM: not in
 * net.ipv4.tcp_allowed_congestion_control; ENOTSUP elsewhere). Setting
 * the algorithm the socket already uses changes nothing. */
int conn_set_congestion_control(conn_t *c, const char *name);
/* The bucket group every plain (non-TLS) connection made from now on
 * draws on, as tor's global BandwidthRate/Burst applies to exit, SOCKS and
 * directory connections too: conn_connect() and conn_new_accepted()
 * without TLS call conn_set_buckets(c, global, NULL) unless the peer's
 * address is private (or unknown) and count_private is 0 (tor's
 * CountPrivateBandwidth). TLS connections are left to their owner (link
 * channels choose global and relay buckets themselves). NULL: none. The
 * registry holds a reference to the group; connections already made keep
 * theirs (reconfigure the group in place to change their rate). Set at
 * start-up and on reload by the daemon; tests set it back to NULL. */
void conn_set_default_buckets(ratelimit_t *global, int count_private);

/* Running out of descriptors, one record for every consumer. accept() and
 * socket() failing with err call conn_note_fd_exhausted(err): for EMFILE
 * and ENFILE it stamps the time that conn_last_fd_exhausted() returns
 * (0: never; the extra-info's overload-fd-exhausted line reads it), and
 * for those and ENOBUFS/ENOMEM it tells the subscriber of
 * conn_set_fd_exhausted_hook() once per episode (a controller's
 * STATUS_GENERAL TOO_MANY_CONNECTIONS): the next report comes only after
 * an accept() or socket() succeeded. One subscriber: a different one is
 * refused with a warning (-1) while one is set; NULL removes it. */
void conn_note_fd_exhausted(int err);
time_t conn_last_fd_exhausted(void);
int conn_set_fd_exhausted_hook(void (*fn)(int err, void *arg), void *arg);
/* Hand the connection over to be closed: with flush_first, what is in
 * the outbuf is written first (bounded by a timeout), then the socket is
 * closed. No more callbacks are delivered and the conn frees itself; the
 * owner must forget its pointer after this call. */
void conn_close(conn_t *c, int flush_first);
/* Close at once and free; no callbacks. */
void conn_free_(conn_t *c);
#define conn_free(x) do { conn_free_(x); (x) = NULL; } while (0)
const pc_addr_t *conn_peer(const conn_t *c);
tls_conn_t *conn_tls(conn_t *c); /* NULL for plain connections */
int conn_fd(const conn_t *c);
const char *conn_error(const conn_t *c);
/* Totals since the connection was created. */
uint64_t conn_bytes_read(const conn_t *c);
uint64_t conn_bytes_written(const conn_t *c);
/* Process-wide totals of bytes read and written by every connection
 * except those marked conn_set_counted(c, 0) (local services such as a
 * ControlPort, whose own traffic would otherwise feed its byte counts). */
void conn_set_counted(conn_t *c, int counted);
void conn_get_totals(uint64_t *bytes_read, uint64_t *bytes_written);

/* A listening TCP socket; accept_cb gets each new fd (non-blocking,
 * close-on-exec) and the peer's address. */
typedef struct listener_t listener_t;
typedef void (*listener_cb_fn)(int fd, const pc_addr_t *peer, void *arg);
/* Whether this host can make IPv6 sockets at all (a kernel without IPv6,
 * or booted with ipv6.disable=1, cannot): 1, or 0 with *err set to a
 * static string. */
int listener_ipv6_available(const char **err);
listener_t *listener_new(evloop_t *loop, const pc_addr_t *bind_addr,
                         listener_cb_fn cb, void *arg, const char **err);
/* A listening unix-domain socket at path with permissions mode (an old
 * socket file of that name is replaced; other files are not). Accepted
 * connections get a peer address of family AF_UNSPEC. listener_addr()
 * of it has family AF_UNSPEC too. */
listener_t *listener_new_unix(evloop_t *loop, const char *path,
                              unsigned mode, listener_cb_fn cb, void *arg,
                              const char **err);
/* The address actually bound (port filled in when 0 was asked). */
const pc_addr_t *listener_addr(const listener_t *l);
void listener_free_(listener_t *l);
/* A listener that cannot accept for want of descriptors or memory
 * pauses accepting for a while (and reports it: conn_note_fd_exhausted). */
/* How many file descriptors the process has open (probed below the soft
 * RLIMIT_NOFILE, at most 1 << 20; for rare reports, not per packet). */
unsigned conn_count_open_fds(void);
#define listener_free(x) do { listener_free_(x); (x) = NULL; } while (0)
#endif
