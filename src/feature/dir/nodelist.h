/* SPDX-License-Identifier: BSD-3-Clause */
/* nodelist.h -- the usable view of the network: one dir_node_t per relay
 * of the current consensus, joined with its descriptor (microdescriptor,
 * or server descriptor with UseMicrodescriptors 0) by the digest the
 * consensus lists.
 *
 * A nodelist borrows the consensus and the descriptors it was built from;
 * rebuild it (cheap) whenever either changes, and free it before them.
 */
#ifndef PCTOR_FEATURE_DIR_NODELIST_H
#define PCTOR_FEATURE_DIR_NODELIST_H
#include <stddef.h>
#include <stdint.h>

#include "feature/dir/consensus.h"
#include "feature/dir/microdesc.h"
#include "feature/dir/policy_summary.h"
#include "lib/address/address.h"

typedef struct dir_node_t {
  char nickname[20];
  uint8_t rsa_id[20];
  char hex_id[41]; /* upper-case hex of rsa_id */
  pc_addr_t or_addr; /* IPv4 address and ORPort */
  uint16_t dir_port; /* 0 if none */
  int has_ipv6;
  pc_addr_t ipv6_or;
  uint32_t flags; /* RS_FLAG_* */
  int has_bandwidth;
  uint32_t bandwidth; /* consensus weight (kilobytes/s units) */
  const char *version;   /* "Tor 0.4.9.11", or NULL */
  const char *protocols; /* "pr" line, or NULL */
  const microdesc_t *desc; /* NULL while we lack the descriptor */
  int has_ntor;
  uint8_t ntor_key[32];
  int has_ed25519; /* ignored when NoEdConsensus */
  uint8_t ed25519_id[32];
  /* Exit-policy summaries: the microdescriptor's (microdesc flavor) or
   * the consensus' (ns flavor); NULL means "reject all". */
  const policy_summary_t *policy;
  const policy_summary_t *policy6;
} dir_node_t;

typedef struct dir_nodelist_t {
  const consensus_t *consensus;
  int n_nodes;
  dir_node_t *nodes; /* in consensus order (sorted by rsa_id) */
  int n_with_desc;
} dir_nodelist_t;

/* Build from a consensus and any set of descriptors (extra ones are
 * ignored). Never returns NULL. */
dir_nodelist_t *dir_nodelist_build(const consensus_t *c,
                                   microdesc_t *const *descs, int n_descs);
void dir_nodelist_free_(dir_nodelist_t *nl);
#define dir_nodelist_free(nl)                                                 \
  do {                                                                        \
    dir_nodelist_free_(nl);                                                   \
    (nl) = NULL;                                                              \
  } while (0)

const dir_node_t *dir_nodelist_find_id(const dir_nodelist_t *nl,
                                       const uint8_t rsa_id[20]);
/* First node with that nickname (case-insensitive), or NULL. */
const dir_node_t *dir_nodelist_find_nickname(const dir_nodelist_t *nl,
                                             const char *nick);
/* 1 if the node can be used in a circuit: Running, Valid, with a
 * descriptor that has an ntor key. */
int dir_node_is_usable(const dir_node_t *n);
/* 1 if a and b are in the same family: each lists the other in its
 * family line (by $HEX or nickname), or they share a family-ids entry. */
int dir_nodes_same_family(const dir_node_t *a, const dir_node_t *b);
/* 1 if both have IPv4 addresses in the same /16 (or IPv6 in the same
 * /32). */
int dir_nodes_same_subnet(const dir_node_t *a, const dir_node_t *b);
/* Does a protocol list ("Link=1-5 FlowCtrl=1-2 ...", a consensus "pr" or
 * descriptor "proto" line) include version `version` of protocol `name`?
 * Malformed entries count as absent. */
int dir_protocols_support(const char *protocols, const char *name,
                          unsigned version);
/* The entries of the protocol list `wanted` ("Name=1-2,4 ...") whose
 * versions `have` does not all include, written into out as "Name=v"
 * items separated by spaces (truncated to outlen). Returns how many
 * versions are missing (0: have covers wanted; an entry without "="
 * counts as one missing; an entry whose versions do not parse lists
 * none). */
int dir_protocols_missing(const char *wanted, const char *have, char *out,
                          size_t outlen);
/* 1 if n's listed protocols (when the consensus lists them) include what
 * a pctor client needs of every hop: Relay=2 (CREATE2, EXTEND2 and ntor)
 * and Link=4 (4-byte circuit IDs). A relay without a "pr" line passes. */
int dir_node_has_client_protocols(const dir_node_t *n);
/* "Guard,Exit,..." into buf (the flags in the consensus' order). */
/* Fill t to extend to n with ntor: its address and ORPort, RSA identity,
 * Ed25519 identity when the consensus vouches for it, and ntor key (the
 * caller checks has_ntor and may change the handshake afterwards). */
struct extend_target_t;
void dir_node_extend_target(const dir_node_t *n, struct extend_target_t *t);
char *dir_node_flags_str(const dir_node_t *n, char *buf, size_t len);
#endif
