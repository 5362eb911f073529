/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_keys.h -- the key material the protocol spine needs, as plain data.
 *
 * core/ does not create, store or rotate keys: feature/relay does that and
 * hands core a filled relay_keys_t (core_set_relay_keys() in channel.h).
 * The link handshake sends the certificates below in CERTS cells and signs
 * AUTHENTICATE with the link authentication key; CREATE2 handling uses the
 * ntor keys. A process without relay keys (a pure client) passes NULL.
 *
 * All encoded certificates are exactly the bytes that go into a CERTS cell.
 *
 * Onion keys and threads. CREATE2 handshakes run on worker threads
 * (cpuworker.c) while the event loop may rotate the onion keys, so the
 * handshakes never read relay_keys_t. They read an onion_keys_t: an
 * immutable, reference-counted copy of what the server side of ntor and
 * ntor v3 needs (identities, current and previous ntor key). The owner of
 * relay_keys_t calls relay_keys_update_onion() after every change of the
 * ntor fields; that installs a new set and drops its reference to the old
 * one. A queued handshake holds a reference to the set that was current
 * when it was queued, so a rotation (or the end of the previous key's
 * grace period) never changes or frees keys a worker is reading; the old
 * set is wiped and freed when its last job is answered. The TAP key is not
 * in the set: TAP handshakes are refused, and the key is used only on the
 * event loop (descriptor signing).
 */
#ifndef PCTOR_CORE_OR_RELAY_KEYS_H
#define PCTOR_CORE_OR_RELAY_KEYS_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "lib/crypt/curve25519.h"
#include "lib/crypt/ed25519.h"
#include "lib/crypt/rsa.h"
#include "lib/tls/tls.h"

/* Immutable once made; share it with onion_keys_ref(). */
typedef struct onion_keys_t {
  unsigned refs; /* atomic: use onion_keys_ref()/onion_keys_unref() */
  uint8_t rsa_id_digest[20];
  uint8_t ed_id[ED25519_PUBKEY_LEN];
  /* ntor[0] is the current key, ntor[1] the previous one (n_ntor 2) during
   * its grace period. */
  curve25519_keypair_t ntor[2];
  size_t n_ntor;
} onion_keys_t;

/* A new set (one reference) from the identities and ntor keys; previous
 * may be NULL. */
onion_keys_t *onion_keys_new(const uint8_t rsa_id_digest[20],
                             const uint8_t ed_id[ED25519_PUBKEY_LEN],
                             const curve25519_keypair_t *current,
                             const curve25519_keypair_t *previous);
/* Another reference to k (any thread); returns k. */
onion_keys_t *onion_keys_ref(onion_keys_t *k);
/* Drop a reference (any thread); the last one wipes and frees. NULL ok. */
void onion_keys_unref_(onion_keys_t *k);
#define onion_keys_unref(k) do { onion_keys_unref_(k); (k) = NULL; } while (0)

typedef struct relay_keys_t {
  /* RSA-1024 identity (legacy, still required by tor 0.4.9). */
  crypt_rsa_t *rsa_identity;
  uint8_t rsa_id_digest[20];        /* SHA-1 of the public key DER */
  uint8_t *rsa_id_cert;             /* CERTS type 2: self-signed X.509 */
  size_t rsa_id_cert_len;
  uint8_t *rsa_ed_crosscert;        /* CERTS type 7: RSA id -> ed25519 id */
  size_t rsa_ed_crosscert_len;

  /* Ed25519 identity ("master") and medium-term signing key. */
  ed25519_keypair_t ed_identity;
  ed25519_keypair_t ed_signing;
  uint8_t *ed_signing_cert;         /* CERTS type 4: identity -> signing */
  size_t ed_signing_cert_len;
  time_t ed_signing_expires;

  /* Link keys: the TLS context whose certificate the type-5 cert binds,
   * and the link authentication key (type 6) for AUTHENTICATE. */
  tls_context_t *tls;
  uint8_t *tls_link_cert;           /* CERTS type 5: signing -> TLS cert */
  size_t tls_link_cert_len;
  ed25519_keypair_t ed_link_auth;
  uint8_t *ed_auth_cert;            /* CERTS type 6: signing -> auth key */
  size_t ed_auth_cert_len;

  /* RSA-1024 TAP onion key. pctor refuses TAP handshakes, but directory
   * authorities still require an onion-key (and its crosscert) in every
   * server descriptor; it rotates together with the ntor key. */
  crypt_rsa_t *tap_onion_key;

  /* ntor onion keys: current, and the previous one during its grace
   * period (has_ntor_previous). */
  curve25519_keypair_t ntor_current;
  curve25519_keypair_t ntor_previous;
  int has_ntor_previous;

  /* The set CREATE2 handshakes use, made from the fields above by
   * relay_keys_update_onion(); NULL until then. */
  onion_keys_t *onion;
} relay_keys_t;

/* (Re)build k->onion from k's identities and ntor keys: call it whenever
 * they change. The old set lives on while queued handshakes hold it. */
void relay_keys_update_onion(relay_keys_t *k);
/* Drop k->onion (when k is freed). */
void relay_keys_clear_onion(relay_keys_t *k);
/* Free everything k holds (keys, certificates, the TLS context, the onion
 * set) and wipe k; the struct itself stays its owner's to free. */
void relay_keys_clear(relay_keys_t *k);

#endif
