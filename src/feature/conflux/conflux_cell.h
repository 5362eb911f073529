/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_cell.h -- the bodies of the four conflux relay messages
 * (proposal 329 section 2.2 and 2.6, in the layout tor 0.4.8/0.4.9 uses on
 * the wire).
 *
 *   CONFLUX_LINK (19), CONFLUX_LINKED (20): the same body,
 *     VERSION [1] = 1
 *     NONCE [32]  LAST_SEQNO_SENT [8]  LAST_SEQNO_RECV [8]  DESIRED_UX [1]
 *   CONFLUX_LINKED_ACK (21): empty.
 *   CONFLUX_SWITCH (22): RELATIVE_SEQ [4].
 *
 * Parsing follows tor's trunnel definitions: an unknown version or a
 * DESIRED_UX outside 0..4 is malformed; bytes after the fixed fields are
 * ignored (tor 0.4.8 pads SWITCH to a full relay body; future versions may
 * extend LINK). Integers are big-endian. Nothing allocates.
 *
 * The UX values are those of tor's trunnel file, which swaps 3 and 4
 * relative to the proposal text: 3 is HIGH_THROUGHPUT (what tor clients
 * ask for by default), 4 is LOW_MEM_THROUGHPUT.
 */
#ifndef PCTOR_FEATURE_CONFLUX_CONFLUX_CELL_H
#define PCTOR_FEATURE_CONFLUX_CONFLUX_CELL_H
#include <stddef.h>
#include <stdint.h>

#define CFX_NONCE_LEN 32
#define CFX_LINK_VERSION 1
#define CFX_LINK_LEN (1 + CFX_NONCE_LEN + 8 + 8 + 1) /* 50 */
#define CFX_SWITCH_LEN 4

enum {
  CFX_UX_NO_OPINION = 0,
  CFX_UX_MIN_LATENCY = 1,
  CFX_UX_LOW_MEM_LATENCY = 2,
  CFX_UX_HIGH_THROUGHPUT = 3,
  CFX_UX_LOW_MEM_THROUGHPUT = 4,
};
#define CFX_UX_MAX CFX_UX_LOW_MEM_THROUGHPUT

typedef struct cfx_link_t {
  uint8_t nonce[CFX_NONCE_LEN];
  uint64_t last_seq_sent;
  uint64_t last_seq_recv;
  uint8_t desired_ux;
} cfx_link_t;

/* Encode a LINK/LINKED body into out; returns CFX_LINK_LEN, or -1 if cap is
 * too small or desired_ux is out of range. */
int cfx_link_encode(const cfx_link_t *link, uint8_t *out, size_t cap);
/* Parse a LINK/LINKED body. Returns 0, or -1 with *why. */
int cfx_link_parse(cfx_link_t *link, const uint8_t *body, size_t len,
                   const char **why);
/* SWITCH: encode returns CFX_SWITCH_LEN or -1; parse returns 0 or -1
 * (shorter than 4 bytes) with *why. */
int cfx_switch_encode(uint32_t relative_seq, uint8_t *out, size_t cap);
int cfx_switch_parse(const uint8_t *body, size_t len, uint32_t *relative_seq,
                     const char **why);
/* "throughput", "latency", "throughput_lowmem", "latency_lowmem" (tor's
 * ConfluxClientUX values) -> UX code; -1 if unknown. And back. */
int cfx_ux_from_name(const char *name);
const char *cfx_ux_name(uint8_t ux);
#endif
