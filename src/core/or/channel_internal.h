/* SPDX-License-Identifier: BSD-3-Clause */
/* channel_internal.h -- the channel structure, shared by channel.c (I/O,
 * framing, registry), channel_hs.c (the link handshake) and scheduler.c
 * (which moves queued circuit cells into the output buffer). No other file
 * includes this. */
#ifndef PCTOR_CORE_OR_CHANNEL_INTERNAL_H
#define PCTOR_CORE_OR_CHANNEL_INTERNAL_H
#include "core/or/channel.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/container/minheap.h"
#include "lib/crypt/digest.h"
#include "lib/net/conn.h"

/* Handshake state; freed when the channel opens. */
typedef struct chan_hs_t {
  int received_versions, received_certs, received_auth_challenge;
  int received_authenticate, received_netinfo;
  int sent_versions;
  /* Running SHA-256 of every byte each side sent during the handshake,
   * for the SLOG/CLOG fields of AUTHENTICATE. Digests stop after the
   * AUTH_CHALLENGE (responder side) / our CERTS (initiator side). */
  crypt_digest_t *digest_sent, *digest_received;
  int digest_received_frozen, digest_sent_frozen;
  uint8_t challenge[32];      /* AUTH_CHALLENGE we sent / received */
  int peer_offers_auth3;
  /* responder: the initiator's certified keys while we wait for
   * AUTHENTICATE */
  int peer_claims_ids;
  uint8_t peer_auth_key[32];
  uint8_t peer_rsa_sha256[32]; /* SHA-256 of the initiator's RSA DER */
  uint8_t peer_cert_rsa_sha256_ok;
} chan_hs_t;

struct channel_t {
  uint64_t id;
  conn_t *conn;
  /* Carried channels (no conn): the feature's transport for its circuit. */
  const channel_carrier_ops_t *carrier;
  void *carrier_arg;
  const char *carrier_kind; /* the transport's name ("BackTap"), static */
  channel_state_t state;
  unsigned is_outgoing : 1;
  unsigned we_authenticate : 1;   /* outgoing, and we are a relay */
  unsigned peer_is_relay : 1;     /* identities proved */
  unsigned close_pending : 1;     /* freed from a deferred callback */
  unsigned in_read : 1;           /* inside the read loop */
  unsigned per_circuit : 1;       /* PerCircuitTCP: one circuit's alone */
  unsigned had_circuit : 1;       /* a circuit was ever set on it */
  unsigned spare : 1;             /* per-circuit, opened ahead of need */
  unsigned dos_counted : 1;       /* counted by core/or/dos at accept */
  unsigned carried : 1;           /* one circuit over a feature's carrier */
  unsigned backpressure : 1;      /* the carrier is hop-by-hop (BackTap) */
  unsigned path_backpressure : 1; /* ... and so is every hop before it */
  int link_proto;                 /* 0 until VERSIONS is negotiated */
  pc_addr_t addr;                 /* where we connected / who connected */
  int have_peer_rsa, have_peer_ed;
  uint8_t peer_rsa_id[20];
  uint8_t peer_ed_id[32];
  int want_rsa, want_ed;
  uint8_t want_rsa_id[20];
  uint8_t want_ed_id[32];
  /* Addresses the peer says are its own (NETINFO), for canonicity. */
  int n_peer_my_addrs;
  pc_addr_t peer_my_addrs[4];
  int addr_is_canonical;
  /* Our clock minus the time in the peer's NETINFO (seconds), when it
   * sent one (clients may send 0). */
  int64_t netinfo_skew;
  /* channel_take_bytes(): the connection's counters at the last call. */
  uint64_t bw_mark_read, bw_mark_written;
  unsigned has_netinfo_skew : 1;
  chan_hs_t *hs;
  /* Runs from creation (before TCP and TLS complete) until OPEN. */
  evloop_timer_t *hs_timer;
  hmap_t *circuits;               /* circ id (u32) -> circuit_t * */
  /* The last circuit channel_get_circuit() found (NULL: none): consecutive
   * cells mostly belong to the same circuit, and a hit saves the keyed
   * hash. channel_set_circuit()/channel_remove_circuit() keep it true. */
  uint32_t last_circ_id;
  struct circuit_t *last_circ;
  /* scheduler.c: queues of this channel's circuits that have cells,
   * lowest priority value first; where the channel stands. */
  minheap_t *sched_queues;
  int sched_state;                /* SCHED_CHAN_* in scheduler.c */
  int sched_idx;                  /* in the scheduler's ready heap */
  dlist_node_t sched_node;        /* on the active list */
  dlist_node_t sched_wait_node;   /* on the kernel-wait list */
  uint64_t sched_run;             /* run that computed sched_budget */
  int64_t sched_budget;           /* bytes it may still take this run */
  uint64_t sched_flush_run;       /* run that wrote to it (flush after) */
  /* The last KIST query (scheduler.c): the kernel's room then, when, and
   * the connection's bytes written by then. */
  int64_t kist_room;
  uint64_t kist_at_us;
  uint64_t kist_written;
  /* The bandwidth buckets its connection draws on (NULL: none). */
  struct ratelimit_t *bw_global, *bw_relay;
  dlist_node_t all_node;          /* in the global channel list */
  /* The index of channels by relay identity (channel.c): the entry of
   * the RSA identity the channel proved or will insist on (NULL: none,
   * or closing); in its list of all channels, and in its list of shared
   * channels or of spares (per-circuit ones that are not spares are in
   * neither). Lists are ordered by id, i.e. as the global list. */
  struct chan_peer_t *peer;
  dlist_node_t peer_node;
  dlist_node_t peer_kind_node;
  /* Per-circuit, its circuits gone: to be closed by the reaper. */
  dlist_node_t emptied_node;
  /* circuit.c: circuits whose extension waits for this channel to open
   * (channel_pending_circuits()). */
  dlist_t pending_circuits;
  uint64_t cells_in, cells_out;
  uint64_t idle_since_us;         /* when it last had no circuits */
  uint64_t created_us;
  char desc[128];
};

/* channel_hs.c */
void channel_hs_start(channel_t *chan);
/* Handle one handshake cell; raw/rawlen are its wire bytes. Returns 0, or
 * -1 after closing the channel. */
int channel_hs_handle_var(channel_t *chan, const var_cell_t *vc,
                          const uint8_t *raw, size_t rawlen);
int channel_hs_handle_fixed(channel_t *chan, const cell_t *cell,
                            const uint8_t *raw, size_t rawlen);
void channel_hs_free(chan_hs_t *hs);

/* scheduler.c, for channel.c */
/* Relayed cells fill the output buffer up to two full TLS records: the
 * scheduler adds them whole (buf_add_unsplit()), 31 to a 16 KiB chunk,
 * so both records are full and none carries a straggler. */
#define CHAN_CELLS_PER_RECORD (16384 / CELL_MAX_NETWORK_LEN)
#define CHAN_OUTBUF_HIGH (2 * CHAN_CELLS_PER_RECORD * CELL_MAX_NETWORK_LEN)
#define CHAN_OUTBUF_LOW (8 * CELL_MAX_NETWORK_LEN)
void scheduler_channel_init(channel_t *chan);
/* Forget the channel (closing); its queues must already be cleared or
 * are dropped from the scheduler here. */
void scheduler_channel_free(channel_t *chan);
/* cq (whose chan is set) received cells. */
void scheduler_queue_has_cells(circ_queue_t *cq);
/* cq is being emptied; leave the channel's heap. */
void scheduler_queue_clear(circ_queue_t *cq);
/* Whether channel.c lets the scheduler write to chan at all (open, not
 * closing, not blocked by a test). */
int channel_accepts_circuit_cells(const channel_t *chan);
/* Count a cell the scheduler wrote. */
void channel_note_cell_out(channel_t *chan);

/* channel.c, for channel_hs.c */
void channel_write_raw(channel_t *chan, const uint8_t *data, size_t len);
void channel_became_open(channel_t *chan);
void channel_update_desc(channel_t *chan);
/* The channel's identity or kind changed (identity proved, spare taken):
 * move it in the index of channels by relay identity. */
void channel_index_update(channel_t *chan);
#endif
