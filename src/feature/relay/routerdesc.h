/* SPDX-License-Identifier: BSD-3-Clause */
/* routerdesc.h -- the relay's server descriptor (dir-spec 2.1.1): build
 * and sign it from the relay's keys and a small configuration, and check
 * one (for tests, and to refuse to upload a descriptor we got wrong).
 * Also its extra-info document (dir-spec 2.1.2), signed the same way:
 * routerdesc_build_extrainfo().
 *
 * The descriptor tells the truth about pctor: its platform line names
 * pctor (never "Tor ..."), its proto line lists only the subprotocol
 * versions pctor implements (ROUTERDESC_PROTO), it offers no directory
 * service unless the caller says pctor answers BEGIN_DIR, and its exit
 * policy is "reject *:*" unless the caller gives one.
 *
 * Items, in this order (a tor 0.4.9 authority parses them in any order
 * except that identity-ed25519 must follow "router" and the two
 * signatures must end the document):
 *   router NICK IPV4 ORPORT 0 0
 *   identity-ed25519 + ED25519 CERT (the type-4 signing-key certificate)
 *   master-key-ed25519 B64
 *   or-address [IPV6]:PORT                (when an IPv6 ORPort is given)
 *   platform ...
 *   proto ...
 *   published YYYY-MM-DD HH:MM:SS
 *   fingerprint XXXX XXXX ...
 *   uptime N
 *   bandwidth RATE BURST OBSERVED
 *   onion-key + RSA PUBLIC KEY            (the TAP key)
 *   signing-key + RSA PUBLIC KEY          (the RSA identity)
 *   onion-key-crosscert + CROSSCERT
 *   ntor-onion-key-crosscert SIGN + ED25519 CERT
 *   family ...                            (when given)
 *   family-cert + FAMILY CERT object      (one per FamilyId key)
 *   contact ...                           (when given)
 *   ntor-onion-key B64
 *   accept/reject lines
 *   tunnelled-dir-server                  (only when asked for)
 *   router-sig-ed25519 B64
 *   router-signature + SIGNATURE
 */
#ifndef PCTOR_FEATURE_RELAY_ROUTERDESC_H
#define PCTOR_FEATURE_RELAY_ROUTERDESC_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/or/relay_keys.h"
#include "lib/address/address.h"

/* The subprotocols pctor implements, as the descriptor's proto line lists
 * them: link protocols 4-5 with Ed25519 link authentication (LinkAuth=3),
 * ntor, CREATE2/EXTEND2 with IPv6 link specifiers and ntor v3 (Relay=2-4),
 * Ed25519-signed descriptors with crosscerts (Desc=2), microdescriptors
 * with Ed25519 identities (Microdesc=2), authenticated SENDMEs (FlowCtrl=1)
 * and congestion control negotiated in ntor v3 with XON/XOFF stream flow
 * control at the streams that end here (FlowCtrl=2: tor clients ask such
 * exits for it), and conflux at the exit (Conflux=1, proposal 329:
 * feature/conflux links circuits into sets; tor clients look for it
 * together with FlowCtrl=2). Nothing else until implemented: no Cons,
 * HSDir, Padding, HS*. A relay that answers BEGIN_DIR with the documents it
 * caches (tunnelled_dir_server) also lists DirCache=1
 * (ROUTERDESC_PROTO_DIRCACHE); not DirCache=2, which means serving
 * consensus diffs. */
#define ROUTERDESC_PROTO \
  "Conflux=1 Desc=2 FlowCtrl=1-2 Link=4-5 LinkAuth=3 Microdesc=2 Relay=2-4"
#define ROUTERDESC_PROTO_DIRCACHE \
  "Conflux=1 DirCache=1 Desc=2 FlowCtrl=1-2 Link=4-5 LinkAuth=3 "            \
  "Microdesc=2 Relay=2-4"

/* Defaults for the bandwidth line: pctor does not limit its bandwidth, so
 * it advertises tor's default BandwidthRate and BandwidthBurst (1 GiB/s):
 * an "unlimited" that every tor understands. */
#define ROUTERDESC_DEFAULT_BW_RATE 1073741824ULL
#define ROUTERDESC_DEFAULT_BW_BURST 1073741824ULL

/* Authorities refuse larger descriptors (dir-spec 2.1). */
#define ROUTERDESC_MAX_LEN 20000
/* Lifetime of the ntor-onion-key crosscert when the config gives none. */
#define ROUTERDESC_DEFAULT_CROSSCERT_DAYS 35

/* What goes into the descriptor besides the keys. Strings are borrowed. */
typedef struct routerdesc_config_t {
  const char *nickname;        /* 1-19 [A-Za-z0-9] */
  pc_addr_t address;           /* IPv4 address for the router line */
  uint16_t or_port;            /* its ORPort (!= 0) */
  uint16_t dir_port;           /* its DirPort; 0: none */
  pc_addr_t ipv6_or;           /* AF_INET6 with port: an or-address line;
                                * AF_UNSPEC: none */
  const char *contact;         /* NULL: no contact line */
  const char *const *family;   /* normalised entries (routerdesc_family_
                                * normalize), n_family of them */
  int n_family;
  /* Family keys (FamilyId): one family-cert line each, certifying the
   * ed25519 identity until the signing certificate expires (as tor);
   * n_family_keys of them, at most FAMILY_KEYS_MAX. */
  const ed25519_keypair_t *family_keys;
  int n_family_keys;
  const char *const *exit_policy; /* accept/reject lines without "\n";
                                   * n_exit_policy == 0: "reject *:*" */
  int n_exit_policy;
  const char *ipv6_policy;     /* "accept 80,443": an ipv6-policy line
                                * (IPv6Exit 1); NULL: none */
  uint64_t bw_rate, bw_burst, bw_observed; /* bytes per second */
  const char *platform;        /* NULL: routerdesc_platform() */
  time_t published;
  uint64_t uptime;             /* seconds */
  int crosscert_lifetime_days; /* ntor crosscert validity; 0: default */
  int tunnelled_dir_server;    /* pctor answers BEGIN_DIR */
  int hibernating;             /* "hibernating 1" (AccountingMax) */
  /* dir-spec "overload-general 1 TIME" (proposal 328): the hour of the
   * last overload (MaxMemInQueues closed circuits) within 72 hours;
   * 0: none. */
  time_t overload_general;
  /* An extra-info-digest line for the extra-info document whose digests
   * routerdesc_build_extrainfo() gave; 0: none. */
  int has_extra_info;
  uint8_t extra_info_sha1[20];
  uint8_t extra_info_sha256[32];
} routerdesc_config_t;

/* At most this many history intervals per history line. */
#define ROUTERDESC_MAX_HIST 96

/* What goes into the extra-info document (dir-spec 2.1.2). */
typedef struct routerdesc_extrainfo_t {
  const char *nickname;
  time_t published;
  /* write-history/read-history: n_hist totals in bytes, oldest first, of
   * the hist_interval-second intervals ending at hist_end; n_hist 0: no
   * history lines. */
  time_t hist_end;
  int hist_interval;
  const uint64_t *read_hist, *write_hist;
  int n_hist;
  /* overload-ratelimits (proposal 328): time of the last hit of the
   * bandwidth limit (0: no line), the limits and the hit counts. */
  time_t overload_ratelimits;
  uint64_t rate, burst, n_read_limited, n_write_limited;
  /* overload-fd-exhausted: time the file descriptors last ran out, or 0. */
  time_t overload_fd_exhausted;
  /* Statistics lines (dirreq-*: dirreq_stats.h), each ending in a
   * newline, printable ASCII; NULL: none. */
  const char *stats_lines;
} routerdesc_extrainfo_t;

/* Build and sign the extra-info document; sha1_out and sha256_out get
 * the digests the server descriptor's extra-info-digest line names.
 * Returns a newly allocated string or NULL with *err. */
char *routerdesc_build_extrainfo(const relay_keys_t *keys,
                                 const routerdesc_extrainfo_t *e,
                                 uint8_t sha1_out[20], uint8_t sha256_out[32],
                                 char **err);

/* "pctor VERSION on Linux" (static). */
const char *routerdesc_platform(void);

/* Build and sign the descriptor. Returns a newly allocated NUL-terminated
 * document, or NULL with a newly allocated message in *err (a field that
 * would corrupt the document, a key that is missing, a signature that
 * could not be made, a document over ROUTERDESC_MAX_LEN). */
char *routerdesc_build(const relay_keys_t *keys,
                       const routerdesc_config_t *cfg, char **err);

/* What routerdesc_check() found, for tests. */
typedef struct routerdesc_info_t {
  char nickname[20];
  uint8_t rsa_id_digest[20];
  uint8_t ed_identity[32];
  uint8_t ed_signing[32];
  uint8_t ntor_onion_key[32];
  time_t published;
  int n_family_certs;          /* valid family-cert lines */
  uint8_t family_keys[8][32];  /* their family keys (the first 8) */
} routerdesc_info_t;

/* Check a descriptor the way an authority would, from the document alone:
 * the items above are present exactly once where required, identity-
 * ed25519 is a type-4 certificate with the signing key extension and
 * agrees with master-key-ed25519, the fingerprint matches signing-key,
 * both keys are RSA-1024, the ed25519 signature verifies with the
 * certified signing key and the RSA signature with signing-key, the
 * onion-key crosscert verifies with the TAP key over (identity digest |
 * ed25519 identity), and the ntor crosscert is a type-0A certificate of
 * the ed25519 identity signed by the key converted from the ntor key;
 * each family-cert (at most 8) is a type-12 certificate of the ed25519
 * identity signed by the family key in its extension. Certificates are checked for expiry at now (0: not checked). Returns 0
 * (filling *info when not NULL) or -1 with a newly allocated message in
 * *err. Parsing is bounded by len. */
int routerdesc_check(const char *desc, size_t len, time_t now,
                     routerdesc_info_t *info, char **err);

/* Validate one exit policy line as the descriptor will carry it
 * ("accept ADDRSPEC:PORTSPEC" / "reject ..." per dir-spec 2.1.3, IPv4
 * or "*" addresses). 0, or -1 with a newly allocated message in *err. */
int routerdesc_policy_line_check(const char *line, char **err);

/* Normalise one MyFamily entry: "$HEX40" (optionally "~NICK" or "=NICK"
 * after it, dropped; hex upper-cased) or a nickname. Returns a newly
 * allocated string, or NULL with a newly allocated message in *err. */
char *routerdesc_family_normalize(const char *entry, char **err);

/* The address of family (AF_INET or AF_INET6) that the Address lines
 * give, as tor 0.4.5+: a literal of that family ("192.0.2.1",
 * "2001:db8::1", "[2001:db8::1]"), or a host name resolved for it (A or
 * AAAA, blocking). Returns 1 with *out set (port 0); 0 when no line gives
 * one (no line of that family, or, for IPv6, a host name without an IPv6
 * address: the caller goes on as without Address); -1 with a message in
 * *err when two lines give one, or (IPv4) a host name does not resolve
 * and no other line gives the address. */
int routerdesc_config_address(const char *const *address, int n_address,
                              int family, pc_addr_t *out, char **err);
/* The relay's IPv4 address for its descriptor: the Address lines' one
 * (routerdesc_config_address), else the IPv4 ORPort's address when it is
 * not 0.0.0.0, else the first IPv4 address of a local interface that is
 * up (public ones preferred; loopback last). Returns 0 with *out set, or
 * -1 with a message in *err. */
int routerdesc_pick_address(const char *const *address, int n_address,
                            const pc_addr_t *or_ports, int n_or_ports,
                            pc_addr_t *out, char **err);
/* Unit tests: resolve Address host names with fn instead of getaddrinfo
 * (NULL: back to getaddrinfo). fn returns 0 with *out set to an address
 * of family, or -1 with a newly allocated reason in *err. */
typedef int (*routerdesc_resolve_fn)(const char *name, int family,
                                     pc_addr_t *out, char **err);
void routerdesc_set_resolver_for_testing(routerdesc_resolve_fn fn);
/* A public IPv6 address (not loopback, link-local, unique-local or
 * otherwise private) of a local interface that is up, for an IPv6 ORPort
 * that listens on [::] (tor's address discovery). Returns 0 with *out set
 * (port 0), or -1 when there is none. */
int routerdesc_find_public_ipv6(pc_addr_t *out);

#endif
