/* SPDX-License-Identifier: BSD-3-Clause */
/* congestion_control.h -- RTT-based circuit congestion control (proposal
 * 324, the Vegas variant as tor 0.4.9 runs it), its negotiation in the
 * ntor v3 handshake, and XON/XOFF stream flow control.
 *
 * Four separable pieces, none of which does I/O:
 *
 *   cc_params_t   the tunables (consensus parameters cc_*), with tor
 *                 0.4.9's defaults (cc_params_default) or values looked up
 *                 through a callback (cc_params_load). The process keeps a
 *                 "current" set that new circuits copy (cc_params_current).
 *
 *   cc_t          one sender's controller for one circuit hop: congestion
 *                 window (cwnd, in cells), cells in flight, the SENDME
 *                 increment, the RTT estimate (EWMA, min, max; clock stall
 *                 and jump heuristics), the Vegas queue estimate with slow
 *                 start (RFC 3742 limited slow start), steady state and the
 *                 cwnd bounds. The caller tells it when a DATA cell leaves
 *                 (cc_note_data_sent) and when a circuit SENDME arrives
 *                 (cc_on_sendme), always with the time; it answers how many
 *                 cells may be sent (cc_sendable). The window update is a
 *                 function pointer (cc_alg_ops_t) so that another
 *                 delay-based controller (e.g. a per-hop one) can be tried
 *                 without touching the bookkeeping.
 *
 *   cc_flow_t     one stream's XON/XOFF state (proposal 324 section 4):
 *                 when to send XOFF (edge buffer above cc_xoff_*), when to
 *                 send XON (buffer drained, or the drain rate changed by
 *                 more than cc_xon_change_pct), the drain-rate EWMA carried
 *                 in XON, and the receiver's checks of XON/XOFF it gets.
 *
 *   extensions    the ntor v3 messages: the client's request (extension
 *                 type 1, empty body) and the relay's response (type 2,
 *                 body: sendme_inc [1 byte]).
 *
 * Authenticated SENDMEs (proposal 289) ride on the controller: every
 * sendme_inc-th DATA cell sent (the one the peer will acknowledge) gets a
 * slot in a FIFO that holds its send time and, filled in by the caller once
 * the cell is encrypted, its 20-byte relay digest; a SENDME pops the oldest
 * slot, must carry that digest (v1), and its arrival time gives the RTT.
 * The FIFO is a ring that grows by doubling when the window outgrows it;
 * in the steady state nothing is allocated per cell or per SENDME.
 *
 * Differences from tor, on purpose: tor caches "the monotonic clock
 * stalled" process-wide; pctor keeps that flag per controller (no global
 * mutable state). The cwnd arithmetic saturates at cwnd_min instead of
 * wrapping when a decrement is larger than the window.
 */
#ifndef PCTOR_CORE_OR_CONGESTION_CONTROL_H
#define PCTOR_CORE_OR_CONGESTION_CONTROL_H
#include <stddef.h>
#include <stdint.h>

/* Algorithms (consensus cc_alg). 0 is the fixed SENDME windows. */
#define CC_ALG_SENDME 0
#define CC_ALG_VEGAS 2

/* Cells of one TLS record (16 KiB / 514), tor's unit for these defaults. */
#define CC_TLS_RECORD_CELLS 31
/* ntor v3 extension types (proposal 324 section 10.3). */
#define CC_EXT_TYPE_REQUEST 1
#define CC_EXT_TYPE_RESPONSE 2
/* Relay payload bytes per cell (the unit of cc_xoff_* and cc_xon_rate). */
#define CC_RELAY_PAYLOAD 498

typedef struct cc_params_t {
  int32_t alg;               /* cc_alg: 0 fixed windows, 2 Vegas */
  uint32_t sendme_inc;       /* cc_sendme_inc: cells per SENDME */
  uint32_t cwnd_init;        /* cc_cwnd_init */
  uint32_t cwnd_min;         /* cc_cwnd_min */
  uint32_t cwnd_max;         /* cc_cwnd_max */
  uint32_t cwnd_inc;         /* cc_cwnd_inc: steady-state step */
  uint32_t cwnd_inc_pct_ss;  /* cc_cwnd_inc_pct_ss: slow-start step, % */
  uint32_t cwnd_inc_rate;    /* cc_cwnd_inc_rate: updates per cwnd */
  uint32_t ewma_cwnd_pct;    /* cc_ewma_cwnd_pct */
  uint32_t ewma_max;         /* cc_ewma_max */
  uint32_t ewma_ss;          /* cc_ewma_ss */
  uint32_t rtt_reset_pct;    /* cc_rtt_reset_pct */
  /* Vegas, exit circuits (cc_vegas_*_exit, cc_sscap_exit) */
  uint32_t vegas_alpha, vegas_beta, vegas_gamma, vegas_delta;
  uint32_t ss_cap;           /* cc_sscap_exit: RFC 3742 max_ssthresh */
  uint32_t ss_max;           /* cc_ss_max: hard cap in slow start */
  uint32_t cwnd_full_gap;    /* cc_cwnd_full_gap (in sendme_incs) */
  uint32_t cwnd_full_minpct; /* cc_cwnd_full_minpct */
  uint32_t cwnd_full_per_cwnd; /* cc_cwnd_full_per_cwnd: 0 or 1 */
  /* The channel counts as blocked (a congestion signal) when the circuit
   * queue towards it holds cellq_high cells, until it is down to
   * cellq_low. */
  uint32_t cellq_high, cellq_low;
  /* Flow control (bytes; the parameters are in cells of 498 bytes) */
  uint32_t xoff_client_bytes; /* cc_xoff_client */
  uint32_t xoff_exit_bytes;   /* cc_xoff_exit */
  uint32_t xon_rate_bytes;    /* cc_xon_rate */
  uint32_t xon_change_pct;    /* cc_xon_change_pct */
  uint32_t xon_ewma_cnt;      /* cc_xon_ewma_cnt */
} cc_params_t;

/* tor 0.4.9's defaults (what it uses when the consensus has no value). */
void cc_params_default(cc_params_t *p);
/* Look a parameter up: the consensus value clamped to [min, max], or dflt
 * when absent. */
typedef int32_t (*cc_param_lookup_fn)(void *arg, const char *name,
                                      int32_t dflt, int32_t min,
                                      int32_t max);
/* Fill p from a lookup function, with tor's names, defaults and ranges. */
void cc_params_load(cc_params_t *p, cc_param_lookup_fn lookup, void *arg);
/* The parameters new circuits use: tor's defaults until set (from a new
 * consensus). Setting copies p. */
const cc_params_t *cc_params_current(void);
void cc_params_set_current(const cc_params_t *p);

/* ---- the controller ---------------------------------------------- */

typedef struct cc_t cc_t;

/* A window-update algorithm, called on every SENDME once the RTT
 * bookkeeping is done (see cc_on_sendme). `estimated` is 0 when this ack
 * gave no usable estimate (clock stall or jump): tor then changes nothing
 * but the counters. It must not change inflight. */
typedef struct cc_alg_ops_t {
  const char *name;
  void (*on_ack)(cc_t *cc, int estimated);
} cc_alg_ops_t;
extern const cc_alg_ops_t cc_alg_vegas;

typedef struct cc_pending_t {
  uint64_t sent_us;          /* when the acknowledged cell left */
  uint8_t digest[20];        /* its relay digest (authenticated SENDME) */
} cc_pending_t;

struct cc_t {
  cc_params_t p;             /* copied when the circuit was made */
  const cc_alg_ops_t *alg;
  uint32_t sendme_inc;       /* negotiated */
  uint64_t cwnd;             /* congestion window, cells */
  uint64_t inflight;         /* DATA cells sent and not yet acknowledged */
  uint64_t ewma_rtt_us, min_rtt_us, max_rtt_us;
  uint64_t bdp;              /* cwnd * min_rtt / ewma_rtt */
  uint32_t next_cc_event;    /* acks until the next cwnd update */
  uint32_t next_cwnd_event;  /* acks until a cwnd's worth was acked */
  unsigned in_slow_start : 1;
  unsigned cwnd_full : 1;
  unsigned blocked_chan : 1; /* the blocked state seen at the last ack */
  unsigned clock_broken : 1; /* a zero RTT was seen (monotonic stall) */
  /* FIFO of cells awaiting a SENDME (ring). */
  cc_pending_t *pend;
  uint32_t pend_head, pend_n, pend_cap;
  /* Counters for logs and tests. */
  uint64_t n_acks, n_clock_stalls, n_rtt_resets;
  uint64_t n_sendmes_sent;   /* kept by the owner: SENDMEs for data we got */
  uint64_t last_rtt_us;      /* the last raw sample (0: none usable) */
};

/* Initialise cc for a hop that negotiated sendme_inc, with params p (NULL:
 * the current set). cc_clear() frees what it holds. */
void cc_init(cc_t *cc, const cc_params_t *p, uint32_t sendme_inc);
void cc_clear(cc_t *cc);
cc_t *cc_new(const cc_params_t *p, uint32_t sendme_inc);
void cc_free_(cc_t *cc);
#define cc_free(cc) do { cc_free_(cc); (cc) = NULL; } while (0)

/* Cells that may be sent now: cwnd - inflight, or 0. */
static inline uint64_t
cc_sendable(const cc_t *cc)
{
  return cc->inflight >= cc->cwnd ? 0 : cc->cwnd - cc->inflight;
}

/* A DATA cell was sent at now_us. If it is the one the peer will answer
 * with a SENDME (every sendme_inc-th), returns the 20-byte slot where the
 * caller must put the cell's relay digest; otherwise NULL. */
uint8_t *cc_note_data_sent(cc_t *cc, uint64_t now_us);

/* Results of cc_on_sendme(). */
#define CC_SENDME_OK 0
#define CC_SENDME_UNEXPECTED (-1) /* no cell was waiting for a SENDME */
#define CC_SENDME_BAD_DIGEST (-2) /* v1 digest does not match */
/* A circuit SENDME arrived at now_us. digest: the 20 bytes of a v1 SENDME,
 * or NULL for v0. chan_queue: cells waiting in the circuit's queue towards
 * its channel (the blocked-channel signal). On CC_SENDME_OK the RTT, the
 * window and inflight are updated; on error nothing changed but the FIFO
 * head is consumed, and the caller closes the circuit. */
int cc_on_sendme(cc_t *cc, uint64_t now_us, const uint8_t *digest,
                 uint32_t chan_queue);

/* Helpers of tor's arithmetic (exposed for tests and other algorithms). */
uint64_t cc_n_ewma(uint64_t curr, uint64_t prev, uint64_t n);
uint64_t cc_sendme_per_cwnd(const cc_t *cc);
uint64_t cc_cwnd_update_rate(const cc_t *cc);
uint64_t cc_ewma_count(const cc_t *cc);
/* One line describing the state, for logs ("cwnd 124 inflight 31 ..."). */
void cc_describe(const cc_t *cc, char *buf, size_t len);

/* ---- stream flow control (XON/XOFF) ------------------------------- */

typedef struct cc_flow_t {
  /* receiver of data (decides XOFF/XON) */
  unsigned xoff_sent : 1;
  uint32_t ewma_drain_rate;     /* kB/s (1000 bytes/s) */
  uint32_t ewma_rate_last_sent; /* what the last XON carried */
  uint64_t drain_start_us;
  uint32_t drained_bytes, prev_drained_bytes;
  /* sender of data (obeys XON/XOFF) */
  unsigned xoff_received : 1;
  uint32_t advised_kbps;        /* rate from the last XON; 0 unlimited */
  uint32_t total_bytes_xmit, num_xoff_recv, num_xon_recv;
} cc_flow_t;

typedef enum {
  CC_FLOW_NONE = 0,
  CC_FLOW_SEND_XOFF = 1,
  CC_FLOW_SEND_XON = 2,
} cc_flow_action_t;

/* Data for this stream arrived and was queued for the edge, which now
 * holds `buffered` bytes. Returns SEND_XOFF once when buffered exceeds
 * the XOFF limit (client or exit), and may return SEND_XON (advisory rate
 * update) when the buffer keeps more than a burst. The returned cell is
 * recorded as sent: the caller must send it. */
cc_flow_action_t cc_flow_on_data(cc_flow_t *f, const cc_params_t *p,
                                 int is_client, size_t buffered,
                                 uint64_t now_us, int clock_ok);
/* The edge wrote n_written bytes and now holds `buffered`: updates the
 * drain rate; SEND_XON when an XOFF is outstanding and the buffer is
 * (nearly: CC_FLOW_EMPTY_BYTES) empty, or when the rate changed by more
 * than cc_xon_change_pct since the last XON (advisory). Recorded as sent,
 * like cc_flow_on_data. The XON carries f->ewma_drain_rate. */
cc_flow_action_t cc_flow_on_drained(cc_flow_t *f, const cc_params_t *p,
                                    size_t buffered, size_t n_written,
                                    uint64_t now_us, int clock_ok);
/* An edge buffer at or below this many bytes counts as drained: pctor's
 * edge connections report "drained" at that low-water mark (4 cells),
 * where tor looks for an empty buffer. */
#define CC_FLOW_EMPTY_BYTES (4 * CC_RELAY_PAYLOAD)
/* The sender side: we packaged len bytes on this stream. */
void cc_flow_note_sent(cc_flow_t *f, size_t len);
/* XOFF / XON received. is_client enables the DropMark checks of proposal
 * 324 4.1.4 (more XOFF/XON than the bytes we sent allow). Returns 1 if
 * valid, 0 if it breaks those rules (tor processes it anyway and only
 * refuses to count it as valid data), -1 if it is malformed (bad version
 * or too short: the caller treats that as a protocol violation). */
int cc_flow_on_xoff(cc_flow_t *f, const cc_params_t *p, int is_client,
                    const uint8_t *body, size_t len);
int cc_flow_on_xon(cc_flow_t *f, const cc_params_t *p, int is_client,
                   const uint8_t *body, size_t len);
/* Bodies: XOFF = version 0 [1]; XON = version 0 [1] | kbps_ewma [4]. */
#define CC_XOFF_LEN 1
#define CC_XON_LEN 5
void cc_flow_encode_xoff(uint8_t out[CC_XOFF_LEN]);
void cc_flow_encode_xon(uint8_t out[CC_XON_LEN], uint32_t kbps_ewma);

/* ---- ntor v3 extensions --------------------------------------------- */

/* The client's message asking for congestion control: one extension of
 * type 1 with an empty body (3 bytes). Returns the length, or -1 if cap is
 * too small. */
int cc_ext_build_request(uint8_t *out, size_t cap);
/* The client's message without requests (an empty extension list). */
int cc_ext_build_empty(uint8_t *out, size_t cap);
/* Relay: does the client's message ask for congestion control? 1 yes,
 * 0 no (also for an empty message), -1 malformed extension list (the
 * handshake must fail). Unknown extensions are ignored. */
int cc_ext_parse_request(const uint8_t *msg, size_t len);
/* Relay: the reply message. With cc_enabled, one extension of type 2
 * carrying sendme_inc; otherwise an empty list. Returns the length or -1. */
int cc_ext_build_response(int cc_enabled, uint8_t sendme_inc, uint8_t *out,
                          size_t cap);
/* Client: parse the relay's reply. Returns 1 and *sendme_inc when it
 * accepted congestion control, 0 when it did not, -1 when the handshake
 * must fail: malformed list, a response we did not ask for, an empty or
 * out-of-range sendme_inc (it must be within +-1 of expected_inc, as tor
 * 0.4.8.2 and later require). *why says what was wrong. */
int cc_ext_parse_response(const uint8_t *msg, size_t len, int requested,
                          uint32_t expected_inc, uint8_t *sendme_inc,
                          const char **why);
/* Walk an extension list (N [1], then N x {type [1], len [1], body}),
 * which must fill msg exactly (proposal 332 A.2: reject what is not
 * well-formed). Calls visit for each (a non-zero return stops the walk
 * and is returned); returns -1 if malformed. */
int cc_ext_walk(const uint8_t *msg, size_t len,
                int (*visit)(uint8_t type, const uint8_t *body, uint8_t blen,
                             void *arg),
                void *arg);
/* What all controllers and stream flows did so far (MetricsPort, as
 * tor's tor_relay_congestion_control_total): RTT samples skipped for a
 * clock stall or jump, minimum-RTT resets out of a cwnd_min wedge, XOFF
 * and XON decisions. */
typedef struct cc_global_stats_t {
  uint64_t clock_stalls, rtt_resets, xoff_sent, xon_sent;
} cc_global_stats_t;
void cc_get_global_stats(cc_global_stats_t *out);
#endif
