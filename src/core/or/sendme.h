/* SPDX-License-Identifier: BSD-3-Clause */
/* sendme.h -- the RELAY_SENDME body (tor-spec 7.3, proposal 289) and the
 * digests an authenticated SENDME must echo: the one encoder, parser and
 * verifier, used by every circuit end (the relay side in edge.c, the
 * origin side in circuit.c and feature/client, tools).
 *
 * Body formats:
 *   - empty: version 0 (tor still accepts it: its sendme_accept_min_version
 *     defaults to 0);
 *   - VERSION [1] DATA_LEN [2] DATA [DATA_LEN]: version 0 ignores DATA;
 *     version 1 carries a 20-byte digest in DATA (DATA_LEN >= 20, bytes
 *     beyond the 20 are ignored). A non-empty body must hold the whole
 *     header and DATA_LEN bytes of DATA (tor's parser refuses a truncated
 *     one); versions above 1 are refused. We always send version 1.
 *
 * Which digest: the relay digest (the running digest of the cell's
 * direction, relay_crypto_last_digest) of the DATA cell that completed an
 * increment of the circuit window -- the 100th, 200th ... cell with fixed
 * windows, every sendme_inc-th with congestion control (whose controller
 * keeps those digests with their send times, congestion_control.h).
 * For the fixed windows the sender keeps them in a sendme_digests_t, a
 * FIFO bounded by the number of increments in a full window: a SENDME
 * pops the oldest; a v1 one must carry it.
 */
#ifndef PCTOR_CORE_OR_SENDME_H
#define PCTOR_CORE_OR_SENDME_H
#include <stddef.h>
#include <stdint.h>

#define SENDME_DIGEST_LEN 20
#define SENDME_HEADER_LEN 3
#define SENDME_V1_LEN (SENDME_HEADER_LEN + SENDME_DIGEST_LEN)
/* The highest version we understand. */
#define SENDME_MAX_VERSION 1

/* Write a v1 SENDME body carrying digest to out; returns SENDME_V1_LEN. */
size_t sendme_encode_v1(uint8_t out[SENDME_V1_LEN], const uint8_t *digest);

/* Parse a SENDME body of len bytes. Returns 0 and sets *digest (v1: the 20
 * bytes in body, v0: NULL), or -1 and sets *why. Never reads beyond len. */
int sendme_parse(const uint8_t *body, size_t len, const uint8_t **digest,
                 const char **why);

/* Digests of the cells an authenticated SENDME must answer, oldest first. */
#define SENDME_DIGESTS_MAX 10
typedef struct sendme_digests_t {
  uint8_t d[SENDME_DIGESTS_MAX][SENDME_DIGEST_LEN];
  unsigned n;
} sendme_digests_t;

/* Remember digest (ignored when already full: a well-behaved window never
 * gets there). */
void sendme_digests_record(sendme_digests_t *q, const uint8_t *digest);
/* A circuit SENDME arrived carrying digest (NULL: v0). The oldest recorded
 * digest is used up either way; returns -1 when digest is not NULL and
 * there was none or it differs, else 0. */
int sendme_digests_check(sendme_digests_t *q, const uint8_t *digest);
#endif
