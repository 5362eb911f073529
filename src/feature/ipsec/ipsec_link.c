/* SPDX-License-Identifier: BSD-3-Clause */
/* ipsec_link.c -- IPsec announcement cells: codec, verification, channel
 * glue (see ipsec_link.h for the format and the acceptance rules).
 *
 * Design:
 * - The codec is two straight-line functions over a cursor that checks
 *   the remaining length before every field; nothing is allocated, parsed
 *   certificates stay in the caller's buffer until ike_cert_check_chain()
 *   copies what it needs.
 * - The channel hooks in core take no user argument for var-cell
 *   handlers, so the handlers and their argument live in one static
 *   registration (set by ipsec_link_start() at start-up, cleared by
 *   ipsec_link_stop()): one broker per process.
 * - Announcements arrive once per link or on state changes, never per
 *   cell of traffic; nothing here is on the relaying fast path.
 */
#include "feature/ipsec/ipsec_link.h"

#include <stdlib.h>
#include <string.h>

#include "core/proto/cell.h"
#include "feature/ipsec/ike_key.h"
#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"

static struct {
  ipsec_link_handlers_t h;
  void *arg;
  int active;
} L;

/* ---- codec ---- */

size_t
ipsec_announce_encode(const ipsec_announce_t *a, uint8_t *out, size_t outlen)
{
  size_t alen;
  if (a->orport.family == AF_INET)
    alen = 4;
  else if (a->orport.family == AF_INET6)
    alen = 16;
  else
    return 0;
  if (a->signing_cert_len > IKE_CERT_MAX_LEN ||
      a->ike_cert_len > IKE_CERT_MAX_LEN)
    return 0;
  size_t need = 1 + 1 + 4 + 1 + alen + 2 + 32 + 32 + 2 +
                a->signing_cert_len + 2 + a->ike_cert_len;
  if (need > outlen || need > IPSEC_ANNOUNCE_MAX_LEN)
    return 0;
  uint8_t *p = out;
  *p++ = a->version;
  *p++ = a->flags;
  set_u32(p, a->generation);
  p += 4;
  *p++ = alen == 4 ? 4 : 6;
  memcpy(p, a->orport.addr, alen);
  p += alen;
  set_u16(p, a->orport.port);
  p += 2;
  memcpy(p, a->ike_key, 32);
  p += 32;
  memcpy(p, a->ready_for, 32);
  p += 32;
  set_u16(p, (uint16_t)a->signing_cert_len);
  p += 2;
  if (a->signing_cert_len)
    memcpy(p, a->signing_cert, a->signing_cert_len);
  p += a->signing_cert_len;
  set_u16(p, (uint16_t)a->ike_cert_len);
  p += 2;
  if (a->ike_cert_len)
    memcpy(p, a->ike_cert, a->ike_cert_len);
  p += a->ike_cert_len;
  return (size_t)(p - out);
}

/* A cursor that never reads past the end. */
typedef struct {
  const uint8_t *p;
  size_t left;
} rd_t;

static const uint8_t *
take(rd_t *r, size_t n)
{
  if (r->left < n)
    return NULL;
  const uint8_t *p = r->p;
  r->p += n;
  r->left -= n;
  return p;
}

int
ipsec_announce_parse(const uint8_t *in, size_t len, ipsec_announce_t *out,
                     const char **why)
{
  rd_t r = {in, len};
  const uint8_t *p;
  memset(out, 0, sizeof(*out));
  if (len > IPSEC_ANNOUNCE_MAX_LEN) {
    *why = "announcement too long";
    return -1;
  }
  if (!(p = take(&r, 1))) {
    *why = "empty announcement";
    return -1;
  }
  out->version = p[0];
  if (out->version != IPSEC_ANNOUNCE_VERSION) {
    *why = "unsupported announcement version";
    return -1;
  }
  if (!(p = take(&r, 1 + 4 + 1)))
    goto truncated;
  out->flags = p[0];
  out->generation = get_u32(p + 1);
  size_t alen;
  if (p[5] == 4) {
    alen = 4;
    out->orport.family = AF_INET;
  } else if (p[5] == 6) {
    alen = 16;
    out->orport.family = AF_INET6;
  } else {
    *why = "unknown address type";
    return -1;
  }
  if (!(p = take(&r, alen + 2)))
    goto truncated;
  memcpy(out->orport.addr, p, alen);
  out->orport.port = get_u16(p + alen);
  if (out->orport.port == 0) {
    *why = "ORPort 0";
    return -1;
  }
  if (!(p = take(&r, 64)))
    goto truncated;
  memcpy(out->ike_key, p, 32);
  memcpy(out->ready_for, p + 32, 32);
  for (int i = 0; i < 2; i++) {
    if (!(p = take(&r, 2)))
      goto truncated;
    size_t cl = get_u16(p);
    if (cl > IKE_CERT_MAX_LEN) {
      *why = "certificate length too large";
      return -1;
    }
    if (!(p = take(&r, cl))) {
      *why = "certificate length beyond the announcement";
      return -1;
    }
    if (i == 0) {
      out->signing_cert = p;
      out->signing_cert_len = cl;
    } else {
      out->ike_cert = p;
      out->ike_cert_len = cl;
    }
  }
  return 0;
truncated:
  *why = "truncated announcement";
  return -1;
}

int
ipsec_announce_verify(const ipsec_announce_t *a, const uint8_t peer_ed_id[32],
                      const pc_addr_t *chan_addr, time_t now,
                      time_t *expires, const char **why)
{
  uint8_t certified[32];
  if (ike_cert_check_chain(a->signing_cert, a->signing_cert_len, a->ike_cert,
                           a->ike_cert_len, peer_ed_id, now, certified,
                           expires, why) < 0)
    return -1;
  if (pc_memneq(certified, a->ike_key, 32)) {
    *why = "the IKE key is not the certified one";
    return -1;
  }
  if (chan_addr && !pc_addr_eq(chan_addr, &a->orport, 0)) {
    *why = "the ORPort address is not the link's address";
    return -1;
  }
  return 0;
}

/* ---- channel glue ---- */

static int
fill_peer(channel_t *chan, ipsec_link_peer_t *peer)
{
  const uint8_t *ed = channel_peer_ed_id(chan);
  const uint8_t *rsa = channel_peer_rsa_id(chan);
  if (!channel_is_authenticated_relay(chan) || !ed)
    return -1;
  memset(peer, 0, sizeof(*peer));
  peer->chan = chan;
  memcpy(peer->ed_id, ed, 32);
  if (rsa) {
    memcpy(peer->rsa_id, rsa, 20);
    peer->have_rsa = 1;
  }
  peer->addr = *channel_peer_addr(chan);
  peer->outgoing = channel_is_outgoing(chan);
  return 0;
}

static void
var_cell_cb(channel_t *chan, const var_cell_t *vc)
{
  static log_ratelim_t rl = LOG_RATELIM_INIT(300, 5);
  ipsec_link_peer_t peer;
  if (!L.active)
    return;
  if (fill_peer(chan, &peer) < 0) {
    unsigned sup = 0;
    if (log_ratelim_allow(&rl, time(NULL), &sup))
      log_info("Ignoring an IPsec announcement on %s: not an authenticated "
               "relay with an Ed25519 identity (%u more suppressed)",
               channel_describe(chan), sup);
    return;
  }
  L.h.on_announce(L.arg, &peer, vc->payload, vc->payload_len);
}

static void
open_cb(channel_t *chan, void *arg)
{
  (void)arg;
  ipsec_link_peer_t peer;
  if (!L.active || !channel_is_outgoing(chan) || channel_is_per_circuit(chan))
    return;
  if (fill_peer(chan, &peer) < 0)
    return;
  L.h.on_open(L.arg, &peer);
}

int
ipsec_link_start(const ipsec_link_handlers_t *h, void *arg)
{
  if (!L.active) {
    if (channel_add_open_observer(open_cb, NULL) < 0)
      return -1;
    if (channel_register_var_cell_handler(IPSEC_LINK_CELL_COMMAND,
                                          var_cell_cb) < 0) {
      channel_remove_open_observer(open_cb, NULL);
      return -1;
    }
  }
  L.h = *h;
  L.arg = arg;
  L.active = 1;
  return 0;
}

void
ipsec_link_stop(void)
{
  if (!L.active)
    return;
  channel_register_var_cell_handler(IPSEC_LINK_CELL_COMMAND, NULL);
  channel_remove_open_observer(open_cb, NULL);
  memset(&L, 0, sizeof(L));
}

int
ipsec_link_send(channel_t *chan, const uint8_t ed_id[32],
                const uint8_t *rsa_id, const pc_addr_t *addr,
                const uint8_t *payload, size_t len)
{
  if (len > IPSEC_ANNOUNCE_MAX_LEN)
    return -1;
  if (!chan && rsa_id && addr)
    chan = channel_find_for_extend(addr, rsa_id, ed_id);
  if (!chan || !channel_is_open(chan) ||
      !channel_is_authenticated_relay(chan) || !channel_peer_ed_id(chan) ||
      pc_memneq(channel_peer_ed_id(chan), ed_id, 32))
    return -1;
  var_cell_t *vc = var_cell_new((uint16_t)len);
  vc->circ_id = 0;
  vc->command = IPSEC_LINK_CELL_COMMAND;
  memcpy(vc->payload, payload, len);
  channel_send_var_cell(chan, vc);
  var_cell_free(vc);
  return 0;
}
