/* SPDX-License-Identifier: BSD-3-Clause */
/* ike_key.c -- the relay's Ed25519 IKE key and its certificate (see
 * ike_key.h).
 *
 * Design: the key lives in memory as an ed25519_keypair_t plus the two
 * PEM texts charon needs (the PKCS#8 one is secret and wiped on free), so
 * each (re)connection to charon hands over the same bytes without
 * re-encoding. The file is the PKCS#8 PEM itself: `openssl pkey -in FILE
 * -pubout` shows the public key an operator will find in charon's
 * configuration. It is written atomically with mode 0600 through
 * lib/fs, in the keys directory that feature/relay also uses (created
 * 0700 here if this runs first). A key file with group or other access is
 * still used, with a warning, and its mode is tightened.
 *
 * The certificate chain check is deliberately strict: type-4 certificate
 * of the identity (checked against the identity the link handshake
 * proved, not against a key found in the certificate), then the IKE
 * certificate of type IKE_CERT_TYPE with an Ed25519 CERTIFIED_KEY, signed
 * by the certified signing key; unknown extensions that affect validation
 * are refused by torcert_parse(); trailing bytes are refused.
 */
#include "feature/ipsec/ike_key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/crypt/ed25519_pem.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

struct ike_key_t {
  ed25519_keypair_t kp;
  char *priv_pem;
  size_t priv_pem_len;
  char *pub_pem;
};

static ike_key_t *
ike_key_from_keypair(const ed25519_keypair_t *kp)
{
  ike_key_t *k = pc_zalloc(sizeof(*k));
  k->kp = *kp;
  k->priv_pem = ed25519_pem_encode_private(kp, &k->priv_pem_len);
  k->pub_pem = ed25519_pem_encode_public(kp->pub);
  return k;
}

ike_key_t *
ike_key_new_from_seed(const uint8_t seed[ED25519_SEED_LEN])
{
  ed25519_keypair_t kp;
  if (ed25519_keypair_from_seed(&kp, seed) < 0)
    abort(); /* OpenSSL cannot derive a public key: nothing works */
  ike_key_t *k = ike_key_from_keypair(&kp);
  ed25519_keypair_wipe(&kp);
  return k;
}

void
ike_key_free_(ike_key_t *k)
{
  if (!k)
    return;
  if (k->priv_pem)
    pc_memwipe(k->priv_pem, k->priv_pem_len);
  free(k->priv_pem);
  free(k->pub_pem);
  ed25519_keypair_wipe(&k->kp);
  free(k);
}

const uint8_t *
ike_key_public(const ike_key_t *k)
{
  return k->kp.pub;
}

const char *
ike_key_public_pem(const ike_key_t *k)
{
  return k->pub_pem;
}

const char *
ike_key_private_pem(const ike_key_t *k, size_t *len)
{
  if (len)
    *len = k->priv_pem_len;
  return k->priv_pem;
}

/* Read an existing key file. NULL with *err on failure. */
static ike_key_t *
ike_key_read(const char *path, char **err)
{
  uint8_t *data = NULL;
  size_t len = 0;
  int r = fs_read_file(path, 4096, &data, &len);
  if (r < 0) {
    *err = pc_asprintf("Cannot read the IKE key %s: %s", path, strerror(-r));
    return NULL;
  }
  ed25519_keypair_t kp;
  const char *why = NULL;
  r = ed25519_pem_decode_private((const char *)data, len, &kp, &why);
  pc_memwipe(data, len);
  free(data);
  if (r < 0) {
    *err = pc_asprintf("The IKE key %s is unusable (%s); move it away to "
                       "make a new one (peers then learn the new key from "
                       "this relay's announcements)",
                       path, why);
    return NULL;
  }
  struct stat st;
  if (stat(path, &st) == 0 && (st.st_mode & 077)) {
    log_warn("The IKE key %s was readable by others (mode %03o); setting "
             "its mode to 0600",
             path, (unsigned)(st.st_mode & 0777));
    if (chmod(path, 0600) < 0)
      log_warn("Cannot chmod %s: %s", path, strerror(errno));
  }
  ike_key_t *k = ike_key_from_keypair(&kp);
  ed25519_keypair_wipe(&kp);
  return k;
}

ike_key_t *
ike_key_load_or_create(const char *datadir, char **err)
{
  char *dummy = NULL;
  char *msg = NULL;
  if (!err)
    err = &dummy;
  *err = NULL;
  char *dir = fs_path_join(datadir, "keys");
  char *path = fs_path_join(dir, IKE_KEY_FILENAME);
  ike_key_t *k = NULL;
  if (fs_check_private_dir(dir, &msg) < 0) {
    *err = pc_asprintf("Keys directory %s: %s", dir, msg ? msg : "unusable");
    free(msg);
    goto out;
  }
  if (fs_file_exists(path)) {
    k = ike_key_read(path, err);
    if (k)
      log_info("Loaded the IKE key from %s", path);
    goto out;
  }
  ed25519_keypair_t kp;
  ed25519_keypair_generate(&kp);
  k = ike_key_from_keypair(&kp);
  ed25519_keypair_wipe(&kp);
  int r = fs_write_file_atomic(path, k->priv_pem, k->priv_pem_len, 0600);
  if (r < 0) {
    *err = pc_asprintf("Cannot write the IKE key %s: %s", path,
                       strerror(-r));
    ike_key_free(k);
    goto out;
  }
  log_notice("Made a new Ed25519 IKE key for IPsec between relays in %s",
             path);
out:
  if (err == &dummy)
    free(dummy);
  free(dir);
  free(path);
  return k;
}

torcert_t *
ike_cert_create(const ed25519_keypair_t *signing,
                const uint8_t ike_pub[ED25519_PUBKEY_LEN], time_t expires)
{
  return torcert_create(signing, IKE_CERT_TYPE, TORCERT_KEY_ED25519, ike_pub,
                        expires, 1);
}

int
ike_cert_check_chain(const uint8_t *signing_cert, size_t signing_cert_len,
                     const uint8_t *ike_cert, size_t ike_cert_len,
                     const uint8_t identity[ED25519_PUBKEY_LEN], time_t now,
                     uint8_t ike_pub_out[ED25519_PUBKEY_LEN],
                     time_t *expires_out, const char **why)
{
  torcert_t *sc = NULL, *ic = NULL;
  int rv = -1, r;
  if (signing_cert_len > IKE_CERT_MAX_LEN || ike_cert_len > IKE_CERT_MAX_LEN) {
    *why = "certificate too long";
    goto out;
  }
  if (torcert_parse(signing_cert, signing_cert_len, &sc) < 0) {
    *why = "malformed signing-key certificate";
    goto out;
  }
  if (sc->cert_type != TORCERT_TYPE_ID_SIGNING ||
      sc->key_type != TORCERT_KEY_ED25519) {
    *why = "the signing-key certificate is not of type 4";
    goto out;
  }
  if ((r = torcert_checksig(sc, identity, now)) < 0) {
    *why = r == TORCERT_ERR_EXPIRED ? "the signing-key certificate expired"
           : r == TORCERT_ERR_KEY_MISMATCH
               ? "the signing-key certificate is not from this identity"
               : "the signing-key certificate is not signed by this identity";
    goto out;
  }
  if (torcert_parse(ike_cert, ike_cert_len, &ic) < 0) {
    *why = "malformed IKE key certificate";
    goto out;
  }
  if (ic->cert_type != IKE_CERT_TYPE || ic->key_type != TORCERT_KEY_ED25519) {
    *why = "the IKE key certificate has the wrong type";
    goto out;
  }
  if ((r = torcert_checksig(ic, sc->certified_key, now)) < 0) {
    *why = r == TORCERT_ERR_EXPIRED ? "the IKE key certificate expired"
                                    : "the IKE key certificate is not signed "
                                      "by the identity's signing key";
    goto out;
  }
  memcpy(ike_pub_out, ic->certified_key, ED25519_PUBKEY_LEN);
  time_t e1 = torcert_expires(sc), e2 = torcert_expires(ic);
  *expires_out = e1 < e2 ? e1 : e2;
  rv = 0;
out:
  torcert_free(sc);
  torcert_free(ic);
  return rv;
}
