/* SPDX-License-Identifier: BSD-3-Clause */
/* serverdesc.h -- the minimal parse of server descriptors (dir-spec
 * 2.1.1) a client needs with UseMicrodescriptors 0: the ns-flavor
 * consensus lists each relay's descriptor by the SHA-1 of its signed
 * portion ("router" through the newline after "router-signature"), and
 * the descriptor supplies what the consensus does not: the ntor onion
 * key, the ed25519 master identity and the family.
 *
 * The result is a microdesc_t (the client-side "descriptor" record) with:
 * digest = the SHA-1 (first 20 bytes, rest zero), ntor_key, ed25519_id
 * (master-key-ed25519), family (normalised as in microdescriptors),
 * family_ids ("ed25519:" and the family key of each valid family-cert,
 * tor 0.4.9's family keys, as authorities derive microdescriptors'
 * family-ids lines; at most SERVERDESC_FAMILY_CERTS, more is refused),
 * rsa_id_digest = SHA-1 of the signing-key (the relay's RSA identity),
 * and no policy (the ns consensus carries the exit-policy summary). The
 * descriptor's own signatures are not checked: the digest listed in a
 * verified consensus already authenticates the signed portion.
 */
#ifndef PCTOR_FEATURE_DIR_SERVERDESC_H
#define PCTOR_FEATURE_DIR_SERVERDESC_H
#include <stddef.h>

#include "feature/dir/microdesc.h"

#define SERVERDESC_MAX_SIZE (128 * 1024)
#define SERVERDESC_FAMILY_CERTS 8
#define SERVERDESC_FAMILY_CERT_MAX 256 /* bytes of one family-cert */

/* Parse one descriptor spanning exactly len bytes (0, or -1 + *err). */
int serverdesc_parse(const char *s, size_t len, microdesc_t **out,
                     char **err);
/* Parse concatenated descriptors; same contract as
 * microdesc_parse_many(). */
int serverdesc_parse_many(const char *s, size_t len, microdesc_t ***out,
                          int *n, char **err);
#endif
