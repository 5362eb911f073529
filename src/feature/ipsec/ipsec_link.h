/* SPDX-License-Identifier: BSD-3-Clause */
/* ipsec_link.h -- the in-band IPsec announcement between relays: a
 * variable-length cell on an open, authenticated link.
 *
 * A relay that brokers IPsec tells each relay it links to that it offers
 * IPsec, which Ed25519 IKE key it authenticates with (and the chain of
 * certificates binding that key to its Tor identity), which ORPort
 * address the IPsec connection protects, and whether it has already
 * loaded the IPsec connection for the recipient into its charon (READY):
 * charon only accepts an IKE initiation for a connection it has loaded,
 * so the initiator waits for its peer's READY.
 *
 * The cell command: IPSEC_LINK_CELL_COMMAND = 240. Commands >= 128 are
 * variable-length on link protocol 3+ (tor-spec 3); tor uses 128..132
 * (VPADDING, CERTS, AUTH_CHALLENGE, AUTHENTICATE, AUTHORIZE) and would
 * allocate new link commands upwards from there, so pctor takes one near
 * the top of the range. tor-spec says an OR must drop cells with unknown
 * commands; tor 0.4.9 logs "Variable-length cell of unknown type (240)
 * received." at info level and keeps the connection (checked by
 * tests/integration/ipsec-pctcp.sh), so announcing to a tor relay is
 * harmless and costs one cell per link.
 *
 * Payload (version 1; integers big-endian):
 *   VERSION      u8   1
 *   FLAGS        u8   IPSEC_ANN_* bits; unknown bits are ignored
 *   GENERATION   u32  changes when the sender's charon lost its state
 *                     (restart): an initiator that still has an SA with
 *                     the sender then re-establishes it
 *   ADDR_TYPE    u8   4 (IPv4) or 6 (IPv6)
 *   ADDR         4 or 16 bytes   the sender's ORPort address ...
 *   PORT         u16             ... and port, which the SA protects
 *   IKE_KEY      32   the sender's Ed25519 IKE public key
 *   READY_FOR    32   with READY: the recipient's IKE key as loaded in the
 *                     sender's charon (so a READY for a key the recipient
 *                     no longer uses is not taken for one); else zeros
 *   SCERT_LEN    u16, SCERT   the sender's type-4 certificate
 *                     (identity -> signing key), as in its CERTS cells
 *   ICERT_LEN    u16, ICERT   its IKE key certificate (ike_key.h)
 *   (further bytes: ignored, for later minor additions)
 * Each certificate is at most IKE_CERT_MAX_LEN bytes.
 *
 * Acceptance (ipsec_announce_verify): the chain identity -> signing key
 * -> IKE key must check out against the Ed25519 identity the *link
 * handshake* proved for this channel, never against a key taken from the
 * announcement; IKE_KEY must equal the certified key; ADDR must be the
 * address the channel's peer connects from / was reached at (so a relay
 * cannot make us route another host's traffic into a tunnel). Core does
 * not keep the peer's signing key after the handshake, which is why the
 * type-4 certificate travels again here.
 *
 * Channel glue (ipsec_link_start): a var-cell handler for command 240
 * and a channel-open observer, forwarding to the broker's handlers. Only
 * channels with an authenticated relay that has an Ed25519 identity are
 * considered; the open observer reports only channels we opened that are
 * not per-circuit (PerCircuitTCP connections are only made once an SA is
 * up, so there is nothing left to say on them).
 */
#ifndef PCTOR_FEATURE_IPSEC_IPSEC_LINK_H
#define PCTOR_FEATURE_IPSEC_IPSEC_LINK_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/or/channel.h"
#include "lib/address/address.h"

#define IPSEC_LINK_CELL_COMMAND 240
#define IPSEC_ANNOUNCE_VERSION 1
/* The sender brokers IPsec with relays that offer it. */
#define IPSEC_ANN_OFFER 0x01
/* The sender's charon has the connection for the recipient (READY_FOR). */
#define IPSEC_ANN_READY 0x02
/* The sender does not know the recipient's current state: please send an
 * announcement back on this channel. */
#define IPSEC_ANN_ANSWER 0x04
/* Largest payload we produce or accept. */
#define IPSEC_ANNOUNCE_MAX_LEN 1200

typedef struct ipsec_announce_t {
  uint8_t version;
  uint8_t flags;
  uint32_t generation;
  pc_addr_t orport;
  uint8_t ike_key[32];
  uint8_t ready_for[32];
  const uint8_t *signing_cert; /* point into the parsed payload */
  size_t signing_cert_len;
  const uint8_t *ike_cert;
  size_t ike_cert_len;
} ipsec_announce_t;

/* Encode a (version 1) into out (outlen bytes). Returns the length, or 0
 * if it does not fit or a field is invalid (address family, a
 * certificate longer than IKE_CERT_MAX_LEN). */
size_t ipsec_announce_encode(const ipsec_announce_t *a, uint8_t *out,
                             size_t outlen);
/* Parse len bytes. Returns 0, or -1 with *why set: truncated, wrong
 * version, bad address type, a certificate length beyond the payload or
 * IKE_CERT_MAX_LEN. Pointers in *out point into in. Nothing is verified
 * cryptographically. */
int ipsec_announce_parse(const uint8_t *in, size_t len, ipsec_announce_t *out,
                         const char **why);
/* Verify a parsed announcement from the relay whose Ed25519 identity the
 * link handshake proved (peer_ed_id) on a channel whose peer address is
 * chan_addr (its IP must equal the announced ORPort IP; NULL skips that
 * check), at now. 0 with *expires set (when the certificates run out), or
 * -1 with *why. */
int ipsec_announce_verify(const ipsec_announce_t *a,
                          const uint8_t peer_ed_id[32],
                          const pc_addr_t *chan_addr, time_t now,
                          time_t *expires, const char **why);

/* ---- channel glue ---- */

/* The peer of a channel, as the handlers see it. chan is valid only for
 * the duration of the callback (NULL in tests). */
typedef struct ipsec_link_peer_t {
  channel_t *chan;
  uint8_t ed_id[32];
  uint8_t rsa_id[20];
  int have_rsa;
  pc_addr_t addr;   /* the channel's peer address */
  int outgoing;     /* we opened the channel */
} ipsec_link_peer_t;

typedef struct ipsec_link_handlers_t {
  /* An announcement cell arrived from an authenticated relay (payload not
   * parsed yet). */
  void (*on_announce)(void *arg, const ipsec_link_peer_t *peer,
                      const uint8_t *payload, size_t len);
  /* We opened a shared channel to an authenticated relay. */
  void (*on_open)(void *arg, const ipsec_link_peer_t *peer);
} ipsec_link_handlers_t;

/* Install the cell handler and the open observer (one set of handlers per
 * process; a second call replaces the first). Returns 0, or -1 if core
 * has no room for another open observer. */
int ipsec_link_start(const ipsec_link_handlers_t *h, void *arg);
/* Remove them. */
void ipsec_link_stop(void);
/* Send payload to a relay: on chan if not NULL, else on an open shared
 * channel to it (by its identities and ORPort address). Returns 0 when
 * sent, -1 when there is no open authenticated channel with that Ed25519
 * identity. */
int ipsec_link_send(channel_t *chan, const uint8_t ed_id[32],
                    const uint8_t *rsa_id, const pc_addr_t *addr,
                    const uint8_t *payload, size_t len);
#endif
