/* SPDX-License-Identifier: BSD-3-Clause */
/* control_auth.h -- the control protocol's authentication (control-spec
 * 3.5, 3.24): the secret-to-key hashes of HashedControlPassword, the
 * authentication cookie, and SAFECOOKIE's HMACs.
 *
 * HashedControlPassword has tor's format "16:" followed by 58 hex digits:
 * an 8-byte salt, one byte giving the iteration count (OpenPGP's iterated
 * and salted S2K, RFC 4880 3.7.1.3: count = (16 + (c & 15)) << ((c >> 4)
 * + 6)), and the SHA-1 of salt||password repeated to count bytes. `tor
 * --hash-password` makes such hashes and pctor accepts them.
 *
 * The cookie is 32 random bytes written to CookieAuthFile when pctor
 * starts (mode 0600, or 0640 with CookieAuthFileGroupReadable). COOKIE
 * sends them in hex; SAFECOOKIE proves knowledge of them with the two
 * HMAC-SHA256 values below, keyed by the constant strings of the spec,
 * over cookie || client nonce || server nonce.
 */
#ifndef PCTOR_FEATURE_CONTROL_CONTROL_AUTH_H
#define PCTOR_FEATURE_CONTROL_CONTROL_AUTH_H
#include <stddef.h>
#include <stdint.h>

#define CONTROL_COOKIE_LEN 32
#define CONTROL_NONCE_LEN 32
#define CONTROL_S2K_SALT_LEN 8
#define CONTROL_S2K_COUNT_SPEC 0x60 /* 65536 bytes, as tor */

/* A new "16:..." hash of password (len bytes) with salt. */
char *control_auth_hash_password(const char *password, size_t len,
                                 const uint8_t salt[CONTROL_S2K_SALT_LEN]);
/* Is s a well-formed "16:" hash? */
int control_auth_hash_is_valid(const char *s);
/* 1 when password matches hashed, 0 when not, -1 when hashed is not a
 * well-formed hash. Comparison in constant time. */
int control_auth_check_password(const char *hashed, const char *password,
                                size_t len);

/* SAFECOOKIE: the server's and the controller's HMACs. */
void control_auth_safecookie(const uint8_t cookie[CONTROL_COOKIE_LEN],
                             const uint8_t *client_nonce, size_t cn_len,
                             const uint8_t server_nonce[CONTROL_NONCE_LEN],
                             uint8_t server_hash[32],
                             uint8_t client_hash[32]);

/* Make a new cookie and write it to path (mode 0600, 0640 when
 * group_readable). Returns 0, or -1 with *err_out set (newly
 * allocated). */
int control_auth_write_cookie(const char *path, int group_readable,
                              uint8_t cookie_out[CONTROL_COOKIE_LEN],
                              char **err_out);
/* Constant-time comparison. */
int control_auth_memeq(const void *a, const void *b, size_t n);
#endif
