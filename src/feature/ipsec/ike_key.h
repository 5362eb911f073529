/* SPDX-License-Identifier: BSD-3-Clause */
/* ike_key.h -- the relay's Ed25519 IKE key and the certificate that binds
 * it to the relay's Tor identity.
 *
 * Why a key of its own: charon authenticates IKE with keys it loads as
 * PKCS#8 (RFC 8410) seeds, while a relay's Tor identity may be offline and
 * is at best an "expanded" secret that cannot be turned back into a seed.
 * So each relay has a separate Ed25519 "IKE key", made on first start and
 * kept in DataDirectory/keys/IKE_KEY_FILENAME (PKCS#8 PEM, mode 0600, the
 * very text handed to charon's load-key). A file that exists but cannot
 * be read as such a key makes loading fail: the key is never silently
 * replaced (peers would refuse us until they learnt the new one).
 *
 * Binding it to the identity: an "IKE key certificate", a Tor Ed25519
 * certificate (cert-spec section 2.1) of type IKE_CERT_TYPE whose
 * CERTIFIED_KEY is the IKE public key, signed by the relay's medium-term
 * signing key with that key in a signed-with-ed25519-key extension. The
 * signing key is in turn certified by the identity in the type-4
 * certificate every relay already has (the one its CERTS cells carry). A
 * peer that knows our identity from the link handshake checks
 *   identity --type 4--> signing key --IKE_CERT_TYPE--> IKE key
 * with ike_cert_check_chain(); both certificates must be unexpired.
 *
 * The certificate type: cert-spec A.1 assigns 0x04..0x0B, and newer specs
 * continue upwards from there; pctor's private type sits at the top of
 * the range (0xF0) so it can never be confused with a Tor certificate
 * signed by the same signing key (Tor certificates are signed without a
 * context prefix; the type byte is what separates them).
 */
#ifndef PCTOR_FEATURE_IPSEC_IKE_KEY_H
#define PCTOR_FEATURE_IPSEC_IKE_KEY_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/proto/torcert.h"
#include "lib/crypt/ed25519.h"

#define IKE_KEY_FILENAME "ike_ed25519_key"
#define IKE_CERT_TYPE 0xF0
/* Our IKE certificates are valid this long (never beyond the signing
 * key's own certificate) and are re-made when less than
 * IKE_CERT_RENEW_SEC is left. */
#define IKE_CERT_LIFETIME_SEC (7 * 86400)
#define IKE_CERT_RENEW_SEC (86400)
/* Longest certificate encoding we accept from a peer (ours are 140
 * bytes: one extension). */
#define IKE_CERT_MAX_LEN 512

typedef struct ike_key_t ike_key_t;

/* Load DataDirectory/keys/IKE_KEY_FILENAME, or create it (and the keys
 * directory, mode 0700) if it does not exist. NULL on error, with a newly
 * allocated message in *err (if err is not NULL). */
ike_key_t *ike_key_load_or_create(const char *datadir, char **err);
/* A key from a known seed (tests). Never NULL. */
ike_key_t *ike_key_new_from_seed(const uint8_t seed[ED25519_SEED_LEN]);
void ike_key_free_(ike_key_t *k);
#define ike_key_free(k) do { ike_key_free_(k); (k) = NULL; } while (0)

const uint8_t *ike_key_public(const ike_key_t *k);
/* The SubjectPublicKeyInfo PEM of the public key (for VICI "pubkeys"). */
const char *ike_key_public_pem(const ike_key_t *k);
/* The PKCS#8 PEM of the secret key (for VICI load-key): owned by k,
 * wiped when k is freed. *len gets its length. */
const char *ike_key_private_pem(const ike_key_t *k, size_t *len);

/* The IKE key certificate for ike_pub, signed by the relay's signing key,
 * expiring at `expires` (rounded up to the hour). NULL if signing fails. */
torcert_t *ike_cert_create(const ed25519_keypair_t *signing,
                           const uint8_t ike_pub[ED25519_PUBKEY_LEN],
                           time_t expires);

/* Check the chain identity -> signing key -> IKE key at now:
 * signing_cert must be a type-4 certificate signed by identity, ike_cert
 * an IKE_CERT_TYPE certificate signed by the key signing_cert certifies;
 * neither may be expired. On success returns 0, copies the certified IKE
 * key to ike_pub_out and the earlier of the two expiry times to
 * *expires_out. On failure returns -1 with *why set to a static
 * explanation. */
int ike_cert_check_chain(const uint8_t *signing_cert, size_t signing_cert_len,
                         const uint8_t *ike_cert, size_t ike_cert_len,
                         const uint8_t identity[ED25519_PUBKEY_LEN],
                         time_t now,
                         uint8_t ike_pub_out[ED25519_PUBKEY_LEN],
                         time_t *expires_out, const char **why);
#endif
