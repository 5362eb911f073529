/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap_wire.h -- the two BackTap records a datagram link carries
 * (Tschorsch & Scheuermann, NSDI 2016, section 3.3, Figure 3; doc/backtap.md).
 *
 *   CELL record, 519 bytes: the link cell with the paper's extended header
 *     CIRCID [4] | SEQ [4] | FLAGS [1] | COMMAND [1] | PAYLOAD [509]
 *     SEQ numbers cells (not bytes) of one circuit in one direction on one
 *     hop; FLAGS: 0x01 SYN (the first cell of that direction: SEQ is its
 *     initial sequence number), 0x02 PATH (with SYN only: every hop of
 *     the circuit from its origin up to the sender is BackTap; the end
 *     may then drop the end-to-end windows), other bits reserved and
 *     zero.
 *   FEEDBACK record, 13 bytes: ACK and FWD for one circuit, cumulative
 *     CIRCID [4] | FLAGS [1] | ACK [4] | FWD [4]
 *     FLAGS: 0x01 ACK present (all cells before ACK arrived), 0x02 FWD
 *     present (all cells before FWD left towards the next hop), 0x04 PROBE
 *     (the sender of this record waits for a FWD for its own cells and
 *     asks the peer to repeat its feedback: a lost last FWD would
 *     otherwise leave the window closed for good), 0x08 OOO (sent at once
 *     because a cell arrived above a hole: only these count as duplicate
 *     ACKs, so a FWD update with an unchanged ACK never triggers a fast
 *     retransmit), 0x10 HOLE (the sender of this record holds cells above
 *     ACK: a partial ACK without it, after a spurious timeout, retransmits
 *     nothing); OOO and HOLE need ACK; at least one of ACK, FWD, PROBE is
 *     set,
 *     other bits reserved and zero; an absent field is zero.
 *
 * The record's length comes from the datagram framing (the dgram link
 * layer); a record of any other length is truncated or padded and refused.
 * Integers are big-endian. Parsers never read past the given length, never
 * allocate, and say what was wrong.
 */
#ifndef PCTOR_FEATURE_BACKTAP_BACKTAP_WIRE_H
#define PCTOR_FEATURE_BACKTAP_BACKTAP_WIRE_H
#include <stddef.h>
#include <stdint.h>

/* Record types as BackTap names them; the link layer maps them onto its
 * own record type numbers. */
typedef enum {
  BACKTAP_REC_CELL = 1,
  BACKTAP_REC_FEEDBACK = 2,
} backtap_rec_type_t;

#define BACKTAP_CELL_BODY_LEN 510 /* COMMAND + PAYLOAD of a fixed cell */
#define BACKTAP_CELL_REC_LEN (4 + 4 + 1 + BACKTAP_CELL_BODY_LEN) /* 519 */
#define BACKTAP_FB_REC_LEN 13
#define BACKTAP_LINK_CELL_LEN (4 + BACKTAP_CELL_BODY_LEN) /* 514 */

#define BACKTAP_CF_SYN 0x01
#define BACKTAP_CF_PATH 0x02
#define BACKTAP_CF_KNOWN (BACKTAP_CF_SYN | BACKTAP_CF_PATH)
#define BACKTAP_FB_ACK 0x01
#define BACKTAP_FB_FWD 0x02
#define BACKTAP_FB_PROBE 0x04
#define BACKTAP_FB_OOO 0x08
#define BACKTAP_FB_HOLE 0x10
#define BACKTAP_FB_KNOWN                                                \
  (BACKTAP_FB_ACK | BACKTAP_FB_FWD | BACKTAP_FB_PROBE | BACKTAP_FB_OOO |  \
   BACKTAP_FB_HOLE)

typedef struct backtap_cell_hdr_t {
  uint32_t circid;
  uint32_t seq;
  uint8_t flags;
} backtap_cell_hdr_t;

typedef struct backtap_feedback_t {
  uint32_t circid;
  uint8_t flags;
  uint32_t ack; /* meaningful if flags & BACKTAP_FB_ACK */
  uint32_t fwd; /* meaningful if flags & BACKTAP_FB_FWD */
} backtap_feedback_t;

/* Write a CELL record for the 514-byte link cell (CIRCID | COMMAND |
 * PAYLOAD) into out (BACKTAP_CELL_REC_LEN bytes). */
void backtap_cell_encode(uint8_t *out, const uint8_t *link_cell,
                         uint32_t seq, uint8_t flags);
/* Parse a CELL record of len bytes: fill *hdr and point *body at its
 * COMMAND + PAYLOAD (BACKTAP_CELL_BODY_LEN bytes inside rec). 0 on
 * success, -1 with *why set. */
int backtap_cell_parse(const uint8_t *rec, size_t len, backtap_cell_hdr_t *hdr,
                       const uint8_t **body, const char **why);
/* Write a FEEDBACK record into out (BACKTAP_FB_REC_LEN bytes); fields whose
 * flag is clear are written as zero. */
void backtap_feedback_encode(uint8_t *out, const backtap_feedback_t *fb);
/* Parse a FEEDBACK record of len bytes. 0 on success, -1 with *why set. */
int backtap_feedback_parse(const uint8_t *rec, size_t len,
                           backtap_feedback_t *fb, const char **why);

/* Serial-number arithmetic on 32-bit sequence numbers (RFC 1982): a - b as
 * a signed distance, valid while the numbers are within 2^31 of each
 * other (a window is at most a few thousand cells). */
static inline int32_t
backtap_seq_diff(uint32_t a, uint32_t b)
{
  return (int32_t)(a - b);
}

#endif
