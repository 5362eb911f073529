/* SPDX-License-Identifier: BSD-3-Clause */
/* linkcells.h -- bodies of the link-handshake cells (tor-spec section 4):
 * VERSIONS, NETINFO, CERTS, AUTH_CHALLENGE, AUTHENTICATE, and the
 * AUTH0003 authenticator carried in AUTHENTICATE (tor-spec 4.4.2).
 *
 * Parsers take a payload pointer and its length, never read past it, and
 * never allocate: parsed structs are fixed-size, and CERTS entries point
 * into the caller's payload (valid while that payload lives). Builders of
 * variable-length cells return a new var_cell_t with circ_id 0; builders
 * of fixed cells write a CELL_PAYLOAD_LEN payload. Everything returns 0 on
 * success and a negative value on malformed or oversized input.
 *
 * The channel code owns the handshake state: it computes the SLOG/CLOG
 * running digests, the TLS exporter value and the certificate digests that
 * go into AUTH0003, and passes them in through auth3_t.
 */
#ifndef PCTOR_CORE_PROTO_LINKCELLS_H
#define PCTOR_CORE_PROTO_LINKCELLS_H
#include <stddef.h>
#include <stdint.h>

#include "core/proto/cell.h"
#include "lib/crypt/ed25519.h"

/* ---- VERSIONS (tor-spec 4.1) ---- */
#define VERSIONS_MAX_COUNT (VAR_CELL_MAX_PAYLOAD / 2) /* 32767 */

/* New VERSIONS var cell listing n versions; -1 if n > VERSIONS_MAX_COUNT. */
int versions_cell_build(const uint16_t *versions, size_t n,
                        var_cell_t **out);
/* Parse a VERSIONS payload: -1 if its length is odd. Stores up to max_out
 * versions in out (which may be NULL if max_out is 0) and sets *n_out to
 * the number listed in the cell. */
int versions_cell_parse(const uint8_t *payload, size_t len, uint16_t *out,
                        size_t max_out, size_t *n_out);
/* The highest version listed both in the VERSIONS payload and in ours;
 * 0 if there is none, -1 if the payload is malformed. */
int versions_highest_common(const uint8_t *payload, size_t len,
                            const uint16_t *ours, size_t n_ours);

/* ---- NETINFO (tor-spec 4.5) ---- */
#define NETINFO_ATYPE_NONE 0 /* our marker: absent or not understood */
#define NETINFO_ATYPE_IPV4 4
#define NETINFO_ATYPE_IPV6 6
/* How many of the sender's own addresses we keep; further recognised
 * addresses are checked for bounds but dropped. */
#define NETINFO_MAX_MY_ADDRS 8

typedef struct netinfo_addr_t {
  uint8_t type;     /* NETINFO_ATYPE_* */
  uint8_t addr[16]; /* network order; IPv4 uses the first 4 bytes */
} netinfo_addr_t;

typedef struct netinfo_t {
  uint32_t timestamp; /* seconds since the epoch; clients send 0 */
  netinfo_addr_t other_addr;
  uint8_t n_my_addrs;
  netinfo_addr_t my_addrs[NETINFO_MAX_MY_ADDRS];
} netinfo_t;

/* Parse a NETINFO payload (normally CELL_PAYLOAD_LEN bytes). Addresses of
 * unknown type, or whose length does not match their type, are skipped
 * (other_addr gets type NONE); a length running past the payload is an
 * error. Trailing bytes are ignored. */
int netinfo_parse(netinfo_t *out, const uint8_t *payload, size_t len);
/* Write ni as a NUL-padded CELL_PAYLOAD_LEN payload. An other_addr of type
 * NONE is sent as an empty address of type 0. -1 on a bad type or more
 * than NETINFO_MAX_MY_ADDRS addresses. */
int netinfo_build(uint8_t *payload, const netinfo_t *ni);
/* Fill cell as a NETINFO cell (circ_id 0) holding ni. */
int netinfo_cell_make(cell_t *cell, const netinfo_t *ni);

/* ---- CERTS (tor-spec 4.2) ---- */
#define CERTS_MAX_COUNT 255

typedef struct certs_entry_t {
  uint8_t type;         /* CERTS_TYPE_* (core/proto/torcert.h) */
  uint16_t len;
  const uint8_t *body;  /* borrowed: points into the parsed payload */
} certs_entry_t;

typedef struct certs_cell_t {
  unsigned n_certs;
  certs_entry_t certs[CERTS_MAX_COUNT];
} certs_cell_t;

/* Parse a CERTS payload; -1 if a certificate runs past the payload or a
 * certificate type appears twice. Trailing bytes are ignored. */
int certs_cell_parse(certs_cell_t *out, const uint8_t *payload, size_t len);
/* The entry of the given type, or NULL. */
const certs_entry_t *certs_cell_find(const certs_cell_t *c, uint8_t type);
/* Append a certificate (borrowed) to c before building; -1 if full or a
 * duplicate type. */
int certs_cell_add(certs_cell_t *c, uint8_t type, const uint8_t *body,
                   size_t len);
/* New CERTS var cell; -1 if the total does not fit VAR_CELL_MAX_PAYLOAD. */
int certs_cell_build(const certs_cell_t *c, var_cell_t **out);

/* ---- AUTH_CHALLENGE (tor-spec 4.3) ---- */
#define AUTH_CHALLENGE_LEN 32
/* Methods beyond this many are length-checked but not kept. */
#define AUTH_CHALLENGE_MAX_METHODS 16

typedef struct auth_challenge_t {
  uint8_t challenge[AUTH_CHALLENGE_LEN];
  uint16_t n_methods; /* number stored in methods[] */
  uint16_t methods[AUTH_CHALLENGE_MAX_METHODS];
} auth_challenge_t;

int auth_challenge_parse(auth_challenge_t *out, const uint8_t *payload,
                         size_t len);
int auth_challenge_has_method(const auth_challenge_t *ac, uint16_t method);
/* New AUTH_CHALLENGE var cell; -1 if n_methods is too large. */
int auth_challenge_build(const auth_challenge_t *ac, var_cell_t **out);

/* ---- AUTHENTICATE (tor-spec 4.4) ---- */
#define AUTHTYPE_RSA_SHA256_TLSSECRET 1
#define AUTHTYPE_ED25519_SHA256_RFC5705 3

/* Parse AuthType | AuthLen | Authentication; *auth points into payload.
 * -1 if AuthLen runs past the payload. Trailing bytes are ignored. */
int authenticate_cell_parse(const uint8_t *payload, size_t len,
                            uint16_t *auth_type, const uint8_t **auth,
                            size_t *auth_len);
/* New AUTHENTICATE var cell; -1 if auth_len does not fit. */
int authenticate_cell_build(uint16_t auth_type, const uint8_t *auth,
                            size_t auth_len, var_cell_t **out);

/* ---- AUTH0003 authenticator (tor-spec 4.4.2) ----
 * TYPE[8] CID[32] SID[32] CID_ED[32] SID_ED[32] SLOG[32] CLOG[32]
 * SCERT[32] TLSSECRETS[32] RAND[24] SIG[64]. The signature covers every
 * byte before it. */
#define AUTH3_TYPE_STR "AUTH0003"
#define AUTH3_TYPE_LEN 8
#define AUTH3_RAND_LEN 24
#define AUTH3_FIXED_LEN (AUTH3_TYPE_LEN + 8 * 32)           /* 264 */
#define AUTH3_SIGNED_LEN (AUTH3_FIXED_LEN + AUTH3_RAND_LEN) /* 288 */
#define AUTH3_BODY_LEN (AUTH3_SIGNED_LEN + ED25519_SIG_LEN) /* 352 */
/* Exporter label for TLSSECRETS; the context is CID_ED. */
#define AUTH3_EXPORTER_LABEL "EXPORTER FOR TOR TLS CLIENT BINDING AUTH0003"

typedef struct auth3_t {
  uint8_t cid[32];        /* SHA-256 of initiator's RSA identity (DER) */
  uint8_t sid[32];        /* SHA-256 of responder's RSA identity (DER) */
  uint8_t cid_ed[32];     /* initiator's Ed25519 identity */
  uint8_t sid_ed[32];     /* responder's Ed25519 identity or zeros */
  uint8_t slog[32];       /* responder -> initiator running digest */
  uint8_t clog[32];       /* initiator -> responder running digest */
  uint8_t scert[32];      /* SHA-256 of responder's TLS certificate */
  uint8_t tlssecrets[32]; /* RFC 5705 exporter output */
  uint8_t rand[AUTH3_RAND_LEN];
  uint8_t sig[ED25519_SIG_LEN];
} auth3_t;

/* Serialise TYPE..RAND (the signed portion). */
void auth3_encode_signed(uint8_t out[AUTH3_SIGNED_LEN], const auth3_t *a);
/* Serialise and sign with the initiator's link-authentication key: fills
 * a->sig and writes the AUTH3_BODY_LEN-byte authenticator to out. */
int auth3_sign(uint8_t out[AUTH3_BODY_LEN], auth3_t *a,
               const ed25519_keypair_t *auth_key);
/* Parse a received authenticator: -1 if shorter than AUTH3_BODY_LEN or if
 * TYPE is not "AUTH0003". Bytes between RAND and the final 64-byte SIG are
 * allowed (and signed) per the spec; they are not kept. */
int auth3_parse(auth3_t *out, const uint8_t *body, size_t len);
/* Full responder-side check: body parses, its TYPE..TLSSECRETS equal those
 * of expected (RAND and SIG of expected are ignored), and SIG is a valid
 * signature by auth_key of every byte before it. 0 or -1. */
int auth3_check(const uint8_t *body, size_t len, const auth3_t *expected,
                const uint8_t auth_key[ED25519_PUBKEY_LEN]);
#endif
