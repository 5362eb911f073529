/* SPDX-License-Identifier: BSD-3-Clause */
/* socks_proto.c -- SOCKS4/4a/5 server-side codec (see socks_proto.h).
 *
 * Design: a byte-driven state machine. Each state either looks at one
 * byte (version, NMETHODS, CMD, RSV, ATYP, length bytes) or collects a
 * field of known size (p->want bytes, p->have so far) straight into its
 * final place: SOCKS5 usernames, passwords and domain names land in the
 * request, small fixed fields (SOCKS4 header, IPv4/IPv6 address, port) in
 * p->hdr. NUL-terminated SOCKS4 fields are copied until their NUL with the
 * bound checked before each byte is stored. Nothing is ever buffered
 * beyond the current field, so input may arrive split anywhere, and the
 * parser stops exactly at the end of each message (the caller keeps what
 * follows: the next message, or optimistic data after the request).
 * Errors are reported at the first byte that makes the handshake
 * invalid, with the reply that the protocol stage calls for. The parser
 * keeps no pointers into itself, so it may be copied between calls.
 * Nothing here logs: the caller logs socks_parser_errmsg() (rate-limited,
 * since a client controls it).
 */
#include "feature/client/socks_proto.h"

#include <netinet/in.h>
#include <string.h>

#include "core/or/edge.h"
#include "lib/bytes/bytes.h"
#include "lib/malloc/alloc.h"

enum {
  ST_START = 0,
  ST_S4_HDR,       /* CD DSTPORT DSTIP: 7 bytes into hdr */
  ST_S4_USERID,    /* until NUL, into req.username */
  ST_S4_HOST,      /* until NUL, into req.address (SOCKS4a) */
  ST_S5_NMETHODS,
  ST_S5_METHODS,   /* want = NMETHODS; hdr[0]/hdr[1] = saw 0 / saw 2 */
  ST_S5_NEXT,      /* first byte of the message after method selection */
  ST_S5_ULEN,
  ST_S5_UNAME,
  ST_S5_PLEN,
  ST_S5_PASSWD,
  ST_S5_CMD,
  ST_S5_RSV,
  ST_S5_ATYP,
  ST_S5_ADDR,      /* 4 or 16 bytes into hdr */
  ST_S5_DLEN,
  ST_S5_DOMAIN,    /* want bytes into req.address */
  ST_S5_PORT,      /* 2 bytes into hdr + 1 (hdr[0] unused) */
  ST_DONE,
  ST_FAILED,
};

/* The response to an HTTP request (socks-extensions.txt section 4). */
static const char http_reply[] =
  "HTTP/1.0 501 Not an HTTP proxy\r\n"
  "Content-Type: text/plain; charset=us-ascii\r\n"
  "Content-Length: 167\r\n"
  "Connection: close\r\n"
  "\r\n"
  "This is a SOCKS proxy, not an HTTP proxy.\n"
  "\n"
  "Your application sent an HTTP request to a SocksPort. Configure it to\n"
  "use this port as a SOCKS5 (or SOCKS4a) proxy instead.\n";

void
socks_parser_init(socks_parser_t *p, unsigned flags)
{
  memset(p, 0, sizeof(*p));
  p->state = ST_START;
  p->method = SOCKS5_METHOD_NONE_ACCEPTABLE;
  p->flags = flags;
  p->error = SOCKS_ERR_NONE;
  p->errmsg = "";
  p->req.addr.family = AF_UNSPEC;
}

void
socks_parser_wipe(socks_parser_t *p)
{
  pc_memwipe(p, sizeof(*p));
}

/* ---- failures ---- */

static socks_status_t
fail(socks_parser_t *p, socks_error_t err, const char *msg)
{
  p->state = ST_FAILED;
  p->error = err;
  p->errmsg = msg;
  p->reply_len = 0;
  return SOCKS_FAILED;
}

/* Fail with a two-byte negotiation reply (05 FF, 01 01). */
static socks_status_t
fail2(socks_parser_t *p, socks_error_t err, const char *msg, uint8_t b0,
      uint8_t b1)
{
  fail(p, err, msg);
  p->reply[0] = b0;
  p->reply[1] = b1;
  p->reply_len = 2;
  return SOCKS_FAILED;
}

/* Fail with the request-stage reply of the client's version. */
static socks_status_t
fail_req(socks_parser_t *p, socks_error_t err, const char *msg, uint8_t rep)
{
  fail(p, err, msg);
  if (p->req.version == 4)
    socks4_reply_encode(p->reply, sizeof(p->reply), SOCKS4_REJECTED, 0, 0);
  else
    socks5_reply_encode_addr(p->reply, sizeof(p->reply), rep, NULL);
  p->reply_len = p->req.version == 4 ? SOCKS4_REPLY_LEN : 10;
  return SOCKS_FAILED;
}

/* ---- helpers ---- */

static void
want(socks_parser_t *p, uint8_t state, uint16_t n)
{
  p->state = state;
  p->want = n;
  p->have = 0;
}

/* Copy what is available of the current field into dst; 1 when whole. */
static int
collect(socks_parser_t *p, uint8_t *dst, const uint8_t **in,
        const uint8_t *end)
{
  size_t n = (size_t)(p->want - p->have);
  size_t avail = (size_t)(end - *in);
  if (n > avail)
    n = avail;
  memcpy(dst + p->have, *in, n);
  p->have = (uint16_t)(p->have + n);
  *in += n;
  return p->have == p->want;
}

/* Copy bytes of a NUL-terminated field into dst (at most max bytes before
 * the NUL). Returns 1 at the NUL (consumed; dst terminated, p->have is
 * the length), 0 if more is needed, -1 if the field is too long. */
static int
collect_nul(socks_parser_t *p, uint8_t *dst, size_t max, const uint8_t **in,
            const uint8_t *end)
{
  while (*in < end) {
    uint8_t c = *(*in)++;
    if (c == 0) {
      dst[p->have] = 0;
      return 1;
    }
    if (p->have >= max)
      return -1;
    dst[p->have++] = c;
  }
  return 0;
}

static int
label_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Parse s[0..len) as an IPv4 or IPv6 literal (IPv6 optionally bracketed);
 * 0 or -1. */
static int
parse_ip_literal(pc_addr_t *out, const char *s, size_t len)
{
  char tmp[SOCKS_MAX_HOSTNAME + 1];
  if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
    s++;
    len -= 2;
    if (!memchr(s, ':', len))
      return -1;
  }
  if (len == 0 || len >= sizeof(tmp) || memchr(s, 0, len))
    return -1;
  memcpy(tmp, s, len);
  tmp[len] = 0;
  return pc_addr_parse_ip(out, tmp, 0);
}

int
socks_hostname_is_valid(const char *s, size_t len)
{
  pc_addr_t a;
  if (len == 0 || len > SOCKS_MAX_HOSTNAME)
    return 0;
  if (parse_ip_literal(&a, s, len) == 0)
    return 1;
  if (s[len - 1] == '.')
    len--; /* one trailing dot: a fully-qualified name */
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || s[i] == '.') {
      if (i == start)
        return 0; /* empty label */
      if (s[start] == '-' || s[start] == '_')
        return 0;
      start = i + 1;
    } else if (!label_char(s[i])) {
      return 0;
    }
  }
  return 1;
}

/* ---- completing messages ---- */

static socks_status_t
s4_header_done(socks_parser_t *p)
{
  socks_request_t *r = &p->req;
  uint8_t cd = p->hdr[0];
  uint16_t port = get_u16(p->hdr + 1);
  uint32_t ip = get_u32(p->hdr + 3);
  if (cd != SOCKS_CMD_CONNECT && cd != SOCKS_CMD_RESOLVE)
    return fail_req(p, SOCKS_ERR_COMMAND, "SOCKS4 command not supported", 0);
  if (ip == 0)
    return fail_req(p, SOCKS_ERR_ADDRESS, "SOCKS4 destination IP is 0", 0);
  if (port == 0 && cd == SOCKS_CMD_CONNECT)
    return fail_req(p, SOCKS_ERR_MALFORMED, "SOCKS4 CONNECT to port 0", 0);
  r->command = cd;
  r->port = port;
  r->is_socks4a = ip < 256;
  if (r->is_socks4a) {
    r->addr_type = SOCKS_ATYP_HOSTNAME;
  } else {
    r->addr_type = SOCKS_ATYP_IPV4;
    pc_addr_from_ipv4(&r->addr, ip, port);
  }
  want(p, ST_S4_USERID, 0);
  return SOCKS_NEED_MORE;
}

/* Fill in address text / addr, check the target; the request is done. */
static socks_status_t
finish_request(socks_parser_t *p)
{
  socks_request_t *r = &p->req;
  if (r->addr_type == SOCKS_ATYP_HOSTNAME) {
    size_t len = strlen(r->address);
    if (len == 0)
      return fail_req(p, SOCKS_ERR_ADDRESS, "empty hostname",
                      SOCKS5_GENERAL_FAILURE);
    if (!socks_hostname_is_valid(r->address, len))
      return fail_req(p, SOCKS_ERR_ADDRESS, "malformed hostname",
                      SOCKS5_GENERAL_FAILURE);
    if (parse_ip_literal(&r->addr, r->address, len) == 0) {
      r->addr.port = r->port;
    } else {
      memset(&r->addr, 0, sizeof(r->addr));
      r->addr.family = AF_UNSPEC;
    }
  } else {
    pc_addr_fmt(&r->addr, r->address, sizeof(r->address), 0);
  }
  if (r->command == SOCKS_CMD_RESOLVE_PTR && r->addr.family == AF_UNSPEC)
    return fail_req(p, SOCKS_ERR_ADDR_TYPE,
                    "RESOLVE_PTR needs an IP address",
                    SOCKS5_ADDRESS_TYPE_NOT_SUPPORTED);
  if (r->command == SOCKS_CMD_CONNECT && r->port == 0)
    return fail_req(p, SOCKS_ERR_MALFORMED, "CONNECT to port 0",
                    SOCKS5_GENERAL_FAILURE);
  p->state = ST_DONE;
  return SOCKS_DONE;
}

static socks_status_t
s5_methods_done(socks_parser_t *p)
{
  int no_auth = p->hdr[0], userpass = p->hdr[1];
  if (userpass && !(no_auth && (p->flags & SOCKS_F_PREFER_NO_AUTH)))
    p->method = SOCKS5_METHOD_USERPASS;
  else if (no_auth)
    p->method = SOCKS5_METHOD_NO_AUTH;
  else
    return fail2(p, SOCKS_ERR_NO_ACCEPTABLE_METHOD,
                 "SOCKS5 client offers neither no-auth nor "
                 "username/password",
                 5, SOCKS5_METHOD_NONE_ACCEPTABLE);
  p->reply[0] = 5;
  p->reply[1] = p->method;
  p->reply_len = 2;
  want(p, ST_S5_NEXT, 0);
  return SOCKS_SEND_REPLY;
}

static socks_status_t
s5_auth_done(socks_parser_t *p)
{
  p->req.auth = SOCKS_AUTH_USERPASS;
  p->req.username[p->req.username_len] = 0;
  p->req.password[p->req.password_len] = 0;
  p->reply[0] = 1; /* RFC 1929 version */
  p->reply[1] = 0; /* success */
  p->reply_len = 2;
  want(p, ST_S5_NEXT, 0);
  return SOCKS_SEND_REPLY;
}

/* ---- the machine ---- */

/* Consume input for the current state; returns SOCKS_NEED_MORE to go
 * on (while input remains), or a result for the caller. */
static socks_status_t
step(socks_parser_t *p, const uint8_t **in, const uint8_t *end)
{
  socks_request_t *r = &p->req;
  uint8_t c;
  int rv;

  switch (p->state) {
  case ST_START:
    c = *(*in)++;
    if (c == 4) {
      r->version = 4;
      want(p, ST_S4_HDR, 7);
      return SOCKS_NEED_MORE;
    }
    if (c == 5) {
      r->version = 5;
      p->state = ST_S5_NMETHODS;
      return SOCKS_NEED_MORE;
    }
    if (c == 'G' || c == 'H' || c == 'P' || c == 'C') {
      fail(p, SOCKS_ERR_HTTP, "HTTP request sent to a SOCKS port");
      p->http = 1;
      return SOCKS_FAILED;
    }
    return fail(p, SOCKS_ERR_VERSION, "not a SOCKS4 or SOCKS5 handshake");

  case ST_S4_HDR:
    if (!collect(p, p->hdr, in, end))
      return SOCKS_NEED_MORE;
    return s4_header_done(p);

  case ST_S4_USERID:
    rv = collect_nul(p, r->username, SOCKS4_MAX_USERID, in, end);
    if (rv < 0)
      return fail_req(p, SOCKS_ERR_TOO_LONG, "SOCKS4 user id too long", 0);
    if (rv == 0)
      return SOCKS_NEED_MORE;
    r->username_len = p->have;
    if (r->username_len)
      r->auth = SOCKS_AUTH_SOCKS4_USERID;
    if (!r->is_socks4a)
      return finish_request(p);
    want(p, ST_S4_HOST, 0);
    return SOCKS_NEED_MORE;

  case ST_S4_HOST:
    rv = collect_nul(p, (uint8_t *)r->address, SOCKS_MAX_HOSTNAME, in, end);
    if (rv < 0)
      return fail_req(p, SOCKS_ERR_TOO_LONG, "SOCKS4a hostname too long", 0);
    if (rv == 0)
      return SOCKS_NEED_MORE;
    return finish_request(p);

  case ST_S5_NMETHODS:
    c = *(*in)++;
    if (c == 0)
      return fail2(p, SOCKS_ERR_NO_METHODS, "SOCKS5 NMETHODS is 0", 5,
                   SOCKS5_METHOD_NONE_ACCEPTABLE);
    want(p, ST_S5_METHODS, c);
    p->hdr[0] = p->hdr[1] = 0;
    return SOCKS_NEED_MORE;

  case ST_S5_METHODS:
    while (*in < end && p->have < p->want) {
      c = *(*in)++;
      p->have++;
      if (c == SOCKS5_METHOD_NO_AUTH)
        p->hdr[0] = 1;
      else if (c == SOCKS5_METHOD_USERPASS)
        p->hdr[1] = 1;
    }
    if (p->have < p->want)
      return SOCKS_NEED_MORE;
    return s5_methods_done(p);

  case ST_S5_NEXT:
    c = *(*in)++;
    if (c == 1 && r->auth != SOCKS_AUTH_USERPASS) {
      /* RFC 1929; accepted after method 0 too, as tor does. */
      p->state = ST_S5_ULEN;
      return SOCKS_NEED_MORE;
    }
    if (p->method == SOCKS5_METHOD_USERPASS && r->auth != SOCKS_AUTH_USERPASS)
      return fail2(p, SOCKS_ERR_AUTH,
                   "expected a SOCKS5 username/password message", 1, 1);
    if (c != 5)
      return fail_req(p, SOCKS_ERR_VERSION,
                      "SOCKS5 request with a version other than 5",
                      SOCKS5_GENERAL_FAILURE);
    p->state = ST_S5_CMD;
    return SOCKS_NEED_MORE;

  case ST_S5_ULEN:
    c = *(*in)++;
    r->username_len = c;
    want(p, c ? ST_S5_UNAME : ST_S5_PLEN, c);
    return SOCKS_NEED_MORE;

  case ST_S5_UNAME:
    if (!collect(p, r->username, in, end))
      return SOCKS_NEED_MORE;
    p->state = ST_S5_PLEN;
    return SOCKS_NEED_MORE;

  case ST_S5_PLEN:
    c = *(*in)++;
    r->password_len = c;
    if (c == 0)
      return s5_auth_done(p);
    want(p, ST_S5_PASSWD, c);
    return SOCKS_NEED_MORE;

  case ST_S5_PASSWD:
    if (!collect(p, r->password, in, end))
      return SOCKS_NEED_MORE;
    return s5_auth_done(p);

  case ST_S5_CMD:
    c = *(*in)++;
    if (c != SOCKS_CMD_CONNECT && c != SOCKS_CMD_RESOLVE &&
        c != SOCKS_CMD_RESOLVE_PTR)
      return fail_req(p, SOCKS_ERR_COMMAND, "SOCKS5 command not supported",
                      SOCKS5_COMMAND_NOT_SUPPORTED);
    r->command = c;
    p->state = ST_S5_RSV;
    return SOCKS_NEED_MORE;

  case ST_S5_RSV:
    c = *(*in)++;
    if (c != 0)
      return fail_req(p, SOCKS_ERR_MALFORMED,
                      "SOCKS5 reserved byte is not 0",
                      SOCKS5_GENERAL_FAILURE);
    p->state = ST_S5_ATYP;
    return SOCKS_NEED_MORE;

  case ST_S5_ATYP:
    c = *(*in)++;
    r->addr_type = c;
    if (c == SOCKS_ATYP_IPV4)
      want(p, ST_S5_ADDR, 4);
    else if (c == SOCKS_ATYP_IPV6)
      want(p, ST_S5_ADDR, 16);
    else if (c == SOCKS_ATYP_HOSTNAME)
      p->state = ST_S5_DLEN;
    else
      return fail_req(p, SOCKS_ERR_ADDR_TYPE,
                      "SOCKS5 address type not supported",
                      SOCKS5_ADDRESS_TYPE_NOT_SUPPORTED);
    return SOCKS_NEED_MORE;

  case ST_S5_ADDR:
    if (!collect(p, p->hdr, in, end))
      return SOCKS_NEED_MORE;
    memset(&r->addr, 0, sizeof(r->addr));
    r->addr.family = p->want == 4 ? AF_INET : AF_INET6;
    memcpy(r->addr.addr, p->hdr, p->want);
    want(p, ST_S5_PORT, 2);
    return SOCKS_NEED_MORE;

  case ST_S5_DLEN:
    c = *(*in)++;
    if (c == 0)
      return fail_req(p, SOCKS_ERR_ADDRESS, "empty hostname",
                      SOCKS5_GENERAL_FAILURE);
    want(p, ST_S5_DOMAIN, c);
    return SOCKS_NEED_MORE;

  case ST_S5_DOMAIN:
    if (!collect(p, (uint8_t *)r->address, in, end))
      return SOCKS_NEED_MORE;
    r->address[p->want] = 0;
    if (memchr(r->address, 0, p->want))
      return fail_req(p, SOCKS_ERR_ADDRESS, "NUL in hostname",
                      SOCKS5_GENERAL_FAILURE);
    want(p, ST_S5_PORT, 2);
    return SOCKS_NEED_MORE;

  case ST_S5_PORT:
    if (!collect(p, p->hdr + 1, in, end))
      return SOCKS_NEED_MORE;
    r->port = get_u16(p->hdr + 1);
    r->addr.port = r->port;
    return finish_request(p);

  default:
    return fail(p, SOCKS_ERR_MALFORMED, "parser in a bad state");
  }
}

socks_status_t
socks_parser_feed(socks_parser_t *p, const uint8_t *data, size_t len,
                  size_t *consumed)
{
  *consumed = 0;
  p->reply_len = 0;
  p->http = 0;
  if (p->state == ST_DONE)
    return SOCKS_DONE;
  if (p->state == ST_FAILED)
    return SOCKS_FAILED;
  if (len == 0)
    return SOCKS_NEED_MORE;

  size_t budget = SOCKS_MAX_HANDSHAKE - p->total;
  size_t n = len < budget ? len : budget;
  const uint8_t *in = data, *end = data + n;
  socks_status_t st = SOCKS_NEED_MORE;
  while (in < end && st == SOCKS_NEED_MORE)
    st = step(p, &in, end);
  *consumed = (size_t)(in - data);
  p->total += *consumed;
  if (st == SOCKS_NEED_MORE && n < len)
    st = fail_req(p, SOCKS_ERR_TOO_LONG, "SOCKS handshake too long",
                  SOCKS5_GENERAL_FAILURE);
  return st;
}

const uint8_t *
socks_parser_reply(const socks_parser_t *p, size_t *len)
{
  if (p->http) {
    *len = sizeof(http_reply) - 1;
    return (const uint8_t *)http_reply;
  }
  *len = p->reply_len;
  return p->reply;
}

const socks_request_t *
socks_parser_request(const socks_parser_t *p)
{
  return p->state == ST_DONE ? &p->req : NULL;
}

socks_error_t
socks_parser_error(const socks_parser_t *p)
{
  return p->error;
}

const char *
socks_parser_errmsg(const socks_parser_t *p)
{
  return p->errmsg ? p->errmsg : "";
}

int
socks_request_auth_eq(const socks_request_t *a, const socks_request_t *b)
{
  return a->username_len == b->username_len &&
         a->password_len == b->password_len &&
         !memcmp(a->username, b->username, a->username_len) &&
         !memcmp(a->password, b->password, a->password_len);
}

/* ---- encoders ---- */

ssize_t
socks5_reply_encode(uint8_t *out, size_t outlen, uint8_t rep, uint8_t atyp,
                    const uint8_t *addr, size_t addrlen, uint16_t port)
{
  size_t alen;
  if (atyp == SOCKS_ATYP_IPV4 && addrlen == 4)
    alen = 4;
  else if (atyp == SOCKS_ATYP_IPV6 && addrlen == 16)
    alen = 16;
  else if (atyp == SOCKS_ATYP_HOSTNAME && addrlen >= 1 &&
           addrlen <= SOCKS_MAX_HOSTNAME)
    alen = 1 + addrlen;
  else
    return -1;
  size_t n = 4 + alen + 2;
  if (outlen < n)
    return -1;
  out[0] = 5;
  out[1] = rep;
  out[2] = 0;
  out[3] = atyp;
  if (atyp == SOCKS_ATYP_HOSTNAME) {
    out[4] = (uint8_t)addrlen;
    memcpy(out + 5, addr, addrlen);
  } else {
    memcpy(out + 4, addr, alen);
  }
  set_u16(out + 4 + alen, port);
  return (ssize_t)n;
}

ssize_t
socks5_reply_encode_addr(uint8_t *out, size_t outlen, uint8_t rep,
                         const pc_addr_t *bound)
{
  static const uint8_t zero[4];
  if (bound && bound->family == AF_INET6)
    return socks5_reply_encode(out, outlen, rep, SOCKS_ATYP_IPV6,
                               bound->addr, 16, bound->port);
  if (bound && bound->family == AF_INET)
    return socks5_reply_encode(out, outlen, rep, SOCKS_ATYP_IPV4,
                               bound->addr, 4, bound->port);
  return socks5_reply_encode(out, outlen, rep, SOCKS_ATYP_IPV4, zero, 4, 0);
}

ssize_t
socks4_reply_encode(uint8_t *out, size_t outlen, uint8_t code, uint32_t ipv4,
                    uint16_t port)
{
  if (outlen < SOCKS4_REPLY_LEN)
    return -1;
  out[0] = 0;
  out[1] = code;
  set_u16(out + 2, port);
  set_u32(out + 4, ipv4);
  return SOCKS4_REPLY_LEN;
}

ssize_t
socks_reply_encode_end_reason(uint8_t *out, size_t outlen, uint8_t version,
                              uint8_t end_reason)
{
  if (version == 5)
    return socks5_reply_encode_addr(out, outlen,
                                    socks5_rep_from_end_reason(end_reason),
                                    NULL);
  if (version == 4)
    return socks4_reply_encode(out, outlen,
                               end_reason ? SOCKS4_REJECTED : SOCKS4_GRANTED,
                               0, 0);
  return -1;
}

uint8_t
socks5_rep_from_end_reason(uint8_t end_reason)
{
  switch (end_reason) {
  case 0:
    return SOCKS5_SUCCEEDED;
  case END_STREAM_REASON_RESOLVEFAILED:
  case END_STREAM_REASON_NOROUTE:
    return SOCKS5_HOST_UNREACHABLE;
  case END_STREAM_REASON_CONNECTREFUSED:
  case END_STREAM_REASON_DONE:
  case END_STREAM_REASON_CONNRESET:
    return SOCKS5_CONNECTION_REFUSED;
  case END_STREAM_REASON_EXITPOLICY:
    return SOCKS5_NOT_ALLOWED;
  case END_STREAM_REASON_TIMEOUT:
    return SOCKS5_TTL_EXPIRED;
  default: /* MISC, DESTROY, HIBERNATING, INTERNAL, RESOURCELIMIT,
            * TORPROTOCOL, NOTDIRECTORY, unknown */
    return SOCKS5_GENERAL_FAILURE;
  }
}

const char *
socks5_rep_str(uint8_t rep)
{
  switch (rep) {
  case SOCKS5_SUCCEEDED: return "succeeded";
  case SOCKS5_GENERAL_FAILURE: return "general SOCKS server failure";
  case SOCKS5_NOT_ALLOWED: return "connection not allowed by ruleset";
  case SOCKS5_NET_UNREACHABLE: return "network unreachable";
  case SOCKS5_HOST_UNREACHABLE: return "host unreachable";
  case SOCKS5_CONNECTION_REFUSED: return "connection refused";
  case SOCKS5_TTL_EXPIRED: return "TTL expired";
  case SOCKS5_COMMAND_NOT_SUPPORTED: return "command not supported";
  case SOCKS5_ADDRESS_TYPE_NOT_SUPPORTED: return "address type not supported";
  default: return "unknown reply code";
  }
}
