/* SPDX-License-Identifier: BSD-3-Clause */
/* backtap_wire.c -- encode and parse BackTap's CELL and FEEDBACK records
 * (layouts in backtap_wire.h and doc/backtap.md).
 *
 * Both records have a fixed length, so a parser checks the length first and
 * then reads fixed offsets: nothing on the wire says how long anything is.
 * Reserved flag bits must be zero, so that a later version can give them a
 * meaning without old relays misreading them; a FEEDBACK record must carry
 * at least one of ACK, FWD and PROBE, and an absent field must be zero
 * (otherwise the record is not one we wrote).
 */
#include "feature/backtap/backtap_wire.h"

#include <string.h>

#include "lib/bytes/bytes.h"

void
backtap_cell_encode(uint8_t *out, const uint8_t *link_cell, uint32_t seq,
                    uint8_t flags)
{
  memcpy(out, link_cell, 4);
  set_u32(out + 4, seq);
  out[8] = flags;
  memcpy(out + 9, link_cell + 4, BACKTAP_CELL_BODY_LEN);
}

int
backtap_cell_parse(const uint8_t *rec, size_t len, backtap_cell_hdr_t *hdr,
                   const uint8_t **body, const char **why)
{
  if (len != BACKTAP_CELL_REC_LEN) {
    *why = len < BACKTAP_CELL_REC_LEN ? "truncated cell record"
                                      : "overlong cell record";
    return -1;
  }
  hdr->circid = get_u32(rec);
  hdr->seq = get_u32(rec + 4);
  hdr->flags = rec[8];
  if (hdr->flags & ~BACKTAP_CF_KNOWN) {
    *why = "cell record with reserved flags set";
    return -1;
  }
  if ((hdr->flags & BACKTAP_CF_PATH) && !(hdr->flags & BACKTAP_CF_SYN)) {
    *why = "cell record with PATH but without SYN";
    return -1;
  }
  if (hdr->circid == 0) {
    *why = "cell record for circuit ID 0";
    return -1;
  }
  *body = rec + 9;
  return 0;
}

void
backtap_feedback_encode(uint8_t *out, const backtap_feedback_t *fb)
{
  set_u32(out, fb->circid);
  out[4] = fb->flags;
  set_u32(out + 5, (fb->flags & BACKTAP_FB_ACK) ? fb->ack : 0);
  set_u32(out + 9, (fb->flags & BACKTAP_FB_FWD) ? fb->fwd : 0);
}

int
backtap_feedback_parse(const uint8_t *rec, size_t len, backtap_feedback_t *fb,
                       const char **why)
{
  if (len != BACKTAP_FB_REC_LEN) {
    *why = len < BACKTAP_FB_REC_LEN ? "truncated feedback record"
                                    : "overlong feedback record";
    return -1;
  }
  fb->circid = get_u32(rec);
  fb->flags = rec[4];
  fb->ack = get_u32(rec + 5);
  fb->fwd = get_u32(rec + 9);
  if (fb->flags & ~BACKTAP_FB_KNOWN) {
    *why = "feedback record with reserved flags set";
    return -1;
  }
  if (!(fb->flags & (BACKTAP_FB_ACK | BACKTAP_FB_FWD | BACKTAP_FB_PROBE))) {
    *why = "feedback record with neither ACK, FWD nor PROBE";
    return -1;
  }
  if ((fb->flags & (BACKTAP_FB_OOO | BACKTAP_FB_HOLE)) &&
      !(fb->flags & BACKTAP_FB_ACK)) {
    *why = "feedback record with OOO or HOLE but no ACK";
    return -1;
  }
  if ((!(fb->flags & BACKTAP_FB_ACK) && fb->ack != 0) ||
      (!(fb->flags & BACKTAP_FB_FWD) && fb->fwd != 0)) {
    *why = "feedback record with a non-zero absent field";
    return -1;
  }
  if (fb->circid == 0) {
    *why = "feedback record for circuit ID 0";
    return -1;
  }
  return 0;
}
