/* SPDX-License-Identifier: BSD-3-Clause */
/* base64.h -- base64 (RFC 4648, standard alphabet) encoding and decoding.
 *
 * Tor documents carry keys, signatures and certificates in base64: with
 * '=' padding and 64-character lines inside PEM-style "-----BEGIN ...-----"
 * blocks, and without padding for the single-line keys and digests of
 * descriptors and consensuses. The encoder covers both with flags. The
 * decoder accepts either form: it skips ASCII whitespace anywhere,
 * accepts missing padding, and rejects characters outside the alphabet,
 * '=' anywhere but at the end, and lengths no encoding can produce (one
 * character left over in the last group). Bits below the last whole byte
 * are ignored.
 *
 * Neither function writes past the destination size it is given. Sizes:
 * base64_encoded_len() gives the exact encoded length, and
 * base64_decoded_len_max() a bound on the decoded length that is exact for
 * input without whitespace and padding.
 */
#ifndef PCTOR_LIB_ENCODING_BASE64_H
#define PCTOR_LIB_ENCODING_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encoder flags. */
/* Omit the trailing '=' padding. */
#define BASE64_NOPAD 1
/* End every 64 characters of output, and the output itself, with '\n'
 * (the body of a PEM block). */
#define BASE64_MULTILINE 2

/* Decoder errors. */
#define BASE64_ERR_INVALID (-1) /* not base64 */
#define BASE64_ERR_SPACE (-2)   /* destination too small */

/* Exact number of characters base64_encode() produces for srclen bytes
 * with these flags, not counting the terminating NUL. */
size_t base64_encoded_len(size_t srclen, int flags);

/* Encode srclen bytes at src into dest as a NUL-terminated string. destlen
 * must be at least base64_encoded_len(srclen, flags) + 1. Returns the
 * number of characters written (without the NUL), or BASE64_ERR_SPACE
 * (writing nothing) if destlen is too small. */
long base64_encode(char *dest, size_t destlen, const uint8_t *src,
                   size_t srclen, int flags);

/* Upper bound on the bytes base64_decode() produces from srclen
 * characters (exact when the input has no whitespace or padding). */
size_t base64_decoded_len_max(size_t srclen);

/* Decode srclen characters at src (need not be NUL-terminated) into dest.
 * Returns the number of bytes written, BASE64_ERR_INVALID if src is not
 * base64, or BASE64_ERR_SPACE if the result does not fit in destlen. On
 * error the contents of dest are unspecified (but nothing past destlen is
 * written). */
long base64_decode(uint8_t *dest, size_t destlen, const char *src,
                   size_t srclen);

#endif
