/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_vici.c -- fuzz target: VICI from charon (feature/ipsec/vici_msg).
 *
 * Input: a byte stream as read from the VICI socket: 4-byte segment length
 * headers checked with vici_segment_length(), each segment parsed with
 * vici_packet_parse(), and the message of responses and events parsed with
 * vici_msg_parse(), walked and formatted for a log line.
 * Bound: the parsed tree and its formatted text: 64 KiB + 32 bytes per
 * input byte.
 */
#include "fuzz.h"

#include "feature/ipsec/vici_msg.h"

#include <stdlib.h>

static void
walk(const vici_node_t *n, int depth)
{
  if (!n || depth > 64)
    return;
  size_t vlen;
  (void)vici_node_name(n);
  (void)vici_node_value(n, &vlen);
  (void)vici_node_count(n);
  for (const vici_node_t *c = vici_node_first(n); c; c = vici_node_next(c))
    walk(c, depth + 1);
}

static void
run(const uint8_t *data, size_t len)
{
  const char *err = NULL;
  while (len >= 4) {
    size_t seg = 0;
    if (vici_segment_length(data, &seg, &err) < 0 || seg > len - 4)
      return;
    vici_packet_t pkt;
    if (vici_packet_parse(data + 4, seg, &pkt, &err) == 0 &&
        pkt.body_len > 0) {
      vici_msg_t *m = NULL;
      int r = vici_msg_parse(pkt.body, pkt.body_len, &m, &err);
      fuzz_verbose("vici: packet type %d: %s", (int)pkt.type,
                   r == 0 ? "message parsed" : err);
      if (r == 0) {
        const char *em = NULL;
        (void)vici_msg_check_success(m, &em);
        (void)vici_msg_get_str(m, "success");
        (void)vici_msg_n_elements(m);
        walk(vici_msg_root(m), 0);
        free(vici_msg_format(m));
        vici_msg_free(m);
      }
    }
    data += 4 + seg;
    len -= 4 + seg;
  }
}

const fuzz_target_t fuzz_target = {
  .name = "vici", .run = run, .amp_factor = 32, .amp_slack = 64 * 1024,
};
