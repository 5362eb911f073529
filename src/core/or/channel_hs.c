/* SPDX-License-Identifier: BSD-3-Clause */
/* channel_hs.c -- the in-protocol link handshake (tor-spec section 4).
 *
 * Responder (someone connected to our ORPort):
 *   <- VERSIONS   -> VERSIONS, CERTS(2,4,5,7), AUTH_CHALLENGE(3), NETINFO
 *   <- [CERTS(2,4,6,7), AUTHENTICATE(3)] NETINFO           => OPEN
 * Initiator (we connected):
 *   -> VERSIONS   <- VERSIONS, CERTS, AUTH_CHALLENGE, NETINFO
 *   -> [CERTS, AUTHENTICATE] NETINFO                       => OPEN
 * A relay initiator authenticates (method 3, Ed25519-SHA256-RFC5705) so the
 * responder knows it is a relay; a client doesn't. An initiator always
 * verifies the responder's certificates and the identity it asked for.
 *
 * Both sides keep a running SHA-256 of the bytes each party sent: the
 * responder's bytes up to and including AUTH_CHALLENGE are SLOG, the
 * initiator's bytes before AUTHENTICATE are CLOG; AUTHENTICATE binds both,
 * plus the TLS certificate and an RFC 5705 exporter value, so it cannot be
 * replayed on another connection.
 *
 * Interop note: tor-spec 4.4.2 says the RFC 5705 exporter's context is the
 * initiator's Ed25519 identity, but tor (verified against 0.4.9.11) uses
 * CID, the SHA-256 of the initiator's RSA identity key, and rejects the
 * spec's value. pctor follows tor, on both sides.
 *
 * Any unexpected cell, bad certificate or failed signature closes the
 * channel with a log line saying what was wrong.
 */
#include "core/or/channel_internal.h"
#include "core/or/link_auth.h"
#include "core/proto/linkcells.h"
#include "core/proto/torcert.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/rand.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/conn.h"
#include "lib/tls/x509.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint16_t our_versions[] = {4, 5};

static pc_addr_t my_addrs[2];
static int n_my_addrs;

void
channels_set_my_addrs(const pc_addr_t *addrs, int n)
{
  n_my_addrs = n > 2 ? 2 : n;
  for (int i = 0; i < n_my_addrs; i++)
    my_addrs[i] = addrs[i];
}

/* A failed handshake on a connection we opened is worth a notice; one that
 * a remote peer opened only an info line (anyone can cause those). */
static int
hs_fail(channel_t *chan, const char *why)
{
  log_msg(chan->is_outgoing ? LOG_SEV_NOTICE : LOG_SEV_INFO, __func__,
          "Link handshake with %s failed: %s", channel_describe(chan), why);
  channel_close(chan, why);
  return -1;
}

void
channel_hs_free(chan_hs_t *hs)
{
  if (!hs)
    return;
  crypt_digest_free(hs->digest_sent);
  crypt_digest_free(hs->digest_received);
  pc_memwipe(hs, sizeof(*hs));
  free(hs);
}

/* The channel's TLS connection; NULL over a plain connection (tests and
 * fuzzing only), where every check that needs TLS fails. */
static tls_conn_t *
hs_tls(channel_t *chan)
{
  return chan->conn ? conn_tls(chan->conn) : NULL;
}

/* Send bytes that belong to the handshake transcript. */
static void
hs_send_raw(channel_t *chan, const uint8_t *raw, size_t len)
{
  if (!chan->hs->digest_sent_frozen)
    crypt_digest_add(chan->hs->digest_sent, raw, len);
  channel_write_raw(chan, raw, len);
}

static void
hs_send_var(channel_t *chan, const var_cell_t *vc, int link_proto)
{
  size_t len = var_cell_network_len(vc, link_proto);
  uint8_t *raw = pc_malloc(len);
  var_cell_pack(raw, vc, link_proto);
  hs_send_raw(chan, raw, len);
  free(raw);
}

static void
hs_send_fixed(channel_t *chan, const cell_t *cell)
{
  uint8_t raw[CELL_MAX_NETWORK_LEN];
  cell_pack(raw, cell, chan->link_proto);
  hs_send_raw(chan, raw, cell_network_len(chan->link_proto));
}

static void
send_versions(channel_t *chan)
{
  var_cell_t *vc = NULL;
  versions_cell_build(our_versions, 2, &vc);
  /* The first VERSIONS cell always uses 2-byte circuit IDs. */
  hs_send_var(chan, vc, 0);
  var_cell_free(vc);
  chan->hs->sent_versions = 1;
}

static void
send_netinfo(channel_t *chan)
{
  netinfo_t ni;
  memset(&ni, 0, sizeof(ni));
  /* Clients send 0 as their time (tor-spec 4.5), relays the real time. */
  ni.timestamp = channels_keys() ? (uint32_t)time(NULL) : 0;
  if (chan->addr.family == AF_INET) {
    ni.other_addr.type = NETINFO_ATYPE_IPV4;
    memcpy(ni.other_addr.addr, chan->addr.addr, 4);
  } else if (chan->addr.family == AF_INET6) {
    ni.other_addr.type = NETINFO_ATYPE_IPV6;
    memcpy(ni.other_addr.addr, chan->addr.addr, 16);
  }
  if (channels_keys()) {
    for (int i = 0; i < n_my_addrs; i++) {
      netinfo_addr_t *a = &ni.my_addrs[ni.n_my_addrs];
      if (my_addrs[i].family == AF_INET) {
        a->type = NETINFO_ATYPE_IPV4;
        memcpy(a->addr, my_addrs[i].addr, 4);
      } else {
        a->type = NETINFO_ATYPE_IPV6;
        memcpy(a->addr, my_addrs[i].addr, 16);
      }
      ni.n_my_addrs++;
    }
  }
  cell_t cell;
  netinfo_cell_make(&cell, &ni);
  hs_send_fixed(chan, &cell);
}

/* CERTS cell with our identity certificates plus either the link cert
 * (responder) or the authentication cert (initiator). */
static void
send_certs(channel_t *chan, int as_responder)
{
  var_cell_t *vc = NULL;
  if (link_certs_build(channels_keys(), as_responder, &vc) < 0) {
    hs_fail(chan, "our certificates do not fit a CERTS cell");
    return;
  }
  hs_send_var(chan, vc, chan->link_proto);
  var_cell_free(vc);
}

void
channel_hs_start(channel_t *chan)
{
  chan_hs_t *hs = pc_zalloc(sizeof(*hs));
  hs->digest_sent = crypt_digest_new(DIGEST_ALG_SHA256);
  hs->digest_received = crypt_digest_new(DIGEST_ALG_SHA256);
  chan->hs = hs;
  if (chan->is_outgoing)
    send_versions(chan);
}

/* ---- certificate checks ------------------------------------------- */

/* ---- initiator ---------------------------------------------------- */

static int
init_handle_certs(channel_t *chan, const var_cell_t *vc)
{
  certs_cell_t cc;
  const char *why = NULL;
  if (certs_cell_parse(&cc, vc->payload, vc->payload_len) < 0)
    return hs_fail(chan, "malformed CERTS cell");
  link_certs_result_t res;
  if (link_certs_check(&cc, CERTS_TYPE_ED_SIGNING_LINK, time(NULL), &res, &why) < 0)
    return hs_fail(chan, why);
  crypt_rsa_free(res.rsa);
  /* The link certificate must certify the TLS certificate we saw. */
  uint8_t *der = NULL;
  size_t derlen = 0;
  uint8_t digest[32];
  tls_conn_t *tls = hs_tls(chan);
  if (!tls || tls_conn_peer_cert_der(tls, &der, &derlen) < 0)
    return hs_fail(chan, "peer presented no TLS certificate");
  crypt_sha256(digest, der, derlen);
  free(der);
  if (memcmp(digest, res.third_key, 32))
    return hs_fail(chan, "link certificate does not match the TLS "
                         "certificate");
  if (chan->want_rsa && memcmp(chan->want_rsa_id, res.rsa_id, 20))
    return hs_fail(chan, "peer has a different RSA identity than we "
                         "expected");
  if (chan->want_ed && memcmp(chan->want_ed_id, res.ed_id, 32))
    return hs_fail(chan, "peer has a different Ed25519 identity than we "
                         "expected");
  memcpy(chan->peer_rsa_id, res.rsa_id, 20);
  memcpy(chan->peer_ed_id, res.ed_id, 32);
  memcpy(chan->hs->peer_rsa_sha256, res.rsa_sha256, 32);
  chan->have_peer_rsa = chan->have_peer_ed = 1;
  chan->peer_is_relay = 1;
  chan->hs->received_certs = 1;
  channel_update_desc(chan);
  channel_index_update(chan);
  return 0;
}

static int
init_send_authenticate(channel_t *chan)
{
  const relay_keys_t *k = channels_keys();
  chan_hs_t *hs = chan->hs;
  auth3_t a;
  memset(&a, 0, sizeof(a));
  uint8_t *der = NULL;
  size_t derlen = 0;
  if (link_rsa_sha256(k->rsa_identity, a.cid) < 0)
    return hs_fail(chan, "cannot encode our RSA identity");
  memcpy(a.sid, hs->peer_rsa_sha256, 32);
  memcpy(a.cid_ed, k->ed_identity.pub, 32);
  memcpy(a.sid_ed, chan->peer_ed_id, 32);
  crypt_digest_peek(hs->digest_received, a.slog, 32);
  /* CLOG covers what we sent so far, including our CERTS cell. */
  send_certs(chan, 0);
  hs->digest_sent_frozen = 1;
  crypt_digest_peek(hs->digest_sent, a.clog, 32);
  tls_conn_t *tls = hs_tls(chan);
  if (!tls || tls_conn_peer_cert_der(tls, &der, &derlen) < 0)
    return hs_fail(chan, "peer presented no TLS certificate");
  crypt_sha256(a.scert, der, derlen);
  free(der);
  if (tls_conn_export_key(tls, a.tlssecrets, 32,
                          AUTH3_EXPORTER_LABEL, a.cid, 32) < 0)
    return hs_fail(chan, "TLS exporter failed");
  crypt_rand(a.rand, sizeof(a.rand));
  uint8_t body[AUTH3_BODY_LEN];
  if (auth3_sign(body, &a, &k->ed_link_auth) < 0)
    return hs_fail(chan, "signing AUTHENTICATE failed");
  var_cell_t *vc = NULL;
  authenticate_cell_build(AUTHTYPE_ED25519_SHA256_RFC5705, body, sizeof(body),
                          &vc);
  channel_send_var_cell(chan, vc);
  var_cell_free(vc);
  return 0;
}

/* ---- responder ---------------------------------------------------- */

static int
resp_send_greeting(channel_t *chan)
{
  send_versions(chan);
  send_certs(chan, 1);
  auth_challenge_t ac;
  memset(&ac, 0, sizeof(ac));
  crypt_rand(ac.challenge, sizeof(ac.challenge));
  memcpy(chan->hs->challenge, ac.challenge, 32);
  ac.n_methods = 1;
  ac.methods[0] = AUTHTYPE_ED25519_SHA256_RFC5705;
  var_cell_t *vc = NULL;
  auth_challenge_build(&ac, &vc);
  hs_send_var(chan, vc, chan->link_proto);
  var_cell_free(vc);
  chan->hs->digest_sent_frozen = 1; /* SLOG ends with AUTH_CHALLENGE */
  send_netinfo(chan);
  return 0;
}

static int
resp_handle_certs(channel_t *chan, const var_cell_t *vc)
{
  certs_cell_t cc;
  const char *why = NULL;
  if (certs_cell_parse(&cc, vc->payload, vc->payload_len) < 0)
    return hs_fail(chan, "malformed CERTS cell");
  link_certs_result_t res;
  if (link_certs_check(&cc, CERTS_TYPE_ED_SIGNING_AUTH, time(NULL), &res, &why) < 0)
    return hs_fail(chan, why);
  crypt_rsa_free(res.rsa);
  chan_hs_t *hs = chan->hs;
  memcpy(hs->peer_auth_key, res.third_key, 32);
  memcpy(hs->peer_rsa_sha256, res.rsa_sha256, 32);
  /* Identities are only claimed until AUTHENTICATE proves them. */
  memcpy(chan->peer_rsa_id, res.rsa_id, 20);
  memcpy(chan->peer_ed_id, res.ed_id, 32);
  hs->peer_claims_ids = 1;
  hs->received_certs = 1;
  return 0;
}

/* Say which AUTH0003 fields differ from what we computed (info level: the
 * peer controls the input). */
static void
log_auth3_mismatch(const uint8_t *body, size_t blen, const auth3_t *want)
{
  auth3_t got;
  if (auth3_parse(&got, body, blen) < 0) {
    log_info("AUTHENTICATE body is malformed (%zu bytes)", blen);
    return;
  }
  static const struct {
    const char *name;
    size_t off;
  } fields[] = {
      {"CID", offsetof(auth3_t, cid)},     {"SID", offsetof(auth3_t, sid)},
      {"CID_ED", offsetof(auth3_t, cid_ed)},
      {"SID_ED", offsetof(auth3_t, sid_ed)},
      {"SLOG", offsetof(auth3_t, slog)},   {"CLOG", offsetof(auth3_t, clog)},
      {"SCERT", offsetof(auth3_t, scert)},
      {"TLSSECRETS", offsetof(auth3_t, tlssecrets)},
  };
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    if (memcmp((const uint8_t *)&got + fields[i].off,
               (const uint8_t *)want + fields[i].off, 32))
      log_info("AUTHENTICATE field %s differs from ours", fields[i].name);
}

static int
resp_handle_authenticate(channel_t *chan, const var_cell_t *vc)
{
  chan_hs_t *hs = chan->hs;
  const relay_keys_t *k = channels_keys();
  uint16_t type;
  const uint8_t *body;
  size_t blen;
  if (!hs->received_certs)
    return hs_fail(chan, "AUTHENTICATE before CERTS");
  if (authenticate_cell_parse(vc->payload, vc->payload_len, &type, &body,
                              &blen) < 0)
    return hs_fail(chan, "malformed AUTHENTICATE cell");
  if (type != AUTHTYPE_ED25519_SHA256_RFC5705)
    return hs_fail(chan, "unsupported AUTHENTICATE method");
  auth3_t want;
  memset(&want, 0, sizeof(want));
  memcpy(want.cid, hs->peer_rsa_sha256, 32);
  if (link_rsa_sha256(k->rsa_identity, want.sid) < 0)
    return hs_fail(chan, "cannot encode our RSA identity");
  memcpy(want.cid_ed, chan->peer_ed_id, 32);
  memcpy(want.sid_ed, k->ed_identity.pub, 32);
  crypt_digest_peek(hs->digest_sent, want.slog, 32);
  crypt_digest_peek(hs->digest_received, want.clog, 32);
  /* SCERT: the certificate this connection really presented. */
  uint8_t *cert = NULL;
  size_t certlen = 0;
  tls_conn_t *tls = hs_tls(chan);
  if (!tls || tls_conn_own_cert_der(tls, &cert, &certlen) < 0)
    return hs_fail(chan, "no TLS certificate on our side");
  crypt_sha256(want.scert, cert, certlen);
  free(cert);
  if (tls_conn_export_key(tls, want.tlssecrets, 32,
                          AUTH3_EXPORTER_LABEL, want.cid, 32) < 0)
    return hs_fail(chan, "TLS exporter failed");
  if (auth3_check(body, blen, &want, hs->peer_auth_key) < 0) {
    log_auth3_mismatch(body, blen, &want);
    return hs_fail(chan, "AUTHENTICATE cell does not verify");
  }
  chan->have_peer_rsa = chan->have_peer_ed = 1;
  chan->peer_is_relay = 1;
  hs->received_authenticate = 1;
  channel_update_desc(chan);
  channel_index_update(chan);
  return 0;
}

/* ---- dispatch ----------------------------------------------------- */

static int
handle_versions(channel_t *chan, const var_cell_t *vc, const uint8_t *raw,
                size_t rawlen)
{
  chan_hs_t *hs = chan->hs;
  if (hs->received_versions)
    return 0; /* later VERSIONS cells are ignored */
  crypt_digest_add(hs->digest_received, raw, rawlen);
  int v = versions_highest_common(vc->payload, vc->payload_len, our_versions,
                                  2);
  if (v < 0)
    return hs_fail(chan, "malformed VERSIONS cell");
  if (v == 0)
    return hs_fail(chan, "no link protocol version in common (we speak 4 "
                         "and 5)");
  chan->link_proto = v;
  hs->received_versions = 1;
  if (!chan->is_outgoing)
    return resp_send_greeting(chan);
  return 0;
}

int
channel_hs_handle_var(channel_t *chan, const var_cell_t *vc,
                      const uint8_t *raw, size_t rawlen)
{
  chan_hs_t *hs = chan->hs;
  if (!hs)
    return hs_fail(chan, "handshake cell in the wrong state");
  if (vc->command == CELL_VERSIONS)
    return handle_versions(chan, vc, raw, rawlen);
  if (!hs->received_versions)
    return hs_fail(chan, "cell before VERSIONS");
  if (vc->command == CELL_VPADDING) {
    if (!hs->digest_received_frozen)
      crypt_digest_add(hs->digest_received, raw, rawlen);
    return 0;
  }
  if (chan->is_outgoing) {
    switch (vc->command) {
    case CELL_CERTS:
      if (hs->received_certs)
        return hs_fail(chan, "duplicate CERTS cell");
      crypt_digest_add(hs->digest_received, raw, rawlen);
      return init_handle_certs(chan, vc);
    case CELL_AUTH_CHALLENGE: {
      if (!hs->received_certs || hs->received_auth_challenge)
        return hs_fail(chan, "unexpected AUTH_CHALLENGE");
      crypt_digest_add(hs->digest_received, raw, rawlen);
      hs->digest_received_frozen = 1;
      auth_challenge_t ac;
      if (auth_challenge_parse(&ac, vc->payload, vc->payload_len) < 0)
        return hs_fail(chan, "malformed AUTH_CHALLENGE cell");
      hs->peer_offers_auth3 =
          auth_challenge_has_method(&ac, AUTHTYPE_ED25519_SHA256_RFC5705);
      memcpy(hs->challenge, ac.challenge, 32);
      hs->received_auth_challenge = 1;
      return 0;
    }
    default:
      return hs_fail(chan, "unexpected cell from responder");
    }
  }
  switch (vc->command) {
  case CELL_CERTS:
    if (hs->received_certs)
      return hs_fail(chan, "duplicate CERTS cell");
    crypt_digest_add(hs->digest_received, raw, rawlen);
    return resp_handle_certs(chan, vc);
  case CELL_AUTHENTICATE:
    if (hs->received_authenticate)
      return hs_fail(chan, "duplicate AUTHENTICATE cell");
    hs->digest_received_frozen = 1;
    return resp_handle_authenticate(chan, vc);
  case CELL_AUTHORIZE:
    return 0;
  default:
    return hs_fail(chan, "unexpected cell from initiator");
  }
}

/* The peer's clock (tor-spec 4.5: NETINFO's time; a client may send 0):
 * kept for controllers (CLOCK_SKEW), and a warning when a relay's, or
 * one we chose to connect to, is off by more than an hour, as tor does. */
static void
record_netinfo_time(channel_t *chan, uint32_t timestamp)
{
  if (!timestamp)
    return;
  chan->netinfo_skew = (int64_t)time(NULL) - (int64_t)timestamp;
  chan->has_netinfo_skew = 1;
  int64_t skew = chan->netinfo_skew;
  if ((skew > CHANNEL_NETINFO_SKEW_WARN ||
       skew < -CHANNEL_NETINFO_SKEW_WARN) &&
      (chan->is_outgoing || chan->have_peer_rsa))
    log_warn("Received a NETINFO cell with a skewed time from %s: our "
             "clock is %lld seconds %s theirs. pctor needs an "
             "accurate clock: please check the time and date settings.",
             channel_describe(chan),
             (long long)(skew < 0 ? -skew : skew),
             skew < 0 ? "behind" : "ahead of");
}

static void
record_netinfo(channel_t *chan, const netinfo_t *ni)
{
  record_netinfo_time(chan, ni->timestamp);
  chan->n_peer_my_addrs = 0;
  for (int i = 0; i < ni->n_my_addrs && chan->n_peer_my_addrs < 4; i++) {
    const netinfo_addr_t *a = &ni->my_addrs[i];
    pc_addr_t *p = &chan->peer_my_addrs[chan->n_peer_my_addrs];
    memset(p, 0, sizeof(*p));
    if (a->type == NETINFO_ATYPE_IPV4) {
      p->family = AF_INET;
      memcpy(p->addr, a->addr, 4);
    } else if (a->type == NETINFO_ATYPE_IPV6) {
      p->family = AF_INET6;
      memcpy(p->addr, a->addr, 16);
    } else {
      continue;
    }
    chan->n_peer_my_addrs++;
    if (pc_addr_eq(p, &chan->addr, 0))
      chan->addr_is_canonical = 1;
  }
}

int
channel_hs_handle_fixed(channel_t *chan, const cell_t *cell,
                        const uint8_t *raw, size_t rawlen)
{
  chan_hs_t *hs = chan->hs;
  (void)raw;
  (void)rawlen;
  if (!hs || !hs->received_versions)
    return hs_fail(chan, "cell before VERSIONS");
  if (cell->command == CELL_PADDING)
    return 0;
  if (cell->command != CELL_NETINFO)
    return hs_fail(chan, "cell other than NETINFO during the handshake");
  netinfo_t ni;
  if (netinfo_parse(&ni, cell->payload, CELL_PAYLOAD_LEN) < 0)
    return hs_fail(chan, "malformed NETINFO cell");
  if (chan->is_outgoing) {
    if (!hs->received_certs || !hs->received_auth_challenge)
      return hs_fail(chan, "NETINFO before CERTS and AUTH_CHALLENGE");
    record_netinfo(chan, &ni);
    if (chan->we_authenticate) {
      if (!hs->peer_offers_auth3)
        return hs_fail(chan, "responder does not offer Ed25519 link "
                             "authentication");
      if (init_send_authenticate(chan) < 0)
        return -1;
    }
    send_netinfo(chan);
  } else {
    if (hs->received_certs && !hs->received_authenticate)
      return hs_fail(chan, "NETINFO after CERTS without AUTHENTICATE");
    record_netinfo(chan, &ni);
  }
  hs->received_netinfo = 1;
  channel_became_open(chan);
  return 0;
}
