/* SPDX-License-Identifier: BSD-3-Clause */
/* consensus.h -- v3 network-status consensus documents (dir-spec 3.4.1),
 * in both flavors a client uses: "ns" (server-descriptor digests, exit
 * policy summaries in "p" lines) and "microdesc" (microdescriptor digests
 * in "m" lines, dir-spec 3.9.2).
 *
 * Parsing and verification are separate steps:
 *   consensus_parse()        syntax only: preamble, authority section,
 *                            router status entries, footer, signatures;
 *                            computes the digests of the signed portion.
 *   consensus_verify()       signatures against the configured authorities
 *                            and their key certificates: accepted when more
 *                            than half of the authorities (those with a
 *                            v3ident) have a good signature.
 *   consensus_check_time()   validity interval against "now".
 */
#ifndef PCTOR_FEATURE_DIR_CONSENSUS_H
#define PCTOR_FEATURE_DIR_CONSENSUS_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "feature/dir/dir_authority.h"
#include "feature/dir/dir_keycert.h"
#include "feature/dir/policy_summary.h"
#include "lib/address/address.h"

/* Bounds. */
#define CONSENSUS_MAX_SIZE (32 * 1024 * 1024)
#define CONSENSUS_MAX_ROUTERS 100000
#define CONSENSUS_MAX_SIGS 64
#define CONSENSUS_MAX_VOTERS 64
#define CONSENSUS_MAX_PARAMS 512

/* A consensus that expired less than this long ago is still used
 * ("reasonably live", dir-spec 5.1). */
#define CONSENSUS_REASONABLY_LIVE (24 * 60 * 60)
/* Clock-skew tolerance: a consensus valid this far in the future is
 * refused; one valid more than CONSENSUS_EARLY_WARN in the future draws a
 * clock-skew warning but is used. */
#define CONSENSUS_FUTURE_SKEW (24 * 60 * 60)
#define CONSENSUS_EARLY_WARN 60

typedef enum {
  CONSENSUS_FLAVOR_NS = 0,
  CONSENSUS_FLAVOR_MICRODESC = 1,
} consensus_flavor_t;

/* Router status flags ("s" line). */
#define RS_FLAG_AUTHORITY (1u << 0)
#define RS_FLAG_BADEXIT (1u << 1)
#define RS_FLAG_EXIT (1u << 2)
#define RS_FLAG_FAST (1u << 3)
#define RS_FLAG_GUARD (1u << 4)
#define RS_FLAG_HSDIR (1u << 5)
#define RS_FLAG_MIDDLEONLY (1u << 6)
#define RS_FLAG_NOEDCONSENSUS (1u << 7)
#define RS_FLAG_RUNNING (1u << 8)
#define RS_FLAG_STABLE (1u << 9)
#define RS_FLAG_STALEDESC (1u << 10)
#define RS_FLAG_V2DIR (1u << 11)
#define RS_FLAG_VALID (1u << 12)
#define RS_FLAG_SYBIL (1u << 13)
/* Name of one flag bit ("Guard"), or NULL. */
const char *consensus_flag_name(uint32_t bit);
/* Bit for a flag name, 0 if unknown. */
uint32_t consensus_flag_from_name(const char *s, size_t len);

typedef struct consensus_rs_t {
  char nickname[20];
  uint8_t rsa_id[20];
  /* ns flavor: SHA-1 of the server descriptor (20 bytes);
   * microdesc flavor: SHA-256 of the microdescriptor (32 bytes). */
  uint8_t digest[32];
  int has_digest;
  uint32_t ipv4; /* host order */
  uint16_t or_port, dir_port;
  int has_ipv6;
  pc_addr_t ipv6_or; /* first "a" line with an IPv6 address */
  uint32_t flags;
  int has_bandwidth;
  uint32_t bandwidth; /* "w Bandwidth=" (kilobytes/s units) */
  int bw_unmeasured;
  char *version;   /* "v" line, or NULL */
  char *protocols; /* "pr" line, or NULL */
  policy_summary_t *policy; /* ns flavor "p" line, or NULL */
} consensus_rs_t;

typedef struct consensus_voter_t {
  char nickname[20];
  uint8_t v3ident[20];
  char address[64];
  uint32_t ipv4;
  uint16_t dir_port, or_port;
  int is_legacy;
} consensus_voter_t;

typedef enum {
  CONSENSUS_SIG_SHA1 = 0,
  CONSENSUS_SIG_SHA256 = 1,
  CONSENSUS_SIG_UNKNOWN = 2,
} consensus_sig_alg_t;

typedef struct consensus_sig_t {
  consensus_sig_alg_t alg;
  uint8_t identity[20];           /* authority v3ident */
  uint8_t signing_key_digest[20]; /* SHA-1 of its signing key */
  uint8_t sig[512];
  size_t sig_len;
} consensus_sig_t;

typedef struct consensus_param_t {
  char name[64];
  int32_t value;
} consensus_param_t;

typedef struct consensus_t {
  consensus_flavor_t flavor;
  int consensus_method;
  time_t valid_after, fresh_until, valid_until;
  int vote_seconds, dist_seconds;
  uint32_t known_flags; /* RS_FLAG_* bits listed in known-flags */
  int n_params;
  consensus_param_t *params;
  int has_bw_weights;
  int n_bw_weights;
  consensus_param_t *bw_weights;
  /* "required-client-protocols" / "recommended-client-protocols" (dir-spec
   * 3.4.1), as listed (at most 1024 bytes), or NULL. */
  char *required_client_protocols;
  char *recommended_client_protocols;
  int n_voters;
  consensus_voter_t *voters;
  int n_rs;
  consensus_rs_t *rs; /* sorted by rsa_id */
  int n_sigs;
  consensus_sig_t *sigs;
  /* Digests of the signed portion (start through "directory-signature "). */
  uint8_t digest_sha1[20];
  uint8_t digest_sha256[32];
} consensus_t;

/* Parse a consensus of either flavor. Returns 0 and a new *out, or -1
 * with *err (allocated) naming the problem. Unknown keywords are ignored;
 * malformed known items, misordered or duplicate router entries, a
 * missing signature section or trailing garbage are errors. */
int consensus_parse(const char *doc, size_t len, consensus_t **out,
                    char **err);
void consensus_free_(consensus_t *c);
#define consensus_free(c)                                                     \
  do {                                                                        \
    consensus_free_(c);                                                       \
    (c) = NULL;                                                               \
  } while (0)

/* Results of consensus_verify(). */
#define CONSENSUS_VERIFY_OK 0
#define CONSENSUS_VERIFY_BAD (-1)        /* not enough good signatures */
#define CONSENSUS_VERIFY_NEED_CERTS (-2) /* might pass with more certs */

typedef struct consensus_verify_info_t {
  int n_authorities; /* configured authorities with a v3ident */
  int n_needed;      /* n_authorities / 2 + 1 */
  int n_good;        /* distinct authorities with a good signature */
  int n_bad;         /* signatures that failed to verify */
  int n_unknown;     /* signatures by authorities not configured */
  int n_missing_cert;
  uint8_t missing_cert[CONSENSUS_MAX_SIGS][20]; /* v3idents */
} consensus_verify_info_t;

/* Check the signatures of c against the authorities (those with
 * has_v3ident and not bridge authorities) and the certificates (only
 * those valid at now count). info may be NULL. Returns one of
 * CONSENSUS_VERIFY_*; on failure *err explains (allocated). */
int consensus_verify(const consensus_t *c, const dir_authority_t *auths,
                     int n_auths, dir_keycert_t *const *certs, int n_certs,
                     time_t now, consensus_verify_info_t *info, char **err);

/* Validity at now: 0 live (valid-after <= now <= valid-until, with
 * CONSENSUS_FUTURE_SKEW tolerated before valid-after); 1 expired but
 * reasonably live; -1 unusable (*err says why). */
int consensus_check_time(const consensus_t *c, time_t now, char **err);

/* Consensus parameter (params line) with bounds, or dflt if absent or out
 * of [min, max]. */
int32_t consensus_get_param(const consensus_t *c, const char *name,
                            int32_t dflt, int32_t min, int32_t max);
/* Bandwidth weight ("Wgg"...), or dflt if absent. */
int32_t consensus_get_bw_weight(const consensus_t *c, const char *name,
                                int32_t dflt);
/* Router status entry by RSA identity, or NULL. */
const consensus_rs_t *consensus_find(const consensus_t *c,
                                     const uint8_t rsa_id[20]);
#endif
