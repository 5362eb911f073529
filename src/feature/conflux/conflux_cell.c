/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_cell.c -- encoding and parsing of the conflux relay message
 * bodies (see conflux_cell.h). Bounded: every read is checked against the
 * given length first. */
#include "feature/conflux/conflux_cell.h"
#include "lib/bytes/bytes.h"

#include <string.h>

int
cfx_link_encode(const cfx_link_t *link, uint8_t *out, size_t cap)
{
  if (cap < CFX_LINK_LEN || link->desired_ux > CFX_UX_MAX)
    return -1;
  out[0] = CFX_LINK_VERSION;
  memcpy(out + 1, link->nonce, CFX_NONCE_LEN);
  set_u64(out + 1 + CFX_NONCE_LEN, link->last_seq_sent);
  set_u64(out + 1 + CFX_NONCE_LEN + 8, link->last_seq_recv);
  out[1 + CFX_NONCE_LEN + 16] = link->desired_ux;
  return CFX_LINK_LEN;
}

int
cfx_link_parse(cfx_link_t *link, const uint8_t *body, size_t len,
               const char **why)
{
  *why = NULL;
  if (len < 1) {
    *why = "empty link body";
    return -1;
  }
  if (body[0] != CFX_LINK_VERSION) {
    *why = "unknown link version";
    return -1;
  }
  if (len < CFX_LINK_LEN) {
    *why = "link body too short";
    return -1;
  }
  uint8_t ux = body[1 + CFX_NONCE_LEN + 16];
  if (ux > CFX_UX_MAX) {
    *why = "unknown desired UX";
    return -1;
  }
  memcpy(link->nonce, body + 1, CFX_NONCE_LEN);
  link->last_seq_sent = get_u64(body + 1 + CFX_NONCE_LEN);
  link->last_seq_recv = get_u64(body + 1 + CFX_NONCE_LEN + 8);
  link->desired_ux = ux;
  return 0;
}

int
cfx_switch_encode(uint32_t relative_seq, uint8_t *out, size_t cap)
{
  if (cap < CFX_SWITCH_LEN)
    return -1;
  set_u32(out, relative_seq);
  return CFX_SWITCH_LEN;
}

int
cfx_switch_parse(const uint8_t *body, size_t len, uint32_t *relative_seq,
                 const char **why)
{
  *why = NULL;
  if (len < CFX_SWITCH_LEN) {
    *why = "switch body shorter than 4 bytes";
    return -1;
  }
  *relative_seq = get_u32(body);
  return 0;
}

static const struct {
  const char *name;
  uint8_t ux;
} ux_names[] = {
    {"throughput", CFX_UX_HIGH_THROUGHPUT},
    {"latency", CFX_UX_MIN_LATENCY},
    {"throughput_lowmem", CFX_UX_LOW_MEM_THROUGHPUT},
    {"latency_lowmem", CFX_UX_LOW_MEM_LATENCY},
};

int
cfx_ux_from_name(const char *name)
{
  if (!name)
    return -1;
  for (size_t i = 0; i < sizeof(ux_names) / sizeof(ux_names[0]); i++)
    if (!strcmp(name, ux_names[i].name))
      return ux_names[i].ux;
  return -1;
}

const char *
cfx_ux_name(uint8_t ux)
{
  for (size_t i = 0; i < sizeof(ux_names) / sizeof(ux_names[0]); i++)
    if (ux_names[i].ux == ux)
      return ux_names[i].name;
  return ux == CFX_UX_NO_OPINION ? "no_opinion" : "unknown";
}
