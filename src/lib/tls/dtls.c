/* SPDX-License-Identifier: BSD-3-Clause */
/* dtls.c -- DTLS 1.2 sessions over caller-carried datagrams (see dtls.h).
 *
 * Design:
 *  - Every session (and the listener) sits on a small BIO of our own:
 *    reading returns the one datagram the caller handed in with
 *    dtls_conn_input() (then "retry"), writing passes each buffer OpenSSL
 *    writes to the output callback as one datagram. OpenSSL never sees a
 *    socket or an address; the datagram-specific controls it asks the BIO
 *    (MTU, peer address, timeouts) get fixed answers, and the MTU is set
 *    on each SSL object instead (SSL_OP_NO_QUERY_MTU).
 *  - The listener is one SSL object reused for every unknown source: on a
 *    valid cookie it becomes that peer's session and a new one is made on
 *    the next ClientHello. Cookies are bound to the peer id the caller
 *    gives (also kept in the session: OpenSSL checks the cookie a second
 *    time when the session processes the buffered ClientHello).
 *  - A datagram that cannot be a DTLS 1.x ClientHello record (content type,
 *    version, epoch 0, length) is refused before OpenSSL sees it, so a
 *    flood of garbage costs a few comparisons.
 */
#include "lib/tls/dtls.h"

#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/tls_cert.h"

#define COOKIE_LEN 16
#define RECORD_HEADER_LEN 13

struct dtls_context_t {
  SSL_CTX *ctx;
  uint8_t cookie_secret[32];
  dtls_conn_t *listener; /* reused until a cookie comes back */
  BIO_ADDR *listen_addr; /* DTLSv1_listen wants one; never meaningful */
};

struct dtls_conn_t {
  SSL *ssl;
  dtls_context_t *owner;
  const uint8_t *in; /* the datagram the next step reads, or NULL */
  size_t in_len;
  dtls_output_fn out;
  void *out_arg;
  uint8_t peer_id[DTLS_PEER_ID_MAX];
  size_t peer_id_len;
  int established;
  unsigned writes; /* datagrams written (the listener's answer) */
  char err[160];
  char desc[96];
};

/* ---- the datagram BIO ---- */

static BIO_METHOD *bio_method;

static int
dbio_write(BIO *b, const char *data, int len)
{
  dtls_conn_t *c = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (len > 0 && c) {
    c->writes++;
    if (c->out)
      c->out(c->out_arg, (const uint8_t *)data, (size_t)len);
  }
  return len;
}

static int
dbio_read(BIO *b, char *out, int outl)
{
  dtls_conn_t *c = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (!c || !c->in) {
    BIO_set_retry_read(b);
    return -1;
  }
  size_t n = c->in_len < (size_t)outl ? c->in_len : (size_t)outl;
  memcpy(out, c->in, n);
  c->in = NULL;
  c->in_len = 0;
  return (int)n;
}

static long
dbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
  (void)b;
  (void)num;
  (void)ptr;
  switch (cmd) {
  case BIO_CTRL_FLUSH:
  case BIO_CTRL_DGRAM_SET_PEEK_MODE:
    return 1;
  case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD:
    return 48; /* IPv6 + UDP */
  case BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
  case BIO_CTRL_DGRAM_QUERY_MTU:
    return DTLS_LINK_MTU;
  default:
    return 0; /* peer address, timeouts, pending bytes: none */
  }
}

static int
dbio_create(BIO *b)
{
  BIO_set_init(b, 1);
  return 1;
}

static BIO_METHOD *
get_bio_method(void)
{
  if (!bio_method) {
    bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                              "pctor datagram");
    if (!bio_method || !BIO_meth_set_write(bio_method, dbio_write) ||
        !BIO_meth_set_read(bio_method, dbio_read) ||
        !BIO_meth_set_ctrl(bio_method, dbio_ctrl) ||
        !BIO_meth_set_create(bio_method, dbio_create)) {
      log_err("DTLS: cannot make the datagram BIO method");
      abort();
    }
  }
  return bio_method;
}

/* ---- cookies ---- */

static void
make_cookie(const dtls_context_t *ctx, const dtls_conn_t *c, uint32_t epoch,
            uint8_t out[COOKIE_LEN])
{
  uint8_t msg[4 + DTLS_PEER_ID_MAX];
  uint8_t mac[DIGEST_SHA256_LEN];
  set_u32(msg, epoch);
  memcpy(msg + 4, c->peer_id, c->peer_id_len);
  crypt_hmac_sha256(mac, ctx->cookie_secret, sizeof(ctx->cookie_secret),
                    msg, 4 + c->peer_id_len);
  memcpy(out, mac, COOKIE_LEN);
}

static uint32_t
cookie_epoch(void)
{
  return (uint32_t)(time(NULL) / DTLS_COOKIE_EPOCH_SEC);
}

static int
cookie_generate_cb(SSL *ssl, unsigned char *cookie, unsigned int *len)
{
  dtls_conn_t *c = SSL_get_app_data(ssl);
  if (!c)
    return 0;
  make_cookie(c->owner, c, cookie_epoch(), cookie);
  *len = COOKIE_LEN;
  return 1;
}

static int
cookie_verify_cb(SSL *ssl, const unsigned char *cookie, unsigned int len)
{
  dtls_conn_t *c = SSL_get_app_data(ssl);
  uint8_t want[COOKIE_LEN];
  if (!c || len != COOKIE_LEN)
    return 0;
  uint32_t e = cookie_epoch();
  for (int back = 0; back < 2; back++) {
    make_cookie(c->owner, c, e - (uint32_t)back, want);
    if (!pc_memneq(want, cookie, COOKIE_LEN))
      return 1;
  }
  return 0;
}

/* ---- context ---- */

dtls_context_t *
dtls_context_new(const tls_context_t *link)
{
  SSL_CTX *lctx = tls_context_ssl_ctx_(link);
  X509 *cert = SSL_CTX_get0_certificate(lctx);
  EVP_PKEY *pkey = SSL_CTX_get0_privatekey(lctx);
  char err[160];
  if (!cert || !pkey) {
    log_warn("DTLS: the link context has no certificate");
    return NULL;
  }
  SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
  if (!ctx)
    goto err;
  if (!SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) ||
      !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION))
    goto err;
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_NO_TICKET | SSL_OP_NO_QUERY_MTU);
  /* AEAD suites only: their per-record overhead (37 bytes) is what the
   * link's frame size is computed from. */
  if (!SSL_CTX_set_cipher_list(ctx, "ECDHE-RSA-AES128-GCM-SHA256:"
                                    "ECDHE-RSA-AES256-GCM-SHA384:"
                                    "ECDHE-RSA-CHACHA20-POLY1305"))
    goto err;
  SSL_CTX_set_cookie_generate_cb(ctx, cookie_generate_cb);
  SSL_CTX_set_cookie_verify_cb(ctx, cookie_verify_cb);
  if (tls_ctx_set_identity_(ctx, cert, pkey) < 0)
    goto err;
  dtls_context_t *dc = pc_zalloc(sizeof(*dc));
  dc->ctx = ctx;
  crypt_rand(dc->cookie_secret, sizeof(dc->cookie_secret));
  dc->listen_addr = BIO_ADDR_new();
  if (!dc->listen_addr) {
    log_err("DTLS: out of memory");
    abort();
  }
  (void)get_bio_method();
  return dc;
err:
  tls_take_error_(err, sizeof(err), "unknown error");
  log_warn("DTLS: cannot make a context: %s", err);
  SSL_CTX_free(ctx);
  return NULL;
}

void
dtls_context_free_(dtls_context_t *ctx)
{
  if (!ctx)
    return;
  dtls_conn_free(ctx->listener);
  BIO_ADDR_free(ctx->listen_addr);
  SSL_CTX_free(ctx->ctx);
  pc_memwipe(ctx->cookie_secret, sizeof(ctx->cookie_secret));
  free(ctx);
}

/* ---- sessions ---- */

static dtls_conn_t *
conn_new(dtls_context_t *ctx, int is_server, dtls_output_fn out, void *arg)
{
  dtls_conn_t *c = pc_zalloc(sizeof(*c));
  c->owner = ctx;
  c->out = out;
  c->out_arg = arg;
  tls_clear_errors_();
  c->ssl = SSL_new(ctx->ctx);
  BIO *b = BIO_new(get_bio_method());
  if (!c->ssl || !b) {
    log_err("DTLS: out of memory");
    abort();
  }
  BIO_set_data(b, c);
  SSL_set_bio(c->ssl, b, b); /* one reference, owned by the SSL */
  SSL_set_app_data(c->ssl, c);
  SSL_set_mtu(c->ssl, DTLS_LINK_MTU);
  if (is_server)
    SSL_set_accept_state(c->ssl);
  else
    SSL_set_connect_state(c->ssl);
  return c;
}

dtls_conn_t *
dtls_conn_new_client(dtls_context_t *ctx, dtls_output_fn out, void *out_arg)
{
  return conn_new(ctx, 0, out, out_arg);
}

void
dtls_conn_set_output(dtls_conn_t *c, dtls_output_fn out, void *out_arg)
{
  c->out = out;
  c->out_arg = out_arg;
}

void
dtls_conn_free_(dtls_conn_t *c)
{
  if (!c)
    return;
  SSL_free(c->ssl);
  free(c);
}

int
dtls_is_client_hello(const uint8_t *d, size_t len)
{
  if (len < RECORD_HEADER_LEN + 12 || len > DTLS_LINK_MTU)
    return 0;
  if (d[0] != 22 || d[1] != 0xfe || get_u16(d + 3) != 0)
    return 0;
  if ((size_t)get_u16(d + 11) + RECORD_HEADER_LEN > len)
    return 0;
  return d[RECORD_HEADER_LEN] == 1;
}

dtls_listen_result_t
dtls_listen(dtls_context_t *ctx, const uint8_t *peer_id, size_t peer_id_len,
            const uint8_t *dgram, size_t len, dtls_output_fn out,
            void *out_arg, dtls_conn_t **conn_out)
{
  *conn_out = NULL;
  if (peer_id_len > DTLS_PEER_ID_MAX || !dtls_is_client_hello(dgram, len))
    return DTLS_LISTEN_DROPPED;
  if (!ctx->listener)
    ctx->listener = conn_new(ctx, 1, NULL, NULL);
  dtls_conn_t *l = ctx->listener;
  memcpy(l->peer_id, peer_id, peer_id_len);
  l->peer_id_len = peer_id_len;
  l->out = out;
  l->out_arg = out_arg;
  l->in = dgram;
  l->in_len = len;
  l->writes = 0;
  tls_clear_errors_();
  int r = DTLSv1_listen(l->ssl, ctx->listen_addr);
  l->in = NULL;
  if (r <= 0) {
    l->out = NULL;
    l->out_arg = NULL;
    tls_clear_errors_();
    if (r < 0) {
      /* A fatal listener error leaves it unusable: start afresh. */
      dtls_conn_free(ctx->listener);
      return DTLS_LISTEN_DROPPED;
    }
    /* DTLSv1_listen returns 0 both after answering with a
     * HelloVerifyRequest and after silently dropping a bad ClientHello;
     * only the first wrote something. */
    return l->writes ? DTLS_LISTEN_VERIFY : DTLS_LISTEN_DROPPED;
  }
  ctx->listener = NULL;
  *conn_out = l;
  return DTLS_LISTEN_ACCEPT;
}

void
dtls_conn_input(dtls_conn_t *c, const uint8_t *dgram, size_t len)
{
  c->in = dgram;
  c->in_len = len;
}

static int
map_error(dtls_conn_t *c, int r, const char *what)
{
  int e = SSL_get_error(c->ssl, r);
  switch (e) {
  case SSL_ERROR_WANT_READ:
  case SSL_ERROR_WANT_WRITE:
    tls_clear_errors_();
    return TLS_WANT_READ;
  case SSL_ERROR_ZERO_RETURN:
    snprintf(c->err, sizeof(c->err), "closed by the peer");
    tls_clear_errors_();
    return TLS_CLOSED;
  default:
    tls_take_error_(c->err, sizeof(c->err), what);
    return TLS_ERROR;
  }
}

int
dtls_conn_handshake(dtls_conn_t *c)
{
  if (c->established)
    return TLS_OK;
  tls_clear_errors_();
  int r = SSL_do_handshake(c->ssl);
  c->in = NULL;
  if (r == 1) {
    c->established = 1;
    return TLS_OK;
  }
  return map_error(c, r, "DTLS handshake failed");
}

int
dtls_conn_is_established(const dtls_conn_t *c)
{
  return c->established;
}

ssize_t
dtls_conn_read(dtls_conn_t *c, uint8_t *out, size_t outlen)
{
  if (outlen > INT_MAX)
    outlen = INT_MAX;
  tls_clear_errors_();
  int r = SSL_read(c->ssl, out, (int)outlen);
  c->in = NULL;
  if (r <= 0)
    return map_error(c, r, "DTLS read failed");
  if (SSL_pending(c->ssl) > 0) {
    /* More plaintext than a link record may hold: discard it all. */
    uint8_t sink[512];
    while (SSL_pending(c->ssl) > 0 && SSL_read(c->ssl, sink, sizeof(sink)) > 0)
      ;
    tls_clear_errors_();
    return DTLS_OVERSIZE;
  }
  return r;
}

int
dtls_conn_write(dtls_conn_t *c, const uint8_t *data, size_t len)
{
  if (!c->established || len == 0 || len > INT_MAX)
    return TLS_ERROR;
  tls_clear_errors_();
  int r = SSL_write(c->ssl, data, (int)len);
  if (r == (int)len)
    return TLS_OK;
  if (r <= 0)
    (void)map_error(c, r, "DTLS write failed");
  return TLS_ERROR;
}

size_t
dtls_conn_max_record(const dtls_conn_t *c)
{
  size_t n = c->established ? DTLS_get_data_mtu(c->ssl) : 0;
  if (n == 0 || n > DTLS_LINK_MTU)
    n = DTLS_LINK_MTU - RECORD_HEADER_LEN - 64; /* worst-case overhead */
  return n;
}

int
dtls_conn_timeout_us(dtls_conn_t *c, uint64_t *usec)
{
  struct timeval tv;
  if (c->established || DTLSv1_get_timeout(c->ssl, &tv) != 1)
    return 0;
  *usec = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
  return 1;
}

int
dtls_conn_handle_timeout(dtls_conn_t *c)
{
  tls_clear_errors_();
  int r = (int)DTLSv1_handle_timeout(c->ssl);
  if (r < 0) {
    tls_take_error_(c->err, sizeof(c->err),
                    "DTLS handshake timed out (no answer to retransmissions)");
    return -1;
  }
  return 0;
}

void
dtls_conn_shutdown(dtls_conn_t *c)
{
  tls_clear_errors_();
  if (c->established)
    (void)SSL_shutdown(c->ssl);
  tls_clear_errors_();
}

int
dtls_conn_peer_cert_der(const dtls_conn_t *c, uint8_t **der, size_t *len)
{
  return tls_ssl_peer_cert_der_(c->ssl, der, len);
}

int
dtls_conn_own_cert_der(const dtls_conn_t *c, uint8_t **der, size_t *len)
{
  return tls_ssl_own_cert_der_(c->ssl, der, len);
}

int
dtls_conn_export_key(dtls_conn_t *c, uint8_t *out, size_t outlen,
                     const char *label, const uint8_t *context,
                     size_t contextlen)
{
  return tls_ssl_export_key_(c->ssl, out, outlen, label, context, contextlen,
                             c->err, sizeof(c->err));
}

const char *
dtls_conn_last_error(const dtls_conn_t *c)
{
  return c->err[0] ? c->err : "no error";
}

const char *
dtls_conn_describe(dtls_conn_t *c)
{
  snprintf(c->desc, sizeof(c->desc), "%s %s", SSL_get_version(c->ssl),
           SSL_get_cipher_name(c->ssl));
  return c->desc;
}
