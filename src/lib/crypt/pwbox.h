/* SPDX-License-Identifier: BSD-3-Clause */
/* pwbox.h -- tor's passphrase-encrypted boxes ("TORBOX00"), in which tor
 * keeps a passphrase-protected ed25519 master identity key
 * (ed25519_master_id_secret_key_encrypted).
 *
 * Layout (all lengths in bytes):
 *   "TORBOX00"             8, magic
 *   H                      1, length of the key-derivation specifier
 *   specifier              H: one type byte, then the type's salt and
 *                          parameters (see below)
 *   iv                     16
 *   body                   a multiple of 128: a 4-byte big-endian length
 *                          n, the n bytes of plaintext, zeros; encrypted
 *                          with AES-128-CTR under key[0..16) and iv
 *   mac                    32, HMAC-SHA256 under key[16..48) of every
 *                          byte before it
 * The 48 bytes of key come from the passphrase and the specifier:
 *   type 0 (RFC 2440): salt 8, count byte 1; the iterated+salted SHA-1
 *          S2K digest (20 bytes), expanded to 48 with HKDF-SHA256 (salt:
 *          the 8 salt bytes, info "EXPAND"). Debian's tor (built without
 *          libscrypt) writes this type, and so does pctor, so that both
 *          read each other's files.
 *   type 1 (PBKDF2-HMAC-SHA1): salt 16, log2(iterations) 1.
 *   type 2 (scrypt): salt 16, log2(N) 1, (log2(r) << 4 | log2(p)) 1.
 * A specifier of exactly 9 bytes is type 0 without its type byte.
 *
 * Bounded: boxes above PWBOX_MAX_LEN and parameters that would take more
 * than 64 MiB (scrypt), 2^20 iterations (PBKDF2) or about 1 MiB of hashing
 * (RFC 2440 count bytes above 0x9f) are refused as corrupt instead of
 * being computed.
 */
#ifndef PCTOR_LIB_CRYPT_PWBOX_H
#define PCTOR_LIB_CRYPT_PWBOX_H
#include <stddef.h>
#include <stdint.h>

#define PWBOX_MAX_LEN 4096

/* crypt_pwbox_open() results. */
#define PWBOX_OK 0
#define PWBOX_BAD_PASSPHRASE (-1) /* the MAC does not match */
#define PWBOX_CORRUPT (-2)        /* not a box, or impossible fields */

/* Seal len bytes of in under passphrase (pwlen bytes) with a fresh
 * salt and iv (type 0, count byte 0x60, as tor). *out gets a newly
 * allocated box of *outlen bytes. Returns 0, or -1 when len is too
 * large for a box. */
int crypt_pwbox_seal(uint8_t **out, size_t *outlen, const uint8_t *in,
                     size_t len, const char *passphrase, size_t pwlen);

/* Open a box. On PWBOX_OK, *out gets the newly allocated plaintext
 * (the caller wipes it) of *outlen bytes; otherwise *why (may be NULL)
 * says what was wrong (a static string). */
int crypt_pwbox_open(uint8_t **out, size_t *outlen, const uint8_t *box,
                     size_t boxlen, const char *passphrase, size_t pwlen,
                     const char **why);

#endif
