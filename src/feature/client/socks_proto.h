/* SPDX-License-Identifier: BSD-3-Clause */
/* socks_proto.h -- the server side of the SOCKS4/4a/5 protocol, as a pure
 * codec for the SocksPort: bytes in, decisions and reply bytes out, no I/O.
 *
 * Parsing. A socks_parser_t is a fixed-size struct (embed it in the
 * connection; it never allocates). Feed it whatever the client sent, in
 * pieces of any size, with socks_parser_feed(); it consumes bytes only up
 * to the end of the message it is working on and says how many it took:
 *
 *   SOCKS_NEED_MORE   every byte was consumed; wait for more.
 *   SOCKS_SEND_REPLY  a negotiation message is complete (SOCKS5 method
 *                     selection, RFC 1929 username/password): send
 *                     socks_parser_reply() to the client, then feed the
 *                     bytes that were not consumed (if any) again.
 *   SOCKS_DONE        the request is complete: socks_parser_request().
 *                     Bytes after it were not consumed: they are the
 *                     client's optimistic data (socks-extensions.txt 5),
 *                     not part of the handshake. The caller answers with
 *                     socks5_reply_encode()/socks4_reply_encode() or
 *                     socks_reply_encode_end_reason() once the stream
 *                     opens or fails.
 *   SOCKS_FAILED      protocol error: socks_parser_error() says what kind,
 *                     socks_parser_errmsg() says it in words (for a log
 *                     line), and socks_parser_reply() gives the bytes to
 *                     send before closing (may be empty).
 *
 * What is accepted (RFC 1928, RFC 1929, the SOCKS4 and SOCKS4A documents,
 * and tor's socks-extensions.txt):
 *   SOCKS4:  CONNECT (1) and tor's RESOLVE (0xF0) to an IPv4 address; the
 *            user id (at most SOCKS4_MAX_USERID bytes) is kept as the
 *            isolation credential, as tor does.
 *   SOCKS4a: DSTIP 0.0.0.x (x != 0) followed, after the user id, by a
 *            NUL-terminated hostname (1..SOCKS_MAX_HOSTNAME bytes).
 *   SOCKS5:  methods 0 (no authentication) and 2 (username/password).
 *            Method 2 is chosen whenever it is offered (unless the parser
 *            was set up with SOCKS_F_PREFER_NO_AUTH and 0 is offered too),
 *            because the credentials drive stream isolation
 *            (IsolateSOCKSAuth). As tor does, a username/password message
 *            is also accepted when method 0 was chosen, and empty
 *            usernames/passwords are allowed. Commands CONNECT (1), RESOLVE
 *            (0xF0) and RESOLVE_PTR (0xF1, whose target must be an IP
 *            address); address types IPv4 (1), domain name (3, 1..255
 *            bytes) and IPv6 (4).
 *   Rejected with a reply: BIND (2) / UDP ASSOCIATE (3) / unknown commands
 *            -> REP 7 (SOCKS4: 0x5B); unknown address types -> REP 8;
 *            RESOLVE_PTR to a hostname -> REP 8 (as tor); malformed
 *            requests (reserved byte not 0, bad hostname, CONNECT to port
 *            0) -> REP 1; SOCKS4 errors -> 0x5B; no acceptable method or
 *            zero methods -> 05 FF; a message other than RFC 1929
 *            after method 2 was chosen -> 01 01. After an error reply the
 *            caller flushes it and closes (reading and dropping what the
 *            client still sends, so that a reset does not destroy the
 *            reply before the client has read it).
 *   HTTP:    a first byte of 'G', 'H', 'P' or 'C' (GET, HEAD, POST/PUT,
 *            CONNECT) fails with SOCKS_ERR_HTTP and a short plain-text
 *            "HTTP/1.0 501" response explaining that this is a SOCKS proxy
 *            (socks-extensions.txt 4). Any other first byte but 4 or 5 is
 *            SOCKS_ERR_VERSION, with nothing to send.
 * Hostnames must look like tor's "valid destinations": an IPv4 or IPv6
 * literal (IPv6 may be bracketed), or dot-separated labels of letters,
 * digits, '-' and '_' that do not start with '-' or '_', with at most one
 * trailing dot.
 *
 * Bounds: hostnames SOCKS_MAX_HOSTNAME (255), SOCKS5 usernames and
 * passwords 255 (their length bytes), SOCKS4 user ids SOCKS4_MAX_USERID
 * (1024); and no handshake may take more than SOCKS_MAX_HANDSHAKE bytes in
 * all (the longest legal one, a SOCKS4a request with both fields full).
 *
 * RELAY_END reason (tor-spec 6.3) -> SOCKS5 REP, as tor maps them
 * (socks5_rep_from_end_reason()):
 *
 *   0 (no error)          -> 0x00 succeeded
 *   1 MISC                -> 0x01 general SOCKS server failure
 *   2 RESOLVEFAILED       -> 0x04 host unreachable
 *   3 CONNECTREFUSED      -> 0x05 connection refused
 *   4 EXITPOLICY          -> 0x02 connection not allowed by ruleset
 *   5 DESTROY             -> 0x01 general failure
 *   6 DONE                -> 0x05 connection refused (an END before the
 *                            stream opened: the far side closed it)
 *   7 TIMEOUT             -> 0x06 TTL expired
 *   8 NOROUTE             -> 0x04 host unreachable
 *   9 HIBERNATING         -> 0x01 general failure
 *  10 INTERNAL            -> 0x01 general failure
 *  11 RESOURCELIMIT       -> 0x01 general failure
 *  12 CONNRESET           -> 0x05 connection refused
 *  13 TORPROTOCOL         -> 0x01 general failure
 *  14 NOTDIRECTORY        -> 0x01 general failure
 *   anything else         -> 0x01 general failure
 * SOCKS4 has only granted (0x5A) and rejected (0x5B): every reason but 0
 * is 0x5B. (tor's optional ExtendedErrors codes 0xF0-0xF7 for onion
 * services are not produced here.)
 */
#ifndef PCTOR_FEATURE_CLIENT_SOCKS_PROTO_H
#define PCTOR_FEATURE_CLIENT_SOCKS_PROTO_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/address/address.h"

#define SOCKS_MAX_HOSTNAME 255
#define SOCKS_MAX_USERNAME 255
#define SOCKS_MAX_PASSWORD 255
#define SOCKS4_MAX_USERID 1024
/* VN CD DSTPORT DSTIP (8), user id + NUL, hostname + NUL: 1289. (The
 * longest SOCKS5 handshake is 257 + 513 + 262 = 1032.) */
#define SOCKS_MAX_HANDSHAKE \
  (8 + SOCKS4_MAX_USERID + 1 + SOCKS_MAX_HOSTNAME + 1)

/* Reply sizes: SOCKS4 is always 8; SOCKS5 is 10 (IPv4), 22 (IPv6), or
 * 7 + length for a hostname (RESOLVE_PTR answers). */
#define SOCKS4_REPLY_LEN 8
#define SOCKS5_REPLY_MAX (7 + SOCKS_MAX_HOSTNAME)

/* Commands (SOCKS4 CD / SOCKS5 CMD). */
#define SOCKS_CMD_CONNECT 0x01
#define SOCKS_CMD_BIND 0x02
#define SOCKS_CMD_UDP_ASSOCIATE 0x03
#define SOCKS_CMD_RESOLVE 0xF0
#define SOCKS_CMD_RESOLVE_PTR 0xF1

/* SOCKS5 address types (ATYP). */
#define SOCKS_ATYP_IPV4 0x01
#define SOCKS_ATYP_HOSTNAME 0x03
#define SOCKS_ATYP_IPV6 0x04

/* SOCKS5 methods. */
#define SOCKS5_METHOD_NO_AUTH 0x00
#define SOCKS5_METHOD_USERPASS 0x02
#define SOCKS5_METHOD_NONE_ACCEPTABLE 0xFF

/* SOCKS5 reply codes (REP). */
#define SOCKS5_SUCCEEDED 0x00
#define SOCKS5_GENERAL_FAILURE 0x01
#define SOCKS5_NOT_ALLOWED 0x02
#define SOCKS5_NET_UNREACHABLE 0x03
#define SOCKS5_HOST_UNREACHABLE 0x04
#define SOCKS5_CONNECTION_REFUSED 0x05
#define SOCKS5_TTL_EXPIRED 0x06
#define SOCKS5_COMMAND_NOT_SUPPORTED 0x07
#define SOCKS5_ADDRESS_TYPE_NOT_SUPPORTED 0x08

/* SOCKS4 reply codes (CD of the reply). */
#define SOCKS4_GRANTED 0x5A
#define SOCKS4_REJECTED 0x5B

/* How the client identified itself (for stream isolation). */
typedef enum {
  SOCKS_AUTH_NONE = 0,     /* SOCKS5 method 0 or SOCKS4 with empty user id */
  SOCKS_AUTH_USERPASS = 1, /* SOCKS5 RFC 1929 (possibly empty fields) */
  SOCKS_AUTH_SOCKS4_USERID = 2, /* SOCKS4/4a non-empty user id */
} socks_auth_t;

/* A complete request. */
typedef struct socks_request_t {
  uint8_t version;   /* 4 or 5 */
  uint8_t command;   /* SOCKS_CMD_CONNECT, _RESOLVE or _RESOLVE_PTR */
  uint8_t addr_type; /* SOCKS_ATYP_*; SOCKS4a hostnames are _HOSTNAME */
  uint8_t is_socks4a;
  uint16_t port;     /* host order; 0 is possible only for RESOLVE(_PTR) */
  /* The target as text, NUL-terminated: the hostname as sent, or the IP
   * address formatted without brackets ("192.0.2.1", "2001:db8::1"). */
  char address[SOCKS_MAX_HOSTNAME + 1];
  /* The target as an address (with port) when it is one: for
   * SOCKS_ATYP_IPV4/IPV6 always, for a hostname that is an IP literal too;
   * otherwise family is AF_UNSPEC. */
  pc_addr_t addr;
  /* Credentials, as bytes (they may hold NULs) and NUL-terminated. For
   * SOCKS4 the user id is the username and the password is empty. */
  socks_auth_t auth;
  uint16_t username_len;
  uint16_t password_len;
  uint8_t username[SOCKS4_MAX_USERID + 1];
  uint8_t password[SOCKS_MAX_PASSWORD + 1];
} socks_request_t;

typedef enum {
  SOCKS_FAILED = -1,
  SOCKS_NEED_MORE = 0,
  SOCKS_SEND_REPLY = 1,
  SOCKS_DONE = 2,
} socks_status_t;

typedef enum {
  SOCKS_ERR_NONE = 0,
  SOCKS_ERR_VERSION,       /* first byte not 4 or 5 (and not HTTP), or
                            * a SOCKS5 request whose VER is not 5 */
  SOCKS_ERR_HTTP,          /* an HTTP request: reply is an HTTP response */
  SOCKS_ERR_NO_METHODS,    /* SOCKS5 NMETHODS = 0 */
  SOCKS_ERR_NO_ACCEPTABLE_METHOD, /* neither 0 nor 2 offered */
  SOCKS_ERR_AUTH,          /* method 2 was chosen but the next message
                            * is not an RFC 1929 one (version 1) */
  SOCKS_ERR_COMMAND,       /* BIND, UDP ASSOCIATE, unknown command */
  SOCKS_ERR_ADDR_TYPE,     /* unknown ATYP, RESOLVE_PTR to a non-IP */
  SOCKS_ERR_ADDRESS,       /* empty/invalid hostname, SOCKS4 DSTIP 0 */
  SOCKS_ERR_MALFORMED,     /* reserved byte not 0, CONNECT to port 0 */
  SOCKS_ERR_TOO_LONG,      /* user id / hostname / handshake over bound */
} socks_error_t;

/* Flags for socks_parser_init(). */
#define SOCKS_F_PREFER_NO_AUTH 0x01 /* pick method 0 over 2 if both offered */

/* The parser. Its fields are private; it is a plain struct only so that it
 * can be embedded without an allocation. */
typedef struct socks_parser_t {
  uint8_t state;
  uint8_t method;      /* SOCKS5 method chosen, or 0xFF */
  uint8_t http;        /* reply is the HTTP response */
  uint8_t reply_len;
  unsigned flags;
  uint16_t want;       /* bytes the current field needs */
  uint16_t have;       /* bytes of it collected so far */
  size_t total;        /* handshake bytes consumed */
  socks_error_t error;
  const char *errmsg;
  uint8_t hdr[16];     /* fixed-size fields being collected */
  uint8_t reply[16];   /* negotiation / error reply */
  socks_request_t req;
} socks_parser_t;

/* Start (or restart) a parser; flags are SOCKS_F_*. */
void socks_parser_init(socks_parser_t *p, unsigned flags);
/* Feed len bytes; *consumed is set to how many were used (see above). */
socks_status_t socks_parser_feed(socks_parser_t *p, const uint8_t *data,
                                 size_t len, size_t *consumed);
/* Bytes to send after SOCKS_SEND_REPLY or SOCKS_FAILED (len may be 0);
 * valid until the next call on p. */
const uint8_t *socks_parser_reply(const socks_parser_t *p, size_t *len);
/* The request, after SOCKS_DONE (NULL before). */
const socks_request_t *socks_parser_request(const socks_parser_t *p);
socks_error_t socks_parser_error(const socks_parser_t *p);
/* What went wrong, in words (never NULL; "" when nothing did). */
const char *socks_parser_errmsg(const socks_parser_t *p);
/* Wipe the parser, credentials included. */
void socks_parser_wipe(socks_parser_t *p);

/* 1 if a and b carry the same credentials for IsolateSOCKSAuth purposes:
 * the same kind of authentication, byte-equal username and password. */
int socks_request_auth_eq(const socks_request_t *a, const socks_request_t *b);

/* Is s (len bytes, need not be NUL-terminated) an acceptable destination
 * hostname (rules above)? */
int socks_hostname_is_valid(const char *s, size_t len);

/* Encoders. Each returns the number of bytes written, or -1 if outlen is
 * too small or the arguments are invalid. */
/* SOCKS5 reply: VER 5, REP rep, RSV 0, ATYP atyp, BND.ADDR (addrlen bytes:
 * 4 for IPv4, 16 for IPv6, 1..255 for a hostname, which gets its length
 * byte), BND.PORT port. */
ssize_t socks5_reply_encode(uint8_t *out, size_t outlen, uint8_t rep,
                            uint8_t atyp, const uint8_t *addr,
                            size_t addrlen, uint16_t port);
/* SOCKS5 reply whose bound address is bound (IPv4 or IPv6, with port), or
 * 0.0.0.0:0 when bound is NULL or unset. */
ssize_t socks5_reply_encode_addr(uint8_t *out, size_t outlen, uint8_t rep,
                                 const pc_addr_t *bound);
/* SOCKS4 reply: VN 0, CD code (SOCKS4_GRANTED/REJECTED), DSTPORT, DSTIP
 * (ipv4 in host order). Always SOCKS4_REPLY_LEN bytes. */
ssize_t socks4_reply_encode(uint8_t *out, size_t outlen, uint8_t code,
                            uint32_t ipv4, uint16_t port);
/* The failure reply for a stream that ended with RELAY_END reason before
 * it opened, in the client's SOCKS version (5: mapped REP with 0.0.0.0:0;
 * 4: 0x5B). */
ssize_t socks_reply_encode_end_reason(uint8_t *out, size_t outlen,
                                      uint8_t version, uint8_t end_reason);

/* The REP for a RELAY_END reason (table above). */
uint8_t socks5_rep_from_end_reason(uint8_t end_reason);
/* Short text for a REP code, for logs. */
const char *socks5_rep_str(uint8_t rep);

#endif
