/* SPDX-License-Identifier: BSD-3-Clause */
/* microdesc.h -- microdescriptors (dir-spec 3.3): the small per-relay
 * documents a client needs besides the consensus (ntor onion key, family,
 * exit-policy summaries, ed25519 identity). A microdescriptor is
 * identified by the SHA-256 of its text, which the microdesc consensus
 * lists in each router's "m" line; they carry no signature, so that digest
 * match is what authenticates them.
 *
 * Documents arrive concatenated (/tor/micro/d/D1-D2...). A new
 * microdescriptor starts at an "onion-key" item, or at an
 * "ntor-onion-key" item when the current one already has its ntor key
 * (the TAP "onion-key" is optional: newer consensus methods drop it).
 */
#ifndef PCTOR_FEATURE_DIR_MICRODESC_H
#define PCTOR_FEATURE_DIR_MICRODESC_H
#include <stddef.h>
#include <stdint.h>

#include "feature/dir/policy_summary.h"
#include "lib/address/address.h"

#define MICRODESC_MAX_SIZE 64000 /* one microdescriptor */
#define MICRODESC_MAX_FAMILY 1024 /* family / family-ids entries */

typedef struct microdesc_t {
  uint8_t digest[32]; /* SHA-256 of text */
  int has_onion_key;  /* TAP key present (not kept) */
  uint8_t ntor_key[32];
  int has_ed25519_id;
  uint8_t ed25519_id[32];
  int has_rsa_id_digest; /* "id rsa1024" (informational only) */
  uint8_t rsa_id_digest[20];
  int n_family;
  char **family; /* normalised: "$HEX40" upper case, or nickname lower
                  * case */
  int n_family_ids;
  char **family_ids; /* "family-ids" entries as given ("ed25519:...") */
  policy_summary_t *policy;  /* "p", NULL when absent (= reject all) */
  policy_summary_t *policy6; /* "p6", NULL when absent */
  int has_ipv6;
  pc_addr_t ipv6_or; /* "a" line (old consensus methods) */
  char *text; /* the document, NUL-terminated */
  size_t text_len;
} microdesc_t;

/* Parse one microdescriptor spanning exactly len bytes. Returns 0 and a
 * new *out, or -1 with *err (allocated). */
int microdesc_parse(const char *s, size_t len, microdesc_t **out,
                    char **err);
/* Parse a concatenation. Every well-formed one is appended to *mds (array
 * grown with pc_realloc, *n updated); malformed ones are logged and
 * skipped. Returns the number skipped, or -1 with *err if the input is
 * not a sequence of microdescriptors at all (tokenizer error, or it does
 * not start with onion-key/ntor-onion-key). */
int microdesc_parse_many(const char *s, size_t len, microdesc_t ***mds,
                         int *n, char **err);
void microdesc_free_(microdesc_t *md);
#define microdesc_free(md)                                                    \
  do {                                                                        \
    microdesc_free_(md);                                                      \
    (md) = NULL;                                                              \
  } while (0)
#endif
