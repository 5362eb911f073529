/* SPDX-License-Identifier: BSD-3-Clause */
/* dtls.h -- DTLS 1.2 sessions over datagrams the caller carries (OpenSSL).
 *
 * The datagram link layer (feature/dgram) runs one DTLS 1.2 session per
 * pair of relays over one UDP socket. This module knows nothing about
 * sockets or addresses: the caller hands each received datagram to the
 * session (or to the listener) and gets the datagrams to send through an
 * output callback, one call per datagram. That keeps OpenSSL here, makes
 * the sessions testable without sockets, and lets one socket serve every
 * peer.
 *
 * Design:
 *  - The DTLS context presents the link certificate of a tls_context_t (the
 *    TLS context whose certificate CERTS type 5 certifies), so the peer can
 *    check the server's certificate exactly as in the TLS link handshake.
 *    Nothing is verified by OpenSSL: the upper layer authenticates both
 *    sides with Tor's certificates inside the session, bound to it through
 *    the RFC 5705 exporter (dtls_conn_export_key).
 *  - Cookies (RFC 6347 4.2.1): dtls_listen() runs DTLSv1_listen on one
 *    reusable SSL object. A ClientHello without a valid cookie is answered
 *    with a HelloVerifyRequest and forgotten: no per-source state exists
 *    until a ClientHello returns with the cookie. A cookie is
 *    HMAC-SHA256(secret, epoch || the caller's peer id) truncated to 16
 *    bytes; the epoch changes every DTLS_COOKIE_EPOCH_SEC and the previous
 *    epoch's cookies are still accepted. Only then does dtls_listen hand out
 *    a session (which already consumed the ClientHello).
 *  - Datagrams: DTLS records are never merged. Each write from OpenSSL is
 *    one datagram for the caller; the path MTU is fixed at DTLS_LINK_MTU
 *    (no PMTU discovery), so handshake flights are fragmented to fit.
 *  - Timers: the handshake's retransmission timer is OpenSSL's
 *    (DTLSv1_get_timeout / DTLSv1_handle_timeout); the caller asks
 *    dtls_conn_timeout_us() after every operation and arms its own timer.
 *  - Replayed, forged and truncated records are discarded inside OpenSSL
 *    (record MAC, replay window); dtls_conn_read() then returns
 *    TLS_WANT_READ, which the caller counts.
 */
#ifndef PCTOR_LIB_TLS_DTLS_H
#define PCTOR_LIB_TLS_DTLS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/tls/tls.h"

/* Largest datagram DTLS writes: IPv6's minimum MTU (1280) less the IPv6
 * and UDP headers, so that no path fragments it. */
#define DTLS_LINK_MTU 1232
#define DTLS_COOKIE_EPOCH_SEC 60
/* Longest peer id a cookie can be bound to (an address family, address
 * and port fit). */
#define DTLS_PEER_ID_MAX 32

typedef struct dtls_context_t dtls_context_t;
typedef struct dtls_conn_t dtls_conn_t;

/* Called once per datagram a session (or the listener) wants sent. */
typedef void (*dtls_output_fn)(void *arg, const uint8_t *dgram, size_t len);

/* A DTLS 1.2 context presenting link's certificate and key, with a fresh
 * random cookie secret. NULL on failure (logged). link must outlive it. */
dtls_context_t *dtls_context_new(const tls_context_t *link);
void dtls_context_free_(dtls_context_t *ctx);
#define dtls_context_free(x) do { dtls_context_free_(x); (x) = NULL; } while (0)

/* What dtls_listen() did with a datagram from an address that has no
 * session. */
typedef enum {
  DTLS_LISTEN_DROPPED = 0, /* not a ClientHello, or malformed: ignored */
  DTLS_LISTEN_VERIFY = 1,  /* answered with a HelloVerifyRequest (through
                            * out), nothing kept */
  DTLS_LISTEN_ACCEPT = 2,  /* the cookie was valid: *conn_out is a new
                            * server session that consumed the datagram;
                            * continue with dtls_conn_handshake() */
} dtls_listen_result_t;
/* Stateless cookie exchange for one datagram from the peer identified by
 * peer_id (the caller's encoding of its address and port, at most
 * DTLS_PEER_ID_MAX bytes). The new session's output goes to out/out_arg
 * until dtls_conn_set_output() changes it. */
dtls_listen_result_t dtls_listen(dtls_context_t *ctx, const uint8_t *peer_id,
                                 size_t peer_id_len, const uint8_t *dgram,
                                 size_t len, dtls_output_fn out,
                                 void *out_arg, dtls_conn_t **conn_out);

/* Could dgram be a record carrying a ClientHello (RFC 6347 4.1, 4.2.2)?
 * Content type handshake, version DTLS 1.x (0xfeXX), epoch 0, a length
 * that fits, handshake type client_hello. A cheap check, before any
 * OpenSSL work. */
int dtls_is_client_hello(const uint8_t *dgram, size_t len);

/* A client session; call dtls_conn_handshake() to send the ClientHello. */
dtls_conn_t *dtls_conn_new_client(dtls_context_t *ctx, dtls_output_fn out,
                                  void *out_arg);
void dtls_conn_set_output(dtls_conn_t *c, dtls_output_fn out, void *out_arg);
void dtls_conn_free_(dtls_conn_t *c);
#define dtls_conn_free(x) do { dtls_conn_free_(x); (x) = NULL; } while (0)

/* Make dgram the datagram the next handshake or read step consumes (the
 * pointer is borrowed until then; unconsumed input is dropped by the next
 * call to dtls_conn_input()). */
void dtls_conn_input(dtls_conn_t *c, const uint8_t *dgram, size_t len);
/* Drive the handshake: TLS_OK once complete, TLS_WANT_READ while waiting,
 * TLS_ERROR or TLS_CLOSED when it failed (dtls_conn_last_error()). */
int dtls_conn_handshake(dtls_conn_t *c);
int dtls_conn_is_established(const dtls_conn_t *c);
/* One decrypted record into out: > 0 bytes, TLS_WANT_READ if the input
 * held none (or was discarded), TLS_CLOSED on close_notify, TLS_ERROR, or
 * DTLS_OVERSIZE for a record longer than outlen (discarded). */
#define DTLS_OVERSIZE (-5)
ssize_t dtls_conn_read(dtls_conn_t *c, uint8_t *out, size_t outlen);
/* Send data as one record (one datagram): 0, or TLS_ERROR. */
int dtls_conn_write(dtls_conn_t *c, const uint8_t *data, size_t len);
/* The most plaintext one record can carry within DTLS_LINK_MTU (known
 * once the cipher is; a conservative value before). */
size_t dtls_conn_max_record(const dtls_conn_t *c);
/* 1 and *usec until the handshake's retransmission timer fires, or 0 when
 * no timer runs. */
int dtls_conn_timeout_us(dtls_conn_t *c, uint64_t *usec);
/* The timer fired: retransmit the last flight. 0, or -1 when the
 * handshake gave up (too many retransmissions). */
int dtls_conn_handle_timeout(dtls_conn_t *c);
/* Send close_notify (best effort). */
void dtls_conn_shutdown(dtls_conn_t *c);
/* As tls_conn_peer_cert_der() etc. */
int dtls_conn_peer_cert_der(const dtls_conn_t *c, uint8_t **der, size_t *len);
int dtls_conn_own_cert_der(const dtls_conn_t *c, uint8_t **der, size_t *len);
int dtls_conn_export_key(dtls_conn_t *c, uint8_t *out, size_t outlen,
                         const char *label, const uint8_t *context,
                         size_t contextlen);
const char *dtls_conn_last_error(const dtls_conn_t *c);
const char *dtls_conn_describe(dtls_conn_t *c);
#endif
