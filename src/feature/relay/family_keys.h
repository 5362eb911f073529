/* SPDX-License-Identifier: BSD-3-Clause */
/* family_keys.h -- tor 0.4.9's relay family keys ("happy families",
 * proposal 321): FamilyId, FamilyKeyDirectory and --keygen-family.
 *
 * A family is an ed25519 key pair whose secret every member holds; its ID
 * is the unpadded base64 of the public key (43 characters, the FamilyId
 * line). A member proves membership with a "family-cert" in its server
 * descriptor: an ed25519 certificate of type 12 (FAMILY_V_IDENTITY),
 * signed by the family key (in the signed-with-key extension), that
 * certifies the relay's ed25519 master identity key, expiring with the
 * relay's signing-key certificate (as tor does; it is re-made with each
 * descriptor). Authorities put the family IDs of valid certificates in
 * the microdescriptor; relays only publish the certificates.
 *
 * Files, tor's (what tor --keygen-family NAME writes, 0600):
 *   NAME.secret_family_key  "== ed25519v1-secret: fmly-id ==" NUL-padded
 *                           to 32 bytes, then the 64-byte expanded secret
 *                           key (tor's ed25519 secret-key file format)
 *   NAME.public_family_id   the family ID and a newline
 * A relay looks for *.secret_family_key in FamilyKeyDirectory (default:
 * its KeyDirectory). "FamilyId *" takes every key found there; otherwise
 * each FamilyId needs a key with that ID (a missing one is an error that
 * names the ID and the directory, as tor refuses to start), and keys no
 * FamilyId names are not used (warned about, as tor does).
 */
#ifndef PCTOR_FEATURE_RELAY_FAMILY_KEYS_H
#define PCTOR_FEATURE_RELAY_FAMILY_KEYS_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/crypt/ed25519.h"

/* Length of a family ID (unpadded base64 of 32 bytes). */
#define FAMILY_ID_LEN 43
/* At most this many family keys are used (authorities may refuse
 * descriptors with more than three family-cert lines). */
#define FAMILY_KEYS_MAX 8

typedef struct family_keys_t {
  int n;
  ed25519_keypair_t kp[FAMILY_KEYS_MAX];
} family_keys_t;

/* Whether s is a family ID (43 base64 characters of a 32-byte key) or
 * "*". */
int family_id_is_valid(const char *s);

/* The family ID of pub, in out (FAMILY_ID_LEN + 1 bytes). */
void family_id_format(char out[FAMILY_ID_LEN + 1], const uint8_t pub[32]);

/* tor --keygen-family NAME: a new family key in NAME.secret_family_key and
 * its ID in NAME.public_family_id (paths relative to the working
 * directory, as tor; an existing key file is never overwritten). *out
 * gets what tor prints: "# Generated NAME.secret_family_key\nFamilyId
 * ID\n". Returns 0, or -1 with a newly allocated *err. */
int family_keys_generate(const char *name, char **out, char **err);

/* Load the keys that ids (n_ids FamilyId values, "*" for all) name from
 * dir into out (zeroed first). n_ids 0: out->n = 0 and dir is not read.
 * Returns 0, or -1 with a newly allocated *err naming the file or ID. */
int family_keys_load(const char *dir, const char *const *ids, int n_ids,
                     family_keys_t *out, char **err);

/* The same checks as family_keys_load() without keeping the keys or
 * warning about unlisted ones (--verify-config). 0, or -1 with *err. */
int family_keys_check(const char *dir, const char *const *ids, int n_ids,
                      char **err);

/* The family certificate (type 12) by family key kp certifying the relay
 * identity id_pub until expires; newly allocated, *len bytes; NULL if
 * signing failed. */
uint8_t *family_keys_make_cert(const ed25519_keypair_t *kp,
                               const uint8_t id_pub[32], time_t expires,
                               size_t *len);

/* Check a family certificate from a descriptor: type 12, certifying
 * id_pub, with the signed-with-key extension, correctly signed, not
 * expired at now (0: not checked). On success the family key is copied
 * to family_pub (may be NULL) and 0 is returned; -1 with *why. */
int family_keys_check_cert(const uint8_t *cert, size_t len,
                           const uint8_t id_pub[32], time_t now,
                           uint8_t family_pub[32], const char **why);

/* Wipe the secrets in k. */
void family_keys_clear(family_keys_t *k);

#endif
