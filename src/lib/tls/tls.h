/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.h -- TLS for Tor link connections, over OpenSSL (libssl).
 *
 * Tor authenticates relays inside the link protocol (CERTS/AUTHENTICATE
 * cells), not through TLS certificate chains, so TLS here only needs:
 * a context holding a link certificate (a fresh key and self-signed
 * X.509 certificate, whose SHA-256 a CERTS type-5 certificate binds), no
 * peer verification, TLS >= 1.2, and access to the peer's certificate and
 * to the RFC 5705 exporter (for AUTHENTICATE method 3).
 *
 * tls_conn_t works on a non-blocking socket; reads and writes report
 * TLS_WANT_READ/TLS_WANT_WRITE like OpenSSL, and the caller (lib/net/conn)
 * maps them onto event-loop interest.
 */
#ifndef PCTOR_LIB_TLS_TLS_H
#define PCTOR_LIB_TLS_TLS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct tls_context_t tls_context_t;
typedef struct tls_conn_t tls_conn_t;

enum {
  TLS_OK = 0,
  TLS_WANT_READ = -1,
  TLS_WANT_WRITE = -2,
  TLS_CLOSED = -3, /* clean close_notify or EOF */
  TLS_ERROR = -4,
};

/* A context usable for both accepting and initiating, with a freshly
 * generated link key and self-signed certificate valid for
 * lifetime_days. NULL on failure (logged). */
tls_context_t *tls_context_new(int lifetime_days);
void tls_context_free_(tls_context_t *ctx);
#define tls_context_free(x) do { tls_context_free_(x); (x) = NULL; } while (0)
/* DER of our link certificate (borrowed, lives as long as ctx). */
const uint8_t *tls_context_cert_der(const tls_context_t *ctx, size_t *len);

/* Wrap a connected non-blocking socket (ownership of fd stays with the
 * caller). */
tls_conn_t *tls_conn_new(tls_context_t *ctx, int fd, int is_server);
void tls_conn_free_(tls_conn_t *t);
#define tls_conn_free(x) do { tls_conn_free_(x); (x) = NULL; } while (0)
/* Drive the handshake: TLS_OK when done, else TLS_WANT_READ,
 * TLS_WANT_WRITE, TLS_CLOSED or TLS_ERROR. */
int tls_conn_handshake(tls_conn_t *t);
/* Read up to len bytes: returns > 0 bytes, or a TLS_* code (never 0). */
ssize_t tls_conn_read(tls_conn_t *t, uint8_t *out, size_t len);
/* Write up to len bytes: returns > 0 bytes written, or a TLS_* code
 * (TLS_OK, i.e. 0, only when len is 0).
 * After WANT_*, retry with the same data (pointer may differ, content
 * and length must not shrink). */
ssize_t tls_conn_write(tls_conn_t *t, const uint8_t *data, size_t len);
/* Decrypted bytes already buffered inside the TLS object; also nonzero
 * (1) when only undecrypted read-ahead bytes are buffered. In both cases
 * tls_conn_read() may return data although the socket is not readable. */
size_t tls_conn_pending(const tls_conn_t *t);
/* 1 if the last read from the socket returned fewer bytes than OpenSSL
 * asked for (the kernel had nothing more then) and OpenSSL holds nothing
 * unread: a caller reading until TLS_WANT_READ may stop here and wait for
 * readiness, saving a read(2) that would fail with EAGAIN. */
int tls_conn_drained(const tls_conn_t *t);
/* Send close_notify (once, best effort, non-blocking): TLS_OK or a TLS_*
 * code. */
int tls_conn_shutdown(tls_conn_t *t);
/* DER of the peer's certificate into a new buffer; -1 if none. */
int tls_conn_peer_cert_der(const tls_conn_t *t, uint8_t **der, size_t *len);
/* DER of the certificate this connection presents (ours), into a new
 * buffer; -1 if none. Unlike tls_context_cert_der() it stays right for
 * older connections after the owner switched to a new context. */
int tls_conn_own_cert_der(const tls_conn_t *t, uint8_t **der, size_t *len);
/* RFC 5705 keying material exporter (after the handshake); context NULL
 * means "no context", which differs from an empty one in TLS 1.2.
 * Returns 0 or -1. */
int tls_conn_export_key(tls_conn_t *t, uint8_t *out, size_t outlen,
                        const char *label, const uint8_t *context,
                        size_t contextlen);
/* Description of the last error (for logs). */
const char *tls_conn_last_error(const tls_conn_t *t);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" style, for logs. */
const char *tls_conn_describe(const tls_conn_t *t);
#endif
