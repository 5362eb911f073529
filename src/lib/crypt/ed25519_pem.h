/* SPDX-License-Identifier: BSD-3-Clause */
/* ed25519_pem.h -- Ed25519 keys as PEM: PKCS#8 private keys and
 * SubjectPublicKeyInfo public keys (RFC 8410), the forms strongSwan's
 * VICI load-key and "pubkeys" accept and `openssl pkey` reads and writes.
 *
 * Only the fixed DER encodings RFC 8410 gives for Ed25519 are produced
 * and accepted:
 *   private: 30 2e 02 01 00 30 05 06 03 2b 65 70 04 22 04 20 SEED[32]
 *            (OneAsymmetricKey version 0, no attributes, no public key)
 *   public:  30 2a 30 05 06 03 2b 65 70 03 21 00 PUB[32]
 * inside "-----BEGIN PRIVATE KEY-----" / "-----BEGIN PUBLIC KEY-----"
 * blocks with 64-character base64 lines. Anything else (another algorithm,
 * a version-1 key with the public key attached, encrypted keys, garbage
 * around the block) is refused by the decoders: these functions exist to
 * hand pctor's own keys to charon and to read back files pctor wrote, not
 * to be a general ASN.1 parser.
 */
#ifndef PCTOR_LIB_CRYPT_ED25519_PEM_H
#define PCTOR_LIB_CRYPT_ED25519_PEM_H
#include <stddef.h>
#include <stdint.h>

#include "lib/crypt/ed25519.h"

#define ED25519_PKCS8_DER_LEN 48
#define ED25519_SPKI_DER_LEN 44

/* The PKCS#8 PEM of kp's secret seed, NUL-terminated, newly allocated
 * (NULL, logged, for a key that has no seed: kp->expanded_only);
 * *len_out (may be NULL) gets its length. It holds a secret: wipe it with
 * pc_memwipe() before free(). */
char *ed25519_pem_encode_private(const ed25519_keypair_t *kp,
                                 size_t *len_out);
/* The SPKI PEM of pub, NUL-terminated, newly allocated. */
char *ed25519_pem_encode_public(const uint8_t pub[ED25519_PUBKEY_LEN]);

/* Read a PKCS#8 PEM Ed25519 private key (len bytes of text; surrounding
 * whitespace allowed) into *kp (public key derived from the seed).
 * Returns 0, or -1 with *err (may be NULL) set to a static description. */
int ed25519_pem_decode_private(const char *pem, size_t len,
                               ed25519_keypair_t *kp, const char **err);
/* Read an SPKI PEM Ed25519 public key into pub. 0 or -1 (+ *err). */
int ed25519_pem_decode_public(const char *pem, size_t len,
                              uint8_t pub[ED25519_PUBKEY_LEN],
                              const char **err);
#endif
