/* SPDX-License-Identifier: BSD-3-Clause */
/* kdf.h -- key derivation: HKDF-SHA256 (RFC 5869) as used by ntor, and
 * KDF-TOR (iterated SHA-1) as used by CREATE_FAST (tor-spec 5.2.1). */
#ifndef PCTOR_LIB_CRYPT_KDF_H
#define PCTOR_LIB_CRYPT_KDF_H
#include <stddef.h>
#include <stdint.h>
/* RFC 5869 extract-and-expand. salt may be NULL (zero-length). */
int crypt_hkdf_sha256(uint8_t *out, size_t outlen, const uint8_t *ikm,
                      size_t ikmlen, const uint8_t *salt, size_t saltlen,
                      const uint8_t *info, size_t infolen);
/* KDF-TOR: K = H(K0|0) | H(K0|1) | ... truncated to outlen (<= 255*20). */
int crypt_kdf_tor(uint8_t *out, size_t outlen, const uint8_t *k0,
                  size_t k0len);
#endif
