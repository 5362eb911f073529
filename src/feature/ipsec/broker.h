/* SPDX-License-Identifier: BSD-3-Clause */
/* broker.h -- the IPsec SA broker: IPsec between relays, negotiated by
 * strongSwan's charon over VICI and authenticated by Tor identities
 * (issue 7). The facade src/app uses; the parts are ike_key.h (the IKE
 * key and its certificate), ipsec_link.h (the in-band announcement) and
 * vici_client.h (charon).
 *
 * What it does, per peer relay:
 *  1. Learns over the relays' own authenticated link whether the peer
 *     offers IPsec, its IKE key (certified by its identity) and ORPort,
 *     and goes on only for a peer the current consensus lists at the
 *     link's address with that ORPort (ipsec_broker_set_directory).
 *  2. Loads one charon connection "pctor-<64 hex of the peer's Ed25519
 *     identity>" with IKE identities @#<identity hex> on both sides, the
 *     peer's IKE key as the only acceptable key, and two CHILD_SAs:
 *       out: us/32[tcp]              -> peer/32[tcp/peer ORPort]
 *       in:  us/32[tcp/our ORPort]   <- peer/32[tcp]
 *     so that one IKE_SA covers both directions of relay-to-relay TCP.
 *  3. Tells the peer once its connection is loaded (READY). charon only
 *     answers an initiation for a connection it has loaded, so nobody
 *     initiates before its peer is READY; then the relay with the lower
 *     Ed25519 identity (bytewise) initiates at once, the other one only if
 *     no SA has come up after a grace period (3 s) -- as after its own
 *     charon restarted, when the peer's charon still holds the old SA and
 *     our announcements cannot get through that SA. charon replaces the
 *     stale IKE_SA with the new one (unique = replace).
 *  4. Follows the SAs through charon's ike-updown/child-updown/-rekey
 *     events (and list-sas after every (re)connection to charon).
 *  5. Answers PerCircuitTCP's peer policy (core/or/pctcp.h): a circuit to
 *     a peer gets a connection of its own only when that peer's "out"
 *     CHILD_SA is installed; otherwise it goes over a shared TLS channel
 *     (and establishing the SA is kicked). Peers that do not offer IPsec
 *     (tor relays, pctor without IPsec) get per-circuit connections in
 *     the clear with IPsec auto, and shared ones when IPsec is required
 *     (IPsec 1 or PerCircuitTCPRequireIPsec 1).
 *  The broker never closes channels or circuits; an SA going down only
 *  changes where new circuits go.
 *
 * charon going away: every SA counts as down (new circuits share) and
 * peers are told we are not READY; the VICI client reconnects with
 * backoff; once back, the broker loads its key, reloads every peer's
 * connection, re-reads the SAs and, where none is left, initiates again
 * (see 3). If charon had restarted (our connections are gone), the
 * "generation" in our announcements changes (peers log it).
 */
#ifndef PCTOR_FEATURE_IPSEC_BROKER_H
#define PCTOR_FEATURE_IPSEC_BROKER_H
#include <stdint.h>

#include "core/or/pctcp.h"
#include "core/or/relay_keys.h"
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

typedef enum {
  IPSEC_MODE_OFF = 0,  /* IPsec 0 */
  IPSEC_MODE_AUTO = 1, /* IPsec auto */
  IPSEC_MODE_ON = 2,   /* IPsec 1 */
} ipsec_mode_t;
/* "0", "1" or "auto" (case-insensitive). 0 or -1. */
int ipsec_mode_parse(const char *s, ipsec_mode_t *out);
const char *ipsec_mode_name(ipsec_mode_t m);

#define IPSEC_DEFAULT_VICI_SOCKET "/var/run/charon.vici"
#define IPSEC_DEFAULT_MAX_PEERS 1024
/* IPsecMaxPeersPerAddress: as tor's authorities list at most two relays
 * per IP address (AuthDirMaxServersPerAddr), two identities per address
 * are enough for every genuine relay. */
#define IPSEC_DEFAULT_MAX_PEERS_PER_ADDR 2

typedef struct ipsec_broker_config_t {
  ipsec_mode_t mode;          /* IPsec */
  int require_for_pctcp;      /* PerCircuitTCPRequireIPsec */
  const char *vici_socket;    /* IPsecVICISocket */
  /* Our ORPort as peers reach it (the descriptor's address and IPv4
   * ORPort): the local end of every SA. */
  pc_addr_t orport;
  unsigned max_peers;         /* IPsecMaxPeers; 0: the default */
  /* IPsecMaxPeersPerAddress: identities tracked per peer IP address;
   * 0: the default. */
  unsigned max_peers_per_addr;
  /* IPsecCharonUser: besides root, the user charon's VICI socket may be
   * served by (checked with SO_PEERCRED before anything is sent); -1:
   * root only. */
  long charon_uid;
} ipsec_broker_config_t;

/* Defaults: mode off, IPSEC_DEFAULT_VICI_SOCKET, no address,
 * IPSEC_DEFAULT_MAX_PEERS, IPSEC_DEFAULT_MAX_PEERS_PER_ADDR, root only. */
void ipsec_broker_config_init(ipsec_broker_config_t *cfg);

typedef struct ipsec_broker_t ipsec_broker_t;

/* A broker for the relay whose keys are `keys` (kept, not copied: pass
 * the struct router_keys maintains, whose signing key may rotate in
 * place). Loads or creates DataDirectory/keys/ike_ed25519_key. Does
 * nothing on the network until ipsec_broker_configure(). NULL on error
 * (*err newly allocated). */
ipsec_broker_t *ipsec_broker_new(evloop_t *loop, const char *datadir,
                                 const relay_keys_t *keys, char **err);
/* Apply cfg (at start and on SIGHUP; strings are copied). Turning IPsec
 * on registers the link handlers and the PerCircuitTCP policy and
 * connects to charon; a new socket path or charon user reconnects; a new
 * ORPort reloads every peer's connection. Turning it off disconnects and
 * forgets the peers, leaving charon's SAs alone (existing connections
 * keep working until charon lets them expire). Returns 0, or -1 (logged)
 * when cfg is unusable (IPsec on without an ORPort address). */
int ipsec_broker_configure(ipsec_broker_t *b, const ipsec_broker_config_t *cfg);
void ipsec_broker_free_(ipsec_broker_t *b);

/* Can this system's kernel hold IPsec SAs at all? charon installs them
 * through an XFRM netlink socket (or PF_KEY); a system without either
 * (a simulator such as Shadow, a kernel built without them) never gets
 * one, so IPsec there is switched off instead of waiting for charon.
 * Opens and closes one socket of each kind; nothing is sent. Returns 1,
 * or 0 with a static reason in *why. */
int ipsec_kernel_available(const char **why);

/* ---- trust: the directory ----
 * The broker acts (loads a peer's IKE key into charon, initiates, gives
 * per-circuit connections) only for relays listed in the current
 * consensus whose listed IPv4 address is the link's remote address and
 * whose listed ORPort is the one they announce. It learns that through a
 * lookup the application provides (feature/ipsec does not depend on
 * feature/dir): fn returns 1 and sets *orport (address and ORPort as the
 * consensus lists them) for a listed relay, 0 when the relay is not
 * listed or there is no usable consensus. rsa_id may be NULL. Without a
 * lookup every peer counts as not listed. */
typedef int (*ipsec_broker_dir_fn)(void *arg, const uint8_t ed_id[32],
                                   const uint8_t *rsa_id, pc_addr_t *orport);
void ipsec_broker_set_directory(ipsec_broker_t *b, ipsec_broker_dir_fn fn,
                                void *arg);
/* Call whenever the consensus changed: peers refused for not being listed
 * are asked again (their next announcement is checked against the new
 * consensus) and peers no longer listed stop being used. */
void ipsec_broker_directory_changed(ipsec_broker_t *b);
#define ipsec_broker_free(b) do { ipsec_broker_free_(b); (b) = NULL; } while (0)

typedef struct ipsec_broker_stats_t {
  unsigned n_peers;            /* entries in the peer table */
  unsigned n_offering;         /* peers that offer IPsec */
  unsigned n_sa_up;            /* peers whose "out" CHILD_SA is installed */
  uint64_t announce_sent, announce_received, announce_refused;
  uint64_t initiations, initiation_failures;
  uint64_t charon_connects, charon_losses;
  /* PerCircuitTCP's question per extension (pctcp's peer policy): a
   * connection of its own inside the peer's SA (ipsec), of its own
   * without IPsec (plain: the peer offers none and IPsec is not
   * required), or the shared connection; of the shared ones, those to a
   * peer that offers IPsec whose SA was not usable yet (waiting). */
  uint64_t verdict_ipsec, verdict_plain, verdict_shared;
  uint64_t verdict_shared_waiting;
  /* Announcements refused by the trust rules: relay not listed in the
   * consensus (or listed at another address), announced ORPort not the
   * listed one, too many identities at one address. */
  uint64_t refused_unlisted, refused_port, refused_per_addr;
  uint64_t evicted_with_sa;    /* unlisted peers evicted with their SAs */
  /* Time from our first need of an SA with a peer to its "out" CHILD_SA
   * being installed (last one seen, and the sum over all). */
  uint64_t sa_setups, sa_setup_us_last, sa_setup_us_total;
} ipsec_broker_stats_t;
void ipsec_broker_get_stats(const ipsec_broker_t *b,
                            ipsec_broker_stats_t *out);

/* ---- for unit tests ---- */
struct ike_key_t;
struct ipsec_link_peer_t;
/* A broker with a given IKE key (taken over) instead of one from disk. */
ipsec_broker_t *ipsec_broker_new_for_testing(evloop_t *loop,
                                             const relay_keys_t *keys,
                                             struct ike_key_t *ike);
/* Replace channel sends: fn gets every announcement the broker sends. */
typedef int (*ipsec_broker_send_fn)(void *arg, const uint8_t ed_id[32],
                                    const uint8_t *payload, size_t len);
void ipsec_broker_set_sender_for_testing(ipsec_broker_t *b,
                                         ipsec_broker_send_fn fn, void *arg);
/* Make the VICI client refuse a socket served by root (so that a test
 * running as root can see the SO_PEERCRED refusal). */
void ipsec_broker_refuse_root_for_testing(ipsec_broker_t *b);
/* Shorter timers (milliseconds): housekeeping tick, how long a probed
 * peer may take to answer, first retry delay, VICI reconnect delay, and
 * the higher identity's grace before it initiates. */
void ipsec_broker_set_timing_for_testing(ipsec_broker_t *b, uint32_t tick_ms,
                                         uint32_t probe_ms,
                                         uint32_t retry_ms,
                                         uint32_t reconnect_ms,
                                         uint32_t grace_ms);
/* What ipsec_link delivers from channels. */
void ipsec_broker_announce_for_testing(ipsec_broker_t *b,
                                       const struct ipsec_link_peer_t *peer,
                                       const uint8_t *payload, size_t len);
void ipsec_broker_open_for_testing(ipsec_broker_t *b,
                                   const struct ipsec_link_peer_t *peer);
/* The PerCircuitTCP verdict for a relay. */
pctcp_peer_verdict_t ipsec_broker_verdict(ipsec_broker_t *b,
                                          const pc_addr_t *addr,
                                          const uint8_t *rsa_id,
                                          const uint8_t *ed_id);
/* The announcement we would send to ed_id now (0 if none). */
size_t ipsec_broker_build_announce_for_testing(ipsec_broker_t *b,
                                               const uint8_t ed_id[32],
                                               uint8_t *out, size_t outlen);
#endif
