/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c -- TLS link connections over OpenSSL 3 (see tls.h).
 *
 * Design:
 *  - One SSL_CTX per tls_context_t serves both roles (TLS_method()); the
 *    role is chosen per connection with SSL_set_accept_state() or
 *    SSL_set_connect_state(). TLS 1.2 is the minimum. Nothing is verified
 *    (SSL_VERIFY_NONE): Tor authenticates peers with CERTS/AUTHENTICATE
 *    cells, using the peer certificate and the RFC 5705 exporter we expose.
 *  - The link key is a fresh RSA-2048 key, like tor's. An ECDSA P-256 key
 *    would be faster to generate and sign with, but a link certificate
 *    unlike every other relay's would make pctor stand out on the wire and
 *    in tor's checks of the RSA-only path; the key is made once per context
 *    (i.e. per link-key rotation), so its ~0.1 s cost does not matter.
 *    The certificate is self-signed (which tells tor initiators that this
 *    responder speaks the in-protocol "v3" handshake, tor-spec section 2),
 *    with CN "www.<random base32>.net" so it names nothing, and is valid
 *    from a day ago (clock skew) for lifetime_days.
 *  - Options: no renegotiation, no compression, no session tickets or
 *    session cache (every link is a fresh handshake in Tor), partial writes
 *    and moving write buffers (the caller writes straight from a buf_t
 *    chunk and may retry from a different address), EOF without
 *    close_notify reported as a clean close (many peers just close), and
 *    read-ahead so that one read(2) can bring in several small records.
 *    Because of read-ahead, undecrypted bytes can sit inside OpenSSL while
 *    the socket is no longer readable: tls_conn_pending() reports those
 *    too, so the caller keeps reading without waiting for readiness.
 *  - The socket is attached through a minimal BIO of our own that writes
 *    with send(MSG_NOSIGNAL): OpenSSL's stock socket BIO uses write(2),
 *    which raises SIGPIPE when the peer has gone, and a library should not
 *    need the whole process to ignore that signal. The method table is
 *    built once and never changes.
 *  - OpenSSL's error queue is cleared before an operation only when it is
 *    not empty (checking is cheap, clearing is not), and always drained
 *    into the connection's last-error string after a failure.
 */
#include "lib/tls/tls.h"

#include <errno.h>
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/tls_cert.h"

#define TLS_LINK_KEY_BITS 2048
#define TLS_MAX_LIFETIME_DAYS 3650

struct tls_context_t {
  SSL_CTX *ctx;
  uint8_t *cert_der;
  size_t cert_der_len;
};

/* What the socket BIO knows: its fd, and whether its last read came back
 * short (the kernel had no more bytes then). */
typedef struct sockbio_state_t {
  int fd;
  int drained;
} sockbio_state_t;

struct tls_conn_t {
  SSL *ssl;
  sockbio_state_t sock;
  char err[160];
  char desc[96];
};

/* Fill buf with "www.<8-20 random base32 characters>.net". */
static void
random_hostname(char *buf, size_t buflen)
{
  static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
  unsigned char r[21];
  if (RAND_bytes(r, sizeof(r)) != 1)
    memset(r, 0x5a, sizeof(r)); /* only a disguise; never fails in practice */
  size_t n = 8 + r[0] % 13, pos = 0;
  pos += (size_t)snprintf(buf, buflen, "www.");
  for (size_t i = 0; i < n && pos + 5 < buflen; i++)
    buf[pos++] = b32[r[1 + i] & 31];
  snprintf(buf + pos, buflen - pos, ".net");
}

static void
log_ssl_error(const char *what)
{
  char msg[160];
  unsigned long e = ERR_get_error();
  if (e)
    ERR_error_string_n(e, msg, sizeof(msg));
  else
    snprintf(msg, sizeof(msg), "unknown error");
  ERR_clear_error();
  log_warn("TLS: %s failed: %s", what, msg);
}

tls_context_t *
tls_context_new(int lifetime_days)
{
  SSL_CTX *ctx = NULL;
  EVP_PKEY *pkey = NULL;
  X509 *cert = NULL;
  tls_context_t *tc = NULL;
  char cn[40];

  if (lifetime_days < 1 || lifetime_days > TLS_MAX_LIFETIME_DAYS) {
    log_warn("TLS: certificate lifetime of %d days is out of range",
             lifetime_days);
    return NULL;
  }
  pkey = EVP_RSA_gen(TLS_LINK_KEY_BITS);
  if (!pkey) {
    log_ssl_error("link key generation");
    goto err;
  }
  random_hostname(cn, sizeof(cn));
  time_t now = time(NULL);
  cert = tls_cert_make_self_signed_(pkey, cn, now - 86400,
                                    now + (time_t)lifetime_days * 86400);
  if (!cert)
    goto err;

  ctx = SSL_CTX_new(TLS_method());
  if (!ctx) {
    log_ssl_error("SSL_CTX_new");
    goto err;
  }
  if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
    log_ssl_error("setting the minimum TLS version");
    goto err;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_NO_TICKET |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_num_tickets(ctx, 0);
  if (tls_ctx_set_identity_(ctx, cert, pkey) < 0) {
    log_ssl_error("installing the link certificate");
    goto err;
  }
  tc = pc_zalloc(sizeof(*tc));
  if (tls_cert_to_der_(cert, &tc->cert_der, &tc->cert_der_len) < 0) {
    log_ssl_error("encoding the link certificate");
    free(tc);
    tc = NULL;
    goto err;
  }
  tc->ctx = ctx;
  X509_free(cert);
  EVP_PKEY_free(pkey);
  log_info("TLS: new link certificate for \"%s\", valid %d days", cn,
           lifetime_days);
  return tc;
err:
  SSL_CTX_free(ctx);
  X509_free(cert);
  EVP_PKEY_free(pkey);
  return NULL;
}

void
tls_context_free_(tls_context_t *ctx)
{
  if (!ctx)
    return;
  /* Connections made from it hold their own reference to the SSL_CTX. */
  SSL_CTX_free(ctx->ctx);
  free(ctx->cert_der);
  free(ctx);
}

SSL_CTX *
tls_context_ssl_ctx_(const tls_context_t *ctx)
{
  return ctx->ctx;
}

const uint8_t *
tls_context_cert_der(const tls_context_t *ctx, size_t *len)
{
  *len = ctx->cert_der_len;
  return ctx->cert_der;
}

/* ---- the socket BIO ----
 * The BIO's data pointer (BIO_set_data()) is the connection's
 * sockbio_state_t, which lives as long as the SSL object; the BIO never
 * closes the fd. EOF is remembered in BIO_FLAGS_IN_EOF because libssl asks
 * BIO_eof() to tell a clean EOF from a transient failure. A read that
 * returns fewer bytes than asked for marks the state drained, so that the
 * caller can stop reading without one more read(2) that would only say
 * EAGAIN (see tls_conn_drained()). */

static int
sockbio_fd(BIO *b)
{
  return ((sockbio_state_t *)BIO_get_data(b))->fd;
}

static int
sockbio_retriable(int e)
{
  return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == EINPROGRESS ||
         e == EALREADY || e == ENOTCONN;
}

static int
sockbio_write(BIO *b, const char *data, int len)
{
  errno = 0;
  ssize_t n = send(sockbio_fd(b), data, (size_t)len, MSG_NOSIGNAL);
  BIO_clear_retry_flags(b);
  if (n <= 0 && sockbio_retriable(errno))
    BIO_set_retry_write(b);
  return (int)n;
}

static int
sockbio_read(BIO *b, char *out, int len)
{
  if (!out)
    return 0;
  errno = 0;
  sockbio_state_t *st = BIO_get_data(b);
  ssize_t n = read(st->fd, out, (size_t)len);
  st->drained = n < (ssize_t)len;
  BIO_clear_retry_flags(b);
  if (n == 0)
    BIO_set_flags(b, BIO_FLAGS_IN_EOF);
  else if (n < 0 && sockbio_retriable(errno))
    BIO_set_retry_read(b);
  return (int)n;
}

static int
sockbio_puts(BIO *b, const char *str)
{
  return sockbio_write(b, str, (int)strlen(str));
}

static long
sockbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
  (void)num;
  switch (cmd) {
  case BIO_C_GET_FD:
    if (ptr)
      *(int *)ptr = sockbio_fd(b);
    return sockbio_fd(b);
  case BIO_CTRL_EOF:
    return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
  case BIO_CTRL_FLUSH:
  case BIO_CTRL_DUP:
    return 1;
  case BIO_CTRL_GET_CLOSE:
    return BIO_NOCLOSE;
  case BIO_CTRL_SET_CLOSE:
    return 1;
  default:
    return 0; /* PENDING, WPENDING, kTLS queries, ...: nothing */
  }
}

static int
sockbio_create(BIO *b)
{
  BIO_set_init(b, 1);
  return 1;
}

static int
sockbio_destroy(BIO *b)
{
  (void)b;
  return 1;
}

static BIO_METHOD *sockbio_method;

static BIO *
sockbio_new(sockbio_state_t *st)
{
  if (!sockbio_method) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
                                     BIO_TYPE_DESCRIPTOR,
                                 "pctor socket");
    if (!m || !BIO_meth_set_write(m, sockbio_write) ||
        !BIO_meth_set_read(m, sockbio_read) ||
        !BIO_meth_set_puts(m, sockbio_puts) ||
        !BIO_meth_set_ctrl(m, sockbio_ctrl) ||
        !BIO_meth_set_create(m, sockbio_create) ||
        !BIO_meth_set_destroy(m, sockbio_destroy)) {
      BIO_meth_free(m);
      return NULL;
    }
    sockbio_method = m;
  }
  BIO *b = BIO_new(sockbio_method);
  if (b)
    BIO_set_data(b, st);
  return b;
}

tls_conn_t *
tls_conn_new(tls_context_t *ctx, int fd, int is_server)
{
  tls_conn_t *t = pc_zalloc(sizeof(*t));
  t->sock.fd = fd;
  SSL *ssl = SSL_new(ctx->ctx);
  BIO *bio = ssl ? sockbio_new(&t->sock) : NULL;
  if (!bio) {
    log_ssl_error("SSL_new");
    SSL_free(ssl);
    free(t);
    return NULL;
  }
  SSL_set_bio(ssl, bio, bio); /* ssl takes our one reference */
  if (is_server)
    SSL_set_accept_state(ssl);
  else
    SSL_set_connect_state(ssl);
  t->ssl = ssl;
  return t;
}

void
tls_conn_free_(tls_conn_t *t)
{
  if (!t)
    return;
  SSL_free(t->ssl);
  free(t);
}

static inline void
clear_errors(void)
{
  if (ERR_peek_error())
    ERR_clear_error();
}

/* Map a failed SSL_* call (return value ret) to a TLS_* code, recording
 * the reason in t->err when it is an error or a close. */
static int
map_error(tls_conn_t *t, int ret, int saved_errno)
{
  int e = SSL_get_error(t->ssl, ret);
  unsigned long qe;
  switch (e) {
  case SSL_ERROR_WANT_READ:
    return TLS_WANT_READ;
  case SSL_ERROR_WANT_WRITE:
    return TLS_WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN:
    snprintf(t->err, sizeof(t->err), "connection closed by peer");
    return TLS_CLOSED;
  case SSL_ERROR_SYSCALL:
    qe = ERR_get_error();
    if (qe) {
      ERR_error_string_n(qe, t->err, sizeof(t->err));
      ERR_clear_error();
      return TLS_ERROR;
    }
    if (saved_errno == 0) {
      snprintf(t->err, sizeof(t->err), "connection closed by peer");
      return TLS_CLOSED;
    }
    snprintf(t->err, sizeof(t->err), "%s", strerror(saved_errno));
    return TLS_ERROR;
  case SSL_ERROR_SSL:
  default:
    qe = ERR_get_error();
    if (qe)
      ERR_error_string_n(qe, t->err, sizeof(t->err));
    else
      snprintf(t->err, sizeof(t->err), "TLS error %d", e);
    ERR_clear_error();
    return TLS_ERROR;
  }
}

int
tls_conn_handshake(tls_conn_t *t)
{
  clear_errors();
  errno = 0;
  int r = SSL_do_handshake(t->ssl);
  if (r == 1)
    return TLS_OK;
  int code = map_error(t, r, errno);
  if (code == TLS_CLOSED)
    snprintf(t->err, sizeof(t->err), "connection closed during handshake");
  return code;
}

ssize_t
tls_conn_read(tls_conn_t *t, uint8_t *out, size_t len)
{
  size_t n = 0;
  clear_errors();
  errno = 0;
  if (SSL_read_ex(t->ssl, out, len, &n) == 1 && n > 0)
    return (ssize_t)(n > SSIZE_MAX ? SSIZE_MAX : n);
  return map_error(t, 0, errno);
}

ssize_t
tls_conn_write(tls_conn_t *t, const uint8_t *data, size_t len)
{
  size_t n = 0;
  if (len == 0)
    return 0; /* nothing to do; not an error */
  clear_errors();
  errno = 0;
  if (SSL_write_ex(t->ssl, data, len, &n) == 1 && n > 0)
    return (ssize_t)n;
  return map_error(t, 0, errno);
}

int
tls_conn_shutdown(tls_conn_t *t)
{
  clear_errors();
  errno = 0;
  int r = SSL_shutdown(t->ssl);
  if (r >= 0)
    return TLS_OK; /* close_notify sent (0) or already exchanged (1) */
  return map_error(t, r, errno);
}

size_t
tls_conn_pending(const tls_conn_t *t)
{
  int n = SSL_pending(t->ssl);
  if (n > 0)
    return (size_t)n;
  return SSL_has_pending(t->ssl) ? 1 : 0;
}

int
tls_conn_drained(const tls_conn_t *t)
{
  return t->sock.drained && !SSL_has_pending(t->ssl) &&
         SSL_pending(t->ssl) <= 0;
}

int
tls_conn_peer_cert_der(const tls_conn_t *t, uint8_t **der, size_t *len)
{
  return tls_ssl_peer_cert_der_(t->ssl, der, len);
}

int
tls_conn_own_cert_der(const tls_conn_t *t, uint8_t **der, size_t *len)
{
  return tls_ssl_own_cert_der_(t->ssl, der, len);
}

int
tls_conn_export_key(tls_conn_t *t, uint8_t *out, size_t outlen,
                    const char *label, const uint8_t *context,
                    size_t contextlen)
{
  return tls_ssl_export_key_(t->ssl, out, outlen, label, context, contextlen,
                             t->err, sizeof(t->err));
}

const char *
tls_conn_last_error(const tls_conn_t *t)
{
  return t->err[0] ? t->err : "no error";
}

const char *
tls_conn_describe(const tls_conn_t *t)
{
  snprintf(((tls_conn_t *)t)->desc, sizeof(t->desc), "%s %s",
           SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl));
  return t->desc;
}
