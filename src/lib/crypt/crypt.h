/* SPDX-License-Identifier: BSD-3-Clause */
/* crypt.h -- pctor's only view of OpenSSL's libcrypto.
 *
 * Everything above src/lib/crypt uses these fixed-size, allocation-light
 * primitives; no other directory includes <openssl/...> (src/lib/tls aside).
 * Conventions: functions return 0 on success and -1 on failure; "out"
 * buffers are caller-owned and of the size the name says; keys that hold
 * secrets are wiped by their _free()/_wipe() function.
 *
 * Sub-headers by subsystem:
 *   rand.h        secure random bytes
 *   digest.h      SHA-1, SHA-256, SHA3-256, SHAKE-256, HMAC-SHA256
 *   cipher.h      AES-CTR stream cipher (128 and 256 bit keys)
 *   curve25519.h  X25519 key agreement
 *   ed25519.h     Ed25519 signatures
 *   ed25519_ext.h Ed25519 with expanded keys; curve25519 -> Ed25519 conversion
 *   rsa.h         RSA-1024 (Tor identity, TAP onion key) and RSA signatures
 *   kdf.h         HKDF-SHA256 (RFC 5869) and Tor's KDF-TOR
 *   crypt_init.h  one-time library start-up
 */
#ifndef PCTOR_LIB_CRYPT_CRYPT_H
#define PCTOR_LIB_CRYPT_CRYPT_H
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/rand.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/cipher.h"
#include "lib/crypt/curve25519.h"
#include "lib/crypt/ed25519.h"
#include "lib/crypt/ed25519_ext.h"
#include "lib/crypt/rsa.h"
#include "lib/crypt/kdf.h"
#endif
