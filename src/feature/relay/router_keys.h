/* SPDX-License-Identifier: BSD-3-Clause */
/* router_keys.h -- a relay's long-lived keys: create, store, load, rotate,
 * in tor's files and formats.
 *
 * A relay owns, in its key directory (KeyDirectory, by default
 * DataDirectory/keys; directory 0700, files 0600, every file written
 * atomically), exactly the files tor 0.4.9 keeps there, in tor's formats,
 * so that a tor relay's directory works unchanged under pctor and back:
 *
 *   secret_id_key                  RSA-1024 identity, PEM PKCS#1
 *   ed25519_master_id_secret_key   Ed25519 identity ("master") key, tor's
 *                                  expanded secret-key format
 *   ed25519_master_id_secret_key_encrypted  the same in tor's passphrase
 *                                  box (only --keygen opens it; a relay
 *                                  runs with it as with an offline key)
 *   ed25519_master_id_public_key   its public key
 *   ed25519_signing_secret_key     medium-term Ed25519 signing key
 *   ed25519_signing_cert           its type-4 certificate
 *   secret_onion_key_ntor(.old)    curve25519 ntor onion key (and the
 *                                  previous one during its grace period)
 *   secret_onion_key(.old)         RSA-1024 TAP onion key: only published
 *                                  (the authorities require it), rotated
 *                                  with the ntor key
 *
 * and writes DataDirectory/fingerprint and fingerprint-ed25519 exactly as
 * tor writes them. pctor's own earlier files (ed25519_master_id_seed,
 * ed25519_signing_seed, ntor_onion_keys) are converted to these on load.
 * With no master secret key (OfflineMasterKey, or only the public key
 * file present) the relay runs on the stored signing key and certificate
 * and refuses to start when they are missing or expired. The .c file
 * documents the formats byte by byte.
 *
 * A key file that exists but cannot be used (wrong size or header, a
 * public part that does not match the secret part, a certificate not
 * signed by our identity) makes loading fail with a message naming the
 * file: a relay's identity is never silently replaced.
 *
 * The result is a relay_keys_t (core/or/relay_keys.h) that core uses for
 * CERTS/AUTHENTICATE and CREATE2. Everything in it that is not stored is
 * made fresh at each start: the TLS context, the type-5 link certificate,
 * the link authentication key and its type-6 certificate, the self-signed
 * RSA identity certificate (CERTS type 2) and the RSA->Ed25519 crosscert
 * (type 7). router_keys_rotate_if_needed() (call it periodically, e.g.
 * once a minute) renews in place whatever is due; core must therefore
 * re-read the certificate pointers from the struct each time it builds a
 * CERTS cell rather than keep copies across event-loop turns.
 *
 * A relay_keys_t handed out here is part of a larger private allocation:
 * only pass structs obtained from router_keys_load_or_create() to the
 * router_keys_* functions.
 */
#ifndef PCTOR_FEATURE_RELAY_ROUTER_KEYS_H
#define PCTOR_FEATURE_RELAY_ROUTER_KEYS_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/or/relay_keys.h"

/* Onion key schedule defaults (tor's onion-key-rotation-days and
 * onion-key-grace-period-days consensus parameters). */
#define ROUTER_KEYS_ONION_ROTATION_DAYS_DEFAULT 28
#define ROUTER_KEYS_ONION_GRACE_DAYS_DEFAULT 7
/* Medium-term signing key: lifetime of its type-4 certificate, and how
 * close to expiry it may get before a new key is made. */
#define ROUTER_KEYS_SIGNING_LIFETIME_DAYS 30
#define ROUTER_KEYS_SIGNING_RENEW_DAYS 7
/* Type-5 link and type-6 authentication certificates (tor: 2 days). */
#define ROUTER_KEYS_LINK_CERT_LIFETIME_DAYS 2
/* RSA->Ed25519 crosscert (tor: about six months). */
#define ROUTER_KEYS_CROSSCERT_LIFETIME_DAYS 180
/* Self-signed RSA identity certificate: valid one year, back-dated a day. */
#define ROUTER_KEYS_RSA_CERT_LIFETIME_DAYS 365
/* Lifetime of the TLS certificate tls_context_new() makes. */
#define ROUTER_KEYS_TLS_CERT_LIFETIME_DAYS 365

/* Bits of *rotated from router_keys_rotate_if_needed(). */
#define ROUTER_KEYS_ROTATED_NTOR 0x01    /* new current ntor + TAP key */
#define ROUTER_KEYS_DROPPED_NTOR_OLD 0x02 /* previous ntor key dropped */
#define ROUTER_KEYS_ROTATED_SIGNING 0x04 /* new signing key + type-4 cert */
#define ROUTER_KEYS_RENEWED_CERTS 0x08  /* types 2/5/6/7 re-made */
/* The bits after which the server descriptor must be rebuilt and
 * republished (it carries the onion keys and the type-4 certificate). */
#define ROUTER_KEYS_DESCRIPTOR_CHANGED \
  (ROUTER_KEYS_ROTATED_NTOR | ROUTER_KEYS_ROTATED_SIGNING)

typedef struct router_keys_config_t {
  /* Make a new ntor onion key when the current one is this old (>= 1). */
  int onion_key_rotation_days;
  /* Keep accepting the previous ntor key this long after it was replaced
   * (0 .. onion_key_rotation_days). */
  int onion_key_grace_days;
  /* Nickname for the fingerprint files; NULL means "Unnamed". */
  const char *nickname;
  /* Only read another process's keys (test tools naming a running relay):
   * fail if a key is missing, and create, rotate and write nothing. The
   * signing-key certificates may then be absent. */
  int read_only;
  /* tor's KeyDirectory; NULL or "" means DataDirectory/keys. */
  const char *key_directory;
  /* tor's OfflineMasterKey: never create or use the master secret key;
   * run on the signing key and certificate in the key directory. */
  int offline_master_key;
  /* tor's SigningKeyLifetime in days (1..3650; 0 means the default). */
  int signing_key_lifetime_days;
  /* tor's KeyDirectoryGroupReadable: the key directory may be (and, when
   * made, is made) mode 0750 instead of 0700. */
  int key_directory_group_readable;
  /* --keygen only: where passphrases come from. get_passphrase(arg,
   * new_pass, &len) returns a newly allocated passphrase of len bytes:
   * new_pass 0 for the one the stored encrypted master key was sealed
   * with, 1 for the one to seal it with; "" (len 0) for "do not
   * encrypt" (new_pass 1 only); NULL when none can be had (*why, a static
   * string, says why). NULL function: no passphrases at all. */
  char *(*get_passphrase)(void *arg, int new_pass, size_t *len,
                          const char **why);
  void *passphrase_arg;
  /* --keygen only: --no-passphrase (store the master key unencrypted) and
   * --newpass (store the existing master key again under a new
   * passphrase, or unencrypted with no_passphrase). */
  int no_passphrase;
  int newpass;
} router_keys_config_t;

/* Fill cfg with the defaults (28 days, 7 days, NULL nickname, keys in
 * DataDirectory/keys, master key online, signing keys for 30 days). */
void router_keys_config_init(router_keys_config_t *cfg);

/* Load the keys from datadir/keys, creating what is missing (and the
 * directories datadir and datadir/keys, mode 0700), rotate the ntor key
 * and renew the signing key if due at now, build the certificates, and
 * write datadir/fingerprint and datadir/fingerprint-ed25519. cfg may be
 * NULL (defaults). Returns NULL on error with a newly allocated message in
 * *err (when err is not NULL). */
relay_keys_t *router_keys_load_or_create(const char *datadir,
                                         const router_keys_config_t *cfg,
                                         time_t now, char **err);

/* Periodic maintenance at now: rotate the ntor key after
 * onion_key_rotation_days (current becomes previous), drop the previous
 * key onion_key_grace_days after it was replaced, renew the signing key
 * when less than ROUTER_KEYS_SIGNING_RENEW_DAYS are left, and re-make
 * certificates that are about to expire. Stored keys are written to
 * datadir/keys before the function returns. *rotated (may be NULL) gets
 * the ROUTER_KEYS_* bits of what changed (0: nothing). Returns 0, or -1
 * (logged) if a key could not be persisted, in which case the keys in
 * memory are left as they were. */
int router_keys_rotate_if_needed(relay_keys_t *k, const char *datadir,
                                 const router_keys_config_t *cfg, time_t now,
                                 int *rotated);

/* Write datadir/fingerprint ("NICK HEX40\n") and
 * datadir/fingerprint-ed25519 ("NICK BASE64\n") as tor does, unless they
 * already hold exactly that. nickname NULL means "Unnamed". Returns 0 or
 * -1 with a newly allocated message in *err (when err is not NULL). */
int router_keys_write_fingerprints(const relay_keys_t *k,
                                   const char *datadir, const char *nickname,
                                   char **err);

/* "NICK HEX" with 40 uppercase hex digits of the RSA identity digest,
 * no newline. With with_spaces, the digits are in 10 groups of 4
 * separated by single spaces (as tor --list-fingerprint prints them);
 * without, as tor's DataDirectory/fingerprint file and logs have them.
 * nickname NULL: just the fingerprint. Newly allocated. */
char *router_keys_format_rsa_fingerprint(const char *nickname,
                                         const uint8_t digest[20],
                                         int with_spaces);
/* "NICK BASE64" with the 43-character unpadded base64 of the Ed25519
 * identity, no newline (tor's fingerprint-ed25519). nickname NULL: just
 * the base64. Newly allocated. */
char *router_keys_format_ed25519_id(const char *nickname,
                                    const uint8_t pub[32]);

/* Creation time of the current ntor onion key. */
time_t router_keys_ntor_created(const relay_keys_t *k);

/* 1 if k runs without its master secret key (offline master key). */
int router_keys_master_is_offline(const relay_keys_t *k);
/* --verify-config with OfflineMasterKey: read the key directory (cfg's, or
 * datadir/keys) without writing anything and check what start-up would:
 * the master identity's public key is there, the signing key and its
 * certificate are, the certificate is signed by that identity, certifies
 * that signing key, and has not expired at now. Returns 0, or -1 with a
 * newly allocated message in *err. */
int router_keys_check_offline(const char *datadir,
                              const router_keys_config_t *cfg, time_t now,
                              char **err);

/* tor --keygen: load the master identity key from the key directory
 * (ed25519_master_id_secret_key, or ed25519_master_id_secret_key_encrypted
 * opened with cfg->get_passphrase), or create it (tor's files) if there is
 * no identity at all, then make a new signing key and type-4 certificate
 * valid for cfg->signing_key_lifetime_days and write them
 * (ed25519_signing_secret_key, ed25519_signing_cert). A new master key,
 * or the existing one with cfg->newpass, is stored encrypted under the
 * passphrase cfg->get_passphrase gives (new_pass 1), or unencrypted with
 * cfg->no_passphrase or an empty passphrase; the other form's file is
 * removed. Nothing else is created: copy the two signing files to a relay
 * whose master key is offline. Ignores cfg->offline_master_key. *out (may
 * be NULL) gets what tor prints on stdout ("Not encrypting the secret
 * key.\n" when a master key was made and stored unencrypted, else NULL).
 * Fails with a clear *err when the passphrase is wrong or missing, or the
 * master key is absent next to its public key. Returns 0 or -1. */
int router_keys_keygen(const char *datadir, const router_keys_config_t *cfg,
                       time_t now, char **out, char **err);

/* tor --key-expiration sign: logs "The signing certificate stored in
 * KEYDIR/ed25519_signing_cert is valid until WHEN." and returns the stdout
 * line "signing-cert-expiry: 2026-12-26 14:00:00\n" (as_timestamp: the
 * time as seconds since the epoch), newly allocated. k comes from
 * router_keys_load_or_create() with the same datadir and cfg. */
char *router_keys_key_expiration(const relay_keys_t *k, const char *datadir,
                                 const router_keys_config_t *cfg,
                                 int as_timestamp);

/* Take the DataDirectory lock as tor does (an exclusive flock() on
 * datadir/lock, created 0600 if missing), so that tor and pctor, or two
 * pctors, never run on the same keys at once. Returns the lock's file
 * descriptor (keep it open while running; closing it releases the lock),
 * or -1 with a newly allocated *err naming the file ("... is locked:
 * another tor or pctor is using the DataDirectory ..."). Call it before
 * router_keys_load_or_create(); datadir is created (0700) if missing. */
int router_keys_lock_datadir(const char *datadir, char **err);

/* Wipe every secret and free k and everything it owns. NULL is fine. */
void router_keys_free_(relay_keys_t *k);
#define router_keys_free(k) do { router_keys_free_(k); (k) = NULL; } while (0)

#endif
