/* SPDX-License-Identifier: BSD-3-Clause */
/* broker.c -- the IPsec SA broker (see broker.h for what it does).
 *
 * Design:
 * - One peer_t per relay we have heard of (announcement, channel we
 *   opened, or a PerCircuitTCP question), in a hash map by Ed25519
 *   identity (plus one by RSA identity, for extensions without an Ed25519
 *   link specifier). The table is bounded (max_peers): a newcomer evicts
 *   the least recently used peer without an installed SA (unlisted ones
 *   first), else the least recently used peer that the consensus no
 *   longer lists, SAs and all (terminated), or is not tracked at all (its
 *   circuits then share connections). At most max_peers_per_addr peers
 *   share one address (`hint`): a newcomer there replaces an unlisted one
 *   or is not tracked.
 * - Trust (issue 14): an announcement proves only that its sender holds
 *   some Tor identity. A peer becomes OFFERS (the only kind anything is
 *   loaded into charon for) only if the application's directory lookup
 *   lists it at the link's address with the ORPort it announces; else it
 *   is REFUSED, and ipsec_broker_directory_changed() re-checks every peer
 *   against each new consensus (demoting OFFERS peers that left it,
 *   asking REFUSED ones that are now listed to announce again). The VICI
 *   client refuses a socket not served by root or the charon user
 *   (SO_PEERCRED) before anything is sent, and no command for charon to
 *   run (updown) is ever part of what we load.
 * - What we know of a peer ("kind"): PROBING (we asked, no answer yet),
 *   NO_IPSEC (it did not answer in time, or said it does not offer IPsec;
 *   forgotten after an hour so that a relay that starts offering is
 *   noticed), OFFERS (a verified announcement). Our side with charon
 *   ("conn"): NONE, LOADING, LOADED; plus the installed CHILD_SAs we saw,
 *   as (IKE_SA id, CHILD_SA id, out|in) triples.
 * - peer_advance() is the whole state machine: called after every change
 *   (announcement, VICI answer or event, tick), it issues at most the one
 *   next VICI command the peer needs: load-conn, then (once both sides
 *   are READY) initiate "out" and "in" -- at once on the side with the
 *   lower identity, after a grace period on the other (see there).
 *   Failures back off exponentially per peer. Nothing is ever
 *   terminated: a stale SA (the peer's charon restarted) is replaced by
 *   the peer's new IKE_SA (unique = replace).
 * - VICI commands carry a small heap context naming the peer by identity
 *   and the VICI session they belong to; the answer looks the peer up
 *   again (it may have been evicted) and ignores answers from an older
 *   session. Events are only triggers for the SA sets; after every
 *   (re)connection and after each successful initiation a blocking
 *   list-sas rebuilds them (a noblock listing can miss an IKE_SA that is
 *   busy right after it came up). Updown events that arrive while a
 *   listing is running are applied to its snapshot too, so the listing
 *   cannot undo them.
 * - Announcements to a peer go out when we open a shared channel to it
 *   (with ANSWER when we do not know its state), in reply to an ANSWER,
 *   and whenever what we would tell it changed (READY, generation, a
 *   renewed certificate): then on an open shared channel to it if there
 *   is one, else retried every few seconds and on the next channel open.
 * - Nothing here runs per cell: the PerCircuitTCP policy is asked once per
 *   relay-to-relay extension and costs a hash lookup.
 */
#include "feature/ipsec/broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "feature/ipsec/ike_key.h"
#include "feature/ipsec/ipsec_link.h"
#include "feature/ipsec/vici_client.h"
#include "lib/crypt/ed25519_pem.h"
#include "lib/bytes/bytes.h"
#include "lib/container/hmap.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/log/log.h"
#include "lib/log/ratelim.h"
#include "lib/malloc/alloc.h"

#define CONN_PREFIX "pctor-"
#define CONN_NAME_LEN (sizeof(CONN_PREFIX) - 1 + 64)
#define CHILD_OUT "out"
#define CHILD_IN "in"
#define IKE_PROPOSAL "aes128gcm16-prfsha256-x25519"
#define ESP_PROPOSAL "aes128gcm16-x25519"

#define DEFAULT_TICK_MS 1000
#define DEFAULT_PROBE_MS 15000
#define DEFAULT_RETRY_MS 1000
/* How long the relay with the higher identity waits for the other to
 * initiate before it does so itself. */
#define DEFAULT_GRACE_MS 3000
#define RETRY_MAX_MS (300u * 1000)
#define RESEND_MS 5000
/* A peer that keeps announcing new keys or addresses gets its connection
 * reloaded into charon at most this often. */
#define RELOAD_MIN_MS 5000
#define NO_IPSEC_FORGET_MS (3600u * 1000)
#define RECONNECT_MIN_MS 500
#define RECONNECT_MAX_MS 30000
/* charon's own timeout for initiate/terminate, and ours (later). */
#define CHARON_OP_TIMEOUT_MS 10000
#define VICI_OP_TIMEOUT_MS 15000
#define PEER_MAX_SAS 8

/* KIND_REFUSED: it announced IPsec but fails the trust rules (not listed
 * in the consensus at the link's address, or announcing another ORPort
 * than the listed one): nothing is loaded for it, and it is asked again
 * when a newer consensus lists it. */
typedef enum {
  KIND_PROBING, KIND_NO_IPSEC, KIND_OFFERS, KIND_REFUSED
} peer_kind_t;
typedef enum { CONN_NONE, CONN_LOADING, CONN_LOADED } conn_state_t;
typedef enum { DIR_OUT = 0, DIR_IN = 1 } sa_dir_t;

typedef struct sa_ent_t {
  uint32_t ike_uid, child_uid;
  uint8_t dir;
  uint8_t ours;                /* our charon initiated its IKE_SA */
} sa_ent_t;

typedef struct sa_set_t {
  sa_ent_t e[PEER_MAX_SAS];
  int n;
} sa_set_t;

typedef struct peer_t {
  uint8_t ed[32];
  uint8_t rsa[20];
  int have_rsa;
  char conn_name[CONN_NAME_LEN + 1];
  char desc[64];               /* "$base64-identity" for logs */
  peer_kind_t kind;
  uint64_t kind_deadline_us;   /* PROBING: give up; NO_IPSEC: forget */
  /* From its last verified announcement (kind OFFERS). */
  pc_addr_t orport;
  uint8_t ike_key[32];
  time_t key_expires;
  pc_addr_t hint;              /* where we last saw it (channel lookups) */
  uint32_t generation;
  int peer_ready;              /* READY for our current IKE key */
  /* Our connection for it in charon. */
  conn_state_t conn;
  uint64_t loaded_at_us;       /* last load-conn submitted */
  uint8_t loaded_key[32];
  pc_addr_t loaded_orport;
  int op_busy;                 /* an initiation in flight */
  uint64_t want_since_us;      /* both READY without both CHILD_SAs since */
  sa_set_t sas;
  sa_set_t snap;               /* list-sas being collected */
  int snapping;                /* list-sas in flight for this peer */
  uint64_t retry_at_us;
  uint32_t backoff_ms;
  int need_send;
  uint64_t next_send_us;
  uint64_t last_used_us;
  int listed;                  /* in the consensus at address `hint` */
  uint64_t need_since_us;      /* first SHARED verdict for lack of an SA */
  int was_up;
} peer_t;

struct ipsec_broker_t {
  evloop_t *loop;
  const relay_keys_t *keys;
  ike_key_t *ike;
  torcert_t *ike_cert;
  uint8_t cert_signer[32];
  ipsec_broker_config_t cfg;
  char *vici_socket;
  int running;                 /* mode != OFF: link handlers, VICI */
  int policy_installed;
  vici_client_t *vc;
  uint64_t session;            /* VICI connections so far */
  int charon_up;               /* connected and resynchronised */
  int key_loaded;
  uint64_t key_retry_at_us;
  uint32_t key_backoff_ms;
  uint32_t generation;
  hmap_t *peers;               /* ed25519 id -> peer_t */
  hmap_t *by_rsa;              /* rsa id -> peer_t */
  evloop_timer_t *tick;
  uint32_t tick_ms, probe_ms, retry_ms, reconnect_ms, grace_ms;
  ipsec_broker_send_fn test_send;
  void *test_send_arg;
  ipsec_broker_dir_fn dir_fn;
  void *dir_arg;
  int test_no_root;            /* tests: root may not serve the socket */
  ipsec_broker_stats_t stats;
};

/* One VICI command's context. */
typedef enum {
  OP_GET_CONNS, OP_LOAD_KEY, OP_LOAD_CONN, OP_UNLOAD_CONN, OP_LIST_SAS,
  OP_INITIATE, OP_TERMINATE,
} op_kind_t;

typedef struct op_ctx_t {
  ipsec_broker_t *b;
  op_kind_t kind;
  uint64_t session;
  int has_peer;
  uint8_t ed[32];
  sa_dir_t dir;
} op_ctx_t;

static void peer_advance(ipsec_broker_t *b, peer_t *p);
static void peer_try_send(ipsec_broker_t *b, peer_t *p, channel_t *chan,
                          int extra_flags);

/* ---- small helpers ---- */

static uint64_t
now_us(const ipsec_broker_t *b)
{
  return evloop_now_us(b->loop);
}

int
ipsec_mode_parse(const char *s, ipsec_mode_t *out)
{
  if (!strcmp(s, "0"))
    *out = IPSEC_MODE_OFF;
  else if (!strcmp(s, "1"))
    *out = IPSEC_MODE_ON;
  else if (!strcasecmp(s, "auto"))
    *out = IPSEC_MODE_AUTO;
  else
    return -1;
  return 0;
}

const char *
ipsec_mode_name(ipsec_mode_t m)
{
  return m == IPSEC_MODE_ON ? "1" : m == IPSEC_MODE_AUTO ? "auto" : "0";
}

void
ipsec_broker_config_init(ipsec_broker_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->mode = IPSEC_MODE_OFF;
  cfg->vici_socket = IPSEC_DEFAULT_VICI_SOCKET;
  cfg->orport.family = AF_UNSPEC;
  cfg->max_peers = IPSEC_DEFAULT_MAX_PEERS;
  cfg->max_peers_per_addr = IPSEC_DEFAULT_MAX_PEERS_PER_ADDR;
  cfg->charon_uid = -1;
}

static int
required(const ipsec_broker_t *b)
{
  return b->cfg.mode == IPSEC_MODE_ON || b->cfg.require_for_pctcp;
}

/* Do we initiate with this peer? The lower Ed25519 identity does. */
static int
we_initiate(const ipsec_broker_t *b, const peer_t *p)
{
  return memcmp(b->keys->ed_identity.pub, p->ed, 32) < 0;
}

static int
key_valid(const ipsec_broker_t *b, const peer_t *p)
{
  return p->kind == KIND_OFFERS && p->key_expires > time(NULL);
}

static int
sa_has(const sa_set_t *s, sa_dir_t dir)
{
  for (int i = 0; i < s->n; i++)
    if (s->e[i].dir == dir)
      return 1;
  return 0;
}

/* Whether every SA we know of belongs to an IKE_SA the peer initiated. */
static int
sa_all_theirs(const sa_set_t *s)
{
  for (int i = 0; i < s->n; i++)
    if (s->e[i].ours)
      return 0;
  return s->n > 0;
}

static void
sa_add(sa_set_t *s, uint32_t ike, uint32_t child, sa_dir_t dir, int ours)
{
  int i;
  for (i = 0; i < s->n; i++)
    if (s->e[i].child_uid == child)
      break;
  if (i == s->n) {
    if (s->n == PEER_MAX_SAS) { /* keep the newest */
      memmove(s->e, s->e + 1, sizeof(s->e[0]) * (PEER_MAX_SAS - 1));
      s->n--;
    }
    i = s->n++;
  }
  s->e[i].ike_uid = ike;
  s->e[i].child_uid = child;
  s->e[i].dir = (uint8_t)dir;
  s->e[i].ours = (uint8_t)(ours != 0);
}

static void
sa_remove_child(sa_set_t *s, uint32_t child)
{
  for (int i = 0; i < s->n; i++)
    if (s->e[i].child_uid == child) {
      s->e[i] = s->e[--s->n];
      return;
    }
}

static void
sa_remove_ike(sa_set_t *s, uint32_t ike)
{
  for (int i = 0; i < s->n;)
    if (s->e[i].ike_uid == ike)
      s->e[i] = s->e[--s->n];
    else
      i++;
}

static void
sa_rename_ike(sa_set_t *s, uint32_t from, uint32_t to)
{
  for (int i = 0; i < s->n; i++)
    if (s->e[i].ike_uid == from)
      s->e[i].ike_uid = to;
}

static int
parse_u32(const char *s, uint32_t *out)
{
  if (!s || !*s)
    return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
    if (v > UINT32_MAX)
      return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

static void
fmt_ts(char *out, size_t len, const pc_addr_t *a, uint16_t port)
{
  char ip[PC_ADDR_STR_LEN];
  pc_addr_fmt(a, ip, sizeof(ip), 0);
  /* pc_addr_fmt gives IPv6 without brackets when there is no port. */
  const char *plen = a->family == AF_INET6 ? "128" : "32";
  if (port)
    snprintf(out, len, "%s/%s[tcp/%u]", ip, plen, (unsigned)port);
  else
    snprintf(out, len, "%s/%s[tcp]", ip, plen);
}

/* ---- certificates ---- */

/* (Re)make our IKE key certificate when there is none, the signing key
 * changed, or it is about to expire. Returns 1 if it was remade. */
static int
refresh_cert(ipsec_broker_t *b)
{
  time_t now = time(NULL);
  const relay_keys_t *k = b->keys;
  if (b->ike_cert && !pc_memneq(b->cert_signer, k->ed_signing.pub, 32) &&
      torcert_expires(b->ike_cert) - now > IKE_CERT_RENEW_SEC)
    return 0;
  /* Near the signing key's own end, follow it: the chain is only as
   * valid as its weakest link, and router_keys renews it in time. */
  time_t exp = now + IKE_CERT_LIFETIME_SEC;
  if (k->ed_signing_expires && k->ed_signing_expires < exp)
    exp = k->ed_signing_expires;
  torcert_t *c = ike_cert_create(&k->ed_signing, ike_key_public(b->ike), exp);
  if (!c) {
    log_warn("Cannot sign the IKE key certificate");
    return 0;
  }
  torcert_free(b->ike_cert);
  b->ike_cert = c;
  memcpy(b->cert_signer, k->ed_signing.pub, 32);
  log_info("Made an IKE key certificate valid until %ld",
           (long)torcert_expires(c));
  return 1;
}

/* ---- the peer table ---- */

static void
peer_desc(peer_t *p)
{
  char b64[48];
  base64_encode(b64, sizeof(b64), p->ed, 32, BASE64_NOPAD);
  snprintf(p->desc, sizeof(p->desc), "$%s", b64);
}

/* ---- trust: the consensus ---- */

typedef enum { TRUST_OK, TRUST_UNLISTED, TRUST_PORT } trust_t;

/* Whether the relay (ed, rsa) seen at link address `at` is listed in the
 * current consensus there; with `announced`, also whether that is its
 * listed ORPort. why: a phrase for the log. */
static trust_t
trust_check(const ipsec_broker_t *b, const uint8_t ed[32], const uint8_t *rsa,
            const pc_addr_t *at, const pc_addr_t *announced, char *why,
            size_t len)
{
  pc_addr_t listed;
  char la[PC_ADDR_STR_LEN], aa[PC_ADDR_STR_LEN];
  memset(&listed, 0, sizeof(listed));
  if (!b->dir_fn || !b->dir_fn(b->dir_arg, ed, rsa, &listed)) {
    snprintf(why, len, "not listed in the current consensus");
    return TRUST_UNLISTED;
  }
  pc_addr_fmt(&listed, la, sizeof(la), 1);
  if (!at || !pc_addr_eq(at, &listed, 0)) {
    snprintf(why, len, "the consensus lists it at %s, not at the link's "
             "address", la);
    return TRUST_UNLISTED;
  }
  if (announced && !pc_addr_eq(announced, &listed, 1)) {
    pc_addr_fmt(announced, aa, sizeof(aa), 1);
    snprintf(why, len, "it announced ORPort %s, but the consensus lists %s",
             aa, la);
    return TRUST_PORT;
  }
  return TRUST_OK;
}

static void
log_untrusted(ipsec_broker_t *b, const char *desc, const pc_addr_t *at,
              const char *why)
{
  static log_ratelim_t rl = LOG_RATELIM_INIT(60, 10);
  unsigned sup = 0;
  if (!log_ratelim_allow(&rl, time(NULL), &sup))
    return;
  char a[PC_ADDR_STR_LEN] = "?";
  if (at)
    pc_addr_fmt(at, a, sizeof(a), 0);
  log_notice("IPsec: not using relay %s at %s: %s; it is asked again when "
             "a newer consensus lists it (%u more refusals not logged)",
             desc, a, why, sup);
}

static peer_t *
peer_find(const ipsec_broker_t *b, const uint8_t *ed, const uint8_t *rsa)
{
  peer_t *p = NULL;
  if (ed && !pc_is_zero(ed, 32))
    p = hmap_get(b->peers, ed);
  if (!p && rsa)
    p = hmap_get(b->by_rsa, rsa);
  return p;
}

static peer_t *
peer_by_conn_name(const ipsec_broker_t *b, const char *name)
{
  uint8_t ed[32];
  if (strlen(name) != CONN_NAME_LEN ||
      strncmp(name, CONN_PREFIX, sizeof(CONN_PREFIX) - 1))
    return NULL;
  if (base16_decode(ed, sizeof(ed), name + sizeof(CONN_PREFIX) - 1, 64) != 32)
    return NULL;
  return hmap_get(b->peers, ed);
}

static void
peer_free(void *v)
{
  free(v);
}

static void
peer_remove(ipsec_broker_t *b, peer_t *p)
{
  hmap_remove(b->peers, p->ed);
  if (p->have_rsa && hmap_get(b->by_rsa, p->rsa) == p)
    hmap_remove(b->by_rsa, p->rsa);
  free(p);
}

static void submit_unload(ipsec_broker_t *b, const uint8_t ed[32]);

static void submit_terminate(ipsec_broker_t *b, const char *conn_name);

/* Forget p, and remove what charon holds for it: its connection and, if
 * it has SAs, its IKE_SA (unload-conn alone leaves established SAs). */
static void
peer_evict(ipsec_broker_t *b, peer_t *p, const char *why)
{
  log_info("IPsec: forgetting relay %s (%s)%s", p->desc, why,
           p->sas.n ? ", closing its IPsec SAs" : "");
  if (b->charon_up) {
    if (p->sas.n) {
      submit_terminate(b, p->conn_name);
      b->stats.evicted_with_sa++;
    }
    if (p->conn != CONN_NONE || p->sas.n)
      submit_unload(b, p->ed);
  }
  peer_remove(b, p);
}

/* Which peer to forget first: lower class first, then least recently
 * used. Peers listed in the consensus that hold SAs are never evicted
 * (-1); unlisted ones are, even with SAs, once nothing else is left. */
static int
evict_class(const peer_t *p)
{
  if (!p->sas.n)
    return p->listed ? 1 : 0;
  return p->listed ? -1 : 2;
}

/* Whether p should be forgotten before victim (NULL: yes). */
static int
evict_before(const peer_t *p, const peer_t *victim)
{
  if (!victim)
    return 1;
  int c = evict_class(p), cv = evict_class(victim);
  return c < cv || (c == cv && p->last_used_us < victim->last_used_us);
}

/* Make room for one more peer: evict by evict_class(). Returns 0, or -1
 * if every peer is listed and holds an SA. */
static int
table_make_room(ipsec_broker_t *b)
{
  if (hmap_size(b->peers) < b->cfg.max_peers)
    return 0;
  hmap_iter_t it;
  void *v;
  peer_t *victim = NULL;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    if (evict_class(p) >= 0 && evict_before(p, victim))
      victim = p;
  }
  if (!victim)
    return -1;
  log_info("IPsec peer table full (%u)", b->cfg.max_peers);
  peer_evict(b, victim, "peer table full");
  return 0;
}

/* Room for one more identity at address `at`: at most max_peers_per_addr
 * identities per address; when they are all taken, the least recently
 * used one that is not listed in the consensus there gives way. Returns
 * 0, or -1 (refused, logged) when all are listed. */
static int
addr_make_room(ipsec_broker_t *b, const uint8_t ed[32], const pc_addr_t *at)
{
  if (!at || (at->family != AF_INET && at->family != AF_INET6))
    return 0;
  unsigned n = 0;
  peer_t *victim = NULL;
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    if (!pc_addr_eq(&p->hint, at, 0))
      continue;
    n++;
    if (!p->listed && evict_before(p, victim))
      victim = p;
  }
  if (n < b->cfg.max_peers_per_addr)
    return 0;
  if (victim) {
    peer_evict(b, victim, "too many relay identities at its address");
    return 0;
  }
  static log_ratelim_t rl = LOG_RATELIM_INIT(60, 10);
  unsigned sup = 0;
  b->stats.refused_per_addr++;
  if (log_ratelim_allow(&rl, time(NULL), &sup)) {
    char a[PC_ADDR_STR_LEN], b64[48];
    pc_addr_fmt(at, a, sizeof(a), 0);
    base64_encode(b64, sizeof(b64), ed, 32, BASE64_NOPAD);
    log_notice("IPsec: not tracking relay $%s: %u relays at %s already "
               "(IPsecMaxPeersPerAddress) (%u more refusals not logged)",
               b64, n, a, sup);
  }
  return -1;
}

/* The peer with this identity, made (as PROBING) if new and there is
 * room, seen at address `at` (may be NULL). NULL if the table is full of
 * listed peers with SAs, or `at` has its fill of identities. */
static peer_t *
peer_get_or_make(ipsec_broker_t *b, const uint8_t ed[32], const uint8_t *rsa,
                 const pc_addr_t *at)
{
  peer_t *p = hmap_get(b->peers, ed);
  if (!p) {
    static log_ratelim_t rl = LOG_RATELIM_INIT(600, 1);
    unsigned sup = 0;
    if (addr_make_room(b, ed, at) < 0)
      return NULL;
    if (table_make_room(b) < 0) {
      if (log_ratelim_allow(&rl, time(NULL), &sup))
        log_notice("IPsec peer table full (%u listed peers with SAs); not "
                   "tracking more relays (%u more times)",
                   b->cfg.max_peers, sup);
      return NULL;
    }
    p = pc_zalloc(sizeof(*p));
    memcpy(p->ed, ed, 32);
    memcpy(p->conn_name, CONN_PREFIX, sizeof(CONN_PREFIX) - 1);
    base16_encode(p->conn_name + sizeof(CONN_PREFIX) - 1, 65, ed, 32,
                  BASE16_LOWER);
    peer_desc(p);
    p->kind = KIND_PROBING;
    p->kind_deadline_us = now_us(b) + (uint64_t)b->probe_ms * 1000;
    p->backoff_ms = b->retry_ms;
    if (at) {
      char why[256];
      p->hint = *at;
      p->listed = trust_check(b, ed, rsa, at, NULL, why, sizeof(why)) ==
                  TRUST_OK;
    }
    hmap_set(b->peers, ed, p);
  }
  if (rsa && !p->have_rsa) {
    memcpy(p->rsa, rsa, 20);
    p->have_rsa = 1;
    hmap_set(b->by_rsa, rsa, p);
  }
  p->last_used_us = now_us(b);
  return p;
}

static void
peer_backoff(ipsec_broker_t *b, peer_t *p)
{
  p->retry_at_us = now_us(b) + (uint64_t)p->backoff_ms * 1000;
  uint64_t next = (uint64_t)p->backoff_ms * 2;
  p->backoff_ms = next > RETRY_MAX_MS ? RETRY_MAX_MS : (uint32_t)next;
}

static void
peer_backoff_reset(ipsec_broker_t *b, peer_t *p)
{
  p->backoff_ms = b->retry_ms;
  p->retry_at_us = 0;
}

/* After any change to p's SA set: log transitions, measure set-up time. */
static void
peer_sa_changed(ipsec_broker_t *b, peer_t *p)
{
  int up = sa_has(&p->sas, DIR_OUT);
  if (up && !p->was_up) {
    char a[PC_ADDR_STR_LEN], took[64] = "";
    pc_addr_fmt(&p->orport, a, sizeof(a), 1);
    if (p->need_since_us) {
      uint64_t d = now_us(b) - p->need_since_us;
      b->stats.sa_setups++;
      b->stats.sa_setup_us_last = d;
      b->stats.sa_setup_us_total += d;
      p->need_since_us = 0;
      snprintf(took, sizeof(took), " (%.1f ms after a circuit first needed it)",
               d / 1000.0);
    }
    log_notice("IPsec SA with relay %s (%s) is up%s: per-circuit "
               "connections to it now go through IPsec",
               p->desc, a, took);
    peer_backoff_reset(b, p);
  } else if (!up && p->was_up) {
    log_notice("IPsec SA with relay %s is down: new circuits to it share a "
               "TLS connection until it is back",
               p->desc);
  }
  p->was_up = up;
}

/* ---- announcements ---- */

static size_t
build_announce(ipsec_broker_t *b, const peer_t *p, int extra_flags,
               uint8_t *out, size_t outlen)
{
  ipsec_announce_t a;
  memset(&a, 0, sizeof(a));
  refresh_cert(b);
  if (!b->ike_cert || !b->keys->ed_signing_cert)
    return 0;
  a.version = IPSEC_ANNOUNCE_VERSION;
  a.flags = (uint8_t)(IPSEC_ANN_OFFER | extra_flags);
  if (p && p->conn == CONN_LOADED && b->charon_up &&
      !pc_memneq(p->loaded_key, p->ike_key, 32)) {
    a.flags |= IPSEC_ANN_READY;
    memcpy(a.ready_for, p->ike_key, 32);
  }
  a.generation = b->generation;
  a.orport = b->cfg.orport;
  memcpy(a.ike_key, ike_key_public(b->ike), 32);
  a.signing_cert = b->keys->ed_signing_cert;
  a.signing_cert_len = b->keys->ed_signing_cert_len;
  a.ike_cert = b->ike_cert->encoded;
  a.ike_cert_len = b->ike_cert->encoded_len;
  return ipsec_announce_encode(&a, out, outlen);
}

/* Send our announcement to p (on chan if given). Clears need_send on
 * success; otherwise retries later. */
static void
peer_try_send(ipsec_broker_t *b, peer_t *p, channel_t *chan, int extra_flags)
{
  uint8_t buf[IPSEC_ANNOUNCE_MAX_LEN];
  size_t n = build_announce(b, p, extra_flags, buf, sizeof(buf));
  int r = -1;
  if (n) {
    if (b->test_send)
      r = b->test_send(b->test_send_arg, p->ed, buf, n);
    else
      r = ipsec_link_send(chan, p->ed, p->have_rsa ? p->rsa : NULL,
                          p->kind == KIND_OFFERS ? &p->orport : &p->hint,
                          buf, n);
  }
  if (r == 0) {
    b->stats.announce_sent++;
    p->need_send = 0;
  } else {
    p->need_send = 1;
    p->next_send_us = now_us(b) + RESEND_MS * 1000ULL;
  }
}

/* The flags that ask p for its state: when we know nothing valid. */
static int
answer_flag(const ipsec_broker_t *b, const peer_t *p)
{
  if (!key_valid(b, p) || p->key_expires - time(NULL) < IKE_CERT_RENEW_SEC)
    return IPSEC_ANN_ANSWER;
  return 0;
}

static void
on_announce(void *arg, const ipsec_link_peer_t *lp, const uint8_t *payload,
            size_t len)
{
  static log_ratelim_t rl = LOG_RATELIM_INIT(300, 10);
  ipsec_broker_t *b = arg;
  ipsec_announce_t a;
  const char *why = NULL;
  time_t expires = 0;
  unsigned sup = 0;
  b->stats.announce_received++;
  if (ipsec_announce_parse(payload, len, &a, &why) < 0 ||
      ipsec_announce_verify(&a, lp->ed_id, &lp->addr, time(NULL), &expires,
                            &why) < 0) {
    b->stats.announce_refused++;
    if (log_ratelim_allow(&rl, time(NULL), &sup)) {
      char b64[48], addr[PC_ADDR_STR_LEN];
      base64_encode(b64, sizeof(b64), lp->ed_id, 32, BASE64_NOPAD);
      pc_addr_fmt(&lp->addr, addr, sizeof(addr), 1);
      log_notice("Refused an IPsec announcement from relay $%s at %s: %s "
                 "(%u more refusals not logged)",
                 b64, addr, why, sup);
    }
    return;
  }
  const uint8_t *rsa = lp->have_rsa ? lp->rsa_id : NULL;
  peer_t *p = peer_get_or_make(b, lp->ed_id, rsa, &lp->addr);
  if (!p)
    return;
  p->hint = lp->addr;
  char twhy[256];
  trust_t tr = TRUST_UNLISTED;
  if (a.flags & IPSEC_ANN_OFFER) {
    tr = trust_check(b, lp->ed_id, rsa, &lp->addr, &a.orport, twhy,
                     sizeof(twhy));
    p->listed = tr != TRUST_UNLISTED;
  }
  if ((a.flags & IPSEC_ANN_OFFER) && tr != TRUST_OK) {
    /* Act only for relays the consensus lists at this address and
     * ORPort: nothing is loaded into charon for it. */
    b->stats.announce_refused++;
    if (tr == TRUST_PORT)
      b->stats.refused_port++;
    else
      b->stats.refused_unlisted++;
    if (p->kind != KIND_REFUSED)
      log_untrusted(b, p->desc, &lp->addr, twhy);
    p->kind = KIND_REFUSED;
    p->peer_ready = 0;
    p->need_send = 0;
  } else if (!(a.flags & IPSEC_ANN_OFFER)) {
    if (p->kind != KIND_NO_IPSEC)
      log_info("Relay %s does not offer IPsec", p->desc);
    p->kind = KIND_NO_IPSEC;
    p->kind_deadline_us = now_us(b) + NO_IPSEC_FORGET_MS * 1000ULL;
  } else {
    int was_offering = p->kind == KIND_OFFERS;
    if (was_offering && p->generation != a.generation)
      log_info("Relay %s's charon lost its state (generation %u -> %u)",
               p->desc, p->generation, a.generation);
    if (!was_offering || pc_memneq(p->ike_key, a.ike_key, 32) ||
        !pc_addr_eq(&p->orport, &a.orport, 1)) {
      char addr[PC_ADDR_STR_LEN];
      pc_addr_fmt(&a.orport, addr, sizeof(addr), 1);
      log_info("Relay %s offers IPsec at %s (IKE key certified until %ld)",
               p->desc, addr, (long)expires);
    }
    p->kind = KIND_OFFERS;
    p->orport = a.orport;
    memcpy(p->ike_key, a.ike_key, 32);
    p->key_expires = expires;
    p->generation = a.generation;
    p->peer_ready = (a.flags & IPSEC_ANN_READY) &&
                    !pc_memneq(a.ready_for, ike_key_public(b->ike), 32);
  }
  if (a.flags & IPSEC_ANN_ANSWER)
    peer_try_send(b, p, lp->chan, 0);
  peer_advance(b, p);
}

static void
on_open(void *arg, const ipsec_link_peer_t *lp)
{
  ipsec_broker_t *b = arg;
  peer_t *p = peer_get_or_make(b, lp->ed_id,
                               lp->have_rsa ? lp->rsa_id : NULL, &lp->addr);
  if (!p)
    return;
  p->hint = lp->addr;
  if (p->kind == KIND_NO_IPSEC || (p->kind == KIND_REFUSED && !p->listed))
    return;
  if (p->kind == KIND_PROBING)
    p->kind_deadline_us = now_us(b) + (uint64_t)b->probe_ms * 1000;
  peer_try_send(b, p, lp->chan, answer_flag(b, p));
}

/* ---- VICI commands ---- */

static op_ctx_t *
op_new(ipsec_broker_t *b, op_kind_t kind, const peer_t *p)
{
  op_ctx_t *o = pc_zalloc(sizeof(*o));
  o->b = b;
  o->kind = kind;
  o->session = b->session;
  if (p) {
    o->has_peer = 1;
    memcpy(o->ed, p->ed, 32);
  }
  return o;
}

/* The context's peer if the answer still matters: same VICI session and
 * the peer still known. */
static peer_t *
op_peer(const op_ctx_t *o)
{
  if (o->session != o->b->session || !o->has_peer)
    return NULL;
  return hmap_get(o->b->peers, o->ed);
}

static int
submit(ipsec_broker_t *b, const char *cmd, vici_builder_t *args,
       const char *stream, vici_event_cb scb, vici_done_cb done, op_ctx_t *o,
       uint32_t tmo)
{
  if (!b->vc) {
    vici_builder_free(args);
    free(o);
    return -1;
  }
  /* vici_client_command() consumes args in every case. */
  if (vici_client_command(b->vc, cmd, args, stream, scb, done, o, tmo) < 0) {
    free(o);
    return -1;
  }
  return 0;
}

static const char *
reply_error(vici_result_t res, const vici_msg_t *m)
{
  const char *em = NULL;
  if (res != VICI_RESULT_OK)
    return vici_result_name(res);
  if (vici_msg_check_success(m, &em) < 0)
    return em;
  return NULL;
}

/* The start of every answer's callback: the broker the request was made
 * for, or NULL (o freed) when the request was cancelled or, with
 * same_session, made on an earlier connection to charon. */
static ipsec_broker_t *
reply_broker(op_ctx_t *o, vici_result_t res, int same_session)
{
  ipsec_broker_t *b = o->b;
  if (res == VICI_RESULT_CANCELLED ||
      (same_session && o->session != b->session)) {
    free(o);
    return NULL;
  }
  return b;
}

static void list_sas(ipsec_broker_t *b, peer_t *only);

/* load-key */
static void
load_key_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
              void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = reply_broker(o, res, 1);
  if (!b)
    return;
  free(o);
  const char *err = reply_error(res, m);
  if (err) {
    log_warn("charon did not take our IKE key: %s; retrying in %u s", err,
             b->key_backoff_ms / 1000);
    b->key_retry_at_us = now_us(b) + (uint64_t)b->key_backoff_ms * 1000;
    if (b->key_backoff_ms < RETRY_MAX_MS)
      b->key_backoff_ms *= 2;
    return;
  }
  b->key_loaded = 1;
  b->key_backoff_ms = b->retry_ms;
  log_info("Loaded our IKE key into charon (key id %s)",
           vici_msg_get_str(m, "id") ? vici_msg_get_str(m, "id") : "?");
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v))
    peer_advance(b, v);
}

static void
submit_load_key(ipsec_broker_t *b)
{
  size_t len = 0;
  const char *pem = ike_key_private_pem(b->ike, &len);
  vici_builder_t *a = vici_builder_new();
  vici_builder_add_str(a, "type", "ed25519");
  vici_builder_add(a, "data", pem, len);
  /* The builder's copy of the secret is freed (not wiped) by the client;
   * the PEM's base64 is all charon needs and it stays in our memory
   * anyway. */
  b->key_retry_at_us = UINT64_MAX; /* until the answer */
  if (submit(b, "load-key", a, NULL, NULL, load_key_done,
             op_new(b, OP_LOAD_KEY, NULL), 0) < 0)
    b->key_retry_at_us = now_us(b) + (uint64_t)b->key_backoff_ms * 1000;
}

/* load-conn */
static void
add_list1(vici_builder_t *a, const char *name, const char *item)
{
  vici_builder_begin_list(a, name);
  vici_builder_add_item_str(a, item);
  vici_builder_end_list(a);
}

static void
add_child(ipsec_broker_t *b, vici_builder_t *a, const char *name,
          const char *lts, const char *rts)
{
  vici_builder_begin_section(a, name);
  vici_builder_add_str(a, "mode", "tunnel");
  add_list1(a, "local_ts", lts);
  add_list1(a, "remote_ts", rts);
  add_list1(a, "esp_proposals", ESP_PROPOSAL);
  vici_builder_add_str(a, "start_action", "none");
  /* Never an "updown": charon would run it as root. The updown script is
   * the operator's, in charon's own set-up (scripts/pctor-charon). */
  vici_builder_end_section(a);
}

static void
add_auth(vici_builder_t *a, const char *section, const uint8_t id[32],
         const char *pem)
{
  char idstr[2 + 64 + 1] = "@#";
  base16_encode(idstr + 2, sizeof(idstr) - 2, id, 32, BASE16_LOWER);
  vici_builder_begin_section(a, section);
  vici_builder_add_str(a, "auth", "pubkey");
  vici_builder_add_str(a, "id", idstr);
  add_list1(a, "pubkeys", pem);
  vici_builder_end_section(a);
}

static void
load_conn_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
               void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = reply_broker(o, res, 0);
  if (!b)
    return;
  peer_t *p = op_peer(o);
  const char *err = reply_error(res, m);
  if (!p) {
    /* Evicted meanwhile: do not leave its connection in charon. */
    if (!err && o->session == b->session && o->has_peer &&
        !hmap_get(b->peers, o->ed))
      submit_unload(b, o->ed);
    free(o);
    return;
  }
  free(o);
  if (p->conn != CONN_LOADING)
    return;
  if (err) {
    log_warn("charon refused the IPsec connection for relay %s: %s", p->desc,
             err);
    p->conn = CONN_NONE;
    peer_backoff(b, p);
    return;
  }
  p->conn = CONN_LOADED;
  log_info("Loaded IPsec connection %s for relay %s", p->conn_name, p->desc);
  /* The peer may initiate now: tell it. */
  peer_try_send(b, p, NULL, 0);
  peer_advance(b, p);
}

static void
submit_load_conn(ipsec_broker_t *b, peer_t *p)
{
  char me[PC_ADDR_STR_LEN], peer[PC_ADDR_STR_LEN];
  char lts[128], rts[128];
  char *ppem = NULL;
  pc_addr_fmt(&b->cfg.orport, me, sizeof(me), 0);
  pc_addr_fmt(&p->orport, peer, sizeof(peer), 0);
  vici_builder_t *a = vici_builder_new();
  vici_builder_begin_section(a, p->conn_name);
  vici_builder_add_str(a, "version", "2");
  add_list1(a, "local_addrs", me);
  add_list1(a, "remote_addrs", peer);
  add_list1(a, "proposals", IKE_PROPOSAL);
  vici_builder_add_str(a, "unique", "replace");
  vici_builder_add_str(a, "dpd_delay", "30s");
  add_auth(a, "local", b->keys->ed_identity.pub, ike_key_public_pem(b->ike));
  ppem = ed25519_pem_encode_public(p->ike_key);
  add_auth(a, "remote", p->ed, ppem);
  free(ppem);
  vici_builder_begin_section(a, "children");
  /* out: our connections to the peer's ORPort. */
  fmt_ts(lts, sizeof(lts), &b->cfg.orport, 0);
  fmt_ts(rts, sizeof(rts), &p->orport, p->orport.port);
  add_child(b, a, CHILD_OUT, lts, rts);
  /* in: the peer's connections to our ORPort. */
  fmt_ts(lts, sizeof(lts), &b->cfg.orport, b->cfg.orport.port);
  fmt_ts(rts, sizeof(rts), &p->orport, 0);
  add_child(b, a, CHILD_IN, lts, rts);
  vici_builder_end_section(a);
  vici_builder_end_section(a);
  p->conn = CONN_LOADING;
  p->loaded_at_us = now_us(b);
  memcpy(p->loaded_key, p->ike_key, 32);
  p->loaded_orport = p->orport;
  if (submit(b, "load-conn", a, NULL, NULL, load_conn_done,
             op_new(b, OP_LOAD_CONN, p), 0) < 0) {
    p->conn = CONN_NONE;
    peer_backoff(b, p);
  }
}

/* unload-conn (evicted peers, peers that stopped offering). */
static void
unload_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
            void *arg)
{
  free(arg);
}

static void
submit_unload(ipsec_broker_t *b, const uint8_t ed[32])
{
  char name[CONN_NAME_LEN + 1] = CONN_PREFIX;
  base16_encode(name + sizeof(CONN_PREFIX) - 1, 65, ed, 32, BASE16_LOWER);
  vici_builder_t *a = vici_builder_new();
  vici_builder_add_str(a, "name", name);
  submit(b, "unload-conn", a, NULL, NULL, unload_done,
         op_new(b, OP_UNLOAD_CONN, NULL), 0);
}

/* terminate (an evicted peer's IKE_SA): by force, without waiting. */
static void
submit_terminate(ipsec_broker_t *b, const char *conn_name)
{
  vici_builder_t *a = vici_builder_new();
  vici_builder_add_str(a, "ike", conn_name);
  vici_builder_add_str(a, "force", "yes");
  vici_builder_add_str(a, "timeout", "-1");
  submit(b, "terminate", a, NULL, NULL, unload_done,
         op_new(b, OP_TERMINATE, NULL), 0);
}

/* initiate */
static void
initiate_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
              void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = reply_broker(o, res, 0);
  if (!b)
    return;
  peer_t *p = op_peer(o);
  sa_dir_t dir = o->dir;
  free(o);
  if (!p)
    return;
  p->op_busy = 0;
  const char *err = reply_error(res, m);
  if (err) {
    static log_ratelim_t rl = LOG_RATELIM_INIT(60, 5);
    unsigned sup = 0;
    b->stats.initiation_failures++;
    if (log_ratelim_allow(&rl, time(NULL), &sup))
      log_notice("Could not establish the IPsec SA (%s) with relay %s: %s; "
                 "retrying in %u s (%u more failures not logged)",
                 dir == DIR_OUT ? CHILD_OUT : CHILD_IN, p->desc, err,
                 (p->backoff_ms + 999) / 1000, sup);
    peer_backoff(b, p);
    /* Whatever charon set up half-way, find out. */
    list_sas(b, p);
    return;
  } else {
    log_info("Established the IPsec CHILD_SA '%s' with relay %s",
             dir == DIR_OUT ? CHILD_OUT : CHILD_IN, p->desc);
  }
  /* The events normally tell us already; make sure. */
  list_sas(b, p);
  peer_advance(b, p);
}

static void
initiate_log(vici_client_t *c, const char *event, const vici_msg_t *m,
             void *arg)
{
  const char *msg = vici_msg_get_str(m, "msg");
  if (msg)
    log_debug("charon: %s", msg);
}

static void
submit_initiate(ipsec_broker_t *b, peer_t *p, sa_dir_t dir)
{
  vici_builder_t *a = vici_builder_new();
  vici_builder_add_str(a, "child", dir == DIR_OUT ? CHILD_OUT : CHILD_IN);
  vici_builder_add_str(a, "ike", p->conn_name);
  vici_builder_addf(a, "timeout", "%u", CHARON_OP_TIMEOUT_MS);
  vici_builder_add_str(a, "loglevel", "1");
  op_ctx_t *o = op_new(b, OP_INITIATE, p);
  o->dir = dir;
  p->op_busy = 1;
  b->stats.initiations++;
  if (submit(b, "initiate", a, "control-log", initiate_log, initiate_done, o,
             VICI_OP_TIMEOUT_MS) < 0) {
    p->op_busy = 0;
    peer_backoff(b, p);
  }
}

/* ---- SA state from charon ---- */

/* Whether an IKE_SA section (event or listing) says we initiated it. */
static int
ike_ours(const vici_node_t *ike)
{
  const char *v = vici_node_get_str(ike, "initiator");
  return v && !strcmp(v, "yes");
}

/* Apply one IKE_SA section (of an event or a listing) about one of our
 * connections. up: add INSTALLED children; else remove the children. */
static void
apply_children(peer_t *p, uint32_t ike_uid, int ours, const vici_node_t *cs,
               int up, int to_live, int to_snap)
{
  for (const vici_node_t *ch = cs ? vici_node_first(cs) : NULL; ch;
       ch = vici_node_next(ch)) {
    if (vici_node_type(ch) != VICI_NODE_SECTION)
      continue;
    const char *name = vici_node_get_str(ch, "name");
    const char *state = vici_node_get_str(ch, "state");
    uint32_t cuid;
    if (!name || parse_u32(vici_node_get_str(ch, "uniqueid"), &cuid) < 0)
      continue;
    sa_dir_t dir;
    if (!strcmp(name, CHILD_OUT))
      dir = DIR_OUT;
    else if (!strcmp(name, CHILD_IN))
      dir = DIR_IN;
    else
      continue;
    int installed = up && state && !strcmp(state, "INSTALLED");
    if (to_live) {
      if (installed)
        sa_add(&p->sas, ike_uid, cuid, dir, ours);
      else if (!up)
        sa_remove_child(&p->sas, cuid);
    }
    if (to_snap && p->snapping) {
      if (installed)
        sa_add(&p->snap, ike_uid, cuid, dir, ours);
      else if (!up)
        sa_remove_child(&p->snap, cuid);
    }
  }
}

static void
on_child_updown(vici_client_t *c, const char *event, const vici_msg_t *m,
                void *arg)
{
  ipsec_broker_t *b = arg;
  const vici_node_t *root = vici_msg_root(m);
  const char *upv = vici_node_get_str(root, "up");
  int up = upv && !strcmp(upv, "yes");
  int is_ike = !strcmp(event, "ike-updown");
  for (const vici_node_t *n = vici_node_first(root); n;
       n = vici_node_next(n)) {
    if (vici_node_type(n) != VICI_NODE_SECTION)
      continue;
    peer_t *p = peer_by_conn_name(b, vici_node_name(n));
    uint32_t ike_uid;
    if (!p || parse_u32(vici_node_get_str(n, "uniqueid"), &ike_uid) < 0)
      continue;
    if (is_ike) {
      if (up)
        continue;
      sa_remove_ike(&p->sas, ike_uid);
      if (p->snapping)
        sa_remove_ike(&p->snap, ike_uid);
    } else {
      apply_children(p, ike_uid, ike_ours(n), vici_node_get(n, "child-sas"),
                     up, 1, 1);
    }
    /* Something went down: let the dust settle before initiating again
     * (when the peer replaces an IKE_SA, the old one's children go down
     * just before the new ones come up). */
    if (!up) {
      uint64_t settle = now_us(b) + (uint64_t)b->retry_ms * 1000;
      if (p->retry_at_us < settle)
        p->retry_at_us = settle;
    }
    peer_sa_changed(b, p);
    peer_advance(b, p);
  }
}

static void
on_rekey(vici_client_t *c, const char *event, const vici_msg_t *m, void *arg)
{
  ipsec_broker_t *b = arg;
  const vici_node_t *root = vici_msg_root(m);
  int is_ike = !strcmp(event, "ike-rekey");
  for (const vici_node_t *n = vici_node_first(root); n;
       n = vici_node_next(n)) {
    if (vici_node_type(n) != VICI_NODE_SECTION)
      continue;
    peer_t *p = peer_by_conn_name(b, vici_node_name(n));
    if (!p)
      continue;
    if (is_ike) {
      uint32_t from, to;
      if (parse_u32(vici_node_get_str(vici_node_get(n, "old"), "uniqueid"),
                    &from) < 0 ||
          parse_u32(vici_node_get_str(vici_node_get(n, "new"), "uniqueid"),
                    &to) < 0)
        continue;
      sa_rename_ike(&p->sas, from, to);
      if (p->snapping)
        sa_rename_ike(&p->snap, from, to);
      continue;
    }
    uint32_t ike_uid;
    if (parse_u32(vici_node_get_str(n, "uniqueid"), &ike_uid) < 0)
      continue;
    const vici_node_t *cs = vici_node_get(n, "child-sas");
    for (const vici_node_t *ch = cs ? vici_node_first(cs) : NULL; ch;
         ch = vici_node_next(ch)) {
      uint32_t old;
      const vici_node_t *o = vici_node_get(ch, "old");
      const vici_node_t *nw = vici_node_get(ch, "new");
      if (parse_u32(vici_node_get_str(o, "uniqueid"), &old) == 0) {
        sa_remove_child(&p->sas, old);
        if (p->snapping)
          sa_remove_child(&p->snap, old);
      }
      /* The new CHILD_SA, as one child of a listing. */
      if (nw && vici_node_get_str(nw, "uniqueid")) {
        uint32_t cuid;
        const char *name = vici_node_get_str(nw, "name");
        const char *state = vici_node_get_str(nw, "state");
        if (name && state && !strcmp(state, "INSTALLED") &&
            parse_u32(vici_node_get_str(nw, "uniqueid"), &cuid) == 0 &&
            (!strcmp(name, CHILD_OUT) || !strcmp(name, CHILD_IN))) {
          sa_dir_t dir = !strcmp(name, CHILD_OUT) ? DIR_OUT : DIR_IN;
          sa_add(&p->sas, ike_uid, cuid, dir, ike_ours(n));
          if (p->snapping)
            sa_add(&p->snap, ike_uid, cuid, dir, ike_ours(n));
        }
      }
    }
    peer_sa_changed(b, p);
  }
}

/* list-sas: one list-sa event per IKE_SA. */
static void
list_sa_event(vici_client_t *c, const char *event, const vici_msg_t *m,
              void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = o->b;
  if (o->session != b->session)
    return;
  const vici_node_t *root = vici_msg_root(m);
  for (const vici_node_t *n = vici_node_first(root); n;
       n = vici_node_next(n)) {
    if (vici_node_type(n) != VICI_NODE_SECTION)
      continue;
    peer_t *p = peer_by_conn_name(b, vici_node_name(n));
    uint32_t ike_uid;
    if (!p || !p->snapping ||
        parse_u32(vici_node_get_str(n, "uniqueid"), &ike_uid) < 0)
      continue;
    apply_children(p, ike_uid, ike_ours(n), vici_node_get(n, "child-sas"), 1,
                   0, 1);
  }
}

static void
list_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m, void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = reply_broker(o, res, 1);
  if (!b)
    return;
  int all = !o->has_peer;
  peer_t *only = all ? NULL : op_peer(o);
  free(o);
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    if (!p->snapping || (!all && p != only))
      continue;
    if (--p->snapping > 0)
      continue;
    if (res == VICI_RESULT_OK)
      p->sas = p->snap;
    peer_sa_changed(b, p);
    peer_advance(b, p);
  }
}

static void
snap_start(peer_t *p)
{
  if (!p->snapping)
    p->snap.n = 0;
  p->snapping++;
}

/* A blocking list-sas for one peer's connection, or for everything. */
static void
list_sas(ipsec_broker_t *b, peer_t *only)
{
  vici_builder_t *a = vici_builder_new();
  if (only) {
    vici_builder_add_str(a, "ike", only->conn_name);
    snap_start(only);
  } else {
    hmap_iter_t it;
    void *v;
    hmap_iter_init(&it, b->peers);
    while (hmap_iter_next(&it, NULL, &v))
      snap_start(v);
  }
  op_ctx_t *o = op_new(b, OP_LIST_SAS, only);
  if (submit(b, "list-sas", a, "list-sa", list_sa_event, list_done, o, 0) <
      0) {
    /* Undo the snapshot marks. */
    hmap_iter_t it;
    void *v;
    hmap_iter_init(&it, b->peers);
    while (hmap_iter_next(&it, NULL, &v)) {
      peer_t *p = v;
      if ((!only || p == only) && p->snapping)
        p->snapping--;
    }
  }
}

/* ---- connection to charon ---- */

/* get-conns right after connecting: if a connection we had loaded is
 * missing, charon restarted and forgot everything; our generation tells
 * peers so. Then load the key, list the SAs and reload the peers. */
static void
get_conns_done(vici_client_t *c, vici_result_t res, const vici_msg_t *m,
               void *arg)
{
  op_ctx_t *o = arg;
  ipsec_broker_t *b = reply_broker(o, res, 1);
  if (!b)
    return;
  free(o);
  int restarted = 0, had = 0;
  const vici_node_t *l =
      res == VICI_RESULT_OK ? vici_node_get(vici_msg_root(m), "conns") : NULL;
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    if (p->conn != CONN_LOADED)
      continue;
    had = 1;
    int found = 0;
    for (const vici_node_t *i = l ? vici_node_first(l) : NULL; i && !found;
         i = vici_node_next(i))
      found = !strcmp(vici_node_value(i, NULL), p->conn_name);
    if (!found)
      restarted = 1;
  }
  if (restarted || (had && !l)) {
    b->generation++;
    log_notice("charon lost our IPsec connections (it restarted?): "
               "reloading them (generation %u)",
               b->generation);
  }
  b->charon_up = 1;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    p->conn = CONN_NONE;
    p->op_busy = 0;
    p->want_since_us = 0;
    p->snapping = 0;
    peer_backoff_reset(b, p);
    if (p->kind == KIND_OFFERS && restarted)
      p->need_send = 1; /* new generation, not READY yet */
  }
  submit_load_key(b);
  list_sas(b, NULL);
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v))
    peer_advance(b, v);
}

static void
vici_state(vici_client_t *c, vici_state_t st, const char *why, void *arg)
{
  ipsec_broker_t *b = arg;
  hmap_iter_t it;
  void *v;
  switch (st) {
  case VICI_STATE_CONNECTED:
    b->session++;
    b->stats.charon_connects++;
    b->key_loaded = 0;
    b->key_backoff_ms = b->retry_ms;
    log_notice("IPsec: connected to charon at %s", b->vici_socket);
    submit(b, "get-conns", NULL, NULL, NULL, get_conns_done,
           op_new(b, OP_GET_CONNS, NULL), 0);
    break;
  case VICI_STATE_LOST:
    b->session++;
    b->stats.charon_losses++;
    b->charon_up = 0;
    b->key_loaded = 0;
    log_notice("IPsec: lost charon (%s). Until it is back, new circuits to "
               "IPsec peers share TLS connections; existing connections "
               "are kept.",
               why);
    hmap_iter_init(&it, b->peers);
    while (hmap_iter_next(&it, NULL, &v)) {
      peer_t *p = v;
      /* Unknown now; charon may have taken the SAs with it. The
       * connections stay nominally loaded so that get-conns can tell a
       * restart from a lost socket. */
      if (p->conn == CONN_LOADING)
        p->conn = CONN_NONE;
      p->sas.n = 0;
      p->snapping = 0;
      p->op_busy = 0;
      peer_sa_changed(b, p);
      if (p->kind == KIND_OFFERS)
        p->need_send = 1; /* not READY any more */
    }
    break;
  case VICI_STATE_CONNECT_FAILED:
    break;
  }
}

/* ---- the state machine ---- */

static void
peer_advance(ipsec_broker_t *b, peer_t *p)
{
  uint64_t now = now_us(b);
  if (p->kind != KIND_OFFERS) {
    if (p->conn == CONN_LOADED && b->charon_up) {
      submit_unload(b, p->ed);
      p->conn = CONN_NONE;
    }
    return;
  }
  if (!key_valid(b, p)) {
    /* Its certificate ran out: ask again, use nothing meanwhile. */
    log_info("The IKE key certificate of relay %s expired; asking it again",
             p->desc);
    p->kind = KIND_PROBING;
    p->kind_deadline_us = now + (uint64_t)b->probe_ms * 1000;
    peer_try_send(b, p, NULL, IPSEC_ANN_ANSWER);
    return;
  }
  if (!b->charon_up || now < p->retry_at_us)
    return;
  int stale = p->conn == CONN_LOADED &&
              (pc_memneq(p->loaded_key, p->ike_key, 32) ||
               !pc_addr_eq(&p->loaded_orport, &p->orport, 1));
  if (stale && now < p->loaded_at_us + RELOAD_MIN_MS * 1000ULL)
    return; /* the tick comes back */
  if (p->conn == CONN_NONE || stale) {
    submit_load_conn(b, p);
    return;
  }
  /* A listing in flight (after an initiation, or after connecting)
   * tells us soon which CHILD_SAs exist: wait for it rather than
   * initiating one twice. */
  if (p->conn != CONN_LOADED || !p->peer_ready || !b->key_loaded ||
      p->op_busy || p->snapping)
    return;
  if (sa_has(&p->sas, DIR_OUT) && sa_has(&p->sas, DIR_IN)) {
    p->want_since_us = 0;
    return;
  }
  if (!p->want_since_us)
    p->want_since_us = now;
  /* The lower identity initiates at once; the other one only when no SA
   * came up for a while: then its own charon restarted (the peer's still
   * holds the old SA, which it would keep using, and our announcements
   * cannot reach it through that SA), or the initiator cannot. charon's
   * "unique = replace" lets the new IKE_SA replace a stale one. Half an
   * SA pair on an IKE_SA the peer initiated is the peer's to complete. */
  if ((!we_initiate(b, p) || sa_all_theirs(&p->sas)) &&
      now < p->want_since_us + b->grace_ms * 1000ULL)
    return;
  if (!sa_has(&p->sas, DIR_OUT))
    submit_initiate(b, p, DIR_OUT);
  else
    submit_initiate(b, p, DIR_IN);
}

static void
tick_cb(void *arg)
{
  ipsec_broker_t *b = arg;
  uint64_t now = now_us(b);
  int renewed = refresh_cert(b);
  if (b->charon_up && !b->key_loaded && now >= b->key_retry_at_us)
    submit_load_key(b);
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    if (p->kind == KIND_PROBING && now >= p->kind_deadline_us) {
      log_info("Relay %s did not answer our IPsec announcement: treating it "
               "as a relay without IPsec",
               p->desc);
      p->kind = KIND_NO_IPSEC;
      p->kind_deadline_us = now + NO_IPSEC_FORGET_MS * 1000ULL;
      p->need_send = 0;
      continue;
    }
    if (p->kind == KIND_NO_IPSEC && now >= p->kind_deadline_us &&
        p->conn == CONN_NONE && !p->sas.n) {
      peer_remove(b, p); /* removal during iteration is allowed */
      continue;
    }
    if (renewed && p->kind == KIND_OFFERS)
      p->need_send = 1;
    if (p->need_send && now >= p->next_send_us)
      peer_try_send(b, p, NULL, answer_flag(b, p));
    peer_advance(b, p);
  }
}

/* ---- the PerCircuitTCP policy ---- */

pctcp_peer_verdict_t
ipsec_broker_verdict(ipsec_broker_t *b, const pc_addr_t *addr,
                     const uint8_t *rsa_id, const uint8_t *ed_id)
{
  pctcp_peer_verdict_t v = PCTCP_PEER_SHARED;
  int req = required(b), inside_sa = 0;
  peer_t *p = b->running ? peer_find(b, ed_id, rsa_id) : NULL;
  if (!b->running) {
    v = req ? PCTCP_PEER_SHARED : PCTCP_PEER_PER_CIRCUIT;
  } else if (!p) {
    /* Unknown: share (that opens a shared channel, whose opening makes us
     * announce and ask) and start tracking it. */
    if (ed_id && !pc_is_zero(ed_id, 32) && rsa_id) {
      p = peer_get_or_make(b, ed_id, rsa_id, addr);
      if (p) {
        p->need_since_us = now_us(b);
        peer_try_send(b, p, NULL, IPSEC_ANN_ANSWER);
      }
    }
  } else {
    p->last_used_us = now_us(b);
    /* Per circuit only through an installed SA that the peer still
     * stands behind: a peer whose charon went away says it is no longer
     * READY, and its end of the SA may be gone with it. */
    if (p->kind == KIND_OFFERS && key_valid(b, p) && addr &&
        pc_addr_eq(addr, &p->orport, 1) && sa_has(&p->sas, DIR_OUT) &&
        p->peer_ready) {
      v = PCTCP_PEER_PER_CIRCUIT;
      inside_sa = 1;
    } else if (p->kind == KIND_NO_IPSEC) {
      v = req ? PCTCP_PEER_SHARED : PCTCP_PEER_PER_CIRCUIT;
    } else {
      if (p->kind == KIND_OFFERS)
        b->stats.verdict_shared_waiting++;
      if (!p->need_since_us)
        p->need_since_us = now_us(b);
      if (p->kind == KIND_OFFERS && now_us(b) >= p->retry_at_us)
        peer_advance(b, p);
    }
  }
  if (v == PCTCP_PEER_PER_CIRCUIT) {
    if (inside_sa)
      b->stats.verdict_ipsec++;
    else
      b->stats.verdict_plain++;
  } else {
    b->stats.verdict_shared++;
  }
  return v;
}

static pctcp_peer_verdict_t
policy_cb(const pc_addr_t *addr, const uint8_t *rsa_id, const uint8_t *ed_id,
          void *arg)
{
  return ipsec_broker_verdict(arg, addr, rsa_id, ed_id);
}

/* ---- life cycle ---- */

static ipsec_broker_t *
broker_new(evloop_t *loop, const relay_keys_t *keys, ike_key_t *ike)
{
  ipsec_broker_t *b = pc_zalloc(sizeof(*b));
  b->loop = loop;
  b->keys = keys;
  b->ike = ike;
  ipsec_broker_config_init(&b->cfg);
  b->peers = hmap_new(32);
  b->by_rsa = hmap_new(20);
  b->tick_ms = DEFAULT_TICK_MS;
  b->probe_ms = DEFAULT_PROBE_MS;
  b->retry_ms = DEFAULT_RETRY_MS;
  b->reconnect_ms = RECONNECT_MIN_MS;
  b->grace_ms = DEFAULT_GRACE_MS;
  b->key_backoff_ms = b->retry_ms;
  b->generation = (uint32_t)time(NULL);
  b->tick = evloop_timer_new(loop, tick_cb, b);
  refresh_cert(b);
  return b;
}

ipsec_broker_t *
ipsec_broker_new(evloop_t *loop, const char *datadir, const relay_keys_t *keys,
                 char **err)
{
  ike_key_t *ike = ike_key_load_or_create(datadir, err);
  if (!ike)
    return NULL;
  return broker_new(loop, keys, ike);
}

ipsec_broker_t *
ipsec_broker_new_for_testing(evloop_t *loop, const relay_keys_t *keys,
                             ike_key_t *ike)
{
  return broker_new(loop, keys, ike);
}

static void
forget_peers(ipsec_broker_t *b)
{
  hmap_clear(b->by_rsa);
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v))
    free(hmap_iter_remove_current(&it));
}

static void
stop_running(ipsec_broker_t *b)
{
  if (!b->running)
    return;
  ipsec_link_stop();
  vici_client_free(b->vc);
  evloop_timer_cancel(b->tick);
  b->session++;
  b->charon_up = 0;
  b->key_loaded = 0;
  forget_peers(b);
  b->running = 0;
  log_notice("IPsec between relays is off");
}

static void
start_vici(ipsec_broker_t *b)
{
  b->vc = vici_client_new(b->loop, b->vici_socket);
  /* We send charon our IKE private key: only to root's charon, or the
   * configured charon user's. */
  vici_client_require_peer(b->vc, !b->test_no_root, b->cfg.charon_uid);
  vici_client_set_state_cb(b->vc, vici_state, b);
  vici_client_set_reconnect(b->vc, b->reconnect_ms,
                            b->reconnect_ms > RECONNECT_MAX_MS
                                ? b->reconnect_ms
                                : RECONNECT_MAX_MS);
  /* Room for reloading every peer at once after a reconnection. */
  vici_client_set_queue_limit(b->vc, (size_t)b->cfg.max_peers * 3 + 16);
  vici_client_register_event(b->vc, "ike-updown", on_child_updown, NULL, b);
  vici_client_register_event(b->vc, "child-updown", on_child_updown, NULL, b);
  vici_client_register_event(b->vc, "ike-rekey", on_rekey, NULL, b);
  vici_client_register_event(b->vc, "child-rekey", on_rekey, NULL, b);
  vici_client_connect(b->vc);
}

static int
str_changed(const char *a, const char *b)
{
  return strcmp(a ? a : "", b ? b : "") != 0;
}

int
ipsec_broker_configure(ipsec_broker_t *b, const ipsec_broker_config_t *cfg)
{
  int want = cfg->mode != IPSEC_MODE_OFF;
  if (want && cfg->orport.family != AF_INET && cfg->orport.family != AF_INET6) {
    log_warn("IPsec needs the relay's ORPort address; not starting it");
    want = 0;
  }
  const char *sock = cfg->vici_socket && *cfg->vici_socket
                         ? cfg->vici_socket
                         : IPSEC_DEFAULT_VICI_SOCKET;
  int sock_changed = str_changed(b->vici_socket, sock) ||
                     b->cfg.charon_uid != cfg->charon_uid;
  int reload = b->running && !pc_addr_eq(&b->cfg.orport, &cfg->orport, 1);
  if (!want)
    stop_running(b);
  b->cfg = *cfg;
  if (!b->cfg.max_peers)
    b->cfg.max_peers = IPSEC_DEFAULT_MAX_PEERS;
  if (!b->cfg.max_peers_per_addr)
    b->cfg.max_peers_per_addr = IPSEC_DEFAULT_MAX_PEERS_PER_ADDR;
  free(b->vici_socket);
  b->vici_socket = pc_strdup(sock);
  b->cfg.vici_socket = b->vici_socket;
  if (!want)
    b->cfg.mode = IPSEC_MODE_OFF;

  /* The PerCircuitTCP policy: needed when IPsec runs or is required. */
  if (want || b->cfg.require_for_pctcp) {
    pctcp_set_peer_policy(policy_cb, b);
    b->policy_installed = 1;
  } else if (b->policy_installed) {
    pctcp_set_peer_policy(NULL, NULL);
    b->policy_installed = 0;
  }
  if (!want)
    return cfg->mode == IPSEC_MODE_OFF ? 0 : -1;

  if (!b->running) {
    ipsec_link_handlers_t h = {on_announce, on_open};
    if (!b->test_send && ipsec_link_start(&h, b) < 0) {
      log_warn("IPsec: cannot register with the channel layer");
      return -1;
    }
    b->running = 1;
    start_vici(b);
    evloop_timer_schedule_periodic(b->tick, (uint64_t)b->tick_ms * 1000);
    char a[PC_ADDR_STR_LEN];
    pc_addr_fmt(&b->cfg.orport, a, sizeof(a), 1);
    log_notice("IPsec between relays: %s (IPsec %s), ORPort %s, charon at "
               "%s",
               required(b) ? "required for per-circuit connections"
                           : "with relays that offer it",
               ipsec_mode_name(b->cfg.mode), a, b->vici_socket);
    return 0;
  }
  if (sock_changed) {
    vici_client_free(b->vc);
    b->session++;
    b->charon_up = 0;
    b->key_loaded = 0;
    start_vici(b);
  } else if (reload && b->charon_up) {
    hmap_iter_t it;
    void *v;
    hmap_iter_init(&it, b->peers);
    while (hmap_iter_next(&it, NULL, &v)) {
      peer_t *p = v;
      if (p->conn == CONN_LOADED)
        p->conn = CONN_NONE;
      if (p->kind == KIND_OFFERS)
        p->need_send = 1;
      peer_advance(b, p);
    }
  }
  return 0;
}

/* ---- does the kernel do IPsec? ---- */

/* 1 if a socket of this family/protocol can exist here: made, or refused
 * only for want of privilege (PF_KEY needs CAP_NET_ADMIN). */
static int
socket_family_exists(int domain, int type, int protocol)
{
  int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
  if (fd >= 0) {
    close(fd);
    return 1;
  }
  return errno == EPERM || errno == EACCES;
}

#ifndef PF_KEY_V2
#define PF_KEY_V2 2
#endif

int
ipsec_kernel_available(const char **why)
{
  if (socket_family_exists(AF_NETLINK, SOCK_RAW, NETLINK_XFRM) ||
      socket_family_exists(PF_KEY, SOCK_RAW, PF_KEY_V2))
    return 1;
  if (why)
    *why = "neither an XFRM netlink nor a PF_KEY socket can be opened here "
           "(a simulator such as Shadow, or a kernel without IPsec), so "
           "charon could install no SA";
  return 0;
}

void
ipsec_broker_free_(ipsec_broker_t *b)
{
  if (!b)
    return;
  stop_running(b);
  if (b->policy_installed)
    pctcp_set_peer_policy(NULL, NULL);
  evloop_timer_free(b->tick);
  hmap_free(b->by_rsa, NULL);
  hmap_free(b->peers, peer_free);
  torcert_free(b->ike_cert);
  ike_key_free(b->ike);
  free(b->vici_socket);
  free(b);
}

void
ipsec_broker_get_stats(const ipsec_broker_t *b, ipsec_broker_stats_t *out)
{
  *out = b->stats;
  out->n_peers = out->n_offering = out->n_sa_up = 0;
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    const peer_t *p = v;
    out->n_peers++;
    out->n_offering += p->kind == KIND_OFFERS;
    out->n_sa_up += sa_has(&p->sas, DIR_OUT);
  }
}

/* ---- the directory ---- */

void
ipsec_broker_set_directory(ipsec_broker_t *b, ipsec_broker_dir_fn fn,
                           void *arg)
{
  b->dir_fn = fn;
  b->dir_arg = arg;
}

void
ipsec_broker_directory_changed(ipsec_broker_t *b)
{
  if (!b->running)
    return;
  hmap_iter_t it;
  void *v;
  hmap_iter_init(&it, b->peers);
  while (hmap_iter_next(&it, NULL, &v)) {
    peer_t *p = v;
    char why[256];
    const uint8_t *rsa = p->have_rsa ? p->rsa : NULL;
    if (p->kind == KIND_OFFERS) {
      trust_t tr = trust_check(b, p->ed, rsa, &p->hint, &p->orport, why,
                               sizeof(why));
      p->listed = tr != TRUST_UNLISTED;
      if (tr != TRUST_OK) {
        /* No new per-circuit connections, and its connection leaves
         * charon; its SAs go when the table needs the room. */
        log_untrusted(b, p->desc, &p->hint, why);
        p->kind = KIND_REFUSED;
        p->peer_ready = 0;
        peer_advance(b, p);
      }
    } else {
      int was = p->listed;
      p->listed = trust_check(b, p->ed, rsa, &p->hint, NULL, why,
                              sizeof(why)) == TRUST_OK;
      if (p->kind == KIND_REFUSED && p->listed && !was) {
        log_info("IPsec: relay %s is listed now; asking it again", p->desc);
        peer_try_send(b, p, NULL, IPSEC_ANN_ANSWER);
      }
    }
  }
}

/* ---- tests ---- */

void
ipsec_broker_set_sender_for_testing(ipsec_broker_t *b, ipsec_broker_send_fn fn,
                                    void *arg)
{
  b->test_send = fn;
  b->test_send_arg = arg;
}

void
ipsec_broker_refuse_root_for_testing(ipsec_broker_t *b)
{
  b->test_no_root = 1;
}

void
ipsec_broker_set_timing_for_testing(ipsec_broker_t *b, uint32_t tick_ms,
                                    uint32_t probe_ms, uint32_t retry_ms,
                                    uint32_t reconnect_ms, uint32_t grace_ms)
{
  b->grace_ms = grace_ms;
  b->tick_ms = tick_ms;
  b->probe_ms = probe_ms;
  b->retry_ms = retry_ms;
  b->reconnect_ms = reconnect_ms;
  b->key_backoff_ms = retry_ms;
}

void
ipsec_broker_announce_for_testing(ipsec_broker_t *b,
                                  const ipsec_link_peer_t *peer,
                                  const uint8_t *payload, size_t len)
{
  if (b->running)
    on_announce(b, peer, payload, len);
}

void
ipsec_broker_open_for_testing(ipsec_broker_t *b, const ipsec_link_peer_t *peer)
{
  if (b->running)
    on_open(b, peer);
}

size_t
ipsec_broker_build_announce_for_testing(ipsec_broker_t *b,
                                        const uint8_t ed_id[32], uint8_t *out,
                                        size_t outlen)
{
  return build_announce(b, hmap_get(b->peers, ed_id), 0, out, outlen);
}
